"""The stop signals' one flag: SIGINT and SIGTERM set `stop_requested` instead of raising or killing.

Nothing here acts at import, so any module may import it; `hold()` installs the handler. This module
imports only `signal` and `threading`: the console scripts (nodes/programs.py) import it first and hold
the signals before anything else of theirs loads.
"""

from __future__ import annotations

import signal
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
stop_requested = threading.Event()  # set by a stop signal while `request_stop` is their handler


def request_stop(_signum: int, _frame: object) -> None:
    stop_requested.set()


def hold() -> None:
    """Make `request_stop` the handler of both stop signals (a signal already taken stays recorded)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, request_stop)


def held() -> bool:
    return signal.getsignal(signal.SIGINT) is request_stop
