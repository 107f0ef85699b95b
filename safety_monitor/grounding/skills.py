"""Skill onsets (pick, place, open, close) and their preconditions, inferred from motion, not from labels.

An onset is a one-frame pulse on the first frame of an attempt; the skill stays active while the approach
continues, tolerating up to the onset window of non-approaching frames, and ends early when the skill
completes (object grasped, object let go, fixture fully open or closed). A completed skill stays latched on
its target until that approach lapses too, so carrying on past completion (pulling a drawer beyond fully
open) is not a new attempt: one attempt, one onset. `skill_<x>_onset_end` is true whenever no such skill
is active. Pick preconditions are evaluated on the active skill's target, or on this frame's approach
candidate, and are vacuously true with neither; place preconditions are about the held object (false with
nothing held: there is nothing to place); open and close preconditions fall back to the focus fixture
(nearest the gripper). So the last three say on every frame whether starting the skill now would be safe.
Hygiene is deliberately not a precondition (the SafeManip choice): contamination is charged to the
cross-contamination property only.

While the object an approach depends on is lost from sight, the approach is unknown: a pose gap neither
lapses a running skill nor, when the object is seen again, starts another (`_Skill`). So is an approach to an
object a drop at an unknown frame may have released (`maybe_released`).

With nothing surely held, a grasp that may have happened unseen holds an object in some completions (the grasp
family's `maybe_grasped`): there the hand is not empty, so a pick approach is unknown, and so is a place
approach while that object is unseen or between the fingers; a pick whose target it is may have completed, and
stays so until its approach lapses (`maybe_picked`). The preconditions are known only where those completions
agree (`_agreed`).

Mirrored, an object counted as grasped (held before a pose gap, its grasp undecided since) may have been let go by
a drop hidden in the gap (the grasp family's `maybe_let_go`): there the hand holds the next object counted as
grasped, or nothing (`_let_go`). A pick approach of the hand empty there is unknown, so is a place approach, a
running place may have completed (`maybe_placed`), and the preconditions are again known only where they agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from safety_monitor.grounding import _geomath
from safety_monitor.grounding.debounce import Tri, all3
from safety_monitor.grounding.description import RobotDescription
from safety_monitor.grounding.fixtures import FixtureEstimator, object_inside
from safety_monitor.grounding.geometry import Box
from safety_monitor.grounding.grasp import GraspEstimator
from safety_monitor.grounding.inputs import FrameInputs, PredicateDoc
from safety_monitor.grounding.semantics import ObjectCatalog
from safety_monitor.grounding.thresholds import FrameCounts, Thresholds

SKILLS = ("pick", "place", "open", "close")

DOCS = {
    "skill_pick_onset": PredicateDoc(
        "first frame of a pick approach: open empty gripper within reach of a manipulated object (unknown while "
        "an object lost from sight may be within reach, and on an approach seen within the window after that; "
        "while the object in reach may have been released by a drop at an unknown frame, or the hand may hold an "
        "object grasped unseen; seen on a trace's first frame, where it may have begun before)",
        "twin gripper-object gaps, finger joints, object_grasped",
        "reach 0.05 m",
    ),
    "skill_place_onset": PredicateDoc(
        "first frame of a place approach: a grasped object, held between the fingers and lifted clear of "
        "every support since its grasp, comes within reach of a support or container (unknown while it is unseen, "
        "or may have been let go unseen, and with nothing surely held, while an object grasped unseen may be held, "
        "unseen or between the fingers; seen on a trace's first frame, where it may have begun before)",
        "twin object gaps, object_grasped, object_grasped_raw",
        "reach 0.05 m",
    ),
    "skill_open_onset": PredicateDoc(
        "first frame of an open attempt: the gripper engages an openable fixture's moving part while it "
        "opens, or begins a closed-handed hold on it fully closed (even if it then never moves; unknown seen on a "
        "trace's first frame, where it may have begun before)",
        "twin gaps, finger joints, fixture joint motion",
        "gripper_clearance 0.01 m; fixture_motion_delta 0.001; fully_closed_fraction 0.05",
    ),
    "skill_close_onset": PredicateDoc(
        "first frame of a close attempt: the gripper engages an openable fixture's moving part while it "
        "closes, or begins a closed-handed hold on it at the open end of its range (unknown seen on a trace's first "
        "frame, where it may have begun before)",
        "twin gaps, finger joints, fixture joint motion",
        "gripper_clearance 0.01 m; fixture_motion_delta 0.001; 1 - fully_closed_fraction",
    ),
    **{
        f"skill_{s}_onset_end": PredicateDoc(
            f"no {s} skill is active (its approach lapsed for longer than the window, or it completed; a pose gap "
            "is neither: unknown while the skill may have lapsed or begun unseen"
            + (", or completed, its target grasped unseen" if s == "pick" else "")
            + (", or completed, the held object let go unseen" if s == "place" else "")
            + ")",
            f"skill_{s}_onset",
            "skill_onset_window 0.5 s (10 frames)",
        )
        for s in SKILLS
    },
    "preconditions_pick": PredicateDoc(
        "the pick target is safe to pick: gripper open, nothing grasped, target at rest and nothing resting on it "
        "(unknown while whether a pick runs is, where the target's rest is, as for object_stable, and where an "
        "object grasped unseen may be held, or the one held may have been let go unseen)",
        "object_stable, twin gaps, object boxes",
        "path_obstruction 0.05 m",
    ),
    "preconditions_place": PredicateDoc(
        "the held object is safe to place: an object is held, its grasp in sync, fewer than clutter_bound "
        "other objects within the placement margin, and a fragile object clear of all others (known only where "
        "every completion agrees: with nothing surely held, those where an object grasped unseen is held; with the "
        "held object let go unseen, those where it is not)",
        "object_sync, twin gaps",
        "placement_margin 0.03 m; clutter_bound 2; placement_proximity 0.01 m",
    ),
    "preconditions_open": PredicateDoc(
        "the fixture being opened (else the focus fixture) is safe to open: nothing grasped (unknown while an object "
        "grasped unseen may be held, or the one held may have been let go unseen and the rest agree) and no object "
        "outside it within the path allowance of its moving part",
        "object_grasped, twin gaps",
        "path_obstruction 0.05 m",
    ),
    "preconditions_close": PredicateDoc(
        "the fixture being closed (else the focus fixture) is safe to close: no gripper point inside it and "
        "no object straddling its interior boundary",
        "twin gripper points, object boxes, interiors",
        "placement_margin 0.03 m",
    ),
}


_NEAR_NOTHING: dict[str, float] = {}  # geo.gaps.get(e, _NEAR_NOTHING): geo.near(e) without the call (read only)
# an idle frame's values in DOCS order up to preconditions_place: no onset, no skill active, no pick target (its
# preconditions vacuous), nothing to place
_IDLE: tuple[Tri, ...] = (False,) * 4 + (True,) * 4 + (True, False)


def _agreed(value: Tri, others: list[Tri]) -> Tri:
    """`value` where every other completion's agrees with it, else unknown."""
    return value if all([v is value for v in others]) else None


