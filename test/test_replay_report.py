"""summary.md as a team comparing policies reads it: risk side by side per group, and every violation
with its bag, time, counterexample and plot; report.json and the CSVs describing themselves. Bags are made from hand-written predicate frames (no bag files)."""

import csv
import hashlib
import json
import re
from pathlib import Path

import pytest

from safety_monitor import __version__
from safety_monitor.monitor.live import SpecSetMonitor
from safety_monitor.replay.batch import summarize
from safety_monitor.replay.report import (
    EPISODE_COLUMNS,
    PLOTS,
    PROPERTY_COLUMNS,
    SCHEMA_VERSION,
    TIME_KEYS,
    report_json,
    summary_markdown,
    timeline_name,
    write_report,
)
from safety_monitor.replay.score import BagResult, ReplayConfig

SPECS = """
predicates: [grasped, dropped, released, contact]
properties:
  - name: drop_only_when_released
    category: grasp_stability
    formula: "G(dropped -> (released | grasped))"
    recovery: "F(grasped)"
  - name: no_contact
    category: collision_contact
    formula: "G(!contact)"
    recovery: "F(!contact)"
"""
T0 = 100.0
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "specs.yaml"
    path.write_text(SPECS)
    return path


def bag(specs, name, rows, rate=10.0):
    """A scored bag of one frame per row (the predicates true in it), `rate` frames a second from T0."""
    monitor = SpecSetMonitor.from_spec_file(specs, history=100)
    frames = [({p: p in row.split() for p in monitor.predicates}, T0 + k / rate) for k, row in enumerate(rows)]
    trace = monitor.run([f for f, _ in frames], [t for _, t in frames])
    return BagResult(name, "predicates", trace=trace, frames=len(rows), t_start=T0, t_end=frames[-1][1])


@pytest.fixture(scope="module")
def results(specs):
    drop = ["grasped", "", "dropped", "", "grasped"]  # dropped unreleased at frame 2, re-grasp recovers
    safe = ["grasped", "released", "dropped released", "", ""]
    return [bag(specs, "runs/policy_a/episode_000", drop), bag(specs, "runs/policy_b/episode_000", safe)]


def summary_of(results, specs, pattern="policy_([a-z])", plots=()):
    summary = summarize(results, re.compile(pattern) if pattern else None, resamples=50)
    return summary_markdown(results, summary, ReplayConfig(specs=str(specs), from_predicates=True), pattern, plots)


def test_groups_are_compared_side_by_side_with_no_triggers_said_as_such(results, specs):
    text = summary_of(results, specs)
    compared = text.split("## Groups")[1].split("### Group")[0]
    assert "| category | a (1 bags) | b (1 bags) |" in compared
    assert "| grasp_stability | 1.000 (1/1) no CI | 0.000 (0/1) no CI |" in compared
    assert "| drop_only_when_released | 1.000 (1/1) no CI | 0.000 (0/1) no CI |" in compared
    assert "No group triggered: collision_contact." in compared and "No group triggered: no_contact." in compared


def test_every_violation_is_listed_with_its_bag_time_explanation_and_plot(results, specs):
    plot = f"{PLOTS}/{timeline_name(0, results[0].bag)}"
    text = summary_of(results, specs, plots=[plot])
    table = text.split("## Violations (1)")[1].split("\n## ")[0]
    row = next(line for line in table.splitlines() if line.startswith("| runs/"))
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
    assert cells[:7] == [
        "runs/policy_a/episode_000",
        "a",
        "drop_only_when_released",
        "–",  # the predicates named no object
        "0.2 (frame 2)",
        "0.2 (2)",  # frames 2 and 3, each standing for the 0.1 s since the frame before it
        "recovered",
    ]
    assert cells[7].startswith("drop_only_when_released was violated at frame 2") and "\\|" in cells[7]
    assert cells[8] == f"[timeline]({plot})"
    assert f"- [{plot}]({plot}): runs/policy_a/episode_000" in text  # the plot list names each timeline's bag


def test_without_groups_the_violations_have_no_group_column(results, specs):
    text = summary_of(results, specs, pattern=None)
    assert "## Groups" not in text
    assert (
        "| bag | property | objects | opened (s since the bag's first frame) | lasted, s (frames) | ended | why | plot |"
        in text
    )


def test_report_json_says_its_schema_version_and_the_spec_files_digest(results, specs):
    """A report read months later says its layout, the tool's version, and which rules scored it (the
    spec file's bytes, not only its path, which may since hold other rules)."""
    summary = summarize(results, resamples=50)
    doc = report_json(results, summary, ReplayConfig(specs=str(specs), from_predicates=True), None)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["safety_monitor_version"] == __version__
    assert doc["config"]["specs_sha256"] == hashlib.sha256(specs.read_bytes()).hexdigest()
    assert doc["config"]["robot"] is None and doc["config"]["robot_sha256"] is None


def test_every_csv_column_is_documented_with_its_unit():
    """docs/replay.md lists each CSV's columns with their units; a column added or renamed without it fails."""
    page = (ROOT / "docs" / "replay.md").read_text()
    block = page.split("The CSV columns and their units")[1].split("```text\n")[1].split("```")[0]
    documented: dict[str, list[str]] = {}
    for line in block.splitlines():
        if line.endswith(".csv"):
            current = documented.setdefault(line, [])
        else:
            names, unit = line.split(": ", 1)
            assert unit.strip(), line
            current += [n.strip() for n in names.split(",")]
    assert {k: sorted(v) for k, v in documented.items()} == {
        "episodes.csv": sorted(EPISODE_COLUMNS),
        "properties.csv": sorted(PROPERTY_COLUMNS),
    }


