"""Results the twin and the estimators reuse between frames (distances and boxes of bodies that did not move,
box tests, track changes) are the ones they would compute afresh: a grounder whose twin forgets everything
before every frame gives the same frames, bit for bit, through a grasp, a carry and a release, with object
poses now and then missing, too old or reappearing."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from safety_monitor.frames import Pose
from safety_monitor.grounding.geometry import Box, FrameGeometry
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.grounding.inputs import FrameInputs
from safety_monitor.sim.runner import run_episode

RATE = 500.0


@pytest.fixture(scope="module")
def states():
    out = []
    for k, state in enumerate(run_episode("pick_and_place_mug")):
        if k >= 2300:
            break
        if k >= 600:  # approach (its onset seen: on a trace's first frame it would be unknown), grasp, lift and carry
            out.append(state)
    for k in range(500, 560):  # the plate's pose missing for a while, then the cube's too old, then back
        s = out[k]
        poses, ages = dict(s.object_poses), dict(s.object_ages)
        del poses["plate"], ages["plate"]
        if k >= 530:
            ages["cube"] = 0.4
        out[k] = dataclasses.replace(s, object_poses=poses, object_ages=ages)
    return out


def frames(grounder, states, forget: bool):
    out = []
    for state in states:
        if forget:
            grounder.twin.forget()
        f = grounder.step(state)
        out.append((f.t, f.frame, f.values, f.unknown, f.stale))
    return out


def test_reused_geometry_gives_the_frames_a_fresh_computation_gives(states):
    warm, cold = load_default_grounder(RATE), load_default_grounder(RATE)
    got, want = frames(warm, states, forget=False), frames(cold, states, forget=True)
    assert got == want
    assert all(type(v) is bool for _, _, values, _, _ in got for v in values.values())
    changed = {k for a, b in zip(got, got[1:]) for k in a[2] if a[2][k] != b[2][k]}
    assert {"object_grasped", "object_grasped_raw", "object_stable", "skill_pick_onset"} <= changed
    assert any(f[3] for f in got) and any("object_pose/plate" in f[4] for f in got)


def test_the_gap_maps_are_handed_out_again_only_while_every_gap_is_the_same():
    """A frame whose keys and gaps are the last frame's, bit for bit, gets the last frame's maps (the same
    objects); every frame's maps equal those a twin that builds them afresh gives (the start of an episode:
    the arm still, then reaching over the objects)."""
    states = [s for k, s in zip(range(1200), run_episode("pick_and_place_mug"))]
    warm, cold = load_default_grounder(RATE).twin, load_default_grounder(RATE).twin
    last, again = None, 0
    for state in states:
        geo = warm.compute(state.joint_names, state.joint_position, state.object_poses)
        cold.forget()
        fresh = cold.compute(state.joint_names, state.joint_position, state.object_poses)
        assert (geo.gaps, geo.gripper_gaps, geo.pairs) == (fresh.gaps, fresh.gripper_gaps, fresh.pairs)
        if last is not None and geo.pairs is last.pairs:
            assert geo.gaps is last.gaps and geo.gripper_gaps is last.gripper_gaps
            again += 1
        elif last is not None:
            assert geo.pairs != last.pairs  # built anew only when a gap or key changed
        last = geo
    assert 100 < again < len(states) - 100


def test_a_frame_where_nothing_moved_gets_the_last_geometry_again(states):
    """The same joints and poses as the last compute (the arm at rest between pose updates): the same
    FrameGeometry object; a joint or pose that moved, an object that became unknown, or forget(): a new one,
    equal to what a fresh twin computes."""
    twin, fresh = load_default_grounder(RATE).twin, load_default_grounder(RATE).twin
    s = states[300]

    def geometry(joints, poses):
        fresh.forget()
        want = fresh.compute(s.joint_names, joints, poses)
        got = twin.compute(s.joint_names, joints, poses)
        assert (got.ee_position.tolist(), got.gaps, got.object_boxes.keys(), got.unknown) == (
            want.ee_position.tolist(),
            want.gaps,
            want.object_boxes.keys(),
            want.unknown,
        )
        return got

    first = geometry(s.joint_position, s.object_poses)
    assert geometry(s.joint_position.copy(), dict(s.object_poses)) is first
    moved = s.joint_position.copy()
    moved[0] += 1e-6
    assert geometry(moved, s.object_poses) is not first
    again = geometry(moved, s.object_poses)
    without_plate = {o: p for o, p in s.object_poses.items() if o != "plate"}
    assert geometry(moved, without_plate) is not again and geometry(moved, without_plate).unknown == {"plate"}
    last = geometry(moved, without_plate)
    twin.forget()
    assert geometry(moved, without_plate) is not last


def test_a_restarted_grounder_grounds_the_next_recording_as_a_new_one_would(states):
    """Replay keeps one grounder per process and restarts it for each bag: after a grasp and a carry (the cube
    held, moved, the twin's MjData and kept geometry where the carry left them) it is as a new one."""
    kept, new = load_default_grounder(RATE), load_default_grounder(RATE)
    frames(kept, states, forget=False)
    kept.restart()
    assert np.array_equal(kept.twin.data.qpos, new.twin.data.qpos)
    assert kept.twin._boxes == {} and not kept.twin._pair_fresh.any()
    again = states[:700]  # from the approach again: its time starts over
    assert frames(kept, again, forget=False) == frames(new, again, forget=False)


def test_the_twin_reuses_distances_only_while_both_geoms_rest(states):
    twin = load_default_grounder(RATE).twin
    fresh = load_default_grounder(RATE).twin
    for state in states[:400:7]:
        got = twin.compute(state.joint_names, state.joint_position, state.object_poses)
        fresh.forget()
        want = fresh.compute(state.joint_names, state.joint_position, state.object_poses)
        assert list(got.gaps.items()) == list(want.gaps.items())  # same pairs, same order, same values
        for name in want.object_boxes:
            a, b = got.object_boxes[name], want.object_boxes[name]
            assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("center", "rotation", "half"))
    resting = twin.compute(states[0].joint_names, states[0].joint_position, states[0].object_poses)
    again = twin.compute(states[0].joint_names, states[0].joint_position, states[0].object_poses)
    assert all(again.object_boxes[o] is resting.object_boxes[o] for o in resting.object_boxes)


