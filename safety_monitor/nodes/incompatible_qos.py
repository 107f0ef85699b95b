"""Subscriptions that say when a publisher's QoS shuts them out.

A publisher whose QoS a subscription cannot match (a best-effort sensor against a reliable input, most
often) delivers nothing, and rclpy's own warning names no remedy; the node's /diagnostics would only say
it is waiting. `IncompatibleQos.subscribe` makes a subscription that records the refused policy per
topic, logs one ERROR line naming it and what accepts such a publisher, and calls `on_change` so the
node publishes its status again with `text` and `values` in it. The estimator's inputs and the monitor's
predicates use it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rclpy.event_handler import QoSRequestedIncompatibleQoSInfo, SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_policy_name_from_kind


class IncompatibleQos:
    """`remedy(policy)`: what makes the node hear a publisher refused over that policy ('' if nothing does)."""

    def __init__(self, node: Node, remedy: Callable[[str], str], on_change: Callable[[], None]) -> None:
        self._node, self._remedy, self._on_change = node, remedy, on_change
        self.refused: dict[str, tuple[str, int]] = {}  # topic -> (QoS policy, publishers) it refused

    def subscribe(self, msg_type: Any, topic: str, callback: Callable[..., None], profile: QoSProfile, **kwargs: Any):
        """`node.create_subscription` that reports a publisher whose QoS it cannot match."""
        events = SubscriptionEventCallbacks(incompatible_qos=lambda info: self._on_incompatible(topic, info))
        return self._node.create_subscription(msg_type, topic, callback, profile, event_callbacks=events, **kwargs)

    def _on_incompatible(self, topic: str, info: QoSRequestedIncompatibleQoSInfo) -> None:
        self.refused[topic] = (qos_policy_name_from_kind(info.last_policy_kind), info.total_count)
        self._node.get_logger().error(f"{topic}: {self.text(topic)}")
        self._on_change()

    def text(self, topic: str) -> str:
        """Why nothing arrives on `topic`, and the remedy; '' while no publisher was refused there."""
        if topic not in self.refused:
            return ""
        policy = self.refused[topic][0]
        text = f"a publisher offers QoS incompatible with this subscription ({policy}): nothing it sends arrives"
        remedy = self._remedy(policy)
        return f"{text}; {remedy}" if remedy else text

    def values(self) -> list[tuple[str, str]]:
        """Diagnostic values `incompatible_qos.<topic>`: the policy and how many publishers were refused."""
        return [(f"incompatible_qos.{t}", f"{policy} x{n}") for t, (policy, n) in sorted(self.refused.items())]
