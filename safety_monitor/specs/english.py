"""Formulas and properties in plain English, for `specs explain` (and anyone reading a spec file).

The renderer walks the parsed formula: a shape that is one of Dwyer's patterns reads as that pattern
(`G(a -> F b)`: "whenever a holds, a frame where b holds must follow"), the rest operator by operator
with negations pushed inward first. Predicate names stay as they are written, so the sentence can be
matched against the spec file; no operator symbol is left in it.
"""

from __future__ import annotations

from safety_monitor.specs.ltlf import (
    Always,
    And,
    Atom,
    BoundedAlways,
    BoundedEventually,
    BoundedUntil,
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
    bound_frames,
    is_propositional,
    negated,
    parse,
)
from safety_monitor.specs.patterns import Pattern, PatternMatch, Scope, recognise


def explain_property(prop, control_rate_hz: float | None = None) -> str:
    """The property, its recovery and its options, each in a sentence or two (one paragraph per part)."""
    rate = prop.control_rate_hz if control_rate_hz is None else control_rate_hz
    lines = [f"{prop.name} ({prop.category}): {describe(parse(prop.formula), rate)}."]
    if prop.recovery:
        lines.append(f"  Recovery: {recovery_sentence(parse(prop.recovery), rate)}")
    else:
        lines.append("  Recovery: none; every violating frame is an episode of its own, closed at once.")
    options = []
    if prop.trigger:
        trigger = parse(prop.trigger)
        options.append(
            "its trigger (the opportunity the metrics count) is the first frame of the trace"
            if trigger == Const(True)
            else f"its triggers (the opportunities the metrics count) are the frames where "
            f"{condition(trigger)} after a frame where it did not"
        )
    frames = prop.min_resolve_frames
    if frames:
        span = f"{frames} frames" + (f" ({prop.min_resolve_s:g} s)" if prop.min_resolve_s is not None else "")
        options.append(f"a violation still open when the trace ends counts only if it lasted {span} or more")
    elif prop.min_resolve_s and rate is None:
        options.append(
            f"a violation still open when the trace ends would count only if it lasted {prop.min_resolve_s:g} s "
            "or more, but no control rate converts that, so every one counts"
        )
    if prop.options.get("close_on_opening_frame"):
        options.append("a recovery that already holds on the frame a violation opens closes it on that frame")
    if options:
        lines.append(f"  Options: {_capital('; '.join(options))}.")
    return "\n".join(lines)


def recovery_sentence(f: Formula, rate: float | None = None) -> str:
    if isinstance(f, Eventually) and is_propositional(f.arg):
        return f"a violation ends at the first frame where {condition(f.arg)}."
    return f"a violation ends at the first frame by which the frames since it opened meet this: {describe(f, rate)}."


def describe(f: Formula, rate: float | None = None) -> str:
    """What f requires of the trace from the current frame on, as one clause."""
    match = recognise(f)
    if match is not None:
        return _pattern(match, rate)
    pushed = _push_not(f)
    if pushed is not f:
        return describe(pushed, rate)
    if is_propositional(f):
        return must(f)
    if isinstance(f, Always):
        body = f.arg
        if isinstance(body, Implies):
            return f"whenever {happens(body.left, rate)}, {describe(body.right, rate)}"
        return f"at every frame, {describe(body, rate)}"
    if isinstance(f, Eventually):
        return f"at some frame before the trace ends, {describe(f.arg, rate)}"
    if isinstance(f, Implies):
        then = "" if is_propositional(f.left) else "then "
        return f"if {happens(f.left, rate)}, {then}{describe(f.right, rate)}"
    if isinstance(f, Or):
        weak = _weak_until(f)
        if weak is not None:
            return f"{_until(weak[0], weak[1], rate)}, or to the end of the trace"
        return "either " + ", or ".join(describe(a, rate) for a in f.args)
    if isinstance(f, And):
        return "both " + ", and ".join(describe(a, rate) for a in f.args)
    if isinstance(f, Until):
        return f"{_until(f.left, f.right, rate)}, which must happen before the trace ends"
    if isinstance(f, Release):
        return (
            f"{_obligation(f.right, rate)} up to and including the first frame where {condition(f.left)} "
            "(or to the end of the trace)"
        )
    if isinstance(f, Next):
        return f"a next frame must exist, and at it {describe(f.arg, rate)}"
    if isinstance(f, WeakNext):
        return f"at the next frame, if there is one, {describe(f.arg, rate)}"
    if isinstance(f, Last):
        return "this must be the last frame"
    if isinstance(f, Equiv):
        return f"{describe(f.left, rate)} exactly when {describe(f.right, rate)}"
    if isinstance(f, BoundedEventually):
        return f"within {_bound(f.bound, rate)}, {describe(f.arg, rate)} (before the trace ends)"
    if isinstance(f, BoundedAlways):
        return f"at this frame and the next {_bound(f.bound, rate)}, as far as the trace goes, {describe(f.arg, rate)}"
    if isinstance(f, BoundedUntil):
        return f"{_until(f.left, f.right, rate)}, within {_bound(f.bound, rate)} and before the trace ends"
    if isinstance(f, Not):  # the negation of an equivalence
        return f"{describe(f.arg, rate)} is not the case"
    raise TypeError(f"not a formula: {f!r}")


