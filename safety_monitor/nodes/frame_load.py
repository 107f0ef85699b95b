"""Is the estimator keeping up? Frames missing between consecutive stamps, and what each frame costs.

A node that cannot keep up does not stop: its input queue overflows and frames silently go missing,
so debounce counts and durations stretch in time. The stamps show it: at a known control rate, a gap
of k periods means k - 1 frames never reached the grounder (lost by the driver, the network or this
node's queue). Gaps long enough to be a time jump or a stopped stream are the assembler's to report.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MISSED_WARN_SHARE = 0.01  # above this share of a period's frames missing, the estimator says WARN


@dataclass(frozen=True)
class LoadReport:
    """One diagnostics period: frames grounded and missed, process CPU in cores, per-frame wall time."""

    seconds: float
    frames: int
    missed: int
    cpu_cores: float
    frame_ms_p50: float
    frame_ms_max: float

    @property
    def falling_behind(self) -> bool:
        return self.missed > MISSED_WARN_SHARE * (self.frames + self.missed)

    def message(self) -> str:
        return (
            f"{self.missed} of {self.frames + self.missed} frames missing in the last {self.seconds:.1f} s "
            f"(dropped by the driver or this node's input queue, or control_rate_hz is above the stream's rate; "
            f"this process uses {self.cpu_cores:.2f} core, {self.frame_ms_p50:.2f} ms per frame)"
        )

    def values(self) -> list[tuple[str, str]]:
        return [
            ("load.missed_frames", str(self.missed)),
            ("load.cpu_cores", f"{self.cpu_cores:.3f}"),
            ("load.frame_ms_p50", f"{self.frame_ms_p50:.3f}"),
            ("load.frame_ms_max", f"{self.frame_ms_max:.3f}"),
        ]


class FrameLoad:
    """`frame(stamp, seconds)` per grounded frame; `report()` once per period. Frames missing are counted
    over runs of consecutive stamps (the span at the control rate against the frames that came), so
    stamp jitter only matters at a run's two ends. `max_gap_s`: a longer gap ends a run (a time jump or
    a stop), as do a stamp that does not advance and a new rollout."""

    def __init__(
        self,
        rate_hz: float,
        max_gap_s: float,
        cpu: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate, self._max_gap = rate_hz, max_gap_s
        self._cpu, self._clock = cpu, clock
        self._first: float | None = None  # the run's first stamp, its last, and its frames
        self._last: float | None = None
        self._count = 0
        self._start, self._cpu_start = clock(), cpu()
        self._costs: list[float] = []
        self._missed = 0

    def forget_stamp(self) -> None:
        """A new rollout: its first frame follows no gap."""
        self._end_run()
        self._first = self._last = None
        self._count = 0

    def frame(self, stamp: float, seconds: float) -> None:
        last = self._last
        if last is None or not last < stamp <= last + self._max_gap:
            self._end_run()
            self._first, self._count = stamp, 0
        self._last = stamp
        self._count += 1
        self._costs.append(seconds)

    def _end_run(self) -> None:
        if self._first is not None and self._last is not None:
            self._missed += max(0, round((self._last - self._first) * self._rate) + 1 - self._count)

    def report(self) -> LoadReport:
        """The period since the last report; the run goes on from its last frame."""
        self._end_run()
        self._first, self._count = self._last, 1 if self._last is not None else 0
        now, cpu = self._clock(), self._cpu()
        wall = max(now - self._start, 1e-9)
        costs = np.array(self._costs) * 1e3
        out = LoadReport(
            seconds=wall,
            frames=len(costs),
            missed=self._missed,
            cpu_cores=(cpu - self._cpu_start) / wall,
            frame_ms_p50=float(np.median(costs)) if costs.size else 0.0,
            frame_ms_max=float(costs.max()) if costs.size else 0.0,
        )
        self._start, self._cpu_start, self._costs, self._missed = now, cpu, [], 0
        return out
