"""Where trajectories for the computation tree come from: trace files, bags, workcell rollouts.

Every source yields `Trajectory(name, frames)` with frames as predicate -> bool or None (unknown).
`merge` turns them into a tree over the predicates the formulas read (recorded bags carry the whole
vocabulary, much of it unknown while the scene settles); an unknown value of one of those is an error
unless `unknown="last"`, which keeps the predicate's last known value (False before the first), as the
grounder itself reports values it cannot decide this frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from safety_monitor.errors import SafetyMonitorError, SourceError
from safety_monitor.executors import Executor, Serial, results
from safety_monitor.installation import Copy, WithCopies, copy_problem
from safety_monitor.verify.tree import ComputationTree, build_tree


@dataclass(frozen=True)
class Trajectory:
    name: str
    frames: Sequence[Mapping[str, bool | None]]


def is_bag(path: str | Path) -> bool:
    from safety_monitor.io.bag import BAG_FILE_SUFFIXES, is_bag_dir

    p = Path(path)
    return p.suffix in BAG_FILE_SUFFIXES or is_bag_dir(p)


def from_trace_file(path: str | Path) -> Trajectory:
    """A JSON Lines or CSV predicate trace (the monitor's trace format)."""
    from safety_monitor.io.traces import read_trace

    return Trajectory(str(path), read_trace(path).frames)


def from_bag(path: str | Path, topic: str = "/safety_monitor/predicates") -> Trajectory:
    """The predicate frames an estimator recorded in a rosbag2 bag (its predicates topic)."""
    from safety_monitor.io.bag import BagReader
    from safety_monitor.io.messages import decode_predicates

    with BagReader(path) as bag:
        if topic not in bag.topics:
            raise SourceError(
                f"{path}: no {topic} topic; record the estimator's predicates, or score the bag's "
                "robot states with the replay command"
            )
        frames = []
        for i, (_, _, msg) in enumerate(bag.messages({topic})):
            try:
                frames.append(decode_predicates(msg).valuation())
            except SourceError as exc:
                raise SourceError(f"{path}: {topic} message {i}: {exc}") from None
    return Trajectory(str(path), frames)


def rollout_faults(task: str, seeds: int, faults: Sequence[str]) -> list[str | None]:
    """The fault cycle of `ctl --sim` (no fault, then each of `faults`), checked before any rollout
    runs: the task is known, each fault is defined on it, and `seeds` rollouts run every fault."""
    from safety_monitor.sim.faults import FAULTS
    from safety_monitor.sim.tasks import TASKS

    if task not in TASKS:
        raise SafetyMonitorError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    for fault in faults:
        if fault not in FAULTS:
            raise SafetyMonitorError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        if FAULTS[fault].task != task:
            raise SafetyMonitorError(f"fault {fault!r} is defined on task {FAULTS[fault].task!r}, not {task!r}")
    cycle = [None, *faults]
    if seeds < len(cycle):
        raise SafetyMonitorError(
            f"--seeds {seeds} is too few: the rollouts cycle through no fault"
            f"{''.join(', ' + f for f in faults)}, so give --seeds {len(cycle)} or more"
        )
    return cycle


def from_workcell(
    task: str,
    seeds: Iterable[int],
    faults: Sequence[str | None] = (None,),
    done: Callable[[int], object] | None = None,
) -> list[Trajectory]:
    """Simulated rollouts of `task`, grounded by the default grounder; the rollout with seed s has
    fault faults[s % len(faults)] (None: no fault). `done` (a progress bar's update) is told of each
    rollout as it ends: one takes seconds."""
    from safety_monitor.grounding.grounder import load_default_grounder
    from safety_monitor.sim.runner import run_episode

    grounder = load_default_grounder(500.0)
    out = []
    for seed in seeds:
        fault = faults[seed % len(faults)]
        grounder.reset()
        frames = []
        for state in run_episode(task, fault, seed):
            p = grounder.step(state)
            frames.append({k: (None if k in p.unknown else v) for k, v in p.values.items()})
        out.append(Trajectory(f"{task}/{fault or 'nominal'}/seed{seed}", frames))
        if done is not None:
            done(1)
    return out


def load(
    paths: Iterable[str | Path], executor: Executor | None = None, warn: Callable[[str], None] | None = None
) -> list[Trajectory]:
    """Trace files and bags (bag directories or .mcap/.db3 files); any other folder is searched for
    bags as `replay` searches it, so the folder `sim --record` writes for several episodes works. Each
    file is read once, however often or by whatever path it is given (else it would count as several
    trajectories, under names that do not tell them apart), by `executor` (default: here, one at a time);
    `warn` is told of a file given again and of any read again after its worker died."""
    from safety_monitor.io.bag import bag_argument, find_bags

    files: list[str | Path] = []
    first: dict[Path, str | Path] = {}  # each file's resolved path -> the argument read for it
    for p in map(bag_argument, map(Path, paths)):
        for f in find_bags([p]) if p.is_dir() and not is_bag(p) else [p]:
            key = Path(f).resolve()
            if key in first:
                if warn is not None:
                    warn(f"{f}: the same file as {first[key]}, read once")
                continue
            first[key] = f
            files.append(f)
    executor = executor or Serial()
    if executor.in_process:
        return results(executor, _load_one, files, str, warn)
    # each worker first checks it reads the command's copy of its file
    return results(executor, _load_copy, WithCopies(files), lambda item: str(item[0]), warn)


def _load_one(path: str | Path) -> Trajectory:
    return from_bag(path) if is_bag(path) else from_trace_file(path)


def _load_copy(item: tuple[str | Path, Copy | None]) -> Trajectory:
    path, command = item
    problem = copy_problem(path, command, "trace files and bags")
    if problem is not None:
        raise SourceError(problem)
    return _load_one(path)


def merge(
    trajectories: Sequence[Trajectory], unknown: str = "error", atoms: Iterable[str] | None = None
) -> ComputationTree:
    """One tree over `atoms` (default: every recorded predicate); each frame must give all of them,
    and the values of other predicates, known or not, are left out."""
    recorded = sorted({a for t in trajectories for frame in t.frames for a in frame})
    atoms = recorded if atoms is None else sorted(set(atoms))
    for a in atoms:
        if a not in recorded:
            raise SourceError(f"predicate {a!r} is not recorded in the trajectories (they have: {', '.join(recorded)})")
    arrays = [to_matrix(t, atoms, unknown) for t in trajectories]
    return build_tree(arrays, atoms, [t.name for t in trajectories])


def to_matrix(t: Trajectory, atoms: Sequence[str], unknown: str = "error") -> np.ndarray:
    """Frames x atoms bool matrix; `unknown` as in `merge`."""
    if unknown not in ("error", "last"):
        raise ValueError(f"unknown={unknown!r}; expected 'error' or 'last'")
    if not t.frames:
        raise SourceError(f"{t.name}: the trajectory has no frames")
    values = np.zeros((len(t.frames), len(atoms)), dtype=bool)
    last = dict.fromkeys(atoms, False)
    for i, frame in enumerate(t.frames):
        for k, a in enumerate(atoms):
            if a not in frame:
                raise SourceError(f"{t.name}: frame {i} has no value for predicate {a!r}")
            v = frame[a]
            if v is None:
                if unknown == "error":
                    raise SourceError(
                        f"{t.name}: predicate {a!r} is unknown at frame {i}; "
                        "the tree needs known values (--unknown last keeps the last known value)"
                    )
                v = last[a]
            values[i, k] = last[a] = v
    return values
