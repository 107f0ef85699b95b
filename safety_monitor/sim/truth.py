"""Ground truth of a scripted episode: how many grasps, releases, placements, skill attempts and fixture
operations its script makes, so the monitor's trigger counts (the denominators N) can be checked against it.

Each building block of a plan (a pick, a place, a drawer opening...) carries its own counts; a task's truth
is the sum of its blocks, and a fault states the truth of the episode it makes (an early release is a grasp
that ends in a loss, not a release).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class SkillAttempts:
    """Attempts per skill: each is one onset of `skill_<name>_onset`, however long the attempt lasts."""

    pick: int = 0
    place: int = 0
    open: int = 0
    close: int = 0

    def __add__(self, other: SkillAttempts) -> SkillAttempts:
        return SkillAttempts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


@dataclass(frozen=True)
class GroundTruth:
    """What one scripted episode does, counted as the script makes it."""

    grasps: int = 0  # objects taken into the gripper
    releases: int = 0  # grasps ended by opening the gripper on purpose
    losses: int = 0  # grasps ended without a release (the object fell or slid out)
    placements: int = 0  # objects set down on a support or into a container by opening the gripper
    transfers: int = 0  # placements into a container from above its floor (a dump)
    reach_ins: int = 0  # times the gripper enters an enclosure fixture
    fixture_operations: int = 0  # fixture openings and closings attempted by the arm (jammed ones too)
    skills: SkillAttempts = field(default_factory=SkillAttempts)

    def __add__(self, other: GroundTruth) -> GroundTruth:
        return GroundTruth(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def expected_edges(self) -> dict[str, int]:
        """Rising edges each event predicate must show over the episode (the triggers of the properties
        whose antecedent it is)."""
        s = self.skills
        return {
            "object_grasped": self.grasps,
            "object_dropped": self.releases + self.losses,
            "transfer_event": self.transfers,
            "reach_in_fixture": self.reach_ins,
            "skill_pick_onset": s.pick,
            "skill_place_onset": s.place,
            "skill_open_onset": s.open,
            "skill_close_onset": s.close,
        }


PICK = GroundTruth(grasps=1, skills=SkillAttempts(pick=1))
PLACE = GroundTruth(releases=1, placements=1, skills=SkillAttempts(place=1))
DUMP = PLACE + GroundTruth(transfers=1)
REACH_IN = GroundTruth(reach_ins=1)
LOSS = GroundTruth(losses=1)
OPEN = GroundTruth(fixture_operations=1, skills=SkillAttempts(open=1))
CLOSE = GroundTruth(fixture_operations=1, skills=SkillAttempts(close=1))
