"""Live nodes and replay take the same recorded input streams to the same verdicts (issue 13).

Each case writes one input fault as a small bag (`BagWriter`), plays it into the real nodes, each its own
process started as `ros2 run` starts it (robot-state faults: estimator_node + monitor_node; predicate-stream
faults: monitor_node alone), and scores the same bag with replay under the same settings file. The monitor
node's JSON Lines event log and replay's events must be identical (property, kind, frame index, time and
every other field), and so must the number of frames stepped and, derived from the events, the blind spans.

Deterministic on any machine: `bag_player` (a process of its own, which starts and stops the nodes) keeps
the bag's order across topics, paces in lockstep with the nodes (answers and quiet periods counted in
messages) and publishes `/clock` with the log times, the nodes running with `use_sim_time`, so the
recording's time is their clock. The watchdog limits are 20 s (no predicates) and 10 s (a frozen stamp)
of recorded time and the faults that need them last 15-30 s of recording, so a watchdog still on the wall
clock would need a 10 s stall to fire (a quiet period takes a fraction of a second): no case passes or fails
by the machine's speed, and no limit sits on a frame's time (see WRENCH_LATENCY, BACK_S, SPARSE).

Each case also checks that its fault is seen (the frames it should step, the blind frame a watchdog steps
at the last frame's time), so the two drivers cannot agree by both missing it.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("rclpy")  # the nodes and the player need ROS 2

import bag_player

from safety_monitor.enums import LogRecordKind
from safety_monitor.frames import PredicateSample, Wrench
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagWriter
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.settings import load_settings

SPECS = """
predicates: [excess_wrench, object_grasped, object_sync, object_grasped_raw]
properties:
  - name: no_excess_wrench
    category: collision_contact
    formula: "G(!excess_wrench)"
    recovery: "F(!excess_wrench)"
  - name: grasp_synced_until_release
    category: grasp_stability
    formula: "G(object_grasped -> ((object_sync U !object_grasped_raw) | G object_sync))"
    recovery: "G((object_grasped & !object_sync) -> F(object_sync))"
