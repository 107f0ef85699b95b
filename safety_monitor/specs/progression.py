"""Table DFAs for formulas with bounded operators, built directly by formula progression.

MONA cannot take them: `F[<=N]` written as N nested X's, or as `y <= x + N` in its logic, exhausts
memory already near N = 30. So a formula with a bound is compiled here instead. A state is what the
rest of the trace must still satisfy, as a positive Boolean combination (a DNF) of obligations
`strong(f)` (a next frame must exist and satisfy f) and `weak(f)` (if there is a next frame it must
satisfy f); reading a letter progresses each obligation one frame:

    F[<=n] a  ->  a now, or strong(F[<=n-1] a) (nothing when n = 0)
    G[<=n] a  ->  a now, and weak(G[<=n-1] a)  (nothing more when n = 0)
    a U[<=n] b -> b now, or (a now and strong(a U[<=n-1] b))

and likewise for X, WX, U, R, G, F. A state accepts when one of its terms holds no strong obligation
(the trace may end there). Pending bounds over the same formula keep only the one that decides
(`F[<=3] b & F[<=5] b` is `F[<=3] b`), so `G(a -> F[<=N] b)` has N + 2 states rather than 2**N.
The result is minimised (Hopcroft), so equal languages give equal tables whichever way they were built.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from safety_monitor.errors import SpecError
from safety_monitor.specs.ltlf import (
    BOUNDED,
    Always,
    And,
    BoundedAlways,
    BoundedEventually,
    BoundedUntil,
    Const,
    Equiv,
    Eventually,
    Formula,
    Implies,
    Last,
    Next,
    Not,
    Or,
    Release,
    Until,
    WeakNext,
    is_propositional,
    truth_table,
)

MAX_STATES = 100_000  # a table of this many states over 16 atoms is 26 MB, and takes about a minute to build

# node kinds of the negation normal form
_PROP, _AND, _OR, _X, _WX, _U, _R, _FB, _GB, _UB, _RB = range(11)
_STRONGER_IS_SMALLER = {_FB: True, _UB: True, _GB: False, _RB: False}  # which pending bound decides

Dnf = frozenset  # of frozensets of obligation codes: 2 * node + (1 if strong)
TRUE: Dnf = frozenset({frozenset()})
FALSE: Dnf = frozenset()


class _Builder:
    def __init__(self, atoms: tuple[str, ...]):
        self.atoms = atoms
        self.nodes: list[tuple] = []
        self.ids: dict[tuple, int] = {}
        self.family: list[tuple | None] = []  # bounded nodes: (kind, operands...) without the counter
        self.count: list[int] = []
        self.memo: dict[tuple[int, int], Dnf] = {}

    def node(self, *key) -> int:
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.nodes)
            self.nodes.append(key)
            kind = key[0]
            self.family.append((kind, *key[2:]) if kind in _STRONGER_IS_SMALLER else None)
            self.count.append(key[1] if kind in _STRONGER_IS_SMALLER else 0)
        return found

    def prop(self, f: Formula) -> int:
        return self.node(_PROP, tuple(truth_table(f, self.atoms).tolist()))

    def nnf(self, f: Formula, positive: bool = True) -> int:
        """The node for f (or for !f), negations pushed down to the propositional parts."""
        if is_propositional(f):
            return self.prop(f if positive else Not(f))
        n = self.nnf
        if isinstance(f, Not):
            return n(f.arg, not positive)
        if isinstance(f, (And, Or)):
            kind = _AND if isinstance(f, And) == positive else _OR
            return self.node(kind, tuple(sorted({n(a, positive) for a in f.args})))
        if isinstance(f, Implies):
            return n(Or((Not(f.left), f.right)), positive)
        if isinstance(f, Equiv):
            same = Or((And((f.left, f.right)), And((Not(f.left), Not(f.right)))))
            return n(same if positive else Or((And((f.left, Not(f.right))), And((Not(f.left), f.right)))))
        if isinstance(f, Last):
            return n(WeakNext(Const(False)) if positive else Next(Const(True)))
        if isinstance(f, (Next, WeakNext)):
            strong = isinstance(f, Next) == positive
            return self.node(_X if strong else _WX, n(f.arg, positive))
        if isinstance(f, Always):
            return n(Release(Const(False), f.arg) if positive else Until(Const(True), Not(f.arg)))
        if isinstance(f, Eventually):
            return n(Until(Const(True), f.arg) if positive else Release(Const(False), Not(f.arg)))
        if isinstance(f, (Until, Release)):
            kind = _U if isinstance(f, Until) == positive else _R
            return self.node(kind, n(f.left, positive), n(f.right, positive))
        if not isinstance(f, BOUNDED):  # atoms and constants are propositional, handled above
            raise TypeError(f"not a formula: {f!r}")
        frames = f.bound.frames
        if frames is None:
            raise SpecError(f"bound {f.bound.text()} is in seconds: resolve it at a control rate before compiling")
        if isinstance(f, BoundedEventually):
            return self.node(_FB if positive else _GB, frames, n(f.arg, positive))
        if isinstance(f, BoundedAlways):
            return self.node(_GB if positive else _FB, frames, n(f.arg, positive))
        if isinstance(f, BoundedUntil):
            return self.node(_UB if positive else _RB, frames, n(f.left, positive), n(f.right, positive))
        raise TypeError(f"not a formula: {f!r}")

    def progress(self, node: int, letter: int) -> Dnf:
        """What the frames after this one must satisfy for `node` to hold at this frame."""
        key = (node, letter)
        found = self.memo.get(key)
        if found is not None:
            return found
        kind, *rest = self.nodes[node]
        p = self.progress
        if kind == _PROP:
            out = TRUE if rest[0][letter] else FALSE
        elif kind == _AND:
            out = TRUE
            for c in rest[0]:
                out = self.conj(out, p(c, letter))
        elif kind == _OR:
            out = FALSE
            for c in rest[0]:
                out = self.disj(out, p(c, letter))
        elif kind == _X:
            out = _leaf(rest[0], strong=True)
        elif kind == _WX:
            out = _leaf(rest[0], strong=False)
        elif kind == _U:
            out = self.disj(p(rest[1], letter), self.conj(p(rest[0], letter), _leaf(node, strong=True)))
        elif kind == _R:
            out = self.conj(p(rest[1], letter), self.disj(p(rest[0], letter), _leaf(node, strong=False)))
        else:
            frames, *args = rest
            later = self.node(kind, frames - 1, *args) if frames > 0 else None
            if kind == _FB:
                out = self.disj(p(args[0], letter), FALSE if later is None else _leaf(later, strong=True))
            elif kind == _GB:
                out = self.conj(p(args[0], letter), TRUE if later is None else _leaf(later, strong=False))
            elif kind == _UB:
                go_on = FALSE if later is None else self.conj(p(args[0], letter), _leaf(later, strong=True))
                out = self.disj(p(args[1], letter), go_on)
            else:  # _RB, the dual of _UB
                hold = TRUE if later is None else self.disj(p(args[0], letter), _leaf(later, strong=False))
                out = self.conj(p(args[1], letter), hold)
        self.memo[key] = out
        return out

    def conj(self, a: Dnf, b: Dnf) -> Dnf:
        if a is TRUE or not b:
            return b
        if b is TRUE or not a:
            return a
        return self.simplify([self.reduce(x | y) for x in a for y in b])

    def disj(self, a: Dnf, b: Dnf) -> Dnf:
        if not a or b is TRUE:
            return b
        if not b or a is TRUE:
            return a
        return self.simplify([*a, *b])

    def reduce(self, term: frozenset) -> frozenset:
        """Of the pending bounds over one formula in a conjunction, only the one that decides stays."""
        best: dict[tuple, int] = {}
        for code in term:
            fam = self.family[code >> 1]
            if fam is None:
                continue
            key = (fam, code & 1)
            other = best.get(key)
            if other is None or self._stronger(fam[0], code, other):
                best[key] = code
        if len(best) == sum(self.family[c >> 1] is not None for c in term):
            return term
        return frozenset(c for c in term if self.family[c >> 1] is None) | frozenset(best.values())

    def _stronger(self, kind: int, a: int, b: int) -> bool:
        """Obligation a (same family and strength as b, both bounded operators of `kind`) implies b."""
        na, nb = self.count[a >> 1], self.count[b >> 1]
        return na <= nb if _STRONGER_IS_SMALLER[kind] else na >= nb

    def _implies(self, t: frozenset, k: frozenset) -> bool:
        """Term t implies term k: each obligation of k is implied by one of t."""
        if k <= t:
            return True
        for code in k:
            if code in t:
                continue
            fam = self.family[code >> 1]
            if fam is None or not any(
                self.family[c >> 1] == fam and c & 1 == code & 1 and self._stronger(fam[0], c, code) for c in t
            ):
                return False
        return True

    def simplify(self, terms: list[frozenset]) -> Dnf:
        """Drop every term that implies another one (absorption)."""
        if frozenset() in terms:
            return TRUE
        kept: list[frozenset] = []
        for t in sorted(set(terms), key=lambda t: (len(t), sorted(t))):
            if not any(self._implies(t, k) for k in kept):
                kept = [k for k in kept if not self._implies(k, t)] + [t]
        return frozenset(kept)


def _leaf(node: int, strong: bool) -> Dnf:
    return frozenset({frozenset({2 * node + strong})})


def progression_dfa(f: Formula, atoms: tuple[str, ...]):
    """(table, accepting, initial) of a minimal DFA for f over `atoms` (letters as in TableDFA)."""
    b = _Builder(atoms)
    root = b.nnf(f)
    n_letters = 1 << len(atoms)
    start = _leaf(root, strong=True)  # the trace is not empty: a first frame must exist and satisfy f
    index: dict[Dnf, int] = {start: 0}
    states, rows = [start], []
    succ_memo: dict[tuple[frozenset, int], Dnf] = {}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        row = []
        for letter in range(n_letters):
            out = FALSE
            for term in state:
                key = (term, letter)
                step = succ_memo.get(key)
                if step is None:
                    step = TRUE
                    for code in term:
                        step = b.conj(step, b.progress(code >> 1, letter))
                        if not step:
                            break
                    succ_memo[key] = step
                out = b.disj(out, step)
                if out is TRUE:
                    break
            target = index.get(out)
            if target is None:
                if len(states) >= MAX_STATES:
                    raise SpecError(
                        f"the automaton needs more than {MAX_STATES} states (too many bounds pending at "
                        "once); shorten the bounds or split the property"
                    )
                target = index[out] = len(states)
                states.append(out)
                queue.append(out)
            row.append(target)
        rows.append(row)
    table = np.array(rows, dtype=np.int64)
    accepting = np.array([any(all(not c & 1 for c in t) for t in s) for s in states], dtype=bool)
    table, accepting, initial = minimise(table, accepting)
    return table, accepting, _merge_initial(table, initial)


def _merge_initial(table: np.ndarray, initial: int) -> int:
    """The initial state's acceptance only speaks of the empty trace, which is no LTLf trace: when no
    transition returns to it, a state with the same transitions serves as well (MONA's tables agree)."""
    if (table == initial).any():
        return initial
    same = np.flatnonzero((table == table[initial]).all(axis=1))
    return int(same[same != initial][0]) if same.size > 1 else initial


def minimise(table: np.ndarray, accepting: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Hopcroft's partition refinement; returns (table, accepting, initial) of the quotient."""
    n, n_letters = table.shape
    inverse: list[list[list[int]]] = [[[] for _ in range(n)] for _ in range(n_letters)]
    for s, row in enumerate(table.tolist()):
        for a, t in enumerate(row):
            inverse[a][t].append(s)
    block_of = [0 if acc else 1 for acc in accepting.tolist()]
    blocks: list[set[int]] = [set(np.flatnonzero(accepting).tolist()), set(np.flatnonzero(~accepting).tolist())]
    if not blocks[1]:
        blocks.pop()
    elif not blocks[0]:
        blocks = [blocks[1]]
        block_of = [0] * n
    work = {(min(range(len(blocks)), key=lambda i: len(blocks[i])), a) for a in range(n_letters)}
    while work:
        splitter, a = work.pop()
        preds: dict[int, set[int]] = {}
        for t in blocks[splitter]:
            for s in inverse[a][t]:
                preds.setdefault(block_of[s], set()).add(s)
        for bi, hit in preds.items():
            block = blocks[bi]
            if len(hit) == len(block):
                continue
            rest = block - hit
            small, large = (hit, rest) if len(hit) <= len(rest) else (rest, hit)
            blocks[bi] = large
            new = len(blocks)
            blocks.append(small)
            for s in small:
                block_of[s] = new
            for letter in range(n_letters):  # `new` is the smaller half: enough whether or not bi is pending
                work.add((new, letter))
    ids = np.array(block_of, dtype=np.int64)
    reps = [min(b) for b in blocks]
    quotient = ids[table[reps]]
    return quotient, accepting[reps], int(ids[0])
