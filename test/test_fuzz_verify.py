"""Hand-written inputs: edited plan files and CTL trace files end in exit 0 or 1 of `safety-monitor plan` and
`ctl`, or exit 2 with one line naming the file, never a traceback or an internal error; `ctl --json` names
each trajectory that breaks a formula alone, once; edited thresholds,
robot and topic mapping files load or fail naming the file (benchmarks/fuzz_inputs.py runs the long
campaign)."""

from hypothesis import example, given, settings
from test_fuzz_support import (
    CTL_FORMULAS,
    FUZZ,
    REPO,
    cli_outcome,
    config_outcome,
    ctl_json_outcome,
    doc_file,
    guarded,
    is_failure,
    json_traces,
    mutated_configs,
    mutated_plans,
    mutated_traces,
    trace_arguments,
    write_text_doc,
)

PICKS = tuple(doc_file("verify.md", name) for name in ("pick_1.jsonl", "pick_2.jsonl"))


@settings(FUZZ, max_examples=40)
@given(doc=mutated_plans())
def test_edited_plan_files(tmp_path, doc):
    plan = tmp_path / "plan.yaml"
    if not write_text_doc(plan, doc):
        return
    args = ["plan", "--specs", str(REPO / "config" / "specs.yaml"), str(plan)]
    outcome, detail = guarded(lambda: cli_outcome(args, (plan,)))
    assert not is_failure(outcome), (outcome, detail, doc)


@settings(FUZZ, max_examples=40)
@given(texts=mutated_traces())
def test_edited_ctl_trace_files(tmp_path, texts):
    files = (tmp_path / "pick_1.jsonl", tmp_path / "pick_2.jsonl")
    for path, text in zip(files, texts):
        path.write_text(text, newline="")
    args = ["ctl", *map(str, files), *[a for f in CTL_FORMULAS for a in ("--formula", f)]]
    outcome, detail = guarded(lambda: cli_outcome(args, files))
    assert not is_failure(outcome), (outcome, detail, texts)


@settings(FUZZ, max_examples=20)
@given(item=json_traces())
@example(item=("json", "twice", *PICKS))  # read twice: broken_by named pick_1 twice, "broken by 3 of 3"
@example(item=("json", "respelt", *PICKS))
def test_ctl_json_over_edited_trace_files(tmp_path, item):
    _, layout, *texts = item
    files = (tmp_path / "pick_1.jsonl", tmp_path / "pick_2.jsonl")
    (tmp_path / "sub").mkdir(exist_ok=True)
    for path, text in zip(files, texts):
        path.write_text(text, newline="")
    outcome, detail = guarded(lambda: ctl_json_outcome(trace_arguments(files, layout)))
    assert not is_failure(outcome), (outcome, detail, item)


@settings(FUZZ, max_examples=40)
@given(item=mutated_configs())
def test_edited_config_files(tmp_path, item):
    which, doc = item
    path = tmp_path / f"{which}.yaml"
    if not write_text_doc(path, doc):
        return
    outcome, detail = guarded(lambda: config_outcome(which, path))
    assert not is_failure(outcome), (outcome, detail, doc)
