"""A starting robot description from a URDF (`safety-monitor robot init`): guesses, each with a comment saying
what to check.

The arm is the longest chain of moving joints from the root; the gripper is the joints named *finger* or
*gripper* (a joint others mimic counts once: a one-joint gripper); the grasp point is a *tcp* link fixed to
the hand (Franka's `fer_hand_tcp`), else the link that carries the gripper (else the arm's last link). The result loads as it is; what it cannot know (where the grasp
centre lies, fixtures, objects) is left for the user, marked CHECK. Which way the gripper closes is measured:
the twin sets the gripper joint(s) (and their mimic followers) at both limits and the limit where the fingers
are nearer together is closed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from safety_monitor.errors import GroundingError
from safety_monitor.files import write_file
from safety_monitor.grounding.description import GripperKind, parse_robot_description
from safety_monitor.grounding.twin import KinematicTwin
from safety_monitor.grounding.urdf import MOVING_TYPES, UrdfJoint, UrdfModel

_GRIPPER_WORDS = ("finger", "gripper", "jaw", "knuckle")
_SAME_GAP = 1e-4  # m: finger gaps at the two limits closer than this tell nothing about which way it closes
_OPEN_SHARE = 0.1  # of the joint range: the gripper counts as open only this near its open limit


@dataclass(frozen=True)
class RobotGuess:
    base_link: str
    arm_joints: tuple[str, ...]
    end_link: str  # the arm's last link: the gripper's parent, or the tool
    grasp_link: str  # a tool centre point link fixed to the hand, else end_link
    gripper: GripperKind
    gripper_joints: tuple[str, ...]
    finger_links: tuple[str, ...]
    hand_links: tuple[str, ...]
    mimic: tuple[str, ...]
    other_joints: tuple[str, ...]  # moving joints neither arm nor gripper (fixtures, a second arm, a head)


def guess_robot(urdf: UrdfModel) -> RobotGuess:
    chain = _longest_chain(urdf, urdf.root)
    moving = [j for j in chain if j.kind in MOVING_TYPES]
    gripperish = [j for j in urdf.joints.values() if j.kind in MOVING_TYPES and _looks_like_gripper(j.name)]
    leaders = [j for j in gripperish if j.mimic is None]
    arm = [j for j in moving if j not in gripperish]
    if not arm:
        arm = moving
    first = arm[0] if arm else None
    base = first.parent if first is not None else urdf.root
    if leaders:
        end = leaders[0].parent
        arm = [j for j in arm if _above(urdf, j.child, end)]
    else:
        end = arm[-1].child if arm else urdf.root
        end = _fixed_tip(urdf, end)
    kind = GripperKind.NONE if not leaders else GripperKind.ONE_JOINT if len(leaders) == 1 else GripperKind.TWO_FINGERS
    gripper_joints = tuple(j.name for j in leaders[:2]) if kind is not GripperKind.NONE else ()
    fingers: tuple[str, ...] = ()
    if kind is GripperKind.TWO_FINGERS:
        fingers = tuple(j.child for j in leaders[:2])
    elif kind is GripperKind.ONE_JOINT:
        followers = [j for j in gripperish if j.mimic is not None and j.mimic.leader == leaders[0].name]
        moved = [leaders[0].child, *(j.child for j in followers)]
        fingers = _sided_fingers([link for m in moved for link in _fixed_subtree(urdf, m)])
        fingers = fingers or tuple(dict.fromkeys(moved))[:2]
        if len(fingers) < 2:
            kind, gripper_joints, fingers = GripperKind.NONE, (), ()
    hand = tuple(link for link in _fixed_subtree(urdf, end) if link not in fingers)
    grasp = next((link for link in hand if "tcp" in link.lower()), end)
    used = {j.name for j in arm} | set(gripper_joints)
    mimic = tuple(n for n, j in urdf.joints.items() if j.mimic is not None)
    other = tuple(n for n in urdf.moving_joints if n not in used and n not in mimic)
    return RobotGuess(base, tuple(j.name for j in arm), end, grasp, kind, gripper_joints, fingers, hand, mimic, other)


def _sided_fingers(links: list[str]) -> tuple[str, ...]:
    """The left and the right finger among the links a one-joint gripper moves, by their names (a linkage
    like the Robotiq 2F-85's moves knuckles and fingers on both sides): on each side the link named most
    like a fingertip (pad, tip, finger, then any), the last of equals (the deepest). () when a side has none."""

    def rank(link: str) -> int:
        return next((i for i, w in enumerate(("pad", "tip", "finger")) if w in link.lower()), 3)

    sides = [[link for link in links if side in link.lower()] for side in ("left", "right")]
    if not all(sides):
        return ()
    return tuple(min(reversed(side), key=rank) for side in sides)


def _looks_like_gripper(name: str) -> bool:
    return any(w in name.lower() for w in _GRIPPER_WORDS)


def _longest_chain(urdf: UrdfModel, link: str) -> list[UrdfJoint]:
    """The path of joints from `link` down with the most moving joints (ties: the first in the file)."""
    best: list[UrdfJoint] = []
    for j in urdf.children(link):
        path = [j, *_longest_chain(urdf, j.child)]
        if _count(path) > _count(best):
            best = path
    return best


def _count(path: list[UrdfJoint]) -> int:
    return sum(j.kind in MOVING_TYPES and not _looks_like_gripper(j.name) for j in path)


def _above(urdf: UrdfModel, link: str, below: str) -> bool:
    """Whether `link` is `below` or one of its ancestors."""
    parents = {j.child: j.parent for j in urdf.joints.values()}
    node: str | None = below
    while node is not None:
        if node == link:
            return True
        node = parents.get(node)
    return False


def _fixed_subtree(urdf: UrdfModel, link: str) -> list[str]:
    """`link` and the links hanging from it by fixed joints."""
    out = [link]
    for j in urdf.children(link):
        if j.kind == "fixed":
            out += _fixed_subtree(urdf, j.child)
    return out


def _fixed_tip(urdf: UrdfModel, link: str) -> str:
    """The link at the end of a single line of fixed joints below `link` (a tool flange, a tcp link)."""
    kids = [j for j in urdf.children(link) if j.kind == "fixed"]
    return _fixed_tip(urdf, kids[0].child) if len(kids) == 1 else link


@dataclass(frozen=True)
class Closing:
    """Which way the gripper closes: closed above `at` (`upward`) or below it, and what that rests on."""

    upward: bool
    at: float
    evidence: str  # the CHECK comment: what was measured, or why the direction is a guess


def gripper_closing(urdf: UrdfModel, guess: RobotGuess, draft: str) -> Closing:
    """The closing direction by forward kinematics: the twin of `draft` (robot.yaml as written with the
    guess, its paths absolute) sets the gripper joints at their lower, then their upper limits,
    with their mimic followers, and the limit where the fingers' surfaces are nearer is closed. Undecided (no
    limits, no finger geometry, equal gaps, no twin), the guess stands and the evidence says why."""
    limits = [urdf.joints[j].limit for j in guess.gripper_joints]
    ends = [(lim.lower, lim.upper) for lim in limits]
    if any(a is None or b is None for a, b in ends):
        return guessed_closing(urdf, guess, "the URDF gives the gripper joint no lower and upper limit")
    try:
        twin = KinematicTwin(parse_robot_description(yaml.safe_load(draft), "robot.yaml"), 0.0)
    except GroundingError as exc:
        return guessed_closing(urdf, guess, f"no twin: {exc}")
    gaps = []
    for side in (0, 1):
        twin.compute(guess.gripper_joints, np.array([end[side] for end in ends], dtype=float), {})
        gaps.append(twin.finger_gap())
    low, high = gaps
    if low is None or high is None:
        return guessed_closing(urdf, guess, "a finger has no collision geometry to measure")
    if abs(low - high) < _SAME_GAP:
        return guessed_closing(urdf, guess, f"the fingers are {_apart(low)} at both limits")
    lo, hi = _range(urdf, guess)
    upward = high < low
    return Closing(
        upward,
        lo + _OPEN_SHARE * (hi - lo) if upward else lo + (1 - _OPEN_SHARE) * (hi - lo),
        f"joint range [{lo:g}, {hi:g}]; fingers {_apart(low)} at {lo:g}, {_apart(high)} at {hi:g} (forward "
        f"kinematics): closed {'above' if upward else 'below'} this",
    )


def guessed_closing(urdf: UrdfModel, guess: RobotGuess, why: str) -> Closing:
    """The guess when the fingers cannot be measured: the joint closes as it decreases."""
    lo, hi = _range(urdf, guess)
    return Closing(
        False,
        lo + (1 - _OPEN_SHARE) * (hi - lo),
        f"joint range [{lo:g}, {hi:g}]; closed below this is a guess, forward kinematics could not tell which "
        f"way the gripper closes ({why}): use closed_above if the joint grows as it closes",
    )


def _range(urdf: UrdfModel, guess: RobotGuess) -> tuple[float, float]:
    """The gripper joints' range: the lowest lower and the highest upper limit (0 to 1 when none)."""
    limits = [urdf.joints[j].limit for j in guess.gripper_joints]
    lo = min((lim.lower for lim in limits if lim.lower is not None), default=0.0)
    return lo, max((lim.upper for lim in limits if lim.upper is not None), default=lo + 1.0)


