"""The Supervisor's input rules, each driven with an explicit clock (no sleeps, no ROS): the watchdog's
one blind frame after a pause, frozen stamps, time going back and coming past again, lost frames, start
markers that come early or late, end markers before their frame, predicates never sent; and its fast
path, which must decide every frame as the general path does."""

import random
from dataclasses import replace

import pytest
from two_property_specs import PROPS, SPECS

from safety_monitor.enums import EventKind, IssueKind
from safety_monitor.frames import FrozenValues, PredicateSample
from safety_monitor.monitor.live import SpecSetMonitor
from safety_monitor.pipeline.markers import END, START, EpisodeMarker
from safety_monitor.pipeline.supervisor import NOTHING, InputStatus, Supervisor, Withdrawn
from safety_monitor.settings import MonitorSettings

DT = 0.002


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    path = tmp_path_factory.mktemp("specs") / "specs.yaml"
    path.write_text(SPECS)
    return path


@pytest.fixture
def make(specs):
    def build(timeout=0.5, frozen=0.5, on_frame=None):
        monitor = SpecSetMonitor.from_spec_file(specs)
        return Supervisor(monitor, MonitorSettings(predicates_timeout_s=timeout, predicates_frozen_s=frozen), on_frame)

    return build


def quiet(k, t=None, number=None, **values):
    """Frame k: nothing violated, at t (default 1 + k * DT), numbered k."""
    return PredicateSample(
        {"a": False, "b": False, **values}, 1.0 + k * DT if t is None else t, k if number is None else number
    )


def feed(sup, frames, now=None):
    """Each sample at its own time on the driver's clock (or `now`); the steps."""
    return [sup.sample(s, s.t if now is None else now) for s in frames]


def kinds(steps, kind):
    return [(e.event.property, e.event.frame) for s in steps for e in s.events if e.event.kind == kind]


def issues(steps):
    return [i.kind for s in steps for i in s.issues]


def test_a_pause_steps_one_blind_frame_at_the_watchdog_and_frames_resume_it(make):
    sup = make()
    assert sup.status is InputStatus.WAITING
    steps = feed(sup, [quiet(k) for k in range(10)])
    assert steps[0].status is InputStatus.FRESH and steps[1:] == [NOTHING] * 9
    last = 1.0 + 9 * DT
    assert sup.tick(last + 0.5) is NOTHING  # not longer than the limit yet
    fired = sup.tick(last + 0.51)
    assert fired.status is InputStatus.STALE and issues([fired]) == [IssueKind.PREDICATES_GAP]
    assert sorted(kinds([fired], EventKind.BLIND)) == [(p, 10) for p in sorted(PROPS)]  # frame 10: the blind one
    assert all(e.event.t == last for e in fired.events)  # stepped at the last frame's time
    assert sup.tick(last + 5.0) is NOTHING  # one blind frame per pause
    resumed = sup.sample(quiet(10, t=last + 5.0), last + 5.0)
    assert resumed.status is InputStatus.FRESH and resumed.was is InputStatus.STALE
    assert sorted(kinds([resumed], EventKind.SEEING)) == [(p, 11) for p in sorted(PROPS)]
    assert sup.monitor.frame == 12


def test_a_frame_after_a_pause_gets_the_pause_s_blind_frame_first_without_a_tick(make):
    """What replay does: no timer, only the next message's log time."""
    sup = make()
    feed(sup, [quiet(k) for k in range(3)])
    step = sup.sample(quiet(3, t=3.0), 3.0)
    assert issues([step]) == [IssueKind.PREDICATES_GAP]
    assert [e.event.kind for e in step.events] == [EventKind.BLIND] * 2 + [EventKind.SEEING] * 2
    assert step.status is InputStatus.FRESH  # and fresh again with this very frame
    assert step.was is InputStatus.STALE  # what it was fresh again from (the node says so), not the fresh before


