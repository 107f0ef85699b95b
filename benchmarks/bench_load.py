"""Load: N namespaced robots side by side on one machine, each with its own monitoring stack.

Robot k lives in namespace /robot<k>; its stack runs as monitor.launch.py starts it, either the
estimator and monitor nodes in one process each (`--stack separate`) or together in one process
(`--stack combined`, safety_monitor.nodes.monitor_stack, the default where it exists). This process
drives every robot with bench_latency's synthetic stream (the workcell's arm at rest, 50 Hz poses,
wrist force above its 40 N limit for 20 frames of every 50, so `no_excess_wrench` opens every 0.1 s
and recovers in between) and subscribes to every robot's events. The joint positions alternate by
1 microradian, a sensor's noise, so the estimator's frozen-stream watchdog stays armed and quiet.

Per robot, over the measured window: frames sent; frames dropped, from the events' own frame
indices (the monitor numbers the frames it steps, so between two `opened` events it stepped
exactly the frames sent unless some were lost; blind frames it stepped are added back) and, over
the whole run, frames sent minus the estimator's own count on /diagnostics; events expected
against received; latency p50/p99 of `opened` and `recovered` events, as in
bench_latency (system-wide monotonic clock, from just before the completing /joint_states is
published to the event's callback here); CPU of the robot's stack processes (and of the driver
and the whole machine, per trial). N robots are
sustained when the driver kept its rate, no frame was dropped, every expected event came and
every robot's p99 is within `--p99-bound-ms`. The ramp stops at the first N not sustained
unless `--keep-going`.

    .venv/bin/python benchmarks/bench_load.py [--robots 1,2,4,6,8,10] [--seconds 20] [--rate 500]
        [--stack combined|separate] [--keep-going] [--json results.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from safety_monitor.enums import EventKind

PERIOD_FRAMES, HIGH_FRAMES = 50, 20  # force high for frames 0..19 of every 50
FORCE_HIGH, FORCE_LOW = 60.0, 5.0
POSE_RATE_HZ = 50.0
JOINT_DITHER_RAD = 1e-6
T0_NS = 1_000_000_000  # stamp of frame 0
STACK_MODULES = {"separate": ("estimator_node", "monitor_node"), "combined": ("monitor_stack",)}
WATCHED = "no_excess_wrench"
LATENCY_KINDS = (EventKind.OPENED, EventKind.RECOVERED)


def default_stack() -> str:
    return "combined" if importlib.util.find_spec("safety_monitor.nodes.monitor_stack") else "separate"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine spent busy (not idle, not waiting for I/O): with the
    benchmark's own CPU it tells how much of the machine other jobs took."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # up to steal; minus idle, iowait


@dataclass(frozen=True)
class RobotResult:
    namespace: str
    frames_sent: int
    frames_dropped: int | None  # in the window, by the monitor's frame indices (None: < 2 `opened` events)
    frames_not_grounded: int | None  # whole run: sent - the estimator's own count (None: not heard)
    blind_frames: int  # frames the monitor stepped blind (no predicates for predicates_timeout_s)
    events_expected: int
    events_received: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    cpu_cores: float


@dataclass(frozen=True)
class TrialResult:
    robots: int
    stack: str
    rate_hz: float
    achieved_rate_hz: float
    driver_lag_p99_ms: float  # how late the driver started a frame against its schedule
    driver_cpu_cores: float
    machine_busy_cores: float  # every process on the machine, this benchmark's included
    seconds: float
    load_average: tuple[float, float, float]  # 1-minute load average before, after, and its 5-minute value after
    per_robot: list[RobotResult]
    sustained: bool
    why_not: list[str]


def start_stack(k: int, stack: str, rate: float, workdir: Path, env: dict[str, str]) -> list[subprocess.Popen]:
    from safety_monitor.nodes.run_inprocess import nodes_yaml

    ns = f"/robot{k}"
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                f"safety_monitor.nodes.{module}",
                "--ros-args",
                "-r",
                f"__ns:={ns}",
                "--params-file",
                str(nodes_yaml()),
                "-p",
                f"control_rate_hz:={rate}",
                "-p",
                f"events_log:={workdir / f'events_robot{k}.jsonl'}",
            ],
            env=env,
            stdout=open(workdir / f"robot{k}_{module}.log", "w"),
            stderr=subprocess.STDOUT,
        )
        for module in STACK_MODULES[stack]
    ]


def stop(procs: list[subprocess.Popen], timeout: float = 20.0) -> None:
    """SIGINT (the nodes close their traces and logs), wait, then kill what is left."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def run_trial(
    n: int,
    *,
    rate: float = 500.0,
    seconds: float = 20.0,
    warmup: float = 3.0,
    stack: str | None = None,
    p99_bound_ms: float = 50.0,
    startup_timeout: float = 180.0,
) -> TrialResult:
    """Start n robot stacks, drive them for warmup + seconds, measure the window after warmup."""
    import rclpy
    from rclpy.serialization import serialize_message

    from safety_monitor.io import messages as m
    from safety_monitor.nodes import qos
    from safety_monitor.nodes.runtime import make_executor
    from safety_monitor.sim.runner import Episode

    stack = stack or default_stack()
    rest = Episode("pick_and_place_cube", None, 0).step()  # the arm at rest, objects on the table
    domain = random.SystemRandom().randint(1, 232)
    workdir = Path(tempfile.mkdtemp(prefix="bench_load_"))
    env = {
        **os.environ,
        "ROS_DOMAIN_ID": str(domain),
        "ROS_LOG_DIR": str(workdir / "ros_log"),
        "ROS_HOME": str(workdir),
    }
    load_before = os.getloadavg()[0]
    stacks = [start_stack(k, stack, rate, workdir, env) for k in range(n)]
    procs = [p for s in stacks for p in s]
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node("bench_load_driver", context=context)
    T = m.rclpy_types()
    received: list[tuple[int, int, object]] = []  # (monotonic ns, robot, message), decoded after the run
    events_subs = [
        node.create_subscription(
            T.DiagnosticArray,
            f"/robot{k}/safety_monitor/events",
            lambda msg, k=k: received.append((time.monotonic_ns(), k, msg)),
            qos.EVENTS,
        )
        for k in range(n)
    ]
    inputs = qos.input_qos()
    joints = [node.create_publisher(T.JointState, f"/robot{k}/joint_states", inputs) for k in range(n)]
    wrenches = [node.create_publisher(T.WrenchStamped, f"/robot{k}/wrist_wrench", inputs) for k in range(n)]
    poses = [
        [node.create_publisher(T.PoseStamped, f"/robot{k}/objects/{o}/pose", inputs) for o in rest.object_poses]
        for k in range(n)
    ]
    executor = make_executor(context)
    executor.add_node(node)
    spinning = threading.Event()
    spinning.set()

    def spin() -> None:
        while spinning.is_set() and context.ok():
            executor.spin_once(timeout_sec=0.1)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        deadline = time.monotonic() + startup_timeout
        everything = [*joints, *wrenches, *(p for ps in poses for p in ps)]
        while not (
            all(p.get_subscription_count() for p in everything) and all(s.get_publisher_count() for s in events_subs)
        ):
            if any(p.poll() is not None for p in procs):
                raise SystemExit(f"a stack process exited; see the logs in {workdir}")
            if time.monotonic() > deadline:
                raise SystemExit(f"the stacks were not all connected after {startup_timeout} s; see {workdir}")
            time.sleep(0.2)

        # One message per stream and frame, serialised once and sent to every robot.
        from safety_monitor.frames import Wrench

        period_ns = round(1e9 / rate)
        first = PERIOD_FRAMES * round(warmup * rate / PERIOD_FRAMES)  # whole force periods: every
        total = first + PERIOD_FRAMES * max(1, round(seconds * rate / PERIOD_FRAMES))  # opening recovers inside
        pose_every = max(1, round(rate / POSE_RATE_HZ))
        joint_msg = m.joint_state_msg(
            T, 1.0, rest.joint_names, rest.joint_position, rest.joint_velocity, rest.joint_effort
        )
        position = np.asarray(rest.joint_position, dtype=np.float64)
        dithered = (position, position + JOINT_DITHER_RAD)
        wrench_msgs = (
            m.wrench_msg(T, 1.0, Wrench(np.array([0.0, 0.0, FORCE_LOW]), np.zeros(3))),
            m.wrench_msg(T, 1.0, Wrench(np.array([0.0, 0.0, FORCE_HIGH]), np.zeros(3))),
        )
        pose_msgs = [m.pose_msg(T, 1.0, pose) for pose in rest.object_poses.values()]
        sent_ns = np.zeros((n, total), dtype=np.int64)  # monotonic ns just before robot k's joint publish
        lag_ns = np.zeros(total, dtype=np.int64)
        start = time.monotonic_ns()
        cpu0 = wall0 = driver_cpu0 = None
        for f in range(total):
            lag_ns[f] = time.monotonic_ns() - (start + f * period_ns)
            if f == first:
                cpu0 = [sum(cpu_seconds(p.pid) for p in s) for s in stacks]
                wall0, driver_cpu0, busy0 = time.monotonic(), time.process_time(), machine_busy_seconds()
            stamp_ns = T0_NS + f * period_ns
            sec, nanosec = divmod(stamp_ns, 1_000_000_000)
            wrench = wrench_msgs[f % PERIOD_FRAMES < HIGH_FRAMES]
            wrench.header.stamp.sec, wrench.header.stamp.nanosec = sec, nanosec
            wrench_bytes = serialize_message(wrench)
            for pub in wrenches:
                pub.publish(wrench_bytes)
            if f % pose_every == 0:
                for i, msg in enumerate(pose_msgs):
                    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
                    data = serialize_message(msg)
                    for robot in poses:
                        robot[i].publish(data)
            joint_msg.position = dithered[f % 2]
            joint_msg.header.stamp.sec, joint_msg.header.stamp.nanosec = sec, nanosec
            joint_bytes = serialize_message(joint_msg)
            for k, pub in enumerate(joints):
                sent_ns[k, f] = time.monotonic_ns()
                pub.publish(joint_bytes)
            delay = start + (f + 1) * period_ns - time.monotonic_ns()
            if delay > 0:
                time.sleep(delay / 1e9)
        wall = time.monotonic() - wall0
        driver_cpu = time.process_time() - driver_cpu0
        busy = machine_busy_seconds() - busy0
        cpu = [sum(cpu_seconds(p.pid) for p in s) - c0 for s, c0 in zip(stacks, cpu0)]

        expected = expected_events(first, total)
        wait_until = time.monotonic() + max(5.0, 0.2 * seconds)  # queued frames still on their way
        while time.monotonic() < wait_until and len(received) < n * 2 * expected:
            time.sleep(0.1)
        grounded = estimator_frames(node, T, n)
    finally:
        stop(procs)
        spinning.clear()
        spinner.join(timeout=5)
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()

    per_robot = [
        robot_result(
            k,
            [(t, msg) for t, r, msg in received if r == k],
            sent_ns[k],
            first,
            total,
            period_ns,
            cpu[k] / wall,
            grounded.get(f"robot{k}"),
        )
        for k in range(n)
    ]
    achieved = (total - first) / wall
    result = dict(
        robots=n,
        stack=stack,
        rate_hz=rate,
        achieved_rate_hz=round(achieved, 1),
        driver_lag_p99_ms=round(float(np.percentile(lag_ns[first:], 99)) / 1e6, 3),
        driver_cpu_cores=round(driver_cpu / wall, 3),
        machine_busy_cores=round(busy / wall, 2),
        seconds=round(wall, 1),
        load_average=(round(load_before, 2), *(round(v, 2) for v in os.getloadavg()[:2])),
        per_robot=per_robot,
    )
    why_not = []
    if achieved < 0.99 * rate:
        why_not.append(f"driver reached {achieved:.0f} of {rate:.0f} frames/s")
    for r in per_robot:
        if r.frames_dropped is None or r.frames_dropped:
            why_not.append(f"{r.namespace}: {'?' if r.frames_dropped is None else r.frames_dropped} frames dropped")
        if r.frames_not_grounded:
            why_not.append(f"{r.namespace}: {r.frames_not_grounded} frames never grounded")
        if r.events_received < r.events_expected:
            why_not.append(f"{r.namespace}: {r.events_received} of {r.events_expected} events")
        if r.p99_ms is None or r.p99_ms > p99_bound_ms:
            why_not.append(f"{r.namespace}: p99 {r.p99_ms} ms > {p99_bound_ms} ms")
    return TrialResult(**result, sustained=not why_not, why_not=why_not)


