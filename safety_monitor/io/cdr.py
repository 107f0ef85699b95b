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
every frame, and "true" and "false" take the same 12 bytes, so after the first message that reads (a malformed
one teaches nothing: it is dropped alone) one compiled pattern checks every key and reads every value in a
single match. `PredicateBatchReader` applies the same learnt layout to a whole batch of messages at once with
numpy (bag replay). `JointStateReader`, `WrenchReader` and `PoseReader` learn a stream's layout the same way
(frame id, names, array lengths repeat every message): the estimator reads each live message at the offsets of
the one before instead of walking it field by field.
Their batch readers (`JointStateBatchReader`, `WrenchBatchReader`, `PoseBatchReader`) read every message of a
batch that repeats the layout of the first one as a row of one float array (bag replay).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise, repeat
from operator import getitem, is_not
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from safety_monitor.frames import JointSample, Pose, PredicateSample, Wrench
from safety_monitor.io.messages import (
    EVENTS_HARDWARE_ID,
    OK,
    PREDICATES_STATUS,
    STALE,
    WARN,
    BadPredicates,
    comma_names,
    event_level_value,
    event_texts,
    objects_of,
    objects_text,
    predicate_sample,
    split_seconds,
)

V = TypeVar("V")  # what a stamped message reader gives (a Wrench, a Pose)

# The layouts these readers implement: field name and type per message type (a trailing [] is a sequence).
DEFINITIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "builtin_interfaces/msg/Time": (("sec", "int32"), ("nanosec", "uint32")),
    "std_msgs/msg/Header": (("stamp", "builtin_interfaces/msg/Time"), ("frame_id", "string")),
    "sensor_msgs/msg/JointState": (
        ("header", "std_msgs/msg/Header"),
        ("name", "string[]"),
        ("position", "float64[]"),
        ("velocity", "float64[]"),
        ("effort", "float64[]"),
    ),
    "geometry_msgs/msg/Vector3": (("x", "float64"), ("y", "float64"), ("z", "float64")),
    "geometry_msgs/msg/Wrench": (("force", "geometry_msgs/msg/Vector3"), ("torque", "geometry_msgs/msg/Vector3")),
    "geometry_msgs/msg/WrenchStamped": (("header", "std_msgs/msg/Header"), ("wrench", "geometry_msgs/msg/Wrench")),
    "geometry_msgs/msg/Point": (("x", "float64"), ("y", "float64"), ("z", "float64")),
    "geometry_msgs/msg/Quaternion": (("x", "float64"), ("y", "float64"), ("z", "float64"), ("w", "float64")),
    "geometry_msgs/msg/Pose": (
        ("position", "geometry_msgs/msg/Point"),
        ("orientation", "geometry_msgs/msg/Quaternion"),
    ),
    "geometry_msgs/msg/PoseStamped": (("header", "std_msgs/msg/Header"), ("pose", "geometry_msgs/msg/Pose")),
    "diagnostic_msgs/msg/KeyValue": (("key", "string"), ("value", "string")),
    "diagnostic_msgs/msg/DiagnosticStatus": (
        ("level", "byte"),
        ("name", "string"),
        ("message", "string"),
        ("hardware_id", "string"),
        ("values", "diagnostic_msgs/msg/KeyValue[]"),
    ),
    "diagnostic_msgs/msg/DiagnosticArray": (
        ("header", "std_msgs/msg/Header"),
        ("status", "diagnostic_msgs/msg/DiagnosticStatus[]"),
    ),
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
            out.append(raw[pos : end - 1].decode())
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

    A stream repeats its layout every message: frame id, name list and array lengths. While the bytes that
    fix the layout repeat (the same size, the same frame id and name list, the same three lengths), the stamp
    and the arrays are read at the offsets the last message had, without walking the message again: every
    message of a live stream after its first, the cost the estimator pays at the control rate.
    """

    def __init__(self) -> None:
        self._names_raw = b""
        self._names: tuple[str, ...] = ()
        self._layout: _JointLayout | None = None

    def read(self, raw: bytes) -> JointSample | None:
        layout = self._layout
        if (
            layout is not None
            and len(raw) == layout.size
            and raw.startswith(layout.prefix, _HEADER_END)
            and raw.startswith(_LE)
            and layout.counts.unpack_from(raw, layout.first_count) == layout.lengths
        ):
            sec, nanosec = _STAMP.unpack_from(raw, _BASE)
            (p0, p1), (v0, v1), (e0, e1) = layout.spans
            return JointSample(
                names=layout.names,
                position=np.frombuffer(raw[p0:p1], dtype=np.float64),
                velocity=np.frombuffer(raw[v0:v1], dtype=np.float64) if v1 > v0 else None,
                effort=np.frombuffer(raw[e0:e1], dtype=np.float64) if e1 > e0 else None,
                stamp=(sec * 1_000_000_000 + nanosec) / 1e9,
            )
        try:
            return self._walk(raw)
        except Malformed:
            return None

    def _walk(self, raw: bytes) -> JointSample:
        """The whole message read field by field; its layout learnt for the next ones."""
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
        prefix_end = pos
        arrays, counted, spans = [], [], []
        for _ in range(3):
            counted.append(_align(pos, 4))
            count, pos = _count(raw, pos, 8)
            if count:
                pos = _align(pos, 8)
                if pos + 8 * count > len(raw):
                    raise Malformed
            # a bytes slice starts 8-aligned in memory: aligned arrays, as rosbags' own (numpy is slower on others)
            arrays.append(np.frombuffer(raw[pos : pos + 8 * count], dtype=np.float64))
            spans.append((pos, pos + 8 * count))
            pos += 8 * count
        _end(raw, pos)
        position, velocity, effort = arrays
        gaps = [f"{b - a - 4}x" for a, b in pairwise(counted)]
        self._layout = _JointLayout(
            size=len(raw),
            prefix=raw[_HEADER_END:prefix_end],
            names=names,
            first_count=counted[0],
            counts=struct.Struct(f"<I{gaps[0]}I{gaps[1]}I"),
            lengths=tuple(len(a) for a in arrays),
            spans=tuple(spans),
        )
        return JointSample(
            names=names,
            position=position,
            velocity=velocity if velocity.size else None,
            effort=effort if effort.size else None,
            stamp=stamp,
        )


_HEADER_END = _BASE + 8  # the stamp's end: frame_id starts here
_Unpack = Callable[[bytes, int], tuple[Any, ...]]  # a Struct's unpack_from


@dataclass(frozen=True, slots=True)
class _JointLayout:
    """Where a JointState's fields lie when its bytes up to the arrays are `prefix` (from `_HEADER_END`)."""

    size: int  # the message's length
    prefix: bytes  # frame_id and name list as bytes
    names: tuple[str, ...]  # the name list read (its own: a message that fails later learns no layout)
    first_count: int  # offset of the position count
    counts: struct.Struct  # the three array lengths from `first_count`
    lengths: tuple[int, ...]
    spans: tuple[tuple[int, int], ...]  # (start, end) of position, velocity, effort


