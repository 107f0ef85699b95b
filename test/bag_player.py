"""Play a bag into running node processes in lockstep with its recorded time (for the differential test).

Every message goes out in the bag's order, as its recorded bytes, on the nodes' namespace, and `/clock`
carries each message's log time first (the nodes run with `use_sim_time`), so their clock is the
recording's. Nothing here waits for wall seconds: the pace is set by what the nodes send back.

- Order across topics: DDS keeps order within a topic only (a reliable retransmission under load lets a
  later message on another topic overtake). A message is sent only once every earlier message on other
  topics is acknowledged, i.e. in the node's queue, which its executor takes in arrival order.
- Links: the player waits for its publishers to match the nodes' subscriptions. The estimator's link to
  the monitor cannot be seen from outside; the first frame proves it (the monitor steps it), else
  NotConnected asks for a fresh start: a fact about discovery under load, not about the drivers.

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

Fast DDS repairs a lost sample, and answers `wait_for_all_acked`, at its writers' heartbeat, every 3 s
by default: `dds_env` gives the player and the nodes a profile that beats every millisecond, so order is
kept at the cost of a round trip, not seconds. Fast DDS reads it once per process: run this file as a
script (`python bag_player.py BAG --folder F --params P [--estimator]`, what `play` does) so the player
has a process of its own. It starts the nodes, plays, stops them, and writes F/result.json.

Anything that is not a node's behaviour (a node that dies, a link that never matches) is a PlaybackError
(exit 1; NotConnected exits 3: start again), never a test assertion, so a strict xfail cannot hide it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.duration import Duration
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from safety_monitor.io.bag import BagReader

GUARD_S = 300.0  # a failure guard only: no wait is expected to come near it, however slow the machine
SEND_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000, reliability=ReliabilityPolicy.RELIABLE)
TAKE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000, reliability=ReliabilityPolicy.RELIABLE)
NOT_CONNECTED = 3  # exit code: the nodes were not connected yet (start again with fresh processes)
OBJECTS = ("mug", "plate", "raw_chicken", "cube")  # the workcell's objects: the estimator's pose topics
FASTDDS_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns="http://www.eprosima.com">
  <profiles>
    <data_writer profile_name="differential_test_writer" is_default_profile="true">
      <times><heartbeat_period><sec>0</sec><nanosec>1000000</nanosec></heartbeat_period></times>
    </data_writer>
  </profiles>
</dds>
"""


class PlaybackError(RuntimeError):
    """The playback itself failed (a node died or never connected): not a difference between drivers."""


class NotConnected(PlaybackError):
    """The monitor did not step the first frame: a link between the nodes was not up yet (start again)."""


