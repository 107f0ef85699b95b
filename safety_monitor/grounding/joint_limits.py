"""Joint-level safety: the robot's own joints against the model's own limits.

Limits come from the URDF `<limit>`, the MJCF's `range` and force ranges, and robot.yaml's `joint_limits:`
(which wins per field); the margins from thresholds.yaml. A joint without a given limit is not judged on
it; a robot with no joint carrying one has that predicate constantly false, and `applicability` reports
the properties that read it as not applicable, so it is never silently vacuous. Like every other
predicate, these are true when something is wrong, so a frame of all-false predicates stays quiet.

`JumpDetector` is the one rule for a position jump (a joint's step since its own previous sample larger
than its velocity limit allows over the time between the two: encoder wrap, glitch). Each joint is judged
over its own sample period, not the frame's: a gripper on a 10 Hz topic of its own under a 500 Hz arm steps
once per 0.1 s, and read over 2 ms a normal move would look 50 times too fast. The grounder reads it as
`joint_position_jump`; the frame assembler reports the same steps as `IssueKind.JOINT_JUMP` input issues
through `jump_issue`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from safety_monitor.enums import IssueKind
from safety_monitor.frames import RobotState, StreamIssue
from safety_monitor.grounding import _geomath
from safety_monitor.grounding.debounce import Tri
from safety_monitor.grounding.inputs import PredicateDoc
from safety_monitor.grounding.thresholds import JointLimitMargins
from safety_monitor.grounding.urdf import JointLimit

_SOURCE = "robot.yaml joint_limits, else the model (URDF <limit>, MJCF range / force range)"
DOCS = {
    "joint_position_out_of_limits": PredicateDoc(
        "some arm or gripper joint is beyond its position limits",
        f"joint positions; limits: {_SOURCE}",
        "position_tolerance 0.01 of the joint's range beyond either limit",
    ),
    "joint_velocity_out_of_limits": PredicateDoc(
        "some joint moves faster than its velocity limit allows (unknown when the frame has no velocities)",
        f"joint velocities; limits: {_SOURCE}",
        "velocity_factor 1.0",
    ),
    "joint_effort_out_of_limits": PredicateDoc(
        "some joint exerts more than its effort limit allows (unknown when the frame has no efforts)",
        f"joint efforts; limits: {_SOURCE}",
        "effort_factor 1.0",
    ),
    "joint_position_jump": PredicateDoc(
        "some joint stepped further since its own previous sample than its velocity limit allows over the time "
        "between the two (encoder wrap, glitch); false on the first frame (no step yet)",
        f"joint positions and times; limits: {_SOURCE}",
        "jump_factor 2.0",
    ),
}
POSITION, VELOCITY, EFFORT, JUMP = DOCS


def merge_limits(given: Mapping[str, JointLimit], model: Mapping[str, JointLimit]) -> dict[str, JointLimit]:
    """Per joint and field, the given limit (URDF, config), else the compiled model's."""
    out = dict(model)
    for joint, limit in given.items():
        below = model.get(joint, JointLimit())
        out[joint] = JointLimit(
            _first(limit.lower, below.lower),
            _first(limit.upper, below.upper),
            _first(limit.velocity, below.velocity),
            _first(limit.effort, below.effort),
            wraps=limit.wraps or below.wraps,
        )
    return out


def _first(given: float | None, model: float | None) -> float | None:
    return given if given is not None else model


@dataclass(frozen=True)
class JointJump:
    joint: str
    step: float  # |position change| since the joint's previous sample (wrapped for continuous joints)
    allowed: float  # jump_factor x velocity limit x the time since that sample


