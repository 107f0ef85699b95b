"""Timestamped pose tracks: velocities and grasp slip measured over a time window, not per frame.

Slower streams (perception at 30 Hz) are sampled at the control frame as latest value plus age, so a
track records each pose at the time it was measured (frame time minus age) and only when it is new;
the end-effector track lets an object pose be compared with the end-effector at the same instant.
"""

from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np

TIME_EPS = 1e-9  # seconds: measurement times (frame time minus age) equal up to rounding are the same instant


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) -> rotation matrix (normalises first)."""
    w, x, y, z = (float(v) for v in q)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def rotation_angle(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (rad) of the rotation taking orientation `a` to `b`: trace(a^T b) = sum(a * b)."""
    c = (float(np.vdot(a, b)) - 1.0) / 2.0
    return math.acos(min(1.0, max(-1.0, c)))


class Track:
    """Poses (position, rotation matrix) by measurement time, oldest first, kept for `horizon` seconds."""

    def __init__(self, horizon: float):
        self.horizon = horizon
        self.times: list[float] = []
        self.positions: list[tuple[float, float, float]] = []
        self.rotations: list[np.ndarray] = []
        self._change: tuple[float, tuple[float, float, float] | None] | None = None  # (window, change) until add/clear

    def add(self, t: float, position: np.ndarray, rotation: np.ndarray) -> bool:
        """Record a pose measured at `t`; a repeat of the newest measurement (same or older t) is skipped."""
        if self.times and t <= self.times[-1] + TIME_EPS:
            return False
        self._change = None
        self.times.append(t)
        self.positions.append(tuple(np.asarray(position, dtype=float).tolist()))  # math.dist is fast on tuples
        self.rotations.append(rotation)
        cut = bisect_right(self.times, t - self.horizon) - 1  # keep one sample older than the horizon
        if cut > 64:
            del self.times[:cut], self.positions[:cut], self.rotations[:cut]
        return True

    def at(self, t: float) -> int | None:
        """Index of the newest sample measured at or before `t` (None if all are newer)."""
        i = bisect_right(self.times, t + TIME_EPS) - 1
        return i if i >= 0 else None

    def change(self, window: float) -> tuple[float, float, float] | None:
        """(distance m, angle rad, elapsed s) from the sample `window` before the newest to the newest.

        None until the track spans the window, so a fresh track is unknown rather than still. Remembered
        until the next sample: a slow stream asks the same question on many frames.
        """
        if self._change is not None and self._change[0] == window:
            return self._change[1]
        change = self._measure(window)
        self._change = (window, change)
        return change

    def _measure(self, window: float) -> tuple[float, float, float] | None:
        if not self.times:
            return None
        i = self.at(self.times[-1] - window)
        if i is None:
            return None
        dt = self.times[-1] - self.times[i]
        dist = math.dist(self.positions[-1], self.positions[i])
        return dist, rotation_angle(self.rotations[i], self.rotations[-1]), dt

    def clear(self) -> None:
        if self.times:  # an empty track's remembered change (none) stays right
            self._change = None
            self.times.clear()
            self.positions.clear()
            self.rotations.clear()
