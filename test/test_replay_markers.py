"""Replay cuts a bag at its episode markers as the live nodes do: each rollout its own trace and result."""

import json

import pytest
from ray_replay_bags import write_marked_bag

from safety_monitor.cli import main
from safety_monitor.enums import IssueKind
from safety_monitor.errors import SourceError
from safety_monitor.io.messages import rosbags_types
from safety_monitor.pipeline.assemble import StreamMapping
from safety_monitor.pipeline.markers import END, START, EpisodeMarker, decode_marker, marker_msg
from safety_monitor.replay.batch import score_bags
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.replay.simbag import SimRun, record_sim_bag

RUNS = (SimRun(fault="slip", seed=0), SimRun(task="pick_and_place_cube", seed=1))


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    """One bag of both runs back to back (markers between them, as a live recording), and one bag per run."""
    root = tmp_path_factory.mktemp("markers")
    both = record_sim_bag(root / "both", RUNS, estimate=True)
    alone = [record_sim_bag(root / f"alone_{k}", [run], estimate=True) for k, run in enumerate(RUNS)]
    return both, alone


def _events(result):
    """The events as a rollout's own: its frame numbers and kinds (times differ: the runs' clocks are offset)."""
    return [(e.kind, e.property, e.frame, e.duration) for e in result.trace.events]


@pytest.mark.parametrize("from_predicates", [False, True], ids=["robot_state", "predicates"])
def test_a_bag_of_two_rollouts_scores_as_the_two_one_rollout_bags(bags, from_predicates):
    both, alone = bags
    config = ReplayConfig(from_predicates=from_predicates)
    parts = score_bags([both], config, progress=False)
    singles = score_bags(alone, config, progress=False)
    assert [p.bag for p in parts] == [f"{both}#0", f"{both}#1"]
    assert [s.bag for s in singles] == [str(b) for b in alone]  # one rollout: named as the bag
    for part, single in zip(parts, singles, strict=True):
        assert part.ok and single.ok, (part.error, single.error)
        assert _events(part) == _events(single)
        assert part.trace.outcomes == single.trace.outcomes
        assert (part.frames, part.issues, part.unknown_frames) == (single.frames, single.issues, single.unknown_frames)
        assert part.timeline.runs == single.timeline.runs
    assert IssueKind.JOINT_JUMP not in parts[1].issues  # the arm's move home between runs is no jump


def test_the_whole_bag_counts_every_rollout(bags):
    both, _ = bags
    whole = score_bag(both, ReplayConfig())
    assert whole.rollouts == 2
    assert whole.frames == sum(p.frames for p in whole.parts)


def test_without_markers_the_bag_is_one_trace_as_before(bags):
    """The same bag with its marker topic not read (a recording without markers): one result named as the bag,
    whose runs join in one trace, so the move home between them is a joint jump."""
    both, _ = bags
    (result,) = score_bags([both], ReplayConfig(mapping=StreamMapping(episode="/no_markers")), progress=False)
    assert result.ok and result.bag == str(both) and not result.parts
    assert result.rollouts == 1
    assert result.issues.get(IssueKind.JOINT_JUMP)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_report_counts_a_cut_bag_once_and_its_rollouts_apart(bags, tmp_path, capsys, jobs):
    """Each rollout carries its own frames and span; the bag's messages, topics and timings are given once (in
    `split_bags`), so summing over the report's rows counts no message twice; the closing line counts bags and
    rollouts apart, with worker processes too."""
    both, alone = bags
    report = tmp_path / "report"
    argv = ["replay", str(both), str(alone[0]), "--from-predicates", "--report", str(report), "--quiet"]
    assert main([*argv, "--no-plots", "--resamples", "20", "--jobs", jobs]) == 0
    assert capsys.readouterr().out.endswith("2 of 2 bag(s) scored, 3 rollouts\n")
    doc = json.loads((report / "report.json").read_text())
    assert (doc["bags_total"], doc["bags_scored"], doc["rollouts_scored"]) == (2, 2, 3)
    parts = [b for b in doc["bags"] if b.get("rollout_of") == str(both)]
    (whole,) = doc["split_bags"]
    assert [p["rollout"] for p in parts] == [0, 1]
    assert all(p["messages"] is p["topics"] is p["timings_s"] is None for p in parts)
    assert whole["bag"] == str(both) and whole["frames"] == sum(p["frames"] for p in parts)
    assert whole["messages"] == sum(t["count"] for t in whole["topics"].values())
    assert parts[0]["t_end"] < parts[1]["t_start"]  # each its own span
    single = doc["bags"][-1]
    assert "rollout_of" not in single and single["messages"] and single["timings_s"]  # as without markers
    summary = (report / "summary.md").read_text()
    assert "2 bag(s): 2 scored (3 rollouts: episode markers cut 1 of them), 0 failed" in summary
    assert "3 rollout(s). Intervals: bootstrap over rollouts" in summary
    # a rollout's episodes are timed from its own first frame, as its timeline is: the heading says whose
    assert "| opened (s since the rollout's first frame) |" in summary and "the bag's first frame" not in summary


