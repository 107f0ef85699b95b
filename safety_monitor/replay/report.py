"""The report folder: report.json (everything), episodes.csv, properties.csv, summary.md and plots.

Numbers come from the monitor's own metrics (per-trigger risk V/N, exposure U/N, share of rollouts with
a violation, bootstrap intervals over rollouts: bags, or a cut bag's rollouts); this module only lays them out. It also flags the properties
a bag could not have violated (`vacuity`): a trigger or a consequent that never changes over the bag makes
a zero count no pass.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from safety_monitor import __version__
from safety_monitor.enums import EventKind
from safety_monitor.errors import SafetyMonitorError
from safety_monitor.files import write_file
from safety_monitor.installation import first_few
from safety_monitor.io.bag import TopicSummary
from safety_monitor.monitor.metrics import GroupMetrics, Metrics, RiskDifference
from safety_monitor.replay.batch import Summary, tally
from safety_monitor.replay.score import BagResult, ReplayConfig, WholeBag
from safety_monitor.replay.timeline import Timeline
from safety_monitor.specs.ltlf import atoms_of, parse
from safety_monitor.specs.model import SpecSet, default_trigger, load_specs

PLOTS, RISK_PLOT = "plots", "risk_by_category.png"
_OWN_PLOT = re.compile(r"risk_by_category\.png|timeline_\d{3,}_[A-Za-z0-9._-]+\.png")  # what write_plots names


def timeline_name(index: int, bag: str) -> str:
    """The timeline plot's file name for the index-th bag."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(bag).name).strip("_")[-80:] or "bag"
    return f"timeline_{index:03d}_{slug}.png"


# ------------------------------------------------------------------------------------- checks
def check_folder(folder: str | Path) -> None:
    """Refuse a report folder that could not be written before any bag is scored (not after an hour of it)."""
    folder = Path(folder)
    try:
        for path in (folder, folder / PLOTS):
            if path.exists() and not path.is_dir():
                raise SafetyMonitorError(
                    f"--report {folder}: {path} is a file, not a folder; give a new folder or a previous report's"
                )
        nearest = next(p for p in (folder, *folder.parents) if p.exists())
    except OSError as exc:
        raise SafetyMonitorError(f"--report {folder}: cannot inspect it: {exc.strerror or exc}") from None
    if not nearest.is_dir():
        raise SafetyMonitorError(f"--report {folder}: {nearest} is a file, so no folder can be made under it")
    try:  # a real write: permission bits do not tell for root, read-only mounts or /proc
        os.rmdir(tempfile.mkdtemp(prefix=".report_probe_", dir=nearest))
    except OSError as exc:
        raise SafetyMonitorError(
            f"--report {folder}: cannot write in {nearest}: {exc.strerror or exc}; choose a folder you can write"
        ) from None


STARTUP_S = 0.1  # estimators with a history window (object motion: a few pose samples) decide within this


def startup_frames(result: BagResult) -> int:
    """Frames at the bag's start before every predicate was first decided, when that took at most STARTUP_S
    (the estimators filling their windows, in every bag); 0 when it took longer (a real problem)."""
    timeline = result.timeline
    if timeline is None or not timeline.frames:
        return 0
    n = max((runs[0][1] + 1 for runs in timeline.runs.values() if runs and runs[0][2] is None), default=0)
    if n == 0 or n >= timeline.frames or timeline.time(n) - timeline.time(0) > STARTUP_S:
        return 0
    return n


def is_blind(result: BagResult) -> bool:
    """Whether some frame of a scored bag was not monitored (a predicate unknown, so a property blind), other
    than the start-up frames every bag has (a property's blind frames are all frames with an unknown)."""
    return result.trace is not None and result.unknown_frames > startup_frames(result)


def stale_after_startup(result: BagResult) -> int:
    """Frames with a stale input after the start-up: the frames before every predicate was decided
    (`startup_frames`), or a stale run the bag opens with that ends within STARTUP_S. A stream whose first
    message comes after the first joint frame (50 Hz poses behind 500 Hz joints) leaves the frames before it
    stale in every recording, whether or not a predicate read it: not a problem to warn about."""
    timeline = result.stale_timeline
    if timeline is None:
        return result.stale_frames
    stale = [(first, last) for first, last, value in timeline.runs.get("stale", ()) if value]
    start = startup_frames(result)
    if stale and stale[0][0] == 0:
        fresh = stale[0][1] + 1  # the first frame with every input fresh
        if fresh < timeline.frames and timeline.time(fresh) - timeline.time(0) <= STARTUP_S:
            start = max(start, fresh)
    return sum(max(0, last - max(first, start) + 1) for first, last in stale)


