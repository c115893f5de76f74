"""xAI chat (``xai.chat``): every corpus xAI cassette against the ``xai_sdk`` package as the
oracle: its generated message classes parse the raw bytes, its own ``process_chunk`` folds a
stream, and agentshark's normalized call must say the same (model, messages, outputs by
index with role, finish reason, text, reasoning, encrypted reasoning, tool calls; usage).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentshark.apis.model import (
    Call,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from agentshark.apis.registry import recognize
from tests.helpers import CORPUS, Collected

xai_chat = pytest.importorskip("xai_sdk.chat")
chat_pb2 = pytest.importorskip("xai_sdk.proto.v6.chat_pb2")
sample_pb2 = pytest.importorskip("xai_sdk.proto.v6.sample_pb2")

CASSETTES = sorted(CORPUS.glob("**/*.xai.yaml"))


@cache
def _calls(path: Path) -> list[Call]:
    calls = [recognize(ex, ex.id) for ex in Collected([str(path)]).exchanges]
    assert all(c is not None for c in calls)
    return [c for c in calls if c is not None]


def _interactions(path: Path) -> list[dict[str, Any]]:
    doc = yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)
    return [i for i in doc["interactions"] if "collections_method" not in i]


def _oracle(item: dict[str, Any]) -> tuple[Any, dict[int, int]]:
    """The response as xai_sdk makes it (parsed, or folded from the chunks by the SDK's own
    ``process_chunk``) and each output's finish reason. The SDK's fold keeps the last
    chunk's value per output, 0 when that chunk had none; the reason is the last one sent."""
    if "response_sample" in item:
        proto = chat_pb2.GetChatCompletionResponse.FromString(item["response_sample"]["raw"])
        return proto, {o.index: o.finish_reason for o in proto.outputs}
    folded = xai_chat._ResponseProtoDecorator(chat_pb2.GetChatCompletionResponse())
    reasons: dict[int, int] = {}
    for raw in item["response_stream"]["chunks_raw"]:
        chunk = chat_pb2.GetChatCompletionChunk.FromString(raw)
        folded.process_chunk(chunk)
        for out in chunk.outputs:
            if out.finish_reason or out.index not in reasons:
                reasons[out.index] = out.finish_reason
    return folded.proto, reasons


def _texts(message: Message, kind: type[TextPart] | type[ReasoningPart]) -> list[str]:
    return [
        p.content
        for p in message.parts
        if isinstance(p, TextPart | ReasoningPart) and isinstance(p, kind) and p.content
    ]


def _reason(value: int) -> str | None:
    return sample_pb2.FinishReason.Name(value) if value else None


def _check_output(got: Message, want: Any, reason: int) -> None:
    role = chat_pb2.MessageRole.Name(want.message.role)
    assert got.role == role
    assert got.finish_reason == _reason(reason)
    assert _texts(got, ReasoningPart) == (
        [want.message.reasoning_content] if want.message.reasoning_content else []
    )
    encrypted = [
        p.provider_details["encrypted_content"]
        for p in got.parts
        if isinstance(p, ReasoningPart) and "encrypted_content" in p.provider_details
    ]
    assert encrypted == ([want.message.encrypted_content] if want.message.encrypted_content else [])
    calls = want.message.tool_calls
    if role == "ROLE_TOOL" and calls:
        results = [p for p in got.parts if isinstance(p, ToolCallResponsePart)]
        assert [(r.id, r.provider_details["name"]) for r in results] == [
            (c.id, c.function.name) for c in calls
        ]
        text = want.message.content
        if len(calls) == 1 and text:
            assert results[0].response == text
            return
    else:
        parts = [p for p in got.parts if isinstance(p, ToolCallPart)]
        assert [(p.id, p.name, p.arguments_raw) for p in parts] == [
            (c.id, c.function.name, c.function.arguments) for c in calls
        ]
    assert _texts(got, TextPart) == ([want.message.content] if want.message.content else [])


def _check_usage(call: Call, want: Any) -> None:
    usage = want.usage
    assert call.usage is not None
    assert call.usage.input_tokens == (usage.prompt_tokens or None)
    assert call.usage.output_tokens == (usage.completion_tokens or None)
    assert call.usage.reasoning_tokens == (usage.reasoning_tokens or None)
    assert call.usage.cached_input_tokens == (usage.cached_prompt_text_tokens or None)
    assert call.usage.total_tokens == (usage.total_tokens or None)


def _check_request(call: Call, item: dict[str, Any]) -> None:
    key = "request_stream" if "request_stream" in item else "request_sample"
    request = chat_pb2.GetCompletionsRequest.FromString(item[key]["raw"])
    assert call.request_model == request.model
    system = [m for m in request.messages if m.role == chat_pb2.ROLE_SYSTEM]
    assert len(call.input_messages) == len(request.messages) - len(system)
    rest = [m for m in request.messages if m.role != chat_pb2.ROLE_SYSTEM]
    for got, want in zip(call.input_messages, rest, strict=True):
        assert got.role == chat_pb2.MessageRole.Name(want.role)
        if want.role != chat_pb2.ROLE_TOOL:
            assert _texts(got, TextPart) == [c.text for c in want.content if c.text]
    assert len(call.tool_definitions) == len(request.tools)


@pytest.mark.skipif(not CASSETTES, reason="no xAI cassettes in the corpus")
@pytest.mark.parametrize("path", CASSETTES, ids=[p.name for p in CASSETTES])
def test_cassette_against_xai_sdk(path: Path) -> None:
    calls = _calls(path)
    items = _interactions(path)
    assert len(calls) == len(items)
    for call, item in zip(calls, items, strict=True):
        assert call.api == "xai.chat" and call.provider == "xai"
        assert call.stream == ("request_stream" in item)
        _check_request(call, item)
        want, reasons = _oracle(item)
        outputs = sorted(want.outputs, key=lambda o: o.index)
        assert len(call.output_messages) == len(outputs)
        for got, out in zip(call.output_messages, outputs, strict=True):
            _check_output(got, out, reasons[out.index])
        assert call.response_id == (want.id or None)
        assert call.response_model == (want.model or None)
        if want.usage.ByteSize():
            _check_usage(call, want)
        ended = bool(outputs) and reasons[outputs[-1].index] != 0
        assert call.complete == ended
        assert call.finish_reasons == [
            _reason(reasons[o.index]) for o in outputs if reasons[o.index]
        ]


def test_the_corpus_has_streams_tools_and_reasoning() -> None:
    """What the parametrized test covers, so that it cannot pass on nothing."""
    calls = [c for p in CASSETTES for c in _calls(p)]
    assert len(CASSETTES) >= 8 and len(calls) >= len(CASSETTES)
    assert any(c.stream for c in calls) and any(not c.stream for c in calls)
    parts = [p for c in calls for m in c.output_messages for p in m.parts]
    assert any(isinstance(p, ToolCallPart) for p in parts)
    assert any(isinstance(p, ToolCallResponsePart) for p in parts)
    assert any(isinstance(p, ReasoningPart) and p.content for p in parts)
    assert any(not c.complete for c in calls)  # the cancelled stream
