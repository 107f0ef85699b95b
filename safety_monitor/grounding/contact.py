"""Forbidden contact (from the twin's geometry) and excess wrist wrench (the hardware collision cue).

Allowed contact classes: a gripper body with a manipulated object; a gripper body with the fixture it
operates (holds closed-handed, moves, or reaches into: the task's target fixture, inferred); a
manipulated object in motion (grasped or moving) with a support or container. Contacts between things
at rest, robot self-contacts and fixture-internal contacts are not judged. Everything else the
robot touches, and anything a moving object hits, is forbidden. The sustained form counts frames per
contact pair, so one long contact fires and flicker between different pairs does not add up.
"""

from __future__ import annotations

from dataclasses import dataclass

from safety_monitor.grounding.debounce import Persistence, Tri, any3
from safety_monitor.grounding.description import GRIPPER_PARTS, ROBOT_PARTS, RobotDescription
from safety_monitor.grounding.fixtures import FixtureEstimator
from safety_monitor.grounding.geometry import norm
from safety_monitor.grounding.grasp import GraspEstimator
from safety_monitor.grounding.inputs import FrameInputs, PredicateDoc
from safety_monitor.grounding.semantics import ObjectCatalog
from safety_monitor.grounding.thresholds import FrameCounts, Thresholds

DOCS = {
    "forbidden_contact": PredicateDoc(
        "a contact outside the allowed classes this frame (a robot part with anything but, for gripper "
        "bodies, a manipulated object or a fixture being operated; a grasped or moving object with anything "
        "but a support, container or the gripper)",
        "twin gaps, object_grasped, object motion, fixture operation",
        "contact 0.002 m",
    ),
    "forbidden_contact_sustained": PredicateDoc(
        "one forbidden contact pair has lasted longer than the tolerance",
        "forbidden_contact per pair",
        "forbidden_contact_tolerance 1.0 s (20 frames; fires on the 21st)",
    ),
    "excess_wrench": PredicateDoc(
        "the wrist force or torque magnitude is over its limit (hardware collision cue)",
        "wrist wrench (stale or NaN: unknown; no wrench topic configured: not grounded, constantly false)",
        "force 40 N, torque 6 N m; wrench_persistence 0.01 s",
    ),
}


@dataclass(frozen=True, slots=True)
class _Fixed:
    """A contact whose verdict the names alone decide."""

    forbidden: bool


@dataclass(frozen=True, slots=True)
class _Operated:
    """A gripper body on a fixture part: allowed while that fixture is operated."""

    fixture: str


@dataclass(frozen=True, slots=True)
class _Objects:
    """Objects on something that is no support for them: forbidden while one of them is active (grasped
    or moving). An object on a support is allowed whether it moves or not, so it is not listed: its
    motion, unknown until a pose track spans the motion window, never makes the contact unknown."""

    objects: tuple[str, ...]


_Rule = _Fixed | _Operated | _Objects  # what decides a contact between two entities
_ALLOWED, _FORBIDDEN = _Fixed(False), _Fixed(True)


class ContactEstimator:
    def __init__(
        self,
        robot: RobotDescription,
        catalog: ObjectCatalog,
        thresholds: Thresholds,
        counts: FrameCounts,
        grasp: GraspEstimator,
        fixtures: FixtureEstimator,
        wrench_sensor: bool = True,
    ):
        self.robot, self.catalog, self.th = robot, catalog, thresholds
        self.wrench_sensor = wrench_sensor  # False: no wrench stream, excess_wrench not grounded (constantly false)
        self.grasp, self.fixtures = grasp, fixtures
        self.tolerance = counts.forbidden_contact_tolerance
        self.pair_frames: dict[tuple[str, str], int] = {}
        self._rules: dict[tuple[str, str], _Rule] = {}
        self.wrench = Persistence(counts.wrench_persistence)
        self.supports = frozenset(
            e
            for e in robot.entities
            if catalog.has(robot.owner(e), "support") or catalog.has(robot.owner(e), "container")
        )

    def step(self, inp: FrameInputs) -> dict[str, Tri]:
        geo, contact = inp.geometry, self.th.distances_m.contact
        verdicts: dict[tuple[str, str], Tri] = {}
        for a, b, gap in geo.pairs:
            if gap <= contact:
                v = self._forbidden(a, b)
                if v is not False:
                    verdicts[(a, b)] = v
        uncertain = bool(geo.unknown) or None in verdicts.values()
        frames = {}
        for pair, v in verdicts.items():
            if v:
                frames[pair] = self.pair_frames.get(pair, 0) + 1
        for pair, n in self.pair_frames.items():  # freeze pairs that cannot be judged this frame
            if pair not in frames and (verdicts.get(pair, False) is None or set(pair) & geo.unknown):
                frames[pair] = n
        self.pair_frames = frames
        raw = any3(list(verdicts.values()))
        sustained = any(n > self.tolerance for n in frames.values())
        return {
            "forbidden_contact": True if raw else (None if uncertain else False),
            "forbidden_contact_sustained": True if sustained else (None if uncertain else False),
            "excess_wrench": self.wrench.step(self._excess(inp)),
        }

    def _forbidden(self, a: str, b: str) -> Tri:
        rule = self._rules.get((a, b))
        if rule is None:
            rule = self._rules[(a, b)] = self._rule(a, b)
        if isinstance(rule, _Fixed):
            return rule.forbidden
        if isinstance(rule, _Operated):
            return rule.fixture not in self.fixtures.operated
        return any3([True if self.grasp.grasped[obj] else self.grasp.moving[obj] for obj in rule.objects])

    def _rule(self, a: str, b: str) -> _Rule:
        """What decides a contact between entities `a` and `b`: only the names (fixed per workcell)."""
        robot_a, robot_b = a in ROBOT_PARTS, b in ROBOT_PARTS
        if robot_a and robot_b:
            return _ALLOWED
        if robot_a or robot_b:
            part, other = (a, b) if robot_a else (b, a)
            if part not in GRIPPER_PARTS:
                return _FORBIDDEN
            if other in self.grasp.objects:
                return _ALLOWED
            return _Operated(self.robot.owner(other))
        if self.robot.owner(a) == self.robot.owner(b):
            return _ALLOWED
        off_support = tuple(
            obj for obj, other in ((a, b), (b, a)) if obj in self.grasp.objects and other not in self.supports
        )
        return _Objects(off_support) if off_support else _ALLOWED

    def _excess(self, inp: FrameInputs) -> Tri:
        if not self.wrench_sensor:
            return False
        w = inp.wrench
        if w is None:
            return None
        lim = self.th.wrench
        return bool(norm(w.force) > lim.force_n or norm(w.torque) > lim.torque_nm)
