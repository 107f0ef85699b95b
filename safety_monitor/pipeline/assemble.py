"""Messages in arrival order -> one RobotState per /joint_states message (DESIGN.md section 2).

One code path for live and replay: the estimator node feeds this from rclpy callbacks, replay feeds
it from a bag, in the order messages arrived. The control-rate joint stream drives the frames; the
wrench and object poses are sampled as their latest value and its age (frame time minus the
sample's header stamp). Times are header stamps; a zero stamp falls back to the arrival time (the driver's
clock: the node clock live, the log time in replay), which also tells a joint stream that went silent (or
stopped while a slower stream goes on) from a clock that stepped.

Bad input is never repaired silently: a message with NaN positions, a stamp that goes backwards or
repeats, or joints that cannot be attributed is dropped and reported as a `StreamIssue`; a stream
older than its limit (or never seen) is reported stale on every frame it affects. A joint stream
whose values stop changing for `StaleLimits.joints_frozen` (stamp time, so live and replay agree) is
a driver repeating its last reading: stale, not a robot at rest; so is a wrench that repeats for
`StaleLimits.wrench_frozen` (a force-torque sensor always shows noise). Only repeats received count: a gap
in a stream (longer than its stale limit) restarts its frozen clock. A frame with stale
joint_states has every predicate unknown; a stale wrench or pose is not handed to the
grounder, so the predicates that read it are unknown whatever the grounder's own age limits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from safety_monitor.enums import IssueKind
from safety_monitor.errors import GroundingError, SourceError
from safety_monitor.files import load_yaml
from safety_monitor.frames import BASE_POSE, JointSample, Pose, PredicateSample, RobotState, StreamIssue, Wrench
from safety_monitor.grounding import _geomath
from safety_monitor.grounding.description import RobotDescription
from safety_monitor.grounding.joint_limits import JumpDetector, jump_issue
from safety_monitor.grounding.thresholds import BaseJump
from safety_monitor.grounding.urdf import JointLimit
from safety_monitor.io.messages import joint_state_sample, pose_of, wrench_of
from safety_monitor.names import did_you_mean
from safety_monitor.pipeline.tf import denormalized, frame_id, rotation_between
from safety_monitor.settings import FROZEN_S, EstimatorSettings, Topics

JOINTS = "joint_states"
WRENCH = "wrench"
GRIPPER_JOINTS = "gripper_joint_states"
MORE_JOINTS = "more_joint_states"


def pose_stream(name: str) -> str:
    """Stream name used in stale sets and issues for an object's pose (the grounder's name too)."""
    return f"object_pose/{name}"


@dataclass(frozen=True)
class JointTopic:
    """One of `StreamMapping.more_joint_states`: a further JointState topic (another arm's driver, a gripper's)
    merged into the frames by joint name as `gripper_joint_states` is. Its names become the robot's before they
    are matched: one in `joint_names` (source name -> robot joint) that joint, any other with `prefix` put
    before it. So two drivers that send the same names (ALOHA's `waist`, ... on `/puppet_left/joint_states`
    and `/puppet_right/joint_states`) give the joints of two arms."""

    topic: str
    prefix: str = ""
    joint_names: Mapping[str, str] = field(default_factory=dict)

    @property
    def stream(self) -> str:
        """Its name in issues and `inspect`'s inputs."""
        return f"{MORE_JOINTS}:{self.topic}"

    def rename(self, names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(self.joint_names.get(n, self.prefix + n) for n in names)


@dataclass(frozen=True)
class StreamMapping:
    """Where each stream lives (topics) and how the source names joints and objects.

    Real bags name things their own way: `joint_names` maps a source joint name to the robot's
    (names not listed are kept), `objects` maps an object name to its pose topic (others use
    `object_pose` with `{name}` substituted). `wrench` None: the robot has no wrist sensor.
    `joint_order`: the robot's joint names for the values of a JointState whose name list is empty
    (servo drivers often send none). `joint_prefix`: put before every name `joint_states` sends that
    `joint_names` does not map (`left/`: one arm's driver of a bimanual robot, its names without the arm's).
    `gripper_joint_states`: a second JointState topic (a gripper's own driver) merged into the frames by name,
    its names put as `joint_states`' are; `more_joint_states`: further such topics, each with names of its own
    (`JointTopic`); only `joint_states` makes frames. `object_frames`: object name ->
    TF frame id; those objects' poses come from `tf`/`tf_static` chained to `base_frame` ('' = the robot
    description's base body) instead of a PoseStamped topic. `world_frame`: the TF frame a mobile base moves in
    (`map`, `odom`; '' = the base stays where the model puts it): the base's pose in it (`base_frame` chained
    to `world_frame`) places the twin's robot each frame, and object poses are in it, TF frames chained to it
    and PoseStamped topics given in it. `episode`: the rollout markers, read by replay only (the nodes subscribe
    to `topics.episode`). Names without a leading `/` are relative to the namespace of the stack that reads them
    (the defaults are the nodes' own; `tf` and `tf_static` are global, as tf2 has them). `origin`: where the
    mapping was read (its file), which its errors name.
    """

    # the live nodes' names (`settings.Topics`), relative: a namespaced stack's; replay resolves them (`replay.names`)
    joint_states: str = Topics.joint_states
    wrench: str | None = Topics.wrench
    object_pose: str = Topics.object_pose
    objects: Mapping[str, str] = field(default_factory=dict)
    predicates: str = Topics.predicates
    events: str = Topics.events
    episode: str = Topics.episode  # rollout start/end markers (`pipeline.markers`)
    joint_names: Mapping[str, str] = field(default_factory=dict)
    joint_order: tuple[str, ...] = ()
    joint_prefix: str = ""
    gripper_joint_states: str | None = None
    more_joint_states: tuple[JointTopic, ...] = ()
    tf: str = "/tf"
    tf_static: str = "/tf_static"
    object_frames: Mapping[str, str] = field(default_factory=dict)
    base_frame: str = ""
    world_frame: str = ""
    origin: str = field(default="topic mapping", compare=False)

    def pose_topic(self, name: str) -> str:
        return self.objects.get(name) or self.object_pose.format(name=name)

    def check_names(self, robot: RobotDescription) -> None:
        """Refuse a joint or object name that `robot` lacks, with the nearest it has: a misspelt `joint_order` or
        `joint_names` entry leaves every frame without that joint (all stale, the monitor blind throughout), a
        misspelt `objects` or `object_frames` entry leaves the object's pose unread; a prefix that begins no joint
        name makes every name of its topic unknown. And refuse frames that cannot be what they name: the world
        frame the base frame itself, an object's frame the base or world frame; and JointState topics that cannot
        be told apart (`_check_joint_topics`)."""
        self._check_joint_topics()
        self._check_frames(robot)
        wrong: list[tuple[str, str, str, tuple[str, ...]]] = []
        joints = (*robot.required_joints, *sorted(robot.accepted_joints))
        wrong += [("joint_order", n, "a joint", joints) for n in self.joint_order if n not in joints]
        wrong += [("joint_names", n, "a joint", joints) for n in self.joint_names.values() if n not in joints]
        prefixes = [("joint_prefix", self.joint_prefix)]
        for more in self.more_joint_states:
            key = f"{MORE_JOINTS}: {more.topic}: "
            wrong += [(key + "joint_names", n, "a joint", joints) for n in more.joint_names.values() if n not in joints]
            prefixes.append((key + "prefix", more.prefix))
        starts = tuple(sorted({j[: i + 1] for j in joints if (i := _separator(j)) >= 0}))
        wrong += [
            (key, prefix, "the start of a joint", starts)
            for key, prefix in prefixes
            if prefix and not any(j.startswith(prefix) for j in joints)
        ]
        if self.objects or self.object_frames:
            objects = tuple(robot.objects)
            wrong += [
                (key, n, "an object", objects)
                for key in ("objects", "object_frames")
                for n in getattr(self, key)
                if n not in objects
            ]
        if wrong:
            raise SourceError(
                f"{self.origin}: "
                + "; ".join(
                    f"{key}: {name!r} is not {what} of {robot.source}"
                    + (did_you_mean(name, known) or f" (it has {', '.join(known) or 'none'})")
                    for key, name, what, known in wrong
                )
            )

    def _check_joint_topics(self) -> None:
        """A JointState topic read twice would be merged twice (or make frames and be merged), and a joint that two
        topics' `joint_names` give would hold whichever reading came last: refused, naming the key. Two topics
        whose prefixes make the same names are told at their first messages (`FrameAssembler`): names are
        known only then."""
        read = {self.joint_states: "joint_states"}
        topics: list[tuple[str, str, Mapping[str, str]]] = []
        if self.gripper_joint_states:
            topics.append((GRIPPER_JOINTS, self.gripper_joint_states, {}))
        topics += [(f"{MORE_JOINTS}: {more.topic}", more.topic, more.joint_names) for more in self.more_joint_states]
        given = dict.fromkeys(self.joint_names.values(), "joint_names")  # robot joint -> the key that gives it
        for key, topic, names in topics:
            if topic in read:
                raise SourceError(f"{self.origin}: {key}: {topic} is read as {read[topic]} already: list a topic once")
            read[topic] = key
            for joint in names.values():
                if (other := given.setdefault(joint, f"{key}: joint_names")) != f"{key}: joint_names":
                    raise SourceError(
                        f"{self.origin}: {key}: joint_names gives {joint!r}, as {other} does: two topics cannot "
                        "send one joint"
                    )

    def _check_frames(self, robot: RobotDescription) -> None:
        """One chained to itself would place the robot at the world's origin, or an object at the robot's or the
        world's, whatever happens: checked with the configuration, before any bag or message."""
        base, world = frame_id(self.base_frame or robot.base_body), frame_id(self.world_frame)
        if self.world_frame and world == base:
            raise SourceError(
                f"{self.origin}: world_frame {self.world_frame!r} is the base frame: name the frame the base moves in "
                "(map, odom), or no world_frame for a base that stays put"
            )
        for name, frame in self.object_frames.items():
            own = frame_id(frame)
            what = (
                "no frame"
                if not own
                else "the robot's base frame"
                if own == base
                else "the world frame"
                if self.world_frame and own == world
                else None
            )
            if what is not None:
                raise SourceError(
                    f"{self.origin}: object_frames: {name!r} is given {frame!r}, {what}: name the object's own TF "
                    "frame (the one perception publishes for it)"
                )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], origin: str = "topic mapping") -> StreamMapping:
        known = set(cls.__dataclass_fields__) - {"origin"}
        if unknown := sorted(set(data) - known, key=str):  # YAML keys may be numbers, booleans or null
            raise SourceError(
                f"{origin}: "
                + "; ".join(
                    f"unknown key {k!r}" + (did_you_mean(str(k), known) or f"; expected some of {sorted(known)}")
                    for k in unknown
                )
            )
        for key in _NAME_MAPS:
            if not isinstance(data.get(key, {}), Mapping):
                raise SourceError(f"{origin}: {key!r} must be a mapping of names")
        for key, value in data.items():  # a topic of another type would fail later, in a bag's scoring, blaming it
            if (
                key not in (*_NAME_MAPS, "joint_order", MORE_JOINTS)
                and not isinstance(value, str)
                and not (value is None and key in _OPTIONAL_TOPICS)
            ):
                what = "a name prefix" if key == "joint_prefix" else "a topic name"
                raise SourceError(f"{origin}: {key!r} must be {what}, got {value!r:.40}")
        order = data.get("joint_order", ())
        if not isinstance(order, (list, tuple)) or not all(isinstance(n, str) and n for n in order):
            raise SourceError(f"{origin}: 'joint_order' must be a list of joint names")
        values = dict(data)
        for key in _NAME_MAPS:
            if key in values:
                values[key] = {str(k): str(v) for k, v in values[key].items()}
        values["joint_order"] = tuple(order)
        values[MORE_JOINTS] = _joint_topics(data.get(MORE_JOINTS, {}), origin)
        mapping = cls(**values, origin=origin)
        mapping._check_joint_topics()
        return mapping

    @classmethod
    def parse(cls, text: str) -> StreamMapping:
        """A YAML file path, or inline `key=value,...` (e.g. `joint_states=/arm/joint_states`)."""
        path = Path(text)
        if path.is_file():
            data = load_yaml(path, "topic mapping", SourceError) or {}
            if not isinstance(data, Mapping):
                raise SourceError(f"{path}: expected a mapping of stream names to topics")
            return cls.from_dict(data, str(path))
        pairs = [p for p in text.split(",") if p.strip()]
        if not pairs or any("=" not in p for p in pairs):
            raise SourceError(f"--topics {text!r}: neither a file nor key=value pairs")
        data = {}
        for pair in pairs:
            key, value = (s.strip() for s in pair.split("=", 1))
            data[key] = None if key == WRENCH and value.lower() in {"", "none"} else value
        return cls.from_dict(data, f"--topics {text!r}")


