"""The spans of one trace: the synthesized agent span, model spans and tool spans, with
their ids (see :mod:`agentshark.trace.build` for how calls were grouped and tools matched)."""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agentshark.apis.graphql.calls import operations_of
from agentshark.apis.model import Call, Json, TextPart, ToolCallPart, ToolCallResponsePart
from agentshark.trace.context import TraceParent
from agentshark.trace.history import HistoryLink, is_model_call
from agentshark.trace.model import Span, Trace
from agentshark.trace.routes import http_execution

# Origins, strongest first: a trace's origin is the strongest of its joins.
ORIGINS = (
    "traceparent",
    "previous_response_id",
    "conversation",
    "history",
    "tool_call",
    "tool_definitions",
    "mcp_session",
    "a2a_context",
    "app_id",
    "single",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpRequest:
    """What the trace needs of an HTTP exchange no API family claimed."""

    exchange_id: str
    method: str
    url: str
    body: bytes  # the request body, decoded, at most 64 KiB
    started: float | None
    ended: float | None
    status: int | None
    traceparent: str | None = None  # the request's header, as sent
    # a wire protocol's operation (a SQL statement, a queue publish): what a tool span says
    # of it (trace.routes.wire_execution), instead of a method and a path
    operation: dict[str, Json] | None = None


@dataclass(slots=True)
class ToolUse:
    """A tool call the model asked for (or an execution no one asked for) and what was
    found for it."""

    part: ToolCallPart | None
    requested_by: Call | None
    result_in: Call | None
    result: Json
    execution: Call | HttpRequest | None
    evidence: str | None
    confidence: float | None
    task_result: Call | None = None  # the tasks/result of a task-augmented execution
    # retrieval, memory and embeddings calls it caused besides its execution (trace.retrieval)
    work: list[tuple[Call, str, float]] = field(default_factory=list)


def exec_id(x: Call | HttpRequest) -> str:
    return x.id if isinstance(x, Call) else x.exchange_id


def make_trace(
    group: Sequence[Call],
    http: Sequence[HttpRequest],
    tools: Sequence[ToolUse],
    evidence: list[dict[str, Json]],
    parents: Mapping[str, TraceParent],
    links: Mapping[str, HistoryLink],
) -> Trace:
    origins = {e["origin"] for e in evidence}
    origin = next((o for o in ORIGINS if o in origins), "single")
    members = [c.id for c in group] + [h.exchange_id for h in http]
    ids = Counter(parents[m].trace_id for m in members if m in parents)
    seed = run_seed(group[0])
    if ids:
        trace_id, source = ids.most_common(1)[0][0], "traceparent"
    else:
        trace_id, source = hex_id("trace " + seed, 32), "generated"
    used_parents = Counter(parents[m].parent_id for m in members if m in parents)
    shared = [p for p, n in used_parents.items() if n > 1]
    agent_id, agent_source = hex_id("agent " + seed, 16), "generated"
    if shared:
        agent_id = shared[0]
        agent_source = f"traceparent parent-id shared by {used_parents[shared[0]]} requests"
    times = [t for c in group for t in (c.timing.started, c.timing.ended) if t is not None]
    agent = Span(
        span_id=agent_id,
        parent_id=None,
        kind="agent",
        name="invoke_agent",
        started=min(times) if times else None,
        ended=max(times) if times else None,
        synthesized=True,
        span_id_source=agent_source,
    )
    spans = [agent]
    previous_end: float | None = None
    for call in group:
        if not is_model_call(call):
            continue
        span = _model_span(call, agent.span_id, parents, used_parents, seed)
        link = links.get(call.id)
        if link is not None:
            span.links.append({"call_id": link.previous, "origin": link.origin})
        if previous_end is not None and call.timing.started is not None:
            span.attributes["agent_time"] = call.timing.started - previous_end
        previous_end = call.timing.ended
        spans.append(span)
    spans.extend(_tool_span(t, agent.span_id, parents, used_parents, seed) for t in tools)
    # In call order (time order when times are known): a model span, then its tool spans.
    place = {c.id: n for n, c in enumerate(group)}

    def order(span: Span) -> tuple[int, int]:
        if span.kind == "agent":
            return -1, 0
        anchor = span.call_id if span.kind == "model" else span.requested_by or span.execution
        return place.get(anchor or "", len(place)), 0 if span.kind == "model" else 1

    spans.sort(key=order)  # stable: tool spans keep the order of the model's tool calls
    call_ids = [c.id for c in group] + [h.exchange_id for h in http]
    return Trace(
        trace_id=trace_id,
        origin=origin,
        trace_id_source=source,
        spans=spans,
        evidence=evidence,
        calls=call_ids,
    )


def _model_span(
    call: Call,
    agent_id: str,
    parents: Mapping[str, TraceParent],
    used: Counter[str],
    seed: str,
) -> Span:
    model = call.response_model or call.request_model
    span_id, source = _own_span_id(call.id, parents, used, f"span {seed} {call.id}")
    t = call.timing
    attributes: dict[str, Json] = {
        "api": call.api,
        "model": model,
        "finish_reasons": call.finish_reasons,
        "complete": call.complete,
        "stream": call.stream,
    }
    if call.response_id is not None:
        attributes["response_id"] = call.response_id
    if "provider_request_id" in call.ids:
        attributes["provider_request_id"] = call.ids["provider_request_id"]
    if call.usage is not None:
        attributes["input_tokens"] = call.usage.input_tokens
        attributes["output_tokens"] = call.usage.output_tokens
    if call.error is not None:
        attributes["error"] = call.error.to_json()
    if t.started is not None and t.first_byte is not None:
        attributes["time_to_first_byte"] = t.first_byte - t.started
    if t.started is not None and t.first_token is not None:
        attributes["time_to_first_token"] = t.first_token - t.started
    if t.started is not None and t.ended is not None:
        attributes["duration"] = t.ended - t.started
    if t.inter_chunk is not None:
        attributes["inter_chunk"] = t.inter_chunk
    out_tokens = call.usage.output_tokens if call.usage is not None else None
    if out_tokens and t.first_token is not None and t.ended is not None and t.ended > t.first_token:
        attributes["output_tokens_per_second"] = out_tokens / (t.ended - t.first_token)
    return Span(
        span_id=span_id,
        parent_id=agent_id,
        kind="model",
        name=f"chat {model}" if model else "chat",
        started=t.started,
        ended=t.ended,
        call_id=call.id,
        span_id_source=source,
        attributes=attributes,
    )


def _own_span_id(
    member: str, parents: Mapping[str, TraceParent], used: Counter[str], seed: str
) -> tuple[str, str]:
    """The span id of a request's own span: the parent-id of its ``traceparent`` when no
    other request sent the same (then it is this request's client span), else derived."""
    tp = parents.get(member)
    if tp is not None and used[tp.parent_id] == 1:
        return tp.parent_id, f"traceparent parent-id of {member}"
    return hex_id(seed, 16), "generated"


def run_seed(call: Call) -> str:
    """What derived ids of a run start from: the first call, with what tells one capture's
    call1 from another's (its time, response id, model), so reports can be merged."""
    return f"{call.id} {call.timing.started} {call.response_id} {call.request_model}"


def _tool_span(
    tool: ToolUse,
    agent_id: str,
    parents: Mapping[str, TraceParent],
    used: Counter[str],
    seed: str,
) -> Span:
    ex = tool.execution
    name = tool.part.name if tool.part is not None else _executed_name(ex)
    started = ended = None
    if isinstance(ex, Call):
        started, ended = ex.timing.started, ex.timing.ended
    elif isinstance(ex, HttpRequest):
        started, ended = ex.started, ex.ended
    else:
        timing = tool.requested_by.timing if tool.requested_by is not None else None
        started = timing.ended if timing is not None else None
        ended = tool.result_in.timing.started if tool.result_in is not None else None
    key = (tool.part.id or name) if tool.part is not None else exec_id(ex) if ex else name
    attributes: dict[str, Json] = {}
    if tool.part is not None:
        attributes["arguments"] = tool.part.arguments
        if tool.part.arguments_error is not None:
            attributes["arguments_raw"] = tool.part.arguments_raw
            attributes["arguments_error"] = tool.part.arguments_error
    elif isinstance(ex, Call) and (asked := asked_tool(ex)) is not None:
        attributes["arguments"] = asked.arguments
    elif isinstance(ex, Call) and (ops := operations_of(ex)):
        attributes["arguments"] = _graphql_values(ops, ("variables",), ex)
    if isinstance(ex, Call) and (ops := operations_of(ex)):
        attributes["graphql"] = [_graphql_summary(op) for op in ops]
    elif isinstance(ex, HttpRequest) and ex.operation is not None:
        attributes["operation"] = ex.operation
    elif isinstance(ex, HttpRequest):
        attributes["http"] = http_execution(ex.method, ex.url, ex.status, ex.body)
    if tool.result_in is not None:
        attributes["result"] = tool.result
        attributes["result_from"] = tool.result_in.id
    elif isinstance(ex, Call) and (ops := operations_of(ex)):
        attributes["result"] = _graphql_values(ops, ("data", "errors"), ex)
        attributes["result_from"] = ex.id
    elif isinstance(ex, Call) and (answer := answer_of(ex)) is not None:
        attributes["result"] = answer
        attributes["result_from"] = ex.id
    elif tool.task_result is not None:
        attributes["result"] = answer_of(tool.task_result)
        attributes["result_from"] = tool.task_result.id
    if isinstance(ex, Call) and isinstance(ex.extras.get("retrieval"), dict):
        attributes["retrieval"] = retrieval_summary(ex)
    if tool.work:
        attributes["work"] = [
            {
                "call_id": c.id,
                "api": c.api,
                "operation": c.operation,
                "evidence": e,
                "confidence": p,
            }
            for c, e, p in tool.work
        ]
    if tool.evidence is not None:
        attributes["execution_evidence"] = tool.evidence
    if tool.confidence is not None:
        attributes["confidence"] = tool.confidence
    span_id, source = hex_id(f"tool {seed} {_anchor(tool)} {key}", 16), "generated"
    if ex is not None:
        span_id, source = _own_span_id(exec_id(ex), parents, used, f"tool {seed} {key}")
    return Span(
        span_id=span_id,
        span_id_source=source,
        parent_id=agent_id,
        kind="tool",
        name=f"execute_tool {name}" if name is not None else "execute_tool",
        started=started,
        ended=ended,
        call_id=ex.id if isinstance(ex, Call) else None,
        tool_call_id=tool.part.id if tool.part is not None else None,
        requested_by=tool.requested_by.id if tool.requested_by is not None else None,
        result_in=tool.result_in.id if tool.result_in is not None else None,
        execution=exec_id(ex) if ex is not None else None,
        inferred=ex is None,
        attributes=attributes,
    )


def _anchor(tool: ToolUse) -> str:
    if tool.requested_by is not None:
        return tool.requested_by.id
    return exec_id(tool.execution) if tool.execution is not None else ""


def _executed_name(ex: Call | HttpRequest | None) -> str | None:
    if isinstance(ex, Call) and (ops := operations_of(ex)):
        if len(ops) > 1:
            return f"graphql batch of {len(ops)}"
        first = ops[0]
        fields = first.get("root_fields") or [None]
        name = first.get("name") or fields[0]
        if name is None and isinstance(first.get("persisted_query"), str):
            name = "sha256:" + first["persisted_query"][:12]  # a persisted query by hash alone
        return f"graphql {name}" if name else "graphql"
    if isinstance(ex, Call):
        asked = asked_tool(ex)
        return asked.name if asked is not None else str(ex.operation)
    return "http" if ex is not None else "unknown"


def _graphql_summary(op: dict[str, Json]) -> dict[str, Json]:
    """What a tool span says of one GraphQL operation it ran."""
    errors = op.get("errors")
    out: dict[str, Json] = {k: op[k] for k in ("type", "name", "root_fields") if k in op}
    if "persisted_query" in op:
        out["persisted_query"] = op["persisted_query"]
    out["errors"] = len(errors) if isinstance(errors, list) else 0
    out["partial"] = op.get("partial") is True
    if isinstance(errors, list):
        out["error_paths"] = [e.get("path") for e in errors if isinstance(e, dict)]
    return out


def _graphql_values(ops: list[dict[str, Json]], keys: tuple[str, ...], call: Call) -> Json:
    """An unasked GraphQL call's arguments (``variables``) or result (``data`` and
    ``errors``, the keys present): one operation's, or a list for a batch."""

    def one(op: dict[str, Json]) -> Json:
        if len(keys) == 1:
            return op.get(keys[0])
        return {k: op[k] for k in keys if k in op}

    batch = call.operation == "batch"
    return [one(op) for op in ops] if batch else one(ops[0])


def retrieval_summary(call: Call) -> dict[str, Json]:
    """What a tool span says of the retrieval call that ran it: the service, its role, the
    data source and how many documents came back."""
    info = call.extras["retrieval"]
    keys = ("role", "service", "data_source", "namespace", "top_k", "documents")
    return {k: info[k] for k in keys if k in info} | {"operation": call.operation}


def asked_tool(call: Call) -> ToolCallPart | None:
    """The tool call an MCP ``tools/call`` carries."""
    parts = (p for m in call.input_messages for p in m.parts)
    return next((p for p in parts if isinstance(p, ToolCallPart)), None)


def answer_of(call: Call) -> Json:
    """What an executing call answered: an MCP tool result, or A2A text."""
    parts = [p for m in call.output_messages for p in m.parts]
    for part in parts:
        if isinstance(part, ToolCallResponsePart):
            return part.response
    texts = [p for p in parts if isinstance(p, TextPart)]
    if not texts:
        return None
    # the text parts of one A2A artifact are pieces of one text: joined as sent; a line
    # break only between parts of different origins (a status message, another artifact)
    out = [texts[0].content]
    for before, part in itertools.pairwise(texts):
        aid = part.provider_details.get("artifact_id")
        same = aid is not None and aid == before.provider_details.get("artifact_id")
        out.append(part.content if same else "\n" + part.content)
    return "".join(out)


def hex_id(seed: str, digits: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:digits]
