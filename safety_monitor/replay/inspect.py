"""What a bag (or the live ROS graph) holds, against what the configuration reads: `safety-monitor inspect`.

A new robot's first question is whether its recordings fit: which topics there are, at what rate, whether
each configured input is there with the right type, which predicates this robot description can ground,
which properties apply to it, and which would be vacuous in this bag (their trigger never rises: they hold
without ever being put to the test). The last needs a replay of the bag, which runs only when every
configured input has the right type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from safety_monitor.io.bag import BagReader
from safety_monitor.pipeline.inputs import ConfiguredInput, configured_inputs
from safety_monitor.replay.score import NOMINAL_RATE_HZ, ReplayConfig, make_grounder, score_bag


@dataclass(frozen=True)
class TopicInfo:
    """One topic: its type, and (in a bag) message count, log-time span and mean rate."""

    topic: str
    msgtype: str
    count: int | None = None
    first_t: float | None = None
    last_t: float | None = None

    @property
    def rate_hz(self) -> float | None:
        if self.count is None or self.count < 2 or self.first_t is None or self.last_t is None:
            return None
        span = self.last_t - self.first_t
        return (self.count - 1) / span if span > 0 else None


class InputState(StrEnum):
    PRESENT = "present"
    EMPTY = "no messages"
    MISSING = "missing"
    WRONG_TYPE = "wrong type"


@dataclass(frozen=True)
class InputCheck:
    input: ConfiguredInput
    state: InputState
    found_type: str | None = None

    def text(self) -> str:
        i = self.input
        head = f"{i.stream:<24} {i.topic:<32} {self.state.value}"
        return head + (
            f": expected {i.msgtype.value}, found {self.found_type}" if self.state is InputState.WRONG_TYPE else ""
        )


@dataclass
class Inspection:
    """Everything `inspect` reports about one source. `triggered`: per property, trigger rises counted in a
    replay of the bag (None: not replayed: live, or an input is missing or of the wrong type)."""

    source: str
    topics: list[TopicInfo]
    inputs: list[InputCheck]
    groundable: list[str]
    not_groundable: dict[str, str]
    applicable: dict[str, str]  # property -> "applicable" or why not
    triggered: dict[str, int] | None = None
    replay_error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def span(self) -> tuple[float, float] | None:
        firsts = [t.first_t for t in self.topics if t.first_t is not None]
        lasts = [t.last_t for t in self.topics if t.last_t is not None]
        return (min(firsts), max(lasts)) if firsts and lasts else None

    @property
    def vacuous(self) -> list[str]:
        """Applicable properties whose trigger never rose in the replay."""
        if self.triggered is None:
            return []
        return [p for p, n in self.triggered.items() if n == 0 and self.applicable.get(p) == "applicable"]

    def to_json(self) -> dict[str, Any]:
        span = self.span
        return {
            "source": self.source,
            "span": None if span is None else {"start": span[0], "end": span[1], "duration": span[1] - span[0]},
            "topics": [
                {
                    "topic": t.topic,
                    "type": t.msgtype,
                    "count": t.count,
                    "rate_hz": t.rate_hz,
                    "first_t": t.first_t,
                    "last_t": t.last_t,
                }
                for t in self.topics
            ],
            "inputs": [
                {
                    "stream": c.input.stream,
                    "topic": c.input.topic,
                    "expected_type": c.input.msgtype.value,
                    "required": c.input.required,
                    "state": c.state.value,
                    "found_type": c.found_type,
                }
                for c in self.inputs
            ],
            "predicates": {"groundable": self.groundable, "not_groundable": self.not_groundable},
            "properties": {
                p: {
                    "applicability": why,
                    "triggers": None if self.triggered is None else self.triggered.get(p),
                    "vacuous_here": p in self.vacuous,
                }
                for p, why in self.applicable.items()
            },
            "replay_error": self.replay_error,
            "notes": self.notes,
        }

    def text(self) -> str:
        lines = [f"{self.source}"]
        span = self.span
        if span is not None:
            lines.append(f"  time span {span[0]:.3f} .. {span[1]:.3f} s ({span[1] - span[0]:.3f} s)")
        lines.append("topics:")
        for t in self.topics:
            rate = f"{t.rate_hz:8.1f} Hz" if t.rate_hz is not None else " " * 11
            count = f"{t.count:7d}" if t.count is not None else ""
            lines.append(f"  {t.topic:<36} {t.msgtype:<40} {count} {rate}".rstrip())
        lines.append("configured inputs:")
        lines += [f"  {c.text()}" for c in self.inputs]
        lines.append(f"predicates groundable with this robot: {len(self.groundable)}")
        for name, why in sorted(self.not_groundable.items()):
            lines.append(f"  not groundable: {name} ({why})")
        lines.append("properties:")
        vacuous = set(self.vacuous)
        for name, why in self.applicable.items():
            extra = ""
            if self.triggered is not None and why == "applicable":
                n = self.triggered.get(name, 0)
                extra = f"; triggered {n} time(s)" + (" (vacuous in this bag)" if name in vacuous else "")
            lines.append(f"  {name}: {why}{extra}")
        if self.replay_error:
            lines.append(f"not replayed: {self.replay_error}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def check_inputs(inputs: list[ConfiguredInput], topics: Mapping[str, TopicInfo]) -> list[InputCheck]:
    """Each configured input against the topics found."""
    out = []
    for i in inputs:
        found = topics.get(i.topic)
        if found is None:
            out.append(InputCheck(i, InputState.MISSING))
        elif found.msgtype != i.msgtype.value:
            out.append(InputCheck(i, InputState.WRONG_TYPE, found.msgtype))
        elif found.count == 0:
            out.append(InputCheck(i, InputState.EMPTY, found.msgtype))
        else:
            out.append(InputCheck(i, InputState.PRESENT, found.msgtype))
    return out


def bag_topics(path: str | Path) -> list[TopicInfo]:
    """The bag's topics with counts and log-time spans (log times only: nothing is decoded)."""
    with BagReader(path) as bag:
        summary = bag.topics
        first: dict[str, float] = {}
        last: dict[str, float] = {}
        readable = {t for t, s in summary.items() if s.msgtype not in bag.skipped}
        for batch in bag.message_batches(readable, 1 << 16):
            seconds = batch.log_ns / 1e9
            for w, topic in enumerate(batch.topics):
                mine = seconds[batch.which == w]
                if len(mine):
                    first.setdefault(topic, float(mine[0]))
                    last[topic] = float(np.max(mine))
    return [TopicInfo(t, s.msgtype, s.count, first.get(t), last.get(t)) for t, s in sorted(summary.items())]