_NAME_MAPS = ("objects", "joint_names", "object_frames")
_OPTIONAL_TOPICS = ("wrench", "gripper_joint_states")  # None: the robot has no such stream
_JOINT_TOPIC_KEYS = ("prefix", "joint_names")


def _joint_topics(given: Any, origin: str) -> tuple[JointTopic, ...]:
    """`more_joint_states` as a file gives it: JointState topic -> {prefix: ..., joint_names: {...}}."""
    where = f"{origin}: {MORE_JOINTS}"
    if not isinstance(given, Mapping):
        raise SourceError(f"{where} must be a mapping of JointState topics to {{prefix: ..., joint_names: {{...}}}}")
    out = []
    for topic, entry in given.items():
        if not isinstance(topic, str) or not topic:
            raise SourceError(f"{where}: {topic!r} is no topic name")
        if not isinstance(entry, Mapping):
            raise SourceError(
                f"{where}: {topic}: expected {{prefix: ..., joint_names: {{...}}}} ({{}}: its names as sent), "
                f"got {entry!r:.40}"
            )
        if unknown := sorted(set(entry) - set(_JOINT_TOPIC_KEYS), key=str):
            raise SourceError(
                f"{where}: {topic}: "
                + "; ".join(
                    f"unknown key {k!r}"
                    + (did_you_mean(str(k), _JOINT_TOPIC_KEYS) or f"; expected {_JOINT_TOPIC_KEYS}")
                    for k in unknown
                )
            )
        prefix, names = entry.get("prefix", ""), entry.get("joint_names", {})
        if not isinstance(prefix, str):
            raise SourceError(f"{where}: {topic}: 'prefix' must be a name prefix, got {prefix!r:.40}")
        if not isinstance(names, Mapping):
            raise SourceError(f"{where}: {topic}: 'joint_names' must be a mapping of names")
        out.append(JointTopic(topic, prefix, {str(k): str(v) for k, v in names.items()}))
    return tuple(out)


def _separator(name: str) -> int:
    """Where the first character that is no letter or digit is in `name` (-1: none): a prefix ends there."""
    return next((i for i, c in enumerate(name) if not c.isalnum()), -1)


GAP_PERIODS = 5.0  # periods of its own a stream may miss before what it sent last is stale (jitter is no gap)