def test_a_frame_where_only_the_arm_moved_hands_out_the_last_boxes_without_box_work(states, monkeypatch):
    """Most frames move the arm alone: the object boxes, interiors and unknown set are the last frame's
    objects, handed out without visiting a box builder."""
    twin = load_default_grounder(RATE).twin
    first, second = states[0], states[1]
    poses = dict(first.object_poses)
    before = twin.compute(first.joint_names, first.joint_position, poses)
    assert not np.array_equal(first.joint_position, second.joint_position)

    def no_box_work(*args):
        raise AssertionError("boxes revisited on a frame where no box's body moved")

    monkeypatch.setattr(twin, "_update_boxes", no_box_work)
    after = twin.compute(second.joint_names, second.joint_position, poses)
    assert after.object_boxes is before.object_boxes and after.interiors is before.interiors
    assert after.unknown is before.unknown


def test_a_frame_where_one_object_moved_rebuilds_its_box_alone(states):
    """A carried object moves every frame while the others rest: its box is built anew at its new pose, every
    other box and the interiors are the last frame's objects; an object whose pose goes and comes back (the
    posed objects change) loses its box and gets it again, as a fresh twin builds it."""
    twin = load_default_grounder(RATE).twin
    state = states[0]
    poses = dict(state.object_poses)
    before = twin.compute(state.joint_names, state.joint_position, poses)
    mug = poses["mug"]
    moved = {**poses, "mug": Pose(np.asarray(mug.position) + (0.01, 0.0, 0.0), mug.quaternion)}
    after = twin.compute(state.joint_names, state.joint_position, moved)
    shift = after.object_boxes["mug"].center - before.object_boxes["mug"].center
    assert np.allclose(shift, (0.01, 0.0, 0.0), atol=1e-12)
    assert all(after.object_boxes[o] is before.object_boxes[o] for o in poses if o != "mug")
    assert after.interiors is before.interiors and after.unknown is before.unknown
    without = {o: p for o, p in moved.items() if o != "cube"}
    gone = twin.compute(state.joint_names, state.joint_position, without)
    assert "cube" not in gone.object_boxes and gone.unknown == {"cube"}
    back = twin.compute(state.joint_names, state.joint_position, moved)
    fresh = load_default_grounder(RATE).twin.compute(state.joint_names, state.joint_position, moved)
    for o in fresh.object_boxes:
        a, b = back.object_boxes[o], fresh.object_boxes[o]
        assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("center", "rotation", "half")), o
    assert back.unknown == frozenset()


