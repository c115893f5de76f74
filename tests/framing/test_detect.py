"""Choosing a framing from the content type and the first bytes; the decoder registry."""

from __future__ import annotations

import struct
import zlib

import pytest
import yaml

from agentshark.framing import (
    EventStreamDecoder,
    JsonArrayDecoder,
    NdjsonDecoder,
    SseDecoder,
    decode_stream,
    detect_framing,
    make_framing_decoder,
    media_type,
)
from agentshark.http.content import decode_bytes
from tests.helpers import CORPUS


def eventstream_head() -> bytes:
    prelude = struct.pack(">II", 40, 10)
    return prelude + struct.pack(">I", zlib.crc32(prelude)) + b"\x00" * 28


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("text/event-stream", "sse"),
        ("text/event-stream; charset=utf-8", "sse"),
        ("Text/Event-Stream", "sse"),
        ("application/x-ndjson", "ndjson"),
        ("application/ndjson", "ndjson"),
        ("application/jsonl; charset=utf-8", "ndjson"),
        ("application/x-jsonlines", "ndjson"),
        ("application/json-seq", "ndjson"),
        ("application/vnd.amazon.eventstream", "aws-eventstream"),
    ],
)
def test_stream_content_types(content_type: str, expected: str) -> None:
    head = eventstream_head() if expected == "aws-eventstream" else b"data: {}\n\n"
    assert detect_framing(content_type, head) == expected


def test_media_type() -> None:
    assert media_type(None) is None
    assert media_type("") is None
    assert media_type(" Application/JSON ; charset=UTF-8") == "application/json"


def test_json_array_needs_a_streaming_hint() -> None:
    head = b'[{"candidates": [{"content": {"parts": [{"text": "hi"}]}}]}\r\n,\r\n{'
    assert detect_framing("application/json; charset=UTF-8", head) is None
    assert detect_framing("application/json; charset=UTF-8", head, streaming_hint=True) == (
        "json-array"
    )
    assert detect_framing(None, b"  [1, 2]", streaming_hint=True) == "json-array"


@pytest.mark.parametrize(
    ("content_type", "head", "expected"),
    [
        # No content type, or a generic one: the bytes decide.
        (None, b"data: {}\n\n", "sse"),
        (None, b"event: message_start\ndata: {}", "sse"),
        (None, b": OPENROUTER PROCESSING\n\n", "sse"),
        (None, b"\xef\xbb\xbfid: 1\ndata: x\n\n", "sse"),
        ("application/octet-stream", b"retry: 100\n", "sse"),
        ("text/plain", b'{"a": 1}\n{"a": 2}\n', "ndjson"),
        (None, b'{"model":"llama3","done":false}\r\n{"model"', "ndjson"),
        ("application/octet-stream", eventstream_head(), "aws-eventstream"),
        # A content type that lies: SSE sent as application/json.
        ("application/json", b"data: {}\n\n", "sse"),
        # Not streams.
        (None, b'{"a": 1}', None),
        (None, b'{"a": 1}\n', None),
        ("application/json", b'{\n  "a": {\n    "b": 1\n  }\n}\n', None),
        ("application/json", b'{"items": [\n{"a": 1}\n]}', None),
        (None, b"", None),
        (None, b"<html>", None),
        (None, b"\x00" * 12, None),
        # A stream content type over one JSON document (an error object).
        ("text/event-stream", b'{"error": {"message": "bad key"}}', None),
        ("application/vnd.amazon.eventstream", b'{"message": "denied"}', None),
        # ...unless the JSON really is a stream.
        ("text/event-stream", b'{"a": 1}\n{"a": 2}\n', "ndjson"),
        ("application/x-ndjson", b'{"a": 1}', "ndjson"),
    ],
)
def test_sniffing(content_type: str | None, head: bytes, expected: str | None) -> None:
    assert detect_framing(content_type, head) == expected


def test_registry() -> None:
    assert isinstance(make_framing_decoder("sse"), SseDecoder)
    assert isinstance(make_framing_decoder("ndjson"), NdjsonDecoder)
    assert isinstance(make_framing_decoder("json-array"), JsonArrayDecoder)
    assert isinstance(make_framing_decoder("aws-eventstream"), EventStreamDecoder)
    with pytest.raises(ValueError, match="unknown framing 'websocket'"):
        make_framing_decoder("websocket")


def test_location_is_passed_to_diagnostics() -> None:
    out = decode_stream([(1.0, b"data: x")], "sse", location="ex7 response body")
    assert out[0].location == "ex7 response body byte 0"  # type: ignore[union-attr]


def test_decode_stream_without_pieces() -> None:
    assert decode_stream([], "sse") == []
    assert decode_stream(iter([]), "json-array") == []


def _responses(paths: list[str]) -> list[tuple[str, str | None, bytes]]:
    found = []
    for rel in paths:
        doc = yaml.load((CORPUS / rel).read_text(), Loader=yaml.CSafeLoader)
        for interaction in doc["interactions"]:
            response = interaction["response"]
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            body = response["body"]["string"]
            body = body.encode() if isinstance(body, str) else body
            ctype = (headers.get("content-type") or [None])[0]
            ctype = ctype.decode() if isinstance(ctype, bytes) else ctype
            ce = (headers.get("content-encoding") or [None])[0]
            data, _ = decode_bytes(body, ce, content_decoded=None)
            found.append((rel, ctype, data))
    return found


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "pydantic__pydantic-ai/tests/models/cassettes/test_bedrock/test_bedrock_model_stream.yaml",
            "aws-eventstream",
        ),
        (
            "traceloop__openllmetry/packages/opentelemetry-instrumentation-ollama/tests/cassettes/"
            "test_chat/test_ollama_streaming_chat_with_events_with_no_content.yaml",
            "ndjson",
        ),
        (
            "pydantic__pydantic-ai/tests/models/cassettes/test_openrouter/"
            "test_openrouter_advisor_tool_stream.yaml",
            "sse",
        ),
        (
            "pydantic__pydantic-ai/tests/models/cassettes/test_anthropic/"
            "test_anthropic_advisor_tool_stream.yaml",
            "sse",
        ),
        ("simonw__llm-gemini/tests/cassettes/test_gemini/test_prompt.yaml", "json-array"),
    ],
)
def test_corpus_bodies_by_type_and_by_sniffing(path: str, expected: str) -> None:
    """Real bodies: the content type and the bytes alone must both give the framing."""
    hint = expected == "json-array"
    for _, ctype, body in _responses([path]):
        head = body[:4096]
        assert detect_framing(ctype, head, streaming_hint=hint) == expected
        assert detect_framing(None, head, streaming_hint=hint) == expected
