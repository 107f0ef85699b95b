"""Argument errors of `ctl` and `equiv` exit 2 before any work and say what is wrong or missing."""
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


@pytest.mark.parametrize("argv, message", [
    (["t.jsonl", "--fault", "slip"], "--seeds and --fault only apply with --sim TASK"),
    (["t.jsonl", "--seeds", "3"], "--seeds and --fault only apply with --sim TASK"),
    (["--sim", "open_drawer", "--seeds", "1", "--fault", "slip"], "fault 'slip' is defined on task 'pick_and_place_mug'"),
    (["--sim", "open_drawer", "--seeds", "5", "--fault", "slip"], "fault 'slip' is defined on task 'pick_and_place_mug'"),
    (["--sim", "open_drawr"], "unknown task 'open_drawr'"),
    (["--sim", "pick_and_place_mug", "--fault", "slipp"], "unknown fault 'slipp'"),
    (["--sim", "pick_and_place_mug", "--seeds", "1", "--fault", "slip"], "--seeds 1 is too few"),
    (["--sim", "pick_and_place_mug", "--seeds", "0"], "--seeds 0 is too few"),
])
def test_ctl_option_conflicts_fail_before_any_work(argv, message, no_rollouts, capsys):
    assert exit_code(["ctl", *argv, "--formula", "AG true"]) == 2
    assert message in capsys.readouterr().err


def test_rollout_schedule_cycles_no_fault_then_each_fault():
    assert trajectories.rollout_faults("pick_and_place_mug", 3, ["slip"]) == [None, "slip"]


@pytest.mark.parametrize("argv, message", [
    (["--candidates", "c.jsonl"], "batch mode needs --reference FILE too"),
    (["--reference", "r.yaml"], "batch mode needs --candidates FILE too"),
    (["G a", "--candidates", "c.jsonl", "--reference", "r.yaml"], "batch mode takes no formulas"),
    (["G a"], "give two formulas A and B"),
])
def test_equiv_says_what_is_missing(argv, message, capsys):
    assert exit_code(["equiv", *argv]) == 2
    assert message in capsys.readouterr().err
