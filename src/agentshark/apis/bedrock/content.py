"""Converse content blocks and request bodies -> the call types (also Amazon Nova's
InvokeModel body, which is Converse-shaped).

A Converse ``ContentBlock`` is a union: an object with exactly one member
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ContentBlock.html).

================================= ===========================================================
member                            part
================================= ===========================================================
``text``                          :class:`TextPart`
``image``, ``video``, ``audio``   :class:`BlobPart` (``source.bytes``, base64 as sent; MIME
                                  type from ``format``) or :class:`UriPart` (``s3Location``)
``document``                      :class:`BlobPart` / :class:`UriPart` likewise (``name`` in
                                  ``provider_details``); a ``text`` or ``content`` source is
                                  kept whole as a :class:`GenericPart`
``toolUse``                       :class:`ToolCallPart`: ``id`` is ``toolUseId``, ``arguments``
                                  the ``input`` object as sent
``toolResult``                    :class:`ToolCallResponsePart`: ``id`` is ``toolUseId``,
                                  ``response`` the ``content`` blocks as sent (``status``)
``reasoningContent``              :class:`ReasoningPart`: ``reasoningText.text`` (its
                                  ``signature``), or ``""`` with ``redactedContent``
``guardContent``                  :class:`TextPart` (``block_type: guardContent``, its
                                  ``qualifiers``): text the guardrail evaluates
``citationsContent``              :class:`TextPart` of its generated text, ``citations`` kept
``cachePoint``, anything else     :class:`GenericPart` named by its member, kept whole
================================= ===========================================================
"""

from __future__ import annotations

from collections.abc import Callable

from agentshark.apis.model import (
    BlobPart,
    Call,
    GenericPart,
    Json,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
    role_messages,
    tool_name,
)

__all__ = ["block_part", "content_parts", "parse_messages_request", "tool_call_part"]

# document formats (DocumentBlock.format) -> MIME types
_DOCUMENT_TYPES = {
    "pdf": "application/pdf",
    "csv": "text/csv",
    "doc": "application/msword",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "html": "text/html",
    "txt": "text/plain",
    "md": "text/markdown",
}
_MEDIA_PREFIX = {"image": "image/", "video": "video/", "audio": "audio/"}


def content_parts(content: Json) -> list[Part]:
    """A message's ``content`` list (a string, as some clients send, is one text part)."""
    if isinstance(content, list):
        return [block_part(b) for b in content]
    if isinstance(content, str):
        return [TextPart(content=content)]
    if content is None:
        return []
    return [GenericPart(type="content", fields={"value": content})]


def block_part(block: Json) -> Part:
    """The part one content block stands for."""
    if not isinstance(block, dict) or len(block) != 1:
        # not a union member: kept whole ({"type": "text", "text": ...} from confused clients)
        return GenericPart(type="content", fields={"value": block})
    ((kind, value),) = block.items()
    convert = _CONVERTERS.get(kind)
    part = convert(kind, value) if convert is not None else None
    if part is not None:
        return part
    return GenericPart(
        type=kind, fields=dict(value) if isinstance(value, dict) else {"value": value}
    )


def _rest(value: dict[str, Json], *used: str) -> dict[str, Json]:
    return {k: v for k, v in value.items() if k not in used and v is not None}


def _text(kind: str, value: Json) -> Part | None:
    return TextPart(content=value) if isinstance(value, str) else None


def _media(kind: str, value: Json) -> Part | None:
    if not isinstance(value, dict) or not isinstance(value.get("source"), dict):
        return None
    source = value["source"]
    fmt = value.get("format")
    mime = None
    if isinstance(fmt, str):
        mime = _DOCUMENT_TYPES.get(fmt) if kind == "document" else _MEDIA_PREFIX[kind] + fmt
    modality = None if kind == "document" else kind
    details = _rest(value, "source", "format")
    if kind == "document":
        details["block_type"] = kind
    if fmt is not None and mime is None:
        details["format"] = fmt
    match source:
        case {"bytes": str(data)}:
            return BlobPart(
                mime_type=mime, modality=modality, content=data, provider_details=details
            )
        case {"s3Location": {"uri": str(uri), **rest}}:
            if rest:
                details["s3Location"] = rest
            return UriPart(uri=uri, mime_type=mime, modality=modality, provider_details=details)
    return None  # text / content document sources, unknown sources: kept whole


