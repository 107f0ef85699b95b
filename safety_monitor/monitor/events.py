"""What the monitor reports: events (typed, JSON-ready) and the counterexample every violation carries."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

from safety_monitor.enums import EventKind
from safety_monitor.records import direct_init

_new = object.__new__


@dataclass(frozen=True)
class Counterexample:
    """The frames that led to a violation, from the trigger (or the start of the main DFA's run) to the
    opening frame, with the property's predicate values; None marks a frame where it was blind."""

    property: str
    formula: str
    trigger: str  # the trigger formula (given or derived)
    first_frame: int
    last_frame: int  # the frame on which the episode opened
    trigger_frame: int | None  # the trigger's rising edge the window starts from (None: run start)
    atoms: tuple[str, ...]
    values: tuple[tuple[bool | None, ...], ...]  # one row per frame first_frame..last_frame
    times: tuple[float | None, ...]
    decisive: tuple[str, ...]  # flipping any one of these on the last frame avoids the violation
    truncated: bool  # the window was cut to the monitor's history length

    def __getattr__(self, name: str) -> Any:
        """Only reached for a field not set yet, i.e. on a deferred counterexample: build it now."""
        state = self.__dict__
        deferred = state.get("_deferred")
        if deferred is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        build, *args = deferred
        state.update(build(*args).__dict__)  # fields first, then forget the recipe: safe if read twice
        state.pop("_deferred", None)
        return getattr(self, name)

    def __getstate__(self) -> dict[str, Any]:
        """Pickles and copies carry the fields, never the recipe."""
        self.property  # noqa: B018 (builds a deferred counterexample)
        return self.__dict__

    @builtins.property  # the field `property` (a name) shadows the decorator in this class body
    def explanation(self) -> str:
        """One plain sentence (built on demand: floods of violations should not pay for prose)."""
        return explain(
            self.property,
            self.formula,
            self.trigger,
            self.last_frame,
            self.times[-1],
            self.trigger_frame,
            self.atoms,
            self.values[-1],
            self.decisive,
        )

    def to_json(self) -> dict[str, Any]:
        """Values as runs per predicate, `[first_frame, last_frame, value]`, readable and short."""
        runs: dict[str, list[list]] = {}
        for k, atom in enumerate(self.atoms):
            segs: list[list] = []
            for offset, row in enumerate(self.values):
                frame, value = self.first_frame + offset, row[k]
                if segs and segs[-1][2] == value and segs[-1][1] == frame - 1:
                    segs[-1][1] = frame
                else:
                    segs.append([frame, frame, value])
            runs[atom] = segs
        return {
            "property": self.property,
            "formula": self.formula,
            "frames": [self.first_frame, self.last_frame],
            "t": [self.times[0], self.times[-1]] if self.times else [None, None],
            "trigger_frame": self.trigger_frame,
            "decisive": list(self.decisive),
            "truncated": self.truncated,
            "values": runs,
            "explanation": self.explanation,
        }


def deferred_counterexample(recipe: tuple) -> Counterexample:
    """A Counterexample equal to `build(*args)` for recipe (build, *args), built on first access of any
    field: a flood of violations pays for a reference to its window, not for decoding it."""
    cx = _new(Counterexample)
    cx.__dict__["_deferred"] = recipe
    return cx


@direct_init
@dataclass(frozen=True)
class Event:
    """One monitor event. `episode` numbers a property's episodes from 0; `duration` (frames counted as
    violating) is set on closing events; `counterexample` on `opened`, and `objects`: what its predicates
    were about on that frame ("mug"), when the input said (the Supervisor sets it)."""

    kind: EventKind
    property: str
    category: str
    frame: int
    t: float | None = None
    episode: int | None = None
    duration: int | None = None
    counterexample: Counterexample | None = None
    objects: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "property": self.property,
            "category": self.category,
            "frame": self.frame,
            "t": self.t,
            "episode": self.episode,
            "duration": self.duration,
        }
        if self.objects:  # only where the input named them: older inputs' events read as before
            out["objects"] = list(self.objects)
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample.to_json()
        return out


def explain(
    name: str,
    formula: str,
    trigger: str,
    frame: int,
    t: float | None,
    trigger_frame: int | None,
    atoms: tuple[str, ...],
    row: tuple[bool | None, ...],
    decisive: tuple[str, ...],
) -> str:
    """One plain sentence: what broke, when, after which trigger, and which values decided it."""
    when = f"frame {frame}" + (f" (t={t:.3f} s)" if t is not None else "")
    after = f"after its trigger `{trigger}` rose at frame {trigger_frame}, " if trigger_frame is not None else ""
    shown = atoms if len(atoms) <= 6 else (decisive or atoms[:6])
    values = ", ".join(f"{a}={_word(row[atoms.index(a)])}" for a in shown)
    if len(decisive) == 1:
        why = f"; flipping {decisive[0]} alone would have avoided it"
    elif decisive:
        why = f"; flipping any one of {', '.join(decisive)} would have avoided it"
    else:
        why = ""
    return f"{name} was violated at {when}: {after}the values {values} left `{formula}` impossible to satisfy{why}."


def _word(value: bool | None) -> str:
    return "unknown" if value is None else ("true" if value else "false")
