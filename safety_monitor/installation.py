"""What a worker must share with the command that hands it tasks: the package's code, its default
configuration and the files the command names (a spec file, a robot description), one digest per file.

A Ray node runs its tasks with its own installation of the package, and reads named files at their path on
that node. Another commit there, an edited `thresholds.yaml` or another copy of the spec file would score a
bag by other rules and the report would mix the two without a word, so each Ray task compares what its
process has with what the command has before it runs (`executors`). The C kernels are left out: their
source is not installed, and builds of the same source differ byte for byte.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from safety_monitor.files import config_dir

PACKAGE = Path(__file__).resolve().parent
PACKAGE_FILES = ("*.py", "*.pyi", "*.xml")  # the code and the workcell model, as installed
CONFIG_FILES = ("*.yaml",)


@dataclass(frozen=True)
class Installation:
    """Digests (sha256) by path: `files` of the installation (`safety_monitor/...` for the package, `config/...`
    for its config folder), `named` of the files a command names, by their path as given (None: no such file)."""

    files: Mapping[str, str]
    named: Mapping[str, str | None] = field(default_factory=dict)

    def naming(self, paths: Iterable[str | Path]) -> Installation:
        """This installation with the files at `paths` (relative ones in the working folder) as named files."""
        return replace(self, named={str(path): _digest(Path(path)) for path in paths})

    def differences(self, other: Installation) -> list[str]:
        """Where the installation `other` (the command's) differs from this one, file by file, sorted by path."""
        return _compare(self.files, other.files)

    def named_differences(self, other: Installation) -> list[str]:
        """Where the named files of `other` (the command's) differ from these, in the command's order."""
        return _compare(self.named, other.named, sort=False)


def _compare(mine: Mapping[str, str | None], theirs: Mapping[str, str | None], sort: bool = True) -> list[str]:
    out = []
    paths = list(dict.fromkeys([*theirs, *mine]))
    for path in sorted(paths) if sort else paths:
        here, there = mine.get(path), theirs.get(path)
        if here == there:
            continue
        out.append(
            f"{path} missing here" if here is None else f"{path} only here" if there is None else f"{path} differs"
        )
    return out


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


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
