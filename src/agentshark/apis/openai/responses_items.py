"""OpenAI Responses items -> messages made of OpenTelemetry GenAI parts.

The Responses API carries a conversation as a flat list of typed items, the same union in
a request's ``input`` and a response's ``output`` (https://platform.openai.com/docs/api-reference/responses/object).
This module is the translation table from each item type to parts, and the rule that groups
items into messages:

* ``message`` items keep their role; their content parts become text, blob, uri, file or
  refusal parts. A user, system or developer message item is one message.
* Everything the model produced (assistant message items, ``reasoning``, ``function_call``,
  hosted tool calls such as ``web_search_call`` or ``mcp_call``...) belongs to the assistant:
  consecutive assistant-side items form one assistant message, so a response's whole output
  is one assistant message, in output order (OTel's mapping of a model turn).
* Results the client sends back (``function_call_output`` and the other ``*_output`` items,
  ``mcp_approval_response``) form ``tool`` messages, consecutive ones merged.
* ``item_reference`` joins the message before it (a ``user`` message when it comes first):
  what it refers to is not on the wire.

A tool call the client executes (``function_call``, ``custom_tool_call``, ``computer_call``,
``local_shell_call``, ``shell_call``, ``apply_patch_call``) is a tool-call part whose id is
the item's ``call_id``. A hosted tool the server runs (``web_search_call``,
``file_search_call``, ``code_interpreter_call``, ``image_generation_call``, ``mcp_call``...)
is a tool-call part whose id is the item id, followed by a tool-call-response part when the
item carries its result (an MCP error is a response part with ``is_error``); a generated
image is a blob part. Items without a call shape (``mcp_list_tools``,
``mcp_approval_request``, ``compaction``...) and unknown ones are generic parts that keep every
field. Vendor extras go to ``provider_details``: the item id as ``item_id``, its type as
``item_type`` for anything but messages, function calls and reasoning, its status unless it
is ``completed``, and every other field not mapped, null and empty-list fields aside.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

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
    parse_arguments,
    tool_name,
)

Item = dict[str, Any]

# Item types whose role is "tool": results the client sends back.
RESULT_TYPES = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "tool_search_output",
        "program_output",
        "mcp_approval_response",
    }
)
# Separator between the summary parts of one reasoning item (they are paragraphs).
SUMMARY_SEPARATOR = "\n\n"


# -- messages ----------------------------------------------------------------------------------


def item_messages(items: Iterable[Json], *, output: bool = False) -> list[Message]:
    """Group items into messages (see the module docstring for the rule). In a response's
    ``output`` every item without a role of its own is the assistant's, results included:
    the server ran those tools."""
    return group_parts(item_entry(raw, output=output) for raw in items)


def item_entry(raw: Json, *, output: bool = False) -> tuple[str | None, list[Part]]:
    """An item's role (None for an ``item_reference``) and parts, for :func:`group_parts`."""
    item: Item = raw if isinstance(raw, dict) else {"type": "unknown", "value": raw}
    if item.get("type") == "item_reference":
        role = None
    else:
        role = item_role(item)
        if output and role == "tool" and "role" not in item:
            role = "assistant"
    return role, item_parts(item)


def group_parts(entries: Iterable[tuple[str | None, list[Part]]]) -> list[Message]:
    """Messages from (role, parts) entries in order: consecutive assistant or tool entries
    merge; a None role joins the message before it (a user message when first)."""
    out: list[Message] = []
    for role, parts in entries:
        if role is None:
            if out:
                out[-1].parts.extend(parts)
            else:
                out.append(Message(role="user", parts=parts))
        elif out and role in ("assistant", "tool") and out[-1].role == role:
            out[-1].parts.extend(parts)
        else:
            out.append(Message(role=role, parts=parts))
    return out


def item_role(item: Item) -> str:
    kind = _str(item.get("type"))
    role = item.get("role")
    if isinstance(role, str) and role:
        return role
    if kind in RESULT_TYPES:
        return "tool"
    return "assistant"


