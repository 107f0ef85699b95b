"""The event log's background syncer: syncs on request and at close, and reports a failing sync."""

import os
import threading

from safety_monitor.nodes.log_sync import LogSyncer

WAIT_S = 120.0  # only a broken run waits this long for a condition: a slow, loaded machine passes far below it


def test_requests_are_synced_and_close_syncs_the_rest(tmp_path, monkeypatch):
    fd = os.open(tmp_path / "log.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    synced = threading.Event()
    calls = []
    real = os.fsync

    def fsync(n):
        calls.append(n)
        real(n)
        synced.set()

    monkeypatch.setattr(os, "fsync", fsync)
    syncer = LogSyncer(lambda: os.fsync(fd), on_error=lambda exc: calls.append(exc))
    os.write(fd, b"{}\n")
    syncer.request()
    assert synced.wait(WAIT_S) and calls[0] == fd
    syncer.close()
    assert calls[-1] == fd and len(calls) >= 2  # the final sync at close
    os.close(fd)


def test_a_failing_sync_is_reported_not_swallowed(tmp_path):
    fd = os.open(tmp_path / "log.jsonl", os.O_WRONLY | os.O_CREAT)
    os.close(fd)  # a descriptor that is no longer valid: fsync raises EBADF
    errors, seen = [], threading.Event()
    syncer = LogSyncer(lambda: os.fsync(fd), on_error=lambda exc: (errors.append(exc), seen.set()))
    syncer.request()
    assert seen.wait(WAIT_S)
    syncer.close()
    assert all(isinstance(e, OSError) for e in errors) and len(errors) == 2
