"""Every limit and default of the live nodes and of replay: one typed schema, validated once.

A site tunes them in one file, config/nodes.yaml (the ROS 2 parameter-file format). The nodes declare
their ROS parameters from these dataclasses (`nodes/params.py`: each field is a read-only parameter whose
description is the field's help), and replay and the in-process sim read the same file with
`load_settings`, so every driver applies the input rules the live stack applies. Ranges live in the
fields' metadata and `validate` checks them for every driver alike.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from safety_monitor.errors import SafetyMonitorError
from safety_monitor.files import load_yaml
from safety_monitor.names import did_you_mean

FROZEN_S = 2.0  # bit-identical joint values or wrench for this long (stamp time): a stuck driver, stale
RESTART_BACKWARDS_S = 3.0  # stamps this far behind the last frame: a restarted input (smaller: time going back)
PREDICATES_TIMEOUT_S = 0.5  # no advancing predicates for this long: the monitor steps a blind frame
DEFAULT_HISTORY = 5000  # frames kept for counterexamples (10 s at 500 Hz: a settle timeout's whole window)
CONTROL_RATE_HZ = 500.0
MAX_SETTINGS_BYTES = 1 << 20  # a parameter file is a few kilobytes; anything near this is not one

T = TypeVar("T")


class SettingsError(SafetyMonitorError):
    """A setting out of its range, of the wrong type, unknown, or a parameter file that cannot be read."""


def setting(
    default: Any, help: str, *, low: float | None = None, above: bool = False, choices: tuple[str, ...] = ()
) -> Any:
    """A field of a settings class: its default, what `ros2 param describe` shows, and its range
    (`low`: the smallest value, excluded when `above`; `choices`: the allowed texts)."""
    return dataclasses.field(default=default, metadata={"help": help, "low": low, "above": above, "choices": choices})


@dataclass(frozen=True)
class Topics:
    """Topic names shared by every node (parameters `topics.<field>`). Relative names follow the
    node's namespace, so one namespace per robot keeps robots apart; `/diagnostics` and `/clock` are
    global by convention (one simulated world per ROS domain)."""

    joint_states: str = setting("joint_states", "sensor_msgs/JointState driving the frames")
    wrench: str = setting("wrist_wrench", "geometry_msgs/WrenchStamped of the wrist sensor ('' = no sensor)")
    object_pose: str = setting("objects/{name}/pose", "geometry_msgs/PoseStamped per object, {name} substituted")
    predicates: str = setting("safety_monitor/predicates", "estimator -> monitor predicate frames")
    events: str = setting("safety_monitor/events", "monitor events (reliable, transient local)")
    episode: str = setting("safety_monitor/episode", "rollout start/end markers")
    heartbeat: str = setting("safety_monitor/heartbeat", "monitor liveness: DiagnosticArray with a sequence number")
    diagnostics: str = setting("/diagnostics", "operator alerts (diagnostic_msgs/DiagnosticArray)")
    clock: str = setting("/clock", "simulated time published by the sim node")


@dataclass(frozen=True)
class Identity:
    """Who every node speaks for: the one `hardware_id` of the robot on every topic it publishes (estimator
    and monitor diagnostics, predicates, events, heartbeat, episode markers). Each node declares it."""

    hardware_id: str = setting(
        "",
        "the robot's hardware_id on every topic ('' = the namespace, '/' read as '_', "
        "or 'robot' in the root namespace)",
    )


@dataclass(frozen=True)
class EstimatorSettings:
    """The estimator stage: robot topics -> predicate frames (the estimator node, robot-state replay)."""

    config_dir: str = setting(
        "",
        "folder with robot.yaml (or that YAML itself); objects.yaml and thresholds.yaml "
        "beside it, each the package's where it has none ('' = the package's)",
    )
    control_rate_hz: float = setting(
        CONTROL_RATE_HZ, "rate of /joint_states: threshold durations become frame counts", low=0.0, above=True
    )
    joint_states_timeout_s: float = setting(
        0.1,
        "watchdog: no /joint_states for this long (node clock: sim time under use_sim_time) -> STALE",
        low=0.0,
        above=True,
    )
    joint_states_frozen_s: float = setting(
        FROZEN_S,
        "identical /joint_states values for this long (stamp time) -> STALE, predicates unknown (0 = off)",
        low=0.0,
    )
    wrench_frozen_s: float = setting(
        FROZEN_S,
        "identical wrench values for this long (stamp time) -> wrench stale, its predicates unknown (0 = off)",
        low=0.0,
    )
    wrench_stale_s: float = setting(
        0.0, "wrench older than this at a frame: its predicates unknown (0 = thresholds.yaml)", low=0.0
    )
    pose_stale_s: float = setting(
        0.0, "object pose older than this at a frame: its predicates unknown (0 = thresholds.yaml)", low=0.0
    )
    restart_backwards_s: float = setting(
        RESTART_BACKWARDS_S,
        "a /joint_states stamp this far behind the last frame is a restarted input: the "
        "estimator starts a new rollout (smaller jumps are dropped as time going backwards)",
        low=0.0,
        above=True,
    )
    best_effort_inputs: bool = setting(False, "subscribe to the robot topics best effort (sensors that offer no more)")
    topics_file: str = setting(
        "",
        "topic mapping YAML, as replay's --topics takes it (joint_order, joint_names, joint_prefix, "
        "gripper_joint_states, more_joint_states, object_frames, base_frame, world_frame, tf, ...); its keys win over the "
        "topics.* parameters ('' = none)",
    )
    robot_description_topic: str = setting(
        "",
        "take the URDF from this std_msgs/String topic (transient local, as "
        "robot_state_publisher publishes /robot_description) instead of the "
        "robot description's urdf: file; STALE until it arrives ('' = off)",
    )
    diagnostics_period_s: float = setting(
        1.0, "period of the full /diagnostics report (changes go out at once)", low=0.0, above=True
    )


@dataclass(frozen=True)
class MonitorSettings:
    """The supervisor and monitor stage: predicate frames -> events (the monitor node, every replay)."""

    specs: str = setting("", "spec file ('' = the package's config/specs.yaml)")
    events_log: str = setting("", "JSON Lines event log ('' = $ROS_HOME/safety_monitor/events[_<namespace>].jsonl)")
    predicates_timeout_s: float = setting(
        PREDICATES_TIMEOUT_S,
        "no advancing predicates for this long (node clock live, log time in replay): STALE, properties unknown",
        low=0.0,
        above=True,
    )
    predicates_frozen_s: float = setting(
        PREDICATES_TIMEOUT_S,
        "predicate stamps not advancing for this long: STALE, properties unknown",
        low=0.0,
        above=True,
    )
    restart_backwards_s: float = setting(
        RESTART_BACKWARDS_S,
        "a predicates stamp this far behind the last frame is a restarted input: the old "
        "rollout ends (open episodes input_ended), a new one starts",
        low=0.0,
        above=True,
    )
    heartbeat_period_s: float = setting(0.2, "period of safety_monitor/heartbeat", low=0.0, above=True)
    diagnostics_period_s: float = setting(
        1.0, "period of the full /diagnostics report (changes go out at once)", low=0.0, above=True
    )
    history_frames: int = setting(DEFAULT_HISTORY, "frames of predicate values kept for counterexamples", low=1)
    control_rate_hz: float = setting(
        CONTROL_RATE_HZ, "frame rate of the predicates; converts spec spans given in seconds", low=0.0, above=True
    )
    sync_before_publish: bool = setting(
        False, "fsync the event log before publishing (power-loss proof; adds the disk's sync time to latency)"
    )
    events_log_fallback: str = setting(
        "",
        "JSON Lines file that takes the events while events_log refuses writes "
        "(a full disk, an I/O error; '' = none: they are held in memory)",
    )
    events_log_hold: int = setting(
        10_000,
        "events held in memory while no log file takes them; beyond this, newer "
        "ones are dropped and counted (an events_lost record)",
        low=1,
    )


PACES = ("realtime", "lockstep")


@dataclass(frozen=True)
class SimSettings:
    """The simulator node's episodes and pace."""

    task: str = setting("", "task of every episode ('' = the fault's task, pick_and_place_cube without fault)")
    fault: str = setting(
        "",
        "fault of every episode ('none' = fault-free), a comma-separated list to cycle, "
        "or '' to cycle fault-free then each fault",
    )
    episodes: int = setting(1, "episodes to run (seeds seed, seed+1, ...)", low=1)
    seed: int = setting(0, "seed of the first episode", low=0)
    pace: str = setting(
        "realtime", "'realtime' (wall-clock timer) or 'lockstep' (as fast as predicates return)", choices=PACES
    )
    realtime_factor: float = setting(1.0, "realtime pace: simulated seconds per wall second", low=0.0, above=True)
    max_in_flight: int = setting(
        1,
        "lockstep pace: frames published but not yet answered by predicates (more "
        "pipelines processes, but a frame may then meet a slower stream's next sample)",
        low=1,
    )
    ack_timeout_s: float = setting(
        2.0, "lockstep pace: wall seconds without predicates before moving on anyway", low=0.0, above=True
    )
    episode_gap_s: float = setting(
        0.3,
        "pause between episodes, wall seconds (simulated time stands still "
        "over it: the next episode starts one control period after the last frame)",
        low=0.0,
    )
    shutdown_when_done: bool = setting(True, "exit after the last episode")


