"""Per-frame geometry the predicates read: computed by the kinematic twin, or built by hand in tests.

Keeping geometry in this small typed record is what lets every predicate run without MuJoCo.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from safety_monitor.grounding import _geomath
from safety_monitor.grounding.description import GRIPPER_PARTS
from safety_monitor.grounding.motion import in_frame, point3
from safety_monitor.records import direct_init


@direct_init
@dataclass(frozen=True)
class Box:
    """Oriented box: centre (world), rotation (columns = box axes in world) and half sizes.

    Immutable, arrays included: the twin hands out the same Box object for as long as its body rests, and
    its corners are kept on it. The box tests themselves (C, `_geomath`) cost less than remembering them.
    """

    center: np.ndarray
    rotation: np.ndarray
    half: np.ndarray

    def to_local(self, point: np.ndarray) -> tuple[float, float, float]:
        """A world point in the box's frame (origin at the centre), in plain floats (the same on every
        machine, as `motion.in_frame`)."""
        return in_frame(point3(self.center), self.rotation, point)

    def corners(self) -> np.ndarray:
        """The eight corners (world), computed once per box (read-only: shared by every reader)."""
        corners = self.__dict__.get("_corners")
        if corners is None:
            corners = self.__dict__["_corners"] = _geomath.box_corners(self.center, self.rotation, self.half)
        return corners

    def overlaps(self, other: Box) -> bool:
        """Separating-axis test for two oriented boxes (touching counts as overlapping)."""
        return _geomath.box_overlap(self.center, self.rotation, self.half, other.center, other.rotation, other.half)


class BoxStack:
    """Several boxes against the same points in one go: the boxes stacked once while they stay the same
    objects, the arithmetic in C (`_geomath.interior_reach`: numpy's per-call cost dwarfed the 2 x 3 x 3
    values)."""

    def __init__(self) -> None:
        self._boxes: tuple[Box, ...] = ()
        self._center, self._rotation, self._half = np.empty((0, 3)), np.empty((0, 3, 3)), np.empty((0, 3))

    def reach(self, boxes: tuple[Box, ...], points: np.ndarray) -> tuple[list[float], list[float]]:
        """Per box: how far the nearest point lies beyond the box's farthest face (<= 0: a point is inside),
        and how far the first point is from the box (0 inside)."""
        if boxes is not self._boxes and (
            len(boxes) != len(self._boxes) or not all(map(operator.is_, boxes, self._boxes))
        ):
            self._boxes = boxes
            self._center = np.array([b.center for b in boxes], dtype=float).reshape(-1, 3)
            self._rotation = np.array([b.rotation for b in boxes], dtype=float).reshape(-1, 3, 3)
            self._half = np.array([b.half for b in boxes], dtype=float).reshape(-1, 3)
        return _geomath.interior_reach(self._center, self._rotation, self._half, np.asarray(points, dtype=float))


def norm(v: np.ndarray) -> float:
    """Euclidean length of a vector: a float64 3-vector in C (`_geomath.norm3`, the same on every machine),
    anything else through numpy."""
    try:
        return _geomath.norm3(v)
    except (TypeError, ValueError):  # not a float64 3-vector
        return float(np.linalg.norm(np.asarray(v, dtype=float)))


@direct_init
@dataclass(frozen=True)
class FrameGeometry:
    """What the twin knows this frame. Distances are surface gaps in metres (negative: penetration).

    `gaps[a][b]` is symmetric and lists only entity pairs closer than the twin's report margin
    (the largest distance threshold); pairs absent are farther. Objects in `unknown` had no usable pose:
    they appear in no gap and have no box, and predicates about them are unknown.
    """

    ee_position: np.ndarray
    ee_rotation: np.ndarray
    gripper_points: np.ndarray  # (k, 3): grasp centre and finger pad centres
    gaps: Mapping[str, Mapping[str, float]]
    object_boxes: Mapping[str, Box]
    interiors: Mapping[str, Box]  # by owner (fixture or static body)
    unknown: frozenset[str] = frozenset()

    @classmethod
    def with_derived(
        cls,
        ee_position: np.ndarray,
        ee_rotation: np.ndarray,
        gripper_points: np.ndarray,
        gaps: Mapping[str, Mapping[str, float]],
        object_boxes: Mapping[str, Box],
        interiors: Mapping[str, Box],
        unknown: frozenset[str],
        gripper_gaps: dict[str, float],
        pairs: list[tuple[str, str, float]],
    ) -> FrameGeometry:
        """A FrameGeometry whose `gripper_gaps` and `pairs` are given rather than derived from `gaps` on first
        use (the twin has them as a by-product of building `gaps`; they must be what deriving would give):
        kept as cached_property keeps its values, so reading them is a plain attribute read."""
        geo = cls(ee_position, ee_rotation, gripper_points, gaps, object_boxes, interiors, unknown)
        fields = geo.__dict__
        fields["gripper_gaps"] = gripper_gaps
        fields["pairs"] = pairs
        return geo

    @cached_property
    def pairs(self) -> list[tuple[str, str, float]]:
        """Every entity pair in `gaps` once, as (a, b, gap) with a < b."""
        return [(a, b, g) for a, row in self.gaps.items() for b, g in row.items() if a < b]

    def gap(self, a: str, b: str) -> float:
        """Surface gap between two entities (inf when beyond the report margin)."""
        return self.gaps.get(a, {}).get(b, math.inf)

    @cached_property
    def gripper_gaps(self) -> dict[str, float]:
        """Smallest gap from any gripper body (fingers, hand) to each entity within the report margin.
        Derived on first use and kept, unless given (`with_derived`: the twin's, a plain attribute read)."""
        gaps: dict[str, float] = {}
        for part in GRIPPER_PARTS:
            for e, g in self.gaps.get(part, {}).items():
                if g < gaps.get(e, math.inf):
                    gaps[e] = g
        return gaps

    def gripper_gap(self, entity: str) -> float:
        """Gap between the gripper (closest finger or hand body) and an entity (inf beyond the margin)."""
        return self.gripper_gaps.get(entity, math.inf)

    def near(self, entity: str) -> Mapping[str, float]:
        """Every entity within the report margin of `entity`, with its gap."""
        return self.gaps.get(entity, {})

    def forget(self, objects: frozenset[str]) -> FrameGeometry:
        """The same geometry with `objects` made unknown (their pose was judged unusable)."""
        if objects <= self.unknown:
            return self
        gaps = {
            a: {b: g for b, g in row.items() if b not in objects} for a, row in self.gaps.items() if a not in objects
        }
        boxes = {o: b for o, b in self.object_boxes.items() if o not in objects}
        return replace(self, gaps=gaps, object_boxes=boxes, unknown=self.unknown | objects)

    @staticmethod
    def symmetric(pairs: Mapping[tuple[str, str], float]) -> dict[str, dict[str, float]]:
        """Build `gaps` from (a, b) -> distance, keeping the smaller value when a pair repeats."""
        out: dict[str, dict[str, float]] = {}
        for (a, b), dist in pairs.items():
            for x, y in ((a, b), (b, a)):
                row = out.setdefault(x, {})
                row[y] = min(dist, row.get(y, math.inf))
        return out
