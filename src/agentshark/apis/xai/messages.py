"""xAI chat messages (``xai_api`` protos, as proto3 JSON) -> normalized messages and parts.

Field names are the proto3 JSON names of ``xai/api/v1/chat.proto`` (``reasoningContent``,
``toolCalls``, ``encryptedContent``...), enums by name as sent (``ROLE_USER``,
``REASON_STOP``, ``TOOL_CALL_TYPE_X_SEARCH_TOOL``).

- A request ``Message``: ``content`` is a list of ``Content`` (``text``, ``imageUrl``,
  ``file``) -> TextPart, UriPart (an image URL; a ``data:`` URL is a BlobPart), FilePart (a
  ``fileId``) or UriPart (a file ``url``), else a GenericPart named by its key. A
  ``ROLE_TOOL`` message with a ``toolCallId`` is a ToolCallResponsePart (its text the
  response). The leading ``ROLE_SYSTEM`` messages are the system instructions.
- Every message (request or output) puts its parts in one order: visible reasoning
  (``reasoningContent``), encrypted reasoning (``encryptedContent``, a ReasoningPart with empty
  content and the ciphertext in ``provider_details``), the text, then the tool calls.
- A ``ToolCall`` is a ToolCallPart (``function.name``, ``function.arguments`` parsed as JSON,
  the string kept); its ``type`` (client-side or one of xAI's server-side tools), ``status``
  and ``errorMessage`` go to ``provider_details``. xAI runs its server-side tools itself and
  reports each run as a ``ROLE_TOOL`` output carrying the same tool call (``status``
  ``TOOL_CALL_STATUS_COMPLETED``): there the call is a ToolCallResponsePart of that id, whose
  response is the output's text when the output answers that one call (else None: not
  sent, or encrypted in ``encryptedContent``).
- Usage (``SamplingUsage``): ``promptTokens`` in, ``completionTokens`` out (xAI counts
  reasoning apart: ``totalTokens`` = prompt + completion + reasoning), ``reasoningTokens``,
  ``cachedPromptTextTokens`` as cached input, ``totalTokens``; all of it raw.
"""

from __future__ import annotations

from agentshark.apis.model import (
    BlobPart,
    FilePart,
    GenericPart,
    Json,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
    Usage,
    parse_arguments,
)

__all__ = [
    "content_parts",
    "message_parts",
    "request_message",
    "tool_call_part",
    "tool_results",
    "usage_of",
]


def _str(value: Json) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Json) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)  # int64 fields are strings in proto3 JSON
    return None


def tool_call_part(raw: Json) -> Part:
    if not isinstance(raw, dict):
        return GenericPart(type="tool_call", fields={"value": raw})
    function = raw.get("function")
    function = function if isinstance(function, dict) else {}
    part = ToolCallPart(id=_str(raw.get("id")), name=_str(function.get("name")))
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        part.arguments_raw = arguments
        part.arguments, part.arguments_error = parse_arguments(arguments)
    details = {k: v for k, v in raw.items() if k not in ("id", "function")}
    details.update((k, v) for k, v in function.items() if k not in ("name", "arguments"))
    part.provider_details = details
    return part


def _content_part(item: Json) -> Part:
    if not isinstance(item, dict):
        return GenericPart(type="content", fields={"value": item})
    if isinstance(item.get("text"), str):
        return TextPart(content=item["text"])
    image = item.get("imageUrl")
    if isinstance(image, dict) and isinstance(image.get("imageUrl"), str):
        url = image["imageUrl"]
        details = {k: v for k, v in image.items() if k != "imageUrl"}
        if url.startswith("data:") and ";base64," in url:
            mime, _, data = url[5:].partition(";base64,")
            return BlobPart(
                mime_type=mime or None, modality="image", content=data, provider_details=details
            )
        return UriPart(uri=url, mime_type=None, modality="image", provider_details=details)
    file = item.get("file")
    if isinstance(file, dict):
        mime = _str(file.get("mimeType"))
        details = {k: v for k, v in file.items() if k not in ("fileId", "url", "mimeType")}
        if isinstance(file.get("fileId"), str):
            return FilePart(
                file_id=file["fileId"], mime_type=mime, modality=None, provider_details=details
            )
        if isinstance(file.get("url"), str):
            return UriPart(uri=file["url"], mime_type=mime, modality=None, provider_details=details)
    key = next(iter(item), "content")
    return GenericPart(type=key, fields=item)


