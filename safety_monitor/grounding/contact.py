"""Forbidden contact (from the twin's geometry) and excess wrist wrench (the hardware collision cue).

Allowed contact classes: a gripper body with a manipulated object; a gripper body with the fixture it
operates (holds closed-handed, moves, or reaches into: the task's target fixture, inferred); a
manipulated object in motion (grasped or moving) with a support or container. Contacts between things
at rest, robot self-contacts and fixture-internal contacts are not judged. Everything else the
robot touches, and anything a moving object hits, is forbidden. The other arm of a bimanual robot
(`other_arm`) has a monitor of its own: what it touches is that monitor's to judge (an object it holds
or hands over, the table), so only its contacts with this arm are forbidden here, where both monitors
report them. The sustained form counts frames per
contact pair, so one long contact fires and flicker between different pairs does not add up.

A frame on which a pair cannot be judged (an object of it has no pose, or its verdict is unknown) may have
been either, so each pair keeps two runs (a `Persistence`): the frames it was seen in forbidden contact
since its last unjudged frame, and the frames it may have been (seen or unjudged) since it was last seen
out of it. Sustained is true once some seen run exceeds the tolerance; false when this frame is judged
everywhere and no possible run exceeds it; unknown otherwise. So a contact seen before and after a pose
gap never adds up to a sustained one: it is unknown until the contact has lasted the tolerance on its own
after the gap, or is seen to end. A contact first seen as an object's pose returns may have begun unseen:
its possible run starts with the frames up to then on which some object had no pose (a bound on its own
gap, equal to it unless pose gaps of different objects overlap).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from safety_monitor.grounding import _geomath
from safety_monitor.grounding.debounce import Persistence, Tri, any3
from safety_monitor.grounding.description import GRIPPER_PARTS, OTHER_ARM, ROBOT_PARTS, RobotDescription
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
        "but a support, container, the gripper or the other arm of a bimanual robot, which touches them "
        "under a monitor of its own; unknown where an object at rest on no support may count as grasped in some "
        "completions only, a grasp or drop hidden in a pose gap undecided, and for an open hand on a fixture whose "
        "motion is not measured yet, a trace's first motion window)",
        "twin gaps, object_grasped, object motion, fixture operation",
        "contact 0.002 m",
    ),
    "forbidden_contact_sustained": PredicateDoc(
        "one forbidden contact pair has been seen for longer than the tolerance with no frame it could not be "
        "judged on (unknown while it may have lasted that long unseen)",
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
    """A gripper body on a fixture part: allowed while that fixture is operated (unknown while it may be)."""

    fixture: str


@dataclass(frozen=True, slots=True)
class _Objects:
    """Objects on something that is no support for them: forbidden while one of them is active (grasped
    or moving, Kleene OR: its measured motion, a held object's too, does not depend on the grasp, so an object
    at rest that a grasp or drop hidden in a pose gap may hold makes the contact unknown, a moving one
    forbidden). An object on a support is allowed whether it moves or not, so it is not listed: its
    motion, unknown until a pose track spans the motion window, never makes the contact unknown."""

    objects: tuple[str, ...]


_Rule = _Fixed | _Operated | _Objects  # what decides a contact between two entities
_ALLOWED, _FORBIDDEN = _Fixed(False), _Fixed(True)
_Judged = tuple[float, tuple[str, str], _Rule]  # a pair in contact to judge: (the contact gap, the pair, its rule)


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
        self.runs: dict[tuple[str, str], Persistence] = {}  # pairs in forbidden contact, or maybe still
        self._unseen: frozenset[str] = frozenset()  # objects without a pose on the previous frame
        self._unseen_run = 0  # consecutive frames up to the previous one on which some object had no pose
        # per pair (a < b) once in contact, rules[a][b]: None if always allowed, else (the contact gap, the pair, its
        # rule), nested so `_geomath.pairs_within` looks pairs up without building a key
        self._rules: dict[str, dict[str, _Judged | None]] = {}
        # the last frame's pairs and their contacts that are not always allowed: most frames bring the same gaps
        self._judged_for: tuple[list[tuple[str, str, float]], list[_Judged]] = ([], [])
        self.wrench = Persistence(counts.wrench_persistence)
        self._contact = float(thresholds.distances_m.contact)  # read once: every frame needs them
        self._wrench_limits = (thresholds.wrench.force_n, thresholds.wrench.torque_nm)
        self.supports = frozenset(
            e
            for e in robot.entities
            if catalog.has(robot.owner(e), "support") or catalog.has(robot.owner(e), "container")
        )

    def step(self, inp: FrameInputs) -> tuple[Tri, ...]:
        """This frame's values in DOCS order."""
        geo = inp.geometry
        pairs = geo.pairs
        last = self._judged_for
        if pairs == last[0]:
            judged = last[1]
        else:
            judged = self._judged(pairs)
            self._judged_for = (pairs, judged)
        if not judged and not self.runs and not geo.unknown:  # most frames: nothing to judge or follow, all seen
            self._unseen, self._unseen_run = geo.unknown, 0
            return False, False, self.wrench.step(self._excess(inp))  # DOCS order, as below
        verdicts: dict[tuple[str, str], Tri] = {}
        for _, pair, rule in judged:  # most frames: none
            v = self._forbidden(rule)
            if v is not False:
                verdicts[pair] = v
        uncertain = bool(geo.unknown) or (bool(verdicts) and None in verdicts.values())
        runs: dict[tuple[str, str], Persistence] = {}
        sustained: Tri = None if uncertain else False  # Kleene OR over the pairs' runs, folded in as they go by
        for pair, v in verdicts.items():
            run = self.runs.get(pair)
            if run is None:  # a new contact; if it ends a pose gap of its object, it may have begun in it
                run = Persistence(self.tolerance + 1, self._unseen_run if set(pair) & self._unseen else 0)
            lasting = run.step(v)
            if lasting:
                sustained = True
            elif lasting is None and not sustained:
                sustained = None
            runs[pair] = run
        for pair, run in self.runs.items() if self.runs else ():  # an object of it has no pose: the contact may go on
            if pair not in runs and set(pair) & geo.unknown:
                run.step(None)
                runs[pair] = run
        self.runs = runs
        self._unseen, self._unseen_run = geo.unknown, self._unseen_run + 1 if geo.unknown else 0
        raw = any3(list(verdicts.values())) if verdicts else False
        return (
            True if raw else (None if uncertain else False),  # forbidden_contact
            sustained,  # forbidden_contact_sustained
            self.wrench.step(self._excess(inp)),  # excess_wrench
        )

    def name_objects(self, values: Mapping[str, bool], out: dict[str, tuple[str, ...]]) -> None:
        """The entities of the forbidden contact pairs that lasted beyond the tolerance (`Grounder`)."""
        if values["forbidden_contact_sustained"]:
            lasting = [pair for pair, run in self.runs.items() if run.seen >= run.n]
            out["forbidden_contact_sustained"] = tuple(dict.fromkeys(name for pair in lasting for name in pair))

    def _judged(self, pairs: list[tuple[str, str, float]]) -> list[_Judged]:
        """The pairs in contact among `pairs` whose verdict is not always allowed, with their rules."""
        judged = _geomath.pairs_within(pairs, self._rules, self._contact)  # the walk in C (a carried object's gaps
        if judged is None:  # change every frame); a pair first in contact: its rule found once, walking in Python
            contact, rules = self._contact, self._rules
            judged = []
            for a, b, gap in pairs:
                if gap <= contact:
                    row = rules.setdefault(a, {})
                    if b in row:
                        entry = row[b]
                    else:
                        rule = self._rule(a, b)  # most contacts (robot self-contact, gripper on object): allowed
                        entry = row[b] = None if rule is _ALLOWED else (contact, (a, b), rule)
                    if entry is not None:
                        judged.append(entry)
        return judged

    def _forbidden(self, rule: _Rule) -> Tri:
        if isinstance(rule, _Fixed):
            return rule.forbidden
        if isinstance(rule, _Operated):
            fx, f = self.fixtures, rule.fixture
            return False if f in fx.operated else None if f in fx.maybe_operated else True
        g = self.grasp
        return any3([v for obj in rule.objects for v in (g.is_grasped(obj), g.moving[obj])])

    def _rule(self, a: str, b: str) -> _Rule:
        """What decides a contact between entities `a` and `b`: only the names (fixed per workcell)."""
        robot_a, robot_b = a in ROBOT_PARTS, b in ROBOT_PARTS
        if robot_a and robot_b:
            return _ALLOWED
        if robot_a or robot_b:
            part, other = (a, b) if robot_a else (b, a)
            if part not in GRIPPER_PARTS or other == OTHER_ARM:  # arm on arm: whichever hand or link it is
                return _FORBIDDEN
            if other in self.grasp.objects:
                return _ALLOWED
            return _Operated(self.robot.owner(other))
        if self.robot.owner(a) == self.robot.owner(b) or OTHER_ARM in (a, b):
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
        force_n, torque_nm = self._wrench_limits
        try:  # float64 3-vectors, as every source gives them: `norm`'s C calls, without its wrapper's call
            return _geomath.norm3(w.force) > force_n or _geomath.norm3(w.torque) > torque_nm
        except (TypeError, ValueError):
            return bool(norm(w.force) > force_n or norm(w.torque) > torque_nm)
