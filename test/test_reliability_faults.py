"""Fault tests of the monitor node as a separate process on this session's random ROS domain, fed
by hand-made predicate frames: kill -9 keeps every published event whole in the log and a restart
says its state was lost; SIGSTOP silences the heartbeat and SIGCONT resumes its sequence; stopped,
frozen, delayed, lossy and backwards-running predicates never leave a property reported satisfied.

No assertion depends on how fast the machine is: waits are conditions with a safety net only a broken
run reaches, elapsed times are bounded from below only, and the heartbeat's silence is read from its
stamps, not from how many beats a spin happened to receive."""

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid

import pytest

rclpy = pytest.importorskip("rclpy")

from two_property_specs import PROPS, SPECS  # noqa: E402

from safety_monitor.io import messages as m  # noqa: E402
from safety_monitor.nodes import qos  # noqa: E402
from safety_monitor.pipeline.markers import END, START, EpisodeMarker, marker_msg  # noqa: E402

TIMEOUT_S = 0.5  # predicates_timeout_s and predicates_frozen_s of the monitor under test
WAIT_S = 120.0  # only a broken run waits this long for a condition: a slow, loaded machine passes far below it


def process_state(pid):
    """The kernel's one-letter state of a process (T: stopped), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


class Cell:
    """A monitor process and a probe node (in this process) that feeds and watches it."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.ns = "/r" + uuid.uuid4().hex[:8]
        self.hw = self.ns.strip("/")
        self.log = tmp_path / "events.jsonl"
        self.specs = tmp_path / "specs.yaml"
        self.specs.write_text(SPECS)
        self.params = []  # more `name:=value` parameters of the monitor
        self.proc = None
        self.starts = 0
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
        node = self.node = rclpy.create_node("probe", namespace=self.ns, context=self.context)
        T = self.T = m.rclpy_types()
        self.events, self.diag, self.beats = [], [], []
        self.log_state = None  # the last heartbeat's `event_log` value
        self.beat_summary = {}  # pid -> its last heartbeat's summary message
        node.create_subscription(
            T.DiagnosticArray, "safety_monitor/events", lambda msg: self.events.extend(m.decode_events(msg)), qos.EVENTS
        )
        node.create_subscription(T.DiagnosticArray, "/diagnostics", self._on_diag, qos.DIAGNOSTICS)
        node.create_subscription(T.DiagnosticArray, "safety_monitor/heartbeat", self._on_beat, qos.DIAGNOSTICS)
        self.pred_pub = node.create_publisher(T.DiagnosticArray, "safety_monitor/predicates", qos.PREDICATES)
        self.marker_pub = node.create_publisher(T.DiagnosticArray, "safety_monitor/episode", qos.EPISODE)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(node)
        self.t = 1.0
        self.frame = 0  # the monitor's frame count, from its summary status

    def _on_diag(self, msg):
        self.diag.extend((s.name.split(": ")[-1], s.level, s.message) for s in msg.status if s.hardware_id == self.hw)
        for s in msg.status:
            if s.hardware_id == self.hw and s.name.endswith(": monitor"):
                self.frame = next(int(kv.value) for kv in s.values if kv.key == "frame")

    def _on_beat(self, msg):
        for s in msg.status:
            values = {kv.key: kv.value for kv in s.values}
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9  # the monitor's clock when it beat
            self.beats.append((int(values["pid"]), int(values["seq"]), s.level, stamp))
            self.log_state = values.get("event_log")
            self.beat_summary[int(values["pid"])] = s.message

    def start(self):
        self.starts += 1
        self.frame = 0
        env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}
        args = [sys.executable, "-m", "safety_monitor.nodes.monitor_node", "--ros-args", "-r", f"__ns:={self.ns}"]
        for p in (
            f"specs:={self.specs}",
            f"events_log:={self.log}",
            f"predicates_timeout_s:={TIMEOUT_S}",
            f"predicates_frozen_s:={TIMEOUT_S}",
            "diagnostics_period_s:=0.2",
            "heartbeat_period_s:=0.1",
            *self.params,
        ):
            args += ["-p", p]
        out = open(self.tmp / f"monitor{self.starts}.log", "w")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.spin_until(lambda: self.pred_pub.get_subscription_count() >= 1 and self.beats_of(self.proc.pid))

    def beats_of(self, pid):
        return [seq for p, seq, _, _ in self.beats if p == pid]

    def beat_stamps(self, pid):
        return [stamp for p, _, _, stamp in self.beats if p == pid]

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGINT):
            self.proc.wait(timeout=WAIT_S)

    def send(self, a, b=False, t=None, publish=True):
        self.t = self.t + 0.002 if t is None else t
        if publish:
            sample = m.PredicateSample(values={"a": a, "b": b}, t=self.t)
            self.pred_pub.publish(m.predicates_msg(self.T, sample))
        self.spin(0.0)

    def spin(self, seconds):
        end = time.monotonic() + seconds
        self.executor.spin_once(timeout_sec=0.0)
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=min(0.02, max(0.0, end - time.monotonic())))

    def spin_until(self, condition, each=None):
        """Spin until `condition()`; `each()` (if given) runs before every spin, e.g. to keep frames coming."""
        end = time.monotonic() + WAIT_S
        while not condition():
            assert time.monotonic() < end, f"timed out; monitor output: {self.output()}"
            assert self.proc is None or self.proc.poll() is None, f"monitor exited: {self.output()}"
            if each is not None:
                each()
            self.executor.spin_once(timeout_sec=0.02)
        return time.monotonic()

    def output(self):
        return (self.tmp / f"monitor{self.starts}.log").read_text()[-2000:]

    def level(self, name):
        levels = [(lvl, msg) for n, lvl, msg in self.diag if n == name]
        return levels[-1] if levels else (None, "")

    def wait_level(self, name, level):
        return self.spin_until(lambda: self.level(name)[0] == level)

    def logged(self):
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()  # a clean leave: its participant says goodbye
            try:
                self.proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._forget_monitors()
        self.executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        self.node.destroy_node()
        self.context.try_shutdown()

    def _forget_monitors(self):
        """Spin until no monitor's publisher is left in this participant's graph. A SIGKILLed monitor's
        participant stays in it until its lease runs out (about 20 s), and destroying this node while Fast DDS
        drops that participant crashed the xdist worker twice (a segfault in rmw_destroy_node, under load, when
        the test's teardown fell at the lease's end). Waiting for the drop keeps the two apart; a graph that
        never forgets is not this test's subject, so the wait ends at WAIT_S either way."""
        end = time.monotonic() + WAIT_S
        while self.node.count_publishers("safety_monitor/heartbeat") and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.1)
        self.spin(0.5)  # the listener that updated the graph returns


