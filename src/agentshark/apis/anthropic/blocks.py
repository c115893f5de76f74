"""Anthropic request bodies, content blocks, usage and error bodies -> the call types.

One translation table serves request and response blocks, whole or streamed
(https://docs.anthropic.com/en/api/messages):

=============================================== ==============================================
block ``type``                                  part
=============================================== ==============================================
``text``                                        :class:`TextPart` (citations, cache_control in
                                                ``provider_details``)
``thinking``                                    :class:`ReasoningPart` (``signature``)
``redacted_thinking``                           :class:`ReasoningPart`, content ``""`` (``data``)
``tool_use``, ``server_tool_use``,              :class:`ToolCallPart`: ``arguments`` is the
``mcp_tool_use``, any ``*tool_use``             ``input`` object as sent, ``arguments_raw`` None
``tool_result``, ``web_search_tool_result``,    :class:`ToolCallResponsePart`: ``id`` is
``mcp_tool_result``, any ``*tool_result``       ``tool_use_id``, ``response`` the content as sent
``image``, ``document`` (base64 / url / file)   :class:`BlobPart` / :class:`UriPart` /
                                                :class:`FilePart`
``container_upload``                            :class:`FilePart`
anything else (``compaction``, ``fallback``,    :class:`GenericPart`, every field kept
``search_result``, ``tool_addition``...)
=============================================== ==============================================

Server-side and MCP tool blocks name their own kind in ``provider_details["block_type"]``;
plain ``tool_use`` / ``tool_result`` / ``image`` blocks do not. Fields a part has no place for
go to ``provider_details`` (explicit nulls dropped); a block missing a field its part needs
becomes a :class:`GenericPart`, kept whole.
"""

from __future__ import annotations

from collections.abc import Callable

from agentshark.apis.model import (
    BlobPart,
    Call,
    CallError,
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
    role_messages,
    tool_name,
)
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.model import header

__all__ = ["block_part", "content_parts", "error_of", "is_int", "parse_request", "usage_of"]


def content_parts(content: Json) -> list[Part]:
    """A message's ``content``: a string (one text part) or a list of blocks."""
    if isinstance(content, str):
        return [TextPart(content=content)]
    if isinstance(content, list):
        return [block_part(b) for b in content]
    if content is None:
        return []
    return [GenericPart(type="content", fields={"value": content})]


def block_part(block: Json) -> Part:
    """The part one content block stands for."""
    if not isinstance(block, dict):
        return GenericPart(type="content", fields={"value": block})
    kind = block.get("type")
    if not isinstance(kind, str):
        return GenericPart(type="unknown", fields=dict(block))
    convert = _CONVERTERS.get(kind)
    if convert is None:
        if kind.endswith("tool_use"):
            convert = _tool_use
        elif kind.endswith("tool_result"):
            convert = _tool_result
        else:
            convert = _generic
    part = convert(kind, block)
    return part if part is not None else _generic(kind, block)


def _rest(block: dict[str, Json], *used: str) -> dict[str, Json]:
    """The fields of ``block`` not in ``used``, explicit nulls dropped."""
    return {k: v for k, v in block.items() if k not in used and v is not None}


def _tagged(kind: str, plain: str, details: dict[str, Json]) -> dict[str, Json]:
    return details if kind == plain else {"block_type": kind, **details}


def _text(kind: str, block: dict[str, Json]) -> Part | None:
    text = block.get("text")
    if not isinstance(text, str):
        return None
    return TextPart(content=text, provider_details=_rest(block, "type", "text"))


def _thinking(kind: str, block: dict[str, Json]) -> Part | None:
    thinking = block.get("thinking")
    if not isinstance(thinking, str):
        return None
    return ReasoningPart(content=thinking, provider_details=_rest(block, "type", "thinking"))


def _redacted_thinking(kind: str, block: dict[str, Json]) -> Part | None:
    return ReasoningPart(content="", provider_details={"block_type": kind, **_rest(block, "type")})


def _tool_use(kind: str, block: dict[str, Json]) -> Part | None:
    call_id = block.get("id")
    if not isinstance(call_id, str | None):
        return None
    details = _tagged(kind, "tool_use", _rest(block, "type", "id", "name", "input"))
    name = tool_name(block.get("name"), details)  # None, never "": the block said no name
    return ToolCallPart(
        id=call_id, name=name, arguments=block.get("input"), provider_details=details
    )


def _tool_result(kind: str, block: dict[str, Json]) -> Part | None:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str | None):
        return None
    details = _tagged(kind, "tool_result", _rest(block, "type", "tool_use_id", "content"))
    return ToolCallResponsePart(id=call_id, response=block.get("content"), provider_details=details)


def _media(kind: str, block: dict[str, Json]) -> Part | None:
    """``image`` and ``document`` blocks, by their ``source`` type."""
    source = block.get("source")
    if not isinstance(source, dict):
        return None
    details = _tagged(kind, "image", _rest(block, "type", "source"))
    extra = _rest(source, "type", "media_type", "data", "url", "file_id")
    if extra:
        details["source"] = extra
    mime = source.get("media_type")
    mime = mime if isinstance(mime, str) else None
    modality = "image" if kind == "image" else None
    match source.get("type"), source:
        case "base64", {"data": str(data)}:
            return BlobPart(
                mime_type=mime, modality=modality, content=data, provider_details=details
            )
        case "url", {"url": str(url)}:
            return UriPart(uri=url, mime_type=mime, modality=modality, provider_details=details)
        case "file", {"file_id": str(file_id)}:
            return FilePart(
                file_id=file_id, mime_type=mime, modality=modality, provider_details=details
            )
    return None  # text / content sources, unknown sources: kept whole


