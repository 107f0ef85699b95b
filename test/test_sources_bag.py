"""rosbag2 writing and reading with rosbags: both storages, embedded types, damaged and odd bags."""

import copy
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import StoragePlugin
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from safety_monitor.errors import SourceError
from safety_monitor.frames import Pose, Wrench
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagReader, BagWriter, TopicSummary, default_typestore, find_bags
from safety_monitor.verify.trajectories import load as load_trajectories

TOPICS = {"/joint_states", "/wrist_wrench", "/objects/mug/pose", "/safety_monitor/predicates", "/clock"}


def _write(path, storage="mcap", n=50, typestore=None, extra=None):
    with BagWriter(path, storage=storage, typestore=typestore) as w:
        for k in range(n):
            t = 10.0 + k * 0.002
            w.write_clock(t)
            w.write_joint_state("/joint_states", t, ["a", "b"], [k * 0.01, -1.0], [0.5, 0.0])
            w.write_wrench("/wrist_wrench", t, Wrench(np.array([0.0, 0.0, float(k)]), np.zeros(3)))
            w.write_pose("/objects/mug/pose", t, Pose(np.array([0.1, 0.2, 0.3]), np.array([1.0, 0.0, 0.0, 0.0])))
            w.write_predicates("/safety_monitor/predicates", m.PredicateSample({"p": k % 2 == 0}, t, k))
            if extra:
                extra(w, t)
    return Path(path)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_written_bag_reads_back_in_log_time_order(tmp_path, storage):
    bag = _write(tmp_path / "bag", storage)
    with BagReader(bag) as r:
        assert r.topics["/joint_states"].msgtype == "sensor_msgs/msg/JointState"
        assert r.topics["/wrist_wrench"].count == 50 and r.message_count == 250
        assert r.duration == pytest.approx(0.098, abs=1e-6)
        joints = [m.joint_state_sample(msg) for topic, _, msg in r.messages({"/joint_states"})]
        preds = [m.decode_predicates(msg) for _, _, msg in r.messages({"/safety_monitor/predicates"})]
        order = [topic for topic, _, _ in r.messages(TOPICS)][:5]
    assert [j.stamp for j in joints] == pytest.approx([10.0 + k * 0.002 for k in range(50)], abs=1e-9)
    assert joints[7].position[0] == pytest.approx(0.07)
    assert [p.values["p"] for p in preds] == [k % 2 == 0 for k in range(50)]
    assert len(order) == 5 and set(order) == {
        "/clock",
        "/joint_states",
        "/wrist_wrench",
        "/objects/mug/pose",
        "/safety_monitor/predicates",
    }


