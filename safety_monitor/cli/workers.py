"""`--jobs N` and `--ray [ADDRESS]` for the commands that run many independent tasks (replay's bags,
equiv's candidates, ctl's trace files): one executor (`safety_monitor.executors`) behind both."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from safety_monitor.arguments import whole
from safety_monitor.errors import ExecutorError
from safety_monitor.executors import INSTALL_RAY, Executor, RayAddress, make_executor

MAX_JOBS = 1024


def add_arguments(parser: argparse.ArgumentParser, tasks: str) -> None:
    """The two options, for a command whose tasks are `tasks` (plural noun, e.g. "bags")."""
    parser.add_argument(
        "--jobs",
        type=whole(0, MAX_JOBS),
        metavar="N",
        help=f"{tasks} in N processes, 0 to {MAX_JOBS}, 0 = one per CPU (default 1); with --ray: N at a time, "
        "on a local cluster of N CPUs (default: all CPUs); results are the same",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const=True,
        type=_address,
        metavar="ADDRESS",
        help=f"{tasks} as Ray tasks, on a new local cluster or on the cluster at ADDRESS (auto, host:port, "
        f"ray://host:port); put a bare --ray after the other arguments; needs Ray: {INSTALL_RAY}",
    )


def executor(args: argparse.Namespace, tasks: int | None = None, named: Sequence[str | Path] = ()) -> Executor:
    """The executor the options ask for; a single task (`tasks` 1) runs here unless --ray is given. `named`: the
    files the tasks read (spec file, robot description), which each Ray task checks its node has as they are here."""
    if args.ray is None:
        return make_executor(1 if tasks == 1 else args.jobs)
    return make_executor(args.jobs, args.ray, named, warner(args.command))


def warner(command: str) -> Callable[[str], None]:
    """One `warning:` line on stderr: a task run again, a local Ray cluster started again."""
    return lambda text: print(f"safety-monitor {command}: warning: {text}", file=sys.stderr)


def _address(text: str) -> RayAddress:
    try:
        return RayAddress.parse(text)
    except ExecutorError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_address.__name__ = "Ray address"  # argparse names the type in some messages
