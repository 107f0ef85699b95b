"""Three-valued verdicts (docs/semantics.md, "Unknown inputs") against brute force over every completion.

The brute force fills the trace's unknown values in every possible way, runs the two-valued monitor on
each completed trace, and derives from their events what the three-valued monitor must report:

- with no episode reported open, it opens one on the first frame by which every completion has been
  inside an episode of its own at some moment since the last reported closing (or the start);
- with one open, it closes it on the first frame by which every completion has been outside an episode
  at some moment since the opening;
- moments within a frame follow the two-valued order: recoveries, then rejections, then episodes
  closed on their opening frame;
- a frame is blind when the property reads an unknown value on it, or when some completion is
  violating on it and another is not;
- the trigger rises on a frame where it is true for every completion, after its last value known for
  every completion was false (or the start): never more edges than any completion has.
"""

import itertools
import random

import pytest

from safety_monitor.monitor.batch import BatchMonitor
from safety_monitor.monitor.live import SpecSetMonitor, automata_for
from safety_monitor.specs.model import Property, compile_property

ATOMS = ("a", "b", "c")
EPISODE_KINDS = ("opened", "recovered", "closed", "unrecovered_at_end", "discarded_truncated")


def make(*props):
    autos = automata_for(compile_property(p) for p in props)
    return SpecSetMonitor(autos), BatchMonitor(autos)


def both(monitors, frames):
    """The live monitor's result, after checking that the batch monitor gives the same."""
    live, batch = monitors
    result = live.run(frames)
    other = batch.run_frames(frames)
    assert [e.to_json() for e in other.events] == [e.to_json() for e in result.events]
    assert other.outcomes == result.outcomes
    assert batch.run_frames(frames, events=False).outcomes == result.outcomes
    return result


def test_a_violation_every_completion_makes_opens_on_its_frame():
    """G(a -> X b): b is false on frame 1 whatever a was there, so frame 0's obligation fails on frame 1."""
    monitors = make(Property("nx", "action_onset", "G(a -> X b)"))
    frames = [{"a": True, "b": False}, {"a": None, "b": False}, {"a": False, "b": True}]
    result = both(monitors, frames)
    assert [(e.kind, e.frame) for e in result.events] == [("blind", 1), ("opened", 1), ("closed", 1), ("seeing", 2)]
    out = result.outcome("nx")
    assert (out.triggers, out.violations, out.blind_frames) == (1, 1, 1)
    cx = result.events[1].counterexample
    assert cx.values == ((True, False), (None, False)) and cx.decisive == ("b",)


def test_completions_that_disagree_keep_the_verdict_unknown_until_one_frame_decides():
    """G(!p) with recovery F(r): p unknown on frame 1; frame 2 decides nothing (no r), frame 3's p
    puts every completion in an episode, frame 5's r takes every completion out."""
    monitors = make(Property("no_p", "collision_contact", "G(!p)", "F(r)"))
    rows = [(False, False), (None, False), (False, False), (True, False), (False, False), (False, True)]
    result = both(monitors, [{"p": p, "r": r} for p, r in rows])
    assert [(e.kind, e.frame) for e in result.events] == [("blind", 1), ("seeing", 3), ("opened", 3), ("recovered", 5)]
    assert result.outcome("no_p").blind_frames == 2


def test_two_valued_steps_of_singletons_are_the_automaton_itself():
    """A set holding one state, on a letter with every atom known, steps exactly as the table."""
    props = [
        Property("ord", "mechanism", "G(a -> (!b U c))", "F(b | c)"),
        Property("at_once", "mechanism", "G(!a)", "F(b)", options={"close_on_opening_frame": True}),
        Property("nx", "action_onset", "G(a -> X b)"),
    ]
    for auto in automata_for(compile_property(p) for p in props):
        comp = auto.completions
        for q in range(auto.n_states):
            for letter in range(auto.pad):
                assert comp.step(q, letter) == (
                    auto.next[q, letter],
                    auto.code[q, letter],
                    False,
                    int(auto.trigger_value[letter]),
                )


# ----- brute force over completions -------------------------------------------------------------
def random_temporal(rng, depth):
    atom = rng.choice(ATOMS)
    if depth == 0 or rng.random() < 0.25:
        return atom if rng.random() < 0.7 else f"!{atom}"
    kind = rng.choice(["X", "F", "G", "U", "R", "&", "|", "!", "WX"])
    sub = lambda: random_temporal(rng, depth - 1)  # noqa: E731
    if kind in ("U", "R", "&", "|"):
        return f"({sub()} {kind} {sub()})"
    return f"{kind}({sub()})"


def random_property(rng, k):
    trigger = rng.choice(ATOMS) if rng.random() < 0.7 else f"({rng.choice(ATOMS)} & !{rng.choice(ATOMS)})"
    shape = rng.random()
    if shape < 0.5:
        formula = f"G({trigger} -> {random_temporal(rng, 2)})"
    elif shape < 0.7:
        formula = f"G(!{trigger})"
    else:
        formula = random_temporal(rng, 3)
    recovery = None if rng.random() < 0.3 else f"F({random_temporal(rng, 1)})"
    options = {"close_on_opening_frame": True} if recovery and rng.random() < 0.3 else {}
    return Property(
        f"p{k}",
        "mechanism",
        formula,
        recovery,
        min_resolve_frames=rng.choice([0, 1, 3]),
        trigger=trigger,
        options=options,
    )


