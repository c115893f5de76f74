"""One call of the report (its ``calls`` entry, already redacted) -> OTLP span attributes.

Model calls get the GenAI inference attributes of semconv v1.41.1 (gen-ai-spans.md):
operation, provider, request and response model, response id, finish reasons, usage, the
request parameters it names, ``gen_ai.response.time_to_first_chunk``, and the content as
**JSON strings** in the OTel part schema (``gen_ai.input.messages``, ``…output.messages``,
``…system_instructions``, ``…tool.definitions``): Phoenix reads only strings there, Langfuse
and Jaeger read span attributes. MCP calls get the MCP attributes (mcp.md: ``mcp.method.name``,
``mcp.session.id``, ``jsonrpc.request.id``, ``mcp.protocol.version``, ``network.transport``,
``error.type`` = the JSON-RPC code or ``tool_error``); A2A calls the ``a2a.*`` ones and the
messages sent and answered (``gen_ai.input.messages``/``gen_ai.output.messages``).

Nothing is invented: an attribute whose value the report does not have is absent (a missing
finish reason stays out of ``gen_ai.response.finish_reasons`` and is ``null`` in its output
message, as the report has it).
"""

from __future__ import annotations

from typing import Any

import orjson

from agentshark.output.otlp import names as n

Json = Any
Attributes = dict[str, Json]


