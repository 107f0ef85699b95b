"""CTL model checking on a computation tree, with witness and counterexample paths.

Finite-path semantics. The paths from a node are its downward paths that stop at an end node (a
leaf, or a node where some trajectory stopped); from a root they are the recorded trajectories.
- `EX f`: some child satisfies f, so false at a leaf; `AX f` = `!EX !f`: true at a leaf (weak).
  Whether a trajectory stops at the node does not matter to either.
- `AF f`, `A[f U g]` are strong: every path reaches f (g) before it stops; a trajectory that stops
  at an inner node counts as a path of its own. `AG f`, `A[f W g]` are the weak forms.
- `EG f`: some path keeps f up to its last node. `EF`, `E[f U g]`, `E[f W g]` as usual.
A formula holds on the tree when it holds at every root. These are exactly the LTLf semantics of
the corresponding path formula over all recorded trajectories (see `verify.lift`).

Every temporal operator is `v = x | (y & agg(children v))` for state sets x, y and agg = any
(E) or all (A); `_fixpoint` solves it with two reverse scans over all nodes and one pass over the
segment levels that touches segment heads only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from safety_monitor.specs.ltlf import And, Atom, Const, Equiv, Implies, Not, Or
from safety_monitor.verify.ctl import (
    AF,
    AG,
    AU,
    AW,
    AX,
    EF,
    EG,
    EU,
    EW,
    EX,
    CTLFormula,
    ctl_atoms,
    ctl_text,
    existential_parts,
    is_state_propositional,
)
from safety_monitor.verify.tree import ComputationTree, path_forest

_TRUE, _FALSE = Const(True), Const(False)
_FOREST_NODES = 1 << 20  # nodes per forest of separate paths checked at once (bounds its memory)


@dataclass(frozen=True)
class Evidence:
    """A downward path that shows why a formula has its value at the path's first node."""

    path: tuple[int, ...]  # node ids
    decisive: tuple[tuple[int, tuple[str, ...]], ...]  # (node, predicates whose values decided there)
    notes: tuple[str, ...]  # plain-language steps, in path order
    # the path stops at its last node: it stands for the trajectories that end there, not for the
    # ones that go on (and may satisfy what this path lacks)
    stops: bool = False


@dataclass(frozen=True)
class CTLResult:
    formula: CTLFormula
    holds: bool  # at every root
    sat: np.ndarray  # bool per node
    evidence: Evidence  # from the first failing root (counterexample), else from the first root (witness)


