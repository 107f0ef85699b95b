"""Fuzzed spec files: load_specs, compile_specs and `specs check` end in a SpecError naming the file or a
valid spec set, never a traceback or a hang (benchmarks/fuzz_inputs.py runs the long campaign)."""

import pytest
import yaml
from hypothesis import given, settings
from test_fuzz_support import (
    DEFAULT_SPECS,
    FUZZ,
    compile_outcome,
    guarded,
    is_failure,
    mutated_default_specs,
    spec_documents,
    spec_file_bytes,
    spec_outcome,
    specs_with_random_formula,
    write_text_doc,
)

from safety_monitor.cli import main
from safety_monitor.errors import SpecError
from safety_monitor.specs.model import load_specs, parse_specs


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_specs") / "specs.yaml"


@settings(FUZZ, max_examples=200)
@given(doc=spec_documents())
def test_random_documents_load_or_fail_naming_the_file(spec_path, doc):
    if write_text_doc(spec_path, doc):
        outcome, detail = guarded(lambda: spec_outcome(spec_path))
        assert not is_failure(outcome), (outcome, detail, doc)


@settings(FUZZ, max_examples=100)
@given(doc=spec_documents())
def test_parse_specs_takes_any_python_document(doc):
    try:
        parse_specs(doc, "fuzzed")
    except SpecError as exc:
        assert str(exc).startswith("fuzzed: ")


@settings(FUZZ, max_examples=40)
@given(doc=mutated_default_specs())
def test_edited_default_specs_load_or_list_every_problem(spec_path, doc):
    if write_text_doc(spec_path, doc):
        outcome, detail = guarded(lambda: spec_outcome(spec_path))
        assert not is_failure(outcome), (outcome, detail)


@settings(FUZZ, max_examples=100)
@given(data=spec_file_bytes())
def test_damaged_bytes_load_or_fail_naming_the_file(spec_path, data):
    spec_path.write_bytes(data)
    outcome, detail = guarded(lambda: spec_outcome(spec_path))
    assert not is_failure(outcome), (outcome, detail, data[:80])


@settings(FUZZ, max_examples=10)
@given(doc=specs_with_random_formula())
def test_spec_files_with_random_formulas_compile_or_fail_naming_the_file(spec_path, doc):
    assert write_text_doc(spec_path, doc)
    outcome, detail = guarded(lambda: compile_outcome(spec_path))
    assert outcome in ("compiled", "compile_error"), (outcome, detail)


@settings(FUZZ, max_examples=20)
@given(data=spec_file_bytes())
def test_specs_check_prints_one_error_line_and_exits_2(spec_path, capsys, data):
    spec_path.write_bytes(data)
    code = main(["specs", "check", str(spec_path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code in (0, 2)
    if code == 2:
        assert err.startswith(f"safety-monitor specs: error: {spec_path}")


@pytest.mark.parametrize(
    "text, problem",
    [
        (b"\xff\xfe not utf-8", "not UTF-8"),
        (b"a: [" * 3000, "nested too deeply|maximum nesting depth"),
        (b"on: 1\npredicates: [a]\nproperties: []\n", "unknown top-level key 'on'"),  # YAML 1.2: 'on' is text
        (
            b"predicates: [last, x]\nproperties: [{name: p, category: c, formula: 'G(last -> x)', trigger: x}]\n",
            "predicate 'last': names must not start with",
        ),
    ],
)
def test_inputs_the_fuzzing_found_are_clear_errors(spec_path, text, problem):
    spec_path.write_bytes(text)
    with pytest.raises(SpecError, match=problem) as caught:
        load_specs(spec_path)
    assert str(caught.value).startswith(str(spec_path))


def test_the_default_specs_still_load():
    doc = yaml.safe_load(DEFAULT_SPECS.read_text())
    assert len(load_specs(DEFAULT_SPECS).properties) == len(doc["properties"])
