"""The twin's contact list kept between frames (grounding.contacts): mj_collision asked only about moved
geoms, and not at all when none can touch, gives the contacts a full mj_collision gives."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from safety_monitor.grounding import _geomath, contacts, twin
from safety_monitor.grounding.contacts import Contacts, candidate_pairs, sphere_reach2
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.sim.runner import run_episode

SCENE = """
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <geom name="post" type="box" size="0.05 0.05 0.5" pos="-1 0 0.5"/>
    <body name="ball" pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body name="brick" pos="0.5 0 0.3" euler="0 0 30"><freejoint/><geom type="box" size="0.1 0.2 0.3"/></body>
    <body name="can" pos="-0.5 0 0.15"><freejoint/><geom type="cylinder" size="0.05 0.15"/></body>
  </worldbody>
</mujoco>
"""
MARGIN = 0.002


def listed(n: int, geom: np.ndarray | None, dist: np.ndarray | None) -> list[tuple[int, int, float]]:
    """Contacts as a sorted list of (geom, geom, distance), each pair's geoms in ascending order."""
    if not n:
        return []
    assert geom is not None and dist is not None
    return sorted((min(a, b), max(a, b), d) for (a, b), d in zip(geom[:n].tolist(), dist[:n].tolist()))


def full(m: mujoco.MjModel, d: mujoco.MjData) -> list[tuple[int, int, float]]:
    mujoco.mj_collision(m, d)
    return listed(d.ncon, d.contact.geom, d.contact.dist)


class CountingMuJoCo:
    """The `mujoco` module inside grounding.contacts, with its mj_collision calls counted."""

    def __init__(self) -> None:
        self.collisions = 0

    def __getattr__(self, name: str):
        if name != "mj_collision":
            return getattr(mujoco, name)

        def counted(m, d):
            self.collisions += 1
            mujoco.mj_collision(m, d)

        return counted


def scene() -> tuple[mujoco.MjModel, mujoco.MjData]:
    m = mujoco.MjModel.from_xml_string(SCENE)
    m.geom_margin[:] = MARGIN
    return m, mujoco.MjData(m)


def move_some(rng: np.random.Generator, m: mujoco.MjModel, d: mujoco.MjData, free: dict[str, int]) -> list[str]:
    """Each of the `free` bodies (name: qpos address) moved with probability 0.4, anywhere from resting on the floor
    or against another body to far off; MjData's kinematics after it. The bodies moved."""
    moved = [b for b in free if rng.random() < 0.4]
    for b in moved:
        adr = free[b]
        d.qpos[adr : adr + 3] = rng.uniform([-0.8, -0.4, -0.02], [0.8, 0.4, 0.6])
        quat = rng.normal(size=4)
        d.qpos[adr + 3 : adr + 7] = quat / np.linalg.norm(quat)
    mujoco.mj_kinematics(m, d)
    return moved


def test_only_moved_geoms_are_collided_and_the_list_is_a_full_collisions(monkeypatch):
    counting = CountingMuJoCo()
    monkeypatch.setattr(contacts, "mujoco", counting)
    m, d = scene()
    kept = Contacts(m)
    assert kept.reuse
    rng = np.random.default_rng(7)
    free = {name: m.jnt_qposadr[m.body(name).jntadr[0]] for name in ("ball", "brick", "can")}
    mujoco.mj_kinematics(m, d)
    assert listed(*kept.collide(m, d, kept.plan(m, np.ones(m.ngeom, dtype=bool)))) == full(m, d)
    steps, touching = 400, 0
    for _ in range(steps):
        moved = move_some(rng, m, d, free)
        geom_moved = np.isin(m.geom_bodyid, [m.body(b).id for b in moved])
        got = listed(*kept.collide(m, d, kept.plan(m, geom_moved) if moved else None))
        want = full(m, d)
        assert got == want
        touching += bool(want)
    assert 0 < touching < steps
    assert 0 < counting.collisions < steps  # skipped when nothing moved or nothing moved can touch
    assert np.array_equal(m.geom_contype, mujoco.MjModel.from_xml_string(SCENE).geom_contype)  # masks restored


