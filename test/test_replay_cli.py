"""`safety-monitor replay` as a user meets it: argument errors before any scoring, each bag scored once,
a reused report folder holding this run's outputs alone, blind bags said loudly, reports naming what
they used."""

import json
import shutil

import pytest

from safety_monitor.cli import main
from safety_monitor.cli import replay as replay_cli
from safety_monitor.io import messages as m
from safety_monitor.io.bag import BagWriter
from safety_monitor.replay.batch import summarize, unique_bags
from safety_monitor.replay.score import ReplayConfig, score_bag
from safety_monitor.sim.runner import run_episode

SPECS = """
predicates: [excess_wrench, object_grasped, object_sync, object_grasped_raw]
properties:
  - name: grasp_synced_until_release
    category: grasp_stability
    formula: "G(object_grasped -> ((object_sync U !object_grasped_raw) | G object_sync))"
  - name: no_excess_wrench
    category: collision_contact
    formula: "G(!excess_wrench)"
"""
RATE = 500.0
N = 60
FAST = ["--quiet", "--rate", "500", "--resamples", "50"]


@pytest.fixture(scope="module")
def state():
    return next(run_episode("pick_and_place_cube"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("replay_cli")


@pytest.fixture(scope="module")
def specs(folder):
    path = folder / "specs.yaml"
    path.write_text(SPECS)
    return str(path)


def write_bag(path, state, wrench=True):
    """A stationary workcell at 500 Hz; without `wrench`, no wrench topic (so no_excess_wrench is blind)."""
    with BagWriter(path) as w:
        for k in range(N):
            t = 100.0 + k / RATE
            if wrench:
                w.write_wrench("/wrist_wrench", t, state.wrench)
            for name, pose in state.object_poses.items():
                w.write_pose(f"/objects/{name}/pose", t, pose)
            w.write_joint_state("/joint_states", t, list(state.joint_names), state.joint_position, log_t=t)
    return path


@pytest.fixture(scope="module")
def bag(folder, state):
    return write_bag(folder / "runs" / "good", state)


def replay(*args, report=None):
    return main(["replay", *map(str, args), *FAST, *(["--report", str(report)] if report else [])])


# ------------------------------------------------------------------------- argument errors
@pytest.mark.parametrize(
    "option, text, expected",
    [
        ("--specs", None, "cannot read spec file"),
        ("--specs", "properties: [", "not valid YAML"),
        (
            "--specs",
            "predicates: [holding]\nproperties:\n  - {name: p, category: c, formula: 'G(!holding)'}\n",
            "the specs read predicates the grounder does not produce: holding; rescore a bag",
        ),
        (
            "--specs",
            "predicates: [object_relased]\nproperties:\n  - {name: p, category: c, formula: 'G(!object_relased)'}\n",
            "does not produce: object_relased (did you mean 'object_released'?); rescore a bag",
        ),
        ("--robot", None, "cannot read robot description"),
        ("--robot", "robot: 3\n", "robot must be a mapping"),
    ],
)
def test_a_bad_spec_or_robot_file_is_one_argument_error_before_any_bag(
    tmp_path, folder, state, specs, option, text, expected, capsys
):
    second = folder / "runs" / "second"
    if not second.exists():
        write_bag(second, state)
    path = tmp_path / "given.yaml"
    if text is not None:
        path.write_text(text)
    args = ["--specs", specs] if option == "--robot" else []
    assert replay(folder / "runs", option, path, *args) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == err.count("error:") == 1 and expected in err, err


def test_specs_the_grounder_cannot_serve_are_fine_for_recorded_predicates(tmp_path, capsys):
    path = tmp_path / "specs.yaml"
    path.write_text("predicates: [holding]\nproperties:\n  - {name: p, category: c, formula: 'G(!holding)'}\n")
    bag = tmp_path / "preds"
    with BagWriter(bag) as w:
        for k in range(N):
            w.write_predicates("/safety_monitor/predicates", m.PredicateSample({"holding": False}, 1 + k / RATE, k))
    assert replay(bag, "--specs", path, "--from-predicates") == 0


@pytest.mark.parametrize("where", ["file", "under_file", "unwritable"])
def test_a_report_path_that_cannot_be_written_is_refused_before_scoring(tmp_path, bag, specs, where, capsys):
    existing = tmp_path / "summary.md"
    existing.write_text("an earlier summary\n")
    report = {"file": existing, "under_file": existing / "report", "unwritable": "/proc/report"}[where]
    assert replay(bag, "--specs", specs, report=report) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"safety-monitor replay: error: --report {report}: ")
    assert existing.read_text() == "an earlier summary\n"


# ------------------------------------------------------------------------------ duplicates
def test_the_same_bag_given_twice_is_scored_once_with_a_warning(tmp_path, bag, specs, monkeypatch, capsys):
    monkeypatch.chdir(bag.parent)
    (tmp_path / "link").symlink_to(bag)
    mcap = next(bag.glob("*.mcap"))
    report = tmp_path / "report"
    assert replay(mcap, "good", "./good", tmp_path / "link", "--specs", specs, report=report) == 0
    out, err = capsys.readouterr()
    assert out.rstrip().endswith("1 of 1 bag(s) scored")
    assert [
        line.removeprefix("safety-monitor replay: warning: ") for line in err.splitlines() if "same bag" in line
    ] == [f"{name}: the same bag as good, scored once" for name in (mcap, "good", tmp_path / "link")]
    doc = json.loads((report / "report.json").read_text())
    assert doc["bags_total"] == 1 and [b["bag"] for b in doc["bags"]] == ["good"]


def test_a_bag_folder_wins_over_a_file_inside_it_and_distinct_files_stay(tmp_path):
    bag = tmp_path / "bag"
    bag.mkdir()
    (bag / "metadata.yaml").write_text("")
    part0, part1 = bag / "bag_0.mcap", bag / "bag_1.mcap"
    part0.write_bytes(b"")
    part1.write_bytes(b"")
    assert unique_bags([part0, part1]) == ([part0, part1], [])
    kept, notes = unique_bags([part0, tmp_path / "other", bag, part1])
    assert kept == [bag, tmp_path / "other"]
    assert notes == [f"{part0}: the same bag as {bag}, scored once", f"{part1}: the same bag as {bag}, scored once"]


# --------------------------------------------------------------------------- report folder
def test_a_reused_report_folder_holds_this_runs_plots_alone(tmp_path, bag, specs, capsys):
    report = tmp_path / "report"
    plots = report / "plots"
    plots.mkdir(parents=True)
    old = [plots / "timeline_001_episode_001.png", plots / "risk_by_category.png"]
    mine = [plots / "notes.png", plots / "timeline_draft.png", report / "notes.md"]
    for path in old + mine:
        path.write_bytes(b"kept?")
    assert replay(bag, "--specs", specs, report=report) == 0
    assert sorted(p.name for p in plots.iterdir()) == [
        "notes.png",
        "risk_by_category.png",
        "timeline_000_good.png",
        "timeline_draft.png",
    ]
    assert (plots / "risk_by_category.png").read_bytes()[:4] == b"\x89PNG"
    assert all(p.read_bytes() == b"kept?" for p in mine)
    assert replay(bag, "--specs", specs, "--no-plots", report=report) == 0
    assert sorted(p.name for p in plots.iterdir()) == ["notes.png", "timeline_draft.png"]
    assert "## Plots" not in (report / "summary.md").read_text()
    capsys.readouterr()


# ------------------------------------------------------------------------------- blind bags
def test_a_bag_scored_blind_is_a_warning_naming_what_was_not_seen(tmp_path, state, specs, capsys):
    blind = write_bag(tmp_path / "nowrench", state, wrench=False)
    assert replay(blind, "--specs", specs) == 0
    out, err = capsys.readouterr()
    assert (
        f"warning: {blind}: blind: {N} of {N} frames had an unknown predicate; blind frames per property: "
        f"no_excess_wrench {N}; stale input frames: wrench {N}; no wrench topic /wrist_wrench" in err
    )
    assert out.rstrip().endswith(
        "1 of 1 bag(s) scored; 1 blind in some or all frames (not monitored there: see the warnings)"
    )


def test_poses_that_start_after_the_joints_are_start_up_not_a_stale_input_warning(tmp_path, state, specs, capsys):
    """50 Hz poses behind 500 Hz joints leave a recording's first frames without a pose: start-up, so a clean
    bag warns of nothing (here no predicate is unknown for it: an open gripper holds nothing, seen or not). A
    wrench that stops later is warned of, its start-up frames counted apart. summary.md and report.json keep
    every count."""

    def late(path, poses_from, wrench_until):
        with BagWriter(path) as w:
            for k in range(200):
                t = 100.0 + k / RATE
                if k < wrench_until:
                    w.write_wrench("/wrist_wrench", t, state.wrench)
                for name, pose in state.object_poses.items() if k >= poses_from else ():
                    w.write_pose(f"/objects/{name}/pose", t, pose)
                w.write_joint_state("/joint_states", t, list(state.joint_names), state.joint_position, log_t=t)
        return path

    clean, stops = late(tmp_path / "clean", 5, 200), late(tmp_path / "stops", 5, 100)
    assert replay(clean, stops, "--specs", specs, report=tmp_path / "r") == 0
    out, err = capsys.readouterr()
    assert str(clean) not in err
    assert f"{stops}: blind: 51 of 200 frames had an unknown predicate;" in err  # an open gripper holds nothing
    assert "object_pose/raw_chicken 5, wrench 51 (5 frames at start-up)" in err
    assert out.rstrip().endswith(
        "2 of 2 bag(s) scored; 1 blind in some or all frames (not monitored there: see the warnings)"
    )
    blind = (tmp_path / "r" / "summary.md").read_text().split("(blind, not safe)")[1].split("##")[0]
    assert f"| {clean} | 200 | 5 |" in blind and f"| {stops} | 200 | 56 |" in blind
    doc = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [b["stale_frames"] for b in doc["bags"]] == [5, 56]


def test_predicates_never_recorded_are_a_warning_too(tmp_path, specs, capsys):
    path = tmp_path / "unsent"
    with BagWriter(path) as w:
        for k in range(N):  # object_sync never sent
            values = {"excess_wrench": False, "object_grasped": False, "object_grasped_raw": False}
            w.write_predicates("/safety_monitor/predicates", m.PredicateSample(values, 1.0 + k / RATE, k))
    assert replay(path, "--specs", specs, "--from-predicates") == 0
    out, err = capsys.readouterr()
    assert (
        f"warning: {path}: blind: {N} of {N} frames had an unknown predicate; blind frames per property: "
        f"grasp_synced_until_release {N}; predicates never sent, treated as unknown: object_sync" in err
    )
    assert "1 blind in some or all frames" in out


def test_a_clean_bag_has_no_warning(bag, specs, capsys):
    assert replay(bag, "--specs", specs) == 0
    out, err = capsys.readouterr()
    assert "warning" not in err and out.rstrip().endswith("1 of 1 bag(s) scored")
    assert "not applicable" not in out  # the workcell grounds both properties


def test_the_summary_names_the_properties_not_applicable_to_the_robot(bag, specs, capsys):
    assert replay(bag, "--specs", specs, "--topics", "wrench=none") == 0  # no wrist sensor
    out, _ = capsys.readouterr()
    table, line = out.split("intervals: bootstrap")[0], [t for t in out.splitlines() if "not applicable" in t]
    assert "no_excess_wrench" in table  # a row of no triggers, which must not read as checked
    assert line == [
        "not applicable to this robot, so not checked: no_excess_wrench (why: report.json's not_applicable, "
        "or `safety-monitor inspect`)"
    ]


# ----------------------------------------------------------------------------- naming
def test_the_error_of_a_failed_bag_names_it_once(tmp_path, state):
    specs = tmp_path / "specs.yaml"
    specs.write_text("predicates: [holding]\nproperties:\n  - {name: p, category: c, formula: 'G(!holding)'}\n")
    bag = write_bag(tmp_path / "b", state)
    r = score_bag(bag, ReplayConfig(specs=str(specs), rate_hz=RATE))
    assert r.error.startswith(f"{bag}: the specs read predicates") and r.error.count(str(bag)) == 1


def test_report_names_the_files_and_the_mode_it_used(tmp_path, bag, capsys):
    from safety_monitor.files import config_dir

    for mode, args in (("robot_state", []), ("predicates", ["--from-predicates"])):
        report = tmp_path / mode
        replay(bag, *args, "--no-plots", report=report)
        config = json.loads((report / "report.json").read_text())["config"]
        summary = (report / "summary.md").read_text()
        assert config["specs"] == str(config_dir() / "specs.yaml")
        if mode == "robot_state":
            assert config["robot"] == str(config_dir() / "robot.yaml")
            assert f"Mode: grounded from the recorded robot state with `{config_dir() / 'robot.yaml'}`" in summary
        else:
            assert config["robot"] is None and "Mode: the recorded predicates rescored (`--from-predicates`" in summary
    capsys.readouterr()


def test_a_failed_bag_is_named_once_in_the_summary(tmp_path, bag, specs, capsys):
    broken = tmp_path / "broken.mcap"
    broken.write_bytes(b"not a bag")
    assert replay(broken, bag, "--specs", specs, "--no-plots", report=tmp_path / "r") == 1
    failed = [line for line in (tmp_path / "r" / "summary.md").read_text().splitlines() if line.startswith("- `")]
    assert len(failed) == 1 and failed[0].startswith(f"- `{broken}`: ") and failed[0].count(str(broken)) == 1
    assert capsys.readouterr().err.count(str(broken)) == 1


# ---------------------------------------------------------------------------------- plots
@pytest.fixture
def figures(monkeypatch):
    from safety_monitor.replay import plots

    close, kept = plots.plt.close, []
    monkeypatch.setattr(plots.plt, "close", kept.append)
    yield kept
    for figure in kept:
        close(figure)


def test_risk_plot_keeps_a_first_category_without_triggers_clear_of_the_axis(bag, specs, figures, tmp_path):
    from safety_monitor.replay.plots import risk_plot

    summary = summarize([score_bag(bag, ReplayConfig(specs=specs, rate_hz=RATE))], resamples=50)
    assert summary.overall.by_category[0].risk is None  # its label is "n/a"
    risk_plot({"all bags": summary.overall}, tmp_path / "risk.png")
    assert figures[0].axes[0].get_xlim()[0] <= -0.5


def test_risk_plot_draws_no_whisker_where_there_is_no_interval_and_says_so(figures, tmp_path):
    """A category one bag triggered has no interval: a bare bar would read as exact, so its label says so."""
    from matplotlib.container import ErrorbarContainer

    from safety_monitor.monitor.episodes import PropertyOutcome, TraceResult
    from safety_monitor.monitor.metrics import compute_metrics
    from safety_monitor.replay.plots import risk_plot

    def bag(triggers, violations):
        durations = (3,) * violations
        return TraceResult(
            100, (PropertyOutcome("p", "c", 100, 0, triggers, 0, violations, 3 * violations, durations, 0),), ()
        )

    metrics = {
        "a": compute_metrics([bag(1, 1), bag(0, 0)], resamples=50),
        "b": compute_metrics([bag(2, 1), bag(2, 0)], resamples=50),
    }
    assert metrics["a"].pooled.risk_interval is None and metrics["b"].pooled.risk_interval is not None
    risk_plot(metrics, tmp_path / "risk.png")
    ax = figures[0].axes[0]
    whiskers = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(ax.containers) - len(whiskers) == 4 and len(whiskers) == 2  # bars c and all per group; b's whiskered
    labels = [t.get_text() for t in ax.texts]
    assert labels.count("N=1\nno CI") == 2 and labels.count("N=4") == 2
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a (2 rollout(s))", "b (2 rollout(s))"]


def test_timeline_title_names_the_bag_by_its_path_not_its_folder_name_alone(bag, specs, figures, tmp_path):
    """Bags of two policies are often both episode_000: the title gives the path that tells them apart."""
    from safety_monitor.replay.plots import timeline_plot

    timeline_plot(score_bag(bag, ReplayConfig(specs=specs, rate_hz=RATE)), tmp_path / "t.png")
    assert figures[0].get_suptitle().startswith(f"{bag}\n")


def test_timeline_axis_says_where_its_time_starts(bag, specs, figures, tmp_path):
    from safety_monitor.replay.plots import timeline_plot

    timeline_plot(score_bag(bag, ReplayConfig(specs=specs, rate_hz=RATE)), tmp_path / "t.png")
    assert "since the bag's first frame, at t = 100.000 s" in figures[0].axes[1].get_xlabel()


def scored_by_hand(specs, rows, objects=("mug",)):
    """A rollout at 10 Hz from T = 100 s, one frame per row ("excess_wrench" true, "?excess_wrench" unknown),
    its violations about `objects` as the Supervisor names them."""
    from dataclasses import replace

    from safety_monitor.enums import EventKind
    from safety_monitor.monitor.live import SpecSetMonitor
    from safety_monitor.replay.score import BagResult
    from safety_monitor.replay.timeline import Timeline

    monitor = SpecSetMonitor.from_spec_file(specs, history=100)
    names = tuple(monitor.predicates)
    frames = [{p: None if f"?{p}" in row.split() else p in row.split() for p in names} for row in rows]
    times = [100.0 + k / 10 for k in range(len(rows))]
    trace = monitor.run(frames, times)
    events = tuple(replace(e, objects=objects) if e.kind == EventKind.OPENED else e for e in trace.events)
    timeline = Timeline(names)
    for frame, t in zip(frames, times, strict=True):
        timeline.add([frame[p] for p in names], t)
    timeline.close()
    return BagResult(
        "runs/a",
        "predicates",
        trace=replace(trace, events=events),
        frames=len(rows),
        t_start=times[0],
        t_end=times[-1],
        timeline=timeline,
    )


def _labels(ax):
    return {label.get_text(): label for label in ax.get_yticklabels()}


def test_timeline_names_each_episodes_objects_and_marks_the_rows_that_matter(specs, figures, tmp_path):
    """Among dozens of rows, what was violated, why and about what: the violated property's name and the
    predicates its counterexample calls decisive in red, the episode labelled with its objects."""
    from safety_monitor.replay.plots import VIOLATION_COLOR, timeline_plot

    result = scored_by_hand(specs, ["", "", "excess_wrench", "", ""], ("mug", "bin"))
    timeline_plot(result, tmp_path / "t.png")
    top, bottom = figures[0].axes
    assert [t.get_text() for t in bottom.texts] == ["mug, bin"]
    props, preds = _labels(bottom), _labels(top)
    assert props["no_excess_wrench (1)"].get_color() == VIOLATION_COLOR
    assert props["no_excess_wrench (1)"].get_fontweight() == "bold"
    assert props["grasp_synced_until_release (0)"].get_color() != VIOLATION_COLOR
    assert preds["excess_wrench"].get_color() == VIOLATION_COLOR and preds["object_sync"].get_color() != VIOLATION_COLOR


def test_timeline_rows_say_what_was_not_seen(specs, figures, tmp_path):
    """ "(0)" beside a property blind for half the rollout, or one the robot cannot ground, read as safe; the
    stale row names its streams."""
    from safety_monitor.replay.plots import timeline_plot

    result = scored_by_hand(specs, ["?excess_wrench"] * 5 + [""] * 5)
    result.not_applicable = {"grasp_synced_until_release": "no gripper"}
    result.stale_by_stream, result.stale_frames = {"wrench": 5}, 5
    timeline_plot(result, tmp_path / "t.png")
    labels = _labels(figures[0].axes[1])
    assert {"no_excess_wrench (0, blind 50%)", "grasp_synced_until_release (not applicable)"} <= set(labels)
    assert "input stale (wrench)" in labels


def test_timeline_rows_leave_out_the_start_up_every_bag_has(specs, figures, tmp_path):
    """A pose stream starting after the first joint frame leaves every bag a start-up frame blind and stale,
    which the warnings leave out: labelled "blind <1%" and with the streams' names on every row, it was noise."""
    from safety_monitor.replay.plots import timeline_plot
    from safety_monitor.replay.timeline import Timeline

    result = scored_by_hand(specs, ["?excess_wrench"] + [""] * 9)
    result.stale_by_stream, result.stale_frames = {"object_pose/mug": 1, "object_pose/cube": 1, "wrench": 1}, 1
    result.stale_timeline = Timeline(("stale",))
    for k in range(10):
        result.stale_timeline.add([k == 0], 100.0 + k / 10)
    result.stale_timeline.close()
    timeline_plot(result, tmp_path / "t.png")
    assert {"no_excess_wrench (0)", "input stale"} <= set(_labels(figures[0].axes[1]))

    result.stale_frames = 3  # stale beyond start-up: the streams, the first two by name
    result.stale_timeline = None
    timeline_plot(result, tmp_path / "t.png")
    assert "input stale (object_pose/cube, object_pose/mug, +1 more)" in _labels(figures[1].axes[1])


def test_timeline_row_names_are_not_cut_off(tmp_path, figures):
    """A spec file's long property names (60 characters) fit left of the axes."""
    from safety_monitor.replay.plots import timeline_plot

    name = "release_only_after_internal_support_and_fixture_fully_open"
    path = tmp_path / "specs.yaml"
    path.write_text(SPECS.replace("no_excess_wrench", name))
    timeline_plot(scored_by_hand(path, ["excess_wrench"] * 3), tmp_path / "t.png")
    figure = figures[0]
    renderer = figure.canvas.get_renderer()
    labels = [label for ax in figure.axes for label in ax.get_yticklabels()]
    assert any(name in label.get_text() for label in labels)
    assert min(label.get_window_extent(renderer).x0 for label in labels) >= 0


def test_timeline_title_and_axis_label_stay_on_the_figure(tmp_path, figures):
    """Row names that widen the margin, and a deep bag path, once pushed the title (placed over the axes) and
    the axis label off the figure's right edge: the title spans the figure, a path too long for it keeps its
    tail, and every text stays within the figure."""
    from matplotlib.text import Text

    from safety_monitor.replay.plots import timeline_plot

    path = tmp_path / "specs.yaml"
    path.write_text(SPECS.replace("no_excess_wrench", "release_only_after_internal_support_and_fixture_fully_open"))
    result = scored_by_hand(path, ["excess_wrench"] * 3)
    result.bag = "/data/" + "policy_with_a_long_name/" * 8 + "episode_017"
    timeline_plot(result, tmp_path / "t.png")
    figure = figures[0]
    renderer = figure.canvas.get_renderer()
    assert figure.get_suptitle().split("\n")[0].endswith("policy_with_a_long_name/episode_017")
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text()]
    assert figure.axes[1].xaxis.label in texts
    for text in texts:
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= 0 and extent.x1 <= figure.bbox.width and extent.y1 <= figure.bbox.height, text


