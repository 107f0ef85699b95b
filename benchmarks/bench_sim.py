"""Real-time factor of the headless workcell: every scripted task once, seed 0, unpaced.

Two consumers are timed: one that reads every 500 Hz state (`Episode.step`, as the ROS sim node
publishes) and one that reads every fifth (`run_episode(stride=5)`, as the ground-truth tests do).
CPU time via `time.process_time`, so other jobs on the machine inflate it less than wall time.
"""

from __future__ import annotations

import time

from safety_monitor.sim.runner import Episode, run_episode
from safety_monitor.sim.tasks import TASKS


def main() -> None:
    print("| task | simulated s | frames | every state: CPU s (x real time) | every 5th: CPU s (x real time) |")
    print("|---|---|---|---|---|")
    for name in TASKS:
        episode = Episode(name, None, 0)
        start = time.process_time()
        frames = 0
        while not episode.done:
            episode.step()
            frames += 1
        full = time.process_time() - start
        sim = episode.workcell.t
        start = time.process_time()
        for _ in run_episode(name, None, 0, stride=5):
            pass
        strided = time.process_time() - start
        print(
            f"| {name} | {sim:.2f} | {frames} | {full:.2f} ({sim / full:.1f}x) | {strided:.2f} ({sim / strided:.1f}x) |"
        )


if __name__ == "__main__":
    main()
