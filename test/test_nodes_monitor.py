"""The monitor node on a hand-fed predicates topic: events are logged before they are published,
diagnostics go ERROR on a violation, OK on recovery, STALE (and every property blind) when
predicates stop; end markers close the trace; two robots' monitors stay apart by namespace."""

import contextlib
import fcntl
import json
import os
import time
import uuid

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from two_property_specs import SPECS  # noqa: E402

from safety_monitor.enums import EventKind  # noqa: E402
from safety_monitor.errors import SafetyMonitorError  # noqa: E402
from safety_monitor.io import messages as m  # noqa: E402
from safety_monitor.nodes import qos  # noqa: E402
from safety_monitor.pipeline.markers import END, START, EpisodeMarker, marker_msg  # noqa: E402

TIMEOUT_S = 0.4


WAIT_S = 120.0  # only a broken run waits this long for a condition: a slow, loaded machine passes far below it


def spin_until(executor, condition, timeout=WAIT_S):
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        executor.spin_once(timeout_sec=0.02)


@contextlib.contextmanager
def _monitor_on_sim_time(specs, log):
    """A MonitorNode fed by hand (no spinning) on a simulated clock that `at(t)` sets: the same messages in the same
    order as a replay reads them. Destroyed on leaving, so its rollouts are closed."""
    from rclpy.time import Time

    from safety_monitor.nodes.monitor_node import MonitorNode

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = MonitorNode(
            subscribe_predicates=False,
            context=context,
            parameter_overrides=[
                Parameter("specs", value=str(specs)),
                Parameter("events_log", value=str(log)),
                Parameter("control_rate_hz", value=500.0),
                Parameter("use_sim_time", value=True),
            ],
        )
        clock = node.get_clock()

        def at(t):
            clock.set_ros_time_override(Time(nanoseconds=round(t * 1e9)))

        yield node, at
        node.destroy_node()
    finally:
        context.try_shutdown()


@pytest.fixture
def harness(tmp_path, request):
    from safety_monitor.nodes.monitor_node import MonitorNode

    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS)
    log = tmp_path / "events.jsonl"
    ns = "/t" + uuid.uuid4().hex[:8]
    context = rclpy.Context()
    rclpy.init(context=context)
    monitor = MonitorNode(
        context=context,
        namespace=ns,
        parameter_overrides=[
            Parameter("specs", value=str(specs)),
            Parameter("events_log", value=str(log)),
            Parameter("predicates_timeout_s", value=TIMEOUT_S),
            Parameter("diagnostics_period_s", value=0.2),
            Parameter("sync_before_publish", value=getattr(request, "param", False)),
        ],
    )
    probe = rclpy.create_node("probe", namespace=ns, context=context)
    T = m.rclpy_types()
    h = type("H", (), {})()
    h.monitor, h.probe, h.log, h.ns, h.types = monitor, probe, log, ns, T
    h.events, h.logged_first, h.diagnostics = [], [], []

    def on_events(msg):
        logged = [json.loads(line) for line in log.read_text().splitlines()]
        for e in m.decode_events(msg):
            h.events.append(e)
            h.logged_first.append(any(all(r.get(k) == e[k] for k in e) for r in logged))

    def on_diag(msg):
        hw = ns.strip("/")
        h.diagnostics.extend((s.name.split(": ")[-1], s.level, s.message) for s in msg.status if s.hardware_id == hw)

    probe.create_subscription(T.DiagnosticArray, "safety_monitor/events", on_events, qos.EVENTS)
    probe.create_subscription(T.DiagnosticArray, "/diagnostics", on_diag, qos.DIAGNOSTICS)
    h.pred_pub = probe.create_publisher(T.DiagnosticArray, "safety_monitor/predicates", qos.PREDICATES)
    h.marker_pub = probe.create_publisher(T.DiagnosticArray, "safety_monitor/episode", qos.EPISODE)
    h.executor = rclpy.executors.SingleThreadedExecutor(context=context)
    h.executor.add_node(monitor)
    h.executor.add_node(probe)
    h.frame = 0

    def send(a, b=False, objects=None):
        t = 1.0 + 0.002 * h.frame
        sample = m.PredicateSample(values={"a": a, "b": b}, t=t, frame=h.frame, objects=objects or {})
        h.pred_pub.publish(m.predicates_msg(T, sample))
        h.frame += 1
        return t

    h.send = send
    spin_until(h.executor, lambda: h.pred_pub.get_subscription_count() >= 1)
    yield h
    h.executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
    monitor.destroy_node()
    probe.destroy_node()
    context.try_shutdown()