@dataclass(frozen=True)
class NodeSettings:
    """What one parameter file sets for each node (the package's defaults where it says nothing)."""

    topics: Topics = dataclasses.field(default_factory=Topics)
    identity: Identity = dataclasses.field(default_factory=Identity)
    estimator: EstimatorSettings = dataclasses.field(default_factory=EstimatorSettings)
    monitor: MonitorSettings = dataclasses.field(default_factory=MonitorSettings)
    sim: SimSettings = dataclasses.field(default_factory=SimSettings)


# parameter-file node names -> the NodeSettings field they set
NODES = {"estimator_node": "estimator", "monitor_node": "monitor", "sim_node": "sim"}
TOPICS_PREFIX = "topics."


def build(cls: type[T], values: Mapping[str, Any], where: str) -> T:
    """`cls` from `values` (defaults for the rest), every value checked against its field: type and range.
    `1` is accepted where a float is meant; booleans are only true/false (never 1/0)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    if unknown := sorted(set(values) - set(fields)):
        raise SettingsError(f"{where}: unknown setting {_nearest(unknown[0], fields)}")
    out = {}
    for name, value in values.items():
        f = fields[name]
        out[name] = _checked(value, f.default, f.metadata, f"{where}: {name}")
    return cls(**out)


def validate(settings: Any, where: str) -> None:
    """Check every field of a settings object (built elsewhere, e.g. from ROS parameters) as `build` does."""
    build(type(settings), {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}, where)


def _checked(value: Any, default: Any, meta: Mapping[str, Any], where: str) -> Any:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise SettingsError(f"{where} must be true or false, got {value!r}")
        return value
    if isinstance(default, (int, float)):
        whole = type(default) is int
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            raise SettingsError(f"{where} must be {'a whole number' if whole else 'a number'}, got {value!r}")
        if not math.isfinite(value):
            raise SettingsError(f"{where} must be finite, got {value!r}")
        low, above = meta.get("low"), meta.get("above")
        if low is not None and (value <= low if above else value < low):
            raise SettingsError(f"{where} must be {'>' if above else '>='} {low:g}, got {value!r}")
        return value if whole else float(value)
    if not isinstance(value, str):
        raise SettingsError(f"{where} must be a string, got {value!r}")
    if (choices := meta.get("choices")) and value not in choices:
        raise SettingsError(f"{where} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _nearest(name: str, known: Mapping[str, Any]) -> str:
    return f"{name!r}" + (did_you_mean(name, known) or f"; known: {', '.join(sorted(known))}")


def load_settings(path: str | Path) -> NodeSettings:
    """The settings a ROS 2 parameter file gives each node, as rcl applies them: the `/**` section first,
    then the sections named after a node (any namespace). A parameter no node declares is an error (a
    typo would otherwise leave a default silently in force), and so is a file with none of these sections;
    rclpy's own (RCLPY_PARAMETERS) are left to rclpy, so a `ros2 param dump` of the nodes loads."""
    where = f"parameter file {path}"
    doc = load_yaml(path, "parameter file", SettingsError, MAX_SETTINGS_BYTES)
    if not isinstance(doc, Mapping):
        raise SettingsError(f"{where}: expected a ROS 2 parameter file (a mapping of node names)")
    values: dict[str, dict[str, Any]] = {"topics": {}, "identity": {}, **{section: {} for section in NODES.values()}}
    sections = [key for key in doc if key == "/**"] + [key for key in doc if _node_of(key) is not None]
    if not sections:  # a spec file or another stack's parameters: every default would apply unsaid
        keys = ", ".join(map(str, list(doc)[:5])) + (", ..." if len(doc) > 5 else "")
        raise SettingsError(
            f"{where}: no section for /**, {', '.join(NODES)} (it has: {keys or 'nothing'}); "
            "not the nodes' parameter file"
        )
    for key in sections:
        body = doc[key]
        params = body.get("ros__parameters") if isinstance(body, Mapping) else None
        if not isinstance(params, Mapping):
            raise SettingsError(f"{where}: section {key!r} has no ros__parameters mapping")
        targets = list(NODES.values()) if key == "/**" else [NODES[_node_of(key)]]  # type: ignore[index]
        for name, value in _flatten(params):
            if name.startswith(TOPICS_PREFIX):
                values["topics"][name[len(TOPICS_PREFIX) :]] = value
                continue
            if name in _IDENTITY_FIELDS:  # every node declares it
                values["identity"][name] = value
                continue
            if name in RCLPY_PARAMETERS:
                continue
            owners = [t for t in targets if name in _FIELDS[t]]
            if not owners:
                known = {n: None for t in targets for n in _FIELDS[t]}
                raise SettingsError(f"{where}: section {key!r}: unknown parameter {_nearest(name, known)}")
            for owner in owners:
                values[owner][name] = value
    return NodeSettings(
        topics=build(Topics, values["topics"], f"{where}: topics"),
        identity=build(Identity, values["identity"], where),
        estimator=build(EstimatorSettings, values["estimator"], f"{where}: estimator_node"),
        monitor=build(MonitorSettings, values["monitor"], f"{where}: monitor_node"),
        sim=build(SimSettings, values["sim"], f"{where}: sim_node"),
    )


_IDENTITY_FIELDS = {f.name for f in dataclasses.fields(Identity)}
# declared by rclpy on every node, so `ros2 param dump` writes them; rclpy reads them, not these settings
RCLPY_PARAMETERS = frozenset({"use_sim_time", "start_type_description_service"})
_FIELDS = {
    "estimator": {f.name for f in dataclasses.fields(EstimatorSettings)},
    "monitor": {f.name for f in dataclasses.fields(MonitorSettings)},
    "sim": {f.name for f in dataclasses.fields(SimSettings)},
}


def _node_of(key: Any) -> str | None:
    last = str(key).rstrip("/").rsplit("/", 1)[-1]
    return last if last in NODES else None


def _flatten(params: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested parameter mappings (`topics: {events: ...}`) -> dotted names, as rcl reads them."""
    out: list[tuple[str, Any]] = []
    for name, value in params.items():
        if isinstance(value, Mapping):
            out += _flatten(value, f"{prefix}{name}.")
        else:
            out.append((f"{prefix}{name}", value))
    return out
