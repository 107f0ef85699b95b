"""Bad input to any sub-command: exit code 2 and one line on stderr, never a traceback (issue 16).

Each reported case, then a fuzzed argument set: every option of every sub-command that `safety-monitor
--help` lists gets bad values of its kind (numbers: negative, huge, NaN, empty, text; choices: an
unknown word; input files: binary, missing, a directory, a YAML alias bomb). The commands run
in-process through `safety_monitor.cli.main`, after a valid base command line that reaches the input.
"""

from __future__ import annotations

import argparse
import itertools
import re

import pytest
from urdf_robots import arm_urdf

from safety_monitor.cli import build_parser, main
from safety_monitor.errors import SourceError
from safety_monitor.files import MAX_YAML_BYTES, parse_yaml
from safety_monitor.frames import PredicateSample
from safety_monitor.io.bag import BagWriter
from safety_monitor.io.traces import read_trace

SPEC = "predicates: [a, b]\nproperties:\n  - {name: p, category: collision_contact, formula: 'G(a -> b)'}\n"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Valid inputs for the base command lines, and the bad ones the fuzz substitutes."""
    d = tmp_path_factory.mktemp("inputs")
    texts = {
        "spec.yaml": SPEC,
        "trace.jsonl": '{"a": false, "b": true}\n{"a": true, "b": true}\n',
        "plan.yaml": "initial: {a: false, b: true}\nmilestones:\n  - {a: true, b: true}\n",
        "candidates.jsonl": '{"id": "p", "formula": "G(a -> b)", "model": "m"}\n',
        "reference.jsonl": '{"id": "p", "formula": "G(!a | b)"}\n',
        "bomb.yaml": BOMB,
    }
    for name, text in texts.items():
        (d / name).write_text(text)
    (d / "binary").write_bytes(bytes(range(256)) * 4)
    (d / "folder").mkdir()
    (d / "bag.mcap").write_bytes(b"not a bag")
    (d / "robot.urdf").write_text(arm_urdf(3, "none"))
    with BagWriter(d / "small_bag") as w:  # a real bag, without joint states: inspect says so (exit 1)
        for k in range(5):
            w.write_predicates("/safety_monitor/predicates", PredicateSample({"a": k % 2 == 0}, 1.0 + k / 100, k))
    return d


def run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    return code, capsys.readouterr().err


def assert_one_line_error(argv, code, err):
    """Exit 2, one line saying the error; a formula's syntax error adds the formula and a caret under
    the column at fault, indented (the only lines allowed after it)."""
    assert code == 2, (argv, code, err)
    first, *pointer = err.splitlines()
    assert err.endswith("\n") and "error: " in first, (argv, err)
    assert all(line.startswith("    ") for line in pointer) and len(pointer) in (0, 2), (argv, err)
    assert "Traceback" not in err, (argv, err)


# ---------------------------------------------------------------------------------- the reported cases
@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["monitor", "--specs", "{spec}", "--trace", "{trace}", "--resamples", "-1"],
            "argument --resamples: must be a whole number from 0 to 100000",
        ),
        (["monitor", "--specs", "{spec}", "--trace", "{trace}", "--resamples", "100000000000"], "argument --resamples"),
        (
            ["monitor", "--specs", "{spec}", "--trace", "{trace}", "--seed", "-1"],
            "argument --seed: must be a whole number from 0 to 4294967295",
        ),
        (["replay", "{bag}", "--seed", "-1"], "argument --seed"),
        (["replay", "{bag}", "--resamples", "100000000000"], "argument --resamples"),
        (
            ["replay", "{bag}", "--from-predicates", "--specs", "{spec}", "--topics", "{binary}"],
            "binary: not UTF-8 text",
        ),
        (["equiv", "--candidates", "{binary}", "--reference", "{reference}"], "binary: not UTF-8 text"),
        (["equiv", "--candidates", "{candidates}", "--reference", "{binary}"], "binary: not UTF-8 text"),
        (["specs", "check", "{bomb}"], "bomb.yaml: YAML aliases are not allowed"),
    ],
)
def test_reported_bad_inputs_are_one_line_errors(files, capsys, argv, message):
    argv = _fill(argv, files)
    code, err = run(argv, capsys)
    assert_one_line_error(argv, code, err)
    assert message in err


def test_an_alias_bomb_is_refused_before_it_expands():
    """9^9 strings once expanded; refused whatever reads it (spec files, plans, parameter files)."""
    assert len(BOMB) < 500
    with pytest.raises(SourceError, match="line 1 is reused"):
        parse_yaml(BOMB, "bomb.yaml", SourceError)
    assert parse_yaml("a: &x 1\nb: 2\n", "anchor.yaml", SourceError) == {"a": 1, "b": 2}  # an unused anchor is fine


@pytest.mark.parametrize(
    "text, message",
    [
        ("predicates: [a]\npredicates: [b]\n", "key 'predicates' is given twice in one mapping (lines 1 and 2)"),
        ("- {name: p, formula: 'G(a)', formula: 'F(a)'}\n", "key 'formula' is given twice in one mapping (line 1)"),
        ("a:\n  b: 1\n  c: 2\n  b: 3\n", "key 'b' is given twice in one mapping (lines 2 and 4)"),
    ],
)
def test_yaml_keys_given_twice_are_refused(text, message):
    """YAML parsers keep the last of two equal keys silently: a second `formula:` would replace the first."""
    with pytest.raises(SourceError, match=re.escape(f"dup.yaml: {message}")):
        parse_yaml(text, "dup.yaml", SourceError)
    assert parse_yaml("a: {b: 1}\nc: {b: 2}\n'1': x\n1: y\n", "ok.yaml", SourceError) == {
        "a": {"b": 1},
        "c": {"b": 2},
        "1": "x",
        1: "y",
    }


def test_json_lines_refuse_keys_given_twice_deep_nesting_and_huge_numbers(tmp_path, capsys):
    """Trace and formula files: a key twice in one object, and nesting past the parser's recursion (an
    internal error before), are one-line errors naming file and line."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"a": true}\n{"a": true, "a": false}\n')
    with pytest.raises(SourceError, match=re.escape("t.jsonl:2: key 'a' is given twice in one object")):
        read_trace(trace)
    candidates = tmp_path / "c.jsonl"
    candidates.write_text('{"id": "p", "formula": "G(a)", "formula": "F(a)"}\n')
    code, err = run(["equiv", "--candidates", str(candidates), "--reference", str(candidates)], capsys)
    assert_one_line_error("equiv", code, err)
    assert "c.jsonl:1: key 'formula' is given twice in one object" in err
    trace.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    code, err = run(["eval", "--formula", "G(a)", "--trace", str(trace)], capsys)
    assert_one_line_error("eval", code, err)
    assert "t.jsonl:1: JSON nested too deeply" in err
    # int() refuses 4300+ digits with a ValueError that once escaped as "internal error: ValueError"
    trace.write_text('{"a": ' + "9" * 5000 + "}\n")
    code, err = run(["eval", "--formula", "G(a)", "--trace", str(trace)], capsys)
    assert_one_line_error("eval", code, err)
    assert "t.jsonl:1: JSON value not readable: Exceeds the limit" in err
    plan = tmp_path / "plan.yaml"
    plan.write_text("initial: {a: " + "9" * 5000 + "}\nmilestones: []\n")
    code, err = run(["plan", "--specs", str(tmp_path / "none.yaml"), str(plan)], capsys)
    assert_one_line_error("plan", code, err)
    assert "plan.yaml: YAML value not readable: Exceeds the limit" in err


