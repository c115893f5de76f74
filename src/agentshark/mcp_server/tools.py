"""What each tool of ``agentshark mcp-server`` answers, as plain JSON (no MCP here).

Every function takes the server's :class:`~agentshark.mcp_server.captures.Captures` and the
tool's arguments, and returns the structured answer (a dict), or raises
:class:`ToolFailureError` with a message for the client to read (a missing file, a path outside
the root, a call or trace id that is not in the capture, a bad filter). Answers are built
from the report's redacted dicts (:mod:`agentshark.library`) and bounded
(:mod:`agentshark.mcp_server.shape`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentshark.library.query import CallFilter
from agentshark.library.report import Report
from agentshark.library.views import Message, Span, Trace
from agentshark.mcp_server.captures import Captures, PathRefusedError
from agentshark.mcp_server.shape import EXCERPT, call_summary, clip, incident_json, page

Json = Any


MAX_EVIDENCE = 20  # joins of a trace shown (evidence_total says how many there are)
MAX_TOOLS = 100  # tool definitions of a call named (tool_definitions_total: how many)


class ToolFailureError(Exception):
    """A tool call that cannot be answered; the message says why."""


def _report(captures: Captures, paths: Sequence[str], keylogs: Sequence[str]) -> Report:
    try:
        return captures.report(paths, keylogs)
    except PathRefusedError as exc:
        raise ToolFailureError(str(exc)) from None


def _header(captures: Captures, report: Report, paths: Sequence[str]) -> dict[str, Json]:
    return {
        "captures": [captures.relative(captures.resolve(p)) for p in paths],
        "summary": report.summary(),
        "failures": list(report.failures),
    }


def _paged(items: Sequence[Any], offset: int, limit: int) -> tuple[list[Any], dict[str, Json]]:
    try:
        return page(items, offset, limit)
    except ValueError as exc:
        raise ToolFailureError(str(exc)) from None


def trace_index(report: Report) -> dict[str, str]:
    """call id -> the id of the trace holding it."""
    return {cid: t.trace_id for t in report.traces() for cid in t.calls}


def list_captures(captures: Captures, folder: str, offset: int, limit: int) -> dict[str, Json]:
    try:
        found = captures.listing(folder)
    except PathRefusedError as exc:
        raise ToolFailureError(str(exc)) from None
    chosen, facts = _paged(found, offset, limit)
    return {"root": str(captures.root), **facts, "files": chosen}


def list_traces(
    captures: Captures, paths: Sequence[str], keylogs: Sequence[str], offset: int, limit: int
) -> dict[str, Json]:
    report = _report(captures, paths, keylogs)
    incidents = [i.trace_id for i in report.incidents()]
    chosen, facts = _paged(report.traces(), offset, limit)
    rows = [_trace_row(report, t, incidents.count(t.trace_id)) for t in chosen]
    return {**_header(captures, report, paths), **facts, "traces": rows}


def _trace_row(report: Report, trace: Trace, incidents: int) -> dict[str, Json]:
    # a trace's calls can also name HTTP exchanges taken as tool executions
    calls = [c for c in map(report.get_call, trace.calls) if c is not None]
    agent = trace.spans[0] if trace.spans else None
    started = agent.started if agent else None
    ended = agent.ended if agent else None
    first = next((c for c in calls if c.input_messages), None)
    prompt = next((m.text for m in first.input_messages if m.text), "") if first else ""
    return {
        "trace_id": trace.trace_id,
        "origin": trace.origin,
        "calls": len(calls),
        "model_calls": len(trace.model_spans),
        "tool_calls": len(trace.tool_executions),
        "apis": sorted({c.api for c in calls}),
        "models": sorted({c.model for c in calls if c.model}),
        "tools": sorted({str(s.name).removeprefix("execute_tool ") for s in trace.tool_executions}),
        "errors": sum(1 for c in calls if c.status == "error"),
        "incomplete": sum(1 for c in calls if c.status == "incomplete"),
        "incidents": incidents,
        "started": started,
        "duration": None if started is None or ended is None else ended - started,
        "first_prompt": clip(prompt, EXCERPT) if prompt else None,
    }


def show_trace(
    captures: Captures,
    paths: Sequence[str],
    keylogs: Sequence[str],
    trace_id: str,
    offset: int,
    limit: int,
    max_chars: int,
) -> dict[str, Json]:
    report = _report(captures, paths, keylogs)
    try:
        trace = report.trace(trace_id)
    except KeyError as exc:
        raise ToolFailureError(exc.args[0]) from None
    ordered = _tree_order(trace)
    chosen, facts = _paged(ordered, offset, limit)
    spans = [_span_row(report, s, depth, max_chars) for s, depth in chosen]
    return {
        **_header(captures, report, paths),
        "trace_id": trace.trace_id,
        "origin": trace.origin,
        "calls": list(trace.calls),
        "evidence_total": len(trace.evidence),
        "evidence": clip(list(trace.evidence[:MAX_EVIDENCE]), max_chars),
        "incidents": [
            incident_json(i, max_chars) for i in report.incidents() if i.trace_id == trace.trace_id
        ],
        **facts,
        "tree": [_tree_line(row) for row in spans],
        "spans": spans,
    }


def _tree_order(trace: Trace) -> list[tuple[Span, int]]:
    """The spans depth first (children in report order), with their depth."""
    children: dict[str | None, list[Span]] = {}
    for s in trace.spans:
        children.setdefault(s.parent_id, []).append(s)
    known = {s.span_id for s in trace.spans}
    roots = [s for s in trace.spans if s.parent_id is None or s.parent_id not in known]
    out: list[tuple[Span, int]] = []

    def walk(span: Span, depth: int) -> None:
        out.append((span, depth))
        for child in children.get(span.span_id, []):
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return out


def _span_row(report: Report, span: Span, depth: int, max_chars: int) -> dict[str, Json]:
    row: dict[str, Json] = {
        "depth": depth,
        "span_id": span.span_id,
        "parent_id": span.parent_id,
        "kind": span.kind,
        "name": span.name,
        "call_id": span.call_id,
        "started": span.started,
        "duration": None
        if span.started is None or span.ended is None
        else span.ended - span.started,
    }
    call = report.get_call(span.call_id) if span.call_id is not None else None
    if call is not None:
        row["status"] = call.status
        row["finish_reasons"] = list(call.finish_reasons)
    if span.kind == "tool":
        row.update(
            tool_call_id=span.tool_call_id,
            requested_by=span.requested_by,
            result_in=span.result_in,
            execution=span.execution,
            inferred=span.inferred,
        )
    row["attributes"] = clip(dict(span.attributes), max_chars)
    return row


def _tree_line(row: dict[str, Json]) -> str:
    bits = [f"{'  ' * row['depth']}{row['name']}"]
    if row.get("call_id"):
        bits.append(f"[{row['call_id']}]")
    if row.get("status"):
        bits.append(row["status"])
    if row["kind"] == "tool":
        where = row.get("execution") or ("not seen on the wire" if row.get("inferred") else None)
        if where:
            bits.append(f"ran: {where}")
        if row.get("result_in"):
            bits.append(f"result in {row['result_in']}")
    return " ".join(str(b) for b in bits)


def show_call(
    captures: Captures,
    paths: Sequence[str],
    keylogs: Sequence[str],
    call_id: str,
    offset: int,
    limit: int,
    max_chars: int,
) -> dict[str, Json]:
    """One call, its input messages paged (``offset``/``limit``; a negative ``offset``
    counts from the end: -5 is the last five), every part clipped to ``max_chars``."""
    report = _report(captures, paths, keylogs)
    try:
        call = report.call(call_id)
    except KeyError as exc:
        raise ToolFailureError(exc.args[0]) from None
    inputs = list(enumerate(call.input_messages))
    start = max(len(inputs) + offset, 0) if offset < 0 else offset
    chosen, facts = _paged(inputs, start, limit)
    d = call.data
    return {
        **_header(captures, report, paths),
        "call": call_summary(call, trace_index(report)),
        "system_instructions": [clip(dict(p.data), max_chars) for p in call.system_instructions],
        "input_messages_page": facts,
        "input_messages": [_message(m, i, max_chars) for i, m in chosen],
        "output_messages": [_message(m, i, max_chars) for i, m in enumerate(call.output_messages)],
        "tool_definitions_total": len(d.get("tool_definitions") or []),
        "tool_definitions": [_tool_name(t) for t in (d.get("tool_definitions") or [])[:MAX_TOOLS]],
        "request_params": clip(d.get("request_params"), max_chars),
        "usage": clip(dict(call.usage.data), max_chars) if call.usage else None,
        "error": clip(d.get("error"), max_chars),
        "ids": clip(d.get("ids"), max_chars),
        "timing": d.get("timing"),
        "diagnostics": clip(d.get("diagnostics"), max_chars),
    }


def _message(m: Message, index: int, max_chars: int) -> dict[str, Json]:
    out: dict[str, Json] = {"index": index, "role": m.role}
    if m.name is not None:
        out["name"] = m.name
    if m.finish_reason is not None:
        out["finish_reason"] = m.finish_reason
    out["parts"] = [clip(dict(p.data), max_chars) for p in m.parts]
    return out


def _tool_name(tool: Json) -> Json:
    if not isinstance(tool, dict):
        return clip(tool, EXCERPT)
    function = tool.get("function")
    if isinstance(function, dict) and "name" in function:
        return function["name"]
    return tool.get("name", clip(tool, EXCERPT))


def list_incidents(
    captures: Captures,
    paths: Sequence[str],
    keylogs: Sequence[str],
    severity: str | None,
    rule: str | None,
    offset: int,
    limit: int,
    max_chars: int,
) -> dict[str, Json]:
    if severity is not None and severity not in ("error", "warning", "info"):
        raise ToolFailureError(f"severity {severity!r}: one of error, warning, info")
    report = _report(captures, paths, keylogs)
    found = report.incidents(rule=rule, severity=severity)
    chosen, facts = _paged(found, offset, limit)
    return {
        **_header(captures, report, paths),
        **facts,
        "incidents": [incident_json(i, max_chars) for i in chosen],
    }


def search_calls(
    captures: Captures,
    paths: Sequence[str],
    keylogs: Sequence[str],
    filters: CallFilter,
    offset: int,
    limit: int,
) -> dict[str, Json]:
    report = _report(captures, paths, keylogs)
    found = [c for c in report.calls() if filters.matches(c)]
    chosen, facts = _paged(found, offset, limit)
    traces = trace_index(report)
    return {
        **_header(captures, report, paths),
        **facts,
        "calls": [call_summary(c, traces) for c in chosen],
    }


def call_filter(
    api: str | None,
    model: str | None,
    operation: str | None,
    tool: str | None,
    text: str | None,
    status: str | None,
) -> CallFilter:
    try:
        return CallFilter(
            api=api or None,
            model=model or None,
            operation=operation or None,
            tool=tool or None,
            text=text or None,
            status=status or None,
        )
    except ValueError as exc:
        raise ToolFailureError(str(exc)) from None
