"""OpenAI Responses API: an exchange on ``/v1/responses`` -> a normalized :class:`Call`.

Spec: https://platform.openai.com/docs/api-reference/responses (seed 001, seed 000 §3.4-3.6,
§4.2, §7.7). Recognized by shape: a request with ``input`` (a string or items) and/or
``instructions``, a response ``{"object": "response", "output": [...]}`` or a stream of
``response.*`` events; the ``/responses`` path (also Azure's ``/openai/v1/responses`` and
``/openai/responses?api-version=``) helps; a Chat (``messages``) or Gemini (``contents``)
body is never ours.

Calls are ``api="openai.responses"`` with ``operation``: ``"chat"`` for ``POST /responses``
(the OTel GenAI operation name for chat-like generation), ``"retrieve"``, ``"delete"``,
``"cancel"``, ``"input_items.list"`` for ``/responses/{id}[/...]``, ``"compact"`` and
``"count_tokens"`` for ``/responses/compact`` and ``/responses/input_tokens``. The
Conversations API (``/conversations...``) is ``api="openai.conversations"``, parsed for its
ids and items only.

Finish reasons are raw: Responses has no finish_reason field, so a call's finish reason is
the response ``status`` as sent (``"completed"``, ``"failed"``, ``"cancelled"``), or for
``"incomplete"`` its ``incomplete_details.reason`` (``"max_output_tokens"``,
``"content_filter"``); a response still ``queued`` or ``in_progress`` has none. Items become
messages as :mod:`agentshark.apis.openai.responses_items` says; streams are assembled by
:mod:`agentshark.apis.openai.responses_stream`.
"""

from __future__ import annotations

import re
from typing import Any, TypeGuard

from agentshark.apis.model import Call, Json, TextPart, Usage
from agentshark.apis.openai.common import (
    app_ids,
    error_from_json,
    http_error,
    provider_name,
    usage_from,
)
from agentshark.apis.openai.responses_items import content_parts, item_messages
from agentshark.apis.openai.responses_stream import assemble
from agentshark.apis.view import ExchangeView

OPERATION_CREATE = "chat"
RESPONSE_OBJECTS = frozenset({"response", "response.compaction", "response.input_tokens"})

# Request fields normalized elsewhere, the rest of the known ones go to request_params.
_STRUCTURE = frozenset({"model", "input", "instructions", "tools", "stream"})
_ID_FIELDS = frozenset(
    {"previous_response_id", "conversation", "metadata", "user", "safety_identifier"}
)
PARAMS = (
    "temperature",
    "top_p",
    "top_logprobs",
    "max_output_tokens",
    "max_tool_calls",
    "tool_choice",
    "parallel_tool_calls",
    "text",
    "reasoning",
    "truncation",
    "store",
    "background",
    "service_tier",
    "include",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_retention",
    "stream_options",
)
_KNOWN = _STRUCTURE | _ID_FIELDS | frozenset(PARAMS)
# Fields of a create request that no other OpenAI-style API sends.
_RESPONSES_ONLY = frozenset(
    {
        "instructions",
        "previous_response_id",
        "conversation",
        "max_output_tokens",
        "reasoning",
        "text",
        "include",
        "truncation",
        "background",
        "store",
    }
)
# Response fields not kept in extras: normalized, or echoes of the request.
_RESPONSE_DONE = frozenset(
    {"id", "object", "model", "output", "usage", "error", "tools", "instructions"}
)
_STREAM_HEAD = re.compile(rb'event: ?response\.|"type" ?: ?"response\.')