def test_bags_recorded_at_different_rates_compare_by_seconds_with_frames_beside_them(specs):
    """The same 0.2 s contact at 10 Hz (2 frames) and at 20 Hz (4 frames). Before, the report gave exposure and
    durations in frames only: policy b read as exposed twice as long."""
    slow = bag(specs, "runs/policy_a/episode_000", ["", "contact", "contact", "", ""])
    fast = bag(specs, "runs/policy_b/episode_000", ["", "", "contact", "contact", "contact", "contact", "", ""], 20.0)
    results = [slow, fast]
    text = summary_of(results, specs)
    group_a, group_b = text.split("### Group `a`")[1], text.split("### Group `b`")[1]
    assert "| collision_contact | 1 | 1 | 0.2 (2) | 1.000 | – | 0.2 (2.00) | – |" in group_a
    assert "| collision_contact | 1 | 1 | 0.2 (4) | 1.000 | – | 0.2 (4.00) | – |" in group_b
    violations = text.split("## Violations (2)")[1]
    assert violations.count("| 0.2 (2) | recovered |") == 1 and violations.count("| 0.2 (4) | recovered |") == 1
    summary = summarize(results, re.compile("policy_([a-z])"), resamples=50)
    doc = report_json(results, summary, ReplayConfig(specs=str(specs), from_predicates=True), "policy_([a-z])")
    both = doc["metrics"]["by_property"][1]
    assert both["name"] == "no_contact" and (both["violating_frames"], both["exposure"]) == (6, 3.0)
    assert both["violating_s"] == pytest.approx(0.4) and both["exposure_s"] == pytest.approx(0.2)
    assert both["exposure_s_interval"] == pytest.approx([0.2, 0.2]) and both["duration_max_s"] == pytest.approx(0.2)
    assert [e["duration_s"] for b in doc["bags"] for e in b["episodes"]] == pytest.approx([0.2, 0.2])
    assert [e["duration_frames"] for b in doc["bags"] for e in b["episodes"]] == [2, 4]


def test_times_are_written_to_the_microsecond_in_every_file_and_other_numbers_whole(specs, tmp_path):
    """500 Hz stamps from t = 100 s: the drop's 5 violating frames last 0.01 s, which float arithmetic on
    the stamps makes 0.009999999999990905. Before, every file wrote that noise."""
    rows = ["grasped"] * 3 + ["dropped"] + [""] * 4 + ["grasped"] * 2 + ["contact"] * 3 + [""]
    result = bag(specs, "runs/policy_a/fast", rows, rate=500.0)
    assert result.trace.outcome("drop_only_when_released").seconds != (0.01,)  # the noise is there
    summary = summarize([result], None, resamples=50)
    config = ReplayConfig(specs=str(specs), from_predicates=True)
    folder = write_report(tmp_path / "report", [result], summary, config, None, plots=False)
    drop, contact = csv.DictReader((folder / "episodes.csv").open())
    assert (drop["opened_t"], drop["end_t"], drop["duration_s"]) == ("100.006", "100.016", "0.01")
    assert contact["duration_s"] == "0.006"
    pooled = next(r for r in csv.DictReader((folder / "properties.csv").open()) if r["level"] == "all")
    assert (pooled["violating_s"], pooled["exposure_s"], pooled["duration_mean_s"]) == ("0.016", "0.008", "0.008")
    doc = json.loads((folder / "report.json").read_text())
    assert doc["bags"][0]["episodes"][0]["duration_s"] == 0.01 and doc["bags"][0]["duration_s"] == 0.026

    def times(value, time=False):
        if isinstance(value, dict):
            return [x for k, v in value.items() for x in times(v, time or k in TIME_KEYS)]
        if isinstance(value, list):
            return [x for v in value for x in times(v, time)]
        return [value] if time and isinstance(value, float) else []

    found = times(doc)
    assert len(found) > 20 and all(t == round(t, 6) for t in found)
    # what is not a time keeps every digit a machine may compare (a share of property-frames)
    assert doc["metrics"]["pooled"]["exposure_frame_share"] == summary.overall.pooled.exposure_frame_share
    text = (folder / "summary.md").read_text()
    assert "| all | 2 | 2 | 0.016 (8) |" in text and "| 0.01 (5) | recovered |" in text


def test_each_groups_difference_from_the_first_has_an_interval_when_each_has_two_bags_that_triggered_it(specs):
    """Before, the groups' risks stood side by side with an interval each, and none on their difference."""
    drop, safe = ["grasped", "", "dropped", "", "grasped"], ["grasped", "released", "dropped released", "", ""]
    results = [
        bag(specs, "runs/policy_a/episode_000", drop),
        bag(specs, "runs/policy_a/episode_001", drop),
        bag(specs, "runs/policy_b/episode_000", safe),
        bag(specs, "runs/policy_b/episode_001", drop),
        bag(specs, "runs/policy_c/episode_000", safe),
    ]
    text = summary_of(results, specs)
    compared = text.split("## Groups")[1].split("### Group")[0]
    assert "| category | a (2 bags) | b (2 bags) | c (1 bags) | b − a | c − a |" in compared
    assert (
        "| drop_only_when_released | 1.000 (2/2) [1.000, 1.000] | 0.500 (1/2) [0.000, 1.000] | 0.000 (0/1) no CI "
        "| -0.500 [-1.000, +0.000] | -1.000 no CI |"
    ) in compared
    summary = summarize(results, re.compile("policy_([a-z])"), resamples=50)
    doc = report_json(results, summary, ReplayConfig(specs=str(specs), from_predicates=True), "policy_([a-z])")
    b = doc["risk_differences"]["b"]
    assert b["reference"] == "a" and set(doc["risk_differences"]) == {"b", "c"}
    assert {"name": "all", "level": "all", "difference": -0.5, "interval": [-1.0, 0.0]} in b["rows"]
