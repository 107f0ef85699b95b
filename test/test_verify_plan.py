"""Plan level on hand-written plans: safety violations with their step, executability, BFS refinement."""

import json
import textwrap
from pathlib import Path

import pytest

from safety_monitor.cli import main
from safety_monitor.errors import SpecError
from safety_monitor.specs.model import compile_specs, load_specs
from safety_monitor.verify.plan import check_plan, load_plan, parse_plan

SPECS = """
predicates: [gripper_open, holding_chicken, holding_plate, near_chicken, near_plate, sanitized, raw_contact,
             clean_contact, stove_on, in_cabinet, cabinet_open]
properties:
  - name: no_clean_after_raw
    category: cross_contamination
    formula: "G(raw_contact -> ((!clean_contact U sanitized) | G !clean_contact))"
  - name: stove_turned_off
    category: mechanism
    formula: "G(stove_on -> F !stove_on)"
  - name: reach_in_only_when_open
    category: enclosure_access
    formula: "G(in_cabinet -> cabinet_open)"
"""

ACTIONS = """
initial: {gripper_open: true}
actions:
  go_chicken: {eff: {near_chicken: true, near_plate: false}}
  go_plate: {eff: {near_plate: true, near_chicken: false}}
  grasp_chicken: {pre: "gripper_open & near_chicken", eff: {holding_chicken: true, gripper_open: false, raw_contact: true}}
  release: {pre: "!gripper_open", eff: {gripper_open: true, holding_chicken: false, holding_plate: false}}
  wash: {pre: gripper_open, eff: {sanitized: true, raw_contact: false}}
  grasp_plate: {pre: {gripper_open: true, near_plate: true}, eff: {holding_plate: true, gripper_open: false, clean_contact: true}}
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    path = tmp_path_factory.mktemp("specs") / "specs.yaml"
    path.write_text(SPECS)
    return compile_specs(load_specs(path))


def plan_from(text, name="plan.yaml"):
    import yaml

    return parse_plan(yaml.safe_load(textwrap.dedent(text)), name)


def test_safe_executable_action_plan(compiled):
    plan = plan_from(ACTIONS + "plan: [go_chicken, grasp_chicken, release, wash, go_plate, grasp_plate]\n")
    report = check_plan(plan, compiled)
    assert report.executable is True and report.violations == ()
    assert report.checked == ("no_clean_after_raw",)  # the others read predicates this plan never sets
    assert dict(report.unchecked)["stove_turned_off"] == "the plan gives no value to stove_on"
    assert report.states[-1]["clean_contact"] and report.states[-1]["sanitized"]


def test_unsafe_plan_reports_step_and_deciding_values(compiled):
    plan = plan_from(ACTIONS + "plan: [go_chicken, grasp_chicken, release, go_plate, grasp_plate]\n")
    report = check_plan(plan, compiled)
    assert report.executable is True
    (cx,) = report.violations
    assert cx.property == "no_clean_after_raw" and cx.origin == "plan" and cx.category == "cross_contamination"
    assert cx.decided_at == 5 and report.labels[5] == "after grasp_plate"
    last = cx.frames[-1]
    assert last.values == {"clean_contact": True, "raw_contact": True, "sanitized": False}
    assert set(last.decisive) == {"clean_contact", "sanitized"}  # not touching, or having washed, avoids it
    assert "step 5" in cx.sentence and cx.sentence.endswith(".")
    assert "the values after grasp_plate leave" in cx.sentence, cx.sentence
    assert [f.frame for f in cx.frames] == [0, 1, 2, 3, 4, 5]


def test_missing_precondition_makes_the_plan_not_executable(compiled):
    plan = plan_from(ACTIONS + "plan: [go_plate, grasp_chicken, release]\n")
    report = check_plan(plan, compiled)
    assert report.executable is False
    assert report.executability == (
        "step 2 (grasp_chicken): precondition (gripper_open & near_chicken) fails "
        "(gripper_open=true, near_chicken=false)",
    )


def test_milestones_are_refined_by_breadth_first_search(compiled):
    plan = plan_from(
        ACTIONS
        + """
milestones:
  - {holding_chicken: true}
  - {sanitized: true}
  - {holding_plate: true, clean_contact: true}
