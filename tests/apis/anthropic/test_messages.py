"""Anthropic Messages and its neighbours: golden calls, recognition, requests, streams.

Golden calls: ``tests/data/apis/anthropic/<case>.request.json`` and ``<case>.response.json`` or
``.sse`` (the seeds' examples: 001's tool loop, 000 §3.7; and hand-made cases for thinking,
fragmented and invalid tool input, refusal, pause_turn, errors, every input block) become a
call whose JSON must equal ``<case>.call.json``. Regenerate after a reviewed change with::

    .venv/bin/python -m tests.apis.anthropic.test_messages

and read the diff. Targeted tests below assert what each case is about.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.apis.anthropic.messages import FAMILIES
from agentshark.apis.model import (
    BlobPart,
    Call,
    CallError,
    FilePart,
    GenericPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
)
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from agentshark.errors import InputError
from agentshark.model import Exchange
from agentshark.sources.detect import classify_document
from agentshark.sources.vcr import read_vcr
from tests.framing.test_eventstream import event as eventstream_event
from tests.framing.test_eventstream import header as eventstream_header
from tests.framing.test_eventstream import message as eventstream_message
from tests.helpers import CORPUS, ROOT, http_exchange

DATA = ROOT / "tests/data/apis/anthropic"
MESSAGES_URL = "https://api.anthropic.com/v1/messages"
HEADERS = [("content-type", "application/json"), ("anthropic-version", "2023-06-01")]
CASES = sorted(p.name.removesuffix(".request.json") for p in DATA.glob("*.request.json"))
STATUS = {"error_overloaded": 529}


# -- building exchanges ---------------------------------------------------------------------


def exchange(
    request: bytes | dict[str, Any] | None,
    response: bytes | Sequence[tuple[float, bytes]] | None,
    *,
    url: str = MESSAGES_URL,
    method: str = "POST",
    status: int = 200,
    content_type: str = "application/json",
    request_headers: Sequence[tuple[str, str]] = HEADERS,
    response_headers: Sequence[tuple[str, str]] = (),
    response_complete: bool = True,
) -> Exchange:
    body = orjson.dumps(request) if isinstance(request, dict) else request or b""
    pieces = [(1.0, response)] if isinstance(response, bytes) else list(response or [])
    return http_exchange(
        method=method,
        url=url,
        target=url.split("/", 3)[-1],
        request_body=body,
        request_headers=list(request_headers),
        response_pieces=None if response is None else pieces,
        status=status,
        response_headers=[("content-type", content_type), *response_headers],
        response_complete=response_complete,
    )


def sse_pieces(body: bytes, *, start: float = 10.0) -> list[tuple[float, bytes]]:
    """The body one event per piece, each 0.1 s after the last."""
    events = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    return [(start + i / 10, e) for i, e in enumerate(events)]


def case_exchange(name: str) -> Exchange:
    request = (DATA / f"{name}.request.json").read_bytes()
    response: bytes | list[tuple[float, bytes]] | None = None
    content_type = "application/json"
    if (DATA / f"{name}.response.sse").exists():
        response = sse_pieces((DATA / f"{name}.response.sse").read_bytes())
        content_type = "text/event-stream; charset=utf-8"
    elif (DATA / f"{name}.response.json").exists():
        response = (DATA / f"{name}.response.json").read_bytes()
    return exchange(
        request,
        response,
        status=STATUS.get(name, 200),
        content_type=content_type,
        request_headers=[*HEADERS, ("anthropic-beta", "interleaved-thinking-2025-05-14")],
        response_headers=[("request-id", f"req_{name}")],
    )


def parse(x: Exchange) -> Call:
    call = recognize(x, "c1", registry=FAMILIES)
    assert call is not None, "no Anthropic family claimed the exchange"
    return call


def case(name: str) -> Call:
    return parse(case_exchange(name))


def render(call: Call) -> bytes:
    return orjson.dumps(call.to_json(), option=orjson.OPT_INDENT_2) + b"\n"


def output_parts(call: Call) -> list[Part]:
    assert len(call.output_messages) == 1
    return call.output_messages[0].parts


# -- golden calls ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_golden_call(name: str) -> None:
    expected = DATA / f"{name}.call.json"
    assert expected.exists(), (
        f"run python -m tests.apis.anthropic.test_messages to write {expected.name}"
    )
    assert json.loads(render(case(name))) == json.loads(expected.read_bytes())


def regenerate() -> None:
    for name in CASES:
        path = DATA / f"{name}.call.json"
        path.write_bytes(render(case(name)))
        print(f"wrote {path.relative_to(ROOT)}")


# -- the seeds' examples --------------------------------------------------------------------


def test_seed001_tool_request() -> None:
    call = case("seed001_tool_request")
    assert (call.api, call.provider, call.operation) == ("anthropic.messages", "anthropic", "chat")
    assert call.request_model == "claude-sonnet-4-5" and call.response_model is None
    assert call.system_instructions == [TextPart(content="你是测试助手")]
    assert [m.role for m in call.input_messages] == ["user"]
    assert call.input_messages[0].parts == [TextPart(content="跑一下测试")]
    assert call.tool_definitions[0]["name"] == "run_tests"
    assert call.request_params["max_tokens"] == 1024
    assert output_parts(call) == [
        TextPart(content="我先运行测试"),
        ToolCallPart(id="toolu_xyz", name="run_tests", arguments={"suite": "all"}),
    ]
    assert call.output_messages[0].role == "assistant"
    assert call.output_messages[0].finish_reason == "tool_use"
    assert call.finish_reasons == ["tool_use"]
    assert call.response_id == "msg_001"
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens) == (95, 15)
    assert call.usage.total_tokens is None  # Anthropic sends none; none is invented
    assert call.complete and not call.stream and call.error is None
    assert call.ids["provider_request_id"] == "req_seed001_tool_request"
    assert call.request_params["betas"] == ["interleaved-thinking-2025-05-14"]


def test_seed001_tool_round_trip() -> None:
    """The tool_use of one response comes back in the next request, its result in a user
    message: the role stays "user" as sent, the ids pair."""
    asked = case("seed001_tool_request")
    answered = case("seed001_tool_result")
    assert answered.api == "anthropic.messages"  # recognized from blocks, path and header
    assert [m.role for m in answered.input_messages] == ["user", "assistant", "user"]
    replay = answered.input_messages[1].parts
    assert replay == output_parts(asked)
    result = answered.input_messages[2].parts
    assert result == [ToolCallResponsePart(id="toolu_xyz", response="42 passed")]
    call_part = output_parts(asked)[1]
    assert isinstance(call_part, ToolCallPart) and call_part.id == result[0].id  # type: ignore[union-attr]
    assert answered.output_messages == [] and not answered.complete  # no response captured


def test_seed000_weather() -> None:
    """§3.7's response has no "type": still a Messages response."""
    call = case("seed000_weather")
    assert call.request_model == "claude-..."
    assert output_parts(call) == [
        TextPart(content="我来查询"),
        ToolCallPart(id="toolu_01", name="get_weather", arguments={"city": "Shanghai"}),
    ]
    assert call.finish_reasons == ["tool_use"] and call.response_id == "msg_123"
    assert call.tool_definitions == [{"name": "get_weather", "input_schema": {"type": "object"}}]


