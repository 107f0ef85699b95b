"""Named faults with ground truth: each edits a task's world or plan and names the properties it trips.

`expected_properties` must each open at least one violation episode; `allowed_properties` are the
only ones that may (the expected ones plus physical side effects the fault really causes).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from safety_monitor.sim.controller import ArmController, hand_down
from safety_monitor.sim.script import Act, Grip, Hold, Move, Segment
from safety_monitor.sim.tasks import (GRASP_Z, LIFT, OPEN, PLACE_GOALS, drawer_plan, pick, place)
from safety_monitor.sim.workcell import ObjectStart, Workcell

Inject = Callable[[list[Segment], Workcell], list[Segment]]


@dataclass(frozen=True)
class FaultSpec:
    """A fault: which task it corrupts, how, and which properties must (and may) trip."""

    name: str
    description: str
    task: str
    expected_properties: tuple[str, ...]
    allowed_properties: tuple[str, ...]
    fixtures: dict[str, float] = field(default_factory=dict, repr=False)
    objects: tuple[ObjectStart, ...] = field(default=(), repr=False)
    inject: Inject = field(default=lambda segments, cell: segments, repr=False)


def _index(segments: list[Segment], label: str) -> int:
    return next(i for i, s in enumerate(segments) if s.label == label)


def _early_release(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """Open the gripper half-way through the transport, 12 cm above the table, then go home."""
    i = _index(segments, "transport")
    transport = segments[i]
    goal = np.asarray(transport.position, float)
    start = np.array([*cell.object_position("mug")[:2], goal[2]])
    midway = 0.5 * (start + goal)
    return segments[:i] + [
        Move("transport", midway, transport.rotation, speed=transport.speed),
        Grip("release", OPEN, 0.4),
        Hold("watch", 1.0),
        Move("retreat", np.array([0.30, 0.0, 0.60]), hand_down(), speed=0.25),
    ]


def _weak_grip(ctrl: ArmController, cell: Workcell) -> None:
    """Fault hook: the finger drives can only squeeze with a fraction of a newton."""
    cell.model.actuator_forcerange[cell.model.actuator("gripper_act").id] = (-0.8, 0.8)


def _slip(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """Grasp the mug deep, then the grip collapses as the arm lifts fast: the fingers slide up the mug."""
    i = _index(segments, "descend")
    descend, lift = segments[i], segments[_index(segments, "lift")]
    deep = _offset(descend.position, -0.02)
    return segments[:i] + [
        Move("descend", deep, descend.rotation, speed=descend.speed, tolerance=descend.tolerance),
        Grip("close", 0.0, 0.5),
        Act("grip_weakens", _weak_grip),
        Move("lift", lift.position, lift.rotation, speed=0.6),
        Hold("watch", 0.5),
        Move("retreat", np.array([0.30, 0.0, 0.60]), hand_down(), speed=0.25),
    ]


def _offset(point, dz: float):
    """A segment target moved up by `dz` (works for fixed points and world-dependent callables)."""
    if callable(point):
        return lambda cell: point(cell) + np.array([0.0, 0.0, dz])
    return np.asarray(point, float) + np.array([0.0, 0.0, dz])


CABINET_WALL_PUSH = np.array([0.64, -0.225, 0.60])  # open fingers 1 cm into the cabinet's left wall


def _fixture_collision(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """On the way to the plate the hand is driven sideways into the cabinet wall and held there."""
    i = _index(segments, "approach")
    return segments[:i] + [
        Move("detour", CABINET_WALL_PUSH, hand_down(), speed=0.25, patience=0.2),
        Hold("pressing", 1.6),
        Move("back_off", np.array([0.56, -0.05, 0.62]), hand_down(), speed=0.25),
    ] + segments[i:]


def _raw_then_clean(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """After dumping the raw chicken, pick and place the clean plate with the same, unsanitised gripper."""
    return segments + pick("plate") + place("plate", PLACE_GOALS["plate"])


def _lock_drawer(ctrl: ArmController, cell: Workcell) -> None:
    cell.lock_drawer()


def _push_blocked_drawer(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """The drawer is jammed open; the arm pushes it anyway and keeps pushing for six seconds."""
    i = _index(segments, "slide")
    return [Act("drawer_jams", _lock_drawer)] + segments[:i + 1] + [Hold("keep_pushing", 6.0)] + segments[i + 1:]


MUG_GOAL = PLACE_GOALS["mug"]
CLUTTER = (  # two objects 12 mm behind where the mug will stand (the fingers close along y, clear of them)
    ObjectStart("cube", (MUG_GOAL[0] - 0.067, MUG_GOAL[1] + 0.035, 0.425)),
    ObjectStart("raw_chicken", (MUG_GOAL[0] - 0.082, MUG_GOAL[1] - 0.045, 0.415)),
)


FAULTS: dict[str, FaultSpec] = {}


def _register(*specs: FaultSpec) -> None:
    FAULTS.update((s.name, s) for s in specs)


_register(
    FaultSpec(
        name="early_release",
        description="the gripper opens mid-transport, 12 cm above the table: the mug falls",
        task="pick_and_place_mug",
        expected_properties=("drop_only_when_released",),
        allowed_properties=("drop_only_when_released", "released_object_settles"),
        inject=_early_release,
    ),
    FaultSpec(
        name="slip",
        description="grip force collapses during a fast transport: the mug slides out of the fingers",
        task="pick_and_place_mug",
        expected_properties=("grasp_synced_until_release",),
        allowed_properties=("grasp_synced_until_release", "drop_only_when_released",
                            "released_object_settles"),
        inject=_slip,
    ),
    FaultSpec(
        name="fixture_collision",
        description="on its way to the plate the hand is driven into the cabinet wall and pressed there",
        task="pick_and_place_plate",
        expected_properties=("no_forbidden_contact",),
        allowed_properties=("no_forbidden_contact", "no_excess_wrench"),
        inject=_fixture_collision,
    ),
    FaultSpec(
        name="reach_into_closed_cabinet",
        description="the mug is put into the cabinet while its door is only 57 % open",
        task="place_in_cabinet",
        expected_properties=("reach_in_only_when_open",),
        allowed_properties=("reach_in_only_when_open", "place_preconditions"),
        fixtures={"cabinet_hinge": 0.9},
    ),
    FaultSpec(
        name="raw_then_clean",
        description="the gripper dumps the raw chicken, then handles the clean plate without sanitising",
        task="dump_into_bin",
        expected_properties=("no_clean_contact_after_raw",),
        allowed_properties=("no_clean_contact_after_raw",),
        inject=_raw_then_clean,
    ),
    FaultSpec(
        name="push_blocked_drawer",
        description="the drawer is jammed open; the arm pushes on its handle and keeps pushing",
        task="close_drawer",
        expected_properties=("fixture_obstacle_retract",),
        allowed_properties=("fixture_obstacle_retract", "no_excess_wrench", "close_preconditions"),
        inject=_push_blocked_drawer,
    ),
    FaultSpec(
        name="place_on_clutter",
        description="the mug is set down with two objects about 12 mm from it",
        task="pick_and_place_mug",
        expected_properties=("place_preconditions",),
        allowed_properties=("place_preconditions",),
        objects=CLUTTER,
    ),
)
