"""Episodes through the sim, estimator and monitor nodes in one process and executor (the
`safety-monitor sim` path): each fault trips its expected properties and nothing outside its allowance,
a fault-free episode trips nothing, every event is in the log, and the recording replays to the same
events."""

import json
import os
from dataclasses import replace

import pytest

pytest.importorskip("rclpy")

from safety_monitor.enums import EventKind, LogRecordKind
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagReader
from safety_monitor.sim.faults import FAULTS

SCHEDULE = ("none", "early_release", "slip")
LIVE_ONLY = (
    "rollout",
    "robot",
    "wall_time",
    "pid",
)  # fields the monitor node adds to the monitor's own event JSON at its sinks


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from safety_monitor.nodes.run_inprocess import LiveRunOptions, run

    folder = tmp_path_factory.mktemp("live")
    result = run(
        LiveRunOptions(
            fault=",".join(SCHEDULE),
            episodes=len(SCHEDULE),
            events=str(folder / "events.jsonl"),
            record=str(folder / "bags"),
        )
    )
    assert not result.interrupted
    return result


def opened(rollout):
    return {e.property for e in rollout.events if e.kind == EventKind.OPENED}


def test_each_episode_opens_what_its_fault_labels_and_nothing_else(live):
    assert [(r.index, r.fault or "none") for r in live.rollouts] == list(enumerate(SCHEDULE))
    fault_free, *faulty = live.rollouts
    assert fault_free.frames > 1000 and opened(fault_free) == set()
    assert not [e for e in fault_free.events if e.kind.closes]
    for rollout in faulty:
        spec = FAULTS[rollout.fault]
        assert set(spec.expected_properties) <= opened(rollout), rollout.fault
        assert opened(rollout) <= set(spec.allowed_properties), rollout.fault
        assert rollout.task == spec.task and rollout.frames > 1000


def test_every_event_is_in_the_durable_log_in_order(live):
    records = [json.loads(line) for line in live.events_log.read_text().splitlines()]
    assert [r["kind"] for r in records if r["kind"] in set(LogRecordKind)] == ["monitor_started", "monitor_stopped"]
    logged = [r for r in records if r["kind"] not in set(LogRecordKind)]  # the log's own records aside
    assert all(isinstance(r.pop("wall_time"), float) and r.pop("pid") == os.getpid() for r in logged)
    assert [{k: v for k, v in r.items() if k not in LIVE_ONLY} for r in logged] == [
        m.event_fields(e) for r in live.rollouts for e in r.events
    ]
    assert [(r["rollout"], r["robot"]) for r in logged] == [(r.index, "robot") for r in live.rollouts for _ in r.events]
    assert {r["rollout"] for r in logged} >= {1, 2}


def test_the_recording_holds_each_episode_and_replays_to_the_live_events(live):
    from safety_monitor.replay.score import ReplayConfig, score_bag

    assert [b.name for b in live.bags] == ["episode_000", "episode_001", "episode_002"]
    for bag, rollout in zip(live.bags, live.rollouts):
        with BagReader(bag) as reader:
            topics = reader.topics
            events = [e for _, _, msg in reader.messages({"/safety_monitor/events"}) for e in m.decode_events(msg)]
        assert topics["/joint_states"].count == topics["/safety_monitor/predicates"].count == rollout.frames
        assert topics["/wrist_wrench"].count == topics["/clock"].count == rollout.frames
        assert 0 < topics["/objects/mug/pose"].count < rollout.frames  # the 50 Hz motion-capture stream
        assert [{k: v for k, v in e.items() if k not in LIVE_ONLY} for e in events] == [
            m.event_fields(e) for e in rollout.events
        ]
    bag, rollout = live.bags[2], live.rollouts[2]  # slip (the shortest): replay the raw streams of its bag
    replayed = score_bag(bag, ReplayConfig())
    assert replayed.ok, replayed.error
    assert [m.event_fields(e) for e in replayed.trace.events] == [m.event_fields(e) for e in rollout.events]


def test_ctrl_c_keeps_every_stepped_frame_in_the_recording(tmp_path, monkeypatch):
    """Ctrl-C lands while a frame's predicates are on their way to the recorder (here: while the monitor
    steps frame 300, just after the estimator published them); the recorder still takes them before the
    bag closes, so rescoring the bag's predicates sees every frame the live monitor saw."""
    import os
    import signal

    from safety_monitor.nodes.monitor_node import MonitorNode
    from safety_monitor.nodes.run_inprocess import LiveRunOptions, run

    step = MonitorNode.on_sample

    def on_sample(self, sample):
        step(self, sample)
        if sample.frame == 300:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(MonitorNode, "on_sample", on_sample)
    bag = tmp_path / "bag"
    result = run(LiveRunOptions(fault="none", episodes=1, record=str(bag), events=str(tmp_path / "e.jsonl")))
    assert result.interrupted and len(result.rollouts) == 1
    stepped = result.rollouts[0].frames
    with BagReader(bag) as reader:
        recorded = sum(1 for _ in reader.messages({"/safety_monitor/predicates"}))
    assert stepped >= 301 and recorded == stepped


