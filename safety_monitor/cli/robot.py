"""Sub-command `robot init`: a starting robot description (robot.yaml, objects.yaml, thresholds.yaml) from a
URDF or an MJCF."""

from __future__ import annotations

import argparse
from pathlib import Path

from safety_monitor import arguments
from safety_monitor.errors import GroundingError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("robot", help="describe your robot to the monitor")
    robot = p.add_subparsers(dest="robot_command", metavar="ACTION", required=True)
    init = robot.add_parser(
        "init", help="write a starting robot description from a URDF or an MJCF, with what to check"
    )
    model = init.add_mutually_exclusive_group(required=True)
    model.add_argument("--urdf", type=Path, metavar="FILE", help="the robot's URDF file")
    model.add_argument(
        "--mjcf", type=Path, metavar="FILE", help="the robot's MJCF file (MuJoCo XML, e.g. from MuJoCo Menagerie)"
    )
    init.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="folder to write robot.yaml, objects.yaml and "
        "thresholds.yaml into (default: the current folder; existing files are never overwritten)",
    )
    init.add_argument(
        "--package-path",
        type=arguments.folder,
        action="append",
        metavar="DIR",
        default=[],
        help="with --urdf: a folder holding <package>/ trees for package:// meshes (repeatable)",
    )
    init.add_argument(
        "--tip",
        metavar="BODY",
        help="a body of the arm to watch (its hand or last link), for a robot with more than one arm "
        "(default: the arm with the most joints)",
    )
    init.set_defaults(func=_init)


def _init(args: argparse.Namespace) -> int:
    from safety_monitor.files import config_dir
    from safety_monitor.grounding.description import load_robot_description
    from safety_monitor.grounding.kinematic_tree import tree_of_urdf
    from safety_monitor.grounding.mjcf_tree import load_mjcf_tree
    from safety_monitor.grounding.robot_init import guess_robot, joint_span, write_description
    from safety_monitor.grounding.thresholds import load_thresholds
    from safety_monitor.grounding.twin import twin_for
    from safety_monitor.grounding.urdf import load_urdf

    if args.mjcf is not None and args.package_path:
        raise GroundingError("--package-path serves --urdf: an MJCF names its mesh folders itself (meshdir)")
    tree = load_mjcf_tree(args.mjcf) if args.mjcf is not None else tree_of_urdf(load_urdf(args.urdf, args.package_path))
    written = write_description(tree, args.out, config_dir(), args.package_path, args.tip)
    twin_for(load_robot_description(written[0]), load_thresholds(written[2]))  # what it wrote compiles
    guess = guess_robot(tree, args.tip)
    print(f"wrote {', '.join(str(p) for p in written)}")
    print(
        f"arm: {len(guess.arm_joints)} joints from {guess.base_body} to {guess.end_body}; gripper: {guess.gripper.value}"
        + (f" ({', '.join(guess.gripper_joints)})" if guess.gripper_joints else "")
    )
    for arm in guess.other_arms:
        print(
            f"not watched: another arm ({joint_span(arm.joints)}); the monitor watches one (choose it with --tip BODY); "
            f"its bodies, from {arm.body} down, are other_arm: touching them is a forbidden contact"
        )
    print("next: check every line marked CHECK in robot.yaml (docs/your_robot.md)")
    return 0
