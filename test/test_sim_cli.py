"""`safety-monitor sim`: the fault list other tools read, task list, errors as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from safety_monitor.cli import main
from safety_monitor.files import config_dir
from safety_monitor.sim.faults import FAULTS
from safety_monitor.sim.tasks import TASKS
from safety_monitor.specs.model import load_specs


def test_list_faults_json_is_the_registry(capsys):
    assert main(["sim", "--list-faults", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["fault"] for r in rows] == list(FAULTS)
    for r in rows:
        spec = FAULTS[r["fault"]]
        assert r["expected_properties"] == list(spec.expected_properties)
        assert r["allowed_properties"] == list(spec.allowed_properties)
        assert r["task"] == spec.task and r["task"] in TASKS


def test_fault_labels_name_default_properties_and_expect_what_they_allow():
    names = {p.name for p in load_specs(config_dir() / "specs.yaml").properties}
    for spec in FAULTS.values():
        assert spec.expected_properties and set(spec.expected_properties) <= set(spec.allowed_properties) <= names


def test_text_listings_name_every_fault_and_task(capsys):
    assert main(["sim", "--list-faults"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in FAULTS)
    assert main(["sim", "--list-tasks"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in TASKS)


def test_bad_run_options_fail_with_one_line(capsys):
    assert main(["sim", "--physics-only", "--fault", "gremlin"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown fault 'gremlin'; known: none, early_release" in err
    with pytest.raises(SystemExit) as usage:  # out of its range: an argparse usage error
        main(["sim", "--physics-only", "--episodes", "0"])
    assert usage.value.code == 2 and "argument --episodes: must be a whole number from 1" in capsys.readouterr().err


def test_physics_only_cycles_a_fault_list_like_a_live_run(capsys, monkeypatch):
    """`--physics-only --fault slip,none` was looked up as one fault name ('unknown fault'), though the help
    says a list is cycled; both modes now follow the sim node's episode_schedule."""
    from safety_monitor.cli import sim as cli

    monkeypatch.setattr(cli, "_run_one", lambda task, fault, seed: {"task": task, "fault": fault, "seed": seed})
    assert main(["sim", "--physics-only", "--fault", "slip,none", "--episodes", "3", "--seed", "5", "--json"]) == 0
    assert [(r["task"], r["fault"], r["seed"]) for r in json.loads(capsys.readouterr().out)] == [
        ("pick_and_place_mug", "slip", 5),
        ("pick_and_place_cube", None, 6),
        ("pick_and_place_mug", "slip", 7),
    ]


def test_list_faults_of_one_task(capsys):
    assert main(["sim", "--list-faults", "--task", "pick_and_place_mug", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["fault"] for r in rows] == [name for name, f in FAULTS.items() if f.task == "pick_and_place_mug"]
    with pytest.raises(SystemExit) as exited:
        main(["sim", "--list-faults", "--task", "nope"])
    assert exited.value.code == 2 and "argument --task: unknown task 'nope'; known: " in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--physics-only", "--record", "x.bag"], "argument --record: not allowed with --physics-only"),
        (
            ["--physics-only", "--events", "e.jsonl", "--storage", "db3"],
            "arguments --events, --storage: not allowed with --physics-only",
        ),
        (["--list-faults", "--list-tasks"], "argument --list-tasks: not allowed with argument --list-faults"),
        (["--list-tasks", "--task", "open_drawer"], "argument --task: not allowed with --list-tasks"),
        (
            ["--list-faults", "--fault", "slip", "--seed", "3"],
            "arguments --fault, --seed: not allowed with --list-faults",
        ),
        (["--storage", "db3"], "argument --storage: needs --record"),  # it ran 3 episodes and recorded nothing
        (["--storage", "mcap", "--episodes", "1"], "argument --storage: needs --record"),
    ],
)
def test_options_a_mode_cannot_honour_are_argument_errors(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["sim", *argv])
    assert exited.value.code == 2 and message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing ran, nothing written


def test_the_docs_fault_table_is_the_registry():
    """docs/sim.md's table lists every fault with its task, expected and other allowed properties (it had
    left out a side effect `push_blocked_drawer` is allowed)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "sim.md").read_text()
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| `")]
    table = {r[0].strip().strip("`"): [c.strip() for c in r[1:]] for r in rows}
    assert list(table) == list(FAULTS)
    for name, (task, expected, also) in table.items():
        spec = FAULTS[name]
        assert task.split(" (")[0] == spec.task, name
        assert expected.split(", ") == list(spec.expected_properties), name
        others = [p for p in spec.allowed_properties if p not in spec.expected_properties]
        assert (also.split(", ") if also != "-" else []) == others, name
