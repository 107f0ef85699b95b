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
import io
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

from safety_monitor.errors import SafetyMonitorError, SpecError, ToolMissingError
from safety_monitor.files import write_file
from safety_monitor.specs.dfa import TableDFA
from safety_monitor.specs.ltlf import (
    Always,
    Atom,
    Const,
    Equiv,
    Eventually,
    Formula,
    Last,
    Release,
    Until,
    atoms_of,
    children,
    has_bounds,
    ltlf2dfa_formula,
    parse,
    resolve_bounds,
    to_text,
)
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
            table = z["table"]
            return _finish(
                canonical, tuple(meta["atoms"]), table, int(meta["initial"]), z["accepting"], _successors(table)
            )
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile, zlib.error):
        return None


def _store(path: Path, dfa: TableDFA) -> None:
    """Write whole or not at all (`files.write_file`), so parallel processes never read half a file."""
    meta = json.dumps({"formula": dfa.formula, "atoms": list(dfa.atoms), "initial": dfa.initial})
    data = io.BytesIO()
    np.savez(data, table=dfa.table, accepting=dfa.accepting, meta=np.array(meta))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, data.getvalue(), "compiled automaton", SafetyMonitorError)
    except (OSError, SafetyMonitorError):
        pass  # a read-only or full cache only costs a recompile next time


def _build(canonical: str) -> TableDFA:
    from ltlf2dfa.base import MonaProgram

    formula = parse(canonical)
    atoms = atoms_of(formula)
    if len(atoms) > MAX_ATOMS:
        raise SpecError(f"formula has {len(atoms)} atoms, at most {MAX_ATOMS} are supported: {canonical}")
    if has_bounds(formula):  # MONA runs out of memory on bounds beyond a few dozen frames
        table, accepting, initial = progression_dfa(formula, atoms)
        return _finish(canonical, atoms, table, initial, accepting, _successors(table))
    if translation_size(formula) > MAX_TRANSLATION:
        raise SpecError(
            f"formula nests G, F, U, R or <-> too deeply for MONA (its program would hold more than "
            f"{MAX_TRANSLATION} sub-formula copies): {canonical}"
        )
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
    try:
        with tempfile.TemporaryDirectory(prefix="safety_monitor_mona_") as tmp:
            src = os.path.join(tmp, "formula.mona")
            with open(src, "w", encoding="utf-8") as fh:
                fh.write(program)
            proc = subprocess.run(
                [exe, "-q", "-u", "-w", "-n", src], capture_output=True, text=True, timeout=MONA_TIMEOUT_S
            )
    except subprocess.TimeoutExpired:
        raise SpecError(f"MONA did not finish within {MONA_TIMEOUT_S:.0f} s on: {canonical}") from None
    except OSError as exc:  # its input file: no temporary folder with room (a full disk)
        raise ToolMissingError(
            f"cannot run MONA on {canonical!r}: {exc.strerror or exc} (MONA reads its input from a file in "
            "TMPDIR, else /tmp: free some space there or point TMPDIR to a folder with room)"
        ) from None
    if proc.returncode != 0:
        raise ToolMissingError(
            f"MONA failed (exit {proc.returncode}) on {canonical!r}: {(proc.stdout + proc.stderr).strip()[:500]}"
        )
    return proc.stdout


