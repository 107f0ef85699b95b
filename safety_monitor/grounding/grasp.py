"""Grasp, release and settling of manipulated objects (every object with the `graspable` property).

Per object: a raw bilateral grasp debounced symmetrically; synchrony with the end-effector; the drop
(falling edge of the debounced grasp); a release window (gripper open while still counted as grasped);
a sticky-true stability latch; a settle timer started by the drop, stopped when the object settles or comes into
the other arm of a bimanual robot (a handover: that arm's monitor watches the object from then on). Aggregates: existence over objects for
grasp and drop, all grasped objects for sync, and the *focus object* (the one most recently grasped) for
the post-drop predicates, which are about the object that was just let go.

A gap in an object's pose while the gripper is closed restarts its grasp evidence (for one never seen yet, once
the gripper has been closed for the grasp persistence: it may have been grasped unseen): when the pose returns, the
grasp is unknown until the debounce has seen its full run again, and a fall it then decides is a drop at an
unknown frame (unknown, not a drop here: whether the gripper was open when it happened was not seen), whose
settle timer runs from the earliest frame it may have happened (and may run out before the pose returns). One
not grasped before the gap may have been grasped and dropped in it: its drop is unknown from the persistence
after the earliest frame it may have been grasped until the debounce decides, and may have started its settle
timer on any of those frames, or never: never surely expired, it stops once the object is seen grasped, or seen
at rest for the stability persistence after the last of them (`calm`: its latch says nothing of a grasp it may
have had). That grasp may also have made it the focus: the post-drop predicates are known only where every
object that may be the focus agrees (`other_foci`), until a grasp seen settles which one was last. An open
gripper holds nothing, seen or not: its raw grasp is false and the evidence runs on. The frames before the first
one (a monitor started late, a grounder reset after its input restarted) were not seen either: an object between
the closed fingers there may have been grasped for long, so its evidence restarts as after such a gap (`_first`),
and, the closed hand empty, one within the distance a dropped object falls in the grasp persistence may just have
fallen out, its debounce holding it still: its evidence restarts too, and it may drop on any frame until the
debounce decides, but it is not made a possible focus (the post-drop predicates read as if nothing was held, where
they would otherwise stay unknown until the next grasp; a hand that holds an object is taken to have held no other).

`maybe_dropped` names the objects whose drop on this frame is unknown, for the families a drop starts something
in (a transfer, the pick skill's re-arming); `maybe_grasped` those not counted as grasped that a grasp hidden in a
pose gap may hold on this frame, for the skills, which ask what is held, and `maybe_let_go` its mirror: those
counted as grasped (held before a pose gap, the grasp undecided since) that a drop hidden in it may have let go by
this frame, from `earliest` on. Such a drop leaves `object_stable` unknown until decided (the object, not counted
while held, has its latch open on the frame it falls), and the object's rest (`at_rest`, so `object_settled`)
unknown once it may have rested for the persistence since (`rested`). Such a grasp also leaves `object_stable`
unknown where it would differ: in the completions with it the object counts as grasped while the grasp lasts, and
its latch, reset by the grasp, closes again only once the object is seen at rest for the stability persistence
after the last frame it may have been dropped on (`calm`; `at_rest` reads one object's latch so).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from safety_monitor.grounding.debounce import StickyTrue, SymmetricDebounce, Timer, Tri
from safety_monitor.grounding.description import FINGER_PARTS, OTHER_ARM
from safety_monitor.grounding.geometry import Box, FrameGeometry
from safety_monitor.grounding.inputs import FrameInputs, PredicateDoc
from safety_monitor.grounding.motion import point3, rotation_angle
from safety_monitor.grounding.thresholds import FrameCounts, Motion, Thresholds

DOCS = {
    "object_grasped_raw": PredicateDoc(
        "some manipulated object is held this frame: both finger bodies touch it and the gripper is closed",
        "twin finger-object gaps, gripper joints",
        "gripper_clearance 0.01 m; bilateral_contact_bodies 2; gripper closed_below or closed_above (robot.yaml)",
    ),
    "object_grasped": PredicateDoc(
        "some manipulated object is grasped: object_grasped_raw per object after a symmetric debounce (unknown while "
        "its evidence restarts: after a pose gap with the gripper closed, or on a trace's first frame with it closed, "
        "held there or, the hand empty, within the distance a dropped object falls in the persistence, until the "
        "debounce has seen its full run)",
        "object_grasped_raw, object boxes and end-effector position on a trace's first frame",
        "grasp_persistence 0.25 s (5 frames at 20 Hz), both edges",
    ),
    "object_sync": PredicateDoc(
        "every grasped object moves with the end-effector (true when nothing is grasped; unknown while an unseen "
        "object may be held: the gripper closed for the grasp persistence since it was last seen out of it, and "
        "until its grasp is decided again)",
        "object poses, twin end-effector pose at the pose's measurement time",
        "grasp_slip 0.03 m / 0.3 rad over motion_window 0.05 s",
    ),
    "object_dropped": PredicateDoc(
        "a grasped object stopped being grasped this frame (falling edge of object_grasped; unknown while a drop "
        "may have happened unseen, after a pose gap with the gripper closed, or may end a grasp from before a trace's "
        "first frame: an object near a closed, empty hand there, until its debounce decides)",
        "object_grasped",
        "-",
    ),
    "object_released": PredicateDoc(
        "the gripper is open while an object still counts as grasped: an intended release, up to and "
        "including its drop frame (unknown while a pose gap with the gripper closed leaves an object possibly "
        "but not surely grasped)",
        "gripper joints, object_grasped",
        "gripper closed_below or closed_above",
    ),
    "object_left_gripper": PredicateDoc(
        "the focus object (most recently grasped) is beyond gripper clearance of every gripper body; "
        "false before any grasp (unknown where an object that may have been grasped unseen since, and so be the "
        "focus, would disagree)",
        "twin gripper-object gaps",
        "gripper_clearance 0.01 m",
    ),
    "object_stable": PredicateDoc(
        "every manipulated object not grasped is at rest (sticky-true latch, reset by a grasp or by a "
        "displacement beyond the slip thresholds; unknown where an object may have been grasped unseen: while that "
        "grasp may last, and after it may have ended until the object is seen at rest for the persistence after "
        "its last possible drop; where an object grasped before a pose gap may have dropped unseen since, until "
        "its grasp is decided; and on a trace's first frames, until each object is seen at rest for the persistence "
        "or moving)",
        "object poses over the motion window",
        "linear 0.05 m/s, angular 0.25 rad/s; stability_persistence 0.25 s (5 frames)",
    ),
    "object_settled": PredicateDoc(
        "the focus object is at rest and not grasped (unknown while it may be held, or not yet seen at rest since a "
        "drop it may have had unseen; counted as grasped, where it may have dropped unseen and rested for the "
        "persistence since; where another object may be the focus, as object_left_gripper)",
        "object_stable per object, object_grasped",
        "-",
    ),
    "settle_timeout": PredicateDoc(
        "the focus object was dropped at least the settle timeout ago and has not settled, been re-grasped or come "
        "within gripper clearance of the other arm of a bimanual robot (handed over) since (unknown if it may have "
        "while unseen: for the stability or grasp persistence; from the timeout after the earliest frame of a drop "
        "it may have had unseen, until seen grasped or at rest for the stability persistence after its last possible "
        "frame; as object_left_gripper)",
        "object_dropped, object_settled, twin gaps to the other arm",
        "settle_timeout 5 s (100 frames); gripper_clearance 0.01 m",
    ),
}


_GRAVITY = 9.81  # m/s²
_NO_GAPS: dict[str, float] = {}  # a finger body near nothing (read only)
_NONE: frozenset[str] = frozenset()  # no object dropped (most frames)
_ABOUT_FOCUS = ("object_left_gripper", "object_settled", "settle_timeout")
_NO_FOCUS: tuple[Tri, Tri, Tri] = (False, False, False)  # _ABOUT_FOCUS before any grasp
_NOT_RESTING: tuple[object, object, Tri] = (object(), object(), None)  # `resting` that no speed and box match
_NOT_RESTED: tuple[object, object] = _NOT_RESTING[:2]  # `_rested` that no speeds and boxes mappings match


class _ObjectGrasp:
    def __init__(self, counts: FrameCounts):
        self.grasp = SymmetricDebounce(counts.grasp_persistence)
        self.stable = StickyTrue(counts.stability_persistence)
        # whether it was at rest before the trace began (a monitor started late, a grounder reset by an input
        # restart) is unseen: unknown until it is seen at rest for the persistence, or moving
        self.stable.restart()
        self.settle = Timer(counts.settle_timeout)
        self.seen = False  # its geometry was known on some frame (a gap can only follow that)
        self.grip_run = 0  # frames since its raw grasp was last false (or the gripper open): it may be held
        self.rest_run = 0  # frames since the drop that it may have rested (not seen moving) since last seen moving
        self.earliest = 0  # while its grasp evidence restarts: the earliest frame its grasp may have changed unseen
        self.maybe_held = False  # and a closed gripper may have grasped it unseen since (grip_run, unseen frames
        # among its run, reached the persistence): that grasp may last until the debounce decides
        self.rested = False  # and it may have rested for the stability persistence since that frame
        self.calm: int | None = None  # after a drop it may have had unseen (not grasped before): frames seen at
        # rest since the last frame that drop may have happened; its settle timer stops at the persistence only
        self.last_rise = -1  # the earliest frame its latest grasp rise may have been on (-1: it may never have risen)
        self.rise_by = -1  # and the latest (-1: it never rose): between them, it may be the focus
        self.anchor: Box | None = None  # the object's box when the stability latch closed
        self.displaced: tuple[Box, Box, bool] | None = None  # (box, anchor, moved beyond the slip thresholds)
        # (speed, box, moving) of its last `_stability` if its latch held and its box had not moved off the anchor:
        # while the latch holds (its anchor fixed), a frame with the same speed and box objects is judged the same
        self.resting: tuple[object, object, Tri] = _NOT_RESTING


class GraspEstimator:
    """Grasp family; later estimators read `grasped` (`is_grasped`), `dropped`, `stable` (`at_rest`), `moving` and
    `focus`, the twin's carrying `held`."""

    def __init__(self, objects: tuple[str, ...], thresholds: Thresholds, counts: FrameCounts):
        self.objects = objects
        self.th = thresholds
        self.state = {o: _ObjectGrasp(counts) for o in objects}
        self._states = tuple(self.state.items())
        self.focus: str | None = None
        self.other_foci: tuple[str, ...] = ()  # others a grasp that may have risen unseen may have made the focus
        self.grasped: dict[str, bool] = {o: False for o in objects}  # debounced, held when unknown
        self.raw: dict[str, Tri] = {o: False for o in objects}  # this frame's raw grasp
        self.dropped: frozenset[str] = frozenset()
        self.maybe_dropped: frozenset[str] = frozenset()  # those whose drop on this frame is unknown (possible
        # unseen, or decided now after a pose gap)
        self.maybe_grasped: tuple[str, ...] = ()  # not counted as grasped, but held on this frame in some completion
        # (a grasp that may have happened unseen, not decided yet), in `objects` order
        self.maybe_let_go: tuple[str, ...] = ()  # counted as grasped, but no longer held on this frame in some
        # completion (a drop that may have happened unseen, not decided yet), in `objects` order
        self.held: tuple[str, ...] = ()  # grasped or raw-grasped this frame, in `objects` order
        self.stable: dict[str, Tri] = {o: False for o in objects}
        self.moving: dict[str, Tri] = {o: None for o in objects}
        d, m = thresholds.distances_m, thresholds.motion  # read once: every frame needs them
        self._grasp_limits = (
            d.gripper_clearance,
            thresholds.counts.bilateral_contact_bodies,
            m.grasp_slip_m,
            m.grasp_slip_rad,
        )
        self._rest = (m.linear_stability_mps, m.angular_stability_radps)
        self._persistence = (counts.grasp_persistence, counts.stability_persistence)
        held_s = thresholds.durations_s.grasp_persistence  # an object the closed fingers let go falls this far before
        self._fall_m = d.gripper_clearance + 0.5 * _GRAVITY * held_s * held_s  # its debounce lets it go
        self._quiet = False  # every object was seen and quiet on the last frame (see `step`)
        # the (speeds, boxes) mappings of the last frame if it was quiet and `_rests` found every object resting as
        # before (answered from its `resting`, changing no state): a quiet frame bringing the same two mappings
        # (the motion and the twin hand them out again while no sample and no box is new) would again, object_stable
        # true, and asks nothing
        self._rested: tuple[object, object] = _NOT_RESTED
        # per object: it, its state, and the others' names and states (a steady carry's terms, see `step`)
        self._carries = {
            o: (o, st, frozenset(self.state) - {o}, tuple(q for q in self._states if q[0] != o))
            for o, st in self._states
        }
        self._carry: tuple[str, _ObjectGrasp, frozenset[str], tuple[tuple[str, _ObjectGrasp], ...]] | None = None
        # (the one carried steadily on the last frame)
        self._first = True  # no frame stepped yet: what was held before it was not seen

    def step(self, inp: FrameInputs) -> tuple[Tri, ...]:
        """This frame's values in DOCS order.

        An object is quiet on a frame when it is neither raw-grasped nor counted as grasped before or after it,
        its grasp evidence is not restarting and its settle timer is not running: of it, only its rest is asked.
        When every object was seen and quiet on the last frame, and is seen with the gripper open on this one, or
        closed with no finger body within clearance of anything, all stay so (no grasp evidence to count: each
        debounce is at rest) and the frame asks only their rest.

        An object is carried steadily on a frame when it is seen, raw-grasped and counted as grasped, its grasp
        evidence is not restarting, and every other object is seen and quiet. When one was so on the last frame
        (`_carry`), and on this one every object is seen, the gripper closed and both finger bodies touch it and
        no other, it stays so, and the general path would: step its debounce on a raw true equal to its value (its
        run already 0: unchanged), reset its already reset latch, leave its timers (a grasped object's settle
        timer is read, not stepped), evidence, drop lists and the focus alone, count its raw run on, and find the
        others quiet as before (their debounces and runs at rest); so the frame asks only its slip and speed and
        the others' rest, and returns what the general path would."""
        geo, frame, closed = inp.geometry, inp.frame, inp.gripper_closed
        clearance, bilateral, slip_m, slip_rad = self._grasp_limits
        gaps = geo.gaps
        touches: dict[str, int] = {}  # per entity, the finger bodies within clearance of it (open: nothing is held)
        if closed:
            for part in FINGER_PARTS:
                for e, gap in gaps.get(part, _NO_GAPS).items():
                    if gap <= clearance:
                        touches[e] = touches.get(e, 0) + 1
        if self._quiet and not touches and not geo.unknown:  # most frames
            speeds, boxes = inp.object_speed, geo.object_boxes
            rested = self._rested
            if rested[0] is speeds and rested[1] is boxes:  # (see `_rested`)
                rests: Tri = True
            else:
                self._rested = (speeds, boxes)  # (`_rests` forgets them if it asks an object's `_stability`)
                rests = self._rests(self._states, boxes, speeds, True)
            left, settled, timeout = self._about_focus(geo, frame) if self.focus or self.other_foci else _NO_FOCUS
            return (False, False, True, False, False, left, rests, settled, timeout)  # DOCS order, as below
        carry = self._carry
        if carry is not None and closed and not geo.unknown and touches.get(carry[0], 0) >= bilateral:
            o, st, other_names, others = carry
            for e, n in touches.items():  # (a handful of entities near the fingers, not every object)
                if n >= bilateral and e in other_names:
                    break
            else:  # a steady carry (see above)
                st.grip_run += 1
                speeds = inp.object_speed
                self.stable[o], self.moving[o] = self._stability(st, speeds.get(o), None, True)
                slip = inp.object_slip.get(o)
                synced = None if slip is None else (slip[0] < slip_m and slip[1] < slip_rad)
                sync: Tri = False if synced is False else None if synced is None else True  # as folded below
                rests = self._rests(others, geo.object_boxes, speeds, True)
                left, settled, timeout = self._about_focus(geo, frame)
                return (True, True, sync, False, False, left, rests, settled, timeout)  # DOCS order, as below
        grasp_n, stable_n = self._persistence
        boxes, speeds, slips, unknown = geo.object_boxes, inp.object_speed, inp.object_slip, geo.unknown
        taken = gaps.get(OTHER_ARM, _NO_GAPS)  # a bimanual robot's other arm, near the objects it holds
        raws, grasped, stables, movings, inf = self.raw, self.grasped, self.stable, self.moving, math.inf
        # Kleene OR (any3) and AND (all3) over the objects, folded in as they go by: no list or call per aggregate
        raw_any: Tri = False  # object_grasped_raw
        grasp_any: Tri = False  # object_grasped
        dropped_any: Tri = False  # object_dropped
        sync_all: Tri = True  # object_sync, over the grasped objects
        stable_all: Tri = True  # object_stable, over the others
        held, just_dropped, maybe_dropped, maybe_grasped, maybe_let_go = [], [], [], [], []
        quiet = []  # the quiet objects, whose rest is asked after the loop
        rose = False  # some object's latest grasp rise may have moved: which may be the focus is asked again
        engaged: Tri = False  # some object counts as grasped before or after this frame (open gripper: a release)
        # the first frame's closed hand holds no object: it may have let one go just before (see below)
        empty = self._first and closed and not any(touches.get(o, 0) >= bilateral for o in self.objects)
        for o, st in self._states:
            debounce = st.grasp
            unseen = o in unknown
            if unseen:
                if closed:  # a gap in its pose while it may be held: the grasp evidence restarts when it returns
                    raw = None
                    st.grip_run += 1  # (never seen: once a closed gripper could have held it for the persistence)
                    if not debounce.warming and (st.seen or st.grip_run >= grasp_n):
                        lead = debounce.restart()  # never seen: it may have been grasped on this frame
                        st.earliest, st.maybe_held = frame + lead if st.seen else frame, False
                        if debounce.value:
                            st.rest_run, st.rested = 0, False
                    if st.grip_run >= grasp_n:
                        st.maybe_held = True
                else:  # an open gripper holds nothing, seen or not (Kleene: False AND unknown)
                    raw = False
                    st.grip_run = 0
            else:
                st.seen = True
                raw = closed and touches.get(o, 0) >= bilateral
                if raw:
                    if self._first:  # held on the first frame (a monitor started late): it may have been grasped
                        debounce.restart()  # before, and counts as grasped, or not, once the debounce decides
                        st.earliest, st.grip_run = frame - grasp_n, grasp_n - 1
                    st.grip_run += 1
                elif empty and self._within_fall(geo, o):  # the closed hand, empty on the first frame, may have just
                    debounce.restart()  # let it go, its debounce holding it still: counted as grasped, or not, once
                    st.earliest, st.maybe_held = frame - grasp_n, True  # the debounce decides, it may drop on any
                    # frame until then (`maybe_dropped`); not made a possible focus (the trace-start assumption: the
                    # post-drop predicates would stay unknown until a grasp is seen)
                elif st.grip_run:
                    st.grip_run = 0
            before, resumed = debounce.value, debounce.warming
            debounced = debounce.step(raw)
            if raw is False and not (before or resumed) and st.settle.started_at is None:  # quiet: only its rest
                raws[o] = grasped[o] = False  # counts, as the general path below would find
                quiet.append((o, st))
                continue
            if raw:
                raw_any = True
            elif raw is None and not raw_any:
                raw_any = None
            if debounced:
                grasp_any = True
            elif debounced is None and not grasp_any:
                grasp_any = None
            raws[o] = raw
            after = debounce.value
            if after and not before:
                self.focus = o
                st.last_rise, st.rise_by, rose = st.earliest if resumed else frame, frame, True
                st.stable.reset()
                st.settle.stop()
                st.calm = None
            elif (
                resumed
                and debounced is None
                and st.grip_run >= grasp_n
                and (not before or frame >= st.earliest + grasp_n)
            ):  # it may have been grasped on this frame unseen (held before: again, after a drop): it may be the focus
                st.rise_by, rose = frame, True
            elif resumed and debounced and before:  # held before its gap and decided grasped: a drop it may have
                st.settle.stop()  # had unseen was grasped again
            if before and not after:
                just_dropped.append(o)
                st.calm = None
                if not resumed:
                    st.settle.start(frame)
                    st.rest_run = 0
                    dropped_any = True
                else:  # decided by restarted evidence: at an unknown frame, from st.earliest on
                    st.settle.start(frame, st.earliest)
                    if st.rested:
                        st.settle.doubt()
                    st.rest_run = min(st.rest_run, frame - st.earliest)  # its quiet frames since then
                    maybe_dropped.append(o)
                    if not dropped_any:
                        dropped_any = None
            elif (debounced is None and before) or (  # grasped before its gap: it may have fallen unseen since
                resumed and st.maybe_held and not (after or raw) and frame >= st.earliest + grasp_n
            ):  # not grasped before: a grasp it may have had unseen may have ended in a drop the persistence later,
                if not dropped_any:  # on any frame up to the deciding one
                    dropped_any = None
                if before and frame >= st.earliest:  # it may have dropped on this frame or since st.earliest
                    maybe_let_go.append(o)
                if not raw and frame >= st.earliest:  # it may have dropped on this very frame
                    maybe_dropped.append(o)
                    settle = st.settle
                    if settle.started_at is None:  # its settle timer may run from the first such frame, and it may
                        settle.start(frame)  # not run at all (still held, or never grasped): never surely expired
                    settle.doubt()
                    if not before:  # its stability latch says nothing of a grasp it may have had: it settles
                        st.calm = 0  # once seen at rest for the persistence after the last frame it may drop on
            if not resumed:
                if before or after:
                    engaged = True
            elif raw and st.grip_run >= grasp_n:  # raw grasps seen since the gap complete a run begun in it:
                st.maybe_held = True  # it may have been grasped on this frame (closed: not a release)
            elif before and frame <= st.earliest:  # restarted evidence: held before the gap, surely still on the
                engaged = True  # frame before this (its grasp may end on st.earliest at the earliest)
            elif (before or st.maybe_held) and engaged is False:  # it may count as grasped, or no longer
                engaged = None
            if unseen and not after and debounced is None:  # unseen, not counted as grasped: unknown once it
                if st.maybe_held and debounce.warming:  # may have been grasped (a closed gripper for the grasp
                    maybe_grasped.append(o)  # persistence since it was last seen out of it) until the debounce
                    if sync_all:  # decides (such a grasp lasts its open frames), never before
                        sync_all = None
            elif after or debounced is None:  # grasped objects only; while the grasp
                # evidence restarts after a pose gap, Kleene's (not grasped) or synced
                slip = slips.get(o)
                synced = None if slip is None else (slip[0] < slip_m and slip[1] < slip_rad)
                if debounced is None:
                    synced = True if synced else None
                    if st.maybe_held and not after:  # seen, not counted as grasped: a grasp begun unseen may last
                        maybe_grasped.append(o)
                if synced is False:
                    sync_all = False
                elif synced is None and sync_all is not False:
                    sync_all = None
            stable, movings[o] = self._stability(st, speeds.get(o), boxes.get(o), after)
            stables[o] = stable
            if not after:
                settle = st.settle
                if settle.started_at is not None:
                    if taken.get(o, inf) <= clearance:  # handed over: in the other arm's hand, its monitor watches
                        settle.stop()  # it (seen: in every completion)
                        st.calm = None
                    elif st.calm is not None:  # after a drop it may have had unseen (its timer doubted)
                        st.calm = st.calm + 1 if movings[o] is False else 0
                        if st.calm >= stable_n:
                            settle.stop()
                            st.calm = None
                        elif stable:  # where that drop ended a grasp, the grasp reset the latch: not closed again
                            stable = None
                    elif stable:  # settled
                        settle.stop()
                    else:  # it may have settled, or been grasped, unseen: only after the persistence that
                        # either takes (a shorter gap, between frames seen moving or released, hides neither)
                        st.rest_run = 0 if movings[o] else st.rest_run + 1
                        if st.rest_run >= stable_n or (debounced is None and st.grip_run >= grasp_n):
                            settle.doubt()
                if maybe_grasped and maybe_grasped[-1] is o:  # held in some completions: not counted there
                    stable = True if stable else None
                if stable is False:
                    stable_all = False
                elif stable is None and stable_all is not False:
                    stable_all = None
            elif debounced is None:  # its grasp evidence restarts: it may have fallen from st.earliest on, and
                st.rest_run = 0 if movings[o] else st.rest_run + 1  # rested since unseen (or seen at rest)
                if st.rest_run >= stable_n and frame - st.earliest >= stable_n - 1:
                    st.rested = True
                if stable_all and frame >= st.earliest:  # not counted while held; where it fell on this frame, its
                    stable_all = None  # latch, reset by the grasp, is open
            grasped[o] = after
            if after or raw:
                held.append(o)
        self.dropped = frozenset(just_dropped) if just_dropped else _NONE
        self.maybe_dropped = frozenset(maybe_dropped) if maybe_dropped else _NONE
        self.maybe_grasped = tuple(maybe_grasped) if maybe_grasped else ()
        self.maybe_let_go = tuple(maybe_let_go) if maybe_let_go else ()
        self.held = tuple(held)
        if quiet:
            stable_all = self._rests(quiet, boxes, speeds, stable_all)
        self._quiet = len(quiet) == len(self._states) and not unknown
        self._rested = _NOT_RESTED  # (this frame may have changed an object's state)
        self._carry = None
        if len(quiet) == len(self._states) - 1 and not unknown and len(held) == 1:
            carry = self._carries[held[0]]
            if raws[carry[0]] and grasped[carry[0]] and not carry[1].grasp.warming:
                self._carry = carry
        self._first = False
        if rose:
            self._find_foci()
        left, settled, timeout = self._about_focus(geo, frame)
        return (
            raw_any,  # object_grasped_raw
            grasp_any,  # object_grasped
            sync_all,  # object_sync
            dropped_any,  # object_dropped
            not closed and engaged,  # object_released
            left,  # object_left_gripper
            stable_all,  # object_stable
            settled,  # object_settled
            timeout,  # settle_timeout
        )

    def _within_fall(self, geo: FrameGeometry, o: str) -> bool:
        """Whether `o` (its box, to its farthest corner) is within `_fall_m` of the hand: a closed hand may have held
        it until it fell out, its debounce holding it still (a farther one was not held in the persistence before,
        unless the hand itself moved away faster than it falls)."""
        box = geo.object_boxes.get(o)
        if box is None:
            return True
        return math.dist(point3(box.center), point3(geo.ee_position)) - math.hypot(*box.half) <= self._fall_m

    def name_objects(self, values: Mapping[str, bool], out: dict[str, tuple[str, ...]]) -> None:
        """The objects each of this family's true predicates is about, from this frame's state (`Grounder`)."""
        if values["object_grasped_raw"]:
            out["object_grasped_raw"] = _those(self.held, self.raw)
        if values["object_grasped"]:
            out["object_grasped"] = _those(self.held, self.grasped)
        if values["object_dropped"]:
            out["object_dropped"] = tuple(sorted(self.dropped))
        if values["object_released"]:  # up to and including its drop frame
            out["object_released"] = tuple(o for o in self.objects if self.grasped[o] or o in self.dropped)
        if self.focus:
            for p in _ABOUT_FOCUS:
                if values[p]:
                    out[p] = self.foci()

    def foci(self) -> tuple[str, ...]:
        """The objects that may be the focus, the last one seen grasped first (empty before any grasp)."""
        return (self.focus, *self.other_foci) if self.focus else self.other_foci

    def _find_foci(self) -> None:
        """`other_foci`: the objects whose latest grasp rise may have come after every other's (for the focus, the
        last grasped, that is the one seen last), in some completion of the unseen frames."""
        floor = max(0, *[st.last_rise for _, st in self._states])
        self.other_foci = tuple(o for o, st in self._states if st.rise_by >= floor and o != self.focus)

    def is_grasped(self, o: str) -> Tri:
        """Whether `o` counts as grasped on this frame in every completion: unknown where a grasp (`maybe_grasped`) or
        a drop (`maybe_let_go`) hidden in a pose gap would make it differ from `grasped[o]`."""
        if self.grasped[o]:
            return None if o in self.maybe_let_go else True
        return None if o in self.maybe_grasped else False

    def at_rest(self, o: str) -> Tri:
        """`stable[o]` in every completion where `o` is not grasped now: unknown where a grasp and drop it may have had
        unseen reset its latch, and it has not been seen at rest for the persistence since (`calm`), and where it is
        counted as grasped but may have dropped unseen and rested for the persistence since (`rested`)."""
        stable, st = self.stable[o], self.state[o]
        if stable:
            return None if st.calm is not None else True
        return None if stable is False and st.rested and st.grasp.warming and self.grasped[o] else stable

    def _rests(
        self,
        objects: Sequence[tuple[str, _ObjectGrasp]],
        boxes: Mapping[str, Box],
        speeds: Mapping[str, tuple[float, float] | None],
        stable_all: Tri,
    ) -> Tri:
        """Each of `objects` (not grasped) asked whether it rests; object_stable folded on from `stable_all`."""
        stables, movings = self.stable, self.moving
        stable: Tri
        for o, st in objects:
            speed, box = speeds.get(o), boxes.get(o)
            resting = st.resting  # a resting object brings the same speed and box objects frame after frame
            if resting[0] is speed and resting[1] is box and st.stable.value:
                stables[o], movings[o] = True, resting[2]  # as `_stability` judged them (no call)
                continue  # (stable: object_stable stays as folded so far)
            stable, movings[o] = self._stability(st, speed, box, False)
            stables[o] = stable
            self._rested = _NOT_RESTED  # its state may have changed: the next frame asks again
            if stable is False:
                stable_all = False
            elif stable is None and stable_all is not False:
                stable_all = None
        return stable_all

    def _about_focus(self, geo: FrameGeometry, frame: int) -> tuple[Tri, Tri, Tri]:
        """(object_left_gripper, object_settled, settle_timeout) about the focus object, false before any grasp;
        where another object may be the focus, known only where they agree (Kleene)."""
        f = self.focus
        left, settled, timeout = self._about(f, geo, frame) if f else _NO_FOCUS
        for o in self.other_foci:
            values = self._about(o, geo, frame)
            left = left if left == values[0] else None
            settled = settled if settled == values[1] else None
            timeout = timeout if timeout == values[2] else None
        return left, settled, timeout

    def _about(self, o: str, geo: FrameGeometry, frame: int) -> tuple[Tri, Tri, Tri]:
        """(object_left_gripper, object_settled, settle_timeout) were `o` the focus."""
        st, settled = self.state[o], self.at_rest(o)  # (a grasped object is not stable: held, its latch is reset)
        left = geo.gripper_gap(o) > self._grasp_limits[0] if o not in geo.unknown else None
        if settled and st.grasp.warming and st.maybe_held:
            settled = None  # at rest, but it may be held
        return left, settled, st.settle.expired(frame)

    def _stability(
        self, st: _ObjectGrasp, speed: tuple[float, float] | None, box: Box | None, held: bool
    ) -> tuple[Tri, Tri]:
        """(stable latch, moving now) for one object, given its speed and box this frame."""
        latch = st.stable
        st.resting = _NOT_RESTING
        linear, angular = self._rest
        moving = None if speed is None else not (speed[0] < linear and speed[1] < angular)
        if held:
            latch.reset()
            return False, moving
        if latch.value:  # latched (it stays so until reset): released only by a move off its anchor
            anchor, known = st.anchor, st.displaced
            if box is None or anchor is None:
                st.resting = (speed, box, moving)
                return True, moving
            if known is not None and known[0] is box and known[1] is anchor:  # the same (immutable) boxes
                moved = known[2]  # as on an earlier frame, as they are while the object rests
            else:
                moved = self._moved_from_anchor(st, box, anchor)
            if not moved:
                st.resting = (speed, box, moving)
                return True, moving
            latch.reset()
        value = latch.step(None if moving is None else not moving)
        if value and box is not None:  # it latched this frame
            st.anchor = box
        return value, moving

    def _moved_from_anchor(self, st: _ObjectGrasp, box: Box, anchor: Box) -> bool:
        """Whether `box` moved beyond the slip thresholds from `anchor` (st's), kept on `st` for the frames
        that bring the same two boxes."""
        moved = _displaced(box, anchor, self.th.motion)
        st.displaced = (box, anchor, moved)
        return moved


def _those(objects: tuple[str, ...], flags: Mapping[str, Tri]) -> tuple[str, ...]:
    """The `objects` whose flag is true, in order, a new tuple (shared with no other predicate's, as a frame's
    records are pickled: a shared one would be written as a reference); one object (a carry, most frames that
    hold one) without a generator's set-up."""
    if len(objects) == 1:
        return (objects[0],) if flags[objects[0]] else ()
    return tuple(o for o in objects if flags[o])


def _displaced(box: Box, anchor: Box, motion: Motion) -> bool:
    """Moved beyond the slip thresholds since the stability latch closed at `anchor`."""
    drift = math.dist(point3(box.center), point3(anchor.center))  # (on arrays it builds and drops an IndexError)
    return drift > motion.grasp_slip_m or rotation_angle(anchor.rotation, box.rotation) > motion.grasp_slip_rad
