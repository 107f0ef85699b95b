"""I/O apart from the pipeline: rosbag2 bags (rosbags), CDR bytes, ROS messages, trace files, the wire format."""
