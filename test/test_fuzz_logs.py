"""Event logs as the monitor node writes them over several runs (a clean stop, a crash, a restart saying the
state was lost, a full disk, rollouts) cut at any byte, with lines edited, junk appended or several logs in one
file, through `safety-monitor alerts --log`: one line naming the file, or the view a live console fed the same
records showed, never a traceback (benchmarks/fuzz_inputs.py --logs runs the long campaign)."""

import pytest
from hypothesis import example, given, settings
from test_fuzz_support import (
    FUZZ,
    LOG_LAYOUTS,
    LogEdit,
    LoggedRun,
    cut_outcomes,
    edited_log,
    guarded,
    is_failure,
    log_edits,
    log_outcome,
    write_event_log,
)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz_logs")
    return folder, [write_event_log(folder / f"log_{k}.jsonl", runs).read_bytes() for k, runs in enumerate(LOG_LAYOUTS)]


@settings(FUZZ, max_examples=40)
@given(edit=log_edits())
@example(edit=LogEdit("lines", (0, ((0.5, "field", ("rollout", [])),))))  # was: internal error, unhashable
@example(edit=LogEdit("lines", (1, ((0.3, "field", ("objects", 3)),))))  # was: internal error in the --once view
@example(edit=LogEdit("lines", (2, ((0.8, "field", ("rollout", "{}")),))))  # was: an alert shown open for ever
@example(edit=LogEdit("junk", (0, b"[" * 100_000 + b"\n")))  # was: internal error, RecursionError
@example(edit=LogEdit("concat", ((2, 1.0), (1, 1.0))))  # a torn line, then the next log's first line
def test_an_event_log_cut_edited_or_joined(logs, edit):
    folder, data = logs
    path = folder / "edited.jsonl"
    path.write_bytes(edited_log(data, edit))
    outcome, detail = guarded(lambda: log_outcome(path))
    assert not is_failure(outcome), (outcome, detail, edit)


def test_a_log_cut_at_every_byte_shows_what_was_whole(tmp_path):
    """A short run's log (a violation, an unknown spell, a clean stop) cut at every 41st byte and around each line's
    end, as a kill or a copy taken while it is written leaves it: the whole lines read, the cut one said (the
    campaign cuts each of LOG_LAYOUTS at every byte)."""
    data = write_event_log(tmp_path / "events.jsonl", (LoggedRun(frames=60),)).read_bytes()
    ends = [k for k, byte in enumerate(data) if byte == ord("\n")]
    offsets = sorted({*range(0, len(data) + 1, 41), *(k + d for k in ends for d in (0, 1))})
    outcomes = cut_outcomes(data, tmp_path / "cut.jsonl", offsets)
    assert [o for o in outcomes if is_failure(o)] == []
    assert outcomes[0] == "empty" and outcomes[-1] == "read" and "cut" in outcomes
