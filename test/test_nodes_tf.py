"""The estimator node's live /tf and /tf_static inputs (issue 14): object poses chained through TF reach the
grounder as replay's stage gets them from the same bytes, a /tf_static published before the node starts is
still received (transient local), and a malformed TF message is one undecodable issue, not a crash.

Why the wire type is swapped: this machine has no tf2_msgs wheel (`from tf2_msgs.msg import TFMessage` fails),
so no subscription of that type can be made. The node takes /tf raw (bytes) and reads them with its one
decoder; only the subscription's type and the deserialiser behind the decoder come from tf2_msgs
(`estimator_node._tf_input`). The test swaps both: the subscriptions are made with std_msgs/String (which
has typesupport here; the probe publishes on the same type, so the two match), the probe publishes
TFMessage bytes serialised by rosbags (as a bag holds them), and the decoder is replay's (rosbags'
deserialiser of tf2_msgs/msg/TFMessage). What a ROS install does differently is the type name the
subscription announces and rclpy's deserialiser of the TFMessage class; everything from the bytes on is the
node's own path: the topics and QoS it subscribes with, its TF callback, the stage, the grounder."""

from __future__ import annotations

import contextlib
import itertools
import uuid
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from robot_input_bags import CAMERA, cube_in_camera  # noqa: E402
from test_nodes_estimator import OFFSET, spin_until  # noqa: E402

from safety_monitor.frames import Pose  # noqa: E402
from safety_monitor.io import messages as m  # noqa: E402
from safety_monitor.io.bag import default_typestore  # noqa: E402
from safety_monitor.nodes import qos  # noqa: E402
from safety_monitor.pipeline.decode import MessageType, TypedDecoders  # noqa: E402

FRAMES = 10
TF_TYPE = "tf2_msgs/msg/TFMessage"
OBJECT, LINK = "mug", "mug_link"


@pytest.fixture(scope="module")
def states():
    from safety_monitor.sim.runner import run_episode

    return list(itertools.islice(run_episode("pick_and_place_mug", None, 0), FRAMES))


def replay_tf_decoder():
    """Replay's decoder of a bag's TFMessage stream: rosbags' deserialiser (no direct reader for TF)."""
    store = default_typestore()
    return TypedDecoders(MessageType.TF_MESSAGE, store.deserialize_cdr, lambda msgtype: False)[TF_TYPE]


class TfBytes:
    """TFMessage bytes as rosbags serialises them (`BagWriter.write_tf`'s message)."""

    def __init__(self) -> None:
        self.store = default_typestore()
        self.types = m.rosbags_types(self.store)

    def __call__(self, transforms: list[tuple[str, str, Pose, float]]) -> bytes:
        return bytes(self.store.serialize_cdr(m.tf_msg(self.types, transforms), TF_TYPE))


def recording(grounder) -> list[dict[str, Pose]]:
    """The object poses of every state the grounder steps on (its instance's step wrapped)."""
    seen: list[dict[str, Pose]] = []
    step = grounder.step

    def record(state):
        seen.append(dict(state.object_poses))
        return step(state)

    grounder.step = record
    return seen


@contextlib.contextmanager
def tf_node(tmp_path, monkeypatch, before_start, mapping=None, config_dir=""):
    """A probe node whose /tf_static goes out (`before_start(h)`) before the estimator exists, then the
    estimator with `mug` taken from TF (relative tf topics: under the random namespace), one executor.
    `mapping`: more topic mapping keys; `config_dir`: the robot's (default the package's workcell)."""
    from std_msgs.msg import String

    from safety_monitor.nodes import estimator_node

    monkeypatch.setattr(estimator_node, "_tf_input", lambda: (String, replay_tf_decoder()))
    topics = tmp_path / "topics.yaml"
    doc = {"tf": "tf", "tf_static": "tf_static", "object_frames": {OBJECT: LINK}, **(mapping or {})}
    topics.write_text(yaml.safe_dump(doc))
    ns = "/tf" + uuid.uuid4().hex[:8]
    context = rclpy.Context()
    rclpy.init(context=context)
    T = m.rclpy_types()
    probe = rclpy.create_node("probe", namespace=ns, context=context)
    h = SimpleNamespace(probe=probe, types=T, got=[], diag=[], tf_calls=0, bytes=TfBytes())
    h.tf_static = probe.create_publisher(String, "tf_static", qos.LATCHED)
    h.tf = probe.create_publisher(String, "tf", qos.input_qos())
    before_start(h)
    h.executor = rclpy.executors.SingleThreadedExecutor(context=context)
    h.executor.add_node(probe)
    node = None
    try:
        node = h.node = estimator_node.EstimatorNode(
            context=context,
            namespace=ns,
            parameter_overrides=[
                Parameter("topics_file", value=str(topics)),
                Parameter("config_dir", value=str(config_dir)),
                Parameter("topics.wrench", value=""),
                Parameter("joint_states_timeout_s", value=120.0),
                Parameter("diagnostics_period_s", value=0.2),
            ],
        )
        on_tf = node._on_tf  # the subscriptions look it up per message: counted to wait for each one

        def counted(read, raw):
            h.tf_calls += 1
            on_tf(read, raw)

        node._on_tf = counted
        h.seen = recording(node.grounder)
        probe.create_subscription(
            T.DiagnosticArray,
            "safety_monitor/predicates",
            lambda msg: h.got.append(m.decode_predicates(msg)),
            qos.PREDICATES,
        )
        probe.create_subscription(
            T.DiagnosticArray,
            "/diagnostics",
            lambda msg: h.diag.extend(
                (s.level, dict((kv.key, kv.value) for kv in s.values))
                for s in msg.status
                if s.hardware_id == ns.strip("/")
            ),
            qos.DIAGNOSTICS,
        )
        h.joints = probe.create_publisher(T.JointState, "joint_states", qos.input_qos())
        h.executor.add_node(node)
        yield h
    finally:
        h.executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        if node is not None:
            node.destroy_node()
        probe.destroy_node()
        context.try_shutdown()