@pytest.fixture
def cell(tmp_path):
    c = Cell(tmp_path)
    try:
        c.start()
        yield c
    finally:
        c.close()


class Clock:
    """A console's clock that moves only when told: silence is read from it, not from how fast a spin went."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def console(cell):
    """An alerts board fed from the probe node, on a clock the test moves."""
    from safety_monitor.nodes.alerts import AlertBoard, subscribe

    clock = Clock()
    board = AlertBoard(clock=clock)
    subscribe(cell.node, board, "", lambda: None)
    return board, clock


def spin_after_exit(cell, condition):
    """Spin the probe until `condition()`: the monitor has exited, so Cell.spin_until (which fails on that) won't do."""
    end = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < end, f"timed out; monitor output: {cell.output()}"
        cell.executor.spin_once(timeout_sec=0.02)


def test_a_clean_stop_says_stopped_with_its_open_violations_and_the_console_shows_stopped_not_silent(cell):
    """A monitor stopped by SIGINT or SIGTERM (a launch's shutdown) beat no last word, so the console, once
    the beats ended, called it SILENT (dead, paused or cut off). Its last heartbeat now says `stopped`, with
    the violations open at that moment, and the console shows STOPPED however long the silence after it."""
    from safety_monitor.enums import Heard

    S = cell.T.DiagnosticStatus
    board, clock = console(cell)
    pid = cell.proc.pid
    cell.spin_until(lambda: board.monitor()["pid"] == pid)
    assert board.monitor()["state"] is Heard.ALIVE
    cell.send(a=True)  # never_a opens and is still open at the stop
    cell.spin_until(lambda: any(e["kind"] == "opened" for e in cell.events))
    cell.kill(signal.SIGTERM)
    assert cell.proc.wait(timeout=WAIT_S) == 0
    spin_after_exit(cell, lambda: board.monitor()["state"] is Heard.STOPPED)
    clock.now += 3600.0
    mon = board.monitor()
    assert mon["state"] is Heard.STOPPED and not mon["alive"] and mon["level"] == "ERROR"
    assert board.lines()[0] == (
        f"MONITOR pid {pid} STOPPED 3600.0 s ago (a clean stop); last: ERROR stopped with 1 open: never_a "
        "[1 violation opened so far]"
    )
    spin_after_exit(cell, lambda: "stopped" in cell.level("monitor")[1])  # /diagnostics: the same last word
    assert cell.level("monitor") == (S.ERROR, "stopped with 1 open: never_a")


