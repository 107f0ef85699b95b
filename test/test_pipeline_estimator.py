"""The Estimator stage driven with explicit stamps and arrival times, the one decoder, and the two drivers
(the estimator node, replay) attributing the same issues to the same messages."""

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from safety_monitor.enums import IssueKind
from safety_monitor.errors import GroundingError
from safety_monitor.frames import JointSample, Pose, Wrench
from safety_monitor.grounding.thresholds import BaseJump
from safety_monitor.grounding.urdf import JointLimit
from safety_monitor.io import messages as m
from safety_monitor.io.bag import default_typestore
from safety_monitor.pipeline import estimator as stage_module
from safety_monitor.pipeline.assemble import JOINTS, WRENCH, StreamMapping
from safety_monitor.pipeline.decode import MessageType, Undecodable, decoder
from safety_monitor.pipeline.estimator import Estimator, EstimatorStep, RolloutStart
from safety_monitor.pipeline.inputs import TF
from safety_monitor.settings import EstimatorSettings

NAMES = ("j1", "j2")
W = Wrench(np.array([0.0, 0.0, 5.0]), np.zeros(3))
P = Pose(np.array([0.5, 0.0, 0.8]), np.array([1.0, 0.0, 0.0, 0.0]))


class _Grounder:
    """What the stage reads of a Grounder; `fail_at`: frame times it rejects."""

    predicates = ("p", "q")
    control_rate_hz = 500.0
    thresholds = SimpleNamespace(
        max_age_s=SimpleNamespace(wrench=0.1, object_pose=0.25),
        joint_limits=SimpleNamespace(jump_factor=2.0),
        base_jump=BaseJump(),
    )
    robot = SimpleNamespace(
        required_joints=NAMES, robot_joints=NAMES, accepted_joints=frozenset(), objects={"mug": None}, base_body="base"
    )
    joint_limits: dict = {}  # no velocity limits: no jump issues
    warmup_frames = 2
    wrench_sensor = True
    mobile_base = False

    def __init__(self, fail_at=()):
        self.fail_at, self.stepped, self.resets = set(fail_at), [], 0

    def step(self, state):
        if state.t in self.fail_at:
            raise GroundingError(f"joint j1 out of range at t={state.t}")
        self.stepped.append(state.t)
        return SimpleNamespace(values={"p": True, "q": False}, unknown=frozenset(), stale={}, objects={})

    def reset(self):
        self.resets += 1


def joints(t, pos=(0.1, 0.2), names=NAMES):
    return JointSample(tuple(names), np.array(pos, dtype=float), None, None, t)


def stage(grounder=None, **settings):
    return Estimator(grounder or _Grounder(), StreamMapping(), EstimatorSettings(**settings))


def kinds(step):
    return [issue.kind for issue in step.issues]


def test_every_issue_comes_back_from_the_call_that_raised_it():
    s = stage()
    first = s.joints(joints(1.0))
    assert first.sample.frame == 0 and first.issues == ()
    bad_wrench = s.wrench(Wrench(np.array([np.nan, 0, 0]), np.zeros(3)), 1.001)
    assert bad_wrench.sample is None and kinds(bad_wrench) == [IssueKind.NAN]
    assert bad_wrench.issues[0].stream == WRENCH
    assert s.wrench(W, 1.0015) is s.wrench(W, 1.0018)  # nothing to say: one shared result, no allocation
    nan = s.joints(joints(1.002, pos=(np.nan, 0.2)))
    assert nan.sample is None and kinds(nan) == [IssueKind.NAN]  # not held back for the next frame
    after = s.joints(joints(1.004))
    assert after.sample.frame == 1 and after.issues == ()
    back = s.joints(joints(1.003))
    assert back.sample is None and kinds(back) == [IssueKind.BACKWARDS]
    twice = s.joints(joints(1.006, pos=(0.1, 0.2, 0.3), names=("j1", "j2", "j1")))
    assert twice.sample is None and kinds(twice) == [IssueKind.DUPLICATE_NAMES]
    pose = s.pose("mug", Pose(P.position, np.zeros(4)), 1.006)
    assert kinds(pose) == [IssueKind.DENORMALIZED_QUATERNION] and pose.issues[0].stream == "object_pose/mug"
    assert s.joints(joints(1.008)).issues == ()
    ahead = s.joints(joints(5.0))  # held back: only the next message tells a clock step from an outlier
    assert ahead.sample is None and ahead.issues == ()
    end = s.finish()
    assert kinds(end) == [IssueKind.TIME_JUMP] and end.sample is None


