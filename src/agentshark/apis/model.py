"""Normalized model calls: messages made of parts, shaped like OpenTelemetry GenAI content.

A part is one of the dataclasses below, each with a ``type`` matching the OTel GenAI
message-part schema (``text``, ``reasoning``, ``tool_call``, ``tool_call_response``,
``blob``, ``uri``, ``file``) or :class:`GenericPart` for anything else, kept whole. Vendor
extras go in ``provider_details``, never into ``content``, ``id`` or ``arguments``.

Completeness is data: a missing finish reason is None, never "stop"; tool arguments that do
not parse keep the raw string and the parse error with its position, never ``{}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from agentshark.errors import Diagnostic

Json = Any  # a value decoded from JSON


@dataclass(slots=True, kw_only=True)
class TextPart:
    content: str
    provider_details: dict[str, Json] = field(default_factory=dict)  # annotations, citations...
    type: Literal["text"] = "text"


@dataclass(slots=True, kw_only=True)
class ReasoningPart:
    content: str  # visible reasoning or summary text ("" when only encrypted/redacted)
    provider_details: dict[str, Json] = field(default_factory=dict)  # signature, encrypted...
    type: Literal["reasoning"] = "reasoning"


@dataclass(slots=True, kw_only=True)
class ToolCallPart:
    """A tool call the model asked for (or, in a request, one it asked for earlier).

    ``arguments`` is the parsed value; ``arguments_raw`` the string as sent (None when the
    vendor sends an object, as Anthropic does); ``arguments_error`` says why the string did
    not parse, with its position, in which case ``arguments`` is None.
    """

    id: str | None
    name: str | None  # None: none sent, or not a string (see :func:`tool_name`)
    arguments: Json | None = None
    arguments_raw: str | None = None
    arguments_error: str | None = None
    provider_details: dict[str, Json] = field(default_factory=dict)  # call kind, server...
    type: Literal["tool_call"] = "tool_call"


@dataclass(slots=True, kw_only=True)
class ToolCallResponsePart:
    id: str | None
    response: Json
    provider_details: dict[str, Json] = field(default_factory=dict)  # is_error...
    type: Literal["tool_call_response"] = "tool_call_response"


@dataclass(slots=True, kw_only=True)
class BlobPart:
    """Inline binary content (base64 as sent)."""

    mime_type: str | None
    modality: str | None  # "image", "audio", "video", or None
    content: str
    provider_details: dict[str, Json] = field(default_factory=dict)
    type: Literal["blob"] = "blob"


@dataclass(slots=True, kw_only=True)
class UriPart:
    uri: str
    mime_type: str | None
    modality: str | None
    provider_details: dict[str, Json] = field(default_factory=dict)
    type: Literal["uri"] = "uri"


@dataclass(slots=True, kw_only=True)
class FilePart:
    file_id: str
    mime_type: str | None
    modality: str | None
    provider_details: dict[str, Json] = field(default_factory=dict)
    type: Literal["file"] = "file"


@dataclass(slots=True, kw_only=True)
class GenericPart:
    """Anything else (refusal, hosted tool calls and results, server tool use...), kept
    whole: ``type`` is the vendor's own name, ``fields`` every other field as sent."""

    type: str
    fields: dict[str, Json] = field(default_factory=dict)


Part = (
    TextPart
    | ReasoningPart
    | ToolCallPart
    | ToolCallResponsePart
    | BlobPart
    | UriPart
    | FilePart
    | GenericPart
)


def part_json(part: Part) -> dict[str, Json]:
    """The report form of a part: OTel field names, extras under provider_details."""
    if isinstance(part, GenericPart):
        return {"type": part.type, **part.fields}
    out: dict[str, Json] = {}
    for name in _report_fields(type(part)):
        value = getattr(part, name)
        if name == "provider_details" and not value:
            continue
        out[name] = value
    return out


# every part of every call is reported: the field order is worked out once per class
_REPORT_FIELDS: dict[type, tuple[str, ...]] = {}


def _report_fields(cls: type) -> tuple[str, ...]:
    """A part class's fields in report order: ``type`` first, then as declared."""
    names = _REPORT_FIELDS.get(cls)
    if names is None:
        slots: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
        names = _REPORT_FIELDS[cls] = ("type", *(name for name in slots if name != "type"))
    return names


def tool_name(raw: Json, details: dict[str, Json]) -> str | None:
    """A tool call's name as sent: the string; None when none was sent, never an invented
    ``""``. A name that is not a string is None here and kept whole in ``details`` (the
    part's ``provider_details``) as ``raw_name``."""
    if isinstance(raw, str):
        return raw
    if raw is not None:
        details["raw_name"] = raw
    return None


def parse_arguments(raw: str) -> tuple[Json | None, str | None]:
    """Tool call arguments: (value, None) when ``raw`` is JSON, else (None, the error with
    its position). An empty string is an error too: it is not JSON."""
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError as exc:
        return None, f"{exc.msg} at line {exc.lineno} column {exc.colno} (char {exc.pos})"


