"""Predicate grounding: RobotState -> named booleans, with explicit debounce state. Pure: no rclpy."""