def inspect_source(source: str, topics: list[TopicInfo], config: ReplayConfig) -> Inspection:
    """The configuration's view of a source's topics: inputs, groundable predicates, applicable properties."""
    from safety_monitor.grounding.applicability import applicability, vacuous_predicates
    from safety_monitor.specs.model import load_specs

    config, notes = config.resolved({t.topic: t.msgtype for t in topics})
    grounder = make_grounder(config.robot, config.rate_hz or NOMINAL_RATE_HZ, config.mapping)
    config.mapping.check_names(grounder.robot)
    inputs = check_inputs(configured_inputs(config.mapping, grounder.robot.objects), {t.topic: t for t in topics})
    vacuous = vacuous_predicates(grounder)
    verdicts = applicability(load_specs(config.specs_file()), grounder)
    return Inspection(
        source=source,
        topics=topics,
        inputs=inputs,
        groundable=[p for p in grounder.predicates if p not in vacuous],
        not_groundable={p: str(why) for p, why in sorted(vacuous.items()) if p in grounder.predicates},
        applicable={name: v.text() for name, v in verdicts.items()},
        notes=notes,
    )


def inspect_bag(path: str | Path, config: ReplayConfig) -> Inspection:
    """`inspect_source` for a bag, and, when its inputs allow, a replay counting each property's triggers."""
    found = inspect_source(str(path), bag_topics(path), config)
    bad = [
        c
        for c in found.inputs
        if c.state is InputState.WRONG_TYPE or (c.input.required and c.state is not InputState.PRESENT)
    ]
    if bad:
        found.replay_error = "; ".join(f"{c.input.topic} ({c.input.stream}) {c.state.value}" for c in bad)
        return found
    result = score_bag(path, config)
    if result.trace is None:
        found.replay_error = result.error
        return found
    found.triggered = {o.property: o.triggers + o.pending_triggers for o in result.trace.outcomes}
    return found
