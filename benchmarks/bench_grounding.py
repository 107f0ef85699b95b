"""Cost of one grounding step at 500 Hz: the kinematic twin, the estimators, and both together.

Two inputs. *Sweep*: the arm sweeps smoothly over the table near the objects (so contacts, gaps and onsets
change) while perception reports the four objects at 30 Hz (latest value plus age), as on hardware; CPU
time per call. *Episodes* (`--episodes`): scripted simulator episodes (objects at rest, grasped, carried,
dropped; poses at 50 Hz), the CPU time of grounding every frame of each. *Idle* (`--idle MS ...`): the sweep
with the thread asleep for MS milliseconds before each step, as a node waits for its next frame: the step's
wall and CPU time after each pause (what a live node pays per frame, not what back-to-back offline runs pay);
with `--spin` the thread busy-waits instead, so it never leaves the core; with `--burst N` it pauses before
every N steps only, which then run back to back (a node grounding frames in bursts of N). `--mujoco` (with `--episodes`): the CPU
time of the twin's MuJoCo calls alone per frame, the floor of any grounder that runs them on every frame;
`--floor` (with `--episodes`): the CPU time of what Python must still do per frame around one compiled step
(the RobotState's arrays and dicts read into one flat input row, a PredicateFrame built from a row of
booleans), the other part of that floor; `--stages` (with `--episodes`): the CPU of each part of the step
(twin, object motion tracks, each estimator family, the rest), where a compiled step would save what.
`--baseline DIR` (with `--episodes --mujoco`): the same episodes first through another checkout's grounder
(DIR, e.g. `git archive <commit> | tar -x -C DIR`, its kernels built in place), in a child process running
that checkout's own copy of this script, then this one's: both steps and MuJoCo calls, and this step
against the baseline twin's MuJoCo calls (issue 17's measure: the calls of the twin it started from).
`--urdf`: the workcell's sweep and then, back to back, a sweep of a 7-joint URDF arm with a two-finger gripper
(`test/urdf_robots.py`'s, package:// meshes) over three cubes: for each, CPU per `Grounder.step` and the CPU of
the MuJoCo calls it makes (thread time both), and their ratio.
Run: .venv/bin/python benchmarks/bench_grounding.py [--frames 5000] [--episodes [TASK ...] [--mujoco [--baseline DIR]]
         [--floor] [--stages]] [--idle MS ... [--spin] [--burst N]]
     .venv/bin/python benchmarks/bench_grounding.py --urdf [--frames 5000]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import mujoco
import numpy as np

from safety_monitor.frames import Pose, RobotState, Wrench
from safety_monitor.grounding.grounder import load_default_grounder

RATE = 500.0
EPISODES = ("pick_and_place_mug", "place_in_cabinet", "open_drawer", "dump_into_bin")
TEST_DIR = Path(__file__).resolve().parents[1] / "test"  # urdf_robots: the test suite's small URDF robots
BLOCKS = ("cube_a", "cube_b", "cube_c")


def trajectory(grounder, frames: int) -> list[RobotState]:
    robot = grounder.robot
    m = mujoco.MjModel.from_xml_path(str(robot.mjcf))
    poses = {o: Pose(m.body(o).pos.copy(), m.body(o).quat.copy()) for o in robot.objects}
    base = np.array([0.26, 0.59, 1.9, 0.0, 0.65, 0.25])  # grasp centre near the cube, pointing down
    states = []
    for k in range(frames):
        t = k / RATE
        q = base + np.array([0.6 * np.sin(0.5 * t), 0.15 * np.sin(0.7 * t), 0.1 * np.sin(0.9 * t), 0, 0, 0])
        fingers = 0.04 if (k // 1000) % 2 == 0 else 0.02
        perceived = t - (k % 17) / RATE  # 30 Hz perception: the latest pose is up to 33 ms old
        states.append(
            RobotState(
                t=t,
                joint_names=robot.required_joints,
                joint_position=np.concatenate([q, [fingers, fingers, 0.0, 0.0]]),
                object_poses=poses,
                object_ages={o: t - perceived for o in poses},
                wrench=Wrench(np.array([0.0, 0.0, -4.0]), np.zeros(3)),
                wrench_age=0.0,
            )
        )
    return states


def timed(fn, items) -> np.ndarray:
    """CPU time per call in microseconds (thread time: robust when other jobs share the cores)."""
    out = np.empty(len(items))
    for i, item in enumerate(items):
        start = time.thread_time()
        fn(item)
        out[i] = time.thread_time() - start
    return out * 1e6


def sweep(frames: int) -> None:
    grounder = load_default_grounder(RATE)
    states = trajectory(grounder, frames)
    twin = grounder.twin
    geometries = [twin.compute(s.joint_names, s.joint_position, s.object_poses) for s in states]
    twin_us = timed(lambda s: twin.compute(s.joint_names, s.joint_position, s.object_poses), states)
    grounder.reset()
    est_us = timed(lambda i: grounder.step(states[i], geometries[i]), range(len(states)))
    grounder.reset()
    full_us = timed(grounder.step, states)
    for name, us in (
        ("twin (mj_kinematics + mj_collision + gaps)", twin_us),
        ("estimators (given geometry)", est_us),
        ("Grounder.step (twin + estimators)", full_us),
    ):
        print(
            f"{name:44s} mean {us.mean():7.1f} us  median {np.median(us):7.1f} us  p99 {np.percentile(us, 99):7.1f} us"
        )
    print(
        f"{len(states)} frames at {RATE:.0f} Hz: one step uses {full_us.mean() / (1e6 / RATE):.0%} of the frame budget"
    )


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def idle(pauses_ms: list[float], frames: int, busy: bool, burst: int = 1) -> None:
    """Each pause before every `burst` steps, which then run back to back (a node that grounded its frames
    in bursts would pause `burst` frame periods between them): the CPU per step of the burst."""
    grounder = load_default_grounder(RATE)
    states = trajectory(grounder, frames)
    skip = min(200, frames // 10)  # the twin's plans and the estimators' first decisions
    for pause in pauses_ms:
        grounder.reset()
        grounder.twin.forget()
        wall, cpu = np.empty(frames), np.empty(frames)
        for i, state in enumerate(states):
            if pause and i % burst == 0:
                (spin if busy else time.sleep)(pause / 1e3)
            w, c = time.perf_counter(), time.thread_time()
            grounder.step(state)
            cpu[i], wall[i] = time.thread_time() - c, time.perf_counter() - w
        wall, cpu = wall[skip:] * 1e6, cpu[skip:] * 1e6
        print(
            f"{'spinning' if busy else 'asleep'} {pause:5.1f} ms before each {'step' if burst == 1 else f'{burst} steps'}:"
            f" Grounder.step wall median {np.median(wall):6.0f} us p99 {np.percentile(wall, 99):6.0f} us,"
            f" CPU median {np.median(cpu):6.0f} us mean {cpu.mean():6.0f} us"
        )


class TimedMuJoCo:
    """Stands in for the `mujoco` module inside the twin: the per-frame calls timed (on `clock`), the rest
    passed on."""

    CALLS = ("mj_kinematics", "mj_collision", "mj_geomDistance")

    def __init__(self, clock=time.thread_time) -> None:  # CPU time, as the grounding figure
        self.clock = clock
        self.seconds = dict.fromkeys(self.CALLS, 0.0)
        self.calls = dict.fromkeys(self.CALLS, 0)

    def __getattr__(self, name: str):
        fn = getattr(mujoco, name)
        if name not in self.CALLS:
            return fn

        def timed_call(*args):
            start = self.clock()
            out = fn(*args)
            self.seconds[name] += self.clock() - start
            self.calls[name] += 1
            return out

        return timed_call


@contextlib.contextmanager
def timed_calls(kinematic_twin, timed: TimedMuJoCo) -> Iterator[None]:
    """The twin's MuJoCo calls made through `timed`: its mj_kinematics, its contact list's mj_collision and its gap
    walk's mj_geomDistance included (which it otherwise calls from C)."""
    from safety_monitor.grounding import contacts, twin

    measure, kinematics, direct = kinematic_twin._measure, kinematic_twin._kinematics, kinematic_twin._contacts._direct
    twin.mujoco = contacts.mujoco = timed
    kinematic_twin._measure = (timed.mj_geomDistance, kinematic_twin.model, kinematic_twin.data)
    kinematic_twin._kinematics = functools.partial(timed.mj_kinematics, kinematic_twin.model, kinematic_twin.data)
    kinematic_twin._contacts._direct = None
    try:
        yield
    finally:
        twin.mujoco = contacts.mujoco = mujoco
        kinematic_twin._measure, kinematic_twin._kinematics, kinematic_twin._contacts._direct = (
            measure,
            kinematics,
            direct,
        )


