"""rclpy adapters around the pure core: sim, estimator and monitor nodes, the operator console.

Each node is a thin shell: the estimator is `FrameAssembler` + `Grounder` (the same code path replay
uses), the monitor is `SpecSetMonitor` fed by the predicates topic. Topic names are relative, so a
namespace per robot runs several side by side; `/diagnostics` stays global, as its tools expect.
"""