def test_kill9_keeps_every_published_event_whole_and_the_restart_says_its_state_was_lost(cell):
    from safety_monitor.enums import Heard

    S = cell.T.DiagnosticStatus
    board, clock = console(cell)
    for i in range(40):  # a on every 4th frame: never_a opens and recovers ten times
        cell.send(a=i % 4 == 0)
    cell.spin_until(lambda: len(cell.events) >= 12)
    cell.spin_until(lambda: board.monitor()["pid"] == cell.proc.pid)
    cell.kill()  # mid-run: no clean shutdown, the trace is left open
    spin_after_exit(cell, lambda: True)
    clock.now += 3600.0
    assert board.monitor()["state"] is Heard.SILENT  # a death stays silence, never a stop
    published = [dict(e) for e in cell.events]
    logged = [r for r in cell.logged() if r["kind"] != "monitor_started"]  # every line parses: none is torn
    assert published == logged[: len(published)]  # every event published before the kill was logged
    assert (cell.tmp / "events.jsonl.running").exists()

    with open(cell.log, "a") as f:  # a write the kill interrupted: never published, cut on restart
        f.write('{"kind": "opened", "prop')
    cell.events.clear()
    cell.diag.clear()
    cell.start()
    cell.spin_until(lambda: any(e["kind"] == "state_lost" for e in cell.events))
    lost = next(e for e in cell.events if e["kind"] == "state_lost")
    assert lost["torn_bytes"] == len('{"kind": "opened", "prop') and isinstance(lost["previous_pid"], int)
    # wait for the new monitor's own status: a status the killed one sent may still arrive late
    cell.spin_until(lambda: "state lost" in cell.level("monitor")[1])
    assert cell.level("monitor")[0] == S.ERROR
    while cell.frame == 0:  # a dead monitor's subscription may still count as matched: send until seen
        cell.send(a=False)
        cell.spin_until(lambda: cell.level("monitor")[0] is not None)
        cell.spin(0.1)
    cell.spin(0.3)  # after a restart nothing is claimed satisfied, even on fresh predicates
    assert all(cell.level(p)[0] == S.STALE for p in PROPS) and cell.level("monitor")[0] == S.ERROR
    logged = cell.logged()
    assert [r["kind"] for r in logged[-2:]] == ["monitor_started", "state_lost"]

    # the rollout ends; the next one re-arms the monitor
    cell.spin_until(lambda: cell.marker_pub.get_subscription_count() >= 1)
    cell.marker_pub.publish(marker_msg(cell.T, EpisodeMarker(END, 0, cell.t, frames=1, succeeded=True)))
    cell.spin(0.3)
    assert cell.level("monitor")[0] == S.ERROR
    cell.marker_pub.publish(marker_msg(cell.T, EpisodeMarker(START, 1, cell.t + 0.001)))
    # frames until the monitor is OK: the marker, on its own topic, may be taken after a frame sent with it
    cell.spin_until(lambda: cell.level("monitor")[0] == S.OK, each=lambda: cell.send(a=False))
    assert all(cell.level(p)[0] == S.OK for p in PROPS)

    cell.kill(signal.SIGINT)  # a clean stop marks the run finished: the next start is not a loss
    assert cell.proc.returncode == 0 and not (cell.tmp / "events.jsonl.running").exists()


def test_sigstop_silences_the_heartbeat_sigcont_resumes_its_sequence_a_restart_starts_anew(cell):
    pid = cell.proc.pid
    cell.spin_until(lambda: len(cell.beats_of(pid)) >= 3)
    seqs = cell.beats_of(pid)
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    cell.kill(signal.SIGSTOP)
    cell.spin_until(lambda: process_state(pid) == "T")  # stopped: it reads no clock from here on
    paused = time.time()
    cell.spin(1.0)  # ten periods: a live monitor would have beaten
    resumed = time.time()
    cell.kill(signal.SIGCONT)
    cell.spin_until(lambda: sum(stamp >= resumed for stamp in cell.beat_stamps(pid)) >= 3)
    assert not any(paused <= stamp < resumed for stamp in cell.beat_stamps(pid))  # not one beat while stopped
    after = cell.beats_of(pid)
    assert after == sorted(after) and after[-1] > seqs[-1]  # the same run: its sequence continues

    cell.kill()
    launched = time.monotonic()
    cell.start()
    new = cell.beats_of(cell.proc.pid)
    # another process, counting from 0: its first beat received is no later than its age in periods
    assert cell.proc.pid != pid and new[0] <= (time.monotonic() - launched) / 0.1 + 1


