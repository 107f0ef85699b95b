"""Kinematic twin: a MuJoCo model of robot, fixtures and objects set from each frame's joints and poses.

Kinematics and distances only, no dynamics. Two sources of signed surface gaps per frame:
- `mj_collision` (margin = the contact distance) lists every touching or penetrating geom pair in C
  (asked only about geoms that moved: `grounding.contacts` keeps the contacts of resting ones);
- `mj_geomDistance` measures the pairs whose *positive* gap matters (a gripper or object geom against
  any other entity's geom) out to the largest distance threshold. Candidates come from a bounds test over
  the allowed pairs (bounding spheres, then the geoms' boxes grown by that threshold), so only nearby
  pairs reach the per-pair call, and only while their boxes' bounds are nearer than another pair of the same
  two entities already is (the palm against a carried mug's handle, once its body is measured). (Margin-based
  `mj_collision` misses positive gaps too often to be trusted for them: cylinder-box and even some box-box
  pairs within the margin go unreported.)
This is what grounds contact on hardware; privileged simulator contacts are only a cross-check
(`body_contacts`).

The model is the description's MJCF, its URDF (rewritten by grounding.urdf), or the URDF robot attached
into the MJCF world at `base_pose`. Joints that follow another (URDF `<mimic>`, MJCF joint equalities)
are set from their leader each frame: kinematics alone never enforces an equality constraint.

A mobile base (`mobile_base`) is placed each frame: the robot's root body hangs from a free joint (the
model's, or one the twin adds to a root fixed to the world, as a URDF's is), set so that the base body lands
at the frame's base pose; fixtures, static bodies and objects stay in the world. The base's platform (the
bodies no arm or gripper joint moves: chassis, wheels, casters) drives on the world body's own geometry (the
floor), so their contacts with it are excluded; every other body it touches is a contact. A base that is not
placed (no `world_frame`) stands where the model puts it, on its floor: the same contacts are excluded.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from safety_monitor.errors import GroundingError
from safety_monitor.frames import Pose
from safety_monitor.grounding import _geomath
from safety_monitor.grounding.contacts import ContactPlan, Contacts
from safety_monitor.grounding.description import (
    ENVIRONMENT,
    FINGER_PARTS,
    GRIPPER_PARTS,
    HOUSING,
    OTHER_ARM,
    RobotDescription,
)
from safety_monitor.grounding.geometry import Box, FrameGeometry
from safety_monitor.grounding.motion import Carry, quat_to_matrix
from safety_monitor.grounding.thresholds import Thresholds
from safety_monitor.grounding.urdf import JointLimit
from safety_monitor.mujoco_gl import mujoco
from safety_monitor.names import did_you_mean

# a box's place: (owner, body, centre in the body frame, half sizes, whether an interior)
_BoxPlace = tuple[str, int, np.ndarray, np.ndarray, bool]
# per set of moved qpos: measured pairs to redo (indices, geoms, radii, the walk's kept candidates), boxes to rebuild (None: no box's body
# moved; else per place whether its body moved, and the places that did), contacts to find
_Plan = tuple[tuple[np.ndarray, ...] | None, tuple[list[bool], tuple[_BoxPlace, ...]] | None, ContactPlan | None]
_PARK = 1000.0  # objects without a usable pose are parked this far away, spaced apart
_FAR = 10.0  # m: beyond any gripper's opening (mj_geomDistance reports no gap larger than its bound)
_SAME_PAD = 1e-3  # m: finger geom pairs this near the nearest pair's gap face each other across the grasp


@dataclass(frozen=True)
class FingerGap:
    """The smallest signed surface gap between the left and the right finger's geoms, and the world point
    midway between the geoms that face each other across it."""

    gap: float
    middle: np.ndarray


class KinematicTwin:
    """`report_margin`: farthest gap any predicate reads; `contact_margin`: gap that counts as touching;
    `mobile_base`: the robot is placed each frame at the base pose `compute` is given."""

    # Its attributes in slots: Python 3.11 keeps an instance's attributes inline (read fast) only up to 29 names a
    # class, past that every read goes through the dict (1.8 thousand instructions a frame here). `__dict__`: other
    # attributes still allowed (`digest` is a cached_property; tests replace methods).
    __slots__ = (
        "__dict__",
        "_base_slot",
        "_body_poses",
        "_body_qpos",
        "_box_bodies",
        "_box_places",
        "_boxes",
        "_boxes_still",
        "_contact_key",
        "_contacts",
        "_ee_site",
        "_finger_geoms",
        "_followers",
        "_free_kinematics",
        "_gap_names",
        "_gap_pairs",
        "_geom_aabb",
        "_geom_xmat",
        "_geom_xpos",
        "_interiors",
        "_joint_maps",
        "_key_gripper",
        "_key_names",
        "_key_sorted",
        "_kinematics",
        "_last_boxes",
        "_last_geometry",
        "_last_joint_map",
        "_last_maps",
        "_mat2quat",
        "_measure",
        "_object_bodies",
        "_object_box",
        "_object_qpos",
        "_object_slots",
        "_pa",
        "_pair_fresh",
        "_pair_gap",
        "_pair_key",
        "_pair_near",
        "_pair_rbound",
        "_parked",
        "_pb",
        "_plans",
        "_qpos",
        "_qpos_bits",
        "_site_pos",
        "_site_rot",
        "body_entity",
        "data",
        "entities",
        "geom_entity",
        "margin",
        "mobile_base",
        "model",
        "robot",
    )

    def __init__(
        self, robot: RobotDescription, report_margin: float, contact_margin: float = 0.0, mobile_base: bool = False
    ):
        self.robot = robot
        self.margin = report_margin
        self.mobile_base = mobile_base
        spec = _load(robot)
        m = _compile(spec, robot)
        self._check(m)
        # placed each frame, or standing where the model puts it: the base's platform is on its floor
        m = _free_base(spec, m, robot) if mobile_base else _off_the_floor(spec, m, robot)
        self.entities = robot.entities
        index = {e: i for i, e in enumerate(self.entities)}
        body_entity = self._body_entities(m)
        if _exclude_within_entities(spec, m, body_entity):  # their contacts would be dropped anyway
            m = _compile(spec, robot)
        self.model, self.data = m, mujoco.MjData(m)
        address = _c_function("mj_geomDistance")  # the gap walk's mj_geomDistance: C to C where the library is found
        self._measure: tuple[Callable[..., float] | int, Any, Any] = (
            (mujoco.mj_geomDistance, m, self.data) if address is None else (address, m._address, self.data._address)
        )
        self._mat2quat = _c_function("mju_mat2Quat")  # a carried object placed in one C call (None: through Python)
        m.geom_margin[:] = contact_margin
        m.geom_gap[:] = 0.0
        direct = _direct_calls(m, self.data)  # the per-frame mj_kinematics and mj_collision called from C
        self._kinematics: Callable[[], None] = (
            functools.partial(mujoco.mj_kinematics, m, self.data)
            if direct is None
            else functools.partial(_geomath.mujoco_call, direct[0])
        )
        self._contacts = Contacts(m, None if direct is None else (self.data, direct[1]))
        # a carried object's kinematics redone alone after its placement (None: a second whole mj_kinematics)
        self._free_kinematics = _free_body_calls(m, self.data, robot) if direct is not None else None
        self.body_entity = np.array([index[e] for e in body_entity], dtype=np.int64)
        self.geom_entity = self.body_entity[m.geom_bodyid]
        self._object_qpos = {
            o: int(m.jnt_qposadr[m.body_jntadr[m.body(self._object_body(o)).id]]) for o in robot.objects
        }
        self._object_box = {o: self._local_box(m, o) for o in robot.objects}
        self._object_bodies = {o: m.body(self._object_body(o)).id for o in robot.objects}
        self._ee_site = m.site(robot.ee_site).id
        # views of the end-effector site's pose in MjData (its arrays never move): what each compute reads
        self._site_pos = self.data.site_xpos[self._ee_site]
        self._site_rot = self.data.site_xmat[self._ee_site].reshape(3, 3)
        # and of the arrays each compute writes or reads whole (reading MjData's attribute builds a new view)
        self._qpos, self._geom_xpos, self._geom_xmat = self.data.qpos, self.data.geom_xpos, self.data.geom_xmat
        self._finger_geoms = np.array(
            [g for g in range(m.ngeom) if body_entity[m.geom_bodyid[g]] in FINGER_PARTS], dtype=np.int64
        )
        # joint equalities as `_geomath.set_joints` reads them: (follower, leader) qpos addresses, and per row the
        # reference positions and polynomial
        followers = _followers(m)
        self._followers = (
            np.array([row[:2] for row in followers], dtype=np.int64).reshape(-1, 2),
            np.array([(*row[2:4], *row[4]) for row in followers], dtype=float).reshape(-1, 7),
        )
        self._interiors = {n: (m.body(i.body).id, i.center, i.half_size) for n, i in robot.interiors().items()}
        self._joint_maps: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray, bool]] = {}
        no_map = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), False)
        self._last_joint_map: tuple[tuple[str, ...] | None, tuple[np.ndarray, np.ndarray, bool]] = (None, no_map)
        self._pa, self._pb = self._measured_pairs(m)
        self._pair_rbound = m.geom_rbound[self._pa] + m.geom_rbound[self._pb]
        n = len(self.entities)
        ea, eb = self.geom_entity[self._pa], self.geom_entity[self._pb]
        self._pair_key = np.minimum(ea, eb) * n + np.maximum(ea, eb)
        ent = self.geom_entity.tolist()  # entity-pair key of a contact's geoms (n * n: same entity)
        self._contact_key = np.array(
            [[n * n if ea == eb else min(ea, eb) * n + max(ea, eb) for eb in ent] for ea in ent], dtype=np.int64
        )
        self._key_names = [(self.entities[k // n], self.entities[k % n]) for k in range(n * n)]
        self._key_sorted = [(a, b) if a <= b else (b, a) for a, b in self._key_names]
        self._key_gripper = [
            tuple(y for x, y in (names, names[::-1]) if x in GRIPPER_PARTS) for names in self._key_names
        ]
        # What the previous compute() saw, so results about geoms and bodies that did not move since are
        # reused (objects at rest between pose updates, fixtures nobody operates): a body's pose is a
        # function of the qpos of the joints above it, so bit-identical qpos there gives bit-identical body
        # and geom poses, hence bit-identical distances and boxes.
        self._qpos_bits = np.full(m.nq, -1, dtype=np.int64)  # qpos of the previous compute, as bits (-1: none)
        self._body_qpos = _body_qpos(m)
        self._plans: dict[bytes, _Plan] = {}
        self._pair_gap = np.zeros(len(self._pa))  # last mj_geomDistance per measured pair
        self._pair_fresh = np.zeros(len(self._pa), dtype=bool)  # ... still valid: neither geom moved
        self._pair_near = np.zeros(len(self._pa), dtype=bool)  # bounds (sphere, box) within the report margin
        self._geom_aabb = m.geom_aabb.reshape(m.ngeom, 6)  # each geom's box in its own frame
        self._box_bodies = np.array(
            [self._object_bodies[o] for o in robot.objects] + [b for b, _, _ in self._interiors.values()],
            dtype=np.int64,
        )
        self._boxes: dict[str, Box] = {}  # built while the body rested where it is now
        self._last_boxes: tuple[frozenset[str], dict[str, Box], dict[str, Box], frozenset[str]] | None = None
        # per box, in _box_bodies' order
        self._box_places: tuple[_BoxPlace, ...] = tuple(
            (o, self._object_bodies[o], *self._object_box[o], False) for o in robot.objects
        ) + tuple((n, body, center, half, True) for n, (body, center, half) in self._interiors.items())
        self._body_poses = (self.data.xpos, self.data.xmat)  # views (MjData's attributes build new ones per read)
        # entity_gaps' arguments that stay (one tuple each side of the distance function, which tests and the
        # benchmark swap: twenty attribute reads a frame otherwise)
        self._gap_pairs = (
            self._geom_xpos,
            self._geom_xmat,
            self._geom_aabb,
            self._pair_near,
            self._pair_fresh,
            self._pair_key,
            self._pa,
            self._pb,
            self._pair_gap,
            self.margin,
        )
        self._gap_names = (self._key_names, self._key_sorted, self._key_gripper)
        # the last call's keys and gaps packed, with the maps it built (handed out again while they hold)
        self._last_maps: list[Any] = [None, None]
        self._last_geometry: FrameGeometry | None = None  # the last compute's, for a frame where nothing moved
        self._boxes_still = ([False] * len(self._box_places), ())  # no box's body moved (a plan's entry)
        self._object_slots = tuple(self._object_qpos.items())  # (object, address of its free joint's qpos)
        self._parked = {
            o: np.array([_PARK + 10.0 * i, _PARK, _PARK, 1.0, 0.0, 0.0, 0.0]) for i, o in enumerate(robot.objects)
        }
        self._base_slot = _base_slot(m, self.data, robot) if mobile_base else None

    @functools.cached_property
    def digest(self) -> str:
        """sha256 of the compiled model (`mj_saveModel`): the same on every machine that builds it from the same
        MJCF, URDF and meshes with the same MuJoCo, so a worker can tell its robot from the command's."""
        saved = np.empty(mujoco.mj_sizeModel(self.model), dtype=np.uint8)
        mujoco.mj_saveModel(self.model, None, saved)
        return hashlib.sha256(saved.tobytes()).hexdigest()

    def finger_gap(self) -> FingerGap | None:
        """How far open the gripper is in the pose of the last compute, and where between its fingers; None when
        a finger has no collision geometry. The middle is taken between the centres of the geoms that face each
        other (every pair within 1 mm of the nearest): the nearest points of parallel pads are only some corner
        of them."""
        m, d = self.model, self.data
        left, right = (np.flatnonzero(self.geom_entity == self.entities.index(side)).tolist() for side in FINGER_PARTS)
        if not (left and right):
            return None
        gaps = {(a, b): mujoco.mj_geomDistance(m, d, a, b, _FAR, None) for a in left for b in right}
        nearest = min(gaps.values())
        facing = [pair for pair, gap in gaps.items() if gap <= nearest + _SAME_PAD]
        sides = ({a for a, _ in facing}, {b for _, b in facing})
        middle = sum(d.geom_xpos[sorted(side)].mean(axis=0) for side in sides) / 2
        return FingerGap(nearest, middle)

    def in_body_frame(self, body: str, point: np.ndarray) -> np.ndarray:
        """World `point` in the frame of `body` as the last compute placed it."""
        b = self.model.body(body).id
        return self.data.xmat[b].reshape(3, 3).T @ (point - self.data.xpos[b])

    def restart(self) -> None:
        """Back to the state it was built in (MjData as new, nothing kept from earlier frames), so one model
        serves recording after recording."""
        mujoco.mj_resetData(self.model, self.data)
        self.forget()

    def forget(self) -> None:
        """Drop the distances, boxes, gap maps and the walks' candidate pairs kept from earlier frames: the next compute
        measures, tests and builds everything (needed only after changing the model or data by hand)."""
        self._qpos_bits[:] = -1
        self._pair_fresh[:] = False
        self._contacts.forget()
        self._boxes.clear()
        self._last_boxes = None
        self._last_maps[:] = (None, None)
        self._last_geometry = None
        for affected, _, contact_plan in self._plans.values():  # the walks' kept candidates: taken again (NaN)
            if affected is not None:
                affected[4][0] = np.nan
            if contact_plan is not None:
                contact_plan.bounds[9][0] = contact_plan.near_bounds[9][0] = np.nan

    # ------------------------------------------------------------------------------------------------
    def compute(
        self,
        joint_names: tuple[str, ...],
        joint_position: np.ndarray,
        poses: Mapping[str, Pose],
        carried: Carry | None = None,
        base: Pose | None = None,
    ) -> FrameGeometry:
        """Geometry for one frame. `poses` holds only usable object poses; the others are unknown.

        `carried` gives, from this frame's end-effector site pose, each held object's pose in the site
        frame (position, rotation) when its pose was measured: it is placed there relative to the
        end-effector of *this* frame, so an object pose older than the joint states does not tear a
        grasped object out of the fingers. `base`: the base body's pose in the world (a twin built with
        `mobile_base`; None: the robot stays where it was last placed).
        """
        m, d = self.model, self.data
        src, adr, unchecked = self._joint_map(joint_names)
        qpos = self._qpos
        if base is not None:
            self._place_base(base)
        # the grounder checks required joints only: an ignored one may read NaN, and then stays where it was
        # (`unchecked`); followers are set from their leaders after. In C: numpy's indexing cost 5 us a frame.
        try:
            _geomath.set_joints(qpos, joint_position, src, adr, unchecked, self._followers)
        except (TypeError, ValueError):  # not a float64 vector
            _geomath.set_joints(qpos, np.asarray(joint_position, dtype=float), src, adr, unchecked, self._followers)
        try:
            _geomath.place_objects(qpos, self._object_slots, poses, self._parked)
        except (TypeError, ValueError):  # poses in lists or other dtypes, another Mapping: through numpy
            self._place_objects(poses)
        site_pos, site_rot = self._site_pos, self._site_rot
        if carried is None:  # qpos is final before the kinematics
            changed = _geomath.qpos_changed(qpos, self._qpos_bits)
            last, boxes = self._last_geometry, self._last_boxes
            # (the byte as an int: a bytes operand is first tried as one, its TypeError raised and dropped every
            # frame, 1.8 thousand instructions)
            if 1 not in changed and last is not None and boxes is not None and boxes[0] == poses.keys():
                # nothing moved since the last compute (one frame in fifteen): MjData still holds its kinematics,
                # so this frame's geometry is the last one, handed out again (read-only, as its maps are)
                return last
            self._kinematics()
        else:
            self._kinematics()
            placed = carried(site_pos, site_rot)  # (read during the call only: `Carry`)
            if placed:
                mat2quat, free = self._mat2quat, self._free_kinematics
                for o, (rel_pos, rel_rot) in placed.items():
                    qadr = self._object_qpos[o]
                    if mat2quat is not None:
                        _geomath.place_carried(qpos, qadr, site_pos, site_rot, rel_pos, rel_rot, mat2quat)
                        if free is not None:  # (nothing else moves with it: its body's kinematics alone)
                            _geomath.free_body_kinematics(free, self._object_bodies[o])
                        continue
                    position, rotation = _geomath.compose_pose(site_pos, site_rot, rel_pos, rel_rot)
                    qpos[qadr : qadr + 3] = position
                    quat = np.empty(4)
                    mujoco.mju_mat2Quat(quat, rotation)
                    qpos[qadr + 3 : qadr + 7] = quat
                if free is None or mat2quat is None:
                    self._kinematics()
            changed = _geomath.qpos_changed(qpos, self._qpos_bits)
        # (most frames: a plan made on an earlier frame, read without a call)
        affected, boxes_moved, contact_plan = self._plans.get(changed) or self._plan(changed)
        contacts = self._contacts.collide(m, d, contact_plan)
        object_boxes, interiors, unknown = self._frame_boxes(boxes_moved, poses)
        ee_position, ee_rotation, points = _geomath.site_frame(site_pos, site_rot, self._geom_xpos, self._finger_geoms)
        gaps, gripper_gaps, pairs = self._gaps(contacts, affected)
        self._last_geometry = FrameGeometry.with_derived(
            ee_position, ee_rotation, points, gaps, object_boxes, interiors, unknown, gripper_gaps, pairs
        )
        return self._last_geometry

    def _place_base(self, base: Pose) -> None:
        """Set the root's free joint so that the base body lands at `base` (root = base x root-in-base)."""
        if self._base_slot is None:
            raise GroundingError(f"{self.robot.source}: a base pose was given to a twin of a fixed base")
        at, offset_pos, offset_quat = self._base_slot
        position, quaternion = np.empty(3), np.empty(4)
        mujoco.mju_mulPose(
            position,
            quaternion,
            np.asarray(base.position, dtype=float),
            np.asarray(base.quaternion, dtype=float),
            offset_pos,
            offset_quat,
        )
        self._qpos[at : at + 3] = position
        self._qpos[at + 3 : at + 7] = quaternion

    def _place_objects(self, poses: Mapping[str, Pose]) -> None:
        qpos = self.data.qpos
        for o, at in self._object_slots:
            pose = poses.get(o)
            if pose is None:
                qpos[at : at + 7] = self._parked[o]
            else:
                qpos[at : at + 3] = pose.position
                qpos[at + 3 : at + 7] = pose.quaternion

    def _frame_boxes(
        self, moved: tuple[list[bool], tuple[_BoxPlace, ...]] | None, poses: Mapping[str, Pose]
    ) -> tuple[dict[str, Box], dict[str, Box], frozenset[str]]:
        """This frame's object boxes, interior boxes and unknown objects. Each is handed out again, the same
        object, while what it is made of stays (most frames: only the arm moves; an object's box is rebuilt on
        its pose update, interiors only while a fixture moves), so a frame does not rebuild dicts and a set
        equal to the last frame's. Readers take them as read-only (FrameGeometry's fields are Mappings)."""
        last, boxes = self._last_boxes, self._boxes
        if last is not None and last[0] == poses.keys():  # the objects posed last frame, each with its box there
            if moved is None:  # most frames: only the arm moved
                return last[1], last[2], last[3]  # (no box to build or drop: the last frame built them for these poses)
            # only the moved bodies' boxes change (a carried object's, every frame: the places at rest not visited)
            objects_rebuilt, interiors_rebuilt = self._update_boxes(moved[1], poses)
            names, unknown = last[0], last[3]
            object_boxes = last[1] if not objects_rebuilt else {o: boxes[o] for o in poses}
        else:  # objects came or went: the boxes of moved bodies, and any an object or interior lacks
            flags = (moved or self._boxes_still)[0]
            places = tuple(p for p, body_moved in zip(self._box_places, flags) if body_moved or p[0] not in boxes)
            objects_rebuilt, interiors_rebuilt = self._update_boxes(places, poses)
            names, unknown = frozenset(poses), frozenset(o for o in self.robot.objects if o not in poses)
            object_boxes = {o: boxes[o] for o in poses}
        interiors = last[2] if last is not None and not interiors_rebuilt else {n: boxes[n] for n in self._interiors}
        self._last_boxes = (names, object_boxes, interiors, unknown)
        return object_boxes, interiors, unknown

    def _update_boxes(self, places: tuple[_BoxPlace, ...], poses: Mapping[str, Pose]) -> tuple[bool, bool]:
        """Build the boxes of usable objects and of interiors at `places` (whose body moved since the last frame,
        or that have none yet), and drop those of objects without a pose: a box kept is one built at the body's
        present pose, read-only (it is reused for as long as its body rests). An object's box is its geoms'
        bounding box in its body frame, moved. Returns whether any object box, and whether any interior box, was
        built or dropped. (Built in the loop: a method call per box cost as much as the box.)"""
        boxes = self._boxes
        xpos, xmat = self._body_poses
        objects_rebuilt = interiors_rebuilt = False
        for owner, body, center, half, interior in places:
            if interior or owner in poses:
                world, rotation = _geomath.body_box(xpos, xmat, body, center)
                boxes[owner] = Box(world, rotation, half)
                if interior:
                    interiors_rebuilt = True
                else:
                    objects_rebuilt = True
            elif boxes.pop(owner, None) is not None:
                objects_rebuilt = True
        return objects_rebuilt, interiors_rebuilt

    def body_contacts(self, contacts: Sequence) -> dict[str, dict[str, float]]:
        """Privileged simulator contacts (body names) as entity gaps, to cross-check the twin."""
        m = self.model
        pairs: dict[tuple[str, str], float] = {}
        for c in contacts:
            ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b) for b in (c.body1, c.body2)]
            if min(ids) < 0:
                raise GroundingError(f"privileged contact names unknown body {c.body1 if ids[0] < 0 else c.body2!r}")
            a, b = (self.entities[self.body_entity[i]] for i in ids)
            if a != b:
                pairs[(a, b)] = min(c.distance, pairs.get((a, b), np.inf))
        return FrameGeometry.symmetric(pairs)

    # ------------------------------------------------------------------------------------------------
    def _gaps(
        self, contacts: tuple[int, np.ndarray | None, np.ndarray | None], affected: tuple[np.ndarray, ...] | None
    ) -> tuple[dict[str, dict[str, float]], dict[str, float], list[tuple[str, str, float]]]:
        """This frame's gaps: the smallest signed gap per entity pair, both ways round, with the gripper gaps
        and the per-pair list built in the same pass. Touching pairs come from the contact list
        (`contacts`: count, geom pairs, distances), measured pairs from mj_geomDistance (candidates within the
        report margin by bounding sphere and box; a pair not among the `affected` ones, neither of whose geoms
        moved since it was last measured, keeps that distance). The walk is C (`_geomath.entity_gaps`); a frame
        whose gaps are all the last frame's gets the last frame's maps again (read-only, as the boxes)."""
        return _geomath.entity_gaps(
            contacts[0],
            contacts[1],
            contacts[2],
            self._contact_key,
            affected,
            self._gap_pairs,
            self._measure,
            self._gap_names,
            self._last_maps,
        )

    def _plan(self, key: bytes) -> _Plan:
        """What a frame whose qpos changed where `key` has a 1 byte (`_geomath.qpos_changed`) must redo: the measured pairs with a moved geom (indices,
        their geoms, bounding radii, entity_gaps' kept candidates; None if none), per box place whether its body moved and the places that did (None: none did), and which contacts
        to ask mj_collision for (None: no geom moved). A frame changes the same qpos as many frames before it
        (the arm; an object on a pose update): cached."""
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= 64:
                self._plans.clear()
            changed = np.frombuffer(key, dtype=bool)
            body_moved = np.any(self._body_qpos[:, changed], axis=1)
            geom_moved = body_moved[self.model.geom_bodyid]
            idx = np.flatnonzero(geom_moved.take(self._pa) | geom_moved.take(self._pb))
            # (with `entity_gaps`' kept candidates of this plan's walk: NaN, none yet)
            kept = np.full(1 + 3 * self.model.ngeom + idx.size, np.nan)
            affected = (
                (idx, self._pa.take(idx), self._pb.take(idx), self._pair_rbound.take(idx), kept) if idx.size else None
            )
            contact_plan = self._contacts.plan(self.model, geom_moved) if geom_moved.any() else None
            flags = body_moved.take(self._box_bodies).tolist()
            boxes_moved = (
                (flags, tuple(p for p, moved in zip(self._box_places, flags) if moved)) if any(flags) else None
            )
            plan = self._plans[key] = (affected, boxes_moved, contact_plan)
        return plan

    def _measured_pairs(self, m: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
        """Geom pairs whose positive gap predicates read: a gripper or object geom against a geom of
        another entity, not robot-robot, honouring contype/conaffinity and the MJCF's contact excludes."""
        names = self.entities
        active_entities = {names.index(e) for e in ("finger_left", "finger_right", "hand", *self.robot.objects)}
        robot = {names.index(e) for e in ("finger_left", "finger_right", "hand", "arm")}
        excluded = {(int(sig) >> 16, int(sig) & 0xFFFF) for sig in m.exclude_signature}
        solid = [
            g
            for g in range(m.ngeom)
            if (m.geom_contype[g] or m.geom_conaffinity[g]) and m.geom_type[g] != int(mujoco.mjtGeom.mjGEOM_PLANE)
        ]
        pa, pb = [], []
        for i, a in enumerate(solid):
            for b in solid[i + 1 :]:
                ea, eb = int(self.geom_entity[a]), int(self.geom_entity[b])
                if ea == eb or (ea in robot and eb in robot) or not ({ea, eb} & active_entities):
                    continue
                if not ((m.geom_contype[a] & m.geom_conaffinity[b]) or (m.geom_contype[b] & m.geom_conaffinity[a])):
                    continue
                ba, bb = int(m.geom_bodyid[a]), int(m.geom_bodyid[b])
                if (ba, bb) in excluded or (bb, ba) in excluded:
                    continue
                pa.append(a)
                pb.append(b)
        return np.array(pa, dtype=np.int64), np.array(pb, dtype=np.int64)

    def _joint_map(self, joint_names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, bool]:
        """(frame indices, their qpos addresses, whether any is a joint the grounder does not check for NaN)."""
        last = self._last_joint_map
        if joint_names is last[0]:  # most frames: the previous frame's tuple (not even hashed then)
            return last[1]
        cached = self._joint_maps.get(joint_names)
        if cached is None:
            m = self.model
            one_value = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
            required = set(self.robot.required_joints)
            src, adr, unchecked = [], [], False
            for i, name in enumerate(joint_names):
                j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
                # ignored joints too: a second arm, a head, a wheel are where the frames say
                if j >= 0 and m.jnt_type[j] in one_value:
                    src.append(i)
                    adr.append(m.jnt_qposadr[j])
                    unchecked = unchecked or name not in required
            cached = (np.array(src, dtype=np.int64), np.array(adr, dtype=np.int64), unchecked)
            self._joint_maps[joint_names] = cached
        self._last_joint_map = (joint_names, cached)
        return cached

    def _object_body(self, o: str) -> str:
        return self.robot.objects[o].body or o

    def _local_box(self, m: mujoco.MjModel, o: str) -> tuple[np.ndarray, np.ndarray]:
        body = m.body(self._object_body(o)).id
        corners = []
        for g in range(m.ngeom):
            if m.geom_bodyid[g] != body or not (m.geom_contype[g] or m.geom_conaffinity[g]):
                continue
            c, h = m.geom_aabb[g, :3], m.geom_aabb[g, 3:]
            signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
            local = c + signs * h
            rot = quat_to_matrix(m.geom_quat[g])
            corners.append(m.geom_pos[g] + local @ rot.T)
        if not corners:
            raise GroundingError(
                f"{self.robot.source}: objects.{o}: body has no collision geoms in {self.robot.model_file}"
            )
        pts = np.vstack(corners)
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        return (lo + hi) / 2.0, (hi - lo) / 2.0

    def _body_entities(self, m: mujoco.MjModel) -> list[str]:
        """Entity of every body: environment by default, then static, housings, fixtures, objects, robot."""
        r = self.robot
        entity = [ENVIRONMENT] * m.nbody
        parents = m.body_parentid

        def subtree(root: int) -> list[int]:
            out = [root]
            for b in range(root + 1, m.nbody):
                p = parents[b]
                if p in out:
                    out.append(b)
            return out

        for name, st in r.static.items():
            for body in st.bodies:
                entity[m.body(body).id] = name
        for name, fx in r.fixtures.items():
            for body in fx.housing:
                entity[m.body(body).id] = name + HOUSING
            for b in subtree(int(m.jnt_bodyid[m.joint(fx.joint).id])):
                entity[b] = name
        for o in r.objects:
            for b in subtree(m.body(self._object_body(o)).id):
                entity[b] = o
        for b in subtree(m.body(r.base_body).id):
            entity[b] = "arm"
        for body in r.other_arms:  # beside the robot's subtree (ALOHA's two bases) or inside it (a shared torso)
            for b in subtree(m.body(body).id):
                entity[b] = OTHER_ARM
        for body in r.gripper.hand_bodies:
            entity[m.body(body).id] = "hand"
        for side, body in zip(FINGER_PARTS, r.gripper.finger_bodies):
            for fb in subtree(m.body(body).id):
                entity[fb] = side
        return entity

    def _check(self, m: mujoco.MjModel) -> None:
        """Every name of the robot YAML exists in the MJCF with the right type; else a GroundingError."""
        r, where = self.robot, f"{self.robot.source} does not match {self.robot.model_file}"
        hinge_or_slide = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        for key, names in (("robot.arm_joints", r.arm_joints), ("robot.gripper.joints", r.gripper.joints)):
            for j in names:
                jid = _id(m, mujoco.mjtObj.mjOBJ_JOINT, j, f"{where}: {key}: joint")
                if m.jnt_type[jid] not in hinge_or_slide:
                    raise GroundingError(f"{where}: {key}: joint {j!r} is not a hinge or slide joint")
        bodies = [("robot.base_body", r.base_body), ("robot.end_effector.body", r.ee_body)]
        bodies += [("robot.gripper.hand_bodies", b) for b in r.gripper.hand_bodies]
        bodies += [("robot.gripper.fingers", b) for b in r.gripper.finger_bodies]
        for name, fx in r.fixtures.items():
            jid = _id(m, mujoco.mjtObj.mjOBJ_JOINT, fx.joint, f"{where}: fixtures.{name}.joint")
            if m.jnt_type[jid] not in hinge_or_slide:
                raise GroundingError(f"{where}: fixtures.{name}: joint {fx.joint!r} is not a hinge or slide joint")
            lo, hi = sorted((fx.closed, fx.open))
            if m.jnt_limited[jid] and (lo < m.jnt_range[jid, 0] - 1e-9 or hi > m.jnt_range[jid, 1] + 1e-9):
                raise GroundingError(
                    f"{where}: fixtures.{name}.range [{fx.closed}, {fx.open}] is outside the "
                    f"MJCF range {list(m.jnt_range[jid])} of joint {fx.joint!r}"
                )
            bodies += [(f"fixtures.{name}.housing", b) for b in fx.housing]
        for name, st in r.static.items():
            bodies += [(f"static.{name}.bodies", b) for b in st.bodies]
        for name, interior in r.interiors().items():
            bodies.append((f"{name}.interior.body", interior.body))
        bodies += [("other_arms", b) for b in r.other_arms]
        for key, b in bodies:
            _id(m, mujoco.mjtObj.mjOBJ_BODY, b, f"{where}: {key}: body")
        # the watched arm inside another's subtree would be that arm's, touching itself; a fixture, static body or
        # object there would be the other arm's too (touching it arm on arm, an object never grasped)
        held = [("robot.base_body", r.base_body), ("the end-effector body", r.ee_body)]
        held += [(f"static.{name}", b) for name, st in r.static.items() for b in st.bodies]
        for name, fx in r.fixtures.items():
            held += [(f"fixtures.{name}.housing", b) for b in fx.housing]
            held.append((f"fixtures.{name}", m.body(int(m.jnt_bodyid[m.joint(fx.joint).id])).name))
        held += [(f"objects.{o}", self._object_body(o)) for o in r.objects]
        for arm in r.other_arms:
            root = m.body(arm).id
            for key, b in held:
                body = max(0, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b))  # (an object's is checked below)
                while body != root and body != 0:
                    body = int(m.body_parentid[body])
                if body == root:
                    watched = key in ("robot.base_body", "the end-effector body")
                    raise GroundingError(
                        f"{where}: other_arms: {arm!r} holds "
                        + (f"the watched arm ({key} {b!r} is in its subtree)" if watched else f"{key}'s body {b!r}")
                        + "; name the first body of the arm not watched"
                    )
        if m.body(r.base_body).id == 0:
            raise GroundingError(
                f"{where}: robot.base_body {r.base_body!r} is MuJoCo's world body, which holds every body (objects "
                "and fixtures would count as the arm): name the body the robot's first joint moves"
            )
        _id(m, mujoco.mjtObj.mjOBJ_SITE, r.ee_site, f"{where}: robot.end_effector.site")
        for o in r.objects:
            bid = _id(m, mujoco.mjtObj.mjOBJ_BODY, self._object_body(o), f"{where}: objects.{o}: body")
            jadr = m.body_jntadr[bid]
            if jadr < 0 or m.jnt_type[jadr] != int(mujoco.mjtJoint.mjJNT_FREE):
                raise GroundingError(f"{where}: objects.{o}: body {self._object_body(o)!r} has no free joint")


