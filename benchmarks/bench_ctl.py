"""Merged-tree CTL against checking each trajectory separately (SENTINEL's trajectory level).

For N rollouts of the workcell's pick-and-place-mug task, every property of the spec file that lifts
to CTL is checked three ways:
- merged: all rollouts merged into one computation tree, each formula checked once on it;
- separate CTL: the same checker on each rollout's own tree (no sharing);
- separate LTLf: each rollout run through each property's DFA (run-length compressed stepping),
  the usual independent LTL check.
The three verdicts must agree (the lifting is exact); the script fails otherwise. Verdicts only:
counterexample paths (`TreeChecker.check`) cost extra per violated property, the same either way.

Sources. `--source workcell` runs the MuJoCo workcell with the default grounder (seeds 0..N-1,
cycling no fault, slip, early_release, place_on_clutter; an undecided predicate keeps its last
value); about 4 s per rollout on one core.
`--source synthetic` (default, for N up to thousands) draws predicate traces whose schedule is
measured on 40 such workcell rollouts (3000-3400 frames at 500 Hz; first divergence between seeds at
frames 947-1040, i.e. 28 % into the task, when the grasp is detected; later events shifted by up to
+-12 frames per phase; the grasp-sensor flicker phase differs per seed), with a quarter of the
rollouts getting one of four faults after the grasp: slip, early release, forbidden contact after
placing, object that never settles. Rollouts therefore branch late and are nearly all distinct.
`--levels K` lets each seed-dependent shift take only K values, as in a coarser (symbolic)
simulator: then many rollouts repeat one another and the tree shares far more.

    .venv/bin/python benchmarks/bench_ctl.py [--counts 10 100 1000] [--levels 3] [--plot ctl.png] [--json rows.json]
    .venv/bin/python benchmarks/bench_ctl.py --source workcell --counts 10 40 --rollouts /tmp/workcell40.npz
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

from safety_monitor.specs.compile import compile_formula
from safety_monitor.specs.model import load_specs
from safety_monitor.verify.check import TreeChecker
from safety_monitor.verify.lift import lift_properties
from safety_monitor.verify.trajectories import from_workcell, to_matrix
from safety_monitor.verify.tree import build_tree

ROOT = Path(__file__).resolve().parent.parent
TASK = "pick_and_place_mug"
WORKCELL_FAULTS = (None, "slip", "early_release", "place_on_clutter")
SYNTHETIC_FAULTS = ("slip", "early_release", "contact", "no_settle")


def synthetic_rollout(rng: random.Random, predicates: list[str], levels: int = 0) -> np.ndarray:
    """One rollout (frames x predicates) on the schedule measured from workcell rollouts. With
    `levels` > 0 every seed-dependent shift takes one of that many values (a coarse simulator)."""

    def draw(lo: int, hi: int) -> int:
        return rng.randint(lo, hi) if levels <= 0 else lo + (hi - lo) * rng.randrange(levels) // max(levels - 1, 1)

    grasp = 971 + draw(-25, 65)  # grasp contact: the first frame where seeds differ
    left = grasp + 1553 + draw(-12, 12)  # object leaves the fingers at the goal
    settled = left + 248 + draw(-10, 10)
    frames = settled + 651
    col = {p: i for i, p in enumerate(predicates)}
    x = np.zeros((frames, len(predicates)), dtype=bool)

    def put(name: str, start: int, stop: int = frames, value: bool = True) -> None:
        x[max(start, 0) : max(min(stop, frames), 0), col[name]] = value

    put("skill_pick_onset", grasp - 10, grasp)
    put("preconditions_pick", grasp - 60, grasp + 10)
    put("skill_pick_onset_end", grasp, grasp + 5)
    put("object_grasped_raw", grasp, left + 124)
    phase = draw(0, 9)  # the raw grasp signal flickers at the pose stream's rate while carried
    flicker = np.arange(grasp + 547, grasp + 1427)
    x[flicker[(flicker + phase) % 10 < 3], col["object_grasped_raw"]] = False
    put("object_grasped", grasp + 124, left + 124)
    put("object_sync", grasp + 124, left + 124)
    put("object_left_gripper", left)
    put("skill_place_onset", left + 16, left + 17)
    put("preconditions_place", left - 40, left + 30)
    put("skill_place_onset_end", left + 16, left + 124)
    put("object_released", left + 32, left + 125)
    put("object_dropped", left + 124, left + 125)
    put("object_settled", settled)
    if rng.random() < 0.25:
        fault, late = rng.choice(SYNTHETIC_FAULTS), 20 * rng.randrange(3)
        if fault == "slip":  # the mug turns in the closed gripper
            put("object_sync", grasp + 600 + late, left + 124, False)
        elif fault == "early_release":  # opened in transfer: dropped without a release action
            drop = grasp + 900 + late
            for name in (
                "object_grasped",
                "object_sync",
                "object_grasped_raw",
                "object_released",
                "skill_place_onset",
                "preconditions_place",
                "skill_place_onset_end",
                "object_settled",
            ):
                put(name, drop, value=False)
            put("object_left_gripper", drop)
            put("object_dropped", drop, drop + 1)
            put("object_settled", drop + 200)
        elif fault == "contact":  # the arm presses on the table after placing
            put("forbidden_contact_sustained", left + 300 + late, left + 350 + late)
        else:  # the mug keeps rolling
            put("object_settled", left, value=False)
            put("object_dropped", left + 124)
            put("settle_timeout", left + 174 + late)
    return x


def dfa_verdict(dfa, values: np.ndarray, columns: np.ndarray) -> bool:
    """LTLf acceptance of one trace, stepping each run of equal letters only until it self-loops."""
    letters = (values[:, columns].astype(np.int64) << np.arange(columns.size)).sum(axis=1)
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


def best_of(repeat: int, fn):
    """(result, the least wall time over `repeat` calls): the machine is shared, noise only adds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, min(times)


