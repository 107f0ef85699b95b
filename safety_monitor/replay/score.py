"""Score one bag: a pure function of the bag and the configuration (so a distributed engine can map it).

Robot-state mode reads the raw streams, builds frames with the live estimator's FrameAssembler and
grounder, and steps the live SpecSetMonitor; predicate mode (`from_predicates`) decodes the bag's
recorded `/safety_monitor/predicates` and steps the same monitor. Nothing here prints; a failure is
returned as a failed BagResult naming the problem, so one bad bag never stops a batch.
"""
from __future__ import annotations

import operator
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from safety_monitor.errors import SafetyMonitorError, SourceError, SpecError
from safety_monitor.monitor.episodes import TraceResult
from safety_monitor.monitor.live import DEFAULT_HISTORY, SpecSetMonitor, load_automata
from safety_monitor.replay.timeline import Timeline
from safety_monitor.sources import cdr
from safety_monitor.sources import messages as m
from safety_monitor.sources.assembler import (JOINTS, FrameAssembler, StaleLimits, StreamIssue, StreamMapping,
                                              ground_frame)
from safety_monitor.sources.bag import BagReader, TopicSummary

ISSUE_EXAMPLES = 3  # kept per issue kind; all are counted
STAGES = ("read", "deserialise", "assemble", "ground", "monitor")
_JOINT_TYPE = "sensor_msgs/msg/JointState"
_PREDICATES_TYPE = "diagnostic_msgs/msg/DiagnosticArray"


@dataclass(frozen=True)
class ReplayConfig:
    """Everything a bag's score depends on besides the bag (picklable, for worker processes)."""

    specs: str | None = None  # None: the package's default spec file
    robot: str | None = None  # None: the package's default robot description
    mapping: StreamMapping = field(default_factory=StreamMapping)
    from_predicates: bool = False
    rate_hz: float | None = None  # control rate; None: measured from the bag's joint stamps
    history: int = DEFAULT_HISTORY


