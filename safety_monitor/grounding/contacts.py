"""The twin's contact list, with mj_collision asked only about the geoms that moved.

Most of a frame's contacts are between geoms at rest (objects on the table, a door in its housing) while
the arm moves. A contact between two geoms whose bodies did not move since it was found is the same
contact (their poses are bit-identical, and MuJoCo's narrowphase keeps no state between calls), so it is
kept, and mj_collision runs with the resting geoms' `contype` cleared: MuJoCo then checks only pairs with a
moved geom. When no pair with a moved geom has its bounding spheres (or a plane and a sphere) within the
contact margin, mj_collision could add nothing and is not called at all. Called from C, it runs with every geom
in no pair with a moved geom within twice the margin (MuJoCo reports a pair's contacts out to the sum of its geoms'
margins) left out of the masks, conaffinity too: its broadphase then never looks at them, nor at a body all of whose
geoms are out (the world body's pairs with every resting body, their boxes and sweep, about a third of a call).
The kept and new contacts are the ones a full mj_collision finds, in another order; the twin's gaps are the
smallest per entity pair, which does not depend on it. The bounds tests walk only a plan's kept candidates, the pairs
that were within 5 cm of their reach when last taken, while no geom has moved 2.5 cm since (`_geomath.may_touch`'s
`kept`): the others cannot have come within reach.

Clearing `contype` selects exactly the moved pairs only where every geom's `contype` equals its
`conaffinity` and the model has no explicit `<pair>`s (MuJoCo collides those whatever the masks say); any
other model gets a full mj_collision every frame. The masks, and the candidate pairs they allow, are read
once, when the twin is built: a twin whose model's masks are changed afterwards must be built anew.

The twin's list calls mj_collision from C and reads MjData's contacts there (`_geomath.collide_moved`, where the
kernels were built with MuJoCo's headers): the bindings' handling of the call and of MjData.contact cost more
than the rest of a frame's collision work outside MuJoCo.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from safety_monitor.grounding import _geomath
from safety_monitor.mujoco_gl import mujoco

# may_touch's arguments after the geom poses (aabb, sa, sb, reach2, plane, other, margin, first, near, kept)
_Bounds = tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    float,
    np.ndarray,
    np.ndarray | None,
    np.ndarray,
]


class ContactPlan(NamedTuple):
    """What a frame with these geoms moved must ask MuJoCo (kept per set of moved bodies)."""

    geom_moved: np.ndarray  # bool per geom
    contype: np.ndarray  # the model's contype for moved geoms, 0 for resting ones
    # `_geomath.may_touch`'s arguments after the geom poses: the geoms' boxes, the candidate pairs of bounded
    # geoms (a, b, squared reach: sphere_reach2), the candidate (plane, geom) pairs, the margin, the bounded
    # pair to test first, the last one found within reach (a held object's fingers: one test, not hundreds), no
    # `near`, and what the kernel keeps between frames to pass over the pairs far out of reach (`kept`) (one
    # tuple: building the call's twelve arguments every frame cost as much as the test)
    bounds: _Bounds
    # the same with twice the margin (MuJoCo reports a pair's contacts out to the sum of its geoms' margins) and
    # the geoms in a pair within it marked in `near` (the twin's): mj_collision from C leaves the others out
    near_bounds: _Bounds
    unbounded: bool  # a candidate pair has a geom with no bounding sphere: always collide


class Contacts:
    """The contacts of the twin's MjData at its present pose, carried from frame to frame."""

    def __init__(self, m: mujoco.MjModel, direct: tuple[mujoco.MjData, _geomath.MuJoCoCalls] | None = None):
        """`direct`: an MjData and the `_geomath.collide_moved` calls bound to it (the twin's), so that a frame
        that collides with that MjData calls mj_collision and reads its contacts in C; None: through the bindings."""
        self._direct = direct
        self.reuse = m.npair == 0 and bool(np.array_equal(m.geom_contype, m.geom_conaffinity))
        self._contype = m.geom_contype.copy()
        self._model_contype = m.geom_contype  # a view of the model's masks (reading the attribute builds a new one)
        self._margin = float(m.geom_margin.max(initial=0.0))
        self._ca, self._cb = candidate_pairs(m)
        self._plane = m.geom_type == int(mujoco.mjtGeom.mjGEOM_PLANE)
        self._aabb = m.geom_aabb.reshape(m.ngeom, 6)
        self._near = np.zeros(m.ngeom, dtype=bool)  # the geoms in a pair within twice the margin (the C path's)
        self._geom = np.zeros((64, 2), dtype=np.int32)
        self._dist = np.zeros(64)
        self._n = 0
        self._data: tuple[mujoco.MjData, np.ndarray, np.ndarray] | None = None  # MjData, its geom_xpos and geom_xmat

    def forget(self) -> None:
        self._n = 0

    def plan(self, m: mujoco.MjModel, geom_moved: np.ndarray) -> ContactPlan:
        """The candidate pairs with a moved geom, split by how their bounds are tested."""
        ca, cb = self._ca, self._cb
        pick = geom_moved[ca] | geom_moved[cb]
        ca, cb = ca[pick], cb[pick]
        plane_a, plane_b = self._plane[ca], self._plane[cb]
        rbound = m.geom_rbound
        bounded = ~(plane_a | plane_b) & (rbound[ca] > 0) & (rbound[cb] > 0)
        one_plane = plane_a ^ plane_b
        plane = np.where(plane_a, ca, cb)[one_plane]
        other = np.where(plane_a, cb, ca)[one_plane]
        sa, sb = ca[bounded], cb[bounded]
        rsum, first = rbound[sa] + rbound[sb], np.full(1, -1, dtype=np.int64)
        aabb, margin = self._aabb, self._margin
        return ContactPlan(
            geom_moved=geom_moved,
            contype=np.where(geom_moved, self._contype, 0).astype(self._contype.dtype),
            # (`first`: written by may_touch; which pair it holds never changes its answer)
            bounds=(aabb, sa, sb, sphere_reach2(rsum, margin), plane, other, margin, first, None, kept(m, sa)),
            near_bounds=(
                aabb,
                sa,
                sb,
                sphere_reach2(rsum, 2 * margin),
                plane,
                other,
                2 * margin,
                first,
                self._near,
                kept(m, sa),
            ),
            unbounded=bool(np.any(~bounded & ~one_plane)),
        )

    def collide(
        self, m: mujoco.MjModel, d: mujoco.MjData, plan: ContactPlan | None
    ) -> tuple[int, np.ndarray | None, np.ndarray | None]:
        """This frame's contacts after mj_kinematics: (count, geom pairs, distances), the arrays valid until
        the next call. `plan`: None when no geom moved since the previous call."""
        if not self.reuse:
            mujoco.mj_collision(m, d)
            ncon = d.ncon
            return (ncon, d.contact.geom, d.contact.dist) if ncon else (0, None, None)
        if plan is None:
            return self._n, self._geom, self._dist
        ncon, new_geom, new_dist = 0, None, None
        views = self._data
        if views is None or views[0] is not d:  # reading MjData's arrays builds new views: 0.2 us a frame
            views = self._data = (d, d.geom_xpos, d.geom_xmat)
        direct = self._direct
        if direct is not None and direct[0] is d:  # (the path below in one C call, MjData's contacts read there)
            near = None if plan.unbounded else self._near
            if near is None or (
                _geomath.may_touch(views[1], views[2], plan.bounds)
                and _geomath.may_touch(views[1], views[2], plan.near_bounds)  # (marks the geoms near in `near`)
            ):
                n = _geomath.collide_moved(direct[1], self._geom, self._dist, self._n, plan.geom_moved, near, True)
                if n < 0:  # no room: MjData holds the new contacts until the next collision
                    self._room(-n)
                    n = _geomath.collide_moved(direct[1], self._geom, self._dist, self._n, plan.geom_moved, near, False)
                self._n = n
                return n, self._geom, self._dist
        elif plan.unbounded or _geomath.may_touch(views[1], views[2], plan.bounds):
            contype = self._model_contype
            _geomath.copy_ints(contype, plan.contype)  # (np.copyto: 3.6 thousand instructions a call)
            try:
                mujoco.mj_collision(m, d)
            finally:
                _geomath.copy_ints(contype, self._contype)
            # the count from the distances' length: nearly every frame that collides finds contacts, whose arrays
            # it reads anyway, and reading MjData.ncon cost 1.3 thousand instructions more
            found = d.contact
            new_dist = found.dist
            ncon = len(new_dist)
            if ncon:
                new_geom = found.geom
            else:
                new_dist = None
        if self._n + ncon > len(self._dist):
            self._room(self._n + ncon)
        self._n = _geomath.keep_contacts(self._geom, self._dist, self._n, plan.geom_moved, ncon, new_geom, new_dist)
        return self._n, self._geom, self._dist

    def _room(self, needed: int) -> None:
        """The kept list grown to twice `needed` contacts, its kept ones copied."""
        size = 2 * needed
        self._geom = np.concatenate([self._geom[: self._n], np.zeros((size - self._n, 2), dtype=np.int32)])
        self._dist = np.concatenate([self._dist[: self._n], np.zeros(size - self._n)])


