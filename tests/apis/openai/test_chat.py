"""The Chat Completions family on the seeds' examples, on hand-made dialect cases, on cut
and re-chunked streams; and recognition (what it claims, what it leaves to others)."""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentshark.apis.model import (
    BlobPart,
    Call,
    FilePart,
    GenericPart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
)
from agentshark.apis.openai.chat import CHAT, FAMILIES
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from agentshark.model import Body, Exchange, Request, Response
from agentshark.sources.detect import classify_document
from agentshark.sources.vcr import read_vcr
from tests.helpers import CORPUS

DATA = Path(__file__).resolve().parents[2] / "data" / "apis" / "openai_chat"
OPENAI = "https://api.openai.com/v1/chat/completions"
SSE = "text/event-stream"
FINAL_TEXT = "上海今天晴，气温 22℃。"  # noqa: RUF001 - the seed's own punctuation


def fixture(name: str) -> bytes:
    """A seed example as the wire would carry it: JS-style ``//`` comments (seed 001) go."""
    text = (DATA / name).read_text(encoding="utf-8")
    if name.endswith(".jsonc"):
        text = re.sub(r'("(?:[^"\\]|\\.)*")|//[^\n]*', lambda m: m.group(1) or "", text)
    return text.encode()


def exchange(
    request: Any,
    response: Any,
    *,
    url: str = OPENAI,
    status: int = 200,
    content_type: str = "application/json",
    request_headers: list[tuple[str, str]] | None = None,
    response_headers: list[tuple[str, str]] | None = None,
    pieces: list[tuple[float, bytes]] | None = None,
    complete: bool = True,
    method: str = "POST",
) -> Exchange:
    req = (
        request if isinstance(request, bytes) else b"" if request is None else orjson.dumps(request)
    )
    body = Body()
    body.append(1.0, req)
    path = "/" + url.split("://", 1)[1].partition("/")[2]
    r = Request(
        method=method,
        target=path,
        url=url,
        version="HTTP/1.1",
        headers=[("content-type", "application/json"), *(request_headers or [])],
        body=body,
        started=1.0,
        ended=1.0,
        complete=True,
    )
    resp = None
    if response is not None or pieces is not None:
        rbody = Body()
        if pieces is None:
            data = response if isinstance(response, bytes) else orjson.dumps(response)
            pieces = [(2.0, data)]
        for ts, piece in pieces:
            rbody.append(ts, piece)
        resp = Response(
            status=status,
            reason="",
            version="HTTP/1.1",
            headers=[("content-type", content_type), *(response_headers or [])],
            body=rbody,
            started=1.5,
            ended=3.0,
            complete=complete,
        )
    return Exchange(
        id="x1", source=0, connection=None, transport="http/1.1", request=r, response=resp
    )


def call_of(x: Exchange) -> Call:
    call = recognize(x, "c1", registry=FAMILIES)
    assert call is not None
    return call


def chat(x: Exchange) -> Call:
    call = call_of(x)
    assert call.api == "openai.chat"
    assert call.operation == "chat"
    return call


def sse(*chunks: dict[str, Any] | str) -> bytes:
    return b"".join(
        b"data: " + (c.encode() if isinstance(c, str) else orjson.dumps(c)) + b"\n\n"
        for c in chunks
    )


def texts(call: Call, i: int = 0) -> str:
    return "".join(p.content for p in call.output_messages[i].parts if isinstance(p, TextPart))


def tools(call: Call, i: int = 0) -> list[ToolCallPart]:
    return [p for p in call.output_messages[i].parts if isinstance(p, ToolCallPart)]


# -- seed 000 §3.1-§3.3 ----------------------------------------------------------------------


def test_seed_3_1_request_and_3_2_tool_call_response() -> None:
    x = exchange(
        fixture("s000_3_1_request.json"),
        fixture("s000_3_2_tool_call_response.json"),
        request_headers=[
            ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        ],
        response_headers=[("x-request-id", "req-1")],
    )
    call = chat(x)
    assert call.provider == "openai"
    assert call.request_model == "gpt-4.1" and call.response_model == "gpt-4.1"
    assert call.response_id == "chatcmpl_123"
    assert call.stream is False and call.complete is True
    assert call.system_instructions == [TextPart(content="你是一个助手")]
    assert [(m.role, m.parts) for m in call.input_messages] == [
        ("user", [TextPart(content="查上海天气")])
    ]
    assert [t["function"]["name"] for t in call.tool_definitions] == ["get_weather"]
    assert call.request_params == {"tool_choice": "auto"}
    (message,) = call.output_messages
    assert message.role == "assistant" and message.finish_reason == "tool_calls"
    assert message.parts == [
        ToolCallPart(
            id="call_01",
            name="get_weather",
            arguments={"city": "Shanghai"},
            arguments_raw='{"city":"Shanghai"}',
        )
    ]
    assert call.finish_reasons == ["tool_calls"]
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.total_tokens) == (
        100,
        20,
        120,
    )
    assert call.usage.cached_input_tokens is None and call.usage.reasoning_tokens is None
    assert call.ids["traceparent"].startswith("00-4bf92f35")
    assert call.ids["provider_request_id"] == "req-1"
    assert call.timing.first_token is None  # not a stream
    assert call.extras["response"] == {"object": "chat.completion", "created": 1710000000}


def test_seed_3_2_tool_message_and_final_text() -> None:
    request = orjson.loads(fixture("s000_3_1_request.json"))
    request["messages"].append(orjson.loads(fixture("s000_3_2_tool_message.json")))
    for name in ("s000_3_2_final_response.json", "s000_3_2_final_response_b.json"):
        call = chat(exchange(request, fixture(name)))
        tool = call.input_messages[-1]
        assert tool.role == "tool"
        assert tool.parts == [
            ToolCallResponsePart(id="call_01", response='{"city":"Shanghai","temperature":22}')
        ]
        assert texts(call) == FINAL_TEXT
        assert call.finish_reasons == ["stop"]
        assert call.response_id == "chatcmpl_124"
        assert call.response_model is None and call.usage is None  # not in the body
        assert call.complete


def test_seed_3_2_error_body() -> None:
    x = exchange(fixture("s000_3_1_request.json"), fixture("s000_3_2_error.json"), status=400)
    call = chat(x)
    assert call.error is not None
    assert call.error.to_json() == {
        "status": 400,
        "type": "invalid_request_error",
        "code": "invalid_value",
        "message": "Invalid tool arguments",
        "source": "body",
    }
    assert call.output_messages == [] and call.finish_reasons == []
    assert call.complete  # the error body arrived whole
    assert call.extras["error"]["param"] == "tools"


