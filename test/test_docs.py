"""The README's and docs/'s examples run, so they cannot rot.

Every fenced ```bash, ```console and ```python block of README.md and docs/*.md is one test, named by
its file and line. An HTML comment on the line before a fence changes what happens to that block:

    <!-- doc-test: skip (why) -->    not run; the reason is mandatory and shows in pytest's skip list
    <!-- doc-test: exit N -->        the block must end with exit status N (default 0)
    <!-- doc-test: file NAME -->     the block (any language, e.g. yaml) is written to NAME before the
                                     page's next shell block runs, so examples can read the file shown

Shell blocks run with `bash -euo pipefail` in one temporary folder per page (blocks of a page run in
order and see each other's files; running one block alone runs the earlier ones first), holding a
copy of config/, with this interpreter's bin folder on PATH and a `safety-monitor` that runs this
checkout; HOME is a folder of its own there, so `~/.ros/...` logs stay in it. A ```console block is
`$ command` lines (a trailing backslash continues one on the next line, which may start with the `> `
prompt) and the output expected from them; a ```text block right after a bash or python block is that
block's expected output. Expected output is checked loosely: its lines must appear in that order among
the lines printed (stdout and stderr as one unbuffered stream, as on a terminal), spaces collapsed,
`...` matching anything within a line and a line of just `...` standing for any lines.
Python blocks run on their own, with the repository root as the working directory.
"""

from __future__ import annotations

import enum
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = (ROOT / "README.md", *sorted(DOCS.glob("*.md")))
README_MAX_LINES = 200

_FENCE = re.compile(r"^```\s*([\w-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
_DIRECTIVE = re.compile(r"^(?:skip \((?P<skip>.+)\)|exit (?P<exit_code>\d+)|file (?P<file>[\w./-]+))$")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


class Lang(enum.Enum):
    """A fenced block's language, as far as running it goes."""

    BASH = "bash"
    CONSOLE = "console"
    PYTHON = "python"
    TEXT = "text"
    OTHER = "other"  # yaml, json, csv, none: shown, or written with a `file` marker

    @classmethod
    def _missing_(cls, value: object) -> Lang:
        return cls.OTHER


RUNNABLE = (Lang.BASH, Lang.CONSOLE, Lang.PYTHON)
SHELL = (Lang.BASH, Lang.CONSOLE)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page and what its marker asks for."""

    page: Path
    line: int  # of the opening fence, 1-based
    end: int  # of the closing fence, 1-based
    lang: Lang
    text: str
    skip: str | None = None  # the reason
    exit_code: int = 0
    file: str | None = None  # write the text to this file in the page's folder
    expected: str | None = None  # the output shown in a following ```text block

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runnable(self) -> bool:
        return self.file is None and self.lang in RUNNABLE

    @property
    def expected_output(self) -> str | None:
        return console_output(self.text) if self.lang is Lang.CONSOLE else self.expected


def parse_page(page: Path) -> tuple[list[Block], list[str]]:
    """The page's fenced blocks, and the problems of its doc-test markers (each naming its line)."""
    lines = page.read_text().splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    pending: tuple[int, dict] | None = None  # a marker's line and directive, waiting for its block

    def unclaimed() -> None:
        if pending is not None:
            problems.append(f"{page.name}:{pending[0]}: doc-test marker not followed by a block")

    i = 0
    while i < len(lines):
        if marker := _MARKER.match(lines[i]):
            unclaimed()
            found = _DIRECTIVE.match(marker.group(1))
            if found is None:
                problems.append(f"{page.name}:{i + 1}: unknown doc-test marker {marker.group(1)!r}")
            directive = {k: v for k, v in (found.groupdict() if found else {}).items() if v is not None}
            directive["exit_code"] = int(directive.get("exit_code", 0))
            pending = (i + 1, directive)
        elif fence := _FENCE.match(lines[i]):
            start = i
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                i += 1
            if i == len(lines):
                problems.append(f"{page.name}:{start + 1}: block never closed")
            blocks.append(
                Block(
                    page,
                    start + 1,
                    i + 1,
                    Lang(fence.group(1)),
                    "\n".join(lines[start + 1 : i]) + "\n",
                    **(pending[1] if pending else {}),
                )
            )
            pending = None
        elif lines[i].strip():
            unclaimed()
            pending = None
        i += 1
    unclaimed()
    return _attach_expected_output(blocks, lines), problems


def _attach_expected_output(blocks: list[Block], lines: list[str]) -> list[Block]:
    """A ```text block separated from a bash or python block by blank lines only is its output."""
    out: list[Block] = []
    for block in blocks:
        before = out[-1] if out else None
        if (
            block.lang is Lang.TEXT
            and before is not None
            and before.lang in (Lang.BASH, Lang.PYTHON)
            and before.expected is None
            and not any(s.strip() for s in lines[before.end : block.line - 1])
        ):
            out[-1] = replace(before, expected=block.text)
        else:
            out.append(block)
    return out


def console_commands(text: str) -> str:
    """The commands of a console block: its `$ ` lines and their backslash continuations."""
    commands: list[str] = []
    continued = False
    for line in text.splitlines():
        if continued or line.startswith("$ "):
            commands.append(line.removeprefix("> ") if continued else line[2:])
            continued = line.endswith("\\")
    return "\n".join(commands) + "\n"


def console_output(text: str) -> str:
    """The expected output of a console block: every line that is not a command."""
    out: list[str] = []
    continued = False
    for line in text.splitlines():
        command = continued or line.startswith("$ ")
        if not command:
            out.append(line)
        continued = command and line.endswith("\\")
    return "\n".join(out)


def missing_output(expected: str, actual: str) -> str | None:
    """The first expected line not found, in order, among the actual lines (None: all found)."""
    lines = [_squash(line) for line in actual.splitlines()]
    position = 0
    for want in map(_squash, expected.splitlines()):
        if want in ("", "..."):  # a line of just `...` stands for any lines, which the ordered search allows
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("...")))
        while position < len(lines) and not pattern.fullmatch(lines[position]):
            position += 1
        if position == len(lines):
            return want
        position += 1
    return None


