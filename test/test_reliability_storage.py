"""Storage faults of the monitor node: after each, every published event is in the log exactly once and
every line is whole. A separate monitor process (test_reliability_faults.Cell) fed predicate frames
whose events the test provokes on demand: `kill -9` at random moments (counted in events, seeded; a
default run takes 5 of the 20, SAFETY_MONITOR_ALL_KILLS=1 all), `.running` deleted before some kills,
SIGSTOP/SIGCONT, a full disk (a 64 KiB tmpfs, where the test runs as root) and the log deleted while
running. In-process nodes meet a simulated full disk (os.write failing part-way with ENOSPC), a
fallback file, a renamed log and a hold that overflows.

No assertion depends on how fast the machine is: each wait is a condition with a safety net only a
broken run reaches."""

import errno
import json
import os
import random
import signal
import subprocess
from collections import Counter

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from rclpy.time import Time  # noqa: E402
from test_reliability_faults import Cell  # noqa: E402
from two_property_specs import SPECS  # noqa: E402

from safety_monitor.io import messages as m  # noqa: E402

KILL_MOMENTS = random.Random(16).sample(range(1, 60), 20)  # events received before each kill -9
KILLS = KILL_MOMENTS if os.environ.get("SAFETY_MONITOR_ALL_KILLS") else KILL_MOMENTS[:5]


def lines_of(*paths):
    """Every record of these files; each line must parse and the file end with a newline (whole lines)."""
    out = []
    for path in paths:
        if path.exists():
            data = path.read_bytes()
            assert not data or data.endswith(b"\n"), f"{path}: torn last line {data[-80:]!r}"
            out += [json.loads(line) for line in data.splitlines()]
    return out


def _key(record):
    return json.dumps({k: v for k, v in record.items() if k not in ("wall_time", "pid")}, sort_keys=True)


def assert_logged_once(published, *paths):
    logged = Counter(_key(r) for r in lines_of(*paths))
    twice = [k for k, n in logged.items() if n > 1]
    assert not twice, f"logged more than once: {twice[:3]}"
    missing = [e for e in published if logged[_key(e)] != 1]
    assert not missing, f"{len(missing)} of {len(published)} published events not in the log: {missing[:3]}"


class Feeder:
    """Frames that each make one event: `a` alternates, so never_a opens and recovers frame by frame."""

    def __init__(self, cell):
        self.cell, self.i = cell, 0

    def __call__(self):
        self.i += 1
        self.cell.send(a=self.i % 2 == 1)

    def step(self):
        """One frame, and wait for its event: what the monitor holds is then what the test sent."""
        before = len(self.cell.events)
        self()
        self.cell.spin_until(lambda: len(self.cell.events) > before)

    def until_events(self, n):
        """Keep frames coming until `n` more events have been received."""
        target = len(self.cell.events) + n
        self.cell.spin_until(lambda: len(self.cell.events) >= target, each=self)


@pytest.fixture
def cell(tmp_path):
    c = Cell(tmp_path)
    try:
        yield c
    finally:
        c.close()


def test_kill9_at_random_moments_keeps_every_event_once_and_each_restart_says_state_lost(cell):
    running = cell.tmp / "events.jsonl.running"
    feed = Feeder(cell)
    cell.start()
    for n, moment in enumerate(KILLS):
        feed.until_events(moment)
        if n % 2:  # restart detection must not need the `.running` marker
            running.unlink()
        dead = cell.proc.pid
        cell.kill()
        cell.start()  # cuts a torn last line (a batch the kill cut short, never published)
        cell.spin_until(lambda: any(e["kind"] == "state_lost" and e["previous_pid"] == dead for e in cell.events))
        assert_logged_once(cell.events, cell.log)
    feed.until_events(3)
    cell.kill(signal.SIGINT)  # a clean stop: the next start is not a loss
    assert cell.proc.returncode == 0 and not running.exists()
    assert lines_of(cell.log)[-1]["kind"] == "monitor_stopped"
    assert_logged_once(cell.events, cell.log)
    clean = cell.proc.pid
    cell.start()
    pid = cell.proc.pid  # its heartbeat carries its summary once it has published one
    cell.spin_until(lambda: cell.beat_summary.get(pid, "starting") != "starting")
    assert "state lost" not in cell.beat_summary[pid]
    assert not any(e["kind"] == "state_lost" and e["previous_pid"] == clean for e in cell.events)
    assert [r["kind"] for r in lines_of(cell.log)[-2:]] == ["monitor_stopped", "monitor_started"]


def test_sigstop_and_sigcont_lose_no_event(cell):
    feed = Feeder(cell)
    cell.start()
    feed.until_events(5)
    cell.kill(signal.SIGSTOP)
    for _ in range(30):  # frames queue up (or are lost) while it is stopped
        feed()
    cell.kill(signal.SIGCONT)
    cell.send(a=True, b=True)  # opens b_then_not_a: the last event this test waits for
    cell.spin_until(lambda: any(e["kind"] == "opened" and e["property"] == "b_then_not_a" for e in cell.events))
    assert_logged_once(cell.events, cell.log)