def test_seed_3_3_stream_as_printed() -> None:
    """The seed's §3.3 example is not quite valid: its third chunk escapes the quotes of the
    arguments twice (``{\\\\"city...``), which ends the string early. The chunk is reported
    and skipped, the text of the others kept; no finish_reason ever arrives, so the stream
    is not complete even though [DONE] did."""
    x = exchange(fixture("s000_3_1_request.json"), fixture("s000_3_3_stream.sse"), content_type=SSE)
    call = chat(x)
    assert call.stream
    assert texts(call) == "上海今天晴"
    assert tools(call) == []
    assert call.output_messages[0].finish_reason is None
    assert call.complete is False
    codes = [d.code for d in call.diagnostics]
    assert codes == ["openai_chat.bad_chunk", "openai_chat.no_finish_reason"]
    assert "stream event 2" in call.diagnostics[0].message


def test_seed_3_3_stream_with_the_quotes_fixed() -> None:
    body = fixture("s000_3_3_stream.sse").replace(b'\\\\"', b'\\"')
    call = chat(exchange(fixture("s000_3_1_request.json"), body, content_type=SSE))
    (tool,) = tools(call)
    assert (tool.id, tool.name, tool.arguments) == (None, None, {"city": "Shanghai"})
    assert call.output_messages[0].parts[0] == TextPart(content="上海今天晴")


# -- seed 000 §4.1 and §4.3 ------------------------------------------------------------------


def test_seed_4_1_round_trip() -> None:
    gateway = "https://llm-gateway.example.com/v1/chat/completions"
    first = chat(
        exchange(
            fixture("s000_4_1_1_request.json"),
            fixture("s000_4_1_2_response.json"),
            url=gateway,
            response_headers=[("x-request-id", "req-model-001")],
        )
    )
    assert first.provider == "llm-gateway.example.com"  # an unknown host names itself
    assert first.request_params == {"tool_choice": "auto", "parallel_tool_calls": False}
    assert first.system_instructions == [TextPart(content="你是天气助手。")]
    (tool,) = tools(first)
    assert (tool.id, tool.name, tool.arguments) == (
        "call-weather-001",
        "get_weather",
        {"city": "Shanghai"},
    )
    assert first.ids["provider_request_id"] == "req-model-001"
    assert first.usage is not None and first.usage.total_tokens == 174

    second = chat(
        exchange(
            fixture("s000_4_1_5_request.json"), fixture("s000_4_1_6_response.json"), url=gateway
        )
    )
    roles = [m.role for m in second.input_messages]
    assert roles == ["user", "assistant", "tool"]
    assistant, result = second.input_messages[1], second.input_messages[2]
    assert assistant.parts == [tool]  # the call the model asked for, replayed
    (response,) = result.parts
    assert isinstance(response, ToolCallResponsePart) and response.id == tool.id
    assert orjson.loads(response.response)["temperature_c"] == 22  # kept as the string sent
    assert texts(second) == FINAL_TEXT
    assert second.finish_reasons == ["stop"] and second.complete


def _seed_4_3(**kwargs: Any) -> Exchange:
    return exchange(
        fixture("s000_4_1_1_request.json"),
        fixture("s000_4_3_stream.sse"),
        content_type=SSE,
        **kwargs,
    )


def test_seed_4_3_streamed_tool_call_split_across_deltas() -> None:
    call = chat(_seed_4_3())
    assert call.stream and call.complete
    assert call.response_id == "chatcmpl-stream-001" and call.response_model == "gpt-4.1"
    (message,) = call.output_messages
    assert message.finish_reason == "tool_calls"
    assert message.parts == [
        ToolCallPart(
            id="call-stream-001",
            name="get_weather",
            arguments={"city": "Shanghai"},
            arguments_raw='{"city":"Shanghai"}',
        )
    ]
    assert call.usage is not None and call.usage.input_tokens == 156
    assert call.diagnostics == []
    assert call.extras["response"] == {"object": "chat.completion.chunk", "created": 1710000200}


def test_first_token_is_the_first_content_event() -> None:
    body = fixture("s000_4_3_stream.sse")
    cut = body.index(b"data:", 10)
    x = _seed_4_3(pieces=[(5.0, b": keep-alive\n\n"), (6.0, body[:cut]), (7.0, body[cut:])])
    call = chat(x)
    assert call.timing.first_token == 6.0  # the tool-call delta with the name
    role_only = sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    text = sse({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]})
    x = exchange(
        {"model": "m", "messages": []},
        None,
        content_type=SSE,
        pieces=[(5.0, role_only), (8.0, text + b"data: [DONE]\n\n")],
    )
    assert chat(x).timing.first_token == 8.0


# -- seed 001 (the four legs of the tool round trip) and seed 003 (dialects) ----------------


def test_seed_001_tool_round_trip() -> None:
    first = chat(exchange(fixture("s001_1.jsonc"), fixture("s001_2.jsonc")))
    assert first.request_model == "gpt-4o" and first.response_model is None
    (tool,) = tools(first)
    assert (tool.id, tool.name, tool.arguments, tool.arguments_raw) == (
        "call_abc",
        "run_tests",
        {"suite": "all"},
        '{"suite":"all"}',
    )
    assert first.output_messages[0].parts == [tool]  # content null: no text part
    assert first.finish_reasons == ["tool_calls"]
    second = chat(exchange(fixture("s001_3.jsonc"), fixture("s001_4.jsonc")))
    assert second.tool_definitions == ["... 同上 ..."]  # as sent, even when it is not a tool
    assert [m.role for m in second.input_messages] == ["user", "assistant", "tool"]
    assert second.input_messages[2].parts == [
        ToolCallResponsePart(id="call_abc", response="42 passed")
    ]
    assert texts(second) == "测试全部通过。"
    assert second.usage is not None and second.usage.input_tokens == 142


