"""Calls -> traces: which calls belong to one agent run, and the span tree of each run.

Calls are joined (union-find) by every piece of evidence found, each recorded with its origin:

1. ``traceparent`` (HTTP header or MCP ``params._meta``): valid ones with the same trace-id.
2. ``previous_response_id`` / ``conversation`` / ``history``: :func:`link_history`.
3. ``tool_call``: a model call and the MCP, A2A, GraphQL or HTTP call that executed one of its
   tool calls (same tool name and arguments, after the model asked and before the result was sent).
4. ``mcp_session`` (``Mcp-Session-Id``), ``a2a_context`` (A2A ``contextId``) and ``app_id``
   (ids whose name says session, conversation, run, thread or task, under the same name).
   Over stdio an MCP session has no id: it is the life of one server process
   (https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle), so the MCP
   calls of one stdio connection (a transcript, or its two one-direction files) are joined
   as ``mcp_session`` too, with the connection as evidence.

A group of one call is a trace of origin ``single``. The trace-id is the W3C one when a call
carries it (the most common when several do), else derived from the first call's id
(``trace_id_source`` says which). Span ids are derived from call ids, except that the
``parent-id`` of a request's ``traceparent`` is the span id of the span that sent it: shared
by several requests it is the agent's span (the caller), unique to one request it is that
request's own client span. Nothing else is guessed: no grouping by time, nor by an HTTP
connection (which carries any number of sessions).

Tool spans: one per tool call in a model call's output. ``result_in`` is the first later
model call whose input carries a tool result with that id (for a tool call without an id, as
Gemini and Ollama send them: the first call continuing this one, the result found by the id
the client gave the call in its replay, else by name and position, the join's detail saying
which: :func:`_results_by_position`); ``execution`` the observed call
that ran it, with ``attributes["execution_evidence"]`` and ``["confidence"]`` (1.0 when the
name and arguments are equal, 0.8 when the MCP tool name is a suffix of the model's, 0.6 for
an HTTP request holding every argument value; a GraphQL call by its variables:
:func:`agentshark.trace.tool_match.graphql_match`; a retrieval, memory or embeddings call
by its query: :func:`agentshark.trace.retrieval.tool_work`, the first retrieval call the
execution when nothing else ran the tool, every such call joined and listed in the tool
span's ``attributes["work"]``); ``inferred`` when none was seen (then the
span lasts from the model's answer to the next request). An MCP ``tools/call``, A2A message or
GraphQL call that no model tool call asked for is a tool span of its own (``tool_call_id``
None).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from urllib.parse import unquote_plus, urlsplit

import orjson

from agentshark.apis.appids import name_kind
from agentshark.apis.graphql import calls as graphql
from agentshark.apis.graphql.calls import operations_of
from agentshark.apis.model import (
    Call,
    Json,
    Message,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from agentshark.trace.context import TraceParent, parse_traceparent
from agentshark.trace.history import HistoryLink, is_model_call
from agentshark.trace.model import Trace
from agentshark.trace.retrieval import execution_of, is_work, may_be_work, tool_work
from agentshark.trace.spans import (
    HttpRequest,
    ToolUse,
    asked_tool,
    exec_id,
    make_trace,
)
from agentshark.trace.tool_match import argument_values as _argument_values
from agentshark.trace.tool_match import graphql_match

GROUPING_KINDS = frozenset({"session", "conversation", "run", "thread", "task"})
TOOL_WINDOW = 600.0  # seconds after a model's answer an execution may start, with no result


class _Groups:
    def __init__(self, ids: Iterable[str]) -> None:
        self.parent = {i: i for i in ids}
        self.evidence: dict[str, list[dict[str, Json]]] = {}

    def find(self, x: str) -> str:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def join(self, a: str, b: str, evidence: dict[str, Json]) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            mine = self.evidence.setdefault(ra, [])
            mine.extend(self.evidence.pop(rb, []))
        self.evidence.setdefault(self.find(a), []).append(evidence)


def build_traces(
    calls: Sequence[Call],
    links: Mapping[str, HistoryLink],
    http: Sequence[HttpRequest] = (),
    model_hosts: Collection[str] = (),
    connection_of: Mapping[str, str] | None = None,
) -> list[Trace]:
    """The traces of ``calls`` (and of the unclaimed HTTP requests that executed tools).

    ``connection_of`` (exchange id -> connection) names the stdio connection of MCP stdio
    calls: without it, they are joined by their other evidence only."""
    ordered = sorted(
        enumerate(calls),
        key=lambda p: (p[1].timing.started is None, p[1].timing.started or 0.0, p[0]),
    )
    by_id = {c.id: c for _, c in ordered}
    groups = _Groups([*by_id, *(h.exchange_id for h in http)])
    parents: dict[str, TraceParent] = {}
    headers = [(c.id, c.ids.get("traceparent")) for c in by_id.values()]
    headers.extend((h.exchange_id, h.traceparent) for h in http)
    for member, value in headers:
        parsed = parse_traceparent(value) if value else None
        if isinstance(parsed, TraceParent):
            parents[member] = parsed
    _join_traceparent(groups, parents)
    for cid, link in links.items():
        if cid in by_id and link.previous in by_id:
            groups.join(
                link.previous,
                cid,
                {"origin": link.origin, "calls": [link.previous, cid], "detail": link.evidence},
            )
    model_calls = [c for _, c in ordered if is_model_call(c)]
    tools = _tool_spans(model_calls, [c for _, c in ordered], http, groups, model_hosts, links)
    _join_ids(groups, by_id.values())
    if connection_of:
        _join_stdio_sessions(groups, by_id.values(), connection_of)
    _join_listed_tools(groups, model_calls, [c for _, c in ordered if c.api == "mcp"])
    return _traces(groups, [c for _, c in ordered], http, tools, parents, links)


def _join_traceparent(groups: _Groups, parents: Mapping[str, TraceParent]) -> None:
    first: dict[str, str] = {}
    for cid, tp in parents.items():
        if tp.trace_id in first:
            groups.join(
                first[tp.trace_id],
                cid,
                {
                    "origin": "traceparent",
                    "calls": [first[tp.trace_id], cid],
                    "trace_id": tp.trace_id,
                },
            )
        else:
            first[tp.trace_id] = cid


def grouping_ids(call: Call) -> Iterator[tuple[str, str, str]]:
    """``(origin, name, value)`` of each id of ``call`` that joins the calls sharing it."""
    for name, value in call.ids.items():
        if name == "mcp_session_id":
            yield "mcp_session", name, value
        elif name == "a2a_context_id":
            yield "a2a_context", name, value
        elif name_kind(name) in GROUPING_KINDS:
            yield "app_id", name, value


def _join_ids(groups: _Groups, calls: Iterable[Call]) -> None:
    first: dict[tuple[str, str, str], str] = {}
    for call in calls:
        for key in grouping_ids(call):
            origin, name, value = key
            if key not in first:
                first[key] = call.id
                continue
            groups.join(
                first[key],
                call.id,
                {
                    "origin": origin,
                    "calls": [first[key], call.id],
                    "id": {name: value},
                    "where": call.id_sources.get(name),
                },
            )


def _join_stdio_sessions(
    groups: _Groups, calls: Iterable[Call], connection_of: Mapping[str, str]
) -> None:
    """The MCP calls of one stdio connection: one session, one server process."""
    first: dict[str, str] = {}
    for call in calls:
        if call.api != "mcp" or call.extras.get("mcp_transport") != "stdio":
            continue
        conn = connection_of.get(call.exchange_id)
        if conn is None:
            continue
        if conn not in first:
            first[conn] = call.id
            continue
        groups.join(
            first[conn],
            call.id,
            {
                "origin": "mcp_session",
                "calls": [first[conn], call.id],
                "connection": conn,
                "detail": "MCP over stdio: one transcript is one session (one server process)",
            },
        )


def _join_listed_tools(
    groups: _Groups, model_calls: Sequence[Call], mcp_calls: Sequence[Call]
) -> None:
    """An MCP session whose ``tools/list`` tools were all offered to a model call, in the
    same order, is the agent's own session (it listed the tools to offer them)."""
    offered: dict[tuple[str, ...], Call] = {}  # each tool set once: its first model call
    for c in model_calls:
        offered.setdefault(tuple(defined_names(c)), c)
    for call in mcp_calls:
        names_listed = listed_names(call)
        if names_listed is None:
            continue
        for names, model in offered.items():
            if offered_in_order(names_listed, names):
                groups.join(
                    model.id,
                    call.id,
                    {
                        "origin": "tool_definitions",
                        "calls": [model.id, call.id],
                        "detail": f"the {len(names_listed)} tools of {call.id}'s tools/list are "
                        f"offered to the model in {model.id}",
                    },
                )
                break


