"""Robots unlike the workcell, end to end (issue 14): three URDF robots, a 7-joint arm with a two-finger gripper
and package:// collision meshes, a 6-joint arm with no gripper, and a 6-joint arm whose single gripper joint
(mimic fingers) comes on its own JointState topic at half the rate; and an MJCF robot, the 6-joint arm whose
fingers an equality couples, described by `robot init --mjcf` and the edits a user makes. For each, a bag written with rosbags
(`BagWriter`) scripts a grasp, an unreleased drop, a joint-limit breach and an encoder jump; replay and the
live estimator and monitor nodes (each its own process, fed by `bag_player` in lockstep with the bag's
log times) must both give exactly the events the script implies.

The script, at 50 Hz from T0 (frame k at T0 + k / 50 s), joint1 at 2.4 rad throughout but for the breach:
- frames 5-9: the gripper closes on the cube at the grasp point (0.004 per gripper message, under its
  velocity limit); the debounced grasp follows.
- from DROP_AT: the cube slips out of the closed gripper (0.05 m per frame, its first step already beyond
  gripper clearance) and comes to rest 0.2 m away: an unreleased drop, so `drop_only_when_released` opens
  on the drop frame (the falling edge of the debounced grasp) and recovers on the next (the cube has left
  the gripper; a recovery holding on the opening frame closes the episode on the next, docs/semantics.md).
  The cube then settles well within the timeout.
- BREACH: joint1 ramps by 0.03 rad per frame (1.5 rad/s, under its 2 rad/s) beyond its 2.5 rad limit and
  its 1 % tolerance (2.55) and back: `joint_positions_within_limits` opens on the first frame beyond, and
  recovers on the first frame back within.
- JUMP_AT: joint2 reads 1.5 rad for one frame (an encoder glitch): two jumps, out and back, so
  `no_joint_position_jump` opens on the glitch frame and recovers two frames later.
The arm without a gripper runs the same script (the cube slides away from its tool): only the joint events.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml
from mjcf_robots import write_mjcf
from urdf_robots import OBJECTS, description, write_robot

from safety_monitor.enums import EventKind, IssueKind
from safety_monitor.frames import Pose
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagWriter
from safety_monitor.pipeline.assemble import StreamMapping
from safety_monitor.replay.score import BagResult, ReplayConfig, score_bag
from safety_monitor.settings import load_settings

RATE = 50.0
T0 = 10.0
FRAMES = 130
BASE_J1 = 2.4  # joint1 (about the vertical arm's own axis: the grasp point stays put) sits near its limit
CLOSE_AT, DROP_AT, BREACH, JUMP_AT = 5, 45, (80, 7, 3), 110  # breach: start, ramp frames, frames held
SLIDE = np.array([0.8, 0.0, -0.6])  # the drop's direction (unit): out between the fingers and down
SLIDE_STEP, SLIDE_STEPS = 0.05, 4  # m per frame: the first step is beyond gripper clearance of every gripper body
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
GRASP_PERSISTENCE = round(0.25 * RATE)  # thresholds.yaml grasp_persistence, in frames


@dataclass(frozen=True)
class Robot:
    n_joints: int
    gripper: str  # urdf_robots' kind
    mesh: bool
    closed: float | None  # gripper joint positions
    opened: float | None
    own_topic: bool  # the gripper on /gripper/joint_states at half the rate
    mjcf: bool = False  # the MJCF twin of the arm, described by `robot init --mjcf` and a user's edits


ROBOTS = {
    "seven_joint_two_fingers_meshes": Robot(7, "two_fingers", True, 0.02, 0.04, False),
    "six_joint_no_gripper": Robot(6, "none", False, None, None, False),
    "six_joint_one_joint_gripper_topic": Robot(6, "one_joint", False, 0.02, 0.0, True),
    "six_joint_mjcf_equality_gripper": Robot(6, "one_joint", False, 0.02, 0.0, False, mjcf=True),
}
GRIPPER_TOPIC = "/gripper/joint_states"


def t_of(k: int) -> float:
    return T0 + k / RATE


def joint1_at(k: int) -> float:
    start, ramp, held = BREACH
    up = min(max(k - start + 1, 0), ramp)
    down = min(max(k - (start + ramp + held) + 1, 0), ramp)
    return BASE_J1 + 0.03 * (up - down)


def gripper_at(robot: Robot, k: int) -> float:
    """Closing from CLOSE_AT by 0.004 per gripper message (every other frame on its own topic)."""
    steps = (k - CLOSE_AT) // 2 + 1 if robot.own_topic else k - CLOSE_AT + 1
    move = min(max(steps, 0) * 0.004, abs(robot.closed - robot.opened))
    return robot.opened + np.sign(robot.closed - robot.opened) * move


def cube_at(k: int, grasp: np.ndarray) -> np.ndarray:
    return grasp + SLIDE * SLIDE_STEP * min(max(k - DROP_AT + 1, 0), SLIDE_STEPS)


def breach_frames() -> tuple[int, int]:
    """The first frame beyond joint1's limit and tolerance, and the first frame back within."""
    beyond = [k for k in range(FRAMES) if joint1_at(k) > 2.5 + 0.01 * 5.0]
    return beyond[0], beyond[-1] + 1


