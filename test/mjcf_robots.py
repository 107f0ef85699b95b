"""Small MJCF robots written by the tests, the MJCF twins of urdf_robots' arms (same bodies, joints, limits and
collision geometry), in the ways Menagerie models differ from a URDF: fingers coupled by an `<equality><joint>`
constraint rather than `<mimic>`, a grasp-centre site, free bodies beside the robot, kinematic loops."""

from __future__ import annotations

from pathlib import Path

import yaml
from urdf_robots import LINK_LENGTH, OBJECTS


def arm_mjcf(n_joints: int, gripper: str, site: str | None = None, free_cube: bool = False, loop: bool = False) -> str:
    """An arm of `n_joints` hinge joints (axes z, y alternating) straight up from a base on a table, with a
    drawer fixture, and `gripper`: two_fingers (closes as its joints shrink), mirrored (two_fingers whose right
    finger slides on the left's axis over -0.04 to 0, closing as it grows: gym-aloha's), one_joint (the right finger
    follows the left by an equality; closes as the joint grows), carriages (Trossen's WidowX AI's: two slides named
    for no finger, `right_carriage_joint` first, each opening its carriage outwards over 0 to 0.044 m, coupled by
    nothing) or none. `site`: a site of that name 6 cm
    out from the hand (or tool); `free_cube`: a free body beside the robot; `loop`: a `<connect>` equality
    between the two fingers, as a linkage gripper's."""
    body = ""
    for i in range(1, n_joints + 1):
        axis = "0 0 1" if i % 2 else "0 1 0"
        body += (
            f'<body name="link{i}" pos="0 0 {0.1 if i == 1 else LINK_LENGTH}">'
            f'<joint name="joint{i}" axis="{axis}" range="-2.5 2.5" actuatorfrcrange="-80 80"/>'
            '<geom type="cylinder" size="0.03 0.06" pos="0 0 0.075"/>'
        )
    tool = "hand" if gripper != "none" else "tool"
    hand = f'<body name="{tool}" pos="0 0 {LINK_LENGTH}"><geom type="box" size="0.02 0.06 0.01" pos="0 0 0.01"/>'
    if site is not None:
        hand += f'<site name="{site}" pos="0 0 0.06"/>'
    pad = '<geom type="box" size="0.005 0.005 0.02" pos="0 {y} 0.04"/>'
    equality = ""
    if gripper in ("two_fingers", "mirrored"):
        for side, sign in (("left", 1), ("right", -1)):
            mirrored = gripper == "mirrored" and side == "right"  # on the left finger's axis, its range negated
            axis, span = (1, "-0.04 0") if mirrored else (sign, "0 0.04")
            hand += (
                f'<body name="finger_{side}" pos="0 0 0.02"><joint name="finger_{side}_joint" type="slide" '
                f'axis="0 {axis} 0" range="{span}" actuatorfrcrange="-20 20"/>{pad.format(y=0.005 * sign)}</body>'
            )
    elif gripper == "carriages":
        for side, sign in (("right", -1), ("left", 1)):
            hand += (
                f'<body name="carriage_{side}" pos="0 {0.023 * sign} 0.02"><joint name="{side}_carriage_joint" '
                f'type="slide" axis="0 {sign} 0" range="0 0.044"/>{pad.format(y=-0.005 * sign)}</body>'
            )
    elif gripper == "one_joint":
        for side, sign, joint in (("left", 1, "gripper_joint"), ("right", -1, "finger_right_joint")):
            hand += (
                f'<body name="finger_{side}" pos="0 {0.04 * sign} 0.02"><joint name="{joint}" type="slide" '
                f'axis="0 {-sign} 0" range="0 0.04" actuatorfrcrange="-20 20"/>{pad.format(y=0.005 * sign)}</body>'
            )
        equality = '<joint joint1="finger_right_joint" joint2="gripper_joint"/>'
        equality += '<connect body1="finger_left" body2="finger_right" anchor="0 0 0"/>' if loop else ""
    body += hand + "</body>" + "</body>" * n_joints
    cube = '<body name="cube" pos="0.4 0 0.02"><freejoint name="cube_free"/><geom type="box" size="0.02 0.02 0.02"/></body>'
    return (
        '<mujoco model="toy_arm">\n  <compiler angle="radian" autolimits="true"/>\n  <worldbody>\n'
        '    <body name="table" pos="0.4 0 -0.02"><geom type="box" size="0.6 0.6 0.02"/></body>\n'
        f'    <body name="base_link"><geom type="box" size="0.05 0.05 0.05" pos="0 0 0.05"/>{body}</body>\n'
        '    <body name="drawer_housing" pos="0.6 0.4 0.15"><geom type="box" size="0.15 0.15 0.15"/></body>\n'
        '    <body name="drawer" pos="0.6 0.4 0.35"><joint name="drawer_slide" type="slide" axis="-1 0 0" '
        'range="0 0.25"/><geom type="box" size="0.125 0.125 0.01"/></body>\n'
        f"    {cube if free_cube else ''}\n  </worldbody>\n"
        f"  <equality>{equality}</equality>\n</mujoco>\n"
    )


