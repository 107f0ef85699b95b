"""Language equivalence of LTLf formulas on their DFAs, and batch scoring of candidate translations.

Two formulas are equivalent when their DFAs accept the same non-empty finite traces. The product
automaton over the union of both formulas' atoms is explored breadth-first from the pair of initial
states; the first pair reached whose acceptance differs gives a shortest distinguishing trace. The
initial pair itself stands for the empty trace, which is not an LTLf trace, so it is never compared
(a later visit to it, by a non-empty trace, is). The product steps on classes of union letters that
behave alike in both DFAs, so 16 atoms on each side cost what their behaviours cost, not 2**32.

Batch scoring (SENTINEL's semantic level) classes each candidate as `syntax_error`,
`not_equivalent` or `equivalent` to the reference formula with the same id.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from safety_monitor.errors import SourceError, SpecError
from safety_monitor.executors import Executor, Serial, results
from safety_monitor.files import load_yaml, parse_json, read_text
from safety_monitor.specs.compile import compile_formula
from safety_monitor.specs.dfa import TableDFA
from safety_monitor.specs.ltlf import parse

VERDICTS = ("syntax_error", "not_equivalent", "equivalent")


@dataclass(frozen=True)
class EquivalenceResult:
    equivalent: bool
    atoms: tuple[str, ...]  # union of both formulas' atoms
    trace: tuple[dict[str, bool], ...] = ()  # a shortest distinguishing trace (empty when equivalent)
    accepted_by: str | None = None  # "A" or "B": which formula accepts `trace`

    def to_dict(self) -> dict[str, Any]:
        return {"equivalent": self.equivalent, "trace": [dict(v) for v in self.trace], "accepted_by": self.accepted_by}


MAX_PRODUCT_PAIRS = 1 << 24  # state pairs the search indexes (an 8-byte parent entry each: 128 MB)
MAX_LETTER_CLASSES = 1 << 22  # letters the product steps on (one per distinct pair of behaviours)
MAX_PRODUCT_STEPS = 1 << 28  # (state pair, letter class) successors the search may compute in all
SMALL_UNION = 8  # up to this many atoms in all, stepping on every letter is cheaper than finding classes


def dfa_equivalence(a: TableDFA, b: TableDFA) -> EquivalenceResult:
    """Decide L(a) == L(b) over non-empty traces; otherwise a shortest trace in exactly one.

    The product steps on `letter_classes`, one union letter per distinct pair of behaviours, never on
    all 2**n union letters; each class stands for its smallest letter, so the trace is the one a search
    over every union letter in increasing order finds (and small unions do step on every letter). A
    SpecError refuses products beyond the bounds.
    """
    atoms = tuple(sorted(set(a.atoms) | set(b.atoms)))
    na, nb = a.n_states, b.n_states
    if na * nb > MAX_PRODUCT_PAIRS:
        raise SpecError(
            f"equivalence check refused: the two DFAs have {na} x {nb} state pairs, more than "
            f"the {MAX_PRODUCT_PAIRS} it can search"
        )
    letters = np.arange(1 << len(atoms)) if len(atoms) <= SMALL_UNION else letter_classes(a, b, atoms)
    ta, tb = a.table[:, _project(letters, atoms, a.atoms)], b.table[:, _project(letters, atoms, b.atoms)]
    acc_a, acc_b = np.asarray(a.accepting), np.asarray(b.accepting)
    parent = np.full(na * nb, -1, dtype=np.int64)  # -1: not yet reached by a non-empty trace
    initial = a.initial * nb + b.initial
    frontier = np.array([initial], dtype=np.int64)
    chunk = max(1, (1 << 22) // letters.size)  # frontier pairs stepped at once: bounds the memory
    steps = 0
    while frontier.size:
        steps += frontier.size * letters.size
        if steps > MAX_PRODUCT_STEPS:
            raise SpecError(
                f"equivalence check refused: the product search would step more than "
                f"{MAX_PRODUCT_STEPS} (state pair, letter class) combinations "
                f"({letters.size} letter classes over {len(atoms)} atoms)"
            )
        level = []
        for lo in range(0, frontier.size, chunk):
            part = frontier[lo : lo + chunk]
            successors = (ta[part // nb] * nb + tb[part % nb]).reshape(-1)  # row-major: pair, then letter
            fresh = np.flatnonzero(parent[successors] < 0)
            pairs, first = np.unique(successors[fresh], return_index=True)
            order = np.argsort(first)  # in order of first reach, as a search over all letters meets them
            pairs, first = pairs[order], fresh[first[order]]
            parent[pairs] = part[first // letters.size]
            level.append(pairs)
        pairs = np.concatenate(level)
        differs = np.flatnonzero(acc_a[pairs // nb] != acc_b[pairs % nb])
        if differs.size:
            target = int(pairs[differs[0]])
            trace = _trace_to(target, initial, parent, ta, tb, nb, letters)
            return EquivalenceResult(
                False, atoms, tuple(_valuation(x, atoms) for x in trace), "A" if acc_a[target // nb] else "B"
            )
        frontier = pairs
    return EquivalenceResult(True, atoms)


def _trace_to(
    target: int, initial: int, parent: np.ndarray, ta: np.ndarray, tb: np.ndarray, nb: int, letters: np.ndarray
) -> list[int]:
    """Union letters from the initial pair to `target`: per step, the first class leading parent -> child.

    The walk stops at the first visit of the initial pair: a shorter path from it would have been found
    at an earlier level, so the first visit is the start of the trace (frame count >= 1).
    """
    trace = []
    child = target
    while True:
        before = int(parent[child])
        trace.append(int(letters[np.flatnonzero(ta[before // nb] * nb + tb[before % nb] == child)[0]]))
        if before == initial:
            return trace[::-1]
        child = before


def _valuation(letter: int, atoms: tuple[str, ...]) -> dict[str, bool]:
    return {atom: bool(letter >> i & 1) for i, atom in enumerate(atoms)}


def letter_classes(a: TableDFA, b: TableDFA, atoms: tuple[str, ...]) -> np.ndarray:
    """The smallest union letter of each distinct (column of a, column of b) pair, sorted.

    Union letters with the same column in a's table (a's successor in every state) and the same column
    in b's step the product alike. Such a class is a choice of the shared atoms' bits plus private bits
    of each side; per DFA, `_columns` lists the (shared bits, column) pairs with their smallest private
    bits, and joining the two lists on the shared bits gives every class without enumerating 2**n.
    """
    shared = set(a.atoms) & set(b.atoms)
    sa, ka, pa = _columns(a, atoms, shared)
    sb, kb, pb = _columns(b, atoms, shared)
    lo, hi = np.searchsorted(sb, sa, side="left"), np.searchsorted(sb, sa, side="right")
    counts = hi - lo
    total = int(counts.sum())
    if total > MAX_LETTER_CLASSES:
        raise SpecError(
            f"equivalence check refused: the two DFAs' letters combine into {total} classes over "
            f"{len(atoms)} atoms, more than {MAX_LETTER_CLASSES}"
        )
    i = np.repeat(np.arange(sa.size), counts)
    j = lo[i] + np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    union = sa[i] + pa[i] + pb[j]
    combo = ka[i] * (int(kb.max()) + 1) + kb[j]
    order = np.lexsort((union, combo))
    first = np.r_[True, combo[order][1:] != combo[order][:-1]]
    return np.sort(union[order][first])


def _columns(dfa: TableDFA, atoms: tuple[str, ...], shared: set[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct (shared bits, column class) of the DFA's own letters, sorted by shared bits: the shared
    bits and the smallest private bits (both as union-letter values) and the class."""
    own = np.arange(1 << len(dfa.atoms), dtype=np.int64)
    shared_bits = np.zeros_like(own)
    private_bits = np.zeros_like(own)
    for i, atom in enumerate(dfa.atoms):
        bit = ((own >> i) & 1) << atoms.index(atom)
        if atom in shared:
            shared_bits |= bit
        else:
            private_bits |= bit
    columns = np.ascontiguousarray(dfa.table.T)
    rows = columns.view(np.dtype((np.void, columns.dtype.itemsize * columns.shape[1]))).ravel()
    klass = np.unique(rows, return_inverse=True)[1].reshape(-1).astype(np.int64)
    order = np.lexsort((private_bits, klass, shared_bits))
    s, k = shared_bits[order], klass[order]
    first = np.r_[True, (s[1:] != s[:-1]) | (k[1:] != k[:-1])]
    return s[first], k[first], private_bits[order][first]


