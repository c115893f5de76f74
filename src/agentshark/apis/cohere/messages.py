"""Cohere's message objects (Chat v2 and v1) -> parts; usage and errors of its bodies.

Chat v2 (https://docs.cohere.com/reference/chat):

- a message is ``{role, content, tool_calls?, tool_plan?, tool_call_id?, citations?}``,
  ``role`` one of ``system``/``user``/``assistant``/``tool``; ``content`` a string or a list
  of ``text``, ``image_url``, ``document`` and ``thinking`` items (-> text, uri or blob
  (a ``data:`` URL), generic and reasoning parts).
- ``tool_calls[]`` is ``{id, type, function: {name, arguments}}`` with ``arguments`` a JSON
  string: parsed, the raw string and any parse error kept. ``tool_plan`` (the plan the
  model writes before calling tools) is a reasoning part with ``provider_details.field =
  "tool_plan"``; ``citations`` go on the message's first text part
  (``provider_details.citations``).
- a ``tool`` message answers ``tool_call_id``: a tool call response part whose
  ``response`` is ``content`` as sent.

Chat v1 (https://docs.cohere.com/v1/reference/chat): ``chat_history[]`` of ``{role:
USER|CHATBOT|SYSTEM|TOOL, message, tool_calls?, tool_results?}``, the new ``message``, the
``preamble`` (system instructions) and ``tool_results[]`` (``{call: {name, parameters},
outputs}``). v1 tool calls are ``{name, parameters}`` with no id: the id is None, never
invented. Roles are kept as sent (``USER``, ``CHATBOT``).

Usage (both versions: v2 ``usage``, v1 ``meta``): ``tokens.input_tokens`` /
``output_tokens`` (what the model read and wrote), else ``billed_units``; ``cached_tokens``;
the raw object kept. Errors: ``{"message": ...}`` (an ``id`` next to it is a request id,
kept in the body, not a code) and the HTTP status.
"""

from __future__ import annotations

from agentshark.apis.model import (
    BlobPart,
    CallError,
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
    tool_name,
)
from agentshark.apis.view import ExchangeView

_TEXT_LIMIT = 2000
_V2_FIELDS = frozenset(("role", "content", "tool_calls", "tool_plan", "tool_call_id", "citations"))


def _str(value: Json) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Json) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        # Cohere's types say float; the counts are whole (and fit a JSON integer)
        return int(value) if value.is_integer() and abs(value) < 2**63 else None
    return value if isinstance(value, int) else None


# -- v2 ---------------------------------------------------------------------------------------


def content_part(item: Json) -> Part:
    """One item of a v2 ``content`` list."""
    if not isinstance(item, dict):
        return GenericPart(type="content", fields={"value": item})
    kind = item.get("type")
    if kind == "text" and isinstance(item.get("text"), str):
        return TextPart(content=item["text"])
    if kind == "thinking" and isinstance(item.get("thinking"), str):
        return ReasoningPart(content=item["thinking"])
    if kind == "image_url":
        image = item.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if isinstance(url, str):
            details = (
                {k: v for k, v in image.items() if k != "url"} if isinstance(image, dict) else {}
            )
            if url.startswith("data:") and ";base64," in url:
                head, _, data = url.partition(";base64,")
                return BlobPart(
                    mime_type=head[5:] or None,
                    modality="image",
                    content=data,
                    provider_details=details,
                )
            return UriPart(uri=url, mime_type=None, modality="image", provider_details=details)
    return GenericPart(
        type=kind if isinstance(kind, str) else "content",
        fields={k: v for k, v in item.items() if k != "type" or not isinstance(kind, str)},
    )


def content_parts(content: Json) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content=content)] if content else []
    if isinstance(content, list):
        return [content_part(item) for item in content]
    if content is None:
        return []
    return [GenericPart(type="content", fields={"value": content})]


def tool_call_part(raw: Json) -> Part:
    """A v2 ``tool_calls`` entry: ``{id, type, function: {name, arguments}}``."""
    if not isinstance(raw, dict):
        return GenericPart(type="tool_call", fields={"value": raw})
    function = raw.get("function")
    function = function if isinstance(function, dict) else {}
    details: dict[str, Json] = {k: v for k, v in raw.items() if k not in ("id", "function")}
    part = ToolCallPart(id=_str(raw.get("id")), name=tool_name(function.get("name"), details))
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        part.arguments_raw = arguments
        part.arguments, part.arguments_error = parse_arguments(arguments)
    else:
        part.arguments = arguments
    part.provider_details = details
    return part


