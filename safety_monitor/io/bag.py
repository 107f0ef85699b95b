"""rosbag2 reading and writing with rosbags (sqlite3 and mcap; no ROS installation needed).

Reading: `BagReader` opens a bag directory or a bare `.mcap`/`.db3` file with rosbags' AnyReader,
which registers the message definitions embedded in the bag (mcap, and sqlite3 from Iron on); types
the bag does not define come from the newest ROS 2 typestore. Topics of a type nobody defines, or whose
embedded definition is broken (a vendor tool's), are skipped with a warning naming topic, type and why;
asking for one is an error saying so. Messages stream in log-time order (a split bag's files merged, whatever order
metadata.yaml lists them in), so bags larger than memory are fine.
`message_batches` gives the same stream a chunk at a time as one byte buffer with offsets (from an indexed
mcap file straight from its chunks and message indexes), for readers that decode many messages at once.

Writing: `BagWriter` serialises with rosbags' own CDR serializer (bytes serialised by rclpy can fail
rosbags' size check on read) and embeds each type's definition, so any ROS tool decodes the bag.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import logging
import os
import sqlite3
import struct
from collections.abc import Collection, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path, PurePath
from types import MappingProxyType
from typing import Any

import apsw
import numpy as np
import yaml
from rosbags.highlevel import AnyReader, AnyReaderError
from rosbags.interfaces import Connection, ConnectionExtRosbag2, MessageDefinition, MessageDefinitionFormat
from rosbags.rosbag2 import Reader, ReaderError, StoragePlugin, Writer, WriterError
from rosbags.rosbag2.metadata import ReaderMetadata
from rosbags.rosbag2.reader import DirectoryReader
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.rosbag2.storage_mcap import decompress as mcap_decompress
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, TypesysError, get_types_from_idl, get_types_from_msg, get_typestore

from safety_monitor.errors import SourceError
from safety_monitor.frames import Pose, Wrench
from safety_monitor.io import messages as m

log = logging.getLogger(__name__)

BAG_FILE_SUFFIXES = (".mcap", ".db3")
_COMPRESSED_SUFFIXES = tuple(f"{suffix}.zstd" for suffix in BAG_FILE_SUFFIXES)  # rosbag2's file compression
_STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}


@cache
def default_typestore() -> Any:
    """ROS 2 Kilted's message definitions, or the newest store this rosbags version has."""
    stores = [s for s in Stores if s.name.startswith("ROS2_")]
    preferred = getattr(Stores, "ROS2_KILTED", None) or stores[-1]
    return get_typestore(preferred)


def split_files(folder: Path) -> list[Path]:
    """The storage files of a bag folder without metadata.yaml, in recording order: rosbag2 names a bag's files
    `<folder>_<index>.mcap` (or .db3) and writes metadata.yaml only when it stops (a killed recorder writes
    none). Empty for any other folder, and for one holding a single such file (a bag file of its own)."""
    if (folder / "metadata.yaml").is_file() or not folder.is_dir():
        return []
    found = {}
    for file in folder.iterdir():
        stem, _, index = file.stem.rpartition("_")
        if stem == folder.name and index.isdigit() and file.suffix in BAG_FILE_SUFFIXES and file.is_file():
            found[int(index), file.suffix] = file
    return [found[k] for k in sorted(found)] if len(found) > 1 else []


def is_bag_dir(path: Path) -> bool:
    """A rosbag2 bag folder: one with metadata.yaml, or the storage files of one recording without it."""
    return (path / "metadata.yaml").is_file() or bool(split_files(path))


def bag_argument(path: Path) -> Path:
    """A bag as a user may name it: its metadata.yaml stands for its folder (the bag rosbags opens)."""
    return path.parent if path.name == "metadata.yaml" and path.is_file() else path


def find_bags(paths: Iterable[str | Path]) -> list[Path]:
    """Expand arguments into bags: bag directories (or their metadata.yaml), bare .mcap/.db3 files, and
    folders searched recursively for either (files inside a bag directory belong to that bag); any other
    file is refused, before any bag is opened. Sorted per argument.
    Symlinked folders are searched too (a selection of runs is often a folder of links), each real folder
    once, so a link back up the tree ends there."""
    found: list[Path] = []
    for arg in paths:
        path = bag_argument(Path(arg))
        if not path.exists():
            raise SourceError(f"{path}: no such file or folder")
        if path.is_file() and path.name.endswith(_COMPRESSED_SUFFIXES):
            raise _compressed_file(path)
        if path.is_file() and not path.name.endswith(BAG_FILE_SUFFIXES):
            raise SourceError(
                f"{path}: not a bag (give a bag folder, an {' or '.join(BAG_FILE_SUFFIXES)} file, or a folder of bags)"
            )
        if path.is_file() or is_bag_dir(path):
            found.append(path)
            continue
        bag_dirs, loose = _walk_for_bags(path)
        if compressed := sorted(p for p in loose if p.name.endswith(_COMPRESSED_SUFFIXES)):
            raise _compressed_file(compressed[0])
        if not bag_dirs and not loose:
            raise SourceError(f"{path}: no rosbag2 bags (metadata.yaml, *.mcap, *.db3) in this folder")
        found.extend(sorted(bag_dirs + loose))
    return found