# -- streams --------------------------------------------------------------------------------


def test_stream_tool_input_in_many_fragments() -> None:
    call = case("stream_tool_use")
    assert call.stream and call.complete
    text, tool = output_parts(call)
    assert text == TextPart(content="我先运行测试")
    assert tool == ToolCallPart(
        id="toolu_xyz",
        name="run_tests",
        arguments={"suite": "all"},
        arguments_raw='{"suite": "all"}',  # the fragments, concatenated, parsed once
    )
    assert call.finish_reasons == ["tool_use"]
    assert call.response_id == "msg_001" and call.response_model == "claude-sonnet-4-5-20250929"
    assert call.timing.first_token == pytest.approx(10.3)  # the first content_block_delta
    assert call.timing.first_byte == 10.0
    usage = call.usage
    assert usage is not None
    # message_delta's output_tokens replace message_start's; input includes the cache read
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (135, 40, 15)
    assert usage.raw is not None and usage.raw["input_tokens"] == 95
    assert call.system_instructions == [
        TextPart(content="你是测试助手", provider_details={"cache_control": {"type": "ephemeral"}})
    ]
    assert call.ids["user_id"] == "user-42"
    assert call.id_sources["user_id"] == "request body $.metadata.user_id"
    assert call.request_params["tool_choice"] == {"type": "auto"}


