"""The kinematic twin against MuJoCo: a scripted pick-and-place episode checked frame by frame, privileged
contacts as a cross-check, a perceived box object added to a robot-only MJCF, and YAML/MJCF mismatches.

The episode is kinematic (joint positions from IK, the cube carried rigidly while grasped); only the twin
computes geometry, as it does on hardware.
"""

from __future__ import annotations

import copy
import dataclasses
import types
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml

from safety_monitor.errors import GroundingError
from safety_monitor.frames import Contact, Pose, RobotState, Wrench
from safety_monitor.grounding import _geomath
from safety_monitor.grounding import twin as twin_module
from safety_monitor.grounding.description import parse_robot_description
from safety_monitor.grounding.grounder import Grounder, load_default_grounder
from safety_monitor.grounding.motion import quat_to_matrix
from safety_monitor.grounding.semantics import PREDICATE_PROPERTIES, parse_object_catalog
from safety_monitor.grounding.thresholds import load_thresholds
from safety_monitor.grounding.twin import KinematicTwin

CONFIG = Path(__file__).resolve().parents[1] / "config"
RATE = 20.0


class Arm:
    """Forward and inverse kinematics of the workcell arm on a plain copy of the MJCF."""

    def __init__(self, robot):
        self.m = mujoco.MjModel.from_xml_path(str(robot.mjcf))
        self.d = mujoco.MjData(self.m)
        self.adr = [self.m.jnt_qposadr[self.m.joint(j).id] for j in robot.arm_joints]
        self.dof = [self.m.jnt_dofadr[self.m.joint(j).id] for j in robot.arm_joints]
        self.site = self.m.site(robot.ee_site).id

    def fk(self, q):
        self.d.qpos[self.adr] = q
        mujoco.mj_kinematics(self.m, self.d)
        return self.d.site_xpos[self.site].copy(), self.d.site_xmat[self.site].reshape(3, 3).copy()

    def ik(self, target, q0):
        """Grasp centre at `target`, gripper pointing down (damped least squares)."""
        q = np.array(q0, dtype=float)
        for _ in range(200):
            x, rot = self.fk(q)
            mujoco.mj_comPos(self.m, self.d)
            err = np.concatenate([target - x, np.cross(rot[:, 2], [0.0, 0.0, -1.0])])
            if np.linalg.norm(err) < 1e-9:
                break
            jp, jr = np.zeros((3, self.m.nv)), np.zeros((3, self.m.nv))
            mujoco.mj_jacSite(self.m, self.d, jp, jr, self.site)
            jac = np.vstack([jp[:, self.dof], jr[:, self.dof]])
            q += jac.T @ np.linalg.solve(jac @ jac.T + 1e-6 * np.eye(6), err)
        assert np.linalg.norm(self.fk(q)[0] - target) < 1e-5
        return q


def lerp(a, b, n):
    return [a + (b - a) * (i + 1) / n for i in range(n)]