def test_a_box_keeps_its_corners_read_only():
    a = Box(np.zeros(3), np.eye(3), np.ones(3))
    b = Box(np.array([5.0, 0.0, 0.0]), np.eye(3), np.ones(3))
    assert a.corners() is a.corners() and not a.corners().flags.writeable
    assert sorted(map(tuple, a.corners().tolist()))[0] == (-1.0, -1.0, -1.0)
    assert a.overlaps(b) is False and a.overlaps(a) is True


def test_the_twins_pair_list_and_gripper_gaps_are_the_ones_derived_from_its_gaps(states):
    twin = load_default_grounder(RATE).twin
    seen_gripper = False
    for state in states[::25]:
        geo = twin.compute(state.joint_names, state.joint_position, state.object_poses)
        derived = dataclasses.replace(geo)  # same fields, nothing kept: derived from gaps on first use
        assert sorted(geo.pairs) == sorted(derived.pairs)
        assert geo.gripper_gaps == derived.gripper_gaps
        assert all(geo.gap(a, b) == gap == geo.gap(b, a) and a < b for a, b, gap in geo.pairs)
        seen_gripper = seen_gripper or bool(geo.gripper_gaps)
    assert seen_gripper
    assert geo == derived  # the twin's FrameGeometry has every field a constructed one has


def test_a_frame_geometry_with_derived_maps_equals_the_constructed_one():
    fields = [f.name for f in dataclasses.fields(FrameGeometry)]
    geo = FrameGeometry.with_derived(*range(len(fields)), {"cube": 0.0}, [])
    assert geo == FrameGeometry(*range(len(fields)))  # type: ignore[arg-type]
    assert geo.gripper_gaps == {"cube": 0.0} and geo.pairs == []


def test_the_twins_gaps_are_the_contacts_and_distances_mujoco_gives(states):
    """The twin's gaps (C, `_geomath.entity_gaps`) against a plain walk of the same MuJoCo data: the smallest
    distance per entity pair among the contacts of a full mj_collision, then mj_geomDistance on every measured pair (nothing reused) for
    pairs not touching, kept when under the report margin."""
    import mujoco

    twin = load_default_grounder(RATE).twin
    assert isinstance(twin._measure[0], int)  # the walk calls MuJoCo's C mj_geomDistance itself
    through_python = load_default_grounder(RATE).twin
    through_python._measure = (mujoco.mj_geomDistance, through_python.model, through_python.data)
    m, d, inf = twin.model, twin.data, float("inf")
    entity = [twin.entities[e] for e in twin.geom_entity.tolist()]
    compared = 0
    for state in states[::9]:
        geo = twin.compute(state.joint_names, state.joint_position, state.object_poses)
        assert through_python.compute(state.joint_names, state.joint_position, state.object_poses).pairs == geo.pairs
        mujoco.mj_collision(m, d)  # every contact afresh (the twin keeps those of resting geoms)
        want: dict[tuple[str, str], float] = {}
        for g1, g2, dist in zip(d.contact.geom[: d.ncon, 0], d.contact.geom[: d.ncon, 1], d.contact.dist[: d.ncon]):
            a, b = sorted((entity[g1], entity[g2]))
            if a != b:
                want[(a, b)] = min(float(dist), want.get((a, b), inf))
        for ga, gb in zip(twin._pa.tolist(), twin._pb.tolist()):
            a, b = sorted((entity[ga], entity[gb]))
            known = want.get((a, b), inf)
            if known <= 0.0:
                continue
            gap = mujoco.mj_geomDistance(m, d, ga, gb, twin.margin, None)
            if gap < twin.margin and gap < known:
                want[(a, b)] = gap
        got = {(a, b): gap for a, b, gap in geo.pairs}
        assert got == want
        assert all(geo.gap(a, b) == gap == geo.gap(b, a) for (a, b), gap in want.items())
        compared += len(want)
    assert compared > 100


