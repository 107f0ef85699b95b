"""The compiled DFA agrees with a direct recursive LTLf evaluator; the compiler rejects what is wrong."""

import multiprocessing
import os
import stat

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safety_monitor.errors import SpecError, ToolMissingError
from safety_monitor.specs import compile as compiler
from safety_monitor.specs.compile import compile_formula
from safety_monitor.specs.ltlf import (
    Always,
    And,
    Atom,
    Const,
    Eventually,
    Implies,
    Next,
    Not,
    Or,
    Release,
    Until,
    WeakNext,
    atoms_of,
    evaluate,
    parse,
    to_text,
)

ATOMS = ("a", "b", "c")

formulas = st.recursive(
    st.sampled_from([Atom(a) for a in ATOMS]) | st.sampled_from([Const(True), Const(False)]),
    lambda sub: st.one_of(
        sub.map(Not),
        sub.map(Next),
        sub.map(WeakNext),
        sub.map(Always),
        sub.map(Eventually),
        st.tuples(sub, sub).map(lambda p: And(p)),
        st.tuples(sub, sub).map(lambda p: Or(p)),
        st.tuples(sub, sub).map(lambda p: Implies(*p)),
        st.tuples(sub, sub).map(lambda p: Until(*p)),
        st.tuples(sub, sub).map(lambda p: Release(*p)),
    ),
    max_leaves=7,
)
traces = st.lists(st.fixed_dictionaries({a: st.booleans() for a in ATOMS}), min_size=1, max_size=7)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas, st.lists(traces, min_size=1, max_size=4))
def test_dfa_agrees_with_recursive_semantics(f, trace_list):
    text = to_text(f)
    assert parse(text) == f, "printing then parsing must give the same formula"
    dfa = compile_formula(text)
    assert dfa.atoms == atoms_of(f)
    for trace in trace_list:
        assert dfa.accepts(trace) == evaluate(f, trace), (text, trace)


@settings(max_examples=80, deadline=None)
@given(formulas, traces)
def test_rejecting_sink_means_no_extension_can_satisfy(f, trace):
    dfa = compile_formula(to_text(f))
    state = dfa.run(dfa.letter(v) for v in trace)
    if dfa.rejecting_sink[state]:
        # every one-frame and two-frame extension still fails
        for x in range(1 << len(dfa.atoms)):
            for y in range(1 << len(dfa.atoms)):
                assert not dfa.accepting[dfa.run([x, y], state)]
                assert not dfa.accepting[dfa.run([x], state)]
    else:
        assert dfa.accepting[state] or _accepting_reachable(dfa, state)


def _accepting_reachable(dfa, state):
    seen, todo = {state}, [state]
    while todo:
        s = todo.pop()
        if dfa.accepting[s]:
            return True
        for t in set(dfa.table[s].tolist()) - seen:
            seen.add(t)
            todo.append(t)
    return False


def test_known_automaton_shapes():
    g = compile_formula("G(!collision)")
    assert g.n_states == 2 and g.accepting.tolist() == [True, False]
    assert g.rejecting_sink.tolist() == [False, True]
    assert g.table[0].tolist() == [0, 1]
    resp = compile_formula("G(a -> F b)")
    assert resp.atoms == ("a", "b") and not resp.rejecting_sink.any()
    assert compile_formula("false").rejecting_sink.tolist() == [True]
    assert compile_formula("true").accepting.tolist() == [True]


def test_letter_encoding_uses_sorted_atom_bits():
    dfa = compile_formula("G(zeta -> alpha)")
    assert dfa.atoms == ("alpha", "zeta")
    assert dfa.letter({"alpha": True, "zeta": False}) == 1
    assert dfa.letter({"alpha": False, "zeta": True, "other": True}) == 2
    assert dfa.rejecting_sink[dfa.run([dfa.letter({"alpha": False, "zeta": True})])]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("G(a -> ", "end of formula"),
        ("G(Collision)", "lower-case snake_case"),
        # other LTL syntaxes, as language models write them: say how this one writes the operator
        ("G(a -> (b W c))", "'W' (weak until is written (f U g) | G(f) here)"),
        ("[](a -> <>b)", "'[' (always is written G here)"),
        ("G(a -> Fb)", "snake_case: [a-z][a-z0-9_]*; if F is an operator, separate it: F b)"),
        ("a <-> b <-> c", "chained '<->'"),
        ("", "empty formula"),
        ("G(a) )", "column 6"),
    ],
)
def test_malformed_formulas_name_the_problem(text, fragment):
    with pytest.raises(SpecError, match=None) as info:
        compile_formula(text)
    assert fragment in str(info.value)


