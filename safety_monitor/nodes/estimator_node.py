"""The estimator node: robot topics -> `safety_monitor/predicates`, one message per /joint_states.

A thin driver of the Estimator stage (`pipeline.estimator`), the code path bag replay drives on log times:
subscriptions take bytes, the one decoder (`pipeline.decode`, rclpy's deserialiser as its fallback) reads them,
the stage gets them in arrival order with the node clock, and each sample it makes is published (as bytes,
while anyone subscribes) in the layout of `safety_monitor.io.messages` and handed to `on_sample` when a
monitor shares the process. Subscriptions are created slower streams first, so when several messages wait,
a frame's wrench and poses are taken before the joint message that completes it.

The stage decides every input rule (a frame that cannot be grounded, frozen or stale streams: every
predicate unknown, never guessed); this node logs the issues each call returns, counts them, and renders
/diagnostics from the stage's results and its own load report. A watchdog reports STALE on /diagnostics
when /joint_states stops for `joint_states_timeout_s` (node clock: system time, or sim time under `use_sim_time`; the monitor's own watchdog marks its
properties unknown); a frozen /joint_states (identical values for `joint_states_frozen_s` of stamp time) is
STALE too. Frames missing between consecutive stamps (a node or driver that cannot keep up drops them from
its queue) turn the diagnostics WARN (`frame_load`). A clean stop's last status is STALE `stopped; last: ...`.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from safety_monitor.enums import IssueKind
from safety_monitor.errors import SafetyMonitorError, SourceError
from safety_monitor.files import load_yaml
from safety_monitor.frames import PredicateSample
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.io import cdr
from safety_monitor.io import messages as m
from safety_monitor.nodes import qos
from safety_monitor.nodes.episode_marker import read_marker
from safety_monitor.nodes.frame_load import FrameLoad, LoadReport
from safety_monitor.nodes.incompatible_qos import IncompatibleQos
from safety_monitor.nodes.log_throttle import LogThrottle
from safety_monitor.nodes.params import declare, declare_hardware_id, declare_topics, fix_use_sim_time, no_clock_note
from safety_monitor.nodes.raw_decode import rclpy_decoder
from safety_monitor.nodes.runtime import clock_seconds, now_stamp, run_node
from safety_monitor.pipeline.assemble import GRIPPER_JOINTS, JOINTS, WRENCH, JointTopic, StreamMapping, pose_stream
from safety_monitor.pipeline.decode import Decoder, MessageType
from safety_monitor.pipeline.estimator import Estimator, EstimatorStep, RolloutStart
from safety_monitor.pipeline.markers import START
from safety_monitor.settings import EstimatorSettings

_ERRORS = frozenset({IssueKind.UNDECODABLE, IssueKind.GROUNDING})  # logged as errors, the rest as warnings


class EstimatorNode(Node):
    """`on_sample`: also hand every published PredicateSample to this callable (a monitor in the same
    process, `monitor_stack`, so a frame reaches it without a trip through the middleware)."""

    def __init__(self, on_sample: Callable[[PredicateSample], None] | None = None, **node_kwargs) -> None:
        super().__init__("estimator_node", **node_kwargs)
        self._sim_time = fix_use_sim_time(self)
        self._on_sample = on_sample
        self._read_clock = clock_seconds(self)
        p = self.params = declare(self, EstimatorSettings)
        self.topics = declare_topics(self)
        self.mapping = _mapping(self.topics, p.topics_file)
        self._wrench = self.mapping.wrench is not None
        self._mobile = bool(self.mapping.world_frame)  # the base's pose from TF places the twin's robot
        if not self._wrench:  # said once here, not blind on every frame
            self.get_logger().info(
                "no wrench topic configured: excess_wrench is not grounded (constantly false); the properties "
                "reading it are not applicable to this robot"
            )
        self.stage: Estimator  # with the subscriptions to the inputs, once the robot's model is known (`_ready`)
        self._ready = False
        self._description_problem = ""  # why the robot of a received /robot_description cannot be grounded
        self._incompatible = IncompatibleQos(self, self._qos_remedy, self._publish_diagnostics)
        self.issues: Counter[str] = Counter()
        self._throttled = LogThrottle(self.get_logger())
        self.hardware_id = declare_hardware_id(self)

        T = m.rclpy_types()
        self._writer = cdr.PredicateWriter(hardware_id=self.hardware_id)
        self._pred_pub = self.create_publisher(T.DiagnosticArray, self.topics.predicates, qos.PREDICATES)
        self._diag_pub = self.create_publisher(T.DiagnosticArray, self.topics.diagnostics, qos.DIAGNOSTICS)
        self.create_subscription(T.DiagnosticArray, self.topics.episode, self._on_marker, qos.EPISODE)
        self._read_joints = rclpy_decoder(MessageType.JOINT_STATE, T.JointState)
        self._read_gripper = rclpy_decoder(MessageType.JOINT_STATE, T.JointState)
        self._read_wrench = rclpy_decoder(MessageType.WRENCH_STAMPED, T.WrenchStamped)
        self._read_pose = rclpy_decoder(MessageType.POSE_STAMPED, T.PoseStamped)
        self._last_joints: float | None = None  # node-clock arrival of the last /joint_states
        self._last_stamp = 0.0  # its stamp (0: none yet, or the driver does not stamp)
        self._stale = False
        self._silent_after: float | None = None  # the last stamp before the watchdog's silence, until a message ends it
        self._frozen = False  # /joint_states frozen, as the stage's last step said
        self._stale_streams: frozenset[str] = frozenset()
        self._stopped = False  # a clean stop: the last status says so
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(min(0.05, p.joint_states_timeout_s / 2), self._watchdog, clock=steady)
        self._load: FrameLoad
        self._last_load: LoadReport | None = None
        self._dropped: Counter[str] = Counter()  # /joint_states messages that made no frame this period, by kind
        self._last_dropped: Counter[str] = Counter()  # ... in the last finished period
        self.create_timer(p.diagnostics_period_s, self._on_period, clock=steady)
        if p.robot_description_topic:
            self._urdf_folder = tempfile.TemporaryDirectory(prefix="safety_monitor_urdf_")
            self.create_subscription(_string_type(), p.robot_description_topic, self._on_robot_description, qos.LATCHED)
            self._publish_diagnostics()
        else:
            self._start(
                load_default_grounder(
                    p.control_rate_hz, p.config_dir or None, wrench_sensor=self._wrench, mobile_base=self._mobile
                )
            )

    def _start(self, grounder) -> None:
        """The stage for this robot, and the subscriptions to its inputs (slower streams first)."""
        p, T, mapping = self.params, m.rclpy_types(), self.mapping
        self.grounder = grounder
        self.stage = Estimator(grounder, mapping, p)
        self._load = FrameLoad(p.control_rate_hz, self.stage.limits.joint_states)
        self._ready = True
        inputs = qos.input_qos(p.best_effort_inputs)
        if mapping.wrench:
            self._subscribe(T.WrenchStamped, mapping.wrench, self._on_wrench, inputs)
        for name in grounder.robot.objects:
            if name not in mapping.object_frames:
                self._subscribe(
                    T.PoseStamped, mapping.pose_topic(name), lambda raw, n=name: self._on_pose(n, raw), inputs
                )
        if mapping.object_frames or mapping.world_frame:
            tf_type, read_tf = _tf_input()
            for topic, profile in ((mapping.tf_static, qos.LATCHED), (mapping.tf, inputs)):
                self._subscribe(tf_type, topic, lambda raw, r=read_tf: self._on_tf(r, raw), profile)
        if mapping.gripper_joint_states:
            self._subscribe(T.JointState, mapping.gripper_joint_states, self._on_gripper, inputs)
        for more in mapping.more_joint_states:
            read = rclpy_decoder(MessageType.JOINT_STATE, T.JointState)
            self._subscribe(T.JointState, more.topic, lambda raw, m=more, r=read: self._on_more(m, r, raw), inputs)
        self._subscribe(T.JointState, mapping.joint_states, self._on_joint_states, inputs)

    def _subscribe(self, msg_type, topic: str, callback: Callable[..., None], profile) -> None:
        """An input subscription (bytes) that reports a publisher whose QoS it cannot match."""
        self._incompatible.subscribe(msg_type, topic, callback, profile, raw=True)

    def _qos_remedy(self, policy: str) -> str:
        if policy == "RELIABILITY" and not self.params.best_effort_inputs:
            return "best_effort_inputs: true accepts best-effort publishers"
        return ""

    def _on_robot_description(self, msg) -> None:
        """The URDF from `robot_description_topic`: the robot description with it in place of its urdf: file."""
        if self._ready:
            return  # a robot does not change its model mid-run; a new one needs a restart
        path = Path(self._urdf_folder.name) / "robot_description.urdf"
        path.write_text(m.robot_description_of(msg))
        topic = self.params.robot_description_topic
        try:
            grounder = load_default_grounder(
                self.params.control_rate_hz,
                self.params.config_dir or None,
                urdf=path,
                wrench_sensor=self._wrench,
                mobile_base=self._mobile,
            )
        except SafetyMonitorError as exc:
            self._description_problem = f"{topic} rejected: {exc}"
        else:
            try:
                self._start(grounder)
            except SafetyMonitorError as exc:  # the topic mapping names what the robot lacks: not the model's fault
                self._description_problem = str(exc)
        if self._ready:
            self.get_logger().info(f"robot model from {topic}")
        else:
            self.get_logger().error(self._description_problem)
        self._publish_diagnostics()

    @property
    def frames(self) -> int:
        """Frames published in the current rollout."""
        return self.stage.frames if self._ready else 0

    def _now(self) -> float:
        return self._read_clock()

    def _received(self, stamp: float) -> float | None:
        """Arrival time of a slower stream's sample, which the stage only reads when it asks (a zero stamp, or one
        ahead of the joint stream): reading the clock costs more than the rest of a wrench callback."""
        return self._now() if self.stage.assembler.needs_arrival(stamp) else None

    # ------------------------------------------------------------------------------------- inputs
    def _on_marker(self, msg) -> None:
        marker = read_marker(self, msg)
        if marker is None or marker.kind != START or not self._ready:
            return
        started = self.stage.new_rollout(marker.t)
        if started.issues:  # late: counted on /diagnostics with the other issues
            self._report(started)
        if started.start is RolloutStart.RESET:
            self._load.forget_stamp()
            if self._frozen:  # a fresh stage: nothing frozen
                self._frozen = False
                self._publish_diagnostics()

    def _on_gripper(self, raw: bytes) -> None:
        try:
            joints = self._read_gripper(raw)
        except SourceError as exc:
            return self._report(self.stage.undecodable(GRIPPER_JOINTS, self._now(), exc))
        step = self.stage.gripper_joints(joints, self._received(joints.stamp))
        if step.issues:
            self._report(step)

    def _on_more(self, more: JointTopic, read: Decoder, raw: bytes) -> None:
        """A message of one of the topic mapping's `more_joint_states`."""
        try:
            joints = read(raw)
        except SourceError as exc:
            return self._report(self.stage.undecodable(more.stream, self._now(), exc))
        step = self.stage.more_joints(more.topic, joints, self._received(joints.stamp))
        if step.issues:
            self._report(step)

    def _on_tf(self, read: Callable[[bytes], list], raw: bytes) -> None:
        try:
            transforms = read(raw)
        except SourceError as exc:
            return self._report(self.stage.undecodable("tf", self._now(), exc))
        needs = self.stage.assembler.needs_arrival
        step = self.stage.transforms(transforms, self._now() if any(needs(t[3]) for t in transforms) else None)
        if step.issues:
            self._report(step)

    def _on_wrench(self, raw: bytes) -> None:
        try:
            wrench, stamp = self._read_wrench(raw)
        except SourceError as exc:
            return self._report(self.stage.undecodable(WRENCH, self._now(), exc))
        step = self.stage.wrench(wrench, stamp, self._received(stamp))
        if step.issues:
            self._report(step)

    def _on_pose(self, name: str, raw: bytes) -> None:
        try:
            pose, stamp = self._read_pose(raw)
        except SourceError as exc:
            return self._report(self.stage.undecodable(pose_stream(name), self._now(), exc))
        step = self.stage.pose(name, pose, stamp, self._received(stamp))
        if step.issues:
            self._report(step)

    def _on_joint_states(self, raw: bytes) -> None:
        start = time.perf_counter()
        arrived = self._last_joints = self._now()
        if self._stale:
            self._stale = False
            self._publish_diagnostics()
        try:
            joints = self._read_joints(raw)
        except SourceError as exc:
            step = self.stage.undecodable(JOINTS, self._now(), exc)
        else:
            if self._silent_after is not None:
                self._explain_silence(self._silent_after, joints.stamp)
            self._last_stamp = joints.stamp
            step = self.stage.joints(joints, arrived)  # arrival times tell a silence from a clock step
        sample = step.sample
        if step.issues:
            self._report(step)
            if sample is None:  # this message made no frame: its joint issues say why
                self._dropped.update(issue.kind for issue in step.issues if issue.stream == JOINTS)
        if step.frozen_changed:
            self._report_frozen(step.frozen)
        if sample is None:
            return
        if self._pred_pub.get_subscription_count():  # nobody listening (a one-process stack alone): not written
            self._pred_pub.publish(self._writer.write(sample))
        if self._on_sample is not None:
            self._on_sample(sample)
        self._load.frame(sample.t, time.perf_counter() - start)
        if sample.stale != self._stale_streams:
            self._stale_streams = sample.stale
            self._publish_diagnostics()

    def _report(self, step: EstimatorStep) -> None:
        """Count and log (throttled per kind and stream) the issues one call raised."""
        for issue in step.issues:
            self.issues[issue.kind] += 1
            self._throttled(
                "error" if issue.kind in _ERRORS else "warning",
                f"{issue.kind}:{issue.stream}",
                f"{issue.stream}: {issue.detail}",
            )

    def _report_frozen(self, frozen: bool) -> None:
        """/joint_states turned frozen (its frames stale) or moves again: log it, turn STALE or back."""
        self._frozen = frozen
        if frozen:
            self.get_logger().warning(
                f"{self.topics.joint_states} frozen for {self.params.joint_states_frozen_s} s: every predicate unknown"
            )
        else:
            self.get_logger().info(f"{self.topics.joint_states} moves again")
        self._publish_diagnostics()

    # ----------------------------------------------------------------------------------- watchdog
    def _watchdog(self) -> None:
        last = self._last_joints
        if self._stale or last is None or self._now() - last <= self.params.joint_states_timeout_s:
            return
        self._stale = True
        self._silent_after = self._last_stamp or None
        self.get_logger().warning(f"no {self.topics.joint_states} for {self.params.joint_states_timeout_s} s")
        self._publish_diagnostics()

    def _explain_silence(self, last: float, stamp: float) -> None:
        """The first /joint_states after the watchdog's silence. If its stamp continues the last one heard
        within the timeout, the driver sent them in time and they reached this node late: this process or
        its host fell behind (or the network held them back). Said as such, so the STALE that was right is
        not read as a driver that stopped; the predicates of those frames were published late, not lost."""
        self._silent_after = None
        timeout = self.params.joint_states_timeout_s
        if not 0.0 < stamp - last <= timeout:  # a gap in the stamps too (or no stamps): the stream did stop
            return
        self.issues[IssueKind.LATE_ARRIVAL] += 1
        self._throttled(
            "warning",
            f"{IssueKind.LATE_ARRIVAL}:{JOINTS}",
            f"{JOINTS}: stamped {stamp - last:.3f} s after the last one heard before over {timeout:g} s without "
            f"{self.topics.joint_states}: sent in time, it reached the estimator late (this process or its host "
            "fell behind, or the network held it back); the driver did not stop",
        )

    def _on_period(self) -> None:
        """Every diagnostics period: how many frames went missing and what they cost, then publish."""
        if not self._ready:  # no robot model yet: nothing to count
            return self._publish_diagnostics()
        load = self._last_load = self._load.report()
        self._last_dropped, self._dropped = self._dropped, Counter()
        if load.falling_behind:
            self._throttled("warning", "falling_behind", f"falling behind: {load.message()}")
        self._publish_diagnostics()

    def why_no_frames(self) -> str | None:
        """Why no frame comes, as this node's /diagnostics says it (no robot model, /joint_states not come or
        stopped), or None when its inputs do not say. A monitor in this process names it beside its own
        watchdog's "no advancing predicates", which cannot tell which input stopped."""
        if self._ready:
            self._watchdog()  # the monitor's watchdog may run before this one: the same silence
        return self._silence()

    def _silence(self) -> str | None:
        if not self._ready:  # the robot's model has not come (or cannot be grounded): nothing is grounded
            return self._description_problem or f"waiting for {self.params.robot_description_topic}"
        if self._last_joints is None:
            refused = self._incompatible.text(self.mapping.joint_states)
            return f"waiting for {self.topics.joint_states}" + (f": {refused}" if refused else "")
        if self._stale:
            return f"no {self.topics.joint_states} for more than {self.params.joint_states_timeout_s} s"
        return None

    def _publish_diagnostics(self) -> None:
        if not self.context.ok():
            return
        load = self._last_load
        if (silence := self._silence()) is not None:
            level, message = m.STALE, silence
        elif self._frozen:
            level = m.STALE
            message = f"{self.topics.joint_states} frozen for more than {self.params.joint_states_frozen_s} s"
        elif self._stale_streams:
            level, message = m.WARN, "stale: " + ", ".join(sorted(self._stale_streams))
        else:
            level, message = m.OK, "inputs fresh"
        if note := no_clock_note(self._sim_time, self._now(), self.topics.joint_states):
            level, message = max(level, m.WARN), f"{message}; {note}"
        if level != m.STALE and load is not None and load.falling_behind:
            level, message = m.WARN, load.message() + ("; " + message if level == m.WARN else "")
        dropped = self._last_dropped
        if level != m.STALE and dropped:
            kinds = ", ".join(f"{k} x{n}" for k, n in sorted(dropped.items()))
            if load is not None and load.frames == 0:  # messages come, none makes a frame: nothing is monitored
                level, message = (
                    m.STALE,
                    (
                        f"every {self.topics.joint_states} message dropped ({kinds}); stamps "
                        "behind the last frame mean a restarted driver or simulator: restart "
                        "this node or start a new rollout"
                    ),
                )
            else:
                level = m.WARN
                message = f"{sum(dropped.values())} {self.topics.joint_states} message(s) dropped ({kinds}); " + message
        if self._stopped:
            level, message = m.STALE, f"stopped; last: {message}"
        values = [("frames", str(self.frames))] + [(f"issues.{k}", str(v)) for k, v in sorted(self.issues.items())]
        values += load.values() if load is not None else []
        values += self._incompatible.values()
        hw = self.hardware_id
        self._diag_pub.publish(
            cdr.write_diagnostics(
                now_stamp(self), [(level, f"safety_monitor/{hw}: estimator inputs", message, hw, values)]
            )
        )

    def destroy_node(self) -> None:
        """A last status saying the stop: diagnostics tools keep the last one per name for good, and an OK
        `inputs fresh` left by a stopped estimator read as inputs still watched."""
        if not self._stopped:
            self._stopped = True
            self._publish_diagnostics()
        super().destroy_node()


