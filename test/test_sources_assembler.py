"""FrameAssembler: one frame per JointState, latest slower samples with ages, bad input flagged."""

from types import SimpleNamespace

import numpy as np
import pytest

from safety_monitor.errors import GroundingError, SourceError
from safety_monitor.frames import Pose, Wrench
from safety_monitor.io import messages as m
from safety_monitor.pipeline.assemble import JOINTS, WRENCH, FrameAssembler, StaleLimits, StreamMapping, ground_frame

T = m.rosbags_types()
W = Wrench(np.array([0.0, 0.0, 5.0]), np.zeros(3))
P = Pose(np.array([0.5, 0.0, 0.8]), np.array([1.0, 0.0, 0.0, 0.0]))


def js(t, names=("j1", "j2"), pos=(0.1, 0.2), vel=None):
    return m.joint_state_msg(T, t, list(names), list(pos), vel)


def kinds(issues):
    return [i.kind for i in issues]


def test_frames_follow_joint_states_and_sample_slower_streams_with_age():
    a = FrameAssembler(["j1", "j2"], objects=["mug"])
    first = a.on_joint_states(js(1.0))
    assert first.stale == {"wrench", "object_pose/mug"}  # never received: stale, not safe
    a.on_wrench(m.wrench_msg(T, 1.001, W))
    a.on_pose("mug", m.pose_msg(T, 0.99, P))
    frame = a.on_joint_states(js(1.002, vel=(0.5, 0.6)))
    s = frame.state
    assert s.t == 1.002 and s.joint_names == ("j1", "j2")
    np.testing.assert_array_equal(s.joint_velocity, [0.5, 0.6])
    np.testing.assert_array_equal(s.wrench.force, W.force)
    assert s.wrench_age == pytest.approx(0.001)
    assert s.object_ages["mug"] == pytest.approx(0.012)
    assert frame.stale == frozenset() and frame.issues == ()
    assert a.frames == 2


def test_joint_name_mapping_and_reordering_put_values_in_robot_order():
    a = FrameAssembler(
        ["arm_joint1", "arm_joint2"],
        mapping=StreamMapping(wrench=None, joint_names={"j1": "arm_joint1", "j2": "arm_joint2"}),
    )
    s = a.on_joint_states(js(1.0, names=("j2", "j1"), pos=(2.0, 1.0))).state
    np.testing.assert_array_equal(s.joint_position, [1.0, 2.0])
    assert s.joint("arm_joint2") == 2.0


def test_backwards_and_duplicate_stamps_are_dropped_and_flagged_never_reordered():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    a.on_joint_states(js(1.0))
    a.on_joint_states(js(1.002))
    assert a.on_joint_states(js(1.002)) is None
    assert a.on_joint_states(js(1.001)) is None
    frame = a.on_joint_states(js(1.004, pos=(0.3, 0.4)))
    assert kinds(frame.issues) == ["duplicate_stamp", "backwards"]
    assert frame.state.t == 1.004 and a.frames == 3


def test_nan_positions_drop_the_message_and_nan_velocity_makes_velocity_unknown():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    assert a.on_joint_states(js(1.0, pos=(np.nan, 0.2))) is None
    frame = a.on_joint_states(js(1.002, vel=(np.nan, 1.0)))
    assert kinds(frame.issues) == ["nan", "nan"]
    assert "j1" in frame.issues[0].detail
    assert frame.state.joint_velocity is None


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, 1e300, -2e9])
def test_nan_infinite_or_implausible_values_are_dropped_without_overflow_warnings(bad):
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    frame = a.on_joint_states(js(1.0, pos=(9e8, -3.0), vel=(1e-300, 2.0)))
    assert frame is not None and not frame.issues
    assert a.on_joint_states(js(1.002, pos=(0.5, bad))) is None
    (issue,) = a.drain_issues()
    assert issue.kind == "nan" and "implausible positions for j2;" in issue.detail
    frame = a.on_joint_states(js(1.004, vel=(bad, 1.0)))
    assert kinds(frame.issues) == ["nan"] and frame.state.joint_velocity is None
    a.on_wrench_sample(Wrench(np.array([0.0, bad, 1.0]), np.zeros(3)), 1.005)
    a.on_pose_sample("mug", Pose(np.array([bad, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0])), 1.005)
    assert kinds(a.drain_issues()) == ["nan", "nan"]


