"""The kinds that cross module boundaries, as string-valued enums (the JSON and wire texts stay as they were).

`EventKind`: what a monitor reports about a property (and `STATE_LOST` about itself).
`LogRecordKind`: the event log's own records (never published): runs starting and stopping, the log reopened.
`IssueKind`: what went wrong with an input message or stream (the pipeline reports these; replay counts them).
`MonitorState`: what a monitor's heartbeat says of the monitor itself; `Heard`: what the console makes of them.
"""

from __future__ import annotations

from enum import StrEnum


class EventKind(StrEnum):
    OPENED = "opened"  # the main DFA entered its rejecting sink: a violation episode starts
    RECOVERED = "recovered"  # the recovery formula was met: the episode ends, the property re-arms
    CLOSED = "closed"  # a property without recovery formula: its one-frame episode ends at once
    UNRECOVERED_AT_END = "unrecovered_at_end"  # the trace ended inside an episode that counts
    DISCARDED_TRUNCATED = "discarded_truncated"  # the trace ended inside an episode shorter than min_resolve_frames
    BLIND = "blind"  # a predicate of the property became unknown: its verdict is unknown
    SEEING = "seeing"  # every predicate of the property is known again
    STATE_LOST = "state_lost"  # not a property event: a monitor restarted after its previous run died
    # the input restarted (a new rollout began) inside an episode that counts: closed, never recovered (one
    # too short to count is DISCARDED_TRUNCATED, as at any trace's end)
    INPUT_ENDED = "input_ended"
    # a late start marker took the frames the episode opened on out of their trace: it counts in no rollout
    WITHDRAWN = "withdrawn"

    @property
    def closes(self) -> bool:
        """Whether this kind ends a violation episode."""
        return self in _CLOSING


_CLOSING = frozenset(
    {
        EventKind.RECOVERED,
        EventKind.CLOSED,
        EventKind.UNRECOVERED_AT_END,
        EventKind.DISCARDED_TRUNCATED,
        EventKind.INPUT_ENDED,
        EventKind.WITHDRAWN,
    }
)


class LogRecordKind(StrEnum):
    """Records the monitor writes to its event log about the log and the run (nodes/event_log.py)."""

    MONITOR_STARTED = "monitor_started"  # a run's first record: pid, boot id, start time
    MONITOR_STOPPED = "monitor_stopped"  # a clean stop's last record: a log ending otherwise means the run died
    LOG_REOPENED = "log_reopened"  # the log was deleted or replaced while open and is written at its path again
    EVENTS_LOST = "events_lost"  # events published while no file took them, beyond what could be held


class MonitorState(StrEnum):
    """The heartbeat's value `state` (nodes/monitor_node.py)."""

    RUNNING = "running"
    STOPPED = "stopped"  # its last beat: a clean stop (SIGINT, SIGTERM, a launch's shutdown)


class Heard(StrEnum):
    """What the alerts console makes of a monitor's heartbeats (nodes/alerts.py)."""

    NONE = "none"  # no heartbeat yet
    ALIVE = "alive"  # beating
    SILENT = "silent"  # no beat for a while, and no stop said: dead, paused or cut off
    STOPPED = "stopped"  # its last beat said it stopped cleanly
    RECORDING = "recording"  # nothing heard: the events were read from an event log (alerts --log)


class IssueKind(StrEnum):
    """A problem with one input message or stream (`frames.StreamIssue.kind`)."""

    NAN = "nan"  # NaN, infinite or implausible values: dropped
    BACKWARDS = "backwards"  # stamp behind the last one: dropped
    DUPLICATE_STAMP = "duplicate_stamp"  # stamp equal to the last one: dropped
    TIME_JUMP = "time_jump"  # the stamps stepped further ahead than the stream allows, not after a silence
    STREAM_RESUMED = "stream_resumed"  # stamps and arrival times both moved on by a gap: the stream was silent
    OUTLIER_STAMP = "outlier_stamp"  # one stamp far ahead of its neighbours: dropped
    ZERO_STAMP = "zero_stamp"  # header stamp zero: the arrival time is used
    EMPTY_NAMES = "empty_names"  # a JointState without joint names
    LENGTH_MISMATCH = "length_mismatch"  # names and values of different lengths
    JOINT_NAMES_CHANGED = "joint_names_changed"
    UNKNOWN_JOINTS = "unknown_joints"  # joints the robot does not have: ignored
    MISSING_JOINTS = "missing_joints"  # joints the robot needs that never came
    DUPLICATE_NAMES = "duplicate_names"  # a joint listed twice: dropped
    JOINT_JUMP = "joint_jump"  # a joint stepped further between frames than its velocity limit allows (wrap, glitch)
    # a mobile base's pose stepped further than the base drives (a localisation reset, a glitch): unusable a while
    BASE_JUMP = "base_jump"
    DENORMALIZED_QUATERNION = "denormalized_quaternion"  # an orientation far from unit length (zero too): dropped
    TF_LOOP = "tf_loop"  # a TF frame its own parent (dropped), or a chain running into a loop (no pose across it)
    FROZEN = "frozen"  # values bit-identical for longer than a real sensor stays still: stale
    STREAM_STOPPED = "stream_stopped"  # a stream that stopped while others went on
    LATE_ARRIVAL = "late_arrival"  # a sample that came after frames it was fresh for: they had it stale
    STAMP_AHEAD = "stamp_ahead"  # a sample stamped further after a frame than its age limit: stale until a later one
    UNDECODABLE = "undecodable"  # bytes that are no message of the type: dropped
    GROUNDING = "grounding"  # the frame could not be grounded: every predicate unknown
    FRAME_GAP = "frame_gap"  # recorded frame numbers skip: frames lost or the estimator restarted
    PREDICATES_GAP = "predicates_gap"  # no advancing predicates for longer than the watchdog allows
    UNSENT = "unsent"  # predicates the specs read that the input does not send: unknown
    INPUT_RESTARTED = "input_restarted"  # stamps back beyond the restart limit, or frame numbers from 0: a new rollout
    LATE_MARKER = "late_marker"  # a start marker that came after frames of its rollout
    MISSING_MARKER = "missing_marker"  # a rollout that began without the start marker its input announces