def kinds(h, kind):
    return {e["property"] for e in h.events if e["kind"] == kind}


def watchdog_fired(h):
    """The monitor's wall-clock limit passed without predicates (this process stalled that long)."""
    return any(name == "monitor" and "no advancing predicates for" in msg for name, _, msg in h.diagnostics)


def level_of(h, prop):
    return [lvl for name, lvl, _ in h.diagnostics if name == prop][-1]


def test_an_opened_violation_is_a_warning_line_in_the_alerts_consoles_words(harness):
    """`ros2 launch` shows the nodes' log lines and nothing else: a violation that opens is one of them (the
    event log, the topic and /diagnostics had it alone, so a launch of a faulty sim printed no sign of it)."""
    h, lines = harness, []
    throttle = h.monitor._throttled
    h.monitor._throttled = lambda level, key, text: lines.append((level, text)) or throttle(level, key, text)
    for _ in range(3):
        h.send(False)
    h.send(True, objects={"a": ("mug",)})  # opens never_a, about the mug
    spin_until(h.executor, lambda: any(e["kind"] == "opened" for e in h.events))
    assert lines == [("warning", "rollout 0: never_a opened about mug at frame 3 t=1.006s")]


@pytest.mark.parametrize("harness", [False, True], indirect=True, ids=["sync_after", "sync_before"])
def test_violation_is_logged_before_it_is_published_and_alerts_follow_the_episode(harness):
    h, S = harness, harness.types.DiagnosticStatus
    for _ in range(3):
        h.send(False)
    h.send(True, objects={"a": ("mug",), "b": ("plate",)})  # opens never_a, about the mug
    spin_until(h.executor, lambda: any(e["kind"] == "opened" for e in h.events))
    opened = next(e for e in h.events if e["kind"] == "opened")
    assert opened["property"] == "never_a" and opened["frame"] == 3 and opened["objects"] == ["mug"]
    assert opened["counterexample"]["values"]["a"][-1] == [3, 3, True]
    # when a subscriber receives an event, its line (every field equal, the wall-clock stamp too) is already in the log
    assert h.logged_first and all(h.logged_first)
    assert all(isinstance(e["wall_time"], float) and e["pid"] == os.getpid() for e in h.events)
    spin_until(h.executor, lambda: h.diagnostics and level_of(h, "never_a") == S.ERROR)
    said = [msg for name, lvl, msg in h.diagnostics if name == "never_a" and lvl == S.ERROR]
    assert said[-1] == "violated since frame 3 (t=1.006 s), about mug"
    if not watchdog_fired(h):  # else this process stalled past the wall-clock limit: unknown was right
        assert level_of(h, "b_then_not_a") == S.OK

    h.send(False)  # F(!a) holds: recovered, the property re-arms
    spin_until(h.executor, lambda: any(e["kind"] == "recovered" for e in h.events))
    spin_until(h.executor, lambda: level_of(h, "never_a") == S.OK)
    # OK again, but never "satisfied so far": it was violated, and rqt_robot_monitor shows the message
    said = [msg for name, lvl, msg in h.diagnostics if name == "never_a" and lvl == S.OK]
    assert "satisfied so far" in said[0]  # before the violation
    assert said[-1] == "no open violation; the last one recovered at rollout 0 frame 4 (t=1.008 s)"
    lines = [json.loads(x) for x in h.log.read_text().splitlines()]
    assert [(r["property"], r["kind"]) for r in lines] == [
        ("*", "monitor_started"),
        ("never_a", "opened"),
        ("never_a", "recovered"),
    ]
    assert all("wall_time" in r and r["pid"] == os.getpid() and r["robot"] == h.ns.strip("/") for r in lines)