def test_a_frozen_stamp_is_never_stepped_and_blinds_after_the_frozen_limit(make):
    sup = make(timeout=2.0, frozen=0.3)
    feed(sup, [quiet(k) for k in range(5)])
    stuck = 1.0 + 4 * DT
    steps = [sup.sample(quiet(5 + k, t=stuck), stuck + (k + 1) * DT) for k in range(140)]  # 0.28 s of repeats
    assert issues(steps) == [IssueKind.DUPLICATE_STAMP] * 140 and sup.monitor.frame == 5
    assert sup.status is InputStatus.FRESH
    step = sup.sample(quiet(145, t=stuck), stuck + 0.31)  # 0.31 s since the stamp last advanced
    assert issues([step]) == [IssueKind.FROZEN, IssueKind.DUPLICATE_STAMP]
    assert step.status is InputStatus.FROZEN and len(kinds([step], EventKind.BLIND)) == 2
    assert sup.tick(stuck + 3.0) is NOTHING  # the watchdog sees the same spell: no second blind frame
    assert sup.monitor.frame == 6
    assert sup.sample(quiet(146, t=stuck + DT), stuck + 3.0).status is InputStatus.FRESH


def test_time_going_back_blinds_once_and_drops_frames_until_it_passes_the_last_stepped_one(make):
    sup = make()
    feed(sup, [quiet(k) for k in range(20)])
    last = 1.0 + 19 * DT
    back = sup.sample(quiet(20, t=last - 0.1, a=True), last + DT)  # a violation stamped in the past
    assert issues([back]) == [IssueKind.BACKWARDS] and back.status is InputStatus.TIME_BACKWARDS
    assert sup.backwards_from == last and len(kinds([back], EventKind.BLIND)) == 2
    steps = feed(sup, [quiet(21 + k, t=last - 0.1 + (k + 1) * DT, a=True) for k in range(20)], now=last + 2 * DT)
    steps.append(sup.sample(quiet(41, t=last), last + 3 * DT))  # the last stepped time itself: a repeat
    assert issues(steps) == [IssueKind.BACKWARDS] * 20 + [IssueKind.DUPLICATE_STAMP]
    assert not any(s.events for s in steps) and sup.time_faults == 21 and sup.monitor.frame == 21
    past = sup.sample(quiet(42, t=last + DT), last + 4 * DT)
    assert past.status is InputStatus.FRESH and sup.backwards_from is None
    assert len(kinds([past], EventKind.SEEING)) == 2 and not kinds(steps + [back, past], EventKind.OPENED)


def test_lost_frames_are_counted_from_the_estimator_s_numbers_and_a_new_rollout_renumbers(make):
    sup = make()
    steps = feed(sup, [quiet(k) for k in range(10)] + [quiet(k) for k in range(15, 20)])
    assert issues(steps) == [IssueKind.FRAME_GAP] and sup.lost_frames == 5
    assert "frame 15 where 10 was expected" in steps[10].issues[0].detail
    steps = feed(sup, [PredicateSample({"a": False, "b": False}, 1.1 + k * DT) for k in range(3)])  # no numbers
    steps += feed(sup, [quiet(20 + k, t=1.2 + k * DT) for k in range(3)])
    assert issues(steps) == [] and sup.lost_frames == 5  # unnumbered frames are no loss
    sup.marker(EpisodeMarker(END, 0, 1.2 + 2 * DT), 1.21)
    steps = feed(sup, [quiet(k, t=1.3 + k * DT) for k in range(3)])  # the next rollout, numbered from 0
    assert issues(steps) == [] and sup.lost_frames == 5 and sup.rollout == 1


