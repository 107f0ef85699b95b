"""The estimator families' short paths (frames whose state they skip provably unchanged) answer as their general
paths: each family is driven into the state a short path skips from and out of it again, beside a twin whose
short path is switched off before every frame, and both must give the same values and keep the same state."""

from __future__ import annotations

import math
import pickle
from types import SimpleNamespace

import numpy as np

from safety_monitor.frames import Pose
from safety_monitor.grounding import _geomath
from safety_monitor.grounding.geometry import Box, FrameGeometry
from safety_monitor.grounding.grasp import DOCS as GRASP_DOCS
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.grounding.inputs import FrameInputs
from safety_monitor.grounding.motion import quat_to_matrix

RATE = 20.0  # a grasp persistence of a few frames


def _box(x: float) -> Box:
    return Box(np.array([x, 0.0, 0.05]), np.eye(3), np.full(3, 0.05))


def _state(grasp) -> dict:
    """Everything the grasp family keeps, its objects' debounces, latches and timers included."""
    per_object = {o: {k: vars(v) if hasattr(v, "n") else v for k, v in vars(st).items()} for o, st in grasp._states}
    kept = {k: v for k, v in vars(grasp).items() if k not in ("state", "_states", "_carries", "_carry", "_rested")}
    return {**kept, "per_object": per_object}


def test_a_steady_carry_answers_as_the_general_path_through_slips_gaps_and_releases():
    fast, slow = load_default_grounder(RATE)._grasp, load_default_grounder(RATE)._grasp
    mug, other = fast.objects[0], fast.objects[-1]
    boxes = {o: _box(float(k)) for k, o in enumerate(fast.objects)}
    n = fast._persistence[0]

    def fingers(*objects: str, one: str | None = None) -> dict[str, dict[str, float]]:
        left = {o: 0.0 for o in objects}
        right = {o: 0.0 for o in objects if o != one}
        return {"finger_left": left, "finger_right": right}

    carry = fingers(mug)
    # (gripper closed, finger gaps, objects unseen, the mug's slip, the mug's speed), frame by frame
    script = [(False, {}, (), None, None)] * 3
    script += [(True, carry, (), (0.0, 0.0), (0.1, 0.0))] * (n + 4)  # grasp, then a steady carry
    script += [(True, carry, (), (0.05, 0.0), (0.1, 0.0))]  # a slip beyond the thresholds
    script += [(True, carry, (), None, None)] * 2  # its slip and speed unknown
    script += [(True, fingers(mug, one=mug), (), (0.0, 0.0), (0.0, 0.0))]  # one finger off it for a frame
    script += [(True, carry, (), (0.0, 0.0), (0.0, 0.0))] * 3
    script += [(True, fingers(mug, other), (), (0.0, 0.0), (0.0, 0.0))]  # both fingers on another object too
    script += [(True, carry, (), (0.0, 0.0), (0.0, 0.0))] * 3
    script += [(True, {}, (mug,), None, None)] * 2  # a gap in the mug's pose
    script += [(True, carry, (), (0.0, 0.0), (0.0, 0.0))] * (n + 3)
    script += [(True, carry, (other,), (0.0, 0.0), (0.0, 0.0))] * 2  # another object unseen while carried
    script += [(True, carry, (), (0.0, 0.0), (0.0, 0.0))] * 3
    script += [(False, carry, (), (0.0, 0.0), (0.0, 0.0))] * (n + 2)  # released, dropped
    script += [(True, carry, (), (0.0, 0.0), (0.0, 0.0))] * (n + 3)  # grasped again
    script += [(True, fingers(mug, one=mug), (), (0.0, 0.0), (0.0, 0.0))] * (n + 2)  # slipped out
    steady = 0
    for frame, (closed, gaps, unseen, slip, speed) in enumerate(script):
        seen = {o: b for o, b in boxes.items() if o not in unseen}
        geo = FrameGeometry(np.zeros(3), np.eye(3), np.zeros((3, 3)), gaps, seen, {}, frozenset(unseen))
        speeds = {o: (0.0, 0.0) for o in seen} | ({mug: speed} if mug in seen else {})
        slips = {mug: slip} if mug in seen else {}
        inp = FrameInputs(frame / RATE, frame, geo, closed, {}, {}, speeds, slips, None, frozenset())
        steady += fast._carry is not None and closed and not unseen and gaps is carry
        slow._carry = None  # the general path on every frame
        assert fast.step(inp) == slow.step(inp), frame
        assert _state(fast) == _state(slow), frame
    assert steady >= 2 * n  # the short path answered on most carried frames
    assert fast.focus == mug and not fast.grasped[mug]


