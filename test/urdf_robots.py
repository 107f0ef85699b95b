"""Small URDF robots written by the tests, in the spirit of real ones: a 7-joint arm with a two-finger gripper
and package:// collision meshes, an arm with no gripper, and an arm whose single gripper joint drives
mimic fingers. Each comes with its robot.yaml and objects.yaml, written into a folder."""

from __future__ import annotations

import struct
from pathlib import Path

import yaml

LINK_LENGTH = 0.15
PACKAGE = "toy_arm_description"


def box_stl(path: Path, half: tuple[float, float, float]) -> None:
    """A binary STL of a box centred at the origin (MuJoCo reads binary STL)."""
    hx, hy, hz = half
    v = [(x, y, z) for x in (-hx, hx) for y in (-hy, hy) for z in (-hz, hz)]
    faces = [
        (0, 1, 3),
        (0, 3, 2),
        (4, 6, 7),
        (4, 7, 5),
        (0, 4, 5),
        (0, 5, 1),
        (2, 3, 7),
        (2, 7, 6),
        (0, 2, 6),
        (0, 6, 4),
        (1, 5, 7),
        (1, 7, 3),
    ]
    data = bytearray(b"\0" * 80 + struct.pack("<I", len(faces)))
    for f in faces:
        data += struct.pack("<3f", 0, 0, 0)
        for i in f:
            data += struct.pack("<3f", *v[i])
        data += b"\0\0"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))


def _link(name: str, collision: str) -> str:
    return (
        f'  <link name="{name}"><visual><geometry><mesh filename="package://{PACKAGE}/meshes/visual/{name}.dae"/>'
        f"</geometry></visual><collision>{collision}</collision></link>\n"
    )


def _joint(
    name: str, kind: str, parent: str, child: str, xyz: str, axis: str = "0 0 1", limit: str = "", extra: str = ""
) -> str:
    return (
        f'  <joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>{limit}{extra}</joint>\n'
    )


def arm_urdf(n_joints: int, gripper: str, mesh: bool = False) -> str:
    """An arm of `n_joints` revolute joints (axes z, y alternating) straight up from a base on a table, with
    a drawer fixture, and `gripper`: two_fingers, one_joint (mimic right finger, closes as it grows) or none."""
    cyl = '<geometry><cylinder radius="0.03" length="0.12"/></geometry><origin xyz="0 0 0.075"/>'
    out = '<?xml version="1.0"?>\n<robot name="toy_arm">\n  <link name="world"/>\n'
    out += _link("table", '<origin xyz="0.4 0 -0.02"/><geometry><box size="1.2 1.2 0.04"/></geometry>')
    out += _joint("table_fix", "fixed", "world", "table", "0 0 0")
    base = (
        f'<geometry><mesh filename="package://{PACKAGE}/meshes/base.stl"/></geometry><origin xyz="0 0 0.05"/>'
        if mesh
        else '<geometry><box size="0.1 0.1 0.1"/></geometry><origin xyz="0 0 0.05"/>'
    )
    out += _link("base_link", base)
    out += _joint("base_fix", "fixed", "world", "base_link", "0 0 0.0")
    parent = "base_link"
    for i in range(1, n_joints + 1):
        link = f"link{i}"
        geom = (
            f'<geometry><mesh filename="package://{PACKAGE}/meshes/link.stl"/></geometry><origin xyz="0 0 0.075"/>'
            if mesh
            else cyl
        )
        out += _link(link, geom)
        axis = "0 0 1" if i % 2 else "0 1 0"
        out += _joint(
            f"joint{i}",
            "revolute",
            parent,
            link,
            f"0 0 {0.1 if i == 1 else LINK_LENGTH}",
            axis,
            '<limit lower="-2.5" upper="2.5" velocity="2.0" effort="80"/>',
        )
        parent = link
    tool = "hand" if gripper != "none" else "tool"
    out += _link(tool, '<geometry><box size="0.04 0.12 0.02"/></geometry><origin xyz="0 0 0.01"/>')
    out += _joint(f"{tool}_fix", "fixed", parent, tool, f"0 0 {LINK_LENGTH}")
    pad = '<geometry><box size="0.01 0.01 0.04"/></geometry><origin xyz="0 {y} 0.04"/>'
    if gripper == "two_fingers":
        for side, sign in (("left", 1), ("right", -1)):
            out += _link(f"finger_{side}", pad.format(y=0.005 * sign))
            out += _joint(
                f"finger_{side}_joint",
                "prismatic",
                "hand",
                f"finger_{side}",
                "0 0 0.02",
                f"0 {sign} 0",
                '<limit lower="0" upper="0.04" velocity="0.2" effort="20"/>',
            )
    elif gripper == "one_joint":
        for side, sign in (("left", 1), ("right", -1)):
            out += _link(f"finger_{side}", pad.format(y=0.005 * sign))
        limit = '<limit lower="0" upper="0.04" velocity="0.2" effort="20"/>'
        out += _joint("gripper_joint", "prismatic", "hand", "finger_left", "0 0.04 0.02", "0 -1 0", limit)
        out += _joint(
            "finger_right_joint",
            "prismatic",
            "hand",
            "finger_right",
            "0 -0.04 0.02",
            "0 1 0",
            limit,
            '<mimic joint="gripper_joint" multiplier="1" offset="0"/>',
        )
    out += _link("drawer_housing", '<origin xyz="0.6 0.4 0.15"/><geometry><box size="0.3 0.3 0.3"/></geometry>')
    out += _joint("housing_fix", "fixed", "world", "drawer_housing", "0 0 0")
    out += _link("drawer", '<origin xyz="0 0 0"/><geometry><box size="0.25 0.25 0.02"/></geometry>')
    out += _joint(
        "drawer_slide",
        "prismatic",
        "world",
        "drawer",
        "0.6 0.4 0.35",
        "-1 0 0",
        '<limit lower="0" upper="0.25" velocity="0.5" effort="50"/>',
    )
    return out + "</robot>\n"


