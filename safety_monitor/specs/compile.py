"""Compile LTLf to a `TableDFA` from MONA's own automaton, never from ltlf2dfa's sympy-simplified DOT.

ltlf2dfa writes the MONA program; we run `mona` ourselves in a private temporary folder (ltlf2dfa's
own `to_dfa` writes a fixed file inside its package, which races between processes and fails on
read-only installs) and read MONA's transition patterns straight into a dense table. Results are
cached in memory and on disk, keyed by the canonical formula text and the tool versions.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
import zlib
from collections import deque
from pathlib import Path

import numpy as np

from safety_monitor.errors import SpecError, ToolMissingError
from safety_monitor.specs.dfa import TableDFA
from safety_monitor.specs.ltlf import (Always, Atom, Const, Equiv, Eventually, Formula, Last, Release, Until, atoms_of,
                                     children, has_bounds, ltlf2dfa_formula, parse, resolve_bounds, to_text)
from safety_monitor.specs.progression import progression_dfa

MAX_ATOMS = 16  # a dense table has 2**atoms columns per state
MAX_TRANSLATION = 1 << 12  # sub-formula copies in ltlf2dfa's MONA program; MONA crashes near 16 thousand
MONA_TIMEOUT_S = 60.0
_CACHE_FORMAT = 1
_INSTALL_HINT = "install it with: sudo apt-get install -y mona (Debian/Ubuntu package 'mona')"


@functools.lru_cache(maxsize=1)
def mona_version() -> str:
    """MONA's version line; a ToolMissingError when the program is absent or broken."""
    exe = shutil.which("mona")
    if exe is None:
        raise ToolMissingError(f"the 'mona' program is not on PATH; {_INSTALL_HINT}")
    try:
        out = subprocess.run([exe, "-v"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolMissingError(f"'mona' at {exe} does not run ({exc}); {_INSTALL_HINT}") from None
    first = out.strip().splitlines()[0] if out.strip() else ""
    if "MONA" not in first:
        raise ToolMissingError(f"'{exe}' is not MONA (it printed {first!r}); {_INSTALL_HINT}")
    return first


def cache_dir() -> Path:
    """$SAFETY_MONITOR_CACHE_DIR, else $XDG_CACHE_HOME/safety_monitor, else ~/.cache/safety_monitor."""
    env = os.environ.get("SAFETY_MONITOR_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "safety_monitor"


def compile_formula(text: str, control_rate_hz: float | None = None) -> TableDFA:
    """Compile one LTLf formula (ltlf2dfa syntax plus bounds) to a TableDFA, using the caches.

    Bounds in seconds become frames at `control_rate_hz` (a SpecError without one).
    """
    canonical = to_text(resolve_bounds(parse(text), control_rate_hz))
    return _compile_canonical(canonical, str(cache_dir()))


@functools.lru_cache(maxsize=4096)
def _compile_canonical(canonical: str, cache_folder: str) -> TableDFA:
    key = _cache_key(canonical)
    path = Path(cache_folder) / f"{key}.npz"
    cached = _load(path, canonical)
    if cached is not None:
        return cached
    dfa = _build(canonical)
    _store(path, dfa)
    return dfa


def _cache_key(canonical: str) -> str:
    return hashlib.sha256(f"{_tool_versions()}\n{canonical}".encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def _tool_versions() -> str:
    """Part of every cache key: a new ltlf2dfa or MONA invalidates old tables (looked up once)."""
    return f"{_CACHE_FORMAT}|{importlib.metadata.version('ltlf2dfa')}|{mona_version()}"


def _load(path: Path, canonical: str) -> TableDFA | None:
    """A cached table, or None when absent or unreadable (a damaged entry is rebuilt, not trusted)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if meta["formula"] != canonical:
                return None
            return _finish(canonical, tuple(meta["atoms"]), z["table"], int(meta["initial"]), z["accepting"])
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile, zlib.error):
        return None


def _store(path: Path, dfa: TableDFA) -> None:
    """Write atomically (temp file + rename) so parallel processes never read half a file."""
    meta = json.dumps({"formula": dfa.formula, "atoms": list(dfa.atoms), "initial": dfa.initial})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, table=dfa.table, accepting=dfa.accepting, meta=np.array(meta))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs a recompile next time


def _build(canonical: str) -> TableDFA:
    from ltlf2dfa.base import MonaProgram

    formula = parse(canonical)
    atoms = atoms_of(formula)
    if len(atoms) > MAX_ATOMS:
        raise SpecError(f"formula has {len(atoms)} atoms, at most {MAX_ATOMS} are supported: {canonical}")
    if has_bounds(formula):  # MONA runs out of memory on bounds beyond a few dozen frames
        table, accepting, initial = progression_dfa(formula, atoms)
        return _finish(canonical, atoms, table, initial, accepting)
    if translation_size(formula) > MAX_TRANSLATION:
        raise SpecError(f"formula nests G, F, U, R or <-> too deeply for MONA (its program would hold more than "
                        f"{MAX_TRANSLATION} sub-formula copies): {canonical}")
    program = MonaProgram(ltlf2dfa_formula(canonical)).mona_program()
    output = _run_mona(program, canonical)
    return _table_from_mona(output, atoms, canonical)


def translation_size(f: Formula) -> int:
    """Sub-formula copies in ltlf2dfa's MONA program, bounded from above.

    Its encoding of R (and G, which is `false R f`) writes the right operand twice, U and F become R
    and G under negation, and <-> writes both sides twice; so each nesting level can double the
    program: G nested 24 deep is a 3 GB string before MONA even starts.
    """
    if isinstance(f, (Atom, Const, Last)):
        return 1
    if isinstance(f, Equiv):
        return 1 + 2 * (translation_size(f.left) + translation_size(f.right))
    if isinstance(f, (Until, Release)):
        return 1 + translation_size(f.left) + 2 * translation_size(f.right)
    if isinstance(f, (Always, Eventually)):
        return 1 + 2 * translation_size(f.arg)
    return 1 + sum(translation_size(c) for c in children(f))


def _run_mona(program: str, canonical: str) -> str:
    exe = shutil.which("mona")
    if exe is None:
        raise ToolMissingError(f"the 'mona' program is not on PATH; {_INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="safety_monitor_mona_") as tmp:
        src = os.path.join(tmp, "formula.mona")
        with open(src, "w", encoding="utf-8") as fh:
            fh.write(program)
        try:
            proc = subprocess.run([exe, "-q", "-u", "-w", "-n", src], capture_output=True, text=True, timeout=MONA_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise SpecError(f"MONA did not finish within {MONA_TIMEOUT_S:.0f} s on: {canonical}") from None
    if proc.returncode != 0:
        raise ToolMissingError(f"MONA failed (exit {proc.returncode}) on {canonical!r}: {(proc.stdout + proc.stderr).strip()[:500]}")
    return proc.stdout


_STATE_LINE = re.compile(r"^State (\d+): ([01X]*) -> state (\d+)$")


def _table_from_mona(output: str, atoms: tuple[str, ...], canonical: str) -> TableDFA:
    """Dense table from MONA's `-w` listing; every check here guards against a bogus automaton."""
    free = re.search(r"DFA for formula with free variables:(.*)", output)
    accepting_line = re.search(r"Accepting states:(.*)", output)
    count = re.search(r"Automaton has (\d+) states?", output)
    if not (free and accepting_line and count):
        raise ToolMissingError(f"MONA printed no automaton for {canonical!r}; is 'mona' the real MONA? {_INSTALL_HINT}")
    mona_vars = [v.lower() for v in free.group(1).split()]
    if sorted(mona_vars) != list(atoms):
        raise ToolMissingError(f"MONA's variables {mona_vars} do not match the formula's atoms {list(atoms)}: automaton rejected")
    n_mona = int(count.group(1))
    n_letters = 1 << len(atoms)
    # MONA's pattern position k is variable mona_vars[k]; our letter bit i is atoms[i].
    bit_of = [atoms.index(v) for v in mona_vars]
    raw = np.full((n_mona, n_letters), -1, dtype=np.int64)
    for line in output.splitlines():
        m = _STATE_LINE.match(line.strip())
        if not m:
            continue
        src, pattern, dst = int(m.group(1)), m.group(2), int(m.group(3))
        if len(pattern) != len(atoms):
            raise ToolMissingError(f"MONA transition {line!r} has the wrong width: automaton rejected")
        raw[src, _letters_matching(pattern, bit_of, n_letters)] = dst
    if (raw < 0).any():
        raise ToolMissingError(f"MONA's automaton for {canonical!r} is incomplete: automaton rejected")
    if len(set(raw[0].tolist())) != 1:
        raise ToolMissingError("MONA's state 0 is not the expected dummy start state: automaton rejected")
    accepting = np.zeros(n_mona, dtype=bool)
    accepting[[int(s) for s in accepting_line.group(1).split()]] = True
    return _finish(canonical, atoms, raw, int(raw[0, 0]), accepting)


def _letters_matching(pattern: str, bit_of: list[int], n_letters: int) -> np.ndarray:
    letters = np.arange(n_letters)
    mask = np.ones(n_letters, dtype=bool)
    for k, ch in enumerate(pattern):
        if ch != "X":
            mask &= ((letters >> bit_of[k]) & 1) == int(ch)
    return letters[mask]


def _finish(canonical: str, atoms: tuple[str, ...], raw: np.ndarray, start: int, accepting: np.ndarray) -> TableDFA:
    """Keep the states reachable from `start`, numbered in BFS order (start = 0), and find the sink."""
    order = [start]
    index = {start: 0}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        for t in np.unique(raw[s]).tolist():
            if t not in index:
                index[t] = len(order)
                order.append(t)
                queue.append(t)
    remap = np.zeros(raw.shape[0], dtype=np.int32)
    for old, new in index.items():
        remap[old] = new
    table = np.ascontiguousarray(remap[raw[order]], dtype=np.int32)
    acc = np.asarray(accepting, dtype=bool)[order]
    table.setflags(write=False)
    acc.setflags(write=False)
    return TableDFA(canonical, atoms, table, 0, acc, rejecting_sink(table, acc))


def rejecting_sink(table: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """States from which no accepting state is reachable (backward reachability from accepting)."""
    n = table.shape[0]
    preds: list[set[int]] = [set() for _ in range(n)]
    for s in range(n):
        for t in np.unique(table[s]).tolist():
            preds[t].add(s)
    alive = accepting.copy()
    queue = deque(np.flatnonzero(accepting).tolist())
    while queue:
        t = queue.popleft()
        for s in preds[t]:
            if not alive[s]:
                alive[s] = True
                queue.append(s)
    sink = ~alive
    sink.setflags(write=False)
    return sink
