"""Whole-trace monitoring with numpy, giving exactly the live monitor's results, much faster.

Runs: repeating one letter drives a property automaton onto a cycle within `tail` steps, so a run
longer than tail + 2 * period is replaced by an equivalent shorter one (same final state; events on its
repeating part are copied to every period). A trace whose frames rarely change is read as runs from the
start, so its cost follows the number of changes, not of frames.
Chunked scan: the serial state recurrence is computed for all properties and all chunks of a block at
once, from every possible start state, until each chunk has forgotten its start (all start states meet,
which monitor automata do within a few random letters); the chunks are then chained and the earlier
steps read off. Automata that do not synchronise fall back to a classic two-pass scan.
Only event frames are handled in Python, and the properties that read an unknown predicate somewhere
in the trace: those step their state sets frame by frame (completions.py, memoised), skipping each run
of equal frames once it is a silent self-loop.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np

from safety_monitor.errors import SpecError
from safety_monitor.monitor import automaton as codes
from safety_monitor.monitor.automaton import MonitorAutomaton
from safety_monitor.monitor.completions import UNKNOWN_TRIGGER
from safety_monitor.monitor.episodes import EpisodeLedger, PropertyOutcome, TraceResult
from safety_monitor.monitor.events import Event
from safety_monitor.monitor.live import predicate_order
from safety_monitor.settings import DEFAULT_HISTORY

_BLOCK = 1 << 16  # compressed frames per scan block (bounds memory)
_CHUNK = 128  # steps per chunk inside a block
_SYNC_CHECK = 8  # test whether every chunk forgot its start state every this many steps (0: never)
_SYNC_GIVE_UP = 64  # ... and stop hoping after this many
_SPARSE = 8  # a trace with fewer than frames / _SPARSE changes is read as runs


class BatchMonitor:
    """Runs whole traces through a spec set's automata; same events and outcomes as SpecSetMonitor."""

    def __init__(
        self,
        automata: Sequence[MonitorAutomaton],
        predicates: Sequence[str] | None = None,
        *,
        history: int = DEFAULT_HISTORY,
    ) -> None:
        if history < 1:
            raise ValueError("history must be at least one frame")
        self.automata = tuple(automata)
        self.predicates = predicate_order(self.automata, predicates)
        self.history = history
        index = {p: i for i, p in enumerate(self.predicates)}
        self._columns = [[index[a] for a in auto.atoms] for auto in self.automata]
        self._byte_luts = [_byte_luts(cols) for cols in self._columns]
        # One flat table for all properties: a state is its row offset (global state id * width).
        width = max(a.next.shape[1] for a in self.automata)
        sizes = [a.n_states for a in self.automata]
        self._offset = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        total = int(sum(sizes))
        nxt = np.empty((total, width), dtype=np.int64)
        code = np.zeros((total, width), dtype=np.uint8)
        for auto, off in zip(self.automata, self._offset):
            n, w = auto.next.shape
            block = np.repeat(np.arange(n)[:, None], width, axis=1)  # extra columns: identity, like pad
            block[:, :w] = auto.next
            nxt[off : off + n] = block + off
            code[off : off + n, :w] = auto.code
        self._width = width
        self._next_row = (nxt * width).ravel()
        self._code = code.ravel()
        smax = max(sizes)
        self._starts = np.array(
            [[(off + min(s, n - 1)) * width for s in range(smax)] for off, n in zip(self._offset, sizes)],
            dtype=np.int64,
        )
        self._local = np.concatenate([np.arange(n) for n in sizes])  # global state -> its local index

    # ----- inputs -------------------------------------------------------------------------------
    def letters(self, values: np.ndarray, known: np.ndarray | None = None) -> list[np.ndarray]:
        """Per-property letters from a frames x predicates bool matrix (columns in `self.predicates`
        order); `known` (frames, or frames x predicates, bool) marks unknown values, which make partial
        letters (completions.py)."""
        values, known = self._check(values, known)
        unknown = None if known is None else (~known if known.ndim == 1 else _pack(~known))
        return self._letters_of_packed(_pack(values), unknown)

    def run_matrix(
        self,
        values: np.ndarray,
        known: np.ndarray | None = None,
        times: Sequence[float] | None = None,
        *,
        events: bool = True,
    ) -> TraceResult:
        values, known = self._check(values, known)
        frames = values.shape[0]
        if frames == 0:
            return self._empty()
        packed = _pack(values)
        unknown = None if known is None else (~known if known.ndim == 1 else _pack(~known))
        changed = _row_changes(packed)
        if unknown is not None:
            changed |= unknown[1:] != unknown[:-1] if unknown.ndim == 1 else _row_changes(unknown)
        starts = np.concatenate(([0], np.flatnonzero(changed) + 1))
        if starts.size * _SPARSE < frames:  # read as runs: letters only where some predicate changes
            row_letters = self._letters_of_packed(packed[starts], None if unknown is None else unknown[starts])
            runs = [
                _Walked(auto, np.repeat(rl, np.diff(np.append(starts, frames))))
                if rl.max() >= auto.pad
                else _Runs.from_runs(auto, frames, starts, rl)
                for auto, rl in zip(self.automata, row_letters)
            ]
        else:
            runs = [
                _runs_of(auto, a, unknown is not None)
                for auto, a in zip(self.automata, self._letters_of_packed(packed, unknown))
            ]
        return self._run(runs, frames, times, events)

    def run_frames(
        self,
        frames: Sequence[Mapping[str, object] | None],
        times: Sequence[float] | None = None,
        *,
        events: bool = True,
    ) -> TraceResult:
        """Convenience for lists of predicate -> bool|None mappings (None frame = all inputs blind)."""
        values, known = frames_to_matrix(frames, self.predicates)
        return self.run_matrix(values, known, times, events=events)

    def run_letters(
        self, letters: Sequence[np.ndarray], times: Sequence[float] | None = None, *, events: bool = True
    ) -> TraceResult:
        """Monitor one trace given each property's (partial) letters. With events=False only the
        outcomes are computed (no events, no counterexamples): the fast path for metrics."""
        if len(letters) != len(self.automata):
            raise ValueError(f"expected letters for {len(self.automata)} properties, got {len(letters)}")
        frames = len(letters[0]) if letters else 0
        if any(len(a) != frames for a in letters):
            raise ValueError("every property needs one letter per frame")
        if frames == 0:
            return self._empty()
        runs = [_runs_of(auto, np.asarray(a, dtype=np.int64), True) for auto, a in zip(self.automata, letters)]
        return self._run(runs, frames, times, events)

    def _check(self, values: np.ndarray, known: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        values = np.asarray(values, dtype=bool)
        if values.ndim != 2 or values.shape[1] != len(self.predicates):
            raise SpecError(
                f"expected a frames x {len(self.predicates)} matrix of predicate values "
                f"({', '.join(self.predicates)}), got shape {values.shape}"
            )
        if known is not None:
            known = np.asarray(known, dtype=bool)
            if known.shape not in ((values.shape[0],), values.shape):
                raise SpecError(f"'known' must have shape ({values.shape[0]},) or {values.shape}, got {known.shape}")
            if known.all():
                known = None
        return values, known

    def _letters_of_packed(self, packed: np.ndarray, unknown: np.ndarray | None) -> list[np.ndarray]:
        """Each property's partial letters from packed predicate rows, through one 256-entry table per
        byte; `unknown` is a per-frame flag or packed unknown predicates."""
        byte_cols = [np.ascontiguousarray(packed[:, b]) for b in range(packed.shape[1])]
        unknown_cols = None
        if unknown is not None and unknown.ndim == 2:
            unknown_cols = [np.ascontiguousarray(unknown[:, b]) for b in range(unknown.shape[1])]
        out = []
        for auto, luts in zip(self.automata, self._byte_luts):
            letters = np.zeros(packed.shape[0], dtype=np.int64)
            for b, lut in luts:
                letters += lut[byte_cols[b]]
            if unknown is not None:
                if unknown_cols is None:
                    mask = np.where(unknown, auto.pad - 1, 0)
                else:
                    mask = np.zeros(packed.shape[0], dtype=np.int64)
                    for b, lut in luts:
                        mask += lut[unknown_cols[b]]
                letters = (letters & ~mask) | (mask << len(auto.atoms))
            out.append(letters)
        return out

    # ----- the run ------------------------------------------------------------------------------
    def _run(self, runs: list, frames: int, times: Sequence[float] | None, events: bool) -> TraceResult:
        times_list = None if times is None else [None if x is None else float(x) for x in times]
        if times_list is not None and len(times_list) != frames:
            raise ValueError(f"{len(times_list)} times for {frames} frames")
        found, final = self._scan([r.letters if not isinstance(r, _Walked) else _NO_LETTERS for r in runs])
        outcomes: list[PropertyOutcome] = []
        per_property: list[list[tuple[int, int, Event]]] = []
        end_events: list[Event] = []
        t_end = times_list[-1] if times_list is not None else None
        for j, (auto, run, (pos, code, state)) in enumerate(zip(self.automata, runs, found)):
            if isinstance(run, _Walked):
                (pos, code, state), at_rest = run.found, run.at_rest
            else:
                at_rest = auto.rest[final[j]]
            edges = run.edge_frames(auto)
            run_edges = 0
            if not at_rest:  # count the edges of the main DFA's current run
                left, _ = run.expand(pos[(code & codes.RUN_START) != 0])
                run_edges = int(np.count_nonzero(edges >= left[-1]))
            keep = (code & codes.EPISODE) != 0
            pos, code, state = pos[keep], code[keep], state[keep]
            if events:
                ledger = EpisodeLedger(auto, self.history, partial(_window, auto, run, times_list))
                per_property.append(self._events(auto, run, pos, code, state, edges, ledger, times_list))
                tail_events, outcome = ledger.finish(frames, t_end, edges.size, run_edges)
                end_events.extend(tail_events)
            else:
                outcome = _outcome(auto, run, pos, code, edges.size, run_edges, frames, times_list)
            outcomes.append(outcome)
        ordered: list[Event] = []
        if events:
            merged = [(f, j, k, e) for j, evs in enumerate(per_property) for k, (f, _, e) in enumerate(evs)]
            merged.sort(key=lambda x: (x[0], x[1], x[2]))
            ordered = [e for *_, e in merged] + end_events
        return TraceResult(frames, tuple(outcomes), tuple(ordered))

    def _scan(self, seqs: list[np.ndarray]) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], list[int]]:
        """Per property: (positions with a nonzero code, their codes, the local state before them), and
        the local state after the last position. States are never stored for all frames."""
        n_props = len(seqs)
        length = max(s.size for s in seqs)
        parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in seqs]
        cur = self._starts[:, 0].copy()  # each property's initial state
        for lo in range(0, length, _BLOCK):
            span = min(length, lo + _BLOCK) - lo
            chunk = min(_CHUNK, span)
            n_chunks = -(-span // chunk)
            block = np.empty((n_props, n_chunks * chunk), dtype=np.int32)
            for j, s in enumerate(seqs):
                piece = s[lo : lo + span]
                block[j, : piece.size] = piece
                block[j, piece.size :] = self.automata[j].pad  # padding: the identity letter
            steps = np.ascontiguousarray(block.reshape(n_props, n_chunks, chunk).transpose(2, 0, 1))
            before, cur = self._block(steps, cur)
            code = self._code[before + steps]
            code_t = code.transpose(1, 2, 0).reshape(n_props, n_chunks * chunk)
            for j, s in enumerate(seqs):
                n = min(s.size - lo, span)
                if n <= 0:
                    continue
                pos = np.flatnonzero(code_t[j, :n])
                if pos.size:
                    state = before[pos % chunk, j, pos // chunk] // self._width - self._offset[j]
                    parts[j].append((pos + lo, code_t[j, pos], state))
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for j in range(n_props):
            if parts[j]:
                positions, codes, states = zip(*parts[j])
                found.append((np.concatenate(positions), np.concatenate(codes), np.concatenate(states)))
            else:
                found.append((np.zeros(0, np.int64), np.zeros(0, np.uint8), np.zeros(0, np.int64)))
        final = (cur // self._width - self._offset).tolist()
        return found, final

    def _block(self, steps: np.ndarray, cur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """States before every step of every chunk, shape (chunk, props, chunks), and the end states."""
        chunk, n_props, n_chunks = steps.shape
        table = self._next_row
        wide = np.broadcast_to(self._starts[:, None, :], (n_props, n_chunks, self._starts.shape[1])).copy()
        history = []
        t = 0
        synced = False
        while t < chunk:
            history.append(wide)
            wide = table[wide + steps[t][:, :, None]]
            t += 1
            if _SYNC_CHECK and (t % _SYNC_CHECK == 0 or t == chunk):
                if (wide == wide[:, :, :1]).all():
                    synced = True
                    break
                if t >= _SYNC_GIVE_UP:
                    break
        before = np.empty((chunk, n_props, n_chunks), dtype=np.int64)
        if synced:  # every chunk is in one state after step t whatever its start: chain without a loop
            y = wide[:, :, 0]
            for k in range(t, chunk):
                before[k] = y
                y = table[y + steps[k]]
            starts = np.empty((n_props, n_chunks), dtype=np.int64)
            starts[:, 0] = cur
            starts[:, 1:] = y[:, :-1]
            pick = self._local[starts // self._width][:, :, None]
            for k in range(t):
                before[k] = np.take_along_axis(history[k], pick, axis=2)[:, :, 0]
            return before, y[:, -1].copy()
        del history
        for k in range(t, chunk):  # finish every chunk's map from every start state
            wide = table[wide + steps[k][:, :, None]]
        props = np.arange(n_props)
        starts = np.empty((n_props, n_chunks), dtype=np.int64)
        for c in range(n_chunks):
            starts[:, c] = cur
            cur = wide[props, c, self._local[cur // self._width]]
        y = starts
        for k in range(chunk):
            before[k] = y
            y = table[y + steps[k]]
        return before, cur

    def _events(
        self,
        auto: MonitorAutomaton,
        run,
        pos: np.ndarray,
        code: np.ndarray,
        state: np.ndarray,
        edges: np.ndarray,
        ledger: EpisodeLedger,
        times: list | None,
    ) -> list[tuple[int, int, Event]]:
        """This property's events in live order: per frame, blind/seeing first, then episode events."""
        items: list[tuple] = [(f, 0, 0) for f in run.blind_starts().tolist()]
        items += [(f, 0, 1) for f in run.seeing_starts().tolist()]
        frames, idx = run.expand(pos)
        e_idx = np.searchsorted(edges, frames, side="right") - 1
        last_edge = np.where(e_idx >= 0, edges[np.maximum(e_idx, 0)] if edges.size else -1, -1)
        items += zip(
            frames.tolist(),
            [1] * frames.size,
            (code[idx] & codes.EPISODE).tolist(),
            state[idx].tolist(),
            run.letters[pos[idx]].tolist(),
            last_edge.tolist(),
        )
        items.sort(key=lambda item: item[:2])

        out: list[tuple[int, int, Event]] = []
        found: list[Event] = []
        for f, kind, *rest in items:
            t = times[f] if times is not None else None
            if kind == 0:
                out.append((f, 0, ledger.seeing(f, t) if rest[0] else ledger.blind(f, t)))
                continue
            c, st, letter, edge = rest
            t_before = times[f - 1] if times is not None and f else None
            ledger.on_code(found, f, t, c, st, letter, edge if edge >= 0 else None, t_before)
            out += [(f, 1, e) for e in found]
            found.clear()
        return out

    def _empty(self) -> TraceResult:
        outcomes = tuple(PropertyOutcome(a.name, a.category, 0, 0, 0, 0, 0, 0, (), 0) for a in self.automata)
        return TraceResult(0, outcomes, ())


_NO_LETTERS = np.zeros(0, dtype=np.int64)
_NO_FRAMES = np.zeros(0, dtype=np.int64)


def _runs_of(auto: MonitorAutomaton, letters: np.ndarray, partial: bool):
    """A property's trace as the scan reads it, or walked frame by frame if some atom is unknown
    (`partial`: some letter may be partial)."""
    if partial and letters.size and letters.max() >= auto.pad:
        return _Walked(auto, letters)
    return _Runs.from_letters(auto, letters)


class _Frames:
    """A property's letters read one per frame (the trace changes too often for runs to pay)."""

    def __init__(self, auto: MonitorAutomaton, letters: np.ndarray) -> None:
        self.frames = letters.size
        self.letters = letters

    def expand(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(frames, index into `positions`): here positions are frames."""
        return positions, np.arange(positions.size)

    def edge_frames(self, auto: MonitorAutomaton) -> np.ndarray:
        """Frames where the trigger rises: false (or the trace's start) before, true now."""
        value = auto.trigger_value[self.letters]
        return np.flatnonzero(value & ~np.concatenate(([False], value[:-1])))

    def blind_starts(self) -> np.ndarray:
        return _NO_FRAMES

    seeing_starts = blind_starts

    def blind_frames(self) -> int:
        return 0

    def letters_between(self, first: int, last: int) -> np.ndarray:
        """The property's letter on every frame first..last (a copy)."""
        return self.letters[first : last + 1].copy()


class _Runs:
    """A property's trace as runs of equal letters, and the shorter letter sequence the automaton
    reads instead: a run longer than tail + 2 * period keeps tail + period + (rest mod period) letters."""

    def __init__(self, auto: MonitorAutomaton, frames: int, starts: np.ndarray, run_letter: np.ndarray) -> None:
        self.frames = frames
        self.starts = starts
        self.run_letter = run_letter
        self.lengths = np.diff(np.append(starts, frames))
        tail = auto.run_tail[run_letter]
        period = auto.run_period[run_letter]
        self.tail, self.period = tail, np.maximum(period, 1)
        self.compressed = (period > 0) & (self.lengths >= tail + 2 * period)
        kept = np.where(
            self.compressed, tail + self.period + (self.lengths - tail - self.period) % self.period, self.lengths
        )
        self.letters = np.repeat(run_letter, kept)
        self.run = np.repeat(np.arange(starts.size), kept)
        self.offset = np.arange(self.letters.size) - np.repeat(np.cumsum(kept) - kept, kept)

    @classmethod
    def from_letters(cls, auto: MonitorAutomaton, letters: np.ndarray):
        """Runs when the letters change rarely, else plain frames."""
        differs = letters[1:] != letters[:-1]
        if (np.count_nonzero(differs) + 1) * _SPARSE >= letters.size:
            return _Frames(auto, letters)
        starts = np.concatenate(([0], np.flatnonzero(differs) + 1))
        return cls(auto, letters.size, starts, letters[starts])

    @classmethod
    def from_runs(cls, auto: MonitorAutomaton, frames: int, starts: np.ndarray, run_letter: np.ndarray) -> _Runs:
        """From letters at the frames where any predicate changed: merge neighbours with equal letters."""
        keep = np.concatenate(([True], run_letter[1:] != run_letter[:-1]))
        return cls(auto, frames, starts[keep], run_letter[keep])

    def expand(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Original frames of compressed positions, sorted, with the index into `positions` of each:
        one frame each, every period on a run's repeating part, none for its second copy."""
        r = self.run[positions]
        off = self.offset[positions]
        tail, period, length = self.tail[r], self.period[r], self.lengths[r]
        repeating = self.compressed[r] & (off >= tail)
        count = np.where(repeating, (length - 1 - off) // period + 1, 1)
        count = np.where(repeating & (off >= tail + period), 0, count)
        idx = np.repeat(np.arange(positions.size), count)
        k = np.arange(idx.size) - np.repeat(np.cumsum(count) - count, count)
        frames = self.starts[r][idx] + off[idx] + k * period[idx]
        order = np.argsort(frames, kind="stable")
        return frames[order], idx[order]

    def edge_frames(self, auto: MonitorAutomaton) -> np.ndarray:
        """Frames where the trigger rises: false (or the trace's start) before, true now."""
        value = auto.trigger_value[self.run_letter]
        return self.starts[value & ~np.concatenate(([False], value[:-1]))]

    def blind_starts(self) -> np.ndarray:
        return _NO_FRAMES

    seeing_starts = blind_starts

    def blind_frames(self) -> int:
        return 0

    def letters_between(self, first: int, last: int) -> np.ndarray:
        """The property's letter on every frame first..last, from the runs covering them."""
        lo = int(np.searchsorted(self.starts, first, side="right")) - 1
        hi = int(np.searchsorted(self.starts, last, side="right"))
        ends = np.minimum(np.append(self.starts[lo + 1 : hi], last + 1), last + 1)
        begins = np.maximum(self.starts[lo:hi], first)
        return np.repeat(self.run_letter[lo:hi], ends - begins)


class _Walked(_Frames):
    """A property with unknown atoms on some frames, stepped as a state set frame by frame in Python
    (memoised steps); a run of equal letters ends at once when its step is a silent self-loop."""

    def __init__(self, auto: MonitorAutomaton, letters: np.ndarray) -> None:
        super().__init__(auto, letters)
        step = auto.completions.step
        starts = np.concatenate(([0], np.flatnonzero(letters[1:] != letters[:-1]) + 1))
        ends = np.append(starts[1:], letters.size).tolist()
        pos: list[int] = []
        codes: list[int] = []
        states: list[int] = []
        edges: list[int] = []
        flips: list[int] = []  # frames where blind changes (blind, seeing, blind, ...)
        sid, held, blind = 0, 0, False
        for f, end, plet in zip(starts.tolist(), ends, letters[starts].tolist()):
            while f < end:
                nxt, code, b, value = step(sid, plet)
                if b != blind:
                    flips.append(f)
                    blind = b
                if value != UNKNOWN_TRIGGER:
                    if value and not held:
                        edges.append(f)
                    held = value
                if code:
                    pos.append(f)
                    codes.append(code)
                    states.append(sid)
                f += 1
                if nxt == sid and not code:  # the rest of the run repeats this step silently
                    f = end
                sid = nxt
        self.found = (np.array(pos, dtype=np.int64), np.array(codes, dtype=np.uint8), np.array(states, dtype=np.int64))
        self.at_rest = auto.completions.at_rest(sid)
        self._edges = np.array(edges, dtype=np.int64)
        flip = np.array(flips, dtype=np.int64)
        self._blind_starts, self._seeing_starts = flip[0::2], flip[1::2]

    def edge_frames(self, auto: MonitorAutomaton) -> np.ndarray:
        """Frames where the trigger rises: true for every completion, after its last value known for
        every completion was false (or the trace's start)."""
        return self._edges

    def blind_starts(self) -> np.ndarray:
        return self._blind_starts

    def seeing_starts(self) -> np.ndarray:
        return self._seeing_starts

    def blind_frames(self) -> int:
        ends = np.append(self._seeing_starts, self.frames)[: self._blind_starts.size]
        return int((ends - self._blind_starts).sum())


def _window(auto: MonitorAutomaton, run, times: list | None, first: int, last: int) -> tuple:
    """An opening event's window (episodes.Window): copies of its letters and times, decoded when read."""
    ts = times[first : last + 1] if times is not None else [None] * (last - first + 1)
    return _decode_letters, auto, run.letters_between(first, last), ts


def _decode_letters(auto: MonitorAutomaton, letters: np.ndarray, times: list) -> tuple[list, list]:
    return auto.rows(letters.tolist()), times


def _outcome(
    auto: MonitorAutomaton,
    run,
    pos: np.ndarray,
    code: np.ndarray,
    edges: int,
    run_edges: int,
    frames: int,
    times: list | None,
) -> PropertyOutcome:
    """Counts without events: pair the k-th opening with the k-th closing (episodes never overlap). Seconds
    as the ledger counts them: from the stamp of the frame before the opening to that of the last violating
    frame (episodes.py)."""
    frame_of, idx = run.expand(pos)
    c = code[idx]
    opens = frame_of[(c & codes.OPENED) != 0]
    n_closes = ((c & codes.RECOVERED) != 0).astype(np.int64) + ((c & codes.CLOSED_AT_ONCE) != 0)
    closes = np.repeat(frame_of, n_closes)  # already in frame order
    durations = np.maximum(1, closes - opens[: closes.size])
    last = np.maximum(opens[: closes.size], closes - 1)  # each episode's last violating frame
    discarded = 0
    pending = run_edges
    if opens.size > closes.size:
        tail = frames - int(opens[-1])
        if tail >= auto.min_resolve_frames:
            durations = np.append(durations, tail)
            last = np.append(last, frames - 1)
            pending = 0
        else:
            discarded = 1
    stamps = [None] * last.size if times is None else [times[f] for f in last.tolist()]
    since = [None] * last.size if times is None else [times[max(f - 1, 0)] for f in opens[: last.size].tolist()]
    seconds = [b - a for a, b in zip(since, stamps) if a is not None and b is not None]
    return PropertyOutcome(
        auto.name,
        auto.category,
        frames,
        run.blind_frames(),
        edges - pending,
        pending,
        int(durations.size),
        int(durations.sum()),
        tuple(durations.tolist()),
        discarded,
        tuple(seconds) if len(seconds) == last.size else None,
    )


def _byte_luts(columns: list[int]) -> list[tuple[int, np.ndarray]]:
    """Per byte of the packed predicate row that holds some of `columns`: (byte, table of the letter
    bits those predicates contribute, for every byte value)."""
    by_byte: dict[int, list[tuple[int, int]]] = {}
    for i, c in enumerate(columns):
        by_byte.setdefault(c // 8, []).append((c % 8, i))
    values = np.arange(256)
    out = []
    for b, pairs in sorted(by_byte.items()):
        lut = np.zeros(256, dtype=np.int64)
        for bit, i in pairs:
            lut |= ((values >> bit) & 1) << i
        out.append((b, lut))
    return out


def _pack(matrix: np.ndarray) -> np.ndarray:
    """Bool frames x predicates -> uint8 frames x bytes (a multiple of 8, so rows compare as words),
    predicate i at bit i % 8 of byte i // 8."""
    packed = np.packbits(matrix, axis=1, bitorder="little")
    width = max(8, -(-packed.shape[1] // 8) * 8)
    if packed.shape[1] == width:
        return packed
    out = np.zeros((packed.shape[0], width), dtype=np.uint8)
    out[:, : packed.shape[1]] = packed
    return out


def _row_changes(packed: np.ndarray) -> np.ndarray:
    """changes[i]: row i + 1 differs from row i (compared eight bytes at a time)."""
    rows = np.ascontiguousarray(packed).view(np.uint64)
    return np.any(rows[1:] != rows[:-1], axis=1) if rows.shape[1] > 1 else rows[1:, 0] != rows[:-1, 0]


def frames_to_matrix(
    frames: Sequence[Mapping[str, object] | None], predicates: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(values, known) frames x predicates bool matrices from mappings (None = a blind frame); a missing
    predicate or a value other than true, false or None is a SpecError."""
    get = operator.itemgetter(*predicates) if len(predicates) > 1 else (lambda f, _p=predicates[0]: (f[_p],))
    blind = (None,) * len(predicates)
    rows = []
    for i, frame in enumerate(frames):
        try:
            rows.append(blind if frame is None else get(frame))
        except KeyError as exc:
            raise SpecError(f"frame {i}: no value for predicate {exc.args[0]!r}") from None
    cells = np.empty((len(rows), len(predicates)), dtype=object)
    cells[...] = rows if rows else cells
    known = cells != None  # noqa: E711 (element-wise on an object array)
    values = cells == True  # noqa: E712
    bad = known & ~values & (cells != False)  # noqa: E712
    if bad.any():
        i, k = (int(x) for x in np.argwhere(bad)[0])
        raise SpecError(
            f"frame {i}: predicate {predicates[k]!r} has value {cells[i, k]!r}; expected true, false or None (unknown)"
        )
    return values.astype(bool), known.astype(bool)
