"""Files the commands write (--report, --feedback, robot init's --out, sim's --record) on a disk that
refuses writes: one error line naming the file, exit code 2, no half-written file, and an earlier file of
that name kept (a bag keeps what was written).
On such a disk the temporary folder is full too: formulas still parse (lark's grammar cache is skipped),
and a formula MONA must compile is one error line (its input file has no room), not an internal error.

The disk is a file size limit (RLIMIT_FSIZE) on the command's process: writes past it fail as on a full
disk (with EFBIG rather than ENOSPC), without root or a mount, and pipes (its stderr) are not limited.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

from urdf_robots import arm_urdf

from safety_monitor.frames import PredicateSample
from safety_monitor.io.bag import BagWriter

SPEC = "predicates: [a, b]\nproperties:\n  - {name: p, category: collision_contact, formula: 'G(a -> b)'}\n"
PLAN = "initial: {a: false, b: true}\nmilestones:\n  - {a: true, b: false}\n"


def run_limited(
    argv: list[str], cwd, max_bytes: int | None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`safety-monitor ARGV` in `cwd`, its regular files limited to `max_bytes` each (None: no limit)."""

    def limit() -> None:
        if max_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return subprocess.run(
        [sys.executable, "-m", "safety_monitor.cli", *argv],
        cwd=cwd,
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def assert_one_error_line(run: subprocess.CompletedProcess, *words: str) -> None:
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert all(w in last for w in words), last


def no_temporary_files(folder) -> bool:
    return not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def test_a_report_that_cannot_be_written_keeps_the_earlier_one(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    with BagWriter(tmp_path / "bag") as w:
        for k in range(20):
            w.write_predicates(
                "/safety_monitor/predicates", PredicateSample({"a": k % 3 == 0, "b": k % 2 == 0}, 1.0 + k / 100, k)
            )
    argv = ["replay", "bag", "--from-predicates", "--specs", "spec.yaml", "--report", "report", "--quiet", "--no-plots"]
    first = run_limited(argv, tmp_path, None)
    assert first.returncode == 0, first.stderr
    earlier = {p.name: p.read_bytes() for p in (tmp_path / "report").iterdir()}
    assert {"report.json", "summary.md", "episodes.csv", "properties.csv"} <= set(earlier)

    second = run_limited(argv, tmp_path, 0)
    assert_one_error_line(
        second, "--report report:", "report/report.json: cannot write report", "the report is incomplete"
    )
    assert "1 rollout(s)" in second.stdout  # the scores were printed before the report was written
    assert {p.name: p.read_bytes() for p in (tmp_path / "report").iterdir()} == earlier
    assert no_temporary_files(tmp_path)


def test_feedback_that_cannot_be_written_keeps_the_earlier_file(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    (tmp_path / "plan.yaml").write_text(PLAN)
    (tmp_path / "feedback.json").write_text("an earlier run's feedback\n")
    run = run_limited(["plan", "plan.yaml", "--specs", "spec.yaml", "--feedback", "feedback.json"], tmp_path, 0)
    assert (tmp_path / "feedback.json").read_text() == "an earlier run's feedback\n"
    assert_one_error_line(run, "feedback.json: cannot write planner feedback", "nothing of it was written")
    assert no_temporary_files(tmp_path)


def test_robot_init_that_cannot_write_every_file_leaves_none(tmp_path):
    """robot.yaml (about 1.6 kB) and objects.yaml (1 kB) fit under the limit, thresholds.yaml (3.8 kB) not:
    the two are removed again, since the next `robot init` would refuse to overwrite them."""
    (tmp_path / "arm.urdf").write_text(arm_urdf(3, "none"))
    run = run_limited(["robot", "init", "--urdf", "arm.urdf", "--out", "robot"], tmp_path, 3000)
    assert list((tmp_path / "robot").iterdir()) == []
    assert_one_error_line(
        run, "robot/thresholds.yaml: cannot write robot description", "(robot.yaml, objects.yaml removed again)"
    )
    retry = run_limited(["robot", "init", "--urdf", "arm.urdf", "--out", "robot"], tmp_path, None)
    assert retry.returncode == 0, retry.stderr


def test_a_formula_mona_must_compile_with_no_room_for_its_input_is_one_error_line(tmp_path):
    """A fresh cache folder: the formula is compiled, and neither MONA's input nor the cache can be written."""
    (tmp_path / "cache").mkdir()
    argv = ["equiv", "G(a -> F b)", "G(!a | F b)"]
    run = run_limited(argv, tmp_path, 0, {"SAFETY_MONITOR_CACHE_DIR": str(tmp_path / "cache")})
    assert_one_error_line(run, "cannot run MONA on", "TMPDIR")
    assert list((tmp_path / "cache").rglob("*.tmp")) == []
    run = run_limited(argv, tmp_path, None, {"SAFETY_MONITOR_CACHE_DIR": str(tmp_path / "cache")})
    assert run.returncode == 0 and "equivalent" in run.stdout, run.stderr


def test_sim_recording_to_a_full_disk_stops_with_one_line(tmp_path):
    """The recorder's first refused write stops the run (as a refused event log does), and what was
    written stays; before, the recorder's callback raised inside rclpy's executor: a traceback."""
    run = run_limited(
        ["sim", "--fault", "none", "--episodes", "1", "--record", "rec", "--events", "events.jsonl"],
        tmp_path,
        200_000,
        {"ROS_HOME": str(tmp_path)},
    )
    assert_one_error_line(run, "cannot write the bag rec: File too large; run stopped", "message(s) not recorded")
    assert [p.name for p in (tmp_path / "rec").iterdir()] == ["rec.mcap"]
    assert (tmp_path / "rec" / "rec.mcap").stat().st_size > 0
