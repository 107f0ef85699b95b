"""Play a bag into running node processes in lockstep with its recorded time (for the differential test).

Every message goes out in the bag's order, as its recorded bytes, on the nodes' namespace, and `/clock`
carries each message's log time first (the nodes run with `use_sim_time`), so their clock is the
recording's. Nothing here waits for wall seconds: the pace is set by what the nodes send back.

- Answers: in the robot-state layer the estimator answers each frame with a predicates message; at most
  `in_flight` joint messages go out unanswered. A joint message that makes no frame (NaN, time going
  back) is never answered: a quiet period without answers says so.
- Quiet periods are measured in messages: each node publishes `/diagnostics` on its own period, from the
  same executor that takes its inputs, so `quiet` new diagnostics from every node, with no new answer and
  no new monitor frame in between, mean each node has taken everything sent before. Their header stamp
  is the node clock, so a quiet period also proves every node's clock reached the last `/clock` sent
  (`/clock` is best effort: it is sent again until it has).
- The player settles (a quiet period) once `window` messages went out on one topic, so no queue (200 deep
  per topic, and the estimator's predicates to the monitor) can overflow however slow a node is, and
  around every jump of the log time longer than `jump_s`, so a watchdog running on the node clock fires
  by the recorded time, before the message after the gap arrives.

Anything that is not a node's behaviour (a node that dies, a link that never matches) raises PlaybackError,
never AssertionError, so a strict xfail cannot hide it.
"""
from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from safety_monitor.io.bag import BagReader

GUARD_S = 300.0  # a failure guard only: no wait is expected to come near it, however slow the machine
SEND_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000, reliability=ReliabilityPolicy.RELIABLE)
TAKE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000, reliability=ReliabilityPolicy.RELIABLE)


class PlaybackError(RuntimeError):
    """The playback itself failed (a node died or never connected): not a difference between drivers."""


@dataclass
class NodeProcess:
    """One node executable (a console script of the package, as `ros2 run` starts it), logging to a file."""

    name: str
    proc: subprocess.Popen
    log: Path

    @classmethod
    def start(cls, executable: str, log_dir: Path, ns: str, params_file: Path, *params: str) -> NodeProcess:
        args = [str(Path(sys.executable).parent / executable), "--ros-args", "-r", f"__ns:={ns}",
                "-r", f"/clock:={ns}/clock", "--params-file", str(params_file)]
        for p in params:
            args += ["-p", p]
        log = log_dir / f"{executable}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=os.environ.copy())
        return cls(executable, proc, log)

    def tail(self) -> str:
        return f"--- {self.name} log:\n" + self.log.read_text()[-3000:]

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise PlaybackError(f"{self.name} exited with {self.proc.returncode}\n{self.tail()}")

    def stop(self) -> None:
        """Ctrl-C, as a user stops it; the node closes its trace (end-of-trace events) and exits 0."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise PlaybackError(f"{self.name} did not stop on SIGINT\n{self.tail()}") from None
        if code != 0:
            raise PlaybackError(f"{self.name} exited with {code} on SIGINT\n{self.tail()}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@dataclass
class _Source:
    """A node's diagnostics: how many arrived, the last header stamp (its clock, ns) and key values."""

    status: str  # the status name that identifies the node's own diagnostics
    count: int = 0
    stamp_ns: int = -1
    values: dict[str, str] = field(default_factory=dict)


def _message_class(msgtype: str):
    package, _, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


