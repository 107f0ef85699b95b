"""The per-property rules of docs/semantics.md, one hand-written trace per rule.

Each trace is checked on the live monitor and on the batch monitor: both must give these events.
"""

import random

import pytest

from safety_monitor.errors import SpecError
from safety_monitor.monitor.batch import BatchMonitor
from safety_monitor.monitor.live import SpecSetMonitor, automata_for
from safety_monitor.specs.model import Property, compile_property


def make(*props, history=2000):
    autos = automata_for(compile_property(p) for p in props)
    return SpecSetMonitor(autos, history=history), BatchMonitor(autos, history=history)


def frames_of(rows, atoms):
    """rows: one string per frame naming the true atoms ("p q"); "?x" marks x unknown; None = blind."""
    out = []
    for row in rows:
        if row is None:
            out.append(None)
            continue
        words = row.split()
        frame = {a: a in words for a in atoms}
        frame.update({w[1:]: None for w in words if w.startswith("?")})
        out.append(frame)
    return out


def run(monitors, rows, times=None):
    live, batch = monitors
    frames = frames_of(rows, live.predicates)
    result = live.run(frames, times)
    other = batch.run_frames(frames, times)
    assert [e.to_json() for e in other.events] == [e.to_json() for e in result.events]
    assert other.outcomes == result.outcomes
    assert batch.run_frames(frames, times, events=False).outcomes == result.outcomes
    return result


def story(result, name):
    return [(e.kind, e.frame, e.episode, e.duration) for e in result.events if e.property == name]


NO_P = Property("no_p", "collision_contact", "G(!p)", "F(r)")


def test_rejection_opens_and_recovery_closes_with_main_frozen_in_between():
    result = run(make(NO_P), ["", "p", "", "p", "", "r", "", "p"])
    # p again at frame 3 opens nothing: the main DFA is frozen while the episode is open
    assert story(result, "no_p") == [
        ("opened", 1, 0, None),
        ("recovered", 5, 0, 4),
        ("opened", 7, 1, None),
        ("unrecovered_at_end", 7, 1, 1),
    ]
    out = result.outcome("no_p")
    assert (out.violations, out.violating_frames, out.durations) == (2, 5, (4, 1))


def test_recovery_holding_on_the_opening_frame_waits_for_a_later_frame_by_default():
    result = run(make(NO_P), ["p r", "", ""])
    assert story(result, "no_p") == [("opened", 0, 0, None), ("recovered", 1, 0, 1)]


def test_close_on_opening_frame_option_closes_at_once_and_rearms_next_frame():
    prop = Property("no_p", "collision_contact", "G(!p)", "F(r)", options={"close_on_opening_frame": True})
    result = run(make(prop), ["p r", "p", ""])
    # closed on frame 0; the main DFA restarts on frame 1, reads p and rejects again
    assert story(result, "no_p") == [
        ("opened", 0, 0, None),
        ("recovered", 0, 0, 1),
        ("opened", 1, 1, None),
        ("unrecovered_at_end", 2, 1, 2),
    ]


def test_default_mode_rearms_on_the_recovery_frame_and_may_reopen_on_it():
    result = run(make(NO_P), ["p r", "p"])
    # frame 1: recovery accepts (closes episode 0), the main DFA restarts on frame 1, reads p, rejects
    assert story(result, "no_p") == [
        ("opened", 0, 0, None),
        ("recovered", 1, 0, 1),
        ("opened", 1, 1, None),
        ("unrecovered_at_end", 1, 1, 1),
    ]


def test_main_dfa_reads_the_recovery_frame():
    prop = Property("ord", "mechanism", "G(h -> (!t U s))", "F(r)")
    # frame 0 opens (h with t); frame 2 recovers by r and raises h: an obligation from frame 2 that
    # frame 3's t breaks. Had the main DFA restarted on frame 3, h at frame 2 would be unseen.
    result = run(make(prop), ["h t", "", "h r", "t"])
    assert story(result, "ord") == [
        ("opened", 0, 0, None),
        ("recovered", 2, 0, 2),
        ("opened", 3, 1, None),
        ("unrecovered_at_end", 3, 1, 1),
    ]


