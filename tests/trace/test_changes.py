"""What a rebuild of the traces changed: new and grown traces, a later call joining two
traces (one absorbed into the other), an id that changed, incidents found and withdrawn."""

from __future__ import annotations

from agentshark.trace.changes import (
    IncidentFound,
    IncidentWithdrawn,
    TraceAbsorbed,
    TraceChanged,
    TraceChanges,
)
from agentshark.trace.model import Incident, Trace


def _trace(tid: str, *calls: str, origin: str = "history") -> Trace:
    return Trace(trace_id=tid, origin=origin, trace_id_source="generated", calls=list(calls))


def _incident(rule: str, call: str) -> Incident:
    return Incident(rule=rule, severity="warning", message=f"{rule} at {call}", call_id=call)


def test_a_new_trace_then_a_call_joining_it() -> None:
    changes = TraceChanges()
    (first,) = changes.diff([_trace("A", "call1", origin="single")], [])
    assert first == TraceChanged(
        trace=_trace("A", "call1", origin="single"), new=True, calls_added=("call1",), absorbed=()
    )
    (grown,) = changes.diff([_trace("A", "call1", "call2")], [])
    assert isinstance(grown, TraceChanged)
    assert (grown.new, grown.calls_added, grown.absorbed) == (False, ("call2",), ())


def test_nothing_changed_reports_nothing() -> None:
    changes = TraceChanges()
    traces = [_trace("A", "call1"), _trace("B", "call2")]
    changes.diff(traces, [])
    assert changes.diff([_trace("A", "call1"), _trace("B", "call2")], []) == []


def test_a_later_call_joining_two_traces_absorbs_one_into_the_other() -> None:
    changes = TraceChanges()
    changes.diff([_trace("A", "call1"), _trace("B", "call2")], [])
    updates = changes.diff([_trace("A", "call1", "call2", "call3")], [])
    assert updates == [
        TraceChanged(
            trace=_trace("A", "call1", "call2", "call3"),
            new=False,
            calls_added=("call2", "call3"),
            absorbed=("B",),
        ),
        TraceAbsorbed(trace_id="B", into=("A",)),
    ]


def test_a_trace_whose_id_changed_is_absorbed_into_its_new_id() -> None:
    changes = TraceChanges()
    changes.diff([_trace("generated1", "call1")], [])
    updates = changes.diff([_trace("4bf92f35", "call1", "call2", origin="traceparent")], [])
    assert updates == [
        TraceChanged(
            trace=_trace("4bf92f35", "call1", "call2", origin="traceparent"),
            new=True,
            calls_added=("call1", "call2"),
            absorbed=("generated1",),
        ),
        TraceAbsorbed(trace_id="generated1", into=("4bf92f35",)),
    ]


def test_incidents_found_then_withdrawn_when_a_later_call_resolves_them() -> None:
    changes = TraceChanges()
    pending = _incident("tool.no_result", "call1")
    assert changes.diff([], [pending]) == [IncidentFound(incident=pending)]
    assert changes.diff([], [pending]) == []
    other = _incident("call.incomplete", "call2")
    assert changes.diff([], [other]) == [
        IncidentWithdrawn(incident=pending),
        IncidentFound(incident=other),
    ]
