"""The estimator node over real topics: one predicates message per /joint_states, equal to grounding
the same states directly; a start marker resets it; stopped joints turn its diagnostics STALE."""

import contextlib
import dataclasses
import itertools
import time
import uuid
from collections import Counter
from types import SimpleNamespace

import pytest

rclpy = pytest.importorskip("rclpy")

from kernel_refusals import count_kernels  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from test_no_false_alarms import LATE  # noqa: E402

from safety_monitor.io import messages as m  # noqa: E402
from safety_monitor.nodes import qos  # noqa: E402
from safety_monitor.pipeline.markers import START, EpisodeMarker, marker_msg  # noqa: E402

FRAMES = 40
OFFSET = 1.0  # the sim node's time of the first episode


WAIT_S = 120.0  # only a broken run waits this long for a condition: a slow, loaded machine passes far below it


def spin_until(executor, condition, timeout=WAIT_S, each=None):
    """Spin until `condition()`; `each()` (if given) runs before every spin, e.g. to keep a stream going."""
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        if each is not None:
            each()
        executor.spin_once(timeout_sec=0.02)


@contextlib.contextmanager
def estimator_and_probe(prefix, overrides):
    """An estimator node and a probe node in their own namespace and context, one executor spinning both;
    the probe collects the predicates (`got`) and the estimator's /diagnostics (`diag`) and publishes
    joint_states. Everything is destroyed on exit."""
    from safety_monitor.nodes.estimator_node import EstimatorNode

    ns = prefix + uuid.uuid4().hex[:8]
    context = rclpy.Context()
    rclpy.init(context=context)
    node = EstimatorNode(context=context, namespace=ns, parameter_overrides=overrides)
    probe = rclpy.create_node("probe", namespace=ns, context=context)
    T = m.rclpy_types()
    h = SimpleNamespace(node=node, probe=probe, types=T, got=[], diag=[])
    probe.create_subscription(
        T.DiagnosticArray,
        "safety_monitor/predicates",
        lambda msg: h.got.append(m.decode_predicates(msg)),
        qos.PREDICATES,
    )
    probe.create_subscription(
        T.DiagnosticArray,
        "/diagnostics",
        lambda msg: h.diag.extend((s.level, s.message) for s in msg.status if s.hardware_id == ns.strip("/")),
        qos.DIAGNOSTICS,
    )
    h.joints = probe.create_publisher(T.JointState, "joint_states", qos.input_qos())
    h.executor = rclpy.executors.SingleThreadedExecutor(context=context)
    h.executor.add_node(node)
    h.executor.add_node(probe)
    try:
        yield h
    finally:
        h.executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        node.destroy_node()
        probe.destroy_node()
        context.try_shutdown()


def test_a_best_effort_joint_states_publisher_is_named_on_diagnostics():
    """A sensor-data (best effort) /joint_states publisher against the reliable default inputs: no message
    ever arrives. /diagnostics only said 'waiting for joint_states'; it now names the QoS policy and the
    parameter that accepts such a publisher."""
    with estimator_and_probe("/q", [Parameter("diagnostics_period_s", value=0.2)]) as h:
        h.probe.create_publisher(h.types.JointState, "joint_states", qos.input_qos(best_effort=True))
        said = "waiting for joint_states: a publisher offers QoS incompatible with this subscription (RELIABILITY)"
        spin_until(h.executor, lambda: any(said in message for _, message in h.diag))
        level, message = next((lv, msg) for lv, msg in h.diag if said in msg)
        assert level == h.types.DiagnosticStatus.STALE and "best_effort_inputs: true" in message


def test_use_sim_time_without_a_clock_is_said_on_diagnostics():
    """`use_sim_time:=true` where nothing publishes /clock (a real robot launched as the sim's stack): node
    time stands at 0, so the /joint_states watchdog could never fire, and nothing said so."""
    overrides = [Parameter("use_sim_time", value=True), Parameter("diagnostics_period_s", value=0.2)]
    with estimator_and_probe("/k", overrides) as h:
        said = "use_sim_time and no clock message yet"
        spin_until(h.executor, lambda: any(said in message for _, message in h.diag))