def input_warning(result: BagResult) -> str | None:
    """One line on what a scored bag's score did not see (blind properties, stale inputs, predicates never
    sent) or had to drop, so that "saw nothing" never reads as "saw no violation"; None for a clean bag."""
    if result.trace is None:
        return None
    parts = []
    if is_blind(result):
        blind = ", ".join(f"{o.property} {o.blind_frames}" for o in result.trace.outcomes if o.blind_frames)
        startup = startup_frames(result)
        parts.append(
            f"blind: {result.unknown_frames} of {result.frames} frames had an unknown predicate"
            + (f" ({startup} of them at start-up)" if startup else "")
            + (f"; blind frames per property: {blind}" if blind else "")
        )
    if result.stale_by_stream and (later := stale_after_startup(result)):
        parts.append(
            "stale input frames: "
            + ", ".join(f"{k} {v}" for k, v in result.stale_by_stream.items())
            + (f" ({result.stale_frames - later} frames at start-up)" if later < result.stale_frames else "")
        )
    if result.issues:
        parts.append("input problems: " + ", ".join(f"{k} x{v}" for k, v in sorted(result.issues.items())))
    return f"{result.bag}: " + "; ".join(parts + result.warnings) if parts or result.warnings else None


def not_applicable_line(results: Sequence[BagResult]) -> str | None:
    """One line naming the properties some scored bag's robot cannot ground (no gripper, no wrench topic,
    ...): they are in the table with no triggers, which must not read as checked and never violated."""
    names = sorted({name for r in results for name in r.not_applicable})
    if not names:
        return None
    return (
        f"not applicable to this robot, so not checked: {', '.join(names)} (why: report.json's not_applicable, "
        "or `safety-monitor inspect`)"
    )


# ------------------------------------------------------------------------------------- vacuity
@dataclass(frozen=True)
class PropertyReads:
    """The predicates a property's trigger reads, and those of its consequent (the rest of its formula)."""

    property: str
    trigger: tuple[str, ...]
    consequent: tuple[str, ...]


def property_reads(specs: SpecSet) -> tuple[PropertyReads, ...]:
    """Trigger and consequent predicates of every property, in spec order."""
    out = []
    for prop in specs.properties:
        formula = parse(prop.formula)
        trigger = parse(prop.trigger) if prop.trigger else default_trigger(formula)
        trigger_atoms = atoms_of(trigger) if trigger is not None else ()
        consequent = tuple(a for a in atoms_of(formula) if a not in trigger_atoms)
        out.append(PropertyReads(prop.name, trigger_atoms, consequent))
    return tuple(out)


@dataclass(frozen=True)
class Vacuity:
    """Whether a property could have been violated on one bag. `trigger_constant`: its trigger never rose or
    every predicate it reads kept one value; `constant_consequent`: the consequent's predicates, when every
    one of them kept one value (empty otherwise, or when the formula has no consequent apart from the
    trigger)."""

    property: str
    trigger_constant: bool
    constant_consequent: tuple[str, ...]

    def vacuous(self) -> bool:
        return self.trigger_constant or bool(self.constant_consequent)

    def reason(self) -> str:
        parts = ["trigger never changes"] if self.trigger_constant else []
        if self.constant_consequent:
            parts.append("consequent never changes (" + ", ".join(self.constant_consequent) + ")")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "property": self.property,
            "vacuous": self.vacuous(),
            "trigger_constant": self.trigger_constant,
            "constant_consequent": list(self.constant_consequent),
        }


def _constant(timeline: Timeline, name: str) -> bool:
    """Whether a predicate kept one known value over the bag (unknown stretches aside)."""
    return len({value for _, _, value in timeline.runs.get(name, ()) if value is not None}) <= 1


