"""Counting the grounder's C kernels (`_geomath`) refusing their inputs. A kernel raises TypeError or
ValueError for what it cannot read in one call, and its caller then takes numpy's path: still correct, so
only the speed would show a driver handing it strided or otherwise foreign arrays. `usable_poses` hands such a
pose to the grounder's general path itself (`Grounder._pose_ok`): each call of it counts as a refusal."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from safety_monitor.grounding import _geomath
from safety_monitor.grounding.grounder import Grounder


def count_kernels(monkeypatch: pytest.MonkeyPatch) -> tuple[Counter[str], Counter[str]]:
    """Wrap every public kernel for the test's duration: (calls, refusals) per kernel name, as they happen."""
    calls: Counter[str] = Counter()
    refused: Counter[str] = Counter()

    def counted(kernel: Any, name: str) -> Any:
        def call(*args: Any) -> Any:
            calls[name] += 1
            try:
                return kernel(*args)
            except (TypeError, ValueError):
                refused[name] += 1
                raise

        return call

    for name in dir(_geomath):
        if not name.startswith("_") and callable(kernel := getattr(_geomath, name)):
            monkeypatch.setattr(_geomath, name, counted(kernel, name))
    general_path = Grounder._pose_ok

    def refused_pose(pose: Any) -> bool:
        refused["usable_poses"] += 1
        return general_path(pose)

    monkeypatch.setattr(Grounder, "_pose_ok", staticmethod(refused_pose))
    return calls, refused
