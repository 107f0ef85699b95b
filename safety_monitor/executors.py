"""Where independent tasks run: in this process, in local worker processes, or as Ray tasks on a cluster.

Replay (one bag), `equiv --candidates` (one candidate) and `ctl` (one trace file) hand the same pure
function to whichever executor the command line chose, so a result never depends on where it ran. Each
executor yields a `Done` per task as tasks finish; `in_order` puts them back in input order. Ray is an
optional extra (`pip install .[ray]`), imported only when `--ray` is given.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import multiprocessing
import os
import re
import signal
import socket
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Generic, TypeVar

from safety_monitor.errors import ExecutorError, SourceError
from safety_monitor.installation import Installation, first_few, this_installation

T = TypeVar("T")
R = TypeVar("R")

INSTALL_RAY = "pip install 'safety_monitor[ray]' (or: pip install ray)"
# Ray starts its workers at niceness 15 (a cluster's nodes are its own); on a machine shared with other work
# that starves them, where `--jobs N` processes run at the command's priority. A local cluster does as those.
LOCAL_WORKER_NICENESS = 0
IN_FLIGHT_PER_CPU = 2  # tasks handed at a time to a cluster of our own, per CPU: one running, one queued
CONNECT_TIMEOUT_S = 10.0  # a cluster's head answers a TCP connect at once; longer means nothing listens
# Ray 2.60 raises its start and join failures as Exception, ConnectionError or RuntimeError: only their texts tell them
# apart. A node's start gives its raylet a fixed 30 s to register (ray/_private/node.py), which a busy machine passes.
RAY_START_TIMED_OUT = "The current node timed out during startup"
RAY_START_WAIT_S = 30
_NO_CLUSTER_FOUND = "Could not find any running Ray instance"  # `auto`: none on this machine (ray/_private/services.py)
_VERSIONS = re.compile(r"Version mismatch:.*?Ray: (\S+)\s+Python: (\S+).*?Ray: (\S+)\s+Python: (\S+)", re.DOTALL)
_LOCAL_TIMED_OUT = f"Ray's local cluster did not start within its {RAY_START_WAIT_S} s (machine busy?)"
_ADDRESS = re.compile(r"(?P<scheme>ray://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})")


@dataclass(frozen=True)
class Done(Generic[R]):
    """One finished task, by its index in the input: its result, or the exception it raised, or (`lost`)
    why its worker died twice. `retried`: why its first worker died, when it ran a second time."""

    index: int
    result: R | None = None
    error: Exception | None = None
    retried: str | None = None
    lost: str | None = None


class Executor(ABC):
    """Runs `fn` on each item; `fn` and the items must pickle, except for the in-process executor."""

    in_process = False  # True: fn runs in this process (so it may drive a progress bar of its own)

    @abstractmethod
    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[Done[R]]:
        """One Done per item, as each finishes (any order)."""

    def close(self) -> None:  # noqa: B027 (most executors hold nothing between maps)
        """Release the cluster connection, for an executor that holds one."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Serial(Executor):
    """Each task in turn, here."""

    in_process = True

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[Done[R]]:
        for i, item in enumerate(items):
            try:
                yield Done(i, fn(item))
            except Exception as exc:
                yield Done(i, error=exc)


