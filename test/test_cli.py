"""The top-level command: a Ctrl-C that no command handles itself is one line and exit code 130."""
import pytest

from safety_monitor.cli import main


def test_ctrl_c_while_a_live_run_starts_is_one_line_and_exit_130(monkeypatch, capsys):
    pytest.importorskip("rclpy")
    from safety_monitor.nodes import run_inprocess

    def interrupted_while_starting(options):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_inprocess, "run", interrupted_while_starting)
    assert main(["sim", "--episodes", "1"]) == 130
    assert capsys.readouterr().err == "safety-monitor sim: interrupted (Ctrl-C)\n"
