"""Falling behind is said, not silent: frames missing between stamps are counted per period and turn the
estimator's diagnostics WARN; time jumps, stamp jitter and a new rollout are not counted as missing."""

import numpy as np
import pytest

from safety_monitor.nodes.frame_load import FrameLoad

RATE = 500.0


def fake_clocks():
    now = {"wall": 0.0, "cpu": 0.0}
    return now, (lambda: now["cpu"]), (lambda: now["wall"])


def test_counts_frames_missing_between_stamps_and_reports_per_period():
    now, cpu, clock = fake_clocks()
    load = FrameLoad(RATE, max_gap_s=0.05, cpu=cpu, clock=clock)
    for k in range(1100):
        if k % 11 != 5:  # every 11th frame never arrives
            load.frame(1.0 + k / RATE, 0.0005 if k % 2 else 0.0015)
    now["wall"], now["cpu"] = 2.2, 1.1
    r = load.report()
    assert (r.frames, r.missed) == (1000, 100)
    assert r.falling_behind and "100 of 1100 frames missing in the last 2.2 s" in r.message()
    assert (
        r.cpu_cores == pytest.approx(0.5)
        and r.frame_ms_p50 == pytest.approx(1.0)
        and r.frame_ms_max == pytest.approx(1.5)
    )
    assert dict(r.values())["load.missed_frames"] == "100"
    quiet = load.report()  # a new period: nothing carried over
    assert (quiet.frames, quiet.missed, quiet.frame_ms_max) == (0, 0, 0.0) and not quiet.falling_behind


def test_jitter_time_jumps_and_new_rollouts_are_not_missing_frames():
    _, cpu, clock = fake_clocks()
    load = FrameLoad(RATE, max_gap_s=0.05, cpu=cpu, clock=clock)
    rng = np.random.default_rng(0)
    stamps = 1.0 + np.arange(2000) / RATE + rng.uniform(-0.45, 0.45, 2000) / RATE  # jittery driver, nothing lost
    for t in stamps:
        load.frame(float(t), 0.001)
    load.frame(float(stamps[-1]) + 0.2, 0.001)  # a time jump: the assembler reports it, not this
    load.forget_stamp()
    load.frame(0.5, 0.001)  # a new rollout starting earlier
    r = load.report()
    assert r.frames == 2002 and r.missed <= 1 and not r.falling_behind  # jitter can only move a run's two ends
    load.frame(0.5 + 3 / RATE, 0.001)
    load.frame(0.5 + 3 / RATE, 0.001)  # a repeated stamp is not a gap
    assert load.report().missed == 2
    for k in range(1, 500):  # the run goes on across reports: the anchor frame is not counted twice
        load.frame(0.5 + (3 + k + (k >= 250)) / RATE, 0.001)
        if k == 100:
            assert load.report().missed == 0
    assert load.report().missed == 1
    one = FrameLoad(RATE, 0.05, cpu=cpu, clock=clock)
    for k in list(range(200)) + list(range(201, 400)):  # one frame in 400 missing: under the 1 % share
        one.frame(k / RATE, 0.001)
    r = one.report()
    assert r.missed == 1 and not r.falling_behind


def test_estimator_diagnostics_warn_while_frames_go_missing():
    rclpy = pytest.importorskip("rclpy")
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.serialization import deserialize_message, serialize_message

    from safety_monitor.frames import Wrench
    from safety_monitor.io import messages as m
    from safety_monitor.nodes.estimator_node import EstimatorNode
    from safety_monitor.sim.runner import Episode

    rest = Episode("pick_and_place_cube", None, 0).step()
    T = m.rclpy_types()
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = EstimatorNode(context=context, namespace="/load_test")
        published = []
        node._diag_pub = type(
            "Pub",
            (),
            {"publish": lambda self, data: published.append(deserialize_message(data, DiagnosticArray).status[0])},
        )()

        def feed(frames):
            for k in frames:
                t = 1.0 + k / RATE
                node._on_wrench(serialize_message(m.wrench_msg(T, t, Wrench(np.zeros(3), np.zeros(3)))))
                if k % 10 == 0:
                    for name, pose in rest.object_poses.items():
                        node._on_pose(name, serialize_message(m.pose_msg(T, t, pose)))
                node._on_joint_states(
                    serialize_message(
                        m.joint_state_msg(
                            T,
                            t,
                            rest.joint_names,
                            rest.joint_position + 1e-6 * np.sin(k),
                            rest.joint_velocity,
                            rest.joint_effort,
                        )
                    )
                )

        feed(range(100))
        node._on_period()
        steady = published[-1]
        assert steady.message == "inputs fresh" and steady.level == bytes((m.OK,))
        assert {v.key: v.value for v in steady.values}["load.missed_frames"] == "0"
        feed(k for k in range(100, 401) if k % 3)  # a third of the frames lost
        node._on_period()
        behind = published[-1]
        assert behind.level == bytes((m.WARN,)) and "100 of 301 frames missing" in behind.message
        assert {v.key: v.value for v in behind.values}["load.missed_frames"] == "100"
        node.destroy_node()
    finally:
        context.try_shutdown()