def test_poses_in_lists_or_another_mapping_place_objects_as_arrays_do(states):
    """The twin writes poses in C from float64 arrays in a dict; anything else goes through numpy, the same."""
    from types import MappingProxyType

    from safety_monitor.frames import Pose

    twin, other = load_default_grounder(RATE).twin, load_default_grounder(RATE).twin
    for state in states[:300:20]:
        want = twin.compute(state.joint_names, state.joint_position, state.object_poses)
        listed = {o: Pose(p.position.tolist(), tuple(p.quaternion.tolist())) for o, p in state.object_poses.items()}
        for poses in (listed, MappingProxyType(dict(state.object_poses))):
            other.forget()
            got = other.compute(state.joint_names, state.joint_position, poses)  # type: ignore[arg-type]
            assert got.gaps == want.gaps and got.object_boxes.keys() == want.object_boxes.keys()


def test_the_grounder_judges_poses_in_lists_or_other_dtypes_as_float64_arrays(states):
    """Float64 arrays are checked in one C call, anything else by the general path: the same verdicts, also
    for a pose with a NaN or in the wrong shape."""
    from safety_monitor.frames import Pose

    def variant(state, make):
        poses = {o: make(p) for o, p in state.object_poses.items()}
        poses["cube"] = make(Pose(np.array([0.1, math.nan, 0.8]), poses["cube"].quaternion))
        return dataclasses.replace(state, object_poses=poses)

    makes = (
        lambda p: Pose(np.asarray(p.position, dtype=float), np.asarray(p.quaternion, dtype=float)),
        lambda p: Pose(list(np.asarray(p.position).tolist()), tuple(np.asarray(p.quaternion).tolist())),
        lambda p: Pose(np.asarray(p.position, dtype=np.float32), np.asarray(p.quaternion, dtype=np.float32)),
    )
    runs = []
    for make in makes:
        grounder = load_default_grounder(RATE)
        runs.append([grounder.step(variant(state, make)) for state in states[:400:10]])
    assert all(f.unknown for f in runs[0])  # the NaN pose is unusable: what is read from it is unknown
    for frames in runs[1:]:
        assert [(f.values, f.unknown, f.stale) for f in frames] == [(f.values, f.unknown, f.stale) for f in runs[0]]
    shaped = [Pose(np.zeros((1, 3)), np.array([1.0, 0.0, 0.0, 0.0])), Pose(np.zeros(3), np.zeros(4))]
    verdicts = []
    for cube in shaped:  # three values in the wrong shape, or no orientation: as unusable as a NaN
        state = dataclasses.replace(states[0], object_poses=dict(states[0].object_poses, cube=cube))
        frame = load_default_grounder(RATE).step(state)
        verdicts.append((frame.values, frame.unknown))
    assert verdicts == [(runs[0][0].values, runs[0][0].unknown)] * 2


def _box(x: float, z: float, half: float) -> Box:
    return Box(np.array([x, 0.0, z]), np.eye(3), np.full(3, half))