@pytest.mark.parametrize("norm", [0.0, 5e-324, 0.5, 0.994, 1.006, 2.0, 1e5])
def test_a_pose_whose_quaternion_is_far_from_unit_length_is_dropped_and_reported_so_its_staleness_has_a_reason(norm):
    """tf2 refuses a quaternion whose squared norm is 0.01 or more off 1 (norms beyond about 0.995..1.005, zero
    included): a corrupt message or a driver bug, whose direction is no rotation to trust."""
    a = FrameAssembler(["j1", "j2"], objects=["mug"], mapping=StreamMapping(wrench=None))
    a.on_pose_sample("mug", Pose(P.position, np.array([0.6, 0.0, 0.0, 0.8]) * norm), 1.0)
    frame = a.on_joint_states(js(1.0))
    assert kinds(frame.issues) == ["denormalized_quaternion"] and frame.stale == {"object_pose/mug"}
    assert f"pose orientation: quaternion norm {norm:.6g} is not 1" in frame.issues[0].detail
    assert frame.state.object_poses == {}


@pytest.mark.parametrize("norm", [0.999, 1.001, 0.996, 1.004])
def test_a_pose_whose_quaternion_is_off_unit_length_by_float_error_is_taken_without_a_word(norm):
    """A float32 driver's quaternions are off unit length by up to about 1e-3: taken as sent (the twin normalises
    every orientation it reads), no issue."""
    q = np.array([0.6, 0.0, 0.0, 0.8]) * norm
    a = FrameAssembler(["j1", "j2"], objects=["mug"], mapping=StreamMapping(wrench=None))
    a.on_pose_sample("mug", Pose(P.position, q), 1.0)
    frame = a.on_joint_states(js(1.0))
    assert frame.issues == () and frame.stale == frozenset()
    np.testing.assert_array_equal(frame.state.object_poses["mug"].quaternion, q)


def test_empty_names_and_length_mismatch_are_dropped():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    assert a.on_joint_states(js(1.0, names=(), pos=(0.1, 0.2))) is None
    assert a.on_joint_states(js(1.001, names=("j1",), pos=(0.1, 0.2))) is None
    frame = a.on_joint_states(js(1.002))
    assert kinds(frame.issues) == ["empty_names", "length_mismatch"]


def test_partial_joint_messages_hold_frames_until_every_joint_is_known():
    a = FrameAssembler(["j1", "j2", "finger"], mapping=StreamMapping(wrench=None))
    assert a.on_joint_states(js(1.0)) is None
    frame = a.on_joint_states(js(1.001, names=("finger",), pos=(0.04,)))
    np.testing.assert_array_equal(frame.state.joint_position, [0.1, 0.2, 0.04])
    assert kinds(frame.issues) == ["missing_joints", "joint_names_changed"]


def test_a_joint_that_drops_out_mid_stream_makes_every_frame_stale_once_its_position_is_old():
    a = FrameAssembler(["j1", "j2", "j3"], mapping=StreamMapping(wrench=None), limits=StaleLimits(joint_held=0.005))
    a.on_joint_states(js(1.0, names=("j1", "j2", "j3"), pos=(0.1, 0.2, 0.3)))
    frames = [
        a.on_joint_states(js(1.0 + k * 0.002, names=("j1", "j2"), pos=(0.1, 0.2 + k * 1e-3))) for k in range(1, 6)
    ]
    assert [JOINTS in f.stale for f in frames] == [False, False, True, True, True]  # j3 held for 6 ms at most
    assert [kinds(f.issues) for f in frames[2:]] == [["missing_joints"]] * 3
    assert "no position for j3 for more than 0.005 s" in frames[2].issues[0].detail
    back = a.on_joint_states(js(1.012, names=("j1", "j2", "j3"), pos=(0.1, 0.2, 0.3)))
    assert back.resync and a.on_joint_states(js(1.014, names=("j1", "j2", "j3"), pos=(0.1, 0.3, 0.3))).stale == set()


def test_renamed_joints_mid_stream_are_missing_not_held():
    a = FrameAssembler(
        ["j1", "j2"], mapping=StreamMapping(wrench=None), limits=StaleLimits(joints_frozen=0.06, joint_held=0.05)
    )
    a.on_joint_states(js(1.0))
    renamed = [
        a.on_joint_states(js(1.0 + k * 0.011, names=("ur_j1", "ur_j2"), pos=(0.1, 0.2 + k * 1e-3))) for k in range(1, 8)
    ]
    assert [JOINTS in f.stale for f in renamed] == [False] * 4 + [True] * 3  # beyond joint_held, 50 ms
    assert kinds(renamed[0].issues) == ["joint_names_changed", "unknown_joints"]
    assert kinds(renamed[-1].issues) == ["missing_joints"]  # held values are missing, not also frozen


