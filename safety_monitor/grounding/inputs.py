"""What every estimator reads each frame (built once by the Grounder), and how predicates are documented."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from safety_monitor.frames import Wrench
from safety_monitor.grounding.geometry import FrameGeometry


class FrameInputs(NamedTuple):
    """One frame's validated readings. None means unknown (missing, NaN or stale), never False.

    Immutable as a NamedTuple, which builds in a sixth of a frozen dataclass's time (one per frame)."""

    t: float
    frame: int
    geometry: FrameGeometry
    gripper_closed: bool
    fixture_fraction: Mapping[str, float]  # open fraction of each fixture's range (0 closed, 1 open)
    fixture_delta: Mapping[str, float | None]  # open-fraction change over the motion window
    object_speed: Mapping[str, tuple[float, float] | None]  # (m/s, rad/s) per object
    object_slip: Mapping[str, tuple[float, float] | None]  # (m, rad) drift relative to the EE over the window
    wrench: Wrench | None
    events: frozenset[str]


@dataclass(frozen=True)
class PredicateDoc:
    """One predicate's row in the table of docs/predicates.md."""

    meaning: str
    inputs: str
    thresholds: str
