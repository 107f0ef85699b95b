"""DFA equivalence against brute force over all traces up to a length bound; batch scoring."""

import itertools
import json
import os
import random
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safety_monitor.cli import main
from safety_monitor.errors import SpecError
from safety_monitor.specs import equivalence
from safety_monitor.specs.compile import compile_formula
from safety_monitor.specs.equivalence import (
    Entry,
    dfa_equivalence,
    formula_equivalence,
    load_entries,
    rates_by_model,
    score_candidates,
)
from safety_monitor.specs.ltlf import (
    Always,
    And,
    Atom,
    Eventually,
    Implies,
    Next,
    Not,
    Or,
    Release,
    Until,
    WeakNext,
    evaluate,
    parse,
    to_text,
)

BOUND = 4
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shortest_difference(fa, fb, atoms, bound=BOUND):
    """Brute force: the length of the shortest trace (1..bound) on which the formulas disagree."""
    letters = [dict(zip(atoms, bits)) for bits in itertools.product([False, True], repeat=len(atoms))]
    for n in range(1, bound + 1):
        for trace in itertools.product(letters, repeat=n):
            if evaluate(fa, list(trace)) != evaluate(fb, list(trace)):
                return n
    return None


def random_formula(rng, depth, atoms=("a", "b")):
    if depth == 0 or rng.random() < 0.3:
        return Atom(rng.choice(atoms))
    sub = lambda: random_formula(rng, depth - 1, atoms)  # noqa: E731
    kind = rng.choice(["not", "and", "or", "implies", "X", "WX", "G", "F", "U", "R"])
    if kind in ("and", "or"):
        return (And if kind == "and" else Or)((sub(), sub()))
    if kind in ("implies", "U", "R"):
        return {"implies": Implies, "U": Until, "R": Release}[kind](sub(), sub())
    return {"not": Not, "X": Next, "WX": WeakNext, "G": Always, "F": Eventually}[kind](sub())


EQUIVALENT_PAIRS = [
    ("G(!a)", "!F(a)"),
    ("G(a -> F b)", "!F(a & G !b)"),
    ("(a U b) | G a", "b R (a | b)"),
    ("WX(a)", "last | X(a)"),
    ("F(a | b)", "F(a) | F(b)"),
    ("G(a & b)", "G(a) & G(b)"),
]
DIFFERENT_PAIRS = [
    ("G(a -> F b)", "G(a -> X b)"),
    ("a U b", "(a U b) | G a"),
    ("G(!a)", "G(!b)"),  # different atoms: union alphabet
    ("X(a)", "WX(a)"),  # differ on the length-1 trace only
    ("F(a)", "a"),
]


@pytest.mark.parametrize("a, b", EQUIVALENT_PAIRS + DIFFERENT_PAIRS)
def test_known_pairs_against_brute_force(a, b):
    check_against_brute_force(parse(a), parse(b))


@pytest.mark.parametrize("seed", range(25))
def test_random_pairs_against_brute_force(seed):
    rng = random.Random(seed)
    fa = random_formula(rng, 3)
    fb = random_formula(rng, 3) if rng.random() < 0.6 else Not(Not(fa))  # some equivalent by construction
    check_against_brute_force(fa, fb)


def check_against_brute_force(fa, fb):
    result = formula_equivalence(to_text(fa), to_text(fb))
    atoms = result.atoms
    brute = shortest_difference(fa, fb, atoms)
    if result.equivalent:
        assert brute is None
        assert result.trace == () and result.accepted_by is None
        return
    trace = list(result.trace)
    assert len(trace) >= 1  # LTLf traces are non-empty
    assert all(set(v) == set(atoms) for v in trace)
    in_a, in_b = evaluate(fa, trace), evaluate(fb, trace)
    assert in_a != in_b  # it really distinguishes them
    assert result.accepted_by == ("A" if in_a else "B")
    if brute is not None or len(trace) <= BOUND:
        assert len(trace) == brute  # and it is a shortest one


def test_x_versus_weak_x_is_told_apart_by_a_single_frame():
    result = formula_equivalence("X(a)", "WX(a)")
    assert not result.equivalent and len(result.trace) == 1 and result.accepted_by == "B"
    assert result.to_dict() == {"equivalent": False, "trace": [{"a": False}], "accepted_by": "B"}


