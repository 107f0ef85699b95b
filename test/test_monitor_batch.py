"""The batch monitor must give exactly the live monitor's events and outcomes, on any trace."""

from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safety_monitor.monitor import batch as batch_module
from safety_monitor.monitor.batch import BatchMonitor
from safety_monitor.monitor.live import SpecSetMonitor, automata_for, load_automata
from safety_monitor.specs.compile import compile_formula, rejecting_sink
from safety_monitor.specs.dfa import TableDFA
from safety_monitor.specs.model import CompiledProperty, Property, compile_property

ROOT = Path(__file__).resolve().parents[1]


def table_dfa(name, atoms, table, accepting):
    table = np.array(table, dtype=np.int32)
    accepting = np.array(accepting, dtype=bool)
    return TableDFA(name, atoms, table, 0, accepting, rejecting_sink(table, accepting))


def hand_made():
    """Automata that LTLf cannot produce: a parity counter (never synchronises: two runs out of step
    stay out of step) and a mod-3 counter that rejects c on its third beat (period-3 runs)."""
    parity = table_dfa("parity", ("c",), [[1, 1], [0, 2], [2, 2]], [True, True, False])
    beat = table_dfa("beat3", ("c",), [[1, 1], [2, 2], [0, 3], [3, 3]], [True, True, True, False])
    trig = np.array([False, True])
    return [
        CompiledProperty(
            Property("parity", "mechanism", "parity", "F(!c)", trigger="c"),
            parity,
            compile_formula("F(!c)"),
            trig,
            ("c",),
            0.0,
        ),
        CompiledProperty(Property("beat", "mechanism", "beat3", None, trigger="c"), beat, None, trig, ("c",), 0.0),
    ]


def small_set():
    props = [
        Property("no_p", "collision_contact", "G(!p)", "F(r)"),
        Property("pq", "action_onset", "G(p -> q)"),
        Property("xx", "containment", "G(p -> X X q)", "F(q)", min_resolve_frames=2),
        Property(
            "ord",
            "mechanism",
            "G(p -> (!c U q))",
            "F(q | c)",
            min_resolve_frames=4,
            options={"close_on_opening_frame": True},
        ),
        Property("raw", "cross_contamination", "G(c -> ((!q U r) | G !q))", "F(r | !q)"),
    ]
    return automata_for([compile_property(p) for p in props] + hand_made())


AUTOMATA = small_set()
ATOMS = sorted({a for auto in AUTOMATA for a in auto.atoms})

segment = st.tuples(
    st.integers(1, 60),
    st.one_of(
        st.none(), st.lists(st.sampled_from([True, False, True, False, None]), min_size=len(ATOMS), max_size=len(ATOMS))
    ),
)
SCAN_SETTINGS = [
    {"_BLOCK": batch_module._BLOCK},
    {"_BLOCK": 64, "_CHUNK": 8, "_SYNC_CHECK": 8},
    {"_BLOCK": 50, "_CHUNK": 7, "_SYNC_CHECK": 0},
    {"_BLOCK": 40, "_CHUNK": 16, "_SYNC_CHECK": 1, "_SYNC_GIVE_UP": 2},
]


def check_equal(live, batch, frames, times=None):
    expected = live.run(frames, times)
    got = batch.run_frames(frames, times)
    assert [e.to_json() for e in got.events] == [e.to_json() for e in expected.events]
    assert got.outcomes == expected.outcomes
    assert batch.run_frames(frames, times, events=False).outcomes == expected.outcomes
    return expected


@pytest.mark.parametrize("scan", SCAN_SETTINGS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments=st.lists(segment, min_size=1, max_size=30), history=st.sampled_from([1, 5, 2000]))
def test_batch_equals_live_on_random_traces(scan, segments, history):
    frames = []
    for length, values in segments:
        frame = None if values is None else dict(zip(ATOMS, values))
        frames += [frame] * length
    times = [0.05 * i + 0.01 * (i % 3) for i in range(len(frames))]  # uneven: seconds are not frames times a period
    with mock.patch.multiple(batch_module, **scan):
        check_equal(SpecSetMonitor(AUTOMATA, history=history), BatchMonitor(AUTOMATA, history=history), frames, times)


