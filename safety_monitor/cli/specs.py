"""Sub-commands `specs check` and `eval`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from safety_monitor.arguments import number
from safety_monitor.errors import SourceError, SpecError

RATE = number(0, 1e6, above=True, unit="Hz")


def register(sub: argparse._SubParsersAction) -> None:
    specs = sub.add_parser("specs", help="validate and compile spec files")
    specs_sub = specs.add_subparsers(dest="specs_command", metavar="ACTION", required=True)
    check = specs_sub.add_parser("check", help="validate and compile a spec file, print one row per property")
    check.add_argument("file", help="spec YAML file")
    check.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    check.add_argument(
        "--rate",
        type=RATE,
        metavar="HZ",
        help="control rate for bounds and spans in seconds (default: the file's control_rate_hz)",
    )
    check.set_defaults(func=_check)
    explain = specs_sub.add_parser("explain", help="each property, its recovery and options in plain English")
    explain.add_argument("file", help="spec YAML file")
    explain.add_argument("property", nargs="?", help="only this property")
    explain.add_argument("--rate", type=RATE, metavar="HZ", help="control rate to show bounds in seconds as frames")
    explain.set_defaults(func=_explain)

    ev = sub.add_parser("eval", help="evaluate one LTLf formula on a trace file")
    ev.add_argument("--formula", required=True, help="LTLf formula in ltlf2dfa syntax, e.g. 'G(a -> F b)'")
    ev.add_argument("--trace", required=True, help="trace file: JSON Lines or CSV with a header row")
    ev.set_defaults(func=_eval)


def _check(args: argparse.Namespace) -> int:
    from safety_monitor.specs.classify import classify
    from safety_monitor.specs.ltlf import parse
    from safety_monitor.specs.model import authoring_warnings, compile_specs, load_specs

    spec_set = load_specs(args.file).at_rate(args.rate)
    rows: list[dict[str, Any]] = [  # the --json output, one object per property
        {
            "name": c.prop.name,
            "category": c.prop.category,
            "class": str(classify(parse(c.prop.formula))),
            "formula": c.prop.formula,
            "pattern": c.prop.pattern.describe() if c.prop.pattern else None,
            "bounds": list(c.prop.bound_conversions()),
            "atoms": list(c.atoms),
            "states": c.main.n_states,
            "recovery_states": c.recovery.n_states if c.recovery else None,
            "min_resolve_frames": c.prop.min_resolve_frames,
            "compile_ms": round(c.compile_ms, 2),
            "warnings": [*authoring_warnings(c), *_ungrounded(c.atoms)],
        }
        for c in compile_specs(spec_set)
    ]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    header = ("property", "category", "class", "states", "recovery", "ms", "atoms")
    table = [
        (
            r["name"],
            r["category"],
            r["class"],
            str(r["states"]),
            str(r["recovery_states"] or "-"),
            f"{r['compile_ms']:.1f}",
            ", ".join(r["atoms"]),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(header[:-1])]
    for line in (header, *table):
        print("  ".join(c.ljust(w) for c, w in zip(line[:-1], widths)) + "  " + line[-1])
    for r in rows:
        if r["pattern"]:
            print(f"{r['name']}: {r['pattern']} becomes {r['formula']}")
        for conversion in r["bounds"]:
            print(f"{r['name']}: {conversion}")
        for warning in r["warnings"]:
            print(f"{r['name']}: warning: {warning}")
    print(f"{spec_set.path}: {len(rows)} properties over {len(spec_set.predicates)} predicates: OK")
    return 0


def _ungrounded(atoms: tuple[str, ...]) -> list[str]:
    """A warning for predicates the package's grounder does not produce: a name misspelt alike in the file's
    list and its formula passes the file's own check. Not an error, since an outside estimator may publish it."""
    from safety_monitor.grounding.grounder import PREDICATES
    from safety_monitor.names import did_you_mean

    if not (unknown := [a for a in atoms if a not in PREDICATES]):
        return []
    named = ", ".join(a + did_you_mean(a, PREDICATES) for a in unknown)
    return [
        f"reads predicates the package's grounder does not produce: {named}; an outside estimator may publish "
        "them on /safety_monitor/predicates, else replay refuses them and the live monitor sees them unknown"
    ]


def _explain(args: argparse.Namespace) -> int:
    from safety_monitor.specs.english import explain_property
    from safety_monitor.specs.model import load_specs

    spec_set = load_specs(args.file).at_rate(args.rate)
    chosen = [p for p in spec_set.properties if args.property in (None, p.name)]
    if not chosen:
        names = ", ".join(p.name for p in spec_set.properties)
        raise SpecError(f"{args.file}: no property {args.property!r} (it has: {names})")
    print("\n".join(explain_property(p) for p in chosen))
    return 0


def _eval(args: argparse.Namespace) -> int:
    from safety_monitor.io.traces import read_trace
    from safety_monitor.specs.compile import compile_formula

    dfa = compile_formula(args.formula)
    frames = read_trace(args.trace).frames
    if not frames:
        raise SourceError(f"{args.trace}: the trace has no frames (LTLf traces are non-empty)")
    state, violation_frame = dfa.initial, None
    for i, valuation in enumerate(frames):
        missing = [a for a in dfa.atoms if valuation.get(a) is None]
        if missing:
            raise SourceError(f"{args.trace}: frame {i} has no known value for {', '.join(missing)}")
        known = {a: bool(valuation[a]) for a in dfa.atoms}
        state = int(dfa.table[state, dfa.letter(known)])
        if violation_frame is None and dfa.rejecting_sink[state]:
            violation_frame = i
    print(
        json.dumps(
            {
                "formula": dfa.formula,
                "frames": len(frames),
                "satisfied": bool(dfa.accepting[state]),
                "violation_frame": violation_frame,
            }
        )
    )
    return 0
