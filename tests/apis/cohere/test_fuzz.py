"""Findings of the fuzz campaign (scripts/fuzz_campaign.py, targets api_cohere and
api_ollama) in the dialect families, kept as regression tests: JSON of any shape in a stream
event is evidence or nothing, never an exception."""

from __future__ import annotations

import orjson
import pytest

from agentshark.apis.registry import recognize
from tests.helpers import http_exchange


@pytest.mark.parametrize(
    "event",
    [
        # campaign target api_cohere: an event type that is an object (unhashable)
        {"type": {"a": 1}, "delta": {}},
        {"type": ["message-end"]},
        {"type": "content-delta", "index": {"i": 0}, "delta": {"message": {"content": []}}},
        {"type": "tool-call-delta", "index": True, "delta": {"message": {"tool_calls": 5}}},
    ],
)
def test_v2_stream_events_of_any_shape(event: object) -> None:
    body = (
        b'event: message-start\ndata: {"id":"x","type":"message-start"}\n\n'
        b"data: " + orjson.dumps(event) + b"\n\n"
    )
    ex = http_exchange(
        method="POST",
        url="https://api.cohere.com/v2/chat",
        target="/v2/chat",
        request_body=b'{"model":"command-a","messages":[],"stream":true}',
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, body)],
        response_headers=[("content-type", "text/event-stream")],
    )
    call = recognize(ex, "k1")
    assert call is not None and call.api == "cohere.chat" and not call.complete
    orjson.dumps(call.to_json())


def test_a_float_count_too_big_for_an_integer_is_not_a_count() -> None:
    # campaign target api_cohere: usage.tokens.input_tokens 1e300 became an int that no JSON
    # writer takes
    body = (
        b'{"id":"x","message":{"role":"assistant","content":[]},"finish_reason":"COMPLETE",'
        b'"usage":{"tokens":{"input_tokens":1e300,"output_tokens":2.0}}}'
    )
    ex = http_exchange(
        method="POST",
        url="https://api.cohere.com/v2/chat",
        target="/v2/chat",
        request_body=b'{"model":"command-a","messages":[]}',
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, body)],
        response_headers=[("content-type", "application/json")],
    )
    call = recognize(ex, "k1")
    assert call is not None and call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens) == (None, 2)
    orjson.dumps(call.to_json())
