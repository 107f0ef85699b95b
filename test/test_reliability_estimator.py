"""Estimator faults seen through the monitor, both as separate processes on this session's random
ROS domain, fed synthetic /joint_states by the test: a paused (SIGSTOP) or killed estimator turns the
monitor STALE, a frozen /joint_states its property, within the limit (+ a generous margin), and the
verdicts come back when the estimator resumes or restarts; 10 % of frames lost is no reason to go
blind; robot time jumping back makes the monitor STALE or ERROR until time passes the jump."""
import os
import random
import signal
import subprocess
import sys
import time
import uuid

import pytest

rclpy = pytest.importorskip("rclpy")

from safety_monitor.nodes import qos  # noqa: E402
from safety_monitor.io import messages as m  # noqa: E402

SPECS = """
predicates: [forbidden_contact]
properties:
  - name: no_contact
    category: collision_contact
    formula: "G(!forbidden_contact)"
    recovery: "F(!forbidden_contact)"
"""
TIMEOUT_S = 0.5  # the monitor's predicates_timeout_s
FROZEN_S = 0.5  # the estimator's joint_states_frozen_s
MARGIN_S = 6.0


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """One monitor and estimator for the module: each test starts by waiting until frames flow."""
    from safety_monitor.grounding.grounder import load_default_grounder

    tmp_path = tmp_path_factory.mktemp("chain")

    robot = load_default_grounder(500.0).robot
    joints = robot.required_joints
    ns = "/q" + uuid.uuid4().hex[:8]
    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS)
    env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}
    procs = {}
    counter = {"monitor": 0, "estimator": 0}

    def start(name, *params):
        counter[name] += 1
        args = [sys.executable, "-m", f"safety_monitor.nodes.{name}_node", "--ros-args", "-r", f"__ns:={ns}"]
        for p in params:
            args += ["-p", p]
        out = open(tmp_path / f"{name}{counter[name]}.log", "w")  # noqa: SIM115 - closed with the process
        procs[name] = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)

    def start_estimator():
        start("estimator", f"joint_states_frozen_s:={FROZEN_S}", "joint_states_timeout_s:=0.3",
              "diagnostics_period_s:=0.2")

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
    node = rclpy.create_node("probe", namespace=ns, context=context)
    T = m.rclpy_types()
    diag, predicates = [], []
    node.create_subscription(T.DiagnosticArray, "/diagnostics", lambda msg: diag.extend(
        (s.name.split(": ")[-1], s.level, s.message) for s in msg.status if s.hardware_id == ns.strip("/")),
        qos.DIAGNOSTICS)
    node.create_subscription(T.DiagnosticArray, "safety_monitor/predicates",
                             lambda msg: predicates.append(msg), qos.PREDICATES)
    pub = node.create_publisher(T.JointState, "joint_states", qos.input_qos())
    wrench_pub = node.create_publisher(T.WrenchStamped, "wrist_wrench", qos.input_qos())
    pose_pubs = [node.create_publisher(T.PoseStamped, f"objects/{o}/pose", qos.input_qos()) for o in robot.objects]
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    c = type("Chain", (), {})()
    c.procs, c.diag, c.predicates, c.T, c.start_estimator = procs, diag, predicates, T, start_estimator
    c.t, c.frozen, c.drop = 1.0, False, None

    def publish():
        c.t += 0.002
        if c.drop is not None and c.drop.random() < 0.1:
            return  # this frame's messages are lost
        wiggle = 0.0 if c.frozen else 1e-4 * (round(c.t * 500) % 7)  # frozen: identical values
        msg = T.JointState(name=list(joints), position=[wiggle] * len(joints))
        sec, nanosec = int(c.t), int(round((c.t - int(c.t)) * 1e9))
        for i, pose_pub in enumerate(pose_pubs):  # objects far from the arm and each other, at rest
            pose = T.PoseStamped()
            pose.header.stamp.sec, pose.header.stamp.nanosec = sec, nanosec
            pose.pose.position.x, pose.pose.position.y, pose.pose.orientation.w = 3.0 + i, 3.0, 1.0
            pose_pub.publish(pose)
        wrench = T.WrenchStamped()
        wrench.header.stamp.sec, wrench.header.stamp.nanosec = sec, nanosec
        wrench_pub.publish(wrench)
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        pub.publish(msg)

    def run(seconds=0.0, until=None, timeout=20.0):
        """Publish /joint_states at ~100 Hz wall for `seconds`, or until `until()` (at most `timeout`)."""
        end = time.monotonic() + (timeout if until else seconds)
        while not (until and until()):
            if time.monotonic() >= end:
                assert not until, "timed out: " + "".join(
                    (tmp_path / f"{n}{counter[n]}.log").read_text()[-1500:] for n in counter)
                return time.monotonic()
            publish()
            executor.spin_once(timeout_sec=0.01)
        return time.monotonic()

    def level(name):
        levels = [lvl for n, lvl, _ in diag if n == name]
        return levels[-1] if levels else None

    c.run, c.level = run, level
    try:
        start("monitor", f"specs:={specs}", f"events_log:={tmp_path / 'events.jsonl'}",
              f"predicates_timeout_s:={TIMEOUT_S}", "diagnostics_period_s:=0.2")
        start_estimator()
        yield c
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()
        node.destroy_node()
        context.try_shutdown()


