"""Streamed JSON array decoding: element boundaries, strings, damage, and Gemini streams."""

from __future__ import annotations

import dataclasses
import itertools
from functools import cache
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.framing import JsonArrayDecoder, JsonDocument, decode_stream
from agentshark.http.content import decode_bytes
from tests.helpers import CORPUS, feed_three_ways

GEMINI = CORPUS / "simonw__llm-gemini/tests/cassettes"


def no_ts(e: Any) -> Any:
    return dataclasses.replace(e, ts=0.0) if isinstance(e, JsonDocument) else e


def decode(data: bytes, *, trailing: bytes = b"") -> list[Any]:
    return [
        no_ts(e)
        for e in feed_three_ways(JsonArrayDecoder, data, trailing=trailing, normalize=no_ts)
    ]


def raws(out: list[Any]) -> list[bytes]:
    return [e.raw for e in out if isinstance(e, JsonDocument)]


def codes(out: list[Any]) -> list[str]:
    return [e.code for e in out if isinstance(e, Diagnostic)]


def test_gemini_shape() -> None:
    body = b'[{"candidates": [{"text": "a"}]}\r\n,\r\n{"candidates": [{"text": "b"}]}\r\n]'
    out = decode(body, trailing=b"\n")
    assert out == [
        JsonDocument(raw=b'{"candidates": [{"text": "a"}]}', ts=0.0, offset=1),
        JsonDocument(raw=b'{"candidates": [{"text": "b"}]}', ts=0.0, offset=37),
    ]


def test_strings_with_quotes_brackets_and_escapes() -> None:
    elements = [
        b'{"a": "x\\"]}[{", "b": [1, {"c": "}"}]}',
        b'{"d": "\\\\"}',
        b'{"e": "\\\\\\""}',
        b'"top-level \\" string ]"',
        b'[[], {}, "["]',
        b'{"u": "\\u005d"}',
    ]
    body = b"[" + b" ,\n\t".join(elements) + b"]"
    out = decode(body)
    assert codes(out) == []
    assert raws(out) == elements
    assert [d.value() for d in out] == orjson.loads(body)


def test_deep_nesting_and_loose_brackets() -> None:
    """Past the fast path's depth, and brackets of the wrong kind: structure, not JSON."""
    deep = b"[" * 40 + b'{"a": "]"}' + b"]" * 40
    loose = b'{"a": [1}]'
    out = decode(b"[" + deep + b"," + loose + b"]")
    assert raws(out) == [deep, loose]


def test_scalars() -> None:
    out = decode(b'[1, -2.5e3,true , false,null ,"s"]')
    assert raws(out) == [b"1", b"-2.5e3", b"true", b"false", b"null", b'"s"']


def test_empty_arrays() -> None:
    assert decode(b"[]") == []
    assert decode(b"  [ \r\n ]  \n") == []
    assert decode(b"") == []


def test_elements_emitted_as_soon_as_complete() -> None:
    d = JsonArrayDecoder()
    out = d.feed(b'[{"a": 1}', 1.0)
    assert out == [JsonDocument(raw=b'{"a": 1}', ts=1.0, offset=1)]
    out = d.feed(b',\r\n{"b": ', 2.0)
    assert out == []
    out = d.feed(b"2}", 3.0)
    assert out == [JsonDocument(raw=b'{"b": 2}', ts=3.0, offset=12)]
    assert d.feed(b"]", 4.0) == []
    assert d.close(5.0) == []


def test_content_after_closing_bracket() -> None:
    out = decode(b'[{"a":1}] {"b":2}')
    assert raws(out) == [b'{"a":1}']
    assert codes(out) == ["jsonarray.trailing_data"]
    assert out[-1].location == "byte 10"


def test_missing_closing_bracket_with_partial_element() -> None:
    out = decode(b'[{"a":1},\n{"b": [2, "x', trailing=b'"]}]')
    assert out[0] == JsonDocument(raw=b'{"a":1}', ts=0.0, offset=1)
    assert codes(out) == ["jsonarray.truncated"]
    assert out[2] == JsonDocument(raw=b'{"b": [2, "x', ts=0.0, offset=10, complete=False)


def test_missing_closing_bracket_between_elements() -> None:
    out = decode(b'[{"a":1},\n')
    assert raws(out) == [b'{"a":1}']
    assert codes(out) == ["jsonarray.truncated"]


