"""`safety-monitor sim`: list the workcell's tasks and ground-truth faults, or run episodes.

A run goes through the ROS sim, estimator and monitor nodes in one process (safety_monitor.nodes.cli
prints the summary of events against each fault's ground truth). `--physics-only` runs MuJoCo alone,
headless and unpaced (as fast as it steps), and prints whether each task succeeded and how fast it ran.
"""
from __future__ import annotations

import argparse
import json
import time


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sim", help="MuJoCo workcell: list faults and tasks, run scripted episodes",
        description="Run scripted episodes of the MuJoCo workcell (headless, deterministic for a seed).")
    parser.add_argument("--list-faults", action="store_true",
                        help="print every fault with the properties it must trip, then exit")
    parser.add_argument("--list-tasks", action="store_true", help="print every scripted task, then exit")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--task", help="task to run (default: the fault's task, else pick_and_place_cube)")
    parser.add_argument("--fault", help="inject this fault (see --list-faults); 'none' = fault-free; a comma-separated "
                                        "list is cycled; default: cycle fault-free, then each fault")
    parser.add_argument("--episodes", type=int, default=None,
                        help="episodes to run (seeds S, S+1, ...; default 3, 1 with --physics-only)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first episode")
    parser.add_argument("--physics-only", action="store_true",
                        help="MuJoCo alone: no ROS nodes, no monitoring; task success and speed per episode")
    from safety_monitor.nodes.cli import add_live_arguments

    add_live_arguments(parser)
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from safety_monitor.errors import SafetyMonitorError
    from safety_monitor.sim.faults import FAULTS
    from safety_monitor.sim.tasks import TASKS

    if args.list_faults:
        rows = [{"fault": f.name, "expected_properties": list(f.expected_properties),
                 "allowed_properties": list(f.allowed_properties), "task": f.task,
                 "description": f.description} for f in FAULTS.values()]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                print(f"{r['fault']:28s} {r['task']:22s} expects {', '.join(r['expected_properties'])}")
        return 0
    if args.list_tasks:
        rows = [{"task": t.name, "object": t.obj, "description": t.description} for t in TASKS.values()]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                print(f"{r['task']:22s} {r['description']}")
        return 0
    if not args.physics_only:
        from safety_monitor.nodes.cli import run_sim

        args.episodes = 3 if args.episodes is None else args.episodes
        return run_sim(args)
    args.episodes = 1 if args.episodes is None else args.episodes
    args.fault = None if args.fault == "none" else args.fault
    if args.episodes < 1:
        raise SafetyMonitorError(f"--episodes must be at least 1, got {args.episodes}")
    task = args.task or (None if args.fault else "pick_and_place_cube")
    results = [_run_one(task, args.fault, args.seed + i) for i in range(args.episodes)]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            print(f"{r['task']} fault={r['fault']} seed={r['seed']}: task {'succeeded' if r['succeeded'] else 'failed'}, "
                  f"{r['frames']} frames, {r['sim_s']:.2f} s simulated in {r['wall_s']:.2f} s "
                  f"({r['real_time_factor']:.1f}x real time)")
    return 0


def _run_one(task: str | None, fault: str | None, seed: int) -> dict:
    from safety_monitor.sim.runner import Episode

    episode = Episode(task, fault, seed)
    start = time.perf_counter()
    frames = 0
    while not episode.done:
        episode.step()
        frames += 1
    wall = time.perf_counter() - start
    sim = episode.workcell.t
    return {"task": episode.task.name, "fault": fault, "seed": seed, "succeeded": episode.succeeded(),
            "frames": frames, "sim_s": round(sim, 3), "wall_s": round(wall, 3),
            "real_time_factor": round(sim / wall, 2)}
