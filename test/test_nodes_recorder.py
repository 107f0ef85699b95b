"""The recorder node: raw topics to rosbag2 (sqlite3 here), one bag per rollout, header stamps as log
times, readable back by rosbags as the messages that were published."""

import time
import uuid
from types import SimpleNamespace

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from safety_monitor.frames import Pose, Wrench  # noqa: E402
from safety_monitor.io import messages as m  # noqa: E402
from safety_monitor.io.bag import BagReader  # noqa: E402
from safety_monitor.nodes import qos  # noqa: E402
from safety_monitor.pipeline.markers import START, EpisodeMarker, marker_msg  # noqa: E402

WAIT_S = 120.0  # only a broken run waits this long for a condition: a slow, loaded machine passes far below it


def spin_until(executor, condition):
    end = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < end, "timed out"
        executor.spin_once(timeout_sec=0.02)


def test_recorder_splits_rollouts_into_bags_of_the_published_messages(tmp_path):
    from safety_monitor.nodes.recorder import RecorderNode

    ns = "/r" + uuid.uuid4().hex[:8]
    context = rclpy.Context()
    rclpy.init(context=context)
    recorder = RecorderNode(tmp_path / "bags", ["mug"], "sqlite3", split_rollouts=True, context=context, namespace=ns)
    probe = rclpy.create_node("probe", namespace=ns, context=context)
    T = m.rclpy_types()
    pubs = {
        "clock": probe.create_publisher(T.Clock, "/clock", qos.CLOCK),
        "joints": probe.create_publisher(T.JointState, "joint_states", qos.input_qos()),
        "wrench": probe.create_publisher(T.WrenchStamped, "wrist_wrench", qos.input_qos()),
        "pose": probe.create_publisher(T.PoseStamped, "objects/mug/pose", qos.input_qos()),
        "predicates": probe.create_publisher(T.DiagnosticArray, "safety_monitor/predicates", qos.PREDICATES),
        "events": probe.create_publisher(T.DiagnosticArray, "safety_monitor/events", qos.EVENTS),
        "episode": probe.create_publisher(T.DiagnosticArray, "safety_monitor/episode", qos.EPISODE),
    }
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(recorder)
    executor.add_node(probe)

    event = {"kind": "opened", "property": "p", "category": "c", "frame": 1, "t": None, "episode": 0}
    try:
        spin_until(executor, lambda: all(p.get_subscription_count() for p in pubs.values()))
        recorded = 0
        for rollout, t0 in enumerate((1.0, 3.0)):
            pubs["episode"].publish(marker_msg(T, EpisodeMarker(START, rollout, t0)))
            spin_until(executor, lambda n=rollout + 1: len(recorder._starts) == n)  # its start known before its frames
            for k in range(3 + rollout):
                t = t0 + 0.002 * k
                pubs["clock"].publish(m.clock_msg(T, t))
                pubs["wrench"].publish(m.wrench_msg(T, t, Wrench(np.array([1.0, 2.0, 3.0]), np.zeros(3))))
                pubs["joints"].publish(m.joint_state_msg(T, t, ["j1", "j2"], [0.1 * k, rollout]))
                pubs["predicates"].publish(m.predicates_msg(T, m.PredicateSample({"a": bool(k % 2)}, t, k)))
            pubs["pose"].publish(m.pose_msg(T, t0, Pose(np.array([0.5, 0.0, 0.4]), np.array([1.0, 0, 0, 0]))))
            pubs["events"].publish(m.events_msg(T, [{**event, "t": t0 + 0.002, "rollout": rollout}], t0 + 0.002))
            recorded += 4 * (3 + rollout) + 2
            spin_until(executor, lambda n=recorded: recorder.recorded == n)
    finally:
        executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        recorder.destroy_node()
        probe.destroy_node()
        context.try_shutdown()

    assert recorder.bags == [tmp_path / "bags" / "episode_000", tmp_path / "bags" / "episode_001"]
    for rollout, (bag, t0) in enumerate(zip(recorder.bags, (1.0, 3.0))):
        assert list(bag.glob("*.db3"))
        with BagReader(bag) as reader:
            counts = {topic: s.count for topic, s in reader.topics.items()}
            frames = 3 + rollout
            assert counts == {
                "/clock": frames,
                f"{ns}/joint_states": frames,
                f"{ns}/wrist_wrench": frames,
                f"{ns}/safety_monitor/predicates": frames,
                f"{ns}/objects/mug/pose": 1,
                f"{ns}/safety_monitor/events": 1,
            }
            joints = [(t_ns, m.joint_state_sample(msg)) for _, t_ns, msg in reader.messages({f"{ns}/joint_states"})]
            assert [t_ns for t_ns, _ in joints] == [round((t0 + 0.002 * k) * 1e9) for k in range(frames)]
            assert [s.position.tolist() for _, s in joints] == [[0.1 * k, rollout] for k in range(frames)]
            preds = [m.decode_predicates(msg) for _, _, msg in reader.messages({f"{ns}/safety_monitor/predicates"})]
            assert [(p.frame, p.values["a"]) for p in preds] == [(k, bool(k % 2)) for k in range(frames)]
            ((_, _, events_msg),) = reader.messages({f"{ns}/safety_monitor/events"})
            assert m.decode_events(events_msg) == [{**event, "t": t0 + 0.002, "rollout": rollout}]


