"""Test-session environment: private DFA cache, ROS log folder and a random ROS domain per run."""

import os
import random
import tempfile

_SESSION_DIR = tempfile.mkdtemp(prefix="safety_monitor_test_")
os.environ.setdefault("SAFETY_MONITOR_CACHE_DIR", os.path.join(_SESSION_DIR, "dfa_cache"))
os.environ.setdefault("ROS_LOG_DIR", os.path.join(_SESSION_DIR, "ros_log"))
os.environ.setdefault("HOME", _SESSION_DIR)
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ["ROS_DOMAIN_ID"] = str(random.SystemRandom().randint(1, 100))
