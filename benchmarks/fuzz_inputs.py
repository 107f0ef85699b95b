"""Fuzz campaign over bad input: formulas, spec files and damaged bags, with a time limit per input.

    .venv/bin/python benchmarks/fuzz_inputs.py [--formulas 10000] [--compile 1000] [--specs 2000]
        [--bags 1000] [--markers 600] [--objects 300] [--plans 300] [--traces 300] [--configs 600]
        [--tf 300] [--arms 300] [--arm-topics 300] [--logs 600] [--grounder 2000 --baseline DIR [--robots all]]
        [--pipeline 2000 --baseline DIR] [--seconds S] [--seed 0] [--out DIR]

The same strategies and oracles as the test_fuzz_* unit tests (test/test_fuzz_support.py), run much
longer. Each input ends in an outcome class; the FAILURES classes (an exception other than
SafetyMonitorError, no result within --timeout, an error not naming its file, a malformed result, a
formula printed or compiled wrong, a damaged bag scored silently safer) are written to --out with
what reproduces them. The same --seed and counts give the same inputs, also after the package changed
(test_fuzz_support draws no constants from its source). Parts:

- formulas: any text through `parse` (grammar-aware, mutated, raw alphabet, unicode, deep nesting);
- compile: formulas (random, printed, mutated, nested up to 120 deep) through `compile_formula`, each
  DFA checked against the reference evaluator;
- specs: random YAML documents, edited config/specs.yaml, damaged bytes and random formulas, each
  through `load_specs` and `safety-monitor specs check` (which compiles what loads);
- bags: a 1.5 s workcell bag (mcap and sqlite3) truncated, bit-flipped, overwritten, its metadata
  edited or a file removed, sqlite3 tables edited; each read with BagReader and scored in predicate
  and robot-state mode against the intact bag's result;
- markers: the same bag with random, damaged, out-of-order or duplicated episode markers, scored in both
  modes against the unmarked bag's result (well-formed, every frame in one rollout, not silently safer) and
  against the Supervisor driven as the monitor node drives it (the same rollouts, each violation in one or
  withdrawn); `held`: with fewer frames kept for a late start marker and closer checkpoints than by default;
- objects: the same bag with `_objects` values of any shape, through the live decoder and replay's
  predicate mode (the same frames rejected; the verdicts unchanged otherwise);
- plans, traces: docs/verify.md's plan.yaml and CTL trace files edited, through `safety-monitor plan`
  and `safety-monitor ctl` in process (exit 0 or 1, or 2 naming the file; never an internal error); traces'
  `json` inputs through `ctl --json` (a file also given twice, or by another spelling), its `broken_by` the
  trajectories that break a formula alone, each once;
- configs: config/thresholds.yaml, config/robot.yaml and a topic mapping with keys misspelt or of other
  types and values replaced, through their loaders (loaded, or an error naming the file);
- tf: a mobile base's recording (its pose from TF, `world_frame`) with links dropped, renamed, looping,
  stamped backwards, NaN, zero or nearly unit quaternions (the cube's on its TF frame or a pose topic), or its
  topic mapping naming the base as an object's frame or as the world frame (`edited`); where the base stands
  (`base`: its pose jumping away and back or for good, drifting in steps just under or over thresholds.yaml's
  base_jump, its stamps jittered, that section edited), the clean run (the arm raised) one time in two; each
  replayed as `safety-monitor replay --robot --topics` does it against the intact one, and the estimator node's
  stage on it giving replay's frames, verdicts and issues, the base never used while untrusted, its jumps said
  as the rule has them, each quaternion beyond tf2's tolerance said and none within it, no alarm on the clean run;
- arms: a two-arm robot's robot.yaml (`other_arms`, `ignored_joints`) or objects.yaml (`entities` given lists,
  mappings or other shapes) edited, the grounder built from them over the handover's frames (built and
  grounding, or an error naming the file);
- arm_topics: the handover with each arm's JointState on a topic of its own (names without the arm's prefix,
  `joint_prefix` and `more_joint_states`), a topic stopping, restarting, stamped backwards, its names colliding
  or cut, its values NaN, its messages in any order, the mapping's prefixes and joint_names edited, read by
  either arm's stack: an error naming the file or the bag, or no alarm (also where the input restarted
  mid-handover or a judged arm's messages were dropped), live as replay, every frame stale before the other
  topic has sent, and where only the order and spelling changed, the one prefixed topic's verdicts;
- logs: event logs the monitor node's EventLog writes over several runs (a crash, a restart saying the state
  was lost, a full disk, rollouts), cut at any byte, lines edited, junk appended or logs joined, through
  `safety-monitor alerts --log`: one line naming the file, or the view a live console fed the same records shows;
- grounder (only with --baseline, another source tree with its kernels built, e.g. main before a speed change):
  windows of a robot's own runs edited to stress the grounder's caches (objects or joints held exactly still,
  then stepped by one ulp or just under or over a threshold; objects teleported and back; poses missing, NaN or
  too old and back at the same or another place; the wrench missing, NaN or stale; the fingers moving alone;
  frames repeated with the same stamp; `reset()` mid-window; objects walked through the twin's report margin; a
  mobile base's pose lost, away or held still), grounded by this tree's grounder of that robot and the baseline's
  (in a subprocess): every frame's values, unknown, stale ages and named objects bit for bit (`grounder_differs`
  otherwise, prefixed with the robot). `--robots`: the workcell's scripted episodes at 500 Hz (the default), also
  every 5th or 10th step at 100 or 50 Hz, the mobile base, the URDF arm with two fingers (50, 100 Hz) or without
  gripper and wrench sensor, either arm of the two-arm handover (test_fuzz_support.GrounderRobot), or `all`; the
  edits also move only the other arm's fingers;
- pipeline (only with --baseline, as the grounder part): the same robots' runs as message streams (JointState,
  wrench, object poses, the gripper's JointState topic, a mobile base's pose on TF) edited to stress the stages
  around the grounder (values held exactly still then stepped one ulp, 0.0 against -0.0, NaN and inf, joints jumping
  and back, names reordered or cut, stamps repeated, backwards, far ahead or zero, topics stopping and restarting,
  messages out of order across topics, the base jumping just under or over thresholds.yaml's base_jump, rollout
  markers on time or late; stamps from the run's own clock or a wall clock's), fed to this tree's `Estimator` and
  the baseline's as replay drives it or as the estimator node does: every EstimatorStep's sample, issues and
  frozen flags bit for bit (`estimator_differs` otherwise, prefixed with the robot). `--robots` as the grounder's.

"This tree" is the one `safety_monitor` is imported from: PYTHONPATH=<another worktree> runs the grounder and
pipeline parts of that tree (with this file's test helpers) against --baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import io
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MEMORY_LIMIT = 6 << 30  # bytes of address space: a blow-up becomes MemoryError, not a machine out of memory
CUT_WINDOW = 400  # logs: bytes an `every_cut` input cuts at, one after the other


class Stop(Exception):
    """Enough distinct inputs tried, or the part's --seconds are spent: stop generating."""