def _static(h) -> bytes:
    return h.bytes([("arm_base", "camera", CAMERA, 0.5)])


def _mug_in_camera(states) -> Pose:
    return cube_in_camera(states[0].object_poses[OBJECT].position)


def test_tf_object_poses_reach_the_grounder_as_in_replay_and_tf_static_is_latched(states, tmp_path, monkeypatch):
    from safety_monitor.grounding.grounder import load_default_grounder
    from safety_monitor.pipeline.estimator import Estimator

    static_bytes: list[bytes] = []

    def publish_static(h):  # before the estimator exists: only transient local durability delivers it
        static_bytes.append(_static(h))
        h.tf_static.publish(static_bytes[0])

    with tf_node(tmp_path, monkeypatch, publish_static) as h:
        executor, node = h.executor, h.node
        spin_until(executor, lambda: h.joints.get_subscription_count() and h.tf.get_subscription_count())
        spin_until(executor, lambda: h.tf_calls == 1)  # the static link, sent before the node subscribed
        in_camera = _mug_in_camera(states)
        read = replay_tf_decoder()
        stage = Estimator(
            load_default_grounder(500.0, wrench_sensor=False), node.mapping, node.params
        )  # replay's stage, same bytes
        stage_seen = recording(stage.grounder)
        stage_got = [stage.transforms(read(static_bytes[0]))]
        for k, s in enumerate(states):
            t = s.t + OFFSET
            raw = h.bytes([("camera", LINK, in_camera, t - 0.004)])
            h.tf.publish(raw)
            spin_until(executor, lambda: h.tf_calls == k + 2)
            msg = m.joint_state_msg(h.types, t, s.joint_names, s.joint_position, s.joint_velocity, s.joint_effort)
            h.joints.publish(msg)
            spin_until(executor, lambda: len(h.got) == k + 1)
            stage_got.append(stage.transforms(read(raw)))
            stage_got.append(stage.joints(m.joint_state_sample(msg)))
        assert not any(step.issues for step in stage_got) and node.issues == {}
        assert len(h.seen) == len(stage_seen) == FRAMES
        mug = states[0].object_poses[OBJECT].position  # where cube_in_camera put it in the base frame
        for live, replay in zip(h.seen, stage_seen):
            assert set(live) == set(replay) == {OBJECT}  # the other objects' pose topics are silent
            np.testing.assert_array_equal(live[OBJECT].position, replay[OBJECT].position)
            np.testing.assert_array_equal(live[OBJECT].quaternion, replay[OBJECT].quaternion)
            np.testing.assert_allclose(live[OBJECT].position, mug, atol=1e-12)
            np.testing.assert_allclose(np.abs(live[OBJECT].quaternion), [1, 0, 0, 0], atol=1e-12)
        samples = [step.sample for step in stage_got if step.sample is not None]
        for g, e in zip(h.got, samples):
            assert g.frame == e.frame and g.t == pytest.approx(e.t, abs=1e-9)
            assert dict(g.values) == dict(e.values) and g.unknown == e.unknown and g.stale == e.stale
        assert f"object_pose/{OBJECT}" not in h.got[-1].stale  # fresh from TF


def test_a_malformed_tf_message_is_one_undecodable_issue_and_tf_keeps_working(states, tmp_path, monkeypatch):
    with tf_node(tmp_path, monkeypatch, lambda h: h.tf_static.publish(_static(h))) as h:
        executor, node = h.executor, h.node
        spin_until(executor, lambda: h.joints.get_subscription_count() and h.tf.get_subscription_count())
        spin_until(executor, lambda: h.tf_calls == 1)
        h.tf.publish(b"\x00\x01\x00\x00\xff\xff\xff\x7f")  # a CDR header and a sequence of 2**31 transforms
        spin_until(executor, lambda: h.tf_calls == 2)
        assert node.issues == {"undecodable": 1}
        spin_until(executor, lambda: h.diag and h.diag[-1][1].get("issues.undecodable") == "1")
        s = states[0]
        h.tf.publish(h.bytes([("camera", LINK, _mug_in_camera(states), s.t + OFFSET - 0.004)]))
        spin_until(executor, lambda: h.tf_calls == 3)
        h.joints.publish(m.joint_state_msg(h.types, s.t + OFFSET, s.joint_names, s.joint_position))
        spin_until(executor, lambda: len(h.got) == 1)
        assert OBJECT in h.seen[-1] and node.issues == {"undecodable": 1}


