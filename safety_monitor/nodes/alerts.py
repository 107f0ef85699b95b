"""Operator console for `safety_monitor/events`: open violations, recent events, the selected counterexample.

The events topic is transient local, so a console started late still gets the monitor's history.
Views: an interactive curses screen (arrows select a violation, q quits), a plain view reprinted on
every change when the output is not a terminal, and `--once` (text) or `--json`, which print one
snapshot and exit once a monitor's history has arrived (matched, then quiet for a second) or after
`--timeout` seconds (for scripts and tests).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from safety_monitor.monitor.events import BLIND, DISCARDED_TRUNCATED, OPENED, SEEING, UNRECOVERED_AT_END

EVENTS_TOPIC = "safety_monitor/events"
QUIET_S = 1.0  # --once/--json: a matched monitor silent this long has delivered its history
STATE_LOST = "state_lost"  # not a property event: a monitor restarted after its previous run died


def _key(event: dict[str, Any]) -> tuple:
    return event.get("robot"), event.get("rollout"), event["property"], event.get("episode")


class AlertBoard:
    """What the console shows, built from decoded event records (pure: no rclpy)."""

    def __init__(self, recent: int = 20) -> None:
        self.open: dict[tuple, dict[str, Any]] = {}  # insertion order = opening order
        self.blind: dict[tuple, dict[str, Any]] = {}  # (robot, property) -> blind event
        self.recent: deque[dict[str, Any]] = deque(maxlen=recent)
        self.last_opened: dict[str, Any] | None = None
        self.lost: dict[Any, dict[str, Any]] = {}  # robot -> its monitor's last state_lost event
        self.received = 0

    def update(self, events: Iterable[dict[str, Any]]) -> None:
        for e in events:
            self.received += 1
            self.recent.append(e)
            kind = e["kind"]
            if kind == OPENED:
                self.open[_key(e)] = e
                self.last_opened = e
            elif kind == BLIND:
                self.blind[e.get("robot"), e["property"]] = e
            elif kind == SEEING:
                self.blind.pop((e.get("robot"), e["property"]), None)
            elif kind == STATE_LOST:  # the dead monitor's open episodes will never close: not shown as open
                robot = e.get("robot")
                self.lost[robot] = e
                self.open = {k: v for k, v in self.open.items() if k[0] != robot}
                self.blind = {k: v for k, v in self.blind.items() if k[0] != robot}
            else:  # the episode closed: recovered, closed, or its trace ended
                self.open.pop(_key(e), None)
                if kind in (UNRECOVERED_AT_END, DISCARDED_TRUNCATED):  # a new trace starts seeing
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
        }

    def lines(self, index: int = -1) -> list[str]:
        """The plain-text view."""
        out = [f"OPEN VIOLATIONS ({len(self.open)})"]
        out += [f"  {'>' if e is self.selected(index) else ' '} {_describe(e)}" for e in self.open.values()]
        if not self.open:
            out.append("    none")
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


def _describe(e: dict[str, Any]) -> str:
    t = e.get("t")
    when = f"frame {e.get('frame')}" + (f" t={t:.3f}s" if isinstance(t, (int, float)) else "")
    robot = f"[{e['robot']}] " if e.get("robot") else ""
    return f"{robot}rollout {e.get('rollout', '-')} {e['property']} {e['kind']} at {when}"


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
    if cx.get("decisive"):
        lines.append("decisive: " + ", ".join(cx["decisive"]))
    width = max((len(a) for a in cx["values"]), default=0)
    for atom, runs in cx["values"].items():
        text = ", ".join(f"{a}-{b} {_word(v)}" if a != b else f"{a} {_word(v)}" for a, b, v in runs)
        lines.append(f"{atom.ljust(width)}  {text}")
    return lines


def _word(value: bool | None) -> str:
    return "unknown" if value is None else ("true" if value else "false")


# ------------------------------------------------------------------------------------------ ROS side
def _topic(namespace: str) -> str:
    ns = namespace.strip("/")
    return f"/{ns}/{EVENTS_TOPIC}" if ns else f"/{EVENTS_TOPIC}"


def watch(args: argparse.Namespace) -> int:
    """Subscribe and show; the handler of `safety-monitor alerts` and of `ros2 run ... alerts`."""
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.node import Node

    from safety_monitor.errors import SourceError
    from safety_monitor.nodes import qos
    from safety_monitor.sources import messages as m

    board = AlertBoard(args.recent)
    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    node = Node("alerts", context=context)
    changed = [True]

    def on_events(msg) -> None:
        try:
            board.update(m.decode_events(msg))
        except SourceError as exc:
            node.get_logger().error(f"undecodable events message: {exc}")
        changed[0] = True

    sub = node.create_subscription(m.rclpy_types().DiagnosticArray, _topic(args.namespace), on_events, qos.EVENTS)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spin = lambda: executor.spin_once(timeout_sec=0.05)  # noqa: E731
    try:
        if args.once or args.json:
            collect(spin, sub, board, args.timeout)
            print(json.dumps(board.snapshot(), indent=2) if args.json else "\n".join(board.lines()))
        elif sys.stdout.isatty():
            import curses

            curses.wrapper(_curses_loop, board, spin, changed)
        else:
            while True:
                spin()
                if changed[0]:
                    changed[0] = False
                    print("\n".join(board.lines() + ["-" * 60]), flush=True)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        context.try_shutdown()
    return 0


def collect(spin, sub, board: AlertBoard, timeout: float) -> None:
    """Spin until a monitor has been matched and quiet for QUIET_S (its history has arrived), or
    until `timeout` seconds have passed (no monitor, or one that keeps talking)."""
    start = time.monotonic()
    matched_at = None
    count, last_change = board.received, start
    while (now := time.monotonic()) - start < timeout:
        if matched_at is None and sub.get_publisher_count() > 0:
            matched_at = now
        if board.received != count:
            count, last_change = board.received, now
        if matched_at is not None and now - max(matched_at, last_change) >= QUIET_S:
            return
        spin()


def _curses_loop(screen, board: AlertBoard, spin, changed: list[bool]) -> None:
    import curses

    screen.nodelay(True)
    curses.curs_set(0)
    index = -1
    while True:
        spin()
        key = screen.getch()
        if key in (ord("q"), 27):
            return
        if key in (curses.KEY_UP, curses.KEY_DOWN) and board.open:
            n = len(board.open)
            index = (index % n + (-1 if key == curses.KEY_UP else 1)) % n
            changed[0] = True
        if not changed[0]:
            continue
        changed[0] = False
        rows, cols = screen.getmaxyx()
        screen.erase()
        header = f"safety_monitor alerts  {time.strftime('%H:%M:%S')}  (arrows: select, q: quit)"
        for y, line in enumerate([header, *board.lines(index)][: rows - 1]):
            attr = curses.A_NORMAL if line.startswith(" ") else curses.A_BOLD  # headings are not indented
            screen.addnstr(y, 0, line, cols - 1, attr)
        screen.refresh()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", default="", type=_namespace,
                        help="the robot's namespace (events on <ns>/safety_monitor/events)")
    parser.add_argument("--once", action="store_true",
                        help="print one snapshot once the history has arrived (at most --timeout s), exit")
    parser.add_argument("--json", action="store_true", help="like --once, printing a JSON snapshot")
    parser.add_argument("--timeout", type=_positive_seconds, default=5.0,
                        help="--once/--json: give up waiting for a monitor after this many seconds (default 5)")
    parser.add_argument("--recent", type=_count, default=20, help="recent events kept on screen (default 20)")


def _namespace(text: str) -> str:
    """A ROS namespace, leading and trailing slashes optional; checked here so a typo is an argument error."""
    from rclpy.exceptions import InvalidNamespaceException
    from rclpy.validate_namespace import validate_namespace

    name = text.strip("/")
    try:
        validate_namespace(f"/{name}")
    except InvalidNamespaceException as exc:  # its message spans three lines: keep the reason
        reason = str(exc).splitlines()[0].removeprefix("Invalid namespace: ").rstrip(":")
        raise argparse.ArgumentTypeError(f"invalid namespace {text!r}: {reason}") from None
    return name


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """`ros2 run safety_monitor alerts [options]` (ROS arguments are ignored here)."""
    from rclpy.utilities import remove_ros_args

    parser = argparse.ArgumentParser(prog="alerts", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(remove_ros_args(list(sys.argv if argv is None else argv))[1:])
    return watch(args)


if __name__ == "__main__":
    raise SystemExit(main())
