"""A2A (Agent2Agent) traffic -> :class:`Call` with api ``a2a``, versions 0.3 and 1.0.

Four shapes of exchange are recognized (the gRPC binding in
:mod:`agentshark.apis.a2a.grpc_binding`, read into the same calls as JSON-RPC):

- **Agent card fetch**: ``GET .../.well-known/agent-card.json`` (0.3 and later) or the older
  ``.../.well-known/agent.json``. The operation is ``GetAgentCard``: not a protocol method
  (the card is a plain resource), named after 1.0's ``GetExtendedAgentCard``. The card's
  name, version, protocol version, interfaces (``[binding, protocol version, url]``, from 1.0's
  ``supportedInterfaces`` and 0.3's ``url``/``preferredTransport``/``additionalInterfaces``),
  skills and capabilities go to ``extras["agent_card"]``.
- **JSON-RPC binding**: a JSON-RPC 2.0 request whose ``method`` is one of A2A's (1.0 PascalCase
  names, 0.3 ``message/send`` style names, or the pre-0.2 ``tasks/send`` and
  ``tasks/sendSubscribe``; ``extras["method_set"]`` says which). The method name is what tells
  A2A from MCP and other JSON-RPC users; ``tasks/get``, ``tasks/cancel`` and ``tasks/list``,
  which MCP's tasks also use, are claimed only when MCP headers are absent and the
  ``A2A-Version`` header, a task-shaped result or an ``id`` (not ``taskId``) param says A2A.
  The operation is the method as sent.
- **HTTP+JSON (REST) binding** of 1.0 (and 0.3's same paths, often under ``/v1``):
  ``POST .../message:send``, ``.../message:stream``, ``GET .../tasks/{id}``, ``GET .../tasks``,
  ``POST .../tasks/{id}:cancel``, ``.../tasks/{id}:subscribe``,
  ``.../tasks/{id}/pushNotificationConfigs[/{config}]``, ``GET .../extendedAgentCard``. The
  operation is the 1.0 method name. ``message:`` paths are claimed on their own; the generic
  ``tasks`` paths only with corroboration (an ``A2A-Version`` header, an ``application/a2a+json``
  body, or a task-shaped response).

Normalization:

- Parts: 1.0 (``text``, ``raw``, ``url``, ``data``, with ``mediaType``/``filename``) and 0.3
  (``kind``: ``text``, ``file`` with ``bytes`` or ``uri``, ``data``; before 0.2 the tag was
  ``type``) become TextPart, BlobPart, UriPart, and GenericPart("data") (``fields``: the part
  minus its tag); an unknown part is a GenericPart named by its tag (``a2a.part`` untagged).
  Part ``metadata``, ``filename``/``name`` and the artifact a part came from go to
  ``provider_details``.
- The request's ``message`` is the input message, its role as sent (``ROLE_USER``, ``user``).
- A Message result is the output message. A Task result gives one output message: the parts of
  its status message, then the parts of its artifacts, with the status message's role (else
  ``agent``). The task state, as sent (``completed``, ``TASK_STATE_COMPLETED``), is the output
  message's finish reason and the call's ``finish_reasons``: A2A has no finish reason and the
  task state is its nearest analogue. ``extras["task"]`` keeps id, context id, state, artifact
  ids and history length. ``ListTasks`` results go to ``extras["tasks"]``.
- SSE streams (``message/stream``, ``SendStreamingMessage``, resubscribe, REST ``:stream`` and
  ``:subscribe``): every event, in order, is summarized in ``extras["stream_events"]`` (``kind``
  one of ``task``, ``message``, ``status-update``, ``artifact-update``; ``state``, ``final``,
  ``artifact_id``, ``append``, ``last_chunk`` when present). The output is rebuilt from them:
  artifact chunks appended per ``artifactId`` as ``append`` says, the last status message, the
  last state. The call is complete only when the stream ended on its own and the last status
  says it is over: ``final: true`` (0.3), a terminal state, or an interrupted state
  (``input-required``, ``auth-required``) which also ends a 1.0 stream; or a Message or an
  error arrived.
- Ids: ``jsonrpc_id``, ``a2a_task_id``, ``a2a_context_id``, ``a2a_message_id`` (the request
  message's), with ``id_sources`` giving the JSON path (``request $.params.message.contextId``)
  or URL path. The ``A2A-Version`` request header is ``extras["a2a_version"]`` (absent means
  0.3, per the spec; we keep absence as absence). ``extras["binding"]`` is ``jsonrpc``, ``rest``
  or ``agent_card``.
- Errors: a JSON-RPC error object is ``CallError(type="jsonrpc", code=str(code))``, its known
  A2A name (``TaskNotFoundError``...) in ``extras["error_name"]``; a REST error body
  (``{"error": {code, status, message}}``) or any HTTP status >= 400 is a ``type="http"`` error.

The part, message, result, agent card and error conversions are in
:mod:`agentshark.apis.a2a.parts`; the recognition of the three shapes, the request side and the
SSE streams are here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import orjson

from agentshark.apis.a2a.grpc_binding import Grpc
from agentshark.apis.a2a.parts import (
    ERROR_NAMES,
    apply_result,
    card_summary,
    classify,
    http_error,
    jsonrpc_error,
    message_from,
    part_from,
    set_id,
    str_value,
)
from agentshark.apis.a2a.stream import StreamReader
from agentshark.apis.model import Call, Json
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing.events import SseEvent
from agentshark.model import header

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

__all__ = ["ERROR_NAMES", "FAMILIES", "AgentCard", "JsonRpc", "Rest", "part_from"]

API = "a2a"

METHODS_V10 = frozenset(
    {
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "GetExtendedAgentCard",
    }
)
METHODS_V03 = frozenset(
    {
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/list",
        "tasks/cancel",
        "tasks/resubscribe",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
        "agent/getAuthenticatedExtendedCard",
    }
)
# Before 0.2 a message was sent with tasks/send and streamed with tasks/sendSubscribe.
METHODS_LEGACY = frozenset({"tasks/send", "tasks/sendSubscribe"})
STREAMING_METHODS = frozenset(
    {
        "SendStreamingMessage",
        "SubscribeToTask",
        "message/stream",
        "tasks/resubscribe",
        "tasks/sendSubscribe",
    }
)

_CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")


def _id(value: Json) -> str | None:
    """A JSON-RPC id as a plain string (strings and integers; not bools or null)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


