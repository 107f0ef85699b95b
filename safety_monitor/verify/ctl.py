"""CTL formulas: a small frozen AST, a lark grammar of our own, and printing.

Boolean connectives and atoms reuse the LTLf AST classes (`Atom`, `Const`, `Not`, `And`, `Or`,
`Implies`, `Equiv`) so a lifted LTLf property keeps its propositional parts unchanged; the path
quantifiers are the classes below. Syntax (tightest first): `! AX EX AF EF AG EG` (prefix),
`A[f U g]`, `E[f U g]`, `A[f W g]`, `E[f W g]` (W: weak until), then `&`, `|`, `->`, `<->`.
`->` and `<->` do not chain without parentheses. Atoms are lower-case snake_case, as in spec files.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TypeAlias

from lark import Lark, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from safety_monitor.errors import SpecError
from safety_monitor.specs.ltlf import And, Atom, Binary, Const, Equiv, Implies, Not, Or, Unary, unexpected_token


@dataclass(frozen=True)
class EX(Unary["CTLFormula"]):
    """Some successor satisfies `arg` (false at a leaf)."""


@dataclass(frozen=True)
class AX(Unary["CTLFormula"]):
    """Every successor satisfies `arg` (true at a leaf: the weak dual of EX)."""


@dataclass(frozen=True)
class EF(Unary["CTLFormula"]):
    pass


@dataclass(frozen=True)
class AF(Unary["CTLFormula"]):
    pass


@dataclass(frozen=True)
class EG(Unary["CTLFormula"]):
    pass


@dataclass(frozen=True)
class AG(Unary["CTLFormula"]):
    pass


@dataclass(frozen=True)
class EU(Binary["CTLFormula"]):
    pass


@dataclass(frozen=True)
class AU(Binary["CTLFormula"]):
    pass


@dataclass(frozen=True)
class EW(Binary["CTLFormula"]):
    """Weak until on some path: E[l U r] or EG l."""


@dataclass(frozen=True)
class AW(Binary["CTLFormula"]):
    """Weak until on every path: A[l U r] or G l, path by path."""


CTLFormula: TypeAlias = (
    Atom
    | Const
    | Not["CTLFormula"]
    | And["CTLFormula"]
    | Or["CTLFormula"]
    | Implies["CTLFormula"]
    | Equiv["CTLFormula"]
    | EX
    | AX
    | EF
    | AF
    | EG
    | AG
    | EU
    | AU
    | EW
    | AW
)

_UNARY: dict[str, type[Unary[CTLFormula]]] = {"AX": AX, "EX": EX, "AF": AF, "EF": EF, "AG": AG, "EG": EG}
_BINARY: dict[tuple[str, str], type[Binary[CTLFormula]]] = {
    ("A", "U"): AU,
    ("E", "U"): EU,
    ("A", "W"): AW,
    ("E", "W"): EW,
}

_GRAMMAR = r"""
?start: iff
?iff: implies | implies "<->" implies -> iff
?implies: disj | disj "->" disj -> implies
?disj: conj ("|" conj)*
?conj: unary ("&" unary)*
?unary: "!" unary -> neg
      | UNARY_OP unary -> unary_op
      | PATH "[" iff UNTIL iff "]" -> until
      | primary
?primary: "true" -> true
        | "false" -> false
        | ATOM -> atom
        | "(" iff ")"
UNARY_OP.2: "AX" | "EX" | "AF" | "EF" | "AG" | "EG"
PATH: "A" | "E"
UNTIL: "U" | "W"
ATOM: /[a-z][a-z0-9_]*/
%import common.WS
%ignore WS
"""


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(_GRAMMAR, parser="lalr")


class _ToAst(Transformer):
    def disj(self, c):
        return Or(tuple(c))

    def conj(self, c):
        return And(tuple(c))

    def iff(self, c):
        return Equiv(c[0], c[1])

    def implies(self, c):
        return Implies(c[0], c[1])

    def neg(self, c):
        return Not(c[0])

    def unary_op(self, c):
        return _UNARY[str(c[0])](c[1])

    def until(self, c):
        return _BINARY[(str(c[0]), str(c[2]))](c[1], c[3])

    def true(self, c):
        return Const(True)

    def false(self, c):
        return Const(False)

    def atom(self, c):
        return Atom(str(c[0]))


def parse_ctl(text: str) -> CTLFormula:
    """Parse CTL text; a SpecError points at the offending column and says what is likely wrong."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError("empty CTL formula")
    try:
        return _ToAst().transform(_parser().parse(text))
    except UnexpectedInput as exc:
        token = unexpected_token(exc)
        if isinstance(exc, UnexpectedEOF) or (
            isinstance(exc, UnexpectedToken) and token is not None and token.type == "$END"
        ):
            what, column = "unexpected end of formula", len(text) + 1
        elif isinstance(exc, UnexpectedCharacters):
            what, column = f"unexpected character {text[exc.pos_in_stream]!r}", exc.column
        else:
            what, column = f"unexpected {str(token)!r}", exc.column
        hints = "; ".join(h for h in (_operator_hint(text, exc, column), _bracket_hint(text)) if h)
        hint = f" ({hints})" if hints else ""
        raise SpecError(
            f"CTL syntax error at column {column}: {what}{hint}\n    {text}\n    {' ' * (column - 1)}^"
        ) from None


