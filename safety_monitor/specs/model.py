"""Spec files: a predicate vocabulary and properties (LTLf formula + recovery), validated and compiled.

Validation collects every problem in the file and reports them together, each naming the file, the
property and what is wrong, so a user fixes a spec file in one pass.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from safety_monitor.errors import SpecError, ToolMissingError
from safety_monitor.files import load_yaml
from safety_monitor.names import did_you_mean
from safety_monitor.specs.compile import compile_formula
from safety_monitor.specs.dfa import TableDFA
from safety_monitor.specs.ltlf import (
    Always,
    Formula,
    Implies,
    Not,
    atoms_of,
    bound_frames,
    is_propositional,
    parse,
    resolve_bounds,
    seconds_bounds,
    to_text,
    truth_table,
)
from safety_monitor.specs.patterns import PATTERN_ARGS, SCOPE_FORMS, SCOPE_KEYS, Pattern, PatternSpec, Scope

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
    "joint_limits",
)
_TOP_KEYS = {"predicates", "properties", "control_rate_hz"}
_KEYWORDS = ("true", "false", "last")  # ltlf2dfa's lexer matches these before any name, case-insensitively
_PROPERTY_KEYS = {
    "name",
    "category",
    "formula",
    "recovery",
    "min_resolve_frames",
    "min_resolve_s",
    "trigger",
    "description",
    "follows",
    "options",
    "pattern",
    "p",
    "s",
    "within",
    "scope",
}
_PATTERN_KEYS = ("p", "s", "within", "scope")
_WITHIN = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(s?)\s*$")
# Property options, each with the type of its value and that type in words: every reader of a spec file
# (specs check, monitor, replay, nodes) gets this validation, so none accepts what another rejects
OPTIONS: dict[str, tuple[type, str]] = {"close_on_opening_frame": (bool, "true or false")}


@dataclass(frozen=True)
class Property:
    """One safety property. `trigger` is propositional; its rising edges are the triggered events.

    `min_resolve_s`, when given, is the span in seconds and wins over `min_resolve_frames` once the
    control rate is known (`at_rate`); frames alone serve rate-less uses such as trace files. The same
    rate turns the formulas' bounds in seconds into frames when they compile. A property given as a
    `pattern` carries the formula the pattern becomes.
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
    pattern: PatternSpec | None = None
    control_rate_hz: float | None = None

    def at_rate(self, control_rate_hz: float) -> Property:
        """This property with its seconds converted to frames at `control_rate_hz`."""
        frames = self.min_resolve_frames
        if self.min_resolve_s is not None:
            frames = seconds_to_frames(self.min_resolve_s, control_rate_hz)
        return replace(self, min_resolve_frames=frames, control_rate_hz=control_rate_hz)

    def bound_conversions(self) -> tuple[str, ...]:
        """Each bound in seconds with the frames it becomes, e.g. '[<=2.5s] at 500 Hz = 1250 frames'."""
        out = []
        for text in (self.formula, self.recovery):
            for bound in seconds_bounds(parse(text)) if text else ():
                if self.control_rate_hz is None:
                    out.append(f"{bound.text()} needs a control rate")
                elif bound.seconds is not None:  # always: seconds_bounds gives the bounds written in seconds
                    frames = bound_frames(bound.seconds, self.control_rate_hz)
                    out.append(f"{bound.text()} at {self.control_rate_hz:g} Hz = {frames} frames")
        return tuple(out)


@dataclass(frozen=True)
class SpecSet:
    path: str
    predicates: tuple[str, ...]
    properties: tuple[Property, ...]
    control_rate_hz: float | None = None  # the file's own, applied to its properties when read

    def at_rate(self, control_rate_hz: float | None) -> SpecSet:
        """Spans given in seconds converted to frames at the control rate (unchanged when None).

        The monitor's rate wins over the file's: the frames it steps are the frames the bounds count.
        """
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


def authoring_warnings(compiled: CompiledProperty) -> tuple[str, ...]:
    """What makes a valid property useless to a monitor, read off its automata: a formula that no trace
    satisfies, one that no trace can break for good (a tautology, or an unbounded wait such as `F b`), a
    recovery that can never hold; and a `min_resolve_s` that no rate converts. The monitor would say
    nothing about any of these."""
    out = []
    main, recovery = compiled.main, compiled.recovery
    reached = main.reachable()  # after a frame: the empty trace, which satisfies G(false), is no trace here
    if main.rejecting_sink[reached].all():
        out.append("no trace satisfies the formula: every trace violates it on its first frame")
    elif main.accepting[reached].all():
        out.append("every trace satisfies the formula (a tautology): it can never be violated")
    elif not main.rejecting_sink[reached].any():
        out.append(
            "no trace breaks the formula for good (what it waits for may always still come), so it never opens "
            "a violation episode: bound the wait (F[<=N], U[<=N], the bounded_response pattern) to see it broken"
        )
    if recovery is not None and recovery.rejecting_sink[recovery.reachable()].all():
        out.append("the recovery can never hold: an episode, once open, stays open to the end of the trace")
    prop = compiled.prop
    if prop.min_resolve_s and prop.control_rate_hz is None and not prop.min_resolve_frames:
        out.append(  # with no rate, min_resolve_frames applies, and the file left it at 0
            f"min_resolve_s {prop.min_resolve_s:g} needs a control rate (control_rate_hz, or the monitor's): "
            "without one no minimum applies, and every violation still open when the trace ends counts"
        )
    return tuple(out)


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
    return parse_specs(load_yaml(path, "spec file", SpecError), str(path))


