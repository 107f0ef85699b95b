"""Replay on short synthetic workcell bags: mapping, bad stamps, stale streams, broken bags in a batch."""

import gc
import json
import shutil
import sqlite3
from collections import Counter

import numpy as np
import pytest
import yaml
from kernel_refusals import count_kernels
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from safety_monitor.cli import main
from safety_monitor.frames import Pose, Wrench
from safety_monitor.io.bag import BagWriter
from safety_monitor.pipeline.assemble import StreamMapping
from safety_monitor.replay import score
from safety_monitor.replay.batch import score_bags
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.sim.runner import run_episode

SPECS = """
predicates: [excess_wrench, object_grasped, object_sync, object_grasped_raw]
properties:
  - name: no_excess_wrench
    category: collision_contact
    formula: "G(!excess_wrench)"
    recovery: "F(!excess_wrench)"
  - name: grasp_synced_until_release
    category: grasp_stability
    formula: "G(object_grasped -> ((object_sync U !object_grasped_raw) | G object_sync))"
    recovery: "G((object_grasped & !object_sync) -> F(object_sync))"
"""
RATE = 500.0
N = 150


@pytest.fixture(scope="module")
def state():
    return next(run_episode("pick_and_place_cube"))


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    path = tmp_path_factory.mktemp("specs") / "specs.yaml"
    path.write_text(SPECS)
    return str(path)


def write_bag(
    path,
    state,
    *,
    storage="mcap",
    joints_topic="/joint_states",
    rename=None,
    edit=None,
    wrench_until=N,
    typestore=None,
    extra=None,
):
    """A stationary workcell at 500 Hz. `edit(k, t) -> (t, names, position) | None` alters frame k
    (None: the joint message is not written)."""
    names = [rename.get(n, n) for n in state.joint_names] if rename else list(state.joint_names)
    with BagWriter(path, storage=storage, typestore=typestore) as w:
        for k in range(N):
            t = 100.0 + k / RATE
            if k < wrench_until:
                w.write_wrench("/wrist_wrench", t, state.wrench)
            for name, pose in state.object_poses.items():
                w.write_pose(f"/objects/{name}/pose", t, pose)
            if extra:
                extra(w, t)
            message = (t, names, state.joint_position)
            if edit:
                message = edit(k, t, names, state.joint_position)
            if message is not None:
                w.write_joint_state(joints_topic, message[0], message[1], message[2], log_t=t)
    return path


def config(specs, **kw):
    return ReplayConfig(specs=specs, rate_hz=RATE, **kw)


def test_clean_bag_scores_every_frame_without_issues(tmp_path, state, specs):
    r = score_bag(write_bag(tmp_path / "clean", state), config(specs))
    assert r.ok, r.error
    assert r.frames == N and r.trace.frames == N
    assert r.issues == {} and r.stale_frames == 0 and r.warnings == []
    assert [o.violations for o in r.trace.outcomes] == [0, 0]
    assert r.duration == pytest.approx((N - 1) / RATE)
    assert set(r.timings) == {"read", "deserialise", "assemble", "ground", "monitor"}


def test_replay_hands_the_grounders_c_kernels_what_they_take(tmp_path, state, specs, monkeypatch):
    """The frames replay builds from a bag's batches are never refused by a C kernel (`kernel_refusals`):
    batch-read poses once had strided quaternions, refused for every object on every frame."""
    calls, refused = count_kernels(monkeypatch)
    r = score_bag(write_bag(tmp_path / "clean", state), config(specs))
    assert r.ok and r.frames == N, r.error
    # a frame's readings in one call, the general path (usable_poses) on the first frame alone; the wrench
    assert calls["frame_readings"] >= N and calls["usable_poses"] <= 1 and calls["norm3"] >= N
    assert refused == Counter()


def test_objects_frozen_while_a_bag_is_scored_are_handed_back_to_the_collector(tmp_path, state, specs, monkeypatch):
    frozen = gc.get_freeze_count()  # (0, unless the process froze objects itself: then they are left alone)
    while_scored = []
    monkeypatch.setattr(score, "_score_states", lambda *args: while_scored.append(gc.get_freeze_count()))
    score_bag(write_bag(tmp_path / "b", state), config(specs))
    assert while_scored == [frozen] if frozen else while_scored[0] > 0
    assert gc.get_freeze_count() == frozen


