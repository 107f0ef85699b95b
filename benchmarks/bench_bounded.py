"""Compile time and stepping speed of bounded formulas (issue 18), against unbounded tables.

Each formula is compiled in a fresh cache folder (no cached table), three times, and the fastest CPU
time (`time.process_time`, so other jobs on the machine matter less) and its wall time are printed.
Stepping: the same 200,000 random letters through each table with `TableDFA.run` (best of three), the loop every
table shares: the state count does not enter a step (one lookup in a dense table).

    .venv/bin/python benchmarks/bench_bounded.py [--rate 500] [--seconds 5]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from safety_monitor.specs import compile as compile_module
from safety_monitor.specs.compile import compile_formula


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=500.0)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    s = f"{args.seconds:g}s"
    formulas = [
        f"G(a -> F[<={s}] b)",
        f"G(a -> (!c U[<={s}] b))",
        f"G(a -> G[<={s}] !b)",
        f"G((q & !r) -> ((p -> (!r U[<={s}] (s & !r))) U r | G(p -> (!r U[<={s}] (s & !r)))))",  # bounded response after q until r
        "G(a -> F b)",  # unbounded, through MONA, for comparison
    ]
    compile_formula("a")  # imports, the parser and MONA's version check out of the figures
    rng = np.random.default_rng(0)
    for text in formulas:
        best_cpu, wall = float("inf"), 0.0
        for _ in range(3):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["SAFETY_MONITOR_CACHE_DIR"] = cache
                compile_module._compile_canonical.cache_clear()
                c0, w0 = time.process_time(), time.perf_counter()
                dfa = compile_formula(text, control_rate_hz=args.rate)
                cpu, w = time.process_time() - c0, time.perf_counter() - w0
            if cpu < best_cpu:
                best_cpu, wall = cpu, w
        letters = rng.integers(0, 1 << len(dfa.atoms), size=200_000).tolist()
        step_ns = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            dfa.run(letters)
            step_ns = min(step_ns, (time.perf_counter() - t0) / len(letters) * 1e9)
        print(
            f"{text:70s} states {dfa.n_states:6d}  compile {best_cpu * 1000:7.1f} ms CPU ({wall * 1000:7.1f} ms wall)"
            f"  step {step_ns:5.0f} ns"
        )


if __name__ == "__main__":
    main()