def test_stream_thinking_with_signature() -> None:
    call = case("stream_thinking")
    thinking, redacted, text = output_parts(call)
    assert thinking == ReasoningPart(
        content="用户想运行测试。先调用 run_tests。",
        provider_details={"signature": "EqQBCkYIBxgCKkBsig=="},
    )
    assert redacted == ReasoningPart(
        content="",
        provider_details={"block_type": "redacted_thinking", "data": "EmwKAhgBEgy3redacted"},
    )
    assert text == TextPart(content="好的。")
    assert call.request_params["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    usage = call.usage
    assert usage is not None
    assert (usage.input_tokens, usage.cache_creation_input_tokens) == (112, 100)
    assert (usage.output_tokens, usage.reasoning_tokens) == (57, 40)


def test_stream_invalid_tool_input_keeps_the_text_and_the_error() -> None:
    call = case("stream_invalid_arguments")
    (tool,) = output_parts(call)
    assert isinstance(tool, ToolCallPart)
    assert tool.arguments is None and tool.arguments != {}
    assert tool.arguments_raw == '{"suite": "al'
    assert tool.arguments_error is not None and "(char 13)" in tool.arguments_error
    assert call.finish_reasons == ["max_tokens"] and call.complete


def test_stream_refusal() -> None:
    call = case("stream_refusal")
    assert output_parts(call) == []
    assert call.finish_reasons == ["refusal"] and call.complete
    assert call.extras["response"]["stop_details"]["category"] == "cyber"


def test_stream_error_event() -> None:
    call = case("stream_error")
    assert call.error == CallError(
        status=None,
        type="overloaded_error",
        code=None,
        message="Overloaded",
        source="stream event 3",
    )
    assert output_parts(call) == [TextPart(content="我先")]  # what arrived is kept
    assert call.finish_reasons == [] and call.output_messages[0].finish_reason is None
    assert call.complete  # the error event is how a failed stream ends


def test_pause_turn_with_server_tools() -> None:
    call = case("pause_turn")
    text, search, result, cited = output_parts(call)
    assert search == ToolCallPart(
        id="srvtoolu_01",
        name="web_search",
        arguments={"query": "Shanghai weather"},
        provider_details={"block_type": "server_tool_use"},
    )
    assert isinstance(result, ToolCallResponsePart) and result.id == "srvtoolu_01"
    assert result.provider_details == {"block_type": "web_search_tool_result"}
    assert result.response[0]["url"] == "https://example.com/w"
    assert text == TextPart(content="I'll search.")  # "citations": null dropped
    assert isinstance(cited, TextPart)
    assert cited.provider_details["citations"][0]["cited_text"] == "Sunny, 25°C"
    assert call.finish_reasons == ["pause_turn"]
    assert call.usage is not None and call.usage.raw is not None
    assert call.usage.raw["server_tool_use"] == {"web_search_requests": 1}


def test_http_error_body() -> None:
    call = case("error_overloaded")
    assert call.error == CallError(
        status=529, type="overloaded_error", code=None, message="Overloaded", source="body"
    )
    assert call.output_messages == [] and call.complete
    assert call.ids["provider_request_id"] == "req_error_overloaded"  # the header wins


def test_error_body_request_id_when_no_header() -> None:
    body = (
        b'{"type":"error","error":{"type":"not_found_error","message":"model: x"},'
        b'"request_id":"req_1"}'
    )
    call = parse(exchange({"model": "x", "max_tokens": 1, "messages": []}, body, status=404))
    assert call.error is not None and call.error.type == "not_found_error"
    assert call.ids["provider_request_id"] == "req_1"
    assert call.id_sources["provider_request_id"] == "response body $.request_id"


# -- requests -------------------------------------------------------------------------------


def test_every_input_block() -> None:
    call = case("request_blocks")
    assert [p.content for p in call.system_instructions if isinstance(p, TextPart)] == [
        "You are a careful reviewer.",
        "Answer briefly.",
    ]
    user, assistant, results = call.input_messages
    assert [type(p) for p in user.parts] == [
        TextPart,
        BlobPart,
        UriPart,
        FilePart,
        BlobPart,
        GenericPart,
        GenericPart,
    ]
    assert user.parts[1] == BlobPart(
        mime_type="image/png", modality="image", content="iVBORw0KGgo="
    )
    assert user.parts[2] == UriPart(
        uri="https://example.com/cat.jpg", mime_type=None, modality="image"
    )
    assert user.parts[3] == FilePart(
        file_id="file_011abc",
        mime_type=None,
        modality=None,
        provider_details={
            "block_type": "document",
            "title": "Spec",
            "citations": {"enabled": True},
        },
    )
    assert isinstance(user.parts[5], GenericPart) and user.parts[5].type == "document"
    assert user.parts[5].fields["source"]["data"] == "plain words"  # kept whole
    assert [type(p) for p in assistant.parts] == [
        ReasoningPart,
        ReasoningPart,
        ToolCallPart,
        ToolCallPart,
    ]
    assert assistant.parts[3] == ToolCallPart(id="toolu_b", name="lint", arguments={})
    assert results.role == "user"
    assert results.parts[1] == ToolCallResponsePart(
        id="toolu_b", response="lint crashed", provider_details={"is_error": True}
    )
    assert results.parts[2] == FilePart(
        file_id="file_011csv",
        mime_type=None,
        modality=None,
        provider_details={"block_type": "container_upload"},
    )
    params = call.request_params
    assert (params["temperature"], params["top_k"], params["stop_sequences"]) == (0.2, 40, ["END"])
    assert params["service_tier"] == "auto"
    assert params["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert call.extras["request"] == {"x_future_field": {"keep": True}}
    assert call.finish_reasons == ["stop_sequence"]
    assert call.extras["response"] == {"stop_sequence": "END"}


def test_unknown_message_fields_and_blocks_are_kept() -> None:
    request = {
        "model": "m",
        "max_tokens": 1,
        "messages": [
            {"role": "user", "content": [{"type": "hologram", "depth": 3}], "tag": "t"},
            "not a message",
        ],
    }
    call = parse(exchange(request, None))
    assert call.input_messages[0].parts == [GenericPart(type="hologram", fields={"depth": 3})]
    assert call.extras["request"] == {"messages[0].tag": "t", "messages[1]": "not a message"}


def test_request_that_is_not_json() -> None:
    x = exchange(b"\x00garbage", (DATA / "seed001_tool_request.response.json").read_bytes())
    call = parse(x)
    assert "anthropic.request_not_json" in [d.code for d in call.diagnostics]
    assert call.complete and call.output_messages


# -- truncated and re-chunked streams -------------------------------------------------------


def _assert_prefix(cut: Call, whole: Call) -> None:
    """Everything ``cut`` holds is a prefix of what ``whole`` holds."""
    if not cut.output_messages:
        return
    parts, full = output_parts(cut), output_parts(whole)
    assert len(parts) <= len(full)
    for got, want in zip(parts, full, strict=False):
        assert type(got) is type(want)
        if isinstance(got, TextPart | ReasoningPart):
            assert isinstance(want, TextPart | ReasoningPart)
            assert want.content.startswith(got.content)
        elif isinstance(got, ToolCallPart):
            assert isinstance(want, ToolCallPart)
            assert (got.id, got.name) == (want.id, want.name)
            assert (want.arguments_raw or "").startswith(got.arguments_raw or "")
    assert cut.finish_reasons in ([], whole.finish_reasons)


def _boundaries(body: bytes) -> list[int]:
    ends = [i + 2 for i in range(len(body)) if body[i : i + 2] == b"\n\n"]
    return [0, *ends]


@pytest.mark.parametrize("name", ["stream_tool_use", "stream_thinking", "stream_error"])
def test_cut_at_every_byte(name: str) -> None:
    body = (DATA / f"{name}.response.sse").read_bytes()
    request = (DATA / f"{name}.request.json").read_bytes()
    whole = parse(exchange(request, body, content_type="text/event-stream"))
    assert whole.complete
    for cut in range(len(body)):
        x = exchange(request, body[:cut], content_type="text/event-stream", response_complete=False)
        call = parse(x)
        assert not call.complete
        _assert_prefix(call, whole)
        # the same bytes, though the capture says the response ended there: the last event
        # is whole only with its blank line, at the very end
        x = exchange(request, body[:cut], content_type="text/event-stream")
        assert not parse(x).complete


def _cassette(file: str) -> list[Exchange]:
    """The exchanges of a corpus cassette (none when it is absent or not a cassette)."""
    path = CORPUS / file
    try:
        kind, doc = classify_document(path.read_bytes(), file)
    except (InputError, OSError):
        return []
    if kind != "vcr":
        return []
    ids = itertools.count()
    out = read_vcr(doc, file, 0, lambda: f"e{next(ids)}")
    return [x for x in out if isinstance(x, Exchange)]


def _corpus_streams() -> list[tuple[str, Exchange]]:
    files = [
        "pydantic__pydantic-ai/tests/models/cassettes/test_anthropic/"
        "test_anthropic_model_thinking_part_stream.yaml",
        "pydantic__pydantic-ai/tests/models/cassettes/test_anthropic/"
        "test_pause_turn_web_search_streaming_vcr.yaml",
    ]
    return [
        (f"{file}#{x.id}", x)
        for file in files
        for x in _cassette(file)
        if ExchangeView(x).framing == "sse"
    ]


CORPUS_STREAMS = _corpus_streams()


@pytest.mark.skipif(not CORPUS_STREAMS, reason=f"no corpus at {CORPUS}")
@pytest.mark.parametrize("x", [x for _, x in CORPUS_STREAMS], ids=[n for n, _ in CORPUS_STREAMS])
def test_real_stream_cut_at_every_event_boundary_and_inside(x: Exchange) -> None:
    whole = parse(x)
    assert whole.complete
    body = ExchangeView(x).response_body
    assert x.request is not None and x.response is not None
    request = x.request.body.data()
    marks = _boundaries(body)
    cuts = sorted({*marks, *((a + b) // 2 for a, b in itertools.pairwise(marks))})
    for cut in cuts:
        if cut >= len(body):
            continue
        part = exchange(
            request, body[:cut], content_type="text/event-stream", response_complete=False
        )
        call = parse(part)
        assert not call.complete
        _assert_prefix(call, whole)


def _without_timing(call: Call) -> dict[str, Any]:
    out = call.to_json()
    del out["timing"]
    return out


@pytest.mark.parametrize("name", ["stream_tool_use", "stream_thinking"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_rechunking_gives_the_same_call(name: str, data: st.DataObject) -> None:
    body = (DATA / f"{name}.response.sse").read_bytes()
    request = (DATA / f"{name}.request.json").read_bytes()
    whole = parse(exchange(request, body, content_type="text/event-stream"))
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=40)))
    pieces = [(1.0, body[a:b]) for a, b in itertools.pairwise([0, *cuts, len(body)])]
    again = parse(exchange(request, pieces, content_type="text/event-stream"))
    assert _without_timing(again) == _without_timing(whole)


# -- odd streams ----------------------------------------------------------------------------


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events
    )


START: dict[str, Any] = {
    "type": "message_start",
    "message": {
        "id": "msg_a",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    },
}
STOP: dict[str, Any] = {"type": "message_stop"}
REQUEST: dict[str, Any] = {"model": "claude", "max_tokens": 10, "stream": True, "messages": []}


def _stream_call(*events: dict[str, Any]) -> Call:
    return parse(exchange(REQUEST, _sse(*events), content_type="text/event-stream"))


def test_tool_without_input_deltas_keeps_the_start_input() -> None:
    call = _stream_call(
        START,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "noargs", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {"type": "content_block_stop", "index": 0},
        STOP,
    )
    assert output_parts(call) == [ToolCallPart(id="t", name="noargs", arguments={})]


def test_second_message_start_keeps_the_interrupted_message() -> None:
    second = {**START, "message": {**START["message"], "id": "msg_b"}}
    text = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }

    def delta(t: str) -> dict[str, Any]:
        return {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": t},
        }

    call = _stream_call(START, text, delta("cut"), second, text, delta("whole"), STOP)
    assert call.response_id == "msg_b"
    assert output_parts(call) == [TextPart(content="whole")]
    abandoned = call.extras["response"]["abandoned_messages"]
    assert abandoned == [{"id": "msg_a", "parts": [{"type": "text", "content": "cut"}]}]
    assert "anthropic.stream.restarted" in [d.code for d in call.diagnostics]


def test_odd_events_are_kept_and_reported() -> None:
    call = _stream_call(
        START,
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "x"}},
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": "{"},
        },
        {"type": "future_event", "n": 1},
        STOP,
    )
    codes = [d.code for d in call.diagnostics]
    assert "anthropic.stream.delta_without_start" in codes
    assert "anthropic.stream.delta_mismatch" in codes
    assert "anthropic.stream.unknown_event" in codes
    assert output_parts(call) == [TextPart(content="x")]
    assert call.extras["response"]["unknown_events"] == [{"type": "future_event", "n": 1}]
    assert call.extras["response"]["unplaced_deltas"][0]["delta"]["partial_json"] == "{"


