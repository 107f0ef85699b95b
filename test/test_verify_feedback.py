"""Counterexample feedback from the monitor and from CTL, and the `ctl` command on trace files."""

import json

import pytest

from safety_monitor.cli import main
from safety_monitor.monitor.live import SpecSetMonitor
from safety_monitor.verify.check import TreeChecker
from safety_monitor.verify.ctl import parse_ctl
from safety_monitor.verify.feedback import FrameValues, compact, feedback_json, from_ctl, from_monitor_event
from safety_monitor.verify.tree import tree_from_valuations

SPECS = """
predicates: [stove_on, in_cabinet, cabinet_open]
properties:
  - name: stove_turned_off
    category: mechanism
    formula: "G(stove_on -> F !stove_on)"
  - name: reach_in_only_when_open
    category: enclosure_access
    formula: "G(in_cabinet -> cabinet_open)"
    recovery: "F(!in_cabinet)"
  - name: next_frame_off
    category: mechanism
    formula: "G(stove_on -> X !stove_on)"
"""


def frames(n, stove=(), cabinet=(), opened=()):
    return [{"stove_on": i in stove, "in_cabinet": i in cabinet, "cabinet_open": i in opened} for i in range(n)]


def test_monitor_event_becomes_a_counterexample(tmp_path):
    spec = tmp_path / "specs.yaml"
    spec.write_text(SPECS)
    monitor = SpecSetMonitor.from_spec_file(spec)
    result = monitor.run(frames(10, cabinet=range(4, 6)))
    opened = [e for e in result.events if e.kind == "opened" and e.property == "reach_in_only_when_open"]
    cx = from_monitor_event(opened[0], where=["rollout_7"])
    assert cx.origin == "monitor" and cx.category == "enclosure_access" and cx.where == ("rollout_7",)
    assert cx.decided_at == 4
    assert cx.frames[-1].values == {"cabinet_open": False, "in_cabinet": True}
    assert set(cx.frames[-1].decisive) == {"cabinet_open", "in_cabinet"}
    assert cx.sentence == opened[0].counterexample.explanation
    doc = json.loads(feedback_json([cx]))
    assert doc["violations"] == 1 and doc["counterexamples"][0]["frames"][-1]["decisive"]


def test_ctl_counterexample_names_trajectories_frames_and_deciding_values():
    runs = [frames(8, stove=range(2, 5)), frames(8, stove=range(2, 8)), frames(8, stove=range(2, 8))]
    tree = tree_from_valuations(runs, names=["ok", "stuck_a", "stuck_b"])
    result = TreeChecker(tree).check(parse_ctl("AG(stove_on -> AF !stove_on)"))
    cx = from_ctl(result, tree, "stove_turned_off", "mechanism")
    assert not result.holds and cx.where == ("stuck_a", "stuck_b")
    assert "on stuck_a and stuck_b:" in cx.sentence
    assert "stove_on is true at frame 2" in cx.sentence and "end of the path at frame 7" in cx.sentence
    # compacted: first frame, the change at frame 2 (also deciding), and the last frame
    assert [f.frame for f in cx.frames] == [0, 2, 7]
    assert cx.frames[1].values == {"stove_on": True} and cx.frames[1].decisive == ("stove_on",)
    assert cx.decided_at == 7


def test_ctl_counterexample_ending_at_an_inner_node_names_only_the_runs_that_stop_there():
    # "short" stops at frame 1 without q; "long" shares that prefix and reaches q at frame 2
    r, rq = {"q": False, "r": True}, {"q": True, "r": False}
    tree = tree_from_valuations([[r, r], [r, r, rq], [r, r]], names=["short", "long", "short_again"])
    checker = TreeChecker(tree)
    for text in ("AF q", "AG(!q -> AF q)", "A[r U q]"):
        cx = from_ctl(checker.check(parse_ctl(text)), tree, text)
        assert cx.where == ("short", "short_again"), text
        assert "on short and short_again:" in cx.sentence
    # a violation decided at a node, not by a path stopping there, is on every run through it
    cx = from_ctl(checker.check(parse_ctl("AG !r")), tree, "AG !r")
    assert cx.where == ("short", "long", "short_again")


