"""Ollama's native message objects -> parts; usage, durations and errors of its bodies.

From Ollama's API reference (https://github.com/ollama/ollama/blob/main/docs/api.md):

- a message is ``{role, content, thinking?, images?, tool_calls?, tool_name?}``. ``content``
  becomes a text part (an empty string none: it says nothing), ``thinking`` a reasoning part,
  each of ``images`` (bare base64, no media type) a blob part of modality ``image``, each of
  ``tool_calls`` (``{function: {name, arguments, index?}}``) a tool call part. Ollama sends
  tool calls without ids: the id is None, never invented (an ``id`` a server does send is
  kept). ``arguments`` is an object, kept as the value with no raw string; a string (some
  proxies send one) is parsed as JSON, its error kept.
- a ``tool`` message is the result of a call: a tool call response part (id None unless a
  ``tool_call_id`` is sent) whose ``response`` is ``content`` as sent, the tool's name in
  ``provider_details.name`` (from ``tool_name``, or the older ``name``) so a trace can join
  it to its call by name and order.
- usage: ``prompt_eval_count`` (input) and ``eval_count`` (output); Ollama sends no total
  and omits ``prompt_eval_count`` when the whole prompt came from its cache: that stays None.
- durations, in nanoseconds: ``total_duration``, ``load_duration``,
  ``prompt_eval_duration``, ``eval_duration``, kept as sent under ``extras["durations_ns"]``.
- an error is ``{"error": "<message>"}``: the whole body with an HTTP status, or one line of
  a stream.
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
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    Usage,
    parse_arguments,
    tool_name,
)
from agentshark.apis.view import ExchangeView

DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")
COUNTS = ("prompt_eval_count", "eval_count")
# Request fields that are sampling, limit, output or runtime parameters (-> request_params).
PARAMS = frozenset(
    (
        "options",
        "format",
        "keep_alive",
        "think",
        "logprobs",
        "top_logprobs",
        "raw",
        "suffix",
        "template",
        "context",
        "truncate",
        "dimensions",
        "width",
        "height",
        "steps",
    )
)
_MESSAGE_FIELDS = frozenset(("role", "content", "thinking", "images", "tool_calls"))
_TOOL_FIELDS = _MESSAGE_FIELDS | {"tool_name", "name", "tool_call_id"}
_TEXT_LIMIT = 2000


def _str(value: Json) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Json) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def image_parts(images: Json) -> list[Part]:
    """Ollama's ``images``: bare base64 strings (anything else kept whole)."""
    out: list[Part] = []
    for image in images if isinstance(images, list) else ():
        if isinstance(image, str):
            out.append(BlobPart(mime_type=None, modality="image", content=image))
        else:
            out.append(GenericPart(type="image", fields={"value": image}))
    return out


def tool_call_part(raw: Json) -> Part:
    """One ``tool_calls`` entry: ``{function: {name, arguments, index?}, id?}``."""
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        return GenericPart(type="tool_call", fields={"value": raw})
    function = raw["function"]
    details: dict[str, Json] = {}
    part = ToolCallPart(id=_str(raw.get("id")), name=tool_name(function.get("name"), details))
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        part.arguments_raw = arguments
        part.arguments, part.arguments_error = parse_arguments(arguments)
    else:
        part.arguments = arguments  # an object, as Ollama sends it (None when absent)
    details.update((k, v) for k, v in function.items() if k not in ("name", "arguments"))
    details.update((k, v) for k, v in raw.items() if k not in ("function", "id"))  # index, type
    part.provider_details = details
    return part