def test_truncated_scalar_is_partial() -> None:
    out = decode(b"[1, 23")
    assert out[0] == JsonDocument(raw=b"1", ts=0.0, offset=1)
    assert out[2] == JsonDocument(raw=b"23", ts=0.0, offset=4, complete=False)


@pytest.mark.parametrize(
    ("body", "elements"),
    [
        (b'[{"a":1} {"b":2}]', [b'{"a":1}', b'{"b":2}']),
        (b'[{"a":1},,{"b":2}]', [b'{"a":1}', b'{"b":2}']),
        (b'[{"a":1},]', [b'{"a":1}']),
    ],
)
def test_syntax_slips_are_reported_and_tolerated(body: bytes, elements: list[bytes]) -> None:
    out = decode(body)
    assert raws(out) == elements
    assert codes(out) == ["jsonarray.syntax"]


def test_not_an_array_is_kept_as_one_document() -> None:
    body = b'  {"error": {"code": 400, "message": "bad [request]"}}\n'
    out = decode(body)
    assert codes(out) == ["jsonarray.not_array"]
    assert out[1] == JsonDocument(raw=body.strip(), ts=0.0, offset=2, complete=True)
    out = decode(b"<html>oops")
    assert out[1] == JsonDocument(raw=b"<html>oops", ts=0.0, offset=0, complete=False)


# -- Gemini streams ---------------------------------------------------------------------------


@cache
def gemini_array_streams() -> list[tuple[str, bytes]]:
    found = []
    for path in sorted(GEMINI.rglob("*.yaml")):
        doc = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        for i, interaction in enumerate(doc.get("interactions") or []):
            uri = interaction["request"]["uri"]
            if ":streamGenerateContent" not in uri or "alt=sse" in uri:
                continue
            response = interaction["response"]
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            body = response["body"]["string"]
            body = body.encode() if isinstance(body, str) else body
            ce = (headers.get("content-encoding") or [None])[0]
            data, diags = decode_bytes(body, ce, content_decoded=None)
            assert all(d.code == "content.already_decoded" for d in diags)
            found.append((f"{path.relative_to(GEMINI)}#{i}", data))
    return found


def test_gemini_prompt_cassette() -> None:
    streams = dict(gemini_array_streams())
    body = streams["test_gemini/test_prompt.yaml#0"]
    out = decode(body, trailing=b"\r\n")
    assert codes(out) == []
    assert [d.value() for d in out] == orjson.loads(body)
    assert len(out) > 1


def test_all_gemini_array_streams() -> None:
    streams = gemini_array_streams()
    assert len(streams) >= 5
    for name, body in streams:
        out = decode_stream([(1.0, body)], "json-array")
        assert codes(out) == [], name
        assert [d.value() for d in out if isinstance(d, JsonDocument)] == orjson.loads(body), name
        pieces = [(1.0, body[i : i + 13]) for i in range(0, len(body), 13)]
        assert decode_stream(pieces, "json-array") == out, name


# -- fuzz -------------------------------------------------------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=10)))
    return [data[a:b] for a, b in itertools.pairwise([0, *cuts, len(data)])]


@settings(max_examples=200, deadline=None)
@given(st.data(), st.lists(JSON, max_size=6), st.sampled_from([b",", b" , ", b",\r\n", b"\n,\n"]))
def test_fuzz_valid_arrays_round_trip(data: st.DataObject, elements: list[Any], sep: bytes) -> None:
    body = b"[" + sep.join(orjson.dumps(e) for e in elements) + b"]"
    d = JsonArrayDecoder()
    out: list[Any] = []
    for chunk in data.draw(chunked(body)):
        out += d.feed(chunk, 1.0)
    out += d.close(2.0)
    assert codes(out) == []
    assert [e.value() for e in out] == orjson.loads(body)


ARRAY_ALPHABET = st.sampled_from(
    [b"[", b"]", b"{", b"}", b'"', b"\\", b",", b" ", b"\n", b"1", b"a", b":", b"\xff"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.data(),
    st.one_of(st.binary(max_size=200), st.lists(ARRAY_ALPHABET, max_size=60).map(b"".join)),
)
def test_fuzz_only_events_and_diagnostics(data: st.DataObject, body: bytes) -> None:
    d = JsonArrayDecoder()
    out: list[Any] = []
    for chunk in data.draw(chunked(body)):
        out += d.feed(chunk, 1.0)
    out += d.close(2.0)
    assert all(isinstance(e, JsonDocument | Diagnostic) for e in out)
    assert [no_ts(e) for e in out] == [no_ts(e) for e in decode_stream([(1.0, body)], "json-array")]
