"""An MJCF robot model as a kinematic tree (`robot init --mjcf`): compiled by MuJoCo, so that what is read
is what the twin will load (included files, default classes, `autolimits`), and every failure is one line
naming the file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from safety_monitor.errors import GroundingError
from safety_monitor.grounding.kinematic_tree import MOVING, JointKind, KinematicTree, ModelFormat, TreeJoint
from safety_monitor.grounding.twin import mujoco_message, mujoco_warnings
from safety_monitor.mujoco_gl import mujoco

_KINDS = {
    int(mujoco.mjtJoint.mjJNT_FREE): JointKind.FLOATING,
    int(mujoco.mjtJoint.mjJNT_BALL): JointKind.BALL,
    int(mujoco.mjtJoint.mjJNT_SLIDE): JointKind.PRISMATIC,
    int(mujoco.mjtJoint.mjJNT_HINGE): JointKind.REVOLUTE,
}
_LOOPS = (int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD))
_ON_JOINT = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))


def load_mjcf_tree(path: Path) -> KinematicTree:
    """The MJCF at `path`, compiled; a GroundingError naming the file when it cannot be read or compiled."""
    if not path.is_file():
        raise GroundingError(f"cannot read MJCF {str(path)!r}: {'a folder' if path.is_dir() else 'no such file'}")
    try:
        with mujoco_warnings():
            spec = mujoco.MjSpec.from_file(str(path))
            spec.compiler.fusestatic = False  # as the twin compiles it: every body kept, to be named
            model = spec.compile()
    except Exception as exc:  # MuJoCo raises ValueError with the parser's or the compiler's message
        raise GroundingError(f"{path}: MuJoCo cannot load this MJCF: {mujoco_message(exc)}") from None
    return tree_of_model(model, path)


def tree_of_model(m: mujoco.MjModel, path: Path) -> KinematicTree:
    """Every body hangs from its parent by its joints (a body with none, by a fixed joint named after it);
    an active joint equality between two joints makes the first follow the second; a joint neither an actuator
    nor a coupling moves is passive, where every actuator says which joints it moves."""
    body = [m.body(b).name or f"body {b}" for b in range(m.nbody)]
    leaders = {
        int(m.eq_obj1id[e]): m.joint(int(m.eq_obj2id[e])).name
        for e in range(m.neq)
        if m.eq_type[e] == int(mujoco.mjtEq.mjEQ_JOINT) and m.eq_obj2id[e] >= 0 and m.eq_active0[e]
    }
    coupled = set(leaders) | {m.joint(leader).id for leader in leaders.values()}
    joints: dict[str, TreeJoint] = {}
    driven, passive = _driven(m), set()
    for b in range(1, m.nbody):
        parent = body[int(m.body_parentid[b])]
        first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
        if count == 0:
            name = f"{body[b]} (fixed)"
            joints[name] = TreeJoint(name, JointKind.FIXED, parent, body[b], None, None, None)
        for j in range(first, first + count):
            kind = _KINDS[int(m.jnt_type[j])]
            limited = bool(m.jnt_limited[j]) and kind in (JointKind.REVOLUTE, JointKind.PRISMATIC)
            if kind is JointKind.REVOLUTE and not limited:
                kind = JointKind.CONTINUOUS
            name = m.joint(j).name or f"joint {j}"
            lower, upper = (float(x) for x in m.jnt_range[j]) if limited else (None, None)
            axis = np.zeros(3)
            mujoco.mju_rotVecQuat(axis, m.jnt_axis[j], m.body_quat[b])  # the child's frame -> its parent's
            x, y, z = (float(v) for v in axis)
            joints[name] = TreeJoint(name, kind, parent, body[b], lower, upper, leaders.get(j), (x, y, z))
            if driven is not None and j not in driven | coupled and kind in MOVING:
                passive.add(name)
    sites = {m.site(s).name: body[int(m.site_bodyid[s])] for s in range(m.nsite) if m.site(s).name}
    loops = tuple(
        (body[int(m.eq_obj1id[e])], body[int(m.eq_obj2id[e])])
        for e in range(m.neq)
        if m.eq_type[e] in _LOOPS and m.eq_objtype[e] == int(mujoco.mjtObj.mjOBJ_BODY) and m.eq_active0[e]
    )
    model_name = m.names[: m.names.find(b"\0")].decode() or path.stem
    return KinematicTree(path, model_name, ModelFormat.MJCF, body[0], joints, sites, loops, frozenset(passive))


def _driven(m: mujoco.MjModel) -> set[int] | None:
    """The joints the actuators move, through the joint or a fixed tendon of joints (Stretch's telescope); None
    when that says nothing: no actuator, or one that drives a site, a body or a slider-crank."""
    if not m.nu:
        return None
    out: set[int] = set()
    for a in range(m.nu):
        kind, target = int(m.actuator_trntype[a]), int(m.actuator_trnid[a, 0])
        if kind in _ON_JOINT:
            out.add(target)
        elif kind == int(mujoco.mjtTrn.mjTRN_TENDON):
            wraps = range(int(m.tendon_adr[target]), int(m.tendon_adr[target] + m.tendon_num[target]))
            out |= {int(m.wrap_objid[w]) for w in wraps if m.wrap_type[w] == int(mujoco.mjtWrap.mjWRAP_JOINT)}
        else:
            return None
    return out
