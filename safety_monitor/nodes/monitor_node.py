"""The monitor node: the spec-set monitor fed by `safety_monitor/predicates`, reporting three ways.

1. Every event is appended to a JSON Lines log (one object per line: the event's own JSON plus
   `rollout`, `robot`, `wall_time` and `pid`), written to the file BEFORE it is published, so a crashed
   or killed monitor never loses an event someone may already have seen, and synced to disk right
   after the publish, on a thread of its own (`sync_before_publish: true` syncs first, inline: proof
   against power loss too, at the price of the disk's sync time, up to milliseconds, in every event's
   latency). A log that refuses writes (a full disk) never stops the events: they are published, held
   or written to `events_log_fallback`, and /diagnostics, the heartbeat and stderr say so at once; a
   deleted or replaced log is reopened (nodes/event_log.py).
2. `safety_monitor/events` (reliable, transient local): one DiagnosticArray per frame with events.
3. `/diagnostics`: one status per property, ERROR while a violation episode is open, OK once it
   recovers, STALE while its verdict is unknown; plus a summary status, ERROR while any violation is
   open (also when the inputs went stale meanwhile: named beside them). Sent on every change (the
   properties whose status changed, with the summary) and every `diagnostics_period_s` (all). After a
   clean stop every status says `stopped` with its final verdict, never OK (nodes/diagnostics.py).

Inputs that stop are never read as "all fine". The input rules are the Supervisor's
(pipeline/supervisor.py, the same code replay runs), on the node clock (system time, or sim time under
`use_sim_time`): when no advancing predicates arrive for `predicates_timeout_s`, the summary turns STALE
and, inside a trace, the monitor steps one blind frame (every predicate unknown), so each property
reports `blind` until predicates resume (`seeing`). Frame indices count that blind frame. The same
happens when predicates keep coming with a stamp that no longer advances for `predicates_frozen_s`
(repeated stamps are never stepped), and, reported as ERROR, when time goes backwards inside a trace:
frames older than the last stepped one are dropped until time passes it again. This node renders the
Supervisor's steps: the log, the events topic, /diagnostics and the heartbeat.

Liveness and restarts: `safety_monitor/heartbeat` carries a status every `heartbeat_period_s` with a
sequence number and the process id, so an external watchdog tells a dead or paused monitor (no
beats) from a restarted one (new pid, sequence from 0); it also carries the log's state (`event_log`:
OK, HOLDING n, FALLBACK, LOST n) and `state`: a clean stop's last beat says `stopped` (with the violations
open at that moment), so its silence afterwards is not read as a death; `violations` counts the
violations opened so far, and a violation that opened and closed between two beats turns the next beat
ERROR, named, so a console's status line sees it however short it was. A monitor that finds the
previous run died (its `<log>.running` left behind, or its log not ending with a clean stop's record:
event_log.py) cuts a torn last log line, logs and publishes a `state_lost` event (property `*`), and
reports ERROR with every property STALE ("state lost") until the next rollout starts (a start marker
stamped after the last frame it saw, arriving between traces; the markers' transient history does not
count); violations it observes meanwhile still report ERROR.

Rollouts: without episode markers the whole run is one trace, closed when the node shuts down. With
markers (the sim), a trace closes once the frame at the `end` marker's time has been stepped.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from safety_monitor.enums import EventKind, IssueKind, MonitorState
from safety_monitor.errors import SourceError
from safety_monitor.frames import PredicateSample, StreamIssue
from safety_monitor.io import cdr
from safety_monitor.io import messages as m
from safety_monitor.monitor.events import Event
from safety_monitor.nodes import qos
from safety_monitor.nodes.alerts import event_text
from safety_monitor.nodes.diagnostics import property_status
from safety_monitor.nodes.episode_marker import read_marker
from safety_monitor.nodes.event_log import EventLog, LogHealth, LogState, PreviousRun, wall_stamp
from safety_monitor.nodes.incompatible_qos import IncompatibleQos
from safety_monitor.nodes.log_throttle import LogThrottle
from safety_monitor.nodes.params import declare, declare_hardware_id, declare_topics, fix_use_sim_time, no_clock_note
from safety_monitor.nodes.raw_decode import rclpy_decoder
from safety_monitor.nodes.runtime import clock_seconds, now_stamp, run_node
from safety_monitor.pipeline.decode import MessageType
from safety_monitor.pipeline.markers import START
from safety_monitor.pipeline.supervisor import NOTHING, InputStatus, Rollout, RolloutEvent, Step, Supervisor
from safety_monitor.settings import MonitorSettings

_MARKER_ISSUES = frozenset({IssueKind.LATE_MARKER, IssueKind.MISSING_MARKER})  # shown on /diagnostics at once


def default_log_path(namespace: str) -> Path:
    home = Path(os.environ.get("ROS_HOME") or Path.home() / ".ros")
    suffix = namespace.strip("/").replace("/", "_")
    return home / "safety_monitor" / (f"events_{suffix}.jsonl" if suffix else "events.jsonl")


class MonitorNode(Node):
    """`rollouts` lists the finished traces (the in-process command prints them)."""

    def __init__(self, subscribe_predicates: bool = True, **node_kwargs) -> None:
        """`subscribe_predicates=False`: frames come by `on_sample` from an estimator in this process."""
        super().__init__("monitor_node", **node_kwargs)
        self._sim_time = fix_use_sim_time(self)
        self._read_clock = clock_seconds(self)
        try:
            self._start(subscribe_predicates)
        except BaseException:  # release what was taken; rclpy's shutdown would call destroy_node on a half-built node
            self._close_log()
            Node.destroy_node(self)
            raise

    def _start(self, subscribe_predicates: bool) -> None:
        from safety_monitor.files import config_dir
        from safety_monitor.monitor.live import SpecSetMonitor

        p = self.params = declare(self, MonitorSettings)
        self.topics = declare_topics(self)
        specs = p.specs or str(config_dir() / "specs.yaml")
        self.monitor = SpecSetMonitor.from_spec_file(specs, history=p.history_frames, control_rate_hz=p.control_rate_hz)
        self._categories = {a.name: a.category for a in self.monitor.automata}
        self.hardware_id = declare_hardware_id(self)
        self._throttled = LogThrottle(self.get_logger())
        self.log_path = Path(p.events_log) if p.events_log else default_log_path(self.get_namespace())
        self.event_log = EventLog(
            self.log_path,
            fallback=Path(p.events_log_fallback) if p.events_log_fallback else None,
            hold=p.events_log_hold,
            robot=self.hardware_id,
            say=self._throttled,
        )
        lost = self.event_log.open()

        T = m.rclpy_types()
        self._events_pub = self.create_publisher(T.DiagnosticArray, self.topics.events, qos.EVENTS)
        self._diag_pub = self.create_publisher(T.DiagnosticArray, self.topics.diagnostics, qos.DIAGNOSTICS)
        self._beat_pub = self.create_publisher(T.DiagnosticArray, self.topics.heartbeat, qos.DIAGNOSTICS)
        self.create_subscription(T.DiagnosticArray, self.topics.episode, self._on_marker, qos.EPISODE)
        self._incompatible = IncompatibleQos(self, _predicates_remedy, self._publish_diagnostics)
        if subscribe_predicates:
            self._read_predicates = rclpy_decoder(MessageType.DIAGNOSTIC_ARRAY, T.DiagnosticArray)
            self._incompatible.subscribe(
                T.DiagnosticArray, self.topics.predicates, self._on_predicates, qos.PREDICATES, raw=True
            )

        self.supervisor = Supervisor(self.monitor, p)
        # set when an estimator in this process feeds `on_sample`: why it makes no frame, when it knows
        self.why_no_frames: Callable[[], str | None] = lambda: None
        self.rollouts: list[Rollout] = []
        self._open: dict[str, Event] = {}  # property -> its `opened` event, in the rollout shown
        self._blind: set[str] = set()
        self._shown = 0  # the rollout whose open and blind properties those are
        self._episodes = dict.fromkeys(self._categories, 0)
        self._closed: dict[str, RolloutEvent] = {}  # property -> its last episode's closing event, any rollout
        self._stale_streams: frozenset[str] = frozenset()
        self._lost_period = self._lost_reported = 0  # frames lost in the last diagnostics period, and before it
        self._beats = 0
        self._opened_since_beat: list[str] = []  # properties whose violations opened since the last heartbeat
        self._summary: tuple[int, str] = (m.STALE, "starting")  # the last summary published
        self._state_lost: str | None = None
        self._stopped: _Stop | None = None  # once stopped cleanly: what was open and blind at that moment
        if lost is not None:
            self._declare_state_lost(lost)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(min(0.1, p.predicates_timeout_s / 2, p.predicates_frozen_s / 2), self._watchdog, clock=steady)
        self.create_timer(p.diagnostics_period_s, self._on_period, clock=steady)
        self.create_timer(p.heartbeat_period_s, lambda: self._heartbeat(MonitorState.RUNNING), clock=steady)
        self.get_logger().info(
            f"{len(self.monitor.automata)} properties from {specs}; events -> {self.topics.events} and {self.log_path}"
        )

    @property
    def traces_finished(self) -> int:
        return len(self.rollouts)

    # ------------------------------------------------------------------------------------- inputs
    def _now(self) -> float:
        """The Supervisor's clock: the node clock (sim time under use_sim_time), in seconds."""
        return self._read_clock()

    def _on_marker(self, msg) -> None:
        marker = read_marker(self, msg)
        if marker is None:
            return
        sup = self.supervisor
        self._render(sup.marker(marker, self._now()))
        if (
            marker.kind == START
            and self._state_lost
            and not sup.in_trace
            and sup.last_t is not None
            and marker.t > sup.last_t
        ):
            self._state_lost = None  # a rollout newer than any frame seen since the restart: a fresh start
            self.get_logger().info(f"rollout {marker.index} starts: verdicts known again")
            self._publish_diagnostics()

    def _on_predicates(self, raw: bytes) -> None:
        try:
            sample = self._read_predicates(raw)
        except SourceError as exc:
            self._throttled("error", "undecodable", f"dropped a predicates message: {exc}")
            return
        self.on_sample(sample)

    def on_sample(self, sample: PredicateSample) -> None:
        """One frame of predicates (from the topic, or from an estimator in the same process)."""
        self._stale_streams = sample.stale
        self._render(self.supervisor.sample(sample, self._now()))

    def _watchdog(self) -> None:
        self._render(self.supervisor.tick(self._now()))

    def _on_period(self) -> None:
        """Every diagnostics period: the log's look at its file (reopened if deleted, held events written
        if it takes them again), frames lost since the last period, then every status."""
        self.event_log.check()
        lost = self.supervisor.lost_frames
        self._lost_period, self._lost_reported = lost - self._lost_reported, lost
        self._publish_diagnostics()

    def _declare_state_lost(self, previous: PreviousRun) -> None:
        """Say so, in the log, on the events topic and on /diagnostics, instead of pretending continuity."""
        self._state_lost = f"state lost: the previous monitor (pid {previous.pid}) died; unknown until the next rollout"
        self.get_logger().error(self._state_lost)
        record = {
            "property": "*",
            "kind": EventKind.STATE_LOST,
            "frame": None,
            "t": None,
            "rollout": None,
            "robot": self.hardware_id,
            "previous_pid": previous.pid,
            "previous_started": previous.started,
            "torn_bytes": previous.torn_bytes,
            **wall_stamp(),
        }
        self.event_log.write([record], sync=True)
        self._events_pub.publish(cdr.write_events([record], 0.0, self.hardware_id))

    # ------------------------------------------------------------------------------------ outputs
    def _render(self, step: Step) -> None:
        """A Supervisor step to every sink: issues to the log, events to the event log and topic, finished
        rollouts to `rollouts`, and /diagnostics when anything changed."""
        if step is NOTHING:  # most frames
            return
        for issue in step.issues:
            self._log_issue(issue)
        if step.events:
            for rollout, group in itertools.groupby(step.events, key=lambda e: e.rollout):
                if rollout != self._shown:  # a new trace: nothing of the last one is open or blind
                    self._shown = rollout
                    self._open.clear()
                    self._blind.clear()
                self._emit(list(group))
        if step.finished:
            self.rollouts.extend(step.finished)
            if step.finished[-1].index >= self._shown:
                self._open.clear()
                self._blind.clear()
        if step.status is InputStatus.FRESH and step.was is not InputStatus.WAITING:
            self.get_logger().info(f"predicates advance again ({step.was} before): verdicts known")
        if step.finished or step.status is not None or any(i.kind in _MARKER_ISSUES for i in step.issues):
            self._publish_diagnostics()

    def _log_issue(self, issue: StreamIssue) -> None:
        text = f"predicates: {issue.detail}"
        if issue.kind is IssueKind.PREDICATES_GAP:
            text += self._estimator_says()
        if issue.kind is IssueKind.FRAME_GAP:
            text += f" ({self.supervisor.lost_frames} lost in all: the monitor did not step them)"
        self._throttled("error" if issue.kind is IssueKind.BACKWARDS else "warning", issue.kind, text)

    def _emit(self, events: Sequence[RolloutEvent]) -> None:
        """Log (one write per frame's events, or held if the log refuses it), then publish (one message
        per frame), then update the alert state."""
        hw, log, sync = self.hardware_id, self.event_log, self.params.sync_before_publish
        for _, same_frame in itertools.groupby(events, key=lambda e: e.event.frame):
            group, stamp = list(same_frame), wall_stamp()
            records = [{**e.event.to_json(), "rollout": e.rollout, "robot": hw, **stamp} for e in group]
            log.write(records, sync)
            if self.context.ok():
                t = group[-1].event.t
                self._events_pub.publish(cdr.write_events(records, 0.0 if t is None else t, hw))
        for e in events:
            event = e.event
            name, kind = event.property, event.kind
            if kind == EventKind.OPENED:
                self._open[name] = event
                self._episodes[name] += 1
                self._opened_since_beat.append(name)
                # on the console too: a `ros2 launch` shows nothing else of a violation
                self._throttled("warning", f"opened {name}", f"rollout {e.rollout}: {event_text(event.to_json())}")
            elif kind.closes:
                self._open.pop(name, None)
                self._closed[name] = e
                if kind is EventKind.WITHDRAWN:  # the console said it opened: say that it counts nowhere
                    self._throttled(
                        "warning",
                        f"withdrawn {name}",
                        f"rollout {e.rollout}: {event_text(event.to_json())}: a late start marker took the frames "
                        "it opened on out of that rollout, so it counts in none",
                    )
            elif kind == EventKind.BLIND:
                self._blind.add(name)
            elif kind == EventKind.SEEING:
                self._blind.discard(name)
        self._publish_diagnostics({e.event.property for e in events})

    def _publish_diagnostics(self, changed: Collection[str] | None = None) -> None:
        """Per property and for the monitor as a whole: ERROR while violated, STALE while unknown, else OK.
        `changed`: send only these properties' statuses with the summary (after events: diagnostics
        consumers keep the last status per name, and all of them cost ~0.2 ms per event); None: all."""
        if not self.context.ok():
            return
        sup = self.supervisor
        status = sup.status
        stale = status.stale
        prefix, hw = f"safety_monitor/{self.hardware_id}", self.hardware_id
        statuses = []
        stop = self._stopped
        opens, blind = (stop.open, stop.blind) if stop is not None else (self._open, self._blind)
        for name, category in self._categories.items():
            if changed is not None and name not in changed:
                continue
            opened = opens.get(name)
            unknown = (
                "inputs stale"
                if stale
                else "state lost in a restart"
                if self._state_lost
                else "predicates unknown"
                if name in blind
                else None
            )
            level, message = property_status(opened, self._closed.get(name), unknown, stop is not None)
            values = [("category", category), ("episodes", str(self._episodes[name]))]
            if opened is not None and opened.counterexample is not None:
                values.append(("explanation", opened.counterexample.explanation))
            statuses.append((level, f"{prefix}: {name}", message, hw, values))
        health = self.event_log.health
        violations = f"{len(self._open)} open: {', '.join(sorted(self._open))}" if self._open else ""
        problem = None  # what the monitor cannot vouch for; named beside the open violations, never instead
        if self._state_lost:
            problem = (m.ERROR, self._state_lost)
        elif health.state is not LogState.OK:
            problem = (m.ERROR, f"event log {health}: {health.error}")
        elif status is InputStatus.TIME_BACKWARDS:
            problem = (m.ERROR, f"time went backwards: frames before {sup.backwards_from:.3f} s dropped")
        elif status is InputStatus.WAITING:
            refused = self._incompatible.text(self.topics.predicates)
            problem = (
                m.STALE,
                f"waiting for predicates: {refused}" if refused else f"waiting for predicates{self._estimator_says()}",
            )
        elif status is InputStatus.FROZEN:
            problem = (m.STALE, f"predicates frozen: their stamp stood still for {self.params.predicates_frozen_s} s")
        elif status is InputStatus.STALE:
            problem = (
                m.STALE,
                f"no advancing predicates for more than {self.params.predicates_timeout_s} s{self._estimator_says()}",
            )
        if stop is not None:  # a clean stop's last word: nothing is checked from here on
            held = sorted(stop.open)
            summary = (m.ERROR, f"stopped with {len(held)} open: {', '.join(held)}") if held else (m.STALE, "stopped")
        elif problem is not None:  # a violation seen open stays ERROR while the monitor is blind to the rest
            summary = (m.ERROR, f"{violations}; {problem[1]}") if violations else problem
        elif violations:
            summary = (m.ERROR, violations)
        elif self._lost_period:
            summary = (
                m.WARN,
                f"{self._lost_period} predicate frames lost in the last "
                f"{self.params.diagnostics_period_s:g} s (not stepped)",
            )
        elif sup.late_start:
            summary = (
                m.WARN,
                f"rollout {sup.rollout}: its start marker came late; the frames stepped before it are blind in it",
            )
        elif self._blind or self._stale_streams:
            summary = (
                m.WARN,
                "stale inputs: " + ", ".join(sorted(self._stale_streams))
                if self._stale_streams
                else f"{len(self._blind)} properties unknown",
            )
        else:
            summary = (m.OK, "no open violation")
        if note := no_clock_note(self._sim_time, self._now(), "predicates"):
            summary = (max(summary[0], m.WARN), f"{summary[1]}; {note}")
        values = [
            ("frame", str(self.monitor.frame)),
            ("rollout", str(sup.rollout)),
            ("time_backwards_frames", str(sup.time_faults)),
            ("lost_frames", str(sup.lost_frames)),
            ("late_start_markers", str(sup.late_markers)),
            ("rollouts_without_end_marker", str(sup.missing_markers)),
            *self._incompatible.values(),
        ]
        self._diag_pub.publish(
            cdr.write_diagnostics(
                now_stamp(self),
                [(summary[0], f"{prefix}: monitor", summary[1], hw, values), self._log_status(health), *statuses],
            )
        )
        self._summary = summary

    def _estimator_says(self) -> str:
        """` (estimator: why)` when the estimator feeding this process knows why no frame comes, else "" (also
        once stopped: the estimator may be destroyed first)."""
        why = self.why_no_frames() if self._stopped is None else None
        return f" (estimator: {why})" if why else ""

    def _log_status(self, health: LogHealth) -> tuple:
        """The `event log` status: OK while every event is in the log file, else ERROR saying where they are.
        After a clean stop STALE: diagnostics tools keep it for good, and an OK `writing` read as a live log."""
        log = self.event_log
        if health.state is LogState.OK:
            level, message = (
                (m.STALE, f"stopped; every event is in {log.path}") if self._stopped else (m.OK, f"writing {log.path}")
            )
        else:
            where = {
                LogState.HOLDING: f"{health.count} events held in memory",
                LogState.FALLBACK: f"events go to the fallback {log.fallback}",
                LogState.LOST: f"{health.count} events dropped (more than events_log_hold waited)",
            }
            level, message = m.ERROR, f"{health}: cannot write {log.path}: {health.error}; {where[health.state]}"
        values = [
            ("state", health.state.value),
            ("count", str(health.count)),
            ("path", str(log.path)),
            ("reopened", str(log.reopened)),
        ]
        return (level, f"safety_monitor/{self.hardware_id}: event log", message, self.hardware_id, values)

    def _heartbeat(self, state: MonitorState) -> None:
        """Liveness for an external watchdog: sequence number, process id, the summary level and `state`
        (`stopped` on a clean stop's last beat, so silence after it is not read as a death), and what the
        summary alone would miss: `violations` opened by this process so far, and, ERROR, the violations
        that opened and closed since the last beat (shorter than a period, no beat's summary had them)."""
        if not self.context.ok():
            return
        level, message = self._summary
        shown = set(self._open).union(self._stopped.open if self._stopped else ())
        passed = [name for name in dict.fromkeys(self._opened_since_beat) if name not in shown]
        if passed:
            level, message = m.ERROR, f"{message}; since the last beat: {', '.join(passed)} opened and closed"
        values = [
            ("seq", str(self._beats)),
            ("pid", str(os.getpid())),
            ("event_log", str(self.event_log.health)),
            ("state", state.value),
            ("violations", str(sum(self._episodes.values()))),
        ]
        self._beat_pub.publish(
            cdr.write_diagnostics(
                now_stamp(self),
                [(level, f"safety_monitor/{self.hardware_id}: heartbeat", message, self.hardware_id, values)],
            )
        )
        self._beats += 1
        self._opened_since_beat.clear()

    def destroy_node(self) -> None:
        """Say the stop, close the running trace (its end-of-trace events reach the log), close the log and
        mark the run finished (a `.running` file left behind tells the next monitor this one died)."""
        if self._log_open():  # not destroyed yet
            self._stopped = _Stop(dict(self._open), frozenset(self._blind))
            self._render(self.supervisor.finish(self._now()))
            self._say_stopped()
        self._close_log()
        super().destroy_node()

    def _say_stopped(self) -> None:
        """A last /diagnostics (every property and the summary) and a last heartbeat with state `stopped`,
        naming the violations open when the stop came (the trace's end closed them): without it a clean stop
        looked like a death to anyone watching the beats (a console said SILENT). The stop is known before
        the trace closes, so no status sent on the way reads OK as if still watching. Not waited for: Fast
        DDS acknowledges at its writer's heartbeat (every 3 s by default), so `wait_for_all_acked` held each
        stop up for its whole limit (1.2 s against 0.2 s measured here), and the beat arrived without it;
        one lost on the way leaves a console at SILENT, as before."""
        self._publish_diagnostics()
        self._heartbeat(MonitorState.STOPPED)

    def _log_open(self) -> bool:
        return hasattr(self, "event_log") and self.event_log.is_open  # none yet when _start failed early

    def _close_log(self) -> None:
        """Write what is held, sync and close the event log, mark the run finished (once; nothing if it
        never opened). Events no file took by now are lost: said on stderr and in `event_log.health`."""
        if not self._log_open():
            return
        health = self.event_log.close()
        if health.state is LogState.LOST:
            self.get_logger().error(
                f"event log: {health.count} record(s) never reached {self.log_path}"
                f"{' or ' + str(self.event_log.fallback) if self.event_log.fallback else ''}: "
                f"{health.error}"
            )


def _predicates_remedy(policy: str) -> str:
    """What accepts a predicates publisher the monitor refused: the monitor never takes best effort, since a
    frame lost is a frame never checked."""
    if policy == "RELIABILITY":
        return "publish predicates reliable (a lost frame would be a frame never checked)"
    return ""


@dataclass(frozen=True)
class _Stop:
    """What a clean stop found: the open violations (property -> its `opened` event) and the blind properties."""

    open: dict[str, Event]
    blind: frozenset[str]


def main(args: list[str] | None = None) -> int:
    return run_node("monitor_node", MonitorNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
