"""Compiling and comparing large-alphabet formulas: MONA's listing to a table, equivalence, monitor cost.

The formula is a conjunction of K responses `G(p0 -> F q0) & ... & G(p{K-1} -> F q{K-1})` over 2K atoms;
K = 8 gives 16 atoms, 256 states and 390,626 MONA transition lines. Timed, best of --repeat:
- MONA alone (ltlf2dfa's program, `mona -w`), and the table built from its listing;
- `compile_formula` end to end, cold (empty cache folder) and warm (from the disk cache);
- with --monitor, the monitor's cost of that table: `build_automaton`, its tables' bytes, batch frames
  per second (K = 8: about 100 s, in `_run_shape`, which holds 257 arrays of 256 x 65,537 int32,
  about 16 GiB; see benchmarks/README.md);
- `equiv` on 16 + 16 atoms, on the formula against a reordering (equivalent) and against a weakening
  (not), and the refusal of two conjunctions over disjoint atoms; plus 200 random small pairs.
Times are CPU seconds (this process and MONA), best of --repeat. `--before REV` also times the code
of git revision REV (its compile.py and equivalence.py, loaded from `git show`) on the same inputs,
and checks it gives the same tables and answers.

    .venv/bin/python benchmarks/bench_compile.py [--conjuncts 8] [--repeat 3] [--before 032eedb] [--monitor]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from safety_monitor.errors import SpecError  # noqa: E402
from safety_monitor.monitor.automaton import build_automaton  # noqa: E402
from safety_monitor.monitor.batch import BatchMonitor  # noqa: E402
from safety_monitor.specs import compile as compiler  # noqa: E402
from safety_monitor.specs import equivalence  # noqa: E402
from safety_monitor.specs.ltlf import ltlf2dfa_formula, parse, to_text  # noqa: E402
from safety_monitor.specs.model import Property, compile_property  # noqa: E402


def cpu_s() -> float:
    """CPU seconds of this process and its finished children (MONA): steadier than wall time on a
    machine other jobs share."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def best_of(repeat, fn):
    times, out = [], None
    for _ in range(repeat):
        t = cpu_s()
        out = fn()
        times.append(cpu_s() - t)
    return out, min(times)