def test_a_start_marker_names_the_first_frame_at_or_after_it_early_or_late(make):
    sup = make()
    early = EpisodeMarker(START, 7, 1.0, task="pick", fault="slip", seed=3)
    sup.marker(early, 0.5)  # before its first frame, and before the previous rollout ended
    sup.marker(EpisodeMarker(START, 6, 0.5), 0.5)  # older: spent by the first frame
    feed(sup, [quiet(k) for k in range(5)])
    assert sup.rollout == 7
    (r,) = sup.marker(EpisodeMarker(END, 7, 1.0 + 4 * DT, succeeded=True), 1.1).finished
    assert (r.index, r.task, r.fault, r.seed, r.succeeded, r.frames) == (7, "pick", "slip", 3, True, 5)

    feed(sup, [quiet(k, t=2.0 + k * DT) for k in range(3)])  # the next rollout's frames come first ...
    assert sup.rollout == 8
    sup.marker(EpisodeMarker(START, 8, 2.0, task="place"), 2.01)  # ... then its start marker
    sup.marker(EpisodeMarker(START, 1, 0.2, task="history"), 2.02)  # from before the last rollout: not this one's
    (r,) = sup.finish().finished
    assert (r.index, r.task, r.frames) == (8, "place", 3)


def test_a_late_start_marker_starts_its_rollout_at_its_own_time_the_frames_before_it_blind(make):
    """No end marker, and the next rollout's start marker comes after 5 of its frames were stepped (in the
    last trace, where `a` opened never_a): they are withdrawn from that trace, which ends with its last frame
    before the marker's time, as if the marker had come on time; the violation they opened counts in neither
    rollout (withdrawn, said in an event of its own); the new rollout begins at the marker's time with one
    blind frame per frame withdrawn, so every frame counts in exactly one rollout and no verdict rests on
    them."""
    sup = make()
    sup.marker(EpisodeMarker(START, 0, 1.0), 1.0)
    feed(sup, [quiet(k) for k in range(10)])
    marker_t = 1.0 + 10 * DT
    early = feed(sup, [quiet(k, a=True) for k in range(10, 15)])  # the new rollout's first frames: a is true
    assert kinds(early, EventKind.OPENED) == [("never_a", 10)]
    late = sup.marker(EpisodeMarker(START, 1, marker_t, task="next"), 1.0 + 14 * DT + 0.001)
    assert issues([late]) == [IssueKind.LATE_MARKER, IssueKind.MISSING_MARKER]
    assert late.issues[0].t == marker_t and late.issues[1].t == 1.0 + 9 * DT  # the old trace's last frame
    (old,) = late.finished
    assert (old.index, old.frames) == (0, 10)  # as it was at the marker's time
    assert old.events == () and not any(o.violations or o.triggers for o in old.outcomes)
    assert late.withdrawn == Withdrawn(rollout=0, frames=5, blind=5)
    assert [
        (e.rollout, e.event.kind, e.event.frame, e.event.episode) for e in late.events if e.event.property == "never_a"
    ] == [
        (0, EventKind.WITHDRAWN, 14, 0),  # reported under rollout 0, at its frame 10: withdrawn, at the last one
        (1, EventKind.BLIND, 0, None),
    ]
    blind = [e.event for e in late.events if e.event.kind is EventKind.BLIND]
    assert {(e.frame, e.t) for e in blind} == {(0, marker_t)}  # the new rollout's frame 0 is at the marker's time
    assert sup.late_start and sup.late_markers == 1 and sup.missing_markers == 1
    assert "after 5 of its frames" in late.issues[0].detail and "the 1 violation episode(s)" in late.issues[0].detail
    feed(sup, [quiet(k) for k in range(15, 20)])
    (new,) = sup.finish().finished
    assert (new.index, new.task, new.frames) == (1, "next", 10)
    assert [o.blind_frames for o in new.outcomes] == [5, 5] and not any(o.violations for o in new.outcomes)
    assert old.frames + new.frames == 20


