"""A mobile manipulator (`mjcf_robots.mobile_mjcf`) whose base drives past a table: the base's pose in the world
frame comes from TF (`world_frame` in the topic mapping), the twin places the robot there each frame, and the
table and the cube stay in the world.

The bags, at 25 Hz: /tf_static map -> odom (odom 0.5 m behind map's origin), /tf odom -> base_link every frame
(the base drives along x at 0.3 m/s, map x from 0 to 3 m: past the table, x 1.2 to 1.8), /tf map -> cube_link
(the cube resting on the table, as a localised perception system publishes it), and /joint_states with joint1 at
+pi/2 (the arm reaching sideways over the table's side of the path). Clean: the arm stays raised, its hand 0.4 m
above the table top. Contact: the arm is lowered before the table and raised after it, so its forearm hits the
table's side and slides along its top for 2 s, far longer than the forbidden-contact tolerance (1 s)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from mjcf_robots import MOBILE_JOINTS, mobile_mjcf, write_mobile_robot

from safety_monitor.enums import EventKind, IssueKind
from safety_monitor.errors import GroundingError, SourceError
from safety_monitor.frames import BASE_POSE, JointSample, Pose
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.grounding.thresholds import BaseJump
from safety_monitor.io.bag import BagWriter
from safety_monitor.pipeline.assemble import FrameAssembler, StreamMapping
from safety_monitor.pipeline.estimator import Estimator
from safety_monitor.pipeline.tf import ROBOT, Transform, TransformTree
from safety_monitor.replay.score import ReplayConfig, score_bag

RATE = 25.0
T0 = 5.0
FRAMES = 250
SPEED = 0.3  # m/s along map x
ODOM = np.array([0.5, 0.0, 0.0])  # map -> odom: odom's origin in map
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
JOINTS = MOBILE_JOINTS
RAISED, LOWERED = (math.pi / 2, -0.8, 0.8, 0.0), (math.pi / 2, 0.0, 0.6, 0.0)
LOWER_AT, RAISE_AT, RAMP = 50, 175, 10  # the contact run's arm: lowered over frames 50-60, raised over 175-185
CUBE = Pose(np.array([1.5, 0.85, 0.52]), IDENTITY)  # on the table, in map
GEOMETRIC = ("forbidden_contact", "forbidden_contact_sustained", "object_grasped")  # a few the twin decides
LIMITS = ("joint_position_out_of_limits", "joint_position_jump")  # the joints' alone


def write_setup(folder: Path, base: str = "free", world_frame: str = "map") -> tuple[Path, StreamMapping]:
    """robot.xml, robot.yaml and objects.yaml in `folder`, and the topic mapping (`world_frame` '': the base's
    pose ignored, objects chained to the base frame, the way a fixed base is described)."""
    robot = write_mobile_robot(folder, base)
    mapping = StreamMapping(wrench=None, object_frames={"cube": "cube_link"}, world_frame=world_frame)
    return robot, mapping


def base_at(k: int) -> Pose:
    """The base's pose in odom at frame k."""
    return Pose(np.array([SPEED * k / RATE, 0.0, 0.0]) - ODOM, IDENTITY)


def arm_at(k: int, contact: bool) -> np.ndarray:
    share = min(max((k - LOWER_AT) / RAMP, 0.0), 1.0) - min(max((k - RAISE_AT) / RAMP, 0.0), 1.0)
    share = share if contact else 0.0
    jitter = 1e-5 * math.sin(k)  # encoders are never bit-identical frame to frame (else: a frozen driver)
    return (1 - share) * np.array(RAISED) + share * np.array(LOWERED) + jitter


