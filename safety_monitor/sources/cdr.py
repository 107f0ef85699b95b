"""Direct CDR readers for the messages replay reads every frame: JointState, WrenchStamped, PoseStamped and
the predicates DiagnosticArray.

rosbags' generic deserialiser builds a full message object per message (about 40 us for a JointState, 170 us
for a DiagnosticArray of 51 KeyValues); replay needs a few numbers and strings from each, so these readers take
them straight from the bytes. They implement exactly the ROS 2 definitions below (`supported` compares them
with the bag's own, field by field) in little-endian CDR, and apply rosbags' own checks (string terminators,
sequence bounds, trailing bytes); for anything else they return None and the caller decodes with rosbags,
which then raises its own error for a broken message. The values are the same: the same bytes read as the
same IEEE doubles and UTF-8 strings.

The predicates reader also learns the KeyValue layout: an estimator sends the same keys in the same order
every frame, and "true" and "false" take the same 12 bytes, so after the first message one compiled pattern
checks every key and reads every value in a single match.
"""
from __future__ import annotations

import re
import struct
from itertools import repeat
from operator import getitem, is_not
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from safety_monitor.grounding.state import Pose, Wrench
from safety_monitor.sources.messages import (PREDICATES_STATUS, JointSample, PredicateSample, predicate_sample,
                                              split_seconds)

# The layouts these readers implement: field name and type per message type (a trailing [] is a sequence).
DEFINITIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "builtin_interfaces/msg/Time": (("sec", "int32"), ("nanosec", "uint32")),
    "std_msgs/msg/Header": (("stamp", "builtin_interfaces/msg/Time"), ("frame_id", "string")),
    "sensor_msgs/msg/JointState": (("header", "std_msgs/msg/Header"), ("name", "string[]"),
                                   ("position", "float64[]"), ("velocity", "float64[]"), ("effort", "float64[]")),
    "geometry_msgs/msg/Vector3": (("x", "float64"), ("y", "float64"), ("z", "float64")),
    "geometry_msgs/msg/Wrench": (("force", "geometry_msgs/msg/Vector3"), ("torque", "geometry_msgs/msg/Vector3")),
    "geometry_msgs/msg/WrenchStamped": (("header", "std_msgs/msg/Header"), ("wrench", "geometry_msgs/msg/Wrench")),
    "geometry_msgs/msg/Point": (("x", "float64"), ("y", "float64"), ("z", "float64")),
    "geometry_msgs/msg/Quaternion": (("x", "float64"), ("y", "float64"), ("z", "float64"), ("w", "float64")),
    "geometry_msgs/msg/Pose": (("position", "geometry_msgs/msg/Point"),
                               ("orientation", "geometry_msgs/msg/Quaternion")),
    "geometry_msgs/msg/PoseStamped": (("header", "std_msgs/msg/Header"), ("pose", "geometry_msgs/msg/Pose")),
    "diagnostic_msgs/msg/KeyValue": (("key", "string"), ("value", "string")),
    "diagnostic_msgs/msg/DiagnosticStatus": (("level", "byte"), ("name", "string"), ("message", "string"),
                                             ("hardware_id", "string"),
                                             ("values", "diagnostic_msgs/msg/KeyValue[]")),
    "diagnostic_msgs/msg/DiagnosticArray": (("header", "std_msgs/msg/Header"),
                                            ("status", "diagnostic_msgs/msg/DiagnosticStatus[]")),
}

_LE = b"\x00\x01"  # CDR encapsulation: plain CDR, little endian
_BASE = 4  # alignment is counted from the end of the encapsulation header
_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_F64X3 = struct.Struct("<3d")
_F64X4 = struct.Struct("<4d")
_PADS = (b"", b"\x00", b"\x00\x00", b"\x00\x00\x00")


class Malformed(Exception):
    """Not the layout these readers handle: decode the message with rosbags instead."""