class Processes(Executor):
    """`jobs` local worker processes, spawned clean, each fed one task at a time through a pipe of its own,
    so a worker that dies (killed by the OOM killer, a crash in a native library) names the task it was
    running: that task runs once more in a fresh process, the others go on. The standard library's pool
    cannot do this: one dead worker breaks it, failing every task in flight."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[Done[R]]:
        # spawn: workers start clean (no inherited MuJoCo or thread state); they compile nothing twice because
        # the DFA cache is on disk. A worker leaves Ctrl-C to this process, which stops the batch.
        context = multiprocessing.get_context("spawn")
        todo = collections.deque(range(len(items)))  # a task to run again goes first
        idle: list[_Worker] = []
        busy: dict[_Worker, int] = {}  # worker -> index of the task it runs
        lost_once: dict[int, str] = {}
        try:
            while todo or busy:
                while todo and len(busy) < self.jobs:
                    index = todo.popleft()
                    try:
                        busy[_give(context, idle, fn, items[index])] = index
                    except ExecutorError as exc:  # the task does not pickle: it fails, the others go on
                        yield Done(index, error=exc, retried=lost_once.get(index))
                for worker in _answered(busy):
                    index = busy.pop(worker)
                    reply = worker.reply()
                    if reply is not None:
                        idle.append(worker)
                        ok, value = reply
                        retried = lost_once.get(index)
                        yield Done(index, value, retried=retried) if ok else Done(index, error=value, retried=retried)
                    elif index in lost_once:
                        yield Done(index, retried=lost_once[index], lost=worker.end())
                    else:  # its worker died: a fresh one runs the task, once
                        lost_once[index] = worker.end()
                        todo.appendleft(index)
        finally:  # done, Ctrl-C, or the caller stopped reading: the busy workers' tasks are dropped
            for worker in busy:
                worker.process.kill()
            for worker in [*idle, *busy]:
                worker.end()


@dataclass(eq=False)
class _Worker:
    """One local worker process and this process's end of its pipe."""

    process: BaseProcess
    conn: Connection

    @classmethod
    def start(cls, context: Any) -> _Worker:
        ours, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs,), daemon=True)
        process.start()
        theirs.close()
        return cls(process, ours)

    def give(self, fn: Callable[[T], R], item: T) -> bool:
        """Hand it a task; False if it has died meanwhile. A task that does not pickle is an ExecutorError,
        and the worker stays as it was: `send` pickles before it writes, so nothing reached the pipe."""
        try:
            self.conn.send((fn, item))
        except OSError:
            return False
        except Exception as exc:  # pickle raises PicklingError, TypeError, AttributeError, ...
            raise ExecutorError(f"a task cannot be sent to a worker process: {type(exc).__name__}: {exc}") from None
        return True

    def reply(self) -> tuple[bool, Any] | None:
        """Its task's (True, result) or (False, exception); None if it died without one."""
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            return None
        except Exception as exc:  # the reply does not unpickle here (an exception class of its own)
            return False, ExecutorError(f"a worker's reply cannot be read: {type(exc).__name__}: {exc}")

    def end(self) -> str:
        """Close its pipe (an idle worker then returns), wait for it, and say how it ended."""
        self.conn.close()
        self.process.join()
        code = self.process.exitcode or 0
        return f"killed by {_signal_name(-code)}" if code < 0 else f"exit code {code}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # a real-time signal has no name
        return f"signal {number}"


def _give(context: Any, idle: list[_Worker], fn: Callable[[T], R], item: T) -> _Worker:
    """The worker now running `item`: an idle one still alive, or a new one. If the task does not pickle,
    the worker goes back to `idle` (so it is ended with the others) and the ExecutorError is raised."""
    while idle:
        worker = idle.pop()
        try:
            if worker.process.is_alive() and worker.give(fn, item):
                return worker
        except ExecutorError:
            idle.append(worker)
            raise
        worker.end()
    worker = _Worker.start(context)
    try:
        worker.give(fn, item)  # a new worker dead already shows as dead in `_answered`
    except ExecutorError:
        idle.append(worker)
        raise
    return worker


def _answered(busy: dict[_Worker, int]) -> list[_Worker]:
    """The busy workers that replied or died, once at least one has."""
    ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
    return [w for w in busy if w.conn in ready or w.process.sentinel in ready]


def _serve(conn: Connection) -> None:
    """A worker's life: run each task it is handed and send back what came of it, until its pipe closes."""
    _exit_quietly_on_interrupt()
    while True:
        try:
            fn, item = conn.recv()
        except EOFError:
            return
        try:
            reply: tuple[bool, Any] = (True, fn(item))
        except Exception as exc:
            reply = (False, exc)
        try:
            conn.send(reply)
        except Exception as exc:  # a result or exception that does not pickle: nothing was sent yet
            conn.send((False, ExecutorError(f"a task's outcome cannot be sent back: {type(exc).__name__}: {exc}")))


def _exit_quietly_on_interrupt() -> None:
    """In a worker: Ctrl-C (sent to the whole process group) ends it without a traceback of its own."""
    signal.signal(signal.SIGINT, lambda *_: os._exit(130))


