"""Predicates on synthetic RobotState + FrameGeometry sequences (no MuJoCo): debounce boundaries, unknowns.

At 20 Hz one control frame is one SafeManip frame, so the paper's counts (5, 10, 20/21, 100) are checked
exactly; the same scenarios at 500 Hz check that durations, not frame counts, are what config keeps.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest

from safety_monitor.errors import GroundingError
from safety_monitor.frames import Pose, RobotState, Wrench
from safety_monitor.grounding.debounce import Persistence
from safety_monitor.grounding.description import load_robot_description
from safety_monitor.grounding.geometry import Box, FrameGeometry
from safety_monitor.grounding.grounder import PREDICATES, Grounder
from safety_monitor.grounding.semantics import load_object_catalog
from safety_monitor.grounding.thresholds import load_thresholds

CONFIG = Path(__file__).resolve().parents[1] / "config"
ROBOT = load_robot_description(CONFIG / "robot.yaml")
CATALOG = load_object_catalog(CONFIG / "objects.yaml")
THRESHOLDS = load_thresholds(CONFIG / "thresholds.yaml")
HALF = {
    "cube": [0.025] * 3,
    "mug": [0.035, 0.03, 0.045],
    "plate": [0.07, 0.032, 0.015],
    "raw_chicken": [0.04, 0.025, 0.015],
}
START = {
    "cube": [0.45, 0.12, 0.425],
    "mug": [0.35, -0.15, 0.445],
    "plate": [0.56, -0.05, 0.415],
    "raw_chicken": [0.3, 0.2, 0.415],
}
EYE = np.eye(3)


class Scene:
    """A hand-driven workcell: set joints, poses and contacts, then `step()` the grounder one frame."""

    def __init__(self, rate: float = 20.0, thresholds=THRESHOLDS):
        self.g = Grounder(ROBOT, CATALOG, thresholds, rate)
        self.rate, self.k = rate, 0
        self.pos = {o: np.array(p, dtype=float) for o, p in START.items()}
        self.fingers = 0.04
        self.joints = {"drawer_slide": 0.0, "cabinet_hinge": 0.0}
        self.contacts: dict[tuple[str, str], float] = {(o, "table"): 0.0 for o in START}
        self.ee = np.array([0.0, 0.0, 0.9])
        self.points: np.ndarray | None = None
        self.missing: set[str] = set()
        self.ages: dict[str, float] = {}
        self.events: set[str] = set()
        self.wrench = Wrench(np.zeros(3), np.zeros(3))
        self.wrench_age = 0.0

    def state(self) -> RobotState:
        names = (*ROBOT.arm_joints, *ROBOT.gripper.joints, *self.joints)
        q = [0.0] * len(ROBOT.arm_joints) + [self.fingers, self.fingers] + list(self.joints.values())
        poses = {o: Pose(p.copy(), np.array([1.0, 0, 0, 0])) for o, p in self.pos.items() if o not in self.missing}
        return RobotState(
            t=self.k / self.rate,
            joint_names=names,
            joint_position=np.array(q),
            object_poses=poses,
            object_ages=dict(self.ages),
            wrench=self.wrench,
            wrench_age=self.wrench_age,
            events=frozenset(self.events),
        )

    def geometry(self) -> FrameGeometry:
        slide = self.joints["drawer_slide"]
        interiors = {
            "drawer": Box(np.array([0.6375 - slide, 0.42, 0.51]), EYE, np.array([0.1275, 0.12, 0.08])),
            "cabinet": Box(np.array([0.645, -0.43, 0.555]), EYE, np.array([0.145, 0.14, 0.145])),
            "bin": Box(np.array([0.0, 0.42, 0.455]), EYE, np.array([0.08, 0.08, 0.045])),
        }
        known = {o: p for o, p in self.pos.items() if o not in self.missing}
        pairs = {k: v for k, v in self.contacts.items() if not (set(k) & self.missing)}
        return FrameGeometry(
            ee_position=self.ee.copy(),
            ee_rotation=EYE,
            gripper_points=np.array([self.ee]) if self.points is None else self.points,
            gaps=FrameGeometry.symmetric(pairs),
            object_boxes={o: Box(p.copy(), EYE, np.array(HALF[o])) for o, p in known.items()},
            interiors=interiors,
            unknown=frozenset(self.missing),
        )

    def step(self, n: int = 1):
        frames = []
        for _ in range(n):
            frames.append(self.g.step(self.state(), self.geometry()))
            self.k += 1
        return frames[-1] if n == 1 else frames

    def grasp(self, o: str = "cube") -> None:
        """Put the grasp centre at `o`, fingers closed on it."""
        self.ee = self.pos[o].copy()
        self.fingers = 0.024
        self.contacts[("finger_left", o)] = self.contacts[("finger_right", o)] = -0.001

    def release(self, o: str = "cube") -> None:
        self.fingers = 0.04
        for f in ("finger_left", "finger_right"):
            self.contacts[(f, o)] = 0.016  # open fingers, beyond gripper clearance

    def carry(self, o: str, offset) -> None:
        """Move the end-effector and the held object together."""
        self.ee = self.ee + np.asarray(offset, dtype=float)
        self.pos[o] = self.pos[o] + np.asarray(offset, dtype=float)


def series(frames, name):
    return [f.values[name] for f in frames]


def first_true(frames, name):
    return next(i for i, f in enumerate(frames) if f.values[name])


def tri(frames, name):
    """The three-valued series: None where the predicate is unknown."""
    return [None if name in f.unknown else f.values[name] for f in frames]


# -------------------------------------------------------------------------------------------------------
def test_paper_frame_counts_come_back_at_20_hz_and_scale_at_500_hz():
    f20, f500 = THRESHOLDS.frames(20.0), THRESHOLDS.frames(500.0)
    assert (f20.grasp_persistence, f20.stability_persistence, f20.skill_onset_window) == (5, 5, 10)
    assert (f20.forbidden_contact_tolerance, f20.settle_timeout, f20.retract_timeout) == (20, 100, 100)
    assert (f500.grasp_persistence, f500.forbidden_contact_tolerance, f500.settle_timeout) == (125, 500, 2500)
    with pytest.raises(GroundingError, match="control rate"):
        THRESHOLDS.frames(0.0)


def test_grasp_rises_on_fifth_raw_frame_and_drop_is_a_single_frame_after_release():
    s = Scene()
    s.step(3)
    s.grasp()
    rise = s.step(8)
    assert series(rise, "object_grasped_raw") == [True] * 8
    assert series(rise, "object_grasped") == [False] * 4 + [True] * 4  # 5th frame of raw
    assert all(f.values["object_sync"] for f in rise)
    s.release()
    fall = s.step(8)
    assert series(fall, "object_grasped_raw") == [False] * 8
    assert series(fall, "object_grasped") == [True] * 4 + [False] * 4
    assert series(fall, "object_dropped") == [False] * 4 + [True] + [False] * 3
    assert series(fall, "object_released") == [True] * 5 + [False] * 3  # up to and including the drop frame
    assert all(f.values["object_left_gripper"] for f in fall)
    assert not any(f.unknown & {"object_grasped", "object_dropped"} for f in rise + fall)


def test_raw_grasp_needs_both_fingers_and_a_closed_gripper():
    s = Scene()
    s.step(2)
    s.grasp()
    s.contacts[("finger_right", "cube")] = 0.02  # one-sided contact
    assert not s.step().values["object_grasped_raw"]
    s.contacts[("finger_right", "cube")] = 0.009  # within the 0.01 m clearance
    assert s.step().values["object_grasped_raw"]
    s.fingers = 0.037  # open beyond gripper_closed_below
    assert not s.step().values["object_grasped_raw"]


def test_a_flicker_shorter_than_the_debounce_does_not_end_a_grasp():
    s = Scene()
    s.grasp()
    s.step(6)
    s.fingers = 0.04
    flicker = s.step(4)  # 4 raw-false frames: one short of the debounce
    s.fingers = 0.024
    after = s.step(3)
    assert all(series(flicker + after, "object_grasped"))
    assert not any(series(flicker + after, "object_dropped"))


def test_durations_mean_the_same_at_500_hz():
    s = Scene(rate=500.0)
    s.step(40)
    s.grasp()
    frames = s.step(130)
    assert first_true(frames, "object_grasped") == 124  # 0.25 s = the 125th frame


def test_forbidden_contact_is_sustained_on_the_21st_frame_and_resets_on_a_gap():
    s = Scene()
    s.step(10)
    s.contacts[("arm", "table")] = 0.0
    frames = s.step(22)
    assert all(series(frames, "forbidden_contact"))
    assert series(frames, "forbidden_contact_sustained") == [False] * 20 + [True] * 2
    assert not any("forbidden_contact_sustained" in f.unknown for f in frames)
    del s.contacts[("arm", "table")]
    gap = s.step()
    assert not gap.values["forbidden_contact"] and not gap.values["forbidden_contact_sustained"]
    s.contacts[("arm", "table")] = 0.0
    assert series(s.step(20), "forbidden_contact_sustained") == [False] * 20


def test_a_contact_broken_by_a_pose_gap_never_adds_up_to_a_sustained_one():
    """15 frames seen, the cube's pose lost for 4 s, 15 frames seen: nobody saw 21 frames of contact, but
    it may have lasted through the gap, so it is unknown (never true) until it is seen to end."""
    s = Scene()
    s.step(10)
    s.contacts[("arm", "cube")] = 0.0  # an arm link on the cube: forbidden
    before = s.step(15)
    s.missing.add("cube")
    gap = s.step(80)
    s.missing.clear()
    after = s.step(15)
    del s.contacts[("arm", "cube")]
    gone = s.step(3)
    name = "forbidden_contact_sustained"
    assert tri(before, name) == [False] * 15
    assert tri(gap, name) == [None] * 80 and tri(after, name) == [None] * 15
    assert tri(gone, name) == [False] * 3
    assert not any(f.values[name] for f in before + gap + after + gone)


def test_a_pose_gap_inside_a_long_contact_restarts_its_count():
    """Sustained before the gap fires on the 21st seen frame as without one; after the gap the contact is
    unknown until it has again been seen for 21 frames on its own."""
    s = Scene()
    s.step(10)
    s.contacts[("arm", "cube")] = 0.0
    name = "forbidden_contact_sustained"
    assert tri(s.step(30), name) == [False] * 20 + [True] * 10
    s.missing.add("cube")
    assert tri(s.step(10), name) == [None] * 10  # it may have ended in the gap
    s.missing.clear()
    assert tri(s.step(22), name) == [None] * 20 + [True] * 2


def test_a_contact_first_seen_as_a_pose_returns_may_have_begun_in_the_gap():
    """Out of contact before a 5-frame gap, in contact from its first frame back: at most 5 unseen frames
    of contact, so false while 5 + seen frames stay within the tolerance of 20, true on the 21st seen."""
    s = Scene()
    s.step(10)
    s.missing.add("cube")
    s.step(5)
    s.missing.clear()
    s.contacts[("arm", "cube")] = 0.0
    assert tri(s.step(22), "forbidden_contact_sustained") == [False] * 15 + [None] * 5 + [True] * 2


def test_allowed_contact_classes():
    s = Scene()
    s.step(10)
    s.contacts[("hand", "cube")] = 0.0  # gripper with a manipulated object
    s.contacts[("cube", "mug")] = 0.0  # two objects at rest
    assert not s.step().values["forbidden_contact"]
    s.contacts[("finger_left", "table")] = 0.0  # gripper with a support that is not a target
    assert s.step().values["forbidden_contact"]
    del s.contacts[("finger_left", "table")]
    s.contacts[("hand", "cabinet")] = 0.0  # an open hand brushing the cabinet door: not operating it
    assert s.step().values["forbidden_contact"]
    s.fingers = 0.02  # holding the door knob: the fixture is operated
    assert not s.step().values["forbidden_contact"]
    s.contacts[("arm", "cabinet.housing")] = 0.0  # an arm link with anything
    assert s.step().values["forbidden_contact"]


def test_an_object_on_a_support_is_allowed_from_the_first_frame_but_one_on_another_object_waits_for_its_motion():
    """Whether an object moves is unknown until its pose track spans the motion window; on a support that
    does not matter (allowed either way), so a rollout's first frames decide forbidden contact."""
    s = Scene(rate=500.0)
    first = s.step()
    assert "object_stable" in first.unknown  # the motion itself is not known yet
    assert not first.values["forbidden_contact"] and "forbidden_contact" not in first.unknown
    assert "forbidden_contact_sustained" not in first.unknown
    s = Scene(rate=500.0)
    s.contacts[("cube", "mug")] = 0.0  # the mug is no support: forbidden if the cube moves, not known yet
    assert "forbidden_contact" in s.step().unknown
    assert not any("forbidden_contact" in f.unknown for f in s.step(40)[30:])  # at rest: allowed


