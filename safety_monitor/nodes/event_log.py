"""The monitor's event log: a JSON Lines file that keeps every event a subscriber may have seen, and says
at once when it cannot.

- Whole lines: each batch (one frame's events) is one `write` (O_APPEND) made before the batch is
  published. A write that fails part-way (a full disk) is cut back to the batch's start, so the file
  ends with a whole line; a kill inside a write can tear the last line, and `open` cuts it at the next
  start (that batch was never published).
- Nothing dropped silently: a batch that no file takes (disk full, read-only, I/O error) is held in
  memory, up to `hold` records, and written ahead of newer ones as soon as a file takes a write again
  (the next batch, or the next `check`: the node calls it every diagnostics period). Each write goes to
  the log, else to the fallback file when one is configured. Beyond `hold`, newer records are dropped
  and counted; an `events_lost` record says how many once writing resumes. `health` says which of
  this is happening (`LogState`: OK, HOLDING n, FALLBACK, LOST n).
- Deleted or replaced under it: before each batch and at each check the open descriptor's
  (st_dev, st_ino) is compared with the path's (an fstat and a stat, a few microseconds: cheap next to
  the batch's JSON and publish). A changed or missing path is reopened, with a `log_reopened` record;
  when the old file was deleted (no link left), the batches written since the last check, which went
  to it, are written again, so none is missing from the new file.
- Restarts: the log is locked (`flock`) while open, so a second monitor on it is refused. A run writes
  `monitor_started` first and, on a clean close, `monitor_stopped` last, and keeps `<log>.running`
  meanwhile. At open, a `.running` left behind, or a last record of another process that is not
  `monitor_stopped`, means the previous run died: either suffices, so a deleted `.running` hides nothing.
- Reading: `LogRecords` reads a finished (or running) log line by line, for `alerts --log`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, BinaryIO

from safety_monitor.enums import LogRecordKind
from safety_monitor.errors import SafetyMonitorError, SourceError
from safety_monitor.io.messages import event_problem
from safety_monitor.nodes.log_sync import LogSyncer

Say = Callable[[str, str, str], object]  # (level, key, text): the node's throttled logger


class LogState(StrEnum):
    OK = "OK"  # every record is in the log
    HOLDING = "HOLDING"  # records no file took yet, kept in memory
    FALLBACK = "FALLBACK"  # the log refused the last write, the fallback file took it
    LOST = "LOST"  # records dropped: more than `hold` were waiting for a file


@dataclass(frozen=True)
class LogHealth:
    """The log's state, with the records held (HOLDING) or dropped so far (LOST), and the last failure."""

    state: LogState = LogState.OK
    count: int = 0
    error: str = ""

    def __str__(self) -> str:
        return f"{self.state} {self.count}" if self.state in (LogState.HOLDING, LogState.LOST) else str(self.state)


@dataclass(frozen=True)
class PreviousRun:
    """A previous monitor on this log that did not stop cleanly, and the torn bytes cut from its end."""

    pid: int | None
    started: float | None
    torn_bytes: int


