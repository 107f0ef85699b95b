"""The live nodes' parameter file (config/nodes.yaml, the ROS 2 parameter-file format) as replay reads it.

A site tunes the estimator's input limits and the monitor's watchdog and history for its robot; replay
takes the same file so that it scores a bag as that live stack did (the same stale frames, blind frames
and counterexample windows), not with the package's defaults.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from safety_monitor.errors import SourceError

# parameter -> the type replay needs; every other parameter in the file is the live nodes' business
REPLAY_PARAMS = {"joint_states_frozen_s": float, "wrench_frozen_s": float, "wrench_stale_s": float,
                 "pose_stale_s": float, "predicates_timeout_s": float, "history_frames": int}
_NODES = ("estimator_node", "monitor_node")
_POSITIVE = ("predicates_timeout_s", "history_frames")


def load_node_params(path: str | Path) -> dict[str, Any]:
    """The replay-relevant parameters of a parameter file: `/**` first, then sections of the estimator
    and monitor nodes (any namespace), as rcl applies them to those nodes."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise SourceError(f"--params {path}: cannot read it: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SourceError(f"--params {path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(doc, Mapping):
        raise SourceError(f"--params {path}: expected a ROS 2 parameter file (a mapping of node names)")
    sections = [key for key in doc if key == "/**"] + [key for key in doc if str(key).rstrip("/").endswith(_NODES)]
    params: dict[str, Any] = {}
    for key in sections:
        body = doc[key]
        values = body.get("ros__parameters") if isinstance(body, Mapping) else None
        if not isinstance(values, Mapping):
            raise SourceError(f"--params {path}: section {key!r} has no ros__parameters mapping")
        params.update({k: v for k, v in values.items() if k in REPLAY_PARAMS})
    for name, value in params.items():
        kind = REPLAY_PARAMS[name]
        if isinstance(value, bool) or not isinstance(value, int if kind is int else (int, float)):
            raise SourceError(f"--params {path}: {name} must be a {kind.__name__}, got {value!r}")
        positive = name in _POSITIVE
        if value < 0 or (positive and value == 0):
            raise SourceError(f"--params {path}: {name} must be {'> 0' if positive else '>= 0 (0: off or default)'}, "
                              f"got {value!r}")
    return {name: REPLAY_PARAMS[name](value) for name, value in params.items()}