@dataclass(frozen=True)
class StaleLimits:
    """Seconds after which a stream counts as stale (the monitor then reports itself blind).

    `joint_states` is the largest gap between consecutive control frames; a bigger gap is a time
    jump and the frame after it is stale. `joints_frozen`: joint positions, velocities and efforts
    bit-identical for longer than this (stamps advancing) are stale; real encoders and controllers
    always move by some bits, so only a stuck driver repeats exactly (0 = off, for robots that do).
    `wrench_frozen`: the same for the six wrench values (a real force-torque sensor is never that quiet).
    `joint_held`: a joint whose position has not come for longer than this (dropped or renamed mid-stream)
    makes the frame stale; a joint on a slower publisher of its own (a drawer encoder, another arm's driver)
    stays fresh, which the control-frame gap `joint_states` would not allow. A joint the stack judges (its own
    arm's and gripper's, `FrameAssembler`'s `judged`) is held less: `GAP_PERIODS` of its own periods, at least
    `joint_states` (what the frames themselves allow), at most `joint_held`.
    """

    joint_states: float = 0.05
    wrench: float = 0.1
    pose: float = 0.25
    joints_frozen: float = FROZEN_S
    wrench_frozen: float = FROZEN_S
    joint_held: float = 0.5

    @classmethod
    def for_grounder(cls, grounder: Any, settings: EstimatorSettings = EstimatorSettings()) -> StaleLimits:
        """The grounder's own age limits (so both report the same streams stale) unless the estimator's
        settings give them (0: the grounder's), and a joint gap of five control periods, at least 50 ms
        (timestamp jitter on real robots is not a jump). Every driver builds its limits here."""
        ages = grounder.thresholds.max_age_s
        return cls(
            joint_states=max(0.05, GAP_PERIODS / grounder.control_rate_hz),
            wrench=settings.wrench_stale_s or ages.wrench,
            pose=settings.pose_stale_s or ages.object_pose,
            joints_frozen=settings.joint_states_frozen_s,
            wrench_frozen=settings.wrench_frozen_s,
        )


class AssembledFrame(NamedTuple):
    """One frame: the state, the streams stale at it, and issues raised since the previous frame.
    `resync`: the frame ends a break (in time, or frames whose joints were unusable); its joints are sound
    but anything measured across the break is not, so it is grounded (the grounder catches up) with every
    predicate unknown. A NamedTuple: one is built every frame (0.3 us, a frozen dataclass 1.0)."""

    state: RobotState
    stale: frozenset[str]
    issues: tuple[StreamIssue, ...]
    resync: bool = False


