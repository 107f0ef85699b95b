"""The workcell MJCF contract, the RobotState it reports, seeding, and the arm controller."""

from __future__ import annotations

import itertools

import mujoco
import numpy as np
import pytest

from safety_monitor.errors import SafetyMonitorError
from safety_monitor.sim.controller import ArmController, hand_down, hand_forward
from safety_monitor.sim.runner import Episode, run_episode
from safety_monitor.sim.workcell import JOINT_NAMES, OBJECTS, POSE_RATE_HZ, SEED_JITTER_M, Workcell, workcell_path

MODEL = mujoco.MjModel.from_xml_path(workcell_path())


def test_contract_names_exist_with_their_types_and_ranges():
    m = MODEL
    hinge, slide, free = (
        int(t) for t in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE, mujoco.mjtJoint.mjJNT_FREE)
    )
    for i in range(1, 7):
        assert m.jnt_type[m.joint(f"arm_joint{i}").id] == hinge
        m.body(f"link{i}")
    for side in ("left", "right"):
        j = m.joint(f"finger_{side}_joint").id
        assert m.jnt_type[j] == slide and tuple(m.jnt_range[j]) == (0.0, 0.04)
        m.body(f"finger_{side}")
    assert tuple(m.jnt_range[m.joint("drawer_slide").id]) == (0.0, 0.25)
    assert tuple(np.round(m.jnt_range[m.joint("cabinet_hinge").id], 2)) == (0.0, 1.57)
    assert m.body(m.jnt_bodyid[m.joint("drawer_slide").id]).name == "drawer"
    assert m.body(m.jnt_bodyid[m.joint("cabinet_hinge").id]).name == "cabinet_door"
    for body in ("table", "cabinet", "bin", "hand"):
        m.body(body)
    for o in OBJECTS:
        assert m.jnt_type[m.joint(f"{o}_free").id] == free and m.body(m.jnt_bodyid[m.joint(f"{o}_free").id]).name == o
    for sensor in ("wrist_force", "wrist_torque"):
        assert m.site(int(m.sensor(sensor).objid[0])).name == "ft_site"
    assert m.site("ee_site").bodyid == m.body("hand").id


def test_physics_settings_allow_a_real_grasp():
    m = MODEL
    assert m.opt.timestep == 0.002 and m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    assert np.allclose(m.opt.gravity, (0, 0, -9.81))
    gripped = {m.body(b).id for b in (*OBJECTS, "finger_left", "finger_right")}
    for g in range(m.ngeom):
        if m.geom_bodyid[g] in gripped:
            assert m.geom_condim[g] >= 4 and m.geom_friction[g, 0] >= 1.0
    assert all(m.dof_damping[m.joint(j).dofadr[0]] > 0 for j in JOINT_NAMES)
    assert not any(m.geom_type == mujoco.mjtGeom.mjGEOM_MESH)


def test_robot_state_reports_joints_wrench_contacts_and_50hz_poses():
    cell = Workcell(seed=0)
    ages, samples = [], []
    for _ in range(25):
        cell.step()
        s = cell.robot_state()
        ages.append(s.object_ages["cube"])
        samples.append(s.object_poses["cube"].position.copy())
    assert s.joint_names == JOINT_NAMES and s.joint_position.shape == (len(JOINT_NAMES),)
    assert s.wrench is not None and s.wrench_age == 0.0
    assert np.linalg.norm(s.wrench.force) > 1.0  # the hand's weight hangs on the sensor
    assert {"cube", "table"} in [{c.body1, c.body2} for c in s.contacts]
    period = round(500 / POSE_RATE_HZ)
    assert ages[period - 1] == pytest.approx(0.0) and ages[period - 2] == pytest.approx((period - 1) * 0.002)
    assert all(b > a for a, b in zip(ages[: period - 1], ages[1 : period - 1]))  # ages grow between samples
    assert set(OBJECTS) == set(s.object_poses)


def test_seed_is_deterministic_and_only_jitters_object_starts():
    a, b, c = Workcell(seed=7), Workcell(seed=7), Workcell(seed=8)
    pa, pb, pc = ({o: w.object_position(o) for o in OBJECTS} for w in (a, b, c))
    d = mujoco.MjData(MODEL)  # positions written in the MJCF
    mujoco.mj_forward(MODEL, d)
    for o in OBJECTS:
        assert np.array_equal(pa[o], pb[o]) and not np.array_equal(pa[o], pc[o])
        assert np.all(np.abs(pa[o][:2] - d.body(o).xpos[:2]) <= SEED_JITTER_M)
    first = [s.joint_position for s in itertools.islice(run_episode("pick_and_place_cube", seed=3), 300)]
    again = [s.joint_position for s in itertools.islice(run_episode("pick_and_place_cube", seed=3), 300)]
    assert all(np.array_equal(x, y) for x, y in zip(first, again))


def test_ik_reaches_poses_and_reports_forward_kinematics():
    cell = Workcell(seed=0)
    ctrl = ArmController(cell)
    position, rotation = ctrl.pose_of(ctrl.q)
    assert np.allclose(position, ctrl.target_position, atol=1e-3) and np.allclose(rotation, hand_down(), atol=1e-3)
    for target, orient in (((0.5, -0.2, 0.5), hand_down(0.7)), ((0.35, -0.3, 0.47), hand_forward())):
        ctrl.target_position, ctrl.target_rotation = np.array(target), orient
        for _ in range(800):
            ctrl.update()
            cell.step()
        assert np.linalg.norm(cell.ee_position() - target) < 0.01
        assert np.allclose(cell.data.site_xmat[cell.ee_site].reshape(3, 3), orient, atol=0.05)


def test_blocked_arm_reference_leads_the_hand_by_at_most_max_lead():
    cell = Workcell(seed=0)
    ctrl = ArmController(cell, max_lead=0.03)
    ctrl.target_position = np.array([0.3, 0.0, 0.2])  # 20 cm below the table top
    leads = []
    for _ in range(1500):
        ctrl.update()
        cell.step()
        leads.append(np.linalg.norm(ctrl.pose_of(ctrl.q)[0] - cell.ee_position()))
    assert cell.ee_position()[2] > 0.40  # blocked by the table
    assert np.linalg.norm(cell.robot_state().wrench.force) > 40.0  # and pressing on it
    assert max(leads[-500:]) < 0.035
    ctrl.target_position = np.array([0.3, 0.0, 0.6])
    for _ in range(1000):
        ctrl.update()
        cell.step()
    assert cell.ee_position()[2] > 0.55


def test_unknown_task_or_fault_or_mismatch_is_a_clear_error():
    with pytest.raises(SafetyMonitorError, match="unknown task 'juggle'"):
        Episode("juggle")
    with pytest.raises(SafetyMonitorError, match="unknown fault 'gremlin'"):
        Episode(fault="gremlin")
    with pytest.raises(SafetyMonitorError, match="defined on task"):
        Episode("open_drawer", "slip")
    with pytest.raises(SafetyMonitorError, match="stride"):
        next(run_episode("open_drawer", stride=0))