class LockstepPlayer:
    """Plays bags into the nodes under namespace `ns`.

    `sources`: status names of each node's `/diagnostics` (the quiet-period clocks); `monitor` the one
    whose `frame` value counts the monitor's steps. `answers`: the topic on which each frame made from
    `answered` comes back (None: nothing answers, as when predicates go straight to the monitor).
    `subscribers`: bag topic -> how many node subscriptions to wait for before playing.
    """

    def __init__(self, context, ns: str, processes: Iterable[NodeProcess], sources: Iterable[str], monitor: str,
                 subscribers: Mapping[str, int], answers: str | None = None, answered: str | None = None,
                 in_flight: int = 50, window: int = 100, jump_s: float = 1.0, quiet: int = 3) -> None:
        self.ns, self.processes = ns, list(processes)
        self.subscribers, self.answered = dict(subscribers), answered
        self.in_flight, self.window, self.jump_ns, self.quiet = in_flight, window, round(jump_s * 1e9), quiet
        self.node = rclpy.create_node("bag_player", namespace=ns, context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.sources = {name: _Source(name) for name in sources}
        self.monitor = self.sources[monitor]
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, TAKE_QOS)
        self.answers = 0
        self._answer_topic = answers
        if answers is not None:
            self.node.create_subscription(DiagnosticArray, ns + answers, self._on_answer, TAKE_QOS, raw=True)
        self._clock_pub = self.node.create_publisher(Clock, ns + "/clock", SEND_QOS)
        self._pubs: dict[str, object] = {}
        self.clock_ns: int | None = None
        self._sent_answered = self._written_off = 0

    # ------------------------------------------------------------------------------ receiving
    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            source = self.sources.get(status.name)
            if source is not None:
                source.count += 1
                source.stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
                source.values = {kv.key: kv.value for kv in status.values}

    def _on_answer(self, _raw: bytes) -> None:
        self.answers += 1

    def monitor_frames(self) -> int:
        """The monitor's frame count in its last diagnostics (read after a quiet period: it is final)."""
        return int(self.monitor.values["frame"])

    def _spin_until(self, done: Callable[[], bool], what: str, each: Callable[[], None] | None = None) -> None:
        deadline = time.monotonic() + GUARD_S
        while not done():
            for p in self.processes:
                p.check()
            if time.monotonic() > deadline:
                raise PlaybackError(f"no {what} within {GUARD_S:g} s\n" + "\n".join(p.tail() for p in self.processes))
            if each is not None:
                each()
            self.executor.spin_once(timeout_sec=0.05)

    # -------------------------------------------------------------------------------- sending
    def _pub(self, topic: str, msgtype: str):
        pub = self._pubs.get(topic)
        if pub is None:
            pub = self._pubs[topic] = self.node.create_publisher(_message_class(msgtype), self.ns + topic, SEND_QOS)
        return pub

    def _send_clock(self) -> None:
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = divmod(self.clock_ns, 1_000_000_000)
        self._clock_pub.publish(msg)

    def _progress(self) -> tuple[int, str | None]:
        return self.answers, self.monitor.values.get("frame")

    def settle(self) -> None:
        """A quiet period: `quiet` diagnostics from every node, each stamped at the last clock sent, with
        no answer and no monitor step in between (repeated until one passes without)."""
        while True:
            before = self._progress()
            marks = {name: s.count for name, s in self.sources.items()}

            def quiet() -> bool:
                return all(s.count >= marks[name] + self.quiet and s.stamp_ns == self.clock_ns
                           for name, s in self.sources.items())

            self._spin_until(quiet, "quiet period", each=self._send_clock)
            if self._progress() == before:
                return

    def connect(self, topics: Mapping[str, str]) -> None:
        """Publishers for every bag topic, matched with the node subscriptions expected; every node heard."""
        for topic, msgtype in topics.items():
            self._pub(topic, msgtype)

        def matched() -> bool:
            return (all(self._pubs[t].get_subscription_count() >= self.subscribers.get(t, 0) for t in topics)
                    and self._clock_pub.get_subscription_count() >= len(self.processes)
                    and all(s.count for s in self.sources.values())
                    and (self._answer_topic is None or self._answers_matched()))

        self._spin_until(matched, "matched subscriptions")

    def _answers_matched(self) -> bool:
        """Estimator -> monitor and -> this player: the graph lists both subscriptions and the publisher."""
        topic = self.ns + self._answer_topic
        return self.node.count_publishers(topic) >= 1 and self.node.count_subscribers(topic) >= 2

    def play(self, bag: Path) -> None:
        with BagReader(bag) as reader:
            topics = {name: s.msgtype for name, s in reader.topics.items()}
            self.connect(topics)
            messages = list(reader.raw_messages(topics))
        self.clock_ns = messages[0][2]
        self.settle()  # every node's clock at the recording's start before its first message
        since_settle: Counter[str] = Counter()  # messages per topic since the last quiet period
        for topic, msgtype, log_ns, raw in messages:
            if log_ns != self.clock_ns:
                jump = log_ns - self.clock_ns > self.jump_ns
                if jump:
                    self.settle()
                self.clock_ns = log_ns
                self._send_clock()
                if jump:
                    self.settle()
                    since_settle.clear()
            if topic == self.answered:
                self._wait_for_answers()
                self._sent_answered += 1
            self._pub(topic, msgtype).publish(raw)
            since_settle[topic] += 1
            if since_settle[topic] >= self.window:
                self.settle()
                since_settle.clear()
        self.settle()

    def _wait_for_answers(self) -> None:
        """Block while `in_flight` answered-topic messages are unanswered; a quiet period writes them off
        (messages that made no frame)."""
        if self._sent_answered - self.answers - self._written_off < self.in_flight:
            return
        marks = {name: s.count for name, s in self.sources.items()}
        answers = self.answers

        def answered_or_quiet() -> bool:
            return self.answers > answers or all(s.count >= marks[n] + self.quiet for n, s in self.sources.items())

        self._spin_until(answered_or_quiet, "answer or quiet period")
        if self.answers == answers:
            self._written_off = self._sent_answered - self.answers

    def close(self) -> None:
        self.node.destroy_node()