def interface_floor(grounder, states: list[RobotState]) -> float:
    """CPU seconds per frame to read each RobotState into one flat float row (joints in the robot's order,
    object poses and ages, wrench) and to build a PredicateFrame from a row of booleans: what a grounder
    whose estimators run in compiled code over arrays would still pay in Python."""
    from safety_monitor.grounding.grounder import PredicateFrame

    objects, predicates = tuple(grounder.robot.objects), grounder.predicates
    order = {name: i for i, name in enumerate(states[0].joint_names)}
    index = np.array([order[j] for j in grounder.robot.required_joints])
    decided = np.zeros(len(predicates), dtype=bool)
    start = time.process_time()
    for s in states:
        parts = [np.asarray(s.joint_position, dtype=float)[index]]
        for o in objects:
            pose = s.object_poses.get(o)
            parts += (pose.position, pose.quaternion) if pose is not None else (np.full(7, np.nan),)
        parts.append(np.array([s.object_ages.get(o, np.nan) for o in objects]))
        if s.wrench is not None:
            parts += (s.wrench.force, s.wrench.torque)
        np.concatenate(parts)
        PredicateFrame(s.t, 0, dict(zip(predicates, decided.tolist())), frozenset(), {}, {})
    return (time.process_time() - start) / len(states)


