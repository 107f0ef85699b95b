"""The grounding benchmark's pause mode runs and reports one line per pause (the cold-frame figures in
benchmarks/README.md, Live latency, come from it)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mujoco")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_grounding.py"
LINE = re.compile(
    r"(asleep|spinning) +([\d.]+) ms before each (step|\d+ steps): Grounder\.step wall median +(\d+) us "
    r"p99 +(\d+) us, CPU median +(\d+) us mean +(\d+) us"
)


@pytest.mark.parametrize("spin", [False, True])
def test_idle_mode_times_each_pause(spin):
    out = subprocess.run(
        [sys.executable, str(BENCH), "--idle", "0", "1", "--frames", "60"] + (["--spin"] if spin else []),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [LINE.fullmatch(line) for line in out.stdout.splitlines()]
    assert all(rows) and [r[2] for r in rows] == ["0.0", "1.0"], out.stdout
    assert {r[1] for r in rows} == {"spinning" if spin else "asleep"} and {r[3] for r in rows} == {"step"}
    for r in rows:
        assert 0 < int(r[4]) <= int(r[5]) and int(r[6]) > 0 and int(r[7]) > 0


def agrees(ratio: float, num: float, den: float, *, num_digits: int, rel: float = 0.0) -> bool:
    """Whether a printed ratio (one decimal) is num / den within what printing them rounded off (`num` to
    `num_digits` decimals, `den` to one), and `rel` beside: on a fast machine a call time of 1.8 us printed to a
    tenth is already 3 % off, so a fixed relative tolerance would fail there and pass on a slow one."""
    half_num, half_den = 0.5 * 10.0**-num_digits, 0.05
    low = (num - half_num) / (den + half_den) * (1 - rel) - 0.05
    high = (num + half_num) / (den - half_den) * (1 + rel) + 0.05 if den > half_den else float("inf")
    return low <= ratio <= high


def test_idle_mode_pauses_before_each_burst_of_steps():
    out = subprocess.run(
        [sys.executable, str(BENCH), "--idle", "1", "--burst", "5", "--frames", "60"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    [row] = [LINE.fullmatch(line) for line in out.stdout.splitlines()]
    assert row and (row[1], row[2], row[3]) == ("asleep", "1.0", "5 steps"), out.stdout


def test_mujoco_mode_times_the_twins_calls_on_an_episode():
    out = subprocess.run(
        [sys.executable, str(BENCH), "--episodes", "open_drawer", "--mujoco", "--floor", "--stages"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    calls = dict(re.findall(r"^(mj_\w+) +([\d.]+) calls", out.stdout, re.M))
    assert set(calls) == {"mj_kinematics", "mj_collision", "mj_geomDistance"}, out.stdout
    assert 0 < float(calls["mj_collision"]) < 1.0  # only on frames where a moved geom may touch another
    assert float(calls["mj_kinematics"]) >= 1.0 and float(calls["mj_geomDistance"]) > 0
    assert re.search(r"^MuJoCo calls in all +[\d.]+ us per frame$", out.stdout, re.M), out.stdout
    floor = re.search(r"^interface floor +([\d.]+) us CPU per frame$", out.stdout, re.M)
    step = re.search(r"^all +\d+ frames +(\d+) us CPU per frame$", out.stdout, re.M)
    assert floor and step and 0 < float(floor[1]) < float(step[1]), out.stdout
    stages = dict(re.findall(r"^stage (.+?) +([\d.]+) us per frame +\d+%$", out.stdout, re.M))
    families = {"Grasp", "Fixture", "Contact", "Contamination", "Containment", "Skill", "JointLimit"}
    assert {f"{f} family" for f in families} | {"object motion tracks", "rest of the step"} < set(stages), out.stdout
    twin = next(float(v) for k, v in stages.items() if k.startswith("twin.compute"))
    mujoco_us = float(re.search(r"^MuJoCo calls in all +([\d.]+) us", out.stdout, re.M)[1])
    assert twin > mujoco_us  # the twin's calls are part of its compute
    ratio = float(re.search(r"^step / MuJoCo calls +([\d.]+) x$", out.stdout, re.M)[1])
    assert agrees(ratio, float(step[1]), mujoco_us, num_digits=0, rel=0.05), out.stdout
    assert sum(map(float, stages.values())) == pytest.approx(float(step[1]), abs=len(stages))  # the parts add up


def test_urdf_mode_times_the_workcell_and_the_urdf_arm_against_their_mujoco_calls():
    out = subprocess.run(
        [sys.executable, str(BENCH), "--urdf", "--frames", "60"], capture_output=True, text=True, timeout=240
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = re.findall(
        r"^(workcell|URDF arm) .* Grounder\.step CPU mean +([\d.]+) us median +[\d.]+ us; MuJoCo calls +([\d.]+) us "
        r"\(mj_kinematics ([\d.]+), mj_collision ([\d.]+), mj_geomDistance [\d.]+ per frame\); step / MuJoCo +([\d.]+)$",
        out.stdout,
        re.M,
    )
    assert [r[0] for r in rows] == ["workcell", "URDF arm"], out.stdout
    for _, step, calls, kinematics, collision, ratio in rows:
        # the twin's calls: kinematics every frame, collision on frames where a moved geom may touch another
        assert float(collision) <= 1.0 and float(kinematics) >= 1.0
        assert 0 < float(calls) < float(step) and agrees(float(ratio), float(step), float(calls), num_digits=1), (
            out.stdout
        )


def test_baseline_mode_measures_the_other_checkouts_twin_in_the_same_run(tmp_path):
    root = BENCH.parents[1]  # this checkout as its own baseline: the same twin measured twice
    out = subprocess.run(
        [sys.executable, str(BENCH), "--episodes", "open_drawer", "--mujoco", "--baseline", str(root)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    figure = dict(
        re.findall(r"^(baseline step|baseline MuJoCo calls|step / baseline calls) +([\d.]+)", out.stdout, re.M)
    )
    step = float(re.search(r"^all +\d+ frames +(\d+) us CPU per frame$", out.stdout, re.M)[1])
    assert len(figure) == 3, out.stdout
    assert agrees(
        float(figure["step / baseline calls"]), step, float(figure["baseline MuJoCo calls"]), num_digits=0, rel=0.05
    ), out.stdout
    assert float(figure["baseline step"]) > float(figure["baseline MuJoCo calls"]) > 0
    bad = subprocess.run(
        [sys.executable, str(BENCH), "--episodes", "open_drawer", "--mujoco", "--baseline", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and "no benchmarks/bench_grounding.py there" in bad.stderr
