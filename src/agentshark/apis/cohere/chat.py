"""Cohere Chat, v2 (``POST /v2/chat``) and v1 (``POST /v1/chat``) -> ``cohere.chat`` calls.

Recognition weighs the body shape most: a v2 response (``message`` next to a top-level
``finish_reason``), a v2 stream (``message-start`` first), a v1 response (``text`` with a
``generation_id``/``response_id``), a v1 stream (``event_type: stream-start``); then the
path; the host (``api.cohere.com``, ``api.cohere.ai``) is a hint. A body with OpenAI's
``choices`` is never Cohere's (Writer also serves ``/v1/chat``). The version is recorded in
``extras["api_version"]``.

Completeness: the HTTP exchange complete and the body parsed (whole) or, for a stream, its
last event seen (v2 ``message-end``, v1 ``stream-end``); see
:mod:`~agentshark.apis.cohere.stream`. ``finish_reason`` is kept as sent (``COMPLETE``,
``MAX_TOKENS``, ``TOOL_CALL``, ``STOP_SEQUENCE``, ``ERROR``, ``TIMEOUT``...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentshark.apis.cohere.endpoints import ENDPOINT_FAMILIES
from agentshark.apis.cohere.messages import (
    attach_citations,
    http_error,
    usage_of,
    v1_message,
    v1_tool_call,
    v1_tool_results,
    v2_message,
)
from agentshark.apis.cohere.stream import parse_v1_stream, parse_v2_stream
from agentshark.apis.model import Call, Json, Message, Part, TextPart
from agentshark.apis.view import ExchangeView, json_failure
from agentshark.errors import Diagnostic

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

# Request fields that are sampling, limit, output or dialect parameters (-> request_params).
_PARAMS = frozenset(
    (
        *("temperature", "max_tokens", "stop_sequences", "k", "p", "seed", "frequency_penalty"),
        *("presence_penalty", "response_format", "safety_mode", "tool_choice", "thinking"),
        *("strict_tools", "logprobs", "citation_options", "priority", "prompt_truncation"),
        *("citation_quality", "force_single_step", "search_queries_only", "max_input_tokens"),
        *("raw_prompting", "return_prompt", "accepts", "stream"),
    )
)
_V2_REQUEST = frozenset(("model", "messages", "tools"))
_V1_REQUEST = frozenset(("model", "message", "chat_history", "preamble", "tools", "tool_results"))
_V2_RESPONSE = frozenset(("id", "message", "finish_reason", "usage"))
_V1_RESPONSE = frozenset(
    ("response_id", "text", "tool_calls", "citations", "finish_reason", "meta")
)
_HEAD = 1024


def _version(view: ExchangeView) -> str | None:
    """``"v2"``/``"v1"`` from the response's shape, None when it has no Cohere shape."""
    body = view.response_json
    if isinstance(body, dict):
        if "choices" in body:
            return None
        if isinstance(body.get("message"), dict) and "finish_reason" in body:
            return "v2"
        if isinstance(body.get("text"), str) and ("generation_id" in body or "response_id" in body):
            return "v1"
        return None
    if body is not None:
        return None
    head = view.response_head(_HEAD)
    if b'"message-start"' in head:
        return "v2"
    if b'"stream-start"' in head and b'"event_type"' in head:
        return "v1"
    return None


def _host_hint(view: ExchangeView) -> bool:
    host = view.host.lower()
    return host.endswith(("cohere.com", "cohere.ai"))


class CohereChat:
    api = "cohere.chat"

    def match(self, view: ExchangeView) -> float:
        if view.method.upper() != "POST":
            return -1.0
        path = view.path.lower().rstrip("/")
        on_path = path.endswith(("/v2/chat", "/v1/chat"))
        body = view.response_json
        if isinstance(body, dict) and "choices" in body:
            return -1.0
        response = _version(view) is not None
        if not (response or on_path):
            return 0.0
        request = view.request_json
        request_ok = isinstance(request, dict) and (
            isinstance(request.get("messages"), list) or isinstance(request.get("message"), str)
        )
        return 0.45 * response + 0.3 * on_path + 0.1 * request_ok + 0.05 * _host_hint(view)

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = "chat"
        call.provider = "cohere"
        request = view.request_json
        version = _version(view)
        if version is None:
            v1_request = isinstance(request, dict) and "message" in request
            v1 = view.path.lower().rstrip("/").endswith("/v1/chat") or v1_request
            version = "v1" if v1 else "v2"
        call.extras["api_version"] = version
        if isinstance(request, dict):
            (_v1_request if version == "v1" else _v2_request)(request, call)
        if view.framing in ("sse", "ndjson"):
            call.stream = True
            parse_stream = parse_v1_stream if version == "v1" else parse_v2_stream
            parse_stream(view, call)
        else:
            _whole(view, call, version)
        call.finish_reasons = [m.finish_reason for m in call.output_messages if m.finish_reason]