@_lenient
def read_stamp(raw: bytes) -> float | None:
    """The header stamp in seconds of a message whose first field is a std_msgs/Header (every type above
    but the nested ones), as `messages.stamp_seconds`; None if the header is not readable."""
    return _stamp(raw)[0]


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
    return Pose(
        position=np.array(position, dtype=np.float64), quaternion=np.array((w, x, y, z), dtype=np.float64)
    ), stamp


def _stamped_layout(raw: bytes, doubles: int) -> tuple[int, bytes, _Unpack]:
    """A stamped message of `doubles` doubles after its header, as `raw` lays it out: its size, its frame id
    (as bytes, from `_HEADER_END`) and one unpack of (sec, nanosec, the doubles) from `_BASE`."""
    end = _HEADER_END + 4 + _U32.unpack_from(raw, _HEADER_END)[0]
    skip = _align(end, 8) - _HEADER_END
    return len(raw), raw[_HEADER_END:end], struct.Struct(f"<iI{skip}x{doubles}d").unpack_from


class WrenchReader:
    """`read_wrench`, and while the size and frame id of the last message it read repeat, one unpack at that
    message's offsets instead (the same bytes read as the same doubles)."""

    __slots__ = ("_frame_id", "_size", "_unpack")

    def __init__(self) -> None:
        self._size, self._frame_id = -1, b""
        self._unpack: _Unpack = _STAMP.unpack_from  # replaced by the learnt layout's before any use

    def read(self, raw: bytes) -> tuple[Wrench, float] | None:
        if len(raw) == self._size and raw.startswith(self._frame_id, _HEADER_END) and raw.startswith(_LE):
            v = self._unpack(raw, _BASE)
            wrench = Wrench(force=np.array(v[2:5], dtype=np.float64), torque=np.array(v[5:8], dtype=np.float64))
            return wrench, (v[0] * 1_000_000_000 + v[1]) / 1e9
        value = read_wrench(raw)
        if value is not None:
            self._size, self._frame_id, self._unpack = _stamped_layout(raw, 6)
        return value


