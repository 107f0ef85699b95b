"""SENTINEL's classes of safety properties, read off a formula's shape.

- state_invariant: a condition every frame must satisfy, `G p` with p propositional (`G !p`,
  `G(p -> q)`, `!F p`), or a conjunction of such.
- ordering_constraint: what must follow a trigger, `G(p -> f)` with p propositional and f temporal
  (`G(p -> F q)`, `G(p -> (a U b))`, the weak-until form `(a U b) | G a`), or an until/release
  between propositional conditions from the first frame on (`!q U p`: no q before p).
- other: anything else (reachability `F p`, first-frame conditions, recovery goals, ...).

A formula of one of Dwyer's pattern shapes (spec/patterns.py) also has that pattern named: `pattern`
holds the match, and the reason starts with it ("response, global: ...").
"""

from __future__ import annotations

from safety_monitor.specs.ltlf import (
    Always,
    And,
    BoundedEventually,
    Eventually,
    Formula,
    Implies,
    Not,
    Or,
    Release,
    Until,
    is_propositional,
    to_text,
)
from safety_monitor.specs.patterns import PatternMatch, recognise

KINDS = ("state_invariant", "ordering_constraint", "other")


class Classification(str):
    """One of `KINDS`; compares equal to that plain string and carries a one-line `reason`."""

    reason: str
    pattern: PatternMatch | None

    def __new__(cls, kind: str, reason: str, pattern: PatternMatch | None = None) -> Classification:
        if kind not in KINDS:
            raise ValueError(f"unknown class {kind!r}; expected one of {KINDS}")
        obj = super().__new__(cls, kind)
        obj.reason = reason
        obj.pattern = pattern
        return obj

    @property
    def kind(self) -> str:
        return str.__str__(self)


def classify(f: Formula) -> Classification:
    shape = _classify(f)
    match = recognise(f)
    if match is None:
        return shape
    return Classification(shape.kind, f"{match.describe(to_text)}; {shape.reason}", match)


def _classify(f: Formula) -> Classification:
    if isinstance(f, And):
        parts = [classify(a) for a in f.args]
        if all(p == "state_invariant" for p in parts):
            return Classification("state_invariant", "conjunction of state invariants")
        if all(p != "other" for p in parts):
            return Classification("ordering_constraint", "conjunction of invariants and ordering constraints")
        other = next(p for p in parts if p == "other")
        return Classification("other", f"a conjunct is neither an invariant nor an ordering: {other.reason}")
    if isinstance(f, Not) and isinstance(f.arg, Eventually):
        return classify(Always(_negate(f.arg.arg)))
    if isinstance(f, Always):
        return _classify_always(f.arg)
    if _is_precedence(f):
        return Classification("ordering_constraint", f"precedence from the first frame: {to_text(f)}")
    if is_propositional(f):
        return Classification("other", "propositional: constrains the first frame only")
    if isinstance(f, Eventually):
        return Classification("other", f"reachability: {to_text(f.arg)} must happen at some frame")
    return Classification("other", "no invariant or trigger-then-order shape")


def _classify_always(body: Formula) -> Classification:
    if is_propositional(body):
        return Classification("state_invariant", f"every frame must satisfy {to_text(body)}")
    if isinstance(body, And):
        return classify(And(tuple(Always(a) for a in body.args)))
    split = _trigger_split(body)
    if split is None:
        return Classification("other", f"G over the untriggered temporal formula {to_text(body)}")
    return Classification("ordering_constraint", _ordering_reason(*split))


def _trigger_split(body: Formula) -> tuple[Formula, Formula] | None:
    """(p, f) for bodies p -> f and !p | f with p propositional and f temporal."""
    if isinstance(body, Implies) and is_propositional(body.left):
        return body.left, body.right
    if isinstance(body, Or):
        plain = [a for a in body.args if is_propositional(a)]
        temporal = [a for a in body.args if not is_propositional(a)]
        if plain and temporal:
            rest = temporal[0] if len(temporal) == 1 else Or(tuple(temporal))
            return _negate(plain[0] if len(plain) == 1 else Or(tuple(plain))), rest
    return None


def _ordering_reason(trigger: Formula, then: Formula) -> str:
    p = to_text(trigger)
    if isinstance(then, Eventually) and is_propositional(then.arg):
        return f"response: every {p} must be followed by {to_text(then.arg)}"
    if isinstance(then, BoundedEventually) and is_propositional(then.arg):
        return f"bounded response: every {p} must be followed by {to_text(then.arg)} within {then.bound.words()}"
    if isinstance(then, Always) and is_propositional(then.arg):
        return f"after {p}, {to_text(then.arg)} must hold from then on"
    if _is_precedence(then):
        return f"after {p}: {to_text(then)}"
    return f"whenever {p} holds, {to_text(then)} must follow"


def _is_precedence(f: Formula) -> bool:
    """a U b, a R b over propositional a, b, or the weak until (a U b) | G a."""
    if isinstance(f, (Until, Release)):
        return is_propositional(f.left) and is_propositional(f.right)
    if isinstance(f, Or) and len(f.args) == 2:
        until = next((a for a in f.args if isinstance(a, Until)), None)
        always = next((a for a in f.args if isinstance(a, Always)), None)
        return until is not None and always is not None and until.left == always.arg and _is_precedence(until)
    return False


def _negate(f: Formula) -> Formula:
    return f.arg if isinstance(f, Not) else Not(f)
