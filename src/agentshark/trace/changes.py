"""How the traces changed between two builds of them, for a live view.

Traces are not built incrementally: :meth:`agentshark.trace.collect.Analysis.finish` builds
them again from every call kept (a later call can join two runs, give a tool span its
result, or bring the ``traceparent`` that names a trace). :class:`TraceChanges` compares each
build with the one before and says what changed, as facts:

- :class:`TraceChanged`: a trace that is new (``new``) or differs from its last report
  (another call joined it, a span got its result, an attribute changed); ``calls_added`` are
  its calls that its last report did not hold, ``absorbed`` the ids of other traces reported
  before whose calls are now in this one.
- :class:`TraceAbsorbed`: a trace reported before no longer exists: a later call joined its
  calls to others (``into``: the traces that hold them now). A trace whose id changed (its
  generated id gave way to a ``traceparent`` one) is absorbed into the trace of its new id.
- :class:`IncidentFound` / :class:`IncidentWithdrawn`: incidents are checked on the whole
  input too, and some only hold until a later call (a tool call whose result is still to
  come): an incident reported before and no longer found is withdrawn.

A trace is the same trace from one build to the next when its ``trace_id`` is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from agentshark.trace.model import Incident, Trace

__all__ = [
    "IncidentFound",
    "IncidentWithdrawn",
    "TraceAbsorbed",
    "TraceChanged",
    "TraceChanges",
    "TraceUpdate",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceChanged:
    trace: Trace
    new: bool
    calls_added: tuple[str, ...]
    absorbed: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceAbsorbed:
    trace_id: str
    into: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentFound:
    incident: Incident


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentWithdrawn:
    incident: Incident


TraceUpdate = TraceChanged | TraceAbsorbed | IncidentFound | IncidentWithdrawn


@dataclass(slots=True)
class _Reported:
    json: bytes
    calls: frozenset[str]


class TraceChanges:
    """The traces and incidents last reported, and what a new build changes."""

    def __init__(self) -> None:
        self._traces: dict[str, _Reported] = {}
        self._incidents: dict[bytes, Incident] = {}

    def diff(self, traces: Sequence[Trace], incidents: Sequence[Incident]) -> list[TraceUpdate]:
        """What changed since the last call (or since nothing, the first time)."""
        before = self._traces
        owner = {cid: tid for tid, rep in before.items() for cid in rep.calls}
        now: dict[str, _Reported] = {}
        out: list[TraceUpdate] = []
        for trace in traces:
            rep = _Reported(
                orjson.dumps(trace.to_json(), option=orjson.OPT_NON_STR_KEYS),
                frozenset(trace.calls),
            )
            now[trace.trace_id] = rep
            old = before.get(trace.trace_id)
            if old is not None and old.json == rep.json:
                continue
            held = old.calls if old is not None else frozenset()
            absorbed = {owner[c] for c in trace.calls if c in owner} - {trace.trace_id}
            out.append(
                TraceChanged(
                    trace=trace,
                    new=old is None,
                    calls_added=tuple(c for c in trace.calls if c not in held),
                    absorbed=tuple(sorted(absorbed)),
                )
            )
        where = {cid: tid for tid, rep in now.items() for cid in rep.calls}
        for tid, rep in before.items():
            if tid not in now:
                into = sorted({where[c] for c in rep.calls if c in where})
                out.append(TraceAbsorbed(trace_id=tid, into=tuple(into)))
        self._traces = now
        out.extend(self._incident_changes(incidents))
        return out

    def _incident_changes(self, incidents: Sequence[Incident]) -> list[TraceUpdate]:
        now = {
            orjson.dumps(i.to_json(), option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS): i
            for i in incidents
        }
        out: list[TraceUpdate] = [
            IncidentWithdrawn(incident=i) for k, i in self._incidents.items() if k not in now
        ]
        out.extend(IncidentFound(incident=i) for k, i in now.items() if k not in self._incidents)
        self._incidents = now
        return out
