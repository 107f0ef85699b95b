"""Spec-file validation names the file, the property and the problem; valid files compile."""

import json
import textwrap
from pathlib import Path

import pytest

from safety_monitor.cli import main
from safety_monitor.errors import SpecError
from safety_monitor.specs.model import compile_specs, load_specs

GOOD = """
predicates: [object_grasped, object_sync, object_grasped_raw, object_dropped, collision]
properties:
  - name: grasp_synced
    category: grasp_stability
    formula: "G(object_grasped -> ((object_sync U !object_grasped_raw) | G object_sync))"
    recovery: "G((object_grasped & !object_sync) -> F(object_sync | object_dropped))"
    description: keep the grasp synchronised until it is released
  - name: no_collision
    category: collision_contact
    formula: "G(!collision)"
    recovery: "F(!collision)"
    min_resolve_frames: 3
"""


def write(tmp_path, text, name="specs.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_valid_file_loads_and_compiles(tmp_path):
    spec_set = load_specs(write(tmp_path, GOOD))
    assert [p.name for p in spec_set.properties] == ["grasp_synced", "no_collision"]
    compiled = compile_specs(spec_set)
    grasp, collision = compiled
    assert grasp.main.atoms == ("object_grasped", "object_grasped_raw", "object_sync")
    assert grasp.trigger_atoms == ("object_grasped",) and grasp.trigger_table.tolist() == [False, True]
    assert collision.trigger_table.tolist() == [False, True]  # derived from G(!collision)
    assert collision.prop.min_resolve_frames == 3


@pytest.mark.parametrize(
    "mutation, fragments",
    [
        (GOOD.replace("description:", "descripton:"), ["property 'grasp_synced'", "unknown key 'descripton'"]),
        (GOOD.replace("name: no_collision", "name: grasp_synced"), ["property 'grasp_synced': duplicate name"]),
        (
            GOOD.replace('"G(!collision)"', '"G(!collision"'),
            ["property 'no_collision'", "formula: syntax error", "column"],
        ),
        (GOOD.replace('"G(!collision)"', '"G(!bump)"'), ["property 'no_collision'", "outside the vocabulary: bump"]),
        (  # a typo names the predicate meant; a name like no listed one (bump, above) suggests none
            GOOD.replace('"G(!collision)"', '"G(!colision)"').replace('"F(!collision)"', '"F(!object_synced)"'),
            [
                "formula uses predicates outside the vocabulary: colision (did you mean 'collision'?)",
                "recovery uses predicates outside the vocabulary: object_synced (did you mean 'object_sync'?)",
            ],
        ),
        (GOOD.replace("name: no_collision", "name: NoCollision"), ["lower-case snake_case"]),
        (GOOD.replace("[object_grasped,", "[ObjectGrasped, object_grasped,"), ["predicate 'ObjectGrasped'"]),
        (
            GOOD.replace("min_resolve_frames: 3", "min_resolve_frames: -1"),
            ["'min_resolve_frames' must be a non-negative"],
        ),
        (GOOD + "extra: 1\n", ["unknown top-level key 'extra'"]),
        (GOOD.replace('"G(!collision)"', '"F(collision)"'), ["cannot derive the trigger"]),
        (
            GOOD + '    options: {close_on_opening_frame: "no"}\n',
            ["property 'no_collision': option close_on_opening_frame must be true or false, got 'no'"],
        ),
        (
            GOOD + "    options: {close_on_opening_frme: true}\n",
            ["property 'no_collision': unknown option 'close_on_opening_frme' (known: close_on_opening_frame)"],
        ),
        (GOOD + "    options: [close_on_opening_frame]\n", ["property 'no_collision': 'options' must be a mapping"]),
    ],
)
def test_each_problem_is_named(tmp_path, mutation, fragments):
    path = write(tmp_path, mutation)
    with pytest.raises(SpecError) as info:
        load_specs(path)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, message


def test_a_name_sharing_only_a_prefix_with_a_predicate_is_not_called_its_typo(tmp_path):
    with pytest.raises(SpecError) as info:  # object_released is missing, not a misspelt object_grasped
        load_specs(write(tmp_path, GOOD.replace('"F(!collision)"', '"F(object_released)"')))
    assert str(info.value).endswith("recovery uses predicates outside the vocabulary: object_released")


def test_all_problems_reported_together(tmp_path):
    text = GOOD.replace("description:", "descripton:").replace('"G(!collision)"', '"G(!bump)"')
    with pytest.raises(SpecError, match=r"2 problem\(s\)"):
        load_specs(write(tmp_path, text))


def test_duplicate_name_is_reported_with_the_duplicates_other_problems(tmp_path):
    text = GOOD.replace("name: no_collision", "name: grasp_synced").replace('"G(!collision)"', '"G(!zz)"')
    with pytest.raises(SpecError) as info:
        load_specs(write(tmp_path, text))
    message = str(info.value)
    assert "2 problem(s)" in message and "duplicate name" in message and "vocabulary: zz" in message, message


def test_yaml_syntax_error_gives_position(tmp_path):
    with pytest.raises(SpecError, match=r"not valid YAML at line \d+, column \d+"):
        load_specs(write(tmp_path, "predicates: [a\nproperties: {"))


def test_missing_file_is_named(tmp_path):
    with pytest.raises(SpecError, match="nope.yaml: cannot read"):
        load_specs(tmp_path / "nope.yaml")


def test_specs_check_cli_json(tmp_path, capsys):
    assert main(["specs", "check", str(write(tmp_path, GOOD)), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["grasp_synced", "no_collision"]
    assert rows[1]["states"] == 2 and rows[1]["atoms"] == ["collision"]
    assert rows[0]["class"] == "ordering_constraint" and rows[1]["class"] == "state_invariant"
    assert {"name", "category", "atoms", "states"} <= set(rows[0])


USELESS = """
predicates: [a, b]
properties:
  - {name: waits, category: mechanism, formula: "G(a -> F b)"}
  - {name: bounded, category: mechanism, formula: "G(a -> F[<=3] b)", recovery: "F(b)"}
  - {name: tautology, category: mechanism, formula: "G(a | !a)"}
  - {name: impossible, category: mechanism, formula: "G(a & !a)"}
  - {name: latched, category: mechanism, formula: "G(!a)", recovery: "F(b & !b)"}
  - {name: no_rate, category: mechanism, formula: "G(!a)", recovery: "F(b)", min_resolve_s: 5}
"""


OUTSIDE = "grounder does not produce"  # the file's predicates a, b are no grounder's: their own warning, tested apart


def test_specs_check_warns_of_properties_a_monitor_could_never_report(tmp_path, capsys):
    """Each is a valid file the monitor runs without a word: G(a -> F b) never opens an episode (nothing
    breaks it for good), a tautology never either, a contradiction opens on every first frame, and a
    recovery that cannot hold never closes one. `bounded` is the fix of `waits` and draws no warning."""
    path = write(tmp_path, USELESS)
    assert main(["specs", "check", str(path)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if ": warning: " in line and OUTSIDE not in line]
    assert lines == [
        "waits: warning: no trace breaks the formula for good (what it waits for may always still come), so it "
        "never opens a violation episode: bound the wait (F[<=N], U[<=N], the bounded_response pattern) to see "
        "it broken",
        "tautology: warning: every trace satisfies the formula (a tautology): it can never be violated",
        "impossible: warning: no trace satisfies the formula: every trace violates it on its first frame",
        "latched: warning: the recovery can never hold: an episode, once open, stays open to the end of the trace",
        "no_rate: warning: min_resolve_s 5 needs a control rate (control_rate_hz, or the monitor's): without one "
        "no minimum applies, and every violation still open when the trace ends counts",
    ]
    assert main(["specs", "check", str(path), "--json"]) == 0
    rows = {r["name"]: [w for w in r["warnings"] if OUTSIDE not in w] for r in json.loads(capsys.readouterr().out)}
    assert rows["bounded"] == [] and len(rows["waits"]) == 1
    assert main(["specs", "check", str(path), "--rate", "20", "--json"]) == 0  # a rate converts the span
    rows = {r["name"]: [w for w in r["warnings"] if OUTSIDE not in w] for r in json.loads(capsys.readouterr().out)}
    assert rows["no_rate"] == []


def test_the_default_specs_draw_no_warning(capsys):
    assert main(["specs", "check", str(Path(__file__).parents[1] / "config" / "specs.yaml"), "--json"]) == 0
    assert all(r["warnings"] == [] for r in json.loads(capsys.readouterr().out))


def test_specs_check_cli_reports_errors_in_one_line_and_exit_2(tmp_path, capsys):
    path = write(tmp_path, GOOD.replace('"G(!collision)"', '"G(!bump)"'))
    assert main(["specs", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "bump" in err and "Traceback" not in err


def test_min_resolve_seconds_convert_at_the_control_rate(tmp_path):
    text = GOOD.replace("min_resolve_frames: 3", "min_resolve_frames: 100\n    min_resolve_s: 5.0")
    spec_set = load_specs(write(tmp_path, text))
    assert spec_set.properties[1].min_resolve_frames == 100  # rate unknown: frames as written
    assert spec_set.at_rate(500.0).properties[1].min_resolve_frames == 2500
    assert spec_set.at_rate(20.0).properties[1].min_resolve_frames == 100
    assert spec_set.at_rate(3.0).properties[0].min_resolve_frames == 0  # no seconds given: untouched
    assert spec_set.at_rate(None) is spec_set


@pytest.mark.parametrize("value", ["-1", ".nan", "soon", "true"])
def test_bad_min_resolve_seconds_are_named(tmp_path, value):
    text = GOOD.replace("min_resolve_frames: 3", f"min_resolve_s: {value}")
    with pytest.raises(SpecError, match="'min_resolve_s' must be a non-negative number of seconds"):
        load_specs(write(tmp_path, text))


def test_missing_mona_during_compile_names_file_and_property(tmp_path, monkeypatch):
    from safety_monitor.errors import ToolMissingError
    from safety_monitor.specs import compile as compiler

    monkeypatch.setenv("SAFETY_MONITOR_CACHE_DIR", str(tmp_path / "empty_cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    compiler._compile_canonical.cache_clear()
    path = write(tmp_path, GOOD)
    try:
        with pytest.raises(ToolMissingError) as info:
            compile_specs(load_specs(path))
    finally:
        compiler._compile_canonical.cache_clear()
    assert str(path) in str(info.value) and "property 'grasp_synced'" in str(info.value)
    assert "apt-get install -y mona" in str(info.value)


def test_monitor_and_specs_check_reject_the_same_bad_option(tmp_path, capsys):
    path = write(tmp_path, GOOD + "    options: {close_on_opening_frme: true}\n")
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"collision": false, "object_grasped": false, "object_sync": true, "object_grasped_raw": false, '
        '"object_dropped": false}\n'
    )
    assert main(["specs", "check", str(path)]) == 2
    assert main(["monitor", "--specs", str(path), "--trace", str(trace)]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert sum("unknown option 'close_on_opening_frme'" in line for line in errors) == 2, errors
