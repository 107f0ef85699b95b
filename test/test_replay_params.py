"""replay --params: the live nodes' parameter file sets replay's input limits, watchdog and history, so a
bag is scored as the live stack that recorded it was configured."""
import dataclasses
import re

import pytest

from safety_monitor.cli import main
from safety_monitor.errors import SourceError
from safety_monitor.grounding.grounder import config_dir
from safety_monitor.replay.node_params import REPLAY_PARAMS, load_node_params
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.sim.runner import run_episode
from safety_monitor.sources.bag import BagWriter

RATE = 500.0


def test_the_package_parameter_file_gives_replay_its_own_defaults():
    """Replay without --params reads config/nodes.yaml: its values must be the defaults replay has in code,
    or a replay would quietly differ from the live stack the same file configures."""
    params = load_node_params(config_dir() / "nodes.yaml")
    assert set(params) == set(REPLAY_PARAMS)
    assert ReplayConfig().with_node_params(params) == ReplayConfig()


def test_the_live_nodes_defaults_are_replays_defaults():
    pytest.importorskip("rclpy")
    from safety_monitor.nodes.estimator_node import EstimatorParams
    from safety_monitor.nodes.monitor_node import MonitorParams

    live = {f.name: f.default for cls in (EstimatorParams, MonitorParams) for f in dataclasses.fields(cls)
            if f.name in REPLAY_PARAMS}
    assert ReplayConfig().with_node_params(live) == ReplayConfig()


def test_node_sections_override_the_shared_one_and_bad_values_are_named(tmp_path):
    path = tmp_path / "nodes.yaml"
    path.write_text("/**:\n  ros__parameters:\n    wrench_frozen_s: 1.5\n    history_frames: 100\n    task: x\n"
                    "/robot1/estimator_node:\n  ros__parameters:\n    wrench_frozen_s: 0.25\n")
    assert load_node_params(path) == {"wrench_frozen_s": 0.25, "history_frames": 100}
    for body, problem in (("/**:\n  ros__parameters:\n    history_frames: 1.5\n", "history_frames must be a int"),
                          ("/**:\n  ros__parameters:\n    wrench_stale_s: -1\n", "wrench_stale_s must be >= 0"),
                          ("/**:\n  ros__parameters:\n    predicates_timeout_s: 0\n", "must be > 0"),
                          ("/**: 3\n", "section '/**' has no ros__parameters mapping"),
                          ("[1, 2]\n", "expected a ROS 2 parameter file")):
        path.write_text(body)
        with pytest.raises(SourceError, match=re.escape(problem)):
            load_node_params(path)


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
    site = score_bag(bag, ReplayConfig(rate_hz=RATE).with_node_params(load_node_params(params)))
    assert default.ok and site.ok
    assert default.stale_by_stream.get("wrench", 0) == 0 and site.stale_by_stream["wrench"] > 200
    assert main(["replay", str(bag), "--quiet", "--rate", "500", "--params", str(tmp_path / "none.yaml")]) == 2
    assert "--params" in capsys.readouterr().err