@pytest.mark.parametrize(
    "change",
    [
        lambda xml: xml.replace('type="sphere" size="0.1"', 'type="sphere" size="0.1" contype="1" conaffinity="3"'),
        lambda xml: xml.replace("</worldbody>", '</worldbody><contact><pair geom1="post" geom2="floor"/></contact>'),
    ],
    ids=["contype differs from conaffinity", "explicit pairs"],
)
def test_models_the_masks_cannot_select_for_get_a_full_collision_every_frame(change, monkeypatch):
    counting = CountingMuJoCo()
    monkeypatch.setattr(contacts, "mujoco", counting)
    m = mujoco.MjModel.from_xml_string(change(SCENE))
    d = mujoco.MjData(m)
    kept = Contacts(m)
    assert not kept.reuse
    mujoco.mj_kinematics(m, d)
    for _ in range(3):
        assert listed(*kept.collide(m, d, None)) == full(m, d)
    assert counting.collisions == 3


def test_candidate_pairs_follow_mujocos_filters():
    m = mujoco.MjModel.from_xml_string(
        """
        <mujoco>
          <worldbody>
            <geom name="floor" type="plane" size="1 1 0.1"/>
            <geom name="wall" type="box" size="0.1 1 1" pos="1 0 1"/>
            <body name="upper" pos="0 0 1">
              <joint type="hinge"/><geom name="upper" type="capsule" size="0.05 0.2"/>
              <body name="lower" pos="0 0 -0.4">
                <joint type="hinge"/><geom name="lower" type="capsule" size="0.05 0.2"/>
                <geom name="ghost" type="sphere" size="0.05" contype="0" conaffinity="0"/>
                <body name="tip" pos="0 0 -0.3"><joint type="hinge"/><geom name="tip" type="sphere" size="0.05"/></body>
              </body>
            </body>
          </worldbody>
          <contact><exclude body1="upper" body2="tip"/></contact>
        </mujoco>
        """
    )
    name = {g: m.geom(g).name for g in range(m.ngeom)}
    pairs = {frozenset((name[a], name[b])) for a, b in zip(*(c.tolist() for c in candidate_pairs(m)))}
    # static with static never, a body with its parent never, the excluded pair never, the visual geom never
    assert pairs == {
        frozenset(p)
        for p in [
            ("floor", "upper"),
            ("floor", "lower"),
            ("floor", "tip"),
            ("wall", "upper"),
            ("wall", "lower"),
            ("wall", "tip"),
        ]
    }


def test_every_contact_of_the_workcell_is_between_candidate_pairs_and_kept_contacts_match():
    """On a real episode (grasp, carry, place), the kept list equals a full mj_collision frame after frame,
    and MuJoCo never reports a contact between geoms the filters left out."""
    twin = load_default_grounder(500.0).twin
    m, d = twin.model, twin.data
    candidates = {(int(a), int(b)) for a, b in zip(*candidate_pairs(m))}
    compared = 0
    for k, state in enumerate(run_episode("pick_and_place_mug")):
        twin.compute(state.joint_names, state.joint_position, state.object_poses)
        if k % 5:
            continue
        kept = twin._contacts
        want = full(m, d)
        assert listed(kept._n, kept._geom, kept._dist) == want
        assert all((a, b) in candidates for a, b, _ in want)
        compared += len(want)
    assert compared > 1000


