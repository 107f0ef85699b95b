"""The topics a configuration reads and the type each must have: one list for replay, `inspect` and the node.

A topic of another type (a wrench topic given as the joint states) would fail deep inside decoding, or make no
frame at all; checked up front it is one line naming the topic, the type expected and the type found.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from safety_monitor.errors import SourceError
from safety_monitor.pipeline.assemble import GRIPPER_JOINTS, JOINTS, WRENCH, StreamMapping, pose_stream
from safety_monitor.pipeline.decode import MessageType

TF, TF_STATIC = "tf", "tf_static"


@dataclass(frozen=True)
class ConfiguredInput:
    """One topic the configuration reads: the stream it feeds, its topic and type, and whether frames need it
    (`joint_states`; without the others their predicates are unknown, or the TF links are all dynamic)."""

    stream: str
    topic: str
    msgtype: MessageType
    required: bool = False


class WrongTopicType(SourceError):
    """A configured topic whose messages are of another type than its stream reads."""


def configured_inputs(mapping: StreamMapping, objects: Iterable[str]) -> list[ConfiguredInput]:
    """Every topic `mapping` reads for a robot with `objects`, frame-driving stream first."""
    out = [ConfiguredInput(JOINTS, mapping.joint_states, MessageType.JOINT_STATE, required=True)]
    if mapping.gripper_joint_states:
        out.append(ConfiguredInput(GRIPPER_JOINTS, mapping.gripper_joint_states, MessageType.JOINT_STATE))
    out += [ConfiguredInput(more.stream, more.topic, MessageType.JOINT_STATE) for more in mapping.more_joint_states]
    if mapping.wrench is not None:
        out.append(ConfiguredInput(WRENCH, mapping.wrench, MessageType.WRENCH_STAMPED))
    out += [
        ConfiguredInput(pose_stream(name), mapping.pose_topic(name), MessageType.POSE_STAMPED)
        for name in objects
        if name not in mapping.object_frames
    ]
    if mapping.object_frames or mapping.world_frame:  # a mobile base's pose comes from TF too
        out += [
            ConfiguredInput(TF, mapping.tf, MessageType.TF_MESSAGE),
            ConfiguredInput(TF_STATIC, mapping.tf_static, MessageType.TF_MESSAGE),
        ]
    return out


def type_errors(inputs: Iterable[ConfiguredInput], found: Mapping[str, str]) -> list[str]:
    """One line per configured topic present in `found` (topic -> type) with another type than expected."""
    return [
        f"topic {i.topic} ({i.stream}): expected type {i.msgtype.value}, found {found[i.topic]}"
        for i in inputs
        if i.topic in found and found[i.topic] != i.msgtype.value
    ]


def check_types(inputs: Iterable[ConfiguredInput], found: Mapping[str, str], where: str) -> None:
    """WrongTopicType naming every configured topic of the wrong type (`where`: the bag, or the ROS graph)."""
    if errors := type_errors(inputs, found):
        raise WrongTopicType(f"{where}: " + "; ".join(errors))
