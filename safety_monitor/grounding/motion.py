"""Timestamped pose tracks: velocities and grasp slip measured over a time window, not per frame.

Slower streams (perception at 30 Hz) are sampled at the control frame as latest value plus age, so a
track records each pose at the time it was measured (frame time minus age) and only when it is new;
the end-effector track lets an object pose be compared with the end-effector at the same instant.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from safety_monitor.grounding import _geomath

Carry = Callable[[np.ndarray, np.ndarray], Mapping[str, tuple[np.ndarray, np.ndarray]]]
"""Given this frame's end-effector (position, rotation): each held object's pose relative to the
end-effector when the object's pose was measured (the twin places it there relative to this frame's). Both
sides only read the arrays handed over, during the call (the twin hands in its own buffers, the grounder the
arrays it keeps for later frames): no copy either way."""

TIME_EPS = 1e-9  # seconds: measurement times (frame time minus age) equal up to rounding are the same instant


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) -> rotation matrix (normalises first)."""
    w, x, y, z = np.asarray(q, dtype=float).tolist()  # an array's own elements are numpy scalars: slow to unpack
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array(  # flat, then shaped: numpy builds from nested lists at twice the cost
        (
            *(1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
            *(2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
            *(2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)),
        )
    ).reshape(3, 3)


def in_frame(origin: tuple[float, float, float], rotation: np.ndarray, point: np.ndarray) -> tuple[float, float, float]:
    """`point` in the frame at `origin` whose axes are `rotation`'s columns: rotation^T (point - origin), in
    plain floats summed left to right: the same bits on every machine (numpy's product goes to the BLAS
    kernel the CPU selects, and costs about 1 us a call)."""
    x, y, z = point3(point)
    ox, oy, oz = origin
    dx, dy, dz = x - ox, y - oy, z - oz
    (a, b, c), (d, e, f), (g, h, k) = rotation.tolist()
    return a * dx + d * dy + g * dz, b * dx + e * dy + h * dz, c * dx + f * dy + k * dz


def point3(v: np.ndarray | tuple[float, float, float]) -> tuple[float, float, float]:
    """A 3-vector as a tuple of floats (which the tracks keep: math.dist is fast on tuples): in one C call for a
    float64 array or a tuple of floats (numpy's conversion took 2.3 thousand instructions), else through numpy."""
    try:
        return _geomath.vector3(v)
    except (TypeError, ValueError):
        return tuple(np.asarray(v, dtype=float).tolist())


def rotation_angle(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (rad) of the rotation taking orientation `a` to `b`: acos((trace(a^T b) - 1) / 2)."""
    return _geomath.rotation_angle(a, b)


def interpolate_rotation(a: np.ndarray, b: np.ndarray, s: float) -> np.ndarray:
    """The rotation a fraction `s` of the way from `a` to `b` about their common axis (Rodrigues); `a` or
    `b` itself when they have no unique axis (no rotation, or a half turn: never between two control frames)."""
    return _geomath.interpolate_rotation(a, b, s, np.empty((3, 3)))


class Track:
    """Poses (position, rotation matrix) by measurement time, oldest first, kept for `horizon` seconds. `times`
    is one list for the track's life, changed in place (the Grounder's object-motion short path keeps it)."""

    def __init__(self, horizon: float):
        self.horizon = horizon
        self.times: list[float] = []
        self.positions: list[tuple[float, float, float]] = []
        self.rotations: list[np.ndarray] = []
        self._change: tuple[float, tuple[float, float, float] | None] | None = None  # (window, change) until add/clear

    def add(self, t: float, position: np.ndarray | tuple[float, float, float], rotation: np.ndarray) -> bool:
        """Record a pose measured at `t`; a repeat of the newest measurement (same or older t) is skipped.
        Once 66 samples lie at or before the horizon (times[65] does), all but the newest of them are dropped, in
        one batch. One C call (`_geomath.track_add`: its Python body cost about a thousand instructions)."""
        try:
            added = _geomath.track_add(
                self.times, self.positions, self.rotations, t, position, rotation, self.horizon, TIME_EPS
            )
        except (TypeError, ValueError):  # a position that is not a float64 3-vector (nothing changed): numpy's
            added = _geomath.track_add(  # conversion first
                self.times, self.positions, self.rotations, t, point3(position), rotation, self.horizon, TIME_EPS
            )
        if added:
            self._change = None
        return added

    def pose_at(
        self, t: float, later: tuple[float, tuple[float, float, float], np.ndarray] | None = None
    ) -> tuple[tuple[float, float, float], np.ndarray] | None:
        """(position, rotation) at time `t`, interpolated between the samples either side (linearly in
        position, along the shortest rotation), so a pose measured between two frames is compared with
        the end-effector where it was then, not where it was on the frame before (at 0.3 m/s, 1.2 cm for
        a 0.04 s offset: as much as the gripper clearance). `later`: a sample newer than all of the track's
        (this frame's, not yet added), its position a tuple as the track keeps them. None if `t` is older
        than every sample; the newest beyond it. The position in plain floats: numpy's per-call cost is most
        of the arithmetic on three values, and its elementwise results are the same bits. One C call
        (`_geomath.track_pose_at`: its Python body cost about 3.7 microseconds)."""
        return _geomath.track_pose_at(self.times, self.positions, self.rotations, t, TIME_EPS, later)

    def change(self, window: float) -> tuple[float, float, float] | None:
        """(distance m, angle rad, elapsed s) from the sample `window` before the newest to the newest.

        None until the track spans the window, so a fresh track is unknown rather than still. Remembered
        until the next sample: a slow stream asks the same question on many frames.
        """
        if self._change is not None and self._change[0] == window:
            return self._change[1]
        # one C call (`_geomath.track_change`): the bisection, math.dist and rotation_angle cost about 1.6
        # microseconds in Python
        change = _geomath.track_change(self.times, self.positions, self.rotations, window, TIME_EPS)
        self._change = (window, change)
        return change

    def clear(self) -> None:
        if self.times:  # an empty track's remembered change (none) stays right
            self._change = None
            self.times.clear()
            self.positions.clear()
            self.rotations.clear()
