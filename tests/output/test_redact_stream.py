"""Secrets split across stream events are found by reading the deltas joined."""

from __future__ import annotations

import orjson

from agentshark.output.redact import NO_REDACTION, REDACTION
from agentshark.output.redact_stream import redact_split

KEY = "sk-proj-Ab3dEf6hIj9kLmNoPqRsTuVwXyZ012345"  # fake


def _anthropic(chunks: list[str]) -> list[dict[str, object]]:
    return [
        {
            "type": "sse",
            "event": "content_block_delta",
            "data": orjson.dumps(
                {"type": "content_block_delta", "delta": {"type": "text_delta", "text": c}}
            ).decode(),
        }
        for c in chunks
    ]


def test_a_key_streamed_in_pieces_is_redacted_in_every_piece() -> None:
    events = _anthropic(["Your key is ", KEY[:5], KEY[5:12], KEY[12:30], KEY[30:], " ok."])
    out = REDACTION.json(REDACTION.events(events))
    texts = [orjson.loads(e["data"])["delta"]["text"] for e in out]
    assert texts[0] == "Your key is " and texts[-1] == " ok."
    assert texts[1].startswith("[REDACTED sk-proj-… 32+:")
    assert texts[2:5] == ["[REDACTED …]"] * 3
    assert not any(KEY[5:12] in e["data"] or KEY[30:] in e["data"] for e in out)
    assert texts[1] == REDACTION.text(KEY)  # the mark of the whole key, as anywhere else


def test_streamed_tool_arguments_with_a_named_credential() -> None:
    args = '{"password": "hunter2xyz", "city": "Paris"}'
    pieces = [args[:8], args[8:17], args[17:]]
    events = [
        {
            "type": "sse",
            "data": orjson.dumps(
                {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": p}}]}}]}
            ).decode(),
        }
        for p in pieces
    ]
    out = REDACTION.json(REDACTION.events(events))
    joined = "".join(
        orjson.loads(e["data"])["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        for e in out
    )
    assert "hunter" not in joined and '"city": "Paris"' in joined


def test_events_without_split_secrets_are_untouched() -> None:
    events = _anthropic(["Hello", " world, ", "the max_tokens was 100"])
    assert redact_split(events) == events
    one = _anthropic([f"inside one event {KEY}", " next"])
    assert redact_split(one) == one  # left to the event's own redaction
    split = _anthropic([KEY[:20], KEY[20:]])
    assert NO_REDACTION.events(split) is split
