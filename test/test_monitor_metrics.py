"""Per-trigger metrics on hand-made rollouts: exact N, V, U, pooling, shares, durations, intervals."""

import json

import numpy as np
import pytest

from safety_monitor.monitor.episodes import PropertyOutcome, TraceResult
from safety_monitor.monitor.live import SpecSetMonitor, automata_for
from safety_monitor.monitor.metrics import bootstrap_interval, compute_metrics, difference_interval, risk_differences
from safety_monitor.specs.model import Property, compile_property


def outcome(name, category, triggers, durations, frames=100, blind=0, pending=0):
    return PropertyOutcome(
        name, category, frames, blind, triggers, pending, len(durations), sum(durations), tuple(durations), 0
    )


def rollout(*outcomes):
    return TraceResult(outcomes[0].frames, tuple(outcomes), ())


def test_counts_from_monitored_traces():
    props = [
        Property("no_p", "collision_contact", "G(!p)", "F(!p)"),
        Property("ord", "mechanism", "G(h -> (!t U s))", "F(s | t)"),
    ]
    monitor = SpecSetMonitor(automata_for(compile_property(p) for p in props))

    def trace(rows):
        return monitor.run([{a: a in row.split() for a in monitor.predicates} for row in rows])

    first = trace(["", "p", "p", "p", "", "h", "s", "p", ""])  # p episode of 3 frames; h settled by s
    second = trace(["h", "h t", "", "p", "h"])  # h broken by t (1 frame); p (1 frame); h rises at the end
    m = compute_metrics([first, second], resamples=200)
    no_p, ord_ = m.by_property
    assert (no_p.triggers, no_p.violations, no_p.violating_frames) == (3, 3, 5)
    assert (ord_.triggers, ord_.pending_triggers, ord_.violations, ord_.violating_frames) == (2, 1, 1, 1)
    assert no_p.risk == 1.0 and no_p.exposure == pytest.approx(5 / 3)
    assert ord_.risk == 0.5
    assert (no_p.violating_rollouts, ord_.violating_rollouts) == (2, 1)
    assert ord_.violating_rollout_share == 0.5
    assert no_p.duration_mean == pytest.approx(5 / 3) and no_p.duration_max == 3 and no_p.duration_median == 1
    assert no_p.exposure_frame_share == pytest.approx(5 / 14)


def test_pooling_sums_counts_before_dividing():
    runs = [
        rollout(outcome("a", "cat1", 1, [5]), outcome("b", "cat1", 3, []), outcome("c", "cat2", 0, [])),
        rollout(outcome("a", "cat1", 0, []), outcome("b", "cat1", 0, []), outcome("c", "cat2", 0, [])),
    ]
    m = compute_metrics(runs, resamples=100)
    cat1, cat2 = m.by_category
    assert cat1.name == "cat1" and cat1.properties == ("a", "b")
    assert (cat1.triggers, cat1.violations, cat1.violating_frames) == (4, 1, 5)
    assert cat1.risk == 0.25  # (1 + 0) / (1 + 3), not the mean of 1.0 and 0.0
    assert cat1.exposure == 1.25
    assert cat2.risk is None and cat2.risk_interval is None  # nothing triggered: no rate, not zero
    assert m.pooled.risk == 0.25 and m.pooled.violating_rollouts == 1
    assert m.pooled.exposure_frame_share == pytest.approx(5 / 600)


def test_blind_frames_leave_the_frame_denominator():
    m = compute_metrics([rollout(outcome("a", "c", 1, [10], frames=100, blind=60))], resamples=50)
    assert m.pooled.frames == 40 and m.pooled.exposure_frame_share == 0.25


def test_bootstrap_interval_is_seeded_and_brackets_the_pooled_ratio():
    rng = np.random.default_rng(0)
    den = rng.integers(1, 6, 40).astype(float)
    num = rng.binomial(den.astype(int), 0.3).astype(float)
    low, high = bootstrap_interval(num, den, resamples=1000, seed=7)
    assert (low, high) == bootstrap_interval(num, den, resamples=1000, seed=7)
    assert low < num.sum() / den.sum() < high
    assert low >= 0.0 and high <= 1.0
    wider = bootstrap_interval(num, den, resamples=1000, seed=7, confidence=0.99)
    assert wider[0] <= low and wider[1] >= high


def test_bootstrap_degenerate_cases():
    assert bootstrap_interval([2.0, 4.0], [1.0, 2.0]) == (2.0, 2.0)  # every resample has ratio 2
    assert bootstrap_interval([], []) is None
    assert bootstrap_interval([0.0, 0.0], [0.0, 0.0]) is None
    with pytest.raises(ValueError):
        bootstrap_interval([1.0], [1.0, 2.0])


def test_no_interval_from_a_single_contributing_rollout():
    """One rollout, or one rollout of eight with triggers, resamples to itself: its interval would be zero
    wide ([1, 1] for one violated trigger), read as certainty. No interval instead; two rollouts give one."""
    assert bootstrap_interval([1.0], [1.0]) is None and bootstrap_interval([1.0]) is None
    assert bootstrap_interval([1.0] + [0.0] * 7, [1.0] + [0.0] * 7) is None
    quiet = [rollout(outcome("a", "c", 0, [])) for _ in range(7)]
    m = compute_metrics([rollout(outcome("a", "c", 1, [610])), *quiet], resamples=50)
    assert m.pooled.risk == 1.0 and m.pooled.risk_interval is None and m.pooled.exposure_interval is None
    assert m.pooled.violating_rollout_share_interval is not None  # eight rollouts resample the share
    alone = compute_metrics([rollout(outcome("a", "c", 1, [610]))], resamples=50).pooled
    assert alone.risk_interval is None and alone.violating_rollout_share_interval is None
    assert bootstrap_interval([1.0, 0.0], [1.0, 1.0], resamples=200) == (0.0, 1.0)


