"""Estimator and monitor nodes against a real robot's topics (DESIGN.md section 4), in its namespace.

    ros2 launch safety_monitor monitor.launch.py namespace:=robot1 config_dir:=/path/to/robot_config

The robot publishes <ns>/joint_states, <ns>/wrist_wrench and <ns>/objects/<name>/pose (names and
QoS are parameters in the params file). Events go to <ns>/safety_monitor/events and the event log,
operator alerts to /diagnostics. One launch per robot runs several side by side. By default both nodes
share one process (`monitor_stack`: each frame reaches the monitor by a function call, half the latency
and CPU of two processes); `one_process:=false` starts them as two.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    default_params = PathJoinSubstitution([FindPackageShare("safety_monitor"), "config", "nodes.yaml"])
    declared = [
        DeclareLaunchArgument("namespace", default_value="", description="the robot's namespace"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="node parameter file (default: the package's config/nodes.yaml)"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="true when /clock drives time"),
        DeclareLaunchArgument("config_dir", default_value="",
                              description="folder with robot.yaml, objects.yaml, thresholds.yaml ('' = the package's)"),
        DeclareLaunchArgument("control_rate_hz", default_value="500.0", description="rate of the robot's joint_states"),
        DeclareLaunchArgument("specs", default_value="",
                              description="spec file ('' = the package's config/specs.yaml)"),
        DeclareLaunchArgument("events_log", default_value="", description="JSON Lines event log ('' = the default)"),
        DeclareLaunchArgument("one_process", default_value="true",
                              description="estimator and monitor in one process (monitor_stack) or two"),
    ]
    namespace = LaunchConfiguration("namespace")
    params_file = LaunchConfiguration("params_file")
    sim_time = {"use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)}

    estimator_params = {
        "config_dir": ParameterValue(LaunchConfiguration("config_dir"), value_type=str),
        "control_rate_hz": ParameterValue(LaunchConfiguration("control_rate_hz"), value_type=float),
    }
    monitor_params = {
        "specs": ParameterValue(LaunchConfiguration("specs"), value_type=str),
        "events_log": ParameterValue(LaunchConfiguration("events_log"), value_type=str),
        "control_rate_hz": ParameterValue(LaunchConfiguration("control_rate_hz"), value_type=float),
    }
    one_process = LaunchConfiguration("one_process")
    stack = Node(
        package="safety_monitor", executable="monitor_stack", namespace=namespace, output="screen",
        parameters=[params_file, sim_time, {**estimator_params, **monitor_params}], condition=IfCondition(one_process),
    )
    estimator = Node(
        package="safety_monitor", executable="estimator_node", namespace=namespace, output="screen",
        parameters=[params_file, sim_time, estimator_params], condition=UnlessCondition(one_process),
    )
    monitor = Node(
        package="safety_monitor", executable="monitor_node", namespace=namespace, output="screen",
        parameters=[params_file, sim_time, monitor_params], condition=UnlessCondition(one_process),
    )
    return LaunchDescription([*declared, stack, monitor, estimator])