def _apart(gap: float) -> str:
    if abs(gap) < _SAME_GAP:
        return "touching"
    return f"{gap:.3g} m apart" if gap > 0 else f"overlapping by {-gap:.3g} m"


def robot_yaml(urdf: UrdfModel, guess: RobotGuess, urdf_ref: str, package_path: list[str], closing: Closing) -> str:
    """The text of robot.yaml for `guess`, with comments saying what to check; `closing`: the gripper's
    closing direction (any, for a robot without a gripper)."""
    g = guess
    lines = [
        f"# Robot description written by `safety-monitor robot init` from {urdf.path.name} (robot {urdf.name!r}).",
        "# Every line marked CHECK is a guess. Grounding loads this file as it is; docs/your_robot.md says how",
        "# to check it against a recording.",
        "",
        f"urdf: {urdf_ref}",
        f"{'' if package_path else '# '}package_path: {json.dumps(package_path or ['/path/to/ws/src'])}   # folders "
        "holding <package>/ for package:// meshes",
        "# (also searched: $SAFETY_MONITOR_PACKAGE_PATH, the ament index of a sourced workspace, the URDF's folders)",
        "# mjcf: workcell.xml                # an MJCF world (table, fixtures) to attach the robot into",
        "# base_pose: {position: [0, 0, 0], rpy: [0, 0, 0]}   # where the root link sits in that world",
        "",
        "robot:",
        f"  base_body: {g.base_link}   # CHECK: the robot is this link's subtree",
        f"  arm_joints: {json.dumps(list(g.arm_joints))}   # CHECK: {len(g.arm_joints)} joints, base to wrist",
        f"  grasp_point: {{link: {g.grasp_link}, offset: [0.0, 0.0, 0.0]}}   # CHECK: the grasp centre between the "
        f"fingertips, in this link's frame (m){'; the URDF names this link a tool centre point' if g.grasp_link != g.end_link else ''}",
        "  gripper:",
    ]
    if g.gripper is GripperKind.NONE:
        lines += [
            "    kind: none   # CHECK: no joint named *finger* or *gripper* was found",
            f"    hand_bodies: {json.dumps(list(g.hand_links))}   # the tool's links",
        ]
    else:
        what = "fingers that mimic it move with it" if g.gripper is GripperKind.ONE_JOINT else "one joint per finger"
        key = "closed_above" if closing.upward else "closed_below"
        lines += [
            f"    kind: {g.gripper.value}   # CHECK: {what}",
            f"    joints: {json.dumps(list(g.gripper_joints))}",
            f"    fingers: {{left: {g.finger_links[0]}, right: {g.finger_links[1]}}}   # CHECK: links on either side "
            "of a grasped object",
            f"    hand_bodies: {json.dumps(list(g.hand_links))}   # gripper links other than the fingers",
            f"    {key}: {closing.at:.6g}   # CHECK: {closing.evidence}",
        ]
    if g.mimic:
        lines.append(
            f"    # mimic joints, set from the joint they follow (frames may carry them): {', '.join(g.mimic)}"
        )
    lines += [
        "",
        f"ignored_joints: {json.dumps(list(g.other_joints))}   # CHECK: moving joints neither arm nor gripper; a "
        "fixture joint goes under fixtures instead",
        "",
        "joint_limits: {}   # per joint, over the URDF's <limit>: {position: [lower, upper], velocity: ..., effort: ...}",
        "",
        "fixtures: {}   # e.g. drawer: {joint: drawer_slide, range: [0.0, 0.25], housing: [drawer_housing]}",
        "static: {}     # e.g. table: {bodies: [table]}   (links of this URDF or bodies of the mjcf world)",
        "objects: {}    # e.g. cube: {box: [0.02, 0.02, 0.02]}   (half sizes; poses on /objects/<name>/pose)",
        "",
    ]
    return "\n".join(lines)