def test_stopped_predicates_turn_every_property_unknown_until_they_resume(harness):
    h, S = harness, harness.types.DiagnosticStatus
    sent = time.monotonic()  # the monitor hears the frame after this, however slow the machine
    h.send(False)
    spin_until(h.executor, lambda: h.monitor.monitor.frame == 1)
    spin_until(h.executor, lambda: kinds(h, "blind") == {"never_a", "b_then_not_a"})
    assert time.monotonic() - sent >= TIMEOUT_S
    spin_until(h.executor, lambda: level_of(h, "monitor") == S.STALE and level_of(h, "never_a") == S.STALE)
    said = [msg for name, lvl, msg in h.diagnostics if name == "monitor" and lvl == S.STALE]
    assert said[-1] == f"no advancing predicates for more than {TIMEOUT_S} s"  # alone, it cannot tell why
    h.send(False)
    spin_until(h.executor, lambda: kinds(h, "seeing") == {"never_a", "b_then_not_a"})
    spin_until(h.executor, lambda: level_of(h, "monitor") == S.OK and level_of(h, "never_a") == S.OK)
    assert not any(e["kind"] == "opened" for e in h.events)


def test_an_open_violation_stays_in_the_summary_while_predicates_are_stale(harness):
    """Blind to the rest, the monitor still knows never_a is open: its summary (and so the heartbeat and
    the console's first line) stays ERROR and names it beside the stale inputs."""
    h, S = harness, harness.types.DiagnosticStatus
    h.send(True)  # opens never_a, then predicates stop
    spin_until(h.executor, lambda: "never_a" in kinds(h, "opened") and "never_a" in kinds(h, "blind"))
    spin_until(h.executor, lambda: level_of(h, "b_then_not_a") == S.STALE)
    summary = [(lvl, msg) for name, lvl, msg in h.diagnostics if name == "monitor"][-1]
    assert summary[0] == S.ERROR and summary[1].startswith("1 open: never_a; no advancing predicates")
    assert level_of(h, "never_a") == S.ERROR


def test_in_one_process_a_stale_monitor_names_the_input_that_stopped(tmp_path):
    """monitor_stack: /joint_states stop, so predicates do. The monitor's summary, its heartbeat and so the
    console's line said only 'no advancing predicates', while the estimator beside it said which input
    stopped; they name it now (a monitor in its own process says the first half alone: the test above)."""
    from safety_monitor.nodes.alerts import AlertBoard, subscribe
    from safety_monitor.nodes.monitor_stack import build_stack
    from safety_monitor.sim.runner import run_episode

    state = next(run_episode("pick_and_place_cube"))
    ns = "/s" + uuid.uuid4().hex[:8]
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes: list = []
    overrides = [
        Parameter("events_log", value=str(tmp_path / "events.jsonl")),
        Parameter("diagnostics_period_s", value=0.2),
    ]
    T = m.rclpy_types()
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    try:
        build_stack(nodes, context=context, namespace=ns, parameter_overrides=overrides)
        monitor = nodes[0]
        nodes.append(probe := rclpy.create_node("console", namespace=ns, context=context))
        board = AlertBoard()
        subscribe(probe, board, ns, lambda: None)
        summaries: list[str] = []
        probe.create_subscription(
            T.DiagnosticArray,
            "/diagnostics",
            lambda msg: summaries.extend(s.message for s in msg.status if s.name.endswith(": monitor")),
            qos.DIAGNOSTICS,
        )
        joints = probe.create_publisher(T.JointState, "joint_states", qos.input_qos())
        for node in nodes:
            executor.add_node(node)
        spin_until(executor, lambda: joints.get_subscription_count() >= 1)
        joints.publish(m.joint_state_msg(T, 1.0, state.joint_names, state.joint_position))
        spin_until(executor, lambda: monitor.monitor.frame >= 1)
        # the monitor's watchdog (0.5 s) fires after the estimator's (0.1 s) has reason to: no race
        said = "no advancing predicates for more than 0.5 s (estimator: no joint_states for more than 0.1 s)"
        stale = "no advancing predicates"
        spin_until(executor, lambda: any(s.startswith(stale) for s in summaries))
        assert next(s for s in summaries if s.startswith(stale)) == said
        spin_until(executor, lambda: board.beat is not None and board.beat["summary"].startswith(stale))
        assert board.beat["summary"] == said and board.lines()[0].endswith(f"alive: STALE {said}")
    finally:
        executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        for node in reversed(nodes):
            node.destroy_node()
        context.try_shutdown()


