"""Many small bags scored on Ray against one local process, in one run: `replay --ray --jobs 2` (a local
cluster of two CPUs) and `replay --jobs 2` against `replay --jobs 1`, the same bags, the same reports.

    .venv/bin/python benchmarks/bench_ray.py [--bags 200] [--frames 1000] [--jobs 2] [--repeat N] [--keep DIR]
        [--baseline DIR]

The bags are the first `--frames` frames (2 s at 500 Hz) of four workcell episodes (three pick-and-place tasks
and the `slip` fault; `--frames 0`: the whole episodes, 5.9 to 7.1 s, as a policy evaluation scores its
rollouts), raw streams as the sim records them, written in turn as bag_000, bag_001, ... and scored from robot
state (grounding: the costly mode). Both commands run as a user runs them (a fresh process each, `--quiet
--no-plots --report`), so Ray's time includes starting its local cluster and its workers and shutting them
down; the run then times those parts alone, to say where the rest of the time goes. `replay --jobs 2` (local
processes, nothing to start) runs in each repeat too: its ratio is what two scorers at once reach on this
machine, the ceiling for Ray's; Ray's time over it ("Ray's own share") is what Ray itself adds, which the
cores' sharing does not move. Each report.json must equal the others, timing fields aside. `uptime`'s load
average is printed before and after: the machine's cores are shared.
`--baseline DIR` (a checkout, its `safety_monitor/` first on the path) runs its `--jobs 1` before ours in each
repeat, on the same bags, for the cost of one bag before and after a change; its report must equal ours.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from safety_monitor.io.bag import BagWriter
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.replay.simbag import SimRun
from safety_monitor.sim.runner import run_episode

EPISODES = (
    SimRun("pick_and_place_cube"),
    SimRun("pick_and_place_mug"),
    SimRun("pick_and_place_plate"),
    SimRun(fault="slip"),
)
CLI = [sys.executable, "-m", "safety_monitor.cli", "replay"]


def make_bags(folder: Path, count: int, frames: int) -> list[Path]:
    """`count` bags of `frames` frames each (0: whole episodes), the episodes in turn (wrench and poses when the
    sim sent them)."""
    episodes = [list(itertools.islice(run_episode(run.task, run.fault, run.seed), frames or None)) for run in EPISODES]
    bags = []
    for i in range(count):
        bags.append(folder / "bags" / f"bag_{i:03d}")
        with BagWriter(bags[-1]) as writer:
            for state in episodes[i % len(episodes)]:
                if state.wrench is not None and not state.wrench_age:
                    writer.write_wrench("/wrist_wrench", state.t, state.wrench)
                for name, pose in state.object_poses.items():
                    if state.object_ages.get(name, 0.0) == 0.0:
                        writer.write_pose(f"/objects/{name}/pose", state.t, pose)
                writer.write_joint_state(
                    "/joint_states",
                    state.t,
                    list(state.joint_names),
                    state.joint_position,
                    state.joint_velocity,
                    state.joint_effort,
                )
    return bags


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()


def run_replay(folder: Path, report: Path, extra: list[str], code: Path | None = None) -> float:
    """Wall seconds of one replay command; `code`: a checkout whose package runs instead of this one (from its
    root: `python -m` puts the working folder first on sys.path, where this checkout's package would win)."""
    argv = [*CLI, str(folder.resolve()), "--quiet", "--no-plots", "--report", str(report.resolve()), *extra]
    env = None if code is None else {**os.environ, "PYTHONPATH": str(code.resolve())}
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=code)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return wall


def without_timings(report: Path) -> dict:
    doc = json.loads((report / "report.json").read_text())
    for bag in doc["bags"] + doc.get("split_bags", []):  # a bag markers cut has its timings once, there
        bag.pop("timings_s")
    return doc


def same_but_checkout(a: Path, b: Path) -> bool:
    """The two reports are equal, timings and the package's own files (the default specs and robot, which
    each checkout has in its own folder) aside."""
    docs = [without_timings(a), without_timings(b)]
    for doc in docs:
        doc["config"] = {k: Path(v).name if k in ("specs", "robot") and v else v for k, v in doc["config"].items()}
    return docs[0] == docs[1]


def _warm(_: int) -> int:
    """A worker's first task: import the scorer (what the first bag of each worker pays for)."""
    import safety_monitor.replay.score  # noqa: F401

    return os.getpid()


