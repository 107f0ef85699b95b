"""Argument errors of `ctl` and `equiv` exit 2 before any work and say what is wrong or missing."""

import json

import pytest

from safety_monitor.cli import main
from safety_monitor.verify import trajectories


def exit_code(argv):
    """main's return value, or the code of argparse's exit on a usage error."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.fixture
def no_rollouts(monkeypatch):
    """Fail the test if a workcell rollout would start."""

    def refuse(*args, **kwargs):
        raise AssertionError("a rollout started before the arguments were checked")

    monkeypatch.setattr("safety_monitor.sim.runner.run_episode", refuse)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["t.jsonl", "--fault", "slip"], "--seeds and --fault only apply with --sim TASK"),
        (["t.jsonl", "--seeds", "3"], "--seeds and --fault only apply with --sim TASK"),
        (
            ["--sim", "open_drawer", "--seeds", "1", "--fault", "slip"],
            "fault 'slip' is defined on task 'pick_and_place_mug'",
        ),
        (
            ["--sim", "open_drawer", "--seeds", "5", "--fault", "slip"],
            "fault 'slip' is defined on task 'pick_and_place_mug'",
        ),
        (["--sim", "open_drawr"], "unknown task 'open_drawr'"),
        (["--sim", "pick_and_place_mug", "--fault", "slipp"], "unknown fault 'slipp'"),
        (["--sim", "pick_and_place_mug", "--seeds", "1", "--fault", "slip"], "--seeds 1 is too few"),
        (["--sim", "pick_and_place_mug", "--seeds", "0"], "argument --seeds: must be a whole number from 1 to 100000"),
    ],
)
def test_ctl_option_conflicts_fail_before_any_work(argv, message, no_rollouts, capsys):
    assert exit_code(["ctl", *argv, "--formula", "AG true"]) == 2
    assert message in capsys.readouterr().err


def test_rollout_schedule_cycles_no_fault_then_each_fault():
    assert trajectories.rollout_faults("pick_and_place_mug", 3, ["slip"]) == [None, "slip"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--candidates", "c.jsonl"], "batch mode needs --reference FILE too"),
        (["--reference", "r.yaml"], "batch mode needs --candidates FILE too"),
        (["G a", "--candidates", "c.jsonl", "--reference", "r.yaml"], "batch mode takes no formulas"),
        (["G a"], "give two formulas A and B"),
    ],
)
def test_equiv_says_what_is_missing(argv, message, capsys):
    assert exit_code(["equiv", *argv]) == 2
    assert message in capsys.readouterr().err


def test_equiv_table_puts_the_all_row_last(tmp_path, capsys):
    refs = tmp_path / "refs.yaml"
    refs.write_text("p1: G(!a)\n")
    cands = tmp_path / "cands.yaml"
    cands.write_text("- {id: p1, formula: 'G(!a)', model: m1}\n- {id: p1, formula: 'F a', model: m2}\n")
    assert main(["equiv", "--candidates", str(cands), "--reference", str(refs)]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert rows == ["model", "m1", "m2", "all"]


def test_ctl_prints_a_given_formula_once(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"a": true, "b": true}\n')
    assert main(["ctl", str(trace), "--formula", "AG(a -> AF b)"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == ["holds", "AG(a", "->", "AF(b))"]


def test_every_command_has_a_description_on_its_help_page():
    from safety_monitor.cli import build_parser

    def pages(parser):
        for action in parser._subparsers._group_actions if parser._subparsers else ():
            for name, sub in action.choices.items():
                yield name, sub
                yield from pages(sub)

    missing = [name for name, sub in pages(build_parser()) if not sub.description]
    assert not missing, missing


def test_ctl_verdict_does_not_depend_on_the_other_formulas(tmp_path, capsys):
    """Over `a` alone both runs start alike, so EX EX a holds at the one root; the runs differ in `b` at
    frame 0, which must not split that root when a formula over `b` is checked in the same command."""
    t1, t2 = tmp_path / "t1.jsonl", tmp_path / "t2.jsonl"
    t1.write_text('{"a": false, "b": false}\n{"a": false, "b": false}\n{"a": true, "b": false}\n')
    t2.write_text('{"a": false, "b": true}\n{"a": true, "b": true}\n')
    alone = main(["ctl", str(t1), str(t2), "--formula", "EX EX a", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert alone == 0 and [r["holds"] for r in report["results"]] == [True]
    together = main(
        ["ctl", str(t1), str(t2), "--formula", "EX EX a", "--formula", "b | !b", "--formula", "EX EX (a | b)", "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert [r["holds"] for r in report["results"]] == [True, True, False]  # over a and b the roots differ
    assert together == 1 and report["tree"]["trees"] == 3


@pytest.mark.parametrize("error", [MemoryError(), RuntimeError("boom\nsecond line")])
def test_a_crash_is_exit_2_with_one_line_never_1(error, monkeypatch, capsys, tmp_path):
    """Exit 1 means 'not equivalent' or 'violated' to scripts; a crash must not look like a verdict."""
    from safety_monitor.specs import equivalence

    def crash(*args, **kwargs):
        raise error

    monkeypatch.delenv("SAFETY_MONITOR_TRACEBACK", raising=False)
    monkeypatch.setattr(equivalence, "formula_equivalence", crash)
    monkeypatch.setattr(trajectories, "load", crash)
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"a": true}\n')
    for argv in (["equiv", "G(a)", "G(b)"], ["ctl", str(trace), "--formula", "AG a"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"safety-monitor {argv[0]}: ") and "Traceback" not in err
        assert ("out of memory" in err) if isinstance(error, MemoryError) else ("RuntimeError: boom" in err)


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_ctl_sim_counts_its_rollouts_on_a_terminal_and_prints_nothing_more_in_a_pipe(monkeypatch, capsys, terminal):
    """A rollout takes seconds (the default ten, most of a minute): a bar says how many are done."""
    import itertools
    import sys

    from safety_monitor.sim import runner

    real = runner.run_episode
    monkeypatch.setattr(runner, "run_episode", lambda task, fault, seed: itertools.islice(real(task, fault, seed), 3))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    ended = []
    found = trajectories.from_workcell("pick_and_place_cube", range(2), done=ended.append)
    assert ended == [1, 1] and [len(t.frames) for t in found] == [3, 3]
    assert exit_code(["ctl", "--sim", "pick_and_place_cube", "--seeds", "2", "--formula", "AG !excess_wrench"]) == 0
    err = capsys.readouterr().err
    assert ("pick_and_place_cube:   0%|" in err and "0/2 [" in err and "rollout" in err) if terminal else err == ""
