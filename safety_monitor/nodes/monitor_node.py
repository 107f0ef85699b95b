"""The monitor node: the spec-set monitor fed by `safety_monitor/predicates`, reporting three ways.

1. Every event is appended to a JSON Lines log (one object per line: the event's own JSON plus
   `rollout`, `robot` and `wall_time`), flushed per event and synced to disk BEFORE it is published,
   so a crash never loses an event someone may already have seen.
2. `safety_monitor/events` (reliable, transient local): one DiagnosticArray per frame with events.
3. `/diagnostics`: one status per property, ERROR while a violation episode is open, OK once it
   recovers, STALE while its verdict is unknown; plus a summary status. Sent on every change and
   every `diagnostics_period_s`.

Inputs that stop are never read as "all fine": when no predicates arrive for `predicates_timeout_s`
(wall clock), the summary turns STALE and, inside a trace, the monitor steps one blind frame (every
predicate unknown), so each property reports `blind` until predicates resume (`seeing`). Frame
indices count that blind frame.

Rollouts: without episode markers the whole run is one trace, closed when the node shuts down. With
markers (the sim), a trace closes once the frame at the `end` marker's time has been stepped.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field as dc_field
from pathlib import Path
from typing import Any

from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from safety_monitor.errors import SafetyMonitorError, SourceError
from safety_monitor.monitor.episodes import PropertyOutcome
from safety_monitor.monitor.events import BLIND, KINDS, OPENED, SEEING
from safety_monitor.nodes import qos
from safety_monitor.nodes.episode_marker import SAME_TIME_S, START, EpisodeMarker, decode_marker
from safety_monitor.nodes.params import declare, declare_topics, field
from safety_monitor.nodes.runtime import run_node
from safety_monitor.sources import messages as m

_CLOSING = frozenset(KINDS) - {OPENED, BLIND, SEEING}


@dataclass(frozen=True)
class MonitorParams:
    specs: str = field("", "spec file ('' = the package's config/specs.yaml)")
    events_log: str = field("", "JSON Lines event log ('' = $ROS_HOME/safety_monitor/events[_<namespace>].jsonl)")
    predicates_timeout_s: float = field(0.5, "no predicates for this long (wall clock): STALE, properties unknown")
    diagnostics_period_s: float = field(1.0, "period of the /diagnostics heartbeat")
    history_frames: int = field(5000, "frames of predicate values kept for counterexamples")
    hardware_id: str = field("", "hardware_id of the diagnostics ('' = the namespace, or 'robot')")


@dataclass
class Rollout:
    """One finished trace: its markers' metadata, every event record and the per-property outcomes."""

    index: int
    task: str = ""
    fault: str = ""
    seed: int | None = None
    succeeded: bool | None = None
    frames: int = 0
    events: list[dict[str, Any]] = dc_field(default_factory=list)
    outcomes: tuple[PropertyOutcome, ...] = ()


def default_log_path(namespace: str) -> Path:
    home = Path(os.environ.get("ROS_HOME") or Path.home() / ".ros")
    suffix = namespace.strip("/").replace("/", "_")
    return home / "safety_monitor" / (f"events_{suffix}.jsonl" if suffix else "events.jsonl")