def test_bad_event_json_is_a_diagnostic() -> None:
    body = _sse(START) + b"event: content_block_delta\ndata: {not json\n\n" + _sse(STOP)
    call = parse(exchange(REQUEST, body, content_type="text/event-stream"))
    assert "anthropic.stream.bad_event" in [d.code for d in call.diagnostics]
    assert call.complete and call.response_id == "msg_a"


def test_compaction_and_citation_deltas() -> None:
    call = _stream_call(
        START,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "compaction", "content": None},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "compaction_delta", "content": "summary"},
        },
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "text", "text": "", "citations": []},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "citations_delta", "citation": {"cited_text": "a"}},
        },
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "A."}},
        STOP,
    )
    compaction, text = output_parts(call)
    assert compaction == GenericPart(
        type="compaction", fields={"content": "summary", "encrypted_content": None}
    )
    assert text == TextPart(content="A.", provider_details={"citations": [{"cited_text": "a"}]})


# -- other hosts and paths ------------------------------------------------------------------

VERTEX = (
    "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/"
    "publishers/anthropic/models/claude-sonnet-4-5@20250929"
)


def test_vertex_stream_raw_predict() -> None:
    body = (DATA / "stream_tool_use.response.sse").read_bytes()
    request = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 64, "messages": []}
    x = exchange(
        request,
        body,
        url=f"{VERTEX}:streamRawPredict",
        content_type="text/event-stream",
        request_headers=[("content-type", "application/json")],
    )
    call = parse(x)
    assert (call.api, call.provider) == ("anthropic.messages", "vertex.anthropic")
    assert call.request_model == "claude-sonnet-4-5@20250929"  # from the URL
    assert call.stream and call.complete
    assert call.request_params["anthropic_version"] == "vertex-2023-10-16"


