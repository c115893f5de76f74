"""Traces of agent runs: spans, how they were joined, and incidents.

A :class:`Trace` is one agent run: a synthesized agent span (``synthesized`` True: nothing on
the wire is that span) holding model spans (one per model call) and tool spans (one per tool
call the model asked for). ``origin`` says what joined the calls, strongest evidence first
(``traceparent``, ``previous_response_id``, ``conversation``, ``history``, ``app_id``,
``single``); ``evidence`` lists every join with what supports it; ``hints`` names other
traces that only share a client connection with it, close in time (the weakest hint, never
a join). A tool span stands for the
tool call and its execution: ``tool_call_id``, ``requested_by`` (the model call whose output
holds it), ``result_in`` (the model call whose input carries its result), ``execution`` (the
observed MCP/A2A/HTTP call, or None) and ``inferred`` (True when no execution was observed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Json = Any


@dataclass(slots=True, kw_only=True)
class Span:
    span_id: str
    parent_id: str | None
    kind: str  # "agent", "model" or "tool"
    name: str  # "invoke_agent", "chat {model}", "execute_tool {name}"
    started: float | None
    ended: float | None
    call_id: str | None = None  # the call this span stands for (model spans, observed tools)
    tool_call_id: str | None = None
    requested_by: str | None = None
    result_in: str | None = None
    execution: str | None = None
    inferred: bool = False
    synthesized: bool = False
    span_id_source: str = "generated"  # or "traceparent parent-id of <call>"
    links: list[dict[str, Json]] = field(default_factory=list)
    attributes: dict[str, Json] = field(default_factory=dict)  # model, tokens, arguments...

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            "span_id": self.span_id,
            "parent_id": self.parent_id,
            "kind": self.kind,
            "name": self.name,
            "started": self.started,
            "ended": self.ended,
            "links": self.links,
            "call_id": self.call_id,
        }
        if self.kind == "tool":
            out.update(
                tool_call_id=self.tool_call_id,
                requested_by=self.requested_by,
                result_in=self.result_in,
                execution=self.execution,
                inferred=self.inferred,
            )
        if self.synthesized:
            out["synthesized"] = True
        out["span_id_source"] = self.span_id_source
        out["attributes"] = self.attributes
        return out


@dataclass(slots=True, kw_only=True)
class Trace:
    trace_id: str
    origin: str
    trace_id_source: str  # "traceparent" or "generated"
    spans: list[Span] = field(default_factory=list)
    evidence: list[dict[str, Json]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)  # every call in the trace, in time order
    # weaker than evidence, never joined: another trace on the same connection, close in time
    hints: list[dict[str, Json]] = field(default_factory=list)

    def to_json(self) -> dict[str, Json]:
        return {
            "trace_id": self.trace_id,
            "origin": self.origin,
            "trace_id_source": self.trace_id_source,
            "evidence": self.evidence,
            "hints": self.hints,
            "calls": self.calls,
            "spans": [s.to_json() for s in self.spans],
        }


@dataclass(slots=True, kw_only=True)
class Incident:
    rule: str
    severity: str  # "error", "warning" or "info"
    message: str
    call_id: str | None = None
    exchange_id: str | None = None
    trace_id: str | None = None
    evidence: dict[str, Json] = field(default_factory=dict)  # call, part, JSON path, values

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
        }
        if self.call_id is not None:
            out["call_id"] = self.call_id
        if self.exchange_id is not None:
            out["exchange_id"] = self.exchange_id
        out["trace_id"] = self.trace_id
        out["evidence"] = self.evidence
        return out
