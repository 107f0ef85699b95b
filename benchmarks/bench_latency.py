"""Live latency: the /joint_states message that completes a violating frame -> its event at a subscriber.

The estimator and monitor nodes run as monitor.launch.py starts them: by default in one process
(`monitor_stack`, `--layout one_process`), or as two (`--layout separate`). This process
publishes a synthetic robot stream at `--rate` Hz (the workcell's arm at rest, the 50 Hz pose stream,
and a wrist force above its 40 N limit for 20 frames of every 50, so `no_excess_wrench` opens every
0.1 s and recovers in between) and subscribes to the events. Latency is measured on the system-wide
monotonic clock from just before the completing /joint_states is published to the event's callback
here; CPU is the estimator's and the monitor's user+system time over the measured window.

    .venv/bin/python benchmarks/bench_latency.py [--seconds 60] [--rate 500] [--layout one_process|separate]
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
    parser.add_argument("--layout", choices=sorted(LAYOUTS), default="one_process",
                        help="estimator and monitor in one process (default) or two")
    args = parser.parse_args()

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from safety_monitor.grounding.state import Wrench
    from safety_monitor.nodes import qos
    from safety_monitor.nodes.run_inprocess import nodes_yaml
    from safety_monitor.sim.runner import Episode
    from safety_monitor.sources import messages as m

    rest = Episode("pick_and_place_cube", None, 0).step()  # the arm at rest, objects on the table
    domain = random.SystemRandom().randint(101, 200)
    ns = "/bench" + uuid.uuid4().hex[:6]
    workdir = Path(tempfile.mkdtemp(prefix="bench_latency_"))
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "ROS_LOG_DIR": str(workdir / "ros_log")}
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", f"safety_monitor.nodes.{name}", "--ros-args", "-r", f"__ns:={ns}",
             "--params-file", str(nodes_yaml()), "-p", f"control_rate_hz:={args.rate}",
             "-p", f"events_log:={workdir / 'events.jsonl'}"],
            env=env, stdout=open(workdir / f"{name}.log", "w"), stderr=subprocess.STDOUT)
        for name in LAYOUTS[args.layout]
    }
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node("bench_driver", namespace=ns, context=context)
    T = m.rclpy_types()
    received: list[tuple[int, list[dict]]] = []
    events_sub = node.create_subscription(
        T.DiagnosticArray, "safety_monitor/events",
        lambda msg: received.append((time.monotonic_ns(), m.decode_events(msg))), qos.EVENTS)
    joints = node.create_publisher(T.JointState, "joint_states", qos.input_qos())
    wrench = node.create_publisher(T.WrenchStamped, "wrist_wrench", qos.input_qos())
    poses = {o: node.create_publisher(T.PoseStamped, f"objects/{o}/pose", qos.input_qos()) for o in rest.object_poses}
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        while not (all(p.get_subscription_count() for p in (joints, wrench, *poses.values()))
                   and events_sub.get_publisher_count()):
            if any(p.poll() is not None for p in procs.values()):
                raise SystemExit(f"a node exited; see {workdir}")
            time.sleep(0.1)
        published: dict[int, int] = {}  # frame stamp (ns) -> monotonic ns just before the joint publish
        period = 1.0 / args.rate
        total = int((args.warmup + args.seconds) * args.rate)
        first_measured = int(args.warmup * args.rate)
        cpu0 = wall0 = None
        start = time.monotonic()
        for k in range(total):
            if k == first_measured:
                cpu0, wall0 = {n: cpu_seconds(p.pid) for n, p in procs.items()}, time.monotonic()
            t = 1.0 + k * period
            high = k % PERIOD_FRAMES < HIGH_FRAMES
            force = np.array([0.0, 0.0, FORCE_HIGH if high else FORCE_LOW])
            wrench.publish(m.wrench_msg(T, t, Wrench(force, np.zeros(3))))
            if k % max(1, round(args.rate / 50)) == 0:
                for name, pub in poses.items():
                    pub.publish(m.pose_msg(T, t, rest.object_poses[name]))
            jitter = 1e-6 * np.sin(0.1 * k)  # encoder noise of an arm holding still (an exact repeat is a frozen driver)
            msg = m.joint_state_msg(T, t, rest.joint_names, rest.joint_position + jitter, rest.joint_velocity,
                                    rest.joint_effort)
            published[round(t * 1e9)] = time.monotonic_ns()
            joints.publish(msg)
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
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()

    t_measured = 1.0 + first_measured * period
    lat: dict[str, list[float]] = {"opened": [], "recovered": []}
    for recv_ns, events in received:
        for e in events:
            sent = published.get(round(e["t"] * 1e9))
            if e["kind"] in lat and e["t"] >= t_measured and sent is not None:
                lat[e["kind"]].append((recv_ns - sent) / 1e6)
    achieved = (total - first_measured) / wall
    result = {
        "layout": args.layout, "rate_hz": args.rate, "achieved_rate_hz": round(achieved, 1), "seconds": round(wall, 1),
        "cpu_cores": {n.removesuffix("_node"): round(c / wall, 3) for n, c in cpu.items()},
        "cpu_cores_total": round(sum(cpu.values()) / wall, 3),
    }
    for kind, values in lat.items():
        v = np.array(values)
        result[kind] = ({"events": len(v), "p50_ms": round(float(np.percentile(v, 50)), 3),
                         "p99_ms": round(float(np.percentile(v, 99)), 3), "max_ms": round(float(v.max()), 3)}
                        if len(v) else {"events": 0})
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