def measure(runs: list[np.ndarray], predicates, lifted, dfas, repeat: int) -> dict:
    formulas = [p.ctl for p in lifted]

    def merged_check(tree):
        checker = TreeChecker(tree)
        return [checker.holds(f) for f in formulas]

    def separate_ctl():
        verdicts = [True] * len(formulas)
        for run in runs:
            own = TreeChecker(build_tree([run], predicates))
            verdicts = [v and own.holds(f) for v, f in zip(verdicts, formulas)]
        return verdicts

    def separate_ltlf():
        verdicts = [True] * len(formulas)
        for run in runs:
            verdicts = [v and dfa_verdict(dfa, run, cols) for v, (dfa, cols) in zip(verdicts, dfas)]
        return verdicts

    tree, merge_s = best_of(repeat, lambda: build_tree(runs, predicates))
    merged, check_s = best_of(repeat, lambda: merged_check(tree))
    separate, separate_ctl_s = best_of(repeat, separate_ctl)
    ltl, separate_ltlf_s = best_of(repeat, separate_ltlf)
    if not (merged == separate == ltl):
        sys.exit(f"verdicts disagree for N={len(runs)}: merged {merged}, separate {separate}, LTLf {ltl}")
    merged_s = merge_s + check_s
    return {
        "trajectories": len(runs),
        "distinct": len({r.tobytes() for r in runs}),
        "frames": tree.n_frames,
        "nodes": tree.n_nodes,
        "levels": tree.n_levels,
        "violated": sum(not v for v in merged),
        "merge_s": merge_s,
        "check_s": check_s,
        "merged_s": merged_s,
        "separate_ctl_s": separate_ctl_s,
        "separate_ltlf_s": separate_ltlf_s,
        "speedup_vs_ctl": separate_ctl_s / merged_s,
        "speedup_vs_ltlf": separate_ltlf_s / merged_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=("synthetic", "workcell"), default="synthetic")
    parser.add_argument("--specs", default=str(ROOT / "config" / "specs.yaml"))
    parser.add_argument("--counts", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--seed", type=int, default=0, help="synthetic source: random seed")
    parser.add_argument(
        "--levels",
        type=int,
        default=0,
        help="synthetic source: values per seed-dependent shift (0: the measured ranges)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="time each phase this often, keep the least")
    parser.add_argument(
        "--rollouts", metavar="FILE.npz", help="workcell source: reuse the rollouts saved here, and save new ones"
    )
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
    print(
        f"{args.source} rollouts; {len(lifted)} of {len(spec.properties)} properties lifted to CTL; "
        f"{len(predicates)} predicates"
    )
    pool: list[np.ndarray] = []  # workcell rollouts are reused by the larger counts
    if args.source == "workcell" and args.rollouts and Path(args.rollouts).exists():
        with np.load(args.rollouts) as saved:
            if list(saved["predicates"]) != predicates:
                sys.exit(f"{args.rollouts} was saved for other predicates")
            pool = [saved[f"run{i}"] for i in range(len(saved.files) - 1)]

    def rollouts(n: int) -> list[np.ndarray]:
        if args.source == "synthetic":
            rng = random.Random(args.seed * 100_003 + n)
            return [synthetic_rollout(rng, predicates, args.levels) for _ in range(n)]
        while len(pool) < n:
            (run,) = from_workcell(TASK, [len(pool)], WORKCELL_FAULTS)
            pool.append(to_matrix(run, predicates, unknown="last"))
            print(f"  {run.name}: {len(run.frames)} frames", file=sys.stderr, flush=True)
            if args.rollouts:
                np.savez_compressed(
                    args.rollouts, predicates=np.array(predicates), **{f"run{i}": r for i, r in enumerate(pool)}
                )
        return pool[:n]

    warm_up = random.Random(-1)
    measure([synthetic_rollout(warm_up, predicates) for _ in range(3)], predicates, lifted, dfas, 1)
    rows = []
    print(
        f"{'N':>5} {'distinct':>8} {'frames':>9} {'nodes':>8} {'levels':>6} {'viol':>4} {'merge s':>8} {'check s':>8} "
        f"{'sep CTL s':>9} {'sep LTLf s':>10} {'x CTL':>6} {'x LTLf':>6}"
    )
    for n in args.counts:
        r = measure(rollouts(n), predicates, lifted, dfas, args.repeat)
        rows.append(r)
        print(
            f"{n:>5} {r['distinct']:>8} {r['frames']:>9} {r['nodes']:>8} {r['levels']:>6} {r['violated']:>4} "
            f"{r['merge_s']:>8.3f} {r['check_s']:>8.3f} {r['separate_ctl_s']:>9.3f} {r['separate_ltlf_s']:>10.3f} "
            f"{r['speedup_vs_ctl']:>6.1f} {r['speedup_vs_ltlf']:>6.1f}",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    if args.plot:
        plot(rows, args.plot, args.source)
    return 0


def plot(rows: list[dict], path: str, source: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["trajectories"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax1.loglog(n, [r["merged_s"] for r in rows], "o-", label="merged tree (merge + check)")
    ax1.loglog(n, [r["separate_ctl_s"] for r in rows], "s-", label="CTL per trajectory")
    ax1.loglog(n, [r["separate_ltlf_s"] for r in rows], "^-", label="LTLf DFA per trajectory")
    ax1.set_xlabel(f"{source} rollouts")
    ax1.set_ylabel("seconds")
    ax1.legend(fontsize=7)
    ax2.semilogx(n, [r["speedup_vs_ctl"] for r in rows], "s-", label="vs CTL per trajectory")
    ax2.semilogx(n, [r["speedup_vs_ltlf"] for r in rows], "^-", label="vs LTLf per trajectory")
    ax2.set_xlabel(f"{source} rollouts")
    ax2.set_ylabel("speedup of the merged tree")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    sys.exit(main())