def test_a_grasped_object_may_touch_supports_but_not_other_objects():
    s = Scene()
    s.step(5)
    s.grasp("cube")
    s.step(6)
    s.contacts[("cube", "plate")] = 0.0  # plate: support
    assert not s.step().values["forbidden_contact"]
    s.contacts[("cube", "mug")] = 0.0  # mug: fragile, not a support
    assert s.step().values["forbidden_contact"]


def test_settle_timeout_fires_100_frames_after_the_drop():
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(6)
    s.release()
    frames = []
    for _ in range(110):
        frames.append(s.step())
        s.pos["cube"] = s.pos["cube"] + [0.0, 0.01, 0.0]  # keeps sliding at 0.2 m/s
    drop = first_true(frames, "object_dropped")
    timeout = series(frames, "settle_timeout")
    assert timeout[drop + 99] is False and timeout[drop + 100] is True
    assert not any(series(frames, "object_settled"))


def test_a_settle_timeout_over_frames_the_object_was_unseen_is_unknown_not_true():
    """The cube is dropped and its pose lost: it may have come to rest unseen, so 100 frames on the timeout
    is unknown (a true one would assert it never settled); seen at rest again, it settles and the timeout
    is false."""
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(6)
    s.release()
    s.step(5)  # dropped on the last of these frames
    s.missing.add("cube")
    gap = s.step(102)
    assert tri(gap, "object_settled") == [None] * 102
    assert tri(gap, "settle_timeout") == [False] * 99 + [None] * 3  # 100 frames after the drop
    s.missing.clear()
    back = s.step(30)
    assert True not in tri(back, "settle_timeout")
    assert back[-1].values["object_settled"] and tri(back[-1:], "settle_timeout") == [False]


def _dropped_sliding(gap: int) -> list:
    """The cube dropped, then sliding at 0.2 m/s for 110 frames, unseen for `gap` frames from the 10th."""
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(6)
    s.release()
    frames = []
    for k in range(115):
        if k == 14:
            s.missing.add("cube")
        if k == 14 + gap:
            s.missing.clear()
        frames.append(s.step())
        s.pos["cube"] = s.pos["cube"] + [0.0, 0.01, 0.0]
    return frames


def test_a_settle_timeout_after_a_gap_too_short_to_hide_a_settle_is_true():
    """Settling takes the stability persistence (5 frames at rest): a gap of one frame between frames seen
    moving cannot hide one, so the timeout 100 frames after the drop is true; a gap as long as the
    persistence could, and the timeout is unknown."""
    frames = _dropped_sliding(1)
    drop = first_true(frames, "object_dropped")
    assert drop < 14 and None in tri(frames, "object_settled")  # the gap is after the drop
    assert tri(frames, "settle_timeout")[drop + 99 : drop + 101] == [False, True]
    frames = _dropped_sliding(5)
    assert tri(frames, "settle_timeout")[drop + 99 : drop + 101] == [False, None]


def _released_above_the_bin() -> tuple[Scene, list]:
    """The cube grasped off the table, carried above the bin and let go: the scene and the five frames after."""
    s = Scene()
    s.step(3)
    s.grasp("cube")
    s.step(6)
    del s.contacts[("cube", "table")]
    s.carry("cube", np.array([0.0, 0.42, 0.6]) - s.pos["cube"])
    s.step(2)
    s.release("cube")
    return s, s.step(5)


def test_a_transfer_timeout_over_frames_the_object_was_unseen_is_unknown_not_true():
    s, frames = _released_above_the_bin()
    assert series(frames, "transfer_event").count(True) == 1
    s.missing.add("cube")
    gap = s.step(100)
    assert "contained_settled" in gap[0].unknown
    assert None in tri(gap, "transfer_timeout") and True not in tri(gap, "transfer_timeout")


def test_a_transfer_timeout_after_a_gap_too_short_to_hide_a_settle_is_true():
    """The cube hangs above the bin, never inside it, and is unseen for one frame: it cannot have been
    contained and at rest for the content-entry persistence unseen, so the timeout is true; unseen for that
    long, it is unknown."""
    for gap, timeout in ((1, True), (5, None)):
        s, frames = _released_above_the_bin()
        event = first_true(frames, "transfer_event")
        s.missing.add("cube")
        frames += [s.step() for _ in range(gap)]
        s.missing.clear()
        frames += s.step(100)
        assert tri(frames, "transfer_timeout")[event + 99 : event + 101] == [False, timeout]


def _transfer_decided_after_a_gap(gap: int) -> list:
    """The cube held above the bin is lost from sight in the closed hand for `gap` frames from frame 0, then seen
    out of the fingers, above the bin and sliding off it at 0.2 m/s: its drop is decided on the debounce's fifth
    frame back, at an unknown frame, and starts a transfer."""
    s, _ = _released_above_the_bin()
    s.grasp("cube")
    s.step(6)
    return _lost_then_sliding(s, gap, [0.01, 0.0, 0.0])


def test_a_transfer_decided_after_a_pose_gap_times_out_from_the_earliest_frame_its_drop_may_have_happened():
    """Lost for 2 frames: the drop may have happened on frames 4 to 6 (the fifth frame after the gap began, to the
    one that decides it), all seen above the bin. transfer_event is unknown on each of them, never true (on which
    one it happened is not known); the transfer surely started, and its timeout is false up to 100 frames after
    frame 4, unknown until 100 frames after frame 6, true from then (as the drop's settle timeout). Lost for 6, the
    drop may have happened on frames 4 or 5, unseen, with the cube anywhere (starting no transfer): the transfer
    timeout is unknown from frame 104, never true. Lost for 12, the cube may have come to rest in the gap."""
    frames = _transfer_decided_after_a_gap(2)
    assert tri(frames, "transfer_event")[:8] == [False] * 4 + [None] * 3 + [False]
    assert tri(frames, "settle_timeout")[100:110] == [False] * 4 + [None] * 2 + [True] * 4
    assert tri(frames, "transfer_timeout")[100:110] == [False] * 4 + [None] * 2 + [True] * 4
    frames = _transfer_decided_after_a_gap(6)
    assert tri(frames, "transfer_event")[:12] == [False] * 4 + [None] * 7 + [False]
    assert tri(frames, "settle_timeout")[100:115] == [False] * 4 + [None] * 6 + [True] * 5
    assert tri(frames, "transfer_timeout")[100:] == [False] * 4 + [None] * (len(frames) - 104)
    timeout = tri(_transfer_decided_after_a_gap(12), "transfer_timeout")
    assert timeout[103:105] == [False, None] and True not in timeout