"""
PROPERTIES = ("no_excess_wrench", "grasp_synced_until_release")
PREDICATES = ("excess_wrench", "object_grasped", "object_sync", "object_grasped_raw")
TIMEOUT_S, FROZEN_S = 20.0, 10.0  # predicates_timeout_s, predicates_frozen_s: recorded seconds
PARAMS = f"""
/**:
  ros__parameters:
    specs: "{{specs}}"
    control_rate_hz: 500.0
    predicates_timeout_s: {TIMEOUT_S}
    predicates_frozen_s: {FROZEN_S}
    joint_states_frozen_s: 0.191 # a frozen joint stream within a short bag (off the frame grid)
    diagnostics_period_s: 0.1    # the nodes' diagnostics pace the player's quiet periods
"""
RATE = 500.0
T0 = 100.0
GAP_S = 30.0  # pauses and early ends: longer than both watchdog limits
SPARSE = (0.37, 10.37, 20.37, 29.37)  # seconds into a gap at which slower streams still send (off any limit)
WRENCH_LATENCY = 0.0007  # the wrench is stamped this much before the frame: its age never sits on a limit
BACK_S = 0.2007  # time going back, off the frame grid (a stamp never lands exactly on an earlier frame's)
OWN_RECORDS = {k.value for k in LogRecordKind}
LIVE_ONLY = ("rollout", "robot", "wall_time", "pid")  # the monitor node's bookkeeping in its log


def t_of(k: int) -> float:
    return T0 + k / RATE


# ----------------------------------------------------------------------------------- the streams
@dataclass(frozen=True)
class Scene:
    """A stationary workcell (the simulator's first frame): what every robot-state bag sends."""

    joint_names: tuple[str, ...]
    position: np.ndarray
    wrench: Wrench
    poses: dict[str, Any]


@pytest.fixture(scope="module")
def scene() -> Scene:
    from safety_monitor.sim.runner import run_episode

    s = next(run_episode("pick_and_place_cube"))
    return Scene(tuple(s.joint_names), s.joint_position.copy(), s.wrench, dict(s.object_poses))


class RobotBag:
    """Frame k of a robot-state bag: wrench and poses, then the joint message that completes the frame, all
    logged at t_of(k). The joints move by 1e-7 rad and the wrench by 1e-4 N from frame to frame (a real
    driver and sensor are never bit-identical, which the frozen-stream rules would take for stuck); the
    force exceeds the wrench limit on frames 40-59, so a violation opens and recovers."""

    def __init__(self, w: BagWriter, scene: Scene) -> None:
        self.w, self.scene = w, scene

    def joints(
        self,
        k: int,
        stamp: float | None = None,
        log_t: float | None = None,
        *,
        at: int | None = None,
        position: np.ndarray | None = None,
        velocity: np.ndarray | None = None,
    ) -> None:
        """The joint message of frame k (`at`: the joint values of frame `at`, e.g. a frozen driver's)."""
        values = self.scene.position.copy()
        values[0] += 1e-7 * ((k if at is None else at) % 2)
        n = len(values)
        self.w.write_joint_state(
            "/joint_states",
            t_of(k) if stamp is None else stamp,
            self.scene.joint_names,
            values if position is None else position,
            np.zeros(n) if velocity is None else velocity,
            np.zeros(n),
            log_t=t_of(k) if log_t is None else log_t,
        )

    def wrench(self, k: int, stamp: float | None = None, log_t: float | None = None, force: Any = None) -> None:
        f = self.scene.wrench.force.copy()
        f[2] += -60.0 if 40 <= k < 60 else 1e-4 * (k % 3)
        self.w.write_wrench(
            "/wrist_wrench",
            (t_of(k) if stamp is None else stamp) - WRENCH_LATENCY,
            Wrench(f if force is None else np.asarray(force, float), self.scene.wrench.torque),
            log_t=t_of(k) if log_t is None else log_t,
        )

    def poses(self, k: int, stamp: float | None = None, log_t: float | None = None) -> None:
        for name, pose in self.scene.poses.items():
            self.w.write_pose(
                f"/objects/{name}/pose",
                t_of(k) if stamp is None else stamp,
                pose,
                log_t=t_of(k) if log_t is None else log_t,
            )

    def frame(self, k: int, shift: float = 0.0, stamp_shift: float | None = None) -> None:
        """Frame k, its log time `shift` s late and its stamps `stamp_shift` s (default: `shift`)."""
        s = shift if stamp_shift is None else stamp_shift
        self.wrench(k, t_of(k) + s, t_of(k) + shift)
        self.poses(k, t_of(k) + s, t_of(k) + shift)
        self.joints(k, t_of(k) + s, t_of(k) + shift)

    def slow_streams_through_gap(self, k: int) -> None:
        """The wrench and poses keep sending, slowly, through a gap after frame k."""
        for dt in SPARSE:
            self.wrench(k, t_of(k) + dt, t_of(k) + dt)
            self.poses(k, t_of(k) + dt, t_of(k) + dt)


def robot_nan(b: RobotBag) -> None:
    """NaN joint positions (two messages dropped), NaN velocities (unknown that frame), a NaN wrench."""
    nan_position = b.scene.position.copy()
    nan_position[2] = np.nan
    for k in range(200):
        b.wrench(k, force=[np.nan, 0.0, 0.0] if k == 110 else None)
        b.poses(k)
        if k in (70, 71):
            b.joints(k, position=nan_position)
        elif k == 90:
            b.joints(k, velocity=np.full(len(b.scene.position), np.nan))
        else:
            b.joints(k)


def robot_time_back(b: RobotBag) -> None:
    """The robot's clock steps back 0.2 s at frame 150 and runs on: every stream's stamps are behind the
    last frame for 100 messages, then pass it (that frame is stale: the span before it was not seen)."""
    for k in range(300):
        b.frame(k, stamp_shift=-BACK_S if k >= 150 else 0.0)


def robot_restarted_publisher(b: RobotBag) -> None:
    """The joint driver restarts at frame 150: its stamps start again from the recording's start, behind
    every frame made, so no message after the restart makes one."""
    for k in range(250):
        b.wrench(k)
        b.poses(k)
        b.joints(k, stamp=t_of(k - 150) if k >= 150 else None)


def robot_frozen_joints(b: RobotBag) -> None:
    """The joint driver repeats frame 60's values (stamps advancing) until frame 220: stale once that lasts
    joint_states_frozen_s."""
    for k in range(300):
        b.wrench(k)
        b.poses(k)
        b.joints(k, at=60 if 60 <= k < 220 else None)


def robot_joints_pause(b: RobotBag) -> None:
    """/joint_states pauses for 30 s after frame 99 while the wrench and poses go on slowly."""
    for k in range(100):
        b.frame(k)
    b.slow_streams_through_gap(99)
    for k in range(100, 200):
        b.frame(k, GAP_S)


def robot_joints_end_early(b: RobotBag) -> None:
    """/joint_states ends after frame 149; the wrench and poses go on slowly for 30 s."""
    for k in range(150):
        b.frame(k)
    b.slow_streams_through_gap(149)


def robot_dropped_messages(b: RobotBag) -> None:
    """The recording lost joint messages: three (6 ms, within the gap limit) and forty (80 ms, a break)."""
    for k in range(250):
        b.wrench(k)
        b.poses(k)
        if k not in (50, 51, 52) and not 100 <= k < 140:
            b.joints(k)


def robot_wrench_ends_early(b: RobotBag) -> None:
    """The wrench stream ends after frame 99; joints and poses go on: the wrench goes stale after 0.1 s."""
    for k in range(250):
        if k < 100:
            b.wrench(k)
        b.poses(k)
        b.joints(k)


def predicate_values(k: int) -> dict[str, bool]:
    """Values that open and close episodes of both properties."""
    grasped = 60 <= k < 90
    return {
        "excess_wrench": 30 <= k < 40 or 130 <= k < 140,
        "object_grasped": grasped,
        "object_sync": not 70 <= k < 75,
        "object_grasped_raw": grasped,
    }


class PredicateBag:
    """Recorded `/safety_monitor/predicates`, as an estimator publishes them."""

    def __init__(self, w: BagWriter) -> None:
        self.w = w

    def frame(
        self,
        k: int,
        stamp: float | None = None,
        log_t: float | None = None,
        *,
        index: int | None = None,
        values: dict[str, bool] | None = None,
        unknown: frozenset[str] = frozenset(),
        stale: frozenset[str] = frozenset(),
    ) -> None:
        sample = PredicateSample(
            predicate_values(k) if values is None else values,
            t_of(k) if stamp is None else stamp,
            k if index is None else index,
            unknown,
            stale,
        )
        self.w.write_predicates("/safety_monitor/predicates", sample, log_t=t_of(k) if log_t is None else log_t)


def predicates_pause(b: PredicateBag) -> None:
    """No predicates for 30 s after frame 99."""
    for k in range(200):
        shift = GAP_S if k >= 100 else 0.0
        b.frame(k, t_of(k) + shift, t_of(k) + shift)


def predicates_frozen_stamp(b: PredicateBag) -> None:
    """After frame 99 the stamp freezes for 15 s (longer than predicates_frozen_s, shorter than the timeout)
    while messages keep coming every 0.3 s (counted from the last frame or the first repeat, none lands on
    the limit); then it advances again."""
    for k in range(100):
        b.frame(k)
    for j in range(50):
        b.frame(99, t_of(99), t_of(99) + 0.13 + j * 0.3, index=100 + j)
    for k in range(100, 200):
        b.frame(k, t_of(k) + 15.0, t_of(k) + 15.0, index=k + 50)


def predicates_end_early(b: PredicateBag) -> None:
    """The predicates end after frame 199; the recording goes on for 30 s (another topic)."""
    for k in range(200):
        b.frame(k)
    b.w.write_joint_state("/joint_states", t_of(199) + GAP_S, ["arm_joint1"], [0.0], log_t=t_of(199) + GAP_S)


def predicates_time_back(b: PredicateBag) -> None:
    """The stamps step back 0.2 s at frame 100 and run on (logged in order): dropped until they pass."""
    for k in range(250):
        b.frame(k, t_of(k) - (BACK_S if k >= 100 else 0.0))


def predicates_unknown(b: PredicateBag) -> None:
    """A predicate the estimator cannot decide every 17th frame, one it does not send for ten frames."""
    for k in range(200):
        values = predicate_values(k)
        if 120 <= k < 130:
            del values["object_grasped"]
        b.frame(
            k,
            values=values,
            unknown=frozenset({"object_sync"}) if k % 17 == 0 else frozenset(),
            stale=frozenset({"wrench"}) if 150 <= k < 160 else frozenset(),
        )


def predicates_lost_frames(b: PredicateBag) -> None:
    """The recording lost estimator frames: 3 before frame 80 and 1 before frame 150 (numbers and stamps skip)."""
    for k in range(200):
        index = k + (3 if k >= 80 else 0) + (1 if k >= 150 else 0)
        b.frame(k, t_of(index), index=index)


def predicates_undecodable(b: PredicateBag) -> None:
    """One message whose predicate value is neither true nor false: dropped, the stream goes on."""
    for k in range(150):
        if k != 60:
            b.frame(k)
            continue
        msg = m.predicates_msg(b.w.types, PredicateSample(predicate_values(k), t_of(k), k), "estimator")
        msg.status[0].values[0].value = "maybe"
        b.w.write("/safety_monitor/predicates", msg, t_of(k))


# ------------------------------------------------------------------------------------- the cases
@dataclass(frozen=True)
class Case:
    """One input fault. `frames`: the frames the monitor must step; `blind_at`: times at which a watchdog
    (or time going back) steps a blind frame, every property blind at the last stepped frame's time."""

    write: Callable[[Any], None]
    robot: bool  # robot-state streams through the estimator, else predicates straight into the monitor
    frames: int
    blind_at: tuple[float, ...] = ()


CASES = {
    "robot-nan-joints-and-wrench": Case(robot_nan, True, 198),
    "robot-time-going-back": Case(robot_time_back, True, 200),
    "robot-restarted-publisher": Case(robot_restarted_publisher, True, 150),
    "robot-frozen-joint-stream": Case(robot_frozen_joints, True, 300),
    "robot-dropped-joint-messages": Case(robot_dropped_messages, True, 207),
    "robot-wrench-ends-early": Case(robot_wrench_ends_early, True, 250),
    "robot-joint-stream-pause": Case(robot_joints_pause, True, 201, (t_of(99),)),
    "robot-joint-stream-ends-early": Case(robot_joints_end_early, True, 151, (t_of(149),)),
    "predicates-time-going-back": Case(predicates_time_back, False, 151, (t_of(99),)),
    "predicates-unknown": Case(predicates_unknown, False, 200),
    "predicates-lost-frames": Case(predicates_lost_frames, False, 200),
    "predicates-undecodable-value": Case(predicates_undecodable, False, 149),
    "predicates-pause": Case(predicates_pause, False, 201, (t_of(99),)),
    "predicates-frozen-stamp": Case(predicates_frozen_stamp, False, 201, (t_of(99),)),
    "predicates-end-early": Case(predicates_end_early, False, 201, (t_of(199),)),
}


# --------------------------------------------------------------------------------- the outcomes
@dataclass(frozen=True)
class Outcome:
    """What a driver made of the bag: frames stepped and every event, as JSON fields."""

    frames: int
    events: tuple[dict[str, Any], ...]

    def keyed(self) -> list[str]:
        return [f"{e['property']} {e['kind']} frame={e['frame']} t={e['t']!r}" for e in self.events]

    def blind_spans(self) -> dict[str, list[tuple[int, int | None]]]:
        """Per property, (blind frame, seeing frame or None when the trace ended blind)."""
        spans: dict[str, list[tuple[int, int | None]]] = {}
        for e in self.events:
            if e["kind"] == "blind":
                spans.setdefault(e["property"], []).append((e["frame"], None))
            elif e["kind"] == "seeing":
                start, _ = spans[e["property"]][-1]
                spans[e["property"]][-1] = (start, e["frame"])
        return spans


def write_bag(path: Path, case: Case, scene: Scene) -> Path:
    with BagWriter(path) as w:
        case.write(RobotBag(w, scene) if case.robot else PredicateBag(w))
    return path


def run_replay(bag: Path, params: Path, case: Case, specs: Path) -> Outcome:
    config = ReplayConfig(specs=str(specs), rate_hz=RATE, from_predicates=not case.robot)
    r = score_bag(bag, config.with_settings(load_settings(params)))
    assert r.ok, r.error
    return Outcome(r.trace.frames, tuple(m.event_fields(e) for e in r.trace.events))


def run_live(bag: Path, params: Path, case: Case, folder: Path) -> Outcome:
    frames, log = bag_player.play(bag, folder, params, estimator=case.robot)
    events = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] in OWN_RECORDS:  # the log's records about itself and the run: never events
            continue
        for key in LIVE_ONLY:
            record.pop(key, None)
        events.append(record)
    return Outcome(frames, tuple(events))


def differences(live: Outcome, replayed: Outcome) -> str:
    lines = [f"frames stepped: live {live.frames}, replay {replayed.frames}"]
    lines += difflib.unified_diff(replayed.keyed(), live.keyed(), "replay", "live", lineterm="", n=1)
    if live.keyed() == replayed.keyed():
        lines += [
            f"event fields differ at {i}: replay {r}, live {v}"
            for i, (r, v) in enumerate(zip(replayed.events, live.events))
            if r != v
        ][:3]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def specs(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("specs") / "specs.yaml"
    path.write_text(SPECS)
    return path


@pytest.mark.parametrize("name", list(CASES))
def test_live_nodes_and_replay_give_the_same_events_frames_and_blind_spans(name, tmp_path, scene, specs):
    case = CASES[name]
    params = tmp_path / "nodes.yaml"
    params.write_text(PARAMS.format(specs=specs))
    bag = write_bag(tmp_path / name, case, scene)
    replayed = run_replay(bag, params, case, specs)  # first: the nodes start with the specs compiled
    live = run_live(bag, params, case, tmp_path)

    assert (live.frames, live.events) == (replayed.frames, replayed.events), differences(live, replayed)
    assert live.blind_spans() == replayed.blind_spans()
    # the fault is seen (the drivers could agree by both missing it): the frames it leaves, and the blind
    # frame a watchdog (or time going back) steps at the last stepped frame's time
    assert replayed.frames == case.frames, f"the fault leaves {case.frames} frames; both drivers stepped {live.frames}"
    for t in case.blind_at:
        blind = {e["property"] for e in replayed.events if e["kind"] == "blind" and e["t"] == pytest.approx(t)}
        assert blind == set(PROPERTIES), f"both miss the blind frame at t={t:.3f} s of {set(PROPERTIES) - blind}"
