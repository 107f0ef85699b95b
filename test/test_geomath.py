"""The C box and rotation kernels (grounding/_geomath.c) against independent numpy formulations and known cases.

The numpy oracles below are the formulations the estimators used before the kernels: the separating-axis
test over all 15 axes, corners moved into a region's frame, Rodrigues' formula. Booleans must agree exactly;
values to rounding (numpy's matmul may sum in another order).
"""

from __future__ import annotations

import array
import bisect
import collections
import dataclasses
import math
import struct
import types

import numpy as np
import pytest

from safety_monitor.frames import FrozenValues, Pose, RobotState, Wrench
from safety_monitor.grounding import _geomath
from safety_monitor.grounding.description import ClosedPast, Gripper, GripperKind
from safety_monitor.grounding.fixtures import object_inside, object_supported_inside
from safety_monitor.grounding.geometry import Box, BoxStack, norm
from safety_monitor.grounding.grounder import Grounder, PredicateFrame
from safety_monitor.grounding.motion import (
    TIME_EPS,
    Track,
    interpolate_rotation,
    point3,
    quat_to_matrix,
    rotation_angle,
)

SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)


def random_box(rng: np.random.Generator, spread: float = 0.1) -> Box:
    rotation = quat_to_matrix(rng.normal(size=4)) if rng.random() < 0.7 else np.eye(3)  # aligned: parallel axes
    return Box(rng.normal(size=3) * spread, rotation, rng.uniform(0.01, 0.1, 3))


def sat_oracle(a: Box, b: Box) -> bool:
    axes = [a.rotation[:, i] for i in range(3)] + [b.rotation[:, i] for i in range(3)]
    axes += [np.cross(u, v) for u in axes[:3] for v in axes[3:6]]
    d = b.center - a.center
    for axis in axes:
        length = np.linalg.norm(axis)
        if length <= 1e-9:
            continue
        x = axis / length
        ra = np.abs(x @ a.rotation) @ a.half
        rb = np.abs(x @ b.rotation) @ b.half
        if abs(x @ d) > ra + rb:
            return False
    return True


def placement_oracle(box: Box, region: Box, margin: float) -> tuple[bool, float]:
    corners = box.center + (SIGNS * box.half) @ box.rotation.T
    local = (corners - region.center) @ region.rotation
    bottom = float(local[:, 2].min())
    footprint = bool(np.all(np.abs(local[:, :2]) <= region.half[:2] + margin))
    return footprint and -region.half[2] - margin <= bottom <= region.half[2], bottom


def rotation_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def test_box_overlap_agrees_with_the_separating_axis_oracle():
    rng = np.random.default_rng(0)
    verdicts = []
    for _ in range(3000):
        a, b = random_box(rng), random_box(rng)
        got = _geomath.box_overlap(a.center, a.rotation, a.half, b.center, b.rotation, b.half)
        assert got == sat_oracle(a, b)
        verdicts.append(got)
    assert 0.2 < np.mean(verdicts) < 0.8  # both answers exercised


def test_box_overlap_known_cases():
    unit = np.full(3, 0.5)
    a = Box(np.zeros(3), np.eye(3), unit)
    touching = Box(np.array([1.0, 0.0, 0.0]), np.eye(3), unit)
    apart = Box(np.array([1.0 + 1e-6, 0.0, 0.0]), np.eye(3), unit)
    assert a.overlaps(touching) and not a.overlaps(apart)
    # two long bars crossing at right angles: only an edge-edge (cross product) axis separates them
    bar = np.array([1.0, 0.05, 0.05])
    x_bar = Box(np.zeros(3), np.eye(3), bar)
    tilted = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # its long axis along y
    assert x_bar.overlaps(Box(np.array([0.0, 0.0, 0.09]), tilted, bar))
    assert not x_bar.overlaps(Box(np.array([0.0, 0.0, 0.11]), tilted, bar))


def test_placement_agrees_with_the_corner_oracle():
    rng = np.random.default_rng(1)
    inside = 0
    for _ in range(3000):
        box = random_box(rng, 0.05)
        region = Box(rng.normal(size=3) * 0.02, quat_to_matrix(rng.normal(size=4)), rng.uniform(0.05, 0.2, 3))
        margin = float(rng.uniform(0.0, 0.05))
        got_inside, got_bottom = _geomath.placement(
            box.center, box.rotation, box.half, region.center, region.rotation, region.half, margin
        )
        want_inside, want_bottom = placement_oracle(box, region, margin)
        assert got_inside == want_inside
        if got_inside:
            inside += 1
            assert got_bottom == pytest.approx(want_bottom, abs=1e-12)
    assert 100 < inside < 2900


def test_placement_known_cases():
    shelf = Box(np.array([0.0, 0.0, 0.5]), np.eye(3), np.array([0.2, 0.2, 0.1]))  # floor at z 0.4
    half = np.full(3, 0.02)
    resting = Box(np.array([0.0, 0.0, 0.42]), np.eye(3), half)
    floating = Box(np.array([0.0, 0.0, 0.5]), np.eye(3), half)
    straddling = Box(np.array([0.2, 0.0, 0.42]), np.eye(3), half)  # half outside the side wall
    far = Box(np.array([5.0, 0.0, 0.0]), np.eye(3), half)
    assert object_supported_inside(resting, shelf, 0.01)
    assert object_inside(floating, shelf, 0.01) and not object_supported_inside(floating, shelf, 0.01)
    assert not object_inside(straddling, shelf, 0.01) and object_inside(straddling, shelf, 0.03)
    assert _geomath.placement(far.center, far.rotation, far.half, shelf.center, shelf.rotation, shelf.half, 0.0) == (
        False,
        math.inf,
    )


def test_interior_reach_is_the_nearest_points_excess_and_the_first_points_distance():
    rng = np.random.default_rng(2)
    for _ in range(200):
        boxes = tuple(random_box(rng) for _ in range(3))
        points = rng.normal(size=(4, 3)) * 0.1
        nearest, distance = BoxStack().reach(boxes, points)
        excess = [np.abs((points - b.center) @ b.rotation) - b.half for b in boxes]  # (point, axis) per box
        np.testing.assert_allclose(nearest, [e.max(axis=1).min() for e in excess], rtol=0, atol=1e-15)
        np.testing.assert_allclose(distance, [np.linalg.norm(np.maximum(e[0], 0.0)) for e in excess], atol=1e-15)
    shelf = Box(np.zeros(3), np.eye(3), np.full(3, 0.1))
    nearest, distance = BoxStack().reach((shelf,), np.array([[0.3, 0.0, 0.0], [0.05, 0.0, 0.0]]))
    assert nearest == [pytest.approx(-0.05)] and distance == [pytest.approx(0.2)]  # the second point is inside
    assert BoxStack().reach((), np.zeros((1, 3))) == ([], [])


def test_rotation_angle_and_interpolation():
    a, b = rotation_z(0.1), rotation_z(0.1 + math.pi / 2)
    assert rotation_angle(a, b) == pytest.approx(math.pi / 2, abs=1e-12)
    np.testing.assert_allclose(interpolate_rotation(a, b, 0.5), rotation_z(0.1 + math.pi / 4), atol=1e-12)
    np.testing.assert_allclose(interpolate_rotation(a, b, 0.0), a, atol=1e-12)
    np.testing.assert_allclose(interpolate_rotation(a, b, 1.0), b, atol=1e-12)
    assert interpolate_rotation(a, a.copy(), 0.3) is a  # no rotation: no unique axis, the nearer end itself
    half_turn = rotation_z(0.1 + math.pi)
    assert interpolate_rotation(a, half_turn, 0.2) is a and interpolate_rotation(a, half_turn, 0.8) is half_turn
    rng = np.random.default_rng(3)
    for _ in range(500):  # the general case against Rodrigues' formula in numpy
        r0, r1, s = quat_to_matrix(rng.normal(size=4)), quat_to_matrix(rng.normal(size=4)), float(rng.random())
        angle = rotation_angle(r0, r1)
        assert angle == pytest.approx(math.acos(np.clip((np.trace(r0.T @ r1) - 1) / 2, -1, 1)), abs=1e-12)
        rel = r0.T @ r1
        if math.sin(angle) < 1e-3:
            continue
        axis = np.array([rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]]) / (2 * math.sin(angle))
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        want = r0 @ (np.eye(3) + math.sin(s * angle) * k + (1 - math.cos(s * angle)) * (k @ k))
        np.testing.assert_allclose(interpolate_rotation(r0, r1, s), want, atol=1e-9)


def test_any_strides_read_the_same_values():
    rng = np.random.default_rng(4)
    r0, r1 = quat_to_matrix(rng.normal(size=4)), quat_to_matrix(rng.normal(size=4))
    assert rotation_angle(r0.T, r1.T) == rotation_angle(np.ascontiguousarray(r0.T), np.ascontiguousarray(r1.T))
    wide = np.zeros((3, 6))
    wide[:, ::2] = r0  # every other column: a strided view
    assert rotation_angle(wide[:, ::2], r1) == rotation_angle(r0, r1)


def test_other_buffers_read_the_same_values_as_numpy_arrays():
    """numpy arrays take the C-API path; any other float64 buffer the buffer protocol's, with the same result."""
    rng = np.random.default_rng(5)
    r0, r1 = quat_to_matrix(rng.normal(size=4)), quat_to_matrix(rng.normal(size=4))
    want = _geomath.rotation_angle(r0, r1)
    assert _geomath.rotation_angle(array.array("d", r0.ravel()), memoryview(r1.ravel())) == want
    out = array.array("d", [0.0] * 9)
    _geomath.interpolate_rotation(r0, r1, 0.25, out)
    np.testing.assert_array_equal(np.frombuffer(out), interpolate_rotation(r0, r1, 0.25).ravel())


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@pytest.mark.parametrize(
    ("call", "error", "says"),
    [
        (
            lambda: _geomath.rotation_angle([1.0] * 9, np.eye(3)),
            TypeError,
            "rotation_angle: a: expected a float64 array",
        ),
        (lambda: _geomath.rotation_angle(np.eye(2), np.eye(3)), ValueError, "expected 9 float64 values, got 4"),
        (lambda: _geomath.rotation_angle(np.eye(3, dtype=np.float32), np.eye(3)), ValueError, "of format f"),
        (lambda: _geomath.box_overlap(np.zeros(3)), TypeError, "takes 6 arguments (1 given)"),
        (
            lambda: _geomath.interpolate_rotation(np.eye(3), rotation_z(1.0), 0.5, np.empty((3, 3))[:, :2]),
            TypeError,
            "interpolate_rotation: out: expected a writable C-contiguous float64 array",
        ),
        (
            lambda: _geomath.interpolate_rotation(np.eye(3), rotation_z(1.0), 0.5, _read_only(np.empty((3, 3)))),
            TypeError,
            "interpolate_rotation: out: expected a writable C-contiguous float64 array",
        ),
    ],
)
def test_bad_arguments_name_the_problem(call, error, says):
    with pytest.raises(error) as caught:
        call()
    assert says in str(caught.value)


