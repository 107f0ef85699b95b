"""The top-level command: a Ctrl-C that no command handles itself is one line and exit code 130."""

from safety_monitor.cli import main


def test_an_unhandled_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    from safety_monitor.io import bag

    def interrupted(paths):
        raise KeyboardInterrupt

    monkeypatch.setattr(bag, "find_bags", interrupted)
    assert main(["replay", "somewhere"]) == 130
    assert capsys.readouterr().err == "safety-monitor replay: interrupted (Ctrl-C)\n"