class Part:
    """One fuzzing part: counts outcome classes, keeps the failing inputs."""

    def __init__(self, name: str, out: Path, timeout: float) -> None:
        self.name, self.out, self.timeout = name, out, timeout
        self.counts: Counter[str] = Counter()
        self.tried = 0  # distinct inputs run
        self.repeats = 0  # inputs hypothesis generated again (skipped, not counted)
        self.seen: set[int] = set()
        self.failures: list[str] = []
        self.slowest = 0.0
        self.slowest_case = ""  # the slowest input's case name (its value is in the report)
        self.slowest_value = ""
        self.wall = 0.0

    def run(
        self, strategy: Any, check: Callable[[Any, Path], list[str]], examples: int, seconds: float, seed: int
    ) -> None:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as fix_seed
        from test_fuzz_support import is_failure

        stop = time.monotonic() + seconds
        start = time.perf_counter()

        @fix_seed(seed)
        @settings(
            max_examples=4 * examples,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def body(value: Any) -> None:
            if self.tried >= examples or time.monotonic() > stop:
                raise Stop
            key = hash(repr(value))
            if key in self.seen:
                self.repeats += 1
                return
            self.seen.add(key)
            self.tried += 1
            case = self.out / f"{self.name.replace('/', '_')}_{self.tried:06d}"
            (self.out / "current.txt").write_text(f"{case.name}\n{value!r}\n")
            faulthandler.dump_traceback_later(3 * self.timeout + 60, exit=True)  # a hang even SIGALRM misses
            began = time.perf_counter()
            outcomes = check(value, case)
            faulthandler.cancel_dump_traceback_later()
            took = time.perf_counter() - began
            if took > self.slowest:
                self.slowest, self.slowest_case, self.slowest_value = took, case.name, repr(value)[:160]
            self.counts.update(outcomes)
            bad = [o for o in outcomes if is_failure(o)]
            if bad:
                case.mkdir(parents=True, exist_ok=True)
                (case / "input.txt").write_text(f"{value!r}\n{bad}\n")
                self.failures.append(f"{case}: {', '.join(bad)}")

        with contextlib.suppress(Stop):
            body()
        self.wall = time.perf_counter() - start

    def report(self) -> str:
        classes = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])))
        lines = [
            f"{self.name}: {self.tried} distinct inputs ({self.repeats} repeats skipped) in {self.wall:.0f} s, "
            f"slowest {self.slowest:.2f} s, {len(self.failures)} failing",
            f"  {classes}",
            f"  slowest input {self.slowest_case}: {self.slowest_value}",
        ]
        lines += [f"  FAIL {f}" for f in self.failures[:20]]
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------ checks
def check_formula(timeout: float) -> Callable[[str, Path], list[str]]:
    from test_fuzz_support import formula_outcome, guarded

    def check(text: str, case: Path) -> list[str]:
        outcome, detail = guarded(lambda: formula_outcome(text), timeout)
        return [outcome]

    return check