def vacuity(result: BagResult, reads: Sequence[PropertyReads]) -> tuple[Vacuity, ...]:
    """Per property of a scored bag (its trace and timeline), whether the bag could have violated it; empty
    for a bag that was not scored."""
    trace, timeline = result.trace, result.timeline
    if trace is None or timeline is None:
        return ()
    out = []
    for r in reads:
        outcome = trace.outcome(r.property)
        never_rose = outcome.triggers + outcome.pending_triggers == 0
        constant_trigger = never_rose or all(_constant(timeline, a) for a in r.trigger)
        constant_consequent = bool(r.consequent) and all(_constant(timeline, a) for a in r.consequent)
        out.append(Vacuity(r.property, constant_trigger, r.consequent if constant_consequent else ()))
    return tuple(out)


# --------------------------------------------------------------------------------------- times
# the keys of report.json and the CSVs whose values are seconds: stamps, durations, per-trigger rates
TIME_KEYS = frozenset(
    {
        "t",
        "times",
        "t_start",
        "t_end",
        "opened_t",
        "end_t",
        "seconds",
        "duration_s",
        "violating_s",
        "exposure_s",
        "exposure_s_low",
        "exposure_s_high",
        "exposure_s_interval",
        "duration_mean_s",
        "duration_max_s",
        "timings_s",
    }
)


def seconds(x: float) -> float:
    """A time as every report file writes it: to the microsecond. Frames at any control rate are
    whole microseconds apart, float seconds of epoch stamps resolve a quarter of one at best, and the
    float noise of stamp arithmetic (4.908 - 4.64 = 0.2679999999999998) goes."""
    return round(x, 6)


def _seconds_text(x: float | None) -> str:
    return "–" if x is None or math.isnan(x) else repr(seconds(x))


# ------------------------------------------------------------------------------------- records
def episodes(result: BagResult) -> list[dict[str, Any]]:
    """One row per violation episode of a bag: opening frame, what it was about, how and when it ended (in
    frames, and in seconds from the frames' stamps, as the monitor counted them), its evidence."""
    if result.trace is None:
        return []
    rows: dict[tuple[str, int | None], dict[str, Any]] = {}
    seconds = {o.property: list(o.seconds or ()) for o in result.trace.outcomes}  # counted episodes, in order
    for e in result.trace.events:
        key = (e.property, e.episode)
        if e.kind == EventKind.OPENED:
            cx = e.counterexample
            rows[key] = {
                "property": e.property,
                "category": e.category,
                "episode": e.episode,
                "opened_frame": e.frame,
                "opened_t": e.t,
                "objects": " ".join(e.objects),
                "end_kind": None,
                "end_frame": None,
                "end_t": None,
                "duration_frames": None,
                "duration_s": None,
                "trigger_frame": cx.trigger_frame if cx else None,
                "decisive": " ".join(cx.decisive) if cx else "",
                "explanation": cx.explanation if cx else "",
            }
        elif e.kind.closes and key in rows:
            rows[key].update(end_kind=e.kind, end_frame=e.frame, end_t=e.t, duration_frames=e.duration)
            if e.kind != EventKind.DISCARDED_TRUNCATED and seconds[e.property]:
                rows[key]["duration_s"] = seconds[e.property].pop(0)
    return sorted(rows.values(), key=lambda r: (r["opened_frame"], r["property"]))


def status(result: BagResult) -> str:
    """A bag's outcome for a tool reading report.json: "scored", "failed" (the bag could not be scored) or
    "not_scored" (Ctrl-C stopped the batch first: nothing wrong with the bag)."""
    return "scored" if result.ok else "not_scored" if result.interrupted else "failed"


def bag_json(result: BagResult, group: str, reads: Sequence[PropertyReads] = ()) -> dict[str, Any]:
    trace = result.trace
    return {
        "bag": result.bag,
        "group": group,
        "status": status(result),
        "ok": result.ok,
        "error": result.error,
        "mode": result.mode,
        "frames": result.frames,
        "t_start": result.t_start,
        "t_end": result.t_end,
        "duration_s": result.duration,
        "rate_hz": result.rate_hz,
        "messages": None if result.whole else result.messages,
        "stale_frames": result.stale_frames,
        "stale_by_stream": result.stale_by_stream,
        "unknown_frames": result.unknown_frames,
        "issues": result.issues,
        "issue_examples": [asdict(i) for i in result.issue_examples],
        "warnings": result.warnings,
        "not_applicable": result.not_applicable,
        "topics": None if result.whole else _topics_json(result.topics),
        "timings_s": None if result.whole else result.timings,
        "outcomes": [o.to_json() for o in trace.outcomes] if trace else [],
        "vacuity": [v.to_json() for v in vacuity(result, reads)],
        "episodes": episodes(result),
        "events": [e.to_json() for e in trace.events] if trace else [],
        "timeline": result.timeline.to_json() if result.timeline else None,
        "stale_timeline": result.stale_timeline.to_json() if result.stale_timeline else None,
    } | ({"rollout_of": result.whole.bag, "rollout": result.rollout} if result.whole else {})


