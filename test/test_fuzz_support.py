"""Fuzzing support shared by the test_fuzz_* tests and benchmarks/fuzz_inputs.py (no tests here).

Strategies make formulas, spec documents and bag damage; each oracle runs one input through the
public entry points and names its outcome class. The classes in FAILURES must never occur: an
exception other than SafetyMonitorError escaping (`leak:<type>`), no result within the time limit
(`hang`), an error message that does not name the file it is about, a result that is not
well-formed, a formula that prints to something that parses differently or whose DFA disagrees with
the reference evaluator, a damaged bag whose verdicts are silently safer than the intact bag's, frames
lost or live and replay apart, an alarm on a clean run, a mobile base used while untrusted or its jumps
miscounted, a quaternion misjudged against tf2's tolerance, an arm judged before its topic has sent, an
event log misread, and a grounder or Estimator (and the monitor over it) that differs from a baseline tree's.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
import functools
import io
import json
import math
import operator
import os
import pickle
import random
import re
import shutil
import signal
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from mjcf_robots import MOBILE_JOINTS

from safety_monitor.enums import IssueKind
from safety_monitor.errors import SafetyMonitorError, SourceError, SpecError, ToolMissingError
from safety_monitor.frames import Pose, PredicateSample, RobotState, Wrench
from safety_monitor.io.bag import BagReader, BagWriter
from safety_monitor.io.messages import decode_predicates
from safety_monitor.replay.score import BagResult, ReplayConfig, pool_rollouts, score_bag
from safety_monitor.sim.faults import FAULTS
from safety_monitor.sim.tasks import TASKS
from safety_monitor.specs.compile import compile_formula
from safety_monitor.specs.ltlf import (
    Always,
    And,
    Atom,
    Const,
    Equiv,
    Eventually,
    Implies,
    Last,
    Next,
    Not,
    Or,
    Release,
    Until,
    WeakNext,
    evaluate,
    parse,
    to_text,
)
from safety_monitor.specs.model import load_specs

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SPECS = REPO / "config" / "specs.yaml"
FAILURES = (
    "leak",
    "hang",
    "unnamed",
    "malformed",
    "roundtrip_mismatch",
    "dfa_mismatch",
    "ok_silent_safer",
    "miscounted",
    "replay_disagrees",
    "verdict_changed",
    "live_disagrees",
    "false_alarm",
    "untrusted_known",
    "jump_miscounted",
    "drift_judged_jump",
    "base_calls_miscounted",
    "quaternion_miscounted",
    "misread",
    "accepted_junk",
    "refused_a_log",
    "unseen_arm_judged",
    "changed_silently",
    "grounder_differs",
    "estimator_differs",
)


def _no_source_constants() -> None:
    """Hypothesis draws about one value in twenty (integers, floats, text) from the constants in the source of the
    local modules loaded so far, here safety_monitor's. A seed's inputs then changed with every edit of the package
    (a campaign rerun after a fix met other inputs) and with the modules a check had imported before each draw
    (bags, markers, objects, plans and traces import theirs at their first input, so their later inputs differed
    from the same part run after another one). Drawing from hypothesis's own constants only, the same seed and
    budget give the same inputs. A private hook (hypothesis is pinned in requirements.txt); set at import, before
    the campaign or a test_fuzz_* test generates anything."""
    from hypothesis.internal.conjecture import providers

    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()


_no_source_constants()

FUZZ = settings(  # the unit tests' profile: derandomized, no example database, no deadline (MONA may take seconds)
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
)


def is_failure(outcome: str) -> bool:
    """True for a failure class, also behind a prefix (`robot_state:leak:TypeError`)."""
    return any(part in FAILURES for part in outcome.split(":"))


class Hang(BaseException):
    """Raised by `time_limit`; a BaseException so that no `except Exception` in the code under test eats it."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """SIGALRM after `seconds` raises Hang in the main thread (subprocess.run kills its child on it)."""

    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"no result within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


HANG_S = 120.0  # no result in this long is a hang: the tests' calls take under a second (100x+ for a slow machine)


def guarded(run: Callable[[], str], seconds: float = HANG_S) -> tuple[str, str]:
    """(outcome class, detail): the oracle's own class, or `hang`, or `leak:<type>` for any other exception."""
    try:
        with time_limit(seconds):
            return run(), ""
    except Hang as exc:
        return "hang", str(exc)
    except Exception as exc:  # the finding itself: only SafetyMonitorError may escape the public functions
        return f"leak:{type(exc).__name__}", f"{type(exc).__name__}: {exc}"


# ------------------------------------------------------------------------------------------ formulas
KEYWORDS = ("true", "false", "last")
NAMES = st.sampled_from(["a", "b", "c", "p_1", "grasp", "v_1", "max", "ex1", "x", "in", "all2"]) | st.from_regex(
    r"[a-z][a-z0-9_]{0,8}", fullmatch=True
).filter(lambda n: not n.startswith(KEYWORDS))
_UNARY = (Not, Next, WeakNext, Always, Eventually)
_BINARY = (Implies, Equiv, Until, Release)


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    operands = st.lists(children, min_size=2, max_size=3).map(tuple)
    return st.one_of(
        *(st.builds(op, children) for op in _UNARY),
        st.builds(And, operands),
        st.builds(Or, operands),
        *(st.builds(op, children, children) for op in _BINARY),
    )


@functools.cache  # one strategy object per argument: hypothesis validates each new object again
def formulas(max_leaves: int = 10, names: tuple[str, ...] | None = None) -> st.SearchStrategy:
    """Random formula ASTs over the whole grammar (atoms from `names` when given)."""
    atoms = st.builds(Atom, st.sampled_from(names) if names else NAMES)
    return st.recursive(atoms | st.builds(Const, st.booleans()) | st.just(Last()), _extend, max_leaves=max_leaves)


_SPELLING = {
    Not: ("!", "~"),
    Next: ("X",),
    WeakNext: ("WX",),
    Always: ("G",),
    Eventually: ("F",),
    And: ("&", "&&"),
    Or: ("|", "||"),
    Implies: ("->", "=>"),
    Equiv: ("<->", "<=>"),
    Until: ("U",),
    Release: ("R",),
}
_SPACES = ("", " ", "  ", "\n", "\t")
_GAPS = (" ", "  ", "\n", "\t ")  # U and R need a non-letter after them


@st.composite
def rendered(draw: Callable, formula: Any = None) -> str:
    """A formula printed with random spellings, case of keywords and white space, fully parenthesised,
    so that it must parse back to the same AST. One drawn seed picks every choice (cheap to generate)."""
    f = formula if formula is not None else draw(formulas())
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    sp = lambda: rng.choice(_SPACES)  # noqa: E731

    def out(g: Any) -> str:
        if isinstance(g, Atom):
            return g.name
        if isinstance(g, Const):
            return rng.choice(["true", "TRUE", "True"] if g.value else ["false", "FALSE", "False"])
        if isinstance(g, Last):
            return rng.choice(["last", "LAST", "Last"])
        sym = lambda: rng.choice(_SPELLING[type(g)])  # noqa: E731
        if isinstance(g, _UNARY):
            return f"{sym()}{sp()}({sp()}{out(g.arg)}{sp()})"
        if isinstance(g, (And, Or)):
            return "(" + "".join((f"{sp()}{sym()}{sp()}" if i else "") + out(a) for i, a in enumerate(g.args)) + ")"
        gap = (lambda: rng.choice(_GAPS)) if isinstance(g, (Until, Release)) else sp
        return f"({out(g.left)}{gap()}{sym()}{gap()}{out(g.right)})"

    return out(f)


FORMULA_ALPHABET = "abcpqxz_019 ()!~&|-<>=UGFXWRtruefalsLAST\n\t\"'.,;#"
_EDIT_CHARS = st.sampled_from(FORMULA_ALPHABET) | st.characters()


@st.composite
def mutated(draw: Callable, base: st.SearchStrategy) -> str:
    """1-4 character edits (insert, delete, replace, duplicate a slice) of a text from `base`."""
    return _mutate(draw, draw(base))


def _mutate(draw: Callable, text: str) -> str:
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "duplicate"]))
        if kind == "insert":
            text = text[:i] + draw(_EDIT_CHARS) + text[i:]
        elif kind == "delete":
            text = text[:i] + text[i + 1 :]
        elif kind == "replace":
            text = text[:i] + draw(_EDIT_CHARS) + text[i + 1 :]
        else:
            j = draw(st.integers(i, len(text)))
            text = text[:j] + text[i:j] + text[j:]
    return text


@functools.cache
def deep_formula_texts(max_depth: int = 700) -> st.SearchStrategy:
    """Nesting far past what recursive passes take: prefixes, parentheses, right-nested U, chains."""
    shapes = {
        "!": lambda n: "!" * n + "a",
        "X": lambda n: "X " * n + "a",
        "G(": lambda n: "G(" * n + "a" + ")" * n,
        "(": lambda n: "(" * n + "a" + ")" * n,
        "U": lambda n: "a U " * n + "a",
        "->": lambda n: "a -> " * n + "a",
        "F(a &": lambda n: "F(a & " * n + "b" + ")" * n,
    }
    return st.builds(lambda shape, n: shapes[shape](n), st.sampled_from(sorted(shapes)), st.integers(1, max_depth))


@functools.cache
def formula_texts() -> st.SearchStrategy:
    """Every kind of formula input, grammar-aware and raw."""
    return st.one_of(
        rendered(),
        mutated(rendered()),
        st.text(alphabet=FORMULA_ALPHABET, max_size=40),
        st.text(max_size=40),
        deep_formula_texts(),
    )


def formula_outcome(text: str, compile: bool = False, traces: int = 24) -> str:
    """Parse (and compile) one formula text; only SpecError / ToolMissingError may come out.

    A parsed formula must print to canonical text that parses to the same AST; a compiled one must
    agree with the reference evaluator on random traces.
    """
    try:
        f = parse(text)
    except SpecError as exc:
        message = str(exc)
        if message.startswith("syntax error at line"):
            return "syntax_error"
        if "nested too deeply" in message:
            return "too_deep"
        return "spec_error"
    if parse(to_text(f)) != f:
        return "roundtrip_mismatch"
    if not compile:
        return "parsed"
    try:
        dfa = compile_formula(text)
    except SpecError:
        return "compile_rejected"
    except ToolMissingError:
        return "tool_error"
    rng = random.Random(text)
    for _ in range(traces):
        trace = [{a: rng.random() < 0.5 for a in dfa.atoms} for _ in range(rng.randint(1, 6))]
        state = dfa.initial
        for valuation in trace:
            state = int(dfa.table[state, dfa.letter(valuation)])
        if bool(dfa.accepting[state]) != evaluate(f, trace):
            return "dfa_mismatch"
    return "compiled"


# --------------------------------------------------------------------------------------- spec files
PROPERTY_KEYS = [
    "name",
    "category",
    "formula",
    "recovery",
    "trigger",
    "min_resolve_frames",
    "options",
    "description",
    "follows",
]
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["G(a)", "G(a -> F b)", "G(!x)", "a", "last_x", "G(", "true", "Bad-Name"])
)
_KEYS = (
    st.sampled_from(["predicates", "properties", *PROPERTY_KEYS])
    | st.text(max_size=8)
    | st.integers()
    | st.booleans()
    | st.none()
)


@functools.cache
def spec_documents() -> st.SearchStrategy:
    """Random YAML-shaped documents, half of them shaped like spec files (predicates + properties)."""
    anything = st.recursive(
        _SCALARS, lambda ch: st.lists(ch, max_size=4) | st.dictionaries(_KEYS, ch, max_size=4), max_leaves=20
    )
    prop = st.dictionaries(st.sampled_from(PROPERTY_KEYS) | st.text(max_size=6), _SCALARS | anything, max_size=8)
    shaped = st.fixed_dictionaries(
        {"predicates": st.lists(NAMES | _SCALARS, max_size=5), "properties": st.lists(prop, max_size=3)},
        optional={"extra": anything},
    )
    return shaped | anything


@functools.cache
def _junk() -> st.SearchStrategy:
    return _SCALARS | st.lists(_SCALARS, max_size=3) | st.dictionaries(st.text(max_size=4), _SCALARS, max_size=2)


_BAD_NAMES = st.sampled_from(
    ["Upper", "with-dash", "", "9lives", "last_seen", "true", "falsely", None, 3, "a b", "ünï"]
) | st.text(max_size=6)
_ODD_KEYS = st.text(max_size=8) | st.integers()
_BYTE_EDITS = st.binary(min_size=0, max_size=3) | st.sampled_from([b":", b"\n", b"  ", b"-", b"'", b"\t"])


@functools.cache
def _default_doc() -> Any:
    return yaml.safe_load(DEFAULT_SPECS.read_text())


@st.composite
def mutated_default_specs(draw: Callable) -> Any:
    """config/specs.yaml with 1-3 edits: keys deleted, values of the wrong type, bad or duplicate names,
    formulas mutated or nested deeply, unknown keys."""
    doc = copy.deepcopy(_default_doc())
    for _ in range(draw(st.integers(1, 3))):
        props = doc.get("properties") if isinstance(doc, dict) else None
        prop = draw(st.sampled_from(props)) if isinstance(props, list) and props else None
        kind = draw(
            st.sampled_from(
                [
                    "drop_top",
                    "retype_top",
                    "drop_key",
                    "retype_key",
                    "bad_predicate",
                    "duplicate",
                    "formula",
                    "unknown_key",
                    "deep_formula",
                ]
            )
        )
        if kind == "drop_top" and isinstance(doc, dict) and doc:
            doc.pop(draw(st.sampled_from(sorted(doc, key=repr))))
        elif kind == "retype_top" and isinstance(doc, dict):
            doc[draw(st.sampled_from(["predicates", "properties"]))] = draw(_junk())
        elif kind == "bad_predicate" and isinstance(doc, dict) and isinstance(doc.get("predicates"), list):
            bad = draw(_BAD_NAMES)
            preds = doc["predicates"]
            if preds:
                preds[draw(st.integers(0, len(preds) - 1))] = bad
            else:
                preds.append(bad)
        elif kind == "duplicate" and isinstance(prop, dict):
            props.append(dict(prop))
        elif not isinstance(prop, dict):
            continue
        elif kind == "drop_key" and prop:
            prop.pop(draw(st.sampled_from(sorted(prop, key=repr))))
        elif kind == "retype_key":
            prop[draw(st.sampled_from(PROPERTY_KEYS))] = draw(_junk())
        elif kind == "formula":
            key = draw(st.sampled_from(["formula", "recovery", "trigger"]))
            prop[key] = _mutate(draw, str(prop.get(key) or "G(a)"))
        elif kind == "deep_formula":
            prop[draw(st.sampled_from(["formula", "recovery", "trigger"]))] = draw(deep_formula_texts())
        elif kind == "unknown_key":
            prop[draw(_ODD_KEYS)] = draw(_junk())
    return doc


@st.composite
def specs_with_random_formula(draw: Callable) -> Any:
    """config/specs.yaml with one property's formula replaced by a random formula over its predicates
    (trigger given), so that the file loads and compile_specs meets a new formula."""
    doc = copy.deepcopy(_default_doc())
    prop = draw(st.sampled_from(doc["properties"]))
    prop["formula"] = draw(rendered(draw(formulas(6, tuple(doc["predicates"][:6])))))
    prop["trigger"] = doc["predicates"][0]
    return doc


