"""Spec files: a predicate vocabulary and properties (LTLf formula + recovery), validated and compiled.

Validation collects every problem in the file and reports them together, each naming the file, the
property and what is wrong, so a user fixes a spec file in one pass.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from safety_monitor.errors import SpecError, ToolMissingError
from safety_monitor.specs.compile import compile_formula
from safety_monitor.specs.dfa import TableDFA
from safety_monitor.specs.ltlf import (
    Always,
    Formula,
    Implies,
    Not,
    atoms_of,
    is_propositional,
    parse,
    to_text,
    truth_table,
)

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
CATEGORIES = (
    "collision_contact",
    "grasp_stability",
    "release_stability",
    "cross_contamination",
    "action_onset",
    "mechanism",
    "containment",
    "enclosure_access",
)
_TOP_KEYS = {"predicates", "properties"}
_KEYWORDS = ("true", "false", "last")  # ltlf2dfa's lexer matches these before any name, case-insensitively
_PROPERTY_KEYS = {
    "name", "category", "formula", "recovery", "min_resolve_frames", "min_resolve_s", "trigger", "description",
    "follows", "options",
}
# Property options, each with the type of its value and that type in words: every reader of a spec file
# (specs check, monitor, replay, nodes) gets this validation, so none accepts what another rejects
OPTIONS: dict[str, tuple[type, str]] = {"close_on_opening_frame": (bool, "true or false")}


@dataclass(frozen=True)
class Property:
    """One safety property. `trigger` is propositional; its rising edges are the triggered events.

    `min_resolve_s`, when given, is the span in seconds and wins over `min_resolve_frames` once the
    control rate is known (`at_rate`); frames alone serve rate-less uses such as trace files.
    """

    name: str
    category: str
    formula: str
    recovery: str | None = None
    min_resolve_frames: int = 0
    description: str = ""
    trigger: str | None = None
    follows: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    min_resolve_s: float | None = None

    def at_rate(self, control_rate_hz: float) -> Property:
        """This property with its seconds converted to frames at `control_rate_hz`."""
        if self.min_resolve_s is None:
            return self
        return replace(self, min_resolve_frames=seconds_to_frames(self.min_resolve_s, control_rate_hz))


@dataclass(frozen=True)
class SpecSet:
    path: str
    predicates: tuple[str, ...]
    properties: tuple[Property, ...]

    def at_rate(self, control_rate_hz: float | None) -> SpecSet:
        """Spans given in seconds converted to frames at the control rate (unchanged when None)."""
        if control_rate_hz is None:
            return self
        return replace(self, properties=tuple(p.at_rate(control_rate_hz) for p in self.properties))


def seconds_to_frames(seconds: float, control_rate_hz: float) -> int:
    """Whole frames spanning `seconds` at the control rate (at least one for a positive span)."""
    if not control_rate_hz > 0:
        raise SpecError(f"control rate must be positive, got {control_rate_hz!r} Hz")
    frames = round(seconds * control_rate_hz)
    return max(1, frames) if seconds > 0 else 0


@dataclass(frozen=True, eq=False)
class CompiledProperty:
    prop: Property
    main: TableDFA
    recovery: TableDFA | None
    trigger_table: np.ndarray  # bool per letter over trigger_atoms
    trigger_atoms: tuple[str, ...]
    compile_ms: float

    @property
    def atoms(self) -> tuple[str, ...]:
        """Every predicate this property reads (main, recovery and trigger)."""
        rec = self.recovery.atoms if self.recovery else ()
        return tuple(sorted(set(self.main.atoms) | set(rec) | set(self.trigger_atoms)))


def default_trigger(f: Formula) -> Formula | None:
    """The antecedent of the usual safety shapes: G(p -> ...) gives p, G(!p) gives p, G(p) gives !p."""
    if not isinstance(f, Always):
        return None
    body = f.arg
    if isinstance(body, Implies) and is_propositional(body.left):
        return body.left
    if isinstance(body, Not) and is_propositional(body.arg):
        return body.arg
    if is_propositional(body):
        return Not(body)
    return None


def load_specs(path: str | Path) -> SpecSet:
    """Read and validate a spec file; one SpecError lists every problem found."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read spec file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    try:
        doc = yaml.load(text, Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SpecError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise SpecError(f"{path}: YAML nested too deeply") from None
    return parse_specs(doc, str(path))


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 10x faster, not recursive


def parse_specs(doc: Any, source: str) -> SpecSet:
    """Validate an already-loaded spec document (`source` names it in messages)."""
    problems: list[str] = []
    if not isinstance(doc, dict):
        raise SpecError(f"{source}: expected a mapping with 'predicates' and 'properties'")
    for key in sorted(set(doc) - _TOP_KEYS, key=repr):  # YAML keys may be numbers, booleans, null
        problems.append(f"unknown top-level key {key!r} (allowed: {', '.join(sorted(_TOP_KEYS))})")
    vocabulary = _vocabulary(doc.get("predicates"), problems)
    raw_props = doc.get("properties")
    if not isinstance(raw_props, list) or not raw_props:
        problems.append("'properties' must be a non-empty list")
        raw_props = []
    properties: list[Property] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_props):
        prop = _property(raw, i, vocabulary, problems)
        name = raw.get("name") if isinstance(raw, dict) else None
        if isinstance(name, str):  # also when the property has other problems
            if name in seen:
                problems.append(f"property {name!r}: duplicate name")
            seen.add(name)
        if prop is not None:
            properties.append(prop)
    if problems:
        raise SpecError(f"{source}: {len(problems)} problem(s):\n  - " + "\n  - ".join(problems))
    return SpecSet(source, vocabulary, tuple(properties))


