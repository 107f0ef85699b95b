"""Articulated fixtures (drawer, door): open fraction, reach-in, internal support, obstacle hits, retreat.

The *focus fixture* is the openable fixture whose parts are nearest the gripper (within the twin's report
margin), else the one whose interior is nearest the grasp centre; single-fixture predicates (fully open /
closed) read it. A fixture is *operated* while the gripper holds it closed-handed, pushes or pulls it
while it moves, or reaches into it: only then may the robot touch it (see contact.py). Its motion is measured over
the motion window, so on a trace's first frames, before the window is filled, whether an open hand on it moves it is
unknown: it may be operated (`maybe_operated`); and an obstacle on one the hand does not hold may be a hit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from safety_monitor.grounding import _geomath
from safety_monitor.grounding.debounce import Timer, Tri
from safety_monitor.grounding.description import HOUSING, RobotDescription
from safety_monitor.grounding.geometry import Box, BoxStack
from safety_monitor.grounding.grasp import GraspEstimator
from safety_monitor.grounding.inputs import FrameInputs, PredicateDoc
from safety_monitor.grounding.semantics import ObjectCatalog
from safety_monitor.grounding.thresholds import FrameCounts, Thresholds

DOCS = {
    "fixture_fully_open": PredicateDoc(
        "the focus fixture (nearest the gripper) is open at least the fully-open fraction of its range",
        "fixture joint position, range (robot.yaml)",
        "fully_open_fraction 0.60",
    ),
    "fixture_fully_closed": PredicateDoc(
        "the focus fixture (nearest the gripper) is open at most the fully-closed fraction of its range",
        "fixture joint position, range (robot.yaml)",
        "fully_closed_fraction 0.05",
    ),
    "reach_in_fixture": PredicateDoc(
        "a gripper point (grasp centre or a finger pad) is inside an enclosure fixture's interior",
        "twin gripper points, interior boxes",
        "-",
    ),
    "left_fixture": PredicateDoc(
        "no gripper point is within the reach margin of any enclosure interior",
        "twin gripper points, interior boxes",
        "reach 0.05 m",
    ),
    "object_in_fixture": PredicateDoc(
        "the focus object lies inside an enclosure interior and rests on its floor (internal support; unknown "
        "where another object may be the focus and would disagree, as object_left_gripper)",
        "object pose and box, interior boxes",
        "placement_margin 0.03 m",
    ),
    "fixture_obstacle_hit": PredicateDoc(
        "a fixture being operated (gripped or moving) has its moving part touching an obstacle: an arm "
        "link or an object not inside it (unknown for one not gripped while its motion is not measured yet: a "
        "trace's first motion window)",
        "twin gaps, fixture motion",
        "contact 0.002 m; gripper_clearance 0.01 m; fixture_motion_delta 0.001 per motion window",
    ),
    "retracting": PredicateDoc(
        "for every fixture with an open obstacle episode, the gripper let go of it or it moves opposite to "
        "its motion before the hit (false with no open episode)",
        "twin gaps, fixture motion",
        "gripper_clearance; fixture_motion_delta",
    ),
    "retract_timeout": PredicateDoc(
        "an obstacle episode has lasted the retract timeout without retracting",
        "fixture_obstacle_hit, retracting",
        "retract_timeout 5 s (100 frames)",
    ),
}


def object_inside(box: Box, region: Box, margin: float) -> bool:
    """The object's footprint is within the region (grown by `margin`) and its bottom below the region's top."""
    inside, _ = _geomath.placement(
        box.center, box.rotation, box.half, region.center, region.rotation, region.half, margin
    )
    return inside


def object_supported_inside(box: Box, region: Box, margin: float) -> bool:
    """Inside the region with its bottom within `margin` of the region's floor."""
    inside, bottom = _geomath.placement(
        box.center, box.rotation, box.half, region.center, region.rotation, region.half, margin
    )
    return inside and bottom <= -region.half[2] + margin


_NONE: frozenset[str] = frozenset()  # no fixture operated (most frames)
_ABOUT_EPISODES = ("fixture_obstacle_hit", "retract_timeout")
_NEAR_NOTHING: dict[str, float] = {}  # geo.gaps.get(e, _NEAR_NOTHING): geo.near(e) without the call (read only)


class _Episode:
    def __init__(self, counts: FrameCounts):
        self.active = False
        self.direction = 0.0
        self.retracted = False
        self.timer = Timer(counts.retract_timeout)


