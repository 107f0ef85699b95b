"""Cost of the event log's per-batch work: the deleted-or-replaced check (an fstat and a stat) and a
whole one-record batch (check, JSON, one O_APPEND write, a sync request). Best of 3 runs of 20,000.

    PYTHONPATH=$PWD python benchmarks/bench_event_log.py
"""

import tempfile
import time
from pathlib import Path

from safety_monitor.nodes.event_log import EventLog

N = 20_000


def best_us(fn) -> float:
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(N):
            fn()
        runs.append(time.perf_counter() - start)
    return min(runs) / N * 1e6


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        log = EventLog(Path(folder) / "events.jsonl", fallback=None, hold=10, robot="r", say=lambda *_: None)
        log.open()
        record = [{"property": "never_a", "kind": "opened", "frame": 3, "t": 1.0, "rollout": 0, "robot": "r"}]
        print(f"path check: {best_us(log._verify_path):.1f} us")
        print(f"one-record batch: {best_us(lambda: log.write(record)):.1f} us")
        log.close()


if __name__ == "__main__":
    main()
