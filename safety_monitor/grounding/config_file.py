"""Reading the grounding's YAML config files, with one kind of error that names the file."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from safety_monitor.errors import GroundingError


def read_config(path: Path, what: str) -> Any:
    """The YAML document in `path`; a GroundingError saying which file and what it should hold."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise GroundingError(f"{path}: cannot read {what}: {exc}") from None
