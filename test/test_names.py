"""The package's one "did you mean": real typos of joints, links, predicates and settings get the name meant,
names that merely share a prefix or a number with a known one get none."""

import pytest

from safety_monitor import names
from safety_monitor.grounding.grounder import PREDICATES
from safety_monitor.names import did_you_mean

JOINTS = [f"joint{i}" for i in range(1, 7)] + ["finger_left_joint", "finger_right_joint"]
ARM = [f"arm_joint{i}" for i in range(1, 7)]
UR = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
BODIES = ["table", "arm_base", "link1", "hand", "finger_left", "finger_right", "drawer", "cabinet", "cube", "mug"]
SPEC = ["object_grasped", "object_sync", "object_grasped_raw", "object_dropped", "collision"]
SETTINGS = ["predicates_timeout_s", "history_frames", "control_rate_hz", "wrench_stale_s", "pose_stale_s", "seed"]
THRESHOLDS = ["grasp_persistence", "stability_persistence", "settle_timeout", "retract_timeout", "gripper_clearance"]


@pytest.mark.parametrize(
    "name, known, hint",
    [
        ("colision", SPEC, "'collision'"),  # a letter missing
        ("object_synced", SPEC, "'object_sync'"),  # letters extra
        ("object_relased", PREDICATES, "'object_released'"),
        ("object_grsped", PREDICATES, "'object_grasped'"),
        ("joint_velocity_out_of_limit", PREDICATES, "'joint_velocity_out_of_limits'"),
        ("Collision", SPEC, "'collision'"),  # case ignored
        ("jiont1", JOINTS, "'joint1'"),  # letters swapped
        ("joint_3", JOINTS, "'joint3'"),
        ("arm_jont1", ARM, "'arm_joint1'"),  # not its siblings arm_joint6, arm_joint5
        ("arm_joint2", ["arm_joint1", "arm_joint_2", "arm_joint3"], "'arm_joint_2'"),
        ("shoulder_pan_jont", UR, "'shoulder_pan_joint'"),
        ("wrist1_joint", UR, "'wrist_1_joint'"),
        ("arm_bse", BODIES, "'arm_base'"),  # not 'table'
        ("finger_lft", BODIES, "'finger_left'"),
        ("cub", BODIES, "'cube'"),
        ("hand_x", ["hand_r", "hand_l", "base"], "'hand_l' or 'hand_r'"),  # tied: both
        ("predicate_timeout_s", SETTINGS, "'predicates_timeout_s'"),
        ("histroy_frames", SETTINGS, "'history_frames'"),
        ("control_rate", SETTINGS, "'control_rate_hz'"),  # the unit forgotten
        ("event", ["events", "episode", "heartbeat"], "'events'"),
        ("grasp_persistance", THRESHOLDS, "'grasp_persistence'"),
        ("settle_timout", THRESHOLDS, "'settle_timeout'"),
    ],
)
def test_a_typo_gets_the_name_meant(name, known, hint):
    assert did_you_mean(name, known) == f" (did you mean {hint}?)"


@pytest.mark.parametrize(
    "name, known",
    [
        ("bump", SPEC),
        ("object_released", SPEC),  # a predicate the file lacks, not a typo of its neighbour object_grasped
        ("preconditions_pick", ["preconditions_place", "preconditions_open"]),
        ("object_slipped", PREDICATES),
        ("mug", ["cube"]),
        ("joint7", JOINTS),  # as near joint1 as joint6: a typo of none of them
        ("camera", BODIES),
        ("timeout", SETTINGS),
        ("wrist", ["joint_states", "wrench", "predicates"]),
        ("collision", SPEC),  # known: nothing to suggest
        ("anything", []),
    ],
)
def test_an_unrelated_name_gets_no_hint(name, known):
    assert did_you_mean(name, known) == ""


def test_a_name_far_longer_than_any_known_is_compared_with_none(monkeypatch):
    """Its letters left unmatched are at least the difference in length: difflib on a 60,000-letter key (a
    mangled YAML key) took seconds per known name before this bound."""
    compared = []
    monkeypatch.setattr(names, "_apart", lambda a, b: compared.append(b) or 0)
    assert did_you_mean("joint_states" * 5000, ["joint_states", "wrench"]) == ""
    assert did_you_mean("wrenhc", ["joint_states", "wrench", "wrist"]) == " (did you mean 'wrench' or 'wrist'?)"
    assert sorted(compared) == ["wrench", "wrist"]  # joint_states is 6 letters longer than wrenhc