def test_a_rollouts_timeline_says_which_rollout_and_where_its_time_starts(tmp_path, specs, figures):
    """Each rollout's axis starts again at 0: its title places it in the bag, its axis says whose first frame."""
    from ray_replay_bags import write_marked_bag

    from safety_monitor.pipeline.markers import END, START
    from safety_monitor.replay.batch import score_bags
    from safety_monitor.replay.plots import timeline_plot

    cut = write_marked_bag(tmp_path / "cut", [START, 200, END, START, 20, END])
    first, second = score_bags([cut], ReplayConfig(specs=specs, rate_hz=RATE), progress=False)
    timeline_plot(second, tmp_path / "t.png")
    top, bottom = figures[0].axes
    assert figures[0].get_suptitle().startswith(f"{cut}#1\nrollout #1 of the bag's 2, 0.4 s into it; 20 frames")
    assert "since the rollout's first frame" in bottom.get_xlabel()


def test_risk_plot_says_no_triggers_and_counts_rollouts(bag, specs, figures, tmp_path):
    """ "n/a" under a category read as not applicable, which the report means for a property the robot cannot
    ground; the intervals resample rollouts, which a bag cut by markers holds several of."""
    from safety_monitor.replay.plots import risk_plot

    summary = summarize([score_bag(bag, ReplayConfig(specs=specs, rate_hz=RATE))], resamples=50)
    risk_plot({"all bags": summary.overall}, tmp_path / "risk.png")
    ax = figures[0].axes[0]
    assert "no triggers" in [t.get_text() for t in ax.texts] and "n/a" not in [t.get_text() for t in ax.texts]
    assert ax.get_title(loc="left").endswith("bootstrap intervals over 1 rollout(s)")


