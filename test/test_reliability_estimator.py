"""Estimator faults seen through the monitor, both as separate processes on this session's random
ROS domain, fed synthetic /joint_states by the test: a paused (SIGSTOP) or killed estimator turns the
monitor STALE, a frozen /joint_states its property (in stamp time, as replay decides it), and the
verdicts come back when the estimator resumes or restarts; 10 % of frames lost is no reason to go
blind; robot time jumping back makes the monitor STALE or ERROR until time passes the jump.
No assertion depends on how fast the machine is: the test publishes until a condition holds (a
safety net only a broken run reaches) and judges frames by their stamps."""

import os
import random
import signal
import subprocess
import sys
import time
import uuid

import pytest

rclpy = pytest.importorskip("rclpy")

from safety_monitor.io import messages as m  # noqa: E402
from safety_monitor.nodes import qos  # noqa: E402

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
WAIT_S = 120.0  # only a broken run waits this long for a condition: a slow, loaded machine passes far below it


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
        start(
            "estimator",
            f"joint_states_frozen_s:={FROZEN_S}",
            "joint_states_timeout_s:=0.3",
            "diagnostics_period_s:=0.2",
        )

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
    node = rclpy.create_node("probe", namespace=ns, context=context)
    T = m.rclpy_types()
    diag, predicates = [], []
    node.create_subscription(
        T.DiagnosticArray,
        "/diagnostics",
        lambda msg: diag.extend(
            (s.name.split(": ")[-1], s.level, s.message) for s in msg.status if s.hardware_id == ns.strip("/")
        ),
        qos.DIAGNOSTICS,
    )
    node.create_subscription(
        T.DiagnosticArray,
        "safety_monitor/predicates",
        lambda msg: predicates.append(m.decode_predicates(msg)),
        qos.PREDICATES,
    )
    pub = node.create_publisher(T.JointState, "joint_states", qos.input_qos())
    wrench_pub = node.create_publisher(T.WrenchStamped, "wrist_wrench", qos.input_qos())
    pose_pubs = [node.create_publisher(T.PoseStamped, f"objects/{o}/pose", qos.input_qos()) for o in robot.objects]
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    c = type("Chain", (), {})()
    c.procs, c.diag, c.predicates, c.T, c.start_estimator = procs, diag, predicates, T, start_estimator
    c.t, c.frozen, c.drop, c.below = 1.0, False, None, None

    def publish():
        c.t += 0.002
        if c.below is not None and c.t >= c.below:  # held behind a stamp, however many frames are sent
            c.t -= 0.1
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

    def run(until):
        """Publish a frame per spin (at most ~100 Hz wall) until `until()`."""
        end = time.monotonic() + WAIT_S
        while not until():
            assert time.monotonic() < end, "timed out: " + "".join(
                (tmp_path / f"{n}{counter[n]}.log").read_text()[-1500:] for n in counter
            )
            publish()
            executor.spin_once(timeout_sec=0.01)

    def level(name):
        levels = [lvl for n, lvl, _ in diag if n == name]
        return levels[-1] if levels else None

    c.run, c.level = run, level
    try:
        start(
            "monitor",
            f"specs:={specs}",
            f"events_log:={tmp_path / 'events.jsonl'}",
            f"predicates_timeout_s:={TIMEOUT_S}",
            "diagnostics_period_s:=0.2",
        )
        start_estimator()
        yield c
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()
        executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        node.destroy_node()
        context.try_shutdown()


def test_paused_killed_and_frozen_estimator_make_the_monitor_stale_until_it_is_back(chain):
    c, S = chain, chain.T.DiagnosticStatus
    seeing = lambda: c.level("monitor") in (S.OK, S.WARN) and c.level("no_contact") != S.STALE  # noqa: E731
    c.run(lambda: len(c.predicates) > 20 and seeing())  # both started, frames flow

    c.procs["estimator"].send_signal(signal.SIGSTOP)
    c.run(lambda: c.level("monitor") == S.STALE)
    assert c.level("no_contact") == S.STALE
    c.procs["estimator"].send_signal(signal.SIGCONT)
    c.run(seeing)

    c.procs["estimator"].kill()
    c.procs["estimator"].wait()
    c.run(lambda: c.level("monitor") == S.STALE)
    c.start_estimator()
    c.run(seeing)

    c.frozen = True  # the joint driver repeats its last reading
    frozen_t, frozen_from = c.t, len(c.predicates)

    def late():
        return [f for f in c.predicates[frozen_from:] if f.t > frozen_t + FROZEN_S + 0.005]

    # frames past the limit in stamp time (not a wall-clock STALE, which a slow machine may show first); the
    # frames go on, published as replay scores them
    c.run(lambda: len(late()) > 10 and c.level("estimator inputs") == S.STALE and c.level("no_contact") == S.STALE)
    frames = [f for f in c.predicates[frozen_from:] if f.t > frozen_t + 1e-9]
    # stale from the limit on, in stamp time (the last change was at most 7 frames before frozen_t)
    assert all("joint_states" not in f.stale for f in frames if f.t < frozen_t + FROZEN_S - 0.015)
    assert all("joint_states" in f.stale and f.unknown == set(f.values) for f in late())
    c.frozen = False
    c.run(lambda: seeing() and c.level("estimator inputs") != S.STALE)


def test_lost_frames_keep_verdicts_and_time_jumping_back_makes_them_unknown(chain):
    c, S = chain, chain.T.DiagnosticStatus
    seeing = lambda: c.level("monitor") in (S.OK, S.WARN) and c.level("no_contact") == S.OK  # noqa: E731
    c.run(lambda: len(c.predicates) > 20 and seeing())

    c.drop = random.Random(3)  # 10 % of every stream's messages lost, for 300 frames of stamp time
    levels_from, frames_from, lossy_t = len(c.diag), len(c.predicates), c.t
    c.run(lambda: c.t >= lossy_t + 0.6)
    c.drop = None
    lossy = [f for f in c.predicates[frames_from:] if lossy_t < f.t <= lossy_t + 0.6]
    # the estimator grounds every frame it gets: fresh joints, the property's predicate known
    assert lossy and all("joint_states" not in f.stale and "forbidden_contact" not in f.unknown for f in lossy)
    clean_from = len(c.predicates)
    c.run(lambda: len(c.predicates) > clean_from + 20 and seeing())
    statuses = [(name, lvl, msg) for name, lvl, msg in c.diag[levels_from:] if name in ("monitor", "no_contact")]
    # the monitor's wall-clock watchdog hearing nothing means a process stalled past its limit (a loaded
    # machine): going blind was right then; otherwise lost frames never made a verdict unknown
    if not any("no advancing predicates for" in msg for _, _, msg in statuses):
        assert all(lvl != S.STALE for _, lvl, _ in statuses)

    last = c.t
    c.t -= 0.2  # the robot's clock jumps back 0.2 s, and stays behind until the monitor has said so
    c.below = last
    c.run(lambda: c.level("monitor") in (S.STALE, S.ERROR))
    assert c.level("no_contact") == S.STALE
    c.below = None
    c.run(lambda: c.t > last + 0.01 and seeing())  # once time passes the jump, verdicts again
