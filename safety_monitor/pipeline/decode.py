"""The one decoder: a message's bytes -> the plain values the pipeline's stages take.

A message object costs tens of microseconds (a predicates DiagnosticArray hundreds); at 500 Hz a stage needs a
few numbers from each, which the direct CDR readers of `io.cdr` take straight from the bytes. Bytes they
decline (another layout, a malformed message) go to the driver's own deserialiser, injected as a callable so
this module needs neither: rclpy's `deserialize_message` live, rosbags' in a bag. Bytes neither reads raise
`Undecodable` with one text whichever deserialiser refused them, so a live run and a replay of its bag report
the same issue for the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, Generic, TypeVar

from safety_monitor.errors import SourceError
from safety_monitor.io import cdr
from safety_monitor.io import messages as m

V = TypeVar("V")


class MessageType(StrEnum):
    """The message types the stages read, by their ROS names."""

    JOINT_STATE = "sensor_msgs/msg/JointState"
    WRENCH_STAMPED = "geometry_msgs/msg/WrenchStamped"
    POSE_STAMPED = "geometry_msgs/msg/PoseStamped"
    DIAGNOSTIC_ARRAY = "diagnostic_msgs/msg/DiagnosticArray"  # the predicates
    TF_MESSAGE = "tf2_msgs/msg/TFMessage"
    STRING = "std_msgs/msg/String"  # /robot_description


class Undecodable(SourceError):
    """Bytes that are no message of the type (neither the direct reader nor the deserialiser reads them)."""


class Decoder(Generic[V]):
    """`fast(raw)` when the direct reader takes the bytes (None: no direct reader for this source's
    definition of the type), else `convert(fallback(raw))`; `Undecodable` when the fallback refuses them."""

    __slots__ = ("convert", "fallback", "fast", "msgtype")

    def __init__(
        self,
        msgtype: str,
        fast: Callable[[bytes], V | None] | None,
        fallback: Callable[[bytes], Any],
        convert: Callable[[Any], V],
    ) -> None:
        self.msgtype, self.fast, self.fallback, self.convert = msgtype, fast, fallback, convert

    def __call__(self, raw: bytes) -> V:
        fast = self.fast
        if fast is not None:
            value = fast(raw)
            if value is not None:
                return value
        try:
            msg = self.fallback(raw)
        except Exception:  # rclpy raises RuntimeError/TypeError subclasses from C, rosbags SourceError
            raise Undecodable(f"undecodable {self.msgtype} ({len(raw)} bytes)") from None
        return self.convert(msg)


_READERS: dict[MessageType, tuple[Callable[[], Callable[[bytes], Any] | None], Callable[[Any], Any]]] = {
    # a new direct reader (most learn the layout of the last message they read), the message converter
    MessageType.JOINT_STATE: (lambda: cdr.JointStateReader().read, m.joint_state_sample),
    MessageType.WRENCH_STAMPED: (lambda: cdr.WrenchReader().read, m.wrench_of),
    MessageType.POSE_STAMPED: (lambda: cdr.PoseReader().read, m.pose_of),
    MessageType.DIAGNOSTIC_ARRAY: (lambda: cdr.PredicateReader().read, m.decode_predicates),
    # no direct readers: a TFMessage arrives at the rate of a slow stream, /robot_description once
    MessageType.TF_MESSAGE: (lambda: None, m.transforms_of),
    MessageType.STRING: (lambda: None, m.robot_description_of),
}


def decoder(
    kind: MessageType,
    fallback: Callable[[bytes], Any],
    *,
    msgtype: str | None = None,
    fast: bool | Callable[[bytes], Any] = True,
) -> Decoder:
    """The decoder of one stream of `kind` messages. `msgtype`: the type's name where the source calls it
    otherwise (a bag's own type); `fast`: False when the source defines the type unlike the direct reader,
    or a reader to share (a batch reader's single-message reader)."""
    make_fast, convert = _READERS[kind]
    reader = make_fast() if fast is True else None if fast is False else fast
    return Decoder(msgtype or kind, reader, fallback, convert)


class TypedDecoders:
    """Decoders of one stream whose messages name their type (a bag: each connection has its own, and its
    own definition of it): the direct reader only where `direct(msgtype)` says the source defines the type as
    the reader reads it, else `deserialize(raw, msgtype)` alone."""

    def __init__(
        self,
        kind: MessageType,
        deserialize: Callable[[bytes, str], Any],
        direct: Callable[[str], bool],
        fast: Callable[[bytes], Any] | None = None,
    ) -> None:
        self.kind, self.deserialize, self.direct = kind, deserialize, direct
        self._fast = fast or _READERS[kind][0]()
        self._decoders: dict[str, Decoder] = {}

    def __getitem__(self, msgtype: str) -> Decoder:
        found = self._decoders.get(msgtype)
        if found is None:
            deserialize = self.deserialize
            found = self._decoders[msgtype] = decoder(
                self.kind,
                lambda raw: deserialize(raw, msgtype),
                msgtype=msgtype,
                fast=(self._fast or False) if self.direct(msgtype) else False,
            )
        return found

    def supported(self, msgtype: str) -> bool:
        """Whether the direct reader reads this source's `msgtype` (batch readers apply then too)."""
        return self[msgtype].fast is not None
