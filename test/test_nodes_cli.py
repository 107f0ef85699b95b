"""`safety-monitor alerts` (board, text, JSON over a live topic or from a recorded event log) and the
`sim` live-run CLI's checks and summary."""

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from safety_monitor.cli import main
from safety_monitor.cli.nodes import summarize, summary_lines
from safety_monitor.enums import MonitorState
from safety_monitor.nodes.alerts import CUT_LOG, NO_MONITOR, AlertBoard, counterexample_lines

WAIT_S = 120.0  # only a broken run waits this long for a condition: a slow, loaded machine passes far below it
ROOT = Path(__file__).resolve().parents[1]

SPECS = """
predicates: [a, b]
properties:
  - name: never_a
    category: action_onset
    formula: "G(b -> !a)"
    recovery: "F(!a)"
"""


@pytest.fixture(scope="module")
def monitor_events(tmp_path_factory):
    """Real monitor events: b rises at frame 1, never_a opens at frame 3 and recovers at frame 4."""
    from safety_monitor.monitor.live import SpecSetMonitor

    path = tmp_path_factory.mktemp("specs") / "specs.yaml"
    path.write_text(SPECS)
    monitor = SpecSetMonitor.from_spec_file(path)
    return [
        e
        for i, (a, b) in enumerate([(False, False), (False, True), (False, True), (True, True), (False, True)])
        for e in monitor.step({"a": a, "b": b}, 1.0 + 0.002 * i)
    ]


@pytest.fixture(scope="module")
def events(monitor_events):
    """The same events as the monitor node logs and publishes them."""
    return json.loads(json.dumps([{**e.to_json(), "rollout": 0, "robot": "r1"} for e in monitor_events]))


def test_board_tracks_open_violations_and_shows_the_counterexample(events):
    board = AlertBoard(recent=5)
    board.update(events[:1])
    assert [e["property"] for e in board.open.values()] == ["never_a"]
    text = "\n".join(board.lines())
    assert "OPEN VIOLATIONS (1)" in text and "never_a opened at frame 3" in text
    lines = counterexample_lines(board.selected())
    assert "frames 1..3, trigger at frame 1" in lines and "a  1-2 false, 3 true" in lines and "b  1-3 true" in lines
    board.update(events[1:])
    assert board.open == {} and board.selected()["kind"] == "opened"  # the last one opened stays inspectable
    board.update(
        [
            {"kind": "blind", "property": "never_a", "robot": "r1", "frame": 9},
            {"kind": "blind", "property": "other", "robot": "r1", "frame": 9},
        ]
    )
    board.update([{"kind": "seeing", "property": "never_a", "robot": "r1", "frame": 12}])
    assert [b["property"] for b in board.snapshot()["blind"]] == ["other"]


def test_an_event_line_says_its_wall_clock_time(events):
    """`t` is the stamp time (simulated seconds, or seconds since 1970 on a robot): the line leads with
    the local time the monitor sent the event at."""
    wall = 1_800_000_000.25
    board = AlertBoard()
    board.update([{**events[0], "wall_time": wall}])
    line = board.lines()[2]
    assert line.split()[1] == time.strftime("%H:%M:%S", time.localtime(wall))
    assert line.endswith("[r1] run 1 rollout 0 never_a opened at frame 3 t=1.006s")


