"""The report's traces -> OTLP spans: a projection, no second analysis.

Each :class:`~agentshark.trace.model.Trace` becomes one OTLP trace with the same ids (the
W3C ``traceparent`` ones where the wire had them, in HTTP headers or MCP ``params._meta``;
derived deterministically otherwise, as :mod:`agentshark.trace.spans` does). Its spans:

- the agent span: ``invoke_agent``, INTERNAL, the root;
- a model span per model call: ``chat {model}``, CLIENT, :func:`.attributes.model_call`;
- a tool span per tool call a model asked for: ``execute_tool {name}``, INTERNAL, with
  ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, and the call's arguments and result as JSON strings, whole (taken
  from the model call that asked and the one that carried the result back, else from the
  executing MCP call); the MCP attributes of the ``tools/call`` that ran it are added to it
  rather than a second span (mcp.md: "If an outer execute_tool span exists, add MCP
  attributes to it"); a tool run by an A2A or GraphQL call is that call's CLIENT span (with
  ``graphql.operation.type``/``.name`` and ``graphql.document``); an MCP
  ``tools/call`` or A2A message no model asked for is its CLIENT span,
  ``tools/call {tool}`` or ``{a2a.method.name}`` (``SendMessage``);
- a messaging span (a queue message published, delivered or settled): PRODUCER, CONSUMER
  or CLIENT, :mod:`.messaging`;
- every other call of the trace (MCP ``initialize``, ``tools/list``..., A2A calls, other
  provider API calls): a CLIENT span of its own, ``{mcp.method.name} {target}``,
  ``{a2a.method.name}``, ``retrieval {gen_ai.data_source.id}`` (:mod:`.retrieval`) or
  ``{operation} {model}`` (``embeddings {model}``); the retrieval and embeddings calls a tool
  call caused (its execution when that is one, and its ``work``) are CLIENT spans under its
  ``execute_tool`` span, which stays INTERNAL.

Joins that are evidence but not parenthood are links: a model call continuing an earlier one
(history, previous_response_id...) links the earlier call's span; a trace that only shares a
connection with another (the report's ``hints``) links the other trace's root. Times are the
wire's, in ns since the epoch; a span with no time at all (a cassette) has 0 and says so in
``agentshark.times_unknown``. Span status is ERROR with the error's message when the call
failed (``error.type`` set), else UNSET.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from agentshark.output.otlp import attributes as a
from agentshark.output.otlp import names as n
from agentshark.output.otlp import retrieval as r
from agentshark.output.otlp.messaging import messaging_span
from agentshark.trace.context import TraceParent, parse_traceparent
from agentshark.trace.model import Span, Trace
from agentshark.trace.spans import HttpRequest, hex_id

Json = Any


@dataclass(frozen=True, slots=True, kw_only=True)
class OtlpLink:
    trace_id: str
    span_id: str
    attributes: dict[str, Json]


@dataclass(frozen=True, slots=True, kw_only=True)
class OtlpSpan:
    """One span as OTLP has it: hex ids, times in ns, ``kind`` ``internal`` or ``client``,
    ``error`` the status description (None: status UNSET)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Json]
    links: tuple[OtlpLink, ...] = ()
    error: str | None = None


@dataclass(slots=True)
class CallIndex:
    """What the projection reads of the report besides its traces: the redacted ``calls``
    entries by id, each call's server (host, port) and transport, the unclaimed HTTP
    requests that executed tools."""

    calls: dict[str, dict[str, Json]] = field(default_factory=dict)
    servers: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # by exchange
    transports: dict[str, str] = field(default_factory=dict)  # by exchange
    http: dict[str, HttpRequest] = field(default_factory=dict)  # by exchange


def ns(t: float | None) -> int | None:
    return None if t is None else round(t * 1e9)


def project(traces: list[Trace], index: CallIndex) -> Iterator[list[OtlpSpan]]:
    """The spans of each trace, one list per trace."""
    where: dict[str, tuple[str, str]] = {}  # call id -> (trace id, span id) of its span
    roots: dict[str, str] = {}
    for trace in traces:
        for span in trace.spans:
            if span.call_id is not None and span.kind == "model":
                where[span.call_id] = (trace.trace_id, span.span_id)
            if span.parent_id is None:
                roots[trace.trace_id] = span.span_id
    for trace in traces:
        yield list(_trace_spans(trace, index, where, roots))