def write_bag(path: Path, contact: bool, lost: range = range(0), moved: Callable[[int], Pose] = base_at) -> None:
    """The run; `lost`: frames without the odom -> base_link transform (odometry silent); `moved`: the base's pose
    in odom as odometry gives it at frame k (a localisation that jumps)."""
    with BagWriter(path) as bag:
        bag.write_tf("/tf_static", [("map", "odom", Pose(ODOM, IDENTITY), 0.0)], log_t=T0 - 0.1)
        for k in range(FRAMES):
            t = T0 + k / RATE
            if k not in lost:
                bag.write_tf("/tf", [("odom", "base_link", moved(k), t - 0.002)])
            bag.write_tf("/tf", [("map", "cube_link", CUBE, t - 0.004)])
            bag.write_joint_state("/joint_states", t, JOINTS, arm_at(k, contact), np.zeros(len(JOINTS)))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mobile")
    robot, mapping = write_setup(folder / "robot")
    for name, contact, lost in (("clean", False, range(0)), ("contact", True, range(0)), ("lost", True, range(70, 80))):
        write_bag(folder / name, contact, lost)
    return folder, robot, mapping


def _score(folder: Path, bag: str, robot: Path, mapping: StreamMapping):
    result = score_bag(folder / bag, ReplayConfig(robot=str(robot), mapping=mapping))
    assert result.ok and result.frames == FRAMES, result.error
    return result


def _opened(result) -> list[tuple[str, int]]:
    return [(e.property, e.frame) for e in result.trace.events if e.kind is EventKind.OPENED]


def test_a_base_driving_past_the_table_raises_no_contact_alarm(runs):
    folder, robot, mapping = runs
    result = _score(folder, "clean", robot, mapping)
    assert _opened(result) == [] and not result.warnings and not result.issues
    runs_of = result.timeline.to_json()["runs"]
    assert runs_of["forbidden_contact"] == [[0, FRAMES - 1, False]]  # decided on every frame: the base placed
    assert result.stale_by_stream == {}


def test_an_arm_touching_the_table_is_found_only_with_the_base_placed(runs):
    folder, robot, mapping = runs
    placed = _score(folder, "contact", robot, mapping)
    ((prop, frame),) = _opened(placed)
    tolerance = round(1.0 * RATE)  # thresholds.yaml forbidden_contact_tolerance: fires on the frame after it
    table_from = math.ceil((1.2 - 0.04) / SPEED * RATE)  # the hand, 4 cm either side of the arm, meets x 1.2
    assert prop == "no_forbidden_contact" and table_from + tolerance <= frame <= table_from + tolerance + 3
    assert {"table", "hand"} <= set(placed.trace.events[0].objects)  # the hand leads into the table
    # the same bag with the base pose ignored: the robot stays at the model's origin, 1.2 m from the table
    _, fixed = write_setup(folder / "fixed_robot", world_frame="")
    assert _opened(_score(folder, "contact", folder / "fixed_robot" / "robot.yaml", fixed)) == []


@pytest.mark.parametrize("base", ["free", "fixed"])
def test_a_base_not_placed_stands_on_its_floor_and_an_arm_on_the_floor_is_a_contact(runs, tmp_path, base):
    """Without world_frame the twin keeps the base where the model puts it, its wheels on the floor: those are no
    contact (they were a forbidden contact on every frame, an alarm on a clean run), whether the base hangs from a free
    joint or is fixed to the world (its wheels turn on joints of their own); the arm reaching down to the floor is one."""
    folder, _, _ = runs
    robot, fixed = write_setup(tmp_path, base, world_frame="")
    clean = _score(folder, "clean", robot, fixed)
    assert _opened(clean) == [] and clean.timeline.to_json()["runs"]["forbidden_contact"] == [[0, FRAMES - 1, False]]
    twin = load_default_grounder(RATE, robot, wrench_sensor=False).twin
    assert not twin.compute(JOINTS, np.array(RAISED), {}).gaps.get("arm")
    assert twin.compute(JOINTS, np.array([0.0, 1.4, 0.0, 0.0]), {}).gap("arm", "environment") < 0.0


