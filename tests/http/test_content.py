"""Content-Encoding decoding: codings, stacks, the tri-state ``content_decoded``, limits."""

from __future__ import annotations

import gzip
import itertools
import tracemalloc
import zlib
from collections.abc import Sequence

import brotli
import pytest
import yaml
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.framing import decode_stream
from agentshark.framing.events import JsonDocument
from agentshark.http.content import (
    DEFAULT_DECODE_LIMIT,
    ContentDecoder,
    ContentDecodingError,
    DecodedBody,
    TruncatedContentError,
    decode_body,
    decode_bytes,
    make_decoder,
    parse_content_encoding,
)
from agentshark.model import Body
from tests.helpers import CORPUS, feed_three_ways

TEXT = b'{"model": "gpt-4o", "choices": [{"delta": {"content": "hello"}}]}\n' * 50


def body_of(*pieces: bytes, content_decoded: bool | None = False) -> Body:
    body = Body(content_decoded=content_decoded)
    for i, piece in enumerate(pieces):
        body.append(float(i + 1), piece)
    return body


def split(data: bytes, n: int) -> list[bytes]:
    step = max(1, len(data) // n)
    return [data[i : i + step] for i in range(0, len(data), step)]


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


ENCODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": zstandard.ZstdCompressor().compress,
}


def encode(data: bytes, codings: Sequence[str]) -> bytes:
    for c in codings:
        data = ENCODERS[c](data)
    return data


def codes(diags: Sequence[Diagnostic]) -> list[str]:
    return [d.code for d in diags]


# -- parse_content_encoding -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        ("", []),
        ("gzip", ["gzip"]),
        ("GZip", ["gzip"]),
        ("x-gzip", ["gzip"]),
        ("identity", []),
        ("gzip, identity, br", ["gzip", "br"]),
        (" deflate ,zstd ", ["deflate", "zstd"]),
        ("x-compress", ["compress"]),
        ("gzip,,", ["gzip"]),
    ],
)
def test_parse_content_encoding(value: str | None, expected: list[str]) -> None:
    assert parse_content_encoding(value) == expected


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
@pytest.mark.parametrize("n_pieces", [1, 3, 1000])
def test_round_trip(coding: str, n_pieces: int) -> None:
    body = body_of(*split(encode(TEXT, [coding]), n_pieces))
    result = decode_body(body, coding)
    assert result.decoded
    assert result.diagnostics == []
    assert result.data() == TEXT
    assert result.size == len(TEXT)
    assert result.codings == [coding]
    arrival = {ts for ts, _ in body.pieces}
    assert all(ts in arrival for ts, _ in result.pieces)
    assert [ts for ts, _ in result.pieces] == sorted(ts for ts, _ in result.pieces)


def test_raw_deflate() -> None:
    result = decode_body(body_of(*split(raw_deflate(TEXT), 7)), "deflate")
    assert (result.decoded, result.diagnostics, result.data()) == (True, [], TEXT)


@pytest.mark.parametrize("codings", [["gzip", "br"], ["br", "gzip"], ["deflate", "zstd", "gzip"]])
def test_stacked_codings(codings: list[str]) -> None:
    data = encode(TEXT, codings)
    result = decode_body(body_of(*split(data, 5)), ", ".join(codings))
    assert (result.decoded, result.diagnostics, result.data()) == (True, [], TEXT)
    assert result.codings == codings


def test_pieces_keep_arrival_times() -> None:
    c = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    parts = [b"first event\n", b"second event\n", b"third event\n"]
    wire = [c.compress(p) + c.flush(zlib.Z_SYNC_FLUSH) for p in parts]
    wire[-1] += c.flush()
    body = Body()
    for ts, w in zip([10.0, 11.5, 12.25], wire, strict=True):
        body.append(ts, w)
    result = decode_body(body, "gzip")
    assert result.pieces == [(10.0, parts[0]), (11.5, parts[1]), (12.25, parts[2])]


def test_concatenated_gzip_members() -> None:
    data = gzip.compress(b"one ") + gzip.compress(b"two ") + gzip.compress(b"three")
    for n in (1, 4, len(data)):
        result = decode_body(body_of(*split(data, n)), "gzip")
        assert (result.data(), result.diagnostics) == (b"one two three", [])