def _trace_spans(
    trace: Trace,
    index: CallIndex,
    where: Mapping[str, tuple[str, str]],
    roots: Mapping[str, str],
) -> Iterator[OtlpSpan]:
    root = next(s for s in trace.spans if s.parent_id is None)
    used = {s.span_id for s in trace.spans}
    covered = {s.call_id for s in trace.spans} | {s.execution for s in trace.spans}
    for span in trace.spans:
        if span.kind == "agent":
            yield _agent(trace, span, roots)
        elif span.kind == "model":
            yield _model(trace, span, index, where)
        elif span.kind == "messaging":
            yield messaging_span(span, partial(_span, trace.trace_id, span), _message_link)
        else:
            yield _tool(trace, span, index)
            for cid in _work(span, index):  # retrieval, embeddings: the tool's child spans
                covered.add(cid)
                span_id = hex_id(f"otlp {trace.trace_id} {cid}", 16)
                used.add(span_id)
                yield _other(trace.trace_id, span_id, span.span_id, index.calls[cid], index)
    for cid in trace.calls:
        call = index.calls.get(cid)
        if call is None or cid in covered:
            continue
        span_id = _wire_span_id(call, used) or hex_id(f"otlp {trace.trace_id} {cid}", 16)
        used.add(span_id)
        yield _other(trace.trace_id, span_id, root.span_id, call, index)


def _times(started: float | None, ended: float | None) -> tuple[int, int, bool]:
    start, end = ns(started), ns(ended)
    if start is None and end is None:
        return 0, 0, False
    start = start if start is not None else end
    end = end if end is not None else start
    assert start is not None and end is not None
    return start, end, True


def _span(
    trace_id: str,
    span: Span,
    *,
    kind: str,
    attributes: dict[str, Json],
    links: tuple[OtlpLink, ...] = (),
    error: str | None = None,
    name: str | None = None,
) -> OtlpSpan:
    start, end, known = _times(span.started, span.ended)
    if not known:
        attributes[n.TIMES_UNKNOWN] = True
    attributes[n.ID_SOURCE] = span.span_id_source
    return OtlpSpan(
        trace_id=trace_id,
        span_id=span.span_id,
        parent_id=span.parent_id,
        name=name or span.name,
        kind=kind,
        start_ns=start,
        end_ns=end,
        attributes=attributes,
        links=links,
        error=error,
    )


def _agent(trace: Trace, span: Span, roots: Mapping[str, str]) -> OtlpSpan:
    attrs: dict[str, Json] = {
        n.OPERATION: "invoke_agent",
        n.ORIGIN: trace.origin,
        n.SYNTHESIZED: True,
    }
    links = []
    seen: set[str] = set()
    for hint in trace.hints:
        other = hint.get("trace_id")
        if isinstance(other, str) and other in roots and other not in seen:
            seen.add(other)
            links.append(
                OtlpLink(
                    trace_id=other,
                    span_id=roots[other],
                    attributes={n.LINK_ORIGIN: str(hint.get("origin"))},
                )
            )
    return _span(trace.trace_id, span, kind="internal", attributes=attrs, links=tuple(links))


def _message_link(link: dict[str, Json]) -> OtlpLink | None:
    """A messaging span's link to the publish span of its message."""
    trace_id, span_id = link.get("trace_id"), link.get("span_id")
    if not isinstance(trace_id, str) or not isinstance(span_id, str):
        return None
    return OtlpLink(
        trace_id=trace_id, span_id=span_id, attributes={n.LINK_ORIGIN: str(link.get("origin"))}
    )


def _model(
    trace: Trace, span: Span, index: CallIndex, where: Mapping[str, tuple[str, str]]
) -> OtlpSpan:
    call = index.calls.get(span.call_id or "")
    attrs: dict[str, Json] = a.model_call(call) if call is not None else {}
    message = None
    if call is not None:
        a.server(attrs, index.servers.get(call["exchange_id"]))
        message = a.error({}, call)
    links = []
    for link in span.links:
        target = where.get(str(link.get("call_id")))
        if target is not None:
            links.append(
                OtlpLink(
                    trace_id=target[0],
                    span_id=target[1],
                    attributes={n.LINK_ORIGIN: str(link.get("origin"))},
                )
            )
    return _span(
        trace.trace_id, span, kind="client", attributes=attrs, links=tuple(links), error=message
    )