def happens(f: Formula, rate: float | None = None) -> str:
    """What f says of the trace from the current frame on, as a statement for an `if` or `whenever` clause
    (`X b`: 'at the next frame b holds'), where `describe`'s obligations ('b must hold') would misread."""
    pushed = _push_not(f)
    if pushed is not f:
        return happens(pushed, rate)
    if is_propositional(f):
        return condition(f)
    if isinstance(f, And):
        return " and ".join(happens(a, rate) for a in f.args)
    if isinstance(f, Or):
        return "either " + " or ".join(happens(a, rate) for a in f.args)
    if isinstance(f, Next):
        return f"at the next frame {happens(f.arg, rate)}"
    if isinstance(f, WeakNext):
        return f"at the next frame, if there is one, {happens(f.arg, rate)}"
    if isinstance(f, Last):
        return "this is the last frame"
    if isinstance(f, Always):
        return f"from this frame on at every frame {happens(f.arg, rate)}"
    if isinstance(f, Eventually):
        return f"at some frame from this frame on {happens(f.arg, rate)}"
    if isinstance(f, BoundedEventually):
        return f"within {_bound(f.bound, rate)} {happens(f.arg, rate)}"
    if isinstance(f, BoundedAlways):
        return f"at that frame and the next {_bound(f.bound, rate)} {happens(f.arg, rate)}"
    if isinstance(f, (Until, BoundedUntil)):
        within = f" within {_bound(f.bound, rate)}" if isinstance(f, BoundedUntil) else ""
        return f"{happens(f.left, rate)} until a frame{within} where {happens(f.right, rate)}"
    if isinstance(f, Release):
        return f"{happens(f.right, rate)} up to and including the first frame where {happens(f.left, rate)}"
    if isinstance(f, Implies):
        return f"{happens(f.right, rate)} if {happens(f.left, rate)}"
    if isinstance(f, Equiv):
        return f"{happens(f.left, rate)} exactly when {happens(f.right, rate)}"
    if isinstance(f, Not):  # the negation of an equivalence or a bounded until
        return f"not ({happens(f.arg, rate)})"
    raise TypeError(f"not a formula: {f!r}")


def condition(f: Formula) -> str:
    """A propositional formula as a clause: 'a holds', 'a is false', 'a holds and b is false'."""
    if isinstance(f, Atom):
        return f"{f.name} holds"
    if isinstance(f, Const):
        return "any frame" if f.value else "no frame"
    if isinstance(f, Not):
        if isinstance(f.arg, Atom):
            return f"{f.arg.name} is false"
        pushed = _push_not(f)
        return condition(pushed) if not isinstance(pushed, Not) else f"not ({condition(f.arg)})"
    if isinstance(f, And):
        return " and ".join(condition(a) for a in f.args)
    if isinstance(f, Or):
        return "either " + " or ".join(condition(a) for a in f.args)
    if isinstance(f, Implies):
        return f"{condition(f.right)} if {condition(f.left)}"
    if isinstance(f, Equiv):
        return f"{condition(f.left)} exactly when {condition(f.right)}"
    raise TypeError(f"not propositional: {f!r}")