class PoseReader:
    """`read_pose`, with the learnt layout of `WrenchReader`."""

    __slots__ = ("_frame_id", "_size", "_unpack")

    def __init__(self) -> None:
        self._size, self._frame_id = -1, b""
        self._unpack: _Unpack = _STAMP.unpack_from  # replaced by the learnt layout's before any use

    def read(self, raw: bytes) -> tuple[Pose, float] | None:
        if len(raw) == self._size and raw.startswith(self._frame_id, _HEADER_END) and raw.startswith(_LE):
            v = self._unpack(raw, _BASE)
            pose = Pose(
                position=np.array(v[2:5], dtype=np.float64),
                quaternion=np.array((v[8], v[5], v[6], v[7]), dtype=np.float64),
            )
            return pose, (v[0] * 1_000_000_000 + v[1]) / 1e9
        value = read_pose(raw)
        if value is not None:
            self._size, self._frame_id, self._unpack = _stamped_layout(raw, 7)
        return value


class _FixedLayout:
    """The layout of a stream whose messages repeat one message's bytes everywhere but in the stamp and the
    float values (the same frame_id, joint names and array lengths, so the same size): such messages are
    checked and read for a whole batch at once. `template` is the message the layout was learnt from, as
    `single` reads it; a batch where no message fits learns again from its first message."""

    def __init__(
        self, single: Callable[[bytes], Any], offsets: Callable[[bytes], tuple[list[int], list[int]] | None]
    ) -> None:
        self.single, self._offsets = single, offsets
        self.template: Any = None
        self._layout: _Layout | None = None

    def rows(self, buffer: bytes, start: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[float]]:
        """(which messages have the layout, their floats in message order (messages x floats), every
        message's stamp; the last two mean nothing where the first is False)."""
        n = len(start)
        if self._layout is None and n:
            first = buffer[int(start[0]) : int(start[0]) + int(size[0])]
            template, found = self.single(first), self._offsets(first)
            if template is not None and found is not None:
                self.template = template
                self._layout = _Layout.of(first, *found)
        layout = self._layout
        if layout is None or not n or len(buffer) < layout.size:
            return np.zeros(n, dtype=bool), np.zeros((n, 0)), [0.0] * n
        ok = size == layout.size
        at = np.minimum(np.where(ok, start, 0), len(buffer) - layout.size)
        rows = sliding_window_view(np.frombuffer(buffer, np.uint8), layout.size)[at]
        ok &= ((rows & layout.mask) == layout.expected).all(axis=1)
        if not ok.any():
            self._layout = None
        values = _row_major(rows[:, layout.first : layout.end].view("<f8")[:, layout.columns])
        return ok, values, _stamps(rows[:, 4:12])


@dataclass(frozen=True, slots=True)
class _Layout:
    """A `_FixedLayout`'s message bytes. Whole rows are compared under a mask and the doubles gathered as doubles:
    gathering single bytes through index arrays cost more than comparing every byte (numpy's loops over a row
    run in vector instructions)."""

    size: int  # the message's length
    mask: np.ndarray  # 0xff at the bytes the layout fixes, 0 elsewhere
    expected: np.ndarray  # the template's bytes under the mask
    first: int  # the span of the doubles, from the first one's first byte to the last one's end
    end: int
    columns: np.ndarray  # the doubles among the span's 8-byte words (between arrays: a length and its padding)

    @classmethod
    def of(cls, raw: bytes, fixed: list[int], floats: list[int]) -> _Layout:
        """From a message and the offsets of the bytes its layout fixes and of its doubles' bytes (in order, each
        double at a multiple of 8 after the header, as CDR aligns it)."""
        mask = np.zeros(len(raw), dtype=np.uint8)
        mask[fixed] = 0xFF
        first = floats[0] if floats else 0
        return cls(
            size=len(raw),
            mask=mask,
            expected=np.frombuffer(raw, np.uint8) & mask,
            first=first,
            end=floats[-1] + 1 if floats else 0,
            columns=(np.array(floats[::8], dtype=np.int64) - first) // 8,
        )


