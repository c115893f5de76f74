"""xAI's chat API over gRPC (``xai.chat``): ``/xai_api.Chat/GetCompletion`` and its streaming
twin ``GetCompletionChunk``, as the ``xai_sdk`` client calls them (``chat.sample()`` and
``chat.stream()``) at ``api.x.ai:443``; from a capture (HTTP/2, TLS with a key log) or a
pydantic-ai xAI cassette (:mod:`agentshark.sources.xai_cassette`), both read the same way.

The messages are read with the bundled ``xai_api`` descriptors (:mod:`agentshark.apis.protos`,
from the ``xai-sdk`` package, Apache-2.0) into proto3 JSON; :mod:`agentshark.apis.xai.messages`
turns them into messages and parts. The provider is ``xai``, the operation ``chat``,
``extras["grpc_method"]`` the method.

- Request (``GetCompletionsRequest``): ``model``; ``messages`` (the leading ``ROLE_SYSTEM``
  ones are the system instructions); ``tools`` as sent (a ``function`` or one of xAI's
  server-side tools: ``xSearch``, ``webSearch``, ``codeExecution``, ``collectionsSearch``,
  ``mcp``...); the sampling fields (``maxTokens``, ``temperature``, ``topP``, ``seed``,
  ``stop``, ``toolChoice``, ``responseFormat``, ``reasoningEffort``, ``parallelToolCalls``,
  ``n``, penalties, ``logprobs``...) are the request parameters; the rest (``include``,
  ``useEncryptedContent``, ``previousResponseId``, ``storeMessages``...) go to
  ``extras["request"]``.
- Response (``GetChatCompletionResponse``): one output message per ``outputs`` item, by its
  ``index`` (proto3 leaves index 0 out), its ``role`` as sent (``ROLE_ASSISTANT``; xAI's
  server-side tools also answer with ``ROLE_TOOL`` outputs), its ``finishReason`` as sent
  (``REASON_STOP``, ``REASON_TOOL_CALLS``, ``REASON_MAX_LEN``...); the call's
  ``finish_reasons`` are those of the outputs that have one; ``id`` is the response id;
  ``model``, ``usage``; ``citations``, ``settings``, ``systemFingerprint``, ``serviceTier``
  and the rest go to ``extras["response"]``.
- Stream (``GetChatCompletionChunk``): each chunk's ``outputs[].delta`` is added to its
  output (by ``index``): ``content`` and ``reasoningContent`` concatenated, ``encryptedContent``
  too, tool calls as they come (xAI sends each whole), the role and finish reason as last
  seen; usage is the last chunk's (xAI sends the running total). The first token is the first
  chunk with content, reasoning or a tool call.
- Completeness: the exchange whole, every message read, and either the output with the
  highest index has a finish reason (the turn ended; the outputs of server-side tool results
  have none) or an error was seen. A ``grpc-status`` other than OK is the error
  (``CallError(type="grpc", code=<status name>)``, the percent-decoded ``grpc-message``); a
  missing status (a cassette does not record it) is no error. A stream that ends without a
  final finish reason or an error is ``xai.stream_unfinished``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentshark.apis.grpc_view import grpc_method, grpc_status, read_side
from agentshark.apis.model import Call, CallError, Json, Message, Part, TextPart
from agentshark.apis.view import ExchangeView
from agentshark.apis.xai.messages import (
    message_parts,
    request_message,
    tool_call_part,
    usage_of,
)
from agentshark.errors import Diagnostic

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

__all__ = ["FAMILIES", "XaiChat"]

API = "xai.chat"
_PATH = re.compile(r"/xai_api\.Chat/(?P<method>GetCompletion|GetCompletionChunk)$")
_PARAMS = frozenset(
    {
        "maxTokens",
        "temperature",
        "topP",
        "seed",
        "stop",
        "n",
        "toolChoice",
        "responseFormat",
        "reasoningEffort",
        "parallelToolCalls",
        "frequencyPenalty",
        "presencePenalty",
        "logprobs",
        "topLogprobs",
        "searchParameters",
        "user",
    }
)
_RESPONSE_OWN = frozenset({"id", "outputs", "model", "usage", "created"})


@dataclass(slots=True)
class _Output:
    """One output under construction from stream deltas."""

    role: str | None = None
    finish_reason: str | None = None
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    encrypted: list[str] = field(default_factory=list)
    tool_calls: list[Part] = field(default_factory=list)
    citations: list[Json] = field(default_factory=list)

    def message(self) -> Message:
        text = "".join(self.text)
        parts = message_parts(
            reasoning="".join(self.reasoning),
            encrypted="".join(self.encrypted),
            text=[TextPart(content=text)] if text else [],
            tool_calls=self.tool_calls,
            citations=self.citations or None,
            role=self.role,
        )
        return Message(role=self.role, parts=parts, finish_reason=self.finish_reason)


def _index(raw: dict[str, Json]) -> int:
    index = raw.get("index", 0)  # proto3 JSON leaves 0 out
    return index if isinstance(index, int) and not isinstance(index, bool) else 0


class XaiChat:
    api = API

    def match(self, view: ExchangeView) -> float:
        if _PATH.search(view.path) is None or grpc_method(view) is None:
            return -1.0
        return 0.95

    def parse(self, view: ExchangeView, call: Call) -> None:
        found = _PATH.search(view.path)
        assert found is not None  # match made sure
        call.provider, call.operation = "xai", "chat"
        call.extras["grpc_method"] = found["method"]
        call.stream = found["method"] == "GetCompletionChunk"
        requests, diags = read_side(view, request=True, family="xai")
        call.diagnostics.extend(diags)
        if requests and requests[0].doc is not None:
            _request(requests[0].doc, call)
        responses, diags = read_side(view, request=False, family="xai")
        call.diagnostics.extend(diags)
        status = grpc_status(view)
        if status.code is not None and status.code != 0:
            call.error = CallError(
                status=view.status,
                type="grpc",
                code=status.name or str(status.code),
                message=status.message,
                source="trailers",
            )
        outputs: dict[int, _Output] = {}
        lost = any(m.doc is None for m in responses)
        for m in responses:
            if m.doc is None:
                continue
            if call.stream:
                _chunk(m.doc, outputs, call, m.ts)
            else:
                _response(m.doc, call)
        if call.stream:
            for n in sorted(outputs):
                call.output_messages.append(outputs[n].message())
            call.finish_reasons = [m.finish_reason for m in call.output_messages if m.finish_reason]
        ended = bool(call.output_messages) and call.output_messages[-1].finish_reason is not None
        settled = ended or call.error is not None
        call.complete = view.exchange.complete and settled and not lost
        if call.stream and not ended and call.error is None:
            call.diagnostics.append(
                Diagnostic(
                    code="xai.stream_unfinished",
                    message="the stream ended before its last output's finish reason",
                    location=f"{view.exchange.id} response",
                )
            )


def _request(doc: dict[str, Json], call: Call) -> None:
    model = doc.get("model")
    call.request_model = model if isinstance(model, str) else None
    messages = doc.get("messages")
    leading = True
    for raw in messages if isinstance(messages, list) else []:
        message = request_message(raw)
        if leading and message.role == "ROLE_SYSTEM":
            call.system_instructions.extend(message.parts)
            continue
        leading = False
        call.input_messages.append(message)
    tools = doc.get("tools")
    if isinstance(tools, list):
        call.tool_definitions.extend(tools)
    for key, value in doc.items():
        if key in _PARAMS:
            call.request_params[key] = value
    rest = {
        k: v for k, v in doc.items() if k not in _PARAMS and k not in ("model", "messages", "tools")
    }
    if rest:
        call.extras["request"] = rest


def _response(doc: dict[str, Json], call: Call) -> None:
    _response_fields(doc, call)
    outputs = doc.get("outputs")
    items = [o for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else []
    for raw in sorted(items, key=_index):
        message = raw.get("message")
        message = message if isinstance(message, dict) else {}
        reason = raw.get("finishReason")
        content = message.get("content")
        calls = message.get("toolCalls")
        role = message.get("role")
        role = role if isinstance(role, str) else None
        parts = message_parts(
            reasoning=_text(message.get("reasoningContent")),
            encrypted=_text(message.get("encryptedContent")),
            text=[TextPart(content=content)] if isinstance(content, str) and content else [],
            tool_calls=[tool_call_part(c) for c in calls] if isinstance(calls, list) else [],
            citations=message.get("citations"),
            role=role,
        )
        call.output_messages.append(
            Message(
                role=role,
                parts=parts,
                finish_reason=reason if isinstance(reason, str) else None,
            )
        )
        if isinstance(reason, str):
            call.finish_reasons.append(reason)


def _chunk(doc: dict[str, Json], outputs: dict[int, _Output], call: Call, ts: float) -> None:
    _response_fields(doc, call)
    items = doc.get("outputs")
    for raw in items if isinstance(items, list) else []:
        if not isinstance(raw, dict):
            continue
        index = _index(raw)
        out = outputs.get(index)
        if out is None:
            out = outputs[index] = _Output()
        delta = raw.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        role, reason = delta.get("role"), raw.get("finishReason")
        if isinstance(role, str):
            out.role = role
        if isinstance(reason, str):
            out.finish_reason = reason
        got = False
        content = delta.get("content")
        if isinstance(content, str) and content:
            out.text.append(content)
            got = True
        if len(delta) > 1 or content is None:  # the rarer fields
            got = _delta_rest(delta, out) or got
        if got and call.timing.first_token is None:
            call.timing.first_token = ts


def _delta_rest(delta: dict[str, Json], out: _Output) -> bool:
    """A delta's reasoning, encrypted content, tool calls and citations into ``out``; whether
    it brought a token (reasoning or a tool call)."""
    got = False
    reasoning, encrypted = delta.get("reasoningContent"), delta.get("encryptedContent")
    if isinstance(reasoning, str) and reasoning:
        out.reasoning.append(reasoning)
        got = True
    if isinstance(encrypted, str) and encrypted:
        out.encrypted.append(encrypted)
    calls = delta.get("toolCalls")
    if isinstance(calls, list) and calls:
        out.tool_calls.extend(tool_call_part(c) for c in calls)
        got = True
    citations = delta.get("citations")
    if isinstance(citations, list):
        out.citations.extend(citations)
    return got


def _response_fields(doc: dict[str, Json], call: Call) -> None:
    """Id, model, usage and the rest of a response or chunk (the last chunk's win)."""
    rid, model = doc.get("id"), doc.get("model")
    if isinstance(rid, str) and rid:
        call.response_id = rid
    if isinstance(model, str) and model:
        call.response_model = model
    if "usage" in doc:
        usage = usage_of(doc["usage"])
        if usage is not None:
            call.usage = usage
    extras: Json | None = None
    for key, value in doc.items():
        if key not in _RESPONSE_OWN:
            if extras is None:
                extras = call.extras.setdefault("response", {})
            if isinstance(extras, dict):
                extras[key] = value
    if "created" in doc:
        call.extras["created"] = doc["created"]


def _text(value: Json) -> str:
    return value if isinstance(value, str) else ""


XAI_CHAT = XaiChat()
FAMILIES: tuple[ApiFamily, ...] = (XAI_CHAT,)
