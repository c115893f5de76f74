"""xAI chat over the wire: the ``xai_sdk`` client against a grpcio server playing corpus
responses (gzip), on loopback (``tests/data/captures/xai_chat_grpc``), against what the
client itself sent and got (``truth.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentshark.apis.model import (
    Call,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from agentshark.apis.registry import recognize
from agentshark.model import header
from tests.helpers import Collected

CAPTURE = Path(__file__).resolve().parents[2] / "data" / "captures" / "xai_chat_grpc"


@pytest.fixture(scope="module")
def collected() -> Collected:
    return Collected([str(CAPTURE / "capture.pcap")])


@pytest.fixture(scope="module")
def calls(collected: Collected) -> list[Call]:
    found = [recognize(ex, ex.id) for ex in collected.exchanges]
    assert all(c is not None for c in found)
    return [c for c in found if c is not None]


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CAPTURE / "truth.json").read_text())
    return loaded


def _text(parts: list[Any], kind: type[TextPart] | type[ReasoningPart]) -> str:
    return "".join(p.content for p in parts if isinstance(p, kind))


def test_one_call_per_rpc(calls: list[Call], truth: dict[str, Any]) -> None:
    served = truth["server_saw"]
    assert len(calls) == len(served) == len(truth["steps"]) == 4
    for call, rpc in zip(calls, served, strict=True):
        assert (call.api, call.provider, call.operation) == ("xai.chat", "xai", "chat")
        assert call.extras["grpc_method"] == rpc["method"]
        assert call.request_model == rpc["model"]
        assert call.complete


def test_gzip_responses_are_read(collected: Collected) -> None:
    encodings = {
        header(ex.response.headers, "grpc-encoding") for ex in collected.exchanges if ex.response
    }
    assert "gzip" in encodings


def test_tool_calls_and_their_results(calls: list[Call], truth: dict[str, Any]) -> None:
    first, second = calls[0], calls[1]
    step = truth["steps"][0]
    (out,) = first.output_messages
    assert out.finish_reason == step["finish_reason"] == "REASON_TOOL_CALLS"
    got = [(p.id, p.name, p.arguments_raw) for p in out.parts if isinstance(p, ToolCallPart)]
    assert got == [
        (t["id"], t["function"]["name"], t["function"]["arguments"]) for t in step["tool_calls"]
    ]
    sent = truth["steps"][1]["request"]["messages"]
    assert [m.role for m in second.input_messages] == [m["role"] for m in sent]
    results = [
        p for m in second.input_messages for p in m.parts if isinstance(p, ToolCallResponsePart)
    ]
    assert [(r.id, r.response) for r in results] == [
        (m["toolCallId"], m["content"][0]["text"]) for m in sent if m["role"] == "ROLE_TOOL"
    ]
    assert {r.id for r in results} == {p[0] for p in got}
    assert _text(second.output_messages[0].parts, TextPart) == truth["steps"][1]["content"]
    assert second.finish_reasons == ["REASON_STOP"]


def test_the_stream_as_the_sdk_folded_it(calls: list[Call], truth: dict[str, Any]) -> None:
    call, step = calls[2], truth["steps"][2]
    assert call.stream and call.timing.chunks == step["chunks"]
    (out,) = call.output_messages
    assert _text(out.parts, TextPart) == step["content"]
    assert _text(out.parts, ReasoningPart) == step["reasoning_content"]
    assert out.finish_reason == step["finish_reason"]
    usage = step["response"]["usage"]
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.total_tokens) == (
        usage["promptTokens"],
        usage["completionTokens"],
        usage["totalTokens"],
    )
    assert call.timing.first_token is not None and call.response_id == step["response"]["id"]


def test_the_refused_call(calls: list[Call], truth: dict[str, Any]) -> None:
    call, step = calls[3], truth["steps"][3]
    assert call.error is not None and call.error.code == step["status"] == "RESOURCE_EXHAUSTED"
    assert call.error.message == "rate limited (test server)"
    assert call.output_messages == [] and call.finish_reasons == []
