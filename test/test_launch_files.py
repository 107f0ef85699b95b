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


def _launch(description):
    """LaunchService.run()'s code (what `ros2 launch` exits with) and the processes that started."""
    from launch.actions import RegisterEventHandler
    from launch.event_handlers import OnProcessStart

    from launch import LaunchDescription, LaunchService

    started = []
    service = LaunchService()
    service.include_launch_description(
        LaunchDescription(
            [
                RegisterEventHandler(OnProcessStart(on_start=lambda event, context: started.append(event.action.name))),
                description,
            ]
        )
    )
    return service.run(), started


def _include(name, arguments):
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    return IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(LAUNCH / name)), launch_arguments=arguments.items()
    )


def _run(description, tmp_path):
    code, _ = _launch(description)
    assert code == 0
    log = tmp_path / "events.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    assert not [e for e in events if e["kind"] == "opened"]


def test_sim_launch_runs_a_fault_free_episode(tmp_path):
    _require_launch()
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    arguments = {
        "namespace": "l" + uuid.uuid4().hex[:8],
        "fault": "none",
        "episodes": "1",
        "pace": "lockstep",
        "events_log": str(tmp_path / "events.jsonl"),
    }
    _run(
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(LAUNCH / "sim.launch.py")), launch_arguments=arguments.items()
        ),
        tmp_path,
    )


def test_a_namespaced_sim_keeps_its_clock_in_its_namespace(tmp_path):
    """Two sim launches on one domain both published /clock: each monitor read both sims' times and went
    blind on the other's. A probe hears the namespaced sim on <ns>/clock and nothing on /clock."""
    _require_launch()
    from node_processes import clock_counts

    ns = "l" + uuid.uuid4().hex[:8]
    with clock_counts("/clock", f"/{ns}/clock") as heard:
        arguments = {"namespace": ns, "fault": "none", "episodes": "1", "pace": "lockstep"}
        _run(_include("sim.launch.py", {**arguments, "events_log": str(tmp_path / "events.jsonl")}), tmp_path)
    assert heard["/clock"] == 0 and heard[f"/{ns}/clock"] > 0


@pytest.mark.parametrize("one_process", ["true", "false"])
def test_monitor_launch_watches_a_fault_free_episode(tmp_path, one_process):
    _require_launch()
    from launch.actions import EmitEvent, IncludeLaunchDescription, RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    from launch.events import Shutdown
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch_ros.actions import Node

    from launch import LaunchDescription

    ns = "l" + uuid.uuid4().hex[:8]
    sim = Node(
        package="safety_monitor",
        executable="sim_node",
        namespace=ns,
        output="screen",
        parameters=[{"fault": "none", "episodes": 1, "pace": "lockstep"}],
    )
    _run(
        LaunchDescription(
            [
                IncludeLaunchDescription(
                    PythonLaunchDescriptionSource(str(LAUNCH / "monitor.launch.py")),
                    launch_arguments={
                        "namespace": ns,
                        "use_sim_time": "true",
                        "events_log": str(tmp_path / "events.jsonl"),
                        "one_process": one_process,
                    }.items(),
                ),
                sim,
                RegisterEventHandler(OnProcessExit(target_action=sim, on_exit=[EmitEvent(event=Shutdown())])),
            ]
        ),
        tmp_path,
    )


def _logged(caplog, capsys):
    """What launch logged: to the logging handlers, or to stdout the first time it configures itself."""
    return caplog.text + capsys.readouterr().out


@pytest.mark.parametrize(
    "name, argument",
    [
        ("sim.launch.py", {"realtime_factor": "fast"}),
        ("sim.launch.py", {"episodes": "abc"}),
        ("sim.launch.py", {"episodes": "0"}),
        ("sim.launch.py", {"pace": "slow"}),
        ("sim.launch.py", {"fault": "no_such_fault"}),
        ("sim.launch.py", {"use_sim_time": "maybe"}),
        ("sim.launch.py", {"params_file": "/no/such/nodes.yaml"}),
        ("monitor.launch.py", {"control_rate_hz": "-5"}),
        ("monitor.launch.py", {"one_process": "2"}),
        ("monitor.launch.py", {"specs": "/no/such/specs.yaml"}),
    ],
)
def test_a_bad_launch_argument_fails_before_any_node_starts(name, argument, caplog, capsys):
    """`realtime_factor:=fast` left monitor_node and estimator_node running as orphans, and exit code 0."""
    _require_launch()
    code, started = _launch(_include(name, {"namespace": "l" + uuid.uuid4().hex[:8], **argument}))
    assert code == 1 and started == []
    ((key, value),) = argument.items()
    logged = _logged(caplog, capsys)
    assert "Caught exception in launch" in logged and (key in logged or value in logged)


def test_a_node_that_exits_with_an_error_fails_the_launch(tmp_path, caplog, capsys):
    """A monitor that cannot start (its events log is a folder) exits 2; the launch ends with 1 and says so."""
    _require_launch()
    code, started = _launch(
        _include(
            "monitor.launch.py",
            {"namespace": "l" + uuid.uuid4().hex[:8], "events_log": str(tmp_path), "one_process": "false"},
        )
    )
    assert code == 1 and started
    logged = _logged(caplog, capsys)
    assert "monitor_node" in logged and "exited with code 2" in logged
