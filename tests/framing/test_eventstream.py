"""AWS event stream decoding: hand-built messages, corruption, and real Bedrock streams."""

from __future__ import annotations

import dataclasses
import itertools
import struct
import uuid
import zlib
from functools import cache
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.framing import EventStreamDecoder, EventStreamMessage, decode_stream
from agentshark.framing.eventstream import parse_headers
from tests.helpers import CORPUS, feed_three_ways

BEDROCK_STREAM = (
    CORPUS
    / "pydantic__pydantic-ai/tests/models/cassettes/test_bedrock/test_bedrock_model_stream.yaml"
)


def header(name: str, kind: int, value: object = None) -> bytes:
    """One header, encoded independently of the decoder (the layout of botocore's docs)."""
    out = bytes([len(name)]) + name.encode() + bytes([kind])
    if kind in (0, 1):
        return out
    if kind in (2, 3, 4, 5, 8):
        fmt = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}[kind]
        return out + struct.pack(fmt, value)
    if kind in (6, 7):
        raw = value.encode() if isinstance(value, str) else value
        assert isinstance(raw, bytes)
        return out + struct.pack(">H", len(raw)) + raw
    assert isinstance(value, uuid.UUID)
    return out + value.bytes


def message(headers: bytes, payload: bytes) -> bytes:
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event(event_type: str, payload: bytes) -> bytes:
    return message(
        header(":event-type", 7, event_type)
        + header(":content-type", 7, "application/json")
        + header(":message-type", 7, "event"),
        payload,
    )


def no_ts(e: Any) -> Any:
    return dataclasses.replace(e, ts=0.0) if isinstance(e, EventStreamMessage) else e


def decode(data: bytes, *, trailing: bytes = b"") -> list[Any]:
    return [
        no_ts(e)
        for e in feed_three_ways(EventStreamDecoder, data, trailing=trailing, normalize=no_ts)
    ]


def messages(out: list[Any]) -> list[EventStreamMessage]:
    return [e for e in out if isinstance(e, EventStreamMessage)]


def codes(out: list[Any]) -> list[str]:
    return [e.code for e in out if isinstance(e, Diagnostic)]


# -- hand-built messages ----------------------------------------------------------------------


def test_every_header_type() -> None:
    uid = uuid.UUID("12345678-1234-5678-1234-567812345678")
    headers = (
        header("t", 0)
        + header("f", 1)
        + header("b", 2, -5)
        + header("s", 3, -300)
        + header("i", 4, 70000)
        + header("l", 5, -(2**40))
        + header("raw", 6, b"\x00\xff")
        + header("str", 7, "héllo")
        + header("ts", 8, 1717000000123)
        + header("id", 9, uid)
    )
    out = decode(message(headers, b"payload"))
    assert out == [
        EventStreamMessage(
            headers={
                "t": True,
                "f": False,
                "b": -5,
                "s": -300,
                "i": 70000,
                "l": -(2**40),
                "raw": b"\x00\xff",
                "str": "héllo",
                "ts": 1717000000123,
                "id": uid,
            },
            payload=b"payload",
            ts=0.0,
            offset=0,
        )
    ]


def test_message_and_event_type() -> None:
    data = event("contentBlockDelta", b"{}") + message(
        header(":message-type", 7, "exception")
        + header(":exception-type", 7, "throttlingException"),
        b'{"message":"slow down"}',
    )
    first, second = messages(decode(data))
    assert (first.message_type, first.event_type) == ("event", "contentBlockDelta")
    assert (second.message_type, second.event_type) == ("exception", "throttlingException")
    assert second.offset == len(event("contentBlockDelta", b"{}"))


def test_empty_headers_and_payload() -> None:
    (msg,) = messages(decode(message(b"", b"")))
    assert (msg.headers, msg.payload, msg.message_type, msg.event_type) == ({}, b"", None, None)


def test_stamped_with_completing_feed() -> None:
    data = event("a", b"1")
    d = EventStreamDecoder()
    assert d.feed(data[:10], 1.0) == []
    assert d.feed(data[10:], 2.0)[0].ts == 2.0  # type: ignore[union-attr]


def test_message_crc_mismatch_keeps_the_message() -> None:
    good = event("a", b'{"x":1}')
    bad = bytearray(event("b", b'{"y":2}'))
    bad[-10] ^= 0x01  # flip a payload bit
    out = decode(good + bytes(bad) + good)
    assert codes(out) == ["eventstream.crc_mismatch"]
    assert [m.event_type for m in messages(out)] == ["a", "b", "a"]
    diag = next(e for e in out if isinstance(e, Diagnostic))
    assert diag.location == f"byte {len(good)}"
    assert "message CRC" in diag.message


def test_prelude_crc_mismatch_is_reported() -> None:
    bad = bytearray(event("a", b"{}"))
    bad[8] ^= 0xFF
    out = decode(bytes(bad))
    assert codes(out) == ["eventstream.crc_mismatch", "eventstream.crc_mismatch"]
    assert len(messages(out)) == 1


