"""Three-valued values and the debounce state machines of the estimators, all counted in frames.

A predicate value is True, False or None (unknown: an input was missing, NaN or stale). Kleene logic
keeps a definite answer when one exists (any() with one known True is True) and says unknown otherwise,
so a missing input never reads as a silent False. Debouncers freeze on unknown input; a persistence
(true after n consecutive true frames) never counts a run across an unknown frame.
"""

from __future__ import annotations

from collections.abc import Iterable

Tri = bool | None


def any3(values: Iterable[Tri]) -> Tri:
    """Kleene OR: True if any is True, else None if any is unknown, else False."""
    values = values if isinstance(values, (list, tuple)) else list(values)
    if any(values):
        return True
    return None if None in values else False


def all3(values: Iterable[Tri]) -> Tri:
    """Kleene AND: False if any is False, else None if any is unknown, else True."""
    unknown = False
    for v in values:
        if v is False:
            return False
        unknown = unknown or v is None
    return None if unknown else True


def not3(v: Tri) -> Tri:
    return None if v is None else not v


class SymmetricDebounce:
    """Follows the raw value once it has differed from the output for `n` consecutive frames.

    With n = 5 a rise (or fall) shows on the 5th frame of the new raw value. After `restart()` (its input
    had a gap) the output is unknown until `n` consecutive raw frames agree, then it is theirs: a run that
    began before the gap is not continued across it, nor across an unknown frame since, and `value` keeps the
    last decided one meanwhile.
    """

    def __init__(self, n: int, initial: bool = False):
        self.n, self.value, self._run = n, initial, 0
        self.warming, self._candidate = False, initial

    def step(self, raw: Tri) -> Tri:
        if raw is None:
            if self.warming:  # either value: no agreeing run counts across it
                self._run = 0
            return None
        if self.warming:
            self._run = self._run + 1 if raw == self._candidate else 1
            self._candidate = raw
            if self._run < self.n:
                return None
            self.value, self._run, self.warming = raw, 0, False
            return raw
        if raw == self.value:
            self._run = 0
        else:
            self._run += 1
            if self._run >= self.n:
                self.value, self._run = raw, 0
        return self.value

    def restart(self) -> int:
        """The evidence restarts after a gap in the input (this frame its first): unknown until `n` agreeing raw
        frames. Returns the frames from this one to the earliest on which the value may have changed unseen
        (the run already seen towards a change counts)."""
        lead = self.n - 1 - self._run
        self._run, self._candidate, self.warming = 0, False, True
        return lead


class Persistence:
    """True once the raw value has been true for at least `n` consecutive frames, counted across unknown
    frames soundly: an unknown frame may have been either, so it ends the run that was seen (`seen`) but
    extends the run that may have been (`possible`); only a known false ends both. True once `seen` reaches
    `n`; unknown on an unknown frame and while only `possible` reaches `n`; false otherwise."""

    def __init__(self, n: int, possible: int = 0):
        """`possible`: frames before the first step that may already have been true (an unseen spell)."""
        if n < 1:
            raise ValueError(f"a persistence of {n} frames: it needs at least one")
        self.n, self.seen, self.possible = n, 0, possible

    def step(self, raw: Tri) -> Tri:
        if raw is False:  # most frames: a known false ends both runs, and no run is long enough
            self.seen = self.possible = 0
            return False
        self.seen = self.seen + 1 if raw else 0
        self.possible += 1
        if self.seen >= self.n:
            return True
        return None if raw is None or self.possible >= self.n else False


class StickyTrue:
    """Turns true after `n` consecutive raw-true frames, then stays true until `reset()`. After `restart()`
    (its input had a gap) a run shorter than `n` is unknown, not false: the latch may have held across the
    gap; a raw false, or the full run, ends that."""

    def __init__(self, n: int):
        self.n, self.value, self._run, self._warming = n, False, 0, False

    def step(self, raw: Tri) -> Tri:
        if self.value:
            return True
        if raw is None:
            return None
        self._run = self._run + 1 if raw else 0
        self.value = self._run >= self.n
        if self._warming:
            if raw and not self.value:
                return None
            self._warming = False
        return self.value

    def reset(self) -> None:
        self.value, self._run = False, 0

    def restart(self) -> None:
        """The evidence restarts after a gap in the input: unknown until a run of `n` or a raw false."""
        self.value, self._run, self._warming = False, 0, True


class Timer:
    """Frames elapsed since `start(frame)`; expired once `n` frames have passed (elapsed >= n).

    `doubt()` says that the timer may have stopped unseen since its start (what stops it, a settle, takes a
    persistence, and the object it waits for was unknown for that long), or may never have started (its event
    may have happened unseen, from `earliest` on, or not at all): an expiry is then unknown, not true.
    A start decided late (its event happened unseen, at `earliest` or later) makes the expiry unknown from
    `earliest`'s expiry until the start's.
    """

    def __init__(self, n: int):
        self.n = n
        self.started_at: int | None = None
        self.earliest = 0  # the earliest frame its event may have happened
        self.doubted = False

    @property
    def running(self) -> bool:
        return self.started_at is not None

    def start(self, frame: int, earliest: int | None = None) -> None:
        """Started by an event on `frame`, or (`earliest`) on some frame from `earliest` to `frame`."""
        self.started_at, self.doubted = frame, False
        self.earliest = frame if earliest is None else earliest

    def stop(self) -> None:
        self.started_at, self.doubted = None, False

    def doubt(self) -> None:
        """The stop condition may have held unseen, or the start may not have happened (no effect on a stopped
        timer)."""
        if self.started_at is not None:
            self.doubted = True

    def expired(self, frame: int) -> Tri:
        """True once `n` frames have passed; unknown instead if `doubt()` was called since the start, or while
        they have passed only since the earliest start."""
        if self.started_at is None or frame - self.earliest < self.n:
            return False
        return None if self.doubted or frame - self.started_at < self.n else True
