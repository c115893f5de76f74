"""The families of a WebSocket session read message by message: when each call is final
(given out, never changed after), and which family a session is, decided as early as the
messages allow."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agentshark.apis.model import BlobPart, Call
from agentshark.apis.websocket import SessionCalls
from agentshark.model import Exchange
from tests.apis.openai.test_realtime import ids, session


def _on(url: str, ex: Exchange) -> Exchange:
    assert ex.request is not None
    return replace(ex, request=replace(ex.request, url=url))


def _steps(ex: Exchange) -> tuple[list[list[str]], list[str], list[Call]]:
    """The call ids each message made final, those of the close, and every call."""
    reader = SessionCalls(ex, ids())
    steps = [[c.id for c in reader.feed([r])] for r in ex.messages or ()]
    closed = reader.close()
    return steps, [c.id for c in closed], closed


LIVE_URL = "wss://example.test/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
SETUP = (0, {"setup": {"model": "models/gemini-live-x"}})
ASK = (
    0,
    {
        "clientContent": {
            "turns": [{"role": "user", "parts": [{"text": "hi"}]}],
            "turnComplete": True,
        }
    },
)
USAGE = {"promptTokenCount": 3, "responseTokenCount": 1, "totalTokenCount": 4}


def test_a_live_turn_with_its_usage_is_final_at_turn_complete() -> None:
    ex = _on(
        LIVE_URL,
        session(
            SETUP,
            ASK,
            (1, {"serverContent": {"modelTurn": {"parts": [{"text": "Hi."}]}}}),
            (1, {"serverContent": {"turnComplete": True}, "usageMetadata": USAGE}),
            (1, {"usageMetadata": USAGE}),
            ASK,
        ),
    )
    steps, closed, _ = _steps(ex)
    assert steps == [[], [], [], ["call1"], [], []]
    assert closed == ["call2"]


def test_a_live_turn_without_usage_waits_for_it_until_the_next_turn() -> None:
    tool_call = {"toolCall": {"functionCalls": [{"id": "f1", "name": "get", "args": {}}]}}
    result = {"toolResponse": {"functionResponses": [{"id": "f1", "response": {"ok": 1}}]}}
    ex = _on(
        LIVE_URL,
        session(
            SETUP,
            ASK,
            (1, tool_call),
            (1, {"sessionResumptionUpdate": {"newHandle": "h"}}),
            (0, result),
            (1, {"serverContent": {"turnComplete": True}, "usageMetadata": USAGE}),
        ),
    )
    steps, closed, _ = _steps(ex)
    assert steps == [[], [], [], [], ["call1"], ["call2"]]
    assert closed == []


def test_a_live_usage_after_the_turn_was_final_is_said_not_added() -> None:
    ex = _on(
        LIVE_URL,
        session(
            SETUP,
            ASK,
            (1, {"serverContent": {"turnComplete": True}, "usageMetadata": USAGE}),
            (1, {"usageMetadata": {**USAGE, "totalTokenCount": 99}}),
            ASK,
        ),
    )
    reader = SessionCalls(ex, ids())
    calls = [c for r in ex.messages or () for c in reader.feed([r])] + reader.close()
    first, second = calls
    assert first.usage is not None and first.usage.total_tokens == 4
    assert "live.late_usage" in [d.code for d in second.diagnostics]


CREATED = (
    1,
    {
        "type": "session.created",
        "session": {"id": "s", "input_audio_transcription": {"model": "whisper-1"}},
    },
)


def _voice_turn(item: str, *, transcribed_at: int | None) -> list[tuple[int, dict[str, Any]]]:
    events: list[tuple[int, dict[str, Any]]] = [
        (0, {"type": "input_audio_buffer.append", "audio": "AAAA"}),
        (1, {"type": "input_audio_buffer.committed", "item_id": item}),
        (1, {"type": "response.created", "response": {"id": f"r{item}"}}),
        (1, {"type": "response.done", "response": {"id": f"r{item}", "status": "completed"}}),
    ]
    heard = (
        1,
        {
            "type": "conversation.item.input_audio_transcription.completed",
            "item_id": item,
            "transcript": f"said {item}",
        },
    )
    if transcribed_at is not None:
        events.insert(transcribed_at, heard)
    return events


def test_a_response_waits_for_the_transcription_its_session_asked_for() -> None:
    ex = session(
        CREATED, *_voice_turn("i1", transcribed_at=4), *_voice_turn("i2", transcribed_at=2)
    )
    steps, closed, _ = _steps(ex)
    # call1's response.done is message 4; its transcription (message 5) makes it final
    assert steps == [[], [], [], [], [], ["call1"], [], [], [], [], ["call2"]]
    assert closed == []


def test_a_transcription_after_the_next_response_started_is_said_not_added() -> None:
    late = (
        1,
        {
            "type": "conversation.item.input_audio_transcription.completed",
            "item_id": "i1",
            "transcript": "late",
        },
    )
    ex = session(
        CREATED, *_voice_turn("i1", transcribed_at=None), (0, {"type": "response.create"}), late
    )
    reader = SessionCalls(ex, ids())
    steps = [[c.id for c in reader.feed([r])] for r in ex.messages or ()]
    assert steps[5] == ["call1"]  # the next response.create ends the wait
    (second,) = reader.close()
    first_audio = [p for m in second.input_messages for p in m.parts if isinstance(p, BlobPart)]
    assert first_audio == []
    assert "realtime.late_transcription" in [d.code for d in second.diagnostics]


def test_a_live_session_is_told_at_its_setup_a_realtime_one_at_session_created() -> None:
    live = _on(LIVE_URL, session(SETUP, ASK))
    reader = SessionCalls(live, ids())
    reader.feed([live.messages[0]])  # type: ignore[index]
    assert reader.decided
    realtime = _on("ws://h/other", session((0, {"type": "session.update", "session": {}}), CREATED))
    reader = SessionCalls(realtime, ids())
    reader.feed([realtime.messages[0]])  # type: ignore[index]
    assert not reader.decided  # a client message that is no setup: the server's first says
    reader.feed([realtime.messages[1]])  # type: ignore[index]
    assert reader.decided
    neither = _on("ws://h/other", session((0, {"hello": 1}), (1, {"type": "welcome"})))
    reader = SessionCalls(neither, ids())
    assert reader.feed(neither.messages or []) == [] and reader.decided