def _joint_offsets(raw: bytes) -> tuple[list[int], list[int]]:
    """The bytes a JointState's layout fixes (encapsulation, frame_id, names, array lengths and the padding
    before each array) and those of its position, velocity and effort doubles, in that order."""
    _, pos = _stamp(raw)
    count, pos = _count(raw, pos, 5)
    _, pos = _strings(raw, pos, count)
    fixed = [*range(4), *range(12, pos)]
    floats: list[int] = []
    for _ in range(3):
        begin = pos
        count, pos = _count(raw, pos, 8)
        if count:
            pos = _align(pos, 8)
        fixed.extend(range(begin, pos))
        floats.extend(range(pos, pos + 8 * count))
        pos += 8 * count
    return fixed, floats


def _stamped_offsets(doubles: int) -> Callable[[bytes], tuple[list[int], list[int]]]:
    """For a stamped message of `doubles` doubles after its header (WrenchStamped 6, PoseStamped 7): the bytes
    its layout fixes (encapsulation, frame_id and the padding after it) and those of its doubles."""

    def offsets(raw: bytes) -> tuple[list[int], list[int]]:
        _, pos = _stamp(raw)
        first = _align(pos, 8)
        return [*range(4), *range(12, first)], list(range(first, first + 8 * doubles))

    return offsets


class JointStateBatchReader:
    """`JointStateReader.read` over a batch of messages: a JointSample each (None where it reads none)."""

    def __init__(self) -> None:
        self.single = JointStateReader()
        self._fixed = _FixedLayout(self.single.read, _lenient(_joint_offsets))

    def read(self, buffer: bytes, start: np.ndarray, size: np.ndarray) -> list[JointSample | None]:
        fits, floats, stamps = self._fixed.rows(buffer, start, size)
        spans = zip(start.tolist(), size.tolist())
        if not fits.any():
            return [self.single.read(buffer[at : at + length]) for at, length in spans]
        template = self._fixed.template
        names = template.names
        p = len(template.position)
        v = p + (0 if template.velocity is None else len(template.velocity))
        # a column block per field, iterated by row (a view each, cheaper than slicing every row), and the
        # JointSample built by position (five keyword arguments cost 0.2 us a message)
        velocities = floats[:, p:v] if v > p else repeat(None)
        efforts = floats[:, v:] if template.effort is not None else repeat(None)
        return [
            JointSample(names, position, velocity, effort, stamp) if ok else self.single.read(buffer[at : at + length])
            for ok, position, velocity, effort, stamp, (at, length) in zip(
                fits.tolist(), floats[:, :p], velocities, efforts, stamps, spans
            )
        ]


def _row_major(block: np.ndarray) -> np.ndarray:
    """`block` with each row (one message's values) contiguous, as the grounder's C kernels take a pose:
    columns picked by an index array come out column-major, and their rows were strided views that sent
    every pose of a replay down numpy's slower path."""
    return block if block.strides[-1] == block.itemsize else np.ascontiguousarray(block)


class _StampedBatchReader(Generic[V]):
    """`read_one` over a batch of one stream's stamped messages: (value, stamp) each (None where it reads
    none). A message with the first one's layout is read as a row of its `doubles` doubles, its value built
    from two column blocks of them (`first`, `second`: slices or index arrays); any other by `read_one`."""

    def __init__(
        self,
        read_one: Callable[[bytes], tuple[V, float] | None],
        doubles: int,
        first: Any,
        second: Any,
        build: Callable[[np.ndarray, np.ndarray], V],
    ) -> None:
        self._fixed = _FixedLayout(read_one, _lenient(_stamped_offsets(doubles)))
        self._read_one, self._columns, self._build = read_one, (first, second), build

    def read(self, buffer: bytes, start: np.ndarray, size: np.ndarray) -> list[tuple[V, float] | None]:
        fits, floats, stamps = self._fixed.rows(buffer, start, size)
        spans = zip(start.tolist(), size.tolist())
        read_one, build = self._read_one, self._build
        if not fits.any():
            return [read_one(buffer[at : at + length]) for at, length in spans]
        first, second = (_row_major(floats[:, columns]) for columns in self._columns)
        return [  # rows of each column block (as JointStateBatchReader reads its fields)
            (build(a, b), stamp) if ok else read_one(buffer[at : at + length])
            for ok, a, b, stamp, (at, length) in zip(fits.tolist(), first, second, stamps, spans)
        ]


