"""Object poses from TF (`/tf`, `/tf_static`): transforms chained along the tree to the robot's base frame.

Perception usually publishes an object as a TF frame (`camera_link -> cube`), not as a PoseStamped in the
robot's frame. The tree keeps the latest transform of every child frame, static ones (`/tf_static`,
published once, transient local) as long as dynamic ones, and chains an object's frame to the base frame
through their lowest common ancestor. A pose's stamp is the newest stamp among the transforms of that chain,
so a pose is as old as its oldest-news link says; it is handed on only when a message changed a link of its
chain and the stamp changed (a static link arriving again repeats nothing). Quaternions are w first, as in
`frames.Pose`; each link's is normalised once (a zero one is kept: the assembler refuses the pose).

A mobile base (`StreamMapping.world_frame`) turns the tree round: objects are chained to the world frame, as
the fixtures and static bodies the twin holds there, and the robot base's own frame is tracked like one more
object (`ROBOT`), its pose in the world frame placing the twin's robot each frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from safety_monitor.frames import Pose


@dataclass(frozen=True, slots=True)
class Transform:
    """The pose of frame `child` in frame `parent` at `stamp` (one geometry_msgs/TransformStamped)."""

    parent: str
    child: str
    pose: Pose
    stamp: float


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

    def update(self, transforms: Iterable[Transform]) -> list[tuple[str, Pose, float]]:
        """Take one TFMessage's transforms; return (object, pose in base, stamp) for each object whose chain it
        changed, in the order of `objects`."""
        touched = set()
        for tr in transforms:
            child = frame_id(tr.child)
            q = tr.pose.quaternion
            size = float(np.sqrt(q @ q))
            pose = Pose(tr.pose.position, q / size) if size > 0 else tr.pose
            self._links[child] = Transform(frame_id(tr.parent), child, pose, tr.stamp)
            touched.add(child)
        out = []
        for name, frame in self.objects.items():
            found = self.lookup(frame, touched)
            if found is not None and self._sent.get(name) != found[1]:
                self._sent[name] = found[1]
                out.append((name, *found))
        return out

    def forget(self) -> None:
        """A new rollout: what was handed on is forgotten (its stamps may start again lower); the links stay."""
        self._sent.clear()

    def lookup(self, frame: str, touched: set[str] | None = None) -> tuple[Pose, float] | None:
        """`frame`'s pose in the base frame and the newest stamp of its chain; None when the tree does not connect
        them yet (or, with `touched`, when no link of the chain is among the `touched` children)."""
        up = self._ancestors(self.base)
        base_depth = {f: i for i, f in enumerate(up)}
        chain: list[Transform] = []
        node = frame
        while node not in base_depth:
            link = self._links.get(node)
            if link is None or len(chain) > len(self._links):  # not connected, or a cycle
                return None
            chain.append(link)
            node = link.parent
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

    def _ancestors(self, frame: str) -> list[str]:
        """`frame`, its parent, and so on up to its root."""
        out = [frame]
        while (link := self._links.get(out[-1])) is not None and len(out) <= len(self._links):
            out.append(link.parent)
        return out
