"""Ollama's native API: golden calls, recognition, streams, tool calls, endpoints.

Golden calls, two kinds, each compared with ``tests/data/apis/ollama/<case>.call(s).json``:

- corpus files (:data:`CORPUS_CASES`): every call of the cassette, as the pipeline reads it;
- hand-made cases ``<case>.request.json`` + ``<case>.response.json`` / ``.ndjson``, bodies
  shaped as Ollama's API reference shows them (https://github.com/ollama/ollama/blob/main/docs/api.md,
  "Chat request (with tools)", "Chat request (with images)", thinking in
  https://ollama.com/blog/thinking), for what the corpus lacks: thinking, tool calls in a
  response, tool results, images, a stream cut before ``done``, errors. Each is also read by
  the ``ollama`` client in :func:`test_hand_made_case_agrees_with_sdk`.

Regenerate after a reviewed change with ``.venv/bin/python -m tests.apis.ollama.test_native``.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from agentshark.apis.model import (
    BlobPart,
    Call,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from agentshark.model import Exchange
from tests.apis.corpus_cases import exchanges
from tests.apis.ollama.test_corpus import _ours, _sdk
from tests.helpers import CORPUS, ROOT, http_exchange

DATA = ROOT / "tests/data/apis/ollama"
_TL = "traceloop__openllmetry/packages/opentelemetry-instrumentation-ollama/tests/cassettes/"
CORPUS_CASES = {
    "corpus_chat": _TL + "test_chat/test_ollama_chat_legacy.yaml",
    "corpus_chat_stream": _TL + "test_chat/test_ollama_streaming_chat_legacy.yaml",
    "corpus_chat_tool_history": _TL + "test_chat/test_ollama_chat_tool_calls_legacy.yaml",
    "corpus_generate": _TL + "test_generation/test_ollama_generation_legacy.yaml",
    "corpus_generate_stream": _TL + "test_generation/test_ollama_streaming_generation_legacy.yaml",
    "corpus_embeddings": _TL + "test_embeddings/test_ollama_embeddings_legacy.yaml",
}
CASES = sorted(p.name.removesuffix(".request.json") for p in DATA.glob("*.request.json"))
STATUS = {"chat_model_not_found": 404}
URL = "http://127.0.0.1:11434"


def exchange(
    path: str,
    request: bytes | dict[str, object] | None,
    response: bytes | list[tuple[float, bytes]] | None,
    *,
    method: str = "POST",
    status: int = 200,
    content_type: str = "application/json; charset=utf-8",
    url: str = URL,
    complete: bool = True,
) -> Exchange:
    body = orjson.dumps(request) if isinstance(request, dict) else request or b""
    pieces = [(1.0, response)] if isinstance(response, bytes) else response
    return http_exchange(
        method=method,
        url=url + path,
        target=path,
        request_body=body,
        request_headers=[("content-type", "application/json")],
        response_pieces=pieces,
        status=status,
        response_headers=[("content-type", content_type)],
        response_complete=complete,
    )


def case_exchange(name: str) -> Exchange:
    request = (DATA / f"{name}.request.json").read_bytes()
    path = "/api/generate" if name.startswith("generate") else "/api/chat"
    ndjson = DATA / f"{name}.response.ndjson"
    if ndjson.exists():
        lines = ndjson.read_bytes().splitlines(keepends=True)
        pieces = [(10.0 + i / 10, line) for i, line in enumerate(lines)]
        return exchange(path, request, pieces, content_type="application/x-ndjson")
    response = (DATA / f"{name}.response.json").read_bytes()
    return exchange(path, request, response, status=STATUS.get(name, 200))


def parse(x: Exchange) -> Call:
    call = recognize(x, "c1")
    assert call is not None, "no family claimed the exchange"
    return call


def render(calls: list[Call]) -> bytes:
    value = [c.to_json() for c in calls]
    return orjson.dumps(value if len(value) != 1 else value[0], option=orjson.OPT_INDENT_2) + b"\n"


def golden(name: str) -> tuple[Path, bytes]:
    if name in CORPUS_CASES:
        calls = [parse(x) for x in exchanges(CORPUS_CASES[name])]
        return DATA / f"{name}.calls.json", render(calls)
    return DATA / f"{name}.call.json", render([parse(case_exchange(name))])


@pytest.mark.parametrize(
    "name", [*CASES, *(n for n in CORPUS_CASES if (CORPUS / "manifest.jsonl").exists())]
)
def test_golden_call(name: str) -> None:
    path, made = golden(name)
    assert path.exists(), f"run python -m tests.apis.ollama.test_native to write {path.name}"
    assert json.loads(made) == json.loads(path.read_bytes())


def regenerate() -> None:
    for name in [*CASES, *CORPUS_CASES]:
        path, made = golden(name)
        path.write_bytes(made)
        print(f"wrote {path.relative_to(ROOT)}")


@pytest.mark.parametrize("name", CASES)
def test_hand_made_case_agrees_with_sdk(name: str) -> None:
    x = case_exchange(name)
    call = parse(x)
    theirs = _sdk(ExchangeView(x), call.api)
    mine = _ours(call)
    assert {k: mine.get(k) for k in theirs} == theirs


# -- what each case is about ------------------------------------------------------------------


def test_stream_with_thinking_and_tool_calls() -> None:
    call = parse(case_exchange("chat_tools_thinking_stream"))
    assert (call.api, call.provider, call.operation, call.stream) == (
        "ollama.chat",
        "ollama",
        "chat",
        True,
    )
    assert call.complete and call.finish_reasons == ["stop"]
    assert call.system_instructions == [TextPart(content="You are a weather bot.")]
    parts = call.output_messages[0].parts
    assert parts[0] == ReasoningPart(content="The user asks for two cities; call the tool twice.")
    calls = [p for p in parts if isinstance(p, ToolCallPart)]
    assert [(c.id, c.name, c.arguments, c.arguments_raw) for c in calls] == [
        (None, "get_current_weather", {"format": "celsius", "location": "Paris, FR"}, None),
        (None, "get_current_weather", {"format": "celsius", "location": "Toronto, CA"}, None),
    ]
    assert len(parts) == 3  # no empty text part from the empty contents
    assert call.usage is not None and (call.usage.input_tokens, call.usage.output_tokens) == (
        122,
        33,
    )
    assert call.usage.total_tokens is None  # Ollama sends no total: none invented
    assert call.extras["durations_ns"]["total_duration"] == 885095291
    assert call.request_params["think"] is True and call.request_params["options"]["num_ctx"]
    assert call.timing.first_token == 10.0  # the first thinking fragment


def test_tool_results_and_images_in_the_request() -> None:
    call = parse(case_exchange("chat_tool_results"))
    _, assistant, tool, user2 = call.input_messages
    assert isinstance(assistant.parts[0], ToolCallPart) and assistant.parts[0].id is None
    assert tool.role == "tool"
    assert tool.parts == [
        ToolCallResponsePart(
            id=None,
            response="22 degrees celsius, sunny",
            provider_details={"name": "get_current_weather"},
        )
    ]
    assert isinstance(user2.parts[1], BlobPart) and user2.parts[1].modality == "image"
    assert call.finish_reasons == ["length"] and call.complete and not call.stream


def test_stream_without_done_is_incomplete() -> None:
    call = parse(case_exchange("chat_unfinished_stream"))
    assert not call.complete and call.finish_reasons == []
    assert call.output_messages[0].parts == [TextPart(content="Why did")]
    assert [d.code for d in call.diagnostics] == ["ollama.unfinished"]


def test_stream_error_line_is_the_calls_error() -> None:
    call = parse(case_exchange("chat_stream_error"))
    assert call.error is not None and call.error.source == "stream event 1"
    assert call.error.message is not None and "unexpected EOF" in call.error.message
    assert call.complete  # the answer ended, with an error
    assert call.output_messages[0].parts == [TextPart(content="Why")]


def test_http_error() -> None:
    call = parse(case_exchange("chat_model_not_found"))
    assert call.error is not None and call.error.status == 404
    assert call.output_messages == [] and call.finish_reasons == []


def test_generate_thinking_system_and_context() -> None:
    call = parse(case_exchange("generate_thinking"))
    assert (call.api, call.operation) == ("ollama.generate", "text_completion")
    assert call.system_instructions == [TextPart(content="Answer in one sentence.")]
    assert [type(p) for p in call.output_messages[0].parts] == [ReasoningPart, TextPart]
    assert call.extras["response"] == {
        "created_at": "2025-05-29T09:35:56.836222Z",
        "context": [1, 2, 3],
    }


def test_stream_byte_by_byte_gives_the_same_call() -> None:
    whole = parse(case_exchange("chat_tools_thinking_stream"))
    body = (DATA / "chat_tools_thinking_stream.response.ndjson").read_bytes()
    request = (DATA / "chat_tools_thinking_stream.request.json").read_bytes()
    pieces = [(10.0 + i / 1000, body[i : i + 1]) for i in range(len(body))]
    split = parse(exchange("/api/chat", request, pieces, content_type="application/x-ndjson"))
    assert split.output_messages == whole.output_messages and split.complete
    assert split.usage == whole.usage


def test_cut_stream_line_is_not_used() -> None:
    body = (DATA / "chat_tools_thinking_stream.response.ndjson").read_bytes()
    request = (DATA / "chat_tools_thinking_stream.request.json").read_bytes()
    cut = body[: len(body) - 40]
    call = parse(
        exchange("/api/chat", request, cut, content_type="application/x-ndjson", complete=False)
    )
    assert not call.complete and call.finish_reasons == [] and call.usage is None


def test_tool_call_arguments_as_a_string_are_parsed_and_kept() -> None:
    body = {
        "model": "m",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1'}}],
        },
        "done": True,
    }
    call = parse(exchange("/api/chat", {"model": "m", "messages": []}, orjson.dumps(body)))
    (part,) = call.output_messages[0].parts
    assert isinstance(part, ToolCallPart)
    assert part.arguments is None and part.arguments_raw == '{"a": 1'
    assert part.arguments_error is not None
    assert call.finish_reasons == []  # no done_reason sent: none invented


# -- recognition ------------------------------------------------------------------------------


def test_recognized_by_shape_behind_a_proxy_path() -> None:
    body = (
        b'{"model":"m","created_at":"t","message":{"role":"assistant","content":"hi"},"done":true}'
    )
    x = exchange("/llm/chat", {"model": "m", "messages": []}, body, url="https://gw.example")
    call = parse(x)
    assert call.api == "ollama.chat" and call.output_messages[0].parts == [TextPart(content="hi")]


def test_openai_compatible_v1_stays_openai() -> None:
    body = (
        b'{"id":"c","object":"chat.completion","choices":[{"index":0,"message":'
        b'{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'
    )
    call = parse(exchange("/v1/chat/completions", {"model": "m", "messages": []}, body))
    assert call.api == "openai.chat" and call.provider == "ollama"


def test_embed_and_models_endpoints() -> None:
    embed = parse(
        exchange(
            "/api/embed",
            {"model": "all-minilm", "input": ["a", "b"]},
            b'{"model":"all-minilm","embeddings":[[0.1,0.2,0.3],[0.4,0.5,0.6]],'
            b'"total_duration":14143917,"load_duration":1019500,"prompt_eval_count":8}',
        )
    )
    assert (embed.api, embed.operation) == ("ollama.embed", "embeddings")
    assert embed.extras["embeddings"] == {
        "inputs": 2,
        "vectors": 2,
        "dimensions": 3,
        "texts": ["a", "b"],
        "vector_heads": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]],
    }
    assert embed.usage is not None and embed.usage.input_tokens == 8 and embed.complete
    tags = parse(
        exchange(
            "/api/tags",
            None,
            b'{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest",'
            b'"modified_at":"2025-05-04T17:37:44Z","size":2019393189,"digest":"a80c4f17"}]}',
            method="GET",
        )
    )
    assert (tags.api, tags.operation) == ("ollama.models", "models.list")
    assert tags.extras["models"] == ["llama3.2:latest"] and tags.complete
    ps = parse(exchange("/api/ps", None, b'{"models":[]}', method="GET"))
    assert ps.operation == "models.running"
    show = parse(
        exchange(
            "/api/show",
            {"model": "llava"},
            b'{"modelfile":"FROM llava","parameters":"","template":"","details":{"family":"llama"},'
            b'"capabilities":["completion","vision"]}',
        )
    )
    assert show.operation == "models.show" and show.request_model == "llava"
    assert show.extras["model"]["capabilities"] == ["completion", "vision"]
    pull = parse(
        exchange(
            "/api/pull",
            {"model": "llama3.2"},
            b'{"status":"pulling manifest"}\n{"status":"verifying sha256 digest"}\n'
            b'{"status":"success"}\n',
            content_type="application/x-ndjson",
        )
    )
    assert pull.operation == "models.pull" and pull.complete
    assert pull.extras["status"][-1] == "success"


def test_a_tags_path_elsewhere_is_not_ollama() -> None:
    x = exchange("/api/tags", None, b'{"tags":["a"]}', method="GET", url="https://blog.example")
    call = recognize(x, "c1")
    assert call is None or not call.api.startswith("ollama.")


if __name__ == "__main__":
    regenerate()
