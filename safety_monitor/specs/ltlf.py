"""LTLf formulas: parse with ltlf2dfa's grammar into a small frozen AST, print, and evaluate directly.

The AST is ours (frozen dataclasses) so classification, CTL lifting and the reference evaluator do
not depend on ltlf2dfa's internal classes; parsing reuses ltlf2dfa's own grammar so that whatever
parses here compiles there. Precedence (tightest first): unary `! X WX G F`, then `R`, `U`, `&`,
`|`, `->`, `<->`; `U` and `R` group to the right, `->` to the left. `G a -> b` is `(G a) -> b`.

On top of that grammar: the bounded operators `F[<=N] f`, `G[<=N] f` and `f U[<=N] g`, with N in
frames or in seconds (`F[<=2.5s] f`, frames once `resolve_bounds` knows the control rate). ltlf2dfa
does not know them; `compile` builds their automata itself (see `progression`).
"""

from __future__ import annotations

import functools
import importlib.util
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Generic, TypeAlias, TypeVar

import numpy as np
from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from safety_monitor.errors import SpecError, ToolMissingError

# what a propositional connective connects: LTLf formulas here, CTL formulas in verify.ctl
F_co = TypeVar("F_co", covariant=True)


@dataclass(frozen=True)
class Atom:
    name: str


@dataclass(frozen=True)
class Const:
    value: bool


@dataclass(frozen=True)
class Last:
    """True exactly at the last position of the trace."""


# Shared shapes of the operators, so that a pass can narrow on the shape (`isinstance(f, Binary)`) and read
# its fields. They hold no state of their own: each operator is still its own frozen dataclass, whose equality
# and hash compare the class itself, so `Next(a) != Always(a)`. The propositional connectives are generic in
# what they connect because CTL (verify.ctl) reuses them over its own formulas.
@dataclass(frozen=True)
class Unary(Generic[F_co]):
    arg: F_co


@dataclass(frozen=True)
class Junction(Generic[F_co]):
    args: tuple[F_co, ...]


@dataclass(frozen=True)
class Binary(Generic[F_co]):
    left: F_co
    right: F_co


@dataclass(frozen=True)
class Not(Unary[F_co]):
    pass


@dataclass(frozen=True)
class And(Junction[F_co]):
    pass


@dataclass(frozen=True)
class Or(Junction[F_co]):
    pass


@dataclass(frozen=True)
class Implies(Binary[F_co]):
    pass


@dataclass(frozen=True)
class Equiv(Binary[F_co]):
    pass


@dataclass(frozen=True)
class Next(Unary["Formula"]):
    """Strong next: a next position exists and `arg` holds there."""


@dataclass(frozen=True)
class WeakNext(Unary["Formula"]):
    """Weak next: at the last position true, otherwise `arg` at the next position."""


@dataclass(frozen=True)
class Until(Binary["Formula"]):
    pass


@dataclass(frozen=True)
class Release(Binary["Formula"]):
    pass


@dataclass(frozen=True)
class Always(Unary["Formula"]):
    pass


@dataclass(frozen=True)
class Eventually(Unary["Formula"]):
    pass


@dataclass(frozen=True)
class Bound:
    """`[<=N]`: the next N frames after the current one (N + 1 positions with it).

    Written in seconds (`[<=2.5s]`), `seconds` keeps the text and `frames` is None until
    `resolve_bounds` converts it at the control rate; `frames` alone is what the automaton uses.
    """

    frames: int | None
    seconds: str | None = None

    def text(self) -> str:
        return f"[<={self.frames}]" if self.frames is not None else f"[<={self.seconds}s]"

    def words(self) -> str:
        """'2.5 s (1250 frames)', '2.5 s' before resolving, '40 frames' when written in frames."""
        frames = "1 frame" if self.frames == 1 else f"{self.frames} frames"
        if self.seconds is None:
            return frames
        return f"{self.seconds} s" + (f" ({frames})" if self.frames is not None else "")


@dataclass(frozen=True)
class BoundedUnary:
    arg: Formula
    bound: Bound