@st.composite
def spec_file_bytes(draw: Callable, max_nesting: int = 400) -> bytes:
    """Raw bytes, deeply nested YAML, or config/specs.yaml truncated or with bytes edited (YAML syntax
    errors). PyYAML needs ~3 s for 1000 nested '[' (quadratic scanner), hence `max_nesting`."""
    original = DEFAULT_SPECS.read_bytes()
    kind = draw(st.sampled_from(["bytes", "truncate", "edit", "deep"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "truncate":
        return original[: draw(st.integers(0, len(original)))]
    if kind == "deep":
        return draw(st.sampled_from([b"a: [", b"- ", b"{a: ", b"["])) * draw(st.integers(1, max_nesting))
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(data) - 1))
        data[i : i + 1] = draw(_BYTE_EDITS)
    return bytes(data)


def spec_outcome(path: Path) -> str:
    """load_specs on one file: a SpecError naming the file, or a spec set whose formulas all parse."""
    try:
        spec_set = load_specs(path)
    except SpecError as exc:
        return "spec_error" if str(exc).startswith(str(path)) else "unnamed"
    for prop in spec_set.properties:
        for text in (prop.formula, prop.recovery, prop.trigger):
            if text is not None:
                parse(text)  # a SpecError here escapes as a leak of the loader's validation
    return "loaded"


def compile_outcome(path: Path) -> str:
    """load_specs + compile_specs on a file that loads: compiled, or a SpecError naming the file."""
    from safety_monitor.specs.model import compile_specs

    try:
        compiled = compile_specs(load_specs(path))
    except SafetyMonitorError as exc:
        return "compile_error" if str(exc).startswith(str(path)) else "unnamed"
    return "compiled" if compiled else "malformed"


def write_text_doc(path: Path, doc: Any) -> bool:
    """Write a document as YAML; False when PyYAML cannot represent it (the example is skipped)."""
    try:
        path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    except (yaml.YAMLError, UnicodeEncodeError):
        return False
    return True


# --------------------------------------------------------------------------------------------- bags
BAG_SPECS = """
predicates: [excess_wrench, object_grasped, object_grasped_raw, object_sync, object_dropped, object_released,
             object_left_gripper]
properties:
  - name: no_excess_wrench
    category: collision_contact
    formula: "G(!excess_wrench)"
    recovery: "G(excess_wrench -> F(!excess_wrench))"
  - name: grasp_synced_until_release
    category: grasp_stability
    formula: "G(object_grasped -> ((object_sync U !object_grasped_raw) | G object_sync))"
    recovery: "G((object_grasped & !object_sync) -> F(object_sync | object_dropped))"
  - name: drop_only_when_released
    category: grasp_stability
    formula: "G(object_dropped -> (object_released | (!object_left_gripper U object_grasped)))"
    recovery: "F(object_grasped | object_left_gripper)"
"""
RATE = 100.0
FRAMES = 150  # 1.5 s
STORAGES = ("mcap", "sqlite3")
MODES = ("predicates", "robot_state")


def scripted_predicates(k: int) -> dict[str, bool]:
    """One violation per property: excess wrench, a slip while grasped, a drop without release."""
    return {
        "excess_wrench": 50 <= k < 70,
        "object_grasped": 20 <= k < 110,
        "object_grasped_raw": 18 <= k < 112,
        "object_sync": not 80 <= k < 90,
        "object_dropped": k == 112,
        "object_released": False,
        "object_left_gripper": k >= 112,
    }


def write_base_bag(
    path: Path,
    storage: str,
    state: RobotState,
    markers: tuple[RawMarker, ...] = (),
    objects: tuple[tuple[int, str], ...] = (),
) -> Path:
    """1.5 s at 100 Hz of /joint_states, /wrist_wrench (120 N for 0.2 s), object poses at 20 Hz and the
    scripted /safety_monitor/predicates: every frame carries a violation-relevant value. `markers`: messages
    on the episode topic (`marker_layouts`); `objects`: (frame, text) the predicates' `_objects` value on
    those frames (`objects_values`)."""
    from safety_monitor.io.messages import predicates_msg

    said = dict(objects)
    hit = Wrench(np.array([0.0, 0.0, -120.0]), np.zeros(3))
    with BagWriter(path, storage=storage) as w:
        for k in range(FRAMES):
            t = 100.0 + k / RATE
            w.write_wrench("/wrist_wrench", t, hit if 50 <= k < 70 else state.wrench)
            if k % 5 == 0:
                for name, pose in state.object_poses.items():
                    w.write_pose(f"/objects/{name}/pose", t, pose)
            w.write_joint_state("/joint_states", t, state.joint_names, state.joint_position)
            msg = predicates_msg(w.types, PredicateSample(scripted_predicates(k), t, frame=k))
            if k in said:
                msg.status[0].values[-1].value = said[k]  # `_objects`, the last key
            w.write("/safety_monitor/predicates", msg, t)
        for marker in markers:
            w.write("/safety_monitor/episode", marker.message(w.types), marker.log_t)
    return path


def replay_config(specs: Path, mode: str) -> ReplayConfig:
    """Predicate mode, or robot-state mode measuring the rate from the (possibly damaged) stamps."""
    return ReplayConfig(specs=str(specs), from_predicates=mode == "predicates")


def data_file(bag: Path) -> Path:
    return next(p for p in bag.iterdir() if p.suffix in (".mcap", ".db3"))


@dataclasses.dataclass(frozen=True)
class Damage:
    """One reproducible damage: `target` file (data or metadata), `kind` and its parameters."""

    target: str
    kind: str
    params: tuple

    def apply(self, bag: Path) -> None:
        path = data_file(bag) if self.target == "data" else bag / "metadata.yaml"
        if self.kind == "remove":
            path.unlink()
            return
        if self.kind == "sql":
            with contextlib.closing(sqlite3.connect(path)) as db:
                db.execute(self.params[0])
                db.commit()
            return
        if self.kind == "yaml":
            doc = yaml.safe_load(path.read_text())
            _edit_yaml(doc, *self.params)
            path.write_text(yaml.safe_dump(doc))
            return
        data = bytearray(path.read_bytes())
        if not data:
            return
        if self.kind == "truncate":
            del data[int(self.params[0] * len(data)) :]
        elif self.kind == "flip":
            for where, bit in self.params:
                data[int(where * len(data))] ^= 1 << bit
        elif self.kind == "overwrite":
            where, new = self.params
            i = int(where * len(data))
            data[i : i + len(new)] = new
        path.write_bytes(bytes(data))


def _edit_yaml(doc: Any, choice: float, value: Any) -> None:
    """Replace (or delete, value '<delete>') the leaf at position `choice` of a depth-first walk."""
    slots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            slots.append((node, key))
            walk(child)

    walk(doc)
    if not slots:
        return
    node, key = slots[int(choice * len(slots))]
    if value == "<delete>":
        del node[key]
    else:
        node[key] = value


_SQL = [
    "DELETE FROM messages WHERE id % {k} = 0",
    "UPDATE messages SET data = randomblob({n}) WHERE id = {i}",
    "UPDATE messages SET data = substr(data, 1, {n}) WHERE id = {i}",
    "UPDATE messages SET timestamp = {big} WHERE id = {i}",
    "UPDATE messages SET topic_id = 99 WHERE id = {i}",
    "UPDATE topics SET type = 'vendor_msgs/msg/Nothing' WHERE id = {t}",
    "UPDATE topics SET name = '' WHERE id = {t}",
    "UPDATE topics SET serialization_format = 'json' WHERE id = {t}",
    "UPDATE topics SET offered_qos_profiles = '- [unclosed' WHERE id = {t}",
    "DELETE FROM topics WHERE id = {t}",
    "UPDATE message_definitions SET encoded_message_definition = 'int32 x' WHERE id = {t}",
    "UPDATE message_definitions SET encoding = 'ros2idl'",
    "DROP TABLE message_definitions",
    "DROP TABLE schema",
]


_YAML_VALUES = ["<delete>", None, -1, 0, 10**12, "", "x", [], {}, True, 1.5, "/joint_states", "cdr"]


@st.composite
def damages(draw: Callable, storage: str) -> Damage:
    """Truncation at a random offset, bit flips, byte runs overwritten (data file or metadata.yaml),
    a metadata.yaml value replaced or deleted, a file removed, and for sqlite3 edits of the tables.
    Hypothesis picks the kind; a drawn seed spreads offsets uniformly over the file (hypothesis itself
    favours 0 and other simple fractions)."""
    kinds = ["truncate", "flip", "flip", "overwrite", "yaml", "remove"]
    kinds += ["sql", "sql"] if storage == "sqlite3" else []
    kind = draw(st.sampled_from(kinds))
    rng = random.Random(draw(st.integers(0, 2**64 - 1)))
    target = "metadata" if kind == "yaml" else "data" if kind == "sql" else rng.choice(["data"] * 3 + ["metadata"])
    if kind == "truncate":
        params: tuple = (rng.random(),)
    elif kind == "flip":
        params = tuple((rng.random(), rng.randrange(8)) for _ in range(rng.randint(1, 8)))
    elif kind == "overwrite":
        run = (
            rng.randbytes(rng.randint(1, 64))
            if rng.random() < 0.7
            else bytes([rng.randrange(256)]) * rng.randint(1, 64)
        )
        params = (rng.random(), run)
    elif kind == "yaml":
        params = (rng.random(), rng.choice(_YAML_VALUES))
    elif kind == "sql":
        statement = rng.choice(_SQL).format(
            k=rng.randint(2, 50),
            n=rng.randint(0, 64),
            i=rng.randint(1, 4 * FRAMES),
            t=rng.randint(1, 7),
            big=rng.choice([-1, 0, 2**63 - 1, 10**15]),
        )
        params = (statement,)
    else:
        params = ()
    return Damage(target, kind, params)


def damaged_copy(base: Path, damage: Damage, folder: Path) -> Path:
    """A damaged copy of `base` in a fresh folder `folder` (replaced if present)."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(base, folder)
    damage.apply(folder)
    return folder


def read_outcome(bag: Path) -> str:
    """BagReader directly (no catch-all around it): every message read and decoded, or a SourceError."""
    try:
        with BagReader(bag) as reader:
            for _, msgtype, _, raw in reader.raw_messages(set(reader.topics)):
                reader.deserialize(raw, msgtype)
    except SafetyMonitorError as exc:
        return "error" if str(bag) in str(exc) else "unnamed"
    return "read"


def _failure_class(bag: Path, error: str) -> str:
    """A bag that failed to score: `leak:<Type>` when score_bag's catch-all (`<bag>: <Type>: <message>`) made
    `error`, else `error` if it names the bag, else `unnamed`."""
    found = re.match(re.escape(str(bag)) + r": ([A-Z][A-Za-z0-9_]*): ", error)
    if found:
        return f"leak:{found.group(1)}"
    return "error" if str(bag) in error else "unnamed"


def malformed(r: BagResult, reference: BagResult) -> list[str]:
    """What is inconsistent in a scored result (empty when it is well-formed)."""
    problems = []
    if r.trace is None or r.trace.frames != r.frames or r.frames < 1:
        return [f"trace frames {r.trace and r.trace.frames} vs frames {r.frames}"]
    if [o.property for o in r.trace.outcomes] != [o.property for o in reference.trace.outcomes]:
        problems.append("properties differ")
    for o in r.trace.outcomes:
        if o.frames != r.frames or not 0 <= o.blind_frames <= o.frames or not 0 <= o.violating_frames <= o.frames:
            problems.append(f"{o.property}: frame counts {o}")
        if len(o.durations) != o.violations or sum(o.durations) != o.violating_frames or o.triggers < 0:
            problems.append(f"{o.property}: episode counts {o}")
    if r.timeline is None or r.timeline.frames != r.frames:
        problems.append("timeline length")
    if not (np.isfinite(r.t_start) and np.isfinite(r.t_end) and r.t_start <= r.t_end):
        problems.append(f"times {r.t_start}..{r.t_end}")
    return problems


def score_outcome(bag: Path, config: ReplayConfig, reference: BagResult) -> str:
    """score_bag on a damaged bag, compared with the intact bag's result `reference`.

    A failure must be a SourceError naming the bag. A success must be well-formed; it is `ok_same`
    when frames and every property's counts equal the reference's, `ok_flagged` when it differs but
    says so (warnings, stream issues, more unknown or stale frames), else `ok_silent_diff`, or
    `ok_silent_safer` when some property lost violations or violating frames without any flag.
    """
    r = score_bag(bag, config)
    if not r.ok:
        return _failure_class(bag, r.error)
    if malformed(r, reference):
        return "malformed"

    def counts(res):
        return [(o.triggers, o.violations, o.violating_frames, o.blind_frames) for o in res.trace.outcomes]

    if r.frames == reference.frames and counts(r) == counts(reference) and not r.warnings and not r.issues:
        return "ok_same"
    if r.warnings or r.issues or r.unknown_frames > reference.unknown_frames or r.stale_frames > reference.stale_frames:
        return "ok_flagged"
    safer = any(
        o.violations < o0.violations or o.violating_frames < o0.violating_frames
        for o, o0 in zip(r.trace.outcomes, reference.trace.outcomes)
    )
    return "ok_silent_safer" if safer else "ok_silent_diff"


# ------------------------------------------------------------------------------------ episode markers
MARKER_KEYS = ("index", "t", "task", "fault", "seed", "frames", "succeeded")
_MARKER_VALUES = st.sampled_from(
    ['"x"', "null", "true", "-1", "0", "2", "1.5", "NaN", "Infinity", "-Infinity", "1e309", "[]", "{}", "[1]",
     '"start"', "not json", "", "[" * 5000, '{"a": ' * 3000, "100.5", "9" * 400]
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class RawMarker:
    """One message on the episode topic, logged at `log_t`: a well-formed marker (`edits` empty) or one with
    its status name or message replaced and values replaced, added or removed (`edits`: key -> JSON text or
    None to remove)."""

    log_t: float
    kind: str
    index: int
    t: float
    name: str = "safety_monitor/episode"
    edits: tuple[tuple[str, str | None], ...] = ()

    def message(self, types: Any) -> Any:
        from safety_monitor.pipeline.markers import EpisodeMarker, MarkerKind, marker_msg

        kind = MarkerKind(self.kind) if self.kind in ("start", "end") else MarkerKind.START
        msg = marker_msg(types, EpisodeMarker(kind, self.index, self.t))
        status = msg.status[0]
        status.name, status.message = self.name, self.kind
        values = {kv.key: kv.value for kv in status.values}
        for key, text in self.edits:
            if text is None:
                values.pop(key, None)
            else:
                values[key] = text
        status.values = [types.KeyValue(key=k, value=v) for k, v in values.items()]
        return msg


def frame_time(k: float) -> float:
    return 100.0 + k / RATE


@st.composite
def marker_layouts(draw: Callable) -> tuple[RawMarker, ...]:
    """0-6 markers on a bag of FRAMES frames: start/end (or another message) at or between frame times, inside,
    before or after the bag, logged on time, early, late or out of order; indices repeated or not counting
    up; one in four with edited values or status."""
    markers = []
    for i in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["start", "start", "end", "end", "stop", ""]))
        k = draw(st.integers(-10, FRAMES + 10) | st.sampled_from([0, FRAMES - 1, 50, 60, 85, 112]))
        t = frame_time(k + draw(st.sampled_from([0.0, 0.0, 0.0, 0.5, -0.5, 1e-4])))
        delay = draw(st.sampled_from([0.0, 0.0, 0.001, 0.05, 0.3, -0.05, 2.0]))
        index = draw(st.sampled_from([i // 2, i, 0, 1, -1, 10**12]))
        edits: tuple = ()
        name = "safety_monitor/episode"
        if draw(st.integers(0, 3)) == 0:
            edits = tuple(
                draw(st.lists(st.tuples(st.sampled_from(MARKER_KEYS + ("kind", "extra")), _MARKER_VALUES | st.none()),
                              min_size=1, max_size=3))
            )  # fmt: skip
            name = draw(st.sampled_from([name, name, "other", ""]))
        markers.append(RawMarker(frame_time(k) + delay, kind, index, t, name, edits))
    if markers and draw(st.booleans()):
        markers.append(markers[draw(st.integers(0, len(markers) - 1))])  # a duplicate
    return tuple(markers)


def marker_outcome(bag: Path, config: ReplayConfig, reference: BagResult) -> str:
    """score_bag on a bag with markers, compared with the unmarked bag's result `reference`.

    A failure must name the bag. A success must be well-formed as a whole and in each rollout, count
    every frame once (the rollouts' frames add up to the bag's, which are the unmarked bag's), and not be
    safer without saying so: over its rollouts every property has at least the reference's violating
    frames, unless a warning or an issue (a dropped marker, a late marker's blind frames) says why not."""
    r = score_bag(bag, config)
    if not r.ok:
        return _failure_class(bag, r.error)
    whole = [p for p in malformed(r, reference) if not (r.parts and p == "timeline length")]  # timelines: per part
    if whole or any(malformed(p, reference) for p in r.parts):
        return "malformed"
    parts = r.split()
    flagged = bool(r.warnings or r.issues)
    # each frame in one rollout; the bag's frames are the unmarked bag's, or more with an issue saying why (a
    # message on the episode topic logged after the last frame: the streams stopped before the bag's end)
    if (
        sum(p.frames for p in parts) != r.frames
        or r.frames < reference.frames
        or r.frames > reference.frames + sum(r.issues.values())
    ):
        return "miscounted"
    outcomes = [
        [o for p in parts for o in p.trace.outcomes if o.property == o0.property] for o0 in reference.trace.outcomes
    ]
    safer = any(
        sum(o.violating_frames for o in os) < o0.violating_frames or not any(o.violations for o in os)
        for os, o0 in zip(outcomes, reference.trace.outcomes)
        if o0.violations
    )
    kind = "split" if r.parts else "whole"
    if safer:
        return f"{kind}_flagged_safer" if flagged else "ok_silent_safer"
    return f"{kind}_flagged" if flagged else f"{kind}_ok"


@contextlib.contextmanager
def late_limits(hold: int, checkpoint: int) -> Iterator[None]:
    """The Supervisor's LATE_HOLD_FRAMES and CHECKPOINT_FRAMES (and replay's copy) set to reach a 150-frame bag."""
    from safety_monitor.pipeline import supervisor
    from safety_monitor.replay import score

    saved = supervisor.LATE_HOLD_FRAMES, supervisor.CHECKPOINT_FRAMES
    supervisor.LATE_HOLD_FRAMES = score.LATE_HOLD_FRAMES = hold
    supervisor.CHECKPOINT_FRAMES = checkpoint
    try:
        yield
    finally:
        supervisor.LATE_HOLD_FRAMES = score.LATE_HOLD_FRAMES = saved[0]
        supervisor.CHECKPOINT_FRAMES = saved[1]


@st.composite
def held_marker_layouts(draw: Callable) -> tuple[tuple[RawMarker, ...], tuple[int, int]]:
    """`marker_layouts` with the frames kept for a late start marker and the checkpoint spacing a bag's length or
    less: fewer kept than came late, a checkpoint on every frame or none inside the late frames."""
    hold = draw(st.sampled_from([2, 10, 37, 60, 149]))
    # (checkpoints no further apart than the frames kept, as the defaults: a rewind finds one among them)
    return draw(marker_layouts()), (hold, draw(st.sampled_from([c for c in (1, 3, 7, 25) if c <= hold])))


def marker_live_outcome(bag: Path, config: ReplayConfig) -> str:
    """`live_outcome` for a marked bag replay scores (an error naming the bag is `error`, as in marker_outcome)."""
    r = score_bag(bag, config)
    return live_outcome(bag, config, r) if r.ok else _failure_class(bag, r.error)


TICK_S = 0.1  # the monitor node's watchdog timer period at most (`min(0.1, timeouts / 2)`)


def live_rollouts(bag: Path, config: ReplayConfig, rate_hz: float | None) -> tuple[list[Any], list[Any]]:
    """The Supervisor driven as the monitor node drives it, on its clock at the bag's log times: each predicates
    message and episode marker on arrival (log order; a marker logged with a frame first, as replay applies it),
    a message or marker neither reads dropped as the node drops it, the watchdog ticked every TICK_S between
    messages, and the input finished at the bag's end. Returns the rollouts it finished and every event it
    reported (published and logged live), with their rollout indices."""
    from safety_monitor.io.messages import BadPredicates
    from safety_monitor.pipeline.markers import decode_marker
    from safety_monitor.pipeline.supervisor import Supervisor
    from safety_monitor.replay.names import absolute_mapping
    from safety_monitor.replay.score import make_monitor

    supervisor = Supervisor(make_monitor(config, rate_hz), config.monitor)
    rollouts: list[Any] = []
    events: list[Any] = []

    def take(step: Any) -> None:
        events.extend(step.events)
        rollouts.extend(step.finished)

    mapping = absolute_mapping(config.mapping, config.namespace)  # the names a stack in that namespace reads
    predicates, episode = mapping.predicates, mapping.episode
    with BagReader(bag) as reader:
        messages = sorted(
            ((t_ns / 1e9, topic != episode, reader.deserialize(raw, msgtype), topic)
             for topic, msgtype, t_ns, raw in reader.raw_messages({predicates, episode})),
            key=lambda m: m[:2],
        )  # fmt: skip
        end = reader.end_time
    last = None
    for now, _, msg, topic in messages:
        while last is not None and now - last > TICK_S:
            last += TICK_S
            take(supervisor.tick(last))
        last = now
        try:
            take(supervisor.marker(decode_marker(msg), now) if topic == episode else supervisor.sample(
                decode_predicates(msg), now))  # fmt: skip
        except (SourceError, BadPredicates):
            continue  # logged and dropped
    take(supervisor.finish(end))
    return rollouts, events


def live_outcome(bag: Path, config: ReplayConfig, r: BagResult) -> str:
    """`live_disagrees` unless replay's result `r` holds the rollouts the live Supervisor finished (frames and
    every property's counts, rollout by rollout where markers cut the bag, else pooled), and every violation
    the live monitor reported opened is in exactly one rollout or was withdrawn once."""
    from safety_monitor.enums import EventKind

    rollouts, events = live_rollouts(bag, config, r.rate_hz)

    def counts(frames: int, outcomes: Any) -> tuple:
        return frames, tuple((o.triggers, o.violations, o.violating_frames, o.blind_frames) for o in outcomes)

    if r.parts:
        live = [counts(ro.frames, ro.outcomes) for ro in rollouts if ro.frames]
        replayed = [counts(p.frames, p.trace.outcomes) for p in r.parts if p.frames]
    else:
        pooled = pool_rollouts(rollouts) if rollouts else None
        live = [counts(pooled.frames, pooled.outcomes)] if pooled else []
        replayed = [counts(r.frames, r.trace.outcomes)]
    if live != replayed:
        return "live_disagrees"
    kept = [(ro.index, e.property, e.episode) for ro in rollouts for e in ro.events if e.kind is EventKind.OPENED]
    opened = [(x.rollout, x.event.property, x.event.episode) for x in events if x.event.kind is EventKind.OPENED]
    gone = [(x.rollout, x.event.property, x.event.episode) for x in events if x.event.kind is EventKind.WITHDRAWN]
    if sorted(opened) != sorted(kept + gone):
        return "live_disagrees"
    return "live_same"


# ------------------------------------------------------------------------------ the `_objects` key
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda ch: st.lists(ch, max_size=3) | st.dictionaries(st.text(max_size=6), ch, max_size=3),
    max_leaves=10,
)
_OBJECT_NAMES = st.lists(st.sampled_from(["mug", "cube", "", "a,b"]) | st.text(max_size=6), max_size=3)
OBJECT_TEXTS = st.one_of(
    st.dictionaries(st.sampled_from(["object_grasped", "object_dropped", "nope", ""]), _OBJECT_NAMES, max_size=3).map(
        json.dumps
    ),  # well-formed: names no verdict depends on
    _JSON.map(json.dumps),
    st.text(max_size=40),
    st.sampled_from(['{"object_grasped": ["mug"]', "NaN", '{"a": ["x"], "a": 3}', '"\\ud800"', "9" * 5000]),
    st.builds(operator.mul, st.sampled_from(["[", '{"a": ', '{"a": [']), st.integers(1, 5000)),
)


@st.composite
def objects_values(draw: Callable) -> tuple[tuple[int, str], ...]:
    """On 1-3 frames of the base bag, the predicates' `_objects` replaced by well-formed JSON, other JSON,
    any text or nesting up to 5000 deep."""
    frames = draw(st.lists(st.integers(0, FRAMES - 1) | st.sampled_from([0, 50, 112]), min_size=1, max_size=3))
    return tuple((k, draw(OBJECT_TEXTS)) for k in frames)


def objects_outcome(bag: Path, config: ReplayConfig, reference: BagResult, objects: tuple[tuple[int, str], ...]) -> str:
    """The live decoder on each edited message, and score_bag in predicate mode on the bag. A malformed `_objects`
    is a BadPredicates the node logs, and replay drops that frame as an `undecodable` issue: replay must drop
    exactly the frames the live decoder rejects, and keep the reference's verdicts when it rejects none (what a
    predicate is about changes no verdict)."""
    from safety_monitor.io.messages import BadPredicates, predicates_msg, rosbags_types

    types = rosbags_types()
    bad = 0
    for k, text in dict(objects).items():  # the last text given for a frame is the one written
        msg = predicates_msg(types, PredicateSample(scripted_predicates(k), frame_time(k), frame=k))
        msg.status[0].values[-1].value = text
        try:
            decode_predicates(msg)
        except BadPredicates:
            bad += 1
    r = score_bag(bag, config)
    if not r.ok:
        return _failure_class(bag, r.error)
    if r.issues.get(IssueKind.UNDECODABLE, 0) != bad:
        return "replay_disagrees"
    if r.frames != reference.frames - bad:
        return "miscounted"
    if bad:
        return "ok_flagged"
    if malformed(r, reference):
        return "malformed"
    same = [(o.triggers, o.violations, o.violating_frames) for o in r.trace.outcomes] == [
        (o.triggers, o.violations, o.violating_frames) for o in reference.trace.outcomes
    ]
    return "ok_same" if same else "verdict_changed"


# ------------------------------------------------------------------------- event logs: `alerts --log`
@dataclasses.dataclass(frozen=True)
class LoggedRun:
    """One monitor run on an event log: the scripted predicates (`scripted_predicates`, one violation per property)
    stepped by the Supervisor from frame `first` for `frames` frames, with start markers at `starts` (frame numbers:
    rollouts), some predicates unknown on frames 30-35 (blind and seeing events), events logged as the monitor node
    logs them (`_emit`); `end`: stopped (monitor_stopped), died (the log closed as a kill closes it), or torn (died in
    the middle of writing a batch: half a line left); `full`: frames on which the disk was full (the records held,
    then dropped past `hold` 2, an events_lost record after)."""

    robot: str = "r1"
    first: int = 0
    frames: int = FRAMES
    starts: tuple[int, ...] = ()
    end: str = "stopped"
    full: tuple[int, int] | None = None


LOG_LAYOUTS = (  # the logs the fuzzing edits: several runs, a crash, a full disk, rollouts
    (LoggedRun(),),
    (LoggedRun(starts=(0, 60)), LoggedRun(end="died", frames=90), LoggedRun(robot="r2", first=40)),
    (LoggedRun(full=(48, 115)), LoggedRun(end="torn", frames=115)),
    (LoggedRun(end="died"), LoggedRun(end="torn", frames=55, starts=(10,))),
)


def write_event_log(path: Path, runs: tuple[LoggedRun, ...]) -> Path:
    """The log the monitor node writes over `runs` (nodes/monitor_node.py: `_emit` for each frame's events, and a
    restart after a run that died says `state_lost`), through its own EventLog."""
    from safety_monitor.enums import EventKind
    from safety_monitor.monitor.live import SpecSetMonitor
    from safety_monitor.nodes import event_log as module
    from safety_monitor.nodes.event_log import EventLog, wall_stamp
    from safety_monitor.pipeline.markers import EpisodeMarker, MarkerKind
    from safety_monitor.pipeline.supervisor import Supervisor
    from safety_monitor.settings import MonitorSettings

    monitor_file = path.parent / f"{path.name}.specs.yaml"
    monitor_file.write_text(BAG_SPECS)
    append = module._append
    for run in runs:
        log = EventLog(path, fallback=None, hold=2, robot=run.robot, say=lambda *said: None)
        previous = log.open()
        if previous is not None:
            record = {"property": "*", "kind": EventKind.STATE_LOST, "frame": None, "t": None, "rollout": None,
                      "robot": run.robot, "previous_pid": previous.pid, "previous_started": previous.started,
                      "torn_bytes": previous.torn_bytes, **wall_stamp()}  # fmt: skip
            log.write([record], sync=True)
        supervisor = Supervisor(SpecSetMonitor.from_spec_file(monitor_file), MonitorSettings())
        index = 0
        for k in range(run.first, run.first + run.frames):
            t = frame_time(k)
            if k in run.starts:
                _log_events(log, supervisor.marker(EpisodeMarker(MarkerKind.START, index, t), t).events)
                index += 1
            if run.full is not None:
                full = run.full[0] <= k < run.full[1]
                module._append = _disk_full if full else append
            unknown = frozenset({"object_sync", "object_grasped_raw"}) if 30 <= k <= 35 else frozenset()
            step = supervisor.sample(PredicateSample(scripted_predicates(k), t, frame=k, unknown=unknown), t)
            _log_events(log, step.events)
            if run.full is not None and k == run.full[1] - 1:
                log.check()
        module._append = append
        if run.end == "stopped":
            _log_events(log, supervisor.finish(frame_time(run.first + run.frames)).events)
            log.close()
            continue
        if run.end == "torn":  # a batch cut short by the kill: half its line
            os.write(log._fd, b'{"category": "grasp_stability", "frame": 7, "kind": "op')
        log._syncer.close()  # died: the process gone, nothing more written, `.running` left behind
        os.close(log._fd)
        log._fd = -1
    monitor_file.unlink()
    return path


def _disk_full(fd: int, data: bytes) -> None:
    raise OSError(28, "No space left on device")


def _log_events(log: Any, events: Any) -> None:
    """As the monitor node's `_emit`: one batch per frame's events, each record stamped with the wall time."""
    import itertools

    from safety_monitor.nodes.event_log import wall_stamp

    for _, same in itertools.groupby(events, key=lambda e: e.event.frame):
        stamp = wall_stamp()
        log.write([{**e.event.to_json(), "rollout": e.rollout, "robot": log.robot, **stamp} for e in same])


@dataclasses.dataclass(frozen=True)
class LogEdit:
    """One reproducible change of logs made by `write_event_log`: `cut` (log, at byte fraction or offset), `lines`
    (log, edits: (line index fraction, how, value) each), `junk` (log, bytes appended), `concat` (logs, each log's
    bytes joined in order, each maybe cut by a last byte fraction)."""

    kind: str
    params: tuple


_FIELDS = ("property", "kind", "frame", "t", "rollout", "robot", "episode", "objects", "counterexample", "run",
           "wall_time", "pid", "category", "events", "previous_pid", "reason", "explanation")  # fmt: skip
_FIELD_VALUES = st.sampled_from(
    [None, True, 0, -1, 1.5, 10**30, "x", "", "opened", "recovered", "blind", "seeing", "state_lost", "*", [], {}, [1],
     ["mug"], [None], {"a": 1}, {"frames": [1]}, {"frames": "ab"}, {"explanation": 3, "formula": None, "frames": [0, 1],
     "values": []}, "monitor_started", "monitor_stopped", "events_lost", float("nan"), float("inf"), [[1]], "🙂"]
)  # fmt: skip
_LINE_EDITS = st.sampled_from(["drop", "duplicate", "swap", "junk", "blank", "field", "remove", "crlf", "truncate"])
_JUNK = st.sampled_from([b"", b"\n", b"{", b"{}\n", b'{"property": "*"}\n', b'{"property": "a", "kind": "opened"}',
                         b"\x00\xff", b"garbage\n", b"[1, 2]\n", b"\r\n", b" ", b'{"property": "a", "kind": "x", "run": 1}\n', b"[" * 100_000 + b"\n", b'{"a": ' * 50_000])  # fmt: skip


@st.composite
def log_edits(draw: Callable) -> LogEdit:
    """A log of LOG_LAYOUTS cut at any byte, with 1-3 lines edited (dropped, duplicated, swapped, replaced by junk or
    blank, a field set to a value of another type or removed, CRLF, cut short), junk appended, or several logs in
    one file."""
    kind = draw(st.sampled_from(["cut", "cut", "lines", "lines", "lines", "junk", "concat"]))
    which = draw(st.integers(0, len(LOG_LAYOUTS) - 1))
    if kind == "cut":
        return LogEdit(kind, (which, draw(st.floats(0, 1) | st.sampled_from([0.0, 1.0]))))
    if kind == "junk":
        return LogEdit(kind, (which, draw(_JUNK | st.binary(max_size=20) | st.text(max_size=20).map(str.encode))))
    if kind == "concat":
        logs = draw(st.lists(st.integers(0, len(LOG_LAYOUTS) - 1), min_size=2, max_size=3))
        return LogEdit(kind, tuple((k, draw(st.sampled_from([1.0, 1.0, 0.5, 0.99]) | st.floats(0, 1))) for k in logs))
    edits = tuple(
        (draw(st.floats(0, 1)), draw(_LINE_EDITS), draw(st.tuples(st.sampled_from(_FIELDS), _FIELD_VALUES | _JUNK)))
        for _ in range(draw(st.integers(1, 3)))
    )
    return LogEdit(kind, (which, edits))


def edited_log(logs: list[bytes], edit: LogEdit) -> bytes:
    """The bytes of the edited log (`logs`: the LOG_LAYOUTS logs' bytes)."""
    p = edit.params
    if edit.kind == "cut":
        data = logs[p[0]]
        return data[: round(p[1] * len(data))]
    if edit.kind == "junk":
        return logs[p[0]] + p[1]
    if edit.kind == "concat":
        return b"".join(logs[k][: round(cut * len(logs[k]))] for k, cut in p)
    lines = logs[p[0]].splitlines(keepends=True)
    for where, how, (key, value) in p[1]:
        if not lines:
            break
        i = min(int(where * len(lines)), len(lines) - 1)
        if how == "drop":
            del lines[i]
        elif how == "duplicate":
            lines.insert(i, lines[i])
        elif how == "swap":
            lines[i], lines[-1] = lines[-1], lines[i]
        elif how == "junk":
            lines[i] = value if isinstance(value, bytes) else json.dumps(value).encode() + b"\n"
        elif how == "blank":
            lines.insert(i, b"\n")
        elif how == "crlf":
            lines[i] = lines[i].replace(b"\n", b"\r\n")
        elif how == "truncate":
            lines[i] = lines[i][: len(lines[i]) // 2] + b"\n"
        else:
            try:
                record = json.loads(lines[i])
            except (ValueError, RecursionError):  # the torn last line, or junk put there
                continue
            if not isinstance(record, dict):
                continue
            if how == "remove":
                record.pop(key, None)
            else:
                record[key] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            lines[i] = json.dumps(record).encode() + b"\n"
    return b"".join(lines)


def _expected_records(data: bytes) -> tuple[list[dict[str, Any]] | None, int]:
    """What a reader must make of a log's bytes, decided here line by line: (its records, the torn last line's
    length), or (None, 0) when some line is no record as the monitor writes them (a JSON object that
    `messages.event_problem` finds none in) but a last line without its newline that starts one."""
    from safety_monitor.io.messages import event_problem

    records = []
    lines = data.split(b"\n")
    for n, line in enumerate(lines):
        last = n == len(lines) - 1
        try:
            record = json.loads(line) if line else None
        except (ValueError, RecursionError):
            record = ...
        is_record = isinstance(record, dict) and event_problem(record) is None
        if last:
            if not line:
                return records, 0
            if line.startswith(b"{") and (record is ... or is_record):
                return records, len(line)
            return None, 0
        if not is_record:
            return None, 0
        records.append(record)
    return records, 0


LISTS = ("open", "blind", "recent", "lost", "received")  # what an alerts snapshot says of the events


def log_outcome(path: Path) -> str:
    """`safety-monitor alerts --log PATH --json`, then `--once`, in process: exit 2 with one line naming the file
    when it holds a line that is no record (`_expected_records`); else exit 0 (read whole), 1 (its last line cut,
    said on one line) or 3 (empty, said), a snapshot whose open violations, unknown verdicts, recent events, lost
    states and count are a live console's fed the same records as they were published (each monitor run a publisher
    of its own; the log's own records never published), whose first line counts the log's records, runs, violations
    and events lost, and a text view the console's. Never a traceback."""
    from safety_monitor.cli import main
    from safety_monitor.enums import EventKind, LogRecordKind
    from safety_monitor.nodes.alerts import CUT_LOG, NO_MONITOR, AlertBoard

    def alerts(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(["alerts", "--log", str(path), *args])
        return code, out.getvalue(), err.getvalue()

    code, out, err = alerts("--json")
    if "Traceback" in err or "internal error" in err or code not in (0, 1, 2, 3):
        return f"leak:exit_{code}"
    records, torn = _expected_records(path.read_bytes())
    if code == 2:
        if records is not None or out or len(err.splitlines()) != 1 or str(path) not in err:
            return "unnamed" if records is None else "refused_a_log"
        return "error"
    if records is None:
        return "accepted_junk"
    if code != (CUT_LOG if torn else NO_MONITOR if not records else 0) or bool(err) != (code != 0):
        return "misread"
    live = AlertBoard()
    runs = opened = lost = 0
    for r in records:
        if r["kind"] == LogRecordKind.MONITOR_STARTED:
            runs += 1
        elif r["kind"] == LogRecordKind.EVENTS_LOST:
            lost += r["events"] if isinstance(r.get("events"), int) else 0
        elif r["kind"] not in set(LogRecordKind):
            opened += r["kind"] == EventKind.OPENED
            live.update([r], publisher=runs)
    try:
        shown = json.loads(out)
    except ValueError:
        return "malformed"
    expected = json.loads(json.dumps(live.snapshot()))
    mon = shown["monitor"]
    said = (mon["records"], mon["runs"], mon["violations"], mon["events_lost"], mon["torn_bytes"])
    if {k: shown[k] for k in LISTS} != {k: expected[k] for k in LISTS} or said != (
        len(records),
        runs,
        opened,
        lost,
        torn,
    ):
        return "misread"
    code, out, err = alerts("--once")
    if "Traceback" in err or "internal error" in err:
        return "leak:text"
    if out.partition("\n")[2] != "\n".join(live.lines()[1:]) + "\n":
        return "misread"
    return {0: "read", CUT_LOG: "cut", NO_MONITOR: "empty"}[code]


def cut_outcomes(data: bytes, path: Path, offsets: Iterable[int] | None = None) -> list[str]:
    """`log_outcome` of the log `data` cut at every byte (or at `offsets`), as a kill leaves it or a copy taken while
    it is written, each a failure class with where it was cut (`misread:at_1234`)."""
    outcomes = []
    for k in range(len(data) + 1) if offsets is None else offsets:
        path.write_bytes(data[:k])
        outcome = guarded(lambda: log_outcome(path))[0]
        outcomes.append(f"{outcome}:at_{k}" if is_failure(outcome) else outcome)
    return outcomes


# ------------------------------------------------------------------------------ plans and CTL traces
def doc_file(page: str, name: str) -> str:
    """The file a docs page declares with `<!-- doc-test: file NAME -->` (its fenced block)."""
    text = (REPO / "docs" / page).read_text()
    found = re.search(rf"<!-- doc-test: file {re.escape(name)} -->\n```\w*\n(.*?)```", text, re.S)
    assert found, (page, name)
    return found.group(1)


_PLAN_KEYS = ["initial", "actions", "plan", "milestones", "goal"]
_CONDITIONS = st.sampled_from(
    ["gripper_open", "!gripper_open & near_plate", "G gripper_open", "X a", "a U b", "(", "", "true", "last"]
) | deep_formula_texts(300)


@st.composite
def mutated_plans(draw: Callable) -> Any:
    """docs/verify.md's plan.yaml with 1-3 edits: top keys dropped, retyped or added (plan and milestones
    both or neither), actions, preconditions, effects and plan steps of the wrong type, undefined,
    temporal or unparsable conditions, milestones of junk."""
    doc = yaml.safe_load(doc_file("verify.md", "plan.yaml"))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                ["drop", "retype", "milestones", "action", "pre", "eff", "step", "goal", "unknown", "initial"]
            )
        )
        actions = doc.get("actions") if isinstance(doc.get("actions"), dict) else None
        name = draw(st.sampled_from(sorted(actions, key=repr))) if actions else None
        if kind == "drop" and doc:
            doc.pop(draw(st.sampled_from(sorted(doc, key=repr))))
        elif kind == "retype":
            doc[draw(st.sampled_from(_PLAN_KEYS))] = draw(_junk())
        elif kind == "milestones":
            doc["milestones"] = draw(
                st.lists(
                    st.dictionaries(st.sampled_from(["gripper_open", "sanitized", "x"]), st.booleans()), max_size=4
                )
                | _junk()
            )
            if draw(st.booleans()):
                doc.pop("plan", None)
        elif kind == "action" and actions is not None:
            actions[draw(st.sampled_from([name, "new", 3, None, True]))] = draw(_junk())
        elif kind in ("pre", "eff") and name is not None and isinstance(actions[name], dict):
            actions[name][kind] = draw(_CONDITIONS | _junk()) if kind == "pre" else draw(_junk())
        elif kind == "step" and isinstance(doc.get("plan"), list):
            steps = doc["plan"]
            i = draw(st.integers(0, len(steps)))
            steps[i:i] = [draw(st.sampled_from([*(actions or ["x"]), "undefined", 3, None]) | _junk())]
        elif kind == "goal":
            doc["goal"] = draw(_CONDITIONS | _junk())
        elif kind == "unknown":
            doc[draw(_ODD_KEYS)] = draw(_junk())
        elif kind == "initial":
            doc["initial"] = draw(st.dictionaries(st.sampled_from(["gripper_open", "a"]) | _ODD_KEYS, _SCALARS))
    return doc


def cli_outcome(args: list[str], files: tuple[Path, ...]) -> str:
    """`safety-monitor ARGS` in process: exit 0 or 1, or 2 with one `safety-monitor CMD: error:` line naming one of
    `files` (or, for ctl, a predicate the trajectories lack); never a traceback."""
    from safety_monitor.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    text = err.getvalue()
    if "Traceback" in text or code not in (0, 1, 2):
        return f"leak:exit_{code}"
    if "internal error: " in text:  # the CLI's catch-all: an exception not meant for the user
        return f"leak:{text.split('internal error: ')[1].split(':')[0]}"
    if code == 2:
        if not text.startswith(f"safety-monitor {args[0]}: error: "):
            return "unnamed"
        if not any(str(f) in text for f in files) and "not recorded in the trajectories" not in text:
            return "unnamed"
        return "error"
    return f"exit_{code}"


_TRACE_VALUES = st.sampled_from(
    ["true", "false", "null", "1", "0", '"true"', "[]", "{}", "NaN", "1e309", "-0.0", "9" * 5000, "[" * 3000, '"x"']
)


@st.composite
def mutated_traces(draw: Callable) -> tuple[str, str]:
    """docs/verify.md's pick_1.jsonl and pick_2.jsonl with 1-4 line edits: lines dropped, duplicated, swapped,
    blanked or replaced by junk, a value or `t` replaced (wrong type, NaN, decreasing), a key renamed or
    removed, a BOM or CRLF line ends; each file's text."""
    files = [doc_file("verify.md", n).splitlines() for n in ("pick_1.jsonl", "pick_2.jsonl")]
    for _ in range(draw(st.integers(1, 4))):
        lines = files[draw(st.integers(0, 1))]
        kind = draw(st.sampled_from(["drop", "duplicate", "swap", "junk", "value", "t", "key", "empty", "blank"]))
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        if not lines or kind == "empty":
            lines.clear()
        elif kind == "drop":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "junk":
            lines[i] = draw(st.text(max_size=30) | _TRACE_VALUES | st.just('{"t": 0.0, "object_grasped": true'))
        elif kind == "blank":
            lines.insert(i, draw(st.sampled_from(["", "   ", "\t"])))
        else:
            try:
                obj = json.loads(lines[i])
            except ValueError:
                continue
            if not isinstance(obj, dict) or not obj:
                continue
            key = "t" if kind == "t" else draw(st.sampled_from(sorted(obj)))
            if kind == "key":
                value = obj.pop(key, None)
                new = draw(st.sampled_from(["", "Object_Grasped", "t", "a b", "object_grasped"]) | st.text(max_size=5))
                if draw(st.booleans()):
                    obj[new] = value
                lines[i] = json.dumps(obj)
            else:
                lines[i] = re.sub(rf'"{key}": [^,}}]*', lambda _: f'"{key}": {draw(_TRACE_VALUES)}', lines[i])
    texts = ["\n".join(lines) + "\n" for lines in files]
    if draw(st.integers(0, 5)) == 0:
        texts[0] = draw(st.sampled_from(["\ufeff", ""])) + texts[0].replace("\n", draw(st.sampled_from(["\r\n", "\r"])))
    return texts[0], texts[1]


CTL_FORMULAS = ("AG(object_grasped -> AF object_released)", "EF object_settled")
JSON_FORMULAS = (*CTL_FORMULAS, "AG(!object_settled)", "AF(object_released)")  # ctl --json: some that break


@st.composite
def json_traces(draw: Callable) -> tuple[str, str, str, str]:
    """`mutated_traces` for `ctl --json`, the files given as they are, the first twice, or the first also by another
    spelling of its path (`sub/../`): ("json", layout, first text, second text)."""
    return ("json", draw(st.sampled_from(["two", "two", "twice", "respelt"])), *draw(mutated_traces()))


def trace_arguments(files: tuple[Path, Path], layout: str) -> tuple[Path, ...]:
    """The command line's trace files for a `json_traces` layout."""
    first, second = files
    return {"two": (first, second), "twice": (first, second, first), "respelt": (first, second,
            first.parent / "sub" / ".." / first.name)}[layout]  # fmt: skip


def _ctl_json(files: tuple[Path, ...]) -> tuple[int, str, str]:
    from safety_monitor.cli import main

    args = ["ctl", *map(str, files), "--json", *[a for f in JSON_FORMULAS for a in ("--formula", f)]]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def ctl_json_outcome(files: tuple[Path, ...]) -> str:
    """`safety-monitor ctl FILES --json` with JSON_FORMULAS: an error as `cli_outcome` wants it, or JSON whose
    results are one per formula (exit 1 exactly when one is violated), and for each violated one `broken_by` names
    exactly the trajectories that break it alone (`ctl` on each file alone; an empty list when only several
    together do), once each, and 1 to PATHS_SHOWN `counterexamples` on trajectories of those (`where`), each
    decided at a frame its path holds."""
    from safety_monitor.cli.verify import PATHS_SHOWN

    code, out, err = _ctl_json(files)
    if "Traceback" in err or code not in (0, 1, 2) or "internal error: " in err:
        return "leak:ctl_json"
    if code == 2:  # one error line, after any warning (a file given twice)
        errors = [line for line in err.splitlines() if line.startswith("safety-monitor ctl: error: ")]
        named = len(errors) == 1 and (
            any(str(f) in errors[0] for f in files) or "not recorded in the trajectories" in errors[0]
        )
        return "error" if named else "unnamed"
    try:
        doc = json.loads(out)
        results = doc["results"]
    except (ValueError, KeyError, TypeError):
        return "malformed"
    if len(results) != len(JSON_FORMULAS) or (code == 1) != any(not r["holds"] for r in results):
        return "malformed"
    distinct = list(dict.fromkeys(f.resolve() for f in files))
    if doc["tree"]["trajectories"] != len(distinct):
        return "malformed"  # a file given twice is one trajectory
    files = tuple(dict((f.resolve(), f) for f in reversed(files)).values())[::-1]  # each first as given
    alone: list[list[bool] | None] = []
    for f in files:
        c, o, _ = _ctl_json((f,))
        alone.append([not r["holds"] for r in json.loads(o)["results"]] if c in (0, 1) else None)
    names = [str(f) for f in files]  # as the command line gives them
    for k, row in enumerate(results):
        if row["holds"]:
            if "broken_by" in row or "counterexamples" in row:
                return "malformed"
            continue
        broken, shown = row.get("broken_by"), row.get("counterexamples")
        if not isinstance(broken, list) or not isinstance(shown, list) or len(set(broken)) != len(broken):
            return "malformed"
        if not set(broken) <= set(names) or not 1 <= len(shown) <= PATHS_SHOWN:
            return "malformed"
        breakers = {n for n, a in zip(names, alone) if a is not None and a[k]}
        if None not in alone and set(broken) != breakers:
            return "malformed"
        for cx in shown:
            frames = [f["frame"] for f in cx["frames"]]
            if broken and not set(cx["where"]) <= set(broken):
                return "malformed"
            if frames != sorted(set(frames)) or cx["decided_at"] not in frames:
                return "malformed"
    return f"json_exit_{code}"


# --------------------------------------------------------------------- config keys and topic mappings
CONFIGS = ("thresholds", "robot", "topics")
_KEY_TYPOS = st.sampled_from(["typo", "case", "number", "boolean", "null", "long"])


@functools.cache
def _config_doc(which: str) -> Any:
    if which == "topics":
        more = {"/right/joint_states": {"prefix": "right/", "joint_names": {"grip": "right/finger"}}}
        return {
            "joint_states": "/arm/joint_states",
            "wrench": "/ft",
            "objects": {"mug": "/mug/pose"},
            "more_joint_states": more,
        }
    return yaml.safe_load((REPO / "config" / f"{which}.yaml").read_text())


def _misspelt(draw: Callable, key: Any) -> Any:
    kind = draw(_KEY_TYPOS)
    if kind == "typo":
        return _mutate(draw, str(key))
    if kind == "case":
        return str(key).upper()
    if kind == "long":
        return str(key)[:40] * draw(st.integers(50, 5000))  # at most 200 kB: PyYAML dumps 10 MB in seconds
    return {"number": draw(st.integers() | st.floats(allow_nan=False)), "boolean": True, "null": None}[kind]


@st.composite
def mutated_configs(draw: Callable) -> tuple[str, Any]:
    """config/thresholds.yaml, config/robot.yaml or a topic mapping file with 1-3 edits anywhere in its tree:
    a key misspelt, upper-cased, made a number, boolean or null or 50-5000 times longer; a value replaced by
    junk; a key deleted or added."""
    which = draw(st.sampled_from(CONFIGS))
    doc = copy.deepcopy(_config_doc(which))
    for _ in range(draw(st.integers(1, 3))):
        slots: list[tuple[dict, Any]] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for key, child in node.items():
                    slots.append((node, key))
                    walk(child)
            elif isinstance(node, list):
                for child in node:
                    walk(child)

        walk(doc)
        if not slots:
            break
        node, key = slots[draw(st.integers(0, len(slots) - 1))]
        kind = draw(st.sampled_from(["key", "key", "value", "drop", "add"]))
        if kind == "key":
            node[_misspelt(draw, key)] = node.pop(key)
        elif kind == "value":
            node[key] = draw(_junk())
        elif kind == "drop":
            del node[key]
        else:
            node[draw(_ODD_KEYS)] = draw(_junk())
    return which, doc


def config_outcome(which: str, path: Path) -> str:
    """The file's own loader: loaded, or a SafetyMonitorError naming the file."""
    from safety_monitor.grounding.description import load_robot_description
    from safety_monitor.grounding.thresholds import load_thresholds
    from safety_monitor.pipeline.assemble import StreamMapping

    load = {"thresholds": load_thresholds, "robot": load_robot_description, "topics": StreamMapping.parse}[which]
    try:
        load(str(path) if which == "topics" else path)
    except SafetyMonitorError as exc:
        return "error" if str(path) in str(exc) else "unnamed"
    return "loaded"


# ---------------------------------------------------------------------- a mobile base placed from TF
MOBILE_RATE = 25.0
MOBILE_FRAMES = 90  # 3.6 s: the arm lowered onto the table from frame 5, raised from frame 65
_UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])
_ODOM = np.array([0.5, 0.0, 0.0])  # map -> odom (/tf_static)
_CUBE = np.array([1.5, 0.85, 0.52])  # map -> cube_link: on the table
_LINKS = {"static": ("map", "odom"), "base": ("odom", "base_link"), "cube": ("map", "cube_link")}
MOBILE_MAPPING = {
    "joint_states": "/joint_states",
    "wrench": None,
    "world_frame": "map",
    "object_frames": {"cube": "cube_link"},
}
CUBE_POSE_TOPIC = "/cube/pose"  # edit `pose_topic`: the cube's pose on a PoseStamped topic (in the world frame)
CLEAN_BASE_Y = -0.3  # edit `clean`: the base's path, where its corners clear the table however it turns