@dataclass
class NodeProcess:
    """One node executable (a console script of the package, as `ros2 run` starts it), logging to a file."""

    name: str
    proc: subprocess.Popen
    log: Path

    @classmethod
    def start(cls, executable: str, log_dir: Path, ns: str, params_file: Path, *params: str) -> NodeProcess:
        args = [
            str(Path(sys.executable).parent / executable),
            "--ros-args",
            "-r",
            f"__ns:={ns}",
            "-r",
            f"/clock:={ns}/clock",
            "--params-file",
            str(params_file),
        ]
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

    def __init__(
        self,
        context,
        ns: str,
        processes: Iterable[NodeProcess],
        sources: Iterable[str],
        monitor: str,
        subscribers: Mapping[str, int],
        answers: str | None = None,
        answered: str | None = None,
        in_flight: int = 50,
        window: int = 100,
        jump_s: float = 1.0,
        quiet: int = 4,
    ) -> None:
        self.ns, self.processes = ns, list(processes)
        self.subscribers, self.answered = dict(subscribers), answered
        self.first_frame = answered or next(t for t, n in self.subscribers.items() if n)  # what makes frame 0
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
        self._callbacks = 0  # callbacks run (to tell when the subscriptions' queues are empty)
        self._unacked: set[str] = set()  # topics with messages not yet acknowledged by every subscription

    # ------------------------------------------------------------------------------ receiving
    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            source = self.sources.get(status.name)
            if source is not None:
                source.count += 1
                source.stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
                source.values = {kv.key: kv.value for kv in status.values}
        self._callbacks += 1

    def _on_answer(self, _raw: bytes) -> None:
        self.answers += 1
        self._callbacks += 1

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

    def _drain(self) -> None:
        """Take every message already received, so that what is counted next was sent after this."""
        while True:
            before = self._callbacks
            self.executor.spin_once(timeout_sec=0)
            if self._callbacks == before:
                return

    def _acked(self) -> None:
        """Every message sent so far is in the nodes' queues (acknowledged by each reliable subscription)."""
        for topic in self._unacked:
            if not self._pubs[topic].wait_for_all_acked(Duration(seconds=GUARD_S)):
                raise PlaybackError(f"{topic}: messages not acknowledged within {GUARD_S:g} s")
        self._unacked.clear()

    def settle(self) -> None:
        """A quiet period: `quiet` diagnostics from every node, each stamped at the last clock sent, with
        no answer and no monitor step in between (repeated until one passes without). What was sent is
        in the nodes' queues first, and what was received is taken, so that the diagnostics counted come
        from timers that fired after it (one may still have been on its way: `quiet` is more than one)."""
        self._acked()
        while True:
            self._drain()
            before = self._progress()
            marks = {name: s.count for name, s in self.sources.items()}

            def quiet() -> bool:
                return all(
                    s.count >= marks[name] + self.quiet and s.stamp_ns == self.clock_ns
                    for name, s in self.sources.items()
                )

            self._spin_until(quiet, "quiet period", each=self._send_clock)
            if self._progress() == before:
                return

    def connect(self, topics: Mapping[str, str]) -> None:
        """Publishers for every bag topic, matched with the node subscriptions expected; every node heard."""
        for topic, msgtype in topics.items():
            self._pub(topic, msgtype)

        def matched() -> bool:
            return (
                all(self._pubs[t].get_subscription_count() >= self.subscribers.get(t, 0) for t in topics)
                and self._clock_pub.get_subscription_count() >= len(self.processes)
                and all(s.count for s in self.sources.values())
                and (self._answer_topic is None or self._answers_matched())
            )

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
        proven = False  # the monitor stepped the first frame
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
            if self._unacked and (topic == self.answered) != (self.answered in self._unacked):
                self._acked()  # a frame's slower streams are in before its joints, its joints before the next
            self._pub(topic, msgtype).publish(raw)
            self._unacked.add(topic)
            since_settle[topic] += 1
            if not proven and topic == self.first_frame:
                self.settle()
                since_settle.clear()
                if self._progress()[1] in (None, "0"):
                    raise NotConnected("the monitor did not step the first frame: a link was not up")
                proven = True
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
        self.executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        self.node.destroy_node()


def dds_env(folder: Path) -> dict[str, str]:
    """The environment for the player's process and the nodes': Fast DDS writers that beat every millisecond."""
    profile = folder / "fastdds_profile.xml"
    profile.write_text(FASTDDS_PROFILE)
    return {**os.environ, "FASTDDS_DEFAULT_PROFILES_FILE": str(profile)}


WORKCELL_INPUTS = ("/joint_states", "/wrist_wrench", *(f"/objects/{name}/pose" for name in OBJECTS))