def test_gzip_zero_padding_is_ignored() -> None:
    result = decode_body(body_of(gzip.compress(TEXT) + b"\0" * 7), "gzip")
    assert (result.data(), result.diagnostics) == (TEXT, [])


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_trailing_data_is_reported_and_decoded_kept(coding: str) -> None:
    result = decode_body(body_of(encode(TEXT, [coding]), b"GARBAGE!"), coding)
    assert result.decoded
    assert result.data() == TEXT
    assert codes(result.diagnostics) == ["content.trailing_data"]
    assert "8 bytes" in result.diagnostics[0].message


def test_zstd_multiple_frames() -> None:
    cctx = zstandard.ZstdCompressor()
    data = cctx.compress(b"alpha ") + cctx.compress(b"beta")
    for n in (1, len(data)):
        result = decode_body(body_of(*split(data, n)), "zstd")
        assert (result.data(), result.diagnostics) == (b"alpha beta", [])


def test_no_coding_keeps_pieces_without_copy() -> None:
    body = body_of(b"abc", b"def")
    for ce in (None, "", "identity"):
        result = decode_body(body, ce)
        assert result.pieces is body.pieces
        assert (result.decoded, result.size, result.diagnostics) == (True, 6, [])


def test_empty_body_with_coding() -> None:
    result = decode_body(Body(), "gzip")
    assert (result.decoded, result.size, result.diagnostics) == (True, 0, [])


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_corrupt_body_keeps_raw_bytes(coding: str) -> None:
    body = body_of(b'{"not": "compressed at all", "but": "declared so"}' * 3)
    result = decode_body(body, coding, location="ex1 response body")
    assert not result.decoded
    assert result.pieces is body.pieces
    assert codes(result.diagnostics) == ["content.decode_error"]
    diag = result.diagnostics[0]
    assert coding in diag.message
    assert diag.location == "ex1 response body"


def test_corrupt_in_the_middle_reports_offset() -> None:
    data = bytearray(gzip.compress(bytes(range(256)) * 64))
    data[100:110] = b"\xff" * 10
    result = decode_body(body_of(bytes(data[:50]), bytes(data[50:])), "gzip")
    assert not result.decoded
    assert codes(result.diagnostics) == ["content.decode_error"]
    assert "in encoded bytes 50.." in result.diagnostics[0].message


def test_wrong_coding_declared() -> None:
    result = decode_body(body_of(brotli.compress(TEXT)), "gzip")
    assert not result.decoded
    assert codes(result.diagnostics) == ["content.decode_error"]


