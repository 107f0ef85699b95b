"""Test-session environment: private DFA cache, ROS log folder and a random ROS domain per run (one of its
own for each pytest-xdist worker, so two workers' nodes never meet)."""

import os
import random
import tempfile
import zlib

_SESSION_DIR = tempfile.mkdtemp(prefix="safety_monitor_test_")
os.environ.setdefault("SAFETY_MONITOR_CACHE_DIR", os.path.join(_SESSION_DIR, "dfa_cache"))
os.environ.setdefault("ROS_LOG_DIR", os.path.join(_SESSION_DIR, "ros_log"))
os.environ.setdefault("HOME", _SESSION_DIR)
os.environ.setdefault("MUJOCO_GL", "egl")


def _session_domain() -> int:
    """1-100: random per run; under xdist, the run's draw (its id, which every worker shares) shifted by the
    worker's index, so the workers of one run are on different domains."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return random.SystemRandom().randint(1, 100)
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    return 1 + (zlib.crc32(run.encode()) + index) % 100


os.environ["ROS_DOMAIN_ID"] = str(_session_domain())