def write_mjcf(folder: Path, n_joints: int, gripper: str, **options) -> Path:
    """robot.xml in `folder`; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "robot.xml").write_text(arm_mjcf(n_joints, gripper, **options))
    return folder / "robot.xml"


def bimanual_mjcf(base: str = "lift") -> str:
    """A torso with two 4-joint arms (`arm_l_*` first, `arm_r_*`), each with a one-joint gripper named the
    ai_worker way (`gripper_l_joint1` drives fingers `gripper_l_r1` and `gripper_l_l1`, sides told by `r`/`l`
    only, and their tips `gripper_l_r2`, `gripper_l_l2` by coupled joints) and a 2-joint head, on `base`: lift (a prismatic joint from the world, as ROBOTIS's ai_worker)
    or free (a free joint with two wheels, as Rainbow's rby1). A cube rests beside the robot."""
    arms = ""
    for side, sign in (("l", 1), ("r", -1)):
        body = f'<body name="arm_{side}_link0" pos="0 {0.2 * sign} 0.1">'
        for i in range(1, 5):
            axis = "0 0 1" if i % 2 else "0 1 0"
            body += (
                f'<body name="arm_{side}_link{i}" pos="0 0 {LINK_LENGTH if i > 1 else 0.0}">'
                f'<joint name="arm_{side}_joint{i}" axis="{axis}" range="-2.5 2.5"/>'
                '<geom type="cylinder" size="0.03 0.06" pos="0 0 0.075"/>'
            )
        hand = (
            f'<body name="hand_{side}" pos="0 0 {LINK_LENGTH}"><geom type="box" size="0.02 0.06 0.01" pos="0 0 0.01"/>'
        )
        for finger, fsign, joint, tip in (("r", 1, "joint1", "joint3"), ("l", -1, "joint2", "joint4")):
            hand += (
                f'<body name="gripper_{side}_{finger}1" pos="0 {0.04 * fsign} 0.02"><joint name="gripper_{side}_{joint}" '
                f'type="slide" axis="0 {-fsign} 0" range="0 0.04"/><geom type="box" size="0.005 0.005 0.01"/>'
                f'<body name="gripper_{side}_{finger}2" pos="0 0 0.02"><joint name="gripper_{side}_{tip}" axis="1 0 0" '
                f'range="-0.1 0.1"/><geom type="box" size="0.005 0.005 0.02" pos="0 {0.005 * fsign} 0.02"/></body></body>'
            )
        arms += body + hand + "</body>" + "</body>" * 4 + "</body>"
    head = (
        '<body name="head_link1" pos="0 0 0.2"><joint name="head_joint1" axis="0 0 1" range="-1 1"/><geom type="sphere" size="0.02"/>'
        '<body name="head_link2"><joint name="head_joint2" axis="0 1 0" range="-1 1"/>'
        '<geom type="sphere" size="0.05"/></body></body>'
    )
    torso = '<geom type="box" size="0.1 0.25 0.1"/>' + arms + head
    if base == "lift":
        robot = f'<body name="torso" pos="0 0 0.8"><joint name="lift_joint" type="slide" axis="0 0 1" range="-0.5 0"/>{torso}</body>'
    else:
        wheels = "".join(
            f'<body name="wheel_{s}" pos="0 {0.25 * sign} 0.1"><joint name="{s}_wheel" axis="0 1 0"/>'
            '<geom type="cylinder" size="0.1 0.02" euler="1.5708 0 0"/></body>'
            for s, sign in (("l", 1), ("r", -1))
        )
        robot = (
            f'<body name="base"><freejoint name="world_j"/><geom type="box" size="0.2 0.2 0.05" pos="0 0 0.15"/>{wheels}'
            f'<body name="torso" pos="0 0 0.6"><joint name="torso_joint" axis="0 1 0" range="-1 1"/>{torso}</body></body>'
        )
    equality = "".join(
        f'<joint joint1="gripper_{side}_joint{j}" joint2="gripper_{side}_joint1"/>'
        for side in ("l", "r")
        for j in (2, 3, 4)
    )
    return (
        '<mujoco model="toy_bimanual">\n  <compiler angle="radian" autolimits="true"/>\n  <worldbody>\n'
        f"    {robot}\n"
        '    <body name="cube" pos="0.4 0 0.02"><freejoint name="cube_free"/><geom type="box" size="0.02 0.02 0.02"/></body>\n'
        f"  </worldbody>\n  <equality>{equality}</equality>\n</mujoco>\n"
    )


def linkage_gripper(arm: bool = True) -> str:
    """Menagerie's Robotiq 2F-85 as it is built, on the tool of a 6-joint arm (`arm`) or alone: on each side a
    driver carrying a coupler, and a spring link carrying a follower with the pad, the follower tied to the
    coupler by a `<connect>` loop; the right driver follows the left by an equality (the fingers close as it
    grows). A mocap body welded to the tool, as a teleoperation scene has it, closes a loop through the world."""
    bar = '<geom type="box" size="0.004 0.004 0.015" pos="0 0 0.015"/>'
    gripper = ""
    for side, sign in (("right", 1), ("left", -1)):
        axis = f'axis="{sign} 0 0"'  # a growing joint turns each side's links towards the middle
        gripper += (
            f'<body name="{side}_driver" pos="0 {0.03 * sign} 0.02"><joint name="{side}_driver_joint" {axis} '
            f'range="0 0.8"/>{bar}<body name="{side}_coupler" pos="0 0 0.03"><joint name="{side}_coupler_joint" '
            f'{axis} range="-1.57 0"/>{bar}</body></body>'
            f'<body name="{side}_spring_link" pos="0 {0.015 * sign} 0.03"><joint name="{side}_spring_link_joint" '
            f'{axis} range="-0.3 0.8"/>{bar}<body name="{side}_follower" pos="0 0 0.03"><joint '
            f'name="{side}_follower_joint" {axis} range="-0.87 0.87"/>{bar}<body name="{side}_pad" pos="0 0 0.03">'
            '<geom type="box" size="0.01 0.004 0.01"/></body></body></body>'
        )
    loops = "".join(
        f'<connect body1="{side}_follower" body2="{side}_coupler" anchor="0 0 0"/>' for side in ("right", "left")
    )
    equality = f'<joint joint1="right_driver_joint" joint2="left_driver_joint"/>{loops}'
    if not arm:
        return (
            '<mujoco model="gripper"><worldbody><body name="base"><geom type="box" size="0.02 0.04 0.01"/>'
            f"{gripper}</body></worldbody><equality>{equality}</equality></mujoco>"
        )
    tool = '<geom type="box" size="0.02 0.06 0.01" pos="0 0 0.01"/>'
    text = arm_mjcf(6, "none").replace(tool, tool + gripper, 1)
    text = text.replace("</worldbody>", '<body name="mocap" mocap="true" pos="0 0 1"/></worldbody>')
    return text.replace("<equality></equality>", f'<equality>{equality}<weld body1="mocap" body2="tool"/></equality>')


def mobile_mjcf(base: str = "free") -> str:
    """A mobile manipulator in a room: a chassis on two wheels (touching the floor, a plane of the world body) with
    a mast (a body of its own, fixed to the chassis), a 3-joint arm (yaw, then two pitches: it reaches sideways over a table when joint1 is +pi/2) and a
    one-joint gripper with a `pinch` site; beside its path a table (a body fixed in the world) with a cube on it.
    `base`: free (a `<freejoint/>`, as Menagerie's Stretch and TIAGo), fixed (no joint: the twin adds one, as for a
    URDF's root) or planar (two slides and a hinge, which the twin cannot place from a pose)."""
    joints = {
        "free": "<freejoint/>",
        "fixed": "",
        "planar": '<joint name="base_x" type="slide" axis="1 0 0"/><joint name="base_y" type="slide" axis="0 1 0"/>'
        '<joint name="base_yaw" axis="0 0 1"/>',
    }[base]
    wheels = "".join(
        f'<body name="wheel_{side}" pos="0 {0.22 * sign} 0.05"><joint name="wheel_{side}_joint" axis="0 1 0"/>'
        '<geom type="cylinder" size="0.05 0.02" euler="1.5708 0 0"/></body>'
        for side, sign in (("left", 1), ("right", -1))
    )
    fingers = "".join(
        f'<body name="finger_{side}" pos="0.05 {0.03 * sign} 0"><joint name="{joint}" type="slide" '
        f'axis="0 {-sign} 0" range="0 0.025"/><geom type="box" size="0.02 0.005 0.01"/></body>'
        for side, sign, joint in (("left", 1, "gripper_joint"), ("right", -1, "finger_right_joint"))
    )
    arm = (
        '<body name="link1" pos="0 0 0.35"><joint name="joint1" axis="0 0 1" range="-3 3"/>'
        '<geom type="cylinder" size="0.04 0.025" pos="0 0 0.025"/>'
        '<body name="link2" pos="0 0 0.05"><joint name="joint2" axis="0 1 0" range="-2 2"/>'
        '<geom type="capsule" size="0.03" fromto="0 0 0 0.4 0 0"/>'
        '<body name="link3" pos="0.4 0 0"><joint name="joint3" axis="0 1 0" range="-2.5 2.5"/>'
        '<geom type="capsule" size="0.025" fromto="0 0 0 0.3 0 0"/>'
        '<body name="hand" pos="0.3 0 0"><geom type="box" size="0.01 0.04 0.02" pos="0.01 0 0"/>'
        f'<site name="pinch" pos="0.05 0 0"/>{fingers}</body></body></body></body>'
    )
    return (
        '<mujoco model="toy_mobile">\n  <compiler angle="radian" autolimits="true"/>\n  <worldbody>\n'
        '    <geom name="floor" type="plane" size="10 10 0.1"/>\n'
        '    <body name="table" pos="1.5 0.6 0.25"><geom type="box" size="0.3 0.3 0.25"/></body>\n'
        '    <body name="cube" pos="1.5 0.85 0.52"><freejoint name="cube_free"/>'
        '<geom type="box" size="0.02 0.02 0.02"/></body>\n'
        f'    <body name="base_link">{joints}<geom type="box" size="0.25 0.2 0.1" pos="0 0 0.15"/>'
        f'<body name="mast" pos="0 0 0.25"><geom type="cylinder" size="0.03 0.175" pos="0 0 0.175"/>{arm}</body>'
        f"{wheels}</body>\n"
        "  </worldbody>\n"
        '  <equality><joint joint1="finger_right_joint" joint2="gripper_joint"/></equality>\n</mujoco>\n'
    )


MOBILE_JOINTS = ("joint1", "joint2", "joint3", "gripper_joint")  # mobile_mjcf's arm and gripper joints


def write_mobile_robot(folder: Path, base: str = "free") -> Path:
    """`mobile_mjcf(base)` described in `folder` (robot.xml, robot.yaml, objects.yaml: the arm and its gripper
    watched, the wheels and the mimic finger ignored, the table static, the cube an object); returns robot.yaml."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "robot.xml").write_text(mobile_mjcf(base))
    doc = {
        "mjcf": "robot.xml",
        "robot": {
            "base_body": "base_link",
            "arm_joints": list(MOBILE_JOINTS[:3]),
            "end_effector": {"body": "hand", "site": "pinch"},
            "gripper": {
                "kind": "one_joint",
                "joints": ["gripper_joint"],
                "fingers": {"left": "finger_left", "right": "finger_right"},
                "hand_bodies": ["hand"],
                "closed_above": 0.02,
            },
        },
        "ignored_joints": ["finger_right_joint", "wheel_left_joint", "wheel_right_joint"],
        "static": {"table": {"bodies": ["table"]}},
        "objects": {"cube": {"body": "cube"}},
    }
    (folder / "robot.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    catalog = {**OBJECTS, "entities": {"cube": "block", "table": "table"}}
    (folder / "objects.yaml").write_text(yaml.safe_dump(catalog, sort_keys=False))
    return folder / "robot.yaml"


TWO_ARM_LINK = 0.2  # two_arm_mjcf's upper arm and forearm
TWO_ARM_SHOULDER = 0.08  # its shoulder joint's height over the base
TWO_ARM_REACH = 0.1  # from its wrist joint to the grasp centre between the finger pads


def two_arm_mjcf(servos: bool = False) -> str:
    """ALOHA's layout, as Menagerie's aloha.xml names it: two arms facing each other across a table, each on a
    base of its own that hangs from the world (no shared torso), `left/` and `right/` before the same body and
    joint names, and a gripper whose `left_finger` follows `right_finger` by an equality; fingers close as the
    joint shrinks, on a rail from 0 to 0.041 m. Each arm: waist (z), shoulder, elbow and wrist_angle (y), links of
    TWO_ARM_LINK straight up; the table's top is at z = 0, in front of the arms (y from 0.1 to 0.5). `servos`:
    each gripper's position servo, as Menagerie's joint_position_actuators.xml has it: on the follower, commanded
    from 0.002 to 0.037 m (where ALOHA's software closes and opens it)."""
    arms = ""
    for side, x, turn in (("left", -0.4, ""), ("right", 0.4, ' quat="0 0 0 1"')):
        s = side + "/"
        fingers = "".join(
            f'<body name="{s}{finger}_finger_link" pos="0 {0.005 * sign} 0.02"><joint name="{s}{finger}_finger" '
            f'type="slide" axis="0 {sign} 0" range="0 0.041"/>'
            f'<geom type="box" size="0.005 0.005 0.02" pos="0 {0.005 * sign} 0.04"/></body>'
            for finger, sign in (("left", 1), ("right", -1))
        )
        arms += (
            f'    <body name="{s}base_link" pos="{x} 0 0"{turn}><geom type="box" size="0.04 0.04 0.02" pos="0 0 0.02"/>'
            f'<body name="{s}shoulder_link" pos="0 0 0.04"><joint name="{s}waist" axis="0 0 1" range="-3.14 3.14"/>'
            '<geom type="cylinder" size="0.03 0.02" pos="0 0 0.02"/>'
            f'<body name="{s}upper_arm_link" pos="0 0 {TWO_ARM_SHOULDER - 0.04}">'
            f'<joint name="{s}shoulder" axis="0 1 0" range="-3 3"/>'
            f'<geom type="capsule" size="0.02" fromto="0 0 0.03 0 0 {TWO_ARM_LINK - 0.03}"/>'
            f'<body name="{s}forearm_link" pos="0 0 {TWO_ARM_LINK}"><joint name="{s}elbow" axis="0 1 0" range="-3 3"/>'
            f'<geom type="capsule" size="0.02" fromto="0 0 0.03 0 0 {TWO_ARM_LINK - 0.03}"/>'
            f'<body name="{s}wrist_link" pos="0 0 {TWO_ARM_LINK}"><joint name="{s}wrist_angle" axis="0 1 0" range="-3 3"/>'
            '<geom type="cylinder" size="0.02 0.01" pos="0 0 0.015"/>'
            f'<body name="{s}gripper_base" pos="0 0 0.04"><geom type="box" size="0.02 0.05 0.01" pos="0 0 0.01"/>'
            f"{fingers}</body></body></body></body></body></body>\n"
        )
    equality = "".join(f'<joint joint1="{s}/left_finger" joint2="{s}/right_finger"/>' for s in ("left", "right"))
    actuators = "".join(
        f'<position name="{s}/gripper" joint="{s}/left_finger" ctrlrange="0.002 0.037" kp="2000" kv="124"/>'
        for s in ("left", "right")
    )
    actuators = f"  <actuator>{actuators}</actuator>\n" if servos else ""
    return (
        '<mujoco model="toy_aloha">\n  <compiler angle="radian" autolimits="true"/>\n  <worldbody>\n'
        '    <body name="table" pos="0 0.3 -0.02"><geom type="box" size="0.3 0.2 0.02"/></body>\n'
        f"{arms}  </worldbody>\n  <equality>{equality}</equality>\n{actuators}</mujoco>\n"
    )


def telescope_mjcf(telescope: bool = True) -> str:
    """Hello Robot's Stretch as Menagerie builds it: a base on a free joint with two wheels; a lift; a telescope
    (`telescope`) whose stages arm_l2, arm_l1 and arm_l0 follow arm_l3 by equalities and one tendon drives; a wrist
    yaw; and a gripper whose slide (gripper_slide, no geometry) turns two finger hinges by equalities (polycoef
    "0 10 0 0 0"), the fingers closing as it shrinks. Each finger carries a marker fixed to it (Stretch 3's
    `*_finger_aruco`) and a rubber tip on two sprung hinges no actuator drives. Every other joint is driven."""
    stages = ("arm_l3", "arm_l2", "arm_l1", "arm_l0") if telescope else ()
    fingers = "".join(
        f'<body name="finger_{side}" pos="{0.01 * sign} 0 0"><joint name="finger_{side}_open" axis="0 0 {-sign}" '
        'range="-0.6 0.6"/><geom type="box" size="0.005 0.04 0.01" pos="0 0.04 0"/>'
        f'<body name="finger_{side}_marker" pos="{0.006 * sign} 0.03 0"><geom type="box" size="0.001 0.01 0.01"/></body>'
        f'<body name="tip_{side}" pos="0 0.085 0"><joint name="tip_{side}_x" axis="1 0 0" stiffness="0.05"/>'
        f'<joint name="tip_{side}_y" axis="0 1 0" stiffness="0.05"/><geom type="box" size="0.006 0.005 0.012"/></body>'
        "</body>"
        for side, sign in (("left", 1), ("right", -1))
    )
    hand = (
        '<body name="wrist" pos="0 0.05 0"><joint name="wrist_yaw" axis="0 0 1" range="-1.75 4"/>'
        '<geom type="box" size="0.03 0.02 0.02"/><body name="slider" pos="0 0.03 0">'
        f'<joint name="gripper_slide" type="slide" axis="0 1 0" range="-0.005 0.04"/>'
        f'<inertial pos="0 0 0" mass="0.05" diaginertia="1e-5 1e-5 1e-5"/>{fingers}</body></body>'
    )
    arm = hand
    for stage in reversed(stages):  # each stage inside the one before it, l0 carrying the wrist
        arm = (
            f'<body name="link_{stage}" pos="0 0.01 0"><joint name="{stage}" type="slide" axis="0 1 0" range="0 0.13"/>'
            f'<geom type="box" size="0.02 0.15 0.02" pos="0 0.15 0"/>{arm}</body>'
        )
    wheels = "".join(
        f'<body name="wheel_{side}" pos="0 {0.17 * sign} 0.05"><joint name="wheel_{side}_joint" axis="0 1 0"/>'
        '<geom type="cylinder" size="0.05 0.02" euler="1.5708 0 0"/></body>'
        for side, sign in (("left", 1), ("right", -1))
    )
    equality = "".join(f'<joint joint1="{b}" joint2="{a}"/>' for a, b in zip(stages, stages[1:]))
    equality += "".join(
        f'<joint joint1="finger_{side}_open" joint2="gripper_slide" polycoef="0 10 0 0 0"/>'
        for side in ("left", "right")
    )
    tendon = "".join(f'<joint joint="{stage}" coef="1"/>' for stage in stages)
    actuators = '<position name="lift" joint="lift" kp="300" ctrlrange="0 1"/>'
    actuators += '<position name="extend" tendon="extend" kp="100" ctrlrange="0 0.52"/>' if telescope else ""
    actuators += "".join(
        f'<position name="{j}" joint="{j}" kp="10"/>' for j in ("wrist_yaw", "gripper_slide", "wheel_left_joint")
    )
    actuators += '<velocity name="wheel_right" joint="wheel_right_joint"/>'
    return (
        '<mujoco model="toy_stretch">\n  <compiler angle="radian" autolimits="true"/>\n  <worldbody>\n'
        '    <geom name="floor" type="plane" size="10 10 0.1"/>\n'
        '    <body name="base_link"><freejoint/><geom type="box" size="0.17 0.15 0.08" pos="0 0 0.1"/>'
        f'{wheels}<body name="mast" pos="0 0.1 0.2"><geom type="box" size="0.03 0.03 0.6" pos="0 0 0.6"/>'
        '<body name="carriage" pos="0 0.05 0.1"><joint name="lift" type="slide" axis="0 0 1" range="0 1"/>'
        f'<geom type="box" size="0.05 0.02 0.05"/>{arm}</body></body></body>\n'
        f"  </worldbody>\n  <equality>{equality}</equality>\n"
        + (f'  <tendon><fixed name="extend">{tendon}</fixed></tendon>\n' if telescope else "")
        + f"  <actuator>{actuators}</actuator>\n</mujoco>\n"
    )
