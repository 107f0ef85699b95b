"""Rollout boundaries on `safety_monitor/episode` (diagnostic_msgs/DiagnosticArray, transient local).

A marker is keyed by frame time, not by arrival order, because messages on different topics may be
handled in any order: `start` carries the first frame's time (the estimator resets its debounce state
before the first frame at or after it), `end` the last frame's time (the Supervisor closes the trace
once it has stepped that frame). Layout: one status named `safety_monitor/episode`, `message` the kind,
`values` the remaining fields as JSON (`t` exact; publishers may leave it out), `header.stamp` the
keyed time. Times within SAME_TIME_S count as equal. Without markers (a real robot) the whole run is
one trace. Pure: any DiagnosticArray-shaped message (rclpy's or rosbags') reads and builds alike.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from enum import StrEnum
from types import SimpleNamespace
from typing import Any

from safety_monitor.errors import SourceError
from safety_monitor.io.messages import header, stamp_seconds

STATUS_NAME = "safety_monitor/episode"


class MarkerKind(StrEnum):
    START = "start"
    END = "end"


START, END = MarkerKind.START, MarkerKind.END


@dataclass(frozen=True)
class EpisodeMarker:
    """`index` counts rollouts from 0; `frames` and `succeeded` are known only on `end`."""

    kind: MarkerKind
    index: int
    t: float
    task: str = ""
    fault: str = ""
    seed: int = 0
    frames: int | None = None
    succeeded: bool | None = None


def marker_msg(types: SimpleNamespace, marker: EpisodeMarker, hardware_id: str = "sim") -> Any:
    fields = asdict(marker)
    kind, t = fields.pop("kind"), fields["t"]  # `t` also in values: exact, where the stamp rounds to ns
    status = types.DiagnosticStatus(
        level=types.DiagnosticStatus.OK,
        name=STATUS_NAME,
        message=str(kind),
        hardware_id=hardware_id,
        values=[types.KeyValue(key=k, value=json.dumps(v)) for k, v in fields.items()],
    )
    return types.DiagnosticArray(header=header(types, t), status=[status])


# each value's JSON type: a marker of another type would fail later, in the Supervisor's comparisons or
# the rollout's name, where a malformed marker can no longer be dropped with a message
_TYPES: dict[str, tuple[type, ...]] = {
    "index": (int,),
    "t": (int, float),
    "task": (str,),
    "fault": (str,),
    "seed": (int,),
    "frames": (int, type(None)),
    "succeeded": (bool, type(None)),
}


def decode_marker(msg: Any) -> EpisodeMarker:
    statuses = [s for s in msg.status if s.name == STATUS_NAME]
    if len(statuses) != 1 or statuses[0].message not in (START, END):
        raise SourceError(f"episode marker: expected one status {STATUS_NAME!r} with message start or end")
    status = statuses[0]
    try:
        fields: dict[str, Any] = {"t": stamp_seconds(msg.header.stamp)}
        fields.update((str(kv.key), json.loads(kv.value)) for kv in status.values)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, an integer of 4300+ digits, deep nesting
        raise SourceError(f"episode marker: malformed values: {exc}") from None
    for key, value in fields.items():
        allowed = _TYPES.get(key)
        if allowed is None:
            raise SourceError(f"episode marker: unknown value {key!r} (known: {', '.join(_TYPES)})")
        if (isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed):
            raise SourceError(
                f"episode marker: {key} is {value!r:.40}, expected {' or '.join(t.__name__ for t in allowed)}"
            )
    if "index" not in fields:
        raise SourceError("episode marker: no index")
    try:
        fields["t"] = float(fields["t"])
    except OverflowError:
        fields["t"] = math.inf
    if not math.isfinite(fields["t"]):
        raise SourceError(f"episode marker: t is {fields['t']}, expected a finite time")
    return EpisodeMarker(kind=MarkerKind(status.message), **fields)
