"""The live fallback of the one decoder (`pipeline.decode`): rclpy's deserialiser, for the bytes of a
subscription taken raw (`raw=True`) that the direct CDR readers decline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rclpy.serialization import deserialize_message

from safety_monitor.pipeline.decode import Decoder, MessageType, decoder


def rclpy_decoder(kind: MessageType, msg_type: Any) -> Decoder:
    """The decoder of a subscription to `msg_type` (an rclpy message class) carrying `kind` messages."""
    fallback: Callable[[bytes], Any] = lambda raw: deserialize_message(raw, msg_type)  # noqa: E731
    return decoder(kind, fallback)
