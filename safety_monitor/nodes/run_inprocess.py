"""`safety-monitor sim` live runs: the sim, estimator and monitor nodes in ONE process and executor.

The same nodes `ros2 launch safety_monitor sim.launch.py` starts as separate processes, with the
same parameter file (config/nodes.yaml), talking over the same topics, except that the estimator hands
each frame to the monitor directly, as in `monitor_stack`; so this works where `ros2 launch` is not
installed. Under a namespace every node runs in it and `/clock` is remapped to `<namespace>/clock`, as
`sim.launch.py` does, so two namespaced runs on one ROS domain keep their own time. The sim node runs in
lockstep pace: it publishes the next frame as soon as the estimator's predicates for all but
`max_in_flight` earlier frames came back, so the run goes as fast as the pipeline consumes and loses no
frame. It ends by itself once the monitor has closed the trace of every episode, and returns the
monitor's rollouts for the summary. One executor on one thread spins every node
(`runtime.make_executor`). An event log or a --record bag that refuses writes (a full disk) stops the
run: the nodes close (the log keeps whole lines, the bag what was written) and one SafetyMonitorError
says why.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from safety_monitor.errors import SafetyMonitorError
from safety_monitor.nodes.event_log import LogState
from safety_monitor.nodes.runtime import make_executor, stop_callbacks, stop_on_signals
from safety_monitor.pipeline.supervisor import Rollout

STORAGES = {"mcap": "mcap", "db3": "sqlite3", "sqlite3": "sqlite3"}
# The estimator's and the monitor's watchdogs run on the sim's time (use_sim_time): in one process a frame is
# only late when the process itself was busy (building the next episode, a loaded machine), and sim time
# stands still meanwhile, so load never makes an input stale.
# After Ctrl-C the recorder takes what is still on its way (the last frames' predicates and events) until
# no message has come for DRAIN_QUIET_S, at most DRAIN_LIMIT_S: the bag holds every frame the monitor saw.
DRAIN_QUIET_S, DRAIN_LIMIT_S = 0.3, 5.0


@dataclass(frozen=True)
class LiveRunOptions:
    task: str = ""
    fault: str = ""  # "" cycles fault-free then every fault; "none" is fault-free only
    episodes: int = 3
    seed: int = 0
    events: str = ""  # JSON Lines event log ("" = the monitor node's default)
    record: str = ""  # rosbag2 output ("" = no recording)
    storage: str = "mcap"
    params_file: str = ""  # "" = the package's config/nodes.yaml
    timeout_s: float = 600.0  # wall-clock limit of the whole run
    namespace: str = "/"  # of every node (an absolute ROS namespace; "/" = the root)


@dataclass(frozen=True)
class LiveRun:
    rollouts: list[Rollout]
    wall_s: float
    events_log: Path
    bags: list[Path]
    interrupted: bool


def nodes_yaml() -> Path:
    from safety_monitor.files import config_dir

    return config_dir() / "nodes.yaml"


def run(options: LiveRunOptions) -> LiveRun:
    """Run `options.episodes` episodes through the ROS nodes; SIGINT (Ctrl-C) or SIGTERM stops early with what
    finished (`interrupted`). A stop signal only sets a flag the spin loop checks (`runtime.stop_on_signals`,
    held from before rclpy loads): no callback or MuJoCo step is cut short, and one during start-up stops the
    run once the nodes are built, before the first frame."""
    with stop_on_signals() as stop:
        return _run(options, stop)


def _run(options: LiveRunOptions, stop: threading.Event) -> LiveRun:
    import rclpy
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from safety_monitor.nodes.estimator_node import EstimatorNode
    from safety_monitor.nodes.monitor_node import MonitorNode
    from safety_monitor.nodes.recorder import RecorderNode
    from safety_monitor.nodes.sim_node import SimNode, episode_schedule
    from safety_monitor.sim.workcell import OBJECTS

    if options.episodes < 1:
        raise SafetyMonitorError(f"--episodes must be at least 1, got {options.episodes}")
    episode_schedule(options.task, options.fault, options.episodes)  # bad names fail before ROS starts
    storage = STORAGES.get(options.storage)
    if storage is None:
        raise SafetyMonitorError(f"--storage must be one of {', '.join(STORAGES)}, got {options.storage!r}")
    if options.record and Path(options.record).exists():
        raise SafetyMonitorError(f"--record {options.record}: already exists; choose a new path")
    params_file = Path(options.params_file) if options.params_file else nodes_yaml()
    if not params_file.is_file():
        raise SafetyMonitorError(f"parameter file {params_file} not found")

    context = rclpy.Context()
    rclpy.init(args=[], context=context)  # a private context: rclpy installs no signal handler for it
    # /clock into the namespace (a no-op at the root), as sim.launch.py: one global clock for two sims made
    # each monitor read the other's time
    clock = ["-r", "/clock:=clock"]
    common = {
        "context": context,
        "namespace": options.namespace,
        "cli_args": ["--ros-args", "--params-file", str(params_file), *clock],
    }
    nodes: list[Node] = []
    monitor = recorder = sim = executor = None
    log_failed = record_failed = False
    start = time.monotonic()
    sim_time = Parameter("use_sim_time", value=True)
    try:
        monitor = MonitorNode(
            subscribe_predicates=False,
            **common,
            parameter_overrides=[
                sim_time,
                *([Parameter("events_log", value=options.events)] if options.events else []),
            ],
        )
        nodes.append(monitor)
        estimator = EstimatorNode(on_sample=monitor.on_sample, **common, parameter_overrides=[sim_time])
        monitor.why_no_frames = estimator.why_no_frames
        nodes.append(estimator)
        if options.record:
            recorder = RecorderNode(options.record, OBJECTS, storage, split_rollouts=options.episodes > 1, **common)
            nodes.append(recorder)
        sim = SimNode(
            **common,
            parameter_overrides=[
                Parameter("task", value=options.task),
                Parameter("fault", value=options.fault),
                Parameter("episodes", value=options.episodes),
                Parameter("seed", value=options.seed),
                Parameter("pace", value="lockstep"),
                Parameter("shutdown_when_done", value=False),
            ],
        )
        nodes.append(sim)
        executor = make_executor(context)  # one executor, one thread, every node
        for node in nodes:
            executor.add_node(node)
        while monitor.traces_finished < options.episodes and not stop.is_set():
            if time.monotonic() - start > options.timeout_s:
                raise SafetyMonitorError(
                    f"live run did not finish within {options.timeout_s:.0f} s "
                    f"({monitor.traces_finished} of {options.episodes} episodes)"
                )
            executor.spin_once(timeout_sec=0.1)
            if monitor.event_log.health.state in (LogState.HOLDING, LogState.LOST):
                log_failed = True  # a batch run cannot keep the log asked for: stop, say so below
                break
            if recorder is not None and recorder.write_error:
                record_failed = True  # nor the recording asked for
                break
        interrupted = stop.is_set()
        if interrupted and recorder is not None:
            _drain(executor, sim, recorder)
    finally:
        stop_callbacks(executor)
        for node in reversed(nodes):
            node.destroy_node()
        context.try_shutdown()
    assert monitor is not None  # built before anything could fail without raising
    if log_failed:
        health = monitor.event_log.health
        raise SafetyMonitorError(
            f"cannot write the event log {monitor.log_path}: {health.error}; run stopped"
            + (f", {health.count} record(s) not logged" if health.count else "")
        )
    if record_failed:
        assert recorder is not None
        raise SafetyMonitorError(
            f"cannot write the bag {options.record}: {recorder.write_error}; run stopped, "
            f"{recorder.unrecorded} message(s) not recorded (what was written stays: `ros2 bag reindex` rebuilds "
            "a missing metadata.yaml, `mcap recover` an mcap file without its footer)"
        )
    return LiveRun(
        rollouts=list(monitor.rollouts),
        wall_s=time.monotonic() - start,
        events_log=monitor.log_path,
        bags=list(recorder.bags) if recorder else [],
        interrupted=interrupted,
    )


def _drain(executor, sim, recorder) -> None:
    """Halt the simulator, then spin until the recorder has had nothing new for DRAIN_QUIET_S."""
    sim.halt()
    quiet_since, seen, limit = time.monotonic(), recorder.recorded, time.monotonic() + DRAIN_LIMIT_S
    while time.monotonic() < min(limit, quiet_since + DRAIN_QUIET_S):
        executor.spin_once(timeout_sec=0.05)
        if recorder.recorded != seen:
            quiet_since, seen = time.monotonic(), recorder.recorded
