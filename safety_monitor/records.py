"""Frozen dataclasses that build as fast as plain classes.

A frozen dataclass's generated __init__ sets each field through a checked `object.__setattr__`, about
twice the cost of filling the instance's dict. The pipeline builds some for every message or frame (poses,
joint samples, robot states, predicate frames, events), so those classes take `direct_init`: the same
signature and defaults, the fields written into the instance dict, and frozen as before (assigning a field
raises FrozenInstanceError).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def direct_init(cls: type[T]) -> type[T]:
    """Give frozen dataclass `cls` an __init__ that fills the instance dict directly (generated once, as the
    dataclass's own is). Fields with a default or a default factory keep it; `__post_init__`, init-only,
    keyword-only and slotted classes are refused, since the direct path would skip or break them."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"direct_init: {cls.__name__} is not a frozen dataclass")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__") or any(not f.init or f.kw_only for f in fields):
        raise TypeError(f"direct_init: {cls.__name__} has __post_init__, __slots__, or init-only/keyword-only fields")
    namespace: dict[str, object] = {"_FACTORY": _FACTORY}
    args, lines = [], []
    for f in fields:
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            args.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            args.append(f"{f.name}=_FACTORY")
            lines.append(f"    if {f.name} is _FACTORY:\n        {f.name} = _factory_{f.name}()")
        else:
            args.append(f.name)
        lines.append(f"    fields[{f.name!r}] = {f.name}")
    source = f"def __init__(self, {', '.join(args)}):\n    fields = self.__dict__\n" + "\n".join(lines) + "\n"
    exec(source, namespace)
    init: Callable[..., None] = namespace["__init__"]  # type: ignore[assignment]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = f"Fill {cls.__name__}'s fields (see `safety_monitor.records.direct_init`)."
    setattr(cls, "__init__", init)  # noqa: B010 (a method assigned to a class: mypy refuses the plain form)
    return cls


class _Factory:
    """The placeholder default of a field with a default factory (None may be a value)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()
