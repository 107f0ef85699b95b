"""Two arms, as a team with a bimanual robot monitors them (docs/your_robot.md, "Two arms"): one description per
arm from `robot init` (the second by `--tip`), one grounder and monitor per arm, both fed the same frames (every
joint of both arms, the same object poses). Each stack sees its own arm's grasps only, touching the other arm is
a forbidden contact in both, and a clean handover raises no alarm in either.

ALOHA's layout is `mjcf_robots.two_arm_mjcf` (two bases of their own, Menagerie's `left/` and `right/` names),
scripted by `two_arm_run`; a shared torso (ROBOTIS's ai_worker) is `mjcf_robots.bimanual_mjcf`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import two_arm_run as script
import yaml
from mjcf_robots import bimanual_mjcf

from safety_monitor.cli import main
from safety_monitor.errors import GroundingError
from safety_monitor.frames import Pose, RobotState
from safety_monitor.grounding.description import load_robot_description
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.grounding.thresholds import load_thresholds
from safety_monitor.grounding.twin import twin_for
from safety_monitor.io.bag import BagWriter
from safety_monitor.monitor.live import SpecSetMonitor
from safety_monitor.pipeline.assemble import StreamMapping
from safety_monitor.pipeline.supervisor import Supervisor
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.settings import MonitorSettings

SPECS = Path(__file__).resolve().parents[1] / "config" / "specs.yaml"


@pytest.fixture(scope="module")
def aloha(tmp_path_factory) -> dict[str, Path]:
    return script.describe(tmp_path_factory.mktemp("aloha"))


@pytest.fixture(scope="module")
def handover() -> script.Run:
    return script.run()


def _watch(description: Path, states) -> tuple[list[dict[str, bool | None]], list[dict]]:
    """One arm's stack over `states` (grounder, then supervisor and monitor, as the nodes chain them): each frame's
    predicate values (None: unknown) and the events."""
    grounder = load_default_grounder(script.RATE, description, wrench_sensor=False)
    supervisor = Supervisor(SpecSetMonitor.from_spec_file(SPECS, history=5000), MonitorSettings())
    frames, events = [], []
    for state in states:
        frame = grounder.step(state)
        values = {p: None if p in frame.unknown else v for p, v in frame.values.items()}
        frames.append(values)
        events += supervisor.frame(values, state.t, frame.frame, frozenset(), state.t, frame.objects).events
    events += supervisor.finish().events
    return frames, [e.event.to_json() for e in events]


@pytest.mark.parametrize("arm", script.ARMS)
def test_each_arms_description_names_the_other_arm(aloha, arm):
    """The other arm's joints are ignored (the frames carry them, the twin places it), and its bodies, from its
    base down, are `other_arm`, told apart from the arm watched."""
    robot = load_robot_description(aloha[arm])
    other = "right" if arm == "left" else "left"
    assert robot.base_body == f"{arm}/base_link" and robot.arm_joints == tuple(f"{arm}/{j}" for j in script.JOINTS)
    assert robot.other_arms == (f"{other}/base_link",)
    assert {f"{other}/waist", f"{other}/right_finger", f"{other}/left_finger"} <= robot.ignored_joints
    assert (
        f'other_arms: ["{other}/base_link"]   # CHECK: the first body of each arm not watched' in aloha[arm].read_text()
    )
    twin = twin_for(robot, load_thresholds(aloha[arm].parent / "thresholds.yaml"))
    entity = {twin.model.body(b).name: twin.entities[e] for b, e in enumerate(twin.body_entity)}
    assert entity[f"{other}/base_link"] == entity[f"{other}/right_finger_link"] == "other_arm"
    assert entity[f"{arm}/base_link"] == "arm" and entity[f"{arm}/right_finger_link"] == "finger_right"
    assert entity["table"] == "table"


def test_a_handover_raises_no_alarm_and_each_stack_sees_its_own_arms_grasp_only(aloha, handover):
    """The right picks the bar, the left takes it and carries it off at once, never still, for longer than the
    settle timeout. Each stack: one grasp, its own hand's, and its release; no contact judged forbidden (the bar
    in the other hand was once the arm touching it, or a moving object hitting the environment); and no
    `released_object_settles` for the right, whose bar went into the other hand (once: the timeout)."""
    for arm in script.ARMS:
        frames, events = _watch(aloha[arm], handover.states)
        assert [e for e in events if e["kind"] == "opened"] == [], arm
        grasped = [k for k, f in enumerate(frames) if f["object_grasped"]]
        assert grasped and set(grasped) <= set(handover.holding[arm]), arm  # its own hand's hold, nothing else
        assert grasped == list(range(grasped[0], grasped[-1] + 1)), arm  # one grasp
        assert [k for k, f in enumerate(frames) if f["object_dropped"]] == [grasped[-1] + 1], arm
        assert frames[grasped[-1] + 1]["object_released"], arm
        assert not any(f["forbidden_contact"] for f in frames), arm
        assert not any(f["settle_timeout"] for f in frames), arm
        assert all(not unknown for f in frames[3:] for unknown in [[p for p, v in f.items() if v is None]]), arm


def _hands_meet(states: tuple[RobotState, ...]) -> list[RobotState]:
    """The right holds its hand out where the handover was; the left's grasp centre comes to 2 cm short of the
    right's (their fingers interlock), stays there 1.5 s and goes home. The bar stands on the table throughout."""
    names, bar = states[0].joint_names, states[0].object_poses["bar"]
    home = dict(zip(names, states[0].joint_position))
    right = {f"right/{j}": v for j, v in script.reach("right", (script.BAR_IN_HAND, 0.0, 0.3), script.FORWARD).items()}
    meet = script.reach("left", (script.BAR_IN_HAND - 0.02, 0.0, 0.3), script.FORWARD)
    keys = [home | right, home | right | {f"left/{j}": v for j, v in meet.items()}]
    path = [keys[0]] * 25
    for a, b, frames in ((0, 1, 25), (1, 1, 75), (1, 0, 25), (0, 0, 25)):
        path += [{n: keys[a][n] + s / frames * (keys[b][n] - keys[a][n]) for n in names} for s in range(1, frames + 1)]
    return [
        RobotState(
            t=1.0 + k / script.RATE,
            joint_names=names,
            joint_position=np.array([q[n] for n in names]),
            object_poses={"bar": bar},
            object_ages={"bar": 0.0},
        )
        for k, q in enumerate(path)
    ]


