"""Records the input topics, predicates and events of a run to rosbag2 (mcap or sqlite3) with rosbags.

Subscriptions are raw: each message's bytes are decoded by rosbags and written by
`io.bag.BagWriter`, which serialises them again with rosbags' own CDR (readable by every ROS
tool and by rosbags itself) and embeds the definitions; no rclpy message object is built on the way.
The log time is the header stamp (the clock's time for /clock), so a bag of a simulated run is
deterministic for its seed. Topics arrive a little out of stamp order (a frame's predicates after the next
frame's joint states), so messages are written in log-time order through `LogOrder`: an mcap file out of
that order cannot be read once its index is lost (a killed recorder leaves none).
With `split_rollouts`, each rollout (episode marker) goes to its own bag `<path>/episode_<k>`, so bag
replay scores each rollout as the trace the live monitor closed. A bag that refuses a write (a full disk)
stops the recording: the error is logged once and kept in `write_error`, later messages are counted in
`unrecorded`, and the run that owns the node decides what to do (`safety-monitor sim` stops).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rclpy.node import Node

from safety_monitor.errors import SafetyMonitorError
from safety_monitor.frames import SAME_TIME_S
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagWriter, default_typestore
from safety_monitor.nodes import qos
from safety_monitor.nodes.episode_marker import read_marker
from safety_monitor.nodes.params import declare_topics
from safety_monitor.pipeline.markers import START


def _type_name(msg_type) -> str:
    """`sensor_msgs.msg.JointState` -> `sensor_msgs/msg/JointState`."""
    return f"{msg_type.__module__.split('.')[0]}/msg/{msg_type.__name__}"


def _stamp(msg) -> float:
    return m.stamp_seconds(msg.header.stamp if hasattr(msg, "header") else msg.clock)


HELD = 4096  # messages held back for ordering: about a second of a 500 Hz run's topics


class LogOrder:
    """Writes messages oldest stamp first, holding back the newest `held` (bounded memory; `flush` writes
    them all). Ties keep their arrival order. A message later than that is written at the newest log time
    already written (it was received that late; its header keeps its stamp), so the file stays in order."""

    def __init__(self, write: Callable[[str, Any, float, float], None], held: int = HELD) -> None:
        self._write, self._held = write, held
        self._heap: list[tuple[float, int, str, Any]] = []
        self._arrival = itertools.count()
        self._newest = float("-inf")
        self.late = 0  # messages written after their stamp

    def push(self, topic: str, msg: Any, t: float) -> None:
        heapq.heappush(self._heap, (t, next(self._arrival), topic, msg))
        if len(self._heap) > self._held:
            self._pop()

    def flush(self) -> None:
        while self._heap:
            self._pop()

    def _pop(self) -> None:
        t, _, topic, msg = heapq.heappop(self._heap)
        if t < self._newest:
            self.late += 1
        self._newest = max(self._newest, t)
        self._write(topic, msg, t, self._newest)


def rollout_of(starts: list[float], t: float) -> int:
    """Index of the rollout that a message stamped `t` belongs to: the last start at or before it. A start
    marker carries its exact time while stamps are rounded to nanoseconds, so a sample taken at the very
    start (an episode's first pose) can read a hair earlier; within SAME_TIME_S it is the same time."""
    return max(0, bisect.bisect_right(starts, t + SAME_TIME_S) - 1)


class RecorderNode(Node):
    def __init__(
        self,
        path: str | Path,
        objects: Iterable[str],
        storage: str = "mcap",
        split_rollouts: bool = False,
        **node_kwargs,
    ) -> None:
        super().__init__("recorder", **node_kwargs)
        self.path, self.storage, self.split = Path(path), storage, split_rollouts
        self.topics = declare_topics(self)
        self._typestore = default_typestore()
        self._writers: dict[int, BagWriter] = {}
        self._starts: list[float] = []
        self.bags: list[Path] = []
        self.recorded = 0  # messages received so far (a caller draining the topics watches it settle)
        self.write_error = ""  # why the bag stopped taking messages ("" while it takes them)
        self.unrecorded = 0  # messages dropped since
        self._order = LogOrder(self._write)
        T = m.rclpy_types()
        inputs = qos.input_qos()
        self.create_subscription(T.DiagnosticArray, self.topics.episode, self._on_marker, qos.EPISODE)
        streams = [
            (T.Clock, self.topics.clock, qos.CLOCK),
            (T.JointState, self.topics.joint_states, inputs),
            (T.DiagnosticArray, self.topics.predicates, qos.PREDICATES),
            (T.DiagnosticArray, self.topics.events, qos.EVENTS),
        ]
        streams += [(T.PoseStamped, self.topics.object_pose.format(name=o), inputs) for o in objects]
        if self.topics.wrench:
            streams.append((T.WrenchStamped, self.topics.wrench, inputs))
        for msg_type, topic, profile in streams:
            self._record(msg_type, topic, profile)

    def _record(self, msg_type, topic: str, profile) -> None:
        name = _type_name(msg_type)

        def callback(raw: bytes) -> None:  # runs in spin, after the subscription (and its name) exist
            msg = self._typestore.deserialize_cdr(raw, name)
            self._order.push(resolved, msg, _stamp(msg))
            self.recorded += 1

        resolved: str = self.create_subscription(msg_type, topic, callback, profile, raw=True).topic_name

    def _on_marker(self, msg) -> None:
        marker = read_marker(self, msg)
        if marker is None:
            return
        if marker.kind == START and self.split:
            bisect.insort(self._starts, marker.t)

    def _write(self, topic: str, msg: Any, t: float, log_t: float) -> None:
        if self.write_error:
            self.unrecorded += 1
            return
        try:
            self._writer(t).write(topic, msg, log_t)
        except (OSError, SafetyMonitorError) as exc:  # a full disk; a bag folder that cannot be made
            self.write_error = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
            self.unrecorded += 1
            self.get_logger().error(f"cannot write the bag {self.path}: {self.write_error}; recording stopped")

    def _writer(self, t: float) -> BagWriter:
        """The bag of the rollout that time `t` belongs to (the last start at or before it)."""
        index = rollout_of(self._starts, t)
        writer = self._writers.get(index)
        if writer is None:
            path = self.path / f"episode_{index:03d}" if self.split else self.path
            writer = self._writers[index] = BagWriter(path, self.storage, self._typestore).__enter__()
            self.bags.append(path)
        return writer

    def destroy_node(self) -> None:
        self._order.flush()
        if self._order.late:
            self.get_logger().warning(
                f"{self._order.late} message(s) arrived more than {HELD} messages after "
                "newer ones: recorded at the newest log time written, header stamps kept"
            )
        for writer in self._writers.values():
            try:
                writer.close()
            except OSError as exc:  # its index or metadata.yaml: the disk is still full
                self.write_error = self.write_error or (exc.strerror or str(exc))
        self._writers.clear()
        super().destroy_node()