def test_a_released_object_at_rest_settles_after_the_stability_persistence():
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(6)
    s.release()
    frames = s.step(12)
    drop = first_true(frames, "object_dropped")
    settled = series(frames, "object_settled")
    assert settled[drop + 3] is False and settled[drop + 4] is True  # 5th still frame after the grasp ended
    assert not any(series(frames, "settle_timeout"))


def test_stability_is_sticky_against_jitter_but_not_against_displacement():
    s = Scene()
    frames = s.step(8)
    # frame 0 has no velocity yet (unknown); frames 1..5 are the 5 still frames
    assert "object_stable" in frames[0].unknown
    assert series(frames, "object_stable")[4] is False and series(frames, "object_stable")[5] is True
    s.pos["mug"] = s.pos["mug"] + [0.01, 0.0, 0.0]  # a 0.2 m/s jitter, 1 cm: under the slip distance
    assert s.step().values["object_stable"]
    s.pos["mug"] = s.pos["mug"] + [0.03, 0.0, 0.0]  # 4 cm from where it settled
    assert not s.step().values["object_stable"]


def test_slip_relative_to_the_end_effector_breaks_sync():
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(6)
    s.carry("cube", [0.0, 0.0, 0.02])  # moving together: in sync
    assert s.step().values["object_sync"]
    s.ee = s.ee + [0.0, 0.0, 0.04]  # the hand rises 4 cm in one window, the cube stays
    assert not s.step().values["object_sync"]


def test_a_grasped_object_beyond_reach_is_out_of_sync_not_unknown():
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(6)
    s.pos["cube"] = s.pos["cube"] + [0.0, 0.0, -0.2]  # it fell out of the hand
    for f in ("finger_left", "finger_right"):
        del s.contacts[(f, "cube")]
    f = s.step()
    assert f.values["object_grasped"] and not f.values["object_sync"] and "object_sync" not in f.unknown


def test_an_object_never_seen_may_be_out_of_sync_once_a_closed_gripper_could_hold_it():
    """The mug's pose has not arrived yet. An open gripper holds nothing, and a closed one cannot have held
    it for the grasp persistence in fewer frames: sync is true until then, unknown after (it may be held and
    slipping), and true again once the mug has been seen out of the fingers for the grasp persistence (a grasp
    it may have had unseen would last that long: grasped beyond reach, it would be out of sync)."""
    s = Scene()
    s.missing.add("mug")
    assert tri(s.step(8), "object_sync") == [True] * 8
    s.fingers = 0.024  # closed on nothing that is seen
    assert tri(s.step(7), "object_sync") == [True] * 4 + [None] * 3
    s.missing.clear()
    seen = s.step(6)
    assert tri(seen, "object_sync") == [None] * 4 + [True] * 2
    assert tri(seen, "object_grasped") == [None] * 4 + [False] * 2


def test_a_never_seen_object_a_closed_gripper_may_have_held_stays_grasped_when_it_opens():
    """The mug was never seen while the gripper was closed for 8 frames: it may have been grasped (from the
    5th), and then its grasp lasts the debounce's 4 open frames more, so object_grasped is unknown there, not
    false; on the 5th open frame it is false whatever happened unseen."""
    s = Scene()
    s.missing.add("mug")
    s.fingers = 0.024
    closed = s.step(8)
    s.fingers = 0.04
    opened = s.step(6)
    assert tri(closed, "object_grasped") == [None] * 8
    assert tri(opened, "object_grasped") == [None] * 4 + [False] * 2
    assert tri(opened, "object_grasped_raw") == [False] * 6


def test_an_unseen_object_a_closed_gripper_may_have_held_may_be_out_of_sync_until_its_grasp_would_end():
    """The mug, never seen, may have been grasped while the gripper was closed for 8 frames; when it opens,
    that grasp would last the debounce's 4 open frames more (grasped beyond reach: out of sync), so sync stays
    unknown there and is true on the 5th, when no grasp can last; the open frames before a closed spell do not
    count towards it. The same for a seen cube lost from sight in the closed hand before its grasp was decided."""
    s = Scene()
    s.missing.add("mug")
    s.fingers = 0.024
    assert tri(s.step(8), "object_sync") == [True] * 4 + [None] * 4
    s.fingers = 0.04
    assert tri(s.step(6), "object_sync") == [None] * 4 + [True] * 2
    s.fingers = 0.024  # held again for 8 frames, open for 2, closed for 5: the grasp may have lasted through
    s.step(8)
    s.fingers = 0.04
    s.step(2)
    s.fingers = 0.024
    s.step(5)
    s.fingers = 0.04
    opened = s.step(6)
    assert tri(opened, "object_sync") == [None] * 4 + [True] * 2
    assert tri(opened, "object_grasped") == [None] * 4 + [False] * 2
    s = Scene()
    s.grasp()
    s.step(2)  # touched on two frames, not grasped yet
    s.missing.add("cube")
    s.step(5)
    s.release()
    assert tri(s.step(6), "object_sync") == [None] * 4 + [True] * 2


def test_an_object_not_grasped_before_a_closed_gripper_gap_may_have_been_grasped_and_dropped_in_it():
    """The cube rests by the closed, empty hand and is lost from sight for 12 frames: from the 5th it may have
    been grasped, and from the 10th dropped (the debounce's 5 frames each way), so object_dropped is unknown
    from there until its grasp is decided again on the 5th frame it is seen out of the fingers (a drop on
    that frame is still possible), false after. A gap of 4 frames cannot hide a grasp: it stays known false. A
    never-seen object's hidden grasp may begin on the 5th closed frame: a drop is possible from the 10th."""
    s = Scene()
    s.fingers = 0.024
    s.step(2)
    s.missing.add("cube")
    frames = s.step(12)
    s.missing.clear()
    frames += s.step(8)
    assert tri(frames, "object_dropped") == [False] * 9 + [None] * 8 + [False] * 3
    assert tri(frames, "object_grasped") == [None] * 16 + [False] * 4
    s = Scene()
    s.fingers = 0.024
    s.step(2)
    s.missing.add("cube")
    frames = s.step(4)
    s.missing.clear()
    frames += s.step(8)
    assert tri(frames, "object_dropped") == [False] * 12
    s = Scene()  # the mug, never seen, by a hand closed for 8 frames then open: dropped from its 10th frame
    s.missing.add("mug")
    s.fingers = 0.024
    frames = s.step(8)
    s.fingers = 0.04
    frames += s.step(6)
    assert tri(frames, "object_dropped") == [False] * 9 + [None] * 4 + [False]


def test_an_unseen_object_a_closed_gripper_may_have_held_may_be_released_when_it_opens():
    """The mug, never seen, may have been grasped while the gripper was closed for 8 frames: when it opens, that
    grasp would count up to its drop on the debounce's 5th open frame, so object_released (open while grasped
    before or after the frame) is unknown there, not false; false once no grasp can last, and while closed."""
    s = Scene()
    s.missing.add("mug")
    s.fingers = 0.024
    closed = s.step(8)
    s.fingers = 0.04
    opened = s.step(7)
    assert tri(closed, "object_released") == [False] * 8
    assert tri(opened, "object_released") == [None] * 5 + [False] * 2


def test_a_grasp_that_may_have_ended_in_a_closed_gripper_gap_is_released_only_while_it_surely_lasts():
    """The cube held in the closed hand is lost from sight, then the hand opens (the cube still unseen). Its
    grasp may have ended on the 5th gap frame at the earliest (it slipped out as the gap began): from the frame
    after that, the opening is no longer surely a release, and object_released is unknown up to the debounce's
    5th open frame (the drop frame of a grasp that lasted), not true. Opened after a gap of 2 frames it is true
    while the grasp surely lasted (up to the frame after the earliest possible end), unknown after."""
    for gap, expected in ((6, [None] * 5 + [False] * 2), (2, [True] * 3 + [None] * 2 + [False] * 2)):
        s = Scene()
        s.step(3)
        s.grasp()
        s.step(8)
        s.missing.add("cube")
        assert tri(s.step(gap), "object_released") == [False] * gap
        s.release()
        opened = s.step(7)
        assert tri(opened, "object_released") == expected, gap
        assert tri(opened, "object_grasped") == [None] * 4 + [False] * 3


def test_raw_grasps_seen_after_a_closed_gripper_gap_may_complete_a_grasp_begun_in_it():
    """The cube is touched by the closed fingers on one frame, lost from sight for 2, seen touched on 2 more:
    with the gap's frames touched too that is the 5-frame run of a grasp, so when the hand opens the grasp may
    last to its drop on the debounce's 5th open frame: object_released is unknown on those 5 frames and
    object_dropped on the 5th (the earliest such drop), not known false."""
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(1)
    s.missing.add("cube")
    s.step(2)
    s.missing.clear()
    s.step(2)
    s.release()
    opened = s.step(7)
    assert tri(opened, "object_grasped") == [None] * 4 + [False] * 3
    assert tri(opened, "object_released") == [None] * 5 + [False] * 2
    assert tri(opened, "object_dropped") == [False] * 4 + [None] + [False] * 2