def test_compact_keeps_changes_and_decisions():
    fs = [FrameValues(i, {"a": i >= 3}, ("a",) if i == 5 else ()) for i in range(8)]
    assert [f.frame for f in compact(fs)] == [0, 3, 5, 7]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_ctl_command_on_trace_files(tmp_path, capsys):
    spec = tmp_path / "specs.yaml"
    spec.write_text(SPECS)
    a = write_jsonl(tmp_path / "a.jsonl", frames(6, stove=(1,)))
    b = write_jsonl(tmp_path / "b.jsonl", frames(6, stove=(1, 2, 3, 4, 5), cabinet=(3,), opened=(3,)))
    feedback = tmp_path / "fb.json"
    assert main(["ctl", a, b, "--specs", str(spec), "--json", "--feedback", str(feedback)]) == 1
    out = json.loads(capsys.readouterr().out)
    # one tree per formula atom set (two here), frames 0-1 shared in each: 10 + 9 nodes
    assert out["tree"] == {**out["tree"], "trajectories": 2, "frames": 12, "trees": 2, "nodes": 19}
    verdicts = {r["property"]: r["holds"] for r in out["results"]}
    assert verdicts == {"stove_turned_off": False, "reach_in_only_when_open": True}
    assert out["not_lifted"][0]["property"] == "next_frame_off"
    fb = json.loads(feedback.read_text())
    assert fb["counterexamples"][0]["where"] == [b]
    assert main(["ctl", a, "--formula", "AG !in_cabinet", "--formula", "EF stove_on"]) == 0
    assert "holds" in capsys.readouterr().out


def test_ctl_names_every_trajectory_that_breaks_a_formula_on_any_branch(tmp_path, capsys):
    # b and c break it on different branches (the stove stays on from frame 2, or from frame 0),
    # d repeats b; a turns the stove off
    a, b, c, d = (
        write_jsonl(tmp_path / f"{n}.jsonl", rows)
        for n, rows in zip(
            "abcd",
            [
                frames(6, stove=(2, 3)),
                frames(6, stove=range(2, 6)),
                frames(6, stove=range(6)),
                frames(6, stove=range(2, 6)),
            ],
        )
    )
    feedback = tmp_path / "fb.json"
    argv = ["ctl", a, b, c, d, "--formula", "AG(stove_on -> AF !stove_on)"]
    assert main([*argv, "--feedback", str(feedback)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith("(broken by 3 of 4 trajectories)")
    assert f"violated on {b} and {d}: stove_on is true at frame 2;" in lines[2]
    assert f"violated on {c}: stove_on is true at frame 0;" in lines[3] and len(lines) == 4
    assert [cx["where"] for cx in json.loads(feedback.read_text())["counterexamples"]] == [[b, d], [c]]
    assert main([*argv, "--json"]) == 1
    row = json.loads(capsys.readouterr().out)["results"][0]
    assert row["broken_by"] == [b, c, d]
    assert [cx["decided_at"] for cx in row["counterexamples"]] == [5, 5]
    assert row["counterexamples"][1]["frames"][0] == {
        "frame": 0,
        "values": {"stove_on": True},
        "decisive": ["stove_on"],
    }


def test_ctl_counts_the_breakers_past_the_paths_it_shows(tmp_path, capsys):
    runs = [write_jsonl(tmp_path / f"r{k}.jsonl", frames(6, cabinet=(k,))) for k in range(6)]
    assert main(["ctl", *runs, "--formula", "AG !in_cabinet"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith("(broken by 6 of 6 trajectories)") and len(lines) == 6
    assert [f"violated on {r}: !in_cabinet is false at frame {k} " in lines[2 + k] for k, r in enumerate(runs[:3])] == [
        True
    ] * 3
    assert lines[5] == "            and 3 more trajectories (--json names them all)"


def test_ctl_formula_that_no_trajectory_breaks_alone_keeps_the_trees_counterexample(tmp_path, capsys):
    # a loses the stove at frame 1, b the cabinet: AG stove_on | AG in_cabinet fails on the tree, on neither run
    both = {"stove_on": True, "in_cabinet": True, "cabinet_open": False}
    a = write_jsonl(tmp_path / "a.jsonl", [both, {**both, "stove_on": False}])
    b = write_jsonl(tmp_path / "b.jsonl", [both, {**both, "in_cabinet": False}])
    assert main(["ctl", a, b, "--formula", "AG stove_on | AG in_cabinet", "--json"]) == 1
    row = json.loads(capsys.readouterr().out)["results"][0]
    assert row["broken_by"] == [] and len(row["counterexamples"]) == 1
    assert main(["ctl", a, b, "--formula", "AG stove_on | AG in_cabinet"]) == 1
    assert "(no trajectory breaks it alone)" in capsys.readouterr().out


def test_ctl_command_rejects_unknown_values(tmp_path, capsys):
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"stove_on": None}])
    assert main(["ctl", bad, "--formula", "AG stove_on"]) == 2
    assert "unknown at frame 0" in capsys.readouterr().err


@pytest.mark.parametrize("formula", ["AG(", "AG zz"])
def test_ctl_command_bad_formula(tmp_path, formula, capsys):
    ok = write_jsonl(tmp_path / "ok.jsonl", [{"stove_on": True}])
    assert main(["ctl", ok, "--formula", formula]) == 2
    assert capsys.readouterr().err.startswith("safety-monitor ctl: error:")