def _compressed_file(path: Path) -> SourceError:
    """A storage file that rosbag2's file compression compressed, found outside its bag folder: rosbags reads
    it only through the metadata.yaml that says it is compressed."""
    return SourceError(
        f"{path}: a zstd-compressed bag file: give its bag folder with its metadata.yaml, or decompress it "
        f"(`zstd -d {path}`) and give the {path.suffixes[-2]} file"
    )


def _walk_for_bags(top: Path) -> tuple[list[Path], list[Path]]:
    """The bag directories under `top` and the storage files outside them (compressed too), following symlinks."""
    bag_dirs: list[Path] = []
    loose: list[Path] = []
    seen: set[str] = set()
    for folder, subfolders, files in os.walk(top, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:  # a link to a folder already searched (or to one of its parents)
            subfolders.clear()
            continue
        seen.add(real)
        here = Path(folder)
        if is_bag_dir(here):
            bag_dirs.append(here)
            subfolders.clear()  # its files are its own
            continue
        loose += [
            here / f for f in files if f.endswith(BAG_FILE_SUFFIXES + _COMPRESSED_SUFFIXES) and (here / f).is_file()
        ]
    return bag_dirs, loose


@dataclass(frozen=True)
class TopicSummary:
    msgtype: str
    count: int


# rosbags reads sqlite3 storage through apsw, whose errors are not sqlite3.Error; damaged mcap length
# fields make rosbags seek past what a C size holds (OverflowError); a metadata.yaml value of the wrong
# type (a number for a topic name) fails inside rosbags with TypeError
_READ_ERRORS = (
    AnyReaderError,
    ReaderError,
    SerdeError,
    TypesysError,
    sqlite3.Error,
    apsw.Error,
    OSError,
    ValueError,
    KeyError,
    IndexError,
    AssertionError,
    EOFError,
    OverflowError,
    TypeError,
)


_MCAP_MAGIC = b"\x89MCAP0\r\n"


def _open_error(path: Path, exc: BaseException) -> str:
    """Why rosbags could not open the bag, in one line naming the file at fault."""
    files = [path] if path.is_file() else sorted(path.glob("*.mcap"))
    for file in files:
        if file.suffix != ".mcap":
            continue
        with file.open("rb") as f:
            if f.read(8) != _MCAP_MAGIC:
                return f"{file}: cannot open bag: not an mcap file (it does not start with the mcap magic bytes)"
            f.seek(0, 2)
            f.seek(max(8, f.tell() - 8))
            if f.read() != _MCAP_MAGIC:  # an mcap file ends with the magic too
                return (
                    f"{file}: cannot open bag: the mcap file ends without its footer: it is truncated, or its "
                    "recorder was stopped before closing it (killed); `mcap recover` rebuilds a readable copy"
                )
    if path.is_dir() and (missing := _missing_files(path)):
        return (
            f"{path}: cannot open bag: its metadata.yaml lists {', '.join(missing)}, not in the folder: "
            f"restore it, or describe the files there are with `ros2 bag reindex {path}`"
        )
    cause: BaseException | None = exc
    mark = None  # rosbags hides YAML's error in the exception's context
    while cause is not None and (mark := getattr(cause, "problem_mark", None)) is None:
        cause = cause.__context__
    if mark is not None:
        problem = getattr(cause, "problem", None) or "parse error"
        return (
            f"{path / 'metadata.yaml'}: cannot open bag: not valid YAML at line {mark.line + 1}, column "
            f"{mark.column + 1}: {problem}"
        )
    return f"{path}: cannot open bag: {' '.join(str(exc).split())}"


def _missing_files(bag: Path) -> list[str]:
    """The storage files the bag's metadata.yaml lists that are not in its folder (none if it does not load)."""
    try:
        info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        return [
            name for name in (PurePath(str(f)).name for f in info["relative_file_paths"]) if not (bag / name).exists()
        ]
    except (OSError, ValueError, yaml.YAMLError, KeyError, TypeError):  # a damaged file: rosbags says why
        return []


class _BagDirectory(DirectoryReader):
    """rosbags' bag directory reader, reading the storage files as they are when metadata.yaml is out of step
    with them, and a split bag's files (`--max-bag-size`, `--max-bag-duration`) as one stream in log-time order.

    rosbags reads a file's messages only on connections that match metadata.yaml's in topic, type, QoS and
    type hash, and trusts its counts: an edited QoS string, hash or type drops every message of the topic, and
    a count too high reads as a truncated bag. The files are the recording; metadata.yaml only describes them.
    rosbags also reads split files in the order metadata.yaml lists them, and nothing makes that the order
    they were recorded in."""

    out_of_step: list[str]  # how metadata.yaml disagrees with the files, one phrase each

    def open(self) -> None:
        super().open()
        self.out_of_step = _out_of_step(self)
        if self.out_of_step:
            self.connections, self.metadata = _files_index(self)

    def messages(
        self, connections: Collection[Connection], start: int | None = None, stop: int | None = None
    ) -> Generator[tuple[Connection, int, bytes], None, None]:
        if len(self.storages) < 2:
            yield from super().messages(connections, start, stop)
            return
        files = []
        for storage in self.storages:  # rosbags' own reading (topic matching, message decompression) per file
            one = copy.copy(self)
            one.storages = [storage]
            files.append(one.messages(connections, start, stop))
        yield from heapq.merge(*files, key=lambda message: message[1])


def _out_of_step(bag: DirectoryReader) -> list[str]:
    """Where the bag's metadata.yaml disagrees with its storage files' own index, one phrase each naming the
    field, the topic and the file. None for a metadata.yaml with values of the wrong type (damaged, not out
    of step: BagReader names the value)."""
    listed = bag.connections
    if not _whole(bag.metadata.message_count) or not all(
        isinstance(c.topic, str) and isinstance(c.msgtype, str) and c.msgtype and _whole(c.msgcount) for c in listed
    ):
        return []
    held: dict[str, list[tuple[str, Connection]]] = {}  # topic -> (file name, its connection)
    for storage in bag.storages:
        for conn in storage.connections:
            held.setdefault(conn.topic, []).append((Path(getattr(storage, "path", "?")).name, conn))
    out: list[str] = []
    for topic in sorted({c.topic for c in listed} | held.keys()):
        mine = [c for c in listed if c.topic == topic]
        theirs = held.get(topic, [])
        names = list(dict.fromkeys(name for name, _ in theirs))
        files, hold = ", ".join(names), "holds" if len(names) == 1 else "hold"
        if not theirs:  # a topic listed without messages loses nothing
            if listed_count := sum(c.msgcount for c in mine):
                out.append(f"it lists topic {topic} ({listed_count} messages), which no file holds")
            continue
        if not mine:
            out.append(f"topic {topic} of {files} ({sum(c.msgcount for _, c in theirs)} messages) is not in it")
            continue
        types, found = sorted({c.msgtype for c in mine}), sorted({c.msgtype for _, c in theirs})
        if types != found:
            out.append(f"its type for {topic} is {' and '.join(types)}, {files} {hold} {' and '.join(found)}")
            continue
        for conn in mine:
            same = [(name, c) for name, c in theirs if c.msgtype == conn.msgtype]
            out += dict.fromkeys(_field_disagreements(conn, same))
        counted, stored = sum(c.msgcount for c in mine), sum(c.msgcount for _, c in theirs)
        if counted != stored:
            out.append(f"its message_count for {topic} is {counted}, {files} {hold} {stored}")
    stored = sum(s.metadata.message_count for s in bag.storages)
    if not out and bag.metadata.message_count != stored:
        out.append(f"its message_count is {bag.metadata.message_count}, the files hold {stored}")
    return out


def _field_disagreements(conn: Connection, stored: list[tuple[str, Connection]]) -> Iterator[str]:
    """How one metadata.yaml connection differs from the files' connections of its topic and type."""
    for name, theirs in stored:
        ext, their_ext = conn.ext, theirs.ext
        assert isinstance(ext, ConnectionExtRosbag2) and isinstance(their_ext, ConnectionExtRosbag2)
        if ext.serialization_format != their_ext.serialization_format:
            yield (
                f"its serialization_format for {conn.topic} is {ext.serialization_format!r}, "
                f"{name} has {their_ext.serialization_format!r}"
            )
        if ext.offered_qos_profiles != their_ext.offered_qos_profiles:
            yield f"its offered_qos_profiles for {conn.topic} are not those {name} holds"
        digest = theirs.digest or _definition_digest(theirs.msgtype, theirs.msgdef)
        if conn.digest and digest and conn.digest != digest:
            yield f"its type_description_hash for {conn.topic} is {conn.digest}, {name} has {digest}"


@lru_cache(maxsize=64)
def _definition_digest(msgtype: str, msgdef: MessageDefinition) -> str:
    """The type hash (RIHS01) of a definition embedded in a file that records no hash of its own (mcap); empty
    when it has none or it does not parse (`_broken_definitions` says why)."""
    if msgdef.format == MessageDefinitionFormat.NONE:
        return ""
    try:
        store = get_typestore(Stores.EMPTY)
        store.register(_definition_types(msgtype, msgdef))
        return str(store.hash_rihs01(msgtype))
    except (TypesysError, ValueError, IndexError, KeyError):
        return ""


def _files_index(bag: DirectoryReader) -> tuple[list[Connection], ReaderMetadata]:
    """The connections, counts and times the storage files themselves hold (what `ros2 bag reindex` writes
    into metadata.yaml): one connection per topic, type, QoS and hash, its counts added over the files."""
    conns: list[Connection] = []
    for storage in bag.storages:
        for conn in storage.connections:
            key = (conn.topic, conn.msgtype, conn.ext, conn.digest)
            at = next((i for i, c in enumerate(conns) if (c.topic, c.msgtype, c.ext, c.digest) == key), None)
            if at is None:
                conns.append(conn._replace(id=len(conns) + 1, owner=bag))
            else:
                known = conns[at]
                msgdef = known.msgdef if known.msgdef.format != MessageDefinitionFormat.NONE else conn.msgdef
                conns[at] = known._replace(msgcount=known.msgcount + conn.msgcount, msgdef=msgdef)
    metas = [s.metadata for s in bag.storages if s.metadata.message_count]
    start = min((m.start_time for m in metas), default=2**63 - 1)
    end = max((m.end_time for m in metas), default=0)
    metadata = bag.metadata._replace(
        duration=end - start if metas else 0,
        start_time=start,
        end_time=end,
        message_count=sum(m.message_count for m in metas),
    )
    return conns, metadata


def _whole(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool)


class _CheckedReader(Reader):
    """rosbags' rosbag2 reader that, once open, strips the embedded definitions AnyReader cannot use: text
    that does not parse, a type it uses but nobody defines, a hash it does not match. AnyReader would refuse
    the whole bag for one vendor topic, naming neither; stripped, its topics are skipped. `broken` says why.
    A bag directory is read by `_BagDirectory`."""

    STORAGE_PLUGINS = MappingProxyType({**Reader.STORAGE_PLUGINS, "dir": _BagDirectory})
    broken: dict[str, str]

    def open(self) -> None:
        super().open()
        self.broken = _strip_broken_definitions(self.storage.connections)


def _strip_broken_definitions(connections: list[Connection]) -> dict[str, str]:
    """Check the definitions as AnyReader registers them (all in one typestore); replace the ones it cannot
    use with none, in place. Returns message type -> what is wrong with its definition."""
    defined = tuple(
        (c.msgtype, c.msgdef, c.digest) for c in connections if c.msgdef.format != MessageDefinitionFormat.NONE
    )
    broken = dict(_broken_definitions(defined))
    none = MessageDefinition(MessageDefinitionFormat.NONE, "")
    connections[:] = [c._replace(msgdef=none) if c.msgtype in broken else c for c in connections]
    return broken


@lru_cache(maxsize=32)
def _broken_definitions(defined: tuple[tuple[str, MessageDefinition, str], ...]) -> tuple[tuple[str, str], ...]:
    """(message type, what is wrong) for each unusable one of `defined` (type, definition, recorded hash).
    Kept per set of definitions: the bags of one recorder repeat them, and parsing them again took a third
    of the time it takes to open a bag."""
    broken: dict[str, str] = {}
    pool: dict[str, Any] = {}
    for msgtype, msgdef, _ in defined:
        try:
            pool.update(_definition_types(msgtype, msgdef))
        except (TypesysError, ValueError, IndexError) as exc:
            broken[msgtype] = f"has a definition in the bag that does not parse (at {_tail(exc)!r})"
    store = get_typestore(Stores.EMPTY)
    store.register(pool)
    for msgtype, _, recorded in defined:
        if msgtype in broken:
            continue
        try:
            digest = store.hash_rihs01(msgtype)
        except KeyError as exc:
            broken[msgtype] = f"has a definition in the bag that leaves {exc.args[0]} undefined"
            continue
        if recorded and digest != recorded:
            broken[msgtype] = "has a definition in the bag that does not match the type hash the bag records"
    return tuple(broken.items())


def _definition_types(msgtype: str, msgdef: MessageDefinition) -> dict[str, Any]:
    """The types a connection's embedded definition declares, parsed as AnyReader parses it."""
    if msgdef.format == MessageDefinitionFormat.MSG:
        return get_types_from_msg(msgdef.data, msgtype)
    sep = "=" * 80 + "\n"
    if not msgdef.data.startswith(f"{sep}IDL: "):
        return get_types_from_idl(msgdef.data)
    types: dict[str, Any] = {}
    for part in msgdef.data.split(sep)[1:]:
        types.update(get_types_from_idl(part.split("\n", 1)[1]))
    return types


def _tail(exc: Exception) -> str:
    """The last line of rosbags' parse error: the definition text from where parsing failed."""
    lines = str(exc).strip().splitlines() or [""]
    return lines[-1][:60]


@dataclass(frozen=True)
class MessageBatch:
    """Consecutive messages of a stream (log-time order) in one buffer: message i is
    `buffer[start[i]:start[i] + size[i]]`, on topic `topics[which[i]]` of type `msgtypes[which[i]]`."""

    topics: tuple[str, ...]
    msgtypes: tuple[str, ...]
    which: np.ndarray  # int64 per message
    log_ns: np.ndarray  # int64 per message
    buffer: bytes
    start: np.ndarray  # int64 per message
    size: np.ndarray  # int64 per message

    def __len__(self) -> int:
        return len(self.start)

    def raw(self, i: int) -> bytes:
        start = int(self.start[i])
        return self.buffer[start : start + int(self.size[i])]


_JOIN_BYTES = 1 << 25  # chunk bytes a batch may hold (32 MiB)
_MCAP_MESSAGE_HEADER = 31  # opcode, record length, channel, sequence, log time, publish time
_MCAP_HEADER_BYTES = np.arange(_MCAP_MESSAGE_HEADER)


class BagReader:
    """An open rosbag2 bag: topic summary and a stream of deserialised messages.

    Every rosbags or storage failure surfaces as SourceError naming the bag, including corruption
    found mid-stream (truncated chunks, damaged sqlite pages).
    """

    def __init__(self, path: str | Path, typestore: Any = None) -> None:
        self.path = Path(path)
        self._default = typestore or default_typestore()
        self._reader: AnyReader | None = None
        self.skipped: dict[str, str] = {}  # message type -> why its topics cannot be read

    def __enter__(self) -> BagReader:
        try:
            paths = split_files(self.path) or [self.path]  # a split bag without metadata.yaml: its files
            self._reader = AnyReader(paths, default_typestore=self._default)
            if self._reader.is2:
                self._reader.readers = [_CheckedReader(path) for path in paths]
            self._reader.open()
            self._check_metadata()
            self.skipped = self._complete_types()
        except FileNotFoundError as exc:
            raise SourceError(f"{self.path}: not a readable rosbag2 bag ({exc})") from None
        except _READ_ERRORS as exc:
            self._reader = None
            raise SourceError(_open_error(self.path, exc)) from None
        for warning in self.warnings:  # the caller reports them where its user reads (replay: its warnings)
            log.debug("%s: %s", self.path, warning)
        return self

    @property
    def skipped_types(self) -> tuple[str, ...]:
        """Message types whose topics cannot be read (see `skipped` for why)."""
        return tuple(sorted(self.skipped))

    @property
    def warnings(self) -> list[str]:
        """What the bag was read around, for the log and for a caller's report: a metadata.yaml out of step
        with the storage files (read as the files hold it), then one line per skipped type naming its topics
        and why."""
        reader = self._open()
        lines = []
        if out := [d for r in reader.readers for d in getattr(getattr(r, "storage", None), "out_of_step", [])]:
            shown = "; ".join(out[:3]) + (f"; and {len(out) - 3} more" if len(out) > 3 else "")
            lines.append(
                f"metadata.yaml is out of step with the bag's files ({shown}): read as the files hold it; to make "
                f"it agree, move it aside and run `ros2 bag reindex {self.path}`"
            )
        return lines + [
            f"topic(s) {', '.join(sorted({c.topic for c in reader.connections if c.msgtype == msgtype}))} skipped: "
            f"type {msgtype} {why}"
            for msgtype, why in self.skipped.items()
        ]

    def __exit__(self, *exc: object) -> None:
        if self._reader is not None:
            try:
                self._reader.close()
            except (*_READ_ERRORS, AttributeError):  # e.g. metadata 'files' not a list: rosbags' close fails
                pass
            self._reader = None

    def _check_metadata(self) -> None:
        """rosbags takes metadata.yaml's values as they are: fail at open on what a damaged file gives."""
        reader = self._open()
        _ = reader.topics  # sorts the topic names (a number among them is a TypeError)
        untyped = sorted(str(c.topic) for c in reader.connections if not isinstance(c.msgtype, str) or not c.msgtype)
        if untyped:
            raise ValueError(f"no message type for topic(s) {', '.join(untyped)}")
        numbers = [reader.message_count, reader.start_time, reader.end_time, *(c.msgcount for c in reader.connections)]
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
            raise ValueError("a message count or time in the metadata is not a whole number")

    def _complete_types(self) -> dict[str, str]:
        """Add default definitions for types the bag does not define; return why the rest cannot be read
        (a broken definition in the bag is not replaced by a default one: the bag's type may differ)."""
        reader = self._open()
        broken = {t: why for r in reader.readers for t, why in getattr(r, "broken", {}).items()}
        store = reader.typestore
        missing = {c.msgtype for c in reader.connections if c.msgtype not in store.fielddefs} - broken.keys()
        known = {t for t in missing if t in self._default.fielddefs}
        if known:
            store.register({k: v for k, v in self._default.fielddefs.items() if k not in store.fielddefs})
        return broken | dict.fromkeys(
            sorted(missing - known),
            "has no definition in the bag or in the default typestore; record the bag with its message definitions",
        )

    def _open(self) -> AnyReader:
        if self._reader is None:
            raise SourceError(f"{self.path}: bag is not open")
        return self._reader

    @property
    def fielddefs(self) -> dict[str, Any]:
        """The bag's message definitions (rosbags field descriptions by type name, defaults filled in)."""
        return self._open().typestore.fielddefs

    @property
    def topics(self) -> dict[str, TopicSummary]:
        """Topic -> (type, message count), from the bag's metadata. A topic recorded with several types (bags
        merged, a driver that changed its type) has them all as its type, `a and b`: no stream reads it."""
        return {
            name: TopicSummary(
                info.msgtype or " and ".join(sorted({c.msgtype for c in info.connections})), info.msgcount
            )
            for name, info in self._open().topics.items()
        }

    @property
    def message_count(self) -> int:
        return self._open().message_count

    @property
    def end_time(self) -> float | None:
        """The last message's log time in seconds (None for an empty bag)."""
        reader = self._open()
        return reader.end_time / 1e9 if reader.message_count else None

    @property
    def duration(self) -> float:
        """Seconds between the first and the last message's log time."""
        reader = self._open()
        return max(0, reader.end_time - reader.start_time) / 1e9 if reader.message_count else 0.0

    def _connections(self, topics: Collection[str]) -> list[Connection]:
        """The named topics' connections; SourceError naming a topic whose type cannot be decoded."""
        conns = [c for c in self._open().connections if c.topic in topics]
        for conn in conns:
            if conn.msgtype in self.skipped:
                raise SourceError(
                    f"{self.path}: cannot read topic {conn.topic}: its type {conn.msgtype} {self.skipped[conn.msgtype]}"
                )
        return conns

    def raw_messages(self, topics: Collection[str]) -> Iterator[tuple[str, str, int, bytes]]:
        """(topic, msgtype, log time ns, CDR bytes) in log-time order for the named topics."""
        reader = self._open()
        conns = self._connections(topics)
        if not conns:
            return
        read = 0
        try:
            for conn, t_ns, raw in reader.messages(connections=conns):
                read += 1
                yield conn.topic, conn.msgtype, t_ns, raw
        except _READ_ERRORS as exc:
            raise SourceError(f"{self.path}: bag is corrupt or truncated: {exc}") from None
        listed = sum(c.msgcount for c in conns)
        if read < listed:  # rosbags ends a damaged mcap chunk early without an error
            raise SourceError(
                f"{self.path}: bag is corrupt or truncated: its index lists {listed} messages on "
                f"{', '.join(sorted({c.topic for c in conns}))}, only {read} could be read"
            )

    def message_batches(self, topics: Collection[str], size: int = 4096) -> Iterator[MessageBatch]:
        """The messages of `raw_messages`, in the same order, a batch at a time: whole mcap chunks up to
        about `size` messages when the bag is one indexed mcap file (read from the chunks and their message
        indexes, without a Python step per record), else `size` messages joined from `raw_messages`; a batch
        holds at most about _JOIN_BYTES of data beyond one chunk or message."""
        reader = self._open()
        conns = self._connections(topics)
        if not conns:
            return
        storage = _indexed_mcap(reader)
        if storage is None:
            yield from self._joined_batches(topics, size)
            return
        read = 0
        try:
            for batch in _chunk_batches(storage, conns, size):
                read += len(batch)
                yield batch
        except _READ_ERRORS as exc:
            raise SourceError(f"{self.path}: bag is corrupt or truncated: {exc}") from None
        listed = sum(c.msgcount for c in conns)
        if read < listed:
            raise SourceError(
                f"{self.path}: bag is corrupt or truncated: its index lists {listed} messages on "
                f"{', '.join(sorted({c.topic for c in conns}))}, only {read} could be read"
            )

    def _joined_batches(self, topics: Collection[str], size: int) -> Iterator[MessageBatch]:
        kinds: dict[tuple[str, str], int] = {}
        which, stamps, raws = [], [], []
        held = 0
        for topic, msgtype, t_ns, raw in self.raw_messages(topics):
            which.append(kinds.setdefault((topic, msgtype), len(kinds)))
            stamps.append(t_ns)
            raws.append(raw)
            held += len(raw)
            if len(raws) == size or held >= _JOIN_BYTES:
                yield _joined(kinds, which, stamps, raws)
                which, stamps, raws, held = [], [], [], 0
        if raws:
            yield _joined(kinds, which, stamps, raws)

    def deserialize(self, raw: bytes, msgtype: str) -> Any:
        try:
            return self._open().typestore.deserialize_cdr(raw, msgtype)
        except _READ_ERRORS as exc:
            raise SourceError(f"{self.path}: cannot decode a {msgtype} message: {exc}") from None

    def messages(self, topics: Collection[str]) -> Iterator[tuple[str, int, Any]]:
        """(topic, log time ns, message) in log-time order, deserialised lazily."""
        for topic, msgtype, t_ns, raw in self.raw_messages(topics):
            yield topic, t_ns, self.deserialize(raw, msgtype)


def _joined(kinds: dict[tuple[str, str], int], which: list[int], stamps: list[int], raws: list[bytes]) -> MessageBatch:
    sizes = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    starts = np.zeros(len(raws), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return MessageBatch(
        tuple(t for t, _ in kinds),
        tuple(k for _, k in kinds),
        np.array(which, dtype=np.int64),
        np.array(stamps, dtype=np.int64),
        b"".join(raws),
        starts,
        sizes,
    )


def _indexed_mcap(reader: AnyReader) -> McapReader | None:
    """The bag's one mcap storage file when it is chunked, indexed and its chunks follow each other in
    time (so reading chunk after chunk gives rosbags' order); None otherwise."""
    if len(reader.readers) != 1:
        return None
    storage = getattr(reader.readers[0], "storage", None)
    if isinstance(storage, DirectoryReader):
        if storage.metadata.compression_mode or len(storage.storages) != 1:
            return None
        storage = storage.storages[0]
    if not isinstance(storage, McapReader) or not storage.chunks or storage.bio is None:
        return None
    chunks = storage.chunks
    ordered = all(
        a.chunk_start_offset < b.chunk_start_offset and a.message_end_time <= b.message_start_time
        for a, b in itertools.pairwise(chunks)
    )
    return storage if ordered else None


def _chunk_batches(storage: McapReader, conns: Sequence[Any], size: int) -> Iterator[MessageBatch]:
    """The wanted channels' messages, consecutive chunks joined until a batch holds `size` messages or
    _JOIN_BYTES of chunk data (a sparse topic among big ones must not pull the whole bag into memory)."""
    pending: list[MessageBatch] = []
    count = held = 0
    for batch in _chunk_messages(storage, conns):
        pending.append(batch)
        count += len(batch)
        held += len(batch.buffer)
        if count >= size or held >= _JOIN_BYTES:
            yield _join_chunks(pending)
            pending, count, held = [], 0, 0
    if pending:
        yield _join_chunks(pending)


def _join_chunks(batches: list[MessageBatch]) -> MessageBatch:
    if len(batches) == 1:
        return batches[0]
    shift = np.cumsum([0] + [len(b.buffer) for b in batches[:-1]])
    first = batches[0]
    return MessageBatch(
        first.topics,
        first.msgtypes,
        np.concatenate([b.which for b in batches]),
        np.concatenate([b.log_ns for b in batches]),
        b"".join(b.buffer for b in batches),
        np.concatenate([b.start + s for b, s in zip(batches, shift.tolist())]),
        np.concatenate([b.size for b in batches]),
    )


def _chunk_messages(storage: McapReader, conns: Sequence[Any]) -> Iterator[MessageBatch]:
    """One MessageBatch per chunk holding the wanted channels: rosbags' msgsrc without its per-record loop
    (the same chunk checks and time filter; records are found through the chunk's message indexes)."""
    wanted = {}  # storage channel id -> index into kinds
    kinds: list[tuple[str, str]] = []
    for channel in storage.connections:
        conn = next(
            (
                c
                for c in conns
                if c.topic == channel.topic
                and c.msgtype == channel.msgtype
                and c.ext == channel.ext
                and (not channel.digest or not c.digest or c.digest == channel.digest)
            ),
            None,
        )
        if conn is not None:
            if (conn.topic, conn.msgtype) not in kinds:
                kinds.append((conn.topic, conn.msgtype))
            wanted[channel.id] = kinds.index((conn.topic, conn.msgtype))
    topics, msgtypes = tuple(t for t, _ in kinds), tuple(k for _, k in kinds)
    bio = storage.bio
    assert bio is not None  # _indexed_mcap gives an open storage only
    for chunk in storage.chunks:
        channels = [cid for cid in wanted if chunk.channel_count.get(cid, 0)]
        if not channels:
            continue
        bio.seek(chunk.chunk_start_offset + 9 + 24)
        crc = _U32.unpack(_read(bio, 4))[0]
        bio.seek(chunk.chunk_start_offset + 9 + 40 + len(chunk.compression))
        records = mcap_decompress(_read(bio, chunk.compressed_size), chunk.compression, chunk.uncompressed_size, crc)
        stamps, offsets, which, ids = [], [], [], []
        for cid in channels:
            entries = _message_index(bio, chunk.message_index_offsets[cid], cid)
            stamps.append(entries[:, 0])
            offsets.append(entries[:, 1])
            which.append(np.full(len(entries), wanted[cid], dtype=np.int64))
            ids.append(np.full(len(entries), cid, dtype=np.int64))
        t, off = np.concatenate(stamps), np.concatenate(offsets)
        order = np.lexsort((off, t))  # rosbags: the chunk's records in file order, stably sorted by time
        t, off = t[order], off[order]
        data = np.frombuffer(records, dtype=np.uint8)
        if len(off) and int(off.max()) + _MCAP_MESSAGE_HEADER > len(data):
            raise ReaderError("a message index points past the end of its chunk")
        head = data[off.astype(np.int64)[:, None] + _MCAP_HEADER_BYTES]
        length = head[:, 1:9].copy().view("<u8")[:, 0]
        if (
            (head[:, 0] != 0x05).any()
            or (head[:, 9:11].copy().view("<u2")[:, 0] != np.concatenate(ids)[order]).any()
            or (head[:, 15:23].copy().view("<u8")[:, 0] != t).any()
            or (length < 22).any()
            or (off + 9 + length > len(data)).any()
        ):
            raise ReaderError("a message index does not match the chunk's message records")
        keep = (t >= chunk.message_start_time) & (t <= chunk.message_end_time)  # rosbags' time filter
        yield MessageBatch(
            topics,
            msgtypes,
            np.concatenate(which)[order][keep],
            t[keep].astype(np.int64),
            records,
            off[keep].astype(np.int64) + _MCAP_MESSAGE_HEADER,
            (length[keep] - 22).astype(np.int64),
        )


_U32 = struct.Struct("<I")
_INDEX_HEAD = struct.Struct("<BQHI")  # opcode, record length, channel, byte length of the entries


def _read(bio: Any, n: int) -> bytes:
    data = bio.read(n)
    if len(data) != n:
        raise EOFError(f"wanted {n} bytes, the file ends after {len(data)}")
    return data


def _message_index(bio: Any, offset: int, channel: int) -> np.ndarray:
    """A chunk's message index record for one channel: (log time, offset in the chunk) rows."""
    bio.seek(offset)
    op, length, found, size = _INDEX_HEAD.unpack(_read(bio, _INDEX_HEAD.size))
    if op != 0x07 or found != channel or size % 16 or size + 6 > length:
        raise ReaderError(f"malformed message index for channel {channel}")
    return np.frombuffer(_read(bio, size), dtype="<u8").reshape(-1, 2)


class BagWriter:
    """Write a rosbag2 bag from plain values or rosbags messages (not thread-safe: one writer thread).

    `t` arguments are seconds: the header stamp, and the log time unless `log_t` is given (the live
    recorder passes a later one for a message that arrives late). Use as a context manager; the bag is
    finalised on exit.
    """

    def __init__(self, path: str | Path, storage: str = "mcap", typestore: Any = None) -> None:
        if storage not in _STORAGES:
            raise SourceError(f"{path}: unknown bag storage {storage!r}; use one of {sorted(_STORAGES)}")
        self.path = Path(path)
        self.typestore = typestore or default_typestore()
        self.types = m.rosbags_types(self.typestore)
        self._connections: dict[str, Any] = {}
        try:
            self._writer = Writer(self.path, version=Writer.VERSION_LATEST, storage_plugin=_STORAGES[storage])
        except WriterError as exc:
            raise SourceError(f"{self.path}: cannot create bag: {exc}") from None

    def __enter__(self) -> BagWriter:
        try:
            self._writer.open()
        except (WriterError, OSError) as exc:
            raise SourceError(f"{self.path}: cannot create bag: {exc}") from None
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.close()

    def close(self) -> None:
        if self._writer.storage is not None:
            self._writer.close()

    def write(self, topic: str, msg: Any, log_t: float) -> None:
        """Serialise a rosbags message and append it on `topic` at log time `log_t` seconds."""
        msgtype = msg.__msgtype__
        conn = self._connections.get(topic)
        if conn is None:
            conn = self._writer.add_connection(topic, msgtype, typestore=self.typestore)
            self._connections[topic] = conn
        elif conn.msgtype != msgtype:
            raise SourceError(f"{self.path}: topic {topic} has type {conn.msgtype}, not {msgtype}")
        self._writer.write(conn, round(log_t * 1e9), self.typestore.serialize_cdr(msg, msgtype))

    def write_joint_state(
        self,
        topic: str,
        t: float,
        names: Sequence[str],
        position: Sequence[float],
        velocity: Sequence[float] | None = None,
        effort: Sequence[float] | None = None,
        log_t: float | None = None,
    ) -> None:
        self.write(topic, m.joint_state_msg(self.types, t, names, position, velocity, effort), _log(t, log_t))

    def write_wrench(self, topic: str, t: float, wrench: Wrench, log_t: float | None = None) -> None:
        self.write(topic, m.wrench_msg(self.types, t, wrench), _log(t, log_t))

    def write_pose(self, topic: str, t: float, pose: Pose, log_t: float | None = None) -> None:
        self.write(topic, m.pose_msg(self.types, t, pose), _log(t, log_t))

    def write_tf(
        self, topic: str, transforms: Sequence[tuple[str, str, Pose, float]], log_t: float | None = None
    ) -> None:
        """One TFMessage of (parent, child, pose, stamp) transforms (`/tf` or `/tf_static`); logged at the newest stamp."""
        self.write(topic, m.tf_msg(self.types, transforms), _log(max(t for *_, t in transforms), log_t))

    def write_clock(self, t: float, topic: str = "/clock", log_t: float | None = None) -> None:
        self.write(topic, m.clock_msg(self.types, t), _log(t, log_t))

    def write_predicates(
        self, topic: str, sample: m.PredicateSample, log_t: float | None = None, hardware_id: str = "estimator"
    ) -> None:
        self.write(topic, m.predicates_msg(self.types, sample, hardware_id), _log(sample.t, log_t))

    def write_events(self, topic: str, events: Sequence[Any], t: float, log_t: float | None = None) -> None:
        self.write(topic, m.events_msg(self.types, events, t), _log(t, log_t))


def _log(t: float, log_t: float | None) -> float:
    return t if log_t is None else log_t
