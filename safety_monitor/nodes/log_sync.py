"""Syncing the event log to disk off the executor thread.

An `fsync` here takes about 0.2 ms but up to 5 ms (more on a busy disk); done inline it stalls every
frame queued behind an event. The log line is written (the kernel has it: a killed process loses
nothing) before the event is published; this thread makes it power-loss proof a moment later.
Requests that arrive while a sync runs are served by one more sync.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class LogSyncer:
    """`request()` after each write; `close()` joins the thread and syncs what is left. `sync` does the
    sync (the event log's: it knows which descriptor is current, as the log may be reopened)."""

    def __init__(self, sync: Callable[[], None], on_error: Callable[[OSError], object]) -> None:
        self._do_sync, self._on_error = sync, on_error
        self._wake = threading.Event()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="event-log-sync", daemon=True)
        self._thread.start()

    def request(self) -> None:
        self._wake.set()

    def _sync(self) -> None:
        try:
            self._do_sync()
        except OSError as exc:
            self._on_error(exc)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closing:
                return
            self._sync()

    def close(self) -> None:
        self._closing = True
        self._wake.set()
        self._thread.join()
        self._sync()