def test_a_mobile_base_is_placed_live_from_tf_as_in_replay(tmp_path, monkeypatch):
    """world_frame in the node's topics file: the grounder is built for a mobile base, and the base's pose in the
    world frame (map -> odom latched, odom -> base_link on /tf) reaches it with every frame."""
    from test_mobile_base import CUBE, IDENTITY, JOINTS, ODOM, arm_at, base_at, write_setup

    robot, _ = write_setup(tmp_path / "robot")
    latched = TfBytes()([("map", "odom", Pose(ODOM, IDENTITY), 0.0)])
    mapping = {"world_frame": "map", "object_frames": {"cube": "cube_link"}}
    with tf_node(tmp_path, monkeypatch, lambda h: h.tf_static.publish(latched), mapping, robot.parent) as h:
        executor, node = h.executor, h.node
        bases: list[Pose | None] = []
        step = node.grounder.step
        node.grounder.step = lambda state: bases.append(state.base_pose) or step(state)
        spin_until(executor, lambda: h.joints.get_subscription_count() and h.tf.get_subscription_count())
        spin_until(executor, lambda: h.tf_calls == 1)
        assert node.grounder.mobile_base
        for k in range(FRAMES):
            t = OFFSET + k / 25.0
            h.tf.publish(h.bytes([("odom", "base_link", base_at(k), t - 0.002), ("map", "cube_link", CUBE, t - 0.004)]))
            spin_until(executor, lambda: h.tf_calls == k + 2)
            h.joints.publish(m.joint_state_msg(h.types, t, JOINTS, arm_at(k, False)))
            spin_until(executor, lambda: len(h.got) == k + 1)
        assert node.issues == {} and len(bases) == FRAMES
        for k, base in enumerate(bases):
            assert base is not None
            np.testing.assert_allclose(base.position, base_at(k).position + ODOM, atol=1e-12)
        assert "base_pose" not in h.got[-1].stale and "forbidden_contact" not in h.got[-1].unknown


def test_a_mobile_base_s_jump_is_said_and_unplaces_the_robot_live_as_in_replay(tmp_path, monkeypatch):
    """The same drive with the base 2 m ahead from frame 4 on: the node says one base_jump and its frames have the
    base pose unusable from then (0.5 s of plausible poses not yet seen), the same frames as replay's stage."""
    from test_mobile_base import CUBE, IDENTITY, JOINTS, ODOM, arm_at, base_at, write_setup

    from safety_monitor.enums import IssueKind
    from safety_monitor.frames import JointSample
    from safety_monitor.grounding.grounder import load_default_grounder
    from safety_monitor.pipeline.estimator import Estimator

    robot, mapping = write_setup(tmp_path / "robot")
    odom = ("map", "odom", Pose(ODOM, IDENTITY), 0.0)
    stage = Estimator(load_default_grounder(25.0, robot, wrench_sensor=False, mobile_base=True), mapping)
    stage.transforms([odom])
    live = {"world_frame": "map", "object_frames": {"cube": "cube_link"}}
    with tf_node(tmp_path, monkeypatch, lambda h: h.tf_static.publish(h.bytes([odom])), live, robot.parent) as h:
        executor, node = h.executor, h.node
        spin_until(executor, lambda: h.joints.get_subscription_count() and h.tf.get_subscription_count())
        spin_until(executor, lambda: h.tf_calls == 1)
        replayed = []
        for k in range(FRAMES):
            t = OFFSET + k / 25.0
            base = Pose(base_at(k).position + [2.0 * (k >= 4), 0.0, 0.0], IDENTITY)
            transforms = [("odom", "base_link", base, t - 0.002), ("map", "cube_link", CUBE, t - 0.004)]
            h.tf.publish(h.bytes(transforms))
            spin_until(executor, lambda: h.tf_calls == k + 2)
            h.joints.publish(m.joint_state_msg(h.types, t, JOINTS, arm_at(k, False)))
            spin_until(executor, lambda: len(h.got) == k + 1)
            stage.transforms(transforms)
            replayed.append(stage.joints(JointSample(JOINTS, arm_at(k, False), None, None, t)).sample)
        assert node.issues == {IssueKind.BASE_JUMP: 1}
        assert ["base_pose" in s.stale for s in h.got] == [False] * 4 + [True] * (FRAMES - 4)
        assert [s.stale for s in h.got] == [s.stale for s in replayed]
        assert [s.unknown for s in h.got] == [s.unknown for s in replayed]