def test_a_bag_scored_after_another_scores_as_in_a_fresh_process(tmp_path, state, specs):
    """One grounder serves a process's bags (built once per robot and rate, `Grounder.restart` between them):
    a bag scored after one whose arm moved and whose wrench went stale gives what it gives scored first."""

    def moving(k, t, names, position):
        return t, names, position + 0.002 * k

    def outcome(r):
        assert r.ok, r.error
        return (r.frames, r.issues, r.stale_by_stream, r.not_applicable, r.trace.events, r.trace.outcomes)

    clean, other = (
        write_bag(tmp_path / "clean", state),
        write_bag(tmp_path / "other", state, edit=moving, wrench_until=40),
    )
    score._kept_grounder.cache_clear()
    first = outcome(score_bag(clean, config(specs)))
    assert outcome(score_bag(other, config(specs))) != first
    assert outcome(score_bag(clean, config(specs))) == first
    assert score._kept_grounder.cache_info().hits == 2  # the same grounder, restarted, scored all three


def test_rate_is_measured_from_stamps_when_not_given(tmp_path, state, specs):
    r = score_bag(write_bag(tmp_path / "b", state), ReplayConfig(specs=specs))
    assert r.rate_hz == RATE


def test_rate_is_measured_from_sorted_stamps_and_zero_stamps_ask_for_the_rate(tmp_path, state, specs):
    """A bag logged in arrival order holds stamps slightly out of order (here each pair swapped): the steps
    between neighbours would read 167 Hz. All-zero stamps cannot give a rate: the error says so and names
    --rate (with it, the bag scores on arrival times)."""

    def swap(k, t, names, position):
        return (t + (1 if k % 2 == 0 else -1) / RATE if k < N - 1 else t, names, position)

    assert score_bag(write_bag(tmp_path / "swapped", state, edit=swap), ReplayConfig(specs=specs)).rate_hz == RATE
    zero = write_bag(tmp_path / "zero", state, edit=lambda k, t, names, position: (0.0, names, position))
    r = score_bag(zero, ReplayConfig(specs=specs))
    assert r.error == (
        f"{zero}: /joint_states: cannot measure the control rate: every stamp is zero in the first "
        "150 messages; give it with --rate HZ"
    )
    assert score_bag(zero, config(specs)).ok


def _truncate_first_after(bag, topic: str, stamp_ns: int, keep: int) -> None:
    """Cut the first message of `topic` the sqlite3 bag recorded after `stamp_ns` to its first `keep` bytes."""
    with sqlite3.connect(next(bag.glob("*.db3"))) as con:
        (topic_id,) = con.execute("SELECT id FROM topics WHERE name = ?", (topic,)).fetchone()
        con.execute(
            "UPDATE messages SET data = substr(data, 1, ?) WHERE id = (SELECT min(id) FROM messages "
            "WHERE topic_id = ? AND timestamp > ?)",
            (keep, topic_id, stamp_ns),
        )


def test_an_undecodable_message_is_dropped_and_counted_not_fatal(tmp_path, state, specs):
    bag = write_bag(tmp_path / "db3", state, storage="sqlite3")
    _truncate_first_after(bag, "/wrist_wrench", 100_200_000_000, 20)
    r = score_bag(bag, config(specs))
    assert r.ok, r.error
    assert r.frames == N and r.issues == {"undecodable": 1}
    assert r.issue_examples[0].stream == "wrench" and "message dropped" in r.issue_examples[0].detail


def test_corrupt_and_nan_poses_read_a_batch_at_a_time_are_dropped_with_one_line_issues(tmp_path, state, specs):
    """Poses are decoded a batch at a time (`cdr.PoseBatchReader`): a truncated message among them still goes to
    the one decoder (an undecodable issue), a NaN pose still to the assembler's check (a nan issue); each is
    dropped, the frames go on."""
    cube = state.object_poses["cube"]
    nan_pose = Pose(np.array([np.nan, 0.0, 0.0]), cube.quaternion)

    def nan_once(w, t):
        if abs(t - 100.1) < 1e-9:
            w.write_pose("/objects/cube/pose", t + 1e-4, nan_pose)

    bag = write_bag(tmp_path / "db3", state, storage="sqlite3", extra=nan_once)
    _truncate_first_after(bag, "/objects/cube/pose", 100_200_000_000, 30)
    r = score_bag(bag, config(specs))
    assert r.ok, r.error
    assert r.frames == N and r.issues == {"undecodable": 1, "nan": 1}
    by_kind = {i.kind: i for i in r.issue_examples}
    for issue in by_kind.values():
        assert issue.stream == "object_pose/cube" and "\n" not in issue.detail and "message dropped" in issue.detail
    assert by_kind["undecodable"].detail.startswith("undecodable geometry_msgs/msg/PoseStamped")