def test_one_arm_touching_the_other_is_reported_by_both_stacks(aloha, handover):
    """Both stacks report it, about the other arm: once the hands have touched for the tolerance (1 s), until
    they part."""
    states = _hands_meet(handover.states)
    for arm in script.ARMS:
        frames, events = _watch(aloha[arm], states)
        touching = [k for k, f in enumerate(frames) if f["forbidden_contact"]]
        assert touching and touching == list(range(touching[0], touching[-1] + 1)), arm
        assert touching[0] <= 50 and touching[-1] >= 124, arm  # the 1.5 s the hands rest together, and more
        opened = [e for e in events if e["kind"] == "opened"]
        assert [(e["property"], e["frame"]) for e in opened] == [("no_forbidden_contact", touching[0] + 50)], arm
        assert "other_arm" in opened[0]["objects"], arm  # what it was about: this arm's part and the other arm
        assert [e["frame"] for e in events if e["kind"] == "recovered"] == [touching[-1] + 1], arm


def test_on_a_shared_torso_the_other_arm_touching_this_one_is_no_self_contact(tmp_path, capsys):
    """ROBOTIS's ai_worker: both arms hang from the torso, so the other arm was in the robot's subtree, its links
    the arm's, and the left arm resting on it a self-contact nobody judged."""
    (tmp_path / "robot.xml").write_text(bimanual_mjcf())
    assert main(["robot", "init", "--mjcf", str(tmp_path / "robot.xml"), "--out", str(tmp_path / "left")]) == 0
    assert "its bodies, from arm_r_link0 down, are other_arm" in capsys.readouterr().out
    path = tmp_path / "left" / "robot.yaml"
    doc = yaml.safe_load(path.read_text())
    assert doc["other_arms"] == ["arm_r_link0"]
    doc["objects"] = {"cube": {"body": "cube"}}
    path.write_text(yaml.safe_dump(doc))
    kinds = yaml.safe_load((tmp_path / "left" / "objects.yaml").read_text())
    (tmp_path / "left" / "objects.yaml").write_text(yaml.safe_dump(kinds | {"entities": {"cube": "block"}}))
    grounder = load_default_grounder(script.RATE, path, wrench_sensor=False)
    names = grounder.robot.required_joints
    cube = Pose(np.array([0.4, 0.0, 0.02]), np.array([1.0, 0.0, 0.0, 0.0]))
    contact = []
    for k in range(100):  # the left arm turned towards the right and bent onto it for frames 20 to 79
        q = dict.fromkeys(names, 0.0) | {"arm_l_joint1": -np.pi / 2, "arm_l_joint2": 1.0 if 20 <= k < 80 else 0.5}
        state = RobotState(
            t=k / script.RATE,
            joint_names=names,
            joint_position=np.array([q[n] for n in names]),
            object_poses={"cube": cube},
            object_ages={"cube": 0.0},
        )
        frame = grounder.step(state)
        contact.append((frame.values["forbidden_contact"], frame.values["forbidden_contact_sustained"]))
    assert [k for k, (raw, _) in enumerate(contact) if raw] == list(range(20, 80))
    assert [k for k, (_, sustained) in enumerate(contact) if sustained] == list(range(20 + 50, 80))  # after 1 s


