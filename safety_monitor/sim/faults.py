"""Named faults with ground truth: each edits a task's world or plan and names the properties it trips.

`expected_properties` must each open at least one violation episode; `allowed_properties` are the
only ones that may (the expected ones plus physical side effects the fault really causes). `truth` counts
what the faulted episode does (sim/truth.py): the denominators its triggers must show.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from safety_monitor.sim import truth as gt
from safety_monitor.sim.controller import ArmController, hand_down
from safety_monitor.sim.script import Act, Grip, Hold, Move, Segment
from safety_monitor.sim.tasks import OPEN, PLACE_GOALS, TASKS, pick, place
from safety_monitor.sim.workcell import ObjectStart, Workcell

Inject = Callable[[list[Segment], Workcell], list[Segment]]


@dataclass(frozen=True)
class FaultSpec:
    """A fault: which task it corrupts, how, which properties must (and may) trip, and what it does."""

    name: str
    description: str
    task: str
    expected_properties: tuple[str, ...]
    allowed_properties: tuple[str, ...]
    truth: gt.GroundTruth
    fixtures: dict[str, float] = field(default_factory=dict, repr=False)
    objects: tuple[ObjectStart, ...] = field(default=(), repr=False)
    inject: Inject = field(default=lambda segments, cell: segments, repr=False)


def _index(segments: list[Segment], label: str) -> int:
    return next(i for i, s in enumerate(segments) if s.label == label)


def _move(segments: list[Segment], label: str) -> tuple[int, Move]:
    """The index and the segment of the move labelled `label` (a fault edits around it)."""
    i = _index(segments, label)
    move = segments[i]
    if not isinstance(move, Move):
        raise TypeError(f"segment {label!r} is a {type(move).__name__}, not a Move")
    return i, move


EASED_OPENING = 0.034  # wider than the mug (radius 0.03) yet below robot.yaml's 0.036 "closed" threshold


def _early_release(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """Half-way through the transport, 12 cm above the table, the fingers ease apart and the mug drops.

    The opening stays below the gripper's "closed" threshold, so no release is commanded or seen:
    the drop happens without one.
    """
    i, transport = _move(segments, "transport")
    goal = np.asarray(transport.position, float)
    start = np.array([*cell.object_position("mug")[:2], goal[2]])
    return segments[:i] + [
        Move("transport", 0.5 * (start + goal), transport.rotation, speed=transport.speed),
        Grip("fingers_ease", EASED_OPENING, 1.0),
        Move("transport", goal, transport.rotation, speed=transport.speed),
        Grip("release", OPEN, 0.4),
        Move("retreat", np.array([0.30, 0.0, 0.60]), hand_down(), speed=0.25),
    ]


def _grip_fails(ctrl: ArmController, cell: Workcell) -> None:
    """Fault hook: the finger drive loses its force; the fingers stay closed but barely squeeze."""
    cell.model.actuator_forcerange[cell.model.actuator("gripper_act").id] = (-0.05, 0.05)


def _slip(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """Grasp the mug deep, lift, and mid-transport the grip force collapses: the mug slides down
    through the still-closed fingers (in contact with them, ever faster) and falls out."""
    i, descend = _move(segments, "descend")
    j, transport = _move(segments, "transport")
    goal = np.asarray(transport.position, float)
    start = np.array([*cell.object_position("mug")[:2], goal[2]])
    deep = [
        Move(
            "descend",
            _offset(descend.position, -0.015),
            descend.rotation,
            speed=descend.speed,
            tolerance=descend.tolerance,
        )
    ]
    return (
        segments[:i]
        + deep
        + segments[i + 1 : j]
        + [
            Move("transport", 0.5 * (start + goal), transport.rotation, speed=transport.speed),
            Act("grip_fails", _grip_fails),
            Hold("watch", 1.0),
            Move("retreat", np.array([0.30, 0.0, 0.60]), hand_down(), speed=0.25),
        ]
    )


def _offset(point, dz: float):
    """A segment target moved up by `dz` (works for fixed points and world-dependent callables)."""
    if callable(point):
        return lambda cell: point(cell) + np.array([0.0, 0.0, dz])
    return np.asarray(point, float) + np.array([0.0, 0.0, dz])


BIN_WALL_PUSH = np.array([0.085, 0.42, 0.445])  # fingertips 1.5 cm into the bin's +x wall, below its rim


def _fixture_collision(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """Before the pick, the empty hand is driven sideways into the bin's wall and pressed there."""
    i = _index(segments, "approach")
    down = hand_down()
    return (
        segments[:i]
        + [
            Move("detour", BIN_WALL_PUSH + np.array([0.12, 0.0, 0.0]), down, speed=0.3),
            Move("strike", BIN_WALL_PUSH, down, speed=0.15, patience=0.2),
            Hold("pressing", 1.6),
            Move("back_off", BIN_WALL_PUSH + np.array([0.12, 0.0, 0.1]), down, speed=0.2),
        ]
        + segments[i:]
    )