def parse_specs(doc: Any, source: str) -> SpecSet:
    """Validate an already-loaded spec document (`source` names it in messages)."""
    problems: list[str] = []
    if not isinstance(doc, dict):
        raise SpecError(f"{source}: expected a mapping with 'predicates' and 'properties'")
    for key in sorted(set(doc) - _TOP_KEYS, key=repr):  # YAML keys may be numbers, booleans, null
        problems.append(f"unknown top-level key {key!r} (allowed: {', '.join(sorted(_TOP_KEYS))})")
    vocabulary = _vocabulary(doc.get("predicates"), problems)
    rate = doc.get("control_rate_hz")
    if rate is not None and (
        isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0
    ):
        problems.append(f"'control_rate_hz' must be a positive number of Hz, got {rate!r}")
        rate = None
    raw_props = doc.get("properties")
    if not isinstance(raw_props, list) or not raw_props:
        problems.append("'properties' must be a non-empty list")
        raw_props = []
    properties: list[Property] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_props):
        prop = _property(raw, i, vocabulary, rate, problems)
        name = raw.get("name") if isinstance(raw, dict) else None
        if isinstance(name, str):  # also when the property has other problems
            if name in seen:
                problems.append(f"property {name!r}: duplicate name")
            seen.add(name)
        if prop is not None:
            properties.append(prop)
    if problems:
        raise SpecError(f"{source}: {len(problems)} problem(s):\n  - " + "\n  - ".join(problems))
    spec_set = SpecSet(source, vocabulary, tuple(properties), None if rate is None else float(rate))
    return spec_set.at_rate(spec_set.control_rate_hz)


def _vocabulary(raw: Any, problems: list[str]) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw:
        problems.append("'predicates' must be a non-empty list of predicate names")
        return ()
    names: list[str] = []
    for item in raw:
        if not isinstance(item, str) or not NAME.match(item):
            problems.append(
                f"predicate {item!r}: names must be lower-case snake_case ([a-z][a-z0-9_]*), as ltlf2dfa requires"
            )
        elif item.startswith(_KEYWORDS):
            problems.append(
                f"predicate {item!r}: names must not start with {', '.join(_KEYWORDS)} (ltlf2dfa's parser "
                "reads that prefix as its keyword, so 'last' would silently mean the last frame)"
            )
        elif item in names:
            problems.append(f"predicate {item!r} is listed twice")
        else:
            names.append(item)
    return tuple(names)


def _property(
    raw: Any, index: int, vocabulary: tuple[str, ...], rate: float | None, problems: list[str]
) -> Property | None:
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
    pattern = _pattern(raw, label, vocabulary, problems)
    if pattern is not None and raw.get("formula") is not None:
        problems.append(f"{label}: give either 'formula' or 'pattern', not both")
    formula_text = pattern.formula() if pattern is not None else raw.get("formula")
    formula = None
    if pattern is not None or "pattern" not in raw:
        formula = _formula(formula_text, "formula", label, vocabulary, rate, problems, required=True)
    _formula(raw.get("recovery"), "recovery", label, vocabulary, rate, problems, required=False)
    trigger_text_given = raw.get("trigger") if raw.get("trigger") is not None or pattern is None else pattern.trigger()
    trigger = _formula(trigger_text_given, "trigger", label, vocabulary, None, problems, required=False)
    if trigger is not None and not is_propositional(trigger):
        problems.append(f"{label}: 'trigger' must be propositional (no temporal operators)")
    if trigger is None and formula is not None and trigger_text_given is None and default_trigger(formula) is None:
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
    if len(problems) > before or not (
        isinstance(name, str) and isinstance(category, str) and isinstance(formula_text, str)
    ):
        return None
    return Property(
        name=name,
        category=category,
        formula=formula_text,
        recovery=raw.get("recovery"),
        min_resolve_frames=mrf,
        description=raw.get("description", "") or "",
        trigger=trigger_text_given,
        follows=raw.get("follows", "") or "",
        options=dict(options),
        min_resolve_s=None if mrs is None else float(mrs),
        pattern=pattern,
    )


