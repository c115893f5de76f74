"""NDJSON decoding: lines, blank lines, the unterminated last line, and Ollama streams."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import orjson
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.framing import JsonDocument, NdjsonDecoder, decode_stream
from tests.helpers import CORPUS, feed_three_ways

OLLAMA = (
    CORPUS / "traceloop__openllmetry/packages/opentelemetry-instrumentation-ollama/tests/cassettes"
)


def no_ts(e: Any) -> Any:
    return dataclasses.replace(e, ts=0.0) if isinstance(e, JsonDocument) else e


def decode(data: bytes, *, trailing: bytes = b"") -> list[Any]:
    return [
        no_ts(e) for e in feed_three_ways(NdjsonDecoder, data, trailing=trailing, normalize=no_ts)
    ]


def doc(raw: bytes, offset: int, *, complete: bool = True) -> JsonDocument:
    return JsonDocument(raw=raw, ts=0.0, offset=offset, complete=complete)


def codes(out: list[Any]) -> list[str]:
    return [e.code for e in out if isinstance(e, Diagnostic)]


def test_lines_lf_and_crlf() -> None:
    body = b'{"a":1}\n{"b":2}\r\n[3]\n'
    assert decode(body, trailing=b'{"c":4}\n') == [
        doc(b'{"a":1}', 0),
        doc(b'{"b":2}', 8),
        doc(b"[3]", 17),
    ]


def test_blank_lines_skipped() -> None:
    body = b'\n\r\n  \n{"a":1}\n\t\n\n{"b":2}\n'
    assert decode(body) == [doc(b'{"a":1}', 6), doc(b'{"b":2}', 17)]


def test_unterminated_last_line_that_parses_is_complete() -> None:
    out = decode(b'{"a":1}\n{"done":true}')
    assert out == [doc(b'{"a":1}', 0), doc(b'{"done":true}', 8)]


def test_unterminated_last_line_cut_short() -> None:
    out = decode(b'{"a":1}\n{"done":tr', trailing=b"ue}\n")
    assert out[0] == doc(b'{"a":1}', 0)
    assert out[2] == doc(b'{"done":tr', 8, complete=False)
    assert codes(out) == ["ndjson.truncated"]
    assert out[1].location == "byte 8"


def test_not_json_line_is_reported_and_kept() -> None:
    out = decode(b'{"a":1}\nHTTP/1.1 500 oops\n  true\n')
    assert codes(out) == ["ndjson.not_json"]
    assert [e.raw for e in out if isinstance(e, JsonDocument)] == [
        b'{"a":1}',
        b"HTTP/1.1 500 oops",
        b"  true",
    ]


def test_json_seq_record_separators() -> None:
    out = decode(b'\x1e{"a":1}\n\x1e{"b":2}\n')
    assert out == [doc(b'{"a":1}', 1), doc(b'{"b":2}', 10)]


def test_value_is_lazy() -> None:
    (d,) = decode(b'{"a": [1, 2]}\n')
    assert d.value() == {"a": [1, 2]}


def test_stamped_with_completing_feed() -> None:
    out = decode_stream([(1.0, b'{"a":'), (2.0, b"1}\n{"), (3.0, b"}")], "ndjson")
    assert [(e.raw, e.ts) for e in out if isinstance(e, JsonDocument)] == [
        (b'{"a":1}', 2.0),
        (b"{}", 3.0),
    ]


def ollama_body(name: str) -> bytes:
    doc = yaml.load((OLLAMA / name).read_text(), Loader=yaml.CSafeLoader)
    body = doc["interactions"][0]["response"]["body"]["string"]
    return body.encode() if isinstance(body, str) else body


def test_ollama_streaming_chat() -> None:
    body = ollama_body("test_chat/test_ollama_streaming_chat_with_events_with_no_content.yaml")
    out = decode(body, trailing=b'{"late":true}\n')
    assert codes(out) == []
    lines = [ln for ln in body.split(b"\n") if ln.strip()]
    assert len(out) == len(lines) > 10
    values = [d.value() for d in out]
    assert values == [orjson.loads(ln) for ln in lines]
    assert values[-1]["done"] is True
    assert all(v["done"] is False for v in values[:-1])


def test_all_ollama_streams() -> None:
    paths = sorted(OLLAMA.rglob("*streaming*.yaml"))
    assert len(paths) >= 8
    for path in paths:
        body = ollama_body(str(path.relative_to(OLLAMA)))
        out = decode_stream([(1.0, body)], "ndjson")
        assert codes(out) == [], path
        assert all(isinstance(e, JsonDocument) and e.complete for e in out), path
        assert len(out) == sum(1 for ln in body.split(b"\n") if ln.strip()), path


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=10)))
    return [data[a:b] for a, b in itertools.pairwise([0, *cuts, len(data)])]


NDJSON_ALPHABET = st.sampled_from(
    [b"{", b"}", b'"a"', b":", b"1", b"\n", b"\r", b"\r\n", b" ", b"\x1e", b"x", b"\xff", b"[]"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.data(),
    st.one_of(st.binary(max_size=200), st.lists(NDJSON_ALPHABET, max_size=60).map(b"".join)),
)
def test_fuzz_only_events_and_diagnostics(data: st.DataObject, body: bytes) -> None:
    d = NdjsonDecoder()
    out: list[Any] = []
    for chunk in data.draw(chunked(body)):
        out += d.feed(chunk, 1.0)
    out += d.close(2.0)
    assert all(isinstance(e, JsonDocument | Diagnostic) for e in out)
    assert [no_ts(e) for e in out] == [no_ts(e) for e in decode_stream([(1.0, body)], "ndjson")]
