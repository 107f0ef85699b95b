"""Sub-command `monitor`: run a spec set over recorded predicate traces, print events and metrics."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from safety_monitor.arguments import SEED_MAX, seed, whole
from safety_monitor.errors import SourceError
from safety_monitor.settings import DEFAULT_HISTORY

MAX_HISTORY = 10_000_000  # frames x predicates booleans are kept: 200 MB for 20 predicates
MAX_RESAMPLES = 100_000  # the bootstrap draws resamples x rollouts indices at once
RESAMPLES = whole(0, MAX_RESAMPLES)

if TYPE_CHECKING:
    from safety_monitor.monitor.metrics import GroupMetrics, Metrics


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "monitor",
        help="monitor predicate traces against a spec file: events (JSON Lines) and per-trigger metrics",
        description="Events go to stdout as JSON Lines (one object per event, with its 'trace'). With --json "
        'a last line {"metrics": ...} follows; without it a metrics table goes to stderr.',
    )
    p.add_argument("--specs", required=True, metavar="FILE", help="spec YAML file")
    p.add_argument(
        "--trace", required=True, nargs="+", metavar="FILE", help="trace file(s), one rollout each: JSON Lines or CSV"
    )
    p.add_argument("--json", action="store_true", help="end with one JSON line holding the metrics")
    p.add_argument(
        "--engine",
        choices=("batch", "live"),
        default="batch",
        help="batch (numpy, default) or live (frame by frame, the reference); same results",
    )
    p.add_argument(
        "--history",
        metavar="N",
        type=whole(1, MAX_HISTORY),
        default=DEFAULT_HISTORY,
        help=f"frames kept for counterexamples, 1 to {MAX_HISTORY} (default {DEFAULT_HISTORY}, as the monitor node)",
    )
    p.add_argument(
        "--resamples",
        metavar="N",
        type=RESAMPLES,
        default=2000,
        help="bootstrap resamples over rollouts, 0 to 100000 (0 = no intervals; default 2000)",
    )
    p.add_argument("--seed", type=seed(), default=0, metavar="N", help=f"bootstrap seed, 0 to {SEED_MAX} (default 0)")
    p.set_defaults(func=_monitor)


def _monitor(args: argparse.Namespace) -> int:
    from safety_monitor.io.traces import read_trace
    from safety_monitor.monitor.batch import BatchMonitor
    from safety_monitor.monitor.live import SpecSetMonitor, load_automata
    from safety_monitor.monitor.metrics import compute_metrics

    vocabulary, automata = load_automata(args.specs)
    live = SpecSetMonitor(automata, vocabulary, history=args.history)
    batch = BatchMonitor(automata, vocabulary, history=args.history)
    results = []
    out = sys.stdout
    for path in args.trace:
        trace = read_trace(path)
        if not trace.frames:
            raise SourceError(f"{path}: the trace has no frames")
        values, known = trace.to_matrix(live.predicates)  # checks every frame names every predicate
        if args.engine == "batch":
            result = batch.run_matrix(values, known, trace.times)
        else:
            result = live.run(trace.frames, trace.times)
        for event in result.events:
            out.write(json.dumps({"trace": path, **event.to_json()}) + "\n")
        results.append(result)
    metrics = compute_metrics(results, resamples=args.resamples, seed=args.seed)
    if args.json:
        out.write(json.dumps({"metrics": metrics.to_json()}) + "\n")
    else:
        print(format_table(metrics), file=sys.stderr)
    return 0


def format_table(metrics: Metrics) -> str:
    """Human summary: one row per property, then per category, then pooled."""
    header = ("", "N", "V", "U", "V/N", "U/N", f"V/N {metrics.confidence:.0%} CI", "rollouts hit")
    rows: list[tuple[str, ...]] = [header]

    def row(g: GroupMetrics, label: str) -> None:
        ci = f"[{g.risk_interval[0]:.3f}, {g.risk_interval[1]:.3f}]" if g.risk_interval else "-"
        share = f"{g.violating_rollouts}/{g.rollouts}"
        rows.append(
            (
                label,
                str(g.triggers),
                str(g.violations),
                str(g.violating_frames),
                _num(g.risk),
                _num(g.exposure),
                ci,
                share,
            )
        )

    for g in metrics.by_property:
        row(g, g.name)
    rows.append(("",) * len(header))
    for g in metrics.by_category:
        row(g, f"[{g.name}]")
    row(metrics.pooled, "[all]")
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in rows
    ]
    lines.append(
        f"{metrics.rollouts} rollout(s); N triggers, V violations, U violating frames; "
        f"intervals: bootstrap over rollouts, {metrics.resamples} resamples, seed {metrics.seed}"
    )
    return "\n".join(lines)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"