def _project(letters: np.ndarray, union: tuple[str, ...], own: tuple[str, ...]) -> np.ndarray:
    """Each union letter as a letter over `own`, keeping only `own`'s atoms."""
    out = np.zeros_like(letters)
    for i, atom in enumerate(own):
        out |= ((letters >> union.index(atom)) & 1) << i
    return out


def formula_equivalence(text_a: str, text_b: str) -> EquivalenceResult:
    """Compile both formulas (cached) and compare them; SpecError on a syntax error."""
    return dfa_equivalence(compile_formula(text_a), compile_formula(text_b))


# ----- batch scoring ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    id: str
    formula: str
    model: str = ""  # who produced a candidate (a language model's name), for per-model rates
    line: int = 0


@dataclass(frozen=True)
class CandidateScore:
    id: str
    model: str
    candidate: str
    reference: str
    verdict: str  # one of VERDICTS
    error: str = ""  # the syntax error, for `syntax_error`
    result: EquivalenceResult | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "model": self.model,
            "candidate": self.candidate,
            "reference": self.reference,
            "verdict": self.verdict,
        }
        if self.error:
            out["error"] = self.error
        if self.result is not None and not self.result.equivalent:
            # the candidate is compared as A and the reference as B: say which by role, not by letter
            out["trace"] = [dict(v) for v in self.result.trace]
            out["accepted_by"] = "candidate" if self.result.accepted_by == "A" else "reference"
        return out


