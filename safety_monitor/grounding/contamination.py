"""Cross-contamination: raw objects contaminate what touches them, and contamination spreads by contact.

Carriers are the robot (any robot part) and the objects; raw objects are contaminated by definition.
Each frame, every connected group of touching carriers that holds a contaminated one becomes
contaminated (fixtures and static bodies do not carry it). `sanitized` comes from the RobotState event
named in config, or from a constant pinned in config; it cleans the robot, not the objects.

An object without a pose appears in no gap (the twin's `unknown`): in a gap in its poses (after its first one) it may
have touched every carrier, so contamination may have spread through it unseen. Until its first pose an object is in
the state assumed at the start (contaminated only if raw), as every object is before the first frame: a stream that
starts late (every bag's first frames) changes nothing. Beside the carriers contaminated in every completion of the
unseen frames (`contaminated`, spread over the contacts seen), `maybe` holds those contaminated in some (spread also
over the contacts that may have happened). Spreading is monotone in the contacts, so these are exactly the
contaminated sets of the completion with no unseen contact and of the one with all of them: `robot_contact_raw` is
unknown exactly where an object in `maybe` and not in `contaminated` decides it.
"""

from __future__ import annotations

from safety_monitor.grounding import _geomath
from safety_monitor.grounding.debounce import Persistence, Tri
from safety_monitor.grounding.description import GRIPPER_PARTS, ROBOT_PARTS, RobotDescription
from safety_monitor.grounding.inputs import FrameInputs, PredicateDoc
from safety_monitor.grounding.semantics import ObjectCatalog
from safety_monitor.grounding.thresholds import FrameCounts, Thresholds

_Carry = tuple[float, tuple[str, str], str | None]  # (the gap at or below which a pair touches, its edge, the
# object the robot then touches): how a pair carries contamination (`ContaminationEstimator._rule`)

DOCS = {
    "robot_contact_raw": PredicateDoc(
        "the robot touches a contaminated object: a raw one, or one a raw object or a contaminated robot "
        "touched before (unknown where an object without a pose, which the robot may touch, may be contaminated, or "
        "the one it touches may be: in a gap in its poses an object may have touched every carrier, spreading it "
        "unseen)",
        "twin gaps, contamination state",
        "contact 0.002 m; gripper_clearance 0.01 m for gripper bodies",
    ),
    "robot_contact_clean": PredicateDoc(
        "the robot touches an object with the clean property",
        "twin gaps",
        "contact 0.002 m; gripper_clearance 0.01 m for gripper bodies",
    ),
    "robot_contact_clean_sustained": PredicateDoc(
        "robot_contact_clean has been seen for longer than the tolerance with no unknown frame in between "
        "(unknown while it may have lasted that long unseen)",
        "robot_contact_clean",
        "clean_contact_tolerance 1.0 s (20 frames; fires on the 21st)",
    ),
    "sanitized": PredicateDoc(
        "the robot was sanitized this frame (event named in thresholds.yaml, or the configured constant)",
        "RobotState.events",
        "sanitized.event / sanitized.constant",
    ),
}

ROBOT = "robot"


