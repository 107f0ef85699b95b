"""The two-property spec file the monitor-node tests feed by hand (predicates `a` and `b`)."""

SPECS = """
predicates: [a, b]
properties:
  - name: never_a
    category: collision_contact
    formula: "G(!a)"
    recovery: "F(!a)"
  - name: b_then_not_a
    category: action_onset
    formula: "G(b -> !a)"
    recovery: "F(!b)"
"""
PROPS = ("never_a", "b_then_not_a")