def _body_qpos(m: mujoco.MjModel) -> np.ndarray:
    """(body, qpos index): whether that qpos entry moves the body (a joint of it or of a body above it)."""
    size = {int(mujoco.mjtJoint.mjJNT_FREE): 7, int(mujoco.mjtJoint.mjJNT_BALL): 4}
    dep = np.zeros((m.nbody, m.nq), dtype=bool)
    for b in range(1, m.nbody):  # parents come before their children
        dep[b] = dep[m.body_parentid[b]]
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
            adr = m.jnt_qposadr[j]
            dep[b, adr : adr + size.get(int(m.jnt_type[j]), 1)] = True
    return dep


def _c_function(name: str) -> int | None:
    """Address of MuJoCo's C function `name` in the library the bindings ship (None when it is not found or is
    another MuJoCo version than the bindings'): the C kernels call it directly, sparing a Python call each time
    (mj_geomDistance: about a microsecond a measured pair, a dozen pairs a frame; mju_mat2Quat: a carried object)."""
    folder = Path(mujoco.__file__).parent
    for path in sorted(folder.glob("libmujoco.so*")) + sorted(folder.glob("libmujoco*.dylib")):
        try:
            lib = ctypes.CDLL(str(path))
            lib.mj_version.restype = ctypes.c_int
            if lib.mj_version() == mujoco.mj_version():
                return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        except (OSError, AttributeError):
            continue
    return None


