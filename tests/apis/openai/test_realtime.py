"""OpenAI Realtime over WebSocket: calls against what the openai SDK itself parsed (the
captures of scripts/make_ws_captures.py) and against the shared websockets capture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentshark.apis.model import BlobPart, Call, TextPart, ToolCallPart, ToolCallResponsePart
from agentshark.apis.openai.realtime import is_realtime, session_calls
from agentshark.errors import Diagnostic
from agentshark.framing.websocket import TEXT, WsMessage
from agentshark.model import Body, Exchange, Request, Response, WsRecord
from agentshark.pipeline import Options, run
from agentshark.trace.build import build_traces
from agentshark.trace.history import link_history
from tests.helpers import CAPTURES, ROOT

OWN = ROOT / "tests" / "data" / "captures"
SDK_CASES = (
    "ws_sdk_realtime_plain",
    "ws_sdk_realtime_deflate",
    "ws_sdk_realtime_nocontext",
    "ws_sdk_realtime_tls13",
)


def calls_of(path: Path, keylog: Path | None = None) -> list[Call]:
    opts = Options(calls=True, keylogs=[str(keylog)] if keylog else ())
    return [it for it in run([str(path)], opts) if isinstance(it, Call)]


def sdk_calls(name: str) -> tuple[list[Call], dict[str, Any]]:
    folder = OWN / name
    keylog = folder / "keys.log"
    truth = json.loads((folder / "truth.json").read_text())
    return calls_of(folder / "capture.pcap", keylog if keylog.exists() else None), truth


def _received(truth: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in truth["received"] if e["type"] == kind]


@pytest.mark.parametrize("name", SDK_CASES)
def test_calls_agree_with_the_sdk(name: str) -> None:
    calls, truth = sdk_calls(name)
    done = _received(truth, "response.done")
    assert len(calls) == len(done) == 2
    for call, want in zip(calls, done, strict=True):
        assert call.api == "openai.realtime" and call.provider == "127.0.0.1"  # a local server
        assert call.complete and call.stream and not call.diagnostics
        assert call.response_id == want["response"]["id"]
        assert call.finish_reasons == [want["response"]["status"]]
        assert call.usage is not None
        usage = {"input_tokens": call.usage.input_tokens, "output_tokens": call.usage.output_tokens}
        assert usage == want["response"]["usage"]
        assert call.request_model == "gpt-realtime-workshop"
        assert [p.content for p in call.system_instructions if isinstance(p, TextPart)] == [
            "You are a weather agent. Answer briefly."
        ]
        assert [t["name"] for t in call.tool_definitions] == ["get_weather"]
    first, second = calls
    # the first response: the user's question in, a function call out
    assert [
        p.content for m in first.input_messages for p in m.parts if isinstance(p, TextPart)
    ] == ["What is the weather in Shenzhen?"]
    (args_done,) = _received(truth, "response.function_call_arguments.done")
    deltas = [e["delta"] for e in _received(truth, "response.function_call_arguments.delta")]
    (tool,) = [p for m in first.output_messages for p in m.parts if isinstance(p, ToolCallPart)]
    assert (tool.id, tool.name) == (args_done["call_id"], args_done["name"])
    assert tool.arguments_raw == args_done["arguments"] == "".join(deltas)
    assert tool.arguments == json.loads(args_done["arguments"])
    # the second: the function's output in, audio and its transcript out
    (result,) = [
        p for m in second.input_messages for p in m.parts if isinstance(p, ToolCallResponsePart)
    ]
    assert result.id == tool.id and result.response == {"temperature_c": 24, "sky": "sunny"}
    (blob,) = [p for m in second.output_messages for p in m.parts if isinstance(p, BlobPart)]
    audio = _received(truth, "response.output_audio.delta")
    assert blob.provider_details["bytes"] == sum(e["delta"]["pcm_bytes"] for e in audio)
    assert blob.provider_details["duration_s"] == pytest.approx(6144 / 2 / 24000, abs=0.001)
    (transcript,) = _received(truth, "response.output_audio_transcript.done")
    texts = [p.content for m in second.output_messages for p in m.parts if isinstance(p, TextPart)]
    assert texts == [transcript["transcript"]]
    assert second.request_params == {"output_modalities": ["audio"]}


def test_the_session_is_one_trace_with_its_tool_span() -> None:
    calls, _ = sdk_calls("ws_sdk_realtime_deflate")
    (trace,) = build_traces(calls, link_history(calls))
    kinds = [s.kind for s in trace.spans]
    assert kinds.count("model") == 2 and kinds.count("tool") == 1
    (tool,) = [s for s in trace.spans if s.kind == "tool"]
    assert tool.tool_call_id == "call_weather1"
    assert tool.requested_by == "call1" and tool.result_in == "call2"


def test_beta_event_names_of_the_shared_capture() -> None:
    path = CAPTURES / "ws_realtime_plain" / "capture.pcap"
    truth = json.loads((CAPTURES / "ws_realtime_plain" / "truth.json").read_text())
    (call,) = calls_of(path)
    exchanges = [it for it in run([str(path)]) if isinstance(it, Exchange)]
    assert exchanges[0].messages is not None
    events = [
        json.loads(r.message.payload)
        for r in exchanges[0].messages
        if r.message.direction == 1 and r.message.opcode == TEXT and r.message.payload
    ]
    deltas = [e["delta"] for e in events if e["type"] == "response.text.delta"]
    assert len(deltas) == truth["counts"]["response.text.delta"]
    texts = [p.content for m in call.output_messages for p in m.parts if isinstance(p, TextPart)]
    assert texts == ["".join(deltas)]
    (done,) = [e for e in events if e["type"] == "response.done"]
    assert call.usage is not None and call.usage.raw == done["response"]["usage"]
    assert call.complete and call.request_model == "workshop-realtime"
    # the server's error for the client's bogus event came before the response: kept
    assert [d.code for d in call.diagnostics] == ["realtime.error_event"]


# -- synthetic sessions: the cases the captures do not have ------------------------------------


def session(*events: tuple[int, dict[str, Any]], cut: int | None = None) -> Exchange:
    records = []
    for n, (direction, event) in enumerate(events):
        payload = json.dumps(event).encode()
        m = WsMessage(
            direction=direction,
            opcode=TEXT,
            payload=payload if n != cut else payload[:5],
            size=len(payload),
            wire_size=len(payload),
            frames=1,
            first_ts=float(n),
            last_ts=float(n) + 0.5,
            offset=n * 100,
            complete=n != cut,
        )
        diags = [Diagnostic(code="ws.gap", message="lost")] if n == cut else []
        records.append(WsRecord(message=m, diagnostics=diags))
    req = Request(
        method="GET",
        url="ws://127.0.0.1/v1/realtime?model=m1",
        target="/v1/realtime?model=m1",
        version="HTTP/1.1",
        headers=[],
        body=Body(),
        started=0.0,
        ended=0.0,
        complete=True,
    )
    resp = Response(
        status=101,
        reason="",
        version="HTTP/1.1",
        headers=[],
        body=Body(),
        started=0.0,
        ended=0.0,
        complete=True,
    )
    return Exchange(
        id="e1",
        source=0,
        connection="c1",
        transport="http/1.1",
        request=req,
        response=resp,
        upgrade="websocket",
        messages=records,
    )


def ids() -> Any:
    counter = iter(range(1, 100))
    return lambda: f"call{next(counter)}"


CREATED = (1, {"type": "session.created", "session": {"id": "sess_1", "model": "m2"}})


def test_cancelled_and_failed_are_not_complete() -> None:
    ex = session(
        CREATED,
        (0, {"type": "response.create"}),
        (1, {"type": "response.created", "response": {"id": "r1"}}),
        (1, {"type": "response.done", "response": {"id": "r1", "status": "cancelled"}}),
        (0, {"type": "response.create"}),
        (1, {"type": "response.created", "response": {"id": "r2"}}),
        (1, {"type": "error", "error": {"type": "server_error", "message": "boom"}}),
        (
            1,
            {
                "type": "response.done",
                "response": {
                    "id": "r2",
                    "status": "failed",
                    "status_details": {"error": {"type": "server_error", "code": "x"}},
                },
            },
        ),
    )
    assert is_realtime(ex)
    cancelled, failed = session_calls(ex, ids())
    assert cancelled.finish_reasons == ["cancelled"] and not cancelled.complete
    assert cancelled.request_model == "m2" and cancelled.ids["realtime_session_id"] == "sess_1"
    assert failed.finish_reasons == ["failed"] and not failed.complete
    assert failed.error is not None and failed.error.message == "boom"  # the event said more


def test_server_vad_audio_input_with_its_transcription() -> None:
    ex = session(
        CREATED,
        (0, {"type": "input_audio_buffer.append", "audio": "AAAA"}),  # 3 bytes
        (0, {"type": "input_audio_buffer.append", "audio": "AAA="}),  # 2 bytes
        (1, {"type": "input_audio_buffer.committed", "item_id": "item_a"}),
        (
            1,
            {
                "type": "conversation.item.input_audio_transcription.completed",
                "item_id": "item_a",
                "transcript": "hello",
            },
        ),
        (1, {"type": "response.created", "response": {"id": "r1"}}),
        (1, {"type": "response.output_text.delta", "item_id": "i1", "delta": "hi"}),
        (1, {"type": "response.done", "response": {"id": "r1", "status": "completed"}}),
    )
    (call,) = session_calls(ex, ids())
    assert call.complete and call.timing.started == 5.0  # the server started it
    (msg,) = call.input_messages
    (audio,) = msg.parts
    assert isinstance(audio, BlobPart) and audio.provider_details["bytes"] == 5
    assert audio.provider_details["transcript"] == "hello"
    assert [p.content for m in call.output_messages for p in m.parts] == ["hi"]  # type: ignore[union-attr]


def test_a_lost_message_makes_the_call_incomplete_and_says_why() -> None:
    ex = session(
        CREATED,
        (0, {"type": "response.create"}),
        (1, {"type": "response.output_text.delta", "item_id": "i1", "delta": "a"}),
        (1, {"type": "response.output_text.delta", "item_id": "i1", "delta": "b"}),
        (1, {"type": "response.done", "response": {"id": "r1", "status": "completed"}}),
        (0, {"type": "response.create"}),
        (1, {"type": "response.done", "response": {"id": "r2", "status": "completed"}}),
        cut=3,
    )
    first, second = session_calls(ex, ids())
    assert not first.complete and second.complete
    assert [d.code for d in first.diagnostics] == ["call.evidence_incomplete"]
    assert "cut by a capture gap" in first.diagnostics[0].message


def test_no_response_done() -> None:
    ex = session(CREATED, (0, {"type": "response.create"}))
    (call,) = session_calls(ex, ids())
    assert not call.complete and call.finish_reasons == []
    assert [d.code for d in call.diagnostics] == ["realtime.no_response_done"]


def test_audio_base64_only_with_events() -> None:
    from agentshark.output.report import RenderOptions, call_json

    calls, _ = sdk_calls("ws_sdk_realtime_deflate")
    plain = json.dumps(call_json(calls[1], RenderOptions()))
    full = json.dumps(call_json(calls[1], RenderOptions(events=True)))
    assert "content_omitted" in plain and "content_omitted" not in full
    assert len(full) > len(plain) + 8000
