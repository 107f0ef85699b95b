"""No false alarms: a fault-free run says OK and nothing else once it has started, episode boundaries
included, at both paces; a realtime sim paused with SIGSTOP resumes without a burst, so the estimator
loses no frame; and every topic names the robot by the same hardware_id.

The sim, and the one-process estimator and monitor (`monitor_stack`, what monitor.launch.py starts), run
as processes on sim time, as sim.launch.py runs them. By default one task at each pace (two episodes:
one boundary; the realtime one paused once); SAFETY_MONITOR_TEST_ALL=1 runs every task at both paces. The realtime pace runs at
REALTIME_FACTOR: a stack slower than the sim must say it falls behind (that is no false alarm), and a
test may not depend on the machine keeping up with 500 Hz.

A starved machine is the one exception, recognised from what the nodes report, never from wall-clock
thresholds: the middleware delivers each topic on its own, so a starved process (or a lost message sent
again) can hold one topic up while the others flow, and the estimator then truly assembles frames
without it. It says so (`late_arrival`: a sample that came after the frames it was fresh for;
`late_marker`: a start marker after its rollout's frames). With that evidence, the alarms about those
inputs (and frames missed meanwhile) are true; any other alarm, and any violation, still fails.

No start-up allowance either: every property is decided from a rollout's first frame (an object resting
on a support is an allowed contact whether or not its motion is known yet), so a property's STALE or the
summary's WARN "properties unknown" at a rollout's start is an alarm like any other.
"""

import os
import re
import signal
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from node_processes import Probe, Proc, fresh_domain, fresh_namespace, whole_lines  # noqa: E402

from safety_monitor.sim.tasks import TASKS  # noqa: E402

ALL = os.environ.get("SAFETY_MONITOR_TEST_ALL") == "1"
# by default the realtime pace is checked by the pause test (the same run, paused once)
CASES = (
    [(task, pace) for task in TASKS for pace in ("realtime", "lockstep")]
    if ALL
    else [("pick_and_place_cube", "lockstep")]
)
ALARMS = ("WARN", "STALE", "ERROR")
REALTIME_FACTOR = 0.2
PAUSE_S = 200 / (500 * REALTIME_FACTOR)


def alarms_after_first_ok(statuses):
    """Per status name: every non-OK level published after that status first said OK."""
    ok, out = set(), []
    for _hw, name, level, message in statuses:
        if level == "OK":
            ok.add(name)
        elif name in ok and level in ALARMS:
            out.append((name, level, message))
    return out


def run_stack(tmp_path, sim_params, during=None):
    """sim_node and monitor_stack in one namespace until the sim has published every episode and the
    monitor closed them; `during(probe, sim)` runs once the first frame came. Returns the probe."""
    domain, ns = fresh_domain(), fresh_namespace()
    probe = Probe(ns, domain)
    procs = {}
    try:
        procs["stack"] = Proc(
            "monitor_stack", ns, domain, tmp_path, ["use_sim_time:=true", f"events_log:={tmp_path / 'events.jsonl'}"]
        )
        procs["sim"] = Proc("sim_node", ns, domain, tmp_path, sim_params)
        episodes = int(next(p.split(":=")[1] for p in sim_params if p.startswith("episodes:=")))
        probe.until(lambda: probe.predicates > 0, procs, "first predicates")
        if during is not None:
            during(probe, procs["sim"])
        probe.until(lambda: procs["sim"].popen.poll() is not None, {"stack": procs["stack"]}, "the sim's end")
        assert procs["sim"].wait() == 0, procs["sim"].output()[-3000:]
        probe.until(lambda: probe.rollout >= episodes, {"stack": procs["stack"]}, "every episode closed")
        procs["stack"].popen.send_signal(signal.SIGINT)
        assert procs["stack"].wait() == 0, procs["stack"].output()[-3000:]
        for proc in procs.values():
            assert "Traceback" not in proc.output(), proc.output()[-3000:]
    finally:
        for proc in procs.values():
            proc.kill()
        probe.close()
    return probe, procs


LATE = re.compile(r"\]: (\S+): stamped .* it reached the estimator late")  # the estimator's late_arrival line
STALE_STREAMS = re.compile(r"stale(?: inputs)?: ([^;]+)")  # the streams a stale-input status names


def late_inputs(probe, procs):
    """The inputs the estimator reported reaching it late (stream names; "marker" for a late start marker)."""
    late = set(LATE.findall(procs["stack"].output()))
    return late | ({"marker"} if probe.estimator_issues.get("late_marker") else set())


def unexplained(alarms, late):
    """The alarms that inputs reaching the estimator late do not explain: a stale-input status naming a
    stream that never came late. The properties' unknown verdicts and frames missed follow from those."""
    out = []
    for name, level, message in alarms:
        named = STALE_STREAMS.search(message)
        if named is not None and not set(named.group(1).split(", ")) <= late:
            out.append((name, level, message))
    return out


def check_no_alarm(probe, procs):
    """No alarm once each status said OK, no frame missed, no warning or error on stderr, no property ever
    blind; and never a violation. On a starved machine (the estimator reported inputs that came late) only
    the alarms those late inputs explain are allowed."""
    alarms = alarms_after_first_ok(probe.diagnostics)
    events = whole_lines(procs["stack"].log.with_name("events.jsonl"))
    assert probe.diagnostics and [e for e in events if e["kind"] == "opened"] == [], events[:5]
    late = late_inputs(probe, procs)
    if late:  # starved: the alarms about the late inputs are true
        assert unexplained(alarms, late) == [], (late, unexplained(alarms, late)[:5])
        return
    assert alarms == [], alarms[:5]
    assert probe.missed_frames == 0
    for proc in procs.values():
        assert "WARN" not in proc.output() and "ERROR" not in proc.output(), proc.output()[-3000:]
    assert [e for e in events if e["kind"] == "blind"] == [], events[:5]


def pace_params(pace):
    return [f"pace:={pace}"] + ([f"realtime_factor:={REALTIME_FACTOR}"] if pace == "realtime" else [])


@pytest.mark.parametrize("task,pace", CASES)
def test_a_fault_free_run_raises_no_alarm(tmp_path, task, pace):
    probe, procs = run_stack(tmp_path, [f"task:={task}", "fault:=none", "episodes:=2", *pace_params(pace)])
    hw = probe.hw  # one hardware_id on every topic: the namespace
    assert {h for h, *_ in probe.diagnostics} == probe.predicate_ids == probe.heartbeat_ids == probe.marker_ids == {hw}
    check_no_alarm(probe, procs)


def test_a_paused_realtime_sim_resumes_without_a_burst(tmp_path):
    """SIGSTOP for longer than the estimator's queue holds frames, then SIGCONT: the sim resumes where it
    stopped (sim time stood still), so no frame is lost and nothing turns stale."""

    def pause(probe, sim):
        os.kill(sim.pid, signal.SIGSTOP)
        # the pause itself, not a timeout: 200 frames of schedule at REALTIME_FACTOR, four times the most the
        # sim catches up (MAX_CATCH_UP_FRAMES), on any machine
        time.sleep(PAUSE_S)
        os.kill(sim.pid, signal.SIGCONT)

    probe, procs = run_stack(
        tmp_path, ["task:=pick_and_place_cube", "fault:=none", "episodes:=2", *pace_params("realtime")], during=pause
    )
    assert "resuming from here, not catching up" in procs["sim"].output()
    check_no_alarm(probe, procs)
