"""`safety-monitor robot init --mjcf`: the guesses made from small MJCF robots (mjcf_robots), that what it writes
loads and grounds a grasp frame, and the one-line errors for models it cannot read."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml
from mjcf_robots import arm_mjcf, bimanual_mjcf, linkage_gripper, telescope_mjcf, two_arm_mjcf, write_mjcf
from urdf_robots import LINK_LENGTH

from safety_monitor.cli import main
from safety_monitor.errors import GroundingError
from safety_monitor.frames import Pose, RobotState
from safety_monitor.grounding import twin
from safety_monitor.grounding.description import ClosedPast, GripperKind, load_robot_description
from safety_monitor.grounding.grounder import Grounder
from safety_monitor.grounding.semantics import load_object_catalog
from safety_monitor.grounding.thresholds import load_thresholds
from safety_monitor.grounding.twin import servo_range, twin_for


@dataclass(frozen=True)
class Case:
    n_joints: int
    gripper: str
    site: str | None
    joints: tuple[str, ...]  # the gripper joints guessed
    closed: float | None  # a gripper joint position where it is closed, and one where it is open
    opened: float | None


CASES = {
    "equality_coupled_fingers": Case(6, "one_joint", None, ("gripper_joint",), 0.03, 0.0),
    "no_gripper": Case(6, "none", None, (), None, None),
    "two_fingers_tcp_site": Case(7, "two_fingers", "tcp", ("finger_left_joint", "finger_right_joint"), 0.01, 0.04),
}


def _init(folder: Path, *args, **options) -> tuple[int, Path]:
    model = write_mjcf(folder, *args, **options)
    return main(["robot", "init", "--mjcf", str(model), "--out", str(folder / "mine")]), folder / "mine"


@pytest.mark.parametrize("name", CASES)
def test_robot_init_guesses_arm_gripper_and_grasp_centre_and_the_output_grounds_a_grasp_frame(tmp_path, name, capsys):
    case = CASES[name]
    code, out = _init(tmp_path, case.n_joints, case.gripper, site=case.site)
    assert code == 0
    assert f"arm: {case.n_joints} joints from base_link to " in capsys.readouterr().out
    robot = load_robot_description(out / "robot.yaml")
    assert robot.mjcf.resolve() == tmp_path / "robot.xml" and robot.urdf is None  # named relative to the output
    assert "mjcf: ../robot.xml" in (out / "robot.yaml").read_text()
    # a Menagerie user would otherwise learn only from replay that the velocity properties were never checked
    assert "# CHECK: an MJCF gives no velocity limits: give each arm joint's here" in (out / "robot.yaml").read_text()
    assert robot.arm_joints == tuple(f"joint{i}" for i in range(1, case.n_joints + 1))
    assert robot.base_body == "base_link"
    assert robot.gripper.kind is GripperKind(case.gripper) and robot.gripper.joints == case.joints
    tool = "tool" if case.gripper == "none" else "hand"
    assert robot.gripper.hand_bodies == (tool,)
    if case.gripper != "none":
        assert robot.gripper.finger_bodies == ("finger_left", "finger_right")
        joints = robot.gripper.joints  # the closing direction, measured: the one-joint gripper closes upward
        assert [p.upward for p in robot.gripper.closed_past] == [case.gripper == "one_joint"] * len(joints)
        assert robot.gripper.closed(dict.fromkeys(joints, case.closed))
        assert not robot.gripper.closed(dict.fromkeys(joints, case.opened))
        assert "(forward kinematics)" in (out / "robot.yaml").read_text()
    assert (robot.ee_body, robot.ee_site) == ((tool, "tcp") if case.site else (tool, "grasp_point"))
    pads = 0.0 if case.gripper == "none" else 0.06  # the finger pads' centre (and the tcp site) out from the hand
    if case.site:
        assert robot.grasp_offset is None
    else:  # measured midway between the open fingers' pads; nothing to measure without fingers
        assert robot.grasp_offset == pytest.approx([0.0, 0.0, pads])
    coupled = {"finger_right_joint"} if case.gripper == "one_joint" else set()
    assert robot.ignored_joints == {"drawer_slide"} | coupled  # frames may carry the coupled finger
    thresholds = load_thresholds(out / "thresholds.yaml")
    grounder = Grounder(
        robot, load_object_catalog(out / "objects.yaml"), thresholds, 50.0, twin=twin_for(robot, thresholds)
    )
    names = (*robot.required_joints, *coupled)
    grounder.step(RobotState(t=0.0, joint_names=names, joint_position=np.zeros(len(names))))
    geometry = grounder.twin.compute(names, np.zeros(len(names)), {})
    hand_z = 0.1 + (case.n_joints - 1) * LINK_LENGTH + LINK_LENGTH  # the arm straight up, all joints at 0
    assert np.allclose(geometry.ee_position, [0.0, 0.0, hand_z + pads])


def test_the_coupled_finger_moves_with_the_guessed_joint_and_frames_may_carry_it(tmp_path, capsys):
    code, out = _init(tmp_path, 6, "one_joint")
    assert code == 0
    robot = load_robot_description(out / "robot.yaml")
    twin = twin_for(robot, load_thresholds(out / "thresholds.yaml"))
    names = (*robot.required_joints, "finger_right_joint")
    gaps = []
    for q in (0.0, 0.03):  # the follower reads 0 throughout: the twin sets it from its leader
        twin.compute(names, np.array([0.0] * (len(names) - 2) + [q, 0.0]), {})
        gaps.append(twin.finger_gap().gap)
    assert gaps == pytest.approx([0.08, 0.02])


def test_free_bodies_are_offered_as_objects_and_loops_are_named_with_what_to_do(tmp_path, capsys):
    code, out = _init(tmp_path, 6, "one_joint", free_cube=True, loop=True)
    assert code == 0
    text = (out / "robot.yaml").read_text()
    assert "free bodies of this MJCF, each an object by its body (cube: {body: cube}): cube" in text
    assert "kinematic loops (finger_left-finger_right)" in text and "<equality><joint>" in text
    assert load_robot_description(out / "robot.yaml").gripper.kind is GripperKind.ONE_JOINT


def test_robot_init_never_overwrites(tmp_path, capsys):
    assert _init(tmp_path, 6, "none")[0] == 0
    assert _init(tmp_path, 6, "none")[0] == 2
    assert "already there" in capsys.readouterr().err


def attached(name: str, impratio: int) -> str:
    """A model to attach to the arm's tool (a Menagerie gripper's way), with solver options of its own."""
    return (
        f'<mujoco model="{name}"><option impratio="{impratio}" cone="elliptic"/><worldbody><body name="{name}_base">'
        '<geom type="box" size="0.02 0.02 0.02"/></body></worldbody></mujoco>'
    )


def test_an_attach_conflict_is_said_once_and_each_other_mujoco_warning_too(tmp_path, capfd, monkeypatch):
    """Before, MuJoCo's "Attach conflict (impratio, cone)" came five times, each compile of the model
    raising it and MuJoCo's C library printing it again (and writing MUJOCO_LOG.TXT where it ran)."""
    monkeypatch.setattr(twin, "_warned", set())  # what earlier tests in this process were shown
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gripper.xml").write_text(attached("gripper", 10))
    (tmp_path / "camera.xml").write_text(attached("camera", 5))
    arm = (
        arm_mjcf(6, "none")
        .replace(
            "<worldbody>",
            '<option impratio="1"/><asset><model name="gripper" file="gripper.xml"/>'
            '<model name="camera" file="camera.xml"/></asset><worldbody>',
        )
        .replace(
            '<body name="tool" pos="0 0 0.15">',
            '<body name="tool" pos="0 0 0.15"><attach model="gripper" body="gripper_base" prefix="g_"/>'
            '<attach model="camera" body="camera_base" prefix="c_"/>',
        )
    )
    (tmp_path / "arm.xml").write_text(arm)
    with pytest.warns(UserWarning) as raised:
        assert main(["robot", "init", "--mjcf", "arm.xml", "--out", "mine"]) == 0
    said = sorted(str(w.message) for w in raised if "Attach conflict" in str(w.message))
    assert [line.splitlines()[:2] for line in said] == [
        [
            "MuJoCo: Attach conflict when attaching 'camera' to 'toy_arm', policy is 'warning'",
            "impratio: parent has 1, child has 5, keeping parent value",
        ],
        [
            "MuJoCo: Attach conflict when attaching 'gripper' to 'toy_arm', policy is 'warning'",
            "impratio: parent has 1, child has 10, keeping parent value",
        ],
    ]
    assert "Attach conflict" not in capfd.readouterr().err and not (tmp_path / "MUJOCO_LOG.TXT").exists()
    with warnings.catch_warnings(record=True) as again:  # a later compile in the process says nothing new
        warnings.simplefilter("always")
        twin_for(
            load_robot_description(tmp_path / "mine" / "robot.yaml"),
            load_thresholds(tmp_path / "mine" / "thresholds.yaml"),
        )
    assert not [w for w in again if "Attach conflict" in str(w.message)]


