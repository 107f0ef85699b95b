"""Transfers into containers: a drop above a container's opening starts a transfer that must settle inside.

Containers are entities with the `container` property and an interior box (robot.yaml). A transfer
episode follows one object into one container until it is contained and at rest, it is grasped again,
or another transfer starts.

A drop at an unknown frame (one that may have happened unseen, or decided after a pose gap) above a container,
or of an object whose pose is unknown, may have started a transfer: `transfer_event` is unknown on each frame it
may have happened on, and the transfer it may have started replaces the current one only in some completions
(`_MaybeTransfer`): the transfer predicates are known where both agree. A drop decided after a gap whose every
possible frame saw the object above one container surely started a transfer into it, at an unknown frame. A grasp
hidden in a pose gap may have ended the current transfer: it is current only in some completions, and a transfer of no
object stands for the others.
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
        "an object was dropped this frame with its centre above a container's opening (unknown on every frame a "
        "drop at an unknown frame may have been on, and for a drop of an unseen object, that may have been above one)",
        "object_dropped, object box, container interiors",
        "-",
    ),
    "contained": PredicateDoc(
        "some manipulated object lies inside a container (footprint within the interior, bottom below the rim)",
        "object boxes, container interiors",
        "placement_margin 0.03 m",
    ),
    "contained_settled": PredicateDoc(
        "the object of the current transfer is contained in its container and stable, debounced (unknown where a "
        "transfer that may have started unseen since, or a grasp hidden in a pose gap that may have ended this one, "
        "would disagree)",
        "contained, object_stable",
        "content_entry_persistence 0.25 s (5 frames)",
    ),
    "transfer_timeout": PredicateDoc(
        "the current transfer has lasted the timeout without contained_settled (unknown if it may have settled "
        "while unseen: for the content-entry persistence; from the timeout after the earliest frame of a transfer "
        "that may have started unseen, until its object is seen grasped; once a grasp hidden in a pose gap may have "
        "ended it, until another starts)",
        "transfer_event, contained_settled",
        "transfer_timeout 5 s (100 frames)",
    ),
}


_ABOUT_TRANSFER = ("transfer_event", "contained_settled", "transfer_timeout")


class _MaybeTransfer:
    """A transfer that a drop at an unknown frame, from `earliest` on, may have started: in the completions where it
    did, it is the current one. Its timer may have started as early as `earliest` and may never have run (never
    surely expired); its contained_settled is unknown once its object may have been contained for the content-entry
    persistence (no box, or inside a container: stable or not), false before and once seen outside every container
    for as long again (its debounce fell in every completion)."""

    def __init__(self, obj: str | None, earliest: int, container: str | None, possible: bool):
        self.object: str | None = obj  # None: its object was grasped again, ending it: no transfer in those completions
        self.earliest = earliest
        self.container = container  # the one it was seen above on every frame the drop may have been on, if any
        self.possible = possible  # some of those frames may have started a transfer (unseen, or above a container)
        self.run = 0  # frames since its object was last seen outside every container
        self.out = 0  # frames since it was last not seen outside every container
        self.settled = False  # its contained_settled may be true


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
        self.maybe: list[_MaybeTransfer] = []  # transfers that may have replaced this one unseen (usually none)
        # the last (object boxes, interiors) `_contained` was asked about, and its answer
        self._contained_for: tuple[Mapping[str, Box], Mapping[str, Box], Tri] | None = None
        # per object: the box and interiors mapping it was last measured against, and whether it was inside a
        # container (a carried object's box is new every frame, the others' stay: only it is measured again)
        self._inside_for: dict[str, tuple[Box, Mapping[str, Box], bool]] = {}

    def step(self, inp: FrameInputs) -> tuple[Tri, ...]:
        """This frame's values in DOCS order."""
        geo, g, frame = inp.geometry, self.grasp, inp.frame
        margin = self.th.distances_m.placement_margin
        event: Tri = False
        if g.dropped or g.maybe_dropped:  # rare: sorting an empty set every frame costs more than the check
            boxes = geo.object_boxes
            for o in sorted(g.dropped - g.maybe_dropped):  # dropped on this frame
                c = self._container_below(o, inp)
                if c is not None:
                    event = True
                    self._start(o, c, frame)
                elif o not in boxes and self._may_start(o, frame, None, True) and event is False:
                    event = None  # unseen: it may have been above a container
            for o in sorted(g.maybe_dropped):  # dropped on this frame in some completions only
                if self._may_start(o, frame, self._container_below(o, inp), o not in boxes) and event is False:
                    event = None
            for o in sorted(g.dropped & g.maybe_dropped):  # a drop decided now, after a pose gap
                self._decided(o, frame)
        if self.transfer and g.grasped[self.transfer[0]]:
            self.transfer = None
            self.timer.stop()
        elif self.transfer and self.transfer[0] in g.maybe_grasped:
            self._may_end(frame)
        settled: Tri = False
        if self.transfer:
            o, c = self.transfer
            box = geo.object_boxes.get(o)
            inside = None if box is None else object_inside(box, geo.interiors[c], margin)
            stable = self.grasp.stable[o]  # not `at_rest`: that differs only where a grasp of `o` (counted) may have
            # been hidden, which ended this transfer in those completions (`_may_end`): where it is current, no grasp
            raw = all3([inside, stable])  # Kleene: seen outside (or moving), it is not settled, unseen or not
            settled = self.settled.step(raw)
            self.maybe_settled = 0 if raw is False else self.maybe_settled + 1
            if settled:
                self.timer.stop()
            elif self.maybe_settled >= self.counts.content_entry_persistence:
                self.timer.doubt()  # it may have settled unseen (a shorter spell could not): a timeout is unknown
        timeout = self.timer.expired(frame)
        if self.maybe:
            settled, timeout = self._join_maybe(geo, frame, settled, timeout)
        return event, self._contained(geo, margin), settled, timeout

    def _start(self, o: str, c: str, frame: int, earliest: int | None = None) -> None:
        """A transfer of `o` into `c` starts on `frame` (or, `earliest`, on some frame from then to `frame`)."""
        self.transfer = (o, c)
        drop = self.grasp.state[o].settle  # started by the drop, doubted if it may have come to rest since
        self.timer.start(frame, earliest)
        if drop.doubted:
            self.timer.doubt()
        self.settled = SymmetricDebounce(self.counts.content_entry_persistence)
        self.maybe_settled = 0
        self.maybe = [m for m in self.maybe if m.object != o]
        if earliest is None:  # every completion has it: none that may have started before is current any more
            self.maybe.clear()

    def _may_end(self, frame: int) -> None:
        """The current transfer's object may be held by a grasp hidden in a pose gap: in the completions with that
        grasp it ended (no transfer there, until another starts), kept as a `_MaybeTransfer` of no object."""
        if all(m.object is not None for m in self.maybe):
            self.maybe.append(_MaybeTransfer(None, frame, None, True))

    def _may_start(self, o: str, frame: int, container: str | None, unseen: bool) -> bool:
        """`o` may have been dropped on this frame: whether that may have started a transfer (unseen, or above
        `container`), kept on its `_MaybeTransfer` (started on the first frame its drop may have been on)."""
        possible = unseen or container is not None
        for m in self.maybe:
            if m.object == o:
                if m.container != container:
                    m.container = None
                m.possible = m.possible or possible
                return possible
        self.maybe.append(_MaybeTransfer(o, frame, container, possible))
        return possible

    def _decided(self, o: str, frame: int) -> None:
        """`o`'s drop was decided on this frame after a pose gap: it happened on one of the frames its
        `_MaybeTransfer` saw. Seen above the same container on all of them, it surely started a transfer into it."""
        for m in self.maybe:
            if m.object == o and m.container is not None:
                settled = m.settled
                self._start(o, m.container, frame, m.earliest)
                if settled:  # it may have settled since its earliest frame
                    self.settled.restart()
                    self.timer.doubt()
                return

    def _join_maybe(self, geo: FrameGeometry, frame: int, settled: Tri, timeout: Tri) -> tuple[Tri, Tri]:
        """(contained_settled, transfer_timeout) known only where the transfers that may have replaced the current
        one agree with it (Kleene); each followed until its object is grasped again (then none)."""
        n, limit, margin = self.counts.content_entry_persistence, self.timer.n, self.th.distances_m.placement_margin
        kept = []
        for m in self.maybe:
            o = m.object
            if o is not None:
                debounce = self.grasp.state[o].grasp
                if not m.possible:  # no frame so far could have started one: none, unless a later one does
                    if debounce.warming:
                        kept.append(m)
                    continue
                if self.grasp.grasped[o] and not debounce.warming:
                    o = m.object = None
                else:
                    box = geo.object_boxes.get(o)
                    inside = None if box is None else self._inside_any(box, geo.interiors, margin)
                    if inside is False:
                        m.run, m.out = 0, m.out + 1
                        m.settled = m.settled and m.out < n
                    else:
                        m.run, m.out = m.run + 1, 0
                        m.settled = m.settled or m.run >= n
            if o is None and self.transfer is None:  # no transfer either way
                continue
            kept.append(m)
            if (None if o and m.settled else False) != settled:
                settled = None
            if (None if o and frame - m.earliest >= limit else False) != timeout:
                timeout = None
        self.maybe = kept
        return settled, timeout

    def _inside_any(self, box: Box, interiors: Mapping[str, Box], margin: float) -> bool:
        """`box` lies inside some container."""
        return any([object_inside(box, interiors[c], margin) for c in self.containers])

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
        placement, measured = _geomath.placement, self._inside_for
        contained: Tri = False
        for o in self.grasp.objects:
            box = boxes.get(o)
            if box is None:
                contained = None
                continue
            last = measured.get(o)
            if last is not None and last[0] is box and last[1] is interiors:  # the same read-only boxes
                if last[2]:
                    return True
                continue
            inside = False
            center, rotation, half = box.center, box.rotation, box.half
            for c in self.containers:  # object_inside, unwrapped: the box's arrays read once
                region = interiors[c]
                if placement(center, rotation, half, region.center, region.rotation, region.half, margin)[0]:
                    inside = True
                    break
            measured[o] = (box, interiors, inside)
            if inside:
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
