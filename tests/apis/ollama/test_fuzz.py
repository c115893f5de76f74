"""The invariant for the dialect families (Ollama native, Cohere v1/v2): any JSON in the
request, in a whole body or in each line / event of a stream, gives a call (or none) and
diagnostics, never an exception; a call that says it is complete saw its terminal line or
event. Values are shaped like the APIs' own objects so the parsers' deeper paths run."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.apis.registry import recognize
from tests.helpers import http_exchange

KEYS = st.sampled_from(
    [
        *("model", "message", "messages", "content", "thinking", "tool_calls", "function"),
        *("arguments", "name", "images", "done", "done_reason", "eval_count", "response"),
        *("prompt_eval_count", "role", "error", "type", "delta", "index", "tool_plan"),
        *("finish_reason", "usage", "tokens", "billed_units", "text", "event_type", "id"),
        *("citations", "stream", "tool_name", "tool_call_id", "is_finished"),
    ]
)
JSON: Any = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=16,
)
EVENTS = st.sampled_from(
    [
        *("message-start", "content-start", "content-delta", "tool-plan-delta"),
        *("tool-call-start", "tool-call-delta", "citation-start", "message-end", "x"),
    ]
)


def _check(url: str, request: Any, body: bytes, content_type: str) -> None:
    ex = http_exchange(
        method="POST",
        url=url,
        target="/" + url.split("/", 3)[3],
        request_body=orjson.dumps(request),
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, body)],
        response_headers=[("content-type", content_type)],
    )
    call = recognize(ex, "k1")
    if call is None:
        return
    orjson.dumps(call.to_json())
    if call.complete and call.stream and call.error is None and call.api == "ollama.chat":
        assert b'"done":true' in body


@settings(max_examples=150, deadline=None)
@given(JSON, st.lists(JSON, max_size=5), st.booleans())
def test_ollama_any_json_lines(request: Any, lines: list[Any], done: bool) -> None:
    tail = [{"done": True, "done_reason": "stop"}] if done else []
    body = b"".join(orjson.dumps(v) + b"\n" for v in [*lines, *tail])
    for path in ("/api/chat", "/api/generate"):
        _check("http://127.0.0.1:11434" + path, request, body, "application/x-ndjson")
        if lines:
            _check(
                "http://127.0.0.1:11434" + path, request, orjson.dumps(lines[0]), "application/json"
            )


@settings(max_examples=150, deadline=None)
@given(JSON, st.lists(st.tuples(EVENTS, JSON), max_size=5))
def test_cohere_any_json_events(request: Any, events: list[tuple[str, Any]]) -> None:
    sse = b"".join(
        b"event: " + name.encode() + b"\ndata: " + orjson.dumps(value) + b"\n\n"
        for name, value in events
    )
    _check("https://api.cohere.com/v2/chat", request, sse, "text/event-stream")
    lines = b"".join(orjson.dumps(v) + b"\n" for _, v in events)
    _check("https://api.cohere.com/v1/chat", request, lines, "application/stream+json")
    if events:
        _check(
            "https://api.cohere.com/v2/chat",
            request,
            orjson.dumps(events[0][1]),
            "application/json",
        )
