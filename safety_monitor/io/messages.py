"""ROS message <-> plain-value converters shared by the live nodes and bag replay.

Readers are duck-typed on field names, so they take rclpy messages and rosbags-deserialised
dataclasses alike. Writers build messages from a `MessageTypes` namespace: `rclpy_types()` for
publishing, `rosbags_types()` for writing bags with rosbags' own serializer.

Wire layout of `/safety_monitor/predicates` (diagnostic_msgs/DiagnosticArray), the one definition
the estimator node, external estimators and replay all use:

- `header.stamp`: the frame time; `header.frame_id`: empty.
- exactly one `DiagnosticStatus` with `name = "safety_monitor/predicates"`, `hardware_id` = the
  robot's (as on the events), `message = "frame <n>"`, `level` OK, WARN when some predicate is unknown,
  STALE when some input stream is stale;
- `values`: one `KeyValue(key=<predicate>, value="true"|"false")` per predicate, plus reserved keys
  that cannot clash with predicate names (those match `[a-z][a-z0-9_]*`): `_frame` (frame index,
  decimal), `_t` (frame time in seconds, Python `repr` of the float, exact), `_unknown` and
  `_stale` (comma-separated names, empty when none), then `_objects`: for each object-bound predicate
  that holds, the objects it is about, as compact JSON (`{"object_dropped":["mug"]}`; empty when none).
  External publishers may send only the predicate keys; the frame index and time then come from
  arrival order and `header.stamp`. Messages without `_objects` (bags recorded before it existed) read
  as naming no object.

Wire layout of `/safety_monitor/events` (diagnostic_msgs/DiagnosticArray): one status per event,
`name` = property, `message` = event kind (`safety_monitor.enums.EventKind`: opened,
recovered, closed, unrecovered_at_end, discarded_truncated, blind, seeing), `hardware_id` = the
robot's (live nodes apply one rule, see docs/ros.md; "safety_monitor" where none is given), `level`
ERROR for opened, WARN for unrecovered_at_end, STALE for blind, OK otherwise, and `values`: first `json`, the whole record (the event's `to_json()`, the event log's
line) as JSON, which is what `decode_events` reads; then one KeyValue per other scalar field as plain
text for rqt_robot_monitor and Foxglove (`category` collision_contact, `frame` 120, `t` 0.24, `episode`
3; `true`/`false`, '' for null). Nested fields (the `counterexample` of an opened event) are only in
`json`. The monitor's own JSON form is the schema, so there is no second one to keep in step.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType, SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from safety_monitor.enums import EventKind
from safety_monitor.errors import SourceError
from safety_monitor.frames import JointSample, Pose, PredicateSample, Wrench

PREDICATES_STATUS = "safety_monitor/predicates"
EVENTS_HARDWARE_ID = "safety_monitor"
_FRAME, _T, _UNKNOWN, _STALE, _OBJECTS = "_frame", "_t", "_unknown", "_stale", "_objects"
_TRUE = {"true", "1"}
_FALSE = {"false", "0"}


# ----------------------------------------------------------------------------------------- time
def stamp_seconds(stamp: Any) -> float:
    """builtin_interfaces/Time -> seconds, correctly rounded from integer nanoseconds."""
    return (int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)) / 1e9


def split_seconds(t: float) -> tuple[int, int]:
    """Seconds -> (sec, nanosec) as builtin_interfaces/Time wants them (nanosec in [0, 1e9))."""
    ns = round(t * 1e9)
    return ns // 1_000_000_000, ns % 1_000_000_000


# ------------------------------------------------------------------------------------- readers
def _floats(values: ArrayLike) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).reshape(-1)


def joint_state_sample(msg: Any) -> JointSample:
    """sensor_msgs/JointState -> JointSample (no checks here; the assembler checks)."""
    velocity = _floats(msg.velocity)
    effort = _floats(msg.effort)
    return JointSample(
        names=tuple(msg.name),
        position=_floats(msg.position),
        velocity=velocity if velocity.size else None,
        effort=effort if effort.size else None,
        stamp=stamp_seconds(msg.header.stamp),
    )


def wrench_of(msg: Any) -> tuple[Wrench, float]:
    """geometry_msgs/WrenchStamped -> (Wrench, stamp seconds)."""
    f, m = msg.wrench.force, msg.wrench.torque
    return (
        Wrench(force=np.array([f.x, f.y, f.z], dtype=np.float64), torque=np.array([m.x, m.y, m.z], dtype=np.float64)),
        stamp_seconds(msg.header.stamp),
    )


def pose_of(msg: Any) -> tuple[Pose, float]:
    """geometry_msgs/PoseStamped -> (Pose with w-first quaternion, stamp seconds)."""
    p, q = msg.pose.position, msg.pose.orientation
    return (
        Pose(
            position=np.array([p.x, p.y, p.z], dtype=np.float64),
            quaternion=np.array([q.w, q.x, q.y, q.z], dtype=np.float64),
        ),
        stamp_seconds(msg.header.stamp),
    )


def transforms_of(msg: Any) -> list[tuple[str, str, Pose, float]]:
    """tf2_msgs/TFMessage -> (parent frame, child frame, child's Pose in the parent (w first), stamp) per
    transform."""
    out = []
    for tr in msg.transforms:
        p, q = tr.transform.translation, tr.transform.rotation
        pose = Pose(
            position=np.array([p.x, p.y, p.z], dtype=np.float64),
            quaternion=np.array([q.w, q.x, q.y, q.z], dtype=np.float64),
        )
        out.append((str(tr.header.frame_id), str(tr.child_frame_id), pose, stamp_seconds(tr.header.stamp)))
    return out


def robot_description_of(msg: Any) -> str:
    """std_msgs/String (/robot_description) -> the URDF text."""
    return str(msg.data)


# ------------------------------------------------------------------------------ message types
def rosbags_types(typestore: Any = None) -> SimpleNamespace:
    """Message classes from a rosbags typestore (default: the newest ROS 2 store)."""
    if typestore is None:
        from safety_monitor.io.bag import default_typestore

        typestore = default_typestore()
    t = typestore.types
    return SimpleNamespace(
        Time=t["builtin_interfaces/msg/Time"],
        Header=t["std_msgs/msg/Header"],
        JointState=t["sensor_msgs/msg/JointState"],
        Vector3=t["geometry_msgs/msg/Vector3"],
        Wrench=t["geometry_msgs/msg/Wrench"],
        WrenchStamped=t["geometry_msgs/msg/WrenchStamped"],
        Point=t["geometry_msgs/msg/Point"],
        Quaternion=t["geometry_msgs/msg/Quaternion"],
        Pose=t["geometry_msgs/msg/Pose"],
        PoseStamped=t["geometry_msgs/msg/PoseStamped"],
        KeyValue=t["diagnostic_msgs/msg/KeyValue"],
        DiagnosticStatus=t["diagnostic_msgs/msg/DiagnosticStatus"],
        DiagnosticArray=t["diagnostic_msgs/msg/DiagnosticArray"],
        Clock=t["rosgraph_msgs/msg/Clock"],
        Transform=t["geometry_msgs/msg/Transform"],
        TransformStamped=t["geometry_msgs/msg/TransformStamped"],
        TFMessage=t["tf2_msgs/msg/TFMessage"],
        String=t["std_msgs/msg/String"],
    )


def rclpy_types() -> SimpleNamespace:
    """The same classes from the ROS 2 Python message packages (for publishing)."""
    from builtin_interfaces.msg import Time
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from geometry_msgs.msg import Point, PoseStamped, Quaternion, Vector3, WrenchStamped
    from geometry_msgs.msg import Pose as PoseMsg
    from geometry_msgs.msg import Wrench as WrenchMsg
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Header

    return SimpleNamespace(
        Time=Time,
        Header=Header,
        JointState=JointState,
        Vector3=Vector3,
        Wrench=WrenchMsg,
        WrenchStamped=WrenchStamped,
        Point=Point,
        Quaternion=Quaternion,
        Pose=PoseMsg,
        PoseStamped=PoseStamped,
        KeyValue=KeyValue,
        DiagnosticStatus=DiagnosticStatus,
        DiagnosticArray=DiagnosticArray,
        Clock=Clock,
    )


# ------------------------------------------------------------------------------------- writers
def header(types: SimpleNamespace, t: float, frame_id: str = "") -> Any:
    sec, nanosec = split_seconds(t)
    return types.Header(stamp=types.Time(sec=sec, nanosec=nanosec), frame_id=frame_id)


def clock_msg(types: SimpleNamespace, t: float) -> Any:
    sec, nanosec = split_seconds(t)
    return types.Clock(clock=types.Time(sec=sec, nanosec=nanosec))


def joint_state_msg(
    types: SimpleNamespace,
    t: float,
    names: Sequence[str],
    position: ArrayLike,
    velocity: ArrayLike | None = None,
    effort: ArrayLike | None = None,
) -> Any:
    empty = np.zeros(0, dtype=np.float64)
    return types.JointState(
        header=header(types, t),
        name=[str(n) for n in names],
        position=_floats(position),
        velocity=empty if velocity is None else _floats(velocity),
        effort=empty if effort is None else _floats(effort),
    )


def wrench_msg(types: SimpleNamespace, t: float, wrench: Wrench, frame_id: str = "ft_site") -> Any:
    return types.WrenchStamped(
        header=header(types, t, frame_id),
        wrench=types.Wrench(force=_vector3(types, wrench.force), torque=_vector3(types, wrench.torque)),
    )


def tf_msg(types: SimpleNamespace, transforms: Iterable[tuple[str, str, Pose, float]]) -> Any:
    """(parent, child, child's pose in the parent, stamp) per transform -> tf2_msgs/TFMessage."""
    out = []
    for parent, child, pose, t in transforms:
        w, x, y, z = (float(v) for v in pose.quaternion)
        out.append(
            types.TransformStamped(
                header=header(types, t, parent),
                child_frame_id=child,
                transform=types.Transform(
                    translation=_vector3(types, pose.position), rotation=types.Quaternion(x=x, y=y, z=z, w=w)
                ),
            )
        )
    return types.TFMessage(transforms=out)


def _vector3(types: SimpleNamespace, values: Iterable[float]) -> Any:
    x, y, z = (float(v) for v in values)
    return types.Vector3(x=x, y=y, z=z)


def pose_msg(types: SimpleNamespace, t: float, pose: Pose, frame_id: str = "world") -> Any:
    p = [float(v) for v in pose.position]
    w, x, y, z = (float(v) for v in pose.quaternion)
    return types.PoseStamped(
        header=header(types, t, frame_id),
        pose=types.Pose(
            position=types.Point(x=p[0], y=p[1], z=p[2]),
            orientation=types.Quaternion(x=x, y=y, z=z, w=w),
        ),
    )


# ---------------------------------------------------------------------------------- predicates
def predicates_msg(types: SimpleNamespace, sample: PredicateSample, hardware_id: str = "estimator") -> Any:
    """PredicateSample -> DiagnosticArray in the layout documented above."""
    S = types.DiagnosticStatus
    level = S.STALE if sample.stale else S.WARN if sample.unknown else S.OK
    kv = types.KeyValue
    values = [kv(key=name, value="true" if value else "false") for name, value in sample.values.items()]
    meta = [
        kv(key=_FRAME, value="" if sample.frame is None else str(sample.frame)),
        kv(key=_T, value=repr(float(sample.t))),
        kv(key=_UNKNOWN, value=",".join(sorted(sample.unknown))),
        kv(key=_STALE, value=",".join(sorted(sample.stale))),
        kv(key=_OBJECTS, value=objects_text(sample.objects)),
    ]
    status = S(
        level=level,
        name=PREDICATES_STATUS,
        message="" if sample.frame is None else f"frame {sample.frame}",
        hardware_id=hardware_id,
        values=values + meta,
    )
    return types.DiagnosticArray(header=header(types, sample.t), status=[status])


def comma_names(text: str) -> frozenset[str]:
    return frozenset(n for n in text.split(",") if n)


class BadPredicates(SourceError):
    """A predicates message that decodes but breaks the documented layout (statuses, values, _t, _frame,
    _objects)."""


_NO_OBJECTS: Mapping[str, tuple[str, ...]] = MappingProxyType({})


def objects_text(objects: Mapping[str, tuple[str, ...]]) -> str:
    """A sample's `objects` as the `_objects` text ("" when none)."""
    return _objects_json(tuple(objects.items())) if objects else ""


@lru_cache(maxsize=256)  # few distinct mappings per recording, each repeated for many frames: encoded once
def _objects_json(items: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    return json.dumps({k: list(v) for k, v in items}, separators=(",", ":"))


@lru_cache(maxsize=256)
def objects_of(text: str) -> Mapping[str, tuple[str, ...]]:
    """The `_objects` text -> predicate -> object names (read-only, shared by the frames that repeat it);
    BadPredicates names a malformed one."""
    if not text:
        return _NO_OBJECTS
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError, an integer of 4300+ digits, nesting past the stack
        parsed = None
    if not isinstance(parsed, dict) or not all(
        isinstance(names, list) and all(isinstance(n, str) for n in names) for names in parsed.values()
    ):
        raise BadPredicates(
            f"predicates message has a malformed {_OBJECTS}: {text[:80]!r}; expected JSON predicate -> [names]"
        )
    return MappingProxyType({str(k): tuple(v) for k, v in parsed.items()})


def decode_predicates(msg: Any) -> PredicateSample:
    """DiagnosticArray -> PredicateSample; BadPredicates names a malformed status or value."""
    statuses = [s for s in msg.status if s.name == PREDICATES_STATUS] or list(msg.status)
    if len(statuses) != 1:
        raise BadPredicates(
            f"predicates message has {len(msg.status)} statuses; expected one named {PREDICATES_STATUS!r}"
        )
    return predicate_sample(
        ((str(item.key), str(item.value)) for item in statuses[0].values), lambda: stamp_seconds(msg.header.stamp)
    )


_BOOLS = {"true": True, "false": False}


def predicate_sample(
    pairs: Iterable[tuple[str, str]], stamp: Callable[[], float], values: dict[str, bool] | None = None
) -> PredicateSample:
    """The status's (key, value) texts -> PredicateSample (`stamp()`: the header time, read only without
    `_t`). `values`: predicates already read from leading pairs not passed again (see io.cdr)."""
    values = {} if values is None else values
    meta: dict[str, str] = {}
    for key, text in pairs:
        if key.startswith("_"):
            meta[key] = text
            continue
        value = _BOOLS.get(text)  # the canonical spelling; others are normalised below
        if value is None:
            low = text.strip().lower()
            if low in _TRUE:
                value = True
            elif low in _FALSE:
                value = False
            else:
                raise BadPredicates(f"predicate {key!r} has value {text!r}; expected 'true' or 'false'")
        values[key] = value
    try:
        t = float(meta[_T]) if meta.get(_T) else stamp()
        frame = int(meta[_FRAME]) if meta.get(_FRAME) else None
    except ValueError as exc:
        raise BadPredicates(f"predicates message has a malformed _t or _frame: {exc}") from None
    return PredicateSample(
        values=values,
        t=t,
        frame=frame,
        unknown=comma_names(meta.get(_UNKNOWN, "")),
        stale=comma_names(meta.get(_STALE, "")),
        objects=objects_of(meta.get(_OBJECTS, "")),
    )


# -------------------------------------------------------------------------------------- events
_SCALARS = (str, int, float, bool, type(None))


def _jsonable(value: Any) -> Any:
    if type(value) in _SCALARS:  # most leaves: answered before the dataclass, mapping and sequence tests
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (frozenset, set)):
        return sorted(_jsonable(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _json_default(value: Any) -> Any:
    """What the encoder cannot write itself (sets, arrays, numpy scalars, dataclasses, mappings) as `_jsonable`
    makes it, so plain JSON-shaped events skip the deep copy."""
    out = _jsonable(value)
    if out is value:
        raise TypeError(f"{type(value).__name__} is not JSON serialisable")
    return out


# one encoder, not one built per json.dumps call
_FIELD_JSON = json.JSONEncoder(sort_keys=True, default=_json_default).encode


OK, WARN, ERROR, STALE = 0, 1, 2, 3  # diagnostic_msgs/DiagnosticStatus levels, as bytes on the wire
_EVENT_LEVELS: dict[str, int] = {
    EventKind.OPENED: ERROR,
    EventKind.STATE_LOST: ERROR,
    EventKind.UNRECOVERED_AT_END: WARN,
    EventKind.INPUT_ENDED: WARN,
    EventKind.BLIND: STALE,
}


def event_level_value(kind: str) -> int:
    """ERROR (2) when a violation opens or a restarted monitor lost its state, WARN (1) when a trace
    ends inside a violation, STALE (3) when blind, else OK (0): DiagnosticStatus levels."""
    return _EVENT_LEVELS.get(kind, 0)


def event_level(types: SimpleNamespace, kind: str) -> Any:
    """`event_level_value` as the message types' own level constant."""
    S = types.DiagnosticStatus
    return (S.OK, S.WARN, S.ERROR, S.STALE)[event_level_value(kind)]


def event_fields(event: Any) -> dict[str, Any]:
    """A monitor event as a JSON-shaped dict (its own `to_json()` when it has one), as decoded."""
    fields = event.to_json() if hasattr(event, "to_json") else _jsonable(event)
    return json.loads(json.dumps(fields))


EVENT_JSON_KEY = "json"  # the KeyValue holding an event's whole JSON record


def event_texts(event: Any) -> tuple[str, str, list[tuple[str, str]]]:
    """(property, kind, [(key, text)]) of one event's status: `json` with the whole record (encoded once),
    then each other scalar field as plain text (see the module docstring)."""
    fields = event.to_json() if hasattr(event, "to_json") else event if isinstance(event, dict) else _jsonable(event)
    values = [(EVENT_JSON_KEY, _FIELD_JSON(fields))]
    values += [
        (str(k), _plain(v))
        for k, v in fields.items()
        if k not in ("property", "kind") and not isinstance(v, (dict, list, tuple))
    ]
    return str(fields["property"]), str(fields["kind"]), values


def _plain(value: Any) -> str:
    """A scalar as a person reads it: text as is, true/false, '' for null, numbers as JSON writes them."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return _FIELD_JSON(value)


def events_msg(types: SimpleNamespace, events: Sequence[Any], t: float, hardware_id: str = EVENTS_HARDWARE_ID) -> Any:
    """Monitor events (with `property` and `kind`) -> one DiagnosticArray, one status per event."""
    statuses = []
    for event in events:
        name, kind, values = event_texts(event)
        statuses.append(
            types.DiagnosticStatus(
                level=event_level(types, kind),
                name=name,
                message=kind,
                hardware_id=hardware_id,
                values=[types.KeyValue(key=k, value=v) for k, v in values],
            )
        )
    return types.DiagnosticArray(header=header(types, t), status=statuses)


def decode_events(msg: Any) -> list[dict[str, Any]]:
    """DiagnosticArray -> one dict per event: its `json` record. Statuses without one (bags recorded
    before that key existed) had every field JSON-encoded under its own key. SourceError for a record that
    is none the monitor writes (`event_problem`)."""
    out = []
    for status in msg.status:
        where = f"event {status.name!r}/{status.message!r}"
        items = {str(item.key): str(item.value) for item in status.values}
        if EVENT_JSON_KEY in items:
            event = _json(items[EVENT_JSON_KEY], f"{where}: {EVENT_JSON_KEY!r}")
            if not isinstance(event, dict) or "property" not in event or "kind" not in event:
                raise SourceError(f"{where}: {EVENT_JSON_KEY!r} is not an event record")
        else:
            event = {"property": str(status.name), "kind": str(status.message)}
            event.update((key, _json(text, f"{where}: field {key!r}")) for key, text in items.items())
        problem = event_problem(event)
        if problem is not None:
            raise SourceError(f"{where}: {problem}")
        out.append(event)
    return out


def event_problem(record: dict[str, Any]) -> str | None:
    """Why a decoded event record (an events message's, an event log's line) is none the monitor writes, as far as
    its readers rely on it (the alerts console: nodes/alerts.py): `property` and `kind` strings, the `robot`,
    `rollout` and `episode` an alert is matched by, the `objects` it was about and an opened one's
    `counterexample`. None when it is one. Fields a reader only shows, and keys it does not know (a newer monitor's),
    are taken as they come."""
    for key in ("property", "kind"):
        if not isinstance(record.get(key), str):
            return f"{key!r} is {record.get(key)!r:.40}, not a string"
    wrong = [
        (key, what)
        for key, what, fits in (
            ("robot", "a string or null", lambda v: v is None or isinstance(v, str)),
            ("rollout", "a whole number or null", _whole_or_null),
            ("episode", "a whole number or null", _whole_or_null),
            ("objects", "a list of names", lambda v: v is None or _strings(v)),
            ("counterexample", "a counterexample", lambda v: v is None or _counterexample(v)),
        )
        if key in record and not fits(record[key])
    ]
    if not wrong:
        return None
    key, what = wrong[0]
    return f"{key!r} is {record[key]!r:.40}, not {what}"


def _whole_or_null(value: Any) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _counterexample(cx: Any) -> bool:
    """`Counterexample.to_json()`'s shape, as far as `alerts.counterexample_lines` reads it."""
    return (
        isinstance(cx, dict)
        and isinstance(cx.get("explanation"), str)
        and "formula" in cx
        and isinstance(cx.get("frames"), list)
        and len(cx["frames"]) == 2
        and (cx.get("decisive") is None or _strings(cx["decisive"]))
        and isinstance(cx.get("values"), dict)
        and all(isinstance(runs, list) and all(isinstance(r, list) and len(r) == 3 for r in runs) for runs in
                cx["values"].values())
    )  # fmt: skip


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the stack
        raise SourceError(f"{where} is not JSON: {text[:80]!r}") from None
