"""Clean shutdown, always: SIGINT to the process group (a terminal's Ctrl-C) or SIGTERM to every process,
at moments chosen by the progress the run shows (its imports under way, its nodes in the graph, the
k-th predicate frame, the k-th event, an episode boundary), ends every process with exit code 0 and no
traceback, the event log whole (every line a JSON object) and its `.running` marker removed.

Layouts: `monitor_stack` + `sim_node`, the three separate nodes, and `safety-monitor sim` (one process).
Moments are drawn from a seeded generator (SAFETY_MONITOR_TEST_SEED, default 16): a few by default,
SAFETY_MONITOR_TEST_ALL=1 draws 20 per layout. Under `ros2 launch` the same is checked by hand where
launch_ros is installed (docs/ros.md).
"""

import os
import random
import signal

import pytest

rclpy = pytest.importorskip("rclpy")

from node_processes import Probe, Proc, fresh_domain, fresh_namespace, whole_lines  # noqa: E402

FAULT = "early_release"  # its episode opens violations: events are written (and synced) mid-run
LAYOUTS = {"stack": ("monitor_stack",), "separate": ("monitor_node", "estimator_node"), "sim_cli": ()}
KINDS = ("imports", "graph", "frames", "events", "boundary")
SEED = int(os.environ.get("SAFETY_MONITOR_TEST_SEED", "16"))
PER_LAYOUT = 20 if os.environ.get("SAFETY_MONITOR_TEST_ALL") == "1" else 1


def moments():
    rng = random.Random(SEED)
    out = []
    for layout in LAYOUTS:
        for _ in range(PER_LAYOUT):
            kind = rng.choice(KINDS)
            k = rng.randint(1, 3000) if kind == "frames" else rng.randint(1, 6)
            out.append((layout, kind, k, rng.choice(("SIGINT to the group", "SIGTERM to each"))))
    return out


def reached(kind, k, probe, procs, names):
    if kind == "imports":
        return all(p.holds_stop_signals() for p in procs.values())
    if kind == "graph":
        return bool(probe.nodes_seen() & names)
    if kind == "frames":
        return probe.predicates >= k
    if kind == "events":
        return len(probe.events) >= k
    return probe.ends >= 1


@pytest.mark.parametrize("layout,kind,k,how", moments())
def test_a_stop_signal_at_any_moment_is_a_clean_exit(tmp_path, layout, kind, k, how):
    domain = fresh_domain()
    ns = "/" if layout == "sim_cli" else fresh_namespace()
    log = tmp_path / "events.jsonl"
    probe = Probe(ns, domain)
    procs: dict[str, Proc] = {}
    try:
        if layout == "sim_cli":
            procs["sim_cli"] = Proc(
                "",
                ns,
                domain,
                tmp_path,
                [],
                name="sim_cli",
                command=["sim", "--fault", FAULT, "--episodes", "2", "--events", str(log)],
            )
            names = {"monitor_node", "estimator_node", "sim_node"}
        else:
            group = None
            for program in LAYOUTS[layout]:
                procs[program] = Proc(
                    program, ns, domain, tmp_path, ["use_sim_time:=true", f"events_log:={log}"], group=group
                )
                group = group or procs[program].pid
            procs["sim_node"] = Proc(
                "sim_node", ns, domain, tmp_path, [f"fault:={FAULT}", "episodes:=2", "pace:=lockstep"], group=group
            )
            names = {"monitor_node", "estimator_node"}
        if kind == "imports":
            while not reached(kind, k, probe, procs, names):  # polled: the moment is a few hundred ms long
                pass
        else:
            probe.until(lambda: reached(kind, k, probe, procs, names), procs, f"moment {kind} {k}")
        if how == "SIGINT to the group":
            os.killpg(next(iter(procs.values())).pid, signal.SIGINT)
        else:
            for proc in procs.values():
                proc.popen.send_signal(signal.SIGTERM)
        codes = {name: proc.wait() for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.kill()
        probe.close()
    outputs = {name: proc.output() for name, proc in procs.items()}
    assert codes == dict.fromkeys(procs, 0), {n: outputs[n][-3000:] for n, c in codes.items() if c}
    for text in outputs.values():
        assert "Traceback" not in text, text[-3000:]
    lines = whole_lines(log)
    assert not log.with_name(log.name + ".running").exists()
    hw = probe.hw  # one hardware_id on every topic, the event log's `robot` field too
    assert {r["robot"] for r in lines} <= {hw}
    assert probe.event_ids | probe.predicate_ids | probe.heartbeat_ids | probe.marker_ids <= {hw}
    assert {h for h, *_ in probe.diagnostics} <= {hw}