def test_optional_joints_ride_along_when_sent_and_are_never_waited_for_or_missed():
    """A description's ignored joints (a bimanual robot's other arm) reach the twin, which places that arm where
    they say. They were dropped as unknown joints: the other arm stood where the model draws it, and with the
    watched arm at rest the frames were called frozen though the other arm moved on."""
    limits = StaleLimits(joints_frozen=0.05, joint_held=0.02)
    unsent = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None), limits=limits, optional=["k1"])
    frames = [unsent.on_joint_states(js(1.0 + k * 0.01, pos=(0.1, 0.2 + k * 1e-3))) for k in range(10)]
    assert frames[0].state.joint_names == ("j1", "j2", "k1") and np.isnan(frames[0].state.joint_position[2])
    assert not any(f.stale or f.issues for f in frames)  # never waited for, never missing
    sent = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None), limits=limits, optional=["k1"])
    frames = [sent.on_joint_states(js(1.0 + k * 0.01, ("k1", "j1", "j2"), (k * 0.1, 0.1, 0.2))) for k in range(10)]
    assert frames[-1].state.joint("k1") == pytest.approx(0.9)
    assert not any(f.stale or f.issues for f in frames)  # j1 and j2 at rest for 90 ms: k1 moving, not frozen


def test_split_joint_messages_at_the_control_rate_stay_fresh():
    a = FrameAssembler(["j1", "j2", "finger"], mapping=StreamMapping(wrench=None))
    for k in range(20):
        arm = k % 2 == 0
        frame = a.on_joint_states(
            js(
                1.0 + k * 0.002,
                names=("j1", "j2") if arm else ("finger",),
                pos=(0.1, 0.2 + k * 1e-3) if arm else (0.04 + k * 1e-4,),
            )
        )
        assert k == 0 or frame.stale == frozenset()


def test_a_joint_on_a_slower_publisher_of_its_own_stays_fresh():
    """An arm driver at 500 Hz and a drawer encoder at 10 Hz on the same topic, stamps interleaved (some of the
    drawer's just behind the arm's last frame): no frame is stale, and a stamp glitch alone blinds nothing."""
    a = FrameAssembler(["j1", "j2", "drawer"], mapping=StreamMapping(wrench=None))
    stale = []
    for k in range(500):
        t = 1.0 + k * 0.002
        frame = a.on_joint_states(js(t, pos=(0.1, 0.2 + k * 1e-4)))
        if k:
            stale.append(JOINTS in frame.stale)
        if k % 50 == 0:  # the drawer's message, stamped 1 ms behind the arm's frame every other time
            drawer = a.on_joint_states(js(t + (0.0005 if k % 100 else -0.001), names=("drawer",), pos=(k * 1e-5,)))
            assert drawer is None or drawer.stale == frozenset()
    assert not any(stale)
    assert set(kinds(a.drain_issues())) <= {"backwards"}


def test_one_message_behind_is_a_glitch_but_two_in_a_row_are_time_going_back():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    a.on_joint_states(js(1.0))
    assert a.on_joint_states(js(0.999)) is None
    glitch = a.on_joint_states(js(1.002))
    assert kinds(glitch.issues) == ["backwards"] and glitch.stale == frozenset() and not glitch.resync
    assert a.on_joint_states(js(0.5)) is None and a.on_joint_states(js(0.502)) is None
    back = a.on_joint_states(js(1.004))
    assert back.resync and back.stale == {JOINTS}


def test_a_joint_listed_twice_drops_the_message_as_ambiguous():
    a = FrameAssembler(("a", "b"), mapping=StreamMapping(wrench=None, joint_names={"b2": "b"}))
    assert a.on_joint_sample(m.JointSample(("a", "b", "a"), np.array([1.0, 2.0, 99.0]), None, None, 1.0)) is None
    assert a.on_joint_sample(m.JointSample(("a", "b", "b2"), np.array([1.0, 2.0, 99.0]), None, None, 1.002)) is None
    issues = a.drain_issues()
    assert kinds(issues) == ["duplicate_names"] * 2 and issues[0].detail.startswith("a listed more than once")
    frame = a.on_joint_sample(m.JointSample(("a", "b"), np.array([1.0, 2.0]), None, None, 1.004))
    np.testing.assert_array_equal(frame.state.joint_position, [1.0, 2.0])


def test_unknown_joints_are_reported_once_per_name_list():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    first = a.on_joint_states(js(1.0, names=("j1", "j2", "x"), pos=(0.1, 0.2, 9.0)))
    second = a.on_joint_states(js(1.002, names=("j1", "j2", "x"), pos=(0.1, 0.2, 9.0)))
    assert kinds(first.issues) == ["unknown_joints"] and second.issues == ()


