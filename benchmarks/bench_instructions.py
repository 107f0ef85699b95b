"""Instructions a grounding step executes, counted by valgrind: a figure the machine's load does not move.

Timings on these shared 2-core machines swing 30-50 % within an hour; instruction counts repeat to within
a hundred instructions in two billion (PYTHONHASHSEED fixed, BLAS on one thread: OpenBLAS's idle worker
threads spin, and their spinning varied the start-up's count by 2 %, more than 40 frames' work). The four scripted episodes are recorded once (RobotStates, pickled to a
scratch file), then each tree grounds the first `--frames` of every episode under `valgrind
--tool=cachegrind --cache-sim=no`, and again with none: the difference over the frames grounded is the
step's instructions a frame, without start-up. `--baseline DIR` (another checkout's root, e.g. `git archive
<commit> | tar -x -C DIR` with its kernels built in place) counts that tree the same way first, for a
before and after in one run. Needs valgrind (Debian package valgrind).

    .venv/bin/python benchmarks/bench_instructions.py [--frames N] [--baseline DIR] [TASK ...]
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

EPISODES = ("pick_and_place_mug", "place_in_cabinet", "open_drawer", "dump_into_bin")
ROOT = Path(__file__).resolve().parents[1]


def ground(states_file: Path, frames: int) -> None:
    """The child's work: ground the first `frames` of each pickled episode (the tree on the path)."""
    from safety_monitor.grounding.grounder import load_default_grounder

    grounder = load_default_grounder(500.0)
    for states in pickle.loads(states_file.read_bytes()):
        grounder.reset()
        for state in states[:frames]:
            grounder.step(state)


def instructions(tree: Path, states_file: Path, frames: int) -> int:
    """Instructions of a child process that imports `tree`'s package and grounds `frames` per episode."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "PYTHONHASHSEED": "0",
        "_ROS_WHEELS_BOOTSTRAP_COMPLETE": "1",  # no rclpy needed: valgrind must not follow a re-exec
        "OPENBLAS_NUM_THREADS": "1",  # no spinning worker threads, whose count varies from run to run
        "OMP_NUM_THREADS": "1",
    }
    out = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        + [sys.executable, __file__, "--ground", str(states_file), str(frames)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    refs = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if out.returncode or refs is None:
        raise SystemExit(f"counting {tree} failed: {out.stderr.strip()[-800:]}")
    return int(refs[1].replace(",", ""))


def per_frame(tree: Path, states_file: Path, frames: int, total: int) -> float:
    return (instructions(tree, states_file, frames) - instructions(tree, states_file, 0)) / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", metavar="TASK", help=f"episodes (default: {' '.join(EPISODES)})")
    parser.add_argument("--frames", type=int, default=10**9, help="frames of each episode (default: all)")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="count this checkout's step first")
    parser.add_argument("--ground", nargs=2, metavar=("STATES", "FRAMES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ground:
        return ground(Path(args.ground[0]), int(args.ground[1]))
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    if args.baseline is not None and not (args.baseline / "safety_monitor").is_dir():
        raise SystemExit(f"--baseline {args.baseline}: no safety_monitor package there (a checkout's root?)")
    from safety_monitor.sim.runner import run_episode

    episodes = [list(run_episode(task)) for task in args.tasks or EPISODES]
    total = sum(min(len(states), args.frames) for states in episodes)
    with tempfile.TemporaryDirectory(prefix="bench_instructions_") as folder:
        states_file = Path(folder) / "states.pkl"
        states_file.write_bytes(pickle.dumps(episodes))
        trees = ([("baseline", args.baseline.resolve())] if args.baseline else []) + [("this tree", ROOT)]
        counts = {label: per_frame(tree, states_file, args.frames, total) for label, tree in trees}
    for label, count in counts.items():
        print(f"{label:10s} {total:6d} frames {count:12,.0f} instructions a frame")
    if args.baseline:
        print(f"{'change':10s} {'':13s} {counts['this tree'] / counts['baseline'] - 1:+12.1%}")


if __name__ == "__main__":
    main()
