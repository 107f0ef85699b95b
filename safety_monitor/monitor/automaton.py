"""One property's monitor as a single automaton, so the live and batch paths share one semantics.

The episode rules (DESIGN.md section 5) fold into one deterministic machine over the property's own
letters. Its states are the main DFA's states (no open episode) and the recovery DFA's states (an
episode is open; the main DFA is frozen, and since it restarts from its initial state on recovery its
frozen state never matters). Each transition carries a code saying which episode events it fires.
One extra letter, `pad`, leaves the state unchanged and fires nothing: it pads the batch monitor's
chunks. Frames with unknown predicates step sets of these states (completions.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from safety_monitor.errors import SpecError
from safety_monitor.specs.dfa import TableDFA
from safety_monitor.specs.model import trigger_text

RECOVERED = 1  # the open episode's recovery DFA accepted: it closes on this frame
OPENED = 2  # the main DFA entered its rejecting sink: an episode opens on this frame
CLOSED_AT_ONCE = 4  # the episode opened on this frame also closes on it; main restarts next frame
RUN_START = 8  # the main DFA starts a run of its own: it leaves rest, or restarts on a recovery frame
#               (pending triggers count the edges of the current run; not an episode event)
EPISODE = RECOVERED | OPENED | CLOSED_AT_ONCE

MAX_ATOMS = 16
_MAX_COMPRESSED_RUN = 256  # longer tail + 2 * period: runs of that letter are not compressed


@dataclass(frozen=True, eq=False)
class MonitorAutomaton:
    """Combined main + recovery machine of one property, over letters of `atoms` (bit i = atoms[i])."""

    name: str
    category: str
    formula: str
    recovery: str | None
    trigger: str
    atoms: tuple[str, ...]
    min_resolve_frames: int
    close_on_opening_frame: bool
    next: np.ndarray  # int32 (states, letters + 1): last column is the pad letter
    code: np.ndarray  # uint8, same shape: RECOVERED | OPENED | CLOSED_AT_ONCE | RUN_START bits
    rest: np.ndarray  # bool per state: no episode open and nothing pending (main DFA as at start)
    trigger_value: np.ndarray  # bool per letter (pad excluded)
    main_state: np.ndarray  # int32 per state: main DFA state read by a step from here (-1 if episode open)
    main: TableDFA
    main_letter: np.ndarray  # int per property letter: the main DFA's letter
    run_tail: np.ndarray  # int per letter (pad included): steps until every state is on its cycle
    run_period: np.ndarray  # int per letter: lcm of the cycle lengths (0 = do not compress)

    @property
    def n_states(self) -> int:
        return int(self.next.shape[0])

    @property
    def pad(self) -> int:
        """The letter that leaves every state unchanged and fires nothing."""
        return 1 << len(self.atoms)

    @functools.cached_property
    def completions(self):
        """Steps of this property's state sets over every completion of unknown atoms (shared)."""
        from safety_monitor.monitor.completions import Completions

        return Completions(self)

    def rows(self, letters) -> list[tuple[bool | None, ...]]:
        """Decode (partial) letters to per-atom values, None for an unknown atom."""
        table, known = self._row_table, len(self._row_table)
        return [table[a] if a < known else self._partial_row(a) for a in letters]

    @functools.cached_property
    def _row_table(self) -> list[tuple[bool | None, ...]]:
        k = len(self.atoms)
        bits = ((np.arange(1 << k)[:, None] >> np.arange(k)) & 1).astype(bool).tolist()
        return [tuple(row) for row in bits]

    def _partial_row(self, plet: int) -> tuple[bool | None, ...]:
        k = len(self.atoms)
        return tuple(None if plet >> (k + i) & 1 else bool(plet >> i & 1) for i in range(k))

    def decisive_atoms(self, state_before: int, letter: int, code: int) -> tuple[str, ...]:
        """Atoms whose flip alone, on the opening frame, would have avoided the opening: for a
        two-valued step, kept the main DFA out of its sink; for a set of states or a frame with unknown
        atoms, kept the monitor from opening (completions.py)."""
        if state_before >= self.n_states or letter >= self.pad:
            return self.completions.decisive(state_before, letter)
        q = self.main.initial if code & RECOVERED else self._main_states[state_before]
        return _decisive(self, q, letter)

    @functools.cached_property
    def _main_states(self) -> list[int]:
        return self.main_state.tolist()


@functools.lru_cache(maxsize=65536)
def _decisive(auto: MonitorAutomaton, q: int, letter: int) -> tuple[str, ...]:
    sink, table = auto.main.rejecting_sink, auto.main.table
    return tuple(atom for i, atom in enumerate(auto.atoms) if not sink[table[q, auto.main_letter[letter ^ (1 << i)]]])