def test_vertex_raw_predict_and_count_tokens() -> None:
    body = (DATA / "seed001_tool_request.response.json").read_bytes()
    request = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 64, "messages": []}
    call = parse(exchange(request, body, url=f"{VERTEX}:rawPredict", request_headers=[]))
    assert (call.provider, call.request_model, call.stream) == (
        "vertex.anthropic",
        "claude-sonnet-4-5@20250929",
        False,
    )
    url = VERTEX.rsplit("/", 1)[0] + "/count-tokens:rawPredict"
    request = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}
    call = parse(exchange(request, b'{"input_tokens": 9}', url=url, request_headers=[]))
    assert (call.api, call.provider) == ("anthropic.count_tokens", "vertex.anthropic")
    assert call.usage is not None and call.usage.input_tokens == 9


def test_vertex_google_error() -> None:
    body = b'{"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}'
    request = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 64, "messages": []}
    call = parse(
        exchange(request, body, url=f"{VERTEX}:rawPredict", status=429, request_headers=[])
    )
    assert call.error == CallError(
        status=429, type="RESOURCE_EXHAUSTED", code="429", message="Quota exceeded", source="body"
    )


BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0"


def test_bedrock_invoke() -> None:
    body = (DATA / "seed001_tool_request.response.json").read_bytes()
    request = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": []}
    call = parse(exchange(request, body, url=f"{BEDROCK}/invoke", request_headers=[]))
    assert (call.api, call.provider) == ("anthropic.messages", "bedrock.anthropic")
    assert call.request_model == "anthropic.claude-3-5-haiku-20241022-v1:0"  # URL-decoded
    assert output_parts(call)[1] == ToolCallPart(
        id="toolu_xyz", name="run_tests", arguments={"suite": "all"}
    )


