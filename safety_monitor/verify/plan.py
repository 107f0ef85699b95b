"""Plan level: check a symbolic plan against the spec file before anything runs.

A plan file (YAML) gives an `initial` valuation and either `plan`, a list of action names, or
`milestones`, a list of partial valuations (sub-goals); `actions` is the action model, each with a
precondition `pre` (propositional formula text, or a mapping predicate -> value) and effects `eff`
(mapping predicate -> value); `goal` (propositional, optional) is checked on the last state.

The plan's states are step 0 = `initial` (predicates it does not list are false), then one state per
action (its effects applied) or per milestone. Executability: an action plan is executable when every
precondition holds where it is applied (effects are applied regardless, so later steps are still
checked). A milestone plan with an action model is executable when breadth-first search finds, from
each milestone's state, the fewest actions reaching a state that agrees with the next milestone; that
state (the actions' effects, e.g. grasping closes the gripper) is the milestone's state, and the states
the actions pass through on the way are steps of the plan too: the robot passes through them, so
the properties are checked on them. Among the shortest refinements the search prefers one that leaves
every checked property satisfiable (it steps their DFAs along). Without an action model, or after an
unreachable milestone, a milestone's state is the previous state with the milestone's values set. Each
property runs on the plan's states with its LTLf DFA (finite-trace semantics) and is checked only when
the plan gives every predicate it reads a value somewhere; otherwise it is reported as unchecked.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safety_monitor.errors import SpecError
from safety_monitor.files import load_yaml
from safety_monitor.specs.ltlf import Formula, atoms_of, evaluate, is_propositional, parse, to_text
from safety_monitor.verify.feedback import PLAN, Counterexample, FrameValues

MAX_SEARCH_STATES = 200_000
_KEYS = {"initial", "actions", "plan", "milestones", "goal"}


@dataclass(frozen=True)
class Action:
    name: str
    pre: Formula | None
    eff: dict[str, bool]


@dataclass(frozen=True)
class Plan:
    path: str
    initial: dict[str, bool]
    actions: dict[str, Action]
    steps: tuple[str | dict[str, bool], ...]  # action names, or milestone valuations
    goal: Formula | None

    @property
    def is_milestones(self) -> bool:
        return bool(self.steps) and isinstance(self.steps[0], dict)

    @property
    def predicates(self) -> set[str]:
        """Every predicate the plan gives a value or reads."""
        names = set(self.initial)
        for a in self.actions.values():
            names |= set(a.eff) | (set(atoms_of(a.pre)) if a.pre is not None else set())
        for s in self.steps:
            if isinstance(s, dict):
                names |= set(s)
        if self.goal is not None:  # read on the last state, where a predicate nothing sets is false as anywhere
            names |= set(atoms_of(self.goal))
        return names


@dataclass(frozen=True)
class PlanReport:
    plan: str
    # one per state: "initial", "after <action>", "milestone <k>", and in a refined milestone plan
    # "after <action> on the way to milestone <k>", "after <action> at milestone <k>"
    labels: tuple[str, ...]
    states: tuple[dict[str, bool], ...]
    executable: bool | None  # None: a milestone plan without action model
    executability: tuple[str, ...]  # what was found, one line per step or problem
    refinement: tuple[tuple[str, ...], ...]  # milestone plans: the actions found for each milestone
    goal_reached: bool | None
    violations: tuple[Counterexample, ...]
    checked: tuple[str, ...]
    unchecked: tuple[tuple[str, str], ...] = field(default=())  # (property, reason)
    milestone_steps: tuple[int, ...] = ()  # milestone plans: the step of each milestone's state
    unsafe_refinements: tuple[int, ...] = ()  # milestones whose every shortest refinement breaks a property

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "executable": self.executable,
            "executability": list(self.executability),
            "refinement": [list(r) for r in self.refinement],
            "goal_reached": self.goal_reached,
            "checked": list(self.checked),
            "unchecked": [{"property": p, "reason": r} for p, r in self.unchecked],
            "milestone_steps": list(self.milestone_steps),
            "unsafe_refinements": list(self.unsafe_refinements),
            "violations": [v.to_json() for v in self.violations],
            "steps": [
                {"step": i, "label": lab, "state": s} for i, (lab, s) in enumerate(zip(self.labels, self.states))
            ],
        }


def load_plan(path: str | Path) -> Plan:
    return parse_plan(load_yaml(path, "plan", SpecError), str(path))


def parse_plan(doc: Any, source: str) -> Plan:
    if not isinstance(doc, dict):
        raise SpecError(f"{source}: expected a mapping with 'initial' and 'plan' or 'milestones'")
    unknown = sorted(map(str, set(doc) - _KEYS))  # YAML keys may be numbers, booleans or null
    if unknown:
        raise SpecError(f"{source}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_KEYS))})")
    if ("plan" in doc) == ("milestones" in doc):
        raise SpecError(f"{source}: give exactly one of 'plan' (action names) and 'milestones' (valuations)")
    initial = _valuation(doc.get("initial") or {}, f"{source}: initial")
    actions = {}
    raw_actions = doc.get("actions") or {}
    if not isinstance(raw_actions, dict):
        raise SpecError(f"{source}: 'actions' must map action names to {{pre, eff}}")
    for name, body in raw_actions.items():
        where = f"{source}: action {name!r}"
        if not isinstance(body, dict) or set(body) - {"pre", "eff"}:
            raise SpecError(f"{where}: expected a mapping with 'pre' and 'eff'")
        actions[str(name)] = Action(
            str(name), _condition(body.get("pre"), where), _valuation(body.get("eff") or {}, f"{where}: eff")
        )
    if "plan" in doc:
        steps = doc["plan"]
        if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
            raise SpecError(f"{source}: 'plan' must be a list of action names")
        undefined = [s for s in steps if s not in actions]
        if undefined:
            raise SpecError(f"{source}: plan uses undefined action(s): {', '.join(dict.fromkeys(undefined))}")
    else:
        raw = doc["milestones"]
        if not isinstance(raw, list):
            raise SpecError(f"{source}: 'milestones' must be a list of valuations")
        steps = [_valuation(m, f"{source}: milestone {i + 1}") for i, m in enumerate(raw)]
    goal = _condition(doc.get("goal"), f"{source}: goal")
    return Plan(source, initial, actions, tuple(steps), goal)


def _valuation(raw: Any, where: str) -> dict[str, bool]:
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, bool) for k, v in raw.items()):
        raise SpecError(f"{where}: expected a mapping predicate -> true/false, got {raw!r:.80}")
    return dict(raw)


def _condition(raw: Any, where: str) -> Formula | None:
    if raw is None:
        return None
    if isinstance(raw, dict):
        raw = " & ".join(k if v else f"!{k}" for k, v in _valuation(raw, where).items()) or "true"
    if not isinstance(raw, str):
        raise SpecError(f"{where}: expected a propositional formula or a mapping predicate -> value")
    try:
        f = parse(raw)
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None
    if not is_propositional(f):
        raise SpecError(f"{where}: must be propositional (no temporal operators): {raw}")
    return f


def check_plan(plan: Plan, compiled: Sequence) -> PlanReport:
    """Check a plan against compiled properties (`spec.model.CompiledProperty`)."""
    known = plan.predicates
    checked = [c for c in compiled if all(a in known for a in c.main.atoms)]
    dfas = [_Dfa(c.main.atoms, c.main.table.tolist(), c.main.rejecting_sink.tolist()) for c in checked]
    state = {p: False for p in known} | plan.initial
    states, labels = [dict(state)], ["initial"]
    qs = _step(dfas, tuple(c.main.initial for c in checked), _letters(dfas, state))
    lines: list[str] = []
    refinement: list[tuple[str, ...]] = []
    milestone_steps: list[int] = []
    unsafe: list[int] = []
    executable: bool | None = True
    for i, step in enumerate(plan.steps, 1):
        if isinstance(step, dict):
            found = _search(plan.actions, state, step, dfas, qs) if plan.actions and executable else None
            label = f"milestone {i}"
            if found is not None:
                path, safe = found
                refinement.append(tuple(path))
                line = f"milestone {i}: reached by {', '.join(path) or 'no action (already holds)'}"
                if not safe and _safe(dfas, qs):
                    unsafe.append(i)
                    line += " (each of the shortest refinements breaks a property)"
                lines.append(line)
                for name in path[:-1]:  # the states on the way are steps of the plan
                    state = state | plan.actions[name].eff
                    qs = _step(dfas, qs, _letters(dfas, state))
                    states.append(dict(state))
                    labels.append(f"after {name} on the way to milestone {i}")
                if path:
                    state = state | plan.actions[path[-1]].eff
                    label = f"after {path[-1]} at milestone {i}"
            elif plan.actions and executable:
                executable = False
                lines.append(
                    f"milestone {i} {_values_text(step)}: unreachable from step {len(states) - 1} "
                    f"({labels[-1]}) with the actions given"
                )
            state = state | step
            labels.append(label)
            milestone_steps.append(len(states))
        else:
            action = plan.actions[step]
            if action.pre is not None and not evaluate(action.pre, [state]):
                if executable:
                    unmet = {a: state[a] for a in atoms_of(action.pre)}
                    lines.append(f"step {i} ({step}): precondition {to_text(action.pre)} fails ({_values_text(unmet)})")
                executable = False
            state = state | action.eff
            labels.append(f"after {step}")
        qs = _step(dfas, qs, _letters(dfas, state))
        states.append(dict(state))
    if not plan.is_milestones and executable:
        lines.append(f"all {len(plan.steps)} preconditions hold")
    if plan.is_milestones and not plan.actions:
        executable = None
    goal = None if plan.goal is None else evaluate(plan.goal, [state])
    violations = [cx for c in checked if (cx := _violation(c, states, labels, plan.path)) is not None]
    unchecked = []
    for c in compiled:
        missing = [a for a in c.main.atoms if a not in known]
        if missing:
            unchecked.append((c.prop.name, f"the plan gives no value to {', '.join(missing)}"))
    return PlanReport(
        plan.path,
        tuple(labels),
        tuple(states),
        executable,
        tuple(lines),
        tuple(refinement),
        goal,
        tuple(violations),
        tuple(c.prop.name for c in checked),
        tuple(unchecked),
        tuple(milestone_steps),
        tuple(unsafe),
    )


@dataclass(frozen=True)
class _Dfa:
    """A property's DFA as Python lists: the refinement search steps every DFA on every node it visits,
    and a list is indexed faster than a numpy array one element at a time."""

    atoms: tuple[str, ...]
    table: list[list[int]]
    sink: list[bool]  # rejecting sink: the property can no longer be satisfied


def _letters(dfas: Sequence[_Dfa], state: Mapping[str, bool]) -> tuple[int, ...]:
    """The state's letter in each DFA."""
    return tuple(sum(1 << i for i, a in enumerate(d.atoms) if state[a]) for d in dfas)


