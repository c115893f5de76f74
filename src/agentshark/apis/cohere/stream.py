"""Cohere Chat streams: v2 over SSE, v1 as NDJSON -> the call's output.

v2 (https://docs.cohere.com/reference/chat-stream): ``message-start`` (the ``id``),
``content-start`` / ``content-delta`` / ``content-end`` per content ``index`` (``text`` or
``thinking``), ``tool-plan-delta``, ``tool-call-start`` (id, name, first arguments) /
``tool-call-delta`` (argument fragments) / ``tool-call-end`` per tool ``index``,
``citation-start`` / ``citation-end``, ``message-end`` (``finish_reason``, ``usage``, an
``error`` string), ``debug``; then ``data: [DONE]``. Deltas go through the shared
accumulator; arguments are concatenated and parsed once. The stream is whole only when
``message-end`` arrived; a ``message-end`` ``error`` is the call's error.

v1 (https://docs.cohere.com/v1/reference/chat-stream): ``stream-start``
(``generation_id``), ``text-generation``, ``citation-generation``, ``tool-calls-chunk``,
``tool-calls-generation`` (the whole tool calls), ``search-queries-generation``,
``search-results``, ``stream-end`` (``finish_reason`` and the whole ``response``). The
texts the deltas built are checked against ``stream-end``'s response (a mismatch is a
``stream.done_mismatch`` diagnostic, the final text kept); its usage and id are the call's.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from agentshark.apis.accumulate import PartsAccumulator
from agentshark.apis.cohere.messages import (
    attach_citations,
    usage_of,
    v1_tool_call,
)
from agentshark.apis.model import Call, CallError, Json, Message
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing.events import JsonDocument, SseEvent

_V2_KNOWN = frozenset(
    (
        *("message-start", "content-start", "content-delta", "content-end", "tool-plan-delta"),
        *("tool-call-start", "tool-call-delta", "tool-call-end", "citation-start"),
        *("citation-end", "message-end", "debug"),
    )
)


def _delta_message(event: dict[str, Json]) -> dict[str, Json]:
    delta = event.get("delta")
    message = delta.get("message") if isinstance(delta, dict) else None
    return message if isinstance(message, dict) else {}


def _str(value: Json) -> str | None:
    return value if isinstance(value, str) else None


def _events(
    view: ExchangeView, call: Call, cut: list[bool]
) -> Iterator[tuple[int, dict[str, Json], float]]:
    """The stream's JSON objects with their numbers and arrival times (SSE data or NDJSON
    lines); ``[DONE]`` and non-objects are skipped, the latter with a diagnostic."""
    n = 0
    for item in view.events:
        if isinstance(item, Diagnostic):
            call.diagnostics.append(item)
            continue
        if isinstance(item, SseEvent):
            raw: bytes | str = item.data
        elif isinstance(item, JsonDocument):
            raw = item.raw
        else:
            continue
        number = n
        n += 1
        if not item.complete:
            cut[0] = True
            continue
        if isinstance(raw, str) and raw.strip() == "[DONE]":
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            value, problem = None, f"is not JSON ({exc})"
        else:
            problem = "is JSON but not an object"
        if isinstance(value, dict):
            yield number, value, item.ts
            continue
        call.diagnostics.append(
            Diagnostic(
                code="cohere.bad_event",
                message=f"stream event {number} {problem}: skipped",
                location=f"{view.exchange.id} response body byte {item.offset}",
            )
        )


def parse_v2_stream(view: ExchangeView, call: Call) -> None:
    acc = PartsAccumulator(location=f"{view.exchange.id} response")
    citations: list[Json] = []
    cut = [False]
    ended = False
    finish: str | None = None
    role: str | None = None
    unknown: dict[str, int] = {}
    for n, event, ts in _events(view, call, cut):
        kind = _str(event.get("type"))  # a type that is not a string is an unknown event
        message = _delta_message(event)
        index = event.get("index")
        key = index if isinstance(index, int) and not isinstance(index, bool) else -1
        if kind == "message-start":
            if isinstance(event.get("id"), str) and call.response_id is None:
                call.response_id = event["id"] or None
            role = _str(message.get("role")) or role
        elif kind in ("content-start", "content-delta"):
            content = message.get("content")
            if isinstance(content, dict):
                if isinstance(content.get("thinking"), str):
                    acc.reasoning(("content", key), content["thinking"])
                elif isinstance(content.get("text"), str):
                    acc.text(("content", key), content["text"])
                if (
                    content.get("text") or content.get("thinking")
                ) and call.timing.first_token is None:
                    call.timing.first_token = ts
        elif kind == "tool-plan-delta":
            plan = message.get("tool_plan")
            if isinstance(plan, str):
                acc.reasoning("tool_plan", plan)
                acc.details("tool_plan", "reasoning", field="tool_plan")
        elif kind in ("tool-call-start", "tool-call-delta"):
            _tool_delta(
                acc, ("tool", key), message.get("tool_calls"), start=kind == "tool-call-start"
            )
            if call.timing.first_token is None:
                call.timing.first_token = ts
        elif kind == "citation-start":
            cited = message.get("citations")
            if cited is not None:
                citations.append(cited)
        elif kind == "message-end":
            ended = True
            delta = event.get("delta")
            delta = delta if isinstance(delta, dict) else {}
            finish = _str(delta.get("finish_reason")) or None
            call.usage = usage_of(delta.get("usage"))
            if delta.get("error") is not None:
                error = delta["error"]
                call.error = CallError(
                    status=None,
                    type=None,
                    code=None,
                    message=error if isinstance(error, str) else str(error),
                    source=f"stream event {n}",
                )
        elif kind is None or kind not in _V2_KNOWN:
            name = kind if kind is not None else repr(event.get("type"))[:40]
            unknown[name] = unknown.get(name, 0) + 1
    parts = acc.parts()
    call.diagnostics.extend(acc.diagnostics)
    if citations:
        attach_citations(parts, citations)
    if parts or ended:
        call.output_messages.append(Message(role=role, parts=parts, finish_reason=finish))
    if unknown:
        call.extras["unknown_events"] = unknown
    _end(view, call, ended and not cut[0], "message-end")


def _tool_delta(acc: PartsAccumulator, key: tuple[str, int], raw: Json, *, start: bool) -> None:
    tool = raw if isinstance(raw, dict) else {}
    function = tool.get("function")
    function = function if isinstance(function, dict) else {}
    if start:
        extra = {k: v for k, v in tool.items() if k not in ("id", "function")}
        acc.tool_call(key, id=_str(tool.get("id")), name=_str(function.get("name")), **extra)
    arguments = function.get("arguments")
    if isinstance(arguments, str) and (arguments or start):
        acc.arguments(key, arguments)


def parse_v1_stream(view: ExchangeView, call: Call) -> None:
    acc = PartsAccumulator(location=f"{view.exchange.id} response")
    cut = [False]
    ended = False
    final: dict[str, Json] | None = None
    finish: str | None = None
    citations: list[Json] = []
    tools: list[Json] = []
    for _, event, ts in _events(view, call, cut):
        kind = event.get("event_type")
        if kind == "stream-start" and isinstance(event.get("generation_id"), str):
            call.extras["generation_id"] = event["generation_id"]
        elif kind == "text-generation" and isinstance(event.get("text"), str):
            acc.text("text", event["text"])
            if event["text"] and call.timing.first_token is None:
                call.timing.first_token = ts
        elif kind == "citation-generation" and isinstance(event.get("citations"), list):
            citations.extend(event["citations"])
        elif kind == "tool-calls-generation" and isinstance(event.get("tool_calls"), list):
            tools.extend(event["tool_calls"])
            if call.timing.first_token is None:
                call.timing.first_token = ts
        elif kind in ("search-queries-generation", "search-results"):
            call.extras.setdefault("search", []).append(event)
        elif kind == "stream-end":
            ended = True
            finish = _str(event.get("finish_reason")) or None
            response = event.get("response")
            final = response if isinstance(response, dict) else None
    if final is not None and isinstance(final.get("text"), str) and (final["text"] or acc):
        acc.done("text", text=final["text"])
    parts = acc.parts()
    call.diagnostics.extend(acc.diagnostics)
    parts.extend(v1_tool_call(t) for t in tools)
    if citations:
        attach_citations(parts, citations)
    if parts or ended:
        call.output_messages.append(Message(role="CHATBOT", parts=parts, finish_reason=finish))
    if final is not None:
        response_id = final.get("response_id")
        call.response_id = response_id if isinstance(response_id, str) and response_id else None
        call.usage = usage_of(final.get("meta"))
    _end(view, call, ended and not cut[0], "stream-end")


def _end(view: ExchangeView, call: Call, ended: bool, last: str) -> None:
    call.complete = view.exchange.complete and ended
    if view.exchange.complete and not ended:
        call.diagnostics.append(
            Diagnostic(
                code="cohere.unfinished",
                message=f"the stream ended without its {last} event",
                location=f"{view.exchange.id} response body",
            )
        )
