"""`specs explain`: every property, its recovery and options in plain English, without formula syntax."""

import re

import pytest

from safety_monitor.cli import main
from safety_monitor.specs.english import describe, explain_property
from safety_monitor.specs.ltlf import atoms_of, parse
from safety_monitor.specs.model import load_specs

DEFAULTS = load_specs("config/specs.yaml").properties
SYNTAX = re.compile(r"->|<->|[&|!~]|\b[GFXUR]\s*\(|\bWX\b|\[<=|\b[GFXUR]\b")


@pytest.mark.parametrize("prop", DEFAULTS, ids=lambda p: p.name)
def test_every_default_property_reads_as_english_naming_its_predicates(prop):
    text = explain_property(prop)
    assert text.startswith(f"{prop.name} ({prop.category}): ")
    assert not SYNTAX.search(text), text
    main_line, recovery_line = text.splitlines()[:2]
    for atom in atoms_of(parse(prop.formula)):
        assert atom in main_line, (atom, main_line)
    assert recovery_line.startswith("  Recovery: ")
    for atom in atoms_of(parse(prop.recovery)):
        assert atom in recovery_line, (atom, recovery_line)
    if prop.min_resolve_frames:
        assert f"lasted {prop.min_resolve_frames} frames" in text


@pytest.mark.parametrize(
    "formula, sentence",
    [
        ("G(!a)", "a must never hold"),
        ("G(a -> F b)", "whenever a holds, a frame where b holds must follow (that frame or a later one)"),
        (
            "G(a -> F[<=2.5s] b)",
            "whenever a holds, a frame where b holds must follow within 2.5 s (1250 frames at "
            "500 Hz), counting from that frame, and before the trace ends",
        ),
        ("G(a -> b)", "whenever a holds, b must hold"),
        (
            "G(a -> (!t U b))",
            "whenever a holds, t must be false until the first frame where b holds, which must happen "
            "before the trace ends",
        ),
        (
            "G(a -> ((s U !r) | G s))",
            "whenever a holds, s must hold until the first frame where r is false, or to the end of the trace",
        ),
        (
            "G(a -> G[<=3] !b)",
            "whenever a holds, at this frame and the next 3 frames, as far as the trace goes, b must be false",
        ),
        (
            "G((q & !r & F(r)) -> (!p U r))",
            "in each stretch from a frame where q holds to the next frame where r holds "
            "(a stretch that the trace ends before closing is not checked), p must never hold",
        ),
        ("!F a", "a must never hold"),
        # a temporal condition reads as what happens, not as an obligation ('if g must be false ...')
        (
            "G((!g & X g) -> X G[<=2] !lift)",
            "whenever g is false and at the next frame g holds, a next frame must exist, and at it at this frame "
            "and the next 2 frames, as far as the trace goes, lift must be false",
        ),
        ("F a -> G b", "if at some frame from this frame on a holds, then b must hold at every frame"),
        ("G(!X a -> b)", "whenever at the next frame, if there is one, a is false, b must hold"),
    ],
)
def test_sentences(formula, sentence):
    assert describe(parse(formula), 500) == sentence


def test_options_and_a_seconds_bound_are_explained():
    released = next(p for p in DEFAULTS if p.name == "released_object_settles")
    assert "counts only if it lasted 100 frames (5 s) or more" in explain_property(released)
    contact = next(p for p in DEFAULTS if p.name == "no_forbidden_contact")
    assert (
        "Its triggers (the opportunities the metrics count) are the frames where forbidden_contact holds"
        in explain_property(contact)
    )


def test_a_span_in_seconds_that_no_rate_converts_is_said_to_apply_no_minimum(tmp_path):
    path = tmp_path / "specs.yaml"
    path.write_text(
        "predicates: [a, b]\nproperties:\n"
        '  - {name: p, category: mechanism, formula: "G(!a)", recovery: "F(b)", min_resolve_s: 5}\n'
    )
    prop = load_specs(path).properties[0]
    assert "lasted 5 s or more, but no control rate converts that, so every one counts" in explain_property(prop)
    assert "lasted 100 frames (5 s) or more" in explain_property(prop.at_rate(20))


def test_cli_explains_one_property_or_names_the_ones_it_has(capsys):
    assert main(["specs", "explain", "config/specs.yaml", "pick_preconditions"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "pick_preconditions (action_onset): whenever skill_pick_onset holds, preconditions_pick must hold."
    )
    assert main(["specs", "explain", "config/specs.yaml"]) == 0
    assert capsys.readouterr().out.count("  Recovery: ") == len(DEFAULTS)
    assert main(["specs", "explain", "config/specs.yaml", "no_such"]) == 2
    err = capsys.readouterr().err
    assert "no property 'no_such' (it has: no_forbidden_contact," in err and len(err.strip().splitlines()) == 1
