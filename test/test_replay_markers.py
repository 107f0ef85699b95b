"""Replay cuts a bag at its episode markers as the live nodes do: each rollout its own trace and result."""

import csv
import json

import pytest
from ray_replay_bags import write_marked_bag
from two_property_specs import SPECS as TWO_PROPERTY_SPECS

from safety_monitor.cli import main
from safety_monitor.enums import IssueKind
from safety_monitor.errors import SourceError
from safety_monitor.frames import PredicateSample
from safety_monitor.io.bag import BagWriter
from safety_monitor.io.messages import rosbags_types
from safety_monitor.pipeline.assemble import StreamMapping
from safety_monitor.pipeline.markers import END, START, EpisodeMarker, decode_marker, marker_msg
from safety_monitor.replay.batch import score_bags
from safety_monitor.replay.names import absolute_mapping
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
        ([START, 20, (START, 5), 20], [20, 20], 5),  # no end: withdrawn from the last trace, the new has them blind
    ],
    ids=["after_an_end", "without_an_end"],
)
def test_a_late_start_marker_s_frames_are_counted_as_its_trace_holds_them(
    tmp_path, layout, frames, blind, from_predicates
):
    """A start marker logged 5 frames after its time: each rollout counts the frames its trace holds (those
    withdrawn from a trace are not counted in it), its timelines, span and unknown frames theirs, and the bag the
    rollouts' frames: each frame once, whether an end marker came before it or not (without one, the late frames
    once counted in both rollouts)."""
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


def _predicates_bag(path, frames, boundary, late, end, a_true=range(0), pause=0.0):
    """A bag of the two-property specs' predicates at 500 Hz, two rollouts: the second from frame `boundary`, its
    start marker logged `late` frames after its time (0: on time), an end marker for the first when `end`; `a`
    true on the frames `a_true`; `pause` seconds without messages before the late marker (a stalled input: log
    times, not stamps). Frames are numbered as the estimator numbers them (from 0 after a start marker it
    received, on after a late one)."""
    topic = absolute_mapping(StreamMapping()).episode
    with BagWriter(path) as w:
        w.write(topic, marker_msg(w.types, EpisodeMarker(START, 0, 100.0)), 100.0)
        number = 0
        for k in range(frames):
            t = 100.0 + k / 500
            log = t + (pause if late and k >= boundary + late else 0.0)
            if k == boundary:
                if end:
                    w.write(topic, marker_msg(w.types, EpisodeMarker(END, 0, t - 1 / 500)), t - 1 / 500)
                if not late:
                    w.write(topic, marker_msg(w.types, EpisodeMarker(START, 1, t)), t)
                    number = 0
            if late and k == boundary + late:
                w.write(topic, marker_msg(w.types, EpisodeMarker(START, 1, 100.0 + boundary / 500)), log)
            sample = PredicateSample({"a": k in a_true, "b": False}, t, number)
            w.write_predicates("/safety_monitor/predicates", sample, log_t=log)
            number += 1
    return path


@pytest.mark.parametrize("end", [False, True], ids=["without_an_end", "after_an_end"])
def test_a_violation_on_late_frames_is_in_the_report_once_where_its_frames_are(tmp_path, end):
    """`a` holds from the second rollout's third frame for 20 frames; its start marker comes 5 frames late. The
    violation is counted once (in the second rollout, from its first frame past the 5 blind ones, as the
    on-time bag's is from its third), and every output agrees: each rollout's events are at frames its trace
    holds and give the episodes its outcomes count, in report.json, episodes.csv and summary.md alike. Before,
    without an end marker, both rollouts counted it (N 2, V 2), and after one, the second listed the episode
    its metrics did not count."""
    specs = tmp_path / "specs.yaml"
    specs.write_text(TWO_PROPERTY_SPECS)
    a_true = range(42, 62)
    late = _predicates_bag(tmp_path / "late", 80, 40, 5, end, a_true)
    report = tmp_path / "report"
    argv = ["replay", str(late), "--from-predicates", "--specs", str(specs), "--rate", "500", "--quiet"]
    assert main([*argv, "--no-plots", "--resamples", "20", "--report", str(report)]) == 0
    doc = json.loads((report / "report.json").read_text())
    first, second = doc["bags"]
    assert (first["frames"], second["frames"]) == (40, 40)
    for rollout in doc["bags"]:
        assert all(e["frame"] < rollout["frames"] for e in rollout["events"])
        counted = sum(o["violations"] + o["discarded"] for o in rollout["outcomes"])
        assert len(rollout["episodes"]) == counted == sum(e["kind"] == "opened" for e in rollout["events"])
    ((episode,),) = [r["episodes"] for r in doc["bags"] if r["episodes"]]
    assert (episode["property"], episode["opened_frame"], episode["end_kind"]) == ("never_a", 5, "recovered")
    never_a = next(m for m in doc["metrics"]["by_property"] if m["name"] == "never_a")
    assert (never_a["triggers"], never_a["violations"], never_a["violating_frames"]) == (1, 1, 17)
    rows = list(csv.DictReader((report / "episodes.csv").open()))
    assert [(r["bag"], r["property"]) for r in rows] == [(f"{late}#1", "never_a")]
    assert "## Violations (1)" in (report / "summary.md").read_text()
    assert any("with the 1 violation episode(s) they opened" in i["detail"] for i in second["issue_examples"])