@dataclasses.dataclass(frozen=True)
class TfEdit:
    """One reproducible change of the mobile base's recording or topic mapping. `kind`: drop (the link's transforms
    on frames lo..hi), rename (its parent or child from frame lo on), loop (one more transform, parent -> child, on
    frames lo..hi), stamp, quaternion or position (the link's, on frames lo..hi), duplicate (the link sent twice in
    one message, the copy moved), static_on_tf, or mapping (a key of the topic mapping set). Where the base stands:
    jump (its pose moved by an offset and turned about z on frames lo..hi: a flicker, or a reset held to the end),
    drift (each of its steps on frames lo..hi a fraction of the farthest a drive goes then, `BaseJump`: along x,
    along -y or in yaw; the place reached held after), jitter (its stamps moved by up to an amplitude), thresholds (a
    key of thresholds.yaml's base_jump section set, or the section). And clean (the arm raised throughout, the base
    0.3 m further from the table: a run that touches nothing) and pose_topic (the cube's pose on CUBE_POSE_TOPIC
    instead of its TF frame)."""

    kind: str
    params: tuple


def _mobile_messages(clean: bool = False) -> list[tuple[str, float, list[list[Any]], str]]:
    """(topic, log time, transforms [parent, child, position, quaternion, stamp] or joint positions, the link it
    carries: a key of _LINKS, or 'joints') of the intact
    recording: the base drives 0.4 m along odom's x past the table's side, its arm lowered onto it from frame 5
    (a forbidden contact from then until it is raised at frame 65); `clean`: the arm raised throughout, the base
    on a path further from the table."""
    raised, lowered = np.array((math.pi / 2, -0.8, 0.8, 0.0)), np.array((math.pi / 2, 0.0, 0.6, 0.0))
    out: list[tuple[str, float, list[list[Any]], str]] = [
        ("/tf_static", 4.9, [["map", "odom", _ODOM, _UPRIGHT, 0.0]], "static")
    ]
    for k in range(MOBILE_FRAMES):
        t = 5.0 + k / MOBILE_RATE
        share = 0.0 if clean else min(max((k - 5) / 10, 0.0), 1.0) - min(max((k - 65) / 10, 0.0), 1.0)
        arm = (1 - share) * raised + share * lowered + 1e-5 * math.sin(k)  # encoders are never bit-identical
        base = np.array([0.8 + 0.1 * k / MOBILE_RATE, CLEAN_BASE_Y if clean else 0.0, 0.0])
        out.append(("/tf", t - 0.002, [["odom", "base_link", base, _UPRIGHT, t - 0.002]], "base"))
        out.append(("/tf", t - 0.004, [["map", "cube_link", _CUBE, _UPRIGHT, t - 0.004]], "cube"))
        out.append(("/joint_states", t, [[t, arm]], "joints"))
    return out


