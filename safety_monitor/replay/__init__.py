"""Bag replay: score recorded rollouts with the live pipeline and write reports."""