def dumps(value: Json) -> str:
    """A JSON string attribute value (UTF-8 kept as text)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def json_text(value: Json) -> str:
    """A tool call's arguments or result as an attribute: a string as it was sent (a tool
    result is often JSON text already), anything else as JSON."""
    return value if isinstance(value, str) else dumps(value)


def otel_part(part: dict[str, Json]) -> dict[str, Json]:
    """A report part in the OTel part schema: a tool call's ``arguments`` is the parsed value,
    or the string as sent when it did not parse (with ``arguments_error``); the report's
    ``arguments_raw`` copy of a parsed string is left out. Other fields stay (the schema
    allows extra properties)."""
    if part.get("type") != "tool_call":
        return part
    out = {k: v for k, v in part.items() if k not in ("arguments_raw", "arguments_error")}
    if part.get("arguments_error") is not None:
        out["arguments"] = part.get("arguments_raw")
        out["arguments_error"] = part["arguments_error"]
    return out


def input_messages(messages: list[dict[str, Json]]) -> list[dict[str, Json]]:
    out = []
    for m in messages:
        item: dict[str, Json] = {"role": m.get("role"), "parts": [otel_part(p) for p in m["parts"]]}
        if m.get("name") is not None:
            item["name"] = m["name"]
        out.append(item)
    return out


def output_messages(messages: list[dict[str, Json]]) -> list[dict[str, Json]]:
    return [
        {
            "role": m.get("role"),
            "parts": [otel_part(p) for p in m["parts"]],
            "finish_reason": m.get("finish_reason"),
        }
        for m in messages
    ]


def _put(attrs: Attributes, name: str, value: Json) -> None:
    if value is not None:
        attrs[name] = value


def common(call: dict[str, Json]) -> Attributes:
    """What every span that stands for a call carries: its ids in the report."""
    return {n.CALL_ID: call["id"], n.EXCHANGE_ID: call["exchange_id"], n.API: call["api"]}


def server(attrs: Attributes, where: tuple[str, int | None] | None) -> None:
    if where is not None:
        attrs[n.SERVER_ADDRESS] = where[0]
        _put(attrs, n.SERVER_PORT, where[1])


def model_call(call: dict[str, Json], *, operation: str | None = None) -> Attributes:
    """The GenAI inference attributes of a model (or other provider API) call."""
    attrs = common(call)
    op = operation or call.get("operation") or "chat"
    attrs[n.OPERATION] = n.OPERATIONS.get(op, op)
    provider = call.get("provider")
    _put(attrs, n.PROVIDER, n.PROVIDERS.get(provider, provider) if provider else None)
    _put(attrs, n.REQUEST_MODEL, call.get("request_model"))
    _put(attrs, n.RESPONSE_MODEL, call.get("response_model"))
    _put(attrs, n.RESPONSE_ID, call.get("response_id"))
    if call.get("stream"):
        attrs[n.REQUEST_STREAM] = True
    attrs[n.COMPLETE] = bool(call.get("complete"))
    reasons = [r for r in call.get("finish_reasons") or [] if isinstance(r, str)]
    if reasons:
        attrs[n.FINISH_REASONS] = reasons
    _params(attrs, call.get("request_params") or {})
    _usage(attrs, call.get("usage"))
    timing = call.get("timing") or {}
    if timing.get("started") is not None and timing.get("first_token") is not None:
        attrs[n.TIME_TO_FIRST_CHUNK] = timing["first_token"] - timing["started"]
    if call.get("system_instructions"):
        parts = [otel_part(p) for p in call["system_instructions"]]
        attrs[n.SYSTEM_INSTRUCTIONS] = dumps(parts)
    if call.get("input_messages"):
        attrs[n.INPUT_MESSAGES] = dumps(input_messages(call["input_messages"]))
    if call.get("output_messages"):
        attrs[n.OUTPUT_MESSAGES] = dumps(output_messages(call["output_messages"]))
    if call.get("tool_definitions"):
        attrs[n.TOOL_DEFINITIONS] = dumps(call["tool_definitions"])
    error(attrs, call)
    return attrs


def _params(attrs: Attributes, params: dict[str, Json]) -> None:
    groups = [params, *(params[g] for g in n.PARAM_GROUPS if isinstance(params.get(g), dict))]
    for group in groups:
        for key, value in group.items():
            name = n.REQUEST_PARAMS.get(key)
            if name is not None and (primitive := _param_value(value)) is not None:
                attrs[name] = primitive
            elif key in n.CHOICE_PARAMS and isinstance(value, int) and value != 1:
                attrs[n.REQUEST_CHOICES] = value


def _param_value(value: Json) -> Json:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return [value]  # a stop sequence given alone
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None


def _usage(attrs: Attributes, usage: dict[str, Json] | None) -> None:
    if not usage:
        return
    for key, name in (
        ("input_tokens", n.INPUT_TOKENS),
        ("output_tokens", n.OUTPUT_TOKENS),
        ("cached_input_tokens", n.CACHE_READ_TOKENS),
        ("cache_creation_input_tokens", n.CACHE_WRITE_TOKENS),
        ("reasoning_tokens", n.REASONING_TOKENS),
    ):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            attrs[name] = value


def error(attrs: Attributes, call: dict[str, Json]) -> str | None:
    """``error.type`` of a failed call (the provider's code, else its error type, else the
    HTTP status, else ``_OTHER``) and the description its span status gets."""
    err = call.get("error")
    if not err:
        return None
    kind = err.get("code") or err.get("type")
    if kind is None and err.get("status") is not None:
        kind = str(err["status"])
    attrs[n.ERROR_TYPE] = str(kind) if kind is not None else "_OTHER"
    message = err.get("message")
    if message is not None:
        attrs[n.ERROR_MESSAGE] = str(message)
    return str(message) if message is not None else attrs[n.ERROR_TYPE]


def mcp_call(call: dict[str, Json], transport: str | None) -> Attributes:
    """The MCP attributes of an MCP call (mcp.md)."""
    attrs: Attributes = {}
    method = call.get("operation")
    if isinstance(method, str) and ("/" in method or method in ("initialize", "ping")):
        attrs[n.MCP_METHOD] = method
    ids = call.get("ids") or {}
    _put(attrs, n.MCP_SESSION, ids.get("mcp_session_id"))
    _put(attrs, n.JSONRPC_ID, ids.get("jsonrpc_id"))
    _put(attrs, n.MCP_PROTOCOL, ids.get("mcp_protocol_version"))
    if transport is not None:
        attrs[n.NETWORK_TRANSPORT] = "pipe" if transport == "stdio" else "tcp"
    tool = asked_tool(call)
    if method == "tools/call":
        attrs[n.OPERATION] = "execute_tool"
        if tool is not None:
            _put(attrs, n.TOOL_NAME, tool.get("name"))
    target = mcp_target(call)
    if method == "prompts/get":
        _put(attrs, n.PROMPT_NAME, target)
    if method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
        _put(attrs, n.MCP_RESOURCE, target)
    if (err := call.get("error")) and err.get("code") is not None:
        attrs[n.RPC_STATUS] = str(err["code"])
    elif _is_tool_error(call):
        attrs[n.ERROR_TYPE] = n.MCP_TOOL_ERROR
    return attrs


def mcp_target(call: dict[str, Json]) -> str | None:
    """What an MCP span name names after the method: the tool, prompt or resource."""
    tool = asked_tool(call)
    if tool is not None and isinstance(tool.get("name"), str):
        return str(tool["name"])
    extras = call.get("extras") or {}
    params = extras.get("params")
    if isinstance(params, dict):
        for key in ("name", "uri"):
            if isinstance(params.get(key), str):
                return str(params[key])
    return None


def asked_tool(call: dict[str, Json]) -> dict[str, Json] | None:
    parts = (p for m in call.get("input_messages") or [] for p in m["parts"])
    return next((p for p in parts if p.get("type") == "tool_call"), None)


def tool_error_text(call: dict[str, Json]) -> str:
    """The status description of a ``tools/call`` whose result has ``isError``: its text."""
    texts: list[str] = []
    for m in call.get("output_messages") or []:
        for p in m["parts"]:
            if p.get("type") != "tool_call_response":
                continue
            response = p.get("response")
            items = response if isinstance(response, list) else [response]
            texts += [str(i["text"]) for i in items if isinstance(i, dict) and "text" in i]
            texts += [i for i in items if isinstance(i, str)]
    return "\n".join(texts) or "the tool's result has isError: true"


def _is_tool_error(call: dict[str, Json]) -> bool:
    parts = (p for m in call.get("output_messages") or [] for p in m["parts"])
    return any(
        p.get("type") == "tool_call_response"
        and (p.get("provider_details") or {}).get("is_error") is True
        for p in parts
    )


def is_function(call: dict[str, Json], name: str) -> bool:
    """Whether ``call`` offered the model a function tool named ``name`` (``gen_ai.tool.type``
    ``function``): Chat's ``{"type": "function", "function": {"name"}}``, Responses'
    ``{"type": "function", "name"}``, Anthropic's ``{"name", "input_schema"}``, Gemini's
    ``functionDeclarations``, Bedrock's ``toolSpec``. A provider's own tool (web search...)
    says nothing of the kind."""
    for tool in call.get("tool_definitions") or []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function") or tool.get("toolSpec")
        if isinstance(function, dict) and function.get("name") == name:
            return True
        if tool.get("name") == name and (tool.get("type") == "function" or "input_schema" in tool):
            return True
        declared = tool.get("functionDeclarations") or tool.get("function_declarations") or []
        if any(isinstance(d, dict) and d.get("name") == name for d in declared):
            return True
    return False


def a2a_call(call: dict[str, Json]) -> Attributes:
    """The A2A attributes (semantic-conventions-genai a2a.md)."""
    attrs: Attributes = {}
    _put(attrs, n.A2A_METHOD, call.get("operation"))
    ids = call.get("ids") or {}
    _put(attrs, n.A2A_TASK, ids.get("a2a_task_id"))
    _put(attrs, n.A2A_MESSAGE, ids.get("a2a_message_id"))
    _put(attrs, n.CONVERSATION_ID, ids.get("a2a_context_id"))
    _put(attrs, n.JSONRPC_ID, ids.get("jsonrpc_id"))
    version = (call.get("extras") or {}).get("a2a_version")
    if isinstance(version, str):
        attrs[n.A2A_PROTOCOL] = version
    if call.get("input_messages"):  # the message sent to the remote agent
        attrs[n.INPUT_MESSAGES] = dumps(input_messages(call["input_messages"]))
    if call.get("output_messages"):  # its answer: messages, task status, artifacts
        attrs[n.OUTPUT_MESSAGES] = dumps(output_messages(call["output_messages"]))
    return attrs


def answer(call: dict[str, Json]) -> Json:
    """What an executing MCP call answered (its tool result), or None."""
    for m in call.get("output_messages") or []:
        for p in m["parts"]:
            if p.get("type") == "tool_call_response":
                return p.get("response")
    return None


def graphql_call(call: dict[str, Json]) -> Attributes:
    """The GraphQL attributes of a GraphQL call (semconv graphql-spans.md: operation type and
    name, the document), the errors as JSON; a batch gives its first operation's and its
    size."""
    attrs: Attributes = {}
    info = (call.get("extras") or {}).get("graphql")
    ops = info.get("operations") if isinstance(info, dict) else None
    if not isinstance(ops, list) or not ops or not isinstance(ops[0], dict):
        return attrs
    first = ops[0]
    _put(attrs, n.GRAPHQL_OPERATION_TYPE, first.get("type"))
    _put(attrs, n.GRAPHQL_OPERATION_NAME, first.get("name"))
    _put(attrs, n.GRAPHQL_DOCUMENT, first.get("document"))
    if len(ops) > 1:
        attrs[n.GRAPHQL_BATCH] = len(ops)
    errors = [e for op in ops if isinstance(op, dict) for e in op.get("errors") or []]
    if errors:
        attrs[n.GRAPHQL_ERRORS] = dumps(errors)
    attrs[n.GRAPHQL_PARTIAL] = any(isinstance(op, dict) and op.get("partial") for op in ops)
    return attrs


def graphql_values(call: dict[str, Json]) -> tuple[Json, Json]:
    """An unasked GraphQL call's arguments (its variables) and result (data and errors), whole:
    one operation's, or lists for a batch."""
    info = (call.get("extras") or {}).get("graphql") or {}
    ops = [op for op in info.get("operations") or [] if isinstance(op, dict)]
    args = [op.get("variables") for op in ops]
    results = [{k: op[k] for k in ("data", "errors") if k in op} for op in ops]
    if info.get("batch"):
        return args, results
    return (args[0], results[0]) if ops else (None, None)
