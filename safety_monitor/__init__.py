"""safety_monitor: temporal-logic safety monitoring for ROS 2 manipulators.

Layers (DESIGN.md section 2): sources -> RobotState -> grounding -> PredicateFrame -> monitor.
Nothing below `nodes/` and `sources/` imports rclpy.
"""

__version__ = "0.1.0"