@pytest.fixture(scope="module")
def states():
    from safety_monitor.sim.runner import run_episode

    return list(itertools.islice(run_episode("pick_and_place_mug", None, 0), FRAMES))


def test_predicates_match_direct_grounding_and_stop_turns_stale(states, monkeypatch):
    from safety_monitor.grounding.grounder import load_default_grounder

    direct = load_default_grounder(500.0)
    expected = [direct.step(dataclasses.replace(s, t=s.t + OFFSET)) for s in states]
    calls, refused = count_kernels(monkeypatch)  # from here: what the node decodes (as replay, test_replay_inputs)
    with estimator_and_probe(
        "/e", [Parameter("joint_states_timeout_s", value=0.3), Parameter("diagnostics_period_s", value=0.2)]
    ) as h:
        T, got, diag, executor, joints, probe = h.types, h.got, h.diag, h.executor, h.joints, h.probe
        wrench = probe.create_publisher(T.WrenchStamped, "wrist_wrench", qos.input_qos())
        poses = {
            o: probe.create_publisher(T.PoseStamped, f"objects/{o}/pose", qos.input_qos())
            for o in states[0].object_poses
        }
        markers = probe.create_publisher(T.DiagnosticArray, "safety_monitor/episode", qos.EPISODE)
        pubs = (joints, wrench, markers, *poses.values())
        spin_until(executor, lambda: all(p.get_subscription_count() for p in pubs))
        sent: dict[str, float] = {}
        for k, s in enumerate(states):  # one frame at a time, as the lockstep sim does
            t = s.t + OFFSET
            wrench.publish(m.wrench_msg(T, t, s.wrench))
            for name, pose in s.object_poses.items():
                sampled = t - s.object_ages[name]
                if sampled > sent.get(name, -1.0) + 1e-6:
                    sent[name] = sampled
                    poses[name].publish(m.pose_msg(T, sampled, pose))
            joints.publish(m.joint_state_msg(T, t, s.joint_names, s.joint_position, s.joint_velocity, s.joint_effort))
            spin_until(executor, lambda: len(got) == k + 1)
        assert [g.frame for g in got] == list(range(FRAMES))
        for g, e in zip(got, expected):
            assert g.t == pytest.approx(e.t, abs=1e-9)
            assert dict(g.values) == e.values and g.unknown == e.unknown
        # a frame's readings in one call (the general path on the first frame alone), no C kernel refused them
        assert calls["frame_readings"] >= FRAMES and calls["usable_poses"] <= 1 and refused == Counter()

        spin_until(executor, lambda: diag and diag[-1][0] == T.DiagnosticStatus.STALE)
        assert "no joint_states" in diag[-1][1]

        # a new rollout: the next frame is frame 0 of a fresh estimator state
        t0 = states[-1].t + OFFSET + 0.5
        markers.publish(marker_msg(T, EpisodeMarker(START, 1, t0)))
        spin_until(executor, lambda: h.node.frames == 0)
        s = states[0]
        seen = len(diag)
        joints.publish(m.joint_state_msg(T, s.t + t0, s.joint_names, s.joint_position))
        spin_until(executor, lambda: len(got) == FRAMES + 1)
        assert got[-1].frame == 0
        # the frame turns the node fresh; a slow machine may see the watchdog's next STALE (0.3 s without
        # joint_states) right behind that status, so any status since the frame counts, not only the last
        spin_until(executor, lambda: any(level != T.DiagnosticStatus.STALE for level, *_ in diag[seen:]))


