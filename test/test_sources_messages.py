"""Message converters: the same readers for rclpy and rosbags messages; the wire layouts round-trip."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safety_monitor.enums import EventKind
from safety_monitor.errors import SourceError
from safety_monitor.frames import Pose, Wrench
from safety_monitor.io import messages as m
from safety_monitor.monitor.events import Counterexample, Event


@pytest.fixture(scope="module", params=["rosbags", "rclpy"])
def types(request):
    return m.rosbags_types() if request.param == "rosbags" else m.rclpy_types()


def test_joint_state_reads_the_same_from_both_message_kinds(types):
    msg = m.joint_state_msg(types, 12.5, ["a", "b"], [0.1, -0.2], velocity=[1.0, 2.0])
    sample = m.joint_state_sample(msg)
    assert sample.names == ("a", "b")
    np.testing.assert_array_equal(sample.position, [0.1, -0.2])
    np.testing.assert_array_equal(sample.velocity, [1.0, 2.0])
    assert sample.effort is None
    assert sample.stamp == 12.5


def test_pose_quaternion_order_is_converted_between_ros_and_mujoco(types):
    pose = Pose(np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.1, 0.2, 0.3]))  # w first
    msg = m.pose_msg(types, 1.0, pose)
    assert (msg.pose.orientation.w, msg.pose.orientation.x) == (0.5, 0.1)
    back, stamp = m.pose_of(msg)
    np.testing.assert_array_equal(back.quaternion, pose.quaternion)
    np.testing.assert_array_equal(back.position, pose.position)


def test_wrench_round_trip(types):
    wrench = Wrench(np.array([1.0, -2.0, 3.0]), np.array([0.1, 0.2, -0.3]))
    back, stamp = m.wrench_of(m.wrench_msg(types, 4.25, wrench))
    np.testing.assert_array_equal(back.force, wrench.force)
    np.testing.assert_array_equal(back.torque, wrench.torque)
    assert stamp == 4.25


@settings(max_examples=60, deadline=None)
@given(t=st.floats(min_value=0, max_value=2e9, allow_nan=False))
def test_stamp_split_stays_within_a_nanosecond(t):
    sec, nanosec = m.split_seconds(t)
    assert 0 <= nanosec < 1_000_000_000
    assert abs((sec + nanosec / 1e9) - t) <= 1e-9 + abs(t) * 1e-15


def test_predicates_round_trip_with_frame_time_and_flags(types):
    sample = m.PredicateSample(
        values={"object_grasped": True, "object_dropped": False},
        t=0.1 + 0.2,
        frame=41,
        unknown=frozenset({"object_dropped"}),
        stale=frozenset({"wrench", "pose/mug"}),
    )
    msg = m.predicates_msg(types, sample)
    assert len(msg.status) == 1 and msg.status[0].name == m.PREDICATES_STATUS
    assert msg.status[0].level == types.DiagnosticStatus.STALE
    assert m.decode_predicates(msg) == sample  # t is exact, not rounded to nanoseconds


def test_predicates_from_an_external_publisher_use_the_header_stamp(types):
    kv = types.KeyValue
    status = types.DiagnosticStatus(
        level=types.DiagnosticStatus.OK,
        name="my_estimator",
        message="",
        hardware_id="",
        values=[kv(key="near", value="True"), kv(key="far", value="0")],
    )
    msg = types.DiagnosticArray(header=m.header(types, 3.0), status=[status])
    sample = m.decode_predicates(msg)
    assert sample.values == {"near": True, "far": False}
    assert (sample.t, sample.frame) == (3.0, None)


def test_bad_predicate_value_names_the_predicate(types):
    kv = types.KeyValue
    status = types.DiagnosticStatus(
        level=types.DiagnosticStatus.OK,
        name=m.PREDICATES_STATUS,
        message="",
        hardware_id="",
        values=[kv(key="near", value="maybe")],
    )
    with pytest.raises(SourceError, match="'near'.*'maybe'"):
        m.decode_predicates(types.DiagnosticArray(header=m.header(types, 0.0), status=[status]))


def test_valuation_marks_unknown_predicates_none():
    sample = m.PredicateSample({"a": True, "b": False}, 0.0, 0, unknown=frozenset({"b"}))
    assert sample.valuation() == {"a": True, "b": None}


def _counterexample():
    return Counterexample(
        property="no_excess_wrench",
        formula="G(!excess_wrench)",
        trigger="excess_wrench",
        first_frame=118,
        last_frame=120,
        trigger_frame=None,
        atoms=("excess_wrench",),
        values=((False,), (False,), (True,)),
        times=(0.236, 0.238, 0.24),
        decisive=("excess_wrench",),
        truncated=False,
    )


def test_events_round_trip_one_status_per_event(types):
    events = [
        Event(EventKind.OPENED, "no_excess_wrench", "collision_contact", 120, 0.24, 0, None, _counterexample()),
        Event(EventKind.RECOVERED, "no_excess_wrench", "collision_contact", 130, 0.26, 0, 10),
        Event(EventKind.BLIND, "released_object_settles", "release_stability", 131, 0.262),
    ]
    msg = m.events_msg(types, events, 0.26)
    assert [s.name for s in msg.status] == ["no_excess_wrench", "no_excess_wrench", "released_object_settles"]
    assert [s.message for s in msg.status] == [EventKind.OPENED, EventKind.RECOVERED, EventKind.BLIND]
    S = types.DiagnosticStatus
    assert [s.level for s in msg.status] == [S.ERROR, S.OK, S.STALE]
    decoded = m.decode_events(msg)
    assert decoded == [e.to_json() for e in events]
    assert decoded[0]["counterexample"]["frames"] == [118, 120]


def test_event_levels_raise_the_alarm_for_violations_and_lost_state():
    from safety_monitor.io.messages import event_level, rclpy_types

    types = rclpy_types()
    S = types.DiagnosticStatus
    assert event_level(types, "opened") == S.ERROR
    assert event_level(types, "state_lost") == S.ERROR
    assert event_level(types, "unrecovered_at_end") == S.WARN
    assert event_level(types, "blind") == S.STALE
    assert event_level(types, "recovered") == S.OK