def test_a_report_of_bags_no_marker_cut_times_episodes_from_the_bag_s_first_frame(bags, tmp_path):
    _, alone = bags
    report = tmp_path / "report"
    argv = ["replay", str(alone[0]), "--from-predicates", "--report", str(report), "--quiet", "--no-plots"]
    assert main([*argv, "--resamples", "20"]) == 0
    summary = (report / "summary.md").read_text()
    assert "| opened (s since the bag's first frame) |" in summary and "rollout's first frame" not in summary


@pytest.mark.parametrize("from_predicates", [False, True], ids=["robot_state", "predicates"])
@pytest.mark.parametrize(
    ("layout", "frames"),
    [
        ([START, 30, START], [30]),  # a start marker the bag ends on: no rollout of no frames
        ([START, 30, START, START, 20], [30, 20]),  # two starts back to back: the later one names the rollout
        ([START, 30, END, START], [30]),
    ],
    ids=["start_at_the_end", "starts_back_to_back", "end_then_start_at_the_end"],
)
def test_markers_with_no_frame_after_them_make_no_rollout(tmp_path, layout, frames, from_predicates):
    bag = write_marked_bag(tmp_path / "bag", layout)
    whole = score_bag(bag, ReplayConfig(from_predicates=from_predicates, rate_hz=500.0))
    assert whole.ok, whole.error
    parts = whole.split()
    assert [p.frames for p in parts] == [p.trace.frames for p in parts] == frames
    assert [p.bag for p in parts] == ([str(bag)] if len(frames) == 1 else [f"{bag}#{k}" for k in range(len(frames))])
    assert whole.frames == sum(frames)


@pytest.mark.parametrize("from_predicates", [False, True], ids=["robot_state", "predicates"])
@pytest.mark.parametrize(
    ("layout", "frames", "blind"),
    [
        ([START, 20, END, (START, 5), 20], [20, 20], 5),  # its first 5 frames withdrawn from its trace, blind
        ([START, 20, (START, 5), 20], [25, 20], 5),  # no end: the last trace ends with them, the new has them blind
    ],
    ids=["after_an_end", "without_an_end"],
)
def test_a_late_start_marker_s_frames_are_counted_as_its_trace_holds_them(
    tmp_path, layout, frames, blind, from_predicates
):
    """A start marker logged 5 frames after its time: each rollout counts the frames its trace stepped (those
    withdrawn from a trace are not counted in it), its timelines, span and unknown frames theirs, and the bag the
    rollouts' frames."""
    bag = write_marked_bag(tmp_path / "bag", layout)
    whole = score_bag(bag, ReplayConfig(from_predicates=from_predicates, rate_hz=500.0))
    assert whole.ok, whole.error
    parts = whole.split()
    assert [p.frames for p in parts] == [p.trace.frames for p in parts] == frames
    assert [p.timeline.frames for p in parts] == [p.stale_timeline.frames for p in parts] == frames
    assert whole.frames == whole.trace.frames == sum(frames)
    first, second = parts
    assert second.t_start == pytest.approx(100.0 + 20 / 500.0) and second.t_end == pytest.approx(100.0 + 39 / 500.0)
    assert first.t_end == pytest.approx(100.0 + (frames[0] - 1) / 500.0)
    assert second.unknown_frames >= blind and whole.issues[IssueKind.LATE_MARKER] >= 1
    assert all(
        runs[0][0] == 0 and runs[0][1] >= blind - 1 and runs[0][2] is None for runs in second.timeline.runs.values()
    )


@pytest.mark.parametrize(
    ("key", "text"),
    [("index", '"x"'), ("t", '"soon"'), ("t", "NaN"), ("t", "1" * 400), ("seed", "1.5"), ("succeeded", "0")]
    + [("frames", "[]"), ("task", "3"), ("extra", "1"), ("index", "[" * 5000), ("seed", "9" * 5000), ("index", None)],
)
def test_a_marker_value_of_the_wrong_type_is_malformed(key, text):
    """decode_marker once took any JSON value: an index "x" or a time "soon" crashed the Supervisor (a TypeError
    out of replay, or out of a live node's callback) instead of the marker being dropped with a message."""
    types = rosbags_types()
    msg = marker_msg(types, EpisodeMarker(START, 0, 100.0))
    kept = [v for v in msg.status[0].values if v.key != key]
    msg.status[0].values = kept + ([types.KeyValue(key=key, value=text)] if text is not None else [])
    with pytest.raises(SourceError, match="^episode marker: "):
        decode_marker(msg)
