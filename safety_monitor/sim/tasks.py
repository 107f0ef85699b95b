"""Scripted tasks: each builds its waypoint plan from the reset world and says when it succeeded.

Grasp heights put the fingertips 1 cm below the end-effector site, kept clear of the table top
(z = 0.40). Goals lie on free table space of the initial scene.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from safety_monitor.sim import truth as gt
from safety_monitor.sim.controller import hand_down, hand_forward
from safety_monitor.sim.script import Grip, Move, Segment
from safety_monitor.sim.workcell import Workcell

TABLE_Z = 0.40
OPEN = 0.04
GOAL_TOLERANCE_M = 0.03
DRAWER_OPEN_TARGET = 0.22  # of 0.25: beyond the 60 % "fully open" fraction
CABINET_OPEN = 1.57
GRASP_Z = {"cube": 0.43, "mug": 0.46, "plate": 0.418, "raw_chicken": 0.418}
REST_Z = {"cube": 0.425, "mug": 0.445, "plate": 0.415, "raw_chicken": 0.415}
PLACE_GOALS = {"cube": (0.55, 0.12), "mug": (0.25, 0.0), "plate": (0.42, -0.02)}
BIN_CENTRE = np.array([0.0, 0.42])
BIN_HALF_INNER = 0.08
BIN_FLOOR_Z = 0.41
CABINET_GOAL = np.array([0.62, -0.36, 0.47])  # end effector, side grasp, mug standing on the floor
CABINET_FRONT_X = 0.488
# carried this far above its goal: the mug's bottom clears the table by more than the place-onset reach
# (0.05 m), so lowering it onto the cabinet floor reads as the one place it is
CABINET_CARRY_DZ = 0.06
CABINET_INNER_Y = (-0.57, -0.29)
HANDLE_OFFSET = np.array([-0.08, 0.0, 0.12])  # drawer handle from the drawer body origin
DRAWER_ORIGIN = np.array([0.5, 0.42, 0.4])
LIFT = 0.12


@dataclass(frozen=True)
class TaskSpec:
    """A scripted task: initial fixture joints, a plan builder, a success test and the plan's ground truth."""

    name: str
    description: str
    obj: str | None
    truth: gt.GroundTruth
    fixtures: dict[str, float] = field(default_factory=dict)
    build: Callable[[Workcell], list[Segment]] = field(default=lambda cell: [], repr=False)
    succeeded: Callable[[Workcell], bool] = field(default=lambda cell: False, repr=False)


def handle_position(cell: Workcell) -> np.ndarray:
    """Drawer handle centre in the world for the drawer's current opening."""
    return DRAWER_ORIGIN + HANDLE_OFFSET + np.array([-cell.joint_position("drawer_slide"), 0.0, 0.0])


def _above(obj: str, dz: float) -> Callable[[Workcell], np.ndarray]:
    def point(cell: Workcell) -> np.ndarray:
        p = cell.object_position(obj)
        return np.array([p[0], p[1], GRASP_Z[obj] + dz])

    return point


def pick(obj: str, yaw: float = 0.0) -> list[Segment]:
    """Approach from above, descend, close, lift."""
    down = hand_down(yaw)
    return [
        Grip("open", OPEN, 0.2),
        Move("approach", _above(obj, LIFT), down, speed=0.35),
        Move("descend", _above(obj, 0.0), down, speed=0.12, tolerance=0.006),
        Grip("close", 0.0, 0.5),
        Move("lift", _above(obj, LIFT), down, speed=0.2),
    ]


def place(obj: str, goal_xy: tuple[float, float], yaw: float = 0.0) -> list[Segment]:
    """Carry at lift height, lower onto the goal, open, retreat upward."""
    down = hand_down(yaw)
    z = GRASP_Z[obj]
    return [
        Move("transport", np.array([*goal_xy, z + LIFT]), down, speed=0.25),
        Move("place_descend", np.array([*goal_xy, z + 0.004]), down, speed=0.1, tolerance=0.008),
        Grip("release", OPEN, 0.4),
        Move("retreat", np.array([*goal_xy, z + LIFT]), down, speed=0.2),
    ]


def _resting_at(cell: Workcell, obj: str, goal_xy) -> bool:
    p = cell.object_position(obj)
    return bool(np.linalg.norm(p[:2] - np.asarray(goal_xy)) < GOAL_TOLERANCE_M and abs(p[2] - REST_Z[obj]) < 0.01)


def pick_and_place(obj: str) -> TaskSpec:
    goal = PLACE_GOALS[obj]
    return TaskSpec(
        name=f"pick_and_place_{obj}",
        description=f"pick the {obj} from the table and place it at {goal}",
        obj=obj,
        truth=gt.PICK + gt.PLACE,
        build=lambda cell: pick(obj) + place(obj, goal),
        succeeded=lambda cell: _resting_at(cell, obj, goal),
    )


def _mug_in_cabinet(cell: Workcell) -> bool:
    p = cell.object_position("mug")
    up = cell.data.xmat[cell.model.body("mug").id].reshape(3, 3)[:, 2]
    return bool(
        CABINET_FRONT_X + 0.03 < p[0] < 0.78
        and CABINET_INNER_Y[0] < p[1] < CABINET_INNER_Y[1]
        and p[2] < 0.5
        and up[2] > 0.95
    )


