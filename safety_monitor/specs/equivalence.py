"""Language equivalence of LTLf formulas on their DFAs, and batch scoring of candidate translations.

Two formulas are equivalent when their DFAs accept the same non-empty finite traces. The product
automaton over the union of both formulas' atoms is explored breadth-first from the pair of initial
states; the first pair reached whose acceptance differs gives a shortest distinguishing trace. The
initial pair itself stands for the empty trace, which is not an LTLf trace, so it is never compared
(a later visit to it, by a non-empty trace, is).

Batch scoring (SENTINEL's semantic level) classes each candidate as `syntax_error`,
`not_equivalent` or `equivalent` to the reference formula with the same id.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from safety_monitor.errors import SourceError, SpecError
from safety_monitor.files import load_yaml, read_text
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


def dfa_equivalence(a: TableDFA, b: TableDFA) -> EquivalenceResult:
    """Decide L(a) == L(b) over non-empty traces; otherwise a shortest trace in exactly one."""
    atoms = tuple(sorted(set(a.atoms) | set(b.atoms)))
    ta, tb = a.table[:, _letter_map(a.atoms, atoms)], b.table[:, _letter_map(b.atoms, atoms)]
    acc_a, acc_b = np.asarray(a.accepting), np.asarray(b.accepting)
    nb, n_letters = b.n_states, 1 << len(atoms)
    n_pairs = a.n_states * nb
    seen = np.zeros(n_pairs, dtype=bool)
    parent = np.full(n_pairs, -1, dtype=np.int64)
    via = np.zeros(n_pairs, dtype=np.int64)
    depth = np.zeros(n_pairs, dtype=np.int64)
    frontier = np.array([a.initial * nb + b.initial], dtype=np.int64)
    level = 0
    while frontier.size:
        level += 1
        successors = (ta[frontier // nb] * nb + tb[frontier % nb]).reshape(-1)  # row-major: pair, then letter
        fresh = np.flatnonzero(~seen[successors])
        pairs, first = np.unique(successors[fresh], return_index=True)
        order = np.argsort(first)
        pairs, first = pairs[order], fresh[first[order]]
        seen[pairs] = True
        parent[pairs] = frontier[first // n_letters]
        via[pairs] = first % n_letters
        depth[pairs] = level
        differs = np.flatnonzero(acc_a[pairs // nb] != acc_b[pairs % nb])
        if differs.size:
            target = int(pairs[differs[0]])
            letters = []
            for _ in range(level):
                letters.append(int(via[target]))
                target = int(parent[target])
            trace = tuple({atom: bool(x >> i & 1) for i, atom in enumerate(atoms)} for x in reversed(letters))
            accepted = "A" if acc_a[int(pairs[differs[0]]) // nb] else "B"
            return EquivalenceResult(False, atoms, trace, accepted)
        frontier = pairs
    return EquivalenceResult(True, atoms)


def formula_equivalence(text_a: str, text_b: str) -> EquivalenceResult:
    """Compile both formulas (cached) and compare them; SpecError on a syntax error."""
    return dfa_equivalence(compile_formula(text_a), compile_formula(text_b))


def _letter_map(own: tuple[str, ...], union: tuple[str, ...]) -> np.ndarray:
    """For each letter over `union`, the letter over `own` that keeps only `own`'s atoms."""
    letters = np.arange(1 << len(union))
    out = np.zeros_like(letters)
    for i, atom in enumerate(own):
        out |= ((letters >> union.index(atom)) & 1) << i
    return out


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
        out = {"id": self.id, "model": self.model, "candidate": self.candidate, "reference": self.reference,
               "verdict": self.verdict}
        if self.error:
            out["error"] = self.error
        if self.result is not None and not self.result.equivalent:
            out.update(self.result.to_dict())
        return out


@dataclass
class Rates:
    total: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))

    def rate(self, verdict: str) -> float:
        return self.counts[verdict] / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, **{v: self.counts[v] for v in VERDICTS},
                **{f"{v}_rate": round(self.rate(v), 4) for v in VERDICTS}}


def score_candidates(candidates: Iterable[Entry], references: Iterable[Entry]) -> list[CandidateScore]:
    refs: dict[str, Entry] = {}
    for r in references:
        if r.id in refs:
            raise SpecError(f"reference id {r.id!r} appears twice")
        refs[r.id] = r
    candidates = list(candidates)
    missing = sorted({c.id for c in candidates} - set(refs))
    if missing:
        raise SpecError(f"no reference formula for candidate id(s): {', '.join(missing)}")
    return [_score(c, refs[c.id]) for c in candidates]


def _score(c: Entry, ref: Entry) -> CandidateScore:
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
                try:
                    items.append((n, json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise SourceError(f"{path}:{n}: not JSON: {exc.msg}") from None
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