def test_may_touch_keeps_every_pair_the_bounding_spheres_root_test_keeps():
    """The sphere test compares squares (no square root per pair): at the edge of the reach it must never drop
    a pair that sqrt(distance^2) <= radii + margin + 1e-9 keeps, or mj_collision would miss a contact."""
    rng = np.random.default_rng(5)
    xmat = np.tile(np.eye(3).ravel(), (2, 1))
    aabb = np.array([[0, 0, 0, 1.0, 1.0, 1.0]] * 2)  # boxes that always overlap: the sphere test decides
    none = np.zeros(0, dtype=np.int64)
    kept = 0
    for _ in range(20000):
        radii, margin = rng.uniform(0.001, 0.5), rng.choice([0.0, rng.uniform(0.0, 0.05)])
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        edge = radii + margin + 1e-9 + rng.choice([-1.0, 1.0]) * rng.choice([0.0, 1e-17, 1e-16, 1e-15, 1e-12])
        xpos = np.array([rng.normal(size=3), np.zeros(3)])
        xpos[1] = xpos[0] + direction * edge
        dx, dy, dz = (xpos[0] - xpos[1]).tolist()
        root = math.sqrt(dx * dx + dy * dy + dz * dz) <= radii + margin + 1e-9
        reach2 = sphere_reach2(np.array([radii]), margin)
        got = _geomath.may_touch(xpos, xmat, aabb, np.array([0]), np.array([1]), reach2, none, none, margin)
        assert got or not root, (radii, margin, edge)
        kept += root
    assert kept > 5000  # the edge is crossed both ways


def test_may_touch_and_keep_contacts_known_cases():
    xpos = np.array([[0.0, 0, 0], [0.5, 0, 0], [0.0, 0, 0.4]])
    xmat = np.tile(np.eye(3).ravel(), (3, 1))
    aabb = np.array([[0, 0, 0, 0.1, 0.1, 0.1]] * 3, dtype=float)  # cubes of side 0.2 at their geoms' centres
    none = np.zeros(0, dtype=np.int64)
    spheres = (np.array([0]), np.array([1]), sphere_reach2(np.array([0.35]), 0.002))
    assert not _geomath.may_touch(xpos, xmat, aabb, *spheres, none, none, 0.002)  # 0.3 m apart
    wide = (*spheres[:2], sphere_reach2(np.array([0.35]), 0.31))
    assert _geomath.may_touch(xpos, xmat, aabb, *wide, none, none, 0.31)  # within a 0.31 m margin
    near = (np.array([0]), np.array([2]), sphere_reach2(np.array([0.5]), 0.002))  # spheres overlap, boxes 0.2 m apart
    assert not _geomath.may_touch(xpos, xmat, aabb, *near, none, none, 0.002)
    plane = (np.array([2]), np.array([0]))  # geom 2 as a plane at z = 0.4 facing up: the cube at 0 is behind it
    assert _geomath.may_touch(xpos, xmat, aabb, none, none, np.zeros(0), *plane, 0.002)
    flipped = xmat.copy()
    flipped[2] = np.diag([1.0, -1.0, -1.0]).ravel()  # facing down: the cube's top is 0.3 m in front of it
    assert not _geomath.may_touch(xpos, flipped, aabb, none, none, np.zeros(0), *plane, 0.002)

    geom = np.array([[0, 1], [1, 2], [0, 2], [0, 0]], dtype=np.int32)
    dist = np.array([-0.1, -0.2, -0.3, 0.0])
    moved = np.array([False, True, False])
    new_geom, new_dist = np.array([[1, 0]], dtype=np.int32), np.array([-0.05])
    assert _geomath.keep_contacts(geom, dist, 3, moved, 1, new_geom, new_dist) == 2
    assert geom[:2].tolist() == [[0, 2], [1, 0]] and dist[:2].tolist() == [-0.3, -0.05]
    with pytest.raises(ValueError, match="keep_contacts: room for 4 contacts, 5 needed"):
        _geomath.keep_contacts(geom, dist, 2, np.zeros(3, dtype=bool), 3, np.zeros((3, 2), np.int32), np.zeros(3))
    with pytest.raises(ValueError, match="keep_contacts: a contact names a geom the model does not have"):
        _geomath.keep_contacts(np.array([[0, 7]], dtype=np.int32), np.zeros(1), 1, moved, 0, None, None)
    with pytest.raises(ValueError, match="may_touch: a pair names a geom the model does not have"):
        _geomath.may_touch(xpos, xmat, aabb, np.array([0]), np.array([5]), np.array([1.0]), none, none, 0.0)
    with pytest.raises(ValueError, match="may_touch: a pair names a geom the model does not have"):
        _geomath.may_touch(xpos, xmat, aabb, np.array([-1]), np.array([0]), np.array([1.0]), none, none, 0.0)
    every_other = np.array([0, 2, 1, 2])[::2]  # the per-pair loop indexes plain arrays: a strided one is refused
    with pytest.raises(ValueError, match="may_touch: sa: expected a C-contiguous array"):
        _geomath.may_touch(xpos, xmat, aabb, every_other, np.array([1, 2]), np.array([0.1, 0.1]), none, none, 0.0)
    with pytest.raises(ValueError, match="may_touch: array lengths do not match"):
        _geomath.may_touch(xpos, xmat, aabb[:2], *spheres, none, none, 0.0)