def _direct_calls(m: mujoco.MjModel, d: mujoco.MjData) -> tuple[_geomath.MuJoCoCalls, _geomath.MuJoCoCalls] | None:
    """`_geomath`'s calls of mj_kinematics and mj_collision on `m` and `d` from C (their addresses, the thread-local
    log handler's setter and the global one's getter through which MuJoCo's errors come back, the model's and data's
    addresses, and the error raised, the bindings' own): None when the kernels were built without MuJoCo's headers or
    with another version's, or the library is not found (the twin then calls through the bindings)."""
    if getattr(_geomath, "MUJOCO_HEADER", 0) != mujoco.mj_version():
        return None
    names = ("mj_kinematics", "mj_collision", "_mjPRIVATE_setTlsLogHandler", "_mjPRIVATE_getGlobalLogHandler")
    kinematics, collision, set_tls, get_global = (_c_function(name) for name in names)
    if kinematics is None or collision is None or set_tls is None or get_global is None:
        return None
    rest = (set_tls, get_global, m._address, d._address, mujoco.FatalError)
    return (kinematics, *rest), (collision, *rest)


def _free_body_calls(m: mujoco.MjModel, d: mujoco.MjData, robot: RobotDescription) -> tuple[int, ...] | None:
    """`_geomath.free_body_kinematics`'s calls (mju_normalize4, mju_quat2Mat, mj_local2Global, the model's and data's
    addresses) where every object's body hangs from the world by its free joint alone with no body below it and the
    model does not sleep (mj_kinematics then skips bodies): None otherwise, or where a function is not found."""
    bodies = [m.body(robot.objects[o].body or o).id for o in robot.objects]
    if m.opt.enableflags & int(mujoco.mjtEnableBit.mjENBL_SLEEP) or any(
        m.body_jntnum[b] != 1 or m.body_parentid[b] != 0 or b in m.body_parentid[1:] for b in bodies
    ):
        return None
    normalize, quat2mat, local2global = (_c_function(n) for n in ("mju_normalize4", "mju_quat2Mat", "mj_local2Global"))
    if normalize is None or quat2mat is None or local2global is None:
        return None
    if not _free_body_agrees(m, (normalize, quat2mat, local2global), bodies):
        return None
    return normalize, quat2mat, local2global, m._address, d._address