def test_a_rollout_ended_by_the_next_start_marker_closes_as_input_ended_only_what_counts(tmp_path):
    """`input_ended` says the episode counted, never recovered; one too short to count stays
    `discarded_truncated`, as at any trace's end."""
    specs = tmp_path / "specs.yaml"
    specs.write_text(
        "predicates: [a, b]\nproperties:\n"
        '  - {name: short, category: collision_contact, formula: "G(!a)", recovery: "F(!a)", min_resolve_frames: 5}\n'
        '  - {name: long, category: action_onset, formula: "G(!b)", recovery: "F(!b)", min_resolve_frames: 2}\n'
    )
    sup = Supervisor(SpecSetMonitor.from_spec_file(specs), MonitorSettings())
    sup.marker(EpisodeMarker(START, 0, 1.0), 1.0)
    feed(sup, [quiet(k, a=k >= 7, b=k >= 4) for k in range(10)])  # short open 3 frames, long 6
    sup.marker(EpisodeMarker(START, 1, 1.0 + 10 * DT), 1.0 + 9 * DT + 0.001)  # on time, no end marker before it
    step = sup.sample(quiet(10), 1.0 + 10 * DT)
    assert issues([step]) == [IssueKind.MISSING_MARKER]
    (old,) = step.finished
    assert [(e.event.property, e.event.kind) for e in step.events if e.event.kind.closes] == [
        ("short", EventKind.DISCARDED_TRUNCATED),
        ("long", EventKind.INPUT_ENDED),
    ]
    assert [(o.property, o.violations, o.discarded) for o in old.outcomes] == [("short", 0, 1), ("long", 1, 0)]


def test_a_start_marker_after_the_first_frames_of_its_trace_withdraws_their_verdicts(make):
    """The last rollout ended by its marker; the next one's frames came before its start marker (grounded
    with the evidence of before the boundary): what they opened is withdrawn (in no rollout's events), and the
    rollout keeps them as blind frames. The step says it withdrew them, so a driver that counts the frames it
    heard of counts each once, as the traces hold them."""
    stepped = []
    sup = make(on_frame=lambda valuation, t, stale: stepped.append(valuation))
    feed(sup, [quiet(k) for k in range(5)])
    sup.marker(EpisodeMarker(END, 0, 1.0 + 4 * DT), 1.1)
    early = feed(sup, [quiet(k, t=2.0 + k * DT, a=k < 2) for k in range(3)])  # never_a opens and recovers
    assert kinds(early, EventKind.OPENED) == [("never_a", 0)] and kinds(early, EventKind.RECOVERED) == [("never_a", 2)]
    late = sup.marker(EpisodeMarker(START, 1, 2.0), 2.01)
    assert issues([late]) == [IssueKind.LATE_MARKER] and late.finished == ()
    assert late.withdrawn == Withdrawn(rollout=1, frames=3, blind=3)
    assert len(stepped) == 5 + 3 + 3 and stepped[-3:] == [None] * 3  # heard of twice: stepped, then blind
    assert kinds([late], EventKind.WITHDRAWN) == [("never_a", 2)]  # at the last frame stepped
    feed(sup, [quiet(k, t=2.0 + k * DT) for k in range(3, 6)])
    (r,) = sup.finish().finished
    assert (r.index, r.frames) == (1, 6) == (1, len(stepped) - 5 - late.withdrawn.frames)
    assert [o.blind_frames for o in r.outcomes] == [3, 3] and not any(o.violations for o in r.outcomes)
    assert not any(e.kind in (EventKind.OPENED, EventKind.RECOVERED) for e in r.events)  # as its outcomes say