def test_seed_003_dialects_and_multimodal_content() -> None:
    image = "data:image/png;base64,iVBORw0KGgo="
    request = {
        "model": "qwen3",
        "messages": [
            {"role": "developer", "content": "be brief", "name": "ops"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": image, "detail": "low"}},
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
                    {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                    {"type": "file", "file": {"file_id": "file-1"}},
                    {
                        "type": "file",
                        "file": {
                            "filename": "a.pdf",
                            "file_data": "data:application/pdf;base64,JVBE",
                        },
                    },
                    {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAA"}},
                    {"type": "mystery", "x": 1},
                ],
            },
            {"role": "system", "content": "a reminder, mid-conversation"},
        ],
        "options": {"num_ctx": 32768},
        "reasoning_effort": "low",
        "enable_thinking": True,
        "thinking": {"type": "enabled"},
        "max_tokens": 10,
        "stream": False,
        "user": "u-7",
        "metadata": {"session_id": "s-1", "turn": 3},
        "vendor_knob": 1,
    }
    call = chat(exchange(request, None, url="http://localhost:11434/v1/chat/completions"))
    assert call.provider == "ollama"
    assert call.complete is False  # no response
    assert call.system_instructions == [
        TextPart(content="be brief", provider_details={"role": "developer", "name": "ops"})
    ]
    user, reminder = call.input_messages
    assert reminder.role == "system"
    assert reminder.parts == [TextPart(content="a reminder, mid-conversation")]
    assert user.parts == [
        TextPart(content="what is this?"),
        BlobPart(
            mime_type="image/png",
            modality="image",
            content="iVBORw0KGgo=",
            provider_details={"detail": "low"},
        ),
        UriPart(uri="https://example.com/a.jpg", mime_type=None, modality="image"),
        BlobPart(
            mime_type="audio/wav",
            modality="audio",
            content="UklGRg==",
            provider_details={"format": "wav"},
        ),
        FilePart(file_id="file-1", mime_type=None, modality=None),
        BlobPart(
            mime_type="application/pdf",
            modality=None,
            content="JVBE",
            provider_details={"filename": "a.pdf"},
        ),
        BlobPart(mime_type="video/mp4", modality="video", content="AAAA"),
        GenericPart(type="mystery", fields={"x": 1}),
    ]
    assert call.request_params == {
        "options": {"num_ctx": 32768},
        "reasoning_effort": "low",
        "enable_thinking": True,
        "thinking": {"type": "enabled"},
        "max_tokens": 10,
        "user": "u-7",
        "metadata": {"session_id": "s-1", "turn": 3},
    }
    assert call.extras["request"] == {"vendor_knob": 1}
    assert call.ids == {"user": "u-7", "session_id": "s-1"}
    assert call.id_sources == {
        "user": "request body $.user",
        "session_id": "request body $.metadata.session_id",
    }


# -- responses: choices, refusal, reasoning, legacy function_call, arguments --------------


def test_n_choices_in_index_order_with_finish_reasons() -> None:
    body = {
        "id": "c",
        "model": "m",
        "choices": [
            {
                "index": 1,
                "message": {"role": "assistant", "content": "B"},
                "finish_reason": "length",
            },
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "A",
                    "annotations": [{"type": "url_citation"}],
                },
                "finish_reason": None,
                "logprobs": {"content": []},
            },
        ],
        "system_fingerprint": "fp",
        "service_tier": "default",
    }
    call = chat(exchange({"model": "m", "messages": [], "n": 2}, body))
    assert [texts(call, i) for i in (0, 1)] == ["A", "B"]
    assert [m.finish_reason for m in call.output_messages] == [None, "length"]
    assert call.finish_reasons == ["length"]  # the non-null ones, in choice order
    first = call.output_messages[0].parts[0]
    assert isinstance(first, TextPart)
    assert first.provider_details == {"annotations": [{"type": "url_citation"}]}
    assert call.extras["choices"] == {"0": {"logprobs": {"content": []}}}
    assert call.extras["response"] == {"system_fingerprint": "fp", "service_tier": "default"}


def test_refusal_reasoning_audio_and_legacy_function_call() -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "function_call",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": "I can't",
                    "reasoning_content": "thinking...",
                    "audio": {"id": "a1", "data": "AAA=", "transcript": "hi", "expires_at": 1},
                    "function_call": {"name": "f", "arguments": '{"a": 1'},
                },
            }
        ]
    }
    call = chat(
        exchange(
            {"model": "deepseek-reasoner", "messages": []},
            body,
            url="https://api.deepseek.com/chat/completions",
        )
    )
    assert call.provider == "deepseek"
    parts = call.output_messages[0].parts
    assert parts[0] == ReasoningPart(
        content="thinking...", provider_details={"field": "reasoning_content"}
    )
    assert parts[1] == GenericPart(type="refusal", fields={"refusal": "I can't"})
    assert parts[2] == BlobPart(
        mime_type=None,
        modality="audio",
        content="AAA=",
        provider_details={"id": "a1", "transcript": "hi", "expires_at": 1},
    )
    legacy = parts[3]
    assert isinstance(legacy, ToolCallPart)
    assert (legacy.id, legacy.name, legacy.arguments, legacy.arguments_raw) == (
        None,
        "f",
        None,
        '{"a": 1',
    )
    assert legacy.arguments_error is not None and "char 7" in legacy.arguments_error
    assert legacy.provider_details == {"legacy": "function_call"}
    assert call.finish_reasons == ["function_call"]


def test_request_history_kinds() -> None:
    request = {
        "model": "m",
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "rules"}]},
            {"role": "user", "content": "q", "name": "ann"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
                    {"type": "text", "text": "a"},
                ],
                "reasoning_content": "r",
                "prefix": True,
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {"name": "f", "arguments": "not json"},
                    },
                    {"id": "t2", "type": "custom", "custom": {"name": "g", "input": "x=1"}},
                ],
                "function_call": {"name": "old", "arguments": "{}"},
            },
            {"role": "function", "name": "old", "content": "3"},
            {"role": "tool", "tool_call_id": "t1", "content": [{"type": "text", "text": "ok"}]},
        ],
        "functions": [{"name": "old"}],
        "function_call": "auto",
    }
    call = chat(exchange(request, None))
    assert call.system_instructions == [TextPart(content="rules")]
    user, assistant, function, tool = call.input_messages
    assert (user.role, user.name) == ("user", "ann")
    assert assistant.parts[:3] == [
        ReasoningPart(content="r", provider_details={"field": "reasoning_content"}),
        ReasoningPart(content="hmm"),
        TextPart(content="a"),
    ]
    bad, custom, legacy = assistant.parts[3:]
    assert isinstance(bad, ToolCallPart) and bad.arguments is None
    assert bad.arguments_raw == "not json" and bad.arguments_error
    assert isinstance(custom, ToolCallPart)
    assert (custom.name, custom.arguments, custom.provider_details) == (
        "g",
        "x=1",
        {"type": "custom"},
    )
    assert isinstance(legacy, ToolCallPart) and legacy.arguments == {}
    assert function.parts == [ToolCallResponsePart(id=None, response="3")]
    assert function.name == "old"
    assert tool.parts == [ToolCallResponsePart(id="t1", response=[{"type": "text", "text": "ok"}])]
    assert call.tool_definitions == [{"name": "old"}]
    assert call.request_params == {"function_call": "auto"}
    assert call.extras["message_fields"] == {"$.messages[2]": {"prefix": True}}