def test_entity_gaps_names_a_wrong_array():
    from safety_monitor.grounding.grounder import load_default_grounder

    twin = load_default_grounder(500.0).twin
    args = [
        0,
        None,
        None,
        twin._contact_key,
        None,
        twin.data.geom_xpos,
        twin.data.geom_xmat,
        twin._geom_aabb,
        twin._pair_near.astype(float),  # bool expected
        twin._pair_fresh,
        twin._pair_key,
        twin._pa,
        twin._pb,
        twin._pair_gap,
        twin.margin,
        lambda *a: 0.0,
        twin.model,
        twin.data,
        twin._key_names,
        twin._key_sorted,
        twin._key_gripper,
        [None, None],
    ]
    with pytest.raises(ValueError, match="entity_gaps: pair_near: expected a 1-d array of format"):
        _geomath.entity_gaps(*args)
    args[8] = twin._pair_near
    args[10] = twin._pair_key[:-1]
    with pytest.raises(ValueError, match="entity_gaps: array lengths do not match the model"):
        _geomath.entity_gaps(*args)
    args[10] = twin._pair_key
    gaps, gripper, pairs = _geomath.entity_gaps(*args)  # no contacts, no pair near yet: nothing
    assert (gaps, gripper, pairs) == ({}, {}, [])
    address, model, data = twin._measure
    args[15:18] = [address, 0, data]
    with pytest.raises(ValueError, match="entity_gaps: measure, model and data must be non-null addresses"):
        _geomath.entity_gaps(*args)
    args[15:18] = [address, twin.model, data]  # an address expected, not the MjModel
    with pytest.raises(TypeError):
        _geomath.entity_gaps(*args)
    args[15:18] = [address, model, data]
    moved = np.arange(4, dtype=np.int64)
    args[4] = (moved, twin._pa[:4], twin._pb[:8:2], twin._pair_rbound[:4])  # a strided view among the affected
    with pytest.raises(ValueError, match="entity_gaps: affected sb: expected a C-contiguous array"):
        _geomath.entity_gaps(*args)
    args[4] = (moved - 5, twin._pa[:4], twin._pb[:4], twin._pair_rbound[:4])  # a pair index below 0
    with pytest.raises(ValueError, match="entity_gaps: an affected pair is out of range"):
        _geomath.entity_gaps(*args)
    kept = np.full(1 + 3 * twin.model.ngeom + 4, np.nan)
    args[4] = (moved, twin._pa[:4], twin._pb[:4], twin._pair_rbound[:4], kept[:-1])  # kept for other pairs
    with pytest.raises(ValueError, match="entity_gaps: affected kept's length does not match"):
        _geomath.entity_gaps(*args)
    args[4] = (moved, twin._pa[:4], twin._pb[:4], twin._pair_rbound[:4], kept.astype(np.float32))
    with pytest.raises(ValueError, match="entity_gaps: affected kept: expected a 1-d array of format d"):
        _geomath.entity_gaps(*args)
    for _ in range(2):  # candidates taken, then holding: a pair index out of range is caught, and they are dropped
        args[4] = (moved, twin._pa[:4], twin._pb[:4], twin._pair_rbound[:4], kept)
        _geomath.entity_gaps(*args)
        args[4] = (moved + len(twin._pa), twin._pa[:4], twin._pb[:4], twin._pair_rbound[:4], kept)
        with pytest.raises(ValueError, match="entity_gaps: an affected pair is out of range"):
            _geomath.entity_gaps(*args)
        assert math.isnan(kept[0])  # (a walk cut short: candidates taken again)
    args[4] = None
    args[8] = np.ones_like(twin._pair_near)  # every pair near and not yet measured: each is measured in C
    args[9] = np.zeros_like(twin._pair_fresh)
    args[12] = np.full_like(twin._pb, twin.model.ngeom)  # ... so a geom the model lacks must be caught first
    with pytest.raises(ValueError, match="entity_gaps: a measured pair names a geom the model does not have"):
        _geomath.entity_gaps(*args)


def test_entity_gaps_finds_a_near_pair_wherever_its_flag_lies():
    """The walk reads the near flags eight at a time: a lone near pair first, last or at either end of a group
    of eight is measured all the same (here: its kept distance)."""
    from safety_monitor.grounding.grounder import load_default_grounder

    twin = load_default_grounder(500.0).twin
    npairs = len(twin._pa)
    for i in sorted({0, 7, 8, 15, npairs - 9, npairs - 8, npairs - 1}):
        near, fresh = np.zeros(npairs, dtype=bool), np.zeros(npairs, dtype=bool)
        near[i] = fresh[i] = True
        measured = np.full(npairs, 5.0)
        measured[i] = 0.001
        gaps, _, pairs = _geomath.entity_gaps(
            0, None, None, twin._contact_key, None, twin.data.geom_xpos, twin.data.geom_xmat, twin._geom_aabb,
            near, fresh, twin._pair_key, twin._pa, twin._pb, measured, twin.margin, *twin._measure,
            twin._key_names, twin._key_sorted, twin._key_gripper, [None, None],
        )  # fmt: skip
        a, b = twin._key_names[twin._pair_key[i]]
        assert gaps == {a: {b: 0.001}, b: {a: 0.001}} and [p[2] for p in pairs] == [0.001], i


def test_entity_gaps_answers_alike_for_models_past_its_stack_room():
    """A model of up to 64 geoms and 1024 entity-pair keys keeps its bounds and keys on the stack, a larger one
    on the heap: padded with far geoms and unused keys past both, the twin's frame gives the same maps."""
    from safety_monitor.grounding.grounder import load_default_grounder
    from safety_monitor.mujoco_gl import mujoco
    from safety_monitor.sim.runner import run_episode

    twin = load_default_grounder(500.0).twin
    state = next(iter(run_episode("pick_and_place_mug")))
    twin.compute(state.joint_names, state.joint_position, state.object_poses)
    m, d = twin.model, twin.data
    extra = 70 - m.ngeom
    everything = np.arange(len(twin._pa), dtype=np.int64)
    affected = (everything, twin._pa, twin._pb, twin._pair_rbound)

    def gaps(xpos, xmat, aabb, contact_key, key_names, key_sorted, key_gripper):
        near, fresh = np.zeros_like(twin._pair_near), np.zeros_like(twin._pair_fresh)
        return _geomath.entity_gaps(
            d.ncon, d.contact.geom, d.contact.dist, contact_key, affected, xpos, xmat, aabb, near, fresh,
            twin._pair_key, twin._pa, twin._pb, np.zeros(len(twin._pa)), twin.margin, *twin._measure, key_names,
            key_sorted, key_gripper, [None, None],
        )  # fmt: skip

    mujoco.mj_collision(m, d)
    small = gaps(
        d.geom_xpos, d.geom_xmat, twin._geom_aabb, twin._contact_key, twin._key_names, twin._key_sorted,
        twin._key_gripper,
    )  # fmt: skip
    same = 5000  # two geoms of one entity: a key past the padded ones too
    contact_key = np.full((m.ngeom + extra, m.ngeom + extra), same, dtype=np.int64)
    contact_key[: m.ngeom, : m.ngeom] = np.where(twin._contact_key == len(twin._key_names), same, twin._contact_key)
    unused = 1100 - len(twin._key_names)
    large = gaps(
        np.vstack([d.geom_xpos, np.full((extra, 3), 1e3)]),
        np.vstack([d.geom_xmat, np.tile(np.eye(3).ravel(), (extra, 1))]),
        np.vstack([twin._geom_aabb, np.zeros((extra, 6))]),
        contact_key,
        twin._key_names + [("x", "y")] * unused,
        twin._key_sorted + [("x", "y")] * unused,
        twin._key_gripper + [()] * unused,
    )
    assert small[0] and large == small


def test_entity_gaps_leaves_unmeasured_only_a_pair_that_cannot_lower_its_key():
    """Of two measured pairs of one entity pair (the palm against the mug's body, then its handle), the second is
    measured only while its geoms' bounds lie within the first's gap: turned and moved about the palm, the mug's
    gap is always the smaller of the two measurements, whichever part faces the palm, and the handle is left
    unmeasured where the body is nearer by more than the bounds' reach."""
    from safety_monitor.grounding.grounder import load_default_grounder
    from safety_monitor.mujoco_gl import mujoco
    from safety_monitor.sim.runner import run_episode

    twin = load_default_grounder(500.0).twin
    state = next(iter(run_episode("pick_and_place_mug")))
    twin.compute(state.joint_names, state.joint_position, state.object_poses)
    m, d = twin.model, twin.data
    palm, body, handle = (m.geom(name).id for name in ("palm", "mug_body", "mug_handle"))
    pairs = [int(np.flatnonzero((twin._pa == palm) & (twin._pb == g))[0]) for g in (body, handle)]
    assert pairs[0] < pairs[1]  # the body's pair is measured first
    measured = []

    def measure(*args):
        measured.append(args[3])
        return mujoco.mj_geomDistance(*args)

    at = twin._object_qpos["mug"]
    handle_nearer = handle_skipped = 0
    for angle in np.linspace(0.0, 2 * math.pi, 16, endpoint=False):
        for offset in (0.06, 0.08, 0.1):
            d.qpos[at : at + 3] = d.geom_xpos[palm] + (offset, 0.0, 0.0)
            d.qpos[at + 3 : at + 7] = (math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2))
            mujoco.mj_kinematics(m, d)
            near, fresh = np.zeros_like(twin._pair_near), np.zeros_like(twin._pair_fresh)
            near[pairs] = True
            measured.clear()
            gaps, _, _ = _geomath.entity_gaps(
                0, None, None, twin._contact_key, None, d.geom_xpos, d.geom_xmat, twin._geom_aabb, near, fresh,
                twin._pair_key, twin._pa, twin._pb, np.zeros(len(twin._pa)), twin.margin, measure, m, d,
                twin._key_names, twin._key_sorted, twin._key_gripper, [None, None],
            )  # fmt: skip
            each = [mujoco.mj_geomDistance(m, d, palm, g, twin.margin, None) for g in (body, handle)]
            expected = min(each)
            assert gaps.get("hand", {}).get("mug", twin.margin) == expected, (angle, offset)
            handle_nearer += each[1] < each[0]
            handle_skipped += handle not in measured
    assert handle_nearer and handle_skipped