def check_compile(timeout: float) -> Callable[[str, Path], list[str]]:
    from test_fuzz_support import formula_outcome, guarded

    def check(text: str, case: Path) -> list[str]:
        outcome, detail = guarded(lambda: formula_outcome(text, compile=True), timeout)
        return [outcome]

    return check


def check_spec(folder: Path, timeout: float) -> Callable[[tuple[str, Any], Path], list[str]]:
    """load_specs, then `specs check` in process: exit 0, or 2 with one header line and no traceback."""
    from test_fuzz_support import guarded, spec_outcome, write_text_doc

    from safety_monitor.cli import main

    path = folder / "specs.yaml"

    def cli() -> str:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["specs", "check", str(path)])
        text = err.getvalue()
        if "Traceback" in text or code not in (0, 2):
            return "cli_leak"
        if code == 2 and not text.startswith(f"safety-monitor specs: error: {path}"):
            return "cli_unnamed"
        return f"cli_exit_{code}"

    def check(item: tuple[str, Any], case: Path) -> list[str]:
        kind, value = item
        if kind == "bytes":
            path.write_bytes(value)
        elif not write_text_doc(path, value):
            return ["not_representable"]
        loaded, detail = guarded(lambda: spec_outcome(path), timeout)
        command, detail2 = guarded(cli, timeout)
        if loaded.startswith(("leak", "hang", "unnamed")) or command.startswith(
            ("leak", "hang", "cli_leak", "cli_unnamed")
        ):
            case.mkdir(parents=True, exist_ok=True)
            (case / "specs.yaml").write_bytes(path.read_bytes())
            (case / "detail.txt").write_text(f"{detail}\n{detail2}\n")
        return [f"load:{loaded}", f"cli:{command}"]

    return check


def check_bag(folder: Path, timeout: float) -> Callable[[tuple[str, Any], Path], list[str]]:
    """Read the damaged bag, score it in both modes against the intact bag's results."""
    from test_fuzz_support import (
        BAG_SPECS,
        MODES,
        STORAGES,
        damaged_copy,
        guarded,
        is_failure,
        read_outcome,
        replay_config,
        score_outcome,
        write_base_bag,
    )

    from safety_monitor.replay.score import score_bag
    from safety_monitor.sim.runner import run_episode

    state = next(run_episode("pick_and_place_cube"))
    specs = folder / "specs.yaml"
    specs.write_text(BAG_SPECS)
    base = {s: write_base_bag(folder / f"base_{s}", s, state) for s in STORAGES}
    reference = {(s, m): score_bag(base[s], replay_config(specs, m)) for s in STORAGES for m in MODES}
    for key, result in reference.items():
        assert result.ok and result.frames, (key, result.error)

    def check(item: tuple[str, Any], case: Path) -> list[str]:
        storage, damage = item
        bag = damaged_copy(base[storage], damage, folder / "damaged")
        outcomes = [f"read:{guarded(lambda: read_outcome(bag), timeout)[0]}"]
        for mode in MODES:
            config = replay_config(specs, mode)
            outcome, _ = guarded(lambda: score_outcome(bag, config, reference[storage, mode]), timeout)
            outcomes.append(f"{mode}:{outcome}")
        if any(is_failure(o) for o in outcomes):
            damaged_copy(base[storage], damage, case / "bag")
        return outcomes

    return check


