"""MCP over Streamable HTTP (revisions 2025-03-26 ... 2025-11-25) -> :class:`Call`.

One exchange is one call (api ``mcp``):

- ``POST`` of a JSON-RPC 2.0 request or notification: ``operation`` is the JSON-RPC
  ``method``. The reply is a JSON body or an SSE stream whose ``message`` events carry
  JSON-RPC messages; notifications and server requests sent before the response are kept in
  ``extras["stream_messages"]`` (kind, method, id, params, SSE event id) and the response is
  the message whose ``id`` equals the request's. A notification is answered ``202``.
- ``POST`` of a JSON-RPC response (the client answering a server request such as
  ``sampling/createMessage``): ``operation`` is None (the method is on the other exchange),
  the message kept whole in ``extras["client_response"]``.
- A batch (2025-03-26 only): the first request or notification is the call, every message
  of the batch is summarized in ``extras["batch"]``; replies to the others go to
  ``stream_messages``.
- ``GET`` with ``Mcp-Session-Id`` (the server's SSE stream): ``operation`` ``"session.stream"``,
  its messages in ``stream_messages``. ``DELETE`` with ``Mcp-Session-Id`` (end of the
  session): ``operation`` ``"session.delete"``. Neither name contains a ``/``, so they cannot
  collide with an MCP method.

Ids: ``jsonrpc_id`` (as a string; ``id_sources`` says whether it was a JSON number or string),
``mcp_session_id`` (the request's ``Mcp-Session-Id`` header, or for ``initialize`` the
response's), ``mcp_protocol_version`` (the ``MCP-Protocol-Version`` request header, or the
negotiated version of an ``initialize`` result), ``mcp_progress_token`` and
``traceparent``/``tracestate``/``baggage`` from ``params._meta`` (these win over the HTTP
headers of the same name, which are then kept in ``extras["http_trace_context"]``).

Methods: ``initialize`` params go to ``request_params``; every result is kept whole in
``extras["result"]`` except ``tools/call``'s (see below) and ``tools/list``'s ``tools`` (with
their input schemas), which become ``tool_definitions`` (the rest, ``nextCursor``..., stays in
``extras["result"]``); ``tools/call`` gives an input message (role
``client``) with a :class:`ToolCallPart` and an output message (role ``server``) with a
:class:`ToolCallResponsePart` (``response`` = the result ``content``; ``is_error``,
``structured_content`` and other result fields in ``provider_details``) followed by one
part per content item (text, image/audio blobs, resource links as URIs, embedded resources
and anything else kept whole). Other methods' params go to ``request_params``.

Outcomes: a JSON-RPC ``error`` fills ``call.error`` (type ``"jsonrpc"``, code as a string);
a tool result with ``isError: true`` leaves ``call.error`` None and marks the result part
``is_error``. An HTTP status >= 400 without a JSON-RPC error is an error of type None
(source ``"http"``). No finish reason is invented: MCP has none.

Completeness: a request's call is complete when its JSON-RPC response arrived whole. When
the HTTP message itself did not end (an SSE reply cut before its final chunk), the call is
still complete and an ``info`` diagnostic ``mcp.http_unfinished`` says the HTTP message did
not end. Notifications, posted responses, ``GET`` and ``DELETE`` are complete when the
exchange is. An SSE ``message`` event that holds no JSON-RPC message is a warning
``mcp.bad_message``; other SSE events (``ping``...) are counted in
``extras["sse_other_events"]``. Other extras: ``request_meta`` (``params._meta`` whole),
``error_data`` (a JSON-RPC error's ``data``), ``server_info`` (``initialize``),
``response_event_id`` (the SSE id of the response event, for ``Last-Event-ID`` resumption),
``last_event_id`` (the request's ``Last-Event-ID`` header).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from agentshark.apis.model import (
    BlobPart,
    Call,
    CallError,
    GenericPart,
    Json,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
)
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing.events import SseEvent
from agentshark.model import header

if TYPE_CHECKING:
    from agentshark.apis.registry import ApiFamily

# Methods of every revision up to 2025-11-25 (and the 2026 stateless era's new ones), by
# prefix or whole name: recognition only, any other method is parsed the same way.
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
TRACE_META = ("traceparent", "tracestate", "baggage")
_TEXT_LIMIT = 2000


# -- JSON-RPC 2.0 messages ------------------------------------------------------------------


def message_kind(msg: Json) -> str | None:
    """ "request", "notification", "response", "error" or None (not a JSON-RPC 2.0 message)."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return None
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return None
        return "request" if "id" in msg else "notification"
    if "error" in msg:
        return "error"
    if "result" in msg:
        return "response"
    return None