def test_stopped_frozen_delayed_and_backwards_predicates_never_report_satisfied(cell):
    S = cell.T.DiagnosticStatus
    for _ in range(5):
        last_sent = time.monotonic()  # the monitor hears the last frame after this
        cell.send(a=False)
    cell.wait_level("monitor", S.OK)
    # the estimator stops publishing: STALE, and not before the limit
    assert cell.wait_level("monitor", S.STALE) - last_sent >= TIMEOUT_S
    cell.spin_until(lambda: all(cell.level(p)[0] == S.STALE for p in PROPS))
    advanced = time.monotonic()  # the last advancing stamp: the monitor hears it after this
    cell.send(a=False)
    cell.wait_level("monitor", S.OK)

    t = cell.t  # frames keep coming with a stamp that no longer advances
    frozen_seen = cell.spin_until(lambda: "frozen" in cell.level("monitor")[1], each=lambda: cell.send(a=False, t=t))
    assert cell.level("monitor")[0] == S.STALE and frozen_seen - advanced >= TIMEOUT_S
    assert {e["property"] for e in cell.events if e["kind"] == "blind"} == set(PROPS)
    cell.send(a=False)
    cell.wait_level("monitor", S.OK)

    cell.spin(1.0)  # one stream delayed beyond the limit, then arriving late in a burst
    cell.spin_until(lambda: cell.level("monitor")[0] == S.STALE)
    for _ in range(10):
        cell.send(a=False)
    cell.wait_level("monitor", S.OK)

    drop = random.Random(7)  # 10 % of frames lost: fewer frames, never a stale or false verdict
    blind_before = len([e for e in cell.events if e["kind"] == "blind"])
    diag_from = len(cell.diag)
    sent = []
    for _ in range(200):
        cell.send(a=False, publish=drop.random() >= 0.1)
        sent.append(time.monotonic())
        cell.spin(0.005)
    # fresh frames until the summary is OK again (a period without losses), before the wall-clock limit
    cell.spin_until(lambda: cell.level("monitor")[0] == S.OK, each=lambda: cell.send(a=False))
    gaps = [b - a for a, b in zip(sent, sent[1:])]
    starved = any(n == "monitor" and "no advancing predicates for" in msg for n, _, msg in cell.diag[diag_from:])
    if max(gaps) < TIMEOUT_S / 2 and not starved:  # else this process or the monitor stalled past the limit (a
        assert len([e for e in cell.events if e["kind"] == "blind"]) == blind_before  # loaded machine): right
    assert not any(e["kind"] == "opened" for e in cell.events)

    last = cell.t  # the sim clock jumps back by one second
    cell.send(a=True, t=last - 1.0)  # a violation stamped in the past is never stepped
    cell.wait_level("monitor", S.ERROR)
    assert "backwards" in cell.level("monitor")[1]
    cell.spin_until(lambda: all(cell.level(p)[0] == S.STALE for p in PROPS))
    for i in range(5):  # still before the jump: dropped, still unknown
        cell.send(a=True, t=last - 0.9 + 0.002 * i)
    cell.spin(0.3)
    assert cell.level("monitor")[0] == S.ERROR and not any(e["kind"] == "opened" for e in cell.events)
    cell.send(a=False, t=last + 0.002)  # time passes the last stepped frame: verdicts again
    cell.wait_level("monitor", S.OK)
    assert all(cell.level(p)[0] == S.OK for p in PROPS)
    assert not any(e["kind"] == "opened" for e in cell.events)


def test_the_console_stops_showing_a_dead_monitors_open_violations_as_open():
    from safety_monitor.nodes.alerts import AlertBoard

    board = AlertBoard()
    opened = {"property": "never_a", "kind": "opened", "frame": 3, "t": 1.0, "rollout": 0, "robot": "r1", "episode": 1}
    other = {**opened, "robot": "r2"}
    board.update([opened, other, {"property": "b_then_not_a", "kind": "blind", "frame": 4, "robot": "r1"}])
    board.update(
        [
            {
                "property": "*",
                "kind": "state_lost",
                "frame": None,
                "t": None,
                "rollout": None,
                "robot": "r1",
                "previous_pid": 12,
                "previous_started": 0.0,
                "torn_bytes": 0,
            }
        ]
    )
    assert [e["robot"] for e in board.open.values()] == ["r2"] and not board.blind
    assert [e["robot"] for e in board.snapshot()["lost"]] == ["r1"]
    assert any(line.startswith("STATE LOST") and "r1" in line for line in board.lines())


@pytest.mark.parametrize(
    "content, cut",
    [(b"", 0), (b'{"a": 1}\n', 0), (b'{"a": 1}\n{"b', 3), (b"x" * 200_000, 200_000), (b"y\n" + b"x" * 70_000, 70_000)],
)
def test_a_torn_last_line_is_cut_back_to_the_last_whole_line(tmp_path, content, cut):
    from safety_monitor.nodes.event_log import cut_torn_line

    log = tmp_path / "events.jsonl"
    log.write_bytes(content)
    assert cut_torn_line(log) == cut
    assert log.read_bytes() == content[: len(content) - cut]