def _frame_of(log_t: float) -> int:
    return max(0, round((log_t - 5.0) * MOBILE_RATE))  # (the static link: frame 0)


_PLACING = ("mapping", "clean", "pose_topic", "thresholds", "jump", "drift")  # not edits of the messages' links


def mobile_messages(edits: tuple[TfEdit, ...] = ()) -> list[tuple[str, float, list[list[Any]], str]]:
    """The recording's messages (`_mobile_messages`) with `edits` applied: the links' edits in their order, then
    where the base stands (jump, drift), from the stamps those gave it."""
    messages = copy.deepcopy(_mobile_messages(any(e.kind == "clean" for e in edits)))
    for edit in edits:
        kind, p = edit.kind, edit.params
        if kind == "static_on_tf":
            messages[0] = ("/tf", *messages[0][1:])
            continue
        if kind in _PLACING:
            continue
        which, lo, hi = p[0], p[1], p[2] if len(p) > 2 else MOBILE_FRAMES
        parent, child = _LINKS.get(which, ("", ""))
        rng = random.Random(p[4]) if kind == "jitter" else None
        for _, log_t, items, carries in messages:
            if carries != which or not lo <= _frame_of(log_t) <= hi:
                continue
            if kind == "loop":
                items.append([p[3], p[4], np.array(p[5]), _UPRIGHT, log_t])
                continue
            hits = [tr for tr in items if (tr[0], tr[1]) == (parent, child)]
            for tr in hits:
                if kind == "drop":
                    items.remove(tr)
                elif kind == "rename":
                    tr[0 if p[3] == "parent" else 1] = p[4]
                elif kind == "stamp":
                    tr[4] = {"zero": 0.0, "back": tr[4] - p[3], "ahead": tr[4] + p[3], "same": 5.0}[p[4]]
                elif kind == "jitter":
                    assert rng is not None
                    tr[4] += rng.uniform(-p[3], p[3])
                elif kind == "quaternion":
                    tr[3] = np.array(p[3])
                elif kind == "position":
                    tr[2] = np.array(p[3])
                elif kind == "duplicate":
                    items.append([tr[0], tr[1], tr[2] + np.array(p[3]), tr[3], tr[4]])
    rule = base_rule(edits)
    for edit in edits:
        if edit.kind in ("jump", "drift"):
            _move_base(messages, edit, rule)
    return messages


def _yaw(angle: float) -> np.ndarray:
    return np.array([math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)])


def _move_base(messages: list[tuple[str, float, list[list[Any]], str]], edit: TfEdit, rule: Any) -> None:
    """A `jump` or `drift` of the base's transforms (odom -> base_link). A drift's step from one transform to the
    next is `fraction` of what `rule` lets a drive go in the time between their stamps (along x or -y: that step
    in place of the drive's own; in yaw: that turn, the drive's step kept); the place reached stays after hi."""
    from safety_monitor.pipeline.tf import quaternion_multiply

    _, lo, hi, *rest = edit.params
    links = [
        (_frame_of(log_t), tr)
        for _, log_t, items, carries in messages
        if carries == "base"
        for tr in items
        if (tr[0], tr[1]) == _LINKS["base"]
    ]
    if edit.kind == "jump":
        offset, yaw = rest
        for k, tr in links:
            if lo <= k <= hi:
                tr[2], tr[3] = tr[2] + np.array(offset), quaternion_multiply(_yaw(yaw), tr[3])
        return
    fraction, direction = rest
    axis = np.array([1.0, 0.0, 0.0] if direction == "x" else [0.0, -1.0, 0.0])
    moved, turned = np.zeros(3), 0.0  # what the drift added so far (other edits' offsets kept)
    previous: tuple[int, float] | None = None  # the last link's frame and stamp
    for k, tr in links:
        if k >= lo and previous is not None:
            if k <= hi:
                dt = max(tr[4] - previous[1], 0.0)
                if direction == "yaw":
                    turned += fraction * (rule.noise_rad + rule.angular_speed_radps * dt)
                else:  # this step in place of the drive's own (0.1 m/s along x)
                    moved = moved + fraction * (rule.noise_m + rule.linear_speed_mps * dt) * axis
                    moved[0] -= 0.1 * (k - previous[0]) / MOBILE_RATE
            tr[2], tr[3] = tr[2] + moved, quaternion_multiply(_yaw(turned), tr[3])
        previous = (k, tr[4])


THRESHOLDS_FILE = REPO / "config" / "thresholds.yaml"


def thresholds_doc(edits: tuple[TfEdit, ...] = ()) -> Any:
    """config/thresholds.yaml with the `thresholds` edits applied to its base_jump section (key `base_jump`: the
    section itself; value '<drop>': the key removed)."""
    doc = yaml.safe_load(THRESHOLDS_FILE.read_text())
    for edit in edits:
        if edit.kind != "thresholds":
            continue
        key, value = edit.params
        node, key = (doc, key) if key == "base_jump" else (doc.get("base_jump"), key)
        if not isinstance(node, dict):
            continue
        if value == "<drop>":
            node.pop(key, None)
        else:
            node[key] = value
    return doc


def base_rule(edits: tuple[TfEdit, ...] = ()) -> Any:
    """The base_jump thresholds the edited file gives (the defaults where it gives none or is refused)."""
    from safety_monitor.errors import GroundingError
    from safety_monitor.grounding.thresholds import BaseJump, parse_thresholds

    try:
        return parse_thresholds(thresholds_doc(edits), "thresholds.yaml").base_jump
    except GroundingError:
        return BaseJump()


def write_mobile_bag(path: Path, edits: tuple[TfEdit, ...] = ()) -> Path:
    """The recording with `edits` applied (mapping and thresholds edits are files of their own: `mobile_mapping`,
    `thresholds_doc`)."""
    pose_topic = any(e.kind == "pose_topic" for e in edits)
    with BagWriter(path) as bag:
        for topic, log_t, items, _ in mobile_messages(edits):
            if topic == "/joint_states":
                ((t, arm),) = items
                bag.write_joint_state(topic, t, MOBILE_JOINTS, arm, np.zeros(len(MOBILE_JOINTS)))
                continue
            if pose_topic:
                for _, _, pos, q, stamp in [tr for tr in items if (tr[0], tr[1]) == _LINKS["cube"]]:
                    bag.write_pose(CUBE_POSE_TOPIC, stamp, Pose(pos, q), log_t=log_t)
                items = [tr for tr in items if (tr[0], tr[1]) != _LINKS["cube"]]
            if items:
                bag.write_tf(topic, [(a, b, Pose(pos, q), s) for a, b, pos, q, s in items], log_t=log_t)
    return path


def mobile_mapping(edits: tuple[TfEdit, ...] = ()) -> dict[str, Any]:
    """The topic mapping as a document, with the edits of kind `mapping` applied (value None: the key removed).
    No edit removes `world_frame`: the base kept where the model puts it is another configuration, no damage."""
    doc = copy.deepcopy(MOBILE_MAPPING)
    if any(e.kind == "pose_topic" for e in edits):
        doc["objects"], doc["object_frames"] = {"cube": CUBE_POSE_TOPIC}, {}
    for edit in edits:
        if edit.kind == "mapping":
            key, value = edit.params
            node = doc["object_frames"] if key == "cube" else doc
            if value is None:
                node.pop(key, None)
            else:
                node[key] = value
    return doc


def write_mobile_config(folder: Path, robot: Path, edits: tuple[TfEdit, ...] = ()) -> Path:
    """The topic mapping (folder/topics.yaml) and the robot's thresholds.yaml (beside `robot`) the edits give;
    returns the mapping's path. Replay keeps a grounder per robot file (`score._kept_grounder`): forgotten when
    thresholds.yaml changed, as a new process would read it."""
    from safety_monitor.replay import score

    topics = folder / "topics.yaml"
    write_text_doc(topics, mobile_mapping(edits))
    thresholds = robot.parent / "thresholds.yaml"
    before = thresholds.read_text() if thresholds.exists() else None
    write_text_doc(thresholds, thresholds_doc(edits))
    if thresholds.read_text() != before:
        score._kept_grounder.cache_clear()
    return topics


_RENAMES = {  # per link and end: the same frame spelt with a slash, frames no link has, or a frame its own parent
    ("base", "parent"): ["/odom", "odom2", "", " odom", "wheel_left", "base_link"],
    ("base", "child"): ["/base_link", "base_link2", "", "odom"],
    ("static", "parent"): ["/map", "map2", "", " map", "odom"],
    ("static", "child"): ["/odom", "odom2", "", "map"],
    ("cube", "parent"): ["/map", "map2", "", "cube_link"],
    ("cube", "child"): ["/cube_link", "cube2", "", "map"],
}  # (another link's frame would be a tree that is well-formed and elsewhere: no damage the monitor can tell)
_QUATERNIONS = st.sampled_from(
    [
        (0.0, 0.0, 0.0, 0.0),
        (math.nan, 0.0, 0.0, 1.0),
        (math.inf, 0.0, 0.0, 0.0),
        (1e-200, 0.0, 0.0, 0.0),
        (1e200, 0.0, 0.0, 0.0),
        (5e-324, 0.0, 0.0, 0.0),
        (1e-7, 0.0, 0.0, 0.0),
        (-1.0, 0.0, 0.0, 0.0),
    ]
)  # fmt: skip  (within float error of unit length normalised; beyond it dropped and said, as a pose topic's)
# around the tolerance: the upright quaternion scaled to a squared norm within QUATERNION_TOLERANCE of 1 (a float32
# driver's, 0.999 to 1.001 in norm, and nearly 0.01 off) or just beyond it; and a float32 quarter turn about z
_SQUARED_NORMS = (1 - 0.0101, 1 - 0.0099, 1 - 0.002, 1 + 0.002, 1 + 0.0099, 1 + 0.0101, 0.98, 1.02)
_NEAR_UNIT = st.sampled_from(
    [(math.sqrt(s), 0.0, 0.0, 0.0) for s in _SQUARED_NORMS]
    + [tuple(float(v) for v in np.array([math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)], dtype=np.float32))]
)
_POSITIONS = st.sampled_from(
    [
        (math.nan, 0.0, 0.0),
        (math.inf, 0.0, 0.0),
        (1e12, 0.0, 0.0),
        (-1e12, 0.0, 0.0),
        (0.0, 0.0, 1e300),
        (0.0, -1e9, 0.0),
    ]
)  # fmt: skip  (beyond the plausible: a base that is somewhere else is no damage the monitor can tell)
_MAPPING_EDITS = st.one_of(
    st.tuples(st.just("world_frame"), st.sampled_from(["base_link", "/base_link", "/map", "odom2", "cube_link"])),
    st.tuples(st.just("base_frame"), st.sampled_from(["map", "/map", "base_link", "/base_link", "cube_link", "odom", "wheel_left"])),
    st.tuples(st.just("cube"), st.sampled_from(["base_link", "/base_link", "map", "odom", "/cube_link", "cube_link/", None])),
)  # fmt: skip


@st.composite
def tf_edits(draw: Callable) -> tuple[TfEdit, ...]:
    """1-3 edits of the mobile base's recording or its topic mapping: the base's chain missing (a link dropped on
    some frames, a frame renamed), looping (a link back up the chain, a frame its own parent), stamped backwards,
    zero, repeated or ahead, NaN, infinite, zero, far from or near unit quaternions, implausible positions, a link
    sent twice in one message, the static link on /tf, and mapping keys naming the base frame as an object's, the
    world frame as the base frame, or frames nothing publishes; the cube's pose on a pose topic one time in four."""
    edits = [TfEdit("pose_topic", ())] if draw(st.integers(0, 3)) == 0 else []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(
            ["drop", "rename", "loop", "stamp", "quaternion", "position", "duplicate", "static_on_tf", "mapping"]
        ))  # fmt: skip
        which = draw(st.sampled_from(["base", "base", "static", "cube"]))
        lo = draw(st.sampled_from([0, 0, 10, 30, 50, 89]) | st.integers(0, MOBILE_FRAMES - 1))
        hi = lo + draw(st.sampled_from([0, 1, 5, 20, MOBILE_FRAMES]))
        if kind == "drop":
            params: tuple = (which, lo, hi)
        elif kind == "rename":
            end = draw(st.sampled_from(["parent", "child"]))
            params = (which, lo, hi, end, draw(st.sampled_from(_RENAMES[which, end])))
        elif kind == "loop":
            parent, child = draw(st.sampled_from(
                [("base_link", "odom"), ("base_link", "map"), ("map", "map"), ("odom", "odom"),
                 ("base_link", "base_link"), ("cube_link", "map"), ("odom", "map"), ("cube_link", "cube_link")]
            ))  # fmt: skip
            params = (which, lo, hi, parent, child, draw(st.sampled_from([(0.0, 0.0, 0.0), (0.3, 0.0, 0.0)])))
        elif kind == "stamp":
            params = (which, lo, hi, draw(st.sampled_from([0.01, 0.5, 3.0, 100.0])), draw(
                st.sampled_from(["zero", "back", "ahead", "same"])))  # fmt: skip
        elif kind == "quaternion":
            params = (which, lo, hi, draw(_QUATERNIONS | _NEAR_UNIT))
        elif kind == "position":
            params = (which, lo, hi, draw(_POSITIONS))
        elif kind == "duplicate":
            params = (which, lo, hi, draw(st.sampled_from([(0.0, 0.0, 0.0), (0.5, 0.0, 0.0)])))
        elif kind == "mapping":
            params = draw(_MAPPING_EDITS)
        else:
            params = ()
        edits.append(TfEdit(kind, params))
    return tuple(edits)


_BASE_JUMP_KEYS = ("linear_speed_mps", "angular_speed_radps", "noise_m", "noise_rad", "trust_after_s")
_THRESHOLD_VALUES = st.sampled_from([0, 0.0, 1e-9, 0.01, 0.5, 1.0, 10, 1e300, -1.0, math.nan, math.inf, "fast", None,
                                     True, [], "<drop>"])  # fmt: skip
# offsets of a jump: none of them takes the clean run's base towards the table (no y beyond its path), some just
# within a step's reach (0.05 m of noise and 2 m/s over 0.04 s: 0.13 m) and some just beyond
_JUMPS = st.sampled_from([(0.0, -0.5, 0.0), (-1.0, 0.0, 0.0), (0.3, -0.2, 0.0), (0.0, 0.0, 0.5), (5.0, -5.0, 0.0),
                          (0.1, 0.0, 0.0), (0.14, 0.0, 0.0), (0.0, 0.0, 0.0)])  # fmt: skip
_TURNS = st.sampled_from([0.0, 0.0, 0.2, 0.25, 1.0, math.pi])  # 0.1 rad of noise and 3 rad/s over 0.04 s: 0.22


@st.composite
def base_edits(draw: Callable) -> tuple[TfEdit, ...]:
    """Where the mobile base stands, in 1-3 edits of the recording (one time in two the clean one): its pose
    jumping away and back (a flicker shorter or longer than trust_after_s) or away for good (a reset), drifting in
    steps just under or over the limits, its stamps jittered, quaternions around the tolerance on the base's link or
    the cube's (its TF link, or its pose topic), and thresholds.yaml's base_jump section edited. The drifts under
    the limits go with the clean run only: a base that drifts is no damage the monitor can tell (docs/your_robot.md),
    and in the clean run it drifts away from anything it could touch."""
    clean = draw(st.booleans())
    edits = [TfEdit("clean", ())] if clean else []
    if draw(st.integers(0, 2)) == 0:
        edits.append(TfEdit("pose_topic", ()))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["jump", "jump", "drift", "drift", "jitter", "thresholds", "quaternion"]))
        lo = draw(st.sampled_from([0, 5, 30, 60, 88]) | st.integers(0, MOBILE_FRAMES - 1))
        hi = lo + draw(st.sampled_from([0, 1, 3, 12, 13, 30, MOBILE_FRAMES]))  # trust_after_s is 12.5 frames
        if kind == "jump":  # (from frame 0 on, a base elsewhere from the start: no jump, nothing to tell)
            params: tuple = ("base", max(lo, 1), hi, draw(_JUMPS), draw(_TURNS))
        elif kind == "drift":
            fractions = [0.5, 0.9, 0.97, 1.03, 1.1, 2.0] if clean else [1.03, 1.1, 2.0]
            params = ("base", lo, hi, draw(st.sampled_from(fractions)), draw(st.sampled_from(["x", "-y", "yaw"])))
        elif kind == "jitter":
            params = ("base", lo, hi, draw(st.sampled_from([0.001, 0.005, 0.019, 0.03])), draw(st.integers(0, 99)))
        elif kind == "thresholds":
            params = (draw(st.sampled_from((*_BASE_JUMP_KEYS, "base_jump"))), draw(_THRESHOLD_VALUES))
            if params[0] == "base_jump":
                params = ("base_jump", draw(st.sampled_from(["<drop>", None, [], "junk", {}, {"extra": 1}])))
        else:
            which = draw(st.sampled_from(["base", "cube"]))
            params = (which, lo, hi, draw(_NEAR_UNIT if which == "base" else _NEAR_UNIT | _QUATERNIONS))
        edits.append(TfEdit(kind, params))
    return tuple(edits)


def tf_outcome(
    bag: Path, robot: Path, topics: Path, references: dict[bool, BagResult], edits: tuple[TfEdit, ...] = ()
) -> str:
    """Replay as `safety-monitor replay BAG --robot ROBOT --topics TOPICS` does it: the configuration checked once
    (an error there must name the topic mapping's or the thresholds' file, on one line), then the bag scored against
    the intact one (`references[clean]`; `score_outcome`'s classes). A failure the mapping causes must be said up
    front, not blamed on the bag. Then `edits` tell what else must hold: every frame of the joint stream (no edit
    touches it) is counted, the estimator node's stage on the bag gives replay's frames and verdicts
    (`live_disagrees`), the base is never used while untrusted and its jumps are said as the rule has them
    (`base_outcome`), each quaternion beyond the tolerance is said and none within it (`quaternion_miscounted`), and
    a clean run opens no violation (`false_alarm`)."""
    from safety_monitor.pipeline.assemble import StreamMapping
    from safety_monitor.replay.score import check_config

    thresholds = robot.parent / "thresholds.yaml"
    try:
        config = ReplayConfig(robot=str(robot), mapping=StreamMapping.parse(str(topics)))
        check_config(config)
    except SafetyMonitorError as exc:
        named = str(topics) in str(exc) or str(thresholds) in str(exc)
        return "config_error" if named and "\n" not in str(exc) else "unnamed"
    reference = references[any(e.kind == "clean" for e in edits)]
    r = score_bag(bag, config)
    if not r.ok:
        return "unnamed" if "topic mapping" in r.error else _failure_class(bag, r.error)
    if malformed(r, reference):
        return "malformed"
    if r.frames != reference.frames:
        return "miscounted"
    watched = live_states(bag, config, r.rate_hz, watch_base=True)
    if watched.disagrees(r):
        return "live_disagrees"
    problem = base_outcome(watched, base_rule(edits), edits)
    if problem:
        return problem
    if r.issues.get(IssueKind.DENORMALIZED_QUATERNION, 0) != denormalized_written(edits):
        return "quaternion_miscounted"
    if reference is references[True] and any(o.violations for o in r.trace.outcomes):
        return "false_alarm"

    def counts(res: BagResult) -> list[tuple[int, int, int, int]]:
        return [(o.triggers, o.violations, o.violating_frames, o.blind_frames) for o in res.trace.outcomes]

    said = bool(r.issues) or set(r.warnings) != set(reference.warnings)  # (the intact bag's start-up is blind)
    if r.frames == reference.frames and counts(r) == counts(reference) and not said:
        return "ok_same"
    flagged = said or r.unknown_frames > reference.unknown_frames or r.stale_frames > reference.stale_frames
    safer = any(
        o.violations < o0.violations or o.violating_frames < o0.violating_frames
        for o, o0 in zip(r.trace.outcomes, reference.trace.outcomes)
    )
    if flagged:
        return "ok_flagged_safer" if safer else "ok_flagged"
    return "ok_silent_safer" if safer else "ok_silent_diff"


