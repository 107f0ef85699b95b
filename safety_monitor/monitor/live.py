"""The live spec-set monitor: one call per frame steps every property at once.

Each property's combined automaton (automaton.py) is widened so that one table entry says everything a
frame can cause: its state also remembers the trigger's last value (a rising edge is a transition flag).
The properties' tables lie end to end in one flat table, so a changed frame costs its predicate values
packed into bytes, every property's letter from one small matrix product, and two gathers (next states,
flags); Python then visits only the properties with a flag set. A frame equal to the previous one costs
a tuple comparison when every property sits on a silent self-loop.
A property that reads an unknown predicate steps its set of states over every completion instead
(completions.py, memoised per set and frame), from then until the set is one state again and its
verdict is no longer blind; the other properties keep the tables.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from pathlib import Path

import numpy as np

from safety_monitor.errors import SpecError
from safety_monitor.monitor.automaton import EPISODE, RUN_START, MonitorAutomaton, build_automaton
from safety_monitor.monitor.completions import UNKNOWN_TRIGGER
from safety_monitor.monitor.episodes import EpisodeLedger, TraceResult
from safety_monitor.monitor.events import Event
from safety_monitor.settings import DEFAULT_HISTORY

_NO_EVENTS: tuple = ()
# transition flags beyond the automaton's codes (RECOVERED, OPENED, CLOSED_AT_ONCE, RUN_START)
RISE = 16  # the trigger rose on this frame
BLIND = 32  # the property's verdict became unknown (set steps only)
SEEING = 64  # it is known again (set steps only)
MOVES = 128  # the same letter again would not be a silent self-loop
# flags -> (moves, run start, rise, sight: 0, BLIND or SEEING, episode code): tuple unpacking beats bit
# tests in CPython
_SPLIT = [(bool(f & MOVES), bool(f & RUN_START), bool(f & RISE), f & (BLIND | SEEING), f & EPISODE) for f in range(256)]


def automata_for(compiled: Iterable) -> list[MonitorAutomaton]:
    """Build the combined automaton of every CompiledProperty (spec order)."""
    return [build_automaton(c) for c in compiled]


def load_automata(
    path: str | Path, control_rate_hz: float | None = None
) -> tuple[tuple[str, ...], list[MonitorAutomaton]]:
    """Load, validate and compile a spec file: (its predicate vocabulary, one automaton per property).

    With `control_rate_hz`, spans a spec gives in seconds (`min_resolve_s`) become frames at that rate.
    """
    from safety_monitor.specs.model import compile_specs, load_specs

    spec_set = load_specs(path).at_rate(control_rate_hz)
    return spec_set.predicates, automata_for(compile_specs(spec_set))


def predicate_order(automata: Sequence[MonitorAutomaton], predicates: Sequence[str] | None) -> tuple[str, ...]:
    """The predicates a frame must provide: those the properties read, in vocabulary order if given."""
    used = sorted({a for auto in automata for a in auto.atoms})
    if predicates is None:
        return tuple(used)
    missing = [a for a in used if a not in predicates]
    if missing:
        raise SpecError(f"properties read predicates missing from the vocabulary: {', '.join(missing)}")
    keep = set(used)
    return tuple(p for p in predicates if p in keep)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A SpecSetMonitor's state after `frame` frames of its trace (`SpecSetMonitor.checkpoint`)."""

    frame: int
    state: tuple


