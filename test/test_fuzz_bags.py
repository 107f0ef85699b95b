"""Truncated, bit-flipped and edited bags: reading and scoring end in a SourceError naming the bag, or in a
well-formed result that is never silently safer than the intact bag's (benchmarks/fuzz_inputs.py runs
the long campaign). The replay batch scores the good bags of a folder and reports the broken ones."""

import os
import shutil
import struct
import subprocess
import sys

import pytest
import yaml
from hypothesis import given, settings
from test_fuzz_support import (
    BAG_SPECS,
    FRAMES,
    FUZZ,
    MODES,
    STORAGES,
    damaged_copy,
    damages,
    data_file,
    guarded,
    is_failure,
    read_outcome,
    replay_config,
    score_outcome,
    write_base_bag,
)

from safety_monitor.errors import SourceError
from safety_monitor.io.bag import BagReader


class Bags:
    def __init__(self, folder):
        from safety_monitor.replay.score import score_bag
        from safety_monitor.sim.runner import run_episode

        state = next(run_episode("pick_and_place_cube"))
        self.folder = folder
        self.specs = folder / "specs.yaml"
        self.specs.write_text(BAG_SPECS)
        self.base = {s: write_base_bag(folder / f"base_{s}", s, state) for s in STORAGES}
        self.reference = {
            (s, m): score_bag(self.base[s], replay_config(self.specs, m)) for s in STORAGES for m in MODES
        }

    def check(self, storage, damage, modes):
        bag = damaged_copy(self.base[storage], damage, self.folder / "damaged")
        outcome, detail = guarded(lambda: read_outcome(bag))
        assert not is_failure(outcome), (outcome, detail, damage)
        for mode in modes:
            config = replay_config(self.specs, mode)
            outcome, detail = guarded(lambda: score_outcome(bag, config, self.reference[storage, mode]))
            assert not is_failure(outcome), (mode, outcome, detail, damage)


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    return Bags(tmp_path_factory.mktemp("fuzz_bags"))


@pytest.mark.parametrize("storage", STORAGES)
def test_intact_bags_score_the_scripted_violations(bags, storage):
    recorded = bags.reference[storage, "predicates"]
    assert recorded.ok and recorded.frames == FRAMES and recorded.warnings == []
    assert [o.violations for o in recorded.trace.outcomes] == [1, 1, 1]
    grounded = bags.reference[storage, "robot_state"]
    assert grounded.ok and grounded.frames == FRAMES and grounded.rate_hz == 100.0
    assert grounded.trace.outcome("no_excess_wrench").violating_frames == 20


@settings(FUZZ, max_examples=25)
@given(damage=damages("mcap"))
def test_damaged_mcap_bags_in_predicate_mode(bags, damage):
    bags.check("mcap", damage, ["predicates"])


@settings(FUZZ, max_examples=25)
@given(damage=damages("sqlite3"))
def test_damaged_sqlite3_bags_in_predicate_mode(bags, damage):
    bags.check("sqlite3", damage, ["predicates"])


@settings(FUZZ, max_examples=6)
@given(damage=damages("mcap"))
def test_damaged_mcap_bags_in_robot_state_mode(bags, damage):
    bags.check("mcap", damage, ["robot_state"])


@settings(FUZZ, max_examples=6)
@given(damage=damages("sqlite3"))
def test_damaged_sqlite3_bags_in_robot_state_mode(bags, damage):
    bags.check("sqlite3", damage, ["robot_state"])


def _mcap_message_records(data: bytes) -> list[int]:
    """Offsets of the message records (opcode 0x05) inside the first chunk of an uncompressed mcap file."""
    pos = 8  # magic
    while pos < len(data):
        opcode, length = data[pos], struct.unpack_from("<Q", data, pos + 1)[0]
        if opcode == 0x06:  # chunk: start, end, uncompressed size, crc, compression, records length, records
            body = pos + 9
            name_len = struct.unpack_from("<I", data, body + 28)[0]
            start = body + 40 + name_len
            end = start + struct.unpack_from("<Q", data, body + 32 + name_len)[0]
            found, p = [], start
            while p < end:
                if data[p] == 0x05:
                    found.append(p)
                p += 9 + struct.unpack_from("<Q", data, p + 1)[0]
            return found
        pos += 9 + length
    return []


@pytest.mark.parametrize("length, problem", [(None, "only 569 could be read"), (2**63 - 16, "corrupt or truncated")])
def test_an_mcap_record_of_unknown_kind_is_no_silent_short_read(bags, length, problem):
    """rosbags skips a chunk record of unknown kind without a word (a lost message), and seeks past any
    C size when that record's length is damaged too."""
    bag = bags.folder / "opcode"
    shutil.rmtree(bag, ignore_errors=True)
    shutil.copytree(bags.base["mcap"], bag)
    path = data_file(bag)
    data = bytearray(path.read_bytes())
    record = _mcap_message_records(bytes(data))[10]
    data[record] = 0x7F
    if length is not None:
        data[record + 1 : record + 9] = struct.pack("<Q", length)
    path.write_bytes(bytes(data))
    with pytest.raises(SourceError, match=problem) as caught, BagReader(bag) as reader:
        for _ in reader.raw_messages(set(reader.topics)):
            pass
    assert str(caught.value).startswith(str(bag))


