"""Live capacity: CPU of one robot's `monitor_stack` at 500 Hz against a bare rclpy subscriber.

The issue's target: the one-process stack (estimator + monitor, `safety_monitor.nodes.monitor_stack`)
costs at most 1.5 times a bare rclpy process subscribed to the same topics with empty callbacks.
This process plays the workcell's input streams (`joint_states`, `wrist_wrench`, `objects/<name>/pose`
from a bag of scripted MuJoCo episodes, `replay.simbag`, restamped past zero and serialised once before
the run) at `--rate` Hz into one subject process at a time, on a random ROS domain:

- `bare`: an rclpy node with the stack's subscriptions (the input topics raw, with its input QoS, and the
  episode marker topic), empty callbacks, spun as the stack is (`runtime.run_nodes`: the same executor,
  signals and start-up garbage freeze);
- `stack`: `python -m safety_monitor.nodes.monitor_stack` with `config/nodes.yaml`;
- `baseline` (with `--baseline DIR`): the same command with DIR (another checkout's root, e.g. made by
  `git archive main | tar -x -C DIR`) first on PYTHONPATH, for before/after figures in one run.

Each subject gets the same bytes: its publishers wait for matched subscriptions, `--warmup` frames go
out unmeasured, then the process's user+system CPU (/proc/<pid>/stat) is read over `--frames` frames,
until it stops rising once the stream ends (the queue drained), and divided by the frames it took: the
estimator's own count on /diagnostics says how many a stack lost when other jobs held it off longer than
its input queue lasts (reported as `frames_dropped`; the bare subscriber is taken to lose none; a run
that lost more than a tenth is left out as starved). Subjects
run back to back, alternating, `--repeats` times; the load average is recorded per measurement. `--split` adds one more stack run with
stage timers put in from outside (thread CPU time around the decoders, the Estimator's own assemble and
ground timings, the Supervisor, the event and diagnostics sinks and every callback; the process CPU
outside the callbacks is rclpy's executor and the middleware's threads), and one of the baseline's code with
the same timers (`split_baseline`).

    .venv/bin/python benchmarks/bench_capacity.py [--keep DIR | --bag DIR] [--frames 5000] [--warmup 1000]
        [--repeats 5] [--rate 500] [--baseline DIR] [--split] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

RUNS = ("pick_and_place_mug", "place_in_cabinet", "open_drawer", "dump_into_bin")
STAMP_OFFSET_NS = 1000 * 1_000_000_000  # stamps past zero (a zero stamp means "use the arrival time")
NAMESPACE = "/capacity"
BARE, STACK, BASELINE = "bare", "stack", "baseline"
STARVED_SHARE = 0.1
JOINT_CALLBACK = "callback.EstimatorNode._on_joint_states"
IDLE_POLL_S, IDLE_CPU_S = 0.25, 0.004  # the queue is drained once CPU rises less than this per poll


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Measurement:
    subject: str
    repeat: int
    frames: int
    messages: int
    cpu_s: float
    wall_s: float
    load_average: float  # 1-minute load average just before the measured window
    frames_dropped: int | None  # whole run: sent minus grounded (its input queue overflowed: CPU not spent)

    @property
    def taken(self) -> float:
        """The share of the window's frames the subject took: a stack whose input queue overflowed
        (the machine's other jobs held it off for longer than its 200 frames) spent nothing on the
        frames it lost. Counted over the whole run, so a drop during warm-up overstates its cost."""
        return 1.0 if self.frames_dropped is None else max(1, self.frames - self.frames_dropped) / self.frames

    @property
    def starved(self) -> bool:
        """Lost more than STARVED_SHARE of its frames: held off so long that its stamps fell behind the
        other streams' (a restarted input, its frame count from 0 again), no figure of its work."""
        return self.frames_dropped is not None and self.frames_dropped > STARVED_SHARE * self.frames

    @property
    def us_per_frame(self) -> float:
        """CPU per frame taken."""
        return 1e6 * self.cpu_s / (self.frames * self.taken)

    @property
    def us_per_message(self) -> float:
        return 1e6 * self.cpu_s / (self.messages * self.taken)


@dataclass(frozen=True)
class Window:
    cpu_s: float
    wall_s: float
    load_average: float
    frames_dropped: int | None  # frames sent minus those the estimator grounded (None: no estimator)


# ------------------------------------------------------------------------------------------ the stream
def input_bag(keep: Path | None, bag: Path | None) -> Path:
    """The recorded episodes (recorded once into `keep` when it holds none yet)."""
    if bag is not None:
        return bag
    from safety_monitor.replay.simbag import SimRun, record_sim_bag

    folder = keep or Path(tempfile.mkdtemp(prefix="bench_capacity_"))
    path = folder / "capacity_bag"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        print(f"recording {len(RUNS)} episodes into {path}", file=sys.stderr, flush=True)
        record_sim_bag(path, [SimRun(task) for task in RUNS])
    return path


def stream(bag: Path) -> tuple[list[tuple[str, str, bytes]], dict[str, str]]:
    """The input messages in log order as (topic, type, bytes), restamped by STAMP_OFFSET_NS, and the
    input topics with their types."""
    from rclpy.serialization import deserialize_message, serialize_message

    from safety_monitor.io import messages as m
    from safety_monitor.io.bag import BagReader

    T = m.rclpy_types()
    classes = {
        "sensor_msgs/msg/JointState": T.JointState,
        "geometry_msgs/msg/WrenchStamped": T.WrenchStamped,
        "geometry_msgs/msg/PoseStamped": T.PoseStamped,
    }
    out: list[tuple[str, str, bytes]] = []
    with BagReader(bag) as reader:
        topics = {name: s.msgtype for name, s in reader.topics.items() if s.msgtype in classes}
        for topic, msgtype, _t, raw in reader.raw_messages(topics):
            msg = deserialize_message(raw, classes[msgtype])
            ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec + STAMP_OFFSET_NS
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
            out.append((topic.lstrip("/"), msgtype, serialize_message(msg)))
    return out, topics


def frames_of(messages: list[tuple[str, str, bytes]]) -> list[list[tuple[str, bytes]]]:
    """The stream cut after each /joint_states: one list per frame, the joint message last."""
    frames, current = [], []
    for topic, _type, raw in messages:
        current.append((topic, raw))
        if topic == "joint_states":
            frames.append(current)
            current = []
    return frames


# ----------------------------------------------------------------------------------------- subjects
def subject_command(subject: str, workdir: Path, rate: float, topics: dict[str, str], run: str) -> list[str]:
    from safety_monitor.nodes.run_inprocess import nodes_yaml

    ros = ["--ros-args", "-r", f"__ns:={NAMESPACE}", "--params-file", str(nodes_yaml())]
    ros += ["-p", f"control_rate_hz:={rate}", "-p", f"events_log:={workdir / f'events_{run}.jsonl'}"]
    if subject == BARE:
        return [sys.executable, __file__, "--serve-bare", json.dumps(topics), *ros]
    return [sys.executable, "-m", "safety_monitor.nodes.monitor_stack", *ros]


def serve_bare(topics: dict[str, str], argv: list[str]) -> int:
    """The bare subscriber: the stack's input subscriptions with empty callbacks, spun as the stack is."""
    from rclpy.node import Node

    from safety_monitor.io import messages as m
    from safety_monitor.nodes import qos
    from safety_monitor.nodes.runtime import run_nodes

    types = {
        "sensor_msgs/msg/JointState": "JointState",
        "geometry_msgs/msg/WrenchStamped": "WrenchStamped",
        "geometry_msgs/msg/PoseStamped": "PoseStamped",
    }

    def ignore(_msg) -> None:
        pass

    def build(nodes: list) -> None:
        T = m.rclpy_types()
        node = Node("bare_subscriber")
        nodes.append(node)
        node.create_subscription(T.DiagnosticArray, "safety_monitor/episode", ignore, qos.EPISODE)
        inputs = qos.input_qos(False)
        for topic, msgtype in sorted(topics.items(), key=lambda kv: kv[0] == "joint_states"):
            node.create_subscription(getattr(T, types[msgtype]), topic.lstrip("/"), ignore, inputs, raw=True)

    return run_nodes("bare_subscriber", build, ["bare_subscriber", *argv], about=__doc__)


def serve_probe(out: Path, argv: list[str]) -> int:
    """monitor_stack with thread-CPU timers around its stages (installed from here, so the nodes carry
    no profiling code); the totals go to `out` as JSON when it stops."""
    import functools

    from safety_monitor.nodes import estimator_node, monitor_node, monitor_stack
    from safety_monitor.pipeline import supervisor

    clock = time.thread_time
    totals: dict[str, float] = {}
    calls: dict[str, int] = {}
    stages: list = []

    def timed(name: str, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[name] = totals.get(name, 0.0) + clock() - start
                calls[name] = calls.get(name, 0) + 1

        return wrapper

    make_decoder = estimator_node.rclpy_decoder
    estimator_node.rclpy_decoder = lambda kind, t: timed("decode", make_decoder(kind, t))
    Stage = estimator_node.Estimator

    def stage(*args, **kwargs):
        made = Stage(*args, clock=clock, **kwargs)
        stages.append(made)
        return made

    estimator_node.Estimator = stage
    E, M = estimator_node.EstimatorNode, monitor_node.MonitorNode
    patches = [
        (supervisor.Supervisor, "sample", "monitor.supervisor"),
        (M, "_emit", "monitor.events_out"),
        (M, "_publish_diagnostics", "diagnostics_out"),
        (E, "_publish_diagnostics", "diagnostics_out"),
        (M, "on_sample", "monitor.on_sample"),
    ]
    callbacks = [
        (E, "_on_joint_states"),
        (E, "_on_wrench"),
        (E, "_on_pose"),
        (E, "_on_marker"),
        (E, "_watchdog"),
        (E, "_on_period"),
        (M, "_on_marker"),
        (M, "_watchdog"),
        (M, "_on_period"),
        (M, "_heartbeat"),
    ]
    patches += [(cls, name, f"callback.{cls.__name__}.{name}") for cls, name in callbacks]
    for cls, name, label in patches:
        setattr(cls, name, timed(label, getattr(cls, name)))

    def reset(_signum, _frame) -> None:  # the measured window starts: forget the warm-up's figures
        totals.clear()
        calls.clear()
        for made in stages:
            made.timings = dict.fromkeys(made.timings, 0.0)

    signal.signal(signal.SIGUSR1, reset)
    code = monitor_stack.main(["monitor_stack", *argv])
    for made in stages:
        for key, value in made.timings.items():
            totals[f"estimator.{key}"] = totals.get(f"estimator.{key}", 0.0) + value
    out.write_text(json.dumps({"totals": totals, "calls": calls}))
    return code


# -------------------------------------------------------------------------------------------- driving
class Driver:
    """Publishers of the input topics on one ROS domain, the stream played into one subject at a time."""

    def __init__(self, domain: int, topics: dict[str, str]) -> None:
        import rclpy
        import rclpy.executors

        from safety_monitor.io import messages as m
        from safety_monitor.nodes import qos

        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node("bench_capacity_driver", context=self.context, namespace=NAMESPACE)
        T = m.rclpy_types()
        by_type = {
            "sensor_msgs/msg/JointState": T.JointState,
            "geometry_msgs/msg/WrenchStamped": T.WrenchStamped,
            "geometry_msgs/msg/PoseStamped": T.PoseStamped,
        }
        inputs = qos.input_qos()
        self.pubs = {
            t.lstrip("/"): self.node.create_publisher(by_type[ty], t.lstrip("/"), inputs) for t, ty in topics.items()
        }
        self.grounded: int | None = None  # the estimator's own frame count, from its /diagnostics
        self.node.create_subscription(T.DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            if status.name.endswith(": estimator inputs"):
                for v in status.values:
                    if v.key == "frames":
                        self.grounded = max(self.grounded or 0, int(v.value))

    def grounded_frames(self, listen_s: float = 2.5) -> int | None:
        """The estimator's `frames` on /diagnostics (every second), heard once the stream is over."""
        self.grounded = None
        deadline = time.monotonic() + listen_s
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.1)
        return self.grounded

    def wait_matched(self, proc: subprocess.Popen, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while not all(p.get_subscription_count() for p in self.pubs.values()):
            if proc.poll() is not None:
                raise SystemExit(f"the subject exited with {proc.returncode} before subscribing")
            if time.monotonic() > deadline:
                raise SystemExit(f"the subject did not subscribe within {timeout} s")
            time.sleep(0.1)
        time.sleep(0.5)  # the subject's start-up (discovery, its first diagnostics) out of the window

    def play(self, frames: list[list[tuple[str, bytes]]], rate: float, on_frame=None) -> None:
        """Publish frame after frame on a fixed schedule; `on_frame(i)` before frame i goes out."""
        pubs, period_ns = self.pubs, round(1e9 / rate)
        start = time.monotonic_ns()
        for i, frame in enumerate(frames):
            if on_frame is not None:
                on_frame(i)
            for topic, raw in frame:
                pubs[topic].publish(raw)
            delay = start + (i + 1) * period_ns - time.monotonic_ns()
            if delay > 0:
                time.sleep(delay / 1e9)

    def close(self) -> None:
        self.node.destroy_node()
        self.context.try_shutdown()


def stop(proc: subprocess.Popen, timeout: float = 20.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_idle(pid: int) -> None:
    """Until the process's CPU stops rising (its input queue is drained), at most 20 s."""
    last = cpu_seconds(pid)
    for _ in range(80):
        time.sleep(IDLE_POLL_S)
        now = cpu_seconds(pid)
        if now - last < IDLE_CPU_S:
            return
        last = now


def measure(
    driver: Driver,
    command: list[str],
    env: dict[str, str],
    log: Path,
    frames: list[list[tuple[str, bytes]]],
    warmup: int,
    rate: float,
    signal_window: bool = False,
) -> tuple[Window, subprocess.Popen]:
    """One subject's CPU over frames[warmup:], and its process, still running. It runs in the run's own folder:
    `python -m` puts its working folder first on sys.path, and from a checkout's root that checkout's package
    would shadow the baseline's PYTHONPATH (every baseline figure before session 19 run from the root was
    main's code)."""
    proc = subprocess.Popen(command, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd=log.parent)
    try:
        driver.wait_matched(proc)
        marks: dict[str, float] = {}

        def at(i: int) -> None:
            if i == warmup:
                if signal_window:  # the probe resets its timers
                    proc.send_signal(signal.SIGUSR1)
                marks["load"] = os.getloadavg()[0]
                marks["cpu"], marks["wall"] = cpu_seconds(proc.pid), time.monotonic()

        driver.play(frames, rate, at)
        wait_idle(proc.pid)
        cpu, wall = cpu_seconds(proc.pid) - marks["cpu"], time.monotonic() - marks["wall"]
        if proc.poll() is not None:
            raise SystemExit(f"the subject exited with {proc.returncode} during the run; see {log}")
        grounded = driver.grounded_frames()
    except BaseException:
        stop(proc)
        raise
    return Window(cpu, wall, marks["load"], len(frames) - grounded if grounded is not None else None), proc


def split_shares(probe: dict, cpu_s: float, frames: int) -> dict[str, float]:
    """Microseconds per frame of each stage, from the probe's nested thread-CPU totals."""
    t = probe["totals"]
    callbacks = sum(v for k, v in t.items() if k.startswith("callback."))
    supervisor = t.get("monitor.supervisor", 0.0)
    on_sample = t.get("monitor.on_sample", 0.0)
    diagnostics = t.get("diagnostics_out", 0.0)
    events = t.get("monitor.events_out", 0.0)
    parts = {
        "decode": t.get("decode", 0.0),
        "assemble": t.get("estimator.assemble", 0.0),
        "ground": t.get("estimator.ground", 0.0),
        "monitor (Supervisor.sample)": supervisor,
        "events out (log + publish)": events,
        "diagnostics out": diagnostics,
    }
    # events and per-event diagnostics run inside on_sample; the rest of on_sample is the node's rendering
    parts["monitor node glue"] = on_sample - supervisor - events
    parts["estimator node glue (callbacks minus the above)"] = callbacks - sum(parts.values())
    parts["executor, rclpy, middleware threads (process CPU outside callbacks)"] = cpu_s - callbacks
    return {k: round(1e6 * v / frames, 1) for k, v in parts.items()}


def summary(measurements: list[Measurement]) -> dict:
    import statistics

    out: dict = {}
    for subject in (BARE, STACK, BASELINE):
        runs = [x for x in measurements if x.subject == subject and not x.starved]
        if not runs:
            continue
        per_frame = [x.us_per_frame for x in runs]
        out[subject] = {
            "us_per_frame_median": round(statistics.median(per_frame), 1),
            "us_per_frame_min_max": (round(min(per_frame), 1), round(max(per_frame), 1)),
            "us_per_message_median": round(statistics.median(x.us_per_message for x in runs), 1),
            "cores_median": round(statistics.median(x.cpu_s / x.wall_s for x in runs), 3),
            "load_average_min_max": (
                round(min(x.load_average for x in runs), 2),
                round(max(x.load_average for x in runs), 2),
            ),
            "frames_dropped": [x.frames_dropped for x in runs],
            "starved_runs_left_out": sum(x.subject == subject and x.starved for x in measurements),
        }
    for subject in (STACK, BASELINE):
        if subject in out and BARE in out:
            ratios = []
            for r in {x.repeat for x in measurements}:
                bare = [x for x in measurements if x.subject == BARE and x.repeat == r and not x.starved]
                other = [x for x in measurements if x.subject == subject and x.repeat == r and not x.starved]
                if bare and other:
                    ratios.append(other[0].us_per_frame / bare[0].us_per_frame)
            out[subject]["ratio_to_bare_median"] = round(statistics.median(ratios), 2)
            out[subject]["ratio_to_bare_min_max"] = (round(min(ratios), 2), round(max(ratios), 2))
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-bare":
        raise SystemExit(serve_bare(json.loads(sys.argv[2]), sys.argv[3:]))
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-probe":
        raise SystemExit(serve_probe(Path(sys.argv[2]), sys.argv[3:]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="record the episodes' bag here once and reuse it")
    parser.add_argument("--bag", type=Path, help="play this bag's input topics instead")
    parser.add_argument("--frames", type=int, default=5000, help="measured frames per run (default 5000)")
    parser.add_argument("--warmup", type=int, default=1000, help="frames played before measuring (default 1000)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each subject, alternating (default 5)")
    parser.add_argument("--rate", type=float, default=500.0, help="joint_states rate in Hz (default 500)")
    parser.add_argument("--baseline", type=Path, help="also run the stack of this checkout (its root folder)")
    parser.add_argument(
        "--split", action="store_true", help="one more stack run with stage timers (and one of the baseline's)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    bag = input_bag(args.keep, args.bag)
    messages, topics = stream(bag)
    frames = frames_of(messages)
    need = args.warmup + args.frames
    if len(frames) < need:
        raise SystemExit(f"{bag} has {len(frames)} frames; --warmup + --frames needs {need}")
    frames = frames[:need]
    measured_messages = sum(len(f) for f in frames[args.warmup :])
    domain = random.SystemRandom().randint(1, 232)
    workdir = Path(tempfile.mkdtemp(prefix="bench_capacity_run_"))
    env = {
        **os.environ,
        "ROS_DOMAIN_ID": str(domain),
        "ROS_LOG_DIR": str(workdir / "ros_log"),
        "ROS_HOME": str(workdir),
    }
    subjects = [BARE, STACK] + ([BASELINE] if args.baseline else [])
    envs = {s: env for s in subjects}
    if args.baseline:
        root = str(args.baseline.resolve())
        envs[BASELINE] = {**env, "PYTHONPATH": os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    print(
        f"{len(frames)} frames ({args.warmup} warm-up), {measured_messages} messages measured, domain {domain}, "
        f"logs in {workdir}",
        file=sys.stderr,
        flush=True,
    )
    driver = Driver(domain, topics)
    measurements: list[Measurement] = []
    splits: dict[str, dict] = {}  # subject -> its probe run's stage figures
    try:
        for repeat in range(args.repeats):
            order = subjects if repeat % 2 == 0 else subjects[::-1]
            for subject in order:
                command = subject_command(subject, workdir, args.rate, topics, f"{subject}_{repeat}")
                log = workdir / f"{subject}_{repeat}.log"
                w, proc = measure(driver, command, envs[subject], log, frames, args.warmup, args.rate)
                stop(proc)
                x = Measurement(
                    subject, repeat, args.frames, measured_messages, w.cpu_s, w.wall_s, w.load_average, w.frames_dropped
                )
                measurements.append(x)
                print(
                    f"{subject:8} repeat {repeat}: {x.us_per_frame:7.1f} us/frame, {x.us_per_message:6.1f} us/message, "
                    f"{x.cpu_s / x.wall_s:.3f} core, load {x.load_average:.2f}, dropped {x.frames_dropped}",
                    file=sys.stderr,
                    flush=True,
                )
        for subject in subjects[1:] if args.split else ():  # the stack, then the baseline's code
            probe_out = workdir / f"probe_{subject}.json"
            command = subject_command(subject, workdir, args.rate, topics, f"probe_{subject}")
            command = [sys.executable, __file__, "--serve-probe", str(probe_out), *command[3:]]
            w, proc = measure(
                driver, command, envs[subject], workdir / f"probe_{subject}.log", frames, args.warmup, args.rate, True
            )
            stop(proc)  # the probe's totals then also hold the stop (the trace's close): small against the window
            probe = json.loads(probe_out.read_text())
            splits[subject] = {
                "load_average": w.load_average,
                "frames_dropped": w.frames_dropped,
                "us_per_frame": split_shares(probe, w.cpu_s, taken := probe["calls"][JOINT_CALLBACK]),
                "cpu_us_per_frame_with_timers": round(1e6 * w.cpu_s / taken, 1),
                "calls": probe["calls"],
            }
    finally:
        driver.close()
    totals = summary(measurements)
    for subject, split in splits.items():
        if subject in totals and BARE in totals:
            # grounding's share of the probe run, applied to the timed runs (the probe's own run may be more
            # or less disturbed than theirs)
            share = split["us_per_frame"]["ground"] / split["cpu_us_per_frame_with_timers"]
            rest = totals[subject]["us_per_frame_median"] * (1 - share)
            split["ground_share"] = round(share, 3)
            split["stack_minus_ground_us_per_frame"] = round(rest, 1)
            split["stack_minus_ground_ratio_to_bare"] = round(rest / totals[BARE]["us_per_frame_median"], 2)
    result = {
        "bag": str(bag),
        "rate_hz": args.rate,
        "frames": args.frames,
        "messages_per_frame": round(measured_messages / args.frames, 2),
        "cpus": os.cpu_count(),
        "summary": totals,
        "split": splits.get(STACK),
        "split_baseline": splits.get(BASELINE),
        "measurements": [asdict(x) | {"us_per_frame_taken": round(x.us_per_frame, 1)} for x in measurements],
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "measurements"}, indent=2))


if __name__ == "__main__":
    main()