def _tool(trace: Trace, span: Span, index: CallIndex) -> OtlpSpan:
    name = span.name.removeprefix("execute_tool").strip() or None
    attrs: dict[str, Json] = {n.OPERATION: "execute_tool"}
    if name is not None:
        attrs[n.TOOL_NAME] = name
        asked = index.calls.get(span.requested_by or "")
        if asked is not None and a.is_function(asked, name):
            attrs[n.TOOL_TYPE] = "function"
    if span.tool_call_id is not None:
        attrs[n.TOOL_CALL_ID] = span.tool_call_id
    arguments, result = _tool_values(span, index)
    if arguments is not _MISSING:
        attrs[n.TOOL_ARGUMENTS] = a.json_text(arguments)
    if result is not _MISSING:
        attrs[n.TOOL_RESULT] = a.json_text(result)
    attrs[n.INFERRED] = span.inferred
    for key, attr in (("execution_evidence", n.EVIDENCE), ("confidence", n.CONFIDENCE)):
        if span.attributes.get(key) is not None:
            attrs[attr] = span.attributes[key]
    kind, message, title = _execution(span, name, index, attrs)
    return _span(trace.trace_id, span, kind=kind, attributes=attrs, error=message, name=title)


def _execution(
    span: Span, name: str | None, index: CallIndex, attrs: dict[str, Json]
) -> tuple[str, str | None, str | None]:
    """The attributes of a tool span's observed execution (MCP, A2A, GraphQL or HTTP), added to
    ``attrs``; the span's kind, status description and name when it is the call's own."""
    kind, message, title = "internal", None, None
    execution = index.calls.get(span.execution or "")
    if execution is not None and span.execution in _work(span, index):
        attrs[n.EXCHANGE_ID] = execution["exchange_id"]  # its own CLIENT span is the child
    elif execution is not None:
        attrs.update(a.common(execution))
        if execution["api"] == "mcp":
            transport = index.transports.get(execution["exchange_id"])
            attrs.update(a.mcp_call(execution, transport))
            if span.requested_by is None:  # no model asked: the MCP client span itself
                kind, title = "client", " ".join(filter(None, ["tools/call", name]))
        elif execution["api"] == "graphql":
            kind = "client"  # the GraphQL request is the tool's execution: its CLIENT span
            attrs.update(a.graphql_call(execution))
        elif execution["api"] == "a2a":
            kind = "client"
            attrs.update(a.a2a_call(execution))
            if span.requested_by is None:  # a message to a remote agent, no tool call
                title = str(execution.get("operation") or "a2a")
                del attrs[n.OPERATION]
                attrs.pop(n.TOOL_NAME, None)
        a.server(attrs, index.servers.get(execution["exchange_id"]))
        message = a.error(attrs, execution)
        if attrs.get(n.ERROR_TYPE) == n.MCP_TOOL_ERROR:
            message = message or a.tool_error_text(execution)
    elif (req := index.http.get(span.execution or "")) is not None:
        attrs[n.EXCHANGE_ID] = req.exchange_id
        attrs[n.HTTP_METHOD] = req.method
        attrs[n.URL_FULL] = req.url
        http = span.attributes.get("http")
        if isinstance(http, dict) and isinstance(http.get("route"), str):
            attrs[n.URL_TEMPLATE] = http["route"]
        if isinstance(http, dict) and isinstance(http.get("operation_id"), str):
            attrs[n.OPERATION_ID] = http["operation_id"]
        if req.status:
            attrs[n.HTTP_STATUS] = req.status
            if req.status >= 400:
                attrs[n.ERROR_TYPE] = str(req.status)
                message = f"HTTP {req.status}"
    return kind, message, title


_MISSING = object()


def _tool_values(span: Span, index: CallIndex) -> tuple[Json, Json]:
    """The tool call's arguments and result, whole: from the asking call's output part and
    the answering call's input part, else the executing MCP call, else the trace's (slim)
    values."""
    arguments: Json = span.attributes.get("arguments", _MISSING)
    if span.attributes.get("arguments_error") is not None:
        arguments = span.attributes.get("arguments_raw")
    result: Json = span.attributes.get("result", _MISSING)
    asked = index.calls.get(span.requested_by or "")
    name = span.name.removeprefix("execute_tool").strip() or None
    part = _part(asked, "output_messages", "tool_call", span.tool_call_id, name) if asked else None
    if part is not None:
        arguments = a.otel_part(part).get("arguments")
    answered = index.calls.get(span.result_in or "")
    reply = (
        _part(answered, "input_messages", "tool_call_response", span.tool_call_id)
        if answered
        else None
    )
    execution = index.calls.get(span.execution or "")
    if reply is not None:
        result = reply.get("response")
    elif execution is not None and execution["api"] == "mcp":
        found = a.answer(execution)
        if found is not None:
            result = found
    if execution is not None and execution["api"] == "graphql":
        found_args, found_result = a.graphql_values(execution)
        if asked is None:
            arguments = found_args
        if reply is None:
            result = found_result
    if asked is None and execution is not None and execution["api"] == "mcp":
        tool = a.asked_tool(execution)
        if tool is not None:
            arguments = a.otel_part(tool).get("arguments")
    return arguments, result


