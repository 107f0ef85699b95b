"""CTL on merged trees against a brute-force path enumerator over the raw trajectories."""

import random

import numpy as np
import pytest

from safety_monitor.errors import SourceError, SpecError
from safety_monitor.specs.ltlf import And, Atom, Const, Equiv, Implies, Not, Or
from safety_monitor.verify import check
from safety_monitor.verify.check import TreeChecker
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
    ctl_text,
    existential_parts,
    parse_ctl,
)
from safety_monitor.verify.tree import build_tree, tree_from_valuations

ATOMS = ("p", "q")


def random_trajectories(rng: random.Random) -> list[tuple[tuple[bool, ...], ...]]:
    """Trajectories that share prefixes, stop early, and sometimes start differently."""
    out = []
    for _ in range(rng.randint(1, 7)):
        prefix = list(rng.choice(out)[: rng.randint(0, 4)]) if out and rng.random() < 0.8 else []
        tail = [tuple(rng.random() < 0.5 for _ in ATOMS) for _ in range(rng.randint(0 if prefix else 1, 4))]
        out.append(tuple(prefix + tail))
    return out


def random_ctl(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([Atom("p"), Atom("q"), Atom("p"), Atom("q"), Const(True), Const(False)])
    kind = rng.choice(
        ["not", "and", "or", "implies", "equiv", "EX", "AX", "EF", "AF", "EG", "AG", "EU", "AU", "EW", "AW"]
    )
    sub = lambda: random_ctl(rng, depth - 1)  # noqa: E731
    if kind == "not":
        return Not(sub())
    if kind in ("and", "or"):
        return (And if kind == "and" else Or)((sub(), sub()))
    if kind in ("implies", "equiv"):
        return (Implies if kind == "implies" else Equiv)(sub(), sub())
    unary = {"EX": EX, "AX": AX, "EF": EF, "AF": AF, "EG": EG, "AG": AG}
    if kind in unary:
        return unary[kind](sub())
    return {"EU": EU, "AU": AU, "EW": EW, "AW": AW}[kind](sub(), sub())


class BruteForce:
    """CTL by definition: enumerate every path (a recorded trajectory's suffix) from a prefix."""

    def __init__(self, trajectories):
        self.trajectories = set(trajectories)

    def paths(self, prefix):
        k = len(prefix)
        return [[t[:i] for i in range(k, len(t) + 1)] for t in self.trajectories if t[:k] == prefix]

    def holds(self, f, s) -> bool:
        h = self.holds
        if isinstance(f, Atom):
            return s[-1][ATOMS.index(f.name)]
        if isinstance(f, Const):
            return f.value
        if isinstance(f, Not):
            return not h(f.arg, s)
        if isinstance(f, And):
            return all(h(a, s) for a in f.args)
        if isinstance(f, Or):
            return any(h(a, s) for a in f.args)
        if isinstance(f, Implies):
            return (not h(f.left, s)) or h(f.right, s)
        if isinstance(f, Equiv):
            return h(f.left, s) == h(f.right, s)
        paths = self.paths(s)
        quantify = any if isinstance(f, (EX, EF, EG, EU, EW)) else all
        if isinstance(f, (EX, AX)):
            return (
                quantify(h(f.arg, p[1]) for p in paths if len(p) > 1)
                if isinstance(f, EX)
                else all(h(f.arg, p[1]) for p in paths if len(p) > 1)
            )
        if isinstance(f, (EF, AF)):
            return quantify(any(h(f.arg, x) for x in p) for p in paths)
        if isinstance(f, (EG, AG)):
            return quantify(all(h(f.arg, x) for x in p) for p in paths)
        weak = isinstance(f, (EW, AW))
        return quantify(self.until(f.left, f.right, p, weak) for p in paths)

    def until(self, left, right, path, weak):
        for x in path:
            if self.holds(right, x):
                return True
            if not self.holds(left, x):
                return False
        return weak


class ReadAlong(BruteForce):
    """`f` along one trajectory alone, except its existential parts, which the whole tree decides."""

    def __init__(self, trajectory, tree, parts):
        super().__init__([trajectory])
        self.tree, self.parts = tree, parts

    def holds(self, f, s) -> bool:
        return self.tree.holds(f, s) if f in self.parts else super().holds(f, s)


def test_existential_parts_are_the_e_quantifiers_once_negations_are_pushed_in():
    parts = lambda text: [ctl_text(g) for g in existential_parts(parse_ctl(text))]  # noqa: E731
    assert parts("AG(p -> AF q)") == [] and parts("AG !EF p") == [] and parts("EF p -> AG q") == []
    assert parts("AG EF p") == ["EF(p)"] and parts("AG !AG p") == ["AG(p)"] and parts("AF q -> p") == ["AF(q)"]
    assert parts("AG(p <-> AX q)") == ["AX(q)"] and parts("A[EX p U q] | EG q") == ["EX(p)", "EG(q)"]


def test_a_trajectory_whose_node_another_branch_rescues_does_not_break_ag_ef():
    # b stops where c goes on to x, so no node of b lacks EF x on the tree; d's last node does
    b, c, d = (False, False, False), (False, False, False, True), (False, False, True, False)
    tree = make_tree([tuple((x, False) for x in t) for t in (b, c, d)])
    checker = TreeChecker(tree)
    result = checker.check(parse_ctl("AG EF p"))
    assert not result.holds and checker.breakers(result).tolist() == [2]
    _, (along,) = checker.along(result.formula, checker.breakers(result))
    assert not along.holds and along.evidence.notes == ("no path from frame 3 in the merged tree satisfies F p",)


def node_prefixes(tree):
    return {
        n: tuple(tuple(bool(b) for b in tree.letters[tree.letter[m]]) for m in tree.path_to(n))
        for n in range(tree.n_nodes)
    }


def make_tree(trajectories):
    arrays = [np.array(t, dtype=bool).reshape(len(t), len(ATOMS)) for t in trajectories]
    return build_tree(arrays, ATOMS)


@pytest.mark.parametrize("seed", range(40))
def test_tree_has_one_node_per_distinct_prefix(seed):
    trajectories = random_trajectories(random.Random(seed))
    tree = make_tree(trajectories)
    prefixes = node_prefixes(tree)
    expected = {t[:k] for t in trajectories for k in range(1, len(t) + 1)}
    assert sorted(prefixes.values()) == sorted(expected)  # every distinct prefix exactly once
    assert {prefixes[int(e)] for e in np.flatnonzero(tree.end)} == set(trajectories)
    for i, t in enumerate(trajectories):
        assert prefixes[int(tree.trajectory_end[i])] == t
        through = set(tree.trajectories_through(int(tree.trajectory_end[i])))
        assert through == {j for j, u in enumerate(trajectories) if u[: len(t)] == t}
    for n in range(tree.n_nodes):  # children() agrees with the parent array
        assert sorted(tree.children(n).tolist()) == np.flatnonzero(tree.parent == n).tolist()


@pytest.mark.parametrize("seed", range(60))
def test_checker_matches_path_enumeration(seed):
    rng = random.Random(1000 + seed)
    trajectories = random_trajectories(rng)
    tree = make_tree(trajectories)
    brute = BruteForce(trajectories)
    prefixes = node_prefixes(tree)
    checker = TreeChecker(tree)
    for _ in range(12):
        f = random_ctl(rng, 3)
        values = checker.values(f)
        expected = [brute.holds(f, prefixes[n]) for n in range(tree.n_nodes)]
        assert values.tolist() == expected, ctl_text(f)
        result = checker.check(f)
        assert result.holds == all(brute.holds(f, (t[0],)) for t in trajectories)


def evidence_is_a_path(tree, evidence):
    path = evidence.path
    return all(tree.parent[b] == a for a, b in zip(path, path[1:]))


@pytest.mark.parametrize("seed", range(30))
def test_counterexample_paths_are_real_and_show_the_violation(seed):
    rng = random.Random(5000 + seed)
    trajectories = random_trajectories(rng)
    tree = make_tree(trajectories)
    brute = BruteForce(trajectories)
    prefixes = node_prefixes(tree)
    checker = TreeChecker(tree)
    for text in ("AG !q", "AG(p -> AF q)", "A[!q U p]", "AF(p & q)", "AG(p -> AX !p)"):
        result = checker.check(parse_ctl(text))
        path = result.evidence.path
        assert evidence_is_a_path(tree, result.evidence)
        assert tree.parent[path[0]] < 0  # starts at a root
        if result.holds:
            continue
        frames = [prefixes[n][-1] for n in tree.path_to(path[-1])]
        if text == "AG !q":  # the path ends at a frame where q holds
            assert frames[-1][1] and not any(f[1] for f in frames[:-1])
        elif text == "AF(p & q)":  # a whole recorded trajectory without p & q
            assert tree.end[path[-1]] and not any(f[0] and f[1] for f in frames)
        elif text == "A[!q U p]":  # q before any p, or a trajectory with neither
            assert not any(f[0] for f in frames) and (frames[-1][1] or tree.end[path[-1]])
        elif text == "AG(p -> AF q)":  # p at some frame and no q from there to a path end
            assert tree.end[path[-1]]
            k = next(i for i, f in enumerate(frames) if f[0] and not any(g[1] for g in frames[i:]))
            assert not brute.holds(parse_ctl("AF q"), prefixes[tree.path_to(path[-1])[k]])


@pytest.mark.parametrize("seed", range(40))
def test_breakers_are_the_trajectories_whose_own_path_fails_from_a_failing_root(seed, monkeypatch):
    if seed % 2:  # forests of a few nodes: the paths are checked in several batches
        monkeypatch.setattr(check, "_FOREST_NODES", 4)
    rng = random.Random(7000 + seed)
    trajectories = random_trajectories(rng)
    tree = make_tree(trajectories)
    brute = BruteForce(trajectories)
    checker = TreeChecker(tree)
    for _ in range(12):
        f = random_ctl(rng, 3)
        result = checker.check(f)
        if result.holds:
            continue
        parts = existential_parts(f)
        alone = [not ReadAlong(t, brute, parts).holds(f, t[:1]) and not brute.holds(f, t[:1]) for t in trajectories]
        if not parts:  # universal: exactly the trajectories that break it alone
            assert alone == [not BruteForce([t]).holds(f, t[:1]) and not brute.holds(f, t[:1]) for t in trajectories]
        broken = checker.breakers(result)
        assert broken.tolist() == [i for i, bad in enumerate(alone) if bad], ctl_text(f)
        if not broken.size:
            continue
        forest, along = checker.along(f, broken, limit=2)
        shown = sorted({trajectories[i] for i in broken}, key=lambda t: trajectories.index(t))[:2]
        assert len(along) == len(shown) and not any(r.holds for r in along)
        for t, r in zip(shown, along):  # each counterexample runs down its own trajectory
            frames = [
                tuple(bool(b) for b in forest.letters[forest.letter[n]]) for n in forest.path_to(r.evidence.path[-1])
            ]
            assert tuple(frames) == t[: len(frames)]


def test_finite_path_conventions_at_leaves_and_inner_ends():
    # one trajectory stops at frame 1 (inner end), the other goes on to frame 2
    tree = tree_from_valuations([[{"p": False}, {"p": False}], [{"p": False}, {"p": False}, {"p": True}]])
    checker = TreeChecker(tree)
    leaf = int(np.flatnonzero(tree.n_children == 0)[0])
    assert checker.values(parse_ctl("AX false"))[leaf] and not checker.values(parse_ctl("EX true"))[leaf]
    assert not checker.check(parse_ctl("AF p")).holds  # the short trajectory never sees p
    assert checker.check(parse_ctl("EF p")).holds and checker.check(parse_ctl("EG !p")).holds
    assert checker.check(parse_ctl("AX AX p")).holds  # weak AX: the inner end does not count


def test_parser_round_trip_and_errors():
    for text in ("AG(p -> AF q)", "A[p U q] & E[!p W (q | r)]", "AX EX true", "!(a <-> b) | EG c"):
        f = parse_ctl(text)
        assert parse_ctl(ctl_text(f)) == f
    assert parse_ctl("AGp") == AG(Atom("p"))
    with pytest.raises(SpecError, match="column 8"):
        parse_ctl("a -> b -> c")
    with pytest.raises(SpecError, match="end of formula"):
        parse_ctl("AG(p")


def test_unknown_predicate_and_bad_shapes_are_clear_errors():
    tree = tree_from_valuations([[{"p": True}]], names=["run_a"])
    with pytest.raises(SourceError, match="'zz' is not recorded"):
        TreeChecker(tree).values(parse_ctl("AG zz"))
    with pytest.raises(SourceError, match="non-empty"):
        build_tree([np.zeros((0, 1), dtype=bool)], ["p"])
    with pytest.raises(SourceError, match="no value for predicate 'q'"):
        tree_from_valuations([[{"p": True, "q": False}, {"p": True}]])


def test_identical_and_late_branching_trajectories_share_nodes():
    base = np.zeros((50, 2), dtype=bool)
    variants = []
    for k in range(10):
        v = base.copy()
        v[45:, 0] = bool(k % 2)  # two outcomes branching at frame 45
        variants.append(v)
    tree = build_tree(variants, ATOMS)
    assert tree.n_frames == 500 and tree.n_nodes == 45 + 2 * 5
    assert tree.n_levels == 2 and tree.roots.tolist() == [0]


def test_many_predicates_and_unsorted_input_order():
    rng = np.random.default_rng(3)
    atoms = tuple(f"p{i}" for i in range(70))  # more than 64 predicates: rows wider than one word
    base = rng.random((30, 70)) < 0.5
    runs = [base[:20], base, np.vstack([base[:10], ~base[10:25]]), base[:20]]
    tree = build_tree(runs, atoms, ["a", "b", "c", "d"])
    assert tree.n_nodes == 30 + 15 and tree.n_frames == 95
    assert tree.trajectory_end[0] == tree.trajectory_end[3]  # identical runs end at one node
    assert tree.trajectories_through(int(tree.trajectory_end[0])) == [0, 1, 3]
    last = int(tree.trajectory_end[2])
    assert tree.valuation(last) == dict(zip(atoms, (~base[24]).tolist()))


def test_witnesses_and_counterexamples_run_to_the_deciding_frame():
    # one run stops at frame 1 (an inner end), the other reaches q at frame 3
    tree = tree_from_valuations([[{"q": False}] * 2, [{"q": False}] * 3 + [{"q": True}]], names=["short", "long"])
    checker = TreeChecker(tree)
    ef = checker.check(parse_ctl("EF q"))
    assert ef.holds and [int(tree.depth[n]) for n in ef.evidence.path] == [0, 1, 2, 3]  # not cut at the inner end
    af = checker.check(parse_ctl("AF q"))
    assert not af.holds and [int(tree.depth[n]) for n in af.evidence.path] == [0, 1]
    assert af.evidence.notes == ("q never holds from frame 0 to the end of the path at frame 1",)
    eg = checker.check(parse_ctl("EG !q"))
    assert eg.holds and len(eg.evidence.path) == 2  # a witness may stop where a run stops
    assert checker.holds(parse_ctl("EF q")) and not checker.holds(parse_ctl("AF q"))


@pytest.mark.parametrize(
    "text, hint",
    [
        ("AG(a -> F b)", "LTL's F is not a CTL operator: use AF or EF"),
        ("G(a)", "LTL's G is not a CTL operator: use AG or EG"),
        ("AG(a -> WX b)", "LTL's WX is not a CTL operator: use AX"),
        ("AG(a U b)", "'U' needs a path quantifier and brackets: A[f U g] or E[f U g]"),
        ("AG(a -> AF b", "missing ')' for the '(' at column 3"),
        ("A[a U b", "missing ']' for the '[' at column 2"),
        ("AG(a -> AF b))", "')' at column 14 has no matching '('"),
        ("AG(Grasped)", "atoms are lower-case snake_case"),
        ("a -> b -> c", "'->' and '<->' need parentheses to chain"),
    ],
)
def test_syntax_errors_hint_at_the_likely_mistake(text, hint):
    with pytest.raises(SpecError) as info:
        parse_ctl(text)
    message = str(info.value).splitlines()[0]
    assert hint in message
    assert ("chain" in message) == ("->" in hint)
