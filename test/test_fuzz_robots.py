"""A mobile base's TF and topic mapping edited (its chain missing, looping, stamped backwards, NaN, zero or nearly
unit quaternions, the base frame named as an object's, the world frame as the base's), and where it stands (its pose
jumping, flickering, drifting just under or over the limits, its stamps jittered, thresholds.yaml's base_jump
edited): replay ends in an error naming the topic mapping's or the thresholds' file or the bag, or in a well-formed
result never silently safer than the intact recording's, the estimator node's stage's too, the base never used
while untrusted. A two-arm robot's other_arms, ignored joints and entities edited: the grounder is built and grounds
the handover, or the error names robot.yaml or objects.yaml. Each arm's JointState on a topic of its own, edited
(stopping, restarting, stamped backwards, names colliding, messages in any order, prefixes and joint_names): no
alarm on the clean handover, live as replay (benchmarks/fuzz_inputs.py runs the long campaign)."""

import re
import shutil

import pytest
from hypothesis import example, given, settings
from mjcf_robots import write_mobile_robot
from test_fuzz_support import (
    ARM_RATE,
    ARM_WINDOW,
    FUZZ,
    ArmEdit,
    TfEdit,
    arm_configs,
    arm_outcome,
    arm_topic_edits,
    arm_topics_mapping,
    arm_topics_outcome,
    base_edits,
    guarded,
    is_failure,
    mobile_mapping,
    tf_edits,
    tf_outcome,
    write_arm_config,
    write_arm_topics_bag,
    write_mobile_bag,
    write_mobile_config,
    write_one_topic_bag,
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
        config = ReplayConfig(robot=str(self.robot), mapping=StreamMapping.from_dict(mobile_mapping()))
        self.references = {}
        for clean in (False, True):
            intact = (TfEdit("clean", ()),) if clean else ()
            self.references[clean] = score_bag(write_mobile_bag(folder / f"intact_{clean}", intact), config)
            assert self.references[clean].ok
        assert any(o.violations for o in self.references[False].trace.outcomes)
        assert not any(o.violations for o in self.references[True].trace.outcomes)

    def outcome(self, edits):
        bag = self.folder / "edited"
        shutil.rmtree(bag, ignore_errors=True)
        write_mobile_bag(bag, edits)
        topics = write_mobile_config(self.folder, self.robot, edits)
        return guarded(lambda: tf_outcome(bag, self.robot, topics, self.references, edits))


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


@settings(FUZZ, max_examples=8)
@given(edits=base_edits())
@example(edits=(TfEdit("clean", ()), TfEdit("jump", ("base", 30, 42, (0.0, -0.5, 0.0), 0.0))))  # a flicker
@example(edits=(TfEdit("jump", ("base", 30, 90, (-1.0, 0.0, 0.0), 1.0)),))  # a reset: trusted again at the new place
@example(edits=(TfEdit("clean", ()), TfEdit("drift", ("base", 20, 60, 0.97, "yaw"))))  # no jump
@example(edits=(TfEdit("clean", ()), TfEdit("drift", ("base", 20, 60, 1.03, "-y"))))  # a jump every step
@example(edits=(TfEdit("thresholds", ("trust_after_s", 10)), TfEdit("jump", ("base", 30, 60, (0.14, 0.0, 0.0), 0.0))))
@example(edits=(TfEdit("pose_topic", ()), TfEdit("quaternion", ("cube", 10, 30, (1.00497, 0.0, 0.0, 0.0)))))
@example(edits=(TfEdit("quaternion", ("base", 10, 30, (0.99493, 0.0, 0.0, 0.0))),))  # beyond: dropped, said
def test_where_a_mobile_base_stands_jumping_drifting_and_its_thresholds_edited(mobile, edits):
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


@pytest.fixture(scope="module")
def arm_topics(tmp_path_factory):
    import two_arm_run

    folder = tmp_path_factory.mktemp("fuzz_arm_topics")
    (folder / "described").mkdir()
    described = two_arm_run.describe(folder / "described")
    states = two_arm_run.run().states[ARM_WINDOW][100:250]  # (the campaign's 6 s: both hold the bar, then the left)
    one = write_one_topic_bag(folder / "one", states)
    references = {
        arm: score_bag(
            one, ReplayConfig(robot=str(described[arm]), mapping=StreamMapping(wrench=None), rate_hz=ARM_RATE)
        )
        for arm in described
    }
    return folder, described, states, references


@settings(FUZZ, max_examples=4)
@given(item=arm_topic_edits())
# was: the right arm, never seen, judged at its zero pose; a position stamped ahead held as fresh (an alarm)
@example(item=("left", (ArmEdit("drop", ("right", 0, 130)),)))
@example(item=("right", (ArmEdit("stamp", ("right", 30, 54, 2.0)),)))
@example(item=("right", (ArmEdit("delay", ("right", 0, 150, -0.015)), ArmEdit("mapping", ("relative",)))))
@example(item=("left", (ArmEdit("restart", (80, 3.0)), ArmEdit("drop", ("left", 70, 90)))))
# was: the right's input restarting 5 frames before its hand lets go of the bar, the grasp read as none (an alarm)
@example(item=("right", (ArmEdit("restart", (50, 100.0)),)))
def test_each_arms_joint_state_on_a_topic_of_its_own_edited(arm_topics, item):
    folder, described, states, references = arm_topics
    arm, edits = item
    bag = write_arm_topics_bag(folder / "two", states, edits)
    topics = folder / "topics.yaml"
    write_text_doc(topics, arm_topics_mapping(edits))
    outcome, detail = guarded(lambda: arm_topics_outcome(bag, described[arm], topics, references[arm], edits))
    assert not is_failure(outcome), (outcome, detail, item)
