"""Stalls, gaps and restarts through the Estimator and Supervisor stages, fed from the physics-only sim as
replay feeds them (explicit clocks: the sim's stamps are the arrival times; no sleeps). A gap in the joint
stream, in one slower stream, or in the whole input, at seeded random moments of every fault-free task:
no violation opens, and frames after a gap are blind for the grounder's warm-up, then known. A sim restarted
mid-episode is a new rollout whose events equal a clean run's; a late start marker still starts its rollout.

SAFETY_MONITOR_LONG_STALLS=1 runs all 10 moments per task and gap kind (3 by default: ~60 s of CPU)."""

import functools
import os
import random

import pytest

from safety_monitor.enums import EventKind, IssueKind
from safety_monitor.frames import JointSample
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.pipeline.estimator import Estimator, RolloutStart
from safety_monitor.pipeline.markers import START, EpisodeMarker
from safety_monitor.pipeline.supervisor import Supervisor
from safety_monitor.replay.score import ReplayConfig, make_monitor
from safety_monitor.settings import MonitorSettings
from safety_monitor.sim.runner import run_episode
from safety_monitor.sim.tasks import TASKS

RATE_HZ = 20.0  # the paper's frame rate: every 25th sim step (physics still runs every step)
STRIDE = 25
MOMENTS = 10 if os.environ.get("SAFETY_MONITOR_LONG_STALLS") else 3
GAP_KINDS = ("joints", "pose", "all")


@functools.cache
def messages(task):
    """The episode as messages in arrival order: ("wrench", wrench, stamp), ("pose", name, pose, stamp),
    ("joints", JointSample); a pose only when newly measured (stamped at its measurement time)."""
    out, last_pose = [], {}
    for state in run_episode(task, stride=STRIDE):
        t = state.t
        if state.wrench is not None:
            out.append(("wrench", state.wrench, t - (state.wrench_age or 0.0)))
        for name, pose in state.object_poses.items():
            stamp = t - state.object_ages.get(name, 0.0)
            if stamp > last_pose.get(name, -1.0) + 1e-9:
                last_pose[name] = stamp
                out.append(("pose", name, pose, stamp))
        out.append(
            (
                "joints",
                JointSample(state.joint_names, state.joint_position, state.joint_velocity, state.joint_effort, t),
            )
        )
    return tuple(out)


def stamp(message):
    return message[-1] if message[0] != "joints" else message[1].stamp


class Run:
    """The two stages as replay drives them: every message at its stamp, the watchdog ticked meanwhile."""

    def __init__(self):
        self.stage = Estimator(load_default_grounder(RATE_HZ))
        self.supervisor = Supervisor(make_monitor(ReplayConfig(), RATE_HZ), MonitorSettings())
        self.samples, self.events, self.rollouts, self.issues = [], [], [], []
        self.now = 0.0

    def feed(self, items, offset=0.0, keep=lambda message: True):
        for message in items:
            now = self.now = stamp(message) + offset
            self._take(self.supervisor.tick(now))
            if not keep(message):
                continue
            kind = message[0]
            if kind == "joints":
                sample = message[1]
                step = self.stage.joints(
                    JointSample(sample.names, sample.position, sample.velocity, sample.effort, sample.stamp + offset)
                )
                if step.sample is not None:
                    self.samples.append(step.sample)
                    self._take(self.supervisor.sample(step.sample, now))
            elif kind == "wrench":
                step = self.stage.wrench(message[1], message[2] + offset)
            else:
                step = self.stage.pose(message[1], message[2], message[3] + offset)
            self.issues.extend(step.issues)
        return self

    def marker(self, marker):
        step = self.stage.new_rollout(marker.t)
        self.issues.extend(step.issues)
        self._take(self.supervisor.marker(marker, self.now))
        return step

    def finish(self):
        self._take(self.supervisor.finish(self.now))
        return self

    def _take(self, step):
        self.events.extend(step.events)
        self.rollouts.extend(step.finished)
        self.issues.extend(step.issues)

    def opened(self):
        return [(e.event.property, e.event.t) for e in self.events if e.event.kind is EventKind.OPENED]


@functools.cache
def clean(task):
    return Run().feed(messages(task)).finish()


def dropper(kind, start, end, objects):
    """Whether a message survives a gap of `kind` over [start, end)."""

    def keep(message):
        if not start <= stamp(message) < end:
            return True
        if kind == "all":
            return False
        if kind == "joints":
            return message[0] != "joints"
        return not (message[0] == "pose" and message[1] in objects)

    return keep


