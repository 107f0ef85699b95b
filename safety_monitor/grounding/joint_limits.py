"""Joint-level safety: the robot's own joints against the model's own limits.

Limits come from the URDF `<limit>`, the MJCF's `range` and force ranges, and robot.yaml's `joint_limits:`
(which wins per field); the margins from thresholds.yaml. A joint without a given limit is not judged on
it; a robot with no joint carrying one has that predicate constantly false, and `applicability` reports
the properties that read it as not applicable, so it is never silently vacuous. Like every other
predicate, these are true when something is wrong, so a frame of all-false predicates stays quiet.

`find_jumps` is the one rule for a position jump (a step between consecutive frames larger than the
velocity limit allows over the frame period: encoder wrap, glitch). The grounder reads it as
`joint_position_jump`; the frame assembler can report the same steps as `IssueKind.JOINT_JUMP` input
issues through `jump_issue`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from safety_monitor.enums import IssueKind
from safety_monitor.frames import StreamIssue
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
        "some joint stepped further since the previous frame than its velocity limit allows over the frame "
        "period (encoder wrap, glitch); unknown on the first frame",
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
    step: float  # |position change| since the previous frame (wrapped for continuous joints)
    allowed: float  # jump_factor x velocity limit x frame period


def find_jumps(
    previous: Mapping[str, float],
    current: Mapping[str, float],
    dt: float,
    limits: Mapping[str, JointLimit],
    jump_factor: float,
) -> tuple[JointJump, ...]:
    """The joints whose position stepped more than `jump_factor * velocity * dt` between two frames `dt` s apart
    (joints without a velocity limit, or missing from either frame, are not judged)."""
    out = []
    for joint, limit in limits.items():
        if limit.velocity is None or joint not in previous or joint not in current:
            continue
        step = abs(current[joint] - previous[joint])
        if limit.wraps:  # a continuous joint's reading wraps at +-pi: that is no motion
            step = abs(math.remainder(step, 2 * math.pi))
        allowed = jump_factor * limit.velocity * dt
        if step > allowed:
            out.append(JointJump(joint, step, allowed))
    return tuple(out)


def jump_issue(jumps: tuple[JointJump, ...], t: float, stream: str = "joint_states") -> StreamIssue:
    """The input issue for the jumps found at frame time `t`."""
    text = ", ".join(f"{j.joint} by {j.step:.3g} (at most {j.allowed:.3g} at its velocity limit)" for j in jumps)
    return StreamIssue(IssueKind.JOINT_JUMP, stream, t, f"joint position jump: {text}")


class JointLimitEstimator:
    """Joint-limit family: positions, velocities and efforts against limits, and jumps between frames."""

    def __init__(self, limits: Mapping[str, JointLimit], margins: JointLimitMargins):
        self.limits = dict(limits)
        self.margins = margins
        self._positions = []
        for joint, lim in self.limits.items():
            if lim.lower is None and lim.upper is None:
                continue
            lo = -math.inf if lim.lower is None else lim.lower
            hi = math.inf if lim.upper is None else lim.upper
            slack = margins.position_tolerance * (hi - lo) if math.isfinite(hi - lo) else 0.0
            self._positions.append((joint, lo - slack, hi + slack))
        self._velocities = [
            (j, lim.velocity * margins.velocity_factor) for j, lim in self.limits.items() if lim.velocity is not None
        ]
        self._efforts = [
            (j, lim.effort * margins.effort_factor) for j, lim in self.limits.items() if lim.effort is not None
        ]
        self._previous: tuple[float, dict[str, float]] | None = None
        self.jumps: tuple[JointJump, ...] = ()
        self.reads_velocity, self.reads_effort = bool(self._velocities), bool(self._efforts)

    @property
    def judged(self) -> dict[str, bool]:
        """Per predicate, whether any joint has the limit it reads (False: constantly false on this robot)."""
        return {
            POSITION: bool(self._positions),
            VELOCITY: bool(self._velocities),
            EFFORT: bool(self._efforts),
            JUMP: bool(self._velocities),
        }

    def step(
        self,
        t: float,
        positions: Mapping[str, float],
        velocities: Mapping[str, float] | None,
        efforts: Mapping[str, float] | None,
    ) -> dict[str, Tri]:
        position: Tri = not all(lo <= positions[j] <= hi for j, lo, hi in self._positions)
        velocity = _beyond(self._velocities, velocities)
        effort = _beyond(self._efforts, efforts)
        jump: Tri = False
        if self._velocities:
            previous, self._previous = self._previous, (t, dict(positions))
            if previous is None:
                jump, self.jumps = None, ()
            else:
                self.jumps = find_jumps(previous[1], positions, t - previous[0], self.limits, self.margins.jump_factor)
                jump = bool(self.jumps)
        return {POSITION: position, VELOCITY: velocity, EFFORT: effort, JUMP: jump}


def _beyond(limits: list[tuple[str, float]], values: Mapping[str, float] | None) -> Tri:
    if not limits:
        return False
    if values is None:
        return None
    return any(abs(values[j]) > limit for j, limit in limits)
