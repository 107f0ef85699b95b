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
        assert run_nodes(build, ["test"]) == 0
        assert seen and seen[0] > 1000  # modules, node and rclpy objects: out of every collection
    finally:
        gc.unfreeze()