class MonitorNode(Node):
    """`rollouts` lists the finished traces (the in-process command prints them)."""

    def __init__(self, **node_kwargs) -> None:
        super().__init__("monitor_node", **node_kwargs)
        from safety_monitor.grounding.grounder import config_dir
        from safety_monitor.monitor.live import SpecSetMonitor

        p = self.params = declare(self, MonitorParams)
        self.topics = declare_topics(self)
        if p.predicates_timeout_s <= 0 or p.diagnostics_period_s <= 0 or p.history_frames < 1:
            raise SafetyMonitorError("monitor_node: timeouts and periods must be > 0, history_frames >= 1")
        specs = p.specs or str(config_dir() / "specs.yaml")
        self.monitor = SpecSetMonitor.from_spec_file(specs, history=p.history_frames)
        self._categories = {a.name: a.category for a in self.monitor.automata}
        self.hardware_id = p.hardware_id or self.get_namespace().strip("/").replace("/", "_") or "robot"
        self.log_path = Path(p.events_log) if p.events_log else default_log_path(self.get_namespace())
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - lives with the node
        except OSError as exc:
            raise SafetyMonitorError(f"monitor_node: cannot open the event log {self.log_path}: {exc}") from None

        T = self._types = m.rclpy_types()
        self._events_pub = self.create_publisher(T.DiagnosticArray, self.topics.events, qos.EVENTS)
        self._diag_pub = self.create_publisher(T.DiagnosticArray, self.topics.diagnostics, qos.DIAGNOSTICS)
        self.create_subscription(T.DiagnosticArray, self.topics.episode, self._on_marker, qos.EPISODE)
        self.create_subscription(T.DiagnosticArray, self.topics.predicates, self._on_predicates, qos.PREDICATES)

        self.rollouts: list[Rollout] = []
        self._rollout = Rollout(0)
        self._starts: list[EpisodeMarker] = []
        self._pending_end: EpisodeMarker | None = None
        self._open: dict[str, dict[str, Any]] = {}  # property -> its `opened` record
        self._blind: set[str] = set()
        self._episodes = dict.fromkeys(self._categories, 0)
        self._last_t: float | None = None
        self._trace_t0: float | None = None
        self._last_input: float | None = None  # monotonic time of the last predicates message
        self._stale_inputs = True
        self._stale_streams: frozenset[str] = frozenset()
        self._needed = frozenset(self.monitor.predicates)
        self._missing_warned = False
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(min(0.1, p.predicates_timeout_s / 2), self._watchdog, clock=steady)
        self.create_timer(p.diagnostics_period_s, self._publish_diagnostics, clock=steady)
        self.get_logger().info(
            f"{len(self.monitor.automata)} properties from {specs}; events -> {self.topics.events} and {self.log_path}")

    @property
    def traces_finished(self) -> int:
        return len(self.rollouts)

    # ------------------------------------------------------------------------------------- inputs
    def _on_marker(self, msg) -> None:
        try:
            marker = decode_marker(msg)
        except SourceError as exc:
            self.get_logger().error(str(exc))
            return
        if marker.kind == START:
            self._starts.append(marker)
        elif self.monitor.frame and self._trace_t0 is not None and marker.t < self._trace_t0 - SAME_TIME_S:
            pass  # an end from before this trace began (transient-local history)
        elif self.monitor.frame and self._last_t is not None and self._last_t >= marker.t - SAME_TIME_S:
            self._finish(marker)
        else:
            self._pending_end = marker  # the trace's last frames may still be on their way

    def _on_predicates(self, msg) -> None:
        try:
            sample = m.decode_predicates(msg)
        except SourceError as exc:
            self.get_logger().error(f"dropped a predicates message: {exc}", throttle_duration_sec=5.0)
            return
        self._last_input = time.monotonic()
        resumed, self._stale_inputs = self._stale_inputs, False
        t = sample.t
        end = self._pending_end
        if end is not None and t > end.t + SAME_TIME_S:
            self._pending_end = None
            if self.monitor.frame and end.t >= self._trace_t0 - SAME_TIME_S:  # its frame never came: close
                self._finish(end)
        if self.monitor.frame == 0:
            self._begin_trace(t)
        values = sample.valuation()
        frame = {name: values.get(name) for name in self.monitor.predicates}
        if not self._missing_warned and (missing := self._needed - values.keys()):
            self._missing_warned = True
            self.get_logger().warning(f"predicates not sent, treated as unknown: {', '.join(sorted(missing))}")
        self._stale_streams = sample.stale
        self._last_t = t
        events = self.monitor.step(frame, t)
        if events:
            self._emit(events, t)
        if self._pending_end is not None and t >= self._pending_end.t - SAME_TIME_S:
            self._finish(self._pending_end)
        elif resumed:
            self._publish_diagnostics()

    def _begin_trace(self, t: float) -> None:
        """Attach the latest start marker at or before this first frame (older ones are spent)."""
        self._trace_t0 = t
        starts = [s for s in self._starts if s.t <= t + SAME_TIME_S]
        self._starts = [s for s in self._starts if s.t > t + SAME_TIME_S]
        if starts:
            s = starts[-1]
            self._rollout = Rollout(s.index, s.task, s.fault, s.seed)

    def _watchdog(self) -> None:
        last = self._last_input
        if self._stale_inputs or last is None or time.monotonic() - last <= self.params.predicates_timeout_s:
            return
        self._stale_inputs = True
        self.get_logger().warning(f"no predicates for {self.params.predicates_timeout_s} s: verdicts unknown")
        if self.monitor.frame:  # inside a trace: every property goes blind until predicates resume
            events = self.monitor.step(None, self._last_t)
            if events:
                self._emit(events, self._last_t)
        self._publish_diagnostics()

    # ------------------------------------------------------------------------------------ outputs
    def _emit(self, events, t: float | None) -> None:
        """Log (flushed per event, synced per batch), then publish, then update the alert state."""
        records = []
        for event in events:
            record = event.to_json()
            record["rollout"] = self._rollout.index
            record["robot"] = self.hardware_id
            records.append(record)
            self._log.write(json.dumps({**record, "wall_time": time.time()}, sort_keys=True) + "\n")
            self._log.flush()
        os.fsync(self._log.fileno())
        self._rollout.events.extend(records)
        if self.context.ok():
            self._events_pub.publish(m.events_msg(self._types, records, 0.0 if t is None else t))
        for r in records:
            name, kind = r["property"], r["kind"]
            if kind == OPENED:
                self._open[name] = r
                self._episodes[name] += 1
            elif kind in _CLOSING:
                self._open.pop(name, None)
            elif kind == BLIND:
                self._blind.add(name)
            elif kind == SEEING:
                self._blind.discard(name)
        self._publish_diagnostics()

    def _finish(self, end: EpisodeMarker | None) -> None:
        """Close the current trace (end-of-trace events are logged and published like the others)."""
        result = self.monitor.finish()
        if result.events:
            self._emit(result.events, self._last_t)
        r = self._rollout
        r.frames, r.outcomes = result.frames, result.outcomes
        if end is not None:
            r.succeeded = end.succeeded
        self.rollouts.append(r)
        self._rollout = Rollout(r.index + 1)
        self._pending_end = None
        self._trace_t0 = None
        self._open.clear()
        self._blind.clear()
        self._publish_diagnostics()

    def _publish_diagnostics(self) -> None:
        if not self.context.ok():
            return
        T = self._types
        S = T.DiagnosticStatus
        stale = self._stale_inputs
        statuses = []
        for name, category in self._categories.items():
            opened = self._open.get(name)
            if opened is not None:
                level = S.ERROR
                message = f"violated since frame {opened['frame']} (t={_secs(opened['t'])})"
            elif stale or name in self._blind:
                level, message = S.STALE, "unknown: inputs stale" if stale else "unknown: predicates unknown"
            else:
                level, message = S.OK, "satisfied so far"
            values = {"category": category, "episodes": str(self._episodes[name])}
            if opened is not None and opened.get("counterexample"):
                values["explanation"] = opened["counterexample"]["explanation"]
            statuses.append((level, name, message, values))
        if self._last_input is None:
            summary = (S.STALE, "waiting for predicates")
        elif stale:
            summary = (S.STALE, f"no predicates for more than {self.params.predicates_timeout_s} s")
        elif self._open:
            summary = (S.ERROR, f"{len(self._open)} open: {', '.join(sorted(self._open))}")
        elif self._blind or self._stale_streams:
            summary = (S.WARN, "stale inputs: " + ", ".join(sorted(self._stale_streams)) if self._stale_streams
                       else f"{len(self._blind)} properties unknown")
        else:
            summary = (S.OK, "no open violation")
        prefix = f"safety_monitor/{self.hardware_id}"
        msg_statuses = [S(level=summary[0], name=f"{prefix}: monitor", message=summary[1],
                          hardware_id=self.hardware_id,
                          values=[T.KeyValue(key="frame", value=str(self.monitor.frame)),
                                  T.KeyValue(key="rollout", value=str(self._rollout.index))])]
        msg_statuses += [S(level=level, name=f"{prefix}: {name}", message=message, hardware_id=self.hardware_id,
                           values=[T.KeyValue(key=k, value=v) for k, v in values.items()])
                         for level, name, message, values in statuses]
        msg = T.DiagnosticArray(status=msg_statuses)
        msg.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(msg)

    def destroy_node(self) -> None:
        """Close the running trace (its end-of-trace events reach the log) and the log itself."""
        if self.monitor.frame:
            self._finish(None)
        self._log.close()
        super().destroy_node()


def _secs(t: float | None) -> str:
    return "?" if t is None else f"{t:.3f} s"


def main(args: list[str] | None = None) -> int:
    return run_node(MonitorNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