@pytest.mark.parametrize(
    ("position", "quaternion", "usable"),
    [
        ([0.1, -0.2, 0.3], [1.0, 0.0, 0.0, 0.0], True),
        ([0.1, math.nan, 0.3], [1.0, 0.0, 0.0, 0.0], False),
        ([0.1, 0.2, 0.3], [math.inf, 0.0, 0.0, 0.0], False),
        ([1e308, 1e308, 0.0], [1.0, 0.0, 0.0, 0.0], False),  # finite values whose sum overflows: not usable
        ([0.1, 0.2, 0.3], [0.0, 0.0, 0.0, 0.0], False),
        ([0.1, 0.2, 0.3], [0.0, 1e-7, 0.0, 0.0], False),  # |q|^2 = 1e-14: no orientation
    ],
)
def test_pose_finite(position, quaternion, usable):
    assert _geomath.pose_finite(np.array(position), np.array(quaternion)) is usable
    assert _geomath.pose_usable(Pose(np.array(position), np.array(quaternion))) is usable


@pytest.mark.parametrize(
    "pose",
    [
        Pose([0.1, 0.2, 0.3], [1.0, 0.0, 0.0, 0.0]),  # lists
        Pose(np.zeros(3, dtype=np.float32), np.array([1.0, 0, 0, 0], dtype=np.float32)),
        Pose(np.zeros((1, 3)), np.array([1.0, 0.0, 0.0, 0.0])),  # the right count in the wrong shape
        Pose(np.zeros((3, 2))[:, 0], np.array([1.0, 0.0, 0.0, 0.0])),  # strided
        Pose(np.zeros(4), np.array([1.0, 0.0, 0.0, 0.0])),
    ],
)
def test_pose_usable_leaves_every_pose_but_flat_float64_arrays_to_the_general_path(pose):
    """The one-call check takes only what it can read as it is; the Grounder's general path (shapes checked,
    values converted) decides the rest, so a pose's usability does not depend on which path saw it."""
    with pytest.raises(TypeError, match="pose_usable: position and quaternion are not 1-D float64 arrays"):
        _geomath.pose_usable(pose)
    with pytest.raises(AttributeError):
        _geomath.pose_usable(object())


def test_norm3_is_the_plain_sum_under_the_root_and_other_vectors_go_through_numpy():
    rng = np.random.default_rng(6)
    for v in rng.normal(size=(200, 3)) * 50:
        x, y, z = v.tolist()
        assert _geomath.norm3(v) == math.sqrt(x * x + y * y + z * z)
    assert _geomath.norm3(np.array([[3.0], [4.0], [12.0]])[:, 0]) == 13.0  # strided
    assert norm(np.array([3.0, 4.0])) == 5.0 and norm([0.0, 3.0, 4.0]) == 5.0  # not a float64 3-vector array
    with pytest.raises(ValueError, match="norm3: v: expected 3 float64 values"):
        _geomath.norm3(np.zeros(4))


def test_qpos_changed_compares_bits_and_keeps_the_new_ones():
    last = np.full(4, -1, dtype=np.int64)
    qpos = np.array([0.0, 1.0, math.nan, 2.0])
    assert _geomath.qpos_changed(qpos, last) == b"\x01\x01\x01\x01" and last.tolist() == qpos.view(np.int64).tolist()
    qpos[0], qpos[3] = -0.0, 2.5  # -0.0 is another bit pattern; NaN stays the same bits
    assert _geomath.qpos_changed(qpos, last) == (np.array([True, False, False, True])).tobytes()
    assert _geomath.qpos_changed(qpos, last) == bytes(4)
    with pytest.raises(ValueError, match="qpos_changed: qpos and last_bits differ in length"):
        _geomath.qpos_changed(qpos, last[:3])


def test_views_take_an_equivalent_type_number_and_refuse_swapped_bytes():
    """A view kind matches its exact numpy type number first, then any equivalent one (int64 as long long);
    a float64 array in the other byte order is no native double."""
    qpos = np.array([0.0, 1.0])
    last = np.full(2, -1, dtype=np.longlong)  # int64 under another type number than np.int64's on Linux
    assert _geomath.qpos_changed(qpos, last) == b"\x01\x01" and last.tolist() == qpos.view(np.int64).tolist()
    swapped = qpos.astype(qpos.dtype.newbyteorder())
    with pytest.raises(ValueError, match="qpos_changed: qpos: expected a 1-d array of format d"):
        _geomath.qpos_changed(swapped, np.full(2, -1, dtype=np.int64))


def test_place_objects_writes_poses_and_parks_the_rest():
    from safety_monitor.frames import Pose

    qpos = np.zeros(16)
    slots = (("cup", 1), ("box", 9))
    parked = {"cup": np.arange(7.0), "box": np.arange(7.0) + 10}
    _geomath.place_objects(qpos, slots, {"cup": Pose(np.array([1.0, 2, 3]), np.array([1.0, 0, 0, 0]))}, parked)
    assert qpos.tolist() == [0, 1, 2, 3, 1, 0, 0, 0, 0, *range(10, 17)]
    with pytest.raises(
        TypeError, match="place_objects: position: expected a float64 array, got list"
    ):  # the twin's cue
        _geomath.place_objects(qpos, slots, {"cup": Pose([1.0, 2, 3], [1.0, 0, 0, 0])}, parked)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="place_objects: address 12 is outside qpos"):
        _geomath.place_objects(qpos, (("cup", 12),), {}, parked)


def test_place_objects_reads_each_pose_field_as_getattr_does():
    """The fields are read from the pose's __dict__ only where getattr would read them there: a class attribute
    (a property), a __getattr__, a class changed after its first pose was read, or a field missing from the
    __dict__ are read through getattr."""

    class Plain:
        def __init__(self, position, quaternion):
            self.position, self.quaternion = position, quaternion

    class Hooked:
        def __getattr__(self, name):
            return np.full(3 if name == "position" else 4, 2.0)

    class Lacking(Plain):
        def __init__(self):
            self.position = np.full(3, 3.0)

        quaternion = np.full(4, 4.0)  # (a class attribute)

    qpos, slots, parked = np.zeros(7), (("cup", 0),), {"cup": np.zeros(7)}

    def placed(pose):
        _geomath.place_objects(qpos, slots, {"cup": pose}, parked)
        return qpos.tolist()

    assert placed(Plain(np.full(3, 1.0), np.full(4, 0.5))) == [1.0] * 3 + [0.5] * 4
    assert placed(Hooked()) == [2.0] * 7
    assert placed(Lacking()) == [3.0] * 3 + [4.0] * 4
    pose = Plain(np.full(3, 1.0), np.full(4, 0.5))
    assert placed(pose) == [1.0] * 3 + [0.5] * 4
    Plain.position = property(lambda self: np.full(3, 9.0))  # a data descriptor now wins over the __dict__
    assert placed(pose) == [9.0] * 3 + [0.5] * 4
    del Plain.position
    assert placed(pose) == [1.0] * 3 + [0.5] * 4
    del pose.quaternion
    with pytest.raises(AttributeError, match="quaternion"):
        placed(pose)


def test_body_box_places_a_body_fixed_box_in_new_read_only_arrays():
    rng = np.random.default_rng(3)
    xpos = rng.normal(size=(3, 3))
    xmat = np.array([np.linalg.qr(rng.normal(size=(3, 3)))[0].ravel() for _ in range(3)])
    local = np.array([0.1, -0.2, 0.05])
    center, rotation = _geomath.body_box(xpos, xmat, 2, local)
    np.testing.assert_allclose(center, xpos[2] + xmat[2].reshape(3, 3) @ local, rtol=0, atol=1e-15)
    assert np.array_equal(rotation, xmat[2].reshape(3, 3)) and rotation.shape == (3, 3)
    assert not center.flags.writeable and not rotation.flags.writeable
    assert _geomath.body_box(xpos, xmat, 2, local)[0] is not center  # a new box each call
    with pytest.raises(ValueError, match="body_box: no body 3 in xpos"):
        _geomath.body_box(xpos, xmat, 3, local)


def test_site_frame_copies_the_site_pose_and_gathers_the_gripper_points():
    site_pos, site_rot = np.array([0.1, 0.2, 0.3]), np.arange(9.0).reshape(3, 3)
    geom_xpos = np.arange(15.0).reshape(5, 3)
    position, rotation, points = _geomath.site_frame(site_pos, site_rot, geom_xpos, np.array([4, 1]))
    assert position.tolist() == site_pos.tolist() and np.array_equal(rotation, site_rot)
    assert points.tolist() == [site_pos.tolist(), geom_xpos[4].tolist(), geom_xpos[1].tolist()]
    site_pos[0] = 9.0  # MjData's arrays change next frame: the frame keeps its own
    assert position[0] == 0.1 and position.flags.writeable
    with pytest.raises(ValueError, match="site_frame: a finger geom the model does not have"):
        _geomath.site_frame(site_pos, site_rot, geom_xpos, np.array([5]))