def defined_names(call: Call) -> list[str]:
    """The tool names a model call offers (Chat nests them in ``function``)."""
    out: list[str] = []
    for tool in call.tool_definitions:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str):
            out.append(name)
    return out


def offered_in_order(listed: Sequence[str], names: Sequence[str]) -> bool:
    """Every listed name among ``names``, in the same order (a prefix may be added to all)."""
    it = iter(names)
    return all(any(n == name or n.endswith("_" + name) for n in it) for name in listed)


# -- tool spans -----------------------------------------------------------------------------


def _tool_spans(
    model_calls: Sequence[Call],
    calls: Sequence[Call],
    http: Sequence[HttpRequest],
    groups: _Groups,
    model_hosts: Collection[str],
    links: Mapping[str, HistoryLink],
) -> list[ToolUse]:
    results: dict[str, list[tuple[Call, Json]]] = {}
    for call in model_calls:
        for message in call.input_messages:
            for part in message.parts:
                if isinstance(part, ToolCallResponsePart) and part.id is not None:
                    results.setdefault(part.id, []).append((call, part.response))
    executors = [c for c in calls if is_execution(c)]
    workers = [c for c in calls if is_work(c)]
    unnamed = _results_by_position(model_calls, links)
    used: set[str] = set()
    out: list[ToolUse] = []
    for call in model_calls:
        asked = [p for m in call.output_messages for p in m.parts if isinstance(p, ToolCallPart)]
        for n, part in enumerate(asked):
            result_in, result = _result_for(part, call, results)
            detail = f"tool call {part.id} answered in {result_in.id}'s input" if result_in else ""
            if part.id is None and (call.id, n) in unnamed:
                result_in, result, detail = unnamed[call.id, n]
            tool = ToolUse(part, call, result_in, result, None, None, None)
            start = tool_window_start(call)
            end = result_in.timing.started if result_in is not None else None
            found = _execution(part, start, end, executors, http, used, model_hosts)
            work = tool_work(part, _window(start, end), workers, used)
            if found is None and work:
                found = execution_of(work)
                work.remove(found)  # type: ignore[arg-type]
            tool.work = work
            if found is not None:
                tool.execution, tool.evidence, tool.confidence = found
            for done, evidence, _ in [*([found] if found else []), *work]:
                key = exec_id(done)
                used.add(key)
                groups.join(
                    call.id,
                    key,
                    {"origin": "tool_call", "calls": [call.id, key], "detail": evidence},
                )
            if result_in is not None:
                groups.join(
                    call.id,
                    result_in.id,
                    {
                        "origin": "tool_call",
                        "calls": [call.id, result_in.id],
                        "detail": detail,
                    },
                )
            out.append(tool)
    out.extend(
        ToolUse(None, None, None, None, call, "not asked for by a model call", None)
        for call in executors
        if call.id not in used
    )
    task_results = {
        c.extras["task_of"]: c
        for c in calls
        if c.operation == "tasks/result" and isinstance(c.extras.get("task_of"), str)
    }
    for tool in out:
        if isinstance(tool.execution, Call):
            tool.task_result = task_results.get(tool.execution.id)
    return out


