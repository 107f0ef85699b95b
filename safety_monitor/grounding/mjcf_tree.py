"""An MJCF robot model as a kinematic tree (`robot init --mjcf`): compiled by MuJoCo, so that what is read
is what the twin will load (included files, default classes, `autolimits`), and every failure is one line
naming the file.
"""

from __future__ import annotations

from pathlib import Path

from safety_monitor.errors import GroundingError
from safety_monitor.grounding.kinematic_tree import JointKind, KinematicTree, ModelFormat, TreeJoint
from safety_monitor.grounding.twin import mujoco_message, mujoco_warnings
from safety_monitor.mujoco_gl import mujoco

_KINDS = {
    int(mujoco.mjtJoint.mjJNT_FREE): JointKind.FLOATING,
    int(mujoco.mjtJoint.mjJNT_BALL): JointKind.BALL,
    int(mujoco.mjtJoint.mjJNT_SLIDE): JointKind.PRISMATIC,
    int(mujoco.mjtJoint.mjJNT_HINGE): JointKind.REVOLUTE,
}
_LOOPS = (int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD))


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
    an active joint equality between two joints makes the first follow the second."""
    body = [m.body(b).name or f"body {b}" for b in range(m.nbody)]
    leaders = {
        int(m.eq_obj1id[e]): m.joint(int(m.eq_obj2id[e])).name
        for e in range(m.neq)
        if m.eq_type[e] == int(mujoco.mjtEq.mjEQ_JOINT) and m.eq_obj2id[e] >= 0 and m.eq_active0[e]
    }
    joints: dict[str, TreeJoint] = {}
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
            joints[name] = TreeJoint(name, kind, parent, body[b], lower, upper, leaders.get(j))
    sites = {m.site(s).name: body[int(m.site_bodyid[s])] for s in range(m.nsite) if m.site(s).name}
    loops = tuple(
        (body[int(m.eq_obj1id[e])], body[int(m.eq_obj2id[e])])
        for e in range(m.neq)
        if m.eq_type[e] in _LOOPS and m.eq_objtype[e] == int(mujoco.mjtObj.mjOBJ_BODY) and m.eq_active0[e]
    )
    return KinematicTree(
        path, m.names[: m.names.find(b"\0")].decode() or path.stem, ModelFormat.MJCF, body[0], joints, sites, loops
    )