def _vocabulary(raw: Any, problems: list[str]) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw:
        problems.append("'predicates' must be a non-empty list of predicate names")
        return ()
    names: list[str] = []
    for item in raw:
        if not isinstance(item, str) or not NAME.match(item):
            problems.append(f"predicate {item!r}: names must be lower-case snake_case ([a-z][a-z0-9_]*), as ltlf2dfa requires")
        elif item.startswith(_KEYWORDS):
            problems.append(f"predicate {item!r}: names must not start with {', '.join(_KEYWORDS)} (ltlf2dfa's parser "
                            "reads that prefix as its keyword, so 'last' would silently mean the last frame)")
        elif item in names:
            problems.append(f"predicate {item!r} is listed twice")
        else:
            names.append(item)
    return tuple(names)


def _property(raw: Any, index: int, vocabulary: tuple[str, ...], problems: list[str]) -> Property | None:
    if not isinstance(raw, dict):
        problems.append(f"properties[{index}]: expected a mapping")
        return None
    name = raw.get("name")
    label = f"property {name!r}" if isinstance(name, str) else f"properties[{index}]"
    before = len(problems)
    for key in sorted(set(raw) - _PROPERTY_KEYS, key=repr):
        problems.append(f"{label}: unknown key {key!r} (allowed: {', '.join(sorted(_PROPERTY_KEYS))})")
    if not isinstance(name, str) or not NAME.match(name):
        problems.append(f"{label}: 'name' must be lower-case snake_case")
    category = raw.get("category")
    if not isinstance(category, str) or not NAME.match(category):
        problems.append(f"{label}: 'category' must be lower-case snake_case (usual: {', '.join(CATEGORIES)})")
    formula = _formula(raw.get("formula"), "formula", label, vocabulary, problems, required=True)
    _formula(raw.get("recovery"), "recovery", label, vocabulary, problems, required=False)
    trigger = _formula(raw.get("trigger"), "trigger", label, vocabulary, problems, required=False)
    if trigger is not None and not is_propositional(trigger):
        problems.append(f"{label}: 'trigger' must be propositional (no temporal operators)")
    if trigger is None and formula is not None and raw.get("trigger") is None and default_trigger(formula) is None:
        problems.append(f"{label}: cannot derive the trigger from the formula's shape; add a propositional 'trigger'")
    mrf = raw.get("min_resolve_frames", 0)
    if isinstance(mrf, bool) or not isinstance(mrf, int) or mrf < 0:
        problems.append(f"{label}: 'min_resolve_frames' must be a non-negative integer (frames), got {mrf!r}")
    mrs = raw.get("min_resolve_s")
    if mrs is not None and (isinstance(mrs, bool) or not isinstance(mrs, (int, float)) or not 0 <= mrs < float("inf")):
        problems.append(f"{label}: 'min_resolve_s' must be a non-negative number of seconds, got {mrs!r}")
    options = raw.get("options", {}) or {}
    if not isinstance(options, dict):
        problems.append(f"{label}: 'options' must be a mapping")
    else:
        _options(options, label, problems)
    for key in ("description", "follows"):
        if not isinstance(raw.get(key, ""), str):
            problems.append(f"{label}: {key!r} must be text")
    if len(problems) > before:
        return None
    return Property(
        name=name,
        category=category,
        formula=raw["formula"],
        recovery=raw.get("recovery"),
        min_resolve_frames=mrf,
        description=raw.get("description", "") or "",
        trigger=raw.get("trigger"),
        follows=raw.get("follows", "") or "",
        options=dict(options),
        min_resolve_s=None if mrs is None else float(mrs),
    )


