"""OpenAI-compatible servers: recognized by schema whatever their host, their extensions kept.

The corpus holds vLLM (``localhost:8000`` in traceloop's cassettes, Crusoe's and the Hugging
Face router's vLLM backends); llama.cpp, SGLang and Ollama's ``/v1`` extras are absent, so
those bodies are written as the servers' own documentation defines them:

- llama.cpp server (https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md):
  ``timings`` (``prompt_n``, ``prompt_ms``, ``predicted_n``, ``predicted_per_second``...) on a
  response and on a stream's last chunk, ``system_fingerprint: "b<build>"``;
- vLLM (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html, the
  ``CompletionResponseChoice`` of ``vllm/entrypoints/openai/protocol.py``): ``stop_reason``
  per choice, top-level ``prompt_logprobs``;
- SGLang (``sglang/srt/entrypoints/openai/protocol.py``): ``matched_stop`` per choice;
- Ollama (https://github.com/ollama/ollama/blob/main/docs/openai.md): ``system_fingerprint:
  "fp_ollama"`` and the ``reasoning`` field of a message;
- TGI's Messages API (https://huggingface.co/docs/text-generation-inference/messages_api):
  ``system_fingerprint`` with TGI's version, per-choice ``logprobs``.
"""

from __future__ import annotations

import orjson
import pytest

from agentshark.apis.model import Call, ReasoningPart, TextPart
from agentshark.apis.registry import recognize
from tests.apis.corpus_cases import exchanges
from tests.helpers import CORPUS, http_exchange

CHAT: dict[str, object] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def call_of(url: str, request: dict[str, object], body: bytes, *, sse: bool = False) -> Call:
    path = "/" + url.split("/", 3)[3]
    x = http_exchange(
        method="POST",
        url=url,
        target=path,
        request_body=orjson.dumps(request),
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, body)],
        response_headers=[("content-type", "text/event-stream" if sse else "application/json")],
    )
    call = recognize(x, "c1")
    assert call is not None
    return call


