"""safety_monitor: temporal-logic safety monitoring for ROS 2 manipulators.

Data flow (DESIGN.md section 2): sources (io/, nodes/, sim/) -> pipeline (assemble + ground -> supervise
-> monitor) -> sinks (events, /diagnostics, reports). Layers import downward only (test/test_layout.py);
nothing outside `nodes/` imports rclpy.
"""

__version__ = "0.1.0"