def _options(options: dict, label: str, problems: list[str]) -> None:
    for key, value in options.items():
        if key not in OPTIONS:
            problems.append(f"{label}: unknown option {key!r} (known: {', '.join(OPTIONS)})")
        elif not isinstance(value, OPTIONS[key][0]):
            problems.append(f"{label}: option {key} must be {OPTIONS[key][1]}, got {value!r}")


def _formula(text: Any, key: str, label: str, vocabulary, problems: list[str], required: bool) -> Formula | None:
    if text is None:
        if required:
            problems.append(f"{label}: missing {key!r}")
        return None
    if not isinstance(text, str):
        problems.append(f"{label}: {key!r} must be a string, got {type(text).__name__}")
        return None
    try:
        f = parse(text)
    except SpecError as exc:
        problems.append(f"{label}: {key}: {exc}")
        return None
    unknown = [a for a in atoms_of(f) if a not in vocabulary]
    if unknown and vocabulary:
        problems.append(f"{label}: {key} uses predicates outside the vocabulary: {', '.join(unknown)}")
        return None
    return f


def compile_property(prop: Property) -> CompiledProperty:
    start = time.perf_counter()
    main = compile_formula(prop.formula)
    recovery = compile_formula(prop.recovery) if prop.recovery else None
    trigger = parse(prop.trigger) if prop.trigger else default_trigger(parse(prop.formula))
    if trigger is None:
        raise SpecError(f"property {prop.name!r}: cannot derive the trigger; add a propositional 'trigger'")
    trigger_atoms = atoms_of(trigger)
    table = truth_table(trigger, trigger_atoms)
    table.setflags(write=False)
    elapsed_ms = (time.perf_counter() - start) * 1000.0
    return CompiledProperty(prop, main, recovery, table, trigger_atoms, elapsed_ms)


def compile_specs(spec_set: SpecSet) -> list[CompiledProperty]:
    """Compile every property (cached); the error names the file and the property that failed."""
    compiled = []
    for prop in spec_set.properties:
        try:
            compiled.append(compile_property(prop))
        except (SpecError, ToolMissingError) as exc:
            raise type(exc)(f"{spec_set.path}: property {prop.name!r}: {exc}") from None
    return compiled


def trigger_text(compiled: CompiledProperty) -> str:
    """The trigger as text (given or derived), for reports."""
    if compiled.prop.trigger:
        return compiled.prop.trigger
    return to_text(default_trigger(parse(compiled.prop.formula)))