def test_a_second_late_start_marker_before_any_frame_of_the_first_s_rollout_takes_them_all(make):
    """The first late marker starts its rollout half a frame before its first frame; a second one, stamped at
    that frame, comes later still: the first's rollout holds no frame before the second's time, so it makes
    no rollout (as markers with no frame after them make none) and the second's holds them all, blind. A
    rollout of no frames was once finished instead."""
    sup = make()
    sup.marker(EpisodeMarker(START, 0, 1.0), 1.0)
    feed(sup, [quiet(k) for k in range(15)])
    first = sup.marker(EpisodeMarker(START, 1, 1.0 + 9.5 * DT), 1.0 + 14.5 * DT)
    assert [r.frames for r in first.finished] == [10] and first.withdrawn.frames == 5
    feed(sup, [quiet(k) for k in range(15, 20)])
    second = sup.marker(EpisodeMarker(START, 2, 1.0 + 10 * DT), 1.0 + 19.5 * DT)
    assert second.finished == () and second.withdrawn == Withdrawn(rollout=1, frames=10, blind=10)
    (r,) = sup.finish().finished
    assert (r.index, r.frames) == (2, 10) and [o.blind_frames for o in r.outcomes] == [10, 10]


def _marked_stream(frames, boundary, late, end, rng):
    """(input, driver time) of two rollouts back to back, their frames at DT: `frames` of them, the second
    starting at frame `boundary`, random values (some unknown, some blind spells the watchdog sees); its start
    marker `late` frames after its time (0: on time), an end marker for the first rollout when `end`. Frames are
    numbered as the estimator numbers them: from 0 after a start marker it received, on after a late one.
    `blind` = the second rollout's first `late` frames with every value unknown, the on-time stream a late
    marker must score as."""
    out, number = [], 0
    for k in range(frames):
        t = 1.0 + k * DT
        if k == boundary:
            if end:
                out.append((EpisodeMarker(END, 0, t - DT), t - DT / 2))
            if not late:
                out.append((EpisodeMarker(START, 1, t), t - DT / 4))
                number = 0
        if late and k == boundary + late:
            out.append((EpisodeMarker(START, 1, 1.0 + boundary * DT), t - DT / 4))
        values = {"a": None if rng.random() < 0.03 else rng.random() < 0.2, "b": rng.random() < 0.3}
        out.append((PredicateSample(values, t, number), t))
        number += 1
    return out


@pytest.mark.parametrize("end", [False, True], ids=["without_an_end", "after_an_end"])
@pytest.mark.parametrize("late", [1, 7, 499, 500, 501, 1234])
def test_a_late_start_marker_scores_its_frames_as_an_on_time_one_with_them_blind(make, late, end):
    """Every frame in exactly one rollout and every violation once: with its start marker `late` frames late,
    the first rollout is as with the marker on time (frames, events, outcomes: the monitor rewound across its
    checkpoints), and the second as on time with its first `late` frames blind. A late marker once left the late
    frames in the first rollout too, with the triggers and violations they raised."""
    rng = random.Random(late)
    stream = _marked_stream(2600, 1300, late, end, rng)
    on_time = _marked_stream(2600, 1300, 0, end, random.Random(late))
    blinded = [
        (replace(x, values=dict.fromkeys(x.values)) if 1300 <= k < 1300 + late else x, now)
        for k, (x, now) in enumerate(y for y in on_time if isinstance(y[0], PredicateSample))
    ]
    markers = iter(y for y in on_time if isinstance(y[0], EpisodeMarker))
    expected = sorted(blinded + list(markers), key=lambda y: y[1])

    def run(stream):
        sup = make()
        steps = [sup.marker(x, now) if isinstance(x, EpisodeMarker) else sup.sample(x, now) for x, now in stream]
        steps.append(sup.finish())
        rollouts = [r for s in steps for r in s.finished]
        events = [e for s in steps for e in s.events]
        return rollouts, events

    (first, second), events = run(stream)
    (first_on_time, _), _ = run(on_time)
    (first_blind, second_blind), _ = run(expected)
    assert first.frames == first_on_time.frames == 1300 and second.frames == 1300
    assert first.outcomes == first_on_time.outcomes
    assert [e.to_json() for e in first.events] == [e.to_json() for e in first_on_time.events]
    assert second.outcomes == second_blind.outcomes and second.events == second_blind.events
    withdrawn = [e for e in events if e.event.kind is EventKind.WITHDRAWN]
    since, marker = 1.0 + 1300 * DT, 1.0 + (1300 + late - 0.5) * DT
    opened_late = [e for e in events if e.event.kind is EventKind.OPENED and since <= e.event.t < marker]
    assert [(e.rollout, e.event.property, e.event.episode) for e in withdrawn] == [
        (e.rollout, e.event.property, e.event.episode) for e in opened_late
    ]
    assert withdrawn or late < 7  # a violation opened on some late frame