def module_at(rev: str, path: str, name: str):
    """A module of this repository as it was at git revision `rev` (imports resolve to today's package)."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True, check=True
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="bench_compile_"))
    (folder / f"{name}.py").write_text(source)
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def conjunction(k: int, p: str = "p", q: str = "q") -> str:
    return " & ".join(f"G({p}{i} -> F {q}{i})" for i in range(k))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conjuncts", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", metavar="REV", help="also time this git revision's compile.py and equivalence.py")
    ap.add_argument(
        "--monitor", action="store_true", help="also build and run the monitor automaton (slow, memory-hungry)"
    )
    args = ap.parse_args()
    from ltlf2dfa.base import MonaProgram

    compiler.mona_version()  # looked up once per process, outside the timings
    text = to_text(parse(conjunction(args.conjuncts)))
    atoms = compiler.atoms_of(parse(text))
    program = MonaProgram(ltlf2dfa_formula(text)).mona_program()
    output, mona_s = best_of(args.repeat, lambda: compiler._run_mona(program, text))
    lines = output.count(" -> state ")
    dfa, table_s = best_of(args.repeat, lambda: compiler._table_from_mona(output, atoms, text))
    print(f"formula: {args.conjuncts} responses, {len(atoms)} atoms, {dfa.n_states} states, {lines} MONA lines")
    print(f"MONA {mona_s:.3f} s; table from its listing {table_s:.3f} s; table {dfa.table.nbytes / 2**20:.1f} MiB")

    def cold():
        with tempfile.TemporaryDirectory() as folder:
            compiler._compile_canonical.cache_clear()
            return compiler._compile_canonical(text, folder)

    _, cold_s = best_of(args.repeat, cold)
    with tempfile.TemporaryDirectory() as folder:
        compiler._compile_canonical(text, folder)

        def warm():
            compiler._compile_canonical.cache_clear()
            return compiler._compile_canonical(text, folder)

        _, warm_s = best_of(args.repeat, warm)
    print(f"compile_formula: cold {cold_s:.3f} s (MONA, table, cache write), warm {warm_s:.3f} s (cache read)")

    if args.before:
        old = module_at(args.before, "safety_monitor/specs/compile.py", "compile_before")
        old_dfa, old_s = best_of(1, lambda: old._table_from_mona(output, atoms, text))
        same = (
            np.array_equal(old_dfa.table, dfa.table)
            and np.array_equal(old_dfa.accepting, dfa.accepting)
            and np.array_equal(old_dfa.rejecting_sink, dfa.rejecting_sink)
        )
        print(f"before ({args.before}): table from the listing {old_s:.1f} s; identical table: {same}")

    if args.monitor:
        monitor_cost(text)
    equivalence_figures(dfa, args)
    return 0


def monitor_cost(text: str) -> None:
    compiled = compile_property(Property("responses", "safety", text, trigger="p0"))
    auto, build_s = best_of(1, lambda: build_automaton(compiled))
    monitor = BatchMonitor([auto])
    rng = np.random.default_rng(0)
    frames = 20000
    values = np.zeros((frames, len(monitor.predicates)), dtype=bool)
    for col, name in enumerate(monitor.predicates):  # held values, flipping now and then
        flips = rng.random(frames) < (0.02 if name.startswith("p") else 0.05)
        values[:, col] = np.cumsum(flips) % 2 == 1
    _, run_s = best_of(3, lambda: monitor.run_matrix(values, events=False))
    print(
        f"monitor: build_automaton {build_s:.2f} s, {auto.n_states} states x {auto.next.shape[1]} letters, "
        f"{(auto.next.nbytes + auto.code.nbytes) / 2**20:.0f} MiB; batch {frames / run_s:,.0f} frames/s"
    )


def equivalence_figures(dfa, args) -> None:
    old = module_at(args.before, "safety_monitor/specs/equivalence.py", "equivalence_before") if args.before else None
    p16 = "G(" + " | ".join(f"p{i}" for i in range(16)) + ")"
    cases = [
        ("16 + 16 atoms", p16, p16.replace("p", "q"), False),  # the dense search: 2**32 letters
        (
            "K responses vs reordered",
            conjunction(args.conjuncts),
            " & ".join(reversed(conjunction(args.conjuncts).split(" & "))),
            True,
        ),
        (
            "K responses vs last weakened",
            conjunction(args.conjuncts),
            conjunction(args.conjuncts).rsplit(" & ", 1)[0]
            + f" & G(p{args.conjuncts - 1} -> F(q{args.conjuncts - 1} | p0))",
            True,
        ),
        ("K responses, disjoint atoms", conjunction(args.conjuncts), conjunction(args.conjuncts, "r", "s"), False),
    ]
    for name, fa, fb, run_old in cases:
        a, b = compiler.compile_formula(fa), compiler.compile_formula(fb)
        try:
            result, new_s = best_of(args.repeat, lambda a=a, b=b: equivalence.dfa_equivalence(a, b))
            answer = "equivalent" if result.equivalent else f"not equivalent, {len(result.trace)}-frame trace"
            classes = equivalence.letter_classes(a, b, result.atoms).size
        except SpecError as exc:
            t = cpu_s()
            try:
                equivalence.dfa_equivalence(a, b)
            except SpecError:
                pass
            new_s, answer, classes = cpu_s() - t, f"refused ({str(exc)[:60]}...)", "-"
        line = f"equiv {name}: {a.n_states} x {b.n_states} states, {classes} letter classes: {answer}, {new_s * 1000:.1f} ms"
        if old is not None and run_old:
            old_result, old_s = best_of(1, lambda a=a, b=b: old.dfa_equivalence(a, b))
            line += f"; before {old_s * 1000:.1f} ms, same answer: {answer_of(old_result) == answer_of(result)}"
        print(line)

    rng = random.Random(0)
    pairs = []
    for _ in range(200):
        fa, fb = (random_formula(rng, 3, ("a", "b", "c")) for _ in range(2))
        pairs.append((compiler.compile_formula(fa), compiler.compile_formula(fb)))
    results, new_s = best_of(args.repeat, lambda: [equivalence.dfa_equivalence(a, b) for a, b in pairs])
    line = f"equiv 200 random pairs over 3 atoms: {new_s * 1000:.1f} ms"
    if old is not None:
        old_results, old_s = best_of(args.repeat, lambda: [old.dfa_equivalence(a, b) for a, b in pairs])
        line += f"; before {old_s * 1000:.1f} ms, same answers: {list(map(answer_of, old_results)) == list(map(answer_of, results))}"
    print(line)


def answer_of(result) -> tuple:
    return result.equivalent, result.trace, result.accepted_by


def random_formula(rng: random.Random, depth: int, atoms) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(atoms)
    kind = rng.choice(["!", "&", "|", "->", "X", "G", "F", "U"])
    sub = lambda: random_formula(rng, depth - 1, atoms)  # noqa: E731
    if kind in ("&", "|", "->", "U"):
        return f"({sub()} {kind} {sub()})"
    return f"{kind}({sub()})" if kind != "!" else f"!({sub()})"


if __name__ == "__main__":
    sys.exit(main())
