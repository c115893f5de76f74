"""MCP calls (api ``mcp``) over every transport: Streamable HTTP (2025-03-26 ... 2025-11-25),
the 2026-07-28 stateless HTTP revision, the 2024-11-05 HTTP+SSE transport and stdio.

One exchange is one call. ``operation`` is the JSON-RPC ``method``:

- Streamable HTTP ``POST`` of a request or notification. The reply is a JSON body or an SSE
  stream whose ``message`` events carry JSON-RPC messages; notifications and server requests
  sent before the response are kept in ``extras["stream_messages"]`` (kind, method, id,
  params, result or error, SSE event id, ``at``: where in the reply) and the response is the
  message whose ``id`` equals the request's. A notification is answered ``202``.
- ``POST`` of a JSON-RPC response: the client answering a server request such as
  ``sampling/createMessage``; the message is kept in ``extras["client_response"]`` and
  :mod:`agentshark.apis.mcp.sessions` names the method once it has seen the request.
- A batch (2025-03-26 only): the first request or notification is the call, every message
  of the batch is summarized in ``extras["batch"]``; replies to the others go to
  ``stream_messages``.
- ``GET`` of the session's SSE stream: ``operation`` ``"session.stream"``, its messages in
  ``stream_messages``. ``DELETE`` with ``Mcp-Session-Id``: ``"session.delete"``. Neither name
  contains a ``/``, so they cannot collide with an MCP method.
- 2024-11-05 HTTP+SSE: the ``GET`` stream opens with an ``endpoint`` event naming the URL
  the client posts to (``extras["endpoint"]``); each ``POST`` is answered ``202`` and its
  response arrives on the stream. Such a request call says ``extras["response_via"] =
  "session stream"`` until :mod:`agentshark.apis.mcp.sessions` finds its response there.
  A Streamable HTTP request whose SSE reply ended before its response says ``"resumed
  stream"``: the client may resume with a ``GET`` carrying ``Last-Event-ID``.
- stdio (exchanges of transport ``stdio`` from :mod:`agentshark.sources.stdio`): the request
  line and its response line; ``extras["direction"]`` is ``"server_to_client"`` for a server
  request (``sampling/createMessage``...) answered by the client.

``extras["mcp_transport"]`` names the transport: ``"streamable_http"``, ``"http+sse"`` or
``"stdio"``.

Ids: ``jsonrpc_id`` (as a string; ``id_sources`` says whether it was a JSON number or string),
``mcp_session_id`` (the ``Mcp-Session-Id`` request header, or for ``initialize`` the
response's; for HTTP+SSE the ``session_id``/``sessionId`` query parameter of the endpoint),
``mcp_protocol_version`` (the ``MCP-Protocol-Version`` header, the 2026-07-28 ``_meta`` key,
or the negotiated version of an ``initialize`` result), ``mcp_progress_token``,
``mcp_subscription_id`` and ``traceparent``/``tracestate``/``baggage`` from ``params._meta``
(see :mod:`agentshark.apis.mcp.methods`). The 2026-07-28 ``Mcp-Method``/``Mcp-Name`` headers
are kept in ``extras["mcp_headers"]``; one that disagrees with the body is a warning
``mcp.header_mismatch``.

Outcomes: a JSON-RPC ``error`` fills ``call.error`` (type ``"jsonrpc"``, code as a string);
a tool result with ``isError: true`` leaves ``call.error`` None and marks the result part
``is_error``. An HTTP status >= 400 without a JSON-RPC error is an error of type None
(source ``"http"``). No finish reason is invented: MCP has none.

Completeness: a request's call is complete when its JSON-RPC response arrived whole and its
request did. An SSE reply's response event settles the call (``Call.settled``, its arrival
time, which is the call's ``timing.ended``): when the HTTP message did not end after it (the
client hung up, the capture ended), the call is still complete and an ``info`` diagnostic
``mcp.http_unfinished`` says the HTTP message did not end; when a capture gap cut the reply
body, :mod:`agentshark.apis.registry` makes it incomplete, since the lost bytes may have held
what mattered. A request with no response is incomplete (``mcp.no_response`` for stdio, where
nothing else can carry it). Notifications, posted responses, ``GET`` and ``DELETE`` are
complete when the exchange is. An SSE ``message`` event that holds no JSON-RPC message is a
warning ``mcp.bad_message``; other SSE events (``ping``...) are counted in
``extras["sse_other_events"]``. Other extras: ``request_meta`` (``params._meta`` whole),
``error_data``, ``server_info``, ``client_info``, ``result_type``, ``response_event_id``
(the SSE id of the response event, for ``Last-Event-ID`` resumption), ``last_event_id``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import orjson

from agentshark.apis.mcp import methods as mcp_methods
from agentshark.apis.mcp.methods import content_part, jsonrpc_error, set_jsonrpc_id
from agentshark.apis.model import Call, CallError, Json
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing.events import SseEvent
from agentshark.jsonrpc import id_text, message_kind, messages, same_id, summary
from agentshark.model import header

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

__all__ = ["FAMILIES", "MCP_HTTP", "MCP_STDIO", "content_part", "is_mcp_method", "message_kind"]

# Methods of every revision up to 2026-07-28, by prefix or whole name: recognition only, any
# other method is parsed the same way.
MCP_METHOD_PREFIXES = (
    "notifications/",
    "tools/",
    "resources/",
    "prompts/",
    "completion/",
    "logging/",
    "sampling/",
    "elicitation/",
    "roots/",
    "tasks/",
    "server/",
    "subscriptions/",
)
MCP_METHODS = frozenset({"initialize", "ping"})
# Methods a server sends to the client (answered by the client).
SERVER_REQUESTS = frozenset({"sampling/createMessage", "elicitation/create", "roots/list"})
SESSION_QUERY = ("session_id", "sessionId")  # the HTTP+SSE endpoint's session parameter
_TEXT_LIMIT = 2000

Reply = tuple[Json, str, str | None, float | None]  # (message, where, SSE event id, arrival)


def is_mcp_method(method: str) -> bool:
    return method in MCP_METHODS or method.startswith(MCP_METHOD_PREFIXES)


# -- HTTP -----------------------------------------------------------------------------------


class McpHttp:
    api = "mcp"

    def match(self, view: ExchangeView) -> float:
        req = view.exchange.request
        if req is None or view.exchange.transport == "stdio":
            return -1.0
        session = header(req.headers, "mcp-session-id") is not None
        version = header(req.headers, "mcp-protocol-version") is not None
        method = view.method.upper()
        if method in ("GET", "DELETE"):
            if session:
                return 0.8
            if method == "GET" and _endpoint_event(view) is not None:
                return 0.9  # the 2024-11-05 HTTP+SSE stream
            return 0.5 if version and method == "GET" else -1.0
        if method != "POST":
            return -1.0
        msgs = messages(view.request_json)
        if not msgs:
            return -1.0
        methods = [m["method"] for m in msgs if "method" in m]
        if any(is_mcp_method(m) for m in methods):
            return 0.9
        if session or version:
            return 0.8  # a response posted to the server, or a method unknown to us
        return 0.0  # JSON-RPC, but nothing says MCP

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = view.exchange.request
        assert req is not None  # recognize() never parses an exchange without a request
        method = view.method.upper()
        call.extras["mcp_transport"] = "streamable_http"
        _session_ids(view, call)
        last_event = header(req.headers, "last-event-id")
        if last_event is not None:
            call.extras["last_event_id"] = last_event
        call.stream = view.framing == "sse" or view.response_content_type.startswith(
            "text/event-stream"
        )
        replies = _reply_messages(view, call)
        if method in ("GET", "DELETE"):
            call.operation = "session.stream" if method == "GET" else "session.delete"
            endpoint = _endpoint_event(view)
            if endpoint is not None:
                _legacy_stream(call, endpoint)
            _stream_messages(replies, None, call)
            call.error = _status_error(view, replies)
            call.complete = view.exchange.complete
            return
        msgs = messages(view.request_json)
        first = _parse_request(msgs, call, "request body")
        _mcp_headers(view, call)
        if call.id_sources.get("mcp_session_id", "").startswith("request URL query"):
            # posted to the endpoint a 2024-11-05 session stream named
            call.extras["mcp_transport"] = "http+sse"
            call.extras["endpoint"] = req.target
        if "jsonrpc_id" not in call.ids or call.operation is None:  # notification, response
            _stream_messages(replies, None, call)
            call.error = _status_error(view, replies)
            call.complete = view.exchange.complete
            return
        reply = _stream_messages(replies, first.get("id"), call)
        if reply is not None:
            mcp_methods.reply(call, reply[0], reply[1], view.status)
        else:
            call.error = _status_error(view, replies)
            if view.status == 202 and call.error is None:
                # 2024-11-05: the response comes on the session's GET stream
                call.extras["mcp_transport"] = "http+sse"
                call.extras["endpoint"] = req.target
                call.extras["response_via"] = "session stream"
            elif call.stream and call.error is None and "mcp_session_id" in call.ids:
                # the SSE reply ended first: a GET with Last-Event-ID may resume it
                call.extras["response_via"] = "resumed stream"
        call.complete = reply is not None
        if reply is not None and not view.exchange.complete:
            call.diagnostics.append(
                Diagnostic(
                    code="mcp.http_unfinished",
                    message="the JSON-RPC response arrived whole but the HTTP message did not end",
                    location=f"{view.exchange.id} response",
                    severity="info",
                )
            )


def _parse_request(msgs: list[Json], call: Call, where: str) -> dict[str, Json]:
    """The call's own message among ``msgs`` (the first request or notification, else the
    first message): operation, ids, params. Returns it."""
    if len(msgs) > 1:
        call.extras["batch"] = [summary(m, None) for m in msgs]
    first: dict[str, Json] = next((m for m in msgs if "method" in m), msgs[0] if msgs else {})
    kind = message_kind(first)
    if kind in ("response", "error"):
        call.operation = None
        call.extras["client_response"] = first
        set_jsonrpc_id(first.get("id"), call, where)
        return first
    method = first.get("method")
    call.operation = method if isinstance(method, str) else None
    params = first.get("params")
    mcp_methods.meta_ids(params, call)
    if kind == "notification":
        mcp_methods.params(params, call)
        return first
    set_jsonrpc_id(first.get("id"), call, where)
    mcp_methods.request(call, params, first.get("id"))
    return first


# -- stdio ----------------------------------------------------------------------------------


class McpStdio:
    """A stdio exchange: one JSON-RPC request line and the line that answers it."""

    api = "mcp"

    def match(self, view: ExchangeView) -> float:
        if view.exchange.transport != "stdio" or view.exchange.request is None:
            return -1.0
        return 1.0 if messages(view.request_json) else -1.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        ex = view.exchange
        call.extras["mcp_transport"] = "stdio"
        direction = ex.extras.get("direction")
        if direction == "s2c":
            call.extras["direction"] = "server_to_client"
        where = str(ex.extras.get("request_line") or "request line")
        first = _parse_request(messages(view.request_json), call, where)
        if message_kind(first) != "request":
            call.complete = call.settled = True  # no answer is due
            return
        answer_where = str(ex.extras.get("response_line") or "response line")
        replies: list[Reply] = [(m, answer_where, None, None) for m in messages(view.response_json)]
        reply = _stream_messages(replies, first.get("id"), call)
        if reply is not None:
            mcp_methods.reply(call, reply[0], reply[1], None)
            call.complete = True
            return
        call.complete = False
        call.diagnostics.append(
            Diagnostic(
                code="mcp.no_response",
                message=f"request {call.operation!r} (id {call.ids.get('jsonrpc_id')}) "
                "has no response in the transcript",
                location=where,
            )
        )


# -- ids and headers ------------------------------------------------------------------------


def _session_ids(view: ExchangeView, call: Call) -> None:
    req, resp = view.exchange.request, view.exchange.response
    assert req is not None
    value = header(req.headers, "Mcp-Session-Id")
    if value:
        call.ids["mcp_session_id"] = value
        call.id_sources["mcp_session_id"] = "request header Mcp-Session-Id"
    elif resp is not None and (value := header(resp.headers, "Mcp-Session-Id")):
        call.ids["mcp_session_id"] = value
        call.id_sources["mcp_session_id"] = "response header Mcp-Session-Id"
    elif (found := _query_session(view.query)) is not None:
        call.ids["mcp_session_id"] = found[1]
        call.id_sources["mcp_session_id"] = f"request URL query {found[0]}"
    version = header(req.headers, "MCP-Protocol-Version")
    if version:
        call.ids["mcp_protocol_version"] = version
        call.id_sources["mcp_protocol_version"] = "request header MCP-Protocol-Version"


def _query_session(query: str) -> tuple[str, str] | None:
    if not query:
        return None
    fields = parse_qs(query)
    for name in SESSION_QUERY:
        values = fields.get(name)
        if values and values[0]:
            return name, values[0]
    return None


def _mcp_headers(view: ExchangeView, call: Call) -> None:
    """The 2026-07-28 routing headers, checked against the body."""
    req = view.exchange.request
    assert req is not None
    found = {n: v for n in ("Mcp-Method", "Mcp-Name") if (v := header(req.headers, n))}
    if not found:
        return
    call.extras["mcp_headers"] = found
    method = found.get("Mcp-Method")
    if method is not None and call.operation is not None and method != call.operation:
        call.diagnostics.append(
            Diagnostic(
                code="mcp.header_mismatch",
                message=f"Mcp-Method header {method!r} differs from the body's method "
                f"{call.operation!r}",
                location=f"{view.exchange.id} request",
            )
        )


def _endpoint_event(view: ExchangeView) -> str | None:
    """The URL of a 2024-11-05 stream's first ``endpoint`` event, or None."""
    if view.method.upper() != "GET" or view.framing != "sse":
        return None
    if b"endpoint" not in view.response_head(512):
        return None  # not decoding the events of every other SSE GET
    for item in view.events:
        if isinstance(item, SseEvent):
            return item.data.strip() if item.event == "endpoint" and item.complete else None
    return None