class EventLog:
    """`open()` once, `write(records)` per batch, `check()` every period, `close()` once."""

    def __init__(self, path: Path, *, fallback: Path | None, hold: int, robot: str, say: Say) -> None:
        self.path, self.fallback, self.robot = path, fallback, robot
        self.running_path = path.with_name(path.name + ".running")
        self._hold, self._say = hold, say
        self._fd = self._fallback_fd = -1
        self._fd_lock = threading.Lock()  # the sync thread's fsync against a reopen closing the descriptor
        self._syncer: LogSyncer | None = None
        self._held: list[tuple[bytes, int]] = []  # (lines, records) no file took yet, oldest first
        self._held_records = self._dropped = 0
        self._unverified: list[bytes] = []  # batches written to the log since its path was last found intact
        self._written = 0  # records written to the file open now
        self._on_fallback = False
        self._error = ""
        self.reopened = 0

    # ---------------------------------------------------------------------------------- lifecycle
    def open(self) -> PreviousRun | None:
        """Lock and open the log; the previous run if it died. SafetyMonitorError if it cannot be opened
        or another monitor holds it."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise SafetyMonitorError(f"monitor_node: cannot open the event log {self.path}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            pid = (_read_running(self.running_path) or {}).get("pid")
            who = f"process {pid}" if isinstance(pid, int) else "another process"
            raise SafetyMonitorError(f"monitor_node: {who} still writes this log ({self.path} is locked)") from None
        self._fd = fd
        running = _read_running(self.running_path)
        try:
            torn = cut_torn_line(self.path)
            last = last_record(self.path)
        except OSError as exc:
            os.close(fd)
            self._fd = -1
            raise SafetyMonitorError(f"monitor_node: cannot read the event log {self.path}: {exc}") from None
        died = running is not None or (
            last is not None
            and last.get("kind") != LogRecordKind.MONITOR_STOPPED
            and isinstance(last.get("pid"), int)
            and last["pid"] != os.getpid()
        )
        started = time.time()
        self._write_running(started)
        self._syncer = LogSyncer(
            self._sync_now, lambda exc: self._say("error", "sync", f"cannot sync the event log {self.path}: {exc}")
        )
        self.write([self._record(LogRecordKind.MONITOR_STARTED, boot_id=boot_id(), started=started)], sync=True)
        if not died:
            return None
        previous = running or {}
        pid = previous.get("pid", last.get("pid") if last else None)
        return PreviousRun(
            pid=pid if isinstance(pid, int) else None,
            started=previous.get("started") if isinstance(previous.get("started"), float) else None,
            torn_bytes=torn,
        )

    def close(self) -> LogHealth:
        """Write what is held and a `monitor_stopped` record, sync, unlock, remove `.running` (once).
        The health after: anything still held (no file took it) is lost."""
        if self._fd < 0:
            return self.health
        self._verify_path()
        if self._flush_held():
            self._write_batch(self._lines([self._record(LogRecordKind.MONITOR_STOPPED)]), 1)
        if self._held_records:
            self._dropped += self._held_records
            self._held.clear()
            self._held_records = 0
        if self._syncer is not None:
            self._syncer.close()
            self._syncer = None
        with self._fd_lock:
            for fd in (self._fd, self._fallback_fd):
                if fd >= 0:
                    os.close(fd)
            self._fd = self._fallback_fd = -1
        self.running_path.unlink(missing_ok=True)
        return self.health

    @property
    def is_open(self) -> bool:
        return self._fd >= 0

    # ------------------------------------------------------------------------------------ writing
    @property
    def health(self) -> LogHealth:
        if self._dropped:
            return LogHealth(LogState.LOST, self._dropped, self._error)
        if self._held_records:
            return LogHealth(LogState.HOLDING, self._held_records, self._error)
        if self._on_fallback:
            return LogHealth(LogState.FALLBACK, 0, self._error)
        return LogHealth()

    def write(self, records: list[dict[str, Any]], sync: bool = False) -> LogHealth:
        """Write one batch (or hold it); `sync`: fsync before returning, else on the sync thread soon."""
        self._verify_path()
        lines = self._lines(records)
        if not (self._flush_held() and self._write_batch(lines, len(records))):
            self._keep(lines, len(records))
        if sync:
            try:
                self._sync_now()
            except OSError as exc:
                self._say("error", "sync", f"cannot sync the event log {self.path}: {exc}")
        elif self._syncer is not None:
            self._syncer.request()
        return self.health

    def check(self) -> LogHealth:
        """The periodic look: reopen a deleted or replaced log, write what is held if a file takes it."""
        if self._fd >= 0:
            self._verify_path()
            if self._held and self._flush_held() and self._syncer is not None:
                self._syncer.request()
        return self.health

    def _record(self, kind: LogRecordKind, **fields: Any) -> dict[str, Any]:
        return {"property": "*", "kind": kind, "frame": None, "t": None, "rollout": None, "robot": self.robot, **fields}

    def _lines(self, records: list[dict[str, Any]]) -> bytes:
        """One JSON line per record; a record published already carries its stamp, kept as it was sent."""
        stamp = wall_stamp()
        return "".join(json.dumps({**stamp, **r}, sort_keys=True) + "\n" for r in records).encode()

    def _keep(self, lines: bytes, n: int) -> None:
        """Hold a batch no file took, unless `hold` records already wait: then count it dropped."""
        if self._held_records + n > self._hold:
            if not self._dropped:
                self._say(
                    "error",
                    "dropping",
                    f"event log: {self._held_records} events held, the limit "
                    f"(events_log_hold): dropping newer events until {self.path} can be written",
                )
            self._dropped += n
            return
        if not self._held:
            self._say(
                "error",
                "holding",
                f"cannot write the event log {self.path}: {self._error}; holding events "
                f"(up to {self._hold}) until it can be written",
            )
        self._held.append((lines, n))
        self._held_records += n

    def _flush_held(self) -> bool:
        """Write the held batches in order, each whole, as far as a file takes them (a disk with a little
        room takes the oldest first), then an `events_lost` record if some were dropped; whether none is left."""
        if not self._held and not self._dropped:
            return True
        failing, written = bool(self._error), self._held_records
        while self._held:
            lines, n = self._held[0]
            if not self._write_batch(lines, n):
                return False
            del self._held[0]
            self._held_records -= n
        if self._dropped and not self._write_batch(
            self._lines([self._record(LogRecordKind.EVENTS_LOST, events=self._dropped)]), 1
        ):
            return False
        if failing:
            where = self.fallback if self._on_fallback else self.path
            self._say(
                "info",
                "resumed",
                f"event log: {written} held events written to {where}"
                + (f"; {self._dropped} were dropped (an events_lost record says so)" if self._dropped else ""),
            )
        self._dropped = 0
        return True

    def _write_batch(self, data: bytes, n: int) -> bool:
        """`data` to the log, else to the fallback; whether a file took it (whole: a failed write is cut)."""
        try:
            _append(self._fd, data)
        except OSError as exc:
            self._error = str(exc)  # "[Errno 28] No space left on device"
        else:
            if self._on_fallback:
                self._say("info", "log_back", f"event log {self.path} writable again")
            self._on_fallback, self._error = False, ""
            self._unverified.append(data)
            self._written += n
            return True
        if self.fallback is None:
            return False
        try:
            if self._fallback_fd < 0:
                self._fallback_fd = os.open(self.fallback, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            _append(self._fallback_fd, data)
        except OSError as exc:
            self._error += f"; the fallback {self.fallback} too: {exc}"
            return False
        if not self._on_fallback:
            self._say(
                "error",
                "fallback",
                f"cannot write the event log {self.path}: {self._error}; writing to the fallback {self.fallback}",
            )
        self._on_fallback = True
        return True

    def _sync_now(self) -> None:
        with self._fd_lock:
            for fd in (self._fd, self._fallback_fd):
                if fd >= 0:
                    os.fsync(fd)

    # ----------------------------------------------------------------------- deleted or replaced
    def _verify_path(self) -> None:
        """Reopen the log at its path when the open file is no longer the one there."""
        try:
            mine = os.fstat(self._fd)
            there = os.stat(self.path)
        except FileNotFoundError:
            there = None
        except OSError:
            return  # cannot tell (the folder unreadable): keep writing where we are
        if there is not None and there.st_ino == mine.st_ino and there.st_dev == mine.st_dev:
            self._unverified.clear()
            return
        self._reopen("deleted" if mine.st_nlink == 0 else "replaced" if there is not None else "moved away")

    def _reopen(self, why: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            self._say("error", "reopen", f"the event log {self.path} was {why} and cannot be reopened: {exc}")
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._say("error", "relock", f"the reopened event log {self.path} is locked by another process")
        with self._fd_lock:
            old, self._fd = self._fd, fd
        os.close(old)
        again = self._unverified if why == "deleted" else []  # the deleted file took them: write them again
        previous, self._written = self._written, 0
        self.reopened += 1
        self._say(
            "error",
            "reopened",
            f"the event log {self.path} was {why} while open: reopened"
            + (f", {len(again)} batch(es) written since the last check written again" if again else ""),
        )
        record = self._record(LogRecordKind.LOG_REOPENED, reason=why, missing=0, previous_file_records=previous)
        batches = [(self._lines([record]), 1)] + [(lines, lines.count(b"\n")) for lines in again]
        self._held[:0] = batches  # ahead of anything held: they are older
        self._held_records += sum(n for _, n in batches)
        self._unverified = []
        self._write_running(time.time())

    def _write_running(self, started: float) -> None:
        try:
            self.running_path.write_text(json.dumps({"pid": os.getpid(), "boot_id": boot_id(), "started": started}))
        except OSError as exc:  # only a hint (the log's own records and lock decide): say so, carry on
            self._say("warning", "running", f"cannot write {self.running_path}: {exc}")


def _append(fd: int, data: bytes) -> None:
    """All of `data` at the end of `fd`, or nothing: a write that fails part-way is cut back."""
    size = os.fstat(fd).st_size
    view = memoryview(data)
    try:
        while view:
            n = os.write(fd, view)
            if n == 0:  # no progress: a file system that neither writes nor says why would spin us forever
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            view = view[n:]
    except OSError:
        if len(view) != len(data):
            with contextlib.suppress(OSError):  # cannot cut: the torn line is cut at the next start
                os.ftruncate(fd, size)
        raise


def _read_running(running: Path) -> dict[str, Any] | None:
    """The `.running` record of a run that did not remove it, None when there is none."""
    try:
        previous = json.loads(running.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # cut short: that run died while starting
    return previous if isinstance(previous, dict) else {}


def wall_stamp() -> dict[str, Any]:
    """The wall-clock time and the process of a live record, beside its stamp time `t` (sim or robot
    time): the monitor sends each event with it, so its log line and the published record are the same."""
    return {"wall_time": time.time(), "pid": os.getpid()}


def boot_id() -> str:
    """This boot's id (Linux): which boot a pid in `.running` or `monitor_started` belongs to."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def last_record(log: Path) -> dict[str, Any] | None:
    """The log's last line as JSON (None: an empty or missing log, or a last line that is not a record)."""
    try:
        with open(log, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            if size == 0:
                return None
            f.seek(max(0, size - (1 << 16)))
            tail = f.read()
    except FileNotFoundError:
        return None
    return parse_line(tail.rstrip(b"\n").rsplit(b"\n", 1)[-1])


def parse_line(line: bytes) -> dict[str, Any] | None:
    """One log line as its JSON object, None when it is not one."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the stack
        return None
    return record if isinstance(record, dict) else None


class LogRecords:
    """A log's records in order, one per whole line, as the file holds them when read (`alerts --log`).
    A last line without its newline that starts a record is a write a kill cut short (that batch was
    never published): not read, and `torn_bytes` says how long it was once the records have been.
    SourceError, naming the line, for anything else that is not a record (a file that is not an event log), or
    not one as the monitor writes them (`messages.event_problem`: a field of another type, as a damaged disk
    leaves it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.torn_bytes = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            with open(self.path, "rb") as f:
                yield from self._records(f)
        except OSError as exc:
            raise SourceError(f"cannot read {self.path}: {exc.strerror or exc}") from None

    def _records(self, f: BinaryIO) -> Iterator[dict[str, Any]]:
        for n, line in enumerate(f, 1):
            record = parse_line(line)
            problem = "not a JSON object" if record is None else event_problem(record)
            whole = line.endswith(b"\n")
            if whole and problem is None:
                assert record is not None  # (for mypy: no problem says so)
                yield record
            elif not whole and line.startswith(b"{") and (record is None or problem is None):
                self.torn_bytes = len(line)
                return
            else:  # each record names its property (`*` for the log's own) and kind
                raise SourceError(
                    f"{self.path} is not an event log: line {n} is not a JSON record with a property and a "
                    f"kind, as the monitor writes them ({problem}: {line[:60]!r})"
                )


def cut_torn_line(log: Path) -> int:
    """Cut a last line without its newline (a write a kill interrupted); the number of bytes cut."""
    try:
        with open(log, "rb+") as f:
            size = pos = f.seek(0, os.SEEK_END)
            keep = 0
            while pos > 0:  # read backwards from the end: the log may be large
                step = min(1 << 16, pos)
                pos -= step
                f.seek(pos)
                chunk = f.read(step)
                if pos + step == size and chunk.endswith(b"\n"):
                    return 0
                if (i := chunk.rfind(b"\n")) >= 0:
                    keep = pos + i + 1
                    break
            f.truncate(keep)
            return size - keep
    except FileNotFoundError:
        return 0