@pytest.fixture(scope="module")
def real_set():
    """The project's default spec file, or (before it exists) the benchmark's 20 reference properties."""
    path = ROOT / "config" / "specs.yaml"
    vocabulary, automata = load_automata(path if path.exists() else ROOT / "benchmarks" / "specs_20.yaml")
    return SpecSetMonitor(automata, vocabulary), BatchMonitor(automata, vocabulary)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    change=st.sampled_from([1.0, 0.2, 0.01]),
    density=st.sampled_from([0.05, 0.3, 0.5]),
    blind=st.sampled_from([0.0, 0.002, 0.05]),
)
def test_batch_equals_live_on_the_real_specs(real_set, seed, change, density, blind):
    live, batch = real_set
    rng = np.random.default_rng(seed)
    n, frames = len(live.predicates), 1000
    values = np.empty((frames, n), dtype=bool)
    row = rng.random(n) < density
    for i in range(frames):  # each frame redraws a few predicates with probability `change`
        if rng.random() < change:
            k = rng.integers(0, n, size=rng.integers(1, 4))
            row = row.copy()
            row[k] = rng.random(k.size) < density
        values[i] = row
    known = rng.random((frames, n)) >= blind
    as_frames = [
        {p: (bool(v) if k else None) for p, v, k in zip(live.predicates, r, kr)}
        for r, kr in zip(values.tolist(), known.tolist())
    ]
    expected = check_equal(live, batch, as_frames)
    assert batch.run_matrix(values, known).outcomes == expected.outcomes


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), blind=st.sampled_from([0.01, 0.2]))
def test_whole_blind_frames_as_a_per_frame_mask_equal_live_none_frames(seed, blind):
    live, batch = SpecSetMonitor(AUTOMATA), BatchMonitor(AUTOMATA)
    rng = np.random.default_rng(seed)
    values = rng.random((300, len(ATOMS))) < 0.4
    values = np.repeat(values, rng.integers(1, 20, size=300), axis=0)  # runs of equal frames
    known = rng.random(values.shape[0]) >= blind
    frames = [dict(zip(ATOMS, row)) if k else None for row, k in zip(values.tolist(), known.tolist())]
    expected = check_equal(live, batch, frames)
    got = batch.run_matrix(values, known)
    assert [e.to_json() for e in got.events] == [e.to_json() for e in expected.events]
    assert got.outcomes == expected.outcomes


def test_letters_input_matches_matrix_input():
    batch = BatchMonitor(AUTOMATA)
    rng = np.random.default_rng(3)
    values = rng.random((500, len(batch.predicates))) < 0.4
    letters = batch.letters(values)
    assert batch.run_letters(letters).outcomes == batch.run_matrix(values).outcomes
    assert all(a.max() < auto.pad for a, auto in zip(letters, AUTOMATA))  # all known: two-valued letters


def test_long_constant_violation_counts_every_frame_and_is_read_as_runs():
    """A property without recovery violated for 100,000 frames: 100,000 one-frame episodes, found
    from a handful of compressed positions (the automaton reads far fewer letters than frames)."""
    autos = automata_for([compile_property(Property("pq", "action_onset", "G(p -> q)"))])
    batch = BatchMonitor(autos)
    values = np.zeros((100_001, 2), dtype=bool)
    values[1:, batch.predicates.index("p")] = True
    result = batch.run_matrix(values, events=False)
    out = result.outcome("pq")
    assert (out.violations, out.violating_frames, out.triggers) == (100_000, 100_000, 1)
    runs = batch_module._Runs.from_letters(autos[0], batch.letters(values)[0])
    assert runs.letters.size < 10
    short = values[:50]
    check_equal(SpecSetMonitor(autos), batch, [{"p": bool(r[0]), "q": bool(r[1])} for r in short.tolist()])


def test_empty_trace_gives_zero_counts():
    result = BatchMonitor(AUTOMATA).run_matrix(np.zeros((0, len(ATOMS)), dtype=bool))
    assert result.frames == 0 and result.events == ()
    assert all(o.violations == 0 and o.triggers == 0 for o in result.outcomes)
