"""Sub-command `alerts`, and the live-run half of `sim` (registered by safety_monitor/cli/sim.py)."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from safety_monitor.arguments import ros_namespace
from safety_monitor.enums import EventKind

if TYPE_CHECKING:
    from safety_monitor.nodes.run_inprocess import LiveRun


class EpisodeSummary(TypedDict):
    """One episode of a live sim run, as `--json` prints it."""

    episode: int
    task: str
    fault: str | None
    seed: int | None
    frames: int
    task_succeeded: bool | None
    opened: dict[str, int]  # violations opened per property
    alerts: list[str]  # each opened violation as the alerts console words it, in order
    events: int
    interrupted: bool
    as_labelled: bool | None  # None: cut off, not judged
    missing: list[str]
    unexpected: list[str]


class SimSummary(TypedDict):
    """A live sim run, as `--json` prints it."""

    episodes: list[EpisodeSummary]
    events_per_property: dict[str, dict[str, int]]
    events_log: str | None
    bags: list[str]
    wall_s: float | None
    interrupted: bool


def register(sub: argparse._SubParsersAction) -> None:
    from safety_monitor.nodes.alerts import add_arguments

    alerts = sub.add_parser(
        "alerts",
        help="live view of open violations and recent events (ROS 2)",
        description="Operator console for <namespace>/safety_monitor/events.",
    )
    add_arguments(alerts)
    alerts.set_defaults(func=_alerts)


def _alerts(args: argparse.Namespace) -> int:
    from safety_monitor.nodes.alerts import watch

    return watch(args)


def add_live_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `safety-monitor sim` live runs (the sim CLI owns --task/--fault/--episodes/--seed)."""
    parser.add_argument(
        "--events",
        metavar="FILE",
        default="",
        help="append every event to this JSON Lines file (default $ROS_HOME/safety_monitor/events.jsonl, "
        "events_<NS>.jsonl with --namespace; ROS_HOME defaults to ~/.ros)",
    )
    parser.add_argument(
        "--record",
        metavar="BAG",
        default="",
        help="record inputs, predicates and events to this new rosbag2 (a folder of one bag per "
        "episode when there are several)",
    )
    parser.add_argument("--storage", choices=("mcap", "db3"), help="storage of the --record bag (default mcap)")
    parser.add_argument(
        "--namespace",
        type=ros_namespace,
        default="/",
        metavar="NS",
        help="run every node in this ROS namespace, the clock on <NS>/clock, as sim.launch.py namespace:=NS "
        "(default /: the root)",
    )


def run_sim(args: argparse.Namespace) -> int:
    """Run episodes through the ROS nodes in one process and print the summary. SIGINT (Ctrl-C) or SIGTERM
    stops the run cleanly, at any moment: what finished is summarised and the exit code is 0 (a stop asked
    for is not a failure); a signal while the summary prints is held until it is out."""
    from safety_monitor.nodes.run_inprocess import LiveRunOptions, run
    from safety_monitor.nodes.runtime import stop_on_signals

    with stop_on_signals():
        summary = summarize(
            run(
                LiveRunOptions(
                    task=args.task or "",
                    fault=args.fault or "",
                    episodes=args.episodes,
                    seed=args.seed,
                    events=args.events,
                    record=args.record,
                    storage=args.storage or LiveRunOptions.storage,
                    namespace=args.namespace,
                )
            )
        )
        if args.json:
            print(json.dumps(summary, indent=2))
        elif summary["interrupted"] and not summary["episodes"]:  # no table of nothing; what became of --record
            print(
                "safety-monitor sim: interrupted before the first episode started: nothing monitored"
                + (
                    f"; bag(s): {', '.join(summary['bags'])}"
                    if summary["bags"]
                    else f"; --record {args.record}: no bag written"
                    if args.record
                    else ""
                )
            )
        else:
            print("\n".join(summary_lines(summary)))
    return 0