def test_ctrl_c_stops_the_batch_and_keeps_what_was_scored(tmp_path, folder, state, specs, monkeypatch, capsys):
    """Ctrl-C during the second of three bags: the first bag's scores reach the table and the report, the
    other two are listed as not scored, exit code 130 (before, a traceback and no report at all). They are
    not failures: the closing line, summary.md and report.json tell them apart (they were counted failed)."""
    from safety_monitor.replay import batch

    bags = [write_bag(tmp_path / name, state) for name in ("a", "b", "c")]
    scored = []

    def score_or_interrupt(bag, config, progress=None):
        if scored:
            raise KeyboardInterrupt
        scored.append(bag)
        return score_bag(bag, config, progress)

    monkeypatch.setattr(batch, "score_bag", score_or_interrupt)
    monkeypatch.setattr(replay_cli, "UNSCORED_LISTED", 1)  # stderr names that many, the report all of them
    report = tmp_path / "report"
    assert replay(*bags, "--specs", specs, report=report) == 130
    out, err = capsys.readouterr()
    assert "interrupted: 1 of 3 bag(s) done" in err
    assert f"replay: {bags[1]}: {batch.NOT_SCORED}\n" in err and str(bags[2]) not in err
    assert f"... and 1 more not scored (all in {report}/report.json, bags_not_scored)" in err
    assert out.rstrip().endswith("1 of 3 bag(s) scored; interrupted: 2 not scored")
    assert "failed" not in out + err
    doc = json.loads((report / "report.json").read_text())
    assert [(b["bag"], b["status"], b["error"]) for b in doc["bags"]] == [
        (str(bags[0]), "scored", None),
        *((str(b), "not_scored", f"{b}: {batch.NOT_SCORED}") for b in bags[1:]),
    ]
    assert doc["interrupted"] and doc["bags_not_scored"] == [str(b) for b in bags[1:]] and doc["bags_failed"] == []
    summary = (report / "summary.md").read_text()
    assert "3 bag(s): 1 scored, 0 failed, 2 not scored" in summary and "**Interrupted** (Ctrl-C)" in summary
    assert "## Failed bags" not in summary
    assert summary.split("## Not scored (interrupted)\n\n")[1].startswith(f"- `{bags[1]}`\n- `{bags[2]}`\n")