def test_a_clock_step_is_confirmed_by_the_next_message_whose_frame_is_stale():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None), limits=StaleLimits(joint_states=0.05))
    a.on_joint_states(js(1.0))
    assert a.on_joint_states(js(2.0)) is None  # held back: a clock step or one glitched stamp?
    frame = a.on_joint_states(js(2.002))
    assert kinds(frame.issues) == ["time_jump"] and frame.stale == {JOINTS} and frame.state.t == 2.002
    assert frame.resync
    assert a.on_joint_states(js(2.004)).stale == frozenset()


CLOCK = 50.0  # the driver's clock (the node clock, a bag's log time) runs this far from the robot's stamps


def test_a_stream_silent_for_a_while_resumes_and_is_no_clock_step():
    """A joint publisher stopped for 17 s and restarted: stamps and arrival times both moved on, so the stream
    was silent, not the clock. Its first message makes a frame at once, stale (nothing was seen meanwhile)."""
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None), limits=StaleLimits(joint_states=0.05))
    a.on_joint_states(js(1.0), received=1.0 + CLOCK)
    a.on_joint_states(js(1.002), received=1.002 + CLOCK + 0.001)
    resumed = js(18.257, pos=(0.1, 0.3))  # (the robot moved meanwhile)
    frame = a.on_joint_states(resumed, received=18.257 + CLOCK + 0.03)  # arrival jitter within the gap limit
    assert kinds(frame.issues) == ["stream_resumed"] and frame.stale == {JOINTS} and frame.resync
    assert frame.issues[0].detail.startswith("silent for 17.255 s (stamps and arrival times alike), resumed")
    assert a.on_joint_states(js(18.259, pos=(0.1, 0.31)), received=18.259 + CLOCK).stale == frozenset()
    assert a.finish() == ()


@pytest.mark.parametrize("arrivals", [True, False])
def test_stamps_stepping_ahead_while_messages_keep_arriving_are_a_clock_step(arrivals):
    """The same 17 s in the stamps, but the messages came a control period apart (or without arrival times,
    which cannot tell): the clock stepped, the message at the step is held back and dropped as before."""
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None), limits=StaleLimits(joint_states=0.05))
    arrival = iter(1.0 + CLOCK + k * 0.002 for k in range(10))
    at = (lambda: next(arrival)) if arrivals else (lambda: None)
    a.on_joint_states(js(1.0), received=at())
    a.on_joint_states(js(1.002), received=at())
    assert a.on_joint_states(js(18.257, pos=(0.1, 0.3)), received=at()) is None
    frame = a.on_joint_states(js(18.259, pos=(0.1, 0.31)), received=at())
    assert kinds(frame.issues) == ["time_jump"] and frame.stale == {JOINTS} and frame.resync


def test_a_pause_in_arrivals_with_stamps_far_further_on_is_a_clock_step():
    """Silent 1 s by arrival but 17 s by the stamps: the clock stepped too, so it is not said to be a pause."""
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None), limits=StaleLimits(joint_states=0.05))
    a.on_joint_states(js(1.0), received=1.0 + CLOCK)
    assert a.on_joint_states(js(18.0, pos=(0.1, 0.3)), received=2.0 + CLOCK) is None
    assert kinds(a.on_joint_states(js(18.002, pos=(0.1, 0.31)), received=2.002 + CLOCK).issues) == ["time_jump"]


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("first", ["wrench", "pose"])
def test_a_slower_stream_stepping_with_the_clock_before_the_joints_is_no_stopped_joint_stream(first, lazy):
    """The clock steps 17 s; a wrench's (or a pose's) stepped stamp comes before the joints' stepped message, all
    a control period apart on the arrival clock. The joint stream did not stop: only the clock step is said, and
    the frame after it is stale as for any step. `lazy`: a slower sample's arrival given only when the assembler
    asks for it (`needs_arrival`), as the estimator node gives it, to the same outcome as replay's every one."""
    a = FrameAssembler(["j1", "j2"], objects=["mug"], limits=StaleLimits(joint_states=0.05))
    arrival = iter(1.0 + CLOCK + k * 0.001 for k in range(20))

    def at(stamp):
        received = next(arrival)
        return None if lazy and not a.needs_arrival(stamp) else received

    for t in (1.0, 1.002):
        a.on_wrench(m.wrench_msg(T, t, W), received=at(t))
        a.on_pose("mug", m.pose_msg(T, t, P), received=at(t))
        assert a.on_joint_states(js(t, pos=(0.1, t)), received=next(arrival)).stale == frozenset()
    for t in (18.259, 18.261):
        if first == "wrench":
            a.on_wrench(m.wrench_msg(T, t, W), received=at(t))
        else:
            a.on_pose("mug", m.pose_msg(T, t, P), received=at(t))
        assert a.drain_issues() == ()  # not "no joint_states since ... while wrench continues"
        frame = a.on_joint_states(js(t, pos=(0.1, t)), received=next(arrival))
    assert kinds(frame.issues) == ["time_jump"] and JOINTS in frame.stale and frame.resync
    assert a.finish() == ()


