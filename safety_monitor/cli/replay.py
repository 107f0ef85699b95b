"""Sub-command `replay`: score rosbag2 recordings with the live pipeline and write a report."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from safety_monitor.arguments import SEED_MAX, number, ros_namespace, seed
from safety_monitor.cli import workers
from safety_monitor.cli.monitor import RESAMPLES
from safety_monitor.errors import SourceError

if TYPE_CHECKING:
    from safety_monitor.pipeline.assemble import StreamMapping
    from safety_monitor.replay.score import ReplayConfig

MAX_RATE_HZ = 1e6
UNSCORED_LISTED = 5  # bags Ctrl-C left unscored named on stderr; the report lists them all (thousands, at scale)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay",
        help="score rosbag2 bags (.db3, .mcap) like the live monitor: per-trigger metrics, reports, plots",
        description="Builds RobotState frames from each bag with the live estimator's assembler and grounder "
        "and steps the same monitor (or, with --from-predicates, rescores the recorded predicate "
        "topic). Exit code 0: every bag scored; 1: some bags failed (listed); 2: bad arguments; "
        "130: Ctrl-C (what was scored is still reported).",
    )
    p.add_argument(
        "bags",
        nargs="+",
        metavar="BAG_OR_FOLDER",
        help="bag directories, bare .mcap/.db3 files, or folders searched recursively for them",
    )
    p.add_argument("--specs", metavar="FILE", help="spec YAML (default: the package's config/specs.yaml)")
    p.add_argument(
        "--robot",
        metavar="FILE",
        help="robot description YAML; objects.yaml and thresholds.yaml beside it are used if present "
        "(default: the package's config/)",
    )
    p.add_argument(
        "--params",
        metavar="FILE",
        help="the live nodes' parameter file (ROS 2 format): replay applies its input limits "
        "(joint_states_frozen_s, wrench_frozen_s, wrench_stale_s, pose_stale_s), watchdog "
        "(predicates_timeout_s, predicates_frozen_s) and history_frames as that live stack did (default: the package's "
        "config/nodes.yaml)",
    )
    p.add_argument(
        "--topics",
        metavar="MAP",
        help="topic and joint-name mapping: a YAML file or key=value pairs, keys joint_states, wrench "
        "(none: no wrist sensor), object_pose ('{name}' = object), predicates, events, gripper_joint_states, tf, "
        "tf_static, base_frame, world_frame (a mobile base), joint_prefix; in a file also objects, joint_names, "
        "object_frames, more_joint_states (mappings), joint_order (a list)",
    )
    p.add_argument(
        "--namespace",
        type=ros_namespace,
        default="/",
        metavar="NS",
        help="relative topic names (the defaults, as the nodes name them, and those of --topics) resolve under this "
        "namespace, as for a node there (default /: the root); a relative name not found there matches the one "
        "topic of its type ending with it",
    )
    p.add_argument(
        "--from-predicates",
        action="store_true",
        help="rescore the recorded predicates (safety_monitor/predicates, under --namespace) instead of grounding",
    )
    p.add_argument(
        "--report",
        metavar="DIR",
        help="write report.json, episodes.csv, properties.csv, summary.md and PNG plots into DIR",
    )
    workers.add_arguments(p, "score bags")
    p.add_argument(
        "--group-by",
        metavar="REGEX",
        help="group bags by this pattern's first group (or whole match) in the bag path, e.g. 'policy_([a-z0-9]+)'",
    )
    p.add_argument(
        "--rate",
        type=number(0, MAX_RATE_HZ, above=True, unit="Hz"),
        metavar="HZ",
        help="control rate of the joint stream (default: measured from each bag's stamps)",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots in --report")
    p.add_argument(
        "--resamples",
        metavar="N",
        type=RESAMPLES,
        default=2000,
        help="bootstrap resamples over rollouts (a bag, or each of its rollouts where markers cut it), 0 to 100000 "
        "(0 = no intervals; default 2000)",
    )
    p.add_argument("--seed", type=seed(), default=0, metavar="N", help=f"bootstrap seed, 0 to {SEED_MAX} (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_replay)


def _replay(args: argparse.Namespace) -> int:
    from safety_monitor.cli.monitor import format_table
    from safety_monitor.files import config_dir
    from safety_monitor.io.bag import find_bags
    from safety_monitor.replay.batch import score_bags, summarize, tally, unique_bags
    from safety_monitor.replay.report import check_folder, input_warning, is_blind, not_applicable_line, write_report
    from safety_monitor.replay.score import ReplayConfig, check_config
    from safety_monitor.settings import load_settings

    try:
        pattern = re.compile(args.group_by) if args.group_by else None
    except re.error as exc:
        raise SourceError(f"--group-by {args.group_by!r}: not a regular expression: {exc}") from None
    config = ReplayConfig(
        specs=args.specs,
        robot=args.robot,
        mapping=_mapping(args.topics),
        namespace=args.namespace,
        from_predicates=args.from_predicates,
        rate_hz=args.rate,
    ).with_settings(load_settings(args.params or config_dir() / "nodes.yaml"))
    bags, duplicates = unique_bags(find_bags(args.bags))
    if args.report:
        check_folder(args.report)
    check_config(config)
    config = config.with_model()
    for note in duplicates:
        _warn(note)
    with workers.executor(args, len(bags), _named_files(config)) as executor:
        results = score_bags(bags, config, executor, progress=not args.quiet)
    counts = tally(results)
    stopped = counts.not_scored
    if stopped:
        _warn(
            f"interrupted: {counts.bags - stopped} of {counts.bags} bag(s) done{counts.rollouts_text()}; the results "
            "below and the report cover those, the rest are listed as not scored"
        )
    summary = summarize(results, pattern, resamples=args.resamples, seed=args.seed)
    if summary.overall is not None:
        print(format_table(summary.overall))
    for name, metrics in summary.groups.items():
        print(f"\ngroup {name}:\n{format_table(metrics)}")
    if line := not_applicable_line(results):
        print(line)
    failed = [r for r in results if not r.ok and not r.interrupted]
    for r in failed:
        print(f"safety-monitor replay: failed: {r.error}", file=sys.stderr)
    unscored = [r for r in results if r.interrupted]
    for r in unscored[:UNSCORED_LISTED]:
        print(f"safety-monitor replay: {r.error}", file=sys.stderr)
    if len(unscored) > UNSCORED_LISTED:
        where = f" (all in {args.report}/report.json, bags_not_scored)" if args.report else ""
        print(
            f"safety-monitor replay: ... and {len(unscored) - UNSCORED_LISTED} more not scored{where}", file=sys.stderr
        )
    for r in results:
        if r.retried:
            _warn(f"{r.bag}: the worker scoring it died ({r.retried}); scored by another")
        if warning := input_warning(r):
            _warn(warning)
    blind = sum(is_blind(r) for r in results)
    if args.report:
        try:
            folder = write_report(args.report, results, summary, config, args.group_by, plots=not args.no_plots)
        except KeyboardInterrupt:  # the scores are lost with the process; the folder must not pass for a report
            _warn(f"interrupted (Ctrl-C) while writing the report: {args.report} is incomplete; run again")
            return 130
        print(f"report: {folder}/summary.md")
    print(
        counts.line()
        + (
            f"; {blind}{' rollout(s)' if counts.split else ''} blind in some or all frames (not monitored there: see the warnings)"
            if blind
            else ""
        )
    )
    return 130 if stopped else 1 if failed else 0


def _named_files(config: ReplayConfig) -> list[Path]:
    """The files each task reads that the command names: the spec file and the robot description with the
    objects.yaml and thresholds.yaml beside it (the package's own are part of its installation)."""
    named = [Path(config.specs)] if config.specs else []
    robot = config.robot_file() if config.robot else None
    if robot is not None:
        named += [robot, *(f for f in (robot.parent / "objects.yaml", robot.parent / "thresholds.yaml") if f.is_file())]
    return named


def _mapping(topics: str | None) -> StreamMapping:
    """--topics: a YAML file (read as every YAML input is: UTF-8, bounded, no aliases) or inline pairs."""
    from safety_monitor.pipeline.assemble import StreamMapping

    return StreamMapping.parse(topics) if topics else StreamMapping()


def _warn(text: str) -> None:
    print(f"safety-monitor replay: warning: {text}", file=sys.stderr)