def supported(fielddefs: Mapping[str, Any], msgtype: str) -> bool:
    """Whether a bag defines `msgtype` (and every type inside it) exactly as DEFINITIONS does."""
    from rosbags.interfaces import Nodetype

    def name(desc: Any) -> str | None:
        kind, detail = desc
        if kind == Nodetype.BASE:
            base, bound = detail
            return base if not bound else None
        if kind == Nodetype.NAME:
            return detail
        if kind == Nodetype.SEQUENCE:
            inner, bound = detail
            inner_name = name(inner)
            return None if bound or inner_name is None else inner_name + "[]"
        return None

    def same(typename: str) -> bool:
        expected = DEFINITIONS.get(typename)
        if expected is None or typename not in fielddefs:
            return False
        fields = tuple((f, name(desc)) for f, desc in fielddefs[typename][1])
        nested = {t.removesuffix("[]") for _, t in expected} & set(DEFINITIONS)
        return fields == expected and all(same(t) for t in nested)

    return same(msgtype)


# ------------------------------------------------------------------------------------- primitives
def _align(pos: int, n: int) -> int:
    """`pos` (an index into the message bytes) advanced to the next multiple of `n` after the header."""
    return pos + (-(pos - _BASE) % n)


def _strings(raw: bytes, pos: int, n: int) -> tuple[list[str], int]:
    """`n` consecutive strings (uint32 length with the terminator, bytes, NUL; each 4-aligned)."""
    out, limit, unpack = [], len(raw), _U32.unpack_from
    for _ in range(n):
        pos += -(pos - _BASE) % 4
        if pos + 4 > limit:
            raise Malformed
        size = unpack(raw, pos)[0]
        pos += 4
        end = pos + size
        if size < 1 or end > limit or raw[end - 1] != 0:
            raise Malformed
        try:
            out.append(raw[pos:end - 1].decode())
        except UnicodeDecodeError:
            raise Malformed from None
        pos = end
    return out, pos


def _count(raw: bytes, pos: int, minimum: int) -> tuple[int, int]:
    """A sequence length, bounded by the bytes left as rosbags bounds it."""
    pos += -(pos - _BASE) % 4
    if pos + 4 > len(raw):
        raise Malformed
    size = _U32.unpack_from(raw, pos)[0]
    pos += 4
    if pos + size * minimum > len(raw):
        raise Malformed
    return size, pos


def _stamp(raw: bytes) -> tuple[float, int]:
    """Header: stamp in seconds (as `messages.stamp_seconds`) and the position after frame_id."""
    if raw[:2] != _LE or len(raw) < _BASE + 8:
        raise Malformed
    sec, nanosec = _STAMP.unpack_from(raw, _BASE)
    _, pos = _strings(raw, _BASE + 8, 1)
    return (sec * 1_000_000_000 + nanosec) / 1e9, pos


def _doubles(raw: bytes, pos: int, fmt: struct.Struct) -> tuple[tuple[float, ...], int]:
    pos = _align(pos, 8)
    if pos + fmt.size > len(raw):
        raise Malformed
    return fmt.unpack_from(raw, pos), pos + fmt.size


def _end(raw: bytes, pos: int) -> None:
    """rosbags' size check: at most alignment padding may follow the last field."""
    if pos + 3 < len(raw):
        raise Malformed


def _lenient(read: Callable[..., Any]) -> Callable[..., Any]:
    def reader(*args: Any) -> Any:
        try:
            return read(*args)
        except Malformed:
            return None

    reader.__doc__, reader.__name__ = read.__doc__, read.__name__
    return reader


