"""PNG plots (matplotlib, Agg): one timeline per bag and per-category risk across groups.

Timeline: the predicates the specs read as bands (true dark, unknown hatched grey), then one row per
property with its violation episodes shaded red and labelled with the objects they were about, recoveries
marked green, episodes still open at the end marked black, blind stretches grey, and a first row showing when
an input stream was stale. The names of violated properties, and of the predicates their counterexamples call
decisive, are red, so a reader finds the rows that matter among dozens.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from safety_monitor.enums import EventKind
from safety_monitor.errors import SafetyMonitorError
from safety_monitor.files import write_file
from safety_monitor.monitor.metrics import Metrics
from safety_monitor.replay.batch import Summary
from safety_monitor.replay.report import (
    PLOTS,
    RISK_PLOT,
    episodes,
    stale_after_startup,
    startup_frames,
    timeline_name,
)
from safety_monitor.replay.score import BagResult
from safety_monitor.replay.timeline import Timeline

TRUE_COLOR, UNKNOWN_COLOR, STALE_COLOR = "#2b6cb0", "#c8c8c8", "#dd8452"
VIOLATION_COLOR, RECOVERED_COLOR, OPEN_COLOR = "#d62728", "#2ca02c", "black"
_TITLE_CHARS = 130  # a bag path's characters that fit the width at 10 pt
_END_MARKERS = {
    EventKind.RECOVERED: ("^", RECOVERED_COLOR),
    EventKind.CLOSED: ("^", RECOVERED_COLOR),
    EventKind.UNRECOVERED_AT_END: ("X", OPEN_COLOR),
    EventKind.DISCARDED_TRUNCATED: ("x", "grey"),
    EventKind.INPUT_ENDED: ("X", OPEN_COLOR),
}  # input_ended: closed, never recovered


def _spans(timeline: Timeline, name: str, value: object, t0: float, min_width: float) -> list[tuple[float, float]]:
    """(start, width) in seconds of the runs of `name` equal to `value`."""
    out = []
    for first, last, v in timeline.runs.get(name, []):
        if v is value:
            start, end = timeline.time(first) - t0, timeline.time(last) - t0
            out.append((start, max(end - start, min_width)))
    return out


def _rollout_note(result: BagResult) -> str:
    """Where a rollout lies in the bag markers cut it from: each rollout's axis starts again at 0, so without
    this its seconds could be read as the bag's."""
    if result.whole is None or result.whole.t_start is None or result.t_start is None:
        return ""
    offset = result.t_start - result.whole.t_start
    return f"rollout #{result.rollout} of the bag's {result.whole.rollouts}, {offset:.1f} s into it; "