@dataclass(slots=True, kw_only=True)
class Message:
    role: str | None  # None when missing or not a string (a diagnostic keeps the value)
    parts: list[Part] = field(default_factory=list)
    name: str | None = None
    finish_reason: str | None = None  # output messages only

    def to_json(self, *, output: bool) -> dict[str, Json]:
        out: dict[str, Json] = {"role": self.role, "parts": [part_json(p) for p in self.parts]}
        if output:
            out["finish_reason"] = self.finish_reason
        else:
            out["name"] = self.name
        return out


def role_messages(
    items: list[Json], extras: dict[str, Json], parts_of: Callable[[Json], list[Part]]
) -> list[Message]:
    """``[{role, content, …}]`` (Anthropic Messages, Bedrock Converse) as messages, the content
    read by ``parts_of``; an item without a string role, and an item's other keys, go to
    ``extras`` under their place (``messages[2]``, ``messages[2].cache_control``)."""
    out: list[Message] = []
    for i, item in enumerate(items):
        role = item.get("role") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(role, str):
            extras[f"messages[{i}]"] = item
            continue
        out.append(Message(role=role, parts=parts_of(item.get("content"))))
        for key, value in item.items():
            if key not in ("role", "content"):
                extras[f"messages[{i}].{key}"] = value
    return out


@dataclass(slots=True, kw_only=True)
class CallError:
    status: int | None
    type: str | None
    code: str | None
    message: str | None
    source: str  # "http", "body", "stream event N"...

    def to_json(self) -> dict[str, Json]:
        return {
            "status": self.status,
            "type": self.type,
            "code": self.code,
            "message": self.message,
            "source": self.source,
        }


@dataclass(slots=True, kw_only=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None  # read from cache
    cache_creation_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    total_tokens: int | None = None
    raw: dict[str, Json] | None = None  # as the vendor sent it

    def to_json(self) -> dict[str, Json]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "total_tokens": self.total_tokens,
            "raw": self.raw,
        }


@dataclass(slots=True, kw_only=True)
class Timing:
    started: float | None = None  # request's first byte
    first_byte: float | None = None  # response's first byte
    first_token: float | None = None  # first content or tool-call delta of a stream
    ended: float | None = None
    chunks: int | None = None  # stream events with an arrival time
    inter_chunk: dict[str, float] | None = None  # gaps between them: median, p95, max (s)

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            "started": self.started,
            "first_byte": self.first_byte,
            "first_token": self.first_token,
            "ended": self.ended,
        }
        if self.chunks is not None:
            out["chunks"] = self.chunks
            out["inter_chunk"] = self.inter_chunk
        return out


@dataclass(slots=True, kw_only=True)
class Call:
    """One API call recognized in one exchange (the ``calls`` entry of the report)."""

    id: str
    exchange_id: str
    api: str  # "openai.chat", "openai.responses", "anthropic.messages", "openai.embeddings"...
    provider: str | None = None  # "openai", "azure.openai", "groq", "anthropic", ...
    operation: str | None = None  # "chat", "embeddings", "count_tokens", "models.list"...
    request_model: str | None = None
    response_model: str | None = None
    response_id: str | None = None
    stream: bool = False
    complete: bool = False
    finish_reasons: list[str] = field(default_factory=list)
    system_instructions: list[Part] = field(default_factory=list)
    input_messages: list[Message] = field(default_factory=list)
    output_messages: list[Message] = field(default_factory=list)
    tool_definitions: list[Json] = field(default_factory=list)
    request_params: dict[str, Json] = field(default_factory=dict)  # temperature, max_tokens...
    usage: Usage | None = None
    error: CallError | None = None
    ids: dict[str, str] = field(default_factory=dict)
    id_sources: dict[str, str] = field(default_factory=dict)
    timing: Timing = field(default_factory=Timing)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    extras: dict[str, Json] = field(default_factory=dict)  # unknown request/response fields
    # why the exchange's evidence is not whole (set by ``registry.recognize``; empty when it
    # is): a call with any is never complete; not reported, its diagnostic says it
    cut: tuple[str, ...] = ()
    # set by a family that found all the call needs before the response's end: an answer in
    # one whole message inside a longer response (MCP's SSE event with the JSON-RPC
    # response), or no answer due (a notification). ``settled_at``: when that answer
    # arrived, the call's end. Neither is reported.
    settled: bool = False
    settled_at: float | None = None

    def to_json(self) -> dict[str, Json]:
        return {
            "id": self.id,
            "exchange_id": self.exchange_id,
            "api": self.api,
            "provider": self.provider,
            "operation": self.operation,
            "request_model": self.request_model,
            "response_model": self.response_model,
            "response_id": self.response_id,
            "stream": self.stream,
            "complete": self.complete,
            "finish_reasons": self.finish_reasons,
            "system_instructions": [part_json(p) for p in self.system_instructions],
            "input_messages": [m.to_json(output=False) for m in self.input_messages],
            "output_messages": [m.to_json(output=True) for m in self.output_messages],
            "tool_definitions": self.tool_definitions,
            "request_params": self.request_params,
            "usage": self.usage.to_json() if self.usage is not None else None,
            "error": self.error.to_json() if self.error is not None else None,
            "ids": self.ids,
            "id_sources": self.id_sources,
            "timing": self.timing.to_json(),
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "extras": self.extras,
        }