def _bedrock_stream(events: list[dict[str, Any]], *, exception: str | None = None) -> bytes:
    frames = [
        eventstream_event(
            "chunk", orjson.dumps({"bytes": base64.b64encode(orjson.dumps(e)).decode(), "p": "abc"})
        )
        for e in events
    ]
    if exception is not None:
        headers = eventstream_header(":exception-type", 7, exception) + eventstream_header(
            ":message-type", 7, "exception"
        )
        frames.append(eventstream_message(headers, b'{"message": "Too many requests"}'))
    return b"".join(frames)


def test_bedrock_invoke_with_response_stream() -> None:
    text = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "hi"},
    }
    metrics = {"inputTokenCount": 5, "outputTokenCount": 2}
    stop = {"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics}
    body = _bedrock_stream([START, text, delta, stop])
    request = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": []}
    x = exchange(
        request,
        body,
        url=f"{BEDROCK}/invoke-with-response-stream",
        content_type="application/vnd.amazon.eventstream",
        request_headers=[],
    )
    call = parse(x)
    assert (call.api, call.provider, call.stream, call.complete) == (
        "anthropic.messages",
        "bedrock.anthropic",
        True,
        True,
    )
    assert output_parts(call) == [TextPart(content="hi")]
    assert call.extras["response"]["amazon-bedrock-invocationMetrics"] == metrics

    body = _bedrock_stream([START, text, delta], exception="throttlingException")
    call = parse(
        exchange(
            request,
            body,
            url=f"{BEDROCK}/invoke-with-response-stream",
            content_type="application/vnd.amazon.eventstream",
            request_headers=[],
        )
    )
    assert call.error == CallError(
        status=None,
        type="throttlingException",
        code=None,
        message="Too many requests",
        source="stream event 3",
    )
    assert output_parts(call) == [TextPart(content="hi")]


def test_bedrock_error_body() -> None:
    request = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": []}
    call = parse(
        exchange(
            request,
            b'{"message": "Malformed input request"}',
            url=f"{BEDROCK}/invoke",
            status=400,
            request_headers=[],
            response_headers=[
                ("x-amzn-ErrorType", "ValidationException:http://internal.amazon.com/")
            ],
        )
    )
    assert call.error == CallError(
        status=400,
        type="ValidationException",
        code=None,
        message="Malformed input request",
        source="body",
    )


@pytest.mark.parametrize(
    ("url", "provider"),
    [
        ("http://localhost:8787/anthropic/v1/messages", "anthropic"),
        ("https://api.deepseek.com/anthropic/v1/messages", "deepseek"),
        ("https://gateway.example/v1/messages", None),
    ],
)
def test_gateways_and_compatible_vendors(url: str, provider: str | None) -> None:
    body = (DATA / "seed001_tool_request.response.json").read_bytes()
    call = parse(exchange((DATA / "seed001_tool_request.request.json").read_bytes(), body, url=url))
    assert (call.api, call.provider) == ("anthropic.messages", provider)


# -- neighbouring endpoints -----------------------------------------------------------------


def test_count_tokens() -> None:
    request = {
        "model": "claude-sonnet-4-5",
        "system": "s",
        "messages": [{"role": "user", "content": "hi"}],
    }
    call = parse(
        exchange(request, b'{"input_tokens":19}', url=f"{MESSAGES_URL}/count_tokens?beta=true")
    )
    assert (call.api, call.operation) == ("anthropic.count_tokens", "count_tokens")
    assert call.usage is not None and call.usage.input_tokens == 19
    assert call.system_instructions == [TextPart(content="s")] and call.complete


def test_models_batches_files() -> None:
    models = (
        b'{"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude"}],'
        b'"has_more":false}'
    )
    call = parse(exchange(None, models, url="https://api.anthropic.com/v1/models", method="GET"))
    assert (call.api, call.operation) == ("anthropic.models", "models.list")
    batch = b'{"id":"msgbatch_01","type":"message_batch","processing_status":"in_progress"}'
    call = parse(exchange({"requests": []}, batch, url=f"{MESSAGES_URL}/batches"))
    assert (call.api, call.operation, call.response_id) == (
        "anthropic.message_batches",
        "message_batches.create",
        "msgbatch_01",
    )
    call = parse(
        exchange(None, b"{}", url=f"{MESSAGES_URL}/batches/msgbatch_01/results", method="GET")
    )
    assert (call.operation, call.ids["batch_id"]) == ("message_batches.results", "msgbatch_01")
    deleted = b'{"id":"file_01","type":"file_deleted"}'
    call = parse(
        exchange(None, deleted, url="https://api.anthropic.com/v1/files/file_01", method="DELETE")
    )
    assert (call.api, call.operation, call.ids["file_id"]) == (
        "anthropic.files",
        "files.delete",
        "file_01",
    )


def test_openai_models_list_is_not_claimed() -> None:
    body = b'{"object":"list","data":[{"id":"gpt-4o","object":"model","owned_by":"openai"}]}'
    x = exchange(
        None, body, url="https://api.openai.com/v1/models", method="GET", request_headers=[]
    )
    assert recognize(x, "c1", registry=FAMILIES) is None


def test_legacy_text_completions() -> None:
    request: dict[str, Any] = {
        "model": "claude-instant-1.2",
        "prompt": "\n\nHuman: hi\n\nAssistant:",
        "max_tokens_to_sample": 9,
    }
    body = (
        b'{"type":"completion","id":"compl_01","completion":" Hello!",'
        b'"stop_reason":"stop_sequence","model":"claude-instant-1.2","stop":"\\n\\nHuman:"}'
    )
    call = parse(exchange(request, body, url="https://api.anthropic.com/v1/complete"))
    assert (call.api, call.operation) == ("anthropic.completions", "text_completion")
    assert output_parts(call) == [TextPart(content=" Hello!")]
    assert (
        call.finish_reasons == ["stop_sequence"] and call.extras["response"]["stop"] == "\n\nHuman:"
    )
    assert call.input_messages[0].parts == [TextPart(content=request["prompt"])]
    events: list[dict[str, Any]] = [
        {"type": "completion", "completion": " Hel", "stop_reason": None, "model": "claude-2"},
        {
            "type": "completion",
            "completion": "lo",
            "stop_reason": "stop_sequence",
            "model": "claude-2",
        },
    ]
    call = parse(
        exchange(
            {**request, "stream": True},
            _sse(*events),
            url="https://api.anthropic.com/v1/complete",
            content_type="text/event-stream",
        )
    )
    assert output_parts(call) == [TextPart(content=" Hello")] and call.complete


# -- not ours -------------------------------------------------------------------------------


def _openai_chat_exchanges() -> list[tuple[str, Exchange]]:
    manifest = CORPUS / "manifest.jsonl"
    if not manifest.exists():
        return []
    out: list[tuple[str, Exchange]] = []
    for line in manifest.read_text().splitlines():
        entry = json.loads(line)
        if "openai-chat" not in entry["api_families"] and not any(
            f.startswith("openai-compatible") for f in entry["api_families"]
        ):
            continue
        out += [
            (f"{entry['file']}#{x.id}", x)
            for x in _cassette(entry["file"])
            if x.request is not None and "chat/completions" in x.request.url
        ]
        if len(out) >= 60:
            break
    return out


OPENAI = _openai_chat_exchanges()


@pytest.mark.skipif(not OPENAI, reason=f"no corpus at {CORPUS}")
@pytest.mark.parametrize("x", [x for _, x in OPENAI], ids=[n for n, _ in OPENAI])
def test_openai_chat_corpus_is_not_claimed(x: Exchange) -> None:
    view = ExchangeView(x)
    assert all(family.match(view) <= 0 for family in FAMILIES)
    assert recognize(x, "c1", registry=FAMILIES) is None


@pytest.mark.parametrize(
    "request_body",
    [
        # max_tokens, messages and a system prompt... in OpenAI's shape
        {
            "model": "gpt-4o",
            "max_tokens": 5,
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
        },
        {
            "model": "gpt-4o",
            "max_tokens": 5,
            "messages": [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c", "content": "1"},
            ],
        },
        {
            "model": "gpt-4o",
            "max_tokens": 5,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "?"},
                        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                    ],
                }
            ],
        },
    ],
)
def test_openai_chat_bodies_are_not_claimed(request_body: dict[str, Any]) -> None:
    choices = (
        b'{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'
    )
    for response in (choices, None):
        x = exchange(
            request_body,
            response,
            url="https://api.openai.com/v1/chat/completions",
            request_headers=[],
        )
        assert all(f.match(ExchangeView(x)) <= 0 for f in FAMILIES)