def test_a_log_deleted_while_running_is_reopened_with_a_record_and_loses_nothing(cell):
    feed = Feeder(cell)
    cell.start()
    feed.until_events(6)
    # stop feeding: the watchdog's blind events are the last before the deletion
    cell.spin_until(lambda: {e["property"] for e in cell.events if e["kind"] == "blind"} == {"never_a", "b_then_not_a"})
    before = list(cell.events)
    assert_logged_once(before, cell.log)
    cell.log.unlink()
    feed.until_events(8)  # seeing, then opened/recovered: all made after the deletion
    after = cell.events[len(before) :]
    cell.spin_until(lambda: cell.log.exists() and any(r["kind"] == "log_reopened" for r in lines_of(cell.log)))
    records = lines_of(cell.log)
    assert records[0]["kind"] == "log_reopened" and records[0]["reason"] == "deleted" and records[0]["missing"] == 0
    earlier = {_key(e) for e in before}
    rewritten = [r for r in records[1:] if _key(r) in earlier]  # what the deleted file took last, written again
    assert records[1 : 1 + len(rewritten)] == rewritten and len(rewritten) < len(before)
    assert_logged_once(after, cell.log)
    cell.spin_until(lambda: cell.log_state == "OK" and cell.level("event log")[0] == cell.T.DiagnosticStatus.OK)


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs (root only): the log's disk, filled on demand."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the in-process tests simulate a full disk instead")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("this machine does not let the test mount a tmpfs")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk):
    """Write a filler file until the tmpfs refuses more."""
    with open(disk / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 1024)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


@pytest.mark.parametrize("fallback", [False, True], ids=["held", "fallback"])
def test_a_full_disk_is_loud_and_loses_nothing(cell, small_disk, fallback):
    S = cell.T.DiagnosticStatus
    cell.log = small_disk / "events.jsonl"
    spare = cell.tmp / "fallback.jsonl"
    cell.params = ["history_frames:=20"]  # short counterexamples: what is held fits the small disk once freed
    if fallback:
        cell.params.append(f"events_log_fallback:={spare}")
    feed = Feeder(cell)
    cell.start()
    feed.until_events(4)
    # the monitor idle (its watchdog's blind events: every frame sent is taken), so the filler gets the rest
    cell.spin_until(lambda: {e["property"] for e in cell.events if e["kind"] == "blind"} == {"never_a", "b_then_not_a"})
    fill(small_disk)
    want = "FALLBACK" if fallback else "HOLDING"
    # frames until it shows: the log's last page takes what fits first, and with a fallback a small batch
    # may still fit there after a large one went to the fallback (OK again, rightly, until that page is full)
    cell.spin_until(
        lambda: (
            (cell.log_state or "").startswith(want)
            and cell.level("event log")[0] == S.ERROR
            and "No space left on device" in cell.level("event log")[1]
            and cell.level("monitor")[0] == S.ERROR
        ),
        each=feed.step,
    )
    published = len(cell.events)
    for _ in range(5):  # events keep being published (one frame at a time: a few KiB held, not what a burst makes)
        feed.step()
    assert len(cell.events) >= published + 5
    assert "cannot write the event log" in (cell.tmp / "monitor1.log").read_text()  # stderr said so at once
    (small_disk / "filler").unlink()
    if fallback:
        assert_logged_once(cell.events, cell.log, spare)
        feed.until_events(1)  # the next write goes to the log again
    cell.spin_until(lambda: cell.log_state == "OK")  # held events written within a diagnostics period
    cell.kill(signal.SIGINT)
    assert cell.proc.returncode == 0 and not (small_disk / "events.jsonl.running").exists()
    assert_logged_once(cell.events, cell.log, spare)
    assert lines_of(cell.log)[-1]["kind"] == "monitor_stopped"


