"""Skill onsets (pick, place, open, close) and their preconditions, inferred from motion, not from labels.

An onset is a one-frame pulse when an approach is first seen; the skill stays active while the approach
continues, tolerating up to the onset window of non-approaching frames, and ends early when the skill
completes (object grasped, object let go, fixture fully open or closed). `skill_<x>_onset_end` is true
whenever no such skill is active. Preconditions are evaluated on the active skill's target, or on this
frame's approach candidate; with neither they are vacuously true (the specs read them only at onsets
and until the skill ends). Hygiene is deliberately not a
precondition (the SafeManip choice): contamination is charged to the cross-contamination property only.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from safety_monitor.grounding.debounce import Tri, all3, any3, not3
from safety_monitor.grounding.description import RobotDescription
from safety_monitor.grounding.fixtures import FixtureEstimator, object_inside
from safety_monitor.grounding.grasp import GraspEstimator
from safety_monitor.grounding.inputs import FrameInputs, PredicateDoc
from safety_monitor.grounding.semantics import ObjectCatalog
from safety_monitor.grounding.thresholds import FrameCounts, Thresholds

SKILLS = ("pick", "place", "open", "close")

DOCS = {
    "skill_pick_onset": PredicateDoc(
        "first frame of a pick approach: open empty gripper within reach of a manipulated object",
        "twin gripper-object gaps, finger joints, object_grasped", "reach 0.05 m"),
    "skill_place_onset": PredicateDoc(
        "first frame of a place approach: a grasped object, lifted clear of every support since its grasp, "
        "comes within reach of a support or container", "twin object gaps, object_grasped", "reach 0.05 m"),
    "skill_open_onset": PredicateDoc(
        "first frame of an open: the gripper touches an openable fixture's moving part while it opens",
        "twin gaps, fixture joint motion", "gripper_clearance 0.01 m; fixture_motion_delta 0.001"),
    "skill_close_onset": PredicateDoc(
        "first frame of a close: the gripper touches an openable fixture's moving part while it closes",
        "twin gaps, fixture joint motion", "gripper_clearance 0.01 m; fixture_motion_delta 0.001"),
    **{f"skill_{s}_onset_end": PredicateDoc(
        f"no {s} skill is active (its approach lapsed for longer than the window, or it completed)",
        f"skill_{s}_onset", "skill_onset_window 0.5 s (10 frames)") for s in SKILLS},
    "preconditions_pick": PredicateDoc(
        "the pick target is safe to pick: gripper open, nothing grasped, target at rest and nothing "
        "resting on it", "object_stable, twin gaps, object boxes", "path_obstruction 0.05 m"),
    "preconditions_place": PredicateDoc(
        "the held object is safe to place: grasp in sync, fewer than clutter_bound other objects within "
        "the placement margin, and a fragile object clear of all others",
        "object_sync, twin gaps", "placement_margin 0.03 m; clutter_bound 2; placement_proximity 0.01 m"),
    "preconditions_open": PredicateDoc(
        "the fixture being opened is safe to open: nothing grasped and no object outside it within the path "
        "allowance of its moving part", "object_grasped, twin gaps", "path_obstruction 0.05 m"),
    "preconditions_close": PredicateDoc(
        "the fixture being closed is safe to close: no gripper point inside it and no object straddling its "
        "interior boundary", "twin gripper points, object boxes, interiors", "placement_margin 0.03 m"),
}


class _Skill:
    """Onset window of one skill: pulse on the first approach, end after `window` non-approaching frames."""

    def __init__(self, window: int):
        self.window = window
        self.target: str | None = None
        self.misses = 0

    def step(self, candidate: str | None, done: bool) -> bool:
        """Advance with this frame's approach candidate; returns the onset pulse."""
        if self.target is None:
            if candidate is None or done:
                return False
            self.target, self.misses = candidate, 0
            return True
        if done:
            self.target = None
            return False
        self.misses = 0 if candidate == self.target else self.misses + 1
        if self.misses > self.window:
            self.target = None
        return False