def description(
    n_joints: int, gripper: str, urdf: str = "robot.urdf", blocks: tuple[str, ...] = ("cube",), **extra
) -> dict:
    joints = [f"joint{i}" for i in range(1, n_joints + 1)]
    robot: dict = {"base_body": "base_link", "arm_joints": joints}
    if gripper == "none":
        robot["grasp_point"] = {"link": "tool", "offset": [0, 0, 0.05]}
        robot["gripper"] = {"kind": "none", "hand_bodies": ["tool"]}
    else:
        robot["grasp_point"] = {"link": "hand", "offset": [0, 0, 0.06]}
        robot["gripper"] = {"fingers": {"left": "finger_left", "right": "finger_right"}, "hand_bodies": ["hand"]}
        if gripper == "two_fingers":
            robot["gripper"].update(
                kind="two_fingers", joints=["finger_left_joint", "finger_right_joint"], closed_below=0.025
            )
        else:
            robot["gripper"].update(kind="one_joint", joints=["gripper_joint"], closed_above=0.015)
    return {
        "urdf": urdf,
        "robot": robot,
        "ignored_joints": [],
        "fixtures": {"drawer": {"joint": "drawer_slide", "range": [0.0, 0.25], "housing": ["drawer_housing"]}},
        "static": {"table": {"bodies": ["table"]}},
        "objects": {name: {"box": [0.02, 0.02, 0.02]} for name in blocks},
        **extra,
    }


OBJECTS = {
    "properties": {
        "hazard": ["fragile", "raw"],
        "role": ["clean", "tool"],
        "affordance": ["graspable", "support", "container", "enclosure", "openable"],
    },
    "kinds": {
        "block": {"properties": ["graspable"]},
        "table": {"properties": ["support"]},
        "drawer": {"properties": ["openable", "support"]},
    },
    "entities": {"cube": "block", "table": "table", "drawer": "drawer"},
}


def write_robot(
    folder: Path, n_joints: int, gripper: str, mesh: bool = False, blocks: tuple[str, ...] = ("cube",), **extra
) -> Path:
    """robot.urdf, robot.yaml, objects.yaml (and the meshes under folder/ws/<package>/) in `folder`; returns
    the robot.yaml path. `blocks`: the graspable cubes (2 cm half sizes) the robot manipulates."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "robot.urdf").write_text(arm_urdf(n_joints, gripper, mesh))
    doc = description(n_joints, gripper, blocks=blocks, **extra)
    if mesh:
        box_stl(folder / "ws" / PACKAGE / "meshes" / "base.stl", (0.05, 0.05, 0.05))
        box_stl(folder / "ws" / PACKAGE / "meshes" / "link.stl", (0.03, 0.03, 0.06))
        doc.setdefault("package_path", ["ws"])
    (folder / "robot.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    catalog = {**OBJECTS, "entities": {**dict.fromkeys(blocks, "block"), "table": "table", "drawer": "drawer"}}
    (folder / "objects.yaml").write_text(yaml.safe_dump(catalog, sort_keys=False))
    return folder / "robot.yaml"