# -- streams --------------------------------------------------------------------------------


def _stream(view: ExchangeView, call: Call, *, jsonrpc: bool) -> None:
    """SSE events, each a JSON-RPC response (or, REST, a bare StreamResponse), into ``call``."""
    call.stream = True
    reader = StreamReader(call)
    for n, item in enumerate(e for e in view.events if isinstance(e, SseEvent)):
        if not item.complete:
            reader.cut = True
            continue
        try:
            doc = orjson.loads(item.data)
        except orjson.JSONDecodeError:
            call.diagnostics.append(
                Diagnostic(
                    code="a2a.stream_event_not_json",
                    message="a stream event's data is not JSON",
                    location=f"{view.exchange.id} response byte {item.offset}",
                )
            )
            continue
        if not isinstance(doc, dict):
            continue
        payload: Json = doc
        where = f"response event {n} $"
        if jsonrpc or "jsonrpc" in doc:
            if doc.get("error") is not None:
                if call.error is None:
                    call.error = jsonrpc_error(doc["error"], view.status, f"stream event {n}", call)
                reader.error()
                continue
            payload = doc.get("result")
            where += ".result"
        reader.add(payload, where, item.ts)
    reader.finish(whole=view.exchange.complete, location=f"{view.exchange.id} response")


# -- families -------------------------------------------------------------------------------


def _version(view: ExchangeView, call: Call) -> None:
    req = view.exchange.request
    version = header(req.headers, "a2a-version") if req is not None else None
    if version:
        call.extras["a2a_version"] = version


def _input(call: Call, params: Json, where: str) -> None:
    """The request's message (input) and the ids it and the params carry."""
    if not isinstance(params, dict):
        return
    key = "message"
    message = params.get(key)
    if not isinstance(message, dict) and isinstance(params.get("request"), dict):
        key, message = "request", params["request"]  # 1.0 drafts: {"request": Message}
    if isinstance(message, dict):
        msg = message_from(message)
        if msg is not None:
            call.input_messages.append(msg)
        set_id(call, "a2a_message_id", message.get("messageId"), f"{where}.{key}.messageId")
        set_id(call, "a2a_task_id", message.get("taskId"), f"{where}.{key}.taskId")
        set_id(call, "a2a_context_id", message.get("contextId"), f"{where}.{key}.contextId")
    # push-notification config requests name the task "taskId" and the config "id"
    for name in ("taskId", "id"):
        set_id(call, "a2a_task_id", params.get(name), f"{where}.{name}")
    path = str_value(params.get("name"))  # 1.0 drafts: "tasks/{id}[/pushNotificationConfigs/...]"
    if path is not None and path.startswith("tasks/"):
        set_id(call, "a2a_task_id", path.split("/")[1], f"{where}.name")
    config = params.get("configuration")
    if isinstance(config, dict):
        call.request_params["configuration"] = config
    if isinstance(params.get("metadata"), dict):
        call.request_params["metadata"] = params["metadata"]


