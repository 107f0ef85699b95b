"""The live spec-set monitor: one call per frame steps every property, cheaply when little changes.

A frame is read once into a tuple in a fixed predicate order and, when it differs from the previous
frame, packed into one integer (a byte per predicate); each property's letter is then a dictionary
look-up of that integer masked to its own predicates. A property whose letter did not change and whose
state loops on that letter with no event is skipped, so a frame equal to the previous one costs one
tuple comparison when every property is at such a self-loop.
"""
from __future__ import annotations

import operator
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from pathlib import Path

import numpy as np

from safety_monitor.errors import SourceError, SpecError
from safety_monitor.monitor.automaton import EPISODE, MonitorAutomaton, build_automaton
from safety_monitor.monitor.episodes import EpisodeLedger, TraceResult
from safety_monitor.monitor.events import Event

DEFAULT_HISTORY = 2000  # frames of predicate values kept for counterexamples
_NO_EVENTS: tuple = ()


def automata_for(compiled: Iterable) -> list[MonitorAutomaton]:
    """Build the combined automaton of every CompiledProperty (spec order)."""
    return [build_automaton(c) for c in compiled]


def load_automata(path: str | Path) -> tuple[tuple[str, ...], list[MonitorAutomaton]]:
    """Load, validate and compile a spec file: (its predicate vocabulary, one automaton per property)."""
    from safety_monitor.spec.model import compile_specs, load_specs

    spec_set = load_specs(path)
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


