"""Node processes: what start-up built is frozen out of the garbage collector before the first frame
(a full collection over it stalls a 500 Hz stack for tens of milliseconds)."""

import gc

import pytest

rclpy = pytest.importorskip("rclpy")


def test_run_nodes_freezes_start_up_objects_before_spinning():
    from rclpy.node import Node

    from safety_monitor.nodes.runtime import request_shutdown, run_nodes

    seen = []

    def build(nodes):
        node = Node("freeze_probe")
        nodes.append(node)

        def first_spin():
            seen.append(gc.get_freeze_count())
            request_shutdown(node)

        node.create_timer(0.01, first_spin)

    gc.unfreeze()
    try:
        assert run_nodes("probe", build, ["test"]) == 0
        assert seen and seen[0] > 1000  # modules, node and rclpy objects: out of every collection
    finally:
        gc.unfreeze()


def test_a_start_up_error_names_the_program_and_destroys_the_nodes_already_built(capsys):
    """A node whose constructor fails is not in the list yet: the error must not be put on the one
    built before it (the monitor of a stack whose estimator failed)."""
    from rclpy.node import Node

    from safety_monitor.errors import GroundingError
    from safety_monitor.nodes.runtime import run_nodes

    destroyed = []

    def build(nodes):
        first = Node("built_first")
        first.destroy_node = lambda: destroyed.append(first.get_name()) or Node.destroy_node(first)
        nodes.append(first)
        raise GroundingError("robot.yaml: mjcf 'missing.xml' does not exist")

    assert run_nodes("monitor_stack", build, ["test"]) == 2
    err = capsys.readouterr().err
    assert err == "monitor_stack: error: robot.yaml: mjcf 'missing.xml' does not exist\n"
    assert destroyed == ["built_first"]


def test_a_callback_cut_short_by_ctrl_c_is_a_clean_stop():
    """Ctrl-C shuts the context down while a callback runs; its next publish fails (publisher's context is
    invalid). That is the node stopping, not failing: exit code 0, as the README promises."""
    from rclpy.node import Node
    from std_msgs.msg import Empty

    from safety_monitor.nodes.runtime import run_nodes

    def build(nodes):
        node = Node("ctrl_c_probe")
        nodes.append(node)
        pub = node.create_publisher(Empty, "ctrl_c_probe", 1)

        def frame():
            node.context.try_shutdown()  # what rclpy's SIGINT handler does
            pub.publish(Empty())

        node.create_timer(0.01, frame)

    assert run_nodes("probe", build, ["test"]) == 0


HUNG_TEARDOWN = """
import os
import signal

from rclpy.node import Node
from safety_monitor.nodes import runtime

runtime.TEARDOWN_LIMIT_S = 1.0


def hang():
    while True:  # holds the GIL, as a middleware call that never returns may
        pass


Node.destroy_node = lambda self: hang()  # where a node hung in a fresh-clone run: rcl's node teardown


def build(nodes):
    node = Node("hung_teardown_probe")
    nodes.append(node)
    node.create_timer(0.01, lambda: os.kill(os.getpid(), signal.SIGINT))  # Ctrl-C


runtime.run_nodes("probe", build, ["probe"])
print("not reached")
"""


HUNG_EXIT = """
import atexit
from safety_monitor.nodes import runtime

runtime.TEARDOWN_LIMIT_S = 1.0
atexit.register(lambda: [None for _ in iter(int, 1)])  # the interpreter's exit never ends
runtime.limit_exit()  # what a node program does once its main has returned
"""


def _run_child(script: str, tmp_path):
    import os
    import random
    import subprocess
    import sys

    env = {**os.environ, "ROS_DOMAIN_ID": str(random.randint(1, 200)), "ROS_LOG_DIR": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)


def test_a_hang_in_the_interpreters_exit_after_a_node_program_ends_has_a_time_limit_too(tmp_path):
    done = _run_child(HUNG_EXIT, tmp_path)
    assert done.returncode == 1 and "Timeout (0:00:01)!" in done.stderr, done.stderr


def test_a_teardown_that_hangs_ends_the_process_with_every_threads_stack(tmp_path):
    """A node whose rcl teardown never returns (it hangs now and then under Fast DDS, and a
    second Ctrl-C is blocked by then) must not hang its launch: it writes where it hung and exits 1."""
    done = _run_child(HUNG_TEARDOWN, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Timeout (0:00:01)!" in done.stderr and "in hang" in done.stderr and "in _spin" in done.stderr
    assert "not reached" not in done.stdout
