"""Gemini Live turns the corpus logs do not have: interrupted, cut, no end."""

from __future__ import annotations

from agentshark.apis.gemini.live import is_live, live_calls
from tests.apis.openai.test_realtime import ids, session

SETUP = (0, {"setup": {"model": "models/gemini-live-x", "tools": []}})


def test_an_interrupted_turn_is_not_complete() -> None:
    ex = session(
        SETUP,
        (1, {"setupComplete": {"sessionId": "s1"}}),
        (
            0,
            {
                "clientContent": {
                    "turns": [{"role": "user", "parts": [{"text": "hi"}]}],
                    "turnComplete": True,
                }
            },
        ),
        (1, {"serverContent": {"modelTurn": {"parts": [{"text": "Hel"}]}}}),
        (1, {"serverContent": {"interrupted": True}}),
        (
            0,
            {
                "client_content": {
                    "turns": [{"role": "user", "parts": [{"text": "stop"}]}],
                    "turn_complete": True,
                }
            },
        ),
        (1, {"serverContent": {"modelTurn": {"parts": [{"text": "OK."}]}}}),
        (
            1,
            {
                "serverContent": {"turnComplete": True},
                "usageMetadata": {
                    "promptTokenCount": 9,
                    "responseTokenCount": 2,
                    "totalTokenCount": 11,
                },
            },
        ),
    )
    assert is_live(ex)
    first, second = live_calls(ex, ids())
    assert first.finish_reasons == ["interrupted"] and not first.complete
    assert second.complete and second.request_model == "gemini-live-x"
    assert second.ids["live_session_id"] == "s1"
    assert second.usage is not None and (second.usage.input_tokens, second.usage.output_tokens) == (
        9,
        2,
    )
    assert [p.content for m in second.output_messages for p in m.parts] == ["OK."]  # type: ignore[union-attr]


def test_a_lost_message_and_a_turn_without_end() -> None:
    ex = session(
        SETUP,
        (0, {"clientContent": {"turns": [], "turnComplete": True}}),
        (1, {"serverContent": {"modelTurn": {"parts": [{"text": "a"}]}}}),
        (1, {"serverContent": {"modelTurn": {"parts": [{"text": "b"}]}}}),
        (1, {"serverContent": {"turnComplete": True}}),
        (0, {"clientContent": {"turns": [], "turnComplete": True}}),
        cut=2,
    )
    first, second = live_calls(ex, ids())
    assert not first.complete and [d.code for d in first.diagnostics] == [
        "call.evidence_incomplete"
    ]
    assert not second.complete and [d.code for d in second.diagnostics] == ["live.turn_not_ended"]