# what mj_kinematics writes for a body, its joints, geoms and sites
_KINEMATICS = (
    "xpos",
    "xquat",
    "xmat",
    "xipos",
    "ximat",
    "geom_xpos",
    "geom_xmat",
    "site_xpos",
    "site_xmat",
    "xanchor",
    "xaxis",
)


def _free_body_agrees(m: mujoco.MjModel, functions: tuple[int, int, int], bodies: list[int]) -> bool:
    """Whether `_geomath.free_body_kinematics` gives the loaded MuJoCo's mj_kinematics bit for bit on each of
    `bodies`, tried once on a scratch MjData: the kernel retraces MuJoCo's steps for a free body, and a MuJoCo
    release that changed them (its headers' version matching its library's says nothing of that) must fall back
    to the whole call, never move a result."""
    d = mujoco.MjData(m)
    calls = (*functions, m._address, d._address)
    for b in bodies:
        adr = int(m.jnt_qposadr[m.body_jntadr[b]])
        d.qpos[adr : adr + 7] = (0.3, -0.2, 0.7, 0.9, 0.1, -0.3, 0.2)  # (a quaternion off unit length: both norms)
        mujoco.mj_kinematics(m, d)
        want = [getattr(d, name).tobytes() for name in _KINEMATICS]
        placed = d.qpos[adr : adr + 7].copy()
        d.qpos[adr : adr + 3] += 0.5
        mujoco.mj_kinematics(m, d)  # everything as a first mj_kinematics leaves it, this body elsewhere
        d.qpos[adr : adr + 7] = placed
        _geomath.free_body_kinematics(calls, b)
        if [getattr(d, name).tobytes() for name in _KINEMATICS] != want:
            return False
    return True


