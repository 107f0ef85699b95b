"""Trajectory sources for the tree: bags with recorded predicates, trace files, unknown values."""

import json

import numpy as np
import pytest

from safety_monitor.cli import main
from safety_monitor.errors import SourceError
from safety_monitor.frames import PredicateSample
from safety_monitor.io.bag import BagWriter
from safety_monitor.verify.trajectories import Trajectory, load, merge, to_matrix


def write_bag(path, rows, unknown_at=None):
    with BagWriter(path, storage="mcap") as writer:
        for i, row in enumerate(rows):
            unknown = frozenset(row) if i == unknown_at else frozenset()
            writer.write_predicates("/safety_monitor/predicates", PredicateSample(row, 0.002 * (i + 1), i, unknown))
    return str(path)


def test_bags_and_trace_files_merge_into_one_tree(tmp_path, capsys):
    rows = [{"grasped": i >= 2, "dropped": False} for i in range(6)]
    bag = write_bag(tmp_path / "run_a.mcap", rows)
    trace = tmp_path / "run_b.jsonl"
    trace.write_text("".join(json.dumps({**r, "dropped": i == 5}) + "\n" for i, r in enumerate(rows)))
    found = load([bag, trace])
    assert [len(t.frames) for t in found] == [6, 6]
    tree = merge(found)
    assert tree.n_nodes == 7 and tree.names == (bag, str(trace))  # frames 0-4 shared
    assert main(["ctl", bag, str(trace), "--formula", "AG !dropped"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATED" in out and f"on {trace}" in out


def test_bag_without_predicates_is_a_clear_error(tmp_path):
    with BagWriter(tmp_path / "states.mcap", storage="mcap") as writer:
        writer.write_clock(0.1)
    with pytest.raises(SourceError, match="no /safety_monitor/predicates topic"):
        load([tmp_path / "states.mcap"])


def test_unknown_values_are_an_error_or_keep_the_last_known_value(tmp_path, capsys):
    bag = write_bag(tmp_path / "blind.mcap", [{"p": True}, {"p": False}, {"p": True}], unknown_at=1)
    with pytest.raises(SourceError, match="'p' is unknown at frame 1"):
        merge(load([bag]))
    run = Trajectory("t", [{"p": None}, {"p": True}, {"p": None}, {"p": False}])
    assert to_matrix(run, ["p"], unknown="last")[:, 0].tolist() == [False, True, True, False]
    assert main(["ctl", bag, "--formula", "AG p", "--unknown", "last"]) == 0
    assert main(["ctl", bag, "--formula", "AG p"]) == 2
    assert "--unknown last" in capsys.readouterr().err


def test_missing_predicate_and_empty_trajectory():
    with pytest.raises(SourceError, match="frame 1 has no value for predicate 'q'"):
        merge([Trajectory("t", [{"p": True, "q": True}, {"p": True}])])
    with pytest.raises(SourceError, match="no frames"):
        to_matrix(Trajectory("empty", []), ["p"])
    assert to_matrix(Trajectory("t", [{"p": True}]), ["p"]).dtype == np.bool_


def test_malformed_predicates_message_names_the_bag_and_the_message(tmp_path):
    from safety_monitor.io import messages as m

    path = tmp_path / "bad.mcap"
    with BagWriter(path, storage="mcap") as writer:
        for i in range(3):
            msg = m.predicates_msg(writer.types, PredicateSample({"p": True}, 0.002 * (i + 1), i))
            if i == 2:
                msg.status[0].values[0].value = "maybe"
            writer.write("/safety_monitor/predicates", msg, 0.002 * (i + 1))
    with pytest.raises(SourceError, match=rf"{path}: /safety_monitor/predicates message 2: .*'maybe'"):
        load([path])


def test_only_the_formulas_predicates_need_known_values(tmp_path, capsys):
    trace = tmp_path / "blind_c.jsonl"
    trace.write_text(
        '{"a": false, "b": false, "c": null}\n{"a": true, "b": false, "c": true}\n{"a": false, "b": true, "c": null}\n'
    )
    assert main(["ctl", str(trace), "--formula", "AG(a -> AF b)"]) == 0
    assert main(["ctl", str(trace), "--formula", "AG(a -> AF c)"]) == 2
    assert "'c' is unknown at frame 0" in capsys.readouterr().err
    tree = merge(load([trace]), atoms=["b", "a"])
    assert tree.atoms == ("a", "b")
    with pytest.raises(SourceError, match=r"predicate 'zz' is not recorded in the trajectories \(they have: a, b, c\)"):
        merge(load([trace]), atoms=["a", "zz"])


def test_formula_errors_come_before_reading_any_trajectory(tmp_path, capsys):
    assert main(["ctl", str(tmp_path / "missing.jsonl"), "--formula", "AG(a ->"]) == 2
    assert "CTL syntax error" in capsys.readouterr().err


def test_a_folder_of_bags_is_searched_as_replay_does(tmp_path, capsys):
    for k in range(2):  # the layout `sim --episodes 2 --record run` writes
        (tmp_path / "run" / f"episode_{k:03d}").mkdir(parents=True)
        write_bag(tmp_path / "run" / f"episode_{k:03d}" / f"episode_{k:03d}.mcap", [{"p": True}, {"p": k == 0}])
    found = load([tmp_path / "run"])
    assert [t.name for t in found] == [
        str(tmp_path / "run" / f"episode_{k:03d}" / f"episode_{k:03d}.mcap") for k in range(2)
    ]
    assert main(["ctl", str(tmp_path / "run"), "--formula", "EG p"]) == 0
    (tmp_path / "empty").mkdir()
    assert main(["ctl", str(tmp_path / "empty"), "--formula", "AG p"]) == 2
    assert "no rosbag2 bags" in capsys.readouterr().err