def objects_yaml(default: Path) -> str:
    """objects.yaml with the default vocabulary and no entities (the description has none yet)."""
    text = default.read_text(encoding="utf-8")
    head, _, _ = text.partition("\nentities:")
    return head.rstrip() + "\n\nentities: {}   # every object, fixture and static body of robot.yaml -> its kind\n"


def write_description(urdf: UrdfModel, out: Path, defaults: Path, package_path: list[Path]) -> list[Path]:
    """robot.yaml, objects.yaml and thresholds.yaml (the defaults) in `out`; refuses to overwrite."""
    names = ("robot.yaml", "objects.yaml", "thresholds.yaml")
    there = [name for name in names if (out / name).exists()]
    if there:
        raise GroundingError(f"{out}: {', '.join(there)} already there; remove them or give another --out")
    guess = guess_robot(urdf)
    closing = guessed_closing(urdf, guess, "not measured")
    if guess.gripper is not GripperKind.NONE:  # measured on the description as it will be written
        draft = robot_yaml(urdf, guess, str(urdf.path.resolve()), [str(p.resolve()) for p in package_path], closing)
        closing = gripper_closing(urdf, guess, draft)
    texts = (
        robot_yaml(urdf, guess, _relative(urdf.path, out), [_relative(p, out) for p in package_path], closing),
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