def play_into_nodes(
    bag: Path,
    folder: Path,
    params: Path,
    estimator: bool,
    inputs: Sequence[str] = WORKCELL_INPUTS,
    frames_from: str = "/joint_states",
) -> int:
    """Start monitor_node (and estimator_node, which then takes the robot streams: `inputs`, the topics it
    subscribes with the robot of `params`, `frames_from` the one that makes its frames), play the bag, stop
    them: the frames the monitor stepped. Its events are in folder/events.jsonl."""
    ns = "/d" + uuid.uuid4().hex[:10]
    hw = ns.strip("/")
    context = rclpy.Context()
    rclpy.init(context=context)
    procs: list[NodeProcess] = []
    player = None
    try:
        procs.append(
            NodeProcess.start(
                "monitor_node", folder, ns, params, "use_sim_time:=true", f"events_log:={folder / 'events.jsonl'}"
            )
        )
        sources = [f"safety_monitor/{hw}: monitor"]
        if estimator:
            procs.append(NodeProcess.start("estimator_node", folder, ns, params, "use_sim_time:=true"))
            sources.append(f"safety_monitor/{hw}: estimator inputs")
            player = LockstepPlayer(
                context,
                ns,
                procs,
                sources,
                sources[0],
                dict.fromkeys(inputs, 1),
                answers="/safety_monitor/predicates",
                answered=frames_from,
            )
        else:
            player = LockstepPlayer(context, ns, procs, sources, sources[0], {"/safety_monitor/predicates": 1})
        player.play(bag)
        frames = player.monitor_frames()
        for p in procs:  # the monitor first: it closes the trace, logging the end-of-trace events
            p.stop()
        return frames
    finally:
        for p in procs:
            p.kill()
        if player is not None:
            player.close()
        context.try_shutdown()


def play(
    bag: Path,
    folder: Path,
    params: Path,
    estimator: bool,
    attempts: int = 3,
    inputs: Sequence[str] = WORKCELL_INPUTS,
    frames_from: str = "/joint_states",
) -> tuple[int, Path]:
    """`play_into_nodes` in a process of its own (fresh nodes again while they were not connected yet):
    the frames the monitor stepped and its event log."""
    for attempt in range(attempts):
        where = folder / f"attempt{attempt}"
        where.mkdir(parents=True)
        args = [sys.executable, __file__, str(bag), "--folder", str(where), "--params", str(params)]
        args += [f"--input={topic}" for topic in inputs] + [f"--frames-from={frames_from}"]
        done = subprocess.run(args + ["--estimator"] * estimator, env=dds_env(where), capture_output=True, text=True)
        if done.returncode == 0:
            return json.loads((where / "result.json").read_text())["frames"], where / "events.jsonl"
        if done.returncode != NOT_CONNECTED:
            raise PlaybackError(
                f"bag player exited with {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-6000:]}"
            )
    raise PlaybackError(f"the nodes were not connected in {attempts} attempts:\n{done.stderr[-3000:]}")


def logged_events(log: Path) -> list[dict]:
    """The events of the monitor node's event log as `messages.event_fields` gives them: the log's own records
    and the node's bookkeeping (rollout, robot, wall time, pid) left out."""
    from safety_monitor.enums import LogRecordKind

    own = {k.value for k in LogRecordKind}
    events = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] in own:
            continue
        for key in ("rollout", "robot", "wall_time", "pid"):
            record.pop(key, None)
        events.append(record)
    return events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bag", type=Path)
    parser.add_argument("--folder", type=Path, required=True, help="node logs, events.jsonl and result.json")
    parser.add_argument("--params", type=Path, required=True, help="the nodes' parameter file")
    parser.add_argument("--estimator", action="store_true", help="robot streams through estimator_node")
    parser.add_argument("--input", action="append", help="a topic estimator_node subscribes (default: the workcell's)")
    parser.add_argument("--frames-from", default="/joint_states", help="the input topic that makes the frames")
    a = parser.parse_args(argv)
    try:
        frames = play_into_nodes(a.bag, a.folder, a.params, a.estimator, a.input or WORKCELL_INPUTS, a.frames_from)
    except NotConnected as exc:
        print(exc, file=sys.stderr)
        return NOT_CONNECTED
    except PlaybackError as exc:
        print(exc, file=sys.stderr)
        return 1
    (a.folder / "result.json").write_text(json.dumps({"frames": frames}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