def test_an_end_marker_before_its_frame_closes_the_trace_once_that_frame_is_stepped(make):
    sup = make()
    feed(sup, [quiet(k) for k in range(5)])
    end = 1.0 + 7 * DT
    assert sup.marker(EpisodeMarker(END, 0, end), 1.0).finished == ()  # frames 5..7 still on their way
    steps = feed(sup, [quiet(k) for k in range(5, 8)])
    assert [len(s.finished) for s in steps] == [0, 0, 1] and steps[-1].finished[0].frames == 8
    assert not sup.in_trace and sup.monitor.frame == 0

    feed(sup, [quiet(k, t=2.0 + k * DT, a=k >= 1) for k in range(3)])  # never_a opens and stays open
    sup.marker(EpisodeMarker(END, 1, 2.0 + 4 * DT), 2.0)  # its frame never comes:
    later = sup.sample(quiet(0, t=2.1), 2.1)  # a later frame closes the trace, then starts the next
    (r,) = later.finished
    assert r.index == 1 and r.frames == 3
    assert [(e.rollout, e.event.kind) for e in later.events if e.event.property == "never_a"] == [
        (1, EventKind.UNRECOVERED_AT_END)
    ]
    assert sup.in_trace and sup.rollout == 2 and sup.monitor.frame == 1


def test_predicates_the_specs_read_but_the_input_lacks_are_unknown_reported_once(make):
    sup = make()
    steps = [sup.sample(PredicateSample({"a": False}, 1.0 + k * DT, k), 1.0 + k * DT) for k in range(3)]
    assert issues(steps) == [IssueKind.UNSENT] and steps[0].issues[0].detail.endswith(": b")
    assert kinds(steps, EventKind.BLIND) == [("b_then_not_a", 0)]  # never_a reads only a: still seeing


def test_a_stream_that_stops_before_the_input_ends_is_blind_to_the_end(make):
    sup = make()
    feed(sup, [quiet(k) for k in range(5)])
    end = sup.finish(1.0 + 4 * DT + 0.6)
    assert issues([end]) == [IssueKind.STREAM_STOPPED] and end.status is InputStatus.STALE
    (r,) = end.finished
    assert r.frames == 6 and [o.blind_frames for o in r.outcomes] == [1, 1]