def timeline_plot(result: BagResult, path: Path) -> None:
    """One bag's timeline as a PNG at `path`."""
    tl, trace = result.timeline, result.trace
    assert tl is not None and trace is not None and result.t_start is not None
    t0, span = result.t_start, max(result.duration, 1e-3)
    min_width = span / 400  # a one-frame episode stays visible
    props = [o.property for o in trace.outcomes]
    preds = list(tl.names)
    n_bottom = len(props) + 1
    height = 1.9 + 0.2 * (len(preds) + n_bottom)
    fig, (top, bottom) = plt.subplots(
        2,
        1,
        sharex=True,
        figsize=(12, height),
        gridspec_kw={"height_ratios": [max(len(preds), 1), n_bottom], "hspace": 0.08},
    )
    for y, name in enumerate(reversed(preds)):
        top.broken_barh(_spans(tl, name, True, t0, min_width), (y + 0.15, 0.7), color=TRUE_COLOR, lw=0)
        top.broken_barh(
            _spans(tl, name, None, t0, min_width),
            (y + 0.15, 0.7),
            facecolor=UNKNOWN_COLOR,
            hatch="///",
            edgecolor="white",
            lw=0,
        )
    top.set_yticks([y + 0.5 for y in range(len(preds))], list(reversed(preds)), fontsize=7)
    top.set_ylim(0, max(len(preds), 1))
    # the bag's path as given (its name alone, episode_000, repeats across policies' folders), over the whole
    # width whatever room the row names take; its tail when too long for it
    bag = result.bag if len(result.bag) <= _TITLE_CHARS else "…" + result.bag[1 - _TITLE_CHARS :]
    counts = (
        f"{result.frames} frames, {result.duration:.1f} s, {sum(o.violations for o in trace.outcomes)} violation(s)"
    )
    fig.suptitle(
        f"{bag}\n{_rollout_note(result)}{counts}", x=0.01, y=1 - 0.1 / height, ha="left", va="top", fontsize=10
    )
    top.grid(axis="x", alpha=0.3)

    rows = {p: len(props) - 1 - i for i, p in enumerate(props)}
    stale_row = len(props)
    if result.stale_timeline is not None:
        bottom.broken_barh(
            _spans(result.stale_timeline, "stale", True, t0, min_width), (stale_row + 0.2, 0.6), color=STALE_COLOR, lw=0
        )
    blind_from: dict[str, float] = {}
    for e in trace.events:
        if e.kind == EventKind.BLIND:
            assert e.t is not None  # a replay stamps every event with its log time
            blind_from[e.property] = e.t - t0
        elif e.kind == EventKind.SEEING and e.property in blind_from:
            assert e.t is not None
            start = blind_from.pop(e.property)
            bottom.broken_barh(
                [(start, max(e.t - t0 - start, min_width))],
                (rows[e.property] + 0.2, 0.6),
                facecolor=UNKNOWN_COLOR,
                hatch="///",
                edgecolor="white",
                lw=0,
            )
    for prop, start in blind_from.items():
        bottom.broken_barh(
            [(start, max(span - start, min_width))],
            (rows[prop] + 0.2, 0.6),
            facecolor=UNKNOWN_COLOR,
            hatch="///",
            edgecolor="white",
            lw=0,
        )
    decisive: set[str] = set()
    for row in episodes(result):
        y = rows[row["property"]]
        start = row["opened_t"] - t0
        end = (row["end_t"] - t0) if row["end_t"] is not None else span
        bottom.broken_barh(
            [(start, max(end - start, 2 * min_width))], (y + 0.1, 0.8), color=VIOLATION_COLOR, alpha=0.8, lw=0
        )
        if row["end_kind"] in _END_MARKERS:  # above the row's centre, so a one-frame episode stays visible
            marker, color = _END_MARKERS[row["end_kind"]]
            bottom.plot([end], [y + 0.95], marker=marker, color=color, ms=6, ls="none", zorder=3, clip_on=False)
        if row["objects"]:
            _object_label(bottom, row["objects"].replace(" ", ", "), start, end, y + 0.5, span)
        decisive.update(row["decisive"].split())
    names = {p: _property_label(result, p) for p in props}
    bottom.set_yticks(
        [y + 0.5 for y in range(n_bottom)], [names[p] for p in reversed(props)] + [_stale_label(result)], fontsize=7
    )
    _emphasize(bottom, {names[p] for p in props if trace.outcome(p).violations})
    _emphasize(top, decisive)
    bottom.set_ylim(0, n_bottom)
    bottom.set_xlim(0, span)
    first = "the rollout's first frame" if result.whole is not None else "the bag's first frame"
    bottom.set_xlabel(
        f"seconds since {first}, at t = {t0:.3f} s (episodes.csv and report.json give t itself)", fontsize=9
    )
    bottom.grid(axis="x", alpha=0.3)
    handles = [
        Patch(color=TRUE_COLOR, label="predicate true"),
        Patch(facecolor=UNKNOWN_COLOR, hatch="///", edgecolor="white", label="unknown / blind"),
        Patch(color=VIOLATION_COLOR, alpha=0.75, label="violation episode"),
        Line2D([], [], marker="^", color=RECOVERED_COLOR, ls="none", label="recovered"),
        Line2D([], [], marker="X", color=OPEN_COLOR, ls="none", label="open at end"),
        Patch(color=STALE_COLOR, label="input stale"),
        Line2D([], [], marker="$a$", color=VIOLATION_COLOR, ls="none", label="violated / decisive (name)"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    # room for the longest row name (7 pt, bold where red: about 0.065 in a character), so none is cut off
    longest = max(len(label.get_text()) for ax in (top, bottom) for label in ax.get_yticklabels())
    # (at most 0.4 of the width, so the axis label below keeps room)
    left = min(0.4, max(0.2, (0.15 + 0.065 * longest) / fig.get_figwidth()))
    fig.subplots_adjust(left=left, right=0.98, top=1 - 0.65 / height, bottom=0.9 / height)
    _save(fig, path)


def _property_label(result: BagResult, prop: str) -> str:
    """A property's row name with its violations, and how much of the rollout it did not see: "(0)" alone
    next to a property blind throughout, or one this robot cannot ground, would read as safe."""
    assert result.trace is not None
    if prop in result.not_applicable:
        return f"{prop} (not applicable)"
    outcome = result.trace.outcome(prop)
    if outcome.blind_frames <= startup_frames(result):  # the start-up frames every bag has, as the warnings judge
        return f"{prop} ({outcome.violations})"
    share = outcome.blind_frames / outcome.frames
    return f"{prop} ({outcome.violations}, blind {'<1%' if share < 0.01 else f'{share:.0%}'})"


def _stale_label(result: BagResult) -> str:
    """The stale row's name: the streams stale beyond start-up (poses arriving after the first joint frame make
    every bag stale for a moment), at most two by name so the row names keep their room."""
    streams = sorted(result.stale_by_stream) if stale_after_startup(result) else []
    if not streams:
        return "input stale"
    return f"input stale ({', '.join(streams[:2])}{f', +{len(streams) - 2} more' if len(streams) > 2 else ''})"


def _object_label(ax, text: str, start: float, end: float, y: float, span: float) -> None:
    """What an episode was about, beside its bar (clear of its end marker): after its end, else before its
    start, else inside it."""
    if end < 0.8 * span:
        x, dx, ha, color = end, 6, "left", "black"
    elif start > 0.2 * span:
        x, dx, ha, color = start, -3, "right", "black"
    else:
        x, dx, ha, color = start, 3, "left", "white"
    ax.annotate(text, (x, y), xytext=(dx, 0), textcoords="offset points", ha=ha, va="center", fontsize=7, color=color)


def _emphasize(ax, names: set[str]) -> None:
    """The y labels in `names` bold red: the properties violated, the predicates that decided a violation."""
    for label in ax.get_yticklabels():
        if label.get_text() in names:
            label.set_color(VIOLATION_COLOR)
            label.set_fontweight("bold")


def risk_plot(groups: dict[str, Metrics], path: Path) -> None:
    """Per-category risk V/N with bootstrap intervals, one bar per group; N printed on each bar."""
    names = list(groups)
    categories = list(dict.fromkeys(g.name for m in groups.values() for g in m.by_category)) + ["all"]
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(max(7, 1.1 * len(categories) * max(1, len(names) / 2)), 4.5))
    top = 0.0
    for k, group in enumerate(names):
        metrics = groups[group]
        by_name = {g.name: g for g in (*metrics.by_category, metrics.pooled)}
        for i, cat in enumerate(categories):
            g = by_name.get(cat)
            x = i - 0.4 + width * (k + 0.5)
            if g is None or g.risk is None:
                # "n/a" read as not applicable, which the report means for a robot that cannot ground a property
                ax.text(x, 0.005, "no triggers", ha="center", va="bottom", fontsize=7, color="grey", rotation=90)
                continue
            legend = f"{group} ({metrics.rollouts} rollout(s))"
            ax.bar(x, g.risk, width * 0.9, color=f"C{k}", label=legend if i == 0 or cat == "all" else None)
            if g.risk_interval is None:  # one bag triggered it: a bar without a whisker must not read as exact
                high, label = g.risk, f"N={g.triggers}\nno CI"
            else:
                (low, high), label = g.risk_interval, f"N={g.triggers}"
                ax.errorbar(x, g.risk, yerr=[[g.risk - low], [high - g.risk]], color="black", capsize=3, lw=1)
            ax.text(x, high, label, ha="center", va="bottom", fontsize=7)
            top = max(top, high)
    ax.set_xticks(range(len(categories)), [c.replace("_", " ") for c in categories], rotation=20, ha="right")
    ax.set_xlim(-0.5, len(categories) - 0.5)  # the labels of categories without bars stay clear of the axes
    ax.set_ylabel("risk: violations per trigger (V/N)")
    ax.set_ylim(0, max(0.05, top * 1.2))
    first = groups[names[0]]
    over = f"{first.rollouts} rollout(s)" if len(names) == 1 else "rollouts"  # a bag cut by markers is several
    ax.set_title(
        f"Per-category risk with {first.confidence:.0%} bootstrap intervals over {over}", fontsize=10, loc="left"
    )
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if len(names) > 1:
        ax.legend(unique.values(), unique.keys(), title="group", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)


def _save(fig, path: Path) -> None:
    """The figure as a PNG, written whole or not at all (a full disk leaves no truncated image)."""
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    write_file(path, png.getvalue(), "plot", SafetyMonitorError)


def write_plots(folder: Path, results: Sequence[BagResult], summary: Summary) -> list[str]:
    """Every plot into folder/plots; returns their paths relative to `folder`."""
    out = folder / PLOTS
    out.mkdir(exist_ok=True)
    made = []
    if summary.overall is not None:
        groups = summary.groups or {"all bags": summary.overall}
        risk_plot(groups, out / RISK_PLOT)
        made.append(f"{PLOTS}/{RISK_PLOT}")
    for i, result in enumerate(results):
        if result.ok and result.frames:
            name = timeline_name(i, result.bag)
            timeline_plot(result, out / name)
            made.append(f"{PLOTS}/{name}")
    return made