@dataclass(frozen=True)
class BoundedEventually(BoundedUnary):
    """Strong: `arg` holds at one of the next `bound` frames (or now), and before the trace ends."""


@dataclass(frozen=True)
class BoundedAlways(BoundedUnary):
    """Weak: `arg` holds now and at each of the next `bound` frames that the trace still has."""


@dataclass(frozen=True)
class BoundedUntil:
    """Strong: `right` holds within `bound` frames (and before the trace ends), `left` at every frame before."""

    left: Formula
    right: Formula
    bound: Bound


Formula: TypeAlias = (
    Atom
    | Const
    | Last
    | Not["Formula"]
    | And["Formula"]
    | Or["Formula"]
    | Implies["Formula"]
    | Equiv["Formula"]
    | Next
    | WeakNext
    | Until
    | Release
    | Always
    | Eventually
    | BoundedEventually
    | BoundedAlways
    | BoundedUntil
)
BOUNDED = (BoundedEventually, BoundedAlways, BoundedUntil)
# A bounded operator's automaton has about one state per frame of its bound (more when several bounds
# are pending at once); past this a table costs more memory and compile time than a monitor should
MAX_BOUND_FRAMES = 20_000

# The recursive passes (lark's transformer, printing, evaluation, ltlf2dfa's own translation) would
# overflow Python's stack on a few hundred nested operators; `a U a U ... a` nests without parentheses.
MAX_DEPTH = 100


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    """A LALR parser over ltlf2dfa's own grammar file, built without importing ltlf2dfa (and sympy)."""
    spec = importlib.util.find_spec("ltlf2dfa")
    if spec is None or not spec.submodule_search_locations:
        raise ToolMissingError("the Python package ltlf2dfa is not installed (pip install ltlf2dfa)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "parser"
    grammar = (folder / "ltlf.lark").read_text(encoding="utf-8") + _BOUNDED_GRAMMAR
    try:
        return Lark(grammar, parser="lalr", import_paths=[str(folder)], cache=True)
    except OSError:  # lark's cache lives in the temporary folder, and there is none with room (a full disk)
        return Lark(grammar, parser="lalr", import_paths=[str(folder)])


# ltlf2dfa's grammar with the bounded operators added at the precedence of their unbounded forms
_BOUNDED_GRAMMAR = r"""
%override ?ltlf_unaryop: ltlf_always | ltlf_eventually | ltlf_next | ltlf_weak_next | ltlf_not | ltlf_wrapped
    | ltlf_bounded_always | ltlf_bounded_eventually
ltlf_bounded_always: ALWAYS BOUND ltlf_unaryop
ltlf_bounded_eventually: EVENTUALLY BOUND ltlf_unaryop
%override ?ltlf_until: ltlf_release ((UNTIL | UNTIL BOUND) ltlf_release)*
BOUND: /\[[ \t]*<=[ \t]*[0-9]+(\.[0-9]+)?[ \t]*s?[ \t]*\]/
"""
_BOUND_TEXT = re.compile(r"\[\s*<=\s*([0-9]+(?:\.[0-9]+)?)\s*(s?)\s*\]")


def parse(text: str) -> Formula:
    """Parse ltlf2dfa syntax; a SpecError gives line, column and what was expected."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError("empty formula")
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        raise SpecError(_describe_syntax_error(text, exc)) from None
    try:
        formula = _ToAst(text).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, SpecError):
            raise exc.orig_exc from None
        if isinstance(exc.orig_exc, RecursionError):
            raise _too_deep(text) from None
        raise
    except RecursionError:
        raise _too_deep(text) from None
    if _depth(formula) > MAX_DEPTH:
        raise _too_deep(text)
    return formula


def _too_deep(text: str) -> SpecError:
    shown = text if len(text) <= 80 else text[:77] + "..."
    return SpecError(f"formula nested too deeply (more than {MAX_DEPTH} levels): {shown}")


def _depth(f: Formula) -> int:
    """Operator nesting depth, without recursion (the formula may be too deep for it)."""
    deepest, stack = 0, [(f, 1)]
    while stack:
        g, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in children(g))
    return deepest


def ltlf2dfa_formula(text: str):
    """ltlf2dfa's own formula object for `text`, which the compiler hands to MONA (imports sympy)."""
    return _ltlf2dfa_parser()(text)


@functools.lru_cache(maxsize=1)
def _ltlf2dfa_parser():
    from ltlf2dfa.parser.ltlf import LTLfParser

    return LTLfParser()


def unexpected_token(exc: UnexpectedInput) -> Token | None:
    """The token lark's parser stopped at (UnexpectedToken, UnexpectedEOF), None after a lexer error.

    lark sets `token` in an unannotated `__init__`, so its type hints do not declare the attribute.
    """
    token = getattr(exc, "token", None)
    return token if isinstance(token, Token) else None


def _describe_syntax_error(text: str, exc: UnexpectedInput) -> str:
    line, column = getattr(exc, "line", 1), getattr(exc, "column", len(text) + 1)
    token = unexpected_token(exc)
    if isinstance(exc, UnexpectedEOF) or (
        isinstance(exc, UnexpectedToken) and token is not None and token.type == "$END"
    ):
        what, line, column = "unexpected end of formula", 1, len(text) + 1
    elif isinstance(exc, UnexpectedCharacters):
        char = text[exc.pos_in_stream]
        what = f"unexpected character {char!r}"
        rest = text[exc.pos_in_stream :]
        if _dialect_operator(rest):
            what += f" ({_DIALECT[_dialect_operator(rest)]})"
        elif char.isupper() or char in "-.":
            what += f" (predicate names must be lower-case snake_case: [a-z][a-z0-9_]*{_glued_hint(rest)})"
        elif char == "[":  # a bound the BOUND token does not match: negative, an interval, no number
            what += " (a bound is only an upper one, after F, G or U: [<=N] for N frames, N a whole number, or [<=Ns] in seconds)"
    else:
        what = f"unexpected {token!s:.20}"
    pointer = " " * (max(column, 1) - 1) + "^"
    return f"syntax error at line {line}, column {column}: {what}\n    {text}\n    {pointer}"


# operators of other LTL syntaxes (Spot, nuXmv, papers) that language models write, as this one writes them
_DIALECT = {
    "W": "weak until is written (f U g) | G(f) here",
    "M": "strong release is written g U (f & g) here",
    "V": "release is written f R g here",
    "[]": "always is written G here",
    "<>": "eventually is written F here",
}
_GLUED = re.compile(r"((?:WX|[XFG])+)([a-z][a-z0-9_]*)")


def _dialect_operator(rest: str) -> str:
    """The operator of another syntax the text from the unexpected character starts with, or ''."""
    word = re.match(r"\[\]|<>|[A-Z]+\b", rest)
    return word.group() if word and word.group() in _DIALECT else ""


def _glued_hint(rest: str) -> str:
    """`Fb`, `GFb`: operators glued to a predicate (Spot's syntax) need a space here."""
    glued = _GLUED.match(rest)
    if glued is None or re.match(r"[A-Za-z0-9_]", rest[glued.end() :]):
        return ""
    operators = re.findall(r"WX|[XFG]", glued.group(1))
    return f"; if {operators[0]} is an operator, separate it: {' '.join([*operators, glued.group(2)])}"


class _ToAst(Transformer):
    """lark tree of ltlf2dfa's grammar -> our AST, with ltlf2dfa's associativity."""

    def __init__(self, text: str):
        super().__init__()
        self._text = text

    @staticmethod
    def _operands(children) -> list:
        return [c for c in children if not isinstance(c, Token)]

    def start(self, c):
        return c[0]

    def ltlf_symbol(self, c):
        return Atom(str(c[0]))

    def ltlf_true(self, c):
        return Const(True)

    def ltlf_false(self, c):
        return Const(False)

    def ltlf_last(self, c):
        return Last()

    def ltlf_wrapped(self, c):
        return self._operands(c)[0]

    def ltlf_not(self, c):
        return Not(c[-1])

    def ltlf_next(self, c):
        return Next(c[-1])

    def ltlf_weak_next(self, c):
        return WeakNext(c[-1])

    def ltlf_always(self, c):
        return Always(c[-1])

    def ltlf_bounded_always(self, c):
        return BoundedAlways(c[-1], self._bound(c[1]))

    def ltlf_bounded_eventually(self, c):
        return BoundedEventually(c[-1], self._bound(c[1]))

    def _bound(self, token: Token) -> Bound:
        match = _BOUND_TEXT.fullmatch(str(token))
        if match is None:  # the grammar's BOUND terminal only lexes what the pattern matches
            raise SpecError(f"unreadable bound {token}: {self._text}")
        amount, unit = match.groups()
        if unit:
            return Bound(None, amount)
        if "." in amount:
            raise SpecError(
                f"a bound in frames must be a whole number, got {token} (write {amount}s for seconds): {self._text}"
            )
        return checked_bound(int(amount), str(token), self._text)

    def ltlf_eventually(self, c):
        return Eventually(c[-1])

    def ltlf_and(self, c):
        return And(tuple(self._operands(c)))

    def ltlf_or(self, c):
        return Or(tuple(self._operands(c)))

    def ltlf_implication(self, c):
        """a -> b -> c is (a -> b) -> c, as in ltlf2dfa."""
        return functools.reduce(Implies, self._operands(c))

    def ltlf_until(self, c):
        """a U b U c is a U (b U c), as in ltlf2dfa; a BOUND token after a U bounds that U."""
        ops: list[Formula] = []
        bounds: list[Bound | None] = []
        for child in c:
            if isinstance(child, Token) and child.type == "BOUND":
                bounds[-1] = self._bound(child)
            elif isinstance(child, Token):
                bounds.append(None)
            else:
                ops.append(child)
        result = ops[-1]
        for left, bound in zip(reversed(ops[:-1]), reversed(bounds)):
            result = Until(left, result) if bound is None else BoundedUntil(left, result, bound)
        return result

    def ltlf_release(self, c):
        ops = self._operands(c)
        return functools.reduce(lambda r, left: Release(left, r), reversed(ops[:-1]), ops[-1])

    def ltlf_equivalence(self, c):
        ops = self._operands(c)
        if len(ops) != 2:
            raise SpecError(f"chained '<->' is ambiguous, add parentheses: {self._text}")
        return Equiv(*ops)


def atoms_of(f: Formula) -> tuple[str, ...]:
    """The formula's atomic propositions, sorted (the bit order of its TableDFA letters)."""
    found: set[str] = set()

    def walk(g: Formula) -> None:
        if isinstance(g, Atom):
            found.add(g.name)
        for child in children(g):
            walk(child)

    walk(f)
    return tuple(sorted(found))


def children(f: Formula) -> tuple[Formula, ...]:
    if isinstance(f, (Atom, Const, Last)):
        return ()
    if isinstance(f, (And, Or)):
        return f.args
    if isinstance(f, (Implies, Equiv, Until, Release, BoundedUntil)):
        return (f.left, f.right)
    return (f.arg,)


_BINARY_SYMBOL: dict[type[Binary[Formula]], str] = {Implies: "->", Equiv: "<->", Until: "U", Release: "R"}
_UNARY_SYMBOL: dict[type[Unary[Formula]], str] = {Not: "!", Next: "X", WeakNext: "WX", Always: "G", Eventually: "F"}


def to_text(f: Formula) -> str:
    """Canonical, fully parenthesised ltlf2dfa syntax (also the compile-cache key)."""
    if isinstance(f, Atom):
        return f.name
    if isinstance(f, Const):
        return "true" if f.value else "false"
    if isinstance(f, Last):
        return "last"
    if isinstance(f, And):
        return "(" + " & ".join(to_text(a) for a in f.args) + ")"
    if isinstance(f, Or):
        return "(" + " | ".join(to_text(a) for a in f.args) + ")"
    if isinstance(f, Binary):
        return f"({to_text(f.left)} {_BINARY_SYMBOL[type(f)]} {to_text(f.right)})"
    if isinstance(f, BoundedUntil):
        return f"({to_text(f.left)} U{f.bound.text()} {to_text(f.right)})"
    if isinstance(f, BoundedEventually):
        return f"F{f.bound.text()}({to_text(f.arg)})"
    if isinstance(f, BoundedAlways):
        return f"G{f.bound.text()}({to_text(f.arg)})"
    if isinstance(f, Unary):
        return f"{_UNARY_SYMBOL[type(f)]}({to_text(f.arg)})"
    raise TypeError(f"not a formula: {f!r}")


def checked_bound(frames: int, written: str, text: str) -> Bound:
    if frames > MAX_BOUND_FRAMES:
        raise SpecError(
            f"bound {written} is {frames} frames, more than the {MAX_BOUND_FRAMES} a table supports (it "
            f"needs about one state per frame of a bound): {text}"
        )
    return Bound(frames)


def has_bounds(f: Formula) -> bool:
    return isinstance(f, BOUNDED) or any(has_bounds(c) for c in children(f))


def seconds_bounds(f: Formula) -> tuple[Bound, ...]:
    """The bounds written in seconds, in the order they appear (for showing their conversion)."""
    own = (f.bound,) if isinstance(f, BOUNDED) and f.bound.frames is None else ()
    return own + tuple(b for c in children(f) for b in seconds_bounds(c))


def bound_frames(seconds: str, control_rate_hz: float) -> int:
    """Frames a bound in seconds spans: ceil(seconds x rate), exact on the decimal text (0.1 s at 30 Hz is 3)."""
    return math.ceil(Fraction(seconds) * Fraction(repr(float(control_rate_hz))))


def resolve_bounds(f: Formula, control_rate_hz: float | None) -> Formula:
    """`f` with every bound in seconds turned into frames at the control rate."""
    if isinstance(f, BOUNDED) and f.bound.frames is None and f.bound.seconds is not None:
        written = f.bound.text()
        if control_rate_hz is None:
            raise SpecError(
                f"bound {written} is in seconds but no control rate is known: give control_rate_hz in "
                "the spec file, or the rate of the monitor (specs check --rate HZ)"
            )
        if not (math.isfinite(control_rate_hz) and control_rate_hz > 0):
            raise SpecError(f"control rate must be a positive number of Hz, got {control_rate_hz!r}")
        frames = bound_frames(f.bound.seconds, control_rate_hz)
        bound = checked_bound(frames, f"{written} at {control_rate_hz:g} Hz", to_text(f))
        f = _with_bound(f, Bound(bound.frames, f.bound.seconds))
    if not has_bounds(f):
        return f
    return _rebuild(f, tuple(resolve_bounds(c, control_rate_hz) for c in children(f)))


def _with_bound(f: BoundedEventually | BoundedAlways | BoundedUntil, bound: Bound) -> Formula:
    return BoundedUntil(f.left, f.right, bound) if isinstance(f, BoundedUntil) else type(f)(f.arg, bound)


def _rebuild(f: Formula, kids: tuple[Formula, ...]) -> Formula:
    """`f`'s operator over new children."""
    if isinstance(f, Junction):
        return type(f)(kids)
    if isinstance(f, BoundedUntil):
        return BoundedUntil(kids[0], kids[1], f.bound)
    if isinstance(f, BoundedUnary):
        return type(f)(kids[0], f.bound)
    if isinstance(f, Binary):
        return type(f)(kids[0], kids[1])
    if isinstance(f, Unary):
        return type(f)(kids[0])
    return f  # atoms, constants and `last` have no children


def is_propositional(f: Formula) -> bool:
    """No temporal operator (and no `last`): its value depends on the current frame only."""
    if isinstance(f, (Next, WeakNext, Until, Release, Always, Eventually, Last, *BOUNDED)):
        return False
    return all(is_propositional(c) for c in children(f))


def evaluate(f: Formula, trace: Sequence[Mapping[str, bool]], i: int = 0) -> bool:
    """Reference LTLf semantics on a non-empty finite trace at position i (direct recursion).

    Deliberately naive: it is the oracle the compiled DFAs are tested against.
    """
    n = len(trace)
    if isinstance(f, Atom):
        return bool(trace[i][f.name])
    if isinstance(f, Const):
        return f.value
    if isinstance(f, Last):
        return i == n - 1
    if isinstance(f, Not):
        return not evaluate(f.arg, trace, i)
    if isinstance(f, And):
        return all(evaluate(a, trace, i) for a in f.args)
    if isinstance(f, Or):
        return any(evaluate(a, trace, i) for a in f.args)
    if isinstance(f, Implies):
        return (not evaluate(f.left, trace, i)) or evaluate(f.right, trace, i)
    if isinstance(f, Equiv):
        return evaluate(f.left, trace, i) == evaluate(f.right, trace, i)
    if isinstance(f, Next):
        return i + 1 < n and evaluate(f.arg, trace, i + 1)
    if isinstance(f, WeakNext):
        return i + 1 >= n or evaluate(f.arg, trace, i + 1)
    if isinstance(f, Always):
        return all(evaluate(f.arg, trace, j) for j in range(i, n))
    if isinstance(f, Eventually):
        return any(evaluate(f.arg, trace, j) for j in range(i, n))
    if isinstance(f, Until):
        return any(
            evaluate(f.right, trace, k) and all(evaluate(f.left, trace, j) for j in range(i, k)) for k in range(i, n)
        )
    if isinstance(f, BOUNDED):
        if f.bound.frames is None:
            raise SpecError(f"bound {f.bound.text()} is in seconds: resolve_bounds first")
        window = range(i, min(i + f.bound.frames, n - 1) + 1)  # the positions within the bound that exist
        if isinstance(f, BoundedEventually):
            return any(evaluate(f.arg, trace, k) for k in window)
        if isinstance(f, BoundedAlways):
            return all(evaluate(f.arg, trace, k) for k in window)
        return any(evaluate(f.right, trace, k) and all(evaluate(f.left, trace, j) for j in range(i, k)) for k in window)
    if isinstance(f, Release):  # dual of until: not (!left U !right)
        return not any(
            (not evaluate(f.right, trace, k)) and all(not evaluate(f.left, trace, j) for j in range(i, k))
            for k in range(i, n)
        )
    raise TypeError(f"not a formula: {f!r}")


def truth_table(f: Formula, atoms: Sequence[str]) -> np.ndarray:
    """Value of a propositional formula for every letter over `atoms` (bit i = atoms[i])."""
    if not is_propositional(f):
        raise SpecError(f"expected a propositional formula (no temporal operators): {to_text(f)}")
    missing = set(atoms_of(f)) - set(atoms)
    if missing:
        raise SpecError(f"atoms {sorted(missing)} are not among {list(atoms)}")
    out = np.zeros(1 << len(atoms), dtype=bool)
    for letter in range(out.size):
        valuation = {a: bool(letter >> i & 1) for i, a in enumerate(atoms)}
        out[letter] = evaluate(f, [valuation])
    return out


def negated(f: Formula) -> Formula | None:
    """The formula equivalent to `!f` with the negation moved one level inward (the duals of the connectives
    and temporal operators, finite-trace readings: `!X f = WX !f`, `!last = X true`); None where `f` has no
    dual to move into (an atom, `<->`, a bounded until)."""
    if isinstance(f, Not):
        return f.arg
    if isinstance(f, And):
        return Or(tuple(Not(a) for a in f.args))
    if isinstance(f, Or):
        return And(tuple(Not(a) for a in f.args))
    if isinstance(f, Implies):
        return And((f.left, Not(f.right)))
    if isinstance(f, Always):
        return Eventually(Not(f.arg))
    if isinstance(f, Eventually):
        return Always(Not(f.arg))
    if isinstance(f, Until):
        return Release(Not(f.left), Not(f.right))
    if isinstance(f, Release):
        return Until(Not(f.left), Not(f.right))
    if isinstance(f, Next):
        return WeakNext(Not(f.arg))
    if isinstance(f, WeakNext):
        return Next(Not(f.arg))
    if isinstance(f, BoundedEventually):
        return BoundedAlways(Not(f.arg), f.bound)
    if isinstance(f, BoundedAlways):
        return BoundedEventually(Not(f.arg), f.bound)
    if isinstance(f, Const):
        return Const(not f.value)
    if isinstance(f, Last):
        return Next(Const(True))
    return None
