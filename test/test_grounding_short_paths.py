"""The estimator families' short paths (frames whose state they skip provably unchanged) answer as their general
paths: each family is driven into the state a short path skips from and out of it again, beside a twin whose
short path is switched off before every frame, and both must give the same values and keep the same state."""

from __future__ import annotations

import numpy as np

from safety_monitor.grounding.geometry import Box, FrameGeometry
from safety_monitor.grounding.grounder import load_default_grounder
from safety_monitor.grounding.inputs import FrameInputs

RATE = 20.0  # a grasp persistence of a few frames


def _box(x: float) -> Box:
    return Box(np.array([x, 0.0, 0.05]), np.eye(3), np.full(3, 0.05))


def _state(grasp) -> dict:
    """Everything the grasp family keeps, its objects' debounces, latches and timers included."""
    per_object = {o: {k: vars(v) if hasattr(v, "n") else v for k, v in vars(st).items()} for o, st in grasp._states}
    kept = {k: v for k, v in vars(grasp).items() if k not in ("state", "_states", "_carries", "_carry")}
    return {**kept, "per_object": per_object}


def test_a_steady_carry_answers_as_the_general_path_through_slips_gaps_and_releases():
    fast, slow = load_default_grounder(RATE)._grasp, load_default_grounder(RATE)._grasp
    mug, other = fast.objects[0], fast.objects[-1]
    boxes = {o: _box(float(k)) for k, o in enumerate(fast.objects)}
    n = fast._persistence[0]

    def fingers(*objects: str, one: str | None = None) -> dict[str, dict[str, float]]:
        left = {o: 0.0 for o in objects}
        right = {o: 0.0 for o in objects if o != one}
        return {"finger_left": left, "finger_right": right}

    carry = fingers(mug)
    # (gripper closed, finger gaps, objects unseen, the mug's slip, the mug's speed), frame by frame
    script = [(False, {}, (), None, None)] * 3
    script += [(True, carry, (), (0.0, 0.0), (0.1, 0.0))] * (n + 4)  # grasp, then a steady carry
    script += [(True, carry, (), (0.05, 0.0), (0.1, 0.0))]  # a slip beyond the thresholds
    script += [(True, carry, (), None, None)] * 2  # its slip and speed unknown
    script += [(True, fingers(mug, one=mug), (), (0.0, 0.0), (0.0, 0.0))]  # one finger off it for a frame
    script += [(True, carry, (), (0.0, 0.0), (0.0, 0.0))] * 3
    script += [(True, fingers(mug, other), (), (0.0, 0.0), (0.0, 0.0))]  # both fingers on another object too
    script += [(True, carry, (), (0.0, 0.0), (0.0, 0.0))] * 3
    script += [(True, {}, (mug,), None, None)] * 2  # a gap in the mug's pose
    script += [(True, carry, (), (0.0, 0.0), (0.0, 0.0))] * (n + 3)
    script += [(True, carry, (other,), (0.0, 0.0), (0.0, 0.0))] * 2  # another object unseen while carried
    script += [(True, carry, (), (0.0, 0.0), (0.0, 0.0))] * 3
    script += [(False, carry, (), (0.0, 0.0), (0.0, 0.0))] * (n + 2)  # released, dropped
    script += [(True, carry, (), (0.0, 0.0), (0.0, 0.0))] * (n + 3)  # grasped again
    script += [(True, fingers(mug, one=mug), (), (0.0, 0.0), (0.0, 0.0))] * (n + 2)  # slipped out
    steady = 0
    for frame, (closed, gaps, unseen, slip, speed) in enumerate(script):
        seen = {o: b for o, b in boxes.items() if o not in unseen}
        geo = FrameGeometry(np.zeros(3), np.eye(3), np.zeros((3, 3)), gaps, seen, {}, frozenset(unseen))
        speeds = {o: (0.0, 0.0) for o in seen} | ({mug: speed} if mug in seen else {})
        slips = {mug: slip} if mug in seen else {}
        inp = FrameInputs(frame / RATE, frame, geo, closed, {}, {}, speeds, slips, None, frozenset())
        steady += fast._carry is not None and closed and not unseen and gaps is carry
        slow._carry = None  # the general path on every frame
        assert fast.step(inp) == slow.step(inp), frame
        assert _state(fast) == _state(slow), frame
    assert steady >= 2 * n  # the short path answered on most carried frames
    assert fast.focus == mug and not fast.grasped[mug]
