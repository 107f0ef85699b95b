"""Counterexamples a planner can consume in a refinement loop, from any level that finds a violation.

One typed record for the monitor (an `opened` event's evidence), the CTL checker (a tree path) and
plan checks (the plan's steps): the property, its category, the frames with the property's
predicate values, the predicates that decided the verdict, and one plain sentence. Long paths are
kept short: `frames` lists the first and last frame, every frame where one of the shown predicates
changes value and every deciding frame; a value holds until the next listed frame.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MONITOR, CTL, PLAN = "monitor", "ctl", "plan"


@dataclass(frozen=True)
class FrameValues:
    frame: int  # frame of the trace (tree depth, plan step)
    values: dict[str, bool | None]  # the property's predicates; None where the monitor was blind
    decisive: tuple[str, ...] = ()  # predicates whose values here decided the verdict
    time: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"frame": self.frame, "values": dict(self.values)}
        if self.time is not None:
            out["t"] = self.time
        if self.decisive:
            out["decisive"] = list(self.decisive)
        return out


@dataclass(frozen=True)
class Counterexample:
    property: str
    category: str
    origin: str  # MONITOR, CTL or PLAN
    formula: str
    frames: tuple[FrameValues, ...]
    sentence: str
    where: tuple[str, ...] = ()  # trajectories, trace files or the plan the violation occurs in

    @builtins.property  # the field `property` shadows the builtin in this class body
    def decided_at(self) -> int:
        """The last frame whose values decided the verdict (the last frame when none is marked)."""
        marked = [f.frame for f in self.frames if f.decisive]
        return marked[-1] if marked else self.frames[-1].frame

    def to_json(self) -> dict[str, Any]:
        return {
            "property": self.property,
            "category": self.category,
            "origin": self.origin,
            "formula": self.formula,
            "sentence": self.sentence,
            "where": list(self.where),
            "decided_at": self.decided_at,
            "frames": [f.to_json() for f in self.frames],
        }


def feedback_json(counterexamples: Iterable[Counterexample]) -> str:
    """The document a planner reads: {"violations": n, "counterexamples": [...]}."""
    items = [c.to_json() for c in counterexamples]
    return json.dumps({"violations": len(items), "counterexamples": items}, indent=2)


def compact(frames: Sequence[FrameValues]) -> tuple[FrameValues, ...]:
    """First and last frame, frames where a value changes, and deciding frames."""
    kept = []
    for i, f in enumerate(frames):
        if i in (0, len(frames) - 1) or f.decisive or f.values != frames[i - 1].values:
            kept.append(f)
    return tuple(kept)


def where_text(where: Sequence[str], named: int = 3) -> str:
    """` on a, b and c`: up to `named` names, then how many others."""
    if not where:
        return ""
    if len(where) <= named:
        return f" on {where[0]}" if len(where) == 1 else f" on {', '.join(where[:-1])} and {where[-1]}"
    others = len(where) - named
    return f" on {', '.join(where[:named])} and {others} other{'s' if others > 1 else ''}"


def from_ctl(result, tree, name: str, category: str = "", formula: str | None = None) -> Counterexample:
    """A violated `verify.check.CTLResult` on `tree`: its evidence path from the root."""
    from safety_monitor.verify.ctl import ctl_atoms, ctl_text

    evidence = result.evidence
    atoms = ctl_atoms(result.formula)
    decisive: dict[int, set[str]] = {}
    for node, names in evidence.decisive:
        decisive.setdefault(node, set()).update(names)
    path = tree.path_to(evidence.path[0])[:-1] + list(evidence.path)
    frames = [
        FrameValues(int(tree.depth[n]), tree.valuation(n, atoms), tuple(sorted(decisive.get(n, ())))) for n in path
    ]
    last = path[-1]
    runs = tree.trajectories_ending_at(last) if evidence.stops else tree.trajectories_through(last)
    where = tuple(tree.names[i] for i in runs)
    text = formula or ctl_text(result.formula)
    verdict = "holds" if result.holds else "is violated"
    label = name if name == text else f"{name} ({text})"
    sentence = f"{label} {verdict}{where_text(where)}: {'; '.join(evidence.notes)}."
    return Counterexample(name, category, CTL, text, compact(frames), sentence, where)


def from_monitor_event(event, where: Sequence[str] = ()) -> Counterexample:
    """A monitor `opened` event (safety_monitor.monitor.events.Event) with its counterexample."""
    cx = event.counterexample
    if cx is None:
        raise ValueError(f"event {event.kind!r} of {event.property!r} carries no counterexample")
    last = len(cx.values) - 1
    frames = [
        FrameValues(
            cx.first_frame + i,
            dict(zip(cx.atoms, row)),
            cx.decisive if i == last else (),
            cx.times[i] if i < len(cx.times) else None,
        )
        for i, row in enumerate(cx.values)
    ]
    return Counterexample(
        cx.property, event.category, MONITOR, cx.formula, compact(frames), cx.explanation, tuple(where)
    )
