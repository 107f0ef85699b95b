"""Test-session environment: private DFA cache, ROS log folder and a random ROS domain per run (one of its
own for each pytest-xdist worker, so two workers' nodes never meet), and the `alone` mark: a test that runs
while no other test of the run does."""

import fcntl
import os
import random
import tempfile
import zlib

import pytest

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


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "alone: runs while no other test of the run does (other xdist workers wait): a test whose verdict is "
        "that nothing went wrong, which a starved machine makes go wrong",
    )


@pytest.fixture(scope="session")
def _run_lock_path(tmp_path_factory):
    """A file every worker of this run sees: beside the workers' own temporary folders under xdist."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "tests_alone.lock"


@pytest.fixture(autouse=True)
def _alone_or_together(request, _run_lock_path):
    """Every test holds the run's lock shared; an `alone` test holds it exclusive. The false-alarm runs check
    that a live stack on a realtime sim raises nothing; the other worker's multi-process tests (a dozen ROS
    processes at once) once starved its inputs for 15 s and it rightly went blind. Without xdist the lock is
    never contended."""
    with open(_run_lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if request.node.get_closest_marker("alone") else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