# -- streams --------------------------------------------------------------------------------


def _delta(index: int, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    return {
        "id": "s1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }


def test_stream_interleaved_choices_tool_calls_and_usage() -> None:
    body = sse(
        _delta(0, role="assistant", content=""),
        _delta(
            1,
            role="assistant",
            tool_calls=[
                {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": ""},
                },
                {
                    "index": 1,
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "g", "arguments": "{"},
                },
            ],
        ),
        _delta(0, content="Hel"),
        _delta(1, tool_calls=[{"index": 0, "function": {"arguments": '{"x"'}}]),
        _delta(
            1,
            tool_calls=[
                {"index": 1, "function": {"arguments": "}"}},
                {"index": 0, "function": {"arguments": ": 1}"}},
            ],
        ),
        _delta(0, content="lo", refusal=None, reasoning="why"),
        _delta(0, "stop"),
        _delta(1, "tool_calls"),
        {
            "id": "s1",
            "choices": [],
            "usage": {
                "prompt_tokens": 5,
                "completion_tokens": 7,
                "total_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": 2},
                "completion_tokens_details": {"reasoning_tokens": 3},
            },
        },
        "[DONE]",
    )
    call = chat(
        exchange({"model": "m", "messages": [], "stream": True, "n": 2}, body, content_type=SSE)
    )
    assert call.complete and call.stream
    assert texts(call, 0) == "Hello"
    assert call.output_messages[0].parts[1] == ReasoningPart(
        content="why", provider_details={"field": "reasoning"}
    )
    f, g = tools(call, 1)
    assert (f.id, f.name, f.arguments_raw, f.arguments) == ("c1", "f", '{"x": 1}', {"x": 1})
    assert (g.id, g.name, g.arguments) == ("c2", "g", {})
    assert call.finish_reasons == ["stop", "tool_calls"]
    assert call.usage is not None
    assert (call.usage.cached_input_tokens, call.usage.reasoning_tokens) == (2, 3)


def test_stream_legacy_function_call_refusal_and_mistral_thinking() -> None:
    body = sse(
        _delta(0, function_call={"name": "f", "arguments": ""}),
        _delta(0, function_call={"arguments": "{}"}),
        _delta(0, refusal="no"),
        _delta(0, content=[{"type": "thinking", "thinking": [{"type": "text", "text": "t"}]}]),
        _delta(0, content=[{"type": "text", "text": "x"}]),
        _delta(0, "function_call"),
        "[DONE]",
    )
    call = chat(exchange({"model": "m", "messages": []}, body, content_type=SSE))
    legacy, reasoning, text, refusal = call.output_messages[0].parts
    assert isinstance(legacy, ToolCallPart)
    assert (legacy.name, legacy.arguments, legacy.provider_details) == (
        "f",
        {},
        {"legacy": "function_call"},
    )
    assert reasoning == ReasoningPart(content="t")
    assert text == TextPart(content="x")
    assert refusal == GenericPart(type="refusal", fields={"refusal": "no"})
    assert call.complete


