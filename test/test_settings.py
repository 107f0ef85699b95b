"""One settings schema (safety_monitor.settings): the package's parameter file gives every driver the defaults
the code has, node sections override the shared one, bad values are one line naming the setting, and
replay --params scores a bag with a site's limits as the live stack with that file would."""

import dataclasses
import re
from pathlib import Path

import pytest

from safety_monitor.cli import main
from safety_monitor.files import config_dir
from safety_monitor.io.bag import BagWriter
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.settings import (
    EstimatorSettings,
    MonitorSettings,
    NodeSettings,
    SettingsError,
    SimSettings,
    Topics,
    build,
    load_settings,
)
from safety_monitor.sim.runner import run_episode

RATE = 500.0


def test_the_package_parameter_file_holds_exactly_the_defaults_of_the_schema():
    """config/nodes.yaml sets every setting to the value the code defaults to: the file documents the
    defaults, and a driver that reads no file applies the same rules as one that does."""
    assert load_settings(config_dir() / "nodes.yaml") == NodeSettings()
    text = (config_dir() / "nodes.yaml").read_text()
    for cls in (EstimatorSettings, MonitorSettings, SimSettings, Topics):
        for f in dataclasses.fields(cls):
            assert re.search(rf"^\s+{f.name}:", text, re.M), f"config/nodes.yaml does not list {f.name}"


@pytest.mark.parametrize(
    "program, cls",
    [("sim_node", SimSettings), ("estimator_node", EstimatorSettings), ("monitor_node", MonitorSettings)],
)
def test_the_executables_table_of_the_ros_guide_lists_each_node_s_parameters(program, cls):
    """docs/ros.md's table of executables is where a ROS user compares `ros2 param list`: it lacked
    restart_backwards_s, topics_file and robot_description_topic."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "ros.md").read_text()
    (row,) = [line for line in text.splitlines() if line.startswith(f"| `{program}` |")]
    listed = set(re.findall(r"`([a-z_]+)`", row.split("|")[3]))
    assert listed == {f.name for f in dataclasses.fields(cls)}


def test_a_ros2_param_dump_of_the_nodes_is_a_parameter_file(tmp_path):
    """`ros2 param dump /arm1/estimator_node > mine.yaml`, edit, `params_file:=mine.yaml`: the dump holds
    rclpy's own parameters too, and the launch refused it ('unknown parameter
    start_type_description_service')."""
    path = tmp_path / "dump.yaml"
    path.write_text(
        "/arm1/estimator_node:\n  ros__parameters:\n    control_rate_hz: 250.0\n"
        "    start_type_description_service: true\n    topics:\n      joint_states: js\n"
        "    use_sim_time: false\n"
    )
    settings = load_settings(path)
    assert settings.estimator.control_rate_hz == 250.0 and settings.topics.joint_states == "js"


def test_node_sections_override_the_shared_one():
    doc = (
        "/**:\n  ros__parameters:\n    wrench_frozen_s: 1.5\n    history_frames: 100\n    diagnostics_period_s: 2\n"
        "    topics:\n      events: ev\n"
        "/robot1/estimator_node:\n  ros__parameters:\n    wrench_frozen_s: 0.25\n"
    )
    s = _load(doc)
    assert s.estimator.wrench_frozen_s == 0.25 and s.monitor.history_frames == 100
    assert s.estimator.diagnostics_period_s == s.monitor.diagnostics_period_s == 2.0  # shared: both nodes
    assert isinstance(s.estimator.diagnostics_period_s, float) and s.topics.events == "ev"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("/**:\n  ros__parameters:\n    history_frames: 1.5\n", "history_frames must be a whole number, got 1.5"),
        ("/**:\n  ros__parameters:\n    wrench_stale_s: -1\n", "wrench_stale_s must be >= 0, got -1"),
        ("/**:\n  ros__parameters:\n    predicates_timeout_s: 0\n", "predicates_timeout_s must be > 0, got 0"),
        ("/**:\n  ros__parameters:\n    predicates_timeout_s: .nan\n", "predicates_timeout_s must be finite"),
        ("/**:\n  ros__parameters:\n    sync_before_publish: 1\n", "sync_before_publish must be true or false, got 1"),
        ("/**:\n  ros__parameters:\n    pace: fast\n", "pace must be one of realtime, lockstep, got 'fast'"),
        ("/**:\n  ros__parameters:\n    predicate_timeout_s: 1.0\n", "did you mean 'predicates_timeout_s'?"),
        ("/**:\n  ros__parameters:\n    topics:\n      event: x\n", "did you mean 'events'?"),
        ("/**: 3\n", "section '/**' has no ros__parameters mapping"),
        ("[1, 2]\n", "expected a ROS 2 parameter file"),
        (  # a spec file given as --params: every default would have applied, unsaid
            "predicates: [a]\nproperties: []\n",
            "no section for /**, estimator_node, monitor_node, sim_node (it has: predicates, properties); "
            "not the nodes' parameter file",
        ),
        ("robot_state_publisher:\n  ros__parameters: {publish_frequency: 50.0}\n", "(it has: robot_state_publisher)"),
        ("{}\n", "(it has: nothing)"),
        ("a: &x [1]\nb: *x\n", "YAML aliases are not allowed"),
        ("/**:\n  ros__parameters: {\n", "not valid YAML"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(body, problem):
    with pytest.raises(SettingsError, match=re.escape(problem)) as info:
        _load(body)
    assert "\n" not in str(info.value)


def test_a_file_that_is_not_text_or_too_large_is_refused(tmp_path):
    path = tmp_path / "nodes.yaml"
    path.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(SettingsError, match="not UTF-8 text"):
        load_settings(path)
    path.write_bytes(b"#" * (2 << 20))
    with pytest.raises(SettingsError, match="larger than"):
        load_settings(path)
    with pytest.raises(SettingsError, match="missing.yaml: cannot read parameter file: No such file"):
        load_settings(tmp_path / "missing.yaml")


def test_build_checks_what_the_ros_parameters_give_too():
    """The nodes build their settings from ROS parameters and validate them the same way."""
    assert build(MonitorSettings, {"history_frames": 7}, "x").history_frames == 7
    with pytest.raises(SettingsError, match="x: episodes must be >= 1, got 0"):
        build(SimSettings, {"episodes": 0}, "x")


def test_a_sites_wrench_frozen_limit_changes_what_replay_calls_stale(tmp_path, capsys):
    """A wrench repeating one reading for 1 s: fresh under the 2 s default, stale with the site's 0.5 s."""
    state = next(run_episode("pick_and_place_cube"))
    bag = tmp_path / "bag"
    with BagWriter(bag) as w:
        for k in range(600):
            t = 100.0 + k / RATE
            w.write_wrench("/wrist_wrench", t, state.wrench)
            w.write_joint_state("/joint_states", t, list(state.joint_names), state.joint_position + k * 1e-7, log_t=t)
    default = score_bag(bag, ReplayConfig(rate_hz=RATE))
    params = tmp_path / "nodes.yaml"
    params.write_text("/**:\n  ros__parameters:\n    wrench_frozen_s: 0.5\n")
    site = score_bag(bag, ReplayConfig(rate_hz=RATE).with_settings(load_settings(params)))
    assert default.ok and site.ok
    assert default.stale_by_stream.get("wrench", 0) == 0 and site.stale_by_stream["wrench"] > 200
    assert main(["replay", str(bag), "--quiet", "--rate", "500", "--params", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml" in capsys.readouterr().err


def _load(text: str) -> NodeSettings:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "nodes.yaml"
        path.write_text(text)
        return load_settings(path)
