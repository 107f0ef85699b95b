"""What a ROS user expects of the package (issue 16, point 9): executables answer --help without starting,
alerts follows remapping arguments, event values read as plain text in rqt/Foxglove, and the suite starts
where launch_testing's pytest plugins are installed."""

from __future__ import annotations

import configparser
import importlib
import json
import re
import shlex
import uuid
from pathlib import Path

import pytest

from safety_monitor.enums import EventKind
from safety_monitor.errors import SourceError
from safety_monitor.io import messages as m
from safety_monitor.monitor.events import Event

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_PLUGINS = ("launch_testing", "launch_ros", "launch_pytest")  # pytest11 entry points of ros2/launch(_ros)


@pytest.mark.parametrize(
    "module, program",
    [
        ("sim_node", "sim_node"),
        ("estimator_node", "estimator_node"),
        ("monitor_node", "monitor_node"),
        ("monitor_stack", "monitor_stack"),
    ],
)
def test_every_node_executable_answers_help_without_starting(module, program, capsys, monkeypatch):
    pytest.importorskip("rclpy")
    import rclpy

    monkeypatch.setattr(rclpy, "init", lambda *a, **k: pytest.fail("--help started rclpy"))
    main = importlib.import_module(f"safety_monitor.nodes.{module}").main
    assert main([program, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: ros2 run safety_monitor {program} [--ros-args")
    assert main([program, "--bogus", "--ros-args", "-p", "x:=1"]) == 2  # only ROS arguments are a node's
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_alerts_answers_help_and_follows_a_namespace_remap(capsys):
    pytest.importorskip("rclpy")
    from safety_monitor.nodes.alerts import NO_MONITOR, main

    with pytest.raises(SystemExit) as done:
        main(["alerts", "--help"])
    assert done.value.code == 0 and "usage: alerts" in capsys.readouterr().out
    ns = "r" + uuid.uuid4().hex[:8]
    assert main(["alerts", "--once", "--timeout", "0.3", "--ros-args", "-r", f"__ns:=/{ns}"]) == NO_MONITOR
    assert f"no monitor heard on /{ns}/safety_monitor/heartbeat" in capsys.readouterr().err


def test_event_values_are_plain_text_with_the_record_under_json():
    types = m.rosbags_types()
    opened = {
        **Event(EventKind.OPENED, "no_excess_wrench", "collision_contact", 120, 0.24, 3).to_json(),
        "counterexample": {"frames": [118, 120], "explanation": "x", "formula": "G(!excess_wrench)", "values": {}},
        "sync": True,
    }
    (status,) = m.events_msg(types, [opened], 0.24).status
    values = {kv.key: kv.value for kv in status.values}
    assert (status.name, status.message) == ("no_excess_wrench", "opened")
    assert values["category"] == "collision_contact" and values["frame"] == "120" and values["t"] == "0.24"
    assert values["episode"] == "3" and values["duration"] == "" and values["sync"] == "true"  # null, bool
    assert "counterexample" not in values and "property" not in values  # nested or in the status: record only
    assert json.loads(values["json"]) == opened
    assert m.decode_events(m.events_msg(types, [opened], 0.24)) == [opened]


@pytest.mark.parametrize(
    "record, why",
    [
        ({"property": "p", "kind": "opened", "rollout": []}, "'rollout' is [], not a whole number or null"),
        ({"property": "p", "kind": "opened", "objects": "mug"}, "'objects' is 'mug', not a list of names"),
        ({"property": "p", "kind": "opened", "counterexample": {"frames": 3}}, "not a counterexample"),
    ],
)
def test_an_event_record_the_monitor_never_writes_is_a_source_error(record, why):
    """As an event log's line is (`alerts --log`): the console matched alerts by these fields and showed what they
    were about, and crashed on an unhashable rollout or a counterexample of another shape."""
    types = m.rosbags_types()
    with pytest.raises(SourceError, match=re.escape(why)):
        m.decode_events(m.events_msg(types, [record], 0.0))


def test_an_event_nested_past_the_stack_is_a_source_error():
    """json.loads raises RecursionError, no JSONDecodeError, for 100,000 nested brackets."""
    types = m.rosbags_types()
    msg = m.events_msg(types, [{"property": "p", "kind": "opened"}], 0.0)
    msg.status[0].values[0].value = "[" * 100_000
    with pytest.raises(SourceError, match="'json' is not JSON"):
        m.decode_events(msg)


def test_events_recorded_before_the_json_key_still_decode():
    types = m.rosbags_types()
    old = types.DiagnosticStatus(
        level=types.DiagnosticStatus.OK,
        name="p",
        message="recovered",
        hardware_id="h",
        values=[types.KeyValue(key="category", value='"grasp_stability"'), types.KeyValue(key="frame", value="7")],
    )
    msg = types.DiagnosticArray(header=m.header(types, 0.0), status=[old])
    assert m.decode_events(msg) == [{"property": "p", "kind": "recovered", "category": "grasp_stability", "frame": 7}]


def test_the_launch_testing_pytest_plugins_are_disabled(pytestconfig):
    """Where launch_testing is installed (every ROS 2 install) its plugin breaks the pinned pytest at start."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    addopts = shlex.split(cfg["tool:pytest"]["addopts"])
    assert {f"no:{name}" for name in LAUNCH_PLUGINS} <= set(addopts)
    for name in LAUNCH_PLUGINS:
        assert pytestconfig.pluginmanager.is_blocked(name)


def test_colcon_finds_the_test_dependencies():
    """`colcon test` runs pytest when a `test` extra names it (setup.py's tests_require is gone from
    setuptools and warned on every build); package.xml declares the same for rosdep."""
    setup = (ROOT / "setup.py").read_text()
    assert "tests_require=" not in setup and 'extras_require={"test": ["pytest"' in setup
    assert "<test_depend>python3-pytest</test_depend>" in (ROOT / "package.xml").read_text()


def test_use_sim_time_is_refused_at_run_time(tmp_path):
    """`ros2 param set /ns/monitor_node use_sim_time false` was accepted: rclpy switched the watchdogs' clock
    from sim to system time under a running monitor, which read the jump of decades as 'no advancing
    predicates' and stepped blind frames into the trace. It is read-only now, with a description."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.parameter import Parameter

    from safety_monitor.nodes.monitor_stack import build_stack

    context = rclpy.Context()
    rclpy.init(context=context)
    nodes: list = []
    overrides = [Parameter("use_sim_time", value=True), Parameter("events_log", value=str(tmp_path / "e.jsonl"))]
    try:
        build_stack(nodes, context=context, namespace="/c" + uuid.uuid4().hex[:8], parameter_overrides=overrides)
        assert [n.get_name() for n in nodes] == ["monitor_node", "estimator_node"]
        for node in nodes:
            (result,) = node.set_parameters([Parameter("use_sim_time", value=False)])
            assert not result.successful and "read-only" in result.reason
            assert node.get_clock().ros_time_is_active
            assert "fixed at start-up" in node.describe_parameter("use_sim_time").description
    finally:
        for node in reversed(nodes):
            node.destroy_node()
        context.try_shutdown()


def test_monitor_stack_refuses_one_name_for_its_two_nodes(tmp_path):
    """`ros2 run safety_monitor monitor_stack --ros-args -r __node:=arm_monitor` named both nodes
    arm_monitor: one rosout publisher, colliding parameter services. It is one error line now, naming the
    per-node remaps, which work."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.parameter import Parameter

    from safety_monitor.errors import SafetyMonitorError
    from safety_monitor.nodes.monitor_stack import build_stack

    overrides = [Parameter("events_log", value=str(tmp_path / "e.jsonl"))]
    for remaps, names in [
        (["__node:=arm"], None),
        (
            ["monitor_node:__node:=arm_monitor", "estimator_node:__node:=arm_estimator"],
            ["arm_monitor", "arm_estimator"],
        ),
    ]:
        context = rclpy.Context()
        rclpy.init(args=["--ros-args", *(a for r in remaps for a in ("-r", r))], context=context)
        nodes: list = []
        try:
            if names is None:
                with pytest.raises(SafetyMonitorError, match="monitor_node:__node:=NAME"):
                    build_stack(nodes, context=context, parameter_overrides=overrides)
            else:
                build_stack(nodes, context=context, parameter_overrides=overrides)
                assert [n.get_name() for n in nodes] == names
        finally:
            for node in reversed(nodes):
                node.destroy_node()
            context.try_shutdown()
