"""summary.md as a team comparing policies reads it: risk side by side per group, and every violation
with its bag, time, counterexample and plot; report.json and the CSVs describing themselves. Bags are made from hand-written predicate frames (no bag files)."""

import hashlib
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
    report_json,
    summary_markdown,
    timeline_name,
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


def bag(specs, name, rows):
    """A scored bag of one frame per row (the predicates true in it), 0.1 s apart from T0."""
    monitor = SpecSetMonitor.from_spec_file(specs, history=100)
    frames = [({p: p in row.split() for p in monitor.predicates}, T0 + k / 10) for k, row in enumerate(rows)]
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
        "0.200 (frame 2)",
        "2",
        "recovered",
    ]
    assert cells[7].startswith("drop_only_when_released was violated at frame 2") and "\\|" in cells[7]
    assert cells[8] == f"[timeline]({plot})"
    assert f"- [{plot}]({plot}): runs/policy_a/episode_000" in text  # the plot list names each timeline's bag


def test_without_groups_the_violations_have_no_group_column(results, specs):
    text = summary_of(results, specs, pattern=None)
    assert "## Groups" not in text
    assert "| bag | property | objects | opened (s since the bag's first frame) | frames | ended | why | plot |" in text


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
