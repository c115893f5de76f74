"""Chat Completions message objects -> messages made of parts, both ways across the wire.

The request's history (``messages[]``: every role, content as a string or a parts array,
assistant ``tool_calls`` and legacy ``function_call``, ``tool``/``function`` results) and a
response's ``choices[].message`` share one vocabulary, translated here:

=================================== ==========================================================
Chat                                part
=================================== ==========================================================
``content`` string, ``text`` part   :class:`TextPart` (``""`` is no part)
``image_url``/``video_url``/...     :class:`BlobPart` for a ``data:`` URL (base64 as sent,
                                    mime type from the URL), else :class:`UriPart`
``input_audio``                     :class:`BlobPart` ``audio/<format>``
``file``                            :class:`FilePart` (``file_id``) or :class:`BlobPart`
``reasoning_content``/``reasoning`` :class:`ReasoningPart`, ``provider_details.field`` names
                                    which (DeepSeek, vLLM, Groq, OpenRouter...)
Mistral ``thinking`` chunks         :class:`ReasoningPart`
``refusal``                         ``GenericPart("refusal", {"refusal": text})``
``tool_calls[]``                    :class:`ToolCallPart`, arguments parsed from the string
                                    (the raw string and the parse error kept)
legacy ``function_call``            :class:`ToolCallPart`, ``provider_details.legacy``
``tool``/``function`` message       :class:`ToolCallResponsePart`: ``response`` is ``content``
                                    as sent (a string is not JSON-parsed)
anything else                       :class:`GenericPart`, every field kept
=================================== ==========================================================
"""

from __future__ import annotations

from agentshark.apis.model import (
    BlobPart,
    Call,
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
    parse_arguments,
    tool_name,
)

REASONING_FIELDS = ("reasoning_content", "reasoning")
_MESSAGE_FIELDS = frozenset(
    (
        "role",
        "content",
        "name",
        "tool_calls",
        "tool_call_id",
        "function_call",
        "refusal",
        *REASONING_FIELDS,
    )
)
_OUT_MESSAGE_FIELDS = _MESSAGE_FIELDS | {"annotations", "audio", "reasoning_details"}
CHOICE_FIELDS = frozenset(("index", "message", "delta", "finish_reason"))
_SYSTEM_ROLES = ("system", "developer")
_MEDIA = {"image_url": "image", "video_url": "video", "audio_url": "audio", "document_url": None}


def input_messages(messages: list[Json], call: Call) -> None:
    """The request's ``messages`` into ``call``: the leading system/developer messages into
    ``system_instructions`` (a developer's parts say so in ``provider_details.role``), the
    rest, in order, into ``input_messages``; fields the table above does not read into
    ``extras["message_fields"]`` under the message's JSON path."""
    leading = True  # still in the instructions that open the conversation
    odd: dict[str, Json] = {}
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            leading = False
            call.input_messages.append(Message(role=None, parts=[generic_part("message", m)]))
            continue
        raw_role = m.get("role")
        role = raw_role if isinstance(raw_role, str) else None  # never an invented ""
        name = m.get("name")
        name = name if isinstance(name, str) else None
        parts = _message_parts(m, role)
        if leading and role in _SYSTEM_ROLES:
            details: dict[str, Json] = {}
            if role != "system":
                details["role"] = role
            if name is not None:
                details["name"] = name
            for part in parts:
                if details and not isinstance(part, GenericPart):
                    part.provider_details.update(details)
            call.system_instructions.extend(parts)
        else:
            leading = False
            call.input_messages.append(Message(role=role, parts=parts, name=name))
        rest = {k: v for k, v in m.items() if k not in _MESSAGE_FIELDS}
        if role is None and raw_role is not None:
            rest["role"] = raw_role  # not a string: kept as sent
        if rest:
            odd[f"$.messages[{i}]"] = rest
    if odd:
        call.extras["message_fields"] = odd