class TreeChecker:
    """Labels a tree with CTL formulas; sub-formula labels are memoised across `check` calls."""

    def __init__(self, tree: ComputationTree, given: Mapping[CTLFormula, np.ndarray] | None = None):
        """`given`: values of some subformulas taken as they are (a path's reading of the tree's
        existential parts, see `breakers`); their evidence is a note, not a path."""
        self.tree = tree
        self._given = dict(given or {})
        self._memo: dict[CTLFormula, np.ndarray] = dict(self._given)
        self._inner = tree.parent >= 0
        self._tail_of_node = tree.segment_tail[tree.segment]
        self._index = np.arange(tree.n_nodes)

    def check(self, f: CTLFormula) -> CTLResult:
        sat = self.values(f)
        roots = self.tree.roots
        failing = roots[~sat[roots]]
        holds = failing.size == 0
        start = int(roots[0] if holds else failing[0])
        return CTLResult(f, holds, sat, self.explain(f, start, bool(sat[start])))

    def breakers(self, result: CTLResult) -> np.ndarray:
        """The trajectories (indices into the tree's names, in input order) whose own path is a
        counterexample of the violated formula: read along that path alone (A ranges over its one
        path), with the formula's existential parts (`existential_parts`) taking the tree's values
        at the path's nodes, it fails.

        Such a reading failing means the tree fails from the path's root (A over more paths only
        fails more), and an E never holds along one path where only another branch satisfies it
        (`AG EF x`). For a formula lifted from LTLf these are exactly the trajectories violating it,
        wherever they branch off. A formula that only several trajectories break together
        (`AG a | AG b`, one run losing `a` and another `b`) may have none.
        """
        tree = self.tree
        ends = np.unique(tree.trajectory_end)
        ends = ends[~result.sat[tree.ancestor_at_depth(ends, 0)]]
        chunk = np.cumsum(tree.depth[ends] + 1) // _FOREST_NODES
        broken = [np.empty(0, dtype=np.int64)]
        for k in np.unique(chunk):
            some = ends[chunk == k]
            forest, checker = self._along_paths(result.formula, some)
            broken.append(some[~checker.values(result.formula)[forest.roots]])
        return np.flatnonzero(np.isin(tree.trajectory_end, np.concatenate(broken)))

    def along(
        self, f: CTLFormula, trajectories: np.ndarray, limit: int | None = None
    ) -> tuple[ComputationTree, list[CTLResult]]:
        """`f` read along each of the first `limit` distinct `trajectories` as `breakers` reads it:
        their separate paths, and per path (in order of first mention) its verdict with a witness
        or counterexample."""
        ends = self.tree.trajectory_end[trajectories]
        _, first = np.unique(ends, return_index=True)
        forest, checker = self._along_paths(f, ends[np.sort(first)][:limit])
        sat = checker.values(f)
        results = [CTLResult(f, bool(sat[r]), sat, checker.explain(f, int(r), bool(sat[r]))) for r in forest.roots]
        return forest, results

    def _along_paths(self, f: CTLFormula, ends: np.ndarray) -> tuple[ComputationTree, TreeChecker]:
        """The paths down to `ends` as separate chains, with a checker that reads `f`'s existential
        parts on this tree."""
        forest, nodes = path_forest(self.tree, ends)
        return forest, TreeChecker(forest, {g: self.values(g)[nodes] for g in existential_parts(f)})

    def holds(self, f: CTLFormula) -> bool:
        """The verdict alone (at every root), without building evidence."""
        return bool(self.values(f)[self.tree.roots].all())

    def values(self, f: CTLFormula) -> np.ndarray:
        got = self._memo.get(f)
        if got is None:
            got = self._compute(f)
            got.setflags(write=False)
            self._memo[f] = got
        return got

    def _compute(self, f: CTLFormula) -> np.ndarray:
        v, end = self.values, self.tree.end
        if isinstance(f, Atom):
            return self.tree.atom(f.name).copy()
        if isinstance(f, Const):
            return np.full(self.tree.n_nodes, f.value)
        if isinstance(f, Not):
            return ~v(f.arg)
        if isinstance(f, And):
            return np.logical_and.reduce([v(a) for a in f.args])
        if isinstance(f, Or):
            return np.logical_or.reduce([v(a) for a in f.args])
        if isinstance(f, Implies):
            return ~v(f.left) | v(f.right)
        if isinstance(f, Equiv):
            return v(f.left) == v(f.right)
        if isinstance(f, EX):
            return self._any_child(v(f.arg))
        if isinstance(f, AX):
            return ~self._any_child(~v(f.arg))
        if isinstance(f, EF):
            return self._fixpoint(v(f.arg), np.ones_like(end), universal=False)
        if isinstance(f, AF):
            return self._fixpoint(v(f.arg), ~end, universal=True)
        if isinstance(f, EG):
            return self._fixpoint(v(f.arg) & end, v(f.arg), universal=False)
        if isinstance(f, AG):
            return self._fixpoint(np.zeros_like(end), v(f.arg), universal=True)
        if isinstance(f, EU):
            return self._fixpoint(v(f.right), v(f.left), universal=False)
        if isinstance(f, AU):
            return self._fixpoint(v(f.right), v(f.left) & ~end, universal=True)
        if isinstance(f, EW):
            return self._fixpoint(v(f.right) | (v(f.left) & end), v(f.left), universal=False)
        if isinstance(f, AW):
            return self._fixpoint(v(f.right), v(f.left), universal=True)
        raise TypeError(f"not a CTL formula: {f!r}")

    def _any_child(self, values: np.ndarray) -> np.ndarray:
        tree = self.tree
        return np.bincount(tree.parent[self._inner & values], minlength=tree.n_nodes) > 0

    def _fixpoint(self, x: np.ndarray, y: np.ndarray, universal: bool) -> np.ndarray:
        """Least solution of v = x | (y & agg(children v)), agg = all (universal) or any.

        Inside a segment v[i] is decided by the first node from i on that has x (true; x wins) or
        lacks y (false): one reverse scan over all nodes settles every such node at once. The rest
        take agg over their segment tail's children, which only needs the segment heads, resolved
        level by level from the deepest (a childless tail: all gives True, any gives False).
        """
        tree = self.tree
        n = tree.n_nodes
        first = np.minimum.accumulate(np.where(x | ~y, self._index, n)[::-1])[::-1]
        decided = first <= self._tail_of_node
        value = np.append(x, False)[first]
        head_decided, head_value = decided[tree.segment_head], value[tree.segment_head]
        tail_agg = np.full(tree.segment_head.size, universal)
        for k in range(tree.n_levels - 1, 0, -1):
            sa, sb = int(tree.level_segments[k]), int(tree.level_segments[k + 1])
            heads = np.where(head_decided[sa:sb], head_value[sa:sb], tail_agg[sa:sb])
            tail_agg[tree.segment_parent[sa:sb][heads != universal]] = not universal
        return np.where(decided, value, tail_agg[tree.segment])

    # ----- evidence -------------------------------------------------------------------------

    def explain(self, f: CTLFormula, node: int, want: bool) -> Evidence:
        """Evidence that `f` has value `want` at `node` (which it must have)."""
        tree, v = self.tree, self.values
        frame = int(tree.depth[node])
        if f in self._given:  # decided on the merged tree, over branches this path does not show
            return Evidence((node,), (), (_given_text(f, frame, want),))
        if is_state_propositional(f):
            atoms = ctl_atoms(f)
            shown = "" if isinstance(f, (Atom, Const)) else " (" + _values_text(tree.valuation(node, atoms)) + ")"
            note = f"{ctl_text(f)} is {_tf(want)} at frame {frame}{shown}"
            return Evidence((node,), ((node, atoms),) if atoms else (), (note,))
        if isinstance(f, Not):
            return self.explain(f.arg, node, not want)
        if isinstance(f, (And, Or)):
            decisive = [a for a in f.args if bool(v(a)[node]) == want]
            if want == isinstance(f, Or):  # one true disjunct or one false conjunct decides
                return self.explain(decisive[0], node, want)
            return _together([self.explain(a, node, want) for a in f.args])
        if isinstance(f, Implies):
            if not want:
                return _together([self.explain(f.left, node, True), self.explain(f.right, node, False)])
            if not v(f.left)[node]:
                return self.explain(f.left, node, False)
            return self.explain(f.right, node, True)
        if isinstance(f, Equiv):
            return _together([self.explain(g, node, bool(v(g)[node])) for g in (f.left, f.right)])
        if isinstance(f, (EX, AX)):
            return self._explain_next(f, node, want)
        left, right, existential, strong = _until_form(f)
        if existential == want:
            return self._walk(f, left, right, existential, strong, node)
        quantifier = "every path" if want else "no path"
        return Evidence((node,), (), (f"{quantifier} from frame {frame} satisfies {_path_text(left, right, strong)}",))

    def _explain_next(self, f, node: int, want: bool) -> Evidence:
        tree = self.tree
        frame = int(tree.depth[node])
        existential = isinstance(f, EX)
        if existential != want:
            if tree.n_children[node] == 0:
                return Evidence((node,), (), (f"frame {frame} has no successor",))
            every = "every successor" if want else "no successor"
            return Evidence((node,), (), (f"{every} of frame {frame} satisfies {ctl_text(f.arg)}",))
        arg_values = self.values(f.arg)
        child = next(int(c) for c in tree.children(node) if arg_values[c] == want)
        after = self.explain(f.arg, child, want)
        return Evidence((node, *after.path), after.decisive, after.notes, after.stops)

    def _walk(self, f, left, right, existential: bool, strong: bool, node: int) -> Evidence:
        """Follow one path that keeps `f`'s value (true for E, false for A) until it is decided,
        a segment at a time: `f` keeps its value along a segment until a deciding node."""
        tree = self.tree
        fv, lv, rv = self.values(f), self.values(left), self.values(right)
        stops_at_end = existential != strong  # E[l W r] may end a witness there, A[l U r] fails there
        keep = bool(fv[node])
        path = [node]
        m = node
        while True:
            tail = int(tree.segment_tail[tree.segment[m]])
            decides = rv[m : tail + 1] | ~lv[m : tail + 1]
            if stops_at_end:
                decides = decides | tree.end[m : tail + 1]
            hits = np.flatnonzero(decides)
            stop = m + int(hits[0]) if hits.size else tail
            path.extend(range(m + 1, stop + 1))
            m = stop
            if hits.size:
                break
            m = next(int(c) for c in tree.children(m) if fv[c] == keep)
            path.append(m)
        if rv[m]:  # existential: reached `right`
            lead = self._held(left, node, m)
            return _then(Evidence(tuple(path), (), lead), self.explain(right, m, True))
        if not lv[m]:  # universal: `left` fails before `right`
            before = "" if right == _FALSE else f" before {ctl_text(right)} holds"
            failed = self.explain(left, m, False)
            failed = replace(failed, notes=(failed.notes[0] + before, *failed.notes[1:]))
            return _then(Evidence(tuple(path), (), ()), failed)
        start, stop = int(tree.depth[node]), int(tree.depth[m])  # the path ends here
        if existential:
            note = f"{ctl_text(left)} holds from frame {start} to the end of the path at frame {stop}"
            return Evidence(tuple(path), (), (note,), stops=True)
        right_atoms = ctl_atoms(right)
        note = (
            f"{ctl_text(right)} is false at frame {stop}, where the path ends"
            if start == stop
            else f"{ctl_text(right)} never holds from frame {start} to the end of the path at frame {stop}"
        )
        return Evidence(
            tuple(path),
            ((m, right_atoms),) if right_atoms else (),
            self._held(left, node, m, until=True) + (note,),
            stops=True,
        )

    def _held(self, left, start: int, stop: int, until: bool = False) -> tuple[str, ...]:
        if left == _TRUE or (start == stop and not until):
            return ()
        a, b = int(self.tree.depth[start]), int(self.tree.depth[stop]) - (0 if until else 1)
        span = f"at frame {a}" if a == b else f"from frame {a} to {b}"
        return (f"{ctl_text(left)} holds {span}",)


