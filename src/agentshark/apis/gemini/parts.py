"""Gemini ``Content`` and ``Part`` objects -> messages and parts; usage and error bodies.

One translation table serves request ``contents``, ``systemInstruction`` and response
candidates, whole or streamed (https://ai.google.dev/api/caching#Part); a part is a oneof of
its data field, beside which ``thought``, ``thoughtSignature``, ``partMetadata`` and
``videoMetadata`` may stand:

=========================================== ===================================================
part field                                  part
=========================================== ===================================================
``text``                                    :class:`TextPart`
``text`` with ``thought: true``             :class:`ReasoningPart`
``functionCall {id?, name, args}``          :class:`ToolCallPart`: ``arguments`` the ``args``
                                            object as sent (None when absent, never ``{}``),
                                            ``id`` None when absent (never invented)
``functionResponse {id?, name, response}``  :class:`ToolCallResponsePart`, the tool's ``name``
                                            in ``provider_details["name"]`` (traces join an
                                            id-less result to its call by name and position)
``inlineData {mimeType, data}``             :class:`BlobPart` (base64 as sent)
``fileData {mimeType, fileUri}``            :class:`UriPart`
``executableCode {language, code}``         :class:`ToolCallPart` named ``code_execution``,
                                            ``provider_details["execution"] = "server"``
``codeExecutionResult {outcome, output}``   :class:`ToolCallResponsePart`, likewise: the
                                            hosted code execution tool, run by Google
``toolCall {id, toolType, args}``,          Gemini 3's hosted tools (``GOOGLE_SEARCH_WEB``,
``toolResponse {id, toolType, response}``   ``FILE_SEARCH``...): a tool call named by its
                                            ``toolType`` and its response, ``execution``
                                            ``"server"``
anything else                               :class:`GenericPart`, every field kept
=========================================== ===================================================

``thoughtSignature`` (an opaque token the model needs back in the replayed history, Gemini 3
rejects a function call replayed without it: https://ai.google.dev/gemini-api/docs/thought-signatures)
is kept in ``provider_details["thoughtSignature"]``, never shown as text; ``videoMetadata``,
``partMetadata`` and other fields beside the data field go to ``provider_details`` as sent.

Field names are taken in their JSON form (``thoughtSignature``) and their proto form
(``thought_signature``), as the API takes both; the parts keep the JSON form.

Roles: ``user`` stays ``user``; ``model`` is the ``assistant`` (the name every other family
and the trace use); ``function`` (the old role of ``functionResponse`` turns) is ``tool``;
any other string is kept as sent.
"""

from __future__ import annotations

from collections.abc import Callable

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
    tool_name,
)

__all__ = [
    "ROLES",
    "content_message",
    "error_of",
    "is_int",
    "modality_of",
    "part_of",
    "parts_of",
    "role_of",
    "usage_of",
]

ROLES = {"user": "user", "model": "assistant", "function": "tool"}
CODE_EXECUTION = "code_execution"  # the name of the hosted tool's calls


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def role_of(raw: Json) -> str | None:
    """The normalized role of a ``Content.role`` (None when absent or not a string)."""
    if not isinstance(raw, str):
        return None
    return ROLES.get(raw, raw)


def content_message(content: Json, *, default_role: str | None) -> Message | None:
    """A ``Content`` object as a message; None when it is not an object."""
    if not isinstance(content, dict):
        return None
    role = role_of(content.get("role"))
    return Message(role=role or default_role, parts=parts_of(content.get("parts")))


def parts_of(parts: Json) -> list[Part]:
    if isinstance(parts, list):
        return [part_of(p) for p in parts]
    if parts is None:
        return []
    return [GenericPart(type="parts", fields={"value": parts})]


def camel(name: str) -> str:
    """A proto field name as its JSON name: ``thought_signature`` -> ``thoughtSignature``. The
    API takes both (https://protobuf.dev/programming-guides/json/), and clients send both."""
    if "_" not in name:
        return name
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _camel_part(raw: dict[str, Json]) -> dict[str, Json]:
    """A part with its field names, and those of its data object, in JSON form (the data's
    own values, ``args`` and ``response``, are the client's and stay as sent)."""
    out: dict[str, Json] = {}
    for key, value in raw.items():
        key = camel(key)
        if isinstance(value, dict) and key in _CONVERTERS:
            value = {camel(k): v for k, v in value.items()}
        out[key] = value
    return out