class FrameAssembler:
    """Builds RobotState frames from JointState, WrenchStamped and PoseStamped messages.

    `joints`: the robot's joint names in frame order (None: taken from the first JointState).
    `optional`: joints the frames carry after `joints` when a message has them (a description's ignored and mimic
    joints: a bimanual robot's other arm, which the twin places), NaN until one does. No frame waits for them,
    none is stale without them, and they are no unknown joints; their motion tells a frozen driver from a robot
    at rest as the others' does.
    `objects`: names whose poses are expected; a missing or old pose is reported stale.
    `joint_limits`: the joints' velocity limits make a joint's step since its own previous sample larger than
    `jump_factor` times the limit over the time between the two a `JOINT_JUMP` issue
    (`grounding.joint_limits.JumpDetector`, the rule the grounder's `joint_position_jump` reads).
    `base_jump`: when a mobile base's pose jumped (`on_base_sample`).
    `judged`: the joints whose held positions the stack would judge by (its own arm's and gripper's: the
    description's `robot_joints`). Held after their topic's messages stopped coming, the arm would be judged where
    it was while what it carries moves on (a bar it holds read as slipping): so each is held at most
    `GAP_PERIODS` of its own periods (the shortest time between its positions; before two have come, none),
    at least the frames' gap limit `limits.joint_states`, at most `limits.joint_held`, which any other joint
    keeps (another arm's, a drawer encoder's).
    """

    # Its attributes in slots: Python 3.11 keeps an instance's attributes inline (read fast) only up to 29 names a
    # class, past that every read goes through the dict (this class's and the Supervisor's: 6 thousand
    # instructions a replayed frame). `__dict__`: other attributes still allowed.
    __slots__ = (
        "__dict__",
        "_ahead",
        "_arrived",
        "_base",
        "_base_doubted",
        "_base_jump",
        "_base_jump_unseen",
        "_behind",
        "_complete",
        "_given",
        "_heard",
        "_held",
        "_joint_arrival",
        "_joint_repeats",
        "_joint_t",
        "_judged",
        "_judged_names",
        "_jumps",
        "_label",
        "_layouts",
        "_mobile",
        "_named",
        "_needed",
        "_owners",
        "_pending",
        "_period",
        "_pose_stamps",
        "_pose_streams",
        "_poses",
        "_renamed",
        "_rows",
        "_sides",
        "_skipped",
        "_stamped_ahead",
        "_stopped_flagged",
        "_streams_ahead",
        "_t",
        "_unheard",
        "_values",
        "_watched",
        "_went_back",
        "_wrench",
        "_wrench_frozen",
        "_wrench_repeats",
        "frames",
        "joints",
        "joints_frozen",
        "limits",
        "mapping",
        "objects",
    )

    def __init__(
        self,
        joints: Sequence[str] | None = None,
        objects: Iterable[str] = (),
        mapping: StreamMapping | None = None,
        limits: StaleLimits | None = None,
        joint_limits: Mapping[str, JointLimit] | None = None,
        jump_factor: float = 2.0,
        optional: Sequence[str] = (),
        base_jump: BaseJump = BaseJump(),
        judged: Iterable[str] = (),
    ) -> None:
        self.mapping = mapping or StreamMapping()
        self.limits = limits or StaleLimits()
        self.objects = tuple(objects)
        self._pose_streams = tuple((name, pose_stream(name)) for name in self.objects)
        self.joints: tuple[str, ...] | None = (*joints, *optional) if joints is not None else None
        self._needed = len(joints) if joints is not None else None  # the first this many joints are required
        self._values: np.ndarray | None = None  # rows: position, velocity, effort (NaN: not known)
        self._rows: tuple[np.ndarray, ...] = ()  # views of `_values`' rows (`_init_joints`)
        self._joint_t: np.ndarray | None = None  # per joint, the stamp of its last position (-inf: none yet)
        self._judged_names = frozenset(judged)
        self._period: np.ndarray | None = None  # per joint, the shortest time between two of its positions
        self._judged = np.zeros(0, dtype=bool)  # per joint, whether it is one of `judged`
        self._held: np.ndarray | None = None  # per joint, how long its position may be held (`judged`)
        self._stamped_ahead: np.ndarray | None = None  # per joint, its last position was stamped ahead of a frame
        self._streams_ahead: set[str] = set()  # wrench and pose streams whose last sample was so (`_stale`)
        self._complete = False  # every joint has had a position
        self._layouts: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray] | None] = {}
        self._renamed: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._t: float | None = None  # last frame time
        self._ahead: float | None = None  # stamp of a message held back for jumping ahead of the last frame
        self._heard = -math.inf  # stamp of the last joint message heard on the timeline, usable or not
        self._arrived: float | None = None  # the driver's arrival time of the latest of those and the last frame
        self._joint_arrival: float | None = None  # the driver's arrival time of the last joint message, any
        self._went_back = False  # time went back (two messages in a row behind the last frame) since it
        self._behind = False  # the last message was behind the last frame
        self._skipped = False  # the last frame's joints were unusable (not grounded): the next usable one resyncs
        self._wrench: tuple[Wrench, float] | None = None
        self._poses: dict[str, Pose] = {}
        self._pose_stamps: dict[str, float] = {}
        self._mobile = bool(self.mapping.world_frame)  # a mobile base: its pose is a stream of its own
        self._base: tuple[Pose, float] | None = None  # its latest pose in the world frame, and stamp
        self._base_jump = base_jump
        self._base_doubted: float | None = None  # after a base jump: the stamp of the last pose that jumped
        self._base_jump_unseen = False  # a base jump since the last frame: the next frame has the base stale
        self._stopped_flagged = False
        self._joint_repeats = _Repeats()
        self._wrench_repeats = _Repeats()
        self._wrench_frozen = False
        self.joints_frozen = False  # the joint values have repeated for longer than limits.joints_frozen
        self._pending: list[StreamIssue] = []
        self.frames = 0
        self._jumps = JumpDetector(joint_limits or {}, jump_factor)
        self._given: tuple[str, ...] | None = None  # the last JointState's names as given, and as the robot's
        self._named: tuple[str, ...] = ()
        m = self.mapping
        self._label = f"joint_states {m.joint_states}"
        # the JointState topics merged by name, by topic (None: gripper_joint_states), each with its own naming
        self._sides: dict[str | None, _Side] = {
            None: _Side(GRIPPER_JOINTS, f"{GRIPPER_JOINTS} {m.gripper_joint_states}", self._rename)
        }
        for more in m.more_joint_states:
            rename = lambda names, more=more: _once(more.rename(names))  # noqa: E731
            self._sides[more.topic] = _Side(more.stream, f"{MORE_JOINTS} {more.topic}", rename)
        # the configured topics merged by name that have merged no message yet (`_missing`)
        self._unheard = len(m.more_joint_states) + bool(m.gripper_joint_states)
        self._owners: dict[str, str] = {}  # robot joint -> the label of the topic that sends it (the first to)
        self._watched: np.ndarray | None = None  # the joints `_missing` checks (None: the required ones)

    # ------------------------------------------------------------------------------- helpers
    def _issue(self, kind: IssueKind, stream: str, t: float, detail: str) -> None:
        self._pending.append(StreamIssue(kind, stream, t, detail))

    def drain_issues(self) -> tuple[StreamIssue, ...]:
        """Issues raised since the last frame (the Estimator stage takes them after every call, so each of
        its results carries exactly the issues its call raised)."""
        pending = self._pending
        if not pending:
            return ()
        self._pending = []
        return tuple(pending)

    def finish(self) -> tuple[StreamIssue, ...]:
        """The issues left at the end of a stream, a stamp that jumped ahead with nothing after it included
        (neither a clock step nor an outlier can be told: reported as a time jump)."""
        if self._ahead is not None and self._t is not None:
            self._issue(
                IssueKind.TIME_JUMP,
                JOINTS,
                self._ahead,
                f"the last message's stamp is {self._ahead - self._t:.3f} s "
                "ahead of the last frame, with nothing after it; message dropped",
            )
            self._ahead = None
        return self.drain_issues()

    def _stamp(self, stamp: float, received: float | None, stream: str) -> float:
        if stamp == 0.0 and received is not None:
            self._issue(IssueKind.ZERO_STAMP, stream, received, "header stamp is zero; using the arrival time")
            return received
        return stamp

    def _init_joints(self, names: tuple[str, ...]) -> None:
        if self.joints is None:
            self.joints, self._needed = names, len(names)
        n, limits = len(self.joints), self.limits
        self._values = np.full((3, n), np.nan)
        # its rows as views, made once: `row[...] = values` writes a whole row in a third of `block[i] = values`'s
        # instructions (numpy's index parsing), for the message that sends every joint (most)
        self._rows = tuple(self._values)
        self._joint_t = np.full(n, -np.inf)
        self._period = np.full(n, np.inf)
        self._judged = np.array([name in self._judged_names for name in self.joints], dtype=bool)
        self._held = np.where(self._judged, min(limits.joint_held, limits.joint_states), limits.joint_held)
        self._stamped_ahead = np.zeros(n, dtype=bool)

    def _took(self, joints: np.ndarray, t: float) -> None:
        """Positions stamped `t` for `joints` (frame indices), before their stamps are set: the shortest time
        between a joint's positions bounds how long a judged one may be held (`judged`), and a position after one
        stamped ahead of the frames is sound again."""
        assert self._joint_t is not None and self._period is not None and self._held is not None
        assert self._stamped_ahead is not None
        since = t - self._joint_t[joints]
        shorter = since < self._period[joints]
        if shorter.any():
            which = joints[shorter]
            self._period[which] = since[shorter]
            judged = which[self._judged[which]]
            if len(judged):
                limits = self.limits
                self._held[judged] = np.minimum(
                    limits.joint_held, np.maximum(limits.joint_states, GAP_PERIODS * self._period[judged])
                )
        if self._stamped_ahead.any():
            self._stamped_ahead[joints] = False

    def _layout(self, names: tuple[str, ...], t: float) -> tuple[np.ndarray, np.ndarray] | None:
        """(source index, frame index) arrays for a new name list, cached in `_layouts`; None when the
        message lists exactly the robot's joints in frame order (the common case, no scatter). Its joints
        are this topic's from now on (`_taken`)."""
        assert self.joints is not None
        self._owners.update(dict.fromkeys((n for n in names if n in self.joints), self._label))
        if names == self.joints:
            layout = None
        else:
            index = {n: i for i, n in enumerate(self.joints)}
            pairs = [(i, index[n]) for i, n in enumerate(names) if n in index]
            if unknown := [n for n in names if n not in index]:
                self._issue(
                    IssueKind.UNKNOWN_JOINTS, JOINTS, t, f"joints not in the robot, ignored: {', '.join(unknown)}"
                )
            layout = (np.array([p[0] for p in pairs], dtype=np.intp), np.array([p[1] for p in pairs], dtype=np.intp))
        self._layouts[names] = layout
        return layout

    def _rename(self, names: tuple[str, ...], check: bool = True) -> tuple[str, ...]:
        """A message's names as the robot's (`mapping.joint_names`, else `joint_prefix` put before);
        _AMBIGUOUS when one is listed twice."""
        m = self.mapping
        renamed = tuple(m.joint_names.get(n, m.joint_prefix + n) for n in names) if names else m.joint_order
        return _once(renamed) if check else renamed

    def _taken(self, names: tuple[str, ...], label: str) -> str | None:
        """Why a message of the topic `label` whose names are `names` (the robot's) is dropped: some of them come
        on another topic already (two drivers whose names the mapping makes the same, as when both arms' are
        given one prefix); None when none does. Which topic's reading held would depend on arrival order."""
        owners = self._owners
        taken = [(n, owner) for n in names if (owner := owners.get(n, label)) != label]
        if not taken:
            return None
        return (
            f"{self.mapping.origin}: {label} sends {', '.join(n for n, _ in taken)}, which {taken[0][1]} sends: "
            "two topics cannot send one joint (give each arm's topic a prefix of its own); message dropped"
        )

    def stale_streams(self, t: float) -> frozenset[str]:
        """Streams older than their limit (or never received) at time `t`."""
        return frozenset(self._stale(t))

    def _stale(self, t: float) -> list[str]:
        """Streams older than their limit at `t`, never received, or whose last sample was stamped further after a
        frame than that (`_ahead_of`)."""
        stale = []
        ahead = self._streams_ahead
        wrench, limit = self._wrench, self.limits.wrench
        if self.mapping.wrench is not None and (
            wrench is None or self._wrench_frozen or abs(t - wrench[1]) > limit or (ahead and WRENCH in ahead)
        ):
            if wrench is not None and wrench[1] - t > limit:
                self._ahead_of(t, WRENCH, wrench[1], limit)
            stale.append(WRENCH)
        limit, stamps = self.limits.pose, self._pose_stamps
        for name, stream in self._pose_streams:
            stamp = stamps.get(name)
            if stamp is None or abs(t - stamp) > limit or (ahead and stream in ahead):
                if stamp is not None and stamp - t > limit:
                    self._ahead_of(t, stream, stamp, limit)
                stale.append(stream)
        base = self._base
        if self._mobile and (
            base is None
            or abs(t - base[1]) > limit
            or (ahead and BASE_POSE in ahead)
            or self._base_doubted is not None
            or self._base_jump_unseen
        ):
            if base is not None and base[1] - t > limit:
                self._ahead_of(t, BASE_POSE, base[1], limit)
            stale.append(BASE_POSE)
        return stale

    def _ahead_of(self, t: float, stream: str, stamp: float, limit: float) -> None:
        """`stream`'s last sample is stamped more than its age limit after the frame at `t`: its clock ran ahead,
        and its readings after, stamped behind that one, are dropped as going backwards; held, the frames would be
        judged on its value as if fresh once they came within the limit of it. So it is stale until a sample stamped
        after it is taken (said once)."""
        if stream not in self._streams_ahead:
            self._streams_ahead.add(stream)
            self._issue(
                IssueKind.STAMP_AHEAD,
                stream,
                t,
                f"stamped {stamp - t:.3f} s after the frame at {t:.6f} (limit {limit:g} s): its clock ran ahead; "
                f"stale until a sample stamped after {stamp:.6f} comes (those behind it are dropped)",
            )

    def _check_late(self, stamp: float, stream: str, limit: float) -> None:
        """A sample stamped more than its age limit before the last frame came after that frame was made:
        the frames between had the stream stale although it was sampled in time. Topics are delivered
        independently (a starved process, a middleware resending a lost message), so this is the evidence
        that a stale stream arrived late, not that it stopped."""
        if self._t is not None and self._t - stamp > limit:
            self._issue(
                IssueKind.LATE_ARRIVAL,
                stream,
                stamp,
                f"stamped {self._t - stamp:.3f} s before the frame at {self._t:.6f} but came after it "
                f"(limit {limit:g} s): it reached the estimator late, the frames between had it stale",
            )

    def needs_arrival(self, stamp: float) -> bool:
        """Whether a slower stream's sample stamped `stamp` needs its arrival time: a zero stamp (replaced by it),
        or one running ahead of the joint stream, which arrival times tell a stopped joint stream from a clock
        step by (`_check_driver`). A driver whose clock costs to read asks this first; replay gives every one."""
        return stamp == 0.0 or self._runs_ahead(stamp)

    def _runs_ahead(self, t: float) -> bool:
        """Whether a slower stream's stamp `t` is more than the gap limit past the joint stream's, not yet said."""
        last, heard = self._t, self._heard
        # max() as a conditional here and on every frame (`_timeline`, the wrench's age): the builtin parses its
        # arguments as keywords too, half a thousand instructions a call, asked three times a frame
        return (
            last is not None
            and not self._stopped_flagged
            and t - (heard if heard > last else last) > self.limits.joint_states
        )

    def _check_driver(self, t: float, stream: str, received: float | None) -> None:
        """A slower stream running ahead of the joint stream means the joint stream stopped, unless joint
        messages still arrive (within the gap limit of this sample's arrival): then the stamps stepped together
        (a clock step, said as `time_jump` when the joints' stepped message is confirmed), nothing stopped.
        Without both arrival times the two cannot be told apart and the stop is said, as a watchdog would."""
        if not self._runs_ahead(t):
            return
        arrival = self._joint_arrival
        if received is not None and arrival is not None and received - arrival <= self.limits.joint_states:
            return
        assert self._t is not None  # (for mypy: `_runs_ahead` says so)
        self._stopped_flagged = True
        heard = max(self._t, self._heard)
        self._issue(
            IssueKind.STREAM_STOPPED, JOINTS, t, f"no joint_states since t={heard:.3f} s while {stream} continues"
        )

    # ------------------------------------------------------------------------------ callbacks
    def _caught_up(self, stream: str, stamp: float, limit: float) -> None:
        """A sample of `stream` stamped `stamp` was taken: after one that ran ahead (`_ahead_of`), it is usable
        again unless it too is stamped more than `limit` after the last frame."""
        if self._t is None or stamp - self._t <= limit:
            self._streams_ahead.discard(stream)

    def on_wrench(self, msg: Any, received: float | None = None) -> None:
        wrench, stamp = wrench_of(msg)
        self.on_wrench_sample(wrench, stamp, received)

    def on_wrench_sample(self, wrench: Wrench, stamp: float, received: float | None = None) -> None:
        """`on_wrench` for a wrench already read from its message (replay reads it from the bag's bytes)."""
        if stamp == 0.0:
            stamp = self._stamp(stamp, received, WRENCH)
        try:  # float64 force and torque, as every source gives them: tested and keyed in one C call
            key = _geomath.wrench_key(wrench, _LIMIT)
        except (TypeError, ValueError):  # other arrays: numpy's general path
            key = wrench.force.tobytes() + wrench.torque.tobytes() if _finite(wrench.force, wrench.torque) else None
        if key is None:
            self._issue(
                IssueKind.NAN,
                WRENCH,
                stamp,
                f"wrench has NaN, infinite or implausible (beyond {_LIMIT:g}) values; message dropped",
            )
            return
        if self._wrench is not None and stamp <= self._wrench[1]:
            kind = IssueKind.DUPLICATE_STAMP if stamp == self._wrench[1] else IssueKind.BACKWARDS
            self._issue(kind, WRENCH, stamp, f"stamp {stamp:.6f} after {self._wrench[1]:.6f}; message dropped")
            return
        if self._wrench is not None and stamp - self._wrench[1] > self.limits.wrench:
            self._wrench_repeats = _Repeats()  # silent longer than its stale limit: no repeats were received
        self._wrench = (wrench, stamp)
        if self._streams_ahead:
            self._caught_up(WRENCH, stamp, self.limits.wrench)
        self._check_late(stamp, WRENCH, self.limits.wrench)
        limit = self.limits.wrench_frozen
        frozen = bool(limit) and self._wrench_repeats.held(key, stamp) > limit
        if frozen and not self._wrench_frozen:
            self._issue(
                IssueKind.FROZEN,
                WRENCH,
                stamp,
                f"force and torque identical for {limit:g} s (a sensor always shows noise); stale until they change",
            )
        self._wrench_frozen = frozen
        self._check_driver(stamp, WRENCH, received)

    def on_pose(self, name: str, msg: Any, received: float | None = None) -> None:
        pose, stamp = pose_of(msg)
        self.on_pose_sample(name, pose, stamp, received)

    def on_pose_sample(self, name: str, pose: Pose, stamp: float, received: float | None = None) -> None:
        """`on_pose` for a pose already read from its message."""
        stream = pose_stream(name)
        usable = self._usable_pose(stream, pose, stamp, self._pose_stamps.get(name), received)
        if usable is None:
            return
        self._poses[name] = pose
        self._pose_stamps[name] = usable
        if self._streams_ahead:
            self._caught_up(stream, usable, self.limits.pose)
        self._check_late(usable, stream, self.limits.pose)
        self._check_driver(usable, stream, received)

    def on_base_sample(self, pose: Pose, stamp: float, received: float | None = None) -> None:
        """A mobile base's pose in the world frame (`mapping.world_frame`, from TF), checked and aged as an
        object's pose is: the frames carry it while it is fresh, and have `BASE_POSE` stale otherwise; and judged
        against the last one (`_judge_base_step`)."""
        usable = self._usable_pose(BASE_POSE, pose, stamp, self._base[1] if self._base else None, received)
        if usable is None:
            return
        if self._base is not None:
            self._judge_base_step(*self._base, pose, usable)
        self._base = (pose, usable)
        if self._streams_ahead:
            self._caught_up(BASE_POSE, usable, self.limits.pose)
        self._check_late(usable, BASE_POSE, self.limits.pose)
        self._check_driver(usable, BASE_POSE, received)

    def _judge_base_step(self, last: Pose, last_t: float, pose: Pose, t: float) -> None:
        """A base pose further from the last one than the base drives in the time between (`BaseJump`: a
        localisation reset, a TF reparented, a glitch) is a jump, said once (`base_jump`). Where the robot stands is
        then unknown (`BASE_POSE` stale) until its poses have stepped plausibly for `trust_after_s`, whether they
        came back (a glitch) or hold the new place (a reset), and on the next frame at least, so the grounder
        starts afresh however soon they do."""
        rule, dt = self._base_jump, t - last_t
        moved = math.dist(pose.position.tolist(), last.position.tolist())
        turned = rotation_between(last.quaternion, pose.quaternion)
        reach = rule.noise_m + rule.linear_speed_mps * dt
        turn = rule.noise_rad + rule.angular_speed_radps * dt
        if moved <= reach and turned <= turn:
            if self._base_doubted is not None and t - self._base_doubted >= rule.trust_after_s:
                self._base_doubted = None
            return
        if self._base_doubted is None:
            self._base_jump_unseen = True
            self._issue(
                IssueKind.BASE_JUMP,
                BASE_POSE,
                t,
                f"the base moved {moved:.3g} m and turned {turned:.3g} rad in {dt:.3f} s, beyond a drive (at most "
                f"{reach:.3g} m, {turn:.3g} rad): a localisation reset or glitch; where it stands is unknown until "
                f"its poses step plausibly for {rule.trust_after_s:g} s",
            )
        self._base_doubted = t

    def _usable_pose(
        self, stream: str, pose: Pose, stamp: float, last: float | None, received: float | None
    ) -> float | None:
        """The stamp a pose message is sampled at (a zero one replaced by the arrival time), or None when it is
        dropped, with its issue: NaN or implausible values, a quaternion far from unit length, a stamp not after
        `last`."""
        if stamp == 0.0:
            stamp = self._stamp(stamp, received, stream)
        if not _finite(pose.position, pose.quaternion):
            self._issue(
                IssueKind.NAN,
                stream,
                stamp,
                f"pose has NaN, infinite or implausible (beyond {_LIMIT:g}) values; message dropped",
            )
            return None
        why = denormalized(pose.quaternion)
        if why is not None:
            self._issue(IssueKind.DENORMALIZED_QUATERNION, stream, stamp, f"pose orientation: {why}; message dropped")
            return None
        if last is not None and stamp <= last:
            kind = IssueKind.DUPLICATE_STAMP if stamp == last else IssueKind.BACKWARDS
            self._issue(kind, stream, stamp, f"stamp {stamp:.6f} after {last:.6f}; message dropped")
            return None
        return stamp

    def on_joint_states(self, msg: Any, received: float | None = None) -> AssembledFrame | None:
        """Frame for this message, or None when it is dropped (the reason is among the issues)."""
        return self.on_joint_sample(joint_state_sample(msg), received)

    def on_joint_sample(self, sample: JointSample, received: float | None = None) -> AssembledFrame | None:
        """`on_joint_states` for a message already read into a JointSample."""
        t = self._stamp(sample.stamp, received, JOINTS) if sample.stamp == 0.0 else sample.stamp
        self._joint_arrival = received
        given = sample.names
        if given is not self._given:  # (a direct reader hands every message of a stream the same tuple)
            named = self._renamed.get(given)
            if named is None:
                named = self._renamed[given] = self._rename(given)
            self._given, self._named = given, named
        names = self._named
        if names is _AMBIGUOUS:
            renamed = self._rename(sample.names, check=False)
            twice = sorted({n for n in renamed if renamed.count(n) > 1})
            self._issue(
                IssueKind.DUPLICATE_NAMES,
                JOINTS,
                t,
                f"{', '.join(twice)} listed more than once; which value holds is ambiguous, message dropped",
            )
            self._unusable(t, received)
            return None
        if not names:
            self._issue(
                IssueKind.EMPTY_NAMES,
                JOINTS,
                t,
                "JointState has an empty name list; message dropped "
                "(name its values with joint_order in the topic mapping)",
            )
            self._unusable(t, received)
            return None
        if len(sample.position) != len(names):
            self._issue(
                IssueKind.LENGTH_MISMATCH,
                JOINTS,
                t,
                f"{len(names)} names but {len(sample.position)} positions; message dropped",
            )
            self._unusable(t, received)
            return None
        v, e = sample.velocity, sample.effort
        n = len(names)
        # the common case, every row complete and plausible, in one check (else each row is checked in turn)
        sound = v is not None and e is not None and len(v) == n and len(e) == n and _finite(sample.position, v, e)
        if not sound and not _finite(sample.position):
            bad = [n for n, p in zip(names, sample.position.tolist()) if not abs(p) < _LIMIT]
            self._issue(
                IssueKind.NAN,
                JOINTS,
                t,
                f"NaN, infinite or implausible positions for {', '.join(bad)}; message dropped",
            )
            self._unusable(t, received)
            return None
        layout = self._layouts.get(names, _NEW)
        if layout is _NEW and self._owners and (taken := self._taken(names, self._label)) is not None:
            self._issue(IssueKind.DUPLICATE_NAMES, JOINTS, t, taken)
            self._unusable(t, received)
            return None
        broken = self._timeline(t, received)
        if broken is None:
            return None
        if self._values is None:
            self._init_joints(names)
        if layout is _NEW:
            if self._layouts:  # (a gripper topic may have come first)
                first = next(iter(self._layouts))
                self._issue(
                    IssueKind.JOINT_NAMES_CHANGED,
                    JOINTS,
                    t,
                    f"names [{', '.join(names)}] differ from the first message's [{', '.join(first)}]",
                )
            layout = self._layout(names, t)
        assert self._values is not None and self._joint_t is not None and self.joints is not None
        block = self._values
        velocity: np.ndarray | float
        effort: np.ndarray | float
        if sound:
            assert v is not None and e is not None  # (for mypy: `sound` says so)
            velocity, velocity_finite, effort, effort_finite = v, True, e, True
        else:
            velocity, velocity_finite = self._optional(v, n, "velocities", t)
            effort, effort_finite = self._optional(e, n, "efforts", t)
        rows = (sample.position, velocity, effort)
        joint_t = self._joint_t
        copied: np.ndarray | None = None  # the frame's block and stamps, when copied as the rows were written
        key: bytes | None = None  # the block's bytes then
        if layout is None:  # every row overwritten: its finiteness is the message's
            finite = (True, velocity_finite, effort_finite)
            try:  # three float64 rows, as every source gives them: written, every stamp set, copied in one C call
                copied, joint_stamps, key = _geomath.joint_rows(block, joint_t, t, *rows)
            except (TypeError, ValueError):  # (rows of another dtype or shape: numpy's general path)
                position_row, velocity_row, effort_row = self._rows
                position_row[...], velocity_row[...], effort_row[...] = rows
                joint_t.fill(t)
        else:
            src, dst = layout
            for row, values in enumerate(rows):
                block[row, dst] = values if isinstance(values, float) else values[src]
            finite = np.isfinite(block[:, : self._needed]).all(axis=1).tolist()  # an optional joint's NaN: none
            self._took(layout[1], t)
            joint_t[layout[1]] = t
        if not self._complete:
            seen = np.isfinite(joint_t[: self._needed])
            self._complete = bool(seen.all())
            if not self._complete:
                missing = [name for name, known in zip(self.joints, seen.tolist()) if not known]
                self._issue(
                    IssueKind.MISSING_JOINTS, JOINTS, t, f"no position yet for {', '.join(missing)}; frame held back"
                )
                return None

        stale = self._stale(t)
        self._base_jump_unseen = False
        if self._t is not None and t - self._t > self.limits.joint_states:
            self._joint_repeats = _Repeats()  # nothing was received across the gap: only repeats heard count
        if layout is not None and self._missing(t):
            unusable = True  # held positions do not repeat: the frozen clock restarts when they return
            self._joint_repeats, self.joints_frozen = _Repeats(), False
        else:
            unusable = self._frozen(block, t, key)
        resync = not unusable and (broken or self._skipped)
        self._skipped = unusable
        if unusable or resync:
            stale.append(JOINTS)
        if t >= self._heard:
            self._arrived = received
        self._t = t
        self._stopped_flagged = False
        # the positions' row view (no index to parse) and, when this message sent every joint, their one stamp as a
        # number (the detector gathers no stamps then)
        stamped = t if layout is None else joint_t
        if self._jumps.joints and not unusable and (jumps := self._jumps.step(self.joints, self._rows[0], stamped)):
            self._pending.append(jump_issue(jumps, t, JOINTS))
        wrench = None if WRENCH in stale else self._wrench  # what is stale here is not the grounder's to use
        stamps = self._pose_stamps
        if len(stale) > (WRENCH in stale) + (JOINTS in stale):  # a pose is stale
            stamps = {n: s for n, s in stamps.items() if pose_stream(n) not in stale}
            poses = {n: self._poses[n] for n in stamps}
        else:  # every pose: `_poses` has the keys of `_pose_stamps`, set together in the same order
            poses = self._poses.copy()
        if copied is None:  # the frame's own: one copy, its rows views (three row copies cost 0.2 us more)
            copied, joint_stamps = block.copy(), joint_t.copy()
        base = self._base if self._mobile and BASE_POSE not in stale else None
        state = _record(  # RobotState's dict filled in C, every field in order, as its __init__ fills it
            RobotState,
            _STATE_FIELDS,
            t,
            self.joints,
            copied[0],  # joint_position
            copied[1] if finite[1] else None,  # joint_velocity
            copied[2] if finite[2] else None,  # joint_effort
            joint_stamps,
            wrench[0] if wrench else None,
            (t - wrench[1] if t - wrench[1] > 0.0 else 0.0) if wrench else None,  # wrench_age: max(0.0, t - stamp)
            poses,
            {n: t - s if t - s > 0.0 else 0.0 for n, s in stamps.items()},  # object_ages: max(0.0, t - s)
            _NO_CONTACTS,
            _NO_EVENTS,
            base[0] if base is not None else None,  # base_pose
            max(0.0, t - base[1]) if base is not None else None,  # base_age
        )
        self.frames += 1
        # every field by position through tuple.__new__: the NamedTuple's Python __new__ is 1.2 thousand
        # instructions a frame more
        return _new_tuple(AssembledFrame, (state, frozenset(stale) if stale else _FRESH, self.drain_issues(), resync))

    def on_joint_update(self, sample: JointSample, received: float | None = None, topic: str | None = None) -> None:
        """Joints from a JointState topic that makes no frames, merged by name into the frames the driving stream
        makes: `topic` one of `mapping.more_joint_states`, or None for `mapping.gripper_joint_states`. Each topic
        keeps its own stamps (one behind another's is no step back) and each joint its own age
        (`limits.joint_held`). Needs `joints`."""
        side = self._sides[topic]
        stream = side.stream
        t = self._stamp(sample.stamp, received, stream)
        names = side.rename(sample.names) if sample.names else ()
        problem = (
            (IssueKind.EMPTY_NAMES, "empty name list")
            if not names
            else (IssueKind.DUPLICATE_NAMES, "a joint listed twice")
            if names is _AMBIGUOUS
            else (IssueKind.LENGTH_MISMATCH, f"{len(names)} names but {len(sample.position)} positions")
            if len(sample.position) != len(names)
            else (IssueKind.NAN, "NaN, infinite or implausible positions")
            if not _finite(sample.position)
            else (
                IssueKind.DUPLICATE_STAMP if t == side.stamp else IssueKind.BACKWARDS,
                f"stamp {t:.6f} after {side.stamp:.6f}",
            )
            if t <= side.stamp
            else None
        )
        if problem is not None:
            self._issue(problem[0], stream, t, f"{problem[1]}; message dropped")
            return
        if self.joints is None:
            return
        if self._values is None:
            self._init_joints(self.joints)
        assert self._values is not None and self._joint_t is not None
        layout = side.layouts.get(names)
        if layout is None:
            index = {n: i for i, n in enumerate(self.joints)}
            if unknown := [n for n in names if n not in index]:
                self._issue(
                    IssueKind.UNKNOWN_JOINTS, stream, t, f"joints not in the robot, ignored: {', '.join(unknown)}"
                )
            known = [n for n in names if n in index]
            layout = self._taken(tuple(known), side.label)
            if layout is None:
                self._owners.update(dict.fromkeys(known, side.label))
                pairs = [(i, index[n]) for i, n in enumerate(names) if n in index]
                layout = (
                    np.array([p[0] for p in pairs], dtype=np.intp),
                    np.array([p[1] for p in pairs], dtype=np.intp),
                )
                self._watch(layout[1])
            side.layouts[names] = layout
        if isinstance(layout, str):  # its joints come on another topic too
            self._issue(IssueKind.DUPLICATE_NAMES, stream, t, layout)
            return
        src, dst = layout
        n = len(names)
        for row, values in enumerate((sample.position, sample.velocity, sample.effort)):
            ok = values is not None and len(values) == n and _finite(values)
            self._values[row, dst] = values[src] if ok and values is not None else np.nan
        if side.stamp == -math.inf:
            self._unheard -= 1
        self._took(dst, t)
        self._joint_t[dst] = side.stamp = t
        self._check_driver(t, stream, received)

    def _watch(self, joints: np.ndarray) -> None:
        """Check the optional ones of `joints` (frame indices a topic that makes no frames sends) for their age
        from now on, as the required ones are (`_missing`)."""
        assert self._needed is not None
        optional = {i for i in joints.tolist() if i >= self._needed}
        if optional:
            watched = set(range(self._needed)) if self._watched is None else set(self._watched.tolist())
            self._watched = np.array(sorted(watched | optional), dtype=np.intp)

    def _unusable(self, t: float, received: float | None) -> None:
        """A joint message dropped for its content (NaN, names): the stream is still alive at `t`, so the gap
        it leaves is no clock step and no stopped stream (the frames after it still resync)."""
        last = max(self._heard, self._t if self._t is not None else -math.inf)
        if last < t <= last + self.limits.joint_states:
            self._heard, self._arrived = t, received

    def _timeline(self, t: float, received: float | None) -> bool | None:
        """Whether a message at `t` ends a break in time (its frame is stale: the monitor did not see the
        span), or None when it is dropped. A stamp at or before the last frame is dropped; the first frame
        past it after time went backwards (two messages in a row behind the last frame; one alone is a
        glitch that hides nothing) ends a break. A stamp more than the gap limit ahead that arrived about
        as much later (`_resumed`) ends a silence: its frame ends the break. Any other is held back
        (dropped) until the next message tells a clock step (it follows on: its frame ends the break) from
        one glitched stamp (it continues the old timeline: the outlier alone is lost, not the rest)."""
        last = self._t
        if last is None:
            return False
        if t <= last:
            kind = IssueKind.DUPLICATE_STAMP if t == last else IssueKind.BACKWARDS
            self._issue(kind, JOINTS, t, f"stamp {t:.6f} after frame at {last:.6f}; message dropped")
            if t < last:  # one message behind is a glitch (nothing unseen); a second in a row, the clock going back
                self._went_back = self._went_back or self._behind
                self._behind = True
            return None
        self._behind = False
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            if t >= ahead:
                self._issue(
                    IssueKind.TIME_JUMP,
                    JOINTS,
                    ahead,
                    f"the stamps stepped {ahead - last:.3f} s ahead of the frame "
                    f"at {last:.6f}: the message at the step dropped, this frame stale",
                )
                self._went_back = False
                return True
            self._issue(
                IssueKind.OUTLIER_STAMP,
                JOINTS,
                t,
                f"the stream continues at {t:.6f} after the stamp "
                f"{ahead:.6f} that jumped ahead: that message alone dropped",
            )
        limit = self.limits.joint_states
        heard = self._heard if self._heard > last else last  # max(last, self._heard)
        if t - heard > limit:
            if self._resumed(t, heard, received):
                self._went_back = False
                return True
            self._ahead = t  # the next message tells a clock step from an outlier stamp
            return None
        behind, self._went_back = self._went_back, False
        return behind or t - last > limit  # messages heard but unusable for longer than a gap: frames missed

    def _resumed(self, t: float, heard: float, received: float | None) -> bool:
        """Whether a stamp `t` more than the gap limit after the last one `heard` ends a silence of the stream
        (a driver restarted, a cable replugged), said as `stream_resumed`: nothing arrived for longer than the
        gap limit either, and the stamps moved on as much as the arrival times, within the gap limit. A clock
        step or a glitched stamp comes in the stream's flow, its arrival a control period after the last; and
        without the driver's arrival times (None) the two cannot be told apart, so it is held back as one."""
        if received is None or self._arrived is None:
            return False
        waited, limit = received - self._arrived, self.limits.joint_states
        if not (waited > limit and abs(t - heard - waited) <= limit):
            return False
        self._issue(
            IssueKind.STREAM_RESUMED,
            JOINTS,
            t,
            f"silent for {t - heard:.3f} s (stamps and arrival times alike), resumed at {t:.6f}: "
            "the stream stopped, not the clock; this frame stale",
        )
        return True

    def _missing(self, t: float) -> bool:
        """Whether a joint has had no position for longer than it may be held (`judged`; `joint_held` for most):
        dropped from the messages or renamed, or its topic stopped. Its held value would be a guess, so the frame is
        stale (an issue every frame). The joints checked are the required ones and any optional one a topic that
        makes no frames has sent (`_watched`): another arm on a topic of its own that stops would stand where it was
        unseen. So is a frame before such a topic has sent a message it merges: which joints it sends is known only
        then, and an arm never seen would stand where the model draws it. And one whose position was stamped further
        after a frame than it may be held, until a position after it comes: that topic's stamps ran ahead, its
        readings after, stamped behind that one, are dropped (`backwards`), and the arm would be judged where it was
        then, as if fresh."""
        assert self._joint_t is not None and self.joints is not None  # called on frames, after the first message
        assert self._held is not None and self._stamped_ahead is not None
        if self._unheard:
            m = self.mapping
            unheard = [
                side.label
                for key, side in self._sides.items()
                if side.stamp == -math.inf and (key is not None or m.gripper_joint_states)
            ]
            self._issue(
                IssueKind.MISSING_JOINTS,
                JOINTS,
                t,
                f"no message merged from {', '.join(unheard)} yet: the joints it sends are unknown; frame stale",
            )
            return True
        watched = self._watched
        which = slice(self._needed) if watched is None else watched
        ages, held = t - self._joint_t[which], self._held[which]
        if not (np.abs(ages) > held).any() and not self._stamped_ahead.any():
            return False
        ahead = ages < -held
        if ahead.any():
            self._stamped_ahead[np.arange(len(self.joints))[which][ahead]] = True
        doubted, gone = self._stamped_ahead[which], ages > held
        if not (gone.any() or doubted.any()):
            return False
        joints = self.joints[which] if watched is None else [self.joints[i] for i in watched.tolist()]
        said = [
            f"no position for {', '.join(n for n, g, h in zip(joints, gone, held) if g and h == limit)} for more "
            f"than {limit:g} s"
            for limit in sorted(set(held[gone].tolist()))
        ]
        if doubted.any():  # its topic's stamps ran ahead: the readings behind that one are dropped as going backwards
            names = ", ".join(n for n, d in zip(joints, doubted) if d)
            said.append(
                f"the position of {names} was stamped further after a frame than it may be held, none after it since"
            )
        self._issue(IssueKind.MISSING_JOINTS, JOINTS, t, f"{'; '.join(said)}; frame stale")
        return True

    def _frozen(self, block: np.ndarray, t: float, key: bytes | None = None) -> bool:
        """Whether the joint values have been bit-identical for longer than the limit (issue at the onset).
        `key`: `block.tobytes()` when the caller has it."""
        limit = self.limits.joints_frozen
        frozen = bool(limit) and self._joint_repeats.held(block.tobytes() if key is None else key, t) > limit
        if frozen and not self.joints_frozen:
            self._issue(
                IssueKind.FROZEN,
                JOINTS,
                t,
                f"positions, velocities and efforts identical for {limit:g} s "
                "(a driver repeating its last reading); frames stale until they change",
            )
        self.joints_frozen = frozen
        return frozen

    def _optional(self, values: np.ndarray | None, n: int, what: str, t: float) -> tuple[np.ndarray | float, bool]:
        """A message's velocities or efforts (NaN, unknown this frame, when absent or short), and whether
        every value is finite (a NaN among them makes the row unknown this frame)."""
        if values is None:
            return np.nan, False
        if len(values) != n:
            self._issue(IssueKind.LENGTH_MISMATCH, JOINTS, t, f"{n} names but {len(values)} {what}; {what} ignored")
            return np.nan, False
        if _finite(values):
            return values, True
        self._issue(IssueKind.NAN, JOINTS, t, f"NaN, infinite or implausible {what}; {what} unknown this frame")
        return values, False


