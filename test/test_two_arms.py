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
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagReader, BagWriter
from safety_monitor.monitor.live import SpecSetMonitor
from safety_monitor.pipeline.assemble import StreamMapping
from safety_monitor.pipeline.supervisor import Supervisor
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.settings import MonitorSettings, load_settings

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
        stable = load_thresholds(aloha[arm].parent / "thresholds.yaml").frames(script.RATE).stability_persistence
        unknown = [k for k, f in enumerate(frames) if None in f.values()]
        assert unknown == list(range(len(unknown))) and unknown[-1] < 3 + stable, arm  # the trace's first frames


def test_a_stack_started_as_its_hand_lets_the_bar_go_raises_no_alarm(aloha, handover):
    """The right's stack started late (or its grounder reset when the input restarted: `input_restarted`), 5
    frames before the right hand opens on the bar the left has taken: the grasp may have begun before its first
    frame, so it is unknown, and the opening may be a drop, not an open hand approaching a bar it has not seen
    at rest (a pick without its preconditions). No alarm; the grasp is unknown where it was not yet seen whole."""
    first = 550  # the right's gripper opens on the 6th frame, before the grasp debounce (13 frames) decides
    frames, events = _watch(aloha["right"], handover.states[first : first + 150])
    assert frames[0]["object_grasped_raw"] is True and frames[5]["object_grasped_raw"] is False
    assert [f["object_grasped"] for f in frames[:6]] == [None] * 6
    assert [e for e in events if e["kind"] == "opened"] == []


def test_a_stack_started_just_before_its_pick_raises_no_alarm(aloha, handover):
    """The right's stack started late, just before its hand reaches the bar resting on the table: whether the bar
    was at rest before the first frame is unseen, so `object_stable` (a pick's precondition) is unknown until the
    bar has been seen at rest for the stability persistence, not false. It was false, and the pick opened
    `pick_preconditions` on a clean run."""
    frames, events = _watch(aloha["right"], handover.states[100:400])
    assert frames[0]["object_stable"] is None and True in [f["object_stable"] for f in frames]
    assert [e for e in events if e["kind"] == "opened"] == []


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


ARM_TOPICS = {"left": "/puppet_left/joint_states", "right": "/puppet_right/joint_states"}  # ALOHA's drivers' topics


def _arm_topics_bag(path: Path, states, one_topic: bool) -> None:
    """`states` as ALOHA's drivers publish them, each arm's JointState on its own topic with the same names
    (`waist`, ...: no arm's prefix), the right's 2 ms before the left's; or (`one_topic`) the same readings on one
    /joint_states with the names prefixed, stamped as the left's."""
    with BagWriter(path) as writer:
        for state in states:
            writer.write_pose("/objects/bar/pose", state.t - 0.004, state.object_poses["bar"])
            names, q = list(state.joint_names), list(state.joint_position)
            if one_topic:
                writer.write_joint_state("/joint_states", state.t, names, q, [0.0] * len(q), [0.0] * len(q))
                continue
            for arm, t in (("right", state.t - 0.002), ("left", state.t)):
                mine = [k for k, n in enumerate(names) if n.startswith(f"{arm}/")]
                zeros = [0.0] * len(mine)
                unprefixed = [names[k].removeprefix(f"{arm}/") for k in mine]
                writer.write_joint_state(ARM_TOPICS[arm], t, unprefixed, [q[k] for k in mine], zeros, zeros)


def _arm_topics_mapping(folder: Path) -> Path:
    """The topic mapping both stacks read (relative names, as a node in the robot's namespace takes them): the
    left arm's topic makes the frames, the right's is merged into them by name."""
    topics = folder / "arm_topics.yaml"
    mapping = {
        "joint_states": ARM_TOPICS["left"].lstrip("/"),
        "joint_prefix": "left/",
        "more_joint_states": {ARM_TOPICS["right"].lstrip("/"): {"prefix": "right/"}},
        "wrench": None,
    }
    topics.write_text(yaml.safe_dump(mapping))
    return topics


