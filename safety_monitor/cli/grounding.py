"""Sub-command `predicates`: the grounded predicate vocabulary, as the table in docs/predicates.md or JSON."""

from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predicates", help="list the grounded predicates: meaning, inputs, thresholds")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of a Markdown table")
    p.set_defaults(func=_predicates)


def predicate_table() -> str:
    """The predicate table of docs/predicates.md, one row per predicate the Grounder produces."""
    from safety_monitor.grounding.grounder import PREDICATE_DOCS

    rows = ["| predicate | meaning | inputs | thresholds (config/thresholds.yaml) |", "|---|---|---|---|"]
    rows += [f"| `{name}` | {d.meaning} | {d.inputs} | {d.thresholds} |" for name, d in PREDICATE_DOCS.items()]
    return "\n".join(rows)


def _predicates(args: argparse.Namespace) -> int:
    from safety_monitor.grounding.grounder import PREDICATE_DOCS

    if args.json:
        json.dump({n: vars(d) for n, d in PREDICATE_DOCS.items()}, sys.stdout, indent=2)
        print()
    else:
        print(predicate_table())
    return 0
