"""The grounder's speed caches (the same pairs, nothing moved, the same gap maps, quiet objects, the same joint
names) against a tree without them: scripted episodes edited to stress them (objects and joints held exactly still
then stepped by one ulp or across a threshold, poses and the wrench lost and back, the fingers moving alone, frames
repeated, resets) ground to the same frames, bit for bit. The differential runs only with a baseline source tree
(its kernels built) in SAFETY_MONITOR_GROUNDER_BASELINE; benchmarks/fuzz_inputs.py --grounder runs the long
campaign. The edits themselves are tested without one."""

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from test_fuzz_support import (
    FUZZ,
    GROUNDER_RATE,
    BaselineGrounder,
    GrounderCase,
    GrounderEdit,
    GrounderRobot,
    Stress,
    case_states,
    compared_grounder,
    edited_window,
    grounder_edits,
    grounder_outcome,
    scripted_states,
    step_records,
)

from safety_monitor.grounding.grounder import load_default_grounder

BASELINE = os.environ.get("SAFETY_MONITOR_GROUNDER_BASELINE")


@pytest.fixture(scope="module")
def baseline():
    if not BASELINE:
        pytest.skip("no baseline tree (SAFETY_MONITOR_GROUNDER_BASELINE) to compare the grounder with")
    other = BaselineGrounder(Path(BASELINE))
    yield other
    other.close()


@given(case=grounder_edits(tuple(GrounderRobot)))
@settings(FUZZ, max_examples=12)
def test_grounder_matches_the_baseline(baseline, case):
    outcome, detail = grounder_outcome(case, baseline)
    assert outcome == "same", f"{case!r}\n{detail}"


def test_edits_hold_still_then_step_one_ulp_and_repeat_and_reset():
    case = GrounderCase(
        0,
        0.0,
        200,
        (
            GrounderEdit(Stress.FREEZE, 0.1, 0.3, ("mug", 0, ("ulp", 1), 10)),
            GrounderEdit(Stress.SAME_STAMP, 0.5, 0.5, (2, True)),
            GrounderEdit(Stress.RESET, 0.8, 0.8),
        ),
    )
    window = edited_window(scripted_states(0), case)
    assert len(window) == 203 and window[161] is None  # at 0.8 of the window with the two repeats
    held, stepped = window[20].object_poses["mug"], window[60].object_poses["mug"]
    assert all(w.object_poses["mug"] is held for w in window[20:60])
    assert np.array_equal(window[20].joint_position, window[59].joint_position)
    assert stepped.position[0] == np.nextafter(held.position[0], np.inf)
    assert window[100].t == window[101].t == window[102].t
    records = step_records(load_default_grounder(GROUNDER_RATE), window)
    assert [r[0] for r in records[101:103]] == ["error", "error"]  # refused, and grounding goes on
    assert records[103][1] == records[100][1] + 1 and records[161] == ("reset",) and records[162][1] == 0


@pytest.mark.parametrize(
    "robot", [r for r in GrounderRobot if r not in (GrounderRobot.WORKCELL, GrounderRobot.WORKCELL_100)]
)
def test_each_robots_runs_ground_at_its_rate_and_do_what_they_are_for(robot):
    """Every run of the robot grounds without a refused frame, its stamps a control period apart; the gripper
    robots grasp and drop, the mobile base's contact run touches the table."""
    from test_fuzz_support import compared_grounder, grounder_setup, robot_run, run_count

    rate = grounder_setup(robot).rate_hz
    for index in range(min(2, run_count(robot))):
        states = robot_run(robot, index)
        assert np.allclose(np.diff([s.t for s in states]), 1 / rate)
        records = step_records(compared_grounder(robot), states)
        assert all(r[0] != "error" for r in records)
        held = sum(dict(r[2])["object_grasped"] is True for r in records)
        touched = sum(dict(r[2])["forbidden_contact_sustained"] is True for r in records)
        if robot in (GrounderRobot.MOBILE, GrounderRobot.NO_GRIPPER):
            assert held == 0 and (touched > 0) == (robot is GrounderRobot.MOBILE and index == 1)
        else:
            assert held > rate and sum(dict(r[2])["object_dropped"] is True for r in records) == 1


def test_a_mobile_base_edit_loses_moves_or_holds_its_pose_and_leaves_a_fixed_base_alone():
    def edited(trouble: str, robot: GrounderRobot = GrounderRobot.MOBILE) -> list:
        case = GrounderCase(1, 0.0, 100, (GrounderEdit(Stress.BASE, 0.2, 0.4, (trouble,)),), robot)
        return edited_window(case_states(case), case)

    intact = case_states(GrounderCase(1, 0.0, 100, (), GrounderRobot.MOBILE))[:100]
    lost, away, still = edited("missing"), edited("away"), edited("still")
    assert all(s.base_pose is None for s in lost[20:40]) and lost[40] is intact[40]
    assert np.array_equal(away[30].base_pose.position, intact[30].base_pose.position + 0.5) and away[40] is intact[40]
    assert all(s.base_pose is still[20].base_pose for s in still[20:40])
    assert still[40].base_pose.position[0] == np.nextafter(still[20].base_pose.position[0], np.inf)
    assert np.array_equal(still[59].joint_position, still[20].joint_position) and still[60] is intact[60]
    overlapping = (GrounderEdit(Stress.BASE, 0.2, 0.4, ("missing",)), GrounderEdit(Stress.BASE, 0.3, 0.5, ("away",)))
    both = edited_window(intact, GrounderCase(1, 0.0, 100, overlapping, GrounderRobot.MOBILE))
    assert both[35].base_pose is None and np.array_equal(
        both[45].base_pose.position, intact[45].base_pose.position + 0.5
    )
    arm = edited("missing", GrounderRobot.URDF)
    assert arm == case_states(GrounderCase(0, 0.0, 100, (), GrounderRobot.URDF))[:100]


def test_the_other_arms_fingers_move_alone_and_a_single_arm_holds_still():
    """The two-arm edit the other stack's gripper makes: only the other arm's fingers walk to the target."""
    from test_fuzz_support import _other_fingers

    edit = (GrounderEdit(Stress.OTHER_FINGERS, 0.2, 0.6, (0.02,)),)
    for robot in (GrounderRobot.LEFT_ARM, GrounderRobot.RIGHT_ARM):
        case = GrounderCase(0, 0.5, 100, edit, robot)
        window = edited_window(case_states(case), case)
        names = window[20].joint_names
        other = [names.index(j) for j in _other_fingers(robot)]
        assert other and not set(_other_fingers(robot)) & set(compared_grounder(robot).robot.gripper.joints)
        assert all(np.array_equal(np.delete(s.joint_position, other), np.delete(window[20].joint_position, other))
                   for s in window[20:60])  # fmt: skip
        assert window[59].joint_position[other].tolist() == [0.02] * len(other) != window[20].joint_position[other]
    one_arm = GrounderCase(0, 0.5, 100, edit, GrounderRobot.URDF)
    held = edited_window(case_states(one_arm), one_arm)
    assert all(np.array_equal(s.joint_position, held[20].joint_position) for s in held[20:60])