def _table_from_mona(output: str, atoms: tuple[str, ...], canonical: str) -> TableDFA:
    """Dense table from MONA's `-w` listing; every check here guards against a bogus automaton.

    Each listed line is a cube (some bits fixed, the X bits free) of one state's letters. The lines are
    parsed in one pass and the cubes expanded group by group (all cubes with the same number of free
    bits at once), so the cost is linear in MONA's lines plus the table's size.
    """
    free = re.search(r"DFA for formula with free variables:(.*)", output)
    accepting_line = re.search(r"Accepting states:(.*)", output)
    count = re.search(r"Automaton has (\d+) states?", output)
    if not (free and accepting_line and count):
        raise ToolMissingError(f"MONA printed no automaton for {canonical!r}; is 'mona' the real MONA? {_INSTALL_HINT}")
    mona_vars = [v.lower() for v in free.group(1).split()]
    if sorted(mona_vars) != list(atoms):
        raise ToolMissingError(
            f"MONA's variables {mona_vars} do not match the formula's atoms {list(atoms)}: automaton rejected"
        )
    n_mona = int(count.group(1))
    n_letters = 1 << len(atoms)
    lines = _state_lines(len(atoms)).findall(output)
    if not lines or len(lines) != output.count(" -> state "):
        raise ToolMissingError(
            f"MONA's transitions for {canonical!r} are missing or have the wrong width: automaton rejected"
        )
    src = np.array([m[0] for m in lines], dtype=np.int64)
    dst = np.array([m[2] for m in lines], dtype=np.int64)
    if src.max() >= n_mona or dst.max() >= n_mona:
        raise ToolMissingError(
            f"MONA's automaton for {canonical!r} names a state beyond its {n_mona}: automaton rejected"
        )
    chars = np.frombuffer("".join(m[1] for m in lines).encode("ascii"), dtype=np.uint8).reshape(len(lines), len(atoms))
    # MONA's pattern position k is variable mona_vars[k]; our letter bit i is atoms[i]: reorder the columns
    chars = chars[:, [mona_vars.index(a) for a in atoms]]
    flat = np.full(n_mona * n_letters, -1, dtype=np.int32)
    written = 0
    for rows, letters in _cube_letters(chars):
        flat[(src[rows, None] * n_letters + letters).ravel()] = np.repeat(dst[rows], letters.shape[1])
        written += letters.size
    raw = flat.reshape(n_mona, n_letters)
    if written != raw.size or (raw < 0).any():  # the cubes of each state must partition its letters exactly
        raise ToolMissingError(f"MONA's automaton for {canonical!r} is incomplete or overlapping: automaton rejected")
    if len(set(raw[0].tolist())) != 1:
        raise ToolMissingError("MONA's state 0 is not the expected dummy start state: automaton rejected")
    accepting = np.zeros(n_mona, dtype=bool)
    accepting[[int(s) for s in accepting_line.group(1).split()]] = True
    edges = np.unique(src * n_mona + dst)
    return _finish(
        canonical, atoms, raw, int(raw[0, 0]), accepting, _edge_lists(edges // n_mona, edges % n_mona, n_mona)
    )


@functools.lru_cache(maxsize=MAX_ATOMS + 1)
def _state_lines(width: int) -> re.Pattern:
    """One transition line of MONA's `-w` listing, with a pattern of exactly `width` symbols."""
    return re.compile(rf"^[ \t]*State (\d+): ([01X]{{{width}}}) -> state (\d+)[ \t]*$", re.MULTILINE)


def _cube_letters(chars: np.ndarray):
    """For each number k of free bits: the lines with k X's and, per line, its 2**k letters (one row each).

    `chars` holds one pattern per line, column i for letter bit i ('0', '1' or 'X').
    """
    weight = np.int64(1) << np.arange(chars.shape[1], dtype=np.int64)
    packed = np.packbits(chars == ord("1"), axis=1, bitorder="little").astype(np.int64)
    fixed = (packed << (8 * np.arange(packed.shape[1], dtype=np.int64))).sum(axis=1)
    is_free = chars == ord("X")
    n_free = is_free.sum(axis=1)
    for k in np.unique(n_free).tolist():
        rows = np.flatnonzero(n_free == k)
        # bit weights of each line's free positions, in position order (np.nonzero is row-major)
        free_weight = weight[np.nonzero(is_free[rows])[1]].reshape(rows.size, k)
        letters = fixed[rows, None]
        for j in range(k):  # double the letter set of every line once per free bit
            letters = np.concatenate([letters, letters + free_weight[:, j, None]], axis=1)
        yield rows, letters


def _finish(
    canonical: str,
    atoms: tuple[str, ...],
    raw: np.ndarray,
    start: int,
    accepting: np.ndarray,
    successors: list[list[int]],
) -> TableDFA:
    """Keep the states reachable from `start`, numbered in BFS order (start = 0), and find the sink.

    `successors[s]` lists the distinct successors of state s in `raw`, sorted.
    """
    order = [start]
    index = {start: 0}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        for t in successors[s]:
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
    renumbered = [[index[t] for t in successors[s]] for s in order]
    return TableDFA(canonical, atoms, table, 0, acc, _sink(renumbered, acc))


def _successors(table: np.ndarray) -> list[list[int]]:
    """Distinct successors of every state, each list sorted: one vectorised pass over the table."""
    n = table.shape[0]
    if n * n <= 1 << 24:  # a dense bool adjacency matrix is cheaper than sorting the table
        adjacent = np.zeros((n, n), dtype=bool)
        adjacent[np.arange(n)[:, None], table] = True
        src, dst = np.nonzero(adjacent)
        return _edge_lists(src, dst, n)
    edges = np.unique(np.arange(n, dtype=np.int64)[:, None] * n + table)
    return _edge_lists(edges // n, edges % n, n)


def _edge_lists(src: np.ndarray, dst: np.ndarray, n: int) -> list[list[int]]:
    """Per state, the targets of its edges, given as (src, dst) arrays sorted by source then target."""
    out: list[list[int]] = [[] for _ in range(n)]
    for s, t in zip(src.tolist(), dst.tolist()):
        out[s].append(t)
    return out


def rejecting_sink(table: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """States from which no accepting state is reachable (backward reachability from accepting)."""
    return _sink(_successors(table), accepting)


def _sink(successors: list[list[int]], accepting: np.ndarray) -> np.ndarray:
    """`rejecting_sink` on the successor lists: backward reachability from the accepting states."""
    preds: list[list[int]] = [[] for _ in successors]
    for s, targets in enumerate(successors):
        for t in targets:
            preds[t].append(s)
    alive = np.array(accepting, dtype=bool)
    queue = deque(np.flatnonzero(alive).tolist())
    while queue:
        t = queue.popleft()
        for s in preds[t]:
            if not alive[s]:
                alive[s] = True
                queue.append(s)
    sink = ~alive
    sink.setflags(write=False)
    return sink
