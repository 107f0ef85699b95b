"""Which properties a robot can ground: a property that reads a predicate this robot cannot decide (no
gripper, no fixtures, no wrist force-torque sensor, no joint limits of the kind) would hold vacuously; it is reported not applicable,
with the reason, instead of being counted as satisfied."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from safety_monitor.grounding import grasp, joint_limits
from safety_monitor.grounding.description import GripperKind
from safety_monitor.grounding.grounder import Grounder
from safety_monitor.specs.ltlf import atoms_of, parse
from safety_monitor.specs.model import Property, SpecSet

# Predicates about grasping, and those built on a grasp (a pick or place, a transfer, the focus object)
GRIPPER_PREDICATES = frozenset(grasp.DOCS) | {
    "skill_pick_onset",
    "skill_pick_onset_end",
    "preconditions_pick",
    "skill_place_onset",
    "skill_place_onset_end",
    "preconditions_place",
    "transfer_event",
    "transfer_timeout",
    "contained_settled",
    "object_in_fixture",
}
FIXTURE_PREDICATES = frozenset(
    {
        "fixture_fully_open",
        "fixture_fully_closed",
        "reach_in_fixture",
        "left_fixture",
        "object_in_fixture",
        "fixture_obstacle_hit",
        "retracting",
        "retract_timeout",
        "skill_open_onset",
        "skill_open_onset_end",
        "preconditions_open",
        "skill_close_onset",
        "skill_close_onset_end",
        "preconditions_close",
    }
)


WRENCH_PREDICATES = frozenset({"excess_wrench"})  # read the wrist force-torque sensor


class NotApplicable(StrEnum):
    """Why a predicate says nothing about this robot."""

    NEEDS_GRIPPER = "needs a gripper"
    NEEDS_FIXTURE = "needs a fixture"
    NEEDS_WRENCH = "needs a wrist force-torque sensor (no wrench topic configured)"
    NO_POSITION_LIMITS = "no joint has position limits"
    NO_VELOCITY_LIMITS = "no joint has a velocity limit"
    NO_EFFORT_LIMITS = "no joint has an effort limit"


_LIMIT_REASONS = {
    joint_limits.POSITION: NotApplicable.NO_POSITION_LIMITS,
    joint_limits.VELOCITY: NotApplicable.NO_VELOCITY_LIMITS,
    joint_limits.EFFORT: NotApplicable.NO_EFFORT_LIMITS,
    joint_limits.JUMP: NotApplicable.NO_VELOCITY_LIMITS,
}


@dataclass(frozen=True)
class Applicability:
    """One property on one robot: applicable, or not, because of `reasons` (predicate -> why)."""

    name: str
    reasons: dict[str, NotApplicable]

    @property
    def applicable(self) -> bool:
        return not self.reasons

    def text(self) -> str:
        if self.applicable:
            return "applicable"
        why = sorted(set(self.reasons.values()))
        return f"not applicable ({'; '.join(why)}: {', '.join(sorted(self.reasons))})"


def vacuous_predicates(grounder: Grounder) -> dict[str, NotApplicable]:
    """The predicates this grounder's robot cannot decide, each with the reason."""
    robot = grounder.robot
    out: dict[str, NotApplicable] = {}
    if not robot.fixtures:
        out.update(dict.fromkeys(FIXTURE_PREDICATES, NotApplicable.NEEDS_FIXTURE))
    if robot.gripper.kind is GripperKind.NONE:
        out.update(dict.fromkeys(GRIPPER_PREDICATES, NotApplicable.NEEDS_GRIPPER))
    if not grounder.wrench_sensor:
        out.update(dict.fromkeys(WRENCH_PREDICATES, NotApplicable.NEEDS_WRENCH))
    judged = joint_limits.JointLimitEstimator(
        grounder.joint_limits, grounder.thresholds.joint_limits, grounder.robot.robot_joints
    ).judged
    out.update({p: _LIMIT_REASONS[p] for p, yes in judged.items() if not yes})
    return out


def property_atoms(prop: Property) -> frozenset[str]:
    """Every predicate a property reads: its formula, recovery and trigger."""
    return frozenset().union(*(_atoms(text) for text in (prop.formula, prop.recovery, prop.trigger) if text))


@cache
def _atoms(text: str) -> frozenset[str]:
    """A formula's atoms, parsed once per process: replay asks for every bag, and parsing the specs' formulas
    again was 2 % of scoring a two-second bag."""
    return frozenset(atoms_of(parse(text)))


def applicability(spec_set: SpecSet, grounder: Grounder) -> dict[str, Applicability]:
    """Per property of `spec_set`, whether this robot can ground it, and if not which predicates and why."""
    vacuous = vacuous_predicates(grounder)
    return {
        p.name: Applicability(p.name, {a: vacuous[a] for a in sorted(property_atoms(p)) if a in vacuous})
        for p in spec_set.properties
    }