@pytest.fixture(scope="module")
def episode():
    """Pick the cube, carry it 14 cm sideways and put it down, open, back off: 90 frames at 20 Hz."""
    grounder = load_default_grounder(RATE)
    robot = grounder.robot
    arm = Arm(robot)
    cube, place = np.array([0.45, 0.12, 0.425]), np.array([0.40, 0.0, 0.425])
    q_grasp = arm.ik(cube, [0, 0.5, 1.5, 0, 1.0, 0])
    q_above, q_lift = arm.ik(cube + [0, 0, 0.12], q_grasp), arm.ik(cube + [0, 0, 0.15], q_grasp)
    q_over = arm.ik(place + [0, 0, 0.15], q_lift)
    q_place = arm.ik(place, q_over)
    plan = [(q_above, 0.04)] * 5 + [(q, 0.04) for q in lerp(q_above, q_grasp, 10)]  # 0-14 approach
    plan += [(q_grasp, f) for f in (0.036, 0.032, 0.028, 0.024)] + [(q_grasp, 0.024)] * 11  # 15-29 close
    carry = lerp(q_grasp, q_lift, 10) + lerp(q_lift, q_over, 10) + lerp(q_over, q_place, 10)
    plan += [(q, 0.024) for q in carry]  # 30-59 lift, traverse, lower
    plan += [(q_place, 0.04)] * 20 + [(q, 0.04) for q in lerp(q_place, q_over, 10)]  # 60-79 open, 80-89 back off
    m = arm.m
    poses = {o: Pose(m.body(o).pos.copy(), m.body(o).quat.copy()) for o in robot.objects}
    states, rel = [], None
    for k, (q, fingers) in enumerate(plan):
        x, rot = arm.fk(q)
        if 30 <= k < 60:  # carried rigidly at the grasp-time offset
            if rel is None:
                p = poses["cube"]
                rel = (rot.T @ (p.position - x), rot.T @ quat_to_matrix(p.quaternion))
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, (rot @ rel[1]).ravel())
            poses["cube"] = Pose(x + rot @ rel[0], quat)
        states.append(
            RobotState(
                t=k / RATE,
                joint_names=robot.required_joints,
                joint_position=np.concatenate([q, [fingers, fingers, 0.0, 0.0]]),
                object_poses=dict(poses),
                wrench=Wrench(np.array([0.0, 0.0, -4.0]), np.zeros(3)),
            )
        )
    return grounder, arm, states, [grounder.step(s) for s in states]


def runs(frames, name):
    """Frame ranges [start, end) where `name` is true."""
    out, start = [], None
    for k, f in enumerate(frames + [None]):
        v = f is not None and f.values[name]
        if v and start is None:
            start = k
        if not v and start is not None:
            out.append((start, k))
            start = None
    return out


def test_grasp_release_and_settle_frame_by_frame(episode):
    _, _, _, frames = episode
    assert runs(frames, "object_grasped_raw") == [(16, 60)]  # fingers below 0.036 m and within clearance
    assert runs(frames, "object_grasped") == [(20, 64)]  # 5th frame of each raw edge
    assert runs(frames, "object_released") == [(60, 65)]  # gripper opens at 60 .. drop frame 64
    assert runs(frames, "object_dropped") == [(64, 65)]
    assert runs(frames, "object_left_gripper") == [(60, 90)]
    assert runs(frames, "object_settled") == [(68, 90)]  # 5 still frames once the grasp has ended
    assert all(f.values["object_sync"] for f in frames)
    assert not any(f.values["settle_timeout"] or f.values["forbidden_contact"] for f in frames)
    # the states carry no joint velocity or effort, so the workcell's rate and effort limits are never judged
    unjudged = {"joint_velocity_out_of_limits", "joint_effort_out_of_limits"}
    # no object velocity on frame 0 (contact is decided at once); then whether the cube was at rest before the
    # trace began is unseen until it has been seen at rest for the stability persistence (5 frames at 20 Hz)
    assert [k for k, f in enumerate(frames) if "object_stable" in f.unknown] == [0, 1, 2, 3, 4]
    assert all(f.unknown - {"object_stable"} == unjudged for f in frames)


def half_rate(states: list[RobotState]) -> list[RobotState]:
    """Perception at half the control rate: every other frame repeats the previous pose, one frame old."""
    return [
        st
        if k % 2 == 0
        else dataclasses.replace(
            st, object_poses=states[k - 1].object_poses, object_ages={o: 1 / RATE for o in st.object_poses}
        )
        for k, st in enumerate(states)
    ]


def test_an_older_pose_of_a_held_object_is_carried_with_the_hand(episode):
    """Perception at half the control rate. The hand moves up to 1.5 cm a frame while carrying, more than the
    gripper clearance."""
    grounder, _, states, _ = episode
    g = load_default_grounder(RATE)
    frames = [g.step(st) for st in half_rate(states)]
    assert runs(frames, "object_grasped_raw") == [(16, 60)]
    assert runs(frames, "object_grasped") == [(20, 64)]
    assert not any(f.values["forbidden_contact"] for f in frames)
    assert grounder.twin is not g.twin