def _topics_json(topics: Mapping[str, TopicSummary]) -> dict[str, Any]:
    return {k: {"type": v.msgtype, "count": v.count} for k, v in topics.items()}


def _span(whole: WholeBag) -> float:
    return whole.t_end - whole.t_start if whole.t_start is not None and whole.t_end is not None else 0.0


def split_bags(results: Sequence[BagResult]) -> list[WholeBag]:
    """The bags episode markers cut into rollouts, each once, in the results' order."""
    return list({r.whole.bag: r.whole for r in results if r.whole is not None}.values())


def _whole_json(whole: WholeBag) -> dict[str, Any]:
    """A cut bag's own figures, given once here: its rollouts' entries leave them out (null)."""
    return {
        "bag": whole.bag,
        "rollouts": whole.rollouts,
        "frames": whole.frames,
        "t_start": whole.t_start,
        "t_end": whole.t_end,
        "duration_s": _span(whole),
        "messages": whole.messages,
        "topics": _topics_json(whole.topics),
        "timings_s": whole.timings,
    }


def _reads(config: ReplayConfig) -> tuple[PropertyReads, ...]:
    return property_reads(load_specs(config.specs_file()))


SCHEMA_VERSION = 1  # report.json's layout (docs/replay.md, "report.json"); raised when a key changes meaning or goes


def _sha256(path: Path | None) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else None


def _config_json(config: ReplayConfig) -> dict[str, Any]:
    """The configuration with the files actually used (defaults made explicit) and their sha256, so a report
    says which rules scored it even after the spec file at that path was edited."""
    out = asdict(config)
    specs, robot = config.specs_file(), config.robot_file()
    out.update(
        mapping=asdict(config.mapping),
        specs=str(specs),
        specs_sha256=_sha256(specs),
        robot=robot and str(robot),
        robot_sha256=_sha256(robot),
    )
    return out


def report_json(
    results: Sequence[BagResult], summary: Summary, config: ReplayConfig, group_by: str | None
) -> dict[str, Any]:
    reads = _reads(config)
    counts, cut = tally(results), split_bags(results)
    return {
        "schema_version": SCHEMA_VERSION,
        "safety_monitor_version": __version__,
        "config": _config_json(config),
        "group_by": group_by,
        "bags_total": counts.bags,
        "bags_scored": counts.scored,
        **({"rollouts_scored": counts.rollouts, "split_bags": [_whole_json(w) for w in cut]} if cut else {}),
        "bags_failed": [{"bag": r.bag, "error": r.error} for r in results if status(r) == "failed"],
        "interrupted": any(r.interrupted for r in results),
        "bags_not_scored": [r.bag for r in results if r.interrupted],
        "metrics": summary.overall.to_json() if summary.overall else None,
        "groups": {name: m.to_json() for name, m in summary.groups.items()},
        "risk_differences": {
            name: {"reference": next(iter(summary.groups)), "rows": [d.to_json() for d in rows]}
            for name, rows in summary.differences.items()
        },
        "bags": [bag_json(r, summary.group_of_bag[r.bag], reads) for r in results],
    }


# ---------------------------------------------------------------------------------------- CSV
_METRIC_COLUMNS = (
    "rollouts",
    "triggers",
    "violations",
    "violating_frames",
    "violating_s",
    "risk",
    "risk_low",
    "risk_high",
    "exposure",
    "exposure_low",
    "exposure_high",
    "exposure_s",
    "exposure_s_low",
    "exposure_s_high",
    "violating_rollouts",
    "violating_rollout_share",
    "share_low",
    "share_high",
    "exposure_frame_share",
    "blind_frames",
    "pending_triggers",
    "duration_mean",
    "duration_max",
    "duration_mean_s",
    "duration_max_s",
)