def sse(*chunks: dict[str, object]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


TIMINGS = {
    "prompt_n": 5,
    "prompt_ms": 10.5,
    "prompt_per_token_ms": 2.1,
    "prompt_per_second": 476.2,
    "predicted_n": 2,
    "predicted_ms": 20.0,
    "predicted_per_token_ms": 10.0,
    "predicted_per_second": 100.0,
}


def test_llama_cpp_timings_whole_and_streamed() -> None:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-3.5-turbo",
        "system_fingerprint": "b4600",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        "timings": TIMINGS,
    }
    whole = call_of("http://10.0.0.7:8080/v1/chat/completions", CHAT, orjson.dumps(body))
    assert (whole.api, whole.provider) == ("openai.chat", "llama.cpp")
    assert whole.extras["response"]["timings"] == TIMINGS
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    stream = call_of(
        "http://10.0.0.7:8080/v1/chat/completions",
        {**CHAT, "stream": True},
        sse(
            {**chunk, "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]},
            {
                **chunk,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "timings": TIMINGS,
            },
        ),
        sse=True,
    )
    assert stream.provider == "llama.cpp" and stream.complete
    assert stream.extras["response"]["timings"] == TIMINGS


def test_vllm_completion_stop_reason_logprobs_and_prompt_logprobs() -> None:
    logprobs = {
        "tokens": [" Hi"],
        "token_logprobs": [-0.1],
        "top_logprobs": [{" Hi": -0.1}],
        "text_offset": [0],
    }
    body = {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1,
        "model": "facebook/opt-125m",
        "choices": [
            {
                "index": 0,
                "text": " Hi",
                "logprobs": logprobs,
                "finish_reason": "stop",
                "stop_reason": "\n",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        "prompt_logprobs": [None, {"42": {"logprob": -1.5, "rank": 1, "decoded_token": "x"}}],
    }
    call = call_of(
        "http://10.0.0.7:8000/v1/completions", {"model": "m", "prompt": "x"}, orjson.dumps(body)
    )
    assert (call.api, call.provider) == ("openai.completions", "vllm")
    assert call.extras["choices"]["0"] == {"logprobs": logprobs, "stop_reason": "\n"}
    assert call.extras["response"]["prompt_logprobs"] == body["prompt_logprobs"]
    assert call.finish_reasons == ["stop"]


def test_completion_stream_logprobs_are_folded() -> None:
    def chunk(text: str, offset: int, finish: str | None) -> dict[str, object]:
        lp = {
            "tokens": [text],
            "token_logprobs": [-0.5],
            "top_logprobs": [{text: -0.5}],
            "text_offset": [offset],
        }
        choice = {
            "index": 0,
            "text": text,
            "logprobs": lp,
            "finish_reason": finish,
            "stop_reason": None,
        }
        return {"id": "cmpl-1", "object": "text_completion", "model": "m", "choices": [choice]}

    call = call_of(
        "http://10.0.0.7:8000/v1/completions",
        {"model": "m", "prompt": "x", "stream": True, "logprobs": 1},
        sse(chunk("Hel", 0, None), chunk("lo", 3, "length")),
        sse=True,
    )
    assert call.complete and call.finish_reasons == ["length"]
    assert call.output_messages[0].parts == [TextPart(content="Hello")]
    assert call.extras["choices"]["0"]["logprobs"] == {
        "tokens": ["Hel", "lo"],
        "token_logprobs": [-0.5, -0.5],
        "top_logprobs": [{"Hel": -0.5}, {"lo": -0.5}],
        "text_offset": [0, 3],
    }
    assert "stop_reason" not in call.extras["choices"]["0"]  # null: says nothing


def test_sglang_matched_stop_and_ollama_v1_are_named() -> None:
    sglang = {
        "id": "1",
        "object": "chat.completion",
        "model": "qwen",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hi"},
                "finish_reason": "stop",
                "matched_stop": 151645,
            }
        ],
    }
    call = call_of("http://10.0.0.7:30000/v1/chat/completions", CHAT, orjson.dumps(sglang))
    assert call.provider == "sglang" and call.extras["choices"]["0"]["matched_stop"] == 151645
    ollama = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "qwen3",
        "system_fingerprint": "fp_ollama",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hi", "reasoning": "think"},
                "finish_reason": "stop",
            }
        ],
    }
    call = call_of("http://gpu-box:8000/v1/chat/completions", CHAT, orjson.dumps(ollama))
    assert call.provider == "ollama"
    assert call.output_messages[0].parts == [
        ReasoningPart(content="think", provider_details={"field": "reasoning"}),
        TextPart(content="Hi"),
    ]


def test_tgi_messages_api_extensions_kept() -> None:
    logprobs = {"content": [{"token": "Hi", "logprob": -0.01, "top_logprobs": []}]}
    tgi = {
        "id": "",
        "object": "chat.completion",
        "created": 1,
        "model": "tgi",
        "system_fingerprint": "2.4.0-native",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hi"},
                "logprobs": logprobs,
                "finish_reason": "eos_token",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    call = call_of("http://10.0.0.7:3000/v1/chat/completions", CHAT, orjson.dumps(tgi))
    assert call.api == "openai.chat" and call.finish_reasons == ["eos_token"]  # kept as sent
    assert call.extras["response"]["system_fingerprint"] == "2.4.0-native"
    assert call.response_id is None  # TGI sends "": no id, none invented


CRUSOE = "pydantic__pydantic-ai/tests/models/cassettes/test_crusoe/test_crusoe_model_simple.yaml"


@pytest.mark.skipif(not (CORPUS / CRUSOE).exists(), reason="no corpus")
def test_vllm_fields_of_a_corpus_response_are_kept() -> None:
    (x,) = exchanges(CRUSOE)
    call = recognize(x, "c1")
    assert call is not None and call.provider == "crusoe"  # the host names it
    assert call.extras["choices"]["0"]["stop_reason"] == 154827
    assert "prompt_logprobs" in call.extras["response"]