def test_a_namespaced_run_keeps_its_clock_in_its_namespace(tmp_path):
    """`sim.launch.py namespace:=NS` remaps /clock to NS/clock; the in-process run published the global /clock,
    so two namespaced runs on one domain drove each other's time. A probe hears it on NS/clock only, and
    the run's monitor, on that clock, closes its episode."""
    import uuid

    from node_processes import clock_counts

    from safety_monitor.nodes.run_inprocess import LiveRunOptions, run

    ns = "/i" + uuid.uuid4().hex[:8]
    with clock_counts("/clock", f"{ns}/clock") as heard:
        result = run(LiveRunOptions(fault="none", episodes=1, events=str(tmp_path / "events.jsonl"), namespace=ns))
    assert [r.index for r in result.rollouts] == [0] and not result.interrupted
    assert heard["/clock"] == 0 and heard[f"{ns}/clock"] > 0
    robots = {json.loads(line)["robot"] for line in (tmp_path / "events.jsonl").read_text().splitlines()}
    assert robots == {ns.strip("/")}


def test_the_dropped_mug_is_named_in_the_events_the_alert_and_the_replay_report(live, tmp_path):
    """early_release drops the mug: the violation it opens says "mug" live (the monitor's event, the durable
    log, the operator's alert line), and the replay report of its bag says so in its violations table."""
    from safety_monitor.cli import main
    from safety_monitor.nodes.alerts import AlertBoard

    rollout, bag = live.rollouts[1], live.bags[1]
    assert rollout.fault == "early_release"
    drop = [e for e in rollout.events if e.kind == EventKind.OPENED and e.property == "drop_only_when_released"]
    assert [e.objects for e in drop] == [("mug",)]
    records = [json.loads(line) for line in live.events_log.read_text().splitlines()]
    logged = [
        r
        for r in records
        if r.get("rollout") == 1 and r["kind"] == EventKind.OPENED and r["property"] == "drop_only_when_released"
    ]
    assert [r["objects"] for r in logged] == [["mug"]]
    board = AlertBoard()
    board.update(logged)
    assert any(
        line.endswith(f"drop_only_when_released opened about mug at frame {drop[0].frame} t={drop[0].t:.3f}s")
        for line in board.lines()
    )
    assert "  about: mug" in board.lines()  # under COUNTEREXAMPLE
    for mode in ([], ["--from-predicates"]):  # grounded again from the robot's streams, and the recorded predicates
        report = tmp_path / f"report{len(mode)}"
        assert main(["replay", str(bag), "--report", str(report), "--quiet", *mode]) == 0
        rows = [
            line
            for line in (report / "summary.md").read_text().splitlines()
            if "| drop_only_when_released |" in line and "(frame " in line
        ]
        assert len(rows) == 1 and "| drop_only_when_released | mug |" in rows[0], rows


def test_predicates_recorded_without_objects_score_the_same_violations_naming_none(live, tmp_path):
    """A bag whose predicates predate `_objects` (the early_release recording with that key taken out) still
    scores from its predicates, to the same events, which then name no object."""
    from safety_monitor.io.bag import BagWriter
    from safety_monitor.replay.score import ReplayConfig, score_bag

    old = tmp_path / "old"
    with BagReader(live.bags[1]) as reader, BagWriter(old) as writer:
        for topic, t_ns, msg in reader.messages({"/safety_monitor/predicates"}):
            status = msg.status[0]
            assert status.values[-1].key == "_objects"
            status.values = status.values[:-1]
            writer.write(topic, msg, t_ns / 1e9)
    config = ReplayConfig(from_predicates=True)
    new, before = score_bag(live.bags[1], config), score_bag(old, config)
    assert new.ok and before.ok, (new.error, before.error)
    assert "drop_only_when_released" in {e.property for e in before.trace.events if e.kind == EventKind.OPENED}
    assert all(e.objects == () for e in before.trace.events)
    assert [replace(e, objects=()) for e in new.trace.events] == list(before.trace.events)
    assert new.trace.outcomes == before.trace.outcomes


def test_the_sim_starts_only_once_a_monitor_is_there():
    """sim.launch.py starts three processes and the monitor, loading its specs, is the slowest: the sim started
    once the estimator subscribed, and the monitor missed the first episode's start marker and first frames
    (seen live: 746 frames blind). The sim now waits for a monitor's heartbeat as for its inputs' readers."""
    import time
    import uuid

    import rclpy

    from safety_monitor.nodes import qos
    from safety_monitor.nodes.sim_node import SimNode
    from safety_monitor.sim.workcell import OBJECTS

    context = rclpy.Context()
    rclpy.init(context=context)
    ns = "/simwait" + uuid.uuid4().hex[:8]
    sim = SimNode(context=context, namespace=ns)
    probe = rclpy.create_node("probe", namespace=ns, context=context)
    T = m.rclpy_types()
    for msg_type, topic in [
        (T.JointState, "joint_states"),
        (T.WrenchStamped, "wrist_wrench"),
        *((T.PoseStamped, f"objects/{name}/pose") for name in OBJECTS),
    ]:
        probe.create_subscription(msg_type, topic, lambda _msg: None, qos.input_qos())
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(probe)  # the sim's timer is not spun: only its readiness is asked

    def spin_until(condition):
        end = time.monotonic() + 120.0  # only a broken run waits this long
        while not condition():
            assert time.monotonic() < end, "timed out"
            executor.spin_once(timeout_sec=0.02)

    try:
        inputs = [sim._joints_pub, sim._wrench_pub, *sim._pose_pubs.values()]
        spin_until(lambda: all(p.get_subscription_count() for p in inputs))  # every input has its reader
        assert not sim._ready()  # ... and no monitor yet
        probe.create_publisher(T.DiagnosticArray, "safety_monitor/heartbeat", qos.DIAGNOSTICS)
        spin_until(sim._ready)
    finally:
        executor.shutdown()
        sim.destroy_node()
        probe.destroy_node()
        context.try_shutdown()