def test_relative_rotation_and_compose_pose_sum_in_a_fixed_order_on_every_machine():
    """Plain left-to-right sums of products, never fused: the bits do not depend on the CPU's BLAS kernel
    (numpy's matmul picks one at run time), and agree with numpy's products to rounding."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        a, b = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
        p, q = rng.normal(size=3), rng.normal(size=3)
        A, B = a.tolist(), b.tolist()
        want = [[A[0][i] * B[0][j] + A[1][i] * B[1][j] + A[2][i] * B[2][j] for j in range(3)] for i in range(3)]
        got = _geomath.relative_rotation(a, b)
        assert got.tolist() == want and np.allclose(got, a.T @ b, rtol=0, atol=1e-12)
        position, rotation = _geomath.compose_pose(p, a, q, b)
        P, Q = p.tolist(), q.tolist()
        assert position.tolist() == [P[i] + (A[i][0] * Q[0] + A[i][1] * Q[1] + A[i][2] * Q[2]) for i in range(3)]
        assert rotation.tolist() == [
            A[i][0] * B[0][j] + A[i][1] * B[1][j] + A[i][2] * B[2][j] for i in range(3) for j in range(3)
        ]
        assert np.allclose(position, p + a @ q, rtol=0, atol=1e-12) and np.allclose(
            rotation, (a @ b).ravel(), atol=1e-12
        )
    transposed = np.asfortranarray(np.eye(3))  # any strides
    assert _geomath.relative_rotation(transposed, np.eye(3)).tolist() == np.eye(3).tolist()
    with pytest.raises(ValueError, match="relative_rotation: b: expected 9 float64 values"):
        _geomath.relative_rotation(np.eye(3), np.eye(2))
    with pytest.raises(TypeError, match="compose_pose: position: expected a float64 array"):
        _geomath.compose_pose("origin", np.eye(3), np.zeros(3), np.eye(3))


def test_box_corners_and_to_local_sum_in_a_fixed_order_on_every_machine():
    rng = np.random.default_rng(12)
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
    for _ in range(100):
        rotation = quat_to_matrix(rng.normal(size=4))
        box = Box(rng.normal(size=3), rotation, rng.uniform(0.01, 0.5, size=3))
        c, r = box.center.tolist(), rotation.tolist()
        want = []
        for s in signs.tolist():
            v = [s[j] * h for j, h in enumerate(box.half.tolist())]
            want.append([c[i] + (v[0] * r[i][0] + v[1] * r[i][1] + v[2] * r[i][2]) for i in range(3)])
        corners = box.corners()
        assert corners.tolist() == want and not corners.flags.writeable
        assert np.allclose(corners, box.center + (signs * box.half) @ rotation.T, rtol=0, atol=1e-12)
        point = rng.normal(size=3)
        assert np.allclose(box.to_local(point), (point - box.center) @ rotation, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="box_corners: expected 3 float64 values"):
        _geomath.box_corners(np.zeros(3), np.eye(3), np.zeros(2))


def _row_beyond_oracle(row, names, robot, index, limits):
    """The rule in Python: unknown unless a robot joint's value is there and finite in an incomplete row."""
    values = list(row)
    if not (len(values) >= names and math.isfinite(sum(values))) and (
        robot is None or any(i >= len(values) or not math.isfinite(values[i]) for i in robot)
    ):
        return -1
    return int(any(abs(values[i]) > lim for i, lim in zip(index, limits)))


def test_row_beyond_agrees_with_the_rule_on_short_rows_nan_values_and_missing_robot_joints():
    rng = np.random.default_rng(11)
    seen = {-1: 0, 0: 0, 1: 0}
    for _ in range(3000):
        names = int(rng.integers(3, 9))
        row = rng.normal(0.0, 1.0, int(rng.integers(names - 2, names + 2)))
        if rng.random() < 0.3:
            row[rng.integers(len(row))] = rng.choice([np.nan, np.inf, -np.inf])
        robot = None if rng.random() < 0.1 else np.arange(names - 1, dtype=np.intp)
        readable = min(names - 1, len(row))
        index = np.array(sorted(rng.choice(readable, min(2, readable), replace=False)), dtype=np.intp)
        limits = rng.uniform(0.5, 2.0, len(index))
        got = _geomath.row_beyond(row, names, robot, index, limits)
        assert got == _row_beyond_oracle(row, names, robot, index, limits)
        seen[got] += 1
    assert min(seen.values()) > 100  # unknown, within and beyond each drawn often


def test_named_outside_judges_as_python_compares_and_names_a_missing_joint():
    rng = np.random.default_rng(13)
    names = ("a", "b", "c", "d")
    seen = {False: 0, True: 0}
    for _ in range(2000):
        values = dict(zip(names, rng.normal(0.0, 1.0, 4).tolist()))
        if rng.random() < 0.1:
            values[names[rng.integers(4)]] = float(rng.choice([np.nan, np.inf, -np.inf]))
        lower, upper = rng.uniform(-3.0, -0.5, 4), rng.uniform(0.5, 3.0, 4)
        lower[rng.integers(4)] = -np.inf
        want = any(not lo <= values[n] <= hi for n, lo, hi in zip(names, lower.tolist(), upper.tolist()))
        got = _geomath.named_outside(values, names, lower, upper)
        assert got is want
        assert _geomath.named_outside(types.MappingProxyType(values), names, lower, upper) is want  # not a dict
        seen[got] += 1
    assert min(seen.values()) > 300
    with pytest.raises(KeyError, match="'e'"):
        _geomath.named_outside({"a": 0.0}, ("a", "e"), np.full(2, -1.0), np.full(2, 1.0))


def test_joint_jumps_gather_as_numpy_indexing_does_from_strided_rows_and_name_a_bad_index():
    rng = np.random.default_rng(14)
    for _ in range(200):
        block = rng.normal(size=(3, 9))
        row = block[int(rng.integers(3))] if rng.random() < 0.5 else block[:, int(rng.integers(9))]  # strided too
        index = rng.integers(0, len(row), int(rng.integers(0, 6)))
        out = np.full(len(index), np.nan)
        assert _geomath.joint_jumps(row, index, out, 1.0, None, None, np.ones(len(index))) is None  # nothing to judge
        assert out.tolist() == row[index].tolist()
    rates = np.ones(2)
    with pytest.raises(IndexError, match="joint_jumps: an index is outside the row"):
        _geomath.joint_jumps(np.zeros(3), np.array([0, 3]), np.empty(2), 1.0, None, None, rates)
    with pytest.raises(ValueError, match="joint_jumps: index, current, previous and rates differ in length"):
        _geomath.joint_jumps(np.zeros(3), np.array([0, 1]), np.empty(3), 1.0, None, None, rates)
    with pytest.raises(ValueError, match="joint_jumps: index, current, previous and rates differ in length"):
        _geomath.joint_jumps(np.zeros(3), np.array([0, 1]), np.empty(2), 1.0, np.zeros(3), 0.0, rates)
    with pytest.raises(TypeError):  # a list: the caller converts it
        _geomath.joint_jumps([0.0, 1.0], np.array([0]), np.empty(1), 1.0, None, None, np.ones(1))


def test_joint_jumps_judge_as_numpy_does_with_one_stamp_or_one_per_joint():
    rng = np.random.default_rng(12)
    rates = np.array([2.0, 1.0, 4.0])
    index = np.array([2, 0, 1])
    for _ in range(2000):
        row, previous = rng.normal(0.0, 0.01, 3), rng.normal(0.0, 0.01, 3)
        row[rng.integers(3)] = np.nan if rng.random() < 0.1 else row[0]
        times = 1.002 if rng.random() < 0.5 else 1.0 + rng.uniform(0.0, 0.004, 3)
        before = 1.0 if rng.random() < 0.5 else rng.uniform(0.996, 1.0, 3)
        current = row[index]
        step, allowed = np.abs(current - previous), rates * (times - before)
        want = tuple((k, float(step[k]), float(allowed[k])) for k in np.flatnonzero(step > allowed).tolist())
        out = np.empty(3)
        assert _geomath.joint_jumps(row, index, out, times, previous, before, rates) == want
        assert out.tobytes() == current.tobytes()
    with pytest.raises(ValueError, match="joint_jumps: times: expected 3 stamps, got 2"):
        _geomath.joint_jumps(row, index, out, np.zeros(2), previous, 1.0, rates)


def _usable_poses_oracle(objects, given, ages, limit, fallback):
    """The Grounder's pass over the objects as it was written in Python."""
    if not (given.keys() <= set(objects) and ages.keys() <= set(objects)):
        return None
    stale, usable, usable_ages = {}, {}, {}
    for o in objects:
        pose, age = given.get(o), float(ages.get(o, 0.0))
        if pose is None:
            stale[f"object_pose/{o}"] = math.inf
        elif not math.isfinite(age) or age > limit:
            stale[f"object_pose/{o}"] = age if math.isfinite(age) else math.inf
        else:
            try:
                ok = _geomath.pose_usable(pose)
            except TypeError:
                ok = fallback(pose)
            if ok:
                usable[o], usable_ages[o] = pose, age
    return usable, usable_ages, stale


