"""Gemini generateContent and its neighbours: golden calls, recognition, streams, parts.

Golden calls: exchanges of corpus cassettes (``CORPUS_CASES``: whole, ``alt=sse`` and JSON-array
streams, a function-calling loop, a blocked prompt, errors, numeric enums) and hand-made
exchanges under ``tests/data/apis/gemini/`` (``<case>.request.json`` with ``<case>.sse``: Code
Assist's wrapper) become calls whose JSON must equal ``tests/data/apis/gemini/<case>.call.json``.
Regenerate after a reviewed change with::

    .venv/bin/python -m tests.apis.gemini.test_generate

and read the diff. Targeted tests below assert what each case is about.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentshark.apis.gemini.generate import FAMILIES
from agentshark.apis.model import (
    BlobPart,
    Call,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
)
from agentshark.apis.registry import recognize
from agentshark.model import Exchange
from agentshark.sources.detect import classify_document
from agentshark.sources.vcr import read_vcr
from tests.helpers import CORPUS, http_exchange

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests/data/apis/gemini"
PYD = "pydantic__pydantic-ai/tests/models/cassettes/test_google/"
OTEL = "open-telemetry__opentelemetry-python-contrib/instrumentation-genai/"
# golden case -> (cassette, exchange index)
CORPUS_CASES = {
    "whole_thinking": (PYD + "test_google_model_thinking_part.yaml", 0),
    "sse_function_call": (PYD + "test_google_model_iter_stream.yaml", 0),
    "sse_replayed_tool_results": (PYD + "test_google_model_iter_stream.yaml", 2),
    "json_array_stream": ("simonw__llm-gemini/tests/cassettes/test_gemini/test_prompt.yaml", 0),
    "prompt_blocked": (PYD + "test_google_model_armor_prompt_template_text_gets_blocked.yaml", 1),
    "vertex_numeric_enums": (
        OTEL + "opentelemetry-instrumentation-vertexai/tests/cassettes/test_generate_content.yaml",
        0,
    ),
    "vertex_error_400": (
        OTEL + "opentelemetry-instrumentation-vertexai/tests/cassettes/"
        "test_generate_content_invalid_role.yaml",
        0,
    ),
    "error_404": (
        "pydantic__pydantic-ai/tests/cassettes/test_model_name_suggestions/"
        "test_model_name_suggestion[google].yaml",
        0,
    ),
}
FILE_CASES = ("code_assist",)
CASES = (*CORPUS_CASES, *FILE_CASES)
needs_corpus = pytest.mark.skipif(not (CORPUS / PYD).exists(), reason="no corpus")


def corpus_exchange(file: str, index: int) -> Exchange:
    data = (CORPUS / file).read_bytes()
    _kind, doc = classify_document(data, file)
    ids = itertools.count()
    found = [x for x in read_vcr(doc, file, 0, lambda: f"e{next(ids)}") if isinstance(x, Exchange)]
    return found[index]


def file_exchange(name: str) -> Exchange:
    url = "https://cloudcode-pa.googleapis.com/v1internal:streamGenerateContent?alt=sse"
    return http_exchange(
        method="POST",
        url=url,
        target="/v1internal:streamGenerateContent?alt=sse",
        request_body=(DATA / f"{name}.request.json").read_bytes(),
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, (DATA / f"{name}.sse").read_bytes())],
        response_headers=[("content-type", "text/event-stream")],
    )


def case(name: str) -> Call:
    if name in CORPUS_CASES:
        x = corpus_exchange(*CORPUS_CASES[name])
    else:
        x = file_exchange(name)
    call = recognize(x, "c1", registry=FAMILIES)
    assert call is not None, "no Gemini family claimed the exchange"
    return call


def render(call: Call) -> bytes:
    return orjson.dumps(call.to_json(), option=orjson.OPT_INDENT_2) + b"\n"


# -- golden calls ---------------------------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("name", CASES)
def test_golden_call(name: str) -> None:
    expected = DATA / f"{name}.call.json"
    assert expected.exists(), f"run python -m tests.apis.gemini.test_generate to write {expected}"
    assert json.loads(render(case(name))) == json.loads(expected.read_bytes())


def regenerate() -> None:
    for name in CASES:
        path = DATA / f"{name}.call.json"
        path.write_bytes(render(case(name)))
        print(f"wrote {path.relative_to(ROOT)}")


# -- what each case is about ----------------------------------------------------------------


@needs_corpus
def test_sse_function_call_has_no_invented_id() -> None:
    call = case("sse_function_call")
    assert (call.provider, call.operation, call.stream, call.complete) == (
        "gemini",
        "chat",
        True,
        True,
    )
    assert call.request_model == "gemini-2.0-flash" == call.response_model
    (part,) = call.output_messages[0].parts
    assert part == ToolCallPart(id=None, name="get_capital", arguments={"country": "France"})
    assert call.finish_reasons == ["STOP"] and call.response_id == "1lpeaMTxIpW1nvgP-O3vwQY"
    assert [d["name"] for d in call.tool_definitions] == ["get_capital", "get_temperature"]
    assert call.system_instructions == [TextPart(content="You are a helpful chatbot.")]


@needs_corpus
def test_replayed_history_maps_roles_and_keeps_client_ids() -> None:
    call = case("sse_replayed_tool_results")
    assert [m.role for m in call.input_messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    response = call.input_messages[2].parts[0]
    assert isinstance(response, ToolCallResponsePart)
    assert response.id == "pyd_ai_0e1a07b3c2b64d2ab3ad2efbe18e1b97"
    assert response.provider_details == {"name": "get_capital"}
    assert response.response == {"return_value": "Paris"}
    # text concatenated across the two chunks
    assert call.output_messages[0].parts == [
        TextPart(content="The temperature in Paris is 30°C.\n")
    ]


@needs_corpus
def test_json_array_stream_merges_thoughts_and_keeps_the_signature() -> None:
    call = case("json_array_stream")
    assert call.stream and call.complete and call.finish_reasons == ["STOP"]
    parts = call.output_messages[0].parts
    assert isinstance(parts[0], ReasoningPart) and parts[0].content.startswith("**Considering")
    texts = [p for p in parts if isinstance(p, TextPart)]
    assert "".join(p.content for p in texts).strip() == "Scoop"
    assert any("thoughtSignature" in p.provider_details for p in texts)
    assert not any("Eq0J" in p.content for p in texts)  # never shown as text
    assert call.usage is not None and call.usage.reasoning_tokens == 291


@needs_corpus
def test_numeric_finish_reason_is_named() -> None:
    call = case("vertex_numeric_enums")
    assert call.provider == "vertex.gemini" and call.finish_reasons == ["STOP"]
    assert call.request_params["enum_encoding"] == "int"


@needs_corpus
def test_errors_carry_google_status_and_message() -> None:
    call = case("vertex_error_400")
    assert call.error is not None and call.complete
    assert (call.error.status, call.error.type, call.error.code) == (400, "INVALID_ARGUMENT", "400")
    call = case("error_404")
    assert call.error is not None and (call.error.status, call.error.type) == (404, "NOT_FOUND")


def test_code_assist_wrapper_is_taken_off() -> None:
    call = case("code_assist")
    assert (call.provider, call.request_model, call.complete) == (
        "code_assist.gemini",
        "gemini-2.5-pro",
        True,
    )
    assert call.ids["user_prompt_id"] == "6f1c2a7e-prompt"
    assert call.ids["session_id"] == "2c9e-session"
    reasoning, tool = call.output_messages[0].parts
    assert isinstance(reasoning, ReasoningPart) and isinstance(tool, ToolCallPart)
    assert tool.provider_details == {"thoughtSignature": "CiQBVKhc7g=="}
    assert call.extras["response"]["traceId"] == "b7e1f0"
    assert call.request_params["thinkingConfig"] == {"includeThoughts": True}


# -- hand-made exchanges --------------------------------------------------------------------

_URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:"


def _exchange(body: Any, response: bytes, *, stream: bool = False, status: int = 200) -> Exchange:
    method = "streamGenerateContent" if stream else "generateContent"
    return http_exchange(
        method="POST",
        url=_URL + method,
        target="/v1beta/models/gemini-2.5-flash:" + method,
        request_body=orjson.dumps(body),
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, response)],
        status=status,
        response_headers=[("content-type", "application/json")],
    )


def _parse(body: Any, response: bytes, **kw: Any) -> Call:
    call = recognize(_exchange(body, response, **kw), "c1")
    assert call is not None and call.api == "gemini.generate_content"
    return call


def test_a_cut_json_array_is_incomplete() -> None:
    chunk = b'{"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}'
    call = _parse({"contents": []}, b"[" + chunk + b",\r\n" + chunk[:30], stream=True)
    assert call.stream and not call.complete
    assert call.output_messages[0].parts == [TextPart(content="Hel")]
    assert "jsonarray.truncated" in [d.code for d in call.diagnostics]


def test_a_stream_without_finish_reason_is_incomplete() -> None:
    chunk = b'{"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}'
    call = _parse({"contents": []}, b"[" + chunk + b"]", stream=True)
    assert not call.complete and call.finish_reasons == []


def test_an_error_inside_a_stream() -> None:
    chunk = b'{"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}'
    error = b'{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}'
    call = _parse({"contents": []}, b"[" + chunk + b",\r\n" + error + b"]", stream=True)
    assert call.error is not None and call.complete
    assert (call.error.type, call.error.message, call.error.source) == (
        "UNAVAILABLE",
        "overloaded",
        "stream event 1",
    )


def test_request_parts_and_hosted_tools() -> None:
    body = {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "look"},
                    {"inline_data": {"mime_type": "image/png", "data": "iVBOR"}},
                    {
                        "fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"},
                        "videoMetadata": {"startOffset": "1s"},
                    },
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"executableCode": {"language": "PYTHON", "code": "1+1"}},
                    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2"}},
                ],
            },
            {"role": "function", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
        ],
        "tools": [{"googleSearch": {}}, {"codeExecution": {}}, {"urlContext": {}}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "cachedContent": "cachedContents/abc",
        "generationConfig": {"temperature": 0.2, "responseSchema": {"type": "OBJECT"}},
    }
    call = _parse(
        body, b'{"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}'
    )
    user, model, tool = call.input_messages
    assert [user.role, model.role, tool.role] == ["user", "assistant", "tool"]
    blob, uri = user.parts[1], user.parts[2]
    assert blob == BlobPart(mime_type="image/png", modality="image", content="iVBOR")
    assert isinstance(uri, UriPart) and uri.provider_details == {
        "videoMetadata": {"startOffset": "1s"}
    }
    code, result = model.parts
    assert isinstance(code, ToolCallPart) and code.provider_details["execution"] == "server"
    assert code.arguments == {"language": "PYTHON", "code": "1+1"}
    assert isinstance(result, ToolCallResponsePart) and result.response["output"] == "2"
    assert [t["type"] for t in call.tool_definitions] == [
        "googleSearch",
        "codeExecution",
        "urlContext",
    ]
    assert call.request_params["temperature"] == 0.2
    assert call.request_params["cachedContent"] == "cachedContents/abc"
    assert call.request_params["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


def test_usage_is_normalized() -> None:
    usage = {
        "promptTokenCount": 100,
        "cachedContentTokenCount": 40,
        "candidatesTokenCount": 10,
        "thoughtsTokenCount": 5,
        "toolUsePromptTokenCount": 7,
        "totalTokenCount": 122,
    }
    body = {
        "candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}],
        "usageMetadata": usage,
    }
    call = _parse({"contents": []}, orjson.dumps(body))
    assert call.usage is not None
    got = (
        call.usage.input_tokens,
        call.usage.output_tokens,
        call.usage.cached_input_tokens,
        call.usage.reasoning_tokens,
        call.usage.total_tokens,
    )
    assert got == (107, 15, 40, 5, 122)


def test_other_apis_are_not_claimed() -> None:
    chat = b'{"object": "chat.completion", "choices": []}'
    x = _exchange({"contents": []}, chat)
    call = recognize(x, "c1", registry=FAMILIES)
    assert call is None


if __name__ == "__main__":
    regenerate()
