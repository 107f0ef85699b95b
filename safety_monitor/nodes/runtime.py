"""Process entry points: one node per process (`ros2 run`, launch), with a clean Ctrl-C.

rclpy's SIGINT handler shuts the context down, so spinning ends with ExternalShutdownException;
nodes then release what they hold in `destroy_node` (the monitor closes its trace and its log).
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from safety_monitor.errors import SafetyMonitorError


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None) -> int:
    """Init rclpy with the process arguments, spin one node until shutdown; exit code."""
    rclpy.init(args=list(sys.argv if args is None else args))
    node: Node | None = None
    try:
        node = factory()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except SafetyMonitorError as exc:
        print(f"{getattr(node, 'get_name', lambda: 'safety_monitor')()}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


def request_shutdown(node: Node) -> None:
    """Stop the spin of this node's context (used by a sim node that has run all its episodes)."""
    node.context.try_shutdown()