def check_markers(folder: Path, timeout: float) -> Callable[[tuple[Any, ...], Path], list[str]]:
    """Score the marked bag in both modes against the unmarked bag's results, and in predicate mode against the
    Supervisor driven as the monitor node drives it; `held` inputs with the late-marker limits given."""
    from test_fuzz_support import (
        BAG_SPECS,
        MODES,
        guarded,
        is_failure,
        late_limits,
        marker_live_outcome,
        marker_outcome,
        replay_config,
        write_base_bag,
    )

    from safety_monitor.replay.score import score_bag
    from safety_monitor.sim.runner import run_episode

    state = next(run_episode("pick_and_place_cube"))
    specs = folder / "specs.yaml"
    specs.write_text(BAG_SPECS)
    base = {s: write_base_bag(folder / f"base_{s}", s, state) for s in ("mcap", "sqlite3")}
    reference = {(s, m): score_bag(base[s], replay_config(specs, m)) for s in base for m in MODES}

    def check(item: tuple[Any, ...], case: Path) -> list[str]:
        storage, markers, *limits = item
        bag = folder / "marked"
        shutil.rmtree(bag, ignore_errors=True)
        write_base_bag(bag, storage, state, markers)
        outcomes = []
        with late_limits(*limits[0]) if limits else contextlib.nullcontext():
            for mode in MODES:
                config = replay_config(specs, mode)
                outcome, _ = guarded(lambda: marker_outcome(bag, config, reference[storage, mode]), timeout)
                outcomes.append(f"{mode}:{outcome}")
            config = replay_config(specs, "predicates")
            outcomes.append(f"live:{guarded(lambda: marker_live_outcome(bag, config), timeout)[0]}")
        if any(is_failure(o) for o in outcomes):
            shutil.copytree(bag, case / "bag")
        return outcomes

    return check


def check_objects(folder: Path, timeout: float) -> Callable[[Any, Path], list[str]]:
    """The live decoder and replay's predicate mode on a bag with edited `_objects` values."""
    from test_fuzz_support import BAG_SPECS, guarded, is_failure, objects_outcome, replay_config, write_base_bag

    from safety_monitor.replay.score import score_bag
    from safety_monitor.sim.runner import run_episode

    state = next(run_episode("pick_and_place_cube"))
    specs = folder / "specs.yaml"
    specs.write_text(BAG_SPECS)
    config = replay_config(specs, "predicates")
    reference = score_bag(write_base_bag(folder / "base", "mcap", state), config)

    def check(objects: Any, case: Path) -> list[str]:
        bag = folder / "edited"
        shutil.rmtree(bag, ignore_errors=True)
        write_base_bag(bag, "mcap", state, objects=objects)
        outcome, _ = guarded(lambda: objects_outcome(bag, config, reference, objects), timeout)
        if is_failure(outcome):
            shutil.copytree(bag, case / "bag")
        return [outcome]

    return check


def check_plan(folder: Path, timeout: float) -> Callable[[Any, Path], list[str]]:
    """`safety-monitor plan --specs config/specs.yaml` on the edited plan."""
    from test_fuzz_support import cli_outcome, guarded, write_text_doc

    plan = folder / "plan.yaml"
    specs = str(REPO / "config" / "specs.yaml")

    def check(doc: Any, case: Path) -> list[str]:
        if not write_text_doc(plan, doc):
            return ["not_representable"]
        return [guarded(lambda: cli_outcome(["plan", "--specs", specs, str(plan)], (plan,)), timeout)[0]]

    return check


def check_traces(folder: Path, timeout: float) -> Callable[[tuple[str, ...], Path], list[str]]:
    """`safety-monitor ctl` on the two edited trace files with two formulas; `json` inputs with --json and four,
    its `broken_by` and `counterexamples` checked against ctl on each file alone."""
    from test_fuzz_support import CTL_FORMULAS, cli_outcome, ctl_json_outcome, guarded, is_failure, trace_arguments

    files = (folder / "pick_1.jsonl", folder / "pick_2.jsonl")
    (folder / "sub").mkdir()
    args = ["ctl", *map(str, files), *[a for f in CTL_FORMULAS for a in ("--formula", f)]]

    def check(item: tuple[str, ...], case: Path) -> list[str]:
        *json_layout, first, second = item
        for path, text in zip(files, (first, second)):
            path.write_text(text, newline="")
        if json_layout:
            given = trace_arguments(files, json_layout[1])
            outcome = guarded(lambda: ctl_json_outcome(given), timeout)[0]
            if is_failure(outcome):
                case.mkdir(parents=True, exist_ok=True)
                for path in files:
                    shutil.copy(path, case / path.name)
            return [outcome]
        return [guarded(lambda: cli_outcome(args, files), timeout)[0]]

    return check