_FRESH: frozenset[str] = frozenset()  # a frame with no stream stale (most): one set, not one a frame
_new_tuple = tuple.__new__  # builds a NamedTuple from all its values without the class's Python __new__
# a frame's RobotState and PredicateSample built by `_geomath.record`: the dict `records.direct_init`'s __init__
# fills, every field given in order (a field added to either makes the call raise, never a record without it);
# the Python __init__ call is half a thousand instructions more each
_record = _geomath.record
_STATE_FIELDS = tuple(f.name for f in fields(RobotState))
_SAMPLE_FIELDS = tuple(f.name for f in fields(PredicateSample))
_NO_CONTACTS, _NO_EVENTS = RobotState.contacts, RobotState.events  # the defaults a frame keeps (class attributes)
_AMBIGUOUS: tuple[str, ...] = ("<a joint listed twice>",)  # stands for a name list, compared by identity
_NEW: tuple[np.ndarray, np.ndarray] = (np.empty(0, np.intp), np.empty(0, np.intp))  # no layout yet (by identity)


def _once(renamed: tuple[str, ...]) -> tuple[str, ...]:
    """A message's names as the robot's, or _AMBIGUOUS when one is listed twice."""
    return _AMBIGUOUS if len(set(renamed)) < len(renamed) else renamed