def twin_for(robot: RobotDescription, thresholds: Thresholds, mobile_base: bool = False) -> KinematicTwin:
    """The twin the Grounder uses: gaps reported out to the largest distance threshold."""
    return KinematicTwin(robot, thresholds.largest_report_distance, thresholds.distances_m.contact, mobile_base)


def _free_base(spec: mujoco.MjSpec, m: mujoco.MjModel, robot: RobotDescription) -> mujoco.MjModel:
    """The model with the robot's root body hanging from a free joint (added where the root is fixed to the
    world) and its platform's contacts with the world body excluded (`_off_the_floor`); a GroundingError where the
    base cannot be placed: the root moves by other joints (planar slides and a hinge), the base body moves in it,
    or a fixture or static body would move with the robot."""
    where = f"{robot.source}: a mobile base (the topic mapping's world_frame)"
    base = m.body(robot.base_body).id
    root = int(m.body_rootid[base])
    name = m.body(root).name
    joints = [m.joint(j).name or f"#{j}" for j in range(m.body_jntadr[root], m.body_jntadr[root] + m.body_jntnum[root])]
    free = len(joints) == 1 and m.jnt_type[m.body_jntadr[root]] == int(mujoco.mjtJoint.mjJNT_FREE)
    if not name or (joints and not free):
        raise GroundingError(
            f"{where} needs the robot's root body {name or '(unnamed)'!r} named and hanging from one free joint "
            f"or none (the twin adds one); it hangs from {', '.join(joints)}: replace them with a <freejoint/>"
        )
    body = base
    while body != root:
        if m.body_jntnum[body]:
            raise GroundingError(
                f"{where}: robot.base_body {robot.base_body!r} moves in the root body {name!r} by joint "
                f"{m.joint(int(m.body_jntadr[body])).name!r}: name the root (or a body fixed to it) as base_body"
            )
        body = int(m.body_parentid[body])
    world_parts = [(f"static.{n}.bodies", b) for n, st in robot.static.items() for b in st.bodies]
    world_parts += [(f"fixtures.{n}.housing", b) for n, fx in robot.fixtures.items() for b in fx.housing]
    world_parts += [
        (f"fixtures.{n}.joint", m.body(int(m.jnt_bodyid[m.joint(fx.joint).id])).name)
        for n, fx in robot.fixtures.items()
    ]
    for key, b in world_parts:
        if m.body_rootid[m.body(b).id] == root:
            raise GroundingError(
                f"{where}: {key}: body {b!r} hangs from the robot's root {name!r}, so it would move with the base; "
                "put the world's bodies in an MJCF world beside the robot (mjcf: with urdf:)"
            )
    if not free:
        spec.body(name).add_freejoint()
        m = _compile(spec, robot)
    return _off_the_floor(spec, m, robot)


