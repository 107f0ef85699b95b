"""Score one bag: a pure function of the bag and the configuration (so a distributed engine can map it).

Robot-state mode reads the raw streams and drives the live estimator's stage (`pipeline.estimator`) on log
times, and steps the live SpecSetMonitor; predicate mode (`from_predicates`) decodes the bag's
recorded `/safety_monitor/predicates` and steps the same monitor. Nothing here prints; a failure is
returned as a failed BagResult naming the problem, so one bad bag never stops a batch.
"""

from __future__ import annotations

import gc
import itertools
import math
import operator
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from safety_monitor.enums import IssueKind
from safety_monitor.errors import SafetyMonitorError, SourceError, SpecError
from safety_monitor.frames import PredicateSample, StreamIssue
from safety_monitor.io import cdr
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagReader, MessageBatch, TopicSummary
from safety_monitor.monitor.episodes import TraceResult
from safety_monitor.monitor.live import SpecSetMonitor, load_automata
from safety_monitor.names import did_you_mean
from safety_monitor.pipeline.assemble import GRIPPER_JOINTS, JOINTS, MORE_JOINTS, WRENCH, StreamMapping, pose_stream
from safety_monitor.pipeline.decode import MessageType, TypedDecoders, Undecodable
from safety_monitor.pipeline.estimator import Estimator
from safety_monitor.pipeline.inputs import TF, ConfiguredInput, check_types, configured_inputs
from safety_monitor.pipeline.markers import EpisodeMarker, MarkerKind, decode_marker
from safety_monitor.pipeline.supervisor import LATE_HOLD_FRAMES, Rollout, Supervisor, Withdrawn
from safety_monitor.replay.names import resolve_mapping
from safety_monitor.replay.timeline import Timeline
from safety_monitor.settings import EstimatorSettings, MonitorSettings, NodeSettings

if TYPE_CHECKING:  # imported where a spec file is read, as `load_automata` does
    from safety_monitor.specs.model import SpecSet

ISSUE_EXAMPLES = 3  # kept per issue kind; all are counted
BATCH = 4096  # messages read and decoded at a time (bounds memory for bags of any length)
STAGES = ("read", "deserialise", "assemble", "ground", "monitor")
NOMINAL_RATE_HZ = 500.0  # for checking the robot description before a bag's rate is measured
_JOINT_TYPE = "sensor_msgs/msg/JointState"
_PREDICATES_TYPE = "diagnostic_msgs/msg/DiagnosticArray"


@dataclass(frozen=True)
class ReplayConfig:
    """Everything a bag's score depends on besides the bag (picklable, for worker processes)."""

    specs: str | None = None  # None: the package's default spec file
    robot: str | None = None  # None: the package's default robot description
    mapping: StreamMapping = field(default_factory=StreamMapping)
    namespace: str = "/"  # relative topic names in `mapping` resolve under it, as for a node there (`names`)
    from_predicates: bool = False
    rate_hz: float | None = None  # control rate; None: measured from the bag's joint stamps
    # the live nodes' settings (replay --params: the site's nodes.yaml), so replay applies their input rules
    estimator: EstimatorSettings = field(default_factory=EstimatorSettings)
    monitor: MonitorSettings = field(default_factory=MonitorSettings)
    # the robot's compiled model (`KinematicTwin.digest`, `with_model`): a bag grounded with another fails
    model_digest: str | None = None

    def with_model(self) -> ReplayConfig:
        """This configuration pinned to the robot model this process builds (robot-state mode), so a worker
        elsewhere whose files or MuJoCo build another model fails each bag instead of grounding it otherwise."""
        if self.from_predicates:
            return self
        grounder = _kept_grounder(self.robot, self.rate_hz or NOMINAL_RATE_HZ, *_streams(self.mapping))
        return replace(self, model_digest=grounder.twin.digest)

    def with_settings(self, settings: NodeSettings) -> ReplayConfig:
        """This configuration with the live nodes' settings (`settings.load_settings`)."""
        return replace(self, estimator=settings.estimator, monitor=settings.monitor)

    def resolved(self, found: Mapping[str, str]) -> tuple[ReplayConfig, list[str]]:
        """This configuration with its relative topic names resolved against a source's topics (topic -> type),
        and the notes on names matched by suffix (`names.resolve_mapping`)."""
        mapping, notes = resolve_mapping(
            self.mapping,
            self.namespace,
            found,
            () if self.from_predicates else _described_objects(self),
            self.from_predicates,
        )
        return replace(self, mapping=mapping), notes

    def specs_file(self) -> Path:
        """The spec file scored against (the default made explicit, for the report)."""
        from safety_monitor.files import config_dir

        return Path(self.specs) if self.specs else config_dir() / "specs.yaml"

    def robot_file(self) -> Path | None:
        """The robot description grounded with; None in predicate mode, which grounds nothing."""
        from safety_monitor.files import config_dir

        return None if self.from_predicates else Path(self.robot) if self.robot else config_dir() / "robot.yaml"


@dataclass(frozen=True)
class WholeBag:
    """A bag its episode markers cut into rollouts, as a whole: the figures of the bag (all its messages, the
    time spent scoring it) that none of its rollouts has alone, so each is reported once, not once a rollout."""

    bag: str
    rollouts: int
    frames: int
    t_start: float | None
    t_end: float | None
    messages: int
    topics: dict[str, TopicSummary]
    timings: dict[str, float]