@dataclass(frozen=True)
class RayAddress:
    """A cluster to connect to: `auto` (the one `ray start` left on this machine, or RAY_ADDRESS), a head
    node's `host:port`, or a Ray Client `ray://host:port`."""

    text: str
    host: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> RayAddress:
        if text == "auto":
            return cls(text)
        found = _ADDRESS.fullmatch(text)
        if found is None or not 0 < int(found["port"]) < 65536:
            raise ExecutorError(
                f"{text!r} is not a Ray address (auto, host:port or ray://host:port); for a local cluster, "
                "put a bare --ray after the other arguments"
            )
        return cls(text, found["host"].strip("[]"), int(found["port"]))

    def check_reachable(self) -> None:
        """One clear line when nothing listens there (Ray itself retries for minutes, logging as it goes)."""
        if self.host is None or self.port is None:
            return
        try:
            socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise ExecutorError(
                f"--ray {self.text}: no Ray cluster answers there ({exc.strerror or exc}); start one with "
                "`ray start --head` on its head node, or check the address `ray status` shows"
            ) from None


class RayCluster(Executor):
    """Each task a Ray task: on a new local cluster (`address` None; `jobs` CPUs, 0 = all), on this
    process's Ray session if it already has one, or on the cluster at `address`. At most `jobs` tasks run at
    once (0: as many as the cluster takes). A local cluster that Ray gives up starting on a busy machine is
    started once more. A task whose worker dies (a crash, the node lost) runs once more; the tasks' own
    exceptions come back as they were raised."""

    def __init__(
        self,
        address: RayAddress | None = None,
        jobs: int = 0,
        named: Sequence[str | Path] = (),
        warn: Callable[[str], None] | None = None,
    ) -> None:
        """`named`: files the tasks read at the same path on every node (a spec file): each task checks its
        node's copy is the command's, as it checks the package and its default configuration. `warn`: says
        that a local cluster is started once more (default: a line on stderr)."""
        self._named = tuple(named)
        if address is None:
            _choose_token_auth()
        try:
            import ray
        except ImportError:
            raise ExecutorError(f"--ray needs Ray, an optional extra: {INSTALL_RAY}") from None
        self._ray, self.jobs, self._owned, self._local = ray, jobs, False, False
        self._window = jobs or None  # tasks handed to Ray at a time: a cluster not sized by `jobs` may run them all
        say = warn or _on_stderr
        if not (address is None and ray.is_initialized()):
            if address is not None:
                address.check_reachable()
                _init(ray, address, partial(ray.init, address=address.text, logging_level=logging.WARNING), say)
            else:  # a cluster of this run's own: no dashboard, workers at this priority

                def start() -> None:  # a new _system_config each time: Ray writes its own settings into it
                    ray.init(
                        address="local",
                        num_cpus=jobs or None,
                        include_dashboard=False,
                        logging_level=logging.WARNING,
                        _system_config={"worker_niceness": LOCAL_WORKER_NICENESS},
                    )

                _init(ray, None, start, say)
                # its `jobs` CPUs run `jobs` tasks at once: a task queued behind each starts the moment its
                # worker is free, instead of the worker waiting for this process to hand it the next one
                self._window = IN_FLIGHT_PER_CPU * jobs or None
                self._local = True
            self._owned = True
        self._task: Any = ray.remote(max_retries=0, num_cpus=1)(_call)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[Done[R]]:
        ray, lost_once = self._ray, dict[int, str]()
        fn_ref, folder = ray.put(fn), os.getcwd()  # the function shipped once, not with every task
        installation = ray.put(this_installation().naming(self._named))  # what each task checks its node has
        todo = iter(enumerate(items))
        pending: dict[Any, int] = {}

        def submit(index: int, item: Any) -> None:
            pending[self._task.remote(fn_ref, folder, installation, item)] = index

        for index, item in itertools.islice(todo, self._window):
            submit(index, item)
        try:
            while pending:
                [ref], _ = ray.wait(list(pending), num_returns=1)
                index = pending.pop(ref)
                try:
                    done = Done(index, ray.get(ref), retried=lost_once.get(index))
                except ray.exceptions.RayTaskError as exc:  # the task raised: as if it had raised here
                    cause = exc.cause if isinstance(exc.cause, Exception) else exc
                    done = Done(index, error=cause, retried=lost_once.get(index))
                except ray.exceptions.RayError as exc:  # its worker or node died
                    if index not in lost_once:
                        lost_once[index] = _first_line(exc)
                        submit(index, items[index])
                        continue
                    done = Done(index, retried=lost_once[index], lost=_first_line(exc))
                if (following := next(todo, None)) is not None:
                    submit(*following)
                yield done
        except BaseException as stop:  # Ctrl-C, or the caller stopped reading (an earlier task's error)
            for ref in pending:
                ray.cancel(ref, force=True)
            if not isinstance(stop, KeyboardInterrupt):  # collect them, or Ray logs each one's error later
                for ref in pending:
                    with contextlib.suppress(ray.exceptions.RayError):
                        ray.get(ref)
            raise

    def close(self) -> None:
        if self._owned:
            if self._local:
                _kill_autoscaler_monitor()
            self._ray.shutdown()
            self._owned = self._local = False