@pytest.mark.parametrize("tail, kind, counted", [(3, "unrecovered_at_end", True), (2, "discarded_truncated", False)])
def test_min_resolve_frames_boundary(tail, kind, counted):
    prop = Property("settle", "release_stability", "G(!p)", "F(r)", min_resolve_frames=3)
    result = run(make(prop), [""] * 4 + ["p"] * tail)
    opened = 4
    assert story(result, "settle") == [("opened", opened, 0, None), (kind, opened + tail - 1, 0, tail)]
    out = result.outcome("settle")
    assert out.violations == int(counted)
    assert out.violating_frames == (tail if counted else 0)
    assert out.discarded == int(not counted)
    # an activation whose episode was discarded is still undecided: pending, not a trigger
    assert (out.triggers, out.pending_triggers) == ((1, 0) if counted else (0, 1))


def test_property_without_recovery_has_one_frame_episodes_and_restarts_next_frame():
    prop = Property("pq", "action_onset", "G(a -> b)")
    result = run(make(prop), ["a", "a", "a b", "a"])
    assert story(result, "pq") == [
        ("opened", 0, 0, None),
        ("closed", 0, 0, 1),
        ("opened", 1, 1, None),
        ("closed", 1, 1, 1),
        ("opened", 3, 2, None),
        ("closed", 3, 2, 1),
    ]
    assert result.outcome("pq").triggers == 1  # one rising edge of a


def test_restart_after_a_one_frame_episode_skips_the_rejecting_frame():
    prop = Property("nx", "action_onset", "G(a -> X b)")
    # frame 1 breaks frame 0's obligation; frame 1's own a is not read (restart on frame 2), so the
    # missing b on frame 2 is no violation
    result = run(make(prop), ["a", "a", "", ""])
    assert story(result, "nx") == [("opened", 1, 0, None), ("closed", 1, 0, 1)]


def test_unknown_predicate_blinds_only_the_properties_reading_it():
    other = Property("qb", "action_onset", "G(q -> b)", "F(b)")
    result = run(make(NO_P, other), ["", "?p", "?p p", "", "p"])
    # frames 1 and 2: p unknown; frame 3: the completions with p on frame 1 or 2 are still in an episode
    # (no r yet), the others are not, so the verdict stays unknown; frame 4's p puts every completion
    # in an episode: opened, and seeing again
    assert [(e.kind, e.property, e.frame) for e in result.events if e.kind in ("blind", "seeing")] == [
        ("blind", "no_p", 1),
        ("seeing", "no_p", 4),
    ]
    assert story(result, "no_p")[2] == ("opened", 4, 0, None)
    assert result.outcome("no_p").blind_frames == 3
    assert result.outcome("qb").blind_frames == 0


def test_blind_frame_holds_state_and_trigger_level():
    prop = Property("ord", "mechanism", "G(h -> (!t U s))", "F(s | t)")
    result = run(make(prop), ["h", None, None, "h", "h t"])
    # h stays high across the blind frames: one rising edge; the obligation from frame 0 survives them
    assert story(result, "ord")[:1] == [("blind", 1, None, None)]
    assert story(result, "ord")[2] == ("opened", 4, 0, None)
    out = result.outcome("ord")
    assert (out.blind_frames, out.triggers) == (2, 1)
    cx = result.events[2].counterexample
    assert cx.trigger_frame == 0 and cx.first_frame == 0
    assert cx.values[1] == (None, None, None)  # blind frames are unknown in the evidence


