"""Cohere: golden calls of corpus files, recognition, streams, tool calls, endpoints.

Golden calls: each corpus file of :data:`CORPUS_CASES` gives the calls of every exchange,
compared with ``tests/data/apis/cohere/<case>.calls.json``. Regenerate after a reviewed
change with ``.venv/bin/python -m tests.apis.cohere.test_chat`` and read the diff.
"""

from __future__ import annotations

import json

import orjson
import pytest

from agentshark.apis.model import (
    Call,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from agentshark.apis.registry import recognize
from agentshark.model import Exchange
from tests.apis.cohere.test_corpus import fixture_exchange
from tests.apis.corpus_cases import exchanges
from tests.helpers import CORPUS, ROOT, http_exchange

DATA = ROOT / "tests/data/apis/cohere"
_TL = "traceloop__openllmetry/packages/opentelemetry-instrumentation-cohere/tests/cassettes/"
_PA = "pydantic__pydantic-ai/tests/"
CORPUS_CASES = {
    "v2_tool_history": _TL
    + "test_chat/test_cohere_v2_chat_legacy_with_tool_calls_and_history.yaml",
    "v2_stream_tools": _TL
    + "test_chat/test_cohere_v2_chat_legacy_with_tool_calls_and_streaming.yaml",
    "v2_thinking": _PA + "models/cassettes/test_cohere/test_cohere_model_thinking_part.yaml",
    "v1_chat": _TL + "test_chat/test_cohere_chat_legacy.yaml",
    "v1_stream": _TL + "test_chat/test_cohere_chat_legacy_with_streaming.yaml",
    "generate": _TL + "test_completion/test_cohere_completion_legacy.yaml",
    "embed_v2": _TL + "test_embed/test_cohere_v2_embed_legacy.yaml",
    "embed_error": _PA + "cassettes/test_embeddings/TestCohere.test_embed_error.yaml",
    "rerank_v1": _TL + "test_rerank/test_cohere_rerank_legacy.yaml",
    "rerank_v2": _TL + "test_rerank/test_cohere_v2_rerank_legacy.yaml",
    "tokenize": _PA + "cassettes/test_embeddings/TestCohere.test_count_tokens.yaml",
}
VERCEL = CORPUS / "vercel__ai/packages/cohere/src/__fixtures__"
pytestmark = [
    pytest.mark.skipif(not (CORPUS / "manifest.jsonl").exists(), reason="no corpus"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


def parse(x: Exchange) -> Call:
    call = recognize(x, "c1")
    assert call is not None, "no family claimed the exchange"
    return call


def corpus_calls(name: str) -> list[Call]:
    return [parse(x) for x in exchanges(CORPUS_CASES[name])]


def render(calls: list[Call]) -> bytes:
    return orjson.dumps([c.to_json() for c in calls], option=orjson.OPT_INDENT_2) + b"\n"


@pytest.mark.parametrize("name", sorted(CORPUS_CASES))
def test_golden_calls(name: str) -> None:
    path = DATA / f"{name}.calls.json"
    assert path.exists(), f"run python -m tests.apis.cohere.test_chat to write {path.name}"
    assert json.loads(render(corpus_calls(name))) == json.loads(path.read_bytes())


def regenerate() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for name in sorted(CORPUS_CASES):
        path = DATA / f"{name}.calls.json"
        path.write_bytes(render(corpus_calls(name)))
        print(f"wrote {path.relative_to(ROOT)}")


# -- what the cases show ----------------------------------------------------------------------


def test_v2_tool_loop_ids_and_results() -> None:
    first, second = corpus_calls("v2_tool_history")
    assert (first.api, first.provider, first.extras["api_version"]) == (
        "cohere.chat",
        "cohere",
        "v2",
    )
    plan, *calls = first.output_messages[0].parts
    assert isinstance(plan, ReasoningPart) and plan.provider_details == {"field": "tool_plan"}
    assert [(c.id, c.name, c.arguments) for c in calls if isinstance(c, ToolCallPart)] == [
        ("get_time_dp3men9jrvhf", "get_time", {"location": "Tokyo"}),
        ("get_weather_d7arjgsc96yf", "get_weather", {"location": "Tokyo"}),
    ]
    assert first.finish_reasons == ["TOOL_CALL"]
    assert first.usage is not None and (first.usage.input_tokens, first.usage.output_tokens) == (
        968,
        83,
    )
    results = [
        p for m in second.input_messages for p in m.parts if isinstance(p, ToolCallResponsePart)
    ]
    assert [r.id for r in results] == ["get_time_dp3men9jrvhf", "get_weather_d7arjgsc96yf"]
    text = second.output_messages[0].parts[0]
    assert isinstance(text, TextPart) and len(text.provider_details["citations"]) == 2


def test_v2_stream_tool_calls_assembled() -> None:
    (call,) = corpus_calls("v2_stream_tools")
    assert call.stream and call.complete and call.finish_reasons == ["TOOL_CALL"]
    tools = [p for p in call.output_messages[0].parts if isinstance(p, ToolCallPart)]
    assert [(t.id, t.name, t.arguments) for t in tools] == [
        ("get_time_dg5wwc00d8v5", "get_time", {"location": "Tokyo"}),
        ("get_weather_bc8241gkqss5", "get_weather", {"location": "Tokyo"}),
    ]
    assert tools[0].arguments_raw == '{\n    "location": "Tokyo"\n}'


def test_v1_stream_text_checked_against_stream_end() -> None:
    (call,) = corpus_calls("v1_stream")
    assert call.extras["api_version"] == "v1" and call.stream and call.complete
    assert call.output_messages[0].role == "CHATBOT"
    assert not [d for d in call.diagnostics if d.code == "stream.done_mismatch"]
    assert call.response_id == "12c00d26-e3bb-48c0-8c49-262155b57d64"


def test_v2_stream_without_message_end_is_incomplete() -> None:
    x = fixture_exchange(VERCEL / "cohere-tool-call.chunks.txt")
    body = x.response.body.pieces[0][1] if x.response is not None else b""
    cut = body[: body.index(b"event: message-end")]
    call = parse(
        http_exchange(
            method="POST",
            url="https://api.cohere.com/v2/chat",
            target="/v2/chat",
            request_body=b'{"model":"command-a","messages":[],"stream":true}',
            request_headers=[("content-type", "application/json")],
            response_pieces=[(1.0, cut)],
            response_headers=[("content-type", "text/event-stream")],
        )
    )
    assert call.api == "cohere.chat" and not call.complete and call.finish_reasons == []
    assert "cohere.unfinished" in [d.code for d in call.diagnostics]
    assert call.usage is None


def test_stream_byte_by_byte_gives_the_same_call() -> None:
    x = fixture_exchange(VERCEL / "cohere-reasoning.chunks.txt")
    whole = parse(x)
    body = x.response.body.pieces[0][1] if x.response is not None else b""
    split = parse(
        http_exchange(
            method="POST",
            url="https://api.cohere.com/v2/chat",
            target="/v2/chat",
            request_body=b'{"model":"command-a","messages":[]}',
            request_headers=[("content-type", "application/json")],
            response_pieces=[(1.0 + i / 1e4, body[i : i + 1]) for i in range(len(body))],
            response_headers=[("content-type", "text/event-stream")],
        )
    )
    assert split.output_messages == whole.output_messages and split.complete
    assert isinstance(whole.output_messages[0].parts[0], ReasoningPart)


def test_writers_v1_chat_is_not_cohere() -> None:
    body = (
        b'{"id":"c","object":"chat.completion","model":"palmyra-x5","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'
    )
    call = parse(
        http_exchange(
            method="POST",
            url="https://api.writer.com/v1/chat",
            target="/v1/chat",
            request_body=b'{"model":"palmyra-x5","messages":[{"role":"user","content":"hi"}]}',
            request_headers=[("content-type", "application/json")],
            response_pieces=[(1.0, body)],
            response_headers=[("content-type", "application/json")],
        )
    )
    assert call.api == "openai.chat"


def test_endpoints_by_name() -> None:
    assert [(c.api, c.operation) for c in corpus_calls("embed_v2")] == [
        ("cohere.embed", "embeddings")
    ]
    (error,) = corpus_calls("embed_error")
    assert error.error is not None and error.error.status == 404 and error.complete
    (rerank,) = corpus_calls("rerank_v1")
    assert rerank.api == "cohere.rerank" and rerank.extras["rerank"]["results"][0] == [3, 0.9999989]
    (generate,) = corpus_calls("generate")
    assert (generate.api, generate.operation, generate.finish_reasons) == (
        "cohere.generate",
        "text_completion",
        ["COMPLETE"],
    )
    (tokens,) = corpus_calls("tokenize")
    assert tokens.api == "cohere.tokenize" and tokens.extras["tokens"] == 4


if __name__ == "__main__":
    regenerate()
