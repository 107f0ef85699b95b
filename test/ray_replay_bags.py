"""What the `--ray` replay tests share: small bags of a stationary workcell, the specs they are scored
against, fast replay options, and a report.json with the fields that measure the run taken out."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from safety_monitor.frames import PredicateSample
from safety_monitor.io.bag import BagWriter
from safety_monitor.pipeline.assemble import StreamMapping
from safety_monitor.pipeline.markers import START, EpisodeMarker, MarkerKind, marker_msg
from safety_monitor.replay.names import absolute_mapping
from safety_monitor.sim.runner import run_episode

SPECS = """
predicates: [excess_wrench, object_grasped, object_sync, object_grasped_raw]
properties:
  - name: grasp_synced_until_release
    category: grasp_stability
    formula: "G(object_grasped -> ((object_sync U !object_grasped_raw) | G object_sync))"
  - name: no_excess_wrench
    category: collision_contact
    formula: "G(!excess_wrench)"
"""
RATE = 500.0
FAST = ["--quiet", "--rate", "500", "--resamples", "50"]
GROUP_BY = ["--group-by", "policy_([a-z])"]
TIMING = ("timings_s",)  # report.json's fields that measure this run, not the bags


def write_bag(path: Path, frames: int, wrench: bool = True) -> Path:
    """A stationary workcell at 500 Hz; without `wrench`, no wrench topic (so no_excess_wrench is blind)."""
    state = next(run_episode("pick_and_place_cube"))
    with BagWriter(path) as w:
        for k in range(frames):
            t = 100.0 + k / RATE
            if wrench:
                w.write_wrench("/wrist_wrench", t, state.wrench)
            for name, pose in state.object_poses.items():
                w.write_pose(f"/objects/{name}/pose", t, pose)
            w.write_joint_state("/joint_states", t, list(state.joint_names), state.joint_position, log_t=t)
    return path


def without_timings(path: Path) -> Any:
    """A report.json's document without the per-bag fields that measure this run."""
    doc = json.loads(path.read_text())
    for bag in doc["bags"] + doc.get("split_bags", []):  # a bag markers cut has its timings once, there
        for field in TIMING:
            bag.pop(field)
    return doc


def report_files(report: Path) -> list[Path]:
    """The files of a report folder (relative to it), report.json aside (compare it `without_timings`)."""
    return sorted(p.relative_to(report) for p in report.rglob("*") if p.is_file() and p.name != "report.json")


def write_marked_bag(path: Path, layout: list[int | MarkerKind | tuple[MarkerKind, int]]) -> Path:
    """A stationary workcell at RATE with its predicates, laid out as `layout`: a number is that many frames, a
    marker kind a marker logged there (the marker index counting the bag's starts), `(kind, late)` one logged
    `late` frames later (a task manager that announces late; at the end at the latest). A start marker carries
    the next frame's time, an end marker the last frame's (as the sim sends them). Frames are numbered as the
    estimator numbers them: from 0 again after a start marker that came before them, on after a late one."""
    state = next(run_episode("pick_and_place_cube"))
    t, starts, done, number = 100.0, 0, 0, 0  # `done`: frames written
    due: list[tuple[float, bool, EpisodeMarker]] = []  # (frames written before it is logged, late, marker)
    with BagWriter(path) as w:

        def log(until: float) -> None:
            nonlocal number
            for entry in [e for e in due if e[0] <= until]:
                w.write(absolute_mapping(StreamMapping()).episode, marker_msg(w.types, entry[2]), t)
                due.remove(entry)
                if entry[2].kind is START and not entry[1]:
                    number = 0

        for item in layout:
            if isinstance(item, int):
                for _ in range(item):
                    log(done)
                    for name, pose in state.object_poses.items():
                        w.write_pose(f"/objects/{name}/pose", t, pose)
                    w.write_wrench("/wrist_wrench", t, state.wrench)
                    w.write_joint_state("/joint_states", t, list(state.joint_names), state.joint_position, log_t=t)
                    w.write_predicates(
                        "/safety_monitor/predicates", PredicateSample({"gripper_closed": False}, t, frame=number)
                    )
                    t, done, number = t + 1 / RATE, done + 1, number + 1
                continue
            kind, late = item if isinstance(item, tuple) else (item, 0)
            index = starts if kind is START else starts - 1
            starts += kind is START
            due.append((done + late, bool(late), EpisodeMarker(kind, index, t if kind is START else t - 1 / RATE)))
            log(done)
        log(math.inf)
    return path