def test_quiet_frames_repeating_the_speeds_and_boxes_skip_the_rest_only_while_every_object_rested_as_before():
    """A quiet frame bringing the last one's speeds and boxes mappings again asks no object's rest, only while the
    last frame found every object resting as before: driven through repeats, a grasp and a drop that leave an object
    resting at a new place (then the first mappings again), a box moved off its anchor in a new boxes mapping with
    the speeds repeated, a speed beyond the rest thresholds in a new speeds mapping with the boxes
    repeated, the latch closing again, a pose gap and a closed hand on the table, the grasp family answers as a twin
    that asks every object on every frame, and keeps the same state."""
    fast, slow = load_default_grounder(RATE)._grasp, load_default_grounder(RATE)._grasp
    o = fast.objects[1]
    n = fast._persistence[1]
    boxes = {p: _box(float(k)) for k, p in enumerate(fast.objects)}
    moved = dict(boxes, **{o: _box(5.0)})  # o displaced beyond the slip thresholds, the others' boxes kept
    unseen = {p: b for p, b in boxes.items() if p != o}
    still = {p: (0.0, 0.0) for p in fast.objects}
    moving = dict(still, **{o: (1.0, 0.0)})  # o beyond the rest thresholds
    gone = {p: s for p, s in still.items() if p != o}
    table = {"finger_left": {"table": 0.0}, "finger_right": {"table": 0.0}}
    held = {"finger_left": {o: 0.0}, "finger_right": {o: 0.0}}
    # (gripper closed, finger gaps, boxes, speeds), each the same mapping object for as long as it repeats
    script = [(False, {}, boxes, still)] * (n + 4)  # seen at rest for the persistence: latched, then repeats
    script += [(True, held, boxes, still)] * (n + 2)  # o grasped, the mappings repeated
    script += [(False, {}, moved, still)] * (n + 2)  # let go: o settles at its new place, every object quiet again
    script += [(False, {}, boxes, still)] * 3  # the first mappings again: o off its new anchor
    script += [(False, {}, moved, still)] * 3  # moved off its anchor, the speeds repeated: the latch opens
    script += [(False, {}, moved, moving)] * 2  # moving, the boxes repeated
    script += [(False, {}, moved, still)] * (n + 4)  # at rest again for the persistence: latched again
    script += [(False, {}, unseen, gone)] * 2  # a gap in its pose
    script += [(False, {}, moved, still)] * (n + 4)
    script += [(True, table, moved, still)] * 2  # a closed hand on the table, the mappings repeated
    script += [(False, {}, moved, still)] * 3
    skipped = 0
    for frame, (closed, gaps, seen, speeds) in enumerate(script):
        absent = frozenset(fast.objects) - seen.keys()
        geo = FrameGeometry(np.zeros(3), np.eye(3), np.zeros((3, 3)), gaps, seen, {}, absent)
        inp = FrameInputs(frame / RATE, frame, geo, closed, {}, {}, speeds, {}, None, frozenset())
        skipped += fast._quiet and fast._rested[0] is speeds and fast._rested[1] is seen and not gaps
        slow._rested = (None, None)  # every object asked on every frame
        assert fast.step(inp) == slow.step(inp), frame
        assert _state(fast) == _state(slow), frame
    assert skipped >= 2 * n  # the short path answered on most repeated frames