def kept(m: mujoco.MjModel, sa: np.ndarray) -> np.ndarray:
    """A new `_geomath.may_touch` `kept` array for the bounded pairs `sa` of model `m` (NaN: nothing kept yet)."""
    return np.full(1 + 3 * m.ngeom + len(sa), np.nan)


def sphere_reach2(rsum: np.ndarray, margin: float) -> np.ndarray:
    """`_geomath.may_touch`'s squared distance within which two bounding spheres (radii summed in `rsum`) may
    touch: the radii, the margin and its 1e-9 m slack, grown by another 1e-9 m so that comparing squares is
    never narrower than comparing roots, squared once per plan (the kernel's own rounding, in its order)."""
    within = rsum + (margin + 1e-9) + 1e-9
    return within * within


def candidate_pairs(m: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
    """Geom pairs (a < b) MuJoCo's collision filters let through: on different weld bodies, not a body and
    its weld parent (unless one is welded to the world, or the parent filter is disabled), not excluded,
    and contype/conaffinity compatible."""
    weld = m.body_weldid[m.geom_bodyid]
    weld_parent = m.body_weldid[m.body_parentid[m.body_weldid]][m.geom_bodyid]
    filter_parent = not m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    excluded = {(int(s) >> 16, int(s) & 0xFFFF) for s in m.exclude_signature}
    contype, conaffinity, body = m.geom_contype, m.geom_conaffinity, m.geom_bodyid
    ca, cb = [], []
    for a in range(m.ngeom):
        for b in range(a + 1, m.ngeom):
            if weld[a] == weld[b] or not (contype[a] & conaffinity[b] or contype[b] & conaffinity[a]):
                continue
            if filter_parent and weld[a] and weld[b] and (weld[a] == weld_parent[b] or weld[b] == weld_parent[a]):
                continue
            ba, bb = int(body[a]), int(body[b])
            if (ba, bb) in excluded or (bb, ba) in excluded:
                continue
            ca.append(a)
            cb.append(b)
    return np.array(ca, dtype=np.int64), np.array(cb, dtype=np.int64)
