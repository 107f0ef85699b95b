"""Fuzzing support shared by the test_fuzz_* tests and benchmarks/fuzz_inputs.py (no tests here).

Strategies make formulas, spec documents and bag damage; each oracle runs one input through the
public entry points and names its outcome class. The classes in FAILURES must never occur: an
exception other than SafetyMonitorError escaping (`leak:<type>`), no result within the time limit
(`hang`), an error message that does not name the file it is about, a result that is not
well-formed, a formula that prints to something that parses differently or whose DFA disagrees with
the reference evaluator, and a damaged bag whose verdicts are silently safer than the intact bag's.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import random
import re
import shutil
import signal
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from hypothesis import strategies as st

from safety_monitor.errors import SafetyMonitorError, SpecError, ToolMissingError
from safety_monitor.frames import PredicateSample, RobotState, Wrench
from safety_monitor.io.bag import BagReader, BagWriter
from safety_monitor.replay.score import BagResult, ReplayConfig, score_bag
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
FAILURES = ("leak", "hang", "unnamed", "malformed", "roundtrip_mismatch", "dfa_mismatch", "ok_silent_safer")


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


def write_base_bag(path: Path, storage: str, state: RobotState) -> Path:
    """1.5 s at 100 Hz of /joint_states, /wrist_wrench (120 N for 0.2 s), object poses at 20 Hz and the
    scripted /safety_monitor/predicates: every frame carries a violation-relevant value."""
    hit = Wrench(np.array([0.0, 0.0, -120.0]), np.zeros(3))
    with BagWriter(path, storage=storage) as w:
        for k in range(FRAMES):
            t = 100.0 + k / RATE
            w.write_wrench("/wrist_wrench", t, hit if 50 <= k < 70 else state.wrench)
            if k % 5 == 0:
                for name, pose in state.object_poses.items():
                    w.write_pose(f"/objects/{name}/pose", t, pose)
            w.write_joint_state("/joint_states", t, state.joint_names, state.joint_position)
            w.write_predicates("/safety_monitor/predicates", PredicateSample(scripted_predicates(k), t, frame=k))
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


def _catch_all(bag: Path, error: str) -> str | None:
    """The exception type when score_bag's catch-all (`<bag>: <Type>: <message>`) produced `error`."""
    found = re.match(re.escape(str(bag)) + r": ([A-Z][A-Za-z0-9_]*): ", error)
    return found.group(1) if found else None


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
        leaked = _catch_all(bag, r.error)
        if leaked:
            return f"leak:{leaked}"
        return "error" if str(bag) in r.error else "unnamed"
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