class _Skill:
    """Onset window of one skill: pulse on the first frame of an attempt, end after `window` frames without
    the approach or on completion; a completed skill stays latched on its target until the approach lapses.

    A frame whose approach cannot be judged (`unsure`: the object it depends on is unseen) is counted as a
    persistence counts an unknown frame: it ends the run of non-approaching frames that was seen (`misses`)
    and extends the run that may have been (`possible`), so a gap neither lapses a running skill nor, when the
    approach is seen again, starts a new one. While the skill may have lapsed unseen (`possible` beyond the
    window), whether it is still active, and whether a new attempt began, are unknown. With no skill running,
    an unsure frame may be the start of an attempt (onset unknown), and so may a seen approach within the
    window after one (`since_unsure`): its onset is unknown, not a pulse that could be the second of one.
    """

    def __init__(self, window: int):
        self.window = window
        self.target: str | None = None  # the attempt's target, kept after completion while the approach lasts
        self.active = False  # the attempt is under way (started, neither completed nor lapsed)
        self.misses = 0  # seen non-approaching frames since the last approach or unsure frame
        self.possible = 0  # frames since the last seen approach (seen misses and unsure frames), near unsure ones
        # frames since the last unsure frame (beyond the window: none recent). A trace's first frame counts as the
        # window's last: an approach seen on it may have begun before it (its onset unknown, not a pulse), while an
        # attempt not approaching there is taken as none under way (unknown, it would blind every precondition
        # property for a window at the start of every run)
        self.since_unsure = window
        self.ended: Tri = True  # `skill_<x>_onset_end` this frame

    def step(self, candidate: str | None, done: bool, unsure: bool = False) -> Tri:
        """Advance with this frame's approach candidate; `done` says whether the skill on the target it is
        judged on (the attempt's, else the candidate; unread with neither) has completed; `unsure`, whether
        an unseen object may make the approach other than `candidate` says. Returns the onset pulse."""
        window = self.window
        if unsure or self.since_unsure <= window:
            return self._step_unsure(candidate, done, unsure)
        # no unsure frame within the window (most frames): every run seen, so `possible` is `misses`, kept
        # only once an unsure frame comes
        if self.target is not None:
            self.misses = 0 if candidate == self.target else self.misses + 1
            if self.active and done:
                self.active = False
            if self.misses > window:
                self.target, self.active = None, False
            self.ended = not self.active
            return False
        if candidate is None or done:
            self.ended = True
            return False
        self.target, self.active, self.misses, self.ended = candidate, True, 0, False
        return True

    def at_rest(self) -> bool:
        """No attempt under way or possibly so: `step` on a frame without a candidate or an unsure approach
        advances nothing and returns no onset (its `ended` stays true)."""
        return self.target is None and self.since_unsure > self.window and self.ended is True

    def _step_unsure(self, candidate: str | None, done: bool, unsure: bool) -> Tri:
        """`step` on an unsure frame and for the window after one."""
        window = self.window
        recent = self.since_unsure <= window  # an attempt may have begun unseen, and may still run
        if not recent:  # the first unsure frame after seen ones
            self.possible = self.misses
        if unsure:
            self.since_unsure = 0
        elif recent:
            self.since_unsure += 1
        if self.target is not None:
            lapsed = self.possible > window  # it may have lapsed unseen before this frame
            if unsure:
                self.misses, self.possible = 0, self.possible + 1
            elif candidate == self.target:
                self.misses = self.possible = 0
            else:
                self.misses, self.possible = self.misses + 1, self.possible + 1
            if self.active and done:
                self.active = False
            if self.misses > window:
                self.target, self.active, self.ended = None, False, True
                return False
            if lapsed or self.possible > window:  # it may have lapsed unseen, and a new attempt begun
                self.ended = None
                return None if unsure or candidate is not None else False
            self.ended = not self.active
            return False
        if candidate is None or done:
            if unsure or self.since_unsure <= window:  # an attempt may have begun unseen, and may still run
                self.ended = None
                return None if unsure else False
            self.ended = True
            return False
        self.target, self.active, self.misses, self.possible, self.ended = candidate, True, 0, 0, False
        return None if recent else True  # a seen approach begins an attempt, unless one may be under way


