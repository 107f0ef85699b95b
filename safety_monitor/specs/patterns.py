"""Dwyer et al.'s property specification patterns with their scopes, read over finite traces.

A property may give `pattern:` and `scope:` instead of a formula; the pattern becomes an LTLf formula
by the standard mappings (Dwyer, Avrunin, Corbett 1999, the pattern catalogue's LTL column), and the
bounded response by Konrad and Cheng's real-time extension. Over finite traces F and U are strong: a
response must come before the trace ends. The interval of a scope starts at a Q frame (included) and
ends before an R frame (excluded); `between Q and R` only constrains intervals that an R closes within
the trace (F R in its antecedent), `after Q until R` also the last one that runs to the trace's end.

`recognise` reads a pattern back off any formula of these shapes, for classification and `explain`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import StrEnum

from safety_monitor.specs.ltlf import (
    BOUNDED,
    Atom,
    Bound,
    Const,
    Formula,
    Junction,
    children,
    is_propositional,
    parse,
)


class Pattern(StrEnum):
    ABSENCE = "absence"  # P never holds
    EXISTENCE = "existence"  # P holds at some frame
    UNIVERSALITY = "universality"  # P holds at every frame
    PRECEDENCE = "precedence"  # S precedes P: no P before the first S
    RESPONSE = "response"  # S responds to P: every P is followed by S
    BOUNDED_RESPONSE = "bounded_response"  # every P is followed by S within a bound


class Scope(StrEnum):
    GLOBAL = "global"
    BEFORE = "before"  # before the first R
    AFTER = "after"  # from the first Q on
    BETWEEN = "between"  # from each Q to the next R, when an R comes
    AFTER_UNTIL = "after_until"  # from each Q to the next R, or to the end of the trace


# which letters each pattern and scope take (P, S from the pattern; Q, R from the scope)
PATTERN_ARGS = {
    Pattern.ABSENCE: ("p",),
    Pattern.EXISTENCE: ("p",),
    Pattern.UNIVERSALITY: ("p",),
    Pattern.PRECEDENCE: ("p", "s"),
    Pattern.RESPONSE: ("p", "s"),
    Pattern.BOUNDED_RESPONSE: ("p", "s"),
}
SCOPE_ARGS = {
    Scope.GLOBAL: (),
    Scope.BEFORE: ("r",),
    Scope.AFTER: ("q",),
    Scope.BETWEEN: ("q", "r"),
    Scope.AFTER_UNTIL: ("q", "r"),
}
# the YAML forms of a scope: the keys of its mapping, each naming its letter
SCOPE_KEYS = {
    Scope.BEFORE: {"before": "r"},
    Scope.AFTER: {"after": "q"},
    Scope.BETWEEN: {"between": "q", "and": "r"},
    Scope.AFTER_UNTIL: {"after": "q", "until": "r"},
}
SCOPE_FORMS = "global, {before: R}, {after: Q}, {between: Q, and: R} or {after: Q, until: R}"


def _w(a: str, b: str) -> str:
    """Weak until, which ltlf2dfa lacks: a holds until b, or forever."""
    a, b = (x if " " not in x else f"({x})" for x in (a, b))
    return f"({a} U {b} | G({a}))"


def _response(scope: Scope, f: str) -> str:
    """Response and bounded response differ only in the F (f is 'F' or 'F[<=N]', U likewise)."""
    u = f.replace("F", "U")
    return {
        Scope.GLOBAL: f"G({{p}} -> {f}({{s}}))",
        Scope.BEFORE: f"(F({{r}}) -> (({{p}} -> (!{{r}} {u} ({{s}} & !{{r}}))) U {{r}}))",
        Scope.AFTER: f"G({{q}} -> G({{p}} -> {f}({{s}})))",
        Scope.BETWEEN: f"G(({{q}} & !{{r}} & F({{r}})) -> (({{p}} -> (!{{r}} {u} ({{s}} & !{{r}}))) U {{r}}))",
        Scope.AFTER_UNTIL: f"G(({{q}} & !{{r}}) -> {_w(f'{{p}} -> (!{{r}} {u} ({{s}} & !{{r}}))', '{r}')})",
    }[scope]


TEMPLATES: dict[tuple[Pattern, Scope], str] = {
    (Pattern.ABSENCE, Scope.GLOBAL): "G(!{p})",
    (Pattern.ABSENCE, Scope.BEFORE): "(F({r}) -> (!{p} U {r}))",
    (Pattern.ABSENCE, Scope.AFTER): "G({q} -> G(!{p}))",
    (Pattern.ABSENCE, Scope.BETWEEN): "G(({q} & !{r} & F({r})) -> (!{p} U {r}))",
    (Pattern.ABSENCE, Scope.AFTER_UNTIL): "G(({q} & !{r}) -> " + _w("!{p}", "{r}") + ")",
    (Pattern.EXISTENCE, Scope.GLOBAL): "F({p})",
    (Pattern.EXISTENCE, Scope.BEFORE): _w("!{r}", "{p} & !{r}"),
    (Pattern.EXISTENCE, Scope.AFTER): "(G(!{q}) | F({q} & F({p})))",
    (Pattern.EXISTENCE, Scope.BETWEEN): "G(({q} & !{r}) -> " + _w("!{r}", "{p} & !{r}") + ")",
    (Pattern.EXISTENCE, Scope.AFTER_UNTIL): "G(({q} & !{r}) -> (!{r} U ({p} & !{r})))",
    (Pattern.UNIVERSALITY, Scope.GLOBAL): "G({p})",
    (Pattern.UNIVERSALITY, Scope.BEFORE): "(F({r}) -> ({p} U {r}))",
    (Pattern.UNIVERSALITY, Scope.AFTER): "G({q} -> G({p}))",
    (Pattern.UNIVERSALITY, Scope.BETWEEN): "G(({q} & !{r} & F({r})) -> ({p} U {r}))",
    (Pattern.UNIVERSALITY, Scope.AFTER_UNTIL): "G(({q} & !{r}) -> " + _w("{p}", "{r}") + ")",
    (Pattern.PRECEDENCE, Scope.GLOBAL): _w("!{p}", "{s}"),
    (Pattern.PRECEDENCE, Scope.BEFORE): "(F({r}) -> (!{p} U ({s} | {r})))",
    # the catalogue's G !Q | F(Q & (!P W S)) lets a later Q restart the check; anchored at the first Q here
    (Pattern.PRECEDENCE, Scope.AFTER): "(G(!{q}) | (!{q} U ({q} & " + _w("!{p}", "{s}") + ")))",
    (Pattern.PRECEDENCE, Scope.BETWEEN): "G(({q} & !{r} & F({r})) -> (!{p} U ({s} | {r})))",
    (Pattern.PRECEDENCE, Scope.AFTER_UNTIL): "G(({q} & !{r}) -> " + _w("!{p}", "{s} | {r}") + ")",
    **{(Pattern.RESPONSE, sc): _response(sc, "F") for sc in Scope},
    **{(Pattern.BOUNDED_RESPONSE, sc): _response(sc, "F[<={n}]") for sc in Scope},
}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class PatternSpec:
    """A pattern instance as a spec file gives it: each letter a propositional formula (text)."""

    pattern: Pattern
    scope: Scope
    letters: tuple[tuple[str, str], ...]  # (letter, formula text), e.g. (("p", "a"), ("s", "b | c"))
    within: str | None = None  # the bounded response's bound: "2500" (frames) or "2.5s"

    def formula(self) -> str:
        """The LTLf formula this pattern becomes (ltlf2dfa syntax plus the bound)."""
        args = {k: v if _NAME.match(v) else f"({v})" for k, v in self.letters}
        return TEMPLATES[self.pattern, self.scope].format(n=self.within, **args)

    def trigger(self) -> str:
        """The frames that put the pattern to the test, whose rising edges the metrics count."""
        letters = dict(self.letters)
        if self.pattern is Pattern.UNIVERSALITY:
            return f"!({letters['p']})"
        if self.pattern is not Pattern.EXISTENCE:
            return letters["p"]
        return {Scope.GLOBAL: "true", Scope.BEFORE: letters.get("r")}.get(self.scope) or letters["q"]

    def describe(self) -> str:
        """'bounded response (within 2.5s), between q and r'."""
        return describe(self.pattern, self.scope, dict(self.letters), self.within)


def describe(pattern: Pattern, scope: Scope, letters: dict[str, str], within: str | None = None) -> str:
    """'response pattern, global scope', 'bounded response pattern (within 2.5 s), scope between q and r'."""
    name = pattern.value.replace("_", " ") + " pattern" + (f" (within {_bound_words(within)})" if within else "")
    where = {
        Scope.GLOBAL: "global scope",
        Scope.BEFORE: "scope before {r}",
        Scope.AFTER: "scope after {q}",
        Scope.BETWEEN: "scope between {q} and {r}",
        Scope.AFTER_UNTIL: "scope after {q} until {r}",
    }[scope]
    return f"{name}, {where.format(**{k: letters.get(k, k.upper()) for k in 'qr'})}"


def _bound_words(within: str) -> str:
    return f"{within[:-1]} s" if within.endswith("s") else f"{within} frames"


@dataclass(frozen=True)
class PatternMatch:
    """A formula found to be a pattern instance: its letters bound to sub-formulas."""

    pattern: Pattern
    scope: Scope
    letters: dict[str, Formula]
    bound: Bound | None

    def describe(self, text) -> str:
        """With `text` rendering each bound sub-formula."""
        within = None
        if self.bound is not None:
            within = f"{self.bound.seconds}s" if self.bound.seconds is not None else f"{self.bound.frames}"
        return describe(self.pattern, self.scope, {k: text(v) for k, v in self.letters.items()}, within)


@functools.lru_cache(maxsize=1)
def _template_asts() -> tuple[tuple[Pattern, Scope, Formula], ...]:
    """Every template parsed with its letters as atoms p, s, q, r (any bound: n is bound on matching)."""
    return tuple(
        (p, s, parse(TEMPLATES[p, s].format(p="p", s="s", q="q", r="r", n="1"))) for p in Pattern for s in Scope
    )


def recognise(f: Formula) -> PatternMatch | None:
    """The first pattern (in catalogue order) whose formula has f's shape, with its letters bound."""
    for pattern, scope, template in _template_asts():
        bindings: dict[str, Formula] = {}
        bound: list[Bound] = []
        if _unify(template, f, bindings, bound):
            return PatternMatch(pattern, scope, bindings, bound[0] if bound else None)
    return None


def _unify(t: Formula, f: Formula, bindings: dict[str, Formula], bound: list[Bound]) -> bool:
    """Template atoms are letters that bind propositional sub-formulas (the same one at each use)."""
    if isinstance(t, Atom):
        if not is_propositional(f):
            return False
        return bindings.setdefault(t.name, f) == f
    if type(t) is not type(f):
        return False
    if isinstance(t, Const):
        return t == f
    if isinstance(f, BOUNDED):  # t is of the same operator
        if bound and bound[0] != f.bound:
            return False
        bound[:1] = [f.bound]
    if isinstance(t, Junction) and isinstance(f, Junction) and len(t.args) != len(f.args):
        return False
    return all(_unify(a, b, bindings, bound) for a, b in zip(children(t), children(f)))