"""
    )
    report = check_plan(plan, compiled)
    assert report.executable is True
    assert report.refinement == (("go_chicken", "grasp_chicken"), ("release", "wash"), ("go_plate", "grasp_plate"))
    assert report.violations == () and report.unsafe_refinements == ()
    assert report.milestone_steps == (2, 4, 6) and len(report.states) == 7  # every action's state is a step
    assert report.labels[1] == "after go_chicken on the way to milestone 1"
    assert report.labels[2] == "after grasp_chicken at milestone 1"


# placing the plate ends the clean contact: the milestone states alone never show raw and clean contact together
PLACE = (
    "  place_plate: {pre: holding_plate, eff: {plate_placed: true, holding_plate: false, gripper_open: true, "
    "clean_contact: false}}\n"
)


def test_a_refinement_through_an_unsafe_state_is_a_violation_at_that_step(compiled):
    plan = plan_from(ACTIONS + PLACE + "milestones: [{raw_contact: true}, {plate_placed: true}]\n")
    report = check_plan(plan, compiled)
    assert report.executable is True
    assert report.refinement[1] == ("go_plate", "release", "grasp_plate", "place_plate"), report.refinement
    (cx,) = report.violations
    assert cx.property == "no_clean_after_raw" and cx.decided_at == 5
    assert report.labels[5] == "after grasp_plate on the way to milestone 2"
    assert "violated at step 5 of plan.yaml" in cx.sentence, cx.sentence
    assert "the values after grasp_plate on the way to milestone 2 leave" in cx.sentence, cx.sentence
    assert report.milestone_steps == (2, 6)
    # washing first takes one action more: every shortest refinement breaks the property, and the report says so
    assert report.unsafe_refinements == (2,)
    assert report.executability[1].endswith("(each of the shortest refinements breaks a property)")


def test_unreachable_milestone(compiled):
    plan = plan_from(ACTIONS + "milestones: [{holding_chicken: true}, {stove_on: true}]\n")
    report = check_plan(plan, compiled)
    assert report.executable is False
    assert report.executability[-1].startswith(
        "milestone 2 stove_on=true: unreachable from step 2 (after grasp_chicken at milestone 1)"
    )


def test_milestones_without_model_and_end_of_plan_violation(compiled):
    plan = plan_from("""
initial: {stove_on: false, in_cabinet: false, cabinet_open: false}
milestones: [{stove_on: true}, {cabinet_open: true}, {in_cabinet: true}]
goal: in_cabinet
""")
    report = check_plan(plan, compiled)
    assert report.executable is None and report.goal_reached is True
    (cx,) = report.violations
    assert cx.property == "stove_turned_off" and cx.decided_at == 3
    assert "the plan ends (milestone 3) before" in cx.sentence
    assert cx.frames[-1].decisive == ("stove_on",)


def test_an_obligation_open_at_the_end_says_since_when_and_what_would_discharge_it(compiled, tmp_path):
    plan = plan_from("""
initial: {stove_on: false, in_cabinet: false, cabinet_open: false}
milestones: [{stove_on: true}, {cabinet_open: true}]
""")
    (cx,) = check_plan(plan, compiled).violations
    assert "pending since step 1 (milestone 1)" in cx.sentence, cx.sentence
    assert cx.sentence.endswith("and one more step with stove_on=false would satisfy it."), cx.sentence
    # a strong next at the end: no flip of the last step's values alone satisfies it, the plan must go on
    specs = tmp_path / "specs.yaml"
    specs.write_text(
        "predicates: [hit, retracting, stowed]\nproperties:\n"
        "  - {name: retract_then_stow, category: mechanism, formula: 'G(hit -> X(retracting & X stowed))'}\n"
    )
    plan = plan_from("""
initial: {hit: false, retracting: false, stowed: false}
milestones: [{hit: true}, {hit: false, retracting: true}, {retracting: false, stowed: true}, {hit: true}]
""")
    (cx,) = check_plan(plan, compile_specs(load_specs(specs))).violations
    assert cx.decided_at == 4 and "pending since step 4;" in cx.sentence, cx.sentence
    assert cx.sentence.endswith(
        " and 2 more steps (hit=false, retracting=true, then the same values) would satisfy it."
    )


def test_reach_in_before_opening_is_caught_at_that_step(compiled):
    plan = plan_from("""