def test_usable_poses_sorts_each_object_as_the_grounder_did_in_python():
    """Missing, old, NaN-aged, NaN and list poses, ages of several number types: the same usable poses and
    ages and the same stale entries, in the objects' order; None when a pose or age names another object."""
    rng = np.random.default_rng(13)
    objects = ("mug", "plate", "cube", "bin")
    keys = tuple(f"object_pose/{o}" for o in objects)
    asked = []

    def fallback(pose):
        asked.append(pose)
        return Grounder._pose_ok(pose)

    for _ in range(500):
        given, ages = {}, {}
        for o in objects:
            if rng.random() < 0.8:
                position, quaternion = rng.normal(size=3), rng.normal(size=4)
                if rng.random() < 0.1:
                    position[1] = np.nan
                pose = (
                    Pose(position.tolist(), quaternion.tolist()) if rng.random() < 0.1 else Pose(position, quaternion)
                )
                given[o] = pose
            if rng.random() < 0.8:
                kinds = [rng.uniform(0.0, 0.3), math.inf, math.nan, 0, np.float32(0.05), np.float64(0.25), True]
                ages[o] = kinds[rng.integers(len(kinds))]
        if rng.random() < 0.05:
            ages["banana"] = 0.1
        stale: dict[str, float] = {}
        got = _geomath.usable_poses(objects, keys, given, ages, 0.2, stale, fallback)
        want = _usable_poses_oracle(objects, given, ages, 0.2, Grounder._pose_ok)
        if want is None:
            assert got is None
            continue
        usable, usable_ages, want_stale = want
        assert got is not None
        assert list(got[0].items()) == list(usable.items())
        assert list(got[1].items()) == list(usable_ages.items())
        assert all(type(age) is float for age in got[1].values())
        assert list(stale.items()) == list(want_stale.items())
    assert asked and all(isinstance(p.position, list) for p in asked)  # only poses it cannot read itself
    with pytest.raises(TypeError, match="usable_poses: objects and stale_keys must be tuples of one length"):
        _geomath.usable_poses(objects, keys[:2], {}, {}, 0.2, {}, fallback)


def test_named_values_builds_the_dict_dict_zip_would_and_says_whether_every_value_is_finite():
    names = ("a", "b", "a", "c")
    values = np.array([1.0, 2.0, 3.0, 4.0])
    assert _geomath.named_values(names, values) == (dict(zip(names, values.tolist())), True)
    assert _geomath.named_values(list(names), values[::-1].copy())[0] == {"a": 2.0, "b": 3.0, "c": 1.0}
    assert _geomath.named_values(names[:2], np.array([[0.0, 9.0], [np.inf, 9.0]])[:, 0]) == (
        {"a": 0.0, "b": math.inf},
        False,
    )
    with pytest.raises(ValueError, match="named_values: 4 names but 3 values"):
        _geomath.named_values(names, values[:3])
    with pytest.raises(TypeError, match="named_values: values: expected a numpy array"):
        _geomath.named_values(names, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="named_values: values: expected a 1-d array of format d"):
        _geomath.named_values(names, values.astype(np.float32))


def test_set_joints_writes_positions_then_followers_from_their_leaders_as_python_sums():
    rng = np.random.default_rng(14)
    pair = np.array([[5, 1], [6, 5]], dtype=np.int64)  # 6 follows 5, which follows 1: set in that order
    poly = rng.normal(size=(2, 7))
    for skip in (False, True):
        qpos = rng.normal(size=8)
        before = qpos.copy()
        positions = rng.normal(size=4)
        positions[2] = np.nan
        src, adr = np.array([3, 2, 0], dtype=np.int64), np.array([1, 2, 4], dtype=np.int64)
        _geomath.set_joints(qpos, positions, src, adr, skip, pair, poly)
        want = before.copy()
        want[1], want[4] = positions[3], positions[0]
        want[2] = before[2] if skip else np.nan
        for (follower, leader), (ref_f, ref_l, c0, c1, c2, c3, c4) in zip(pair.tolist(), poly.tolist()):
            y = float(want[leader]) - ref_l
            want[follower] = ref_f + c0 + y * (c1 + y * (c2 + y * (c3 + y * c4)))
        assert qpos.tobytes() == want.tobytes()
    no_followers = (np.empty((0, 2), dtype=np.int64), np.empty((0, 7)))
    with pytest.raises(IndexError, match="set_joints: a joint index is outside the positions or qpos"):
        _geomath.set_joints(qpos, positions, np.array([4]), np.array([0]), False, *no_followers)
    with pytest.raises(TypeError, match="set_joints: positions: expected a numpy array"):
        _geomath.set_joints(qpos, positions.tolist(), src, adr, False, *no_followers)


def test_vector3_and_point3_give_the_floats_numpy_gives():
    for v in (np.array([0.1, -2.0, 3e300]), np.arange(6.0)[::2], np.array([[1.0], [2.0], [3.0]])[:, 0]):
        assert _geomath.vector3(v) == tuple(v.tolist()) and all(type(x) is float for x in _geomath.vector3(v))
    same = (0.1, 0.2, 0.3)
    assert _geomath.vector3(same) is same  # the tracks' own tuples pass as they are
    for other in ([1.0, 2.0, 3.0], (1, 2, 3), np.array([1, 2, 3]), np.array([1.0, 2.0, 3.0], dtype=np.float32)):
        with pytest.raises((TypeError, ValueError), match="vector3"):
            _geomath.vector3(other)
        assert point3(other) == tuple(np.asarray(other, dtype=float).tolist())
        assert all(type(x) is float for x in point3(other))


def test_a_track_drops_old_samples_as_the_bisection_rule_does():
    """More than 64 samples older than the horizon: all but the newest of them are dropped, at the sample that
    makes them 65 (asked without the bisection first), whatever the spacing of the samples."""
    rng = np.random.default_rng(15)
    track, times, t = Track(0.05), [], 0.0
    for _ in range(3000):
        t += float(rng.choice([0.0005, 0.002, 0.01, 0.03]))
        assert track.add(t, rng.normal(size=3), np.eye(3))
        times.append(t)
        cut = bisect.bisect_right(times, t - 0.05) - 1
        if cut > 64:
            del times[:cut]
        assert track.times == times and len(track.positions) == len(track.rotations) == len(times)
    assert not track.add(t, np.zeros(3), np.eye(3))  # a repeat of the newest measurement


def _python_add(track: Track, t: float, position: object, rotation: np.ndarray) -> bool:
    """Track.add as motion.py wrote it in Python before `_geomath.track_add` (the reference), on its lists."""
    times = track.times
    if times and t <= times[-1] + TIME_EPS:
        return False
    times.append(t)
    track.positions.append(point3(position))  # type: ignore[arg-type]
    track.rotations.append(rotation)
    if len(times) > 65 and times[65] <= t - track.horizon:
        cut = bisect.bisect_right(times, t - track.horizon) - 1
        del times[:cut], track.positions[:cut], track.rotations[:cut]
    return True


@pytest.mark.parametrize("int_times", [False, True])
def test_a_tracks_add_in_c_is_the_python_bodys(int_times):
    """Samples new, repeated (equal up to TIME_EPS, or older), NaN, past the horizon in batches, positions as float64
    arrays, tuples of floats and other sequences (converted through numpy): the same lists of the same objects as
    the Python body the kernel replaces, its answer, and the remembered change forgotten on each new sample."""
    rng = np.random.default_rng(47)
    horizon = 0.05 if not int_times else 40
    track, mirror = Track(horizon), Track(horizon)
    t: float = 0.0 if not int_times else 0
    for k in range(3000):
        if int_times:
            t += int(rng.choice([0, 1, 2, 5]))
        else:
            t += float(rng.choice([0.0, 1e-10, -0.001, 0.0005, 0.002, 0.01, 0.03]))
        at = math.nan if k % 97 == 50 else t
        position = (rng.normal(size=3), tuple(rng.normal(size=3).tolist()), rng.normal(size=3).tolist())[k % 3]
        rotation = np.eye(3) * k
        track.change(0.01)
        want = _python_add(mirror, at, position, rotation)
        assert track.add(at, position, rotation) is want
        assert (track._change is None) is want  # forgotten only when the sample is taken
        assert track.times == mirror.times or (math.isnan(at) and len(track.times) == len(mirror.times))
        assert [type(x) for x in track.times] == [type(x) for x in mirror.times]
        assert track.positions == mirror.positions and all(type(x) is float for p in track.positions for x in p)
        assert all(a is b for a, b in zip(track.rotations, mirror.rotations, strict=True))
        if math.isnan(at):  # a NaN time: later samples compare against it as Python's floats do; start again
            track.clear()
            mirror.clear()
    with pytest.raises(TypeError, match="track_add: times, positions and rotations must be lists"):
        _geomath.track_add(track.times, tuple(track.positions), track.rotations, 1.0, (0.0, 0.0, 0.0), None, 1.0, 0.0)
    empty: list = []
    with pytest.raises((TypeError, ValueError), match="vector3"):
        _geomath.track_add(empty, [], [], 1.0, [0.0, 0.0, 0.0], None, 1.0, TIME_EPS)
    assert empty == []  # nothing changed before the position was read
    with pytest.raises(TypeError):
        _geomath.track_add([1.0], [(0.0, 0.0, 0.0)], [None], "2", (0.0, 0.0, 0.0), None, 1.0, TIME_EPS)
    with pytest.raises(TypeError):
        _geomath.track_add([], [], [], 1.0, (0.0, 0.0, 0.0), None, 1.0)  # type: ignore[call-arg]


def test_pose_key_is_the_bytes_numpy_gives_for_float64_poses_and_none_for_the_rest():
    position, quaternion = (
        np.array([0.1, -0.0, 3e300]),
        np.array([[1.0, 0.5], [0.0, 0.5], [0.0, 0.5], [0.0, 0.5]])[:, 0],
    )
    want = position.tobytes() + np.asarray(quaternion).tobytes()
    assert _geomath.pose_key(Pose(position, quaternion)) == want  # the quaternion strided
    for other in (
        Pose(position.tolist(), quaternion),
        Pose(position, quaternion.astype(np.float32)),
        Pose(position, position),
    ):
        assert _geomath.pose_key(other) is None  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        _geomath.pose_key(object())


def _python_pose_at(track: Track, t: float, later: tuple | None) -> tuple | None:
    """Track.pose_at as motion.py wrote it in Python before `_geomath.track_pose_at` (the reference)."""
    times = track.times
    i = bisect.bisect_right(times, t + TIME_EPS) - 1
    if i < 0:
        return None
    t0, p0, r0 = times[i], track.positions[i], track.rotations[i]
    if i + 1 < len(times):
        t1, p1, r1 = times[i + 1], track.positions[i + 1], track.rotations[i + 1]
    elif later is not None and later[0] > t0 + TIME_EPS:
        t1, p1, r1 = later
    else:
        return p0, r0
    if t >= t1:
        return p1, r1
    s = max(0.0, (t - t0) / (t1 - t0))
    (x0, y0, z0), (x1, y1, z1) = p0, p1
    return (x0 + s * (x1 - x0), y0 + s * (y1 - y0), z0 + s * (z1 - z0)), interpolate_rotation(r0, r1, s)