NO_JOINTS = '<mujoco><worldbody><body name="post"><geom type="box" size="0.1 0.1 0.1"/></body></worldbody></mujoco>'
MISSING_MESH = (
    arm_mjcf(6, "none")
    .replace("<worldbody>", '<asset><mesh name="shell" file="meshes/shell.stl"/></asset><worldbody>')
    .replace('<geom type="box" size="0.05 0.05 0.05"', '<geom type="mesh" mesh="shell"')
)


@pytest.mark.parametrize(
    "text, args, message",
    [
        (None, [], "cannot read MJCF '{model}': no such file"),
        (
            "<mujoco><worldbody><body></worldbody></mujoco>",
            [],
            "{model}: MuJoCo cannot load this MJCF: XML parse error",
        ),
        (MISSING_MESH, [], "Error opening file 'meshes/shell.stl' (a mesh or other asset it names is missing"),
        (NO_JOINTS, [], "{model}: no moving joint (revolute, continuous or prismatic): nothing to watch"),
        (
            linkage_gripper(arm=False),
            [],
            "{model}: no arm: every moving joint is a gripper's (8 joints, right_driver_joint to left_follower_joint)",
        ),
        (arm_mjcf(6, "none"), ["--package-path", "."], "--package-path serves --urdf"),
        (arm_mjcf(6, "none"), ["--urdf", "robot.urdf"], "argument --urdf: not allowed with argument --mjcf"),
    ],
)
def test_models_it_cannot_read_are_one_line_errors(tmp_path, capsys, monkeypatch, text, args, message):
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "robot.xml"
    if text is not None:
        model.write_text(text)
    try:
        code = main(["robot", "init", "--mjcf", str(model), "--out", "mine", *args])
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert message.format(model=model) in err
    assert not (tmp_path / "mine").exists()