def test_empty_trace_is_not_a_distinguishing_trace():
    # 'G false' accepts only the empty trace, 'false' accepts nothing: equal on non-empty traces
    assert formula_equivalence("G(false)", "false").equivalent
    assert dfa_equivalence(compile_formula("G(a)"), compile_formula("a & G(a)")).equivalent


def test_batch_scoring_and_rates(tmp_path):
    refs = tmp_path / "refs.yaml"
    refs.write_text("no_contact: G(!contact)\nresponse: G(grasp -> F release)\n")
    cands = tmp_path / "cands.jsonl"
    rows = [
        {"id": "no_contact", "formula": "!F(contact)", "model": "m1"},
        {"id": "no_contact", "formula": "G(!Contact)", "model": "m2"},  # upper case: syntax error
        {"id": "response", "formula": "G(grasp -> X release)", "model": "m1"},
        {"id": "response", "formula": "G(!grasp | F release)", "model": "m2"},
    ]
    cands.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    scores = score_candidates(load_entries(cands), load_entries(refs))
    assert [s.verdict for s in scores] == ["equivalent", "syntax_error", "not_equivalent", "equivalent"]
    assert "column" in scores[1].error
    rates = rates_by_model(scores)
    assert rates["all"].counts == {"syntax_error": 1, "not_equivalent": 1, "equivalent": 2}
    assert rates["m1"].rate("equivalent") == 0.5 and rates["m2"].rate("syntax_error") == 0.5
    # X demands a next frame the 1-frame trace lacks: only the reference accepts it, and the row says so
    assert scores[2].to_dict() == {
        "id": "response",
        "model": "m1",
        "candidate": "G(grasp -> X release)",
        "reference": "G(grasp -> F release)",
        "verdict": "not_equivalent",
        "trace": [{"grasp": True, "release": True}],
        "accepted_by": "reference",
    }
    with pytest.raises(SpecError, match="no reference formula for candidate id.*missing"):
        score_candidates([Entry("missing", "G a")], load_entries(refs))