# LTL operators users write out of habit: what this CTL syntax has instead
_LTL_ONLY = {"F": "AF or EF", "G": "AG or EG", "X": "AX or EX", "WX": "AX", "R": "A[g W (f & g)] for f R g"}


def _operator_hint(text: str, exc: UnexpectedInput, column: int) -> str:
    """Why the token at `column` does not fit: an LTL operator, an unbracketed until, a chained `->`."""
    word = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[column - 1 :])
    if word and word.group() in _LTL_ONLY:
        return f"LTL's {word.group()} is not a CTL operator: use {_LTL_ONLY[word.group()]}"
    token = unexpected_token(exc)
    if isinstance(exc, UnexpectedToken) and token is not None and token.type == "UNTIL":
        return f"'{token}' needs a path quantifier and brackets: A[f {token} g] or E[f {token} g]"
    if isinstance(exc, UnexpectedToken) and str(token) in ("->", "<->"):
        return "'->' and '<->' need parentheses to chain"
    if isinstance(exc, UnexpectedCharacters) and word and not word.group().islower():
        return "atoms are lower-case snake_case; the operators are AX EX AF EF AG EG and A[f U g], E[f U g] (or W)"
    return ""


def _bracket_hint(text: str) -> str:
    """The first bracket without its partner, if any."""
    pairs = {")": "(", "]": "["}
    open_: list[tuple[str, int]] = []
    for column, ch in enumerate(text, 1):
        if ch in "([":
            open_.append((ch, column))
        elif ch in pairs:
            if not open_ or open_[-1][0] != pairs[ch]:
                return f"{ch!r} at column {column} has no matching {pairs[ch]!r}"
            open_.pop()
    if open_:
        ch, column = open_[-1]
        return f"missing {')' if ch == '(' else ']'!r} for the {ch!r} at column {column}"
    return ""


def ctl_children(f: CTLFormula) -> tuple[CTLFormula, ...]:
    if isinstance(f, (Atom, Const)):
        return ()
    if isinstance(f, (And, Or)):
        return f.args
    if isinstance(f, (Implies, Equiv, EU, AU, EW, AW)):
        return (f.left, f.right)
    if isinstance(f, (Not, EX, AX, EF, AF, EG, AG)):
        return (f.arg,)
    raise TypeError(f"not a CTL formula: {f!r}")


def ctl_atoms(f: CTLFormula) -> tuple[str, ...]:
    """Atoms of the formula, sorted."""
    found: set[str] = set()
    stack = [f]
    while stack:
        g = stack.pop()
        if isinstance(g, Atom):
            found.add(g.name)
        stack.extend(ctl_children(g))
    return tuple(sorted(found))


def is_state_propositional(f: CTLFormula) -> bool:
    """No path quantifier: the value at a node depends on that node's predicates only."""
    return not isinstance(f, (EX, AX, EF, AF, EG, AG, EU, AU, EW, AW)) and all(
        is_state_propositional(c) for c in ctl_children(f)
    )


def existential_parts(f: CTLFormula) -> tuple[CTLFormula, ...]:
    """The largest subformulas whose path quantifier is existential once negations are pushed in
    (an E operator, or an A operator under a negation; either under `<->`, which takes both signs).

    Read along one path these would range over that path alone, where the tree has other branches.
    """
    found: list[CTLFormula] = []

    def visit(g: CTLFormula, sign: bool | None) -> None:  # None: both signs
        if (isinstance(g, (EX, EF, EG, EU, EW)) and sign is not False) or (
            isinstance(g, (AX, AF, AG, AU, AW)) and sign is not True
        ):
            if g not in found:
                found.append(g)
        elif isinstance(g, Not):
            visit(g.arg, None if sign is None else not sign)
        elif isinstance(g, Implies):
            visit(g.left, None if sign is None else not sign)
            visit(g.right, sign)
        elif isinstance(g, Equiv):
            visit(g.left, None)
            visit(g.right, None)
        else:
            for c in ctl_children(g):
                visit(c, sign)

    visit(f, True)
    return tuple(found)


def ctl_text(f: CTLFormula) -> str:
    """Fully parenthesised text that `parse_ctl` reads back to the same formula."""
    if isinstance(f, Atom):
        return f.name
    if isinstance(f, Const):
        return "true" if f.value else "false"
    if isinstance(f, Not):
        return f"!{ctl_text(f.arg)}"
    if isinstance(f, And):
        return "(" + " & ".join(ctl_text(a) for a in f.args) + ")"
    if isinstance(f, Or):
        return "(" + " | ".join(ctl_text(a) for a in f.args) + ")"
    if isinstance(f, Implies):
        return f"({ctl_text(f.left)} -> {ctl_text(f.right)})"
    if isinstance(f, Equiv):
        return f"({ctl_text(f.left)} <-> {ctl_text(f.right)})"
    for (path, until), cls in _BINARY.items():
        if isinstance(f, cls):
            return f"{path}[{ctl_text(f.left)} {until} {ctl_text(f.right)}]"
    for name, quantifier in _UNARY.items():
        if isinstance(f, quantifier):
            inner = ctl_text(f.arg)
            return f"{name}{inner}" if isinstance(f.arg, (And, Or, Implies, Equiv)) else f"{name}({inner})"
    raise TypeError(f"not a CTL formula: {f!r}")
