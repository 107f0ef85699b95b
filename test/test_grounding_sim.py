"""Grounding on physics: the sim helper's scripted episodes through the twin-based Grounder and the
default specs. A nominal pick-and-place violates nothing; labelled faults trip their properties.

Episodes run at 50 Hz (every 10th physics step) to keep the test short; the grounder is told the rate.
"""

from __future__ import annotations

import pytest

from safety_monitor.files import config_dir
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.monitor.live import SpecSetMonitor
from safety_monitor.sim.faults import FAULTS
from safety_monitor.sim.runner import run_episode

STRIDE = 10


def violated(task, fault) -> set[str]:
    grounder = load_default_grounder(500.0 / STRIDE)
    monitor = SpecSetMonitor.from_spec_file(config_dir() / "specs.yaml", control_rate_hz=500.0 / STRIDE)
    opened = set()
    for state in run_episode(task, fault, seed=0, stride=STRIDE):
        frame = grounder.step(state)
        values = {k: (None if k in frame.unknown else v) for k, v in frame.values.items()}
        opened |= {e.property for e in monitor.step(values, state.t) if e.kind == "opened"}
    monitor.finish()
    return opened


def test_nominal_pick_and_place_violates_nothing():
    assert violated("pick_and_place_mug", None) == set()


@pytest.mark.parametrize("fault", ["slip", "place_on_clutter"])
def test_labelled_faults_trip_their_properties(fault):
    spec = FAULTS[fault]
    found = violated(None, fault)
    assert set(spec.expected_properties) <= found <= set(spec.allowed_properties) | set(spec.expected_properties)