def _off_the_floor(spec: mujoco.MjSpec, m: mujoco.MjModel, robot: RobotDescription) -> mujoco.MjModel:
    """The model with the contacts of the robot's platform (the bodies of its root's subtree that no arm or gripper
    joint moves: chassis, wheels, casters) with the world body (the floor) excluded: the platform stands on its floor
    wherever the base is, placed each frame or kept where the model puts it; an arm link on the floor still counts.
    Bodies welded to the world are left out: MuJoCo never collides them with the world body (a fixed arm's base)."""
    root = int(m.body_rootid[m.body(robot.base_body).id])
    watched = [int(m.jnt_qposadr[m.joint(j).id]) for j in robot.robot_joints]
    moved: list[bool] = np.any(_body_qpos(m)[:, watched], axis=1).tolist()
    platform = [
        m.body(b).name
        for b in range(1, m.nbody)
        if m.body_rootid[b] == root and m.body_weldid[b] and not moved[b] and m.body(b).name and _solid(m, b)
    ]
    for b in platform:
        spec.add_exclude(bodyname1=b, bodyname2=m.body(0).name)
    return _compile(spec, robot) if platform else m


def _solid(m: mujoco.MjModel, body: int) -> bool:
    """Whether `body` has a geom that collides."""
    geoms = range(m.body_geomadr[body], m.body_geomadr[body] + m.body_geomnum[body])
    return any(m.geom_contype[g] or m.geom_conaffinity[g] for g in geoms)


