"""Object semantics (config/objects.yaml): entity -> kind -> properties, so predicates never read names.

Kinds may have a `parent` kind whose properties they inherit (a raw_meat is a food, hence graspable).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safety_monitor.errors import GroundingError
from safety_monitor.grounding.config_file import read_config
from safety_monitor.names import did_you_mean

PREDICATE_PROPERTIES = ("graspable", "fragile", "raw", "clean", "support", "container", "enclosure", "openable")
"""The properties the estimators read: every catalog's vocabulary must declare them."""


@dataclass(frozen=True)
class ObjectCatalog:
    """Properties per entity, resolved through the kind hierarchy at load time."""

    kinds: Mapping[str, str]  # entity -> kind
    properties: Mapping[str, frozenset[str]]  # entity -> resolved properties
    vocabulary: frozenset[str]
    source: str = "<inline>"

    def has(self, entity: str, prop: str) -> bool:
        """Whether `entity` has property `prop` (False for robot parts and unlisted entities)."""
        if prop not in self.vocabulary:
            raise GroundingError(f"{self.source}: property {prop!r} is not in the vocabulary")
        return prop in self.properties.get(entity, frozenset())

    def with_property(self, prop: str) -> tuple[str, ...]:
        """Every entity having `prop`, sorted."""
        return tuple(sorted(e for e in self.properties if self.has(e, prop)))


def load_object_catalog(path: str | Path) -> ObjectCatalog:
    path = Path(path)
    doc = read_config(path, "object semantics")
    return parse_object_catalog(doc, str(path))


def parse_object_catalog(doc: Any, source: str) -> ObjectCatalog:
    if not isinstance(doc, dict) or set(doc) != {"properties", "kinds", "entities"}:
        raise GroundingError(f"{source}: expected exactly the sections 'properties', 'kinds', 'entities'")
    vocab: set[str] = set()
    for group, names in (doc["properties"] or {}).items():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise GroundingError(f"{source}: properties.{group} must be a list of names")
        vocab.update(names)
    kinds = doc["kinds"] or {}
    own: dict[str, set[str]] = {}
    parents: dict[str, str | None] = {}
    for kind, body in kinds.items():
        body = body or {}
        unknown = sorted(set(body.get("properties", [])) - vocab)
        if unknown:
            raise GroundingError(f"{source}: kind {kind!r} uses unknown properties {unknown}")
        parent = body.get("parent")
        if parent is not None and parent not in kinds:
            raise GroundingError(f"{source}: kind {kind!r} has unknown parent {parent!r}")
        own[kind], parents[kind] = set(body.get("properties", [])), parent

    def resolve(kind: str, seen: tuple[str, ...] = ()) -> set[str]:
        if kind in seen:
            raise GroundingError(f"{source}: kind hierarchy has a cycle: {' -> '.join(seen + (kind,))}")
        parent = parents[kind]
        return own[kind] | (resolve(parent, seen + (kind,)) if parent else set())

    entity_kinds: dict[str, str] = {}
    for entity, kind in (doc["entities"] or {}).items():
        if not isinstance(kind, str):  # properties listed in its place: a kind carries them
            raise GroundingError(f"{source}: entity {entity!r}: its kind must be one name of kinds:, got {kind!r}")
        if kind not in kinds:
            raise GroundingError(f"{source}: entity {entity!r} has unknown kind {kind!r}{did_you_mean(kind, kinds)}")
        entity_kinds[entity] = kind
    missing = [p for p in PREDICATE_PROPERTIES if p not in vocab]
    if missing:
        raise GroundingError(f"{source}: properties {', '.join(missing)} are read by the predicates but not declared")
    return ObjectCatalog(
        kinds=entity_kinds,
        properties={e: frozenset(resolve(k)) for e, k in entity_kinds.items()},
        vocabulary=frozenset(vocab),
        source=source,
    )