def test_a_carrys_named_objects_are_tuples_of_their_own():
    """A frame's records are compared pickled (check_identical, the differential fuzzers): each predicate's named
    objects are a tuple of its own, as the general path builds them; one shared between two predicates would be
    pickled as a reference to the first."""
    grasp = load_default_grounder(RATE)._grasp
    mug = grasp.objects[0]
    boxes = {o: _box(float(k)) for k, o in enumerate(grasp.objects)}
    gaps = {"finger_left": {mug: 0.0}, "finger_right": {mug: 0.0}}
    geo = FrameGeometry(np.zeros(3), np.eye(3), np.zeros((3, 3)), gaps, boxes, {})
    at_rest = {o: (0.0, 0.0) for o in grasp.objects}
    for frame in range(grasp._persistence[0] + 2):  # grasped, then carried steadily
        inp = FrameInputs(frame / RATE, frame, geo, True, {}, {}, at_rest, {mug: (0.0, 0.0)}, None, frozenset())
        values = dict(zip(GRASP_DOCS, grasp.step(inp), strict=True))
    assert grasp._carry is not None and values["object_grasped_raw"] and values["object_grasped"]
    named: dict[str, tuple[str, ...]] = {}
    grasp.name_objects(values, named)
    assert named["object_grasped_raw"] == named["object_grasped"] == (mug,)
    assert pickle.dumps(named) == pickle.dumps({p: tuple(list(objects)) for p, objects in named.items()})


def test_containment_measures_again_an_object_whose_box_or_the_interiors_changed():
    """Containment keeps each object's answer for its box and the interiors mapping: a carried object's new box
    among the others' kept ones is measured again, and so is every box against a new interiors mapping."""
    grounder = load_default_grounder(RATE)
    containment, objects = grounder._containment, grounder._grasp.objects
    margin = grounder.thresholds.distances_m.placement_margin
    room = Box(np.array([0.0, 0.0, 0.2]), np.eye(3), np.full(3, 0.2))  # an interior from z 0 to 0.4 ...
    away = Box(np.array([5.0, 0.0, 0.2]), np.eye(3), np.full(3, 0.2))  # ... and the same interior moved 5 m
    near = {c: room for c in containment.containers}
    far = {c: away for c in containment.containers}
    clear = {o: _box(9.0) for o in objects}  # every object's box far away
    carried = objects[0]

    def contained(boxes, interiors):
        return containment._contained(
            FrameGeometry(np.zeros(3), np.eye(3), np.zeros((3, 3)), {}, boxes, interiors), margin
        )

    assert containment.containers
    assert contained(clear, near) is False
    assert contained(dict(clear), near) is False  # the same boxes in a new mapping
    inside = dict(clear, **{carried: _box(0.0)})  # the carried one set down inside, the others' boxes kept
    assert contained(inside, near) is True
    assert contained(dict(inside), far) is False  # the same boxes, the interiors moved away
    assert contained(dict(inside), near) is True
    assert contained(dict(clear, **{carried: _box(5.0)}), near) is False  # carried on, out of the interior


def test_contamination_takes_the_last_contacts_again_only_while_they_are_the_same():
    """New gaps that make the same contacts as the last frame's (a carried object's) keep the last frame's edges,
    spread already: a contact that ends with the gaps changing is gone, and sanitizing still spreads again."""
    contamination = load_default_grounder(RATE)._contamination
    sanitized = frozenset({contamination._sanitized[0]})
    boxes = {o: _box(float(k)) for k, o in enumerate(load_default_grounder(RATE)._grasp.objects)}

    def step(gaps: dict[tuple[str, str], float], events: frozenset[str] = frozenset()):
        geo = FrameGeometry(np.zeros(3), np.eye(3), np.zeros((3, 3)), FrameGeometry.symmetric(gaps), boxes, {})
        values = contamination.step(FrameInputs(0.0, 0, geo, True, {}, {}, {}, {}, None, events))
        return values[0], "robot" in contamination.contaminated  # robot_contact_raw, the robot contaminated

    assert step({("hand", "raw_chicken"): 0.0}) == (True, True)
    assert step({("hand", "raw_chicken"): 0.001}, sanitized) == (True, True)  # the same contact spreads again
    assert step({("hand", "raw_chicken"): 0.5}) == (False, True)  # no contact any more
    assert step({("hand", "plate"): 0.0}, sanitized) == (False, False)
    assert step({("hand", "plate"): 0.001}) == (False, False)
    assert step({("hand", "plate"): 0.002, ("finger_left", "raw_chicken"): 0.0}) == (True, True)
    assert "plate" in contamination.contaminated