def expected_events(robot: Robot) -> list[tuple[str, str, int]]:
    """(property, kind, frame) the script implies, in the order the monitor reports them."""
    out = []
    if robot.gripper != "none":
        dropped = DROP_AT + GRASP_PERSISTENCE - 1  # the raw grasp is lost on DROP_AT, debounced over 12 frames
        out += [("drop_only_when_released", "opened", dropped), ("drop_only_when_released", "recovered", dropped + 1)]
    first, back = breach_frames()
    out += [("joint_positions_within_limits", "opened", first), ("joint_positions_within_limits", "recovered", back)]
    out += [("no_joint_position_jump", "opened", JUMP_AT), ("no_joint_position_jump", "recovered", JUMP_AT + 2)]
    return out


def mapping(robot: Robot) -> dict:
    """The topic mapping, one file for replay and the nodes: no wrist sensor, and the gripper's own topic by its
    relative name, as a node in the robot's namespace takes it (replay resolves it under the root namespace,
    where the bag recorded it)."""
    return {"wrench": None, **({"gripper_joint_states": GRIPPER_TOPIC.lstrip("/")} if robot.own_topic else {})}


def write_setup(folder: Path, robot: Robot) -> tuple[Path, Path]:
    """robot.yaml (with its URDF) and the nodes' parameter file (replay reads it too), with its topics_file."""
    if robot.mjcf:
        description = _mjcf_description(folder, robot)
    else:
        description = write_robot(folder / "robot", robot.n_joints, robot.gripper, robot.mesh)
    topics = folder / "topics.yaml"
    topics.write_text(yaml.safe_dump(mapping(robot)))
    params = folder / "nodes.yaml"
    settings = {
        "config_dir": str(description),
        "topics_file": str(topics),
        "control_rate_hz": RATE,
        "diagnostics_period_s": 0.1,  # the nodes' diagnostics pace the player's quiet periods
    }
    params.write_text(yaml.safe_dump({"/**": {"ros__parameters": settings}}))
    return description, params


def _mjcf_description(folder: Path, robot: Robot) -> Path:
    """robot.yaml as `robot init --mjcf` writes it, with what docs/your_robot.md has the user add: the grasp
    centre, where the gripper holds the cube, velocity limits (an MJCF has none), the drawer, table and cube."""
    from safety_monitor.cli import main

    model = write_mjcf(folder / "model", robot.n_joints, robot.gripper)
    assert main(["robot", "init", "--mjcf", str(model), "--out", str(folder / "robot")]) == 0
    path = folder / "robot" / "robot.yaml"
    doc = yaml.safe_load(path.read_text())
    mine = description(robot.n_joints, robot.gripper)
    doc["robot"]["grasp_point"] = mine["robot"]["grasp_point"]
    doc["robot"]["gripper"]["closed_above"] = mine["robot"]["gripper"]["closed_above"]
    doc["joint_limits"] = {j: {"velocity": 2.0} for j in doc["robot"]["arm_joints"]} | {
        "gripper_joint": {"velocity": 0.2}
    }
    doc["ignored_joints"].remove("drawer_slide")
    doc |= {k: mine[k] for k in ("fixtures", "static", "objects")}
    path.write_text(yaml.safe_dump(doc))
    (folder / "robot" / "objects.yaml").write_text(yaml.safe_dump(OBJECTS))
    return path