def part_of(raw: Json) -> Part:
    """The part one Gemini ``Part`` stands for."""
    if not isinstance(raw, dict):
        return GenericPart(type="part", fields={"value": raw})
    if any("_" in k for k in raw):
        raw = _camel_part(raw)
    for key, convert in _CONVERTERS.items():
        if key in raw:
            part = convert(raw)
            if part is not None:
                return part
            break
    return GenericPart(type="part", fields=dict(raw))


def _rest(raw: dict[str, Json], *used: str) -> dict[str, Json]:
    """The fields beside the data field (signature, metadata...), explicit nulls dropped."""
    return {k: v for k, v in raw.items() if k not in used and v is not None}


def _text(raw: dict[str, Json]) -> Part | None:
    text = raw["text"]
    if not isinstance(text, str):
        return None
    if raw.get("thought") is True:
        return ReasoningPart(content=text, provider_details=_rest(raw, "text", "thought"))
    details = _rest(raw, "text")
    if details.get("thought") is False:
        del details["thought"]
    return TextPart(content=text, provider_details=details)


def _function_call(raw: dict[str, Json]) -> Part | None:
    call = raw["functionCall"]
    if not isinstance(call, dict):
        return None
    call_id = call.get("id")
    if not isinstance(call_id, str | None):
        return None
    details = _rest(raw, "functionCall")
    details.update(_rest(call, "id", "name", "args"))
    name = tool_name(call.get("name"), details)
    return ToolCallPart(id=call_id, name=name, arguments=call.get("args"), provider_details=details)


def _function_response(raw: dict[str, Json]) -> Part | None:
    response = raw["functionResponse"]
    if not isinstance(response, dict):
        return None
    call_id = response.get("id")
    if not isinstance(call_id, str | None):
        return None
    details = _rest(raw, "functionResponse")
    details.update(_rest(response, "id", "response"))
    return ToolCallResponsePart(
        id=call_id, response=response.get("response"), provider_details=details
    )


def modality_of(mime: str | None) -> str | None:
    kind = mime.partition("/")[0].lower() if mime else ""
    return kind if kind in ("image", "audio", "video") else None


def _inline_data(raw: dict[str, Json]) -> Part | None:
    blob = raw["inlineData"]
    data = blob.get("data") if isinstance(blob, dict) else None
    if not isinstance(blob, dict) or not isinstance(data, str):
        return None
    mime = blob.get("mimeType")
    mime = mime if isinstance(mime, str) else None
    details = _rest(raw, "inlineData")
    details.update(_rest(blob, "mimeType", "data"))
    return BlobPart(
        mime_type=mime, modality=modality_of(mime), content=data, provider_details=details
    )


def _file_data(raw: dict[str, Json]) -> Part | None:
    file = raw["fileData"]
    uri = file.get("fileUri") if isinstance(file, dict) else None
    if not isinstance(file, dict) or not isinstance(uri, str):
        return None
    mime = file.get("mimeType")
    mime = mime if isinstance(mime, str) else None
    details = _rest(raw, "fileData")
    details.update(_rest(file, "mimeType", "fileUri"))
    return UriPart(uri=uri, mime_type=mime, modality=modality_of(mime), provider_details=details)


def _executable_code(raw: dict[str, Json]) -> Part | None:
    code = raw["executableCode"]
    if not isinstance(code, dict):
        return None
    call_id = code.get("id")
    details = {"execution": "server", "part_type": "executableCode", **_rest(raw, "executableCode")}
    arguments = _rest(code, "id")
    return ToolCallPart(
        id=call_id if isinstance(call_id, str) else None,
        name=CODE_EXECUTION,
        arguments=arguments,
        provider_details=details,
    )