class WrenchBatchReader(_StampedBatchReader[Wrench]):
    """`read_wrench` over a batch of messages: (Wrench, stamp) each (None where it reads none)."""

    def __init__(self) -> None:
        super().__init__(read_wrench, 6, slice(0, 3), slice(3, 6), Wrench)


class PoseBatchReader(_StampedBatchReader[Pose]):
    """`read_pose` over a batch of one stream's messages: (Pose, stamp) each (None where it reads none). Each
    object's poses come at a tenth of the control rate on a topic of their own (0.4 messages a frame in the
    workcell); read a batch at a time they cost a third of reading them one at a time."""

    def __init__(self) -> None:  # x y z, then qx qy qz qw: the quaternion w first, as `read_pose` orders it
        super().__init__(read_pose, 7, slice(0, 3), np.array([6, 3, 4, 5]), Pose)


class PredicateReader:
    """`/safety_monitor/predicates` DiagnosticArray bytes -> PredicateSample, as `messages.decode_predicates`
    of the decoded message (which also raises the same SourceError for a bad predicate value)."""

    def __init__(self) -> None:
        self._run: tuple[int, tuple[str, ...], re.Pattern[bytes]] | None = None  # (KeyValues, keys, pattern)

    @property
    def keys(self) -> tuple[str, ...]:
        """The predicate keys of the learnt run (empty before a message with one was read)."""
        return () if self._run is None else self._run[1]

    @_lenient
    def read(self, raw: bytes) -> PredicateSample | None:
        stamp, pos = _stamp(raw)
        statuses, pos = _count(raw, pos, 1)
        if statuses != 1:  # several statuses (or none): the general decoder picks and complains
            raise Malformed
        _, pos = _strings(raw, pos + 1, 3)  # after the level: name, message, hardware_id (one status is
        count, pos = _count(raw, pos, 1)  # read whatever its name)
        start = _align(pos, 4)
        values: dict[str, bool] = {}
        done = 0
        run = self._run
        match = None
        if run is not None and run[0] == count:
            match = run[2].match(raw, start)
            if match is not None:  # every key of the learnt run in place, each value exactly "true" or "false"
                values = dict(zip(run[1], map(is_not, match.groups(), repeat(None))))
                done, pos = len(run[1]), match.end()
        texts, pos = _strings(raw, pos, 2 * (count - done))
        pairs = list(zip(texts[::2], texts[1::2]))
        _end(raw, pos)
        sample = predicate_sample(pairs, lambda: stamp, values)
        if match is None:  # learnt from a message that reads (a malformed one is dropped, and teaches nothing)
            self._run = _learn(count, pairs, start)
        return sample


def _learn(
    count: int, pairs: list[tuple[str, str]], start: int
) -> tuple[int, tuple[str, ...], re.Pattern[bytes]] | None:
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
        parts.append(
            b"(?:(\\x05)\\x00\\x00\\x00true\\x00"
            + (b"" if last else b"[\\s\\S]{3}")
            + b"|\\x06\\x00\\x00\\x00false\\x00"
            + (b"" if last else b"[\\s\\S]{2}")
            + b")"
        )
        pos += 12
    return count, tuple(keys), re.compile(b"".join(parts))


@dataclass(frozen=True)
class PredicateColumns:
    """A batch of predicates messages decoded at once. Where `decoded[i]`, message i is the PredicateSample
    with values `dict(zip(keys, values[i]))`, time `t[i]`, frame `frame[i]`, unknown and stale names
    `unknown[i]`, `stale[i]`, objects `objects[i]` (as `PredicateReader.read` gives it); other messages are
    for the caller to decode one at a time (their entries here mean nothing)."""

    keys: tuple[str, ...]
    decoded: np.ndarray  # bool per message
    values: np.ndarray  # bool, messages x keys
    t: list[float]
    frame: list[int | None]
    unknown: list[frozenset[str]]
    stale: list[frozenset[str]]
    objects: list[Mapping[str, tuple[str, ...]]]


