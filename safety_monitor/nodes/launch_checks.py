"""What the launch files share: launch arguments checked before any process starts, and a launch that
fails (non-zero exit, with the reason) when one of its nodes does.

A launch argument is text; each is read as the type of the settings field it sets (`safety_monitor.settings`)
and checked with the same ranges the nodes apply, so `episodes:=abc` or `realtime_factor:=fast` stops
`ros2 launch` with one error line before a node runs (and none is left behind). An exception raised inside
a launch action or event handler makes `LaunchService.run()`, hence `ros2 launch`, return 1 after shutting
down what runs, logging "Caught exception in launch: <reason>".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from launch.actions import RegisterEventHandler
from launch.event_handlers import OnProcessExit

from safety_monitor.errors import SafetyMonitorError
from safety_monitor.settings import build, load_settings

T = TypeVar("T")


class LaunchArgumentError(SafetyMonitorError):
    """A launch argument that is not of its setting's type or range, or a node that exited with an error."""


def checked(cls: type[T], arguments: Mapping[str, str], where: str) -> T:
    """`cls` from launch arguments (name -> text), each read as its field's type and range-checked."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return build(
        cls,
        {name: typed(text, fields[name].default, f"{where}: {name}:={text}") for name, text in arguments.items()},
        where,
    )


def typed(text: str, default: Any, where: str) -> Any:
    """A launch argument's text as the type of `default`: booleans are true/false (any case) only."""
    if isinstance(default, bool):
        if text.lower() not in ("true", "false"):
            raise LaunchArgumentError(f"{where}: must be true or false")
        return text.lower() == "true"
    if isinstance(default, int):
        try:
            return int(text)
        except ValueError:
            raise LaunchArgumentError(f"{where}: must be a whole number") from None
    if isinstance(default, float):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise LaunchArgumentError(f"{where}: must be a finite number")
        return value
    return text


def check_params_file(path: str) -> None:
    """The node parameter file, as every node will read it (unknown names, types, ranges)."""
    load_settings(path)


def fail_when_a_node_fails(nodes: Iterable[Any], where: str) -> list[RegisterEventHandler]:
    """A handler per node: a node that exits non-zero while the launch is not shutting down ends the launch
    with that reason and exit code 1 (launch's own default is to log it and return 0)."""

    def on_exit(event: Any, context: Any) -> None:
        if event.returncode != 0 and not context.is_shutdown:
            raise LaunchArgumentError(
                f"{where}: {event.action.name} exited with code {event.returncode}; its log above says why"
            )

    return [RegisterEventHandler(OnProcessExit(target_action=node, on_exit=on_exit)) for node in nodes]
