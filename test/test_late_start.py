"""A monitor started at any moment of a run (a node restarted mid-task, a bag replayed from its middle, a
grounder reset when its inputs restarted) raises no alarm on a clean run and still catches a fault that
happens after it started.

A deterministic slice of benchmarks/sweep_late_start.py at 50 Hz (and one start at 500 Hz): the starts its
sweep found to be the risky ones (just after a release, during the settle, mid-approach, mid-carry, mid-slide,
the mug just out of the closed fingers), each a phase of the script plus an offset, so the starts follow the
script if it changes.
"""

from __future__ import annotations

import pytest
from benchmark_scripts import benchmark_script

pytest.importorskip("mujoco")

RATE = 50.0


@pytest.fixture(scope="module")
def sweep():
    with benchmark_script("sweep_late_start") as module:
        yield module


@pytest.fixture(scope="module")
def stack(sweep):
    return sweep.Stack(RATE)


def start_in(rec, phase: str, seconds: float) -> int:
    """The frame `seconds` into the first segment labelled `phase`."""
    return rec.phases.index(phase) + round(seconds * rec.rate_hz)


CLEAN = [  # (task, phase, seconds into it)
    ("pick_and_place_mug", "retreat", 0.0),  # the fingers just opened on the placed mug
    ("pick_and_place_cube", "release", 0.1),  # the fingers opening
    ("pick_and_place_plate", "done", 0.02),  # the plate set down, the arm at rest: the settle
    ("dump_into_bin", "retreat", 0.02),  # the chicken falling into the bin
    ("pick_and_place_mug", "approach", 0.3),  # mid-approach, the hand empty and open
    ("pick_and_place_cube", "close", 0.0),  # the open hand around the cube, about to close
    ("place_in_cabinet", "transport", 0.3),  # mid-carry, the mug held since before the start
    ("open_drawer", "slide", 0.2),  # pulling the drawer, its motion not measured yet
]


@pytest.mark.parametrize("task,phase,seconds", CLEAN)
def test_a_clean_run_started_late_raises_no_alarm(sweep, stack, task, phase, seconds):
    rec = sweep.record(task, RATE)
    run = stack.run(rec, start_in(rec, phase, seconds))
    assert run.phase == phase and run.opened == {}, run


UNDER_WAY = [  # (task, phase, seconds into it, the onset that may have pulsed before the start)
    ("pick_and_place_mug", "retreat", 0.0, "skill_pick_onset"),  # the open hand by the mug it just placed
    ("pick_and_place_cube", "close", 0.0, "skill_pick_onset"),  # the open hand around the cube
    ("dump_into_bin", "retreat", 0.02, "skill_pick_onset"),  # the open hand above the chicken it dropped
    ("open_drawer", "slide", 0.2, "skill_open_onset"),  # the hand pulling the drawer's handle
]


@pytest.mark.parametrize("task,phase,seconds,onset", UNDER_WAY)
def test_an_approach_under_way_on_the_first_frame_is_no_onset(sweep, stack, task, phase, seconds, onset):
    """It may have begun before the start: unknown, not a pulse the monitor would count as a trigger (the
    sweep found one on 241 of 1786 starts at 50 Hz before this rule)."""
    rec = sweep.record(task, RATE)
    run = stack.run(rec, start_in(rec, phase, seconds))
    assert run.first_pulses == [] and onset in run.unknown_from_start, run


FAULTS = [  # (fault, phase, seconds into it): a start before the fault's onset
    ("early_release", "transport", 0.1),  # mid-carry, before the fingers ease
    ("slip", "transport", 0.1),  # mid-carry, before the grip fails
    ("fixture_collision", "detour", 0.1),  # the empty hand on its way to the bin wall
    ("place_on_clutter", "transport", 0.3),  # mid-carry, before the place among the clutter
    ("push_blocked_drawer", "approach", 0.2),  # mid-approach to the jammed drawer's handle
]


@pytest.mark.parametrize("fault,phase,seconds", FAULTS)
def test_a_fault_after_a_late_start_is_still_caught(sweep, stack, fault, phase, seconds):
    from safety_monitor.sim.faults import FAULTS as SPECS

    spec = SPECS[fault]
    rec = sweep.record(fault, RATE)
    start = start_in(rec, phase, seconds)
    onset = min(f for p, f in stack.run(rec, 0).opened.items() if p in spec.expected_properties)
    run = stack.run(rec, start)
    assert run.phase == phase and start < onset, (start, onset)
    assert set(spec.expected_properties) <= run.opened.keys(), run
    assert run.opened.keys() <= set(spec.expected_properties) | set(spec.allowed_properties), run


MUG_OUT = [  # (rate, seconds into fingers_ease): the mug already out of the fingers, which stay closed
    (RATE, 0.3),
    (RATE, 0.4),
    (500.0, 0.52),
]


@pytest.mark.parametrize("rate,seconds", MUG_OUT)
def test_a_drop_the_debounce_may_still_hold_on_the_first_frame_is_blind_not_missed(sweep, stack, rate, seconds):
    """The debounce of a grasp before the start may still hold the mug, its drop come after the start: the drop
    is unknown until the debounce decides, so the fault is caught or its property blind, never silently missed
    (the sweep missed it from these starts while an empty closed hand counted everything near it as not held)."""
    from safety_monitor.sim.faults import FAULTS as SPECS

    expected = set(SPECS["early_release"].expected_properties)
    rec = sweep.record("early_release", rate)
    run = (stack if rate == RATE else sweep.Stack(rate)).run(rec, start_in(rec, "fingers_ease", seconds))
    assert run.phase == "fingers_ease", run
    assert expected <= run.opened.keys() or expected & run.blind, run


FOCUS = ("object_left_gripper", "object_settled", "settle_timeout", "object_in_fixture")
CLOSED_EMPTY = [  # (task, phase, seconds into it): a closed hand holding nothing, an object within fall distance
    ("open_drawer", "approach", 0.3),  # the closed hand on its way to the handle
    ("early_release", "fingers_ease", 0.4),  # the mug just out of the closed fingers
]


@pytest.mark.parametrize("task,phase,seconds", CLOSED_EMPTY)
def test_a_closed_empty_hand_on_the_first_frame_leaves_the_focus_known(sweep, stack, task, phase, seconds):
    """An object near it may just have been let go (its drop unknown, above), but it is not made a possible
    focus: the post-drop predicates stay known, as where nothing was held (made one, they stayed unknown for up
    to 14 s after such starts, until the next grasp, and from every start of a robot resting with it closed)."""
    rec = sweep.record(task, RATE)
    grounder = stack.grounder
    grounder.restart()
    frames = [grounder.step(state) for state in rec.states[start_in(rec, phase, seconds) :]]
    assert "object_dropped" in frames[0].unknown and not frames[0].values["object_grasped_raw"], frames[0]
    assert [f.frame for f in frames if f.unknown.intersection(FOCUS)] == []
