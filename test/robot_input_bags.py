"""A bag as a robot team records it, for the one-joint-gripper URDF robot of `urdf_robots`: the arm's JointState
without names, the gripper on its own topic at half the rate, the cube only as a TF frame seen by a camera
mounted upside down (/tf_static: base_link -> camera, /tf: camera -> cube), and one encoder jump.

The script: the cube sits at the grasp point; the gripper closes (a grasp), an encoder wraps once on joint1,
the gripper opens (a drop, with the release)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from urdf_robots import write_robot

from safety_monitor.frames import Pose
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.io.bag import BagWriter

RATE = 50.0
ARM = tuple(f"joint{i}" for i in range(1, 7))
JOINT_ORDER = (*ARM, "drawer_slide")  # the arm driver's positional order (the drawer encoder is on its bus)
CAMERA = Pose(np.array([0.5, 0.0, 0.8]), np.array([0.0, 1.0, 0.0, 0.0]))  # 180 degrees about x: looking down
CLOSED, OPEN = 0.02, 0.0
FRAMES = 60
CLOSE_AT, JUMP_AT, OPEN_AT = 5, 30, 40


def write_setup(folder: Path) -> tuple[Path, Path]:
    """The robot description and the topic mapping (a file, as `--topics` and the node's topics_file take it)."""
    robot = write_robot(folder / "robot", 6, "one_joint")
    mapping = {
        "joint_states": "/arm/joint_states",
        "wrench": None,
        "joint_order": list(JOINT_ORDER),
        "gripper_joint_states": "/gripper/joint_states",
        "object_frames": {"cube": "cube_link"},
        "base_frame": "base_link",
    }
    topics = folder / "topics.yaml"
    topics.write_text(yaml.safe_dump(mapping, sort_keys=False))
    return robot, topics


def grasp_point(robot: Path) -> np.ndarray:
    """Where the cube sits: the grasp point with every joint at zero (base_link is the world's origin)."""
    g = load_default_grounder(RATE, robot)
    names = g.robot.required_joints
    return g.twin.compute(names, np.zeros(len(names)), {}).ee_position.copy()


def cube_in_camera(cube: np.ndarray) -> Pose:
    """The cube's pose in the camera frame, from its position in base_link (identity orientation there)."""
    flip = np.array([1.0, -1.0, -1.0])  # the camera's rotation is its own inverse
    return Pose((cube - CAMERA.position) * flip, np.array([0.0, -1.0, 0.0, 0.0]))


def gripper_at(k: int) -> float:
    """The gripper joint at frame k: closing from CLOSE_AT and opening from OPEN_AT, within its velocity limit."""
    step = 0.004  # per gripper message (every other frame): 0.1 m/s at 50 Hz, under the URDF's 0.2
    if k < OPEN_AT:
        return min(CLOSED, max(OPEN, step * ((k - CLOSE_AT) // 2 + 1)))
    return max(OPEN, CLOSED - step * ((k - OPEN_AT) // 2 + 1))


def write_bag(path: Path, robot: Path, as_sent: bool = True) -> None:
    """The bag as the robot sends it, or (`as_sent` False) the same data the package's own way: one named
    JointState with the gripper's latest reading, and the cube's pose in base_link on a PoseStamped topic."""
    base_cube = grasp_point(robot)
    cube = cube_in_camera(base_cube)
    gripper = OPEN
    with BagWriter(path) as bag:
        if as_sent:
            bag.write_tf("/tf_static", [("base_link", "camera", CAMERA, 0.0)], log_t=0.0)
        for k in range(FRAMES):
            t = 1.0 + k / RATE
            arm = np.zeros(len(JOINT_ORDER))
            if k == JUMP_AT:
                arm[0] = 2.4  # the encoder wrapped for one frame
            if as_sent:
                bag.write_tf("/tf", [("camera", "cube_link", cube, t - 0.004)])
            else:
                bag.write_pose("/objects/cube/pose", t - 0.004, Pose(base_cube, np.array([1.0, 0, 0, 0])))
            if k % 2 == 0:
                gripper = gripper_at(k)
                if as_sent:
                    bag.write_joint_state("/gripper/joint_states", t - 0.002, ["gripper_joint"], [gripper], [0.0])
            if as_sent:
                bag.write_joint_state("/arm/joint_states", t, [], arm, np.zeros(len(arm)))
            else:
                bag.write_joint_state(
                    "/joint_states",
                    t,
                    (*ARM, "gripper_joint", "drawer_slide"),
                    [*arm[:6], gripper, arm[6]],
                    np.zeros(len(arm) + 1),
                )
