"""`safety-monitor eval`: LTLf verdict on a whole trace and the first frame with no way back."""

import json

from safety_monitor.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_eval_jsonl_reports_satisfaction_and_violation_frame(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    rows = [{"a": False, "b": False}, {"a": True, "b": False}, {"a": False, "b": True}, {"a": True, "b": True}]
    trace.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, out, _ = run(capsys, "eval", "--formula", "G(a -> F b)", "--trace", str(trace))
    assert code == 0
    assert json.loads(out) == {"formula": "G((a -> F(b)))", "frames": 4, "satisfied": True, "violation_frame": None}
    code, out, _ = run(capsys, "eval", "--formula", "G(a -> b)", "--trace", str(trace))
    result = json.loads(out)
    assert result["satisfied"] is False and result["violation_frame"] == 1


def test_eval_csv_and_pending_obligation(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("a,b\n0,0\n1,0\n0,0\n")
    code, out, _ = run(capsys, "eval", "--formula", "G(a -> F b)", "--trace", str(trace))
    result = json.loads(out)
    assert code == 0 and result["satisfied"] is False and result["violation_frame"] is None


def test_eval_missing_predicate_is_named(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"a": True}) + "\n")
    code, _, err = run(capsys, "eval", "--formula", "G(a -> b)", "--trace", str(trace))
    assert code == 2 and "frame 0" in err and "b" in err


def test_eval_bad_formula_exit_2(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"a": True}) + "\n")
    code, _, err = run(capsys, "eval", "--formula", "G(a ->", "--trace", str(trace))
    assert code == 2 and "syntax error" in err