def denormalized_written(edits: tuple[TfEdit, ...]) -> int:
    """How many transforms and pose messages of the edited recording carry a finite quaternion beyond the tolerance
    (each dropped with a `denormalized_quaternion` issue), but for what is dropped before its quaternion is read: a
    frame given as its own parent, a pose with a value beyond the plausible."""
    from safety_monitor.pipeline.tf import denormalized, frame_id

    pose_topic = any(e.kind == "pose_topic" for e in edits)
    read = "cube" not in mobile_mapping(edits)["object_frames"]  # (else a mapping edit gave the cube a TF frame again)
    count = 0
    for topic, _, items, _ in mobile_messages(edits):
        if topic == "/joint_states":
            continue
        for parent, child, position, q in (tr[:4] for tr in items):
            q = np.asarray(q, dtype=float)
            if not np.isfinite(q).all() or denormalized(q) is None:
                continue
            if pose_topic and (parent, child) == _LINKS["cube"]:  # a value beyond the plausible is `nan` first
                count += read and bool(np.all(np.abs(np.concatenate([position, q])) < 1e9))
            else:
                count += frame_id(parent) != frame_id(child)
    return count


# ------------------------------------------------------ the estimator node's stage on a bag, and a base's trust
class LiveRun:
    """What the estimator node and the monitor node made of a bag (`live_states`): the stage's samples and issues
    by kind, the rollouts and events the Supervisor finished with, its frames' timeline; and, watching the base,
    the calls the assemblers took (`base_calls`)."""

    def __init__(self, predicates: tuple[str, ...]) -> None:
        from safety_monitor.replay.timeline import Timeline

        self.samples: list[PredicateSample] = []
        self.arrivals: list[float] = []  # each sample's joint message's log time
        self.first_heard: dict[str, float] = {}  # per topic merged by name, the log time of its first message
        self.issues: dict[str, int] = {}
        self.rollouts: list[Any] = []
        self.events: list[Any] = []
        self.timeline = Timeline(predicates)
        self.base_calls: list[tuple] = []

    def count(self, issues: tuple[Any, ...]) -> None:
        for issue in issues:
            if issue.kind is not IssueKind.UNSENT:  # a warning in replay's report
                self.issues[issue.kind] = self.issues.get(issue.kind, 0) + 1

    def disagrees(self, r: BagResult) -> bool:
        """Whether replay's result `r` (no markers) has other frames, predicate values, counts or issues."""
        outcomes = pool_rollouts(self.rollouts).outcomes if self.rollouts else ()

        def counts(os: Any) -> list[tuple[int, int, int, int]]:
            return [(o.triggers, o.violations, o.violating_frames, o.blind_frames) for o in os]

        def stopped(issues: dict[str, int]) -> dict[str, int]:
            """Issues by kind, a `predicates_gap` counted as `stream_stopped`: where the predicates stop for good, the
            live watchdog says a gap when it sees one, replay a stop or a gap from the bag's end (the same blind
            frames; not fixed)."""
            out = {k: n for k, n in issues.items() if k != IssueKind.PREDICATES_GAP}
            gaps = issues.get(IssueKind.PREDICATES_GAP, 0)
            return {**out, IssueKind.STREAM_STOPPED: out.get(IssueKind.STREAM_STOPPED, 0) + gaps} if gaps else out

        assert r.timeline is not None and r.trace is not None
        self.timeline.close()
        return (
            self.timeline.to_json() != r.timeline.to_json()
            or counts(outcomes) != counts(r.trace.outcomes)
            or stopped(self.issues) != stopped(r.issues)
        )


@contextlib.contextmanager
def _watching_base(calls: list[tuple]) -> Iterator[None]:
    """Every FrameAssembler made meanwhile records into `calls`: ('new',) when made, ('base', pose, stamp, received)
    for each base pose it takes, ('frame', t) for each frame it makes."""
    from safety_monitor.pipeline.assemble import FrameAssembler

    init, base, joints = FrameAssembler.__init__, FrameAssembler.on_base_sample, FrameAssembler.on_joint_sample

    def made(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(("new",))
        init(self, *args, **kwargs)

    def based(self: Any, pose: Pose, stamp: float, received: float | None = None) -> None:
        calls.append(("base", pose, stamp, received))
        base(self, pose, stamp, received)

    def framed(self: Any, sample: Any, received: float | None = None) -> Any:
        frame = joints(self, sample, received)
        if frame is not None:
            calls.append(("frame", frame.state.t))
        return frame

    FrameAssembler.__init__, FrameAssembler.on_base_sample, FrameAssembler.on_joint_sample = made, based, framed
    try:
        yield
    finally:
        FrameAssembler.__init__, FrameAssembler.on_base_sample, FrameAssembler.on_joint_sample = init, base, joints


def live_states(bag: Path, config: ReplayConfig, rate_hz: float | None, watch_base: bool = False) -> LiveRun:
    """The estimator node's stage on the bag's messages in log order, as its subscriptions hand them over (a decoder
    per topic; a slower stream's arrival time only where the stage asks for it, a joint message's always), at the
    control rate replay measured (the node's parameter), and its samples to the Supervisor as the monitor node
    drives it (`live_rollouts`: on arrival, the watchdog ticked between them, finished at the bag's end). The
    grounder is replay's kept one, restarted: a MuJoCo model compiled for each input grew a campaign's address
    space past its limit (6 GiB after 340 inputs: "Could not allocate memory")."""
    from safety_monitor.pipeline.assemble import JOINTS, WRENCH, pose_stream
    from safety_monitor.pipeline.decode import MessageType, Undecodable, decoder
    from safety_monitor.pipeline.estimator import Estimator
    from safety_monitor.pipeline.inputs import TF
    from safety_monitor.pipeline.supervisor import Supervisor
    from safety_monitor.replay.names import absolute_mapping
    from safety_monitor.replay.score import bag_grounder, make_monitor

    assert rate_hz is not None
    mapping = absolute_mapping(config.mapping, config.namespace)
    monitor = make_monitor(config, rate_hz)
    run = LiveRun(monitor.predicates)
    get = operator.itemgetter(*monitor.predicates)
    blind = (None,) * len(monitor.predicates)

    def stepped(valuation: Any, t: float, stale: frozenset[str]) -> None:
        run.timeline.add(blind if valuation is None else get(valuation), t)

    def take(step: Any) -> None:
        run.count(step.issues)
        run.events.extend(step.events)
        run.rollouts.extend(step.finished)

    watching = _watching_base(run.base_calls) if watch_base else contextlib.nullcontext()
    with watching, BagReader(bag) as reader:
        grounder = bag_grounder(config.robot, rate_hz, mapping)  # (replay's, restarted: a fresh one's state)
        stage = Estimator(grounder, mapping, config.estimator)
        supervisor = Supervisor(monitor, config.monitor, on_frame=stepped)
        routes: dict[str, tuple[str, Any]] = {mapping.joint_states: ("joints", None)}
        if mapping.wrench:
            routes[mapping.wrench] = ("wrench", None)
        if mapping.gripper_joint_states:
            routes[mapping.gripper_joint_states] = ("more", None)
        routes.update((more.topic, ("more", more.topic)) for more in mapping.more_joint_states)
        routes.update(
            (mapping.pose_topic(name), ("pose", name)) for name in grounder.robot.objects if name not in mapping.object_frames
        )  # fmt: skip
        if mapping.object_frames or mapping.world_frame:
            routes.update((topic, ("tf", None)) for topic in (mapping.tf, mapping.tf_static))
        kinds = {"joints": MessageType.JOINT_STATE, "more": MessageType.JOINT_STATE, "wrench": MessageType.WRENCH_STAMPED,
                 "pose": MessageType.POSE_STAMPED, "tf": MessageType.TF_MESSAGE}  # fmt: skip
        decoders: dict[str, Any] = {}
        last = None
        for topic, msgtype, t_ns, raw in reader.raw_messages(set(routes)):
            now = t_ns / 1e9
            while last is not None and now - last > TICK_S:
                last += TICK_S
                take(supervisor.tick(last))
            last = now
            kind, key = routes[topic]
            read = decoders.get(topic)
            if read is None:
                read = decoders[topic] = decoder(kinds[kind], lambda raw, t=msgtype: reader.deserialize(raw, t))
            stream = {"joints": JOINTS, "wrench": WRENCH, "tf": TF, "pose": pose_stream(key or "")}.get(kind, topic)
            try:
                value = read(raw)
            except Undecodable as exc:
                run.count(stage.undecodable(stream, now, exc).issues)
                continue
            needs = stage.assembler.needs_arrival  # (a restart makes a new assembler)
            if kind == "more":
                run.first_heard.setdefault(topic, now)
            if kind == "joints":
                step = stage.joints(value, now)
                if step.sample is not None:
                    run.samples.append(step.sample)
                    run.arrivals.append(now)
                    run.count(step.issues)
                    take(supervisor.sample(step.sample, now))
                    continue
            elif kind == "more":
                step = stage.more_joints(key, value, now if needs(value.stamp) else None)
            elif kind == "wrench":
                step = stage.wrench(*value, now if needs(value[1]) else None)
            elif kind == "pose":
                step = stage.pose(key, *value, now if needs(value[1]) else None)
            else:
                step = stage.transforms(value, now if any(needs(tr[3]) for tr in value) else None)
            run.count(step.issues)
        run.count(stage.finish().issues)
        take(supervisor.finish(reader.end_time))
    return run


def base_outcome(run: LiveRun, rule: Any, edits: tuple[TfEdit, ...] = ()) -> str:
    """The base's pose judged as docs/your_robot.md has it, from the poses the assemblers took (`run.base_calls`): a
    step beyond `rule` (BaseJump) from the last pose taken is a jump, said once (`base_jump`) unless the base is
    untrusted already; it stays untrusted until a plausible step comes `trust_after_s` after the last jump, and on
    the next frame at least. '' when the run agrees; `untrusted_known` when a frame had a predicate the twin's
    geometry decides known while the base was untrusted, `jump_miscounted` when the jumps said are not the rule's,
    `drift_judged_jump` when steps all under the limits (a drift, alone or with a clean run's) were judged one."""
    from safety_monitor.grounding import joint_limits
    from safety_monitor.pipeline.tf import denormalized, rotation_between

    joint_limit_predicates = set(joint_limits.DOCS)
    last: tuple[np.ndarray, np.ndarray, float] | None = None
    doubted: float | None = None
    unseen = False
    jumps = 0
    untrusted: list[bool] = []  # per frame
    for call in run.base_calls:
        if call[0] == "new":
            last, doubted, unseen = None, None, False
        elif call[0] == "frame":
            untrusted.append(doubted is not None or unseen)
            unseen = False
        else:
            _, pose, stamp, received = call
            stamp = received if stamp == 0.0 and received is not None else stamp
            position, q = np.asarray(pose.position, dtype=float), np.asarray(pose.quaternion, dtype=float)
            values = np.concatenate([position, q])
            if not (np.isfinite(values).all() and np.abs(values).max() < 1e9) or denormalized(q) is not None:
                continue
            if last is not None and stamp <= last[2]:
                continue
            if last is not None:
                dt = stamp - last[2]
                moved, turned = math.dist(position.tolist(), last[0].tolist()), rotation_between(last[1], q)
                if (
                    moved <= rule.noise_m + rule.linear_speed_mps * dt
                    and turned <= rule.noise_rad + rule.angular_speed_radps * dt
                ):
                    if doubted is not None and stamp - doubted >= rule.trust_after_s:
                        doubted = None
                else:
                    jumps += doubted is None
                    unseen = unseen or doubted is None
                    doubted = stamp
            last = (position, q, stamp)
    if len(untrusted) != len(run.samples):
        return "base_calls_miscounted"
    for sample, doubt in zip(run.samples, untrusted):
        if doubt and (set(sample.values) - joint_limit_predicates) - set(sample.unknown):
            return "untrusted_known"
    if run.issues.get(IssueKind.BASE_JUMP, 0) != jumps:
        return "jump_miscounted"
    kinds = {e.kind for e in edits}
    drifts = [e for e in edits if e.kind == "drift"]
    if jumps and kinds <= {"clean", "drift", "pose_topic"} and len(drifts) == 1 and drifts[0].params[3] < 1:
        return "drift_judged_jump"
    return ""


# --------------------------------------------------------- each arm's JointState on a topic of its own
ARM_TOPICS = {"left": "/puppet_left/joint_states", "right": "/puppet_right/joint_states"}  # ALOHA's drivers' topics
ARM_WINDOW = slice(400, 700)  # test_two_arms' handover from 9 s to 15 s: the left closes on the bar, both hold
# it, the right lets go, the left carries it off (a clean run: each stack opens no violation)
ARM_RATE = 50.0


@dataclasses.dataclass(frozen=True)
class ArmEdit:
    """One reproducible change of the two arms' recording (each arm's JointState on its own topic, names without
    the arm's prefix) or of its topic mapping. `kind`: delay (the `arm`'s messages on frames lo..hi logged `d` s
    after their stamp: before the left's, with it, after it, a frame or more late, out of order), drop (its messages
    on frames lo..hi: a topic stopping, and restarting after hi), stamp (its stamps on frames lo..hi moved `d` s: back
    behind the other topic's or its own, far back as a restarted driver's, or ahead), names (its messages on frames
    lo..hi named otherwise: a name twice, none, one renamed to a joint of the other arm or to nothing, the list
    cut), value (a position NaN, infinite or beyond the plausible), restart (both topics' stamps from frame lo
    on `d` s back, the recording going on: a simulator restarted), mapping (a key of the topic mapping set: the
    prefixes, a topic's joint_names, the topics swapped)."""

    kind: str
    params: tuple


def _arm_messages(states: tuple[RobotState, ...]) -> list[list[Any]]:
    """[topic, log time, stamp, names, positions, arm, frame] per message, the right's 2 ms before the left's, the
    bar's pose 4 ms before (arm 'bar', names None, positions its Pose), in log order."""
    out: list[list[Any]] = []
    for k, state in enumerate(states):
        out.append(["/objects/bar/pose", state.t - 0.004, state.t - 0.004, None, state.object_poses["bar"], "bar", k])
        names, q = state.joint_names, state.joint_position
        for arm, t in (("right", state.t - 0.002), ("left", state.t)):
            mine = [i for i, n in enumerate(names) if n.startswith(f"{arm}/")]
            unprefixed = [names[i].removeprefix(f"{arm}/") for i in mine]
            out.append([ARM_TOPICS[arm], t, t, unprefixed, [float(q[i]) for i in mine], arm, k])
    return out


def arm_messages(states: tuple[RobotState, ...], edits: tuple[ArmEdit, ...]) -> list[list[Any]]:
    """The messages with `edits` applied (mapping edits are the topic mapping's: `arm_topics_mapping`)."""
    messages = _arm_messages(states)
    for edit in edits:
        kind, p = edit.kind, edit.params
        if kind == "mapping":
            continue
        if kind == "restart":
            lo, d = p
            for msg in messages:
                if msg[6] >= lo:
                    msg[2] -= d
            continue
        arm, lo, hi, *rest = p
        hits = [msg for msg in messages if msg[5] == arm and lo <= msg[6] <= hi]
        for msg in hits:
            if kind == "delay":  # (from when it was sent: a restart's stamps gone back are no log times)
                msg[1] += rest[0]
            elif kind == "drop":
                messages.remove(msg)
            elif kind == "stamp":
                msg[2] += rest[0]
            elif kind == "names":
                msg[3], msg[4] = _renamed(msg[3], msg[4], rest[0])
            elif kind == "value":
                msg[4] = [rest[0] if i == 0 else v for i, v in enumerate(msg[4])]
    return messages


def _renamed(names: list[str], positions: list[float], how: str) -> tuple[list[str], list[float]]:
    if not names or not positions:  # (emptied by an edit before)
        return names, positions
    if how == "twice":
        return [*names, names[0]], [*positions, positions[0]]
    if how == "none":
        return [], positions
    if how == "cut":
        return names, positions[:-1]
    if how == "empty":
        return [], []
    return [how, *names[1:]], positions  # the first renamed: another arm's, prefixed already, or nothing's


def write_arm_topics_bag(path: Path, states: tuple[RobotState, ...], edits: tuple[ArmEdit, ...] = ()) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    with BagWriter(path) as writer:
        for topic, log_t, stamp, names, values, arm, _ in sorted(arm_messages(states, edits), key=lambda m: m[1]):
            if arm == "bar":
                writer.write_pose(topic, stamp, values, log_t=log_t)
            else:
                zeros = [0.0] * len(values)
                writer.write_joint_state(topic, stamp, names, values, zeros, zeros, log_t=log_t)
    return path


def write_one_topic_bag(path: Path, states: tuple[RobotState, ...]) -> Path:
    """The same readings on one /joint_states named `left/waist`, ..., stamped as the left's: the reference."""
    shutil.rmtree(path, ignore_errors=True)
    with BagWriter(path) as writer:
        for state in states:
            writer.write_pose("/objects/bar/pose", state.t - 0.004, state.object_poses["bar"])
            q = list(state.joint_position)
            writer.write_joint_state(
                "/joint_states", state.t, list(state.joint_names), q, [0.0] * len(q), [0.0] * len(q)
            )
    return path


ARM_MAPPING = {
    "joint_states": ARM_TOPICS["left"],
    "joint_prefix": "left/",
    "more_joint_states": {ARM_TOPICS["right"]: {"prefix": "right/"}},
    "wrench": None,
}
_ARM_JOINTS_SENT = ("waist", "shoulder", "elbow", "wrist_angle", "left_finger", "right_finger")


def arm_topics_mapping(edits: tuple[ArmEdit, ...] = ()) -> dict[str, Any]:
    """The topic mapping as a document with the `mapping` edits: (key, value) for a top key (`joint_prefix`,
    `joint_names`), ('right', key, value) for the right topic's entry (value None: the key removed), ('swap',):
    the right topic makes the frames and the left's is merged, or ('relative',): the topics without their `/`."""
    doc = copy.deepcopy(ARM_MAPPING)
    right = doc["more_joint_states"][ARM_TOPICS["right"]]
    for edit in edits:
        if edit.kind != "mapping":
            continue
        p = edit.params
        if p == ("swap",):
            doc["joint_states"], doc["joint_prefix"] = ARM_TOPICS["right"], right.get("prefix", "")
            doc["more_joint_states"] = {ARM_TOPICS["left"]: {"prefix": "left/"}}
            right = doc["more_joint_states"][ARM_TOPICS["left"]]
        elif p == ("relative",):
            doc["joint_states"] = doc["joint_states"].lstrip("/")
            doc["more_joint_states"] = {t.lstrip("/"): e for t, e in doc["more_joint_states"].items()}
        elif p[0] == "right":
            if p[2] is None:
                right.pop(p[1], None)
            else:
                right[p[1]] = p[2]
        elif p[1] is None:
            doc.pop(p[0], None)
        else:
            doc[p[0]] = p[1]
    return doc


_ARM_RENAMES = ["right/waist", "left/waist", "waist ", "Waist", "", "wrist_rotate", "left_finger"]
_ARM_MAPPING_EDITS = st.one_of(
    st.just(("swap",)),
    st.just(("relative",)),
    st.tuples(st.just("joint_prefix"), st.sampled_from(["", "right/", "left", "left/left/", None])),
    st.tuples(st.just("right"), st.just("prefix"), st.sampled_from(["", "left/", "right", "Right/", "right/", None])),
    st.tuples(st.just("right"), st.just("joint_names"), st.one_of(
        st.just({n: f"right/{n}" for n in _ARM_JOINTS_SENT}),  # each name given: the prefix's own
        st.dictionaries(st.sampled_from(_ARM_JOINTS_SENT), st.sampled_from(
            ["left/waist", "left/right_finger", "right/waist", "nope"]), min_size=1, max_size=2),
    )),
    st.tuples(st.just("joint_names"), st.sampled_from([{"waist": "right/waist"}, {"waist": "left/waist"}])),
)  # fmt: skip


@st.composite
def arm_topic_edits(draw: Callable) -> tuple[str, tuple[ArmEdit, ...]]:
    """The stack that reads it ('left' or 'right' arm's description) and 1-3 edits of the two arms' recording or its
    topic mapping (`ArmEdit`); one time in four only the order of the messages changed, the topic mapping named
    otherwise but alike, or both."""
    arm = draw(st.sampled_from(["left", "right"]))
    frames = ARM_WINDOW.stop - ARM_WINDOW.start
    if draw(st.integers(0, 3)) == 0:  # alike: the frames and verdicts of the one prefixed topic
        edits = [ArmEdit("delay", ("right", 0, frames, draw(st.sampled_from([-0.002, -0.01, -0.015]))))]
        if draw(st.booleans()):
            edits.append(ArmEdit("mapping", draw(st.sampled_from([("relative",), ("right", "joint_names", {
                n: f"right/{n}" for n in _ARM_JOINTS_SENT})]))))  # fmt: skip
        return arm, tuple(edits)
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["delay", "drop", "drop", "stamp", "names", "value", "restart", "mapping"]))
        side = draw(st.sampled_from(["right", "right", "left"]))
        lo = draw(st.sampled_from([0, 0, 100, 150, 299]) | st.integers(0, frames - 1))
        hi = lo + draw(st.sampled_from([0, 1, 10, 24, 26, 60, frames]))  # joint_held is 25 frames
        if kind == "delay":
            params: tuple = (side, lo, hi, draw(st.sampled_from([-0.03, 0.0, 0.001, 0.02, 0.1, 1.0])))
        elif kind == "drop":
            params = (side, lo, hi)
        elif kind == "stamp":
            params = (side, lo, hi, draw(st.sampled_from([-0.001, -0.03, -0.5, -3.0, -100.0, 0.05, 2.0])))
        elif kind == "names":
            params = (side, lo, hi, draw(st.sampled_from(["twice", "none", "cut", "empty", *_ARM_RENAMES])))
        elif kind == "value":
            params = (side, lo, hi, draw(st.sampled_from([math.nan, math.inf, -math.inf, 1e12, 1e308])))
        elif kind == "restart":
            params = (lo, draw(st.sampled_from([0.5, 3.0, 8.9, 100.0])))
        else:
            params = draw(_ARM_MAPPING_EDITS)
        edits.append(ArmEdit(kind, params))
    return arm, tuple(edits)


def _alike(edits: tuple[ArmEdit, ...]) -> bool:
    """Whether the edits leave the recording and mapping what the one prefixed topic is: the right's messages still
    before the left's of the same frame, topics and names spelt otherwise alike."""
    return all(  # (logged more than 18 ms early, before the left's message of the frame before)
        (e.kind == "delay" and e.params[0] == "right" and -0.018 < e.params[3] < 0)
        or (e.kind == "mapping" and (e.params == ("relative",) or (e.params[:2] == ("right", "joint_names")
            and e.params[2] == {n: f"right/{n}" for n in _ARM_JOINTS_SENT})))
        for e in edits
    )  # fmt: skip


