"""Episode markers (random, damaged, out of order, duplicated) and `_objects` values of any shape in bags:
replay ends in an error naming the bag or a well-formed result that counts every frame once, is never
silently safer than the unmarked bag's and holds the rollouts the Supervisor finishes driven as the monitor node
drives it; a malformed `_objects` drops exactly the frames the live decoder
rejects (benchmarks/fuzz_inputs.py runs the long campaign)."""

import shutil

import pytest
from hypothesis import example, given, settings
from test_fuzz_support import (
    BAG_SPECS,
    FUZZ,
    MODES,
    STORAGES,
    RawMarker,
    guarded,
    held_marker_layouts,
    is_failure,
    late_limits,
    marker_layouts,
    marker_live_outcome,
    marker_outcome,
    objects_outcome,
    objects_values,
    replay_config,
    write_base_bag,
)

from safety_monitor.replay.score import score_bag


class Bags:
    def __init__(self, folder):
        from safety_monitor.sim.runner import run_episode

        self.state = next(run_episode("pick_and_place_cube"))
        self.folder = folder
        self.specs = folder / "specs.yaml"
        self.specs.write_text(BAG_SPECS)
        base = {s: write_base_bag(folder / f"base_{s}", s, self.state) for s in STORAGES}
        self.reference = {(s, m): score_bag(base[s], replay_config(self.specs, m)) for s in STORAGES for m in MODES}

    def bag(self, storage, **edits):
        path = self.folder / "edited"
        shutil.rmtree(path, ignore_errors=True)
        return write_base_bag(path, storage, self.state, **edits)


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    return Bags(tmp_path_factory.mktemp("fuzz_markers"))


def check_markers(bags, storage, markers, mode):
    bag = bags.bag(storage, markers=markers)
    config = replay_config(bags.specs, mode)
    outcome, detail = guarded(lambda: marker_outcome(bag, config, bags.reference[storage, mode]))
    assert not is_failure(outcome), (outcome, detail, markers)


@settings(FUZZ, max_examples=12)
@given(markers=marker_layouts())
def test_marked_mcap_bags_in_predicate_mode(bags, markers):
    check_markers(bags, "mcap", markers, "predicates")


@settings(FUZZ, max_examples=6)
@given(markers=marker_layouts())
def test_marked_sqlite3_bags_in_predicate_mode(bags, markers):
    check_markers(bags, "sqlite3", markers, "predicates")


@settings(FUZZ, max_examples=6)
@given(markers=marker_layouts())
def test_marked_mcap_bags_in_robot_state_mode(bags, markers):
    check_markers(bags, "mcap", markers, "robot_state")


@settings(FUZZ, max_examples=8)
@given(held=held_marker_layouts())
@example(  # two start markers after the last frame, 37 frames kept: the trace's other 112 frames were in no rollout
    held=(
        (
            RawMarker(102.6, "start", 0, 100.6),
            RawMarker(101.92, "start", -1, 99.925),
            RawMarker(100.65, "stop", 1, 100.6),
        ),
        (37, 3),
    )
)
def test_late_markers_with_few_frames_kept_live_and_in_replay(bags, held):
    markers, limits = held
    bag = bags.bag("mcap", markers=markers)
    config = replay_config(bags.specs, "predicates")
    with late_limits(*limits):
        outcome, detail = guarded(lambda: marker_outcome(bag, config, bags.reference["mcap", "predicates"]))
        live, live_detail = guarded(lambda: marker_live_outcome(bag, config))
    assert not is_failure(outcome) and not is_failure(live), (outcome, live, detail, live_detail, held)


@settings(FUZZ, max_examples=12)
@given(objects=objects_values())
def test_objects_values_of_any_shape(bags, objects):
    bag = bags.bag("mcap", objects=objects)
    config = replay_config(bags.specs, "predicates")
    outcome, detail = guarded(lambda: objects_outcome(bag, config, bags.reference["mcap", "predicates"], objects))
    assert not is_failure(outcome), (outcome, detail, objects)