def _message_parts(m: dict[str, Json], role: str | None) -> list[Part]:
    parts: list[Part] = [
        ReasoningPart(content=m[k], provider_details={"field": k})
        for k in REASONING_FIELDS
        if isinstance(m.get(k), str) and m[k]
    ]
    content = m.get("content")
    if role in ("tool", "function"):
        tool_call_id = m.get("tool_call_id")
        parts.append(
            ToolCallResponsePart(
                id=tool_call_id if isinstance(tool_call_id, str) else None, response=content
            )
        )
    else:
        parts.extend(content_parts(content))
    refusal = m.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append(GenericPart(type="refusal", fields={"refusal": refusal}))
    tool_calls = m.get("tool_calls")
    if isinstance(tool_calls, list):
        parts.extend(tool_call_part(tc) for tc in tool_calls)
    function_call = m.get("function_call")
    if isinstance(function_call, dict):
        parts.append(function_call_part(function_call))
    return parts


def content_parts(content: Json) -> list[Part]:
    """A message's ``content``: a string, a parts array, or anything else kept whole."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [TextPart(content=content)]
    if isinstance(content, list):
        return [_content_part(p) for p in content]
    return [generic_part("content", content)]


def _content_part(p: Json) -> Part:
    if isinstance(p, str):
        return TextPart(content=p)
    kind = p.get("type") if isinstance(p, dict) else None
    if not isinstance(p, dict) or not isinstance(kind, str):
        return generic_part("content", p)
    rest = {k: v for k, v in p.items() if k != "type" and k != kind}
    if kind == "text" and isinstance(p.get("text"), str):
        rest.pop("text", None)
        return TextPart(content=p["text"], provider_details=rest)
    if kind in _MEDIA:
        value = p.get(kind)
        url = value.get("url") if isinstance(value, dict) else value
        if isinstance(url, str):
            if isinstance(value, dict):
                rest.update((k, v) for k, v in value.items() if k != "url")
            return _media(url, _MEDIA[kind], rest)
    if kind == "input_audio" and isinstance(p.get("input_audio"), dict):
        audio = p["input_audio"]
        fmt = audio.get("format")
        rest.update((k, v) for k, v in audio.items() if k != "data")
        data = audio.get("data")
        return BlobPart(
            mime_type=f"audio/{fmt}" if isinstance(fmt, str) else None,
            modality="audio",
            content=data if isinstance(data, str) else "",
            provider_details=rest,
        )
    if kind == "file" and isinstance(p.get("file"), dict):
        return _file(p["file"], rest)
    if kind == "thinking" and isinstance(p.get("thinking"), list):  # Mistral Magistral
        return ReasoningPart(content=texts(p["thinking"]), provider_details=rest)
    return generic_part(kind, p)


def _file(file: dict[str, Json], details: dict[str, Json]) -> Part:
    details.update((k, v) for k, v in file.items() if k not in ("file_id", "file_data"))
    file_id, data = file.get("file_id"), file.get("file_data")
    if isinstance(file_id, str):
        return FilePart(file_id=file_id, mime_type=None, modality=None, provider_details=details)
    if isinstance(data, str):
        if data.startswith("data:"):
            return _media(data, None, details)
        return BlobPart(mime_type=None, modality=None, content=data, provider_details=details)
    return generic_part("file", {"file": file})


def _media(url: str, modality: str | None, details: dict[str, Json]) -> Part:
    """A ``data:`` URL becomes a blob (its base64 as sent), anything else a URI."""
    if url.startswith("data:"):
        head, _, data = url[5:].partition(",")
        meta = head.split(";")
        mime = meta[0] or None
        if "base64" not in meta[1:]:
            details["encoding"] = "url"  # percent-encoded, not base64
        if modality is None and mime is not None:
            kind = mime.partition("/")[0]
            modality = kind if kind in ("image", "audio", "video") else None
        return BlobPart(mime_type=mime, modality=modality, content=data, provider_details=details)
    return UriPart(uri=url, mime_type=None, modality=modality, provider_details=details)


def texts(items: list[Json]) -> str:
    return "".join(
        t["text"] for t in items if isinstance(t, dict) and isinstance(t.get("text"), str)
    )


def generic_part(kind: str, value: Json) -> GenericPart:
    if isinstance(value, dict):
        return GenericPart(type=kind, fields={k: v for k, v in value.items() if k != "type"})
    return GenericPart(type=kind, fields={"value": value})


def tool_call_part(tc: Json) -> Part:
    """One ``tool_calls[]`` entry: a ``function`` call's arguments parsed from the string
    (raw string and parse error kept), a ``custom`` tool's free-form input as its value."""
    if not isinstance(tc, dict):
        return generic_part("tool_call", tc)
    kind = tc.get("type") or "function"
    call_id = tc.get("id")
    call_id = call_id if isinstance(call_id, str) else None
    fn = tc.get(kind) if isinstance(kind, str) else None
    if not isinstance(fn, dict):
        return generic_part(str(kind), tc)
    details = {k: v for k, v in tc.items() if k not in ("id", "type", "index", kind)}
    if kind != "function":
        details["type"] = kind
    part = ToolCallPart(
        id=call_id, name=tool_name(fn.get("name"), details), provider_details=details
    )
    args = fn.get("arguments", fn.get("input"))  # custom tools send free-form "input"
    if isinstance(args, str) and kind == "function":
        part.arguments_raw = args
        part.arguments, part.arguments_error = parse_arguments(args)
    elif args is not None:
        part.arguments = args  # an object (some compatible servers) or a custom tool's text
    details.update((k, v) for k, v in fn.items() if k not in ("name", "arguments", "input"))
    return part


