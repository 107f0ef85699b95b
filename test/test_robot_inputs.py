"""Robot inputs as robots send them (issue 14): object poses from /tf and /tf_static, JointStates without names,
a gripper on its own topic, each arm's joints on a topic of its own with the same names (`more_joint_states`),
the joint-jump input issue, and configured topics of the wrong type refused."""

from __future__ import annotations

import re

import numpy as np
import pytest
from robot_input_bags import JUMP_AT, write_bag, write_setup

from safety_monitor.enums import EventKind, IssueKind
from safety_monitor.errors import SourceError
from safety_monitor.frames import JointSample, Pose
from safety_monitor.pipeline.assemble import FrameAssembler, JointTopic, StreamMapping
from safety_monitor.pipeline.tf import Transform, TransformTree
from safety_monitor.replay.score import ReplayConfig, score_bag


def _rotation(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _matrix(pose: Pose) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = _rotation(pose.quaternion), pose.position
    return out


def _pose(rng: np.random.Generator) -> Pose:
    """A random pose whose quaternion is off unit length by float error (normalised by the tree)."""
    q = rng.normal(size=4)
    return Pose(rng.normal(size=3), q / np.linalg.norm(q) * rng.uniform(0.999, 1.001))


def test_tf_chains_through_the_common_ancestor_with_the_newest_stamp():
    rng = np.random.default_rng(3)
    links = {("world", "base_link"): _pose(rng), ("world", "camera"): _pose(rng), ("camera", "cube"): _pose(rng)}
    tree = TransformTree("/base_link", {"cube": "cube"})
    assert tree.update([Transform("world", "base_link", links["world", "base_link"], 0.5)]) == []  # not connected
    static = [Transform(p, c, pose, 1.0) for (p, c), pose in links.items() if c == "camera"]
    assert tree.update(static) == []
    ((name, pose, stamp),) = tree.update([Transform("camera", "/cube", links["camera", "cube"], 2.0)])
    want = (
        np.linalg.inv(_matrix(links["world", "base_link"]))
        @ _matrix(links["world", "camera"])
        @ _matrix(links["camera", "cube"])
    )
    assert name == "cube" and stamp == 2.0
    np.testing.assert_allclose(_matrix(pose), want, atol=1e-12)
    assert tree.update(static) == []  # a static link again changes nothing: no repeated pose
    assert tree.update([Transform("world", "elsewhere", _pose(rng), 3.0)]) == []  # not in the chain


def test_a_tf_link_far_from_unit_length_is_dropped_as_tf2_drops_it_and_the_link_keeps_its_last_transform():
    """tf2 refuses a transform whose quaternion's squared norm is 0.01 or more off 1 (TF_DENORMALIZED_QUATERNION): the
    tree drops it and says so; within that, float error, it normalises. A NaN one is kept for the assembler's `nan`."""
    tree = TransformTree("base_link", {"cube": "cube"})
    q = np.array([0.6, 0.0, 0.0, 0.8])
    ((_, pose, _),) = tree.update([Transform("base_link", "cube", Pose(np.ones(3), q * 1.004), 1.0)])
    np.testing.assert_allclose(pose.quaternion, q, rtol=1e-15)
    assert tree.problems == []
    for k, norm in enumerate((0.0, 0.994, 1.006, 3.0, 1e200)):
        assert tree.update([Transform("base_link", "cube", Pose(np.zeros(3), q * norm), 2.0 + k)]) == []
        (problem,) = tree.problems
        assert problem.kind is IssueKind.DENORMALIZED_QUATERNION and problem.name is None
        assert f"transform 'base_link' -> 'cube' at {2.0 + k:.6f}: quaternion norm {norm:.6g}" in problem.detail
    kept = tree.lookup("cube")
    assert kept is not None and kept[1] == 1.0 and np.array_equal(kept[0].position, np.ones(3))
    ((_, pose, _),) = tree.update([Transform("base_link", "cube", Pose(np.ones(3), np.array([np.nan, 0, 0, 1])), 9.0)])
    assert np.isnan(pose.quaternion[0]) and tree.problems == []


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_an_infinite_tf_translation_reaches_the_poses_below_it_as_nan_without_warnings():
    """inf times a rotated zero component is invalid: numpy warned on every chain through such a link. It is kept
    as NaN, as a NaN or infinite quaternion is, so the assembler refuses the poses it reaches (`nan`), quietly."""
    tree = TransformTree("base_link", {"cube": "cube"})
    tree.update([Transform("base_link", "camera", Pose(np.ones(3), np.array([0.6, 0.0, 0.0, 0.8])), 1.0)])
    infinite = Pose(np.array([np.inf, 0.0, 0.0]), np.array([0.6, 0.8, 0.0, 0.0]))
    ((_, pose, _),) = tree.update([Transform("camera", "cube", infinite, 1.0)])
    assert np.isnan(pose.position).all() and np.isfinite(pose.quaternion).all() and tree.problems == []


def test_an_unnamed_joint_state_takes_joint_order_and_without_it_says_so():
    sample = JointSample((), np.array([0.1, 0.2]), None, None, 1.0)
    named = FrameAssembler(("a", "b"), mapping=StreamMapping(joint_order=("a", "b"))).on_joint_sample(sample)
    assert named is not None and named.state.joint_position.tolist() == [0.1, 0.2]
    bare = FrameAssembler(("a", "b"))
    assert bare.on_joint_sample(sample) is None
    (issue,) = bare.drain_issues()
    assert issue.kind is IssueKind.EMPTY_NAMES and "joint_order" in issue.detail


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("robot_inputs")
    robot, topics = write_setup(folder)
    write_bag(folder / "as_sent", robot)
    write_bag(folder / "reference", robot, as_sent=False)
    return folder, robot, topics


def test_a_robot_as_it_sends_its_data_scores_as_the_same_data_sent_the_package_way(setup):
    folder, robot, topics = setup
    sent = score_bag(folder / "as_sent", ReplayConfig(robot=str(robot), mapping=StreamMapping.parse(str(topics))))
    reference = score_bag(folder / "reference", ReplayConfig(robot=str(robot), mapping=StreamMapping(wrench=None)))
    assert sent.ok and reference.ok, (sent.error, reference.error)
    assert sent.frames == reference.frames == 60 and not sent.warnings
    assert sent.timeline.to_json() == reference.timeline.to_json()  # TF, joint_order and the gripper topic agree
    runs = sent.timeline.to_json()["runs"]
    assert [r for r in runs["object_grasped"] if r[2]] and [r for r in runs["object_dropped"] if r[2]]
    dropped = next(r for r in runs["object_dropped"] if r[2])[0]
    assert any(lo <= dropped <= hi and v for lo, hi, v in runs["object_released"])  # dropped on release
    jumps = [i for i in sent.issue_examples if i.kind is IssueKind.JOINT_JUMP]
    assert sent.issues == {IssueKind.JOINT_JUMP: 2} and "joint1 by 2.4" in jumps[0].detail  # out, and back
    assert jumps[0].t == pytest.approx(1.0 + JUMP_AT / 50)
    opened = [(e.property, e.frame) for e in sent.trace.events if e.kind is EventKind.OPENED]
    assert ("no_joint_position_jump", JUMP_AT) in opened
    assert opened == [(e.property, e.frame) for e in reference.trace.events if e.kind is EventKind.OPENED]


@pytest.mark.parametrize(
    "topics, message",
    [
        (
            "joint_states=/objects/cube/pose",
            "topic /objects/cube/pose (joint_states): expected type "
            "sensor_msgs/msg/JointState, found geometry_msgs/msg/PoseStamped",
        ),
        (
            "object_pose=/joint_states",
            "topic /joint_states (object_pose/cube): expected type "
            "geometry_msgs/msg/PoseStamped, found sensor_msgs/msg/JointState",
        ),
        (
            "predicates=/joint_states",
            "expected type diagnostic_msgs/msg/DiagnosticArray, found sensor_msgs/msg/JointState",
        ),
    ],
)
def test_a_configured_topic_of_the_wrong_type_is_refused_naming_both_types(setup, topics, message):
    folder, robot, _ = setup
    config = ReplayConfig(
        robot=str(robot),
        mapping=StreamMapping.parse(topics + ",wrench=none"),
        from_predicates=topics.startswith("predicates"),
    )
    result = score_bag(folder / "reference", config)
    assert result.error is not None and message in result.error


def test_inspect_reports_topics_inputs_and_properties_in_text_and_json(setup, capsys):
    import json

    from safety_monitor.cli import main

    folder, robot, topics = setup
    args = ["inspect", str(folder / "as_sent"), "--robot", str(robot), "--topics", str(topics)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "/gripper/joint_states" in text and "25.0 Hz" in text and "50.0 Hz" in text
    assert "tf                       /tf                              present" in text
    assert "no_joint_position_jump: applicable; triggered 1 time(s)" in text
    # the hand is at the cube from the bag's first frame: an approach under way there may have begun before it, so
    # it is no trigger (docs/predicates.md, "Trace start")
    assert "pick_preconditions: applicable; triggered 0 time(s) (vacuous in this bag)" in text
    assert "place_preconditions: applicable; triggered 0 time(s) (vacuous in this bag)" in text  # never placed
    assert main([*args, "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    rates = {t["topic"]: t["rate_hz"] for t in doc["topics"]}
    assert rates["/arm/joint_states"] == pytest.approx(50.0) and rates["/tf_static"] is None
    assert {i["stream"]: i["state"] for i in doc["inputs"]} == {
        "joint_states": "present",
        "gripper_joint_states": "present",
        "tf": "present",
        "tf_static": "present",
    }
    assert doc["properties"]["drop_only_when_released"] == {
        "applicability": "applicable",
        "triggers": 1,
        "vacuous_here": False,
    }
    assert "joint_position_jump" in doc["predicates"]["groundable"]


def test_inspect_refuses_a_configured_topic_of_the_wrong_type_and_does_not_replay(setup, capsys):
    from safety_monitor.cli import main

    folder, robot, _ = setup
    assert (
        main(
            ["inspect", str(folder / "reference"), "--robot", str(robot), "--topics", "joint_states=/objects/cube/pose"]
        )
        == 1
    )
    text = capsys.readouterr().out
    assert (
        "joint_states             /objects/cube/pose               wrong type: expected "
        "sensor_msgs/msg/JointState, found geometry_msgs/msg/PoseStamped"
    ) in text
    assert "not replayed: /objects/cube/pose (joint_states) wrong type" in text


def test_a_slow_gripper_topic_is_judged_over_its_own_period_and_a_real_jump_on_it_still_counts(setup):
    """A gripper at 10 Hz under a 500 Hz arm moves 0.016 per message, 80 % of its 0.2 m/s limit: over the arm's
    2 ms frame period that is 40 times too fast, over its own 0.1 s well within. A glitch on it is a jump. Its
    position is held for five of its periods (0.5 s, `joint_held`), known from its second message (before the arm's
    first frame here; until then no longer than the frames' gap limit, 50 ms)."""
    from urdf_robots import write_robot

    from safety_monitor.grounding.grounder import load_default_grounder
    from safety_monitor.pipeline.estimator import Estimator

    folder, _, _ = setup
    grounder = load_default_grounder(500.0, write_robot(folder / "fast_arm", 6, "one_joint"), wrench_sensor=False)
    arm = tuple(j for j in grounder.robot.required_joints if j != "gripper_joint")
    stage = Estimator(grounder, StreamMapping(wrench=None, gripper_joint_states="/gripper/joint_states"))
    gripper = [0.0, 0.016, 0.032, 0.016, 0.0, 0.016, 0.5, 0.016]  # per 0.1 s; 0.5: a glitch
    jumps, issues = [], []
    stage.gripper_joints(JointSample(("gripper_joint",), np.array([0.0]), None, None, 0.899))  # its period: 0.1 s
    for k in range(50 * len(gripper)):
        t = 1.0 + 0.002 * k
        if k % 50 == 0:
            value = np.array([gripper[k // 50]])
            issues += stage.gripper_joints(JointSample(("gripper_joint",), value, None, None, t - 0.001)).issues
        step = stage.joints(JointSample(arm, np.zeros(len(arm)), None, None, t))
        issues += step.issues
        assert step.sample is not None and "joint_position_jump" not in step.sample.unknown  # frame 0 too
        jumps.append(step.sample.values["joint_position_jump"])
    glitch = 50 * gripper.index(0.5)
    assert [k for k, jumped in enumerate(jumps) if jumped] == [glitch, glitch + 50]  # out, and back
    assert [(i.kind, i.t) for i in issues] == [(IssueKind.JOINT_JUMP, 1.0 + 0.002 * k) for k in (glitch, glitch + 50)]
    assert "gripper_joint by 0.484 (at most 0.04" in issues[0].detail


@pytest.mark.parametrize(
    "key, edit, message",
    [
        (
            "joint_order",
            lambda m: m["joint_order"].__setitem__(2, "joint_3"),
            "joint_order: 'joint_3' is not a joint of {robot} (did you mean 'joint3'?)",
        ),
        (
            "joint_names",
            lambda m: m.update(joint_names={"j1": "jiont1"}),
            "joint_names: 'jiont1' is not a joint of {robot} (did you mean 'joint1'?)",
        ),
        (
            "object_frames",
            lambda m: m.update(object_frames={"cub": "cube_link"}),
            "object_frames: 'cub' is not an object of {robot} (did you mean 'cube'?)",
        ),
        (
            "objects",
            lambda m: m.update(objects={"mug": "/mug/pose"}),
            "objects: 'mug' is not an object of {robot} (it has cube)",
        ),
    ],
)
def test_a_topic_mapping_naming_a_joint_or_object_the_robot_lacks_is_refused_with_the_nearest_names(
    setup, tmp_path, capsys, key, edit, message
):
    """A misspelt joint once left every frame without it (replay: no frame built; live: stale, the monitor blind
    throughout), a misspelt object its pose unread: refused up front by replay and inspect, and by the Estimator
    stage the estimator node builds, in one line naming the name and the nearest the robot has."""
    import yaml

    from safety_monitor.cli import main
    from safety_monitor.errors import SourceError
    from safety_monitor.grounding.grounder import load_default_grounder
    from safety_monitor.pipeline.estimator import Estimator

    folder, robot, topics = setup
    mapping = yaml.safe_load(topics.read_text())
    edit(mapping)
    bad = tmp_path / "topics.yaml"
    bad.write_text(yaml.safe_dump(mapping))
    want = f"{bad}: " + message.format(robot=robot)
    for command in (["replay", "--quiet"], ["inspect"]):
        assert main([*command, str(folder / "as_sent"), "--robot", str(robot), "--topics", str(bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert want in err and "\n" not in err, err
    with pytest.raises(SourceError, match="^" + re.escape(want)):
        Estimator(load_default_grounder(50.0, robot, wrench_sensor=False), StreamMapping.parse(str(bad)))


# ALOHA's layout: each arm's driver on a topic of its own, both naming their joints `waist`, `gripper`
ARMS = StreamMapping(
    joint_states="/puppet_left/joint_states",
    wrench=None,
    joint_prefix="left/",
    more_joint_states=(JointTopic("/puppet_right/joint_states", "right/"), JointTopic("/right_hand", "right/")),
    origin="topics.yaml",
)


def _arms(mapping: StreamMapping = ARMS) -> FrameAssembler:
    """The right arm's view: its joints required, the left's optional (the other arm)."""
    return FrameAssembler(("right/waist", "right/gripper"), mapping=mapping, optional=("left/waist", "left/gripper"))


def _sample(t: float, *values: float, names=("waist", "gripper")) -> JointSample:
    return JointSample(tuple(names), np.array(values, dtype=float), None, None, t)


def test_each_arms_topic_has_its_prefix_its_own_stamps_and_its_own_nan():
    """The right arm's joints come on two topics of their own (arm and hand), stamped behind the left's and behind
    each other; none of that is a stamp going back. A NaN drops that topic's message only, said on its stream."""
    a = _arms()
    a.on_joint_update(_sample(1.003, 0.3, names=("waist",)), topic="/puppet_right/joint_states")
    a.on_joint_update(_sample(1.001, 0.04, names=("gripper",)), topic="/right_hand")
    frame = a.on_joint_sample(_sample(1.004, 0.1, 0.02))
    assert frame is not None and frame.issues == () and frame.stale == frozenset()
    assert frame.state.joint_names == ("right/waist", "right/gripper", "left/waist", "left/gripper")
    assert frame.state.joint_position.tolist() == [0.3, 0.04, 0.1, 0.02]
    a.on_joint_update(_sample(1.023, np.nan, names=("waist",)), topic="/puppet_right/joint_states")
    a.on_joint_update(_sample(1.021, 0.05, names=("gripper",)), topic="/right_hand")
    frame = a.on_joint_sample(_sample(1.024, 0.1, 0.02))
    assert frame is not None and frame.state.joint_position.tolist() == [0.3, 0.05, 0.1, 0.02]  # the waist held
    ((stream, kind),) = [(i.stream, i.kind) for i in frame.issues]
    assert (stream, kind) == ("more_joint_states:/puppet_right/joint_states", IssueKind.NAN)


@pytest.mark.parametrize("watched", ["right", "left"])
def test_an_arms_topic_that_stops_makes_the_frames_stale_after_it_may_be_held(watched):
    """The right arm's topic stops. In the left arm's stack, its joints are the other arm's (optional, placed by the
    twin): held for `joint_held` (0.5 s), as a drawer encoder's, then the frames are stale, naming them (it would
    stand where it was, unseen, and judged there). In the right arm's own stack they are the arm it judges: held
    as long as the frames allow a gap (five of the topic's periods, 0.1 s), not 0.5 s while the bar it carries
    moves on and reads as slipping (a false alarm in a handover whose only fault was dropped messages, found by
    fuzzing: fuzz_inputs.py's arm_topics, once classed `held_alarm`)."""
    arms = {"left": ("left/waist", "left/gripper"), "right": ("right/waist", "right/gripper")}
    other = arms["left" if watched == "right" else "right"]
    mapping = StreamMapping(wrench=None, joint_prefix="left/", more_joint_states=(JointTopic("/r", "right/"),))
    a = FrameAssembler(arms[watched], mapping=mapping, optional=other, judged=arms[watched])
    held = {"left": 0.5, "right": 0.1}[watched]
    stale = []
    for k in range(40):  # 50 Hz, the right arm's topic silent after 1.1 s
        t = 1.0 + k / 50
        if t <= 1.1:
            a.on_joint_update(_sample(t - 0.002, 0.3, 0.04), topic="/r")
        frame = a.on_joint_sample(_sample(t, 0.1, 0.02))
        assert frame is not None
        if "joint_states" in frame.stale:
            stale.append(k)
            assert [i.kind for i in frame.issues] == [IssueKind.MISSING_JOINTS], k
            assert f"no position for right/waist, right/gripper for more than {held:g} s" in frame.issues[0].detail
    assert stale == list(range(30 if watched == "left" else 10, 40))  # from 1.6 s (1.2 s): after its last, 1.098


def test_an_arms_topic_whose_stamps_ran_ahead_makes_the_frames_stale_until_the_frames_catch_up():
    """The right arm's topic stamped 2 s ahead for five messages (a driver's clock glitch), then on time again: its
    readings after are behind the last one it sent, dropped as going backwards. The frames were fresh, the right arm
    judged where it was when the glitch ended while it moved on (in a handover, a bar let go read as dropped: found
    by fuzzing, test_fuzz_robots.py's arm topics). A position stamped further after a frame than it may be held is
    no more usable than one that old; and it stays unusable until a position after it comes: once the frames are
    within the limit of it, its readings stamped behind it are still dropped, and it is the arm's pose of 2 s before."""
    mapping = StreamMapping(wrench=None, joint_prefix="left/", more_joint_states=(JointTopic("/r", "right/"),))
    a = FrameAssembler(
        ("right/waist", "right/gripper"),
        mapping=mapping,
        optional=("left/waist", "left/gripper"),
        judged=("right/waist", "right/gripper"),
    )
    stale, said = [], set()
    for k in range(150):  # 50 Hz
        t = 1.0 + k / 50
        a.on_joint_update(_sample(t - 0.002 + (2.0 if 20 <= k < 25 else 0.0), 0.3 + k / 100, 0.04), topic="/r")
        frame = a.on_joint_sample(_sample(t, 0.1, 0.02))
        assert frame is not None
        if "joint_states" in frame.stale:
            stale.append(k)
            said.update(i.detail for i in frame.issues if i.kind is IssueKind.MISSING_JOINTS)
    assert stale == list(range(20, 125))  # until a position stamped after 1.478 + 2 comes (k = 124: resyncs)
    assert said == {
        "the position of right/waist, right/gripper was stamped further after a frame than it may be held, none after "
        "it since; frame stale"
    }


@pytest.mark.parametrize("stream", ["object_pose/cube", "tf", "wrench", "base_pose", "gripper_joint_states"])
def test_a_stream_stamped_ahead_of_the_frames_for_a_moment_is_stale_until_a_sample_after_it_comes(stream):
    """A slower stream's stamps 2 s ahead for five samples (its clock glitched), then on time again: its true readings
    after, stamped behind the last one taken, are dropped as going backwards. The object pose (from its topic or TF),
    the wrench and a mobile base's pose were taken as fresh (an age below zero is none), so the frames were judged
    on the glitch's value for 2 s. Now the stream is stale from the first frame it is stamped further ahead of than
    its age limit, with one issue naming it, until a sample stamped after that one comes: no frame judges the stuck
    value. (The gripper's topic made the frames stale only until they came within `joint_held` of that stamp, 71b9046:
    then they were judged on the glitch's position for 0.5 s.)"""
    from safety_monitor.frames import Wrench
    from safety_monitor.pipeline.assemble import GRIPPER_JOINTS, pose_stream

    name = "cube" if stream in ("object_pose/cube", "tf") else None
    mapping = StreamMapping(
        wrench="/wrench" if stream == "wrench" else None,
        gripper_joint_states="/gripper" if stream == GRIPPER_JOINTS else None,
        world_frame="odom" if stream == "base_pose" else "",
    )
    a = FrameAssembler(("waist", "gripper"), objects=(name,) if name else (), mapping=mapping)
    tree = TransformTree("base_link", {"cube": "cube"})
    upright = np.array([1.0, 0.0, 0.0, 0.0])
    seen, stale, said = [], [], []
    for k in range(150):  # 50 Hz; the sample 4 ms before its frame, with its number as value
        t = 1.0 + k / 50
        stamp, received = t - 0.004 + (2.0 if 20 <= k < 25 else 0.0), t - 0.003
        if stream == "object_pose/cube":
            a.on_pose_sample("cube", Pose(np.array([k, 0.0, 0.0]), upright), stamp, received)
        elif stream == "tf":
            for found, pose, at in tree.update(
                [Transform("base_link", "cube", Pose(np.array([k, 0, 0.0]), upright), stamp)]
            ):
                a.on_pose_sample(found, pose, at, received)
        elif stream == "wrench":
            a.on_wrench_sample(Wrench(np.array([k, 0.0, 0.0]), np.zeros(3)), stamp, received)
        elif stream == "base_pose":
            a.on_base_sample(Pose(np.array([k * 1e-5, 0.0, 0.0]), upright), stamp, received)
        else:
            a.on_joint_update(_sample(stamp, k, names=("gripper",)), received)
        frame = a.on_joint_sample(
            _sample(t, k / 100, names=("waist",)) if stream == GRIPPER_JOINTS else _sample(t, k / 100, 0.02), t
        )
        assert frame is not None
        said += [i for i in frame.issues if i.kind not in (IssueKind.BACKWARDS, IssueKind.DUPLICATE_STAMP)]
        state = frame.state
        key = "joint_states" if stream == GRIPPER_JOINTS else pose_stream(name) if name else stream
        if key in frame.stale:
            stale.append(k)
            continue
        seen.append(
            state.object_poses["cube"].position[0]
            if name
            else state.wrench.force[0]
            if stream == "wrench"
            else state.base_pose.position[0] * 1e5
            if stream == "base_pose"
            else state.joint("gripper")
        )
        assert seen[-1] == pytest.approx(k), (k, seen[-1])  # this frame's own sample, never the glitch's
    assert stale[0] == 20 and stale == list(range(20, stale[-1] + 1)) and 123 <= stale[-1] <= 125, stale
    if stream == GRIPPER_JOINTS:
        assert {i.kind for i in said} == {IssueKind.MISSING_JOINTS}
    else:
        ((kind, named, at),) = {(i.kind, i.stream, i.t) for i in said}
        assert (kind, named, at) == (IssueKind.STAMP_AHEAD, pose_stream(name) if name else stream, pytest.approx(1.4))


def test_two_topics_whose_prefixes_make_the_same_names_drop_the_later_ones_messages():
    """Both arms' topics given `left/`: the names cannot be told apart, so the topic whose message comes second
    has its messages dropped, each with a line naming the file, both keys and topics, and the joints."""
    same = StreamMapping(
        joint_states="/l",
        wrench=None,
        joint_prefix="left/",
        more_joint_states=(JointTopic("/r", "left/"),),
        origin="topics.yaml",
    )
    a = _arms(same)
    a.on_joint_update(_sample(0.99, 0.3, 0.04), topic="/r")
    assert a.on_joint_sample(_sample(1.0, 0.1, 0.02)) is None  # the left's frame: its joints came on /r first
    (issue,) = a.drain_issues()
    assert issue.kind is IssueKind.DUPLICATE_NAMES and issue.stream == "joint_states"
    assert issue.detail == (
        "topics.yaml: joint_states /l sends left/waist, left/gripper, which more_joint_states /r sends: two topics "
        "cannot send one joint (give each arm's topic a prefix of its own); message dropped"
    )
    b = FrameAssembler(("left/waist", "left/gripper"), mapping=same)
    assert b.on_joint_sample(_sample(1.0, 0.1, 0.02)) is not None
    for k in range(1, 3):
        b.on_joint_update(_sample(1.0 + k / 50, 0.3, 0.04), topic="/r")
        (issue,) = b.drain_issues()
        assert issue.kind is IssueKind.DUPLICATE_NAMES and issue.stream == "more_joint_states:/r"
        assert issue.detail.startswith("topics.yaml: more_joint_states /r sends left/waist, left/gripper, which ")
        frame = b.on_joint_sample(_sample(1.001 + k / 50, 0.1, 0.02))
        assert frame is not None and frame.state.joint_position.tolist() == [0.1, 0.02]  # the left's own


def test_a_restart_said_first_by_another_joint_topic_starts_the_rollout_there(setup):
    """A restarted driver or simulator: the hand's topic (named by its prefix) comes before the arm's, stamped
    far behind the last frame. It starts the new rollout, as a wrench or pose would, so the arm's next message
    makes its frame 0 with the hand's joint: no step back said, no frame held back for a missing joint."""
    from safety_monitor.grounding.grounder import load_default_grounder
    from safety_monitor.pipeline.estimator import Estimator

    _, robot, _ = setup
    mapping = StreamMapping(wrench=None, more_joint_states=(JointTopic("/hand", "gripper_"),))
    stage = Estimator(load_default_grounder(50.0, robot, wrench_sensor=False), mapping)
    arm = ("joint1", "joint2", "joint3", "joint4", "joint5", "joint6", "drawer_slide")
    for start in (10.0, 1.0):
        for k in range(3):
            t = start + k / 50
            hand = stage.more_joints("/hand", _sample(t - 0.002, 0.01, names=("joint",)))
            step = stage.joints(_sample(t, *[0.0] * len(arm), names=arm))
            if start == 1.0 and k == 0:
                assert [i.kind for i in hand.issues] == [IssueKind.INPUT_RESTARTED]
            else:
                assert hand.issues == ()
            assert step.sample is not None and step.sample.frame == k and step.issues == (), (start, k)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "joint_states: /l\nmore_joint_states: {/l: {prefix: right/}}",
            "more_joint_states: /l: /l is read as joint_states already: list a topic once",
        ),
        (
            "gripper_joint_states: /g\nmore_joint_states: {/g: {}}",
            "more_joint_states: /g: /g is read as gripper_joint_states already: list a topic once",
        ),
        (
            "more_joint_states: {/r: {prefix: right/}, /r: {prefix: left/}}",
            "key '/r' is given twice in one mapping",
        ),
        (
            "joint_names: {waist: left/waist}\nmore_joint_states: {/r: {joint_names: {waist: left/waist}}}",
            "more_joint_states: /r: joint_names gives 'left/waist', as joint_names does: two topics cannot send one "
            "joint",
        ),
        (
            "more_joint_states: {/r: {prefx: right/}}",
            "more_joint_states: /r: unknown key 'prefx' (did you mean 'prefix'?)",
        ),
        ("more_joint_states: {/r: right/}", "more_joint_states: /r: expected {prefix: ..., joint_names: {...}}"),
        ("more_joint_states: [/r]", "more_joint_states must be a mapping of JointState topics to {prefix: ..."),
        ("more_joint_states: {/r: {prefix: 3}}", "more_joint_states: /r: 'prefix' must be a name prefix, got 3"),
        ("joint_prefix: [left/]", "'joint_prefix' must be a name prefix, got ['left/']"),
    ],
)
def test_joint_topics_that_cannot_be_told_apart_are_refused_in_one_line_naming_file_and_key(tmp_path, text, message):
    path = tmp_path / "topics.yaml"
    path.write_text(text)
    with pytest.raises(SourceError) as caught:
        StreamMapping.parse(str(path))
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value) and "\n" not in str(caught.value)


def test_a_misspelt_prefix_is_refused_naming_the_nearest_the_robot_has(setup):
    """A prefix that begins no joint would leave every name of its topic unknown (its joints never come)."""
    from safety_monitor.grounding.description import load_robot_description

    _, path, _ = setup
    robot = load_robot_description(path)
    for doc, key in (
        ({"joint_prefix": "griper_"}, "joint_prefix"),
        ({"more_joint_states": {"/r": {"prefix": "griper_"}}}, "more_joint_states: /r: prefix"),
    ):
        with pytest.raises(SourceError) as caught:
            StreamMapping.from_dict(doc, "topics.yaml").check_names(robot)
        want = f"topics.yaml: {key}: 'griper_' is not the start of a joint of {path} (did you mean 'gripper_'?)"
        assert str(caught.value) == want
    StreamMapping.from_dict({"more_joint_states": {"/r": {"prefix": "joint"}}}).check_names(robot)  # joint1, ...