def beat(pid, seq, level, summary, state=MonitorState.RUNNING, violations=None):
    """A heartbeat as `heartbeat_of` reads it."""
    return {
        "pid": pid,
        "seq": seq,
        "robot": "r1",
        "level": level,
        "summary": summary,
        "state": state,
        "violations": violations,
    }


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_board_says_whether_a_monitor_is_heard():
    clock = Clock()
    board = AlertBoard(clock=clock)
    clock.now += 2.0
    assert board.lines()[0].startswith("NO MONITOR HEARD for 2.0 s")
    assert board.snapshot()["monitor"] == {
        "state": "none",
        "alive": False,
        "silent_s": 2.0,
        "pid": None,
        "seq": None,
        "robot": None,
        "level": None,
        "summary": None,
        "violations": None,
    }
    board.hear(beat(41, 0, "OK", "no open violation"))
    assert board.lines()[0] == "MONITOR pid 41 alive: OK no open violation"
    clock.now += 1.5  # no beat for longer than SILENT_S (1 s)
    assert board.lines()[0].startswith("MONITOR pid 41 SILENT for 1.5 s")
    assert not board.monitor()["alive"]
    board.hear(beat(41, 1, "OK", "no open violation"))
    clock.now += 4.0  # a monitor beating every 1.5 s is heard for three of its periods
    assert board.monitor()["alive"] and board.monitor()["seq"] == 1


def test_a_monitor_whose_last_beat_said_stopped_is_stopped_not_silent():
    """A clean stop's last heartbeat says `stopped`: the console shows STOPPED however long the silence after
    it lasts (SILENT is for a monitor that died, paused or was cut off), and a new process is heard again."""
    from safety_monitor.enums import Heard

    clock = Clock()
    board = AlertBoard(clock=clock)
    board.hear(beat(41, 0, "OK", "no open violation"))
    board.hear(beat(41, 1, "STALE", "stopped", MonitorState.STOPPED))
    clock.now += 600.0
    assert board.monitor()["state"] is Heard.STOPPED and not board.monitor()["alive"]
    assert board.lines()[:3] == [
        "MONITOR pid 41 STOPPED 600.0 s ago (a clean stop); last: STALE stopped",
        "OPEN VIOLATIONS (0)",
        "    none: the monitor stopped, nothing is checked",  # not a bare "none", as if still watching
    ]
    assert json.loads(json.dumps(board.snapshot()))["monitor"]["state"] == "stopped"
    board.hear(beat(42, 0, "OK", "no open violation"))
    assert board.monitor()["state"] is Heard.ALIVE


class FakeScreen:
    """A curses window of `rows` x `cols` recording what is drawn; 'q' once one screen is drawn."""

    def __init__(self, rows: int, cols: int) -> None:
        self.size, self.lines, self.keys = (rows, cols), {}, iter([-1, ord("q")])

    def nodelay(self, flag: bool) -> None:
        pass

    def getch(self) -> int:
        return next(self.keys)

    def getmaxyx(self) -> tuple[int, int]:
        return self.size

    def erase(self) -> None:
        self.lines.clear()

    def addnstr(self, y: int, x: int, text: str, n: int, attr: int) -> None:
        self.lines[y] = text[:n]

    def refresh(self) -> None:
        pass


def test_the_curses_screen_wraps_the_counterexample_sentence(events, monkeypatch):
    import curses

    from safety_monitor.nodes.alerts import _curses_loop

    monkeypatch.setattr(curses, "curs_set", lambda visibility: None)  # no terminal under pytest
    board = AlertBoard()
    board.update(events[:1])
    screen = FakeScreen(60, 40)
    _curses_loop(screen, board, lambda: None, [True])
    drawn = " ".join(" ".join(screen.lines.values()).split())
    sentence = events[0]["counterexample"]["explanation"]
    assert len(sentence) > 40 and " ".join(sentence.split()) in drawn
    assert max(len(line) for line in screen.lines.values()) <= 39


