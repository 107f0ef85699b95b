"""The live ROS graph's topics and their types, for `safety-monitor inspect --live` (rclpy stays in nodes/)."""

from __future__ import annotations

import time


def topic_types(seconds: float) -> dict[str, str]:
    """Topic -> type, as rclpy's discovery sees them after listening for `seconds` (a topic with several types
    shows them joined by ' | ', which no configured type matches)."""
    import rclpy

    rclpy.init(args=[])
    try:
        node = rclpy.create_node("safety_monitor_inspect")
        deadline = time.monotonic() + seconds  # discovery has no end signal: listen for the window asked for
        while time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=min(0.1, max(0.0, deadline - time.monotonic())))
        found = {name: " | ".join(types) for name, types in node.get_topic_names_and_types()}
        node.destroy_node()
        return found
    finally:
        rclpy.try_shutdown()