@pytest.mark.parametrize("scenario", ["handover", "hands_meet"])
def test_each_arms_own_topic_with_its_prefix_scores_as_one_prefixed_topic(aloha, handover, tmp_path, scenario):
    """ALOHA's drivers publish `/puppet_left/joint_states` and `/puppet_right/joint_states`, both named `waist`,
    ...: with a prefix per topic, each arm's stack gets the frames and verdicts of the same readings on one
    /joint_states named `left/waist`, ..., and no input issue."""
    states = handover.states if scenario == "handover" else _hands_meet(handover.states)
    _arm_topics_bag(tmp_path / "two", states, one_topic=False)
    _arm_topics_bag(tmp_path / "one", states, one_topic=True)
    mapping = StreamMapping.parse(str(_arm_topics_mapping(tmp_path)))
    for arm in script.ARMS:
        two = score_bag(tmp_path / "two", ReplayConfig(robot=str(aloha[arm]), mapping=mapping, rate_hz=script.RATE))
        one = score_bag(
            tmp_path / "one",
            ReplayConfig(robot=str(aloha[arm]), mapping=StreamMapping(wrench=None), rate_hz=script.RATE),
        )
        assert two.ok and one.ok, (two.error, one.error)
        assert two.frames == one.frames == len(states) and two.stale_frames == one.stale_frames == 0, arm
        assert two.issues == {} and not two.warnings, (arm, two.issue_examples, two.warnings)
        assert two.timeline.to_json() == one.timeline.to_json(), arm
        events = [(e.property, e.kind.value, e.frame, e.objects) for e in two.trace.events]
        assert events == [(e.property, e.kind.value, e.frame, e.objects) for e in one.trace.events], arm
        if scenario == "hands_meet":  # the verdicts compared are no empty list: the hands met in both stacks
            assert [e[:2] for e in events if e[1] == "opened"] == [("no_forbidden_contact", "opened")], arm


def test_an_arms_topic_that_has_not_sent_yet_leaves_the_frames_stale(aloha, handover, tmp_path):
    """The right arm's driver starts late: its first message comes after the hands met. The left stack's frames
    before it are stale (`missing_joints`), the meeting unknown; they were judged with the right arm where the model
    draws it (straight up), no issue said and the contact silently missed (found by fuzzing: test_fuzz_robots.py's
    arm topics)."""
    states = _hands_meet(handover.states)
    _arm_topics_bag(tmp_path / "two", states, one_topic=False)
    late = tmp_path / "late"
    with BagReader(tmp_path / "two") as reader, BagWriter(late) as writer:
        for topic, t_ns, msg in reader.messages(set(reader.topics)):
            if topic != ARM_TOPICS["right"] or t_ns / 1e9 > states[130].t:
                writer.write(topic, msg, t_ns / 1e9)
    config = ReplayConfig(
        robot=str(aloha["left"]), mapping=StreamMapping.parse(str(_arm_topics_mapping(tmp_path))), rate_hz=script.RATE
    )
    result = score_bag(late, config)
    assert result.ok and result.frames == len(states), result.error
    assert result.issues == {"missing_joints": 131} and result.stale_frames >= 131
    assert "no message merged from more_joint_states /puppet_right/joint_states yet" in result.issue_examples[0].detail
    assert result.trace.outcome("no_forbidden_contact").blind_frames >= 131


def test_the_right_arms_topic_dropping_messages_while_it_carries_the_bar_blinds_its_stack_without_an_alarm(
    aloha, handover, tmp_path
):
    """The right arm carries the bar over; its topic, merged by name into the left topic's frames, drops 10 messages
    (0.2 s). The right stack held its own arm's joints for up to `joint_held` (0.5 s): the hand judged where it was
    while the bar's pose moved on with it, a grasp read as lost and the bar as dropped, an alarm on a run whose only
    fault was dropped messages (found by fuzzing, fuzz_inputs.py's arm_topics, classed `held_alarm`). Its own arm's
    joints are now held as long as the frames allow a gap (five periods, 0.1 s): then the frames are stale
    (`missing_joints`), the stack blind, no violation. The left stack, where they are the other arm's, holds them
    for 0.5 s and goes stale for fewer frames."""
    states = handover.states[150:450]
    _arm_topics_bag(tmp_path / "two", states, one_topic=False)
    dropped = tmp_path / "dropped"
    lo, hi = states[120].t - 0.01, states[130].t  # its messages of frames 120 to 130
    with BagReader(tmp_path / "two") as reader, BagWriter(dropped) as writer:
        for topic, t_ns, msg in reader.messages(set(reader.topics)):
            if topic != ARM_TOPICS["right"] or not lo <= t_ns / 1e9 <= hi:
                writer.write(topic, msg, t_ns / 1e9)
    mapping = StreamMapping.parse(str(_arm_topics_mapping(tmp_path)))
    stale = {}
    for arm in ("right", "left"):
        result = score_bag(dropped, ReplayConfig(robot=str(aloha[arm]), mapping=mapping, rate_hz=script.RATE))
        assert result.ok and result.frames == len(states), result.error
        assert not any(o.violations for o in result.trace.outcomes), (arm, result.trace.events)
        stale[arm] = result.issues.get("missing_joints", 0)
    assert stale == {"right": 7, "left": 0}  # the right stack: frames 124 to 130, more than 0.1 s after frame 119