def test_a_best_effort_predicates_publisher_is_named_on_diagnostics(harness):
    """A best-effort predicates publisher (an external estimator on sensor-data QoS) against the monitor's
    reliable subscription: no frame ever arrives, and the summary only said 'waiting for predicates'. It now
    names the refused policy and the remedy, and counts it, as the estimator does for its inputs."""
    h, S = harness, harness.types.DiagnosticStatus
    received = []
    h.probe.create_subscription(
        h.types.DiagnosticArray, "/diagnostics", lambda msg: received.extend(msg.status), qos.DIAGNOSTICS
    )
    best_effort = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
    h.probe.create_publisher(h.types.DiagnosticArray, "safety_monitor/predicates", best_effort)
    said = "waiting for predicates: a publisher offers QoS incompatible with this subscription (RELIABILITY)"
    spin_until(h.executor, lambda: any(said in s.message for s in received if s.name.endswith(": monitor")))
    summary = next(s for s in received if said in s.message)
    assert summary.level == S.STALE and "publish predicates reliable" in summary.message
    values = {kv.key: kv.value for kv in summary.values}
    assert values[f"incompatible_qos.{h.monitor.topics.predicates}"] == "RELIABILITY x1"


def test_use_sim_time_without_a_clock_is_said_on_diagnostics(tmp_path):
    """`use_sim_time:=true` where nothing publishes /clock: node time stands at 0, so the predicates watchdog
    could never fire. Only the estimator said so; the monitor's summary says it too."""
    from safety_monitor.nodes.monitor_node import MonitorNode

    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS)
    ns = "/c" + uuid.uuid4().hex[:8]
    context = rclpy.Context()
    rclpy.init(context=context)
    overrides = [
        Parameter("specs", value=str(specs)),
        Parameter("events_log", value=str(tmp_path / "events.jsonl")),
        Parameter("diagnostics_period_s", value=0.2),
        Parameter("use_sim_time", value=True),
    ]
    monitor = MonitorNode(context=context, namespace=ns, parameter_overrides=overrides)
    probe = rclpy.create_node("probe", namespace=ns, context=context)
    summaries = []
    probe.create_subscription(
        m.rclpy_types().DiagnosticArray,
        "/diagnostics",
        lambda msg: summaries.extend(s for s in msg.status if s.name.endswith(": monitor")),
        qos.DIAGNOSTICS,
    )
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(monitor)
    executor.add_node(probe)
    try:
        spin_until(executor, lambda: summaries)
        assert summaries[0].message == (
            "waiting for predicates; use_sim_time and no clock message yet: node time stands at 0, so the "
            "predicates watchdog cannot fire"
        )
    finally:
        executor.shutdown()
        monitor.destroy_node()
        probe.destroy_node()
        context.try_shutdown()