def _init(ray: Any, address: RayAddress | None, init: Callable[[], object], warn: Callable[[str], None]) -> None:
    """Start or join a cluster with `init` (a `ray.init`). A failed one leaves nothing running (Ray leaves a
    failed start's GCS, raylet and agents to the end of this process) and is one ExecutorError saying what
    to do; but a local start that ran out of Ray's fixed start-up wait runs once more, said with `warn`."""
    for again in (False, True):
        before = _children(_parents())
        try:
            init()
            return
        except Exception as exc:  # Ray raises plain Exceptions too (a start that timed out)
            ray.shutdown()
            _kill_started_since(before)
            if again or address is not None or RAY_START_TIMED_OUT not in str(exc):
                raise ExecutorError(_init_failure(exc, address)) from None
        warn(f"--ray: {_LOCAL_TIMED_OUT}; starting it once more")


def _init_failure(exc: Exception, address: RayAddress | None) -> str:
    """One line for a failed `ray.init`: what failed, as far as Ray's message tells, and what to do."""
    text = str(exc)
    if address is None:
        if RAY_START_TIMED_OUT in text:
            return f"--ray: {_LOCAL_TIMED_OUT}, twice: retry, or run without --ray (--jobs N: local processes)"
        return f"--ray: cannot start a local Ray cluster: {_first_line(exc)}; run without --ray (--jobs N: local processes)"
    where = f"--ray {address.text}"
    if versions := _VERSIONS.search(text):
        return (
            f"{where}: the cluster runs Ray {versions[1]} on Python {versions[2]}, this command Ray {versions[3]} on "
            f"Python {versions[4]}: install the cluster's Ray and Python versions here"
        )
    if _NO_CLUSTER_FOUND in text:
        return (
            f"{where}: no Ray cluster runs on this machine and RAY_ADDRESS is not set: start one with `ray start "
            "--head`, give its address, or put a bare --ray for a cluster of the run's own"
        )
    return (
        f"{where}: cannot join the Ray cluster there: {_first_line(exc)}; check that it runs (`ray status` on its "
        "head node) and, if it checks tokens, that RAY_AUTH_MODE=token and its token are set here"
    )


def _kill_started_since(children: set[int]) -> None:
    """SIGKILL the processes this process started since it had `children`, and theirs: a failed Ray start's GCS,
    raylet, agents and reaper. Not reaped here: Ray's Popen objects wait for them."""
    parents = _parents()
    family = generation = _children(parents) - children
    while generation:
        generation = {pid for pid, parent in parents.items() if parent in generation} - family
        family |= generation
    for pid in family:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _parents() -> dict[int, int]:
    """Each live (not zombie) process's parent, from /proc; none where there is no /proc."""
    parents: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):  # a process that ended while being read
                state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
                if state != "Z":
                    parents[int(entry.name)] = int(parent)
    return parents


def _children(parents: dict[int, int]) -> set[int]:
    """This process's children, given each process's parent."""
    return {pid for pid, parent in parents.items() if parent == os.getpid()}


def _on_stderr(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr)


def _kill_autoscaler_monitor() -> None:
    """Stop a local cluster's autoscaler monitor before `ray.shutdown` does. Ray stops the GCS first, and
    the monitor's SIGTERM handler then tries to report its end to it until Ray SIGKILLs it a second later
    (ray-project/ray#30672): one second of every `--ray` run. A cluster of this run's own has one node and
    nothing to autoscale, so the monitor has nothing to save. This reaches into `ray._private` (Ray 2.60);
    if Ray's internals differ, the shutdown just keeps its second."""
    try:
        from ray._private import ray_constants, worker

        node = worker._global_node
        if node is not None:
            node._kill_process_type(ray_constants.PROCESS_TYPE_MONITOR, allow_graceful=False, check_alive=False)
    except (ImportError, AttributeError, KeyError, TypeError, OSError):
        pass