def _params(request: dict[str, Json], call: Call, own: frozenset[str]) -> None:
    model = request.get("model")
    call.request_model = model if isinstance(model, str) else None
    call.stream = request.get("stream") is True
    other: dict[str, Json] = {}
    for key, value in request.items():
        if key in _PARAMS:
            call.request_params[key] = value
        elif key not in own:
            other[key] = value  # documents, connectors...
    if other:
        call.extras["request"] = other
    tools = request.get("tools")
    if isinstance(tools, list):
        call.tool_definitions.extend(tools)


def _v2_request(request: dict[str, Json], call: Call) -> None:
    _params(request, call, _V2_REQUEST)
    messages = request.get("messages")
    leading = True
    for raw in messages if isinstance(messages, list) else ():
        if leading and isinstance(raw, dict) and raw.get("role") == "system":
            call.system_instructions.extend(v2_message(raw).parts)
            continue
        leading = False
        call.input_messages.append(v2_message(raw))


def _v1_request(request: dict[str, Json], call: Call) -> None:
    _params(request, call, _V1_REQUEST)
    preamble = request.get("preamble")
    if isinstance(preamble, str) and preamble:
        call.system_instructions.append(TextPart(content=preamble))
    history = request.get("chat_history")
    for raw in history if isinstance(history, list) else ():
        call.input_messages.append(v1_message(raw))
    parts: list[Part] = []
    message = request.get("message")
    if isinstance(message, str) and message:
        parts.append(TextPart(content=message))
    if parts:
        call.input_messages.append(Message(role="USER", parts=parts))
    results = v1_tool_results(request.get("tool_results"))
    if results:
        call.input_messages.append(Message(role="TOOL", parts=results))


def _whole(view: ExchangeView, call: Call, version: str) -> None:
    body = view.response_json
    call.error = http_error(view, body)
    parsed = isinstance(body, dict)
    if isinstance(body, dict) and call.error is None:
        (v1_response if version == "v1" else v2_response)(body, call)
    elif not parsed and view.response_body.strip():
        call.diagnostics.append(
            Diagnostic(
                code="cohere.unexpected_body",
                message=f"the response body is {json_failure(view.response_body)}",
                location=f"{view.exchange.id} response body",
            )
        )
    call.complete = view.exchange.complete and view.exchange.response is not None and parsed


def _finish(value: Json) -> str | None:
    return value if isinstance(value, str) and value else None


def v2_response(body: dict[str, Json], call: Call) -> None:
    """A whole v2 response (also the shape of nothing else: v2 streams fold their own)."""
    response_id = body.get("id")
    call.response_id = response_id if isinstance(response_id, str) and response_id else None
    message = v2_message(body.get("message"))
    message.finish_reason = _finish(body.get("finish_reason"))
    call.output_messages.append(message)
    call.usage = usage_of(body.get("usage"))
    rest = {k: v for k, v in body.items() if k not in _V2_RESPONSE}
    if rest:
        call.extras["response"] = rest


def v1_response(body: dict[str, Json], call: Call) -> None:
    """A whole v1 response, or the ``response`` of a v1 ``stream-end`` event."""
    response_id = body.get("response_id")
    call.response_id = response_id if isinstance(response_id, str) and response_id else None
    parts: list[Part] = []
    text = body.get("text")
    if isinstance(text, str) and text:
        parts.append(TextPart(content=text))
    calls = body.get("tool_calls")
    if isinstance(calls, list):
        parts.extend(v1_tool_call(c) for c in calls)
    citations = body.get("citations")
    if isinstance(citations, list) and citations:
        attach_citations(parts, citations)
    message = Message(role="CHATBOT", parts=parts, finish_reason=_finish(body.get("finish_reason")))
    call.output_messages.append(message)
    call.usage = usage_of(body.get("meta"))
    rest = {k: v for k, v in body.items() if k not in _V1_RESPONSE}
    if rest:
        call.extras["response"] = rest


CHAT = CohereChat()
FAMILIES: tuple[ApiFamily, ...] = (CHAT, *ENDPOINT_FAMILIES)