def test_the_fast_path_decides_every_frame_as_the_general_path_does(make):
    """A random stream with every kind of fault, stepped once normally and once with the fast path off."""
    rng = random.Random(13)
    stream, t, now, number, frozen_for, unnumbered = [], 1.0, 1.0, 0, 0, False
    for _ in range(4000):
        r = rng.random()
        if frozen_for:
            frozen_for -= 1  # a spell of one stamp
        elif r < 0.005:
            t -= 0.01  # back in time
            number += 1
        elif r < 0.007:
            frozen_for = 200
        elif r > 0.03:
            t += DT  # else the last message again
            number += 3 if rng.random() < 0.01 else 1  # frames lost
        if rng.random() < 0.006:  # a pause, which the driver's timer sees (live) or not (replay)
            now += 0.6
            if rng.random() < 0.5:
                stream.append((None, now))
            now += 0.4
        now += DT
        values = {"a": rng.random() < 0.1, "b": rng.random() < 0.3}
        if rng.random() < 0.01:
            del values["b"]
        unknown = frozenset({"a"}) if rng.random() < 0.02 else frozenset()
        unnumbered ^= rng.random() < 0.01  # spells of frames without numbers (an external estimator)
        stream.append((PredicateSample(values, t, None if unnumbered else number, unknown), now))
        if rng.random() < 0.003:
            stream.append((EpisodeMarker(END, 0, t + (DT if rng.random() < 0.5 else 0.0)), now))

    def run(fast):
        seen = []
        sup = make(on_frame=lambda v, t, stale: seen.append((None if v is None else dict(v), t)))
        if not fast:
            sup._replan = lambda: None  # _plain stays False: every frame takes the general path
        steps = [
            sup.tick(now) if x is None else sup.marker(x, now) if isinstance(x, EpisodeMarker) else sup.sample(x, now)
            for x, now in stream
        ]
        steps.append(sup.finish(now + 1.0))
        return (
            [(e.rollout, e.event) for s in steps for e in s.events],
            [s.issues for s in steps],
            [s.status for s in steps],
            [r.frames for s in steps for r in s.finished],
            seen,
        )

    fast, general = run(True), run(False)
    assert fast == general
    assert len(fast[3]) > 3 and {i.kind for s in fast[1] for i in s} >= {
        IssueKind.BACKWARDS,
        IssueKind.DUPLICATE_STAMP,
        IssueKind.FRAME_GAP,
        IssueKind.PREDICATES_GAP,
        IssueKind.UNSENT,
        IssueKind.FROZEN,
    }


def test_an_opened_event_names_the_objects_of_its_own_predicates_on_its_frame(make):
    """Both paths (the fast one, and the general one a lost frame takes) name, on an opened event, the objects
    the frame says its property's predicates are about, and no other predicate's; other events name none."""
    for lost in (0, 1):
        sup = make()
        objects = {"a": ("mug",), "b": ("drawer",), "c": ("plate",)}
        frames = [quiet(k) for k in range(3)]
        frames.append(PredicateSample({"a": True, "b": False}, 1.0 + 3 * DT, 3 + lost, objects=objects))
        frames.append(PredicateSample({"a": True, "b": True}, 1.0 + 4 * DT, 4 + lost, objects=objects))
        frames += [quiet(k + lost) for k in range(5, 9)]
        events = [e.event for s in feed(sup, frames) for e in s.events] + [
            e.event for e in sup.finish(frames[-1].t).events
        ]
        opened = [(e.property, e.objects) for e in events if e.kind == EventKind.OPENED]
        assert opened == [("never_a", ("mug",)), ("b_then_not_a", ("mug", "drawer"))], lost
        closing = [e for e in events if e.kind != EventKind.OPENED]
        assert closing and all(e.objects == () and "objects" not in e.to_json() for e in closing)
        assert [e.to_json()["objects"] for e in events if e.kind == EventKind.OPENED] == [["mug"], ["mug", "drawer"]]


def test_frames_that_repeat_the_last_values_step_on_one_valuation(make):
    """The estimator sends a new dict every frame; equal known values step on the last frame's valuation
    object (checked once), a caller's later change to its dict does not reach it, and an unknown value or a
    changed one makes a new valuation."""
    seen = []
    sup = make(on_frame=lambda v, t, stale: seen.append(v))
    first, second = quiet(0), quiet(1)
    assert first.values is not second.values
    feed(sup, [first, second])
    assert seen[0] is seen[1] and seen[0] == {"a": False, "b": False}
    second.values["a"] = True  # the caller's dict, not the stepped valuation
    assert seen[1] == {"a": False, "b": False}
    feed(sup, [PredicateSample({"a": False, "b": False}, 1.0 + 2 * DT, 2, frozenset({"a"})), quiet(3, b=True)])
    assert seen[2] == {"a": None, "b": False} and seen[3] == {"a": False, "b": True}
    feed(sup, [quiet(4, b=True)])
    assert seen[4] is seen[3]