def check_tf(folder: Path, timeout: float) -> Callable[[tuple[Any, ...], Path], list[str]]:
    """Replay of the mobile base's recording, its TF, topic mapping or thresholds edited, against the intact
    recording's (the clean one's for inputs with `clean`), and the estimator node's stage on it."""
    from mjcf_robots import write_mobile_robot
    from test_fuzz_support import (
        TfEdit,
        guarded,
        is_failure,
        mobile_mapping,
        tf_outcome,
        write_mobile_bag,
        write_mobile_config,
    )

    from safety_monitor.pipeline.assemble import StreamMapping
    from safety_monitor.replay.score import ReplayConfig, score_bag

    robot = write_mobile_robot(folder / "robot")
    intact = ReplayConfig(robot=str(robot), mapping=StreamMapping.from_dict(mobile_mapping()))
    references = {
        clean: score_bag(write_mobile_bag(folder / f"intact_{clean}", (TfEdit("clean", ()),) if clean else ()), intact)
        for clean in (False, True)
    }
    assert all(r.ok for r in references.values()), [r.error for r in references.values()]
    assert any(o.violations for o in references[False].trace.outcomes)

    def check(edits: tuple[Any, ...], case: Path) -> list[str]:
        bag = folder / "edited"
        shutil.rmtree(bag, ignore_errors=True)
        write_mobile_bag(bag, edits)
        topics = write_mobile_config(folder, robot, edits)
        outcome, detail = guarded(lambda: tf_outcome(bag, robot, topics, references, edits), timeout)
        if is_failure(outcome):
            shutil.copytree(bag, case / "bag")
            (case / "detail.txt").write_text(detail)
            shutil.copy(topics, case / "topics.yaml")
            shutil.copy(robot.parent / "thresholds.yaml", case / "thresholds.yaml")
        return [outcome]

    return check


def check_arms(folder: Path, timeout: float) -> Callable[[tuple[str, tuple], Path], list[str]]:
    """The grounder from a two-arm robot's edited robot.yaml or objects.yaml, over the two-arm run's frames."""
    import two_arm_run
    from test_fuzz_support import arm_outcome, guarded, is_failure, write_arm_config

    (folder / "described").mkdir()
    described = two_arm_run.describe(folder / "described")
    states = two_arm_run.run().states[::10]  # every fifth of a second of the handover

    def check(item: tuple[str, tuple], case: Path) -> list[str]:
        robot = write_arm_config(folder / "edited" / "left", described, item)
        outcome, _ = guarded(lambda: arm_outcome(robot, states), timeout)
        if is_failure(outcome):
            shutil.copytree(robot.parent, case / "left")
        return [f"{item[0]}:{outcome}"]

    return check


def check_arm_topics(folder: Path, timeout: float) -> Callable[[tuple[str, tuple], Path], list[str]]:
    """Replay of the two arms' recording, each arm's JointState on a topic of its own, edited or its topic mapping
    edited, read by the left or the right arm's stack, against the one prefixed topic's; and the estimator node's
    stage on it."""
    import two_arm_run
    from test_fuzz_support import (
        ARM_RATE,
        ARM_WINDOW,
        arm_topics_mapping,
        arm_topics_outcome,
        guarded,
        is_failure,
        write_arm_topics_bag,
        write_one_topic_bag,
        write_text_doc,
    )

    from safety_monitor.pipeline.assemble import StreamMapping
    from safety_monitor.replay.score import ReplayConfig, score_bag

    (folder / "described").mkdir()
    described = two_arm_run.describe(folder / "described")
    states = two_arm_run.run().states[ARM_WINDOW]
    one = write_one_topic_bag(folder / "one", states)
    references = {
        arm: score_bag(
            one, ReplayConfig(robot=str(described[arm]), mapping=StreamMapping(wrench=None), rate_hz=ARM_RATE)
        )
        for arm in described
    }
    assert all(r.ok and not any(o.violations for o in r.trace.outcomes) for r in references.values())
    topics = folder / "topics.yaml"

    def check(item: tuple[str, tuple], case: Path) -> list[str]:
        arm, edits = item
        bag = write_arm_topics_bag(folder / "two", states, edits)
        write_text_doc(topics, arm_topics_mapping(edits))
        outcome, detail = guarded(
            lambda: arm_topics_outcome(bag, described[arm], topics, references[arm], edits), timeout
        )
        if is_failure(outcome):
            shutil.copytree(bag, case / "bag")
            (case / "detail.txt").write_text(detail)
            shutil.copy(topics, case / "topics.yaml")
        return [f"{arm}:{outcome}"]

    return check