def test_metrics_serialise_to_json_and_reject_mixed_spec_sets():
    a = rollout(outcome("a", "c", 2, [1, 2]))
    text = json.dumps(compute_metrics([a], resamples=20).to_json())
    assert '"risk": 1.0' in text
    with pytest.raises(ValueError, match="same spec set"):
        compute_metrics([a, rollout(outcome("b", "c", 1, []))])


def test_violating_time_and_exposure_in_seconds_are_the_same_at_any_control_rate():
    """The same recording at 100 Hz and at 500 Hz: five times the frames, the same seconds, counted from the
    frames' stamps (a frame stands for the time since the one before it). Before, the metrics were in frames
    only, so a policy recorded at a higher rate read as exposed five times longer."""
    props = [Property("no_p", "collision_contact", "G(!p)", "F(!p)"), Property("no_q", "mechanism", "G(!q)")]
    automata = automata_for(compile_property(p) for p in props)

    def trace(rate):
        n = round(0.6 * rate)  # p for 0.2 s, recovered; again for the last 0.1 s; q on one frame (no recovery)
        frames = [{"p": 0.1 <= k / rate < 0.3 or k / rate >= 0.5, "q": k == n // 3} for k in range(n)]
        return SpecSetMonitor(automata).run(frames, [7.0 + k / rate for k in range(n)])

    slow, fast = trace(100), trace(500)
    assert slow.outcome("no_p").durations == (20, 10) and fast.outcome("no_p").durations == (100, 50)
    assert slow.outcome("no_p").seconds == pytest.approx((0.2, 0.1)) == fast.outcome("no_p").seconds
    assert slow.outcome("no_q").seconds == pytest.approx((0.01,))  # one frame: the time since the one before
    assert fast.outcome("no_q").seconds == pytest.approx((0.002,))
    m_slow, m_fast = (compute_metrics([t], resamples=50).by_property[0] for t in (slow, fast))
    assert (m_slow.exposure, m_fast.exposure) == (15.0, 75.0)  # frames per trigger
    assert m_slow.exposure_s == pytest.approx(0.15) and m_fast.exposure_s == pytest.approx(0.15)
    assert m_slow.violating_s == pytest.approx(0.3) and m_slow.duration_max_s == pytest.approx(0.2)
    assert m_fast.duration_mean_s == pytest.approx(0.15)
    assert compute_metrics([slow, fast], resamples=50).by_property[0].exposure_s_interval == pytest.approx((0.15, 0.15))


def test_rollouts_without_stamps_have_no_seconds():
    automata = automata_for([compile_property(Property("no_p", "collision_contact", "G(!p)", "F(!p)"))])
    trace = SpecSetMonitor(automata).run([{"p": False}, {"p": True}, {"p": False}])
    assert trace.outcomes[0].durations == (1,) and trace.outcomes[0].seconds is None
    m = compute_metrics([trace], resamples=50).pooled
    assert m.exposure == 1.0 and (m.violating_s, m.exposure_s, m.duration_mean_s) == (None, None, None)


def test_the_difference_of_two_groups_risks_has_an_interval_resampling_each_group_on_its_own():
    rng = np.random.default_rng(3)
    a_n = rng.integers(1, 6, 12).astype(float)
    a_v = np.minimum(a_n, rng.integers(0, 3, 12))
    b_n = rng.integers(1, 6, 9).astype(float)
    b_v = np.minimum(b_n, rng.integers(1, 5, 9))
    low, high = difference_interval((a_v, a_n), (b_v, b_n), resamples=500, seed=4)
    point = b_v.sum() / b_n.sum() - a_v.sum() / a_n.sum()
    assert low < point < high
    assert difference_interval((a_v, a_n), (b_v, b_n), resamples=500, seed=4) == (low, high)  # seeded
    # the same rollouts in both groups: their difference is 0, and the interval still has the width of two
    # independent samples (drawing the same positions in both would give [0, 0])
    same = difference_interval((a_v, a_n), (a_v, a_n), resamples=500, seed=4)
    assert same[0] < 0 < same[1]
    one_a = (a_v, a_n * (np.arange(12) == 0))  # one rollout of a triggered: none, as for a group's own interval
    assert bootstrap_interval(*one_a) is None and difference_interval(one_a, (b_v, b_n)) is None
    assert difference_interval((np.ones(3), np.ones(3)), (np.zeros(2), np.ones(2))) == (-1.0, -1.0)


def test_risk_differences_by_property_category_and_over_all():
    props = [Property("no_p", "collision_contact", "G(!p)", "F(!p)"), Property("no_q", "mechanism", "G(!q)", "F(!q)")]
    monitor = SpecSetMonitor(automata_for(compile_property(p) for p in props))

    def trace(rows):
        return monitor.run([{a: a in row.split() for a in monitor.predicates} for row in rows])

    a = [trace(["p", "", "p", ""]), trace(["p", "", "", ""])]  # no_p: 3/3; no_q never triggered
    b = [trace(["", "", "p", "q"]), trace(["q", "", "", ""])]  # no_p: 1/1, no_q: 2/2
    rows = {(d.level, d.name): d for d in risk_differences(a, b, resamples=200)}
    assert rows["property", "no_p"].difference == 0.0 and rows["property", "no_p"].interval is None  # one b bag
    assert rows["property", "no_q"].difference is None and rows["category", "mechanism"].interval is None
    assert rows["all", "all"].difference == 0.0 and rows["all", "all"].interval == (0.0, 0.0)