# -- errors that are not JSON, subresources, fuzz -------------------------------------------


def test_html_error_page() -> None:
    body = b"<html><body>502 Bad Gateway</body></html>"
    x = exchange(REQUEST, body, status=502, content_type="text/html")
    call = parse(x)
    assert call.error == CallError(
        status=502, type=None, code=None, message=body.decode(), source="http"
    )
    assert call.complete and call.stream  # the stream was asked for; the error came whole


def test_batch_results_are_not_parsed_as_one_document() -> None:
    jsonl = b'{"custom_id":"a","result":{"type":"succeeded"}}\n{"custom_id":"b","result":{}}\n'
    url = f"{MESSAGES_URL}/batches/msgbatch_01/results"
    call = parse(exchange(None, jsonl, url=url, method="GET", content_type="application/x-jsonl"))
    assert (call.operation, call.complete, call.diagnostics) == (
        "message_batches.results",
        True,
        [],
    )


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
EVENT_NAMES = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
    "other",
]
BLOCK_TYPES = [
    "text",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "server_tool_use",
    "web_search_tool_result",
    "image",
    "document",
    "compaction",
    "fallback",
    "x",
]
DELTA_TYPES = [
    "text_delta",
    "input_json_delta",
    "thinking_delta",
    "signature_delta",
    "citations_delta",
    "compaction_delta",
    "x_delta",
]
FIELDS = st.sampled_from(
    [
        "text",
        "thinking",
        "partial_json",
        "signature",
        "citation",
        "id",
        "name",
        "input",
        "content",
        "source",
        "data",
        "to",
        "citations",
    ]
)


