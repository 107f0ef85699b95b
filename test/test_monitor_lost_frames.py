"""Predicate frames lost between estimator and monitor (a queue that overflowed) are counted from the
estimator's frame numbers and turn the monitor's summary WARN for the period; a new rollout's
numbering and frames without a number are not losses."""

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from rclpy.time import Time  # noqa: E402

from safety_monitor.grounding.grounder import PREDICATES  # noqa: E402
from safety_monitor.io import messages as m  # noqa: E402


def test_monitor_counts_lost_predicate_frames_per_period(tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.serialization import deserialize_message

    from safety_monitor.nodes.monitor_node import MonitorNode

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        # sim time that never starts: the node clock stands still, so no pause of this process (a loaded
        # machine) can look like a pause of the stream to the watchdog
        node = MonitorNode(
            subscribe_predicates=False,
            context=context,
            namespace="/lost_test",
            parameter_overrides=[
                Parameter("events_log", value=str(tmp_path / "events.jsonl")),
                Parameter("use_sim_time", value=True),
            ],
        )
        # one clock reading, then none: a clock that never started would add its own WARN note
        node.get_clock().set_ros_time_override(Time(seconds=1))
        summaries = []
        node._diag_pub = type(
            "Pub",
            (),
            {
                "publish": lambda self, data: summaries.append(
                    next(s for s in deserialize_message(data, DiagnosticArray).status if s.name.endswith(": monitor"))
                )
            },
        )()
        quiet = dict.fromkeys(PREDICATES, False)

        def send(frames, t0=1.0):
            for k in frames:
                node.on_sample(m.PredicateSample(values=quiet, t=t0 + k / 500, frame=k))

        send(range(100))
        node._on_period()
        assert summaries[-1].level == bytes((m.OK,))
        send(k for k in range(100, 200) if k % 10)  # every tenth frame lost on the way
        node._on_period()
        lost = summaries[-1]
        values = {v.key: v.value for v in lost.values}
        assert lost.level == bytes((m.WARN,)) and "10 predicate frames lost" in lost.message
        assert values["lost_frames"] == "10" and values["frame"] == "190"  # the monitor stepped what came
        send(range(200, 260))
        node.on_sample(m.PredicateSample(values=quiet, t=1.6, frame=None))  # an external estimator: no numbers
        node._on_period()
        assert summaries[-1].level == bytes((m.OK,))
        assert {v.key: v.value for v in summaries[-1].values}["lost_frames"] == "10"
        node.destroy_node()
    finally:
        context.try_shutdown()
