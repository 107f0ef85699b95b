"""Instructions robot-state replay spends a frame around the grounder (reading, decoding, assembling, the
Supervisor and monitor, the loop), counted by callgrind: a figure the machine's load does not move.

The child scores the bag once to warm up (imports, the compiled specs, the kept grounder), then again with
callgrind collecting only in that score's message loop (`_timed_batches` drives it: reading, decoding,
assembling, the Supervisor and monitor, the loop's own work; not the per-bag set-up before it nor the report
after) and not inside `Grounder.step` (the grounding engineers' figure, `bench_instructions.py`; `--grounding`
counts it instead). Collection is switched by callgrind's client request (a one-line C shim built with gcc into
a scratch folder); the switch's own ctypes calls, a few hundred instructions a frame, are in the figure of
every tree alike. `--baseline DIR` counts another checkout's root first, for a before and after in one run.
A short bag keeps it to minutes: `safety_monitor.replay.simbag.record_sim_bag(DIR, (SimRun("open_drawer"),),
estimate=True)` is 3,434 frames. Needs valgrind (callgrind) and gcc.

    .venv/bin/python benchmarks/bench_replay_instructions.py BAG [--baseline DIR] [--grounding]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIM = """#include <valgrind/callgrind.h>
void toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
"""


def score(bag: Path, shim: Path, grounding: bool) -> None:
    """The child's work: score `bag` warm, collecting in its message loop outside `Grounder.step` (or, with
    `grounding`, inside it only)."""
    from safety_monitor.grounding.grounder import Grounder
    from safety_monitor.replay import score as scoring
    from safety_monitor.replay.score import ReplayConfig, score_bag

    toggle = ctypes.CDLL(str(shim)).toggle
    config = ReplayConfig()
    result = score_bag(bag, config)  # warm
    assert result.ok, result.error
    step = Grounder.step

    def switched(self, state):  # collection off (or on) while grounding
        toggle()
        try:
            return step(self, state)
        finally:
            toggle()

    timed = scoring._timed_batches

    def collected(*args):  # collection on while the message loop runs
        toggle()
        try:
            yield from timed(*args)
        finally:
            toggle()

    Grounder.step = switched
    if not grounding:
        scoring._timed_batches = collected
    result = score_bag(bag, config)
    print(f"frames {result.frames}")


def count(tree: Path, bag: Path, shim: Path, grounding: bool) -> tuple[int, int]:
    """Instructions collected, and frames scored, by a child that imports `tree`'s package."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "PYTHONHASHSEED": "0",
        "_ROS_WHEELS_BOOTSTRAP_COMPLETE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--callgrind-out-file=/dev/null"]
        + [sys.executable, __file__, str(bag), "--child", str(shim)]
        + (["--grounding"] if grounding else []),
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    refs = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
    frames = re.search(r"^frames (\d+)$", out.stdout, re.M)
    if out.returncode or refs is None or frames is None:
        raise SystemExit(f"counting {tree} failed: {out.stderr.strip()[-800:]}")
    return int(refs[1]), int(frames[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bag", type=Path, help="a recorded workcell bag (e.g. one of bench_replay.py's --keep)")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="count this checkout's replay first")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--grounding", action="store_true", help="count inside Grounder.step instead")
    args = parser.parse_args()
    if args.child:
        return score(args.bag.resolve(), args.child, args.grounding)
    if shutil.which("valgrind") is None or shutil.which("gcc") is None:
        raise SystemExit("valgrind and gcc are needed (Debian: apt-get install valgrind gcc)")
    if args.baseline is not None and not (args.baseline / "safety_monitor").is_dir():
        raise SystemExit(f"--baseline {args.baseline}: no safety_monitor package there (a checkout's root?)")
    with tempfile.TemporaryDirectory(prefix="bench_replay_instructions_") as folder:
        shim = Path(folder) / "toggle.so"
        (Path(folder) / "toggle.c").write_text(SHIM)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", shim, Path(folder) / "toggle.c"], check=True)
        trees = ([("baseline", args.baseline.resolve())] if args.baseline else []) + [("this tree", ROOT)]
        counts = {}
        where = "in the grounder" if args.grounding else "around the grounder"
        for label, tree in trees:
            collected, frames = count(tree, args.bag.resolve(), shim, args.grounding)
            counts[label] = collected / frames
            print(f"{label:10s} {frames:6d} frames {counts[label]:10,.0f} instructions a frame {where}")
    if args.baseline:
        print(f"{'change':10s} {counts['this tree'] / counts['baseline'] - 1:+.1%}")


if __name__ == "__main__":
    main()