initial: {stove_on: false, in_cabinet: false, cabinet_open: false}
milestones: [{in_cabinet: true}, {cabinet_open: true}]
""")
    (cx,) = check_plan(plan, compiled).violations
    assert cx.property == "reach_in_only_when_open" and cx.decided_at == 1


def test_a_goal_may_read_a_predicate_nothing_sets(compiled):
    """It is false there, as in every state: the goal was once evaluated on states without it (KeyError)."""
    plan = plan_from("initial: {gripper_open: true}\nmilestones: [{gripper_open: false}]\ngoal: '!never_set'\n")
    assert check_plan(plan, compiled).goal_reached is True


@pytest.mark.parametrize(
    "text, message",
    [
        ("plan: [fly]\nactions: {}\n", "undefined action"),
        ("plan: []\nmilestones: []\n", "exactly one of"),
        ("milestones: [{a: yes_please}]\n", "milestone 1"),
        ("milestones: []\nactions: {x: {pre: 'F a', eff: {}}}\n", "must be propositional"),
        ("milestones: []\nplanz: 1\n", "unknown key"),
        # keys YAML reads as a number, a boolean and null: once a TypeError joining them into the message
        ("milestones: []\n3: x\non: 1\n~: 2\nplanz: 1\n", r"unknown key\(s\) 3, None, True, planz "),
    ],
)
def test_bad_plans_are_clear_errors(text, message):
    with pytest.raises(SpecError, match=message):
        plan_from(text)


def test_cli_plan_json_and_feedback(tmp_path, capsys):
    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS)
    plan = tmp_path / "plan.yaml"
    plan.write_text(ACTIONS + "plan: [go_chicken, grasp_chicken, release, go_plate, grasp_plate]\n")
    feedback = tmp_path / "feedback.json"
    assert main(["plan", str(plan), "--specs", str(specs), "--json", "--feedback", str(feedback)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["executable"] is True and report["violations"][0]["decided_at"] == 5
    fb = json.loads(feedback.read_text())
    assert fb["violations"] == 1 and fb["counterexamples"][0]["property"] == "no_clean_after_raw"
    assert load_plan(plan).steps[0] == "go_chicken"
    plan.write_text(ACTIONS + "plan: [go_chicken, grasp_chicken, release, wash, go_plate, grasp_plate]\n")
    assert main(["plan", str(plan), "--specs", str(specs)]) == 0
    assert "1 properties checked, 0 violated" in capsys.readouterr().out


def test_a_plan_that_checks_no_property_is_an_error(tmp_path, capsys):
    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS)
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "initial: {gripper_open: true}\nactions: {grab: {eff: {holding: true, raw_contact: true}}}\nplan: [grab]\n"
    )
    assert main(["plan", str(plan), "--specs", str(specs)]) == 2
    err = capsys.readouterr().err
    assert f"{plan}: checks none of the 3 properties of {specs}" in err, err
    assert "e.g. no_clean_after_raw: the plan gives no value to clean_contact, sanitized" in err, err
    assert "predicates outside the spec vocabulary: gripper_open, holding" not in err  # gripper_open is in it
    assert "predicates outside the spec vocabulary: holding" in err, err


def test_the_docs_plan_example_checks_a_real_property(tmp_path, capsys):
    root = Path(__file__).resolve().parents[1]
    section = (root / "docs" / "verify.md").read_text().split("## `safety-monitor plan`", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    plan = tmp_path / "plan.yaml"
    plan.write_text(example)
    assert main(["plan", str(plan), "--specs", str(root / "config" / "specs.yaml"), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["executable"] and report["checked"] == ["no_clean_contact_after_raw"]
    assert report["violations"][0]["decided_at"] == 5
    plan.write_text(example.replace("release, go_plate", "release, wash, go_plate"))
    assert main(["plan", str(plan), "--specs", str(root / "config" / "specs.yaml")]) == 0


def test_among_the_shortest_refinements_one_that_breaks_no_property_is_preferred(compiled):
    sink = "  go_plate_past_sink: {pre: gripper_open, eff: {near_plate: true, near_chicken: false, sanitized: true}}\n"
    plan = plan_from(ACTIONS + PLACE + sink + "milestones: [{raw_contact: true}, {plate_placed: true}]\n")
    report = check_plan(plan, compiled)
    # as short as go_plate, release, grasp_plate, place_plate (found first), and washed on the way
    assert report.refinement[1] == ("release", "go_plate_past_sink", "grasp_plate", "place_plate")
    assert report.executable is True and report.violations == () and report.unsafe_refinements == ()
    assert report.states[5]["clean_contact"] and report.states[5]["sanitized"]


def test_cli_milestone_plan_reports_the_refined_steps(tmp_path, capsys):
    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS)
    plan = tmp_path / "plan.yaml"
    plan.write_text(ACTIONS + PLACE + "milestones: [{raw_contact: true}, {plate_placed: true}]\n")
    assert main(["plan", str(plan), "--specs", str(specs)]) == 1
    out = capsys.readouterr().out
    assert f"{plan}: 2 milestones, 6 steps, executable" in out, out
    assert "breaks a property)" in out and "on the way to milestone 2" in out, out
    assert main(["plan", str(plan), "--specs", str(specs), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["milestone_steps"] == [2, 6] and report["unsafe_refinements"] == [2]
    assert report["violations"][0]["decided_at"] == 5
    assert report["steps"][5]["label"] == "after grasp_plate on the way to milestone 2"
    plan.write_text(ACTIONS + PLACE + "milestones: [{raw_contact: true}, {sanitized: true}, {plate_placed: true}]\n")
    assert main(["plan", str(plan), "--specs", str(specs)]) == 0
    assert "1 properties checked, 0 violated" in capsys.readouterr().out