def _pattern(raw: dict, label: str, vocabulary, problems: list[str]) -> PatternSpec | None:
    """The property's `pattern` with its letters, `within` and `scope`, or None (problems noted)."""
    name = raw.get("pattern")
    known = ", ".join(p.value for p in Pattern)
    if name is None:
        stray = [k for k in _PATTERN_KEYS if k in raw]
        if stray:
            problems.append(f"{label}: {', '.join(map(repr, stray))} belong to a pattern; add 'pattern:' ({known})")
        return None
    try:
        pattern = Pattern(name)
    except ValueError:
        problems.append(f"{label}: unknown pattern {name!r} (known: {known})")
        return None
    scope, scope_letters = _scope(raw.get("scope", "global"), label, problems)
    before = len(problems)
    letters: list[tuple[str, str]] = []
    for key in PATTERN_ARGS[pattern]:
        if raw.get(key) is None:
            problems.append(f"{label}: pattern {pattern.value} needs '{key}' (a propositional formula)")
    for key in {"p", "s"} - set(PATTERN_ARGS[pattern]):
        if key in raw:
            problems.append(
                f"{label}: pattern {pattern.value} takes no '{key}' (it takes {', '.join(PATTERN_ARGS[pattern])})"
            )
    for key, text in [(k, raw.get(k)) for k in PATTERN_ARGS[pattern]] + scope_letters:
        if text is None and key in PATTERN_ARGS[pattern]:
            continue  # noted above
        f = _formula(text, key, label, vocabulary, None, problems, required=True)
        if f is not None and not is_propositional(f):
            problems.append(f"{label}: pattern letter '{key}' must be propositional (no temporal operators): {text}")
        if isinstance(text, str):
            letters.append((key, text))
    within = _within(raw.get("within"), pattern, label, problems)
    if scope is None or len(problems) > before:
        return None
    return PatternSpec(pattern, scope, tuple(letters), within)


def _scope(raw: Any, label: str, problems: list[str]) -> tuple[Scope | None, list[tuple[str, Any]]]:
    if raw == "global":
        return Scope.GLOBAL, []
    if isinstance(raw, dict):
        for scope, keys in SCOPE_KEYS.items():
            if set(raw) == set(keys):
                return scope, [(letter, raw[key]) for key, letter in keys.items()]
    problems.append(f"{label}: unknown scope {raw!r} (expected {SCOPE_FORMS})")
    return None, []


def _within(raw: Any, pattern: Pattern, label: str, problems: list[str]) -> str | None:
    """The bound as its text in a formula: '2500' (frames) or '2.5s'."""
    if pattern is not Pattern.BOUNDED_RESPONSE:
        if raw is not None:
            problems.append(f"{label}: 'within' belongs to the bounded_response pattern, not {pattern.value}")
        return None
    m = _WITHIN.match(str(raw)) if isinstance(raw, (int, float, str)) and not isinstance(raw, bool) else None
    if m is None:
        problems.append(f"{label}: bounded_response needs 'within': frames (2500) or seconds ('2.5s'), got {raw!r}")
        return None
    amount, unit = m.groups()
    if not unit and "." in amount:
        problems.append(
            f"{label}: 'within' in frames must be a whole number, got {raw!r} (write '{amount}s' for seconds)"
        )
        return None
    return amount + unit


def _options(options: dict, label: str, problems: list[str]) -> None:
    for key, value in options.items():
        if key not in OPTIONS:
            problems.append(f"{label}: unknown option {key!r} (known: {', '.join(OPTIONS)})")
        elif not isinstance(value, OPTIONS[key][0]):
            problems.append(f"{label}: option {key} must be {OPTIONS[key][1]}, got {value!r}")


def _formula(
    text: Any, key: str, label: str, vocabulary, rate: float | None, problems: list[str], required: bool
) -> Formula | None:
    """The parsed formula, or None with the problem noted; with the file's rate its bounds are checked too."""
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
        named = ", ".join(a + did_you_mean(a, vocabulary) for a in unknown)
        problems.append(f"{label}: {key} uses predicates outside the vocabulary: {named}")
        return None
    if rate is not None:
        try:
            resolve_bounds(f, rate)
        except SpecError as exc:
            problems.append(f"{label}: {key}: {exc}")
            return None
    return f


def compile_property(prop: Property) -> CompiledProperty:
    start = time.perf_counter()
    main = compile_formula(prop.formula, prop.control_rate_hz)
    recovery = compile_formula(prop.recovery, prop.control_rate_hz) if prop.recovery else None
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
    trigger = default_trigger(parse(compiled.prop.formula))
    if trigger is None:  # compile_property refuses such a property
        raise SpecError(f"property {compiled.prop.name!r}: cannot derive the trigger; add a propositional 'trigger'")
    return to_text(trigger)