def _split(bag, out, parts, storage="mcap"):
    """`bag` as `ros2 bag record --max-bag-duration` splits it: out/<name>_<i>.<ext> for consecutive spans of
    its messages, and one metadata.yaml listing them and adding up the parts' counts and times."""
    with BagReader(bag) as r:
        messages = list(r.messages(TOPICS))
    out.mkdir(parents=True)
    files, infos = [], []
    for i in range(parts):
        part = out.parent / f"{out.name}.part{i}"
        with BagWriter(part, storage=storage) as w:
            for topic, t_ns, msg in messages[i * len(messages) // parts : (i + 1) * len(messages) // parts]:
                w.write(topic, msg, t_ns / 1e9)
        stored = next(f for f in part.iterdir() if f.name != "metadata.yaml")
        files.append(stored.rename(out / f"{out.name}_{i}{stored.suffix}").name)
        infos.append(yaml.safe_load((part / "metadata.yaml").read_text())["rosbag2_bagfile_information"])
        shutil.rmtree(part)
    info = infos[0]
    for topic in info["topics_with_message_count"]:
        name = topic["topic_metadata"]["name"]
        topic["message_count"] = sum(
            t["message_count"]
            for i in infos
            for t in i["topics_with_message_count"]
            if t["topic_metadata"]["name"] == name
        )
    end = max(i["starting_time"]["nanoseconds_since_epoch"] + i["duration"]["nanoseconds"] for i in infos)
    info["duration"]["nanoseconds"] = end - info["starting_time"]["nanoseconds_since_epoch"]
    info["message_count"] = sum(i["message_count"] for i in infos)
    info["relative_file_paths"] = files
    info["files"] = [dict(i["files"][0], path=f) for i, f in zip(infos, files)]
    (out / "metadata.yaml").write_text(yaml.safe_dump({"rosbag2_bagfile_information": info}))
    return out


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_split_bag_reads_as_one_recording_in_log_time_order_whatever_order_its_metadata_lists(tmp_path, storage):
    """Before, rosbags read the files in metadata.yaml's order: the recording's end came first, and replay
    scored the jumps back in time as restarts."""
    whole = _write(tmp_path / "whole", storage, n=60)
    bag = _split(whole, tmp_path / "run", 3, storage)
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())
    meta["rosbag2_bagfile_information"]["relative_file_paths"].reverse()
    (bag / "metadata.yaml").write_text(yaml.safe_dump(meta))
    with BagReader(whole) as w, BagReader(bag) as r:
        assert r.message_count == 300 and r.topics == w.topics
        assert list(r.raw_messages(TOPICS)) == list(w.raw_messages(TOPICS))
        assert _batched(r, TOPICS, 7) == list(w.raw_messages(TOPICS))


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_split_bag_without_its_metadata_yaml_is_one_recording_of_its_files(tmp_path, storage):
    """A recorder that is killed writes no metadata.yaml. Before, its files run_0.mcap, run_1.mcap... were
    scored as separate recordings, each with a start-up and an end of its own."""
    whole = _write(tmp_path / "whole", storage, n=60)
    bag = _split(whole, tmp_path / "runs" / "run", 3, storage)
    (bag / "metadata.yaml").unlink()
    assert find_bags([tmp_path / "runs"]) == find_bags([bag]) == [bag]
    with BagReader(whole) as w, BagReader(bag) as r:
        assert r.message_count == 300 and r.topics == w.topics
        assert list(r.raw_messages(TOPICS)) == list(w.raw_messages(TOPICS))
    assert [len(t.frames) for t in load_trajectories([bag])] == [60]  # ctl reads it as one bag too
    renamed = bag.rename(tmp_path / "runs" / "renamed")  # files not named after their folder: bags of their own
    assert find_bags([renamed]) == sorted(renamed.iterdir())


def test_a_split_bag_missing_one_of_its_files_names_it_and_says_what_to_do(tmp_path):
    bag = _split(_write(tmp_path / "whole", n=30), tmp_path / "run", 3)
    (bag / "run_1.mcap").unlink()
    with pytest.raises(SourceError) as refused, BagReader(bag):
        pass
    assert str(refused.value) == (
        f"{bag}: cannot open bag: its metadata.yaml lists run_1.mcap, not in the folder: restore it, "
        f"or describe the files there are with `ros2 bag reindex {bag}`"
    )


def test_bare_storage_files_and_folders_of_bags_are_found(tmp_path):
    a = _write(tmp_path / "runs" / "a", n=2)
    b = _write(tmp_path / "runs" / "sub" / "b", "sqlite3", n=2)
    loose = tmp_path / "runs" / "loose.mcap"
    shutil.copy(next(a.glob("*.mcap")), loose)
    assert find_bags([tmp_path / "runs"]) == sorted([a, b, loose])
    with BagReader(loose) as r:
        assert r.topics["/joint_states"].count == 2
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="no rosbag2 bags"):
        find_bags([tmp_path / "empty"])
    with pytest.raises(SourceError, match="no such file"):
        find_bags([tmp_path / "missing"])


@pytest.mark.parametrize("mode", ["FILE", "MESSAGE"])
@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_zstd_compressed_bags_read_and_a_compressed_file_alone_says_how_to_decompress_it(tmp_path, storage, mode):
    """`ros2 bag record --compression-mode file|message --compression-format zstd`: rosbags reads both
    through metadata.yaml. Before, a compressed file without it was "not a bag", and a folder of them had
    "no rosbag2 bags"."""
    from rosbags.rosbag2 import CompressionFormat, CompressionMode

    plain = _write(tmp_path / "plain", storage, n=5)
    writer = BagWriter(tmp_path / "zstd", storage=storage)
    writer._writer.set_compression(CompressionMode[mode], CompressionFormat.ZSTD)
    with writer, BagReader(plain) as r:
        for topic, t_ns, msg in r.messages(TOPICS):
            writer.write(topic, msg, t_ns / 1e9)
    with BagReader(tmp_path / "zstd") as r, BagReader(plain) as p:
        assert list(r.raw_messages(TOPICS)) == list(p.raw_messages(TOPICS))
    if mode == "MESSAGE":
        return
    [compressed] = (tmp_path / "zstd").glob("*.zstd")
    (tmp_path / "zstd" / "metadata.yaml").unlink()
    suffix = ".mcap" if storage == "mcap" else ".db3"
    for given in (compressed, tmp_path):
        with pytest.raises(SourceError) as refused:
            find_bags([given])
        assert str(refused.value) == (
            f"{compressed}: a zstd-compressed bag file: give its bag folder with its metadata.yaml, or decompress it "
            f"(`zstd -d {compressed}`) and give the {suffix} file"
        )