def test_paused_killed_and_frozen_estimator_make_the_monitor_stale_until_it_is_back(chain):
    c, S = chain, chain.T.DiagnosticStatus
    seeing = lambda: c.level("monitor") in (S.OK, S.WARN) and c.level("no_contact") != S.STALE  # noqa: E731
    c.run(until=lambda: len(c.predicates) > 20 and seeing(), timeout=60)  # both started, frames flow

    c.procs["estimator"].send_signal(signal.SIGSTOP)
    paused = time.monotonic()
    assert c.run(until=lambda: c.level("monitor") == S.STALE) - paused < TIMEOUT_S + MARGIN_S
    assert c.level("no_contact") == S.STALE
    c.procs["estimator"].send_signal(signal.SIGCONT)
    c.run(until=seeing)

    c.procs["estimator"].kill()
    c.procs["estimator"].wait()
    killed = time.monotonic()
    assert c.run(until=lambda: c.level("monitor") == S.STALE) - killed < TIMEOUT_S + MARGIN_S
    c.start_estimator()
    c.run(until=seeing, timeout=60)

    c.frozen = True  # the joint driver repeats its last reading
    frozen_t = c.t
    c.run(until=lambda: c.level("estimator inputs") == S.STALE and c.level("no_contact") == S.STALE)
    assert c.t - frozen_t < FROZEN_S + 1.0  # stamp time, as replay decides it (1 s: 500 frames of latency)
    stale_at = len(c.predicates)
    c.run(0.5)
    assert len(c.predicates) > stale_at + 10  # its frames are published as replay scores them: stale, unknown
    assert c.level("no_contact") == S.STALE
    c.frozen = False
    c.run(until=lambda: seeing() and c.level("estimator inputs") != S.STALE)


def test_lost_frames_keep_verdicts_and_time_jumping_back_makes_them_unknown(chain):
    c, S = chain, chain.T.DiagnosticStatus
    seeing = lambda: c.level("monitor") in (S.OK, S.WARN) and c.level("no_contact") == S.OK  # noqa: E731
    c.run(until=lambda: len(c.predicates) > 20 and seeing(), timeout=60)

    c.drop = random.Random(3)  # 10 % of every stream's messages lost
    levels_from = len(c.diag)
    c.run(1.5)
    c.drop = None
    c.run(0.3)
    assert all(lvl != S.STALE for name, lvl, _ in c.diag[levels_from:] if name in ("monitor", "no_contact"))
    assert seeing()

    last = c.t
    c.t -= 0.2  # the robot's clock jumps back 0.2 s
    jumped = time.monotonic()
    assert c.run(until=lambda: c.level("monitor") in (S.STALE, S.ERROR)) - jumped < TIMEOUT_S + MARGIN_S
    assert c.level("no_contact") == S.STALE
    c.run(until=lambda: c.t > last + 0.01 and seeing())  # once time passes the jump, verdicts again