def arm_topics_outcome(bag: Path, robot: Path, topics: Path, reference: BagResult, edits: tuple[ArmEdit, ...]) -> str:
    """Replay as `safety-monitor replay BAG --robot ROBOT --topics TOPICS` does it (`tf_outcome`'s configuration
    check: an error naming the topic mapping's file), then the bag scored: an error naming the bag, or a result
    that is well-formed, that the estimator node's stage gives too (`live_disagrees`), with a frame for every left
    message sent unless an issue said why not (`miscounted`), every frame stale before each topic merged by name has
    sent (`unseen_arm_judged`), no violation (`false_alarm`: the handover is clean, whatever restarted or was dropped:
    a grounder restarted mid-handover judges what it has not seen unknown, and a judged arm's joints are held no
    longer than their own periods allow), and,
    where the edits change nothing but the messages' order and the mapping's spelling, the frames and verdicts
    of the one prefixed topic (`reference`) and no issue (`changed_silently` otherwise)."""
    from safety_monitor.pipeline.assemble import StreamMapping
    from safety_monitor.replay.names import absolute_mapping
    from safety_monitor.replay.score import check_config

    try:
        config = ReplayConfig(robot=str(robot), mapping=StreamMapping.parse(str(topics)), rate_hz=ARM_RATE)
        check_config(config)
    except SafetyMonitorError as exc:
        return "config_error" if str(topics) in str(exc) and "\n" not in str(exc) else "unnamed"
    r = score_bag(bag, config)
    if not r.ok:
        return "unnamed" if "\n" in r.error else _failure_class(bag, r.error)
    if malformed(r, reference):
        return "malformed"
    live = live_states(bag, config, r.rate_hz)
    if live.disagrees(r):
        return "live_disagrees"
    merged = [m.topic for m in absolute_mapping(config.mapping).more_joint_states]
    heard = max((live.first_heard.get(t, math.inf) for t in merged), default=-math.inf)
    if any(now < heard and "joint_states" not in s.stale for s, now in zip(live.samples, live.arrivals)):
        return "unseen_arm_judged"  # an arm whose topic has sent nothing yet stood where the model draws it
    sent, said = r.topics[absolute_mapping(config.mapping).joint_states].count, sum(r.issues.values())
    if not sent - said <= r.frames <= sent + said:
        return "miscounted"  # (a frame more: the streams stopped before the bag's end, said as `stream_stopped`)
    if any(o.violations for o in r.trace.outcomes):
        return "false_alarm"
    if _alike(edits):
        assert r.timeline is not None and reference.timeline is not None
        if r.issues or r.warnings or r.frames != reference.frames or r.timeline.runs != reference.timeline.runs:
            return "changed_silently"
        return "ok_same"
    return "ok_flagged" if r.issues or r.warnings else "ok_quiet"


# ------------------------------------------------------------- two arms: other_arms, ignored joints, entities
_ARM_BODIES = ["right/base_link", "left/base_link", "table", "right/gripper_base", "right/left_finger_link", "bar",
               "nope", "", "world", "Right/base_link"]  # fmt: skip
_ARM_JOINTS = ["right/waist", "left/waist", "left/right_finger", "right/right_finger", "right/left_finger",
               "left/left_finger", "nope", "", "right/elbow"]  # fmt: skip
_ENTITY_VALUES = st.sampled_from(
    ["block", ["block"], {"kind": "block"}, {"properties": ["graspable"]}, "blok", "", "table", [], {}, ["block", "table"],
     [["block"]], "other_arm"]
) | _SCALARS  # fmt: skip
_ENTITY_KEYS = (
    st.sampled_from(["bar", "table", "other_arm", "arm", "finger_left", "environment", "", "nope"]) | _ODD_KEYS
)


@st.composite
def arm_configs(draw: Callable) -> tuple[str, tuple[tuple[str, Any, Any], ...]]:
    """The left arm's description of test_two_arms' ALOHA (`two_arm_run.describe`) with 1-3 edits: `other_arms` and
    `ignored_joints` given bodies and joints of either arm (its own included), names nothing has, duplicates or
    values of other shapes, or an ignored joint dropped; objects.yaml's `entities` given lists, mappings, kinds
    misspelt or values of any shape, under any key. Returns (file, edits: (section, key, value))."""
    which = draw(st.sampled_from(["robot", "robot", "objects"]))
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        if which == "objects":
            edits.append(("entities", draw(_ENTITY_KEYS), draw(_ENTITY_VALUES)))
            continue
        key = draw(st.sampled_from(["other_arms", "ignored_joints", "drop_ignored"]))
        names = _ARM_BODIES if key == "other_arms" else _ARM_JOINTS
        value = draw(st.lists(st.sampled_from(names), max_size=3) | _junk()) if key != "drop_ignored" else draw(
            st.integers(0, 20))  # fmt: skip
        edits.append((key, None, value))
    return which, tuple(edits)


def write_arm_config(folder: Path, described: dict[str, Path], item: tuple[str, tuple]) -> Path:
    """The left arm's files copied to `folder` with `item`'s edits; returns its robot.yaml."""
    which, edits = item
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(described["left"].parent, folder)
    shutil.copy(described["left"].parent.parent / "aloha.xml", folder.parent / "aloha.xml")
    path = folder / ("robot.yaml" if which == "robot" else "objects.yaml")
    doc = yaml.safe_load(path.read_text())
    for section, key, value in edits:
        if section == "entities":
            doc.setdefault("entities", {})[key] = value
        elif section == "drop_ignored":
            joints = doc.get("ignored_joints")
            if isinstance(joints, list) and joints:
                joints.pop(value % len(joints))
        else:
            doc[section] = value
    write_text_doc(path, doc)
    return folder / "robot.yaml"


def arm_outcome(robot: Path, states: tuple[RobotState, ...]) -> str:
    """The grounder built from the edited files: an error naming robot.yaml or objects.yaml on one line, or one
    that grounds the two-arm frames (a frame it rejects is a GroundingError, as the estimator reports it)."""
    from safety_monitor.errors import GroundingError
    from safety_monitor.grounding.grounder import load_default_grounder

    try:
        grounder = load_default_grounder(50.0, robot, wrench_sensor=False)
    except SafetyMonitorError as exc:
        text = str(exc)
        named = any(str(robot.parent / f) in text for f in ("robot.yaml", "objects.yaml"))
        return "error" if named and "\n" not in text else "unnamed"
    rejected = 0
    for state in states:
        try:
            grounder.step(state)
        except GroundingError:
            rejected += 1
    return "grounded" if not rejected else "frames_rejected"


# ------------------------------------------------------------------------------------ grounder differential
GROUNDER_RATE = 500.0  # the scripted episodes' control rate
GROUNDER_EPISODES = (  # (task, fault): every scripted task and fault, as benchmarks/check_identical.py grounds them
    *((t, None) for t in TASKS),
    *((None, f) for f in FAULTS),
)


class GrounderRobot(enum.StrEnum):
    """The robot and control rate whose own runs a GrounderCase's window is cut from (thresholds in seconds scale
    with the rate: every count, window and persistence)."""

    WORKCELL = "workcell"  # the default workcell at 500 Hz: every scripted task and fault (GROUNDER_EPISODES)
    WORKCELL_100 = "workcell_100"  # the same episodes, every 5th control step, grounded at 100 Hz
    WORKCELL_50 = "workcell_50"  # every 10th, at 50 Hz
    MOBILE = "mobile"  # test_mobile_base's base past the table at 25 Hz (its pose each frame), arm raised or lowered
    URDF = "urdf"  # urdf_robots' 7-joint arm with two fingers and meshes: a pick and place, then the drawer, 50 Hz
    URDF_100 = "urdf_100"  # the same at 100 Hz
    NO_GRIPPER = "no_gripper"  # urdf_robots' arm without gripper or wrench sensor: its tool on the cube, 50 Hz
    LEFT_ARM = "left_arm"  # two_arm_run's handover at 50 Hz, grounded by the left arm's stack (other_arms)
    RIGHT_ARM = "right_arm"  # the same, by the right arm's


_WORKCELL_STRIDES = {GrounderRobot.WORKCELL: 1, GrounderRobot.WORKCELL_100: 5, GrounderRobot.WORKCELL_50: 10}


@dataclasses.dataclass(frozen=True)
class GrounderSetup:
    """How a GrounderRobot's grounder is built: `load_default_grounder(rate_hz, **arguments())`, in either tree."""

    rate_hz: float
    config: str | None  # its robot.yaml; None: the package's workcell
    wrench_sensor: bool = True
    mobile_base: bool = False

    def arguments(self) -> dict[str, Any]:
        return {"config": self.config, "wrench_sensor": self.wrench_sensor, "mobile_base": self.mobile_base}

    def build(self) -> Any:
        from safety_monitor.grounding.grounder import load_default_grounder

        return load_default_grounder(self.rate_hz, **self.arguments())


@functools.cache
def _robots_folder() -> Path:
    """Where the robots' files are written, once per process (removed at its exit)."""
    import atexit
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="fuzz_grounder_robots_"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.cache
def grounder_setup(robot: GrounderRobot) -> GrounderSetup:
    """`robot`'s grounder, its files written into `_robots_folder()` (the baseline tree reads the same)."""
    from urdf_robots import write_robot

    folder = _robots_folder()
    if robot in _WORKCELL_STRIDES:
        return GrounderSetup(GROUNDER_RATE / _WORKCELL_STRIDES[robot], None)
    if robot is GrounderRobot.MOBILE:
        from mjcf_robots import write_mobile_robot
        from test_mobile_base import RATE

        return GrounderSetup(RATE, str(write_mobile_robot(folder / "mobile")), wrench_sensor=False, mobile_base=True)
    if robot in (GrounderRobot.URDF, GrounderRobot.URDF_100):
        rate = 50.0 if robot is GrounderRobot.URDF else 100.0
        return GrounderSetup(rate, str(write_robot(folder / robot.value, 7, "two_fingers", mesh=True)))
    if robot is GrounderRobot.NO_GRIPPER:
        return GrounderSetup(50.0, str(write_robot(folder / robot.value, 6, "none")), wrench_sensor=False)
    import two_arm_run

    arm = "left" if robot is GrounderRobot.LEFT_ARM else "right"
    return GrounderSetup(two_arm_run.RATE, str(_two_arms_described()[arm]), wrench_sensor=False)


@functools.cache
def _two_arms_described() -> dict[str, Path]:
    import two_arm_run

    (_robots_folder() / "two_arms").mkdir()
    with contextlib.redirect_stdout(io.StringIO()):  # (robot init's report)
        return two_arm_run.describe(_robots_folder() / "two_arms")


@functools.cache
def compared_grounder(robot: GrounderRobot) -> Any:
    """This tree's grounder for `robot`, the one compared (kept from case to case, reset before each)."""
    return grounder_setup(robot).build()


def run_count(robot: GrounderRobot) -> int:
    """How many runs of its own `robot` has."""
    if robot in _WORKCELL_STRIDES:
        return len(GROUNDER_EPISODES)
    return 2 if robot in (GrounderRobot.MOBILE, GrounderRobot.LEFT_ARM, GrounderRobot.RIGHT_ARM) else 1


def case_states(case: GrounderCase) -> list[RobotState]:
    """The run a case's window is cut from."""
    return robot_run(case.robot, case.episode % run_count(case.robot))


@functools.cache
def robot_run(robot: GrounderRobot, index: int) -> list[RobotState]:
    """Every frame of `robot`'s run `index`: a scripted episode (GROUNDER_EPISODES, seed 0) every stride-th step for
    the workcell; the mobile base's clean or contact drive; the URDF arms' scripted runs; the handover, whole or
    from the right arm's grasp on (the left's stack starting late)."""
    if robot in _WORKCELL_STRIDES:
        return scripted_states(index, _WORKCELL_STRIDES[robot])
    if robot is GrounderRobot.MOBILE:
        from test_mobile_base import CUBE, FRAMES, ODOM, RATE, arm_at, base_at

        return [
            RobotState(
                t=5.0 + k / RATE,
                joint_names=MOBILE_JOINTS,
                joint_position=arm_at(k, contact=bool(index)),
                object_poses={"cube": CUBE},
                object_ages={"cube": 0.004},
                base_pose=Pose(ODOM + base_at(k).position, base_at(k).quaternion),
                base_age=0.002,
            )
            for k in range(FRAMES)
        ]
    if robot in (GrounderRobot.URDF, GrounderRobot.URDF_100, GrounderRobot.NO_GRIPPER):
        return _urdf_run(robot)
    import two_arm_run

    states = list(two_arm_run.run().states)
    return states if index == 0 else states[two_arm_run.HOLDING["right"].start + 10 :]


class Stress(enum.StrEnum):
    """How a GrounderEdit stresses the grounder's caches (keyed on the same pairs, nothing moved, the same gap
    maps, quiet objects, the same joint names)."""

    FREEZE = "freeze"  # joints and objects held exactly still, then one object (or a joint) stepped by `step`
    TELEPORT = "teleport"  # an object moved away for a few frames and back to exactly where it was
    POSE_GAP = "pose_gap"  # an object's pose missing, NaN or too old, then back at the same or another place
    JOINT_STEP = "joint_step"  # joints held exactly still, then one joint moved by a tiny step
    WRENCH = "wrench"  # the wrench missing, NaN, stale or at its age limit
    GRIPPER = "gripper"  # the fingers opening or closing while nothing else moves
    SAME_STAMP = "same_stamp"  # a frame repeated with the same stamp (refused: the grounder must go on unchanged)
    RESET = "reset"  # Grounder.reset() before a frame, or restart() (the twin's MjData and kept geometry too)
    EVENT = "event"  # the sanitizing event on a frame
    MARGIN = "margin"  # an object walked in and out of the twin's report margin around the fingers
    SLOW_POSES = "slow_poses"  # poses from a slower stream: one sample kept for `period` frames, its age growing
    REORDER = "reorder"  # the poses' mapping in another order
    JOINT_ORDER = "joint_order"  # the joints in reverse order, or in theirs but in a new name tuple each frame
    TYPES = "types"  # the frame's arrays as lists, float32 or strided views (the kernels' fallbacks)
    JOINT_STAMPS = "joint_stamps"  # the fingers on a slower topic: their positions and stamps kept for `period` frames
    BASE = "base"  # a mobile base's pose missing, NaN, too old, away and back, or held still then stepped one ulp
    OTHER_FINGERS = "other_fingers"  # the other arm's fingers moving while nothing else moves (a two-arm robot's;
    # elsewhere everything holds still)


@dataclasses.dataclass(frozen=True)
class GrounderEdit:
    """One edit of a window of frames: `at` and `until` are fractions of the window; `params` per `kind`."""

    kind: Stress
    at: float
    until: float
    params: tuple[Any, ...] = ()


@dataclasses.dataclass(frozen=True)
class GrounderCase:
    """A window of one of `robot`'s runs (`start` a fraction of it, `length` frames) and the edits applied to it."""

    episode: int  # index into the robot's runs (GROUNDER_EPISODES for the workcell), modulo their number
    start: float
    length: int
    edits: tuple[GrounderEdit, ...]
    robot: GrounderRobot = GrounderRobot.WORKCELL


# steps: one ulp of the coordinate, or a threshold's size (thresholds.yaml, the twin's report margin, one motion
# window's travel at the stability speed) times just under or over one, or half and twice it
_THRESHOLD_STEPS = ("distances_m.gripper_clearance", "distances_m.contact", "distances_m.reach",
                    "distances_m.placement_margin", "distances_m.placement_proximity", "distances_m.path_obstruction",
                    "motion.grasp_slip_m", "motion.grasp_slip_rad", "twin.margin", "motion.stable_travel")  # fmt: skip
_STEPS = st.one_of(
    st.just(("ulp", 1)),
    st.just(("ulp", -1)),
    st.tuples(st.sampled_from(_THRESHOLD_STEPS), st.sampled_from([1 - 1e-9, 1 + 1e-9, 0.999, 1.001, 0.5, 2.0])),
)
_AXES = st.integers(0, 6)  # a pose's x, y, z, then its quaternion's w, x, y, z
_FRACTIONS = st.floats(0.0, 1.0)
_OBJECT_NAMES = ("mug", "plate", "raw_chicken", "cube", "bar")  # the workcell's, the URDF arms' and the handover's
_OBJECTS = st.sampled_from([*_OBJECT_NAMES, "*"])  # "*": every object
_OFFSETS = st.sampled_from([(0.3, 0.0, 0.0), (0.0, 0.0, 0.2), (0.05, -0.05, 0.0), (0.0, 0.0, -0.01), (1e-7, 0.0, 0.0)])
_POSE_TROUBLE = st.sampled_from(
    ["missing", "nan", "inf", "old", "ageinf", "age_nan", "age_negative", "age_limit", "age_over", "quat_zero",
     "age_only", "ghost"]
)  # fmt: skip
_WRENCH_TROUBLE = st.sampled_from(
    ["missing", "nan", "inf", "old", "ageinf", "age_limit", "none_age", "huge", "overflow"]
)
_BASE_TROUBLE = st.sampled_from(["missing", "nan", "old", "age_limit", "away", "still"])


@st.composite
def grounder_edits(draw: Callable, robots: tuple[GrounderRobot, ...] = (GrounderRobot.WORKCELL,)) -> GrounderCase:
    """A window of 60-700 frames of one of `robots`' runs, or 2000-4000 (at 500 Hz the timeouts run out: 5 s), with
    1-5 edits that stress the grounder's caches."""
    robot = draw(st.sampled_from(robots)) if len(robots) > 1 else robots[0]
    edits = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(list(Stress)))
        at, span = draw(_FRACTIONS), draw(st.floats(0.0, 0.6))
        if kind is Stress.FREEZE:
            params: tuple[Any, ...] = (draw(_OBJECTS), draw(_AXES), draw(_STEPS), draw(st.integers(0, 40)))
        elif kind is Stress.TELEPORT:
            params = (draw(_OBJECTS), draw(_OFFSETS), draw(st.integers(1, 30)))
        elif kind is Stress.POSE_GAP:
            params = (draw(_OBJECTS), draw(_POSE_TROUBLE), draw(st.sampled_from(["natural", "same", "elsewhere"])))
        elif kind is Stress.JOINT_STEP:
            params = (
                draw(st.integers(0, 9)),
                draw(_STEPS | st.sampled_from([("nan", 1), ("inf", -1)])),
                draw(st.integers(0, 40)),
            )
        elif kind is Stress.WRENCH:
            params = (draw(_WRENCH_TROUBLE),)
        elif kind in (Stress.GRIPPER, Stress.OTHER_FINGERS):
            params = (draw(st.sampled_from([0.0, 0.04, 0.036, 0.02])),)
        elif kind is Stress.SAME_STAMP:
            params = (draw(st.integers(1, 3)), draw(st.booleans()))  # repeats, the same content or the next frame's
        elif kind is Stress.MARGIN:
            params = (draw(_OBJECTS.filter(lambda o: o != "*")), draw(st.sampled_from([0.02, 0.05, 0.08, 0.2])))
        elif kind in (Stress.JOINT_ORDER, Stress.RESET):  # reversed; restart
            params = (draw(st.booleans()),)
        elif kind is Stress.TYPES:
            params = (
                draw(st.sampled_from(["list", "float32", "strided"])),
                draw(st.sampled_from(["joints", "poses", "wrench", "all"])),
            )
        elif kind is Stress.JOINT_STAMPS:
            params = (draw(st.sampled_from([1, 2, 5, 16, 60])),)
        elif kind is Stress.SLOW_POSES:  # periods up to beyond the pose age limit (125 frames)
            params = (draw(_OBJECTS), draw(st.sampled_from([2, 3, 15, 16, 17, 50, 124, 126, 200])))
        elif kind is Stress.BASE:
            params = (draw(_BASE_TROUBLE),)
        else:
            params = ()
        edits.append(GrounderEdit(kind, at, min(1.0, at + span), params))
    return GrounderCase(
        draw(st.integers(0, len(GROUNDER_EPISODES) - 1)),
        draw(_FRACTIONS),
        draw(st.integers(60, 700) | st.integers(2000, 4000)),
        tuple(edits),
        robot,
    )


def _step_size(name: str, factor: float, grounder: Any) -> float:
    """A threshold's size in metres (or radians) times `factor`."""
    th = grounder.thresholds
    if name == "twin.margin":
        return grounder.twin.margin * factor
    if name == "motion.stable_travel":
        return th.motion.linear_stability_mps * th.durations_s.motion_window * factor
    section, key = name.split(".")
    return getattr(getattr(th, section), key) * factor


def _moved(pose: Pose, axis: int, step: Any, grounder: Any) -> Pose:
    """`pose` with coordinate `axis` (x, y, z, then the quaternion's) stepped by one ulp or a threshold's size."""
    values = np.concatenate([pose.position, pose.quaternion])
    kind, amount = step
    if kind == "ulp":
        values[axis] = np.nextafter(values[axis], math.copysign(math.inf, amount))
    elif kind in ("nan", "inf"):
        values[axis] = math.copysign(float(kind), amount)
    else:
        values[axis] += _step_size(kind, amount, grounder)
    return Pose(values[:3].copy(), values[3:].copy())


def _object(which: str, grounder: Any) -> str:
    """The object an edit names, on a robot that lacks it the one at its place in _OBJECT_NAMES counted round the
    robot's own (so that every edit bites on every robot)."""
    names = list(grounder.robot.objects)
    return which if which in names or not names else names[_OBJECT_NAMES.index(which) % len(names)]


def _objects(which: str, state: RobotState, grounder: Any) -> list[str]:
    if which == "*":
        return list(state.object_poses)
    name = _object(which, grounder)
    return [name] if name in state.object_poses else []


@functools.cache
def _input_grounder(robot: GrounderRobot = GrounderRobot.WORKCELL) -> Any:
    """A grounder of this tree for making `robot`'s inputs (thresholds, the twin's fingers): never the one compared,
    whose twin keeps its caches."""
    return grounder_setup(robot).build()


def _retyped(s: RobotState, how: str, what: str) -> RobotState:
    """`s` with the arrays of `what` as lists, float32 arrays or strided float64 views of the same values."""

    def conv(a: Any) -> Any:
        if a is None:
            return None
        if how == "list":
            return np.asarray(a).tolist()
        if how == "float32":
            return np.asarray(a, dtype=np.float32)
        return np.repeat(np.asarray(a, dtype=float), 2)[::2]

    changes: dict[str, Any] = {}
    if what in ("joints", "all"):
        changes.update({f: conv(getattr(s, f)) for f in ("joint_position", "joint_velocity", "joint_effort")})
    if what in ("poses", "all"):
        changes["object_poses"] = {o: Pose(conv(p.position), conv(p.quaternion)) for o, p in s.object_poses.items()}
    if what in ("wrench", "all") and s.wrench is not None:
        changes["wrench"] = Wrench(conv(s.wrench.force), conv(s.wrench.torque))
    return dataclasses.replace(s, **changes)


_OTHER_ARM = {GrounderRobot.LEFT_ARM: GrounderRobot.RIGHT_ARM, GrounderRobot.RIGHT_ARM: GrounderRobot.LEFT_ARM}