def test_a_fixture_near_only_what_it_cannot_hit_answers_as_the_general_path():
    """A fixture whose moving part is near only what cannot hit it (its own housing, the gripper) skips the obstacle
    mechanism as one near nothing does: driven through an obstacle episode (an object hit while it is opened, the
    hand let go) and out again, it answers as a twin that asks the mechanism whenever anything is near."""
    fast, slow = load_default_grounder(RATE)._fixtures, load_default_grounder(RATE)._fixtures
    slow._hitters = frozenset(load_default_grounder(RATE).robot.entities)  # anything near: the mechanism is asked
    f, obstacle = "cabinet", fast.graspable[0]
    boxes = {o: _box(9.0) for o in fast.graspable}  # outside every interior
    interiors = {
        g: Box(np.array([0.0, 3.0 * k, 0.2]), np.eye(3), np.full(3, 0.2)) for k, g in enumerate(fast.with_interior)
    }
    housing = {(f, f + ".housing"): 0.002}
    gripped = {**housing, ("finger_left", f): 0.0, ("finger_right", f): 0.0}
    hit = {**gripped, (f, obstacle): 0.0}
    # (finger and fixture gaps, gripper closed, the fixture's open-fraction change), frame by frame
    script = [(housing, False, 0.0)] * 3
    script += [(gripped, True, 0.0)] * 2 + [(gripped, True, 0.2)] * 2  # gripped, then opened
    script += [(hit, True, 0.2)] * 3  # against an object outside it
    script += [({**housing, (f, obstacle): 0.0}, False, 0.0)] * 2  # the hand let go: retracted
    script += [(housing, False, -0.2)] * 2 + [(housing, False, 0.0)] * 3  # swinging back alone, then still
    episodes = 0
    for frame, (gaps, closed, delta) in enumerate(script):
        geo = FrameGeometry(np.zeros(3), np.eye(3), np.zeros((3, 3)), FrameGeometry.symmetric(gaps), boxes, interiors)
        fractions = {g: 0.5 for g in fast.fixtures}
        deltas = {g: delta if g == f else 0.0 for g in fast.fixtures}
        inp = FrameInputs(frame / RATE, frame, geo, closed, fractions, deltas, {}, {}, None, frozenset())
        assert fast.step(inp) == slow.step(inp), frame
        assert fast.last_direction == slow.last_direction, frame
        assert [vars(e) | {"timer": vars(e.timer)} for e in fast.episodes.values()] == [
            vars(e) | {"timer": vars(e.timer)} for e in slow.episodes.values()
        ], frame
        episodes += fast.episodes[f].active
    assert episodes and not fast.episodes[f].active


def _skills_state(skills) -> dict:
    """Everything the skill family keeps but its short paths' flags and `_close_ok`'s cache; a hold's idle count as
    far as it is read (beyond the window: the short path leaves it there without counting on)."""
    skipped = ("robot", "th", "grasp", "fixtures", "skills", "holds", "_straddle_for", "_pick_quiet", "_holds_quiet")
    kept = {k: v for k, v in vars(skills).items() if k not in skipped}
    holds = {f: (h.direction, min(h.idle, h.window + 1)) for f, h in skills.holds.items()}
    return {**kept, "skills": {s: vars(k) for s, k in skills.skills.items()}, "holds": holds}