def test_a_carried_object_is_placed_alike_in_one_c_call_and_through_python(episode, monkeypatch):
    """Where MuJoCo's library is found the twin places a carried object in one C call (`place_carried`, its
    mju_mat2Quat by address), else through compose_pose and the bound mju_mat2Quat: the same qpos bits."""
    _, _, states, _ = episode
    in_c, in_python = load_default_grounder(RATE), load_default_grounder(RATE)
    assert in_c.twin._mat2quat is not None
    in_python.twin._mat2quat = None
    calls = []
    place = _geomath.place_carried
    monkeypatch.setattr(_geomath, "place_carried", lambda *args: calls.append(args[1]) or place(*args))
    for st in half_rate(states):
        assert in_c.step(st) == in_python.step(st)
        assert in_c.twin.data.qpos.tobytes() == in_python.twin.data.qpos.tobytes()
    assert len(calls) >= 10  # the frames repeating a pose while the cube is held
    with pytest.raises(ValueError, match="place_carried: address 99 is outside qpos"):
        place(in_c.twin.data.qpos, 99, np.zeros(3), np.eye(3), np.zeros(3), np.eye(3), in_c.twin._mat2quat)


# every MjData array mj_kinematics writes
KINEMATICS = twin_module._KINEMATICS  # what mj_kinematics writes for a body, its joints, geoms and sites
needs_direct = pytest.mark.skipif(
    getattr(_geomath, "MUJOCO_HEADER", 0) != mujoco.mj_version(), reason="kernels built without this MuJoCo's headers"
)


def kinematics(d: mujoco.MjData) -> list[bytes]:
    return [getattr(d, name).tobytes() for name in KINEMATICS]


@needs_direct
def test_a_carried_objects_kinematics_redone_alone_are_a_whole_mj_kinematics(episode, monkeypatch):
    """After a carried object's placement the twin redoes its body's kinematics alone (free_body_kinematics), not
    a second whole mj_kinematics: MjData's kinematics are the same bits on every frame, into the carry and out of it."""
    _, _, states, _ = episode
    alone, whole = load_default_grounder(RATE), load_default_grounder(RATE)
    assert alone.twin._free_kinematics is not None
    whole.twin._free_kinematics = None
    calls = []
    redo = _geomath.free_body_kinematics
    monkeypatch.setattr(_geomath, "free_body_kinematics", lambda *args: calls.append(args[1]) or redo(*args))
    frames = half_rate(states)  # (the frames repeating a pose while the cube is held place it)
    for st in frames:
        assert alone.step(st) == whole.step(st)
        assert kinematics(alone.twin.data) == kinematics(whole.twin.data)
    assert 10 <= len(calls) < len(frames)


@needs_direct
def test_free_body_kinematics_gives_mj_kinematics_bits_for_every_object_and_refuses_other_bodies():
    twin = load_default_grounder(RATE).twin
    m, d = twin.model, twin.data
    rng = np.random.default_rng(3)
    for o, adr in twin._object_qpos.items():
        body = twin._object_bodies[o]
        for _ in range(200):
            d.qpos[adr : adr + 3] = rng.uniform(-2, 2, 3)
            quat = rng.normal(size=4)  # not quite unit length: both normalizations count
            d.qpos[adr + 3 : adr + 7] = quat / np.linalg.norm(quat) * (1 + rng.normal() * 1e-9)
            mujoco.mj_kinematics(m, d)
            want = kinematics(d)
            placed = d.qpos[adr : adr + 7].copy()
            d.qpos[adr : adr + 3] = rng.uniform(-2, 2, 3)
            mujoco.mj_kinematics(m, d)  # everything where the last frame left it, this object elsewhere
            d.qpos[adr : adr + 7] = placed
            _geomath.free_body_kinematics(twin._free_kinematics, body)
            assert kinematics(d) == want, o
    arm_link = int(m.jnt_bodyid[m.joint(twin.robot.arm_joints[0]).id])
    for body in (0, arm_link, m.nbody):
        with pytest.raises(ValueError, match=f"free_body_kinematics: body {body} is not a free body without children"):
            _geomath.free_body_kinematics(twin._free_kinematics, body)


