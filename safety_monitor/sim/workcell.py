"""The MuJoCo workcell as a steppable object that reports each control step as a `RobotState`.

Physics and control both run at 500 Hz (one `step()` = one frame). Object poses are sampled at
50 Hz like a motion-capture stream, so their ages grow between samples; the wrist wrench and
joints are fresh every frame. Contacts are the simulator's privileged ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import numpy as np

from safety_monitor.frames import Contact, Pose, RobotState, Wrench
from safety_monitor.mujoco_gl import mujoco

ARM_JOINTS = tuple(f"arm_joint{i}" for i in range(1, 7))
FINGER_JOINTS = ("finger_left_joint", "finger_right_joint")
FIXTURE_JOINTS = ("drawer_slide", "cabinet_hinge")
JOINT_NAMES = ARM_JOINTS + FINGER_JOINTS + FIXTURE_JOINTS
OBJECTS = ("mug", "raw_chicken", "plate", "cube")
POSE_RATE_HZ = 50.0
SEED_JITTER_M = 0.01  # a seed moves each object up to this far in x and y


def workcell_path() -> str:
    """Filesystem path of the packaged MJCF (the grounding twin loads the same file)."""
    return str(resources.files("safety_monitor.sim").joinpath("workcell.xml"))


@dataclass(frozen=True)
class ObjectStart:
    """A scripted start position (world, m) for one object, replacing its MJCF pose and seed jitter."""

    name: str
    position: tuple[float, float, float]


class Workcell:
    """One simulated workcell: model, data, the actuator commands and the 50 Hz pose stream."""

    def __init__(
        self, seed: int = 0, fixtures: dict[str, float] | None = None, objects: tuple[ObjectStart, ...] = ()
    ) -> None:
        self.model = mujoco.MjModel.from_xml_path(workcell_path())
        self.data = mujoco.MjData(self.model)
        self.seed = seed
        m = self.model
        self._qadr = np.array([m.joint(n).qposadr[0] for n in JOINT_NAMES])
        self._dadr = np.array([m.joint(n).dofadr[0] for n in JOINT_NAMES])
        self.arm_dofs = self._dadr[:6]
        self.finger_dofs = self._dadr[6:8]
        self._robot_dofs = self._dadr[:8]
        self._free_qadr = {n: m.joint(f"{n}_free").qposadr[0] for n in OBJECTS}
        self._body_names = tuple(m.body(i).name for i in range(m.nbody))
        self._force_adr = m.sensor("wrist_force").adr[0]
        self._torque_adr = m.sensor("wrist_torque").adr[0]
        self.ee_site = m.site("ee_site").id
        self._place_objects(np.random.default_rng(seed), objects)
        for joint, value in (fixtures or {}).items():
            self.data.qpos[m.joint(joint).qposadr[0]] = value
        mujoco.mj_forward(m, self.data)
        self._pose_cache: dict[str, Pose] = {}
        self._pose_time = 0.0
        self._sample_poses()

    def _place_objects(self, rng: np.random.Generator, overrides: tuple[ObjectStart, ...]) -> None:
        """Scripted starts are exact (a fault may need an object touching a fixture); the others get
        seeded jitter in x and y. One draw per object in a fixed order keeps seeds reproducible."""
        moved = {o.name: o.position for o in overrides}
        for name in OBJECTS:
            adr = self._free_qadr[name]
            jitter = rng.uniform(-SEED_JITTER_M, SEED_JITTER_M, size=2)
            if name in moved:
                self.data.qpos[adr : adr + 3] = moved[name]
            else:
                self.data.qpos[adr : adr + 2] += jitter

    @property
    def t(self) -> float:
        return float(self.data.time)

    def set_arm(self, q: np.ndarray) -> None:
        """Teleport arm and fingers to their commanded targets (once, at reset: start at home, at rest)."""
        self.data.qpos[self._qadr[:6]] = q
        self.data.ctrl[:6] = q
        self.data.qpos[self._qadr[6:8]] = self.data.ctrl[6]
        mujoco.mj_forward(self.model, self.data)

    def command(self, arm_q: np.ndarray, finger_opening: float) -> None:
        """Joint position targets for the arm servos and both fingers (0 closed .. 0.04 open)."""
        self.data.ctrl[:6] = arm_q
        self.data.ctrl[6] = finger_opening

    def step(self) -> None:
        """One 2 ms physics step with gravity compensation of the robot's own links; object poses
        are sampled when the 50 Hz stream is due, whether or not anyone reads this frame."""
        d = self.data
        d.qfrc_applied[self._robot_dofs] = d.qfrc_bias[self._robot_dofs]
        mujoco.mj_step(self.model, d)
        if d.time - self._pose_time >= 1.0 / POSE_RATE_HZ - 1e-9:
            self._sample_poses()

    def _sample_poses(self) -> None:
        d = self.data
        self._pose_cache = {
            n: Pose(d.qpos[a : a + 3].copy(), d.qpos[a + 3 : a + 7].copy()) for n, a in self._free_qadr.items()
        }
        self._pose_time = float(d.time)

    def joint_position(self, name: str) -> float:
        return float(self.data.qpos[self.model.joint(name).qposadr[0]])

    def object_position(self, name: str) -> np.ndarray:
        return self.data.xpos[self.model.body(name).id].copy()

    def ee_position(self) -> np.ndarray:
        return self.data.site_xpos[self.ee_site].copy()

    def lock_drawer(self) -> None:
        """Fault hook: an equality constraint pins the drawer where it stands."""
        eq = self.model.equality("drawer_lock").id
        self.model.eq_data[eq, 0] = self.joint_position("drawer_slide")
        self.data.eq_active[eq] = True

    def _body_contacts(self) -> tuple[Contact, ...]:
        """One contact per touching body pair (the deepest), in the order MuJoCo found them."""
        con = self.data.contact
        bodies = self.model.geom_bodyid
        deepest: dict[tuple[int, int], float] = {}
        for b1, b2, dist in zip(bodies[con.geom1].tolist(), bodies[con.geom2].tolist(), con.dist.tolist()):
            key = (b1, b2) if b1 <= b2 else (b2, b1)
            if dist < deepest.get(key, np.inf):
                deepest[key] = dist
        names = self._body_names
        return tuple(Contact(names[a], names[b], dist) for (a, b), dist in deepest.items())

    def robot_state(self) -> RobotState:
        """This frame as the estimators see it (object poses from the latest 50 Hz sample)."""
        d = self.data
        t = self.t
        effort = np.zeros(len(JOINT_NAMES))
        effort[:8] = d.qfrc_actuator[self._robot_dofs] + d.qfrc_applied[self._robot_dofs]
        contacts = self._body_contacts()
        age = t - self._pose_time
        return RobotState(
            t=t,
            joint_names=JOINT_NAMES,
            joint_position=d.qpos[self._qadr].copy(),
            joint_velocity=d.qvel[self._dadr].copy(),
            joint_effort=effort,
            wrench=Wrench(
                d.sensordata[self._force_adr : self._force_adr + 3].copy(),
                d.sensordata[self._torque_adr : self._torque_adr + 3].copy(),
            ),
            wrench_age=0.0,
            object_poses=dict(self._pose_cache),
            object_ages={n: age for n in OBJECTS},
            contacts=contacts,
        )
