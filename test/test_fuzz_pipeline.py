"""The stages around the grounder (the FrameAssembler's rows, stale sets, JumpDetector frame and wrench key; the
Estimator's resync, warm-up, restarts and frozen joints) against another tree: message streams of each robot's own
runs edited to stress them (values held exactly still then stepped one ulp, 0.0 against -0.0, NaN and inf, joints
jumping, names reordered or cut, stamps repeated, backwards or far ahead, topics stopping, messages out of order, a
mobile base jumping just under or over base_jump, rollout markers on time or late) give the same EstimatorSteps, bit
for bit. Here the other tree is this one, in the subprocess a baseline runs in; with SAFETY_MONITOR_GROUNDER_BASELINE
set, that tree. benchmarks/fuzz_inputs.py --pipeline runs the long campaign."""

import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from test_fuzz_support import (
    FUZZ,
    BaselineGrounder,
    Feed,
    GrounderRobot,
    PipelineCase,
    PipelineEdit,
    PipelineStress,
    compared_grounder,
    estimator_records,
    pipeline_edits,
    pipeline_mapping,
    pipeline_messages,
    pipeline_outcome,
)

from safety_monitor.frames import Wrench
from safety_monitor.pipeline import assemble

BASELINE = os.environ.get("SAFETY_MONITOR_GROUNDER_BASELINE")
REPO = Path(__file__).resolve().parents[1]
QUICK = (GrounderRobot.URDF, GrounderRobot.MOBILE, GrounderRobot.NO_GRIPPER, GrounderRobot.LEFT_ARM)  # quick runs
WORKCELL = (3, GrounderRobot.WORKCELL_50)  # one scripted episode simulated for every workcell test


@pytest.fixture(scope="module")
def baseline():
    other = BaselineGrounder(Path(BASELINE or REPO))
    yield other
    other.close()


@given(case=pipeline_edits(QUICK))
@settings(FUZZ, max_examples=4)
def test_the_estimator_matches_the_baseline(baseline, case):
    outcome, detail = pipeline_outcome(case, baseline)
    assert outcome == "same", f"{case!r}\n{detail}"


def _issues(case: PipelineCase) -> list[tuple]:
    records = estimator_records(compared_grounder(case.robot), pipeline_mapping(case), pipeline_messages(case), False)
    return [i for r in records for i in r[1]]


# the wrench held for 2.6 s (the frozen limit is 2 s): 0.0 in one component, -0.0 from halfway on
_SIGNED_ZERO = PipelineCase(
    WORKCELL[0], 0.2, 200, (PipelineEdit(PipelineStress.SIGNED_ZERO, 0.1, 0.75, (Feed.WRENCH, 2, "once", "span")),),
    WORKCELL[1],
)  # fmt: skip


def test_a_planted_difference_is_reported(baseline, monkeypatch):
    """A wrench key that no longer tells -0.0 from 0.0 (the speed cache's trap) makes the held wrench frozen."""
    assert pipeline_outcome(_SIGNED_ZERO, baseline) == ("same", "")
    assert not any(i[0] == "frozen" for i in _issues(_SIGNED_ZERO))
    kernel = assemble._geomath.wrench_key
    monkeypatch.setattr(
        assemble._geomath, "wrench_key", lambda w, limit: kernel(Wrench(w.force + 0.0, w.torque + 0.0), limit)
    )
    outcome, detail = pipeline_outcome(_SIGNED_ZERO, baseline)
    assert outcome == "estimator_differs" and "frozen" in detail