def test_an_mjcf_born_description_takes_a_grasp_point_moved_by_hand(tmp_path, capsys):
    """What a user does next (docs/your_robot.md): move the grasp centre; the twin adds the site there."""
    code, out = _init(tmp_path, 6, "one_joint")
    doc = yaml.safe_load((out / "robot.yaml").read_text())
    doc["robot"]["grasp_point"]["offset"] = [0.0, 0.0, 0.05]
    (out / "robot.yaml").write_text(yaml.safe_dump(doc))
    robot = load_robot_description(out / "robot.yaml")
    twin = twin_for(robot, load_thresholds(out / "thresholds.yaml"))
    geometry = twin.compute(robot.required_joints, np.zeros(len(robot.required_joints)), {})
    assert np.allclose(geometry.ee_position, [0.0, 0.0, 0.1 + 6 * LINK_LENGTH + 0.05])


def test_coupled_joints_are_the_gripper_whatever_their_names(tmp_path, capsys):
    """Menagerie's Robotiq 2F-85 names its driven joints `*_driver_joint`, coupled by an equality: no gripper
    word, yet neither an arm joint nor a joint to ignore."""
    text = (
        arm_mjcf(6, "one_joint").replace("gripper_joint", "left_driver").replace("finger_right_joint", "right_driver")
    )
    (tmp_path / "robot.xml").write_text(text)
    assert main(["robot", "init", "--mjcf", str(tmp_path / "robot.xml"), "--out", str(tmp_path / "mine")]) == 0
    assert "arm: 6 joints from base_link to hand; gripper: one_joint (left_driver)" in capsys.readouterr().out
    robot = load_robot_description(tmp_path / "mine" / "robot.yaml")
    assert robot.gripper.closed_past[0].upward and robot.ignored_joints == {"right_driver", "drawer_slide"}