def _python_change(track: Track, window: float) -> tuple[float, float, float] | None:
    """Track.change's measure as motion.py wrote it in Python before `_geomath.track_change` (the reference)."""
    if not track.times:
        return None
    i = bisect.bisect_right(track.times, track.times[-1] - window + TIME_EPS) - 1
    if i < 0:
        return None
    dt = track.times[-1] - track.times[i]
    return (
        math.dist(track.positions[-1], track.positions[i]),
        rotation_angle(track.rotations[i], track.rotations[-1]),
        dt,
    )


@pytest.mark.parametrize("int_times", [False, True])
def test_a_tracks_pose_at_and_change_in_c_are_the_python_bodies_bits(int_times):
    """Interpolated poses (before the first sample, between two, at one, beyond the newest with and without a
    later sample, a rotation without a unique axis) and changes over windows the track does and does not span:
    the same bits and the same objects as the Python bodies the kernels replace; times may be ints (a frame's t)."""
    rng = np.random.default_rng(31)
    track = Track(5.0 if not int_times else 500.0)
    step = (
        (lambda: float(rng.choice([0.0005, 0.002, 0.01, 0.03]))) if not int_times else (lambda: int(rng.integers(1, 4)))
    )
    t = 0.0 if not int_times else 0
    assert track.pose_at(1.0) is None and track.change(0.1) is None
    for k in range(400):
        t += step()
        rotation = quat_to_matrix(rng.normal(size=4)) if k % 7 else np.eye(3)
        track.add(t, rng.normal(size=3), rotation if k % 11 else track.rotations[-1] if track.rotations else rotation)
        later = (t + step(), tuple(rng.normal(size=3).tolist()), quat_to_matrix(rng.normal(size=4)))
        for at in (
            t - 3 * step() * rng.random(),
            t,
            t + 0.5 * step(),
            track.times[0] - 1.0,
            float(track.times[-2]) if k else t,
        ):
            for extra in (None, later, (float(track.times[-1]), later[1], later[2])):
                got, want = track.pose_at(at, extra), _python_pose_at(track, at, extra)
                if want is None:
                    assert got is None
                    continue
                assert got[0] == want[0] and all(type(x) is float for x in got[0])  # the floats themselves
                assert got[1].tobytes() == want[1].tobytes()
                kept = (*track.positions, *track.rotations, *(extra[1:] if extra else ()))
                for mine, theirs in zip(got, want, strict=True):  # a sample's own objects where Python gave them
                    assert mine is theirs or not any(theirs is x for x in kept)
        for window in (0.001, 0.03, 0.2, 1.0, 3.0) if not int_times else (1, 5, 40):
            track._change = None
            got, want = track.change(window), _python_change(track, window)
            assert got == want and (got is None or [type(x) for x in got] == [type(x) for x in want])
    with pytest.raises(TypeError, match="track_pose_at: times, positions and rotations must be lists"):
        _geomath.track_pose_at(track.times, tuple(track.positions), track.rotations, 1.0, TIME_EPS, None)
    with pytest.raises(TypeError, match="track_change: times, positions and rotations must be lists"):
        _geomath.track_change(track.times, track.positions, track.rotations[1:], 1.0, TIME_EPS)


@pytest.mark.parametrize(
    ("force", "torque", "finite"),
    [
        ([0.1, -2.0, 3.0], [0.0, 0.0, 0.0], True),
        ([1e300, 1e300, 1e300], [0.0, 0.0, 1e300], True),  # huge but finite (their norm overflows)
        ([0.1, math.nan, 3.0], [0.0, 0.0, 0.0], False),
        ([0.1, 2.0, 3.0], [0.0, -math.inf, 0.0], False),
    ],
)
def test_wrench_finite_reads_every_value_of_float64_wrenches_and_leaves_the_rest(force, torque, finite):
    assert _geomath.wrench_finite(Wrench(np.array(force), np.array(torque))) is finite
    assert _geomath.wrench_finite(Wrench(np.array([force]).T[:, 0], np.array(torque))) is finite  # strided
    with pytest.raises(TypeError, match="wrench_finite: force: expected a float64 array, got list"):
        _geomath.wrench_finite(Wrench(force, np.array(torque)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="wrench_finite: torque: expected 3 float64 values"):
        _geomath.wrench_finite(Wrench(np.array(force), np.zeros(3, dtype=np.float32)))


@pytest.mark.parametrize(
    ("force", "torque", "plausible"),
    [
        ([0.1, -2.0, 3.0], [0.0, -0.0, 0.0], True),
        ([9.9e8, -9.9e8, 0.0], [0.0, 0.0, 0.0], True),
        ([0.1, 1e9, 3.0], [0.0, 0.0, 0.0], False),  # at the limit: implausible
        ([0.1, math.nan, 3.0], [0.0, 0.0, 0.0], False),
        ([0.1, 2.0, 3.0], [0.0, -math.inf, 0.0], False),
    ],
)
def test_wrench_key_is_the_six_values_bytes_when_every_one_is_plausible(force, torque, plausible):
    wrench = Wrench(np.array(force), np.array(torque))
    want = wrench.force.tobytes() + wrench.torque.tobytes() if plausible else None
    assert _geomath.wrench_key(wrench, 1e9) == want
    assert _geomath.wrench_key(Wrench(np.array([force]).T[:, 0], np.array(torque)), 1e9) == want  # strided
    with pytest.raises(TypeError, match="wrench_key: force: expected a float64 array, got list"):
        _geomath.wrench_key(Wrench(force, np.array(torque)), 1e9)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="wrench_key: torque: expected 3 float64 values"):
        _geomath.wrench_key(Wrench(np.array(force), np.zeros(3, dtype=np.float32)), 1e9)


def test_plausible_answers_as_the_test_of_each_value_does_for_rows_of_any_strides():
    rng = np.random.default_rng(16)
    special = [math.nan, math.inf, -math.inf, 1e9, -1e9, np.nextafter(1e9, 0.0), -0.0, 1e300, 5e-324]
    seen = set()
    for _ in range(2000):
        rows = [rng.normal(0.0, 1.0, int(rng.integers(0, 10))) * 10.0 ** rng.integers(0, 10) for _ in range(3)]
        for row in rows:
            if len(row) and rng.random() < 0.3:
                row[rng.integers(len(row))] = special[rng.integers(len(special))]
        rows[0] = np.concatenate([rows[0], rows[0]])[::2]  # strided
        want = all(abs(x) < 1e9 for row in rows for x in row.tolist())
        assert _geomath.plausible(1e9, *rows) is want
        seen.add(want)
    assert seen == {True, False}
    with pytest.raises(ValueError, match="plausible: row: expected a 1-d array of format d"):
        _geomath.plausible(1e9, np.zeros(3), np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="plausible: row: expected a 1-d array"):
        _geomath.plausible(1e9, np.zeros((2, 3)))


def test_joint_limits_answer_as_named_outside_and_row_beyond_do_and_false_without_limits():
    rng = np.random.default_rng(15)
    names = ("a", "b", "c", "d")
    lower, upper = np.full(4, -1.0), np.full(4, 1.0)
    seen = set()
    for _ in range(500):
        values = dict(zip(names, rng.normal(0.0, 0.6, 4).tolist()))
        rows = [None if rng.random() < 0.2 else rng.normal(0.0, 1.0, int(rng.integers(3, 6))) for _ in range(2)]
        for row in rows:
            if row is not None and rng.random() < 0.3:
                row[rng.integers(len(row))] = np.nan
        robot = None if rng.random() < 0.1 else np.arange(3, dtype=np.intp)
        index = [None if rng.random() < 0.2 else np.array([0, 2], dtype=np.intp) for _ in range(2)]
        limits = [rng.uniform(0.5, 2.0, 2) for _ in range(2)]
        layout = (4, robot, index[0], limits[0], index[1], limits[1])
        want = [_geomath.named_outside(values, names, lower, upper)]
        for row, i, lim in zip(rows, index, limits):
            answer = None if row is None else _geomath.row_beyond(row, 4, robot, i, lim) if i is not None else 0
            want.append(False if i is None else None if answer is None or answer < 0 else bool(answer))
        got = _geomath.joint_limits(values, names, lower, upper, rows[0], rows[1], layout)
        assert got == tuple(want) and all(g is w for g, w in zip(got, want))
        seen.add(got)
    assert {v for answer in seen for v in answer[1:]} == {False, True, None}
    layout = (4, None, np.array([0]), np.ones(1), None, np.ones(0))
    with pytest.raises(TypeError):  # a list row: the caller converts it
        _geomath.joint_limits({"a": 0.0}, ("a",), lower[:1], upper[:1], [0.0, 1.0], None, layout)
    with pytest.raises(KeyError, match="'e'"):
        _geomath.joint_limits({"a": 0.0}, ("e",), lower[:1], upper[:1], None, None, layout)
    with pytest.raises(TypeError, match="joint_limits: layout must be a 6-tuple"):
        _geomath.joint_limits({"a": 0.0}, ("a",), lower[:1], upper[:1], None, None, layout[:5])


def test_copy_ints_copies_int32_values_and_names_a_mismatch():
    dst, src = np.zeros(4, dtype=np.int32), np.array([3, -1, 0, 7], dtype=np.int32)
    _geomath.copy_ints(dst, src)
    assert dst.tolist() == [3, -1, 0, 7] and src.tolist() == [3, -1, 0, 7]
    with pytest.raises(ValueError, match="copy_ints: dst and src differ in length"):
        _geomath.copy_ints(dst, src[:3])
    with pytest.raises(ValueError, match="copy_ints: src: expected a C-contiguous array"):
        _geomath.copy_ints(dst[:2], src[::2])
    with pytest.raises(ValueError, match="copy_ints: src: expected a 1-d array of format i"):
        _geomath.copy_ints(dst, src.astype(np.int64))
    with pytest.raises(TypeError, match="copy_ints: dst: expected a writable numpy array"):
        _geomath.copy_ints(_read_only(dst.copy()), src)