def test_a_grasp_under_way_on_a_traces_first_frame_may_have_begun_before_it():
    """A monitor started late (or a grounder reset when its input restarted) finds the cube between the closed
    fingers on its first frame: the grasp may have begun before, so it is unknown, not false, until the debounce
    has seen its 5 frames. Let go on the 3rd frame, the cube may have been dropped (unknown up to the debounce's
    5th open frame) and may be the focus; the open hand beside it may be backing off from a place, not
    approaching a pick: no known pick onset whose preconditions (the cube not yet seen at rest) would fail.
    Held on, the grasp is decided on the 5th frame; a trace begun with the hand open is judged from its first."""
    s = Scene()
    s.grasp()
    held = s.step(2)
    s.release()
    opened = s.step(8)
    assert tri(held + opened, "object_grasped") == [None] * 6 + [False] * 4
    assert tri(opened, "object_dropped") == [None] * 5 + [False] * 3
    assert tri(opened, "object_left_gripper") == [None] * 8
    assert True not in tri(opened, "skill_pick_onset") and False not in tri(opened, "preconditions_pick")
    s = Scene()
    s.grasp()
    assert tri(s.step(6), "object_grasped") == [None] * 4 + [True] * 2
    s = Scene()
    assert tri(s.step(3), "object_grasped") == [False] * 3


def test_missing_pose_is_unknown_held_and_reported_stale():
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(6)
    s.missing.add("cube")  # perception loses the cube inside the hand
    f = s.step()
    assert {"object_grasped", "object_grasped_raw", "object_left_gripper"} <= f.unknown
    assert f.values["object_grasped"] is True  # last decided value, flagged unknown
    assert f.stale["object_pose/cube"] == math.inf
    assert "forbidden_contact" in f.unknown
    s.missing.clear()
    back = s.step(5)  # the grasp evidence restarts: unknown until the debounce's 5 frames agree again
    assert ["object_grasped" in f.unknown for f in back] == [True] * 4 + [False]
    assert back[-1].values["object_grasped"] and not any(f.values["object_dropped"] for f in back)
    assert "object_pose/cube" not in back[0].stale and "object_grasped_raw" not in back[0].unknown


def test_every_frame_lists_every_predicate_in_order_as_a_bool_and_repeats_hand_out_the_same_read_only_values():
    """The families' values are joined by position: a frame's keys are PREDICATES in order, each value a
    plain bool, unknown or not; a frame that repeats the previous one's decisions hands out the same values,
    which no one may change (a writer fails loudly), and one that changes a decision new ones."""
    s = Scene()
    frames = s.step(3)
    s.grasp()
    frames += s.step(6)
    s.missing.add("cube")
    frames += s.step(3)  # (from its second frame, the cube may carry contamination from the gap's first)
    assert frames[-1].unknown and frames[-1].unknown == frames[-2].unknown
    for f in frames:
        assert tuple(f.values) == PREDICATES and all(type(v) is bool for v in f.values.values())
    assert frames[-1].values is frames[-2].values and frames[1].values is frames[0].values
    assert frames[3].values is not frames[2].values and frames[3].values != frames[2].values
    with pytest.raises(TypeError, match="read-only"):
        frames[-1].values["object_grasped"] = not frames[-1].values["object_grasped"]
    assert s.step().values == frames[-2].values


def test_a_pose_gap_mid_grasp_restarts_the_grasp_evidence_and_reports_no_drop():
    """The cube leaves the closed hand unseen (its pose stream has a gap): when the pose returns, the
    grasp's fall is decided on fresh evidence only, and it is an unknown drop, never a known one (the
    gripper was not seen when it happened: a known drop here would read as a drop without a release)."""
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(8)
    s.missing.add("cube")
    gap = s.step(30)
    for f in ("finger_left", "finger_right"):
        s.contacts[(f, "cube")] = 0.05  # back in view, away from the still closed fingers
    s.missing.clear()
    back = s.step(8)
    assert not any(f.values["object_dropped"] and "object_dropped" not in f.unknown for f in gap + back)
    assert ["object_grasped" in f.unknown for f in back[:6]] == [True] * 4 + [False, False]
    assert [f.values["object_grasped"] for f in back[4:]] == [False] * 4
    assert "object_dropped" in back[4].unknown and not back[4].values["object_released"]  # gripper closed
    assert not any(f.values["object_dropped"] for f in back[5:]) and "object_dropped" not in back[5].unknown
    assert not back[0].values["object_grasped_raw"] and "object_grasped_raw" not in back[0].unknown  # raw: no history


def test_an_open_gripper_holds_nothing_seen_or_not():
    """Raw grasp needs a closed gripper: with it open, an unseen object's raw grasp is false, not unknown
    (Kleene: False AND unknown), so its debounced grasp stays known. A grasp whose object is lost from sight as
    the gripper opens ends on the debounce's fifth open frame in a known drop, released on that frame."""
    s = Scene()
    s.missing.add("mug")  # never seen
    frames = s.step(6)
    assert tri(frames, "object_grasped_raw") == tri(frames, "object_grasped") == [False] * 6
    s.missing.clear()
    s.step(3)
    s.grasp()
    s.step(8)
    s.release()
    s.missing.add("cube")  # lost from sight as the hand opens
    fall = s.step(8)
    assert tri(fall, "object_grasped_raw") == [False] * 8
    assert tri(fall, "object_grasped") == [True] * 4 + [False] * 4
    assert tri(fall, "object_dropped") == [False] * 4 + [True] + [False] * 3
    assert tri(fall, "object_released") == [True] * 5 + [False] * 3  # the drop was released: no alarm
    assert tri(fall, "object_sync") == [None] * 4 + [True] * 4  # unseen while grasped; nothing held after


def _dropped_in_a_gap(gap: int) -> list:
    """The cube held in the closed hand is lost from sight for `gap` frames, then seen out of the fingers,
    sliding at 0.2 m/s: its drop is decided on the debounce's fifth frame back, at an unknown frame."""
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(8)
    return _lost_then_sliding(s, gap, [0.0, 0.01, 0.0])


def _lost_then_sliding(s: Scene, gap: int, step: list[float]) -> list:
    """The cube lost from sight for `gap` frames, then seen out of the fingers, moving `step` a frame for 120."""
    s.missing.add("cube")
    frames = s.step(gap)
    for f in ("finger_left", "finger_right"):
        s.contacts[(f, "cube")] = 0.05
    s.missing.clear()
    for _ in range(120):
        frames.append(s.step())
        s.pos["cube"] = s.pos["cube"] + step
    return frames


def test_a_drop_decided_after_a_pose_gap_times_out_from_the_earliest_frame_it_may_have_happened():
    """Lost for 6 frames from frame 0: the grasp may have ended on frame 4 at the earliest (the fifth unseen
    frame), and is decided on frame 10. The settle timeout is false up to 100 frames after frame 4, unknown
    until 100 frames after frame 10, true from then (the object was never still long enough to settle)."""
    frames = _dropped_in_a_gap(6)
    assert tri(frames, "object_dropped").index(False) == 11  # unknown up to its deciding frame 10
    assert tri(frames, "settle_timeout")[100:115] == [False] * 4 + [None] * 6 + [True] * 5


def test_a_drop_decided_after_a_long_pose_gap_may_have_settled_in_it():
    """Lost for 12 frames: the cube may have fallen on frame 4 and rested unseen for the stability persistence
    before it was seen sliding, which would have stopped its settle timer: the timeout is never true."""
    frames = _dropped_in_a_gap(12)
    timeout = tri(frames, "settle_timeout")
    assert timeout[103:105] == [False, None] and True not in timeout


def test_a_drop_hidden_in_a_long_pose_gap_may_have_timed_out_before_the_pose_returns():
    """The cube held in the closed hand is lost from sight for 130 frames: it may have slipped out on frame 4 and
    slid on unseen, so its settle timeout is unknown from frame 104, not false; seen again in the hand, held for
    the debounce's five frames, it is held (a drop it may have had was grasped again): false."""
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(8)
    s.missing.add("cube")
    gap = s.step(130)
    s.missing.clear()
    back = s.step(6)
    assert tri(gap, "settle_timeout") == [False] * 104 + [None] * 26
    assert tri(back, "settle_timeout") == [None] * 4 + [False] * 2
    assert tri(back, "object_grasped") == [None] * 4 + [True] * 2


def _by_the_closed_hand(focus: bool) -> Scene:
    """The cube resting by the closed, empty hand. `focus`: it was grasped and let go before, and settled: it is the
    focus object, its settle timer stopped."""
    s = Scene()
    if focus:
        s.grasp()
        s.step(6)
        s.release()
        s.step(12)
    s.fingers = 0.024
    s.step(2)
    return s


def _grasp_and_drop_hidden_in_a_gap(focus: bool = False) -> tuple[Scene, list]:
    """The cube by the closed hand is lost from sight for 12 frames from frame 0: it may have been grasped on frame
    4 (its fifth unseen frame) and dropped from frame 9 on. Seen again, out of the fingers, it slides at 0.2 m/s for
    120 frames (its grasp decided "not grasped" on frame 16)."""
    s = _by_the_closed_hand(focus)
    return s, _lost_then_sliding(s, 12, [0.0, 0.01, 0.0])


def test_a_grasp_and_drop_hidden_in_a_pose_gap_may_have_started_a_settle_timer():
    """The cube, the focus, settled. Such a drop, on frame 9 at the earliest, would have started its settle timer
    again, and the cube never rests: settle_timeout is unknown from frame 109 (true if the drop happened, false if
    not: never true), until the cube, stopped, is seen at rest for the stability persistence (its first frame still
    reads the last move), which settles it whichever frame it was dropped on: false again."""
    s, frames = _grasp_and_drop_hidden_in_a_gap(focus=True)
    assert tri(frames, "settle_timeout") == [False] * 109 + [None] * 23
    rest = s.step(7)
    assert tri(rest, "settle_timeout") == [None] * 5 + [False] * 2