def test_a_tf_link_far_from_unit_length_is_a_tf_issue_and_the_pose_it_would_give_goes_stale():
    """As tf2 drops such a transform (TF_DENORMALIZED_QUATERNION): the mug's pose is never handed on, stale on the
    frames, the issue on the tf stream naming the link; float error (norm 1.001) is normalised without a word."""
    s = Estimator(_Grounder(), StreamMapping(object_frames={"mug": "mug_link"}), EstimatorSettings())
    bad = s.transforms([("base", "mug_link", Pose(P.position, P.quaternion * 2.0), 1.0)])
    assert kinds(bad) == [IssueKind.DENORMALIZED_QUATERNION] and bad.issues[0].stream == TF
    assert "'base' -> 'mug_link'" in bad.issues[0].detail and bad.sample is None
    assert "object_pose/mug" in s.joints(joints(1.002)).sample.stale
    assert s.transforms([("base", "mug_link", Pose(P.position, P.quaternion * 1.001), 1.004)]).issues == ()
    assert "object_pose/mug" not in s.joints(joints(1.006)).sample.stale


def test_frozen_joints_turn_on_once_and_off_once():
    s = stage(joint_states_frozen_s=0.005)
    steps = [s.joints(joints(1.0 + k * 0.002)) for k in range(6)]  # identical values for 10 ms
    assert [st.frozen for st in steps] == [False, False, False, True, True, True]
    assert [st.frozen_changed for st in steps] == [False, False, False, True, False, False]
    assert kinds(steps[3]) == [IssueKind.FROZEN] and all(st.issues == () for st in steps[4:])
    assert steps[3].sample.unknown == {"p", "q"} and JOINTS in steps[3].sample.stale
    assert s.wrench(W, 1.011).frozen  # every result says the stream's state, not only joint ones
    moved = s.joints(joints(1.012, pos=(0.3, 0.2)))
    assert not moved.frozen and moved.frozen_changed and moved.sample.unknown == {"p", "q"}  # resync frame
    warming = s.joints(joints(1.014, pos=(0.31, 0.2)))  # the restarted grounder's warm-up: blind
    assert warming.sample.unknown == {"p", "q"} and JOINTS not in warming.sample.stale
    seeing = s.joints(joints(1.016, pos=(0.32, 0.2)))
    assert not seeing.frozen and not seeing.frozen_changed and seeing.sample.unknown == set()


def test_a_grounding_failure_is_an_issue_of_its_frame_with_every_predicate_unknown():
    s = stage(_Grounder(fail_at={1.002}))
    s.joints(joints(1.0))
    failed = s.joints(joints(1.002, pos=(0.3, 0.2)))
    assert failed.sample.frame == 1 and failed.sample.unknown == {"p", "q"}
    (issue,) = failed.issues
    assert (issue.kind, issue.stream, issue.t) == (IssueKind.GROUNDING, JOINTS, 1.002)
    assert issue.detail == "joint j1 out of range at t=1.002; every predicate unknown"
    assert s.joints(joints(1.004, pos=(0.31, 0.2))).issues == ()


