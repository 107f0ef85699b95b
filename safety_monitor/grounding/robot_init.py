"""A starting robot description from a URDF or an MJCF (`safety-monitor robot init`): guesses, each with a
comment saying what to check.

Both formats are read as a `KinematicTree`, so the guesses are the same. The arm is the longest chain of
moving joints from the root, less the joints set from another (a telescope's following stages), the passive
ones below a gripper joint (Stretch's sprung fingertips) and a mobile base's (a free joint, or an MJCF's slides and
hinge from the world: TidyBot's, ignored); the gripper is the joints named *finger*, *gripper*,
*jaw* or *knuckle*, or coupled to another at the hand (a joint others follow, by URDF `<mimic>` or MJCF
`<equality><joint>`, counts once: a one-joint gripper; coupled joints that carry an arm joint are the arm's), or an
MJCF's two slides that move sibling bodies along parallel axes with nothing moving below them (a parallel gripper's
fingers whatever their names: Trossen's WidowX AI's `*_carriage_joint`); the
passive joints of a linkage an MJCF closes by `<connect>` or `<weld>` are ignored. The grasp centre is a site of
the hand named like one (an MJCF's `pinch`, `tcp`, `attachment_site`), else a *tcp* link fixed to the hand
(Franka's `fer_hand_tcp`), else the body that carries the gripper (else the arm's last body). The result loads as
it is; what it cannot know (where the grasp centre lies, fixtures, objects) is left for the user, marked CHECK.
Which way the gripper closes is measured: the twin sets the gripper joint(s) (and the joints coupled to them) at
both limits and the limit where the fingers are nearer together is closed; two finger joints that close in
opposite directions (gym-aloha's mirrored slides) are measured one at a time, and each gets a threshold of its
own. The threshold is a tenth of the range from where the gripper opens: of the range its position servos
command, where an MJCF's control range is narrower than the joint's (ALOHA's software opens its fingers to
0.037 m of a 0.041 m rail).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from safety_monitor.errors import GroundingError
from safety_monitor.files import write_file
from safety_monitor.grounding.description import ClosedPast, GripperKind, parse_robot_description
from safety_monitor.grounding.kinematic_tree import MOVING, JointKind, KinematicTree, ModelFormat, TreeJoint
from safety_monitor.grounding.twin import KinematicTwin, ServoRange, servo_range
from safety_monitor.names import did_you_mean

_GRIPPER_WORDS = ("finger", "gripper", "jaw", "knuckle")
_GRASP_WORDS = ("tcp", "pinch", "grasp", "attachment")
_SAME_GAP = 1e-4  # m: finger gaps at the two limits closer than this tell nothing about which way it closes
_OPEN_SHARE = 0.1  # of the range it is driven over: the gripper counts as open only this near where it opens
_BASE_KINDS = (JointKind.FLOATING, JointKind.PLANAR)  # joints a mobile base hangs from
_PARALLEL = 0.999  # |cos| of the angle between two slides' axes (2.6 degrees) past which they are parallel


@dataclass(frozen=True)
class OtherArm:
    """An arm beside the one watched: its first body (the branch off the watched arm's chain, or off the world
    for arms on bases of their own) and its moving joints."""

    body: str
    joints: tuple[str, ...]


@dataclass(frozen=True)
class RobotGuess:
    base_body: str
    arm_joints: tuple[str, ...]
    end_body: str  # the arm's last body: the gripper's parent, or the tool
    grasp_body: str  # the body of the grasp site, else a tool centre point body fixed to the hand, else end_body
    grasp_site: str | None  # a site of the hand named like a grasp centre (MJCF)
    gripper: GripperKind
    gripper_joints: tuple[str, ...]
    finger_bodies: tuple[str, ...]
    hand_bodies: tuple[str, ...]
    followers: tuple[str, ...]  # joints coupled to another (URDF <mimic>), set from the one they follow
    other_joints: tuple[str, ...]  # moving joints neither arm nor gripper (fixtures, a second arm, a head)
    other_arms: tuple[OtherArm, ...] = ()  # each arm beside the one watched
    hand_joints: tuple[str, ...] = ()  # a hand's independent finger joints, when more than a gripper's two
    free_base: str | None = None  # the floating or planar joint the robot's base hangs from (a mobile base)
    planar_base: tuple[str, ...] = ()  # an MJCF's slides and hinge its base hangs from (a mobile base, not placed)


def guess_robot(tree: KinematicTree, tip: str | None = None) -> RobotGuess:
    """`tip`: a body of the arm to watch (its hand, its last link), for a robot with more than one."""
    if not tree.moving_joints:
        raise GroundingError(f"{tree.path}: no moving joint (revolute, continuous or prismatic): nothing to watch")
    linkage = _linkage_joints(tree)
    gripperish = [j for j in tree.joints.values() if j.name in _gripperish(tree) | linkage]
    chain = _chain_to(tree, tip, {j.name for j in gripperish})
    planar = _planar_base(tree, chain)
    chain = [j for j in chain if j.name not in planar]  # a mobile base's, not the arm's
    moving = [j for j in chain if j.kind in MOVING]
    if not moving:
        raise GroundingError(
            f"{tree.path}: no arm: every moving joint is a gripper's ({joint_span(tree.moving_joints)}); robot init "
            "describes an arm with its gripper: attach the gripper to the arm's model and give that"
        )
    arm = _arm_joints(tree, chain, {j.name for j in gripperish}) or moving
    # the gripper is the arm's own: a second arm's hand is not a second finger of this one
    leaders = [
        j
        for j in gripperish
        if j.leader is None and j.name not in linkage and (not arm or _above(tree, arm[-1].child, j.parent))
    ]
    first = arm[0] if arm else None
    base = first.parent if first is not None else tree.root
    if base == tree.root and tree.format is ModelFormat.MJCF and first is not None:
        base = first.child  # MuJoCo's world body holds every body: the robot is what its first joint moves
    free = next((j for j in chain if j.kind in _BASE_KINDS and _above(tree, j.child, base)), None)
    if free is not None:  # a mobile base: the robot is all its free joint moves, chassis and wheels too
        base = free.child
    elif planar:
        base = tree.joints[planar[0]].child
    if leaders:
        end = leaders[0].parent
        arm = [j for j in arm if _above(tree, j.child, end)]
    else:
        end = arm[-1].child if arm else tree.root
        end = _fixed_tip(tree, end)
    hand_joints = tuple(j.name for j in leaders) if len(leaders) > 2 else ()  # a dexterous hand
    kind = (
        GripperKind.NONE
        if not leaders or hand_joints
        else GripperKind.ONE_JOINT
        if len(leaders) == 1
        else GripperKind.TWO_FINGERS
    )
    gripper_joints = tuple(j.name for j in leaders[:2]) if kind is not GripperKind.NONE else ()
    fingers: tuple[str, ...] = ()
    if kind is GripperKind.TWO_FINGERS:  # each on its side where the names tell (Trossen's right carriage comes first)
        fingers = _sided_fingers([[j.child] for j in leaders[:2]]) or tuple(j.child for j in leaders[:2])
    elif kind is GripperKind.ONE_JOINT:
        followers = [j for j in gripperish if j.leader == leaders[0].name]
        moved = [leaders[0].child, *(j.child for j in followers)]
        fingers = _sided_fingers([_fixed_subtree(tree, m) for m in moved])
        fingers = fingers or _branch_fingers(tree, end, moved)
        if len(fingers) == 1 and tree.joints[leaders[0].name].parent == end:
            fingers = (end, fingers[0])  # one jaw closing on the hand's own (Unitree Z1's gripperMover on its stator)
        if len(fingers) < 2:
            kind, gripper_joints, fingers = GripperKind.NONE, (), ()
    hand = tuple(body for body in _fixed_subtree(tree, end) if body not in fingers)
    if not leaders and arm:  # a tool (a suction cup, a flange): every body fixed below the wrist, not only its tip
        hand = tuple(_fixed_subtree(tree, arm[-1].child)[1:]) or hand
    # a linkage's passive links are the hand's (a 2F-85's spring links, followers and pads): not the arm's
    hand += tuple(
        body
        for j in tree.joints.values()
        if j.name in linkage and _above(tree, end, j.parent) and not any(_above(tree, f, j.child) for f in fingers)
        for body in _fixed_subtree(tree, j.child)
    )
    site = next((s for s, body in tree.sites.items() if body in hand and _names_grasp(s)), None)
    grasp = tree.sites[site] if site is not None else next((b for b in hand if _names_grasp(b)), end)
    used = {j.name for j in arm} | set(gripper_joints)
    coupled = tuple(n for n in tree.moving_joints if tree.joints[n].leader is not None)
    other = tuple(n for n in tree.moving_joints if n not in used and n not in coupled)
    arm_names = tuple(j.name for j in arm)
    arms = _other_arms(tree, chain, {j.name for j in gripperish}, linkage)
    return RobotGuess(
        base,
        arm_names,
        end,
        grasp,
        site,
        kind,
        gripper_joints,
        fingers,
        hand,
        coupled,
        other,
        arms,
        hand_joints,
        free.name if free is not None else None,
        planar,
    )


def _planar_base(tree: KinematicTree, chain: list[TreeJoint]) -> tuple[str, ...]:
    """The joints of an MJCF's mobile base on planar joints: the robot's first body hangs from the world by
    several, two of them slides (TidyBot's `joint_x`, `joint_y` and `joint_th`). () for any other robot."""
    if tree.format is not ModelFormat.MJCF or not chain or chain[0].parent != tree.root:
        return ()
    joints = [j for j in tree.joints.values() if j.child == chain[0].child]
    if len(joints) < 2 or sum(j.kind is JointKind.PRISMATIC for j in joints) < 2:
        return ()
    return tuple(j.name for j in joints)


def _branch_fingers(tree: KinematicTree, hand: str, moved: list[str]) -> tuple[str, ...]:
    """Two fingers a one-joint gripper moves, unnamed by side: the deepest moved body of each of the first two
    branches below the hand (a finger's second link moves with its first: not the other side), else the first
    two moved bodies."""
    parent = {j.child: j.parent for j in tree.joints.values()}
    branches: dict[str, list[str]] = {}  # the branch's top body -> its path down to a moved body
    for body in moved:
        path = [body]
        while parent.get(path[0]) not in (hand, None):
            path.insert(0, parent[path[0]])
        if len(path) > len(branches.get(path[0], [])):
            branches[path[0]] = path
    if len(branches) < 2:
        return tuple(dict.fromkeys(moved))[:2]
    return tuple(path[-1] for path in branches.values())[:2]


def _chain_to(tree: KinematicTree, tip: str | None, gripper: set[str]) -> list[TreeJoint]:
    """The arm's joints from the root: through `tip` and on down its longest chain, else the longest chain."""
    if tip is None:
        return _longest_chain(tree, tree.root, gripper, False)
    parent = {j.child: j for j in tree.joints.values()}
    if tip not in parent:
        bodies = [j.child for j in tree.joints.values()]
        raise GroundingError(f"--tip {tip!r} is not a body of {tree.path}{did_you_mean(tip, bodies)}")
    path: list[TreeJoint] = []
    node = tip
    while node in parent:
        path.insert(0, parent[node])
        node = parent[node].parent
    return path + _longest_chain(tree, tip, gripper, any(j.name in gripper for j in path))


def _other_arms(
    tree: KinematicTree, chain: list[TreeJoint], gripper: set[str], linkage: set[str]
) -> tuple[OtherArm, ...]:
    """Branches off the arm's chain that are arms too: as many moving joints as the arm has below the body
    where they part (a bimanual robot's other arm), or a gripper's (a second hand; a `linkage` joint is no
    gripper's own). A head or a wheel is neither, and nor is another joint of a body on the chain (an MJCF body
    moved by several, as a shoulder of two hinges: each was once an arm of its own)."""
    on_chain = {j.child for j in chain}
    out = []
    for i, link in enumerate(chain):
        hand = any(j.name in gripper for j in chain[:i])
        below = len(_arm_joints(tree, chain[i:], gripper, hand))
        for branch in tree.children(link.parent):
            if branch.child in on_chain:
                continue
            joints = [j for j in _subtree_joints(tree, branch) if j.kind in MOVING]
            longest = len(
                _arm_joints(tree, [branch, *_longest_chain(tree, branch.child, gripper, hand)], gripper, hand)
            )
            holds_gripper = any(j.name in gripper and j.leader is None and j.name not in linkage for j in joints)
            if joints and (longest >= below or holds_gripper):
                out.append(OtherArm(branch.child, tuple(j.name for j in joints)))
    return tuple(out)


def _subtree_joints(tree: KinematicTree, joint: TreeJoint) -> list[TreeJoint]:
    """`joint` and every joint below its child body, in the file's order."""
    return [joint, *(j for child in tree.children(joint.child) for j in _subtree_joints(tree, child))]


def _sided_fingers(moved: list[list[str]]) -> tuple[str, ...]:
    """The left and the right finger among the bodies a one-joint gripper moves (each moved body with the bodies
    fixed to it), by their names (a linkage like the Robotiq 2F-85's moves knuckles and fingers on both sides): on
    each side the body named most like a fingertip (pad, tip, finger, then any); of equals, the last moved one (the
    deepest: a finger's second link moves with its first), and of a moved body and a body fixed to it, the moved one
    (whose subtree holds both: Stretch 3 fixes a marker named `*_finger_aruco` to each finger). () when a side has
    none."""
    bodies = [body for group in moved for body in group]
    order = {body: (-g, i) for g, group in enumerate(moved) for i, body in enumerate(group)}

    def rank(body: str) -> tuple[int, int, int]:
        return (next((i for i, w in enumerate(("pad", "tip", "finger")) if w in body.lower()), 3), *order[body])

    # the arm's prefix says nothing of the side of its fingers (ALOHA's `right/left_finger_link`)
    names = [body.lower() for body in bodies]
    common = next((i for i, chars in enumerate(zip(*names)) if len(set(chars)) > 1), 0) if len(names) > 1 else 0
    common = len(re.sub(r"[a-z0-9]*$", "", names[0][:common]))  # cut back to a separator: never part of a word
    sides = [[body for body, name in zip(bodies, names) if side in name[common:]] for side in ("left", "right")]
    if not all(sides):
        return ()
    return tuple(min(side, key=rank) for side in sides)


def _gripperish(tree: KinematicTree) -> set[str]:
    """Moving joints named like a gripper's, or coupled to another at the hand (Menagerie's Robotiq 2F-85 names its
    driven joints `*_driver_joint`, coupled by an equality). Coupled joints that carry an arm joint are the arm's:
    a telescope's stages, which follow one another (Stretch's, with the wrist and the gripper beyond)."""
    named = {n for n in tree.moving_joints if any(w in n.lower() for w in _GRIPPER_WORDS)} | _slide_pair(tree)
    coupled = {j.name for j in tree.joints.values() if j.leader} | {j.leader for j in tree.joints.values() if j.leader}
    other = named | coupled | _loop_joints(tree) | tree.passive
    plain = [tree.joints[n] for n in tree.moving_joints if n not in other]
    return named | {
        n
        for n in coupled & set(tree.moving_joints)
        if not any(_above(tree, tree.joints[n].child, j.parent) for j in plain)
    }


def _slide_pair(tree: KinematicTree) -> set[str]:
    """Two slides, each the one joint of its body, that move sibling bodies along parallel axes with no moving joint
    below either: a parallel gripper's fingers, whatever they are named (Trossen's WidowX AI's
    `left_carriage_joint`, `right_carriage_joint`). Rails that carry more than a finger have joints below; a URDF's
    joints give no axis, so only an MJCF's are paired."""
    moved_by: dict[str, int] = {}
    for j in tree.joints.values():
        moved_by[j.child] = moved_by.get(j.child, 0) + 1
    slides: dict[str, list[tuple[str, tuple[float, float, float]]]] = {}  # parent body -> its slides and their axes
    for j in tree.joints.values():
        if j.kind is not JointKind.PRISMATIC or j.axis is None or moved_by[j.child] > 1:
            continue
        if not any(k.kind in MOVING for k in _subtree_joints(tree, j)[1:]):
            slides.setdefault(j.parent, []).append((j.name, j.axis))
    out: set[str] = set()
    for pair in slides.values():
        if len(pair) == 2 and abs(float(np.dot(pair[0][1], pair[1][1]))) > _PARALLEL:
            out |= {name for name, _ in pair}
    return out


def _linkage_joints(tree: KinematicTree) -> set[str]:
    """The passive joints of the robot's closed linkages (`_loop_joints`), less those named or coupled like a
    gripper's (its driver). Their positions follow from the driven joint, so they are neither arm joints nor a hand
    of independent fingers."""
    return _loop_joints(tree) - _gripperish(tree)


def _loop_joints(tree: KinematicTree) -> set[str]:
    """Every moving joint on the path through the tree between the two bodies of a `<connect>` or `<weld>` loop (a
    Robotiq 2F-85's four-bar linkages: driver, coupler, spring link, follower). A loop that closes only through the
    world (a mocap weld holding the hand, a hand welded to a fixture) is no linkage of the robot."""
    parent = {j.child: j for j in tree.joints.values()}

    def up(body: str) -> list[str]:
        path = []
        while body in parent:
            path.append(parent[body].name)
            body = parent[body].parent
        return path

    out: set[str] = set()
    for a, b in tree.loops:
        above_a, above_b = up(a), up(b)
        if set(above_a) & set(above_b):
            out |= set(above_a) ^ set(above_b)
    return {n for n in out if tree.joints[n].kind in MOVING}


def _names_grasp(name: str) -> bool:
    """A site or body named like a grasp centre or tool frame: tcp, pinch, grasp, attachment, or an `ee` word."""
    words = re.split(r"[^a-z0-9]+", name.lower())
    return "ee" in words or any(w in name.lower() for w in _GRASP_WORDS)


def _longest_chain(tree: KinematicTree, body: str, gripper: set[str], hand: bool) -> list[TreeJoint]:
    """The path of joints from `body` down with the most arm joints (`_arm_joints`; ties: the first in the file).
    `hand`: `body` hangs below a joint of the `gripper`."""
    best: list[TreeJoint] = []
    for j in tree.children(body):
        path = [j, *_longest_chain(tree, j.child, gripper, hand or j.name in gripper)]
        if len(_arm_joints(tree, path, gripper, hand)) > len(_arm_joints(tree, best, gripper, hand)):
            best = path
    return best


def _arm_joints(tree: KinematicTree, path: list[TreeJoint], gripper: set[str], hand: bool = False) -> list[TreeJoint]:
    """The joints of `path` an arm's may be: moving, not of the `gripper`, not set from another (a telescope's
    following stages), and not a passive one below a gripper joint (Stretch's sprung fingertips, on its fingers).
    `hand`: the path starts below a gripper joint."""
    out = []
    for j in path:
        hand = hand or j.name in gripper
        if j.kind in MOVING and j.name not in gripper and j.leader is None and not (hand and j.name in tree.passive):
            out.append(j)
    return out


def _above(tree: KinematicTree, body: str, below: str) -> bool:
    """Whether `body` is `below` or one of its ancestors."""
    parents = {j.child: j.parent for j in tree.joints.values()}
    node: str | None = below
    while node is not None:
        if node == body:
            return True
        node = parents.get(node)
    return False


def _fixed_subtree(tree: KinematicTree, body: str) -> list[str]:
    """`body` and the bodies hanging from it by fixed joints."""
    out = [body]
    for j in tree.children(body):
        if j.kind is JointKind.FIXED:
            out += _fixed_subtree(tree, j.child)
    return out


def _fixed_tip(tree: KinematicTree, body: str) -> str:
    """The body at the end of a single line of fixed joints below `body` (a tool flange, a tcp link)."""
    kids = [j for j in tree.children(body) if j.kind is JointKind.FIXED]
    return _fixed_tip(tree, kids[0].child) if len(kids) == 1 else body


@dataclass(frozen=True)
class Closing:
    """Which way each gripper joint closes and past where (`past`, in the order of the gripper joints), and what
    that rests on (`evidence`, the CHECK comment of each: what was measured, or why the direction is a guess)."""

    past: tuple[ClosedPast, ...]
    evidence: tuple[str, ...]
    centre: tuple[float, float, float] | None = None  # midway between the open fingers, grasp body's frame (m)


@dataclass(frozen=True)
class _Span:
    """The gripper joints' range, and the narrower range their position servos command, where the model says."""

    lower: float
    upper: float
    driven: ServoRange | None = None

    def closed_at(self, upward: bool) -> float:
        """A tenth of the commanded range from where the gripper opens (its lower end when it closes upward)."""
        lo, hi = (self.driven.lower, self.driven.upper) if self.driven else (self.lower, self.upper)
        return lo + _OPEN_SHARE * (hi - lo) if upward else lo + (1 - _OPEN_SHARE) * (hi - lo)

    def text(self) -> str:
        out = f"joint range [{self.lower:g}, {self.upper:g}]"
        if self.driven is not None:
            by = ", ".join(self.driven.actuators)
            out += (
                f", commanded over [{self.driven.lower:.6g}, {self.driven.upper:.6g}] (the control range of "
                f"{by}: as far as the software moves it)"
            )
        return out

    def share(self) -> str:
        return f"a tenth of the {'commanded' if self.driven else 'joint'} range from where it opens"


def _span(tree: KinematicTree, joints: tuple[str, ...], twin: KinematicTwin | None) -> _Span:
    """The range of the gripper `joints` (`_range`), with the part of it their position servos command where every
    one has one and it is narrower."""
    lo, hi = _range(tree, joints)
    found = [servo_range(twin.model, j) for j in joints] if twin is not None else []
    servos = [s for s in found if s is not None]
    if not servos or len(servos) < len(found):
        return _Span(lo, hi)
    low, high = max(lo, min(s.lower for s in servos)), min(hi, max(s.upper for s in servos))
    if not low < high or high - low > (hi - lo) - _SAME_GAP:  # the joint's whole range, or none of it
        return _Span(lo, hi)
    return _Span(lo, hi, ServoRange(low, high, tuple(dict.fromkeys(a for s in servos for a in s.actuators))))


def gripper_closing(tree: KinematicTree, guess: RobotGuess, twin: KinematicTwin) -> Closing:
    """The closing direction by forward kinematics: the twin of the guess sets the gripper joints at their
    lower, then their upper limits, with their mimic followers, and the limit where the fingers' surfaces are
    nearer is closed. Undecided (no limits, no finger geometry, equal gaps), the guess stands and the evidence
    says why. The threshold: `_Span.closed_at`. Two finger joints that close in opposite directions each get their
    own (`_opposed_fingers`)."""
    span = _span(tree, guess.gripper_joints, twin)
    limits = [(tree.joints[j].lower, tree.joints[j].upper) for j in guess.gripper_joints]
    ends = [(a, b) for a, b in limits if a is not None and b is not None]
    if len(ends) < len(limits):
        return guessed_closing(
            tree, guess, f"the {tree.format.name} gives the gripper joint no lower and upper limit", span
        )
    opposed = _opposed_fingers(tree, guess, twin, ends)
    if opposed is not None:
        return opposed
    gaps, middles = [], []
    for side in (0, 1):
        twin.compute(guess.gripper_joints, np.array([end[side] for end in ends], dtype=float), {})
        measured = twin.finger_gap()
        if measured is None:
            return guessed_closing(tree, guess, "a finger has no collision geometry to measure", span)
        gaps.append(measured.gap)
        middles.append(twin.in_body_frame(guess.grasp_body, measured.middle))
    low, high = gaps
    if abs(low - high) < _SAME_GAP:
        return guessed_closing(tree, guess, f"the fingers are {_apart(low)} at both limits", span)
    lo, hi = span.lower, span.upper
    upward = high < low
    # the grasp centre from the open fingers: closed, they may touch along more than their pads
    opened = 0 if upward else 1
    n = len(guess.gripper_joints)
    return Closing(
        (ClosedPast(span.closed_at(upward), upward),) * n,
        (
            f"{span.text()}; fingers {_apart(low)} at {lo:g}, {_apart(high)} at {hi:g} (forward kinematics): closed "
            f"{'above' if upward else 'below'} this, {span.share()}",
        )
        * n,
        _rounded(middles[opened]) if gaps[opened] > _SAME_GAP else None,
    )


def _opposed_fingers(
    tree: KinematicTree, guess: RobotGuess, twin: KinematicTwin, ends: list[tuple[float, float]]
) -> Closing | None:
    """Two finger joints that close in opposite directions (gym-aloha's slides on one axis, one ranging over
    0.021 to 0.057 m, the other over -0.057 to -0.021): each moved over its range with the other half open, each
    with its own threshold. None unless both tell and they disagree (moved together, such fingers keep their gap)."""
    if len(ends) != 2:
        return None
    half = [(a + b) / 2 for a, b in ends]
    measured = []
    for i in (0, 1):
        gaps = []
        for end in ends[i]:
            twin.compute(guess.gripper_joints, np.array([end if k == i else half[k] for k in (0, 1)]), {})
            found = twin.finger_gap()
            if found is None:
                return None
            gaps.append(found.gap)
        if abs(gaps[0] - gaps[1]) < _SAME_GAP:
            return None
        measured.append((gaps[1] < gaps[0], gaps[0], gaps[1]))
    if measured[0][0] == measured[1][0]:
        return None
    past, evidence = [], []
    for joint, (upward, low, high) in zip(guess.gripper_joints, measured):
        span = _span(tree, (joint,), twin)
        past.append(ClosedPast(span.closed_at(upward), upward))
        evidence.append(
            f"{span.text()}; fingers {_apart(low)} at {span.lower:g}, {_apart(high)} at {span.upper:g}, the other "
            f"finger half open (forward kinematics): this finger closes {'above' if upward else 'below'} this, "
            f"{span.share()}"
        )
    opened = [a if upward else b for (a, b), (upward, _, _) in zip(ends, measured)]
    twin.compute(guess.gripper_joints, np.array(opened), {})
    found = twin.finger_gap()
    centre = None
    if found is not None and found.gap > _SAME_GAP:
        centre = _rounded(twin.in_body_frame(guess.grasp_body, found.middle))
    return Closing(tuple(past), tuple(evidence), centre)


def _rounded(point: np.ndarray) -> tuple[float, float, float]:
    """A point to 0.1 mm, as robot.yaml writes it."""
    x, y, z = (round(float(v), 4) + 0.0 for v in point)  # + 0.0: no "-0.0" in the file
    return x, y, z


def guessed_closing(tree: KinematicTree, guess: RobotGuess, why: str, span: _Span | None = None) -> Closing:
    """The guess when the fingers cannot be measured: the joint closes as it decreases."""
    span = span or _span(tree, guess.gripper_joints, None)
    n = len(guess.gripper_joints)
    return Closing(
        (ClosedPast(span.closed_at(False), False),) * n,
        (
            f"{span.text()}; closed below this ({span.share()}) is a guess, forward kinematics could not tell which "
            f"way the gripper closes ({why}): use closed_above if the joint grows as it closes",
        )
        * n,
    )


def _range(tree: KinematicTree, joints: tuple[str, ...]) -> tuple[float, float]:
    """The joints' range: the lowest lower and the highest upper limit (0 to 1 when none)."""
    found = [tree.joints[j] for j in joints]
    lo = min((j.lower for j in found if j.lower is not None), default=0.0)
    return lo, max((j.upper for j in found if j.upper is not None), default=lo + 1.0)


def joint_span(joints: tuple[str, ...]) -> str:
    """'N joints, first to last', or the one joint's name."""
    return joints[0] if len(joints) == 1 else f"{len(joints)} joints, {joints[0]} to {joints[-1]}"


def _apart(gap: float) -> str:
    if abs(gap) < _SAME_GAP:
        return "touching"
    return f"{gap:.3g} m apart" if gap > 0 else f"overlapping by {-gap:.3g} m"


def robot_yaml(
    tree: KinematicTree, guess: RobotGuess, model_ref: str, package_path: list[str], closing: Closing
) -> str:
    """The text of robot.yaml for `guess`, with comments saying what to check; `model_ref`: the model file as
    the description names it; `closing`: the gripper's closing direction (any, for a robot without a gripper)."""
    g, urdf = guess, tree.format is ModelFormat.URDF
    part, parts = ("link", "links") if urdf else ("body", "bodies")
    lines = [
        f"# Robot description written by `safety-monitor robot init` from {tree.path.name} (robot {tree.name!r}).",
        "# Every line marked CHECK is a guess. Grounding loads this file as it is; docs/your_robot.md says how",
        "# to check it against a recording.",
        "",
    ]
    if urdf:
        lines += [
            f"urdf: {model_ref}",
            f"{'' if package_path else '# '}package_path: {json.dumps(package_path or ['/path/to/ws/src'])}   # "
            "folders holding <package>/ for package:// meshes",
            "# (also searched: $SAFETY_MONITOR_PACKAGE_PATH, the ament index of a sourced workspace, the URDF's folders)",
            "# mjcf: workcell.xml                # an MJCF world (table, fixtures) to attach the robot into",
            "# base_pose: {position: [0, 0, 0], rpy: [0, 0, 0]}   # where the root link sits in that world",
        ]
    else:
        lines.append(f"mjcf: {model_ref}   # the robot, and any fixtures, static bodies and objects beside it")
    if tree.loops:
        pairs = ", ".join(f"{a}-{b}" for a, b in tree.loops)
        lines += [
            f"# CHECK: <connect>/<weld> equalities close kinematic loops ({pairs}):",
            "# the twin follows joint couplings only, so a body held by such a loop stays where the model puts it",
            "# whatever the joints read; couple the loop's joints to the driven one with <equality><joint> (polycoef)",
        ]
    for arm in g.other_arms:
        lines += [
            f"# CHECK: another arm ({joint_span(arm.joints)}) is not watched: the monitor watches one arm and one gripper. Its",
            f"# joints are under ignored_joints, its {parts} (from {arm.body}, under other_arms) are the other_arm: touching",
            "# them is a forbidden contact; what it touches and grasps is for a monitor of its own, from",
            f"# robot init --tip <a {part} of its hand> ({tree.path.name}), docs/your_robot.md",
        ]
    centre = "the grasp centre between the fingertips" if g.gripper_joints else "the tool's working point"
    if g.grasp_site is not None:
        grasp = (
            f"  end_effector: {{body: {g.grasp_body}, site: {g.grasp_site}}}   # CHECK: {centre}; the MJCF's site of "
            "that name"
        )
    elif g.grasp_body != g.end_body:
        grasp = (
            f"  grasp_point: {{link: {g.grasp_body}, offset: [0.0, 0.0, 0.0]}}   # CHECK: {centre}, in this {part}'s "
            f"frame (m); the {tree.format.name} names this {part} a tool centre point"
        )
    else:
        measured = closing.centre is not None
        how = "measured midway between the open fingers' facing geoms (forward kinematics)"
        grasp = (
            f"  grasp_point: {{link: {g.grasp_body}, offset: {json.dumps(list(closing.centre or (0.0, 0.0, 0.0)))}}}"
            f"   # CHECK: {centre}, in this {part}'s frame (m)" + (f"; {how}" if measured else "")
        )
    lines += [
        "",
        "robot:",
        f"  base_body: {g.base_body}   # CHECK: the robot is this {part}'s subtree",
        f"  arm_joints: {json.dumps(list(g.arm_joints))}   # CHECK: {len(g.arm_joints)} joints, base to wrist",
        grasp,
        "  gripper:",
    ]
    if g.hand_joints:
        lines += [
            f"    kind: none   # CHECK: a hand of {len(g.hand_joints)} independent finger joints ({joint_span(g.hand_joints)}, "
            "under ignored_joints); the monitor's gripper closes by one joint or two: for grasps, take two "
            "opposing finger joints as two_fingers",
            f"    hand_bodies: {json.dumps(list(g.hand_bodies))}   # the hand's {parts} other than its fingers",
        ]
    elif g.gripper is GripperKind.NONE:
        lines += [
            "    kind: none   # CHECK: no joint named *finger* or *gripper*, nor coupled to another, was found",
            f"    hand_bodies: {json.dumps(list(g.hand_bodies))}   # the tool's {parts}",
        ]
    else:
        coupling = "that mimic it" if urdf else "coupled to it by an equality"
        what = f"fingers {coupling} move with it" if g.gripper is GripperKind.ONE_JOINT else "one joint per finger"
        lines += [
            f"    kind: {g.gripper.value}   # CHECK: {what}",
            f"    joints: {json.dumps(list(g.gripper_joints))}",
            f"    fingers: {{left: {g.finger_bodies[0]}, right: {g.finger_bodies[1]}}}   # CHECK: {parts} on either "
            "side of a grasped object",
            f"    hand_bodies: {json.dumps(list(g.hand_bodies))}   # gripper {parts} other than the fingers",
            *_closed_lines(g.gripper_joints, closing),
        ]
    ignored = g.other_joints
    if g.followers and urdf:
        lines.append(
            f"    # mimic joints, set from the joint they follow (frames may carry them): {', '.join(g.followers)}"
        )
    elif g.followers:  # a description accepts a URDF's mimic joints in frames, an MJCF's coupled ones when ignored
        lines.append(
            "    # joints coupled by <equality><joint>, set from the joint they follow (under ignored_joints, so "
            f"frames may carry them): {', '.join(g.followers)}"
        )
        ignored = (*g.followers, *ignored)
    limits = "the URDF's <limit>" if urdf else "the MJCF's range, actuatorfrcrange and actuator forcerange"
    free = [j.child for j in tree.joints.values() if j.kind is JointKind.FLOATING and j.name != g.free_base]
    if g.free_base is not None:
        lines += [
            "",
            f"# CHECK: the robot's base hangs from {g.free_base}, a {tree.joints[g.free_base].kind.value} joint: a mobile "
            "base. Name the TF frame it moves in",
            "# as world_frame in the topic mapping (world_frame: odom, or map): the twin then places the robot at the",
            "# base's pose each frame, and fixtures, static bodies and object poses are in that world. Without it the",
            f"# twin keeps the base where the {tree.format.name} puts it, and object poses must be in the base's frame.",
        ]
    if g.planar_base:
        lines += [
            "",
            f"# CHECK: the robot's base hangs from {', '.join(g.planar_base)} (slides and a hinge): a mobile base the twin",
            "# cannot place from a pose. Those joints are ignored and the twin keeps the base where the MJCF puts it, so",
            "# object poses must be in the base's frame; to place it from world_frame, replace them by a <freejoint/>.",
        ]
    lines += [
        "",
        f"ignored_joints: {json.dumps(list(ignored))}   # CHECK: moving joints neither arm nor gripper; a "
        "fixture joint goes under fixtures instead",
        "",
    ]
    if g.other_arms:
        lines += [
            f"other_arms: {json.dumps([arm.body for arm in g.other_arms])}   # CHECK: the first {part} of each arm "
            f"not watched: its subtree is the other_arm",
            "",
        ]
    if not urdf:
        lines += [
            "# CHECK: an MJCF gives no velocity limits: give each arm joint's here ({velocity: rad/s or m/s}), or",
            "# joint_velocities_within_limits and no_joint_position_jump are reported not applicable",
        ]
    lines += [
        f"joint_limits: {{}}   # per joint, over {limits}: {{position: [lower, upper], velocity: ..., effort: ...}}",
        "",
        "fixtures: {}   # e.g. drawer: {joint: drawer_slide, range: [0.0, 0.25], housing: [drawer_housing]}",
        "static: {}     # e.g. table: {bodies: [table]}   "
        + ("(links of this URDF or bodies of the mjcf world)" if urdf else "(bodies of this MJCF)"),
        "objects: {}    # e.g. cube: {box: [0.02, 0.02, 0.02]}   (half sizes; poses on /objects/<name>/pose)"
        + (
            f"; free bodies of this MJCF, each an object by its body (cube: {{body: cube}}): {', '.join(free)}"
            if free
            else ""
        ),
        "",
    ]
    return "\n".join(lines)


def _closed_lines(joints: tuple[str, ...], closing: Closing) -> list[str]:
    """robot.yaml's closed_below or closed_above: a number for every gripper joint, or, for fingers that close in
    opposite directions, {joint: number} under each key."""
    key = {False: "closed_below", True: "closed_above"}
    if len(set(closing.past)) == 1:
        past = closing.past[0]
        return [f"    {key[past.upward]}: {past.at:.6g}   # CHECK: {closing.evidence[0]}"]
    return [
        f"    {key[past.upward]}: {{{json.dumps(joint)}: {past.at:.6g}}}   # CHECK: {why}"
        for joint, past, why in zip(joints, closing.past, closing.evidence)
    ]


def objects_yaml(default: Path) -> str:
    """objects.yaml with the default vocabulary and no entities (the description has none yet)."""
    text = default.read_text(encoding="utf-8")
    head, _, _ = text.partition("\nentities:")
    return head.rstrip() + "\n\nentities: {}   # every object, fixture and static body of robot.yaml -> its kind\n"


def write_description(
    tree: KinematicTree, out: Path, defaults: Path, package_path: list[Path], tip: str | None = None
) -> list[Path]:
    """robot.yaml, objects.yaml and thresholds.yaml (the defaults) in `out`; refuses to overwrite. `tip`: a
    body of the arm to watch."""
    names = ("robot.yaml", "objects.yaml", "thresholds.yaml")
    there = [name for name in names if (out / name).exists()]
    if there:
        raise GroundingError(f"{out}: {', '.join(there)} already there; remove them or give another --out")
    guess = guess_robot(tree, tip)
    closing = guessed_closing(tree, guess, "not measured")
    # the twin of the description as it will be written (its paths absolute): a mesh MuJoCo cannot read fails
    # here, before any file is written, and the gripper's closing direction is measured on it
    draft = robot_yaml(tree, guess, str(tree.path.resolve()), [str(p.resolve()) for p in package_path], closing)
    twin = KinematicTwin(parse_robot_description(yaml.safe_load(draft), "robot init"), 0.0)
    if guess.gripper is not GripperKind.NONE:
        closing = gripper_closing(tree, guess, twin)
    texts = (
        robot_yaml(tree, guess, _relative(tree.path, out), [_relative(p, out) for p in package_path], closing),
        objects_yaml(defaults / "objects.yaml"),
        (defaults / "thresholds.yaml").read_text(encoding="utf-8"),
    )
    written: list[Path] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in zip(names, texts):
            write_file(out / name, text, "robot description", GroundingError)
            written.append(out / name)
    except OSError as exc:
        raise GroundingError(f"--out {out}: cannot make the folder: {exc.strerror or exc}") from None
    except GroundingError as exc:  # a set without all three would be refused as "already there" next time
        for path in written:
            path.unlink(missing_ok=True)
        removed = f" ({', '.join(p.name for p in written)} removed again)" if written else ""
        raise GroundingError(f"{exc}{removed}") from None
    return written


def _relative(path: Path, out: Path) -> str:
    """`path` as robot.yaml in `out` should name it: relative to `out` (the folder moves with its robot)."""
    return os.path.relpath(path.resolve(), out.resolve())
