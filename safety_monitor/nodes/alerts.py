"""Operator console for `safety_monitor/events`: open violations, recent events, the selected counterexample.

The events topic is transient local, so a console started late still gets the monitor's history.
An empty list is only reassuring while a monitor is heard, so the first line says whether the
monitor's heartbeat (`safety_monitor/heartbeat`) is heard, and from which pid, or whether its last beat
said it stopped cleanly (STOPPED, never SILENT: silence without that word is a death). Each monitor process
restarts its rollouts from 0, so events are also labelled with their run: the n-th events publisher
this console heard.
Views: an interactive curses screen (arrows select a violation, q quits), a plain view reprinted on
every change when the output is not a terminal, and `--once` (text) or `--json`, which print one
snapshot and exit once a monitor's history has arrived (matched, then quiet for a second) and its
heartbeat is heard, or after `--timeout` seconds (for scripts and tests); exit code NO_MONITOR when
no monitor is heard then. `--log PATH` builds the same view from a run's event log instead (no ROS): the
log holds every event the monitor published, and its own records say how each monitor run ended.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safety_monitor.arguments import number, whole
from safety_monitor.enums import EventKind, Heard, LogRecordKind, MonitorState
from safety_monitor.errors import SafetyMonitorError, SourceError

EVENTS_TOPIC = "safety_monitor/events"
HEARTBEAT_TOPIC = "safety_monitor/heartbeat"
SILENT_S = 1.0  # no heartbeat for this long (and 3 of its periods): the monitor is not heard (dead, paused, cut off)
NO_MONITOR = 3  # --once/--json exit code: no monitor heard, so "no violations" means nothing
CUT_LOG = 1  # --log exit code: the log's last line was cut short (its run died writing it)
LEVELS = ("OK", "WARN", "ERROR", "STALE")  # diagnostic_msgs/DiagnosticStatus levels 0-3
QUIET_S = 1.0  # --once/--json: a matched monitor silent this long has delivered its history
MAX_TIMEOUT_S = 86400.0
MAX_RECENT = 100_000


def _key(event: dict[str, Any]) -> tuple:
    return event.get("robot"), event["run"], event.get("rollout"), event["property"], event.get("episode")


class AlertBoard:
    """What the console shows, built from decoded event records (pure: no rclpy)."""

    def __init__(self, recent: int = 20, clock: Callable[[], float] = time.monotonic) -> None:
        self.open: dict[tuple, dict[str, Any]] = {}  # insertion order = opening order
        self.blind: dict[tuple, dict[str, Any]] = {}  # (robot, property) -> blind event
        self.recent: deque[dict[str, Any]] = deque(maxlen=recent)
        self.last_opened: dict[str, Any] | None = None
        self.lost: dict[Any, dict[str, Any]] = {}  # robot -> its monitor's last state_lost event
        self.received = 0
        self.clock, self.started = clock, clock()
        self.beat: dict[str, Any] | None = None  # the last heartbeat (see heartbeat_of) and when it came
        self._beat_gap = 0.0  # seconds between the last two heartbeats of that pid: its period
        self.runs: dict[Any, int] = {}  # events publisher -> run number, 1 for the first heard
        self.recording: Recording | None = None  # set when the events were read from an event log: nothing is heard

    def hear(self, beat: dict[str, Any]) -> None:
        """A heartbeat arrived (heartbeat_of's dict)."""
        now = self.clock()
        if self.beat is not None and self.beat["pid"] == beat["pid"]:
            self._beat_gap = now - self.beat["heard_at"]
        self.beat = {**beat, "heard_at": now}

    def monitor(self) -> dict[str, Any]:
        """What is heard of the monitor (`state`; `alive` while it beats), for how long it has been silent, and
        its last heartbeat; for events read from a log, what the log says of its runs."""
        if self.recording is not None:
            return self.recording.monitor()
        beat, now = self.beat, self.clock()
        if beat is None:
            return {
                "state": Heard.NONE,
                "alive": False,
                "silent_s": round(now - self.started, 3),
                "pid": None,
                "seq": None,
                "robot": None,
                "level": None,
                "summary": None,
                "violations": None,
            }
        silent = now - beat["heard_at"]
        if beat["state"] is MonitorState.STOPPED:
            state = Heard.STOPPED
        else:
            state = Heard.ALIVE if silent <= max(SILENT_S, 3 * self._beat_gap) else Heard.SILENT
        return {
            "state": state,
            "alive": state is Heard.ALIVE,
            "silent_s": round(silent, 3),
            **{k: beat[k] for k in ("pid", "seq", "robot", "level", "summary", "violations")},
        }

    def update(self, events: Iterable[dict[str, Any]], publisher: Any = None) -> None:
        """Take decoded events from one publisher (its gid: one per monitor process), labelled with its run."""
        run = self.runs.setdefault(publisher, len(self.runs) + 1)
        for e in events:
            e = {**e, "run": run}
            self.received += 1
            self.recent.append(e)
            kind = e["kind"]
            if kind == EventKind.OPENED:
                self.open[_key(e)] = e
                self.last_opened = e
            elif kind == EventKind.BLIND:
                self.blind[e.get("robot"), e["property"]] = e
            elif kind == EventKind.SEEING:
                self.blind.pop((e.get("robot"), e["property"]), None)
            elif kind == EventKind.STATE_LOST:  # the dead monitor's open episodes will never close: not shown as open
                robot = e.get("robot")
                self.lost[robot] = e
                self.open = {k: v for k, v in self.open.items() if k[0] != robot}
                self.blind = {k: v for k, v in self.blind.items() if k[0] != robot}
            else:  # the episode closed: recovered, closed, or its trace ended
                self.open.pop(_key(e), None)
                if kind in (
                    EventKind.UNRECOVERED_AT_END,
                    EventKind.DISCARDED_TRUNCATED,
                    EventKind.INPUT_ENDED,
                ):  # a new trace starts seeing
                    self.blind = {k: v for k, v in self.blind.items() if k[0] != e.get("robot")}

    def selected(self, index: int = -1) -> dict[str, Any] | None:
        """The open violation at `index` (default the newest), else the last one opened."""
        opened = list(self.open.values())
        if opened:
            return opened[max(-len(opened), min(index, len(opened) - 1))]
        return self.last_opened

    def snapshot(self) -> dict[str, Any]:
        return {
            "open": list(self.open.values()),
            "blind": [{"robot": k[0], "property": k[1], "frame": v.get("frame")} for k, v in self.blind.items()],
            "recent": list(self.recent),
            "lost": list(self.lost.values()),
            "received": self.received,
            "monitor": self.monitor(),
        }

    def lines(self, index: int = -1) -> list[str]:
        """The plain-text view."""
        mon = self.monitor()
        out = [monitor_line(mon), f"OPEN VIOLATIONS ({len(self.open)})"]
        out += [f"  {'>' if e is self.selected(index) else ' '} {_describe(e)}" for e in self.open.values()]
        if not self.open:  # a stopped monitor's trace end closed its violations: "none" alone read as all fine
            out.append(
                "    none: the monitor stopped, nothing is checked" if mon["state"] is Heard.STOPPED else "    none"
            )
        if self.lost:
            out.append(f"STATE LOST (monitor restarted after a crash): {', '.join(str(r) for r in self.lost)}")
        if self.blind:
            out.append(f"UNKNOWN (inputs stale or predicates unknown): {', '.join(k[1] for k in self.blind)}")
        out.append(f"RECENT EVENTS (last {len(self.recent)} of {self.received})")
        out += [f"    {_describe(e)}" for e in reversed(self.recent)]
        chosen = self.selected(index)
        if chosen is not None:
            out.append("COUNTEREXAMPLE")
            out += ["  " + line for line in counterexample_lines(chosen)]
        return out


@dataclass
class Recording:
    """What an event log says of the monitor runs that wrote it: the status line of `--log`."""

    path: Path
    records: int = 0  # whole lines read
    runs: int = 0  # monitor_started records: one per monitor process that opened the log
    pid: int | None = None  # the last record's process
    robot: str | None = None
    stopped: bool = False  # the last record is a clean stop's (monitor_stopped); otherwise that run died or runs on
    opened: int = 0  # violations opened, in every run
    events_lost: int = 0  # events the log could not take (events_lost records): never in it
    torn_bytes: int = 0  # the last line, cut short by its run's death (or still being written): not read

    def monitor(self) -> dict[str, Any]:
        """AlertBoard.monitor's keys (nothing heard: no seq, level or summary), and the log's own."""
        return {
            "state": Heard.RECORDING,
            "alive": False,
            "silent_s": None,
            "pid": self.pid,
            "seq": None,
            "robot": self.robot,
            "level": None,
            "summary": None,
            "violations": self.opened,
            "log": str(self.path),
            "records": self.records,
            "runs": self.runs,
            "stopped": self.stopped,
            "events_lost": self.events_lost,
            "torn_bytes": self.torn_bytes,
        }


_LOG_RECORDS = frozenset(LogRecordKind)  # the log's own records: never published, so no console saw them


def read_log(path: Path, board: AlertBoard) -> Recording:
    """Feed `board` the events of an event log (nodes/event_log.py) as a console listening throughout would
    have received them, each monitor run (from its monitor_started record) a run of its own, and set its
    `recording`. SourceError when `path` is not an event log."""
    from safety_monitor.nodes.event_log import LogRecords

    rec = board.recording = Recording(path)
    records = LogRecords(path)
    for r in records:
        kind = r["kind"]
        rec.records += 1
        rec.stopped = kind == LogRecordKind.MONITOR_STOPPED
        rec.pid = r["pid"] if isinstance(r.get("pid"), int) else rec.pid
        rec.robot = r["robot"] if isinstance(r.get("robot"), str) else rec.robot
        if kind == LogRecordKind.MONITOR_STARTED:
            rec.runs += 1
        elif kind == LogRecordKind.EVENTS_LOST and isinstance(r.get("events"), int):
            rec.events_lost += r["events"]
        elif kind not in _LOG_RECORDS:
            rec.opened += kind == EventKind.OPENED
            board.update([r], publisher=rec.runs)
    rec.torn_bytes = records.torn_bytes
    return rec


_EXPECTED = (
    "give a monitor's event log or its folder ($ROS_HOME/safety_monitor/events.jsonl by default, ROS_HOME ~/.ros)"
)


def find_log(path: Path) -> Path:
    """The event log `--log PATH` names: the file, or the one `*.jsonl` in a folder (a monitor's, such as
    $ROS_HOME/safety_monitor). SourceError saying what was expected otherwise."""
    if not path.is_dir():
        if not path.exists():
            raise SourceError(f"no such file or folder: {path}: {_EXPECTED}")
        return path
    logs = sorted(p for p in path.glob("*.jsonl") if p.is_file())
    if len(logs) == 1:
        return logs[0]
    if logs:
        names = ", ".join(p.name for p in logs)
        raise SourceError(f"{path} holds {len(logs)} event logs ({names}): give the one to read")
    if (path / "report.json").is_file():
        raise SourceError(
            f"{path} is a replay report, which holds no event log (its events are in report.json, its violations "
            f"in summary.md): {_EXPECTED}"
        )
    raise SourceError(f"{path} holds no event log (*.jsonl): {_EXPECTED}")


def monitor_line(mon: dict[str, Any]) -> str:
    """The status line: no monitor heard, the heard one stopped or gone silent, or alive with its summary;
    for a recording, the log and how its last run ended."""
    state = mon["state"]
    if state is Heard.RECORDING:
        return recording_line(mon)
    if state is Heard.NONE:
        return f"NO MONITOR HEARD for {mon['silent_s']:.1f} s (no heartbeat: the lists below may be incomplete)"
    said = f"{mon['level']} {mon['summary']}"
    if mon["violations"]:  # every one, a violation shorter than a heartbeat period included
        said += f" [{mon['violations']} violation{'s' if mon['violations'] != 1 else ''} opened so far]"
    if state is Heard.STOPPED:
        return f"MONITOR pid {mon['pid']} STOPPED {mon['silent_s']:.1f} s ago (a clean stop); last: {said}"
    if state is Heard.SILENT:
        return f"MONITOR pid {mon['pid']} SILENT for {mon['silent_s']:.1f} s (dead, paused or cut off); last: {said}"
    return f"MONITOR pid {mon['pid']} alive: {said}"


def recording_line(mon: dict[str, Any]) -> str:
    """`RECORDING <log> (not live): ...`: the runs, the violations opened and how the last run ended."""
    runs, opened = mon["runs"], mon["violations"]
    said = f"RECORDING {mon['log']} (not live): {runs} monitor run{'s' if runs != 1 else ''}, {opened} violation"
    said += f"{'s' if opened != 1 else ''} opened; "
    if mon["torn_bytes"]:
        said += f"its last line was cut short ({mon['torn_bytes']} bytes): the run (pid {mon['pid']}) died writing it"
        said += ", or writes it now"
    elif not mon["records"]:
        said += "empty: no monitor run recorded"
    elif mon["stopped"]:
        said += f"the last run (pid {mon['pid']}) stopped cleanly"
    else:
        said += f"the last run (pid {mon['pid']}) did not stop cleanly: it died, or still runs"
    if mon["events_lost"]:
        said += f"; {mon['events_lost']} events lost (the log could not take them)"
    return said


def heartbeat_of(msg: Any) -> dict[str, Any]:
    """A heartbeat DiagnosticArray (monitor_node._heartbeat) -> pid, seq, robot, level name, summary, state
    (`running` where a monitor does not say) and violations opened so far (None where it does not say).
    Raises IndexError, KeyError or ValueError on anything else."""
    status = msg.status[0]
    values = {str(kv.key): str(kv.value) for kv in status.values}
    level = status.level[0] if isinstance(status.level, bytes) else status.level
    return {
        "pid": int(values["pid"]),
        "seq": int(values["seq"]),
        "robot": str(status.hardware_id),
        "level": LEVELS[level],
        "summary": str(status.message),
        "state": MonitorState(values.get("state", MonitorState.RUNNING)),
        "violations": int(values["violations"]) if "violations" in values else None,
    }


def _describe(e: dict[str, Any]) -> str:
    """One event on one line, led by its wall-clock time (local): `t` is the stamp time, simulated
    seconds or, on a robot, seconds since 1970, which tell an operator nothing about when."""
    wall = e.get("wall_time")
    clock = time.strftime("%H:%M:%S ", time.localtime(wall)) if isinstance(wall, (int, float)) else ""
    robot = f"[{e['robot']}] " if e.get("robot") else ""
    rollout = e.get("rollout", "-")
    return f"{clock}{robot}run {e['run']}{'' if rollout is None else f' rollout {rollout}'} {event_text(e)}"


def event_text(e: dict[str, Any]) -> str:
    """What happened, in the console's words (an event's JSON record): `drop_only_when_released opened about
    mug at frame 1913 t=11.506s`; `safety-monitor sim`'s summary shows its alerts so. A restarted monitor's
    `state_lost` (of no property, rollout or frame) names the monitor that died."""
    if e["kind"] == EventKind.STATE_LOST:
        return f"state lost: the previous monitor (pid {e.get('previous_pid')}) died"
    t = e.get("t")
    when = f"frame {e.get('frame')}" + (f" t={t:.3f}s" if isinstance(t, (int, float)) else "")
    about = f" about {', '.join(e['objects'])}" if e.get("objects") else ""  # what a violation was about
    return f"{e['property']} {e['kind']}{about} at {when}"


def counterexample_lines(event: dict[str, Any]) -> list[str]:
    """The explanation and each predicate's values as runs `first-last value` over the window."""
    cx = event.get("counterexample")
    if not cx:
        return [f"{event['property']}: no counterexample on a {event['kind']} event"]
    first, last = cx["frames"]
    window = f"frames {first}..{last}"
    if cx.get("trigger_frame") is not None:
        window += f", trigger at frame {cx['trigger_frame']}"
    if cx.get("truncated"):
        window += " (window truncated)"
    lines = [cx["explanation"], f"formula: {cx['formula']}", window]
    if event.get("objects"):
        lines.append("about: " + ", ".join(event["objects"]))
    if cx.get("decisive"):
        lines.append("decisive: " + ", ".join(cx["decisive"]))
    width = max((len(a) for a in cx["values"]), default=0)
    for atom, runs in cx["values"].items():
        text = ", ".join(f"{a}-{b} {_word(v)}" if a != b else f"{a} {_word(v)}" for a, b, v in runs)
        lines.append(f"{atom.ljust(width)}  {text}")
    return lines


def _word(value: bool | None) -> str:
    return "unknown" if value is None else ("true" if value else "false")


def wrap(line: str, width: int) -> list[str]:
    """`line` in pieces of at most `width` characters, broken at spaces, continuations indented 4 more:
    the curses screen cannot scroll sideways, so a counterexample sentence must not run off its edge."""
    lead = len(line) - len(line.lstrip(" "))
    indent = " " * min(lead + 4, width // 2)
    return textwrap.wrap(line, max(width, 1), subsequent_indent=indent, break_on_hyphens=False) or [""]


# ------------------------------------------------------------------------------------------ ROS side
def watch(args: argparse.Namespace) -> int:
    """Subscribe and show; the handler of `safety-monitor alerts` and of `ros2 run ... alerts`."""
    if args.log is not None:
        return show_log(args)
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.node import Node

    from safety_monitor.nodes.runtime import stop_callbacks

    board = AlertBoard(args.recent)
    context = rclpy.Context()
    rclpy.init(args=getattr(args, "ros_args", None) or [], context=context)  # `ros2 run`'s remaps, -r __ns:=...
    node = Node("alerts", namespace=f"/{args.namespace}" if args.namespace else None, context=context)
    changed = [True]

    def on_change() -> None:
        changed[0] = True

    sub = subscribe(node, board, "", on_change)  # names relative to the node: --namespace or the remapped one
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spin = lambda: executor.spin_once(timeout_sec=0.05)  # noqa: E731
    code = 0
    try:
        if args.once or args.json:
            collect(spin, sub, board, args.timeout)
            _print_snapshot(board, args.json)
            mon = board.monitor()
            if not mon["alive"]:
                beats = node.resolve_topic_name(HEARTBEAT_TOPIC)
                print(
                    f"alerts: the monitor (pid {mon['pid']}) on {beats} has stopped"
                    if mon["state"] is Heard.STOPPED
                    else f"alerts: no monitor heard on {beats} within {args.timeout:g} s",
                    file=sys.stderr,
                )
                code = NO_MONITOR
        elif sys.stdout.isatty():
            import curses

            curses.wrapper(_curses_loop, board, spin, changed)
        else:
            _plain_loop(board, spin, changed)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        stop_callbacks(executor)
        node.destroy_node()
        context.try_shutdown()
    return code


def show_log(args: argparse.Namespace) -> int:
    """`--log PATH`: the `--once` view (or `--json` snapshot) of an event log, without ROS. Exit 0 when the
    log was read whole, CUT_LOG when its last line was cut short, NO_MONITOR when it is empty, each but the
    first with one line on stderr saying so; SourceError, before printing anything, when there is no event
    log there."""
    if args.namespace:
        raise SourceError(
            "--namespace names a live monitor's topics; with --log give that monitor's event log "
            f"($ROS_HOME/safety_monitor/events_{args.namespace.replace('/', '_')}.jsonl by default)"
        )
    board = AlertBoard(args.recent)
    rec = read_log(find_log(Path(args.log)), board)
    _print_snapshot(board, args.json)
    if rec.torn_bytes:
        print(
            f"alerts: {rec.path}: the last line was cut short ({rec.torn_bytes} bytes: a run died writing it, or "
            f"writes it now); the {rec.records} whole records before it are shown",
            file=sys.stderr,
        )
        return CUT_LOG
    if not rec.records:
        print(f"alerts: {rec.path} is empty: no monitor run recorded", file=sys.stderr)
        return NO_MONITOR
    return 0


def _print_snapshot(board: AlertBoard, as_json: bool) -> None:
    print(json.dumps(board.snapshot(), indent=2) if as_json else "\n".join(board.lines()))


def subscribe(node, board: AlertBoard, namespace: str, on_change: Callable[[], None]):
    """Feed `board` from `node`: events (labelled by their publisher, so each monitor process is a run of
    its own) and heartbeats; `on_change` after each events message. Returns the events subscription.
    Topics are in `namespace`, or ('') in the node's own, remapping arguments included."""
    from safety_monitor.io import messages as m
    from safety_monitor.nodes import qos

    def on_events(msg, info) -> None:
        gid = info.get("publisher_gid")  # None where the middleware does not tell: one run
        try:
            board.update(m.decode_events(msg), gid and bytes(gid["data"]))
        except SourceError as exc:
            node.get_logger().error(f"undecodable events message: {exc}")
        on_change()

    def on_beat(msg) -> None:
        try:
            board.hear(heartbeat_of(msg))
        except (IndexError, KeyError, ValueError) as exc:
            node.get_logger().error(f"undecodable heartbeat message: {exc!r}")

    T = m.rclpy_types()
    node.create_subscription(T.DiagnosticArray, _topic(namespace, HEARTBEAT_TOPIC), on_beat, qos.DIAGNOSTICS)
    return node.create_subscription(T.DiagnosticArray, _topic(namespace, EVENTS_TOPIC), on_events, qos.EVENTS)


def _topic(namespace: str, name: str) -> str:
    """`name` in `namespace`, or relative (resolved in the node's namespace) when that is ''."""
    ns = namespace.strip("/")
    return f"/{ns}/{name}" if ns else name


def collect(spin, sub, board: AlertBoard, timeout: float) -> None:
    """Spin until a monitor has been matched and quiet for QUIET_S (its history has arrived) and its
    heartbeat heard, or until `timeout` seconds have passed (no monitor, or one that keeps talking)."""
    start = time.monotonic()
    matched_at = None
    count, last_change = board.received, start
    while (now := time.monotonic()) - start < timeout:
        if matched_at is None and sub.get_publisher_count() > 0:
            matched_at = now
        if board.received != count:
            count, last_change = board.received, now
        if matched_at is not None and now - max(matched_at, last_change) >= QUIET_S and board.beat is not None:
            return
        spin()


def _print_now(text: str) -> None:
    print(text, flush=True)  # piped: a reader (tail -f, a log collector) sees each view as it is printed


def _plain_loop(board: AlertBoard, spin, changed: list[bool], show: Callable[[str], None] = _print_now) -> None:
    """Reprint the plain view on every event and whenever the status line would read otherwise: the
    monitor comes, goes or restarts, or its heartbeat reports another level or summary (a violation
    recovered, inputs went stale), so the first line never contradicts the lists under it for long."""
    shown = None
    while True:
        spin()
        mon = board.monitor()
        heard = mon["state"], mon["pid"], mon["level"], mon["summary"], mon["violations"]
        if changed[0] or heard != shown:
            changed[0], shown = False, heard
            show("\n".join(board.lines() + ["-" * 60]))


def _curses_loop(screen, board: AlertBoard, spin, changed: list[bool]) -> None:
    import curses

    screen.nodelay(True)
    curses.curs_set(0)
    index, drawn = -1, 0.0
    while True:
        spin()
        key = screen.getch()
        if key in (ord("q"), 27):
            return
        if key in (curses.KEY_UP, curses.KEY_DOWN) and board.open:
            n = len(board.open)
            index = (index % n + (-1 if key == curses.KEY_UP else 1)) % n
            changed[0] = True
        if not changed[0] and time.monotonic() - drawn < 1.0:  # redrawn every second: the monitor may fall silent
            continue
        changed[0], drawn = False, time.monotonic()
        rows, cols = screen.getmaxyx()
        screen.erase()
        header = f"safety_monitor alerts  {time.strftime('%H:%M:%S')}  (arrows: select, q: quit)"
        shown = [
            (piece, curses.A_NORMAL if line.startswith(" ") else curses.A_BOLD)  # headings are not indented
            for line in [header, *board.lines(index)]
            for piece in wrap(line, cols - 1)
        ]
        for y, (piece, attr) in enumerate(shown[: rows - 1]):
            screen.addnstr(y, 0, piece, cols - 1, attr)
        screen.refresh()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--namespace",
        default="",
        type=_namespace,
        metavar="NS",
        help="the robot's namespace: events on <NS>/safety_monitor/events (default: the root)",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="print one snapshot once the history has arrived (at most --timeout s), exit",
    )
    parser.add_argument("--json", action="store_true", help="like --once, printing a JSON snapshot")
    parser.add_argument(
        "--timeout",
        type=number(0, MAX_TIMEOUT_S, above=True, unit="seconds"),
        default=5.0,
        metavar="S",
        help="--once/--json: give up waiting for a monitor after this many seconds (default 5)",
    )
    parser.add_argument(
        "--log",
        metavar="PATH",
        help="read a run's event log instead (the file, or the folder holding it; no ROS): print the "
        "--once view, or the --json snapshot, and exit",
    )
    parser.add_argument(
        "--recent",
        type=whole(0, MAX_RECENT),
        default=20,
        metavar="N",
        help=f"recent events kept on screen, 0 to {MAX_RECENT} (default 20)",
    )


def _namespace(text: str) -> str:
    """A ROS namespace, leading and trailing slashes optional; checked here so a typo is an argument error."""
    name = text.strip("/")
    if not name:  # the root (also the default, which argparse converts: `--log` runs without rclpy)
        return name
    from rclpy.exceptions import InvalidNamespaceException
    from rclpy.validate_namespace import validate_namespace

    try:
        validate_namespace(f"/{name}")
    except InvalidNamespaceException as exc:  # its message spans three lines: keep the reason
        reason = str(exc).splitlines()[0].removeprefix("Invalid namespace: ").rstrip(":")
        raise argparse.ArgumentTypeError(f"invalid namespace {text!r}: {reason}") from None
    return name


def main(argv: Sequence[str] | None = None) -> int:
    """`ros2 run safety_monitor alerts [options] [--ros-args ...]`: the ROS arguments (remapping
    `-r __ns:=/robot1`, `-r __node:=...`) go to rclpy, the rest to this parser."""
    from rclpy.utilities import remove_ros_args

    argv = list(sys.argv if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="alerts",
        description=__doc__.splitlines()[0],
        epilog="ROS arguments after --ros-args (e.g. -r __ns:=/robot1) apply too.",
    )
    add_arguments(parser)
    args = parser.parse_args(remove_ros_args(argv)[1:])
    args.ros_args = argv
    try:
        return watch(args)
    except SafetyMonitorError as exc:  # --log's: no event log there
        parser.exit(2, f"alerts: error: {exc}\n")


if __name__ == "__main__":
    raise SystemExit(main())