def test_a_rollout_start_resets_unless_nothing_was_grounded_or_it_came_late():
    grounder = _Grounder()
    s = stage(grounder)
    assert s.new_rollout(1.0).start is RolloutStart.FRESH
    for k in range(3):
        s.joints(joints(1.0 + k * 0.002, pos=(0.1 + k, 0.2)))
    assert s.frames == 3
    late = s.new_rollout(1.004)  # its frame was grounded: the grounder restarts now, warm-up frames blind
    assert late.start is RolloutStart.LATE and s.frames == 3 and grounder.resets == 1
    assert kinds(late) == [IssueKind.LATE_MARKER] and late.issues[0].t == 1.004
    warm = [s.joints(joints(1.006 + k * 0.002, pos=(0.5 + k, 0.2))).sample for k in range(3)]
    assert [w.frame for w in warm] == [3, 4, 5]  # numbering goes on: the Supervisor cuts by the marker's time
    assert [w.unknown for w in warm] == [{"p", "q"}, {"p", "q"}, frozenset()]
    assert s.new_rollout(2.0).start is RolloutStart.RESET and s.frames == 0 and grounder.resets == 2
    restarted = s.joints(joints(2.0))  # a fresh assembler: the first frame of the rollout, at any stamp
    assert restarted.sample.frame == 0 and restarted.issues == ()
    assert s.joints(joints(1.9)).issues[0].kind == IssueKind.BACKWARDS  # the new rollout's time order


def test_a_late_start_marker_says_the_jump_its_first_frame_reported_was_the_move_between_rollouts():
    """The arm is set back home between rollouts; with the marker late, the new rollout's first frame was
    judged against the last rollout's final frame and reported as a joint_jump before the marker came. The
    late marker cannot take that back (restarting the jump judgement then would only leave the next frame
    unjudged): it says which jump was the move between rollouts, and not a glitch within the new one."""
    grounder = _Grounder()
    grounder.joint_limits = {"j1": JointLimit(velocity=1.0)}
    s = stage(grounder)
    for k in range(3):
        s.joints(joints(1.0 + k * 0.002, pos=(1.2, 0.2)))
    home = [s.joints(joints(1.006 + k * 0.002, pos=(0.0, 0.2))) for k in range(3)]
    assert [kinds(h) for h in home] == [[IssueKind.JOINT_JUMP], [], []]
    late = s.new_rollout(1.006)
    assert kinds(late) == [IssueKind.LATE_MARKER]
    assert late.issues[0].detail.endswith(
        "; the joint_jump at 1.006000 was judged from the last rollout's final frame: the robot's move between rollouts"
    )
    glitch = s.joints(joints(1.012, pos=(0.5, 0.2)))  # within the rollout: a glitch, whatever marker comes late
    assert kinds(glitch) == [IssueKind.JOINT_JUMP]
    assert "joint_jump" not in s.new_rollout(1.010).issues[0].detail


def test_an_undecodable_message_is_an_issue_at_its_arrival():
    step = stage().undecodable(WRENCH, 3.5, Undecodable("undecodable geometry_msgs/msg/WrenchStamped (3 bytes)"))
    assert step == EstimatorStep(None, step.issues) and kinds(step) == [IssueKind.UNDECODABLE]
    assert (step.issues[0].t, step.issues[0].detail) == (
        3.5,
        "undecodable geometry_msgs/msg/WrenchStamped (3 bytes); message dropped",
    )


# ---------------------------------------------------------------------------------- the decoder
STORE = default_typestore()
TYPES = m.rosbags_types(STORE)


def _rosbags(msgtype):
    return lambda raw: STORE.deserialize_cdr(raw, msgtype)


def _messages():
    js = m.joint_state_msg(TYPES, 12.25, ["a", "b"], [0.5, -1.25], [0.0, 1e-9], [3.0, 4.0])
    return {
        MessageType.JOINT_STATE: js,
        MessageType.WRENCH_STAMPED: m.wrench_msg(TYPES, 3.5, W),
        MessageType.POSE_STAMPED: m.pose_msg(TYPES, 4.75, P),
    }


def _fields(value):
    """Every number and name of a decoded value, comparable with ==."""
    if isinstance(value, tuple):
        return tuple(_fields(v) for v in value)
    if isinstance(value, (JointSample, Wrench, Pose)):
        return tuple((f, _fields(getattr(value, f))) for f in value.__dataclass_fields__)
    return value.tolist() if isinstance(value, np.ndarray) else value