def _squash(line: str) -> str:
    return " ".join(line.split())


PARSED = {page: parse_page(page) for page in PAGES}
BLOCKS = [block for blocks, _ in PARSED.values() for block in blocks]


@dataclass(frozen=True)
class Ran:
    returncode: int
    output: str  # stdout and stderr as a terminal shows them: one stream, unbuffered


class PageFolder:
    """One page's working folder: its shell blocks and files run there in page order, each once."""

    def __init__(self, page: Path, folder: Path, bin_dir: Path) -> None:
        self.page, self.folder, self.bin_dir = page, folder, bin_dir
        shutil.copytree(ROOT / "config", folder / "config")
        (folder / "home").mkdir()
        self.results: dict[int, Ran] = {}

    def run(self, block: Block) -> Ran:
        if block.lang in SHELL:
            for earlier in PARSED[self.page][0]:
                if earlier.line >= block.line:
                    break
                if not earlier.skip and (earlier.file is not None or earlier.lang in SHELL):
                    self._run_once(earlier)
        return self._run_once(block)

    def _run_once(self, block: Block) -> Ran:
        if block.line not in self.results:
            self.results[block.line] = self._run(block)
        return self.results[block.line]

    def _run(self, block: Block) -> Ran:
        if block.file is not None:
            target = self.folder / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
            return Ran(0, "")
        if block.lang is Lang.PYTHON:
            return _run([sys.executable, "-c", block.text], ROOT, self.env())
        script = console_commands(block.text) if block.lang is Lang.CONSOLE else block.text
        return _run(["bash", "-euo", "pipefail", "-c", script], self.folder, self.env())

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(self.bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env["HOME"] = str(self.folder / "home")
        env["PYTHONUNBUFFERED"] = "1"  # stdout and stderr lines interleave as on a terminal
        env.pop("COLUMNS", None)
        return env


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> Ran:
    done = subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL
    )
    return Ran(done.returncode, done.stdout)