def _mapping(topics, topics_file: str) -> StreamMapping:
    """The topics.* parameters, with the keys `topics_file` gives in their place."""
    mapping = StreamMapping(
        joint_states=topics.joint_states, wrench=topics.wrench or None, object_pose=topics.object_pose
    )
    if not topics_file:
        return mapping
    if not Path(topics_file).is_file():
        raise SourceError(f"topics_file {topics_file!r} is no file")
    given = StreamMapping.parse(topics_file)
    # every key the file gives, whatever its value: `joint_states: joint_states` equals StreamMapping's default,
    # and still replaces a topics.joint_states parameter set to another topic
    keys = load_yaml(Path(topics_file), "topic mapping", SourceError) or {}
    return dataclasses.replace(mapping, **{key: getattr(given, key) for key in keys}, origin=given.origin)


def _string_type():
    from std_msgs.msg import String

    return String


def _tf_input() -> tuple[Any, Decoder]:
    """The message class the /tf and /tf_static subscriptions are made with, and the decoder of their bytes
    (rclpy's deserialiser of that class: TFMessage has no direct reader). One seam, so a test on a machine
    without tf2_msgs can swap both."""
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        raise SourceError(
            "object_frames and world_frame need the tf2_msgs message package (any ROS 2 install has it; a pip install: "
            "the ros-tf2-msgs wheel)"
        ) from None
    return TFMessage, rclpy_decoder(MessageType.TF_MESSAGE, TFMessage)


def main(args: list[str] | None = None) -> int:
    return run_node("estimator_node", EstimatorNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