@pytest.mark.parametrize("kind", [MessageType.JOINT_STATE, MessageType.WRENCH_STAMPED, MessageType.POSE_STAMPED])
def test_the_fast_path_and_both_fallbacks_decode_the_same_values(kind):
    raw = bytes(STORE.serialize_cdr(_messages()[kind], kind))
    fast = decoder(kind, _rosbags(kind))
    assert fast.fast is not None and fast.fast(raw) is not None
    values = {"fast": _fields(fast(raw)), "rosbags": _fields(decoder(kind, _rosbags(kind), fast=False)(raw))}
    rclpy = pytest.importorskip("rclpy.serialization")
    T = m.rclpy_types()
    msg_type = {
        MessageType.JOINT_STATE: T.JointState,
        MessageType.WRENCH_STAMPED: T.WrenchStamped,
        MessageType.POSE_STAMPED: T.PoseStamped,
    }[kind]
    values["rclpy"] = _fields(decoder(kind, lambda b: rclpy.deserialize_message(b, msg_type), fast=False)(raw))
    assert values["fast"] == values["rosbags"] == values["rclpy"]


def test_bytes_no_reader_takes_give_the_same_error_whichever_fallback_refused_them():
    raw = b"\x00\x01\x00\x00garbage"
    errors = {}
    fallbacks = {"rosbags": _rosbags(MessageType.WRENCH_STAMPED)}
    rclpy = pytest.importorskip("rclpy.serialization")
    fallbacks["rclpy"] = lambda b: rclpy.deserialize_message(b, m.rclpy_types().WrenchStamped)
    for name, fallback in fallbacks.items():
        with pytest.raises(Undecodable) as caught:
            decoder(MessageType.WRENCH_STAMPED, fallback)(raw)
        errors[name] = str(caught.value)
    assert errors == dict.fromkeys(fallbacks, "undecodable geometry_msgs/msg/WrenchStamped (11 bytes)")


# ------------------------------------------------------------------------- node and replay alike
@pytest.fixture(scope="module")
def bad_stream_bag(tmp_path_factory):
    """40 frames of a real episode at 500 Hz with bad messages: NaN positions, a stamp going back, a joint
    listed twice, a NaN wrench, a pose whose quaternion is twice unit length, and a stamp jumping ahead at the
    end."""
    from safety_monitor.io.bag import BagWriter
    from safety_monitor.sim.runner import run_episode

    states = list(itertools.islice(run_episode("pick_and_place_mug", None, 0), 40))
    path = tmp_path_factory.mktemp("bad") / "bad"
    with BagWriter(path) as w:
        for k, s in enumerate(states):
            t = 10.0 + s.t
            wrench = Wrench(np.array([np.nan, 0.0, 0.0]), s.wrench.torque) if k == 12 else s.wrench
            w.write_wrench("/wrist_wrench", t, wrench, log_t=t)
            for name, pose in s.object_poses.items():
                if k % 10 == 0:
                    q = pose.quaternion * (2.0 if k == 20 and name == "mug" else 1.0)
                    w.write_pose(f"/objects/{name}/pose", t, Pose(pose.position, q), log_t=t)
            names, position = list(s.joint_names), s.joint_position.copy()
            stamp = t
            if k == 5:
                position[0] = np.nan
            elif k == 9:
                stamp = 10.0 + states[6].t
            elif k == 15:
                names, position = names + names[:1], np.append(position, position[0])
            elif k == 39:
                stamp = t + 5.0
            w.write_joint_state("/joint_states", stamp, names, position, log_t=t)
    return path


def _spy(monkeypatch):
    """Every stage call and what it returned: (input, frame made, issues)."""
    calls = []

    def recording(name):
        method = getattr(Estimator, name)

        def call(self, *args):
            step = method(self, *args)
            calls.append(
                (name, None if step.sample is None else (step.sample.frame, step.sample.t), step.issues, step.frozen)
            )
            return step

        return call

    for name in ("joints", "wrench", "pose", "finish"):
        monkeypatch.setattr(stage_module.Estimator, name, recording(name))
    return calls