def _code_execution_result(raw: dict[str, Json]) -> Part | None:
    result = raw["codeExecutionResult"]
    if not isinstance(result, dict):
        return None
    call_id = result.get("id")
    details = {
        "execution": "server",
        "part_type": "codeExecutionResult",
        "name": CODE_EXECUTION,
        **_rest(raw, "codeExecutionResult"),
    }
    return ToolCallResponsePart(
        id=call_id if isinstance(call_id, str) else None,
        response=_rest(result, "id"),
        provider_details=details,
    )


def _tool_call(raw: dict[str, Json]) -> Part | None:
    """Gemini 3's hosted tool invocation ``toolCall {id, toolType, args}``."""
    call = raw["toolCall"]
    if not isinstance(call, dict):
        return None
    call_id, kind = call.get("id"), call.get("toolType")
    details = {"execution": "server", "part_type": "toolCall", **_rest(raw, "toolCall")}
    details.update(_rest(call, "id", "toolType", "args"))
    return ToolCallPart(
        id=call_id if isinstance(call_id, str) else None,
        name=kind if isinstance(kind, str) else None,
        arguments=call.get("args"),
        provider_details=details,
    )


def _tool_response(raw: dict[str, Json]) -> Part | None:
    """Its result, ``toolResponse {id, toolType, response}``."""
    response = raw["toolResponse"]
    if not isinstance(response, dict):
        return None
    call_id, kind = response.get("id"), response.get("toolType")
    details = {"execution": "server", "part_type": "toolResponse", **_rest(raw, "toolResponse")}
    if isinstance(kind, str):
        details["name"] = kind
    details.update(_rest(response, "id", "toolType", "response"))
    return ToolCallResponsePart(
        id=call_id if isinstance(call_id, str) else None,
        response=response.get("response"),
        provider_details=details,
    )


# the data field of a part decides its kind (first present wins)
_CONVERTERS: dict[str, Callable[[dict[str, Json]], Part | None]] = {
    "text": _text,
    "functionCall": _function_call,
    "functionResponse": _function_response,
    "inlineData": _inline_data,
    "fileData": _file_data,
    "executableCode": _executable_code,
    "codeExecutionResult": _code_execution_result,
    "toolCall": _tool_call,
    "toolResponse": _tool_response,
}


# -- usage and errors -------------------------------------------------------------------------


def usage_of(raw: dict[str, Json]) -> Usage:
    """``usageMetadata`` normalized (https://ai.google.dev/api/generate-content#UsageMetadata).

    ``promptTokenCount`` already includes ``cachedContentTokenCount`` (OTel's "input tokens
    include cached tokens"); ``toolUsePromptTokenCount`` (the results of hosted tools fed back
    to the model) is input too and is added. ``candidatesTokenCount`` excludes
    ``thoughtsTokenCount``; the normalized output adds them, as OpenAI counts reasoning among
    the completion tokens; ``reasoning_tokens`` is the thoughts count alone. ``raw`` keeps
    the vendor's numbers."""

    def count(name: str) -> int | None:
        value = raw.get(name)
        return value if is_int(value) else None

    prompt, tool_prompt = count("promptTokenCount"), count("toolUsePromptTokenCount")
    candidates, thoughts = count("candidatesTokenCount"), count("thoughtsTokenCount")
    input_tokens = (
        None if prompt is None and tool_prompt is None else (prompt or 0) + (tool_prompt or 0)
    )
    output = (
        None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    )
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output,
        cached_input_tokens=count("cachedContentTokenCount"),
        reasoning_tokens=thoughts,
        total_tokens=count("totalTokenCount"),
        raw=raw,
    )


def error_of(body: Json, status: int | None, source: str) -> CallError | None:
    """Google's error body ``{"error": {code, message, status, details}}``
    (https://cloud.google.com/apis/design/errors), also wrapped in a one-element list (as
    streams without ``alt=sse`` send it). ``type`` is the ``status`` name
    (``INVALID_ARGUMENT``), ``code`` the numeric code as a string."""
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    inner = body.get("error") if isinstance(body, dict) else None
    if not isinstance(inner, dict):
        return None
    kind, code, message = inner.get("status"), inner.get("code"), inner.get("message")
    return CallError(
        status=status,
        type=kind if isinstance(kind, str) else None,
        code=str(code) if is_int(code) or isinstance(code, str) else None,
        message=message if isinstance(message, str) else None,
        source=source,
    )
