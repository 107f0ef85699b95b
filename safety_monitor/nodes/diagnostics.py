"""The monitor node's per-property /diagnostics status (pure: no rclpy), running and after a clean stop.

A diagnostics consumer (rqt_robot_monitor, the aggregator) keeps the last status per name for good, so
the last one a stopped monitor sends must say it stopped: an OK "satisfied so far" left behind reads as a
property still watched. After a stop every property is STALE, save the ones violated at the stop (ERROR,
as the summary), and each message keeps the final verdict the closed trace left.
"""

from __future__ import annotations

from safety_monitor.io.messages import ERROR, OK, STALE
from safety_monitor.monitor.events import Event
from safety_monitor.pipeline.supervisor import RolloutEvent


def property_status(
    opened: Event | None, closed: RolloutEvent | None, unknown: str | None, stopped: bool
) -> tuple[int, str]:
    """(level, message) of one property. `opened`: its open violation (after a stop: the one open at the
    stop); `closed`: its last episode's closing event, any rollout; `unknown`: why its verdict is unknown,
    None when known; `stopped`: the monitor stopped cleanly and checks nothing more."""
    if opened is not None:
        message = f"violated since frame {opened.frame} (t={_secs(opened.t)})"
        if opened.objects:  # what it is about, when the estimator said
            message += f", about {', '.join(opened.objects)}"
        if stopped:
            end = f"; the trace's end closed it: {_words(closed.event)}" if closed is not None else ""
            return ERROR, f"stopped while {message}{end}"
        return ERROR, message
    if unknown is not None:
        return STALE, f"stopped; unknown at the stop: {unknown}" if stopped else f"unknown: {unknown}"
    if closed is not None:  # not violated now, yet not "satisfied so far"
        last = closed.event
        verdict = f"the last one {_words(last)} at rollout {closed.rollout} frame {last.frame} (t={_secs(last.t)})"
        return (
            (STALE, f"stopped; no violation open at the stop; {verdict}")
            if stopped
            else (
                OK,
                f"no open violation; {verdict}",
            )
        )
    return (STALE, "stopped; never violated") if stopped else (OK, "satisfied so far")


def _words(event: Event) -> str:
    return event.kind.replace("_", " ")


def _secs(t: float | None) -> str:
    return "?" if t is None else f"{t:.3f} s"