class FixtureEstimator:
    """Fixture family; later estimators read `fixtures`, `target`, `gripped`, `directions`, `reach_in`, `operated`,
    `maybe_operated`."""

    def __init__(
        self,
        robot: RobotDescription,
        catalog: ObjectCatalog,
        thresholds: Thresholds,
        counts: FrameCounts,
        grasp: GraspEstimator,
    ):
        self.robot, self.th, self.grasp = robot, thresholds, grasp
        self.fixtures = tuple(f for f in robot.fixtures if catalog.has(f, "openable"))
        self.enclosures = tuple(
            f for f in robot.fixtures if catalog.has(f, "enclosure") and robot.fixtures[f].interior is not None
        )
        self.with_interior = tuple(f for f in robot.fixtures if robot.fixtures[f].interior is not None)
        self._interiors = BoxStack()
        self._interiors_seen: Mapping[str, Box] | None = None  # the last frame's interiors, and their boxes
        self._interior_boxes: tuple[Box, ...] = ()
        self._focus_for: tuple[Box, Mapping[str, Box], bool] | None = None  # the focus box and interiors last asked
        # rows of `_interiors.reach`'s answers: per enclosure, and per openable fixture with an interior
        self._enclosure_rows = tuple((f, self.with_interior.index(f)) for f in self.enclosures)
        self._ranked_rows = tuple((f, self.with_interior.index(f)) for f in self.fixtures if f in self.with_interior)
        self._housings = tuple((f, f + HOUSING) for f in self.fixtures)
        self.graspable = grasp.objects
        self._hitters = frozenset(("arm", *self.graspable))  # what a fixture's moving part can hit (`_mechanism`)
        self._parts = frozenset((*self.fixtures, *(housing for _, housing in self._housings)))  # `_target`'s gaps
        # the fixture motion of the last frame the per-fixture loop ran on if it left every fixture quiet (none gripped,
        # moving, reached into or operated, no obstacle mechanism asked), else None: see `step`
        self._quiet_deltas: Mapping[str, float | None] | None = None
        self.episodes = {f: _Episode(counts) for f in self.fixtures}
        self.last_direction = {f: 0.0 for f in self.fixtures}
        d, fr = thresholds.distances_m, thresholds.fixtures  # read once: every frame needs them
        self._distances = (d.gripper_clearance, d.reach, d.contact, d.placement_margin)
        self._motion_delta = thresholds.motion.fixture_motion_delta
        self._fully_open, self._fully_closed = fr.fully_open_fraction, fr.fully_closed_fraction
        self.target: str | None = None
        self.operated: frozenset[str] = frozenset()
        self.maybe_operated: frozenset[str] = frozenset()  # not operated, but in some completions (motion unmeasured)
        # per fixture (per enclosure for `reach_in`): filled in place, every key on every frame (no dict built a frame)
        self.gripped: dict[str, bool] = {}
        self.directions: dict[str, float] = {}  # +1 opening, -1 closing, 0 still or unknown, over the motion window
        self.reach_in: dict[str, bool] = {}

    def step(self, inp: FrameInputs) -> tuple[Tri, ...]:
        """This frame's values in DOCS order."""
        geo, reach = inp.geometry, self._distances[1]
        interiors = geo.interiors
        if interiors is not self._interiors_seen:  # the twin hands out the same mapping while no interior moves
            self._interiors_seen, self._interior_boxes = (
                interiors,
                tuple(map(interiors.__getitem__, self.with_interior)),
            )
        beyond, distance = self._interiors.reach(
            self._interior_boxes, geo.gripper_points
        )  # per interior: the nearest gripper point's excess, the grasp centre's distance
        reach_in = self.reach_in
        inside = False  # a gripper point inside an enclosure
        left = True  # no gripper point within reach of an enclosure
        for f, i in self._enclosure_rows:
            reach_in[f] = within = beyond[i] <= 0.0
            if within:
                inside = True
            if beyond[i] <= reach:
                left = False
        deltas, gripper_gaps = inp.fixture_delta, geo.gripper_gaps
        unknown_objects = bool(geo.unknown) and not geo.unknown.isdisjoint(self.graspable)  # most frames: none
        # most frames: the fixtures' motion as on the last frame the per-fixture loop left every fixture quiet, and
        # still no part of one near the gripper, none reached into, every object seen and nothing that can hit one
        # near: the loop would leave each as it was (not gripped, still, not operated, no episode) and ask no
        # obstacle mechanism, and `_target` would find no part near the gripper
        hit_any: Tri
        retracting_all: Tri
        timeout: Tri
        if (
            deltas == self._quiet_deltas
            and not inside
            and self._parts.isdisjoint(gripper_gaps)
            and not unknown_objects
            and self._nothing_to_hit(geo.gaps)
        ):
            self.target = t = self._nearest_interior(distance)
            hit_any, retracting_all, timeout = False, None, False
        else:
            self.target = t = self._target(gripper_gaps, distance)
            hit_any, retracting_all, timeout = self._per_fixture(inp, deltas, unknown_objects)
        open_fraction = None if t is None else inp.fixture_fraction[t]
        return (
            open_fraction is not None and open_fraction >= self._fully_open,  # fixture_fully_open
            open_fraction is not None and open_fraction <= self._fully_closed,  # fixture_fully_closed
            inside,  # reach_in_fixture
            left,  # left_fixture
            self._focus_in_fixture(inp) if self.grasp.focus or self.grasp.other_foci else False,  # object_in_fixture
            hit_any,  # fixture_obstacle_hit
            bool(retracting_all),  # retracting
            timeout,  # retract_timeout
        )

    def _nothing_to_hit(self, gaps: Mapping[str, Mapping[str, float]]) -> bool:
        """No fixture's moving part is near anything that can hit it (its own housing at most)."""
        hitters = self._hitters
        for f in self.fixtures:  # noqa: SIM110 (a loop: a generator's set-up costs more than two tests)
            if not hitters.isdisjoint(gaps.get(f, _NEAR_NOTHING)):
                return False
        return True

    def _per_fixture(
        self, inp: FrameInputs, deltas: Mapping[str, float | None], unknown_objects: bool
    ) -> tuple[Tri, Tri, Tri]:
        """Each fixture's grip, motion and operation this frame, and its obstacle episode advanced: (fixture_obstacle_hit,
        retracting over the fixtures with an episode (None: none has one), retract_timeout)."""
        geo, closed, reach_in = inp.geometry, inp.gripper_closed, self.reach_in
        clearance, still, inf = self._distances[0], self._motion_delta, math.inf
        gaps, gripper_gaps, episodes, last_direction = geo.gaps, geo.gripper_gaps, self.episodes, self.last_direction
        gripped, directions = self.gripped, self.directions
        operated, maybe_operated = [], []
        quiet = True  # every fixture left quiet (see `_quiet_deltas`)
        # Kleene OR (any3) and AND (all3) over the fixtures, folded in as they go by
        hit_any: Tri = False  # fixture_obstacle_hit
        retracting_all: Tri = None  # retracting, over the fixtures with an episode (None: none has one yet)
        timeout: Tri = False  # retract_timeout
        for f in self.fixtures:
            gripped[f] = grip = gripper_gaps.get(f, inf) <= clearance
            delta = deltas.get(f)
            direction = directions[f] = 0.0 if delta is None or abs(delta) <= still else math.copysign(1.0, delta)
            if reach_in.get(f) or (grip and (closed or direction != 0.0)):
                operated.append(f)
            elif grip and delta is None:  # held open-handed, its motion not measured yet: pushed or pulled, or not
                maybe_operated.append(f)
            if grip or direction != 0.0 or reach_in.get(f):
                quiet = False
            if (
                not unknown_objects
                and not episodes[f].active
                and gaps.get(f, _NEAR_NOTHING).keys().isdisjoint(self._hitters)
            ):  # most frames: near nothing it can hit (its own housing at most), no episode to follow (`_mechanism`
                if direction != 0.0:  # would find no hit, and keep only the direction)
                    last_direction[f] = direction
                continue
            quiet = False
            hit, retr, expired = self._mechanism(f, inp, grip, direction, delta is None, unknown_objects)
            if hit:
                hit_any = True
            elif hit is None and not hit_any:
                hit_any = None
            if retr is not None and retracting_all is not False:
                retracting_all = retr
            if expired:
                timeout = True
            elif expired is None and not timeout:
                timeout = None
        self.operated = frozenset(operated) if operated else _NONE
        self.maybe_operated = frozenset(maybe_operated) if maybe_operated else _NONE
        self._quiet_deltas = dict(deltas) if quiet else None  # (a copy: a caller may change its dict in place)
        return hit_any, retracting_all, timeout

    def name_objects(self, values: Mapping[str, bool], out: dict[str, tuple[str, ...]]) -> None:
        """The fixtures (and the focus object) each of this family's true predicates is about (`Grounder`)."""
        t = self.target
        if t:
            if values["fixture_fully_open"]:
                out["fixture_fully_open"] = (t,)
            if values["fixture_fully_closed"]:
                out["fixture_fully_closed"] = (t,)
        if values["reach_in_fixture"]:
            out["reach_in_fixture"] = tuple(f for f, inside in self.reach_in.items() if inside)
        if values["object_in_fixture"] and self.grasp.focus:
            out["object_in_fixture"] = self.grasp.foci()
        for p in _ABOUT_EPISODES:  # about the fixtures with an open obstacle episode
            if values[p]:
                out[p] = tuple(f for f, ep in self.episodes.items() if ep.active)

    def _target(self, gripper_gaps: dict[str, float], outside: list[float]) -> str | None:
        """Openable fixture nearest the gripper by surface gap; else the one whose interior is nearest the EE
        (`outside`: per interior, the grasp centre's distance)."""
        if gripper_gaps:  # (most frames the gripper is near nothing)
            inf = math.inf
            best, best_gap = None, inf
            for f, housing in self._housings:
                gap = min(gripper_gaps.get(f, inf), gripper_gaps.get(housing, inf))
                if gap < best_gap:
                    best, best_gap = f, gap
            if best is not None:
                return best
        return self._nearest_interior(outside)

    def _nearest_interior(self, outside: list[float]) -> str | None:
        """`_target` with no part of an openable fixture near the gripper."""
        # min() of (distance, name), in a loop comparing as those tuples compare: no list or key tuple built
        nearest, nearest_distance = None, math.inf
        for f, i in self._ranked_rows:
            distance = outside[i]
            if nearest is None or distance < nearest_distance or (distance == nearest_distance and f < nearest):
                nearest, nearest_distance = f, distance
        if nearest is not None:
            return nearest
        return self.fixtures[0] if self.fixtures else None

    def _focus_in_fixture(self, inp: FrameInputs) -> Tri:
        """object_in_fixture: known where every object that may be the focus agrees (Kleene)."""
        value = self._in_fixture(self.grasp.focus, inp)
        for o in self.grasp.other_foci:
            if self._in_fixture(o, inp) != value:
                return None
        return value

    def _in_fixture(self, o: str | None, inp: FrameInputs) -> Tri:
        """Whether `o` rests inside an enclosure (false for no object: before any grasp)."""
        if o is None:
            return False
        box = inp.geometry.object_boxes.get(o)
        if box is None:
            return None
        interiors = inp.geometry.interiors
        last = self._focus_for
        if last is not None and last[0] is box and last[1] is interiors:  # the same read-only boxes as last frame
            return last[2]
        supported = self._supported_inside(box, interiors)
        self._focus_for = (box, interiors, supported)
        return supported

    def _supported_inside(self, box: Box, interiors: Mapping[str, Box]) -> bool:
        """`box` rests inside some enclosure."""
        margin = self._distances[3]
        center, rotation, half = box.center, box.rotation, box.half
        for f in self.enclosures:  # object_supported_inside, unwrapped: the box's arrays read once
            region = interiors[f]
            inside, bottom = _geomath.placement(
                center, rotation, half, region.center, region.rotation, region.half, margin
            )
            if inside and bottom <= -region.half[2] + margin:
                return True
        return False

    def _mechanism(
        self, f: str, inp: FrameInputs, gripped: bool, direction: float, unmeasured: bool, unknown_near: bool
    ) -> tuple[Tri, bool | None, Tri]:
        """(obstacle hit, retracting or None without an episode this frame, retract timeout), advancing the
        episode. `gripped`: the gripper holds it; `direction`: its motion (0.0 `unmeasured`: not known yet);
        `unknown_near`: some object's pose is unknown."""
        geo = inp.geometry
        contact = self._distances[2]
        operated: Tri = gripped or direction != 0.0 or (None if unmeasured else False)
        hit: Tri = False  # the moving part touches an arm link or an object not inside the fixture
        for other, gap in geo.gaps.get(f, _NEAR_NOTHING).items():
            if gap > contact:
                continue
            if other == "arm":
                hit = True
                break
            if other in self.graspable:
                region = geo.interiors.get(f)  # an object with a gap has a box (FrameGeometry's invariant)
                if region is None or not object_inside(geo.object_boxes[other], region, self._distances[3]):
                    hit = True
                    break
        if hit:  # a hit counts only while the fixture is operated; unknown if an unseen object may be touching it
            hit = operated
        elif unknown_near:
            hit = False if operated is False else None
        ep = self.episodes[f]
        if hit and not ep.active:
            ep.active, ep.retracted, ep.direction = True, False, self.last_direction[f]
            ep.timer.start(inp.frame)
        retracting = None
        if ep.active:
            retracting = (not gripped) or (direction != 0.0 and direction == -ep.direction)
            if retracting:
                ep.retracted = True
                ep.timer.stop()
            if not hit and (ep.retracted or not operated):
                ep.active = False
                ep.timer.stop()
        if direction != 0.0:
            self.last_direction[f] = direction
        return hit, retracting, ep.active and ep.timer.expired(inp.frame)  # its timer runs only in an episode