def test_missing_joint_topic_lists_what_was_found_and_suggests_the_mapping(tmp_path, state, specs):
    # not ending in /joint_states: one that did would be taken, with a note, by the relative default's suffix rule
    bag = write_bag(tmp_path / "renamed", state, joints_topic="/arm/positions")
    r = score_bag(bag, config(specs))
    assert not r.ok and r.trace is None
    assert "no joint states on /joint_states" in r.error
    assert "/arm/positions (sensor_msgs/msg/JointState, 150)" in r.error
    assert "--topics joint_states=/arm/positions" in r.error
    mapped = score_bag(bag, config(specs, mapping=StreamMapping(joint_states="/arm/positions")))
    assert mapped.ok and mapped.frames == N


def test_joint_names_of_the_source_are_mapped_to_the_robot(tmp_path, state, specs):
    rename = {n: f"ur_{n}" for n in state.joint_names}
    bag = write_bag(tmp_path / "names", state, rename=rename)
    unmapped = score_bag(bag, config(specs))
    assert not unmapped.ok and "no frames could be built" in unmapped.error
    assert "unknown_joints" in unmapped.error or "missing_joints" in unmapped.error
    mapped = score_bag(bag, config(specs, mapping=StreamMapping(joint_names={v: k for k, v in rename.items()})))
    assert mapped.ok and mapped.frames == N and mapped.issues == {}


def test_bad_stamps_empty_names_and_nan_are_counted_and_dropped_not_fatal(tmp_path, state, specs):
    def edit(k, t, names, pos):
        if k == 20:
            return t - 1 / RATE, names, pos  # repeats frame 19's stamp
        if k == 30:
            return t - 5 / RATE, names, pos  # goes backwards
        if k == 40:
            return t, [], pos
        if k == 50:
            return t, names, np.where(np.arange(len(pos)) == 2, np.nan, pos)
        if 60 <= k < 120:
            return None  # the joint stream stops for 120 ms while the others go on
        return t, names, pos

    r = score_bag(write_bag(tmp_path / "stamps", state, edit=edit), config(specs))
    assert r.ok, r.error
    assert r.issues == {
        "duplicate_stamp": 1,
        "backwards": 1,
        "empty_names": 1,
        "nan": 1,
        "stream_stopped": 1,
        "stream_resumed": 1,  # not a time jump: the log times paused with the stamps
    }
    assert r.frames == N - 4 - 60  # the first message after the gap makes its frame, stale
    assert r.stale_by_stream == {"joint_states": 1}  # the frame after the gap (one stamp behind is a glitch)


PAUSE_S = 17.255


def write_paused_bag(path, state, *, clock_step, still=False):
    """N frames at 500 Hz whose stamps move on PAUSE_S s at frame 75. Logged as they were stamped, the joint
    publisher was stopped that long (the wrench and poses go on at 10 Hz); with `clock_step` the robot's clock
    stepped instead: every stream's stamps jump while the log times (the arrivals) run on a frame apart. `still`:
    the joint values repeat bit for bit (an arm at rest, held by exact-repeating drivers)."""
    noise = iter(range(10**6))  # a live sensor's and driver's: never bit-identical (never frozen)
    with BagWriter(path) as w:

        def frame_streams(stamp, log_t):
            noisy = Wrench(state.wrench.force + 1e-6 * next(noise), state.wrench.torque)
            w.write_wrench("/wrist_wrench", stamp, noisy, log_t=log_t)
            for name, pose in state.object_poses.items():
                w.write_pose(f"/objects/{name}/pose", stamp, pose, log_t=log_t)

        for k in range(N):
            t = 100.0 + k / RATE
            stamp = t + (PAUSE_S if k >= 75 else 0.0)
            log_t = t if clock_step else stamp
            if k == 75 and not clock_step:
                for j in range(1, int(PAUSE_S * 10) + 1):  # the other streams through the pause
                    frame_streams(t - 1 / RATE + j / 10, t - 1 / RATE + j / 10)
            frame_streams(stamp, log_t)
            position = state.joint_position + (0.0 if still else 1e-9 * k)
            w.write_joint_state("/joint_states", stamp, list(state.joint_names), position, log_t=log_t)
    return path


def test_a_joint_stream_paused_and_resumed_is_reported_resumed_not_a_clock_jump(tmp_path, state, specs):
    r = score_bag(write_paused_bag(tmp_path / "paused", state, clock_step=False), config(specs))
    assert r.ok, r.error
    assert r.issues == {"stream_stopped": 1, "stream_resumed": 1, "predicates_gap": 1}  # the watchdog blind frame
    resumed = next(i for i in r.issue_examples if i.kind == "stream_resumed")
    assert resumed.detail.startswith(f"silent for {PAUSE_S + 1 / RATE:.3f} s (stamps and arrival times alike)")
    assert r.frames == N + 1  # the first message after the pause makes its frame, stale; and the blind one
    assert r.stale_by_stream == {"joint_states": 1}