def test_rest_seen_before_the_last_frame_a_hidden_drop_may_have_happened_on_settles_nothing():
    """The same cube seen at rest from frame 12 (its stability latch closes on 17, but object_stable stays unknown:
    the grasp that drop ended would have reset it), then sliding: the drop may have been on frame 16, which decides
    it, and the cube has rested only two frames since, too few to settle after that drop: the timeout is unknown
    from frame 109, not false."""
    s = _by_the_closed_hand(focus=True)
    s.missing.add("cube")
    frames = s.step(12)
    s.contacts[("finger_left", "cube")] = s.contacts[("finger_right", "cube")] = 0.05
    s.missing.clear()
    frames += s.step(6)
    assert tri(frames[12:], "object_stable") == [None] * 6
    frames += _lost_then_sliding(s, 0, [0.0, 0.01, 0.0])
    assert tri(frames, "settle_timeout")[108:] == [False] + [None] * (len(frames) - 109)


def test_a_grasp_and_drop_hidden_in_a_pose_gap_may_have_started_a_transfer():
    """Dropped unseen on frame 9, 10 or 11, the cube may have been above the bin: transfer_event is unknown there
    (seen on the table from frame 12, a drop there starts none), and the transfer it may have started, never
    settled, would time out from frame 109: unknown from there, until the cube is seen grasped, which would end it."""
    s, frames = _grasp_and_drop_hidden_in_a_gap()
    assert tri(frames, "transfer_event") == [False] * 9 + [None] * 3 + [False] * 120
    assert tri(frames, "transfer_timeout") == [False] * 109 + [None] * 23
    s.grasp()
    assert tri(s.step(6), "transfer_timeout") == [None] * 4 + [False] * 2


def test_a_grasp_hidden_in_a_short_pose_gap_may_have_ended_a_transfer():
    """The cube dropped above the bin bounced out onto the table; the closed hand at it loses it for 4 frames, then
    sees it between the fingers for one: a grasp may have risen there (the debounce's fifth raw frame) and ended the
    transfer, and the hand opens (every frame it may have dropped on sees it on the table: no transfer starts). The
    transfer timeout 100 frames after the event is unknown, not true: where that grasp happened there is no
    transfer."""
    s, frames = _released_above_the_bin()
    frames = frames[first_true(frames, "transfer_event") :]
    s.pos["cube"] = np.array([0.2, 0.42, 0.425])
    s.contacts = {("cube", "table"): 0.0}
    frames += s.step(80)
    s.ee, s.fingers = s.pos["cube"].copy(), 0.024
    frames += s.step(2)
    s.missing.add("cube")
    frames += s.step(4)
    s.missing.clear()
    s.contacts[("finger_left", "cube")] = s.contacts[("finger_right", "cube")] = -0.001
    frames.append(s.step())
    s.release()
    frames += s.step(40)
    assert tri(frames, "object_grasped")[83:92] == [None] * 9  # undecided from the gap to five open frames
    assert tri(frames, "transfer_event")[1:] == [False] * (len(frames) - 1)
    assert tri(frames, "transfer_timeout") == [False] * 100 + [None] * (len(frames) - 100)


def test_a_drop_of_an_object_lost_from_sight_may_start_a_transfer():
    """The cube lost from sight as the hand opens drops on the debounce's fifth open frame (a known drop): where it
    was then is not known, so whether that drop was above the bin (transfer_event) is unknown, not false, and so is
    the timeout of the transfer it may have started, from 100 frames on."""
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(8)
    s.release()
    s.missing.add("cube")
    fall = s.step(110)
    assert tri(fall, "object_dropped")[:6] == [False] * 4 + [True, False]
    assert tri(fall, "transfer_event")[:6] == [False] * 4 + [None, False]
    assert tri(fall, "transfer_timeout")[103:106] == [False, None, None]


def test_a_drop_hidden_in_a_pose_gap_may_have_released_the_objects_within_reach():
    """The cube lies within reach of the closed, empty hand and is lost from sight for 12 frames: it may have been
    grasped and dropped unseen, which would release it (a drop re-arms the objects within reach only once the
    gripper has left them). When the hand opens beside it, whether that is a pick approach is unknown: the onset,
    the skill's end and its preconditions are unknown, not a certain onset; once the hand has left, the skill
    that may be running lapses after the onset window."""
    s = Scene()
    s.fingers = 0.024
    s.contacts[("finger_left", "cube")] = 0.04
    s.step(2)
    s.missing.add("cube")
    s.step(12)
    s.missing.clear()
    assert tri(s.step(6), "object_dropped") == [None] * 5 + [False]
    s.fingers = 0.04
    opened = s.step(4)
    assert tri(opened, "skill_pick_onset") == tri(opened, "skill_pick_onset_end") == [None] * 4
    assert tri(opened, "preconditions_pick") == [None] * 4
    del s.contacts[("finger_left", "cube")]
    away = s.step(12)
    assert tri(away, "skill_pick_onset") == [False] * 12
    assert tri(away, "skill_pick_onset_end") == [None] * 10 + [True] * 2


def test_object_in_fixture_is_unknown_while_a_grasp_hidden_in_a_pose_gap_may_have_changed_the_focus():
    """The mug, the focus, rests on the drawer floor: object_in_fixture is true. The closed, empty hand may grasp
    the cube while the cube is lost from sight for 12 frames: from the fifth, the cube, on the table, may be the
    focus, so object_in_fixture is unknown, not true, also once the cube is seen again."""
    s = Scene()
    s.grasp("mug")
    s.step(6)
    s.pos["mug"] = np.array([0.6375, 0.42, 0.51 - 0.08 + 0.045])  # on the drawer floor
    s.ee = s.pos["mug"].copy()
    s.release("mug")
    s.step(6)
    s.fingers = 0.024
    s.step()
    s.missing.add("cube")
    frames = s.step(12)
    s.missing.clear()
    frames += s.step(4)
    assert tri(frames, "object_in_fixture") == [True] * 4 + [None] * 12


def test_a_grasp_hidden_in_a_pose_gap_may_have_made_another_object_the_focus():
    """Before it, nothing was grasped: no focus object, so object_left_gripper is false. From frame 4 the cube may
    have been grasped, and be the focus: object_left_gripper is unknown wherever the cube is clear of the gripper
    (unseen, or seen 5 cm from the fingers), until a grasp seen (the mug's) makes the mug the focus in every
    completion."""
    s, frames = _grasp_and_drop_hidden_in_a_gap()
    assert tri(frames, "object_left_gripper") == [False] * 4 + [None] * 128
    s.grasp("mug")
    grasp = s.step(6)
    assert tri(grasp, "object_grasped") == [False] * 4 + [True] * 2
    assert tri(grasp, "object_left_gripper") == [None] * 4 + [False] * 2


def test_object_stable_is_unknown_where_a_grasp_hidden_in_a_pose_gap_would_count_the_object_or_have_reset_its_latch():
    """The cube by the closed, empty hand is lost from sight for 12 frames: it may have been grasped from frame 4 and
    dropped from frame 9. Seen again at rest out of the fingers, its grasp is decided "not grasped" on frame 16, the
    last a drop may have happened on. Its own latch closes on frame 17 (frame 12 reads no speed yet), but the grasp
    would have reset it, and after a drop on frame 16 it closes again only on frame 20: object_stable is unknown
    until then, not true. Seen sliding instead, it is unknown, not false, while the cube may still be held (a held
    object need not be at rest), up to that deciding frame."""
    frames = _lost_then_sliding(_by_the_closed_hand(focus=False), 12, [0.0, 0.0, 0.0])
    assert tri(frames[12:22], "object_stable") == [None] * 8 + [True] * 2
    _, frames = _grasp_and_drop_hidden_in_a_gap()
    assert tri(frames[12:20], "object_stable") == [None] * 4 + [False] * 4


def _held_then_lost(gap: int, step: list[float]) -> list:
    """The cube held in the closed hand since frame -8, lost from sight for `gap` frames from frame 0, then seen out
    of the fingers moving `step` a frame: its grasp may have ended on frame 4 at the earliest (the fifth unseen
    frame), and is decided "not grasped" on the fifth frame back."""
    s = Scene()
    s.step(3)
    s.grasp()
    s.step(8)
    return _lost_then_sliding(s, gap, step)


def test_object_stable_and_settled_are_unknown_where_a_drop_hidden_in_a_pose_gap_would_differ():
    """The held cube, lost for 12 frames, is seen at rest out of the fingers; its grasp is decided on frame 16. Where
    it fell on a frame from 4 to 16, its latch, reset by the grasp, is open on that frame, where it is still held it
    is not counted: object_stable is unknown from frame 4, not true, until the latch closes after a drop on 16 (frame
    20). Where it fell on frame 4 and rested unseen, it settled on frame 8: object_settled is unknown from there, not
    false. Seen sliding after a 6-frame gap, it cannot have rested for the persistence: settled stays false."""
    frames = _held_then_lost(12, [0.0, 0.0, 0.0])[:24]
    assert tri(frames, "object_grasped") == [None] * 16 + [False] * 8
    assert tri(frames, "object_stable") == [True] * 4 + [None] * 16 + [True] * 4
    assert tri(frames, "object_settled") == [False] * 8 + [None] * 12 + [True] * 4
    frames = _held_then_lost(6, [0.0, 0.01, 0.0])[:14]
    assert tri(frames, "object_stable") == [True] * 4 + [None] * 6 + [False] * 4
    assert tri(frames, "object_settled") == [False] * 14