def _part(
    call: dict[str, Json],
    section: str,
    kind: str,
    tool_call_id: str | None,
    name: str | None = None,
) -> dict[str, Json] | None:
    """The part of ``call`` with that tool call id; for a tool call without an id (Gemini,
    Ollama), the only tool call of that name. Else None: the trace matched it by position,
    and its (slim) values are what the export has."""
    parts = [p for m in call.get(section) or [] for p in m["parts"] if p.get("type") == kind]
    if tool_call_id is not None:
        return next((dict(p) for p in parts if p.get("id") == tool_call_id), None)
    named = [p for p in parts if name is not None and p.get("name") == name]
    return dict(named[0]) if len(named) == 1 else None


def _work(span: Span, index: CallIndex) -> list[str]:
    """The calls a tool span caused that are spans of their own under it: its execution
    when that is a retrieval or embeddings call, and the others of ``attributes["work"]``."""
    out = []
    execution = index.calls.get(span.execution or "")
    if execution is not None and (
        r.is_retrieval(execution) or execution.get("operation") in _EMBEDDINGS
    ):
        out.append(execution["id"])
    for item in span.attributes.get("work") or []:
        cid = item.get("call_id") if isinstance(item, dict) else None
        if isinstance(cid, str) and cid in index.calls and cid not in out:
            out.append(cid)
    return sorted(out, key=lambda c: (index.calls[c].get("timing") or {}).get("started") or 0.0)


_EMBEDDINGS = ("embeddings", "embeddings.batch")


def _wire_span_id(call: dict[str, Json], used: set[str]) -> str | None:
    """The parent-id of the call's own ``traceparent`` when no other span has it."""
    value = (call.get("ids") or {}).get("traceparent")
    parsed = parse_traceparent(value) if isinstance(value, str) else None
    if isinstance(parsed, TraceParent) and parsed.parent_id not in used:
        return parsed.parent_id
    return None


def _other(
    trace_id: str, span_id: str, parent: str, call: dict[str, Json], index: CallIndex
) -> OtlpSpan:
    """A call of the trace that is no model call and ran no tool call: its CLIENT span."""
    timing = call.get("timing") or {}
    ended = timing.get("ended") or timing.get("first_token") or timing.get("first_byte")
    start, end, known = _times(timing.get("started"), ended)
    op = str(call.get("operation") or call["api"])
    attrs = a.common(call)
    attrs[n.COMPLETE] = bool(call.get("complete"))
    if call["api"] == "mcp":
        attrs.update(a.mcp_call(call, index.transports.get(call["exchange_id"])))
        target = a.mcp_target(call)
        name = f"{op} {target}" if target else op
    elif call["api"] == "a2a":
        attrs.update(a.a2a_call(call))
        name = op
    elif r.is_retrieval(call):
        attrs.update(r.retrieval_call(call))
        name = r.span_name(call)
    else:
        attrs.update(a.model_call(call))
        model = call.get("response_model") or call.get("request_model")
        name = f"{attrs[n.OPERATION]} {model}" if model else str(attrs[n.OPERATION])
    a.server(attrs, index.servers.get(call["exchange_id"]))
    message = a.error(attrs, call)
    if attrs.get(n.ERROR_TYPE) == n.MCP_TOOL_ERROR:
        message = message or a.tool_error_text(call)
    if not known:
        attrs[n.TIMES_UNKNOWN] = True
    attrs[n.ID_SOURCE] = "traceparent" if _wire_span_id(call, set()) == span_id else "generated"
    return OtlpSpan(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent,
        name=name,
        kind="client",
        start_ns=start,
        end_ns=end,
        attributes=attrs,
        error=message,
    )
