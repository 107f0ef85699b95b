"""Transfers into containers: a drop above a container's opening starts a transfer that must settle inside.

Containers are entities with the `container` property and an interior box (robot.yaml). A transfer
episode follows one object into one container until it is contained and at rest, it is grasped again,
or another transfer starts.
"""

from __future__ import annotations

from collections.abc import Mapping

from safety_monitor.grounding import _geomath
from safety_monitor.grounding.debounce import SymmetricDebounce, Timer, Tri, all3
from safety_monitor.grounding.description import RobotDescription
from safety_monitor.grounding.fixtures import object_inside
from safety_monitor.grounding.geometry import Box, FrameGeometry
from safety_monitor.grounding.grasp import GraspEstimator
from safety_monitor.grounding.inputs import FrameInputs, PredicateDoc
from safety_monitor.grounding.semantics import ObjectCatalog
from safety_monitor.grounding.thresholds import FrameCounts, Thresholds

DOCS = {
    "transfer_event": PredicateDoc(
        "an object was dropped this frame with its centre above a container's opening",
        "object_dropped, object box, container interiors",
        "-",
    ),
    "contained": PredicateDoc(
        "some manipulated object lies inside a container (footprint within the interior, bottom below the rim)",
        "object boxes, container interiors",
        "placement_margin 0.03 m",
    ),
    "contained_settled": PredicateDoc(
        "the object of the current transfer is contained in its container and stable, debounced",
        "contained, object_stable",
        "content_entry_persistence 0.25 s (5 frames)",
    ),
    "transfer_timeout": PredicateDoc(
        "the current transfer has lasted the timeout without contained_settled (unknown if it may have settled "
        "while unseen: for the content-entry persistence)",
        "transfer_event, contained_settled",
        "transfer_timeout 5 s (100 frames)",
    ),
}


_ABOUT_TRANSFER = ("transfer_event", "contained_settled", "transfer_timeout")


class ContainmentEstimator:
    def __init__(
        self,
        robot: RobotDescription,
        catalog: ObjectCatalog,
        thresholds: Thresholds,
        counts: FrameCounts,
        grasp: GraspEstimator,
    ):
        self.th, self.grasp, self.counts = thresholds, grasp, counts
        interiors = robot.interiors()
        self.containers = tuple(c for c in interiors if catalog.has(c, "container"))
        self.transfer: tuple[str, str] | None = None  # (object, container)
        self.timer = Timer(counts.transfer_timeout)
        self.settled = SymmetricDebounce(counts.content_entry_persistence)
        self.maybe_settled = 0  # frames since the transfer's object was last seen not contained at rest
        # the last (object boxes, interiors) `_contained` was asked about, and its answer
        self._contained_for: tuple[Mapping[str, Box], Mapping[str, Box], Tri] | None = None

    def step(self, inp: FrameInputs) -> tuple[Tri, ...]:
        """This frame's values in DOCS order."""
        geo = inp.geometry
        margin = self.th.distances_m.placement_margin
        event = False
        if self.grasp.dropped:  # rare: sorting an empty set every frame costs more than the check
            for o in sorted(self.grasp.dropped):
                c = self._container_below(o, inp)
                if c is not None:
                    event = True
                    self.transfer = (o, c)
                    drop = self.grasp.state[o].settle  # started by this drop: from its earliest frame (a drop
                    self.timer.start(inp.frame, drop.earliest)  # decided after a pose gap), doubted if it
                    if drop.doubted:  # may have come to rest since then
                        self.timer.doubt()
                    self.settled = SymmetricDebounce(self.counts.content_entry_persistence)
                    self.maybe_settled = 0
        if self.transfer and self.grasp.grasped[self.transfer[0]]:
            self.transfer = None
            self.timer.stop()
        settled: Tri = False
        if self.transfer:
            o, c = self.transfer
            box = geo.object_boxes.get(o)
            inside = None if box is None else object_inside(box, geo.interiors[c], margin)
            stable = self.grasp.stable[o]
            raw = all3([inside, stable])  # Kleene: seen outside (or moving), it is not settled, unseen or not
            settled = self.settled.step(raw)
            self.maybe_settled = 0 if raw is False else self.maybe_settled + 1
            if settled:
                self.timer.stop()
            elif self.maybe_settled >= self.counts.content_entry_persistence:
                self.timer.doubt()  # it may have settled unseen (a shorter spell could not): a timeout is unknown
        return event, self._contained(geo, margin), settled, self.timer.expired(inp.frame)

    def name_objects(self, values: Mapping[str, bool], out: dict[str, tuple[str, ...]]) -> None:
        """The object and container of the current transfer, for each of its true predicates (`Grounder`)."""
        if self.transfer:
            for p in _ABOUT_TRANSFER:
                if values[p]:
                    out[p] = self.transfer

    def _contained(self, geo: FrameGeometry, margin: float) -> Tri:
        """Some object inside some container (Kleene OR: the first one inside decides it, the rest are not
        tested; unknown if none is and an object has no box). The twin hands out the same box mappings while
        no box is rebuilt (most frames), and read-only: then the answer is the last frame's."""
        boxes, interiors = geo.object_boxes, geo.interiors
        last = self._contained_for
        if last is not None and last[0] is boxes and last[1] is interiors:
            return last[2]
        contained = self._contained_in(boxes, interiors, margin)
        self._contained_for = (boxes, interiors, contained)
        return contained

    def _contained_in(self, boxes: Mapping[str, Box], interiors: Mapping[str, Box], margin: float) -> Tri:
        placement = _geomath.placement
        contained: Tri = False
        for o in self.grasp.objects:
            box = boxes.get(o)
            if box is None:
                contained = None
                continue
            center, rotation, half = box.center, box.rotation, box.half
            for c in self.containers:  # object_inside, unwrapped: the box's arrays read once
                region = interiors[c]
                if placement(center, rotation, half, region.center, region.rotation, region.half, margin)[0]:
                    return True
        return contained

    def _container_below(self, o: str, inp: FrameInputs) -> str | None:
        box = inp.geometry.object_boxes.get(o)
        if box is None:
            return None
        for c in self.containers:
            region = inp.geometry.interiors[c]
            x, y, z = region.to_local(box.center)
            hx, hy, hz = region.half.tolist()
            if abs(x) <= hx and abs(y) <= hy and z >= -hz:
                return c
        return None
