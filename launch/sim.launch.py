"""Simulated workcell: sim, estimator and monitor nodes as three processes in one namespace.

    ros2 launch safety_monitor sim.launch.py fault:=early_release episodes:=2 namespace:=robot1

Simulated time: the sim node publishes the clock; the estimator and monitor run with `use_sim_time`
(default true). The clock is `<namespace>/clock` (`/clock` remapped into the namespace), so two sims on
one ROS domain, each in its own namespace, never drive each other's time. When the sim node has published its last episode it exits, and the launch shuts the
other two down (SIGINT: the monitor closes the running trace into its event log first).
Every argument and the parameter file are checked before any node starts (`episodes:=abc` is one
error, nothing runs), and a node that exits with an error ends the launch with exit code 1.
`safety-monitor sim` runs the same nodes in one process where `ros2 launch` is not installed.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from safety_monitor.errors import SafetyMonitorError
from safety_monitor.nodes.launch_checks import (LaunchArgumentError, check_params_file, checked,
                                                fail_when_a_node_fails, typed)
from safety_monitor.settings import MonitorSettings, SimSettings
from safety_monitor.sim.runner import episode_schedule
from safety_monitor.specs.model import load_specs

WHERE = "sim.launch.py"
SIM_ARGUMENTS = {  # name: (default, description); each is a sim_node parameter (SimSettings)
    "task": ("", "task of every episode ('' = the fault's task)"),
    "fault": ("", "fault name, 'none', or '' to cycle fault-free then every fault"),
    "episodes": ("1", "episodes to run"),
    "seed": ("0", "seed of the first episode"),
    "pace": ("realtime", "realtime (wall-clock timer) or lockstep (as fast as predicates return)"),
    "realtime_factor": ("1.0", "realtime pace: simulated seconds per wall second"),
}
MONITOR_ARGUMENTS = {  # monitor_node parameters (MonitorSettings)
    "specs": ("", "spec file ('' = the package's config/specs.yaml)"),
    "events_log": ("", "JSON Lines event log ('' = $ROS_HOME/safety_monitor/events[_<ns>].jsonl)"),
}


def _nodes(context):
    """The three nodes, once every argument has its type and range (raising stops the launch, exit 1)."""
    arguments = context.launch_configurations
    params_file = arguments["params_file"]
    check_params_file(params_file)
    sim = checked(SimSettings, {n: arguments[n] for n in SIM_ARGUMENTS}, WHERE)
    monitor = checked(MonitorSettings, {n: arguments[n] for n in MONITOR_ARGUMENTS}, WHERE)
    try:  # unknown task or fault names, as the sim node would find them
        episode_schedule(sim.task, sim.fault, sim.episodes)
    except SafetyMonitorError as exc:
        raise LaunchArgumentError(f"{WHERE}: task:={sim.task} fault:={sim.fault}: {exc}") from None
    if monitor.specs:
        load_specs(monitor.specs)
    sim_time = {"use_sim_time": typed(arguments["use_sim_time"], False, f"{WHERE}: use_sim_time")}
    namespace = arguments["namespace"]
    # one global /clock for two sims made each monitor read the other's time: false STALE and blind frames
    clock = [("/clock", "clock")]
    sim_node = Node(package="safety_monitor", executable="sim_node", namespace=namespace, output="screen",
                    parameters=[params_file, {n: getattr(sim, n) for n in SIM_ARGUMENTS}], remappings=clock)
    estimator = Node(package="safety_monitor", executable="estimator_node", namespace=namespace, output="screen",
                     parameters=[params_file, sim_time], remappings=clock)
    monitor_node = Node(package="safety_monitor", executable="monitor_node", namespace=namespace, output="screen",
                        parameters=[params_file, sim_time, {n: getattr(monitor, n) for n in MONITOR_ARGUMENTS}],
                        remappings=clock)
    stop_with_sim = RegisterEventHandler(OnProcessExit(  # after the failure check below: a failed sim is an error
        target_action=sim_node, on_exit=[EmitEvent(event=Shutdown(reason="the simulation finished"))]))
    nodes = [monitor_node, estimator, sim_node]
    return [*fail_when_a_node_fails(nodes, WHERE), stop_with_sim, *nodes]


def generate_launch_description():
    default_params = PathJoinSubstitution([FindPackageShare("safety_monitor"), "config", "nodes.yaml"])
    declared = [
        DeclareLaunchArgument("namespace", default_value="",
                              description="namespace of all three nodes (one per robot)"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="node parameter file (default: the package's config/nodes.yaml)"),
        DeclareLaunchArgument("use_sim_time", default_value="true",
                              description="estimator and monitor on the sim node's /clock (true) or wall time"),
    ] + [
        DeclareLaunchArgument(name, default_value=default, description=description)
        for name, (default, description) in {**SIM_ARGUMENTS, **MONITOR_ARGUMENTS}.items()
    ]
    return LaunchDescription([*declared, OpaqueFunction(function=_nodes)])