def test_frozen_joint_states_are_published_stale_with_every_predicate_unknown(states):
    """The frozen rule is the assembler's, in stamp time: the node publishes what replay scores."""
    # the watchdog kept out of the way: its STALE ('no joint_states', between two slow spins) would hide 'frozen'
    with estimator_and_probe(
        "/f",
        [
            Parameter("joint_states_frozen_s", value=0.011),
            Parameter("joint_states_timeout_s", value=WAIT_S),
            Parameter("diagnostics_period_s", value=0.2),
        ],
    ) as h:
        T, got, diag, executor, joints = h.types, h.got, h.diag, h.executor, h.joints
        spin_until(executor, lambda: joints.get_subscription_count())
        s = states[0]
        for k in range(10):  # identical values for 18 ms of stamp time
            joints.publish(m.joint_state_msg(T, OFFSET + k * 0.002, s.joint_names, s.joint_position))
            spin_until(executor, lambda: len(got) == k + 1)
        assert ["joint_states" in g.stale for g in got] == [False] * 6 + [True] * 4
        assert all(g.unknown == set(g.values) for g in got[6:])
        spin_until(executor, lambda: diag and "frozen" in diag[-1][1])
        assert diag[-1][0] == T.DiagnosticStatus.STALE and h.node.issues["frozen"] == 1
        # moving again: one frame resyncs the grounder, its warm-up frames are blind (evidence restarts after a
        # break), then the predicates are known
        warm = h.node.grounder.warmup_frames
        for k in range(warm + 2):
            joints.publish(
                m.joint_state_msg(T, OFFSET + 0.02 + k * 0.002, s.joint_names, s.joint_position + (k + 1) * 1e-6)
            )
            spin_until(executor, lambda: len(got) == 11 + k)
        assert ["joint_states" in g.stale for g in got[10:12]] == [True, False]
        assert got[-1].unknown != set(got[-1].values)
        spin_until(executor, lambda: "frozen" not in diag[-1][1])


def test_a_stream_whose_every_message_is_dropped_is_reported_stale_not_fresh(states):
    """A publisher whose stamps stay behind the last frame (by less than restart_backwards_s: a larger jump
    back is a restarted input, a new rollout): every message is dropped as going backwards. The estimator said
    'inputs fresh' (OK) while grounding nothing."""
    # the watchdog kept out of the way: its STALE ('no joint_states') is another message
    with estimator_and_probe(
        "/d", [Parameter("joint_states_timeout_s", value=WAIT_S), Parameter("diagnostics_period_s", value=0.2)]
    ) as h:
        T, got, diag, executor, joints = h.types, h.got, h.diag, h.executor, h.joints
        spin_until(executor, lambda: joints.get_subscription_count())
        s = states[0]
        for k in range(5):  # the last frame is at 7.008 s
            joints.publish(m.joint_state_msg(T, 7.0 + k * 0.002, s.joint_names, s.joint_position + k * 1e-6))
            spin_until(executor, lambda: len(got) == k + 1)
        # The stream behind, one message per spin until a whole diagnostics period has passed on it: its stamps
        # cycle over [5, 7) s, behind the last frame (within the 3 s restart limit) however many messages come.
        behind = (5.0 + (k % 1000) * 0.002 for k in itertools.count())

        def publish_behind():
            t = next(behind)
            joints.publish(m.joint_state_msg(T, t, s.joint_names, s.joint_position + t * 1e-3))

        spin_until(executor, lambda: diag and "every joint_states message dropped" in diag[-1][1], each=publish_behind)
        assert diag[-1][0] == T.DiagnosticStatus.STALE and "backwards x" in diag[-1][1]
        assert len(got) == 5


