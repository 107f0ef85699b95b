"""Process entry points: one node per process (`ros2 run`, launch), stopped cleanly by SIGINT or SIGTERM.

Stopping is a flag, never an exception. SIGINT (Ctrl-C, to the process or its whole group, as a
terminal and `ros2 launch` send it) and SIGTERM only set `stop_requested`; the spin loop checks it between
callbacks, so no callback, fsync or MuJoCo step is cut short by a KeyboardInterrupt (one raised inside
a callback the C++ executor or a pybind11 binding runs aborts the process), and a signal during start-up
lets the build finish and then stops before the first spin. rclpy's own handlers stay uninstalled
(rclpy's SIGINT handler shuts the context down under running callbacks and then raises
KeyboardInterrupt). Afterwards every node is destroyed, in reverse order of creation, with its context
still up: the monitor closes its running trace (its end-of-trace events reach the log and the topic),
syncs and closes the log and removes `.running`; the process exits 0.

The console scripts enter through nodes/programs.py, which holds the signals from its first statement,
before the node's module (rclpy, MuJoCo: about a second) is even imported.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from safety_monitor.errors import SafetyMonitorError
from safety_monitor.nodes import signals

if TYPE_CHECKING:
    from rclpy.node import Node

# A node's teardown (its last records, then rcl's node and context teardown) and the interpreter's exit take
# well under a second. Past this, the process writes each thread's stack and exits 1 instead of hanging
# (rcl's node teardown under Fast DDS hangs now and then; a second Ctrl-C cannot end it: it is ignored then).
TEARDOWN_LIMIT_S = 20.0


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """SIGINT and SIGTERM set `stop_requested` (cleared on entry) instead of raising or killing, until
    the block ends, when the previous handlers return. Nested uses share the outer one's flag (a
    program's entry point holds the signals from its first line, for the process's whole life)."""
    if signals.held():
        yield signals.stop_requested
        return
    signals.stop_requested.clear()
    previous = [(sig, signal.getsignal(sig)) for sig in signals.STOP_SIGNALS]
    signals.hold()
    try:
        yield signals.stop_requested
    finally:
        for sig, handler in previous:
            signal.signal(sig, handler)


def run_node(program: str, factory: Callable[[], Node], args: Sequence[str] | None = None) -> int:
    """Init rclpy with the process arguments, spin one node until shutdown or a stop signal; exit code."""
    return run_nodes(
        program, lambda nodes: nodes.append(factory()), args, about=sys.modules[factory.__module__].__doc__
    )


def run_nodes(
    program: str, build: Callable[[list[Node]], None], args: Sequence[str] | None = None, about: str | None = None
) -> int:
    """`run_node` for several nodes in one process and one executor. `build` appends each node as it
    creates it, so the ones made before a failure are still destroyed (in reverse order). An error is
    printed under the `program`'s name (the executable's): the node that failed to build is not in
    `nodes`, so naming the last one built would blame the wrong node. `--help` (or any argument outside
    `--ros-args`) is answered before anything starts, with `about` (default: `build`'s module docstring)."""
    with stop_on_signals() as stop:
        argv = list(sys.argv if args is None else args)
        answered = answer_command_line(program, argv, about or sys.modules[build.__module__].__doc__ or "")
        if answered is not None or stop.is_set():
            return answered or 0
        return _spin(program, build, argv, stop)


def _spin(program: str, build: Callable[[list[Node]], None], argv: list[str], stop: threading.Event) -> int:
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    nodes: list[Node] = []
    executor = None
    try:
        build(nodes)
        freeze_startup_objects()
        context = nodes[0].context
        executor = make_executor(context)
        for node in nodes:
            executor.add_node(node)
        while context.ok() and not stop.is_set():  # EventsExecutor.spin() would not return on a shut-down context
            try:
                executor.spin_once(timeout_sec=0.1)
            except Exception:
                if context.ok():
                    raise
                break  # a callback cut short by the context shutting down under it (request_shutdown): a stop
    except SafetyMonitorError as exc:
        print(f"{program}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        with teardown_limit():  # the nodes' last records take milliseconds; rcl's teardown is what may hang
            stop_callbacks(executor)
            for node in reversed(nodes):
                node.destroy_node()
            rclpy.try_shutdown()
    return 0


@contextmanager
def teardown_limit() -> Iterator[None]:
    """Within the block, a hang of TEARDOWN_LIMIT_S writes every thread's stack to stderr ("Timeout") and
    ends the process with exit code 1. faulthandler's watchdog is a thread of its own in C, so it acts even
    when the hung call holds the GIL."""
    _arm_teardown_limit()
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def limit_exit() -> None:
    """The same limit, never cancelled, on what is left of a process that is about to exit (the
    interpreter tearing rclpy and the middleware down)."""
    _arm_teardown_limit()


def _arm_teardown_limit() -> None:
    # faulthandler writes to a file descriptor: stderr's, or the process's own one when stderr was
    # replaced by an object without one (a test capturing output)
    for stream in (sys.stderr, sys.__stderr__):
        if stream is None:
            continue
        try:
            faulthandler.dump_traceback_later(TEARDOWN_LIMIT_S, exit=True, file=stream)
            return
        except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is an OSError and ValueError
            continue


def stop_callbacks(executor) -> None:
    """Take every node off the executor (None: none was made) before the nodes and the context go: from
    here on no timer or subscription callback runs, so none publishes on a context that is going
    ("publisher's context is invalid" from the monitor's heartbeat), while the nodes' own teardown
    still publishes its last words (the monitor's end-of-trace events) with the context up. It also
    closes the executor's suspended callback generator, which holds the entities of the last wait in use:
    a node destroyed under it has those entities destroyed after it, a segfault in rcl (seen in tests)."""
    if executor is not None:
        executor.shutdown()


def answer_command_line(program: str, argv: Sequence[str], about: str) -> int | None:
    """The exit code when the arguments outside `--ros-args` ask for help (0) or are not the node's (2:
    a node takes only ROS arguments); None to start the node."""
    from rclpy.utilities import remove_ros_args

    parser = argparse.ArgumentParser(
        prog=program,
        usage=f"ros2 run safety_monitor {program} [--ros-args -p NAME:=VALUE ... -r __ns:=/NS]",
        description=about,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Parameters: `ros2 param list` / `ros2 param describe` on the running node, or docs/ros.md; "
        "a parameter file: --ros-args --params-file FILE.",
    )
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


def clock_seconds(node: Node) -> Callable[[], float]:
    """The node clock's now in seconds (sim time under `use_sim_time`), read from the same rcl clock as
    `Clock.now()` without wrapping each reading in a checked `Time` object: 1.9 against 4.4 to 9 us
    here, and the estimator and the monitor each read it once a frame at 500 Hz."""
    handle = node.get_clock().handle

    def now() -> float:
        with handle:  # as Clock.now: the clock is not destroyed while it is read
            return handle.get_now().nanoseconds / 1e9

    return now


def now_stamp(node: Node) -> tuple[int, int]:
    """The node's clock now as a header stamp (sec, nanosec), for messages written as bytes."""
    return divmod(node.get_clock().now().nanoseconds, 1_000_000_000)


def request_shutdown(node: Node) -> None:
    """Stop the spin of this node's context (used by a sim node that has run all its episodes)."""
    node.context.try_shutdown()