def _blind_result(leading, later=0, rate=RATE, frames=600):
    """A scored bag whose predicate `a` is unknown for its first `leading` frames and `later` frames at 300."""
    from safety_monitor.monitor.episodes import PropertyOutcome, TraceResult
    from safety_monitor.replay.score import BagResult
    from safety_monitor.replay.timeline import Timeline

    timeline = Timeline(("a", "b"))
    for k in range(frames):
        timeline.add((None if k < leading or 300 <= k < 300 + later else False, False), 1.0 + k / rate)
    timeline.close()
    blind = leading + later
    outcome = PropertyOutcome("p", "collision_contact", frames, blind, 0, 0, 0, 0, (), 0)
    return BagResult(
        bag="b",
        mode="predicates",
        trace=TraceResult(frames, (outcome,), ()),
        frames=frames,
        unknown_frames=blind,
        timeline=timeline,
    )


def test_the_start_up_frames_every_bag_has_are_no_warning_but_blindness_beyond_them_is():
    """Estimators with a history window decide nothing for their first frames (29 at 500 Hz in the
    workcell's bags): a warning on every bag would teach users to ignore it. Longer, or later, is a warning."""
    from safety_monitor.replay.report import input_warning, is_blind, startup_frames

    clean = _blind_result(29)
    assert startup_frames(clean) == 29 and not is_blind(clean) and input_warning(clean) is None
    slow = _blind_result(100)  # 0.2 s before anything is decided: not start-up
    assert startup_frames(slow) == 0 and is_blind(slow)
    assert (
        input_warning(slow) == "b: blind: 100 of 600 frames had an unknown predicate; blind frames per property: p 100"
    )
    later = _blind_result(29, later=5)
    assert is_blind(later) and "34 of 600 frames had an unknown predicate (29 of them at start-up)" in input_warning(
        later
    )


