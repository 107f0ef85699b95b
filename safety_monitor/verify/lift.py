"""Lift LTLf properties to CTL state formulas that hold on a tree exactly when every path satisfies them.

`lift(f)` returns a CTL formula g with: g holds at a node iff every path from that node (every
recorded trajectory, at a root) satisfies f under LTLf semantics. The rules are exact for the
universal fragment, with p, q, r propositional and h, k liftable:
    p -> p            G h -> AG h          F p -> AF p         p U q -> A[p U q]
    p R q -> A[q W (p & q)]    (p U q) | G p -> A[p W q]    WX h -> AX h
    h & k -> h & k    p | h -> p | h       p -> h -> p -> h    negations pushed inward first
Everything else (F or U over temporal formulas, a disjunction of two temporal formulas, strong
next, `last`) has no exact CTL counterpart on a tree and is reported as not liftable.
"""

from __future__ import annotations

from dataclasses import dataclass

from safety_monitor.errors import SpecError
from safety_monitor.specs.ltlf import (
    Always,
    And,
    Atom,
    Const,
    Equiv,
    Eventually,
    Formula,
    Implies,
    Last,
    Next,
    Not,
    Or,
    Release,
    Until,
    WeakNext,
    is_propositional,
    negated,
    parse,
    to_text,
)
from safety_monitor.verify.ctl import AF, AG, AU, AW, AX, CTLFormula


class NotLiftable(SpecError):
    """The formula is outside the liftable fragment (the message says which part and why)."""


@dataclass(frozen=True)
class LiftedProperty:
    name: str
    category: str
    ltl: str
    ctl: CTLFormula | None
    reason: str  # why it could not be lifted; empty when lifted


def lift(f: Formula) -> CTLFormula:
    if is_propositional(f):
        return _as_state_formula(f)
    if isinstance(f, Not):
        return lift(_push_not(f.arg))
    if isinstance(f, Always):
        return AG(lift(f.arg))
    if isinstance(f, Eventually):
        return AF(_state(f.arg, "F"))
    if isinstance(f, Until):
        return AU(_state(f.left, "U"), _state(f.right, "U"))
    if isinstance(f, Release):
        left, right = _state(f.left, "R"), _state(f.right, "R")
        return AW(right, And((left, right)))
    if isinstance(f, WeakNext):
        return AX(lift(f.arg))
    if isinstance(f, And):
        return And(tuple(lift(a) for a in f.args))
    if isinstance(f, Implies):
        if not is_propositional(f.left):
            raise NotLiftable(f"the antecedent of '->' must be propositional: {to_text(f.left)}")
        return Implies(_as_state_formula(f.left), lift(f.right))
    if isinstance(f, Or):
        return _lift_or(f)
    if isinstance(f, Next):
        raise NotLiftable(
            f"strong next X({to_text(f.arg)}): a trajectory may stop at a node where another goes on; use WX or G/F/U"
        )
    if isinstance(f, Last):
        raise NotLiftable("'last' is a property of a path, not of a tree node")
    if isinstance(f, Equiv):
        raise NotLiftable(f"'<->' between temporal formulas: {to_text(f)}")
    raise NotLiftable(f"unsupported formula {to_text(f)}")


def lift_text(text: str) -> CTLFormula:
    return lift(parse(text))


def lift_properties(properties) -> list[LiftedProperty]:
    """Lift each spec-file `Property` (its main formula); failures carry the reason."""
    out = []
    for prop in properties:
        try:
            out.append(LiftedProperty(prop.name, prop.category, prop.formula, lift_text(prop.formula), ""))
        except NotLiftable as exc:
            out.append(LiftedProperty(prop.name, prop.category, prop.formula, None, str(exc)))
    return out


def _state(f: Formula, op: str) -> CTLFormula:
    if not is_propositional(f):
        raise NotLiftable(f"'{op}' over the temporal formula {to_text(f)}: A{op} over paths is not a CTL state formula")
    return _as_state_formula(f)


def _as_state_formula(f: Formula) -> CTLFormula:
    """A propositional LTLf formula as the equal CTL state formula (CTL shares the connectives)."""
    if isinstance(f, (Atom, Const)):
        return f
    if isinstance(f, Not):
        return Not(_as_state_formula(f.arg))
    if isinstance(f, And):
        return And(tuple(_as_state_formula(a) for a in f.args))
    if isinstance(f, Or):
        return Or(tuple(_as_state_formula(a) for a in f.args))
    if isinstance(f, Implies):
        return Implies(_as_state_formula(f.left), _as_state_formula(f.right))
    if isinstance(f, Equiv):
        return Equiv(_as_state_formula(f.left), _as_state_formula(f.right))
    raise NotLiftable(f"a temporal operator where a state formula belongs: {to_text(f)}")


def _lift_or(f: Or) -> CTLFormula:
    plain = [a for a in f.args if is_propositional(a)]
    temporal = [a for a in f.args if not is_propositional(a)]
    until = next((a for a in temporal if isinstance(a, Until)), None)
    always = next((a for a in temporal if isinstance(a, Always)), None)
    lifted: CTLFormula
    if len(temporal) == 2 and until is not None and always is not None and until.left == always.arg:
        lifted = AW(_state(until.left, "W"), _state(until.right, "W"))  # (p U q) | G p is p W q
    elif len(temporal) == 1:
        lifted = lift(temporal[0])
    else:
        raise NotLiftable(f"a disjunction of temporal formulas: {to_text(f)} (A does not distribute over '|')")
    return Or((*(_as_state_formula(p) for p in plain), lifted)) if plain else lifted


def _push_not(f: Formula) -> Formula:
    """Negation normal form one level down: the formula equivalent to !f with `!` moved inward."""
    pushed = negated(f)
    if pushed is None:
        raise NotLiftable(f"cannot push a negation into {to_text(f)}")
    return pushed