def test_may_touch_answers_alike_whichever_pair_it_tests_first():
    """The pair found within reach on the last call is tested first: when it has moved apart, another pair within
    reach still makes the answer yes (and is tested first next time), and none within reach makes it no."""
    xpos = np.array([[0.0, 0, 0], [0.15, 0, 0], [1.0, 0, 0], [1.15, 0, 0]])
    xmat = np.tile(np.eye(3).ravel(), (4, 1))
    aabb = np.array([[0, 0, 0, 0.1, 0.1, 0.1]] * 4, dtype=float)  # cubes of side 0.2: 0 and 1 overlap, 2 and 3 too
    none = np.zeros(0, dtype=np.int64)
    pairs = (np.array([0, 2]), np.array([1, 3]), sphere_reach2(np.full(2, 0.2), 0.002))
    first = np.full(1, -1, dtype=np.int64)
    assert _geomath.may_touch(xpos, xmat, aabb, *pairs, none, none, 0.002, first) and first[0] == 0
    xpos[1] = (0.5, 0.0, 0.0)  # the pair tested first moves apart: the other one still touches
    assert _geomath.may_touch(xpos, xmat, aabb, *pairs, none, none, 0.002, first) and first[0] == 1
    xpos[3] = (1.5, 0.0, 0.0)  # neither does now
    assert not _geomath.may_touch(xpos, xmat, aabb, *pairs, none, none, 0.002, first) and first[0] == 1
    xpos[1] = (0.15, 0.0, 0.0)
    for hint in (5, -7):  # no such pair: none first
        first[0] = hint
        assert _geomath.may_touch(xpos, xmat, aabb, *pairs, none, none, 0.002, first) and first[0] == 0
    with pytest.raises(ValueError, match="may_touch: array lengths do not match"):
        _geomath.may_touch(xpos, xmat, aabb, *pairs, none, none, 0.002, np.zeros(2, dtype=np.int64))


def test_may_touch_marks_every_geom_in_a_pair_within_reach():
    """`near`: every pair is tested (none first, `first` untouched) and the geoms of those within reach marked."""
    xpos = np.array([[0.0, 0, 0], [0.203, 0, 0], [1.0, 0, 0], [1.2015, 0, 0], [2.0, 0, 0], [3.0, 0, 0.104]])
    xmat = np.tile(np.eye(3).ravel(), (6, 1))
    aabb = np.array([[0, 0, 0, 0.1, 0.1, 0.1]] * 6, dtype=float)  # cubes of side 0.2
    none = np.zeros(0, dtype=np.int64)
    first, near = np.full(1, 1, dtype=np.int64), np.ones(6, dtype=bool)
    for margin, marked in ((0.002, [2, 3]), (0.004, [0, 1, 2, 3])):  # 0-1 3 mm apart, 2-3 1.5 mm
        pairs = (np.array([0, 2]), np.array([1, 3]), sphere_reach2(np.full(2, 0.2), margin))
        assert _geomath.may_touch(xpos, xmat, aabb, *pairs, none, none, margin, first, near)
        assert np.flatnonzero(near).tolist() == marked and first[0] == 1
    xpos[3] = (1.205, 0.0, 0.0)  # 5 mm: only 0-1 within 4 mm
    assert _geomath.may_touch(xpos, xmat, aabb, *pairs, none, none, 0.004, first, near)
    assert np.flatnonzero(near).tolist() == [0, 1]
    plane = (np.array([4]), np.array([5]))  # geom 4 a plane at z = 0 facing up, the cube 4 mm above it
    assert _geomath.may_touch(xpos, xmat, aabb, none, none, np.zeros(0), *plane, 0.004, first, near)
    assert np.flatnonzero(near).tolist() == [4, 5]
    assert not _geomath.may_touch(xpos, xmat, aabb, none, none, np.zeros(0), *plane, 0.002, first, near)
    assert not near.any()
    with pytest.raises(ValueError, match="may_touch: array lengths do not match"):
        _geomath.may_touch(xpos, xmat, aabb, *pairs, none, none, 0.002, first, near[:5])