def estimator_frames(node, T, n: int, listen_s: float = 2.5) -> dict[str, int]:
    """Each estimator's count of frames it grounded (its /diagnostics `frames`), heard once the
    stream is over; subscribed only now, so the driver decodes no diagnostics while it drives."""
    from safety_monitor.nodes import qos

    frames: dict[str, int] = {}

    def on_diagnostics(msg) -> None:
        for status in msg.status:
            if status.name.endswith(": estimator inputs"):
                frames.update({status.hardware_id: int(v.value) for v in status.values if v.key == "frames"})

    sub = node.create_subscription(T.DiagnosticArray, "/diagnostics", on_diagnostics, qos.DIAGNOSTICS)
    time.sleep(listen_s)  # the estimators report every diagnostics_period_s (1 s)
    node.destroy_subscription(sub)
    return dict(frames)


def expected_events(first: int, total: int) -> int:
    """Violation periods in frames first..total-1 (whole periods): one `opened`, one `recovered` each."""
    return (total - first) // PERIOD_FRAMES


def robot_result(
    k: int,
    received: list[tuple[int, object]],
    sent_ns: np.ndarray,
    first: int,
    total: int,
    period_ns: int,
    cpu_cores: float,
    grounded: int | None,
) -> RobotResult:
    from safety_monitor.io import messages as m

    latencies, opened, blind = [], [], set()
    received_count = 0
    for recv_ns, msg in received:
        for e in m.decode_events(msg):
            if e.get("t") is None:
                continue
            f = round((e["t"] * 1e9 - T0_NS) / period_ns)
            if not first <= f < total:
                continue
            if e["kind"] == "blind":
                blind.add(e["frame"])
            if e["property"] != WATCHED or e["kind"] not in LATENCY_KINDS:
                continue
            received_count += 1
            latencies.append((recv_ns - sent_ns[f]) / 1e6)
            if e["kind"] == "opened":
                opened.append((f, e["frame"]))
    dropped, blind_frames = None, 0
    if len(opened) >= 2:  # count between the first and the last `opened` (the watchdog's blind step
        (f_a, frame_a), (f_b, frame_b) = min(opened), max(opened)  # once the stream stops is not load)
        blind_frames = sum(1 for b in blind if frame_a < b < frame_b)
        dropped = (f_b - f_a) - (frame_b - frame_a - blind_frames)
    v = np.array(latencies)
    stats = (
        {
            "p50_ms": round(float(np.percentile(v, 50)), 3),
            "p99_ms": round(float(np.percentile(v, 99)), 3),
            "max_ms": round(float(v.max()), 3),
        }
        if len(v)
        else {"p50_ms": None, "p99_ms": None, "max_ms": None}
    )
    return RobotResult(
        f"/robot{k}",
        total - first,
        dropped,
        None if grounded is None else total - grounded,
        blind_frames,
        2 * expected_events(first, total),
        received_count,
        cpu_cores=round(cpu_cores, 3),
        **stats,
    )


