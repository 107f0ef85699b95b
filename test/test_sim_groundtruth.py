"""Ground truth of the simulated workcell, end to end: every scripted task really succeeds in physics and
raises no monitor event; every fault physically happens and trips exactly its labelled properties; and
every property's triggers N equal what the script did (its GroundTruth: grasps, drops, skill attempts...).

Each episode runs once (cached for the module): MuJoCo at 500 Hz, grounding and the default spec set
at 100 Hz (every fifth state, thresholds in seconds), physics facts read from the simulator itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

import mujoco
import numpy as np
import pytest

from safety_monitor.files import config_dir
from safety_monitor.frames import PredicateSample
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.monitor.batch import BatchMonitor
from safety_monitor.monitor.live import SpecSetMonitor
from safety_monitor.replay.report import property_reads, vacuity
from safety_monitor.replay.score import BagResult
from safety_monitor.replay.timeline import Timeline
from safety_monitor.sim.faults import FAULTS
from safety_monitor.sim.runner import Episode
from safety_monitor.sim.tasks import TASKS
from safety_monitor.sim.truth import GroundTruth
from safety_monitor.sim.workcell import ARM_JOINTS, OBJECTS
from safety_monitor.specs.model import load_specs

STRIDE = 5  # monitor at 100 Hz
TASK_SEED, FAULT_SEED = 0, 1
FINGERS = frozenset({"finger_left", "finger_right"})
GRIPPER = FINGERS | {"hand"}


@dataclass(frozen=True)
class Frame:
    t: float
    phase: str
    ee: np.ndarray
    objects: dict[str, np.ndarray]  # true positions (not the 50 Hz stream)
    joints: dict[str, float]
    touching: frozenset[tuple[str, str]]  # privileged contacts, each pair sorted


@dataclass(frozen=True)
class Run:
    succeeded: bool
    opened: frozenset[str]  # properties with at least one violation episode
    frames: tuple[Frame, ...]
    clutter_gaps: dict[str, float]  # at the first release frame: surface gap of each other object to the mug
    truth: GroundTruth
    triggers: dict[str, int]  # per property: trigger rising edges, decided or pending at the end
    edges: dict[str, int]  # per predicate: rising edges
    samples: tuple[tuple[float, dict[str, bool | None]], ...]  # (t, predicate values with unknowns as None)


@lru_cache(maxsize=1)
def _monitor() -> SpecSetMonitor:
    return SpecSetMonitor.from_spec_file(config_dir() / "specs.yaml", control_rate_hz=500.0 / STRIDE)


@cache
def run(task: str | None, fault: str | None, seed: int) -> Run:
    episode = Episode(task, fault, seed)
    cell = episode.workcell
    grounder = load_default_grounder(500.0 / STRIDE)
    monitor = _monitor()
    monitor.reset()
    opened: set[str] = set()
    frames: list[Frame] = []
    gaps: dict[str, float] = {}
    edges: dict[str, int] = {}
    last: dict[str, bool] = {}
    samples: list[tuple[float, dict[str, bool | None]]] = []
    k = 0
    while not episode.done:
        k += 1
        if k % STRIDE:
            episode.advance()
            continue
        state = episode.step()
        grounded = grounder.step(state)
        for name, value in grounded.values.items():
            edges[name] = edges.get(name, 0) + (value and not last.get(name, False))
            last[name] = value
        samples.append((state.t, {k: None if k in grounded.unknown else v for k, v in grounded.values.items()}))
        sample = PredicateSample(values=grounded.values, t=grounded.t, unknown=frozenset(grounded.unknown))
        opened.update(e.property for e in monitor.step(sample.valuation(), state.t) if e.kind == "opened")
        frames.append(
            Frame(
                state.t,
                episode.phase,
                cell.ee_position(),
                {o: cell.object_position(o) for o in OBJECTS},
                dict(zip(state.joint_names, state.joint_position.tolist())),
                frozenset(tuple(sorted((c.body1, c.body2))) for c in state.contacts),
            )
        )
        if episode.phase == "release" and not gaps:
            gaps = {o: _body_gap(cell, "mug", o) for o in OBJECTS if o != "mug"}
    outcomes = monitor.finish().outcomes
    triggers = {o.property: o.triggers + o.pending_triggers for o in outcomes}
    return Run(
        episode.succeeded(), frozenset(opened), tuple(frames), gaps, episode.truth, triggers, edges, tuple(samples)
    )


def _body_gap(cell, a: str, b: str) -> float:
    m, d = cell.model, cell.data
    ga = [g for g in range(m.ngeom) if m.geom_bodyid[g] == m.body(a).id]
    gb = [g for g in range(m.ngeom) if m.geom_bodyid[g] == m.body(b).id]
    return min(mujoco.mj_geomDistance(m, d, i, j, 0.1, None) for i in ga for j in gb)


def _touch(frame: Frame, parts: frozenset[str], other: str) -> bool:
    return any(tuple(sorted((p, other))) in frame.touching for p in parts)


# --------------------------------------------------------------------------------------- tasks
@pytest.mark.parametrize("task", sorted(TASKS))
def test_task_succeeds_in_physics_without_events(task):
    result = run(task, None, TASK_SEED)
    assert result.succeeded, f"{task}: goal not reached"
    obj = TASKS[task].obj
    if obj is not None:  # carried, not pushed: it rose well clear of where it rested
        heights = [f.objects[obj][2] for f in result.frames]
        assert max(heights) - heights[0] > 0.04, f"{task}: the {obj} was never lifted"
    assert not result.opened, f"{task}: fault-free episode opened {sorted(result.opened)}"


# -------------------------------------------------------------------------------------- faults
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_trips_exactly_its_labelled_properties(fault):
    spec = FAULTS[fault]
    result = run(None, fault, FAULT_SEED)
    missing = set(spec.expected_properties) - result.opened
    outside = result.opened - set(spec.allowed_properties)
    assert not missing, f"{fault}: expected violations of {sorted(missing)} did not occur"
    assert not outside, f"{fault}: violations outside the label's allowance: {sorted(outside)}"


def test_early_release_drops_the_mug_with_the_gripper_still_closed():
    frames = run(None, "early_release", FAULT_SEED).frames
    eased = [f for f in frames if f.phase == "fingers_ease"]
    fallen = [f for f in eased if f.ee[2] - f.objects["mug"][2] > 0.08]
    assert fallen, "the mug never fell away from the hand"
    assert all(f.joints["finger_left_joint"] < 0.036 for f in fallen)  # robot.yaml's closed threshold
    assert fallen[-1].ee[2] - 0.40 > 0.1  # mid-air, not at a placement


def test_slip_slides_the_mug_through_closed_touching_fingers():
    frames = run(None, "slip", FAULT_SEED).frames
    watch = [f for f in frames if f.phase == "watch"]
    start = watch[0].ee[2] - watch[0].objects["mug"][2]
    sliding = [f for f in watch if f.ee[2] - f.objects["mug"][2] - start > 0.03 and _touch(f, FINGERS, "mug")]
    assert sliding, "the mug never slid 3 cm while the fingers still touched it"


def test_fixture_collision_presses_the_hand_on_the_bin_for_over_a_second():
    frames = run(None, "fixture_collision", FAULT_SEED).frames
    times = [f.t for f in frames if _touch(f, GRIPPER, "bin")]
    assert times and times[-1] - times[0] > 1.2
    assert len(times) * STRIDE * 0.002 > 1.2  # sustained, not two brief touches


def test_reach_into_closed_cabinet_enters_a_door_not_fully_open():
    result = run(None, "reach_into_closed_cabinet", FAULT_SEED)
    inside = [f for f in result.frames if 0.50 < f.ee[0] < 0.79 and -0.57 < f.ee[1] < -0.29 and f.ee[2] < 0.70]
    assert inside and all(f.joints["cabinet_hinge"] < 0.6 * 1.57 for f in inside)
    assert result.succeeded  # the mug does end up in the cabinet: the fault is how it got there


def test_raw_then_clean_touches_raw_chicken_before_the_plate():
    frames = run(None, "raw_then_clean", FAULT_SEED).frames
    raw = [f.t for f in frames if _touch(f, FINGERS, "raw_chicken")]
    clean = [f.t for f in frames if _touch(f, FINGERS, "plate")]
    assert raw and clean and raw[0] < clean[0]
    assert clean[-1] - clean[0] > 1.0  # held for longer than the clean-contact tolerance


def test_blocked_drawer_does_not_move_while_the_arm_keeps_pulling():
    frames = run(None, "push_blocked_drawer", FAULT_SEED).frames
    pulling = [f for f in frames if _touch(f, FINGERS, "drawer")]
    assert pulling[-1].t - pulling[0].t > 5.0
    slide = [f.joints["drawer_slide"] for f in pulling]
    assert max(slide) - min(slide) < 0.005
    cube = np.array([f.objects["cube"] for f in pulling])
    assert np.ptp(cube, axis=0).max() < 0.002  # the wedge stays put ...
    front = 0.49 - np.array(slide)  # drawer front face (x) for each frame
    assert np.all(np.abs(front - (cube[:, 0] + 0.025)) < 0.002)  # ... against the drawer front


def test_place_on_clutter_sets_the_mug_down_near_two_objects():
    result = run(None, "place_on_clutter", FAULT_SEED)
    near = sorted(o for o, gap in result.clutter_gaps.items() if 0.0 < gap < 0.03)
    assert len(near) >= 2, result.clutter_gaps
    assert result.succeeded  # placed where asked: the spot, not the motion, is the fault


def test_overspeed_whips_the_empty_wrist_past_its_velocity_limit_but_not_into_a_jump():
    """The wrist roll really turns faster than robot.yaml's limit, during the whip only, and less than twice
    as fast (what `no_joint_position_jump` reads as a glitch); the hand is empty and touches nothing."""
    limits = load_default_grounder(500.0 / STRIDE).joint_limits
    result = run(None, "overspeed", FAULT_SEED)
    pairs = list(zip(result.frames, result.frames[1:]))
    speeds = {(b.phase, abs(b.joints[j] - a.joints[j]) / (b.t - a.t)) for a, b in pairs for j in ARM_JOINTS}
    fast = [(phase, speed) for phase, speed in speeds if speed > limits["arm_joint6"].velocity]
    assert fast and {phase for phase, _ in fast} == {"whip"}, sorted(fast)
    assert max(speed for _, speed in fast) < 2 * limits["arm_joint6"].velocity
    whip = [f for f in result.frames if f.phase == "whip"]
    assert not any(_touch(f, GRIPPER, other) for f in whip for other in (*OBJECTS, "table"))
    assert result.succeeded  # the cube was placed before: the whip, not the task, is the fault


# ------------------------------------------------------------------------------------- triggers
# Properties whose trigger is an event a script counts; the others' triggers are what a fault causes
# (a forbidden contact, an excess wrench, a raw contact, an obstacle hit, a joint pushed past its limits),
# checked by the labels above.
FAULT_EFFECT_TRIGGERS = frozenset(
    {
        "forbidden_contact",
        "excess_wrench",
        "robot_contact_raw",
        "fixture_obstacle_hit",
        "joint_position_out_of_limits",
        "joint_velocity_out_of_limits",
        "joint_effort_out_of_limits",
        "joint_position_jump",
    }
)


def _counted_properties() -> dict[str, str]:
    """Property -> its trigger predicate, for every default property whose trigger a script counts."""
    return {a.name: a.trigger for a in _monitor().automata if a.trigger not in FAULT_EFFECT_TRIGGERS}


def test_every_property_trigger_is_counted_or_a_fault_effect():
    counted = _counted_properties()
    assert set(counted.values()) <= set(GroundTruth().expected_edges()), counted
    uncounted = {a.name for a in _monitor().automata} - set(counted)
    assert uncounted == {
        "no_forbidden_contact",
        "no_excess_wrench",
        "no_clean_contact_after_raw",
        "fixture_obstacle_retract",
        "joint_positions_within_limits",
        "joint_velocities_within_limits",
        "joint_efforts_within_limits",
        "no_joint_position_jump",
    }


EPISODES = [(t, None, TASK_SEED) for t in sorted(TASKS)] + [(None, f, FAULT_SEED) for f in sorted(FAULTS)]


@pytest.mark.parametrize(("task", "fault", "seed"), EPISODES, ids=[t or f for t, f, _ in EPISODES])
def test_triggers_equal_the_scripts_counts(task, fault, seed):
    result = run(task, fault, seed)
    want = result.truth.expected_edges()
    got_edges = {p: result.edges.get(p, 0) for p in want}
    assert got_edges == want, f"{task or fault}: predicate rising edges differ from the script's ground truth"
    counted = _counted_properties()
    got = {name: result.triggers[name] for name in counted}
    assert got == {name: want[trigger] for name, trigger in counted.items()}


# -------------------------------------------------------------------------------------- vacuity
def _scored(episodes: list[tuple[str | None, str | None, int]]) -> BagResult:
    """The episodes one after another as one scored bag (trace and timeline), monitored in batch."""
    samples = [sample for e in episodes for sample in run(*e).samples]
    monitor = BatchMonitor(_monitor().automata)
    timeline = Timeline(monitor.predicates)
    for i, (_, values) in enumerate(samples):
        timeline.add([values[p] for p in monitor.predicates], float(i))
    timeline.close()
    trace = monitor.run_frames([values for _, values in samples], [float(i) for i in range(len(samples))])
    return BagResult(bag="workcell", mode="states", trace=trace, frames=len(samples), timeline=timeline)


def _vacuous(result: BagResult) -> dict[str, str]:
    reads = property_reads(load_specs(config_dir() / "specs.yaml"))
    return {v.property: v.reason() for v in vacuity(result, reads) if v.vacuous()}


def test_the_clean_workcell_run_exercises_every_scripted_property():
    """Every fault-free task in one trace: a property whose trigger a script counts is neither untriggered
    nor stuck on a constant consequent; only those a fault alone triggers are flagged."""
    flagged = _vacuous(_scored([(t, None, TASK_SEED) for t in sorted(TASKS)]))
    counted = _counted_properties()
    assert not set(flagged) & set(counted), flagged
    assert {a.name for a in _monitor().automata if a.trigger in {"excess_wrench", "fixture_obstacle_hit"}} <= set(
        flagged
    )


def test_a_property_whose_trigger_never_rises_is_vacuous():
    flagged = _vacuous(_scored([("pick_and_place_cube", None, TASK_SEED)]))
    assert flagged["open_preconditions"] == "trigger never changes"  # no fixture is worked
    # and no gripper ever enters a fixture: closing the nearest one would have been safe on every frame
    assert flagged["close_preconditions"] == "trigger never changes; consequent never changes (preconditions_close)"
    assert "pick_preconditions" not in flagged and "grasp_synced_until_release" not in flagged