def test_a_violation_between_two_heartbeats_is_in_the_next_one_and_counted(tmp_path):
    """A violation that opens and recovers between two heartbeats (one period is 0.2 s) never reached a
    beat's summary, so the console's status line never showed it. The next beat is now ERROR and names it,
    and every beat counts the violations so far. Beats are sent by hand here: the timer's are an hour apart."""
    from safety_monitor.enums import MonitorState
    from safety_monitor.nodes.alerts import AlertBoard, subscribe
    from safety_monitor.nodes.monitor_node import MonitorNode

    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS)
    ns = "/t" + uuid.uuid4().hex[:8]
    context = rclpy.Context()
    rclpy.init(context=context)
    monitor = MonitorNode(
        subscribe_predicates=False,
        context=context,
        namespace=ns,
        parameter_overrides=[
            Parameter("specs", value=str(specs)),
            Parameter("events_log", value=str(tmp_path / "events.jsonl")),
            Parameter("heartbeat_period_s", value=3600.0),
        ],
    )
    probe = rclpy.create_node("console", context=context)
    board = AlertBoard()
    subscribe(probe, board, ns, lambda: None)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(monitor)
    executor.add_node(probe)

    def beat():
        seq = board.beat["seq"] + 1 if board.beat else 0
        monitor._heartbeat(MonitorState.RUNNING)
        spin_until(executor, lambda: board.beat is not None and board.beat["seq"] == seq)
        return board.lines()[0]

    try:
        spin_until(executor, lambda: monitor._beat_pub.get_subscription_count() >= 1)
        monitor.on_sample(m.PredicateSample(values={"a": False, "b": False}, t=1.0))
        assert beat().endswith("alive: OK no open violation")
        monitor.on_sample(m.PredicateSample(values={"a": True, "b": False}, t=1.002))  # never_a opens
        monitor.on_sample(m.PredicateSample(values={"a": False, "b": False}, t=1.004))  # and recovers
        assert beat().endswith(
            "alive: ERROR no open violation; since the last beat: never_a opened and closed [1 violation opened so far]"
        )
        assert beat().endswith("alive: OK no open violation [1 violation opened so far]")
    finally:
        executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        monitor.destroy_node()
        probe.destroy_node()
        context.try_shutdown()


class _Sent:
    """A publisher stand-in that keeps what was published, decoded (no DDS delivery to wait for)."""

    def __init__(self, types):
        self.msgs, self._type = [], types.DiagnosticArray

    def publish(self, raw):
        from rclpy.serialization import deserialize_message

        self.msgs.append(
            [(s.name.split(": ")[-1], s.level, s.message) for s in deserialize_message(raw, self._type).status]
        )


def test_a_clean_stop_leaves_no_status_reading_ok_and_keeps_the_final_verdicts(harness):
    """After a clean stop the last /diagnostics statuses read OK ("satisfied so far", "no open violation; the
    last one unrecovered at end ...") as if the properties were still watched: diagnostics tools keep them
    for good. Every status sent from the stop on says `stopped`, with the verdict the closed trace left."""
    h, S = harness, harness.types.DiagnosticStatus
    h.monitor.on_sample(m.PredicateSample(values={"a": False, "b": False}, t=1.0, frame=0))
    h.monitor.on_sample(m.PredicateSample(values={"a": True, "b": False}, t=1.002, frame=1))  # never_a opens
    diagnostics, beats = h.monitor._diag_pub, h.monitor._beat_pub = _Sent(h.types), _Sent(h.types)
    h.monitor.destroy_node()
    sent = [status for msg in diagnostics.msgs for status in msg]
    assert sent and all(level != S.OK for _, level, _ in sent), sent
    last = {name: (level, message) for name, level, message in sent}
    assert last["event log"] == (S.STALE, f"stopped; every event is in {h.monitor.event_log.path}")
    assert last["monitor"] == (S.ERROR, "stopped with 1 open: never_a")
    assert last["never_a"] == (
        S.ERROR,
        "stopped while violated since frame 1 (t=1.002 s); the trace's end closed it: unrecovered at end",
    )
    level, message = last["b_then_not_a"]  # never violated (unknown, were this process stalled past the timeout)
    assert level == S.STALE and message in ("stopped; never violated", "stopped; unknown at the stop: inputs stale")
    assert beats.msgs == [[("heartbeat", S.ERROR, "stopped with 1 open: never_a")]]


