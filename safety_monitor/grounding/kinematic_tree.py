"""A robot model as `robot init` reads it: a tree of bodies joined by joints, whatever file it came from.

Both model formats a robot description takes are seen through it, so one guesser serves both: a URDF's
links and joints (`tree_of_urdf`), or an MJCF's bodies and their joints (`grounding.mjcf_tree`). A joint
coupled to another (URDF `<mimic>`, an MJCF `<equality><joint>`) names the joint it follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from safety_monitor.grounding.urdf import UrdfModel


class ModelFormat(StrEnum):
    """The file the tree came from: the robot description's key for it."""

    URDF = "urdf"
    MJCF = "mjcf"


class JointKind(StrEnum):
    """URDF's joint types, which MJCF's map onto (hinge: revolute or, unlimited, continuous; slide:
    prismatic; free: floating; a body without a joint hangs from its parent by a fixed one)."""

    FIXED = "fixed"
    REVOLUTE = "revolute"
    CONTINUOUS = "continuous"
    PRISMATIC = "prismatic"
    FLOATING = "floating"
    PLANAR = "planar"
    BALL = "ball"


MOVING = (JointKind.REVOLUTE, JointKind.CONTINUOUS, JointKind.PRISMATIC)  # one value in joint_states


@dataclass(frozen=True)
class TreeJoint:
    """A joint from body `parent` to body `child`; `lower`/`upper`: its range (None: unlimited);
    `leader`: the joint whose position sets this one's, if coupled; `axis`: its unit axis in the parent body's
    frame (an MJCF's; None from a URDF, whose reader keeps no axes)."""

    name: str
    kind: JointKind
    parent: str
    child: str
    lower: float | None
    upper: float | None
    leader: str | None
    axis: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class KinematicTree:
    """`root`: the body everything hangs from (a URDF's root link, an MJCF's world body). `sites`: site ->
    the body carrying it (an MJCF's; a URDF has none). `loops`: pairs of bodies an MJCF ties together by
    `<connect>` or `<weld>` equality constraints, which kinematics alone does not follow. `passive`: moving joints
    the model says nothing drives, neither an actuator nor a coupling (an MJCF whose actuators all drive joints or
    tendons of joints: Stretch's sprung fingertips); none where it cannot tell (a URDF, a model without actuators)."""

    path: Path
    name: str
    format: ModelFormat
    root: str
    joints: dict[str, TreeJoint]
    sites: dict[str, str]
    loops: tuple[tuple[str, str], ...]
    passive: frozenset[str] = frozenset()

    @property
    def moving_joints(self) -> tuple[str, ...]:
        return tuple(n for n, j in self.joints.items() if j.kind in MOVING)

    def children(self, body: str) -> list[TreeJoint]:
        return [j for j in self.joints.values() if j.parent == body]


_URDF_KINDS = {k.value: k for k in JointKind}


def tree_of_urdf(urdf: UrdfModel) -> KinematicTree:
    """The URDF's links and joints as a tree (a URDF has no sites and no loops)."""
    joints = {
        n: TreeJoint(
            n,
            _URDF_KINDS[j.kind],
            j.parent,
            j.child,
            j.limit.lower,
            j.limit.upper,
            j.mimic.leader if j.mimic is not None else None,
        )
        for n, j in urdf.joints.items()
        if j.kind in _URDF_KINDS
    }
    return KinematicTree(urdf.path, urdf.name, ModelFormat.URDF, urdf.root, joints, {}, ())
