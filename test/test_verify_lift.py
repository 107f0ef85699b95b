"""Lifted CTL on the merged tree agrees with LTLf on every trajectory; what cannot be lifted says so."""

import random

import numpy as np
import pytest

from safety_monitor.specs.ltlf import (
    Always,
    And,
    Atom,
    Const,
    Eventually,
    Implies,
    Not,
    Or,
    Release,
    Until,
    WeakNext,
    evaluate,
    parse,
    to_text,
)
from safety_monitor.specs.model import Property
from safety_monitor.verify.check import TreeChecker
from safety_monitor.verify.ctl import ctl_text
from safety_monitor.verify.lift import NotLiftable, lift, lift_properties, lift_text
from safety_monitor.verify.tree import build_tree

ATOMS = ("p", "q", "r")


def random_prop(rng, depth=1):
    if depth == 0 or rng.random() < 0.5:
        a = Atom(rng.choice(ATOMS))
        return Not(a) if rng.random() < 0.3 else a
    return rng.choice([And, Or])((random_prop(rng, depth - 1), random_prop(rng, depth - 1)))


def random_ltl(rng, depth):
    """Mostly the universal fragment, with some formulas outside it."""
    if depth == 0:
        return random_prop(rng)
    sub = lambda: random_ltl(rng, depth - 1)  # noqa: E731
    kind = rng.choice(["G", "F", "U", "R", "W", "WX", "and", "or", "implies", "not", "prop"])
    if kind == "G":
        return Always(sub())
    if kind == "F":
        return Eventually(random_prop(rng) if rng.random() < 0.8 else sub())
    if kind in ("U", "R"):
        return (Until if kind == "U" else Release)(random_prop(rng), random_prop(rng))
    if kind == "W":
        p, q = random_prop(rng), random_prop(rng)
        return Or((Until(p, q), Always(p)))
    if kind == "WX":
        return WeakNext(sub())
    if kind == "and":
        return And((sub(), sub()))
    if kind == "or":
        return Or((random_prop(rng), sub()))
    if kind == "implies":
        return Implies(random_prop(rng), sub())
    if kind == "not":
        return Not(sub())
    return random_prop(rng)


def random_trajectories(rng):
    out = []
    for _ in range(rng.randint(1, 6)):
        prefix = list(rng.choice(out)[: rng.randint(1, 4)]) if out and rng.random() < 0.8 else []
        tail = [tuple(rng.random() < 0.5 for _ in ATOMS) for _ in range(rng.randint(0 if prefix else 1, 4))]
        out.append(tuple(prefix + tail))
    return out


@pytest.mark.parametrize("seed", range(50))
def test_lifted_formula_on_tree_equals_ltlf_on_every_trajectory(seed):
    rng = random.Random(seed)
    lifted_count = 0
    for _ in range(20):
        f = random_ltl(rng, rng.randint(1, 3))
        try:
            g = lift(f)
        except NotLiftable:
            continue
        lifted_count += 1
        trajectories = random_trajectories(rng)
        tree = build_tree([np.array(t, dtype=bool) for t in trajectories], ATOMS)
        traces = [[dict(zip(ATOMS, frame)) for frame in t] for t in trajectories]
        expected = all(evaluate(f, trace) for trace in traces)
        result = TreeChecker(tree).check(g)
        assert result.holds == expected, (to_text(f), ctl_text(g))
        if not result.holds:  # every trajectory that violates the LTLf property, wherever it branches off
            breakers = TreeChecker(tree).breakers(result).tolist()
            assert breakers == [i for i, trace in enumerate(traces) if not evaluate(f, trace)], to_text(f)
    assert lifted_count >= 5


@pytest.mark.parametrize(
    "ltl, ctl",
    [
        ("G(!forbidden_contact)", "AG(!forbidden_contact)"),
        ("G(a -> F b)", "AG(a -> AF(b))"),
        ("G(grasped -> ((sync U !grasped_raw) | G sync))", "AG(grasped -> A[sync W !grasped_raw])"),
        ("G(dropped -> (released | (!left U grasped)))", "AG(dropped -> (released | A[!left U grasped]))"),
        ("a R b", "A[b W (a & b)]"),
        ("!F a", "AG(!a)"),
    ],
)
def test_safety_shapes_lift_as_documented(ltl, ctl):
    assert ctl_text(lift_text(ltl)) == ctl


@pytest.mark.parametrize(
    "ltl, why",
    [
        ("F G a", "'F' over the temporal formula"),
        ("X a", "strong next"),
        ("G(a -> F b) | G c", "disjunction of temporal"),
        ("G(F a -> b)", "antecedent"),
        ("G(a -> last)", "'last'"),
    ],
)
def test_outside_the_fragment_is_reported(ltl, why):
    with pytest.raises(NotLiftable, match=why):
        lift(parse(ltl))


def test_lift_properties_keeps_reasons():
    props = [Property("ok", "collision_contact", "G(!c)"), Property("bad", "mechanism", "F G c")]
    got = lift_properties(props)
    assert got[0].ctl is not None and got[0].reason == ""
    assert got[1].ctl is None and "temporal formula" in got[1].reason
    assert Const(True) == lift(parse("true"))