def table(trials: list[TrialResult]) -> str:
    """One line per N: the figures benchmarks/README.md records."""
    lines = [
        "| robots | stack | driver frames/s | frames dropped (window / whole run) | events recv/expected "
        "| p50 (median robot) | p99 per robot (min-max) | CPU per stack | CPU driver | machine busy "
        "| load avg | sustained |",
        "|" + "---|" * 12,
    ]
    for t in trials:
        robots = t.per_robot
        dropped = ["?" if r.frames_dropped is None else r.frames_dropped for r in robots]
        ungrounded = [r.frames_not_grounded for r in robots]
        p50 = [r.p50_ms for r in robots if r.p50_ms is not None]
        p99 = [r.p99_ms for r in robots if r.p99_ms is not None]
        cpu = [r.cpu_cores for r in robots]
        lines.append(
            f"| {t.robots} | {t.stack} | {t.achieved_rate_hz:.0f} of {t.rate_hz:.0f} "
            f"| {sum(d for d in dropped if d != '?')}{' (?)' if '?' in dropped else ''} / "
            f"{sum(u for u in ungrounded if u is not None)}{' (?)' if None in ungrounded else ''} "
            f"| {sum(r.events_received for r in robots)}/{sum(r.events_expected for r in robots)} "
            f"| {f'{np.median(p50):.1f} ms' if p50 else '-'} "
            f"| {f'{min(p99):.1f}-{max(p99):.1f} ms' if p99 else '-'} "
            f"| {np.mean(cpu):.2f} core | {t.driver_cpu_cores:.2f} core | {t.machine_busy_cores:.2f} cores "
            f"| {t.load_average[0]:.1f} -> {t.load_average[1]:.1f} "
            f"| {'yes' if t.sustained else 'no'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", default="1,2,4,6,8,10", help="robot counts to try, in order (default 1,2,4,6,8,10)")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured duration per count (default 20)")
    parser.add_argument("--rate", type=float, default=500.0, help="joint_states rate per robot in Hz (default 500)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds streamed before measuring")
    parser.add_argument(
        "--stack",
        choices=sorted(STACK_MODULES),
        default=default_stack(),
        help="one process per node, or both nodes in one (default: combined where it exists)",
    )
    parser.add_argument("--p99-bound-ms", type=float, default=50.0, help="sustained: every robot's p99 within this")
    parser.add_argument("--keep-going", action="store_true", help="try every count even after one is not sustained")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    counts = [int(c) for c in args.robots.split(",")]

    trials = []
    for n in counts:
        trial = run_trial(
            n,
            rate=args.rate,
            seconds=args.seconds,
            warmup=args.warmup,
            stack=args.stack,
            p99_bound_ms=args.p99_bound_ms,
        )
        trials.append(trial)
        print(json.dumps(asdict(trial)), flush=True)
        if not trial.sustained:
            print(f"{n} robots not sustained: {'; '.join(trial.why_not[:5])}", file=sys.stderr, flush=True)
            if not args.keep_going:
                break
    sustained = max((t.robots for t in trials if t.sustained), default=0)
    summary = {
        "robots_sustained": sustained,
        "rate_hz": args.rate,
        "stack": args.stack,
        "cpus": os.cpu_count(),
        "trials": [asdict(t) for t in trials],
    }
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    print(table(trials))
    print(f"robots sustained at {args.rate:.0f} Hz ({args.stack} stacks, {os.cpu_count()} CPUs): {sustained}")


if __name__ == "__main__":
    main()
