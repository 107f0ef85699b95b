"""One property's monitor as a single automaton, so the live and batch paths share one semantics.

The episode rules (DESIGN.md section 5) fold into one deterministic machine over the property's own
letters. Its states are the main DFA's states (no open episode) and the recovery DFA's states (an
episode is open; the main DFA is frozen, and since it restarts from its initial state on recovery its
frozen state never matters). Each transition carries a code saying which episode events it fires.
One extra letter, `blind`, leaves the state unchanged and fires nothing: the property is not stepped
while any of its predicates is unknown.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from safety_monitor.spec.dfa import TableDFA
from safety_monitor.spec.model import trigger_text

RECOVERED = 1  # the open episode's recovery DFA accepted: it closes on this frame
OPENED = 2  # the main DFA entered its rejecting sink: an episode opens on this frame
CLOSED_AT_ONCE = 4  # the episode opened on this frame also closes on it; main restarts next frame
LEFT_REST = 8  # the machine leaves a rest state (for pending triggers; not an episode event)
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
    next: np.ndarray  # int32 (states, letters + 1): last column is the blind letter
    code: np.ndarray  # uint8, same shape: RECOVERED | OPENED | CLOSED_AT_ONCE | LEFT_REST bits
    rest: np.ndarray  # bool per state: no episode open and nothing pending (main DFA as at start)
    trigger_value: np.ndarray  # bool per letter (blind excluded)
    main_state: np.ndarray  # int32 per state: main DFA state read by a step from here (-1 if episode open)
    main: TableDFA
    main_letter: np.ndarray  # int per property letter: the main DFA's letter
    run_tail: np.ndarray  # int per letter (blind included): steps until every state is on its cycle
    run_period: np.ndarray  # int per letter: lcm of the cycle lengths (0 = do not compress)

    initial = 0

    @property
    def n_states(self) -> int:
        return int(self.next.shape[0])

    @property
    def blind(self) -> int:
        """The letter that stands for 'some predicate of this property is unknown'."""
        return 1 << len(self.atoms)

    def rows(self, letters) -> list[tuple[bool | None, ...]]:
        """Decode letters to per-atom values (None for every atom on the blind letter)."""
        table = self._row_table
        return [table[a] for a in letters]

    @functools.cached_property
    def _row_table(self) -> list[tuple[bool | None, ...]]:
        k = len(self.atoms)
        bits = ((np.arange(1 << k)[:, None] >> np.arange(k)) & 1).astype(bool).tolist()
        return [tuple(row) for row in bits] + [(None,) * k]

    def decisive_atoms(self, state_before: int, letter: int, code: int) -> tuple[str, ...]:
        """Atoms whose flip alone, on the opening frame, would have kept the main DFA out of its sink."""
        q = self.main.initial if code & RECOVERED else int(self.main_state[state_before])
        return _decisive(self, q, letter)


@functools.lru_cache(maxsize=65536)
def _decisive(auto: MonitorAutomaton, q: int, letter: int) -> tuple[str, ...]:
    sink, table = auto.main.rejecting_sink, auto.main.table
    return tuple(
        atom for i, atom in enumerate(auto.atoms)
        if not sink[table[q, auto.main_letter[letter ^ (1 << i)]]]
    )


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
        raise ValueError(f"property {prop.name!r} reads {len(atoms)} predicates; at most {MAX_ATOMS} are supported")
    close_at_once = bool((prop.options or {}).get("close_on_opening_frame", False))
    n_letters = 1 << len(atoms)
    letters = np.arange(n_letters)
    main_letter = _project(letters, atoms, main.atoms)
    rec_letter = _project(letters, atoms, rec.atoms) if rec else None
    trigger_value = np.asarray(compiled.trigger_table, dtype=bool)[_project(letters, atoms, compiled.trigger_atoms)]

    # Combined states are ("main", q) and ("rec", r); explore from the main DFA's initial state.
    start = ("main", main.initial)
    index = {start: 0}
    order = [start]
    rows_next: list[list[int]] = []
    rows_code: list[list[int]] = []

    def state_id(key) -> int:
        if key not in index:
            index[key] = len(order)
            order.append(key)
        return index[key]

    def main_step(q: int, a: int) -> tuple[tuple, int]:
        q2 = int(main.table[q, main_letter[a]])
        if not main.rejecting_sink[q2]:
            return ("main", q2), 0
        if rec is None:
            return ("main", main.initial), OPENED | CLOSED_AT_ONCE
        r = int(rec.table[rec.initial, rec_letter[a]])
        if close_at_once and rec.accepting[r]:
            return ("main", main.initial), OPENED | CLOSED_AT_ONCE
        return ("rec", r), OPENED

    k = 0
    while k < len(order):
        mode, s = order[k]
        nxt, codes = [], []
        for a in range(n_letters):
            if mode == "main":
                key, c = main_step(s, a)
            else:
                r2 = int(rec.table[s, rec_letter[a]])
                if rec.accepting[r2]:
                    key, c = main_step(main.initial, a)
                    c |= RECOVERED
                else:
                    key, c = ("rec", r2), 0
            nxt.append(state_id(key))
            codes.append(c)
        nxt.append(k)  # blind: no step
        codes.append(0)
        rows_next.append(nxt)
        rows_code.append(codes)
        k += 1

    next_table = np.array(rows_next, dtype=np.int32)
    code_table = np.array(rows_code, dtype=np.uint8)
    initial_row = main.table[main.initial]
    rest = np.array([m == "main" and np.array_equal(main.table[q], initial_row) for m, q in order])
    code_table |= np.where(rest[:, None] & ~rest[next_table], LEFT_REST, 0).astype(np.uint8)
    main_state = np.array([q if m == "main" else -1 for m, q in order], dtype=np.int32)
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
    whose length divides `period`, so a run of length n >= tail acts like tail + (n - tail) % period."""
    n_states, n_cols = next_table.shape
    tails = np.zeros(n_cols, dtype=np.int64)
    periods = np.zeros(n_cols, dtype=np.int64)
    for a in range(n_cols):
        f = next_table[:, a].tolist()
        tail, period = 0, 1
        for s in range(n_states):
            seen = {}
            x, i = s, 0
            while x not in seen:
                seen[x] = i
                x, i = f[x], i + 1
            tail = max(tail, seen[x])
            period = math.lcm(period, i - seen[x])
        if tail + 2 * period > _MAX_COMPRESSED_RUN:
            period = 0
        tails[a], periods[a] = tail, period
    return tails, periods
