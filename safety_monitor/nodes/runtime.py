"""Process entry points: one node per process (`ros2 run`, launch), with a clean Ctrl-C.

rclpy's SIGINT handler shuts the context down, so spinning ends with ExternalShutdownException;
nodes then release what they hold in `destroy_node` (the monitor closes its trace and its log).
"""
from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from safety_monitor.errors import SafetyMonitorError


def run_node(program: str, factory: Callable[[], Node], args: Sequence[str] | None = None) -> int:
    """Init rclpy with the process arguments, spin one node until shutdown; exit code."""
    return run_nodes(program, lambda nodes: nodes.append(factory()), args, about=sys.modules[factory.__module__].__doc__)


def run_nodes(program: str, build: Callable[[list[Node]], None], args: Sequence[str] | None = None,
              about: str | None = None) -> int:
    """`run_node` for several nodes in one process and one executor. `build` appends each node as it
    creates it, so the ones made before a failure are still destroyed (in reverse order). An error is
    printed under the `program`'s name (the executable's): the node that failed to build is not in
    `nodes`, so naming the last one built would blame the wrong node. `--help` (or any argument outside
    `--ros-args`) is answered before anything starts, with `about` (default: `build`'s module docstring)."""
    argv = list(sys.argv if args is None else args)
    answered = answer_command_line(program, argv, about or sys.modules[build.__module__].__doc__ or "")
    if answered is not None:
        return answered
    rclpy.init(args=argv)
    nodes: list[Node] = []
    try:
        build(nodes)
        freeze_startup_objects()
        context = nodes[0].context
        executor = make_executor(context)
        for node in nodes:
            executor.add_node(node)
        while context.ok():  # EventsExecutor.spin() would not return once the context is shut down
            try:
                executor.spin_once(timeout_sec=0.1)
            except Exception:
                if context.ok():
                    raise
                break  # a callback cut short by Ctrl-C shutting the context down under it: a normal stop
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except SafetyMonitorError as exc:
        print(f"{program}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        for node in reversed(nodes):
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


def answer_command_line(program: str, argv: Sequence[str], about: str) -> int | None:
    """The exit code when the arguments outside `--ros-args` ask for help (0) or are not the node's (2:
    a node takes only ROS arguments); None to start the node."""
    from rclpy.utilities import remove_ros_args

    parser = argparse.ArgumentParser(
        prog=program, usage=f"ros2 run safety_monitor {program} [--ros-args -p NAME:=VALUE ... -r __ns:=/NS]",
        description=about, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Parameters: `ros2 param list` / `ros2 param describe` on the running node, or docs/ros.md; "
               "a parameter file: --ros-args --params-file FILE.")
    try:
        parser.parse_args(remove_ros_args(list(argv))[1:])
    except SystemExit as exc:
        return int(exc.code or 0)
    return None


def freeze_startup_objects() -> None:
    """Move everything built so far (modules, the kinematic twin, compiled automata: ~70,000 objects)
    out of the garbage collector's reach. A full collection over them took 35 ms here, a stall of 17
    frames at 500 Hz whenever it ran; afterwards collections walk only what the run itself creates."""
    gc.collect()
    gc.freeze()


def make_executor(context):
    """rclpy's EventsExecutor: it takes each message as it arrives, where the SingleThreadedExecutor
    rebuilds its wait set for every callback (twice the CPU per frame here). The latter where the
    former is missing."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        from rclpy.executors import SingleThreadedExecutor

        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


def now_stamp(node: Node) -> tuple[int, int]:
    """The node's clock now as a header stamp (sec, nanosec), for messages written as bytes."""
    return divmod(node.get_clock().now().nanoseconds, 1_000_000_000)


def request_shutdown(node: Node) -> None:
    """Stop the spin of this node's context (used by a sim node that has run all its episodes)."""
    node.context.try_shutdown()