def content_parts(content: Json) -> list[Part]:
    """A request message's ``content`` list (an output message's is a plain string)."""
    if isinstance(content, str):
        return [TextPart(content=content)] if content else []
    if isinstance(content, list):
        return [_content_part(c) for c in content]
    return [] if content is None else [GenericPart(type="content", fields={"value": content})]


def tool_results(text: list[Part], tool_calls: list[Part]) -> tuple[list[Part], list[Part]]:
    """A ``ROLE_TOOL`` output's (text, tool calls) as tool results: each call a
    ToolCallResponsePart of its id (name, type, status and arguments in
    ``provider_details``), the output's text its response when it answers one call alone."""
    answer: Json = None
    if len(tool_calls) == 1 and text and all(isinstance(p, TextPart) for p in text):
        answer = "".join(p.content for p in text if isinstance(p, TextPart))
        text = []
    results: list[Part] = []
    for call in tool_calls:
        if not isinstance(call, ToolCallPart):
            results.append(call)
            continue
        details = dict(call.provider_details)
        details["name"] = call.name
        if call.arguments_raw is not None:
            details["arguments"] = call.arguments_raw
        results.append(ToolCallResponsePart(id=call.id, response=answer, provider_details=details))
    return text, results


def message_parts(
    *,
    reasoning: str,
    encrypted: str,
    text: list[Part],
    tool_calls: list[Part],
    citations: Json = None,
    role: str | None = None,
) -> list[Part]:
    """The parts of one message in the order the module docstring gives; a ``ROLE_TOOL``
    output's tool calls are results (:func:`tool_results`)."""
    if role == "ROLE_TOOL" and tool_calls:
        text, tool_calls = tool_results(text, tool_calls)
    parts: list[Part] = []
    if reasoning:
        parts.append(ReasoningPart(content=reasoning))
    if encrypted:
        parts.append(ReasoningPart(content="", provider_details={"encrypted_content": encrypted}))
    if citations:
        first = next((p for p in text if isinstance(p, TextPart)), None)
        if first is not None:
            first.provider_details["citations"] = citations
        else:
            parts.append(GenericPart(type="citations", fields={"citations": citations}))
    parts.extend(text)
    parts.extend(tool_calls)
    return parts


_MESSAGE_FIELDS = frozenset(
    ("content", "reasoningContent", "role", "toolCalls", "encryptedContent", "toolCallId", "name")
)


def request_message(raw: Json) -> Message:
    """One request ``Message``; unknown fields in a last ``message_fields`` GenericPart."""
    if not isinstance(raw, dict):
        return Message(role=None, parts=[GenericPart(type="message", fields={"value": raw})])
    role = _str(raw.get("role"))
    text = content_parts(raw.get("content"))
    if role == "ROLE_TOOL" and isinstance(raw.get("toolCallId"), str):
        response = "".join(p.content for p in text if isinstance(p, TextPart))
        text = [ToolCallResponsePart(id=raw["toolCallId"], response=response)]
    calls = raw.get("toolCalls")
    parts = message_parts(
        reasoning=_str(raw.get("reasoningContent")) or "",
        encrypted=_str(raw.get("encryptedContent")) or "",
        text=text,
        tool_calls=[tool_call_part(c) for c in calls] if isinstance(calls, list) else [],
    )
    rest = {k: v for k, v in raw.items() if k not in _MESSAGE_FIELDS}
    if rest:
        parts.append(GenericPart(type="message_fields", fields=rest))
    return Message(role=role, parts=parts, name=_str(raw.get("name")))


def usage_of(raw: Json) -> Usage | None:
    if not isinstance(raw, dict) or not raw:
        return None
    return Usage(
        input_tokens=_int(raw.get("promptTokens")),
        output_tokens=_int(raw.get("completionTokens")),
        cached_input_tokens=_int(raw.get("cachedPromptTextTokens")),
        reasoning_tokens=_int(raw.get("reasoningTokens")),
        total_tokens=_int(raw.get("totalTokens")),
        raw=raw,
    )