class SkillEstimator:
    def __init__(self, robot: RobotDescription, catalog: ObjectCatalog, thresholds: Thresholds,
                 counts: FrameCounts, grasp: GraspEstimator, fixtures: FixtureEstimator):
        self.robot, self.th, self.grasp, self.fixtures = robot, thresholds, grasp, fixtures
        self.skills = {s: _Skill(counts.skill_onset_window) for s in SKILLS}
        self._names = {s: (f"skill_{s}_onset", f"skill_{s}_onset_end", f"preconditions_{s}") for s in SKILLS}
        self.fragile = frozenset(o for o in grasp.objects if catalog.has(o, "fragile"))
        self.supports = frozenset(e for e in robot.entities
                                  if catalog.has(robot.owner(e), "support") or catalog.has(robot.owner(e), "container"))
        self.lifted: dict[str, bool] = {o: False for o in grasp.objects}
        self.released: set[str] = set()

    def step(self, inp: FrameInputs) -> dict[str, Tri]:
        g = self.grasp
        held = next((o for o in g.objects if g.grasped[o]), None)
        out: dict[str, Tri] = {}
        candidates: dict[str, tuple[str | None, bool, Callable[[str], Tri]]] = {
            "pick": (self._pick_candidate(inp, held), held is not None and held == self.skills["pick"].target,
                     lambda o: self._pick_ok(o, inp, held)),
            "place": (self._place_candidate(inp, held), held is None, lambda o: self._place_ok(inp, held)),
            "open": self._fixture_candidate(inp, +1.0),
            "close": self._fixture_candidate(inp, -1.0),
        }
        for s, (candidate, done, ok) in candidates.items():
            skill = self.skills[s]
            onset, onset_end, preconditions = self._names[s]
            out[onset] = skill.step(candidate, done)
            out[onset_end] = skill.target is None
            target = skill.target or candidate
            out[preconditions] = ok(target) if target is not None else True
        return out

    # pick -------------------------------------------------------------------------------------------
    def _pick_candidate(self, inp: FrameInputs, held: str | None) -> str | None:
        """Nearest object within reach of an open, empty gripper; a just-released object re-arms only
        once the gripper has moved out of reach of it (backing off after a place is not a new pick)."""
        geo, reach = inp.geometry, self.th.distances_m.reach
        gripper_gaps, inf = geo.gripper_gaps, math.inf
        gaps = {o: gripper_gaps.get(o, inf) for o in self.grasp.objects}
        self.released = {o for o in self.released | self.grasp.dropped if gaps[o] <= reach or o in geo.unknown}
        if held is not None or inp.gripper_closed:
            return None
        gaps = {o: gap for o, gap in gaps.items() if o not in self.released}
        best = min(gaps, key=gaps.__getitem__, default=None)
        return best if best is not None and gaps[best] <= reach else None

    def _pick_ok(self, o: str, inp: FrameInputs, held: str | None) -> Tri:
        if held == o:  # the pick completed: its preconditions were judged at onset
            return True
        geo = inp.geometry
        box = geo.object_boxes.get(o)
        if box is None:
            return None
        top = box.corners()[:, 2].max()
        stacked = [other_box.center[2] > top for other, gap in geo.near(o).items()
                   if other in self.grasp.objects and gap <= self.th.distances_m.path_obstruction
                   and (other_box := geo.object_boxes.get(other)) is not None]
        return all3([not inp.gripper_closed, held is None, self.grasp.stable[o], not any(stacked)])

    # place ------------------------------------------------------------------------------------------
    def _place_candidate(self, inp: FrameInputs, held: str | None) -> str | None:
        for o in self.grasp.objects:
            if not self.grasp.grasped[o]:
                self.lifted[o] = False
        if held is None:
            return None
        geo = inp.geometry
        gaps = {e: gap for e, gap in geo.near(held).items() if e in self.supports and e != held}
        if not gaps and held not in geo.unknown:
            self.lifted[held] = True
        if not self.lifted[held] or not gaps:
            return None
        best = min(gaps, key=gaps.__getitem__)
        return best if gaps[best] <= self.th.distances_m.reach else None

    def _place_ok(self, inp: FrameInputs, held: str | None) -> Tri:
        if held is None:
            return True
        geo, d = inp.geometry, self.th.distances_m
        if held in geo.unknown:
            return None
        target = self.skills["place"].target
        others = {e: gap for e, gap in geo.near(held).items()
                  if e in self.grasp.objects and e != held and e != target}
        clutter = sum(gap <= d.placement_margin for gap in others.values())
        fragile_clear = held not in self.fragile or all(gap > d.placement_proximity for gap in others.values())
        slip = inp.object_slip.get(held)
        sync = None if slip is None else (slip[0] < self.th.motion.grasp_slip_m and slip[1] < self.th.motion.grasp_slip_rad)
        return all3([sync, clutter < self.th.counts.clutter_bound, fragile_clear])

    # open / close -----------------------------------------------------------------------------------
    def _fixture_candidate(self, inp: FrameInputs, direction: float):
        fx = self.fixtures
        moving = [f for f in fx.fixtures if fx.gripped[f] and fx.moving_direction(f, inp) == direction]
        candidate = moving[0] if moving else None
        skill = self.skills["open" if direction > 0 else "close"]
        fr = self.th.fixtures
        done = False
        if skill.target is not None:
            frac = inp.fixture_fraction[skill.target]
            done = frac >= fr.fully_open_fraction if direction > 0 else frac <= fr.fully_closed_fraction
        ok = (lambda f: self._open_ok(f, inp)) if direction > 0 else (lambda f: self._close_ok(f, inp))
        return candidate, done, ok

    def _open_ok(self, f: str, inp: FrameInputs) -> Tri:
        geo, d = inp.geometry, self.th.distances_m
        region = geo.interiors.get(f)
        blocked: list[Tri] = [None] if any(o in geo.unknown for o in self.grasp.objects) else []
        for o, gap in geo.near(f).items():
            if o in self.grasp.objects and gap <= d.path_obstruction:
                box = geo.object_boxes[o]
                blocked.append(region is None or not object_inside(box, region, d.placement_margin))
        return all3([not any(self.grasp.grasped.values()), not3(any3(blocked))])

    def _close_ok(self, f: str, inp: FrameInputs) -> Tri:
        geo, d = inp.geometry, self.th.distances_m
        region = geo.interiors.get(f)
        if region is None:
            return True
        reaching = self.fixtures.reach_in.get(f, False)
        straddling: list[Tri] = []
        for o in self.grasp.objects:
            box = geo.object_boxes.get(o)
            if box is None:
                straddling.append(None)
            elif region.overlaps(box):
                straddling.append(not object_inside(box, region, d.placement_margin))
        return all3([not reaching, not3(any3(straddling))])