def test_the_node_and_replay_attribute_the_same_issues_to_the_same_frames(bad_stream_bag, monkeypatch):
    rclpy = pytest.importorskip("rclpy")
    from safety_monitor.io.bag import BagReader
    from safety_monitor.nodes.estimator_node import EstimatorNode
    from safety_monitor.replay.names import absolute_mapping
    from safety_monitor.replay.score import ReplayConfig, score_bag

    calls = _spy(monkeypatch)
    replayed = score_bag(bad_stream_bag, ReplayConfig(rate_hz=500.0))
    assert replayed.ok, replayed.error
    by_replay = list(calls)
    calls.clear()

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = EstimatorNode(context=context, namespace="/same_issues")
        topics = absolute_mapping(StreamMapping())  # as replay resolves the defaults, in the root namespace
        poses = {topics.pose_topic(name): name for name in node.grounder.robot.objects}
        with BagReader(bad_stream_bag) as bag:  # the very bytes replay read, in its order
            for topic, _, _, raw in bag.raw_messages({"/joint_states", "/wrist_wrench", *poses}):
                if topic == "/joint_states":
                    node._on_joint_states(raw)
                elif topic == "/wrist_wrench":
                    node._on_wrench(raw)
                else:
                    node._on_pose(poses[topic], raw)
        node.stage.finish()  # the node's stream never ends; replay's does
        issues = dict(node.issues)
        node.destroy_node()
    finally:
        context.try_shutdown()
    assert calls == by_replay
    assert issues == {k: v for k, v in replayed.issues.items() if k != IssueKind.TIME_JUMP}
    made = [c for c in by_replay if c[0] == "joints"]
    assert [c[1] is None for c in made].count(True) == 4  # NaN, back, twice, the jump held back
    assert {kind for c in by_replay for kind in (i.kind for i in c[2])} == {
        IssueKind.NAN,
        IssueKind.BACKWARDS,
        IssueKind.DUPLICATE_NAMES,
        IssueKind.DENORMALIZED_QUATERNION,
        IssueKind.TIME_JUMP,
    }
    assert all(c[2] == () for c in made if c[1] is not None)  # no issue rides on a later frame


def test_the_node_on_its_clock_and_replay_on_log_times_both_say_a_paused_stream_resumed(tmp_path):
    """/joint_states paused 17 s (the wrench went on) in a recording: the node, its clock at each message's
    log time as it was when recorded, and replay report the same stream_resumed, never a time_jump."""
    rclpy = pytest.importorskip("rclpy")
    from safety_monitor.io.bag import BagReader, BagWriter
    from safety_monitor.nodes.estimator_node import EstimatorNode
    from safety_monitor.replay.score import ReplayConfig, score_bag
    from safety_monitor.sim.runner import run_episode

    states = list(itertools.islice(run_episode("pick_and_place_mug", None, 0), 40))
    path = tmp_path / "paused"
    with BagWriter(path) as w:
        for k, s in enumerate(states):
            t = 10.0 + s.t + (17.0 if k >= 20 else 0.0)
            if k == 20:
                for j in range(1, 170):  # the wrench goes on at 10 Hz through the pause
                    wrench = Wrench(s.wrench.force + 1e-6 * j, s.wrench.torque)
                    w.write_wrench("/wrist_wrench", t - 17.0 + j / 10, wrench, log_t=t - 17.0 + j / 10)
            w.write_wrench("/wrist_wrench", t, s.wrench, log_t=t)
            position = s.joint_position + 1e-9 * k  # a driver's noise: never bit-identical, never frozen
            w.write_joint_state("/joint_states", t, list(s.joint_names), position, log_t=t)
    replayed = score_bag(path, ReplayConfig(rate_hz=500.0))
    assert replayed.ok, replayed.error

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = EstimatorNode(context=context, namespace="/resumed")
        with BagReader(path) as bag:
            for topic, _, log_ns, raw in bag.raw_messages({"/joint_states", "/wrist_wrench"}):
                node._read_clock = lambda now=log_ns / 1e9: now  # the node's clock when the message came
                (node._on_joint_states if topic == "/joint_states" else node._on_wrench)(raw)
        issues = dict(node.issues)
        node.destroy_node()
    finally:
        context.try_shutdown()
    resumed = {IssueKind.STREAM_STOPPED: 1, IssueKind.STREAM_RESUMED: 1}
    assert issues == resumed and {k: replayed.issues[k] for k in resumed} == resumed
    assert IssueKind.TIME_JUMP not in replayed.issues
