"""Recorded grounder inputs and outputs: the reference a new or faster grounder must reproduce bit for bit.

`test/data/grounding_reference.npz` holds RobotStates from every scripted task and fault and from two
degraded episodes (poses missing, too old, NaN; wrench missing or stale), taken from the simulator at 500 Hz
and kept every DECIMATE-th frame, so whole episodes (grasps, carries, drops, every fault) fit in a small file;
plus one stretch at the full 500 Hz. Beside the inputs it stores what the default grounder made of them at
the matching control rate: every predicate's value and whether it was unknown, and every stale stream's age.

Regenerate it only when grounding changes *on purpose* (a threshold, a semantics fix), from the code that
makes the change, and say so in the commit:

    .venv/bin/python test/grounding_reference.py record [SCRATCH_DIR]
    .venv/bin/python test/grounding_reference.py reground

(SCRATCH_DIR: where `benchmarks/check_identical.py` keeps its simulated states, reused when present.)
`reground` keeps the file's inputs and grounds them again, printing the cells that moved per episode: for a
change of semantics alone, since the simulator's states drift from the stored ones as the simulator changes,
and `record` would replace every episode's inputs (and values that depend on them) with the change's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from benchmark_scripts import benchmark_script

from safety_monitor.frames import Pose, RobotState, Wrench
from safety_monitor.grounding.grounder import Grounder, PredicateFrame, load_default_grounder

REFERENCE = Path(__file__).with_name("data") / "grounding_reference.npz"
SIM_RATE = 500.0
DECIMATE = 10  # whole episodes at 50 Hz
FULL_RATE = ("slip", 1200, 1900)  # and one stretch at 500 Hz: episode, first frame, end


@dataclass(frozen=True)
class Episode:
    """One recorded run of the grounder: its control rate, inputs, and outputs."""

    name: str
    rate_hz: float
    states: list[RobotState]
    values: np.ndarray  # (frames, predicates) bool
    unknown: np.ndarray  # (frames, predicates) bool
    stale: np.ndarray  # (frames, streams) float, NaN: not stale


def ground(grounder: Grounder, states: Iterable[RobotState]) -> list[PredicateFrame]:
    grounder.reset()
    return [grounder.step(s) for s in states]


def outputs(frames: Sequence[PredicateFrame], predicates: Sequence[str], streams: Sequence[str]):
    """A run's PredicateFrames as (values, unknown, stale) arrays over the given predicate and stream order."""
    values = np.array([[f.values[p] for p in predicates] for f in frames], dtype=bool)
    unknown = np.array([[p in f.unknown for p in predicates] for f in frames], dtype=bool)
    stale = np.array([[f.stale.get(s, np.nan) for s in streams] for f in frames], dtype=float)
    return values, unknown, stale


def stale_streams(objects: Sequence[str]) -> tuple[str, ...]:
    return ("wrench", *(f"object_pose/{o}" for o in objects))


# ----------------------------------------------------------------------------------------- encoding
def _rows(states: Sequence[RobotState], field: str, width: int) -> tuple[np.ndarray, np.ndarray]:
    """A per-frame optional array field as (frames, width) values and a presence mask."""
    present = np.array([getattr(s, field) is not None for s in states])
    rows = np.zeros((len(states), width))
    for i, s in enumerate(states):
        if present[i]:
            rows[i] = getattr(s, field)
    return rows, present


def encode(states: Sequence[RobotState], objects: Sequence[str], prefix: str) -> dict[str, np.ndarray]:
    """RobotStates as arrays (exact: float64 throughout), keys under `prefix`."""
    names = states[0].joint_names
    if any(s.joint_names != names for s in states):
        raise ValueError(f"{prefix}: the joint names change within the episode")
    n, nj, no = len(states), len(names), len(objects)
    pose = np.zeros((n, no, 7))
    has_pose = np.zeros((n, no), dtype=bool)
    age = np.zeros((n, no))
    has_age = np.zeros((n, no), dtype=bool)
    for i, s in enumerate(states):
        for k, o in enumerate(objects):
            if o in s.object_poses:
                has_pose[i, k] = True
                p = s.object_poses[o]
                pose[i, k] = np.concatenate([p.position, p.quaternion])
            if o in s.object_ages:
                has_age[i, k], age[i, k] = True, s.object_ages[o]
    velocity, has_velocity = _rows(states, "joint_velocity", nj)
    effort, has_effort = _rows(states, "joint_effort", nj)
    stamps, has_stamps = _rows(states, "joint_stamps", nj)
    has_wrench = np.array([s.wrench is not None for s in states])
    wrench = np.array([np.concatenate([s.wrench.force, s.wrench.torque]) if s.wrench else np.zeros(6) for s in states])
    has_wrench_age = np.array([s.wrench_age is not None for s in states])
    wrench_age = np.array([s.wrench_age if s.wrench_age is not None else 0.0 for s in states])
    events = {i: sorted(s.events) for i, s in enumerate(states) if s.events}
    arrays = {
        "joint_names": np.array(names),
        "t": np.array([s.t for s in states]),
        "position": np.stack([np.asarray(s.joint_position, dtype=float) for s in states]),
        "velocity": velocity,
        "has_velocity": has_velocity,
        "effort": effort,
        "has_effort": has_effort,
        "stamps": stamps,
        "has_stamps": has_stamps,
        "pose": pose,
        "has_pose": has_pose,
        "age": age,
        "has_age": has_age,
        "wrench": wrench,
        "has_wrench": has_wrench,
        "wrench_age": wrench_age,
        "has_wrench_age": has_wrench_age,
        "events": np.array(json.dumps(events)),
    }
    return {f"{prefix}/{k}": v for k, v in arrays.items()}


