"""Timeline: a bag's predicate history as runs, whichever way the frames' values are passed."""

from __future__ import annotations

from safety_monitor.replay.timeline import Timeline


def runs_of(frames: list) -> dict[str, list[list]]:
    timeline = Timeline(("a", "b"))
    for k, values in enumerate(frames):
        timeline.add(values, 0.1 * k)
    timeline.close()
    return timeline.runs


def test_the_same_tuple_passed_again_extends_the_runs_as_an_equal_one_does():
    """Replay passes one tuple per run of equal frames; the timeline skips comparing it again."""
    same, other = (True, None), (False, None)
    assert runs_of([same, same, other, other, same]) == runs_of(
        [(True, None), (True, None), other, (False, None), same]
    )
    assert runs_of([same, same, other, other, same]) == {
        "a": [[0, 1, True], [2, 3, False], [4, 4, True]],
        "b": [[0, 4, None]],
    }


def test_a_list_changed_in_place_between_frames_is_read_again():
    """Only a tuple's identity says its values are the last frame's: a list may have changed since."""
    values = [True, False]
    frames = [values, values]
    timeline = Timeline(("a", "b"))
    timeline.add(frames[0], 0.0)
    values[1] = True
    timeline.add(frames[1], 0.1)
    timeline.close()
    assert timeline.runs == {"a": [[0, 1, True]], "b": [[0, 0, False], [1, 1, True]]}