def id_text(value: Json) -> str | None:
    """A JSON-RPC id as a string: numbers as JSON writes them, strings as they are."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # as JSON writes it (orjson reads no NaN or Infinity)
    return None


def _id_type(value: Json) -> str:
    return "string" if isinstance(value, str) else "number"


def _same_id(a: Json, b: Json) -> bool:
    """Ids are equal when their JSON values are: 1 and "1" differ, true is no id."""
    if id_text(a) is None or id_text(b) is None:
        return False
    return isinstance(a, str) == isinstance(b, str) and a == b


def is_mcp_method(method: str) -> bool:
    return method in MCP_METHODS or method.startswith(MCP_METHOD_PREFIXES)


def _messages(body: Json) -> list[Json]:
    """The JSON-RPC messages of a body: one object, or the members of a batch."""
    if isinstance(body, list):
        return [m for m in body if message_kind(m) is not None]
    return [body] if message_kind(body) is not None else []


# -- the family -----------------------------------------------------------------------------


class McpHttp:
    api = "mcp"

    def match(self, view: ExchangeView) -> float:
        req = view.exchange.request
        if req is None:
            return -1.0
        session = header(req.headers, "mcp-session-id") is not None
        version = header(req.headers, "mcp-protocol-version") is not None
        method = view.method.upper()
        if method in ("GET", "DELETE"):
            if session:
                return 0.8
            return 0.5 if version and method == "GET" else -1.0
        if method != "POST":
            return -1.0
        msgs = _messages(view.request_json)
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
            _stream_messages(replies, None, call)
            call.error = _status_error(view, replies)
            call.complete = view.exchange.complete
            return
        msgs = _messages(view.request_json)
        if len(msgs) > 1:
            call.extras["batch"] = [_summary(m, None) for m in msgs]
        first = next((m for m in msgs if "method" in m), msgs[0] if msgs else {})
        kind = message_kind(first)
        if kind in ("response", "error"):
            call.operation = None
            call.extras["client_response"] = first
            _set_id(first.get("id"), call)
            _stream_messages(replies, None, call)
            call.error = _status_error(view, replies)
            call.complete = view.exchange.complete
            return
        call.operation = first.get("method") if isinstance(first.get("method"), str) else None
        params = first.get("params")
        _meta_ids(params, call)
        if kind == "notification":
            _params(params, call)
            _stream_messages(replies, None, call)
            call.error = _status_error(view, replies)
            call.complete = view.exchange.complete
            return
        request_id = first.get("id")
        _set_id(request_id, call)
        reply = _stream_messages(replies, request_id, call)
        _request(call, params, request_id)
        if reply is not None:
            _reply(view, call, reply[0], reply[1], request_id)
        else:
            call.error = _status_error(view, replies)
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


# -- ids ------------------------------------------------------------------------------------


def _session_ids(view: ExchangeView, call: Call) -> None:
    req, resp = view.exchange.request, view.exchange.response
    assert req is not None
    for name, key in (("Mcp-Session-Id", "mcp_session_id"),):
        value = header(req.headers, name)
        if value:
            call.ids[key] = value
            call.id_sources[key] = f"request header {name}"
        elif resp is not None and (value := header(resp.headers, name)):
            call.ids[key] = value
            call.id_sources[key] = f"response header {name}"
    version = header(req.headers, "MCP-Protocol-Version")
    if version:
        call.ids["mcp_protocol_version"] = version
        call.id_sources["mcp_protocol_version"] = "request header MCP-Protocol-Version"


def _set_id(value: Json, call: Call) -> None:
    text = id_text(value)
    if text is not None:
        call.ids["jsonrpc_id"] = text
        call.id_sources["jsonrpc_id"] = f"request body id (JSON {_id_type(value)})"


def _meta_ids(params: Json, call: Call) -> None:
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return
    progress = id_text(meta.get("progressToken"))
    if progress is not None:
        key = "mcp_progress_token"
        call.ids[key] = progress
        call.id_sources[key] = "params._meta.progressToken"
    for name in TRACE_META:
        value = meta.get(name)
        if not isinstance(value, str) or not value:
            continue
        previous = call.ids.get(name)
        if previous is not None and previous != value:
            call.extras.setdefault("http_trace_context", {})[name] = previous
        call.ids[name] = value
        call.id_sources[name] = f"params._meta.{name}"


# -- the reply ------------------------------------------------------------------------------


def _reply_messages(view: ExchangeView, call: Call) -> list[tuple[Json, str, str | None]]:
    """(message, where, SSE event id) for every JSON-RPC message of the response."""
    if view.framing != "sse":
        return [(m, "body", None) for m in _messages(view.response_json)]
    out: list[tuple[Json, str, str | None]] = []
    other: dict[str, int] = {}
    for n, item in enumerate(e for e in view.events if isinstance(e, SseEvent)):
        if not item.complete:
            continue  # cut by the end of the body: the response (if any) is not whole
        try:
            data = orjson.loads(item.data) if item.data.strip() else None
        except orjson.JSONDecodeError:
            data = None
        msgs = _messages(data)
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
        out.extend((m, f"stream event {n}", item.id) for m in msgs)
    if other:
        call.extras["sse_other_events"] = other
    return out


def _summary(msg: Json, event_id: str | None) -> dict[str, Json]:
    out: dict[str, Json] = {"kind": message_kind(msg)}
    for key in ("method", "id", "params", "error"):
        if key in msg:
            out[key] = msg[key]
    if "result" in msg:
        out["result"] = msg["result"]
    if event_id is not None:
        out["event_id"] = event_id
    return out


def _stream_messages(
    replies: list[tuple[Json, str, str | None]], request_id: Json, call: Call
) -> tuple[dict[str, Json], str] | None:
    """The response to ``request_id`` (with where it was) and every other message kept in
    ``extras["stream_messages"]``."""
    found: tuple[dict[str, Json], str] | None = None
    others: list[Json] = []
    for msg, where, event_id in replies:
        if (
            found is None
            and message_kind(msg) in ("response", "error")
            and _same_id(msg.get("id"), request_id)
        ):
            found = (msg, where)
            if event_id is not None:
                call.extras["response_event_id"] = event_id
            continue
        others.append(_summary(msg, event_id))
    if others:
        call.extras["stream_messages"] = others
    return found


def _status_error(
    view: ExchangeView, replies: list[tuple[Json, str, str | None]]
) -> CallError | None:
    """The error of a reply without the expected response: a JSON-RPC error the server sent
    (with id null, say), else the HTTP status when >= 400."""
    for msg, where, _ in replies:
        if message_kind(msg) == "error":
            found = _jsonrpc_error(msg.get("error"), view.status, where)
            if found is not None:
                return found
    status = view.status
    if status is None or status < 400:
        return None
    text = view.response_body[:_TEXT_LIMIT].decode("utf-8", "replace").strip()
    return CallError(status=status, type=None, code=None, message=text or None, source="http")


def _jsonrpc_error(error: Json, status: int | None, where: str) -> CallError | None:
    if not isinstance(error, dict):
        return None
    code, message = error.get("code"), error.get("message")
    return CallError(
        status=status,
        type="jsonrpc",
        code=id_text(code) if not isinstance(code, str) else code,
        message=message if isinstance(message, str) else None,
        source=where,
    )


# -- methods --------------------------------------------------------------------------------


def _params(params: Json, call: Call) -> None:
    if isinstance(params, dict):
        for key, value in params.items():
            if key != "_meta":
                call.request_params[key] = value
        if isinstance(params.get("_meta"), dict):
            call.extras["request_meta"] = params["_meta"]
    elif params is not None:
        call.extras["params"] = params


def _request(call: Call, params: Json, request_id: Json) -> None:
    if call.operation != "tools/call" or not isinstance(params, dict):
        _params(params, call)
        return
    name = params.get("name")
    call.input_messages.append(
        Message(
            role="client",
            parts=[
                ToolCallPart(
                    id=id_text(request_id),
                    name=name if isinstance(name, str) else "",
                    arguments=params.get("arguments"),
                )
            ],
        )
    )
    for key, value in params.items():
        if key not in ("name", "arguments", "_meta"):
            call.request_params[key] = value
    if isinstance(params.get("_meta"), dict):
        call.extras["request_meta"] = params["_meta"]


def _reply(
    view: ExchangeView, call: Call, msg: dict[str, Json], where: str, request_id: Json
) -> None:
    if message_kind(msg) == "error":
        call.error = _jsonrpc_error(msg.get("error"), view.status, where)
        data = msg["error"].get("data") if isinstance(msg.get("error"), dict) else None
        if data is not None:
            call.extras["error_data"] = data
        return
    result = msg.get("result")
    if call.operation == "tools/call" and isinstance(result, dict):
        _tool_result(call, result, request_id)
        return
    if call.operation == "tools/list" and isinstance(result, dict):
        tools = result.get("tools")
        if isinstance(tools, list) and all(isinstance(t, dict) for t in tools):
            call.tool_definitions = tools  # not repeated in extras["result"]
            result = {k: v for k, v in result.items() if k != "tools"}
    call.extras["result"] = result
    if call.operation == "initialize" and isinstance(result, dict):
        version = result.get("protocolVersion")
        if isinstance(version, str) and "mcp_protocol_version" not in call.ids:
            call.ids["mcp_protocol_version"] = version
            call.id_sources["mcp_protocol_version"] = "result.protocolVersion"
        info = result.get("serverInfo")
        if isinstance(info, dict):
            call.extras["server_info"] = info


def _tool_result(call: Call, result: dict[str, Json], request_id: Json) -> None:
    content = result.get("content")
    details: dict[str, Json] = {}
    if "isError" in result:
        details["is_error"] = result["isError"]
    if "structuredContent" in result:
        details["structured_content"] = result["structuredContent"]
    details.update(
        (k, v) for k, v in result.items() if k not in ("content", "isError", "structuredContent")
    )
    parts: list[Part] = [
        ToolCallResponsePart(id=id_text(request_id), response=content, provider_details=details)
    ]
    if isinstance(content, list):
        parts.extend(content_part(item) for item in content)
    call.output_messages.append(Message(role="server", parts=parts))


def content_part(item: Json) -> Part:
    """One MCP content item as a part: text, image/audio blobs, resource links as URIs,
    anything else (embedded resources, unknown types) kept whole."""
    if not isinstance(item, dict):
        return GenericPart(type="unknown", fields={"value": item})
    kind = item.get("type")
    extra = {k: v for k, v in item.items() if k not in ("type", "text", "data", "mimeType", "uri")}
    mime = item.get("mimeType") if isinstance(item.get("mimeType"), str) else None
    if kind == "text" and isinstance(item.get("text"), str):
        return TextPart(content=item["text"], provider_details=extra)
    if kind in ("image", "audio") and isinstance(item.get("data"), str):
        return BlobPart(mime_type=mime, modality=kind, content=item["data"], provider_details=extra)
    if kind == "resource_link" and isinstance(item.get("uri"), str):
        modality = mime.split("/")[0] if mime and mime.startswith(("image/", "audio/")) else None
        return UriPart(uri=item["uri"], mime_type=mime, modality=modality, provider_details=extra)
    fields = {k: v for k, v in item.items() if k != "type"}
    return GenericPart(type=kind if isinstance(kind, str) and kind else "unknown", fields=fields)


MCP_HTTP = McpHttp()
FAMILIES: tuple[ApiFamily, ...] = (MCP_HTTP,)
