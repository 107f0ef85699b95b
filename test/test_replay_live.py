"""A simulated live run recorded to a bag and replayed gives the same events; jobs and reports agree.

The bag is written by the in-process runner through the estimator and monitor nodes' path (assembler
fed the very messages written, ground_frame, monitor), recording the raw streams, the
predicates and the events. Replay then rebuilds everything from the bag alone.
"""
import csv
import json
import re
import shutil

import pytest
import yaml

from safety_monitor.monitor import events as ev
from safety_monitor.replay.batch import score_bags, summarize
from safety_monitor.replay.report import write_report
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.replay.simbag import SimRun, record_sim_bag
from safety_monitor.sim.faults import FAULTS
from safety_monitor.sources import messages as m
from safety_monitor.sources.bag import BagReader

SPECS = """
predicates: [object_grasped, object_grasped_raw, object_sync, object_dropped, object_released,
             object_left_gripper, excess_wrench]
properties:
  - name: no_excess_wrench
    category: collision_contact
    formula: "G(!excess_wrench)"
    recovery: "F(!excess_wrench)"
  - name: grasp_synced_until_release
    category: grasp_stability
    formula: "G(object_grasped -> ((object_sync U !object_grasped_raw) | G object_sync))"
    recovery: "G((object_grasped & !object_sync) -> F(object_sync | object_dropped))"
  - name: drop_only_when_released
    category: grasp_stability
    formula: "G(object_dropped -> (object_released | (!object_left_gripper U object_grasped)))"
    recovery: "F(object_grasped | object_left_gripper)"
"""


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    path = tmp_path_factory.mktemp("specs") / "specs.yaml"
    path.write_text(SPECS)
    return str(path)


@pytest.fixture(scope="module")
def live_bag(tmp_path_factory, specs):
    """The early-release fault up to just after the drop (4 s at 500 Hz), recorded as a live run would be."""
    folder = tmp_path_factory.mktemp("live")
    return record_sim_bag(folder / "policy_a_early_release", [SimRun(fault="early_release", max_s=4.0)],
                          estimate=True, specs=specs)


@pytest.fixture(scope="module")
def recorded_events(live_bag):
    with BagReader(live_bag) as bag:
        return [e for _, _, msg in bag.messages({"/safety_monitor/events"}) for e in m.decode_events(msg)]


@pytest.fixture(scope="module")
def replayed(live_bag, specs):
    return score_bag(live_bag, ReplayConfig(specs=specs))


def test_replay_of_the_raw_streams_gives_the_live_events(replayed, recorded_events):
    assert replayed.ok, replayed.error
    opened = {e["property"] for e in recorded_events if e["kind"] == ev.OPENED}
    fault, ours = FAULTS["early_release"], {p["name"] for p in yaml.safe_load(SPECS)["properties"]}
    assert set(fault.expected_properties) & ours <= opened <= set(fault.allowed_properties)  # ground truth
    assert "drop_only_when_released" in opened
    assert [m.event_fields(e) for e in replayed.trace.events] == recorded_events  # frames, episodes, recovery,
    # counterexamples: all identical


@pytest.fixture(scope="module")
def rescored(live_bag, specs):
    return score_bag(live_bag, ReplayConfig(specs=specs, from_predicates=True))


def test_rescoring_the_recorded_predicates_gives_the_live_events(rescored, recorded_events, replayed):
    assert rescored.ok, rescored.error
    assert [m.event_fields(e) for e in rescored.trace.events] == recorded_events
    assert rescored.trace.outcomes == replayed.trace.outcomes
    assert rescored.issues == {}


def test_jobs_give_the_same_results_as_one_job(tmp_path, live_bag, specs, rescored):
    """Worker processes run the same pure function (predicate mode keeps this test quick)."""
    copy = tmp_path / "policy_b_copy"
    shutil.copytree(live_bag, copy)
    broken = tmp_path / "policy_b_broken.mcap"
    broken.write_bytes(b"not a bag")
    config = ReplayConfig(specs=specs, from_predicates=True)
    parallel = score_bags([live_bag, broken, copy], config, jobs=2, progress=False)
    assert [r.bag for r in parallel] == [str(live_bag), str(broken), str(copy)]
    assert [r.ok for r in parallel] == [True, False, True]
    for r in (parallel[0], parallel[2]):
        assert r.trace.events == rescored.trace.events and r.trace.outcomes == rescored.trace.outcomes
        assert r.timeline.runs == rescored.timeline.runs and r.stale_frames == rescored.stale_frames


def test_report_folder_has_every_file_and_consistent_numbers(tmp_path, live_bag, replayed, specs):
    bad = tmp_path / "policy_b_bad.mcap"
    bad.write_bytes(b"\x89MCAP0\r\n")
    results = [replayed, score_bag(bad, ReplayConfig(specs=specs))]
    summary = summarize(results, re.compile(r"policy_([a-z])"), resamples=200)
    folder = write_report(tmp_path / "report", results, summary, ReplayConfig(specs=specs), r"policy_([a-z])")
    doc = json.loads((folder / "report.json").read_text())
    assert doc["bags_scored"] == 1 and doc["bags_failed"][0]["bag"] == str(bad)
    pooled = doc["metrics"]["pooled"]
    assert pooled["violations"] == sum(o.violations for o in replayed.trace.outcomes) >= 1
    assert list(doc["groups"]) == ["a"]
    episodes = list(csv.DictReader((folder / "episodes.csv").open()))
    ends = {(e.property, e.episode): e.kind for e in replayed.trace.events
            if e.kind in (ev.RECOVERED, ev.CLOSED, ev.UNRECOVERED_AT_END, ev.DISCARDED_TRUNCATED)}
    assert [(r["property"], r["opened_frame"], r["end_kind"]) for r in episodes] == [
        (e.property, str(e.frame), ends.get((e.property, e.episode), "")) for e in replayed.trace.events
        if e.kind == ev.OPENED]
    rows = {(r["group"], r["level"], r["name"]): r for r in csv.DictReader((folder / "properties.csv").open())}
    drop = rows[("all", "property", "drop_only_when_released")]
    outcome = replayed.trace.outcome("drop_only_when_released")
    assert (int(drop["triggers"]), int(drop["violations"])) == (outcome.triggers, outcome.violations)
    assert float(drop["risk"]) == outcome.violations / outcome.triggers
    assert ("a", "category", "grasp_stability") in rows
    text = (folder / "summary.md").read_text()
    assert f"| drop_only_when_released | {outcome.triggers} | {outcome.violations} |" in text
    assert "## Failed bags" in text
    for png in ("plots/risk_by_category.png", "plots/timeline_000_policy_a_early_release.png"):
        assert (folder / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"({png})" in text
