"""Predicate traces on disk: JSON Lines or CSV, one frame per line, read with precise error messages.

JSON Lines: one object per frame mapping predicate -> true/false/null (null = unknown), with an
optional number "t" (seconds; a true/false/null "t" is a predicate named t). CSV: a header row of
predicate names and optionally a time column "t", then one row per frame with true/false/1/0 (any
case), or null/unknown: CSV has no types, so these are its spellings. Files ending in .csv are CSV;
others are JSON Lines, where, as in every typed file the package reads (safety_monitor/files.py), a
boolean is true or false: 1/0 are numbers, refused rather than guessed at.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from safety_monitor.errors import SourceError
from safety_monitor.files import parse_json, read_text

_CSV_VALUES = {"true": True, "1": True, "false": False, "0": False, "null": None, "unknown": None}


@dataclass(frozen=True)
class Trace:
    """Frames (predicate -> bool, None = unknown) in file order, their times if the file has them,
    and each frame's line number for messages."""

    path: str
    frames: list[dict[str, bool | None]]
    times: list[float] | None
    lines: list[int]

    def to_matrix(self, predicates: tuple[str, ...] | list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(values, known) frames x predicates bool matrices; a frame lacking a predicate is a SourceError."""
        values = np.zeros((len(self.frames), len(predicates)), dtype=bool)
        known = np.ones_like(values)
        for i, frame in enumerate(self.frames):
            missing = [p for p in predicates if p not in frame]
            if missing:
                raise SourceError(
                    f"{self.path}:{self.lines[i]}: frame {i} has no value for predicate(s) "
                    + ", ".join(map(repr, missing))
                )
            for k, p in enumerate(predicates):
                v = frame[p]
                if v is None:
                    known[i, k] = False
                else:
                    values[i, k] = v
        return values, known


def read_trace(path: str | Path) -> Trace:
    """Read a JSON Lines or CSV trace; SourceError names the file, line and problem."""
    path = Path(path)
    text = read_text(path, "trace", SourceError)
    if path.suffix.lower() == ".csv":
        return _read_csv(str(path), text)
    return _read_jsonl(str(path), text)


def _read_jsonl(name: str, text: str) -> Trace:
    frames, times, lines = [], [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        obj = parse_json(line, f"{name}:{number}", SourceError)
        if not isinstance(obj, dict):
            raise SourceError(
                f"{name}:{number}: expected an object mapping predicate -> true/false, got {type(obj).__name__}"
            )
        frame: dict[str, bool | None] = {}
        t = None
        for key, value in obj.items():
            if key == "t" and not (value is None or isinstance(value, bool)):
                t = _time(value, name, number)
            elif value is None or isinstance(value, bool):
                frame[key] = value
            else:
                raise SourceError(
                    f"{name}:{number}: predicate {key!r} has value {value!r}; expected true, false or null"
                )
        frames.append(frame)
        times.append(t)
        lines.append(number)
    return Trace(name, frames, _all_or_none(times, lines, name), lines)


def _read_csv(name: str, text: str) -> Trace:
    rows = csv.reader(text.splitlines())
    header = next(rows, None)
    if not header or not any(h.strip() for h in header):
        raise SourceError(f"{name}:1: expected a header row of predicate names")
    header = [h.strip() for h in header]
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes or "" in header:
        raise SourceError(
            f"{name}:1: header has {'duplicate columns ' + ', '.join(dupes) if dupes else 'an empty column name'}"
        )
    frames, times, lines = [], [], []
    for number, row in enumerate(rows, start=2):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise SourceError(f"{name}:{number}: {len(row)} values for {len(header)} columns")
        frame: dict[str, bool | None] = {}
        t = None
        for key, cell in zip(header, row):
            word = cell.strip().lower()
            if key == "t":
                t = _time(cell.strip(), name, number)
            elif word in _CSV_VALUES:
                frame[key] = _CSV_VALUES[word]
            else:
                raise SourceError(
                    f"{name}:{number}: column {key!r} has value {cell!r}; expected true/false/1/0 or null"
                )
        frames.append(frame)
        times.append(t)
        lines.append(number)
    return Trace(name, frames, _all_or_none(times, lines, name), lines)


def _time(value, name: str, number: int) -> float:
    try:
        t = float(value)
    except (TypeError, ValueError):
        t = math.nan
    if isinstance(value, bool) or not math.isfinite(t):
        raise SourceError(f"{name}:{number}: 't' must be a finite number of seconds, got {value!r}")
    return t


def _all_or_none(times: list[float | None], lines: list[int], name: str) -> list[float] | None:
    """Times for every frame or for none; non-decreasing."""
    if all(t is None for t in times):
        return None
    known: list[float] = []
    for i, t in enumerate(times):
        if t is None:
            raise SourceError(f"{name}:{lines[i]}: frame {i} has no 't' while other frames do")
        if known and t < known[-1]:
            raise SourceError(f"{name}:{lines[i]}: time goes backwards ({t} after {known[-1]})")
        known.append(t)
    return known
