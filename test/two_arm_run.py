"""A bimanual run on `mjcf_robots.two_arm_mjcf` (ALOHA's layout), scripted in joint space at 50 Hz: the right arm
picks a bar standing on the table, holds it out over the gap between the arms, the left arm takes it there
(both hold it for a moment), the right lets go and goes home while the left carries the bar off at once, up,
round and down for seven seconds, never still, stands it on the table and goes home. Both grippers hold the bar
by its narrow sides; the bar follows the hand that holds it, as perception would see it.

`describe` writes each arm's description as a user does (`robot init`, `--tip` for the right, then the bar,
the table and their kinds); `run` gives the frames (`RobotState`s both stacks read alike: every joint of
both arms, the bar's pose) and the frames over which each arm holds the bar.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import yaml
from mjcf_robots import TWO_ARM_LINK, TWO_ARM_REACH, TWO_ARM_SHOULDER, two_arm_mjcf

from safety_monitor.frames import Pose, RobotState

RATE = 50.0
ARMS = ("left", "right")
BASES = {"left": (np.array([-0.4, 0.0, 0.0]), 1.0), "right": (np.array([0.4, 0.0, 0.0]), -1.0)}  # (origin, x sign)
OPEN, HOLD = 0.041, 0.01  # gripper joint: fully open; closed on the bar's 3 cm (its pads touch it)
CLOSED_BELOW = 0.015  # where the gripper counts as closed: the user moves robot init's guess to the bar's width
BAR = [0.06, 0.015, 0.015]  # half sizes: long along the holding hand's approach, narrow between its fingers
BAR_IN_HAND = 0.04  # m: the bar's centre beyond the grasp centre, along the approach (its near end 2 cm in)
BAR_AXES = np.array([[0.0, 0, -1], [0, 1, 0], [1, 0, 0]])  # the bar in the hand: long along its approach (z)
GRASP_CENTRE = 0.06  # m: from the hand body along its approach, midway between the pads (robot init measures it)
DOWN, FORWARD = math.pi, math.pi / 2  # approach: straight down, or level towards the other arm
JOINTS = ("waist", "shoulder", "elbow", "wrist_angle")
HOME = {"waist": 0.0, "shoulder": -0.3, "elbow": 0.9, "wrist_angle": 0.9, "right_finger": OPEN}


def describe(folder: Path) -> dict[str, Path]:
    """robot.yaml of each arm (the left by default, the right by `--tip`), with the bar, the table and their
    kinds, and the gripper closed where it holds the bar, as docs/your_robot.md has the user add them. One model
    file serves both."""
    from safety_monitor.cli import main

    model = folder / "aloha.xml"
    model.write_text(two_arm_mjcf())
    out = {}
    for arm in ARMS:
        tip = ["--tip", f"{arm}/gripper_base"] if arm == "right" else []
        assert main(["robot", "init", "--mjcf", str(model), "--out", str(folder / arm), *tip]) == 0
        path = folder / arm / "robot.yaml"
        text = re.sub(r"closed_below: [^ ]+", f"closed_below: {CLOSED_BELOW}", path.read_text())
        text = re.sub(r"\nstatic: \{\} [^\n]*", "\nstatic: {table: {bodies: [table]}}", text)
        path.write_text(re.sub(r"\nobjects: \{\} [^\n]*", f"\nobjects: {{bar: {{box: {BAR}}}}}", text))
        kinds = yaml.safe_load((folder / arm / "objects.yaml").read_text())
        kinds["entities"] = {"bar": "block", "table": "table"}
        (folder / arm / "objects.yaml").write_text(yaml.safe_dump(kinds))
        out[arm] = path
    return out


def reach(arm: str, site: tuple[float, float, float], approach: float) -> dict[str, float]:
    """The arm's joints that put its grasp centre at `site` (world), the hand pointing `approach` radians from
    straight up, towards the site (analytic: a planar two-link arm turned by the waist)."""
    origin, sign = BASES[arm]
    x, y = (np.array(site[:2]) - origin[:2]) * sign
    r, z = math.hypot(x, y), site[2]
    wr, wz = r - TWO_ARM_REACH * math.sin(approach), z - TWO_ARM_REACH * math.cos(approach) - TWO_ARM_SHOULDER
    elbow = math.acos((wr * wr + wz * wz - 2 * TWO_ARM_LINK**2) / (2 * TWO_ARM_LINK**2))
    shoulder = math.atan2(wr, wz) - math.atan2(math.sin(elbow), 1 + math.cos(elbow))
    return {"waist": math.atan2(y, x), "shoulder": shoulder, "elbow": elbow, "wrist_angle": approach - shoulder - elbow}


# (seconds, left target, right target): each a pose by `reach` and a gripper joint, None to stay; the joints
# move linearly from one target to the next
_PICK, _HANDOVER = (0.2, 0.2), 0.3  # the bar's spot on the table (x, y); the handover's height, over x = 0
_SCRIPT = (
    (0.5, None, None),
    (1.5, None, (((*_PICK, 0.2), DOWN), OPEN)),
    (1.0, None, (((*_PICK, 0.101), DOWN), OPEN)),  # the bar's foot 1 mm over the table
    (0.5, None, (None, HOLD)),  # grasp
    (0.5, None, None),
    (1.0, None, (((*_PICK, 0.2), DOWN), HOLD)),
    (2.0, None, (((BAR_IN_HAND, 0.0, _HANDOVER), FORWARD), HOLD)),  # held out, level
    (0.5, None, None),  # held still: the left picks a bar at rest
    (1.5, (((-0.14, 0.0, _HANDOVER), FORWARD), OPEN), None),
    (1.0, (((-BAR_IN_HAND, 0.0, _HANDOVER), FORWARD), OPEN), None),
    (0.5, (None, HOLD), None),  # the left closes: both hold it
    (0.5, None, None),
    (0.5, None, (None, OPEN)),  # the right lets go, and the left carries the bar off at once, never still
    (2.0, (((-0.2, 0.0, 0.42), FORWARD), HOLD), (((0.16, 0.0, _HANDOVER), FORWARD), OPEN)),
    (2.0, (((-0.25, 0.15, 0.25), 3 * math.pi / 4), HOLD), ("home", OPEN)),
    (2.0, (((-0.2, 0.2, 0.2), DOWN), HOLD), None),
    (1.0, (((-0.2, 0.2, 0.101), DOWN), HOLD), None),
    (0.5, (None, OPEN), None),  # stood on the table
    (0.5, None, None),
    (1.0, (((-0.2, 0.2, 0.2), DOWN), OPEN), None),
    (1.5, ("home", OPEN), None),
    (1.0, None, None),
)


@dataclass(frozen=True)
class Run:
    """The frames, and per arm the frames from the start of its closing on the bar to the end of its letting go."""

    states: tuple[RobotState, ...]
    holding: dict[str, range]


def _end_of(step: int) -> int:
    """The frame at which step `step` of the script (counted from 1) ends."""
    return sum(round(seconds * RATE) for seconds, *_ in _SCRIPT[:step])


HOLDING = {"right": range(_end_of(3), _end_of(13)), "left": range(_end_of(10), _end_of(18))}  # steps of _SCRIPT


def _keyframes() -> list[tuple[int, dict[str, float]]]:
    """(frame, every joint of both arms) at the start, then at the end of each step of the script."""
    now = {f"{arm}/{j}": v for arm in ARMS for j, v in HOME.items()}
    out = [(0, dict(now))]
    for step, (_, *targets) in enumerate(_SCRIPT, 1):
        for arm, target in zip(ARMS, targets):
            if target is None:
                continue
            pose, gripper = target
            if pose == "home":
                now |= {f"{arm}/{j}": HOME[j] for j in JOINTS}
            elif pose is not None:
                now |= {f"{arm}/{j}": v for j, v in reach(arm, *pose).items()}
            now[f"{arm}/right_finger"] = gripper
        out.append((_end_of(step), dict(now)))
    return out


def run() -> Run:
    """The frames of the script. The bar stands on the table where the right's pads close on it, then keeps its
    pose in the hand of the arm that closed on it last, and stands where the left lets go of it."""
    keys = _keyframes()
    names = tuple(keys[0][1])
    model = mujoco.MjModel.from_xml_string(two_arm_mjcf())
    data = mujoco.MjData(model)

    def grasp_frame(q: dict[str, float], arm: str) -> tuple[np.ndarray, np.ndarray]:
        """The grasp centre of `arm`'s hand (between its pads) and the hand's rotation, by MuJoCo."""
        for name, value in q.items():
            data.qpos[model.joint(name).qposadr[0]] = value
        mujoco.mj_kinematics(model, data)
        hand = model.body(f"{arm}/gripper_base").id
        rotation = data.xmat[hand].reshape(3, 3).copy()
        return data.xpos[hand] + GRASP_CENTRE * rotation[:, 2], rotation

    site, rotation = grasp_frame(keys[3][1], "right")  # where the right's pads close on it
    bar = (site + BAR_IN_HAND * rotation[:, 2], rotation @ BAR_AXES)
    # the arm holding the bar, and the bar's position and rotation in that arm's grasp frame
    held: tuple[str, np.ndarray, np.ndarray] | None = None
    states = []
    for (k0, q0), (k1, q1) in zip(keys, keys[1:]):
        closing = [arm for arm in ARMS if q0[f"{arm}/right_finger"] == OPEN and q1[f"{arm}/right_finger"] == HOLD]
        for k in range(k0, k1):
            q = {n: q0[n] + (k - k0) / (k1 - k0) * (q1[n] - q0[n]) for n in names}
            if k == k0 and closing:  # the closing hand takes the bar as it is
                site, rotation = grasp_frame(q, closing[0])
                held = (closing[0], rotation.T @ (bar[0] - site), rotation.T @ bar[1])
            if held is not None and held[0] not in closing and q[f"{held[0]}/right_finger"] == OPEN:
                held = None  # let go: it stays where it is
            if held is not None:
                site, rotation = grasp_frame(q, held[0])
                bar = (site + rotation @ held[1], rotation @ held[2])
            quat = np.empty(4)
            mujoco.mju_mat2Quat(quat, bar[1].flatten())
            states.append(
                RobotState(
                    t=1.0 + k / RATE,
                    joint_names=names,
                    joint_position=np.array([q[n] for n in names]),
                    object_poses={"bar": Pose(bar[0].copy(), quat)},
                    object_ages={"bar": 0.0},
                )
            )
    return Run(tuple(states), HOLDING)