@needs_direct
@pytest.mark.parametrize(
    ("xml", "alone"),
    [
        ("<body name='box'><freejoint/><geom type='box' size='.1 .1 .1'/></body>", True),
        ("<body name='box'><freejoint/><geom type='box' size='.1 .1 .1'/><body><geom size='.1'/></body></body>", False),
        ("<body name='box'><joint type='slide'/><joint type='hinge'/><geom type='box' size='.1 .1 .1'/></body>", False),
    ],
    ids=["free body", "a body below it", "other joints"],
)
@pytest.mark.parametrize("sleeps", [False, True])
def test_a_carried_objects_kinematics_are_redone_alone_only_where_nothing_else_moves_with_it(xml, alone, sleeps):
    """Only a body hanging from the world by its free joint alone, with no body below it, in a model that does not
    sleep (mj_kinematics then skips bodies), has its kinematics redone alone: any other keeps the whole call."""
    option = "<option><flag sleep='enable'/></option>" if sleeps else ""
    m = mujoco.MjModel.from_xml_string(f"<mujoco>{option}<worldbody>{xml}</worldbody></mujoco>")
    robot = types.SimpleNamespace(objects={"box": types.SimpleNamespace(body=None)})
    calls = twin_module._free_body_calls(m, mujoco.MjData(m), robot)
    assert (calls is not None) == (alone and not sleeps)


def test_the_twin_places_a_held_object_from_the_grounders_kept_arrays_uncopied(episode):
    """Perception at a quarter of the control rate: a held pose two and three frames old lies between recorded
    end-effector samples, so the grounder keeps its placement and hands the twin those arrays again, uncopied.
    They are read-only: neither of the twin's placing paths writes them, and both place alike."""
    _, _, states, _ = episode
    quarter = [
        st
        if k % 4 == 0
        else dataclasses.replace(
            st, object_poses=states[k - k % 4].object_poses, object_ages={o: (k % 4) / RATE for o in st.object_poses}
        )
        for k, st in enumerate(states)
    ]
    in_c, in_python = load_default_grounder(RATE), load_default_grounder(RATE)
    in_python.twin._mat2quat = None
    for st in quarter:
        assert in_c.step(st) == in_python.step(st)
    kept = [a for g in (in_c, in_python) for _, placed in g._carry_memo.values() for a in placed]
    assert kept and not any(a.flags.writeable for a in kept)


def test_a_pose_measured_between_frames_is_carried_from_where_the_hand_was_then(episode):
    """Every pose measured a fifth of a frame before its frame (an unsynchronised camera): the hand was
    80 % of the way from the previous frame's pose, up to 1.2 cm beyond it, more than the gripper
    clearance. The held cube stays in the fingers, and a pose gap mid-carry, read while the last pose
    ages up to its limit, does not drop it."""
    grounder, arm, states, _ = episode
    cube0 = states[30].object_poses["cube"]
    x0, rot0 = arm.fk(states[30].joint_position[:6])
    rel = (rot0.T @ (cube0.position - x0), rot0.T @ quat_to_matrix(cube0.quaternion))
    early = 0.2 / RATE

    def measured(k):
        """The cube's pose at time t_k - early (carried rigidly from frame 30 to 59)."""
        if not 31 <= k < 60:
            return states[k].object_poses["cube"]
        q = 0.8 * states[k].joint_position[:6] + 0.2 * states[k - 1].joint_position[:6]
        x, rot = arm.fk(q)
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, (rot @ rel[1]).ravel())
        return Pose(x + rot @ rel[0], quat)

    def frames(gap=range(0)):
        g = load_default_grounder(RATE)
        out, last = [], None
        for k, st in enumerate(states):
            if k not in gap:
                last = (k, {**st.object_poses, "cube": measured(k)})
            age = early + (k - last[0]) / RATE
            out.append(g.step(dataclasses.replace(st, object_poses=last[1], object_ages={"cube": age})))
        return out

    unsynchronised = frames()
    assert runs(unsynchronised, "object_grasped_raw") == [(16, 60)]
    assert runs(unsynchronised, "object_grasped") == [(20, 64)]
    gapped = frames(gap=range(36, 46))  # the last pose ages for 4 frames, then is too old for 6
    assert runs(gapped, "object_dropped") == [(64, 65)]
    assert [k for k, f in enumerate(gapped) if "object_grasped" in f.unknown] == list(range(40, 50))
    assert all(gapped[k].values["object_grasped_raw"] for k in (*range(36, 40), *range(46, 60)))


