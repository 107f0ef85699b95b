"""What the `--ray` replay tests share: small bags of a stationary workcell, the specs they are scored
against, fast replay options, and a report.json with the fields that measure the run taken out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from safety_monitor.io.bag import BagWriter
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
