"""Late-start sweep: the grounder and the monitor started at many moments of every scripted episode.

    nice -n 5 .venv/bin/python benchmarks/sweep_late_start.py                   # every task and fault, 500 and 50 Hz
    nice -n 5 .venv/bin/python benchmarks/sweep_late_start.py --rates 50 --only slip pick_and_place_mug --json out.json

A monitor is often started after its robot (a node restarted mid-task, a bag replayed from its middle, a
grounder reset when its inputs restarted): its first frames have no history. Each run here drops the first N
frames of an episode and grounds and monitors the rest from a fresh start, as replay scores robot state (the
Grounder restarted, the SpecSetMonitor over config/specs.yaml reset). N runs over a grid dense around every
phase change of the script (approach, grasp closing, lift, carry, release, settle, retract) and coarse
elsewhere. Reported:

- a false alarm: any violation opened on a task without fault, or beyond those its fault allows;
- a missed alarm: a fault whose expected properties the run from its first frame opens, not opened from a
  start before that opening (with how long before: a start within a debounce of it may be blind, not wrong);
- which predicates were unknown on the first frames, and for how long at most;
- a pulse (an onset, a drop, a transfer) known true on a start's first frame: a trigger counted for something
  that may have begun before the start.

The episodes run once each (seed 0, every physics step); 50 Hz takes every 10th frame, as `run_episode`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from tqdm import tqdm

from safety_monitor.enums import EventKind
from safety_monitor.files import config_dir
from safety_monitor.frames import RobotState
from safety_monitor.grounding.grounder import Grounder, load_default_grounder
from safety_monitor.monitor.live import SpecSetMonitor
from safety_monitor.sim.faults import FAULTS
from safety_monitor.sim.runner import Episode
from safety_monitor.sim.tasks import TASKS

PHYSICS_HZ = 500.0
# seconds from a phase change, and between starts elsewhere; above 100 Hz a thinner grid (a run costs ten times
# the frames): the phases' edges, the persistence (0.25 s) and the onset window (0.5 s) on either side
DENSE_S = {
    False: (-0.1, -0.04, -0.01, 0.0, 0.01, 0.02, 0.04, 0.06, 0.1, 0.16, 0.24, 0.3, 0.4),
    True: (-0.01, 0.0, 0.01, 0.04, 0.1, 0.26, 0.52),
}
COARSE_S = {False: 0.5, True: 1.5}
# predicates that pulse on the frame something begins: true on a late start's first frame, each is a trigger the
# monitor counts, though what it marks may have begun before the start
PULSES = ("object_dropped", "transfer_event", *(f"skill_{s}_onset" for s in ("pick", "place", "open", "close")))


@dataclass(frozen=True)
class Recording:
    """One scripted episode at one rate: its states and the script's phase on each."""

    name: str
    fault: str | None
    rate_hz: float
    states: tuple[RobotState, ...]
    phases: tuple[str, ...]


@dataclass
class LateRun:
    """One start: the frame it started on (of the whole episode), the phase there, what opened (property:
    first frame, of the whole episode), which properties went blind, and per predicate unknown on its first frame, how many frames it stayed
    unknown from the start."""

    start: int
    phase: str
    opened: dict[str, int] = field(default_factory=dict)
    blind: set[str] = field(default_factory=set)  # properties whose verdict was unknown at some frame
    first_pulses: list[str] = field(default_factory=list)  # PULSES known true on the first frame
    unknown_from_start: dict[str, int] = field(default_factory=dict)


def record(name: str, rate_hz: float = PHYSICS_HZ, seed: int = 0) -> Recording:
    """A task's (or a fault's) episode at `rate_hz` (a divisor of 500 Hz), with the script's phases."""
    fault = name if name in FAULTS else None
    episode = Episode(None if fault else name, fault, seed)
    stride = round(PHYSICS_HZ / rate_hz)
    states, phases, k = [], [], 0
    while not episode.done:
        k += 1
        if k % stride:
            episode.advance()
        else:
            states.append(episode.step())
            phases.append(episode.phase)
    return Recording(name, fault, rate_hz, tuple(states), tuple(phases))


def phase_changes(phases: Sequence[str]) -> list[int]:
    """The frames whose phase differs from the previous frame's."""
    return [i for i in range(1, len(phases)) if phases[i] != phases[i - 1]]


def offsets(rec: Recording) -> list[int]:
    """Start frames: dense around each phase change, every COARSE_S elsewhere (never the last frame)."""
    n, rate = len(rec.states), rec.rate_hz
    fast = rate > 100.0
    out = set(range(0, n - 1, max(1, round(COARSE_S[fast] * rate))))
    for c in phase_changes(rec.phases):
        out.update(c + round(d * rate) for d in DENSE_S[fast])
    return sorted(i for i in out if 0 <= i < n - 1)