def is_execution(call: Call) -> bool:
    if call.api == "mcp":
        return call.operation == "tools/call"
    if call.api == graphql.API:
        return True
    return call.api == "a2a" and call.operation in (
        "SendMessage",
        "SendStreamingMessage",
        "message/send",
        "message/stream",
    )


def _results_by_position(
    model_calls: Sequence[Call], links: Mapping[str, HistoryLink]
) -> dict[tuple[str, int], tuple[Call, Json, str]]:
    """The results of tool calls that came without an id (Gemini, Ollama), as
    ``(call id, place among its output's tool calls) -> (call, result, how)``.

    The result is in the first later call that continues the call (its history link): there
    the client replays the model's turn, then sends the results. A tool call is answered by
    the result that carries the id the client gave the call in its replay (pydantic-ai adds
    ids of its own), else by name and position: the n-th call of a name in the model's turn
    by the n-th result of that name (``provider_details["name"]`` of an id-less result) after
    the replay."""
    by_id = {c.id: c for c in model_calls}
    first: dict[str, Call] = {}
    for call in model_calls:
        link = links.get(call.id)
        if link is not None and link.previous in by_id:
            first.setdefault(link.previous, call)
    out: dict[tuple[str, int], tuple[Call, Json, str]] = {}
    for previous_id, later in first.items():
        asked = [
            p
            for m in by_id[previous_id].output_messages
            for p in m.parts
            if isinstance(p, ToolCallPart)
        ]
        if all(p.id is not None for p in asked):
            continue
        matched = links[later.id].matched_messages
        replayed = _by_name(_last_turn_calls(later.input_messages[:matched]))
        answers = _answers(later.input_messages[matched:])
        by_name = _by_name([r for r in answers if r.id is None])
        with_id = {r.id: r for r in answers if r.id is not None}
        seen: dict[str | None, int] = {}
        for n, part in enumerate(asked):
            k = seen[part.name] = seen.get(part.name, -1) + 1
            if part.id is not None or part.provider_details.get("execution") == "server":
                continue
            twins = replayed.get(part.name, [])
            twin = twins[k] if k < len(twins) else None
            if twin is not None and twin.id in with_id:
                how = (
                    f"tool call {part.name} (no id; the client's replay gave it {twin.id}) "
                    f"answered in {later.id}'s input"
                )
                out[previous_id, n] = (later, with_id[twin.id].response, how)
                continue
            same = by_name.get(part.name, [])
            if k < len(same):
                how = (
                    f"by name and position: call {k} of {part.name} in {previous_id}'s output "
                    f"(no id) answered by result {k} of {part.name} in {later.id}'s input"
                )
                out[previous_id, n] = (later, same[k].response, how)
    return out


