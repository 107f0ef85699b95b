"""ROS parameters declared from the settings schema (`safety_monitor.settings`), so each node's parameters
are the typed, documented, validated settings replay reads from the same file.

Every field becomes a read-only ROS parameter (its help is the description `ros2 param describe` shows).
Values come from `--params-file` (config/nodes.yaml), `-p` or parameter overrides; a wrong type or a value
out of range is a SafetyMonitorError naming the node and the parameter.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.exceptions import ParameterException
from rclpy.node import Node

from safety_monitor.errors import SafetyMonitorError
from safety_monitor.settings import TOPICS_PREFIX, Identity, Topics, validate

T = TypeVar("T")


def declare(node: Node, cls: type[T], prefix: str = "") -> T:
    """Declare every field of `cls` (named `prefix + field`) on `node`; return the validated values."""
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        values[f.name] = _declare_one(node, prefix + f.name, f.default, f.metadata.get("help", ""))
    settings = cls(**values)
    validate(settings, f"node {node.get_fully_qualified_name()}" + (f": {prefix.rstrip('.')}" if prefix else ""))
    return settings


def declare_topics(node: Node) -> Topics:
    return declare(node, Topics, TOPICS_PREFIX)


def _declare_one(node: Node, name: str, default: Any, help_text: str) -> Any:
    where = f"node {node.get_fully_qualified_name()}: parameter {name!r}"
    try:
        if isinstance(default, float):  # accept `1` where `1.0` is meant
            value: Any = node.declare_parameter(
                name, default, ParameterDescriptor(description=help_text, read_only=True, dynamic_typing=True)
            ).value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise SafetyMonitorError(f"{where} must be a number, got {value!r}")
            return float(value)
        return node.declare_parameter(name, default, ParameterDescriptor(description=help_text, read_only=True)).value
    except ParameterException as exc:
        raise SafetyMonitorError(f"{where}: {exc}") from None


def declare_hardware_id(node: Node) -> str:
    """The robot's hardware_id, by the one rule every node applies: the `hardware_id` parameter when set,
    else the node's namespace ('/' read as '_'), else 'robot'. Nodes of one robot share a namespace (or a
    parameter file), so their statuses, events and heartbeat all name the same robot."""
    return declare(node, Identity).hardware_id or node.get_namespace().strip("/").replace("/", "_") or "robot"


def no_clock_note(sim_time: bool, now: float, watched: str) -> str | None:
    """What a node on sim time adds to its status while no /clock message has come (None otherwise): node
    time stands at 0 then, so its watchdog on `watched` can never see time pass (a real robot launched
    with the simulator's settings)."""
    if sim_time and now == 0.0:  # a clock that ran is never back at 0
        return f"use_sim_time and no clock message yet: node time stands at 0, so the {watched} watchdog cannot fire"
    return None


def fix_use_sim_time(node: Node) -> bool:
    """Make rclpy's `use_sim_time` read-only, with a description, and return it: the watchdogs compare
    readings of one clock, and switching between sim and system time at run time jumped it by decades (a
    false STALE and blind frames in the trace). `ros2 param set` is refused; a restart takes the new value."""
    return node.set_descriptor(
        "use_sim_time",
        ParameterDescriptor(
            type=ParameterType.PARAMETER_BOOL,
            description="node clock: /clock (true) or system time (false); fixed at start-up",
            read_only=True,
        ),
    ).bool_value