class StageClock:
    """CPU time (thread time) of each part of `Grounder.step`, summed over frames: the twin, the object motion
    tracks, each estimator family and the joint-limit family, each bound method wrapped in place (call `wrap`
    after every `reset`, which builds the families anew). The rest of the step (input checks, frame
    assembly) is the step's total less these."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def _timed(self, label: str, fn):
        def call(*args, **kwargs):
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.thread_time() - start

        return call

    def wrap(self, grounder) -> None:
        twin = grounder.twin
        if "compute" not in vars(twin):
            twin.compute = self._timed("twin.compute (MuJoCo + gaps, boxes)", twin.compute)
        grounder._object_motion = self._timed("object motion tracks", type(grounder)._object_motion.__get__(grounder))
        for family in (*grounder._families, grounder._limits):
            label = type(family).__name__.removesuffix("Estimator")
            family.step = self._timed(f"{label} family", type(family).step.__get__(family))


def baseline_figures(folder: Path, tasks: list[str]) -> tuple[float, float]:
    """(step, MuJoCo calls) in us a frame of another checkout's grounder on `tasks`, from its own copy of this
    script in a child process (its package first on the path)."""
    script = folder / "benchmarks" / "bench_grounding.py"
    if not script.is_file():
        raise SystemExit(f"--baseline {folder}: no benchmarks/bench_grounding.py there (a checkout's root?)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, str(script), "--episodes", *tasks, "--mujoco"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )
    step = re.search(r"^all +\d+ frames +(\d+) us CPU per frame$", out.stdout, re.M)
    calls = re.search(r"^MuJoCo calls in all +([\d.]+) us per frame$", out.stdout, re.M)
    if out.returncode or step is None or calls is None:
        raise SystemExit(f"--baseline {folder}: its benchmark failed: {(out.stderr or out.stdout).strip()[-500:]}")
    return float(step[1]), float(calls[1])


def episodes(
    tasks: list[str], mujoco_only: bool, floor: bool = False, stages: bool = False, baseline: Path | None = None
) -> None:
    from safety_monitor.sim.runner import run_episode

    before = baseline_figures(baseline, tasks) if baseline is not None else None
    grounder = load_default_grounder(RATE)
    timed_mujoco = TimedMuJoCo()
    mujoco_grounder = load_default_grounder(RATE) if mujoco_only else grounder
    clock = StageClock() if stages else None
    total_frames, total_cpu, floor_cpu = 0, 0.0, 0.0
    for task in tasks:
        states = list(run_episode(task))
        if floor:
            floor_cpu += interface_floor(grounder, states) * len(states)
        grounder.reset()
        if clock is not None:
            clock.wrap(grounder)
        start = time.process_time()
        for state in states:
            grounder.step(state)
        cpu = time.process_time() - start
        total_frames, total_cpu = total_frames + len(states), total_cpu + cpu
        if mujoco_only:  # a second grounder's pass with the MuJoCo calls timed (wrappers would inflate the step)
            with timed_calls(mujoco_grounder.twin, timed_mujoco):
                mujoco_grounder.reset()
                for state in states:
                    mujoco_grounder.step(state)
        print(f"{task:24s} {len(states):6d} frames  {1e6 * cpu / len(states):6.0f} us CPU per frame")
    print(f"{'all':24s} {total_frames:6d} frames  {1e6 * total_cpu / total_frames:6.0f} us CPU per frame")
    if floor:
        print(f"{'interface floor':24s} {'':13s} {1e6 * floor_cpu / total_frames:6.1f} us CPU per frame")
    if clock is not None:
        parts = sorted(clock.seconds.items(), key=lambda kv: -kv[1])
        for label, seconds in [*parts, ("rest of the step", total_cpu - sum(clock.seconds.values()))]:
            print(f"stage {label:38s} {1e6 * seconds / total_frames:6.1f} us per frame {seconds / total_cpu:4.0%}")
    if mujoco_only:
        for name in TimedMuJoCo.CALLS:
            print(
                f"{name:24s} {timed_mujoco.calls[name] / total_frames:5.1f} calls "
                f"{1e6 * timed_mujoco.seconds[name] / total_frames:6.1f} us per frame"
            )
        calls = sum(timed_mujoco.seconds.values())
        print(f"{'MuJoCo calls in all':24s} {1e6 * calls / total_frames:18.1f} us per frame")
        print(f"{'step / MuJoCo calls':24s} {total_cpu / calls:18.1f} x")
    if before is not None:
        step_us = 1e6 * total_cpu / total_frames
        print(f"{'baseline step':24s} {before[0]:18.1f} us per frame")
        print(f"{'baseline MuJoCo calls':24s} {before[1]:18.1f} us per frame")
        print(f"{'baseline step / its calls':24s} {before[0] / before[1]:18.1f} x")
        print(f"{'step / baseline calls':24s} {step_us / before[1]:18.1f} x")


def urdf_trajectory(grounder, frames: int) -> list[RobotState]:
    """The 7-joint arm bent over the table and sweeping, its fingers closing and opening (under their velocity
    limit), over three cubes resting on the table below where its grasp point passes (perception at 30 Hz
    with ages, as in `trajectory`)."""
    robot = grounder.robot
    names = robot.required_joints  # joint1..7, the two fingers, drawer_slide
    base = np.array([-0.4, 0.7, 0.0, 0.9, 0.0, 0.9, 0.0])  # grasp point 0.18 m over the table, clear of the drawer

    def arm(t: float) -> np.ndarray:
        return base + np.array([0.6 * np.sin(0.5 * t), 0.15 * np.sin(0.7 * t), 0, 0.1 * np.sin(0.9 * t), 0, 0, 0])

    def at(q: np.ndarray) -> np.ndarray:
        full = np.concatenate([q, [0.04, 0.04, 0.0]])
        return grounder.twin.compute(names, full, {}).ee_position.copy()

    span = frames / RATE
    below = [at(arm(span * (i + 0.5) / 3)) * [1, 1, 0] + [0, 0, 0.02] for i in range(len(BLOCKS))]
    poses = {o: Pose(p, np.array([1.0, 0, 0, 0])) for o, p in zip(BLOCKS, below)}
    grounder.twin.forget()
    states = []
    for k in range(frames):
        t = k / RATE
        fingers = 0.03 + 0.01 * np.cos(np.pi * t / 2)  # open and closed every 2 s, at most 0.016 m/s
        perceived = t - (k % 17) / RATE
        states.append(
            RobotState(
                t=t,
                joint_names=names,
                joint_position=np.concatenate([arm(t), [fingers, fingers, 0.0]]),
                object_poses=poses,
                object_ages={o: t - perceived for o in poses},
                wrench=Wrench(np.array([0.0, 0.0, -4.0]), np.zeros(3)),
                wrench_age=0.0,
            )
        )
    return states


def urdf_grounder(folder: Path):
    sys.path.insert(0, str(TEST_DIR))
    from urdf_robots import write_robot

    return load_default_grounder(RATE, write_robot(folder, 7, "two_fingers", mesh=True, blocks=BLOCKS))


def step_and_mujoco(grounder, states: list[RobotState]) -> tuple[np.ndarray, TimedMuJoCo]:
    """CPU per step (us), then the same steps again from a reset with the twin's MuJoCo calls timed."""
    grounder.reset()
    grounder.twin.forget()
    step_us = timed(grounder.step, states)
    timed_mujoco = TimedMuJoCo()
    grounder.reset()
    grounder.twin.forget()
    with timed_calls(grounder.twin, timed_mujoco):
        for state in states:
            grounder.step(state)
    return step_us, timed_mujoco