def _legacy_stream(call: Call, endpoint: str) -> None:
    call.extras["mcp_transport"] = "http+sse"
    call.extras["endpoint"] = endpoint
    found = _query_session(urlsplit(endpoint).query)
    if found is not None and "mcp_session_id" not in call.ids:
        call.ids["mcp_session_id"] = found[1]
        call.id_sources["mcp_session_id"] = f"SSE endpoint event, URL query {found[0]}"


# -- the reply ------------------------------------------------------------------------------


def _reply_messages(view: ExchangeView, call: Call) -> list[Reply]:
    """(message, where, SSE event id, arrival) for every JSON-RPC message of the response
    (arrival: the SSE event's time; None for a plain body, which ends with the response)."""
    if view.framing != "sse":
        return [(m, "body", None, None) for m in messages(view.response_json)]
    out: list[Reply] = []
    other: dict[str, int] = {}
    for n, item in enumerate(e for e in view.events if isinstance(e, SseEvent)):
        if not item.complete:
            continue  # cut by the end of the body: the response (if any) is not whole
        try:
            data = orjson.loads(item.data) if item.data.strip() else None
        except orjson.JSONDecodeError:
            data = None
        msgs = messages(data)
        if not msgs:
            other[item.event] = other.get(item.event, 0) + 1
            if item.event == "message" and item.data.strip():
                call.diagnostics.append(
                    Diagnostic(
                        code="mcp.bad_message",
                        message="an SSE message event does not hold a JSON-RPC 2.0 message",
                        location=f"{view.exchange.id} response stream event {n}",
                    )
                )
            continue
        out.extend((m, f"stream event {n}", item.id, item.ts) for m in msgs)
    if other:
        call.extras["sse_other_events"] = other
    return out