def test_a_repeated_valuation_is_keyed_on_the_values_and_unknown_predicates(make):
    """Frames repeating the last one's unknown predicates and values step on one valuation too (a predicate
    unknown for a while); one input changed alone makes a new valuation: a value (also where the caller changed
    the dict the last valuation was built from to it), the unknown set, or a key (here `b` sent as `c`, with the
    same value: `b` unknown, never sent)."""
    seen = []
    sup = make(on_frame=lambda v, t, stale: seen.append(v))

    def frame(k, unknown=frozenset(), **values):
        return PredicateSample(values, 1.0 + k * DT, k, frozenset(unknown))

    first = frame(0, "a", a=False, b=False)
    feed(sup, [first, frame(1, "a", a=False, b=False)])
    assert seen[0] is seen[1] and seen[1] == {"a": None, "b": False}
    first.values["b"] = True  # the caller's dict, now equal to the next one's
    feed(sup, [frame(2, "a", a=False, b=True), frame(3, "b", a=False, b=True), frame(4, "b", a=True, b=True)])
    assert seen[2:] == [{"a": None, "b": True}, {"a": False, "b": None}, {"a": True, "b": None}]
    feed(sup, [quiet(5), frame(6, a=False, c=False)])
    assert seen[5] == {"a": False, "b": False} and seen[6] == {"a": False, "b": None}


def test_read_only_values_sent_again_step_as_equal_plain_dicts_would(make):
    """Read-only values (the grounder's, the same object while its decisions repeat) sent again are known equal
    by identity; the same object with other unknown predicates, another one, or a plain dict between two sends of
    it is noticed: every frame steps on the valuation that fresh plain dicts of its values give, in random runs
    over a few read-only objects, plain dicts and unknown sets."""
    rng = random.Random(7)
    pool = [FrozenValues(a=a, b=b) for a in (False, True) for b in (False, True)]
    frames = []
    for k in range(600):
        values = rng.choice(pool[:2]) if rng.random() < 0.8 else rng.choice([*pool, {"a": True, "b": False}])
        unknown = frozenset({"a"}) if rng.random() < 0.05 else frozenset()
        frames += [PredicateSample(values, 1.0 + k * DT, k, unknown)]

    def run(fresh):
        seen = []
        sup = make(on_frame=lambda v, t, stale: seen.append(dict(v)))
        feed(sup, [replace(f, values=dict(f.values)) if fresh else f for f in frames])
        return seen

    assert run(fresh=False) == run(fresh=True)
    seen = []
    sup = make(on_frame=lambda v, t, stale: seen.append(v))
    plain, read_only = quiet(1, a=True), quiet(0)
    read_only = replace(read_only, values=FrozenValues(read_only.values))
    feed(sup, [read_only, plain, replace(read_only, t=plain.t + DT, frame=2)])
    assert seen == [{"a": False, "b": False}, {"a": True, "b": False}, {"a": False, "b": False}]


def test_a_valuation_stepped_again_after_a_rewind_is_read_again(make):
    """Frames equal to the last step on its valuation object, which the monitor then need not read
    (`step_again`); once anything else moved the monitor (here a start marker that came after the trace's first
    frames, rewinding it to step them again blind), the same object is read again: never_a opens on the first
    frame after the marker, as in a run on fresh dicts."""

    def run(fresh):
        sup = make()
        steps = []
        for k in range(10):
            frame = quiet(k, a=True)
            valuation = dict(frame.values) if fresh else frame.values
            steps.append(
                sup.frame(valuation, frame.t, k, frame.stale, frame.t) if fresh else sup.sample(frame, frame.t)
            )
            if k == 4:
                steps.append(sup.marker(EpisodeMarker(START, 0, 1.0), frame.t + 0.001))
        return [(e.rollout, e.event.property, e.event.kind, e.event.frame) for s in steps for e in s.events]

    events = run(fresh=False)
    assert (0, "never_a", EventKind.OPENED, 5) in events
    assert events == run(fresh=True)