def test_cli_pair_and_batch(tmp_path, capsys):
    assert main(["equiv", "G(!a)", "!F(a)"]) == 0
    assert main(["equiv", "G(a -> F b)", "G(a -> X b)", "--json"]) == 1
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["equivalent"] is False and out["accepted_by"] in ("A", "B") and out["trace"]
    assert main(["equiv", "last", "G(false)"]) == 1  # formulas without predicates: a frame still shows
    assert capsys.readouterr().out.splitlines()[1:] == ["  frame 0: (no predicates)"]
    refs = tmp_path / "refs.yaml"
    refs.write_text("- {id: p1, formula: 'G(!a)'}\n")
    cands = tmp_path / "cands.yaml"
    cands.write_text("- {id: p1, formula: 'G(!a)'}\n- {id: p1, formula: 'G(a'}\n")
    assert main(["equiv", "--candidates", str(cands), "--reference", str(refs), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rates"]["all"]["equivalent_rate"] == 0.5
    assert [s["verdict"] for s in report["scores"]] == ["equivalent", "syntax_error"]
    with pytest.raises(SystemExit):  # usage error: two formulas, or --candidates with --reference
        main(["equiv", "G(a)"])


def dense_equivalence(a, b):
    """The search before letter classes, kept as the reference: it steps on all 2**n union letters."""
    atoms = tuple(sorted(set(a.atoms) | set(b.atoms)))

    def letter_map(own):
        letters = np.arange(1 << len(atoms))
        out = np.zeros_like(letters)
        for i, atom in enumerate(own):
            out |= ((letters >> atoms.index(atom)) & 1) << i
        return out

    ta, tb = a.table[:, letter_map(a.atoms)], b.table[:, letter_map(b.atoms)]
    nb, n_letters = b.n_states, 1 << len(atoms)
    seen = np.zeros(a.n_states * nb, dtype=bool)
    parent = np.full(a.n_states * nb, -1, dtype=np.int64)
    via = np.zeros(a.n_states * nb, dtype=np.int64)
    frontier = np.array([a.initial * nb + b.initial], dtype=np.int64)
    level = 0
    while frontier.size:
        level += 1
        successors = (ta[frontier // nb] * nb + tb[frontier % nb]).reshape(-1)
        fresh = np.flatnonzero(~seen[successors])
        pairs, first = np.unique(successors[fresh], return_index=True)
        order = np.argsort(first)
        pairs, first = pairs[order], fresh[first[order]]
        seen[pairs] = True
        parent[pairs] = frontier[first // n_letters]
        via[pairs] = first % n_letters
        differs = np.flatnonzero(a.accepting[pairs // nb] != b.accepting[pairs % nb])
        if differs.size:
            target = int(pairs[differs[0]])
            accepted = "A" if a.accepting[target // nb] else "B"
            letters = []
            for _ in range(level):
                letters.append(int(via[target]))
                target = int(parent[target])
            trace = tuple({atom: bool(x >> i & 1) for i, atom in enumerate(atoms)} for x in reversed(letters))
            return False, trace, accepted
        frontier = pairs
    return True, (), None


def small_formulas(atoms):
    leaf = st.sampled_from([Atom(x) for x in atoms])
    return st.recursive(
        leaf,
        lambda sub: st.one_of(
            sub.map(Not),
            sub.map(Next),
            sub.map(WeakNext),
            sub.map(Always),
            sub.map(Eventually),
            st.tuples(sub, sub).map(And),
            st.tuples(sub, sub).map(Or),
            st.tuples(sub, sub).map(lambda p: Implies(*p)),
            st.tuples(sub, sub).map(lambda p: Until(*p)),
            st.tuples(sub, sub).map(lambda p: Release(*p)),
        ),
        max_leaves=6,
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_formulas(("a", "b", "c")), small_formulas(("b", "c", "d")), st.booleans())
def test_letter_class_search_gives_the_dense_search_answer(fa, fb, same):
    """Same verdict, same shortest trace, same accepting side as stepping on every union letter."""
    a, b = compile_formula(to_text(fa)), compile_formula(to_text(Not(Not(fa)) if same else fb))
    with mock.patch.object(equivalence, "SMALL_UNION", 0):  # letter classes even for these few atoms
        result = dfa_equivalence(a, b)
    assert (result.equivalent, result.trace, result.accepted_by) == dense_equivalence(a, b)


SIXTEEN_P = "G(" + " | ".join(f"p{i}" for i in range(16)) + ")"
SIXTEEN_Q = SIXTEEN_P.replace("p", "q")


def test_sixteen_atoms_on_each_side_through_the_cli():
    """32 union atoms: the dense search allocated 2**32 letters and died in a MemoryError (exit 1)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "safety_monitor.cli", "equiv", SIXTEEN_P, SIXTEEN_Q, "--json"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert (proc.returncode, proc.stderr) == (1, "")
    out = json.loads(proc.stdout)
    assert out["equivalent"] is False and len(out["trace"]) == 1
    frame = out["trace"][0]
    # a one-frame trace with some p and no q true (or the other way round) is accepted by exactly one side
    assert any(frame[f"p{i}"] for i in range(16)) != any(frame[f"q{i}"] for i in range(16))
    assert out["accepted_by"] == ("A" if any(frame[f"p{i}"] for i in range(16)) else "B")
    assert formula_equivalence(SIXTEEN_P, SIXTEEN_P.replace("G(", "G(p0 | ")).equivalent


def test_a_product_beyond_the_bounds_is_a_one_line_refusal(monkeypatch, capsys):
    monkeypatch.setattr(equivalence, "MAX_LETTER_CLASSES", 3)
    assert main(["equiv", SIXTEEN_P, SIXTEEN_Q]) == 2  # 2 x 2 behaviour classes: refused
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "equivalence check refused" in err and "more than 3" in err
    monkeypatch.setattr(equivalence, "MAX_LETTER_CLASSES", 4)
    monkeypatch.setattr(equivalence, "MAX_PRODUCT_STEPS", 3)
    assert main(["equiv", SIXTEEN_P, SIXTEEN_Q]) == 2
    assert "equivalence check refused" in capsys.readouterr().err
    monkeypatch.setattr(equivalence, "MAX_PRODUCT_PAIRS", 3)
    assert main(["equiv", SIXTEEN_P, SIXTEEN_Q]) == 2
    assert "2 x 2 state pairs" in capsys.readouterr().err