def test_stream_tool_call_keys() -> None:
    """Tool-call deltas are keyed by index; a new id at a used index is a new call; without
    an index, by id, and a bare fragment extends the call opened last."""
    body = sse(
        _delta(
            0, tool_calls=[{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{"}}]
        ),
        _delta(0, tool_calls=[{"index": 0, "function": {"arguments": "}"}}]),
        _delta(
            0, tool_calls=[{"index": 0, "id": "b", "function": {"name": "g", "arguments": "[]"}}]
        ),
        _delta(0, tool_calls=[{"id": "c", "function": {"name": "h", "arguments": '{"k"'}}]),
        _delta(0, tool_calls=[{"function": {"arguments": ": 2}"}}]),
        _delta(
            0,
            tool_calls=[
                {
                    "index": 1,
                    "id": "d",
                    "type": "function",
                    "function": {"name": "i", "arguments": ""},
                }
            ],
        ),
        _delta(0, tool_calls=[{"index": 1, "id": "d", "function": {"name": "i"}}]),
        _delta(0, "tool_calls"),
        "[DONE]",
        _delta(0, content="late"),
    )
    call = chat(exchange({"model": "m", "messages": []}, body, content_type=SSE))
    got = [(t.id, t.name, t.arguments_raw, t.arguments) for t in tools(call)]
    assert got == [
        ("a", "f", "{}", {}),
        ("b", "g", "[]", []),
        ("c", "h", '{"k": 2}', {"k": 2}),
        ("d", "i", "", None),
    ]
    assert tools(call)[3].arguments_error is not None  # "" is not JSON, and says so
    assert texts(call) == ""  # nothing after [DONE] is used
    assert [d.code for d in call.diagnostics] == ["openai_chat.after_done"]
    assert call.complete


def test_json_finish_reason_kept_as_sent() -> None:
    body = {
        "id": "",
        "choices": [
            {
                "index": 0,
                "finish_reason": "",
                "message": {
                    "role": "assistant",
                    "content": "x",
                    "refusal": "",
                    "function_call": {"name": "", "arguments": ""},
                    "audio": {"data": "", "id": "", "transcript": "", "expires_at": 0},
                },
            }
        ],
    }
    call = chat(
        exchange(
            {"model": "m", "messages": []},
            body,
            url="https://a.snowflakecomputing.com/api/v2/cortex/v1/chat/completions",
        )
    )
    assert call.provider == "snowflake"
    (message,) = call.output_messages
    assert message.finish_reason == ""  # raw, as sent
    assert call.finish_reasons == []  # an empty reason names none
    assert message.parts == [TextPart(content="x")]  # empty placeholders are not parts
    assert call.response_id is None  # "" is no id


def test_stream_in_band_errors() -> None:
    openrouter = b": OPENROUTER PROCESSING\n\n" + sse(
        _delta(0, content="a"),
        {
            "id": "s1",
            "error": {"code": 400, "message": "Token limit reached"},
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": None}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2},
        },
        "[DONE]",
    )
    call = chat(
        exchange(
            {"model": "m", "messages": []},
            openrouter,
            content_type=SSE,
            url="https://openrouter.ai/api/v1/chat/completions",
        )
    )
    assert call.provider == "openrouter"
    assert call.error is not None
    assert call.error.to_json() == {
        "status": None,
        "type": None,
        "code": "400",
        "message": "Token limit reached",
        "source": "stream event 1",
    }
    assert texts(call) == "a" and call.output_messages[0].finish_reason is None
    assert call.complete  # the stream ended, on an error
    assert call.usage is not None and call.usage.output_tokens == 2

    groq = (
        b'event: error\ndata: {"error":{"message":"bad","type":"invalid_request_error",'
        b'"code":"tool_use_failed","status_code":400}}\n\n'
    )
    call = chat(
        exchange(
            {"model": "m", "messages": []},
            groq,
            content_type=SSE,
            url="https://api.groq.com/openai/v1/chat/completions",
        )
    )
    assert call.provider == "groq"
    assert call.error is not None
    assert (call.error.status, call.error.code, call.error.source) == (
        400,
        "tool_use_failed",
        "stream event 0",
    )
    assert call.complete and call.output_messages == []


def test_stream_without_done_writer_style() -> None:
    body = sse(
        _delta(0, content="x"), _delta(0, "stop"), {"choices": [], "usage": {"prompt_tokens": 1}}
    )
    call = chat(exchange({"model": "m", "messages": []}, body, content_type=SSE))
    assert call.complete
    assert [d.code for d in call.diagnostics] == ["openai_chat.no_done"]
    # the same bytes from an exchange whose HTTP framing did not end are not complete
    call = chat(exchange({"model": "m", "messages": []}, body, content_type=SSE, complete=False))
    assert not call.complete and call.diagnostics == []


def test_incomplete_exchange_is_never_complete() -> None:
    call = chat(_seed_4_3(complete=False))
    assert call.complete is False
    assert call.output_messages[0].finish_reason == "tool_calls"  # what arrived is kept


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            404,
            b'{"error": {"message": "no model", "type": "invalid_request_error", "param": null,'
            b' "code": "model_not_found"}}',
            (404, "invalid_request_error", "model_not_found", "no model", "body"),
        ),
        (
            429,
            b'{"error": {"code": 429, "message": "rate", "metadata": {}}}',
            (429, None, "429", "rate", "body"),
        ),
        (400, b'{"error": "model required"}', (400, None, None, "model required", "body")),
        (
            422,
            b'{"object": "error", "message": "bad", "type": "BadRequestError", "code": 400}',
            (422, "BadRequestError", "400", "bad", "body"),
        ),
        (400, b'{"detail": "nope"}', (400, None, None, "nope", "body")),
        (502, b"<html>Bad Gateway</html>", (502, None, None, "<html>Bad Gateway</html>", "http")),
        (500, b"", (500, None, None, None, "http")),
    ],
)
def test_error_bodies(status: int, body: bytes, expected: tuple[Any, ...]) -> None:
    call = chat(exchange({"model": "m", "messages": []}, body, status=status))
    assert call.error is not None
    e = call.error
    assert (e.status, e.type, e.code, e.message, e.source) == expected
    assert call.complete


def test_azure_error_in_a_200_body() -> None:
    body = {
        "error": {
            "code": "content_filter",
            "message": "filtered",
            "param": "prompt",
            "status": 400,
            "innererror": {"code": "ResponsibleAIPolicyViolation"},
        }
    }
    url = (
        "https://res.openai.azure.com/openai/deployments/gpt4/chat/completions"
        "?api-version=2024-02-01"
    )
    call = chat(exchange({"messages": [{"role": "user", "content": "x"}]}, body, url=url))
    assert call.provider == "azure.openai"
    assert call.error is not None
    assert (call.error.status, call.error.code, call.error.message) == (
        200,
        "content_filter",
        "filtered",
    )


# -- cut and re-chunked streams --------------------------------------------------------------


def _corpus_stream(name: str) -> Exchange:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"no corpus file {name}")
    _, doc = classify_document(path.read_bytes(), name)
    ids = itertools.count()
    first = next(read_vcr(doc, name, 0, lambda: f"e{next(ids)}"))
    assert isinstance(first, Exchange)
    return first


N2_STREAM = (
    "open-telemetry__opentelemetry-python-contrib/instrumentation-genai/"
    "opentelemetry-instrumentation-openai-v2/tests/cassettes/"
    "test_chat_completion_multiple_choices_streaming.yaml"
)
TOOLS_STREAM = (
    "open-telemetry__opentelemetry-python-contrib/instrumentation-genai/"
    "opentelemetry-instrumentation-openai-v2/tests/cassettes/"
    "test_chat_completion_multiple_tools_streaming_with_content.yaml"
)


def _with_body(x: Exchange, pieces: list[tuple[float, bytes]], *, complete: bool) -> Exchange:
    assert x.response is not None
    body = Body()
    for ts, data in pieces:
        body.append(ts, data)
    resp = Response(
        status=x.response.status,
        reason="",
        version="HTTP/1.1",
        headers=x.response.headers,
        body=body,
        started=1.0,
        ended=2.0,
        complete=complete,
    )
    return Exchange(
        id=x.id, source=0, connection=None, transport="http/1.1", request=x.request, response=resp
    )


Summary = list[tuple[str, list[tuple[str | None, str | None, str | None]], str | None]]


def _summary(call: Call) -> Summary:
    return [
        (
            "".join(p.content for p in m.parts if isinstance(p, TextPart)),
            [(p.id, p.name, p.arguments_raw) for p in m.parts if isinstance(p, ToolCallPart)],
            m.finish_reason,
        )
        for m in call.output_messages
    ]


def _boundaries(body: bytes) -> list[int]:
    return [m.end() for m in re.finditer(rb"\n\n", body)]