def _stream_messages(
    replies: list[Reply], request_id: Json, call: Call
) -> tuple[dict[str, Json], str] | None:
    """The response to ``request_id`` (with where it was) and every other message kept in
    ``extras["stream_messages"]``."""
    found: tuple[dict[str, Json], str] | None = None
    others: list[Json] = []
    for msg, where, event_id, ts in replies:
        if (
            found is None
            and message_kind(msg) in ("response", "error")
            and same_id(msg.get("id"), request_id)
        ):
            found = (msg, where)
            call.settled, call.settled_at = True, ts
            if event_id is not None:
                call.extras["response_event_id"] = event_id
            continue
        entry = summary(msg, event_id)
        entry["at"] = where
        others.append(entry)
    if others:
        call.extras["stream_messages"] = others
    return found


def _status_error(view: ExchangeView, replies: list[Reply]) -> CallError | None:
    """The error of a reply without the expected response: a JSON-RPC error the server sent
    (with id null, say), else the HTTP status when >= 400."""
    for msg, where, _, _ in replies:
        if message_kind(msg) == "error" and id_text(msg.get("id")) is None:
            found = jsonrpc_error(msg.get("error"), view.status, where)
            if found is not None:
                return found
    status = view.status
    if status is None or status < 400:
        return None
    text = view.response_body[:_TEXT_LIMIT].decode("utf-8", "replace").strip()
    return CallError(status=status, type=None, code=None, message=text or None, source="http")


MCP_HTTP = McpHttp()
MCP_STDIO = McpStdio()
FAMILIES: tuple[ApiFamily, ...] = (MCP_STDIO, MCP_HTTP)
