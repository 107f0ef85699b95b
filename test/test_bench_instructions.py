"""The instruction-count benchmark (benchmarks/bench_instructions.py) counts a step's instructions without
start-up, and its twin's MuJoCo calls from callgrind's call graph, and says what is missing."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from benchmark_scripts import benchmark_script

pytest.importorskip("mujoco")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_instructions.py"
CALLS = ("mj_kinematics", "mj_collision", "mj_geomDistance")
LIB = "/venv/site-packages/mujoco/libmujoco.so.4.0.0"
# A callgrind output's shape (--compress-strings=no --compress-pos=no): the bindings' wrapper calls
# mj_kinematics and mj_forward, which calls mj_kinematics and mj_collision inside the library; the C kernels
# call mj_geomDistance, which calls a helper. Each call site: cfn=, calls=COUNT LINE, then LINE INCLUSIVE_IR.
CALLGRIND_OUT = f"""# callgrind format
version: 1
positions: line
events: Ir
summary: 900000

ob=/venv/site-packages/mujoco/_functions.cpython-311-x86_64-linux-gnu.so
fl=???
fn=0x00000000000c3fb0
0 72
cob={LIB}
cfi=???
cfn=mj_forward
calls=3 0
0 76473
cob={LIB}
cfi=???
cfn=mj_kinematics
calls=3 0
0 1779
0 24

ob={LIB}
fn=mj_forward
0 90
cfn=mj_kinematics
calls=3 0
0 1779
cfn=mj_collision
calls=3 0
0 40000

ob=/tree/safety_monitor/grounding/_geomath.cpython-311-x86_64-linux-gnu.so
fl=???
fn=entity_gaps
0 300
cob={LIB}
cfi=???
cfn=mj_geomDistance
calls=5 0
0 5000

ob={LIB}
fn=mj_geomDistance
0 4000
cfn=mju_dot3
calls=5 0
0 1000
"""


@pytest.fixture(scope="module")
def bench():
    with benchmark_script("bench_instructions") as module:
        yield module


def test_mujoco_calls_are_counted_where_entered_from_outside_the_library_with_all_they_call(bench):
    """The wrapper's 3 mj_kinematics (1,779 with all they call) and the kernels' 5 mj_geomDistance (5,000, its
    helper included) count; mj_forward is none of the calls, and the mj_kinematics and mj_collision it makes
    inside the library are part of it, not calls of the program's."""
    counted = bench.entered_from_outside(CALLGRIND_OUT, CALLS)
    assert counted.calls == {"mj_kinematics": 3, "mj_collision": 0, "mj_geomDistance": 5}
    assert counted.instructions == {"mj_kinematics": 1779, "mj_collision": 0, "mj_geomDistance": 5000}


def test_mujoco_calls_less_the_start_ups(bench):
    frames = bench.Calls({"mj_kinematics": 13}, {"mj_kinematics": 7779})
    start_up = bench.Calls({"mj_kinematics": 3}, {"mj_kinematics": 1779})
    assert frames - start_up == bench.Calls({"mj_kinematics": 10}, {"mj_kinematics": 6000})


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
