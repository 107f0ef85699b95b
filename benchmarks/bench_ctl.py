"""Merged-tree CTL against checking each trajectory separately (SENTINEL's trajectory level).

For N rollouts of one pick-and-place task, checks every property of a spec file lifted to CTL:
- merged: all rollouts merged into one computation tree, each formula checked once on it;
- separate CTL: the same checker on each rollout's own tree (no sharing);
- separate LTLf: each rollout run through each property's DFA (run-length compressed stepping),
  the usual independent LTL check.
The three verdicts must agree (the lifting is exact); the script fails otherwise.

Rollouts are synthetic until the workcell's predicate rollouts are available: the predicates follow
a scripted pick-and-place (approach, pick, transfer, place, release, settle) at 500 Hz; a seed
shifts the grasp, release and settle times by a few frames each (a small discrete set, as
thresholded predicates of nearby sim runs do) and a quarter of the rollouts get one of four faults
late in the task (slip, drop, forbidden contact, no settle). So rollouts branch late, after the
shared approach, like sim rollouts of one task with different seeds and faults.

    .venv/bin/python benchmarks/bench_ctl.py [--counts 10 100 1000] [--plot speedup.png]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

from safety_monitor.spec.compile import compile_formula
from safety_monitor.spec.model import load_specs
from safety_monitor.verify.check import TreeChecker
from safety_monitor.verify.lift import lift_properties
from safety_monitor.verify.tree import build_tree

HERE = Path(__file__).resolve().parent
FAULTS = ("slip", "drop", "contact", "no_settle")


def rollout(rng: random.Random, predicates: list[str], frames: int) -> np.ndarray:
    """One synthetic pick-and-place rollout: a frames x predicates bool matrix."""
    col = {p: i for i, p in enumerate(predicates)}
    x = np.zeros((frames, len(predicates)), dtype=bool)

    def on(name: str, start: int, stop: int = frames) -> None:
        x[max(start, 0):max(min(stop, frames), 0), col[name]] = True

    def off(name: str, start: int, stop: int = frames) -> None:
        x[max(start, 0):max(min(stop, frames), 0), col[name]] = False

    g = int(frames * 0.57) + 3 * rng.randrange(6)  # grasp detected
    r = int(frames * 0.77) + 3 * rng.randrange(6)  # release
    settle = 40 + 8 * rng.randrange(6)
    on("preconditions_pick", g - 60, g + 10)
    on("skill_pick_onset", g - 10, g)
    on("skill_pick_onset_end", g, g + 5)
    for name in ("object_grasped", "object_sync", "object_grasped_raw"):
        on(name, g, r)
    on("preconditions_place", r - 60, r + 10)
    on("skill_place_onset", r - 10, r)
    on("skill_place_onset_end", r, r + 5)
    on("object_released", r)
    on("object_left_gripper", r + 5)
    on("object_dropped", r + 5, r + 5 + settle)
    on("object_settled", r + 5 + settle)
    if rng.random() < 0.25:
        fault, late = rng.choice(FAULTS), 20 * rng.randrange(2)
        if fault == "slip":  # the object slides in the closed gripper
            off("object_sync", g + 300 + late, r)
        elif fault == "drop":  # lost in transfer, never released
            d = g + 400 + late
            for name in ("object_grasped", "object_grasped_raw", "object_sync", "object_released", "skill_place_onset",
                         "preconditions_place", "skill_place_onset_end", "object_settled", "object_dropped"):
                off(name, d)
            on("object_dropped", d, d + 60)
            on("object_left_gripper", d)
            on("object_settled", d + 60)
        elif fault == "contact":  # the arm presses on a forbidden surface after placing
            on("forbidden_contact_sustained", r + 100 + late, r + 150 + late)
        else:  # the released object keeps moving
            off("object_settled", r + 5)
            on("object_dropped", r + 5)
            on("settle_timeout", r + 105 + late)
    return x


def dfa_verdict(dfa, values: np.ndarray, columns: np.ndarray) -> bool:
    """LTLf acceptance of one trace, stepping each run of equal letters only until it self-loops."""
    bits = values[:, columns].astype(np.int64) << np.arange(columns.size)
    letters = bits.sum(axis=1)
    starts = np.flatnonzero(np.diff(letters, prepend=-1))
    lengths = np.diff(np.append(starts, letters.size))
    table, q = dfa.table, dfa.initial
    for a, n in zip(letters[starts].tolist(), lengths.tolist()):
        for _ in range(n):
            nxt = int(table[q, a])
            if nxt == q:
                break
            q = nxt
    return bool(dfa.accepting[q])


def measure(n: int, args, predicates, lifted, dfas) -> dict:
    rng = random.Random(args.seed + n)
    runs = [rollout(rng, predicates, args.frames) for _ in range(n)]
    formulas = [p.ctl for p in lifted]

    t0 = time.perf_counter()
    tree = build_tree(runs, predicates)
    t1 = time.perf_counter()
    checker = TreeChecker(tree)
    merged = [checker.check(f).holds for f in formulas]
    t2 = time.perf_counter()

    separate = [True] * len(formulas)
    for run in runs:
        own = TreeChecker(build_tree([run], predicates))
        separate = [s and own.check(f).holds for s, f in zip(separate, formulas)]
    t3 = time.perf_counter()

    ltl = [True] * len(formulas)
    for run in runs:
        ltl = [v and dfa_verdict(dfa, run, cols) for v, (dfa, cols) in zip(ltl, dfas)]
    t4 = time.perf_counter()

    if not (merged == separate == ltl):
        sys.exit(f"verdicts disagree for N={n}: merged {merged}, separate {separate}, LTLf {ltl}")
    return {
        "trajectories": n, "frames": tree.n_frames, "nodes": tree.n_nodes, "levels": tree.n_levels,
        "violated": sum(not v for v in merged),
        "merge_s": t1 - t0, "check_s": t2 - t1, "merged_s": t2 - t0,
        "separate_ctl_s": t3 - t2, "separate_ltlf_s": t4 - t3,
        "speedup_vs_ctl": (t3 - t2) / (t2 - t0), "speedup_vs_ltlf": (t4 - t3) / (t2 - t0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", default=str(HERE / "specs_20.yaml"))
    parser.add_argument("--counts", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--frames", type=int, default=3000, help="frames per rollout (6 s at 500 Hz)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", help="write a PNG of time and speedup against N here")
    parser.add_argument("--json", help="write the rows as JSON here")
    args = parser.parse_args()

    spec = load_specs(args.specs)
    predicates = list(spec.predicates)
    lifted = [p for p in lift_properties(spec.properties) if p.ctl is not None]
    index = {p: i for i, p in enumerate(predicates)}
    dfas = []
    for p in lifted:
        dfa = compile_formula(p.ltl)
        dfas.append((dfa, np.array([index[a] for a in dfa.atoms], dtype=np.intp)))
    print(f"{len(lifted)} of {len(spec.properties)} properties lifted to CTL; {len(predicates)} predicates; "
          f"{args.frames} frames per rollout")
    measure(5, args, predicates, lifted, dfas)  # warm-up
    rows = []
    header = f"{'N':>5} {'frames':>9} {'nodes':>8} {'levels':>6} {'viol':>4} {'merge s':>8} {'check s':>8} " \
             f"{'sep CTL s':>9} {'sep LTLf s':>10} {'x CTL':>6} {'x LTLf':>6}"
    print(header)
    for n in args.counts:
        r = measure(n, args, predicates, lifted, dfas)
        rows.append(r)
        print(f"{n:>5} {r['frames']:>9} {r['nodes']:>8} {r['levels']:>6} {r['violated']:>4} {r['merge_s']:>8.3f} "
              f"{r['check_s']:>8.3f} {r['separate_ctl_s']:>9.3f} {r['separate_ltlf_s']:>10.3f} "
              f"{r['speedup_vs_ctl']:>6.1f} {r['speedup_vs_ltlf']:>6.1f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    if args.plot:
        plot(rows, args.plot)
    return 0


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["trajectories"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax1.loglog(n, [r["merged_s"] for r in rows], "o-", label="merged tree (merge + check)")
    ax1.loglog(n, [r["separate_ctl_s"] for r in rows], "s-", label="CTL per trajectory")
    ax1.loglog(n, [r["separate_ltlf_s"] for r in rows], "^-", label="LTLf DFA per trajectory")
    ax1.set_xlabel("rollouts")
    ax1.set_ylabel("seconds")
    ax1.legend(fontsize=7)
    ax2.semilogx(n, [r["speedup_vs_ctl"] for r in rows], "s-", label="vs CTL per trajectory")
    ax2.semilogx(n, [r["speedup_vs_ltlf"] for r in rows], "^-", label="vs LTLf per trajectory")
    ax2.set_xlabel("rollouts")
    ax2.set_ylabel("speedup of the merged tree")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    sys.exit(main())
