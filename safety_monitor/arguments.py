"""argparse types for options that say their range (numbers, folders), so a bad value is a usage error (exit 2)
naming the option and the range rather than a traceback from deep inside (a negative seed in numpy,
a bootstrap of 10^11 resamples allocating terabytes)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path

SEED_MAX = 2**32 - 1  # numpy's and MuJoCo's seeds are 32-bit


def whole(low: int, high: int) -> Callable[[str], int]:
    """A whole number from `low` to `high`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high}, got {text!r}")
        return value

    parse.__name__ = "whole number"  # argparse names the type in some messages
    return parse


def number(low: float, high: float, *, above: bool = False, unit: str = "") -> Callable[[str], float]:
    """A finite number from `low` (excluded when `above`) to `high`, of `unit`s (for the message)."""
    lower = f"> {low:g}" if above else f">= {low:g}"
    what = f"a number{' of ' + unit if unit else ''} {lower} and <= {high:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value > high or (value <= low if above else value < low):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


def seed() -> Callable[[str], int]:
    return whole(0, SEED_MAX)


def folder(text: str) -> Path:
    """An existing directory (a search path that is a file or missing would silently find nothing)."""
    path = Path(text)
    if not text or not path.is_dir():
        raise argparse.ArgumentTypeError(f"not a folder: {text!r}")
    return path


_NAMESPACE = re.compile(r"(/[A-Za-z_][A-Za-z0-9_]*)+")


def ros_namespace(text: str) -> str:
    """A ROS namespace, absolute (`robot1` is `/robot1`, `/` the root)."""
    ns = text if text.startswith("/") else "/" + text
    if ns != "/" and not _NAMESPACE.fullmatch(ns):
        raise argparse.ArgumentTypeError(
            f"must be a ROS namespace (names of letters, digits and _, not starting with a digit, "
            f"separated by /, no trailing /), got {text!r}"
        )
    return ns


ros_namespace.__name__ = "namespace"
