"""The installation a Ray task checks its node has: the package's code and model files and its config
folder, one digest each; an edit, a missing file or an extra one is named. And the copy of a bag a task
checks it reads: its files' names, sizes and ends."""

import hashlib
import shutil
import socket
from dataclasses import replace

import pytest

from safety_monitor.errors import ExecutorError
from safety_monitor.executors import _check_installation
from safety_monitor.files import config_dir
from safety_monitor.installation import (
    PACKAGE,
    Copy,
    copy_differences,
    copy_of,
    read_installation,
    this_installation,
)


def test_this_installation_holds_the_code_the_model_and_the_default_config():
    files = this_installation().files
    assert "safety_monitor/grounding/grasp.py" in files
    assert "safety_monitor/grounding/_geomath.pyi" in files
    assert "safety_monitor/sim/workcell.xml" in files
    assert {"config/specs.yaml", "config/thresholds.yaml", "config/robot.yaml"} <= files.keys()
    assert not [path for path in files if "__pycache__" in path or path.endswith((".so", ".pyc", ".c"))]


def test_a_copy_is_the_same_installation_until_a_file_is_edited_added_or_removed(tmp_path):
    package, config = tmp_path / "safety_monitor", tmp_path / "config"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(config_dir(), config)
    original = read_installation(package, config)
    assert original == this_installation()
    (package / "grounding" / "__pycache__").mkdir()
    (package / "grounding" / "__pycache__" / "stray.py").write_text("x = 1\n")  # not part of it
    assert read_installation(package, config) == original
    with (config / "thresholds.yaml").open("a") as f:
        f.write("\n# tuned on this node\n")
    (package / "sim" / "workcell.xml").unlink()
    (package / "extra.py").write_text("")
    edited = read_installation(package, config)
    assert edited.differences(original) == [
        "config/thresholds.yaml differs",
        "safety_monitor/extra.py only here",
        "safety_monitor/sim/workcell.xml missing here",
    ]
    assert original.differences(edited) == [
        "config/thresholds.yaml differs",
        "safety_monitor/extra.py missing here",
        "safety_monitor/sim/workcell.xml only here",
    ]


def test_a_task_checks_the_named_files_where_it_runs_and_names_the_ones_that_differ(tmp_path, monkeypatch):
    """What a Ray task does before its work (in the command's folder): the same files pass; an edited spec
    file and a missing robot description are named, the package's files being the same."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs.yaml").write_text("properties: []\n")
    (tmp_path / "robot.yaml").write_text("joints: []\n")
    command = this_installation().naming(["specs.yaml", "robot.yaml"])
    _check_installation(command)
    (tmp_path / "specs.yaml").write_text("properties: [] # edited on this node\n")
    (tmp_path / "robot.yaml").unlink()
    with pytest.raises(
        ExecutorError, match=r"other files than the command's \(specs.yaml differs, robot.yaml missing here\): put"
    ):
        _check_installation(command)


def test_the_robot_model_digest_is_the_same_for_the_same_files_and_not_for_an_edited_mesh_or_geom(tmp_path):
    """What a replay worker compares with the command's (`ReplayConfig.with_model`): the twin's compiled
    model, so the robot's MJCF or URDF, meshes and MuJoCo's build are all in it."""
    from safety_monitor.grounding.grounder import load_default_grounder

    first, again = (load_default_grounder(500.0).twin.digest for _ in range(2))
    assert first == again and len(first) == 64
    robot = (config_dir() / "robot.yaml").read_text()
    model = (PACKAGE / "sim" / "workcell.xml").read_text()
    shutil.copytree(PACKAGE / "sim", tmp_path / "sim")  # the model and anything it includes, beside the copy
    (tmp_path / "robot.yaml").write_text(robot.replace("package://safety_monitor/sim/workcell.xml", "sim/workcell.xml"))
    assert load_default_grounder(500.0, tmp_path / "robot.yaml").twin.digest == first
    table = 'name="table_top" type="box" size="0.65 0.65 0.2"'
    assert table in model
    (tmp_path / "sim" / "workcell.xml").write_text(model.replace(table, table.replace("0.65 0.65", "0.66 0.65")))
    assert load_default_grounder(500.0, tmp_path / "robot.yaml").twin.digest != first  # a table 1 cm longer


def _bag_folder(path, data: bytes):
    path.mkdir()
    (path / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    (path / "run_0.mcap").write_bytes(data)
    return path


def test_a_copy_cut_short_grown_or_changed_at_an_end_is_not_the_same_copy(tmp_path):
    data = bytes(range(256)) * 1024  # 256 KiB: four times what is read at each end
    command = copy_of(_bag_folder(tmp_path / "command", data))
    assert copy_of(_bag_folder(tmp_path / "same", data)) == command

    short = copy_of(_bag_folder(tmp_path / "short", data[:-1000]))
    assert copy_differences(short, command) == [  # on the command's machine: changed since it read it
        f"run_0.mcap is {len(data) - 1000} bytes now, {len(data)} when the command read it"
    ]
    assert copy_differences(replace(short, host="node-b"), command) == [  # on another node: another copy
        f"run_0.mcap is {len(data) - 1000} bytes here, {len(data)} on the command's machine"
    ]
    for name, changed in (("head", b"x" + data[1:]), ("tail", data[:-1] + b"x")):
        other = copy_of(_bag_folder(tmp_path / name, changed))
        assert copy_differences(other, command) == ["run_0.mcap differs"]
    extra = _bag_folder(tmp_path / "extra", data)
    (extra / "run_1.mcap").write_bytes(b"more")
    (extra / "metadata.yaml").unlink()
    assert copy_differences(copy_of(extra), command) == ["metadata.yaml missing here", "run_1.mcap only here"]


def test_a_bag_file_is_its_own_copy_and_a_missing_one_has_none(tmp_path):
    (tmp_path / "run.mcap").write_bytes(b"\x89MCAP0\r\n" * 10)
    digest = hashlib.sha256(b"\x89MCAP0\r\n" * 10).hexdigest()
    assert copy_of(tmp_path / "run.mcap") == Copy(socket.gethostname(), {"run.mcap": (80, digest)})
    assert copy_of(tmp_path / "elsewhere") is None