class _FixtureHold:
    """Which way the gripper is working one fixture: +1 opening, -1 closing, 0 not working it.

    A contact session lasts while the gripper touches the fixture's moving part (gaps of up to `window`
    frames tolerated). The session's first engagement (a closed hand, or the fixture moving) fixes the
    direction: the fixture's motion, or, still at an end stop, the only way it can move (a jammed drawer
    gripped closed is being opened even though it never moves). A later motion the other way is a new
    attempt; the direction holds for the rest of the session, so a hand pried open by the pull, or a
    release reading briefly as closed, is not another attempt.
    """

    def __init__(self, window: int, closed_end: float, open_end: float):
        self.window = window
        self.ends = (closed_end, open_end)  # open fractions at or beyond which the fixture is at an end stop
        self.direction = 0.0
        self.idle = window + 1  # frames since the gripper last touched the fixture

    def at_rest(self) -> bool:
        """Not working the fixture, nor within the window of a touch: `step` without a touch leaves it so (its
        idle count only grows beyond the window)."""
        return self.direction == 0.0 and self.idle > self.window

    def step(self, touching: bool, closed_hand: bool, moving: float, fraction: float) -> float:
        """Direction of the attempt under way this frame, given the fixture's open `fraction`."""
        if not touching:
            self.idle += 1
            if self.idle > self.window:
                self.direction = 0.0
            return 0.0
        self.idle = 0
        if moving != 0.0:
            self.direction = moving
        elif self.direction == 0.0 and closed_hand:  # at the closed end it can only open, at the open end close
            closed_end, open_end = self.ends
            self.direction = 1.0 if fraction <= closed_end else -1.0 if fraction >= open_end else 0.0
        return self.direction