class SpecSetMonitor:
    """Steps every property of a spec set once per frame and reports events as they happen.

    `step(frame, t)` takes a mapping predicate -> bool (None = unknown), or None for a frame on which
    every input is blind; frames are numbered 0, 1, ... in call order. `finish()` closes the trace and
    returns its TraceResult; `reset()` (or `finish()`) readies the monitor for the next rollout.
    """

    # Its attributes in slots: Python 3.11 keeps an instance's attributes inline (read fast) only up to 29 names a
    # class, past that every read goes through the dict (a thousand instructions a frame). `__dict__`: other attributes still allowed.
    __slots__ = (
        "__dict__",
        "_all_unknown",
        "_blind",
        "_completions",
        "_edges",
        "_edges_left",
        "_flags",
        "_get",
        "_i",
        "_last_edge",
        "_last_values",
        "_ledgers",
        "_letters",
        "_log",
        "_log_base",
        "_log_size",
        "_log_times",
        "_n_atoms",
        "_n_sets",
        "_next",
        "_offsets",
        "_order",
        "_rest_rows",
        "_rows",
        "_sets",
        "_start",
        "_state_of",
        "_still",
        "_t",
        "_trigger_held",
        "_unknown",
        "_weights",
        "_widths",
        "_windows",
        "automata",
        "history",
        "predicates",
    )

    def __init__(
        self,
        automata: Sequence[MonitorAutomaton],
        predicates: Sequence[str] | None = None,
        *,
        history: int = DEFAULT_HISTORY,
    ) -> None:
        if history < 1:
            raise ValueError("history must be at least one frame")
        names = [a.name for a in automata]
        if len(set(names)) != len(names):
            raise SpecError(f"duplicate property names: {names}")
        self.automata = tuple(automata)
        self.predicates = predicate_order(self.automata, predicates)
        self.history = history
        preds = self.predicates
        position = {p: i for i, p in enumerate(preds)}
        self._get = operator.itemgetter(*preds) if len(preds) > 1 else (lambda f, _p=preds[0]: (f[_p],))
        positions = [tuple(position[a] for a in auto.atoms) for auto in self.automata]
        # letters = frame bytes @ weights: predicate p adds 2**k to the letter of a property whose k-th atom it is
        self._weights = np.zeros((len(preds), len(self.automata)))
        for j, pos in enumerate(positions):
            self._weights[list(pos), j] = 1 << np.arange(len(pos))
        self._all_unknown = [(1 << len(a.atoms)) - 1 for a in self.automata]
        self._n_atoms = [len(a.atoms) for a in self.automata]
        self._completions = [a.completions for a in self.automata]
        self._windows = [self._window_of(pos) for pos in positions]
        self._log_size = 2 * history
        self._next, self._flags, self._start, self._state_of, self._rest_rows = _widened_tables(self.automata)
        self._offsets = self._start.tolist()
        self._widths = [a.next.shape[1] for a in self.automata]
        self._order = range(len(self.automata))
        self.reset()

    @classmethod
    def from_compiled(
        cls, compiled: Iterable, predicates: Sequence[str] | None = None, *, history: int = DEFAULT_HISTORY
    ) -> SpecSetMonitor:
        return cls(automata_for(compiled), predicates, history=history)

    @classmethod
    def from_spec_file(
        cls, path: str | Path, *, history: int = DEFAULT_HISTORY, control_rate_hz: float | None = None
    ) -> SpecSetMonitor:
        predicates, automata = load_automata(path, control_rate_hz)
        return cls(automata, predicates, history=history)

    @property
    def frame(self) -> int:
        """Index the next frame will get."""
        return self._i

    @property
    def t(self) -> float | None:
        """The time of the last frame stepped (None: none yet, or stepped without times)."""
        return self._t

    def reset(self) -> None:
        """Forget the trace so far: the next frame is frame 0 of a new rollout."""
        n = len(self.automata)
        self._i = 0
        self._last_values: object = _NEVER
        self._letters = np.zeros(n, dtype=np.intp)
        self._unknown: list[int] | None = None  # per property, its unknown atoms' bits (None: all known)
        self._rows = self._start
        self._sets: list[int | None] = [None] * n  # state set id of a property stepping sets, else None
        self._n_sets = 0
        self._trigger_held = [0] * n  # the trigger's last known value, while stepping sets
        self._blind = [False] * n  # its verdict is unknown (only while stepping sets)
        self._still = False  # every property on a silent self-loop of its current letter
        self._edges = [0] * n  # trigger rising edges so far
        self._last_edge: list[int | None] = [None] * n
        self._edges_left = [0] * n  # edges before the main DFA's current run started
        self._ledgers = [EpisodeLedger(a, self.history, w) for a, w in zip(self.automata, self._windows)]
        # the last frames' value tuples and times, from frame self._log_base on: captured counterexample
        # windows refer to these lists, so they only ever grow, and are replaced (not cut) when full;
        # a deferred counterexample thus keeps at most 2 * history frames alive
        self._log: list = []
        self._log_times: list = []
        self._log_base = 0
        self._t: float | None = None

    def checkpoint(self) -> Checkpoint:
        """The state after the frames stepped so far, to `rewind` to: for a driver that may have to end the trace
        before its last frames (the Supervisor, when a late start marker takes them out of it). Costs the number of
        properties, not the trace's length: the lists that only grow are kept as their lengths."""
        return Checkpoint(
            self._i,
            (
                self._t,
                self._last_values,
                self._letters,
                self._unknown,
                self._rows,
                list(self._sets),
                self._n_sets,
                list(self._trigger_held),
                list(self._blind),
                self._still,
                list(self._edges),
                list(self._last_edge),
                list(self._edges_left),
                [ledger.checkpoint() for ledger in self._ledgers],
                self._log,
                self._log_times,
                len(self._log),
                self._log_base,
            ),
        )

    def rewind(self, checkpoint: Checkpoint) -> None:
        """Back to `checkpoint`, taken in this trace: the frames stepped since are forgotten (the events they
        produced are the caller's), and checkpoints taken after it are spent. The frame log is copied, never cut:
        counterexamples reported already read it."""
        (
            self._t,
            self._last_values,
            self._letters,
            self._unknown,
            self._rows,
            sets,
            self._n_sets,
            held,
            blind,
            self._still,
            edges,
            last_edge,
            edges_left,
            ledgers,
            log,
            log_times,
            logged,
            self._log_base,
        ) = checkpoint.state
        self._i = checkpoint.frame
        self._sets, self._trigger_held, self._blind = list(sets), list(held), list(blind)
        self._edges, self._last_edge, self._edges_left = list(edges), list(last_edge), list(edges_left)
        for ledger, state in zip(self._ledgers, ledgers):
            ledger.rewind(state)
        self._log, self._log_times = log[:logged], log_times[:logged]

    def step(self, frame: Mapping[str, object] | None, t: float | None = None) -> Sequence[Event]:
        """Advance every property by one frame; returns this frame's events (often none)."""
        i = self._i
        if frame is None:
            values = None
        else:
            try:
                values = self._get(frame)
            except KeyError as exc:
                raise SpecError(f"frame {i}: no value for predicate {exc.args[0]!r}") from None
            except TypeError:
                raise SpecError(
                    f"frame {i}: expected a mapping predicate -> bool, got {type(frame).__name__}"
                ) from None
        if values == self._last_values:
            return self.step_again(t)
        letters, unknown = self._letters_of(values, i)  # a bad frame raises here, before anything moves
        self._log_frame(i, t, values)
        self._last_values, self._letters, self._unknown = values, letters, unknown
        return self._move(letters, unknown, i, t)

    def step_again(self, t: float | None = None) -> Sequence[Event]:
        """`step` on a frame with the last frame's values, which the caller knows (it passes the same valuation
        again, as the Supervisor does for equal frames): nothing to read or compare. Most frames repeat the last
        one's values, and reading a frame's predicates is most of a step's cost. Needs a frame stepped since
        `reset` (or `rewind`)."""
        i = self._i
        self._log_frame(i, t, self._last_values)  # one shared tuple logged per run of equal frames
        if self._still:
            return _NO_EVENTS
        return self._move(self._letters, self._unknown, i, t)

    def _log_frame(self, i: int, t: float | None, values: object) -> None:
        self._i, self._t = i + 1, t
        if i - self._log_base == self._log_size:  # full: carry the last `history` frames to new lists
            self._log, self._log_times = self._log[-self.history :], self._log_times[-self.history :]
            self._log_base = i - self.history
        self._log.append(values)
        self._log_times.append(t)

    def _move(self, letters: np.ndarray, unknown: list[int] | None, i: int, t: float | None) -> Sequence[Event]:
        """Every property's transition on this frame's `letters`: its events."""
        if unknown is not None or self._n_sets:
            return self._step_sets(letters, unknown, i, t)
        before = self._rows
        idx = before + letters
        self._rows = self._next[idx]
        flags = self._flags[idx].tolist()
        if not any(flags):
            self._still = True
            return _NO_EVENTS
        return self._react(flags, before, letters, i, t)

    def _react(
        self,
        flags: list[int],
        before: np.ndarray,
        letters: np.ndarray,
        i: int,
        t: float | None,
        decoded: tuple[list[int], list[int]] | None = None,
    ) -> list[Event]:
        """Events and trigger bookkeeping of the properties whose transition carried a flag. `decoded`
        (rows before, letters), listed on the first code unless given: a property that stepped its
        set has row -1 - j there, which `_state_of` maps to its set id, and its partial letter."""
        out: list[Event] = []
        edges, last_edge, edges_left, ledgers = self._edges, self._last_edge, self._edges_left, self._ledgers
        still = True
        for j in compress(self._order, flags):
            moves, run_start, rise, sight, code = _SPLIT[flags[j]]
            if moves:
                still = False
            if run_start:  # before this frame's rise: an edge on a restart frame belongs to the new run
                edges_left[j] = edges[j]
            if rise:
                edges[j] += 1
                last_edge[j] = i
            if sight:
                out.append(ledgers[j].blind(i, t) if sight == BLIND else ledgers[j].seeing(i, t))
            if code:
                if decoded is None:
                    decoded = before.tolist(), letters.tolist()
                rows, steps = decoded
                t_before = self._log_times[-2] if i else None  # the log holds this frame and the one before
                ledgers[j].on_code(out, i, t, code, self._state_of[rows[j]], steps[j], last_edge[j], t_before)
        self._still = still
        return out

    def _step_sets(self, letters: np.ndarray, unknown: list[int] | None, i: int, t: float | None) -> Sequence[Event]:
        """A frame on which some property reads an unknown predicate or steps a state set: those step
        their sets (and leave that mode once back on one state, not blind); the rest step the tables."""
        before = self._rows
        idx = before + letters
        rows = self._next[idx]
        flags = self._flags[idx].tolist()
        sets, held, blinds = self._sets, self._trigger_held, self._blind
        listed: tuple[list[int], list[int]] | None = None
        for j in self._order:
            u = unknown[j] if unknown is not None else 0
            sid = sets[j]
            if sid is None and not u:
                continue
            if listed is None:
                listed = before.tolist(), letters.tolist()
            if sid is None:  # enter set mode from the table row
                u_row = (listed[0][j] - self._offsets[j]) // self._widths[j]
                sid, held[j] = u_row // 2, u_row % 2
                self._n_sets += 1
            plet = listed[1][j] | (u << self._n_atoms[j])
            listed[0][j], listed[1][j] = -1 - j, plet  # what _react reads for an opening's counterexample
            self._state_of[-1 - j] = sid
            nxt, code, blind, value = self._completions[j].step(sid, plet)
            trig = held[j]
            f = code | (RISE if value == 1 and trig == 0 else 0) | (0 if nxt == sid and not code else MOVES)
            if blind != blinds[j]:
                f |= BLIND if blind else SEEING
                blinds[j] = blind
            if value != UNKNOWN_TRIGGER:
                held[j] = trig = value
            flags[j] = f
            if nxt < self.automata[j].n_states and not blind:  # one state, verdict known: back to the table
                rows[j] = self._offsets[j] + (2 * nxt + trig) * self._widths[j]
                sets[j] = None
                self._n_sets -= 1
            else:
                sets[j] = nxt
        self._rows = rows
        if not any(flags):
            self._still = True
            return _NO_EVENTS
        return self._react(flags, before, letters, i, t, listed)

    def finish(self) -> TraceResult:
        """End the trace: close or discard open episodes, return the trace's result, then reset."""
        frames, t = self._i, self._t
        events: list[Event] = []
        outcomes = []
        for j, (ledger, row) in enumerate(zip(self._ledgers, self._rows.tolist())):
            sid = self._sets[j]
            at_rest = row in self._rest_rows if sid is None else self._completions[j].at_rest(sid)
            run_edges = 0 if at_rest else self._edges[j] - self._edges_left[j]
            end_events, outcome = ledger.finish(frames, t, self._edges[j], run_edges)
            events.extend(end_events)
            outcomes.append(outcome)
        result = TraceResult(frames, tuple(outcomes), tuple(events))
        self.reset()
        return result

    def run(
        self, frames: Iterable[Mapping[str, object] | None], times: Iterable[float | None] | None = None
    ) -> TraceResult:
        """Step a whole trace frame by frame (the reference path) and finish it; events included."""
        frames = list(frames)
        times = [None] * len(frames) if times is None else list(times)
        if len(times) != len(frames):
            raise ValueError(f"{len(times)} times for {len(frames)} frames")
        collected: list[Event] = []
        for frame, t in zip(frames, times):
            collected.extend(self.step(frame, t))
        result = self.finish()
        return TraceResult(result.frames, result.outcomes, tuple(collected) + result.events)

    def _letters_of(self, values: tuple | None, i: int) -> tuple[np.ndarray, list[int] | None]:
        """Every property's letter (unknown atoms' bits 0) and, if any predicate is unknown, every
        property's unknown atoms as bits."""
        if values is None:
            return np.zeros(len(self.automata), dtype=np.intp), self._all_unknown
        try:
            packed = bytes(values)
        except (TypeError, ValueError):  # an unknown (None) or a value that is no bool
            packed = None
        if packed is not None and not packed.translate(None, b"\0\1"):  # all bools (or 0/1): fast path
            return np.dot(np.frombuffer(packed, np.uint8), self._weights).astype(np.intp), None
        mask, unknown = self._encode(values, i)
        letters = (np.frombuffer(mask.to_bytes(len(values), "little"), np.uint8) @ self._weights).astype(np.intp)
        if not unknown:
            return letters, None
        bits = np.frombuffer(unknown.to_bytes(len(values), "little"), np.uint8) @ self._weights
        return letters, bits.astype(np.intp).tolist()

    def _encode(self, values: tuple, i: int) -> tuple[int, int]:
        """(byte-per-predicate mask of true values, mask of unknown ones); bad values are a SpecError."""
        mask = unknown = 0
        for k, v in enumerate(values):
            if v is None:
                unknown |= 1 << (8 * k)
            elif isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and v in (0, 1)):
                if v:
                    mask |= 1 << (8 * k)
            else:
                raise SpecError(
                    f"frame {i}: predicate {self.predicates[k]!r} has value {v!r}; expected true, false or None (unknown)"
                )
        return mask, unknown

    def _window_of(self, positions: tuple[int, ...]):
        """Property's counterexample window (episodes.Window): references to the log lists, which are
        never overwritten, so capturing costs no copy; decoded only if the counterexample is read."""
        pick, n_atoms = _picker(positions), len(positions)

        def window(first: int, last: int) -> tuple:
            base = self._log_base
            return _decode_rows, pick, n_atoms, self._log, self._log_times, first - base, last + 1 - base

        return window


