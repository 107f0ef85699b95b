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
