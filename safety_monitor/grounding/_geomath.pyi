"""Types of the C kernels in _geomath.c (float64 arrays in, of the shapes named; any strides)."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, overload

import numpy as np

_T = TypeVar("_T")

def box_overlap(
    ac: np.ndarray, ar: np.ndarray, ah: np.ndarray, bc: np.ndarray, br: np.ndarray, bh: np.ndarray
) -> bool: ...
def placement(
    bc: np.ndarray, br: np.ndarray, bh: np.ndarray, rc: np.ndarray, rr: np.ndarray, rh: np.ndarray, margin: float
) -> tuple[bool, float]: ...
def interior_reach(
    centers: np.ndarray, rotations: np.ndarray, halves: np.ndarray, points: np.ndarray
) -> tuple[list[float], list[float]]: ...
def rotation_angle(a: np.ndarray, b: np.ndarray) -> float: ...
def interpolate_rotation(a: np.ndarray, b: np.ndarray, s: float, out: np.ndarray) -> np.ndarray: ...
def relative_rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray: ...
def box_corners(center: np.ndarray, rotation: np.ndarray, half: np.ndarray) -> np.ndarray: ...
def compose_pose(
    position: np.ndarray, rotation: np.ndarray, rel_position: np.ndarray, rel_rotation: np.ndarray
) -> tuple[np.ndarray, np.ndarray]: ...
def pose_finite(position: np.ndarray, quaternion: np.ndarray) -> bool: ...
def pose_usable(pose: Any) -> bool: ...
def norm3(v: np.ndarray) -> float: ...
@overload
def may_touch(geom_xpos: np.ndarray, geom_xmat: np.ndarray, bounds: tuple[Any, ...], /) -> bool: ...
@overload
def may_touch(
    geom_xpos: np.ndarray,
    geom_xmat: np.ndarray,
    geom_aabb: np.ndarray,
    sa: np.ndarray,
    sb: np.ndarray,
    reach2: np.ndarray,
    plane: np.ndarray,
    other: np.ndarray,
    margin: float,
    first: np.ndarray = ...,
    near: np.ndarray | None = ...,
    kept: np.ndarray | None = ...,
) -> bool: ...
def keep_contacts(
    geom: np.ndarray,
    dist: np.ndarray,
    n: int,
    geom_moved: np.ndarray,
    ncon: int,
    new_geom: np.ndarray | None,
    new_dist: np.ndarray | None,
) -> int: ...
def place_objects(
    qpos: np.ndarray, slots: tuple[tuple[str, int], ...], poses: Mapping[str, Any], parked: dict[str, np.ndarray]
) -> None: ...
def joint_jumps(
    row: np.ndarray,
    index: np.ndarray,
    current: np.ndarray,
    times: np.ndarray | float,
    previous: np.ndarray | None,
    previous_times: np.ndarray | float | None,
    rates: np.ndarray,
) -> tuple[tuple[int, float, float], ...] | None: ...
def row_beyond(row: np.ndarray, names: int, robot: np.ndarray | None, index: np.ndarray, limits: np.ndarray) -> int: ...
def qpos_changed(qpos: np.ndarray, last_bits: np.ndarray) -> bytes: ...
def copy_ints(dst: np.ndarray, src: np.ndarray) -> None: ...
def site_frame(
    site_pos: np.ndarray, site_rot: np.ndarray, geom_xpos: np.ndarray, finger_geoms: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
def body_box(
    xpos: np.ndarray, xmat: np.ndarray, body: int, local_center: np.ndarray
) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def entity_gaps(
    ncon: int,
    contact_geom: np.ndarray | None,
    contact_dist: np.ndarray | None,
    contact_key: np.ndarray,
    affected: tuple[np.ndarray, ...] | None,
    pairs: tuple[Any, ...],
    measure: tuple[Any, ...],
    names: tuple[Any, ...],
    last: list[Any],
    /,
) -> tuple[dict[str, dict[str, float]], dict[str, float], list[tuple[str, str, float]]]: ...
@overload
def entity_gaps(
    ncon: int,
    contact_geom: np.ndarray | None,
    contact_dist: np.ndarray | None,
    contact_key: np.ndarray,
    affected: tuple[np.ndarray, ...] | None,
    geom_xpos: np.ndarray,
    geom_xmat: np.ndarray,
    geom_aabb: np.ndarray,
    pair_near: np.ndarray,
    pair_fresh: np.ndarray,
    pair_key: np.ndarray,
    pa: np.ndarray,
    pb: np.ndarray,
    pair_gap: np.ndarray,
    margin: float,
    measure: Callable[[Any, Any, int, int, float, None], float] | int,
    model: Any,
    data: Any,
    key_names: list[tuple[str, str]],
    key_sorted: list[tuple[str, str]],
    key_gripper: list[tuple[str, ...]],
    last: list[Any],
) -> tuple[dict[str, dict[str, float]], dict[str, float], list[tuple[str, str, float]]]: ...
def named_outside(
    values: Mapping[str, float], names: tuple[str, ...], lower: np.ndarray, upper: np.ndarray
) -> bool: ...
def usable_poses(
    objects: tuple[str, ...],
    stale_keys: tuple[str, ...],
    given: dict[str, Any],
    ages: dict[str, Any],
    limit: float,
    stale: dict[str, float],
    fallback: Callable[[Any], bool],
) -> tuple[dict[str, Any], dict[str, float]] | None: ...
def named_values(names: Sequence[str], values: np.ndarray) -> tuple[dict[str, float], bool]: ...
@overload
def set_joints(
    qpos: np.ndarray,
    positions: np.ndarray,
    src: np.ndarray,
    adr: np.ndarray,
    skip_nonfinite: bool,
    followers: tuple[np.ndarray, np.ndarray],
    /,
) -> None: ...
@overload
def set_joints(
    qpos: np.ndarray,
    positions: np.ndarray,
    src: np.ndarray,
    adr: np.ndarray,
    skip_nonfinite: bool,
    follower_qpos: np.ndarray,
    follower_poly: np.ndarray,
) -> None: ...
def vector3(v: Any) -> tuple[float, float, float]: ...
def wrench_finite(wrench: Any) -> bool: ...
def wrench_key(wrench: Any, limit: float) -> bytes | None: ...
def plausible(limit: float, *rows: np.ndarray) -> bool: ...
def place_carried(
    qpos: np.ndarray,
    address: int,
    position: np.ndarray,
    rotation: np.ndarray,
    rel_position: np.ndarray,
    rel_rotation: np.ndarray,
    mat2quat: int,
) -> None: ...
def joint_limits(
    values: Mapping[str, float],
    names: tuple[str, ...],
    lower: np.ndarray,
    upper: np.ndarray,
    velocity_row: np.ndarray | None,
    effort_row: np.ndarray | None,
    layout: tuple[int, np.ndarray | None, np.ndarray | None, np.ndarray, np.ndarray | None, np.ndarray],
) -> tuple[bool, bool | None, bool | None]: ...
def pairs_within(
    pairs: list[tuple[str, str, float]], rules: Mapping[str, Mapping[str, tuple[Any, ...] | None]], bound: float
) -> list[Any] | None: ...

# ---- MuJoCo's calls from C (only where built with MuJoCo's headers: MUJOCO_HEADER is their version, else 0)
MUJOCO_HEADER: int
# (function, log handler setter, global handler getter, mjModel, mjData addresses, the error raised)
MuJoCoCalls = tuple[int, int, int, int, int, type[BaseException]]

def mujoco_call(calls: MuJoCoCalls) -> None: ...
def collide_moved(
    calls: MuJoCoCalls,
    geom: np.ndarray,
    dist: np.ndarray,
    n: int,
    geom_moved: np.ndarray,
    near: np.ndarray | None,
    run: bool,
) -> int: ...
def free_body_kinematics(calls: tuple[int, ...], body: int) -> None: ...
def samples_repeat(
    t: float,
    eps: float,
    objects: tuple[str, ...],
    poses: Mapping[str, Any],
    ages: Mapping[str, float],
    times: tuple[list[float], ...],
    gaps: Mapping[str, float],
    reach: float,
    beyond: list[bool | None],
) -> bool: ...
def pose_key(pose: Any) -> bytes | None: ...
def track_change(
    times: list[float],
    positions: list[tuple[float, float, float]],
    rotations: list[np.ndarray],
    window: float,
    eps: float,
) -> tuple[float, float, float] | None: ...
def track_pose_at(
    times: list[float],
    positions: list[tuple[float, float, float]],
    rotations: list[np.ndarray],
    t: float,
    eps: float,
    later: tuple[float, tuple[float, float, float], np.ndarray] | None,
) -> tuple[tuple[float, float, float], np.ndarray] | None: ...
def frame_readings(
    state: Any,
    last_t: float | None,
    last_names: tuple[str, ...],
    stale: dict[str, float],
    terms: tuple[tuple[str, ...], tuple[str, ...], float, Callable[[Any], bool], float, bool],
) -> tuple[dict[str, float], dict[str, Any], dict[str, float], Any] | None: ...
def record(cls: type[_T], fields: tuple[str, ...], *values: Any) -> _T: ...
def joint_inputs(
    joints: Mapping[str, float],
    closing: tuple[tuple[str, float, bool], ...] | None,
    rows: tuple[tuple[str, str, float, float, list[float]], ...],
    window: int,
) -> tuple[bool, dict[str, float], dict[str, float | None]]: ...
def track_add(
    times: list[float],
    positions: list[tuple[float, float, float]],
    rotations: list[np.ndarray],
    t: float,
    position: Any,
    rotation: np.ndarray,
    horizon: float,
    eps: float,
) -> bool: ...
def joint_rows(  # a row neither a 1-d float64 array nor (velocity, effort: a missing row) a float: TypeError
    block: np.ndarray,
    stamps: np.ndarray,
    t: float,
    position: np.ndarray,
    velocity: np.ndarray | float,
    effort: np.ndarray | float,
) -> tuple[np.ndarray, np.ndarray, bytes]: ...