def test_skill_onsets_in_the_episode(episode):
    _, _, _, frames = episode
    pick, place = runs(frames, "skill_pick_onset"), runs(frames, "skill_place_onset")
    assert len(pick) == 1 and 5 <= pick[0][0] < 15  # while descending onto the cube
    assert len(place) == 1 and 40 <= place[0][0] < 60  # while lowering the carried cube
    assert frames[pick[0][0]].values["preconditions_pick"] and frames[place[0][0]].values["preconditions_place"]
    assert runs(frames, "skill_pick_onset_end")[1][0] == 20  # the pick completes with the grasp


def test_twin_geometry_matches_forward_kinematics_and_privileged_contacts(episode):
    grounder, arm, states, _ = episode
    twin = grounder.twin
    sim = mujoco.MjModel.from_xml_path(str(grounder.robot.mjcf))  # the simulator's own contact settings
    data = mujoco.MjData(sim)
    contact_limit = grounder.thresholds.distances_m.contact
    checked = 0
    for st in states[::3]:
        geo = twin.compute(st.joint_names, st.joint_position, st.object_poses)
        x, rot = arm.fk(st.joint_position[:6])
        np.testing.assert_allclose(geo.ee_position, x, atol=1e-9)
        np.testing.assert_allclose(geo.ee_rotation, rot, atol=1e-9)
        for name, q in zip(st.joint_names, st.joint_position):
            data.qpos[sim.jnt_qposadr[sim.joint(name).id]] = q
        for o, p in st.object_poses.items():
            adr = sim.jnt_qposadr[sim.body(o).jntadr[0]]
            data.qpos[adr : adr + 7] = np.concatenate([p.position, p.quaternion])
        mujoco.mj_kinematics(sim, data)
        mujoco.mj_collision(sim, data)
        privileged = [
            Contact(sim.body(sim.geom_bodyid[g1]).name, sim.body(sim.geom_bodyid[g2]).name, float(dist))
            for (g1, g2), dist in zip(data.contact.geom, data.contact.dist)
            if dist <= 0.0
        ]
        truth = twin.body_contacts(privileged)
        for a, row in truth.items():
            for b in row:
                if grounder.robot.owner(a) != grounder.robot.owner(b):
                    assert geo.gap(a, b) <= contact_limit, (st.t, a, b)
                    checked += 1
        for a, row in geo.gaps.items():  # every penetration the twin sees, the simulator sees too
            for b, gap in row.items():
                if gap < -1e-6:
                    assert b in truth.get(a, {}), (st.t, a, b, gap)
    assert checked > 20


@pytest.mark.parametrize("opening", [0.0304, 0.035, 0.04])
def test_positive_cylinder_box_gaps_are_measured(episode, opening):
    """The mug's cylinder between the finger pads: gap = finger opening - radius (0.03 m)."""
    grounder, arm, _, _ = episode
    q = arm.ik(np.array([0.35, -0.15, 0.5]), [0, 0.5, 1.5, 0, 1.0, 0])
    x, _ = arm.fk(q)
    joints = np.concatenate([q, [opening, opening, 0.0, 0.0]])
    mug = Pose(x.copy(), np.array([1.0, 0.0, 0.0, 0.0]))  # axis vertical, along the fingers
    geo = grounder.twin.compute(grounder.robot.required_joints, joints, {"mug": mug})
    for finger in ("finger_left", "finger_right"):
        assert geo.gap(finger, "mug") == pytest.approx(opening - 0.03, abs=2e-4)


