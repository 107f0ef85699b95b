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
    Stress,
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


@pytest.fixture(scope="module")
def grounder():
    return load_default_grounder(GROUNDER_RATE)


@given(case=grounder_edits())
@settings(FUZZ, max_examples=8)
def test_grounder_matches_the_baseline(baseline, grounder, case):
    outcome, detail = grounder_outcome(case, grounder, baseline)
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