def item_parts(item: Item) -> list[Part]:
    """The parts one item stands for."""
    kind = _str(item.get("type"))
    if kind is None and "role" in item and "type" not in item:  # EasyInputMessage
        kind = "message"
    if kind is None:
        return [_generic(item)]
    handler = _HANDLERS.get(kind)
    if handler is not None:
        return handler(item)
    if kind in _HOSTED:
        return _hosted(item, *_HOSTED[kind])
    if kind in _CLIENT_CALLS:
        return _client_call(item, *_CLIENT_CALLS[kind])
    if kind in RESULT_TYPES:
        return _result(item)
    return [_generic(item)]


# -- content parts -----------------------------------------------------------------------------


def content_parts(content: Json, base: dict[str, Json] | None = None) -> list[Part]:
    """A message's ``content``: a string (one text part) or a list of content parts."""
    base = base or {}
    if isinstance(content, str):
        return [TextPart(content=content, provider_details=dict(base))]
    if not isinstance(content, list):
        return [] if content is None else [GenericPart(type="unknown", fields={"value": content})]
    out: list[Part] = []
    for c in content:
        if not isinstance(c, dict):
            out.append(GenericPart(type="unknown", fields={"value": c}))
            continue
        kind = c.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
            text = c.get("text")
            out.append(
                TextPart(
                    content=text if isinstance(text, str) else "",
                    provider_details=_details(c, ("type", "text"), base),
                )
            )
        elif kind == "input_image":
            out.append(_media(c, "image_url", "image", base))
        elif kind == "input_file":
            out.append(_media(c, "file_url", None, base))
        elif kind == "input_audio":
            out.append(_audio(c, base))
        else:  # refusal and anything else: kept whole
            out.append(_generic(c, base))
    return out


def _media(c: Item, url_key: str, modality: str | None, base: dict[str, Json]) -> Part:
    """``input_image`` / ``input_file``: a file id, a URL (maybe a data URL) or inline data."""
    details = _details(c, ("type", url_key, "file_id", "file_data"), base)
    file_id, url, data = c.get("file_id"), c.get(url_key), c.get("file_data")
    if isinstance(file_id, str):
        if isinstance(url, str):
            details[url_key] = url
        return FilePart(
            file_id=file_id, mime_type=None, modality=modality, provider_details=details
        )
    from_data = isinstance(data, str)
    inline: str | None = data if from_data else url if isinstance(url, str) else None
    if inline is not None:
        mime, payload = split_data_url(inline)
        if payload is not None:
            return BlobPart(
                mime_type=mime,
                modality=modality or _modality(mime),
                content=payload,
                provider_details=details,
            )
        if from_data:  # file_data without a data: prefix is base64 as sent
            return BlobPart(
                mime_type=None, modality=modality, content=inline, provider_details=details
            )
        return UriPart(uri=inline, mime_type=None, modality=modality, provider_details=details)
    return _generic(c, base)


def _audio(c: Item, base: dict[str, Json]) -> Part:
    audio = c.get("input_audio")
    if isinstance(audio, dict) and isinstance(audio.get("data"), str):
        fmt = audio.get("format")
        details = _details(c, ("type", "input_audio"), base)
        details.update(_details(audio, ("data", "format"), {}))
        if isinstance(fmt, str):
            details["format"] = fmt
        return BlobPart(
            mime_type=f"audio/{fmt}" if isinstance(fmt, str) else None,
            modality="audio",
            content=audio["data"],
            provider_details=details,
        )
    return _generic(c, base)


def split_data_url(url: str) -> tuple[str | None, str | None]:
    """``data:<mime>;base64,<payload>`` -> (mime, payload); (None, None) for anything else."""
    if not url.startswith("data:"):
        return None, None
    head, sep, payload = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None, None
    mime = head[5:-7].split(";", 1)[0]
    return mime or None, payload