def test_a_base_pose_lost_makes_the_geometry_unknown_and_is_said(runs):
    """Odometry silent for 10 frames (0.4 s, beyond the 0.25 s pose age limit) during the contact run, before the
    table: the geometry's predicates are unknown from the frame the base pose went stale until the estimators
    have gathered evidence again (warm-up), the joint limits stay decided, `base_pose` is a stale stream, and no
    violation opens that the run without the gap lacks."""
    folder, robot, mapping = runs
    result = _score(folder, "lost", robot, mapping)
    assert _opened(result) == _opened(_score(folder, "contact", robot, mapping))
    assert set(result.stale_by_stream) == {BASE_POSE}
    runs_of = result.timeline.to_json()["runs"]
    unknown = [(lo, hi) for lo, hi, v in runs_of["forbidden_contact"] if v is None]
    ((first, last),) = unknown
    stale_from = 70 + math.floor(0.25 * RATE)  # the last base pose, at frame 69, older than 0.25 s
    assert first in (stale_from, stale_from + 1) and last > 80
    assert runs_of["joint_position_out_of_limits"] == [[0, FRAMES - 1, False]]


def _turned(pose: Pose, yaw: float) -> Pose:
    return Pose(pose.position, np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]))


# odometry placing the base elsewhere from frame 70 on, and the frame of the last pose that jumps: a glitch, 1 m ahead
# for five frames (its way back jumps too), and a reset, 2 m aside and turned round
JUMPS = {
    "glitch": (lambda k: Pose(base_at(k).position + [1.0, 0.0, 0.0], IDENTITY) if 70 <= k < 75 else base_at(k), 75),
    "reset": (
        lambda k: _turned(Pose(base_at(k).position - [0.0, 2.0, 0.0], IDENTITY), math.pi) if k >= 70 else base_at(k),
        70,
    ),
}


@pytest.mark.parametrize("how", JUMPS)
def test_a_base_pose_that_jumps_is_said_once_and_the_geometry_unknown_until_it_steps_plausibly_again(runs, how):
    """The localisation places the base metres away from one frame to the next: no drive does that, so one
    base_jump issue is said, and the geometry's predicates are unknown from that frame until the poses have
    stepped plausibly for trust_after_s (0.5 s), then for the grounder's warm-up, as after a lost base pose;
    the joint limits stay decided, and the clean run stays clean."""
    folder, robot, mapping = runs
    moved, last_jump = JUMPS[how]
    write_bag(folder / how, contact=False, moved=moved)
    result = _score(folder, how, robot, mapping)
    assert result.issues == {IssueKind.BASE_JUMP: 1} and _opened(result) == []
    trusted = last_jump + math.ceil(0.5 * RATE)  # the first pose 0.5 s after the last jump
    warmup = load_default_grounder(RATE, robot, wrench_sensor=False, mobile_base=True).warmup_frames
    runs_of = result.timeline.to_json()["runs"]
    assert runs_of["forbidden_contact"] == [
        [0, 69, False],
        [70, trusted + warmup - 1, None],
        [trusted + warmup, FRAMES - 1, False],
    ]
    assert result.stale_by_stream == {BASE_POSE: trusted - 70}
    assert runs_of["joint_position_out_of_limits"] == [[0, FRAMES - 1, False]]


def _assembler(rule: BaseJump = BaseJump()) -> FrameAssembler:
    return FrameAssembler(JOINTS, mapping=StreamMapping(wrench=None, world_frame="map"), base_jump=rule)


def _frame(assembler: FrameAssembler, k: int):
    return assembler.on_joint_sample(JointSample(JOINTS, arm_at(k, False), None, None, 1.0 + k / RATE))


@pytest.mark.parametrize(("linear", "angular"), [(1, 0), (0, 1)])
@pytest.mark.parametrize("over", [False, True])
def test_a_base_step_just_beyond_a_drive_is_a_jump_and_one_just_within_is_none(linear, angular, over):
    """The defaults: a step over one 25 Hz frame may move 0.05 m + 2 m/s x 0.04 s and turn 0.1 rad + 3 rad/s x
    0.04 s; a hair more is a jump (said, the base unusable until its poses have stepped plausibly for 0.5 s)."""
    assembler, dt, hair = _assembler(), 1 / RATE, 1e-6 if over else -1e-6
    reach, turn = (0.05 + 2.0 * dt + hair) * linear, (0.1 + 3.0 * dt + hair) * angular
    poses = [base_at(0)] + [_turned(Pose(base_at(0).position + [reach, 0.0, 0.0], IDENTITY), turn)] * 2
    stale, issues = [], []
    for k in range(20):
        assembler.on_base_sample(poses[min(k, 2)], 1.0 + (k - 0.1) / RATE)  # then the pose stays put
        frame = _frame(assembler, k)
        stale.append(BASE_POSE in frame.stale)
        issues += frame.issues
    assert [(i.kind, i.stream, i.t) for i in issues] == (
        [(IssueKind.BASE_JUMP, BASE_POSE, 1.0 + 0.9 / RATE)] if over else []
    )
    # jumped at stamp frame 0.9; trusted at frame 13.9's pose, 0.52 s on (12.9's is 0.48 s on)
    assert stale == ([False] + [True] * 13 + [False] * 6 if over else [False] * 20)


