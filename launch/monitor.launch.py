"""Estimator and monitor nodes against a real robot's topics (docs/ros.md, Topics), in its namespace.

    ros2 launch safety_monitor monitor.launch.py namespace:=robot1 config_dir:=/path/to/robot_config
    ros2 launch safety_monitor monitor.launch.py namespace:=left config_dir:=$HOME/aloha/left topics_file:=$HOME/aloha/topics.yaml

The robot publishes <ns>/joint_states, <ns>/wrist_wrench and <ns>/objects/<name>/pose (names and
QoS are parameters in the params file). Events go to <ns>/safety_monitor/events and the event log,
operator alerts to /diagnostics. One launch per robot runs several side by side. By default both nodes
share one process (`monitor_stack`: each frame reaches the monitor by a function call, half the latency
and CPU of two processes); `one_process:=false` starts them as two.
Every argument and the parameter file are checked before any node starts, and a node that exits with
an error ends the launch with exit code 1.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from safety_monitor.nodes.launch_checks import check_params_file, checked, fail_when_a_node_fails, typed
from safety_monitor.settings import EstimatorSettings, MonitorSettings
from safety_monitor.specs.model import load_specs

WHERE = "monitor.launch.py"
ESTIMATOR_ARGUMENTS = ("config_dir", "control_rate_hz", "topics_file")  # EstimatorSettings fields
MONITOR_ARGUMENTS = ("specs", "events_log", "control_rate_hz")  # MonitorSettings fields


def _nodes(context):
    """The nodes, once every argument has its type and range (raising stops the launch, exit 1)."""
    arguments = context.launch_configurations
    params_file = arguments["params_file"]
    check_params_file(params_file)
    estimator = checked(EstimatorSettings, {n: arguments[n] for n in ESTIMATOR_ARGUMENTS}, WHERE)
    monitor = checked(MonitorSettings, {n: arguments[n] for n in MONITOR_ARGUMENTS}, WHERE)
    if monitor.specs:
        load_specs(monitor.specs)
    sim_time = {"use_sim_time": typed(arguments["use_sim_time"], False, f"{WHERE}: use_sim_time")}
    one_process = typed(arguments["one_process"], True, f"{WHERE}: one_process")
    # an argument left '' (a file or folder not given) leaves the parameter to params_file, whose default is ''
    estimator_params = {n: v for n in ESTIMATOR_ARGUMENTS if (v := getattr(estimator, n)) != ""}
    monitor_params = {n: v for n in MONITOR_ARGUMENTS if (v := getattr(monitor, n)) != ""}
    namespace = arguments["namespace"]
    if one_process:
        nodes = [Node(package="safety_monitor", executable="monitor_stack", namespace=namespace, output="screen",
                      parameters=[params_file, sim_time, {**estimator_params, **monitor_params}])]
    else:
        nodes = [
            Node(package="safety_monitor", executable="monitor_node", namespace=namespace, output="screen",
                 parameters=[params_file, sim_time, monitor_params]),
            Node(package="safety_monitor", executable="estimator_node", namespace=namespace, output="screen",
                 parameters=[params_file, sim_time, estimator_params]),
        ]
    return [*fail_when_a_node_fails(nodes, WHERE), *nodes]


def generate_launch_description():
    default_params = PathJoinSubstitution([FindPackageShare("safety_monitor"), "config", "nodes.yaml"])
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value="", description="the robot's namespace"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="node parameter file (default: the package's config/nodes.yaml)"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="true when /clock drives time"),
        DeclareLaunchArgument("config_dir", default_value="",
                              description="folder with robot.yaml, objects.yaml, thresholds.yaml ('' = the package's)"),
        DeclareLaunchArgument("control_rate_hz", default_value="500.0", description="rate of the robot's joint_states"),
        DeclareLaunchArgument("topics_file", default_value="",
                              description="topic mapping YAML, as replay's --topics ('' = the topics.* parameters)"),
        DeclareLaunchArgument("specs", default_value="",
                              description="spec file ('' = the package's config/specs.yaml)"),
        DeclareLaunchArgument("events_log", default_value="", description="JSON Lines event log ('' = the default)"),
        DeclareLaunchArgument("one_process", default_value="true",
                              description="estimator and monitor in one process (monitor_stack) or two"),
        OpaqueFunction(function=_nodes),
    ])
