"""Instructions a grounding step executes, counted by valgrind: a figure the machine's load does not move.

Timings on these shared 2-core machines swing 30-50 % within an hour; instruction counts repeat to within
a hundred instructions in two billion (PYTHONHASHSEED fixed, BLAS on one thread: OpenBLAS's idle worker
threads spin, and their spinning varied the start-up's count by 2 %, more than 40 frames' work) in one
environment. The environment's size (a variable more or less, a longer tree path) moves the start-up
subtracted by up to about half a million, 13k a frame over 40 frames but about 130 over 4000: count
enough frames for the figure you need. The four scripted episodes are recorded once (RobotStates, pickled to a
scratch file), then each tree grounds the first `--frames` of every episode under `valgrind
--tool=cachegrind --cache-sim=no`, and again with none: the difference over the frames grounded is the
step's instructions a frame, without start-up. `--baseline DIR` (another checkout's root, e.g. `git archive
<commit> | tar -x -C DIR` with its kernels built in place) counts that tree the same way first, for a
before and after in one run. `--mujoco` also counts each tree's MuJoCo calls a frame, the calls
bench_grounding.py's `timed_calls` times (mj_kinematics, mj_collision, mj_geomDistance, each inclusive of all
it calls): the same child under `valgrind --tool=callgrind`, whose call graph gives each call's inclusive
instructions per calling site; the calls summed are those entered from outside MuJoCo's library (the bindings,
as the twin and its contact list call them from Python, and the C kernels' gap walk), not MuJoCo's calls to
itself, less the same run with no frames. The MuJoCo functions' own instructions: the bindings' handling of a
call from Python, which bench_grounding.py's CPU time of a call includes, is not counted. It then prints the step against the baseline twin's MuJoCo calls,
both in instructions over the same frames (issue 17's measure, which the CPU-time ratio of bench_grounding.py
cannot settle on a loaded machine). Callgrind's `--toggle-collect` would not do: it toggles on every entry
and exit, so a counted function that another counted function calls would switch counting off. Needs
valgrind (Debian package valgrind).

    .venv/bin/python benchmarks/bench_instructions.py [--frames N] [--baseline DIR] [--mujoco] [TASK ...]
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
from dataclasses import dataclass
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


def _child(tool: list[str], tree: Path, states_file: Path, frames: int) -> str:
    """Valgrind's report (stderr) on a child process that imports `tree`'s package and grounds `frames` per
    episode."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "PYTHONHASHSEED": "0",
        "_ROS_WHEELS_BOOTSTRAP_COMPLETE": "1",  # no rclpy needed: valgrind must not follow a re-exec
        "OPENBLAS_NUM_THREADS": "1",  # no spinning worker threads, whose count varies from run to run
        "OMP_NUM_THREADS": "1",
        # Valgrind gives the client a small brk segment. When glibc's malloc first outgrows it, malloc falls back
        # to mmap and succeeds but leaves errno at ENOMEM; MuJoCo's XML reader reads errno after parsing a number
        # and then rejects the model ("unknown error in attribute 'size'") if that allocation fell inside it,
        # which the environment's size decided. A top pad larger than the segment makes malloc's very first
        # sbrk fail, at start-up, before MuJoCo parses anything.
        "GLIBC_TUNABLES": "glibc.malloc.top_pad=67108864",
    }
    out = subprocess.run(
        ["valgrind", *tool, sys.executable, __file__, "--ground", str(states_file), str(frames)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode:
        raise SystemExit(f"counting {tree} failed: {out.stderr.strip()[-800:]}")
    return out.stderr


def instructions(tree: Path, states_file: Path, frames: int) -> int:
    """Instructions of a child process that imports `tree`'s package and grounds `frames` per episode."""
    report = _child(
        ["--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"], tree, states_file, frames
    )
    refs = re.search(r"I\s+refs:\s+([\d,]+)", report)
    if refs is None:
        raise SystemExit(f"counting {tree} failed: no instruction count in {report.strip()[-800:]}")
    return int(refs[1].replace(",", ""))


def per_frame(tree: Path, states_file: Path, frames: int, total: int) -> float:
    return (instructions(tree, states_file, frames) - instructions(tree, states_file, 0)) / total


@dataclass(frozen=True)
class Calls:
    """Calls of each function entered from outside MuJoCo's library, and their inclusive instructions."""

    calls: dict[str, int]
    instructions: dict[str, int]

    def __sub__(self, other: Calls) -> Calls:
        return Calls(
            {f: n - other.calls[f] for f, n in self.calls.items()},
            {f: n - other.instructions[f] for f, n in self.instructions.items()},
        )


def entered_from_outside(callgrind_out: str, functions: tuple[str, ...], library: str = "libmujoco") -> Calls:
    """Each of `functions`' calls and inclusive instructions, summed over the call sites of a callgrind output
    (written with --compress-strings=no --compress-pos=no) whose caller's object is not `library`: the
    calls a program makes into the library, each counted with all it calls, none counted twice when one
    calls another."""
    calls, counted = dict.fromkeys(functions, 0), dict.fromkeys(functions, 0)
    caller_object, callee = "", ""
    lines = iter(callgrind_out.splitlines())
    for line in lines:
        if line.startswith("ob="):
            caller_object = line[3:]
        elif line.startswith("cfn="):
            callee = line[4:]
        elif line.startswith("calls=") and callee in calls and library not in caller_object:
            calls[callee] += int(line[6:].split()[0])
            counted[callee] += int(next(lines).split()[1])  # the call site's position, then its inclusive Ir
    return Calls(calls, counted)


def mujoco_calls(tree: Path, states_file: Path, frames: int, functions: tuple[str, ...]) -> Calls:
    """`functions`' calls and instructions over the child's `frames` per episode, less its start-up's."""
    counts = []
    for n in (frames, 0):
        out_file = states_file.with_name(f"callgrind_{n}.out")
        tool = ["--tool=callgrind", "--compress-strings=no", "--compress-pos=no", f"--callgrind-out-file={out_file}"]
        _child(tool, tree, states_file, n)
        counts.append(entered_from_outside(out_file.read_text(), functions))
        out_file.unlink()
    return counts[0] - counts[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", metavar="TASK", help=f"episodes (default: {' '.join(EPISODES)})")
    parser.add_argument("--frames", type=int, default=10**9, help="frames of each episode (default: all)")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="count this checkout's step first")
    parser.add_argument("--mujoco", action="store_true", help="count each tree's twin's MuJoCo calls too")
    parser.add_argument("--ground", nargs=2, metavar=("STATES", "FRAMES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ground:
        return ground(Path(args.ground[0]), int(args.ground[1]))
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    if args.baseline is not None and not (args.baseline / "safety_monitor").is_dir():
        raise SystemExit(f"--baseline {args.baseline}: no safety_monitor package there (a checkout's root?)")
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_grounding import TimedMuJoCo

    from safety_monitor.sim.runner import run_episode

    episodes = [list(run_episode(task)) for task in args.tasks or EPISODES]
    total = sum(min(len(states), args.frames) for states in episodes)
    with tempfile.TemporaryDirectory(prefix="bench_instructions_") as folder:
        states_file = Path(folder) / "states.pkl"
        states_file.write_bytes(pickle.dumps(episodes))
        trees = ([("baseline", args.baseline.resolve())] if args.baseline else []) + [("this tree", ROOT)]
        counts = {label: per_frame(tree, states_file, args.frames, total) for label, tree in trees}
        calls = {
            label: mujoco_calls(tree, states_file, args.frames, TimedMuJoCo.CALLS)
            for label, tree in (trees if args.mujoco else [])
        }
    for label, count in counts.items():
        print(f"{label:10s} {total:6d} frames {count:12,.0f} instructions a frame")
    for label, made in calls.items():
        each = ", ".join(f"{f} {made.calls[f] / total:.2f}" for f in TimedMuJoCo.CALLS)
        print(
            f"{label:10s} {total:6d} frames {sum(made.instructions.values()) / total:12,.0f} instructions a frame"
            f" in its twin's MuJoCo calls ({each} calls a frame)"
        )
    if args.baseline:
        print(f"{'change':10s} {'':13s} {counts['this tree'] / counts['baseline'] - 1:+12.1%}")
    if args.mujoco:
        floor = sum(calls["baseline" if args.baseline else "this tree"].instructions.values()) / total
        print(
            f"{'step / ' + ('baseline' if args.baseline else 'its') + ' MuJoCo calls':24s} {counts['this tree'] / floor:.2f}x"
        )


if __name__ == "__main__":
    main()