class AgentCard:
    """``GET /.well-known/agent-card.json`` (or ``agent.json``): operation ``GetAgentCard``."""

    api = API

    def match(self, view: ExchangeView) -> float:
        if view.method.upper() != "GET" or not view.path.endswith(_CARD_PATHS):
            return -1.0
        return 0.9

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = "GetAgentCard"
        call.extras["binding"] = "agent_card"
        _version(view, call)
        body = view.response_json
        call.error = http_error(view, body)
        if isinstance(body, dict) and call.error is None:
            call.extras["agent_card"] = card_summary(body)
        call.complete = view.exchange.complete and isinstance(body, dict)


# MCP (2025-11-25) has tasks too, under the same three names: {"taskId"} params, a plain
# string status. A2A sends {"id"} and a status object.
_SHARED_WITH_MCP = frozenset({"tasks/get", "tasks/cancel", "tasks/list"})
_MCP_HEADERS = ("mcp-session-id", "mcp-protocol-version", "mcp-method")


def _shared_method_score(view: ExchangeView, req: dict[str, Json]) -> float:
    """The claim on a method name A2A 0.3 shares with MCP: by headers and body shape."""
    headers = view.exchange.request.headers if view.exchange.request is not None else []
    if any(header(headers, name) is not None for name in _MCP_HEADERS):
        return 0.0
    # Above MCP's claim by method name (0.9): these are A2A's own marks.
    if header(headers, "a2a-version") is not None:
        return 0.95
    body = view.response_json
    result = body.get("result") if isinstance(body, dict) else None
    kind, obj = classify(result)
    if kind == "task":
        return 0.95
    tasks = obj.get("tasks")
    if isinstance(tasks, list) and any(classify(t)[0] == "task" for t in tasks):
        return 0.95
    params = req.get("params")
    if isinstance(params, dict) and "taskId" in params:
        return 0.0
    if isinstance(params, dict) and "id" in params:
        return 0.6
    return 0.0


class JsonRpc:
    """The JSON-RPC binding, 1.0 and 0.3 method names."""

    api = API

    def match(self, view: ExchangeView) -> float:
        if view.method.upper() != "POST":
            return -1.0
        req = view.request_json
        if not isinstance(req, dict) or req.get("jsonrpc") != "2.0":
            return 0.0
        method = req.get("method")
        if not isinstance(method, str):  # a JSON-RPC method is a string (JSON-RPC 2.0 §4)
            return 0.0
        if method in _SHARED_WITH_MCP:
            return _shared_method_score(view, req)
        if method in METHODS_V10 or method in METHODS_V03 or method in METHODS_LEGACY:
            return 0.9
        return 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = view.request_json
        assert isinstance(req, dict)  # match made sure
        method = req.get("method")
        call.operation = method if isinstance(method, str) else None
        call.extras["binding"] = "jsonrpc"
        call.extras["method_set"] = (
            "1.0" if method in METHODS_V10 else "0.1" if method in METHODS_LEGACY else "0.3"
        )
        _version(view, call)
        rpc_id = _id(req.get("id"))
        if rpc_id is not None:
            call.ids["jsonrpc_id"] = rpc_id
            call.id_sources["jsonrpc_id"] = "request $.id"
        _input(call, req.get("params"), "request $.params")
        if view.framing == "sse":
            _stream(view, call, jsonrpc=True)
            return
        call.stream = method in STREAMING_METHODS
        body = view.response_json
        if not isinstance(body, dict):
            call.error = http_error(view, body)
            call.complete = False
            return
        response_id = _id(body.get("id"))
        if rpc_id is not None and response_id is not None and response_id != rpc_id:
            call.diagnostics.append(
                Diagnostic(
                    code="a2a.jsonrpc_id_mismatch",
                    message=f"the response id {response_id!r} is not the request's {rpc_id!r}",
                    location=f"{view.exchange.id} response $.id",
                )
            )
        if body.get("error") is not None:
            call.error = jsonrpc_error(body["error"], view.status, "body", call)
        else:
            call.error = http_error(view, body)
            if "result" in body:
                apply_result(call, body["result"], "response $.result")
        call.complete = view.exchange.complete and ("result" in body or "error" in body)


