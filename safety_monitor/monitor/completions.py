"""Three-valued stepping: one property over every completion of its unknown predicates at once.

A completion fills every unknown value of the trace with true or false; each completion is a
two-valued trace the property automaton (automaton.py) runs on deterministically. The monitor steps
the set of (automaton state, flag) pairs those runs can be in, exactly: the successor of a set under a
frame whose atoms U are unknown is the union over the 2^|U| letters that agree with the known atoms.
The verdict follows the completions only where they all agree (docs/semantics.md, "Unknown inputs"):

- with no episode reported open, an episode opens on the frame by which every completion has been
  inside an episode of its own at some moment since the monitor's last closing (or the start);
- with one open, it closes on the frame by which every completion has been outside an episode at some
  moment since the opening.

The flag of a pair records that "has been" for its completions. Within a frame the moments are the
two-valued automaton's own order: recovery (RECOVERED), rejection (OPENED), closing at once
(CLOSED_AT_ONCE); the check runs after each. With one completion this is the automaton itself: its
state q is the set {(q, no)} with the episode open exactly in its recovery states, which is why the
set ids below give such singletons q's own index, and the live and batch monitors step them through
their two-valued tables.

A frame is read as a partial letter, one int: bit i is atom i's value (0 when unknown), bit
n_atoms + i says atom i is unknown; with every atom known it is the automaton's own letter.

A pair (q, yes) beside (q, no) is dropped: completions in the same state behave alike from here on,
and those that have not yet been in (or out) decide when the monitor moves, so sets collapse back to
singletons soon after the unknown frames.
"""

from __future__ import annotations

import functools

import numpy as np

from safety_monitor.monitor.automaton import CLOSED_AT_ONCE, OPENED, RECOVERED, RUN_START, MonitorAutomaton

UNKNOWN_TRIGGER = -1  # the trigger's value differs between completions of the frame
_MEMO_SIZE = 1 << 16  # memoised steps kept per property before the memo starts afresh


class Completions:
    """A property's state sets, interned as ids (0 .. n_states - 1: the automaton's own states), and
    their memoised steps; shared by every monitor of the automaton."""

    def __init__(self, auto: MonitorAutomaton) -> None:
        self.auto = auto
        self.n_atoms = len(auto.atoms)
        self._next = auto.next
        self._code = auto.code
        self._in_episode = auto.main_state < 0
        self._rest = auto.rest
        n = auto.n_states
        self._keys: list[tuple[bool, tuple[tuple[int, bool], ...]]] = [
            (bool(self._in_episode[q]), ((q, False),)) for q in range(n)
        ]
        self._ids = {key: i for i, key in enumerate(self._keys)}
        self._memo: dict[tuple[int, int], tuple[int, int, bool, int]] = {}
        self._triggers: dict[int, int] = {}

    def step(self, sid: int, plet: int) -> tuple[int, int, bool, int]:
        """(next set id, code, blind, trigger) of set `sid` on partial letter `plet`: the code's
        RECOVERED, OPENED, CLOSED_AT_ONCE bits are the monitor's episode events, RUN_START as in the
        automaton; blind = an atom is unknown or the completions disagree on whether this frame is
        violating; trigger = 1, 0 or UNKNOWN_TRIGGER over the completions."""
        key = (sid, plet)
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) >= _MEMO_SIZE:  # bounded memory on endless streams of new partial letters
                self._memo.clear()
            hit = self._memo[key] = self._compute(sid, plet)
        return hit

    def trigger(self, plet: int) -> int:
        value = self._triggers.get(plet)
        if value is None:
            seen = self.auto.trigger_value[self._letters(plet)]
            value = self._triggers[plet] = int(seen[0]) if seen.all() or not seen.any() else UNKNOWN_TRIGGER
        return value

    def at_rest(self, sid: int) -> bool:
        """Every completion at rest: nothing pending in any of them."""
        return all(self._rest[q] for q, _ in self._keys[sid][1])

    def opens(self, sid: int, plet: int) -> bool:
        return bool(self.step(sid, plet)[1] & OPENED)

    def _letters(self, plet: int) -> np.ndarray:
        unknown = plet >> self.n_atoms
        return (plet & ((1 << self.n_atoms) - 1)) | _subsets(unknown)

    def _compute(self, sid: int, plet: int) -> tuple[int, int, bool, int]:
        is_open, pairs = self._keys[sid]
        letters = self._letters(plet)
        qs = np.repeat(np.array([q for q, _ in pairs]), letters.size)
        flag = np.repeat(np.array([b for _, b in pairs]), letters.size)
        a = np.tile(letters, len(pairs))
        q2, code = self._next[qs, a], self._code[qs, a]
        recovered, opened, at_once = ((code & bit) != 0 for bit in (RECOVERED, OPENED, CLOSED_AT_ONCE))
        inside = self._in_episode[qs]
        violating = (inside & ~recovered) | opened
        out = 0
        inside = inside & ~recovered  # moment 1: recoveries
        if is_open:
            flag = flag | recovered
            if flag.all():
                is_open, out, flag = False, out | RECOVERED, inside.copy()
        inside = inside | opened  # moment 2: rejections
        if not is_open:
            flag = flag | opened
            if flag.all():
                is_open, out, flag = True, out | OPENED, ~inside
        inside = inside & ~at_once  # moment 3: episodes closed on their opening frame
        if is_open:
            flag = flag | at_once
            if flag.all():
                is_open, out, flag = False, out | CLOSED_AT_ONCE, inside.copy()
        if (self._rest[qs].all() and not self._rest[q2].all()) or out & RECOVERED:
            out |= RUN_START
        kept = set(zip(q2.tolist(), flag.tolist()))
        kept = {(q, b) for q, b in kept if not b or (q, False) not in kept}
        blind = bool(plet >> self.n_atoms) or bool(violating.any() and not violating.all())
        return self._intern((is_open, tuple(sorted(kept)))), out, blind, self.trigger(plet)

    def _intern(self, key: tuple[bool, tuple[tuple[int, bool], ...]]) -> int:
        sid = self._ids.get(key)
        if sid is None:
            sid = self._ids[key] = len(self._keys)
            self._keys.append(key)
        return sid

    def decisive(self, sid: int, plet: int) -> tuple[str, ...]:
        """Known atoms whose flip alone, on the opening frame, would have kept the monitor from opening."""
        known = ~(plet >> self.n_atoms)
        return tuple(
            atom for i, atom in enumerate(self.auto.atoms) if known >> i & 1 and not self.opens(sid, plet ^ (1 << i))
        )


@functools.lru_cache(maxsize=4096)
def _subsets(mask: int) -> np.ndarray:
    """Every subset of the bits of `mask`, as ints."""
    bits = [1 << i for i in range(mask.bit_length()) if mask >> i & 1]
    out = np.zeros(1, dtype=np.int64)
    for b in bits:
        out = np.concatenate((out, out | b))
    out.setflags(write=False)
    return out