class ResponsesFamily:
    """``openai.responses``: create (plain or streamed), retrieve, cancel, compact, count."""

    api = "openai.responses"

    def match(self, view: ExchangeView) -> float:
        op = responses_operation(view.path, view.method)
        req = view.request_json
        if isinstance(req, dict) and ("messages" in req or "contents" in req):
            return -1.0
        score = 0.0
        if op is not None:
            score += 0.3
        if isinstance(req, dict) and isinstance(req.get("input"), str | list):
            score += 0.3 if _RESPONSES_ONLY.intersection(req) else 0.1
        elif isinstance(req, dict) and isinstance(req.get("instructions"), str):
            score += 0.2
        if _response_shaped(view):
            score += 0.5
        elif op is None and score < 0.3:
            return 0.0  # an "input" body alone is embeddings or moderations as well
        return score

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.provider = provider(view, view.response_json)
        call.operation = _operation(view)
        req = view.request_json
        if isinstance(req, dict):
            parse_request(req, call)
        path_id = _path_id(view.path, "responses")
        if path_id is not None:
            call.response_id = path_id
        if view.framing == "sse" and (view.status or 200) < 400:
            parse_stream(view, call)
            return
        resp = view.exchange.response
        body = view.response_json
        call.complete = resp is not None and resp.complete
        if view.status is not None and view.status >= 400:
            call.error = http_error(view, view.response_json)
        elif isinstance(body, dict) and body.get("object") == "response.input_tokens":
            tokens = body.get("input_tokens")
            call.usage = Usage(
                input_tokens=tokens if isinstance(tokens, int) else None,
                raw={"input_tokens": tokens},
            )
        elif isinstance(body, dict) and ("output" in body or body.get("object") == "response"):
            reason = apply_response(body, call, "response body $")
            output = body.get("output")
            call.output_messages = (
                item_messages(output, output=True) if isinstance(output, list) else []
            )
            set_finish_reason(call, reason)
        elif isinstance(body, dict) and body.get("object") == "list" and "data" in body:
            call.input_messages = item_messages(body["data"] or [])  # input_items.list
        elif body is not None:
            call.extras["response"] = body
        elif view.response_body:
            call.complete = False  # a body we cannot read is no evidence of a whole call


class ConversationsFamily:
    """``openai.conversations``: create, retrieve, update, delete and their items; the
    conversation id and the items sent are kept, the rest as extras."""

    api = "openai.conversations"

    def match(self, view: ExchangeView) -> float:
        if conversations_operation(view.path, view.method) is None:
            return 0.0
        body = view.response_json
        req = view.request_json
        if isinstance(body, dict) and str(body.get("object", "")).startswith("conversation"):
            return 0.6
        if isinstance(req, dict) and isinstance(req.get("items"), list):
            return 0.3
        return 0.2 if "openai" in view.host else 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.provider = provider(view, view.response_json)
        call.operation = conversations_operation(view.path, view.method)
        resp = view.exchange.response
        call.complete = resp is not None and resp.complete
        body = view.response_json
        conv_id = _path_id(view.path, "conversations")
        if conv_id is not None:
            _set_id(call, "conversation_id", conv_id, "request path")
        elif _is_conversation(body):
            _set_id(call, "conversation_id", body["id"], "response body $.id")
        req = view.request_json
        if isinstance(req, dict):
            if isinstance(req.get("items"), list):
                call.input_messages = item_messages(req["items"])
            rest = {k: v for k, v in req.items() if k != "items"}
            if rest:
                call.extras["request"] = rest
        if view.status is not None and view.status >= 400:
            call.error = http_error(view, view.response_json)
        elif body is not None:
            call.extras["response"] = body


def _is_conversation(body: Json) -> TypeGuard[dict[str, Any]]:
    return (
        isinstance(body, dict)
        and body.get("object") == "conversation"
        and isinstance(body.get("id"), str)
    )


FAMILIES = (ResponsesFamily(), ConversationsFamily())


# -- recognition helpers ---------------------------------------------------------------------