def test_held_values_step_one_ulp_and_signed_zeros_alternate():
    hold = PipelineCase(
        WORKCELL[0], 0.0, 60, (PipelineEdit(PipelineStress.HOLD, 0.0, 0.5, ("all", 1, "ulp+", "span", 5)),), WORKCELL[1]
    )
    sent = [m for m in pipeline_messages(hold) if m[0] == Feed.JOINTS]
    held, stepped = sent[0][1].position, sent[30][1].position
    assert all(np.array_equal(m[1].position, held) for m in sent[:30]) and sent[29][1].stamp < sent[30][1].stamp
    assert stepped[1] == np.nextafter(held[1], math.inf) and np.array_equal(np.delete(stepped, 1), np.delete(held, 1))
    assert not np.array_equal(sent[35][1].position, stepped)  # moving again
    zero = PipelineEdit(PipelineStress.SIGNED_ZERO, 0.0, 0.5, (Feed.WRENCH, 4, "alternate", "span"))
    zeros = PipelineCase(WORKCELL[0], 0.0, 20, (zero,), WORKCELL[1])
    torques = [m[1][0].torque[1] for m in pipeline_messages(zeros) if m[0] == Feed.WRENCH][:10]
    assert torques == [0.0] * 10 and [math.copysign(1, t) for t in torques] == [1, -1] * 5


def test_a_base_jump_just_over_the_reach_is_said_and_just_under_is_not():
    def jumps(axis: str, factor: float) -> int:
        edit = PipelineEdit(PipelineStress.BASE, 0.3, 0.5, (axis, factor, 1))
        return sum(i[0] == "base_jump" for i in _issues(PipelineCase(0, 0.0, 90, (edit,), GrounderRobot.MOBILE)))

    assert jumps("x", 1 - 1e-6) == jumps("yaw", 1 - 1e-6) == 0
    assert jumps("y", 1 + 1e-6) >= 1 and jumps("yaw", 1 + 1e-6) >= 1


def test_slower_samples_are_sent_once_and_reordering_keeps_every_message():
    clean = PipelineCase(
        WORKCELL[0], 0.0, 100, (), WORKCELL[1], clock=1000.0
    )  # (the run's first poses are stamped 0.0: unstamped)
    intact = pipeline_messages(clean)
    stamps = [(m[0], m[1][0] if m[0] == Feed.POSE else None, m[1][-1]) for m in intact[:-1] if m[0] != Feed.JOINTS]
    assert len(set(stamps)) == len(stamps) and not _issues(clean)
    for how in ("reverse", "late", "random"):
        edit = PipelineEdit(PipelineStress.SHUFFLE, 0.2, 0.6, (how, 7))
        shuffled = pipeline_messages(PipelineCase(WORKCELL[0], 0.0, 100, (edit,), WORKCELL[1], clock=1000.0))
        assert sorted(repr(m[:2]) for m in shuffled) == sorted(repr(m[:2]) for m in intact)
        assert [m[0] for m in shuffled] != [m[0] for m in intact]
        assert all(a[2] <= b[2] for a, b in zip(shuffled, shuffled[1:]))


def test_a_late_marker_restarts_the_grounder_and_a_stamp_far_behind_restarts_the_input():
    late = PipelineCase(1, 0.0, 100, (PipelineEdit(PipelineStress.MARKER, 0.5, 0.5, (3, False)),), GrounderRobot.URDF)
    assert [i[0] for i in _issues(late)] == ["late_marker"]
    back = PipelineEdit(PipelineStress.STAMPS, 0.5, 0.5, (Feed.JOINTS, "backwards", 10.0))
    assert [i[0] for i in _issues(PipelineCase(1, 0.0, 100, (back,), GrounderRobot.URDF))][:1] == ["input_restarted"]


def test_a_joint_step_just_over_the_jump_limit_is_a_jump_and_just_under_is_not():
    def jumps(factor: float) -> int:
        edit = PipelineEdit(PipelineStress.JOINT_JUMP, 0.5, 0.5, (0, ("limit", factor), 1))
        return sum(i[0] == "joint_jump" for i in _issues(PipelineCase(0, 0.1, 60, (edit,), GrounderRobot.URDF)))

    assert jumps(0.999) == 0 and jumps(1.001) >= 1
