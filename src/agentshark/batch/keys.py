"""A file's traces -> the ids another file's traces may share with them.

What a capture taken elsewhere in the same run (the agent's host, a gateway, the tool
server) can see too, and nothing weaker (no time, no host, no argument matching):

* ``traceparent``: the W3C trace-id of a valid ``traceparent`` a call or an HTTP request of
  the trace carried (https://www.w3.org/TR/trace-context/#trace-id);
* ``tool_call_id``: the id of a tool call the model asked for, or of a result or a replay
  carrying it, in any message of a call;
* ``mcp_session``: an ``Mcp-Session-Id``; ``a2a_context``: an A2A ``contextId``;
* ``response_id``: a call's ``response_id``, or the ``previous_response_id`` it continues.

Each key is ``(kind, value, call)``: the call (or exchange) of the trace that carried it.

Only ids made to be unique join files (:func:`unique_looking`): a UUID, or a random part of
at least 12 letters and digits, both mixed in (``chatcmpl-B9MBs8CjcvOU2jLn4n570S``,
``toolu_01A09q90qw90lq917835lq9``, a W3C trace-id). A counter (``call_1``, ``ctx-1``,
``resp_0001``, a JSON-RPC id), which a stub or a client numbering its calls makes again in
every run, is no evidence that two captures saw one run. Tool call ids are taken from model
calls only (an MCP or A2A call's tool call part carries its JSON-RPC id).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from agentshark.apis.model import Call, ToolCallPart, ToolCallResponsePart
from agentshark.trace.context import TraceParent, parse_traceparent
from agentshark.trace.history import is_model_call
from agentshark.trace.model import Trace
from agentshark.trace.spans import HttpRequest

KINDS = ("traceparent", "tool_call_id", "mcp_session", "a2a_context", "response_id")
Key = tuple[str, str, str]


def trace_keys(
    trace: Trace, calls: Mapping[str, Call], http: Mapping[str, HttpRequest]
) -> list[Key]:
    """The keys of ``trace`` (its members found in ``calls`` and ``http`` by id), each once."""
    out: dict[tuple[str, str], str] = {}
    for member in trace.calls:
        call = calls.get(member)
        found = _call_keys(call) if call is not None else _http_keys(http.get(member))
        for kind, value in found:
            if unique_looking(value):
                out.setdefault((kind, value), member)
    return [(kind, value, member) for (kind, value), member in out.items()]


def trace_sightings(trace: Trace, calls: Mapping[str, Call]) -> dict[str, str]:
    """What makes a call of ``trace`` the same call when another file has it too -> that
    call: its response id (``response_id R``), or for an MCP call its session, JSON-RPC id
    and method (``mcp S J M``: JSON-RPC ids are unique within a session). Only ids that
    look unique."""
    out: dict[str, str] = {}
    for member in trace.calls:
        call = calls.get(member)
        if call is None:
            continue
        if call.response_id and unique_looking(call.response_id):
            out.setdefault(f"response_id {call.response_id}", member)
        session, rpc = call.ids.get("mcp_session_id"), call.ids.get("jsonrpc_id")
        if call.api == "mcp" and session and rpc is not None and unique_looking(session):
            out.setdefault(f"mcp {session} {rpc} {call.operation}", member)
    return out


def _call_keys(call: Call) -> Iterator[tuple[str, str]]:
    trace_id = _trace_id(call.ids.get("traceparent"))
    if trace_id is not None:
        yield "traceparent", trace_id
    for message in [*call.input_messages, *call.output_messages] if is_model_call(call) else ():
        for part in message.parts:
            if isinstance(part, ToolCallPart | ToolCallResponsePart) and part.id:
                yield "tool_call_id", part.id
    if session := call.ids.get("mcp_session_id"):
        yield "mcp_session", session
    if context := call.ids.get("a2a_context_id"):
        yield "a2a_context", context
    if call.response_id:
        yield "response_id", call.response_id
    if previous := call.ids.get("previous_response_id"):
        yield "response_id", previous


def _http_keys(request: HttpRequest | None) -> Iterator[tuple[str, str]]:
    trace_id = _trace_id(request.traceparent) if request is not None else None
    if trace_id is not None:
        yield "traceparent", trace_id


def _trace_id(value: str | None) -> str | None:
    parsed = parse_traceparent(value) if value else None
    return parsed.trace_id if isinstance(parsed, TraceParent) else None


_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.I)
_RUN = re.compile(r"[A-Za-z0-9]{12,}")


def unique_looking(value: str) -> bool:
    """``value`` looks generated to be unique: it holds a UUID, or a run of 12 or more
    letters and digits with both in it."""
    if _UUID.search(value):
        return True
    return any(
        any(c.isdigit() for c in run) and any(c.isalpha() for c in run)
        for run in _RUN.findall(value)
    )
