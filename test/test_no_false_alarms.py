"""No false alarms: a fault-free run says OK and nothing else once it has started, episode boundaries
included, at both paces; a realtime sim paused with SIGSTOP resumes without a burst, so the estimator
loses no frame; and every topic names the robot by the same hardware_id.

The sim, and the one-process estimator and monitor (`monitor_stack`, what monitor.launch.py starts), run
as processes on sim time, as sim.launch.py runs them. By default one task at each pace (two episodes:
one boundary; the realtime one paused once); SAFETY_MONITOR_TEST_ALL=1 runs every task at both paces. The realtime pace runs at
REALTIME_FACTOR: a stack slower than the sim must say it falls behind (that is no false alarm), and a
test may not depend on the machine keeping up with 500 Hz. The lockstep sim waits for the stack however
long it stalls (its stack is stopped once, for longer than the default ack timeout).

A starved machine is the one exception, recognised from what the nodes report, never from wall-clock
thresholds: the middleware delivers each topic on its own, so a starved process (or a lost message sent
again) can hold one topic up while the others flow, and the estimator then truly assembles frames
without it. It says so (`late_arrival`: a sample that came after the frames it was fresh for, or
joint_states that come back after a silence with their stamps continuing the last ones heard;
`late_marker`: a start marker after its rollout's frames), as it says when frames went missing (its
load counters; evidence only where the sim did not wait for it). With that evidence, the alarms about
those inputs are true; a stale stream that never came late, and any violation, still fail. That the
paused sim publishes no burst is checked on its schedule itself, on any machine.

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

from node_processes import WAIT_S, Probe, Proc, fresh_domain, fresh_namespace, whole_lines  # noqa: E402

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
# longer than config/nodes.yaml's ack_timeout_s (2 s), which a starved stack once overran: the lockstep sim then
# moved on without it, and warned
STALL_S = 3.0


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
    monitor closed them; `during(probe, procs)` runs once the first frame came. Returns the probe."""
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
            during(probe, procs)
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


LATE = re.compile(r"\]: (\S+): stamped .* it reached the estimator late")  # the estimator's late_arrival lines
STALE_STREAMS = re.compile(r"stale(?: inputs)?: ([^;]+)")  # the streams a stale-input status names


def starvation(probe, procs):
    """What the nodes reported of a starved machine: the inputs that reached the estimator late (stream
    names; "marker" for a late start marker), and "frames" when frames went missing while the sim did not
    wait for the stack (realtime pace; lockstep waits for it, `pace_params`). Empty: none."""
    late = set(LATE.findall(procs["stack"].output()))
    late |= {"marker"} if probe.estimator_issues.get("late_marker") else set()
    if probe.missed_frames and "pace:=realtime" in procs["sim"].popen.args:
        late.add("frames")
    return late


def unexplained(alarms, late):
    """The alarms that a starved machine does not explain: a stale-input status naming a stream that never
    came late. The properties' unknown verdicts and the estimator falling behind follow from starvation."""
    out = []
    for name, level, message in alarms:
        named = STALE_STREAMS.search(message)
        if named is not None and not set(named.group(1).split(", ")) <= late:
            out.append((name, level, message))
    return out


def check_no_alarm(probe, procs):
    """No alarm once each status said OK, no frame missed, no warning or error on stderr, no property ever
    blind; and never a violation. On a starved machine (`starvation`) only the alarms it explains."""
    alarms = alarms_after_first_ok(probe.diagnostics)
    events = whole_lines(procs["stack"].log.with_name("events.jsonl"))
    assert probe.diagnostics and [e for e in events if e["kind"] == "opened"] == [], events[:5]
    starved = starvation(probe, procs)
    if starved:  # the alarms about late or missing inputs are true
        assert unexplained(alarms, starved) == [], (starved, unexplained(alarms, starved)[:5])
        return
    assert alarms == [], alarms[:5]
    assert probe.missed_frames == 0
    for proc in procs.values():
        assert "WARN" not in proc.output() and "ERROR" not in proc.output(), proc.output()[-3000:]
    assert [e for e in events if e["kind"] == "blind"] == [], events[:5]


def pace_params(pace):
    """Lockstep waits for every answer: its ack timeout (2 s in config/nodes.yaml, which a starved stack overran:
    the sim moved on and warned) only as a hang guard here."""
    if pace == "lockstep":
        return [f"pace:={pace}", f"ack_timeout_s:={WAIT_S}"]
    return [f"pace:={pace}", f"realtime_factor:={REALTIME_FACTOR}"]


def stall_stack(probe, procs):
    """The stack stopped (SIGSTOP) for STALL_S, as a starved machine stops it: the lockstep sim waits for it."""
    os.kill(procs["stack"].pid, signal.SIGSTOP)
    time.sleep(STALL_S)  # the stall itself, not a timeout
    os.kill(procs["stack"].pid, signal.SIGCONT)


@pytest.mark.parametrize("task,pace", CASES)
def test_a_fault_free_run_raises_no_alarm(tmp_path, task, pace):
    lockstep = pace == "lockstep"
    params = [f"task:={task}", "fault:=none", "episodes:=2", *pace_params(pace)]
    probe, procs = run_stack(tmp_path, params, during=stall_stack if lockstep else None)
    if lockstep:  # it waited: the stall published nothing ahead of the stack
        assert "no predicates for" not in procs["sim"].output(), procs["sim"].output()[-3000:]
    hw = probe.hw  # one hardware_id on every topic: the namespace
    assert {h for h, *_ in probe.diagnostics} == probe.predicate_ids == probe.heartbeat_ids == probe.marker_ids == {hw}
    check_no_alarm(probe, procs)


@pytest.mark.alone  # the sim runs on the wall clock: the other worker's tests must not starve it or the stack
def test_a_paused_realtime_sim_resumes_without_a_burst(tmp_path):
    """SIGSTOP for longer than the estimator's queue holds frames, then SIGCONT: the sim resumes where it
    stopped (sim time stood still), so no frame is lost and nothing turns stale."""

    def pause(probe, procs):
        sim = procs["sim"]
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


def test_the_realtime_schedule_skips_a_lag_instead_of_publishing_a_burst():
    """The sim's schedule after a pause (SIGSTOP, a starved process): at most MAX_CATCH_UP_FRAMES frames
    are caught up in one tick; a longer lag re-anchors the schedule, so one frame is due, then the rate."""
    from types import SimpleNamespace

    from safety_monitor.nodes.sim_node import MAX_CATCH_UP_FRAMES, SimNode
    from safety_monitor.settings import CONTROL_RATE_HZ

    rate = CONTROL_RATE_HZ * REALTIME_FACTOR
    logged = []
    sim = SimpleNamespace(
        params=SimpleNamespace(realtime_factor=REALTIME_FACTOR),
        _phase_since=0.0,
        _published=10,
        get_logger=lambda: SimpleNamespace(info=logged.append),
    )
    assert SimNode._due(sim, (10 + MAX_CATCH_UP_FRAMES) / rate) == 10 + MAX_CATCH_UP_FRAMES  # caught up
    assert logged == []
    resumed = (10 + PAUSE_S * rate) / rate
    assert SimNode._due(sim, resumed) == 11 and "resuming from here, not catching up" in logged[0]
    sim._published = 11
    assert SimNode._due(sim, resumed + 1.5 / rate) == 12  # then on at the rate from where it resumed