@pytest.mark.parametrize("ce", ["compress", "aes128gcm", "gzip, compress", "x-compress"])
def test_unsupported_coding(ce: str) -> None:
    body = body_of(b"\x1f\x9d\x90abc")
    result = decode_body(body, ce)
    assert not result.decoded
    assert result.pieces is body.pieces
    assert codes(result.diagnostics) == ["content.unsupported_encoding"]
    assert (
        "compress" in result.diagnostics[0].message or "aes128gcm" in result.diagnostics[0].message
    )


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_truncated_stream_keeps_what_decoded(coding: str) -> None:
    full = encode(bytes(range(256)) * 400, [coding])
    cut = full[: len(full) * 2 // 3]
    result = decode_body(body_of(*split(cut, 4)), coding)
    assert result.decoded
    assert codes(result.diagnostics) == ["content.truncated"]
    assert (bytes(range(256)) * 400).startswith(result.data())
    assert "capture cut short" in result.diagnostics[0].message


def test_truncated_gzip_trailer_only() -> None:
    full = gzip.compress(TEXT)
    result = decode_body(body_of(full[:-4]), "gzip")
    assert result.data() == TEXT
    assert codes(result.diagnostics) == ["content.truncated"]


def test_truncated_second_gzip_member_header() -> None:
    result = decode_body(body_of(gzip.compress(b"abc") + b"\x1f"), "gzip")
    assert result.data() == b"abc"
    assert codes(result.diagnostics) == ["content.truncated"]


def test_decoder_errors_are_exceptions_for_direct_users() -> None:
    dec = make_decoder(["gzip"])
    with pytest.raises(ContentDecodingError):
        dec.decode(b"definitely not gzip")
    dec = make_decoder(["gzip"])
    dec.decode(gzip.compress(TEXT)[:30])
    with pytest.raises(TruncatedContentError):
        dec.flush()
    with pytest.raises(KeyError):
        make_decoder(["compress"])


# -- limits -----------------------------------------------------------------------------------


def _peak_during(fn: object) -> tuple[DecodedBody, int]:
    assert callable(fn)
    tracemalloc.start()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def test_gzip_bomb_stops_at_the_limit() -> None:
    member = gzip.compress(bytes(10 << 20), compresslevel=9)  # 10 MiB of zeros, ~10 KiB
    bomb = member * 30  # 300 MiB decoded, built cheaply as 30 gzip members
    body = body_of(bomb)
    result, peak = _peak_during(lambda: decode_body(body, "gzip", limit=1 << 20))
    assert not result.decoded
    assert result.pieces is body.pieces
    assert codes(result.diagnostics) == ["content.limit_exceeded"]
    assert result.diagnostics[0].message == (
        "decoded body exceeds 1 MiB limit; raise it with --max-body"
    )
    assert peak < 6 << 20


@pytest.mark.parametrize("coding", ["deflate", "br", "zstd"])
def test_bombs_stop_at_the_limit(coding: str) -> None:
    bomb = encode(bytes(32 << 20), [coding])
    body = body_of(*split(bomb, 3))
    result, peak = _peak_during(lambda: decode_body(body, coding, limit=1 << 20))
    assert codes(result.diagnostics) == ["content.limit_exceeded"]
    assert not result.decoded
    assert peak < 6 << 20


def test_stacked_bomb_stops_at_the_limit() -> None:
    bomb = encode(bytes(16 << 20), ["gzip", "br"])
    result = decode_body(body_of(bomb), "gzip, br", limit=1 << 20)
    assert codes(result.diagnostics) == ["content.limit_exceeded"]


def test_exactly_at_the_limit_is_fine() -> None:
    data = bytes(1 << 20)
    for coding in ENCODERS:
        result = decode_body(body_of(encode(data, [coding])), coding, limit=1 << 20)
        assert (result.size, result.diagnostics) == (1 << 20, []), coding


def test_default_limit_message() -> None:
    assert DEFAULT_DECODE_LIMIT == 256 << 20
    body = body_of(gzip.compress(b"x" * 10))
    result = decode_body(body, "gzip", limit=5)
    assert "exceeds 5 bytes limit" in result.diagnostics[0].message


# -- content_decoded: True / None -------------------------------------------------------------


def test_source_already_decoded() -> None:
    body = body_of(TEXT, content_decoded=True)
    result = decode_body(body, "gzip")
    assert result.pieces is body.pieces
    assert (result.decoded, result.diagnostics, result.codings) == (True, [], ["gzip"])


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_unknown_and_encoded_is_decoded(coding: str) -> None:
    result = decode_body(body_of(encode(TEXT, [coding]), content_decoded=None), coding)
    assert (result.decoded, result.diagnostics, result.data()) == (True, [], TEXT)


def test_unknown_and_raw_deflate_is_decoded() -> None:
    result = decode_body(body_of(raw_deflate(TEXT), content_decoded=None), "deflate")
    assert (result.decoded, result.diagnostics, result.data()) == (True, [], TEXT)


@pytest.mark.parametrize("ce", ["gzip", "deflate", "br", "zstd", "gzip, br"])
def test_unknown_and_plain_is_kept(ce: str) -> None:
    body = body_of(TEXT[:40], TEXT[40:], content_decoded=None)
    result = decode_body(body, ce)
    assert result.pieces is body.pieces
    assert result.decoded
    assert codes(result.diagnostics) == ["content.already_decoded"]
    assert result.diagnostics[0].severity == "info"


def test_unknown_and_corrupt_gzip_is_an_error() -> None:
    data = bytearray(gzip.compress(TEXT))
    data[20:30] = b"\x00" * 10
    result = decode_body(body_of(bytes(data), content_decoded=None), "gzip")
    assert not result.decoded
    assert codes(result.diagnostics) == ["content.decode_error"]


def test_decode_bytes() -> None:
    assert decode_bytes(gzip.compress(b"hi"), "gzip") == (b"hi", [])
    data, diags = decode_bytes(b"hi", "gzip", content_decoded=None)
    assert data == b"hi"
    assert codes(diags) == ["content.already_decoded"]


def test_gemini_cassette_gzip_json_array() -> None:
    """A VCR cassette keeping ``Content-Encoding: gzip`` over real gzip bytes."""
    path = CORPUS / "simonw__llm-gemini/tests/cassettes/test_gemini/test_prompt.yaml"
    doc = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    response = doc["interactions"][0]["response"]
    assert response["headers"]["Content-Encoding"] == ["gzip"]
    raw = response["body"]["string"]
    result = decode_body(body_of(raw, content_decoded=None), "gzip")
    assert (result.decoded, result.diagnostics) == (True, [])
    assert result.data().startswith(b"[")
    events = decode_stream(result.pieces, "json-array")
    docs = [e for e in events if isinstance(e, JsonDocument)]
    assert docs
    assert len(docs) == len(events)
    assert all("candidates" in d.value() or "usageMetadata" in d.value() for d in docs)  # type: ignore[operator]


# -- incremental decoders, three ways ---------------------------------------------------------


class _Feed:
    """A content decoder seen as a framing-style decoder emitting one event per output byte,
    so that whole and byte-by-byte feeding can be compared event for event."""

    def __init__(self, decoder: ContentDecoder) -> None:
        self._decoder = decoder
        self._failed = False

    def feed(self, data: bytes, ts: float) -> list[object]:
        return self._run(lambda: self._decoder.decode(data))

    def close(self, ts: float) -> list[object]:
        out = self._run(self._decoder.flush)
        if self._decoder.trailing_bytes:
            out.append(Diagnostic(code="trailing", message=""))
        return out

    def _run(self, fn: object) -> list[object]:
        assert callable(fn)
        if self._failed:
            return []
        try:
            return list(fn())
        except TruncatedContentError as exc:
            self._failed = True
            return [*exc.data, Diagnostic(code="truncated", message="")]
        except ContentDecodingError:
            self._failed = True
            return [Diagnostic(code="error", message="")]


@pytest.mark.parametrize("codings", [["gzip"], ["deflate"], ["br"], ["zstd"], ["gzip", "br"]])
def test_decoders_three_ways(codings: list[str]) -> None:
    data = encode(TEXT[:600], codings)
    events = feed_three_ways(lambda: _Feed(make_decoder(codings)), data, trailing=b"\x00junk")
    assert bytes(e for e in events if isinstance(e, int)) == TEXT[:600]


def test_raw_deflate_three_ways() -> None:
    events = feed_three_ways(lambda: _Feed(make_decoder(["deflate"])), raw_deflate(TEXT[:300]))
    assert bytes(e for e in events if isinstance(e, int)) == TEXT[:300]


def test_gzip_members_three_ways() -> None:
    data = gzip.compress(b"ab") + b"\0\0" + gzip.compress(b"cd")
    events = feed_three_ways(lambda: _Feed(make_decoder(["gzip"])), data, trailing=b"x")
    assert events == list(b"abcd")


# -- fuzz -------------------------------------------------------------------------------------


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


CODINGS = st.sampled_from(
    ["gzip", "deflate", "br", "zstd", "gzip, br", "zstd, deflate", "compress", "identity"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.data(),
    st.one_of(st.binary(max_size=300), st.sampled_from([encode(TEXT[:90], [c]) for c in ENCODERS])),
    CODINGS,
    st.sampled_from([False, None, True]),
)
def test_fuzz_never_raises(
    data: st.DataObject, payload: bytes, ce: str, content_decoded: bool | None
) -> None:
    if data.draw(st.booleans()):  # damage a real stream
        payload = bytearray(payload)  # type: ignore[assignment]
        for _ in range(data.draw(st.integers(0, 3))):
            if payload:
                payload[data.draw(st.integers(0, len(payload) - 1))] ^= 0xFF  # type: ignore[index]
        payload = bytes(payload)
    body = body_of(*data.draw(chunked(payload)), content_decoded=content_decoded)
    result = decode_body(
        body, ce, limit=data.draw(st.sampled_from([64, 4096, DEFAULT_DECODE_LIMIT]))
    )
    assert result.size == sum(len(p) for _, p in result.pieces)
    assert all(isinstance(d, Diagnostic) for d in result.diagnostics)
    if not result.decoded:
        assert result.pieces is body.pieces


@settings(max_examples=150, deadline=None)
@given(st.data(), st.binary(max_size=2000), st.sampled_from(list(ENCODERS)))
def test_fuzz_round_trip(data: st.DataObject, payload: bytes, coding: str) -> None:
    body = body_of(*data.draw(chunked(encode(payload, [coding]))))
    result = decode_body(body, coding)
    assert (result.decoded, result.diagnostics, result.data()) == (True, [], payload)