def test_a_still_object_touching_no_support_is_forbidden_where_a_grasp_or_drop_hidden_in_a_pose_gap_holds_it():
    """The cube touches the mug (no support for it) when it is seen again after a 12-frame gap by the closed hand,
    its grasp decided on frame 16. Not grasped before the gap, it may have been grasped in it; held before, it may have
    been dropped: either way it may count as grasped up to frame 15, where the contact is forbidden (an active object
    on no support), and not elsewhere: at rest, forbidden_contact is unknown up to frame 15, not false (nor true),
    false from 16; sliding, it is active in every completion: true from the first frame its motion is known."""
    for held in (False, True):
        for step, after in (([0.0, 0.0, 0.0], [None] * 4 + [False] * 4), ([0.0, 0.01, 0.0], [None] + [True] * 7)):
            if held:
                s = Scene()
                s.step(3)
                s.grasp()
                s.step(8)
            else:
                s = _by_the_closed_hand(focus=False)
            s.contacts[("cube", "mug")] = 0.0
            frames = _lost_then_sliding(s, 12, step)[:20]
            assert tri(frames, "object_grasped") == [None] * 16 + [False] * 4
            assert tri(frames, "forbidden_contact") == [None] * 12 + after, (held, step)


def test_the_skills_ask_whether_a_drop_hidden_in_a_pose_gap_let_the_held_object_go():
    """The held cube, lost for 6 frames, is seen again out of the fingers, its grasp decided on frame 10. From frame
    4 it may have been let go: the hand is empty there, so preconditions_open (nothing grasped) is unknown, not false,
    and so is preconditions_place (nothing to place there), not true where the cube is seen in sync (frames 7 to 9)."""
    frames = _held_then_lost(6, [0.0, 0.01, 0.0])[:14]
    assert tri(frames, "preconditions_open") == [False] * 4 + [None] * 6 + [True] * 4
    assert tri(frames, "preconditions_place") == [None] * 10 + [False] * 4


def test_preconditions_pick_reads_the_rest_of_a_target_a_grasp_hidden_in_a_pose_gap_may_have_dropped_as_object_stable():
    """The closed hand, far from the cube, may have grasped and dropped it while it was lost from sight for 12 frames
    (a closed gripper may hold any object it does not see). Seen again at rest, the cube's grasp is decided on the
    5th frame back; the open hand reaches it on the 6th: a pick onset, the cube's own latch closing there, but a
    drop on the 5th would have left it at rest for two frames only: preconditions_pick (target at rest) is unknown,
    not true, until the cube has been at rest for the persistence after that drop, as object_stable is."""
    s = Scene()
    s.step(6)
    s.fingers = 0.024
    s.missing.add("cube")
    s.step(12)
    s.missing.clear()
    s.fingers = 0.04
    assert tri(s.step(5), "object_grasped") == [None] * 4 + [False]
    s.contacts[("finger_left", "cube")] = 0.03
    pick = s.step(4)
    assert tri(pick, "skill_pick_onset") == [True] + [False] * 3
    assert tri(pick, "object_stable") == tri(pick, "preconditions_pick") == [None] * 3 + [True]


def test_the_skills_ask_whether_a_grasp_hidden_in_a_pose_gap_holds_an_object():
    """Nothing is surely held, but from frame 4 of the cube's gap by the closed hand it may be: a place approach may
    begin unseen (the cube lifted and brought to a support), so the place onset and its end are unknown, not false
    and true, and so is preconditions_place (something to place in some completions). Seen again between the
    fingers, the cube is held in some completions until its grasp is decided on the 5th frame back: the open
    precondition (nothing grasped) is unknown there, not true, and false once the grasp is decided."""
    s = _by_the_closed_hand(focus=False)
    s.missing.add("cube")
    gap = s.step(12)
    assert tri(gap, "skill_place_onset") == [False] * 4 + [None] * 8
    assert tri(gap, "skill_place_onset_end") == [True] * 4 + [None] * 8
    assert tri(gap, "preconditions_place") == [False] * 4 + [None] * 8
    s.missing.clear()
    s.grasp()
    back = s.step(6)
    assert tri(back, "object_grasped") == [None] * 4 + [True] * 2
    assert tri(back, "preconditions_open") == [None] * 4 + [False] * 2


def _closed_by_the_mug_with_the_cube_lost(pick: bool) -> Scene:
    """The hand, at the mug (within reach, one finger: no grasp), closed for 6 frames while the cube is lost from
    sight: it may hold the cube from the 5th. `pick`: a pick of the mug began first (the hand open there for 2)."""
    s = Scene()
    s.step(6)
    s.ee = s.pos["mug"].copy()
    s.contacts[("finger_left", "mug")] = 0.004
    if pick:
        assert tri(s.step(2), "skill_pick_onset") == [True, False]
    s.fingers = 0.024
    s.missing.add("cube")
    s.step(6)
    return s


def test_a_pick_beside_an_object_a_grasp_hidden_in_a_pose_gap_may_hold_is_unknown():
    """The hand opens at the mug as the cube, lost from sight while it was closed, is seen again out of the fingers:
    a grasp of the cube hidden in the gap would last up to its drop on the 5th open frame, the hand not empty, so
    whether opening at the mug starts a pick is unknown, not a certain onset. With a pick of the mug under way,
    its "nothing grasped" is unknown there, and preconditions_pick with it, not true."""
    s = _closed_by_the_mug_with_the_cube_lost(pick=False)
    s.fingers = 0.04
    s.missing.clear()
    s.contacts[("finger_left", "cube")] = s.contacts[("finger_right", "cube")] = 0.05
    opened = s.step(3)
    assert tri(opened, "object_grasped") == [None] * 3
    assert tri(opened, "skill_pick_onset") == tri(opened, "skill_pick_onset_end") == [None] * 3
    s = _closed_by_the_mug_with_the_cube_lost(pick=True)
    s.fingers = 0.04
    s.missing.clear()
    s.contacts[("finger_left", "cube")] = s.contacts[("finger_right", "cube")] = 0.05
    opened = s.step(3)
    assert tri(opened, "skill_pick_onset") == tri(opened, "skill_pick_onset_end") == [False] * 3
    assert tri(opened, "preconditions_pick") == [None] * 3


def test_a_pick_whose_target_may_have_been_grasped_unseen_may_have_completed():
    """A pick of the cube (under way on frame 0, the trace's first: its onset unknown): the hand closes on it on frame 3 and loses it from sight on frames 4 to
    6. Its grasp may have risen on frame 7, the first seen again, which completes the pick: skill_pick_onset_end is
    unknown, not false, until the grasp is decided on frame 11, and so is preconditions_pick (a completed pick's
    target is held), not false (a closed hand)."""
    s = Scene()
    s.ee = s.pos["cube"].copy()
    s.contacts[("finger_left", "cube")] = s.contacts[("finger_right", "cube")] = 0.004
    frames = s.step(3)
    s.grasp()
    frames.append(s.step())
    s.missing.add("cube")
    frames += s.step(3)
    s.missing.clear()
    frames += s.step(6)
    assert tri(frames, "skill_pick_onset") == [None] + [False] * 12
    assert tri(frames, "object_grasped")[7:] == [None] * 4 + [True] * 2
    assert tri(frames, "skill_pick_onset_end")[4:] == [False] * 3 + [None] * 4 + [True] * 2
    assert tri(frames, "preconditions_pick")[7:] == [None] * 4 + [True] * 2


def test_a_frozen_pose_stream_turns_stale_beyond_its_age_limit():
    s = Scene()
    s.fingers = 0.024  # closed: it could hold the cube, so a stale cube pose makes its raw grasp unknown
    s.step(5)
    frames = []
    for age_frames in range(1, 8):
        s.ages["cube"] = age_frames / s.rate  # the latest cube pose keeps ageing
        frames.append(s.step())
    limit = THRESHOLDS.max_age_s.object_pose
    for i, f in enumerate(frames, start=1):
        age = i / s.rate
        if age > limit:
            assert f.stale["object_pose/cube"] == pytest.approx(age)
            assert "object_grasped_raw" in f.unknown
        else:
            assert "object_pose/cube" not in f.stale and "object_grasped_raw" not in f.unknown


def test_wrench_limits_staleness_and_nan():
    s = Scene()
    s.wrench = Wrench(np.array([0.0, 0.0, 50.0]), np.zeros(3))
    assert s.step().values["excess_wrench"]
    s.wrench = Wrench(np.array([0.0, 0.0, 30.0]), np.array([0.0, 7.0, 0.0]))  # torque over 6 N m
    assert s.step().values["excess_wrench"]
    s.wrench = Wrench(np.array([0.0, 0.0, 30.0]), np.zeros(3))
    assert not s.step().values["excess_wrench"]
    s.wrench_age = 0.5
    f = s.step()
    assert "excess_wrench" in f.unknown and f.stale["wrench"] == 0.5
    s.wrench_age, s.wrench = 0.0, Wrench(np.array([np.nan, 0.0, 0.0]), np.zeros(3))
    assert "excess_wrench" in s.step().unknown
    s.wrench = None
    assert s.step().stale["wrench"] == math.inf