def test_a_bags_metadata_yaml_names_the_bag_and_other_files_are_refused(tmp_path):
    """Before, both went to rosbags as storage files: "Unrecognized storage format '.yaml'", a bag failed
    (exit 1) rather than a bad argument, and ctl read metadata.yaml as a JSON trace."""
    a = _write(tmp_path / "a", n=2)
    assert find_bags([a / "metadata.yaml"]) == [a]
    (tmp_path / "spec.yaml").write_text("predicates: [a]\n")
    with pytest.raises(SourceError, match=r"spec\.yaml: not a bag \(give a bag folder, an \.mcap or \.db3 file"):
        find_bags([a, tmp_path / "spec.yaml"])
    assert [t.name for t in load_trajectories([a / "metadata.yaml"])] == [str(a)]


def test_a_folder_of_links_to_bags_finds_each_bag_once_and_a_link_back_up_ends_the_search(tmp_path):
    a = _write(tmp_path / "runs" / "a", n=2)
    b = _write(tmp_path / "runs" / "sub" / "b", "sqlite3", n=2)
    loose = tmp_path / "runs" / "loose.mcap"
    shutil.copy(next(a.glob("*.mcap")), loose)
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    (chosen / "first").symlink_to(a, target_is_directory=True)
    (chosen / "more").symlink_to(tmp_path / "runs" / "sub", target_is_directory=True)
    (chosen / "again").symlink_to(a, target_is_directory=True)  # the same bag twice: found once
    (chosen / "file.mcap").symlink_to(loose)
    (chosen / "more" / "up").symlink_to(chosen, target_is_directory=True)  # a cycle through runs/sub
    found = find_bags([chosen])
    assert found == sorted(found)
    assert sorted(p.resolve() for p in found) == sorted([a, b, loose])  # each bag once
    assert all(p.is_relative_to(chosen) for p in found)  # named as the links name them


def test_embedded_custom_types_are_registered_from_the_bag(tmp_path):
    store = get_typestore(Stores.ROS2_KILTED)
    store.register(get_types_from_msg("int32 x\nstring label", "my_pkg/msg/Thing"))
    bag = _write(
        tmp_path / "bag",
        n=3,
        typestore=store,
        extra=lambda w, t: w.write("/thing", store.types["my_pkg/msg/Thing"](x=7, label="ok"), t),
    )
    with BagReader(bag) as r:  # a reader that never heard of my_pkg
        things = [msg for _, _, msg in r.messages({"/thing"})]
    assert [(t.x, t.label) for t in things] == [(7, "ok")] * 3


def test_types_without_definitions_are_skipped_with_a_warning_and_standard_ones_filled_in(tmp_path):
    store = get_typestore(Stores.ROS2_KILTED)
    store.register(get_types_from_msg("int32 x", "my_pkg/msg/Thing"))
    bag = _write(
        tmp_path / "bag",
        "sqlite3",
        n=3,
        typestore=store,
        extra=lambda w, t: w.write("/thing", store.types["my_pkg/msg/Thing"](x=1), t),
    )
    db = sqlite3.connect(bag / "bag.db3")
    db.execute("DELETE FROM message_definitions WHERE topic_type IN ('my_pkg/msg/Thing', 'sensor_msgs/msg/JointState')")
    db.commit()
    db.close()
    with BagReader(bag) as r:
        assert r.skipped_types == ("my_pkg/msg/Thing",)
        assert len(list(r.messages({"/joint_states"}))) == 3  # definition from the default typestore
        with pytest.raises(SourceError, match="cannot read topic /thing: its type my_pkg/msg/Thing has no definition"):
            list(r.messages({"/thing", "/joint_states"}))
        assert r.warnings[0].startswith("topic(s) /thing skipped: type my_pkg/msg/Thing has no definition")


