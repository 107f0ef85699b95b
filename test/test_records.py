"""`direct_init`: frozen dataclasses built by filling their dicts behave as the dataclass constructor's."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import numpy as np
import pytest

from safety_monitor.frames import FrozenValues, JointSample, Pose, PredicateSample, RobotState, Wrench
from safety_monitor.grounding.geometry import Box, FrameGeometry
from safety_monitor.grounding.grounder import PredicateFrame
from safety_monitor.monitor.events import Event
from safety_monitor.records import direct_init


@dataclasses.dataclass(frozen=True)
class _Plain:
    a: int
    b: str = "b"
    c: list = dataclasses.field(default_factory=list)
    d: object = None


@direct_init
@dataclasses.dataclass(frozen=True)
class Direct:
    a: int
    b: str = "b"
    c: list = dataclasses.field(default_factory=list)
    d: object = None


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((1,), {}), ((1, "x"), {}), ((1,), {"c": [2], "d": None}), ((), {"a": 1, "d": 0}), ((1, "x", [3], 4), {})],
)
def test_direct_init_takes_the_constructors_arguments_and_defaults(args, kwargs):
    direct, plain = Direct(*args, **kwargs), _Plain(*args, **kwargs)
    assert vars(direct) == vars(plain) and repr(direct).replace("Direct", "_Plain") == repr(plain)
    assert inspect.signature(Direct).parameters.keys() == inspect.signature(_Plain).parameters.keys()
    with pytest.raises(dataclasses.FrozenInstanceError):
        direct.a = 2  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(direct)) == direct and dataclasses.replace(direct, a=5).a == 5


def test_direct_init_makes_a_new_default_from_each_factory_and_refuses_missing_arguments():
    assert Direct(1).c is not Direct(1).c
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        Direct()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'e'"):
        Direct(1, e=2)  # type: ignore[call-arg]


def test_direct_init_refuses_what_it_would_skip():
    @dataclasses.dataclass(frozen=True)
    class Checked:
        a: int

        def __post_init__(self) -> None: ...

    @dataclasses.dataclass
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    @dataclasses.dataclass(frozen=True)
    class KeywordOnly:
        a: int = dataclasses.field(kw_only=True)

    for cls in (Checked, Mutable, Slotted, KeywordOnly, int):
        with pytest.raises(TypeError, match="direct_init"):
            direct_init(cls)


@pytest.mark.parametrize(
    ("cls", "args"),
    [
        (Pose, (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))),
        (Wrench, (np.zeros(3), np.ones(3))),
        (JointSample, (("j",), np.zeros(1), None, None, 0.5)),
        (RobotState, (1.0, ("j",), np.zeros(1))),
        (PredicateSample, ({"p": True}, 1.0)),
        (PredicateFrame, (1.0, 3, {"p": True}, frozenset(), {}, {"p": ("mug",)})),
        (Event, ("opened", "p", "collision_contact", 7)),
        (Box, (np.zeros(3), np.eye(3), np.ones(3))),
        (FrameGeometry, (np.zeros(3), np.eye(3), np.zeros((1, 3)), {}, {}, {})),
    ],
)
def test_the_pipelines_records_set_every_field(cls, args):
    """Every record the pipeline builds per message or frame sets each field, defaults included."""
    record = cls(*args)
    assert vars(record).keys() == {f.name for f in dataclasses.fields(cls)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, dataclasses.fields(cls)[0].name, None)


def test_frozen_values_refuse_every_change_and_pickle_and_copy_as_themselves():
    """A grounder's values (read-only, handed out again while its decisions repeat) refuse every mutator with
    one clear error and stay as they were; pickled they come back read-only and equal; copies are plain dicts."""
    values = FrozenValues(a=True, b=False)
    changes = (
        lambda v: v.__setitem__("a", False),
        lambda v: v.__delitem__("a"),
        lambda v: v.__ior__({"a": False}),
        lambda v: v.update(a=False),
        lambda v: v.pop("a"),
        lambda v: v.popitem(),
        lambda v: v.setdefault("c", True),
        lambda v: v.clear(),
    )
    for change in changes:
        with pytest.raises(TypeError, match="read-only"):
            change(values)
    assert values == {"a": True, "b": False}
    back = pickle.loads(pickle.dumps(values))
    assert type(back) is FrozenValues and back == values
    assert all(type(c) is dict and c == values for c in (dict(values), values.copy(), values | {}))