def tool_call_part(value: dict[str, Json]) -> ToolCallPart | None:
    """A ``toolUse`` member (``toolUseId``, ``name``, ``input``, and ``type`` for server tools)."""
    call_id = value.get("toolUseId")
    if not isinstance(call_id, str | None):
        return None
    details = _rest(value, "toolUseId", "name", "input")
    name = tool_name(value.get("name"), details)
    return ToolCallPart(
        id=call_id, name=name, arguments=value.get("input"), provider_details=details
    )


def _tool_use(kind: str, value: Json) -> Part | None:
    return tool_call_part(value) if isinstance(value, dict) else None


def _tool_result(kind: str, value: Json) -> Part | None:
    if not isinstance(value, dict):
        return None
    call_id = value.get("toolUseId")
    if not isinstance(call_id, str | None):
        return None
    details = _rest(value, "toolUseId", "content")
    return ToolCallResponsePart(id=call_id, response=value.get("content"), provider_details=details)


def _only(value: Json, member: str) -> dict[str, Json] | None:
    """``value[member]`` when ``value`` is an object with that one member, an object."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(member), dict):
        inner: dict[str, Json] = value[member]
        return inner
    return None


def _reasoning(kind: str, value: Json) -> Part | None:
    text = _only(value, "reasoningText")
    if text is not None and isinstance(text.get("text"), str):
        return ReasoningPart(content=text["text"], provider_details=_rest(text, "text"))
    if (
        isinstance(value, dict)
        and len(value) == 1
        and isinstance(value.get("redactedContent"), str)
    ):
        return ReasoningPart(
            content="", provider_details={"redactedContent": value["redactedContent"]}
        )
    return None


def _guard(kind: str, value: Json) -> Part | None:
    text = _only(value, "text")
    if text is None or not isinstance(text.get("text"), str):
        return None
    details = {"block_type": kind, **_rest(text, "text")}
    return TextPart(content=text["text"], provider_details=details)


def _citations(kind: str, value: Json) -> Part | None:
    if not isinstance(value, dict) or not isinstance(value.get("content"), list):
        return None
    texts = [c.get("text") for c in value["content"] if isinstance(c, dict)]
    if not texts or not all(isinstance(t, str) for t in texts):
        return None
    details = {"block_type": kind, **_rest(value, "content")}
    return TextPart(
        content="".join(t for t in texts if isinstance(t, str)), provider_details=details
    )


_CONVERTERS: dict[str, Callable[[str, Json], Part | None]] = {
    "text": _text,
    "image": _media,
    "video": _media,
    "audio": _media,
    "document": _media,
    "toolUse": _tool_use,
    "toolResult": _tool_result,
    "reasoningContent": _reasoning,
    "guardContent": _guard,
    "citationsContent": _citations,
}


# -- requests -------------------------------------------------------------------------------

# Converse request members kept in ``request_params`` as sent; ``inferenceConfig``'s members
# are flattened into it (maxTokens, temperature, topP, stopSequences; Nova's max_new_tokens,
# topK...). The others go to ``extras["request"]``.
_PARAMS = frozenset(
    "toolChoice additionalModelRequestFields additionalModelResponseFieldPaths "  # noqa: SIM905 - words read better
    "guardrailConfig performanceConfig serviceTier outputConfig promptVariables "
    "requestMetadata schemaVersion".split()
)


def parse_messages_request(body: Json, call: Call) -> None:
    """A Converse (or Nova InvokeModel) request body into ``call``: ``messages``, ``system``
    blocks, ``toolConfig.tools`` (as sent), ``inferenceConfig`` and the other parameters;
    unknown members under ``extras["request"]``. The model is in the URL, not the body."""
    if not isinstance(body, dict):
        return
    extras: dict[str, Json] = {}
    for key, value in body.items():
        if key == "messages" and isinstance(value, list):
            call.input_messages = role_messages(value, extras, content_parts)
        elif key == "system" and isinstance(value, list):
            call.system_instructions = [block_part(b) for b in value]
        elif key == "toolConfig" and isinstance(value, dict):
            tools = value.get("tools")
            if isinstance(tools, list):
                call.tool_definitions = tools
            rest = _rest(value, "tools")
            if isinstance(rest.get("toolChoice"), dict):
                call.request_params["toolChoice"] = rest.pop("toolChoice")
            if rest:
                extras["toolConfig"] = rest
        elif key == "inferenceConfig" and isinstance(value, dict):
            call.request_params.update(value)
        elif key in _PARAMS:
            call.request_params[key] = value
        else:
            extras[key] = value
    if extras:
        call.extras["request"] = extras
