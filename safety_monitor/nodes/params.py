"""Node parameters declared from a typed dataclass, so each node's settings are one documented type.

Every field becomes a read-only ROS parameter (its `help` metadata is the description `ros2 param
describe` shows). Values come from `--params-file` (config/nodes.yaml), `-p` or parameter overrides;
a wrong type is a SafetyMonitorError naming the node and the parameter.
"""
from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterException
from rclpy.node import Node

from safety_monitor.errors import SafetyMonitorError

T = TypeVar("T")


def field(default: Any, help: str) -> Any:  # noqa: A002 - mirrors argparse
    """A parameter field: its default and the description shown by `ros2 param describe`."""
    return dataclasses.field(default=default, metadata={"help": help})


def declare(node: Node, cls: type[T], prefix: str = "") -> T:
    """Declare every field of `cls` (named `prefix + field`) on `node`; return the values it ends up with."""
    values = {}
    for f in dataclasses.fields(cls):
        values[f.name] = _declare_one(node, prefix + f.name, f.default, f.metadata.get("help", ""))
    return cls(**values)


@dataclasses.dataclass(frozen=True)
class Topics:
    """Topic names shared by every node (parameters `topics.<field>`). Relative names follow the
    node's namespace, so one namespace per robot keeps robots apart; `/diagnostics` and `/clock` are
    global by convention (one simulated world per ROS domain)."""

    joint_states: str = field("joint_states", "sensor_msgs/JointState driving the frames")
    wrench: str = field("wrist_wrench", "geometry_msgs/WrenchStamped of the wrist sensor ('' = no sensor)")
    object_pose: str = field("objects/{name}/pose", "geometry_msgs/PoseStamped per object, {name} substituted")
    predicates: str = field("safety_monitor/predicates", "estimator -> monitor predicate frames")
    events: str = field("safety_monitor/events", "monitor events (reliable, transient local)")
    episode: str = field("safety_monitor/episode", "rollout start/end markers")
    heartbeat: str = field("safety_monitor/heartbeat", "monitor liveness: DiagnosticArray with a sequence number")
    diagnostics: str = field("/diagnostics", "operator alerts (diagnostic_msgs/DiagnosticArray)")
    clock: str = field("/clock", "simulated time published by the sim node")


def declare_topics(node: Node) -> Topics:
    return declare(node, Topics, "topics.")


def _declare_one(node: Node, name: str, default: Any, help_text: str) -> Any:
    where = f"node {node.get_fully_qualified_name()}: parameter {name!r}"
    try:
        if isinstance(default, float):  # accept `1` where `1.0` is meant
            value = node.declare_parameter(
                name, default, ParameterDescriptor(description=help_text, read_only=True, dynamic_typing=True)).value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise SafetyMonitorError(f"{where} must be a number, got {value!r}")
            return float(value)
        return node.declare_parameter(name, default, ParameterDescriptor(description=help_text, read_only=True)).value
    except ParameterException as exc:
        raise SafetyMonitorError(f"{where}: {exc}") from None