def test_cache_is_used_and_survives_a_corrupt_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("SAFETY_MONITOR_CACHE_DIR", str(tmp_path))
    first = compile_formula("G(p -> X q)")
    entries = list(tmp_path.glob("*.npz"))
    assert len(entries) == 1
    compiler._compile_canonical.cache_clear()
    calls = []
    monkeypatch.setattr(compiler, "_build", lambda c: calls.append(c))
    again = compile_formula("G(p -> X q)")
    assert calls == [] and np.array_equal(again.table, first.table)
    entries[0].write_bytes(entries[0].read_bytes()[:40])  # truncated file
    compiler._compile_canonical.cache_clear()
    monkeypatch.undo()
    monkeypatch.setenv("SAFETY_MONITOR_CACHE_DIR", str(tmp_path))
    rebuilt = compile_formula("G(p -> X q)")
    assert np.array_equal(rebuilt.table, first.table)
    compiler._compile_canonical.cache_clear()


def _compile_in_child(args):
    cache, formula = args
    os.environ["SAFETY_MONITOR_CACHE_DIR"] = cache
    compiler._compile_canonical.cache_clear()
    return compile_formula(formula).table.tolist()


def test_parallel_processes_share_the_cache_safely(tmp_path):
    formulas_ = ["G(a -> (b U c))", "G(a -> F(b & X c))"] * 4
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.map(_compile_in_child, [(str(tmp_path), f) for f in formulas_])
    assert all(r == results[0] for r in results[0::2]) and all(r == results[1] for r in results[1::2])
    assert len(list(tmp_path.glob("*.npz"))) == 2 and not list(tmp_path.glob("*.tmp"))


@pytest.fixture
def fresh_compiler(tmp_path, monkeypatch):
    monkeypatch.setenv("SAFETY_MONITOR_CACHE_DIR", str(tmp_path / "cache"))
    compiler._compile_canonical.cache_clear()
    compiler.mona_version.cache_clear()
    compiler._tool_versions.cache_clear()
    yield tmp_path
    compiler._compile_canonical.cache_clear()
    compiler.mona_version.cache_clear()
    compiler._tool_versions.cache_clear()


def test_missing_mona_is_a_loud_error(fresh_compiler, monkeypatch):
    monkeypatch.setenv("PATH", str(fresh_compiler))
    with pytest.raises(ToolMissingError, match="apt-get install -y mona"):
        compile_formula("G(a)")


def test_bogus_automaton_is_rejected(fresh_compiler, monkeypatch):
    fake = fresh_compiler / "mona"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-v" ]; then echo "MONA v1.4-18 for WS1S/WS2S"; exit 0; fi\n'
        "echo 'DFA for formula with free variables: A'\necho 'Accepting states: 0'\n"
        "echo 'Automaton has 1 state and 1 BDD-node'\necho 'State 0: X -> state 0'\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fresh_compiler}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ToolMissingError, match="automaton rejected|dummy"):
        compile_formula("G(a -> b)")


def test_sixteen_atom_response_conjunction_agrees_with_the_evaluator():
    """8 conjuncts over 16 atoms: MONA lists 390,626 cube lines, all expanded into a 2**16-letter table."""
    f = parse(" & ".join(f"G(p{i} -> F q{i})" for i in range(8)))
    dfa = compile_formula(to_text(f))
    assert len(dfa.atoms) == 16 and dfa.table.shape == (256, 1 << 16)
    rng = np.random.default_rng(7)
    verdicts = set()
    for _ in range(300):
        n = int(rng.integers(1, 12))
        # pending obligations are rare enough that both verdicts occur
        trace = [
            {
                **{f"p{i}": bool(rng.random() < 0.08) for i in range(8)},
                **{f"q{i}": bool(rng.random() < 0.5) for i in range(8)},
            }
            for _ in range(n)
        ]
        expected = evaluate(f, trace)
        verdicts.add(expected)
        assert dfa.accepts(trace) == expected, trace
    assert verdicts == {True, False}


def test_mona_listing_with_overlapping_cubes_is_rejected():
    """Two cubes of one state covering the same letter (and so leaving another letter out) is not a DFA."""
    output = (
        "DFA for formula with free variables: A B\nAccepting states: 1\nAutomaton has 2 states\n"
        "State 0: XX -> state 1\nState 1: 1X -> state 1\nState 1: X1 -> state 0\n"
    )
    with pytest.raises(ToolMissingError, match="incomplete or overlapping"):
        compiler._table_from_mona(output, ("a", "b"), "G(a)")
    good = output.replace("State 1: X1 -> state 0", "State 1: 0X -> state 0")
    dfa = compiler._table_from_mona(good, ("a", "b"), "G(a)")
    # MONA's state 1 is the initial state (our 0): a letter with a = 0 goes to MONA's dummy 0 (our 1)
    assert dfa.table.tolist() == [[1, 0, 1, 0], [0, 0, 0, 0]]