class Stack:
    """The pure core as replay scores robot state: one Grounder and one monitor, restarted for every run."""

    def __init__(self, rate_hz: float) -> None:
        self.grounder: Grounder = load_default_grounder(rate_hz)
        self.monitor = SpecSetMonitor.from_spec_file(config_dir() / "specs.yaml", control_rate_hz=rate_hz)

    def run(self, rec: Recording, start: int) -> LateRun:
        """Ground and monitor `rec` from frame `start` on, as a monitor started there would."""
        self.grounder.restart()
        self.monitor.reset()
        out = LateRun(start, rec.phases[start])
        still: set[str] | None = None  # unknown since the first frame
        for i in range(start, len(rec.states)):
            state = rec.states[i]
            frame = self.grounder.step(state)
            unknown = frame.unknown
            if still is None:
                out.first_pulses = [p for p in PULSES if frame.values[p] and p not in unknown]
            still = set(unknown) if still is None else still & unknown
            for p in still:
                out.unknown_from_start[p] = i - start + 1
            values = {k: (None if k in unknown else v) for k, v in frame.values.items()}
            for e in self.monitor.step(values, state.t):
                if e.kind == EventKind.OPENED:
                    out.opened.setdefault(e.property, i)
                elif e.kind == EventKind.BLIND:
                    out.blind.add(e.property)
        self.monitor.finish()
        return out


@dataclass
class Finding:
    """What a sweep found in one episode at one rate."""

    name: str
    rate_hz: float
    runs: int
    false_alarms: list[dict] = field(default_factory=list)  # clean task: {start, phase, opened}
    missed: list[dict] = field(default_factory=list)  # fault: {start, phase, lead_s, blind}
    first_pulses: list[dict] = field(default_factory=list)  # {start, phase, pulses}
    caught_before_onset: int = 0
    onset: int | None = None  # a fault's first expected opening from frame 0
    unknown_max_s: dict[str, float] = field(default_factory=dict)  # per predicate, longest unknown from the start


def sweep(rec: Recording, stack: Stack, starts: Iterable[int], bar: tqdm | None = None) -> Finding:
    """Every start of `starts` on one recording, judged against the run from frame 0."""
    finding = Finding(rec.name, rec.rate_hz, 0)
    spec = FAULTS[rec.fault] if rec.fault else None
    expected = set(spec.expected_properties) if spec else set()
    allowed = expected | set(spec.allowed_properties) if spec else set()
    if rec.fault:
        first = stack.run(rec, 0).opened
        finding.onset = min((f for p, f in first.items() if p in expected), default=None)
    for start in starts:
        run = stack.run(rec, start)
        finding.runs += 1
        for p, n in run.unknown_from_start.items():
            finding.unknown_max_s[p] = max(finding.unknown_max_s.get(p, 0.0), n / rec.rate_hz)
        wrong = {p: f for p, f in run.opened.items() if p not in allowed}
        if wrong:
            finding.false_alarms.append({"start": start, "phase": run.phase, "opened": wrong})
        if rec.fault and finding.onset is not None and start < finding.onset:
            if expected <= run.opened.keys():
                finding.caught_before_onset += 1
            else:
                lead = (finding.onset - start) / rec.rate_hz
                blind = sorted(expected & run.blind)  # said it could not tell, rather than missing it silently
                finding.missed.append({"start": start, "phase": run.phase, "lead_s": lead, "blind": blind})
        if run.first_pulses:
            finding.first_pulses.append({"start": start, "phase": run.phase, "pulses": run.first_pulses})
        if bar is not None:
            bar.update()
    return finding


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[500.0, 50.0])
    parser.add_argument("--only", nargs="+", help="tasks or faults (default: every one)")
    parser.add_argument("--json", help="write every finding to this file")
    args = parser.parse_args(argv)
    names = args.only or [*TASKS, *FAULTS]
    unknown = [n for n in names if n not in TASKS and n not in FAULTS]
    if unknown:
        parser.error(f"no task or fault named {', '.join(unknown)}")
    findings = []
    for rate in args.rates:
        stack = Stack(rate)
        recs = [record(n, rate) for n in tqdm(names, desc=f"recording at {rate:g} Hz", leave=False)]
        plan = [(rec, offsets(rec)) for rec in recs]
        with tqdm(total=sum(len(s) for _, s in plan), desc=f"starts at {rate:g} Hz") as bar:
            findings += [sweep(rec, stack, starts, bar) for rec, starts in plan]
    for f in findings:
        what = f"{len(f.false_alarms)} false alarm(s), {len(f.first_pulses)} first-frame pulse(s)"
        if f.onset is not None:
            what += f"; caught from {f.caught_before_onset} earlier start(s), missed from {len(f.missed)}"
        print(f"{f.name:28s} {f.rate_hz:5g} Hz  {f.runs:4d} starts  {what}")
        for a in f.false_alarms + f.missed + f.first_pulses:
            print(f"    {a}")
    for rate in args.rates:
        at = [f for f in findings if f.rate_hz == rate]
        missed = [m for f in at for m in f.missed]
        print(
            f"{rate:g} Hz: {sum(f.runs for f in at)} starts, {sum(len(f.false_alarms) for f in at)} false alarm(s), "
            f"{sum(len(f.first_pulses) for f in at)} first-frame pulse(s), fault caught from "
            f"{sum(f.caught_before_onset for f in at)} earlier start(s), missed from {len(missed)} "
            f"({sum(1 for m in missed if m['blind'])} of them blind)"
        )
    longest: dict[str, float] = {}
    for f in findings:
        for p, s in f.unknown_max_s.items():
            longest[p] = max(longest.get(p, 0.0), s)
    print("unknown from the first frame, longest (s):", ", ".join(f"{p} {s:.3g}" for p, s in sorted(longest.items())))
    if args.json:
        with open(args.json, "w") as out:
            json.dump([asdict(f) for f in findings], out, indent=1)
    return 1 if any(f.false_alarms for f in findings) else 0


if __name__ == "__main__":
    sys.exit(main())
