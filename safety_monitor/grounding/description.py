"""Robot and workcell description (config/robot.yaml): what the twin loads and what each body means.

Entities are the things predicates talk about: robot parts (`finger_left`, `finger_right`, `hand`,
`arm`), objects, fixtures (the moving part, named after the fixture, and `<fixture>.housing`), static
bodies and `environment` (any other geometry, e.g. the floor). The twin maps every MJCF geom to one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from safety_monitor.errors import GroundingError
from safety_monitor.grounding.config_file import read_config

FINGER_PARTS = ("finger_left", "finger_right")
GRIPPER_PARTS = (*FINGER_PARTS, "hand")
ROBOT_PARTS = (*GRIPPER_PARTS, "arm")
ENVIRONMENT = "environment"
HOUSING = ".housing"


@dataclass(frozen=True)
class Interior:
    """A box region (centre, half sizes) in a body's frame: a fixture's or container's inside."""

    body: str
    center: np.ndarray
    half_size: np.ndarray


@dataclass(frozen=True)
class Fixture:
    joint: str
    closed: float  # joint position when closed
    open: float  # joint position when fully open
    housing: tuple[str, ...]
    interior: Interior | None

    def open_fraction(self, q: float) -> float:
        """Joint position as a fraction of the range from closed (0) to open (1)."""
        return (q - self.closed) / (self.open - self.closed)


@dataclass(frozen=True)
class StaticBody:
    bodies: tuple[str, ...]
    interior: Interior | None


@dataclass(frozen=True)
class ObjectGeometry:
    """Either an MJCF body (its geoms) or a box (half sizes) the twin adds for a perceived object."""

    body: str | None
    box: np.ndarray | None


@dataclass(frozen=True)
class RobotDescription:
    source: str
    mjcf: Path
    base_body: str
    arm_joints: tuple[str, ...]
    ee_body: str
    ee_site: str
    hand_bodies: tuple[str, ...]
    finger_joints: tuple[str, str]  # left, right
    finger_bodies: tuple[str, str]
    gripper_closed_below: float
    ignored_joints: frozenset[str]
    fixtures: dict[str, Fixture]
    static: dict[str, StaticBody]
    objects: dict[str, ObjectGeometry]

    @property
    def required_joints(self) -> tuple[str, ...]:
        """Joints every frame must carry: arm, fingers, fixtures."""
        return (*self.arm_joints, *self.finger_joints, *(f.joint for f in self.fixtures.values()))

    @property
    def entities(self) -> tuple[str, ...]:
        """Every entity name a FrameGeometry may use."""
        housings = tuple(f + HOUSING for f, fx in self.fixtures.items() if fx.housing)
        return (*ROBOT_PARTS, *self.objects, *self.fixtures, *housings, *self.static, ENVIRONMENT)

    def owner(self, entity: str) -> str:
        """The object, fixture or static body an entity belongs to (a housing belongs to its fixture)."""
        return entity[: -len(HOUSING)] if entity.endswith(HOUSING) else entity

    def interiors(self) -> dict[str, Interior]:
        """Interiors by owner name (fixtures and static bodies that have one)."""
        out = {n: f.interior for n, f in self.fixtures.items() if f.interior is not None}
        out.update({n: s.interior for n, s in self.static.items() if s.interior is not None})
        return out


def load_robot_description(path: str | Path) -> RobotDescription:
    path = Path(path)
    doc = read_config(path, "robot description")
    return parse_robot_description(doc, str(path), base_dir=path.parent)


def resolve_mjcf(ref: str, base_dir: Path) -> Path:
    """`package://safety_monitor/<path>` (package data) or a path relative to the YAML file."""
    prefix = "package://"
    if ref.startswith(prefix):
        package, _, rel = ref[len(prefix):].partition("/")
        try:
            return Path(str(resources.files(package).joinpath(rel)))
        except ModuleNotFoundError:
            raise GroundingError(f"mjcf {ref!r}: no Python package {package!r}") from None
    p = Path(ref)
    return p if p.is_absolute() else base_dir / p