def _metric_row(g: GroupMetrics) -> dict[str, Any]:
    def bounds(ci: tuple[float, float] | None) -> tuple[Any, Any]:
        return ci if ci is not None else (None, None)

    (rl, rh), (el, eh), (esl, esh), (sl, sh) = (
        bounds(g.risk_interval),
        bounds(g.exposure_interval),
        bounds(g.exposure_s_interval),
        bounds(g.violating_rollout_share_interval),
    )
    return {
        "rollouts": g.rollouts,
        "triggers": g.triggers,
        "violations": g.violations,
        "violating_frames": g.violating_frames,
        "violating_s": g.violating_s,
        "risk": g.risk,
        "risk_low": rl,
        "risk_high": rh,
        "exposure": g.exposure,
        "exposure_low": el,
        "exposure_high": eh,
        "exposure_s": g.exposure_s,
        "exposure_s_low": esl,
        "exposure_s_high": esh,
        "violating_rollouts": g.violating_rollouts,
        "violating_rollout_share": g.violating_rollout_share,
        "share_low": sl,
        "share_high": sh,
        "exposure_frame_share": g.exposure_frame_share,
        "blind_frames": g.blind_frames,
        "pending_triggers": g.pending_triggers,
        "duration_mean": g.duration_mean,
        "duration_max": g.duration_max,
        "duration_mean_s": g.duration_mean_s,
        "duration_max_s": g.duration_max_s,
    }


def _metric_rows(group: str, metrics: Metrics) -> list[dict[str, Any]]:
    rows = []
    for level, items in (
        ("property", metrics.by_property),
        ("category", metrics.by_category),
        ("all", (metrics.pooled,)),
    ):
        for g in items:
            rows.append({"group": group, "level": level, "name": g.name, **_metric_row(g)})
    return rows


EPISODE_COLUMNS = (
    "bag",
    "group",
    "property",
    "category",
    "episode",
    "opened_frame",
    "opened_t",
    "objects",
    "end_kind",
    "end_frame",
    "end_t",
    "duration_frames",
    "duration_s",
    "trigger_frame",
    "decisive",
    "explanation",
)
PROPERTY_COLUMNS = ("group", "level", "name", *_METRIC_COLUMNS)  # units: docs/replay.md, "The report"


def write_csvs(folder: Path, results: Sequence[BagResult], summary: Summary) -> None:
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, EPISODE_COLUMNS)
    writer.writeheader()
    for r in results:
        for row in episodes(r):
            writer.writerow(_csv_row({"bag": r.bag, "group": summary.group_of_bag[r.bag], **row}))
    write_file(folder / "episodes.csv", text.getvalue(), "report table", SafetyMonitorError)
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, PROPERTY_COLUMNS)
    writer.writeheader()
    if summary.overall is not None:
        writer.writerows(map(_csv_row, _metric_rows("all", summary.overall)))
    for name, metrics in summary.groups.items():
        writer.writerows(map(_csv_row, _metric_rows(name, metrics)))
    write_file(folder / "properties.csv", text.getvalue(), "report table", SafetyMonitorError)


def _csv_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: seconds(v) if k in TIME_KEYS and isinstance(v, float) else v for k, v in row.items()}


# ----------------------------------------------------------------------------------- Markdown
def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _ci(ci: tuple[float, float] | None, digits: int = 3) -> str:
    return "–" if ci is None else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _seconds_ci(ci: tuple[float, float] | None) -> str:
    return "–" if ci is None else f"[{_seconds_text(ci[0])}, {_seconds_text(ci[1])}]"


