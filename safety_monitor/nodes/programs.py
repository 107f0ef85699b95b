"""The node executables' entry points (setup.py's console scripts): the stop signals are held from this
module's first statement, before the node's module (rclpy, MuJoCo: about a second) is imported.

A SIGINT or SIGTERM from then on only sets the stop flag (nodes/signals.py): the node finishes starting,
if it got that far, and exits 0 without a traceback. What runs before this module cannot be covered from
the package: the interpreter's start-up and the console script's own preamble (a colcon or
`setup.py develop` script imports importlib.metadata or pkg_resources and reads the package's metadata
first), then the two package `__init__` modules this import passes through. A signal there meets
Python's default handler (a KeyboardInterrupt traceback, exit 1) or, before Python installs that, the
kernel's (exit -2).
"""

from safety_monitor.nodes import signals

signals.hold()

import importlib  # noqa: E402 (after holding the signals, on purpose)
import signal  # noqa: E402
from collections.abc import Callable  # noqa: E402


def _program(module: str) -> Callable[[], int]:
    """A console-script entry point: import `module` (the signals already held) and run its main."""

    def main() -> int:
        code = int(importlib.import_module(module).main())
        # Python resets its handlers to the default while it exits, and tearing rclpy down takes a while: a
        # Ctrl-C then (a launch's SIGINT as the node ends on its own, or after the terminal's) killed the
        # process with -2. Ignored, for every thread: blocking it in this one left the middleware's threads
        # to take it, and Python leaves an ignored signal ignored.
        for sig in signals.STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        # With the signals ignored, nothing could end a hang in that teardown: it has a time limit instead.
        importlib.import_module("safety_monitor.nodes.runtime").limit_exit()
        return code

    return main


sim_node = _program("safety_monitor.nodes.sim_node")
estimator_node = _program("safety_monitor.nodes.estimator_node")
monitor_node = _program("safety_monitor.nodes.monitor_node")
monitor_stack = _program("safety_monitor.nodes.monitor_stack")