@pytest.mark.parametrize("clock_step", [False, True])
def test_joint_values_alike_either_side_of_a_pause_or_clock_step_are_not_frozen(tmp_path, state, specs, clock_step):
    """0.15 s of one joint reading, 17 s of silence (or a clock step), 0.15 s more of it: under the 2 s
    frozen limit in repeats received, so only the frame after the gap is stale, as in the core."""
    r = score_bag(write_paused_bag(tmp_path / "still", state, clock_step=clock_step, still=True), config(specs))
    assert r.ok, r.error
    assert "frozen" not in r.issues and r.stale_by_stream == {"joint_states": 1}


def test_stamps_stepping_ahead_while_the_log_times_run_on_are_a_time_jump_not_a_stopped_stream(tmp_path, state, specs):
    """The wrench's and poses' stepped stamps are logged before the joints' stepped message: the joint messages
    went on arriving a frame apart, so the joint stream did not stop (no stream_stopped), the clock stepped."""
    r = score_bag(write_paused_bag(tmp_path / "stepped", state, clock_step=True), config(specs))
    assert r.ok, r.error
    assert r.issues == {"time_jump": 1}
    assert r.frames == N - 1  # the message at the step held back, then dropped
    assert r.stale_by_stream == {"joint_states": 1}


def test_a_recording_whose_input_restarted_spans_every_frame_it_scored(tmp_path, state, specs):
    """A simulator restarted while recorded: every stream's stamps go back 50 s at frame 75 (a new rollout). The
    bag's time range held its first and last frame, t_end 50 s before t_start: a negative duration in report.json
    and the plots' time axis (found by fuzzing: test_fuzz_robots.py's arm topics restarted)."""
    path = tmp_path / "restarted"
    with BagWriter(path) as w:
        for k in range(N):
            log_t = 100.0 + k / RATE
            t = log_t - (50.0 if k >= 75 else 0.0)
            w.write_wrench("/wrist_wrench", t, state.wrench, log_t=log_t)
            for name, pose in state.object_poses.items():
                w.write_pose(f"/objects/{name}/pose", t, pose, log_t=log_t)
            w.write_joint_state("/joint_states", t, list(state.joint_names), state.joint_position, log_t=log_t)
    r = score_bag(path, config(specs))
    assert r.ok and r.rollouts == 2 and r.issues.get("input_restarted"), (r.error, r.issues)
    assert (r.t_start, r.t_end) == (50.0 + 75 / RATE, 100.0 + 74 / RATE) and r.duration > 0


def test_frozen_wrench_stream_is_reported_stale_and_blind(tmp_path, state, specs):
    r = score_bag(write_bag(tmp_path / "frozen", state, wrench_until=50), config(specs))
    assert r.ok
    limit_frames = 0.1 * RATE  # thresholds.yaml max_age_s.wrench
    assert r.stale_by_stream == {"wrench": N - 50 - limit_frames}
    wrench = r.trace.outcome("no_excess_wrench")
    assert wrench.blind_frames == N - 50 - limit_frames and wrench.violations == 0
    assert r.trace.outcome("grasp_synced_until_release").blind_frames == 0


def test_types_without_definitions_are_skipped_with_a_warning(tmp_path, state, specs):
    store = get_typestore(Stores.ROS2_KILTED)
    store.register(get_types_from_msg("int32 x", "vendor_msgs/msg/Status"))
    bag = write_bag(
        tmp_path / "vendor",
        state,
        storage="sqlite3",
        typestore=store,
        extra=lambda w, t: w.write("/vendor/status", store.types["vendor_msgs/msg/Status"](x=1), t),
    )
    db = sqlite3.connect(bag / "vendor.db3")
    db.execute("DELETE FROM message_definitions WHERE topic_type = 'vendor_msgs/msg/Status'")
    db.commit()
    db.close()
    r = score_bag(bag, config(specs))
    assert r.ok and r.frames == N
    assert r.warnings == [
        "topic(s) /vendor/status skipped: type vendor_msgs/msg/Status has no definition in the "
        "bag or in the default typestore; record the bag with its message definitions"
    ]


def test_a_broken_bag_never_stops_the_batch_and_sets_the_exit_code(tmp_path, state, specs, capsys):
    good = write_bag(tmp_path / "runs" / "good", state)
    bad = write_bag(tmp_path / "runs" / "truncated", state)
    data = next(bad.glob("*.mcap"))
    data.write_bytes(data.read_bytes()[:2000])
    results = score_bags([bad, good], config(specs), progress=False)
    assert [r.ok for r in results] == [False, True]
    assert "truncated" in results[0].error

    report = tmp_path / "report"
    code = main(
        [
            "replay",
            str(tmp_path / "runs"),
            "--specs",
            specs,
            "--rate",
            "500",
            "--report",
            str(report),
            "--quiet",
            "--no-plots",
            "--resamples",
            "200",
        ]
    )
    assert code == 1
    assert "1 of 2 bag(s) scored, 1 failed" in capsys.readouterr().out
    doc = json.loads((report / "report.json").read_text())
    assert [f["bag"] for f in doc["bags_failed"]] == [str(bad)]
    assert "## Failed bags" in (report / "summary.md").read_text()