@dataclass
class BagResult:
    """What one bag produced. `trace` is None when the bag failed (`error` says why)."""

    bag: str
    mode: str
    error: str | None = None
    trace: TraceResult | None = None
    frames: int = 0
    t_start: float | None = None  # the earliest and the latest frame's time (at a restart the stamps go back)
    t_end: float | None = None
    rate_hz: float | None = None
    stale_frames: int = 0  # frames with at least one stale input stream
    stale_by_stream: dict[str, int] = field(default_factory=dict)
    unknown_frames: int = 0  # frames with at least one unknown predicate
    issues: dict[str, int] = field(default_factory=dict)  # issue kind -> count
    issue_examples: list[StreamIssue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # property -> why this robot cannot ground it (no gripper, no wrench topic, ...): never counted as satisfied
    not_applicable: dict[str, str] = field(default_factory=dict)
    topics: dict[str, TopicSummary] = field(default_factory=dict)
    timeline: Timeline | None = None  # predicate values (the ones the specs read)
    stale_timeline: Timeline | None = None  # one row, "stale": some input stream was stale
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    messages: int = 0
    rollouts: int = 0  # rollouts in the bag (the input restarted inside it when more than one; `trace` pools them)
    # one result per rollout, named `<bag>#<index>`, when episode markers cut the bag into more than one
    # (`split`): each its own trace, as the live monitor reports them; empty otherwise
    parts: list[BagResult] = field(default_factory=list)
    # on a part: the bag it was cut from and its index there; its own `topics`, `messages`, `timings` stay empty
    whole: WholeBag | None = None
    rollout: int | None = None
    interrupted: bool = False  # Ctrl-C stopped the batch before this bag was scored (`error` says so)
    retried: str | None = None  # why the first worker scoring it died, when another scored it (not a bag fault)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def duration(self) -> float:
        return (self.t_end - self.t_start) if self.t_start is not None and self.t_end is not None else 0.0

    def split(self) -> list[BagResult]:
        """This bag as the rollouts it is reported as: its parts when markers cut it, else itself."""
        return self.parts or [self]


class Progress(Protocol):
    """What score_bag reports frames to (a tqdm bar fits): the expected total, then counts."""

    def reset(self, total: int | None = None) -> None: ...

    def update(self, n: int = 1) -> object: ...


# ------------------------------------------------------------------------------------ pipeline
@cache
def _automata(specs: Path, rate_hz: float | None) -> tuple[tuple[str, ...], list]:
    """Compiled once per process and rate (the DFA cache on disk makes even the first call cheap)."""
    return load_automata(specs, rate_hz)


def make_grounder(robot: str | None, rate_hz: float, mapping: StreamMapping | None = None) -> Any:
    """The live estimator's grounder for `--robot` (`grounder.load_default_grounder`, the one factory), for the
    streams `mapping` configures (no wrench topic: the wrench predicates are not grounded)."""
    return _grounder(robot, rate_hz, *_streams(mapping or StreamMapping()))


def bag_grounder(robot: str | None, rate_hz: float, mapping: StreamMapping) -> Any:
    """The grounder for one bag, as `make_grounder` builds it, but built once per process, robot, rate and wrench
    stream and restarted (`Grounder.restart`) for each bag. Building it (the robot's files read, its MuJoCo
    model compiled) was 6 % of scoring a two-second bag; a batch of short rollouts pays it once per worker."""
    grounder = _kept_grounder(robot, rate_hz, *_streams(mapping))
    grounder.restart()
    return grounder


def _grounder(robot: str | None, rate_hz: float, wrench_sensor: bool, mobile_base: bool) -> Any:
    from safety_monitor.grounding.grounder import load_default_grounder

    return load_default_grounder(rate_hz, robot, wrench_sensor=wrench_sensor, mobile_base=mobile_base)


def _streams(mapping: StreamMapping) -> tuple[bool, bool]:
    """What the topic mapping gives the grounder to build for: a wrench stream, a mobile base's pose."""
    return mapping.wrench is not None, bool(mapping.world_frame)


_kept_grounder = lru_cache(maxsize=4)(_grounder)


def make_monitor(config: ReplayConfig, rate_hz: float | None) -> SpecSetMonitor:
    """The live monitor for the configured specs at the bag's control rate (a fresh one per bag)."""
    vocabulary, automata = _automata(config.specs_file(), rate_hz)
    return SpecSetMonitor(automata, vocabulary, history=config.monitor.history_frames)


def _check_grounded(monitor: SpecSetMonitor, grounder: Any) -> None:
    if unknown := sorted(set(monitor.predicates) - set(grounder.predicates)):
        raise SpecError(
            "the specs read predicates the grounder does not produce: "
            f"{', '.join(a + did_you_mean(a, grounder.predicates) for a in unknown)}; "
            "rescore a bag that records them with --from-predicates"
        )


def not_applicable(config: ReplayConfig, grounder: Any) -> dict[str, str]:
    """The configured properties this robot cannot ground, each with why (`grounding.applicability`)."""
    from safety_monitor.grounding.applicability import applicability

    verdicts = applicability(_spec_set(config.specs_file()), grounder).values()
    return {v.name: v.text() for v in verdicts if not v.applicable}


@cache
def _spec_set(specs: Path) -> SpecSet:
    """Read once per process, as `_automata` compiles it once: parsing it again for every bag of a batch was
    2 % of scoring two-second bags."""
    from safety_monitor.specs.model import load_specs

    return load_specs(specs)


def check_config(config: ReplayConfig) -> None:
    """Load the specs and, for robot-state mode, the robot description (with its twin, and the topic mapping's
    names checked against it) once before any bag, so a bad file is one error up front instead of the same
    failure for every bag."""
    monitor = make_monitor(config, config.rate_hz)
    if not config.from_predicates:  # the grounder `with_model` and the first bag here use
        grounder = _kept_grounder(config.robot, config.rate_hz or NOMINAL_RATE_HZ, *_streams(config.mapping))
        config.mapping.check_names(grounder.robot)
        _check_grounded(monitor, grounder)


def missing_topic_error(
    bag: Path, what: str, wanted: str, msgtype: str, topics: Mapping[str, TopicSummary], key: str
) -> SourceError:
    """SourceError listing the bag's topics and suggesting `--topics key=<topic>` for same-typed ones."""
    found = ", ".join(f"{name} ({s.msgtype}, {s.count})" for name, s in sorted(topics.items())) or "none"
    same = [name for name, s in sorted(topics.items()) if s.msgtype == msgtype]
    hint = (
        f"; map it with --topics {key}={same[0]}"
        if len(same) == 1
        else f"; candidates of type {msgtype}: {', '.join(same)} (choose with --topics {key}=TOPIC)"
        if same
        else ""
    )
    return SourceError(f"{bag}: no {what} on {wanted}. Topics found: {found}{hint}")


def estimate_rate(stamps: list[float]) -> float:
    """Control rate in Hz from the median step between the distinct stamps, rounded to a whole Hz. The stamps
    are sorted first: a bag logged in arrival order can hold them slightly out of order."""
    distinct = sorted(set(stamps))
    steps = sorted(b - a for a, b in itertools.pairwise(distinct))
    if not steps:
        what = "every stamp is zero" if stamps and not any(stamps) else "fewer than two distinct stamps"
        raise SourceError(
            f"cannot measure the control rate: {what} in the first {len(stamps)} messages; give it with --rate HZ"
        )
    return float(max(1, round(1.0 / steps[len(steps) // 2])))


class _Part:
    """What the frames of one reported rollout add up to: the result they are counted in, and its timelines."""

    def __init__(self, result: BagResult, predicates: tuple[str, ...]) -> None:
        self.result = result
        self.timeline = Timeline(predicates)
        self.stale_timeline = Timeline(("stale",))
        self.stale: Counter[str] = Counter()
        self.last: tuple = (object(), (None,) * len(predicates), True)  # the last valuation, its values, any None


class _Scorer:
    """What both modes do with their frames: hand each to the Supervisor (the input rules the live monitor
    node applies, by the bag's log times), with the bag's episode markers at their log times (as the nodes
    receive them), and, a batch at a time, extend the timelines with the frames it stepped, count stale and
    unknown frames, keep the stage timings. With markers, each rollout is counted in a result of its own."""

    def __init__(
        self,
        result: BagResult,
        monitor: SpecSetMonitor,
        settings: MonitorSettings,
        progress: Progress | None,
        topic: str,
        markers: list[tuple[float, EpisodeMarker]],
        stage: Estimator | None = None,
    ) -> None:
        self.result = result
        self.monitor = monitor
        self.progress = progress
        if progress is not None:
            progress.reset(total=result.topics[topic].count)
        self.timings = dict.fromkeys(STAGES, 0.0)
        preds = monitor.predicates
        self._blind = (None,) * len(preds)
        self._get = operator.itemgetter(*preds) if len(preds) > 1 else (lambda v, _p=preds[0]: (v[_p],))
        self._valuations: list = []  # the frames stepped since the last flush
        self._times: list[float] = []
        self._stales: list[frozenset[str]] = []
        add_valuation, add_time, add_stale = self._valuations.append, self._times.append, self._stales.append

        def stepped(valuation: Mapping[str, bool | None] | None, t: float, stale: frozenset[str]) -> None:
            add_valuation(valuation)
            add_time(t)
            add_stale(stale)

        self.supervisor = Supervisor(monitor, settings, on_frame=stepped)
        self.rollouts: list[Rollout] = []  # finished: more than one when the input restarted inside the bag
        self.markers, self.stage = markers, stage
        self._marker = 0  # the next marker to apply
        self.split = bool(markers)  # each rollout its own result (else one, as without markers live)
        self._bag_warnings = list(result.warnings)  # every rollout's too
        self.parts = [self._new_part() if self.split else _Part(result, preds)]
        self._flushed = 0  # the part the next flushed frame belongs to

    def next_marker(self) -> float:
        """The log time of the next marker to apply (inf: none left)."""
        return self.markers[self._marker][0] if self._marker < len(self.markers) else math.inf

    def apply_markers(self, until: float) -> float:
        """Apply the markers logged at or before `until` (before a message logged then), as the nodes do: a start
        marker restarts the estimator's rollout (`Estimator.new_rollout`), then reaches the Supervisor. Returns
        the log time of the next marker. The frames stepped so far are counted first, but for the trace's last
        ones, which a late start marker may withdraw from it (`flush`)."""
        markers = self.markers
        while self._marker < len(markers) and markers[self._marker][0] <= until:
            logged, marker = markers[self._marker]
            self._marker += 1
            if marker.kind is MarkerKind.START and self.stage is not None:
                self.record(self.stage.new_rollout(marker.t).issues)
            self.flush()
            step = self.supervisor.marker(marker, logged)
            if step.withdrawn is not None:
                self._withdraw(step.withdrawn)
            starts = [i for i in step.issues if i.kind is IssueKind.LATE_MARKER]  # the rollout it starts: its own
            self.issues(tuple(i for i in step.issues if i.kind is not IssueKind.LATE_MARKER))
            self.rollouts.extend(step.finished)
            self.issues(tuple(starts))
        return self.next_marker()

    def _withdraw(self, withdrawn: Withdrawn) -> None:
        """A late start marker withdrew the last frames of the trace in progress: they are counted in no part (the
        marker's rollout steps them again, blind: the step's last frames); the issues raised meanwhile stay. The
        frames not counted yet are the trace's last ones (`flush`): the withdrawn are the last of them, unless the
        trace was withdrawn whole and its part had counted the rest (its part then starts again)."""
        end = len(self._times) - withdrawn.blind  # the frames stepped before the withdrawal
        cut = slice(end - withdrawn.frames, end)
        if withdrawn.frames > end:
            k = len(self.rollouts)
            r = self._part(k).result
            assert r.frames + end == withdrawn.frames, f"withdrew {withdrawn.frames} frames from {r.frames} + {end}"
            r.frames = r.unknown_frames = r.stale_frames = 0
            r.t_start = r.t_end = None
            self.parts[k] = _Part(r, self.monitor.predicates)
            cut = slice(0, end)
        del self._valuations[cut], self._times[cut], self._stales[cut]

    def sample(self, sample: PredicateSample, now: float) -> None:
        """One frame, arrived at log time `now`."""
        start = time.perf_counter()
        step = self.supervisor.sample(sample, now)
        self.timings["monitor"] += time.perf_counter() - start
        if step.issues:
            self.issues(step.issues)
        if step.finished:
            self.rollouts.extend(step.finished)

    def issues(self, issues: tuple[StreamIssue, ...]) -> None:
        """The Supervisor's issues: counted, except the predicates never sent, which the report warns of."""
        for issue in issues:
            if issue.kind is IssueKind.UNSENT:
                self.result.warnings.append(issue.detail)
                if self.split:
                    self._part(len(self.rollouts)).result.warnings.append(issue.detail)
            else:
                self.record((issue,))

    def record(self, issues: tuple[StreamIssue, ...]) -> None:
        """Issues counted for the bag and, with markers, for the rollout in progress."""
        _record_issues(self.result, issues)
        if self.split and issues:
            _record_issues(self._part(len(self.rollouts)).result, issues)

    def _part(self, k: int) -> _Part:
        """The k-th rollout's part (made when its first frame or issue comes)."""
        while len(self.parts) <= k:
            self.parts.append(self._new_part())
        return self.parts[k]

    def _new_part(self) -> _Part:
        r = self.result
        part = BagResult(r.bag, r.mode, rate_hz=r.rate_hz, warnings=list(self._bag_warnings))
        part.not_applicable = r.not_applicable
        return _Part(part, self.monitor.predicates)

    def flush(self, final: bool = False) -> None:
        """The frames stepped since the last flush into the timelines and counts, each into its rollout's part
        (a finished rollout's frame count says where the next begins). With markers, the trace's last
        LATE_HOLD_FRAMES frames wait (unless `final`): a late start marker may still withdraw them from it."""
        valuations, times, stales = self._valuations, self._times, self._stales
        held = 0 if final or not self.split else min(LATE_HOLD_FRAMES, self.monitor.frame, len(times))
        count = len(times) - held
        if count <= 0:
            return
        done = 0
        while done < count:
            part = self._part(self._flushed)
            room = count - done
            if self.split and self._flushed < len(self.rollouts):
                room = min(room, self.rollouts[self._flushed].frames - part.result.frames)
            if room <= 0:
                self._flushed += 1
                continue
            self._add(part, valuations[done : done + room], times[done : done + room], stales[done : done + room])
            done += room
        if self.progress is not None:
            self.progress.update(count)
        del valuations[:count], times[:count], stales[:count]

    def _add(self, part: _Part, valuations: list, times: list[float], stales: list[frozenset[str]]) -> None:
        """Frames into one part (the bag's counts are its parts', summed at the end). Equal consecutive
        valuations may be one object (their values are then looked up once)."""
        r = part.result
        add, add_stale, get, blind = part.timeline.add, part.stale_timeline.add, self._get, self._blind
        last, values, unknown = part.last
        unknown_frames = stale_frames = 0
        for valuation, t, stale in zip(valuations, times, stales):
            if valuation is not last:
                last = valuation
                values = blind if valuation is None else get(valuation)
                unknown = None in values
            unknown_frames += unknown
            add(values, t)
            if stale:
                stale_frames += 1
                part.stale.update(stale)
                add_stale(_STALE, t)
            else:
                add_stale(_FRESH, t)
        part.last = (last, values, unknown)
        r.unknown_frames += unknown_frames
        r.stale_frames += stale_frames
        first, last = min(times), max(times)  # (an input that restarted inside the bag stamps its frames back)
        r.t_start = first if r.t_start is None else min(r.t_start, first)
        r.t_end = last if r.t_end is None else max(r.t_end, last)
        r.frames += len(times)

    def finish(self, bag_end: float | None) -> None:
        """The end of the bag (its last log time): the markers logged after the last frame, then the end of
        the input (a stream that stopped before it is blind from there)."""
        self.apply_markers(math.inf)
        step = self.supervisor.finish(bag_end)
        self.issues(step.issues)
        self.rollouts.extend(step.finished)  # one, unless the input restarted inside the bag
        self.flush(final=True)
        r = self.result
        if self.split:  # the bag's counts: its rollouts', each the frames its trace holds
            counted = [p.result for p in self.parts if p.result.frames]
            r.frames = sum(p.frames for p in counted)
            r.unknown_frames = sum(p.unknown_frames for p in counted)
            r.stale_frames = sum(p.stale_frames for p in counted)
            if counted:
                r.t_start = min(p.t_start for p in counted if p.t_start is not None)
                r.t_end = max(p.t_end for p in counted if p.t_end is not None)
        if r.frames == 0:
            raise SourceError(f"{r.bag}: no frames could be built" + _issue_hint(r))
        r.rollouts = len(self.rollouts)
        r.trace = pool_rollouts(self.rollouts)
        r.timings = {k: round(v, 6) for k, v in self.timings.items()}
        for part in self.parts:
            part.timeline.close()
            part.stale_timeline.close()
            part.result.timeline, part.result.stale_timeline = part.timeline, part.stale_timeline
            part.result.stale_by_stream = dict(sorted(part.stale.items()))
        if not self.split:
            return
        if len(self.rollouts) == 1:  # one rollout: the bag, as without markers
            whole = self.parts[0].result
            r.timeline, r.stale_timeline, r.stale_by_stream = (
                whole.timeline,
                whole.stale_timeline,
                whole.stale_by_stream,
            )
            return
        last = self._part(len(self.rollouts) - 1).result
        for late in self.parts[len(self.rollouts) :]:  # issues raised once the last rollout had ended: its own
            for issue in late.result.issue_examples:
                if sum(e.kind is issue.kind for e in last.issue_examples) < ISSUE_EXAMPLES:
                    last.issue_examples.append(issue)
            last.issues = dict(Counter(last.issues) + Counter(late.result.issues))
        stale: Counter[str] = Counter()
        cut = WholeBag(r.bag, r.rollouts, r.frames, r.t_start, r.t_end, r.messages, r.topics, r.timings)
        for k, rollout in enumerate(self.rollouts):
            own = self._part(k).result
            stale.update(own.stale_by_stream)
            own.bag, own.rollouts = f"{r.bag}#{k}", 1
            own.trace = TraceResult(rollout.frames, rollout.outcomes, rollout.events)
            own.whole, own.rollout = cut, k
            r.parts.append(own)
        r.stale_by_stream = dict(sorted(stale.items()))


_STALE, _FRESH = (True,), (False,)


def pool_rollouts(rollouts: list[Rollout]) -> TraceResult:
    """A bag's rollouts as one trace result: counts summed per property, events in order (each rollout's
    frame numbers are its own). One rollout: its result as it is."""
    first = rollouts[0]
    if len(rollouts) == 1:
        return TraceResult(first.frames, first.outcomes, first.events)
    outcomes = []
    for parts in zip(*(r.outcomes for r in rollouts)):
        o = parts[0]
        outcomes.append(
            replace(
                o,
                **{f: sum(getattr(p, f) for p in parts) for f in _SUMMED},
                durations=tuple(d for p in parts for d in p.durations),
                seconds=None
                if any(p.seconds is None for p in parts)
                else tuple(d for p in parts for d in p.seconds or ()),
            )
        )
    return TraceResult(sum(r.frames for r in rollouts), tuple(outcomes), tuple(e for r in rollouts for e in r.events))


_SUMMED = ("frames", "blind_frames", "triggers", "pending_triggers", "violations", "violating_frames", "discarded")


def _issue_hint(r: BagResult) -> str:
    """The first example of each kind of issue (the examples hold several per kind)."""
    first: dict[IssueKind, StreamIssue] = {}
    for issue in r.issue_examples:
        first.setdefault(issue.kind, issue)
    if not first:
        return ""
    return ": " + "; ".join(f"{i.kind} x{r.issues[i.kind]} ({i.detail})" for i in first.values())


def _record_issues(r: BagResult, issues: tuple[StreamIssue, ...]) -> None:
    for issue in issues:
        n = r.issues.get(issue.kind, 0)
        r.issues[issue.kind] = n + 1
        if n < ISSUE_EXAMPLES:
            r.issue_examples.append(issue)


def _read_markers(bag: BagReader, topic: str, result: BagResult) -> list[tuple[float, EpisodeMarker]]:
    """The bag's episode markers with their log times, in log-time order; none when it has no such topic. A
    malformed marker is dropped with a warning, as the nodes log and drop it (`nodes.episode_marker`)."""
    summary = result.topics.get(topic)
    if summary is None or summary.count == 0:
        return []
    if summary.msgtype != _PREDICATES_TYPE:
        result.warnings.append(f"episode markers {topic}: expected type {_PREDICATES_TYPE}, found {summary.msgtype}")
        return []
    markers = []
    for batch in bag.message_batches({topic}, BATCH):
        for i in range(len(batch)):
            logged = int(batch.log_ns[i]) / 1e9
            try:
                markers.append((logged, decode_marker(bag.deserialize(batch.raw(i), batch.msgtypes[batch.which[i]]))))
            except SourceError as exc:
                result.warnings.append(f"{topic} message logged at {logged:.6f} s: {exc}; marker dropped")
    return markers


def _timed_batches(bag: BagReader, topics: set[str], timings: dict[str, float]) -> Iterator[MessageBatch]:
    """The topics' messages a batch at a time, with read time charged to its stage."""
    clock = time.perf_counter
    batches = bag.message_batches(topics, BATCH)
    while True:
        start = clock()
        batch = next(batches, None)
        timings["read"] += clock() - start
        if batch is None:
            return
        yield batch


def _decoders(bag: BagReader, kind: MessageType, fast: Callable[[bytes], Any] | None = None) -> TypedDecoders:
    """The one decoder for a bag's stream of `kind` messages: the direct reader where the bag defines the
    type as it reads it, else rosbags' deserialiser."""
    return TypedDecoders(kind, bag.deserialize, lambda msgtype: cdr.supported(bag.fielddefs, msgtype), fast)


# ---------------------------------------------------------------------------------- the modes
def _score_predicates(bag: BagReader, config: ReplayConfig, result: BagResult, progress: Progress | None) -> None:
    """The recorded predicates, decoded a batch at a time (columns where the direct reader reads them),
    each frame handed to the Supervisor at its log time; a message that cannot be read is dropped and
    counted, as the monitor node drops it."""
    topic = config.mapping.predicates
    check_types(
        [ConfiguredInput("predicates", topic, MessageType.DIAGNOSTIC_ARRAY)],
        {name: s.msgtype for name, s in result.topics.items()},
        str(bag.path),
    )
    summary = result.topics.get(topic)
    if summary is None or summary.count == 0:
        raise missing_topic_error(bag.path, "recorded predicates", topic, _PREDICATES_TYPE, result.topics, "predicates")
    result.rate_hz = _control_rate(bag, config, topic)
    markers = _read_markers(bag, config.mapping.episode, result)
    scorer = _Scorer(result, make_monitor(config, result.rate_hz), config.monitor, progress, topic, markers)
    timings, clock = scorer.timings, time.perf_counter
    next_marker, apply_markers = scorer.next_marker(), scorer.apply_markers
    batch_reader = cdr.PredicateBatchReader()
    decoder = _decoders(bag, MessageType.DIAGNOSTIC_ARRAY, batch_reader.single.read)
    frame, record = scorer.supervisor.frame, scorer.issues
    valuation: Any = None  # the last row's, shared by the equal rows after it
    unknown: Any = None
    for batch in _timed_batches(bag, {topic}, timings):
        start = clock()
        n = len(batch)
        columns = (
            batch_reader.read(batch.buffer, batch.start, batch.size)
            if all(map(decoder.supported, batch.msgtypes))
            else None
        )
        samples: dict[int, Any] = {}  # the messages the columns do not hold, one at a time (or _DROPPED)
        for i in range(n) if columns is None else np.flatnonzero(~columns.decoded).tolist():
            raw, msgtype = batch.raw(i), batch.msgtypes[batch.which[i]]
            try:  # dropped and counted, as the monitor node drops a message it cannot read
                samples[i] = decoder[msgtype](raw)
            except SourceError as exc:  # m.BadPredicates included
                logged = int(batch.log_ns[i]) / 1e9
                scorer.record(
                    (
                        StreamIssue(
                            IssueKind.UNDECODABLE,
                            "predicates",
                            logged,
                            f"{topic} message logged at {logged:.6f} s: {exc}; message dropped",
                        ),
                    ),
                )
                samples[i] = _DROPPED
        if columns is not None:
            keys, values, col_t, col_frame, col_unknown, col_stale, col_objects = (
                columns.keys,
                columns.values,
                columns.t,
                columns.frame,
                columns.unknown,
                columns.stale,
                columns.objects,
            )
            changed = [True, *np.any(values[1:] != values[:-1], axis=1).tolist()] if n else []
        logged_at = (batch.log_ns / 1e9).tolist()
        mid = clock()
        timings["deserialise"] += mid - start
        for i in range(n):
            if logged_at[i] >= next_marker:
                next_marker = apply_markers(logged_at[i])
            sample = samples.get(i)
            if sample is None:
                if changed[i] or valuation is None or col_unknown[i] != unknown:
                    unknown = col_unknown[i]
                    valuation = PredicateSample(dict(zip(keys, values[i].tolist())), 0.0, unknown=unknown).valuation()
                step = frame(valuation, col_t[i], col_frame[i], col_stale[i], logged_at[i], col_objects[i])
            elif sample is _DROPPED:  # `changed` compares with this row: the next row builds its own valuation
                valuation = None
                continue
            else:
                valuation = unknown = None  # the next column row builds its own
                step = frame(sample.valuation(), sample.t, sample.frame, sample.stale, logged_at[i], sample.objects)
            if step.issues:
                record(step.issues)
            if step.finished:
                scorer.rollouts.extend(step.finished)
        timings["monitor"] += clock() - mid
        scorer.flush()
    scorer.finish(bag.end_time)


_DROPPED = object()  # a predicates message that could not be read


_JOINT_ROUTE, _WRENCH_ROUTE, _GRIPPER_ROUTE, _TF_ROUTE = object(), object(), object(), object()


class _MoreJoints(NamedTuple):
    """The route of a topic of `more_joint_states` (an object's pose topic routes by the object's name)."""

    topic: str


def _score_states(bag: BagReader, config: ReplayConfig, result: BagResult, progress: Progress | None) -> None:
    """A thin driver of the Estimator stage on log times (the estimator node drives it on the node clock);
    joint, wrench and pose messages are decoded a batch at a time, the rest one at a time, by the one decoder."""
    mapping = config.mapping
    topics = result.topics
    # the objects are the robot description's; their topics' types are checked before the rate is measured
    check_types(
        configured_inputs(mapping, _described_objects(config)), {n: s.msgtype for n, s in topics.items()}, str(bag.path)
    )
    joints = topics.get(mapping.joint_states)
    if joints is None or joints.count == 0:
        raise missing_topic_error(bag.path, "joint states", mapping.joint_states, _JOINT_TYPE, topics, "joint_states")
    rate = result.rate_hz = _control_rate(bag, config, mapping.joint_states)
    grounder = bag_grounder(config.robot, rate, mapping)
    if config.model_digest is not None and grounder.twin.digest != config.model_digest:
        raise SourceError(
            f"{bag.path}: the robot model built on {socket.gethostname()} is not the command's (another URDF, MJCF, "
            "mesh or MuJoCo version there); install the same files and packages on every node"
        )
    result.not_applicable = not_applicable(config, grounder)
    objects = tuple(grounder.robot.objects)
    route: dict[str, object] = {mapping.joint_states: _JOINT_ROUTE}
    if mapping.wrench is not None:
        if mapping.wrench in topics:
            route[mapping.wrench] = _WRENCH_ROUTE
        else:
            result.warnings.append(f"no wrench topic {mapping.wrench}: the wrench stream is stale throughout")
    if mapping.gripper_joint_states:
        if mapping.gripper_joint_states in topics:
            route[mapping.gripper_joint_states] = _GRIPPER_ROUTE
        else:
            result.warnings.append(
                f"no gripper topic {mapping.gripper_joint_states}: its joints never come, so no frame can be built"
            )
    for more in mapping.more_joint_states:
        if more.topic in topics:
            route[more.topic] = _MoreJoints(more.topic)
        else:
            result.warnings.append(f"no topic {more.topic} ({MORE_JOINTS}): its joints never come")
    for name in objects:
        topic = mapping.pose_topic(name)
        if name in mapping.object_frames:
            continue
        if topic in topics:
            route[topic] = name
        else:
            result.warnings.append(f"no pose topic {topic} for object {name!r}: its pose is stale throughout")
    if mapping.object_frames or mapping.world_frame:
        route.update((t, _TF_ROUTE) for t in (mapping.tf, mapping.tf_static) if t in topics)
        if mapping.tf not in topics and mapping.tf_static not in topics:
            framed = sorted(mapping.object_frames) + (["the base"] if mapping.world_frame else [])
            result.warnings.append(
                f"no {mapping.tf} or {mapping.tf_static}: the poses of {', '.join(framed)} (TF frames) are stale "
                "throughout"
            )
    monitor = make_monitor(config, rate)
    _check_grounded(monitor, grounder)
    clock = time.perf_counter
    stage = Estimator(grounder, mapping, config.estimator, clock=clock)
    markers = _read_markers(bag, mapping.episode, result)
    scorer = _Scorer(result, monitor, config.monitor, progress, mapping.joint_states, markers, stage)
    timings, record = scorer.timings, scorer.record
    next_marker, apply_markers = scorer.next_marker(), scorer.apply_markers
    joint_batches = cdr.JointStateBatchReader()
    # a batch reader per stream (each object's topic learns its own layout)
    batch_readers: dict[object, cdr.JointStateBatchReader | cdr.WrenchBatchReader | cdr.PoseBatchReader] = {
        _JOINT_ROUTE: joint_batches,
        _WRENCH_ROUTE: cdr.WrenchBatchReader(),
    }
    batch_readers.update((name, cdr.PoseBatchReader()) for name in objects)
    poses = _decoders(bag, MessageType.POSE_STAMPED)
    decoders = {
        _JOINT_ROUTE: (_decoders(bag, MessageType.JOINT_STATE, joint_batches.single.read), JOINTS),
        _WRENCH_ROUTE: (_decoders(bag, MessageType.WRENCH_STAMPED, cdr.read_wrench), WRENCH),
    }
    decoders.update((name, (poses, pose_stream(name))) for name in objects)
    decoders[_GRIPPER_ROUTE] = (_decoders(bag, MessageType.JOINT_STATE), GRIPPER_JOINTS)
    decoders.update(
        (_MoreJoints(m.topic), (_decoders(bag, MessageType.JOINT_STATE), m.stream)) for m in mapping.more_joint_states
    )
    decoders[_TF_ROUTE] = (_decoders(bag, MessageType.TF_MESSAGE), TF)
    on_joints, on_wrench, on_pose = stage.joints, stage.wrench, stage.pose
    for batch in _timed_batches(bag, set(route), timings):
        kinds = [route[topic] for topic in batch.topics]
        buffer, msgtypes = batch.buffer, batch.msgtypes
        start = clock()
        read: dict[int, Any] = {}  # message index -> joint sample, (wrench, stamp) or (pose, stamp), read at once
        for w, kind in enumerate(kinds):
            batch_reader = batch_readers.get(kind)
            if batch_reader is not None and decoders[kind][0].supported(msgtypes[w]):
                rows = np.flatnonzero(batch.which == w)
                read.update(zip(rows.tolist(), batch_reader.read(buffer, batch.start[rows], batch.size[rows])))
        timings["deserialise"] += clock() - start
        for k, (which, received, at, size) in enumerate(
            zip(batch.which.tolist(), (batch.log_ns / 1e9).tolist(), batch.start.tolist(), batch.size.tolist())
        ):
            if received >= next_marker:
                next_marker = apply_markers(received)
            kind = kinds[which]
            decoded = read.get(k)
            if decoded is None:  # not in the batch: the one decoder, message by message
                start = clock()
                typed, stream = decoders[kind]
                try:
                    decoded = typed[msgtypes[which]](buffer[at : at + size])
                except Undecodable as exc:
                    record(stage.undecodable(stream, received, exc).issues)
                    continue
                finally:
                    timings["deserialise"] += clock() - start
            if kind is _JOINT_ROUTE:
                step = on_joints(decoded, received)
                if step.sample is not None:
                    scorer.sample(step.sample, received)
            elif kind is _WRENCH_ROUTE:
                step = on_wrench(decoded[0], decoded[1], received)
            elif kind is _GRIPPER_ROUTE:
                step = stage.gripper_joints(decoded, received)
            elif type(kind) is _MoreJoints:
                step = stage.more_joints(kind.topic, decoded, received)
            elif kind is _TF_ROUTE:
                step = stage.transforms(decoded, received)
            else:
                step = on_pose(kind, decoded[0], decoded[1], received)
            if step.issues:
                record(step.issues)
        scorer.flush()
    record(stage.finish().issues)
    timings["assemble"] += stage.timings["assemble"]
    timings["ground"] += stage.timings["ground"]
    scorer.finish(bag.end_time)


def _described_objects(config: ReplayConfig) -> tuple[str, ...]:
    """The objects of the configured robot description, read without building its twin."""
    robot = config.robot_file()
    assert robot is not None
    return _objects_of(robot / "robot.yaml" if robot.is_dir() else robot)


@cache
def _objects_of(path: Path) -> tuple[str, ...]:
    """Read once per process, as the grounder is built once (`bag_grounder`)."""
    from safety_monitor.grounding.description import load_robot_description

    return tuple(load_robot_description(path).objects)


def _control_rate(bag: BagReader, config: ReplayConfig, topic: str) -> float:
    """The configured rate, else the one measured on the frame-driving topic's stamps (errors reading them
    name the bag already)."""
    if config.rate_hz:
        return config.rate_hz
    stamps = _first_stamps(bag, topic)
    try:
        return estimate_rate(stamps)
    except SourceError as exc:
        raise SourceError(f"{bag.path}: {topic}: {exc}") from None


def _first_stamps(bag: BagReader, topic: str, n: int = 201) -> list[float]:
    """Header stamps of the topic's first n messages: read from the bytes where a direct reader accepts the
    message (rosbags would decode it too), else from rosbags' message (which fails as it does)."""
    decoders = {
        _JOINT_TYPE: _decoders(bag, MessageType.JOINT_STATE),
        _PREDICATES_TYPE: _decoders(bag, MessageType.DIAGNOSTIC_ARRAY),
    }
    stamps: list[float] = []
    for batch in bag.message_batches({topic}, n):
        for i in range(len(batch)):
            raw, msgtype = batch.raw(i), batch.msgtypes[batch.which[i]]
            read = decoders[msgtype][msgtype].fast if msgtype in decoders else None
            try:
                stamp = cdr.read_stamp(raw) if read is not None and read(raw) is not None else None
            except m.BadPredicates:  # well-formed bytes, a bad predicate value: the stamp is fine
                stamp = cdr.read_stamp(raw)
            stamps.append(m.stamp_seconds(bag.deserialize(raw, msgtype).header.stamp) if stamp is None else stamp)
            if len(stamps) >= n:
                return stamps
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
            result.warnings.extend(bag.warnings)
            config, notes = config.resolved({name: s.msgtype for name, s in bag.topics.items()})
            result.warnings.extend(notes)
            with _collector_spared():
                if config.from_predicates:
                    _score_predicates(bag, config, result, progress)
                else:
                    _score_states(bag, config, result, progress)
    except SafetyMonitorError as exc:
        result.error = _naming(path, str(exc))
        result.trace = None
    except Exception as exc:  # a bug or an unforeseen library error must not stop the batch either
        result.error = f"{path}: {type(exc).__name__}: {exc}"
        result.trace = None
    return result


@contextmanager
def _collector_spared() -> Iterator[None]:
    """The objects built before a bag is scored (modules, caches, compiled automata: some 70,000) kept out of
    the garbage collector's full collections while it is, as the live nodes keep theirs
    (`nodes.runtime.freeze_startup_objects`), and handed back after, so nothing they hold outlives its use.
    Left alone where the process froze objects itself."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _naming(path: str | Path, error: str) -> str:
    """The error led by the bag's path, once (most errors already name the bag; a spec error does not)."""
    return error if error.startswith(f"{path}: ") else f"{path}: {error}"