def test_a_joint_stream_that_stops_while_the_wrench_goes_on_is_still_said_to_have_stopped():
    """The wrench's stamps and arrival times both move on past the last joint message: the joints stopped."""
    a = FrameAssembler(["j1", "j2"], limits=StaleLimits(joint_states=0.05))
    a.on_wrench(m.wrench_msg(T, 1.0, W))
    a.on_joint_states(js(1.0), received=1.0 + CLOCK)
    assert not a.needs_arrival(1.04)
    a.on_wrench(m.wrench_msg(T, 1.04, W))
    assert a.drain_issues() == () and a.needs_arrival(1.08)
    a.on_wrench(m.wrench_msg(T, 1.08, W), received=1.08 + CLOCK)
    assert kinds(a.drain_issues()) == ["stream_stopped"] and not a.needs_arrival(1.12)  # said once


@pytest.mark.parametrize("glitch", [1000.0, 2.0**31 - 1])
def test_one_stamp_jumping_ahead_is_dropped_and_the_stream_goes_on(glitch):
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    a.on_joint_states(js(1.0))
    assert a.on_joint_states(js(1.0 + glitch)) is None
    frames = [a.on_joint_states(js(1.0 + k * 0.002)) for k in range(2, 6)]
    assert [f.stale for f in frames] == [frozenset()] * 4 and a.frames == 5
    assert kinds(frames[0].issues) == ["outlier_stamp"] and not any(f.issues for f in frames[1:])  # no time jump
    assert "alone dropped" in frames[0].issues[0].detail


def test_a_jump_ahead_at_the_end_of_the_stream_is_reported():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    a.on_joint_states(js(1.0))
    assert a.on_joint_states(js(500.0)) is None
    assert a.drain_issues() == ()  # held back: the next message would tell
    assert kinds(a.finish()) == ["time_jump"]


def test_unusable_joint_messages_leave_a_gap_that_is_no_clock_step_and_no_stopped_stream():
    """0.1 s of NaN positions: each message is dropped and counted, the stream is alive (no stream_stopped
    from the wrench going on) and did not step (no time_jump); the first frame after is stale all the same,
    because the grounder missed those frames."""
    a = FrameAssembler(["j1", "j2"], limits=StaleLimits(joint_states=0.05))
    wrench = Wrench(np.zeros(3), np.zeros(3))
    a.on_joint_states(js(1.0))
    for k in range(1, 51):
        t = 1.0 + k * 0.002
        a.on_wrench_sample(wrench, t)
        assert a.on_joint_states(js(t, pos=(float("nan"), 0.2))) is None
    frame = a.on_joint_states(js(1.102))
    assert sorted(set(kinds(frame.issues))) == ["nan"] and len(frame.issues) == 50
    assert frame.resync and JOINTS in frame.stale
    assert a.on_joint_states(js(1.104)).stale == frozenset()


def test_after_time_went_backwards_the_first_frame_past_the_last_one_is_stale():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    a.on_joint_states(js(4.0))
    assert all(a.on_joint_states(js(1.0 + k * 0.002)) is None for k in range(5))  # the clock went back 3 s
    assert a.on_joint_states(js(4.0)) is None  # a repeated stamp alone breaks nothing
    back = a.on_joint_states(js(4.002))
    assert back.stale == {JOINTS} and back.resync and kinds(back.issues) == ["backwards"] * 5 + ["duplicate_stamp"]
    assert a.on_joint_states(js(4.004)).stale == frozenset()
    assert a.on_joint_states(js(4.004)) is None
    assert a.on_joint_states(js(4.006)).stale == frozenset()


def test_joints_frozen_with_advancing_stamps_are_stale_from_the_limit_until_they_change():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None), limits=StaleLimits(joints_frozen=0.011))
    frames = [a.on_joint_states(js(1.0 + k * 0.002, vel=(0.0, 0.0))) for k in range(10)]  # 18 ms identical
    assert [JOINTS in f.stale for f in frames] == [False] * 6 + [True] * 4  # beyond 11 ms of stamp time
    assert kinds(frames[6].issues) == ["frozen"] and not any(f.issues for f in frames[7:])
    assert a.joints_frozen
    moved = a.on_joint_states(js(1.02, pos=(0.1, 0.2000001)))  # sound, but the grounder skipped the frozen span
    assert moved.stale == {JOINTS} and moved.resync and not a.joints_frozen
    assert a.on_joint_states(js(1.022, pos=(0.1, 0.2000002))).stale == frozenset()
    off = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None), limits=StaleLimits(joints_frozen=0))
    assert all(off.on_joint_states(js(1.0 + k * 0.01)).stale == frozenset() for k in range(300))


