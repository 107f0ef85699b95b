"""In-process episodes: a task (optionally with a fault) stepped at 500 Hz, one `RobotState` a step.

`Episode` is the steppable form (the ROS sim node paces it against a clock and publishes each
state); `run_episode` is the iterator form for tests, benchmarks and offline scoring. `episode_schedule`
turns `--task`/`--fault` into the episodes to run, the same for the sim node and `sim --physics-only`.
"""

from __future__ import annotations

from collections.abc import Iterator

from safety_monitor.errors import SafetyMonitorError
from safety_monitor.frames import RobotState
from safety_monitor.sim.controller import ArmController
from safety_monitor.sim.faults import FAULTS
from safety_monitor.sim.script import Script
from safety_monitor.sim.tasks import TASKS
from safety_monitor.sim.truth import GroundTruth
from safety_monitor.sim.workcell import Workcell

SETTLE_S = 1.0  # simulated after the script ends so released objects come to rest
MAX_EPISODE_S = 40.0
DEFAULT_TASK = "pick_and_place_cube"


def episode_schedule(task: str, fault: str, episodes: int) -> list[tuple[str, str | None]]:
    """(task, fault or None) of each episode. `fault`: a name, "none" (fault-free), a comma-separated
    list of those to cycle through, or "" to cycle fault-free then every fault (of `task`, if given)."""
    if task and task not in TASKS:
        raise SafetyMonitorError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    names = [n.strip() for n in fault.split(",") if n.strip()]
    if not names:
        names = ["none"] + [n for n, spec in FAULTS.items() if not task or spec.task == task]
    cycle: list[tuple[str, str | None]] = []
    for name in names:
        if name == "none":
            cycle.append((task or DEFAULT_TASK, None))
        elif name not in FAULTS:
            raise SafetyMonitorError(f"unknown fault {name!r}; known: none, {', '.join(FAULTS)}")
        elif task and FAULTS[name].task != task:
            raise SafetyMonitorError(f"fault {name!r} is defined on task {FAULTS[name].task!r}, not {task!r}")
        else:
            cycle.append((FAULTS[name].task, name))
    return [cycle[i % len(cycle)] for i in range(episodes)]


class Episode:
    """One scripted run. `step()` advances one control step and returns that frame's state."""

    def __init__(self, task: str | None = None, fault: str | None = None, seed: int = 0) -> None:
        if fault is not None and fault not in FAULTS:
            raise SafetyMonitorError(f"unknown fault {fault!r}; known: {', '.join(sorted(FAULTS))}")
        spec = FAULTS[fault] if fault is not None else None
        task = task or (spec.task if spec else None)
        if task not in TASKS:
            raise SafetyMonitorError(f"unknown task {task!r}; known: {', '.join(sorted(TASKS))}")
        if spec is not None and spec.task != task:
            raise SafetyMonitorError(f"fault {fault!r} is defined on task {spec.task!r}, not {task!r}")
        self.task = TASKS[task]
        self.fault = spec
        self.seed = seed
        fixtures = dict(self.task.fixtures) | (dict(spec.fixtures) if spec else {})
        self.workcell = Workcell(seed, fixtures, spec.objects if spec else ())
        self.controller = ArmController(self.workcell)
        segments = self.task.build(self.workcell)
        if spec is not None:
            segments = spec.inject(segments, self.workcell)
        self.script = Script(self.controller, segments)
        self._end_time: float | None = None

    @property
    def done(self) -> bool:
        cell = self.workcell
        if cell.t >= MAX_EPISODE_S:
            return True
        return self._end_time is not None and cell.t >= self._end_time

    @property
    def phase(self) -> str:
        """Label of the running segment ("done" while settling)."""
        return self.script.label

    def advance(self) -> None:
        """One control step without building its state (for consumers that skip frames)."""
        self.script.step()
        if self.script.done and self._end_time is None:
            self._end_time = self.workcell.t + SETTLE_S
        self.workcell.step()

    def step(self) -> RobotState:
        """One control step; returns the state at its end."""
        self.advance()
        return self.workcell.robot_state()

    @property
    def truth(self) -> GroundTruth:
        """What this episode's script does (the fault's account when a fault is injected)."""
        return self.fault.truth if self.fault is not None else self.task.truth

    def succeeded(self) -> bool:
        """The task's own goal test on the current world (meaningful once `done`)."""
        return self.task.succeeded(self.workcell)


def run_episode(
    task: str | None = None, fault: str | None = None, seed: int = 0, stride: int = 1
) -> Iterator[RobotState]:
    """Yield the state of every `stride`-th control step of one episode (500 Hz / stride), task
    defaulting to the fault's task. Physics always runs every step."""
    if stride < 1:
        raise SafetyMonitorError(f"stride must be at least 1, got {stride}")
    episode = Episode(task, fault, seed)
    k = 0
    while not episode.done:
        k += 1
        if k % stride:
            episode.advance()
        else:
            yield episode.step()