def test_live_nodes_read_each_arms_topic_as_replay_does(aloha, handover, tmp_path):
    """The right arm's estimator and monitor nodes (each its own process, fed by `bag_player` in lockstep with the
    bag's log times) on the two arms' topics: the frames and events replay gives, its own arm's joints merged
    from the topic of their own."""
    pytest.importorskip("rclpy")
    import bag_player

    states = _hands_meet(handover.states)
    bag = tmp_path / "two"
    _arm_topics_bag(bag, states, one_topic=False)
    topics = _arm_topics_mapping(tmp_path)
    params = tmp_path / "nodes.yaml"
    settings = {
        "config_dir": str(aloha["right"].parent),
        "topics_file": str(topics),
        "control_rate_hz": script.RATE,
        "diagnostics_period_s": 0.1,  # the nodes' diagnostics pace the player's quiet periods
    }
    params.write_text(yaml.safe_dump({"/**": {"ros__parameters": settings}}))
    config = ReplayConfig(robot=str(aloha["right"]), mapping=StreamMapping.parse(str(topics)), rate_hz=script.RATE)
    replayed = score_bag(bag, config.with_settings(load_settings(params)))
    assert replayed.ok and replayed.issues == {}, replayed.error
    inputs = [*ARM_TOPICS.values(), "/objects/bar/pose"]
    frames, log = bag_player.play(bag, tmp_path / "live", params, True, inputs=inputs, frames_from=ARM_TOPICS["left"])
    live = bag_player.logged_events(log)
    assert frames == replayed.frames == len(states)
    assert live == [m.event_fields(e) for e in replayed.trace.events]
    assert [(e["property"], e["kind"]) for e in live if e["kind"] == "opened"] == [("no_forbidden_contact", "opened")]


def test_replay_refuses_a_topic_read_twice_once_resolved_and_says_a_missing_arm_topic(aloha, handover, tmp_path):
    """`puppet_left/joint_states` and `/puppet_left/joint_states` are one topic in the root namespace: refused in
    one line naming the file and the key. A topic of `more_joint_states` the bag lacks is said, not silent."""
    _arm_topics_bag(tmp_path / "two", handover.states[:20], one_topic=False)
    twice = tmp_path / "twice.yaml"
    twice.write_text(
        "joint_states: puppet_left/joint_states\njoint_prefix: left/\nwrench: null\n"
        "more_joint_states: {/puppet_left/joint_states: {prefix: right/}}\n"
    )
    config = ReplayConfig(robot=str(aloha["left"]), mapping=StreamMapping.parse(str(twice)), rate_hz=script.RATE)
    result = score_bag(tmp_path / "two", config)
    assert result.error is not None and "\n" not in result.error
    assert result.error.endswith(
        f"{twice}: more_joint_states: /puppet_left/joint_states: /puppet_left/joint_states is read as joint_states "
        "already: list a topic once"
    )
    gone = tmp_path / "gone.yaml"
    gone.write_text(
        "joint_states: /puppet_left/joint_states\njoint_prefix: left/\nwrench: null\n"
        "more_joint_states: {/puppet_rigth/joint_states: {prefix: right/}}\n"
    )
    config = ReplayConfig(robot=str(aloha["left"]), mapping=StreamMapping.parse(str(gone)), rate_hz=script.RATE)
    result = score_bag(tmp_path / "two", config)
    assert result.ok and result.frames == 20  # the right arm is the left stack's other arm: frames come
    assert result.warnings == ["no topic /puppet_rigth/joint_states (more_joint_states): its joints never come"]
