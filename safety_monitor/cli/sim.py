"""`safety-monitor sim`: list the workcell's tasks and ground-truth faults, or run episodes.

A run goes through the ROS sim, estimator and monitor nodes in one process (safety_monitor.cli.nodes
prints the summary of events against each fault's ground truth). `--physics-only` runs MuJoCo alone,
headless and unpaced (as fast as it steps), and prints whether each task succeeded and how fast it ran.
Options that a mode cannot honour are argument errors rather than silently ignored.
"""

from __future__ import annotations

import argparse
import json
import time

from safety_monitor.arguments import SEED_MAX, whole

MAX_EPISODES = 100_000
MAX_SEED = SEED_MAX - MAX_EPISODES  # every episode's seed S + i stays a 32-bit seed


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sim",
        help="MuJoCo workcell: list faults and tasks, run scripted episodes",
        description="Run scripted episodes of the MuJoCo workcell (headless, deterministic for a seed).",
    )
    listing = parser.add_mutually_exclusive_group()
    listing.add_argument(
        "--list-faults",
        action="store_true",
        help="print every fault (with --task: that task's faults) with the properties it must trip, then exit",
    )
    listing.add_argument("--list-tasks", action="store_true", help="print every scripted task, then exit")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--task", help="task to run (default: the fault's task, else pick_and_place_cube)")
    parser.add_argument(
        "--fault",
        help="inject this fault (see --list-faults); 'none' = fault-free; a comma-separated "
        "list is cycled; default: cycle fault-free, then each fault",
    )
    parser.add_argument(
        "--episodes",
        type=whole(1, MAX_EPISODES),
        default=None,
        metavar="N",
        help=f"episodes to run, 1 to {MAX_EPISODES} (seeds S, S+1, ...; default 3, 1 with --physics-only)",
    )
    parser.add_argument(
        "--seed", type=whole(0, MAX_SEED), default=0, metavar="S", help=f"seed of the first episode, 0 to {MAX_SEED}"
    )
    parser.add_argument(
        "--physics-only",
        action="store_true",
        help="MuJoCo alone: no ROS nodes, no monitoring; task success and speed per episode",
    )
    from safety_monitor.cli.nodes import add_live_arguments

    add_live_arguments(parser)
    parser.set_defaults(func=handle, _parser=parser)


_RUN_OPTIONS = ("fault", "episodes", "seed", "physics_only", "events", "record", "storage", "namespace")
_LIVE_ONLY = ("events", "record", "storage", "namespace")


def _check_combinations(args: argparse.Namespace) -> None:
    """Refuse what would be silently ignored: a listing runs nothing, a physics-only run has no
    monitor whose events to log and no ROS topics to record, and --storage only shapes a --record bag.
    Options left at their default pass."""
    parser = args._parser
    given = [d for d in _RUN_OPTIONS if getattr(args, d) != parser.get_default(d)]
    if args.list_faults or args.list_tasks:
        ignored = given + (["task"] if args.list_tasks and args.task else [])
        if ignored:
            listing = "--list-faults" if args.list_faults else "--list-tasks"
            parser.error(f"{_flags(ignored)} not allowed with {listing} (it lists and exits, running nothing)")
    elif args.physics_only and (live := [d for d in given if d in _LIVE_ONLY]):
        parser.error(
            f"{_flags(live)} not allowed with --physics-only (MuJoCo alone: no ROS nodes, no monitor events to log, "
            "no topics to record)"
        )
    elif args.storage is not None and not args.record:
        parser.error("argument --storage: needs --record (it is the storage of the recorded bag)")


def _flags(dests: list[str]) -> str:
    names = ", ".join("--" + d.replace("_", "-") for d in dests)
    return f"argument{'s' if len(dests) > 1 else ''} {names}:"


def handle(args: argparse.Namespace) -> int:
    from safety_monitor.sim.faults import FAULTS
    from safety_monitor.sim.tasks import TASKS

    _check_combinations(args)
    if args.list_faults:
        if args.task is not None and args.task not in TASKS:
            args._parser.error(f"argument --task: unknown task {args.task!r}; known: {', '.join(sorted(TASKS))}")
        faults = [f for f in FAULTS.values() if args.task in (None, f.task)]
        if args.json:
            print(
                json.dumps(
                    [
                        {
                            "fault": f.name,
                            "expected_properties": list(f.expected_properties),
                            "allowed_properties": list(f.allowed_properties),
                            "task": f.task,
                            "description": f.description,
                        }
                        for f in faults
                    ],
                    indent=2,
                )
            )
        else:
            for f in faults:
                print(f"{f.name:28s} {f.task:22s} expects {', '.join(f.expected_properties)}")
        return 0
    if args.list_tasks:
        if args.json:
            print(
                json.dumps(
                    [{"task": t.name, "object": t.obj, "description": t.description} for t in TASKS.values()], indent=2
                )
            )
        else:
            for t in TASKS.values():
                print(f"{t.name:22s} {t.description}")
        return 0
    if not args.physics_only:
        from safety_monitor.cli.nodes import run_sim

        args.episodes = 3 if args.episodes is None else args.episodes
        return run_sim(args)
    from safety_monitor.sim.runner import episode_schedule

    args.episodes = 1 if args.episodes is None else args.episodes
    schedule = episode_schedule(args.task or "", args.fault or "", args.episodes)  # as the live sim node's
    results = [_run_one(task, fault, args.seed + i) for i, (task, fault) in enumerate(schedule)]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            outcome = "succeeded" if r["succeeded"] else "failed"
            print(
                f"{r['task']} fault={r['fault'] or 'none'} seed={r['seed']}: task {outcome}, {r['frames']} frames, "
                f"{r['sim_s']:.2f} s simulated in {r['wall_s']:.2f} s ({r['real_time_factor']:.1f}x real time)"
            )
    return 0


def _run_one(task: str, fault: str | None, seed: int) -> dict:
    from safety_monitor.sim.runner import Episode

    episode = Episode(task, fault, seed)
    start = time.perf_counter()
    frames = 0
    while not episode.done:
        episode.step()
        frames += 1
    wall = time.perf_counter() - start
    sim = episode.workcell.t
    return {
        "task": episode.task.name,
        "fault": fault,
        "seed": seed,
        "succeeded": episode.succeeded(),
        "frames": frames,
        "sim_s": round(sim, 3),
        "wall_s": round(wall, 3),
        "real_time_factor": round(sim / wall, 2),
    }