@pytest.mark.parametrize("gap", ["stream_resumed", "time_jump"])
def test_identical_joint_values_either_side_of_a_gap_are_not_frozen_only_repeats_heard_are(gap):
    """A driver silent for 1 s (or a clock that stepped 1 s) sent nothing across the gap: the same values
    before and after it are no repeats, so the frozen clock restarts at the gap; repeats heard after it
    are frozen once they last the limit again."""
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None), limits=StaleLimits(joints_frozen=0.011))
    for k in range(5):  # 8 ms identical, under the limit
        assert a.on_joint_states(js(1.0 + k * 0.002), received=1.0 + k * 0.002 + CLOCK).stale == frozenset()
    shift = 1.0 if gap == "stream_resumed" else 0.002  # arrivals paused with the stamps, or ran on
    if gap == "time_jump":
        assert a.on_joint_states(js(2.008), received=1.01 + CLOCK) is None  # held back: a step or an outlier?
    frames = [a.on_joint_states(js(2.01 + k * 0.002), received=1.01 + shift + k * 0.002 + CLOCK) for k in range(9)]
    assert kinds(frames[0].issues) == [gap] and frames[0].stale == {JOINTS} and frames[0].resync  # no "frozen"
    assert [JOINTS in f.stale for f in frames[1:]] == [False] * 5 + [True] * 3
    assert kinds(frames[6].issues) == ["frozen"] and a.joints_frozen  # 12 ms of repeats heard since the gap


def test_identical_wrench_values_either_side_of_a_silence_are_not_frozen():
    """A wrench silent for longer than its stale limit sent nothing meanwhile: the same six values after it
    restart the frozen clock (the frames between had it stale already); repeats heard after it count."""
    a = FrameAssembler(["j1", "j2"], limits=StaleLimits(wrench=0.01, wrench_frozen=0.011))
    for k in range(5):
        a.on_wrench_sample(W, 1.0 + k * 0.002)
    frames = []
    for k in range(9):  # silent 1 s, then the same values again, each with a frame
        a.on_wrench_sample(W, 2.01 + k * 0.002)
        frames.append(a.on_joint_states(js(2.01 + k * 0.002, pos=(0.1, 0.2 + k * 1e-6))))
    assert [WRENCH in f.stale for f in frames] == [False] * 6 + [True] * 3
    assert [kinds(f.issues) for f in frames] == [[]] * 6 + [["frozen"], [], []]


def test_joints_frozen_default_is_two_seconds_of_stamp_time():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    stale = [JOINTS in a.on_joint_states(js(1.0 + k * 0.01)).stale for k in range(202)]
    assert stale.index(True) == 201  # 2.01 s after the values first appeared


def test_frozen_wrench_stream_becomes_stale_and_a_stopped_joint_stream_is_flagged():
    a = FrameAssembler(["j1", "j2"], limits=StaleLimits(wrench=0.01))
    a.on_wrench(m.wrench_msg(T, 1.0, W))
    assert a.on_joint_states(js(1.005)).stale == frozenset()
    a.on_wrench(m.wrench_msg(T, 1.0, W))  # republished with the same stamp: frozen
    frame = a.on_joint_states(js(1.02))
    assert "wrench" in frame.stale and kinds(frame.issues) == ["duplicate_stamp"]
    a.on_wrench(m.wrench_msg(T, 1.5, W))
    assert kinds(a.drain_issues()) == ["stream_stopped"]


def test_a_wrench_repeating_bit_identical_values_is_stale_and_not_handed_to_the_grounder():
    a = FrameAssembler(["j1", "j2"], limits=StaleLimits(wrench_frozen=0.011))
    stale = []
    for k in range(10):  # identical force and torque for 18 ms, stamps advancing
        a.on_wrench(m.wrench_msg(T, 1.0 + k * 0.002, W))
        frame = a.on_joint_states(js(1.0 + k * 0.002, pos=(0.1, 0.2 + k * 1e-6)))
        stale.append(WRENCH in frame.stale)
        assert (frame.state.wrench is None) == stale[-1]
    assert stale == [False] * 6 + [True] * 4
    noisy = Wrench(W.force + 1e-9, W.torque)
    a.on_wrench(m.wrench_msg(T, 1.02, noisy))
    assert WRENCH not in a.on_joint_states(js(1.02)).stale