def test_counterexample_window_values_decisive_atoms_and_sentence():
    prop = Property("ord", "mechanism", "G(h -> (!t U s))", "F(s | t)")
    result = run(make(prop), ["", "", "h", "", "t"], times=[0.0, 0.1, 0.2, 0.3, 0.4])
    opened = result.events[0]
    cx = opened.counterexample
    assert (opened.kind, opened.frame, opened.t) == ("opened", 4, 0.4)
    assert cx.atoms == ("h", "s", "t")
    assert (cx.first_frame, cx.last_frame, cx.trigger_frame, cx.truncated) == (2, 4, 2, False)
    assert cx.values == ((True, False, False), (False, False, False), (False, False, True))
    assert cx.times == (0.2, 0.3, 0.4)
    assert cx.decisive == ("s", "t")  # s or not t on frame 4 would have kept the rule
    text = cx.explanation
    assert "ord" in text and "frame 4" in text and "rose at frame 2" in text and "t=true" in text
    assert opened.to_json()["counterexample"]["values"]["h"] == [[2, 2, True], [3, 4, False]]


def test_counterexample_is_cut_to_the_history_length():
    prop = Property("ord", "mechanism", "G(h -> (!t U s))", "F(s | t)")
    result = run(make(prop, history=3), ["h"] + [""] * 5 + ["t"])
    cx = result.events[0].counterexample
    assert (cx.trigger_frame, cx.first_frame, cx.last_frame, cx.truncated) == (0, 4, 6, True)
    assert len(cx.values) == 3


def test_pending_activation_at_end_is_not_a_trigger():
    prop = Property("ord", "mechanism", "G(h -> (!t U s))", "F(s | t)")
    done = run(make(prop), ["h", "", "s", "", "h"]).outcome("ord")
    assert (done.triggers, done.pending_triggers, done.violations) == (1, 1, 0)
    settled = run(make(prop), ["h", "s", ""]).outcome("ord")
    assert (settled.triggers, settled.pending_triggers) == (1, 0)


def test_an_activation_decided_by_a_violation_stays_a_trigger_after_the_rearm():
    # a rises on frame 0 and is violated on frame 1 (no b); the recovery frame 2 restarts the main DFA,
    # whose own edge (a rises again) is still pending at the end: N 1, pending 1, V 1 (not N 0, V 1)
    resp = Property("resp", "action_onset", "G(a -> X b)", "F(b)")
    out = run(make(resp), ["a", "", "a b"]).outcome("resp")
    assert (out.triggers, out.pending_triggers, out.violations) == (1, 1, 1)
    # the trigger stays high through the re-arm: the re-armed run raised no edge, nothing is pending
    hold = Property("hold", "mechanism", "G(h -> (!t U s))", "F(t)")
    result = run(make(hold), ["h", "h t", "h", "h"])
    assert story(result, "hold") == [("opened", 1, 0, None), ("recovered", 2, 0, 1)]
    out = result.outcome("hold")
    assert (out.triggers, out.pending_triggers, out.violations) == (1, 0, 1)


def test_event_order_within_a_frame_follows_property_order():
    a = Property("a_first", "collision_contact", "G(!p)", "F(!p)")
    b = Property("b_second", "collision_contact", "G(!p)", "F(!p)")
    result = run(make(b, a), ["p"])
    assert [e.property for e in result.events if e.kind == "opened"] == ["b_second", "a_first"]


def test_missing_or_bad_predicate_values_are_named():
    live, _ = make(NO_P)
    with pytest.raises(SpecError, match="frame 0: no value for predicate 'r'"):
        live.step({"p": True})
    live.reset()
    with pytest.raises(SpecError, match="predicate 'p' has value 'yes'"):
        live.step({"p": "yes", "r": False})
    assert live.frame == 0  # a rejected frame leaves the monitor where it was
    live.reset()
    with pytest.raises(SpecError, match="expected a mapping"):
        live.step(["p"])


