"""Per-frame message handling between the estimator and the monitor: the predicates DiagnosticArray (one
KeyValue per predicate) as the nodes handle it now, and as bytes with `io.cdr`.

    .venv/bin/python benchmarks/bench_messages.py [--frames 3000]

*Objects*: `predicates_msg` (rclpy message objects) + `serialize_message` in the estimator,
`deserialize_message` + `decode_predicates` in the monitor. *Bytes*: `PredicateWriter.write` (published as
they are: rclpy's `Publisher.publish` takes bytes) and `PredicateReader.read` (a `raw=True` subscription).
Also the estimator's own input side: `FrameAssembler.on_joint_states` on an rclpy JointState. CPU time.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from safety_monitor.grounding.grounder import PREDICATES
from safety_monitor.io import cdr
from safety_monitor.io import messages as m
from safety_monitor.pipeline.assemble import FrameAssembler


def per_call(fn, items) -> float:
    """Mean CPU microseconds per call over `items`."""
    start = time.process_time()
    for item in items:
        fn(item)
    return 1e6 * (time.process_time() - start) / len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=3000)
    args = parser.parse_args()
    os.environ.setdefault("ROS_LOG_DIR", "/tmp")
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.serialization import deserialize_message, serialize_message

    types = m.rclpy_types()
    rng = np.random.default_rng(0)
    samples = [
        m.PredicateSample(
            dict(zip(PREDICATES, (rng.random(len(PREDICATES)) < 0.2).tolist())),
            0.002 * k,
            k,
            frozenset({"object_sync"} if k % 50 == 0 else ()),
            frozenset(),
        )
        for k in range(args.frames)
    ]
    objects = [serialize_message(m.predicates_msg(types, s, "/estimator")) for s in samples]
    writer, reader = cdr.PredicateWriter("/estimator"), cdr.PredicateReader()
    built = per_call(lambda s: m.predicates_msg(types, s, "/estimator"), samples)
    serialised = per_call(lambda s: serialize_message(m.predicates_msg(types, s, "/estimator")), samples) - built
    deserialised = per_call(lambda b: deserialize_message(b, DiagnosticArray), objects)
    decoded = per_call(m.decode_predicates, [deserialize_message(b, DiagnosticArray) for b in objects])
    written = per_call(writer.write, samples)
    read = per_call(reader.read, [writer.write(s) for s in samples])
    assert all(reader.read(writer.write(s)) == s for s in samples[:100])

    names = [f"arm_joint{i}" for i in range(1, 7)] + [
        "finger_left_joint",
        "finger_right_joint",
        "drawer_slide",
        "cabinet_hinge",
    ]
    joints = [
        m.joint_state_msg(types, 0.002 * k, names, rng.random(10), rng.random(10), rng.random(10))
        for k in range(args.frames)
    ]
    assembler = FrameAssembler(names)
    assembled = per_call(assembler.on_joint_states, joints)

    print(f"{len(PREDICATES)} predicates + 4 reserved keys, {args.frames} frames, CPU us per frame\n")
    print("| step | objects (now) | bytes (`io.cdr`) |\n|---|---|---|")
    print(f"| estimator: build the message | {built:.0f} | {written:.0f} (`PredicateWriter.write`) |")
    print(f"| estimator: serialise | {serialised:.0f} | - |")
    print(f"| monitor: deserialise | {deserialised:.0f} | - |")
    print(f"| monitor: decode | {decoded:.0f} | {read:.0f} (`PredicateReader.read`) |")
    print(f"| total | {built + serialised + deserialised + decoded:.0f} | {written + read:.0f} |")
    print(f"\nestimator input: FrameAssembler.on_joint_states (rclpy JointState, 10 joints): {assembled:.0f} us")


if __name__ == "__main__":
    main()
