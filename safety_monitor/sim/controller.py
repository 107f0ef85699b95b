"""Cartesian control of the arm: damped-least-squares IK on MuJoCo's site Jacobian.

A kinematic shadow (its own `MjData`) carries the desired joint vector; each control step moves it
one resolved-rate step toward the commanded end-effector pose, and the arm's position servos
(with the workcell's gravity compensation) track it. Solving on the shadow rather than on the
measured state keeps the reference smooth when the arm is blocked or pushed.
"""

from __future__ import annotations

import numpy as np

from safety_monitor.mujoco_gl import mujoco
from safety_monitor.sim.workcell import ARM_JOINTS, Workcell

HOME_POSITION = np.array([0.30, 0.0, 0.65])
_HOME_GUESS = np.array([0.0, 0.2, 1.9, 0.0, 1.04, 0.0])  # elbow up, hand roughly down


def rot_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rot_y(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def hand_down(yaw: float = 0.0) -> np.ndarray:
    """Hand pointing down; at yaw 0 the fingers close along world y."""
    return rot_z(yaw) @ rot_y(np.pi)


def hand_forward(yaw: float = 0.0) -> np.ndarray:
    """Hand pointing horizontally along +x rotated by yaw; fingers close horizontally."""
    return rot_z(yaw) @ rot_y(np.pi / 2)


class ArmController:
    """Holds the commanded end-effector pose and gripper opening; `update()` writes the servo targets."""

    DEFAULT_MAX_JOINT_STEP = 0.01  # rad per 2 ms control step: 5 rad/s, under robot.yaml's velocity limits

    def __init__(
        self,
        workcell: Workcell,
        damping: float = 0.03,
        max_joint_step: float = DEFAULT_MAX_JOINT_STEP,
        max_lead: float = 0.03,
    ) -> None:
        m = workcell.model
        self.workcell = workcell
        self._shadow = mujoco.MjData(m)
        self._qadr = np.array([m.joint(n).qposadr[0] for n in ARM_JOINTS])
        dofs = [int(m.joint(n).dofadr[0]) for n in ARM_JOINTS]
        contiguous = dofs == list(range(dofs[0], dofs[0] + len(dofs)))
        self._dofs = slice(dofs[0], dofs[0] + len(dofs)) if contiguous else np.array(dofs)
        self._low = m.jnt_range[[m.joint(n).id for n in ARM_JOINTS], 0]
        self._high = m.jnt_range[[m.joint(n).id for n in ARM_JOINTS], 1]
        self._site = workcell.ee_site
        self._damping = damping**2 * np.eye(6)
        self.max_joint_step = max_joint_step  # rad per control step: the joints' speed cap (a fault lifts it)
        self._max_lead = max_lead
        self._jac = np.zeros((6, m.nv))
        self._error = np.zeros(6)
        self._solution = np.zeros(6)
        self.q = _HOME_GUESS.copy()
        self.target_position = HOME_POSITION.copy()
        self.target_rotation = hand_down()
        self.opening = 0.04
        for _ in range(400):
            self._ik_step(self.target_position, max_step=0.05)
        workcell.command(self.q, self.opening)
        workcell.set_arm(self.q)

    def pose_of(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """End-effector position and rotation matrix for arm joints `q` (forward kinematics)."""
        d = self._shadow
        d.qpos[self._qadr] = q
        mujoco.mj_kinematics(self.workcell.model, d)
        return d.site_xpos[self._site].copy(), d.site_xmat[self._site].reshape(3, 3).copy()

    def _ik_step(self, goal: np.ndarray, max_step: float) -> float:
        """One DLS step of the shadow toward the target; returns the remaining position error (m)."""
        m, d = self.workcell.model, self._shadow
        d.qpos[self._qadr] = self.q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        error = self._error
        error[:3] = goal - d.site_xpos[self._site]
        r = self.target_rotation @ d.site_xmat[self._site].reshape(3, 3).T
        error[3:] = 0.5 * (r[2, 1] - r[1, 2]), 0.5 * (r[0, 2] - r[2, 0]), 0.5 * (r[1, 0] - r[0, 1])
        mujoco.mj_jacSite(m, d, self._jac[:3], self._jac[3:], self._site)
        jac = self._jac[:, self._dofs]
        gram = jac @ jac.T + self._damping
        mujoco.mju_cholFactor(gram, 0.0)
        mujoco.mju_cholSolve(self._solution, gram, error)
        dq = jac.T @ self._solution
        dq = np.minimum(np.maximum(dq, -max_step), max_step)
        self.q = np.minimum(np.maximum(self.q + dq, self._low), self._high)
        return float(np.sqrt(error[0] ** 2 + error[1] ** 2 + error[2] ** 2))

    def update(self) -> None:
        """One control step: advance the IK reference and command servos and fingers.

        The reference may lead the measured hand by at most `max_lead`: a blocked arm then presses
        with a bounded force (its servo stiffness times the lead) and backs off at once when told.
        """
        measured = self.workcell.data.site_xpos[self._site]
        lead = self.target_position - measured
        distance = float(np.sqrt(lead @ lead))
        goal = self.target_position if distance <= self._max_lead else measured + lead * (self._max_lead / distance)
        self._ik_step(goal, self.max_joint_step)
        self.workcell.command(self.q, self.opening)
