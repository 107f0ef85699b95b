"""The `safety-monitor` command: one sub-command per job, each registered by its own module.

Each module in `_COMMAND_MODULES` has `register(subparsers)` adding its sub-commands, with heavy
imports (mujoco, rclpy, matplotlib) kept inside the handlers so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

from safety_monitor import __version__
from safety_monitor.errors import SafetyMonitorError

_COMMAND_MODULES = (
    "safety_monitor.cli.specs",
    "safety_monitor.cli.grounding",
    "safety_monitor.cli.monitor",
    "safety_monitor.cli.verify",
    "safety_monitor.cli.sim",
    "safety_monitor.cli.nodes",
    "safety_monitor.cli.replay",
    "safety_monitor.cli.robot",
    "safety_monitor.cli.inspect",
)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (the problem and where the help is), exit code 2; sub-command parsers
    are made of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="safety-monitor",
        description="Temporal-logic safety monitoring for ROS 2 manipulators.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Give each sub-command without a description its one-line help, so its --help page says what it does."""
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if not isinstance(action, argparse._SubParsersAction):  # the group also holds plain positionals
            continue
        for choice in action._choices_actions:
            command = action.choices[choice.dest]
            command.description = command.description or choice.help
            _describe(command)


def main(argv: list[str] | None = None) -> int:
    command = "safety-monitor"
    try:
        args = build_parser().parse_args(argv)
        command = f"safety-monitor {args.command}"
        return int(args.func(args) or 0)
    except SafetyMonitorError as exc:
        print(f"{command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # commands that stop cleanly on Ctrl-C return 130 themselves; this is the rest
        print(f"{command}: interrupted (Ctrl-C)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except MemoryError:
        print(f"{command}: error: out of memory", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug; exit 2, since 1 means "violated" or "not equivalent" to scripts
        if os.environ.get("SAFETY_MONITOR_TRACEBACK"):
            raise
        what = (str(exc).strip().splitlines() or [""])[0]
        print(
            f"{command}: internal error: {type(exc).__name__}: {what} "
            "(set SAFETY_MONITOR_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
        return 2
