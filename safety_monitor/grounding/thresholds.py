"""Grounding thresholds (config/thresholds.yaml): durations in seconds, converted to frames per control rate.

The paper counts frames at 20 Hz; keeping seconds in config and converting with the actual rate makes a
500 Hz robot and a 20 Hz recording mean the same thing (at 20 Hz the paper's counts come back exactly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from safety_monitor.errors import GroundingError
from safety_monitor.grounding.config_file import read_config
from safety_monitor.names import did_you_mean


@dataclass(frozen=True)
class Durations:
    """Durations in seconds (see config/thresholds.yaml for each one's paper frame count)."""

    grasp_persistence: float
    stability_persistence: float
    content_entry_persistence: float
    skill_onset_window: float
    forbidden_contact_tolerance: float
    clean_contact_tolerance: float
    settle_timeout: float
    retract_timeout: float
    transfer_timeout: float
    wrench_persistence: float
    motion_window: float


@dataclass(frozen=True)
class FrameCounts:
    """The durations as whole control frames at one control rate."""

    grasp_persistence: int
    stability_persistence: int
    content_entry_persistence: int
    skill_onset_window: int
    forbidden_contact_tolerance: int
    clean_contact_tolerance: int
    settle_timeout: int
    retract_timeout: int
    transfer_timeout: int
    wrench_persistence: int
    motion_window: int


@dataclass(frozen=True)
class Motion:
    linear_stability_mps: float
    angular_stability_radps: float
    grasp_slip_m: float
    grasp_slip_rad: float
    fixture_motion_delta: float


@dataclass(frozen=True)
class Distances:
    gripper_clearance: float
    contact: float
    reach: float
    placement_margin: float
    placement_proximity: float
    path_obstruction: float


@dataclass(frozen=True)
class Counts:
    bilateral_contact_bodies: int
    clutter_bound: int


@dataclass(frozen=True)
class FixtureFractions:
    fully_open_fraction: float
    fully_closed_fraction: float


@dataclass(frozen=True)
class WrenchLimits:
    force_n: float
    torque_nm: float


@dataclass(frozen=True)
class MaxAges:
    wrench: float
    object_pose: float


@dataclass(frozen=True)
class JointLimitMargins:
    """How the model's joint limits are read. Position: a reading counts as within its limits up to
    `position_tolerance` of the joint's range beyond either limit (encoders and soft limits overshoot a
    little). Velocity and effort: within `velocity_factor` and `effort_factor` times the limit. Jump: a
    position step between consecutive frames larger than `jump_factor` times the velocity limit times the
    frame period (an encoder wrap or glitch, not motion)."""

    position_tolerance: float
    velocity_factor: float
    effort_factor: float
    jump_factor: float


@dataclass(frozen=True)
class BaseJump:
    """When a mobile base's pose (from TF) jumped: a step from one pose to the next further than the base drives
    over the time between them (`linear_speed_mps`, `angular_speed_radps`) plus `noise_m` and `noise_rad`
    (localisation noise, stamp jitter) is a localisation reset or glitch, not a drive. The pose is then not
    trusted until its poses have stepped plausibly for `trust_after_s`. The defaults hold for a thresholds.yaml
    written before the section existed."""

    linear_speed_mps: float = 2.0
    angular_speed_radps: float = 3.0
    noise_m: float = 0.05
    noise_rad: float = 0.1
    trust_after_s: float = 0.5


@dataclass(frozen=True)
class Sanitized:
    """Where `sanitized` comes from: an event name in RobotState.events, or a constant pinned in config."""

    event: str
    constant: bool | None


@dataclass(frozen=True)
class Thresholds:
    durations_s: Durations
    motion: Motion
    distances_m: Distances
    counts: Counts
    fixtures: FixtureFractions
    wrench: WrenchLimits
    max_age_s: MaxAges
    joint_limits: JointLimitMargins
    base_jump: BaseJump
    sanitized: Sanitized
    source: str = "<defaults>"

    def frames(self, control_rate_hz: float) -> FrameCounts:
        """Every duration as frames at `control_rate_hz`: max(1, round(seconds * rate))."""
        if not (isinstance(control_rate_hz, (int, float)) and math.isfinite(control_rate_hz) and control_rate_hz > 0):
            raise GroundingError(f"control rate must be a positive number of Hz, got {control_rate_hz!r}")
        d = self.durations_s
        return FrameCounts(**{f.name: max(1, round(getattr(d, f.name) * control_rate_hz)) for f in fields(Durations)})

    @property
    def largest_report_distance(self) -> float:
        """How far apart two surfaces may be and still matter to a predicate (the twin's contact margin)."""
        d = self.distances_m
        return max(
            d.gripper_clearance, d.contact, d.reach, d.placement_margin, d.placement_proximity, d.path_obstruction
        )


_SECTIONS = {
    "durations_s": Durations,
    "motion": Motion,
    "distances_m": Distances,
    "counts": Counts,
    "fixtures": FixtureFractions,
    "wrench": WrenchLimits,
    "max_age_s": MaxAges,
    "joint_limits": JointLimitMargins,
    "base_jump": BaseJump,
}
_OPTIONAL = frozenset({"base_jump"})  # sections added since `robot init` began copying the file: defaults if absent


def load_thresholds(path: str | Path) -> Thresholds:
    """Read and validate config/thresholds.yaml; GroundingError names the file and key at fault."""
    path = Path(path)
    doc = read_config(path, "thresholds")
    return parse_thresholds(doc, str(path))


def parse_thresholds(doc: Any, source: str) -> Thresholds:
    if not isinstance(doc, dict):
        raise GroundingError(f"{source}: expected a mapping of threshold sections")
    extra = sorted(map(str, set(doc) - set(_SECTIONS) - {"sanitized"}))  # YAML keys may be numbers, booleans, null
    if extra:
        raise GroundingError(f"{source}: unknown section(s) {', '.join(extra)}")
    parts: dict[str, Any] = {}
    for section, cls in _SECTIONS.items():
        if section in _OPTIONAL and section not in doc:
            parts[section] = cls()
            continue
        raw = doc.get(section)
        if not isinstance(raw, dict):
            raise GroundingError(f"{source}: section {section!r} is missing or not a mapping")
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(raw) - set(names), key=str)
        missing = [n for n in names if n not in raw]
        if unknown or missing:
            named = ", ".join(f"{k!r}{did_you_mean(str(k), missing)}" for k in unknown) or "none"
            raise GroundingError(f"{source}: {section}: unknown key(s) {named}, missing key(s) {missing}")
        values = {}
        for n in names:
            v = raw[n]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise GroundingError(f"{source}: {section}.{n} must be a non-negative number, got {v!r}")
            values[n] = int(v) if cls is Counts else float(v)
        parts[section] = cls(**values)
    fx = parts["fixtures"]
    if not 0 <= fx.fully_closed_fraction < fx.fully_open_fraction <= 1:
        raise GroundingError(f"{source}: fixtures: need 0 <= fully_closed_fraction < fully_open_fraction <= 1")
    san = doc.get("sanitized") or {}
    if not isinstance(san, dict):
        raise GroundingError(f"{source}: sanitized must be a mapping with 'event' and 'constant'")
    event, constant = san.get("event"), san.get("constant")
    if not isinstance(event, str) or not event:
        raise GroundingError(f"{source}: sanitized.event must name the RobotState event that sanitizes the robot")
    if constant is not None and not isinstance(constant, bool):
        raise GroundingError(f"{source}: sanitized.constant must be true, false or null, got {constant!r}")
    return Thresholds(**parts, sanitized=Sanitized(event, constant), source=source)
