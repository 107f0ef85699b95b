"""What a worker must share with the command that hands it tasks: the package's code, its default
configuration and the files the command names (a spec file, a robot description), one digest per file.

A Ray node runs its tasks with its own installation of the package, and reads named files at their path on
that node. Another commit there, an edited `thresholds.yaml` or another copy of the spec file would score a
bag by other rules and the report would mix the two without a word, so each Ray task compares what its
process has with what the command has before it runs (`executors`). The C kernels are left out: their
source is not installed, and builds of the same source differ byte for byte.

A task that reads a bag or trace file by path also checks it is the command's copy (`copy_problem`): a copy
still being synced to a node, or another recording at the same path there, would otherwise be read as it is.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TypeVar, overload

from safety_monitor.files import config_dir

PACKAGE = Path(__file__).resolve().parent
PACKAGE_FILES = ("*.py", "*.pyi", "*.xml")  # the code and the workcell model, as installed
CONFIG_FILES = ("*.yaml",)
T = TypeVar("T")
P = TypeVar("P", bound="str | Path")
COPY_ENDS = 65536  # bytes of each file read at either end: an MCAP's summary and footer, SQLite's outer pages


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


def first_few(differences: list[str]) -> str:
    """The first three differences, and how many more, for one line."""
    return ", ".join(differences[:3]) + (f" and {len(differences) - 3} more" if len(differences) > 3 else "")


def _compare(
    mine: Mapping[str, T | None],
    theirs: Mapping[str, T | None],
    sort: bool = True,
    differ: Callable[[str, T, T], str] = lambda path, here, there: f"{path} differs",
) -> list[str]:
    out = []
    paths = list(dict.fromkeys([*theirs, *mine]))
    for path in sorted(paths) if sort else paths:
        here, there = mine.get(path), theirs.get(path)
        if here == there:
            continue
        out.append(
            f"{path} missing here"
            if here is None
            else f"{path} only here"
            if there is None
            else differ(path, here, there)
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


@dataclass(frozen=True)
class Copy:
    """What tells one machine's copy of a file or bag folder from another without reading it whole, as hashing
    would: per file (by name), its size and a sha256 of its first and last COPY_ENDS bytes (a short file
    whole). A copy cut short, still being written, or another recording differs there."""

    host: str  # the machine that read it
    files: Mapping[str, tuple[int, str]]


def copy_of(path: str | Path) -> Copy | None:
    """This machine's copy of the file or bag folder at `path`; None: nothing readable there."""
    top = Path(path)
    try:
        files = sorted(f for f in top.iterdir() if f.is_file()) if top.is_dir() else [top]
        return Copy(socket.gethostname(), {f.name: _ends_digest(f) for f in files})
    except OSError:
        return None


def _ends_digest(path: Path) -> tuple[int, str]:
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        digest = hashlib.sha256(f.read(COPY_ENDS))
        if size > COPY_ENDS:
            f.seek(max(COPY_ENDS, size - COPY_ENDS))
            digest.update(f.read(COPY_ENDS))
    return size, digest.hexdigest()


def copy_differences(here: Copy, command: Copy) -> list[str]:
    """Where `here` (this process's copy) differs from the command's, file by file, sorted by name."""
    now, then = (
        ("now", "when the command read it") if here.host == command.host else ("here", "on the command's machine")
    )

    def sizes_or_ends(name: str, mine: tuple[int, str], theirs: tuple[int, str]) -> str:
        return f"{name} is {mine[0]} bytes {now}, {theirs[0]} {then}" if mine[0] != theirs[0] else f"{name} differs"

    return _compare(here.files, command.files, differ=sizes_or_ends)


def copy_problem(path: str | Path, command: Copy | None, what: str) -> str | None:
    """A worker's check that it reads the command's copy of the file or bag at `path` (a Ray node reads its
    own file system): None if it does, or if the command could not read it either (the task's own reading
    then says why); else one line saying what differs. On the command's own machine the file changed while
    the command ran (a bag still being recorded); on another, that node has another copy (asking for the
    same `what` at the same path on every node)."""
    here = copy_of(path)
    if command is None or (here is not None and here.files == command.files):
        return None
    host = here.host if here is not None else socket.gethostname()
    if host == command.host:
        if here is None:
            return f"{path}: removed while the command ran"
        return f"{path}: changed while the command ran ({first_few(copy_differences(here, command))}): read it once it is written in full"
    if here is None:
        return f"{path}: not found on {host}: put the {what} at the same path on every node"
    return (
        f"{path}: the copy on {host} is not the command's ({first_few(copy_differences(here, command))}): "
        f"put the same {what} at the same path on every node"
    )


class WithCopies(Sequence[tuple[P, Copy | None]]):
    """Each path with the command's copy of it (`copy_of`), read as the executor hands the path out: on a
    shared file system each read waits on the network, and reading every bag's ends first would hold back the
    first task by seconds per hundred bags."""

    def __init__(self, paths: Sequence[P]) -> None:
        self._paths: Sequence[P] = paths

    def __len__(self) -> int:
        return len(self._paths)

    @overload
    def __getitem__(self, index: int) -> tuple[P, Copy | None]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[P, Copy | None]]: ...
    def __getitem__(self, index: int | slice) -> tuple[P, Copy | None] | list[tuple[P, Copy | None]]:
        if isinstance(index, slice):
            return [(path, copy_of(path)) for path in self._paths[index]]
        path = self._paths[index]
        return path, copy_of(path)
