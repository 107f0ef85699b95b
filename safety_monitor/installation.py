"""What a worker must share with the command that hands it tasks: the package's code and its default
configuration, one digest per file.

A Ray node runs its tasks with its own installation of the package. One with another commit, or an edited
`thresholds.yaml`, would score a bag by other rules and the report would mix the two without a word, so
each Ray task compares this process's installation with the command's before it runs (`executors`). The
C kernels are left out: their source is not installed, and builds of the same source differ byte for byte.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from safety_monitor.files import config_dir

PACKAGE = Path(__file__).resolve().parent
PACKAGE_FILES = ("*.py", "*.pyi", "*.xml")  # the code and the workcell model, as installed
CONFIG_FILES = ("*.yaml",)


@dataclass(frozen=True)
class Installation:
    """Digests (sha256) by path: `safety_monitor/...` for the package, `config/...` for its config folder."""

    files: Mapping[str, str]

    def differences(self, other: Installation) -> list[str]:
        """What `other` (the command's) has that this one does not, file by file, sorted by path."""
        out = []
        for path in sorted(self.files.keys() | other.files.keys()):
            mine, theirs = self.files.get(path), other.files.get(path)
            if mine is None:
                out.append(f"{path} missing here")
            elif theirs is None:
                out.append(f"{path} only here")
            elif mine != theirs:
                out.append(f"{path} differs")
        return out


def read_installation(package: Path, config: Path) -> Installation:
    """The installation whose package folder is `package` and config folder `config`."""
    files = {}
    for root, prefix, patterns in ((package, "safety_monitor", PACKAGE_FILES), (config, "config", CONFIG_FILES)):
        for pattern in patterns:
            for path in root.rglob(pattern):
                if "__pycache__" not in path.parts:
                    files[f"{prefix}/{path.relative_to(root).as_posix()}"] = hashlib.sha256(
                        path.read_bytes()
                    ).hexdigest()
    return Installation(files)


@cache
def this_installation() -> Installation:
    """This process's installation, read once."""
    return read_installation(PACKAGE, config_dir())
