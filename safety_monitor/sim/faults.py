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
    cell.model.actuator_forcerange[6:8] = (-0.4, 0.4)


def _slip(segments: list[Segment], cell: Workcell) -> list[Segment]:
    i = _index(segments, "transport")
    transport = segments[i]
    return segments[:i] + [Act("grip_weakens", _weak_grip),
                           Move("transport", transport.position, transport.rotation, speed=0.5),
                           Hold("watch", 1.0)]


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
)