def random_trace(rng, atoms, max_unknown=7):
    """Frames over `atoms` with a few unknown values (None), or a whole frame None now and then."""
    while True:
        frames = []
        for _ in range(rng.randint(1, 10)):
            if rng.random() < 0.08:
                frames.append(None)
            else:
                frames.append({a: (None if rng.random() < 0.15 else rng.random() < 0.5) for a in atoms})
        holes = sum(len(atoms) if f is None else sum(v is None for v in f.values()) for f in frames)
        if 0 < holes <= max_unknown or rng.random() < 0.05:
            return frames


def completions(frames, atoms):
    full = [{a: None for a in atoms} if f is None else dict(f) for f in frames]
    holes = [(i, a) for i, f in enumerate(full) for a in atoms if f[a] is None]
    for values in itertools.product((False, True), repeat=len(holes)):
        trace = [dict(f) for f in full]
        for (i, a), v in zip(holes, values):
            trace[i][a] = v
        yield trace


def moments(events, n):
    """Per frame, one completion's moments: R (an earlier episode recovers), O (one opens), C (the
    episode opened on this frame closes on it), read from its two-valued events."""
    out = [[] for _ in range(n)]
    opened_on = {}
    for e in events:
        if e.kind == "opened":
            opened_on[e.episode] = e.frame
            out[e.frame].append("O")
        elif e.kind in ("recovered", "closed"):
            out[e.frame].append("C" if opened_on[e.episode] == e.frame else "R")
    return out


def expected(auto, frames, runs):
    """The three-valued story (episode events with durations), blind frames per frame, and edges."""
    n, m = len(frames), len(runs)
    per = [moments(r.events, n) for r in runs]
    inside, flag, is_open = [False] * m, [False] * m, False
    story, blind, since = [], [], None
    for k in range(n):
        now = [per[c][k] for c in range(m)]
        violating = [(inside[c] and "R" not in now[c]) or "O" in now[c] for c in range(m)]
        unknown = frames[k] is None or any(frames[k][a] is None for a in auto.atoms)
        blind.append(unknown or (any(violating) and not all(violating)))
        for stage in "ROC":
            for c in range(m):
                if stage in now[c]:
                    inside[c] = stage == "O"
            if (stage == "O") != is_open:  # rejections count while closed, the others while open
                flag = [flag[c] or stage in now[c] for c in range(m)]
                if all(flag):
                    is_open = not is_open
                    if is_open:
                        story.append(("opened", k, None))
                        since = k
                        flag = [not x for x in inside]
                    else:
                        kind = "closed" if auto.recovery is None else "recovered"
                        story.append((kind, k, k - since if k > since else 1))
                        flag = list(inside)
    if is_open:
        duration = n - since
        story.append(
            ("unrecovered_at_end" if duration >= auto.min_resolve_frames else "discarded_truncated", n - 1, duration)
        )
    return story, blind


def expected_edges(auto, frames):
    held, edges = False, 0
    for f in frames:
        row = {a: None for a in auto.atoms} if f is None else f
        holes = [a for a in auto.atoms if row[a] is None]
        values = set()
        for fill in itertools.product((False, True), repeat=len(holes)):
            full = {**row, **dict(zip(holes, fill))}
            values.add(bool(auto.trigger_value[sum(1 << i for i, a in enumerate(auto.atoms) if full[a])]))
        if len(values) == 1:
            value = values.pop()
            edges += value and not held
            held = value
    return edges


def blind_story(blind):
    out, was = [], False
    for k, b in enumerate(blind):
        if b != was:
            out.append(("blind" if b else "seeing", k))
            was = b
    return out


PROPERTIES = 60
TRACES = 10  # per property: 600 cases


@pytest.fixture(scope="module")
def random_properties():
    rng = random.Random(15)
    return [random_property(rng, k) for k in range(PROPERTIES)]


@pytest.mark.parametrize("k", range(PROPERTIES))
def test_three_valued_monitor_equals_brute_force_over_completions(random_properties, k):
    prop = random_properties[k]
    monitors = make(prop)
    auto = monitors[0].automata[0]
    rng = random.Random(1000 + k)
    for _ in range(TRACES):
        frames = random_trace(rng, auto.atoms)
        result = both(monitors, frames)
        runs = [monitors[0].run(trace) for trace in completions(frames, auto.atoms)]
        story, blind = expected(auto, frames, runs)
        got = [(e.kind, e.frame, e.duration) for e in result.events if e.kind in EPISODE_KINDS]
        context = (prop.formula, prop.recovery, prop.options, frames)
        assert got == story, context
        assert [(e.kind, e.frame) for e in result.events if e.kind in ("blind", "seeing")] == blind_story(blind), (
            context
        )
        out = result.outcome(prop.name)
        assert out.blind_frames == sum(blind), context
        assert out.violations == sum(1 for kind, *_ in story if kind in EPISODE_KINDS[1:4]), context
        total = out.triggers + out.pending_triggers
        assert total == expected_edges(auto, frames), context
        assert total <= min(r.outcomes[0].triggers + r.outcomes[0].pending_triggers for r in runs), context
        assert sum(e.kind == "opened" for e in result.events) <= min(
            sum(e.kind == "opened" for e in r.events) for r in runs
        ), context