# ---------------------------------------------------------------------------------------- readers
class JointStateReader:
    """sensor_msgs/JointState bytes -> JointSample (as `messages.joint_state_sample` of the decoded message).

    A stream repeats its name list every message: when the bytes of the list repeat, its tuple is reused.
    """

    def __init__(self) -> None:
        self._names_raw = b""
        self._names: tuple[str, ...] = ()

    @_lenient
    def read(self, raw: bytes) -> JointSample | None:
        stamp, pos = _stamp(raw)
        start = _align(pos, 4)
        known = self._names_raw
        if known and raw.startswith(known, start):
            names, pos = self._names, start + len(known)
        else:
            count, pos = _count(raw, pos, 5)
            listed, pos = _strings(raw, pos, count)
            names = tuple(listed)
            self._names_raw, self._names = raw[start:pos], names
        arrays = []
        for _ in range(3):
            count, pos = _count(raw, pos, 8)
            if count:
                pos = _align(pos, 8)
                if pos + 8 * count > len(raw):
                    raise Malformed
            # a bytes slice starts 8-aligned in memory: aligned arrays, as rosbags' own (numpy is slower on others)
            arrays.append(np.frombuffer(raw[pos:pos + 8 * count], dtype=np.float64))
            pos += 8 * count
        _end(raw, pos)
        position, velocity, effort = arrays
        return JointSample(names=names, position=position, velocity=velocity if velocity.size else None,
                           effort=effort if effort.size else None, stamp=stamp)


@_lenient
def read_wrench(raw: bytes) -> tuple[Wrench, float] | None:
    """geometry_msgs/WrenchStamped bytes -> (Wrench, stamp), as `messages.wrench_of`."""
    stamp, pos = _stamp(raw)
    force, pos = _doubles(raw, pos, _F64X3)
    torque, pos = _doubles(raw, pos, _F64X3)
    _end(raw, pos)
    return Wrench(force=np.array(force, dtype=np.float64), torque=np.array(torque, dtype=np.float64)), stamp


@_lenient
def read_pose(raw: bytes) -> tuple[Pose, float] | None:
    """geometry_msgs/PoseStamped bytes -> (Pose, stamp), as `messages.pose_of` (w first)."""
    stamp, pos = _stamp(raw)
    position, pos = _doubles(raw, pos, _F64X3)
    (x, y, z, w), pos = _doubles(raw, pos, _F64X4)
    _end(raw, pos)
    return Pose(position=np.array(position, dtype=np.float64), quaternion=np.array((w, x, y, z), dtype=np.float64)), stamp


class PredicateReader:
    """`/safety_monitor/predicates` DiagnosticArray bytes -> PredicateSample, as `messages.decode_predicates`
    of the decoded message (which also raises the same SourceError for a bad predicate value)."""

    def __init__(self) -> None:
        self._run: tuple[int, tuple[str, ...], re.Pattern[bytes]] | None = None  # (KeyValues, keys, pattern)

    @_lenient
    def read(self, raw: bytes) -> PredicateSample | None:
        stamp, pos = _stamp(raw)
        statuses, pos = _count(raw, pos, 1)
        if statuses != 1:  # several statuses (or none): the general decoder picks and complains
            raise Malformed
        _, pos = _strings(raw, pos + 1, 3)  # after the level: name, message, hardware_id (one status is
        count, pos = _count(raw, pos, 1)     # read whatever its name)
        start = _align(pos, 4)
        values: dict[str, bool] = {}
        done = 0
        run = self._run
        match = run[2].match(raw, start) if run is not None and run[0] == count else None
        if match is not None:  # every key of the learnt run in place, each value exactly "true" or "false"
            values = dict(zip(run[1], map(is_not, match.groups(), repeat(None))))
            done, pos = len(run[1]), match.end()
        texts, pos = _strings(raw, pos, 2 * (count - done))
        pairs = list(zip(texts[::2], texts[1::2]))
        _end(raw, pos)
        if match is None:
            self._run = _learn(count, pairs, start)
        return predicate_sample(pairs, lambda: stamp, values)


