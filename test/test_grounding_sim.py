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


ALWAYS_NAMED = (  # object-bound predicates whose objects the grounder always knows when they hold
    "object_grasped_raw",
    "object_grasped",
    "object_dropped",
    "object_released",
    "object_left_gripper",
    "object_settled",
    "settle_timeout",
    "fixture_fully_open",
    "fixture_fully_closed",
    "reach_in_fixture",
    "contained_settled",
    "transfer_timeout",
)


def named(task) -> dict[str, set[str]]:
    """Every object each predicate was about over a task's episode; checked frame by frame: only decided,
    true predicates name objects, and those of ALWAYS_NAMED always do."""
    grounder = load_default_grounder(500.0 / STRIDE)
    seen: dict[str, set[str]] = {}
    for state in run_episode(task, None, seed=0, stride=STRIDE):
        frame = grounder.step(state)
        holding = {p for p, v in frame.values.items() if v and p not in frame.unknown}
        assert frame.objects.keys() <= holding, frame.frame
        assert holding & set(ALWAYS_NAMED) <= frame.objects.keys(), frame.frame
        for p, names in frame.objects.items():
            assert names and set(names) <= grounder.catalog.kinds.keys(), (p, names)  # objects, fixtures, bin
            seen.setdefault(p, set()).update(names)
    return seen


def test_the_grounder_names_the_objects_its_predicates_are_about():
    dump = named("dump_into_bin")
    for p in ("object_grasped", "object_dropped", "object_released", "object_settled"):
        assert dump[p] == {"raw_chicken"}, p
    assert dump["transfer_event"] == {"raw_chicken", "bin"}
    assert named("open_drawer")["fixture_fully_open"] == {"drawer"}