def _widened_tables(automata: Sequence[MonitorAutomaton]):
    """Every property's automaton widened with the trigger's last value and laid in one flat table.

    Widened state u = 2 * state + trigger; entry `offset + u * width + letter` holds the next entry's
    row (offset + u' * width) and the transition's flags. Returns (next rows, flags, each property's
    initial row, row -> automaton state, rows whose state is at rest).
    """
    sizes = [2 * a.n_states * a.next.shape[1] for a in automata]
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.intp)
    total = int(sum(sizes))
    nxt = np.empty(total, dtype=np.int32 if total < 2**31 else np.int64)
    flags = np.empty(total, dtype=np.uint8)
    state_of: dict[int, int] = {}
    rest_rows: set[int] = set()
    for auto, off, size in zip(automata, offsets.tolist(), sizes):
        n, width = auto.next.shape
        pad = width - 1
        states = np.arange(n)
        to = auto.next[:, :pad].astype(np.intp)  # (state, letter)
        tv = auto.trigger_value.astype(np.intp)  # trigger value per letter
        silent = (auto.next == states[:, None]) & ((auto.code & EPISODE) == 0)
        moves = np.where(silent[to, np.arange(pad)], 0, MOVES)
        nx = np.empty((n, 2, width), dtype=np.intp)
        fl = np.empty((n, 2, width), dtype=np.intp)
        for trig in (0, 1):
            nx[:, trig, :pad] = 2 * to + tv
            fl[:, trig, :pad] = auto.code[:, :pad] | moves | np.where(tv > trig, RISE, 0)
            nx[:, trig, pad] = 2 * states + trig  # the pad letter: never read live
            fl[:, trig, pad] = 0
        nxt[off : off + size] = (off + nx * width).ravel()
        flags[off : off + size] = fl.ravel()
        for u in range(2 * n):
            state_of[off + u * width] = u // 2
            if auto.rest[u // 2]:
                rest_rows.add(off + u * width)
    nxt.setflags(write=False)
    flags.setflags(write=False)
    return nxt, flags, offsets, state_of, rest_rows


def _decode_rows(pick, n_atoms: int, log: list, log_times: list, lo: int, hi: int) -> tuple[list, list]:
    """A property's values on log entries lo..hi-1 (None where unknown), and their times."""
    unknown = (None,) * n_atoms
    rows: list = []
    prev, row = _NEVER, None
    for v in log[lo:hi]:
        if v is not prev:  # unchanged frames share one tuple: decode each once
            prev = v
            row = unknown if v is None else pick(v)
            row = tuple(map(bool, row)) if None not in row else tuple(x if x is None else bool(x) for x in row)
        rows.append(row)
    return rows, log_times[lo:hi]


def _picker(positions: tuple[int, ...]):
    """A property's values out of a frame tuple, always as a tuple."""
    if len(positions) == 1:
        return lambda values, _p=positions[0]: (values[_p],)
    if not positions:
        return lambda values: ()
    return operator.itemgetter(*positions)


class _Never:
    """Compares unequal to every frame, so the first frame is always decoded (unhashable: __eq__ alone)."""

    def __eq__(self, other: object) -> bool:
        return False


_NEVER = _Never()
