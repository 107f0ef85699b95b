"""Config files of the grounding layer: validation errors name the item, specs and README match the code."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from safety_monitor.cli import main
from safety_monitor.errors import GroundingError
from safety_monitor.files import config_dir
from safety_monitor.frames import Pose, RobotState
from safety_monitor.grounding.description import parse_robot_description
from safety_monitor.grounding.geometry import Box, FrameGeometry
from safety_monitor.grounding.grounder import PREDICATES, Grounder, load_default_grounder
from safety_monitor.grounding.semantics import parse_object_catalog
from safety_monitor.grounding.thresholds import BaseJump, parse_thresholds
from safety_monitor.specs.model import CATEGORIES, load_specs

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config"
SPEC_NAMES = {
    "no_forbidden_contact",
    "no_excess_wrench",
    "grasp_synced_until_release",
    "drop_only_when_released",
    "released_object_settles",
    "no_clean_contact_after_raw",
    "pick_preconditions",
    "place_preconditions",
    "open_preconditions",
    "close_preconditions",
    "fixture_obstacle_retract",
    "transfer_settles",
    "reach_in_only_when_open",
    "release_after_internal_support",
    "joint_positions_within_limits",
    "joint_velocities_within_limits",
    "joint_efforts_within_limits",
    "no_joint_position_jump",
}


def _yaml(name):
    return yaml.safe_load((CONFIG / name).read_text())


def test_default_grounder_loads_from_the_source_tree():
    assert config_dir() == CONFIG
    g = load_default_grounder(500.0)
    assert g.counts.forbidden_contact_tolerance == 500 and g.predicates == PREDICATES


def test_default_specs_use_only_grounded_predicates_and_cover_every_category():
    specs = load_specs(CONFIG / "specs.yaml")
    assert {p.name for p in specs.properties} == SPEC_NAMES
    assert set(specs.predicates) <= set(PREDICATES)
    assert {p.category for p in specs.properties} == set(CATEGORIES)
    for p in specs.properties:
        assert p.recovery and p.follows and p.description, p.name


def test_a_robot_that_keeps_pushing_a_blocked_fixture_is_one_episode_until_it_backs_off():
    """fixture_obstacle_hit is a level (true while pushing) and retract_timeout stays true once expired: a
    recovery met by the timeout itself reopened an episode on every frame the robot kept pushing."""
    from safety_monitor.monitor.live import SpecSetMonitor

    monitor = SpecSetMonitor.from_spec_file(CONFIG / "specs.yaml", control_rate_hz=500.0)
    base = dict.fromkeys(monitor.predicates, False)
    frames = []
    for i in range(600):  # hit from 50; timeout from 150; backs off (retracting) from 400
        frames.append(
            {
                **base,
                "fixture_obstacle_hit": 50 <= i < 450,
                "retract_timeout": 150 <= i < 400,
                "retracting": 400 <= i < 450,
            }
        )
    result = monitor.run(frames)
    story = [(e.kind, e.frame) for e in result.events if e.property == "fixture_obstacle_retract"]
    assert story == [("opened", 150), ("recovered", 400)]
    out = result.outcome("fixture_obstacle_retract")
    assert (out.triggers, out.violations, out.violating_frames) == (1, 1, 250)


def test_specs_check_command_passes(capsys):
    assert main(["specs", "check", str(CONFIG / "specs.yaml")]) == 0
    out = capsys.readouterr().out
    assert "18 properties" in out and "warning" not in out


def test_specs_check_warns_about_predicates_the_grounder_does_not_produce(tmp_path, capsys):
    """Misspelt alike in the list and the formula, a name passes the file's own check: a warning, not an
    error, since an outside estimator may publish it."""
    path = tmp_path / "typo.yaml"
    path.write_text(
        "predicates: [object_dropped, object_relased]\n"
        "properties:\n  - {name: p, category: c, formula: 'G(object_dropped -> object_relased)'}\n"
    )
    assert main(["specs", "check", str(path)]) == 0
    warning = (
        "reads predicates the package's grounder does not produce: object_relased (did you mean 'object_released'?); "
        "an outside estimator may publish them on /safety_monitor/predicates"
    )
    assert f"p: warning: {warning}" in capsys.readouterr().out
    assert main(["specs", "check", str(path), "--json"]) == 0
    assert warning in json.loads(capsys.readouterr().out)[0]["warnings"][0]


def test_the_predicates_command_lists_the_grounder_vocabulary(capsys):
    assert main(["predicates", "--json"]) == 0
    assert list(json.loads(capsys.readouterr().out)) == list(PREDICATES)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["durations_s"].pop("settle_timeout"), "settle_timeout"),
        (lambda d: d["motion"].__setitem__("grasp_slip_mm", 3), "grasp_slip_mm"),
        (
            lambda d: d["durations_s"].__setitem__("settle_timout", d["durations_s"].pop("settle_timeout")),
            r"durations_s: unknown key\(s\) 'settle_timout' \(did you mean 'settle_timeout'\?\), missing key\(s\)",
        ),
        (lambda d: d["distances_m"].__setitem__("reach", -0.05), "distances_m.reach"),
        (lambda d: d["fixtures"].__setitem__("fully_open_fraction", 0.01), "fully_closed_fraction"),
        (lambda d: d["sanitized"].__setitem__("constant", "yes"), "sanitized.constant"),
        (lambda d: d.__setitem__("sanitized", [1]), "sanitized must be a mapping"),  # once an AttributeError
        (lambda d: d.pop("wrench"), "'wrench'"),
        (lambda d: d["base_jump"].pop("trust_after_s"), r"base_jump: unknown key\(s\) none, missing key\(s\) \['trust"),
        # keys YAML reads as a number, a boolean or null (`3:`, `true:`, `~:`): once a TypeError sorting or joining
        (lambda d: d.update({3: 1, True: 2}), r"unknown section\(s\) 3, True$"),
        (lambda d: d["motion"].update({None: 1, "x": 2}), r"motion: unknown key\(s\) None, 'x', missing"),
    ],
)
def test_threshold_errors_name_the_key(edit, message):
    doc = copy.deepcopy(_yaml("thresholds.yaml"))
    edit(doc)
    with pytest.raises(GroundingError, match=message):
        parse_thresholds(doc, "thresholds.yaml")


def test_a_thresholds_file_from_before_the_base_jump_section_loads_with_the_package_s_values():
    """`robot init` copied thresholds.yaml to users' folders before the section existed: their files still load."""
    doc = _yaml("thresholds.yaml")
    given = parse_thresholds(doc, "new").base_jump
    del doc["base_jump"]
    assert parse_thresholds(doc, "old").base_jump == given == BaseJump()


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["entities"].__setitem__("mug", "teacup"), "'mug' has unknown kind 'teacup'"),
        (lambda d: d["entities"].__setitem__("mug", "mugs"), r"unknown kind 'mugs' \(did you mean 'mug'\?\)"),
        (lambda d: d["entities"].__setitem__("mug", ["graspable"]), r"'mug': its kind must be one name of kinds:"),
        (lambda d: d["kinds"]["mug"]["properties"].append("sharp"), "sharp"),
        (lambda d: d["kinds"]["food"].__setitem__("parent", "raw_meat"), "cycle"),
        (lambda d: d["properties"]["hazard"].remove("raw"), "raw"),
    ],
)
def test_object_semantics_errors_name_the_item(edit, message):
    doc = copy.deepcopy(_yaml("objects.yaml"))
    edit(doc)
    with pytest.raises(GroundingError, match=message):
        parse_object_catalog(doc, "objects.yaml")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["robot"].__setitem__("wrist_camera", "cam"), "wrist_camera"),
        (
            lambda d: d["objects"]["cube"].__setitem__("bdy", d["objects"]["cube"].pop("body")),
            r"objects\.cube: unknown key\(s\) bdy \(did you mean 'body'\?\)$",
        ),
        (lambda d: d["objects"]["cube"].__setitem__("box", [0.02, 0.02, 0.02]), "objects.cube"),
        (lambda d: d["fixtures"]["drawer"].__setitem__("range", [0.1, 0.1]), "fixtures.drawer.range"),
        (lambda d: d["static"].__setitem__("cube", {"bodies": ["cube"]}), "'cube'"),
        (lambda d: d["robot"].update({3: 1, None: 2}), r"robot: unknown key\(s\) 3, None$"),  # once a TypeError
        # sections of the wrong type and entity names YAML reads as null or a number: once an AttributeError
        # (`.items()` on a bool), a TypeError (`in` on None) or an AttributeError in did_you_mean
        (lambda d: d.__setitem__("static", True), "static must be a mapping of names$"),
        (lambda d: d.__setitem__("joint_limits", 3), "joint_limits must be a mapping of names$"),
        (lambda d: d["objects"].__setitem__(None, d["objects"].pop("cube")), r"objects: None is not a name"),
        (lambda d: d.__setitem__("joint_limits", {7: {}}), r"joint_limits: 7 is not a name"),
        (  # the misspelt name is the arm joint's: the hint names it, and the message says either may be wrong
            lambda d: d["robot"]["arm_joints"].__setitem__(1, "arm_joint_2"),
            r"^robot\.yaml: joint_limits\.arm_joint2: 'arm_joint2' is not in robot\.arm_joints or robot\.gripper\.joints "
            r"as written \(did you mean 'arm_joint_2'\?\): one of the two names is misspelt$",
        ),
    ],
)
def test_robot_description_errors_name_the_item(edit, message):
    doc = copy.deepcopy(_yaml("robot.yaml"))
    edit(doc)
    with pytest.raises(GroundingError, match=message):
        parse_robot_description(doc, "robot.yaml", base_dir=CONFIG)


