"""The one grounding entry point live nodes, bag replay and the simulator all call: RobotState -> PredicateFrame.

`Grounder.step` validates the frame (time, joints, object names), samples the slower streams (latest value
plus age, stale beyond the configured limits), asks the kinematic twin for geometry (or takes a given
FrameGeometry, which is how tests run without MuJoCo), and runs the estimator families in dependency
order. A predicate that cannot be decided this frame is listed in `unknown` and keeps its last decided
value in `values` (False before its first decision), so the monitor always has a letter to read and
can still tell a guess from a fact.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from safety_monitor.errors import GroundingError
from safety_monitor.files import config_dir
from safety_monitor.frames import BASE_POSE, FrozenValues, Pose, RobotState, Wrench
from safety_monitor.grounding import (
    _geomath,
    contact,
    containment,
    contamination,
    fixtures,
    grasp,
    joint_limits,
    skills,
)
from safety_monitor.grounding.debounce import Tri
from safety_monitor.grounding.description import GripperKind, RobotDescription, load_robot_description
from safety_monitor.grounding.geometry import FrameGeometry
from safety_monitor.grounding.inputs import FrameInputs, PredicateDoc
from safety_monitor.grounding.joint_limits import JointLimitEstimator, merge_limits
from safety_monitor.grounding.motion import TIME_EPS, Carry, Track, in_frame, quat_to_matrix
from safety_monitor.grounding.semantics import ObjectCatalog, load_object_catalog
from safety_monitor.grounding.thresholds import Thresholds, load_thresholds
from safety_monitor.grounding.urdf import JointLimit
from safety_monitor.records import direct_init

if TYPE_CHECKING:  # the twin imports MuJoCo; tests with a given FrameGeometry never load it
    from safety_monitor.grounding.twin import KinematicTwin

PREDICATE_DOCS: dict[str, PredicateDoc] = {  # in the order `step` joins the families' values (each in DOCS order)
    **grasp.DOCS,
    **contact.DOCS,
    **contamination.DOCS,
    **skills.DOCS,
    **fixtures.DOCS,
    **containment.DOCS,
    **joint_limits.DOCS,
}
PREDICATES: tuple[str, ...] = tuple(PREDICATE_DOCS)
# a mobile base whose place is unknown leaves every predicate the twin's geometry decides undecided: all but the
# joint-limit ones, which come last in PREDICATES
_UNPLACED: tuple[Tri, ...] = (None,) * (len(PREDICATES) - len(joint_limits.DOCS))


@direct_init
@dataclass(frozen=True)
class PredicateFrame:
    """Named predicate values for one control frame.

    `values` has every predicate, read-only (the same object on frames that repeat the last one's decisions);
    those in `unknown` could not be decided this frame (missing, NaN or stale input) and carry their last
    decided value. `stale` maps each sampled stream older than its
    limit (`wrench`, `object_pose/<name>`; never received: inf) to its age in seconds. `objects` names, for
    each object-bound predicate that holds (decided) this frame, the objects or fixtures it is about (the
    focus object, the dropped one, a transfer's object and container), so an alert can say which.
    """

    t: float
    frame: int
    values: Mapping[str, bool]
    unknown: frozenset[str]
    stale: dict[str, float]
    objects: dict[str, tuple[str, ...]]


class Grounder:
    """Stateful estimator set for one robot; call `step` once per control frame, `reset` between episodes."""

    # Its attributes in slots: Python 3.11 keeps an instance's attributes beside it (and reads them fast) only up
    # to 29 names a class; past that every read goes through a plain dict (1.5 thousand instructions a frame
    # here). `__dict__` keeps the class open to other attributes (tests replace `step`).
    __slots__ = (
        "__dict__",
        "_accepted",
        "_beyond",
        "_by_family",
        "_carry_memo",
        "_checked_names",
        "_closing",
        "_contact",
        "_containment",
        "_contamination",
        "_decided",
        "_ee_track",
        "_families",
        "_fixture_inputs",
        "_fixture_window",
        "_fixtures",
        "_frame",
        "_grasp",
        "_limits",
        "_motion",
        "_motion_answer",
        "_motion_limits",
        "_motion_times",
        "_namers",
        "_namers_for",
        "_names",
        "_naming",
        "_placing",
        "_pose_streams",
        "_reading_terms",
        "_required",
        "_skills",
        "_t",
        "_twin",
        "_unknown",
        "_unplaced",
        "_values",
        "catalog",
        "control_rate_hz",
        "counts",
        "joint_limits",
        "mobile_base",
        "predicates",
        "robot",
        "thresholds",
        "wrench_sensor",
    )

    def __init__(
        self,
        robot: RobotDescription,
        objects: ObjectCatalog,
        thresholds: Thresholds,
        control_rate_hz: float,
        twin: KinematicTwin | None = None,
        wrench_sensor: bool = True,
        mobile_base: bool = False,
    ):
        _check_entities(robot, objects)
        if twin is not None and twin.mobile_base != mobile_base:
            raise GroundingError(
                f"the twin was built with mobile_base={twin.mobile_base}, the grounder with {mobile_base}"
            )
        self.robot, self.catalog, self.thresholds = robot, objects, thresholds
        self.control_rate_hz = float(control_rate_hz)
        self.counts = thresholds.frames(control_rate_hz)
        self._required = robot.required_joints  # a property that builds its tuple on every read
        self._accepted = robot.accepted_joints
        # the described objects and the names of their pose streams in `stale`, built once
        self._pose_streams = (tuple(robot.objects), tuple(f"object_pose/{o}" for o in robot.objects))
        self._twin = twin
        # what `_geomath.frame_readings` checks a frame against (the terms of `_usable_poses` and `_usable_wrench`)
        max_age = thresholds.max_age_s
        self._reading_terms = (
            *self._pose_streams,
            max_age.object_pose,
            self._pose_ok,
            max_age.wrench,
            wrench_sensor,
        )
        # False: no wrench stream is configured (topic mapping `wrench: none`): the predicates that read it are
        # not grounded (constantly false, `applicability` says their properties do not apply), never stale
        self.wrench_sensor = wrench_sensor
        # True: the base moves (topic mapping `world_frame`): each frame's base pose places the twin's robot, and
        # a frame without a usable one has every predicate of the geometry unknown
        self.mobile_base = mobile_base
        self.predicates = PREDICATES
        self.joint_limits: dict[str, JointLimit] = dict(robot.joint_limits)
        if twin is not None:
            self._add_model_limits(twin)
        self.reset()

    @property
    def twin(self):
        """The kinematic twin, built on first use (imports MuJoCo)."""
        if self._twin is None:
            from safety_monitor.grounding.twin import twin_for

            self._twin = twin_for(self.robot, self.thresholds, self.mobile_base)
            self._add_model_limits(self._twin)
            self._limits = JointLimitEstimator(self.joint_limits, self.thresholds.joint_limits, self.robot.robot_joints)
        return self._twin

    @property
    def warmup_frames(self) -> int:
        """Frames a fresh grounder needs before every history-dependent predicate reads only evidence gathered
        since its start: the motion window, then the stability latch on it, then the longest debounce,
        persistence or onset window (contact tolerances fire on the frame after theirs). Timeouts are not
        counted: a timer that was not started cannot expire falsely. After a gap the Estimator stage restarts
        the grounder (`reset`) and publishes this many frames blind."""
        c = self.counts
        windows = (
            c.grasp_persistence,
            c.content_entry_persistence,
            c.skill_onset_window + 1,
            c.forbidden_contact_tolerance + 1,
            c.clean_contact_tolerance + 1,
            c.wrench_persistence,
        )
        return c.motion_window + 1 + c.stability_persistence + max(windows)

    def _add_model_limits(self, twin: KinematicTwin) -> None:
        """The compiled model's own joint limits under the description's (a URDF's, robot.yaml's)."""
        from safety_monitor.grounding.twin import model_joint_limits

        self.joint_limits = merge_limits(
            self.robot.joint_limits, model_joint_limits(twin.model, self.robot.robot_joints)
        )

    def restart(self) -> None:
        """As built: `reset`, and the twin's MjData and kept geometry too, so a process that scores one
        recording after another builds the robot's model once and still grounds each as a new grounder would."""
        if self._twin is not None:
            self._twin.restart()
        self.reset()

    def reset(self) -> None:
        """Forget all estimator state and time (a new episode or recording, or the evidence before a gap)."""
        self._reset_geometry()
        th, r = self.thresholds, self.robot
        self._limits = JointLimitEstimator(self.joint_limits, th.joint_limits, r.robot_joints)
        # the previous frame's decisions (PREDICATES order, None: undecided) and what they made
        self._decided: tuple[Tri, ...] = ()
        self._by_family: tuple[tuple[Tri, ...] | None, ...] = _NO_FAMILIES  # the family tuples `_decided` joins
        self._values = FrozenValues(dict.fromkeys(PREDICATES, False))
        self._unknown: frozenset[str] = frozenset()
        self._checked_names: set[tuple[str, ...]] = set()
        self._names: tuple[str, ...] = ()  # the previous frame's joint names (checked)
        self._frame = -1
        self._t: float | None = None
        self._unplaced = False  # a mobile base: the last frame had no usable base pose
        self._placing = 0  # frames still to decide the geometry's predicates unknown after the base pose returned

    def _reset_geometry(self) -> None:
        """Forget the state of every estimator that reads the twin's geometry (all but the joint limits')."""
        th, counts, r, cat = self.thresholds, self.counts, self.robot, self.catalog
        graspable = tuple(o for o in r.objects if cat.has(o, "graspable"))
        self._grasp = grasp.GraspEstimator(graspable, th, counts)
        self._fixtures = fixtures.FixtureEstimator(r, cat, th, counts, self._grasp)
        self._contact = contact.ContactEstimator(r, cat, th, counts, self._grasp, self._fixtures, self.wrench_sensor)
        self._contamination = contamination.ContaminationEstimator(r, cat, th, counts)
        self._containment = containment.ContainmentEstimator(r, cat, th, counts, self._grasp)
        self._skills = skills.SkillEstimator(r, cat, th, counts, self._grasp, self._fixtures)
        # the object-bound families and their predicates, and (`_finish`) the name_objects of those that may name
        # one for the values `_namers_for`
        self._naming = (
            (self._grasp, tuple(grasp.DOCS)),
            (self._fixtures, tuple(fixtures.DOCS)),
            (self._contact, tuple(contact.DOCS)),
            (self._containment, tuple(containment.DOCS)),
        )
        self._namers_for: Mapping[str, bool] | None = None
        self._namers: tuple[Callable[[Mapping[str, bool], dict[str, tuple[str, ...]]], None], ...] = ()
        self._families = (  # in dependency order, as `step` runs them
            self._grasp,
            self._fixtures,
            self._contact,
            self._contamination,
            self._containment,
            self._skills,
        )
        horizon = th.max_age_s.object_pose + 2 * th.durations_s.motion_window + 1.0 / self.control_rate_hz
        self._motion_limits = (th.durations_s.motion_window, th.distances_m.reach)
        self._ee_track = Track(horizon)
        self._motion = {o: _ObjectMotion(horizon) for o in r.objects}
        # `_object_motion`'s short path reads each track's times (one list for the track's life), each object's side
        # of the reach on the last frame (True beyond, False within, None unknown) and hands out the last answer
        self._motion_times = tuple(m.track.times for m in self._motion.values())
        self._beyond: list[bool | None] = [None] * len(self._motion)
        self._motion_answer: tuple[_PerObject, _PerObject] = ({}, {})  # (none handed out before a side is known)
        self._carry_memo: dict[str, tuple[tuple[float, bytes], tuple[np.ndarray, np.ndarray]]] = {}
        g = r.gripper  # (joint, threshold, upward) per gripper joint, None without one: Gripper.closed's reads
        self._closing = (
            None
            if g.kind is GripperKind.NONE
            else tuple(zip(g.joints, (p.at for p in g.closed_past), (p.upward for p in g.closed_past)))
        )
        self._fixture_window = counts.motion_window + 1
        # per fixture: its joint, its closed position and range (Fixture.open_fraction's terms, read every frame
        # without a call), and its open fractions over the motion window (`_geomath.joint_inputs` keeps them)
        self._fixture_inputs: tuple[tuple[str, str, float, float, list[float]], ...] = tuple(
            (f, fx.joint, fx.closed, fx.open - fx.closed, []) for f, fx in r.fixtures.items()
        )

    # ------------------------------------------------------------------------------------------------
    def step(self, state: RobotState, geometry: FrameGeometry | None = None) -> PredicateFrame:
        """Ground one frame. `geometry` replaces the twin (tests, or an external geometry source)."""
        frame = self._frame + 1
        stale: dict[str, float] = {}
        # most frames: the checks below in one call
        readings = _geomath.frame_readings(state, self._t, self._names, stale, self._reading_terms)
        if readings is not None:
            joints, poses, ages, wrench = readings
        else:  # the first frame, new joint names, or a reading to convert or report: each check says what
            stale = {}
            self._check_time(state.t, frame)
            joints = self._joints(state, frame)
            poses, ages = self._usable_poses(state, stale)
            wrench = self._usable_wrench(state, stale)
        base = None
        if self.mobile_base and geometry is None:
            base = self._usable_base(state, stale)
            if base is None:
                return self._unplaced_frame(state, joints, stale, frame)
            if self._unplaced:  # the base returned: what was gathered before it was lost is not joined to what follows
                self._reset_geometry()
                self._unplaced, self._placing = False, self.warmup_frames
        if geometry is None:
            carried = self._carried(state, poses, ages) if self._grasp.held else None  # most frames: none held
            twin = self._twin if self._twin is not None else self.twin  # (the property builds it on first use)
            geometry = twin.compute(state.joint_names, state.joint_position, poses, carried, base)
        else:
            geometry = geometry.forget(frozenset(o for o in self.robot.objects if o not in poses))
        speed, slip = self._object_motion(state, poses, ages, geometry)
        # whether the gripper is closed, and each fixture's open fraction and its change over the motion window, in one
        # call (Gripper.closed and the loop over the fixtures cost four thousand instructions a frame in Python)
        try:
            closed, fractions, deltas = _geomath.joint_inputs(
                joints, self._closing, self._fixture_inputs, self._fixture_window
            )
        except TypeError:  # (nothing changed) a threshold that is not a float: Gripper.closed compares it exactly
            closed = self.robot.gripper.closed(joints)
            _, fractions, deltas = _geomath.joint_inputs(joints, None, self._fixture_inputs, self._fixture_window)
        # by position, through tuple.__new__ itself: the NamedTuple's own __new__ is a Python call (2 thousand
        # instructions a frame), keywords cost more again
        inp = _new_tuple(
            FrameInputs,
            (
                state.t,  # t
                frame,  # frame
                geometry,  # geometry
                closed,  # gripper_closed
                fractions,  # fixture_fraction
                deltas,  # fixture_delta
                speed,  # object_speed
                slip,  # object_slip
                wrench,  # wrench
                frozenset(state.events),  # events
            ),
        )
        by_grasp = self._grasp.step(inp)  # the families in dependency order
        by_fixtures = self._fixtures.step(inp)
        by_contact = self._contact.step(inp)
        by_contamination = self._contamination.step(inp)
        by_containment = self._containment.step(inp)
        by_skills = self._skills.step(inp)
        by_limits = self._limits.step(state, joints)
        if self._placing:  # the geometry's estimators gather evidence again since the base pose returned
            self._placing -= 1
            self._by_family = _NO_FAMILIES
            return self._finish(state, frame, (*_UNPLACED, *by_limits), stale)
        by_family = (by_grasp, by_contact, by_contamination, by_skills, by_fixtures, by_containment, by_limits)
        if by_family == self._by_family:  # most frames: every family decides as on the last frame, so the joined
            # decisions are the last frame's (`_by_family` always joins to `_decided`): not built nor compared again
            # (seven short tuples compared, each item first by identity: the joined tuple is neither built nor compared)
            return self._finish(state, frame, None, stale)
        self._by_family = by_family
        decided = (  # PREDICATES order
            *by_grasp,
            *by_contact,
            *by_contamination,
            *by_skills,
            *by_fixtures,
            *by_containment,
            *by_limits,
        )
        return self._finish(state, frame, decided, stale)

    def _unplaced_frame(
        self, state: RobotState, joints: dict[str, float], stale: dict[str, float], frame: int
    ) -> PredicateFrame:
        """A frame of a mobile base without a usable pose: where the robot stands in the world is unknown, so
        every predicate the geometry decides is too, and its estimators do not step (they start afresh, and
        decide nothing for `warmup_frames`, when the base returns); the joint limits are the joints' alone."""
        self._unplaced = True
        self._placing = 0
        self._by_family = _NO_FAMILIES
        return self._finish(state, frame, (*_UNPLACED, *self._limits.step(state, joints)), stale)

    def _finish(
        self, state: RobotState, frame: int, decided: tuple[Tri, ...] | None, stale: dict[str, float]
    ) -> PredicateFrame:
        """The frame from this frame's decisions (PREDICATES order; None: the last frame's, known by identity)."""
        if decided is None or decided == self._decided:  # most frames: every decision as on the previous one, so its
            # values (read-only: handed out again, no copy)
            values, unknown = self._values, self._unknown
        else:
            values, unknown = self._decide(decided)
        self._frame, self._t = frame, state.t
        if values is not self._namers_for:  # (the same values object is handed out while the decisions repeat)
            # a family names only its own predicates that hold (PredicateFrame.objects): one with none that holds is
            # not asked (on most frames the contact family, and the containment family but during a transfer)
            self._namers = tuple(f.name_objects for f, own in self._naming if any([values[p] for p in own]))
            self._namers_for = values
        objects: dict[str, tuple[str, ...]] = {}
        for name_objects in self._namers:  # read only the state the families keep, for the predicates that hold
            name_objects(values, objects)
        if unknown:
            for p in unknown & objects.keys():
                del objects[p]
        return _record(PredicateFrame, _FRAME_FIELDS, state.t, frame, values, unknown, stale, objects)

    def _decide(self, decided: tuple[Tri, ...]) -> tuple[FrozenValues, frozenset[str]]:
        """Each predicate's value from this frame's decisions (PREDICATES order), an undecided one (None)
        keeping its last value; kept for the next frame, which hands out the same values if its decisions repeat."""
        if None in decided:
            last = self._values
            values = FrozenValues(
                {k: last[k] if v is None else bool(v) for k, v in zip(PREDICATES, decided, strict=True)}
            )
            unknown = frozenset(k for k, v in zip(PREDICATES, decided) if v is None)
        else:
            values, unknown = FrozenValues(zip(PREDICATES, map(bool, decided), strict=True)), frozenset()
        self._decided, self._values, self._unknown = decided, values, unknown
        return values, unknown

    # ------------------------------------------------------------------------------------------------
    def _check_time(self, t: float, frame: int) -> None:
        if not isinstance(t, (int, float)) or not math.isfinite(t):
            raise GroundingError(f"frame {frame}: time t={t!r} is not a finite number of seconds")
        if self._t is not None and t <= self._t:
            raise GroundingError(
                f"frame {frame}: time {t!r} s is not after the previous frame's {self._t!r} s "
                "(non-monotonic time; reset() between recordings)"
            )

    def _joints(self, state: RobotState, frame: int) -> dict[str, float]:
        r = self.robot
        names = state.joint_names
        try:  # a float64 vector, as every source gives it: the name -> value dict in one call
            values, finite = _geomath.named_values(names, state.joint_position)
        except (TypeError, ValueError):
            pos = np.asarray(state.joint_position, dtype=float)
            if pos.shape != (len(names),):
                raise GroundingError(
                    f"frame {frame}: {len(names)} joint names but joint_position has shape {pos.shape}"
                ) from None
            values, finite = _geomath.named_values(names, pos)
        required = self._required
        # the name list repeats frame after frame, mostly as the same tuple (not even hashed then): checked once
        if names is not self._names and names not in self._checked_names:
            extra = [n for n in names if n not in required and n not in self._accepted]
            if extra:
                raise GroundingError(
                    f"frame {frame}: unknown joint(s) {', '.join(map(repr, extra))} not in "
                    f"{r.source} (list them under ignored_joints to accept them)"
                )
            missing = [j for j in required if j not in names]
            if missing:
                raise GroundingError(f"frame {frame}: joint(s) {', '.join(map(repr, missing))} missing from the frame")
            self._checked_names.add(names)
        self._names = names
        if not finite:
            bad = [j for j in required if not math.isfinite(values[j])]
            if bad:
                raise GroundingError(f"frame {frame}: joint(s) {', '.join(map(repr, bad))} are NaN or infinite")
        return values

    def _usable_poses(self, state: RobotState, stale: dict[str, float]) -> tuple[dict[str, Pose], dict[str, float]]:
        """The object poses fit to use this frame, and their ages (s); the others' ages go to `stale`. The walk
        over the objects is C (`_geomath.usable_poses`: 19 thousand instructions a frame in Python)."""
        given, ages = state.object_poses, state.object_ages
        if type(given) is not dict or type(ages) is not dict:  # another Mapping (every source builds dicts)
            given, ages = dict(given), dict(ages)
        objects, stale_keys = self._pose_streams
        found = _geomath.usable_poses(
            objects, stale_keys, given, ages, self.thresholds.max_age_s.object_pose, stale, self._pose_ok
        )
        if found is None:
            unknown_names = {o for o in (*given, *ages) if o not in self.robot.objects}
            raise GroundingError(
                f"object(s) {', '.join(map(repr, sorted(unknown_names)))} are not in {self.robot.source} (objects:)"
            )
        return found

    @staticmethod
    def _pose_ok(pose: Pose) -> bool:
        """Shapes right, every value finite, quaternion not zero (any array-like values)."""
        p, q = np.asarray(pose.position, dtype=float), np.asarray(pose.quaternion, dtype=float)
        return p.shape == (3,) and q.shape == (4,) and _geomath.pose_finite(p, q)

    def _usable_base(self, state: RobotState, stale: dict[str, float]) -> Pose | None:
        """The mobile base's pose if fit to place the robot this frame (received, no older than an object pose
        may be, finite, a rotation); else None, its age in `stale` when it is missing or old."""
        pose, age = state.base_pose, state.base_age
        age = 0.0 if age is None else float(age)
        if pose is None or not math.isfinite(age) or age > self.thresholds.max_age_s.object_pose:
            stale[BASE_POSE] = age if pose is not None and math.isfinite(age) else math.inf
            return None
        try:
            return pose if _geomath.pose_usable(pose) else None
        except TypeError:
            return pose if self._pose_ok(pose) else None

    def _usable_wrench(self, state: RobotState, stale: dict[str, float]) -> Wrench | None:
        w = state.wrench
        if not self.wrench_sensor:
            return None
        if w is None:
            stale["wrench"] = math.inf
            return None
        age = 0.0 if state.wrench_age is None else float(state.wrench_age)
        if not math.isfinite(age) or age > self.thresholds.max_age_s.wrench:
            stale["wrench"] = age if math.isfinite(age) else math.inf
            return None
        try:  # float64 3-vectors, as every source gives them: checked in one call
            finite = _geomath.wrench_finite(w)
        except (TypeError, ValueError):
            finite = _finite_wrench(w)
        return w if finite else None

    def _carried(self, state: RobotState, poses: Mapping[str, Pose], ages: Mapping[str, float]) -> Carry | None:
        """Objects held on the previous frame whose pose is older than this frame: given this frame's
        end-effector pose, their pose relative to the end-effector at the time it was measured
        (interpolated between frames, this one included; the twin moves them with the hand since then).

        A held pose repeats for many control frames (perception is slower), so each object's answer is kept
        for as long as its pose and measurement time stay the same and the end-effector samples around that
        time were all recorded (not this frame's, which the twin hands over anew)."""
        t = state.t
        carried = []
        for o in self._grasp.held:
            pose = poses.get(o)
            if pose is not None:
                age = ages[o]
                if age > 0.0:
                    carried.append((o, t - age, pose))
        if not carried:
            return None
        track, memo = self._ee_track, self._carry_memo

        def relative(ee_position: np.ndarray, ee_rotation: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
            out = {}
            later = None
            for o, measured, pose in carried:
                values = _geomath.pose_key(pose)  # float64 arrays, as every source gives them: in one call
                if values is None:
                    values = _pose_bytes(pose)
                key = (measured, values)
                known = memo.get(o)
                if known is not None and known[0] == key:
                    placed = known[1]
                else:
                    if later is None:
                        later = (t, tuple(ee_position.tolist()), ee_rotation)
                    at = track.pose_at(measured, later)
                    if at is None:
                        continue
                    ee_pos, ee_rot = at
                    placed = (
                        np.array(in_frame(ee_pos, ee_rot, pose.position)),
                        _geomath.relative_rotation(ee_rot, quat_to_matrix(pose.quaternion)),
                    )
                    if track.times[-1] > measured + TIME_EPS:  # interpolated between recorded samples only
                        placed[0].flags.writeable = placed[1].flags.writeable = False  # kept: handed out, read
                        memo[o] = (key, placed)
                out[o] = placed  # (the twin reads them only: no copy a frame)
            return out

        return relative

    def _object_motion(
        self, state: RobotState, poses: Mapping[str, Pose], ages: Mapping[str, float], geo: FrameGeometry
    ) -> tuple[_PerObject, _PerObject]:
        """Per object: speed over the motion window, and drift relative to the end-effector over it.

        Each pose is placed at its measurement time (frame time minus age) and compared with the
        end-effector pose at that time, so a slow perception stream does not read as slip. Drift is only
        tracked for objects within reach of the gripper; one beyond reach has infinite drift.

        Most frames no pose sample is new (a slower stream repeats it) and no object crosses the reach: every
        object's answer is then the last frame's (its speed kept since its last sample, its drift infinite or
        its relative track's kept change), and the last frame's dicts are handed out again (read-only, as every
        family takes them) after one C call that checks all of it (`_geomath.samples_repeat`).
        """
        window, reach = self._motion_limits
        t, ee_track = state.t, self._ee_track
        try:  # ee_track.add's C call without its Python call (every frame); the end-effector's track is never asked
            _geomath.track_add(  # its change, so there is none remembered to forget
                ee_track.times,
                ee_track.positions,
                ee_track.rotations,
                t,
                geo.ee_position,
                geo.ee_rotation,
                ee_track.horizon,
                TIME_EPS,
            )
        except (TypeError, ValueError):  # (nothing changed) a position that is not a float64 3-vector: numpy converts
            ee_track.add(t, geo.ee_position, geo.ee_rotation)
        gripper_gaps, boxes, inf = geo.gripper_gaps, geo.object_boxes, math.inf
        beyond = self._beyond
        if _geomath.samples_repeat(
            t, TIME_EPS, self._pose_streams[0], poses, ages, self._motion_times, gripper_gaps, reach, beyond
        ):
            return self._motion_answer
        speed: _PerObject = {}
        slip: _PerObject = {}
        for i, (o, m) in enumerate(self._motion.items()):
            pose = poses.get(o)
            track, relative = m.track, m.relative
            if pose is None:  # stale or missing: its motion restarts when the pose returns, never read across the gap
                speed[o] = slip[o] = beyond[i] = None
                if track.times and o in self._grasp.state:  # seen, now gone: whether it rests is unknown until
                    self._grasp.state[o].stable.restart()  # it is seen at rest again (never seen: not yet stable)
                track.clear()
                relative.clear()
                continue
            measured = t - ages[o]
            times = track.times  # Track.add's own test for a repeat of the newest sample (a slower stream
            new = not (times and measured <= times[-1] + TIME_EPS)  # repeats it for many frames): no call then
            if new:
                box = boxes.get(o)
                rot = box.rotation if box is not None else quat_to_matrix(pose.quaternion)
                track.add(measured, pose.position, rot)
                ch = track.change(window)
                m.speed = (ch[0] / ch[2], ch[1] / ch[2]) if ch is not None and ch[2] > 0 else None
            speed[o] = m.speed
            if gripper_gaps.get(o, inf) > reach:  # beyond reach of the hand: certainly not moving with it
                if relative.times:  # most frames: cleared already (no call)
                    relative.clear()
                slip[o], beyond[i] = _BEYOND_REACH, True
                continue
            beyond[i] = False
            if new:
                at = ee_track.pose_at(measured)
                ee_pos, ee_rot = at if at is not None else (ee_track.positions[0], ee_track.rotations[0])
                relative.add(measured, in_frame(ee_pos, ee_rot, pose.position), _geomath.relative_rotation(ee_rot, rot))
            rel = relative.change(window)
            slip[o] = None if rel is None else (rel[0], rel[1])
        self._motion_answer = speed, slip
        return speed, slip


class _ObjectMotion:
    """One object's pose track, its track relative to the end-effector, and its speed over the motion window
    as of the track's newest sample (a slower stream repeats a sample for many control frames)."""

    __slots__ = ("relative", "speed", "track")

    def __init__(self, horizon: float):
        self.track, self.relative = Track(horizon), Track(horizon)
        self.speed: tuple[float, float] | None = None


_PerObject = dict[str, tuple[float, float] | None]  # an object's speed or drift (None: unknown)
# PredicateFrame(...) without the Python call of direct_init's __init__ (in C: a thousand instructions a frame)
_record = _geomath.record
_FRAME_FIELDS = tuple(PredicateFrame.__dataclass_fields__)
_new_tuple = tuple.__new__  # builds a NamedTuple from its values without the class's Python __new__
_NO_FAMILIES: tuple[None, ...] = (None,) * 7  # no family tuples joined into the last decisions (`Grounder._by_family`)
_BEYOND_REACH = (math.inf, math.inf)  # the drift of an object beyond reach of the hand (one tuple for all frames)


def _pose_bytes(pose: Pose) -> bytes:
    """A pose's position and quaternion values as float64 bytes, joined (any array-like values)."""
    return np.asarray(pose.position, dtype=float).tobytes() + np.asarray(pose.quaternion, dtype=float).tobytes()


def _finite_wrench(w: Wrench) -> bool:
    """Every force and torque value finite, value by value (any array-like values)."""
    values = np.asarray(w.force, dtype=float).ravel().tolist() + np.asarray(w.torque, dtype=float).ravel().tolist()
    return all(map(math.isfinite, values))


def _check_entities(robot: RobotDescription, catalog: ObjectCatalog) -> None:
    """Every object, fixture and static body needs a kind, and every kind entry a body."""
    described = set(robot.objects) | set(robot.fixtures) | set(robot.static)
    missing = sorted(described - set(catalog.kinds))
    extra = sorted(set(catalog.kinds) - described)
    if missing:
        raise GroundingError(f"{catalog.source}: no kind for {', '.join(missing)} (described in {robot.source})")
    if extra:
        raise GroundingError(f"{catalog.source}: entities {', '.join(extra)} are not described in {robot.source}")


def load_default_grounder(
    control_rate_hz: float,
    config: str | Path | None = None,
    urdf: Path | None = None,
    wrench_sensor: bool = True,
    mobile_base: bool = False,
) -> Grounder:
    """The one grounder factory (estimator node, replay, simbag, benchmarks). `config`: a robot description
    YAML, or a folder holding robot.yaml (the node's `config_dir`); None: the package's (`config_dir()`).
    objects.yaml and thresholds.yaml are read from the robot description's folder, each one the folder lacks
    from the package's. The twin is built at once, so a robot YAML that does not match its MJCF fails here.
    `urdf`: the URDF in place of the description's `urdf:` (the estimator node's /robot_description).
    `wrench_sensor`: False when the topic mapping has no wrench stream (`StreamMapping.wrench` None).
    `mobile_base`: True when the topic mapping names the frame the base moves in (`StreamMapping.world_frame`)."""
    from safety_monitor.grounding.twin import twin_for

    path = Path(config) if config is not None else config_dir()
    robot_file = path / "robot.yaml" if path.is_dir() else path

    def beside(name: str) -> Path:
        own = robot_file.parent / name
        return own if own.is_file() else config_dir() / name

    robot, thresholds = load_robot_description(robot_file, urdf), load_thresholds(beside("thresholds.yaml"))
    return Grounder(
        robot,
        load_object_catalog(beside("objects.yaml")),
        thresholds,
        control_rate_hz,
        twin=twin_for(robot, thresholds, mobile_base),
        wrench_sensor=wrench_sensor,
        mobile_base=mobile_base,
    )
