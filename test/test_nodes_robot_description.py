"""The estimator node taking its URDF from /robot_description: STALE with that reason until it arrives (never a
hang, nothing grounded), then grounding with the model it received."""

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from test_nodes_estimator import estimator_and_probe, spin_until  # noqa: E402
from urdf_robots import arm_urdf, write_robot  # noqa: E402

from safety_monitor.io import messages as m  # noqa: E402
from safety_monitor.nodes import qos  # noqa: E402


def test_the_estimator_is_stale_until_robot_description_arrives_then_grounds_with_it(tmp_path):
    robot = write_robot(tmp_path, 6, "one_joint")
    (tmp_path / "robot.urdf").write_text("<robot name='not this one'/>")  # the topic's URDF must be the one used
    overrides = [
        Parameter("config_dir", value=str(robot)),
        Parameter("control_rate_hz", value=50.0),
        Parameter("robot_description_topic", value="robot_description"),
        Parameter("diagnostics_period_s", value=0.05),
    ]
    with estimator_and_probe("/rd", overrides) as h:
        waiting = (bytes([m.STALE]), "waiting for robot_description")
        spin_until(h.executor, lambda: h.diag.count(waiting) >= 3)  # the periodic report, not one message
        assert set(h.diag) == {waiting} and h.node.frames == 0
        publisher = h.probe.create_publisher(_string(), "robot_description", qos.LATCHED)
        publisher.publish(_string()(data=arm_urdf(6, "one_joint")))
        spin_until(h.executor, lambda: h.diag[-1][1].startswith("waiting for joint_states"))
        assert h.diag[-1][0] == bytes([m.STALE])
        assert h.node.grounder.robot.gripper.joints == ("gripper_joint",)


def test_a_topic_mapping_naming_a_joint_the_robot_lacks_is_not_blamed_on_robot_description(tmp_path):
    """The URDF from the topic is fine; the topics_file names a joint it lacks. /diagnostics says so and
    does not call the description rejected."""
    robot = write_robot(tmp_path, 6, "one_joint")
    topics = tmp_path / "topics.yaml"
    topics.write_text("joint_names: {enc7: joint7}\n")
    overrides = [
        Parameter("config_dir", value=str(robot)),
        Parameter("control_rate_hz", value=50.0),
        Parameter("robot_description_topic", value="robot_description"),
        Parameter("topics_file", value=str(topics)),
        Parameter("diagnostics_period_s", value=0.05),
    ]
    with estimator_and_probe("/rd", overrides) as h:
        publisher = h.probe.create_publisher(_string(), "robot_description", qos.LATCHED)
        publisher.publish(_string()(data=arm_urdf(6, "one_joint")))
        spin_until(h.executor, lambda: bool(h.diag) and not h.diag[-1][1].startswith("waiting for"))
        level, message = h.diag[-1]
        assert message.startswith(f"{topics}: joint_names: 'joint7' is not a joint of "), message
        assert "rejected" not in message and "(it has joint1, joint2, " in message  # as near joint6 as joint1: no hint
        assert level == bytes([m.STALE]) and h.node.frames == 0


def _string():
    from std_msgs.msg import String

    return String