@pytest.mark.parametrize("wrench_topic", ["", "wrist_wrench"])
def test_no_wrench_topic_is_not_grounded_while_a_silent_configured_one_is_stale(states, wrench_topic):
    """`topics.wrench` '' (no sensor): excess_wrench is constantly false, never unknown, and no frame has the
    wrench stale; a configured wrench topic that sends nothing stays stale, its predicate unknown (loud)."""
    with estimator_and_probe(
        "/w",
        [
            Parameter("topics.wrench", value=wrench_topic),
            Parameter("joint_states_timeout_s", value=WAIT_S),
            Parameter("diagnostics_period_s", value=0.2),
        ],
    ) as h:
        T, got, executor, joints = h.types, h.got, h.executor, h.joints
        spin_until(executor, lambda: joints.get_subscription_count())
        assert h.node.grounder.wrench_sensor is bool(wrench_topic)
        for k, s in enumerate(states[:5]):
            joints.publish(m.joint_state_msg(T, s.t + OFFSET, s.joint_names, s.joint_position + k * 1e-6))
            spin_until(executor, lambda: len(got) == k + 1)
        sensed = bool(wrench_topic)
        assert all(("wrench" in g.stale) is sensed and ("excess_wrench" in g.unknown) is sensed for g in got)
        assert not any(g.values["excess_wrench"] for g in got)


def test_joint_states_that_come_late_after_a_silence_are_said_late_not_stopped(states):
    """The watchdog's STALE is right either way; what the node says after it is not. Messages whose stamps
    continue the last one heard were sent in time and reached the node late (its process held up): a
    late_arrival. A driver that stopped sends its next stamp as far on as the silence: no late_arrival.
    The node's clock is set by hand (sim time) and its callbacks called directly."""
    from rclpy.serialization import serialize_message
    from rclpy.time import Time

    from safety_monitor.enums import IssueKind
    from safety_monitor.nodes.estimator_node import EstimatorNode

    context = rclpy.Context()
    rclpy.init(context=context)
    node = EstimatorNode(
        context=context,
        namespace="/late" + uuid.uuid4().hex[:8],
        parameter_overrides=[Parameter("use_sim_time", value=True), Parameter("joint_states_timeout_s", value=0.3)],
    )
    said = []
    node._throttled = lambda level, key, text: said.append((level, text))
    try:
        T, clock = m.rclpy_types(), node.get_clock()

        def at(t):
            clock.set_ros_time_override(Time(nanoseconds=round(t * 1e9)))

        def send(k, stamp):
            s = states[k]
            msg = m.joint_state_msg(T, stamp, s.joint_names, s.joint_position, s.joint_velocity, s.joint_effort)
            node._on_joint_states(serialize_message(msg))

        stamps = [s.t + OFFSET for s in states]
        for k in range(10):
            at(stamps[k])
            send(k, stamps[k])
        at(stamps[9] + 0.5)  # nothing for 0.5 s on the node's clock ...
        node._watchdog()
        assert node._stale
        send(10, stamps[10])  # ... then the next message, stamped 2 ms after the last one heard
        assert node.issues[IssueKind.LATE_ARRIVAL] == 1 and not node._stale
        [(level, text)] = said  # the line the false-alarm tests read as evidence of a starved machine
        assert level == "warning" and LATE.findall(f"[estimator_node]: {text}") == ["joint_states"]

        for k in range(11, 20):
            at(stamps[k] + 0.5)
            send(k, stamps[k] + 0.5)
        at(stamps[19] + 1.0)  # the driver stops for 0.5 s ...
        node._watchdog()
        assert node._stale
        send(20, stamps[20] + 1.0)  # ... and its next stamp is 0.5 s on: not late, it stopped
        assert node.issues[IssueKind.LATE_ARRIVAL] == 1 and not node._stale
        assert [text for _, text in said if LATE.search(f"[estimator_node]: {text}")] == [said[0][1]]
    finally:
        node.destroy_node()
        context.try_shutdown()