def test_a_base_jumping_about_is_said_once_and_trusted_once_its_poses_agree_however_soon():
    """Poses flickering between two places (a TF given two parents) stay unusable, said once; with trust_after_s 0
    the first plausible step restores the pose, but never before a frame had it unusable: a jump and its
    recovery between two frames would otherwise join the grounder's evidence across the jump."""
    assembler, far = _assembler(), Pose(np.array([3.0, 0.0, 0.0]), IDENTITY)
    stale, issues = [], []
    for k in range(30):
        assembler.on_base_sample(far if k % 2 and k < 15 else base_at(k), 1.0 + (k - 0.1) / RATE)
        frame = _frame(assembler, k)
        stale.append(BASE_POSE in frame.stale)
        issues += frame.issues
    assert [i.kind for i in issues] == [IssueKind.BASE_JUMP]
    assert stale == [False] + [True] * 26 + [False] * 3  # the last jump at frame 14 (back), plausible 0.5 s from 27 on
    quick = _assembler(BaseJump(trust_after_s=0.0))
    quick.on_base_sample(base_at(0), 1.0 - 0.1 / RATE)
    assert BASE_POSE not in _frame(quick, 0).stale
    quick.on_base_sample(far, 1.0 + 0.2 / RATE)
    quick.on_base_sample(far, 1.0 + 0.5 / RATE)  # plausible at once: trusted again before the next frame
    assert [i.kind for i in quick.drain_issues()] == [IssueKind.BASE_JUMP]
    assert BASE_POSE in _frame(quick, 1).stale and BASE_POSE not in _frame(quick, 2).stale


def test_a_fast_drive_and_turn_with_jittered_stamps_is_no_jump(tmp_path):
    """1.9 m/s and 2.9 rad/s, just under the default speeds, with stamps jittered by 5 ms either way (a step's
    time off by a quarter): no issue, the base pose never unusable, the geometry decided after the warm-up."""
    robot, mapping = write_setup(tmp_path)
    grounder = load_default_grounder(RATE, robot, wrench_sensor=False, mobile_base=True)
    stage = Estimator(grounder, mapping)
    stage.transforms([("map", "odom", Pose(ODOM, IDENTITY), 0.0)])
    for k in range(grounder.warmup_frames + 5):
        t = 1.0 + k / RATE
        drive = _turned(Pose(np.array([1.9 * k / RATE, 0.0, 0.0]), IDENTITY), 2.9 * k / RATE)
        jitter = 0.005 * (-1) ** k
        steps = [
            stage.transforms([("odom", "base_link", drive, t - 0.01 + jitter), ("map", "cube_link", CUBE, t - 0.01)])
        ]
        steps.append(stage.joints(JointSample(JOINTS, arm_at(k, False), None, None, t)))
        assert [i for s in steps for i in s.issues] == [] and BASE_POSE not in steps[-1].sample.stale
    assert not steps[-1].sample.unknown & {*GEOMETRIC, *LIMITS}


