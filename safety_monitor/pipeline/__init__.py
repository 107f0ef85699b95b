"""The pure pipeline, shared by every driver: inputs -> Estimator (assemble + ground) -> Supervisor -> events.

No rclpy here: the nodes, replay and the in-process sim pass in their clock and their bytes.
"""
