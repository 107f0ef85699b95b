"""Bounded operators: parsing, seconds at a control rate, finite-trace semantics, their automata."""

import itertools
import textwrap

import numpy as np
import pytest

from safety_monitor.cli import main
from safety_monitor.errors import SpecError
from safety_monitor.specs.compile import compile_formula
from safety_monitor.specs.equivalence import dfa_equivalence
from safety_monitor.specs.ltlf import (
    MAX_BOUND_FRAMES,
    And,
    BoundedAlways,
    BoundedEventually,
    BoundedUntil,
    Next,
    Or,
    WeakNext,
    atoms_of,
    bound_frames,
    children,
    evaluate,
    parse,
    resolve_bounds,
    to_text,
)
from safety_monitor.specs.model import compile_specs, load_specs
from safety_monitor.specs.progression import progression_dfa


def unroll(f):
    """The bounded operators as X-chains: F[<=n] a = a | X F[<=n-1] a, G[<=n] a = a & WX G[<=n-1] a."""
    if isinstance(f, BoundedEventually):
        arg, n = unroll(f.arg), f.bound.frames
        return arg if n == 0 else Or((arg, Next(unroll(BoundedEventually(f.arg, type(f.bound)(n - 1))))))
    if isinstance(f, BoundedAlways):
        arg, n = unroll(f.arg), f.bound.frames
        return arg if n == 0 else And((arg, WeakNext(unroll(BoundedAlways(f.arg, type(f.bound)(n - 1))))))
    if isinstance(f, BoundedUntil):
        left, right, n = unroll(f.left), unroll(f.right), f.bound.frames
        if n == 0:
            return right
        return Or((right, And((left, Next(unroll(BoundedUntil(f.left, f.right, type(f.bound)(n - 1))))))))
    kids = tuple(unroll(c) for c in children(f))
    if not kids:
        return f
    if isinstance(f, (And, Or)):
        return type(f)(kids)
    return type(f)(*kids)


def traces(atoms, max_len):
    letters = [dict(zip(atoms, bits)) for bits in itertools.product([False, True], repeat=len(atoms))]
    for n in range(1, max_len + 1):
        yield from itertools.product(letters, repeat=n)


BOUNDED = [
    "F[<=0] b",
    "F[<=1] b",
    "F[<=3] b",
    "G[<=0] b",
    "G[<=2] b",
    "G[<=3] b",
    "a U[<=0] b",
    "a U[<=2] b",
    "a U[<=3] b",
    "G(a -> F[<=2] b)",
    "G(a -> G[<=2] !b)",
    "F(a & G[<=2] b)",
    "!(a U[<=2] b)",
    "!F[<=2] a",
    "!G[<=2] a",
    "F[<=1] G[<=1] a",
    "G(a -> (b U[<=2] !a))",
    "(a U[<=1] b) U[<=2] a",
    "X F[<=1] a | WX G[<=1] b",
    "G(a -> F[<=2] b) & G(b -> F[<=1] a)",
    "G[<=2] a <-> F[<=1] b",
    "G(a -> F[<=2] last)",
]


@pytest.mark.parametrize("text", BOUNDED)
def test_bounded_automaton_matches_brute_force_evaluation_on_every_short_trace(text):
    f = parse(text)
    dfa = compile_formula(text)
    unrolled = unroll(f)
    for trace in traces(atoms_of(f), 6):
        expected = evaluate(f, trace)
        assert evaluate(unrolled, trace) == expected, (text, trace)
        assert dfa.accepts(trace) == expected, (text, trace)


@pytest.mark.parametrize("text", BOUNDED)
def test_bounded_automaton_equals_monas_automaton_of_the_unrolled_formula(text):
    unrolled = to_text(unroll(parse(text)))
    result = dfa_equivalence(compile_formula(text), compile_formula(unrolled))
    assert result.equivalent, (text, unrolled, result.trace)


def test_the_issue_s_example_unrolls_as_written():
    assert dfa_equivalence(compile_formula("F[<=3] b"), compile_formula("b | X(b | X(b | X b))")).equivalent
    assert not dfa_equivalence(compile_formula("F[<=3] b"), compile_formula("b | X(b | X b)")).equivalent
    # minimised like MONA's: the same number of states
    assert compile_formula("G(a -> F[<=3] b)").n_states == compile_formula("G(a -> (b | X(b | X(b | X b))))").n_states


@pytest.mark.parametrize(
    "text",
    [
        "G(a -> F b)",
        "a U (b R c)",
        "G(a -> X !a)",
        "F(a & WX false)",
        "(a <-> X b) | G F c",
        "!(a U b) & F last",
        "G(a -> ((b U !c) | G b))",
        "X X a -> F(b & X c)",
    ],
)
def test_progression_builds_the_same_language_as_mona_on_unbounded_formulas(text):
    """The construction behind bounded formulas handles every other operator too (checked against MONA)."""
    f = parse(text)
    table, accepting, initial = progression_dfa(f, atoms_of(f))
    mona = compile_formula(text)
    ours = type(mona)(text, mona.atoms, table.astype(np.int32), initial, accepting, accepting)  # sink unused
    assert dfa_equivalence(ours, mona).equivalent


