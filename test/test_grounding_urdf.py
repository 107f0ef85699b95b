"""URDF robots unlike the workcell: a 7-joint arm with a two-finger gripper and package:// meshes, an arm with
no gripper, an arm with one gripper joint and mimic fingers. Each loads, compiles, grasps (or cannot), and its
joints are watched against the URDF's own limits."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml
from urdf_robots import LINK_LENGTH, OBJECTS, PACKAGE, arm_urdf, box_stl, description, write_robot

from safety_monitor.enums import IssueKind
from safety_monitor.errors import GroundingError
from safety_monitor.frames import Pose, RobotState
from safety_monitor.grounding.applicability import NotApplicable, applicability
from safety_monitor.grounding.description import GripperKind, load_robot_description, parse_robot_description
from safety_monitor.grounding.grounder import Grounder, load_default_grounder
from safety_monitor.grounding.joint_limits import JumpDetector, jump_issue
from safety_monitor.grounding.semantics import load_object_catalog, parse_object_catalog
from safety_monitor.grounding.thresholds import load_thresholds
from safety_monitor.grounding.twin import model_joint_limits, twin_for
from safety_monitor.grounding.urdf import JointLimit
from safety_monitor.specs.model import load_specs

CONFIG = Path(__file__).resolve().parents[1] / "config"
RATE = 50.0
THRESHOLDS = load_thresholds(CONFIG / "thresholds.yaml")
ROBOTS = {  # name: (arm joints, gripper kind, package:// meshes, closed and open gripper joint positions)
    "seven_joint_two_fingers": (7, "two_fingers", True, 0.02, 0.04),
    "no_gripper": (6, "none", False, None, None),
    "one_joint_mimic": (6, "one_joint", False, 0.02, 0.0),
}
IDENTITY = np.array([1.0, 0, 0, 0])


def _grounder(tmp_path: Path, name: str) -> Grounder:
    n, kind, mesh, *_ = ROBOTS[name]
    robot = load_robot_description(write_robot(tmp_path / name, n, kind, mesh))
    return Grounder(robot, parse_object_catalog(OBJECTS, "objects"), THRESHOLDS, RATE, twin=twin_for(robot, THRESHOLDS))


class Frames:
    """RobotStates for one robot: arm joints, gripper joint(s), the drawer, the cube."""

    def __init__(self, g: Grounder):
        self.g, self.k = g, 0
        self.arm = dict.fromkeys(g.robot.arm_joints, 0.0)
        self.gripper = dict.fromkeys(g.robot.gripper.joints, 0.04)
        self.velocity: float | None = 0.0

    def state(self, cube: np.ndarray | None) -> RobotState:
        names = (*self.arm, *self.gripper, "drawer_slide")
        q = np.array([*self.arm.values(), *self.gripper.values(), 0.0])
        vel = None if self.velocity is None else np.full(len(names), self.velocity)
        poses = {} if cube is None else {"cube": Pose(cube, IDENTITY)}
        self.k += 1
        return RobotState(t=self.k / RATE, joint_names=names, joint_position=q, joint_velocity=vel, object_poses=poses)

    def step(self, cube: np.ndarray | None = None):
        return self.g.step(self.state(cube))


@pytest.mark.parametrize("name", ROBOTS)
def test_each_robot_loads_compiles_and_requires_each_of_its_joints_once(tmp_path, name):
    n, kind, mesh, *_ = ROBOTS[name]
    g = _grounder(tmp_path, name)
    r = g.robot
    assert r.gripper.kind is GripperKind(kind)
    assert len(r.arm_joints) == n
    assert r.required_joints == (*r.arm_joints, *r.gripper.joints, "drawer_slide")
    m = g.twin.model
    assert m.site("grasp_point").bodyid == m.body(r.ee_body).id
    assert (m.geom_type == 7).sum() == (n + 1 if mesh else 0)  # mjGEOM_MESH: base and every link, from package://
    assert set(g.joint_limits) == set(r.robot_joints)
    assert g.joint_limits["joint1"] == JointLimit(-2.5, 2.5, 2.0, 80.0)


@pytest.mark.parametrize("name", ["seven_joint_two_fingers", "one_joint_mimic"])
def test_a_gripper_robot_grasps_and_drops_the_cube(tmp_path, name):
    *_, closed, opened = ROBOTS[name]
    g = _grounder(tmp_path, name)
    f = Frames(g)
    cube = f.g.twin.compute(f.state(None).joint_names, f.state(None).joint_position, {}).ee_position.copy()
    f.k = 0
    f.gripper = dict.fromkeys(f.gripper, closed)
    held = [f.step(cube) for _ in range(20)]
    gaps = g.twin.compute(f.state(None).joint_names, f.state(None).joint_position, {"cube": Pose(cube, IDENTITY)})
    assert gaps.gap("finger_left", "cube") == pytest.approx(0.0, abs=1e-6)  # a mimic finger moved with its leader
    assert gaps.gap("finger_right", "cube") == pytest.approx(0.0, abs=1e-6)
    assert held[0].values["object_grasped_raw"] and not held[0].values["object_grasped"]
    assert held[-1].values["object_grasped"]
    f.gripper = dict.fromkeys(f.gripper, opened)
    after = [f.step(cube) for _ in range(20)]
    drops = [i for i, fr in enumerate(after) if fr.values["object_dropped"]]
    assert len(drops) == 1 and after[drops[0]].values["object_released"]


def test_the_robot_without_a_gripper_grounds_but_gripper_properties_are_not_applicable(tmp_path):
    g = _grounder(tmp_path, "no_gripper")
    f = Frames(g)
    cube = g.twin.compute(f.state(None).joint_names, f.state(None).joint_position, {}).ee_position.copy()
    frames = [f.step(cube) for _ in range(20)]
    assert not any(fr.values["object_grasped_raw"] for fr in frames)
    assert not frames[-1].values["joint_position_out_of_limits"]
    assert frames[-1].unknown == {"excess_wrench", "joint_effort_out_of_limits"}  # no wrist sensor, no efforts
    verdicts = applicability(load_specs(CONFIG / "specs.yaml"), g)
    assert verdicts["drop_only_when_released"].reasons == dict.fromkeys(
        ["object_dropped", "object_grasped", "object_left_gripper", "object_released"], NotApplicable.NEEDS_GRIPPER
    )
    assert "needs a gripper" in verdicts["grasp_synced_until_release"].text()
    assert verdicts["no_forbidden_contact"].applicable and verdicts["no_joint_position_jump"].applicable
    assert verdicts["open_preconditions"].applicable  # a drawer is there, and opening it needs no grasp


def test_the_workcell_grounds_every_default_property():
    """robot.yaml gives the arm the velocity limits MJCF lacks, the servos' force ranges its effort limits:
    no default property is vacuous on the workcell."""
    grounder = load_default_grounder(RATE)
    verdicts = applicability(load_specs(CONFIG / "specs.yaml"), grounder)
    assert {name: v.text() for name, v in verdicts.items() if not v.applicable} == {}
    limits = grounder.joint_limits
    assert (limits["arm_joint1"].velocity, limits["arm_joint6"].velocity) == (4.0, 6.5)
    assert (limits["arm_joint1"].effort, limits["arm_joint6"].effort) == (150.0, 40.0)
    assert limits["arm_joint1"].upper == 2.9  # the MJCF's range, under the given velocity and effort


def test_an_mjcf_servos_force_range_is_its_joints_effort_limit():
    """Menagerie's servos limit force on the actuator, not the joint: the effort limit is the actuator's
    forcerange times its gear, summed over a joint's actuators, under the joint's own actuatorfrcrange."""
    joints = {  # joint: extra joint attributes
        "geared": "",
        "paired": "",
        "clamped": ' actuatorfrcrange="-30 30"',
        "unlimited_servo": ' actuatorfrcrange="-25 25"',
        "bare": "",
        "tendon_driven": "",
    }
    bodies = "".join(
        f'<body name="{j}_link"><joint name="{j}" axis="0 0 1"{extra}/><geom size="0.05"/>'
        for j, extra in joints.items()
    ) + "</body>" * len(joints)
    xml = f"""<mujoco><compiler autolimits="true"/><worldbody>{bodies}</worldbody>
      <tendon><fixed name="split"><joint joint="tendon_driven" coef="1"/></fixed></tendon>
      <actuator>
        <position joint="geared" gear="2" kp="10" forcerange="-50 40"/>
        <position joint="paired" kp="10" forcerange="-20 20"/>
        <velocity joint="paired" kv="1" forcerange="-5 5"/>
        <position joint="clamped" kp="10" forcerange="-150 150"/>
        <position joint="unlimited_servo" kp="10"/>
        <position tendon="split" kp="10" forcerange="-60 60"/>
      </actuator></mujoco>"""
    limits = model_joint_limits(mujoco.MjModel.from_xml_string(xml), [*joints, "missing"])
    assert {j: lim.effort for j, lim in limits.items()} == {
        "geared": 100.0,  # 50 N at the actuator, gear 2
        "paired": 25.0,
        "clamped": 30.0,  # the joint's own limit is the tighter
        "unlimited_servo": 25.0,
        "bare": None,
        "tendon_driven": None,  # a tendon spreads its force: no single joint's limit
    }


@pytest.mark.parametrize("name", ROBOTS)
def test_a_joint_limit_breach_and_an_encoder_jump_give_the_joint_predicates(tmp_path, name):
    f = Frames(_grounder(tmp_path, name))
    first = f.step()
    # no step yet: nothing jumped, decided (unknown, no_joint_position_jump would start every rollout blind)
    assert "joint_position_jump" not in first.unknown and not first.values["joint_position_jump"]
    assert not first.values["joint_position_out_of_limits"] and not first.values["joint_velocity_out_of_limits"]
    f.arm["joint1"] = 0.05  # 0.05 rad in 0.02 s: within 2 x 2.0 rad/s x 0.02 s
    assert not f.step().values["joint_position_jump"]
    f.arm["joint1"] = 2.54  # beyond 2.5, within its 1 % tolerance of the 5 rad range
    f.k += 100  # a second later: no jump
    assert not f.step().values["joint_position_out_of_limits"]
    f.arm["joint1"] = 2.6
    f.k += 100
    breach = f.step()
    assert breach.values["joint_position_out_of_limits"] and not breach.values["joint_position_jump"]
    f.arm["joint1"] = -2.4  # the encoder wrapped: 5 rad in one frame
    jump = f.step()
    assert jump.values["joint_position_jump"] and not jump.values["joint_position_out_of_limits"]
    assert not f.step().values["joint_position_jump"]
    f.velocity = 2.5
    assert f.step().values["joint_velocity_out_of_limits"]
    f.velocity = None
    assert "joint_velocity_out_of_limits" in f.step().unknown


def test_a_jump_is_also_an_input_issue_and_continuous_joints_wrap():
    limits = {"a": JointLimit(-3.0, 3.0, 1.0), "b": JointLimit(velocity=1.0, wraps=True), "c": JointLimit(-1.0, 1.0)}
    detector = JumpDetector(limits, 2.0)
    assert detector.step(("a", "b", "c"), np.array([0.0, 3.1, 0.0]), 4.1) is None  # nothing to step from
    jumps = detector.step(("c", "b", "a"), np.array([0.9, -3.1, 0.5]), 4.2)
    assert [j.joint for j in jumps] == ["a"]  # b wrapped by 0.08 rad; c has no velocity limit
    assert jumps[0].allowed == pytest.approx(0.2)
    issue = jump_issue(jumps, 4.2)
    assert issue.kind is IssueKind.JOINT_JUMP and issue.t == 4.2 and "a by 0.5" in issue.detail


def test_each_joint_is_judged_over_its_own_sample_period():
    """A joint on a slower topic (stamps of its own) steps once per its period; its step is judged over that."""
    detector = JumpDetector({"arm": JointLimit(velocity=1.0), "grip": JointLimit(velocity=0.1)}, 2.0)
    names = ("arm", "grip")
    detector.step(names, np.array([0.0, 0.0]), np.array([1.0, 1.0]))
    for k in range(1, 50):  # grip held at its last sample for 49 frames of 2 ms
        assert detector.step(names, np.array([0.001 * k, 0.0]), np.array([1.0 + 0.002 * k, 1.0])) == ()
    # its next sample, 0.1 s after the last, has moved 0.008 (0.08 m/s): four times the frame period allows
    assert detector.step(names, np.array([0.05, 0.008]), np.array([1.1, 1.1])) == ()
    (jump,) = detector.step(names, np.array([0.052, 0.05]), np.array([1.102, 1.102]))  # 0.042 in 2 ms
    assert jump.joint == "grip" and jump.allowed == pytest.approx(2 * 0.1 * 0.002)


def test_joints_that_do_not_wrap_are_judged_in_floats_as_the_array_path_judges_them():
    """The C kernel (no continuous joint) gives the array path's jumps, steps and allowances bit for
    bit: random steps near the limit, NaN positions, held stamps, one stamp for the frame, a joint missing."""
    limits = {"a": JointLimit(velocity=1.0), "b": JointLimit(velocity=0.5), "c": JointLimit(velocity=2.0)}
    floats, arrays = JumpDetector(limits, 2.0), JumpDetector(limits, 2.0)
    arrays._any_wraps = True  # the array path, with no joint marked as wrapping (np.where keeps every step)
    assert not floats._any_wraps
    rng = np.random.default_rng(5)
    t, position, seen = 1.0, np.zeros(3), 0
    for k in range(3000):
        t += 0.002
        position = position + rng.normal(0.0, 0.004, 3)
        if k % 97 == 5:
            position[1] = np.nan
        names = ("a", "b") if k % 211 == 7 else ("c", "a", "b")
        values = position[: len(names)]
        stamps = t if k % 13 == 0 else np.array([t, t - 0.002 * (k % 3 == 0), t])[: len(names)]
        got, want = floats.step(names, values, stamps), arrays.step(names, values, stamps)
        assert got == want, k
        seen += bool(got)
    assert seen > 100  # jumps were judged, not only their absence


def test_frames_may_carry_mimic_joints_and_a_one_joint_gripper_lists_it_once(tmp_path):
    g = _grounder(tmp_path, "one_joint_mimic")
    assert g.robot.mimic_joints == {"finger_right_joint"} and g.robot.gripper.joints == ("gripper_joint",)
    names = (*g.robot.required_joints, "finger_right_joint")
    g.step(RobotState(t=0.0, joint_names=names, joint_position=np.zeros(len(names))))


def test_a_urdf_robot_attached_into_an_mjcf_world_at_its_base_pose(tmp_path):
    (tmp_path / "world.xml").write_text(
        '<mujoco><worldbody><body name="pedestal" pos="2 0 0.1"><geom type="box" size="0.1 0.1 0.1"/></body>'
        "</worldbody></mujoco>"
    )
    path = write_robot(
        tmp_path, 7, "two_fingers", mjcf="world.xml", base_pose={"position": [2.0, 0.0, 0.2], "rpy": [0, 0, 0]}
    )
    robot = load_robot_description(path)
    twin = twin_for(robot, THRESHOLDS)
    geo = twin.compute(robot.required_joints, np.zeros(len(robot.required_joints)), {})
    np.testing.assert_allclose(geo.ee_position, [2.0, 0.0, 1.41], atol=1e-9)
    assert twin.model.body("pedestal").id > 0


def _write(tmp_path: Path, urdf: str, **edits) -> Path:
    (tmp_path / "robot.urdf").write_text(urdf)
    doc = description(7, "two_fingers")
    doc.update(edits)
    (tmp_path / "robot.yaml").write_text(yaml.safe_dump(doc))
    return tmp_path / "robot.yaml"


def test_a_urdf_syntax_error_names_file_and_line(tmp_path):
    text = arm_urdf(7, "two_fingers").replace('<link name="link3">', '<link name="link3"', 1)
    line = text.splitlines().index(next(ln for ln in text.splitlines() if '<link name="link3"' in ln)) + 1
    with pytest.raises(GroundingError, match=rf"robot\.urdf:{line}:\d+: URDF is not well-formed XML"):
        load_robot_description(_write(tmp_path, text))


def test_a_missing_mesh_names_the_uri_and_the_places_searched(tmp_path):
    path = _write(tmp_path, arm_urdf(7, "two_fingers", mesh=True), package_path=["ws"])
    with pytest.raises(GroundingError) as err:
        load_robot_description(path)
    msg = str(err.value)
    assert f"mesh 'package://{PACKAGE}/meshes/base.stl' not found" in msg
    assert str(tmp_path / "ws" / PACKAGE / "meshes" / "base.stl") in msg and "SAFETY_MONITOR_PACKAGE_PATH" in msg


def test_the_package_path_can_come_from_the_environment(tmp_path, monkeypatch):
    path = _write(tmp_path, arm_urdf(7, "two_fingers", mesh=True))
    for mesh, half in (("base", (0.05, 0.05, 0.05)), ("link", (0.03, 0.03, 0.06))):
        box_stl(tmp_path / "elsewhere" / PACKAGE / "meshes" / f"{mesh}.stl", half)
    monkeypatch.setenv("SAFETY_MONITOR_PACKAGE_PATH", str(tmp_path / "elsewhere"))
    assert load_robot_description(path).urdf is not None


@pytest.mark.parametrize("content, problem", [(b"not a mesh", "invalid header"), (b"", "is empty")])
def test_a_mesh_mujoco_cannot_read_is_one_line_and_robot_init_writes_nothing(tmp_path, capsys, content, problem):
    """A collision mesh that is there but unreadable (truncated, not an STL): the grounder and robot init say
    so on one line naming the file; robot init writes no file (a retry would find them 'already there')."""
    from safety_monitor.cli import main

    path = _write(tmp_path, arm_urdf(7, "two_fingers", mesh=True), package_path=["ws"])
    box_stl(tmp_path / "ws" / PACKAGE / "meshes" / "link.stl", (0.03, 0.03, 0.06))
    (tmp_path / "ws" / PACKAGE / "meshes" / "base.stl").write_bytes(content)
    with pytest.raises(GroundingError) as err:
        load_default_grounder(50.0, path)
    assert len(str(err.value).splitlines()) == 1 and problem in str(err.value) and "base.stl" in str(err.value)
    argv = ["robot", "init", "--urdf", str(tmp_path / "robot.urdf"), "--package-path", str(tmp_path / "ws")]
    assert main([*argv, "--out", str(tmp_path / "mine")]) == 2
    message = capsys.readouterr().err
    assert len(message.splitlines()) == 1 and problem in message and "base.stl" in message
    assert not (tmp_path / "mine").exists()


def test_a_dae_collision_mesh_is_named_with_what_to_do(tmp_path):
    text = arm_urdf(7, "two_fingers").replace(
        '<geometry><box size="0.04 0.12 0.02"/></geometry>', '<geometry><mesh filename="hand.dae"/></geometry>'
    )
    (tmp_path / "hand.dae").write_text("<COLLADA/>")
    with pytest.raises(GroundingError, match=r"link 'hand': collision mesh .*hand\.dae.* convert it to \.stl or \.obj"):
        load_robot_description(_write(tmp_path, text))


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda d: d["robot"].__setitem__("base_body", "base_lnk"),
            r"link 'base_lnk' is not in .*did you mean 'base_link'",
        ),
        (
            lambda d: d["robot"]["arm_joints"].__setitem__(2, "joint_3"),
            r"joint 'joint_3' is not a moving joint .*'joint3'",
        ),
        (lambda d: d["robot"]["gripper"].__setitem__("joints", ["finger_left_joint"]), "has 2 joint"),
        (lambda d: d["robot"]["gripper"]["fingers"].__setitem__("left", "finger_lft"), "did you mean 'finger_left'"),
        (lambda d: d["robot"]["arm_joints"].append("finger_left_joint"), "listed twice"),
        (
            lambda d: d.__setitem__("joint_limits", {"joint8": {"velocity": 1.0}}),
            r"joint_limits\.joint8: 'joint8' is not in robot\.arm_joints or robot\.gripper\.joints as written; "
            "they are joint1, .*, finger_right_joint: one of the two names is misspelt",
        ),
        (  # a misspelt arm joint is named where it is written, not at the joint_limits key that is right
            lambda d: (
                d["robot"]["arm_joints"].__setitem__(1, "joint_2"),
                d.__setitem__("joint_limits", {"joint2": {}}),
            ),
            r"robot\.arm_joints: joint 'joint_2' is not a moving joint .*'joint2'",
        ),
        (
            lambda d: d["robot"].__setitem__("end_effector", {"body": "hand", "site": "tcp"}),
            "exactly one of grasp_point",
        ),
        (lambda d: d["robot"]["gripper"].__setitem__("kind", "three_fingers"), "kind must be one of none, one_joint"),
        (  # fingers that close in opposite directions: each joint under one key, every joint once
            lambda d: d["robot"]["gripper"].__setitem__("closed_below", {"finger_left_joint": 0.025}),
            r"robot\.gripper: give closed_below or closed_above \(.*\) for finger_right_joint$",
        ),
        (
            lambda d: d["robot"]["gripper"].update(closed_above={"finger_rigt_joint": -0.025}),
            r"robot\.gripper\.closed_above: 'finger_rigt_joint' is not one of robot\.gripper\.joints \(did you mean "
            "'finger_right_joint'",
        ),
        (
            lambda d: d["robot"]["gripper"].update(closed_above=0.01),
            "'finger_left_joint' is under both closed_below and closed_above",
        ),
        (lambda d: d["robot"]["gripper"].pop("closed_below"), r"robot\.gripper: give closed_below or closed_above \("),
    ],
)
def test_bad_descriptions_name_the_problem(tmp_path, edit, message):
    (tmp_path / "robot.urdf").write_text(arm_urdf(7, "two_fingers"))
    doc = description(7, "two_fingers")
    edit(doc)
    with pytest.raises(GroundingError, match=message):
        parse_robot_description(doc, "robot.yaml", base_dir=tmp_path)


def test_description_joint_limits_override_the_urdf_per_field(tmp_path):
    (tmp_path / "robot.urdf").write_text(arm_urdf(7, "two_fingers"))
    doc = description(7, "two_fingers", joint_limits={"joint2": {"velocity": 0.5}})
    robot = parse_robot_description(doc, "robot.yaml", base_dir=tmp_path)
    assert robot.joint_limits["joint2"] == JointLimit(-2.5, 2.5, 0.5, 80.0)


@pytest.mark.parametrize("name", ROBOTS)
def test_robot_init_writes_a_description_that_loads_with_the_guessed_arm_and_gripper(tmp_path, name, capsys):
    from safety_monitor.cli import main

    n, kind, mesh, *_ = ROBOTS[name]
    write_robot(tmp_path, n, kind, mesh)
    out = tmp_path / "mine"
    argv = ["robot", "init", "--urdf", str(tmp_path / "robot.urdf"), "--out", str(out)]
    argv += ["--package-path", str(tmp_path / "ws")] if mesh else []
    assert main(argv) == 0
    assert f"gripper: {kind}" in capsys.readouterr().out
    robot = load_robot_description(out / "robot.yaml")
    assert robot.arm_joints == tuple(f"joint{i}" for i in range(1, n + 1)) and robot.base_body == "base_link"
    assert robot.gripper.kind is GripperKind(kind)
    assert robot.ee_body == ("tool" if kind == "none" else "hand")
    assert robot.ignored_joints == {"drawer_slide"}
    assert "CHECK" in (out / "robot.yaml").read_text()
    *_, closed, opened = ROBOTS[name]
    if closed is not None:  # the closing direction measured: the two-finger joints close down, the mimic one up
        joints = robot.gripper.joints
        assert robot.gripper.closed(dict.fromkeys(joints, closed)) and not robot.gripper.closed(
            dict.fromkeys(joints, opened)
        )
        assert "0.08 m apart at" in (out / "robot.yaml").read_text()
        assert robot.grasp_offset == pytest.approx([0.0, 0.0, 0.06])  # measured: the pads' centre, 6 cm out
    assert main(argv) == 2  # never overwrites
    assert "already there" in capsys.readouterr().err


def test_robot_init_takes_a_tcp_link_fixed_to_the_hand_as_the_grasp_point(tmp_path, capsys):
    from safety_monitor.cli import main

    tcp = (
        '  <link name="hand_tcp"/>\n  <joint name="hand_tcp_joint" type="fixed"><parent link="hand"/>'
        '<child link="hand_tcp"/><origin xyz="0 0 0.06"/></joint>\n</robot>'
    )
    (tmp_path / "robot.urdf").write_text(arm_urdf(7, "two_fingers").replace("</robot>", tcp))
    assert main(["robot", "init", "--urdf", str(tmp_path / "robot.urdf"), "--out", str(tmp_path / "mine")]) == 0
    doc = yaml.safe_load((tmp_path / "mine" / "robot.yaml").read_text())
    assert doc["robot"]["grasp_point"] == {"link": "hand_tcp", "offset": [0.0, 0.0, 0.0]}
    assert "tool centre point" in (tmp_path / "mine" / "robot.yaml").read_text()
    assert load_robot_description(tmp_path / "mine" / "robot.yaml").gripper.kind is GripperKind.TWO_FINGERS


def test_a_missing_mesh_of_a_urdf_given_by_a_relative_path_names_absolute_places(tmp_path, monkeypatch):
    (tmp_path / "robot.urdf").write_text(arm_urdf(7, "two_fingers", mesh=True))
    (tmp_path / "robot.yaml").write_text(yaml.safe_dump(description(7, "two_fingers")))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(GroundingError) as error:
        load_robot_description(Path("robot.yaml"))
    assert f"searched {tmp_path}/" in str(error.value)


def _linkage_gripper() -> str:
    """A Robotiq-2F-85-like linkage on the tool: one driven knuckle, mimic knuckles on both sides, finger pads
    fixed to the inner knuckles; like the 2F-85 it is open at 0 and closes as its joint grows to 0.8."""
    box = '<collision><geometry><box size="0.01 0.01 0.02"/></geometry></collision>'
    out = ""
    for side, sign in (("left", 1), ("right", -1)):
        for part in ("outer", "inner"):
            name = f"{side}_{part}_knuckle"
            joint = "finger_joint" if name == "left_outer_knuckle" else f"{name}_joint"
            mimic = "" if joint == "finger_joint" else '<mimic joint="finger_joint" multiplier="1"/>'
            out += (
                f'  <link name="{name}">{box}</link>\n  <joint name="{joint}" type="revolute"><parent link="tool"/>'
                f'<child link="{name}"/><origin xyz="0 {0.03 * sign} 0.02"/><axis xyz="{sign} 0 0"/>'
                f'<limit lower="0" upper="0.8" velocity="2" effort="10"/>{mimic}</joint>\n'
            )
        pad = f"{side}_inner_finger_pad"
        out += (
            f'  <link name="{pad}">{box}</link>\n  <joint name="{pad}_joint" type="fixed">'
            f'<parent link="{side}_inner_knuckle"/><child link="{pad}"/><origin xyz="0 0 0.04"/></joint>\n'
        )
    return out


def test_robot_init_pairs_a_linkage_grippers_fingers_left_and_right(tmp_path, capsys):
    from safety_monitor.cli import main

    (tmp_path / "robot.urdf").write_text(arm_urdf(6, "none").replace("</robot>", _linkage_gripper() + "</robot>"))
    assert main(["robot", "init", "--urdf", str(tmp_path / "robot.urdf"), "--out", str(tmp_path / "mine")]) == 0
    assert "gripper: one_joint (finger_joint)" in capsys.readouterr().out
    doc = yaml.safe_load((tmp_path / "mine" / "robot.yaml").read_text())
    assert doc["robot"]["gripper"]["fingers"] == {"left": "left_inner_finger_pad", "right": "right_inner_finger_pad"}
    robot = load_robot_description(tmp_path / "mine" / "robot.yaml")
    assert robot.gripper.joints == ("finger_joint",) and len(set(robot.gripper.finger_bodies)) == 2
    assert robot.gripper.closed_past[0].upward and robot.gripper.closed({"finger_joint": 0.7})
    assert not robot.gripper.closed({"finger_joint": 0.0})
    assert "fingers 0.05 m apart at 0, overlapping by" in (tmp_path / "mine" / "robot.yaml").read_text()


def test_robot_init_takes_one_jaw_closing_on_the_hands_own_as_a_gripper(tmp_path, capsys):
    """Unitree's Z1: `jointGripper` swings `gripperMover` against a jaw of the hand link itself. The one moved
    finger was no pair, so the gripper was written as none (`no joint named *finger* or *gripper*`) and its
    joint ignored; the hand is the other finger."""
    from safety_monitor.cli import main

    jaw = (
        '  <link name="gripperMover"><collision><origin xyz="0 0 0.03"/><geometry><box size="0.01 0.02 0.06"/>'
        '</geometry></collision></link>\n  <joint name="jointGripper" type="revolute"><parent link="tool"/>'
        '<child link="gripperMover"/><origin xyz="0.03 0 0.02"/><axis xyz="0 1 0"/>'
        '<limit lower="0" upper="1.57" velocity="3" effort="30"/></joint>\n'
    )
    (tmp_path / "robot.urdf").write_text(arm_urdf(6, "none").replace("</robot>", jaw + "</robot>"))
    assert main(["robot", "init", "--urdf", str(tmp_path / "robot.urdf"), "--out", str(tmp_path / "mine")]) == 0
    assert "gripper: one_joint (jointGripper)" in capsys.readouterr().out
    robot = load_robot_description(tmp_path / "mine" / "robot.yaml")
    assert robot.gripper.kind is GripperKind.ONE_JOINT and robot.gripper.joints == ("jointGripper",)
    assert robot.gripper.finger_bodies == ("tool", "gripperMover") and "jointGripper" not in robot.ignored_joints
    # measured: the jaw swung open (1.57) stands further from the hand's
    assert robot.gripper.closed({"jointGripper": 0.0}) and not robot.gripper.closed({"jointGripper": 1.57})


def test_robot_init_keeps_its_guess_and_says_so_when_the_fingers_do_not_tell_which_way_it_closes(tmp_path, capsys):
    from safety_monitor.cli import main

    sideways = arm_urdf(6, "one_joint").replace('multiplier="1"', 'multiplier="-1"')  # both fingers move the same way
    (tmp_path / "robot.urdf").write_text(sideways)
    assert main(["robot", "init", "--urdf", str(tmp_path / "robot.urdf"), "--out", str(tmp_path / "mine")]) == 0
    text = (tmp_path / "mine" / "robot.yaml").read_text()
    assert yaml.safe_load(text)["robot"]["gripper"]["closed_below"] == pytest.approx(0.036)
    assert "forward kinematics could not tell which way the gripper closes (the fingers are 0.08 m apart at " in text


def test_robot_init_takes_a_whole_tool_as_the_hand_and_its_contact_with_an_object_is_allowed(tmp_path, capsys):
    """A suction cup: no gripper joint, a cup link fixed to the wrist and a tcp link at its tip. The cup is
    the hand, so the object it picks may touch it; had only the tcp link been the hand, the cup would be the
    arm, whose contact with an object is forbidden."""
    from safety_monitor.cli import main

    tcp = (
        '  <link name="suction_tcp"/>\n  <joint name="suction_tcp_fix" type="fixed"><parent link="tool"/>'
        '<child link="suction_tcp"/><origin xyz="0 0 0.02"/></joint>\n</robot>'
    )
    (tmp_path / "robot.urdf").write_text(arm_urdf(6, "none").replace("</robot>", tcp))
    assert main(["robot", "init", "--urdf", str(tmp_path / "robot.urdf"), "--out", str(tmp_path / "mine")]) == 0
    doc = yaml.safe_load((tmp_path / "mine" / "robot.yaml").read_text())
    assert doc["robot"]["gripper"] == {"kind": "none", "hand_bodies": ["tool", "suction_tcp"]}
    assert doc["robot"]["grasp_point"]["link"] == "suction_tcp"
    doc["objects"] = {"cube": {"box": [0.02, 0.02, 0.02]}}
    (tmp_path / "mine" / "robot.yaml").write_text(yaml.safe_dump(doc))
    (tmp_path / "mine" / "objects.yaml").write_text(yaml.safe_dump({**OBJECTS, "entities": {"cube": "block"}}))
    robot = load_robot_description(tmp_path / "mine" / "robot.yaml")
    grounder = Grounder(
        robot,
        load_object_catalog(tmp_path / "mine" / "objects.yaml"),
        load_thresholds(tmp_path / "mine" / "thresholds.yaml"),
        50.0,
    )
    names = robot.required_joints
    tip = grounder.twin.compute(names, np.zeros(len(names)), {}).ee_position
    held = {"cube": Pose(tip + [0.0, 0.0, 0.019], np.array([1.0, 0.0, 0.0, 0.0]))}  # against the cup's face
    frame = grounder.step(RobotState(0.0, names, np.zeros(len(names)), object_poses=held, object_ages={"cube": 0.0}))
    assert frame.values["forbidden_contact"] is False and "forbidden_contact" not in frame.unknown


@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_a_mobile_base_on_a_floating_or_planar_joint_stays_where_the_urdf_puts_it(tmp_path, capsys, kind):
    """A mobile manipulator's URDF hangs its base from odom by a floating or planar joint. MuJoCo takes a free
    joint only from the world, so the twin could not compile a floating one; the base now stays where the
    URDF puts it (object poses come in its frame), and robot init says so."""
    from safety_monitor.cli import main

    text = arm_urdf(6, "none").replace('"world"', '"odom"')
    text = text.replace('<joint name="base_fix" type="fixed">', f'<joint name="base_fix" type="{kind}">')
    (tmp_path / "robot.urdf").write_text(text)
    assert main(["robot", "init", "--urdf", str(tmp_path / "robot.urdf"), "--out", str(tmp_path / "mine")]) == 0
    robot_yaml = (tmp_path / "mine" / "robot.yaml").read_text()
    assert f"# CHECK: the robot's base hangs from base_fix, a {kind} joint: a mobile base." in robot_yaml
    robot = load_robot_description(tmp_path / "mine" / "robot.yaml")
    twin = twin_for(robot, load_thresholds(tmp_path / "mine" / "thresholds.yaml"))
    names = robot.required_joints
    tip = twin.compute(names, np.zeros(len(names)), {}).ee_position
    assert tip == pytest.approx([0.0, 0.0, 0.1 + 5 * LINK_LENGTH + LINK_LENGTH])  # the arm straight up from the origin