def _base_slot(m: mujoco.MjModel, d: mujoco.MjData, robot: RobotDescription) -> tuple[int, np.ndarray, np.ndarray]:
    """(qpos address of the root's free joint, the root's pose in the base body): the base body is fixed in
    the root (`_free_base`), so its pose there is read once, the root set at the origin."""
    base = m.body(robot.base_body).id
    root = int(m.body_rootid[base])
    at = int(m.jnt_qposadr[m.body_jntadr[root]])
    d.qpos[at : at + 7] = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    mujoco.mj_kinematics(m, d)
    position, quaternion = np.empty(3), np.empty(4)
    mujoco.mju_negPose(position, quaternion, d.xpos[base].copy(), d.xquat[base].copy())
    mujoco.mj_resetData(m, d)
    return at, position, quaternion


def _id(m: mujoco.MjModel, kind: mujoco.mjtObj, name: str, what: str) -> int:
    i = mujoco.mj_name2id(m, kind, name)
    if i < 0:
        count = {
            mujoco.mjtObj.mjOBJ_JOINT: m.njnt,
            mujoco.mjtObj.mjOBJ_BODY: m.nbody,
            mujoco.mjtObj.mjOBJ_SITE: m.nsite,
        }
        names = [mujoco.mj_id2name(m, kind, k) or "" for k in range(count.get(kind, 0))]
        raise GroundingError(f"{what} {name!r} not found{did_you_mean(name, [n for n in names if n])}")
    return i


def _followers(m: mujoco.MjModel) -> list[tuple[int, int, float, float, tuple[float, ...]]]:
    """(follower qpos, leader qpos, their reference positions, polynomial) of every active joint equality
    between two hinge or slide joints (a URDF <mimic> becomes one), each after the one setting its leader: by
    how many followers up its chain of leaders goes (a telescope's stages, Stretch's arm, couple three deep)."""
    out = []
    for e in range(m.neq):
        if m.eq_type[e] != int(mujoco.mjtEq.mjEQ_JOINT) or m.eq_obj2id[e] < 0 or not m.eq_active0[e]:
            continue
        f, lead = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        fa, la = int(m.jnt_qposadr[f]), int(m.jnt_qposadr[lead])
        out.append((fa, la, float(m.qpos0[fa]), float(m.qpos0[la]), tuple(m.eq_data[e, :5].tolist())))
    leader_of = {f: lead for f, lead, *_ in out}

    def depth(follower: int) -> int:
        steps = 0
        while (follower := leader_of.get(follower, -1)) in leader_of and steps < len(leader_of):  # (a loop ends)
            steps += 1
        return steps

    return sorted(out, key=lambda row: depth(row[0]))


def model_joint_limits(m: mujoco.MjModel, joints: Sequence[str]) -> dict[str, JointLimit]:
    """The compiled model's own limits of `joints`: range (limited joints) and effort, the tighter of the
    joint's actuatorfrcrange (a URDF's effort limit becomes one) and its actuators' force ranges (Menagerie's
    servos limit force there). MJCF has no velocity limits: give them in robot.yaml's joint_limits."""
    actuated = _actuator_efforts(m)
    out = {}
    for name in joints:
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j < 0:
            continue
        lower = upper = None
        if m.jnt_limited[j]:
            lower, upper = (float(x) for x in m.jnt_range[j])
        servos = actuated.get(j)
        bounds = [] if servos is None else [servos]
        if m.jnt_actfrclimited[j]:
            bounds.append(float(np.max(np.abs(m.jnt_actfrcrange[j]))))
        out[name] = JointLimit(lower, upper, None, min(bounds) if bounds else None)
    return out


_JOINT_TRANSMISSIONS = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
# an actuator whose force follows its control at once, or through a filter that settles on it (<position timeconst>)
_SETTLING = (int(mujoco.mjtDyn.mjDYN_NONE), int(mujoco.mjtDyn.mjDYN_FILTER), int(mujoco.mjtDyn.mjDYN_FILTEREXACT))


@dataclass(frozen=True)
class ServoRange:
    """The positions a joint's position servos command it over (their control ranges as positions of the joint):
    as far as its software moves it, which a model may give narrower than the joint's own range (Menagerie's ALOHA:
    fingers on a 0 to 0.041 m rail, commanded from 0.002 to 0.037)."""

    lower: float
    upper: float
    actuators: tuple[str, ...]


def servo_range(m: mujoco.MjModel, joint: str) -> ServoRange | None:
    """Where the control-limited position servos on `joint`, or on a joint that follows it linearly by an equality
    (ALOHA's servo drives the follower finger), command it; None without one. A position servo (MJCF's <position>)
    is an affine actuator through a joint transmission: its force vanishes at one joint position per control."""
    j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, joint)
    if j < 0:
        return None
    via = {j: (1.0, 0.0)}  # joint -> (scale, offset): `joint`'s position = offset + scale x that joint's
    for e in range(m.neq):
        c0, c1, *higher = (float(c) for c in m.eq_data[e, :5])
        if m.eq_type[e] != int(mujoco.mjtEq.mjEQ_JOINT) or m.eq_obj2id[e] != j or not c1 or any(higher):
            continue
        f = int(m.eq_obj1id[e])
        ref_f, ref_l = float(m.qpos0[m.jnt_qposadr[f]]), float(m.qpos0[m.jnt_qposadr[j]])
        via[f] = (1.0 / c1, ref_l - (ref_f + c0) / c1)  # follower = ref_f + c0 + c1 (leader - ref_l), inverted
    ends, names = [], []
    for a in range(m.nu):
        target = int(m.actuator_trnid[a, 0])
        kp, (b0, b1), gear = float(m.actuator_gainprm[a, 0]), m.actuator_biasprm[a, :2], float(m.actuator_gear[a, 0])
        if (
            m.actuator_trntype[a] not in _JOINT_TRANSMISSIONS
            or target not in via
            or not m.actuator_ctrllimited[a]
            or m.actuator_dyntype[a] not in _SETTLING
            or m.actuator_gaintype[a] != int(mujoco.mjtGain.mjGAIN_FIXED)
            or m.actuator_biastype[a] != int(mujoco.mjtBias.mjBIAS_AFFINE)
            or not (kp and b1 and gear)
        ):
            continue
        scale, offset = via[target]
        # force = kp ctrl + b0 + b1 (gear q): none at q = -(kp ctrl + b0) / (b1 gear)
        ends += [offset - scale * (kp * float(c) + float(b0)) / (float(b1) * gear) for c in m.actuator_ctrlrange[a]]
        names.append(m.actuator(a).name or f"#{a}")
    return ServoRange(min(ends), max(ends), tuple(names)) if ends else None