def test_sqlite3_pages_damaged_mid_stream_are_source_errors(bags):
    """rosbags reads sqlite3 through apsw: corruption met while streaming is apsw.CorruptError. The damage is
    the payload length of a message row (the first cell of a table leaf page), made larger than the page:
    opening the bag reads only the row's leading columns, streaming its data then follows a bogus overflow
    page. Aimed by the file format, not at fixed offsets, whose content moves with the messages' sizes."""
    original = data_file(bags.base["sqlite3"]).read_bytes()
    outcomes = []
    for page in range(5, 20):
        start = page * 4096
        cell = start + int.from_bytes(original[start + 8 : start + 10], "big")  # a leaf page's first cell
        if original[start] != 0x0D or not (original[cell] & 0x80 and not original[cell + 1] & 0x80):
            continue  # not a table leaf page, or its first cell's payload length is not a two-byte varint
        bag = bags.folder / "page"
        shutil.rmtree(bag, ignore_errors=True)
        shutil.copytree(bags.base["sqlite3"], bag)
        data = bytearray(original)
        data[cell : cell + 2] = b"\xff\x7f"  # 16383 bytes, in the same two-byte varint
        data_file(bag).write_bytes(bytes(data))
        try:
            with BagReader(bag) as reader:
                for _ in reader.raw_messages(set(reader.topics)):
                    pass
            outcomes.append("read")
        except SourceError as exc:
            outcomes.append("mid-stream" if "corrupt or truncated" in str(exc) else "at open")
    assert "mid-stream" in outcomes and "read" not in outcomes, outcomes


@pytest.mark.parametrize(
    "field, value, problem",
    [
        ("name", 10**12, "cannot open bag"),
        ("type", -1, "no message type for topic"),
        ("type", "", "no message type for topic"),
        (None, {}, "cannot open bag"),
    ],
)
def test_metadata_values_of_the_wrong_type_are_a_source_error_at_open(bags, field, value, problem):
    bag = bags.folder / "meta"
    shutil.rmtree(bag, ignore_errors=True)
    shutil.copytree(bags.base["mcap"], bag)
    meta = bag / "metadata.yaml"
    doc = yaml.safe_load(meta.read_text())
    info = doc["rosbag2_bagfile_information"]
    if field is None:
        info["message_count"] = value
    else:
        info["topics_with_message_count"][0]["topic_metadata"][field] = value
    meta.write_text(yaml.safe_dump(doc))
    with pytest.raises(SourceError, match=problem) as caught, BagReader(bag):
        pass
    assert str(caught.value).startswith(str(bag))


def test_metadata_damage_that_only_breaks_closing_the_bag_still_reads_it(bags):
    bag = bags.folder / "files"
    shutil.rmtree(bag, ignore_errors=True)
    shutil.copytree(bags.base["mcap"], bag)
    meta = bag / "metadata.yaml"
    doc = yaml.safe_load(meta.read_text())
    doc["rosbag2_bagfile_information"]["files"] = "/joint_states"
    meta.write_text(yaml.safe_dump(doc))
    with BagReader(bag) as reader:
        assert sum(1 for _ in reader.raw_messages(set(reader.topics))) == reader.message_count


def test_joint_stamps_that_give_no_rate_fail_naming_the_bag(bags, tmp_path):
    from safety_monitor.io.bag import BagWriter
    from safety_monitor.replay.score import score_bag

    bag = tmp_path / "frozen_clock"
    with BagWriter(bag, storage="mcap") as w:
        for _ in range(3):
            w.write_joint_state("/joint_states", 100.0, ["arm_joint1"], [0.0])
    result = score_bag(bag, replay_config(bags.specs, "robot_state"))
    assert result.error.startswith(f"{bag}: /joint_states: cannot measure the control rate")


def test_replay_of_a_folder_scores_the_good_bag_and_reports_the_broken_one(bags, tmp_path):
    folder = tmp_path / "runs"
    good = shutil.copytree(bags.base["sqlite3"], folder / "good")
    broken = shutil.copytree(bags.base["mcap"], folder / "broken")
    path = data_file(broken)
    path.write_bytes(path.read_bytes()[:60000])
    env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "safety_monitor.cli",
            "replay",
            str(folder),
            "--specs",
            str(bags.specs),
            "--from-predicates",
            "--quiet",
            "--resamples",
            "50",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "1 of 2 bag(s) scored, 1 failed" in proc.stdout
    failed = [line for line in proc.stderr.splitlines() if line.startswith("safety-monitor replay: failed: ")]
    assert len(failed) == 1 and str(broken) in failed[0] and str(good) not in failed[0]
    assert "no_excess_wrench" in proc.stdout
