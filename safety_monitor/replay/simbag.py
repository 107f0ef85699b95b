"""Record in-process simulator runs to a rosbag2 bag laid out like a live workcell recording.

The replay benchmark generates its bag with this instead of committing a binary file.
Each control step writes `/clock`, the wrist wrench and every object pose that is new at that step
(stamped at its measurement time), then `/joint_states`, all with the step's time as log time.
Each episode lies between start and end markers on `safety_monitor/episode`, and the next one starts one
control period after the last one's last frame, as the sim node runs them, so the bag is laid out as a live
recording of several rollouts. With `estimate=True` the step also goes through the live estimator's path (the
Estimator stage fed the very messages written, then the monitor) and `/safety_monitor/predicates` and
`/safety_monitor/events` are recorded as the estimator and monitor nodes would publish them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from safety_monitor.frames import RobotState
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagWriter
from safety_monitor.pipeline.assemble import StreamMapping
from safety_monitor.pipeline.estimator import Estimator
from safety_monitor.pipeline.markers import END, START, EpisodeMarker, marker_msg
from safety_monitor.replay.names import absolute_mapping
from safety_monitor.settings import CONTROL_RATE_HZ


@dataclass(frozen=True)
class SimRun:
    """One episode to record: a task (default: the fault's), optionally a fault, a seed."""

    task: str | None = None
    fault: str | None = None
    seed: int = 0


class _Estimator:
    """The estimator and monitor nodes' work, in process, on the messages as written."""

    def __init__(self, writer: BagWriter, mapping: StreamMapping, specs: str | None, rate_hz: float) -> None:
        from safety_monitor.grounding.grounder import load_default_grounder
        from safety_monitor.replay.score import ReplayConfig, make_monitor

        self.writer, self.mapping = writer, mapping
        self.stage = Estimator(load_default_grounder(rate_hz, wrench_sensor=mapping.wrench is not None), mapping)
        self.monitor = make_monitor(ReplayConfig(specs=specs), rate_hz)
        self.t: float | None = None

    def on_wrench(self, msg: object) -> None:
        self.stage.wrench(*m.wrench_of(msg))

    def on_pose(self, name: str, msg: object) -> None:
        self.stage.pose(name, *m.pose_of(msg))

    def on_joint_states(self, msg: object) -> None:
        sample = self.stage.joints(m.joint_state_sample(msg)).sample
        if sample is None:
            return
        self.writer.write_predicates(self.mapping.predicates, sample)
        events = self.monitor.step(sample.valuation(), sample.t)
        if events:
            self.writer.write_events(self.mapping.events, events, sample.t)
        self.t = sample.t

    def end_rollout(self) -> None:
        """The end marker: the monitor closes the trace (the Supervisor's rule), its end-of-trace events out."""
        events = self.monitor.finish().events
        if events and self.t is not None:
            self.writer.write_events(self.mapping.events, events, self.t)


def record_sim_bag(
    path: str | Path,
    runs: Sequence[SimRun],
    *,
    storage: str = "mcap",
    mapping: StreamMapping | None = None,
    estimate: bool = False,
    specs: str | None = None,
) -> Path:
    """Write the runs back to back (each continues the previous one's clock) into one new bag, each between its
    episode markers (the estimator, with `estimate`, restarts its rollout at a start marker as the node does)."""
    from safety_monitor.sim.runner import Episode

    mapping = absolute_mapping(mapping or StreamMapping())  # the topics of a stack in the root namespace
    offset = 0.0
    with BagWriter(path, storage=storage) as writer:
        estimator = _Estimator(writer, mapping, specs, CONTROL_RATE_HZ) if estimate else None
        for index, run in enumerate(runs):
            episode = Episode(run.task, run.fault, run.seed)
            task, fault = episode.task.name, run.fault or ""
            last, frames = offset, 0
            while not episode.done:
                state = episode.step()
                last = offset + state.t
                if not frames:
                    writer.write(
                        mapping.episode,
                        marker_msg(writer.types, EpisodeMarker(START, index, last, task, fault, run.seed)),
                        last,
                    )
                    if estimator is not None:
                        estimator.stage.new_rollout(last)
                _write_state(writer, mapping, state, offset, estimator)
                frames += 1
            end = EpisodeMarker(END, index, last, task, fault, run.seed, frames, episode.succeeded())
            writer.write(mapping.episode, marker_msg(writer.types, end), last)
            if estimator is not None:
                estimator.end_rollout()
            offset = last + 1.0 / CONTROL_RATE_HZ
    return Path(path)


def _write_state(
    writer: BagWriter, mapping: StreamMapping, state: RobotState, offset: float, estimator: _Estimator | None
) -> None:
    t = offset + state.t
    types = writer.types
    writer.write_clock(t)
    if mapping.wrench is not None and state.wrench is not None and not state.wrench_age:
        msg = m.wrench_msg(types, t, state.wrench)
        writer.write(mapping.wrench, msg, t)
        if estimator is not None:
            estimator.on_wrench(msg)
    for name, pose in state.object_poses.items():
        if state.object_ages.get(name, 0.0) == 0.0:
            msg = m.pose_msg(types, t, pose)
            writer.write(mapping.pose_topic(name), msg, t)
            if estimator is not None:
                estimator.on_pose(name, msg)
    msg = m.joint_state_msg(types, t, state.joint_names, state.joint_position, state.joint_velocity, state.joint_effort)
    writer.write(mapping.joint_states, msg, t)
    if estimator is not None:
        estimator.on_joint_states(msg)