def _other_fingers(robot: GrounderRobot) -> tuple[str, ...]:
    """The finger joints of the arm beside `robot`'s (the other arm's own stack's gripper), none for one arm."""
    other = _OTHER_ARM.get(robot)
    return () if other is None else tuple(_input_grounder(other).robot.gripper.joints)


RESTART = "restart"  # a step of `step_records`: Grounder.restart() there (None: reset())


def edited_window(states: list[RobotState], case: GrounderCase) -> list[Any]:
    """The case's window of `states` with its edits applied in order; None: `Grounder.reset()` there, RESTART:
    `restart()`. Stamps keep increasing except where SAME_STAMP repeats one."""
    grounder = _input_grounder(case.robot)
    start = int(case.start * max(0, len(states) - case.length))
    window: list[Any] = list(states[start : start + case.length])
    n = len(window)
    for e in case.edits:
        a = min(n - 1, int(e.at * n))
        b = max(a, min(n, int(e.until * n)))
        frames = [k for k in range(a, b) if isinstance(window[k], RobotState)] or [a]  # a point edit: frame `a`
        if not isinstance(window[a], RobotState):
            continue
        first = window[a]
        assert first is not None
        if e.kind in (Stress.FREEZE, Stress.JOINT_STEP, Stress.GRIPPER, Stress.OTHER_FINGERS):
            held_poses, held_ages = dict(first.object_poses), dict(first.object_ages)
            moved_poses, position = dict(held_poses), first.joint_position.copy()
            if e.kind is Stress.FREEZE:
                which, axis, step, after = e.params
                for o in _objects(which, first, grounder):
                    moved_poses[o] = _moved(held_poses[o], axis, step, grounder)
            elif e.kind is Stress.JOINT_STEP:
                joint, step, after = e.params
                joint %= len(position)
                position[joint] = _moved(Pose(np.full(3, position[joint]), np.zeros(4)), 0, step, grounder).position[0]
            else:
                after = 0
            fingers = _other_fingers(case.robot) if e.kind is Stress.OTHER_FINGERS else grounder.robot.gripper.joints
            for i, k in enumerate(frames):
                s = window[k]
                assert s is not None
                joints = first.joint_position.copy()
                if e.kind in (Stress.GRIPPER, Stress.OTHER_FINGERS):  # the fingers walk linearly to the target, the
                    for j, name in enumerate(first.joint_names):  # rest held
                        if name in fingers:
                            joints[j] += (e.params[0] - joints[j]) * (i + 1) / len(frames)
                window[k] = dataclasses.replace(
                    s,
                    joint_position=joints,
                    object_poses=held_poses,
                    object_ages=held_ages,
                    wrench=first.wrench,
                    wrench_age=first.wrench_age,
                    contacts=first.contacts,
                )
            for k in range(b, min(n, b + after)):  # then stepped, and held there
                s = window[k]
                if isinstance(s, RobotState):
                    window[k] = dataclasses.replace(
                        s, joint_position=position, object_poses=moved_poses, object_ages=held_ages
                    )
        elif e.kind is Stress.TELEPORT:
            which, offset, frames_away = e.params
            for k in frames[:frames_away]:
                s = window[k]
                assert s is not None
                poses = dict(s.object_poses)
                for o in _objects(which, s, grounder):
                    poses[o] = Pose(poses[o].position + np.array(offset), poses[o].quaternion)
                window[k] = dataclasses.replace(s, object_poses=poses)
        elif e.kind is Stress.POSE_GAP:
            which, trouble, back = e.params
            limit = grounder.thresholds.max_age_s.object_pose
            for k in frames:
                s = window[k]
                assert s is not None
                poses, ages = dict(s.object_poses), dict(s.object_ages)
                for o in _objects(which, s, grounder):
                    if trouble in ("missing", "age_only"):  # no pose (and no age, or an age alone)
                        del poses[o]
                        if trouble == "missing":
                            ages.pop(o, None)
                    elif trouble in ("nan", "inf"):
                        poses[o] = Pose(np.array([float(trouble), 0.0, 0.0]), poses[o].quaternion)
                    elif trouble == "quat_zero":
                        poses[o] = Pose(poses[o].position, np.zeros(4))
                    elif trouble == "ghost":  # a pose of an object the robot does not describe: refused
                        poses["ghost"] = poses[o]
                    else:
                        ages[o] = {"old": 0.3, "ageinf": math.inf, "age_nan": math.nan, "age_negative": -0.01,
                                   "age_limit": limit, "age_over": math.nextafter(limit, 1)}[trouble]  # fmt: skip
                window[k] = dataclasses.replace(s, object_poses=poses, object_ages=ages)
            for k in range(b, min(n, b + 20)) if back != "natural" else ():  # back where it was, or elsewhere
                s = window[k]
                if isinstance(s, RobotState):
                    poses = dict(s.object_poses)
                    for o in _objects(which, first, grounder):
                        if o in poses:
                            p = first.object_poses[o]
                            poses[o] = (
                                p if back == "same" else Pose(p.position + np.array([0.0, 0.1, 0.05]), p.quaternion)
                            )
                    window[k] = dataclasses.replace(s, object_poses=poses)
        elif e.kind is Stress.WRENCH:
            (trouble,) = e.params
            limit = grounder.thresholds.max_age_s.wrench
            for k in frames:
                s = window[k]
                assert s is not None
                if trouble == "missing":
                    window[k] = dataclasses.replace(s, wrench=None, wrench_age=None)
                elif trouble in ("nan", "inf"):
                    window[k] = dataclasses.replace(s, wrench=Wrench(np.array([float(trouble), 0.0, 0.0]), np.zeros(3)))
                elif trouble in ("huge", "overflow"):  # over the force limit; a norm that overflows
                    force = np.array([0.0, 0.0, 1e3]) if trouble == "huge" else np.full(3, 1e300)
                    window[k] = dataclasses.replace(s, wrench=Wrench(force, np.zeros(3)))
                elif trouble == "none_age":
                    window[k] = dataclasses.replace(s, wrench_age=None)
                else:
                    window[k] = dataclasses.replace(
                        s, wrench_age={"old": 0.2, "ageinf": math.inf, "age_limit": limit}[trouble]
                    )
        elif e.kind is Stress.SAME_STAMP:
            repeats, same = e.params
            s = first
            nxt = window[a + 1] if a + 1 < n and isinstance(window[a + 1], RobotState) else None
            copy_of = s if same or nxt is None else dataclasses.replace(nxt, t=s.t)
            window[a + 1 : a + 1] = [copy_of] * repeats
            n = len(window)
        elif e.kind is Stress.RESET:
            window.insert(a, RESTART if e.params and e.params[0] else None)
            n = len(window)
        elif e.kind is Stress.EVENT:
            window[a] = dataclasses.replace(
                first, events=frozenset({*first.events, grounder.thresholds.sanitized.event})
            )
        elif e.kind is Stress.MARGIN:  # from 0.15 m from the fingers' site to `closest` and back, in a straight line
            which, closest = e.params
            which = _object(which, grounder)
            for i, k in enumerate(frames):
                s = window[k]
                assert s is not None
                if which not in s.object_poses:
                    continue
                site = grounder.twin.compute(s.joint_names, s.joint_position, {}, None, s.base_pose).ee_position
                phase = abs(2 * (i + 0.5) / len(frames) - 1)  # 1 -> 0 -> 1
                d = closest + (0.15 - closest) * phase
                poses = dict(s.object_poses)
                poses[which] = Pose(np.asarray(site, dtype=float) + np.array([d, 0.0, 0.0]), poses[which].quaternion)
                window[k] = dataclasses.replace(s, object_poses=poses)
        elif e.kind is Stress.SLOW_POSES:
            which, period = e.params
            for k in frames:
                s, sample = window[k], window[a + (k - a) // period * period]
                assert s is not None
                if not isinstance(sample, RobotState):  # a reset there
                    continue
                poses, ages = dict(s.object_poses), dict(s.object_ages)
                for o in _objects(which, s, grounder):
                    if o in sample.object_poses:
                        poses[o], ages[o] = sample.object_poses[o], sample.object_ages.get(o, 0.0) + (s.t - sample.t)
                    else:
                        poses.pop(o)
                        ages.pop(o, None)
                window[k] = dataclasses.replace(s, object_poses=poses, object_ages=ages)
        elif e.kind is Stress.JOINT_ORDER:
            (reverse,) = e.params
            for k in frames:
                s = window[k]
                assert s is not None
                if reverse:
                    rows = {f: None if (v := getattr(s, f)) is None else v[::-1].copy()
                            for f in ("joint_position", "joint_velocity", "joint_effort", "joint_stamps")}  # fmt: skip
                    window[k] = dataclasses.replace(s, joint_names=tuple(reversed(s.joint_names)), **rows)
                else:
                    window[k] = dataclasses.replace(s, joint_names=tuple(list(s.joint_names)))
        elif e.kind is Stress.TYPES:
            for k in frames:
                s = window[k]
                assert s is not None
                window[k] = _retyped(s, *e.params)
        elif e.kind is Stress.JOINT_STAMPS:
            (period,) = e.params
            fingers = [j for j, name in enumerate(first.joint_names) if name in grounder.robot.gripper.joints]
            for k in frames:
                s, sample = window[k], window[a + (k - a) // period * period]
                assert s is not None
                if (
                    not isinstance(sample, RobotState) or sample.joint_names != s.joint_names
                ):  # a reset there, or reordered joints
                    continue
                position, stamps = np.array(s.joint_position, dtype=float), np.full(len(s.joint_names), s.t)
                for j in fingers:
                    position[j], stamps[j] = sample.joint_position[j], sample.t
                window[k] = dataclasses.replace(s, joint_position=position, joint_stamps=stamps)
        elif e.kind is Stress.REORDER:
            for k in frames:
                s = window[k]
                assert s is not None
                window[k] = dataclasses.replace(s, object_poses=dict(reversed(s.object_poses.items())))
        elif e.kind is Stress.BASE and grounder.mobile_base:
            (trouble,) = e.params
            held = first.base_pose
            for k in frames:
                s = window[k]
                assert s is not None
                if trouble == "missing":
                    window[k] = dataclasses.replace(s, base_pose=None, base_age=None)
                elif trouble == "nan":
                    window[k] = dataclasses.replace(s, base_pose=Pose(np.array([math.nan, 0.0, 0.0]), np.eye(4)[0]))
                elif trouble in ("old", "age_limit"):
                    limit = grounder.thresholds.max_age_s.object_pose
                    window[k] = dataclasses.replace(s, base_age=limit if trouble == "age_limit" else 2 * limit)
                elif trouble == "away" and s.base_pose is not None:  # 0.5 m off its path (a jump), then back on it
                    window[k] = dataclasses.replace(
                        s, base_pose=Pose(s.base_pose.position + 0.5, s.base_pose.quaternion)
                    )
                elif trouble == "still":  # held exactly still, the arm too, then stepped one ulp along x and held
                    window[k] = dataclasses.replace(s, base_pose=held, joint_position=first.joint_position)
            if trouble == "still" and held is not None:
                stepped = Pose(np.array([np.nextafter(held.position[0], np.inf), *held.position[1:]]), held.quaternion)
                for k in range(b, min(n, b + 20)):
                    s = window[k]
                    if isinstance(s, RobotState):
                        window[k] = dataclasses.replace(s, base_pose=stepped, joint_position=first.joint_position)
    return window


def step_records(grounder: Any, steps: list[Any]) -> list[tuple]:
    """Each step's record, from a reset grounder: a frame's (t, frame, values in order, unknown, stale ages, named
    objects) as benchmarks/check_identical.py's `frame_record` (and the objects), ("error", type, message) for a
    frame it refuses (its tree's folder spelt <tree>), ("reset",) for None (reset there), ("restart",) for RESTART. Self-contained: the baseline
    runs its source."""
    import os

    import safety_monitor

    tree = os.path.dirname(os.path.dirname(os.path.abspath(safety_monitor.__file__)))
    grounder.reset()
    out: list[tuple] = []
    for s in steps:
        if s is None or s == "restart":  # (RESTART: this source runs where test_fuzz_support is not imported)
            grounder.reset() if s is None else grounder.restart()
            out.append(("reset",) if s is None else ("restart",))
            continue
        try:
            f = grounder.step(s)
        except Exception as exc:  # a refused frame is part of the behaviour compared
            out.append(("error", type(exc).__name__, str(exc).replace(tree, "<tree>")))
            continue
        out.append((f.t, f.frame, tuple(f.values.items()), tuple(sorted(f.unknown)), tuple(sorted(f.stale.items())),
                    tuple(sorted(f.objects.items()))))  # fmt: skip
    return out


_BASELINE_SERVER = """
import os, pickle, struct, sys
from typing import Any
out = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)  # anything printed goes to stderr, not into the replies
import safety_monitor
from safety_monitor.grounding.grounder import load_default_grounder
exec(sys.argv[1])
grounders = {}  # (rate, load_default_grounder's arguments) -> that grounder, built on its first request
def reply(value):
    data = pickle.dumps(value)
    out.write(struct.pack("<Q", len(data)) + data)
    out.flush()
reply(safety_monitor.__file__)
while True:
    head = sys.stdin.buffer.read(8)
    if len(head) < 8:
        break
    function, rate, arguments, payload = pickle.loads(sys.stdin.buffer.read(struct.unpack("<Q", head)[0]))
    key = (rate, tuple(sorted(arguments.items())))
    if key not in grounders:
        grounders[key] = load_default_grounder(rate, **arguments)
    reply(globals()[function](grounders[key], *payload))  # step_records or estimator_records
"""


class BaselineGrounder:
    """The grounders of another source tree (`baseline`, e.g. main before a speed change), in a subprocess started
    with PYTHONPATH=baseline: `records(steps, setup)` are the step_records of pickled RobotStates by its grounder
    built as `setup` says (kept from call to call, as this tree's); `estimator_records(...)` those of messages
    through its Estimator over that grounder."""

    def __init__(self, baseline: Path) -> None:
        import inspect
        import subprocess
        import sys

        baseline = Path(baseline).resolve()
        if not (baseline / "safety_monitor" / "grounding" / "grounder.py").is_file():
            raise SafetyMonitorError(f"{baseline}: not a safety_monitor source tree (no safety_monitor/grounding)")
        env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}
        env["PYTHONPATH"] = str(baseline)
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _BASELINE_SERVER,
                inspect.getsource(step_records) + "\n" + inspect.getsource(estimator_records),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=baseline,
        )
        where = self._read()
        if not str(where).startswith(str(baseline)):
            self.close()
            raise SafetyMonitorError(f"{baseline}: the baseline imported safety_monitor from {where}")

    def _read(self) -> Any:
        import struct

        assert self._proc.stdout is not None
        head = self._proc.stdout.read(8)
        if len(head) < 8:
            raise SafetyMonitorError(f"the baseline grounder exited ({self._proc.wait()})")
        return pickle.loads(self._proc.stdout.read(struct.unpack("<Q", head)[0]))

    def records(self, steps: list[Any], setup: GrounderSetup = GrounderSetup(GROUNDER_RATE, None)) -> list[tuple]:
        return self._call("step_records", setup, (steps,))

    def estimator_records(
        self, messages: list[tuple], setup: GrounderSetup, mapping: dict[str, Any], node: bool
    ) -> list[tuple]:
        """`estimator_records` of the messages by the baseline's Estimator over its grounder built as `setup` says."""
        return self._call("estimator_records", setup, (mapping, messages, node))

    def _call(self, function: str, setup: GrounderSetup, payload: tuple) -> list[tuple]:
        import struct

        assert self._proc.stdin is not None
        data = pickle.dumps((function, setup.rate_hz, setup.arguments(), payload))
        self._proc.stdin.write(struct.pack("<Q", len(data)) + data)
        self._proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        """End the subprocess: at once if it does not end with its input (stopped mid-reply by a hang)."""
        import subprocess

        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


@functools.cache
def scripted_states(index: int, stride: int = 1) -> list[RobotState]:
    """Every `stride`-th control step of scripted episode `index` (GROUNDER_EPISODES, seed 0; 500 Hz / stride)."""
    from safety_monitor.sim.runner import run_episode

    task, fault = GROUNDER_EPISODES[index]
    return list(run_episode(task, fault, seed=0, stride=stride))


# the URDF arms' script: (seconds, then the hand's target: yaw (joint1), reach from the base's axis and height of
# its grasp point (pointing down), gripper closed, the drawer's opening); the joints move linearly in between
_CUBE_AT = (0.35, 0.02)  # the cube resting on the table, on the base's x axis
_URDF_SCRIPT = (
    (0.0, 0.0, 0.35, 0.15, False, 0.0),
    (0.5, 0.0, 0.35, 0.15, False, 0.0),
    (1.0, 0.0, *_CUBE_AT, False, 0.0),  # down to the cube (the arm without gripper: its tool on it)
    (0.5, 0.0, *_CUBE_AT, True, 0.0),  # closing
    (0.5, 0.0, *_CUBE_AT, True, 0.0),
    (1.0, 0.0, 0.35, 0.15, True, 0.0),  # lifted
    (1.5, 0.8, 0.35, 0.15, True, 0.0),  # carried round
    (1.0, 0.8, *_CUBE_AT, True, 0.0),  # put down
    (0.5, 0.8, *_CUBE_AT, False, 0.0),  # let go
    (1.0, 0.8, 0.35, 0.15, False, 0.0),
    (1.5, 0.0, 0.35, 0.15, False, 0.15),  # back, the drawer opening on its own
    (1.0, 0.0, 0.35, 0.15, False, 0.15),
)


def _urdf_reach(grounder: Any, yaw: float, reach: float, height: float) -> dict[str, float]:
    """Arm joints putting the grasp point at (`reach`, `height`) turned by `yaw`, the hand pointing down: Newton's
    method on joint2 and joint4 (y axes), joint6 keeping the hand vertical."""
    names, arm = grounder.robot.required_joints, grounder.robot.arm_joints
    q = np.zeros(len(names))

    def at(v: np.ndarray) -> tuple[np.ndarray, dict[str, float]]:
        joints = dict.fromkeys(arm, 0.0) | {"joint2": v[0], "joint4": v[1], "joint6": math.pi - v[0] - v[1]}
        q[: len(arm)] = [joints[j] for j in arm]
        ee = grounder.twin.compute(names, q, {}).ee_position
        return np.array([ee[0] - reach, ee[2] - height]), joints

    v = np.array([0.3, 1.5])
    for _ in range(30):
        r, joints = at(v)
        jac = np.column_stack([(at(v + d)[0] - r) / 1e-7 for d in np.eye(2) * 1e-7])
        v = v - np.linalg.solve(jac, r)
    r, joints = at(v)
    assert np.abs(r).max() < 1e-9, r
    return joints | {"joint1": yaw}


def _urdf_run(robot: GrounderRobot) -> list[RobotState]:
    """The URDF arm's script at its rate: the hand goes down to the cube, closes on it, lifts, carries it round
    and puts it down (the cube follows the grasp point while the fingers are closed, turned with the hand), then
    the drawer opens on its own; the arm without gripper puts its tool on the cube and goes round without it. The
    wrench weighs the cube while it is held."""
    grounder, rate = _input_grounder(robot), grounder_setup(robot).rate_hz
    names, fingers = grounder.robot.required_joints, grounder.robot.gripper.joints
    keys = []
    for seconds, yaw, reach, height, closed, drawer in _URDF_SCRIPT:
        joints = _urdf_reach(grounder, yaw, reach, height)
        joints |= dict.fromkeys(fingers, 0.02 if closed else 0.04) | {"drawer_slide": drawer}
        keys.append((round(seconds * rate), np.array([joints[n] for n in names]), closed and bool(fingers)))
    cube = Pose(np.array([_CUBE_AT[0], 0.0, _CUBE_AT[1]]), np.array([1.0, 0.0, 0.0, 0.0]))
    states: list[RobotState] = []
    for (_, q0, was_closed), (frames, q1, closed) in zip(keys, keys[1:]):
        held = was_closed and closed  # (grasped at yaw 0)
        for i in range(frames):
            q = q0 + (q1 - q0) * (i + 1) / frames
            if held:
                ee = grounder.twin.compute(names, q, {}).ee_position
                cube = Pose(np.array(ee, dtype=float), np.array([math.cos(q[0] / 2), 0.0, 0.0, math.sin(q[0] / 2)]))
            states.append(
                RobotState(
                    t=1.0 + len(states) / rate,
                    joint_names=names,
                    joint_position=q,
                    wrench=Wrench(np.array([0.0, 0.0, -0.5 if held else 0.0]), np.zeros(3)),
                    wrench_age=0.0,
                    object_poses={"cube": cube},
                    object_ages={"cube": 0.0},
                )
            )
    return states


def first_difference(want: list[tuple], got: list[tuple]) -> int | None:
    """The index of the first record that differs bit for bit (pickled: NaN and -0.0 too), None if none."""
    for i, (a, b) in enumerate(zip(want, got)):
        if pickle.dumps(a) != pickle.dumps(b):
            return i
    return None if len(want) == len(got) else min(len(want), len(got))


def grounder_outcome(case: GrounderCase, baseline: BaselineGrounder) -> tuple[str, str]:
    """(`same` or `grounder_differs`, detail): the case's frames grounded by this tree's grounder of its robot
    (`compared_grounder`) and the baseline tree's, record for record."""
    steps = edited_window(case_states(case), case)
    mine = step_records(compared_grounder(case.robot), steps)
    theirs = baseline.records(steps, grounder_setup(case.robot))
    i = first_difference(theirs, mine)
    if i is None:
        return "same", ""
    a = theirs[i] if i < len(theirs) else None
    b = mine[i] if i < len(mine) else None
    return "grounder_differs", f"step {i} of {len(steps)}:\n  baseline {a}\n  this     {b}"


# ------------------------------------------------------------------------------------ pipeline differential
class Feed(enum.StrEnum):
    """A message's way into the Estimator, as the estimator node's callbacks and replay's loop call it."""

    JOINTS = "joints"  # Estimator.joints: /joint_states, the frame-driving stream
    GRIPPER = "gripper"  # Estimator.gripper_joints: the gripper's own JointState topic
    WRENCH = "wrench"  # Estimator.wrench
    POSE = "pose"  # Estimator.pose: an object's PoseStamped
    TF = "tf"  # Estimator.transforms: a mobile base's pose in the world frame
    MARKER = "marker"  # Estimator.new_rollout: a rollout start marker
    FINISH = "finish"  # Estimator.finish: the end of the input


