"""Live latency: the /joint_states message that completes a violating frame -> its event at a subscriber.

The estimator and monitor nodes run as monitor.launch.py starts them: by default in one process
(`monitor_stack`, `--layout one_process`), or as two (`--layout separate`). This process
publishes a synthetic robot stream at `--rate` Hz (the workcell's arm at rest, the 50 Hz pose stream,
and a wrist force above its 40 N limit for 20 frames of every 50, so `no_excess_wrench` opens every
0.1 s and recovers in between) and subscribes to the events. Latency is measured on the system-wide
monotonic clock from just before the completing /joint_states is published to the event's bytes
reaching a raw subscription here (the driver publishes pre-serialised messages, so its own Python work
stays out of both ends of the measurement), split at the event log's wall time (written just before the
publish) into "in" (to the logged event) and "out" (publish to arrival). CPU is the estimator's and the
monitor's user+system time over the measured window; `node_frame_ms_p50` is the median of the
estimator's own per-period `load.frame_ms_p50` (wall time per frame inside the node, from its
/diagnostics).

    .venv/bin/python benchmarks/bench_latency.py [--seconds 60] [--rate 500] [--layout one_process|separate]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np

PERIOD_FRAMES, HIGH_FRAMES = 50, 20
LAYOUTS = {"one_process": ("monitor_stack",), "separate": ("estimator_node", "monitor_node")}
FORCE_HIGH, FORCE_LOW = 60.0, 5.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured duration (default 60)")
    parser.add_argument("--rate", type=float, default=500.0, help="joint_states rate in Hz (default 500)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds streamed before measuring")
    parser.add_argument(
        "--layout",
        choices=sorted(LAYOUTS),
        default="one_process",
        help="estimator and monitor in one process (default) or two",
    )
    args = parser.parse_args()

    import rclpy
    from rclpy.serialization import deserialize_message, serialize_message

    from safety_monitor.frames import Wrench
    from safety_monitor.io import messages as m
    from safety_monitor.nodes import qos
    from safety_monitor.nodes.run_inprocess import nodes_yaml
    from safety_monitor.nodes.runtime import make_executor
    from safety_monitor.sim.runner import Episode

    rest = Episode("pick_and_place_cube", None, 0).step()  # the arm at rest, objects on the table
    domain = random.SystemRandom().randint(101, 200)
    ns = "/bench" + uuid.uuid4().hex[:6]
    workdir = Path(tempfile.mkdtemp(prefix="bench_latency_"))
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "ROS_LOG_DIR": str(workdir / "ros_log")}
    procs = {
        name: subprocess.Popen(
            [
                sys.executable,
                "-m",
                f"safety_monitor.nodes.{name}",
                "--ros-args",
                "-r",
                f"__ns:={ns}",
                "--params-file",
                str(nodes_yaml()),
                "-p",
                f"control_rate_hz:={args.rate}",
                "-p",
                f"events_log:={workdir / 'events.jsonl'}",
            ],
            env=env,
            stdout=open(workdir / f"{name}.log", "w"),
            stderr=subprocess.STDOUT,
        )
        for name in LAYOUTS[args.layout]
    }
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node("bench_driver", namespace=ns, context=context)
    T = m.rclpy_types()
    received: list[tuple[int, bytes]] = []
    # the event is timed when its bytes reach this process's callback, and decoded after the run
    events_sub = node.create_subscription(
        T.DiagnosticArray,
        "safety_monitor/events",
        lambda raw: received.append((time.monotonic_ns(), raw)),
        qos.EVENTS,
        raw=True,
    )
    # the estimator's own per-period load report: wall time per frame inside the node (grounding and, in
    # one process, the monitor), measured where it happens
    frame_ms: list[float] = []
    hw = ns.strip("/")
    node.create_subscription(
        T.DiagnosticArray,
        "/diagnostics",
        lambda msg: frame_ms.extend(
            float(v.value)
            for s in msg.status
            if s.hardware_id == hw and s.name.endswith("estimator inputs")
            for v in s.values
            if v.key == "load.frame_ms_p50"
        ),
        qos.DIAGNOSTICS,
    )
    joints = node.create_publisher(T.JointState, "joint_states", qos.input_qos())
    wrench = node.create_publisher(T.WrenchStamped, "wrist_wrench", qos.input_qos())
    poses = {o: node.create_publisher(T.PoseStamped, f"objects/{o}/pose", qos.input_qos()) for o in rest.object_poses}
    executor = make_executor(context)  # the nodes' own executor (EventsExecutor where rclpy has it)
    executor.add_node(node)
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set() and context.ok():
            executor.spin_once(timeout_sec=0.1)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        while not (
            all(p.get_subscription_count() for p in (joints, wrench, *poses.values()))
            and events_sub.get_publisher_count()
        ):
            if any(p.poll() is not None for p in procs.values()):
                raise SystemExit(f"a node exited; see {workdir}")
            time.sleep(0.1)
        published: dict[int, tuple[int, int]] = {}  # frame stamp (ns) -> (monotonic, wall) ns before the joint publish
        period = 1.0 / args.rate
        total = int((args.warmup + args.seconds) * args.rate)
        first_measured = int(args.warmup * args.rate)
        cpu0 = wall0 = None

        def stream(k: int) -> tuple[bytes, list[tuple[str, bytes]], bytes]:
            """Frame k's wrench, poses (every 10th frame at 500 Hz: 50 Hz) and joint states, serialised."""
            t = 1.0 + k * period
            force = np.array([0.0, 0.0, FORCE_HIGH if k % PERIOD_FRAMES < HIGH_FRAMES else FORCE_LOW])
            pose_bytes = (
                [(name, serialize_message(m.pose_msg(T, t, pose))) for name, pose in rest.object_poses.items()]
                if k % max(1, round(args.rate / 50)) == 0
                else []
            )
            jitter = 1e-6 * np.sin(
                0.1 * k
            )  # encoder noise of an arm holding still (an exact repeat is a frozen driver)
            return (
                serialize_message(m.wrench_msg(T, t, Wrench(force, np.zeros(3)))),
                pose_bytes,
                serialize_message(
                    m.joint_state_msg(
                        T, t, rest.joint_names, rest.joint_position + jitter, rest.joint_velocity, rest.joint_effort
                    )
                ),
            )

        frames = [stream(k) for k in range(total)]  # serialised up front: the timed loop only publishes
        start = time.monotonic()
        for k, (wrench_bytes, pose_bytes, joint_bytes) in enumerate(frames):
            if k == first_measured:
                cpu0, wall0 = {n: cpu_seconds(p.pid) for n, p in procs.items()}, time.monotonic()
                del frame_ms[:]  # periods of the warm-up
            wrench.publish(wrench_bytes)
            for name, data in pose_bytes:
                poses[name].publish(data)
            published[round((1.0 + k * period) * 1e9)] = time.monotonic_ns(), time.time_ns()
            joints.publish(joint_bytes)
            delay = start + (k + 1) * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        wall = time.monotonic() - wall0
        cpu = {n: cpu_seconds(p.pid) - cpu0[n] for n, p in procs.items()}
        time.sleep(1.0)  # trailing events
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGINT)
        for p in procs.values():
            p.wait(timeout=20)
        stop.set()
        spinner.join(timeout=5)
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()

    t_measured = 1.0 + first_measured * period
    # the monitor logs an event (wall clock) just before it publishes it: that splits each latency into
    # "in" (driver -> middleware -> estimator -> grounding -> monitor -> log) and "out" (publish -> here)
    logged = {}
    for line in (workdir / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e.get("t") is not None:
            logged[(round(e["t"] * 1e9), e["kind"], e["property"])] = round(e["wall_time"] * 1e9)
    lat: dict[str, list[tuple[float, float]]] = {"opened": [], "recovered": []}
    for recv_ns, raw in received:
        for e in m.decode_events(deserialize_message(raw, T.DiagnosticArray)):
            key = round(e["t"] * 1e9)
            if e["kind"] in lat and e["t"] >= t_measured and key in published:
                sent_mono, sent_wall = published[key]
                log_ns = logged.get((key, e["kind"], e["property"]))
                lat[e["kind"]].append(
                    ((recv_ns - sent_mono) / 1e6, math.nan if log_ns is None else (log_ns - sent_wall) / 1e6)
                )
    achieved = (total - first_measured) / wall
    result = {
        "layout": args.layout,
        "rate_hz": args.rate,
        "achieved_rate_hz": round(achieved, 1),
        "seconds": round(wall, 1),
        "cpu_cores": {n.removesuffix("_node"): round(c / wall, 3) for n, c in cpu.items()},
        "cpu_cores_total": round(sum(cpu.values()) / wall, 3),
        "node_frame_ms_p50": round(float(np.median(frame_ms)), 3) if frame_ms else None,
    }
    for kind, values in lat.items():
        v = np.array(values).reshape(-1, 2)
        result[kind] = (
            {
                "events": len(v),
                "p50_ms": round(float(np.percentile(v[:, 0], 50)), 3),
                "p99_ms": round(float(np.percentile(v[:, 0], 99)), 3),
                "max_ms": round(float(v[:, 0].max()), 3),
                "in_p50_ms": round(float(np.nanpercentile(v[:, 1], 50)), 3),
                "out_p50_ms": round(float(np.nanpercentile(v[:, 0] - v[:, 1], 50)), 3),
            }
            if len(v)
            else {"events": 0}
        )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