def test_a_carry_and_a_hand_off_the_fixtures_skip_the_skills_at_rest_as_the_general_path_would():
    """The pick at rest while an object is carried, and the open and close skills at rest while no fixture is held,
    are not stepped: driven through a pick, a carry (its place approach, a pose gap), a drawer opened with the
    object in hand, a release and a second pick, and a closed hand on the drawer with nothing in it, the skill
    family answers as a twin whose short paths are switched off before every frame, and keeps the same state."""
    fast, slow = load_default_grounder(RATE), load_default_grounder(RATE)
    grasp = fast._grasp
    mug, f = grasp.objects[0], "drawer"
    n, window = grasp._persistence[0], fast._skills.skills["pick"].window
    boxes = {o: _box(float(k)) for k, o in enumerate(grasp.objects)}
    interiors = {
        g: Box(np.array([0.0, 3.0 + 3.0 * k, 0.2]), np.eye(3), np.full(3, 0.2))
        for k, g in enumerate(fast._fixtures.with_interior)
    }
    near = {("hand", mug): 0.03}  # the open hand within reach of the mug
    held = {("finger_left", mug): 0.0, ("finger_right", mug): 0.0}
    lifted = {**held, ("arm", "arm"): 0.5}  # (pairs far from any support)
    placing = {**held, (mug, "table"): 0.02}  # the carried mug within reach of the table
    drawer = {("finger_left", f): 0.0, ("finger_right", f): 0.0}
    # (gripper closed, gaps, objects unseen, the drawer's open-fraction change), frame by frame
    script = [(False, {}, (), 0.0)] * 3
    script += [(False, near, (), 0.0)] * 2  # a pick approach
    script += [(True, held, (), 0.0)] * (n + window + 4)  # grasped, the pick's approach lapsing
    script += [(True, lifted, (), 0.0)] * (window + 3)  # carried clear of every support
    script += [(True, placing, (), 0.0)] * 3  # a place approach
    script += [(True, placing, (mug,), 0.0)] * 2  # the mug unseen while carried
    script += [(True, lifted, (), 0.0)] * (window + 3)
    script += [(True, {**lifted, **drawer}, (), 0.0)] * 2 + [(True, {**lifted, **drawer}, (), 0.2)] * 3  # a drawer
    script += [(True, lifted, (), 0.0)] * (window + 3)  # opened with the mug in hand, let go
    script += [(False, placing, (), 0.0)] * (n + 2)  # released on the table
    script += [(False, {}, (), 0.0)] * (window + 2) + [(False, near, (), 0.0)] * 2  # backed off, a second approach
    script += [(True, drawer, (), 0.0)] * 3 + [(True, drawer, (), -0.2)] * 3  # the drawer closed, nothing in hand
    script += [(False, {}, (), 0.0)] * (window + 3)
    quiet = {"_pick_quiet": 0, "_holds_quiet": 0}
    onsets = [False] * 4  # pick, place, open, close: each seen
    for frame, (closed, gaps, unseen, delta) in enumerate(script):
        seen = {o: b for o, b in boxes.items() if o not in unseen}
        geo = FrameGeometry(
            np.zeros(3), np.eye(3), np.zeros((3, 3)), FrameGeometry.symmetric(gaps), seen, interiors, frozenset(unseen)
        )
        fractions = {g: 0.5 for g in fast._fixtures.fixtures}
        deltas = {g: delta if g == f else 0.0 for g in fast._fixtures.fixtures}
        speeds = {o: (0.0, 0.0) for o in seen}
        slips = {mug: (0.0, 0.0)} if mug in seen else {}
        inp = FrameInputs(frame / RATE, frame, geo, closed, fractions, deltas, speeds, slips, None, frozenset())
        for flag in quiet:
            quiet[flag] += getattr(fast._skills, flag)
            setattr(slow._skills, flag, False)  # the general path on every frame
        for grounder in (fast, slow):
            grounder._grasp.step(inp)
            grounder._fixtures.step(inp)
        values = fast._skills.step(inp)
        assert values == slow._skills.step(inp), frame
        onsets = [o or v is True for o, v in zip(onsets, values[:4], strict=True)]
        assert _skills_state(fast._skills) == _skills_state(slow._skills), frame
    assert quiet["_pick_quiet"] >= 2 * window and quiet["_holds_quiet"] >= 2 * window  # the short paths answered
    assert all(onsets)