def function_call_part(fc: dict[str, Json]) -> ToolCallPart:
    part = tool_call_part({"type": "function", "function": fc})
    assert isinstance(part, ToolCallPart)
    part.provider_details["legacy"] = "function_call"
    return part


def choice_index(choice: Json, position: int) -> int:
    """A choice's ``index``, or its place in the array when it has none."""
    index = choice.get("index") if isinstance(choice, dict) else None
    return index if isinstance(index, int) else position


def usage_raw(body: dict[str, Json]) -> Json:
    """The usage object of a response or chunk: ``usage``, else Groq's ``x_groq.usage``."""
    usage = body.get("usage")
    if usage is None and isinstance(body.get("x_groq"), dict):
        usage = body["x_groq"].get("usage")  # Groq's streams put usage there
    return usage


def output_message(choice: dict[str, Json]) -> tuple[Message, dict[str, Json]]:
    """A JSON response's choice as an output message, and the choice's and message's
    fields it does not normalize (logprobs, content filter results, vendor extras).
    Empty placeholders (Snowflake's ``refusal: ""``, an all-empty ``audio`` or
    ``function_call``) are no parts; the finish reason is kept as sent."""
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}
    parts: list[Part] = []
    details = message.get("reasoning_details")
    for key in REASONING_FIELDS:
        text = message.get(key)
        if isinstance(text, str) and text:
            reasoning = ReasoningPart(content=text, provider_details={"field": key})
            if details:
                reasoning.provider_details["reasoning_details"] = details
                details = None
            parts.append(reasoning)
    if details:  # only encrypted or summarized reasoning (OpenRouter)
        parts.append(ReasoningPart(content="", provider_details={"reasoning_details": details}))
    content = content_parts(message.get("content"))
    annotations = message.get("annotations")
    rest = {k: v for k, v in message.items() if k not in _OUT_MESSAGE_FIELDS}
    if annotations:
        text_part = next((p for p in content if isinstance(p, TextPart)), None)
        if text_part is not None:
            text_part.provider_details["annotations"] = annotations
        else:
            rest["annotations"] = annotations
    parts.extend(content)
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append(GenericPart(type="refusal", fields={"refusal": refusal}))
    audio = message.get("audio")
    if isinstance(audio, dict) and any(audio.values()):  # Snowflake: an all-empty placeholder
        data = audio.get("data")
        parts.append(
            BlobPart(
                mime_type=None,
                modality="audio",
                content=data if isinstance(data, str) else "",
                provider_details={k: v for k, v in audio.items() if k != "data"},
            )
        )
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        parts.extend(tool_call_part(tc) for tc in tool_calls)
    function_call = message.get("function_call")
    if isinstance(function_call, dict) and any(function_call.values()):
        parts.append(function_call_part(function_call))
    role = message.get("role")
    finish = choice.get("finish_reason")
    rest.update((k, v) for k, v in choice.items() if k not in CHOICE_FIELDS)
    out = Message(
        role=role if isinstance(role, str) and role else "assistant",
        parts=parts,
        finish_reason=finish if isinstance(finish, str) else None,
    )
    return out, rest
