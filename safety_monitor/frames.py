"""The types every pipeline stage passes (DESIGN.md section 2).

`JointSample` and the latest wrench and poses (sources) -> `RobotState` (assembler) -> `PredicateSample`
(grounder) -> monitor; `StreamIssue` says what was wrong with an input on the way. `RobotState` is one
control frame of everything the estimators may read.

Every source (live topics, a rosbag, the simulator) is only an adapter that builds these.
Slower streams are sampled at the control frame as their latest value plus its age in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

from safety_monitor.enums import IssueKind
from safety_monitor.records import direct_init

SAME_TIME_S = 1e-6  # frame times this close name the same frame (a stamp rounded to nanoseconds)
BASE_POSE = "base_pose"  # the stream of a mobile base's pose in the world, in stale sets and issues
_NO_EVENTS: frozenset[str] = frozenset()


# The messages' values (Pose, Wrench, JointSample), each frame's RobotState and PredicateSample are built for
# every message or frame: `direct_init` fills their dicts instead of a checked setattr per field.


@direct_init
@dataclass(frozen=True)
class Pose:
    """Position (m, world frame) and orientation as a unit quaternion (w, x, y, z), MuJoCo's order."""

    position: np.ndarray  # shape (3,)
    quaternion: np.ndarray  # shape (4,), w first


@direct_init
@dataclass(frozen=True)
class Wrench:
    """Force (N) and torque (N m) at the wrist sensor, in the sensor frame."""

    force: np.ndarray  # shape (3,)
    torque: np.ndarray  # shape (3,)


@dataclass(frozen=True)
class Contact:
    """A privileged simulator contact between two named bodies (validation only; hardware has none)."""

    body1: str
    body2: str
    distance: float  # negative: penetration depth


@direct_init
@dataclass(frozen=True)
class RobotState:
    """Snapshot of one control frame. `t` is in seconds and must increase frame to frame."""

    t: float
    joint_names: tuple[str, ...]
    joint_position: np.ndarray
    joint_velocity: np.ndarray | None = None
    joint_effort: np.ndarray | None = None
    # per joint, the stamp of its latest position: a joint on a slower topic of its own (a gripper's driver)
    # lags `t`, and its motion is timed by its own samples; None: every joint was sampled at `t`
    joint_stamps: np.ndarray | None = None
    wrench: Wrench | None = None
    wrench_age: float | None = None
    object_poses: Mapping[str, Pose] = field(default_factory=dict)
    object_ages: Mapping[str, float] = field(default_factory=dict)  # seconds since each pose arrived
    contacts: tuple[Contact, ...] | None = None  # None: no privileged contacts (hardware)
    events: frozenset[str] = _NO_EVENTS  # discrete external events this frame, e.g. "sanitized"
    # a mobile base's pose in the world frame and its age (s), as a slower stream's; read only by a grounder
    # built with `mobile_base`, for which None is a base whose place is unknown (never received, stale or NaN)
    base_pose: Pose | None = None
    base_age: float | None = None

    def joint(self, name: str) -> float:
        """Position of one joint by name (KeyError names the joint)."""
        try:
            return float(self.joint_position[self.joint_names.index(name)])
        except ValueError:
            raise KeyError(f"joint {name!r} is not in this frame's joint_states") from None


@direct_init
@dataclass(frozen=True)
class JointSample:
    """One sensor_msgs/JointState as plain values. Empty velocity/effort lists become None."""

    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray | None
    effort: np.ndarray | None
    stamp: float


class FrozenValues(dict[str, bool]):
    """Predicate values no one may change: the grounder hands out the same object while none of its decisions
    changes, so a reader that kept the last one knows the next equal by identity (`Supervisor.sample`), where a
    plain dict would need a comparison and a copy each frame. Its mutators raise; a copy (`dict(v)`, `v.copy()`,
    `v | other`) is a plain dict to change."""

    __slots__ = ()

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("predicate values are read-only: change a copy (dict(values))")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[type[FrozenValues], tuple[dict[str, bool]]]:
        return FrozenValues, (dict(self),)  # (pickle's default would fill it through __setitem__)


@direct_init
@dataclass(frozen=True)
class PredicateSample:
    """One frame of predicate values as carried on `/safety_monitor/predicates`. `objects`: for each
    object-bound predicate that holds, the objects it is about (empty from publishers that do not say,
    such as bags recorded before it was carried)."""

    values: Mapping[str, bool]
    t: float
    frame: int | None = None  # None: the publisher did not say (external estimators)
    unknown: frozenset[str] = frozenset()
    stale: frozenset[str] = frozenset()
    objects: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def valuation(self) -> dict[str, bool | None]:
        """What the monitor steps on: the values, with None for every unknown predicate."""
        unknown = self.unknown
        if not unknown:
            return dict(self.values)
        return {k: (None if k in unknown else v) for k, v in self.values.items()}


@dataclass(frozen=True)
class StreamIssue:
    """A problem with one input message or stream, at stamp `t` of `stream` (joint_states, wrench,
    object_pose/<name>, predicates)."""

    kind: IssueKind
    stream: str
    t: float
    detail: str