def test_yaml_booleans_are_true_and_false_only():
    """YAML 1.2's rule: yes/no/on/off are text, 1/0 numbers; only true/false (any case) are booleans."""
    doc = parse_yaml("[true, False, TRUE, yes, no, on, off, 1, 0, null]", "b.yaml", SourceError)
    assert doc == [True, False, True, "yes", "no", "on", "off", 1, 0, None]


def test_json_traces_refuse_numbers_as_booleans(tmp_path):
    """1 and 0 are refused as 2 is (CSV, which has no types, spells booleans 1/0 too)."""
    for value in ("1", "0", "2"):
        path = tmp_path / "t.jsonl"
        path.write_text(f'{{"a": {value}}}\n')
        with pytest.raises(SourceError, match=f"predicate 'a' has value {value}; expected true, false or null"):
            read_trace(path)


def test_a_large_yaml_file_is_refused_unread(files, capsys):
    big = files / "big.yaml"
    big.write_bytes(b"#" * (MAX_YAML_BYTES + 1))
    code, err = run(["specs", "check", str(big)], capsys)
    assert_one_line_error("specs check big.yaml", code, err)
    assert f"larger than {MAX_YAML_BYTES} bytes" in err


# ---------------------------------------------------------------------------------- the fuzzed set
# A valid command line per sub-command, reaching the inputs the fuzz spoils (ctl and replay read their
# files before any work: a garbage bag is only opened once every file has been read).
BASES = {
    ("specs", "check"): ["{spec}"],
    ("specs", "explain"): ["{spec}"],
    ("eval",): ["--formula", "G(a)", "--trace", "{trace}"],
    ("predicates",): [],
    ("monitor",): ["--specs", "{spec}", "--trace", "{trace}"],
    ("equiv",): ["--candidates", "{candidates}", "--reference", "{reference}"],
    ("plan",): ["{plan}", "--specs", "{spec}"],
    ("ctl",): ["{trace}", "--formula", "AG(b)"],
    ("sim",): ["--physics-only"],
    ("alerts",): [],
    ("replay",): ["{bag}", "--from-predicates", "--specs", "{spec}"],
    ("robot", "init"): ["--urdf", "{urdf}", "--out", "{out}"],
    ("inspect",): ["{small_bag}"],
}
SPECIAL_BASES = {  # --from-predicates reads no robot; --mjcf is in place of --urdf
    ("replay", "robot"): ["{bag}", "--specs", "{spec}"],
    ("robot", "init", "mjcf"): ["--out", "{out}"],
}
INPUT_FILES = {
    "file",
    "trace",
    "specs",
    "candidates",
    "reference",
    "plan",
    "traces",
    "robot",
    "params",
    "topics",
    "urdf",
    "mjcf",
    "log",
}
OUTPUTS = {"feedback", "report", "events", "record", "out"}  # written, not read: not input validation
TEXT = {  # free text the command checks itself; each gets a value it must refuse
    "formula": "G(",
    "formulas": "G(",
    "property": "no_such_property",
    "task": "no_such_task",
    "sim": "no_such_task",
    "fault": "no_such_fault",
    "namespace": "not a namespace",
    "group_by": "(",
    "bags": "{missing}",
    "package_path": "{binary}",
    "ray": "not an address",
    "tip": "no_such_body",
}
UNCHECKED = {("sim", "fault")}  # --fault with --physics-only is checked, elsewhere it needs --sim first


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    sub = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not sub:
        yield path, parser
        return
    for name, child in sub[0].choices.items():
        yield from _commands(child, (*path, name))


