"""Helpers for tests that run the nodes as processes, the way `ros2 run` and `ros2 launch` start them, and
watch them from a probe node: statuses on /diagnostics, predicates, events, heartbeat and episode markers.

Processes enter through the console scripts' own entry points (`safety_monitor.nodes.programs`), so a
signal during their imports meets what a user's Ctrl-C meets. Every wait is for progress seen on a topic
or in a file; the deadline only ends a broken run.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import rclpy

from safety_monitor.io import messages as m
from safety_monitor.nodes import qos

WAIT_S = 300.0  # only a broken run waits this long: a slow, loaded machine passes far below it
# A node still running this long after its stop signal is probably hung in rcl's or Fast DDS's teardown (which
# runtime.TEARDOWN_LIMIT_S ends at 20 s with Python's stacks only): its native stacks are saved first (gdb)
NATIVE_STACKS_AFTER_S = 12.0
ENTRY = (
    "import sys; from safety_monitor.nodes import programs; main = getattr(programs, sys.argv.pop(1)); sys.exit(main())"
)
LEVELS = {0: "OK", 1: "WARN", 2: "ERROR", 3: "STALE"}


def fresh_domain() -> int:
    return random.SystemRandom().randint(101, 200)


def fresh_namespace() -> str:
    return "/p" + uuid.uuid4().hex[:8]


class Probe:
    """A node in the robot's namespace on its own context and domain, recording what the nodes publish."""

    def __init__(self, ns: str, domain: int) -> None:
        self.ns, self.hw = ns, ns.strip("/").replace("/", "_") or "robot"  # the nodes' hardware_id rule
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node("probe", namespace=ns, context=self.context)
        T = m.rclpy_types()
        self.diagnostics: list[tuple[str, str, str, str]] = []  # (hardware_id, name, level, message)
        self.events: list[dict] = []
        self.event_ids: set[str] = set()
        self.predicates = 0
        self.predicate_ids: set[str] = set()
        self.heartbeat_ids: set[str] = set()
        self.beats = 0  # heartbeats received
        self.marker_ids: set[str] = set()
        self.ends = 0  # end markers seen
        self.missed_frames = 0  # the estimator's load.missed_frames, summed over its periods
        self.rollout = 0  # the monitor's summary: the rollout it is in (episodes finished)
        self.estimator_issues: dict[str, int] = {}  # the estimator's issues.<kind> counts, the latest seen
        n = self.node
        n.create_subscription(T.DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS)
        n.create_subscription(T.DiagnosticArray, "safety_monitor/events", self._on_events, qos.EVENTS)
        n.create_subscription(T.DiagnosticArray, "safety_monitor/predicates", self._on_predicates, qos.PREDICATES)
        n.create_subscription(T.DiagnosticArray, "safety_monitor/heartbeat", self._on_heartbeat, qos.DIAGNOSTICS)
        n.create_subscription(T.DiagnosticArray, "safety_monitor/episode", self._on_marker, qos.EPISODE)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(n)

    def _on_diagnostics(self, msg) -> None:
        for s in msg.status:
            if not s.name.startswith(f"safety_monitor/{self.hw}:") and s.hardware_id != self.hw:
                continue  # another test's robot
            self.diagnostics.append(
                (s.hardware_id, s.name, LEVELS[ord(s.level) if isinstance(s.level, bytes) else s.level], s.message)
            )
            for kv in s.values:
                if kv.key == "load.missed_frames":
                    self.missed_frames += int(kv.value)
                elif kv.key == "rollout" and s.name.endswith(": monitor"):
                    self.rollout = max(self.rollout, int(kv.value))
                elif kv.key.startswith("issues.") and s.name.endswith(": estimator inputs"):
                    kind = kv.key.removeprefix("issues.")
                    self.estimator_issues[kind] = max(self.estimator_issues.get(kind, 0), int(kv.value))

    def _on_events(self, msg) -> None:
        self.event_ids.update(s.hardware_id for s in msg.status)
        self.events.extend(m.decode_events(msg))

    def _on_heartbeat(self, msg) -> None:
        self.beats += 1
        self.heartbeat_ids.update(s.hardware_id for s in msg.status)

    def _on_predicates(self, msg) -> None:
        self.predicates += 1
        self.predicate_ids.update(s.hardware_id for s in msg.status)

    def _on_marker(self, msg) -> None:
        self.marker_ids.update(s.hardware_id for s in msg.status)
        self.ends += sum(s.message == "end" for s in msg.status)

    def nodes_seen(self) -> set[str]:
        return {name for name, ns in self.node.get_node_names_and_namespaces() if ns == self.ns}

    def until(self, condition: Callable[[], bool], procs: dict[str, Proc] | None = None, what: str = "") -> None:
        """Spin until `condition` holds; a process that exits meanwhile fails the wait with its output."""
        deadline = time.monotonic() + WAIT_S
        while not condition():
            for proc in (procs or {}).values():
                assert proc.popen.poll() is None, (
                    f"{proc.name} exited ({proc.popen.returncode}) waiting for {what}:\n{proc.output()[-3000:]}"
                )
            assert time.monotonic() < deadline, f"no {what} within {WAIT_S} s"
            self.executor.spin_once(timeout_sec=0.05)

    def close(self) -> None:
        self.executor.shutdown()  # closes its callback generator first: it holds the entities in use (rclpy)
        self.node.destroy_node()
        self.context.try_shutdown()