def _learn(count: int, pairs: list[tuple[str, str]], start: int) -> tuple[int, tuple[str, ...], re.Pattern[bytes]] | None:
    """A pattern for the leading predicate KeyValues of a message (keys unique, values exactly "true" or
    "false"): literal key bytes with their length and padding, then either value. None if there are none."""
    keys: list[str] = []
    for key, text in pairs:
        if key.startswith("_") or key in keys or text not in ("true", "false"):
            break
        keys.append(key)
    if not keys:
        return None
    parts, pos = [], start
    for i, key in enumerate(keys):
        data = key.encode() + b"\x00"
        pos += 4 + len(data)
        pad = -(pos - _BASE) % 4
        pos += pad
        parts.append(re.escape(_U32.pack(len(data)) + data) + b"[\\s\\S]" * pad)
        last = i == len(keys) - 1  # no padding is known to follow the last value of the run
        parts.append(b"(?:(\\x05)\\x00\\x00\\x00true\\x00" + (b"" if last else b"[\\s\\S]{3}")
                     + b"|\\x06\\x00\\x00\\x00false\\x00" + (b"" if last else b"[\\s\\S]{2}") + b")")
        pos += 12
    return count, tuple(keys), re.compile(b"".join(parts))


class PredicateWriter:
    """PredicateSample -> the CDR bytes of `messages.predicates_msg` (rosbags' serialisation, byte for byte).

    For publishers that send bytes (rclpy's `Publisher.publish` takes them as they are): building and
    serialising a DiagnosticArray of one KeyValue object per predicate costs far more than joining the
    per-predicate chunks remembered here.
    """

    def __init__(self, hardware_id: str = "estimator") -> None:
        self.hardware_id = hardware_id
        self._layouts: dict[tuple[str, ...], list[tuple[bytes, bytes]]] = {}  # keys -> per key: KeyValue
        # with "false", with "true" (each a multiple of 4 bytes long, so they join without padding)

    def write(self, sample: PredicateSample) -> bytes:
        sec, nanosec = split_seconds(sample.t)
        level = b"\x03" if sample.stale else b"\x01" if sample.unknown else b"\x00"
        frame = "" if sample.frame is None else str(sample.frame)
        out = _Out(_LE + b"\x00\x00" + _STAMP.pack(sec, nanosec))
        out.strings(("",))
        out.u32(1)
        out.raw(level)
        out.strings((PREDICATES_STATUS, "" if sample.frame is None else f"frame {frame}", self.hardware_id))
        out.u32(len(sample.values) + 4)
        keys = tuple(sample.values)
        layout = self._layouts.get(keys)
        if layout is None:
            if len(self._layouts) >= 16:
                self._layouts.clear()
            layout = self._layouts[keys] = [(_key_value(k, "false"), _key_value(k, "true")) for k in keys]
        out.raw(b"".join(map(getitem, layout, map(bool, sample.values.values()))))
        out.strings(("_frame", frame, "_t", repr(float(sample.t)), "_unknown", ",".join(sorted(sample.unknown)),
                     "_stale", ",".join(sorted(sample.stale))))
        return out.bytes()


def _key_value(key: str, value: str) -> bytes:
    """A KeyValue starting 4-aligned, padded to end 4-aligned (another KeyValue always follows)."""
    out = _Out(b"\x00" * _BASE)
    out.strings((key, value))
    out.align(4)
    return out.bytes()[_BASE:]


class _Out:
    """CDR writer: bytes appended with zero padding, alignment counted after the encapsulation header."""

    def __init__(self, start: bytes) -> None:
        self.parts, self.size = [start], len(start)

    def raw(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)

    def align(self, n: int) -> None:
        pad = -(self.size - _BASE) % n
        if pad:
            self.raw(b"\x00" * pad)

    def u32(self, value: int) -> None:
        self.align(4)
        self.raw(_U32.pack(value))

    def strings(self, texts: tuple[str, ...]) -> None:
        parts, size = self.parts, self.size
        for text in texts:
            data = text.encode()
            pad = -(size - _BASE) % 4
            parts.append(_PADS[pad] + _U32.pack(len(data) + 1) + data + b"\x00")
            size += pad + len(data) + 5
        self.size = size

    def bytes(self) -> bytes:
        return b"".join(self.parts)