def test_a_plans_near_bounds_reach_twice_the_margin_as_mujocos_contacts_do():
    """MuJoCo reports a pair's contacts out to the sum of its geoms' margins (a 2.5 mm box-plane contact with 2 mm
    margins: the moves of test_collisions_from_c_list_the_contacts_a_full_collision_does find one), so the geoms
    mj_collision from C keeps are those in a pair within twice the (largest) margin, not within the margin."""
    m, d = scene()
    mujoco.mj_forward(m, d)
    assert {c.includemargin for c in d.contact} == {2 * MARGIN}
    plan = Contacts(m).plan(m, np.ones(m.ngeom, dtype=bool))
    assert plan.near_bounds[6] == 2 * MARGIN and plan.bounds[6] == MARGIN
    rsum = m.geom_rbound[plan.bounds[1]] + m.geom_rbound[plan.bounds[2]]
    assert np.array_equal(plan.near_bounds[3], sphere_reach2(rsum, 2 * MARGIN))
    assert [np.array_equal(a, b) for a, b in zip(plan.near_bounds[:8], plan.bounds[:8])] == [1, 1, 1, 0, 1, 1, 0, 1]
    # only the near walk marks the geoms near; each walk keeps its own clearances (its own reach)
    assert plan.bounds[8] is None and plan.near_bounds[8] is not None and plan.near_bounds[9] is not plan.bounds[9]


needs_direct = pytest.mark.skipif(
    getattr(_geomath, "MUJOCO_HEADER", 0) != mujoco.mj_version(), reason="kernels built without this MuJoCo's headers"
)


def direct_contacts(m: mujoco.MjModel, d: mujoco.MjData) -> Contacts:
    """A contact list that collides `d` from C, as the twin's does."""
    calls = twin._direct_calls(m, d)
    assert calls is not None
    return Contacts(m, (d, calls[1]))


@needs_direct
def test_collisions_from_c_list_the_contacts_a_full_collision_does(monkeypatch):
    """The same moves as through the bindings: every frame's list equals a full mj_collision's, none of it through
    the bindings, also when the new contacts outgrow the list (its room cut to the contacts it holds each frame)."""
    counting = CountingMuJoCo()
    monkeypatch.setattr(contacts, "mujoco", counting)
    short = []  # the calls that found no room
    collide_moved = _geomath.collide_moved

    def noting_room(*args):
        n = collide_moved(*args)
        short.append(n < 0)
        return n

    monkeypatch.setattr(_geomath, "collide_moved", noting_room)
    m, d = scene()
    kept = direct_contacts(m, d)
    rng = np.random.default_rng(7)
    free = {name: m.jnt_qposadr[m.body(name).jntadr[0]] for name in ("ball", "brick", "can")}
    mujoco.mj_kinematics(m, d)
    assert listed(*kept.collide(m, d, kept.plan(m, np.ones(m.ngeom, dtype=bool)))) == full(m, d)
    touching = 0
    for _ in range(400):
        moved = move_some(rng, m, d, free)
        geom_moved = np.isin(m.geom_bodyid, [m.body(b).id for b in moved])
        kept._geom, kept._dist = kept._geom[: kept._n].copy(), kept._dist[: kept._n].copy()  # no room to spare
        got = listed(*kept.collide(m, d, kept.plan(m, geom_moved) if moved else None))
        want = full(m, d)
        assert got == want
        touching += bool(want)
    assert touching > 0 and 0 < sum(short) < len(short)
    assert counting.collisions == 0
    assert masks(m) == masks(mujoco.MjModel.from_xml_string(SCENE))  # masks restored


