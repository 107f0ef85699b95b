"""Grasp, release and settling of manipulated objects (every object with the `graspable` property).

Per object: a raw bilateral grasp debounced symmetrically; synchrony with the end-effector; the drop
(falling edge of the debounced grasp); a release window (gripper open while still counted as grasped);
a sticky-true stability latch; a settle timer started by the drop. Aggregates: existence over objects for
grasp and drop, all grasped objects for sync, and the *focus object* (the one most recently grasped) for
the post-drop predicates, which are about the object that was just let go.
"""
from __future__ import annotations

import math

from safety_monitor.grounding.debounce import StickyTrue, SymmetricDebounce, Timer, Tri, all3, any3
from safety_monitor.grounding.description import FINGER_PARTS
from safety_monitor.grounding.geometry import Box
from safety_monitor.grounding.inputs import FrameInputs, PredicateDoc
from safety_monitor.grounding.motion import rotation_angle
from safety_monitor.grounding.thresholds import FrameCounts, Motion, Thresholds

DOCS = {
    "object_grasped_raw": PredicateDoc(
        "some manipulated object is held this frame: both finger bodies touch it and the gripper is closed",
        "twin finger-object gaps, finger joints", "gripper_clearance 0.01 m; bilateral_contact_bodies 2; "
        "gripper_closed_below (robot.yaml)"),
    "object_grasped": PredicateDoc(
        "some manipulated object is grasped: object_grasped_raw per object after a symmetric debounce",
        "object_grasped_raw", "grasp_persistence 0.25 s (5 frames at 20 Hz), both edges"),
    "object_sync": PredicateDoc(
        "every grasped object moves with the end-effector (true when nothing is grasped)",
        "object poses, twin end-effector pose at the pose's measurement time",
        "grasp_slip 0.03 m / 0.3 rad over motion_window 0.05 s"),
    "object_dropped": PredicateDoc(
        "a grasped object stopped being grasped this frame (falling edge of object_grasped)",
        "object_grasped", "-"),
    "object_released": PredicateDoc(
        "the gripper is open while an object still counts as grasped: an intended release, up to and "
        "including its drop frame", "finger joints, object_grasped", "gripper_closed_below"),
    "object_left_gripper": PredicateDoc(
        "the focus object (most recently grasped) is beyond gripper clearance of every gripper body; "
        "false before any grasp", "twin gripper-object gaps", "gripper_clearance 0.01 m"),
    "object_stable": PredicateDoc(
        "every manipulated object not grasped is at rest (sticky-true latch, reset by a grasp or by a "
        "displacement beyond the slip thresholds)", "object poses over the motion window",
        "linear 0.05 m/s, angular 0.25 rad/s; stability_persistence 0.25 s (5 frames)"),
    "object_settled": PredicateDoc(
        "the focus object is at rest and not grasped", "object_stable per object, object_grasped", "-"),
    "settle_timeout": PredicateDoc(
        "the focus object was dropped at least the settle timeout ago and has not settled or been "
        "re-grasped since", "object_dropped, object_settled", "settle_timeout 5 s (100 frames)"),
}


class _ObjectGrasp:
    def __init__(self, counts: FrameCounts):
        self.grasp = SymmetricDebounce(counts.grasp_persistence)
        self.stable = StickyTrue(counts.stability_persistence)
        self.settle = Timer(counts.settle_timeout)
        self.anchor: Box | None = None  # the object's box when the stability latch closed


class GraspEstimator:
    """Grasp family; later estimators read `grasped`, `dropped`, `stable`, `moving` and `focus`."""

    def __init__(self, objects: tuple[str, ...], thresholds: Thresholds, counts: FrameCounts):
        self.objects = objects
        self.th = thresholds
        self.state = {o: _ObjectGrasp(counts) for o in objects}
        self.focus: str | None = None
        self.grasped: dict[str, bool] = {o: False for o in objects}  # debounced, held when unknown
        self.raw: dict[str, Tri] = {o: False for o in objects}  # this frame's raw grasp
        self.dropped: frozenset[str] = frozenset()
        self.stable: dict[str, Tri] = {o: False for o in objects}
        self.moving: dict[str, Tri] = {o: None for o in objects}

    def step(self, inp: FrameInputs) -> dict[str, Tri]:
        th, geo = self.th, inp.geometry
        clearance = th.distances_m.gripper_clearance
        raw_grasp, grasp, dropped, released, sync, left = {}, {}, {}, {}, {}, {}
        settled, timeout = {}, {}
        just_dropped = set()
        for o in self.objects:
            st = self.state[o]
            known = o not in geo.unknown
            if known:
                touching = sum(geo.gap(f, o) <= clearance for f in FINGER_PARTS)
                raw = touching >= th.counts.bilateral_contact_bodies and inp.gripper_closed
            else:
                raw = None
            before = st.grasp.value
            grasp[o] = st.grasp.step(raw)
            raw_grasp[o] = self.raw[o] = raw
            after = st.grasp.value
            if after and not before:
                self.focus = o
                st.stable.reset()
                st.settle.stop()
            if before and not after:
                just_dropped.add(o)
                st.settle.start(inp.frame)
            dropped[o] = (before and not after) or (None if grasp[o] is None and before else False)
            released[o] = (not inp.gripper_closed) and (before or after)
            slip = inp.object_slip.get(o)
            sync[o] = None if slip is None else (slip[0] < th.motion.grasp_slip_m and slip[1] < th.motion.grasp_slip_rad)
            left[o] = geo.gripper_gap(o) > clearance if known else None
            self.stable[o], self.moving[o] = self._stability(o, inp, held=after)
            settled[o] = None if self.stable[o] is None else (self.stable[o] and not after)
            if settled[o]:
                st.settle.stop()
            timeout[o] = st.settle.expired(inp.frame)
            self.grasped[o] = after
        self.dropped = frozenset(just_dropped)
        f = self.focus
        return {
            "object_grasped_raw": any3(raw_grasp.values()),
            "object_grasped": any3(grasp.values()),
            "object_sync": all3(sync[o] for o in self.objects if self.grasped[o]),
            "object_dropped": any3(dropped.values()),
            "object_released": any3(released.values()),
            "object_left_gripper": left[f] if f else False,
            "object_stable": all3(self.stable[o] for o in self.objects if not self.grasped[o]),
            "object_settled": settled[f] if f else False,
            "settle_timeout": timeout[f] if f else False,
        }

    def _stability(self, o: str, inp: FrameInputs, held: bool) -> tuple[Tri, Tri]:
        """(stable latch, moving now) for one object."""
        st, motion = self.state[o], self.th.motion
        speed = inp.object_speed.get(o)
        moving = None if speed is None else not (speed[0] < motion.linear_stability_mps
                                                 and speed[1] < motion.angular_stability_radps)
        if held:
            st.stable.reset()
            return False, moving
        box = inp.geometry.object_boxes.get(o)
        if st.stable.value and box is not None and st.anchor is not None and box.memo(
                ("displaced", motion.grasp_slip_m, motion.grasp_slip_rad), st.anchor,
                lambda: _displaced(box, st.anchor, motion)):
            st.stable.reset()
        was = st.stable.value
        value = st.stable.step(None if moving is None else not moving)
        if value and not was and box is not None:
            st.anchor = box
        return value, moving


def _displaced(box: Box, anchor: Box, motion: Motion) -> bool:
    """Moved beyond the slip thresholds since the stability latch closed at `anchor`."""
    drift = math.dist(box.center, anchor.center)
    return drift > motion.grasp_slip_m or rotation_angle(anchor.rotation, box.rotation) > motion.grasp_slip_rad