def test_the_estimator_places_the_base_from_tf_and_refuses_a_nan_base_pose(tmp_path):
    robot, mapping = write_setup(tmp_path)
    grounder = load_default_grounder(RATE, robot, wrench_sensor=False, mobile_base=True)
    stage = Estimator(grounder, mapping)
    stage.transforms([("map", "odom", Pose(ODOM, IDENTITY), 0.0)])
    stage.transforms([("map", "cube_link", CUBE, 1.0)])

    def frame(k: int, base: Pose | None):
        t = 1.0 + k / RATE
        stage.transforms([("map", "cube_link", CUBE, t)])
        if base is not None:
            step = stage.transforms([("odom", "base_link", base, t)])
            assert not step.issues or base is not base_at(k)
        return stage.joints(JointSample(JOINTS, arm_at(k, False), None, None, t)).sample

    first = frame(0, None)  # no base pose yet
    assert set(GEOMETRIC) <= first.unknown and not set(LIMITS) & first.unknown and BASE_POSE in first.stale
    warmup = grounder.warmup_frames
    warm = [frame(k, base_at(k)) for k in range(1, warmup + 2)]
    assert all(set(GEOMETRIC) <= s.unknown and BASE_POSE not in s.stale for s in warm[:-1])
    assert not warm[-1].unknown & {*GEOMETRIC, *LIMITS}  # the estimators gathered evidence since the base came
    bad = Pose(np.array([np.nan, 0.0, 0.0]), IDENTITY)  # dropped, said; the last pose ages out as any pose does
    step = stage.transforms([("odom", "base_link", bad, 1.0 + (warmup + 2) / RATE)])
    assert [(i.kind, i.stream) for i in step.issues] == [(IssueKind.NAN, BASE_POSE)]
    after = [frame(k, None) for k in range(warmup + 2, warmup + 12)]
    fresh = [BASE_POSE not in s.stale and not set(GEOMETRIC) & s.unknown for s in after]
    assert fresh == [True] * 6 + [False] * 4  # the last good pose (frame warmup + 1) is 0.25 s old 6 frames on


def test_the_tf_tree_hands_on_the_base_pose_in_the_world_frame():
    tree = TransformTree("map", {"cube": "cube_link"}, robot="base_link")
    assert tree.update([Transform("map", "odom", Pose(ODOM, IDENTITY), 0.0)]) == []
    ((name, pose, stamp),) = tree.update([Transform("odom", "base_link", base_at(10), 3.0)])
    assert name == ROBOT and stamp == 3.0
    np.testing.assert_allclose(pose.position, [SPEED * 10 / RATE, 0.0, 0.0])
    ((name, pose, _),) = tree.update([Transform("map", "cube_link", CUBE, 3.1)])
    assert name == "cube" and np.allclose(pose.position, CUBE.position)  # in the world, whatever the base does


@pytest.mark.parametrize("base", ["free", "fixed"])
def test_the_twin_places_the_robot_and_its_wheels_drive_on_the_floor(tmp_path, base):
    """The twin adds a free joint to a root fixed to the world (as a URDF's); the base's platform (chassis and
    wheels) touching the floor is no contact, an arm link on the floor is one."""
    robot, _ = write_setup(tmp_path, base)
    grounder = load_default_grounder(RATE, robot, wrench_sensor=False, mobile_base=True)
    twin = grounder.twin
    at = Pose(np.array([1.5, 0.0, 0.0]), IDENTITY)
    raised = twin.compute(JOINTS, np.array(RAISED), {}, base=at)
    assert raised.ee_position[0] == pytest.approx(1.5) and not raised.gaps.get("arm")
    lowered = twin.compute(JOINTS, np.array(LOWERED), {}, base=at)
    assert lowered.gap("arm", "table") < 0.0
    on_floor = twin.compute(JOINTS, np.array([0.0, 1.4, 0.0, 0.0]), {}, base=Pose(np.zeros(3), IDENTITY))
    assert on_floor.gap("arm", "environment") < 0.0  # the arm reaching down to the floor


def test_a_base_the_twin_cannot_place_and_a_mismatched_mapping_are_refused_on_one_line(tmp_path):
    robot, mapping = write_setup(tmp_path / "planar", "planar")
    with pytest.raises(GroundingError, match=r"root body 'base_link' .* hangs from base_x, base_y, base_yaw") as err:
        load_default_grounder(RATE, robot, wrench_sensor=False, mobile_base=True)
    assert "\n" not in str(err.value)
    robot, mapping = write_setup(tmp_path / "free")
    fixed = load_default_grounder(RATE, robot, wrench_sensor=False)
    with pytest.raises(SourceError, match="world_frame but the grounder was built with mobile_base=False"):
        Estimator(fixed, mapping)
    mobile = load_default_grounder(RATE, robot, wrench_sensor=False, mobile_base=True)
    with pytest.raises(SourceError, match="world_frame '/base_link' is the base frame"):
        Estimator(mobile, StreamMapping(wrench=None, world_frame="/base_link"))


