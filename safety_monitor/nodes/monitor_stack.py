"""Estimator and monitor nodes in one process: each grounded frame goes straight to the monitor.

The two nodes are the ones `estimator_node` and `monitor_node` run alone, with the same parameters,
topics and watchdogs; the estimator still publishes `safety_monitor/predicates` for recorders and
consoles. What changes is the hop between them: a frame reaches the monitor by a function call
instead of a serialise, middleware, wake-up and decode round trip, which at 500 Hz is most of the
latency and CPU that is not grounding. `monitor.launch.py` starts this by default (`one_process`).
The monitor also asks the estimator why frames stopped, so its stale or waiting summary (and heartbeat) names
the input (`... (estimator: no joint_states for more than 0.1 s)`), where a monitor alone cannot tell.

    ros2 run safety_monitor monitor_stack --ros-args -r __ns:=/robot1 --params-file nodes.yaml
"""

from __future__ import annotations

from rclpy.node import Node

from safety_monitor.errors import SafetyMonitorError
from safety_monitor.nodes.runtime import run_nodes


def build_stack(nodes: list[Node], **node_kwargs) -> None:
    """Append the monitor, then the estimator that feeds it (in this order so a bad spec file stops
    start-up before the kinematic twin is built)."""
    from safety_monitor.nodes.estimator_node import EstimatorNode
    from safety_monitor.nodes.monitor_node import MonitorNode

    monitor = MonitorNode(subscribe_predicates=False, **node_kwargs)
    nodes.append(monitor)
    estimator = EstimatorNode(on_sample=monitor.on_sample, **node_kwargs)
    monitor.why_no_frames = estimator.why_no_frames
    nodes.append(estimator)
    if estimator.get_name() == monitor.get_name():  # `-r __node:=NAME` renames every node of the process
        raise SafetyMonitorError(
            f"both nodes of monitor_stack are named {monitor.get_name()!r} (a `__node:=` remap applies to "
            "every node of a process): rename each, `-r monitor_node:__node:=NAME -r estimator_node:__node:=NAME`"
        )


def main(args: list[str] | None = None) -> int:
    return run_nodes("monitor_stack", build_stack, args)


if __name__ == "__main__":
    raise SystemExit(main())