def _container_upload(kind: str, block: dict[str, Json]) -> Part | None:
    file_id = block.get("file_id")
    if not isinstance(file_id, str):
        return None
    details = {"block_type": kind, **_rest(block, "type", "file_id")}
    return FilePart(file_id=file_id, mime_type=None, modality=None, provider_details=details)


def _generic(kind: str, block: dict[str, Json]) -> Part:
    return GenericPart(type=kind, fields={k: v for k, v in block.items() if k != "type"})


_CONVERTERS: dict[str, Callable[[str, dict[str, Json]], Part | None]] = {
    "text": _text,
    "thinking": _thinking,
    "redacted_thinking": _redacted_thinking,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
    "image": _media,
    "document": _media,
    "container_upload": _container_upload,
}


# -- requests -------------------------------------------------------------------------------

# request fields kept in ``request_params`` as sent (the others go to ``extras["request"]``)
_PARAMS = frozenset(
    "max_tokens temperature top_p top_k stop_sequences thinking tool_choice metadata "  # noqa: SIM905 - words read better
    "service_tier container mcp_servers context_management output_config output_format "
    "cache_control inference_geo speed diagnostics compaction fallbacks "
    "anthropic_version anthropic_beta max_tokens_to_sample".split()
)


def parse_request(view: ExchangeView, call: Call) -> None:
    """The request body into ``call``: model, system, messages (or a legacy ``prompt``),
    tools, the stream flag and parameters; betas and the API version from the headers;
    ``metadata.user_id`` among the ids. Unknown fields go to ``extras["request"]`` by path."""
    req = view.request_json
    extras: dict[str, Json] = {}
    if not isinstance(req, dict):
        if view.request_body:
            extras["body"] = view.request_body[:4096].decode("utf-8", "replace")
            call.diagnostics.append(
                Diagnostic(
                    code="anthropic.request_not_json",
                    location=f"{view.exchange.id} request body",
                    message="the request body is not a JSON object: kept under extras.request",
                )
            )
        req = {}
    for key, value in req.items():
        if key == "model" and isinstance(value, str):
            call.request_model = value
        elif key == "messages" and isinstance(value, list):
            call.input_messages = role_messages(value, extras, content_parts)
        elif key == "system" and isinstance(value, str | list):
            call.system_instructions = content_parts(value)
        elif key == "tools" and isinstance(value, list):
            call.tool_definitions = value
        elif key == "stream":
            call.stream = value is True
        elif key == "prompt" and isinstance(value, str):
            call.input_messages = [Message(role="user", parts=[TextPart(content=value)])]
        elif key in _PARAMS:
            call.request_params[key] = value
        else:
            extras[key] = value
    metadata = req.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if isinstance(user_id, str):
        call.ids["user_id"] = user_id
        call.id_sources["user_id"] = "request body $.metadata.user_id"
    request = view.exchange.request
    headers = request.headers if request is not None else []
    if betas := header(headers, "anthropic-beta"):
        call.request_params["betas"] = [b.strip() for b in betas.split(",") if b.strip()]
    if version := header(headers, "anthropic-version"):
        call.request_params.setdefault("anthropic_version", version)
    if extras:
        call.extras["request"] = extras


# -- usage and errors -----------------------------------------------------------------------


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def usage_of(raw: dict[str, Json]) -> Usage:
    """Normalized usage. Anthropic's ``input_tokens`` counts only the tokens after the last
    cache breakpoint; the normalized ``input_tokens`` adds cache reads and writes, as the
    OpenTelemetry GenAI conventions ask ("input tokens include cached tokens") and as OpenAI
    counts them. ``raw`` keeps the vendor's numbers. Anthropic sends no total."""

    def count(name: str) -> int | None:
        value = raw.get(name)
        return value if is_int(value) else None

    given = count("input_tokens")
    written = count("cache_creation_input_tokens")
    read = count("cache_read_input_tokens")
    details = raw.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=None if given is None else given + (written or 0) + (read or 0),
        output_tokens=count("output_tokens"),
        cached_input_tokens=read,
        cache_creation_input_tokens=written,
        reasoning_tokens=thinking if is_int(thinking) else None,
        raw=raw,
    )


def error_of(
    body: Json, status: int | None, source: str, *, type_hint: str | None = None
) -> CallError | None:
    """The error an error body carries: Anthropic's ``{"type": "error", "error": {type,
    message}}``, Google's ``{"error": {code, message, status}}`` (Vertex), or Bedrock's
    ``{"message"}`` (its type in the ``x-amzn-errortype`` header, passed as ``type_hint``)."""
    if isinstance(body, list) and len(body) == 1:  # Vertex wraps some errors in a list
        body = body[0]
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    if isinstance(inner, dict):
        kind = inner.get("type") if "type" in inner else inner.get("status")
        code = inner.get("code")
        message = inner.get("message")
        return CallError(
            status=status,
            type=kind if isinstance(kind, str) else None,
            code=str(code) if code is not None and not isinstance(code, dict | list) else None,
            message=message if isinstance(message, str) else None,
            source=source,
        )
    message = body.get("message") or body.get("Message")
    if isinstance(message, str):
        return CallError(status=status, type=type_hint, code=None, message=message, source=source)
    return None
