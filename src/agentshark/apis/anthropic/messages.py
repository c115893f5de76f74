"""Anthropic Messages, and the endpoints around it, as calls.

Families (one literal list, :data:`FAMILIES`):

- ``anthropic.messages`` (operation ``chat``): ``POST /v1/messages``, whole or streamed, and the
  same wire format elsewhere: Vertex AI ``…/publishers/anthropic/models/<m>:rawPredict`` and
  ``:streamRawPredict`` (provider ``vertex.anthropic``), Bedrock ``/model/<id>/invoke`` and
  ``/invoke-with-response-stream`` with ``anthropic_version`` in the body (provider
  ``bedrock.anthropic``; the stream's AWS event stream chunks carry the same events in base64),
  gateways and Anthropic-compatible vendors (the provider from the host, or ``anthropic`` when a
  path segment names it). The model comes from the URL when the body has none.
- ``anthropic.count_tokens``, ``anthropic.models``, ``anthropic.message_batches``,
  ``anthropic.files`` and the legacy ``anthropic.completions``: in
  :mod:`~agentshark.apis.anthropic.endpoints`, with the routes every family reads.

Request bodies and content blocks are read by :mod:`~agentshark.apis.anthropic.blocks`, stream
events by :mod:`~agentshark.apis.anthropic.stream`; this module recognizes Messages exchanges
and puts the pieces into the call.

Recognition is by shape (https://docs.anthropic.com/en/api/messages): a response ``{"type":
"message", "content": [blocks], "stop_reason"}`` or the stream's ``message_start``; a request
with ``messages`` whose content blocks are Anthropic's (``tool_use``, ``tool_result``, ``image``
with a ``source``...), a top-level ``system``, a required ``max_tokens``. Path and the
``anthropic-version`` header help. OpenAI Chat bodies, which also have ``messages``, are told
apart by what only they carry (``choices``, ``tool_calls``, ``role: "tool"``, ``image_url``
parts, ``function`` tools...) and are never claimed.

Normalization decisions: ``tool_result`` blocks stay in the ``user`` message that carried them
(the role is kept as sent; OpenTelemetry's ``tool`` role is the consumer's view, not the wire);
server-side and MCP tool blocks are tool calls and tool call responses tagged with their
``block_type``; usage ``input_tokens`` includes cache reads and writes (OTel), the vendor's
numbers stay in ``usage.raw``; ``stop_reason`` is the finish reason, raw.
"""

from __future__ import annotations

from agentshark.apis.anthropic.blocks import content_parts, usage_of
from agentshark.apis.anthropic.endpoints import (
    BatchesFamily,
    CompletionsFamily,
    CountTokensFamily,
    FilesFamily,
    ModelsFamily,
    claim,
    identity,
    is_message,
    parse_generation,
    response_evidence,
    route_of,
    version_header,
)
from agentshark.apis.anthropic.stream import MessageStream, stream_events
from agentshark.apis.family import ApiFamily
from agentshark.apis.model import Call, CallError, Json, Message
from agentshark.apis.view import ExchangeView

__all__ = ["FAMILIES", "MessagesFamily"]

# -- recognition ------------------------------------------------------------------------------

_ANTHROPIC_BLOCKS = frozenset(
    "tool_use tool_result thinking redacted_thinking image document server_tool_use "  # noqa: SIM905 - words read better
    "search_result container_upload mcp_tool_use mcp_tool_result".split()
)
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "file", "input_text", "refusal"})
_OPENAI_KEYS = frozenset(
    "max_completion_tokens response_format n stream_options functions function_call "  # noqa: SIM905 - words read better
    "frequency_penalty presence_penalty logit_bias logprobs seed parallel_tool_calls "
    "reasoning_effort modalities audio prediction".split()
)
_OPENAI_MESSAGE_KEYS = frozenset({"tool_calls", "tool_call_id", "function_call", "refusal"})
_OPENAI_ROLES = frozenset({"tool", "developer", "function"})


