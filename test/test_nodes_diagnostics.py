"""The monitor node's per-property /diagnostics status (pure), running and after a clean stop: a stopped
monitor's last status is kept for good by diagnostics tools, so it must never read OK as if still watching."""

from safety_monitor.enums import EventKind
from safety_monitor.io.messages import ERROR, OK, STALE
from safety_monitor.monitor.events import Event
from safety_monitor.nodes.diagnostics import property_status
from safety_monitor.pipeline.supervisor import RolloutEvent

OPENED = Event(EventKind.OPENED, "no_drop", "grasp", frame=7, t=12.25, episode=1, objects=("mug",))


def closing(kind: EventKind, frame: int = 9, t: float = 12.5) -> RolloutEvent:
    return RolloutEvent(2, Event(kind, "no_drop", "grasp", frame=frame, t=t, episode=1))


def test_running_statuses_say_what_is_watched():
    assert property_status(OPENED, None, None, stopped=False) == (
        ERROR,
        "violated since frame 7 (t=12.250 s), about mug",
    )
    assert property_status(None, None, "inputs stale", stopped=False) == (STALE, "unknown: inputs stale")
    assert property_status(None, closing(EventKind.RECOVERED), None, stopped=False) == (
        OK,
        "no open violation; the last one recovered at rollout 2 frame 9 (t=12.500 s)",
    )
    assert property_status(None, None, None, stopped=False) == (OK, "satisfied so far")


def test_after_a_stop_no_status_is_ok_and_each_keeps_its_final_verdict():
    assert property_status(OPENED, closing(EventKind.UNRECOVERED_AT_END), None, stopped=True) == (
        ERROR,
        "stopped while violated since frame 7 (t=12.250 s), about mug; the trace's end closed it: unrecovered at end",
    )
    assert property_status(None, None, "predicates unknown", stopped=True) == (
        STALE,
        "stopped; unknown at the stop: predicates unknown",
    )
    assert property_status(None, closing(EventKind.RECOVERED), None, stopped=True) == (
        STALE,
        "stopped; no violation open at the stop; the last one recovered at rollout 2 frame 9 (t=12.500 s)",
    )
    assert property_status(None, None, None, stopped=True) == (STALE, "stopped; never violated")
