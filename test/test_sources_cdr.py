"""Direct CDR readers: the values rosbags' decoder and the message converters give, or None (decode with rosbags)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from safety_monitor.frames import Pose, Wrench
from safety_monitor.grounding import _geomath
from safety_monitor.io import cdr
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagWriter, default_typestore
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.sim.runner import run_episode

STORE = default_typestore()
T = m.rosbags_types(STORE)
JOINT, WRENCH, POSE, ARRAY = (
    "sensor_msgs/msg/JointState",
    "geometry_msgs/msg/WrenchStamped",
    "geometry_msgs/msg/PoseStamped",
    "diagnostic_msgs/msg/DiagnosticArray",
)


def raw(msg, **kw):
    return bytes(STORE.serialize_cdr(msg, msg.__msgtype__, **kw))


def decoded(data, msgtype):
    return STORE.deserialize_cdr(data, msgtype)


def same_array(a, b):
    return (a is None and b is None) or (
        a is not None and b is not None and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    )


@pytest.mark.parametrize(
    "velocity, effort", [(None, None), ([0.5, -1e300, 2.0], None), ([1.0, 2.0, 3.0], [0.0, -0.0, 7.5])]
)
def test_joint_states_read_as_the_converter_reads_them(velocity, effort):
    reader = cdr.JointStateReader()
    for t, names in ((1.5, ["j1", "gelenk_ä", "j3"]), (1.502, ["j1", "gelenk_ä", "j3"]), (1.504, ["a", "b", "c"])):
        data = raw(m.joint_state_msg(T, t, names, [0.1, np.pi, -2.0], velocity, effort))
        want, got = m.joint_state_sample(decoded(data, JOINT)), reader.read(data)
        assert got.names == want.names and got.stamp == want.stamp
        assert all(same_array(getattr(got, f), getattr(want, f)) for f in ("position", "velocity", "effort"))


def test_wrench_and_pose_read_as_the_converters_read_them():
    wrench = Wrench(np.array([1.0, -2.5, 1e-300]), np.array([0.1, 0.2, -0.3]))
    data = raw(m.wrench_msg(T, 7.25, wrench, frame_id="a_longer_frame"))
    (got, stamp), (want, want_stamp) = cdr.read_wrench(data), m.wrench_of(decoded(data, WRENCH))
    assert stamp == want_stamp and same_array(got.force, want.force) and same_array(got.torque, want.torque)
    pose = Pose(np.array([0.3, -0.1, 0.9]), np.array([0.5, 0.5, -0.5, 0.5]))
    data = raw(m.pose_msg(T, 1e9 + 0.123456789, pose))
    (got, stamp), (want, want_stamp) = cdr.read_pose(data), m.pose_of(decoded(data, POSE))
    assert stamp == want_stamp and same_array(got.position, want.position)
    assert same_array(got.quaternion, want.quaternion) and got.quaternion[0] == 0.5  # w first


@st.composite
def joint_streams(draw):
    """JointState bytes in a row whose layout repeats or changes: frame id, names, array lengths (the same
    message size with other lengths too), big-endian and broken messages in between."""
    out = []
    for i in range(draw(st.integers(1, 8))):
        names = draw(st.sampled_from([["a", "b", "c"], ["a", "b", "x"], ["j1", "j2"], ["aa", "b", "c"]]))
        n = len(names)
        kind = draw(st.sampled_from(["full", "no_velocity", "no_effort", "empty", "shifted"]))
        velocity = None if kind in ("no_velocity", "empty") else [0.5 * i] * n
        effort = None if kind in ("no_effort", "empty") else [-1.0] * n
        position = [0.1 * i] * n if kind != "shifted" else [0.1] * (n + 1)  # same size as "no_velocity" plus one
        msg = m.joint_state_msg(T, 1.0 + i / 500, names, position, velocity, effort)
        msg.header.frame_id = draw(st.sampled_from(["", "base", "bass"]))
        data = raw(msg, little_endian=draw(st.booleans()) or i % 3 != 2)
        out.append(draw(st.sampled_from([data, data, data[:-9], data.replace(b"a\x00", b"ab")])))
    return out


@settings(max_examples=80, deadline=None)
@given(joint_streams())
def test_a_learnt_joint_layout_reads_every_message_as_the_full_walk(stream):
    reader = cdr.JointStateReader()
    for data in stream * 2:
        got, want = reader.read(data), cdr.JointStateReader().read(data)
        assert (got is None) == (want is None)
        if want is not None:
            assert got.names == want.names and got.stamp == want.stamp
            assert all(same_array(getattr(got, f), getattr(want, f)) for f in ("position", "velocity", "effort"))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["", "ft", "fs", "a_longer_frame"]), st.booleans(), st.booleans()), min_size=1)
)
def test_learnt_wrench_and_pose_layouts_read_every_message_as_read_wrench_and_read_pose(messages):
    wrenches, poses = cdr.WrenchReader(), cdr.PoseReader()
    for i, (frame_id, little, cut) in enumerate(messages * 2):
        wrench = Wrench(np.array([1.0 + i, -2.5, 1e-300]), np.array([0.1, 0.2, -0.3 * i]))
        pose = Pose(np.array([0.3, -0.1, 0.9 + i]), np.array([0.5, 0.5, -0.5, 0.5 * i]))
        for reader, read, msg, fields in (
            (wrenches, cdr.read_wrench, m.wrench_msg(T, 7.25 + i, wrench, frame_id), ("force", "torque")),
            (poses, cdr.read_pose, m.pose_msg(T, 1e9 + i / 7, pose, frame_id), ("position", "quaternion")),
        ):
            data = raw(msg, little_endian=little)
            data = data[:-1] if cut else data
            got, want = reader.read(data), read(data)
            assert (got is None) == (want is None)
            if want is not None:
                assert got[1] == want[1] and all(same_array(getattr(got[0], f), getattr(want[0], f)) for f in fields)


KEYS = ("object_grasped", "object_dropped", "near", "contact_ü", "x")
SPELLINGS = ("true", "false", "True", " FALSE ", "1", "0")


@st.composite
def predicate_messages(draw):
    """A DiagnosticArray as an estimator (or an external publisher, with other spellings) sends it."""
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=0, max_size=5))
    texts = draw(
        st.lists(st.sampled_from(SPELLINGS[:2]) | st.sampled_from(SPELLINGS), min_size=len(keys), max_size=len(keys))
    )
    meta = draw(
        st.sampled_from(
            [
                [],
                [
                    ("_frame", "12"),
                    ("_t", "0.30000000000000004"),
                    ("_unknown", "near"),
                    ("_stale", "wrench,object_pose/mug"),
                ],
                [("_frame", "3"), ("_t", "0.5"), ("_unknown", ""), ("_stale", ""), ("_objects", '{"x":["mug"]}')],
                [("_t", "")],
            ]
        )
    )
    pairs = list(zip(keys, texts)) + meta
    status = T.DiagnosticStatus(
        level=T.DiagnosticStatus.OK,
        name=draw(st.sampled_from([m.PREDICATES_STATUS, "x"])),
        message="frame 12" * draw(st.integers(0, 3)),
        hardware_id="estimator",
        values=[T.KeyValue(key=k, value=v) for k, v in pairs],
    )
    return T.DiagnosticArray(header=m.header(T, draw(st.floats(0, 1e6))), status=[status])


@settings(max_examples=60, deadline=None)
@given(st.lists(predicate_messages(), min_size=1, max_size=6))
def test_predicates_read_as_decode_predicates_reads_them_while_the_layout_is_learnt(messages):
    reader = cdr.PredicateReader()
    for msg in messages * 2:  # the second pass meets a layout learnt from the same messages
        data = raw(msg)
        try:
            want = m.decode_predicates(decoded(data, ARRAY))
        except m.BadPredicates as exc:
            with pytest.raises(m.BadPredicates, match=str(exc)[:20]):
                reader.read(data)
            continue
        got = reader.read(data)
        assert got == want and list(got.values) == list(want.values)


def test_a_learnt_layout_reads_each_value_and_checks_each_key():
    reader = cdr.PredicateReader()

    def message(values, t):
        return raw(m.predicates_msg(T, m.PredicateSample(values, t, int(t))))

    first = dict.fromkeys(("a", "bb", "ccc", "dddd", "eeeee"), True)
    assert reader.read(message(first, 1.0)).values == first
    flipped = {k: i % 2 == 0 for i, k in enumerate(first)}
    assert reader.read(message(flipped, 2.0)).values == flipped
    renamed = {("bx" if k == "bb" else k): v for k, v in flipped.items()}  # same lengths, one key differs
    assert reader.read(message(renamed, 3.0)).values == renamed


def test_bytes_the_readers_do_not_handle_give_none():
    data = raw(m.joint_state_msg(T, 1.0, ["a", "b"], [0.1, 0.2]))
    big_endian = raw(m.joint_state_msg(T, 1.0, ["a", "b"], [0.1, 0.2]), little_endian=False)
    assert cdr.JointStateReader().read(big_endian) is None
    assert m.joint_state_sample(decoded(big_endian, JOINT)).names == ("a", "b")  # rosbags reads those
    broken = [data[:-9], data + b"\x00" * 8, data[:12] + b"\xff\xff\xff\x7f" + data[16:], data.replace(b"a\x00", b"ab")]
    for bad in broken:
        assert cdr.JointStateReader().read(bad) is None
        with pytest.raises((SerdeError, ValueError)):
            decoded(bad, JOINT)
    pose = raw(m.pose_msg(T, 1.0, Pose(np.zeros(3), np.array([1.0, 0, 0, 0]))))
    assert cdr.read_pose(pose[:-1]) is None and cdr.read_wrench(b"\x00\x01\x00\x00") is None
    two = T.DiagnosticArray(
        header=m.header(T, 0.0),
        status=[T.DiagnosticStatus(level=0, name=n, message="", hardware_id="", values=[]) for n in ("a", "b")],
    )
    assert cdr.PredicateReader().read(raw(two)) is None  # decode_predicates picks and complains


def test_supported_only_where_the_bag_defines_the_types_as_the_readers_read_them():
    assert all(cdr.supported(STORE.fielddefs, t) for t in (JOINT, WRENCH, POSE, ARRAY))
    assert not cdr.supported(STORE.fielddefs, "geometry_msgs/msg/Twist")
    humble = get_typestore(Stores.ROS2_HUMBLE).fielddefs
    assert all(cdr.supported(humble, t) for t in (JOINT, WRENCH, POSE, ARRAY))

    def redefined(text, name):
        store = get_typestore(Stores.EMPTY)
        store.register(get_types_from_msg(text, name))
        return {**humble, **store.fielddefs}

    weighted = redefined("string key\nstring value\nint32 weight", "diagnostic_msgs/msg/KeyValue")
    assert not cdr.supported(weighted, ARRAY) and cdr.supported(weighted, JOINT)
    assert not cdr.supported(redefined("float64 x\nfloat64 y\nfloat32 z", "geometry_msgs/msg/Vector3"), WRENCH)
    assert not cdr.supported(redefined("string<=8 key\nstring value", "diagnostic_msgs/msg/KeyValue"), ARRAY)


def test_replay_gives_the_same_result_with_and_without_the_direct_readers(tmp_path, monkeypatch):
    states = []
    for k, state in enumerate(run_episode("pick_and_place_cube")):
        states.append(state)
        if k == 400:
            break
    bag = tmp_path / "bag"
    with BagWriter(bag) as w:
        for k, s in enumerate(states):
            w.write_wrench("/wrist_wrench", s.t, s.wrench)
            if k % 10 == 0:
                for name, pose in s.object_poses.items():
                    w.write_pose(f"/objects/{name}/pose", s.t, pose)
            w.write_joint_state("/joint_states", s.t, s.joint_names, s.joint_position, s.joint_velocity)
            w.write_predicates(
                "/safety_monitor/predicates",
                m.PredicateSample(
                    {"object_grasped": k % 7 == 0, "excess_wrench": False, "near": k > 200},
                    s.t,
                    k,
                    unknown=frozenset({"near"} if k % 50 == 0 else ()),
                ),
            )

    def summary(result):
        assert result.ok, result.error
        return (
            result.frames,
            result.issues,
            result.stale_by_stream,
            result.unknown_frames,
            [e.to_json() for e in result.trace.events],
            result.timeline.to_json(),
        )

    config = ReplayConfig(rate_hz=500.0)
    fast = [summary(score_bag(bag, config)), summary(score_bag(bag, ReplayConfig(from_predicates=True)))]
    monkeypatch.setattr(cdr, "supported", lambda fielddefs, msgtype: False)
    slow = [summary(score_bag(bag, config)), summary(score_bag(bag, ReplayConfig(from_predicates=True)))]
    assert fast == slow and fast[0][0] == 401


samples = st.builds(
    m.PredicateSample,
    values=st.dictionaries(st.sampled_from(KEYS), st.booleans(), max_size=5),
    t=st.floats(0, 2e9, allow_nan=False),
    frame=st.none() | st.integers(0, 10**9),
    unknown=st.frozensets(st.sampled_from(KEYS), max_size=2),
    stale=st.frozensets(st.sampled_from(("wrench", "object_pose/mug", "joint_states")), max_size=2),
    objects=st.dictionaries(
        st.sampled_from(KEYS), st.lists(st.sampled_from(("mug", "bin", "tür")), min_size=1).map(tuple)
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(samples, min_size=1, max_size=5), st.sampled_from(["estimator", "other_node"]))
def test_predicate_writer_gives_rosbags_bytes_that_rclpy_and_the_reader_read_back(batch, hardware_id):
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.serialization import deserialize_message

    writer, reader = cdr.PredicateWriter(hardware_id), cdr.PredicateReader()
    for sample in batch:
        data = writer.write(sample)
        assert data == raw(m.predicates_msg(T, sample, hardware_id))
        assert m.decode_predicates(deserialize_message(data, DiagnosticArray)) == sample
        assert reader.read(data) == sample


def test_the_reader_skips_the_uninitialised_padding_rclpy_leaves():
    from rclpy.serialization import serialize_message

    types, reader, learnt = m.rclpy_types(), cdr.PredicateReader(), []
    for k in range(4):
        sample = m.PredicateSample({"a": k % 2 == 0, "bb": True, "ccc": k == 1}, 1.0 + k, k, frozenset({"bb"}))
        data = serialize_message(m.predicates_msg(types, sample))
        assert reader.read(data) == sample == m.decode_predicates(decoded(data, ARRAY))
        learnt.append(reader._run)
    assert learnt[0][1] == ("a", "bb", "ccc") and all(run is learnt[0] for run in learnt)  # learnt once, then matched


LAYOUT = ("object_grasped", "near", "contact_ü", "x")
layout_samples = st.builds(
    m.PredicateSample,
    values=st.lists(st.booleans(), min_size=len(LAYOUT), max_size=len(LAYOUT)).map(lambda v: dict(zip(LAYOUT, v))),
    t=st.floats(0, 2e9, allow_nan=False),
    frame=st.none() | st.integers(0, 10**12),
    unknown=st.frozensets(st.sampled_from(LAYOUT), max_size=2),
    stale=st.frozensets(st.sampled_from(("wrench", "object_pose/mug")), max_size=2),
    objects=st.sampled_from(({}, {"near": ("mug",)}, {"x": ("cube", "bin"), "near": ("cube",)})),
)


def one_buffer(messages, gaps):
    """The messages in one buffer (with junk between them), as a bag batch holds them."""
    buffer, start, size = b"", [], []
    for data, gap in zip(messages, gaps):
        buffer += b"\x05" * gap
        start.append(len(buffer))
        size.append(len(data))
        buffer += data
    return buffer, np.array(start, dtype=np.int64), np.array(size, dtype=np.int64)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(layout_samples, min_size=1, max_size=8),
    st.lists(predicate_messages(), max_size=4),
    st.lists(st.integers(0, 7), min_size=12, max_size=12),
    st.randoms(use_true_random=False),
    st.sampled_from(["estimator", "ünïcode"]),
)
def test_a_batch_reads_every_message_as_the_single_reader_does(written, others, gaps, rnd, hardware_id):
    writer = cdr.PredicateWriter(hardware_id)
    messages = [writer.write(s) for s in written] + [raw(msg) for msg in others]
    rnd.shuffle(messages)
    reader = cdr.PredicateBatchReader()
    columns = reader.read(*one_buffer(messages, gaps))
    for i, data in enumerate(messages):
        if columns.decoded[i]:
            got = m.PredicateSample(
                dict(zip(columns.keys, columns.values[i].tolist())),
                columns.t[i],
                columns.frame[i],
                columns.unknown[i],
                columns.stale[i],
                columns.objects[i],
            )
            want = m.decode_predicates(decoded(data, ARRAY))
            assert got == want and list(got.values) == list(want.values)
    # every message of the learnt layout is read in the batch (but those with non-ASCII status strings)
    layout_first = reader.single.keys == LAYOUT and hardware_id == "estimator"
    assert columns.decoded.sum() >= (len(written) if layout_first else 0)


def test_a_batch_leaves_odd_messages_to_the_single_reader():
    writer = cdr.PredicateWriter()
    sample = m.PredicateSample({"a": True, "bb": False}, 1.5, 7, frozenset({"bb"}), frozenset({"wrench"}))
    good = writer.write(sample)
    extra_key = writer.write(m.PredicateSample({"a": True, "bb": False, "c": True}, 2.0, 8))
    bad_t = good.replace(b"1.5\x00", b"1.x\x00")
    two_statuses = raw(
        T.DiagnosticArray(
            header=m.header(T, 0.0),
            status=[T.DiagnosticStatus(level=0, name=n, message="", hardware_id="", values=[]) for n in ("a", "b")],
        )
    )
    messages = [good, extra_key, bad_t, two_statuses, good[:-8], good]
    reader = cdr.PredicateBatchReader()
    columns = reader.read(*one_buffer(messages, [1] * len(messages)))
    assert columns.decoded.tolist() == [True, False, False, False, False, True]
    assert columns.keys == ("a", "bb") and columns.values[5].tolist() == [True, False]
    assert (columns.t[5], columns.frame[5], columns.unknown[5], columns.stale[5]) == (1.5, 7, {"bb"}, {"wrench"})
    with pytest.raises(m.BadPredicates, match="malformed _t"):
        reader.single.read(bad_t)


def without_objects(data: bytes) -> bytes:
    """A predicates message as estimators wrote it before `_objects` existed (four reserved keys)."""
    msg = decoded(data, ARRAY)
    status = msg.status[0]
    values = [kv for kv in status.values if kv.key != "_objects"]
    return raw(
        T.DiagnosticArray(
            header=msg.header,
            status=[
                T.DiagnosticStatus(
                    level=status.level,
                    name=status.name,
                    message=status.message,
                    hardware_id=status.hardware_id,
                    values=values,
                )
            ],
        )
    )


def test_messages_without_objects_read_in_the_same_batch_as_those_with_them():
    writer = cdr.PredicateWriter()
    named = m.PredicateSample({"a": True, "bb": False}, 1.5, 7, objects={"a": ("mug",)})
    plain = m.PredicateSample({"a": True, "bb": True}, 1.6, 8)
    messages = [writer.write(named), without_objects(writer.write(named)), writer.write(plain)]
    columns = cdr.PredicateBatchReader().read(*one_buffer(messages, [0, 3, 1]))
    assert columns.decoded.tolist() == [True, True, True]
    assert [dict(o) for o in columns.objects] == [{"a": ("mug",)}, {}, {}]
    assert columns.values.tolist() == [[True, False], [True, False], [True, True]]
    assert cdr.PredicateReader().read(messages[1]) == m.PredicateSample({"a": True, "bb": False}, 1.5, 7)
    bad = writer.write(named).replace(b'{"a":["mug"]}', b'{"a":"mugxx"}')  # the same length: names no list
    assert cdr.PredicateBatchReader().read(*one_buffer([messages[0], bad], [0, 0])).decoded.tolist() == [True, False]
    with pytest.raises(m.BadPredicates, match="malformed _objects"):
        m.decode_predicates(decoded(bad, ARRAY))


@pytest.mark.parametrize(
    "spoilt", [(b'{"a":["mug"]}', b'{"a":"mugxx"}'), (b"\x06\x00\x00\x00false", b"\x06\x00\x00\x00fals!")]
)
def test_a_malformed_first_message_is_dropped_alone_and_the_layout_learnt_from_the_next(spoilt):
    """The batch reader learns its layout from the first message that reads: a first message with a malformed
    `_objects` (or value: a run learnt up to it would leave every later message to the slow reader) is left
    undecoded, for the caller to drop and count, as any later one is."""
    writer = cdr.PredicateWriter()
    named = m.PredicateSample({"a": True, "bb": False}, 1.5, 7, objects={"a": ("mug",)})
    good = writer.write(named)
    bad = good.replace(*spoilt)  # the same length
    batch = cdr.PredicateBatchReader()
    columns = batch.read(*one_buffer([bad, good, good], [0, 0, 0]))
    assert columns.decoded.tolist() == [False, True, True] and columns.keys == ("a", "bb")
    assert [dict(o) for o in columns.objects[1:]] == [{"a": ("mug",)}] * 2
    with pytest.raises(m.BadPredicates):
        batch.single.read(bad)  # what the caller's per-message reading raises, and counts


def joint_value(sample):
    return (
        None
        if sample is None
        else (
            sample.names,
            sample.position.tobytes(),
            sample.stamp,
            None if sample.velocity is None else sample.velocity.tobytes(),
            None if sample.effort is None else sample.effort.tobytes(),
        )
    )


def test_joint_state_and_wrench_batches_read_as_the_single_readers_do():
    names = ["a", "b", "c"]
    joints = [
        raw(m.joint_state_msg(T, 1.0 + k / 500, names, [k, -0.5, np.nan if k == 3 else 2.0], [0.1] * 3))
        for k in range(6)
    ]
    joints[2] = raw(m.joint_state_msg(T, 2.0, ["a", "x", "c"], [1.0, 2.0, 3.0], [0.0] * 3))  # other names
    joints[4] = raw(m.joint_state_msg(T, 3.0, names, [1.0, 2.0, 3.0]))  # no velocities
    joints.append(raw(m.joint_state_msg(T, 4.0, names, [1.0, 2.0, 3.0], [0.1] * 3), little_endian=False))
    joints.append(joints[0][:-8])  # truncated
    reader = cdr.JointStateBatchReader()
    got = reader.read(*one_buffer(joints, range(1, 9)))
    assert [joint_value(g) for g in got] == [joint_value(cdr.JointStateReader().read(d)) for d in joints]
    assert got[-2] is None and got[-1] is None and got[1].position.tolist() == [1.0, -0.5, 2.0]
    assert np.isnan(got[3].position[2])  # read as it is (the assembler drops the message)
    assert got[1].position.base is not None and got[1].position.base is got[5].position.base  # read at once

    wrenches = [
        raw(
            m.wrench_msg(
                T,
                1.0 + k,
                Wrench(np.array([k, 2.0, 3.0]), np.array([4.0, 5.0, -k])),
                frame_id="ft" if k != 2 else "other_frame",
            )
        )
        for k in range(4)
    ]
    wrenches.append(wrenches[0][:-1])
    got = cdr.WrenchBatchReader().read(*one_buffer(wrenches, range(5)))
    want = [cdr.read_wrench(d) for d in wrenches]
    assert [None if g is None else (g[0].force.tolist(), g[0].torque.tolist(), g[1]) for g in got] == [
        None if w is None else (w[0].force.tolist(), w[0].torque.tolist(), w[1]) for w in want
    ]
    assert got[3][0].torque.tolist() == [4.0, 5.0, -3.0] and got[-1] is None


def test_pose_batches_read_as_read_pose_does():
    def value(read):
        return None if read is None else (read[0].position.tobytes(), read[0].quaternion.tobytes(), read[1])

    poses = [
        raw(
            m.pose_msg(
                T,
                1e9 + k / 50,
                Pose(np.array([k, -0.0, np.nan if k == 3 else 0.9]), np.array([0.5, -0.5, 1e-300, 0.5 + k])),
                frame_id="world" if k != 2 else "other_frame",
            )
        )
        for k in range(5)
    ]
    poses.append(raw(m.pose_msg(T, 2.0, Pose(np.ones(3), np.ones(4))), little_endian=False))
    poses.append(poses[0][:-1])  # truncated
    want = [value(cdr.read_pose(d)) for d in poses]
    assert want[-1] is None and want[-2] is None
    reader = cdr.PoseBatchReader()
    got = reader.read(*one_buffer(poses, range(3, 10)))
    assert [value(g) for g in got] == want
    assert got[1][0].position.base is not None and got[1][0].position.base is got[4][0].position.base  # read at once
    # a message's arrays contiguous, as the grounder's one-call check takes a pose (a strided quaternion, the
    # column-major rows of an index-picked block, raised TypeError: numpy's slower path, every pose of a replay)
    assert [_geomath.pose_usable(g[0]) for g in got[:5]] == [True, True, True, False, True]
    # a batch led by a message that teaches no layout: each read alone; then one with none at all
    assert [value(g) for g in cdr.PoseBatchReader().read(*one_buffer(poses[::-1], range(7)))] == want[::-1]
    assert reader.read(b"", np.zeros(0, np.int64), np.zeros(0, np.int64)) == []


def test_read_stamp_reads_the_header_of_any_stamped_type_as_stamp_seconds():
    msgs = [
        m.joint_state_msg(T, 12.345678901, ["a"], [0.0]),
        m.wrench_msg(T, 7.25, Wrench(np.zeros(3), np.zeros(3))),
        m.predicates_msg(T, m.PredicateSample({"a": True}, 1e9 + 0.1, 3)),
    ]
    for msg in msgs:
        assert cdr.read_stamp(raw(msg)) == m.stamp_seconds(msg.header.stamp)
    assert cdr.read_stamp(b"\x00\x01\x00\x00\x01") is None and cdr.read_stamp(raw(msgs[0], little_endian=False)) is None


def test_events_writer_gives_rosbags_bytes_of_events_msg_that_decode_back(tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.serialization import deserialize_message

    from safety_monitor.monitor.live import SpecSetMonitor

    specs = tmp_path / "specs.yaml"
    specs.write_text(
        "predicates: [a, b]\nproperties:\n  - name: never_a\n    category: collision_contact\n"
        '    formula: "G(!a)"\n    recovery: "F(!a)"\n'
    )
    monitor = SpecSetMonitor.from_spec_file(specs)
    events = []  # real Event objects: opened with a counterexample, recovered, blind, seeing
    for k, a in enumerate([False, True, True, False, None, False]):
        events += monitor.step(None if a is None else {"a": a, "b": k == 1}, 0.002 * k)
    assert {e.kind for e in events} >= {"opened", "recovered", "blind", "seeing"}
    records = [
        {
            "property": "p",
            "kind": kind,
            "frame": 3,
            "t": 0.25,
            "rollout": 1,
            "robot": "r1",
            "counterexample": {
                "formula": "G(!a)",
                "frames": [0, 3],
                "values": {"a": [[0, 2, False], [3, 3, True]]},
                "explanation": "\u00fc \u00f1",
            },
        }
        for kind in ("opened", "recovered", "blind", "unrecovered_at_end", "state_lost", "seeing")
    ]
    records.append({"property": "*", "kind": "state_lost", "frame": None, "t": None, "torn_bytes": 0})
    for batch in (records, records[:1], [], events):
        for t in (0.0, 1.5, 1234.000002):
            data = cdr.write_events(batch, t)
            assert data == raw(m.events_msg(T, batch, t))
            assert m.decode_events(deserialize_message(data, DiagnosticArray)) == [m.event_fields(e) for e in batch]


def test_diagnostics_writer_gives_rosbags_bytes_of_the_same_array():
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.serialization import deserialize_message

    S = T.DiagnosticStatus
    statuses = [
        (m.ERROR, "safety_monitor/r1: monitor", "1 open: p", "r1", [("frame", "12"), ("rollout", "0")]),
        (m.STALE, "safety_monitor/r1: p", "unknown: inputs stale \u00fc", "r1", []),
        (m.OK, "", "", "", [("k", ""), ("", "v")]),
        (m.WARN, "n", "m", "h", [("a", "b")]),
    ]
    for stamp in ((0, 0), (1796046563, 988419101)):
        for batch in (statuses, statuses[:1], []):
            msg = T.DiagnosticArray(
                header=T.Header(stamp=T.Time(sec=stamp[0], nanosec=stamp[1]), frame_id=""),
                status=[
                    S(
                        level=level,
                        name=name,
                        message=message,
                        hardware_id=hw,
                        values=[T.KeyValue(key=k, value=v) for k, v in values],
                    )
                    for level, name, message, hw, values in batch
                ],
            )
            data = cdr.write_diagnostics(stamp, batch)
            assert data == raw(msg)
            back = deserialize_message(data, DiagnosticArray)
            assert [
                (s.level, s.name, s.message, s.hardware_id, [(v.key, v.value) for v in s.values]) for s in back.status
            ] == [(bytes((lv,)), n, ms, h, list(vs)) for lv, n, ms, h, vs in batch]


@pytest.mark.parametrize("text", ["[" * 5000, '{"a": ' * 3000, "9" * 5000], ids=["arrays", "objects", "digits"])
def test_objects_nested_past_the_stack_or_too_long_a_number_are_malformed(text):
    """json.loads raises RecursionError on deep nesting and ValueError (not JSONDecodeError) on an integer of
    4300+ digits: both once escaped objects_of, out of the monitor node's callback and out of replay (a batch
    reader's bag failing as `RecursionError`), where a malformed `_objects` drops its frame with a message."""
    writer = cdr.PredicateWriter()
    good = writer.write(m.PredicateSample({"a": True}, 1.5, 7))
    message = decoded(good, ARRAY)
    message.status[0].values[-1].value = text
    with pytest.raises(m.BadPredicates, match="malformed _objects"):
        m.decode_predicates(message)
    bad = bytes(STORE.serialize_cdr(message, ARRAY))
    assert cdr.PredicateBatchReader().read(*one_buffer([good, bad], [0, 0])).decoded.tolist() == [True, False]