def test_end_marker_closes_the_trace_and_a_start_marker_names_the_next(harness):
    h = harness
    h.marker_pub.publish(marker_msg(h.types, EpisodeMarker(START, 0, 1.0, task="demo", fault="f", seed=7)))
    spin_until(h.executor, lambda: h.marker_pub.get_subscription_count() >= 1)
    h.send(False)
    last = h.send(True)  # never_a opens and stays open to the end
    # an end stamped a rounding error after the last frame (as a nanosecond stamp may be) still closes it
    h.marker_pub.publish(marker_msg(h.types, EpisodeMarker(END, 0, last + 4e-7, frames=2, succeeded=False)))
    spin_until(h.executor, lambda: h.monitor.traces_finished == 1)
    rollout = h.monitor.rollouts[0]
    assert (rollout.index, rollout.task, rollout.fault, rollout.seed, rollout.frames) == (0, "demo", "f", 7, 2)
    assert rollout.succeeded is False
    assert [(e.property, e.kind) for e in rollout.events] == [
        ("never_a", EventKind.OPENED),
        ("never_a", EventKind.UNRECOVERED_AT_END),
    ]
    assert h.monitor.monitor.frame == 0  # the next frame starts a new trace
    h.send(False)
    spin_until(h.executor, lambda: h.monitor.monitor.frame == 1)


def test_a_wrongly_typed_parameter_names_the_node_and_parameter(tmp_path):
    from safety_monitor.nodes.monitor_node import MonitorNode

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        with pytest.raises(SafetyMonitorError, match="monitor_node.*predicates_timeout_s"):
            MonitorNode(context=context, parameter_overrides=[Parameter("predicates_timeout_s", value="soon")])
    finally:
        context.try_shutdown()


def test_a_log_another_live_monitor_writes_stops_start_up_cleanly(tmp_path):
    """The other monitor holds the log's lock: the refusal names its process (from its `.running`);
    shutting the context down afterwards (which destroys every node it still tracks, the half-built one
    included) raises nothing and leaves the other's marker."""
    from safety_monitor.nodes.event_log import boot_id
    from safety_monitor.nodes.monitor_node import MonitorNode

    log = tmp_path / "events.jsonl"
    running = tmp_path / "events.jsonl.running"
    other = os.getppid()
    running.write_text(json.dumps({"pid": other, "boot_id": boot_id(), "started": 0.0}))
    held = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    fcntl.flock(held, fcntl.LOCK_EX)  # as the other monitor's open log holds it
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        with pytest.raises(SafetyMonitorError, match=f"process {other} still writes this log") as failed:
            MonitorNode(context=context, parameter_overrides=[Parameter("events_log", value=str(log))])
        assert failed.value is not None  # the traceback (and the half-built node) still alive here
        context.try_shutdown()
    finally:
        context.try_shutdown()
        os.close(held)
    assert json.loads(running.read_text())["pid"] == other


def test_two_robots_side_by_side_keep_their_events_apart(harness, tmp_path):
    from safety_monitor.nodes.monitor_node import MonitorNode

    h = harness
    other_ns = h.ns + "_b"
    other_log = tmp_path / "other.jsonl"
    other = MonitorNode(
        context=h.monitor.context,
        namespace=other_ns,
        parameter_overrides=[
            Parameter("specs", value=h.monitor.params.specs),
            Parameter("events_log", value=str(other_log)),
        ],
    )
    h.executor.add_node(other)
    probe_b = rclpy.create_node("probe_b", namespace=other_ns, context=h.monitor.context)
    other_pub = probe_b.create_publisher(h.types.DiagnosticArray, "safety_monitor/predicates", qos.PREDICATES)
    try:
        spin_until(h.executor, lambda: other_pub.get_subscription_count() >= 1)
        other_pub.publish(m.predicates_msg(h.types, m.PredicateSample(values={"a": False, "b": False}, t=1.0)))
        h.send(False)
        h.send(True)  # only robot A violates
        spin_until(h.executor, lambda: any(e["kind"] == "opened" for e in h.events) and other.monitor.frame == 1)
        assert h.monitor.monitor.frame == 2
        assert [json.loads(x)["kind"] for x in other_log.read_text().splitlines()] == ["monitor_started"]
        assert not other._open
        assert [e["robot"] for e in h.events if e["kind"] == "opened"] == [h.ns.strip("/")]
        assert other.hardware_id == other_ns.strip("/") != h.monitor.hardware_id
    finally:
        other.destroy_node()
        probe_b.destroy_node()


