"""Property classes (SENTINEL): state invariants, ordering constraints, other."""

import pytest

from safety_monitor.specs.classify import KINDS, Classification, classify
from safety_monitor.specs.ltlf import parse


@pytest.mark.parametrize(
    "formula, kind, reason",
    [
        ("G(!forbidden_contact_sustained)", "state_invariant", "every frame must satisfy"),
        ("G(reach_in_fixture -> fixture_fully_open)", "state_invariant", "every frame"),
        ("!F(collision)", "state_invariant", "every frame must satisfy !(collision)"),
        ("G(!a) & G(b -> c)", "state_invariant", "conjunction"),
        ("G(a & (b | c))", "state_invariant", "every frame"),
        ("G(stove_on -> F stove_off)", "ordering_constraint", "response: every stove_on must be followed by stove_off"),
        (
            "G(object_grasped -> ((object_sync U !object_grasped_raw) | G object_sync))",
            "ordering_constraint",
            "after object_grasped",
        ),
        (
            "G(fixture_obstacle_hit -> (!retract_timeout U retracting))",
            "ordering_constraint",
            "after fixture_obstacle_hit",
        ),
        (
            "G(object_dropped -> (object_released | (!object_left_gripper U object_grasped)))",
            "ordering_constraint",
            "whenever",
        ),
        ("G(!raw_contact | G !clean_contact)", "ordering_constraint", "after raw_contact, !(clean_contact) must hold"),
        ("!knife_used U hands_washed", "ordering_constraint", "precedence"),
        ("G(!a) & G(b -> F c)", "ordering_constraint", "invariants and ordering"),
        ("F(object_settled | settle_timeout)", "other", "reachability"),
        ("G(F a)", "other", "untriggered"),
        ("a & b", "other", "first frame"),
        ("G(!a) & F b", "other", "reachability"),
        ("X a", "other", "no invariant"),
    ],
)
def test_classes_and_reasons(formula, kind, reason):
    c = classify(parse(formula))
    assert c == kind and c.kind == kind and isinstance(c, str)
    assert reason in c.reason


def test_classification_is_a_plain_string_with_a_reason():
    c = Classification("other", "why")
    assert str(c) == "other" and c.reason == "why" and c in KINDS
    with pytest.raises(ValueError):
        Classification("liveness", "not a class")