@dataclass
class BagResult:
    """What one bag produced. `trace` is None when the bag failed (`error` says why)."""

    bag: str
    mode: str
    error: str | None = None
    trace: TraceResult | None = None
    frames: int = 0
    t_start: float | None = None
    t_end: float | None = None
    rate_hz: float | None = None
    stale_frames: int = 0  # frames with at least one stale input stream
    stale_by_stream: dict[str, int] = field(default_factory=dict)
    unknown_frames: int = 0  # frames with at least one unknown predicate
    issues: dict[str, int] = field(default_factory=dict)  # issue kind -> count
    issue_examples: list[StreamIssue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    topics: dict[str, TopicSummary] = field(default_factory=dict)
    timeline: Timeline | None = None  # predicate values (the ones the specs read)
    stale_timeline: Timeline | None = None  # one row, "stale": some input stream was stale
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    messages: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def duration(self) -> float:
        return (self.t_end - self.t_start) if self.t_start is not None and self.t_end is not None else 0.0


class Progress(Protocol):
    """What score_bag reports frames to (a tqdm bar fits): the expected total, then counts."""

    def reset(self, total: int | None = None) -> None: ...

    def update(self, n: int = 1) -> object: ...


# ------------------------------------------------------------------------------------ pipeline
@cache
def _automata(specs: str | None, rate_hz: float | None) -> tuple[tuple[str, ...], list]:
    """Compiled once per process and rate (the DFA cache on disk makes even the first call cheap)."""
    from safety_monitor.grounding.grounder import config_dir

    return load_automata(specs or config_dir() / "specs.yaml", rate_hz)


def make_grounder(robot: str | None, rate_hz: float) -> Any:
    """The live estimator's grounder: the default config, or `robot` with the objects.yaml and
    thresholds.yaml beside it (the defaults where it has none)."""
    from safety_monitor.grounding.description import load_robot_description
    from safety_monitor.grounding.grounder import Grounder, config_dir, load_default_grounder
    from safety_monitor.grounding.semantics import load_object_catalog
    from safety_monitor.grounding.thresholds import load_thresholds

    if robot is None:
        return load_default_grounder(rate_hz)
    path, default = Path(robot), config_dir()

    def beside(name: str) -> Path:
        return path.parent / name if (path.parent / name).is_file() else default / name

    return Grounder(load_robot_description(path), load_object_catalog(beside("objects.yaml")),
                    load_thresholds(beside("thresholds.yaml")), rate_hz)


def make_monitor(config: ReplayConfig, rate_hz: float | None) -> SpecSetMonitor:
    """The live monitor for the configured specs at the bag's control rate (a fresh one per bag)."""
    vocabulary, automata = _automata(config.specs, rate_hz)
    return SpecSetMonitor(automata, vocabulary, history=config.history)


def missing_topic_error(bag: Path, what: str, wanted: str, msgtype: str, topics: Mapping[str, TopicSummary],
                        key: str) -> SourceError:
    """SourceError listing the bag's topics and suggesting `--topics key=<topic>` for same-typed ones."""
    found = ", ".join(f"{name} ({s.msgtype}, {s.count})" for name, s in sorted(topics.items())) or "none"
    same = [name for name, s in sorted(topics.items()) if s.msgtype == msgtype]
    hint = (f"; map it with --topics {key}={same[0]}" if len(same) == 1 else
            f"; candidates of type {msgtype}: {', '.join(same)} (choose with --topics {key}=TOPIC)" if same else "")
    return SourceError(f"{bag}: no {what} on {wanted}. Topics found: {found}{hint}")


def estimate_rate(stamps: list[float]) -> float:
    """Control rate in Hz from the median joint-stamp step, rounded to a whole Hz."""
    steps = sorted(b - a for a, b in zip(stamps, stamps[1:]) if b > a)
    if not steps:
        raise SourceError("cannot measure the control rate: fewer than two increasing joint_states stamps")
    return float(max(1, round(1.0 / steps[len(steps) // 2])))


class _Scorer:
    """The per-frame loop shared by both modes: monitor, timeline, counters, stage timings."""

    def __init__(self, result: BagResult, monitor: SpecSetMonitor, progress: Progress | None, topic: str) -> None:
        self.result = result
        self.monitor = monitor
        self.timeline = Timeline(monitor.predicates)
        self.stale_timeline = Timeline(("stale",))
        self.events: list = []
        self.stale = Counter()
        self.progress = progress
        if progress is not None:
            progress.reset(total=result.topics[topic].count)
        self.timings = dict.fromkeys(STAGES, 0.0)
        preds = monitor.predicates
        self._width = len(preds)
        self._get = operator.itemgetter(*preds) if len(preds) > 1 else (lambda v, _p=preds[0]: (v[_p],))

    def step(self, valuation: Mapping[str, bool | None] | None, t: float, stale: frozenset[str]) -> None:
        r = self.result
        if stale:
            r.stale_frames += 1
            self.stale.update(stale)
        values = (None,) * self._width if valuation is None else self._get(valuation)
        if None in values:
            r.unknown_frames += 1
        start = time.perf_counter()
        self.events.extend(self.monitor.step(valuation, t))
        self.timings["monitor"] += time.perf_counter() - start
        self.timeline.add(values, t)
        self.stale_timeline.add((bool(stale),), t)
        if r.t_start is None:
            r.t_start = t
        r.t_end = t
        r.frames += 1
        if self.progress is not None and r.frames % 1000 == 0:
            self.progress.update(1000)

    def finish(self) -> None:
        r = self.result
        if r.frames == 0:
            raise SourceError(f"{r.bag}: no frames could be built" + _issue_hint(r))
        end = self.monitor.finish()
        r.trace = TraceResult(end.frames, end.outcomes, tuple(self.events) + end.events)
        self.timeline.close()
        self.stale_timeline.close()
        r.timeline, r.stale_timeline = self.timeline, self.stale_timeline
        r.stale_by_stream = dict(sorted(self.stale.items()))
        r.timings = {k: round(v, 6) for k, v in self.timings.items()}
        if self.progress is not None:
            self.progress.update(r.frames % 1000)


def _issue_hint(r: BagResult) -> str:
    if not r.issue_examples:
        return ""
    return ": " + "; ".join(f"{i.kind} x{r.issues[i.kind]} ({i.detail})" for i in r.issue_examples[:ISSUE_EXAMPLES])


def _record_issues(r: BagResult, issues: tuple[StreamIssue, ...]) -> None:
    for issue in issues:
        n = r.issues.get(issue.kind, 0)
        r.issues[issue.kind] = n + 1
        if n < ISSUE_EXAMPLES:
            r.issue_examples.append(issue)


def _timed_raw(bag: BagReader, topics: set[str], timings: dict[str, float]) -> Iterator[tuple[str, str, int, bytes]]:
    """(topic, type, log time ns, CDR bytes) with read time charged to its stage."""
    clock = time.perf_counter
    raw_iter = bag.raw_messages(topics)
    while True:
        start = clock()
        try:
            item = next(raw_iter)
        except StopIteration:
            return
        timings["read"] += clock() - start
        yield item


class _Decoder:
    """One stream's messages as plain values: `cdr`'s direct reader when the bag defines the type as that
    reader expects (the same values, without building a message object), else rosbags' decoder and the
    converter from `messages`."""

    def __init__(self, bag: BagReader, direct: Callable[[bytes], Any], convert: Callable[[Any], Any]) -> None:
        self.bag, self.direct, self.convert = bag, direct, convert
        self._direct_types: dict[str, bool] = {}

    def __call__(self, raw: bytes, msgtype: str) -> Any:
        value = self.fast(raw, msgtype)
        return value if value is not None else self.convert(self.bag.deserialize(raw, msgtype))

    def fast(self, raw: bytes, msgtype: str) -> Any:
        """The direct reader's value, or None when the type or the bytes are not what it reads."""
        ok = self._direct_types.get(msgtype)
        if ok is None:
            ok = self._direct_types[msgtype] = cdr.supported(self.bag.fielddefs, msgtype)
        return self.direct(raw) if ok else None


# ---------------------------------------------------------------------------------- the modes
def _score_predicates(bag: BagReader, config: ReplayConfig, result: BagResult,
                      progress: Progress | None) -> None:
    topic = config.mapping.predicates
    summary = result.topics.get(topic)
    if summary is None or summary.count == 0:
        raise missing_topic_error(bag.path, "recorded predicates", topic, _PREDICATES_TYPE, result.topics, "predicates")
    result.rate_hz = _control_rate(bag, config, topic)
    scorer = _Scorer(result, make_monitor(config, result.rate_hz), progress, topic)
    timings, clock = scorer.timings, time.perf_counter
    last_t: float | None = None
    expected: int | None = None  # the estimator's next frame number, when it records them
    unsent = False
    decoder = _Decoder(bag, cdr.PredicateReader().read, m.decode_predicates)
    needed = frozenset(scorer.monitor.predicates)
    for _, msgtype, t_ns, raw in _timed_raw(bag, {topic}, timings):
        start = clock()
        try:  # a message rosbags cannot decode fails as such (deserialize's own error)
            sample = decoder.fast(raw, msgtype) or m.decode_predicates(bag.deserialize(raw, msgtype))
        except m.BadPredicates as exc:
            raise SourceError(f"{bag.path}: {topic} message logged at {t_ns / 1e9:.6f} s: {exc}") from None
        mid = clock()
        timings["deserialise"] += mid - start
        start = mid
        t = sample.t
        if last_t is not None and t <= last_t:
            kind = "duplicate_stamp" if t == last_t else "backwards"
            _record_issues(result, (StreamIssue(kind, "predicates", t, f"frame time {t:.6f} after {last_t:.6f}; "
                                                "message dropped"),))
            timings["assemble"] += clock() - start
            continue
        last_t = t
        if sample.frame is not None:
            if expected is not None and sample.frame != expected:
                _record_issues(result, (StreamIssue("frame_gap", "predicates", t, f"recorded frame {sample.frame} "
                                                    f"where {expected} was expected: the recording lost frames or "
                                                    "the estimator restarted"),))
            expected = sample.frame + 1
        valuation = sample.valuation()
        if not needed <= valuation.keys():  # as the monitor node does: unknown, said once
            missing = [p for p in scorer.monitor.predicates if p not in valuation]
            if not unsent:
                result.warnings.append(f"predicates never sent, treated as unknown: {', '.join(missing)}")
            unsent = True
            valuation = {p: valuation.get(p) for p in scorer.monitor.predicates}
        timings["assemble"] += clock() - start
        scorer.step(valuation, t, sample.stale)
    scorer.finish()


_JOINT_ROUTE, _WRENCH_ROUTE = object(), object()


def _score_states(bag: BagReader, config: ReplayConfig, result: BagResult,
                  progress: Progress | None) -> None:
    mapping = config.mapping
    topics = result.topics
    joints = topics.get(mapping.joint_states)
    if joints is None or joints.count == 0:
        raise missing_topic_error(bag.path, "joint states", mapping.joint_states, _JOINT_TYPE, topics, "joint_states")
    rate = result.rate_hz = _control_rate(bag, config, mapping.joint_states)
    grounder = make_grounder(config.robot, rate)
    objects = tuple(grounder.robot.objects)
    assembler = FrameAssembler(grounder.robot.required_joints, objects, mapping, StaleLimits.for_grounder(grounder))
    route: dict[str, object] = {mapping.joint_states: _JOINT_ROUTE}
    if mapping.wrench is not None:
        if mapping.wrench in topics:
            route[mapping.wrench] = _WRENCH_ROUTE
        else:
            result.warnings.append(f"no wrench topic {mapping.wrench}: the wrench stream is stale throughout")
    for name in objects:
        topic = mapping.pose_topic(name)
        if topic in topics:
            route[topic] = name
        else:
            result.warnings.append(f"no pose topic {topic} for object {name!r}: its pose is stale throughout")
    monitor = make_monitor(config, rate)
    if unknown := sorted(set(monitor.predicates) - set(grounder.predicates)):
        raise SpecError(f"the specs read predicates the grounder does not produce: {', '.join(unknown)} "
                        "(rescore a bag that records them with --from-predicates)")
    scorer = _Scorer(result, monitor, progress, mapping.joint_states)
    timings = scorer.timings
    clock = time.perf_counter
    read_joints = _Decoder(bag, cdr.JointStateReader().read, m.joint_state_sample)
    read_wrench = _Decoder(bag, cdr.read_wrench, m.wrench_of)
    read_pose = _Decoder(bag, cdr.read_pose, m.pose_of)
    for topic, msgtype, t_ns, raw in _timed_raw(bag, set(route), timings):
        start = clock()
        kind = route[topic]
        received = t_ns / 1e9
        if kind is _JOINT_ROUTE:
            joint_sample = read_joints(raw, msgtype)
            mid = clock()
            timings["deserialise"] += mid - start
            frame = assembler.on_joint_sample(joint_sample, received)
            timings["assemble"] += clock() - mid
            if frame is None:
                continue
            _record_issues(result, frame.issues)
            mid = clock()
            sample, failure = ground_frame(grounder, frame, result.frames)
            timings["ground"] += clock() - mid
            if failure is not None:
                _record_issues(result, (StreamIssue("grounding", JOINTS, frame.state.t,
                                                    f"{failure}; every predicate unknown"),))
            scorer.step(sample.valuation(), sample.t, sample.stale)
        elif kind is _WRENCH_ROUTE:
            wrench, stamp = read_wrench(raw, msgtype)
            mid = clock()
            timings["deserialise"] += mid - start
            assembler.on_wrench_sample(wrench, stamp, received)
            timings["assemble"] += clock() - mid
        else:
            pose, stamp = read_pose(raw, msgtype)
            mid = clock()
            timings["deserialise"] += mid - start
            assembler.on_pose_sample(kind, pose, stamp, received)
            timings["assemble"] += clock() - mid
    _record_issues(result, assembler.drain_issues())
    scorer.finish()


def _control_rate(bag: BagReader, config: ReplayConfig, topic: str) -> float:
    """The configured rate, else the one measured on the frame-driving topic's stamps."""
    try:
        return config.rate_hz or estimate_rate(_first_stamps(bag, topic))
    except SourceError as exc:
        raise SourceError(f"{bag.path}: {topic}: {exc}") from None


def _first_stamps(bag: BagReader, topic: str, n: int = 201) -> list[float]:
    stamps = []
    for _, _, msg in bag.messages({topic}):
        stamps.append(m.stamp_seconds(msg.header.stamp))
        if len(stamps) >= n:
            break
    return stamps


def score_bag(path: str | Path, config: ReplayConfig, progress: Progress | None = None) -> BagResult:
    """Score one bag. Never raises for a bad bag: the result carries the error instead.

    `progress` (e.g. a tqdm bar) is told the expected frame count and then the frames as they are
    scored; results do not depend on it.
    """
    result = BagResult(bag=str(path), mode="predicates" if config.from_predicates else "robot_state")
    try:
        with BagReader(path) as bag:
            result.topics = bag.topics
            result.messages = bag.message_count
            if bag.skipped_types:
                result.warnings.append("no definition for message types " + ", ".join(bag.skipped_types)
                                       + "; their topics were skipped")
            if config.from_predicates:
                _score_predicates(bag, config, result, progress)
            else:
                _score_states(bag, config, result, progress)
    except SafetyMonitorError as exc:
        result.error = str(exc)
        result.trace = None
    except Exception as exc:  # a bug or an unforeseen library error must not stop the batch either
        result.error = f"{path}: {type(exc).__name__}: {exc}"
        result.trace = None
    return result