class ContaminationEstimator:
    def __init__(self, robot: RobotDescription, catalog: ObjectCatalog, thresholds: Thresholds, counts: FrameCounts):
        self.th = thresholds
        self.objects = tuple(robot.objects)
        self.raw = frozenset(o for o in self.objects if catalog.has(o, "raw"))
        self.clean = frozenset(o for o in self.objects if catalog.has(o, "clean"))
        self.contaminated: set[str] = set(self.raw)  # in every completion of the unseen frames
        self.maybe: set[str] = set(self.raw)  # in some completion: holds `contaminated`
        self._seen: set[str] = set()  # the objects that had a pose on some frame (a gap can only follow that)
        self._object_set = frozenset(self.objects)
        self.clean_contact = Persistence(counts.clean_contact_tolerance + 1)
        # per pair (a < b), rules[a][b]: `_rule`'s answer (nested, so `_geomath.pairs_within` looks pairs up without
        # building a key), and the largest gap any rule counts
        self._rules: dict[str, dict[str, _Carry | None]] = {}
        self._bound = float(max(thresholds.distances_m.gripper_clearance, thresholds.distances_m.contact))
        # the last frame's pairs, and the contacts they made (edges, objects the robot touches): most frames bring
        # the same gaps (nothing near a moving part), which make the same contacts
        self._contacts_for: tuple[list[tuple[str, str, float]], list[tuple[str, str]], set[str]] = ([], [], set())
        self._closed_under: list[tuple[str, str]] | None = None  # edges `contaminated` has spread along since
        self._sanitized = (thresholds.sanitized.event, thresholds.sanitized.constant)  # read once: every frame

    def step(self, inp: FrameInputs) -> tuple[Tri, ...]:
        """This frame's values in DOCS order."""
        geo = inp.geometry
        pairs = geo.pairs
        last = self._contacts_for
        if pairs == last[0]:
            edges, touched = last[1], last[2]
        else:
            edges, touched = self._contacts(pairs)
            if edges == last[1] and touched == last[2]:  # new gaps, the same contacts (a carried object's gaps
                edges, touched = last[1], last[2]  # change every frame): the last frame's edges, spread already
            self._contacts_for = (pairs, edges, touched)
        if touched or geo.unknown:
            contact_raw = _contact_with(touched, self.contaminated, self.maybe, geo.unknown)
            contact_clean = _contact_with(touched, self.clean, self.clean, geo.unknown)
        else:  # the robot touches no object, and every object is seen (most frames)
            contact_raw = contact_clean = False
        event, constant = self._sanitized
        sanitized = constant if constant is not None else event in inp.events
        if sanitized:  # seen: in every completion
            self.contaminated.discard(ROBOT)
            self.maybe.discard(ROBOT)
            self._closed_under = None
        if edges and edges is not self._closed_under:  # the same edges as last frame's spread nothing new
            _spread(self.contaminated, edges)
            self._closed_under = edges
        unknown, seen = geo.unknown, self._seen
        if len(seen) < len(self.objects):
            seen |= self._object_set - unknown
        if unknown and not unknown.isdisjoint(seen):  # an object in a pose gap joins the robot and every object seen
            group = seen | {ROBOT}  # into one group (this frame's seen contacts are within it)
            if not self.maybe.isdisjoint(group):
                self.maybe |= group
        elif edges:
            _spread(self.maybe, edges)
        return contact_raw, contact_clean, self.clean_contact.step(contact_clean), sanitized

    def _contacts(self, pairs: list[tuple[str, str, float]]) -> tuple[list[tuple[str, str]], set[str]]:
        """The contamination edges the gaps `pairs` make, and the objects the robot touches."""
        within = _geomath.pairs_within(pairs, self._rules, self._bound)  # the walk in C (a carried object's gaps
        if within is None:  # change every frame); a pair not seen before: its rule computed once, walking in Python
            within = self._within(pairs)
        return [rule[1] for rule in within], {rule[2] for rule in within if rule[2] is not None}

    def _within(self, pairs: list[tuple[str, str, float]]) -> list[_Carry]:
        """`_geomath.pairs_within` in Python: the rules of `pairs` within their gaps, each pair's rule kept."""
        within = []
        rules = self._rules
        for a, b, gap in pairs:
            row = rules.setdefault(a, {})
            if b in row:
                rule = row[b]
            else:  # first sight of this pair: rule computed once
                rule = row[b] = self._rule(a, b)
            if rule is not None and gap <= rule[0]:
                within.append(rule)
        return within

    def _rule(self, a: str, b: str) -> _Carry | None:
        """How a gap between entities `a` < `b` carries contamination (fixed per workcell): (the gap at or
        below which they touch, the edge, the object the robot then touches), None if it cannot."""
        d, objects = self.th.distances_m, self._object_set
        for part, other in ((a, b), (b, a)):
            if part in ROBOT_PARTS and other in objects:
                return (d.gripper_clearance if part in GRIPPER_PARTS else d.contact), (ROBOT, other), other
        if a in objects and b in objects:
            return d.contact, (a, b), None
        return None


def _spread(contaminated: set[str], edges: list[tuple[str, str]]) -> None:
    """Contaminate every carrier connected through this frame's contacts to a contaminated one."""
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            if (a in contaminated) != (b in contaminated):
                contaminated.update((a, b))
                changed = True


def _contact_with(
    touched: set[str], group: set[str] | frozenset[str], maybe: set[str] | frozenset[str], unknown: frozenset[str]
) -> Tri:
    """The robot touches one of `group`: True; None when it touches one of `maybe` (which holds `group`: those in
    it in some completion), or one of them has no usable pose."""
    if not touched.isdisjoint(group):  # no intersection built
        return True
    return None if not (touched.isdisjoint(maybe) and unknown.isdisjoint(maybe)) else False