@pytest.mark.parametrize(
    ("end", "hold", "frames", "blind"),
    [
        (False, None, [4500, 4500], 3000),  # 3000 late frames, flushed across batches of 4096 messages
        (True, None, [4500, 4500], 3000),
        # only the last 600 frames kept, and a checkpoint every 500: the last 500 withdrawn, 500 stay in the first
        (False, 600, [5000, 4000], 500),
        # only the last 600 kept of the 1000 frames after the end marker: that trace is cut at its first checkpoint
        # among them (its frame 500), its first 500 frames a rollout of their own (they were in none before)
        (True, 600, [4500, 500, 4000], 500),
    ],
    ids=["without_an_end", "after_an_end", "without_an_end_held_600", "after_an_end_held_600"],
)
def test_a_long_late_marker_counts_each_frame_once_in_the_parts(tmp_path, monkeypatch, end, hold, frames, blind):
    """A start marker 1000 or 3000 frames late, in a bag read in batches: each rollout's frames, timeline and
    unknown frames are the frames its trace holds, and the bag's are theirs; with fewer frames kept than came
    late, the Supervisor withdraws what it can and says so."""
    if hold is not None:
        from safety_monitor.pipeline import supervisor
        from safety_monitor.replay import score

        monkeypatch.setattr(supervisor, "LATE_HOLD_FRAMES", hold)
        monkeypatch.setattr(score, "LATE_HOLD_FRAMES", hold)
    specs = tmp_path / "specs.yaml"
    specs.write_text(TWO_PROPERTY_SPECS)
    bag = _predicates_bag(tmp_path / "bag", 9000, 4500, 3000 if hold is None else 1000, end)
    whole = score_bag(bag, ReplayConfig(specs=str(specs), from_predicates=True, rate_hz=500.0))
    assert whole.ok, whole.error
    parts = whole.split()
    assert [p.frames for p in parts] == [p.trace.frames for p in parts] == [p.timeline.frames for p in parts] == frames
    assert whole.frames == whole.trace.frames == sum(frames) == 9000
    assert parts[-1].unknown_frames == blind == parts[-1].trace.outcome("never_a").blind_frames
    assert all(p.unknown_frames == 0 for p in parts[:-1])
    (issue,) = [i for p in parts for i in p.issue_examples if i.kind is IssueKind.LATE_MARKER]
    assert (f"only the last {blind}" in issue.detail) == (hold is not None)


@pytest.mark.parametrize("end", [False, True], ids=["without_an_end", "after_an_end"])
def test_a_late_start_marker_after_a_pause_withdraws_the_watchdog_s_blind_frame_too(tmp_path, end):
    """The start marker comes after a second without messages: on its arrival the watchdog steps the pause's
    blind frame first, in the trace the marker then withdraws frames from (that frame with them). Replay
    once failed such a bag (an assertion: it took back only the frames stepped before the marker's step)."""
    specs = tmp_path / "specs.yaml"
    specs.write_text(TWO_PROPERTY_SPECS)
    bag = _predicates_bag(tmp_path / "bag", 80, 40, 5, end, pause=1.0)
    whole = score_bag(bag, ReplayConfig(specs=str(specs), from_predicates=True, rate_hz=500.0))
    assert whole.ok, whole.error
    parts = whole.split()
    # the second: its 5 frames and the pause's blind one, blind, then its 35 frames
    assert [p.frames for p in parts] == [p.trace.frames for p in parts] == [p.timeline.frames for p in parts]
    assert [p.frames for p in parts] == [40, 41] and whole.frames == 81
    assert parts[1].unknown_frames == 6 and whole.issues[IssueKind.PREDICATES_GAP] == 1