def summarize(live: LiveRun) -> SimSummary:
    """Per episode: what ran, the properties that opened violations and whether that matches the fault's
    ground truth (expected ones all opened, none outside the allowed ones); events per property. An episode
    Ctrl-C cut off (no end marker) is `interrupted` and not judged (`as_labelled` None): its fault may not
    have happened yet."""
    from safety_monitor.nodes.alerts import event_text
    from safety_monitor.sim.faults import FAULTS

    episodes: list[EpisodeSummary] = []
    per_property: dict[str, Counter[str]] = {}
    for r in live.rollouts:
        opened = Counter(e.property for e in r.events if e.kind == EventKind.OPENED)
        spec = FAULTS.get(r.fault)
        expected = set(spec.expected_properties) if spec else set()
        allowed = set(spec.allowed_properties) if spec else set()
        cut = live.interrupted and r.succeeded is None
        missing, unexpected = ([], []) if cut else (sorted(expected - set(opened)), sorted(set(opened) - allowed))
        episodes.append(
            {
                "episode": r.index,
                "task": r.task,
                "fault": r.fault or None,
                "seed": r.seed,
                "frames": r.frames,
                "task_succeeded": r.succeeded,
                "opened": dict(sorted(opened.items())),
                "alerts": [event_text(e.to_json()) for e in r.events if e.kind == EventKind.OPENED],
                "events": len(r.events),
                "interrupted": cut,
                "as_labelled": None if cut else not missing and not unexpected,
                "missing": missing,
                "unexpected": unexpected,
            }
        )
        for e in r.events:
            per_property.setdefault(e.property, Counter())[e.kind] += 1
    return {
        "episodes": episodes,
        "events_per_property": {p: dict(sorted(c.items())) for p, c in sorted(per_property.items())},
        "events_log": str(live.events_log),
        "bags": [str(b) for b in live.bags],
        "wall_s": round(live.wall_s, 2),
        "interrupted": live.interrupted,
    }


ALERTS_SHOWN = 3  # alerts listed per episode in the text summary; the rest are counted (--json has them all)


def summary_lines(s: SimSummary) -> list[str]:
    eps = s["episodes"]
    out = [
        f"safety-monitor sim: {len(eps)} episode(s) through the sim, estimator and monitor nodes "
        f"(one process) in {s['wall_s']:.1f} s" + ("; interrupted" if s["interrupted"] else "")
    ]
    header = ("#", "task", "fault", "seed", "frames", "task", "violations opened", "ground truth")
    rows: list[tuple[str, ...]] = []
    for e in eps:
        opened = ", ".join(p if n == 1 else f"{p} x{n}" for p, n in e["opened"].items()) or "-"
        truth = (
            "not judged (cut off)"
            if e["interrupted"]
            else "as labelled"
            if e["as_labelled"]
            else "; ".join(
                ([f"missing {', '.join(e['missing'])}"] if e["missing"] else [])
                + ([f"unexpected {', '.join(e['unexpected'])}"] if e["unexpected"] else [])
            )
        )
        done = "interrupted" if e["interrupted"] else {True: "done", False: "failed", None: "?"}[e["task_succeeded"]]
        rows.append(
            (str(e["episode"]), e["task"], e["fault"] or "none", str(e["seed"]), str(e["frames"]), done, opened, truth)
        )
    out += _table(header, rows)
    alerts: list[str] = []
    for e in eps:
        alerts += [f"  {e['episode']}  {a}" for a in e["alerts"][:ALERTS_SHOWN]]
        if (more := len(e["alerts"]) - ALERTS_SHOWN) > 0:
            alerts.append(f"  {e['episode']}  ... and {more} more")
    if alerts:
        out += ["", "Alerts:", *alerts]
    out.append("")
    kinds = sorted({k for c in s["events_per_property"].values() for k in c})
    if kinds:
        out.append("Events per property:")
        out += [
            "  " + line
            for line in _table(
                ("property", *kinds),
                [(p, *(str(c.get(k, 0)) for k in kinds)) for p, c in s["events_per_property"].items()],
            )
        ]
    else:
        out.append("No events.")
    out.append(f"Event log: {s['events_log']}")
    if s["bags"]:
        out.append("Bags: " + ", ".join(s["bags"]))
    return out


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in (header, *rows)]
