"""MCP requests and results -> the fields of a :class:`Call`, whatever the transport.

``initialize`` params go to ``request_params``; every result is kept whole in
``extras["result"]`` except ``tools/call``'s and ``tools/list``'s ``tools`` (with their input
schemas), which become ``tool_definitions``. ``tools/call`` gives an input message (role
``client``) with a :class:`ToolCallPart` and an output message (role ``server``) with a
:class:`ToolCallResponsePart` (``response`` = the result ``content``; ``is_error``,
``structured_content`` and the other result fields in ``provider_details``) followed by one
part per content item. Other methods' params go to ``request_params``.

Tasks (2025-11-25): a request with ``params.task`` is answered by a ``CreateTaskResult``
(``result.task``: ``taskId``, ``status``...), kept in ``extras["result"]``, no tool result
yet; ``tasks/get``, ``tasks/result``, ``tasks/cancel``, ``notifications/tasks/status`` and
messages whose ``_meta`` holds ``io.modelcontextprotocol/related-task`` name the task. Every
one of them carries the id ``mcp_task_id``. A ``tasks/result`` whose result is a tool
result gets the tool result parts (its ``ToolCallResponsePart`` id is None: the tool call's
id is the ``tools/call`` request's, which :mod:`agentshark.apis.mcp.sessions` names in
``extras["task_of"]``).

The 2026-07-28 revision moves what ``initialize`` carried into every message's ``_meta``:
``io.modelcontextprotocol/protocolVersion`` (an id, ``mcp_protocol_version``, unless a header
gave it), ``.../clientInfo`` (``extras["client_info"]``), ``.../serverInfo`` in a result's
``_meta`` (``extras["server_info"]``), ``.../subscriptionId`` (``mcp_subscription_id``). A
result's ``resultType`` is kept in ``extras["result_type"]``; an ``input_required`` result
(the server asking the client for sampling, elicitation or roots before it can answer) is
no tool result: its ``inputRequests`` and ``requestState`` go to extras, and the retried
request carries ``inputResponses`` and the same ``requestState`` in its params.
"""

from __future__ import annotations

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
    tool_name,
)
from agentshark.jsonrpc import IdKey, id_text, id_type, message_kind

TRACE_META = ("traceparent", "tracestate", "baggage")
MCP_META = "io.modelcontextprotocol/"


def set_jsonrpc_id(value: Json, call: Call, where: str = "request body") -> None:
    text = id_text(value)
    if text is not None:
        call.ids["jsonrpc_id"] = text
        call.id_sources["jsonrpc_id"] = f"{where} id (JSON {id_type(value)})"


def jsonrpc_id_key(call: Call) -> IdKey | None:
    """The key (:func:`agentshark.jsonrpc.id_key`) of the id :func:`set_jsonrpc_id` put on
    ``call``: its text, and whether it was a JSON string (said by its source)."""
    text = call.ids.get("jsonrpc_id")
    if text is None:
        return None
    return call.id_sources.get("jsonrpc_id", "").endswith("(JSON string)"), text


def meta_ids(params: Json, call: Call) -> None:
    """Ids from ``params._meta``: progress token, W3C trace context (these win over the HTTP
    headers of the same name, which are then kept in ``extras["http_trace_context"]``), and
    the 2026-07-28 ``io.modelcontextprotocol/...`` keys."""
    task = id_text(params.get("taskId")) if isinstance(params, dict) else None
    if task is not None:  # tasks/get, tasks/result, tasks/cancel, notifications/tasks/status
        _set_task(call, task, "params.taskId")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return
    related = meta.get(MCP_META + "related-task")
    if isinstance(related, dict) and (task := id_text(related.get("taskId"))) is not None:
        _set_task(call, task, f'params._meta["{MCP_META}related-task"].taskId')
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
    version = meta.get(MCP_META + "protocolVersion")
    if isinstance(version, str) and version and "mcp_protocol_version" not in call.ids:
        call.ids["mcp_protocol_version"] = version
        call.id_sources["mcp_protocol_version"] = f'params._meta["{MCP_META}protocolVersion"]'
    subscription = id_text(meta.get(MCP_META + "subscriptionId"))
    if subscription is not None:
        call.ids["mcp_subscription_id"] = subscription
        call.id_sources["mcp_subscription_id"] = f'params._meta["{MCP_META}subscriptionId"]'
    info = meta.get(MCP_META + "clientInfo")
    if isinstance(info, dict):
        call.extras["client_info"] = info


def params(value: Json, call: Call) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key != "_meta":
                call.request_params[key] = item
        if isinstance(value.get("_meta"), dict):
            call.extras["request_meta"] = value["_meta"]
    elif value is not None:
        call.extras["params"] = value


def request(call: Call, value: Json, request_id: Json) -> None:
    """A request's params: a tool call for ``tools/call``, ``request_params`` otherwise."""
    if call.operation != "tools/call" or not isinstance(value, dict):
        params(value, call)
        return
    details: dict[str, Json] = {}
    name = tool_name(value.get("name"), details)
    call.input_messages.append(
        Message(
            role="client",
            parts=[
                ToolCallPart(
                    id=id_text(request_id),
                    name=name,
                    arguments=value.get("arguments"),
                    provider_details=details,
                )
            ],
        )
    )
    for key, item in value.items():
        if key not in ("name", "arguments", "_meta"):
            call.request_params[key] = item
    if isinstance(value.get("_meta"), dict):
        call.extras["request_meta"] = value["_meta"]


def reply(call: Call, msg: dict[str, Json], where: str, status: int | None) -> None:
    """The JSON-RPC response (or error) to the call's request."""
    if message_kind(msg) == "error":
        call.error = jsonrpc_error(msg.get("error"), status, where)
        data = msg["error"].get("data") if isinstance(msg.get("error"), dict) else None
        if data is not None:
            call.extras["error_data"] = data
        return
    result = msg.get("result")
    if isinstance(result, dict):
        _result_meta(call, result)
        if result.get("resultType") == "input_required":
            call.extras["result"] = result
            return
        task = result.get("task")
        if call.operation != "tasks/get" and isinstance(task, dict) and "taskId" in task:
            # a task-augmented request: the result comes later, through tasks/result
            task_id = id_text(task.get("taskId"))
            if task_id is not None:
                _set_task(call, task_id, "result.task.taskId")
            call.extras["result"] = result
            return
        if call.operation == "tasks/result" and "content" in result:
            _tool_result(call, result, None)  # the result of the task's tools/call
            return
    if call.operation == "tools/call" and isinstance(result, dict):
        _tool_result(call, result, msg.get("id"))
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


def _set_task(call: Call, task: str, where: str) -> None:
    if "mcp_task_id" not in call.ids:
        call.ids["mcp_task_id"] = task
        call.id_sources["mcp_task_id"] = where


def _result_meta(call: Call, result: dict[str, Json]) -> None:
    kind = result.get("resultType")
    if isinstance(kind, str):
        call.extras["result_type"] = kind
    meta = result.get("_meta")
    if isinstance(meta, dict) and isinstance(meta.get(MCP_META + "serverInfo"), dict):
        call.extras["server_info"] = meta[MCP_META + "serverInfo"]


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


def jsonrpc_error(error: Json, status: int | None, where: str) -> CallError | None:
    """A JSON-RPC ``error`` member as a call error (type ``"jsonrpc"``, code as text)."""
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