def _until_form(f) -> tuple[CTLFormula, CTLFormula, bool, bool]:
    """(left, right, existential, strong) of the until form of a temporal operator."""
    if isinstance(f, EF):
        return _TRUE, f.arg, True, True
    if isinstance(f, AF):
        return _TRUE, f.arg, False, True
    if isinstance(f, EG):
        return f.arg, _FALSE, True, False
    if isinstance(f, AG):
        return f.arg, _FALSE, False, False
    return f.left, f.right, isinstance(f, (EU, EW)), isinstance(f, (EU, AU))


def _given_text(f, frame: int, want: bool) -> str:
    """What a path quantifier decided on the merged tree at `frame`."""
    existential = isinstance(f, (EX, EF, EG, EU, EW))
    quantifier = {(True, True): "some", (True, False): "no", (False, True): "every", (False, False): "not every"}
    if isinstance(f, (EX, AX)):
        what, text = "successor of", ctl_text(f.arg)
    else:
        left, right, _, strong = _until_form(f)
        what, text = "path from", _path_text(left, right, strong)
    return f"{quantifier[existential, want]} {what} frame {frame} in the merged tree satisfies {text}"


def _path_text(left, right, strong: bool) -> str:
    if left == _TRUE:
        return f"F {ctl_text(right)}"
    if right == _FALSE:
        return f"G {ctl_text(left)}"
    return f"{ctl_text(left)} {'U' if strong else 'W'} {ctl_text(right)}"


def _then(first: Evidence, second: Evidence) -> Evidence:
    """`second` starts where `first` ends."""
    return Evidence(
        first.path + second.path[1:], first.decisive + second.decisive, first.notes + second.notes, second.stops
    )


def _together(parts: list[Evidence]) -> Evidence:
    """Evidences that all start at one node; the path is the first that goes anywhere."""
    longest = next((p for p in parts if len(p.path) > 1), parts[0])
    decisive = tuple(d for p in parts if p is longest or len(p.path) == 1 for d in p.decisive)
    notes = tuple(n for p in parts if p is longest or len(p.path) == 1 for n in p.notes)
    stops = longest.stops if len(longest.path) > 1 else any(p.stops for p in parts)
    return Evidence(longest.path, decisive, notes, stops)


def _tf(value: bool) -> str:
    return "true" if value else "false"


def _values_text(values: dict[str, bool]) -> str:
    return ", ".join(f"{k}={_tf(v)}" for k, v in values.items())