def test_sim_on_a_full_disk_exits_2_with_one_line_and_a_whole_log(small_disk, tmp_path):
    import sys

    log = small_disk / "events.jsonl"
    line = '{"kind": "opened", "property": "never_a", "pad": "%s"}\n'
    log.write_text(line % ("x" * (4096 - len(line % ""))))  # a previous run's line, filling a whole page
    fill(small_disk)
    env = {**os.environ, "ROS_HOME": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-m", "safety_monitor.cli", "sim", "--events", str(log), "--episodes", "1", "--fault", "none"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("safety-monitor sim: error: cannot write the event log") and "No space left" in last
    assert lines_of(log)[0]["kind"] == "opened"  # whole lines only
    assert not (small_disk / "events.jsonl.running").exists()


# ------------------------------------------------------------------------------------- in-process
class InProcess:
    """A monitor node driven by `on_sample` on sim time, with what it publishes and a switchable full disk."""

    def __init__(self, tmp_path, monkeypatch, **params):
        from safety_monitor.io import cdr
        from safety_monitor.nodes.monitor_node import MonitorNode

        self.log = tmp_path / "events.jsonl"
        specs = tmp_path / "specs.yaml"
        specs.write_text(SPECS)
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = MonitorNode(
            subscribe_predicates=False,
            context=self.context,
            parameter_overrides=[
                Parameter("specs", value=str(specs)),
                Parameter("events_log", value=str(self.log)),
                Parameter("use_sim_time", value=True),
                *(Parameter(k, value=v) for k, v in params.items()),
            ],
        )
        self.published = []
        real_events = cdr.write_events

        def spy(records, t, *rest):
            self.published.extend(json.loads(json.dumps(records)))
            return real_events(records, t, *rest)

        monkeypatch.setattr(cdr, "write_events", spy)
        self.full = False
        self.partial_writes = 0
        real_write = os.write

        def write(fd, data):
            if self.full and os.readlink(f"/proc/self/fd/{fd}") == str(self.log):
                if len(data) > 1 and self.partial_writes % 2 == 0:  # a disk filling up mid-write
                    self.partial_writes += 1
                    return real_write(fd, bytes(data[: len(data) // 2]))
                self.partial_writes += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_write(fd, data)

        monkeypatch.setattr(os, "write", write)
        self.frame = 0

    def frames(self, n):
        clock = self.node.get_clock()
        for _ in range(n):
            t = 1.0 + self.frame / 500
            clock.set_ros_time_override(Time(nanoseconds=round(t * 1e9)))
            self.node.on_sample(m.PredicateSample({"a": self.frame % 2 == 0, "b": False}, t, self.frame))
            self.frame += 1

    @property
    def health(self):
        return self.node.event_log.health

    def close(self):
        self.node.destroy_node()
        self.context.try_shutdown()


@pytest.fixture
def inproc(tmp_path, monkeypatch, request):
    params = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in getattr(request, "param", {}).items()}
    h = InProcess(tmp_path, monkeypatch, **params)
    try:
        yield h
    finally:
        h.close()


@pytest.mark.parametrize("inproc", [{"events_log_hold": 8}], indirect=True)
def test_a_simulated_full_disk_holds_whole_lines_then_writes_them(inproc, capfd):
    from safety_monitor.io.messages import ERROR

    h = inproc
    h.frames(4)
    h.full = True
    h.frames(6)
    assert str(h.health) == "HOLDING 6" and h.partial_writes >= 2
    assert len(h.published) == 10  # published all the same
    lines_of(h.log)  # the write cut short was cut back: whole lines only
    h.node._on_period()
    assert h.node._summary[0] == ERROR and "HOLDING 6" in h.node._summary[1] and "No space left" in h.node._summary[1]
    assert "cannot write the event log" in capfd.readouterr().err
    h.full = False
    h.node._on_period()  # the periodic look writes what is held
    assert str(h.health) == "OK"
    assert_logged_once(h.published, h.log)

    h.full = True
    h.frames(12)  # more than events_log_hold: the newest 4 are dropped, counted
    assert str(h.health) == "LOST 4"
    h.full = False
    h.frames(1)  # the next batch writes the held ones first, an events_lost record, then itself
    assert str(h.health) == "OK"
    records = lines_of(h.log)
    (lost,) = [r for r in records if r["kind"] == "events_lost"]
    assert lost["events"] == 4
    assert_logged_once(h.published[:18] + h.published[22:], h.log)


@pytest.mark.parametrize("inproc", [{"events_log_fallback": "{tmp}/fallback.jsonl"}], indirect=True)
def test_a_full_disk_with_a_fallback_writes_there_and_comes_back(inproc, tmp_path):
    h = inproc
    h.frames(3)
    h.full = True
    h.frames(5)
    assert str(h.health) == "FALLBACK"
    assert len(lines_of(tmp_path / "fallback.jsonl")) == 5
    h.full = False
    h.frames(2)
    assert str(h.health) == "OK"
    assert_logged_once(h.published, h.log, tmp_path / "fallback.jsonl")


def test_a_renamed_log_is_reopened_at_its_path_and_nothing_is_missing(inproc, tmp_path):
    h = inproc
    h.frames(3)
    rotated = tmp_path / "events.jsonl.1"
    h.log.rename(rotated)  # as logrotate does
    h.frames(3)
    records = lines_of(h.log)
    assert records[0]["kind"] == "log_reopened" and records[0]["reason"] == "moved away"
    assert h.node.event_log.reopened == 1 and str(h.health) == "OK"
    assert_logged_once(h.published, rotated, h.log)