def _request_evidence(req: dict[str, Json]) -> float:
    """How Anthropic a request body looks: positive for Anthropic-only shapes, negative for
    OpenAI-only ones."""
    messages = req.get("messages")
    if not isinstance(messages, list):
        return 0.0
    score = 0.5 if "max_tokens" in req else 0.0
    score += 0.5 if "system" in req else 0.0
    score += 0.5 if "anthropic_version" in req else 0.0
    openai = not _OPENAI_KEYS.isdisjoint(req)
    anthropic_blocks = False
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")  # any JSON value: only a string can name a role
        openai |= isinstance(role, str) and role in _OPENAI_ROLES
        openai |= not _OPENAI_MESSAGE_KEYS.isdisjoint(msg)
        content = msg.get("content")
        for block in content if isinstance(content, list) else ():
            kind = block.get("type") if isinstance(block, dict) else None
            if not isinstance(kind, str):
                continue
            anthropic_blocks |= kind in _ANTHROPIC_BLOCKS and "image_url" not in block
            openai |= kind in _OPENAI_PARTS
    tools = req.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict):
            openai |= "function" in tool or tool.get("type") == "function"
            anthropic_blocks |= "input_schema" in tool
    return score + (1.0 if anthropic_blocks else 0.0) - (3.0 if openai else 0.0)


class MessagesFamily:
    api: str = "anthropic.messages"

    def match(self, view: ExchangeView) -> float:
        route = route_of(view)
        if route.endpoint not in (None, "messages", "invoke") or route.item:
            return -1.0
        response = response_evidence(view, "message")
        if response is None:
            return -1.0
        req = view.request_json
        if isinstance(req, dict):
            if "messages" not in req and (route.endpoint is None or "prompt" in req):
                return -1.0  # someone else's body (or a legacy completion)
            evidence = _request_evidence(req)
            if evidence < 0 and response < 3.0:
                return -1.0
            response += evidence
        if route.endpoint == "messages":
            response += 2.0 if route.provider == "vertex.anthropic" else 1.0
        elif route.endpoint == "invoke" and isinstance(req, dict) and "anthropic_version" in req:
            response += 2.0
        return claim(response + version_header(view))

    def parse(self, view: ExchangeView, call: Call) -> None:
        parse_generation(view, call, "chat", _parse_stream, _message_body)


# the whole registry of Anthropic families
FAMILIES: tuple[ApiFamily, ...] = (
    MessagesFamily(),
    CountTokensFamily(),
    ModelsFamily(),
    BatchesFamily(),
    FilesFamily(),
    CompletionsFamily(),
)

# -- whole responses --------------------------------------------------------------------------

_MESSAGE_FIELDS = frozenset(
    {"id", "type", "role", "model", "content", "usage", "stop_reason", "stop_sequence"}
)


def _message_body(body: dict[str, Json], call: Call) -> bool:
    if not is_message(body):
        return False
    role = body.get("role")
    stop = body.get("stop_reason")
    stop = stop if isinstance(stop, str) else None
    call.output_messages = [
        Message(
            role=role if isinstance(role, str) else "assistant",
            parts=content_parts(body["content"]),
            finish_reason=stop,
        )
    ]
    call.finish_reasons = [stop] if stop is not None else []
    identity(call, body.get("id"), body.get("model"))
    usage = body.get("usage")
    call.usage = usage_of(usage) if isinstance(usage, dict) else None
    extras = {k: v for k, v in body.items() if k not in _MESSAGE_FIELDS and v is not None}
    if isinstance(body.get("stop_sequence"), str):
        extras["stop_sequence"] = body["stop_sequence"]
    if extras:
        call.extras["response"] = extras
    return True


# -- streams ----------------------------------------------------------------------------------


def _parse_stream(view: ExchangeView, call: Call) -> None:
    location = f"{view.exchange.id} response"
    stream = MessageStream(location=location)
    call.stream = True
    for n, data, ts, whole in stream_events(view, call.diagnostics, location):
        stream.feed(data, name=data["type"], n=n, ts=ts, whole=whole)
    fields = stream.message.fields
    parts = stream.parts()
    if stream.started or parts:
        role = fields.get("role")
        call.output_messages = [
            Message(
                role=role if isinstance(role, str) else "assistant",
                parts=parts,
                finish_reason=stream.stop_reason,
            )
        ]
    call.finish_reasons = [stream.stop_reason] if stream.stop_reason is not None else []
    identity(call, fields.get("id"), stream.fallback_model or fields.get("model"))
    usage = stream.message.usage
    call.usage = usage_of(usage) if usage is not None else None
    call.error = stream.error
    call.timing.first_token = stream.first_token
    extras = stream.message_extras()
    if stream.stop_sequence is not None:
        extras["stop_sequence"] = stream.stop_sequence
    if extras:
        call.extras["response"] = extras
    call.diagnostics.extend(stream.diagnostics)
    if stream.error is None and view.status is not None and view.status >= 400:
        call.error = CallError(
            status=view.status, type=None, code=None, message=None, source="http"
        )
    call.complete = stream.ended and view.exchange.complete
