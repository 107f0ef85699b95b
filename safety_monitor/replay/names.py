"""Topic names of a mapping as ROS resolves them for a node in the recording's namespace.

A node in a namespace reads relative names in its `topics_file` (`gripper/joint_states`) under that namespace;
a bag records absolute names. So that one topics.yaml serves both, replay and `inspect` resolve a relative
name under `--namespace NS` (default `/`, the root namespace) the way ROS would. The default names are the
nodes' own, relative too (`safety_monitor/predicates`), so `--namespace left` finds what a stack in `left`
published. When the bag has no topic of that name, a relative name matches the one bag topic of the right type
ending with `/<name>` (recorded under a namespace the user did not give), which is said in a note; several such
topics are refused, listing them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from safety_monitor.errors import SourceError
from safety_monitor.pipeline.assemble import StreamMapping, pose_stream
from safety_monitor.pipeline.decode import MessageType
from safety_monitor.pipeline.inputs import ConfiguredInput, configured_inputs

_TOPICS = ("joint_states", "wrench", "gripper_joint_states", "predicates", "events", "episode", "tf", "tf_static")


def _absolute(name: str, ns: str) -> str:
    if name.startswith("/"):
        return name
    if name.startswith("~"):
        raise SourceError(f"topic {name!r}: a private name needs a node's name; give it absolute or relative")
    return ns.rstrip("/") + "/" + name


def absolute_mapping(mapping: StreamMapping, ns: str = "/") -> StreamMapping:
    """`mapping` with every relative topic name put under namespace `ns`, as a stack there names its topics (the
    default `/`: the names a stack in the root namespace publishes)."""
    values: dict[str, Any] = {f: _absolute(getattr(mapping, f), ns) for f in _TOPICS if getattr(mapping, f)}
    values["object_pose"] = _absolute(mapping.object_pose, ns)
    values["objects"] = {o: _absolute(t, ns) for o, t in mapping.objects.items()}
    values["more_joint_states"] = tuple(
        dataclasses.replace(more, topic=_absolute(more.topic, ns)) for more in mapping.more_joint_states
    )
    return dataclasses.replace(mapping, **values)


def resolve_mapping(
    mapping: StreamMapping,
    ns: str,
    found: Mapping[str, str],
    objects: Iterable[str],
    from_predicates: bool = False,
) -> tuple[StreamMapping, list[str]]:
    """`mapping` with every relative topic name resolved under namespace `ns` against the topics `found`
    (topic -> type), and a note for each name matched by its suffix instead. SourceError when a relative name
    that is not under `ns` ends several topics of its type."""
    objects = tuple(objects)
    resolved = absolute_mapping(mapping, ns)
    read = configured_inputs(mapping, objects)
    if from_predicates:
        read = [ConfiguredInput("predicates", mapping.predicates, MessageType.DIAGNOSTIC_ARRAY)]
    changes: dict[str, str] = {}
    notes = []
    for i in read:
        target = _absolute(i.topic, ns)
        if i.topic.startswith("/") or target in found:
            continue
        candidates = sorted(
            t for t, msgtype in found.items() if t.endswith("/" + i.topic) and msgtype == i.msgtype.value
        )
        if len(candidates) > 1:
            raise SourceError(
                f"topic {i.topic!r} ({i.stream}) is not {target}, and several topics of type {i.msgtype.value} "
                f"end with it: {', '.join(candidates)} (choose with --namespace NS or an absolute name)"
            )
        if candidates:
            changes[i.stream] = candidates[0]
            notes.append(
                f"topic {i.topic!r} ({i.stream}): no {target}; using {candidates[0]}, the one topic of its type "
                "ending with it (--namespace says where the recording's node ran)"
            )
    values: dict[str, Any] = {f: t for f, t in changes.items() if f in _TOPICS}
    values["objects"] = {**resolved.objects, **{o: changes[s] for o in objects if (s := pose_stream(o)) in changes}}
    values["more_joint_states"] = tuple(
        dataclasses.replace(resolved_more, topic=changes[more.stream]) if more.stream in changes else resolved_more
        for more, resolved_more in zip(mapping.more_joint_states, resolved.more_joint_states)
    )
    return dataclasses.replace(resolved, **values), notes