def responses_operation(path: str, method: str) -> str | None:
    """The operation a ``.../responses[/...]`` path and its method name, or None: for other
    paths, and for a path or method the API does not define (``GET /responses``, ``POST
    /responses/{id}/input_items``, ``/responses/{id}/other``). The endpoints
    (https://platform.openai.com/docs/api-reference/responses): ``POST /responses``,
    ``GET`` and ``DELETE /responses/{id}``, ``POST /responses/{id}/cancel``, ``GET
    /responses/{id}/input_items``, ``POST /responses/input_tokens`` and ``/compact``. An
    empty method (a source that does not say) is taken for the endpoint's own."""
    segs = path.rstrip("/").split("/")
    try:
        i = len(segs) - 1 - segs[::-1].index("responses")
    except ValueError:
        return None
    rest = segs[i + 1 :]
    if not rest:
        key: tuple[str, ...] = ()
    elif rest[0] in ("input_tokens", "compact") and len(rest) == 1:
        key = (rest[0],)
    elif len(rest) == 1:
        key = ("{id}",)
    else:
        key = ("{id}", *rest[1:])
    ops = _RESPONSES_ENDPOINTS.get(key, {})
    if method == "" and len(ops) == 1:
        return next(iter(ops.values()))
    return ops.get(method.upper())


_RESPONSES_ENDPOINTS: dict[tuple[str, ...], dict[str, str]] = {
    (): {"POST": OPERATION_CREATE},
    ("input_tokens",): {"POST": "count_tokens"},
    ("compact",): {"POST": "compact"},
    ("{id}",): {"GET": "retrieve", "DELETE": "delete"},
    ("{id}", "cancel"): {"POST": "cancel"},
    ("{id}", "input_items"): {"GET": "input_items.list"},
}


def _operation(view: ExchangeView) -> str | None:
    """The call's operation: what its path names; on a path that names none (a gateway's
    own path), ``chat`` when a POST body asks for a response (``input`` or
    ``instructions``), the evidence that it is a create; else None, never a guess."""
    op = responses_operation(view.path, view.method)
    if op is not None or "responses" in view.path.rstrip("/").split("/"):
        return op
    req = view.request_json
    create = isinstance(req, dict) and ("input" in req or "instructions" in req)
    return OPERATION_CREATE if create and view.method.upper() in ("POST", "") else None


def conversations_operation(path: str, method: str) -> str | None:
    segs = path.rstrip("/").split("/")
    if "conversations" not in segs:
        return None
    rest = segs[segs.index("conversations") + 1 :]
    verbs = {"GET": "retrieve", "POST": "update", "DELETE": "delete"}
    if not rest:
        return "create" if method == "POST" else None
    if len(rest) == 1:
        return verbs.get(method)
    if rest[1] == "items" and len(rest) <= 3:
        if len(rest) == 2:
            return {"GET": "items.list", "POST": "items.create"}.get(method)
        return {"GET": "items.retrieve", "DELETE": "items.delete"}.get(method)
    return None


def _response_shaped(view: ExchangeView) -> bool:
    if view.framing == "sse":
        return _STREAM_HEAD.search(view.response_body, 0, 2048) is not None
    body = view.response_json
    if not isinstance(body, dict):
        return False
    obj = body.get("object")
    return (isinstance(obj, str) and obj in RESPONSE_OBJECTS) or (
        isinstance(body.get("output"), list) and "choices" not in body
    )


def _path_id(path: str, collection: str) -> str | None:
    segs = path.rstrip("/").split("/")
    if collection not in segs:
        return None
    i = len(segs) - 1 - segs[::-1].index(collection)
    if i + 1 < len(segs) and segs[i + 1] not in ("input_tokens", "compact"):
        return segs[i + 1]
    return None


def provider(view: ExchangeView, body: Json) -> str | None:
    """The service (``openai_common.provider_name``); an ``api-version`` query on a host
    that names no provider is Azure's ``/openai/responses?api-version=`` route."""
    name = provider_name(view, body)
    if "api-version=" in view.query and name in (None, "openai", view.host):
        return "azure.openai"
    return name


# -- request ---------------------------------------------------------------------------------


