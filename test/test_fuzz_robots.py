"""A mobile base's TF and topic mapping edited (its chain missing, looping, stamped backwards, NaN or zero
quaternions, the base frame named as an object's, the world frame as the base's): replay ends in an error
naming the topic mapping's file or the bag, or in a well-formed result never silently safer than the intact
recording's. A two-arm robot's other_arms, ignored joints and entities edited: the grounder is built and
grounds the handover, or the error names robot.yaml or objects.yaml (benchmarks/fuzz_inputs.py runs the long
campaign)."""

import re
import shutil

import pytest
from hypothesis import example, given, settings
from mjcf_robots import write_mobile_robot
from test_fuzz_support import (
    FUZZ,
    TfEdit,
    arm_configs,
    arm_outcome,
    guarded,
    is_failure,
    mobile_mapping,
    tf_edits,
    tf_outcome,
    write_arm_config,
    write_mobile_bag,
    write_text_doc,
)

from safety_monitor.errors import GroundingError
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.pipeline.assemble import StreamMapping
from safety_monitor.replay.score import ReplayConfig, score_bag


class Mobile:
    def __init__(self, folder):
        self.folder = folder
        self.robot = write_mobile_robot(folder / "robot")
        self.topics = folder / "topics.yaml"
        config = ReplayConfig(robot=str(self.robot), mapping=StreamMapping.from_dict(mobile_mapping()))
        self.reference = score_bag(write_mobile_bag(folder / "intact"), config)
        assert self.reference.ok and any(o.violations for o in self.reference.trace.outcomes)

    def outcome(self, edits):
        bag = self.folder / "edited"
        shutil.rmtree(bag, ignore_errors=True)
        write_mobile_bag(bag, edits)
        write_text_doc(self.topics, mobile_mapping(edits))
        return guarded(lambda: tf_outcome(bag, self.robot, self.topics, self.reference))


@pytest.fixture(scope="module")
def mobile(tmp_path_factory):
    return Mobile(tmp_path_factory.mktemp("fuzz_tf"))


@settings(FUZZ, max_examples=10)
@given(edits=tf_edits())
@example(edits=(TfEdit("mapping", ("world_frame", "base_link")),))  # refused per bag, blaming the bag
@example(edits=(TfEdit("mapping", ("world_frame", "/base_link")),))
@example(edits=(TfEdit("loop", ("base", 56, 61, "base_link", "map", (0.3, 0.0, 0.0))),))  # silently misplaced
@example(edits=(TfEdit("loop", ("cube", 0, 20, "base_link", "map", (0.3, 0.0, 0.0))),))
@example(edits=(TfEdit("loop", ("static", 0, 3, "map", "map", (0.3, 0.0, 0.0))),))
@example(edits=(TfEdit("duplicate", ("base", 30, 31, (0.5, 0.0, 0.0))),))  # the second of one frame's two taken
def test_a_mobile_base_s_tf_and_topic_mapping_edited(mobile, edits):
    outcome, detail = mobile.outcome(edits)
    assert not is_failure(outcome), (outcome, detail, edits)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("world_frame", "base_link"),
        ("world_frame", "/base_link"),
        ("cube", "base_link"),
        ("cube", "/map"),
        ("cube", ""),
    ],
)
def test_a_mapping_chaining_a_frame_to_itself_is_refused_up_front_naming_its_file(mobile, key, value):
    """The world frame as the base frame was refused by every bag's Estimator ('<bag>: topic mapping: ...', the bag
    blamed, the file unnamed); an object given the base or world frame was scored, the object placed at the robot's
    or the world's origin."""
    outcome, detail = mobile.outcome((TfEdit("mapping", (key, value)),))
    assert outcome == "config_error", (outcome, detail)


@pytest.fixture(scope="module")
def aloha(tmp_path_factory):
    import two_arm_run

    folder = tmp_path_factory.mktemp("fuzz_arms")
    (folder / "described").mkdir()
    return folder, two_arm_run.describe(folder / "described"), two_arm_run.run().states[::10]


@settings(FUZZ, max_examples=20)
@given(item=arm_configs())
def test_a_two_arm_robot_s_other_arms_ignored_joints_and_entities_edited(aloha, item):
    folder, described, states = aloha
    robot = write_arm_config(folder / "edited" / "left", described, item)
    outcome, detail = guarded(lambda: arm_outcome(robot, states))
    assert not is_failure(outcome), (outcome, detail, item)


@pytest.mark.parametrize(("body", "what"), [("table", "static.table's body 'table'"), ("bar", "objects.bar's body")])
def test_other_arms_naming_a_static_body_or_an_object_is_refused(aloha, body, what):
    """Loaded before: the table, or the object, was the other arm's (touching the table counted arm on arm; the bar
    never grasped, the clean handover raised forbidden_contact_sustained about other_arm)."""
    folder, described, states = aloha
    robot = write_arm_config(
        folder / "edited" / "left", described, ("robot", (("other_arms", None, ["right/base_link", body]),))
    )
    assert arm_outcome(robot, states) == "error"
    with pytest.raises(GroundingError, match=f"other_arms: {body!r} holds {re.escape(what)}"):
        load_default_grounder(50.0, robot, wrench_sensor=False)
