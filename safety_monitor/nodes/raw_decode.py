"""Decoding subscriptions taken as bytes (`raw=True`): the direct CDR readers of `io.cdr`, rclpy's
deserialiser when they decline.

rclpy builds a Python message object per message (a JointState costs tens of microseconds, a predicates
DiagnosticArray of 44 KeyValues hundreds); at 500 Hz the nodes need a few numbers from each, which the
readers take straight from the bytes, exactly as bag replay does. A message the readers do not take (another
layout, a malformed one) goes through rclpy, which raises its own error for bytes that are not a message.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from rclpy.serialization import deserialize_message

from safety_monitor.errors import SourceError

T = TypeVar("T")


class RawDecoder(Generic[T]):
    """`fast(raw)` (None: declined), else `convert(deserialize_message(raw, msg_type))`; SourceError if neither."""

    def __init__(self, fast: Callable[[bytes], T | None], msg_type: Any, convert: Callable[[Any], T]) -> None:
        self.fast, self.msg_type, self.convert = fast, msg_type, convert

    def __call__(self, raw: bytes) -> T:
        value = self.fast(raw)
        if value is not None:
            return value
        try:
            msg = deserialize_message(raw, self.msg_type)
        except Exception as exc:  # rclpy raises RuntimeError/TypeError subclasses from C for bad bytes
            raise SourceError(f"undecodable {self.msg_type.__name__} ({len(raw)} bytes): {exc}") from None
        return self.convert(msg)