def test_log_order_writes_oldest_first_holding_a_bounded_number():
    from safety_monitor.nodes.recorder import LogOrder

    written = []
    order = LogOrder(lambda topic, msg, t, log_t: written.append((topic, t, log_t)), held=2)
    for topic, t in (("j", 1.002), ("p", 1.000), ("q", 1.000), ("j", 1.004)):
        order.push(topic, None, t)
    assert written == [("p", 1.000, 1.000), ("q", 1.000, 1.000)]  # ties in arrival order, two held
    order.push("late", None, 1.001)  # behind what is held, but newer than anything written: still in order
    order.flush()
    assert written[2:] == [("late", 1.001, 1.001), ("j", 1.002, 1.002), ("j", 1.004, 1.004)]
    order.push("later", None, 1.003)  # older than what was written (1.004): at the newest log time so far
    order.flush()
    assert written[-1] == ("later", 1.003, 1.004) and order.late == 1


def test_recorded_mcap_is_in_log_time_order_though_topics_arrive_out_of_it(tmp_path):
    """A frame's joint states arrive before the previous frame's pose: the file is still in log-time order, so
    it reads back once its index is gone (a killed recorder writes none)."""
    from rosbags.rosbag2.storage_mcap import McapReader

    from safety_monitor.nodes.recorder import RecorderNode

    ns = "/r" + uuid.uuid4().hex[:8]
    context = rclpy.Context()
    rclpy.init(context=context)
    recorder = RecorderNode(tmp_path / "bag", ["mug"], "mcap", context=context, namespace=ns)
    probe = rclpy.create_node("probe", namespace=ns, context=context)
    T = m.rclpy_types()
    joints = probe.create_publisher(T.JointState, "joint_states", qos.input_qos())
    pose = probe.create_publisher(T.PoseStamped, "objects/mug/pose", qos.input_qos())
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(recorder)
    executor.add_node(probe)

    try:
        spin_until(executor, lambda: joints.get_subscription_count() and pose.get_subscription_count())
        joints.publish(m.joint_state_msg(T, 1.002, ["j1"], [0.1]))
        spin_until(executor, lambda: recorder.recorded == 1)  # the joints are received first
        pose.publish(m.pose_msg(T, 1.000, Pose(np.array([0.5, 0.0, 0.4]), np.array([1.0, 0, 0, 0]))))
        spin_until(executor, lambda: recorder.recorded == 2)
    finally:
        executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        recorder.destroy_node()
        probe.destroy_node()
        context.try_shutdown()

    storage = McapReader(next((tmp_path / "bag").glob("*.mcap")))
    storage.open()
    try:  # the records in file order, as a reader without the index meets them
        scanned = [(c.topic, t) for c, t, _ in storage.messages_scan(storage.connections)]
    finally:
        storage.close()
    assert scanned == [(f"{ns}/objects/mug/pose", 1_000_000_000), (f"{ns}/joint_states", 1_002_000_000)]


def test_a_sample_at_an_episodes_start_goes_to_that_episodes_bag():
    """The start marker carries the sim's exact float time (45.946000000000005 here) and the episode's first
    pose its header stamp, rounded to nanoseconds (45.946): a bare comparison filed the pose in the previous
    episode's bag, which then replayed with a stream_stopped issue and the next one with stale poses."""
    from safety_monitor.io.messages import split_seconds, stamp_seconds
    from safety_monitor.nodes.recorder import rollout_of

    start = 45.946000000000005  # a sum of episode times, as the sim node computes an episode's offset
    sec, nanosec = split_seconds(start)
    stamp = stamp_seconds(SimpleNamespace(sec=sec, nanosec=nanosec))
    assert stamp < start and rollout_of([0.0, start], stamp) == 1
    assert rollout_of([0.0, start], start - 0.002) == 0