def test_kept_box_answers_follow_a_new_interior_or_new_object_boxes():
    """Containment, the Fixture family's focus and the Skill family's close check keep their answer while
    the twin hands out the same box mappings; a new interiors mapping with the same object boxes (a fixture
    moved), or new object boxes with the same interiors (an object moved), is measured again."""
    grounder = load_default_grounder(RATE)
    containment, fixtures, skills = grounder._containment, grounder._fixtures, grounder._skills
    margin = grounder.thresholds.distances_m.placement_margin
    room = _box(0.0, 0.2, 0.2)  # an interior from z 0 to 0.4 ...
    away = _box(5.0, 0.2, 0.2)  # ... and the same interior moved 5 m
    clear = {o: _box(9.0, 0.05, 0.05) for o in grounder._grasp.objects}  # every object's box far away
    inside = dict(clear, mug=_box(0.0, 0.05, 0.05))  # the mug resting on the interior's floor
    straddling = dict(clear, mug=_box(0.2, 0.05, 0.05))  # across its wall at x = 0.2
    moved = dict(clear, mug=_box(5.0, 0.05, 0.05))  # on the floor of the moved interior

    def geometry(boxes, interiors):
        return FrameGeometry(np.zeros(3), np.eye(3), np.zeros((3, 3)), {}, boxes, interiors)

    def frame(geo):
        return FrameInputs(0.0, 1, geo, False, {}, {}, {}, {}, None, frozenset())

    near = {"bin": room, "drawer": room, "cabinet": away}
    far = {"bin": away, "drawer": away, "cabinet": away}
    assert containment._contained(geometry(inside, near), margin) is True
    assert containment._contained(geometry(inside, far), margin) is False  # the same boxes, a new interior
    assert containment._contained(geometry(moved, far), margin) is True

    grasp = grounder._grasp
    grasp.focus = "mug"
    assert fixtures._focus_in_fixture(frame(geometry(inside, near))) is True
    assert fixtures._focus_in_fixture(frame(geometry(inside, far))) is False
    assert fixtures._focus_in_fixture(frame(geometry(moved, far))) is True

    fixtures.reach_in = {}
    assert skills._close_ok("drawer", frame(geometry(clear, near))) is True
    assert skills._close_ok("drawer", frame(geometry(straddling, near))) is False
    assert skills._close_ok("drawer", frame(geometry(inside, near))) is True
    shifted = {**near, "drawer": _box(0.2, 0.2, 0.2)}  # the mug's box stays, the drawer's wall moves onto it
    assert skills._close_ok("drawer", frame(geometry(inside, shifted))) is False


def test_a_quiet_grasp_family_counts_a_closed_grip_once_both_fingers_touch():
    """Every object seen and quiet skips the grasp evidence on a frame with nothing between the fingers, open or
    closed: a closed gripper whose fingers touch an object is no such frame, and its raw grasp counts at once."""
    grasp = load_default_grounder(RATE)._grasp
    boxes = {o: _box(float(k), 0.05, 0.05) for k, o in enumerate(grasp.objects)}
    at_rest = {o: (0.0, 0.0) for o in grasp.objects}
    gripping = {
        "finger_left": {"mug": 0.0},
        "finger_right": {"mug": 0.0},
        "mug": {"finger_left": 0.0, "finger_right": 0.0},
    }

    def step(frame, closed, gaps):
        geo = FrameGeometry(np.zeros(3), np.eye(3), np.zeros((3, 3)), gaps, boxes, {})
        values = grasp.step(FrameInputs(frame * 0.05, frame, geo, closed, {}, {}, at_rest, {}, None, frozenset()))
        return values[0], values[1]  # object_grasped_raw, object_grasped

    for frame in range(4):  # quiet: open, then closed on nothing
        assert step(frame, frame >= 2, {}) == (False, False)
    assert grasp._quiet
    persistence = grasp._persistence[0]
    got = [step(frame, True, gripping) for frame in range(4, 4 + persistence)]
    assert got == [(True, False)] * (persistence - 1) + [(True, True)]
    assert grasp.focus == "mug" and grasp.held == ("mug",)


