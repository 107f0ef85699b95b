"""Golden-output check for speed work on grounding, assembling and predicate decoding: results must not move.

    .venv/bin/python benchmarks/check_identical.py record DIR   # with the code before a change
    .venv/bin/python benchmarks/check_identical.py check DIR    # after it: every output bit-identical

Recorded once (the inputs are stored too, so checking does not rerun the simulator):
- the PredicateFrames (t, frame, values in order, unknown, stale ages) of the default grounder at 500 Hz over
  every scripted task and every fault (seed 0), plus two degraded copies of episodes with poses dropped,
  aged past their limit or NaN and the wrench missing or stale, so the unknown and stale paths run too;
- a 66 s workcell bag (the replay benchmark's nine episodes): every FrameAssembler frame built from it,
  every decoded `/safety_monitor/predicates` sample, and both replay modes' results (events, outcomes,
  timelines, counters, issues).
Nothing is committed: DIR is a scratch folder (a few hundred MB).
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
import time
from pathlib import Path

import numpy as np

from safety_monitor.frames import Pose, RobotState
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.sim.faults import FAULTS
from safety_monitor.sim.tasks import TASKS

RATE = 500.0


def episodes() -> list[tuple[str | None, str | None]]:
    return [(t, None) for t in TASKS] + [(None, f) for f in FAULTS]


def degrade(states: list[RobotState], seed: int) -> list[RobotState]:
    """The same frames with input trouble: poses missing, too old or NaN, wrench missing or stale."""
    rng = np.random.default_rng(seed)
    out = []
    bad = {}  # object -> frames left in its current bad spell and what kind
    wrench_bad = 0
    for s in states:
        poses, ages = dict(s.object_poses), dict(s.object_ages)
        for o in list(poses):
            if o not in bad and rng.random() < 0.002:
                bad[o] = [int(rng.integers(5, 200)), rng.choice(["missing", "old", "nan", "ageinf"])]
            if o in bad:
                kind = bad[o][1]
                if kind == "missing":
                    del poses[o]
                    ages.pop(o, None)
                elif kind == "old":
                    ages[o] = 0.3
                elif kind == "ageinf":
                    ages[o] = math.inf
                else:
                    poses[o] = Pose(np.array([np.nan, 0.0, 0.0]), poses[o].quaternion)
                bad[o][0] -= 1
                if bad[o][0] <= 0:
                    del bad[o]
        wrench, wrench_age = s.wrench, s.wrench_age
        if wrench_bad <= 0 and rng.random() < 0.002:
            wrench_bad = int(rng.integers(5, 100))
        if wrench_bad > 0:
            wrench_bad -= 1
            if wrench_bad % 2:
                wrench, wrench_age = None, None
            else:
                wrench_age = 0.2
        out.append(
            RobotState(
                t=s.t,
                joint_names=s.joint_names,
                joint_position=s.joint_position,
                joint_velocity=s.joint_velocity,
                joint_effort=s.joint_effort,
                wrench=wrench,
                wrench_age=wrench_age,
                object_poses=poses,
                object_ages=ages,
                contacts=s.contacts,
                events=s.events,
            )
        )
    return out


def frame_record(f) -> tuple:
    return (f.t, f.frame, tuple(f.values.items()), tuple(sorted(f.unknown)), tuple(sorted(f.stale.items())))


def ground_all(states_by_episode: dict) -> tuple[dict, float]:
    grounder = load_default_grounder(RATE)
    out, cpu = {}, 0.0
    for key, states in states_by_episode.items():
        grounder.reset()
        start = time.process_time()
        frames = [grounder.step(s) for s in states]
        cpu += time.process_time() - start
        out[key] = [frame_record(f) for f in frames]
    return out, cpu


def sim_inputs(folder: Path) -> dict:
    path = folder / "states.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    from safety_monitor.sim.runner import run_episode

    states = {}
    for task, fault in episodes():
        states[(task, fault)] = list(run_episode(task, fault, seed=0))
        print(f"simulated {task or fault}: {len(states[(task, fault)])} frames", flush=True)
    states[("degraded", "pick_and_place_mug")] = degrade(states[("pick_and_place_mug", None)], 1)
    states[("degraded", "open_drawer")] = degrade(states[("open_drawer", None)], 2)
    path.write_bytes(pickle.dumps(states))
    return states


# ------------------------------------------------------------------------------------------- bag
def bag_path(folder: Path) -> Path:
    bag = folder / "workcell"
    if not bag.exists():
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_replay import RUNS

        from safety_monitor.replay.simbag import record_sim_bag

        record_sim_bag(bag, RUNS, estimate=True)
    return bag


def assembled_frames(bag: Path) -> list:
    from safety_monitor.io.bag import BagReader
    from safety_monitor.pipeline.assemble import FrameAssembler, StaleLimits, StreamMapping
    from safety_monitor.replay.names import absolute_mapping

    mapping = absolute_mapping(StreamMapping())  # the root namespace's topics, as the bag holds them
    grounder = load_default_grounder(RATE)
    objects = tuple(grounder.robot.objects)
    asm = FrameAssembler(grounder.robot.required_joints, objects, mapping, StaleLimits.for_grounder(grounder))
    route = {mapping.pose_topic(o): o for o in objects}
    out = []
    with BagReader(bag) as reader:
        for topic, t_ns, msg in reader.messages({mapping.joint_states, mapping.wrench, *route}):
            received = t_ns / 1e9
            if topic == mapping.joint_states:
                f = asm.on_joint_states(msg, received)
                if f is not None:
                    s = f.state
                    out.append(
                        (
                            s.t,
                            s.joint_names,
                            s.joint_position.tolist(),
                            _opt(s.joint_velocity),
                            _opt(s.joint_effort),
                            None if s.wrench is None else (s.wrench.force.tolist(), s.wrench.torque.tolist()),
                            s.wrench_age,
                            tuple((k, p.position.tolist(), p.quaternion.tolist()) for k, p in s.object_poses.items()),
                            tuple(s.object_ages.items()),
                            tuple(sorted(f.stale)),
                            f.issues,
                        )
                    )
            elif topic == mapping.wrench:
                asm.on_wrench(msg, received)
            else:
                asm.on_pose(route[topic], msg, received)
    out.append(asm.drain_issues())
    return out


def _opt(a):
    return None if a is None else a.tolist()


def decoded_predicates(bag: Path) -> list:
    from safety_monitor.io import messages as m
    from safety_monitor.io.bag import BagReader

    with BagReader(bag) as reader:
        return [
            (s.t, s.frame, tuple(s.values.items()), tuple(sorted(s.unknown)), tuple(sorted(s.stale)))
            for s in (m.decode_predicates(msg) for _, _, msg in reader.messages({"/safety_monitor/predicates"}))
        ]


def pinned_specs(folder: Path) -> Path:
    """One property per predicate, G(!p) recovered by F(!p): every predicate reaches the timeline and the
    events, and the results do not move with the default spec file."""
    from safety_monitor.grounding.grounder import PREDICATES

    path = folder / "specs.yaml"
    lines = [f"predicates: [{', '.join(PREDICATES)}]", "properties:"]
    for p in PREDICATES:
        lines += [f"  - name: never_{p}", "    category: pinned", f'    formula: "G(!{p})"', f'    recovery: "F(!{p})"']
    path.write_text("\n".join(lines) + "\n")
    return path


def replay_results(bag: Path) -> dict:
    from safety_monitor.replay import score
    from safety_monitor.replay.score import ReplayConfig, score_bag

    specs = str(pinned_specs(bag.parent))
    seen: list = []
    make_monitor = score.make_monitor

    def recording_monitor(config, rate_hz):
        monitor = make_monitor(config, rate_hz)
        step, again = monitor.step, monitor.step_again
        last: list = [None, False]  # the valuation last stepped, as recorded; inside `step` (which may call
        # `step_again` for equal values: that frame is recorded once)

        def recorded(valuation, t):
            last[0] = None if valuation is None else tuple(valuation.items())
            seen.append((t, last[0]))
            last[1] = True
            try:
                return step(valuation, t)
            finally:
                last[1] = False

        def recorded_again(t):  # the caller passed the last valuation again (`SpecSetMonitor.step_again`)
            if not last[1]:
                seen.append((t, last[0]))
            return again(t)

        monitor.step, monitor.step_again = recorded, recorded_again
        return monitor

    score.make_monitor = recording_monitor
    out = {}
    for mode in (False, True):
        seen.clear()
        r = score_bag(bag, ReplayConfig(specs=specs, from_predicates=mode))
        assert r.ok, r.error
        out[mode] = {
            "valuations": list(seen),
            "frames": r.frames,
            "t": (r.t_start, r.t_end),
            "rate": r.rate_hz,
            "stale_frames": r.stale_frames,
            "stale_by_stream": r.stale_by_stream,
            "unknown_frames": r.unknown_frames,
            "issues": r.issues,
            "issue_examples": r.issue_examples,
            "warnings": r.warnings,
            "events": [e.to_json() for e in r.trace.events],
            "outcomes": r.trace.outcomes,
            # a bag cut at its episode markers keeps its timelines per rollout (`parts`), none for the whole
            "timelines": [(p.bag, p.frames, p.timeline.to_json(), p.stale_timeline.to_json()) for p in r.split()],
        }
    return out


# ------------------------------------------------------------------------------------------ main
PARTS = ("grounded", "assembled", "decoded", "replay")


def outputs(folder: Path, parts: tuple[str, ...] = PARTS) -> dict:
    out = {}
    if "grounded" in parts:
        states = sim_inputs(folder)
        out["grounded"], cpu = ground_all(states)
        n = sum(len(v) for v in out["grounded"].values())
        print(f"grounded {n} frames of {len(states)} episodes: {1e6 * cpu / n:.0f} us CPU per frame", flush=True)
    bag = bag_path(folder)
    for part, fn in (("assembled", assembled_frames), ("decoded", decoded_predicates), ("replay", replay_results)):
        if part in parts:
            out[part] = fn(bag)
    return out


def compare(name: str, want, got) -> bool:
    if want == got:
        print(f"{name}: identical")
        return True
    if isinstance(want, dict) and isinstance(got, dict) and want.keys() == got.keys():
        return all([compare(f"{name}/{k}", want[k], got[k]) for k in want])
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            print(f"{name}: DIFFERENT length {len(want)} vs {len(got)}")
        for i, (a, b) in enumerate(zip(want, got)):
            if a != b:
                print(f"{name}: DIFFERENT first at item {i}:\n  want {a}\n  got  {b}")
                return False
        return len(want) == len(got)
    print(f"{name}: DIFFERENT")
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("record", "check"))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=PARTS, help="check only these outputs")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    golden = args.folder / "golden.pkl"
    if args.action == "record":  # only --parts, the others kept
        kept = pickle.loads(golden.read_bytes()) if golden.exists() else {}
        golden.write_bytes(pickle.dumps(kept | outputs(args.folder, tuple(args.parts))))
        print(f"recorded {golden}")
        return 0
    want = pickle.loads(golden.read_bytes())
    got = outputs(args.folder, tuple(args.parts))
    return 0 if compare("outputs", {k: want[k] for k in got}, got) else 1


if __name__ == "__main__":
    sys.exit(main())