@dataclass
class Rates:
    total: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))

    def rate(self, verdict: str) -> float:
        return self.counts[verdict] / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            **{v: self.counts[v] for v in VERDICTS},
            **{f"{v}_rate": round(self.rate(v), 4) for v in VERDICTS},
        }


def score_candidates(
    candidates: Iterable[Entry],
    references: Iterable[Entry],
    executor: Executor | None = None,
    warn: Callable[[str], None] | None = None,
) -> list[CandidateScore]:
    """Each candidate against its reference, in order; by `executor` (default: here, one at a time), `warn`
    told of any candidate whose worker died and that ran again."""
    refs: dict[str, Entry] = {}
    for r in references:
        if r.id in refs:
            raise SpecError(f"reference id {r.id!r} appears twice")
        refs[r.id] = r
    candidates = list(candidates)
    missing = sorted({c.id for c in candidates} - set(refs))
    if missing:
        raise SpecError(f"no reference formula for candidate id(s): {', '.join(missing)}")
    pairs = [(c, refs[c.id]) for c in candidates]
    return results(executor or Serial(), _score, pairs, lambda pair: f"candidate {pair[0].id!r}", warn)


def _score(pair: tuple[Entry, Entry]) -> CandidateScore:
    c, ref = pair
    try:
        parse(c.formula)
    except SpecError as exc:
        return CandidateScore(c.id, c.model, c.formula, ref.formula, "syntax_error", error=str(exc).splitlines()[0])
    try:
        reference = compile_formula(ref.formula)
    except SpecError as exc:
        raise SpecError(f"reference {ref.id!r}: {exc}") from None
    result = dfa_equivalence(compile_formula(c.formula), reference)
    verdict = "equivalent" if result.equivalent else "not_equivalent"
    return CandidateScore(c.id, c.model, c.formula, ref.formula, verdict, result=result)


def rates_by_model(scores: Iterable[CandidateScore]) -> dict[str, Rates]:
    """Per model (in first-seen order) and overall under the key "all"."""
    table: dict[str, Rates] = defaultdict(Rates)
    for s in scores:
        for key in dict.fromkeys((s.model or "-", "all")):
            table[key].total += 1
            table[key].counts[s.verdict] += 1
    return dict(table)


def load_entries(path: str | Path) -> list[Entry]:
    """id + formula entries from JSON Lines (`.jsonl`), or YAML/JSON: a list of mappings, a mapping
    id -> formula, or a spec file (its properties' names and formulas)."""
    path = Path(path)
    if path.suffix == ".jsonl":
        text = read_text(path, "formula file", SourceError)
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                items.append((n, parse_json(line, f"{path}:{n}", SourceError)))
    else:
        doc = load_yaml(path, "formula file", SourceError)
        if isinstance(doc, dict) and "properties" in doc:
            doc = [{"id": p.get("name"), "formula": p.get("formula")} for p in doc["properties"] if isinstance(p, dict)]
        elif isinstance(doc, dict):
            doc = [{"id": k, "formula": v} for k, v in doc.items()]
        if not isinstance(doc, list):
            raise SourceError(f"{path}: expected a list of {{id, formula}} mappings or a mapping id -> formula")
        items = list(enumerate(doc, 1))
    return [_entry(path, n, item) for n, item in items]


def _entry(path: Path, n: int, item: Any) -> Entry:
    if not isinstance(item, dict) or not isinstance(item.get("formula"), str) or item.get("id") in (None, ""):
        raise SourceError(f"{path}: entry {n}: expected a mapping with 'id' and a string 'formula', got {item!r:.80}")
    model = item.get("model", "")
    return Entry(str(item["id"]), item["formula"], str(model) if model is not None else "", n)