@pytest.mark.parametrize("name", ["seed-4.3", N2_STREAM, TOOLS_STREAM])
def test_cut_streams_keep_the_prefix_and_are_not_complete(name: str) -> None:
    x = _seed_4_3() if name == "seed-4.3" else _corpus_stream(name)
    body = ExchangeView(x).response_body
    full = chat(x)
    assert full.complete
    whole = _summary(full)
    ends = _boundaries(body)
    cuts = set(ends) | {(a + b) // 2 for a, b in itertools.pairwise([0, *ends])}
    cuts |= set(range(0, len(body), 7)) if len(body) < 4000 else set()
    for cut in sorted(cuts):
        call = chat(_with_body(x, [(1.0, body[:cut])], complete=False))
        assert call.complete is False
        got = _summary(call)
        assert len(got) <= len(whole)
        for (text, calls, finish), (w_text, w_calls, w_finish) in zip(got, whole, strict=False):
            assert w_text.startswith(text), cut
            assert len(calls) <= len(w_calls)
            for (cid, cname, raw), (wid, wname, wraw) in zip(calls, w_calls, strict=False):
                assert cid in (None, wid) and (cname is None or (wname or "").startswith(cname))
                assert raw is None or (wraw or "").startswith(raw)
            assert finish in (None, w_finish)
        # an event the cut ends inside is not used: cut at a boundary, the same prefix
        boundary = max((e for e in ends if e <= cut), default=0)
        at_boundary = chat(_with_body(x, [(1.0, body[:boundary])], complete=False))
        assert _summary(at_boundary) == got


@pytest.mark.parametrize("name", ["seed-4.3", N2_STREAM, TOOLS_STREAM])
def test_rechunked_streams_give_the_same_call(name: str) -> None:
    x = _seed_4_3() if name == "seed-4.3" else _corpus_stream(name)
    body = ExchangeView(x).response_body
    expected = chat(x).to_json()
    expected.pop("timing")
    rng = random.Random(4)
    for _ in range(20):
        points = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(1, 40))))
        pieces = [
            (float(i), body[a:b])
            for i, (a, b) in enumerate(itertools.pairwise([0, *points, len(body)]))
        ]
        got = chat(_with_body(x, pieces, complete=True)).to_json()
        got.pop("timing")
        assert got == expected
    bytewise = [(float(i), body[i : i + 1]) for i in range(len(body))]
    got = chat(_with_body(x, bytewise, complete=True)).to_json()
    got.pop("timing")
    assert got == expected


# -- the streams the SDK cannot fold, checked by hand ---------------------------------------


def test_writer_stream_with_null_types_in_tool_call_deltas() -> None:
    name = (
        "traceloop__openllmetry/packages/opentelemetry-instrumentation-writer/tests/"
        "cassettes/test_chat/test_writer_streaming_chat_tool_call_request_legacy.yaml"
    )
    call = chat(_corpus_stream(name))
    assert call.provider == "writer" and call.response_model == "palmyra-x4"
    assert call.response_id == "a2c90cfe-1887-47df-9b3b-f8a20ba21ff2"
    (tool,) = tools(call)
    assert (tool.id, tool.name, tool.arguments) == (
        "chatcmpl-tool-a31f1a5690b14b7daf0e78d2a2d23da2",
        "get_weather",
        {"location": "Zakopane"},
    )
    assert call.finish_reasons == ["tool_calls"] and call.complete
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens) == (194, 22)
    assert [d.code for d in call.diagnostics] == ["openai_chat.no_done"]


def test_openrouter_stream_with_annotations() -> None:
    name = (
        "pydantic__pydantic-ai/tests/models/cassettes/test_openrouter/"
        "test_openrouter_web_search_annotations_stream.yaml"
    )
    call = chat(_corpus_stream(name))
    assert texts(call).endswith("https://github.com/pydantic/pydantic-ai")
    (text,) = call.output_messages[0].parts
    assert isinstance(text, TextPart)
    annotation = text.provider_details["annotations"][0]
    assert annotation["url_citation"]["url"] == "https://github.com/pydantic/pydantic-ai"
    assert call.finish_reasons == ["stop"] and call.complete


# -- recognition ----------------------------------------------------------------------------


MESSAGES = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
COMPLETION = {
    "object": "chat.completion",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "yo"}, "finish_reason": "stop"}
    ],
}


@pytest.mark.parametrize(
    ("url", "provider"),
    [
        ("https://api.groq.com/openai/v1/chat/completions", "groq"),
        ("https://api.mistral.ai/v1/chat/completions", "mistral"),
        ("https://openrouter.ai/api/v1/chat/completions", "openrouter"),
        ("https://api.x.ai/v1/chat/completions", "xai"),
        ("https://api.together.xyz/v1/chat/completions", "together"),
        ("https://api.fireworks.ai/inference/v1/chat/completions", "fireworks"),
        ("https://api.perplexity.ai/chat/completions", "perplexity"),
        ("https://api.cerebras.ai/v1/chat/completions", "cerebras"),
        ("https://gw.corp/openai/deployments/x/chat/completions?api-version=1", "azure.openai"),
        ("http://localhost:8787/groq/openai/v1/chat/completions", "groq"),
        ("http://127.0.0.1:1234/v1/chat/completions", "lmstudio"),
        ("http://10.0.0.5:8000/v1/chat/completions", "10.0.0.5"),
        ("https://router.huggingface.co/together/v1/chat/completions", "huggingface"),
    ],
)
def test_provider_names(url: str, provider: str) -> None:
    assert chat(exchange(MESSAGES, COMPLETION, url=url)).provider == provider


def test_response_fields_name_the_provider_behind_an_unknown_host() -> None:
    url = "http://10.0.0.5:8000/v1/chat/completions"
    assert (
        chat(exchange(MESSAGES, {**COMPLETION, "x_groq": {"id": "r"}}, url=url)).provider == "groq"
    )
    vllm = {**COMPLETION, "prompt_logprobs": None, "kv_transfer_params": None}
    assert chat(exchange(MESSAGES, vllm, url=url)).provider == "vllm"


def test_body_shape_alone_is_recognized_on_any_path() -> None:
    x = exchange(MESSAGES, COMPLETION, url="https://api.writer.com/v1/chat")
    assert chat(x).provider == "writer"
    stream = sse(_delta(0, content="a"), _delta(0, "stop"), "[DONE]")
    assert chat(exchange(MESSAGES, stream, url="https://x.example/gen", content_type=SSE)).complete


