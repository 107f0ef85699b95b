"""Small MJCF robots written by the tests, the MJCF twins of urdf_robots' arms (same bodies, joints, limits and
collision geometry), in the ways Menagerie models differ from a URDF: fingers coupled by an `<equality><joint>`
constraint rather than `<mimic>`, a grasp-centre site, free bodies beside the robot, kinematic loops."""

from __future__ import annotations

from pathlib import Path

from urdf_robots import LINK_LENGTH


def arm_mjcf(n_joints: int, gripper: str, site: str | None = None, free_cube: bool = False, loop: bool = False) -> str:
    """An arm of `n_joints` hinge joints (axes z, y alternating) straight up from a base on a table, with a
    drawer fixture, and `gripper`: two_fingers (closes as its joints shrink), one_joint (the right finger
    follows the left by an equality; closes as the joint grows) or none. `site`: a site of that name 6 cm
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
    if gripper == "two_fingers":
        for side, sign in (("left", 1), ("right", -1)):
            hand += (
                f'<body name="finger_{side}" pos="0 0 0.02"><joint name="finger_{side}_joint" type="slide" '
                f'axis="0 {sign} 0" range="0 0.04" actuatorfrcrange="-20 20"/>{pad.format(y=0.005 * sign)}</body>'
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