class SpecSetMonitor:
    """Steps every property of a spec set once per frame and reports events as they happen.

    `step(frame, t)` takes a mapping predicate -> bool (None = unknown), or None for a frame on which
    every input is blind; frames are numbered 0, 1, ... in call order. `finish()` closes the trace and
    returns its TraceResult; `reset()` (or `finish()`) readies the monitor for the next rollout.
    """

    def __init__(self, automata: Sequence[MonitorAutomaton], predicates: Sequence[str] | None = None,
                 *, history: int = DEFAULT_HISTORY) -> None:
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
        self._ones = sum(1 << (8 * i) for i in range(len(preds)))
        self._all_unknown = self._ones
        self._positions = [tuple(position[a] for a in auto.atoms) for auto in self.automata]
        self._pickers = [_picker(pos) for pos in self._positions]
        self._sel, self._lut, self._width = [], [], []
        self._nxt, self._code, self._stat, self._rest, self._trig, self._blind = [], [], [], [], [], []
        for auto, pos in zip(self.automata, self._positions):
            width = auto.next.shape[1]  # letters + the blind letter
            sel = sum(1 << (8 * p) for p in pos)
            keys = [0]  # keys[letter] = the frame mask restricted to this property's predicates
            for p in pos:
                keys += [k | (1 << (8 * p)) for k in keys]
            self._sel.append(sel)
            self._lut.append({k: letter for letter, k in enumerate(keys)})
            self._width.append(width)
            nxt = (auto.next.astype(np.int64) * width).ravel()
            rows = np.repeat(np.arange(auto.n_states) * width, width)
            self._nxt.append(nxt.tolist())
            episode_code = auto.code.ravel() & EPISODE
            self._code.append(episode_code.tolist())
            # stays[row + a]: stepping letter a from this state loops silently
            self._stat.append(((nxt == rows) & (episode_code == 0)).tolist())
            rest = np.zeros(nxt.size, dtype=bool)
            rest[np.arange(auto.n_states) * width] = auto.rest
            self._rest.append(rest.tolist())
            self._trig.append(auto.trigger_value.tolist())
            self._blind.append(auto.blind)
        self.reset()

    @classmethod
    def from_compiled(cls, compiled: Iterable, predicates: Sequence[str] | None = None,
                      *, history: int = DEFAULT_HISTORY) -> SpecSetMonitor:
        return cls(automata_for(compiled), predicates, history=history)

    @classmethod
    def from_spec_file(cls, path: str | Path, *, history: int = DEFAULT_HISTORY) -> SpecSetMonitor:
        predicates, automata = load_automata(path)
        return cls(automata, predicates, history=history)

    @property
    def frame(self) -> int:
        """Index the next frame will get."""
        return self._i

    def reset(self) -> None:
        """Forget the trace so far: the next frame is frame 0 of a new rollout."""
        n = len(self.automata)
        self._i = 0
        self._last_values: object = _NEVER
        self._mask = 0
        self._unknown = 0
        self._rows = [0] * n
        self._letters = [-1] * n
        self._stationary = [False] * n
        self._active = list(range(n))
        self._trig_last = [False] * n
        self._edges = [0] * n
        self._since_rest = [0] * n
        self._last_edge: list[int | None] = [None] * n
        self._ledgers = [EpisodeLedger(a, self.history) for a in self.automata]
        self._ring: deque = deque(maxlen=self.history)
        self._times: deque = deque(maxlen=self.history)
        self._t: float | None = None

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
                raise SpecError(f"frame {i}: expected a mapping predicate -> bool, got {type(frame).__name__}") from None
        if values == self._last_values:
            self._i, self._t = i + 1, t
            self._times.append(t)
            self._ring.append(self._last_values)
            if not self._active:
                return _NO_EVENTS
            todo = list(self._active)
            new = self._letters
        else:
            mask, unknown = (0, self._all_unknown) if values is None else self._encode(values, i)
            self._i, self._t = i + 1, t
            self._times.append(t)
            self._ring.append(values)
            self._last_values = values
            changed = (mask ^ self._mask) | (unknown ^ self._unknown)
            self._mask, self._unknown = mask, unknown
            sel, stat = self._sel, self._stationary
            todo = [j for j in range(len(sel)) if (changed & sel[j]) or not stat[j]]
            if not todo:
                return _NO_EVENTS
            lut, blind = self._lut, self._blind
            new = {j: (blind[j] if unknown & sel[j] else lut[j][mask & sel[j]]) for j in todo}
        return self._advance(todo, new, i, t)

    def _advance(self, todo: list[int], new, i: int, t: float | None) -> list[Event]:
        events: list[Event] = []
        letters, rows, stat = self._letters, self._rows, self._stationary
        flipped = False
        for j in todo:
            a = new[j]
            if a != letters[j]:
                prev = letters[j]
                letters[j] = a
                if a == self._blind[j]:
                    events.append(self._ledgers[j].blind(i, t))
                    if not stat[j]:
                        stat[j] = flipped = True
                    continue
                if prev == self._blind[j]:
                    events.append(self._ledgers[j].seeing(i, t))
                tv = self._trig[j][a]
                if tv != self._trig_last[j]:
                    self._trig_last[j] = tv
                    if tv:
                        self._edges[j] += 1
                        self._since_rest[j] += 1
                        self._last_edge[j] = i
            row = rows[j]
            k = row + a
            nrow = self._nxt[j][k]
            rows[j] = nrow
            c = self._code[j][k]
            if c:
                events.extend(self._ledgers[j].on_code(
                    i, t, c, row // self._width[j], a, self._last_edge[j],
                    lambda first, last, _j=j: self._window(_j, first, last)))
            if self._since_rest[j] and self._rest[j][nrow]:
                self._since_rest[j] = 0
            s = self._stat[j][nrow + a]
            if s != stat[j]:
                stat[j] = s
                flipped = True
        if flipped:
            self._active = [j for j in range(len(stat)) if not stat[j]]
        return events

    def finish(self) -> TraceResult:
        """End the trace: close or discard open episodes, return the trace's result, then reset."""
        frames, t = self._i, self._t
        events: list[Event] = []
        outcomes = []
        for j, ledger in enumerate(self._ledgers):
            end_events, outcome = ledger.finish(frames, t, self._edges[j], self._since_rest[j])
            events.extend(end_events)
            outcomes.append(outcome)
        result = TraceResult(frames, tuple(outcomes), tuple(events))
        self.reset()
        return result

    def run(self, frames: Iterable[Mapping[str, object] | None], times: Iterable[float | None] | None = None) -> TraceResult:
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

    def _encode(self, values: tuple, i: int) -> tuple[int, int]:
        """(byte-per-predicate mask of true values, mask of unknown ones); bad values are a SpecError."""
        try:
            mask = int.from_bytes(bytes(values), "little")
            if not mask & ~self._ones:
                return mask, 0
        except (TypeError, ValueError):
            pass
        mask = unknown = 0
        for k, v in enumerate(values):
            if v is None:
                unknown |= 1 << (8 * k)
            elif isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and v in (0, 1)):
                if v:
                    mask |= 1 << (8 * k)
            else:
                raise SpecError(f"frame {i}: predicate {self.predicates[k]!r} has value {v!r}; expected true, false or None (unknown)")
        return mask, unknown

    def _window(self, j: int, first: int, last: int) -> tuple[list, list]:
        """Property j's values on frames first..last (last = the current frame), newest read first."""
        count = last - first + 1
        if count > len(self._ring) or last != self._i - 1:
            raise SourceError(f"frames {first}..{last} are outside the monitor's history of {self.history} frames")
        pick, unknown = self._pickers[j], (None,) * len(self._positions[j])
        rows: list = []
        prev, row = _NEVER, None
        for v in islice(reversed(self._ring), count):
            if v is not prev:  # unchanged frames share one tuple: decode each once
                prev = v
                row = unknown if v is None else pick(v)
                row = unknown if None in row else tuple(map(bool, row))  # blind: every value unknown
            rows.append(row)
        rows.reverse()
        times = list(islice(reversed(self._times), count))
        times.reverse()
        return rows, times


def _picker(positions: tuple[int, ...]):
    """A property's values out of a frame tuple, always as a tuple."""
    if len(positions) == 1:
        return lambda values, _p=positions[0]: (values[_p],)
    if not positions:
        return lambda values: ()
    return operator.itemgetter(*positions)


class _Never:
    """Compares unequal to every frame, so the first frame is always decoded."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = None


_NEVER = _Never()