@pytest.mark.parametrize(
    ("url", "request_body", "response", "headers"),
    [
        (
            "https://api.anthropic.com/v1/messages",
            MESSAGES,
            {"type": "message", "content": [], "stop_reason": "end_turn"},
            [],
        ),
        ("https://proxy.example/v1/chat", MESSAGES, None, [("anthropic-version", "2023-06-01")]),
        ("https://api.openai.com/v1/responses", {"model": "m", "input": "hi"}, None, []),
        (
            "https://x.example/v1/chat/completions",
            {"model": "m", "input": "hi"},
            {"object": "response", "output": []},
            [],
        ),
        (
            "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent",
            {"contents": []},
            {"candidates": []},
            [],
        ),
        ("http://localhost:11434/api/chat", MESSAGES, {"message": {"role": "assistant"}}, []),
        ("https://api.cohere.com/v2/chat", MESSAGES, {"message": {"role": "assistant"}}, []),
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse",
            MESSAGES,
            {"output": {}},
            [],
        ),
        (
            "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/l/publishers/"
            "anthropic/models/c:rawPredict",
            MESSAGES,
            None,
            [],
        ),
    ],
)
def test_other_apis_are_not_claimed(
    url: str,
    request_body: dict[str, Any],
    response: dict[str, Any] | None,
    headers: list[tuple[str, str]],
) -> None:
    x = exchange(request_body, response, url=url, request_headers=headers)
    assert CHAT.match(ExchangeView(x)) <= 0
    call = recognize(x, "c1", registry=FAMILIES)
    assert call is None or call.api != "openai.chat"


def test_get_is_never_chat() -> None:
    x = exchange(None, COMPLETION, method="GET")
    assert CHAT.match(ExchangeView(x)) < 0


# -- the other endpoints ---------------------------------------------------------------------


def test_embeddings() -> None:
    body = {
        "object": "list",
        "model": "text-embedding-3-small",
        "data": [
            {"object": "embedding", "index": 0, "embedding": [0.1, 0.2, 0.3]},
            {"object": "embedding", "index": 1, "embedding": [0.4, 0.5, 0.6]},
        ],
        "usage": {"prompt_tokens": 8, "total_tokens": 8},
    }
    request = {"model": "text-embedding-3-small", "input": ["a", "b"], "dimensions": 3}
    call = call_of(exchange(request, body, url="https://api.openai.com/v1/embeddings"))
    assert (call.api, call.operation, call.provider) == (
        "openai.embeddings",
        "embeddings",
        "openai",
    )
    assert call.request_model == call.response_model == "text-embedding-3-small"
    assert call.request_params == {"dimensions": 3}
    assert call.extras["embeddings"] == {
        "inputs": 2,
        "vectors": 2,
        "dimensions": 3,
        "texts": ["a", "b"],  # what a tool call's arguments and a search's vector match
        "vector_heads": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]],
    }
    assert call.usage is not None and call.usage.input_tokens == 8 and call.complete
    b64 = {**body, "data": [{"object": "embedding", "index": 0, "embedding": "AACAPwAAAEA="}]}
    call = call_of(
        exchange(
            {"model": "e", "input": "a", "encoding_format": "base64"},
            b64,
            url="https://api.openai.com/v1/embeddings",
        )
    )
    assert call.extras["embeddings"] == {
        "inputs": 1,
        "vectors": 1,
        "dimensions": 2,
        "texts": ["a"],
        "vector_heads": [[1.0, 2.0]],  # base64 little-endian float32, read as sent
    }


def test_legacy_completions_json_and_stream() -> None:
    url = "https://api.openai.com/v1/completions"
    body = {
        "id": "cmpl-1",
        "object": "text_completion",
        "model": "gpt-3.5-turbo-instruct",
        "choices": [{"index": 0, "text": " world", "finish_reason": "length"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }
    call = call_of(
        exchange(
            {"model": "gpt-3.5-turbo-instruct", "prompt": "hello", "max_tokens": 2}, body, url=url
        )
    )
    assert (call.api, call.operation) == ("openai.completions", "text_completion")
    assert call.input_messages[0].parts == [TextPart(content="hello")]
    assert call.output_messages[0].parts == [TextPart(content=" world")]
    assert call.finish_reasons == ["length"] and call.request_params == {"max_tokens": 2}
    chunk = {"id": "cmpl-2", "object": "text_completion", "model": "m"}
    stream = sse(
        {**chunk, "choices": [{"index": 0, "text": "a", "finish_reason": None}]},
        {**chunk, "choices": [{"index": 0, "text": "b", "finish_reason": "stop"}]},
        "[DONE]",
    )
    call = call_of(
        exchange(
            {"model": "m", "prompt": ["x", "y"], "stream": True}, stream, url=url, content_type=SSE
        )
    )
    assert call.api == "openai.completions" and call.stream and call.complete
    assert len(call.input_messages) == 2
    assert call.output_messages[0].parts == [TextPart(content="ab")]
    assert call.response_id == "cmpl-2" and call.finish_reasons == ["stop"]
    cut = call_of(
        exchange(
            {"model": "m", "prompt": "x"}, stream[:40], url=url, content_type=SSE, complete=False
        )
    )
    assert cut.complete is False


def test_models_list_and_retrieve() -> None:
    body = {
        "object": "list",
        "data": [{"id": "gpt-4o", "object": "model"}, {"id": "o3", "object": "model"}],
    }
    call = call_of(exchange(None, body, url="https://api.openai.com/v1/models", method="GET"))
    assert (call.api, call.operation, call.extras["models"]) == (
        "openai.models",
        "models.list",
        ["gpt-4o", "o3"],
    )
    one = call_of(
        exchange(
            None,
            {"id": "o3", "object": "model"},
            method="GET",
            url="https://api.openai.com/v1/models/o3",
        )
    )
    assert (one.operation, one.response_model) == ("models.retrieve", "o3")
    threads = {"object": "list", "data": []}
    assert (
        recognize(
            exchange(
                None, threads, method="GET", url="https://api.openai.com/v1/threads/t/messages"
            ),
            "c",
            registry=FAMILIES,
        )
        is None
    )


# -- robustness: any value of any type anywhere ---------------------------------------------

_ODD_VALUES: list[Any] = [None, 0, 1.5, True, "", "x", [], [1], {}, {"index": "0"}]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*path, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*path, i)))
    return out


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = orjson.loads(orjson.dumps(value))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return copy