def test_contact_and_contamination_walk_the_pairs_in_c_as_in_python_as_pairs_come_and_go():
    """Contact and contamination walk a frame's gap pairs in C once every pair in reach has its rule: through a carry
    whose gaps change every frame, pairs first seen (their rules then found in Python) and contacts made and broken,
    both answer as twins that forget every rule before each frame, and so walk the pairs in Python whenever one is
    in reach, and both keep the same rules."""
    fast, slow = load_default_grounder(RATE), load_default_grounder(RATE)
    mug, plate = min(fast._contamination.raw), min(fast._contamination.clean)  # the carried one raw
    boxes = {o: _box(float(k)) for k, o in enumerate(fast._grasp.objects)}
    interiors = {
        g: Box(np.array([0.0, 3.0 + 3.0 * k, 0.2]), np.eye(3), np.full(3, 0.2))
        for k, g in enumerate(fast._fixtures.with_interior)
    }
    fractions = {g: 0.5 for g in fast._fixtures.fixtures}
    in_c = forbidden = 0
    rng = np.random.default_rng(7)
    for frame in range(60):
        gaps = {("finger_left", mug): 0.0, ("finger_right", mug): rng.uniform(0.0, 0.012), ("arm", "table"): 0.3}
        if frame >= 10:  # the mug carried near the plate and the table, touching them now and then
            gaps |= {(mug, plate): rng.choice([0.0, 0.002, 0.004]), (mug, "table"): rng.choice([0.001, 0.03])}
        if 20 <= frame < 30:  # the arm on the cabinet (forbidden), the hand on the drawer
            gaps |= {("arm", "cabinet"): 0.0, ("hand", "drawer"): rng.choice([0.0, 0.01])}
        geo = FrameGeometry(np.zeros(3), np.eye(3), np.zeros((3, 3)), FrameGeometry.symmetric(gaps), boxes, interiors)
        inp = FrameInputs(frame / RATE, frame, geo, True, fractions, fractions, {}, {}, None, frozenset())
        contact, contamination = fast._contact, fast._contamination
        in_c += (
            _geomath.pairs_within(geo.pairs, contact._rules, contact._contact) is not None
            and _geomath.pairs_within(geo.pairs, contamination._rules, contamination._bound) is not None
        )
        slow._contact._rules, slow._contamination._rules = {}, {}  # the pairs walked in Python
        for grounder in (fast, slow):
            grounder._grasp.step(inp)
            grounder._fixtures.step(inp)
        assert contact.step(inp) == slow._contact.step(inp), frame
        assert contamination.step(inp) == slow._contamination.step(inp), frame
        assert contamination.contaminated == slow._contamination.contaminated, frame
        for kept, found in ((contact._rules, slow._contact._rules), (contamination._rules, slow._contamination._rules)):
            assert all(kept[a][b] == rule for a, row in found.items() for b, rule in row.items()), frame
        forbidden += bool(contact.runs)
    assert in_c >= 40  # the kernel walked most frames
    assert {"robot", plate} <= fast._contamination.contaminated and forbidden  # contacts were made


def _fixtures_state(fixtures) -> dict:
    """What the fixture family keeps and later families read, its obstacle episodes included."""
    episodes = [vars(e) | {"timer": vars(e.timer)} for e in fixtures.episodes.values()]
    kept = ("target", "gripped", "directions", "reach_in", "operated", "maybe_operated", "last_direction")
    return {k: getattr(fixtures, k) for k in kept} | {"episodes": episodes}