def message_of(raw: Json, *, output: bool = False) -> Message:
    """One message object as a :class:`Message`; its unknown fields are kept in a last
    ``GenericPart`` of type ``message_fields``."""
    if not isinstance(raw, dict):
        return Message(role=None, parts=[GenericPart(type="message", fields={"value": raw})])
    role = _str(raw.get("role"))
    parts: list[Part] = []
    content = raw.get("content")
    if role == "tool" and not output:
        details: dict[str, Json] = {}
        name = raw.get("tool_name", raw.get("name"))
        if name is not None:
            details["name"] = name
        parts.append(
            ToolCallResponsePart(
                id=_str(raw.get("tool_call_id")), response=content, provider_details=details
            )
        )
    elif isinstance(content, str):
        if content:
            parts.append(TextPart(content=content))
    elif content is not None:
        parts.append(GenericPart(type="content", fields={"value": content}))
    thinking = raw.get("thinking")
    if isinstance(thinking, str) and thinking:
        parts.insert(0, ReasoningPart(content=thinking))
    parts.extend(image_parts(raw.get("images")))
    tool_calls = raw.get("tool_calls")
    if isinstance(tool_calls, list):
        parts.extend(tool_call_part(tc) for tc in tool_calls)
    skip = _TOOL_FIELDS if role == "tool" and not output else _MESSAGE_FIELDS
    rest = {k: v for k, v in raw.items() if k not in skip}
    if rest:
        parts.append(GenericPart(type="message_fields", fields=rest))
    return Message(role=role, parts=parts)


def input_messages(messages: list[Json], call: Call) -> None:
    """The request's messages; the leading ``system`` ones are the system instructions."""
    leading = True
    for raw in messages:
        if leading and isinstance(raw, dict) and raw.get("role") == "system":
            call.system_instructions.extend(message_of(raw).parts)
            continue
        leading = False
        call.input_messages.append(message_of(raw))


def request_fields(request: dict[str, Json], call: Call, own: tuple[str, ...]) -> None:
    """Model, stream flag and parameters of a request; fields other than ``own`` and the
    parameters go to ``extras["request"]``."""
    model = request.get("model")
    call.request_model = model if isinstance(model, str) else None
    # Ollama streams unless told not to: "stream" absent means a stream
    call.stream = request.get("stream", True) is not False
    other: dict[str, Json] = {}
    for key, value in request.items():
        if key in PARAMS:
            call.request_params[key] = value
        elif key not in own and key not in ("model", "stream"):
            other[key] = value
    if "stream" in request:
        call.request_params["stream"] = request["stream"]
    if other:
        call.extras["request"] = other


def usage_of(body: dict[str, Json]) -> Usage | None:
    """Usage from a final body or chunk, None when it carries no count."""
    raw = {k: body[k] for k in COUNTS if k in body}
    if not raw:
        return None
    return Usage(
        input_tokens=_int(raw.get("prompt_eval_count")),
        output_tokens=_int(raw.get("eval_count")),
        raw=raw,
    )


def durations_of(body: dict[str, Json], call: Call) -> None:
    found = {k: body[k] for k in DURATIONS if k in body}
    if found:
        call.extras["durations_ns"] = found


def error_of(value: Json, status: int | None, source: str) -> CallError | None:
    """``{"error": "..."}`` (or an object with a ``message``) as the call's error."""
    if not isinstance(value, dict) or value.get("error") is None:
        return None
    err = value["error"]
    if isinstance(err, dict):
        message = _str(err.get("message"))
        kind = _str(err.get("type"))
        code = err.get("code")
        return CallError(
            status=status,
            type=kind,
            code=None if code is None else str(code),
            message=message,
            source=source,
        )
    message = err if isinstance(err, str) else str(err)
    return CallError(status=status, type=None, code=None, message=message, source=source)


def http_error(view: ExchangeView, body: Json) -> CallError | None:
    """The error of a response with status >= 400: its ``error`` field, else the status
    with the body's first 2000 characters as the message."""
    status = view.status
    if status is None or status < 400:
        return error_of(body, status, "body")
    found = error_of(body, status, "body")
    if found is not None:
        return found
    text = view.response_body[:_TEXT_LIMIT].decode("utf-8", "replace").strip()
    return CallError(status=status, type=None, code=None, message=text or None, source="http")
