"""Specification patterns: every pattern and scope against a direct reading of Dwyer's definitions."""

import itertools
import random
import textwrap

import pytest

from safety_monitor.cli import main
from safety_monitor.specs.classify import classify
from safety_monitor.specs.compile import compile_formula
from safety_monitor.specs.ltlf import parse
from safety_monitor.specs.model import compile_specs, load_specs
from safety_monitor.specs.patterns import PATTERN_ARGS, SCOPE_ARGS, Pattern, PatternSpec, Scope, recognise

N = 2  # the bounded response's bound in frames


def intervals(trace, scope):
    """Dwyer's scopes on a finite trace: [start, end) frame ranges the pattern must hold over."""
    n = len(trace)
    q = [t["q"] for t in trace] if "q" in trace[0] else []
    r = [t["r"] for t in trace] if "r" in trace[0] else []
    if scope is Scope.GLOBAL:
        return [(0, n)]
    if scope is Scope.BEFORE:  # up to the first R, only when an R comes
        return [(0, r.index(True))] if True in r else []
    if scope is Scope.AFTER:  # from the first Q to the end
        return [(q.index(True), n)] if True in q else []
    out = []
    for i in range(n):
        if q[i] and not r[i]:
            end = next((j for j in range(i + 1, n) if r[j]), None)
            if end is not None:
                out.append((i, end))
            elif scope is Scope.AFTER_UNTIL:  # this one runs to the end of the trace
                out.append((i, n))
    return out


def holds(pattern, trace, start, end):
    p = [t["p"] for t in trace[start:end]]
    s = [t["s"] for t in trace[start:end]] if "s" in trace[0] else []
    if pattern is Pattern.ABSENCE:
        return not any(p)
    if pattern is Pattern.EXISTENCE:
        return any(p)
    if pattern is Pattern.UNIVERSALITY:
        return all(p)
    if pattern is Pattern.PRECEDENCE:  # the first P has an S at or before it
        return True not in p or any(s[: p.index(True) + 1])
    horizon = len(p) if pattern is Pattern.RESPONSE else N + 1
    return all(any(s[k : k + horizon]) for k in range(len(p)) if p[k])


def spec(pattern, scope):
    letters = tuple((k, k) for k in PATTERN_ARGS[pattern] + SCOPE_ARGS[scope])
    return PatternSpec(pattern, scope, letters, str(N) if pattern is Pattern.BOUNDED_RESPONSE else None)


def all_traces(atoms, max_len):
    letters = [dict(zip(atoms, bits)) for bits in itertools.product([False, True], repeat=len(atoms))]
    for n in range(1, max_len + 1):
        yield from itertools.product(letters, repeat=n)


@pytest.mark.parametrize("scope", list(Scope), ids=lambda s: s.value)
@pytest.mark.parametrize("pattern", list(Pattern), ids=lambda p: p.value)
def test_pattern_formula_means_the_pattern_on_every_short_trace_and_random_long_ones(pattern, scope):
    sp = spec(pattern, scope)
    dfa = compile_formula(sp.formula())
    atoms = sorted(PATTERN_ARGS[pattern] + SCOPE_ARGS[scope])
    rng = random.Random(f"{pattern.value}/{scope.value}")
    long = [tuple({a: rng.random() < 0.3 for a in atoms} for _ in range(rng.randint(5, 9))) for _ in range(1500)]
    for trace in itertools.chain(all_traces(atoms, 4 if len(atoms) <= 3 else 3), long):
        expected = all(holds(pattern, trace, a, b) for a, b in intervals(trace, scope))
        assert dfa.accepts(trace) == expected, (sp.formula(), trace)


@pytest.mark.parametrize("scope", list(Scope), ids=lambda s: s.value)
@pytest.mark.parametrize("pattern", list(Pattern), ids=lambda p: p.value)
def test_the_pattern_is_recognised_back_from_its_formula_and_named_by_the_classification(pattern, scope):
    sp = PatternSpec(
        pattern,
        scope,
        tuple((k, f"{k}1 | {k}2") for k in PATTERN_ARGS[pattern] + SCOPE_ARGS[scope]),
        "1.5s" if pattern is Pattern.BOUNDED_RESPONSE else None,
    )
    match = recognise(parse(sp.formula()))
    assert (match.pattern, match.scope) == (pattern, scope)
    assert match.letters["p"] == parse("p1 | p2")
    c = classify(parse(sp.formula()))
    assert c.pattern == match and c.reason.startswith(pattern.value.replace("_", " ") + " pattern")