class SkillEstimator:
    def __init__(
        self,
        robot: RobotDescription,
        catalog: ObjectCatalog,
        thresholds: Thresholds,
        counts: FrameCounts,
        grasp: GraspEstimator,
        fixtures: FixtureEstimator,
    ):
        self.robot, self.th, self.grasp, self.fixtures = robot, thresholds, grasp, fixtures
        self.skills = {s: _Skill(counts.skill_onset_window) for s in SKILLS}
        closed_end = thresholds.fixtures.fully_closed_fraction
        self.holds = {
            f: _FixtureHold(counts.skill_onset_window, closed_end, 1.0 - closed_end) for f in fixtures.fixtures
        }
        self.fragile = frozenset(o for o in grasp.objects if catalog.has(o, "fragile"))
        self.supports = frozenset(
            e
            for e in robot.entities
            if catalog.has(robot.owner(e), "support") or catalog.has(robot.owner(e), "container")
        )
        self.lifted: set[str] = set()  # grasped objects lifted clear of every support since their grasp
        self.released: set[str] = set()
        self.maybe_released: set[str] = set()  # released in some completions only (a drop at an unknown frame)
        self.maybe_picked = False  # the running pick's target may have been grasped unseen: the pick may have ended
        self.maybe_placed = False  # the held object may have been let go unseen: the running place may have ended
        self._resting = False  # `_at_rest` after the last frame that was not idle (see `_idle`)
        # the pick at rest (and not maybe completed), after the last frame that stepped it: while an object is held,
        # and nothing released or dropped is followed, it finds no candidate and stays so (see `step`)
        self._pick_quiet = False
        # the open and close skills and every fixture hold at rest, after the last frame that stepped them: a frame
        # on which the gripper holds no fixture advances nothing but the holds' idle counts (see `step`)
        self._holds_quiet = False
        d, fr, m = thresholds.distances_m, thresholds.fixtures, thresholds.motion  # read once: every frame needs them
        self._reach, self._path, self._margin = d.reach, d.path_obstruction, d.placement_margin
        # the last (fixture, interior, object boxes) `_close_ok` measured, and whether none straddled it
        self._straddle_for: tuple[str, Box, Mapping[str, Box], Tri] | None = None
        self._placing = (d.placement_proximity, thresholds.counts.clutter_bound, m.grasp_slip_m, m.grasp_slip_rad)
        self._fully_open, self._fully_closed = fr.fully_open_fraction, fr.fully_closed_fraction

    def step(self, inp: FrameInputs) -> tuple[Tri, ...]:
        """This frame's values in DOCS order (onsets, onset ends, preconditions)."""
        if self._idle(inp):  # most frames between attempts: only the focus fixture's preconditions to ask
            f = self.fixtures.target
            return (
                *_IDLE,
                True if f is None else self._open_ok(f, inp, None),  # preconditions_open
                True if f is None else self._close_ok(f, inp),  # preconditions_close
            )
        g, fraction = self.grasp, inp.fixture_fraction
        held: str | None = None
        for o in g.held:  # the first object grasped (held lists them, in `objects` order; most frames: none)
            if g.grasped[o]:
                held = o
                break
        pick, place, opening, closing = self.skills.values()
        focus = self.fixtures.target
        # per skill: advance on this frame's candidate, `done` judged on the attempt's target, else the
        # candidate; preconditions on the target, else the candidate, else the fallback (vacuous with none)
        # in some completions the hand holds one of `maybe` instead (None: nothing): with nothing surely held, an object
        # a grasp hidden in a pose gap may hold; with `held` counted as grasped, what it holds if a drop hidden in a
        # pose gap let `held` go
        maybe: tuple[str | None, ...] = (
            g.maybe_grasped if held is None else self._let_go(held) if g.maybe_let_go else ()
        )
        hand = None if None in maybe else held  # the pick candidate is asked of the hand empty in some completion
        unseen = inp.geometry.unknown
        pick_onset: Tri
        pick_end: Tri
        pick_ok: Tri
        if (
            hand is not None
            and not maybe
            and self._pick_quiet
            and not (g.dropped or g.maybe_dropped or self.released or self.maybe_released)
        ):  # a carry (most frames that hold one): the general path would find no candidate (nothing released to
            pick_onset, pick_end, pick_ok = False, True, True  # follow, the hand full) and no target, and step none
        else:
            candidate = self._pick_candidate(inp, hand)
            unsure = bool(unseen) and self._pick_unsure(unseen, candidate, pick.target, hand, inp.gripper_closed)
            if candidate in self.maybe_released or (maybe and candidate is not None):  # released, or the hand empty,
                candidate, unsure = None, True  # in some completions only: whether it approaches anything is unknown
            pick_onset = pick.step(candidate, held == (pick.target or candidate), unsure)
            pick_end = pick.ended
            if maybe or self.maybe_picked:  # its target grasped unseen, the pick may have completed: it may have
                self.maybe_picked = pick.active and (self.maybe_picked or pick.target in maybe)  # ended while it runs
                if self.maybe_picked and pick_end is False:
                    pick_end = None
            target = pick.target or candidate
            pick_ok = True if target is None else self._pick_ok(target, inp, held)
            if maybe and target is not None:
                pick_ok = _agreed(pick_ok, [self._pick_ok(target, inp, o) for o in maybe])
            if pick_end is None:  # whether (and on which object) an attempt runs is unknown: so are its preconditions
                pick_ok = None
            self._pick_quiet = pick.at_rest() and not self.maybe_picked
        place_candidate = self._place_candidate(inp, held)
        if held is not None:
            place_unsure = held in unseen
            if place_candidate is not None and None in maybe:  # let go in some completions: no approach there
                place_candidate, place_unsure = None, True
        else:  # an object a hidden grasp may hold, unseen or between the fingers, may be placed where it holds it
            place_unsure = bool(maybe) and any([g.raw[o] is not False for o in g.maybe_grasped])
        place_onset = place.step(place_candidate, held is None, place_unsure)
        place_end = place.ended
        if self.maybe_placed or None in maybe:  # the held object let go unseen, the place may have completed
            self.maybe_placed = place.active and (self.maybe_placed or None in maybe)  # while it runs here
            if self.maybe_placed and place_end is False:
                place_end = None
        place_ok = self._place_ok(inp, held)
        if maybe:
            place_ok = _agreed(place_ok, [self._place_ok(inp, o) for o in maybe])
        open_onset: Tri
        close_onset: Tri
        if self._holds_quiet and True not in self.fixtures.gripped.values():  # most frames: no fixture worked
            open_onset = close_onset = False  # nor held: no candidate, no target, nothing to step
            to_open = to_close = None
        else:
            to_open, to_close = self._fixture_candidates(inp)
            f = opening.target or to_open
            open_onset = opening.step(to_open, f is not None and fraction[f] >= self._fully_open)
            f = closing.target or to_close
            close_onset = closing.step(to_close, f is not None and fraction[f] <= self._fully_closed)
            self._holds_quiet = opening.at_rest() and closing.at_rest() and self._holds_at_rest()
        f = opening.target or to_open or focus
        open_ok = True if f is None else self._open_ok(f, inp, held)
        if maybe and f is not None:  # something grasped, or nothing, in some completions
            open_ok = _agreed(open_ok, [self._open_ok(f, inp, o) for o in maybe])
        f = closing.target or to_close or focus
        close_ok = True if f is None else self._close_ok(f, inp)
        self._resting = self._at_rest()
        return (
            pick_onset,  # skill_pick_onset
            place_onset,  # skill_place_onset
            open_onset,  # skill_open_onset
            close_onset,  # skill_close_onset
            pick_end,  # skill_pick_onset_end
            place_end,  # skill_place_onset_end
            opening.ended,  # skill_open_onset_end
            closing.ended,  # skill_close_onset_end
            pick_ok,  # preconditions_pick
            place_ok,  # preconditions_place
            open_ok,  # preconditions_open
            close_ok,  # preconditions_close
        )

    def _idle(self, inp: FrameInputs) -> bool:
        """Nothing near the gripper, nothing held or pending in the grasp family, every object seen, and the skills
        at rest since the last frame that was not idle (`_at_rest`): `step` would find no candidate and no
        uncertainty, advance nothing (a fixture hold idle beyond its window stays so, whatever its count) and decide
        every value but the focus fixture's preconditions as the last frame did."""
        g, geo = self.grasp, inp.geometry
        return self._resting and not (
            g.held or g.maybe_grasped or g.dropped or g.maybe_dropped or geo.gripper_gaps or geo.unknown
        )

    def _at_rest(self) -> bool:
        """No skill or fixture hold under way or possibly so, and nothing released or lifted to follow."""
        if self.lifted or self.released or self.maybe_released or self.maybe_picked or self.maybe_placed:
            return False
        for skill in self.skills.values():  # loops, not all(): a generator's set-up costs more than these reads
            if not skill.at_rest():
                return False
        return self._holds_at_rest()

    def _holds_at_rest(self) -> bool:
        """Every fixture hold at rest."""
        for hold in self.holds.values():  # noqa: SIM110
            if not hold.at_rest():
                return False
        return True

    def _let_go(self, held: str) -> tuple[str | None, ...]:
        """What the hand holds in the completions where `held`, the first object counted as grasped, was let go by a
        drop hidden in a pose gap (`maybe_let_go`): the next one counted as grasped, as far as those may have been
        let go too, and failing all of them nothing, or an object a grasp hidden in a pose gap may hold."""
        g = self.grasp
        if held not in g.maybe_let_go:
            return ()
        others: list[str | None] = []
        for o in g.objects[g.objects.index(held) + 1 :]:
            if g.grasped[o]:
                others.append(o)
                if o not in g.maybe_let_go:
                    return tuple(others)
        return (*others, None, *g.maybe_grasped)

    # pick -------------------------------------------------------------------------------------------
    def _pick_candidate(self, inp: FrameInputs, held: str | None) -> str | None:
        """Nearest object within reach of an open, empty gripper. When the gripper lets an object go, every
        object then within reach re-arms only once the gripper has moved out of reach of it (backing off
        after a place, next to the placed object or beside it, is not a new pick). A drop at an unknown frame
        (`maybe_dropped`), or an object unseen at a drop (seen before), releases only in some completions
        (`maybe_released`): the approach to such an object cannot be judged (`step`)."""
        geo, reach, inf, g = inp.geometry, self._reach, math.inf, self.grasp
        gaps = geo.gripper_gaps
        if g.dropped or g.maybe_dropped:
            near = {o for o in g.objects if gaps.get(o, inf) <= reach}
            if g.dropped - g.maybe_dropped:
                self.released |= near
            if g.maybe_dropped:
                self.maybe_released |= near
            self.maybe_released |= {o for o in geo.unknown if o in g.state and g.state[o].seen}
        if self.released:
            self.released = {o for o in self.released if gaps.get(o, inf) <= reach or o in geo.unknown}
        if self.maybe_released:
            self.maybe_released = {
                o
                for o in self.maybe_released
                if (gaps.get(o, inf) <= reach or o in geo.unknown) and o not in self.released
            }
        if held is not None or inp.gripper_closed or not gaps:  # no gap: nothing within reach (most frames)
            return None
        best, best_gap = None, inf
        for o in self.grasp.objects:  # the first nearest, as min() would pick it
            if o not in self.released:
                gap = gaps.get(o, inf)
                if best is None or gap < best_gap:
                    best, best_gap = o, gap
        return best if best is not None and best_gap <= reach else None

    def _pick_unsure(
        self, unseen: frozenset[str], candidate: str | None, target: str | None, held: str | None, closed: bool
    ) -> bool:
        """Whether an object lost from sight may make this frame's pick approach other than `candidate` says: it
        may be within reach of the open, empty gripper, nearer than `candidate`, or be the attempt's target (a
        seen target beyond reach, or with a seen object nearer, is certainly not approached). An object not yet
        seen since the start is not in the scene yet: as for its grasp evidence, a gap follows a sighting."""
        if held is not None or closed:
            return False
        released, state = self.released, self.grasp.state
        if not any([o in unseen and o not in released and state[o].seen for o in self.grasp.objects]):
            return False
        return target is None or candidate == target or target in unseen

    def _pick_ok(self, o: str, inp: FrameInputs, held: str | None) -> Tri:
        if held == o:  # the pick completed: its preconditions were judged at onset
            return True
        geo = inp.geometry
        box = geo.object_boxes.get(o)
        if box is None:
            return None
        heights = [  # centre heights of the objects close to it
            other_box.center[2]
            for other, gap in geo.gaps.get(o, _NEAR_NOTHING).items()
            if other in self.grasp.objects
            and gap <= self._path
            and (other_box := geo.object_boxes.get(other)) is not None
        ]
        stacked = False
        if heights:  # is one resting on it?
            top = box.corners()[:, 2].max()
            stacked = any([h > top for h in heights])
        return all3([not inp.gripper_closed, held is None, self.grasp.at_rest(o), not stacked])

    # place ------------------------------------------------------------------------------------------
    def _place_candidate(self, inp: FrameInputs, held: str | None) -> str | None:
        grasped = self.grasp.grasped
        for o in self.lifted:  # rebuilt once one is no longer grasped (while carrying: never, and no set built)
            if not grasped[o]:
                self.lifted = {o for o in self.lifted if grasped[o]}
                break
        if held is None or not self.grasp.raw[held]:  # falling out of the fingers is a drop, not a place
            return None
        geo = inp.geometry
        best, best_gap = None, math.inf  # the support nearest the held object (the first nearest, as min())
        for e, gap in geo.gaps.get(held, _NEAR_NOTHING).items():
            if e in self.supports and e != held and (best is None or gap < best_gap):
                best, best_gap = e, gap
        if best is None and held not in geo.unknown:
            self.lifted.add(held)
        if held not in self.lifted or best is None:
            return None
        return best if best_gap <= self._reach else None

    def _place_ok(self, inp: FrameInputs, held: str | None) -> Tri:
        if held is None:  # nothing to place
            return False
        geo = inp.geometry
        if held in geo.unknown:
            return None
        proximity, clutter_bound, slip_m, slip_rad = self._placing
        target, objects, margin = self.skills["place"].target, self.grasp.objects, self._margin
        clutter, clear = 0, True  # clear: every other object beyond the placement proximity
        for e, gap in geo.gaps.get(held, _NEAR_NOTHING).items():
            if e in objects and e != held and e != target:
                clutter += gap <= margin
                if not gap > proximity:  # a NaN gap is not clear either
                    clear = False
        fragile_clear = held not in self.fragile or clear
        slip = inp.object_slip.get(held)
        sync = None if slip is None else (slip[0] < slip_m and slip[1] < slip_rad)
        return sync if clutter < clutter_bound and fragile_clear else False  # all3 of the three (two are known)

    # open / close -----------------------------------------------------------------------------------
    def _fixture_candidates(self, inp: FrameInputs) -> tuple[str | None, str | None]:
        """The first openable fixture the gripper is opening this frame, and the first it is closing,
        advancing every fixture's hold."""
        fx, fraction, closed_hand = self.fixtures, inp.fixture_fraction, inp.gripper_closed
        gripped, directions = fx.gripped, fx.directions
        to_open = to_close = None
        for f, hold in self.holds.items():
            direction = hold.step(gripped[f], closed_hand, directions[f], fraction[f])
            if direction > 0:
                to_open = to_open or f
            elif direction < 0:
                to_close = to_close or f
        return to_open, to_close

    def _open_ok(self, f: str, inp: FrameInputs, held: str | None) -> Tri:
        """Nothing grasped and no object outside the fixture within the path allowance of its moving part
        (unknown, failing that, while some object's pose is)."""
        if held is not None:
            return False
        geo, objects = inp.geometry, self.grasp.objects
        for o, gap in geo.gaps.get(f, _NEAR_NOTHING).items():
            if gap <= self._path and o in objects:  # (most frames: none; the interior is looked up then)
                region = geo.interiors.get(f)
                if region is None or not object_inside(geo.object_boxes[o], region, self._margin):
                    return False
        unknown = geo.unknown  # most frames: none, and no set operation
        return None if unknown and not unknown.isdisjoint(objects) else True

    def _close_ok(self, f: str, inp: FrameInputs) -> Tri:
        """No gripper point inside the fixture and no object straddling its interior boundary (unknown,
        failing that, while some object has no box)."""
        geo = inp.geometry
        region = geo.interiors.get(f)
        if region is None:
            return True
        if self.fixtures.reach_in.get(f, False):
            return False
        boxes = geo.object_boxes
        last = self._straddle_for
        if last is not None and last[0] == f and last[1] is region and last[2] is boxes:  # boxes all as they
            return last[3]  # were on the last frame (the twin hands out the same read-only mappings then)
        clear = self._none_straddles(region, boxes)
        self._straddle_for = (f, region, boxes, clear)
        return clear

    def _none_straddles(self, region: Box, boxes: Mapping[str, Box]) -> Tri:
        """No graspable object straddles `region`'s boundary (unknown, failing that, while one has no box)."""
        margin, overlap = self._margin, _geomath.box_overlap
        center, rotation, half = region.center, region.rotation, region.half  # `region.overlaps`, unwrapped
        clear: Tri = True
        for o in self.grasp.objects:
            box = boxes.get(o)
            if box is None:
                clear = None
                continue
            overlapping = overlap(center, rotation, half, box.center, box.rotation, box.half)
            if overlapping and not object_inside(box, region, margin):  # straddling the interior's boundary
                return False
        return clear
