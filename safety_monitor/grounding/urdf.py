"""URDF robot models: parsed here (names, limits, mimic tags, meshes), compiled by MuJoCo.

MuJoCo reads URDF itself, but it strips mesh folders, fuses links joined by fixed joints (whose names
a robot description refers to) and knows nothing of `package://`. So the file is parsed here first:
syntax errors name the file and line (expat's), `package://` URIs are resolved to files (the ament index, the
configured search path, then the URDF's own folder and its ancestors, as yourdfpy and PyBullet do),
visual geometry is dropped (it is often .dae, which MuJoCo cannot read) and a collision mesh MuJoCo
cannot read is named with what to do. What MuJoCo gets is this rewritten XML.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.parsers import expat

from safety_monitor.errors import GroundingError
from safety_monitor.names import did_you_mean

PACKAGE_PATH_ENV = "SAFETY_MONITOR_PACKAGE_PATH"  # folders holding <package>/ trees, os.pathsep-separated
MESH_FORMATS = (".stl", ".obj", ".msh")  # what MuJoCo's mesh loader reads
MOVING_TYPES = ("revolute", "continuous", "prismatic")
# Compiler options for the twin: keep every link a body (descriptions name them), keep mesh paths as
# resolved here, drop visuals, and give links without <inertial> a token mass (the twin does no dynamics).
_MUJOCO_EXTENSION = (
    '<compiler fusestatic="false" strippath="false" discardvisual="true" '
    'boundmass="1e-6" boundinertia="1e-9" balanceinertia="true"/>'
)


@dataclass(frozen=True)
class Mimic:
    """`<mimic>`: this joint's position is `multiplier * leader + offset`."""

    leader: str
    multiplier: float
    offset: float


@dataclass(frozen=True)
class JointLimit:
    """A joint's limits in its own units (rad or m, per second, N or N m); None: no such limit.
    `wraps`: a continuous joint, whose reading may wrap at +-pi."""

    lower: float | None = None
    upper: float | None = None
    velocity: float | None = None
    effort: float | None = None
    wraps: bool = False


@dataclass(frozen=True)
class UrdfJoint:
    name: str
    kind: str  # URDF joint type: revolute, continuous, prismatic, fixed, floating, planar
    parent: str
    child: str
    limit: JointLimit
    mimic: Mimic | None
    line: int


@dataclass(frozen=True)
class UrdfModel:
    """One parsed URDF: what a robot description may name, and the XML MuJoCo compiles."""

    path: Path
    name: str
    links: tuple[str, ...]
    joints: dict[str, UrdfJoint]
    root: str
    mujoco_xml: str

    @property
    def moving_joints(self) -> tuple[str, ...]:
        return tuple(n for n, j in self.joints.items() if j.kind in MOVING_TYPES)

    def children(self, link: str) -> list[UrdfJoint]:
        return [j for j in self.joints.values() if j.parent == link]

    def check_link(self, name: str, where: str) -> str:
        if name not in self.links:
            raise GroundingError(f"{where}: link {name!r} is not in {self.path}{did_you_mean(name, self.links)}")
        return name

    def check_joint(self, name: str, where: str) -> str:
        moving = self.moving_joints
        if name not in moving:
            what = "a fixed joint" if name in self.joints else "not a moving joint"
            raise GroundingError(f"{where}: joint {name!r} is {what} in {self.path}{did_you_mean(name, moving)}")
        return name


class PackageResolver:
    """Turns `package://pkg/rel`, `file://` and relative mesh references into files, or says where it looked."""

    def __init__(self, urdf_dir: Path, search_path: Sequence[Path] = ()):
        self.urdf_dir = urdf_dir.absolute()  # so that an error names the places searched wherever one runs
        env = [Path(p) for p in os.environ.get(PACKAGE_PATH_ENV, "").split(os.pathsep) if p]
        self.search_path = (*search_path, *env)

    def candidates(self, uri: str) -> list[Path]:
        if uri.startswith("file://"):
            return [Path(uri[len("file://") :])]
        if not uri.startswith("package://"):
            p = Path(uri)
            return [p if p.is_absolute() else self.urdf_dir / p]
        package, _, rel = uri[len("package://") :].partition("/")
        out = []
        share = _ament_share(package)
        if share is not None:
            out.append(share / rel)
        out += [d / package / rel for d in self.search_path]
        folder = self.urdf_dir.resolve()
        out += [a / rel for a in (folder, *folder.parents) if a.name == package]  # the URDF inside its package
        out += [self.urdf_dir / rel, self.urdf_dir / package / rel]
        return out

    def resolve(self, uri: str, where: str) -> Path:
        tried = self.candidates(uri)
        for p in tried:
            if p.is_file():
                return p.resolve()
        places = ", ".join(dict.fromkeys(str(p) for p in tried))
        hint = (
            ""
            if not uri.startswith("package://")
            else (
                f" (add the folder holding {uri[10:].partition('/')[0]}/ to package_path in the robot description "
                f"or to ${PACKAGE_PATH_ENV}, or source the workspace that installs it)"
            )
        )
        raise GroundingError(f"{where}: mesh {uri!r} not found; searched {places}{hint}")


def _ament_share(package: str) -> Path | None:
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        return None
    try:
        return Path(get_package_share_directory(package))
    except (PackageNotFoundError, LookupError, ValueError, OSError):
        return None


def _parse_with_lines(text: str, path: Path) -> tuple[ET.Element, dict[int, int]]:
    """The XML tree and each element's source line (ElementTree keeps none; expat knows it)."""
    builder = ET.TreeBuilder()
    lines: dict[int, int] = {}
    parser = expat.ParserCreate()

    def start(tag: str, attrs: dict[str, str]) -> None:
        lines[id(builder.start(tag, attrs))] = parser.CurrentLineNumber

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        raise GroundingError(
            f"{path}:{exc.lineno}:{exc.offset + 1}: URDF is not well-formed XML: {expat.ErrorString(exc.code)}"
        ) from None
    return builder.close(), lines