MINI_MJCF = """
<mujoco>
  <worldbody>
    <body name="bench" pos="0 0 0.2"><geom type="box" size="0.5 0.5 0.2"/></body>
    <body name="base" pos="0 0 0.4">
      <geom type="cylinder" size="0.05 0.02"/>
      <body name="link" pos="0 0 0.3">
        <joint name="j1" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.02"/>
        <body name="palm" pos="0.2 0 0" quat="0 1 0 0">
          <geom type="box" size="0.01 0.04 0.01"/>
          <site name="tcp" pos="0 0 0.05"/>
          <body name="fl" pos="0 0 0.02"><joint name="jl" type="slide" axis="0 1 0" range="0 0.04"/>
            <geom type="box" size="0.005 0.005 0.03" pos="0 0.005 0.03"/></body>
          <body name="fr" pos="0 0 0.02"><joint name="jr" type="slide" axis="0 -1 0" range="0 0.04"/>
            <geom type="box" size="0.005 0.005 0.03" pos="0 -0.005 0.03"/></body>
        </body>
      </body>
    </body>
  </worldbody>
  <contact><exclude body1="fl" body2="fr"/></contact>
</mujoco>
"""


def test_a_perceived_box_object_is_added_to_a_robot_only_mjcf(tmp_path):
    (tmp_path / "mini.xml").write_text(MINI_MJCF)
    robot = parse_robot_description(
        {
            "mjcf": "mini.xml",
            "robot": {
                "base_body": "base",
                "arm_joints": ["j1"],
                "end_effector": {"body": "palm", "site": "tcp"},
                "gripper": {
                    "kind": "two_fingers",
                    "joints": ["jl", "jr"],
                    "fingers": {"left": "fl", "right": "fr"},
                    "hand_bodies": ["palm"],
                    "closed_below": 0.03,
                },
            },
            "static": {"bench": {"bodies": ["bench"]}},
            "objects": {"box_a": {"box": [0.02, 0.02, 0.02]}},
        },
        "mini robot",
        base_dir=tmp_path,
    )
    catalog = parse_object_catalog(
        {
            "properties": {"affordance": list(PREDICATE_PROPERTIES)},
            "kinds": {"block": {"properties": ["graspable"]}, "bench": {"properties": ["support"]}},
            "entities": {"box_a": "block", "bench": "bench"},
        },
        "mini catalog",
    )
    g = Grounder(robot, catalog, load_thresholds(CONFIG / "thresholds.yaml"), RATE)
    tcp = np.array([0.2, 0.0, 0.65])
    frames = [
        g.step(
            RobotState(
                t=k / RATE,
                joint_names=("j1", "jl", "jr"),
                joint_position=np.array([0.0, 0.019, 0.019]),
                object_poses={"box_a": Pose(tcp, np.array([1.0, 0, 0, 0]))},
            )
        )
        for k in range(6)
    ]
    geo = g.twin.compute(
        ("j1", "jl", "jr"), np.array([0.0, 0.019, 0.019]), {"box_a": Pose(tcp, np.array([1.0, 0, 0, 0]))}
    )
    assert geo.gap("finger_left", "box_a") == pytest.approx(-0.001, abs=1e-6)
    assert geo.gap("finger_right", "box_a") == pytest.approx(-0.001, abs=1e-6)
    np.testing.assert_allclose(geo.ee_position, tcp, atol=1e-6)
    assert [f.values["object_grasped"] for f in frames] == [False] * 4 + [True] * 2


def _rename_first_arm_joint(doc):
    """arm_joint1 -> arm_joint9 wherever robot.yaml names it, so only the model disagrees."""
    doc["robot"]["arm_joints"][0] = "arm_joint9"
    doc["joint_limits"]["arm_joint9"] = doc["joint_limits"].pop("arm_joint1")