def test_quiet_fixtures_skip_the_per_fixture_loop_as_the_general_path_would():
    """A frame whose fixture motion is the last quiet frame's, with no fixture part near the gripper, none reached
    into, every object seen and nothing that can hit a fixture near, skips the per-fixture loop: driven through a
    housing near the gripper, a drawer gripped and opened, the arm and an object against a fixture, a reach into an
    interior, an unseen object and a fixture swinging alone (its motion changed in the caller's dict, in place), the
    family answers as a twin that runs the loop on every frame, and keeps the same state."""
    fast, slow = load_default_grounder(RATE)._fixtures, load_default_grounder(RATE)._fixtures
    drawer, cabinet, obstacle = "drawer", "cabinet", fast.graspable[0]
    boxes = {o: _box(9.0) for o in fast.graspable}  # outside every interior
    interiors = {
        g: Box(np.array([0.0, 3.0 * k, 0.2]), np.eye(3), np.full(3, 0.2)) for k, g in enumerate(fast.with_interior)
    }
    housing = {(cabinet, cabinet + ".housing"): 0.002}  # always near: what cannot hit it
    far, inside = np.full((3, 3), 1.5), np.array([[0.0, 0.0, 0.2], [0.0, 0.0, 0.25], [0.0, 0.0, 0.3]])  # gripper points
    near = {**housing, ("hand", drawer + ".housing"): 0.03}  # the hand near the drawer's housing
    gripped = {**housing, ("finger_left", drawer): 0.0, ("finger_right", drawer): 0.0}
    # (gaps, gripper points, gripper closed, the drawer's open-fraction change, objects unseen), frame by frame
    script = [(housing, far, False, 0.0, ())] * 3
    script += [(near, far, False, 0.0, ())] * 2 + [(housing, far, False, 0.0, ())] * 3
    script += [(gripped, far, True, 0.0, ())] * 2 + [(gripped, far, True, 0.2, ())] * 3  # gripped, opened
    script += [({**gripped, (drawer, obstacle): 0.0}, far, True, 0.2, ())] * 3  # against an object outside it
    script += [(housing, far, False, 0.0, ())] * 4  # let go
    script += [({**housing, ("arm", cabinet): 0.0}, far, False, 0.0, ())] * 2  # the arm against the cabinet
    script += [(housing, inside, False, 0.0, ())] * 2 + [(housing, far, False, 0.0, ())] * 2  # a reach in
    script += [(housing, far, False, 0.0, (obstacle,))] * 2 + [(housing, far, False, 0.0, ())] * 2  # unseen
    script += [(housing, far, False, -0.2, ())] * 2 + [(housing, far, False, 0.0, ())] * 3  # swinging alone
    script += [(housing, far, False, None, ())] * 2 + [(housing, far, False, 0.0, ())] * 3  # its motion unknown
    fractions = {g: 0.5 for g in fast.fixtures}
    deltas: dict[str, float | None] = {g: 0.0 for g in fast.fixtures}  # one dict, changed in place
    skipped, seen_states = 0, set()
    for frame, (gaps, points, closed, delta, unseen) in enumerate(script):
        seen = {o: b for o, b in boxes.items() if o not in unseen}
        geo = FrameGeometry(
            np.zeros(3), np.eye(3), points, FrameGeometry.symmetric(gaps), seen, interiors, frozenset(unseen)
        )
        deltas[drawer] = delta
        inp = FrameInputs(frame / RATE, frame, geo, closed, fractions, deltas, {}, {}, None, frozenset())
        skipped += fast._quiet_deltas == deltas and gaps is housing and points is far and not unseen
        slow._quiet_deltas = None  # the per-fixture loop on every frame
        assert fast.step(inp) == slow.step(inp), frame
        assert _fixtures_state(fast) == _fixtures_state(slow), frame
        seen_states |= {fast.target, *fast.operated, *(f + " in" for f, v in fast.reach_in.items() if v)}
        seen_states |= {f + " episode" for f, e in fast.episodes.items() if e.active}
    assert skipped >= 10  # the short path answered
    assert {cabinet, drawer, drawer + " in", drawer + " episode"} <= seen_states