def test_robot_init_takes_the_whole_mobile_robot_and_says_how_to_place_it(tmp_path, capsys):
    """The arm hangs from the mast, a body fixed to the chassis: the robot is still all the free joint moves (its
    chassis and wheels are the robot's, not the environment's), and the description written places it."""
    from safety_monitor.cli import main

    (tmp_path / "robot.xml").write_text(mobile_mjcf())
    assert main(["robot", "init", "--mjcf", str(tmp_path / "robot.xml"), "--out", str(tmp_path / "mine")]) == 0
    assert "arm: 3 joints from base_link to hand" in capsys.readouterr().out
    text = (tmp_path / "mine" / "robot.yaml").read_text()
    assert "  base_body: base_link   #" in text and "as world_frame in the topic mapping" in text
    grounder = load_default_grounder(RATE, tmp_path / "mine" / "robot.yaml", wrench_sensor=False, mobile_base=True)
    twin = grounder.twin
    wheel = twin.model.body("wheel_left").id
    assert twin.entities[twin.body_entity[wheel]] == "arm"
    placed = twin.compute(grounder.robot.required_joints, np.array(RAISED), {}, base=base_at(0))
    assert placed.ee_position[0] == pytest.approx(-ODOM[0])


def test_a_model_that_fuses_static_bodies_keeps_the_table_it_names(tmp_path):
    """Menagerie's TIAGo compiles with fusestatic: a table beside it (a body without joints) would be fused into the
    world body, unnamed, so robot.yaml could not name it as static; the twin keeps every body."""
    robot, _ = write_setup(tmp_path)
    model = tmp_path / "robot.xml"
    model.write_text(model.read_text().replace('autolimits="true"', 'autolimits="true" fusestatic="true"'))
    twin = load_default_grounder(RATE, robot, wrench_sensor=False, mobile_base=True).twin
    assert twin.entities[twin.body_entity[twin.model.body("table").id]] == "table"


def test_robot_init_takes_a_base_on_planar_joints_for_the_robot_and_says_the_twin_cannot_place_it(tmp_path, capsys):
    """Menagerie's TidyBot hangs its base from the world by two slides and a hinge: three joints of one body. Each
    was taken for a branch off the arm's chain, so the base was its own other arm and the description did not load
    (`other_arms: 'base_link' holds the watched arm`), and the first slide was an arm joint. The base's joints are
    ignored, the robot is the base's subtree, and the CHECK says such a base stays where the MJCF puts it."""
    from safety_monitor.cli import main

    (tmp_path / "robot.xml").write_text(mobile_mjcf("planar"))
    assert main(["robot", "init", "--mjcf", str(tmp_path / "robot.xml"), "--out", str(tmp_path / "mine")]) == 0
    printed = capsys.readouterr().out
    assert "arm: 3 joints from base_link to hand" in printed and "not watched" not in printed
    text = (tmp_path / "mine" / "robot.yaml").read_text()
    assert "# CHECK: the robot's base hangs from base_x, base_y, base_yaw (slides and a hinge): a mobile base" in text
    grounder = load_default_grounder(RATE, tmp_path / "mine" / "robot.yaml", wrench_sensor=False)
    robot = grounder.robot
    assert robot.base_body == "base_link" and robot.arm_joints == JOINTS[:3] and not robot.other_arms
    assert {"base_x", "base_y", "base_yaw", "wheel_left_joint"} <= robot.ignored_joints
    placed = grounder.twin.compute(robot.required_joints, np.array(RAISED), {})
    assert placed.ee_position[0] == pytest.approx(0.0, abs=1e-6)  # the base where the MJCF puts it, the arm sideways
    assert placed.ee_position[1] > 0.3
