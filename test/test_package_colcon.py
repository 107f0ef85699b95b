"""The repository root is an ament_python package: `colcon build` installs what `ros2 run/launch` need."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COLCON = shutil.which("colcon") or str(Path(sys.executable).with_name("colcon"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if not Path(COLCON).exists():
        pytest.skip("colcon is not installed (pip install colcon-common-extensions)")
    ws = tmp_path_factory.mktemp("ws")
    env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}
    proc = subprocess.run(
        [
            COLCON,
            "build",
            "--base-paths",
            str(ROOT),
            "--build-base",
            str(ws / "build"),
            "--install-base",
            str(ws / "install"),
            "--packages-select",
            "safety_monitor",
        ],
        cwd=ws,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ws / "install" / "safety_monitor"


def test_executables_land_where_ros2_run_looks(installed):
    lib = installed / "lib" / "safety_monitor"
    for exe in ("safety-monitor", "sim_node", "estimator_node", "monitor_node", "alerts"):
        assert os.access(lib / exe, os.X_OK), exe


def test_share_has_manifest_launch_and_config(installed):
    share = installed / "share" / "safety_monitor"
    assert (share / "package.xml").is_file()
    assert (installed / "share" / "ament_index" / "resource_index" / "packages" / "safety_monitor").is_file()
    assert {"sim.launch.py", "monitor.launch.py"} <= {p.name for p in (share / "launch").iterdir()}
    assert {"specs.yaml", "robot.yaml", "objects.yaml", "thresholds.yaml", "nodes.yaml"} <= {
        p.name for p in (share / "config").iterdir()
    }


def test_the_estimators_kernels_are_compiled_into_the_install(installed):
    """colcon's `setup.py install` builds the C kernels (and ships their type stub) next to the modules."""
    grounding = [p.parent for p in installed.glob("lib/python3*/site-packages/safety_monitor/grounding/geometry.py")]
    assert len(grounding) == 1, grounding
    assert list(grounding[0].glob("_geomath*.so")), sorted(p.name for p in grounding[0].iterdir())
    assert (grounding[0] / "_geomath.pyi").is_file()


def test_the_installed_kernels_call_mujoco_from_c(installed):
    """colcon's build finds the headers the mujoco wheel ships, so the installed twin calls mj_kinematics and
    mj_collision from C (built without them, it would call through the bindings: right, but slower)."""
    site = next(installed.glob("lib/python3*/site-packages"))
    env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}
    env["PYTHONPATH"] = str(site)
    script = (
        "import mujoco\n"
        "from safety_monitor.grounding import _geomath\n"
        "print(_geomath.__file__, _geomath.MUJOCO_HEADER == mujoco.mj_version())"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=installed, capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    path, direct = out.stdout.split()
    assert Path(path).is_relative_to(site) and direct == "True", out.stdout


def test_installed_command_checks_the_installed_specs(installed):
    site = next(installed.glob("lib/python3*/site-packages"))
    env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}
    env["PYTHONPATH"] = f"{site}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env["AMENT_PREFIX_PATH"] = str(installed)
    proc = subprocess.run(
        [
            str(installed / "lib" / "safety_monitor" / "safety-monitor"),
            "specs",
            "check",
            str(installed / "share" / "safety_monitor" / "config" / "specs.yaml"),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=installed,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"name": "no_forbidden_contact"' in proc.stdout


def test_colcon_test_runs_the_suite(installed):
    """`colcon test` (ament_python: pytest on test/) ran 0 tests while setup.py had only tests_require."""
    ws = installed.parents[1]
    env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}
    proc = subprocess.run(
        [
            COLCON,
            "test",
            "--base-paths",
            str(ROOT),
            "--build-base",
            str(ws / "build"),
            "--install-base",
            str(ws / "install"),
            "--test-result-base",
            str(ws / "results"),
            "--packages-select",
            "safety_monitor",
            "--pytest-args",
            "-k",
            "test_there_is_no_import_cycle",
        ],
        cwd=ws,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = (ws / "results" / "safety_monitor" / "pytest.xml").read_text()
    assert 'tests="1"' in report and 'failures="0"' in report and 'errors="0"' in report, report[:500]
