"""The latency benchmark end to end at a low rate: every violation's event comes back timed, split into
in and out, from a stack the driver started as monitor.launch.py would (so the figures recorded in
benchmarks/README.md stay measurable as the nodes change)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_latency.py"


@pytest.mark.parametrize("layout", ["one_process", "separate"])
def test_low_rate_run_times_every_event(layout):
    # warm-up 4 s: in two processes the estimator-monitor link is discovered on its own (usually 0.1-0.3 s,
    # sometimes ~3 s), after the driver has seen its own subscribers
    out = subprocess.run(
        [sys.executable, str(BENCH), "--seconds", "2", "--rate", "50", "--warmup", "4", "--layout", layout],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["layout"] == layout and result["cpu_cores_total"] > 0
    assert result["node_frame_ms_p50"] > 0  # the estimator's own load report reached the driver
    for kind in ("opened", "recovered"):
        r = result[kind]
        assert r["events"] == 2, result  # 2 s at 50 Hz: two force periods of 50 frames, each opens and recovers
        assert 0 < r["p50_ms"] <= r["p99_ms"] <= r["max_ms"], result
        assert r["in_p50_ms"] > 0 and r["out_p50_ms"] > 0, result  # the log's wall time splits each latency