# REST paths (suffixes, after any prefix such as /v1 or /a2a/rest), method -> operation.
_TASK = r"/tasks/(?P<task>[^/:]+)"
_REST: tuple[tuple[str, re.Pattern[str], str, bool], ...] = (
    ("POST", re.compile(r"/message:send$"), "SendMessage", True),
    ("POST", re.compile(r"/message:stream$"), "SendStreamingMessage", True),
    ("POST", re.compile(_TASK + r":cancel$"), "CancelTask", True),
    ("POST", re.compile(_TASK + r":subscribe$"), "SubscribeToTask", True),
    ("GET", re.compile(_TASK + r":subscribe$"), "SubscribeToTask", True),
    (
        "POST",
        re.compile(_TASK + r"/pushNotificationConfigs$"),
        "CreateTaskPushNotificationConfig",
        True,
    ),
    (
        "GET",
        re.compile(_TASK + r"/pushNotificationConfigs$"),
        "ListTaskPushNotificationConfigs",
        True,
    ),
    (
        "GET",
        re.compile(_TASK + r"/pushNotificationConfigs/[^/]+$"),
        "GetTaskPushNotificationConfig",
        True,
    ),
    (
        "DELETE",
        re.compile(_TASK + r"/pushNotificationConfigs/[^/]+$"),
        "DeleteTaskPushNotificationConfig",
        True,
    ),
    ("GET", re.compile(r"/extendedAgentCard$"), "GetExtendedAgentCard", True),
    ("GET", re.compile(_TASK + r"$"), "GetTask", False),
    ("GET", re.compile(r"/tasks$"), "ListTasks", False),
)


def rest_operation(method: str, path: str) -> tuple[str, str | None, bool] | None:
    """(1.0 method name, task id from the path, distinctive?) of a REST call, or None."""
    method = method.upper()
    for verb, pattern, operation, distinctive in _REST:
        if verb == method:
            found = pattern.search(path)
            if found is not None:
                task = found.groupdict().get("task")
                return operation, task, distinctive
    return None


class Rest:
    """The HTTP+JSON binding: the operation is the 1.0 method name."""

    api = API

    def match(self, view: ExchangeView) -> float:
        found = rest_operation(view.method, view.path)
        if found is None:
            return -1.0
        if found[2]:
            return 0.8
        req = view.exchange.request
        corroborated = req is not None and (
            header(req.headers, "a2a-version") is not None
            or "a2a+json" in (header(req.headers, "content-type") or "")
            or "a2a+json" in view.response_content_type
        )
        if not corroborated:
            kind, obj = classify(view.response_json)
            corroborated = kind == "task" or isinstance(obj.get("tasks"), list)
        return 0.7 if corroborated else 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        found = rest_operation(view.method, view.path)
        assert found is not None  # match made sure
        operation, task, _ = found
        call.operation = operation
        call.extras["binding"] = "rest"
        _version(view, call)
        if task is not None:
            call.ids["a2a_task_id"] = task
            call.id_sources["a2a_task_id"] = "request url path"
        _input(call, view.request_json, "request $")
        if view.framing == "sse":
            _stream(view, call, jsonrpc=False)
            return
        call.stream = operation in STREAMING_METHODS
        body = view.response_json
        call.error = http_error(view, body)
        if call.error is None and isinstance(body, dict):
            apply_result(call, body, "response $")
        call.complete = view.exchange.complete and (
            isinstance(body, dict) or (call.error is not None or operation.startswith("Delete"))
        )


AGENT_CARD = AgentCard()
JSONRPC = JsonRpc()
REST = Rest()
GRPC = Grpc(_input)  # the gRPC binding reads its request message as JSON-RPC params
FAMILIES: tuple[ApiFamily, ...] = (AGENT_CARD, JSONRPC, REST, GRPC)
