"""The compiled automaton every monitor steps: a dense transition table over a formula's own atoms.

Letters are bit vectors: bit i of a letter is the value of `atoms[i]`; atoms are sorted by name.
Traces are read from `initial` (MONA's real initial state, not its dummy state 0), one letter per frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class TableDFA:
    """Deterministic automaton as `table[state, letter] -> state` (int32, shape states x 2**atoms)."""

    formula: str
    atoms: tuple[str, ...]
    table: np.ndarray
    initial: int
    accepting: np.ndarray  # bool per state
    rejecting_sink: np.ndarray  # bool per state: no accepting state is reachable from it

    @property
    def n_states(self) -> int:
        return int(self.table.shape[0])

    def reachable(self) -> np.ndarray:
        """bool per state: entered by some non-empty trace (the states a monitor can be in after a frame)."""
        seen = np.zeros(self.n_states, dtype=bool)
        frontier = np.unique(self.table[self.initial])
        while frontier.size:
            seen[frontier] = True
            successors = np.unique(self.table[frontier])
            frontier = successors[~seen[successors]]
        return seen

    def letter(self, valuation: Mapping[str, bool]) -> int:
        """Encode a valuation (extra keys ignored; a missing atom is a KeyError) as a letter."""
        code = 0
        for i, atom in enumerate(self.atoms):
            if valuation[atom]:
                code |= 1 << i
        return code

    def run(self, letters: Iterable[int], state: int | None = None) -> int:
        """State after reading `letters` from `state` (default: the initial state)."""
        s = self.initial if state is None else state
        table = self.table
        for a in letters:
            s = int(table[s, a])
        return s

    def accepts(self, valuations: Iterable[Mapping[str, bool]]) -> bool:
        """LTLf finite-trace acceptance of a whole trace."""
        return bool(self.accepting[self.run(self.letter(v) for v in valuations)])
