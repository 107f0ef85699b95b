"""The simulated robot: scripted MuJoCo episodes published as the robot topics of docs/ros.md (Topics).

Per control step it publishes `/clock`, the wrist wrench and, when the 50 Hz motion-capture stream
has a new sample, each object's pose (stamped with its sample time), then `/joint_states` last: the
joint message completes a frame, so an estimator that has it has the rest of that frame too. Episodes
are separated by markers on `safety_monitor/episode` and by a pause of `episode_gap_s` wall seconds, so the
markers reach every node before the next episode's first frame.

Simulated time runs only while the world is simulated. Between episodes the world is torn down and
rebuilt: that takes no simulated time, so the next episode starts one control period after the last
frame (time stays monotonic), and nothing on sim time (the estimator's and monitor's watchdogs under
`use_sim_time`) sees the pause as a stopped stream. Publishing an idle robot instead would invent
frames nothing simulated, and a watchdog told to expect a marker-announced silence would let a marker
hide a real one. The same holds for a realtime sim that was paused (SIGSTOP, a starved process): it
resumes where it stopped, skipping the missed wall time, instead of publishing the backlog in a burst
that overflows its readers' queues.

Pacing: `realtime` steps on a wall-clock timer at the control rate times `realtime_factor`;
`lockstep` publishes the next frame as soon as the estimator's predicates for all but
`max_in_flight` earlier frames came back, i.e. as fast as the pipeline consumes, losing nothing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from safety_monitor.frames import RobotState
from safety_monitor.io import messages as m
from safety_monitor.nodes import qos
from safety_monitor.nodes.params import declare, declare_hardware_id, declare_topics
from safety_monitor.nodes.runtime import request_shutdown, run_node
from safety_monitor.pipeline.markers import END, START, EpisodeMarker, marker_msg
from safety_monitor.settings import CONTROL_RATE_HZ, SimSettings
from safety_monitor.sim.runner import episode_schedule
from safety_monitor.sim.workcell import OBJECTS

if TYPE_CHECKING:
    from safety_monitor.sim.runner import Episode

FIRST_EPISODE_AT_S = 1.0  # simulated time of the first episode's start (a zero stamp means "unset" in ROS)
_SAME_SAMPLE_S = 1e-6  # pose sample times closer than this are the same sample
# realtime pace: a tick publishes at most this many frames to catch up with its schedule (timer jitter, a
# short stall); a longer lag is skipped, not caught up. Well under the readers' queue depth (qos.FRAME_DEPTH).
MAX_CATCH_UP_FRAMES = qos.FRAME_DEPTH // 4


class SimNode(Node):
    """Publishes the scheduled episodes of the workcell, then exits (or idles) when done."""

    def __init__(self, **node_kwargs) -> None:
        super().__init__("sim_node", **node_kwargs)
        p = self.params = declare(self, SimSettings)
        self.topics = declare_topics(self)
        self.hardware_id = declare_hardware_id(self)
        self.schedule = episode_schedule(p.task, p.fault, p.episodes)
        self._types = m.rclpy_types()
        T = self._types
        self._clock_pub = self.create_publisher(T.Clock, self.topics.clock, qos.CLOCK)
        self._joints_pub = self.create_publisher(T.JointState, self.topics.joint_states, qos.input_qos())
        self._wrench_pub = (
            self.create_publisher(T.WrenchStamped, self.topics.wrench, qos.input_qos()) if self.topics.wrench else None
        )
        self._pose_pubs = {
            name: self.create_publisher(T.PoseStamped, self.topics.object_pose.format(name=name), qos.input_qos())
            for name in OBJECTS
        }
        self._marker_pub = self.create_publisher(T.DiagnosticArray, self.topics.episode, qos.EPISODE)
        # only counted (`_ready`): a monitor is there to check the frames
        self._monitor_sub = self.create_subscription(
            T.DiagnosticArray, self.topics.heartbeat, lambda _raw: None, qos.DIAGNOSTICS, raw=True
        )
        self._lockstep = p.pace == "lockstep"
        if self._lockstep:
            # raw: an answer is only counted, so the frame is not deserialised here
            self._pred_sub = self.create_subscription(
                T.DiagnosticArray, self.topics.predicates, self._on_predicates, qos.PREDICATES, raw=True
            )
        self._episode: Episode | None = None  # set from the first episode's start until the schedule is done
        self._index = -1
        self._offset = 0.0  # added to the episode's own time, so time grows across episodes
        self._last_t = 0.0
        self._published = self._acked = 0
        self._pose_sent: dict[str, float] = {}  # object -> time of the last pose sample published
        self._phase = "waiting"  # waiting -> gap -> running -> (gap -> running)* -> done; halted by halt()
        self._phase_since = time.monotonic()
        self._progress_at = time.monotonic()
        period = 0.02 if self._lockstep else 1.0 / (CONTROL_RATE_HZ * p.realtime_factor)
        self._timer = self.create_timer(max(period, 1e-3), self._tick, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def halt(self) -> None:
        """Publish nothing more (a stopping run lets what is already on its way arrive)."""
        self._timer.cancel()
        self._phase = "halted"

    # ------------------------------------------------------------------------------ state machine
    def _tick(self) -> None:
        now = time.monotonic()
        if self._phase == "waiting" and self._ready():
            self._start_episode(0)
        elif self._phase == "gap" and now - self._phase_since >= self.params.episode_gap_s:
            self._phase, self._phase_since = "running", now
            self._progress_at = now
        if self._phase != "running":
            return
        if self._lockstep:
            if self._published > self._acked and now - self._progress_at > self.params.ack_timeout_s:
                self.get_logger().warning(
                    f"no predicates for {self.params.ack_timeout_s} s: {self._published - self._acked} frames "
                    "unanswered; continuing"
                )
                self._acked = self._published
            self._pump()
        else:
            due = self._due(now)
            episode = self._episode
            assert episode is not None  # running: an episode has started
            while self._published < due and not episode.done:
                self._publish_frame()
            if episode.done:
                self._end_episode()

    def _due(self, now: float) -> int:
        """Realtime pace: the frames the schedule wants published by `now`. A lag of more than
        MAX_CATCH_UP_FRAMES re-anchors the schedule at now: the missed wall time is skipped."""
        rate = CONTROL_RATE_HZ * self.params.realtime_factor
        due = int((now - self._phase_since) * rate)
        if due - self._published > MAX_CATCH_UP_FRAMES:
            skipped = (due - self._published - 1) / rate
            self._phase_since += skipped
            self.get_logger().info(
                f"{skipped:.3f} s behind the wall clock (paused or starved): resuming from here, not catching up"
            )
            due = self._published + 1
        return due

    def _ready(self) -> bool:
        """Every input topic has a subscriber, a monitor's heartbeat is matched (and, lockstep, someone answers
        with predicates), so no frame is published into the void while discovery is still matching. Without
        the heartbeat, sim.launch.py's monitor, the slowest of its three processes to start, missed the first
        episode's start marker and its first frames: blind where they should have been checked."""
        pubs = [self._joints_pub, *self._pose_pubs.values()] + ([self._wrench_pub] if self._wrench_pub else [])
        waiting = [p.topic_name for p in pubs if p.get_subscription_count() < 1]
        if self._monitor_sub.get_publisher_count() < 1:
            waiting.append(self._monitor_sub.topic_name)
        if self._lockstep and self._pred_sub.get_publisher_count() < 1:
            waiting.append(self._pred_sub.topic_name)
        if waiting and time.monotonic() - self._phase_since > 5.0:
            self._phase_since = time.monotonic()
            self.get_logger().info(f"waiting for the other end of {', '.join(waiting)}")
        return not waiting

    def _on_predicates(self, _raw: bytes) -> None:
        """One frame answered. Every answer of an episode arrives before its end marker is sent, so
        counting during `running` never counts the previous episode's frames."""
        if self._phase != "running":
            return
        self._acked = min(self._acked + 1, self._published)  # late answers after a timeout add no slack
        self._progress_at = time.monotonic()
        self._pump()

    def _pump(self) -> None:
        episode = self._episode
        assert episode is not None  # pumped only while running
        while not episode.done and self._published - self._acked < self.params.max_in_flight:
            self._publish_frame()
        if episode.done and self._acked >= self._published:
            self._end_episode()

    def _start_episode(self, index: int) -> None:
        from safety_monitor.sim.runner import Episode

        task, fault = self.schedule[index]
        seed = self.params.seed + index
        self._episode = Episode(task, fault, seed)
        self._index = index
        # the rebuilt world's time: one control period after the last frame (see the module docstring)
        self._offset = self._last_t + 1.0 / CONTROL_RATE_HZ if index else FIRST_EPISODE_AT_S
        self._published = self._acked = 0
        self._pose_sent = {}
        self._marker_pub.publish(
            marker_msg(
                self._types,
                EpisodeMarker(START, index, self._offset, task=task, fault=fault or "", seed=seed),
                self.hardware_id,
            )
        )
        self.get_logger().info(f"episode {index}: task {task}, fault {fault or 'none'}, seed {seed}")
        self._phase, self._phase_since = "gap", time.monotonic()

    def _end_episode(self) -> None:
        episode, index = self._episode, self._index
        assert episode is not None  # only a started episode ends
        task, fault = self.schedule[index]
        self._marker_pub.publish(
            marker_msg(
                self._types,
                EpisodeMarker(
                    END,
                    index,
                    self._last_t,
                    task=task,
                    fault=fault or "",
                    seed=episode.seed,
                    frames=self._published,
                    succeeded=bool(episode.succeeded()),
                ),
                self.hardware_id,
            )
        )
        if index + 1 < len(self.schedule):
            self._start_episode(index + 1)
            return
        self._phase = "done"
        self._episode = None
        n = len(self.schedule)
        self.get_logger().info(f"all {n} episodes published" if n > 1 else "the episode is published")
        if self.params.shutdown_when_done:
            self._timer.cancel()
            # leave a moment for the last marker to leave (it is transient local for late readers)
            self.create_timer(0.5, lambda: request_shutdown(self), clock=Clock(clock_type=ClockType.STEADY_TIME))

    # ---------------------------------------------------------------------------------- publishing
    def _publish_frame(self) -> None:
        episode = self._episode
        assert episode is not None  # frames are published while running
        state = episode.step()
        t = state.t + self._offset
        self._publish_state(state, t)
        self._published += 1
        self._last_t = t

    def _publish_state(self, state: RobotState, t: float) -> None:
        T = self._types
        self._clock_pub.publish(m.clock_msg(T, t))
        if self._wrench_pub is not None and state.wrench is not None:
            self._wrench_pub.publish(m.wrench_msg(T, t, state.wrench))
        for name, pose in state.object_poses.items():
            sampled = t - state.object_ages.get(name, 0.0)  # motion-capture sample time
            if sampled > self._pose_sent.get(name, float("-inf")) + _SAME_SAMPLE_S:
                self._pose_sent[name] = sampled
                self._pose_pubs[name].publish(m.pose_msg(T, sampled, pose))
        self._joints_pub.publish(
            m.joint_state_msg(T, t, state.joint_names, state.joint_position, state.joint_velocity, state.joint_effort)
        )


def main(args: list[str] | None = None) -> int:
    return run_node("sim_node", SimNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