def gaps():
    rng = random.Random(15)
    for task in TASKS:
        for kind in GAP_KINDS:
            for k in range(10):
                moment, length = rng.random(), rng.uniform(0.1, 5.0)
                if k < MOMENTS:
                    yield task, kind, moment, round(length, 3)


@pytest.mark.parametrize("task", list(TASKS))
def test_every_fault_free_task_runs_clean(task):
    run = clean(task)
    assert run.opened() == [] and len(run.rollouts) == 1


@pytest.mark.parametrize(("task", "kind", "moment", "length"), list(gaps()))
def test_no_violation_after_a_gap_and_blind_frames_until_warmed_up(task, kind, moment, length):
    items = messages(task)
    t0, t1 = stamp(items[0]), stamp(items[-1])
    start = t0 + 1.0 + moment * (t1 - t0 - 2.0)
    objects = {TASKS[task].obj or "cube"}
    run = Run().feed(items, keep=dropper(kind, start, start + length, objects)).finish()
    assert run.opened() == [], f"{kind} gap of {length} s at {start:.2f} s"
    assert len(run.rollouts) == 1
    if kind == "pose":
        return
    names = frozenset(run.stage.grounder.predicates)
    after = [s for s in run.samples if s.t >= start + length]
    if not after:
        return
    blind = [s.unknown == names for s in after]
    warm = run.stage.warmup_frames
    if length > run.stage.limits.joint_states:  # a break in time: the restarted grounder warms up blind
        assert blind[:warm] == [True] * min(warm, len(after))
        assert not any(blind[warm:])  # then known (a fault-free run has fresh streams)
    else:  # within the joint stream's limit: no break, nothing blind
        assert not any(blind)


@pytest.mark.parametrize("task", ["pick_and_place_cube", "open_drawer"])
def test_a_sim_restarted_mid_episode_is_a_new_rollout_equal_to_a_clean_run(task):
    items = messages(task)
    half = [m for m in items if stamp(m) < stamp(items[len(items) // 2])]
    run = Run().feed(half)
    run.now = 0.0  # the restarted sim's clock
    run.feed(items).finish()
    assert [i.kind for i in run.issues].count(IssueKind.INPUT_RESTARTED) == 2  # the estimator's, the Supervisor's
    first, second = run.rollouts
    assert first.index == 0 and second.index == 1
    assert first.frames == len([m for m in half if m[0] == "joints"])
    assert all(e.kind is not EventKind.UNRECOVERED_AT_END for e in first.events)
    reference = clean(task).rollouts[0]
    assert [(e.kind, e.property, e.frame, e.t) for e in second.events] == [
        (e.kind, e.property, e.frame, e.t) for e in reference.events
    ]
    assert second.outcomes == reference.outcomes


def test_a_late_start_marker_starts_its_rollout_at_its_time():
    first, second = messages("pick_and_place_cube"), messages("open_drawer")
    offset = stamp(first[-1]) + 1.0 / RATE_HZ
    run = Run()
    run.marker(EpisodeMarker(START, 0, stamp(first[0])))
    run.feed(first)
    late = [m for m in second if stamp(m) < stamp(second[0]) + 0.5]
    run.feed(late, offset)  # half a second of the new rollout before its marker; no end marker at all
    step = run.marker(EpisodeMarker(START, 1, stamp(second[0]) + offset, task="open_drawer"))
    assert step.start is RolloutStart.LATE
    run.feed(second[len(late) :], offset).finish()
    old, new = run.rollouts
    assert (old.index, new.index, new.task) == (0, 1, "open_drawer")
    kinds = [i.kind for i in run.issues]
    assert kinds.count(IssueKind.LATE_MARKER) == 2 and kinds.count(IssueKind.MISSING_MARKER) == 1
    n_late = len([m for m in late if m[0] == "joints"])
    assert old.frames == len([m for m in first if m[0] == "joints"])  # the frames after its time withdrawn
    assert new.frames == len([m for m in second if m[0] == "joints"])  # the new rollout begins at its marker's time
    warm = run.stage.warmup_frames
    assert min(o.blind_frames for o in new.outcomes) >= n_late + warm  # the frames before it came, then the warm-up
    assert run.opened() == []
    names = frozenset(run.stage.grounder.predicates)
    after = [s for s in run.samples if s.t >= stamp(second[len(late)]) + offset]
    assert [s.unknown == names for s in after[: warm + 1]] == [True] * warm + [False]