def test_bad_arguments_are_one_line_errors(tmp_path, state, specs, capsys):
    assert main(["replay", str(tmp_path / "nothing-here")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    bag = write_bag(tmp_path / "b", state)
    assert main(["replay", str(bag), "--group-by", "(", "--quiet"]) == 2
    assert "not a regular expression" in capsys.readouterr().err


def test_wrench_topic_absent_is_a_warning_and_stale(tmp_path, state, specs):
    r = score_bag(write_bag(tmp_path / "nowrench", state, wrench_until=0), config(specs))
    assert r.ok
    assert r.warnings == ["no wrench topic /wrist_wrench: the wrench stream is stale throughout"]
    assert r.stale_by_stream == {"wrench": N}
    assert r.trace.outcome("no_excess_wrench").blind_frames == N


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_recorded_predicates_with_bad_stamps_gaps_and_missing_keys_score_alike_in_any_batch_size(
    tmp_path, specs, storage, monkeypatch
):
    from safety_monitor.io import messages as m
    from safety_monitor.replay import score

    path = tmp_path / "bag"
    keys = ("excess_wrench", "object_grasped", "object_sync", "object_grasped_raw")
    with BagWriter(path, storage=storage) as w:
        for k in range(60):
            t = 1.0 + k / RATE
            values = {p: (k // 9 + i) % 3 == 0 for i, p in enumerate(keys)}
            if 40 <= k < 45:
                values.pop("object_sync")  # an external estimator that did not send it
            frame = k + 2 if k >= 30 else k  # the recording lost two frames
            stamp = 1.0 if k == 20 else t - 3 / RATE if k == 25 else t  # one backwards, one far back
            unknown = frozenset({"object_grasped"}) if k % 11 == 0 else frozenset()
            w.write_predicates(
                "/safety_monitor/predicates",
                m.PredicateSample(values, stamp, frame, unknown, frozenset({"wrench"}) if k > 50 else frozenset()),
                log_t=t,
            )
            if k == 10:  # the same frame recorded twice
                w.write_predicates("/safety_monitor/predicates", m.PredicateSample(values, t, k), log_t=t)

    def scored():
        r = score_bag(path, config(specs, from_predicates=True))
        assert r.ok, r.error
        return (
            r.frames,
            r.issues,
            r.issue_examples,
            r.warnings,
            r.unknown_frames,
            r.stale_frames,
            r.stale_by_stream,
            [e.to_json() for e in r.trace.events],
            r.trace.outcomes,
            r.timeline.to_json(),
            r.stale_timeline.to_json(),
        )

    whole = scored()
    # 61 messages - 3 dropped + one blind frame each time the stamps went backwards (as the monitor node steps)
    assert whole[0] == 60 and whole[1] == {"duplicate_stamp": 1, "backwards": 2, "frame_gap": 3}
    assert whole[3] == ["predicates never sent, treated as unknown: object_sync"]
    # unknown: k = 0, 11, ..., 55 (k=44 also unsent) and the two blind frames; stale: k > 50
    assert whole[4] == 6 + 5 - 1 + 2 and whole[5] == 9
    monkeypatch.setattr(score, "BATCH", 4)
    assert scored() == whole


@pytest.mark.parametrize("batch", [4, 4096])
def test_recorded_predicates_that_pause_freeze_or_stop_make_the_monitor_blind_as_live(
    tmp_path, specs, batch, monkeypatch
):
    """The live monitor's watchdog and frozen rule, by the recording's log times: no advancing frame for
    0.5 s (a pause in the stream; a frozen stamp, named so as the live monitor names it) or a stream that
    ends before the recording steps one blind frame, so the stretch reads 'not seen', never 'safe'."""
    from safety_monitor.io import messages as m
    from safety_monitor.replay import score

    monkeypatch.setattr(score, "BATCH", batch)
    path = tmp_path / "bag"
    values = dict.fromkeys(("excess_wrench", "object_grasped", "object_sync", "object_grasped_raw"), False)
    with BagWriter(path) as w:

        def frame(k, t, stamp=None):
            w.write_predicates("/safety_monitor/predicates", m.PredicateSample(values, stamp or t, k), log_t=t)

        for k in range(100):
            frame(k, 1.0 + k / RATE)
        for k in range(100, 200):  # after a pause of 1 s
            frame(k, 2.0 + k / RATE)
        for k in range(200, 600):  # the stamp frozen for 0.8 s while messages keep coming
            frame(k, 2.0 + k / RATE, stamp=2.0 + 199 / RATE)
        for k in range(600, 700):
            frame(k, 2.0 + k / RATE)
        w.write_joint_state("/joint_states", 5.0, ["arm_joint1"], [0.0], log_t=5.0)  # the recording goes on
    r = score_bag(path, config(specs, from_predicates=True))
    assert r.ok, r.error
    assert r.issues == {"predicates_gap": 1, "frozen": 1, "duplicate_stamp": 400, "frame_gap": 1, "stream_stopped": 1}
    assert r.frames == 300 + 3  # the stepped frames and three blind ones
    assert r.trace.outcome("no_excess_wrench").blind_frames == 3
    # a completion of the first blind frame with object_grasped and not object_sync violates, and its
    # recovery F(object_sync) never comes: whether the property holds stays unknown to the end
    grasp = r.trace.outcome("grasp_synced_until_release")
    first = next(e.frame for e in r.trace.events if e.property == grasp.property and e.kind == "blind")
    assert grasp.blind_frames == r.frames - first and grasp.violations == 0
    kinds = [e.kind for e in r.trace.events if e.property == "no_excess_wrench"]
    assert kinds == ["blind", "seeing", "blind", "seeing", "blind"]


def test_a_bag_without_frames_names_each_kind_of_issue_once(tmp_path, state, specs):
    """Every joint message lacks a required joint: the error gives one example of the issue, not three."""
    names = list(state.joint_names)
    bag = write_bag(tmp_path / "b", state, edit=lambda k, t, n, position: (t, names[1:], position[1:]))
    r = score_bag(bag, config(specs))
    assert not r.ok and r.error.count("missing_joints x") == 1, r.error


def test_an_unreadable_predicates_message_is_dropped_and_counted_as_the_monitor_node_does(tmp_path, specs):
    from safety_monitor.io import messages as m

    path = tmp_path / "bag"
    keys = ("excess_wrench", "object_grasped", "object_sync", "object_grasped_raw")
    with BagWriter(path, storage="sqlite3") as w:
        for k in range(40):
            w.write_predicates(
                "/safety_monitor/predicates",
                m.PredicateSample(dict.fromkeys(keys, False), 1.0 + k / RATE, k),
                log_t=1.0 + k / RATE,
            )
    with sqlite3.connect(next(path.glob("*.db3"))) as con:
        con.execute("UPDATE messages SET data = substr(data, 1, 30) WHERE id = (SELECT min(id) + 20 FROM messages)")
    r = score_bag(path, config(specs, from_predicates=True))
    assert r.ok, r.error
    assert r.frames == 39 and r.issues == {"undecodable": 1, "frame_gap": 1}
    assert r.issue_examples[0].detail.endswith("message dropped")


@pytest.mark.parametrize("first", [0, 1])
def test_a_malformed_objects_on_the_first_predicates_message_drops_that_frame_alone(tmp_path, specs, first):
    """`_objects` that is not JSON on the bag's first predicates message (or its second) drops and counts that
    frame, as the monitor node would; the rest of the bag is scored."""
    from safety_monitor.io import messages as m

    path = tmp_path / "bag"
    keys = ("excess_wrench", "object_grasped", "object_sync", "object_grasped_raw")
    with BagWriter(path) as w:
        for k in range(40):
            t = 1.0 + k / RATE
            msg = m.predicates_msg(w.types, m.PredicateSample(dict.fromkeys(keys, False), t, k))
            if k == first:
                msg.status[0].values[-1].value = '{"object_grasped": '  # `_objects`, the last key
            w.write("/safety_monitor/predicates", msg, t)
    r = score_bag(path, config(specs, from_predicates=True))
    assert r.ok, r.error
    assert r.frames == 39 and r.issues == {"undecodable": 1, **({"frame_gap": 1} if first else {})}
    assert "malformed _objects" in r.issue_examples[0].detail


def test_no_wrench_topic_configured_is_not_applicable_not_blind(tmp_path, state, specs):
    """`wrench=none`: the robot has no wrist sensor, so no_excess_wrench is not applicable, said once, and no
    frame is blind for it (a configured topic that is absent or stops stays stale, the tests above)."""
    r = score_bag(
        write_bag(tmp_path / "nosensor", state, wrench_until=0), config(specs, mapping=StreamMapping(wrench=None))
    )
    assert r.ok, r.error
    assert r.warnings == [] and r.stale_by_stream == {} and r.stale_frames == 0
    assert r.trace.outcome("no_excess_wrench").blind_frames == 0
    assert r.not_applicable == {
        "no_excess_wrench": "not applicable (needs a wrist force-torque sensor (no wrench topic configured): "
        "excess_wrench)"
    }
    runs = r.timeline.to_json()["runs"]
    assert not any(v for *_, v in runs["excess_wrench"])  # not grounded: constantly false


def test_a_batch_reads_its_spec_file_once_and_each_bag_says_what_is_not_applicable(tmp_path, state, specs):
    """The spec file is parsed once per process for every bag's not-applicable check (as the automata are
    compiled once), and each bag still gets its own verdicts: one without a wrench topic, one with it."""
    score._spec_set.cache_clear()
    bags = [write_bag(tmp_path / "a", state, wrench_until=0), write_bag(tmp_path / "b", state)]
    without, with_sensor = (config(specs, mapping=StreamMapping(wrench=w)) for w in (None, "/wrist_wrench"))
    results = [score_bag(bags[0], without), score_bag(bags[1], with_sensor), score_bag(bags[0], without)]
    assert [r.ok for r in results] == [True] * 3
    assert [sorted(r.not_applicable) for r in results] == [["no_excess_wrench"], [], ["no_excess_wrench"]]
    read = score._spec_set.cache_info()
    assert (read.misses, read.hits) == (1, 2)


def test_inspect_reports_the_wrench_properties_not_applicable_without_a_wrench_topic(tmp_path, state, specs, capsys):
    bag = str(write_bag(tmp_path / "bag", state, wrench_until=0))
    assert main(["inspect", bag, "--specs", specs, "--topics", "wrench=none", "--rate", "500"]) == 0
    text = capsys.readouterr().out
    assert "not groundable: excess_wrench (needs a wrist force-torque sensor (no wrench topic configured))" in text
    assert "no_excess_wrench: not applicable (needs a wrist force-torque sensor" in text
    assert "wrench " not in text.split("configured inputs:")[1].split("predicates")[0]  # no wrench input listed
    assert main(["inspect", bag, "--specs", specs, "--rate", "500"]) == 0
    text = capsys.readouterr().out
    assert "no_excess_wrench: applicable" in text and "wrench                   /wrist_wrench" in text


def _joints_also_on(topic, state):
    """`write_bag`'s `extra`: the same joint states on `topic` too."""

    def extra(w, t):
        w.write_joint_state(topic, t, list(state.joint_names), state.joint_position, log_t=t)

    return extra


def test_relative_topic_names_resolve_under_the_namespace_as_for_a_node_there(tmp_path, state, specs):
    """One topics file for replay and a namespaced node: `joint_states` is /robot1/joint_states under
    --namespace /robot1, /joint_states under the root (the default); the wrench and poses, absolute, stay."""
    bag = write_bag(
        tmp_path / "ns", state, joints_topic="/robot1/joint_states", extra=_joints_also_on("/joint_states", state)
    )
    relative = StreamMapping.parse("joint_states=joint_states,wrench=/wrist_wrench,object_pose=/objects/{name}/pose")
    under = score_bag(bag, config(specs, mapping=relative, namespace="/robot1"))
    root = score_bag(bag, config(specs, mapping=relative))
    assert under.ok and root.ok, (under.error, root.error)
    assert under.frames == root.frames == N and under.warnings == root.warnings == []
    assert under.topics["/robot1/joint_states"].count == under.topics["/joint_states"].count == N


def test_a_relative_name_not_under_the_namespace_takes_the_one_topic_ending_with_it_or_refuses(tmp_path, state, specs):
    relative = config(specs, mapping=StreamMapping.parse("joint_states=joint_states"))
    one = score_bag(write_bag(tmp_path / "one", state, joints_topic="/robot1/joint_states"), relative)
    assert one.ok and one.frames == N
    assert one.warnings == [
        "topic 'joint_states' (joint_states): no /joint_states; using /robot1/joint_states, the one topic of its "
        "type ending with it (--namespace says where the recording's node ran)"
    ]
    two = write_bag(
        tmp_path / "two",
        state,
        joints_topic="/robot1/joint_states",
        extra=_joints_also_on("/robot2/joint_states", state),
    )
    refused = score_bag(two, relative)
    assert refused.error == (
        f"{two}: topic 'joint_states' (joint_states) is not /joint_states, and several topics of type "
        "sensor_msgs/msg/JointState end with it: /robot1/joint_states, /robot2/joint_states (choose with "
        "--namespace NS or an absolute name)"
    )
    assert score_bag(two, config(specs, mapping=relative.mapping, namespace="/robot2")).ok


def test_the_default_topics_are_a_namespaced_stacks_under_the_namespace(tmp_path, specs, capsys):
    """Two stacks, one per arm, recorded in one bag under `left` and `right`, as the nodes name their topics there:
    `--from-predicates --namespace left` rescores left's predicates and cuts them at left's markers. Before, the
    default predicates and episode topics were absolute, so no namespace found them; without one, the bag now
    says in one line which namespaces it holds."""
    from safety_monitor.frames import PredicateSample
    from safety_monitor.pipeline.markers import END, START, EpisodeMarker, marker_msg

    bag = tmp_path / "two_stacks"
    with BagWriter(bag) as w:
        for k in range(N):
            t = 100.0 + k / RATE
            if k in (0, N // 2):
                w.write("/left/safety_monitor/episode", marker_msg(w.types, EpisodeMarker(START, k // (N // 2), t)), t)
            for arm, pushing, frame in (("left", 20 <= k < 30, k % (N // 2)), ("right", False, k)):
                values = {"excess_wrench": pushing, "object_grasped": False, "object_sync": True}
                sample = PredicateSample({**values, "object_grasped_raw": False}, t, frame)
                w.write_predicates(f"/{arm}/safety_monitor/predicates", sample)
            if k == N - 1:
                w.write("/left/safety_monitor/episode", marker_msg(w.types, EpisodeMarker(END, 1, t)), t)
    left, right = (
        score_bag(bag, config(specs, from_predicates=True, namespace=f"/{arm}")) for arm in ("left", "right")
    )
    assert left.ok and right.ok, (left.error, right.error)
    assert left.frames == right.frames == N and left.warnings == right.warnings == []
    assert left.rollouts == 2 and right.rollouts == 1  # left's markers cut left's rollouts only
    assert [sum(o.violations for o in part.trace.outcomes) for part in left.parts] == [1, 0]  # frames 20 to 29
    assert sum(o.violations for o in right.trace.outcomes) == 0
    refused = score_bag(bag, config(specs, from_predicates=True))
    assert refused.error == (
        f"{bag}: topic 'safety_monitor/predicates' (predicates) is not /safety_monitor/predicates, and several "
        "topics of type diagnostic_msgs/msg/DiagnosticArray end with it: /left/safety_monitor/predicates, "
        "/right/safety_monitor/predicates (choose with --namespace NS or an absolute name)"
    )
    resolved, _ = config(specs, namespace="/left").resolved({})
    assert (resolved.mapping.joint_states, resolved.mapping.wrench, resolved.mapping.tf) == (
        "/left/joint_states",
        "/left/wrist_wrench",
        "/tf",  # tf2's topics are global
    )


def test_inspect_resolves_relative_names_and_a_bad_namespace_is_a_usage_error(tmp_path, state, specs, capsys):
    bag = str(write_bag(tmp_path / "bag", state, joints_topic="/robot1/joint_states"))
    args = ["inspect", bag, "--specs", specs, "--rate", "500", "--topics", "joint_states=joint_states"]
    assert main([*args, "--namespace", "robot1"]) == 0
    text = capsys.readouterr().out
    assert "joint_states             /robot1/joint_states             present" in text
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--namespace", "/robot1/"])
    assert exit_.value.code == 2 and "--namespace: must be a ROS namespace" in capsys.readouterr().err


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_bag_whose_metadata_yaml_is_out_of_step_with_its_files_scores_as_the_intact_bag(
    tmp_path, state, specs, storage
):
    """Before, an edited type hash or a count above the files' made rosbags drop or miss messages, and replay
    failed the bag as "corrupt or truncated"; the recording itself is intact."""
    intact = write_bag(tmp_path / "intact", state, storage=storage)
    bag = shutil.copytree(intact, tmp_path / "edited")
    doc = yaml.safe_load((bag / "metadata.yaml").read_text())
    info = doc["rosbag2_bagfile_information"]
    joints = next(t for t in info["topics_with_message_count"] if t["topic_metadata"]["name"] == "/joint_states")
    joints["topic_metadata"]["type_description_hash"] = "RIHS01_" + "1" * 64
    joints["message_count"] += 3
    info["message_count"] += 3
    (bag / "metadata.yaml").write_text(yaml.safe_dump(doc))
    want, got = score_bag(intact, config(specs)), score_bag(bag, config(specs))
    assert got.ok, got.error
    assert (got.frames, got.issues, got.trace.events, got.trace.outcomes) == (
        want.frames,
        want.issues,
        want.trace.events,
        want.trace.outcomes,
    )
    [warning] = got.warnings
    assert warning.startswith("metadata.yaml is out of step with the bag's files (its type_description_hash for ")
    assert f"its message_count for /joint_states is {N + 3}, " in warning
    assert warning.endswith(f"`ros2 bag reindex {bag}`")
