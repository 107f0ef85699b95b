"""Reading the files a user hands the package (UTF-8 text of bounded size, YAML without aliases), and
writing the ones it hands back whole or not at all.

Spec files, plans, candidate formulas, `--topics` maps, parameter files and traces all come through
here, so each fails the same way: one line naming the file and what is wrong with it. YAML aliases are
refused because a few hundred bytes of nested aliases expand to gigabytes (a "billion laughs" file)
once anything walks or prints the document; none of our formats needs them. A key given twice in one
mapping is refused too: YAML parsers keep the last silently, so a second `formula:` pasted into a
property would replace the first unseen. JSON (trace and formula files, one document per line) gets
the same rule for an object's keys.

Booleans, one rule for every file: a boolean is `true` or `false` (`null` where unknown is allowed).
`1`/`0` are numbers, and YAML 1.1's `yes`/`no`/`on`/`off` are read as text (as YAML 1.2 does), so
each is refused where a boolean is expected rather than guessed at.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
from pathlib import Path
from typing import Any, ClassVar

import yaml

from safety_monitor.errors import SafetyMonitorError, SourceError

MAX_YAML_BYTES = 8 << 20  # the largest spec or config file we know is a few hundred kilobytes


def config_dir() -> Path:
    """The package's config/ folder: the colcon share directory when installed, else the source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory

        share = Path(get_package_share_directory("safety_monitor")) / "config"
        if (share / "robot.yaml").is_file():
            return share
    except (ImportError, LookupError, OSError):  # not installed with colcon / no AMENT_PREFIX_PATH
        pass
    pip_share = Path(sys.prefix) / "share" / "safety_monitor" / "config"  # pip installs data_files here
    source = Path(__file__).resolve().parents[1] / "config"
    for folder in (source, pip_share):
        if (folder / "robot.yaml").is_file():
            return folder
    raise SourceError(f"cannot find the config folder (looked in the ament share directory, {source} and {pip_share})")


def read_text(path: str | Path, what: str, error: type[SafetyMonitorError], max_bytes: int | None = None) -> str:
    """The UTF-8 text of `path` (a `what`, e.g. "spec file"); `error` names the file and the problem:
    unreadable, missing, a directory, larger than `max_bytes`, or not UTF-8."""
    try:
        with open(path, "rb") as f:
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise error(f"{path}: larger than {max_bytes} bytes; not a {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text, so not a {what} ({exc.reason} at byte {exc.start})") from None


def write_file(path: str | Path, data: str | bytes, what: str, error: type[SafetyMonitorError]) -> None:
    """Write `data` (text as UTF-8) to `path`, a `what` (e.g. "planner feedback"), whole or not at all: into
    a new file beside it, renamed over it once complete. A full disk, a read-only folder or an I/O error
    leaves no half-written file and `path` as it was; `error` names the file and the problem."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for open()
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
            os.replace(temporary, path)
        except BaseException:  # Ctrl-C too: no temporary file is left behind
            temporary.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise error(f"{path}: cannot write {what}: {exc.strerror or exc}; nothing of it was written") from None


def load_yaml(path: str | Path, what: str, error: type[SafetyMonitorError], max_bytes: int = MAX_YAML_BYTES) -> Any:
    """The YAML document in `path`, read as `read_text` does and parsed as `parse_yaml`."""
    return parse_yaml(read_text(path, what, error, max_bytes), str(path), error)


def parse_yaml(text: str, source: str, error: type[SafetyMonitorError]) -> Any:
    """One YAML document (libyaml's parser when present), refusing aliases and keys given twice; `source`
    names it in errors."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node, source, error)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise error(f"{source}: not valid YAML{where}: {problem}") from None
    except RecursionError:  # the constructor builds nested collections recursively
        raise error(f"{source}: YAML nested too deeply") from None
    except ValueError as exc:  # a constructor's: int() refuses 4300+ digits (CVE-2020-10735 limit)
        raise error(f"{source}: YAML value not readable: {exc}") from None
    finally:
        loader.dispose()


def parse_json(text: str, source: str, error: type[SafetyMonitorError]) -> Any:
    """One JSON document, refusing an object with a key twice (json keeps the last silently); `source`
    names it in errors (a file and line: `trace.jsonl:3`)."""
    try:
        return _JSON.decode(text)
    except json.JSONDecodeError as exc:
        raise error(f"{source}: not valid JSON: {exc.msg}") from None
    except _DuplicateKeyError as exc:
        raise error(
            f"{source}: key {exc.args[0]!r} is given twice in one object; JSON would keep the last one "
            "silently: remove or rename one"
        ) from None
    except RecursionError:
        raise error(f"{source}: JSON nested too deeply") from None
    except ValueError as exc:  # int() refuses 4300+ digits (CVE-2020-10735 limit)
        raise error(f"{source}: JSON value not readable: {exc}") from None


class _DuplicateKeyError(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)  # in C; the loop below only runs on the rare object with a key twice
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
    return out


# one decoder for every line (json.loads with a hook builds a new one per call): a trace reads 1.1x as long
# as with plain json.loads, against 1.5x
_JSON = json.JSONDecoder(object_pairs_hook=_unique_keys)


def _check_nodes(root: yaml.Node, source: str, error: type[SafetyMonitorError]) -> None:
    """Walk the composed graph: an alias makes it share a node (refuse the first node reached twice), and
    a mapping may not hold the same key twice."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            raise error(
                f"{source}: YAML aliases are not allowed (the anchor at line {node.start_mark.line + 1} is reused)"
            )
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            _refuse_duplicate_keys(node, source, error)
            for key, value in node.value:
                todo += (key, value)


def _refuse_duplicate_keys(node: yaml.MappingNode, source: str, error: type[SafetyMonitorError]) -> None:
    first: dict[tuple[str, str], int] = {}  # (tag, text) of each scalar key -> its line
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        line = key.start_mark.line + 1
        if (earlier := first.get((key.tag, key.value))) is not None:
            lines = f"line {line}" if earlier == line else f"lines {earlier} and {line}"
            raise error(
                f"{source}: key {key.value!r} is given twice in one mapping ({lines}); YAML would keep the "
                "last one silently: remove or rename one"
            )
        first[(key.tag, key.value)] = line


_BASE: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: 10x faster, composes without recursion


class _Loader(_BASE):
    """Safe loading with YAML 1.2's booleans: only true/false (any case) are booleans."""

    yaml_implicit_resolvers: ClassVar[dict[str | None, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