def _with_definition(topic, msgtype, text, raw=b"\x00\x01\x00\x00\x07\x00\x00\x00"):
    """An `extra` writing `raw` on `topic`, embedded under `text` as its definition (as a vendor's tool might)."""
    conn = []

    def extra(w, t):
        writer = w._writer
        if not conn:
            conn.append(writer.add_connection(topic, msgtype, msgdef=text, rihs01="RIHS01_" + "0" * 64))
        writer.write(conn[0], round(t * 1e9), raw)

    return extra


def test_a_topic_recorded_with_two_types_names_both(tmp_path):
    """Before, its type was "?", and replay said `expected type geometry_msgs/msg/WrenchStamped, found ?`."""
    conn = []

    def bare_wrench(w, t):  # a driver restarted into publishing plain Wrench on the same topic
        if not conn:
            conn.append(w._writer.add_connection("/wrist_wrench", "geometry_msgs/msg/Wrench", typestore=w.typestore))
        wrench = m.wrench_msg(w.types, t, Wrench(np.zeros(3), np.zeros(3))).wrench
        w._writer.write(conn[0], round(t * 1e9) + 1, w.typestore.serialize_cdr(wrench, "geometry_msgs/msg/Wrench"))

    bag = _write(tmp_path / "bag", n=3, extra=bare_wrench)
    with BagReader(bag) as r:
        assert r.topics["/wrist_wrench"] == TopicSummary(
            "geometry_msgs/msg/Wrench and geometry_msgs/msg/WrenchStamped", 6
        )


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
@pytest.mark.parametrize(
    "text, why",
    [("this is ### not a definition {", "leaves vendor_msgs/msg/this undefined"), ("int32[ x", "does not parse")],
)
def test_a_topic_whose_definition_is_broken_is_skipped_and_named(tmp_path, storage, text, why):
    vendor = _with_definition("/vendor/status", "vendor_msgs/msg/Status", text)
    bag = _write(tmp_path / "bag", storage, n=3, extra=vendor)
    with BagReader(bag) as r:
        assert len(list(r.messages(TOPICS))) == 15
        with pytest.raises(
            SourceError,
            match=f"{bag}: cannot read topic /vendor/status: its type "
            f"vendor_msgs/msg/Status has a definition in the bag that {why}",
        ):
            list(r.message_batches({"/vendor/status"}))
        [warning] = r.warnings
        assert warning.startswith(
            f"topic(s) /vendor/status skipped: type vendor_msgs/msg/Status has a definition in the bag that {why}"
        )


def test_a_broken_definition_is_named_again_each_time_a_bag_with_it_is_opened(tmp_path):
    """The verdict on a set of definitions is kept for the next bag that has them (a recorder's bags repeat
    them): each bag still has the broken one stripped, and named, and its good topics read."""
    bags = [
        _write(
            tmp_path / f"bag{k}",
            "mcap",
            n=3,
            extra=_with_definition("/vendor/status", "vendor_msgs/msg/Status", "int32[ x"),
        )
        for k in range(2)
    ]
    for bag in (*bags, bags[0]):
        with BagReader(bag) as r:
            assert list(r.skipped) == ["vendor_msgs/msg/Status"]
            assert "has a definition in the bag that does not parse" in r.skipped["vendor_msgs/msg/Status"]
            assert len(list(r.messages(TOPICS))) == 15