def check_logs(folder: Path, timeout: float) -> Callable[[Any, Path], list[str]]:
    """`safety-monitor alerts --log` on event logs the monitor node's EventLog wrote over several runs (LOG_LAYOUTS),
    cut, edited or joined; `every_cut` inputs (log, window) read one log cut at every byte of one CUT_WINDOW
    (`cut_outcomes`: a few seconds an input, where a whole log is minutes)."""
    from test_fuzz_support import (
        LOG_LAYOUTS,
        cut_outcomes,
        edited_log,
        guarded,
        is_failure,
        log_outcome,
        write_event_log,
    )

    logs = [write_event_log(folder / f"log_{k}.jsonl", layout).read_bytes() for k, layout in enumerate(LOG_LAYOUTS)]
    path = folder / "edited.jsonl"

    def check(edit: Any, case: Path) -> list[str]:
        if edit.kind == "every_cut":
            data, start = logs[edit.params[0]], edit.params[1] * CUT_WINDOW
            return cut_outcomes(data, path, range(start, min(start + CUT_WINDOW, len(data) + 1)))
        path.write_bytes(edited_log(logs, edit))
        outcome, _ = guarded(lambda: log_outcome(path), timeout)
        if is_failure(outcome):
            case.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, case / path.name)
        return [outcome]

    return check


def check_config(folder: Path, timeout: float) -> Callable[[tuple[str, Any], Path], list[str]]:
    """The file's own loader on the edited thresholds.yaml, robot.yaml or topic mapping."""
    from test_fuzz_support import config_outcome, guarded, write_text_doc

    def check(item: tuple[str, Any], case: Path) -> list[str]:
        which, doc = item
        path = folder / f"{which}.yaml"
        if not write_text_doc(path, doc):
            return [f"{which}:not_representable"]
        return [f"{which}:{guarded(lambda: config_outcome(which, path), timeout)[0]}"]

    return check


def check_against(
    baseline: Path,
    timeout: float,
    outcome: Callable[[Any, Any], tuple[str, str]],
    inputs: Callable[[Any], tuple[str, object]],
) -> Callable[[Any, Path], list[str]]:
    """The same case through this tree and `baseline`'s (`outcome(case, baseline)`: its class and the difference's
    detail); a difference is written with `inputs(case)` (a file name and what to pickle), a hang restarts the
    baseline (it may be mid-reply)."""
    import pickle

    from test_fuzz_support import BaselineGrounder, guarded

    other = [BaselineGrounder(baseline)]
    found = [""]  # the difference's detail

    def compared(case: Any) -> str:
        result, found[0] = outcome(case, other[0])
        return result

    def check(case: Any, folder: Path) -> list[str]:
        found[0] = ""
        result, detail = guarded(lambda: compared(case), timeout)
        if result == "hang":
            other[0].close()
            other[0] = BaselineGrounder(baseline)
        if result != "same":
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "detail.txt").write_text(f"{case!r}\n{detail or found[0]}\n")
            name, data = inputs(case)
            (folder / name).write_bytes(pickle.dumps(data))
        return [f"{case.robot}:{result}"]

    return check


def check_grounder(baseline: Path, timeout: float) -> Callable[[Any, Path], list[str]]:
    """The same edited frames grounded by this tree's default grounder and by `baseline`'s, record for record."""
    from test_fuzz_support import case_states, edited_window, grounder_outcome

    return check_against(
        baseline, timeout, grounder_outcome, lambda case: ("steps.pkl", edited_window(case_states(case), case))
    )