_NO_NAMES: frozenset[str] = frozenset()
_META_KEYS = (b"_frame", b"_t", b"_unknown", b"_stale")  # then `_objects`, which older bags lack
_TRUE, _FALS = _U32.unpack(b"true")[0], _U32.unpack(b"fals")[0]
_E_NUL = struct.unpack("<H", b"e\x00")[0]


class PredicateBatchReader:
    """`PredicateReader.read` over many messages at once: every message whose predicate run has the learnt
    keys and whose other fields are in the writer's layout (one status, ASCII strings, the four reserved
    keys last, then `_objects`, or not: bags recorded before it existed) is read with a few numpy
    operations per batch; the rest are left to the per-message reader (`single`, which also learns the
    layout from the first message)."""

    def __init__(self) -> None:
        self.single = PredicateReader()
        self._layout: tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray] | None = None

    def _learn(self, buffer: bytes, start: np.ndarray, size: np.ndarray) -> None:
        """The layout from the first message that reads: a malformed one (a bad value, `_objects` that is not
        JSON) is left to the caller's per-message reading, which drops and counts that frame alone."""
        for at, length in zip(start.tolist(), size.tolist()):
            try:
                if self.single.read(buffer[at : at + length]) is not None:
                    return
            except BadPredicates:
                continue

    def read(self, buffer: bytes, start: np.ndarray, size: np.ndarray) -> PredicateColumns:
        """Messages `buffer[start[i]:start[i] + size[i]]` (see PredicateColumns)."""
        n = len(start)
        if n and not self.single.keys:
            self._learn(buffer, start, size)
        if self._layout is None or self._layout[0] != self.single.keys:
            self._layout = _batch_layout(self.single.keys)
        keys, key_mask, key_words, value_at = self._layout
        if not keys or not n:
            return PredicateColumns(keys, np.zeros(n, bool), np.zeros((n, len(keys)), bool), [], [], [], [], [])
        cur = _Cursor(np.frombuffer(buffer, dtype=np.uint8), start.astype(np.int64), size.astype(np.int64))
        cur.require((cur.bytes_at(0, 2) == np.frombuffer(_LE, np.uint8)).all(axis=1))
        stamps = _stamps(cur.bytes_at(4, 8))
        cur.pos[:] = 12
        text_from = cur.pos.copy()
        cur.string()  # frame_id
        cur.require(cur.u32() == 1)  # one status
        cur.pos += 1  # its level
        for _ in range(3):  # name, message, hardware_id
            cur.string()
        cur.ascii(text_from, cur.pos)
        count = cur.u32()
        cur.require((count == len(keys) + 4) | (count == len(keys) + 5))
        run = cur.bytes_at(_align_vec(cur.pos), 4 * (int(value_at[-1]) + 3)).view("<u4")  # 4-byte words
        cur.require(((run & key_mask) == key_words).all(axis=1))
        length, text, tail = run[:, value_at], run[:, value_at + 1], run[:, value_at + 2]
        truth = length == 5
        cur.require(
            np.where(
                truth, (text == _TRUE) & (tail & 0xFF == 0), (length == 6) & (text == _FALS) & (tail & 0xFFFF == _E_NUL)
            ).all(axis=1)
        )
        cur.pos = _align_vec(cur.pos) + 4 * run.shape[1]
        texts = []
        for key in _META_KEYS:
            cur.require(cur.string_is(key))
            cur.string()
            texts.append(cur.string())
        named = count == len(keys) + 5  # with `_objects`
        if named.any():  # read by every message, kept by those that have it (the others end here)
            ok, pos = cur.ok.copy(), cur.pos.copy()
            cur.require(cur.string_is(b"_objects"))
            cur.string()
            o_at, o_len = cur.string()
            cur.ok, cur.pos = np.where(named, cur.ok, ok), np.where(named, cur.pos, pos)
            o_len = np.where(named, o_len, 0)
        else:
            o_at = o_len = np.zeros(n, dtype=np.int64)
        cur.require(cur.pos + 3 >= cur.size)  # rosbags' size check: at most padding after the last field
        decoded = cur.ok
        t = [0.0] * n
        frame: list[int | None] = [None] * n
        unknown, stale = [_NO_NAMES] * n, [_NO_NAMES] * n
        objects = [objects_of("")] * n
        (f_at, f_len), (t_at, t_len), (u_at, u_len), (s_at, s_len), (b_at, b_len) = (
            (a.tolist(), b.tolist()) for a, b in (*texts, (o_at, o_len))
        )
        absolute = cur.start.tolist()
        last_text, last_objects = b"", objects_of("")  # consecutive messages mostly name the same objects
        for i in np.flatnonzero(decoded).tolist():  # the few texts per message, as predicate_sample reads them
            base = absolute[i]
            try:
                t[i] = float(buffer[base + t_at[i] : base + t_at[i] + t_len[i]].decode()) if t_len[i] else stamps[i]
                frame[i] = int(buffer[base + f_at[i] : base + f_at[i] + f_len[i]].decode()) if f_len[i] else None
                if u_len[i]:
                    unknown[i] = comma_names(buffer[base + u_at[i] : base + u_at[i] + u_len[i]].decode())
                if s_len[i]:
                    stale[i] = comma_names(buffer[base + s_at[i] : base + s_at[i] + s_len[i]].decode())
                if b_len[i]:
                    said = buffer[base + b_at[i] : base + b_at[i] + b_len[i]]
                    if said != last_text:
                        last_text, last_objects = said, objects_of(said.decode())
                    objects[i] = last_objects
            except (ValueError, UnicodeDecodeError, BadPredicates):  # the per-message reader names the problem
                decoded[i] = False
        return PredicateColumns(keys, decoded, truth, t, frame, unknown, stale, objects)


