"""The instruction-count benchmark (benchmarks/bench_instructions.py) counts a step's instructions without
start-up, and says what is missing."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mujoco")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_instructions.py"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind (Debian package valgrind) is not installed")
def test_counts_a_steps_instructions_without_start_up_the_same_each_time():
    """40 frames are 2 % of the start-up subtracted from them: the count holds only if the start-up's own
    count repeats (it varied by that much while numpy's BLAS threads spun)."""
    counts = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, str(BENCH), "--frames", "40", "open_drawer"], capture_output=True, text=True, timeout=600
        )
        assert out.returncode == 0, out.stderr[-3000:]
        row = re.fullmatch(r"this tree +40 frames +([\d,]+) instructions a frame", out.stdout.strip())
        assert row, out.stdout
        counts.append(int(row[1].replace(",", "")))
    assert all(10_000 < count < 10_000_000 for count in counts), counts  # a step, not the interpreter's start-up
    assert abs(counts[0] - counts[1]) < 0.05 * counts[0], counts


def test_a_baseline_without_the_package_is_named(tmp_path):
    out = subprocess.run(
        [sys.executable, str(BENCH), "--baseline", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode != 0
    assert "no safety_monitor package there" in out.stderr or "valgrind is not installed" in out.stderr