def test_ctrl_c_while_the_report_is_written_says_it_is_incomplete(tmp_path, bag, specs, monkeypatch, capsys):
    from safety_monitor.replay import report

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "write_report", interrupted)
    assert replay(bag, "--specs", specs, report=tmp_path / "r") == 130
    assert f"interrupted (Ctrl-C) while writing the report: {tmp_path / 'r'} is incomplete" in capsys.readouterr().err


def test_the_report_flags_properties_the_bag_could_not_violate(tmp_path, bag, specs):
    """A stationary workcell: nothing is grasped and the wrench never moves, so neither property was
    exercised; report.json says so per bag and property, summary.md in a table of one row per property and
    reason, with the bags it holds for (a row per bag and property buried the rest of the summary)."""
    report, again = tmp_path / "r", tmp_path / "again"
    shutil.copytree(bag, again)
    assert replay(bag, again, "--specs", specs, "--no-plots", report=report) == 0
    vacuity = {v["property"]: v for v in json.loads((report / "report.json").read_text())["bags"][0]["vacuity"]}
    assert vacuity["grasp_synced_until_release"] == {
        "property": "grasp_synced_until_release",
        "vacuous": True,
        "trigger_constant": True,
        "constant_consequent": ["object_grasped_raw", "object_sync"],
    }
    assert vacuity["no_excess_wrench"]["vacuous"] and vacuity["no_excess_wrench"]["constant_consequent"] == []
    summary = (report / "summary.md").read_text()
    assert f"| no_excess_wrench | trigger never changes | 2 of 2: {bag}, {again} |" in summary.splitlines()
