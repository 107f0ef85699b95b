"""Reading an episode marker off a subscription, where a malformed marker is logged and dropped instead of
stopping the node (the typed marker and its wire format are `pipeline/markers.py`)."""

from __future__ import annotations

from typing import Any

from safety_monitor.errors import SourceError
from safety_monitor.pipeline.markers import EpisodeMarker, decode_marker


def read_marker(node: Any, msg: Any) -> EpisodeMarker | None:
    """The marker in `msg`, or None after logging why it is malformed (a bad marker never stops a node)."""
    try:
        return decode_marker(msg)
    except SourceError as exc:
        node.get_logger().error(str(exc))
        return None