def test_a_wrench_frozen_check_tells_zero_from_minus_zero_and_takes_other_arrays():
    """The frozen check compares the values' bits (a sensor's sign flip around zero is a change); a wrench of
    float32 or integer arrays is tested and compared as numpy holds it."""
    a = FrameAssembler(["j1", "j2"], limits=StaleLimits(wrench_frozen=0.005))
    for k in range(8):  # one torque value flips between 0.0 and -0.0: never frozen
        a.on_wrench_sample(Wrench(W.force, np.array([0.0, 0.0, -0.0 if k % 2 else 0.0])), 1.0 + k * 0.002)
        frame = a.on_joint_states(js(1.0 + k * 0.002, pos=(0.1, 0.2 + k * 1e-6)))
        assert WRENCH not in frame.stale and not frame.issues
    b = FrameAssembler(["j1", "j2"], limits=StaleLimits(wrench_frozen=0.005))
    issues = []
    for k in range(8):
        b.on_wrench_sample(Wrench(np.array([1, 2, 3]), np.zeros(3, dtype=np.float32)), 1.0 + k * 0.002)
        issues += b.on_joint_states(js(1.0 + k * 0.002, pos=(0.1, 0.2 + k * 1e-6))).issues
    assert [(i.kind, i.t) for i in issues] == [("frozen", 1.006)]
    b.on_wrench_sample(Wrench(np.array([1, 2, 3]), np.array([0.0, np.nan, 0.0], dtype=np.float32)), 1.02)
    assert kinds(b.drain_issues()) == ["nan"]


def test_the_frozen_wrench_issue_is_raised_once_at_the_onset():
    a = FrameAssembler(["j1", "j2"], limits=StaleLimits(wrench_frozen=0.005))
    issues = []
    for k in range(8):
        a.on_wrench(m.wrench_msg(T, 1.0 + k * 0.002, W))
        issues += a.on_joint_states(js(1.0 + k * 0.002, pos=(0.1, 0.2 + k * 1e-6))).issues
    assert [(i.kind, i.stream, i.t) for i in issues] == [("frozen", WRENCH, 1.006)]


def test_a_stream_stale_by_the_assembler_limits_is_not_handed_to_the_grounder():
    a = FrameAssembler(["j1", "j2"], objects=["mug"], limits=StaleLimits(wrench=0.01, pose=0.01))
    a.on_wrench(m.wrench_msg(T, 1.0, W))
    a.on_pose("mug", m.pose_msg(T, 1.0, P))
    fresh = a.on_joint_states(js(1.005)).state
    assert fresh.wrench is not None and "mug" in fresh.object_poses
    old = a.on_joint_states(js(1.02))
    assert old.stale == {WRENCH, "object_pose/mug"}
    assert old.state.wrench is None and old.state.object_poses == {} and old.state.object_ages == {}


def test_zero_stamp_falls_back_to_arrival_time():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None))
    frame = a.on_joint_states(js(0.0), received=7.5)
    assert frame.state.t == 7.5 and kinds(frame.issues) == ["zero_stamp"]


def test_joints_default_to_the_first_message_names():
    a = FrameAssembler(mapping=StreamMapping(wrench=None))
    assert a.on_joint_states(js(1.0, names=("b", "a"))).state.joint_names == ("b", "a")


def test_mapping_parses_inline_pairs_and_files(tmp_path):
    inline = StreamMapping.parse("joint_states=/arm/joint_states, wrench=none")
    assert inline.joint_states == "/arm/joint_states" and inline.wrench is None
    path = tmp_path / "map.yaml"
    path.write_text(
        "object_pose: /mocap/{name}\nobjects: {mug: /vision/cup}\njoint_names: {panda_joint1: arm_joint1}\n"
    )
    mapping = StreamMapping.parse(str(path))
    assert mapping.pose_topic("mug") == "/vision/cup" and mapping.pose_topic("cube") == "/mocap/cube"
    assert mapping.joint_names == {"panda_joint1": "arm_joint1"}
    with pytest.raises(SourceError, match=r"unknown key 'wrist'; expected some of \['base_frame', "):
        StreamMapping.parse("wrist=/ft")
    with pytest.raises(
        SourceError, match=r"^--topics 'joint_sates=/x': unknown key 'joint_sates' \(did you mean 'joint_states'\?\)$"
    ):
        StreamMapping.parse("joint_sates=/x")
    with pytest.raises(SourceError, match="neither a file nor"):
        StreamMapping.parse("no-such-file.yaml")
    path.write_text("true: /ft\n3: /x\nwrenhc: /y\n")  # keys YAML reads as True and 3: once a TypeError
    with pytest.raises(SourceError, match=r"unknown key 3; .*; unknown key True; .*unknown key 'wrenhc' \(did you"):
        StreamMapping.parse(str(path))
    path.write_text("joint_states: 3\nwrench: null\n")  # once accepted, then an AttributeError scoring each bag
    with pytest.raises(SourceError, match=r"map\.yaml: 'joint_states' must be a topic name, got 3$"):
        StreamMapping.parse(str(path))