def test_object_motion_hands_out_the_last_answer_only_while_no_sample_is_new_and_no_object_crosses_the_reach():
    """Objects whose pose samples repeat (a slower stream) and that stay on their side of the reach get the last
    frame's speed and drift again, without a walk over them; a new sample, a pose lost and back, an object
    crossing the reach either way between samples (the hand moving, its pose not), or an age that is not a float
    take the general path. Beside a twin whose short path is off on every frame, the answers and the tracks stay
    the same."""
    fast, slow = load_default_grounder(RATE), load_default_grounder(RATE)
    mug, plate, chicken, cube = fast.robot.objects
    reach = fast.thresholds.distances_m.reach
    rest = fast._motion_limits[0] * 3  # a sample every this many seconds: it repeats on the frames between
    dt, short = 0.002, 0
    last = None
    for k in range(600):
        t = 1.0 + k * dt
        ee = np.array([0.3 + 0.2 * math.sin(k / 90), 0.1, 0.2])
        stamp = 1.0 + (k * dt // rest) * rest  # every object's newest sample
        poses = {
            mug: Pose(np.array([0.3 + 0.1 * math.sin(stamp), 0.0, 0.05]), np.array([1.0, 0.0, 0.0, 0.0])),
            plate: Pose(np.array([0.6, 0.2, 0.0]), np.array([1.0, 0.0, 0.0, 0.0])),
            chicken: Pose(np.array([0.3 + 0.2 * math.sin(stamp / 0.18), 0.1, 0.2]), np.array([0.0, 1.0, 0.0, 0.0])),
            cube: Pose(np.array([0.1, -0.2, 0.05]), np.array([1.0, 0.0, 0.0, 0.0])),
        }
        if 250 <= k < 290:
            del poses[cube]  # lost, then back
        ages = {o: t - stamp for o in poses}
        if k == 400:
            ages[plate] = int(ages[plate])  # (not a float: the general path's arithmetic)
        # the mug crosses the reach both ways on frames between its samples; the chicken stays within it
        gaps = {mug: reach * (1.0 + math.sin(k / 13)), chicken: 0.01}
        boxes = {o: Box(p.position, quat_to_matrix(p.quaternion), np.full(3, 0.03)) for o, p in poses.items()}
        geo = FrameGeometry.with_derived(ee, np.eye(3), np.zeros((3, 3)), {}, boxes, {}, frozenset(), gaps, [])
        state = SimpleNamespace(t=t)
        slow._beyond[:] = [None] * len(slow._beyond)  # the general path on every frame
        got, want = fast._object_motion(state, poses, ages, geo), slow._object_motion(state, poses, ages, geo)
        assert got == want, k
        short += got is last
        last = got
        for o in poses:
            a, b = fast._motion[o], slow._motion[o]
            assert (a.speed, a.track.times, a.relative.times) == (b.speed, b.track.times, b.relative.times), (k, o)
            assert a.track.positions == b.track.positions and a.relative.positions == b.relative.positions, (k, o)
    crossings = sum((math.sin(k / 13) > 0) != (math.sin((k + 1) / 13) > 0) for k in range(600))
    assert 400 < short < 600 - crossings


def test_a_carried_objects_kept_placement_is_keyed_on_its_pose_values_and_measurement_time():
    """The grounder keeps a held object's placement relative to the hand while its pose sample repeats: a pose
    changed in place (same arrays, new values), one given as lists, or a new measurement time places it anew,
    as a grounder with nothing kept does."""
    g = load_default_grounder(RATE)
    mug = g._grasp.objects[0]
    rng = np.random.default_rng(5)
    for k in range(6):  # the hand's track: a sample a frame, turning and moving
        g._ee_track.add(k * 0.05, rng.normal(size=3), quat_to_matrix(rng.normal(size=4)))
    g._grasp.held = (mug,)
    ee = (rng.normal(size=3), quat_to_matrix(rng.normal(size=4)))
    pose = Pose(np.array([0.4, 0.1, 0.5]), np.array([0.9, 0.1, 0.2, 0.3]))

    def placed(pose: Pose, age: float) -> tuple[np.ndarray, np.ndarray]:
        state = SimpleNamespace(t=0.3)
        fresh = load_default_grounder(RATE)  # the general path: nothing kept
        fresh._ee_track, fresh._grasp.held = g._ee_track, g._grasp.held
        want = fresh._carried(state, {mug: pose}, {mug: age})(*ee)[mug]  # type: ignore[misc, arg-type]
        got = g._carried(state, {mug: pose}, {mug: age})(*ee)[mug]  # type: ignore[misc, arg-type]
        assert [a.tobytes() for a in got] == [a.tobytes() for a in want]
        return got

    first = placed(pose, 0.12)
    assert placed(pose, 0.12) is first  # the same sample: the kept placement itself
    pose.quaternion[0] = 0.8  # changed in place
    moved = placed(pose, 0.12)
    assert moved is not first and moved[1].tobytes() != first[1].tobytes()
    pose.position[2] = 0.6
    assert placed(pose, 0.12)[0].tobytes() != moved[0].tobytes()
    listed = Pose(pose.position.tolist(), pose.quaternion.tolist())  # type: ignore[arg-type]
    assert placed(listed, 0.12)[0].tobytes() == placed(pose, 0.12)[0].tobytes()  # the same values as lists
    assert placed(pose, 0.17)[0].tobytes() != placed(pose, 0.12)[0].tobytes()  # measured at another time