def test_pairs_within_gives_the_rules_of_the_pairs_within_their_limit_in_order_or_none_for_a_pair_without_one():
    """The contact and contamination families' walk over a frame's gap pairs: a rule's limit is inclusive, a None rule
    never counts, a pair beyond the bound is not looked up, and a pair within it without a rule (or a gap that is not a
    float) hands the walk back to the caller."""
    near, far = (0.01, "near"), (0.001, "far")
    rules = {"a": {"b": near, "c": None, "d": far}, "b": {"c": far}}
    pairs = [("a", "b", 0.01), ("a", "c", 0.0), ("a", "d", 0.002), ("b", "c", -0.5), ("x", "y", 0.02)]
    assert _geomath.pairs_within(pairs, rules, 0.01) == [near, far]  # x, y beyond the bound: never looked up
    assert _geomath.pairs_within(pairs, rules, 0.01)[0] is near  # the rules themselves
    assert _geomath.pairs_within([("a", "b", math.nan), ("a", "d", math.inf)], rules, 0.01) == []
    assert _geomath.pairs_within(pairs, rules, 0.02) is None  # x, y within it, without a rule
    assert _geomath.pairs_within([("a", "z", 0.0)], rules, 0.02) is None  # a row without the pair
    assert _geomath.pairs_within([("a", "b", 0)], rules, 0.02) is None  # an int gap: compared in Python
    assert _geomath.pairs_within([("a", "b", np.float64(0.01))], rules, 0.02) == [near]
    assert _geomath.pairs_within([], {}, 0.0) == []
    for bad in (([("a", "b")], rules, 0.01), ((("a", "b", 0.0),), rules, 0.01), ([("a", "b", 0.0)], {"a": []}, 0.1)):
        with pytest.raises(TypeError, match="pairs_within"):
            _geomath.pairs_within(*bad)


def _readings_oracle(state, last_t, objects, pose_limit, wrench_limit, wrench_sensor):
    """The Grounder's checks one by one (`_check_time`, `_joints`, `_usable_poses`, `_usable_wrench`) in plain Python,
    for names already checked: (joints, poses, ages, wrench, stale), or None where one of them would raise."""
    t = state.t
    if not math.isfinite(t) or (last_t is not None and t <= last_t):
        return None
    values = np.asarray(state.joint_position, dtype=float).tolist()
    joints = dict(zip(state.joint_names, values, strict=True))
    found = _usable_poses_oracle(objects, state.object_poses, state.object_ages, pose_limit, Grounder._pose_ok)
    if found is None:
        return None
    poses, ages, stale = found
    wrench, w = None, state.wrench
    if wrench_sensor and w is None:
        stale["wrench"] = math.inf
    elif wrench_sensor:
        age = 0.0 if state.wrench_age is None else float(state.wrench_age)
        if not math.isfinite(age) or age > wrench_limit:
            stale["wrench"] = age if math.isfinite(age) else math.inf
        else:
            flat = np.concatenate([np.ravel(w.force), np.ravel(w.torque)]).astype(float)
            wrench = w if np.isfinite(flat).all() else None
    return joints, poses, ages, wrench, stale


def test_frame_readings_checks_a_plain_frame_as_the_grounder_does_one_check_at_a_time_and_hands_back_the_rest():
    """Random frames (times out of order, NaN joints, other name tuples, strided or list rows, old, NaN and missing
    ages, NaN wrenches, unknown objects): where the call answers, the same joints, poses, ages, wrench and stale ages
    (in order) as the checks one by one; it answers every plain frame, and None for any frame a check reports on or
    converts for, without raising."""
    rng = np.random.default_rng(32)
    objects = ("mug", "plate", "cube")
    keys = tuple(f"object_pose/{o}" for o in objects)
    names = ("j1", "j2", "j3")
    answered = 0
    for _ in range(3000):
        last_t = None if rng.random() < 0.1 else float(rng.uniform(0.0, 1.0))
        t = float(rng.uniform(0.0, 2.0)) if rng.random() < 0.9 else [math.nan, math.inf, 3, True][rng.integers(4)]
        position = rng.normal(size=3)
        plain = True
        if rng.random() < 0.05:
            position[rng.integers(3)] = [math.nan, math.inf][rng.integers(2)]
            plain = False
        if rng.random() < 0.05:
            position, plain = np.repeat(position, 2)[::2], False  # strided: the caller's numpy path
        if rng.random() < 0.05:
            position, plain = position.tolist(), False
        given, ages = {}, {}
        for o in objects:
            if rng.random() < 0.85:
                given[o] = Pose(rng.normal(size=3), rng.normal(size=4) if rng.random() < 0.95 else np.zeros(4))
            if rng.random() < 0.85:
                ages[o] = [float(rng.uniform(0.0, 0.3)), math.inf, math.nan, 0.0][rng.integers(4)]
        if rng.random() < 0.03:
            given["banana"] = Pose(np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
        wrench = None if rng.random() < 0.1 else Wrench(rng.normal(size=3), rng.normal(size=3))
        if wrench is not None and rng.random() < 0.1:
            wrench.force[0] = math.nan
        if wrench is not None and rng.random() < 0.05:
            wrench, plain = Wrench(wrench.force.tolist(), wrench.torque), False
        wrench_age = [None, float(rng.uniform(0.0, 0.1)), math.nan, 1.0][rng.integers(4)]
        if rng.random() < 0.05:
            wrench_age, plain = np.float64(0.01), False
        last_names = names if rng.random() < 0.95 else ("j1", "j2", "j3")
        plain = plain and last_names is names and isinstance(t, float)
        state = RobotState(
            t, names, position, wrench=wrench, wrench_age=wrench_age, object_poses=given, object_ages=ages
        )
        sensor = bool(rng.random() < 0.9)
        stale: dict[str, float] = {}
        terms = (objects, keys, 0.2, Grounder._pose_ok, 0.05, sensor)
        got = _geomath.frame_readings(state, last_t, last_names, stale, terms)
        want = _readings_oracle(state, last_t, objects, 0.2, 0.05, sensor) if last_names is names else None
        if got is None:
            assert not (plain and want is not None)
            continue
        answered += 1
        assert want is not None
        joints, poses, pose_ages, usable, want_stale = want
        assert got[0] == joints and all(type(v) is float for v in got[0].values())
        assert list(got[1].items()) == list(poses.items())
        assert list(got[2].items()) == list(pose_ages.items())
        assert got[3] is usable
        assert list(stale.items()) == list(want_stale.items())
    assert answered > 1000
    with pytest.raises(TypeError, match="frame_readings: stale must be a dict, the grounder's terms a 6-tuple"):
        _geomath.frame_readings(state, None, names, [], terms)
    with pytest.raises(TypeError, match="frame_readings: stale must be a dict, the grounder's terms a 6-tuple"):
        _geomath.frame_readings(state, None, names, {}, terms[:5])
    with pytest.raises(TypeError, match=r"frame_readings\(\) takes 5 arguments \(2 given\)"):
        _geomath.frame_readings(state, None)  # type: ignore[call-arg]
    assert _geomath.frame_readings(object(), None, names, {}, terms) is None


def test_record_fills_a_direct_init_dataclass_as_its_init_does_and_refuses_other_classes():
    fields = tuple(PredicateFrame.__dataclass_fields__)
    values = (0.5, 3, FrozenValues({"a": True}), frozenset({"a"}), {"wrench": math.inf}, {"a": ("mug",)})
    made, built = _geomath.record(PredicateFrame, fields, *values), PredicateFrame(*values)
    assert (
        type(made) is PredicateFrame and made == built and list(made.__dict__.items()) == list(built.__dict__.items())
    )
    assert all(getattr(made, f) is v for f, v in zip(fields, values, strict=True))  # the values themselves
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.t = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError, match="record: expected a class, a tuple of field names and a value for each"):
        _geomath.record(PredicateFrame, fields, *values[:5])
    with pytest.raises(TypeError, match="record: expected a class"):
        _geomath.record(PredicateFrame, list(fields), *values)
    with pytest.raises(TypeError, match="record: int is not a class with object's __new__ and a dict"):
        _geomath.record(int, ("real",), 1)

    class Slotted:
        __slots__ = ("a",)

    with pytest.raises(TypeError, match="record: Slotted is not a class with object's __new__ and a dict"):
        _geomath.record(Slotted, ("a",), 1)