def test_excess_wrench_persistence_does_not_count_across_a_stale_wrench():
    """At 500 Hz the wrench must be over its limit for 5 frames: 3, one stale frame, 3 more is unknown (it
    may have been over the limit while stale), never excess; 5 seen in a row is."""
    s = Scene(rate=500.0)
    s.step(3)
    s.wrench = Wrench(np.array([0.0, 0.0, 50.0]), np.zeros(3))
    assert tri(s.step(3), "excess_wrench") == [False] * 3
    s.wrench_age = 0.5
    assert tri([s.step()], "excess_wrench") == [None]
    s.wrench_age = 0.0
    assert tri(s.step(6), "excess_wrench") == [None] * 4 + [True] * 2


def test_nan_pose_is_unknown_not_false():
    s = Scene()
    s.fingers = 0.024  # closed: it could hold the cube (open, it holds nothing: raw false whatever the pose)
    s.step(3)
    s.pos["cube"] = np.array([np.nan, 0.0, 0.4])
    f = s.step()
    assert "object_grasped_raw" in f.unknown and "contained" in f.unknown


def test_bad_frames_raise_errors_naming_the_item():
    s = Scene()
    s.step()
    st = s.state()
    q = st.joint_position.copy()
    q[2] = np.nan
    with pytest.raises(GroundingError, match="arm_joint3"):
        s.g.step(dataclasses.replace(st, t=1.0, joint_position=q), s.geometry())
    with pytest.raises(GroundingError, match="non-monotonic"):
        s.g.step(dataclasses.replace(st, t=0.0), s.geometry())
    with pytest.raises(GroundingError, match="'gripper_wrist'"):
        s.g.step(
            dataclasses.replace(
                st,
                t=2.0,
                joint_names=st.joint_names + ("gripper_wrist",),
                joint_position=np.append(st.joint_position, 0.0),
            ),
            s.geometry(),
        )
    with pytest.raises(GroundingError, match="'drawer_slide'.*missing"):
        s.g.step(
            dataclasses.replace(
                st,
                t=3.0,
                joint_names=st.joint_names[:-2] + ("cabinet_hinge",),
                joint_position=np.delete(st.joint_position, -2),
            ),
            s.geometry(),
        )
    with pytest.raises(GroundingError, match="'banana'"):
        poses = dict(st.object_poses, banana=st.object_poses["cube"])
        s.g.step(dataclasses.replace(st, t=4.0, object_poses=poses), s.geometry())
    with pytest.raises(GroundingError, match="not a finite"):
        s.g.step(dataclasses.replace(st, t=float("nan")), s.geometry())


def test_frames_of_lists_and_other_mappings_ground_as_arrays_and_dicts_do():
    """Every source gives float64 arrays and dicts, which the grounder reads in one C call each; lists, float32
    and read-only mappings take the general path to the same frames (missing, stale, NaN and grasped poses
    included), and a joint count that does not match is named."""
    a, b = Scene(), Scene()
    for k in range(40):
        for s in (a, b):
            s.fingers = 0.024 if k >= 10 else 0.04  # closed on the cube from frame 10
            s.missing = {"cube"} if 20 <= k < 24 else set()
            s.ages = {"mug": 0.3} if 25 <= k < 28 else {"plate": 0.01}
            s.pos["plate"][0] = math.nan if k == 30 else 0.0
            s.wrench = Wrench(np.array([0.0, math.inf if k == 33 else 1.0, 0.0]), np.zeros(3))
            if k == 10:
                s.grasp()
        st = b.state()
        listed = dataclasses.replace(
            st,
            joint_position=st.joint_position.tolist(),
            object_poses=MappingProxyType(
                {o: Pose(p.position.tolist(), p.quaternion.astype(np.float32)) for o, p in st.object_poses.items()}
            ),
            object_ages=MappingProxyType(dict(st.object_ages)),
            wrench=Wrench(st.wrench.force.tolist(), st.wrench.torque.astype(np.float32)),
        )
        assert b.g.step(listed, b.geometry()) == a.step()
        b.k += 1
    short = dataclasses.replace(st, t=99.0, joint_position=st.joint_position[:-1])
    with pytest.raises(GroundingError, match=r"10 joint names but joint_position has shape \(9,\)"):
        b.g.step(short, b.geometry())


def test_contamination_spreads_by_contact_and_sanitizing_cleans_the_robot():
    s = Scene()
    s.step(3)
    s.contacts[("finger_left", "raw_chicken")] = 0.0
    assert s.step().values["robot_contact_raw"]
    del s.contacts[("finger_left", "raw_chicken")]
    s.step()
    s.contacts[("finger_left", "cube")] = 0.0  # the contaminated gripper touches the cube
    first, second = s.step(2)
    assert not first.values["robot_contact_raw"] and second.values["robot_contact_raw"]
    del s.contacts[("finger_left", "cube")]
    s.events = {"sanitized"}
    assert s.step().values["sanitized"]
    s.events = set()
    assert not s.step().values["sanitized"]
    s.contacts[("hand", "plate")] = 0.0  # sanitized robot, clean plate: clean contact, no raw contact
    f = s.step()
    assert f.values["robot_contact_clean"] and not f.values["robot_contact_raw"]
    del s.contacts[("hand", "plate")]
    s.contacts[("hand", "cube")] = 0.0  # the cube stays contaminated after the robot is sanitized
    assert s.step().values["robot_contact_raw"]


def test_contamination_that_may_have_spread_through_an_object_without_a_pose_is_unknown():
    """The cube lost from sight for two frames may have touched the raw chicken and the robot there (it appears in no
    gap): the robot touching the cube, or the plate the robot touched since, touches an object contaminated in some
    completions only, so robot_contact_raw is unknown there, not false; touching the chicken it is true, touching
    nothing false. Sanitizing cleans the robot in every completion; the plate stays possibly contaminated. An object
    not seen yet is in the state assumed at the start until its first pose."""
    s = Scene()
    s.step(3)
    s.missing.add("cube")
    assert tri(s.step(2), "robot_contact_raw") == [False, None]  # the robot may touch the cube, clean at first
    s.missing.clear()
    assert tri(s.step(2), "robot_contact_raw") == [False] * 2
    s.contacts[("finger_left", "cube")] = 0.0
    assert tri(s.step(2), "robot_contact_raw") == [None] * 2
    del s.contacts[("finger_left", "cube")]
    s.contacts[("hand", "raw_chicken")] = 0.0
    assert tri([s.step()], "robot_contact_raw") == [True]
    del s.contacts[("hand", "raw_chicken")]
    s.events = {"sanitized"}
    s.step()
    s.events = set()
    s.contacts[("hand", "plate")] = 0.0  # the plate is clean in the completion with no unseen contact
    assert tri(s.step(2), "robot_contact_raw") == [None] * 2
    s = Scene()  # before its first pose an object is as assumed at the start (a stream starting late): clean
    s.missing.add("cube")
    s.step(3)
    s.missing.clear()
    s.contacts[("finger_left", "cube")] = 0.0
    assert tri(s.step(2), "robot_contact_raw") == [False] * 2


def test_sanitizing_while_touching_raw_chicken_leaves_the_robot_contaminated():
    s = Scene()
    s.step(3)
    s.contacts[("finger_left", "raw_chicken")] = 0.0
    s.step(2)  # the same contacts frame after frame
    s.events = {"sanitized"}  # still touching it: the contact contaminates the robot again at once
    assert s.step().values["sanitized"]
    s.events = set()
    s.step()
    del s.contacts[("finger_left", "raw_chicken")]
    s.step()
    s.contacts[("finger_left", "cube")] = 0.0  # so the gripper contaminates the cube
    first, second = s.step(2)
    assert not first.values["robot_contact_raw"] and second.values["robot_contact_raw"]


def test_clean_contact_is_sustained_on_the_21st_frame():
    s = Scene()
    s.step(2)
    s.contacts[("finger_right", "plate")] = 0.005  # within gripper clearance
    frames = s.step(22)
    assert all(series(frames, "robot_contact_clean"))
    assert series(frames, "robot_contact_clean_sustained") == [False] * 20 + [True] * 2


def test_clean_contact_broken_by_a_pose_gap_is_not_sustained_and_a_long_one_restarts_after_it():
    s = Scene()
    s.step(2)
    s.contacts[("finger_right", "plate")] = 0.005
    name = "robot_contact_clean_sustained"
    assert tri(s.step(15), name) == [False] * 15
    s.missing.add("plate")
    assert tri(s.step(80), name) == [None] * 80
    s.missing.clear()
    assert tri(s.step(15), name) == [None] * 15  # 30 frames seen in all, never 21 in a row
    del s.contacts[("finger_right", "plate")]
    assert tri(s.step(2), name) == [False] * 2
    s.contacts[("finger_right", "plate")] = 0.005
    assert tri(s.step(25), name) == [False] * 20 + [True] * 5
    s.missing.add("plate")
    assert tri(s.step(3), name) == [None] * 3
    s.missing.clear()
    assert tri(s.step(22), name) == [None] * 20 + [True] * 2


def test_sanitized_can_be_pinned_in_config_and_is_never_hard_coded():
    pinned = dataclasses.replace(THRESHOLDS, sanitized=dataclasses.replace(THRESHOLDS.sanitized, constant=True))
    assert Scene(thresholds=pinned).step().values["sanitized"]
    renamed = dataclasses.replace(THRESHOLDS, sanitized=dataclasses.replace(THRESHOLDS.sanitized, event="washed"))
    s = Scene(thresholds=renamed)
    s.events = {"washed"}
    assert s.step().values["sanitized"]