@pytest.mark.parametrize(
    "prelude",
    [
        struct.pack(">II", 15, 0),
        struct.pack(">II", (16 << 20) + 1, 0),
        struct.pack(">II", 20, 5),
    ],
)
def test_impossible_length_stops(prelude: bytes) -> None:
    bad = prelude + struct.pack(">I", zlib.crc32(prelude)) + b"\0" * 40
    good = event("a", b"{}")
    out = decode(good + bad + good)
    assert codes(out) == ["eventstream.bad_length"]
    assert len(messages(out)) == 1
    assert out[-1].location == f"byte {len(good)}"


def test_truncated_message() -> None:
    good = event("a", b"{}")
    out = decode(good + good[:20], trailing=good[20:])
    assert len(messages(out)) == 1
    assert codes(out) == ["eventstream.truncated"]
    assert "20 bytes" in out[-1].message


@pytest.mark.parametrize(
    "headers",
    [
        header("ok", 7, "yes") + bytes([2]) + b"zz" + bytes([12]),  # unknown type 12
        header("ok", 7, "yes") + bytes([5]) + b"trunc" + bytes([7]) + b"\x00\x09ab",  # past end
        header("ok", 7, "yes") + bytes([40]) + b"short",  # name past the end
    ],
)
def test_bad_headers_keep_what_parsed(headers: bytes) -> None:
    out = decode(message(headers, b"p"))
    assert codes(out) == ["eventstream.bad_headers"]
    (msg,) = messages(out)
    assert (msg.headers, msg.payload) == ({"ok": "yes"}, b"p")


def test_non_utf8_string_header() -> None:
    out = decode(message(header("s", 7, b"\xff\xfe"), b""))
    assert codes(out) == ["eventstream.bad_headers"]
    assert messages(out)[0].headers == {"s": "\ufffd\ufffd"}


def test_parse_headers_directly() -> None:
    assert parse_headers(header("a", 4, 7)) == ({"a": 7}, [])


# -- real Bedrock streams ---------------------------------------------------------------------


def independent_count(body: bytes) -> int:
    n = pos = 0
    while pos < len(body):
        pos += int.from_bytes(body[pos : pos + 4], "big")
        n += 1
    assert pos == len(body)
    return n


@cache
def corpus_eventstreams() -> list[tuple[str, bytes]]:
    found = []
    for path in sorted(CORPUS.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "vnd.amazon.eventstream" not in text:
            continue
        doc = yaml.load(text, Loader=yaml.CSafeLoader)
        for i, interaction in enumerate(doc.get("interactions") or []):
            response = interaction.get("response") or {}
            body = (response.get("body") or {}).get("string")
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            ctype = (headers.get("content-type") or [""])[0]
            ctype = ctype.decode() if isinstance(ctype, bytes) else ctype
            if ctype == "application/vnd.amazon.eventstream" and isinstance(body, bytes) and body:
                found.append((f"{path.relative_to(CORPUS)}#{i}", body))
    return found


def test_bedrock_converse_stream() -> None:
    doc = yaml.load(BEDROCK_STREAM.read_text(), Loader=yaml.CSafeLoader)
    body = doc["interactions"][0]["response"]["body"]["string"]
    out = decode(body, trailing=event("late", b"{}"))
    assert codes(out) == []
    msgs = messages(out)
    assert len(msgs) == independent_count(body) == 33
    assert msgs[0].event_type == "messageStart"
    assert msgs[-1].event_type == "metadata"
    assert {m.message_type for m in msgs} == {"event"}
    text = "".join(
        orjson.loads(m.payload)["delta"]["text"]
        for m in msgs
        if m.event_type == "contentBlockDelta"
    )
    assert "Paris" in text


def test_corpus_eventstreams_all_valid() -> None:
    bodies = corpus_eventstreams()
    assert len(bodies) > 20
    for name, body in bodies:
        out = decode_stream([(1.0, body)], "aws-eventstream")
        assert codes(out) == [], name
        assert len(out) == independent_count(body), name


def test_corpus_eventstreams_chunked() -> None:
    for name, body in corpus_eventstreams()[:10]:
        whole = decode_stream([(1.0, body)], "aws-eventstream")
        pieces = [(1.0, body[i : i + 7]) for i in range(0, len(body), 7)]
        assert decode_stream(pieces, "aws-eventstream") == whole, name


# -- fuzz -------------------------------------------------------------------------------------


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=10)))
    return [data[a:b] for a, b in itertools.pairwise([0, *cuts, len(data)])]


def _damaged(draw: st.DrawFn) -> bytes:
    data = bytearray(b"".join(draw(st.lists(st.sampled_from(_SAMPLES), max_size=4))))
    for _ in range(draw(st.integers(0, 3))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


_SAMPLES = [
    event("a", b'{"x":1}'),
    message(header("u", 9, uuid.UUID(int=1)) + header("n", 5, 3), b"zz"),
    message(b"", b""),
]


@settings(max_examples=300, deadline=None)
@given(st.data(), st.one_of(st.binary(max_size=120), st.composite(_damaged)()))
def test_fuzz_only_events_and_diagnostics(data: st.DataObject, body: bytes) -> None:
    d = EventStreamDecoder()
    out: list[Any] = []
    for chunk in data.draw(chunked(body)):
        out += d.feed(chunk, 1.0)
    out += d.close(2.0)
    assert all(isinstance(e, EventStreamMessage | Diagnostic) for e in out)
    assert [no_ts(e) for e in out] == [
        no_ts(e) for e in decode_stream([(1.0, body)], "aws-eventstream")
    ]
