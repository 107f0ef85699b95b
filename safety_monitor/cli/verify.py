"""Sub-commands `equiv` (semantic level), `plan` (plan level) and `ctl` (trajectory level).

Exit codes: 0 when the formulas are equivalent / the plan is executable and safe / every CTL formula
holds; 1 when not; 2 on bad input (one-line error).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from safety_monitor.arguments import whole
from safety_monitor.cli import workers
from safety_monitor.errors import SourceError, SpecError

if TYPE_CHECKING:  # the sub-commands import their modules when they run
    from safety_monitor.verify.ctl import CTLFormula

# counterexample paths shown per violated CTL formula (in text, --json and --feedback); every
# trajectory that breaks it is counted, and named in --json
PATHS_SHOWN = 3


def register(sub: argparse._SubParsersAction) -> None:
    eq = sub.add_parser(
        "equiv",
        help="are two LTLf formulas equivalent? (or score a file of candidates)",
        description="Decide language equivalence of two LTLf formulas on their DFAs and give a "
        "shortest distinguishing trace; or score --candidates against --reference.",
    )
    eq.add_argument("formulas", nargs="*", metavar="FORMULA", help="two formulas A and B (ltlf2dfa syntax)")
    eq.add_argument(
        "--candidates", metavar="FILE", help="candidate formulas: JSONL or YAML entries {id, formula, model?}"
    )
    eq.add_argument(
        "--reference",
        metavar="FILE",
        help="reference formulas: JSONL/YAML entries {id, formula}, a mapping id -> formula, or a spec file",
    )
    eq.add_argument("--json", action="store_true", help="print JSON")
    workers.add_arguments(eq, "score --candidates")
    eq.set_defaults(func=_equiv, _parser=eq)

    pl = sub.add_parser(
        "plan",
        help="check a symbolic plan against a spec file",
        description="Check a plan (actions with preconditions/effects, or milestones) against "
        "every property of a spec file, and its executability from the initial state.",
    )
    pl.add_argument("plan", help="plan YAML file")
    pl.add_argument("--specs", required=True, metavar="FILE", help="spec YAML file")
    pl.add_argument("--json", action="store_true", help="print the report as JSON")
    pl.add_argument("--feedback", metavar="FILE", help="write the counterexamples as planner feedback JSON")
    pl.set_defaults(func=_plan)

    ctl = sub.add_parser(
        "ctl",
        help="merge trajectories into a computation tree and check CTL on it",
        description="Merge predicate trajectories (trace files, bags, workcell rollouts) into one "
        "computation tree and check CTL formulas, or the spec file's properties lifted to CTL.",
    )
    ctl.add_argument(
        "traces",
        nargs="*",
        metavar="TRACE",
        help="predicate trace files (.jsonl, .csv) or bags with recorded predicates "
        "(bag folder, .mcap, .db3, or a folder searched for bags)",
    )
    ctl.add_argument("--sim", metavar="TASK", help="also simulate rollouts of this workcell task")
    ctl.add_argument(
        "--seeds",
        type=whole(1, 100_000),
        metavar="N",
        help="--sim: number of rollouts, 1 to 100000, seeds 0..N-1 (default 10)",
    )
    ctl.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="FAULT",
        help="--sim: rollouts cycle through no fault and these faults (repeatable)",
    )
    ctl.add_argument(
        "--unknown",
        choices=("error", "last"),
        default=None,
        help="an unknown value: error (default for files and bags) or keep the last known value "
        "(default for --sim, as the grounder does)",
    )
    ctl.set_defaults(_parser=ctl)
    what = ctl.add_mutually_exclusive_group(required=True)
    what.add_argument("--formula", action="append", help="CTL formula, e.g. 'AG(grasped -> AF released)' (repeatable)")
    what.add_argument("--specs", metavar="FILE", help="spec YAML file: lift each property's formula to CTL")
    ctl.add_argument("--json", action="store_true", help="print JSON")
    ctl.add_argument("--feedback", metavar="FILE", help="write the counterexamples as planner feedback JSON")
    workers.add_arguments(ctl, "read trace files and bags")
    ctl.set_defaults(func=_ctl)


def _equiv(args: argparse.Namespace) -> int:
    batch = args.candidates is not None or args.reference is not None
    if batch and args.formulas:
        args._parser.error("batch mode takes no formulas: give two formulas, or --candidates FILE --reference FILE")
    if batch and (args.candidates is None or args.reference is None):
        args._parser.error(f"batch mode needs {'--reference' if args.reference is None else '--candidates'} FILE too")
    if not batch and len(args.formulas) != 2:
        args._parser.error("give two formulas A and B, or --candidates FILE --reference FILE")
    if not batch and (args.jobs is not None or args.ray is not None):
        args._parser.error("--jobs and --ray score --candidates; two formulas are decided here")
    if batch:
        return _equiv_batch(args)
    from safety_monitor.specs.equivalence import formula_equivalence

    a, b = args.formulas
    result = formula_equivalence(a, b)
    if args.json:
        print(json.dumps(result.to_dict()))
    elif result.equivalent:
        print(f"equivalent: A and B accept the same traces over {', '.join(result.atoms) or 'no predicates'}")
    else:
        print(f"not equivalent: this {len(result.trace)}-frame trace is accepted by {result.accepted_by} only")
        for i, valuation in enumerate(result.trace):
            print(f"  frame {i}: " + (" ".join(f"{k}={int(v)}" for k, v in valuation.items()) or "(no predicates)"))
    return 0 if result.equivalent else 1


def _equiv_batch(args: argparse.Namespace) -> int:
    from safety_monitor.specs.equivalence import VERDICTS, load_entries, rates_by_model, score_candidates

    candidates, references = load_entries(args.candidates), load_entries(args.reference)
    with workers.executor(args) as executor:
        scores = score_candidates(candidates, references, executor, workers.warner("equiv"))
    rates = rates_by_model(scores)
    if args.json:
        print(
            json.dumps(
                {"rates": {k: r.to_dict() for k, r in rates.items()}, "scores": [s.to_dict() for s in scores]}, indent=2
            )
        )
        return 0
    header = ("model", "n", *VERDICTS)
    models = sorted(rates, key=lambda model: model == "all")  # the overall row last, under the models
    rows = [
        (
            model,
            str(rates[model].total),
            *(f"{rates[model].counts[v]} ({100 * rates[model].rate(v):.1f}%)" for v in VERDICTS),
        )
        for model in models
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    for row in (header, *rows):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    return 0


def _plan(args: argparse.Namespace) -> int:
    from safety_monitor.specs.model import compile_specs, load_specs
    from safety_monitor.verify.feedback import feedback_json
    from safety_monitor.verify.plan import check_plan, load_plan

    plan, spec_set = load_plan(args.plan), load_specs(args.specs)
    report = check_plan(plan, compile_specs(spec_set))
    if not report.checked:  # a pass that checked nothing must not look like a safe plan
        outside = sorted(plan.predicates - set(spec_set.predicates))
        name, reason = report.unchecked[0]
        raise SpecError(
            f"{args.plan}: checks none of the {len(report.unchecked)} properties of {args.specs}: each "
            f"reads a predicate the plan never sets (e.g. {name}: {reason})"
            + (f"; plan predicates outside the spec vocabulary: {', '.join(outside)}" if outside else "")
        )
    if args.feedback:
        _write(args.feedback, feedback_json(report.violations))
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        status = {True: "executable", False: "NOT executable", None: "executability not checked (no action model)"}
        milestones = f"{len(report.milestone_steps)} milestones, " if plan.is_milestones else ""
        print(f"{report.plan}: {milestones}{len(report.states) - 1} steps, {status[report.executable]}")
        for line in report.executability:
            print(f"  {line}")
        if report.goal_reached is not None:
            print(f"  goal {'reached' if report.goal_reached else 'NOT reached'}")
        print(f"{len(report.checked)} properties checked, {len(report.violations)} violated")
        for v in report.violations:
            print(f"  VIOLATED {v.sentence}")
        for name, reason in report.unchecked:
            print(f"  unchecked {name}: {reason}")
    return 0 if report.executable is not False and not report.violations else 1


def _ctl(args: argparse.Namespace) -> int:
    import time

    from safety_monitor.verify import trajectories
    from safety_monitor.verify.check import TreeChecker
    from safety_monitor.verify.ctl import ctl_atoms, ctl_text, parse_ctl
    from safety_monitor.verify.feedback import feedback_json, from_ctl

    if not args.traces and not args.sim:
        args._parser.error("give trace files or bags, or --sim TASK")
    if not args.sim and (args.fault or args.seeds is not None):
        args._parser.error("--seeds and --fault only apply with --sim TASK (they choose its rollouts)")
    if not args.traces and (args.jobs is not None or args.ray is not None):
        args._parser.error("--jobs and --ray read trace files and bags; --sim rollouts run here")
    if args.sim:
        seeds = 10 if args.seeds is None else args.seeds
        faults = trajectories.rollout_faults(args.sim, seeds, args.fault)
    todo: list[tuple[str, str, CTLFormula, str | None]]  # (name, category, CTL formula, the LTLf it lifts)
    if args.specs:
        from safety_monitor.specs.model import load_specs
        from safety_monitor.verify.lift import lift_properties

        lifted = lift_properties(load_specs(args.specs).properties)
        todo = [(p.name, p.category, p.ctl, p.ltl) for p in lifted if p.ctl is not None]
        not_lifted = [{"property": p.name, "formula": p.ltl, "reason": p.reason} for p in lifted if p.ctl is None]
    else:
        todo = [(ctl_text(f), "", f, None) for f in map(parse_ctl, args.formula)]
        not_lifted = []
    with workers.executor(args) as executor:
        found = trajectories.load(args.traces, executor, workers.warner("ctl"))
    if args.sim:
        from tqdm import tqdm

        # seconds per rollout: a bar where someone watches (a terminal), nothing in a pipe or a log
        bar = tqdm(total=seeds, unit="rollout", desc=args.sim, leave=False, disable=not sys.stderr.isatty())
        with bar:
            found += trajectories.from_workcell(args.sim, range(seeds), faults, bar.update)
    unknown = args.unknown or ("last" if args.sim else "error")
    # each formula is checked on the tree over its own atoms, so its verdict never depends on the other
    # formulas of the command (trajectories that differ only elsewhere merge); one tree per atom set
    started = time.perf_counter()
    checkers: dict[tuple[str, ...], TreeChecker] = {}
    for _, _, formula, _ in todo:
        atoms = ctl_atoms(formula)
        if atoms not in checkers:
            checkers[atoms] = TreeChecker(trajectories.merge(found, unknown, atoms))
    merged = time.perf_counter()
    results: list[dict[str, Any]] = []
    counterexamples = []
    for name, category, formula, ltl in todo:
        checker = checkers[ctl_atoms(formula)]
        result = checker.check(formula)
        row: dict[str, Any] = {"property": name, "ctl": ctl_text(formula), "holds": result.holds}
        if ltl is not None:
            row["ltl"] = ltl
        if not result.holds:
            broken = checker.breakers(result)
            if broken.size:
                forest, along = checker.along(formula, broken, PATHS_SHOWN)
                shown = [from_ctl(r, forest, name, category) for r in along]
            else:  # only several trajectories together break it: the tree's counterexample
                shown = [from_ctl(result, checker.tree, name, category)]
            counterexamples.extend(shown)
            row["broken_by"] = [checker.tree.names[i] for i in broken]
            row["counterexamples"] = [cx.to_json() for cx in shown]
        results.append(row)
    checked = time.perf_counter()
    if args.feedback:
        _write(args.feedback, feedback_json(counterexamples))
    trees = [c.tree for c in checkers.values()]
    summary = {
        "trajectories": len(found),
        "frames": sum(len(t.frames) for t in found),
        "trees": len(trees),
        "nodes": sum(t.n_nodes for t in trees),
        "merge_s": round(merged - started, 4),
        "check_s": round(checked - merged, 4),
    }
    if args.json:
        print(json.dumps({"tree": summary, "results": results, "not_lifted": not_lifted}, indent=2))
    else:
        per_atoms = f"{summary['trees']} trees (one per formula atom set), " if summary["trees"] > 1 else ""
        print(
            f"{summary['trajectories']} trajectories, {summary['frames']} frames -> {per_atoms}{summary['nodes']} tree nodes "
            f"(merged in {summary['merge_s']:.3f} s, checked in {summary['check_s']:.3f} s)"
        )
        for row in results:
            what = row["ctl"] if row["property"] == row["ctl"] else f"{row['property']}: {row['ctl']}"
            if row["holds"]:
                print(f"  holds     {what}")
                continue
            n = len(row["broken_by"])
            by = f"broken by {n} of {len(found)} trajectories" if n else "no trajectory breaks it alone"
            print(f"  VIOLATED  {what}  ({by})")
            for cx in row["counterexamples"]:
                print(f"            {cx['sentence']}")
            more = n - sum(len(cx["where"]) for cx in row["counterexamples"]) if n else 0
            if more:
                print(f"            and {more} more trajectories (--json names them all)")
        for item in not_lifted:
            print(f"  not lifted  {item['property']}: {item['reason']}")
    return 0 if all(r["holds"] for r in results) else 1


def _write(path: str, text: str) -> None:
    from safety_monitor.files import write_file

    write_file(path, text + "\n", "planner feedback", SourceError)