def _modality(mime: str | None) -> str | None:
    if mime is None:
        return None
    major = mime.split("/", 1)[0]
    return major if major in ("image", "audio", "video") else None


# -- items -------------------------------------------------------------------------------------


def _message(item: Item) -> list[Part]:
    return content_parts(item.get("content"), _details(item, ("type", "role", "content"), {}))


def _function_call(item: Item) -> list[Part]:
    return [
        tool_call(
            item.get("call_id"),
            item.get("name"),
            item.get("arguments"),
            _details(item, ("type", "call_id", "name", "arguments"), {}),
        )
    ]


def tool_call(call_id: Json, name: Json, arguments: Json, details: dict[str, Json]) -> ToolCallPart:
    """A tool call whose arguments are a JSON string (parsed once), an object or absent."""
    part = ToolCallPart(
        id=call_id if isinstance(call_id, str) else None,
        name=tool_name(name, details),
        provider_details=details,
    )
    if isinstance(arguments, str):
        part.arguments_raw = arguments
        part.arguments, part.arguments_error = parse_arguments(arguments)
    else:
        part.arguments = arguments
    return part


def _custom_tool_call(item: Item) -> list[Part]:
    """A custom tool's ``input`` is free text by design (a grammar, not JSON): it is both
    the value and the raw string, and never a parse error."""
    details = _details(item, ("call_id", "name", "input"), {})
    raw = item.get("input")
    return [
        ToolCallPart(
            id=_str(item.get("call_id")),
            name=tool_name(item.get("name"), details),
            arguments=raw,
            arguments_raw=raw if isinstance(raw, str) else None,
            provider_details=details,
        )
    ]


def _reasoning(item: Item) -> list[Part]:
    """One reasoning part per item: the summary parts joined by a blank line (or, without a
    summary, the raw reasoning text); ``encrypted_content`` kept for the round trip."""
    summary = _texts(item.get("summary"))
    text = _texts(item.get("content"))
    details = _details(item, ("type", "summary", "content"), {})
    if summary and text:
        details["reasoning_text"] = SUMMARY_SEPARATOR.join(text)
    content = SUMMARY_SEPARATOR.join(summary or text)
    return [ReasoningPart(content=content, provider_details=details)]


def _texts(value: Json) -> list[str]:
    if not isinstance(value, list):
        return []
    return [v["text"] for v in value if isinstance(v, dict) and isinstance(v.get("text"), str)]


def _mcp_call(item: Item) -> list[Part]:
    details = _details(item, ("name", "arguments", "output", "error"), {})
    call = tool_call(item.get("id"), item.get("name"), item.get("arguments"), details)
    out: list[Part] = [call]
    if item.get("error") is not None:
        out.append(
            ToolCallResponsePart(
                id=call.id, response=item["error"], provider_details={"is_error": True}
            )
        )
    elif item.get("output") is not None:
        out.append(ToolCallResponsePart(id=call.id, response=item["output"]))
    return out


def _image_generation(item: Item) -> list[Part]:
    details = _details(item, ("result",), {})
    call = ToolCallPart(id=_str(item.get("id")), name="image_generation", provider_details=details)
    out: list[Part] = [call]
    result = item.get("result")
    if isinstance(result, str) and result:
        fmt = item.get("output_format")
        out.append(
            BlobPart(
                mime_type=f"image/{fmt if isinstance(fmt, str) else 'png'}",
                modality="image",
                content=result,
                provider_details={"item_id": item.get("id"), "item_type": "image_generation_call"},
            )
        )
    return out


def _hosted(item: Item, name: str, args: tuple[str, ...], results: tuple[str, ...]) -> list[Part]:
    """A tool the server runs: the call (its arguments: the one argument field as sent, or
    the argument fields present) and, when the item carries it, its result."""
    call = ToolCallPart(
        id=_str(item.get("id")),
        name=name,
        arguments=_pick(item, args),
        provider_details=_details(item, (*args, *results), {}),
    )
    out: list[Part] = [call]
    response = _pick(item, results)
    if response is not None:
        out.append(ToolCallResponsePart(id=call.id, response=response))
    return out