class Proc:
    """One node process (its output in a file); `group`: join that process group, else lead a new one.
    `command`: run this instead of a node (`safety-monitor ...` arguments)."""

    def __init__(
        self,
        program: str,
        ns: str,
        domain: int,
        out_dir: Path,
        params: list[str],
        group: int | None = None,
        name: str | None = None,
        command: list[str] | None = None,
    ) -> None:
        from safety_monitor.nodes.run_inprocess import nodes_yaml

        self.name = name or program
        self.log = out_dir / f"{self.name}.log"
        if command is not None:  # the console script's entry point
            args = [sys.executable, "-c", "import sys; from safety_monitor.cli import main; sys.exit(main())", *command]
        else:
            args = [
                sys.executable,
                "-c",
                ENTRY,
                program,
                "--ros-args",
                "-r",
                f"__ns:={ns}",
                "--params-file",
                str(nodes_yaml()),
            ]
            for p in params:
                args += ["-p", p]
        # faulthandler: a crash, or the SIGABRT `wait` sends a process that does not exit, writes every thread's
        # stack to the log
        env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
        with open(self.log, "w") as out:
            self.popen = subprocess.Popen(
                args, env=env, stdout=out, stderr=subprocess.STDOUT, process_group=0 if group is None else group
            )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def holds_stop_signals(self) -> bool:
        """The entry point has taken SIGTERM (Linux: /proc's caught-signal mask): imports are under way."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return False
        caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
        return bool(caught & (1 << (signal.SIGTERM - 1)))

    def wait(self, since: float | None = None) -> int:
        """Its exit code; a process still running after WAIT_S is hung: aborted, so the failure shows where.
        `since`: when it was told to stop (time.monotonic()), if before this call. Still running
        NATIVE_STACKS_AFTER_S after that, it gets its native stacks saved (`native_stacks`)."""
        start = time.monotonic() if since is None else since
        try:
            return self.popen.wait(timeout=max(0.0, start + NATIVE_STACKS_AFTER_S - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.native_stacks()
        try:
            return self.popen.wait(timeout=max(0.0, start + WAIT_S - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.popen.send_signal(signal.SIGABRT)
            try:
                self.popen.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
            raise AssertionError(
                f"{self.name} did not exit within {WAIT_S:.0f} s; its log, ending with its threads' stacks when "
                f"aborted:\n{self.output()[-8000:]}"
            ) from None

    def native_stacks(self) -> None:
        """Every thread's native stack (gdb, where installed: the Fast DDS and rmw threads a Python dump does
        not show) and thread names, into `<name>.native.txt` beside the log and onto stderr, which pytest
        shows with a failure. The process goes on after gdb detaches."""
        gdb = shutil.which("gdb")
        if gdb is None or self.popen.poll() is not None:
            return
        names = []
        for task in sorted(Path(f"/proc/{self.pid}/task").glob("*")):
            try:
                names.append(f"{task.name} {(task / 'comm').read_text().strip()}")
            except OSError:
                continue
        try:
            run = subprocess.run(
                [gdb, "-p", str(self.pid), "-batch", "-ex", "info threads", "-ex", "thread apply all bt"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            stacks = run.stdout + run.stderr
        except subprocess.TimeoutExpired:
            stacks = "gdb did not finish within 60 s"
        text = f"{self.name} (pid {self.pid}) threads:\n" + "\n".join(names) + "\n\n" + stacks
        path = self.log.with_name(f"{self.name}.native.txt")
        path.write_text(text)
        print(
            f"{self.name} still running {NATIVE_STACKS_AFTER_S:.0f} s after its stop; native stacks ({path}):\n{text}",
            file=sys.stderr,
        )

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()


def whole_lines(log: Path) -> list[dict]:
    """Every line of an event log, each a whole JSON object ending in a newline."""
    if not log.exists():
        return []
    data = log.read_text()
    assert not data or data.endswith("\n"), f"torn last line: {data[-200:]!r}"
    return [json.loads(line) for line in data.splitlines()]


@contextmanager
def clock_counts(*topics: str) -> Iterator[dict[str, int]]:
    """Messages heard on each /clock-typed topic while the block runs, by a probe spinning in its own context
    (a namespaced run must publish only on its own NS/clock)."""
    import threading

    from rosgraph_msgs.msg import Clock

    context = rclpy.Context()
    rclpy.init(context=context)
    probe = rclpy.create_node("clock_probe", context=context)
    heard = dict.fromkeys(topics, 0)
    for topic in heard:
        probe.create_subscription(Clock, topic, lambda _, t=topic: heard.__setitem__(t, heard[t] + 1), 10)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(probe)
    spinning = threading.Thread(target=executor.spin, daemon=True)
    spinning.start()
    try:
        yield heard
    finally:
        executor.shutdown()
        spinning.join()
        probe.destroy_node()
        context.try_shutdown()