def _step(dfas: Sequence[_Dfa], qs: tuple[int, ...], letters: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d.table[q][x] for d, q, x in zip(dfas, qs, letters))


def _safe(dfas: Sequence[_Dfa], qs: tuple[int, ...]) -> bool:
    """No property is unsatisfiable yet (none of the DFAs is in its rejecting sink)."""
    return not any(d.sink[q] for d, q in zip(dfas, qs))


def _violation(c, states: list[dict[str, bool]], labels: list[str], source: str) -> Counterexample | None:
    """Run the property's DFA on the plan's states; the first step that makes it unsatisfiable, or the
    end when the plan stops before the property is satisfied (then also since which step it has been
    owed and the fewest further steps that would satisfy it, so a planner knows what to append)."""
    dfa = c.main
    q = dfa.initial
    satisfied = -1  # the last step at which the plan so far satisfied the property
    for k, s in enumerate(states):
        before, letter = q, dfa.letter(s)
        q = int(dfa.table[q, letter])
        if dfa.rejecting_sink[q]:
            decisive = _flips(dfa, before, letter, lambda r: not dfa.rejecting_sink[r])
            why = f"the values {_at(labels[k])} leave `{c.prop.formula}` impossible to satisfy"
            return _plan_cx(c, states, k, decisive, why, source)
        if dfa.accepting[q]:
            satisfied = k
    if dfa.accepting[q]:
        return None
    decisive = _flips(dfa, before, letter, lambda r: dfa.accepting[r])
    since = satisfied + 1
    why = f"the plan ends ({labels[-1]}) before `{c.prop.formula}` is satisfied, pending since step {since}"
    if since < len(states) - 1:
        why += f" ({labels[since]})"
    owed = f"{_continuation(dfa, q, letter)} would satisfy it"
    return _plan_cx(c, states, len(states) - 1, decisive, why, source, owed)


