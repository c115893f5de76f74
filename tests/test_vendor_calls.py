"""The vendor SDK captures (``scripts/make_vendor_captures.py``) as calls: decrypted with their
key logs, every call agrees with what the official SDK itself returned or raised
(``truth.json``'s ``sdk_calls``, written from the SDK's objects, never from the pcap): text,
tool calls with their ids and arguments, finish reasons, usage, ids, errors.

``tests/test_vendor_captures.py`` checks the same captures at the HTTP level."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from agentshark.apis.model import Call, TextPart, ToolCallPart
from agentshark.pipeline import Options
from tests.helpers import ROOT, Collected

OWN = ROOT / "tests" / "data" / "captures"


@functools.cache
def calls(name: str) -> list[Call]:
    keylog = OWN / name / "keys.log"
    opts = Options(keylogs=[str(keylog)] if keylog.exists() else [], calls=True)
    found = Collected([str(OWN / name / "capture.pcap")], opts).calls
    return sorted(found, key=lambda c: c.timing.started or 0.0)


def sdk_calls(name: str) -> list[dict[str, Any]]:
    truth: dict[str, Any] = json.loads((OWN / name / "truth.json").read_text())
    out: list[dict[str, Any]] = truth["sdk_calls"]
    return out


def text(call: Call) -> str:
    return "".join(
        p.content for m in call.output_messages for p in m.parts if isinstance(p, TextPart)
    )


def tool_calls(call: Call) -> list[tuple[str | None, str | None, Any]]:
    return [
        (p.id, p.name, p.arguments)
        for m in call.output_messages
        for p in m.parts
        if isinstance(p, ToolCallPart)
    ]


def paired(name: str) -> list[tuple[Call, dict[str, Any]]]:
    ours, theirs = calls(name), sdk_calls(name)
    assert len(ours) == len(theirs), [c.api for c in ours]
    assert all(c.complete for c in ours), [(c.id, c.diagnostics) for c in ours]
    return list(zip(ours, theirs, strict=True))


# --- Bedrock (boto3 bedrock-runtime) -----------------------------------------------------------


def _converse_content(content: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    said = "".join(b["text"] for b in content if "text" in b)
    used = [
        (b["toolUse"]["toolUseId"], b["toolUse"]["name"], b["toolUse"]["input"])
        for b in content
        if "toolUse" in b
    ]
    return said, used


@pytest.mark.parametrize("name", ["bedrock_converse_tls13", "bedrock_converse_stream_tls13"])
def test_bedrock_converse_calls_are_what_boto3_returned(name: str) -> None:
    for call, sdk in paired(name):
        assert call.api == "bedrock.converse"
        assert call.stream == (sdk["call"] == "converse_stream")
        content = sdk["output"]["message"]["content"] if "output" in sdk else sdk["content"]
        said, used = _converse_content(content)
        assert text(call) == said
        assert tool_calls(call) == used
        assert call.finish_reasons == [sdk["stop_reason"]]
        assert call.usage is not None
        usage = sdk["usage"]
        assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.total_tokens) == (
            usage["inputTokens"],
            usage["outputTokens"],
            usage["totalTokens"],
        )
        assert call.ids["provider_request_id"] == sdk["request_id"]
        assert call.request_model == sdk["model_id"]
        response = call.extras["response"]
        assert isinstance(response, dict) and response["metrics"] == sdk["metrics"]


def _anthropic_content(content: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    said = "".join(b["text"] for b in content if b["type"] == "text")
    used = [(b["id"], b["name"], b["input"]) for b in content if b["type"] == "tool_use"]
    return said, used


@pytest.mark.parametrize("name", ["bedrock_invoke_tls13", "bedrock_invoke_stream_tls13"])
def test_bedrock_invoke_of_anthropic_is_what_boto3_returned(name: str) -> None:
    """InvokeModel of a Claude model carries Anthropic's own body: an ``anthropic.messages``
    call on provider ``bedrock.anthropic``, whole or from the base64 chunks of the stream."""
    for call, sdk in paired(name):
        assert (call.api, call.provider) == ("anthropic.messages", "bedrock.anthropic")
        body = sdk.get("body") or sdk
        said, used = _anthropic_content(body["content"])
        assert text(call) == said
        assert tool_calls(call) == used
        assert call.response_id == body.get("id", sdk.get("message_id"))
        assert call.response_model == body["model"]
        assert call.finish_reasons == [body["stop_reason"]]
        assert call.usage is not None
        assert (call.usage.input_tokens, call.usage.output_tokens) == (
            body["usage"]["input_tokens"],
            body["usage"]["output_tokens"],
        )
        assert call.ids["provider_request_id"] == sdk["request_id"]


def test_bedrock_errors_are_what_boto3_raised() -> None:
    for call, sdk in paired("bedrock_errors_tls13"):
        error = sdk["error"]
        assert call.error is not None and call.output_messages == []
        assert call.error.status == error["http_status"]
        assert call.error.type == error["error"]["Code"]
        assert call.error.message == error["error"]["Message"]
        assert call.ids["provider_request_id"] == error["request_id"]


# --- Gemini (google-genai) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["gemini_generate_tls13_h1", "gemini_stream_tls13_h1", "gemini_stream_tls13_h2"]
)
def test_gemini_calls_are_what_google_genai_returned(name: str) -> None:
    for call, sdk in paired(name):
        assert call.api == "gemini.generate_content"
        assert call.stream == ("assembled" in sdk)
        got = sdk.get("assembled") or {
            "text": sdk["text"],
            "function_calls": sdk["function_calls"],
            "finish_reason": sdk["candidates"][0]["finish_reason"],
            "usage": sdk["usage"],
            "response_id": sdk["response_id"],
            "model_version": sdk["model_version"],
        }
        assert text(call) == (got["text"] or "")
        # google-genai's function calls have no id here (the service sent none): none invented
        assert tool_calls(call) == [(None, f["name"], f["args"]) for f in got["function_calls"]]
        assert call.finish_reasons == [got["finish_reason"]]
        assert (call.response_id, call.response_model) == (
            got["response_id"],
            got["model_version"],
        )
        usage, thoughts = got["usage"], got["usage"].get("thoughts_token_count")
        assert call.usage is not None
        assert call.usage.input_tokens == usage["prompt_token_count"]
        # output counts the thoughts too (as OpenAI's completion tokens do); they are also
        # reasoning_tokens
        assert call.usage.output_tokens == usage["candidates_token_count"] + (thoughts or 0)
        assert call.usage.reasoning_tokens == thoughts
        assert call.usage.total_tokens == usage["total_token_count"]


def test_gemini_errors_are_what_google_genai_raised() -> None:
    for call, sdk in paired("gemini_vertex_errors_tls13_h1"):
        error = sdk["error"]
        assert call.error is not None and call.output_messages == []
        assert (call.error.status, call.error.type) == (error["code"], error["status"])
        assert call.error.message == error["message"]
        assert call.provider == "vertex.gemini"


# --- Ollama (the ollama client, native /api/chat) ----------------------------------------------


def test_ollama_chat_calls_are_what_the_ollama_client_returned() -> None:
    for call, sdk in paired("ollama_chat_ndjson"):
        got = sdk.get("assembled") or sdk
        assert call.api == "ollama.chat" and call.stream == sdk["stream"]
        assert text(call) == got["content"]
        assert tool_calls(call) == [
            (None, t["function"]["name"], t["function"]["arguments"]) for t in got["tool_calls"]
        ]
        assert call.response_model == got["model"]
        assert call.finish_reasons == [got["done_reason"]]
        assert call.usage is not None
        assert (call.usage.input_tokens, call.usage.output_tokens) == (
            got["prompt_eval_count"],
            got["eval_count"],
        )
        assert call.usage.total_tokens is None  # Ollama sends no total: none is made up
        durations = call.extras["durations_ns"]
        assert isinstance(durations, dict)
        for name in ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration"):
            assert durations[name] == got[name]
