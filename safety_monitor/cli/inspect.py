"""Sub-command `inspect`: what bags (or the live graph) hold against what the configuration reads."""

from __future__ import annotations

import argparse
import json

from safety_monitor.arguments import number, ros_namespace


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect",
        help="what a bag or the live ROS graph holds: topics, rates, configured inputs, groundable "
        "predicates, applicable and vacuous properties",
        description="For each bag: topics, types, counts, rates and time span; whether each configured input "
        "(joint_states, wrench, each object's pose topic or TF) is there with the right type; which "
        "predicates this robot description grounds; which properties apply to it, and which never "
        "trigger in the bag (a replay). With --live: the ROS graph's topics and types instead. Exit "
        "code 0: every configured input fits; 1: some input is missing or of the wrong type.",
    )
    p.add_argument("bags", nargs="*", metavar="BAG_OR_FOLDER", help="bag directories, .mcap/.db3 files, or folders")
    p.add_argument("--live", action="store_true", help="listen to the ROS graph instead of reading bags")
    p.add_argument(
        "--seconds",
        type=number(0, 600, above=True, unit="s"),
        default=3.0,
        metavar="S",
        help="how long --live listens for topics, in seconds (default 3)",
    )
    p.add_argument("--json", action="store_true", help="one JSON document (a list, one entry per source)")
    p.add_argument("--specs", metavar="FILE", help="spec YAML (default: the package's config/specs.yaml)")
    p.add_argument("--robot", metavar="FILE", help="robot description YAML (default: the package's config/)")
    p.add_argument(
        "--topics", metavar="MAP", help="topic mapping, as replay's --topics (a YAML file or key=value pairs)"
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
        "--rate",
        type=number(0, 100000, above=True, unit="Hz"),
        metavar="HZ",
        help="control rate (default: measured from each bag's stamps)",
    )
    p.set_defaults(func=_inspect)


def _inspect(args: argparse.Namespace) -> int:
    from safety_monitor.errors import SourceError
    from safety_monitor.io.bag import find_bags
    from safety_monitor.pipeline.assemble import StreamMapping
    from safety_monitor.replay.inspect import InputState, TopicInfo, inspect_bag, inspect_source
    from safety_monitor.replay.score import ReplayConfig

    if args.live == bool(args.bags):
        raise SourceError("give bags to inspect, or --live (not both)")
    config = ReplayConfig(
        specs=args.specs,
        robot=args.robot,
        rate_hz=args.rate,
        mapping=StreamMapping.parse(args.topics) if args.topics else StreamMapping(),
        namespace=args.namespace,
    )
    if args.live:
        from safety_monitor.nodes.graph import topic_types

        found = [TopicInfo(t, msgtype) for t, msgtype in sorted(topic_types(args.seconds).items())]
        inspections = [inspect_source("live ROS graph", found, config)]
        inspections[0].notes.append("live: types only (no counts or rates); whether a property triggers needs a bag")
    else:
        inspections = [inspect_bag(bag, config) for bag in find_bags(args.bags)]
    if args.json:
        print(json.dumps([i.to_json() for i in inspections], indent=2))
    else:
        print("\n\n".join(i.text() for i in inspections))
    bad = any(
        c.state is InputState.WRONG_TYPE or (c.input.required and c.state is not InputState.PRESENT)
        for i in inspections
        for c in i.inputs
    )
    return 1 if bad else 0