def _pick(item: Item, keys: tuple[str, ...]) -> Json:
    """The value of the one field in ``keys`` (None when absent), or a mapping of those
    present and not null (None when none is)."""
    if len(keys) == 1:
        return item.get(keys[0])
    found = {k: item[k] for k in keys if item.get(k) is not None}
    return found or None


def _client_call(item: Item, name: str, args: tuple[str, ...]) -> list[Part]:
    """A built-in tool the client runs: its ``call_id`` pairs it with the result item."""
    call_id = _str(item.get("call_id")) or _str(item.get("id"))
    return [
        ToolCallPart(
            id=call_id,
            name=name,
            arguments=_pick(item, args),
            provider_details=_details(item, ("call_id", *args), {}),
        )
    ]


def _result(item: Item) -> list[Part]:
    kind = item.get("type")
    if kind == "mcp_approval_response":
        return [_generic(item)]
    keys = [k for k in ("output", "result", "tools") if k in item]
    response = item[keys[0]] if keys else None
    details = _details(item, ("call_id", *keys), {})
    call_id = item.get("call_id")
    if kind == "local_shell_call_output":  # no call_id: its id is the call's
        call_id = call_id or item.get("id")
    return [ToolCallResponsePart(id=_str(call_id), response=response, provider_details=details)]


def _generic(item: Item, base: dict[str, Json] | None = None) -> GenericPart:
    kind = item.get("type")
    fields = {k: v for k, v in item.items() if k != "type"}
    if kind is not None and not isinstance(kind, str):
        fields["type_value"] = kind  # a malformed type is kept, under a name of its own
    if base:
        fields = {**base, **fields}
    return GenericPart(type=kind if isinstance(kind, str) else "unknown", fields=fields)


_HANDLERS: dict[str, Callable[[Item], list[Part]]] = {
    "message": _message,
    "function_call": _function_call,
    "custom_tool_call": _custom_tool_call,
    "reasoning": _reasoning,
    "mcp_call": _mcp_call,
    "image_generation_call": _image_generation,
}
# hosted tool item type -> (tool name, argument fields, result fields)
_HOSTED: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "web_search_call": ("web_search", ("action",), ()),
    "file_search_call": ("file_search", ("queries",), ("results",)),
    "code_interpreter_call": ("code_interpreter", ("code", "container_id"), ("outputs",)),
}
# client-run built-in tool item type -> (tool name, argument fields)
_CLIENT_CALLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "computer_call": ("computer", ("action",)),
    "local_shell_call": ("local_shell", ("action",)),
    "shell_call": ("shell", ("action",)),
    "apply_patch_call": ("apply_patch", ("operation",)),
    "tool_search_call": ("tool_search", ("arguments",)),
    "program": ("program", ("code",)),
}


# -- provider details --------------------------------------------------------------------------

_DEFAULT_TYPES = frozenset({"message", "function_call", "function_call_output", "reasoning"})


def _details(obj: Item, consumed: tuple[str, ...], base: dict[str, Json]) -> dict[str, Json]:
    """Every field of ``obj`` a part does not hold: ``id`` as ``item_id``, ``type`` as
    ``item_type`` (for items not named by their part), ``status`` unless "completed"; null
    and empty-list values are absence."""
    out = dict(base)
    for key, value in obj.items():
        if key in consumed or value is None or value == []:
            continue
        if key == "id":
            out["item_id"] = value
        elif key == "type":
            if not (isinstance(value, str) and value in _DEFAULT_TYPES):
                out["item_type"] = value
        elif key == "status":
            if value != "completed":
                out["status"] = value
        else:
            out[key] = value
    return out


def _str(value: Json) -> str | None:
    return value if isinstance(value, str) else None