def _workcell_doc():
    return yaml.safe_load((CONFIG / "robot.yaml").read_text())


@pytest.mark.parametrize(
    "edit, message",
    [
        (_rename_first_arm_joint, "arm_joint9"),
        (lambda d: d["fixtures"]["drawer"].__setitem__("range", [0.0, 0.5]), "outside the MJCF range"),
        (lambda d: d["objects"].__setitem__("mug", {"body": "table"}), "no free joint"),
        (lambda d: d["robot"]["end_effector"].__setitem__("site", "tool0"), "tool0"),
        (lambda d: d["static"]["bin"]["interior"].__setitem__("body", "bucket"), "bucket"),
    ],
)
def test_robot_yaml_that_does_not_match_its_mjcf(edit, message):
    doc = copy.deepcopy(_workcell_doc())
    edit(doc)
    robot = parse_robot_description(doc, "robot.yaml", base_dir=CONFIG)
    with pytest.raises(GroundingError, match=message):
        KinematicTwin(robot, 0.05)


TELESCOPE_MJCF = """<mujoco><worldbody><body name="base"><geom type="box" size="0.05 0.05 0.05"/>
  <body name="s3"><joint name="l3" type="slide" axis="1 0 0" range="0 0.1"/><geom type="box" size="0.05 0.01 0.01"/>
  <body name="s2"><joint name="l2" type="slide" axis="1 0 0" range="0 0.1"/><geom type="box" size="0.05 0.01 0.01"/>
  <body name="s1"><joint name="l1" type="slide" axis="1 0 0" range="0 0.1"/><geom type="box" size="0.05 0.01 0.01"/>
  <body name="s0"><joint name="l0" type="slide" axis="1 0 0" range="0 0.1"/><geom type="box" size="0.05 0.01 0.01"/>
    <site name="tip" pos="0.05 0 0"/></body></body></body></body></body></worldbody>
  <equality><joint joint1="l0" joint2="l1"/><joint joint1="l1" joint2="l2"/><joint joint1="l2" joint2="l3"/></equality>
</mujoco>"""


def test_a_chain_of_coupled_joints_three_deep_is_set_in_one_frame(tmp_path):
    """A telescope whose stages follow one another (Menagerie's Stretch arm: l0 follows l1, l1 follows l2, l2 follows
    the driven l3, in that order in the file): every stage is set from this frame's leader, the tip not a frame
    behind."""
    (tmp_path / "telescope.xml").write_text(TELESCOPE_MJCF)
    robot = parse_robot_description(
        {
            "mjcf": "telescope.xml",
            "robot": {
                "base_body": "base",
                "arm_joints": ["l3"],
                "end_effector": {"body": "s0", "site": "tip"},
                "gripper": {"kind": "none"},
            },
            "ignored_joints": ["l2", "l1", "l0"],
        },
        str(tmp_path / "robot.yaml"),
        base_dir=tmp_path,
    )
    twin = KinematicTwin(robot, 0.1)
    tip = twin.compute(("l3",), np.array([0.1]), {}).ee_position
    assert tip[0] == pytest.approx(4 * 0.1 + 0.05)


@needs_direct
def test_a_kernel_that_does_not_retrace_this_mujocos_kinematics_is_not_used(monkeypatch):
    """The kernel retraces MuJoCo's steps for a free body: it is tried once when the twin is built, and one that does
    not give the loaded MuJoCo's mj_kinematics (as another release's might not) leaves the whole call in place."""
    m = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body name='box'><freejoint/><geom type='box' size='.1 .1 .1'/></body></worldbody></mujoco>"
    )
    robot = types.SimpleNamespace(objects={"box": types.SimpleNamespace(body=None)})
    assert twin_module._free_body_calls(m, mujoco.MjData(m), robot) is not None
    monkeypatch.setattr(_geomath, "free_body_kinematics", lambda calls, body: None)  # leaves the body elsewhere
    assert twin_module._free_body_calls(m, mujoco.MjData(m), robot) is None
