"""Records the input topics, predicates and events of a run to rosbag2 (mcap or sqlite3) with rosbags.

Messages are re-serialised by `sources.bag.BagWriter` (rosbags' own CDR, definitions embedded), with
the header stamp as log time, so a bag of a simulated run is deterministic for its seed. With
`split_rollouts`, each rollout (episode marker) goes to its own bag `<path>/episode_<k>`, so bag
replay scores each rollout as the trace the live monitor closed.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable
from pathlib import Path

from rclpy.node import Node

from safety_monitor.errors import SourceError
from safety_monitor.nodes import qos
from safety_monitor.nodes.episode_marker import START, decode_marker
from safety_monitor.nodes.params import declare_topics
from safety_monitor.sources import messages as m
from safety_monitor.sources.bag import BagWriter


class RecorderNode(Node):
    def __init__(self, path: str | Path, objects: Iterable[str], storage: str = "mcap",
                 split_rollouts: bool = False, **node_kwargs) -> None:
        super().__init__("recorder", **node_kwargs)
        self.path, self.storage, self.split = Path(path), storage, split_rollouts
        self.topics = declare_topics(self)
        self._writers: dict[int, BagWriter] = {}
        self._starts: list[float] = []
        self.bags: list[Path] = []
        T = m.rclpy_types()
        inputs = qos.input_qos()
        self.create_subscription(T.DiagnosticArray, self.topics.episode, self._on_marker, qos.EPISODE)
        self._subscribe(T.Clock, self.topics.clock, qos.CLOCK,
                        lambda w, topic, msg: w.write_clock(m.stamp_seconds(msg.clock), topic),
                        lambda msg: m.stamp_seconds(msg.clock))
        if self.topics.wrench:
            self._subscribe(T.WrenchStamped, self.topics.wrench, inputs,
                            self._write_wrench)
        for name in objects:
            self._subscribe(T.PoseStamped, self.topics.object_pose.format(name=name), inputs,
                            self._write_pose)
        self._subscribe(T.JointState, self.topics.joint_states, inputs, self._write_joints)
        self._subscribe(T.DiagnosticArray, self.topics.predicates, qos.PREDICATES, self._write_predicates)
        self._subscribe(T.DiagnosticArray, self.topics.events, qos.EVENTS,
                        lambda w, topic, msg: w.write_events(topic, m.decode_events(msg),
                                                             m.stamp_seconds(msg.header.stamp)))

    def _subscribe(self, msg_type, topic: str, profile, write, stamp=None) -> None:
        stamp = stamp or (lambda msg: m.stamp_seconds(msg.header.stamp))
        sub = None

        def callback(msg) -> None:
            write(self._writer(stamp(msg)), sub.topic_name, msg)

        sub = self.create_subscription(msg_type, topic, callback, profile)

    @staticmethod
    def _write_joints(w: BagWriter, topic: str, msg) -> None:
        s = m.joint_state_sample(msg)
        w.write_joint_state(topic, s.stamp, s.names, s.position, s.velocity, s.effort)

    @staticmethod
    def _write_wrench(w: BagWriter, topic: str, msg) -> None:
        wrench, stamp = m.wrench_of(msg)
        w.write_wrench(topic, stamp, wrench)

    @staticmethod
    def _write_pose(w: BagWriter, topic: str, msg) -> None:
        pose, stamp = m.pose_of(msg)
        w.write_pose(topic, stamp, pose)

    @staticmethod
    def _write_predicates(w: BagWriter, topic: str, msg) -> None:
        hardware_id = msg.status[0].hardware_id if msg.status else "estimator"
        w.write_predicates(topic, m.decode_predicates(msg), hardware_id=hardware_id)

    def _on_marker(self, msg) -> None:
        try:
            marker = decode_marker(msg)
        except SourceError as exc:
            self.get_logger().error(str(exc))
            return
        if marker.kind == START and self.split:
            bisect.insort(self._starts, marker.t)

    def _writer(self, t: float) -> BagWriter:
        """The bag of the rollout that time `t` belongs to (the last start at or before it)."""
        index = max(0, bisect.bisect_right(self._starts, t) - 1)
        writer = self._writers.get(index)
        if writer is None:
            path = self.path / f"episode_{index:03d}" if self.split else self.path
            writer = self._writers[index] = BagWriter(path, self.storage).__enter__()
            self.bags.append(path)
        return writer

    def destroy_node(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        super().destroy_node()
