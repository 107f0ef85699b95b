"""Object poses from TF (`/tf`, `/tf_static`): transforms chained along the tree to the robot's base frame.

Perception usually publishes an object as a TF frame (`camera_link -> cube`), not as a PoseStamped in the
robot's frame. The tree keeps the latest transform of every child frame, static ones (`/tf_static`,
published once, transient local) as long as dynamic ones, and chains an object's frame to the base frame
through their lowest common ancestor. A pose's stamp is the newest stamp among the transforms of that chain,
so a pose is as old as its oldest-news link says; it is handed on only when a message changed a link of its
chain and the stamp changed (a static link arriving again repeats nothing). Quaternions are w first, as in
`frames.Pose`; each link's is normalised once, within float error of unit length (`QUATERNION_TOLERANCE`). One
beyond it is dropped, as tf2 drops it (a zero or unscaled quaternion: a corrupt message or a driver bug), and said
(`denormalized_quaternion`); the link keeps its last transform. A NaN or infinite one, or translation, is kept
as NaN: the assembler refuses the poses it reaches (`nan`).

A tree that loops has no pose to give, as tf2's lookups fail on one: a frame given as its own parent is dropped
(tf2 drops it too), and a chain that runs into a loop (a link back up the chain, the world frame given a parent
below it) hands on nothing, so the poses across it go stale, each message that touches it saying why. A message
that gives one frame twice with other values keeps the first (tf2 ignores the repeated stamp) and says so.

A mobile base (`StreamMapping.world_frame`) turns the tree round: objects are chained to the world frame, as
the fixtures and static bodies the twin holds there, and the robot base's own frame is tracked like one more
object (`ROBOT`), its pose in the world frame placing the twin's robot each frame.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from safety_monitor.enums import IssueKind
from safety_monitor.frames import Pose


@dataclass(frozen=True, slots=True)
class Transform:
    """The pose of frame `child` in frame `parent` at `stamp` (one geometry_msgs/TransformStamped)."""

    parent: str
    child: str
    pose: Pose
    stamp: float


QUATERNION_TOLERANCE = 0.01
"""A quaternion is a rotation while its squared norm is within this of 1 (norms of about 0.995 to 1.005): tf2's
test and value (BufferCore refuses a transform beyond it, TF_DENORMALIZED_QUATERNION). Float error within it (a
float32 driver's norms of 0.999 to 1.001) is normalised silently; beyond it, TF links and pose messages alike are
dropped with a `denormalized_quaternion` issue."""


def denormalized(q: np.ndarray) -> str | None:
    """Why the finite quaternion `q` is no rotation (too far from unit length, zero included), or None: it is one."""
    w, x, y, z = q.tolist()
    if abs(w * w + x * x + y * y + z * z - 1.0) < QUATERNION_TOLERANCE:  # tf2's sum (floats overflow to inf, quietly)
        return None
    return (
        f"quaternion norm {math.hypot(w, x, y, z):.6g} is not 1 (tf2 refuses a squared norm "
        f"{QUATERNION_TOLERANCE:g} or more off 1)"
    )


def frame_id(name: str) -> str:
    """TF frame ids without a leading slash (tf2 strips it; ROS 1 bags keep it)."""
    return name.lstrip("/")


def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rotation `a` after `b` (Hamilton product, w first)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Vector `v` rotated by the unit quaternion `q` (w first): v + 2w (u x v) + 2 u x (u x v)."""
    u = q[1:]
    t = 2.0 * np.cross(u, v)
    return v + q[0] * t + np.cross(u, t)


def rotation_between(a: np.ndarray, b: np.ndarray) -> float:
    """The angle (rad, 0 to pi) of the rotation from orientation `a` to `b` (quaternions, w first, of any sign
    and nonzero norm)."""
    cos_half = abs(float(a @ b)) / math.sqrt(float(a @ a) * float(b @ b))
    return 2.0 * math.acos(min(1.0, cos_half))


def compose(outer: Pose, inner: Pose) -> Pose:
    """`inner` (a pose in frame B) expressed in frame A, given `outer` (frame B's pose in A)."""
    return Pose(
        outer.position + rotate(outer.quaternion, inner.position),
        quaternion_multiply(outer.quaternion, inner.quaternion),
    )


def invert(pose: Pose) -> Pose:
    """The pose of A in B, given B's pose in A (unit quaternion)."""
    conj = pose.quaternion * np.array([1.0, -1.0, -1.0, -1.0])
    return Pose(-rotate(conj, pose.position), conj)


IDENTITY = Pose(np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
_NO_ROTATION = np.full(4, np.nan)  # a NaN or infinite quaternion's link (NaN carries on without warnings)
_NO_ROTATION.flags.writeable = False
_NO_TRANSLATION = np.full(3, np.nan)  # an infinite translation's (inf times a zero component warns in a chain)
_NO_TRANSLATION.flags.writeable = False
ROBOT = ""  # the name the robot base's pose is handed on under: no object has it (robot.yaml refuses empty names)


class TransformTree:
    """The latest transform of every frame, and the configured objects' poses in `base`.

    `objects`: object name -> its TF frame id. `robot`: the robot base's frame, when it moves in `base` (the
    world frame): its pose is handed on too, under the name `ROBOT`, after the objects'.
    """

    def __init__(self, base: str, objects: Mapping[str, str], robot: str | None = None) -> None:
        self.base = frame_id(base)
        self.objects = {name: frame_id(f) for name, f in objects.items()}
        if robot is not None:
            self.objects[ROBOT] = frame_id(robot)
        self._links: dict[str, Transform] = {}  # child frame -> its transform
        self._sent: dict[str, float] = {}  # object -> stamp of the pose last handed on
        self.problems: list[TreeProblem] = []  # what the last `update` dropped or could not chain

    def update(self, transforms: Iterable[Transform]) -> list[tuple[str, Pose, float]]:
        """Take one TFMessage's transforms; return (object, pose in base, stamp) for each object whose chain it
        changed, in the order of `objects`. `problems` says what of it was dropped, and which chains loop."""
        touched: dict[str, Transform] = {}
        problems: list[TreeProblem] = []
        for tr in transforms:
            child, parent = frame_id(tr.child), frame_id(tr.parent)
            if child == parent:
                what = f"transform {tr.parent!r} -> {tr.child!r} gives the frame as its own parent; dropped"
                problems.append(TreeProblem(IssueKind.TF_LOOP, None, tr.stamp, what))
                continue
            q = tr.pose.quaternion
            finite = bool(np.isfinite(q).all())  # NaN or infinite: NaN, for the assembler's `nan`
            why = denormalized(q) if finite else None
            if why is not None:
                what = f"transform {tr.parent!r} -> {tr.child!r} at {tr.stamp:.6f}: {why}; dropped"
                problems.append(TreeProblem(IssueKind.DENORMALIZED_QUATERNION, None, tr.stamp, what))
                continue
            p = tr.pose.position
            pose = Pose(
                p if np.isfinite(p).all() else _NO_TRANSLATION,
                q / math.sqrt(float(q.dot(q))) if finite else _NO_ROTATION,
            )
            link = Transform(parent, child, pose, tr.stamp)
            first = touched.get(child)
            if first is not None and not _same(first, link):
                what = f"transform {parent} -> {child} at {tr.stamp:.6f} given twice in one message; the second dropped"
                problems.append(TreeProblem(IssueKind.DUPLICATE_STAMP, None, tr.stamp, what))
                continue
            self._links[child] = touched[child] = link
        out = []
        for name, frame in self.objects.items():
            found = self._find(frame, touched)
            if isinstance(found, list):
                problems.append(
                    TreeProblem(
                        IssueKind.TF_LOOP,
                        name,
                        max(touched[f].stamp for f in found if f in touched),
                        f"the TF frames loop ({' -> '.join(found)}): no pose of {frame!r} in {self.base!r} until "
                        "a message breaks the loop",
                    )
                )
            elif found is not None and self._sent.get(name) != found[1]:
                self._sent[name] = found[1]
                out.append((name, *found))
        self.problems = problems
        return out

    def forget(self) -> None:
        """A new rollout: what was handed on is forgotten (its stamps may start again lower); the links stay."""
        self._sent.clear()

    def lookup(self, frame: str) -> tuple[Pose, float] | None:
        """`frame`'s pose in the base frame and the newest stamp of its chain; None when the tree does not connect
        them (yet), or connects them through a loop."""
        found = self._find(frame)
        return None if isinstance(found, list) else found

    def _find(
        self, frame: str, touched: Mapping[str, Transform] | None = None
    ) -> tuple[Pose, float] | list[str] | None:
        """`lookup`, or the frames of a loop (a list, first frame repeated last) that the chain runs into, when any
        of them is among `touched`; with `touched`, None when no link of the chain is among those children."""
        up, loop = self._ancestors(self.base)
        if loop:
            return up if touched is None or any(f in touched for f in up) else None
        base_depth = {f: i for i, f in enumerate(up)}
        chain: list[Transform] = []
        seen = {frame}
        node = frame
        while node not in base_depth:
            link = self._links.get(node)
            if link is None:  # not connected
                return None
            chain.append(link)
            node = link.parent
            if node in seen:
                frames = [c.child for c in chain]
                cycle = [*frames[frames.index(node) :], node]
                return cycle if touched is None or any(f in touched for f in cycle) else None
            seen.add(node)
        base_chain = [self._links[f] for f in up[: base_depth[node]]]
        links = chain + base_chain
        if not links or (touched is not None and not any(link.child in touched for link in links)):
            return None
        in_common = IDENTITY  # frame's pose in the common ancestor
        for link in reversed(chain):
            in_common = compose(in_common, link.pose)
        base_in_common = IDENTITY
        for link in reversed(base_chain):
            base_in_common = compose(base_in_common, link.pose)
        return compose(invert(base_in_common), in_common), max(link.stamp for link in links)

    def _ancestors(self, frame: str) -> tuple[list[str], bool]:
        """`frame`, its parent, and so on up to its root, and False; or the loop it runs into (its frames, the first
        repeated last), and True."""
        out, seen = [frame], {frame}
        while (link := self._links.get(out[-1])) is not None:
            if link.parent in seen:
                return [*out[out.index(link.parent) :], link.parent], True
            out.append(link.parent)
            seen.add(link.parent)
        return out, False


@dataclass(frozen=True, slots=True)
class TreeProblem:
    """A transform `TransformTree.update` dropped (`name` None), or an object (`ROBOT`: the base) whose chain loops."""

    kind: IssueKind
    name: str | None
    stamp: float
    detail: str


def _same(a: Transform, b: Transform) -> bool:
    return (
        a.parent == b.parent
        and a.stamp == b.stamp
        and np.array_equal(a.pose.position, b.pose.position, equal_nan=True)
        and np.array_equal(a.pose.quaternion, b.pose.quaternion, equal_nan=True)
    )