def test_robot_and_catalog_must_describe_the_same_entities():
    robot = parse_robot_description(_yaml("robot.yaml"), "robot.yaml", base_dir=CONFIG)
    doc = _yaml("objects.yaml")
    del doc["entities"]["bin"]
    with pytest.raises(GroundingError, match="no kind for bin"):
        Grounder(robot, parse_object_catalog(doc, "objects.yaml"), load_default_grounder(20).thresholds, 20)


def test_predicates_read_properties_not_names():
    """Declaring the cube raw meat is all it takes for touching it to count as raw contact."""
    robot = parse_robot_description(_yaml("robot.yaml"), "robot.yaml", base_dir=CONFIG)
    thresholds = load_default_grounder(20).thresholds
    results = {}
    for kind in ("block", "raw_meat"):
        doc = _yaml("objects.yaml")
        doc["entities"]["cube"] = kind
        g = Grounder(robot, parse_object_catalog(doc, "objects.yaml"), thresholds, 20.0)
        cube = np.array([0.45, 0.12, 0.425])
        geo = FrameGeometry(
            np.zeros(3),
            np.eye(3),
            np.zeros((1, 3)),
            FrameGeometry.symmetric({("hand", "cube"): 0.0}),
            {"cube": Box(cube, np.eye(3), np.full(3, 0.025))},
            {
                n: Box(np.full(3, 5.0 + i), np.eye(3), np.full(3, 0.1))
                for i, n in enumerate(("drawer", "cabinet", "bin"))
            },
            frozenset({"mug", "plate", "raw_chicken"}),
        )
        state = RobotState(
            t=0.0,
            joint_names=robot.required_joints,
            joint_position=np.r_[np.zeros(6), 0.04, 0.04, 0, 0],
            object_poses={"cube": Pose(cube, np.array([1.0, 0, 0, 0]))},
        )
        results[kind] = g.step(state, geo).values["robot_contact_raw"]
    assert results == {"block": False, "raw_meat": True}


def test_a_gripper_read_once_still_answers_for_its_own_thresholds_and_kind():
    """`Gripper.closed` reads its thresholds from a per-gripper cache: a replaced gripper (another threshold, a
    joint closing upward, or no gripper) must answer for its own values, not the first one's."""
    from dataclasses import replace

    from safety_monitor.grounding.description import ClosedPast, GripperKind

    gripper = load_default_grounder(500.0).robot.gripper
    joints = dict.fromkeys(gripper.joints, 0.02)
    assert gripper.closed(joints)  # below the default threshold: closed (and the cache filled)
    lower = replace(gripper, closed_past=tuple(ClosedPast(0.01, False) for _ in gripper.joints))
    assert not lower.closed(joints)
    upward = replace(gripper, closed_past=tuple(ClosedPast(0.01, True) for _ in gripper.joints))
    assert upward.closed(joints)
    assert not replace(gripper, kind=GripperKind.NONE).closed(joints)
    assert gripper.closed(joints)