def masks(m: mujoco.MjModel) -> list[list[int]]:
    """The model's contact masks: geoms' contype and conaffinity, bodies' contype and conaffinity."""
    return [a.tolist() for a in (m.geom_contype, m.geom_conaffinity, m.body_contype, m.body_conaffinity)]


@needs_direct
def test_collisions_from_c_leave_out_the_geoms_near_leaves_out():
    """collide_moved runs mj_collision with the geoms `near` leaves out cleared from the masks (and their bodies,
    when all of their geoms are out), the moved ones' contype kept, and every mask restored after."""
    m, d = scene()
    ball = m.jnt_qposadr[m.body("ball").jntadr[0]]
    d.qpos[ball + 2] = 0.1 - MARGIN / 2  # on the floor, within the margin
    mujoco.mj_kinematics(m, d)
    before = masks(m)
    kept = direct_contacts(m, d)
    geom = np.zeros((64, 2), dtype=np.int32)
    moved = m.geom_bodyid == m.body("ball").id
    ball_geom = int(np.flatnonzero(moved)[0])
    floor_and_ball = (m.geom_bodyid == 0) & (m.geom_type == mujoco.mjtGeom.mjGEOM_PLANE) | moved
    want = [c for c in full(m, d) if ball_geom in c[:2]]
    assert len(want) == 1
    for near, found in ((None, want), (floor_and_ball, want), (moved, []), (~moved, [])):
        n = _geomath.collide_moved(kept._direct[1], geom, np.zeros(64), 0, moved, near, True)
        assert [(min(a, b), max(a, b)) for a, b in geom[:n].tolist()] == [c[:2] for c in found]
        assert masks(m) == before


@needs_direct
def test_collisions_from_c_of_another_mjdata_go_through_the_bindings(monkeypatch):
    counting = CountingMuJoCo()
    monkeypatch.setattr(contacts, "mujoco", counting)
    m, d = scene()
    other = mujoco.MjData(m)
    kept = Contacts(m, (other, twin._direct_calls(m, other)[1]))
    mujoco.mj_kinematics(m, d)
    assert listed(*kept.collide(m, d, kept.plan(m, np.ones(m.ngeom, dtype=bool)))) == full(m, d)
    assert counting.collisions == 1


@needs_direct
def test_mujocos_errors_in_calls_from_c_are_raised_on_one_line_with_the_masks_restored():
    """A collision that runs out of MuJoCo's memory is the bindings' FatalError, its first line only, and leaves
    the model's masks as they were; the kinematics' calls report the same way, and work after it."""
    xml = "<mujoco><size memory='60K'/><worldbody>{}</worldbody></mujoco>".format(
        "".join(f"<body pos='0 0 {i * 0.01}'><freejoint/><geom type='box' size='.1 .1 .1'/></body>" for i in range(40))
    )
    m = mujoco.MjModel.from_xml_string(xml)
    m.geom_margin[:] = MARGIN
    d = mujoco.MjData(m)
    before = masks(m)
    kinematics, collision = twin._direct_calls(m, d)
    _geomath.mujoco_call(kinematics)
    kept = Contacts(m, (d, collision))
    with pytest.raises(mujoco.FatalError, match=r"^mj_stackAlloc: out of memory, stack overflow at [^\n]*$"):
        kept.collide(m, d, kept.plan(m, m.geom_bodyid % 2 == 1))  # (every other box moved, some near)
    assert masks(m) == before
    with pytest.raises(mujoco.FatalError, match=r"^mj_stackAlloc: out of memory"):
        _geomath.mujoco_call((collision[0], *kinematics[1:]))  # mj_collision's address, plain
    _geomath.mujoco_call(kinematics)  # MuJoCo's own handler is back: a call that fails raises, one that works works
    with pytest.raises(mujoco.FatalError, match="mj_stackAlloc"):
        mujoco.mj_collision(m, d)