def _stream(fault):
    """(sample, log time) of 600 frames at 500 Hz of the two-property specs with one input fault."""
    out = []
    for k in range(600):
        t = log = 1.0 + k / 500
        values = {"a": (k // 7) % 4 == 0, "b": (k // 7 + 1) % 4 == 0}
        number = k
        if fault == "pause" and k >= 100:
            t = log = t + 1.0  # a second without predicates
        elif fault == "frozen" and 200 <= k < 500:
            t = 1.0 + 199 / 500  # messages keep coming, their stamp stands still for 0.6 s
        elif fault == "lost_and_unsent":
            number = k + 5 if k >= 120 else k  # five frames lost on the way
            if 200 <= k < 210:
                del values["b"]  # an external estimator that did not send it
        elif isinstance(fault, dict):
            t = 1.0 + fault.get(k, k) / 500
        out.append((m.PredicateSample(values, t, number), log))
    return out


@pytest.mark.parametrize(
    "fault",
    [
        {50: 40},  # one frame stamped back in time
        {50: 40, 51: 41, 52: 42},  # the clock back for three frames
        {30: 29, 60: 55},  # a repeated stamp, later one going back
        "pause",
        "frozen",
        "lost_and_unsent",
        "stopped",  # the stream ends a second before the input does
    ],
    ids=["back", "back3", "repeat_back", "pause", "frozen", "lost_and_unsent", "stopped"],
)
def test_the_monitor_node_and_replay_of_its_predicates_are_the_same_supervisor(tmp_path, fault):
    """The node on its clock (sim time here, set to each message's log time, with the watchdog timer's
    ticks in between) and replay --from-predicates on the log times step the same frames and report
    the same events: time going back, pauses, frozen stamps, lost frames, unsent predicates, a stream
    that stops before the input ends."""

    from safety_monitor.io.bag import BagWriter
    from safety_monitor.replay.score import ReplayConfig, score_bag

    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS)
    stream = _stream(fault)
    end = stream[-1][1] + (1.0 if fault == "stopped" else 0.0)
    with BagWriter(tmp_path / "bag") as w:
        for sample, log in stream:
            w.write_predicates("/safety_monitor/predicates", sample, log_t=log)
        w.write_joint_state("/joint_states", end, ["arm_joint1"], [0.0], log_t=end)  # the recording's end
    replayed = score_bag(tmp_path / "bag", ReplayConfig(specs=str(specs), from_predicates=True, rate_hz=500.0))
    assert replayed.ok, replayed.error

    with _monitor_on_sim_time(specs, tmp_path / "e.jsonl") as (node, at):
        last = None
        for sample, log in stream:
            while last is not None and log - last > 0.1:  # the watchdog timer's ticks while nothing arrives
                last += 0.1
                at(last)
                node._watchdog()
            at(log)
            node.on_sample(sample)
            last = log
        at(end)
    (live,) = node.rollouts
    assert live.frames == replayed.trace.frames > 0
    assert [(e.property, e.kind, e.frame, e.t) for e in live.events] == [
        (e.property, e.kind, e.frame, e.t) for e in replayed.trace.events
    ]
    assert live.outcomes == replayed.trace.outcomes
    assert EventKind.BLIND in {e.kind for e in live.events}  # each fault made some verdict unknown


@pytest.mark.parametrize("end", [False, True], ids=["without_an_end", "after_an_end"])
def test_a_late_start_marker_withdraws_the_same_events_live_and_in_replay(tmp_path, end):
    """Two rollouts, the second's start marker 30 frames late, with violations on those frames: the node and
    replay --from-predicates of the same messages give the same rollouts (frames, events, outcomes), and the
    event log says what it published before the marker came: what is not in a rollout is the events of the
    withdrawn frames, each episode they opened followed by its `withdrawn` record, under the rollout index it
    was published with."""

    from safety_monitor.io.bag import BagWriter
    from safety_monitor.replay.score import ReplayConfig, score_bag

    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS)
    boundary, late = 300, 30
    inputs = []  # (sample or marker, log time); frames numbered on through a late marker, as the estimator does
    for k, (sample, log) in enumerate(_stream(None)):
        if k == boundary and end:
            inputs.append((EpisodeMarker(END, 0, log - 1 / 500), log - 0.0005))
        if k == boundary + late:
            inputs.append((EpisodeMarker(START, 1, 1.0 + boundary / 500), log - 0.0005))
        inputs.append((sample, log))
    end_t = inputs[-1][1]
    with BagWriter(tmp_path / "bag") as w:
        w.write("/safety_monitor/episode", marker_msg(w.types, EpisodeMarker(START, 0, 1.0)), 1.0)
        for x, log in inputs:
            if isinstance(x, EpisodeMarker):
                w.write("/safety_monitor/episode", marker_msg(w.types, x), log)
            else:
                w.write_predicates("/safety_monitor/predicates", x, log_t=log)
    replayed = score_bag(tmp_path / "bag", ReplayConfig(specs=str(specs), from_predicates=True, rate_hz=500.0))
    assert replayed.ok, replayed.error

    log_path = tmp_path / "e.jsonl"
    with _monitor_on_sim_time(specs, log_path) as (node, at):
        lines = []
        throttle = node._throttled
        node._throttled = lambda level, key, text: lines.append(text) or throttle(level, key, text)
        T = m.rclpy_types()
        at(1.0)
        node._on_marker(marker_msg(T, EpisodeMarker(START, 0, 1.0)))
        for x, log in inputs:
            at(log)
            if isinstance(x, EpisodeMarker):
                node._on_marker(marker_msg(T, x))
            else:
                node.on_sample(x)
        at(end_t)

    def story(events, rollout):
        return [(rollout, e.property, str(e.kind), e.frame, e.t, e.episode) for e in events]

    parts = replayed.split()
    assert [r.frames for r in node.rollouts] == [p.trace.frames for p in parts] == [300, 300]
    assert [r.outcomes for r in node.rollouts] == [p.trace.outcomes for p in parts]
    counted = [x for r in node.rollouts for x in story(r.events, r.index)]
    assert counted == [x for k, p in enumerate(parts) for x in story(p.trace.events, k)]
    logged = [(r["rollout"], r["property"], r["kind"], r["frame"], r["t"], r["episode"]) for r in _records(log_path)]
    extra = [x for x in logged if x not in counted]
    assert [x for x in logged if x in counted] == counted
    stretch = (1.0 + boundary / 500, 1.0 + (boundary + late) / 500)
    withdrawn = [x for x in extra if x[2] == EventKind.WITHDRAWN]
    assert withdrawn and all(stretch[0] <= x[4] < stretch[1] for x in extra if x[2] != EventKind.WITHDRAWN)
    opened = [(x[0], x[1], x[5]) for x in extra if x[2] == EventKind.OPENED]
    assert opened == [(x[0], x[1], x[5]) for x in withdrawn]  # under the index they were published with
    assert {x[0] for x in withdrawn} == {1 if end else 0}
    said = [line for line in lines if "so it counts in none" in line]  # the console said each opened: so too
    assert len(said) == len({(x[1], x[5]) for x in withdrawn}) and "never_a withdrawn at frame" in said[0]


def _records(path):
    """The event records of an event log (not its records about the log and the run)."""
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["property"] != "*"]