def _last_turn_calls(messages: Sequence[Message]) -> list[ToolCallPart]:
    """The tool calls of the assistant messages that end ``messages`` (the replayed turn)."""
    out: list[ToolCallPart] = []
    for message in reversed(messages):
        if message.role != "assistant":
            break
        out[:0] = [p for p in message.parts if isinstance(p, ToolCallPart)]
    return out


def _answers(messages: Sequence[Message]) -> list[ToolCallResponsePart]:
    """The tool results that follow a replay, up to the next assistant message."""
    out: list[ToolCallResponsePart] = []
    for message in messages:
        if message.role == "assistant":
            break
        out.extend(p for p in message.parts if isinstance(p, ToolCallResponsePart))
    return out


def _by_name(parts: Iterable[ToolCallPart | ToolCallResponsePart]) -> dict[str | None, list]:  # type: ignore[type-arg]
    out: dict[str | None, list] = {}  # type: ignore[type-arg]
    for part in parts:
        name = part.name if isinstance(part, ToolCallPart) else part.provider_details.get("name")
        out.setdefault(name if isinstance(name, str) else None, []).append(part)
    return out


def _result_for(
    part: ToolCallPart, call: Call, results: Mapping[str, list[tuple[Call, Json]]]
) -> tuple[Call | None, Json]:
    if part.id is None:
        return None, None
    for later, response in results.get(part.id, []):
        if later is not call and _after(later.timing.started, call.timing.started):
            return later, response
    return None, None


def _after(a: float | None, b: float | None) -> bool:
    return a is None or b is None or a >= b


def _window(start: float | None, end: float | None) -> Callable[[float | None], bool]:
    """Whether a call starting at ``t`` may be a tool call's execution: after the model's
    answer (``start``), before the result was sent (``end``), else within TOOL_WINDOW."""

    def in_window(t: float | None) -> bool:
        if t is None or start is None:
            return t is None and start is None
        limit = end if end is not None else start + TOOL_WINDOW
        return start <= t <= limit

    return in_window


def _execution(
    part: ToolCallPart,
    start: float | None,
    end: float | None,
    executors: Sequence[Call],
    http: Sequence[HttpRequest],
    used: set[str],
    model_hosts: Collection[str],
) -> tuple[Call | HttpRequest, str, float] | None:
    in_window = _window(start, end)
    for call in executors:
        if call.id in used or not in_window(call.timing.started):
            continue
        found = _same_tool(part, call)
        if found is not None:
            return call, found[0], found[1]
    values = _argument_values(part.arguments)
    if not values:
        return None
    for req in http:
        if req.exchange_id in used or not in_window(req.started):
            continue
        if urlsplit(req.url).netloc in model_hosts:
            continue  # the model API's host (telemetry, files...), not the tool's
        text = unquote_plus(req.url) + "\n" + req.body.decode("utf-8", "replace")
        if part.id and part.id in text:
            continue  # a request naming the model's call id reports on it (a trace export)
        if all(v in text for v in values):
            return req, f"{req.method} {req.url} holds every argument value", 0.6
    return None


def tool_window_start(call: Call) -> float | None:
    """When a model call's tool calls may start running: its answer's end, else its start."""
    return call.timing.ended or call.timing.started