def parse_robot_description(doc: Any, source: str, base_dir: Path = Path(".")) -> RobotDescription:
    d = _Reader(source)
    d.mapping(doc, "the document", {"mjcf", "robot", "ignored_joints", "fixtures", "static", "objects"})
    robot = doc.get("robot")
    d.mapping(robot, "robot", {"base_body", "arm_joints", "end_effector", "hand_bodies", "fingers",
                               "gripper_closed_below"})
    ee = robot.get("end_effector")
    d.mapping(ee, "robot.end_effector", {"body", "site"})
    fingers = robot.get("fingers")
    d.mapping(fingers, "robot.fingers", {"left", "right"})
    for side in ("left", "right"):
        d.mapping(fingers.get(side), f"robot.fingers.{side}", {"joint", "body"})
    closed_below = robot.get("gripper_closed_below")
    if not isinstance(closed_below, (int, float)) or isinstance(closed_below, bool) or not math.isfinite(closed_below):
        raise GroundingError(f"{source}: robot.gripper_closed_below must be a number (finger joint position)")
    fixtures = {}
    for name, raw in (doc.get("fixtures") or {}).items():
        d.mapping(raw, f"fixtures.{name}", {"joint", "range", "housing", "interior"})
        rng = d.vector(raw.get("range"), f"fixtures.{name}.range", 2)
        if rng[0] == rng[1]:
            raise GroundingError(f"{source}: fixtures.{name}.range: closed and open positions are equal")
        fixtures[name] = Fixture(
            joint=d.name(raw.get("joint"), f"fixtures.{name}.joint"),
            closed=float(rng[0]), open=float(rng[1]),
            housing=d.names(raw.get("housing", []), f"fixtures.{name}.housing"),
            interior=d.interior(raw.get("interior"), f"fixtures.{name}.interior"),
        )
    static = {}
    for name, raw in (doc.get("static") or {}).items():
        d.mapping(raw, f"static.{name}", {"bodies", "interior"})
        static[name] = StaticBody(d.names(raw.get("bodies"), f"static.{name}.bodies"),
                                  d.interior(raw.get("interior"), f"static.{name}.interior"))
    objects = {}
    for name, raw in (doc.get("objects") or {}).items():
        d.mapping(raw, f"objects.{name}", {"body", "box"})
        if ("body" in raw) == ("box" in raw):
            raise GroundingError(f"{source}: objects.{name}: give exactly one of 'body' (MJCF) or 'box' (half sizes)")
        box = d.vector(raw["box"], f"objects.{name}.box", 3) if "box" in raw else None
        if box is not None and not np.all(box > 0):
            raise GroundingError(f"{source}: objects.{name}.box: half sizes must be positive")
        objects[name] = ObjectGeometry(d.name(raw["body"], f"objects.{name}.body") if "body" in raw else None, box)
    desc = RobotDescription(
        source=source,
        mjcf=resolve_mjcf(d.name(doc.get("mjcf"), "mjcf"), base_dir),
        base_body=d.name(robot.get("base_body"), "robot.base_body"),
        arm_joints=d.names(robot.get("arm_joints"), "robot.arm_joints"),
        ee_body=d.name(ee.get("body"), "robot.end_effector.body"),
        ee_site=d.name(ee.get("site"), "robot.end_effector.site"),
        hand_bodies=d.names(robot.get("hand_bodies"), "robot.hand_bodies"),
        finger_joints=(d.name(fingers["left"].get("joint"), "robot.fingers.left.joint"),
                       d.name(fingers["right"].get("joint"), "robot.fingers.right.joint")),
        finger_bodies=(d.name(fingers["left"].get("body"), "robot.fingers.left.body"),
                       d.name(fingers["right"].get("body"), "robot.fingers.right.body")),
        gripper_closed_below=float(closed_below),
        ignored_joints=frozenset(d.names(doc.get("ignored_joints", []) or [], "ignored_joints")),
        fixtures=fixtures, static=static, objects=objects,
    )
    seen: dict[str, str] = {}
    for section, names in (("robot parts", ROBOT_PARTS + (ENVIRONMENT,)), ("fixtures", fixtures),
                           ("static", static), ("objects", objects)):
        for n in names:
            if n in seen or HOUSING in n:
                raise GroundingError(f"{source}: entity name {n!r} in {section} clashes with {seen.get(n, 'a housing')}")
            seen[n] = section
    joints = desc.required_joints
    dupes = sorted({j for j in joints if joints.count(j) > 1})
    if dupes:
        raise GroundingError(f"{source}: joint(s) listed twice: {', '.join(dupes)}")
    return desc


class _Reader:
    """Small typed accessors that raise GroundingError naming the file and key."""

    def __init__(self, source: str):
        self.source = source

    def mapping(self, raw: Any, where: str, allowed: set[str]) -> None:
        if not isinstance(raw, dict):
            raise GroundingError(f"{self.source}: {where} must be a mapping")
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise GroundingError(f"{self.source}: {where}: unknown key(s) {', '.join(unknown)}")

    def name(self, raw: Any, where: str) -> str:
        if not isinstance(raw, str) or not raw:
            raise GroundingError(f"{self.source}: {where} must be a name")
        return raw

    def names(self, raw: Any, where: str) -> tuple[str, ...]:
        if not isinstance(raw, list):
            raise GroundingError(f"{self.source}: {where} must be a list of names")
        return tuple(self.name(x, where) for x in raw)

    def vector(self, raw: Any, where: str, n: int) -> np.ndarray:
        ok = isinstance(raw, list) and len(raw) == n and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in raw)
        if not ok:
            raise GroundingError(f"{self.source}: {where} must be a list of {n} finite numbers, got {raw!r}")
        return np.asarray(raw, dtype=float)

    def interior(self, raw: Any, where: str) -> Interior | None:
        if raw is None:
            return None
        self.mapping(raw, where, {"body", "center", "half_size"})
        half = self.vector(raw.get("half_size"), f"{where}.half_size", 3)
        if not np.all(half > 0):
            raise GroundingError(f"{self.source}: {where}.half_size must be positive")
        return Interior(self.name(raw.get("body"), f"{where}.body"),
                        self.vector(raw.get("center"), f"{where}.center", 3), half)