def _choose_token_auth() -> None:
    """For a cluster of this run's own: token authentication, as Ray chooses for a new local cluster, but
    chosen here, so Ray does not warn on every run that it chose it. Ray reads RAY_AUTH_MODE when it is
    imported (so only a process that has not imported it yet is told), and one set by the user wins."""
    if "ray" not in sys.modules:
        os.environ.setdefault("RAY_AUTH_MODE", "token")


def _call(fn: Callable[[T], R], folder: str, installation: Installation, item: T) -> R:
    """The Ray task: one item through the shipped function, in the command's folder, so relative paths
    (bags, spec files, as given on the command line) mean there what they mean to the command, on a node
    whose package and default configuration are the command's (`installation`), so it scores by the same rules."""
    try:
        os.chdir(folder)
    except OSError as exc:
        raise SourceError(
            f"the command's folder {folder} is not on Ray node {socket.gethostname()} ({exc.strerror or exc}); "
            "run it from a folder every node has at the same path, with the bags there too"
        ) from None
    _check_installation(installation)
    return fn(item)


def _check_installation(command: Installation) -> None:
    """This node's installation and named files (in the command's folder) are the command's, or an ExecutorError
    naming the node and the first files that differ."""
    here = this_installation().naming(command.named) if command.named else this_installation()
    if here == command:
        return
    problems = []
    if installed := here.differences(command):
        problems.append(
            f"another safety_monitor installation than the command ({first_few(installed)}): install the same commit"
        )
    if named := here.named_differences(command):
        problems.append(f"other files than the command's ({first_few(named)}): put the same files at the same path")
    raise ExecutorError(f"Ray node {socket.gethostname()} has {'; and '.join(problems)} on every node")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def make_executor(
    jobs: int | None = None,
    ray: RayAddress | bool = False,
    named: Sequence[str | Path] = (),
    warn: Callable[[str], None] | None = None,
) -> Executor:
    """The executor for `--jobs N` and `--ray [ADDRESS]` (`ray` True: a new local cluster). Without Ray,
    `jobs` None or 1 runs here and 0 means one process per CPU this process may use. `named`: files the tasks
    read, which a Ray task checks are the same on its node (local workers read this machine's). `warn`: how a
    local cluster started once more is said."""
    if jobs is not None and jobs < 0:
        raise ExecutorError(f"--jobs must be 0 (one per CPU) or more, got {jobs}")
    if ray is not False:
        return RayCluster(ray if isinstance(ray, RayAddress) else None, jobs or 0, named, warn)
    jobs = len(os.sched_getaffinity(0)) if jobs == 0 else jobs or 1
    return Serial() if jobs == 1 else Processes(jobs)


def in_order(dones: Iterator[Done[R]], count: int, on_done: Callable[[Done[R]], None] | None = None) -> list[Done[R]]:
    """Every task's Done in input order. A task's exception is raised as soon as every earlier task has
    finished, so the error reported is the one a serial run would have stopped at."""
    out: list[Done[R] | None] = [None] * count
    first_error = count
    finished = 0  # tasks 0..finished-1 are all done
    for done in dones:
        out[done.index] = done
        if on_done is not None:
            on_done(done)
        if done.error is not None:
            first_error = min(first_error, done.index)
        while finished < count and out[finished] is not None:
            finished += 1
        if first_error < finished:
            error = out[first_error].error  # type: ignore[union-attr]
            raise error  # type: ignore[misc]
    return [d for d in out if d is not None]


def results(
    executor: Executor,
    fn: Callable[[T], R],
    items: Sequence[T],
    name: Callable[[T], str],
    warn: Callable[[str], None] | None = None,
) -> list[R]:
    """`fn` of each item, in order: a task retried after its worker died is one `warn` line, a task whose
    worker died twice an ExecutorError naming its item (`name`)."""
    dones = in_order(executor.map(fn, items), len(items))
    for done in dones:
        if done.retried and not done.lost and warn is not None:
            warn(f"{name(items[done.index])}: its worker died ({done.retried}); ran again")
        if done.lost:
            raise ExecutorError(f"{name(items[done.index])}: its worker died twice ({done.lost}); not done")
    return [done.result for done in dones]  # type: ignore[misc]