def test_a_twin_calls_mujoco_through_the_bindings_when_the_kernels_lack_its_headers(monkeypatch):
    """Built without MuJoCo's headers (or with another version's), the twin calls mj_kinematics and mj_collision
    through the bindings, and its geometry is the same."""
    states = list(run_episode("pick_and_place_mug"))
    in_c = load_default_grounder(500.0)
    monkeypatch.setattr(_geomath, "MUJOCO_HEADER", 0, raising=False)
    bound = load_default_grounder(500.0)
    assert bound.twin._contacts._direct is None
    for state in states:
        assert in_c.step(state).values == bound.step(state).values


def random_walk(rng: np.random.Generator, ngeom: int, frames: int) -> list[np.ndarray]:
    """Geom positions frame after frame: small steps, now and then a jump (past KEPT_REACH / 2), a geom at the edge
    of a pair's reach, or a NaN."""
    xpos, out = rng.uniform(-0.3, 0.3, size=(ngeom, 3)), []
    for _ in range(frames):
        xpos = xpos + rng.normal(scale=rng.choice([1e-4, 2e-3, 0.03]), size=xpos.shape)
        kind = rng.integers(20)
        if kind == 0:
            xpos[rng.integers(ngeom)] = np.nan
        elif kind == 1:
            xpos = rng.uniform(-0.3, 0.3, size=(ngeom, 3))
        out.append(xpos.copy())
        if kind == 2:
            xpos = np.nan_to_num(xpos, nan=0.0)
    return out


def test_may_touch_answers_alike_with_or_without_kept_candidates():
    """`kept`: only the pairs near their reach when the candidates were taken are tested until a geom has moved
    KEPT_REACH / 2; the answer, the pair written to `first` and the geoms marked in `near` are the ones a walk over
    every pair gives, frame after frame, through small moves, jumps, NaN and a pair list that changes."""
    rng = np.random.default_rng(11)
    ngeom = 12
    xmat = np.tile(np.eye(3).ravel(), (ngeom, 1))
    aabb = np.column_stack([np.zeros((ngeom, 3)), rng.uniform(0.005, 0.05, size=(ngeom, 3))])
    rbound = np.linalg.norm(aabb[:, 3:], axis=1)
    sa, sb = (
        np.array(side, dtype=np.int64) for side in zip(*[(a, b) for a in range(ngeom) for b in range(a + 1, ngeom)])
    )
    plane = np.zeros(0, dtype=np.int64)
    said, passed_over = {True: 0, False: 0}, 0
    for margin in (0.002, 0.05):
        reach2 = sphere_reach2(rbound[sa] + rbound[sb], margin)
        kept = np.full(1 + 3 * ngeom + len(sa), np.nan)
        near_kept = np.full(1 + 3 * ngeom + len(sa), np.nan)
        first, first_kept = np.full(1, -1, dtype=np.int64), np.full(1, -1, dtype=np.int64)
        near, near_with = np.zeros(ngeom, dtype=bool), np.zeros(ngeom, dtype=bool)
        for xpos in random_walk(rng, ngeom, 3000):
            args = (xpos, xmat, aabb, sa, sb, reach2, plane, plane, margin)
            want = _geomath.may_touch(*args, first)
            assert _geomath.may_touch(*args, first_kept, None, kept) == want and first_kept[0] == first[0]
            assert _geomath.may_touch(*args, first, near) == _geomath.may_touch(*args, first, near_with, near_kept)
            assert np.array_equal(near, near_with)
            said[want] += 1
            passed_over += kept[0] < len(sa)  # (candidates taken, fewer than the pairs)
    assert min(said.values()) > 500 and passed_over > 3000
    with pytest.raises(ValueError, match="may_touch: array lengths do not match"):
        _geomath.may_touch(xpos, xmat, aabb, sa, sb, reach2, plane, plane, 0.002, first, None, kept[:-1])
    with pytest.raises(ValueError, match="may_touch: kept: expected a 1-d array of format d"):
        _geomath.may_touch(
            xpos, xmat, aabb, sa, sb, reach2, plane, plane, 0.002, first, None, np.zeros(len(kept), dtype=np.int64)
        )