def _raw_then_clean(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """After dumping the raw chicken, pick and place the clean plate with the same, unsanitised gripper."""
    return segments + pick("plate") + place("plate", PLACE_GOALS["plate"])


def _jam_drawer(ctrl: ArmController, cell: Workcell) -> None:
    cell.lock_drawer()


WEDGED_CUBE = ObjectStart("cube", (0.5 - 0.01 - 0.025 - 0.0005, 0.31, 0.425))  # against the drawer front


def _push_blocked_drawer(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """A cube is wedged against the drawer front, jamming it; the arm keeps pulling for six seconds."""
    i = _index(segments, "slide")
    return [Act("drawer_jams", _jam_drawer)] + segments[: i + 1] + [Hold("keep_pulling", 6.0)] + segments[i + 1 :]


MUG_GOAL = PLACE_GOALS["mug"]
CLUTTER = (  # two objects 12 mm behind where the mug will stand (the fingers close along y, clear of them)
    ObjectStart("cube", (MUG_GOAL[0] - 0.067, MUG_GOAL[1] + 0.035, 0.425)),
    ObjectStart("raw_chicken", (MUG_GOAL[0] - 0.082, MUG_GOAL[1] - 0.045, 0.415)),
)


WHIP_STEP = 0.019  # rad per 2 ms control step: a 9.5 rad/s cap, 1.5 times the wrist's 6.5 rad/s limit
WHIP_TURN = 2.5  # rad of hand yaw


def _set_speed_cap(step: float) -> Callable[[ArmController, Workcell], None]:
    """Fault hook: the IK's per-step joint cap (the trajectory's speed limit) set to `step`."""

    def effect(ctrl: ArmController, cell: Workcell) -> None:
        ctrl.max_joint_step = step

    return effect


def _overspeed(segments: list[Segment], cell: Workcell) -> list[Segment]:
    """After the retreat, with the joint speed cap lifted, the empty hand whips 2.5 rad round its axis in about
    0.3 s: the wrist roll peaks near 1.45 times its velocity limit (under the 2 times that reads as a position
    jump), then the cap comes back."""
    i, retreat = _move(segments, "retreat")
    cap = ArmController.DEFAULT_MAX_JOINT_STEP
    return segments[: i + 1] + [
        Act("speed_cap_lifted", _set_speed_cap(WHIP_STEP)),
        Move("whip", retreat.position, hand_down(WHIP_TURN), speed=retreat.speed, angular_speed=30.0),
        Hold("whip", 0.5),  # the move ends on its 0.1 s minimum, with the wrist still catching up
        Act("speed_cap_restored", _set_speed_cap(cap)),
    ]


FAULTS: dict[str, FaultSpec] = {}


def _register(*specs: FaultSpec) -> None:
    FAULTS.update((s.name, s) for s in specs)


_register(
    FaultSpec(
        name="early_release",
        description="mid-transport, 12 cm above the table, the fingers ease apart (still 'closed'): the mug drops",
        task="pick_and_place_mug",
        expected_properties=("drop_only_when_released",),
        # the mug falls out of the fingers: a loss, not a release, and not a place (nothing is set down)
        allowed_properties=("drop_only_when_released", "released_object_settles", "grasp_synced_until_release"),
        truth=gt.PICK + gt.LOSS,
        inject=_early_release,
    ),
    FaultSpec(
        name="slip",
        description="mid-transport the grip force collapses: the mug slides down through the closed fingers",
        task="pick_and_place_mug",
        expected_properties=("grasp_synced_until_release",),
        allowed_properties=("grasp_synced_until_release", "drop_only_when_released", "released_object_settles"),
        truth=gt.PICK + gt.LOSS,
        inject=_slip,
    ),
    FaultSpec(
        name="fixture_collision",
        description="before picking the raw chicken, the hand is driven into the bin wall and pressed there",
        task="dump_into_bin",
        expected_properties=("no_forbidden_contact",),
        allowed_properties=("no_forbidden_contact", "no_excess_wrench"),
        truth=TASKS["dump_into_bin"].truth,  # the strike is no skill: the dump goes on as scripted
        inject=_fixture_collision,
    ),
    FaultSpec(
        name="reach_into_closed_cabinet",
        description="the mug is put into the cabinet while its door is only 57 % open",
        task="place_in_cabinet",
        expected_properties=("reach_in_only_when_open",),
        allowed_properties=("reach_in_only_when_open", "place_preconditions"),
        truth=TASKS["place_in_cabinet"].truth,
        fixtures={"cabinet_hinge": 0.9},
    ),
    FaultSpec(
        name="raw_then_clean",
        description="the gripper dumps the raw chicken, then handles the clean plate without sanitising",
        task="dump_into_bin",
        expected_properties=("no_clean_contact_after_raw",),
        allowed_properties=("no_clean_contact_after_raw",),
        truth=TASKS["dump_into_bin"].truth + gt.PICK + gt.PLACE,
        inject=_raw_then_clean,
    ),
    FaultSpec(
        name="push_blocked_drawer",
        description="a cube wedged against the drawer front jams it; the arm pulls on the handle and keeps pulling",
        task="open_drawer",
        # The wedged cube lies in the drawer front's path: opening starts with its preconditions false.
        expected_properties=("fixture_obstacle_retract", "open_preconditions"),
        # The pull far exceeds the grip: it can pry the fingers open (past their joint range, by about 2 cm
        # in the soft limit), and an open hand pressing on the handle is no longer "operating" the drawer
        # (a forbidden contact once it lasts).
        allowed_properties=(
            "fixture_obstacle_retract",
            "no_excess_wrench",
            "open_preconditions",
            "no_forbidden_contact",
            "joint_positions_within_limits",
        ),
        truth=gt.OPEN,  # one attempt to open, though the drawer never moves
        objects=(WEDGED_CUBE,),
        inject=_push_blocked_drawer,
    ),
    FaultSpec(
        name="place_on_clutter",
        description="the mug is set down with two objects about 12 mm from it",
        task="pick_and_place_mug",
        expected_properties=("place_preconditions",),
        allowed_properties=("place_preconditions",),
        truth=gt.PICK + gt.PLACE,  # the clutter beside the goal is not picked: backing off it is no approach
        objects=CLUTTER,
    ),
    FaultSpec(
        name="overspeed",
        description="after the place, the joint speed cap is lifted and the empty hand whips round: the wrist "
        "roll exceeds its velocity limit",
        task="pick_and_place_cube",
        expected_properties=("joint_velocities_within_limits",),
        allowed_properties=("joint_velocities_within_limits",),
        truth=TASKS["pick_and_place_cube"].truth,  # the whip is no skill: the pick and place went as scripted
        inject=_overspeed,
    ),
)
