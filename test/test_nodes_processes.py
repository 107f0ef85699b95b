"""The sim, estimator and monitor nodes as three processes (what sim.launch.py starts), or the sim and the
one-process `monitor_stack` (what monitor.launch.py starts by default), on a random ROS domain: a fault's
episode opens what its label expects and nothing outside its allowance, a subscriber in another process
receives exactly the logged events, and Ctrl-C ends the nodes cleanly."""

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid

import pytest

rclpy = pytest.importorskip("rclpy")

from safety_monitor.enums import LogRecordKind  # noqa: E402
from safety_monitor.io import messages as m  # noqa: E402
from safety_monitor.nodes import qos  # noqa: E402
from safety_monitor.sim.faults import FAULTS  # noqa: E402

FAULT = "early_release"
WAIT_S = 120.0  # only a broken run waits this long for a condition: a slow, loaded machine passes far below it


def start(module, ns, params_file, log_dir, env, *params):
    args = [
        sys.executable,
        "-m",
        f"safety_monitor.nodes.{module}",
        "--ros-args",
        "-r",
        f"__ns:={ns}",
        "--params-file",
        str(params_file),
    ]
    for p in params:
        args += ["-p", p]
    out = open(log_dir / f"{module}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)


LAYOUTS = {
    "separate": {"monitor": "monitor_node", "estimator": "estimator_node"},
    "one_process": {"stack": "monitor_stack"},
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_processes_report_the_fault_and_stop_cleanly(tmp_path, layout):
    from safety_monitor.nodes.run_inprocess import nodes_yaml

    domain = random.SystemRandom().randint(101, 200)  # discovery stays within this test
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    ns = "/p" + uuid.uuid4().hex[:8]
    log = tmp_path / "events.jsonl"
    params = nodes_yaml()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    probe = rclpy.create_node("probe", namespace=ns, context=context)
    T = m.rclpy_types()
    received, rollout_seen = [], []
    probe.create_subscription(
        T.DiagnosticArray, "safety_monitor/events", lambda msg: received.extend(m.decode_events(msg)), qos.EVENTS
    )

    def on_diag(msg):  # the monitor's summary names the rollout it is in: 1 once the episode closed
        for s in msg.status:
            if s.hardware_id == ns.strip("/") and s.name.endswith(": monitor"):
                rollout_seen.extend(kv.value for kv in s.values if kv.key == "rollout")

    probe.create_subscription(T.DiagnosticArray, "/diagnostics", on_diag, qos.DIAGNOSTICS)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(probe)
    procs = {}
    try:
        modules = {**LAYOUTS[layout], "sim": "sim_node"}
        for name, module in LAYOUTS[layout].items():
            procs[name] = start(module, ns, params, tmp_path, env, f"events_log:={log}", "use_sim_time:=true")
        procs["sim"] = start("sim_node", ns, params, tmp_path, env, f"fault:={FAULT}", "episodes:=1", "pace:=lockstep")
        deadline = time.monotonic() + 400  # ~15 s on a quiet machine; lockstep ping-pong suffers most from load
        while "1" not in rollout_seen:  # the sim waits for discovery, runs the episode, exits
            assert time.monotonic() < deadline, (tmp_path / "sim_node.log").read_text()[-2000:]
            for name, proc in procs.items():
                assert name == "sim" or proc.poll() is None, (tmp_path / f"{modules[name]}.log").read_text()[-2000:]
            executor.spin_once(timeout_sec=0.1)
        assert procs["sim"].wait(timeout=WAIT_S) == 0
        for name in LAYOUTS[layout]:
            procs[name].send_signal(signal.SIGINT)
        for name in LAYOUTS[layout]:
            assert procs[name].wait(timeout=WAIT_S) == 0, (tmp_path / f"{modules[name]}.log").read_text()[-2000:]
        logged_count = len(_published(log))  # final: every writer has exited
        end = time.monotonic() + WAIT_S
        while len(received) < logged_count:  # events still on their way are received, however slow the machine
            assert time.monotonic() < end, f"{len(received)} of {logged_count} logged events received"
            executor.spin_once(timeout_sec=0.1)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        probe.destroy_node()
        context.try_shutdown()

    logged = _published(log)
    assert logged == received  # wall-clock stamps and pids included: the log's line is the published record
    opened = {e["property"] for e in logged if e["kind"] == "opened"}
    assert set(FAULTS[FAULT].expected_properties) <= opened <= set(FAULTS[FAULT].allowed_properties)


def _published(log):
    """The log's event records: the log's own records about itself and the run are never published."""
    own = {k.value for k in LogRecordKind}
    return [r for r in map(json.loads, log.read_text().splitlines()) if r["kind"] not in own]
