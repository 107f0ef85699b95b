"""Waypoint state machines: a task is a list of segments run one after another at control rate.

Segment targets may be callables of the workcell so a plan built at reset still follows what the
world looks like when the segment starts (an object's seeded pose, where the drawer handle is now).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from safety_monitor.mujoco_gl import mujoco
from safety_monitor.sim.controller import ArmController
from safety_monitor.sim.workcell import Workcell

Point = np.ndarray | Callable[[Workcell], np.ndarray]


def _rotvec(rotation: np.ndarray) -> np.ndarray:
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, rotation.reshape(9))
    vec = np.zeros(3)
    mujoco.mju_quat2Vel(vec, quat, 1.0)
    return vec


def _exp(vec: np.ndarray) -> np.ndarray:
    angle = float(np.linalg.norm(vec))
    if angle < 1e-12:
        return np.eye(3)
    quat = np.zeros(4)
    mujoco.mju_axisAngle2Quat(quat, vec / angle, angle)
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, quat)
    return mat.reshape(3, 3)


def _min_jerk(tau: float) -> float:
    tau = min(max(tau, 0.0), 1.0)
    return tau**3 * (10.0 - 15.0 * tau + 6.0 * tau**2)


@dataclass
class Move:
    """Straight-line, minimum-jerk move of the end effector to a pose.

    Done once the nominal duration has passed and the hand is within `tolerance` of the goal, or
    `patience` seconds later regardless (a blocked arm does not hang the script).
    """

    label: str
    position: Point
    rotation: np.ndarray | None = None
    speed: float = 0.25  # m/s
    angular_speed: float = 1.5  # rad/s
    tolerance: float = 0.01
    patience: float = 1.0
    _start: tuple = field(default=(), init=False, repr=False)

    def start(self, ctrl: ArmController, cell: Workcell) -> None:
        goal = np.asarray(self.position(cell) if callable(self.position) else self.position, float)
        r0 = ctrl.target_rotation.copy()
        r1 = r0 if self.rotation is None else self.rotation
        turn = _rotvec(r0.T @ r1)
        p0 = ctrl.target_position.copy()
        duration = max(
            float(np.linalg.norm(goal - p0)) / self.speed, float(np.linalg.norm(turn)) / self.angular_speed, 0.1
        )
        self._start = (cell.t, duration, p0, goal, r0, turn)

    def update(self, ctrl: ArmController, cell: Workcell) -> bool:
        t0, duration, p0, goal, r0, turn = self._start
        elapsed = cell.t - t0
        s = _min_jerk(elapsed / duration)
        ctrl.target_position = p0 + s * (goal - p0)
        ctrl.target_rotation = r0 @ _exp(s * turn)
        if elapsed < duration:
            return False
        reached = np.linalg.norm(cell.ee_position() - goal) < self.tolerance
        return bool(reached or elapsed > duration + self.patience)


@dataclass
class Grip:
    """Ramp both fingers' opening (0 closed .. 0.04 open) to a target, then wait out `duration`.

    The ramp keeps finger impacts gentle: a snap-closed finger knocks the object and spikes the wrist
    force sensor.
    """

    label: str
    opening: float
    duration: float = 0.4
    ramp: float = 0.25  # seconds to sweep the full 0.04 m range
    _start: tuple = field(default=(), init=False, repr=False)

    def start(self, ctrl: ArmController, cell: Workcell) -> None:
        self._start = (cell.t, ctrl.opening)

    def update(self, ctrl: ArmController, cell: Workcell) -> bool:
        t0, initial = self._start
        elapsed = cell.t - t0
        ramp = self.ramp * abs(self.opening - initial) / 0.04
        s = 1.0 if elapsed >= ramp else elapsed / ramp
        ctrl.opening = initial + s * (self.opening - initial)
        return elapsed >= max(self.duration, ramp)


@dataclass
class Hold:
    """Keep the current command for a while (let objects settle, keep pushing...)."""

    label: str
    duration: float
    _t0: float = field(default=0.0, init=False, repr=False)

    def start(self, ctrl: ArmController, cell: Workcell) -> None:
        self._t0 = cell.t

    def update(self, ctrl: ArmController, cell: Workcell) -> bool:
        return cell.t - self._t0 >= self.duration


@dataclass
class Act:
    """An instantaneous side effect on the world or the controller (fault hooks use these)."""

    label: str
    effect: Callable[[ArmController, Workcell], None]

    def start(self, ctrl: ArmController, cell: Workcell) -> None:
        self.effect(ctrl, cell)

    def update(self, ctrl: ArmController, cell: Workcell) -> bool:
        return True


Segment = Move | Grip | Hold | Act


class Script:
    """Runs segments in order; `step()` is called once per control step before physics."""

    def __init__(self, ctrl: ArmController, segments: Sequence[Segment]) -> None:
        self.ctrl = ctrl
        self.segments = list(segments)
        self.index = 0
        self._started = False

    @property
    def done(self) -> bool:
        return self.index >= len(self.segments)

    @property
    def label(self) -> str:
        return "done" if self.done else self.segments[self.index].label

    def step(self) -> None:
        cell = self.ctrl.workcell
        while not self.done:
            segment = self.segments[self.index]
            if not self._started:
                segment.start(self.ctrl, cell)
                self._started = True
            if not segment.update(self.ctrl, cell):
                break
            self.index += 1
            self._started = False
        self.ctrl.update()