def test_the_plain_view_is_reprinted_when_the_heartbeat_changes_its_word(events):
    """Piped, the view is reprinted on events; a heartbeat that arrives after them (the violation's
    recovery summed up, inputs gone stale) must reprint it too, or its first line contradicts the lists."""
    from safety_monitor.nodes.alerts import _plain_loop

    board, shown = AlertBoard(), []
    beats = iter(
        [
            beat(7, 0, "OK", "no open violation"),
            beat(7, 1, "ERROR", "1 open: never_a"),
            beat(7, 2, "ERROR", "1 open: never_a"),
            beat(7, 3, "STALE", "no advancing predicates"),
        ]
    )

    def spin() -> None:
        heard = next(beats, None)
        if heard is None:
            raise KeyboardInterrupt  # the console's way out
        board.hear(heard)

    board.update(events[:1])
    with pytest.raises(KeyboardInterrupt):
        _plain_loop(board, spin, [True], shown.append)
    assert [view.splitlines()[0] for view in shown] == [
        "MONITOR pid 7 alive: OK no open violation",
        "MONITOR pid 7 alive: ERROR 1 open: never_a",
        "MONITOR pid 7 alive: STALE no advancing predicates",
    ]


class FakeMonitor:
    """Events published at start (transient local) and a heartbeat every 0.1 s from a thread."""

    def __init__(self, ns: str, events: list[dict], pid: int = 4242) -> None:
        import rclpy

        from safety_monitor.io import cdr
        from safety_monitor.io import messages as m
        from safety_monitor.nodes import qos

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(f"fake_monitor_{pid}", namespace=ns, context=self.context)
        T = m.rclpy_types()
        pub = self.node.create_publisher(T.DiagnosticArray, "safety_monitor/events", qos.EVENTS)
        pub.publish(m.events_msg(T, events, events[0]["t"]))
        beat_pub = self.node.create_publisher(T.DiagnosticArray, "safety_monitor/heartbeat", qos.DIAGNOSTICS)
        self.stop = threading.Event()

        def beat() -> None:
            seq = 0
            while not self.stop.wait(0.1):
                beat_pub.publish(
                    cdr.write_diagnostics(
                        (0, 0),
                        [
                            (
                                m.ERROR,
                                "safety_monitor/r1: heartbeat",
                                "1 open: never_a",
                                "r1",
                                [("seq", str(seq)), ("pid", str(pid))],
                            )
                        ],
                    )
                )
                seq += 1

        self.thread = threading.Thread(target=beat, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.node.destroy_node()
        self.context.try_shutdown()


def test_alerts_json_reads_the_transient_local_history(events, capsys):
    pytest.importorskip("rclpy")
    ns = "a" + uuid.uuid4().hex[:8]
    monitor = FakeMonitor(ns, events[:1])  # published before the console starts
    try:
        assert (
            main(["alerts", "--json", "--namespace", ns, "--timeout", str(WAIT_S)]) == 0
        )  # returns once the history is in
    finally:
        monitor.close()
    shown = json.loads(capsys.readouterr().out)
    assert shown["received"] == 1
    assert shown["monitor"]["alive"] and shown["monitor"]["pid"] == 4242 and shown["monitor"]["level"] == "ERROR"
    assert [(e["property"], e["frame"], e["robot"]) for e in shown["open"]] == [("never_a", 3, "r1")]
    assert shown["open"][0]["counterexample"] == events[0]["counterexample"]


def test_events_of_another_monitor_run_are_told_apart(events):
    board = AlertBoard()
    board.update(events[:1], publisher=b"first")
    board.update(events, publisher=b"second")  # a new monitor process: its rollouts restart from 0
    assert [e["run"] for e in board.open.values()] == [1]  # run 2's violation recovered, run 1's did not
    text = "\n".join(board.lines())
    assert "[r1] run 1 rollout 0 never_a opened at frame 3" in text
    assert "[r1] run 2 rollout 0 never_a recovered at frame 4" in text


def test_the_console_labels_events_by_the_monitor_process_that_sent_them(events):
    rclpy = pytest.importorskip("rclpy")
    from rclpy.executors import SingleThreadedExecutor

    from safety_monitor.nodes.alerts import subscribe

    ns = "a" + uuid.uuid4().hex[:8]
    monitors = [FakeMonitor(ns, events[:1], pid=1), FakeMonitor(ns, events[:1], pid=2)]  # the same records
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("console", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    board = AlertBoard()
    subscribe(node, board, ns, lambda: None)
    try:
        deadline = time.monotonic() + WAIT_S
        while board.received < 2 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        node.destroy_node()
        context.try_shutdown()
        for monitor in monitors:
            monitor.close()
    assert sorted(e["run"] for e in board.recent) == [1, 2] and len(board.open) == 2


def test_alerts_once_without_a_monitor_says_so_and_fails(capsys):
    pytest.importorskip("rclpy")
    assert main(["alerts", "--once", "--namespace", "a" + uuid.uuid4().hex[:8], "--timeout", "1"]) == NO_MONITOR
    out, err = capsys.readouterr()
    assert out.startswith("NO MONITOR HEARD for") and "no monitor heard on /a" in err


# ------------------------------------------------------------------------------- recorded: --log
def event_log(path, **kwargs):
    from safety_monitor.nodes.event_log import EventLog

    return EventLog(path, fallback=None, hold=kwargs.get("hold", 100), robot="r1", say=lambda *said: None)


# A monitor run killed by SIGKILL in the middle of a write: the batches before it are whole lines, the last
# is cut short (the writer's own code up to the kill; os._exit stands for the signal). It prints its pid and
# the batches as stamped and sent.
KILLED_RUN = """
import json, os, sys
from pathlib import Path
from safety_monitor.nodes.event_log import EventLog, wall_stamp
log = EventLog(Path(sys.argv[1]), fallback=None, hold=100, robot="r1", say=lambda *said: None)
log.open()
sent = [[{**e, **wall_stamp()} for e in batch] for batch in json.loads(sys.argv[2])]
for batch in sent:
    log.write(batch)
os.write(os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND), sys.argv[3].encode())
print(json.dumps([os.getpid(), sent]), flush=True)
os._exit(9)
"""


def killed_run(log, batches, torn):
    """Run KILLED_RUN on `log` in a process of its own (the log is locked while open): its pid, and the
    batches as it sent them."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, str(log), json.dumps(batches), torn],
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 9, done.stderr
    return json.loads(done.stdout)


def stamped(events):
    """The events as the monitor node logs and publishes them: with the wall-clock time and pid of sending."""
    from safety_monitor.nodes.event_log import wall_stamp

    return [{**e, **wall_stamp()} for e in events]


def show_log(capsys, *argv):
    """`alerts --log ...`: exit code, stdout, stderr."""
    code = main(["alerts", "--log", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


LISTS = ("open", "blind", "recent", "lost", "received")  # what a snapshot says of the events


def test_a_recorded_log_shows_what_a_console_listening_throughout_showed(events, tmp_path, capsys):
    """Three monitor runs on one log, each a run of its own as each monitor process is live: a clean one,
    one killed mid-write with a violation open (the log cut short), and one that restarted after it and
    said the state was lost. The recording lists the open violations, events and counterexample the live
    console shows for the same events, and says what it is instead of a heartbeat."""
    from safety_monitor.enums import EventKind

    path = tmp_path / "events.jsonl"
    opened, recovered = stamped(events)
    live = AlertBoard()

    first = event_log(path)
    assert first.open() is None
    for batch in ([opened], [recovered]):
        first.write(batch)
        live.update(batch, publisher=b"first")
    first.close()

    torn = '{"category": "action_onset", "frame": 5, "kind": "op'
    dead, sent = killed_run(path, [events[:1]], torn)
    for batch in sent:
        live.update(batch, publisher=b"killed")

    code, out, err = show_log(capsys, path, "--json")
    shown, expected = json.loads(out), json.loads(json.dumps(live.snapshot()))
    assert code == CUT_LOG and err == (
        f"alerts: {path}: the last line was cut short ({len(torn)} bytes: a run died writing it, or writes it now); "
        "the 6 whole records before it are shown\n"
    )
    assert {k: shown[k] for k in LISTS} == {k: expected[k] for k in LISTS}
    assert [(e["property"], e["run"], e["frame"]) for e in shown["open"]] == [("never_a", 2, 3)]
    assert shown["open"][0]["counterexample"] == events[0]["counterexample"]
    assert shown["monitor"] == {
        "state": "recording",
        "alive": False,
        "silent_s": None,
        "pid": dead,
        "seq": None,
        "robot": "r1",
        "level": None,
        "summary": None,
        "violations": 2,
        "log": str(path),
        "records": 6,
        "runs": 2,
        "stopped": False,
        "events_lost": 0,
        "torn_bytes": len(torn),
    }
    assert show_log(capsys, path)[1].splitlines()[0] == (
        f"RECORDING {path} (not live): 2 monitor runs, 2 violations opened; its last line was cut short "
        f"({len(torn)} bytes): the run (pid {dead}) died writing it, or writes it now"
    )

    third = event_log(path)  # the next monitor cuts the torn line and says its predecessor's state is lost
    previous = third.open()
    assert previous is not None and previous.pid == dead and previous.torn_bytes == len(torn)
    lost = stamped([{"property": "*", "kind": EventKind.STATE_LOST, "frame": None, "t": None, "rollout": None}])
    lost = [{**lost[0], "robot": "r1", "previous_pid": dead, "previous_started": None, "torn_bytes": len(torn)}]
    third.write(lost)
    live.update(json.loads(json.dumps(lost)), publisher=b"third")
    third.close()

    code, out, err = show_log(capsys, path, "--once")
    assert code == 0 and err == ""
    text = out.splitlines()
    assert text[0] == (
        f"RECORDING {path} (not live): 3 monitor runs, 2 violations opened; the last run (pid {os.getpid()}) "
        "stopped cleanly"
    )
    assert text[1:] == live.lines()[1:]  # the same view: no violation open (run 2's died with it), state lost
    assert "OPEN VIOLATIONS (0)" in text and "STATE LOST (monitor restarted after a crash): r1" in text
    assert sum(line.endswith("[r1] run 2 rollout 0 never_a opened at frame 3 t=1.006s") for line in text) == 1
    assert text[text.index("RECENT EVENTS (last 4 of 4)") + 1].endswith(
        f"[r1] run 3 state lost: the previous monitor (pid {dead}) died"  # in no rollout, at no frame
    )


def test_a_clean_run_without_events_is_no_alarm_and_an_empty_log_says_nothing_was_recorded(tmp_path, capsys):
    clean = tmp_path / "clean" / "events.jsonl"
    log = event_log(clean)
    log.open()
    log.close()
    code, out, err = show_log(capsys, clean.parent)  # the monitor's folder: its one log
    assert code == 0 and err == ""
    assert out.splitlines()[:3] == [
        f"RECORDING {clean} (not live): 1 monitor run, 0 violations opened; the last run (pid {os.getpid()}) "
        "stopped cleanly",
        "OPEN VIOLATIONS (0)",
        "    none",
    ]
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    code, out, err = show_log(capsys, empty, "--json")
    assert code == NO_MONITOR and err == f"alerts: {empty} is empty: no monitor run recorded\n"
    shown = json.loads(out)
    assert shown["received"] == 0 and shown["monitor"]["records"] == 0 and shown["monitor"]["runs"] == 0


def test_events_the_log_could_not_take_are_counted_in_the_first_line(events, tmp_path, capsys, monkeypatch):
    """A full disk: one batch is held, two more are dropped (hold 1), then the log takes writes again and
    says how many it lost. A console listening live saw them; the recording says they are missing."""
    from safety_monitor.nodes import event_log as module

    path = tmp_path / "events.jsonl"
    log = event_log(path, hold=1)
    log.open()
    real = module._append

    def full(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(module, "_append", full)
    for batch in ([events[0]], [events[1]], [events[1]]):
        log.write(batch)
    monkeypatch.setattr(module, "_append", real)
    log.write([events[1]])
    log.close()
    code, out, _ = show_log(capsys, path)
    assert code == 0
    assert out.splitlines()[0].endswith("stopped cleanly; 2 events lost (the log could not take them)")
    assert "RECENT EVENTS (last 2 of 2)" in out


@pytest.mark.parametrize(
    "content, line",
    [
        (b"predicates: [a, b]\n", 1),  # a spec file
        (b'{"t": 0.0, "a": true}\n', 1),  # a predicate trace
        (b'{"pid": 7, "started": 1.5}', 1),  # the log's `.running` companion: whole JSON, no newline
        (b"\x89MCAP0\r\n\x00\x01", 1),  # a bag
        (b'{"property": "*", "kind": "monitor_started"}\n[1, 2]\n', 2),  # a record, then not one
    ],
)
def test_a_file_that_is_not_an_event_log_is_one_line_naming_it(content, line, tmp_path, capsys):
    path = tmp_path / "not_a_log.jsonl"
    path.write_bytes(content)
    code, out, err = show_log(capsys, path)
    assert code == 2 and out == ""
    assert err.startswith(f"safety-monitor alerts: error: {path} is not an event log: line {line} is not a JSON record")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "field, value, why",
    [
        ("rollout", [], "'rollout' is [], not a whole number or null"),  # was: TypeError, unhashable type: 'list'
        ("robot", [1], "'robot' is [1], not a string or null"),
        ("episode", {"a": 1}, "'episode' is {'a': 1}, not a whole number or null"),
        ("objects", 3, "'objects' is 3, not a list of names"),  # was: TypeError in the --once view
        ("counterexample", "x", "'counterexample' is 'x', not a counterexample"),
    ],
)
def test_a_record_with_a_field_the_monitor_never_writes_is_one_line_naming_it(
    events, field, value, why, tmp_path, capsys
):
    """A damaged line that is still JSON with a property and a kind (found by fuzzing: test_fuzz_logs.py) made
    `alerts --log` an internal error, or showed a violation opened at rollout `{}` that its recovery never closed."""
    path = tmp_path / "events.jsonl"
    opened, recovered = events
    path.write_text(json.dumps(opened) + "\n" + json.dumps({**recovered, field: value}) + "\n")
    for view in ("--once", "--json"):
        code, out, err = show_log(capsys, path, view)
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert err.startswith(f"safety-monitor alerts: error: {path} is not an event log: line 2 is not a JSON record")
        assert f"({why}: " in err


def test_a_line_nested_past_the_stack_is_no_record_for_the_console_nor_for_a_starting_monitor(tmp_path, capsys):
    """json.loads raises RecursionError, no ValueError, for 100,000 nested brackets: `alerts --log` was an internal
    error, and a monitor starting on such a log (its last line read to tell whether the last run died) crashed."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"property": "*", "kind": "monitor_started"}\n' + b"[" * 100_000 + b"\n")
    code, out, err = show_log(capsys, path)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"safety-monitor alerts: error: {path} is not an event log: line 2 is not a JSON record")
    log = event_log(path)
    assert log.open() is None
    log.close()


def test_log_takes_a_monitors_folder_and_says_what_it_expected_otherwise(tmp_path, capsys):
    expected = "give a monitor's event log or its folder ($ROS_HOME/safety_monitor/events.jsonl by default"
    (tmp_path / "a.jsonl").touch()
    (tmp_path / "b.jsonl").touch()
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.json").write_text("{}")
    for argv, said in [
        ((tmp_path,), f"{tmp_path} holds 2 event logs (a.jsonl, b.jsonl): give the one to read"),
        ((report,), f"{report} is a replay report, which holds no event log (its events are in report.json"),
        ((tmp_path / "nowhere",), f"no such file or folder: {tmp_path / 'nowhere'}: {expected}"),
        ((tmp_path / "a.jsonl", "--namespace", "arm1"), "--namespace names a live monitor's topics; with --log"),
    ]:
        code, out, err = show_log(capsys, *argv)
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert err.startswith(f"safety-monitor alerts: error: {said}"), err


def test_ros2_run_alerts_says_a_bad_log_in_one_line(tmp_path, capsys):
    pytest.importorskip("rclpy")
    from safety_monitor.nodes.alerts import main as ros2_run_alerts

    with pytest.raises(SystemExit) as exited:
        ros2_run_alerts(["alerts", "--log", str(tmp_path / "nowhere")])
    assert exited.value.code == 2
    assert capsys.readouterr().err.startswith(f"alerts: error: no such file or folder: {tmp_path / 'nowhere'}: ")


def test_reading_a_log_imports_no_rclpy(tmp_path):
    """`--log` is for machines without ROS (a CI job): neither the parser nor the reading imports rclpy."""
    path = tmp_path / "events.jsonl"
    log = event_log(path)
    log.open()
    log.close()
    script = (
        "import sys; from safety_monitor.cli import main; code = main(['alerts', '--log', sys.argv[1], '--json']); "
        "sys.exit(code or 10 * any(m.split('.')[0] == 'rclpy' for m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script, str(path)], env=env, capture_output=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--namespace", "bad ns!"], "argument --namespace: invalid namespace 'bad ns!': namespace must not contain"),
        (["--recent", "-3"], "argument --recent: must be a whole number from 0 to 100000, got '-3'"),
        (["--timeout", "-1"], "argument --timeout: must be a number of seconds > 0 and <= 86400, got '-1'"),
    ],
)
def test_alerts_rejects_bad_arguments_before_starting_ros(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["alerts", "--once", *argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_sim_rejects_an_unknown_fault_before_starting_ros(capsys):
    assert main(["sim", "--fault", "early_release,bogus"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown fault 'bogus'" in err[0]


def test_summary_checks_each_episode_against_its_fault_label(monitor_events):
    from safety_monitor.sim.faults import FAULTS

    rollouts = [
        SimpleNamespace(index=0, task="pick_and_place_cube", fault="", seed=0, succeeded=True, frames=100, events=[]),
        SimpleNamespace(
            index=1, task="pick_and_place_mug", fault="slip", seed=1, succeeded=False, frames=90, events=monitor_events
        ),  # never_a: no fault's label allows it
    ]
    live = SimpleNamespace(rollouts=rollouts, wall_s=1.0, events_log="/tmp/e.jsonl", bags=[], interrupted=False)
    s = summarize(live)
    first, second = s["episodes"]
    assert first["as_labelled"] and first["opened"] == {} and first["fault"] is None
    assert not second["as_labelled"] and second["opened"] == {"never_a": 1}
    assert second["missing"] == sorted(FAULTS["slip"].expected_properties) and second["unexpected"] == ["never_a"]
    assert s["events_per_property"] == {"never_a": {"opened": 1, "recovered": 1}}
    text = "\n".join(summary_lines(s))
    assert "unexpected never_a" in text and "as labelled" in text and "failed" in text


def test_summary_shows_each_episodes_alerts_as_the_console_words_them_a_few_then_a_count(monitor_events):
    """The summary named the properties that opened, never the alerts themselves (what, about what, when):
    now each episode's first ALERTS_SHOWN alerts, in the alerts console's words, then how many more."""
    from dataclasses import replace

    from safety_monitor.cli.nodes import ALERTS_SHOWN

    opened = next(e for e in monitor_events if e.kind == "opened")
    many = [replace(opened, frame=10 * i, t=float(i), objects=("mug",)) for i in range(ALERTS_SHOWN + 2)]
    rollouts = [
        SimpleNamespace(index=0, task="pick_and_place_cube", fault="", seed=0, succeeded=True, frames=100, events=[]),
        SimpleNamespace(index=1, task="demo", fault="", seed=1, succeeded=True, frames=90, events=monitor_events),
        SimpleNamespace(index=2, task="demo", fault="", seed=2, succeeded=True, frames=90, events=many),
    ]
    live = SimpleNamespace(rollouts=rollouts, wall_s=1.0, events_log="/tmp/e.jsonl", bags=[], interrupted=False)
    s = summarize(live)
    assert [len(e["alerts"]) for e in s["episodes"]] == [0, 1, ALERTS_SHOWN + 2]  # --json: every one
    lines = summary_lines(s)
    start = lines.index("Alerts:")
    assert lines[start : start + ALERTS_SHOWN + 3] == [
        "Alerts:",
        "  1  never_a opened at frame 3 t=1.006s",
        *(f"  2  never_a opened about mug at frame {10 * i} t={i:.3f}s" for i in range(ALERTS_SHOWN)),
        "  2  ... and 2 more",
    ]
    assert lines[start + ALERTS_SHOWN + 3] == ""


def test_an_episode_cut_off_by_ctrl_c_is_not_judged_against_its_fault(monitor_events):
    """The episode Ctrl-C cut off (no end marker, so no task outcome) read 'missing drop_only_when_released'
    and as_labelled false, though its fault had not happened yet: it is now shown as interrupted, unjudged."""
    rollouts = [
        SimpleNamespace(index=0, task="pick_and_place_cube", fault="", seed=0, succeeded=True, frames=100, events=[]),
        SimpleNamespace(
            index=1,
            task="pick_and_place_mug",
            fault="early_release",
            seed=1,
            succeeded=None,
            frames=40,
            events=monitor_events,
        ),
    ]
    live = SimpleNamespace(rollouts=rollouts, wall_s=1.0, events_log="/tmp/e.jsonl", bags=[], interrupted=True)
    first, cut = summarize(live)["episodes"]
    assert first["as_labelled"] and not first["interrupted"]
    assert cut["interrupted"] and cut["as_labelled"] is None and cut["missing"] == cut["unexpected"] == []
    row = next(line for line in summary_lines(summarize(live)) if line.startswith("1 "))
    assert row.split()[5] == "interrupted" and row.split()[6:] == ["never_a", "not", "judged", "(cut", "off)"]


def test_a_stop_before_the_first_episode_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    """A stop (Ctrl-C, SIGTERM) while the nodes start printed '0 episode(s)' over an empty table and said
    nothing of the --record bag that was never written. A stop asked for is a clean end: exit code 0."""
    from safety_monitor.nodes import run_inprocess

    def interrupted(options):
        return run_inprocess.LiveRun(
            rollouts=[], wall_s=0.9, events_log=tmp_path / "e.jsonl", bags=[], interrupted=True
        )

    monkeypatch.setattr(run_inprocess, "run", interrupted)
    bag = tmp_path / "bag"
    assert main(["sim", "--record", str(bag), "--events", str(tmp_path / "e.jsonl")]) == 0
    assert capsys.readouterr().out == (
        "safety-monitor sim: interrupted before the first episode started: "
        f"nothing monitored; --record {bag}: no bag written\n"
    )


def test_sim_namespace_reaches_the_nodes_and_is_refused_without_them(tmp_path, monkeypatch, capsys):
    """`--namespace NS` runs the nodes in NS (their clock on NS/clock, as sim.launch.py namespace:=NS); a
    physics-only run has no nodes, so it refuses the option rather than ignore it."""
    from safety_monitor.nodes import run_inprocess

    given = []

    def record(options):
        given.append(options)
        return run_inprocess.LiveRun(
            rollouts=[], wall_s=0.1, events_log=tmp_path / "e.jsonl", bags=[], interrupted=True
        )

    monkeypatch.setattr(run_inprocess, "run", record)
    assert main(["sim", "--namespace", "lab/arm1", "--events", str(tmp_path / "e.jsonl")]) == 0
    assert [o.namespace for o in given] == ["/lab/arm1"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["sim", "--physics-only", "--namespace", "arm1"])
    assert exited.value.code == 2 and "argument --namespace: not allowed with --physics-only" in capsys.readouterr().err