def _table(rows: Sequence[GroupMetrics], label: str, conf: float, unit: str = "bag") -> list[str]:
    """Violating time and exposure in seconds (from the frames' stamps: bags recorded at different rates
    compare), frames beside them. `unit`: what the metrics count, bags or (markers cut some) rollouts."""
    head = (
        f"| {label} | triggers N | violations V | violating time U, s (frames) | risk V/N | {conf:.0%} CI | "
        f"exposure U/N, s per trigger (frames) | {conf:.0%} CI, s | {unit}s with a violation | {conf:.0%} CI | "
        "blind frames |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for g in rows:
        share = f"{g.violating_rollouts}/{g.rollouts} ({_num(g.violating_rollout_share, 2)})"
        lines.append(
            f"| {g.name} | {g.triggers} | {g.violations} | {_seconds_text(g.violating_s)} ({g.violating_frames}) | "
            f"{_num(g.risk)} | {_ci(g.risk_interval)} | {_seconds_text(g.exposure_s)} ({_num(g.exposure, 2)}) | "
            f"{_seconds_ci(g.exposure_s_interval)} | {share} | {_ci(g.violating_rollout_share_interval, 2)} | "
            f"{g.blind_frames} |"
        )
    return lines


def _metrics_section(title: str, metrics: Metrics, unit: str = "bag") -> list[str]:
    conf = metrics.confidence
    return [
        f"## {title}",
        "",
        f"{metrics.rollouts} {unit}(s). Intervals: bootstrap over {unit}s, {metrics.resamples} resamples, seed "
        f"{metrics.seed}. A dash: nothing triggered, so no rate; a dash for an interval alone: fewer than two "
        f"{unit}s triggered it, too few to resample.",
        "",
        "### By property",
        "",
        *_table(metrics.by_property, "property", conf, unit),
        "",
        "### By category",
        "",
        *_table((*metrics.by_category, metrics.pooled), "category", conf, unit),
        "",
    ]


def _risk_cell(g: GroupMetrics | None) -> str:
    """One group's risk for the comparison: rate, counts and interval; "no triggers" where it has no rate."""
    if g is None or g.risk is None:
        return "no triggers"
    interval = _ci(g.risk_interval) if g.risk_interval else "no CI"
    return f"{_num(g.risk)} ({g.violations}/{g.triggers}) {interval}"


def _difference_cell(d: RiskDifference | None) -> str:
    """One group's risk minus the reference group's, with its interval; "–" unless both groups triggered it."""
    if d is None or d.difference is None:
        return "–"
    return f"{d.difference:+.3f} " + (f"[{d.interval[0]:+.3f}, {d.interval[1]:+.3f}]" if d.interval else "no CI")


def _comparison(
    groups: dict[str, Metrics], differences: dict[str, tuple[RiskDifference, ...]], unit: str = "bag"
) -> list[str]:
    """Risk side by side, one column per group, by category then by property, then each group's difference from
    the first group with its interval: which group is safer where, by how much and how surely, without reading
    one table per group. Properties no group triggered are named in one line."""
    names = list(groups)
    head = "| {} | " + " | ".join(f"{n} ({groups[n].rollouts} {unit}s)" for n in names)
    head += "".join(f" | {n} − {names[0]}" for n in differences) + " |"
    rule = "|---|" + "---|" * (len(names) + len(differences))
    lines = [
        f"Risk V/N per group: rate (violations/triggers) and 95 % interval (no CI: fewer than two {unit}s "
        "triggered it). The groups' counts add up to the figures over all bags."
        + (
            f" A column `group − {names[0]}`: that group's risk minus {names[0]}'s, with its 95 % interval "
            f"resampling {unit}s within each of the two groups (no CI unless each has two {unit}s that triggered it; "
            "– unless both triggered it)."
            if differences
            else ""
        ),
        "",
    ]
    for level, label in (("category", "category"), ("property", "property")):
        by_group = {
            n: {g.name: g for g in (*m.by_category, m.pooled) if level == "category"}
            | {g.name: g for g in m.by_property if level == "property"}
            for n, m in groups.items()
        }
        rows = list(dict.fromkeys(name for table in by_group.values() for name in table))
        silent = [r for r in rows if all(by_group[n].get(r) is None or by_group[n][r].risk is None for n in names)]
        lines += [head.format(label), rule]
        diffs = {
            n: {d.name: d for d in found if (d.level == "property") == (level == "property")}
            for n, found in differences.items()
        }
        lines += [
            f"| {r} | "
            + " | ".join(_risk_cell(by_group[n].get(r)) for n in names)
            + "".join(f" | {_difference_cell(diffs[n].get(r))}" for n in differences)
            + " |"
            for r in rows
            if r not in silent
        ]
        lines += ["", f"No group triggered: {', '.join(silent)}.", ""] if silent else [""]
    return lines


def _violations(results: Sequence[BagResult], summary: Summary, plots: Sequence[str], unit: str = "bag") -> list[str]:
    """Every violation episode with its bag, what it was about (the objects its predicates named), when it
    opened (seconds since its trace's first frame, the timelines' axis: `unit` says whose, the bag's or,
    where markers cut some bag, the rollout's), how it ended, its counterexample and the bag's timeline plot."""
    timelines = {r.bag: name for i, r in enumerate(results) if (name := f"{PLOTS}/{timeline_name(i, r.bag)}") in plots}
    grouped = bool(summary.groups)
    head = ["bag", *(["group"] if grouped else []), "property", "objects", f"opened (s since the {unit}'s first frame)"]
    head += ["lasted, s (frames)", "ended", "why", "plot"]
    rows = []
    for r in results:
        for e in episodes(r):
            t0 = r.t_start if r.t_start is not None else e["opened_t"]
            cells = [r.bag, *([summary.group_of_bag[r.bag]] if grouped else []), e["property"]]
            cells.append(e["objects"].replace(" ", ", ").replace("|", "\\|") or "–")
            cells += [
                f"{_seconds_text(e['opened_t'] - t0)} (frame {e['opened_frame']})",
                "–" if e["duration_frames"] is None else f"{_seconds_text(e['duration_s'])} ({e['duration_frames']})",
                "still open at the end" if e["end_kind"] is None else e["end_kind"].value.replace("_", " "),
                e["explanation"].replace("|", "\\|"),  # a formula's `|` would split the Markdown cell
                f"[timeline]({timelines[r.bag]})" if r.bag in timelines else "–",
            ]
            rows.append("| " + " | ".join(cells) + " |")
    if not rows:
        return []
    return [
        f"## Violations ({len(rows)})",
        "",
        "One row per violation episode (episodes.csv has them with absolute times).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *rows,
        "",
    ]


def _mode(config: ReplayConfig) -> str:
    robot = config.robot_file()
    how = (
        "the recorded predicates rescored (`--from-predicates`, no grounding)"
        if robot is None
        else f"grounded from the recorded robot state with `{robot}`"
    )
    return f"Mode: {how}; specs `{config.specs_file()}`."


def summary_markdown(
    results: Sequence[BagResult], summary: Summary, config: ReplayConfig, group_by: str | None, plots: Sequence[str]
) -> str:
    reads = _reads(config)
    scored = [r for r in results if r.ok]
    failed = [r for r in results if status(r) == "failed"]
    unscored = [r for r in results if r.interrupted]
    counts, cut = tally(results), split_bags(results)
    frames = sum(r.frames for r in scored)
    seconds = sum(r.duration for r in scored if r.whole is None) + sum(_span(w) for w in cut)
    unit = "rollout" if cut else "bag"  # what the metrics count and resample
    lines = [
        "# Replay summary",
        "",
        f"{counts.bags} bag(s): {counts.scored} scored"
        + (f" ({counts.rollouts} rollouts: episode markers cut {len(cut)} of them)" if cut else "")
        + f", {counts.failed} failed"
        + (f", {counts.not_scored} not scored" if unscored else "")
        + f"; {frames} frames, {seconds:.1f} s of recording.",
        "",
    ]
    if unscored:
        lines += [
            f"**Interrupted** (Ctrl-C) before every bag was scored: the figures below cover the "
            f"{counts.scored} scored bag(s) only; the {len(unscored)} not scored are listed at the end.",
            "",
        ]
    lines += [_mode(config), ""]
    if summary.overall is not None:
        lines += _metrics_section("All bags", summary.overall, unit)
    if summary.groups:
        lines += [f"## Groups (`--group-by {group_by}`)", "", *_comparison(summary.groups, summary.differences, unit)]
        for name, metrics in summary.groups.items():
            lines += [
                f"### Group `{name}` ({metrics.rollouts} {unit}s) by category",
                "",
                *_table((*metrics.by_category, metrics.pooled), "category", metrics.confidence, unit),
                "",
            ]
        lines += ["Every figure per group and property is in `properties.csv`.", ""]
    lines += _violations(results, summary, plots, unit)
    blind = [r for r in scored if r.stale_frames or r.unknown_frames]
    if blind:
        lines += [
            "## Stale inputs and unknown predicates (blind, not safe)",
            "",
            "| bag | frames | frames with a stale input | stale streams (frames) "
            "| frames with unknown predicates | of which at start-up |",
            "|---|---|---|---|---|---|",
        ]
        for r in blind:
            streams = ", ".join(f"{k} ({v})" for k, v in r.stale_by_stream.items()) or "–"
            lines.append(
                f"| {r.bag} | {r.frames} | {r.stale_frames} | {streams} | {r.unknown_frames} | {startup_frames(r)} |"
            )
        lines.append("")
    noisy = [r for r in results if r.issues or r.warnings]
    if noisy:
        lines += ["## Input problems", ""]
        for r in noisy:
            parts = [f"{k} x{v}" for k, v in sorted(r.issues.items())] + r.warnings
            lines.append(f"- `{r.bag}`: " + "; ".join(parts))
        lines.append("")
    if failed:
        lines += (
            ["## Failed bags", ""]
            + [f"- `{r.bag}`: {(r.error or '').removeprefix(f'{r.bag}: ')}" for r in failed]
            + [""]
        )
    if unscored:
        lines += ["## Not scored (interrupted)", ""] + [f"- `{r.bag}`" for r in unscored] + [""]
    vacuous: dict[tuple[str, str], list[str]] = {}  # (property, why) -> its bags: a row per bag buried the rest
    for r in scored:
        for v in vacuity(r, reads):
            if v.vacuous():
                vacuous.setdefault((v.property, v.reason()), []).append(r.bag)
    if vacuous:
        lines += [
            "## Vacuous properties (could not be violated on these bags: zero is not a pass)",
            "",
            "| property | why | bags |",
            "|---|---|---|",
        ]
        lines += [
            f"| {prop} | {why} | {len(bags)} of {len(scored)}: {first_few(bags)} |"
            for (prop, why), bags in vacuous.items()
        ]
        lines.append("")
    if plots:
        bags = {f"{PLOTS}/{timeline_name(i, r.bag)}": r.bag for i, r in enumerate(results)}
        lines += ["## Plots", ""] + [f"- [{p}]({p})" + (f": {bags[p]}" if p in bags else "") for p in plots] + [""]
    return "\n".join(lines)


def write_report(
    folder: str | Path,
    results: Sequence[BagResult],
    summary: Summary,
    config: ReplayConfig,
    group_by: str | None,
    plots: bool = True,
) -> Path:
    """Write every report file into `folder` (created if needed); returns the folder. Each file is written
    whole or not at all; a file that cannot be (a full disk) stops the report with one error saying so."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        doc = _finite(report_json(results, summary, config, group_by))
        write_file(
            folder / "report.json", json.dumps(doc, indent=1, allow_nan=False) + "\n", "report", SafetyMonitorError
        )
        write_csvs(folder, results, summary)
        _remove_old_plots(folder / PLOTS)
        made: list[str] = []
        if plots:
            from safety_monitor.replay.plots import write_plots

            made = write_plots(folder, results, summary)
        write_file(
            folder / "summary.md",
            summary_markdown(results, summary, config, group_by, made),
            "report summary",
            SafetyMonitorError,
        )
    except OSError as exc:  # making the folders, removing an earlier report's plots
        raise SafetyMonitorError(f"--report {folder}: {exc.strerror or exc}; the report is incomplete") from None
    except SafetyMonitorError as exc:
        raise SafetyMonitorError(f"--report {folder}: {exc}; the report is incomplete") from None
    return folder


def _remove_old_plots(folder: Path) -> None:
    """Delete the plots an earlier report wrote here (only names this module gives), so a reused folder
    holds this run's plots alone; other files stay, and so does the folder unless it is left empty."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if _OWN_PLOT.fullmatch(path.name) and path.is_file():
            path.unlink()
    if not any(folder.iterdir()):
        folder.rmdir()


def _finite(value: Any, time: bool = False) -> Any:
    """JSON has no infinity or NaN: write null (e.g. the age of a stream never received). Seconds (under
    a key of TIME_KEYS, at any depth) are written to the microsecond, as in the CSVs and summary.md."""
    if isinstance(value, float):
        return (seconds(value) if time else value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v, time or k in TIME_KEYS) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v, time) for v in value]
    return value