def test_joint_inputs_gives_gripper_closed_and_the_fractions_and_window_deltas_the_grounders_python_did():
    """Random joint values (NaN, inf, -0.0 and ints among them), windows of 1 to 4 frames: Gripper.closed's answer, and
    the same fractions and deltas, bit for bit and in order, as the loop over deques; a missing joint, a zero span or
    a bad row raises, and a threshold or gripper value that is not a float raises a TypeError before any history
    changes."""
    rng = np.random.default_rng(33)
    grippers = [
        Gripper(GripperKind.NONE, (), (), (), ()),
        Gripper(GripperKind.TWO_FINGERS, (), (), (), ()),  # no joints: closed, as all() of nothing
        Gripper(GripperKind.TWO_FINGERS, ("left", "right"), (), (), (ClosedPast(0.01, False), ClosedPast(-0.01, True))),
    ]
    for window in (1, 2, 4):
        specs = (("drawer", "slide", 0.0, 0.4), ("door", "hinge", -0.2, 1.5), ("lid", "lid_joint", 1, -2))
        rows = tuple((f, j, closed, span, []) for f, j, closed, span in specs)
        queues = {f: collections.deque(maxlen=window) for f, *_ in specs}
        for _ in range(60):
            joints = {"left": float(rng.normal(0.0, 0.02)), "right": float(rng.normal(0.0, 0.02))}
            if rng.random() < 0.1:
                joints["left"] = math.nan
            for _, joint, *_ in specs:
                kinds = [float(rng.normal()), math.nan, math.inf, -0.0, int(rng.integers(-2, 3)), 0.0]
                joints[joint] = kinds[rng.integers(len(kinds))] if rng.random() < 0.3 else float(rng.normal())
            want_fractions, want_deltas = {}, {}
            for f, joint, closed, span in specs:
                want_fractions[f] = fraction = (joints[joint] - closed) / span
                queues[f].append(fraction)
                want_deltas[f] = fraction - queues[f][0] if len(queues[f]) == window else None
            gripper = grippers[rng.integers(len(grippers))]
            closing = (
                None
                if gripper.kind is GripperKind.NONE
                else tuple((j, p.at, p.upward) for j, p in zip(gripper.joints, gripper.closed_past, strict=True))
            )
            closed, fractions, deltas = _geomath.joint_inputs(joints, closing, rows, window)
            assert closed is gripper.closed(joints)
            assert [(f, struct.pack("d", x)) for f, x in fractions.items()] == [
                (f, struct.pack("d", x)) for f, x in want_fractions.items()
            ]
            assert [(f, None if x is None else struct.pack("d", x)) for f, x in deltas.items()] == [
                (f, None if x is None else struct.pack("d", x)) for f, x in want_deltas.items()
            ]
            assert all(len(history) == len(queues[f]) for f, *_, history in rows)
    assert _geomath.joint_inputs({}, None, (), 3) == (False, {}, {})
    history: list[float] = [0.5]
    drawer = (("drawer", "slide", 0.0, 0.4, history),)
    for closing, joints in (
        ((("left", 1, False),), {"left": 0.0, "slide": 0.1}),  # an int threshold: Gripper.closed compares it
        ((("left", 1.0, False),), {"left": 0, "slide": 0.1}),
        (None, {"slide": "0.1"}),
    ):
        with pytest.raises(TypeError):
            _geomath.joint_inputs(joints, closing, drawer, 3)
        assert history == [0.5]
    with pytest.raises(KeyError, match="slide"):
        _geomath.joint_inputs({}, None, drawer, 3)
    with pytest.raises(KeyError, match="left"):
        _geomath.joint_inputs({"slide": 0.1}, (("left", 0.0, True),), drawer, 3)
    with pytest.raises(ZeroDivisionError):
        _geomath.joint_inputs({"slide": 0.1}, None, (("drawer", "slide", 0.0, 0.0, []),), 3)
    assert history == [0.5]
    with pytest.raises(TypeError, match="joint_inputs: a row must be"):
        _geomath.joint_inputs({"slide": 0.1}, None, (("drawer", "slide", 0.0, 0.4, collections.deque()),), 3)
    with pytest.raises(TypeError, match="joint_inputs: a gripper row must be"):
        _geomath.joint_inputs({"slide": 0.1}, (("left",),), (), 3)
    with pytest.raises(TypeError, match="joint_inputs: joints must be a dict, closing None or a tuple"):
        _geomath.joint_inputs({"slide": 0.1}, None, (), 0)


# ---- a joint message's rows ----
def test_joint_rows_matches_numpy_writes_and_copies() -> None:
    rng = np.random.default_rng(32)
    for n in (0, 1, 2, 7, 12):
        for _ in range(20):
            block, stamps = np.full((3, n), np.nan), np.full(n, -np.inf)
            want_block, want_stamps = block.copy(), stamps.copy()
            rows = [rng.normal(size=2 * n)[::2] if rng.random() < 0.3 else rng.normal(size=n) for _ in range(3)]
            if n and rng.random() < 0.3:  # NaN, infinite and huge values are copied as they are
                rows[rng.integers(3)][rng.integers(n)] = rng.choice([np.nan, np.inf, -1e300])
            for k in (1, 2):  # a velocity or effort row the message lacks comes as one float (NaN), filling the row
                if rng.random() < 0.3:
                    rows[k] = rng.choice([np.nan, 0.5, np.float64(-2.0)])
            t = float(rng.normal())
            copied, copied_stamps, key = _geomath.joint_rows(block, stamps, t, *rows)
            want_block[0][...], want_block[1][...], want_block[2][...] = rows
            want_stamps.fill(t)
            assert block.tobytes() == want_block.tobytes() == copied.tobytes() == key
            assert stamps.tobytes() == want_stamps.tobytes() == copied_stamps.tobytes()
            for mine, want in ((copied, want_block), (copied_stamps, want_stamps)):
                assert mine.shape == want.shape and mine.dtype == want.dtype and mine.flags.writeable
                assert mine.flags.c_contiguous and mine.flags.owndata and not np.shares_memory(mine, want)
            assert not np.shares_memory(copied, block) and not np.shares_memory(copied_stamps, stamps)


def test_joint_rows_refuses_other_arguments_and_writes_nothing() -> None:
    n = 3
    row = np.arange(n, dtype=float)
    for args, error in (
        ((np.full((3, n), np.nan), np.zeros(n), 0.5, row, row, np.arange(n)), ValueError),  # int64 effort
        ((np.full((3, n), np.nan), np.zeros(n), 0.5, row, row, np.zeros(n + 1)), ValueError),
        ((np.full((3, n), np.nan), np.zeros(n), 0.5, np.nan, row, row), TypeError),  # no position row
        ((np.full((3, n), np.nan), np.zeros(n), 0.5, row, 1, row), TypeError),  # an int for a row
        ((np.full((3, n), np.nan), np.zeros(n), 0.5, row, row, [0.0, 1.0, 2.0]), TypeError),
        ((np.full((3, n), np.nan), np.zeros(n), 0.5, row, row, np.zeros((1, n))), TypeError),
        ((np.full((3, n), np.nan), np.zeros(n), "0.5", row, row, row), TypeError),
        ((np.full((3, n), np.nan, np.float32), np.zeros(n), 0.5, row, row, row), TypeError),
        ((np.full((3, n), np.nan).T.copy().T, np.zeros(n), 0.5, row, row, row), TypeError),  # not C-contiguous
        ((np.full((2, n), np.nan), np.zeros(n), 0.5, row, row, row), TypeError),
        ((np.full((3, n + 1), np.nan), np.zeros(n), 0.5, row, row, row), TypeError),
        ((np.full((3, n), np.nan), np.zeros(n)[::-1], 0.5, row, row, row), TypeError),
        ((np.full((3, n), np.nan), np.zeros((1, n)), 0.5, row, row, row), TypeError),
    ):
        block, stamps = np.array(args[0]), np.array(args[1])
        with pytest.raises(error):
            _geomath.joint_rows(*args)
        assert args[0].tobytes() == block.tobytes() and np.asarray(args[1]).tobytes() == stamps.tobytes()
    frozen = np.full((3, n), np.nan)
    frozen.flags.writeable = False
    with pytest.raises(TypeError):
        _geomath.joint_rows(frozen, np.zeros(n), 0.5, row, row, row)
    with pytest.raises(TypeError):
        _geomath.joint_rows(np.full((3, n), np.nan), np.zeros(n), 0.5, row, row)


# --- the twin's kernels with their fixed runs of arguments as one tuple ---


def test_twin_kernels_take_their_fixed_runs_as_tuples_alike():
    """set_joints, may_touch and entity_gaps with a run of arguments as the one tuple the twin keeps answer and
    write as with the run spread; anything but a tuple there, or a tuple of the wrong length, raises TypeError."""
    from safety_monitor.grounding.contacts import sphere_reach2
    from safety_monitor.grounding.grounder import load_default_grounder

    rng = np.random.default_rng(32)
    followers = (np.array([[5, 1], [6, 5]], dtype=np.int64), rng.normal(size=(2, 7)))
    src, adr = np.array([3, 2, 0], dtype=np.int64), np.array([1, 2, 4], dtype=np.int64)
    for skip in (False, True):
        positions = rng.normal(size=4)
        positions[2] = np.nan
        spread, whole = rng.normal(size=8), np.empty(8)
        whole[:] = spread
        _geomath.set_joints(spread, positions, src, adr, skip, *followers)
        _geomath.set_joints(whole, positions, src, adr, skip, followers)
        assert whole.tobytes() == spread.tobytes()
    for wrong in (list(followers), followers[:1], (*followers, None)):
        with pytest.raises(TypeError, match="set_joints"):
            _geomath.set_joints(whole, positions, src, adr, False, wrong)

    xpos = np.array([[0.0, 0, 0], [0.5, 0, 0], [0.0, 0, 0.4]])
    xmat = np.tile(np.eye(3).ravel(), (3, 1))
    aabb = np.array([[0, 0, 0, 0.1, 0.1, 0.1]] * 3, dtype=float)
    none = np.zeros(0, dtype=np.int64)
    for margin in (0.002, 0.31, math.nan):
        bounds = (aabb, np.array([0]), np.array([1]), sphere_reach2(np.array([0.35]), margin), none, none, margin)
        assert _geomath.may_touch(xpos, xmat, bounds) is _geomath.may_touch(xpos, xmat, *bounds)
    for wrong in (list(bounds), bounds[:5], (*bounds, none, None, None, None)):
        with pytest.raises(TypeError, match="may_touch"):
            _geomath.may_touch(xpos, xmat, wrong)

    twin = load_default_grounder(500.0).twin
    npairs = len(twin._pa)
    near, fresh = np.ones(npairs, dtype=bool), np.ones(npairs, dtype=bool)
    measured = rng.uniform(0.0, 0.01, size=npairs)
    pairs = (
        twin.data.geom_xpos, twin.data.geom_xmat, twin._geom_aabb, near, fresh, twin._pair_key, twin._pa, twin._pb,
        measured, twin.margin,
    )  # fmt: skip
    names = (twin._key_names, twin._key_sorted, twin._key_gripper)
    head = (0, None, None, twin._contact_key, None)
    want = _geomath.entity_gaps(*head, *pairs, *twin._measure, *names, [None, None])
    assert _geomath.entity_gaps(*head, pairs, twin._measure, names, [None, None]) == want
    for wrong in ((list(pairs), twin._measure, names), (pairs, twin._measure[:2], names), (pairs, twin._measure, None)):
        with pytest.raises(TypeError, match="entity_gaps"):
            _geomath.entity_gaps(*head, *wrong, [None, None])
