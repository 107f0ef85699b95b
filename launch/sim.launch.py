"""Simulated workcell: sim, estimator and monitor nodes as three processes in one namespace.

    ros2 launch safety_monitor sim.launch.py fault:=early_release episodes:=2 namespace:=robot1

Simulated time: the sim node publishes /clock; the estimator and monitor run with use_sim_time.
When the sim node has published its last episode it exits, and the launch shuts the other two down
(SIGINT: the monitor closes the running trace into its event log first). `safety-monitor sim` runs
the same nodes in one process where `ros2 launch` is not installed.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

SIM_ARGUMENTS = {  # name: (default, parameter type, description); each is a sim_node parameter
    "task": ("", str, "task of every episode ('' = the fault's task)"),
    "fault": ("", str, "fault name, 'none', or '' to cycle fault-free then every fault"),
    "episodes": ("1", int, "episodes to run"),
    "seed": ("0", int, "seed of the first episode"),
    "pace": ("realtime", str, "realtime (wall-clock timer) or lockstep (as fast as predicates return)"),
    "realtime_factor": ("1.0", float, "realtime pace: simulated seconds per wall second"),
}
MONITOR_ARGUMENTS = {
    "specs": ("", str, "spec file ('' = the package's config/specs.yaml)"),
    "events_log": ("", str, "JSON Lines event log ('' = $ROS_HOME/safety_monitor/events[_<ns>].jsonl)"),
}


def _parameters(arguments):
    return {name: ParameterValue(LaunchConfiguration(name), value_type=value_type)
            for name, (_, value_type, _) in arguments.items()}


def generate_launch_description():
    default_params = PathJoinSubstitution([FindPackageShare("safety_monitor"), "config", "nodes.yaml"])
    declared = [
        DeclareLaunchArgument("namespace", default_value="",
                              description="namespace of all three nodes (one per robot)"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="node parameter file (default: the package's config/nodes.yaml)"),
    ] + [
        DeclareLaunchArgument(name, default_value=default, description=description)
        for name, (default, _, description) in {**SIM_ARGUMENTS, **MONITOR_ARGUMENTS}.items()
    ]
    namespace = LaunchConfiguration("namespace")
    params_file = LaunchConfiguration("params_file")
    sim_time = {"use_sim_time": True}

    sim = Node(
        package="safety_monitor", executable="sim_node", namespace=namespace, output="screen",
        parameters=[params_file, _parameters(SIM_ARGUMENTS)],
    )
    estimator = Node(
        package="safety_monitor", executable="estimator_node", namespace=namespace, output="screen",
        parameters=[params_file, sim_time],
    )
    monitor = Node(
        package="safety_monitor", executable="monitor_node", namespace=namespace, output="screen",
        parameters=[params_file, sim_time, _parameters(MONITOR_ARGUMENTS)],
    )
    stop_with_sim = RegisterEventHandler(OnProcessExit(
        target_action=sim, on_exit=[EmitEvent(event=Shutdown(reason="the simulation finished"))]))
    return LaunchDescription([*declared, monitor, estimator, sim, stop_with_sim])