class PipelineStress(enum.StrEnum):
    """How a PipelineEdit stresses the stages around the grounder (the assembler's rows, stale sets, JumpDetector,
    wrench key; the Estimator's resync, warm-up, restarts and frozen joints)."""

    HOLD = "hold"  # a stream's (or every stream's) values held exactly still, then one value stepped one ulp
    SIGNED_ZERO = "signed_zero"  # a value held at 0.0 then -0.0 (once, or every other message), the rest held
    NONFINITE = "nonfinite"  # NaN, inf or an implausible value in a message
    JOINT_JUMP = "joint_jump"  # a joint jumping away for a few frames and back (by just under or over the limit too)
    NAMES = "names"  # a JointState's names reordered, cut, duplicated, extended or empty
    STAMPS = "stamps"  # a stream's stamp repeated, backwards, far ahead or zero once, or shifted for a while
    SILENCE = "silence"  # a stream stopping for a while, then restarting
    SHUFFLE = "shuffle"  # messages out of order across topics: each frame's reversed, slower ones a frame late, any
    BASE = "base"  # a mobile base's pose jumping by just under or over base_jump's reach (or turn), then back
    MARKER = "marker"  # a rollout start marker at a frame's time (or between two), on time or some frames late


@dataclasses.dataclass(frozen=True)
class PipelineEdit:
    """One edit of a message stream: `at` and `until` are fractions of its frames; `params` per `kind`."""

    kind: PipelineStress
    at: float
    until: float
    params: tuple[Any, ...] = ()


@dataclasses.dataclass(frozen=True)
class PipelineCase:
    """A window of one of `robot`'s runs sent as messages (`gripper_topic`: the fingers on a JointState topic of
    their own, where the robot has a gripper), edited, driven as replay does (every arrival time given) or as the
    estimator node does (`node`: a slower stream's arrival time only where `needs_arrival` asks for it), its stamps
    `clock` seconds on."""

    episode: int
    start: float
    length: int
    edits: tuple[PipelineEdit, ...]
    robot: GrounderRobot = GrounderRobot.WORKCELL
    gripper_topic: bool = False
    node: bool = False
    clock: float = 0.0  # added to every stamp: the run's own time (its first poses unstamped), or a wall clock's


_STREAM_FEEDS = (Feed.JOINTS, Feed.GRIPPER, Feed.WRENCH, Feed.POSE, Feed.TF)
_STREAMS = st.sampled_from(_STREAM_FEEDS)
_HOLD_STEPS = st.sampled_from(["ulp+", "ulp-", "none"])
_HOLD_SPANS = st.sampled_from(["span", "frozen-1", "frozen", "frozen+1"])  # or around the frozen limit, in frames
_STAMP_HOW = st.sampled_from(["repeat", "backwards", "ahead", "zero", "shift"])
_STAMP_AMOUNTS = st.sampled_from([1e-9, 1e-6, 0.001, 0.05, 0.3, 1.0, 2.9, 3.1, 10.0, 1e6])
_BASE_FACTORS = st.sampled_from([1 - 1e-9, 1 + 1e-9, 1 - 1e-6, 1 + 1e-6, 0.5, 2.0])


@st.composite
def pipeline_edits(draw: Callable, robots: tuple[GrounderRobot, ...] = (GrounderRobot.WORKCELL,)) -> PipelineCase:
    """A window of 30-400 frames of one of `robots`' runs, or 1100-3000 (beyond the frozen limit at 500 Hz), with
    1-5 edits that stress the stages around the grounder."""
    robot = draw(st.sampled_from(robots)) if len(robots) > 1 else robots[0]
    edits = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(list(PipelineStress)))
        at, span = draw(_FRACTIONS), draw(st.floats(0.0, 0.8))
        if kind is PipelineStress.HOLD:
            params: tuple[Any, ...] = (
                draw(st.sampled_from([*_STREAM_FEEDS, "all"])),
                draw(st.integers(0, 12)),
                draw(_HOLD_STEPS),
                draw(_HOLD_SPANS),
                draw(st.integers(0, 40)),
            )
        elif kind is PipelineStress.SIGNED_ZERO:
            params = (draw(_STREAMS), draw(st.integers(0, 12)), draw(st.sampled_from(["once", "alternate"])),
                      draw(_HOLD_SPANS))  # fmt: skip
        elif kind is PipelineStress.NONFINITE:
            params = (draw(_STREAMS), draw(st.integers(0, 12)), draw(st.sampled_from([math.nan, math.inf, -math.inf,
                      2e9, -2e9])), draw(st.integers(1, 5)))  # fmt: skip
        elif kind is PipelineStress.JOINT_JUMP:
            sizes = st.sampled_from([1e-3, 0.05, 0.3, 1.0, 3.0, -0.3]) | st.tuples(
                st.just("limit"), st.sampled_from([1 - 1e-9, 1 + 1e-9, 0.999, 1.001, 2.0, -1.001])
            )  # radians, or a factor of the largest step the JumpDetector lets through
            params = (draw(st.integers(0, 12)), draw(sizes), draw(st.integers(1, 5)))
        elif kind is PipelineStress.NAMES:
            params = (
                draw(st.sampled_from([Feed.JOINTS, Feed.GRIPPER])),
                draw(st.sampled_from(["reverse", "rotate", "cut_first", "cut_last", "duplicate", "extra", "empty"])),
            )
        elif kind is PipelineStress.STAMPS:
            params = (draw(_STREAMS), draw(_STAMP_HOW), draw(_STAMP_AMOUNTS))
        elif kind is PipelineStress.SILENCE:
            params = (draw(_STREAMS),)
        elif kind is PipelineStress.SHUFFLE:
            params = (draw(st.sampled_from(["reverse", "late", "random"])), draw(st.integers(0, 2**16)))
        elif kind is PipelineStress.BASE:
            params = (draw(st.sampled_from(["x", "y", "yaw"])), draw(_BASE_FACTORS), draw(st.integers(1, 30)))
        else:
            params = (draw(st.integers(0, 5)), draw(st.booleans()))  # frames late; between two frames
        edits.append(PipelineEdit(kind, at, min(1.0, at + span), params))
    return PipelineCase(
        draw(st.integers(0, len(GROUNDER_EPISODES) - 1)),
        draw(_FRACTIONS),
        draw(st.integers(30, 400) | st.integers(1100, 3000)),
        tuple(edits),
        robot,
        draw(st.booleans()),
        draw(st.booleans()),
        draw(st.sampled_from([0.0, 1000.0, 1.7e9])),
    )


def pipeline_mapping(case: PipelineCase) -> dict[str, Any]:
    """The StreamMapping arguments the case's messages are read with (topics other than the gripper's, TF's and the
    world frame do not reach the Estimator)."""
    grounder = _input_grounder(case.robot)
    mapping: dict[str, Any] = {} if grounder.wrench_sensor else {"wrench": None}
    if grounder.mobile_base:
        mapping["world_frame"] = "map"
    if case.gripper_topic and grounder.robot.gripper.joints:
        mapping["gripper_joint_states"] = "/gripper/joint_states"
    return mapping


@dataclasses.dataclass
class _Message:
    kind: Feed
    payload: Any
    received: float
    frame: int  # the window's frame it was sent with


def _msg_stamp(m: _Message) -> float:
    if m.kind in (Feed.JOINTS, Feed.GRIPPER):
        return m.payload.stamp
    if m.kind is Feed.TF:
        return m.payload[0][3]
    return m.payload[-1]


def _msg_values(m: _Message) -> np.ndarray:
    """The message's numbers: positions, force then torque, or position then quaternion."""
    if m.kind in (Feed.JOINTS, Feed.GRIPPER):
        return np.array(m.payload.position, dtype=float)
    if m.kind is Feed.WRENCH:
        return np.concatenate([m.payload[0].force, m.payload[0].torque])
    pose = m.payload[0][2] if m.kind is Feed.TF else m.payload[1]
    return np.concatenate([pose.position, pose.quaternion])


def _with(m: _Message, values: np.ndarray | None = None, stamp: float | None = None) -> Any:
    """The message's payload with `values` (as `_msg_values` has them) and `stamp` in place."""
    stamp = _msg_stamp(m) if stamp is None else stamp
    values = _msg_values(m) if values is None else np.array(values, dtype=float)
    p = m.payload
    if m.kind in (Feed.JOINTS, Feed.GRIPPER):
        return dataclasses.replace(p, position=values, stamp=stamp)
    if m.kind is Feed.WRENCH:
        return (Wrench(values[:3].copy(), values[3:].copy()), stamp)
    pose = Pose(values[:3].copy(), values[3:].copy())
    if m.kind is Feed.TF:
        return [(p[0][0], p[0][1], pose, stamp)]
    return (p[0], pose, stamp)


def _frame_messages(
    s: RobotState, k: int, grounder: Any, mapping: dict[str, Any], sent: dict[str, float]
) -> list[_Message]:
    """Frame `k`'s messages, slower streams first as they arrive, each received a little after its stamp; a slower
    stream's sample (its stamp the frame's time less its age) sent once, when it is newer than the last (`sent`:
    stream -> the last stamp sent)."""
    from safety_monitor.frames import JointSample

    def new(stream: str, stamp: float) -> bool:
        if sent.get(stream, -math.inf) >= stamp:
            return False
        sent[stream] = stamp
        return True

    out: list[_Message] = []
    names, position = list(s.joint_names), np.asarray(s.joint_position, dtype=float)
    if mapping.get("gripper_joint_states"):
        fingers = [j for j, n in enumerate(names) if n in grounder.robot.gripper.joints]
        sample = JointSample(tuple(names[j] for j in fingers), position[fingers], None, None, s.t)
        out.append(_Message(Feed.GRIPPER, sample, s.t + 0.0004, k))
        kept = [j for j in range(len(names)) if j not in fingers]
        names, position = [names[j] for j in kept], position[kept]
    if grounder.wrench_sensor and s.wrench is not None and new("wrench", stamp := s.t - (s.wrench_age or 0.0)):
        out.append(_Message(Feed.WRENCH, (s.wrench, stamp), stamp + 0.0003, k))
    for name, pose in s.object_poses.items():
        if not new(name, stamp := s.t - s.object_ages.get(name, 0.0)):
            continue
        out.append(_Message(Feed.POSE, (name, pose, stamp), stamp + 0.0002, k))
    if grounder.mobile_base and s.base_pose is not None and new("base", stamp := s.t - (s.base_age or 0.0)):
        out.append(_Message(Feed.TF, [("map", grounder.robot.base_body, s.base_pose, stamp)], stamp + 0.0001, k))
    joints = JointSample(tuple(names), position.copy(), None, None, s.t)
    out.append(_Message(Feed.JOINTS, joints, s.t + 0.0005, k))
    return out


def pipeline_messages(case: PipelineCase) -> list[tuple[str, Any, float]]:
    """The case's messages in arrival order, edited: (Feed value, payload, arrival time), ending with FINISH.
    Payloads: a JointSample (joints, gripper), (Wrench, stamp), (object, Pose, stamp), [(parent, child, Pose,
    stamp)] (tf), the marker's time."""
    grounder = _input_grounder(case.robot)
    mapping = pipeline_mapping(case)
    states = case_states(GrounderCase(case.episode, case.start, case.length, (), case.robot))
    start = int(case.start * max(0, len(states) - case.length))
    window = [dataclasses.replace(s, t=s.t + case.clock) for s in states[start : start + case.length]]
    n = len(window)
    rate = grounder_setup(case.robot).rate_hz
    from safety_monitor.settings import EstimatorSettings

    frozen_frames = math.ceil(EstimatorSettings().joint_states_frozen_s * rate) + 1  # their stamps the limit apart
    sent: dict[str, float] = {}
    messages = [m for k, s in enumerate(window) for m in _frame_messages(s, k, grounder, mapping, sent)]
    for e in case.edits:
        a = min(n - 1, int(e.at * n))
        b = max(a + 1, min(n, int(e.until * n)))
        if e.kind in (PipelineStress.HOLD, PipelineStress.SIGNED_ZERO):
            stream, index, how, spans = e.params[:4]
            if spans != "span":  # held for the frozen limit's frames, one fewer or one more
                b = min(n, a + frozen_frames + {"frozen-1": -1, "frozen": 0, "frozen+1": 1}[spans])
            after = e.params[4] if e.kind is PipelineStress.HOLD else 0
            held: dict[tuple[Feed, Any], np.ndarray] = {}
            for m in messages:
                if not (a <= m.frame < b + after) or (stream != "all" and m.kind is not stream):
                    continue
                if m.kind in (Feed.MARKER, Feed.FINISH):
                    continue
                key = (m.kind, m.payload[0] if m.kind is Feed.POSE else None)
                values = held.setdefault(key, _msg_values(m)).copy()
                if len(values) == 0:
                    continue
                i = index % len(values)
                if e.kind is PipelineStress.SIGNED_ZERO:
                    values[i] = 0.0
                    if (how == "once" and m.frame >= (a + b) // 2) or (how == "alternate" and (m.frame - a) % 2):
                        values[i] = -0.0
                elif m.frame >= b and how != "none":  # then stepped, and held there
                    values[i] = np.nextafter(values[i], math.inf if how == "ulp+" else -math.inf)
                m.payload = _with(m, values)
        elif e.kind is PipelineStress.NONFINITE:
            stream, index, value, count = e.params
            for m in messages:
                if m.kind is stream and a <= m.frame < min(b, a + count):
                    values = _msg_values(m)
                    if len(values):
                        values[index % len(values)] = value
                        m.payload = _with(m, values)
        elif e.kind is PipelineStress.JOINT_JUMP:
            index, size, away = e.params
            for m in messages:
                if m.kind is Feed.JOINTS and a <= m.frame < a + away and len(m.payload.names):
                    values, names = _msg_values(m), m.payload.names
                    judged = [j for j, name in enumerate(names) if getattr(grounder.joint_limits.get(name), "velocity",
                              None) is not None]  # fmt: skip
                    if isinstance(size, tuple) and judged:  # the jump factor times the velocity limit over a period
                        j = judged[index % len(judged)]
                        limit = grounder.joint_limits[names[j]].velocity
                        values[j] += size[1] * grounder.thresholds.joint_limits.jump_factor * limit / rate
                    else:
                        values[index % len(values)] += size[1] if isinstance(size, tuple) else size
                    m.payload = _with(m, values)
        elif e.kind is PipelineStress.NAMES:
            stream, how = e.params
            for m in messages:
                if m.kind is stream and a <= m.frame < b and len(m.payload.names):
                    m.payload = _renamed_sample(m.payload, how)
        elif e.kind is PipelineStress.STAMPS:
            stream, how, amount = e.params
            chosen = [
                m for m in messages if m.kind is stream and (a <= m.frame < b if how == "shift" else m.frame == a)
            ]
            last = {m.frame: _msg_stamp(m) for m in messages if m.kind is stream}
            for m in chosen:
                t = _msg_stamp(m)
                stamp = {"repeat": last.get(m.frame - 1, t), "backwards": t - amount, "ahead": t + amount,
                         "zero": 0.0, "shift": t + amount}[how]  # fmt: skip
                m.payload = _with(m, stamp=stamp)
        elif e.kind is PipelineStress.SILENCE:
            (stream,) = e.params
            messages = [m for m in messages if not (m.kind is stream and a <= m.frame < b)]
        elif e.kind is PipelineStress.SHUFFLE:
            how, seed = e.params
            inside = [i for i, m in enumerate(messages) if a <= m.frame < b]
            if inside:
                lo, hi = inside[0], inside[-1] + 1
                part = messages[lo:hi]
                if how == "reverse":  # each frame's messages, its joints first
                    order = {id(m): i for i, m in enumerate(part)}
                    part.sort(key=lambda m: (m.frame, -order[id(m)]))
                elif how == "late":  # the slower streams' messages after the next frame's joints (a stable sort)
                    part.sort(key=lambda m: m.frame + (0.0 if m.kind is Feed.JOINTS else 1.5))
                else:
                    random.Random(seed).shuffle(part)
                messages[lo:hi] = part
        elif e.kind is PipelineStress.BASE and grounder.mobile_base:
            _jump_base(messages, grounder, a, b, *e.params)
        elif e.kind is PipelineStress.MARKER:
            late, between = e.params
            t = window[a].t + (0.5 / rate if between else 0.0)
            marker = _Message(Feed.MARKER, t, window[a].t, a)
            after = [i for i, m in enumerate(messages) if m.kind is Feed.JOINTS and m.frame == a + late - 1]
            before = [i for i, m in enumerate(messages) if m.frame >= a]
            where = after[0] + 1 if late and after else before[0] if before else len(messages)
            messages.insert(where, marker)
    out: list[tuple[str, Any, float]] = []
    received = -math.inf
    for m in messages:  # arrival times never go back: out of order means sent so
        received = max(received, m.received)
        out.append((m.kind.value, m.payload, received))
    out.append((Feed.FINISH.value, None, received))
    return out


def _renamed_sample(sample: Any, how: str) -> Any:
    names, position = list(sample.names), np.array(sample.position, dtype=float)
    if how == "reverse":
        names, position = names[::-1], position[::-1].copy()
    elif how == "rotate":
        names, position = names[1:] + names[:1], np.roll(position, -1)
    elif how == "cut_first":
        names, position = names[1:], position[1:]
    elif how == "cut_last":
        names, position = names[:-1], position[:-1]
    elif how == "duplicate" and len(names) > 1:
        names[1] = names[0]
    elif how == "extra":
        names, position = [*names, "unlisted_joint"], np.append(position, 0.0)
    elif how == "empty":
        names = []
    return dataclasses.replace(sample, names=tuple(names), position=position)


def _jump_base(messages: list[_Message], grounder: Any, a: int, b: int, axis: str, factor: float, held: int) -> None:
    """The base's pose on frame `a` `factor` times base_jump's reach (or turn) from its last pose, along `axis`,
    the same offset from its path kept for `held` frames (within a..b), then back on its path."""
    base = [m for m in messages if m.kind is Feed.TF]
    previous = [m for m in base if m.frame < a]
    jumped = [m for m in base if a <= m.frame < min(b, a + held)]
    if not previous or not jumped:
        return
    rule = grounder.thresholds.base_jump
    last, first = previous[-1].payload[0], jumped[0].payload[0]
    dt = first[3] - last[3]
    if axis == "yaw":
        turn = (rule.noise_rad + rule.angular_speed_radps * dt) * factor
        q = last[2].quaternion
        spin = np.array([math.cos(turn / 2), 0.0, 0.0, math.sin(turn / 2)])
        w1, v1, w2, v2 = spin[0], spin[1:], q[0], q[1:]
        quaternion = np.array([w1 * w2 - v1 @ v2, *(w1 * v2 + w2 * v1 + np.cross(v1, v2))])
        for m in jumped:
            parent, child, pose, stamp = m.payload[0]
            m.payload = [(parent, child, Pose(pose.position, quaternion), stamp)]
        return
    reach = (rule.noise_m + rule.linear_speed_mps * dt) * factor
    target = last[2].position + np.array([reach, 0.0, 0.0] if axis == "x" else [0.0, reach, 0.0])
    offset = target - first[2].position
    for m in jumped:
        parent, child, pose, stamp = m.payload[0]
        m.payload = [(parent, child, Pose(pose.position + offset, pose.quaternion), stamp)]


def estimator_records(grounder: Any, mapping: dict[str, Any], messages: list[tuple], node: bool) -> list[tuple]:
    """Each message's EstimatorStep as a record, from a reset grounder and a new Estimator over it (StreamMapping of
    `mapping`): (sample as step_records has a frame, or None; issues (kind, stream, t, detail); frozen; frozen
    changed; rollout start; the Supervisor's Step on the sample, over the default specs, as text), or ("error",
    type, message) for an exception. Driven as replay drives the stage, or as the estimator node does (`node`: a
    slower stream's arrival time only where `needs_arrival` asks). Self-contained: the baseline runs its source."""
    import os

    import safety_monitor
    from safety_monitor.pipeline.assemble import StreamMapping
    from safety_monitor.pipeline.estimator import Estimator
    from safety_monitor.pipeline.supervisor import Supervisor
    from safety_monitor.replay.score import ReplayConfig, make_monitor
    from safety_monitor.settings import MonitorSettings

    tree = os.path.dirname(os.path.dirname(os.path.abspath(safety_monitor.__file__)))
    grounder.reset()
    try:
        stage = Estimator(grounder, StreamMapping(**mapping))
        supervisor = Supervisor(make_monitor(ReplayConfig(), grounder.control_rate_hz), MonitorSettings())
    except Exception as exc:
        return [("error", type(exc).__name__, str(exc).replace(tree, "<tree>"))]
    out: list[tuple] = []
    for kind, payload, received in messages:
        needs = stage.assembler.needs_arrival
        try:
            if kind == "joints":
                step = stage.joints(payload, received)  # (the node reads its clock for every one)
            elif kind == "gripper":
                step = stage.gripper_joints(payload, received if not node or needs(payload.stamp) else None)
            elif kind == "wrench":
                step = stage.wrench(payload[0], payload[1], received if not node or needs(payload[1]) else None)
            elif kind == "pose":
                step = stage.pose(*payload, received if not node or needs(payload[2]) else None)
            elif kind == "tf":
                step = stage.transforms(payload, received if not node or any(needs(t[3]) for t in payload) else None)
            elif kind == "marker":
                step = stage.new_rollout(payload)
            else:
                step = stage.finish()
        except Exception as exc:
            out.append(("error", type(exc).__name__, str(exc).replace(tree, "<tree>")))
            continue
        s = step.sample
        try:  # the monitor node steps the frames as they come, its clock (here the arrival time) beside them
            said = ""
            for told in (supervisor.sample(s, received) if s is not None else None,
                         supervisor.finish(received) if kind == "finish" else None):  # fmt: skip
                said += "" if told is None or told == type(told)() else repr(told)  # (most frames: nothing to say)
        except Exception as exc:
            said = f"error {type(exc).__name__}: {exc}"
        sample = None if s is None else (s.t, s.frame, tuple(s.values.items()), tuple(sorted(s.unknown)),
                                         tuple(sorted(s.stale)), tuple(sorted(s.objects.items())))  # fmt: skip
        issues = tuple((i.kind.value, i.stream, i.t, i.detail) for i in step.issues)
        start = None if step.start is None else step.start.value
        out.append((sample, issues, step.frozen, step.frozen_changed, start, said))
    return out


def pipeline_outcome(case: PipelineCase, baseline: BaselineGrounder) -> tuple[str, str]:
    """(`same` or `estimator_differs`, detail): the case's messages through this tree's Estimator over its grounder
    (`compared_grounder`) and the baseline tree's, record for record."""
    messages, mapping = pipeline_messages(case), pipeline_mapping(case)
    mine = estimator_records(compared_grounder(case.robot), mapping, messages, case.node)
    theirs = baseline.estimator_records(messages, grounder_setup(case.robot), mapping, case.node)
    i = first_difference(theirs, mine)
    if i is None:
        return "same", ""
    a = theirs[i] if i < len(theirs) else None
    b = mine[i] if i < len(mine) else None
    m = messages[i] if i < len(messages) else None
    return "estimator_differs", f"message {i} of {len(messages)} ({m!r:.300}):\n  baseline {a}\n  this     {b}"