def _actuator_efforts(m: mujoco.MjModel) -> dict[int, float | None]:
    """Per joint driven by actuators through a joint transmission, the most effort they can exert on it: each
    actuator's largest |forcerange| times |gear| (joint torque = gear x actuator force), summed over the
    joint's actuators; None when one of them is not force-limited. Tendon and other transmissions spread
    their force over several joints by a pose-dependent moment, so they bound no single joint here."""
    out: dict[int, float | None] = {}
    for a in range(m.nu):
        if m.actuator_trntype[a] not in _JOINT_TRANSMISSIONS:
            continue
        j = int(m.actuator_trnid[a, 0])
        effort = None
        if m.actuator_forcelimited[a]:
            effort = float(np.max(np.abs(m.actuator_forcerange[a])) * abs(m.actuator_gear[a, 0]))
        total = out.get(j, 0.0)
        out[j] = None if total is None or effort is None else total + effort
    return out


def _load(robot: RobotDescription) -> mujoco.MjSpec:
    """The model (MJCF, URDF, or URDF attached into an MJCF world), with the grasp site added when the
    description gives it as a link and offset, and a free box body for every object described by a box."""
    spec = _world(robot)
    try:
        if robot.grasp_offset is not None:
            if any(site.name == robot.ee_site for site in spec.sites):
                raise GroundingError(f"{robot.source}: the model already has a site {robot.ee_site!r}")
            body = spec.body(robot.ee_body)
            if body is None:
                names = [b.name for b in spec.bodies]
                raise GroundingError(
                    f"{robot.source}: robot.grasp_point.link {robot.ee_body!r} is not a body of "
                    f"{robot.model_file}{did_you_mean(robot.ee_body, names)}"
                )
            body.add_site(name=robot.ee_site, pos=list(robot.grasp_offset))
        for name, geom in robot.objects.items():
            if geom.box is not None:
                body = spec.worldbody.add_body(name=name)
                body.add_freejoint(name=f"{name}_free")
                body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=list(geom.box))
        return spec
    except GroundingError:
        raise
    except Exception as exc:  # MuJoCo raises ValueError with the parser's message
        raise GroundingError(f"{robot.source}: cannot load {str(robot.model_file)!r}: {mujoco_message(exc)}") from None


def _world(robot: RobotDescription) -> mujoco.MjSpec:
    """The MJCF as it is, the URDF's rewritten XML, or the URDF robot attached into the MJCF world."""
    scene = None
    if robot.mjcf is not None:
        path = Path(robot.mjcf)
        if not path.is_file():
            raise GroundingError(f"{robot.source}: mjcf {str(path)!r} does not exist")
        try:
            with mujoco_warnings():
                scene = mujoco.MjSpec.from_file(str(path))
        except Exception as exc:
            raise GroundingError(f"{robot.source}: cannot load mjcf {str(path)!r}: {mujoco_message(exc)}") from None
        scene.compiler.fusestatic = False  # keep every body robot.yaml may name (Menagerie's TIAGo fuses a table away)
    if robot.urdf is None:
        assert scene is not None
        return scene
    try:
        with mujoco_warnings():
            arm = mujoco.MjSpec.from_string(robot.urdf.mujoco_xml)
    except Exception as exc:
        raise GroundingError(
            f"{robot.source}: MuJoCo cannot read urdf {str(robot.urdf.path)!r}: {mujoco_message(exc)}"
        ) from None
    if scene is None and robot.base_pose is None:
        return arm
    scene = scene if scene is not None else mujoco.MjSpec()
    pose = robot.base_pose
    quat = np.zeros(4)
    mujoco.mju_euler2Quat(quat, pose.rpy if pose else np.zeros(3), "XYZ")
    frame = scene.worldbody.add_frame(pos=list(pose.position) if pose else [0, 0, 0], quat=list(quat))
    with mujoco_warnings():  # an empty prefix keeps the URDF's names, which the description uses
        scene.attach(arm, frame=frame, prefix="")
    return scene


_warnings_lock = threading.RLock()  # MuJoCo's warning handler and Python's warning filters are global
_warned: set[str] = set()  # the MuJoCo warnings this process has shown
_UNSAVED = "Attaching a spec with an empty prefix"  # may prevent the model from being saved


@contextlib.contextmanager
def mujoco_warnings() -> Iterator[None]:
    """MuJoCo's warnings while it reads or compiles a model, each shown once in the process (as a Python
    warning). MuJoCo gives each twice, printed by its C library (appending to MUJOCO_LOG.TXT in the working
    folder) and raised by its bindings, and again at every compile: `robot init` compiles a model five
    times, so an `<attach>` conflict (impratio, cone) was said five times over. The warning that an empty
    attach prefix may keep the model from being saved is dropped: the twin never saves it."""
    with _warnings_lock:
        printed: list[str] = []  # the C library's, which has the first line of a raised one
        handler = mujoco.get_mju_user_warning()
        mujoco.set_mju_user_warning(printed.append)
        try:
            with warnings.catch_warnings(record=True) as raised:
                warnings.simplefilter("always", UserWarning)  # every one, to be shown once below
                yield
        finally:
            mujoco.set_mju_user_warning(handler)
            for w in raised:
                if w.category is not UserWarning:  # not MuJoCo's: as it came
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            for text in [str(w.message) for w in raised if w.category is UserWarning] + printed:
                if not text.startswith(_UNSAVED) and not any(seen.startswith(text) for seen in _warned):
                    _warned.add(text)
                    warnings.warn(f"MuJoCo: {text}", UserWarning, stacklevel=3)


def _compile(spec: mujoco.MjSpec, robot: RobotDescription) -> mujoco.MjModel:
    try:
        with mujoco_warnings():
            return spec.compile()
    except Exception as exc:
        raise GroundingError(
            f"{robot.source}: cannot compile {str(robot.model_file)!r}: {mujoco_message(exc)}"
        ) from None


def mujoco_message(exc: Exception) -> str:
    """MuJoCo's parser or compiler error on one line (it spans several: the error, then the element), with
    what to do when a file it names is missing."""
    message = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    if "Error opening file" in message:
        message += (
            " (a mesh or other asset it names is missing: MJCF finds them relative to the file, under "
            "<compiler meshdir=... assetdir=...>)"
        )
    return message


def _exclude_within_entities(spec: mujoco.MjSpec, m: mujoco.MjModel, body_entity: list[str]) -> bool:
    """Exclude collisions between two bodies of the same entity (the arm's links): gaps are kept between
    entities only, so mj_collision would compute these contacts for nothing. Returns whether any was added."""
    solid = {int(m.geom_bodyid[g]) for g in range(m.ngeom) if m.geom_contype[g] or m.geom_conaffinity[g]}
    named = sorted(b for b in solid if m.body(b).name)
    added = False
    for i, a in enumerate(named):
        for b in named[i + 1 :]:
            if body_entity[a] == body_entity[b]:
                spec.add_exclude(bodyname1=m.body(a).name, bodyname2=m.body(b).name)
                added = True
    return added