def parse_request(req: dict[str, Any], call: Call) -> None:
    model = req.get("model")
    call.request_model = model if isinstance(model, str) else None
    call.stream = req.get("stream") is True
    instructions = req.get("instructions")
    if isinstance(instructions, str):
        call.system_instructions = [TextPart(content=instructions)]
    elif isinstance(instructions, list):  # input items (prompt templates)
        call.system_instructions = [p for m in item_messages(instructions) for p in m.parts]
    inp = req.get("input")
    if isinstance(inp, str):
        call.input_messages = item_messages([{"role": "user", "content": inp}])
    elif isinstance(inp, list):
        call.input_messages = item_messages(inp)
    tools = req.get("tools")
    if isinstance(tools, list):
        call.tool_definitions = tools
    call.request_params = {k: req[k] for k in PARAMS if k in req}
    prev = req.get("previous_response_id")
    if isinstance(prev, str):
        _set_id(call, "previous_response_id", prev, "request body $.previous_response_id")
    conv = req.get("conversation")
    if isinstance(conv, str):
        _set_id(call, "conversation_id", conv, "request body $.conversation")
    elif isinstance(conv, dict) and isinstance(conv.get("id"), str):
        _set_id(call, "conversation_id", conv["id"], "request body $.conversation.id")
    app_ids(req, call)
    unknown = {k: v for k, v in req.items() if k not in _KNOWN}
    if unknown:
        call.extras["request"] = unknown


def _set_id(call: Call, name: str, value: str, source: str) -> None:
    call.ids[name] = value
    call.id_sources[name] = source


# -- response --------------------------------------------------------------------------------


def apply_response(resp: dict[str, Any], call: Call, where: str) -> str | None:
    """Fill the call from a Response object (``where``: its JSON path root, for sources);
    returns its finish reason. Output items are the caller's: a stream checks them first."""
    if isinstance(resp.get("id"), str):
        call.response_id = resp["id"]
    if isinstance(resp.get("model"), str):
        call.response_model = resp["model"]
    usage = resp.get("usage")
    if isinstance(usage, dict):
        call.usage = usage_from(usage)
    error = resp.get("error")
    if isinstance(error, dict) and call.error is None:
        call.error = error_from_json({"error": error}, None, f"{where}.error")
    conv = resp.get("conversation")
    if (
        isinstance(conv, dict)
        and isinstance(conv.get("id"), str)
        and "conversation_id" not in (call.ids)
    ):
        _set_id(call, "conversation_id", conv["id"], f"{where}.conversation.id")
    prev = resp.get("previous_response_id")
    if isinstance(prev, str) and "previous_response_id" not in call.ids:
        _set_id(call, "previous_response_id", prev, f"{where}.previous_response_id")
    if not call.system_instructions and isinstance(resp.get("instructions"), str):
        call.system_instructions = content_parts(resp["instructions"])  # a retrieve: no request
    if not call.tool_definitions and isinstance(resp.get("tools"), list):
        call.tool_definitions = resp["tools"]
    rest = {k: v for k, v in resp.items() if k not in _RESPONSE_DONE and v is not None}
    if rest:
        call.extras["response"] = rest
    return finish_reason(resp)


def finish_reason(resp: dict[str, Any]) -> str | None:
    """The raw finish reason of a Response: its terminal status, or why it is incomplete."""
    status = resp.get("status")
    if status == "incomplete":
        details = resp.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return reason if isinstance(reason, str) else status
    if isinstance(status, str) and status not in ("in_progress", "queued"):
        return status
    return None


def set_finish_reason(call: Call, reason: str | None) -> None:
    call.finish_reasons = [reason] if reason is not None else []
    for message in call.output_messages:
        message.finish_reason = reason


def parse_stream(view: ExchangeView, call: Call) -> None:
    """A streamed response: the terminal event's response (else the last lifecycle one)
    for ids, usage and status, the assembled items for the output."""
    call.stream = True
    got = assemble(view.events, f"{view.exchange.id} response body")
    call.diagnostics.extend(got.diagnostics)
    call.timing.first_token = got.first_token
    call.error = got.error
    if got.snapshot is not None:
        apply_response(got.snapshot, call, f"stream event {got.snapshot_event} $.response")
    reason = None
    if got.response is not None:
        where = f"stream event {got.terminal_event} $.response"
        reason = apply_response(got.response, call, where)
    call.output_messages = got.output
    set_finish_reason(call, reason)
    resp = view.exchange.response
    call.complete = got.terminated and resp is not None and resp.complete