def test_a_clean_stop_leaves_the_estimator_status_stale_not_fresh(states):
    """Diagnostics tools keep the last status per name for good: a stopped estimator left `inputs fresh` (OK)
    behind, read as inputs still watched, beside a monitor that said it stopped. Its last status now says so.
    Callbacks are called directly and the publisher is a stand-in (nothing to wait for)."""
    from rclpy.serialization import deserialize_message, serialize_message

    from safety_monitor.nodes.estimator_node import EstimatorNode

    context = rclpy.Context()
    rclpy.init(context=context)
    node = EstimatorNode(
        context=context,
        namespace="/stop" + uuid.uuid4().hex[:8],
        parameter_overrides=[Parameter("topics.wrench", value="")],
    )
    T = m.rclpy_types()
    sent = []
    node._diag_pub = SimpleNamespace(
        publish=lambda raw: sent.extend(
            (s.level, s.message) for s in deserialize_message(raw, T.DiagnosticArray).status
        )
    )
    try:
        for s in states[:5]:
            msg = m.joint_state_msg(T, s.t + OFFSET, s.joint_names, s.joint_position, s.joint_velocity, s.joint_effort)
            node._on_joint_states(serialize_message(msg))
        node._publish_diagnostics()
        running = sent[-1]
        assert running[0] != T.DiagnosticStatus.STALE, running
    finally:
        node.destroy_node()
        context.try_shutdown()
    assert sent[-1] == (T.DiagnosticStatus.STALE, f"stopped; last: {running[1]}")


def test_a_clock_step_that_reaches_the_wrench_first_is_a_time_jump_not_a_stopped_joint_stream(states):
    """The robot's clock steps 17 s; the wrench's stepped message comes a control period before the joints' (all
    a period apart on the node's clock). The node reads its clock for the wrench when the stage asks, so it says
    what replay says of the same arrivals: a time jump, no stopped joint stream. A joint stream that then stops
    while the wrench goes on is still said to have stopped. Sim time set by hand, callbacks called directly."""
    from rclpy.serialization import serialize_message
    from rclpy.time import Time

    from safety_monitor.enums import IssueKind
    from safety_monitor.nodes.estimator_node import EstimatorNode

    context = rclpy.Context()
    rclpy.init(context=context)
    node = EstimatorNode(
        context=context,
        namespace="/step" + uuid.uuid4().hex[:8],
        parameter_overrides=[Parameter("use_sim_time", value=True)],
    )
    try:
        T, clock = m.rclpy_types(), node.get_clock()
        step, period = 17.255, states[1].t - states[0].t

        def send(k, *, joints=True, shift=0.0):
            s, t = states[min(k, FRAMES - 1)], OFFSET + k * period
            clock.set_ros_time_override(Time(nanoseconds=round(t * 1e9)))  # the node's clock runs on
            node._on_wrench(serialize_message(m.wrench_msg(T, t + shift, s.wrench)))
            if joints:
                msg = m.joint_state_msg(T, t + shift, s.joint_names, s.joint_position, s.joint_velocity, s.joint_effort)
                node._on_joint_states(serialize_message(msg))

        for k in range(20):
            send(k, shift=step if k >= 10 else 0.0)
        assert node.issues[IssueKind.TIME_JUMP] == 1 and node.issues[IssueKind.STREAM_STOPPED] == 0
        for k in range(20, 20 + round(0.1 / period)):  # the joints stop; the wrench goes on 0.1 s
            send(k, joints=False, shift=step)
        assert node.issues[IssueKind.STREAM_STOPPED] == 1
    finally:
        node.destroy_node()
        context.try_shutdown()


def test_a_topics_file_naming_the_default_topic_is_read_in_a_namespace(tmp_path):
    """Two arms' stacks, each in its namespace, read the robot's one /joint_states and /objects/<name>/pose: their
    topics_file names those absolute topics. They equal the topic mapping's own defaults, and only keys unlike
    the defaults used to replace the relative topics.* parameters: each stack listened on /<ns>/joint_states."""
    topics = tmp_path / "topics.yaml"
    topics.write_text("joint_states: /joint_states\nobject_pose: /objects/{name}/pose\nwrench: /wrist_wrench\n")
    with estimator_and_probe("/arm", [Parameter("topics_file", value=str(topics))]) as h:
        heard = {s.topic_name for s in h.node.subscriptions}
        assert {"/joint_states", "/wrist_wrench"} <= heard and "/objects/mug/pose" in heard
        assert not any(name.startswith(h.node.get_namespace() + "/") and "joint_states" in name for name in heard)
