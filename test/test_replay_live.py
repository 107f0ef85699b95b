"""A live run through the ROS nodes, recorded with --record and replayed, gives the live events.

The live run is `safety-monitor sim --fault slip --episodes 1 --record BAG` in process (sim, estimator,
monitor and recorder nodes over DDS), with the simulator's lockstep wait relaxed for a busy test machine.
The monitor's watchdog runs on sim time there, and replay's on the bag's log times (the same sim time),
with the same settings: no blind frame comes from the machine's load. Replay rebuilds everything from
the bag.
"""

import csv
import json
import re
import shutil

import pytest
import yaml

from safety_monitor.enums import EventKind
from safety_monitor.executors import Processes
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagReader
from safety_monitor.replay.batch import score_bags, summarize
from safety_monitor.replay.report import write_report
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.sim.faults import FAULTS

LIVE_ONLY = ("rollout", "robot", "wall_time", "pid")  # the monitor node's bookkeeping, not the monitor's events


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from safety_monitor.nodes.run_inprocess import LiveRunOptions, nodes_yaml, run

    folder = tmp_path_factory.mktemp("live")
    params = yaml.safe_load(nodes_yaml().read_text())
    params["/**"]["ros__parameters"].update(ack_timeout_s=120.0)
    (folder / "nodes.yaml").write_text(yaml.safe_dump(params))
    bag = folder / "policy_a_slip"
    result = run(
        LiveRunOptions(
            fault="slip",
            episodes=1,
            record=str(bag),
            events=str(folder / "events.jsonl"),
            params_file=str(folder / "nodes.yaml"),
            timeout_s=300,
        )
    )
    assert not result.interrupted and len(result.rollouts) == 1
    events = [m.event_fields(e) for e in result.rollouts[0].events]
    return bag, events


@pytest.fixture(scope="module")
def replayed(live):
    return score_bag(live[0], ReplayConfig())


@pytest.fixture(scope="module")
def rescored(live):
    return score_bag(live[0], ReplayConfig(from_predicates=True))


def test_the_live_run_tripped_what_the_fault_should(live):
    opened = {e["property"] for e in live[1] if e["kind"] == EventKind.OPENED}
    fault = FAULTS["slip"]
    assert set(fault.expected_properties) <= opened <= set(fault.allowed_properties)


def test_replay_of_the_raw_streams_gives_the_live_events(live, replayed):
    assert replayed.ok, replayed.error
    assert replayed.issues == {} and replayed.rate_hz == 500.0
    # kinds, frames, times, episodes, recoveries and counterexamples, in order
    assert [m.event_fields(e) for e in replayed.trace.events] == live[1]


def test_rescoring_the_recorded_predicates_gives_the_live_events(live, rescored, replayed):
    assert rescored.ok, rescored.error
    assert [m.event_fields(e) for e in rescored.trace.events] == live[1]
    assert rescored.trace.outcomes == replayed.trace.outcomes and rescored.issues == {}


def test_the_recorded_event_topic_matches_too(live):
    with BagReader(live[0]) as bag:
        recorded = [e for _, _, msg in bag.messages({"/safety_monitor/events"}) for e in m.decode_events(msg)]
    assert [{k: v for k, v in e.items() if k not in LIVE_ONLY} for e in recorded] == live[1]


def test_jobs_give_the_same_results_as_one_job(tmp_path, live, rescored):
    """Worker processes run the same pure function (predicate mode keeps this test quick)."""
    bag = live[0]
    copy = tmp_path / "policy_b_copy"
    shutil.copytree(bag, copy)
    broken = tmp_path / "policy_b_broken.mcap"
    broken.write_bytes(b"not a bag")
    parallel = score_bags([bag, broken, copy], ReplayConfig(from_predicates=True), Processes(2), progress=False)
    assert [r.bag for r in parallel] == [str(bag), str(broken), str(copy)]
    assert [r.ok for r in parallel] == [True, False, True]
    for r in (parallel[0], parallel[2]):
        assert r.trace.events == rescored.trace.events and r.trace.outcomes == rescored.trace.outcomes
        assert r.timeline.runs == rescored.timeline.runs and r.stale_frames == rescored.stale_frames


def test_report_folder_has_every_file_and_consistent_numbers(tmp_path, replayed):
    bad = tmp_path / "policy_b_bad.mcap"
    bad.write_bytes(b"\x89MCAP0\r\n")
    results = [replayed, score_bag(bad, ReplayConfig())]
    pattern = r"policy_([a-z])"
    summary = summarize(results, re.compile(pattern), resamples=200)
    folder = write_report(tmp_path / "report", results, summary, ReplayConfig(), pattern)
    doc = json.loads((folder / "report.json").read_text())
    assert doc["bags_scored"] == 1 and doc["bags_failed"][0]["bag"] == str(bad)
    assert (
        doc["metrics"]["pooled"]["violations"] == sum(o.violations for o in replayed.trace.outcomes) >= 2
    )  # slip: 2 in the sim
    assert list(doc["groups"]) == ["a"]
    ends = {(e.property, e.episode): e.kind for e in replayed.trace.events if e.kind.closes}
    episodes = list(csv.DictReader((folder / "episodes.csv").open()))
    assert [(r["property"], r["opened_frame"], r["end_kind"]) for r in episodes] == [
        (e.property, str(e.frame), ends.get((e.property, e.episode), ""))
        for e in replayed.trace.events
        if e.kind == EventKind.OPENED
    ]
    rows = {(r["group"], r["level"], r["name"]): r for r in csv.DictReader((folder / "properties.csv").open())}
    outcome = replayed.trace.outcome("grasp_synced_until_release")
    row = rows[("all", "property", "grasp_synced_until_release")]
    assert (int(row["triggers"]), int(row["violations"])) == (outcome.triggers, outcome.violations)
    assert float(row["risk"]) == outcome.violations / outcome.triggers
    assert ("a", "category", "grasp_stability") in rows
    text = (folder / "summary.md").read_text()
    assert f"| grasp_synced_until_release | {outcome.triggers} | {outcome.violations} |" in text
    assert "## Failed bags" in text
    for png in ("plots/risk_by_category.png", "plots/timeline_000_policy_a_slip.png"):
        assert (folder / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"({png})" in text