def urdf(frames: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench_grounding_urdf_") as folder:
        workcell = load_default_grounder(RATE)
        arm = urdf_grounder(Path(folder))
        for label, grounder, states in (
            ("workcell (6 joints, 4 objects)", workcell, trajectory(workcell, frames)),
            ("URDF arm (7 joints, 2 fingers, 3 cubes)", arm, urdf_trajectory(arm, frames)),
        ):
            step_us, calls = step_and_mujoco(grounder, states)
            mujoco_us = 1e6 * sum(calls.seconds.values()) / len(states)
            per_call = ", ".join(f"{name} {calls.calls[name] / len(states):.1f}" for name in TimedMuJoCo.CALLS)
            print(
                f"{label:40s} Grounder.step CPU mean {step_us.mean():6.1f} us median {np.median(step_us):6.1f} us; "
                f"MuJoCo calls {mujoco_us:5.1f} us ({per_call} per frame); step / MuJoCo {step_us.mean() / mujoco_us:4.1f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=5000)
    parser.add_argument(
        "--episodes",
        nargs="*",
        metavar="TASK",
        help=f"ground scripted episodes instead (default: {' '.join(EPISODES)})",
    )
    parser.add_argument(
        "--idle",
        nargs="+",
        type=float,
        metavar="MS",
        help="the sweep with a pause of MS milliseconds before each step (e.g. 0 2 10)",
    )
    parser.add_argument(
        "--mujoco", action="store_true", help="with --episodes: also time the twin's MuJoCo calls alone (per frame)"
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="with --episodes: also time the Python around one compiled step (inputs to a row, row to a frame)",
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="with --episodes: also the CPU of each part of the step (twin, motion tracks, each estimator family)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="with --episodes --mujoco: first the same episodes through the checkout in DIR (its own script), then "
        "this step against its twin's MuJoCo calls",
    )
    parser.add_argument(
        "--spin", action="store_true", help="with --idle: busy-wait through the pause instead of sleeping"
    )
    parser.add_argument(
        "--burst",
        type=int,
        default=1,
        metavar="N",
        help="with --idle: pause before every N steps only, which run back to back (frames grounded in bursts)",
    )
    parser.add_argument(
        "--urdf",
        action="store_true",
        help="the workcell's sweep and a 7-joint URDF arm's, back to back: step CPU against its MuJoCo calls",
    )
    args = parser.parse_args()
    if args.urdf:
        urdf(args.frames)
    elif args.idle:
        idle(args.idle, args.frames, args.spin, args.burst)
    elif args.episodes is None:
        sweep(args.frames)
    else:
        if args.baseline is not None and not args.mujoco:
            parser.error("--baseline needs --mujoco (it compares with the baseline twin's MuJoCo calls)")
        episodes(args.episodes or list(EPISODES), args.mujoco, args.floor, args.stages, args.baseline)


if __name__ == "__main__":
    main()
