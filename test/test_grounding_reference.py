"""The grounder reproduces its recorded reference bit for bit (test/grounding_reference.py says what it
holds and when to record it again). Speed work on grounding must keep every predicate value, unknown flag
and stale age of every frame; a change of semantics on purpose records the reference again."""

from __future__ import annotations

import numpy as np
import pytest
from grounding_reference import Episode, ground, load, outputs, stale_streams

from safety_monitor.grounding.grounder import load_default_grounder

PREDICATES, OBJECTS, EPISODES = load()


def test_the_reference_covers_what_grounding_decides():
    """Every predicate family is exercised (a reference of constant outputs proves little): 39 of the 44
    predicates are both true and false somewhere (never true: two timeouts, `sanitized`, joint jumps and the
    effort limit; `overspeed` breaks the velocity limit), a third of them are unknown somewhere, stale
    streams occur, and the full-rate stretch is there."""
    values = np.concatenate([e.values for e in EPISODES])
    unknown = np.concatenate([e.unknown for e in EPISODES])
    both = [p for i, p in enumerate(PREDICATES) if values[:, i].any() and not values[:, i].all()]
    assert len(both) >= 39, f"only {both} change value"
    assert unknown.any(axis=0).sum() >= 15
    assert any(np.isfinite(e.stale).any() for e in EPISODES if e.name.startswith("degraded"))
    assert {e.rate_hz for e in EPISODES} == {50.0, 500.0}


def test_the_grounder_knows_the_reference_predicates():
    grounder = load_default_grounder(500.0)
    assert grounder.predicates == PREDICATES, "the predicate set changed: record the reference again"
    assert tuple(grounder.robot.objects) == OBJECTS


@pytest.mark.parametrize("episode", EPISODES, ids=[e.name for e in EPISODES])
def test_grounding_reproduces_the_reference(episode: Episode):
    frames = ground(load_default_grounder(episode.rate_hz), episode.states)
    values, unknown, stale = outputs(frames, PREDICATES, stale_streams(OBJECTS))
    for name, want, got in (("value", episode.values, values), ("unknown", episode.unknown, unknown)):
        diff = np.argwhere(want != got)
        if diff.size:
            frame, column = diff[0]
            pytest.fail(
                f"{episode.name}: {len(diff)} {name} differences, first at frame {frame} "
                f"(t={episode.states[frame].t:.3f} s): {PREDICATES[column]} was {want[frame, column]}, "
                f"now {got[frame, column]}"
            )
    # stale ages bit for bit (NaN: not stale)
    assert np.array_equal(episode.stale, stale, equal_nan=True), f"{episode.name}: stale ages differ"
