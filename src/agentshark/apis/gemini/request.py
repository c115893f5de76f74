"""A Gemini request body -> the request side of a call.

``GenerateContentRequest`` (https://ai.google.dev/api/generate-content#request-body):

- ``contents[]`` -> input messages (roles as :mod:`~agentshark.apis.gemini.parts` maps them);
- ``systemInstruction`` (a ``Content``; a bare string is accepted) -> system instructions;
- ``tools[]`` -> tool definitions, one per ``functionDeclarations`` entry
  (``{"type": "function", **declaration}``) and one per hosted tool, named by its key
  (``{"type": "googleSearch", ...config}``, ``codeExecution``, ``urlContext``,
  ``googleSearchRetrieval``, ``fileSearch``, ``googleMaps``, ``computerUse``...);
- ``generationConfig`` -> ``request_params``, one entry per field as sent (``temperature``,
  ``maxOutputTokens``, ``thinkingConfig``, ``responseSchema``, ``responseMimeType``...);
  ``toolConfig``, ``safetySettings``, ``cachedContent``, ``labels``, ``serviceTier`` too;
- ``model`` (countTokens' inner request and Code Assist put it in the body) -> request model.

Code Assist wraps the request: ``{"model", "project", "user_prompt_id", "request": {…}}``; the
outer fields go to ``request_params`` (``project``) and ids (``user_prompt_id``,
``session_id``). Fields with no normalized place go to ``extras["request"]``.
"""

from __future__ import annotations

from agentshark.apis.gemini.parts import camel, content_message, parts_of
from agentshark.apis.model import Call, Json, Message, Part, TextPart
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic

__all__ = ["parse_request", "tool_definitions"]

_PARAMS = frozenset(
    "toolConfig safetySettings cachedContent labels serviceTier mediaResolution".split()  # noqa: SIM905 - words read better
)
_IDS = {"user_prompt_id": "user_prompt_id", "session_id": "session_id"}


def parse_request(view: ExchangeView, call: Call) -> None:
    """The request body into ``call`` (see the module docstring)."""
    req = view.request_json
    extras: dict[str, Json] = {}
    if not isinstance(req, dict):
        if view.request_body:
            extras["body"] = view.request_body[:4096].decode("utf-8", "replace")
            call.diagnostics.append(
                Diagnostic(
                    code="gemini.request_not_json",
                    location=f"{view.exchange.id} request body",
                    message="the request body is not a JSON object: kept under extras.request",
                )
            )
        req = {}
    inner = req.get("request")
    if isinstance(inner, dict) and "contents" not in req:  # Code Assist's wrapper
        for key, value in req.items():
            if key == "request":
                continue
            _outer(key, value, call, extras, "$")
        _fields(inner, call, extras, "$.request")
    else:
        _fields(req, call, extras, "$")
    if extras:
        call.extras["request"] = extras


def _outer(key: str, value: Json, call: Call, extras: dict[str, Json], at: str) -> None:
    if key == "model" and isinstance(value, str):
        call.request_model = value.removeprefix("models/")
    elif key in _IDS and isinstance(value, str):
        call.ids[_IDS[key]] = value
        call.id_sources[_IDS[key]] = f"request body {at}.{key}"
    elif key == "project":
        call.request_params["project"] = value
    else:
        extras[key] = value


def _fields(req: dict[str, Json], call: Call, extras: dict[str, Json], at: str) -> None:
    for key, value in req.items():
        name = camel(key)
        if name == "contents":
            call.input_messages = _messages(value, extras)
        elif name == "systemInstruction":
            call.system_instructions = _system(value)
        elif name == "tools" and isinstance(value, list):
            call.tool_definitions = tool_definitions(value)
        elif name == "generationConfig" and isinstance(value, dict):
            call.request_params.update(value)
        elif name in _PARAMS:
            call.request_params[name] = value
        elif name == "generateContentRequest" and isinstance(value, dict):
            _fields(value, call, extras, f"{at}.generateContentRequest")  # countTokens
        else:
            _outer(key, value, call, extras, at)


def _messages(value: Json, extras: dict[str, Json]) -> list[Message]:
    """``contents``: a list of ``Content`` (a single object or string is taken too, as the
    SDKs accept it)."""
    if isinstance(value, dict | str):
        value = [value]
    if not isinstance(value, list):
        extras["contents"] = value
        return []
    out: list[Message] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            out.append(Message(role="user", parts=[TextPart(content=item)]))
            continue
        message = content_message(item, default_role=None)
        if message is None:
            extras[f"contents[{i}]"] = item
            continue
        out.append(message)
        assert isinstance(item, dict)
        for key, field in item.items():
            if key not in ("role", "parts"):
                extras[f"contents[{i}].{key}"] = field
    return out


def _system(value: Json) -> list[Part]:
    if isinstance(value, str):
        return [TextPart(content=value)]
    if isinstance(value, dict):
        return parts_of(value.get("parts"))
    return parts_of(value)


def tool_definitions(tools: list[Json]) -> list[Json]:
    """One definition per declared function, one per hosted tool (see the module docstring)."""
    out: list[Json] = []
    for tool in tools:
        if not isinstance(tool, dict):
            out.append(tool)
            continue
        for key, value in tool.items():
            if camel(key) == "functionDeclarations" and isinstance(value, list):
                out.extend(
                    {"type": "function", **decl} if isinstance(decl, dict) else decl
                    for decl in value
                )
            elif isinstance(value, dict):
                out.append({"type": key, **value})
            else:
                out.append({"type": key, "value": value})
    return out