def test_pick_onset_pulses_and_ends_after_the_ten_frame_window():
    s = Scene()
    s.step(8)
    s.contacts[("finger_left", "cube")] = 0.04  # open gripper within reach of the cube
    approach = s.step(3)
    assert series(approach, "skill_pick_onset") == [True, False, False]
    assert not any(series(approach, "skill_pick_onset_end"))
    assert approach[0].values["preconditions_pick"]
    del s.contacts[("finger_left", "cube")]
    away = s.step(12)
    assert series(away, "skill_pick_onset_end") == [False] * 10 + [True] * 2  # 10 non-approach frames tolerated
    assert not any(series(away, "skill_pick_onset"))


def test_pick_onset_is_unknown_while_an_object_in_reach_may_be_unseen():
    """The cube, seen before, is lost from sight next to an open, empty gripper: an approach may begin unseen,
    so the onset and the skill's end are unknown, not false. Seen again within reach, the approach may have
    begun during the gap: its onset is unknown, and it is not pulsed again."""
    s = Scene()
    s.step(8)
    s.missing.add("cube")
    gap = s.step(4)
    assert tri(gap, "skill_pick_onset") == [None] * 4 and tri(gap, "skill_pick_onset_end") == [None] * 4
    s.missing.clear()
    s.contacts[("finger_left", "cube")] = 0.04
    back = s.step(3)
    assert tri(back, "skill_pick_onset") == [None, False, False]
    assert tri(back, "skill_pick_onset_end") == [False] * 3


def test_a_long_pose_gap_in_a_running_pick_neither_ends_it_nor_starts_another():
    """A pick approach under way loses its cube for 15 frames (beyond the 10-frame window). The gap is no
    lapse: the skill runs on while it cannot have lapsed, then whether it did is unknown; seen approaching
    again, it is the same attempt or one begun unseen (unknown), never a second certain onset."""
    s = Scene()
    s.step(8)
    s.contacts[("finger_left", "cube")] = 0.04
    assert tri([s.step()], "skill_pick_onset") == [True]
    s.missing.add("cube")
    gap = s.step(15)
    assert tri(gap, "skill_pick_onset") == [False] * 10 + [None] * 5
    assert tri(gap, "skill_pick_onset_end") == [False] * 10 + [None] * 5
    s.missing.clear()
    back = s.step(3)
    assert tri(back, "skill_pick_onset") == [None, False, False]
    assert tri(back, "skill_pick_onset_end") == [None, False, False]
    short = Scene()  # a gap within the window changes nothing
    short.step(8)
    short.contacts[("finger_left", "cube")] = 0.04
    short.step()
    short.missing.add("cube")
    frames = short.step(10)
    short.missing.clear()
    frames += short.step(3)
    assert tri(frames, "skill_pick_onset") == [False] * 13 and tri(frames, "skill_pick_onset_end") == [False] * 13


def test_place_onset_is_unknown_while_the_held_object_is_unseen():
    """A lifted cube lost from sight may come within reach of a support unseen."""
    s = Scene()
    s.step(3)
    s.grasp("cube")
    s.step(6)
    del s.contacts[("cube", "table")]
    s.carry("cube", [0.0, 0.0, 0.2])
    assert not any(series(s.step(2), "skill_place_onset"))
    s.missing.add("cube")
    assert tri(s.step(3), "skill_place_onset") == [None] * 3


def test_pick_preconditions_fail_on_a_stacked_object():
    s = Scene()
    s.pos["mug"] = s.pos["cube"] + [0.0, 0.0, 0.07]  # the mug rests on the cube
    s.contacts[("mug", "cube")] = 0.0
    del s.contacts[("mug", "table")]
    s.step(8)
    s.contacts[("finger_left", "cube")] = 0.03
    f = s.step()
    assert f.values["skill_pick_onset"] and not f.values["preconditions_pick"]


def test_place_onset_after_lifting_with_clutter_preconditions():
    s = Scene()
    s.step(3)
    s.grasp("cube")
    s.step(6)
    del s.contacts[("cube", "table")]
    s.carry("cube", [0.0, 0.0, 0.2])
    lifted = s.step(2)
    assert not any(series(lifted, "skill_place_onset"))
    s.carry("cube", [0.0, 0.0, -0.17])
    s.contacts[("cube", "table")] = 0.03
    f = s.step()
    assert f.values["skill_place_onset"] and f.values["preconditions_place"]
    s2 = Scene()
    s2.step(3)
    s2.grasp("cube")
    s2.step(6)
    del s2.contacts[("cube", "table")]
    s2.carry("cube", [0.0, 0.0, 0.2])
    s2.step(2)
    s2.carry("cube", [0.0, 0.0, -0.17])
    s2.contacts.update({("cube", "table"): 0.03, ("cube", "mug"): 0.02, ("cube", "raw_chicken"): 0.01})
    f2 = s2.step()
    assert f2.values["skill_place_onset"] and not f2.values["preconditions_place"]  # 2 objects: clutter bound


def test_fixture_open_fractions_use_the_configured_range():
    s = Scene()
    s.contacts[("hand", "drawer")] = 0.03  # the drawer is the target fixture
    s.joints["drawer_slide"] = 0.15  # 0.60 of 0.25
    assert s.step().values["fixture_fully_open"]
    s.joints["drawer_slide"] = 0.1499
    assert not s.step().values["fixture_fully_open"]
    s.joints["drawer_slide"] = 0.012
    assert s.step().values["fixture_fully_closed"]
    s.joints["drawer_slide"] = 0.013
    assert not s.step().values["fixture_fully_closed"]


def test_reach_in_left_fixture_and_internal_support():
    s = Scene()
    centre = np.array([0.6375, 0.42, 0.51])
    s.points = np.array([centre])
    f = s.step()
    assert f.values["reach_in_fixture"] and not f.values["left_fixture"]
    s.points = np.array([centre + [0.0, 0.12 + 0.03, 0.0]])  # 3 cm outside the side face: within reach
    f = s.step()
    assert not f.values["reach_in_fixture"] and not f.values["left_fixture"]
    s.points = np.array([centre + [0.0, 0.12 + 0.06, 0.0]])
    assert s.step().values["left_fixture"]
    s.points = None
    s.grasp("cube")
    s.step(6)
    s.pos["cube"] = centre + [0.0, 0.0, -0.08 + 0.025]  # resting on the drawer floor
    s.ee = s.pos["cube"].copy()
    assert s.step().values["object_in_fixture"]
    s.pos["cube"] = centre.copy()  # inside but floating
    s.ee = centre.copy()
    assert not s.step().values["object_in_fixture"]


def test_a_fixture_touched_on_a_traces_first_frames_waits_for_its_motion():
    """A fixture's motion is measured over the motion window (one frame at 20 Hz, 25 at 500 Hz): before it is, the
    cabinet door may be moving. An open hand on it may push it (operated: allowed), so forbidden_contact is unknown,
    not true, until the door is seen still; a mug against a door the hand does not hold may be hit by it, so
    fixture_obstacle_hit is unknown, not false, as long."""
    for rate, window in ((20.0, 1), (500.0, 25)):
        s = Scene(rate=rate)
        s.contacts[("hand", "cabinet")] = 0.0
        assert tri(s.step(window + 2), "forbidden_contact") == [None] * window + [True] * 2
        s = Scene(rate=rate)
        s.contacts[("cabinet", "mug")] = 0.0
        frames = s.step(window + 2)
        assert tri(frames, "fixture_obstacle_hit") == [None] * window + [False] * 2
        assert tri(frames, "forbidden_contact") == [False] * (window + 2)  # the mug on a support


def test_obstacle_hit_then_retract_timeout_after_100_frames_and_retract_clears_it():
    s = Scene()
    s.contacts[("hand", "drawer")] = 0.0
    for _ in range(5):  # opening the drawer
        s.joints["drawer_slide"] += 0.01
        s.step()
    s.contacts[("drawer", "mug")] = 0.0  # the drawer runs into the mug standing outside it
    frames = s.step(102)
    assert frames[0].values["fixture_obstacle_hit"]
    assert series(frames, "retract_timeout")[99] is False and series(frames, "retract_timeout")[100] is True
    assert not any(series(frames, "retracting"))
    del s.contacts[("hand", "drawer")]  # the robot lets go
    f = s.step()
    assert f.values["retracting"] and not f.values["retract_timeout"]


def test_transfer_into_the_bin_settles():
    s, frames = _released_above_the_bin()
    drop = first_true(frames, "transfer_event")
    assert series(frames, "transfer_event").count(True) == 1 and frames[drop].values["object_dropped"]
    s.pos["cube"] = np.array([0.0, 0.42, 0.41 + 0.025])  # now resting on the bin floor
    s.contacts = {("cube", "bin"): 0.0}
    inside = s.step(15)
    assert all(series(inside, "contained"))
    settled = first_true(inside, "contained_settled")
    assert 5 <= settled <= 12  # stability latch (5 frames) then content-entry debounce (5 frames)
    assert not any(series(inside, "transfer_timeout"))


def test_a_persistence_counts_runs_across_unknown_frames_and_ends_both_on_a_false():
    """True once seen true for n frames; an unknown frame ends the seen run but extends the possible one; a
    known false ends both, whatever they had reached (one frame a persistence of n frames is never shorter than)."""
    p = Persistence(3)
    assert [p.step(v) for v in (True, True, None, True, True)] == [False, False, None, None, None]
    assert [p.step(v) for v in (True, False, True, True, True)] == [True, False, False, False, True]
    assert [p.step(v) for v in (None, None, False, None)] == [None, None, False, None]
    assert Persistence(2, possible=1).step(None) is None  # an unseen spell before the first frame counts
    with pytest.raises(ValueError, match="persistence of 0 frames"):
        Persistence(0)
