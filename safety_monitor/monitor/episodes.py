"""Episode bookkeeping shared by the live and batch paths: automaton codes in, events and counts out.

An episode's violating frames run from its opening frame up to, not including, the frame on which it
closes (the recovery frame, where the property re-arms); an episode closed on its own opening frame
counts one frame; one still open at the end of a trace of n frames counts n - opening frame.
Its seconds come from the frames' own stamps, not from a rate: a frame stands for the time since the frame
before it (the trace's first frame for none), so an episode lasts from the stamp of the frame before it
opened to the stamp of its last violating frame, and rollouts recorded at different rates compare.
Counterexamples are deferred: an opening event records its window's bounds and a compact copy of its
frames, and the values, times and decisive predicates are decoded when first read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from safety_monitor.enums import EventKind
from safety_monitor.monitor import automaton as codes
from safety_monitor.monitor import events as ev
from safety_monitor.monitor.automaton import MonitorAutomaton
from safety_monitor.monitor.events import deferred_counterexample as _deferred

# window(first, last) -> (read, *args): read(*args) gives the property's values on frames first..last
# (None where blind) and their times. It is called only when the counterexample is first read, so args
# must hold what it needs (a copy, or buffers that are never overwritten), not a view that moves on.
Window = Callable[[int, int], tuple]
# code -> (recovered, opened, closed at once): tuple unpacking beats bit tests in CPython's hot loop
_CODE_SPLIT = [
    (bool(c & codes.RECOVERED), bool(c & codes.OPENED), bool(c & codes.CLOSED_AT_ONCE))
    for c in range(codes.EPISODE + 1)
]


@dataclass(frozen=True)
class PropertyOutcome:
    """One property on one trace: the counts the metrics pool over rollouts.

    `triggers` counts the trigger's rising edges decided by the end of the trace; `pending_triggers`
    those still undecided (raised in the main DFA's current run, which started when it last left its
    initial state or restarted on a recovery frame, with no counting episode open at the end), which the
    metrics leave out.
    """

    property: str
    category: str
    frames: int
    blind_frames: int
    triggers: int
    pending_triggers: int
    violations: int  # counted episodes
    violating_frames: int
    durations: tuple[int, ...]  # violating frames of each counted episode, in order
    discarded: int  # episodes discarded as truncated at the end
    seconds: tuple[float, ...] | None = None  # each counted episode's violating seconds; None without stamps

    def to_json(self) -> dict[str, Any]:
        return {
            "property": self.property,
            "category": self.category,
            "frames": self.frames,
            "blind_frames": self.blind_frames,
            "triggers": self.triggers,
            "pending_triggers": self.pending_triggers,
            "violations": self.violations,
            "violating_frames": self.violating_frames,
            "durations": list(self.durations),
            "discarded": self.discarded,
            "seconds": None if self.seconds is None else list(self.seconds),
        }


@dataclass(frozen=True)
class TraceResult:
    """Everything one trace produced: per-property outcomes (in spec order) and the events in order."""

    frames: int
    outcomes: tuple[PropertyOutcome, ...]
    events: tuple[ev.Event, ...]

    def outcome(self, name: str) -> PropertyOutcome:
        for o in self.outcomes:
            if o.property == name:
                return o
        raise KeyError(name)


class EpisodeLedger:
    """Turns one property's automaton codes into events and episode counts, in frame order; `window`
    records what an opening event's counterexample will be decoded from."""

    def __init__(self, auto: MonitorAutomaton, history: int, window: Window) -> None:
        self.auto = auto
        self.history = history
        self.window = window
        self._episodes = 0  # opened so far: the next episode's id
        self._durations: list[int] = []
        self._seconds: list[float | None] = []
        self._open_since: float | None = None  # the stamp of the frame before the open episode's first
        self._discarded = 0
        self._open_frame: int | None = None
        self._run_start = 0  # first frame the main DFA read in its current run
        self._blind_since: int | None = None
        self._blind_frames = 0
        self._at_once_kind = EventKind.CLOSED if auto.recovery is None else EventKind.RECOVERED

    def on_code(
        self,
        out: list[ev.Event],
        frame: int,
        t: float | None,
        code: int,
        state_before: int,
        letter: int,
        last_edge: int | None,
        t_before: float | None,
    ) -> None:
        """Append the events of automaton code `code` on `frame` to `out` (the live loop's hot path);
        `t_before` is the previous frame's stamp (None on a trace's first frame)."""
        recovered, opened, at_once = _CODE_SPLIT[code]
        if recovered:
            since = self._open_frame
            assert since is not None  # a recovery closes the episode this ledger opened
            if frame > since:  # violating up to the frame before this one
                self._close(frame, t, EventKind.RECOVERED, frame - since, out, t_before)
            else:
                self._close(frame, t, EventKind.RECOVERED, 1, out, t)
            self._run_start = frame
        if opened:
            auto = self.auto
            self._open_frame = frame
            self._open_since = t_before if frame else t
            episode = self._episodes
            self._episodes = episode + 1
            # the window: from the trigger's last rising edge in this run of the main DFA, else the run's start
            run_start = frame if recovered else self._run_start
            trigger_frame = last_edge if last_edge is not None and last_edge >= run_start else None
            first = run_start if trigger_frame is None else trigger_frame
            kept = first if first > frame - self.history else frame - self.history + 1
            cx = _deferred(
                (
                    _decode_counterexample,
                    auto,
                    kept,
                    frame,
                    trigger_frame,
                    kept > first,
                    state_before,
                    letter,
                    code,
                    self.window(kept, frame),
                )
            )
            out.append(ev.Event(EventKind.OPENED, auto.name, auto.category, frame, t, episode, None, cx))
        if at_once:
            self._close(frame, t, self._at_once_kind, 1, out, t)
            self._run_start = frame + 1

    def checkpoint(self) -> tuple:
        """This ledger's state, for `rewind` (`SpecSetMonitor.checkpoint`): its lists only grow within a trace,
        so their length stands for them."""
        return (
            self._episodes,
            len(self._durations),
            self._open_since,
            self._discarded,
            self._open_frame,
            self._run_start,
            self._blind_since,
            self._blind_frames,
        )

    def rewind(self, state: tuple) -> None:
        """Back to a `checkpoint` of this trace (the ones taken after it are spent)."""
        (
            self._episodes,
            closed,
            self._open_since,
            self._discarded,
            self._open_frame,
            self._run_start,
            self._blind_since,
            self._blind_frames,
        ) = state
        del self._durations[closed:], self._seconds[closed:]

    def blind(self, frame: int, t: float | None) -> ev.Event:
        self._blind_since = frame
        return ev.Event(EventKind.BLIND, self.auto.name, self.auto.category, frame, t)

    def seeing(self, frame: int, t: float | None) -> ev.Event:
        since = self._blind_since
        assert since is not None  # seeing again follows blind()
        self._blind_frames += frame - since
        self._blind_since = None
        return ev.Event(EventKind.SEEING, self.auto.name, self.auto.category, frame, t)

    def finish(
        self, frames: int, t: float | None, edges: int, run_edges: int
    ) -> tuple[list[ev.Event], PropertyOutcome]:
        """Close a trace of `frames` frames. An open episode counts unless shorter than
        min_resolve_frames; `run_edges` = trigger rising edges in the main DFA's current run."""
        auto = self.auto
        out: list[ev.Event] = []
        pending = run_edges
        if self._open_frame is not None:
            duration = frames - self._open_frame
            if duration >= auto.min_resolve_frames:
                self._close(frames - 1, t, EventKind.UNRECOVERED_AT_END, duration, out, t)
                pending = 0  # the activation was violated, not left undecided
            else:
                self._discarded += 1
                eid = self._episodes - 1
                self._open_frame = None
                out.append(
                    ev.Event(EventKind.DISCARDED_TRUNCATED, auto.name, auto.category, frames - 1, t, eid, duration)
                )
        blind = self._blind_frames + (frames - self._blind_since if self._blind_since is not None else 0)
        outcome = PropertyOutcome(
            auto.name,
            auto.category,
            frames,
            blind,
            edges - pending,
            pending,
            len(self._durations),
            sum(self._durations),
            tuple(self._durations),
            self._discarded,
            None if None in self._seconds else tuple(s for s in self._seconds if s is not None),
        )
        return out, outcome

    def _close(
        self, frame: int, t: float | None, kind: EventKind, duration: int, out: list[ev.Event], t_last: float | None
    ) -> None:
        """Close the open episode on `frame`; `t_last` is the stamp of its last violating frame."""
        self._durations.append(duration)
        since = self._open_since
        self._seconds.append(None if t_last is None or since is None else t_last - since)
        self._open_frame = None
        auto = self.auto
        out.append(ev.Event(kind, auto.name, auto.category, frame, t, self._episodes - 1, duration, None))


def _decode_counterexample(
    auto: MonitorAutomaton,
    first: int,
    last: int,
    trigger_frame: int | None,
    truncated: bool,
    state_before: int,
    letter: int,
    code: int,
    window: tuple,
) -> ev.Counterexample:
    """The counterexample an opening event recorded, decoded from what its window kept."""
    read, *args = window
    values, times = read(*args)
    return ev.Counterexample(
        property=auto.name,
        formula=auto.formula,
        trigger=auto.trigger,
        first_frame=first,
        last_frame=last,
        trigger_frame=trigger_frame,
        atoms=auto.atoms,
        values=tuple(values),
        times=tuple(times),
        decisive=auto.decisive_atoms(state_before, letter, code),
        truncated=truncated,
    )