def _shaped(types: list[str]) -> st.SearchStrategy[Any]:
    typed = st.fixed_dictionaries({"type": st.sampled_from(types)})
    extra = st.dictionaries(FIELDS, JSON_VALUES, max_size=4)
    return st.one_of(JSON_VALUES, st.builds(lambda a, b: {**b, **a}, typed, extra))


EVENTS = st.builds(
    lambda name, index, block, delta, message, usage: {
        "type": name,
        "index": index,
        "content_block": block,
        "delta": delta,
        "message": message,
        "usage": usage,
    },
    st.sampled_from(EVENT_NAMES),
    st.one_of(st.integers(0, 2), JSON_VALUES),
    _shaped(BLOCK_TYPES),
    _shaped(DELTA_TYPES),
    st.one_of(JSON_VALUES, st.just(START["message"])),
    st.one_of(
        JSON_VALUES,
        st.dictionaries(st.sampled_from(["input_tokens", "output_tokens"]), JSON_VALUES),
    ),
)


@settings(max_examples=300, deadline=None)
@given(events=st.lists(EVENTS, max_size=12), junk=st.binary(max_size=40))
def test_fuzzed_streams_never_raise(events: list[dict[str, Any]], junk: bytes) -> None:
    body = _sse(START, *events) + junk
    call = parse(exchange(REQUEST, body, content_type="text/event-stream"))
    orjson.dumps(call.to_json())  # the report can always be written


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(
        st.one_of(
            JSON_VALUES,
            st.fixed_dictionaries(
                {
                    "role": st.sampled_from(["user", "assistant"]),
                    "content": st.one_of(
                        JSON_VALUES, st.lists(_shaped([*BLOCK_TYPES, "tool_result"]), max_size=4)
                    ),
                }
            ),
        ),
        max_size=4,
    ),
    system=JSON_VALUES,
    response=_shaped(["message", "error"]),
    status=st.sampled_from([200, 400, 529]),
)
def test_fuzzed_bodies_never_raise(
    messages: list[Any], system: Any, response: Any, status: int
) -> None:
    request = {"model": "m", "max_tokens": 1, "messages": messages, "system": system}
    if isinstance(response, dict):
        response.setdefault("content", [])
        response.setdefault("stop_reason", None)
    x = exchange(request, orjson.dumps(response), status=status)
    call = recognize(x, "c1", registry=FAMILIES)
    if call is not None:
        orjson.dumps(call.to_json())


def test_openai_responses_error_stream_is_not_claimed() -> None:
    body = b'event: error\ndata: {"type":"error","code":"server_error","message":"boom"}\n\n'
    request = {"model": "gpt-5", "input": "hi", "stream": True}
    x = exchange(
        request,
        body,
        url="https://api.openai.com/v1/responses",
        content_type="text/event-stream",
        request_headers=[],
    )
    assert all(f.match(ExchangeView(x)) <= 0 for f in FAMILIES)


if __name__ == "__main__":
    regenerate()


def test_tool_use_without_a_string_name_is_a_tool_call_named_null() -> None:
    blocks = [
        {"type": "tool_use", "id": "a", "input": {"q": 1}},
        {"type": "tool_use", "id": "b", "name": 3, "input": {}},
    ]
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": blocks,
        "stop_reason": "tool_use",
    }
    request = {"model": "claude", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    call = parse(exchange(request, orjson.dumps(body)))
    first, second = output_parts(call)
    assert isinstance(first, ToolCallPart) and isinstance(second, ToolCallPart)
    assert (first.name, first.arguments, "raw_name" in first.provider_details) == (
        None,
        {"q": 1},
        False,
    )
    assert (second.name, second.provider_details["raw_name"]) == (None, 3)