def place_in_cabinet_plan(cell: Workcell) -> list[Segment]:
    """Side grasp of the mug (hand along +x), carry it into the open cabinet, set it down."""
    side = hand_forward()
    mug = cell.object_position("mug")
    grasp = np.array([mug[0], mug[1], GRASP_Z["mug"] - 0.005])
    carry_z = CABINET_GOAL[2] + CABINET_CARRY_DZ
    entry = np.array([0.45, CABINET_GOAL[1], carry_z])
    return [
        Grip("open", OPEN, 0.2),
        Move("approach", grasp + np.array([-0.12, 0.0, 0.04]), side, speed=0.35),
        Move("approach_side", grasp + np.array([-0.12, 0.0, 0.0]), side, speed=0.15),
        Move("descend", grasp, side, speed=0.1, tolerance=0.006),
        Grip("close", 0.0, 0.5),
        Move("lift", grasp + np.array([0.0, 0.0, carry_z - grasp[2]]), side, speed=0.15),
        Move("transport", entry, side, speed=0.2),
        Move("reach_in", CABINET_GOAL + np.array([0.0, 0.0, CABINET_CARRY_DZ]), side, speed=0.12),
        Move("place_descend", CABINET_GOAL, side, speed=0.08, tolerance=0.008),
        Grip("release", OPEN, 0.4),
        Move("retract", np.array([0.40, CABINET_GOAL[1], CABINET_GOAL[2]]), side, speed=0.15),
        Move("retreat", np.array([0.30, 0.0, 0.60]), hand_down(), speed=0.25),
    ]


def drawer_plan(target_opening: float) -> Callable[[Workcell], list[Segment]]:
    """Grasp the handle from above (fingers closing along x), slide it to `target_opening`, let go."""
    down = hand_down(np.pi / 2)

    def build(cell: Workcell) -> list[Segment]:
        handle = handle_position(cell)
        goal = DRAWER_ORIGIN + HANDLE_OFFSET + np.array([-target_opening, 0.0, -0.005])
        return [
            Grip("open", 0.03, 0.2),
            Move("approach", handle + np.array([0.0, 0.0, 0.10]), down, speed=0.35),
            Move("descend", handle - np.array([0.0, 0.0, 0.005]), down, speed=0.1, tolerance=0.006),
            Grip("close", 0.0, 0.4),
            Move("slide", goal, down, speed=0.12, tolerance=0.01),
            Grip("release", 0.03, 0.3),
            Move("retreat", lambda c: handle_position(c) + np.array([0.0, 0.0, 0.10]), down, speed=0.2),
        ]

    return build


def dump_plan(obj: str) -> Callable[[Workcell], list[Segment]]:
    """Carry the object over the bin, lower it below the rim and let it drop the last 2 cm.

    A release from higher up would let the object fall while the monitor still counts it as grasped
    (the grasp debounce), which reads as a place with a slipping grasp.
    """

    def build(cell: Workcell) -> list[Segment]:
        above_bin = np.array([*BIN_CENTRE, 0.60])
        drop_z = BIN_FLOOR_Z + 0.02 + (GRASP_Z[obj] - TABLE_Z)
        return pick(obj) + [
            Move("transport", above_bin, hand_down(), speed=0.25),
            Move("lower", np.array([*BIN_CENTRE, drop_z]), hand_down(), speed=0.12, tolerance=0.008),
            Grip("release", OPEN, 0.4),
            Move("retreat", above_bin, hand_down(), speed=0.2),
        ]

    return build


def _in_bin(cell: Workcell, obj: str) -> bool:
    p = cell.object_position(obj)
    return bool(np.all(np.abs(p[:2] - BIN_CENTRE) < BIN_HALF_INNER) and p[2] < TABLE_Z + 0.06)


def _build_tasks() -> dict[str, TaskSpec]:
    tasks = [pick_and_place(o) for o in ("cube", "mug", "plate")] + [
        TaskSpec(
            "place_in_cabinet",
            "side-grasp the mug and set it down inside the open cabinet",
            "mug",
            gt.PICK + gt.PLACE + gt.REACH_IN,
            {"cabinet_hinge": CABINET_OPEN},
            place_in_cabinet_plan,
            _mug_in_cabinet,
        ),
        TaskSpec(
            "open_drawer",
            "pull the closed drawer open by its handle",
            None,
            gt.OPEN,
            {},
            drawer_plan(DRAWER_OPEN_TARGET),
            lambda cell: cell.joint_position("drawer_slide") > 0.6 * 0.25,
        ),
        TaskSpec(
            "close_drawer",
            "push the open drawer closed by its handle",
            None,
            gt.CLOSE,
            {"drawer_slide": DRAWER_OPEN_TARGET},
            drawer_plan(0.0),
            lambda cell: cell.joint_position("drawer_slide") < 0.05 * 0.25,
        ),
        TaskSpec(
            "dump_into_bin",
            "pick the raw chicken and drop it into the bin from just below the rim",
            "raw_chicken",
            gt.PICK + gt.DUMP,
            {},
            dump_plan("raw_chicken"),
            lambda cell: _in_bin(cell, "raw_chicken"),
        ),
    ]
    return {t.name: t for t in tasks}


TASKS: dict[str, TaskSpec] = _build_tasks()