def build_automaton(compiled) -> MonitorAutomaton:
    """Fold a CompiledProperty (main DFA, optional recovery DFA, trigger table) into one machine.

    Honours `prop.options["close_on_opening_frame"]` (default False: a recovery that already holds on
    the opening frame closes the episode only on a later frame on which it accepts).
    """
    prop = compiled.prop
    main: TableDFA = compiled.main
    rec: TableDFA | None = compiled.recovery
    atoms = tuple(sorted(set(main.atoms) | set(rec.atoms if rec else ()) | set(compiled.trigger_atoms)))
    if len(atoms) > MAX_ATOMS:
        raise SpecError(
            f"property {prop.name!r} reads {len(atoms)} predicates (formula, recovery and trigger); "
            f"at most {MAX_ATOMS} are supported"
        )
    close_at_once = (prop.options or {}).get("close_on_opening_frame", False)
    if not isinstance(close_at_once, bool):
        raise SpecError(
            f"property {prop.name!r}: option close_on_opening_frame must be true or false, got {close_at_once!r}"
        )
    letters = np.arange(1 << len(atoms))
    main_letter = _project(letters, atoms, main.atoms)
    rec_letter = _project(letters, atoms, rec.atoms) if rec else None
    trigger_value = np.asarray(compiled.trigger_table, dtype=bool)[_project(letters, atoms, compiled.trigger_atoms)]
    n_main = main.n_states  # combined keys: main state q is q, recovery state r is n_main + r

    def main_row(q: int) -> tuple[np.ndarray, np.ndarray]:
        """Step the main DFA from q on every letter; a rejection opens an episode (rule 1)."""
        q2 = main.table[q, main_letter].astype(np.int64)
        sink = main.rejecting_sink[q2]
        code = np.where(sink, OPENED, 0)
        if rec is None:
            return np.where(sink, main.initial, q2), code | np.where(sink, CLOSED_AT_ONCE, 0)
        r = rec.table[rec.initial, rec_letter]
        at_once = sink & rec.accepting[r] if close_at_once else np.zeros_like(sink)
        nxt = np.where(at_once, main.initial, np.where(sink, n_main + r, q2))
        return nxt, code | np.where(at_once, CLOSED_AT_ONCE, 0)

    def rec_row(r: int) -> tuple[np.ndarray, np.ndarray]:
        """Step the recovery DFA; on acceptance close and restart the main DFA on this frame (rule 2)."""
        assert rec is not None  # recovery states (keys from n_main on) exist only with a recovery DFA
        r2 = rec.table[r, rec_letter].astype(np.int64)
        accept = rec.accepting[r2]
        again, again_code = main_row(main.initial)
        return np.where(accept, again, n_main + r2), np.where(accept, again_code | RECOVERED | RUN_START, 0)

    # explore the combined states reachable from the main DFA's initial state
    index = {main.initial: 0}
    order = [main.initial]
    rows_next: list[np.ndarray] = []
    rows_code: list[np.ndarray] = []
    while len(rows_next) < len(order):
        key = order[len(rows_next)]
        keys, code = main_row(key) if key < n_main else rec_row(key - n_main)
        for k in np.unique(keys).tolist():
            if k not in index:
                index[k] = len(order)
                order.append(k)
        pad_self = len(rows_next)  # the pad letter: no step
        rows_next.append(np.append([index[k] for k in keys.tolist()], pad_self))
        rows_code.append(np.append(code, 0))
    states = [("main", k) if k < n_main else ("rec", k - n_main) for k in order]

    next_table = np.array(rows_next, dtype=np.int32)
    code_table = np.array(rows_code, dtype=np.uint8)
    initial_row = main.table[main.initial]
    rest = np.array([m == "main" and np.array_equal(main.table[q], initial_row) for m, q in states])
    code_table |= np.where(rest[:, None] & ~rest[next_table], RUN_START, 0).astype(np.uint8)
    main_state = np.array([q if m == "main" else -1 for m, q in states], dtype=np.int32)
    tail, period = _run_shape(next_table)
    for arr in (next_table, code_table, rest, trigger_value, main_state, main_letter, tail, period):
        arr.setflags(write=False)
    return MonitorAutomaton(
        name=prop.name,
        category=prop.category,
        formula=prop.formula,
        recovery=prop.recovery,
        trigger=trigger_text(compiled),
        atoms=atoms,
        min_resolve_frames=int(prop.min_resolve_frames),
        close_on_opening_frame=close_at_once,
        next=next_table,
        code=code_table,
        rest=rest,
        trigger_value=trigger_value,
        main_state=main_state,
        main=main,
        main_letter=main_letter,
        run_tail=tail,
        run_period=period,
    )


def _project(letters: np.ndarray, atoms: tuple[str, ...], sub: tuple[str, ...]) -> np.ndarray:
    """Letters over `atoms` mapped to letters over the subset `sub` (both bit-indexed by position)."""
    out = np.zeros_like(letters)
    for j, atom in enumerate(sub):
        out |= ((letters >> atoms.index(atom)) & 1) << j
    return out


def _run_shape(next_table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per letter, the (tail, period) of repeating it: after `tail` steps every state lies on a cycle
    whose length divides `period`, so a run of length n >= tail acts like tail + (n - tail) % period.
    Period 0 marks letters whose runs are not worth compressing."""
    n_states, n_cols = next_table.shape
    cols = np.arange(n_cols)
    seq = [np.repeat(np.arange(n_states)[:, None], n_cols, axis=1)]  # seq[t][s, a] = f_a^t(s)
    for _ in range(n_states):
        seq.append(next_table[seq[-1], cols])
    on_cycle = np.zeros((n_states, n_cols), dtype=bool)  # after n_states steps every run is on its cycle
    on_cycle[seq[-1], cols] = True
    tail = np.full((n_states, n_cols), n_states)
    for t in range(n_states, -1, -1):
        tail[on_cycle[seq[t], cols]] = t
    length = np.zeros((n_states, n_cols), dtype=np.int64)
    z = seq[-1]
    for p in range(1, n_states + 1):
        z = next_table[z, cols]
        length[(z == seq[-1]) & (length == 0)] = p
    tails = tail.max(axis=0).astype(np.int64)
    periods = np.lcm.reduce(length, axis=0)
    periods[tails + 2 * periods > _MAX_COMPRESSED_RUN] = 0
    return tails, periods