def _bad_values(action: argparse.Action) -> list[str]:
    """Bad values for one option, by its kind; an option of no known kind fails the test (classify it)."""
    dest = action.dest
    if dest in TEXT:  # before the numeric kinds: arguments.py checks text too (ros_namespace)
        return [TEXT[dest]]
    if getattr(action.type, "__module__", None) == "safety_monitor.arguments":
        return ["-1", "100000000000", "nan", "inf", "", "abc"]
    if action.choices:
        return ["no_such_choice", ""]
    if dest in INPUT_FILES:
        return ["{binary}", "{missing}", "{folder}", "{bomb}"]
    if dest in OUTPUTS:
        return []
    raise AssertionError(f"option {dest!r}: add it to a kind in test_cli_inputs.py")


def _fuzz_cases():
    cases = []
    for path, parser in _commands(build_parser()):
        assert path in BASES, f"sub-command {' '.join(path)}: give it a base command line in BASES"
        for action in parser._actions:
            if action.nargs == 0 or action.dest in ("help", "version", "command"):
                continue
            for value in _bad_values(action):
                if (path[-1], action.dest) in UNCHECKED:
                    continue
                flag = action.option_strings[-1] if action.option_strings else None
                cases.append(pytest.param(path, action.dest, flag, value, id=f"{' '.join(path)}-{action.dest}={value}"))
    return cases


NAMES = {
    "spec": "spec.yaml",
    "trace": "trace.jsonl",
    "plan": "plan.yaml",
    "candidates": "candidates.jsonl",
    "reference": "reference.jsonl",
    "bag": "bag.mcap",
    "binary": "binary",
    "folder": "folder",
    "bomb": "bomb.yaml",
    "missing": "missing.yaml",
    "urdf": "robot.urdf",
    "small_bag": "small_bag",
}


_OUTS = itertools.count()


def _fill(argv: list[str], files) -> list[str]:
    """The named files substituted; `{out}` is a new folder each time (robot init never overwrites)."""
    return [a.format(out=files / f"out{next(_OUTS)}", **{k: files / v for k, v in NAMES.items()}) for a in argv]


def _argv(path, dest, flag, value, files) -> list[str]:
    base = list(SPECIAL_BASES.get((*path, dest), BASES[path]))
    if flag is None:  # a positional: replace the base's value, or add it
        slot = {"file": 0, "plan": 0, "traces": 0, "bags": 0}.get(dest)
        if slot is not None and base:
            base[slot] = value
        else:
            base.append(value)
    elif flag in base:
        base[base.index(flag) + 1] = value
    else:
        base += [flag, value]
    return [*path, *_fill(base, files)]


@pytest.mark.parametrize("path, dest, flag, value", _fuzz_cases())
def test_fuzzed_arguments_are_one_line_errors(files, capsys, path, dest, flag, value):
    argv = _argv(path, dest, flag, value, files)
    code, err = run(argv, capsys)
    assert_one_line_error(argv, code, err)


@pytest.mark.parametrize("path", [p for p in BASES if p not in (("alerts",), ("sim",))])  # these would start
def test_every_base_command_line_is_valid(files, capsys, path):
    """The fuzz means something only if the unspoiled command lines pass (replay then fails on its
    garbage bag, and inspect on a bag without joint states, with exit 1, as documented)."""
    code, err = run([*path, *_fill(BASES[path], files)], capsys)
    assert code == (1 if path in {("replay",), ("inspect",)} else 0), (path, err)
    assert "Traceback" not in err