@pytest.fixture(scope="session")
def shim_bin(tmp_path_factory) -> Path:
    """A bin folder whose `safety-monitor` runs this checkout with this interpreter."""
    folder = tmp_path_factory.mktemp("doc_bin")
    shim = folder / "safety-monitor"
    entry = "import sys; from safety_monitor.cli import main; sys.exit(main())"  # setup.py's console script
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "{entry}" "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


@pytest.fixture(scope="session")
def page_folder(tmp_path_factory, shim_bin) -> Callable[[Path], PageFolder]:
    folders: dict[Path, PageFolder] = {}

    def get(page: Path) -> PageFolder:
        if page not in folders:
            folders[page] = PageFolder(page, tmp_path_factory.mktemp(page.stem), shim_bin)
        return folders[page]

    return get


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(block, id=block.name, marks=[pytest.mark.skip(reason=block.skip)] if block.skip else [])
        for block in BLOCKS
        if block.runnable
    ],
)
def test_example_runs(block: Block, page_folder) -> None:
    ran = page_folder(block.page).run(block)
    shown = f"--- output\n{ran.output[-6000:]}"
    assert ran.returncode == block.exit_code, (
        f"{block.name}: exit status {ran.returncode}, expected {block.exit_code}\n{shown}"
    )
    if block.expected_output:
        missing = missing_output(block.expected_output, ran.output)
        assert missing is None, f"{block.name}: expected output line not printed (in order): {missing!r}\n{shown}"


def test_doc_test_markers_are_well_formed() -> None:
    problems = [problem for _, page_problems in PARSED.values() for problem in page_problems]
    assert not problems, "\n".join(problems)


def test_skips_stay_few() -> None:
    runnable = [b for b in BLOCKS if b.runnable]
    skipped = [b.name for b in runnable if b.skip]
    assert len(skipped) * 5 <= len(runnable), f"{len(skipped)} of {len(runnable)} examples skipped: {skipped}"


def test_expected_output_check_is_ordered_and_loose() -> None:
    printed = "a   1 2\nnoise\nb took 3.2 s\nc\n"
    assert missing_output("a 1 2\n...\nb took ... s\n", printed) is None
    assert missing_output("b took ... s\na 1 2\n", printed) == "a 1 2"
    assert missing_output("d\n", printed) == "d"


def test_readme_stays_short() -> None:
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move reference material to docs/"


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub gives a page: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.*?)\s*$", re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    prose = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)  # code is not linked from
    for target in _LINK.findall(prose):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in anchors(linked)):
            broken.append(target)
    assert not broken, f"{page.name}: links to missing files or headings: {broken}"


def test_every_docs_page_is_linked_from_the_index() -> None:
    linked = {t.split("#", 1)[0] for t in _LINK.findall((DOCS / "index.md").read_text())}
    unlinked = [p.name for p in PAGES if p.parent == DOCS and p.name != "index.md" and p.name not in linked]
    assert not unlinked, f"docs/index.md does not link {unlinked}"


USER_FILES = (
    *sorted((ROOT / "config").glob("*.yaml")),
    *sorted((ROOT / "launch").glob("*.py")),
    ROOT / "safety_monitor" / "sim" / "workcell.xml",
)
_PAGE_NAME = re.compile(r"[\w./-]*\.md\b")


@pytest.mark.parametrize("path", USER_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_files_users_read_name_pages_the_repository_ships(path: Path) -> None:
    """config/ (which `robot init` copies into a user's folder), the launch files and the workcell model name docs
    pages that exist, not design notes kept outside the repository."""
    missing = [name for name in _PAGE_NAME.findall(path.read_text()) if not (ROOT / name).is_file()]
    assert not missing, f"{path.relative_to(ROOT)} names pages the repository does not ship: {missing}"


def test_predicate_table_is_the_one_the_code_prints() -> None:
    from safety_monitor.cli.grounding import predicate_table

    assert predicate_table() in (DOCS / "predicates.md").read_text()