def test_step_reports_events_as_they_happen_and_finish_resets():
    live, _ = make(NO_P)
    assert list(live.step({"p": False, "r": False})) == []
    events = live.step({"p": True, "r": False}, t=1.5)
    assert [(e.kind, e.frame, e.t) for e in events] == [("opened", 1, 1.5)]
    result = live.finish()
    assert [e.kind for e in result.events] == ["unrecovered_at_end"] and result.frames == 2
    assert live.frame == 0


def test_close_on_opening_frame_must_be_a_boolean():
    prop = Property("no_p", "collision_contact", "G(!p)", "F(r)", options={"close_on_opening_frame": "yes"})
    with pytest.raises(SpecError, match="close_on_opening_frame must be true or false"):
        make(prop)


def test_min_resolve_seconds_follow_the_control_rate(tmp_path):
    """A 0.1 s truncation bound is 2 frames at 20 Hz and 50 frames at 500 Hz: the same open
    episode of 10 frames at the end counts at 20 Hz and is discarded as truncated at 500 Hz."""
    from safety_monitor.monitor.live import SpecSetMonitor

    spec = tmp_path / "specs.yaml"
    spec.write_text(
        "predicates: [bad]\nproperties:\n  - name: never_bad\n    category: c\n"
        '    formula: "G(!bad)"\n    recovery: "F(!bad)"\n    min_resolve_frames: 7\n    min_resolve_s: 0.1\n'
    )
    trace = [{"bad": False}] * 5 + [{"bad": True}] * 10
    kinds = {}
    for rate in (20.0, 500.0, None):
        monitor = SpecSetMonitor.from_spec_file(spec, control_rate_hz=rate)
        events = [e for frame in trace for e in monitor.step(frame)]
        kinds[rate] = [e.kind for e in events + list(monitor.finish().events)]
    assert kinds[20.0] == ["opened", "unrecovered_at_end"]
    assert kinds[500.0] == ["opened", "discarded_truncated"]
    assert kinds[None] == ["opened", "unrecovered_at_end"]  # no rate: the 7 frames as written


@pytest.mark.parametrize("seed", range(4))
def test_a_rewound_monitor_goes_on_as_if_it_had_stopped_at_its_checkpoint(seed):
    """`rewind` (for a late start marker, which ends a trace before its last frames): back at a checkpoint and
    stepped on with other frames, the monitor reports and finishes exactly as one that never saw the frames in
    between, unknown ones and state sets included, and the counterexamples it reported before still read the
    frames they were about (the frame log is copied, never cut; history 7 makes it roll over)."""
    rng = random.Random(seed)
    props = [
        Property("resp", "action_onset", "G(a -> X b)", "F(b)"),
        Property("hold", "mechanism", "G(h -> (!t U s))", "F(t)", options={"min_resolve_frames": 3}),
        NO_P,
    ]
    atoms = ("a", "b", "h", "p", "r", "s", "t")

    def frame():
        if rng.random() < 0.03:
            return None
        return {x: None if rng.random() < 0.05 else rng.random() < 0.3 for x in atoms}

    def stepped(monitor, frames):
        return [e for k, f in enumerate(frames) for e in monitor.step(f, float(k))]

    def story(events):
        return [(e.kind, e.property, e.frame, e.t, e.episode, e.duration) for e in events]

    before, after, other = ([frame() for _ in range(n)] for n in (60, 40, 30))
    live, _ = make(*props, history=7)
    reported = stepped(live, before)
    checkpoint = live.checkpoint()
    stepped(live, after)  # the frames to forget
    live.rewind(checkpoint)
    assert live.frame == len(before)
    again = [e for k, f in enumerate(other, len(before)) for e in live.step(f, float(k))]
    result = live.finish()

    fresh, _ = make(*props, history=7)
    expected = stepped(fresh, before + other)
    assert story(reported + again) == story(expected)
    assert [e.to_json() for e in reported + again] == [e.to_json() for e in expected]  # counterexamples too
    reference = fresh.finish()
    assert story(result.events) == story(reference.events) and result.outcomes == reference.outcomes