class _Side:
    """A JointState topic merged into the frames by name: its stream (in issues) and label (key and topic: what
    another topic's clash names), its naming (a message's names -> the robot's, `_once`: `joint_states`' own for
    `gripper_joint_states`, `JointTopic.rename` for one of `more_joint_states`), the stamp of its last message,
    and per name list its layout, or why its messages are dropped."""

    __slots__ = ("label", "layouts", "rename", "stamp", "stream")

    def __init__(self, stream: str, label: str, rename: Callable[[tuple[str, ...]], tuple[str, ...]]) -> None:
        self.stream, self.label, self.rename = stream, label, rename
        self.stamp = -math.inf
        self.layouts: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray] | str] = {}


class _Repeats:
    """How long a stream has repeated the same values, in stamp time."""

    __slots__ = ("key", "since")

    def __init__(self) -> None:
        self.key: bytes | None = None
        self.since = 0.0

    def held(self, key: bytes, t: float) -> float:
        """Seconds since the values `key` first appeared (0 when they just changed)."""
        if key != self.key:
            self.key, self.since = key, t
        return t - self.since


_LIMIT = 1e9  # beyond this a joint (rad or m), wrench (N, N m) or pose (m) value is a corrupt message
_HALF_LIMIT = _LIMIT / 2


