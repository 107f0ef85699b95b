"""The Estimator stage: decoded robot messages in arrival order -> one PredicateSample per frame (DESIGN.md 2).

The one estimator code path: the estimator node drives it from its subscriptions with the node clock, replay
from a bag with log times, simbag as it writes. It is the FrameAssembler and the grounder with the frame
numbering of `/safety_monitor/predicates`; it holds no clock (`received` is the driver's arrival time, read
for a zero stamp and, for /joint_states, to tell a stream that went silent from a clock that stepped) and
imports no rclpy.

Every call returns an `EstimatorStep`: the sample its message made (if any) and exactly the issues that call
raised, never issues held over from earlier calls, so every driver attributes an issue to the same message.
The frozen joint stream is part of the step too, with its onset and end flagged once each, instead of a flag
a driver polls. The node's wall-clock watchdog (no /joint_states at all for `joint_states_timeout_s`) stays in
the node: it only sets the node's /diagnostics level (the predicates watchdog that makes properties blind is
the Supervisor's), and a bag cannot stop arriving.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from enum import Enum
from typing import Any, NamedTuple

from safety_monitor.enums import IssueKind
from safety_monitor.errors import SourceError
from safety_monitor.frames import BASE_POSE, SAME_TIME_S, JointSample, Pose, PredicateSample, StreamIssue, Wrench
from safety_monitor.pipeline.assemble import (
    JOINTS,
    FrameAssembler,
    StaleLimits,
    StreamMapping,
    ground_frame,
    pose_stream,
)
from safety_monitor.pipeline.inputs import TF
from safety_monitor.pipeline.tf import ROBOT, Transform, TransformTree
from safety_monitor.settings import EstimatorSettings


class RolloutStart(Enum):
    """What a rollout start marker did to the stage."""

    RESET = "reset"  # the last rollout forgotten: frame numbers, assembler and grounder start afresh
    LATE = "late"  # the marker came after a frame at or past its time was grounded: the grounder restarts
    # now and the next `warmup_frames` are blind (frame numbers go on: the Supervisor cuts by the marker)
    FRESH = "fresh"  # nothing grounded since the last start: nothing to forget


class EstimatorStep(NamedTuple):
    """What one call did. `frozen`: /joint_states is frozen after it (its frames stale, every predicate
    unknown); `frozen_changed`: this call turned it frozen, or moving again. A NamedTuple: one is built every
    frame (0.3 us, a frozen dataclass 1.0)."""

    sample: PredicateSample | None = None  # the frame this message made; None: it made none
    issues: tuple[StreamIssue, ...] = ()  # raised by this call, and by no other
    frozen: bool = False
    frozen_changed: bool = False
    start: RolloutStart | None = None  # what a start marker did (`new_rollout` only)


_QUIET = (EstimatorStep(), EstimatorStep(frozen=True))  # a call without frame, issue or change, by `frozen`
_new_tuple = tuple.__new__  # builds a NamedTuple from all its values without the class's Python __new__


class Estimator:
    """`grounder`: the robot's (`grounding.grounder.load_default_grounder`); `mapping`: topic and joint names;
    `settings`: the estimator's limits. `clock`: a profiling clock, to split `timings` into assembling and
    grounding seconds (replay's stage timings); the results never depend on it."""

    def __init__(
        self,
        grounder: Any,
        mapping: StreamMapping | None = None,
        settings: EstimatorSettings = EstimatorSettings(),
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.grounder = grounder
        self.mapping = mapping or StreamMapping()
        self.limits = StaleLimits.for_grounder(grounder, settings)
        self.warmup_frames: int = grounder.warmup_frames
        self._restart_s = settings.restart_backwards_s
        self.timings = {"assemble": 0.0, "ground": 0.0}
        self._clock = clock
        robot = grounder.robot
        if grounder.wrench_sensor != (self.mapping.wrench is not None):
            raise SourceError(
                f"the topic mapping has {'a' if self.mapping.wrench else 'no'} wrench topic but the grounder was "
                f"built with wrench_sensor={grounder.wrench_sensor} (load_default_grounder's wrench_sensor)"
            )
        self.mapping.check_names(robot)
        base, world = self.mapping.base_frame or robot.base_body, self.mapping.world_frame
        if grounder.mobile_base != bool(world):
            raise SourceError(
                f"the topic mapping has {'a' if world else 'no'} world_frame but the grounder was built with "
                f"mobile_base={grounder.mobile_base} (load_default_grounder's mobile_base)"
            )
        self.tf = TransformTree(world or base, self.mapping.object_frames, base if world else None)
        self._start()

    def _start(self) -> None:
        robot = self.grounder.robot
        self.assembler = FrameAssembler(
            robot.required_joints,
            tuple(robot.objects),
            self.mapping,
            self.limits,
            self.grounder.joint_limits,
            self.grounder.thresholds.joint_limits.jump_factor,
            optional=sorted(robot.accepted_joints - set(robot.required_joints)),  # the twin places them (other arm)
            base_jump=self.grounder.thresholds.base_jump,
            judged=robot.robot_joints,  # its own arm and gripper: never judged where they were (held)
        )
        self.frames = 0  # frames of the current rollout: the next sample's number
        self._last_t: float | None = None  # time of the last frame grounded in this rollout
        self._jumped: tuple[float, float] | None = None  # (previous, frame) times of the last joint_jump issue
        self._frozen = False
        self._warming = 0  # frames still to publish blind while the restarted grounder gathers evidence

    # ------------------------------------------------------------------------------------- inputs
    def joints(self, sample: JointSample, received: float | None = None) -> EstimatorStep:
        """A /joint_states message: the frame it makes, grounded and numbered (or None, its issues say why)."""
        stamp, last = sample.stamp, self._last_t
        # `_restarted`'s own test first (NaN restarts, as there): a call a frame less on the common path
        restarted = () if last is None or not stamp or stamp >= last - self._restart_s else self._restarted(stamp)
        clock, assembler = self._clock, self.assembler
        start = clock() if clock else 0.0
        frame = assembler.on_joint_sample(sample, received)
        if clock:
            mid = clock()
            self.timings["assemble"] += mid - start
        if frame is None:
            out, issues = None, assembler.drain_issues()
        else:
            previous, t = self._last_t, frame.state.t
            self._last_t = t
            if frame.resync:  # evidence from before the break would read the gap as motion: start afresh
                self.grounder.reset()
                self._warming = self.warmup_frames
            out, failure = ground_frame(self.grounder, frame, self.frames)
            if self._warming:
                self._warming -= 1
                out = replace(out, unknown=frozenset(out.values))
            self.frames += 1
            issues = frame.issues
            if issues and previous is not None and any(i.kind is IssueKind.JOINT_JUMP for i in issues):
                self._jumped = (previous, t)  # a late start marker may show this step to span two rollouts
            if failure is not None:
                issues += (StreamIssue(IssueKind.GROUNDING, JOINTS, t, f"{failure}; every predicate unknown"),)
            if clock:
                self.timings["ground"] += clock() - mid
        if restarted:
            issues = restarted + issues
        frozen = assembler.joints_frozen
        changed = frozen != self._frozen
        if out is None and not issues and not changed:
            return _QUIET[frozen]
        self._frozen = frozen
        # every field by position through tuple.__new__: the NamedTuple's Python __new__ is 1.2 thousand
        # instructions a frame more
        return _new_tuple(EstimatorStep, (out, issues, frozen, changed, None))

    def wrench(self, wrench: Wrench, stamp: float, received: float | None = None) -> EstimatorStep:
        """A wrist wrench message: sampled by the next frame."""
        last = self._last_t  # (`_restarted`'s test first, as in `joints`)
        restarted = () if last is None or not stamp or stamp >= last - self._restart_s else self._restarted(stamp)
        clock = self._clock
        start = clock() if clock else 0.0
        self.assembler.on_wrench_sample(wrench, stamp, received)
        if clock:
            self.timings["assemble"] += clock() - start
        return self._between_frames(restarted)

    def pose(self, name: str, pose: Pose, stamp: float, received: float | None = None) -> EstimatorStep:
        """An object's pose message: sampled by the next frame."""
        last = self._last_t  # (`_restarted`'s test first, as in `joints`)
        restarted = () if last is None or not stamp or stamp >= last - self._restart_s else self._restarted(stamp)
        clock = self._clock
        start = clock() if clock else 0.0
        self.assembler.on_pose_sample(name, pose, stamp, received)
        if clock:
            self.timings["assemble"] += clock() - start
        return self._between_frames(restarted)

    def gripper_joints(self, sample: JointSample, received: float | None = None) -> EstimatorStep:
        """A message of the gripper's own JointState topic: merged by name into the next frame."""
        return self.more_joints(None, sample, received)

    def more_joints(self, topic: str | None, sample: JointSample, received: float | None = None) -> EstimatorStep:
        """A message of `topic`, one of the mapping's `more_joint_states` (None: its `gripper_joint_states`):
        merged by name into the next frame. Stamped far behind the last frame, it restarts the input as any
        stream's does: at a restart another arm's joints may come before the arm that makes the frames."""
        restarted = self._restarted(sample.stamp)
        clock = self._clock
        start = clock() if clock else 0.0
        self.assembler.on_joint_update(sample, received, topic)
        if clock:
            self.timings["assemble"] += clock() - start
        return self._between_frames(restarted)

    def transforms(
        self, transforms: list[tuple[str, str, Pose, float]], received: float | None = None
    ) -> EstimatorStep:
        """A /tf or /tf_static message ((parent, child, pose, stamp) per transform): the poses of the objects whose
        chain to the base frame (the world frame, for a mobile base) it changed, and a mobile base's pose in the
        world frame, each sampled by the next frame as a pose message would be."""
        clock = self._clock
        start = clock() if clock else 0.0
        tree = self.tf
        for name, pose, stamp in tree.update(Transform(*t) for t in transforms):
            if name == ROBOT:
                self.assembler.on_base_sample(pose, stamp, received)
            else:
                self.assembler.on_pose_sample(name, pose, stamp, received)
        if clock:
            self.timings["assemble"] += clock() - start
        if not tree.problems:
            return self._between_frames()
        said = tuple(
            StreamIssue(
                p.kind,
                TF if p.name is None else BASE_POSE if p.name == ROBOT else pose_stream(p.name),
                p.stamp,
                p.detail,
            )
            for p in tree.problems
        )
        return self._between_frames(issues=said + self.assembler.drain_issues())

    def undecodable(self, stream: str, received: float, error: Exception) -> EstimatorStep:
        """A message of `stream` that `decode` could not read (`error`), dropped at arrival time `received`."""
        issue = StreamIssue(IssueKind.UNDECODABLE, stream, received, f"{error}; message dropped")
        return EstimatorStep(None, (issue,), self._frozen)

    def finish(self) -> EstimatorStep:
        """The end of the input: issues only the end can tell (a last stamp that jumped ahead)."""
        return self._between_frames(issues=self.assembler.finish())

    def new_rollout(self, t: float) -> EstimatorStep:
        """A rollout whose first frame is at `t` starts: forget the last one. When a frame at or after `t` was
        already grounded (the marker came late), those frames are published already: the grounder restarts
        now and the next `warmup_frames` frames are blind, so no evidence of the last rollout decides a
        verdict of the new one. The Supervisor starts the rollout at the marker's time and steps the frames
        published before the marker came as blind frames of it. They are not re-grounded here: frames
        published again would reach the monitor on another topic than the marker, in no order it could
        rely on, after it stepped them once. Nor can a joint_jump issue already raised on the rollout's first
        frame (the robot set back between rollouts) be taken back: the late marker's issue names it as such."""
        last = self._last_t
        if last is None:
            return EstimatorStep(frozen=self._frozen, start=RolloutStart.FRESH)
        if last >= t - SAME_TIME_S:
            self.grounder.reset()
            self._warming = self.warmup_frames
            detail = (
                f"the start marker at {t:.6f} came after frames up to {last:.6f}: those were grounded with the "
                f"last rollout's evidence; the grounder restarts, the next {self.warmup_frames} frames blind"
            )
            jumped, self._jumped = self._jumped, None
            if jumped is not None and jumped[0] < t - SAME_TIME_S <= jumped[1]:
                detail += (
                    f"; the joint_jump at {jumped[1]:.6f} was judged from the last rollout's final frame: the "
                    "robot's move between rollouts"
                )
            issue = StreamIssue(IssueKind.LATE_MARKER, JOINTS, t, detail)
            return EstimatorStep(None, (issue,), self._frozen, start=RolloutStart.LATE)
        self.grounder.reset()
        self._start()
        self.tf.forget()
        return EstimatorStep(start=RolloutStart.RESET)

    def _restarted(self, stamp: float) -> tuple[StreamIssue, ...]:
        """A message stamped more than `restart_backwards_s` before the last frame (any stream: the slower
        ones come first at a restart) means the input restarted (a sim or a bag started again): a new
        rollout, numbered from 0, with a fresh assembler and grounder; the old one is never joined."""
        last = self._last_t
        if last is None or not stamp or stamp >= last - self._restart_s:
            return ()
        self.grounder.reset()
        self._start()
        self.tf.forget()
        return (
            StreamIssue(
                IssueKind.INPUT_RESTARTED,
                JOINTS,
                stamp,
                f"stamp {stamp:.6f} is {last - stamp:.3f} s "
                f"behind the last frame (beyond {self._restart_s:g} s): the input restarted, a new "
                "rollout",
            ),
        )

    def _between_frames(
        self, restarted: tuple[StreamIssue, ...] = (), issues: tuple[StreamIssue, ...] | None = None
    ) -> EstimatorStep:
        issues = self.assembler.drain_issues() if issues is None else issues
        issues = restarted + issues if restarted else issues
        return EstimatorStep(None, issues, self._frozen) if issues else _QUIET[self._frozen]