def decode(data: Mapping[str, np.ndarray], objects: Sequence[str], prefix: str) -> list[RobotState]:
    a = {k.removeprefix(f"{prefix}/"): v for k, v in data.items() if k.startswith(f"{prefix}/")}
    names = tuple(str(n) for n in a["joint_names"])
    events = {int(i): frozenset(e) for i, e in json.loads(str(a["events"])).items()}
    states = []
    for i, t in enumerate(a["t"].tolist()):
        states.append(
            RobotState(
                t=t,
                joint_names=names,
                joint_position=a["position"][i].copy(),
                joint_velocity=a["velocity"][i].copy() if a["has_velocity"][i] else None,
                joint_effort=a["effort"][i].copy() if a["has_effort"][i] else None,
                joint_stamps=a["stamps"][i].copy() if a["has_stamps"][i] else None,
                wrench=Wrench(a["wrench"][i, :3].copy(), a["wrench"][i, 3:].copy()) if a["has_wrench"][i] else None,
                wrench_age=float(a["wrench_age"][i]) if a["has_wrench_age"][i] else None,
                object_poses={
                    o: Pose(a["pose"][i, k, :3].copy(), a["pose"][i, k, 3:].copy())
                    for k, o in enumerate(objects)
                    if a["has_pose"][i, k]
                },
                object_ages={o: float(a["age"][i, k]) for k, o in enumerate(objects) if a["has_age"][i, k]},
                events=events.get(i, frozenset()),
            )
        )
    return states


# ----------------------------------------------------------------------------------------- file
def load(path: Path = REFERENCE) -> tuple[tuple[str, ...], tuple[str, ...], list[Episode]]:
    """The reference's predicate order, object order and episodes."""
    with np.load(path) as data:
        arrays = dict(data)
    predicates = tuple(str(p) for p in arrays["predicates"])
    objects = tuple(str(o) for o in arrays["objects"])
    episodes = []
    for name, rate in zip(arrays["episodes"].tolist(), arrays["rates"].tolist()):
        episodes.append(
            Episode(
                name,
                rate,
                decode(arrays, objects, name),
                arrays[f"{name}/out_values"],
                arrays[f"{name}/out_unknown"],
                arrays[f"{name}/out_stale"],
            )
        )
    return predicates, objects, episodes


def _check_identical(scratch: Path):
    """benchmarks/check_identical.py as a module: its simulated episodes and degraded copies."""
    scratch.mkdir(parents=True, exist_ok=True)
    with benchmark_script("check_identical") as module:
        return module.sim_inputs(scratch)


def record(scratch: Path, path: Path = REFERENCE) -> None:
    sim = _check_identical(scratch)
    probe = load_default_grounder(SIM_RATE)
    runs: list[tuple[str, float, list[RobotState]]] = []
    for (task, fault), states in sim.items():
        name = fault if task is None else (f"degraded_{fault}" if task == "degraded" else task)
        runs.append((name, SIM_RATE / DECIMATE, states[::DECIMATE]))
    episode, start, end = FULL_RATE
    runs.append((f"{episode}_500hz", SIM_RATE, sim[(None, episode)][start:end]))
    objects, predicates = tuple(probe.robot.objects), probe.predicates
    streams = stale_streams(objects)
    arrays: dict[str, np.ndarray] = {
        "predicates": np.array(predicates),
        "objects": np.array(objects),
        "episodes": np.array([name for name, _, _ in runs]),
        "rates": np.array([rate for _, rate, _ in runs]),
    }
    for name, rate, states in runs:
        values, unknown, stale = outputs(ground(load_default_grounder(rate), states), predicates, streams)
        arrays |= encode(states, objects, name)
        arrays |= {f"{name}/out_values": values, f"{name}/out_unknown": unknown, f"{name}/out_stale": stale}
        changes = int(np.count_nonzero(values[1:] != values[:-1]))
        print(f"{name}: {len(states)} frames at {rate:g} Hz, {changes} predicate changes")
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")


def reground(path: Path = REFERENCE) -> None:
    with np.load(path) as data:
        arrays = dict(data)
    predicates, objects, episodes = load(path)
    streams = stale_streams(objects)
    for e in episodes:
        values, unknown, stale = outputs(ground(load_default_grounder(e.rate_hz), e.states), predicates, streams)
        moved = {
            "values": np.argwhere(values != e.values),
            "unknown": np.argwhere(unknown != e.unknown),
            "stale": np.argwhere(~((stale == e.stale) | (np.isnan(stale) & np.isnan(e.stale)))),
        }
        for kind, cells in moved.items():
            if cells.size:
                names = sorted({(predicates if kind != "stale" else streams)[c] for c in cells[:, 1].tolist()})
                print(
                    f"{e.name}: {len(cells)} {kind} cells moved, frames {cells[:, 0].min()}-{cells[:, 0].max()}: "
                    f"{', '.join(names)}"
                )
        arrays |= {f"{e.name}/out_values": values, f"{e.name}/out_unknown": unknown, f"{e.name}/out_stale": stale}
    np.savez_compressed(path, **arrays)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "reground":
        reground()
    elif len(sys.argv) >= 2 and sys.argv[1] == "record":
        record(Path(sys.argv[2]) if len(sys.argv) > 2 else Path("/tmp/grounding_reference"))
    else:
        sys.exit(__doc__)
