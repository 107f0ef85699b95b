"""`safety-monitor monitor` end to end, and the trace reader's formats and error messages."""

import json
import textwrap

import pytest

from safety_monitor.cli import main
from safety_monitor.errors import SourceError
from safety_monitor.io.traces import read_trace

SPECS = textwrap.dedent("""\
    predicates: [p, r, h, to, s]
    properties:
      - name: no_p
        category: collision_contact
        formula: G(!p)
        recovery: F(!p)
      - name: ord
        category: mechanism
        formula: G(h -> (!to U s))
        recovery: F(s | to)
        min_resolve_frames: 5
    """)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def jsonl(rows):
    atoms = ["p", "r", "h", "to", "s"]
    return "".join(
        json.dumps({"t": 0.1 * i, **{a: a in row.split() for a in atoms}}) + "\n" for i, row in enumerate(rows)
    )


@pytest.fixture
def specs(tmp_path):
    return write(tmp_path, "specs.yaml", SPECS)


def test_events_then_metrics_line(tmp_path, specs, capsys):
    trace = write(tmp_path, "a.jsonl", jsonl(["", "p", "p", "", "h", "h to"]))
    assert main(["monitor", "--specs", specs, "--trace", trace, "--json", "--resamples", "50"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    events, summary = lines[:-1], lines[-1]
    assert [(e["kind"], e["property"], e["frame"]) for e in events] == [
        ("opened", "no_p", 1),
        ("recovered", "no_p", 3),
        ("opened", "ord", 5),
        ("discarded_truncated", "ord", 5),
    ]
    assert events[0]["trace"] == trace and events[0]["t"] == pytest.approx(0.1)
    assert "explanation" in events[0]["counterexample"]
    pooled = summary["metrics"]["pooled"]
    assert (pooled["triggers"], pooled["violations"], pooled["violating_frames"]) == (1, 1, 2)


def test_table_goes_to_stderr_and_engines_agree(tmp_path, specs, capsys):
    one = write(tmp_path, "a.jsonl", jsonl(["", "p", "", "h", "h to", "", "", "", "", ""]))
    two = write(tmp_path, "b.csv", "t,p,r,h,to,s\n0,false,0,1,0,0\n0.1,TRUE,0,1,1,0\n")
    outputs = []
    for engine in ("batch", "live"):
        assert main(["monitor", "--specs", specs, "--trace", one, two, "--engine", engine]) == 0
        captured = capsys.readouterr()
        outputs.append(captured.out)
        assert "[all]" in captured.err and "2 rollout(s)" in captured.err
    assert outputs[0] == outputs[1]
    assert all(json.loads(line)["kind"] for line in outputs[0].splitlines())


def test_missing_predicate_is_one_line_error_naming_file_and_line(tmp_path, specs, capsys):
    trace = write(tmp_path, "a.jsonl", '{"p": false, "r": false, "h": false, "to": false, "s": false}\n{"p": true}\n')
    assert main(["monitor", "--specs", specs, "--trace", trace]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{trace}:2" in err and "'h', 'to', 's'" in err


@pytest.mark.parametrize(
    "name, text, fragment",
    [
        ("bad.jsonl", '{"p": true}\nnot json\n', "bad.jsonl:2: not valid JSON"),
        ("bad.jsonl", "[1, 2]\n", "bad.jsonl:1: expected an object"),
        ("bad.jsonl", '{"p": "yes"}\n', "bad.jsonl:1: predicate 'p' has value 'yes'"),
        ("bad.jsonl", '{"p": true, "t": 1}\n{"p": true, "t": 0.5}\n', "bad.jsonl:2: time goes backwards"),
        ("bad.jsonl", '{"p": true, "t": 1}\n{"p": true}\n', "bad.jsonl:2: frame 1 has no 't'"),
        ("bad.csv", "p,q\ntrue,maybe\n", "bad.csv:2: column 'q' has value 'maybe'"),
        ("bad.csv", "p,q\ntrue\n", "bad.csv:2: 1 values for 2 columns"),
        ("bad.csv", "p,p\n1,0\n", "bad.csv:1: header has duplicate columns p"),
        ("bad.csv", "t,p\nsoon,1\n", "bad.csv:2: 't' must be a finite number"),
    ],
)
def test_bad_traces_name_file_line_and_problem(tmp_path, name, text, fragment):
    with pytest.raises(SourceError, match=fragment.replace("(", r"\(")):
        read_trace(write(tmp_path, name, text))


def test_reader_formats_and_unknown_values(tmp_path):
    csv_trace = read_trace(write(tmp_path, "a.csv", "p, q ,t\nTrue,0,0.0\n\nnull,1,0.05\n"))
    assert csv_trace.frames == [{"p": True, "q": False}, {"p": None, "q": True}]
    assert csv_trace.times == [0.0, 0.05] and csv_trace.lines == [2, 4]
    js = read_trace(write(tmp_path, "a.jsonl", '{"p": null, "q": true}\n\n{"p": false, "q": false, "t": true}\n'))
    assert js.frames == [{"p": None, "q": True}, {"p": False, "q": False, "t": True}] and js.times is None
    values, known = js.to_matrix(["q", "p"])
    assert values.tolist() == [[True, False], [False, False]] and known.tolist() == [[True, False], [True, True]]
    with pytest.raises(SourceError, match="cannot read trace"):
        read_trace(tmp_path / "absent.jsonl")
