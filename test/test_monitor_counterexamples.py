"""Deferred counterexamples: read long after the run, they equal counterexamples built eagerly from the
trace itself, and behave like any frozen dataclass instance."""

import copy
import dataclasses
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safety_monitor.enums import EventKind
from safety_monitor.monitor.batch import BatchMonitor
from safety_monitor.monitor.events import Counterexample
from safety_monitor.monitor.live import SpecSetMonitor, automata_for
from safety_monitor.specs.model import Property, compile_property

PROPS = [
    Property("no_p", "collision_contact", "G(!p)", "F(r)"),
    Property("pq", "action_onset", "G(p -> q)"),
    Property("xx", "containment", "G(p -> X X q)", "F(q)", min_resolve_frames=2),
    Property("ord", "mechanism", "G(p -> (!c U q))", "F(q | c)", options={"close_on_opening_frame": True}),
    Property("raw", "cross_contamination", "G(c -> ((!q U r) | G !q))", "F(r | !q)"),
]
AUTOMATA = automata_for(compile_property(p) for p in PROPS)
BY_NAME = {a.name: a for a in AUTOMATA}
ATOMS = sorted({a for auto in AUTOMATA for a in auto.atoms})

segment = st.tuples(
    st.integers(1, 12),
    st.one_of(
        st.none(), st.lists(st.sampled_from([True, False, True, False, None]), min_size=len(ATOMS), max_size=len(ATOMS))
    ),
)


def trace_of(segments):
    frames = []
    for length, values in segments:
        frames += [None if values is None else dict(zip(ATOMS, values))] * length
    return frames


def row_at(frame, atoms):
    """The property's values on one frame as the trace gives them (None: unknown)."""
    if frame is None:
        return (None,) * len(atoms)
    return tuple(None if frame[a] is None else bool(frame[a]) for a in atoms)


def trigger_at(auto, row):
    """The trigger's value on a frame if every completion of its unknown atoms agrees, else None."""
    values = {bool(auto.trigger_value[letter(full)]) for full in completions_of(row)}
    return values.pop() if len(values) == 1 else None


def completions_of(row):
    rows = [()]
    for v in row:
        rows = [r + (x,) for r in rows for x in ((False, True) if v is None else (v,))]
    return rows


def reference(event, frames, times, history):
    """The counterexample of an opening event, built eagerly from the trace and the automaton; the
    window's bounds are checked for consistency, its contents recomputed."""
    auto = BY_NAME[event.property]
    cx = event.counterexample
    first, last, trigger, truncated = cx.first_frame, cx.last_frame, cx.trigger_frame, cx.truncated
    assert last == event.frame and 0 <= first <= last and last - first < history
    if truncated:  # the trigger (or the run's start) lies before the history kept
        assert last - first + 1 == history and (trigger is None or trigger < first)
    elif trigger is not None:
        assert first == trigger
    if trigger is not None:  # a rising edge: true for every completion, after the last value known false
        known = [v for v in (trigger_at(auto, row_at(f, auto.atoms)) for f in frames[: trigger + 1]) if v is not None]
        assert trigger_at(auto, row_at(frames[trigger], auto.atoms)) is True
        assert len(known) == 1 or not known[-2]
    values = tuple(row_at(f, auto.atoms) for f in frames[first : last + 1])
    decisive = cx.decisive
    two_valued = all(None not in row_at(f, auto.atoms) for f in frames[: last + 1])
    if not two_valued:  # decided over the completions: only atoms known on the opening frame
        assert all(values[-1][auto.atoms.index(a)] is not None for a in decisive)
    elif trigger is None and not truncated:  # the main DFA ran from its start on `first`: replay it
        main = auto.main
        q = main.run(main.letter(dict(zip(auto.atoms, r))) for r in values[:-1] if None not in r)
        row = dict(zip(auto.atoms, values[-1]))
        flipped = {a: main.table[q, main.letter({**row, a: not row[a]})] for a in auto.atoms}
        decisive = tuple(a for a in auto.atoms if not main.rejecting_sink[flipped[a]])
    return Counterexample(
        property=auto.name,
        formula=auto.formula,
        trigger=auto.trigger,
        first_frame=first,
        last_frame=last,
        trigger_frame=trigger,
        atoms=auto.atoms,
        values=values,
        times=tuple(times[first : last + 1]),
        decisive=decisive,
        truncated=truncated,
    )


def letter(row):
    return sum(1 << i for i, v in enumerate(row) if v)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments=st.lists(segment, min_size=1, max_size=40), history=st.sampled_from([1, 3, 7, 2000]))
def test_deferred_counterexamples_read_after_the_run_equal_the_trace(segments, history):
    frames = trace_of(segments)
    times = [0.05 * i for i in range(len(frames))]
    live = SpecSetMonitor(AUTOMATA, history=history)
    opened = [e for f, t in zip(frames, times) for e in live.step(f, t) if e.kind == EventKind.OPENED]
    live.finish()
    batch = BatchMonitor(AUTOMATA, history=history).run_frames(frames, times)
    batch_opened = [e for e in batch.events if e.kind == EventKind.OPENED]
    # nothing was read during the run: the log has since rolled over many times with a short history
    for e, b in zip(opened, batch_opened, strict=True):
        ref = reference(e, frames, times, history)
        assert e.counterexample == ref and b.counterexample == ref
        assert e.to_json() == dataclasses.replace(e, counterexample=ref).to_json() == b.to_json()
        assert hash(e.counterexample) == hash(ref) and repr(e.counterexample) == repr(ref)


def opened_event(history=3):
    live = SpecSetMonitor(AUTOMATA, history=history)
    frames = [{a: a == "p" for a in ATOMS}] * 2 + [{a: a in ("p", "c") for a in ATOMS}] * 9
    events = [e for f in frames for e in live.step(f) if e.kind == EventKind.OPENED]
    return live, events[-1]


def test_deferred_counterexample_is_an_ordinary_frozen_dataclass():
    _, e = opened_event()
    fields = {f.name: getattr(e.counterexample, f.name) for f in dataclasses.fields(Counterexample)}
    eager = Counterexample(**fields)
    for make in (lambda c: c, copy.copy, copy.deepcopy, lambda c: pickle.loads(pickle.dumps(c))):
        _, fresh = opened_event()
        twin = make(fresh.counterexample)
        assert twin == eager and vars(twin) == vars(eager)  # copies carry fields, not the recipe
    assert dataclasses.asdict(opened_event()[1].counterexample) == dataclasses.asdict(eager)
    assert dataclasses.replace(opened_event()[1].counterexample, truncated=False) == dataclasses.replace(
        eager, truncated=False
    )
    assert opened_event()[1].counterexample.to_json() == eager.to_json()  # to_json as the first read
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.counterexample.values = ()
    with pytest.raises(AttributeError, match="'Counterexample' object has no attribute 'nope'"):
        _ = opened_event()[1].counterexample.nope


def test_history_bounds_what_the_monitor_keeps():
    """Counterexample windows refer to the monitor's frame log: it never grows past twice the history."""
    live, _ = opened_event(history=5)
    for k in range(1000):
        live.step({a: (k % 3 == 0) == (a == "p") for a in ATOMS})
        assert len(live._log) <= 10
