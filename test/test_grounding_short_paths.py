"""The estimator families' short paths (frames whose state they skip provably unchanged) answer as their general
paths: each family is driven into the state a short path skips from and out of it again, beside a twin whose
short path is switched off before every frame, and both must give the same values and keep the same state."""

from __future__ import annotations

import math
import pickle
from types import SimpleNamespace

import numpy as np

from safety_monitor.frames import Pose
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
    kept = {k: v for k, v in vars(grasp).items() if k not in ("state", "_states", "_carries", "_carry")}
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