def test_a_five_second_bound_at_500_hz_is_one_state_per_frame_and_decides_at_its_deadline():
    dfa = compile_formula("G(a -> F[<=2.5s] b)", control_rate_hz=500)
    assert dfa.formula == "G((a -> F[<=1250](b)))"
    assert dfa.n_states == 1252  # waiting, 1250 deadlines... and the sink
    big = compile_formula("G(a -> F[<=5s] b)", control_rate_hz=500)
    assert big.n_states == 2502
    a, none = big.letter({"a": True, "b": False}), big.letter({"a": False, "b": False})
    s = big.run([a] + [none] * 2499)
    assert not big.rejecting_sink[s]  # b on the 2500th frame after the trigger would still do
    assert big.rejecting_sink[big.table[s, none]]
    assert big.accepting[big.table[s, big.letter({"a": False, "b": True})]]


@pytest.mark.parametrize(
    "seconds, rate, frames",
    [
        ("2.5", 500, 1250),
        ("5", 500, 2500),
        ("0.1", 30, 3),
        ("0.01", 250, 3),
        ("1", 333.3, 334),
        ("0.5", 20, 10),
        ("0.001", 500, 1),
        ("0", 500, 0),
        ("1.5", 1000, 1500),
    ],
)
def test_seconds_become_frames_rounded_up(seconds, rate, frames):
    assert bound_frames(seconds, rate) == frames
    f = resolve_bounds(parse(f"F[<={seconds}s] a"), rate)
    assert f.bound.frames == frames and f.bound.seconds == seconds


def test_parse_prints_and_rejects_bounds():
    assert to_text(parse("a U[<=4] b U c")) == "(a U[<=4] (b U c))"
    assert to_text(parse("G[<= 2.5 s](a & b)")) == "G[<=2.5s]((a & b))"
    assert parse(to_text(parse("X F[<=0] b | G a"))) == parse("X F[<=0] b | G a")
    with pytest.raises(SpecError, match=r"whole number.*write 2.5s for seconds"):
        parse("F[<=2.5] a")
    with pytest.raises(SpecError, match=f"more than the {MAX_BOUND_FRAMES} a table supports"):
        parse(f"F[<={MAX_BOUND_FRAMES + 1}] a")
    for bad in ("F[<=-5s] a", "F[2,5] a", "G[<=x] a", "F[<5] a"):  # the '[' at fault, and how to write one
        with pytest.raises(SpecError, match=r"column \d+: unexpected character '\[' \(a bound is only an upper one"):
            parse(bad)
    with pytest.raises(SpecError, match="no control rate is known"):
        compile_formula("F[<=1s] a")
    with pytest.raises(SpecError, match=f"at 500 Hz is {60 * 500} frames, more than the {MAX_BOUND_FRAMES}"):
        compile_formula("F[<=60s] a", control_rate_hz=500)


SPEC = """
predicates: [a, b]
properties:
  - name: quick_answer
    category: mechanism
    formula: "G(a -> F[<=0.5s] b)"
    recovery: "F(b)"
"""


def write(tmp_path, text):
    path = tmp_path / "specs.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_the_spec_file_s_rate_converts_and_the_monitor_s_rate_wins(tmp_path):
    spec_set = load_specs(write(tmp_path, "control_rate_hz: 20\n" + SPEC))
    assert spec_set.control_rate_hz == 20
    assert compile_specs(spec_set)[0].main.n_states == 12  # 10 frames
    assert compile_specs(spec_set.at_rate(100))[0].main.n_states == 52  # 50 frames
    assert spec_set.properties[0].bound_conversions() == ("[<=0.5s] at 20 Hz = 10 frames",)


def test_a_bound_in_seconds_without_a_rate_is_one_line_naming_the_property(tmp_path, capsys):
    path = write(tmp_path, SPEC)
    assert main(["specs", "check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "property 'quick_answer'" in err and "no control rate is known" in err
    assert main(["specs", "check", str(path), "--rate", "100"]) == 0
    out = capsys.readouterr().out
    assert "quick_answer: [<=0.5s] at 100 Hz = 50 frames" in out


def test_a_bound_too_large_for_the_file_s_rate_is_reported_with_the_property(tmp_path, capsys):
    path = write(tmp_path, "control_rate_hz: 500\n" + SPEC.replace("0.5s", "100s"))
    assert main(["specs", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "property 'quick_answer'" in err and f"more than the {MAX_BOUND_FRAMES} a table supports" in err
    bad_rate = write(tmp_path, "control_rate_hz: -5\n" + SPEC)
    assert main(["specs", "check", str(bad_rate)]) == 2
    assert "'control_rate_hz' must be a positive number of Hz" in capsys.readouterr().err