def may_execute(part: ToolCallPart, done: Call | HttpRequest) -> bool:
    """Whether ``done``, starting in the window of tool call ``part``, could be taken as its
    execution or its work by :func:`_tool_spans`, whatever else was seen (a superset of
    what it takes: the model's hosts and the earlier takers are not looked at)."""
    if isinstance(done, HttpRequest):
        values = _argument_values(part.arguments)
        text = unquote_plus(done.url) + "\n" + done.body.decode("utf-8", "replace")
        return bool(values) and all(v in text for v in values)
    if is_execution(done) and _same_tool(part, done) is not None:
        return True
    return is_work(done) and may_be_work(part, done)


def listed_names(call: Call) -> list[str] | None:
    """The tool names of an MCP ``tools/list`` result that :func:`_join_listed_tools`
    matches against the model calls' tools, else None."""
    if call.operation != "tools/list" or not call.tool_definitions:
        return None
    listed = [t.get("name") for t in call.tool_definitions if isinstance(t, dict)]
    names = [n for n in listed if isinstance(n, str)]
    return names if names and len(names) == len(listed) else None


def _same_tool(part: ToolCallPart, call: Call) -> tuple[str, float] | None:
    if call.api == "mcp":
        asked = asked_tool(call)
        if asked is None or not _same_arguments(part.arguments, asked.arguments):
            return None
        if asked.name == part.name:
            return f"MCP tools/call {asked.name} with the same arguments", 1.0
        if part.name is not None and asked.name and part.name.endswith(asked.name):
            return f"MCP tools/call {asked.name} (a suffix of {part.name}), same arguments", 0.8
        return None
    if call.api == graphql.API:
        return graphql_match(part.arguments, operations_of(call))
    values = _argument_values(part.arguments)
    text = " ".join(
        p.content for m in call.input_messages for p in m.parts if isinstance(p, TextPart)
    )
    if values and all(v in text for v in values):
        return f"A2A {call.operation} message holds every argument value", 0.6
    return None


def _same_arguments(a: Json, b: Json) -> bool:
    return orjson.dumps(a or {}, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
        b or {}, option=orjson.OPT_SORT_KEYS
    )


# -- traces and spans -----------------------------------------------------------------------


def _traces(
    groups: _Groups,
    calls: Sequence[Call],
    http: Sequence[HttpRequest],
    tools: Sequence[ToolUse],
    parents: Mapping[str, TraceParent],
    links: Mapping[str, HistoryLink],
) -> list[Trace]:
    members: dict[str, list[Call]] = {}
    for call in calls:
        members.setdefault(groups.find(call.id), []).append(call)
    http_by_root: dict[str, list[HttpRequest]] = {}
    for req in http:
        root = groups.find(req.exchange_id)
        if root in members:
            http_by_root.setdefault(root, []).append(req)
    tools_by_root: dict[str, list[ToolUse]] = {}
    for tool in tools:
        anchor = tool.requested_by or tool.execution
        assert anchor is not None
        tools_by_root.setdefault(groups.find(exec_id(anchor)), []).append(tool)
    out: list[Trace] = []
    for root, group in members.items():
        evidence = groups.evidence.get(root, [])
        out.append(
            make_trace(
                group,
                http_by_root.get(root, []),
                tools_by_root.get(root, []),
                evidence,
                parents,
                links,
            )
        )
    return out


HINT_GAP = 5.0  # seconds between two traces' calls on one connection for a hint


def connection_hints(
    traces: Sequence[Trace], calls: Sequence[Call], connection_of: Mapping[str, str]
) -> None:
    """Hint (never join) that two traces may be one run: consecutive calls of theirs on the
    same client connection, the second starting at most :data:`HINT_GAP` seconds after the
    first ended."""
    by_id = {c.id: c for c in calls}
    on: dict[str, list[tuple[float, float, Trace, str]]] = {}
    for trace in traces:
        for cid in trace.calls:
            call = by_id.get(cid)
            conn = connection_of.get(call.exchange_id) if call is not None else None
            if call is None or conn is None or call.timing.started is None:
                continue
            end = call.timing.ended or call.timing.started
            on.setdefault(conn, []).append((call.timing.started, end, trace, cid))
    for conn, uses in on.items():
        uses.sort(key=lambda u: u[0])
        for (_, end, first, a), (start, _, second, b) in itertools.pairwise(uses):
            gap = start - end
            if first is second or not 0 <= gap <= HINT_GAP:
                continue
            for this, other in ((first, second), (second, first)):
                this.hints.append(
                    {
                        "origin": "connection",
                        "trace_id": other.trace_id,
                        "connection": conn,
                        "calls": [a, b],
                        "gap": gap,
                    }
                )