def must(f: Formula) -> str:
    """A propositional formula as an obligation: 'a must hold', 'a must be false'."""
    if isinstance(f, Atom):
        return f"{f.name} must hold"
    if isinstance(f, Not) and isinstance(f.arg, Atom):
        return f"{f.arg.name} must be false"
    return f"it must be that {condition(f)}"


def _obligation(f: Formula, rate) -> str:
    return must(f) if is_propositional(f) else describe(f, rate)


def _until(left: Formula, right: Formula, rate) -> str:
    until = f"the first frame where {condition(right)}" if is_propositional(right) else describe(right, rate)
    return f"{_obligation(left, rate)} until {until}"


def _weak_until(f: Or) -> tuple[Formula, Formula] | None:
    """(a, b) for (a U b) | G a."""
    if len(f.args) == 2:
        until = next((a for a in f.args if isinstance(a, Until)), None)
        always = next((a for a in f.args if isinstance(a, Always)), None)
        if until is not None and always is not None and until.left == always.arg:
            return until.left, until.right
    return None


def _bound(bound, rate) -> str:
    if bound.frames is None and rate is not None:
        return f"{bound.seconds} s ({bound_frames(bound.seconds, rate)} frames at {rate:g} Hz)"
    return bound.words()


def _pattern(m: PatternMatch, rate) -> str:
    c = {k: condition(v) for k, v in m.letters.items()}
    within = f" within {_bound(m.bound, rate)}" if m.bound is not None else ""
    body = {
        Pattern.ABSENCE: f"no frame may come where {c['p']}",
        Pattern.EXISTENCE: f"a frame must come where {c['p']}",
        Pattern.UNIVERSALITY: f"{c['p']} at every frame"
        if isinstance(m.letters["p"], Atom)
        else f"at every frame, {c['p']}",
        Pattern.PRECEDENCE: f"no frame where {c['p']} may come before a frame where {c.get('s')}",
        Pattern.RESPONSE: f"whenever {c['p']}, a frame where {c.get('s')} must follow (that frame or a later one)",
        Pattern.BOUNDED_RESPONSE: f"whenever {c['p']}, a frame where {c.get('s')} must follow{within}, counting "
        "from that frame, and before the trace ends",
    }[m.pattern]
    if m.pattern is Pattern.UNIVERSALITY and isinstance(m.letters["p"], Atom):
        body = f"{m.letters['p'].name} must hold at every frame"
    if m.pattern is Pattern.UNIVERSALITY and isinstance(m.letters["p"], Implies):
        body = f"whenever {condition(m.letters['p'].left)}, {must(m.letters['p'].right)}"
    if m.pattern is Pattern.ABSENCE and isinstance(m.letters["p"], Atom):
        body = f"{m.letters['p'].name} must never hold"
    scope = {
        Scope.GLOBAL: "",
        Scope.BEFORE: f"if a frame comes where {c.get('r')}, then before the first one, ",
        Scope.AFTER: f"from the first frame where {c.get('q')} on, ",
        Scope.BETWEEN: f"in each stretch from a frame where {c.get('q')} to the next frame where {c.get('r')} "
        "(a stretch that the trace ends before closing is not checked), ",
        Scope.AFTER_UNTIL: f"in each stretch from a frame where {c.get('q')} up to the next frame where "
        f"{c.get('r')}, or to the end of the trace, ",
    }[m.scope]
    return scope + body


def _push_not(f: Formula) -> Formula:
    """One negation moved inward (the duals of the temporal operators), so sentences say what must hold."""
    if not isinstance(f, Not):
        return f
    if isinstance(f.arg, Not):
        return _push_not(f.arg.arg)
    pushed = negated(f.arg)
    return f if pushed is None else pushed


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