def _finite(values: np.ndarray, *more: np.ndarray) -> bool:
    """Every value (of every one-dimensional float array: a message's) a plausible measurement: finite and within
    +-_LIMIT (NaN fails every comparison). Exact for any input, where a dot product overflows. The norm bounds
    every value, and `math.hypot` gives it within an ulp (NaN or inf when a value is one, never an OverflowError):
    under half the limit it answers in one C call, 0.2 us against 1.5 for the test of each value, which decides
    otherwise. No `ravel` before `tolist`: it costs 0.06 us an array, and two or three arrays are tested a frame.
    Float64 rows, as every source gives them, are tested in one C call (the same answer: a norm under the limit
    bounds every value) without a float object made for each value."""
    try:
        return _geomath.plausible(_LIMIT, values, *more)
    except (TypeError, ValueError):  # other arrays: listed
        pass
    listed = values.tolist()
    for array in more:
        listed += array.tolist()
    return math.hypot(*listed) < _HALF_LIMIT or all(map(_LIMIT.__gt__, map(abs, listed)))


def ground_frame(grounder: Any, assembled: AssembledFrame, frame: int) -> tuple[PredicateSample, str | None]:
    """Ground one assembled frame into what `/safety_monitor/predicates` carries: the one step live
    estimation and replay share. Stale streams are the assembler's and the grounder's. A frame whose
    joint_states are stale or that the grounder rejects (GroundingError, its reason returned for the
    caller to report) has every predicate unknown, never guessed. The grounder does not step on stale
    joints (its debouncers freeze as for any unknown input), except to catch up after a break in time."""
    state = assembled.state
    if JOINTS in assembled.stale and not assembled.resync:
        return _unknown(grounder, assembled, frame), None
    try:
        grounded = grounder.step(state)
    except GroundingError as exc:
        return _unknown(grounder, assembled, frame), str(exc)
    if assembled.resync:
        return _unknown(grounder, assembled, frame), None
    # most frames the grounder finds nothing stale: the assembler's set as it is, no set built
    stale = assembled.stale | frozenset(grounded.stale) if grounded.stale else assembled.stale
    return _record(
        PredicateSample, _SAMPLE_FIELDS, grounded.values, state.t, frame, grounded.unknown, stale, grounded.objects
    ), None


def _unknown(grounder: Any, assembled: AssembledFrame, frame: int) -> PredicateSample:
    names = grounder.predicates
    return PredicateSample(dict.fromkeys(names, False), assembled.state.t, frame, frozenset(names), assembled.stale)