def _rich_request() -> dict[str, Any]:
    request: dict[str, Any] = orjson.loads(fixture("s000_4_1_5_request.json"))
    request["messages"][1]["content"] = [
        {"type": "text", "text": "t"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
        {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,AA=="}},
    ]
    request["metadata"] = {"session": "s"}
    return request


def test_any_value_anywhere_never_raises() -> None:
    """Every JSON path of a request, a response and a stream chunk, replaced by values of
    every type: the call is built (and serializable) without an exception."""
    request = _rich_request()
    response = orjson.loads(fixture("s000_4_1_2_response.json"))
    response["choices"][0]["message"]["annotations"] = [{"type": "url_citation"}]
    response["choices"][0]["message"]["reasoning_content"] = "r"
    chunk = {
        "id": "s",
        "model": "m",
        "usage": {"prompt_tokens": 1},
        "choices": [
            {
                "index": 0,
                "finish_reason": None,
                "logprobs": {"content": []},
                "delta": {
                    "content": "a",
                    "reasoning": "r",
                    "refusal": "n",
                    "audio": {"data": "AA=="},
                    "annotations": [{}],
                    "function_call": {"name": "f", "arguments": "{}"},
                    "tool_calls": [
                        {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
            }
        ],
    }
    for path in _paths(request):
        for odd in _ODD_VALUES:
            chat(exchange(_replaced(request, path, odd), response)).to_json()
    for path in _paths(response):
        for odd in _ODD_VALUES:
            call_of(exchange(request, _replaced(response, path, odd))).to_json()
    for path in _paths(chunk):
        for odd in _ODD_VALUES:
            body = sse(_replaced(chunk, path, odd), chunk, "[DONE]")
            call_of(exchange(request, body, content_type=SSE)).to_json()


def test_mangled_bytes_never_raise() -> None:
    rng = random.Random(7)
    bodies = [fixture("s000_4_3_stream.sse"), fixture("s000_4_1_2_response.json")]
    for body in bodies:
        for _ in range(300):
            data = bytearray(body)
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            cut = bytes(data[: rng.randint(0, len(data))])
            for content_type in (SSE, "application/json"):
                call = recognize(
                    exchange(_rich_request(), cut, content_type=content_type),
                    "c",
                    registry=FAMILIES,
                )
                if call is not None:
                    call.to_json()


def test_other_endpoints_never_raise() -> None:
    cases: list[tuple[str, dict[str, Any] | None, dict[str, Any]]] = [
        (
            "https://api.openai.com/v1/embeddings",
            {"model": "e", "input": ["a"]},
            {
                "object": "list",
                "model": "e",
                "usage": {"prompt_tokens": 1},
                "data": [{"object": "embedding", "embedding": [0.1]}],
            },
        ),
        (
            "https://api.openai.com/v1/completions",
            {"model": "m", "prompt": ["a"]},
            {
                "object": "text_completion",
                "id": "c",
                "model": "m",
                "choices": [{"index": 0, "text": "t", "finish_reason": "stop"}],
            },
        ),
        (
            "https://api.openai.com/v1/models",
            None,
            {"object": "list", "data": [{"object": "model", "id": "m"}]},
        ),
    ]
    for url, request, response in cases:
        method = "GET" if request is None else "POST"
        for path in _paths(request or {}):
            for odd in _ODD_VALUES:
                x = exchange(_replaced(request or {}, path, odd), response, url=url, method=method)
                recognize(x, "c", registry=FAMILIES)
        for path in _paths(response):
            for odd in _ODD_VALUES:
                changed = _replaced(response, path, odd)
                recognize(
                    exchange(request, changed, url=url, method=method), "c", registry=FAMILIES
                )
                if "completions" in url:
                    body = sse(changed, response, "[DONE]")
                    x = exchange(request, body, url=url, content_type=SSE)
                    recognize(x, "c", registry=FAMILIES)


CHAT_STREAM = (
    CORPUS / "open-telemetry__opentelemetry-python-contrib/instrumentation-genai/"
    "opentelemetry-instrumentation-openai-v2/tests/cassettes/"
    "test_async_chat_completion_streaming.yaml"
)


@pytest.mark.skipif(not CHAT_STREAM.exists(), reason=f"no corpus at {CORPUS}")
def test_stream_chunk_json_but_not_an_object_is_said() -> None:
    from tests.apis.openai.test_endpoints import recorded, with_events

    clean = chat(recorded(CHAT_STREAM))
    assert clean.stream and clean.complete and texts(clean)
    x, at = with_events(recorded(CHAT_STREAM), b"data: [1, 2]\n\n" + b"data: null\n\n")
    call = chat(x)
    assert texts(call) == texts(clean) and call.complete == clean.complete
    bad = [d for d in call.diagnostics if d.code == "openai_chat.bad_chunk"]
    assert [d.location for d in bad] == [
        f"{x.id} response body byte {at}",
        f"{x.id} response body byte {at + len(b'data: [1, 2]') + 2}",
    ]
    assert all("is JSON but not an object" in d.message for d in bad)


def test_missing_or_odd_tool_names_and_roles_are_not_invented() -> None:
    """A tool call without a name has name None (not ""); a name that is not a string is
    kept whole in provider_details; a role that is not a string is None, kept as sent."""
    request = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": 7, "content": "odd"},
            {"content": "no role"},
            "not a message",
        ],
    }
    tool_calls = [
        {"id": "a", "type": "function", "function": {"arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": 5, "arguments": "{}"}},
    ]
    response = {
        "id": "r",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": tool_calls},
                "finish_reason": "tool_calls",
            }
        ],
    }
    call = chat(exchange(request, response))
    assert [m.role for m in call.input_messages] == ["user", None, None, None]
    assert call.extras["message_fields"]["$.messages[1]"] == {"role": 7}
    nameless, numbered = tools(call)
    assert (nameless.name, nameless.provider_details) == (None, {})
    assert (numbered.name, numbered.provider_details["raw_name"]) == (None, 5)
    body = sse(
        {"id": "s", "choices": [{"index": 0, "delta": {"role": "assistant"}}]},
        {
            "id": "s",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c", "function": {"name": ["x"], "arguments": "{}"}},
                            {"index": 1, "id": "d", "function": {"arguments": "{}"}},
                        ]
                    },
                }
            ],
        },
        {"id": "s", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "[DONE]",
    )
    streamed = chat(exchange({**request, "stream": True}, body, content_type=SSE))
    odd, missing = tools(streamed)
    assert (odd.name, odd.provider_details["raw_name"]) == (None, ["x"])
    assert missing.name is None