def test_a_needed_topic_whose_definition_is_broken_is_an_error_naming_it(tmp_path):
    store = default_typestore()
    msg = m.joint_state_msg(m.rosbags_types(store), 1.0, ["a"], [0.5])
    raw = store.serialize_cdr(msg, "sensor_msgs/msg/JointState")
    extra = _with_definition("/joint_states", "sensor_msgs/msg/JointState", "int32[ x", raw)
    with BagWriter(tmp_path / "bag") as w:
        for k in range(3):
            w.write_clock(1.0 + k)
            extra(w, 1.0 + k)
    with BagReader(tmp_path / "bag") as r:
        assert len(list(r.messages({"/clock"}))) == 3
        with pytest.raises(
            SourceError,
            match="cannot read topic /joint_states: its type sensor_msgs/msg/JointState "
            "has a definition in the bag that does not parse",
        ):
            list(r.messages({"/clock", "/joint_states"}))


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_truncated_bag_is_a_source_error_naming_it(tmp_path, storage):
    bag = _write(tmp_path / "bag", storage, n=400)
    data_file = next(p for p in bag.iterdir() if p.suffix in (".mcap", ".db3"))
    data_file.write_bytes(data_file.read_bytes()[: data_file.stat().st_size // 2])
    with pytest.raises(SourceError, match=str(bag)), BagReader(bag) as r:
        list(r.messages(TOPICS))


def test_an_mcap_file_without_its_end_says_it_is_truncated_or_was_not_closed(tmp_path):
    bag = _write(tmp_path / "bag", n=100)
    data_file = next(bag.glob("*.mcap"))
    data_file.write_bytes(data_file.read_bytes()[:-100])  # as a killed recorder leaves it: no footer
    shutil.copy(data_file, tmp_path / "bare.mcap")
    for path, file in ((bag, data_file), (tmp_path / "bare.mcap", tmp_path / "bare.mcap")):
        with pytest.raises(
            SourceError,
            match=f"^{file}: cannot open bag: the mcap file ends without its footer: "
            "it is truncated, or its recorder was stopped before closing it",
        ):
            with BagReader(path):
                pass


def test_a_broken_metadata_yaml_is_one_line_naming_the_file_and_the_problem(tmp_path):
    bag = _write(tmp_path / "bag", n=2)
    lines = (bag / "metadata.yaml").read_text().splitlines()
    (bag / "metadata.yaml").write_text("\n".join([*lines[:2], " : : [", *lines[2:]]))
    with pytest.raises(SourceError) as err, BagReader(bag):
        pass
    assert str(err.value) == (
        f"{bag}/metadata.yaml: cannot open bag: not valid YAML at line 3, column 2: "
        "expected <block end>, but found '<block mapping start>'"
    )


def test_corrupt_message_bytes_are_a_source_error(tmp_path):
    bag = _write(tmp_path / "bag", "mcap", n=400)
    data_file = next(bag.glob("*.mcap"))
    raw = bytearray(data_file.read_bytes())
    raw[len(raw) // 3 : len(raw) // 3 + 4000] = b"\x55" * 4000
    data_file.write_bytes(bytes(raw))
    with pytest.raises(SourceError, match="bag"), BagReader(bag) as r:
        list(r.messages(TOPICS))


def _batched(reader, topics, size):
    out = []
    for batch in reader.message_batches(topics, size):
        for i in range(len(batch)):
            w = batch.which[i]
            out.append((batch.topics[w], batch.msgtypes[w], int(batch.log_ns[i]), batch.raw(i)))
    return out


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_batches_hold_the_messages_of_raw_messages_in_the_same_order(tmp_path, storage):
    def big(w, t):  # about 10 kB a frame: the mcap file has several chunks; equal stamps across topics
        w.write_joint_state("/big", t, [f"j{i}" for i in range(400)], np.arange(400.0) * t, np.ones(400))

    bag = _write(tmp_path / "bag", storage, n=400, extra=big)
    with BagReader(bag) as r:
        if storage == "mcap":
            assert len(r._open().readers[0].storage.storages[0].chunks) > 2
        for topics in (TOPICS | {"/big"}, {"/safety_monitor/predicates"}, {"/big", "/clock"}):
            want = list(r.raw_messages(topics))
            for size in (1, 7, 4096):
                assert _batched(r, topics, size) == want
        assert list(r.message_batches({"/nothing"})) == []


def test_batches_of_zstd_compressed_chunks_hold_the_same_messages(tmp_path):
    from rosbags.rosbag2 import CompressionFormat, CompressionMode

    plain = _write(tmp_path / "plain", "mcap", n=300)
    writer = BagWriter(tmp_path / "zstd")
    writer._writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with writer, BagReader(plain) as r:
        for topic, t_ns, msg in r.messages(TOPICS):
            writer.write(topic, msg, t_ns / 1e9)
    with BagReader(tmp_path / "zstd") as r, BagReader(plain) as p:
        assert r._open().readers[0].storage.storages[0].chunks[0].compression == "zstd"
        assert _batched(r, TOPICS, 100) == list(p.raw_messages(TOPICS))


def test_a_message_index_that_does_not_match_its_chunk_is_a_source_error(tmp_path):
    bag = _write(tmp_path / "bag", "mcap", n=400)
    data_file = next(bag.glob("*.mcap"))
    raw = bytearray(data_file.read_bytes())
    with BagReader(bag) as r:
        chunk = r._open().readers[0].storage.storages[0].chunks[0]
        first = min(chunk.message_index_offsets.values())
    raw[first + 15 : first + 23] = (10**6).to_bytes(8, "little")  # the first entry's log time
    data_file.write_bytes(bytes(raw))
    with pytest.raises(SourceError, match=f"{bag}: bag is corrupt or truncated: a message index"):
        with BagReader(bag) as r:
            list(r.message_batches(TOPICS))


def test_not_a_bag(tmp_path):
    (tmp_path / "x.mcap").write_text("hello")
    with pytest.raises(SourceError, match="x.mcap"), BagReader(tmp_path / "x.mcap"):
        pass


def test_writer_refuses_to_overwrite_and_to_change_a_topic_type(tmp_path):
    _write(tmp_path / "bag", n=1)
    with pytest.raises(SourceError, match="cannot create bag"), BagWriter(tmp_path / "bag"):
        pass
    with BagWriter(tmp_path / "other") as w:
        w.write_clock(1.0, topic="/x")
        with pytest.raises(SourceError, match="/x has type rosgraph_msgs/msg/Clock"):
            w.write_joint_state("/x", 1.0, ["a"], [0.0])


@pytest.mark.parametrize("store", [Stores.ROS2_HUMBLE, Stores.ROS2_JAZZY])
def test_bags_with_older_distributions_definitions_read_back(tmp_path, store):
    bag = _write(tmp_path / "bag", "sqlite3", n=3, typestore=get_typestore(store))
    with BagReader(bag) as r:
        samples = [m.joint_state_sample(msg) for _, _, msg in r.messages({"/joint_states"})]
        preds = [m.decode_predicates(msg) for _, _, msg in r.messages({"/safety_monitor/predicates"})]
    assert [s.position[0] for s in samples] == pytest.approx([0.0, 0.01, 0.02])
    assert [p.frame for p in preds] == [0, 1, 2]


def test_a_file_that_is_not_mcap_says_so(tmp_path):
    bag = tmp_path / "notes.mcap"
    bag.write_text("these are my notes, not a recording\n")
    with pytest.raises(SourceError) as failed:
        BagReader(bag).__enter__()
    assert (
        str(failed.value) == f"{bag}: cannot open bag: not an mcap file (it does not start with the mcap magic bytes)"
    )


def _recorded(path, storage, n=20):
    """A bag as `ros2 bag record` of Humble to Jazzy writes it, with rosbags' own writer: metadata.yaml
    version 8, the offered QoS as a YAML string, each type's hash."""
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
    from rosbags.rosbag2 import Writer

    store = default_typestore()
    types = m.rosbags_types(store)
    qos = Qos(
        QosHistory.KEEP_LAST,
        10,
        QosReliability.RELIABLE,
        QosDurability.VOLATILE,
        QosTime(0, 0),
        QosTime(0, 0),
        QosLiveliness.AUTOMATIC,
        QosTime(0, 0),
        False,
    )
    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    with Writer(path, version=8, storage_plugin=plugin) as w:
        joints = w.add_connection(
            "/joint_states", "sensor_msgs/msg/JointState", typestore=store, offered_qos_profiles=[qos]
        )
        wrench = w.add_connection("/wrist_wrench", "geometry_msgs/msg/WrenchStamped", typestore=store)
        for k in range(n):
            t = 10.0 + k * 0.002
            joint = m.joint_state_msg(types, t, ["a"], [k * 0.01])
            w.write(joints, round(t * 1e9), store.serialize_cdr(joint, "sensor_msgs/msg/JointState"))
            force = m.wrench_msg(types, t, Wrench(np.array([0.0, 0.0, float(k)]), np.zeros(3)))
            w.write(wrench, round(t * 1e9), store.serialize_cdr(force, "geometry_msgs/msg/WrenchStamped"))
    return Path(path)


def _topic(info, name):
    return next(t for t in info["topics_with_message_count"] if t["topic_metadata"]["name"] == name)


def _edit_qos(info):
    meta = _topic(info, "/joint_states")["topic_metadata"]
    assert "reliability: 1" in meta["offered_qos_profiles"]  # the string the writer wrote
    meta["offered_qos_profiles"] = meta["offered_qos_profiles"].replace("reliability: 1", "reliability: 2")


def _edit_hash(info):
    _topic(info, "/joint_states")["topic_metadata"]["type_description_hash"] = "RIHS01_" + "0" * 64


def _edit_count(info):
    _topic(info, "/joint_states")["message_count"] += 5
    info["message_count"] += 5


def _drop_topic(info):
    info["topics_with_message_count"].remove(_topic(info, "/wrist_wrench"))


def _add_topic(info):
    ghost = copy.deepcopy(_topic(info, "/wrist_wrench"))
    ghost["topic_metadata"]["name"] = "/ghost"
    info["topics_with_message_count"].append(ghost)


def _edit_type(info):
    _topic(info, "/wrist_wrench")["topic_metadata"]["type"] = "geometry_msgs/msg/Wrench"


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
@pytest.mark.parametrize(
    "edit, says",
    [
        (_edit_qos, "its offered_qos_profiles for /joint_states are not those {file} holds"),
        (_edit_hash, "its type_description_hash for /joint_states is RIHS01_" + "0" * 64 + ", {file} has RIHS01_"),
        (_edit_count, "its message_count for /joint_states is 25, {file} holds 20"),
        (_drop_topic, "topic /wrist_wrench of {file} (20 messages) is not in it"),
        (_add_topic, "it lists topic /ghost (20 messages), which no file holds"),
        (
            _edit_type,
            "its type for /wrist_wrench is geometry_msgs/msg/Wrench, {file} holds geometry_msgs/msg/WrenchStamped",
        ),
    ],
)
def test_a_metadata_yaml_out_of_step_with_its_files_is_named_and_the_files_read_as_they_are(
    tmp_path, storage, edit, says
):
    """rosbags reads a file's messages only on connections that match metadata.yaml's in every field, and takes
    its counts as they are. Before, each of these edits dropped the topic's messages (or expected more), and
    replay said "bag is corrupt or truncated" (or that the definition did not match its hash)."""
    intact = _recorded(tmp_path / "intact", storage)
    bag = Path(shutil.copytree(intact, tmp_path / "edited"))
    doc = yaml.safe_load((bag / "metadata.yaml").read_text())
    edit(doc["rosbag2_bagfile_information"])
    (bag / "metadata.yaml").write_text(yaml.safe_dump(doc))
    file = next(p.name for p in bag.iterdir() if p.suffix in (".mcap", ".db3"))
    topics = {"/joint_states", "/wrist_wrench"}
    with BagReader(intact) as want, BagReader(bag) as r:
        assert want.warnings == []
        [warning] = r.warnings
        assert (
            warning.startswith("metadata.yaml is out of step with the bag's files (")
            and says.format(file=file) in warning
        )
        assert warning.endswith(
            f"): read as the files hold it; to make it agree, move it aside and run `ros2 bag reindex {bag}`"
        )
        assert r.topics == want.topics and r.message_count == want.message_count == 40
        assert (r._open().start_time, r._open().end_time) == (want._open().start_time, want._open().end_time)
        assert list(r.raw_messages(topics)) == list(want.raw_messages(topics))
        assert _batched(r, topics, 7) == list(want.raw_messages(topics))


def test_a_topic_metadata_yaml_lists_without_messages_and_no_file_holds_loses_nothing_and_is_no_warning(tmp_path):
    bag = _recorded(tmp_path / "bag", "mcap")
    doc = yaml.safe_load((bag / "metadata.yaml").read_text())
    _add_topic(doc["rosbag2_bagfile_information"])
    _topic(doc["rosbag2_bagfile_information"], "/ghost")["message_count"] = 0
    (bag / "metadata.yaml").write_text(yaml.safe_dump(doc))
    with BagReader(bag) as r:
        assert r.warnings == [] and r.topics["/ghost"].count == 0 and r.message_count == 40
