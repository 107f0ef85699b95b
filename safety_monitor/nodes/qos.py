"""QoS profiles every node and tool of the package agrees on.

Inputs and predicates are reliable with a deep queue, so a paced or lock-stepped simulator loses no
frame; `input_qos(best_effort=True)` accepts sensors that only offer best effort. Events are reliable
and transient local: a console started late still receives the history.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

FRAME_DEPTH = 200
EVENTS_DEPTH = 1000


def input_qos(best_effort: bool = False) -> QoSProfile:
    """Robot inputs (/joint_states, wrench, poses)."""
    reliability = ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=FRAME_DEPTH, reliability=reliability)


PREDICATES = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=FRAME_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
EVENTS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=EVENTS_DEPTH,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
EPISODE = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=20,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
LATCHED = QoSProfile(  # /robot_description and /tf_static: published once, kept for late subscribers
    history=HistoryPolicy.KEEP_LAST,
    depth=100,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
DIAGNOSTICS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=50, reliability=ReliabilityPolicy.RELIABLE)
CLOCK = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE)