def ray_overheads(jobs: int) -> dict[str, float]:
    """Ray's own start-up and shutdown on this machine, and its workers' first task, timed alone."""
    from safety_monitor.executors import RayCluster, in_order

    start = time.perf_counter()
    cluster = RayCluster(jobs=jobs)
    started = time.perf_counter()
    pids = {d.result for d in in_order(cluster.map(_warm, range(4 * jobs)), 4 * jobs)}
    warmed = time.perf_counter()
    cluster.close()
    return {
        "start_s": started - start,
        "first_tasks_s": warmed - started,
        "workers": len(pids),
        "shutdown_s": time.perf_counter() - warmed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bags", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2, help="Ray's local cluster: this many CPUs (default 2)")
    parser.add_argument(
        "--frames", type=int, default=1000, help="frames per bag (default 1000: 2 s; 0: whole episodes)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="alternate the two commands this many times")
    parser.add_argument("--keep", help="write the bags here and keep them")
    parser.add_argument("--baseline", type=Path, help="a checkout whose --jobs 1 runs too, before ours")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        start = time.perf_counter()
        bags = make_bags(folder, args.bags, args.frames)
        os.sync()  # the new bags on disk now, not written back during the first timed run
        print(f"made {len(bags)} bags in {time.perf_counter() - start:.1f} s")
        warm = score_bag(bags[0], ReplayConfig())  # the DFA cache
        assert warm.ok, warm.error
        print(f"one bag: {warm.frames} frames, {warm.duration:.1f} s of recording\n{uptime()}")
        serial, local, on_ray, before = [], [], [], []
        for k in range(args.repeat):
            if args.baseline:
                before.append(run_replay(folder / "bags", folder / f"report_base_{k}", ["--jobs", "1"], args.baseline))
            serial.append(run_replay(folder / "bags", folder / f"report_local_{k}", ["--jobs", "1"]))
            local.append(run_replay(folder / "bags", folder / f"report_jobs_{k}", ["--jobs", str(args.jobs)]))
            on_ray.append(run_replay(folder / "bags", folder / f"report_ray_{k}", ["--ray", "--jobs", str(args.jobs)]))
            same = all(
                without_timings(folder / f"report_local_{k}") == without_timings(folder / f"report_{other}_{k}")
                for other in ("jobs", "ray")
            )
            print(
                f"--jobs 1: {serial[-1]:.1f} s; --jobs {args.jobs}: {local[-1]:.1f} s (ratio "
                f"{local[-1] / serial[-1]:.2f}); --ray --jobs {args.jobs}: {on_ray[-1]:.1f} s; ratio "
                f"{on_ray[-1] / serial[-1]:.2f}, Ray's own share {on_ray[-1] / local[-1]:.2f} of --jobs {args.jobs}; "
                f"reports equal: {same}\n{uptime()}"
            )
            assert same, "a report of several workers differs from the one-process one"
            if args.baseline:
                equal = same_but_checkout(folder / f"report_base_{k}", folder / f"report_local_{k}")
                print(
                    f"--jobs 1 of {args.baseline}: {before[-1]:.1f} s ({1e3 * before[-1] / len(bags):.0f} ms a bag), "
                    f"ours {1e3 * serial[-1] / len(bags):.0f} ms a bag (ratio {serial[-1] / before[-1]:.2f}); "
                    f"reports equal: {equal}"
                )
                assert equal, "the baseline's report differs from ours"
        overheads = ray_overheads(args.jobs)
        print(
            f"{uptime()}\nRay alone: start {overheads['start_s']:.1f} s, first task on each of "
            f"{overheads['workers']} workers {overheads['first_tasks_s']:.1f} s, shutdown {overheads['shutdown_s']:.1f} s"
        )
        best = min(r / s for r, s in zip(on_ray, serial))
        print(
            f"\n{len(bags)} bags (robot state): --jobs 1 {min(serial):.1f} s, --jobs {args.jobs} {min(local):.1f} s, "
            f"--ray --jobs {args.jobs} {min(on_ray):.1f} s; best Ray ratio {best:.2f} (target <= 0.6), "
            f"best local one {min(p / s for p, s in zip(local, serial)):.2f}"
        )


if __name__ == "__main__":
    main()
