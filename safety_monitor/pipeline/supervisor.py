"""The Supervisor: every rule about the predicate stream, written once for every driver.

Frames come in with the driver's clock beside them (seconds: the node clock live, which is sim time
under `use_sim_time`; the log times in replay); monitor steps, blind frames, issues, finished rollouts
and the input status go out as a `Step`. Given the same frames at the same clock times, every driver
gets the same events. The rules:

- Time order inside a trace: a frame is stepped only when its time is after the last stepped one. A
  repeated stamp is dropped (a publisher whose stamp froze: see the frozen rule); an older one is time
  going backwards: one blind frame, and frames are dropped until time passes the last stepped one again.
- The watchdog: no advancing frame for `predicates_timeout_s` of the driver's clock steps one blind
  frame (inside a trace) and makes the inputs STALE until frames resume. The frozen rule: when repeated
  stamps kept coming meanwhile, the same after `predicates_frozen_s`, as FROZEN. Drivers call `tick`
  when nothing arrives; every input checks the clock first, so a frame after a pause gets its blind frame.
  A blind spell steps one blind frame, however many rules see it.
- Lost frames: the estimator numbers a rollout's frames 0, 1, ...; a number other than the next one is a
  frame_gap issue, and a jump forward counts the frames lost on the way (never stepped).
- Predicates the specs read but the input lacks are unknown (one `unsent` issue says which).
- A violation names what it is about: an `opened` event carries the objects its property's predicates
  were about on its frame (the frame's `objects`, for the atoms of the property; none when the input
  does not say, as in bags recorded before predicates carried them, or on a blind frame).
- Rollouts: a start marker names the trace whose first frame is at or after it; an end marker closes the
  trace once its frame was stepped, or once a later frame arrives. Without markers the input
  is one trace, closed by `finish`. Events already reported keep the rollout index they were reported with.
- Restarts: a restarted input starts a new rollout and never joins the old one: a frame time more than
  `restart_backwards_s` behind the last stepped one, frame numbers starting again at 0 (a new estimator),
  or a start marker whose time a frame of the trace reached without an end marker. The old rollout ends
  there, its open episodes closed as `input_ended` (never recovered, counted; one too short to count is
  `discarded_truncated` as at any trace's end); a trace that had a start marker and
  ends without its end marker is a missing_marker issue. The monitor's history restarts with each
  rollout, so no counterexample cites a frame of another.
- A late start marker (it arrives after frames at or past its time were stepped: markers come on a topic
  of their own, and a stalled input delivers them late) still starts its rollout at its own time, and a
  late_marker issue says so. The frames stepped before it came were decided without it: in the last
  rollout's trace (or a trace begun after the last end marker), and grounded with the evidence of before the
  boundary (the estimator restarts its grounder only when the marker reaches it). So they are withdrawn from
  the trace they were stepped in, with their verdicts, and each counts in exactly one rollout: the marker's,
  as one blind frame at its own time (its frames and their numbers start exactly at the marker's time, and no
  verdict of it rests on them). A trace that began before the marker's time ends with its last frame before
  it, with the outcome it had there: the monitor rewinds to a checkpoint (one every CHECKPOINT_FRAMES
  frames) and steps the frames from there to the boundary again; its open episodes close there as
  input_ended, so a violation that went on past the boundary counts once, in the marker's rollout, if still
  there after its blind frames. A trace that began at or after it is withdrawn whole. The Step says how many
  frames were withdrawn from which rollout (`Withdrawn`). Their events were reported (live, published) and
  keep their rollout index, but no Rollout lists them: each episode they opened gets a `withdrawn` event,
  so the event log says so too. Frames are not held back to be stepped once the marker is known: that
  would delay every live verdict by the longest lateness allowed. Only the last LATE_HOLD_FRAMES frames are
  kept: beyond them fewer frames are withdrawn, and the issue says how many; the ones let go stay in the
  trace they were stepped in (one that began at or after the marker's time is then cut too), so each frame
  still counts in one rollout.

No rclpy, no wall clock, no logging: the driver renders the Step.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import NamedTuple

from safety_monitor.enums import EventKind, IssueKind
from safety_monitor.frames import SAME_TIME_S, FrozenValues, PredicateSample, StreamIssue
from safety_monitor.monitor.episodes import PropertyOutcome
from safety_monitor.monitor.events import Event
from safety_monitor.monitor.live import Checkpoint, SpecSetMonitor
from safety_monitor.pipeline.markers import EpisodeMarker, MarkerKind
from safety_monitor.settings import MonitorSettings

STREAM = "predicates"  # the stream the Supervisor's issues are about
_NEVER = math.inf  # `_advanced_at` while blind (or before the first frame): the watchdog has nothing to time
_NO_STREAMS: frozenset[str] = frozenset()
_NO_OBJECTS: Mapping[str, tuple[str, ...]] = MappingProxyType({})
LATE_HOLD_FRAMES = 20_000  # stepped frames kept for a late start marker (40 s at 500 Hz, 1000 s at 20 Hz)
CHECKPOINT_FRAMES = 500  # the monitor's state is kept every this many frames, to end a trace before a late marker

Valuation = Mapping[str, "bool | None"]
FrameObserver = Callable[["Valuation | None", float, frozenset[str]], None]


class InputStatus(StrEnum):
    """What the Supervisor makes of its input right now (the monitor node's summary status)."""

    WAITING = "waiting"  # no frame stepped yet
    FRESH = "fresh"
    STALE = "stale"  # the watchdog fired: no advancing frame for predicates_timeout_s
    FROZEN = "frozen"  # frames keep coming, their stamp has not advanced for predicates_frozen_s
    TIME_BACKWARDS = "time_backwards"  # frames older than the last stepped one: dropped until time passes it

    @property
    def stale(self) -> bool:
        """No current predicates at all (as opposed to predicates that are only unknown)."""
        return self in _STALE


_STALE = frozenset({InputStatus.WAITING, InputStatus.STALE, InputStatus.FROZEN})


class RolloutEvent(NamedTuple):
    """A monitor event and the index of the rollout it happened in."""

    rollout: int
    event: Event


@dataclass(frozen=True)
class Rollout:
    """One finished trace: its start marker's metadata, the end marker's verdict, the events of the frames it
    holds (none of those a late start marker withdrew from it) and the per-property outcomes."""

    index: int
    task: str = ""
    fault: str = ""
    seed: int | None = None
    succeeded: bool | None = None
    frames: int = 0
    events: tuple[Event, ...] = ()
    outcomes: tuple[PropertyOutcome, ...] = ()


@dataclass(frozen=True, slots=True)
class Withdrawn:
    """The frames a late start marker took out of the trace in progress: its last `frames` stepped frames (every
    one, when the trace began at or after the marker's time), under rollout index `rollout`. They and their
    verdicts are in no Rollout; each the Supervisor still kept is stepped again as a blind frame of the marker's
    rollout, the step's last `blind` frames. A driver that counted them (`on_frame`) takes them back, so each
    counts once, in the trace that holds it."""

    rollout: int
    frames: int
    blind: int


@dataclass(frozen=True, slots=True)
class Step:
    """What one input caused, in order: the events, the issues, the rollouts it closed, the new input
    status (None: unchanged) and the status it replaced, and the frames withdrawn from the trace in progress
    (a late start marker). One input may change the status twice (a frame after a pause: stale, then fresh
    again), so `was` is not always the status before the step."""

    events: tuple[RolloutEvent, ...] = ()
    issues: tuple[StreamIssue, ...] = ()
    finished: tuple[Rollout, ...] = ()
    status: InputStatus | None = None
    was: InputStatus | None = None
    withdrawn: Withdrawn | None = None


NOTHING = Step()  # most frames: stepped, and nothing to report
_NOT_STEPPED = object()  # no valuation is it (`Supervisor._last_stepped`)


@dataclass
class _Collect:
    events: list[RolloutEvent] = field(default_factory=list)
    issues: list[StreamIssue] = field(default_factory=list)
    finished: list[Rollout] = field(default_factory=list)
    status: InputStatus | None = None
    was: InputStatus | None = None
    withdrawn: Withdrawn | None = None

    def step(self) -> Step:
        if not (self.events or self.issues or self.finished or self.status or self.withdrawn):
            return NOTHING
        return Step(tuple(self.events), tuple(self.issues), tuple(self.finished), self.status, self.was, self.withdrawn)


class Supervisor:
    """Feeds one SpecSetMonitor from one predicate stream (see the module's rules).

    `on_frame(valuation, t, stale)`, when given, hears of every frame the monitor steps (valuation None:
    a blind frame), for a driver that keeps a timeline of them (replay).
    """

    # Its attributes in slots: Python 3.11 keeps an instance's attributes inline (read fast) only up to 29 names a
    # class, past that every read goes through the dict (this class's and the FrameAssembler's: 6 thousand
    # instructions a replayed frame). `__dict__`: other attributes still allowed.
    __slots__ = (
        "__dict__",
        "_advanced_at",
        "_again",
        "_atoms",
        "_backwards_from",
        "_checkpoints",
        "_completed",
        "_countdown",
        "_ended_t",
        "_events",
        "_expected",
        "_frozen",
        "_given",
        "_in_trace",
        "_index",
        "_keep",
        "_known",
        "_last_stepped",
        "_last_t",
        "_last_unknown",
        "_last_valuation",
        "_last_values",
        "_late_start",
        "_lost",
        "_needed",
        "_on_frame",
        "_order_t",
        "_pending_end",
        "_plain",
        "_predicates",
        "_record",
        "_repeated",
        "_restart_s",
        "_soonest",
        "_start",
        "_starts",
        "_status",
        "_step",
        "_time_faults",
        "_timeout",
        "_times",
        "_trace_t0",
        "_unsent_reported",
        "_valuations",
        "late_markers",
        "missing_markers",
        "monitor",
    )

    def __init__(
        self, monitor: SpecSetMonitor, settings: MonitorSettings, on_frame: FrameObserver | None = None
    ) -> None:
        self.monitor = monitor
        self._step, self._again = monitor.step, monitor.step_again
        self._on_frame = on_frame
        self._predicates = monitor.predicates
        self._needed = frozenset(monitor.predicates)
        self._atoms = {a.name: a.atoms for a in monitor.automata}
        self._timeout, self._frozen = settings.predicates_timeout_s, settings.predicates_frozen_s
        self._soonest = min(self._timeout, self._frozen)
        self._restart_s = settings.restart_backwards_s
        self._status = InputStatus.WAITING
        self._last_t = -math.inf  # time of the last frame stepped (kept across traces)
        self._order_t = -math.inf  # frames at or before this time are dropped: the last stepped one, in a trace
        self._advanced_at = _NEVER  # driver time the last frame was stepped; _NEVER while blind
        self._repeated = False  # the last stepped stamp came again since
        self._backwards_from: float | None = None
        self._expected: int | None = None  # the estimator's next frame number
        self._lost = self._time_faults = 0
        self._unsent_reported = False
        self._known: object = object()  # the last valuation checked for missing predicates ...
        self._completed: Valuation = {}  # ... and it with those unknown
        self._last_valuation: Valuation = {}  # the last sample's (`sample`) ...
        self._last_values: Valuation = {}  # ... built from a copy of these values ...
        self._last_unknown: frozenset[str] | None = None  # ... with these predicates unknown
        self._given: FrozenValues | None = None  # the read-only values last sampled (equal to _last_values)
        self._in_trace = False
        self._trace_t0 = math.inf  # the current trace's first frame time
        self._ended_t = -math.inf  # the last frame's time of the last trace closed
        self._index = 0  # the current (or next) rollout
        self._start: EpisodeMarker | None = None  # the start marker of the current trace
        self._starts: list[EpisodeMarker] = []  # start markers not yet attached to a frame
        self._pending_end: EpisodeMarker | None = None
        self._events: list[Event] = []  # the current trace's
        self._times: deque[float] = deque(maxlen=LATE_HOLD_FRAMES)  # the current trace's stepped frame times ...
        self._valuations: deque[Valuation | None] = deque(maxlen=LATE_HOLD_FRAMES)  # ... and values (None: blind)
        self._record, self._keep = self._times.append, self._valuations.append
        # the monitor's state every CHECKPOINT_FRAMES frames of the trace, from its first, reaching back past the
        # frames kept: a late start marker rewinds it to its time and steps the kept frames up to it again
        self._checkpoints: deque[Checkpoint] = deque(maxlen=LATE_HOLD_FRAMES // CHECKPOINT_FRAMES + 2)
        self._countdown = 0  # frames to the next checkpoint
        self._fresh()
        self.late_markers = self.missing_markers = 0  # start markers that came late; rollouts ended without an end
        self._late_start = False  # the current rollout's start marker came late
        self._plain = False  # nothing but stepping to do for the next advancing frame (frame()'s fast path)
        # the valuation the fast path stepped last, while nothing else has moved the monitor since (`_replan`
        # forgets it): the same object again holds the same values, which the monitor need not read
        self._last_stepped: object = _NOT_STEPPED

    # ------------------------------------------------------------------------------------ status
    @property
    def status(self) -> InputStatus:
        return self._status

    @property
    def in_trace(self) -> bool:
        return self._in_trace

    @property
    def rollout(self) -> int:
        """Index of the current rollout (of the next one between traces)."""
        return self._index

    @property
    def late_start(self) -> bool:
        """The current rollout's start marker came after some of its frames (they are blind in it)."""
        return self._late_start

    @property
    def last_t(self) -> float | None:
        """Time of the last frame stepped, None before the first."""
        return None if self._last_t == -math.inf else self._last_t

    @property
    def backwards_from(self) -> float | None:
        """While time goes backwards: the last stepped time, which frames must pass to be stepped again."""
        return self._backwards_from

    @property
    def time_faults(self) -> int:
        """Frames dropped because their time went backwards."""
        return self._time_faults

    @property
    def lost_frames(self) -> int:
        """Frames the estimator numbered that never arrived (never stepped)."""
        return self._lost

    # ------------------------------------------------------------------------------------ inputs
    def sample(self, sample: PredicateSample, now: float) -> Step:
        """One frame as the estimator sends it, arrived at `now` on the driver's clock. A frame with the values
        and unknown predicates of the last one steps on the last one's valuation (most frames repeat them, some
        with a predicate unknown for a while, which built a valuation each): `frame` then checks it by identity,
        and replay's timeline reads it once. The grounder's read-only values, handed out again while its decisions
        repeat, are known equal by identity: no comparison."""
        values, unknown = sample.values, sample.unknown
        if values is not self._given or unknown != self._last_unknown:
            if values != self._last_values or unknown != self._last_unknown:
                valuation = self._last_valuation = sample.valuation()
                # a copy (the caller may change its dict): a known frame's valuation is one
                self._last_values, self._last_unknown = dict(values) if unknown else valuation, unknown
            self._given = values if type(values) is FrozenValues else None  # (no one changes these)
        return self.frame(self._last_valuation, sample.t, sample.frame, sample.stale, now, sample.objects)

    def frame(
        self,
        valuation: Valuation,
        t: float,
        number: int | None,
        stale: frozenset[str],
        now: float,
        objects: Mapping[str, tuple[str, ...]] = _NO_OBJECTS,
    ) -> Step:
        """`sample` in parts, for a driver that decodes in batches: `valuation` as PredicateSample.valuation()
        gives it (pass the same object for equal consecutive frames: it is checked once), the frame's time
        and number, its stale input streams, the objects its predicates are about."""
        if valuation is not self._known:
            if not self._needed <= valuation.keys():
                return self._frame(valuation, t, number, stale, now, objects)
            self._known = self._completed = valuation
        if (
            t > self._order_t
            and self._plain
            and now - self._advanced_at <= self._soonest
            and (number is None or number == self._expected)
        ):  # in a trace, fresh, in order: step it
            self._last_t = self._order_t = t
            self._advanced_at = now
            if number is not None:
                self._expected = number + 1
            valuation = self._completed
            events = self._again(t) if valuation is self._last_stepped else self._step(valuation, t)
            self._last_stepped = valuation
            self._record(t)
            self._keep(valuation)
            self._countdown -= 1
            if not self._countdown:
                self._checkpoint()
            if self._on_frame is not None:
                self._on_frame(valuation, t, stale)
            if events:
                if objects:
                    events = self._named(events, objects)
                index = self._index
                self._events.extend(events)
                return Step(tuple([RolloutEvent(index, e) for e in events]))
            return NOTHING
        return self._frame(valuation, t, number, stale, now, objects)

    def marker(self, marker: EpisodeMarker, now: float) -> Step:
        """An episode marker, arrived at `now`."""
        out = _Collect()
        self._watch(now, out)
        if marker.kind is MarkerKind.START:
            if (
                self._in_trace
                and self._ended_t < marker.t <= self._trace_t0 + SAME_TIME_S
                and (self._start is None or marker.t > self._start.t)
            ):
                self._late(marker, now, out, cut=False)  # this trace's first frames came before it
            elif self._in_trace and self._trace_t0 + SAME_TIME_S < marker.t <= self._last_t + SAME_TIME_S:
                self._late(marker, now, out, cut=True)
            else:
                self._starts.append(marker)
        elif self._in_trace and marker.t < self._trace_t0 - SAME_TIME_S:
            pass  # an end from before this trace began (a transient-local history)
        elif self._in_trace and self._last_t >= marker.t - SAME_TIME_S:
            self._close(marker, now, out)
        else:
            self._pending_end = marker  # the trace's last frames may still be on their way
        self._replan()
        return out.step()

    def tick(self, now: float) -> Step:
        """The watchdog at `now`: drivers call it while no input arrives."""
        if now - self._advanced_at <= self._soonest:
            return NOTHING
        out = _Collect()
        self._watch(now, out)
        self._replan()
        return out.step()

    def finish(self, now: float | None = None) -> Step:
        """The input ended (at `now`, when the driver knows: a stream that stopped before it is reported
        and blind, as the watchdog would have made it): close the open trace."""
        out = _Collect()
        if now is not None:
            self._watch(now, out, ended=True)
        if self._in_trace:
            self._close(None, now, out)
        self._replan()
        return out.step()

    # ------------------------------------------------------------------------------------- rules
    def _frame(
        self,
        valuation: Valuation,
        t: float,
        number: int | None,
        stale: frozenset[str],
        now: float,
        objects: Mapping[str, tuple[str, ...]],
    ) -> Step:
        """frame() where any rule besides stepping applies."""
        out = _Collect()
        self._watch(now, out)
        end = self._pending_end
        if self._in_trace and (end is None or t <= end.t + SAME_TIME_S):  # (a due end marker closes it anyway)
            expected = self._expected
            if number == 0 and expected is not None and expected != 0:
                self._restart(t, now, out, f"frame numbers start again at 0 (after {expected - 1}): a new publisher")
            elif t < self._last_t - self._restart_s:
                self._restart(
                    t,
                    now,
                    out,
                    f"frame time {t:.6f} is {self._last_t - t:.3f} s behind the last frame "
                    f"(beyond {self._restart_s:g} s): the input restarted",
                )
        if t <= self._order_t:
            self._drop(t, out)
        else:
            self._advance(valuation, t, number, stale, now, objects, out)
        self._replan()
        return out.step()

    def _advance(
        self,
        valuation: Valuation,
        t: float,
        number: int | None,
        stale: frozenset[str],
        now: float,
        objects: Mapping[str, tuple[str, ...]],
        out: _Collect,
    ) -> None:
        self._set(InputStatus.FRESH, out)
        self._backwards_from = None
        self._repeated = False
        end = self._pending_end
        if end is not None and t > end.t + SAME_TIME_S:
            self._pending_end = None
            if self._in_trace and end.t >= self._trace_t0 - SAME_TIME_S:  # its frame never came: close
                self._close(end, now, out)
        if (
            self._in_trace
            and self._starts
            and any(self._trace_t0 + SAME_TIME_S < s.t <= t + SAME_TIME_S for s in self._starts)
        ):
            self._close(None, now, out, input_ended=True)  # a new rollout announced, this one never ended
        if not self._in_trace:
            self._begin(t)
        if number is not None:
            expected = self._expected
            if expected is not None and number != expected:
                out.issues.append(
                    StreamIssue(
                        IssueKind.FRAME_GAP,
                        STREAM,
                        t,
                        f"frame {number} where {expected} was "
                        "expected: frames lost on the way or the estimator restarted",
                    )
                )
                if number > expected:
                    self._lost += number - expected
            self._expected = number + 1
        valuation = self._complete(valuation, t, out)
        self._last_t = self._order_t = t
        self._advanced_at = now
        events = self._step(valuation, t)
        self._emit(self._named(events, objects) if events and objects else events, out)
        self._stepped(valuation, t)
        if self._on_frame is not None:
            self._on_frame(valuation, t, stale)
        end = self._pending_end
        if end is not None and t >= end.t - SAME_TIME_S:
            self._close(end, now, out)

    def _drop(self, t: float, out: _Collect) -> None:
        """A frame in a trace at or before the last stepped time: a repeated stamp, or time going back."""
        last = self._last_t
        kind = IssueKind.DUPLICATE_STAMP if t == last else IssueKind.BACKWARDS
        out.issues.append(StreamIssue(kind, STREAM, t, f"frame time {t:.6f} after {last:.6f}; message dropped"))
        if t == last:
            self._repeated = True
            return
        self._time_faults += 1
        if self._status is not InputStatus.TIME_BACKWARDS:
            self._backwards_from = last
            self._blind(out)
            self._set(InputStatus.TIME_BACKWARDS, out)

    def _watch(self, now: float, out: _Collect, ended: bool = False) -> None:
        """The watchdog and the frozen rule at `now`."""
        quiet = now - self._advanced_at
        if quiet <= self._soonest:
            return
        if self._repeated and quiet > self._frozen:
            kind, status = IssueKind.FROZEN, InputStatus.FROZEN
            what = f"the predicates' stamp stood still for {quiet:.3f} s"
        elif quiet > self._timeout:
            kind, status = (IssueKind.STREAM_STOPPED if ended else IssueKind.PREDICATES_GAP), InputStatus.STALE
            what = (
                f"the stream stopped {quiet:.3f} s before the input ended"
                if ended
                else f"no advancing predicates for {quiet:.3f} s"
            )
        else:
            return
        out.issues.append(StreamIssue(kind, STREAM, self._last_t, f"{what}; every property blind until they advance"))
        self._blind(out)
        self._set(status, out)

    def _blind(self, out: _Collect) -> None:
        """Step one frame with every predicate unknown at the last stepped time (inside a trace, once a spell)."""
        if self._advanced_at == _NEVER:
            return
        self._advanced_at = _NEVER
        if self._in_trace:
            self._step_blind(self._last_t, out)

    def _complete(self, valuation: Valuation, t: float, out: _Collect) -> Valuation:
        """The valuation with every predicate the specs read (unknown where the input lacks it)."""
        if valuation is self._known:
            return self._completed
        completed = valuation
        if not self._needed <= valuation.keys():
            if not self._unsent_reported:
                self._unsent_reported = True
                missing = ", ".join(p for p in self._predicates if p not in valuation)
                out.issues.append(
                    StreamIssue(IssueKind.UNSENT, STREAM, t, f"predicates never sent, treated as unknown: {missing}")
                )
            completed = {p: valuation.get(p) for p in self._predicates}
        self._known, self._completed = valuation, completed
        return completed

    # ---------------------------------------------------------------------------------- rollouts
    def _begin(self, t: float) -> None:
        """A trace starts at this frame: the latest start marker at or before it names it (older ones are
        spent), by time, not by arrival (a transient-local history may come after a newer marker)."""
        self._in_trace, self._trace_t0 = True, t
        starts = [s for s in self._starts if s.t <= t + SAME_TIME_S]
        self._starts = [s for s in self._starts if s.t > t + SAME_TIME_S]
        if starts:
            self._start = max(starts, key=lambda s: s.t)
            self._index = self._start.index

    def _restart(self, t: float, now: float, out: _Collect, why: str) -> None:
        """The input restarted at a frame at `t`: the trace ends here (the frame begins the next one)."""
        out.issues.append(StreamIssue(IssueKind.INPUT_RESTARTED, STREAM, t, f"{why}; a new rollout starts"))
        back = t <= self._last_t
        self._close(None, now, out, input_ended=True)
        if back:  # the old timeline is gone: its times say nothing of the new one's markers
            self._ended_t, self._last_t = -math.inf, -math.inf
            self._backwards_from = None
            if self._status is InputStatus.TIME_BACKWARDS:
                self._set(InputStatus.FRESH, out)

    def _late(self, marker: EpisodeMarker, now: float, out: _Collect, cut: bool) -> None:
        """A start marker that came after frames at or past its time were stepped (the module's rule): they are
        withdrawn from the trace they were stepped in, with their verdicts. `cut`: that trace began before the
        marker's time, and ends with its last frame before it (the monitor rewound to that frame); else it began
        at or after it and is withdrawn whole, unless it holds more frames than were kept: then it is cut too,
        before the frames kept. Either way the marker's rollout starts at its time, one blind frame for each frame
        withdrawn."""
        since = marker.t - SAME_TIME_S
        times, last, index = self._times, self._last_t, self._index
        late = 0  # the kept frames at or after the marker's time: the last ones (a trace's times never go back)
        for t in reversed(times):
            if t < since:
                break
            late += 1
        frames = self.monitor.frame
        short = late == len(times) == LATE_HOLD_FRAMES  # older frames since the marker were let go
        cut = cut and late < frames  # (a trace begun at the time of a late marker before, its frames all after)
        cut = cut or len(times) < frames  # a trace longer than the frames kept: the ones let go stay in it
        if cut:
            first = self._rewind(frames - late)
            short = short or first > frames - late
            late = frames - first
            blind = list(times)[len(times) - late :]
            withdrawn = self._withdraw_events(first, frames - 1, last, out)
            out.withdrawn = Withdrawn(index, late, len(blind))
        else:
            self.monitor.finish()  # every frame of the trace is the marker's rollout's
            blind = list(times)
            withdrawn = self._withdraw_events(0, frames - 1, last, out)
            out.withdrawn = Withdrawn(index, frames, len(blind))
            self._fresh()
        self.late_markers += 1
        out.issues.append(
            StreamIssue(
                IssueKind.LATE_MARKER,
                STREAM,
                marker.t,
                f"the start marker of rollout {marker.index} came after {late} of its frames (up to "
                f"{last:.6f}), stepped before it was known: withdrawn from the trace they were stepped in"
                + (f" with the {withdrawn} violation episode(s) they opened" if withdrawn else "")
                + ", blind in its rollout"
                + (
                    ""
                    if not short
                    else f" (only the last {late} could be withdrawn: the ones before stay in rollout {index})"
                    if cut
                    else f" (only the last {late} frame times were kept)"
                ),
            )
        )
        if cut:
            boundary = self.monitor.t
            end = self._pending_end
            if end is not None and end.t >= self._trace_t0 - SAME_TIME_S:
                self._close(end, now, out, last_t=boundary)
            else:
                self._close(None, now, out, input_ended=True, last_t=boundary)
            self._in_trace, self._trace_t0, self._order_t = True, marker.t, last
        self._start, self._index, self._late_start = marker, marker.index, True
        for t in blind:
            self._step_blind(t, out)

    def _rewind(self, first: int) -> int:
        """Rewind the monitor to the trace's frame `first`, or as near after it as the frames and checkpoints
        kept reach: the latest checkpoint at or before it, then the kept frames up to it stepped again (their
        events were reported when first stepped). Returns the frame it rewound to."""
        frames, kept = self.monitor.frame, len(self._times)
        usable = [c for c in self._checkpoints if c.frame >= frames - kept]  # from there the frames are kept
        before = [c for c in usable if c.frame <= first]
        checkpoint = before[-1] if before else usable[0]
        first = max(first, checkpoint.frame)
        self.monitor.rewind(checkpoint)
        skip = checkpoint.frame - (frames - kept)
        step = self._step
        for valuation, t in itertools.islice(zip(self._valuations, self._times), skip, skip + first - checkpoint.frame):
            step(valuation, t)
        return first

    def _withdraw_events(self, first: int, frame: int, t: float, out: _Collect) -> int:
        """Take the trace's events on its frames from `first` on out of it: they were reported, and count in no
        rollout. Each episode they opened gets one `withdrawn` event (at the last frame stepped, `frame` at `t`),
        under the rollout index it was reported with, so a reader of the event log knows it too. Returns how many."""
        events, index = self._events, self._index
        self._events = [e for e in events if e.frame < first]
        opened = [e for e in events if e.frame >= first and e.kind is EventKind.OPENED]
        out.events.extend(
            RolloutEvent(index, Event(EventKind.WITHDRAWN, e.property, e.category, frame, t, e.episode)) for e in opened
        )
        return len(opened)

    def _step_blind(self, t: float, out: _Collect) -> None:
        """Step one frame at `t` with every predicate unknown."""
        self._emit(self._step(None, t), out)
        self._stepped(None, t)
        if self._on_frame is not None:
            self._on_frame(None, t, _NO_STREAMS)

    def _close(
        self,
        end: EpisodeMarker | None,
        now: float | None,
        out: _Collect,
        input_ended: bool = False,
        last_t: float | None = None,
    ) -> None:
        """Close the trace: its end-of-trace events, then its Rollout. `input_ended`: the trace ends because its
        input restarted or a new rollout began: its open episodes that count end as `input_ended` (the too short stay
        `discarded_truncated`, so the kind alone says whether an episode counted), and a trace that had a
        start marker but no end marker is a missing_marker issue. `last_t`: its last frame's time, when that is
        not the last frame stepped (a late start marker withdrew the frames after it)."""
        last_t = self._last_t if last_t is None else last_t
        result = self.monitor.finish()
        if input_ended:
            result = replace(
                result,
                events=tuple(
                    replace(e, kind=EventKind.INPUT_ENDED) if e.kind is EventKind.UNRECOVERED_AT_END else e
                    for e in result.events
                ),
            )
            if self._start is not None:
                self.missing_markers += 1
                out.issues.append(
                    StreamIssue(
                        IssueKind.MISSING_MARKER,
                        STREAM,
                        last_t,
                        f"rollout {self._index} ended without its end marker: its open episodes closed as input_ended",
                    )
                )
        self._emit(result.events, out)
        s = self._start
        out.finished.append(
            Rollout(
                self._index,
                s.task if s else "",
                s.fault if s else "",
                s.seed if s else None,
                end.succeeded if end else None,
                result.frames,
                tuple(self._events),
                result.outcomes,
            )
        )
        self._index += 1
        self._ended_t = last_t
        self._start, self._events, self._pending_end, self._late_start = None, [], None, False
        self._fresh()
        self._in_trace, self._trace_t0, self._order_t = False, math.inf, -math.inf
        self._expected, self._repeated = None, False  # the next rollout is numbered from 0
        if self._status is InputStatus.TIME_BACKWARDS:  # time order holds inside a trace only
            self._backwards_from = None
            self._set(InputStatus.FRESH, out)
            if now is not None:
                self._advanced_at = now

    def _stepped(self, valuation: Valuation | None, t: float) -> None:
        """Keep a frame the monitor stepped, for a late start marker (`frame` does the same inline)."""
        self._record(t)
        self._keep(valuation)
        self._countdown -= 1
        if not self._countdown:
            self._checkpoint()

    def _checkpoint(self) -> None:
        self._checkpoints.append(self.monitor.checkpoint())
        self._countdown = CHECKPOINT_FRAMES

    def _fresh(self) -> None:
        """The monitor starts a trace: nothing of the last one is kept."""
        self._times.clear()
        self._valuations.clear()
        self._checkpoints.clear()
        self._checkpoint()

    def _named(self, events: Sequence[Event], objects: Mapping[str, tuple[str, ...]]) -> list[Event]:
        """Opened events with the objects their property's predicates were about on this frame."""
        out = []
        for e in events:
            if e.kind is EventKind.OPENED:
                names = tuple(dict.fromkeys(n for a in self._atoms[e.property] for n in objects.get(a, ())))
                if names:
                    e = replace(e, objects=names)
            out.append(e)
        return out

    def _emit(self, events, out: _Collect) -> None:
        if events:
            self._events.extend(events)
            index = self._index
            out.events.extend([RolloutEvent(index, e) for e in events])

    def _set(self, status: InputStatus, out: _Collect) -> None:
        if status is not self._status:
            out.was, self._status = self._status, status
            out.status = status

    def _replan(self) -> None:
        self._last_stepped = _NOT_STEPPED  # every path but the fast one ends here, and may have moved the monitor
        self._plain = (
            self._status is InputStatus.FRESH
            and self._in_trace
            and self._pending_end is None
            and not self._repeated
            and not any(s.t > self._trace_t0 + SAME_TIME_S for s in self._starts)
        )