@pytest.mark.parametrize(
    "formula, pattern, scope",
    [
        ("G(!a)", Pattern.ABSENCE, Scope.GLOBAL),
        ("G(a)", Pattern.UNIVERSALITY, Scope.GLOBAL),
        ("G(a -> F b)", Pattern.RESPONSE, Scope.GLOBAL),
        ("G(a -> F[<=10] (b & c))", Pattern.BOUNDED_RESPONSE, Scope.GLOBAL),
        ("F(a) -> (!b U a)", Pattern.ABSENCE, Scope.BEFORE),
    ],
)
def test_hand_written_formulas_of_a_pattern_s_shape_are_named(formula, pattern, scope):
    match = recognise(parse(formula))
    assert (match.pattern, match.scope) == (pattern, scope)


def test_a_formula_of_no_pattern_s_shape_has_none():
    assert recognise(parse("G(a -> X b)")) is None and classify(parse("G(a -> X b)")).pattern is None


FILE = """
control_rate_hz: 500
predicates: [hit, retracting, opening, opened, a]
properties:
  - name: retract_in_time
    category: mechanism
    pattern: bounded_response
    p: hit
    s: retracting
    within: 5s
    recovery: "F(retracting | !hit)"
  - name: quiet_while_opening
    category: mechanism
    pattern: absence
    p: a
    scope: {after: opening, until: opened}
"""


def write(tmp_path, text):
    path = tmp_path / "specs.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_spec_file_pattern_compiles_with_its_trigger_and_check_prints_its_formula(tmp_path, capsys):
    path = write(tmp_path, FILE)
    retract, quiet = compile_specs(load_specs(path))
    assert retract.prop.formula == "G(hit -> F[<=5s](retracting))" and retract.main.n_states == 2502
    assert retract.trigger_atoms == ("hit",) and quiet.trigger_atoms == ("a",)
    assert main(["specs", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "retract_in_time: bounded response pattern (within 5 s), global scope becomes G(hit -> F[<=5s](retracting))"
        in out
    )
    assert "retract_in_time: [<=5s] at 500 Hz = 2500 frames" in out
    assert "quiet_while_opening: absence pattern, scope after opening until opened becomes" in out


@pytest.mark.parametrize(
    "change, message",
    [
        (
            ("pattern: absence", "pattern: abscence"),
            "property 'quiet_while_opening': unknown pattern 'abscence' (known: absence,",
        ),
        (
            ("scope: {after: opening, until: opened}", "scope: {after: opening, till: opened}"),
            "property 'quiet_while_opening': unknown scope {'after': 'opening', 'till': 'opened'} (expected global,",
        ),
        (("scope: {after: opening, until: opened}", "scope: sometimes"), "unknown scope 'sometimes'"),
        (("    within: 5s\n", ""), "property 'retract_in_time': bounded_response needs 'within'"),
        (("within: 5s", "within: 2.5"), "'within' in frames must be a whole number"),
        (("    p: a\n", ""), "property 'quiet_while_opening': pattern absence needs 'p'"),
        (("    p: a\n", "    p: F a\n"), "pattern letter 'p' must be propositional"),
        (("    p: a\n", "    p: a\n    s: hit\n"), "pattern absence takes no 's'"),
        (("    p: a\n", "    p: a\n    formula: G(!a)\n"), "give either 'formula' or 'pattern', not both"),
        (("    pattern: absence\n", ""), "'p', 'scope' belong to a pattern; add 'pattern:'"),
        (("control_rate_hz: 500\n", ""), "property 'retract_in_time': bound [<=5s] is in seconds but no control rate"),
    ],
)
def test_pattern_mistakes_are_one_line_naming_the_property(tmp_path, capsys, change, message):
    path = write(tmp_path, FILE.replace(*change))
    assert main(["specs", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert sum(message.split(":")[0] in line for line in err.splitlines()) == 1
