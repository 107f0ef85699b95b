"""SENTINEL levels: plan checks, the computation tree of many trajectories with a CTL checker,
lifting LTLf safety properties to CTL, and counterexamples a planner can consume."""