class JumpDetector:
    """Position jumps, judged per joint over the time since that joint's own previous sample (its stamp in
    `RobotState.joint_stamps`): a joint held between the samples of its slower topic has not moved, and its
    next step spans its own period. Joints without a velocity limit, or missing from a frame, are not judged.
    Stateful: the previous frame's positions and stamps, as arrays. Joints that do not wrap are gathered and
    judged in one C call (`_geomath.joint_jumps`: six ufunc calls on a handful of joints cost several times
    more, for the same IEEE operations)."""

    def __init__(self, limits: Mapping[str, JointLimit], jump_factor: float):
        judged = [(j, lim.velocity, lim.wraps) for j, lim in limits.items() if lim.velocity is not None]
        self.joints = tuple(j for j, _, _ in judged)
        self._rate = np.array([jump_factor * velocity for _, velocity, _ in judged])  # allowed step per second
        self._wraps = np.array([wraps for *_, wraps in judged], dtype=bool)
        self._any_wraps = bool(self._wraps.any())
        self._layouts: dict[tuple[str, ...], tuple[np.ndarray, bool]] = {}
        self._last: tuple[tuple[str, ...], tuple[np.ndarray, bool]] | None = None
        self._previous: tuple[np.ndarray, np.ndarray | float] | None = None
        # an array of the judged joints' length no longer referenced: the next frame's positions are gathered into
        # it (the previous frame's array and this one take turns: no new array a frame)
        self._spare = np.empty(len(self.joints))

    def _layout(self, names: tuple[str, ...]) -> tuple[np.ndarray, bool]:
        """Indices into a frame's joints of the judged joints, and whether the frame lacks some (then the
        indices are into its row with a NaN put first, which the missing ones read), cached per name list.
        `step` asks the last one by identity first (a source hands out the same tuple frame after frame: then
        not even hashed, and no call)."""
        layout = self._layouts.get(names)
        if layout is None:
            index = {n: i for i, n in enumerate(names)}
            partial = not index.keys() >= set(self.joints)
            src = (
                [index[j] + 1 if j in index else 0 for j in self.joints] if partial else [index[j] for j in self.joints]
            )
            layout = self._layouts[names] = (np.array(src, dtype=np.intp), partial)
        self._last = (names, layout)
        return layout

    def step(
        self, names: tuple[str, ...], positions: np.ndarray, stamps: np.ndarray | float
    ) -> tuple[JointJump, ...] | None:
        """The joints that jumped since the previous call; None on the first (nothing to step from).
        `positions`: per joint of `names` (any 1-d sequence of numbers); `stamps`: per joint of `names`, the stamp
        of its position (a number: every joint sampled then)."""
        last = self._last
        src, partial = last[1] if last is not None and last[0] is names else self._layout(names)
        if partial:  # judged joints missing from this frame read a NaN: never judged
            positions = np.concatenate(((math.nan,), np.asarray(positions, dtype=float)))
            if isinstance(stamps, np.ndarray):
                stamps = np.concatenate(((math.nan,), stamps))
        current, times = self._spare, stamps[src] if isinstance(stamps, np.ndarray) else stamps
        previous = self._previous
        # gathered into the spare array and, but on the first frame or with a continuous joint, judged: one C call
        before, before_times = (None, None) if previous is None or self._any_wraps else previous
        judge = before is not None
        try:  # a float64 row, as every source gives it
            hits = _geomath.joint_jumps(positions, src, current, times, before, before_times, self._rate)
        except (TypeError, ValueError):  # a row that is not a 1-d float64 array (else raised again, as it is)
            row = np.asarray(positions, dtype=float)
            hits = _geomath.joint_jumps(row, src, current, times, before, before_times, self._rate)
        self._previous = (current, times)
        if previous is None:
            self._spare = np.empty(len(self.joints))  # `current` is kept
            return None
        self._spare = previous[0]  # its positions are read for the last time below
        if judge:
            if not hits:  # most frames: no generator set up
                return ()
            return tuple(JointJump(self.joints[k], step, allowed) for k, step, allowed in hits)
        step = np.abs(current - previous[0])
        turn = 2 * math.pi  # a continuous joint's reading wraps at +-pi: that is no motion
        step = np.where(self._wraps, np.abs(step - turn * np.round(step / turn)), step)
        allowed = self._rate * (times - previous[1])  # 0 for a joint held since (no new sample: no step)
        over = step > allowed
        if not over.any():
            return ()
        return tuple(
            JointJump(self.joints[k], float(step[k]), float(allowed[k])) for k in np.flatnonzero(over).tolist()
        )