def _stamps(header: np.ndarray) -> list[float]:
    """Header stamps in seconds from (messages x 8) bytes of sec and nanosec, as `_stamp` reads one. Each row's
    bytes are contiguous, so both columns are read through views, without copies."""
    sec, nanosec = header[:, :4].view("<i4")[:, 0], header[:, 4:].view("<u4")[:, 0]
    return ((sec.astype(np.int64) * 1_000_000_000 + nanosec) / 1e9).tolist()


def _align_vec(pos: np.ndarray) -> np.ndarray:
    return pos + (-(pos - _BASE) % 4)


def _batch_layout(keys: tuple[str, ...]) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
    """For a run of `keys` as `_learn` lays it out, in 4-byte words from its 4-aligned start: a mask of the
    key bytes (length, text, NUL; not the padding, not the values) and the expected words under it, and the
    word of each value's length (then 8 bytes of text: "true\\0" and padding, or "false\\0" and padding)."""
    mask, text = bytearray(), bytearray()
    value_at: list[int] = []
    for key in keys:
        data = _U32.pack(len(key.encode()) + 1) + key.encode() + b"\x00"
        pad = -len(data) % 4
        text += data + b"\x00" * (pad + 12)
        mask += b"\xff" * len(data) + b"\x00" * (pad + 12)
        value_at.append(len(text) // 4 - 3)
    return (
        keys,
        np.frombuffer(bytes(mask), dtype="<u4"),
        np.frombuffer(bytes(text), dtype="<u4"),
        np.array(value_at, dtype=np.int64),
    )


class _Cursor:
    """Reads the same fields of many CDR messages at once; a message that breaks a check drops out of `ok`
    (its position keeps moving but is clamped into the buffer, so gathers never fail)."""

    def __init__(self, data: np.ndarray, start: np.ndarray, size: np.ndarray) -> None:
        self.data, self.start, self.size = data, start, size
        self.pos = np.zeros(len(start), dtype=np.int64)
        self.ok = np.ones(len(start), dtype=bool)
        self._limit = len(data)

    def require(self, condition: np.ndarray) -> None:
        self.ok &= condition

    def bytes_at(self, pos: np.ndarray | int, n: int) -> np.ndarray:
        """n bytes from message position `pos` (messages too short drop out)."""
        pos = np.broadcast_to(pos, self.start.shape)
        self.ok &= (pos >= 0) & (pos + n <= self.size)
        first = np.minimum(np.where(self.ok, self.start + pos, 0), max(0, self._limit - n))
        if n == 1:
            return self.data[first][:, None]
        return sliding_window_view(self.data, n)[first]  # row copies, no index array per byte

    def u32_at(self, pos: np.ndarray | int) -> np.ndarray:
        return self.bytes_at(pos, 4).view("<u4")[:, 0].astype(np.int64)

    def u32(self) -> np.ndarray:
        self.pos = _align_vec(self.pos)
        value = self.u32_at(self.pos)
        self.pos = self.pos + 4
        return value

    def string(self) -> tuple[np.ndarray, np.ndarray]:
        """(position, length) of each message's next string text (without the NUL)."""
        length = self.u32()
        self.require((length >= 1) & (self.pos + length <= self.size))
        at = self.pos
        self.require(self.bytes_at(np.maximum(at + length - 1, 0), 1)[:, 0] == 0)
        self.pos = at + length
        return at, length - 1

    def string_is(self, text: bytes) -> np.ndarray:
        """Whether the next string is `text` (the cursor does not move)."""
        data = _U32.pack(len(text) + 1) + text + b"\x00"
        return (self.bytes_at(_align_vec(self.pos), len(data)) == np.frombuffer(data, np.uint8)).all(axis=1)

    def ascii(self, first: np.ndarray, end: np.ndarray) -> None:
        """Messages with a byte over 0x7f between `first` and `end` drop out (their strings might not be
        UTF-8, which the per-message reader rejects)."""
        span = np.where(self.ok, end - first, 0)
        width = int(span.max()) if len(span) else 0
        if width <= 0:
            return
        at = np.minimum(np.where(self.ok, self.start + first, 0), max(0, self._limit - width))
        window = sliding_window_view(self.data, width)[at]
        inside = np.arange(width) < span[:, None]
        self.require(~np.any((window >= 0x80) & inside, axis=1))


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
        level = STALE if sample.stale else WARN if sample.unknown else OK
        frame = "" if sample.frame is None else str(sample.frame)
        out = _Out.diagnostic_array(split_seconds(sample.t), 1)
        out.status(
            level,
            PREDICATES_STATUS,
            "" if sample.frame is None else f"frame {frame}",
            self.hardware_id,
            len(sample.values) + 5,
        )
        keys = tuple(sample.values)
        layout = self._layouts.get(keys)
        if layout is None:
            if len(self._layouts) >= 16:
                self._layouts.clear()
            layout = self._layouts[keys] = [(_key_value(k, "false"), _key_value(k, "true")) for k in keys]
        out.raw(b"".join(map(getitem, layout, map(bool, sample.values.values()))))
        out.strings(
            (
                "_frame",
                frame,
                "_t",
                repr(float(sample.t)),
                "_unknown",
                ",".join(sorted(sample.unknown)),
                "_stale",
                ",".join(sorted(sample.stale)),
                "_objects",
                objects_text(sample.objects),
            )
        )
        return out.bytes()


def write_events(events: Sequence[Any], t: float, hardware_id: str = EVENTS_HARDWARE_ID) -> bytes:
    """The CDR bytes of `messages.events_msg(types, events, t, hardware_id)` (rosbags' serialisation, byte for byte),
    for the monitor to publish an alert without building a message object per field."""
    statuses = []
    for event in events:
        name, kind, values = event_texts(event)
        statuses.append((event_level_value(kind), name, kind, hardware_id, values))
    return write_diagnostics(split_seconds(t), statuses)


def write_diagnostics(
    stamp: tuple[int, int], statuses: Sequence[tuple[int, str, str, str, Sequence[tuple[str, str]]]]
) -> bytes:
    """The CDR bytes of a DiagnosticArray stamped (sec, nanosec), frame_id "", with one DiagnosticStatus
    per (level, name, message, hardware_id, [(key, value)]) in that order (rosbags' bytes)."""
    out = _Out.diagnostic_array(stamp, len(statuses))
    for level, name, message, hardware_id, values in statuses:
        out.status(level, name, message, hardware_id, len(values))
        out.strings(tuple(text for pair in values for text in pair))
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

    @classmethod
    def diagnostic_array(cls, stamp: tuple[int, int], statuses: int) -> _Out:
        """A DiagnosticArray up to its first status: header (stamp, frame_id "") and the status count."""
        out = cls(_LE + b"\x00\x00" + _STAMP.pack(*stamp))
        out.strings(("",))
        out.u32(statuses)
        return out

    def status(self, level: int, name: str, message: str, hardware_id: str, values: int) -> None:
        """A DiagnosticStatus up to its KeyValues: level, texts and the KeyValue count."""
        self.raw(bytes((level,)))
        self.strings((name, message, hardware_id))
        self.u32(values)

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
