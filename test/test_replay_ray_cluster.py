"""`replay --ray HOST:PORT` joins a cluster that `ray start --head` made, as docs/ray.md tells users to
(token authentication on: `RAY_AUTH_MODE=token` and the cluster's token in `RAY_AUTH_TOKEN`, for the
head and for the command), and its report is the local run's byte for byte (timings aside), the command
run from a folder of its own with relative paths to the bags and the specs.

The head is a child process in a session of its own, on ports Ray picks (0) and a temp dir of its own
(in the system's temp folder: under pytest's tmp_path, Ray's socket paths pass the 107 bytes a Unix
socket's path may have), so two runs on one machine do not meet. It is stopped by signals to its
processes (SIGTERM to `ray start`, then SIGKILL to what is left of its session), never with `ray stop`
(which stops every Ray cluster on the machine), and the teardown fails when a process of it escaped.
An address nothing listens on is tested in test_replay_ray.py.

Two nodes: a head without CPUs, so every task runs on a second node that `ray start --address` joined, in
mount and UTS namespaces of its own (`unshare`; root only, skipped elsewhere). There it has its own hostname,
and a bind mount gives it another file at one of the command's paths: a bag cut short, or an edited
thresholds.yaml in the package's config. Each such bag fails naming that node, as docs/ray.md says.

Ray gives a node's raylet a fixed 30 s to come up, which a loaded machine passes ("The current node timed out
during startup"): a start that ends so is stopped, its temp dir removed, and started once more (each node has
a temp dir of its own); any other failed start fails the test at once, with its log.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from ray_replay_bags import FAST, GROUP_BY, SPECS, report_files, without_timings, write_bag

import safety_monitor
from safety_monitor.executors import RAY_START_TIMED_OUT
from safety_monitor.files import config_dir

pytest.importorskip("ray", reason="the optional extra: pip install .[ray] (make setup installs it)")

RAY = Path(sys.executable).with_name("ray")  # the CLI beside this interpreter, so the head runs this Ray
HANG_S = 300.0  # only catches a head that hangs starting or stopping; a slow machine stays well inside it
POLL_S = 0.2
ADDRESS_LINE = re.compile(r"ray start --address='[^']*:(?P<port>[0-9]+)'")  # printed once the head is up
RUNNING = re.compile("Ray runtime started")  # printed once a node that joined is up
BAGS = ["runs/policy_a_1", "runs/policy_b_1"]


@dataclass(frozen=True)
class Head:
    """A running head node: the address to join it at and the environment that joins it."""

    address: str
    env: dict[str, str]
    temp_dir: Path
    session: int  # its `ray start`'s process id, which leads the session of its processes


def _environment() -> dict[str, str]:
    """This environment with token authentication on and a token of this test's own (never the user's
    ~/.ray/auth_token), and this checkout importable by the head's workers."""
    checkout = str(Path(safety_monitor.__file__).resolve().parents[1])
    others = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != checkout]
    path = os.pathsep.join([checkout, *others])
    return {**os.environ, "PYTHONPATH": path, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


def _head_command(temp_dir: Path, cpus: int = 2) -> list[str]:
    """`ray start --head`, every port Ray's (0: a free one), the dashboard off, `cpus` CPUs."""
    command = [str(RAY), "start", "--head", "--block", f"--num-cpus={cpus}", "--disable-usage-stats"]
    command += ["--include-dashboard=false", f"--temp-dir={temp_dir}", "--port=0", *_NODE_PORTS]
    if importlib.util.find_spec("grpc") is not None:  # Ray Client installed: its server takes 10001 unless told
        command.append(f"--ray-client-server-port={_free_port()}")
    return command


_NODE_PORTS = [
    f"--{option}=0"
    for option in (
        "node-manager-port",
        "object-manager-port",
        "min-worker-port",
        "max-worker-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
    )
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_ready(
    what: str, node: subprocess.Popen[bytes], log: Path, ready: re.Pattern[str]
) -> re.Match[str] | None:
    """`ready` in the log of a starting node (`ray start` prints it once the node is up), or None if the start
    gave up as Ray's does when its raylet is not up within Ray's fixed 30 s; any other end fails the test."""
    deadline = time.monotonic() + HANG_S
    while True:
        ended = node.poll() is not None
        text = log.read_text()  # read after the poll: an ended start's log is complete
        if found := ready.search(text):
            return found
        if ended and RAY_START_TIMED_OUT in text:
            return None
        if ended:
            pytest.fail(f"{what} exited with {node.returncode}:\n{text[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} printed no {ready.pattern!r} within {HANG_S:.0f} s:\n{text[-3000:]}")
        time.sleep(POLL_S)


@dataclass(frozen=True)
class Process:
    """A process found in /proc: its id, its session and the start of its command line."""

    pid: int
    session: int
    command: str


def _processes_of(session: int, temp_dir: Path, spared: int | None = None) -> list[Process]:
    """The live processes (zombies aside) of a node's session (`ray start` leads it; Ray's workers are
    in process groups of their own within it) or naming its temp dir, but for those of the session `spared`
    (the head's, when a second node shares its temp dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):  # a process that ended while being read
            state, _parent, _group, sid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:4]
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if state != "Z" and int(sid) != spared and (int(sid) == session or str(temp_dir) in command):
                found.append(Process(int(entry.name), int(sid), command[:200]))
    return found


def _stop(head: subprocess.Popen[bytes], temp_dir: Path, spared: int | None = None) -> None:
    """SIGTERM to `ray start` (it drains its node and stops what it started), then SIGKILL to its process
    group and to whatever else of its session is left. A process naming the temp dir outside that
    session escaped it: killed too, and it fails the test, as does any process of the head left at the end."""
    head.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        head.wait(timeout=HANG_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(head.pid, signal.SIGKILL)
    head.wait()
    escaped = []
    for process in _processes_of(head.pid, temp_dir, spared):
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
        if process.session != head.pid:
            escaped.append(process)
    deadline = time.monotonic() + HANG_S
    while (left := _processes_of(head.pid, temp_dir, spared)) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    assert not escaped, f"processes of the head outside its session: {escaped}"
    assert not left, f"processes of the head that outlived SIGKILL: {left}"


Command = Callable[[Path], list[str]]  # a node's start, given its temp dir


@dataclass(frozen=True)
class Node:
    """A started node: what its log said once it was up, its temp dir, and its start's process id (which leads
    the session of its processes)."""

    ready: re.Match[str]
    temp_dir: Path
    session: int


@contextlib.contextmanager
def _started_node(
    what: str,
    command: Command,
    folder: Path,
    env: dict[str, str],
    ready: re.Pattern[str],
    spared: int | None = None,
    first: Command | None = None,
) -> Iterator[Node]:
    """`command` in a session and a temp dir of its own, logging to `folder`, until its log says `ready`; stopped on
    leaving (`spared`: as `_stop`), its temp dir removed. A start that Ray gives up (its raylet not up within Ray's
    fixed 30 s, which a loaded machine passes) is stopped, its temp dir removed, and started once more. `first`:
    another command for the first start (a test's)."""
    folder.mkdir()
    for attempt, start in enumerate([first or command, command], 1):
        temp_dir = Path(tempfile.mkdtemp(prefix="sm_ray_"))
        log = folder / f"ray_start_{attempt}.log"
        try:
            with log.open("wb") as out:
                process = subprocess.Popen(
                    start(temp_dir), cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            try:
                if (found := _wait_until_ready(what, process, log, ready)) is not None:
                    yield Node(found, temp_dir, process.pid)
                    return
            finally:
                _stop(process, temp_dir, spared)
        finally:
            shutil.rmtree(temp_dir, ignore_errors=True)
    pytest.fail(f"{what} timed out twice, as Ray's start does on a loaded machine:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def _started_head(folder: Path, cpus: int = 2, first: Command | None = None) -> Iterator[Head]:
    """A head node started as docs/ray.md says, in `folder` (not the command's), stopped on leaving."""
    env = _environment()
    with _started_node(
        "ray start --head", partial(_head_command, cpus=cpus), folder, env, ADDRESS_LINE, first=first
    ) as node:
        yield Head(f"127.0.0.1:{node.ready['port']}", env, node.temp_dir, node.session)


@pytest.fixture
def head(tmp_path: Path) -> Iterator[Head]:
    """A head node of 2 CPUs."""
    with _started_head(tmp_path / "head") as started:
        yield started


NODE = "node-b"
# In namespaces of its own: its hostname, then its file at the command's path, then `ray start` (exec: so it
# is the process `_stop` signals, leading its session)
_ON_ITS_OWN = 'hostname "$1" && mount --bind "$2" "$3" && shift 3 && exec "$@"'


def _can_unshare() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = ["unshare", "--mount", "--uts", "--propagation", "private", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


@contextlib.contextmanager
def _second_node(head: Head, folder: Path, own: Path, at: Path) -> Iterator[None]:
    """A node of 2 CPUs joined to `head` with `ray start --address`, named NODE, its file at `at` being `own`, its
    temp dir its own; returns once it runs (`ray start` says so)."""

    def command(temp_dir: Path) -> list[str]:
        command = ["unshare", "--mount", "--uts", "--propagation", "private", "sh", "-c", _ON_ITS_OWN, "sh"]
        command += [NODE, str(own), str(at), str(RAY), "start", f"--address={head.address}", "--block"]
        return command + ["--num-cpus=2", "--disable-usage-stats", f"--temp-dir={temp_dir}", *_NODE_PORTS]

    with _started_node("the second node", command, folder, head.env, RUNNING, spared=head.session):
        yield


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[tuple[Head, Path]]:
    """A head without CPUs, the bags and specs in the command's folder, and `node(own, at)` to join the
    second node."""
    if not _can_unshare():
        pytest.skip("needs root and unshare (mount and UTS namespaces) for a second node with its own files")
    folder = tmp_path / "evaluation"
    for bag, frames in zip(BAGS, (60, 90), strict=True):
        write_bag(folder / bag, frames)
    (folder / "specs.yaml").write_text(SPECS)
    with _started_head(tmp_path / "head", cpus=0) as started:
        yield started, folder


def _replay(folder: Path, env: dict[str, str], report: str, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "safety_monitor.cli", "replay", *BAGS, "--specs", "specs.yaml"]
    command += [*FAST, *GROUP_BY, "--report", report, *options]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)


def test_joining_a_started_cluster_by_address_gives_the_local_report(head, tmp_path):
    folder = tmp_path / "evaluation"  # the command's folder, with the bags and specs at relative paths
    for bag, frames in zip(BAGS, (60, 90), strict=True):
        write_bag(folder / bag, frames)
    (folder / "specs.yaml").write_text(SPECS)
    assert not list(head.temp_dir.glob("session_*/logs/python-core-driver-*"))  # no driver has joined yet

    local = _replay(folder, head.env, "local")
    on_ray = _replay(folder, head.env, "on_ray", "--ray", head.address)

    assert (local.returncode, on_ray.returncode) == (0, 0), on_ray.stderr
    assert list(head.temp_dir.glob("session_*/logs/python-core-driver-*")), "the command did not join the head"
    assert without_timings(folder / "on_ray" / "report.json") == without_timings(folder / "local" / "report.json")
    files = report_files(folder / "local")
    assert Path("summary.md") in files and Path("episodes.csv") in files
    assert report_files(folder / "on_ray") == files
    for name in files:
        assert (folder / "on_ray" / name).read_bytes() == (folder / "local" / name).read_bytes(), name
    assert on_ray.stdout.replace("on_ray/", "local/") == local.stdout
    assert on_ray.stderr == local.stderr


def test_a_node_with_another_copy_of_a_bag_fails_that_bag_naming_itself(two_nodes, tmp_path):
    head, folder = two_nodes
    bag = folder / BAGS[1]
    own = tmp_path / "its_copy"
    shutil.copytree(bag, own)
    [data] = own.glob("*.mcap")
    data.write_bytes(data.read_bytes()[:-100])  # as if its sync stopped short
    with _second_node(head, tmp_path / "node", own, bag):
        on_ray = _replay(folder, head.env, "on_ray", "--ray", head.address)
    assert on_ray.returncode == 1, on_ray.stderr  # a failed bag: reported, and the rest scored
    size = data.stat().st_size + 100
    assert on_ray.stderr.splitlines()[-1] == (
        f"safety-monitor replay: failed: {BAGS[1]}: the copy on {NODE} is not the command's ({data.name} is "
        f"{size - 100} bytes here, {size} on the command's machine): put the same bags at the same path on every node"
    )
    assert "1 of 2 bag(s) scored, 1 failed" in on_ray.stdout


def test_a_node_with_an_edited_default_config_fails_every_bag_naming_itself_and_the_file(two_nodes, tmp_path):
    head, folder = two_nodes
    thresholds = config_dir() / "thresholds.yaml"
    own = tmp_path / "thresholds.yaml"
    own.write_text(thresholds.read_text() + "# tuned on this node\n")
    with _second_node(head, tmp_path / "node", own, thresholds):
        on_ray = _replay(folder, head.env, "on_ray", "--ray", head.address)
    assert on_ray.returncode == 1, on_ray.stderr
    failed = [line for line in on_ray.stderr.splitlines() if line.startswith("safety-monitor replay: failed: ")]
    assert failed == [
        f"safety-monitor replay: failed: {bag}: ExecutorError: Ray node {NODE} has another safety_monitor "
        "installation than the command (config/thresholds.yaml differs): install the same commit on every node"
        for bag in BAGS
    ]


# ------------------------------------------------------------------------------ a node's start that Ray gives up
def _timing_out(temp_dir: Path) -> list[str]:
    """A node's start that fails as Ray's does when its raylet is not up within Ray's fixed 30 s: it leaves a
    process of its session running (Ray's agents outlive it) and a session folder in its temp dir, prints Ray's
    exception and exits 1."""
    script = 'mkdir "$1/session_left"; sleep 300 & echo "session $$, temp dir $1"; echo "Exception: $2"; exit 1'
    return ["sh", "-c", script, "sh", str(temp_dir), f"{RAY_START_TIMED_OUT}. This could happen because ..."]


def _up(temp_dir: Path) -> list[str]:
    """A node's start that comes up at once: it says so as `ray start` does and blocks, as `--block` does."""
    return ["sh", "-c", 'mkdir "$1/session_up" && echo "Ray runtime started." && exec sleep 300', "sh", str(temp_dir)]


def test_a_node_start_that_ray_gives_up_is_cleaned_up_and_started_once_more(tmp_path):
    """The fixture's own start and stop, with quick stand-ins for `ray start` (the other tests start Ray's)."""
    folder = tmp_path / "node"
    with _started_node("a node", _up, folder, dict(os.environ), RUNNING, first=_timing_out) as node:
        first = (folder / "ray_start_1.log").read_text()
        session, temp_dir = re.search(r"session (\d+), temp dir (\S+)", first).groups()
        assert not _processes_of(int(session), Path(temp_dir)), "the first start's processes are left"  # its sleep
        assert not Path(temp_dir).exists(), "the first start's temp dir is left"
        assert (folder / "ray_start_2.log").read_text() == "Ray runtime started.\n"
        assert (node.temp_dir / "session_up").is_dir() and _processes_of(node.session, node.temp_dir)
    assert not node.temp_dir.exists() and not _processes_of(node.session, node.temp_dir)


def test_a_node_start_that_fails_otherwise_fails_the_test_at_once_with_its_log(tmp_path):
    def failing(temp_dir: Path) -> list[str]:
        return ["sh", "-c", 'echo "ValueError: --port: no such option"; exit 2']

    with pytest.raises(pytest.fail.Exception, match=r"exited with 2:\nValueError: --port: no such option"):
        with _started_head(tmp_path / "head", first=failing):
            pass
    assert [log.name for log in (tmp_path / "head").iterdir()] == ["ray_start_1.log"]  # no second start