def check_pipeline(baseline: Path, timeout: float) -> Callable[[Any, Path], list[str]]:
    """The same edited message stream through this tree's Estimator and `baseline`'s, step for step."""
    from test_fuzz_support import pipeline_mapping, pipeline_messages, pipeline_outcome

    return check_against(
        baseline,
        timeout,
        pipeline_outcome,
        lambda case: ("messages.pkl", (pipeline_mapping(case), pipeline_messages(case))),
    )


def generators(robots: tuple[str, ...] = ("workcell",)) -> dict[str, dict[str, Any]]:
    """Per part, its input generators by name (each gets an equal share of the part's inputs); the grounder's, one
    per robot of `robots` (GrounderRobot values)."""
    from hypothesis import strategies as st
    from test_fuzz_support import (
        FORMULA_ALPHABET,
        LOG_LAYOUTS,
        STORAGES,
        GrounderRobot,
        LogEdit,
        arm_configs,
        arm_topic_edits,
        base_edits,
        damages,
        deep_formula_texts,
        formulas,
        grounder_edits,
        held_marker_layouts,
        json_traces,
        log_edits,
        marker_layouts,
        mutated,
        mutated_configs,
        mutated_default_specs,
        mutated_plans,
        mutated_traces,
        objects_values,
        pipeline_edits,
        rendered,
        spec_documents,
        spec_file_bytes,
        specs_with_random_formula,
        tf_edits,
    )

    from safety_monitor.specs.ltlf import to_text

    return {
        "formulas": {
            "rendered": rendered(),
            "mutated": mutated(rendered()),
            "alphabet": st.text(alphabet=FORMULA_ALPHABET, max_size=60),
            "unicode": st.text(max_size=60),
            "deep": deep_formula_texts(max_depth=5000),
        },
        "compile": {
            "ast": formulas(8).map(to_text),
            "rendered": rendered(),
            "mutated": mutated(rendered()),
            "deep": deep_formula_texts(max_depth=120),
        },
        "specs": {
            "document": spec_documents().map(lambda d: ("document", d)),
            "edited": mutated_default_specs().map(lambda d: ("edited", d)),
            "bytes": spec_file_bytes(max_nesting=1500).map(lambda b: ("bytes", b)),
            "random_formula": specs_with_random_formula().map(lambda d: ("random_formula", d)),
        },
        "bags": {s: damages(s).map(lambda d, s=s: (s, d)) for s in STORAGES},
        "markers": {
            **{s: marker_layouts().map(lambda m, s=s: (s, m)) for s in STORAGES},
            "held": held_marker_layouts().map(lambda h: ("mcap", *h)),
        },
        "objects": {"objects": objects_values()},
        "plans": {"edited": mutated_plans()},
        "traces": {"edited": mutated_traces(), "json": json_traces()},
        "configs": {"edited": mutated_configs()},
        "tf": {"edited": tf_edits(), "base": base_edits()},
        "arms": {"edited": arm_configs()},
        "arm_topics": {"edited": arm_topic_edits()},
        "logs": {
            "edited": log_edits(),
            "every_cut": st.tuples(st.integers(0, len(LOG_LAYOUTS) - 1), st.integers(0, 40)).map(
                lambda kw: LogEdit("every_cut", kw)
            ),  # (every byte of a log of up to 41 windows)
        },
        "grounder": {robot: grounder_edits((GrounderRobot(robot),)) for robot in robots},
        "pipeline": {robot: pipeline_edits((GrounderRobot(robot),)) for robot in robots},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--formulas", type=int, default=10000, help="formula texts through parse")
    parser.add_argument("--compile", type=int, default=1000, help="formulas through compile_formula")
    parser.add_argument("--specs", type=int, default=2000, help="spec files through load_specs and specs check")
    parser.add_argument("--bags", type=int, default=1000, help="damaged bags read and scored in both modes")
    parser.add_argument("--markers", type=int, default=600, help="bags with episode markers scored in both modes")
    parser.add_argument("--objects", type=int, default=300, help="bags with edited _objects values")
    parser.add_argument("--plans", type=int, default=300, help="edited plan files through `safety-monitor plan`")
    parser.add_argument("--traces", type=int, default=300, help="edited trace files through `safety-monitor ctl`")
    parser.add_argument("--configs", type=int, default=600, help="edited thresholds, robot and topic mapping files")
    parser.add_argument("--tf", type=int, default=300, help="a mobile base's recording with its TF or mapping edited")
    parser.add_argument("--arms", type=int, default=300, help="a two-arm robot's other_arms, ignored joints, entities")
    parser.add_argument(
        "--arm-topics", type=int, default=300, help="two arms' JointStates on topics of their own, edited"
    )
    parser.add_argument("--logs", type=int, default=600, help="event logs cut, edited or joined, through alerts --log")
    parser.add_argument(
        "--grounder", type=int, default=2000, help="edited episode windows grounded here and by --baseline's tree"
    )
    parser.add_argument(
        "--pipeline",
        type=int,
        default=2000,
        help="edited message streams through this tree's and --baseline's Estimator",
    )
    parser.add_argument(
        "--robots",
        default="workcell",
        help="the grounder and pipeline parts' robots and rates, comma-separated, or `all`: workcell (500 Hz), workcell_100, "
        "workcell_50, mobile, urdf, urdf_100, no_gripper, left_arm, right_arm (an equal share each)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="the source tree (its kernels built) whose grounder and Estimator the grounder and pipeline parts compare "
        "with; without it they are skipped",
    )
    parser.add_argument(
        "--seconds", type=float, default=3600.0, help="wall-clock budget per part (shared by its generators)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=90.0,
        help="limit per input in seconds (MONA alone may take 60 s on a hard formula)",
    )
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (generator i uses seed + i)")
    parser.add_argument("--out", help="folder for failing inputs (default: a new temporary folder)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "test"))
    from test_fuzz_support import GrounderRobot

    robots = tuple(GrounderRobot) if args.robots == "all" else tuple(r.strip() for r in args.robots.split(","))
    unknown = [r for r in robots if r not in tuple(GrounderRobot)]
    if unknown:
        parser.error(f"--robots: no robot {', '.join(unknown)} (one of {', '.join(GrounderRobot)}, or all)")

    out = Path(args.out or tempfile.mkdtemp(prefix="fuzz_inputs_"))
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("SAFETY_MONITOR_CACHE_DIR", str(out / "dfa_cache"))  # random formulas stay out of ~/.cache
    os.environ.setdefault("MUJOCO_GL", "egl")
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    import safety_monitor

    print(
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, seed {args.seed}, "
        f"timeout {args.timeout:.0f} s per input, failing inputs to {out}, safety_monitor from "
        f"{Path(safety_monitor.__file__).parents[1]}",
        flush=True,
    )
    checks = {
        "formulas": lambda: check_formula(args.timeout),
        "compile": lambda: check_compile(args.timeout),
        "specs": lambda: check_spec(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "bags": lambda: check_bag(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "markers": lambda: check_markers(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "objects": lambda: check_objects(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "plans": lambda: check_plan(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "traces": lambda: check_traces(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "configs": lambda: check_config(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "tf": lambda: check_tf(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "arms": lambda: check_arms(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "arm_topics": lambda: check_arm_topics(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "logs": lambda: check_logs(Path(tempfile.mkdtemp(dir=out)), args.timeout),
        "grounder": lambda: check_grounder(args.baseline, args.timeout),
        "pipeline": lambda: check_pipeline(args.baseline, args.timeout),
    }
    budget = {
        "formulas": args.formulas,
        "compile": args.compile,
        "specs": args.specs,
        "bags": args.bags,
        "markers": args.markers,
        "objects": args.objects,
        "plans": args.plans,
        "traces": args.traces,
        "configs": args.configs,
        "tf": args.tf,
        "arms": args.arms,
        "arm_topics": args.arm_topics,
        "logs": args.logs,
        "grounder": args.grounder if args.baseline else 0,
        "pipeline": args.pipeline if args.baseline else 0,
    }
    for name in ("grounder", "pipeline"):
        if getattr(args, name) > 0 and not args.baseline:
            print(f"{name}: skipped (no --baseline tree to compare with)", flush=True)
    failing = 0
    for name, named in generators(robots).items():
        if budget[name] <= 0:
            continue
        check = checks[name]()
        total = Counter()
        for i, (label, strategy) in enumerate(named.items()):
            share = budget[name] // len(named) + (i < budget[name] % len(named))
            part = Part(f"{name}/{label}", out, args.timeout)
            part.run(strategy, check, share, args.seconds / len(named), args.seed + i)  # generators differ
            print(part.report(), flush=True)
            failing += len(part.failures)
            total["inputs"] += part.tried
        print(f"{name}: {total['inputs']} inputs in all", flush=True)
    print(f"failing inputs: {failing}" + (f" (see {out})" if failing else ""))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