def write_bag(path: Path, description: Path, robot: Robot) -> None:
    g = load_default_grounder(RATE, description)
    names = g.robot.required_joints  # arm, gripper joint(s), drawer_slide
    start = dict.fromkeys(names, 0.0) | {"joint1": BASE_J1}
    start |= dict.fromkeys(g.robot.gripper.joints, robot.opened)
    grasp = g.twin.compute(names, np.array([start[n] for n in names]), {}).ee_position.copy()
    with BagWriter(path) as bag:
        for k in range(FRAMES):
            t = t_of(k)
            q = dict(start, joint1=joint1_at(k))
            if k == JUMP_AT:
                q["joint2"] = 1.5
            q |= dict.fromkeys(g.robot.gripper.joints, 0.0 if robot.gripper == "none" else gripper_at(robot, k))
            velocity = dict.fromkeys(names, 0.0) | {"joint1": (joint1_at(k) - joint1_at(k - 1)) * RATE}
            bag.write_pose("/objects/cube/pose", t - 0.004, Pose(cube_at(k, grasp), IDENTITY))
            main = [n for n in names if not (robot.own_topic and n in g.robot.gripper.joints)]
            if robot.own_topic and k % 2 == 0:
                gripper = g.robot.gripper.joints
                bag.write_joint_state(
                    GRIPPER_TOPIC,
                    t - 0.002,
                    gripper,
                    [q[n] for n in gripper],
                    [0.0] * len(gripper),
                    [0.0] * len(gripper),
                )
            bag.write_joint_state(
                "/joint_states", t, main, [q[n] for n in main], [velocity[n] for n in main], [0.0] * len(main)
            )


@dataclass(frozen=True)
class Case:
    robot: Robot
    folder: Path
    bag: Path
    params: Path
    replayed: BagResult


@pytest.fixture(scope="module", params=list(ROBOTS))
def case(request, tmp_path_factory) -> Case:
    robot = ROBOTS[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    description, params = write_setup(folder, robot)
    bag = folder / "bag"
    write_bag(bag, description, robot)
    config = ReplayConfig(
        robot=str(description), mapping=StreamMapping.parse(str(folder / "topics.yaml")), rate_hz=RATE
    )
    replayed = score_bag(bag, config.with_settings(load_settings(params)))
    assert replayed.ok, replayed.error
    return Case(robot, folder, bag, params, replayed)


def _keyed(events) -> list[tuple[str, str, int]]:
    return [(e["property"], e["kind"], e["frame"]) for e in events if e["kind"] in ("opened", "recovered")]


def test_replay_gives_exactly_the_scripted_events(case):
    replayed = case.replayed
    assert replayed.frames == FRAMES and not replayed.warnings
    assert "wrench" not in replayed.stale_by_stream and "no_excess_wrench" in replayed.not_applicable  # no sensor
    assert replayed.trace.outcome("no_excess_wrench").blind_frames == 0
    events = [m.event_fields(e) for e in replayed.trace.events]
    assert _keyed(events) == expected_events(case.robot)
    for e in events:
        if e["kind"] in ("opened", "recovered"):
            assert e["t"] == pytest.approx(t_of(e["frame"]))
    runs = replayed.timeline.to_json()["runs"]
    assert not any(v for *_, v in runs["object_released"])  # the drop was no release
    jumps = [i for i in replayed.issue_examples if i.kind is IssueKind.JOINT_JUMP]
    assert replayed.issues == {IssueKind.JOINT_JUMP: 2} and "joint2 by 1.5" in jumps[0].detail  # out, and back


def test_the_replay_summary_names_the_properties_this_robot_cannot_ground(case, capsys):
    from safety_monitor.cli import main

    folder = case.folder
    args = ["--robot", folder / "robot" / "robot.yaml", "--topics", folder / "topics.yaml", "--params", case.params]
    assert main(["replay", str(case.bag), *map(str, args), "--quiet", "--resamples", "0"]) == 0
    line = [t for t in capsys.readouterr().out.splitlines() if t.startswith("not applicable to this robot")]
    assert len(line) == 1 and f"not checked: {', '.join(sorted(case.replayed.not_applicable))} (why:" in line[0]
    assert "no_excess_wrench" in line[0]  # no wrist sensor on any of them
    assert ("drop_only_when_released" in line[0]) == (case.robot.gripper == "none")


def test_live_nodes_in_separate_processes_give_the_replayed_events(case):
    pytest.importorskip("rclpy")
    import bag_player

    robot = case.robot
    inputs = ["/joint_states", "/objects/cube/pose", *([GRIPPER_TOPIC] if robot.own_topic else [])]
    frames, log = bag_player.play(case.bag, case.folder / "live", case.params, estimator=True, inputs=inputs)
    live = bag_player.logged_events(log)
    assert frames == FRAMES
    assert live == [m.event_fields(e) for e in case.replayed.trace.events]
    assert _keyed(live) == expected_events(robot)
    assert {e["property"] for e in live if e["kind"] == EventKind.OPENED} == {p for p, *_ in expected_events(robot)}