def test_the_focus_fixture_away_from_the_gripper_is_the_nearest_interior_and_on_a_tie_the_first_name():
    """With the gripper near nothing, the focus fixture is the one whose interior is nearest the grasp centre,
    as min() of (distance, name) picks it: on equal distances, the name first in order."""
    fixtures = load_default_grounder(RATE)._fixtures
    rows = dict(fixtures._ranked_rows)  # fixture -> its place among the interior distances
    assert {"drawer", "cabinet"} <= rows.keys()

    def target(**distance):
        outside = [math.inf] * len(fixtures.with_interior)
        for f, d in distance.items():
            outside[rows[f]] = d
        return fixtures._target({}, outside)

    assert target(drawer=0.2, cabinet=0.3) == "drawer"
    assert target(drawer=0.3, cabinet=0.2) == "cabinet"
    assert target(drawer=0.3, cabinet=0.3) == "cabinet"  # a tie: by name
    assert target(drawer=-0.0, cabinet=0.0) == "cabinet"


def test_the_step_reads_each_fixtures_open_fraction_as_the_description_gives_it():
    """The step computes Fixture.open_fraction's terms inline (no call per fixture and frame): the fractions the
    families read, and their change over the motion window, are the description's, bit for bit."""
    grounder = load_default_grounder(500.0)
    seen: list[FrameInputs] = []
    step = grounder._fixtures.step
    grounder._fixtures.step = lambda inp: seen.append(inp) or step(inp)  # type: ignore[method-assign]
    states = list(run_episode("open_drawer"))[::8]
    for state in states:
        grounder.step(state)
    fixtures = grounder.robot.fixtures
    window = grounder.counts.motion_window
    for k, (state, inp) in enumerate(zip(states, seen, strict=True)):
        joints = dict(zip(state.joint_names, state.joint_position.tolist(), strict=True))
        want = {f: fx.open_fraction(joints[fx.joint]) for f, fx in fixtures.items()}
        assert inp.fixture_fraction == want
        if k >= window:
            assert inp.fixture_delta == {f: want[f] - seen[k - window].fixture_fraction[f] for f in fixtures}
    assert any(inp.fixture_fraction["drawer"] > 0.1 for inp in seen)  # the drawer opened


def test_kept_candidates_and_reused_rows_give_the_maps_a_fresh_walk_builds(states):
    """The walks that test only their kept candidates (may_touch's, entity_gaps') and the maps built reusing the last
    frame's rows and entries give every frame the gaps, in the same order, the gripper gaps and the pair list that
    walks over every pair and maps built afresh give; rows are reused while the arm moves near the objects."""
    warm, cold = load_default_grounder(RATE).twin, load_default_grounder(RATE).twin  # (forgetting: every pair walked)
    last, rows_again = None, 0
    for state in states:
        geo = warm.compute(state.joint_names, state.joint_position, state.object_poses)
        cold.forget()
        fresh = cold.compute(state.joint_names, state.joint_position, state.object_poses)
        got = [(a, list(row.items())) for a, row in geo.gaps.items()]
        assert got == [(a, list(row.items())) for a, row in fresh.gaps.items()]
        assert list(geo.gripper_gaps.items()) == list(fresh.gripper_gaps.items()) and geo.pairs == fresh.pairs
        if last is not None and geo.pairs is not last.pairs:
            rows_again += any(row is last.gaps.get(a) for a, row in geo.gaps.items())
        last = geo
    assert rows_again > 100
    # the warm twin's walks hold candidates, fewer than their pairs; the cold one's take them again every frame
    assert any(a is not None and 0 <= a[4][0] < len(a[0]) for a, _, _ in warm._plans.values())
    cold.forget()
    assert all(a is None or math.isnan(a[4][0]) for a, _, _ in cold._plans.values())
    assert all(
        c is None or (math.isnan(c.bounds[9][0]) and math.isnan(c.near_bounds[9][0]))
        for _, _, c in cold._plans.values()
    )