def _continuation(dfa, state: int, letter: int) -> str:
    """The fewest further steps from `state` to acceptance, each changing as few of the property's
    predicates as it can from the step before, in words ("one more step with b=true")."""
    letters = range(1 << len(dfa.atoms))
    start = (state, letter)
    parent: dict[tuple[int, int], tuple[int, int] | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for x in sorted(letters, key=lambda x: (bin(x ^ node[1]).count("1"), x)):
            child = (int(dfa.table[node[0], x]), x)
            if child in parent:
                continue
            parent[child] = node
            if dfa.accepting[child[0]]:
                path = []
                at: tuple[int, int] | None = child
                while at is not None and at != start:
                    path.append(at[1])
                    at = parent[at]
                return _steps_text(dfa.atoms, letter, path[::-1])
            queue.append(child)
    raise AssertionError("a state outside the rejecting sink reaches acceptance")


def _steps_text(atoms: tuple[str, ...], last: int, path: list[int]) -> str:
    changes = []
    for x in path:
        changed = {a: bool(x >> i & 1) for i, a in enumerate(atoms) if (x ^ last) >> i & 1}
        changes.append(_values_text(changed) if changed else "the same values")
        last = x
    if len(changes) == 1:
        return f"one more step with {changes[0]}"
    return f"{len(changes)} more steps ({', then '.join(changes)})"


def _at(label: str) -> str:
    """A state's label as a place in a sentence: "in the initial state", "after wash", "at milestone 2"."""
    if label == "initial":
        return "in the initial state"
    return label if label.startswith("after ") else f"at {label}"


def _flips(dfa, state: int, letter: int, good) -> tuple[str, ...]:
    """Atoms whose flip alone on this step would have given a good next state."""
    return tuple(a for i, a in enumerate(dfa.atoms) if good(int(dfa.table[state, letter ^ (1 << i)])))


def _plan_cx(c, states, k: int, decisive: tuple[str, ...], why: str, source: str, owed: str = "") -> Counterexample:
    atoms = c.main.atoms
    frames = tuple(
        FrameValues(i, {a: s[a] for a in atoms}, decisive if i == k else ()) for i, s in enumerate(states[: k + 1])
    )
    values = _values_text({a: states[k][a] for a in atoms})
    flip = f"; flipping {' or '.join(decisive)} there would have avoided it" if decisive else ""
    if owed:
        flip += f"{', and ' if decisive else '; '}{owed}"
    sentence = f"{c.prop.name} is violated at step {k} of {source} ({values}): {why}{flip}."
    return Counterexample(c.prop.name, c.prop.category, PLAN, c.prop.formula, frames, sentence, (source,))


def _search(
    actions: Mapping[str, Action],
    start: dict[str, bool],
    target: dict[str, bool],
    dfas: Sequence[_Dfa],
    qs: tuple[int, ...],
) -> tuple[list[str], bool] | None:
    """Breadth-first search for the fewest actions reaching `target`'s values, and whether they keep
    every property satisfiable. A search state is (valuation, the properties' DFA states), so a
    refinement that breaks no property is found among those of the shortest length when there is one,
    in the order the actions are listed; otherwise the first one of that length."""
    names = sorted(start)
    key = lambda s: tuple(s[n] for n in names)  # noqa: E731
    reached = lambda s: all(s.get(k) == v for k, v in target.items())  # noqa: E731
    if reached(start):
        return [], _safe(dfas, qs)
    root = (key(start), qs)
    parents: dict[tuple, tuple[tuple, str] | None] = {root: None}
    letters: dict[tuple, tuple[int, ...]] = {}  # per valuation: most of the search's steps revisit one
    layer = [(start, root)]
    while layer:
        unsafe: tuple | None = None  # the first node of this layer reaching the target, breaking a property
        following = []
        for s, parent in layer:
            for act in actions.values():
                if act.pre is not None and not evaluate(act.pre, [s]):
                    continue
                t = s | act.eff
                kt = key(t)
                if kt not in letters:
                    letters[kt] = _letters(dfas, t)
                qt = _step(dfas, parent[1], letters[kt])
                node = (kt, qt)
                if node in parents:
                    continue
                parents[node] = (parent, act.name)
                if len(parents) > MAX_SEARCH_STATES:
                    raise SpecError(
                        f"plan search visited more than {MAX_SEARCH_STATES} states; simplify the action model"
                    )
                if not reached(t):
                    following.append((t, node))
                elif _safe(dfas, qt):
                    return _path(parents, node), True
                elif unsafe is None:
                    unsafe = node
        if unsafe is not None:
            return _path(parents, unsafe), False
        layer = following
    return None


def _path(parents: Mapping[tuple, tuple[tuple, str] | None], node: tuple) -> list[str]:
    path: list[str] = []
    step = parents[node]
    while step is not None:
        node, name = step
        path.append(name)
        step = parents[node]
    return path[::-1]


def _values_text(values: Mapping[str, bool]) -> str:
    return ", ".join(f"{k}={'true' if v else 'false'}" for k, v in values.items())