class _Grounder:
    predicates = ("p", "q")

    def __init__(self, fail=False):
        self.fail = fail

    def step(self, state):
        if self.fail:
            raise GroundingError("joint 'x' is NaN")
        return SimpleNamespace(
            t=state.t,
            frame=0,
            values={"p": True, "q": False},
            unknown=frozenset({"q"}),
            stale={"object_pose/mug": 0.3},
            objects={"p": ("mug",)},
        )


def test_ground_frame_merges_stale_streams_and_marks_rejected_frames_unknown():
    a = FrameAssembler(["j1", "j2"], limits=StaleLimits(wrench=0.01))
    frame = a.on_joint_states(js(1.0))
    sample, failure = ground_frame(_Grounder(), frame, 7)
    assert failure is None and sample.frame == 7 and sample.t == 1.0
    assert sample.valuation() == {"p": True, "q": None}
    assert sample.stale == {"wrench", "object_pose/mug"} and sample.objects == {"p": ("mug",)}
    sample, failure = ground_frame(_Grounder(fail=True), frame, 8)
    assert "NaN" in failure and sample.valuation() == {"p": None, "q": None} and sample.stale == {"wrench"}


def test_ground_frame_makes_every_predicate_unknown_on_stale_joints_and_steps_only_to_resync():
    a = FrameAssembler(["j1", "j2"], mapping=StreamMapping(wrench=None), limits=StaleLimits(joints_frozen=0.001))
    a.on_joint_states(js(1.0))
    frozen = a.on_joint_states(js(1.002))
    sample, failure = ground_frame(_Grounder(fail=True), frozen, 1)  # the grounder would raise if stepped
    assert failure is None and sample.valuation() == {"p": None, "q": None} and sample.stale == {JOINTS}
    stepped = []
    grounder = _Grounder()
    grounder.step = lambda state: stepped.append(state.t) or _Grounder.step(grounder, state)
    resync = a.on_joint_states(js(1.004, pos=(0.3, 0.4)))
    sample, failure = ground_frame(grounder, resync, 2)  # caught up, but nothing measured across the break
    assert stepped == [1.004] and failure is None and sample.valuation() == {"p": None, "q": None}


def test_a_sample_that_comes_after_the_frames_it_was_fresh_for_is_reported_late():
    """Topics are delivered independently: a wrench or pose held up in transport makes the frames before it
    stale (true: the estimator did not have it), and its late arrival is the evidence that it did not stop."""
    a = FrameAssembler(["j1", "j2"], objects=["cube"], limits=StaleLimits(wrench=0.01, pose=0.02))
    a.on_wrench(m.wrench_msg(T, 1.0, W))
    a.on_pose("cube", m.pose_msg(T, 1.0, P))
    assert a.on_joint_states(js(1.0)).stale == frozenset()
    frame = a.on_joint_states(js(1.03))  # the samples of 1.002 .. 1.03 have not come
    assert frame.stale == {"wrench", "object_pose/cube"} and frame.issues == ()
    a.on_wrench(m.wrench_msg(T, 1.01, W))  # fresh for the frame at 1.01, which it missed
    a.on_pose("cube", m.pose_msg(T, 1.02, P))  # within the pose limit of the last frame: not late
    assert kinds(a.drain_issues()) == ["late_arrival"]
    a.on_wrench(m.wrench_msg(T, 1.03, W))  # in time for the next frame
    assert a.on_joint_states(js(1.032)).stale == frozenset() and a.drain_issues() == ()


def test_finite_is_every_value_within_the_limit():
    from safety_monitor.pipeline.assemble import _LIMIT, _finite

    rng = np.random.default_rng(0)
    special = [np.nan, np.inf, -np.inf, _LIMIT, -_LIMIT, np.nextafter(_LIMIT, 0), _LIMIT / 2, 1.7e308, -0.0, 5e-324]
    for _ in range(3000):
        rows = [rng.normal(size=int(rng.integers(0, 8))) * 10.0 ** rng.integers(0, 10) for _ in range(3)]
        for row in rows:
            if row.size and rng.random() < 0.5:
                row[rng.integers(row.size)] = special[rng.integers(len(special))]
        assert _finite(*rows) == all(abs(v) < _LIMIT for row in rows for v in row.tolist())