def v2_message(raw: Json) -> Message:
    """A v2 message (request or response)."""
    if not isinstance(raw, dict):
        return Message(role=None, parts=[GenericPart(type="message", fields={"value": raw})])
    role = _str(raw.get("role"))
    parts: list[Part] = []
    plan = raw.get("tool_plan")
    if isinstance(plan, str) and plan:
        parts.append(ReasoningPart(content=plan, provider_details={"field": "tool_plan"}))
    if role == "tool":
        parts.append(
            ToolCallResponsePart(id=_str(raw.get("tool_call_id")), response=raw.get("content"))
        )
    else:
        parts.extend(content_parts(raw.get("content")))
    tool_calls = raw.get("tool_calls")
    if isinstance(tool_calls, list):
        parts.extend(tool_call_part(tc) for tc in tool_calls)
    citations = raw.get("citations")
    if isinstance(citations, list) and citations:
        attach_citations(parts, citations)
    rest = {k: v for k, v in raw.items() if k not in _V2_FIELDS}
    if rest:
        parts.append(GenericPart(type="message_fields", fields=rest))
    return Message(role=role, parts=parts)


def attach_citations(parts: list[Part], citations: list[Json]) -> None:
    """Citations on the first text part, or a ``citations`` part when there is none."""
    text = next((p for p in parts if isinstance(p, TextPart)), None)
    if text is not None:
        text.provider_details["citations"] = citations
    else:
        parts.append(GenericPart(type="citations", fields={"citations": citations}))


# -- v1 ---------------------------------------------------------------------------------------


def v1_tool_call(raw: Json) -> Part:
    """A v1 tool call ``{name, parameters}``: no id."""
    if not isinstance(raw, dict):
        return GenericPart(type="tool_call", fields={"value": raw})
    details: dict[str, Json] = {k: v for k, v in raw.items() if k not in ("name", "parameters")}
    return ToolCallPart(
        id=None,
        name=tool_name(raw.get("name"), details),
        arguments=raw.get("parameters"),
        provider_details=details,
    )


def v1_tool_results(results: Json) -> list[Part]:
    out: list[Part] = []
    for result in results if isinstance(results, list) else ():
        if isinstance(result, dict):
            call = result.get("call")
            details: dict[str, Json] = {"call": call} if call is not None else {}
            if isinstance(call, dict) and "name" in call:
                details["name"] = call["name"]
            out.append(
                ToolCallResponsePart(
                    id=None, response=result.get("outputs"), provider_details=details
                )
            )
        else:
            out.append(GenericPart(type="tool_result", fields={"value": result}))
    return out


def v1_message(raw: Json) -> Message:
    """A v1 ``chat_history`` entry."""
    if not isinstance(raw, dict):
        return Message(role=None, parts=[GenericPart(type="message", fields={"value": raw})])
    parts: list[Part] = []
    text = raw.get("message")
    if isinstance(text, str) and text:
        parts.append(TextPart(content=text))
    calls = raw.get("tool_calls")
    if isinstance(calls, list):
        parts.extend(v1_tool_call(c) for c in calls)
    parts.extend(v1_tool_results(raw.get("tool_results")))
    rest = {
        k: v for k, v in raw.items() if k not in ("role", "message", "tool_calls", "tool_results")
    }
    if rest:
        parts.append(GenericPart(type="message_fields", fields=rest))
    return Message(role=_str(raw.get("role")), parts=parts)


# -- usage and errors -------------------------------------------------------------------------


def usage_of(raw: Json) -> Usage | None:
    """v2 ``usage`` or v1 ``meta``: the model's token counts, else the billed ones."""
    if not isinstance(raw, dict):
        return None
    tokens, billed = raw.get("tokens"), raw.get("billed_units")
    if not isinstance(tokens, dict) and not isinstance(billed, dict):
        return None
    counts = tokens if isinstance(tokens, dict) else {}
    bills = billed if isinstance(billed, dict) else {}
    inputs = _int(counts.get("input_tokens"))
    outputs = _int(counts.get("output_tokens"))
    return Usage(
        input_tokens=inputs if inputs is not None else _int(bills.get("input_tokens")),
        output_tokens=outputs if outputs is not None else _int(bills.get("output_tokens")),
        cached_input_tokens=_int(raw.get("cached_tokens")),
        raw=raw,
    )


def error_of(body: Json, status: int | None, source: str) -> CallError | None:
    """``{"message": ...}`` (v1, v2) as the call's error; None when the body is not one."""
    if not isinstance(body, dict):
        return None
    message = body.get("message")
    if not isinstance(message, str) or "role" in body or "text" in body:
        return None
    return CallError(status=status, type=None, code=None, message=message, source=source)


def http_error(view: ExchangeView, body: Json) -> CallError | None:
    """The error of a response with status >= 400: its ``message``, else the status with the
    body's first 2000 characters."""
    status = view.status
    if status is None or status < 400:
        return None
    found = error_of(body, status, "body")
    if found is not None:
        return found
    text = view.response_body[:_TEXT_LIMIT].decode("utf-8", "replace").strip()
    return CallError(status=status, type=None, code=None, message=text or None, source="http")