def test_a_linkage_gripper_is_the_gripper_and_its_passive_joints_are_neither_arm_nor_fingers(tmp_path, capsys):
    """Menagerie's 2F-85 on an arm: its spring links and followers, tied to the couplers by `<connect>` loops, are
    the gripper's passive joints. They were taken as two more arm joints down to a pad, and the coupled drivers
    then hung off that arm, so no gripper was found. A mocap weld holding the tool is no linkage of the robot."""
    code, out = _init_text(tmp_path, linkage_gripper())
    assert code == 0
    printed = capsys.readouterr().out
    assert "arm: 6 joints from base_link to tool; gripper: one_joint (left_driver_joint)" in printed
    assert "not watched" not in printed
    robot = load_robot_description(out / "robot.yaml")
    assert robot.arm_joints == tuple(f"joint{i}" for i in range(1, 7))
    assert robot.gripper.kind is GripperKind.ONE_JOINT and robot.gripper.joints == ("left_driver_joint",)
    assert robot.gripper.finger_bodies == ("left_driver", "right_driver") and robot.gripper.closed_past[0].upward
    passive = {f"{side}_{link}_joint" for side in ("left", "right") for link in ("coupler", "spring_link", "follower")}
    assert robot.ignored_joints == passive | {"right_driver_joint", "drawer_slide"}
    links = [f"{side}_{body}" for side in ("right", "left") for body in ("spring_link", "follower", "pad")]
    assert robot.gripper.hand_bodies == ("tool", *links)  # a pad touching the held object is the hand's, not the arm's
    assert (
        "kinematic loops (right_follower-right_coupler, left_follower-left_coupler, mocap-tool)"
        in (out / "robot.yaml").read_text()
    )


def _init_text(folder: Path, text: str, *args: str) -> tuple[int, Path]:
    (folder / "robot.xml").write_text(text)
    return main(
        ["robot", "init", "--mjcf", str(folder / "robot.xml"), "--out", str(folder / "mine"), *args]
    ), folder / "mine"


@pytest.mark.parametrize("base", ["lift", "free"])
def test_a_bimanual_robot_is_one_arm_with_its_own_gripper_and_the_other_arm_is_named(tmp_path, capsys, base):
    """ai_worker and rby1: two arms, each with a gripper. The monitor watches one arm and one gripper, so the
    description is the first arm with the gripper of its own hand (not one finger from each hand), and the
    other arm is named, on the console and as a CHECK, with how to watch it instead."""
    code, out = _init_text(tmp_path, bimanual_mjcf(base))
    assert code == 0
    printed = capsys.readouterr().out
    assert "gripper: one_joint (gripper_l_joint1)" in printed
    assert "not watched: another arm (8 joints, arm_r_joint1 to gripper_r_joint4); the monitor watches one" in printed
    text = (out / "robot.yaml").read_text()
    assert "# CHECK: another arm (8 joints, arm_r_joint1 to gripper_r_joint4) is not watched" in text
    robot = load_robot_description(out / "robot.yaml")
    lift = "lift_joint" if base == "lift" else "torso_joint"
    assert robot.arm_joints == (lift, "arm_l_joint1", "arm_l_joint2", "arm_l_joint3", "arm_l_joint4")
    assert robot.gripper.kind is GripperKind.ONE_JOINT and robot.gripper.joints == ("gripper_l_joint1",)
    assert robot.gripper.finger_bodies == ("gripper_l_r2", "gripper_l_l2")  # the tips, one per side of the left hand
    assert robot.gripper.closed_past[0].upward  # measured: the two fingers of one hand close on each other
    assert {"arm_r_joint1", "gripper_r_joint1", "head_joint1"} <= robot.ignored_joints
    # the robot is the body its first joint moves, never MuJoCo's world body (which holds the cube too)
    assert robot.base_body == ("torso" if base == "lift" else "base")