def load_urdf(path: Path, search_path: Sequence[Path] = ()) -> UrdfModel:
    """Parse and check a URDF; every failure is a GroundingError naming the file (and line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GroundingError(f"cannot read URDF {str(path)!r}: {exc}") from None
    return parse_urdf(text, path, PackageResolver(path.parent, search_path))


def parse_urdf(text: str, path: Path, resolver: PackageResolver) -> UrdfModel:
    root, lines = _parse_with_lines(text, path)

    def at(elem: ET.Element) -> str:
        return f"{path}:{lines.get(id(elem), 0)}"

    if root.tag != "robot":
        raise GroundingError(f"{at(root)}: the root element is <{root.tag}>, a URDF's is <robot>")
    links = []
    for link in root.findall("link"):
        links.append(_attr(link, "name", at))
        for visual in link.findall("visual"):
            link.remove(visual)
        for mesh in link.iter("mesh"):
            uri = _attr(mesh, "filename", at)
            file = resolver.resolve(uri, f"{at(mesh)}: link {links[-1]!r}")
            if file.suffix.lower() not in MESH_FORMATS:
                raise GroundingError(
                    f"{at(mesh)}: link {links[-1]!r}: collision mesh {str(file)!r} is "
                    f"{file.suffix or 'of no known format'}, which MuJoCo cannot read; convert it to "
                    ".stl or .obj (e.g. `meshlabserver -i in.dae -o out.stl` or trimesh) and point "
                    "the URDF's <collision> at the converted file"
                )
            mesh.set("filename", str(file))
    dupes = sorted({n for n in links if links.count(n) > 1})
    if dupes:
        raise GroundingError(f"{path}: link(s) defined twice: {', '.join(dupes)}")
    joints: dict[str, UrdfJoint] = {}
    for j in root.findall("joint"):
        joint = _joint(j, at, set(links))
        if joint.name in joints:
            raise GroundingError(f"{at(j)}: joint {joint.name!r} defined twice")
        joints[joint.name] = joint
    for joint in joints.values():
        if joint.mimic is not None and joint.mimic.leader not in joints:
            raise GroundingError(
                f"{path}:{joint.line}: joint {joint.name!r} mimics {joint.mimic.leader!r}, "
                f"which is not a joint{did_you_mean(joint.mimic.leader, joints)}"
            )
    children = {j.child for j in joints.values()}
    roots = [n for n in links if n not in children]
    if len(roots) != 1:
        raise GroundingError(
            f"{path}: a URDF is one tree of links, found {len(roots)} roots: {', '.join(roots) or 'none'}"
        )
    for j in root.findall("joint"):  # a mobile base stays where the URDF puts it, as an MJCF's free joint does:
        if j.get("type") in ("floating", "planar"):  # object poses come in its frame (and MuJoCo takes a free
            j.set("type", "fixed")  # joint only from the world, not below a root link such as odom)
    for ext in root.findall("mujoco"):  # a MuJoCo extension of the file's own is replaced by the twin's
        root.remove(ext)
    ext = ET.fromstring(f"<mujoco>{_MUJOCO_EXTENSION}</mujoco>")
    root.insert(0, ext)
    return UrdfModel(
        path, root.get("name", path.stem), tuple(links), joints, roots[0], ET.tostring(root, encoding="unicode")
    )


def _attr(elem: ET.Element, name: str, at) -> str:
    value = elem.get(name)
    if not value:
        raise GroundingError(f"{at(elem)}: <{elem.tag}> has no {name}=")
    return value


def _number(elem: ET.Element, name: str, at, default: float | None = None) -> float | None:
    raw = elem.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise GroundingError(f"{at(elem)}: <{elem.tag} {name}={raw!r}> is not a number") from None
    if not math.isfinite(value):
        raise GroundingError(f"{at(elem)}: <{elem.tag} {name}={raw!r}> is not finite")
    return value


def _joint(j: ET.Element, at, links: set[str]) -> UrdfJoint:
    name, kind = _attr(j, "name", at), _attr(j, "type", at)
    ends = {}
    for end in ("parent", "child"):
        e = j.find(end)
        if e is None:
            raise GroundingError(f"{at(j)}: joint {name!r} has no <{end}>")
        ends[end] = _attr(e, "link", at)
        if ends[end] not in links:
            raise GroundingError(
                f"{at(e)}: joint {name!r}: {end} link {ends[end]!r} is not defined{did_you_mean(ends[end], links)}"
            )
    lim = j.find("limit")
    limit = JointLimit()
    if lim is not None and kind in MOVING_TYPES:
        lower, upper = _number(lim, "lower", at), _number(lim, "upper", at)
        if kind == "continuous":
            lower = upper = None
        elif lower is not None and upper is not None and lower > upper:
            raise GroundingError(f"{at(lim)}: joint {name!r}: lower limit {lower} is above upper {upper}")
        velocity, effort = _number(lim, "velocity", at), _number(lim, "effort", at)
        limit = JointLimit(lower, upper, velocity or None, effort or None, wraps=kind == "continuous")
    elif kind == "continuous":
        limit = JointLimit(wraps=True)
    m = j.find("mimic")
    mimic = None
    if m is not None:
        mimic = Mimic(
            _attr(m, "joint", at), _number(m, "multiplier", at, 1.0) or 0.0, _number(m, "offset", at, 0.0) or 0.0
        )
    return UrdfJoint(name, kind, ends["parent"], ends["child"], limit, mimic, int(at(j).rpartition(":")[2]))
