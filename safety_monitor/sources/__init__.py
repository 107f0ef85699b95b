"""Adapters that turn ROS messages, rosbag2 bags and the simulator into RobotState frames."""
