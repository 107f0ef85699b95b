"""Robot and workcell description (config/robot.yaml): what the twin loads and what each body means.

Entities are the things predicates talk about: robot parts (`finger_left`, `finger_right`, `hand`,
`arm`), objects, fixtures (the moving part, named after the fixture, and `<fixture>.housing`), static
bodies, `other_arm` (the arms of a bimanual robot that another monitor watches) and `environment` (any
other geometry, e.g. the floor). The twin maps every geom to one.

The model is an MJCF (robot and workcell), a URDF (robot, and fixtures or static bodies among its links),
or a URDF robot attached into an MJCF world that holds the workcell. A URDF is parsed when the
description loads, so a name it does not have fails here, with the nearest names it does have.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from safety_monitor.errors import GroundingError
from safety_monitor.grounding.config_file import read_config
from safety_monitor.grounding.urdf import JointLimit, UrdfModel, load_urdf
from safety_monitor.names import did_you_mean

FINGER_PARTS = ("finger_left", "finger_right")
GRIPPER_PARTS = (*FINGER_PARTS, "hand")
ROBOT_PARTS = (*GRIPPER_PARTS, "arm")
OTHER_ARM = "other_arm"
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


class GripperKind(StrEnum):
    """What closes on an object: nothing, one actuated joint (other fingers mimic it), or two finger joints."""

    NONE = "none"
    ONE_JOINT = "one_joint"
    TWO_FINGERS = "two_fingers"


@dataclass(frozen=True)
class ClosedPast:
    """Where one gripper joint counts as closed: below `at`, or above it for a joint that grows as the gripper
    closes (`upward`)."""

    at: float
    upward: bool


@dataclass(frozen=True)
class Gripper:
    """The gripper's joints, bodies and when it counts as closed.

    `finger_bodies` (left, right) are the bodies a grasp needs on both sides of an object; for a one-joint
    gripper they move through mimic joints. Closed: every gripper joint past its `closed_past` (one per joint, in
    the order of `joints`: two finger joints that close in opposite directions, as gym-aloha's mirrored slides, each
    have their own).
    """

    kind: GripperKind
    joints: tuple[str, ...]
    finger_bodies: tuple[str, ...]
    hand_bodies: tuple[str, ...]
    closed_past: tuple[ClosedPast, ...]

    @cached_property
    def _closing(self) -> tuple[tuple[str, float, bool], ...] | None:
        """(joint, threshold, upward) per gripper joint, None without a gripper: `closed`'s reads, made once per
        (frozen) gripper. Read every frame, `GripperKind.NONE` (through the enum's metaclass) and two attributes per
        joint made `closed` cost 4.3 thousand instructions a frame; 1.9 with these read once."""
        if self.kind is GripperKind.NONE:
            return None
        return tuple((j, past.at, past.upward) for j, past in zip(self.joints, self.closed_past))

    def closed(self, joints: Mapping[str, float]) -> bool:
        """Every gripper joint past its threshold in its closing direction (a loop: read every frame, where a
        generator's set-up cost more than the one or two comparisons)."""
        closing = self._closing
        if closing is None:
            return False
        for j, at, upward in closing:
            q = joints[j]
            if not (q > at if upward else q < at):
                return False
        return True


@dataclass(frozen=True)
class BasePose:
    """Where a URDF's root link sits in the world (MuJoCo's URDF import puts it at the origin)."""

    position: np.ndarray
    rpy: np.ndarray  # roll, pitch, yaw (rad), URDF's convention


@dataclass(frozen=True)
class RobotDescription:
    """`mjcf`: the MJCF model or, with `urdf`, the MJCF world the URDF robot is attached into.
    `ee_site`: the grasp-centre site; when `grasp_offset` is set the twin adds it to `ee_body` there.
    `joint_limits`: from the URDF, overridden per field by the description's `joint_limits:` (the twin adds
    an MJCF's own ranges and force ranges under them)."""

    source: str
    mjcf: Path | None
    urdf: UrdfModel | None
    base_pose: BasePose | None
    base_body: str
    arm_joints: tuple[str, ...]
    ee_body: str
    ee_site: str
    grasp_offset: np.ndarray | None
    gripper: Gripper
    ignored_joints: frozenset[str]
    mimic_joints: frozenset[str]  # URDF joints that follow another (<mimic>): accepted, set from their leader
    joint_limits: dict[str, JointLimit]
    fixtures: dict[str, Fixture]
    static: dict[str, StaticBody]
    objects: dict[str, ObjectGeometry]
    other_arms: tuple[str, ...] = ()  # first bodies of the arms another monitor watches (entity `other_arm`)

    @property
    def robot_joints(self) -> tuple[str, ...]:
        """The robot's own joints (arm, then gripper): the ones joint-level safety watches."""
        return (*self.arm_joints, *self.gripper.joints)

    @property
    def required_joints(self) -> tuple[str, ...]:
        """Joints every frame must carry: arm, gripper, fixtures, each once."""
        return (*self.robot_joints, *(f.joint for f in self.fixtures.values()))

    @property
    def accepted_joints(self) -> frozenset[str]:
        """Joints a frame may carry besides the required ones (mimic followers, ignored joints)."""
        return self.mimic_joints | self.ignored_joints

    @property
    def model_file(self) -> Path:
        """The file the twin compiles first (the URDF for a URDF robot, else the MJCF), for messages."""
        if self.urdf is not None:
            return self.urdf.path
        assert self.mjcf is not None
        return self.mjcf

    @property
    def entities(self) -> tuple[str, ...]:
        """Every entity name a FrameGeometry may use."""
        housings = tuple(f + HOUSING for f, fx in self.fixtures.items() if fx.housing)
        other = (OTHER_ARM,) if self.other_arms else ()
        return (*ROBOT_PARTS, *self.objects, *self.fixtures, *housings, *self.static, *other, ENVIRONMENT)

    def owner(self, entity: str) -> str:
        """The object, fixture or static body an entity belongs to (a housing belongs to its fixture)."""
        return entity[: -len(HOUSING)] if entity.endswith(HOUSING) else entity

    def interiors(self) -> dict[str, Interior]:
        """Interiors by owner name (fixtures and static bodies that have one)."""
        out = {n: f.interior for n, f in self.fixtures.items() if f.interior is not None}
        out.update({n: s.interior for n, s in self.static.items() if s.interior is not None})
        return out


def load_robot_description(path: str | Path, urdf: Path | None = None) -> RobotDescription:
    """`urdf`: the robot's URDF file in place of the description's `urdf:` (one received on /robot_description)."""
    path = Path(path)
    doc = read_config(path, "robot description")
    if urdf is not None and isinstance(doc, dict):
        doc["urdf"] = str(urdf.resolve())
    return parse_robot_description(doc, str(path), base_dir=path.parent)


def resolve_model_path(ref: str, base_dir: Path) -> Path:
    """`package://safety_monitor/<path>` (package data) or a path relative to the YAML file."""
    prefix = "package://"
    if ref.startswith(prefix):
        package, _, rel = ref[len(prefix) :].partition("/")
        try:
            return Path(str(resources.files(package).joinpath(rel)))
        except ModuleNotFoundError:
            raise GroundingError(f"model {ref!r}: no Python package {package!r}") from None
    p = Path(ref)
    return p if p.is_absolute() else base_dir / p


_TOP = {
    "mjcf",
    "urdf",
    "package_path",
    "base_pose",
    "robot",
    "ignored_joints",
    "joint_limits",
    "fixtures",
    "static",
    "objects",
    "other_arms",
}
_ROBOT = {"base_body", "arm_joints", "end_effector", "grasp_point", "gripper"}
_GRIPPER = {"kind", "joints", "fingers", "hand_bodies", "closed_below", "closed_above"}


def parse_robot_description(doc: Any, source: str, base_dir: Path = Path(".")) -> RobotDescription:
    d = _Reader(source)
    d.mapping(doc, "the document", _TOP)
    d.mapping(doc.get("robot", {}), "robot", _ROBOT)  # a malformed robot section is named before the model
    if "mjcf" not in doc and "urdf" not in doc:
        raise GroundingError(
            f"{source}: give the robot model: urdf: FILE (with mjcf: FILE for a workcell world "
            "to attach it into), or mjcf: FILE"
        )
    mjcf = resolve_model_path(d.name(doc["mjcf"], "mjcf"), base_dir) if "mjcf" in doc else None
    urdf = None
    if "urdf" in doc:
        search = [resolve_model_path(p, base_dir) for p in d.names(doc.get("package_path", []) or [], "package_path")]
        urdf_path = resolve_model_path(d.name(doc["urdf"], "urdf"), base_dir)
        if not urdf_path.is_file():
            raise GroundingError(f"{source}: urdf {str(urdf_path)!r} does not exist")
        urdf = load_urdf(urdf_path, search)
    elif "package_path" in doc or "base_pose" in doc:
        raise GroundingError(f"{source}: package_path and base_pose belong to a urdf: robot")
    base_pose = None
    if doc.get("base_pose") is not None:
        d.mapping(doc["base_pose"], "base_pose", {"position", "rpy"})
        base_pose = BasePose(
            d.vector(doc["base_pose"].get("position", [0, 0, 0]), "base_pose.position", 3),
            d.vector(doc["base_pose"].get("rpy", [0, 0, 0]), "base_pose.rpy", 3),
        )
    robot = doc.get("robot")
    d.mapping(robot, "robot", _ROBOT)
    ee_body, ee_site, offset = _grasp_point(d, robot, urdf is not None)
    gripper = _gripper(d, robot.get("gripper"))
    fixtures = {}
    for name, raw in d.named(doc.get("fixtures"), "fixtures"):
        d.mapping(raw, f"fixtures.{name}", {"joint", "range", "housing", "interior"})
        rng = d.vector(raw.get("range"), f"fixtures.{name}.range", 2)
        if rng[0] == rng[1]:
            raise GroundingError(f"{source}: fixtures.{name}.range: closed and open positions are equal")
        fixtures[name] = Fixture(
            joint=d.name(raw.get("joint"), f"fixtures.{name}.joint"),
            closed=float(rng[0]),
            open=float(rng[1]),
            housing=d.names(raw.get("housing", []), f"fixtures.{name}.housing"),
            interior=d.interior(raw.get("interior"), f"fixtures.{name}.interior"),
        )
    static = {}
    for name, raw in d.named(doc.get("static"), "static"):
        d.mapping(raw, f"static.{name}", {"bodies", "interior"})
        static[name] = StaticBody(
            d.names(raw.get("bodies"), f"static.{name}.bodies"),
            d.interior(raw.get("interior"), f"static.{name}.interior"),
        )
    objects = {}
    for name, raw in d.named(doc.get("objects"), "objects"):
        d.mapping(raw, f"objects.{name}", {"body", "box"})
        if ("body" in raw) == ("box" in raw):
            raise GroundingError(f"{source}: objects.{name}: give exactly one of 'body' (MJCF) or 'box' (half sizes)")
        box = d.vector(raw["box"], f"objects.{name}.box", 3) if "box" in raw else None
        if box is not None and not np.all(box > 0):
            raise GroundingError(f"{source}: objects.{name}.box: half sizes must be positive")
        objects[name] = ObjectGeometry(d.name(raw["body"], f"objects.{name}.body") if "body" in raw else None, box)
    arm_joints = d.names(robot.get("arm_joints"), "robot.arm_joints")
    mimic = frozenset(n for n, j in urdf.joints.items() if j.mimic is not None) if urdf else frozenset()
    desc = RobotDescription(
        source=source,
        mjcf=mjcf,
        urdf=urdf,
        base_pose=base_pose,
        base_body=d.name(robot.get("base_body"), "robot.base_body"),
        arm_joints=arm_joints,
        ee_body=ee_body,
        ee_site=ee_site,
        grasp_offset=offset,
        gripper=gripper,
        ignored_joints=frozenset(d.names(doc.get("ignored_joints", []) or [], "ignored_joints")),
        mimic_joints=mimic - set(arm_joints) - set(gripper.joints),
        joint_limits={},
        fixtures=fixtures,
        static=static,
        objects=objects,
        other_arms=d.names(doc.get("other_arms", []) or [], "other_arms"),
    )
    if urdf is not None:  # before joint_limits, whose keys are checked against these names
        _check_urdf_names(desc, urdf, whole_world=mjcf is None)
    desc = replace(desc, joint_limits=_joint_limits(d, doc.get("joint_limits"), desc))
    seen: dict[str, str] = {}
    for section, names in (
        ("robot parts", ROBOT_PARTS + (OTHER_ARM, ENVIRONMENT)),
        ("fixtures", fixtures),
        ("static", static),
        ("objects", objects),
    ):
        for n in names:
            if n in seen or HOUSING in n:
                raise GroundingError(
                    f"{source}: entity name {n!r} in {section} clashes with {seen.get(n, 'a housing')}"
                )
            seen[n] = section
    joints = desc.required_joints
    dupes = sorted({j for j in joints if joints.count(j) > 1})
    if dupes:
        raise GroundingError(
            f"{source}: joint(s) listed twice (arm, gripper and fixture joints are each listed "
            f"once): {', '.join(dupes)}"
        )
    return desc


def _grasp_point(d: _Reader, robot: dict, urdf: bool) -> tuple[str, str, np.ndarray | None]:
    """(body, site, offset): an MJCF site (`end_effector`), or a link plus an offset (`grasp_point`) the
    twin adds as a site named `grasp_point`."""
    if ("end_effector" in robot) == ("grasp_point" in robot):
        raise GroundingError(
            f"{d.source}: robot: give exactly one of grasp_point: {{link, offset}} or "
            "end_effector: {body, site} (an MJCF site)"
        )
    if "end_effector" in robot:
        if urdf:
            raise GroundingError(
                f"{d.source}: robot.end_effector names a site, and a URDF has none: give "
                "grasp_point: {link: ..., offset: [x, y, z]} instead"
            )
        ee = robot["end_effector"]
        d.mapping(ee, "robot.end_effector", {"body", "site"})
        return (
            d.name(ee.get("body"), "robot.end_effector.body"),
            d.name(ee.get("site"), "robot.end_effector.site"),
            None,
        )
    gp = robot["grasp_point"]
    d.mapping(gp, "robot.grasp_point", {"link", "offset"})
    return (
        d.name(gp.get("link"), "robot.grasp_point.link"),
        GRASP_SITE,
        d.vector(gp.get("offset", [0, 0, 0]), "robot.grasp_point.offset", 3),
    )


GRASP_SITE = "grasp_point"


def _gripper(d: _Reader, raw: Any) -> Gripper:
    where = "robot.gripper"
    d.mapping(raw, where, _GRIPPER)
    try:
        kind = GripperKind(raw.get("kind"))
    except ValueError:
        raise GroundingError(
            f"{d.source}: {where}.kind must be one of {', '.join(k.value for k in GripperKind)}, "
            f"got {raw.get('kind')!r}"
        ) from None
    hand = d.names(raw.get("hand_bodies", []) or [], f"{where}.hand_bodies")
    if kind is GripperKind.NONE:
        extra = sorted(set(raw) - {"kind", "hand_bodies"})
        if extra:
            raise GroundingError(f"{d.source}: {where}: a gripper of kind none has no {', '.join(extra)}")
        return Gripper(kind, (), (), hand, ())
    joints = d.names(raw.get("joints"), f"{where}.joints")
    want = 1 if kind is GripperKind.ONE_JOINT else 2
    if len(joints) != want:
        raise GroundingError(
            f"{d.source}: {where}.joints: a {kind.value} gripper has {want} joint(s), got {len(joints)}"
            + (" (fingers that mimic one joint: kind one_joint)" if kind is GripperKind.TWO_FINGERS else "")
        )
    fingers = raw.get("fingers")
    d.mapping(fingers, f"{where}.fingers", {"left", "right"})
    bodies = (
        d.name(fingers.get("left"), f"{where}.fingers.left"),
        d.name(fingers.get("right"), f"{where}.fingers.right"),
    )
    return Gripper(kind, joints, bodies, hand, _closed_past(d, raw, joints))


def _closed_past(d: _Reader, raw: dict, joints: tuple[str, ...]) -> tuple[ClosedPast, ...]:
    """Each gripper joint's closed threshold: `closed_below` or `closed_above` a number (every gripper joint), or
    {joint: number} for the joints it names (fingers that close in opposite directions: one key each)."""
    where = f"{d.source}: robot.gripper"
    out: dict[str, ClosedPast] = {}
    for key in ("closed_below", "closed_above"):
        if key not in raw:
            continue
        given, at_key = raw[key], f"robot.gripper.{key}"
        if isinstance(given, dict):
            each = [(joint, d.number(at, f"{at_key}.{joint}")) for joint, at in d.named(given, at_key)]
        else:
            each = [(joint, d.number(given, at_key)) for joint in joints]
        for joint, at in each:
            if joint not in joints:
                near = did_you_mean(joint, joints) or f" (they are {', '.join(joints)})"
                raise GroundingError(f"{where}.{key}: {joint!r} is not one of robot.gripper.joints{near}")
            if joint in out:
                raise GroundingError(
                    f"{where}: {joint!r} is under both closed_below and closed_above: give each gripper joint one"
                )
            out[joint] = ClosedPast(at, key == "closed_above")
    missing = [j for j in joints if j not in out]
    if missing:
        raise GroundingError(
            f"{where}: give closed_below or closed_above (the gripper joint position past which the gripper counts "
            f"as closed){'' if len(missing) == len(joints) else ' for ' + ', '.join(missing)}"
        )
    return tuple(out[j] for j in joints)


def _joint_limits(d: _Reader, raw: Any, desc: RobotDescription) -> dict[str, JointLimit]:
    """The URDF's limits of the robot's joints, each field overridden by the description's `joint_limits:`."""
    urdf = desc.urdf
    out = {j: urdf.joints[j].limit for j in desc.robot_joints if urdf and j in urdf.joints}
    for joint, spec in d.named(raw, "joint_limits"):
        where = f"joint_limits.{joint}"
        if joint not in desc.robot_joints:  # either name may be the misspelt one: point at both
            near = did_you_mean(joint, desc.robot_joints) or f"; they are {', '.join(desc.robot_joints)}"
            raise GroundingError(
                f"{d.source}: {where}: {joint!r} is not in robot.arm_joints or robot.gripper.joints as written"
                f"{near}: one of the two names is misspelt"
            )
        d.mapping(spec, where, {"position", "velocity", "effort"})
        base = out.get(joint, JointLimit())
        if "position" in spec:
            lo, hi = d.vector(spec["position"], f"{where}.position", 2)
            if lo > hi:
                raise GroundingError(f"{d.source}: {where}.position: lower {lo} is above upper {hi}")
            base = replace(base, lower=float(lo), upper=float(hi))
        velocity, effort = (d.positive(spec[k], f"{where}.{k}") if k in spec else None for k in ("velocity", "effort"))
        out[joint] = replace(base, velocity=velocity or base.velocity, effort=effort or base.effort)
    return out


def _check_urdf_names(desc: RobotDescription, urdf: UrdfModel, whole_world: bool) -> None:
    """Every robot name the description gives exists in the URDF (links and moving joints), and, when the
    URDF is the whole world, the fixture and static names too; else the nearest names it has."""
    src, g = desc.source, desc.gripper
    urdf.check_link(desc.base_body, f"{src}: robot.base_body")
    urdf.check_link(desc.ee_body, f"{src}: robot.grasp_point.link")
    for j in desc.arm_joints:
        urdf.check_joint(j, f"{src}: robot.arm_joints")
    for j in g.joints:
        urdf.check_joint(j, f"{src}: robot.gripper.joints")
        mimic = urdf.joints[j].mimic
        if mimic is not None:
            raise GroundingError(
                f"{src}: robot.gripper.joints: {j!r} mimics {mimic.leader!r} in the URDF; list "
                "the joint it follows (kind one_joint)"
            )
    for b in (*g.finger_bodies, *g.hand_bodies):
        urdf.check_link(b, f"{src}: robot.gripper")
    for b in desc.other_arms:
        urdf.check_link(b, f"{src}: other_arms")
    if not whole_world:
        return
    for name, fx in desc.fixtures.items():
        urdf.check_joint(fx.joint, f"{src}: fixtures.{name}.joint")
        for b in fx.housing:
            urdf.check_link(b, f"{src}: fixtures.{name}.housing")
    for name, st in desc.static.items():
        for b in st.bodies:
            urdf.check_link(b, f"{src}: static.{name}.bodies")
    for name, interior in desc.interiors().items():
        urdf.check_link(interior.body, f"{src}: {name}.interior.body")
    for name, obj in desc.objects.items():
        if obj.body is not None:
            raise GroundingError(
                f"{src}: objects.{name}: a URDF has no free bodies; describe the object by its "
                "box: {box: [hx, hy, hz]} (half sizes)"
            )


class _Reader:
    """Small typed accessors that raise GroundingError naming the file and key."""

    def __init__(self, source: str):
        self.source = source

    def mapping(self, raw: Any, where: str, allowed: set[str]) -> None:
        if not isinstance(raw, dict):
            raise GroundingError(f"{self.source}: {where} must be a mapping")
        unknown = sorted(set(raw) - allowed, key=str)  # YAML keys may be numbers, booleans or null
        if unknown:
            named = ", ".join(f"{k}{did_you_mean(str(k), allowed)}" for k in unknown)
            raise GroundingError(f"{self.source}: {where}: unknown key(s) {named}")

    def named(self, raw: Any, where: str) -> list[tuple[str, Any]]:
        """The entries of an optional section keyed by names (YAML may read a key as a number, boolean or null)."""
        if raw is None:
            return []
        if not isinstance(raw, dict):
            raise GroundingError(f"{self.source}: {where} must be a mapping of names")
        for key in raw:
            if not isinstance(key, str) or not key:
                raise GroundingError(f"{self.source}: {where}: {key!r} is not a name (quote it if it is one)")
        return list(raw.items())

    def name(self, raw: Any, where: str) -> str:
        if not isinstance(raw, str) or not raw:
            raise GroundingError(f"{self.source}: {where} must be a name")
        return raw

    def names(self, raw: Any, where: str) -> tuple[str, ...]:
        if not isinstance(raw, list):
            raise GroundingError(f"{self.source}: {where} must be a list of names")
        return tuple(self.name(x, where) for x in raw)

    def number(self, raw: Any, where: str) -> float:
        if not isinstance(raw, (int, float)) or isinstance(raw, bool) or not math.isfinite(raw):
            raise GroundingError(f"{self.source}: {where} must be a number, got {raw!r}")
        return float(raw)

    def positive(self, raw: Any, where: str) -> float:
        value = self.number(raw, where)
        if value <= 0:
            raise GroundingError(f"{self.source}: {where} must be positive, got {raw!r}")
        return value

    def vector(self, raw: Any, where: str, n: int) -> np.ndarray:
        ok = (
            isinstance(raw, list)
            and len(raw) == n
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in raw)
        )
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
        return Interior(
            self.name(raw.get("body"), f"{where}.body"), self.vector(raw.get("center"), f"{where}.center", 3), half
        )