def test_robot_init_tip_chooses_the_other_arm_and_a_name_it_lacks_is_one_line(tmp_path, capsys):
    code, out = _init_text(tmp_path, bimanual_mjcf(), "--tip", "hand_r")
    assert code == 0
    assert "not watched: another arm (8 joints, arm_l_joint1 to gripper_l_joint4)" in capsys.readouterr().out
    robot = load_robot_description(out / "robot.yaml")
    assert robot.arm_joints == ("lift_joint", "arm_r_joint1", "arm_r_joint2", "arm_r_joint3", "arm_r_joint4")
    assert robot.gripper.joints == ("gripper_r_joint1",) and robot.gripper.finger_bodies == (
        "gripper_r_r2",
        "gripper_r_l2",
    )
    code = main(
        ["robot", "init", "--mjcf", str(tmp_path / "robot.xml"), "--out", str(tmp_path / "b"), "--tip", "hand_x"]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert "--tip 'hand_x' is not a body of" in err and "(did you mean 'hand_l' or 'hand_r'?)" in err


@pytest.mark.parametrize("arm", ["left", "right"])
def test_a_fingers_side_is_told_after_the_arms_prefix(tmp_path, capsys, arm):
    """Menagerie's ALOHA puts its arm's prefix before every name (`right/left_finger_link`): the side of a finger is
    told by the rest of its name. The right arm's description once had its left finger on both sides, so its
    grasps were never seen (no right finger) and its closing direction could not be measured."""
    code, out = _init_text(tmp_path, two_arm_mjcf(), *(["--tip", "right/gripper_base"] if arm == "right" else []))
    assert code == 0
    robot = load_robot_description(out / "robot.yaml")
    assert robot.gripper.joints == (f"{arm}/right_finger",)
    assert robot.gripper.finger_bodies == (f"{arm}/left_finger_link", f"{arm}/right_finger_link")
    assert np.allclose(robot.grasp_offset, [0.0, 0.0, 0.06])  # measured midway between the open fingers
    assert "0.092 m apart at 0.041 (forward kinematics): closed below this" in (out / "robot.yaml").read_text()


def test_a_gripper_its_software_opens_short_of_its_rail_is_open_within_a_tenth_of_what_it_commands(tmp_path, capsys):
    """ALOHA's fingers run on a 0 to 0.041 m rail, and its software drives them from 0.002 to 0.037 m (Menagerie's
    position servo, on the follower finger). The guess was a tenth of the rail from open, 0.0369: a gripper the
    software opened read closed 0.1 mm short of it, so every release read as a drop with the gripper closed. It is a
    tenth of the commanded range from where it opens, and the CHECK says so; a model without servos keeps the rail's."""
    code, out = _init_text(tmp_path, two_arm_mjcf(servos=True))
    assert code == 0
    gripper = load_robot_description(out / "robot.yaml").gripper
    assert gripper.closed_past == (ClosedPast(pytest.approx(0.037 - 0.1 * (0.037 - 0.002)), False),)
    assert not gripper.closed({"left/right_finger": 0.036})  # opened by its software, a millimetre short
    assert gripper.closed({"left/right_finger": 0.03})  # holding a 4 cm object
    text = (out / "robot.yaml").read_text()
    assert (
        "# CHECK: joint range [0, 0.041], commanded over [0.002, 0.037] (the control range of left/gripper: as far as "
        "the software moves it); fingers 0.01 m apart at 0, 0.092 m apart at 0.041 (forward kinematics): closed below "
        "this, a tenth of the commanded range from where it opens\n"
    ) in text
    (tmp_path / "bare").mkdir()
    code, out = _init_text(tmp_path / "bare", two_arm_mjcf())
    assert load_robot_description(out / "robot.yaml").gripper.closed_past[0].at == pytest.approx(0.9 * 0.041)
    assert "closed below this, a tenth of the joint range from where it opens\n" in (out / "robot.yaml").read_text()


def test_a_servo_on_the_gripper_joint_itself_through_a_gear_commands_ctrl_over_gear():
    """A position servo's force vanishes where the joint is at its control over its gear (MJCF's <position>)."""
    text = two_arm_mjcf(servos=True).replace(
        'joint="left/left_finger" ctrlrange="0.002 0.037"', 'joint="left/right_finger" gear="2" ctrlrange="0.004 0.074"'
    )
    model = mujoco.MjModel.from_xml_string(text)
    commanded = servo_range(model, "left/right_finger")
    assert commanded is not None and commanded.actuators == ("left/gripper",)
    assert (commanded.lower, commanded.upper) == pytest.approx((0.002, 0.037))
    assert servo_range(model, "left/waist") is None  # no servo on it


def test_a_mobile_base_is_not_offered_as_an_object_and_its_lift_places_the_hand(tmp_path, capsys):
    """rby1's base hangs from a free joint: it is the robot, not an object, and the twin keeps it where the
    model puts it (said as a CHECK). ai_worker's lift is an arm joint: the hand goes up and down with it."""
    code, out = _init_text(tmp_path, bimanual_mjcf("free"))
    assert code == 0
    text = (out / "robot.yaml").read_text()
    assert "each an object by its body (cube: {body: cube}): cube\n" in text
    assert "# CHECK: the robot's base hangs from world_j, a floating joint: a mobile base." in text
    (tmp_path / "lift").mkdir()
    code, out = _init_text(tmp_path / "lift", bimanual_mjcf("lift"))
    assert code == 0
    doc = yaml.safe_load((out / "robot.yaml").read_text())
    doc["objects"] = {"cube": {"body": "cube"}}
    (out / "robot.yaml").write_text(yaml.safe_dump(doc))
    robot = load_robot_description(out / "robot.yaml")
    twin = twin_for(robot, load_thresholds(out / "thresholds.yaml"))
    cube = twin.model.body("cube").id
    assert twin.entities[twin.body_entity[cube]] == "cube"  # not the arm's: the robot is the torso's subtree
    names = robot.required_joints
    heights = [
        twin.compute(names, np.array([lift] + [0.0] * (len(names) - 1)), {}).ee_position[2] for lift in (0.0, -0.3)
    ]
    assert heights[0] - heights[1] == pytest.approx(0.3)


def test_a_hand_of_more_than_two_finger_joints_is_no_gripper_and_says_so(tmp_path, capsys):
    """A dexterous hand (ai_worker's five-finger hx5, Shadow, Allegro): no one or two joints close it, so it is
    not taken as a two-finger gripper of two of its joints."""
    thumb = (
        '<body name="thumb" pos="0 0 0.02"><joint name="finger_thumb_joint" type="slide" axis="1 0 0" range="0 0.04"/>'
        '<geom type="box" size="0.005 0.005 0.02" pos="0.01 0 0.04"/></body>'
    )
    text = arm_mjcf(6, "two_fingers").replace('<body name="finger_left"', thumb + '<body name="finger_left"')
    code, out = _init_text(tmp_path, text)
    assert code == 0
    assert "gripper: none" in capsys.readouterr().out
    assert (
        "kind: none   # CHECK: a hand of 3 independent finger joints (3 joints, finger_thumb_joint to finger_right_joint"
        in (out / "robot.yaml").read_text()
    )
    robot = load_robot_description(out / "robot.yaml")
    assert robot.gripper.kind is GripperKind.NONE and robot.gripper.hand_bodies == ("hand",)
    assert {"finger_thumb_joint", "finger_left_joint", "finger_right_joint"} <= robot.ignored_joints


def test_the_other_arms_joints_in_the_frames_place_its_bodies_and_a_nan_one_stays_put(tmp_path, capsys):
    """The arm not watched is under ignored_joints, yet its links are other_arm for contact: where the frames
    say it is, the twin puts it (the cube held in its hand touches other_arm), not where the model draws it."""
    code, out = _init_text(tmp_path, bimanual_mjcf())
    assert code == 0
    doc = yaml.safe_load((out / "robot.yaml").read_text())
    doc["objects"] = {"held": {"box": [0.02, 0.02, 0.02]}}
    (out / "robot.yaml").write_text(yaml.safe_dump(doc))
    robot = load_robot_description(out / "robot.yaml")
    twin = twin_for(robot, load_thresholds(out / "thresholds.yaml"))
    names = (*robot.required_joints, "arm_r_joint2", "arm_r_joint4")
    bent = np.array([0.0] * len(robot.required_joints) + [1.2, 1.0])
    reference = mujoco.MjData(twin.model)  # the right arm bent, by MuJoCo alone
    for name, q in zip(names, bent):
        reference.qpos[twin.model.joint(name).qposadr[0]] = q
    mujoco.mj_kinematics(twin.model, reference)
    hand = reference.xpos[twin.model.body("hand_r").id].copy()
    held = {"held": Pose(position=hand, quaternion=np.array([1.0, 0.0, 0.0, 0.0]))}
    assert twin.compute(names, bent, held).gap("held", "other_arm") < 0.0
    nan = bent.copy()
    nan[-1] = np.nan  # the last position is kept
    assert twin.compute(names, nan, held).gap("held", "other_arm") < 0.0
    assert np.allclose(twin.data.xpos[twin.model.body("hand_r").id], hand)


def test_a_description_whose_robot_is_the_world_body_is_refused(tmp_path, capsys):
    code, out = _init_text(tmp_path, bimanual_mjcf())
    text = (out / "robot.yaml").read_text().replace("base_body: torso", "base_body: world")
    (out / "robot.yaml").write_text(text)
    robot = load_robot_description(out / "robot.yaml")
    with pytest.raises(GroundingError, match="robot.base_body 'world' is MuJoCo's world body, which holds every body"):
        twin_for(robot, load_thresholds(out / "thresholds.yaml"))


@pytest.mark.parametrize("telescope", [True, False])
def test_stretchs_sprung_fingertips_are_no_arm_joints_and_its_telescope_is_no_gripper(tmp_path, capsys, telescope):
    """Menagerie's Stretch: its fingertips hang from the fingers by passive hinges (no actuator drives them), and its
    telescope's stages follow one another by equalities. The hinges were counted as arm joints below the gripper, so
    the arm ran down a finger to its tip and the description did not load (`rubber_tip_left` holds the watched arm),
    and the telescope's coupled stages were taken for a gripper's. The arm is now lift, the telescope's first stage
    and the wrist; the slide the fingers follow is the gripper; the tips, the following stages and the finger hinges
    are ignored; each finger is the finger body, not the marker fixed to it (whose subtree is the marker alone)."""
    code, out = _init_text(tmp_path, telescope_mjcf(telescope))
    assert code == 0
    stages = ("arm_l3",) if telescope else ()
    assert f"arm: {1 + len(stages) + 1} joints from base_link to wrist; gripper: one_joint (gripper_slide)" in (
        capsys.readouterr().out
    )
    robot = load_robot_description(out / "robot.yaml")
    assert robot.arm_joints == ("lift", *stages, "wrist_yaw") and robot.base_body == "base_link"
    assert robot.gripper.kind is GripperKind.ONE_JOINT and robot.gripper.joints == ("gripper_slide",)
    assert robot.gripper.finger_bodies == ("finger_left", "finger_right") and robot.gripper.hand_bodies == ("wrist",)
    followers = ("arm_l2", "arm_l1", "arm_l0") if telescope else ()
    tips = {f"tip_{side}_{axis}" for side in ("left", "right") for axis in "xy"}
    wheels = {"wheel_left_joint", "wheel_right_joint"}
    assert robot.ignored_joints == {*followers, "finger_left_open", "finger_right_open", *tips, *wheels}
    assert robot.gripper.closed_past == (ClosedPast(pytest.approx(0.04 - 0.1 * 0.045), False),)  # measured
    if telescope:  # the stages that follow arm_l3 extend with it
        twin = twin_for(robot, load_thresholds(out / "thresholds.yaml"))
        reach = [twin.compute(robot.required_joints, np.array([0.0, q, 0.0, 0.0]), {}).ee_position[1] for q in (0, 0.1)]
        assert reach[1] - reach[0] == pytest.approx(0.4)


def test_fingers_that_close_in_opposite_directions_each_get_a_threshold_of_their_own(tmp_path, capsys):
    """gym-aloha's fingers: two slides on one axis, coupled by nothing, one over 0.021 to 0.057 m and the other over
    -0.057 to -0.021 (it closes as it grows). Moved together, such fingers keep their gap, so robot init could not
    tell which way the gripper closes, and one closed_below for both read the second finger closed wherever it
    stood. Each finger is measured alone, the other half open, and has a threshold of its own."""
    code, out = _init(tmp_path, 6, "mirrored")
    assert code == 0
    assert "gripper: two_fingers (finger_left_joint, finger_right_joint)" in capsys.readouterr().out
    text = (out / "robot.yaml").read_text()
    assert (
        '    closed_below: {"finger_left_joint": 0.036}   # CHECK: joint range [0, 0.04]; fingers 0.02 m apart at 0,'
        in text
    )
    assert '    closed_above: {"finger_right_joint": -0.036}   # CHECK: joint range [-0.04, 0]; fingers ' in text
    assert "the other finger half open (forward kinematics): this finger closes above this" in text
    robot = load_robot_description(out / "robot.yaml")
    gripper = robot.gripper
    assert gripper.closed_past == (ClosedPast(pytest.approx(0.036), False), ClosedPast(pytest.approx(-0.036), True))
    assert robot.grasp_offset == pytest.approx([0.0, 0.0, 0.06])  # measured between the fingers, both open
    assert gripper.closed({"finger_left_joint": 0.02, "finger_right_joint": -0.02})  # both on a 4 cm cube
    assert not gripper.closed({"finger_left_joint": 0.04, "finger_right_joint": -0.04})  # both open
    assert not gripper.closed({"finger_left_joint": 0.02, "finger_right_joint": -0.04})  # the right one let go
    # closed on a cube, then the right finger opens: a release
    (out / "robot.yaml").write_text(text.replace("objects: {} ", "objects: {cube: {box: [0.02, 0.02, 0.02]}} "))
    catalog = (out / "objects.yaml").read_text().replace("entities: {} ", "entities: {cube: block} ")
    (out / "objects.yaml").write_text(catalog)
    robot = load_robot_description(out / "robot.yaml")
    grounder = Grounder(
        robot, load_object_catalog(out / "objects.yaml"), load_thresholds(out / "thresholds.yaml"), 50.0
    )
    names = robot.required_joints
    cube = Pose(grounder.twin.compute(names, np.zeros(len(names)), {}).ee_position.copy(), np.array([1.0, 0, 0, 0]))
    values = []
    for k in range(40):
        fingers = [0.02, -0.02] if k < 20 else [0.02, -0.04]
        state = RobotState(k / 50, names, np.array([0.0] * 6 + fingers), object_poses={"cube": cube})
        values.append(grounder.step(state).values)
    assert values[19]["object_grasped"] and not values[19]["object_released"] and values[20]["object_released"]


def test_two_slides_at_the_hand_are_a_parallel_grippers_fingers_whatever_their_names(tmp_path, capsys):
    """Menagerie's Trossen WidowX AI names its fingers' slides `right_carriage_joint` and `left_carriage_joint`,
    coupled by nothing. Named like no finger, the right carriage was a 7th arm joint, the gripper `none`, and the
    left carriage another arm. Two slides on sibling bodies along parallel axes, nothing moving below them, are a
    two-finger gripper, each finger on the side its name says; the closing direction is measured."""
    code, out = _init(tmp_path, 6, "carriages")
    assert code == 0
    printed = capsys.readouterr().out
    assert "arm: 6 joints from base_link to hand; gripper: two_fingers (right_carriage_joint, left_carriage_joint)" in (
        printed
    )
    assert "not watched" not in printed
    robot = load_robot_description(out / "robot.yaml")
    assert robot.arm_joints == tuple(f"joint{i}" for i in range(1, 7))
    gripper = robot.gripper
    assert gripper.kind is GripperKind.TWO_FINGERS
    assert gripper.finger_bodies == ("carriage_left", "carriage_right") and gripper.hand_bodies == ("hand",)
    assert gripper.closed_past == (ClosedPast(pytest.approx(0.044 - 0.1 * 0.044), False),) * 2  # measured
    assert robot.ignored_joints == {"drawer_slide"} and not robot.other_arms
    assert robot.grasp_offset == pytest.approx([0.0, 0.0, 0.06])  # midway between the open pads


def test_a_second_joint_of_a_body_on_the_arm_is_no_other_arm(tmp_path, capsys):
    """An MJCF body may hang by several joints (a shoulder of two hinges; TidyBot's base, on two slides and a hinge).
    Each joint but the chain's own was taken for a branch off the arm, so the body was another arm of its own, and
    a description naming the watched arm's own body under other_arms does not load."""
    shoulder = '<joint name="joint2" axis="0 1 0" range="-2.5 2.5" actuatorfrcrange="-80 80"/>'
    text = arm_mjcf(4, "two_fingers").replace(shoulder, shoulder + '<joint name="joint2b" axis="1 0 0" range="-1 1"/>')
    code, out = _init_text(tmp_path, text)
    assert code == 0
    assert "not watched" not in capsys.readouterr().out
    robot = load_robot_description(out / "robot.yaml")
    assert not robot.other_arms and robot.gripper.joints == ("finger_left_joint", "finger_right_joint")
