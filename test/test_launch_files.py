"""Launch files: valid Python everywhere; where launch_ros and an installed safety_monitor exist,
sim.launch.py and monitor.launch.py (with a sim node beside it) run a fault-free episode cleanly."""
import json
import py_compile
import uuid
from pathlib import Path

import pytest

LAUNCH = Path(__file__).resolve().parents[1] / "launch"
SKIP_REASON = "launch_ros is not installed here (not on PyPI; it comes with a ROS 2 installation)"


@pytest.mark.parametrize("name", ["sim.launch.py", "monitor.launch.py"])
def test_launch_file_compiles(name, tmp_path):
    py_compile.compile(str(LAUNCH / name), cfile=str(tmp_path / "out.pyc"), doraise=True)


def _require_launch():
    pytest.importorskip("launch", reason=SKIP_REASON)
    pytest.importorskip("launch_ros", reason=SKIP_REASON)
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        get_package_share_directory("safety_monitor")
    except PackageNotFoundError:
        pytest.skip("safety_monitor is not installed in an ament workspace (colcon build; source install/setup.bash)")


def _run(description, tmp_path):
    from launch import LaunchService

    service = LaunchService()
    service.include_launch_description(description)
    assert service.run() == 0
    log = tmp_path / "events.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    assert not [e for e in events if e["kind"] == "opened"]


def test_sim_launch_runs_a_fault_free_episode(tmp_path):
    _require_launch()
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    arguments = {"namespace": "l" + uuid.uuid4().hex[:8], "fault": "none", "episodes": "1", "pace": "lockstep",
                 "events_log": str(tmp_path / "events.jsonl")}
    _run(IncludeLaunchDescription(PythonLaunchDescriptionSource(str(LAUNCH / "sim.launch.py")),
                                  launch_arguments=arguments.items()), tmp_path)


@pytest.mark.parametrize("one_process", ["true", "false"])
def test_monitor_launch_watches_a_fault_free_episode(tmp_path, one_process):
    _require_launch()
    from launch import LaunchDescription
    from launch.actions import EmitEvent, IncludeLaunchDescription, RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    from launch.events import Shutdown
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch_ros.actions import Node

    ns = "l" + uuid.uuid4().hex[:8]
    sim = Node(package="safety_monitor", executable="sim_node", namespace=ns, output="screen",
               parameters=[{"fault": "none", "episodes": 1, "pace": "lockstep"}])
    _run(LaunchDescription([
        IncludeLaunchDescription(PythonLaunchDescriptionSource(str(LAUNCH / "monitor.launch.py")), launch_arguments={
            "namespace": ns, "use_sim_time": "true", "events_log": str(tmp_path / "events.jsonl"),
            "one_process": one_process}.items()),
        sim,
        RegisterEventHandler(OnProcessExit(target_action=sim, on_exit=[EmitEvent(event=Shutdown())])),
    ]), tmp_path)
