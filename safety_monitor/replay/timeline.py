"""A bag's predicate history as runs of equal values, so memory grows with changes, not with frames.

The plots draw predicates as bands from these runs; a one-hour bag at 500 Hz whose predicates change
a few hundred times costs a few hundred intervals instead of 1.8 million rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Timeline:
    """Per name, intervals `[first_frame, last_frame, value]` with value True, False or None (unknown).

    `times` maps the frames where some run starts or ends to seconds, enough to draw in seconds.
    """

    names: tuple[str, ...]
    runs: dict[str, list[list]] = field(default_factory=dict)
    times: dict[int, float] = field(default_factory=dict)
    frames: int = 0
    _last: tuple | None = None
    _t: float = field(default=0.0, init=False, repr=False, compare=False)  # the last frame's seconds
    _given: tuple | None = field(default=None, init=False, repr=False, compare=False)  # the last tuple passed

    def add(self, values: Sequence[bool | None], t: float) -> None:
        """Append one frame's values (in `names` order). Replay passes one tuple per run of equal frames: the same
        tuple again is the last frame's values, with nothing to copy or compare (a list may have changed in place)."""
        frame = self.frames
        if values is not self._given:
            self._given = values if type(values) is tuple else None
            values = tuple(values)
            if values != self._last:
                values = tuple(None if v is None else bool(v) for v in values)  # plain singletons, JSON-ready
                prev = self._last
                if frame:
                    self.times[frame - 1] = self._t
                self.times[frame] = t
                for name, value, old in zip(self.names, values, prev or (object(),) * len(values)):
                    runs = self.runs.setdefault(name, [])
                    if runs and value == old:
                        continue
                    runs.append([frame, frame, value])
                self._last = values
        self._t = t
        self.frames = frame + 1

    def close(self) -> None:
        """Extend every open run to the last frame (call once at the end)."""
        if not self.frames:
            return
        last = self.frames - 1
        self.times[last] = self._t
        for runs in self.runs.values():
            if runs:
                runs[-1][1] = last
        for name in self.names:
            runs = self.runs[name]
            for i in range(len(runs) - 1):
                runs[i][1] = runs[i + 1][0] - 1

    def time(self, frame: int) -> float:
        """Seconds at a run boundary frame."""
        return self.times[frame]

    def to_json(self) -> dict[str, Any]:
        return {
            "frames": self.frames,
            "runs": self.runs,
            "times": {str(k): v for k, v in sorted(self.times.items())},
        }