def test_another_arm_that_holds_the_watched_one_or_is_misspelt_is_one_line(aloha, tmp_path):
    doc = yaml.safe_load(aloha["left"].read_text())
    doc["mjcf"] = str((aloha["left"].parent / doc["mjcf"]).resolve())
    thresholds = load_thresholds(aloha["left"].parent / "thresholds.yaml")
    for other, message in (
        ("left/shoulder_link", "other_arms: 'left/shoulder_link' holds the watched arm (the end-effector body "),
        ("world", "other_arms: 'world' holds the watched arm (robot.base_body 'left/base_link' is in its subtree)"),
        ("right/base_lnk", "other_arms: body 'right/base_lnk' not found (did you mean 'right/base_link'"),
    ):
        path = tmp_path / "robot.yaml"
        path.write_text(yaml.safe_dump(doc | {"other_arms": [other]}))
        with pytest.raises(GroundingError) as caught:
            twin_for(load_robot_description(path), thresholds)
        assert message in str(caught.value) and "\n" not in str(caught.value)


def test_one_bag_is_scored_once_per_arm_as_the_pure_stacks_score_it(aloha, handover, tmp_path):
    """`safety-monitor replay BAG --robot left/robot.yaml`, then `--robot right/robot.yaml`: the bag's one
    /joint_states carries both arms. Replay's frames dropped the other arm's joints (`unknown_joints`): the
    twin kept that arm where the model draws it, the bar handed to it was never in its hand (the giver's settle
    timer ran out), and with the watched arm at rest the frames were frozen, though the other arm moved."""
    bag = tmp_path / "handover"
    with BagWriter(bag) as writer:
        for state in handover.states:
            names, zeros = list(state.joint_names), [0.0] * len(state.joint_names)
            writer.write_pose("/objects/bar/pose", state.t - 0.004, state.object_poses["bar"])
            writer.write_joint_state("/joint_states", state.t, names, list(state.joint_position), zeros, zeros)
    for arm in script.ARMS:
        config = ReplayConfig(robot=str(aloha[arm]), mapping=StreamMapping(wrench=None), rate_hz=script.RATE)
        result = score_bag(bag, config)
        assert result.ok and result.trace is not None, result.error
        assert result.issues == {} and result.stale_frames == 0, arm
        _, events = _watch(aloha[arm], handover.states)
        replayed = [(e.property, e.kind.value, e.frame) for e in result.trace.events]
        assert replayed == [(e["property"], e["kind"], e["frame"]) for e in events], arm  # no opened among them
        assert result.trace.outcome("released_object_settles").triggers == 1, arm  # each let go of the bar once
        assert sum(o.violations for o in result.trace.outcomes) == 0, arm
