"""Reading the grounding's YAML config files, with one kind of error that names the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from safety_monitor.errors import GroundingError
from safety_monitor.files import load_yaml


def read_config(path: Path, what: str) -> Any:
    """The YAML document in `path` (bounded, UTF-8, no aliases); a GroundingError naming the file and `what`."""
    return load_yaml(path, what, GroundingError)