def jump_issue(jumps: tuple[JointJump, ...], t: float, stream: str = "joint_states") -> StreamIssue:
    """The input issue for the jumps found at frame time `t`."""
    text = ", ".join(f"{j.joint} by {j.step:.3g} (at most {j.allowed:.3g} at its velocity limit)" for j in jumps)
    return StreamIssue(IssueKind.JOINT_JUMP, stream, t, f"joint position jump: {text}")


class _RowLayout(NamedTuple):
    """Where one list of joint names puts what a velocity or effort row is read for (indices into the row). A
    tuple: `_geomath.joint_limits` reads it by position."""

    names: int  # how many names the frame lists
    robot: np.ndarray | None  # the robot's joints (None: some are not listed, and a row is never complete)
    velocity_index: np.ndarray | None  # each joint with a velocity limit, and the limit (None: no joint has one)
    velocity_limit: np.ndarray
    effort_index: np.ndarray | None  # (None: no joint has an effort limit)
    effort_limit: np.ndarray


class JointLimitEstimator:
    """Joint-limit family: positions, velocities and efforts against limits, and jumps between frames.
    Velocity and effort rows are read by index, per list of joint names (a frame's rows follow its names)."""

    def __init__(self, limits: Mapping[str, JointLimit], margins: JointLimitMargins, robot_joints: tuple[str, ...]):
        self.limits = dict(limits)
        self.margins = margins
        self._robot_joints = robot_joints
        positions = []
        for joint, lim in self.limits.items():
            if lim.lower is None and lim.upper is None:
                continue
            lo = -math.inf if lim.lower is None else lim.lower
            hi = math.inf if lim.upper is None else lim.upper
            slack = margins.position_tolerance * (hi - lo) if math.isfinite(hi - lo) else 0.0
            positions.append((joint, lo - slack, hi + slack))
        # the joints with a position limit, and their bounds with the tolerance (judged in one C call)
        self._positions = (
            tuple(j for j, _, _ in positions),
            np.array([lo for _, lo, _ in positions], dtype=float),
            np.array([hi for _, _, hi in positions], dtype=float),
        )
        self._velocities = [
            (j, lim.velocity * margins.velocity_factor) for j, lim in self.limits.items() if lim.velocity is not None
        ]
        self._efforts = [
            (j, lim.effort * margins.effort_factor) for j, lim in self.limits.items() if lim.effort is not None
        ]
        self._layouts: dict[tuple[str, ...], _RowLayout] = {}
        self._last: tuple[tuple[str, ...], _RowLayout] | None = None
        self._jumps = JumpDetector(self.limits, margins.jump_factor)
        self.jumps: tuple[JointJump, ...] = ()
        self._answer: tuple[Tri, Tri, Tri, Tri] | None = None  # the last frame's values, as handed out

    @property
    def judged(self) -> dict[str, bool]:
        """Per predicate, whether any joint has the limit it reads (False: constantly false on this robot)."""
        return {
            POSITION: bool(self._positions[0]),
            VELOCITY: bool(self._velocities),
            EFFORT: bool(self._efforts),
            JUMP: bool(self._velocities),
        }

    def _layout(self, names: tuple[str, ...]) -> _RowLayout:
        """Cached per name list; `step` asks the last one by identity first (`JumpDetector._layout`)."""
        layout = self._layouts.get(names)
        if layout is None:
            index = {n: i for i, n in enumerate(names)}  # a name listed twice: its last place, as a dict reads it
            robot = [index[j] for j in self._robot_joints] if set(self._robot_joints) <= index.keys() else None
            velocities = [(index[j], limit) for j, limit in self._velocities if j in index]
            efforts = [(index[j], limit) for j, limit in self._efforts if j in index]
            layout = self._layouts[names] = _RowLayout(
                len(names),
                None if robot is None else np.array(robot, dtype=np.intp),
                np.array([i for i, _ in velocities], dtype=np.intp) if self._velocities else None,
                np.array([v for _, v in velocities], dtype=float),
                np.array([i for i, _ in efforts], dtype=np.intp) if self._efforts else None,
                np.array([v for _, v in efforts], dtype=float),
            )
        self._last = (names, layout)
        return layout

    def step(self, state: RobotState, positions: Mapping[str, float]) -> tuple[Tri, Tri, Tri, Tri]:
        """One frame's values in DOCS order: `positions` by joint name; velocities and efforts from `state`'s
        rows (unknown without a finite value for every robot joint); its per-joint stamps time the jumps
        (without them every joint was sampled at `state.t`)."""
        position: Tri
        velocity: Tri
        effort: Tri
        if self._velocities or self._efforts:
            names, last = state.joint_names, self._last
            layout = last[1] if last is not None and last[0] is names else self._layout(names)
            velocities, efforts = state.joint_velocity, state.joint_effort
            judged, lower, upper = self._positions  # (a call with a starred argument costs a thousand instructions)
            try:  # float64 rows (or None), as every source gives them: the three limits in one C call
                position, velocity, effort = _geomath.joint_limits(
                    positions, judged, lower, upper, velocities, efforts, layout
                )
            except (TypeError, ValueError):  # a row that is not a 1-d float64 array (else raised again, as it is)
                position, velocity, effort = _geomath.joint_limits(
                    positions, judged, lower, upper, _floats(velocities), _floats(efforts), layout
                )
        else:  # no velocity or effort limits: those two false
            judged, lower, upper = self._positions
            position, velocity, effort = _geomath.named_outside(positions, judged, lower, upper), False, False
        jump: Tri = False
        if self._velocities:
            detector, names, t = self._jumps, state.joint_names, state.t
            seen, previous = detector._last, detector._previous  # its last names and their layout
            jumps: tuple[JointJump, ...] | None
            if (  # most frames: JumpDetector.step's judged path without its call (a thousand instructions): every
                state.joint_stamps is None  # joint sampled at t, the last frame's names, none missing, none wraps,
                and seen is not None  # a previous frame to step from
                and seen[0] is names
                and previous is not None
                and not (seen[1][1] or detector._any_wraps)
            ):
                current, row = detector._spare, state.joint_position
                try:  # a float64 row (else JumpDetector.step converts it, or raises): gathered into the spare array
                    hits = _geomath.joint_jumps(row, seen[1][0], current, t, previous[0], previous[1], detector._rate)
                except (TypeError, ValueError):
                    jumps = detector.step(names, row, t)
                else:
                    detector._previous, detector._spare = (current, t), previous[0]
                    joints = detector.joints
                    jumps = tuple(JointJump(joints[k], step, allowed) for k, step, allowed in hits) if hits else ()
            else:
                stamps = t if state.joint_stamps is None else np.asarray(state.joint_stamps, dtype=float)
                jumps = detector.step(names, state.joint_position, stamps)
            self.jumps = jumps or ()
            # the first frame has no step to judge: false, not unknown, or every rollout would start blind
            jump = bool(jumps)
        answer = (position, velocity, effort, jump)
        if answer == self._answer:  # the last frame's tuple again: the Grounder knows repeated decisions by identity
            return self._answer
        self._answer = answer
        return answer


def _floats(row: np.ndarray | None) -> np.ndarray | None:
    """A velocity or effort row as a float64 array (None stays None: unknown)."""
    return None if row is None else np.asarray(row, dtype=float)
