"""The top-level command: a Ctrl-C that no command handles itself is one line and exit code 130; a bad
MUJOCO_GL is an error naming it, not an internal error."""

import ctypes.util
import os
import subprocess
import sys

import pytest

from safety_monitor.cli import main


def test_an_unhandled_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    from safety_monitor.io import bag

    def interrupted(paths):
        raise KeyboardInterrupt

    monkeypatch.setattr(bag, "find_bags", interrupted)
    assert main(["replay", "somewhere"]) == 130
    assert capsys.readouterr().err == "safety-monitor replay: interrupted (Ctrl-C)\n"


def _sim_with_mujoco_gl(backend: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MUJOCO_GL": backend}
    for name in ("SAFETY_MONITOR_TRACEBACK", "PYOPENGL_PLATFORM"):  # MuJoCo's egl sets the second in this process
        env.pop(name, None)
    command = "import sys; from safety_monitor.cli import main; sys.exit(main())"
    argv = [sys.executable, "-c", command, "sim", "--fault", "none", "--episodes", "1"]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def test_an_unknown_mujoco_gl_is_named_with_its_fix():
    done = _sim_with_mujoco_gl("bogus")
    assert done.returncode == 2
    assert done.stderr == (
        "safety-monitor sim: error: MUJOCO_GL=bogus is not an OpenGL backend MuJoCo knows: set MUJOCO_GL=egl on a "
        "machine without a display (libEGL, Debian package libegl1), or unset it\n"
    )


@pytest.mark.skipif(ctypes.util.find_library("OSMesa") is not None, reason="this machine has libOSMesa")
def test_a_mujoco_gl_backend_without_its_library_is_named_with_its_fix():
    done = _sim_with_mujoco_gl("osmesa")
    assert done.returncode == 2
    assert done.stderr.startswith("safety-monitor sim: error: MUJOCO_GL=osmesa: MuJoCo cannot load this OpenGL backend")
    assert done.stderr.endswith(
        "set MUJOCO_GL=egl on a machine without a display (libEGL, Debian package libegl1), or unset it\n"
    )
    assert len(done.stderr.splitlines()) == 1 and "internal error" not in done.stderr
