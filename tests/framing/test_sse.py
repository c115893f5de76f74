"""SSE decoding: the WHATWG line rules, fed three ways, and real provider streams."""

from __future__ import annotations

import dataclasses
import itertools
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.framing import SseComment, SseDecoder, SseEvent, decode_stream
from tests.helpers import CORPUS, feed_three_ways

CASSETTES = CORPUS / "pydantic__pydantic-ai/tests/models/cassettes"


def no_ts(e: Any) -> Any:
    return dataclasses.replace(e, ts=0.0) if isinstance(e, SseEvent | SseComment) else e


def sse(data: bytes, *, trailing: bytes = b"") -> list[Any]:
    return [no_ts(e) for e in feed_three_ways(SseDecoder, data, trailing=trailing, normalize=no_ts)]


def ev(
    data: str,
    offset: int,
    *,
    event: str = "message",
    id: str | None = None,  # noqa: A002
    retry: int | None = None,
    complete: bool = True,
) -> SseEvent:
    return SseEvent(
        event=event, data=data, id=id, retry=retry, ts=0.0, offset=offset, complete=complete
    )


def events_only(out: list[Any]) -> list[SseEvent]:
    return [e for e in out if isinstance(e, SseEvent)]


def codes(out: list[Any]) -> list[str]:
    return [e.code for e in out if isinstance(e, Diagnostic)]


# -- line ends --------------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_line_ends(eol: bytes) -> None:
    body = b"data: a" + eol + eol + b"data: b" + eol + b"data: c" + eol + eol
    second = len(b"data: a") + 2 * len(eol)
    assert sse(body, trailing=b"data: x" + eol + eol) == [ev("a", 0), ev("b\nc", second)]


def test_mixed_line_ends() -> None:
    body = b"data: 1\r\n\ndata: 2\r\rdata: 3\n\r\ndata: 4\r\n\r\n"
    assert [e.data for e in events_only(sse(body))] == ["1", "2", "3", "4"]
    assert [e.offset for e in events_only(sse(body))] == [0, 10, 19, 29]


def test_crlf_split_across_feeds_is_one_line_end() -> None:
    d = SseDecoder()
    out = [
        *d.feed(b"data: a\r", 1.0),
        *d.feed(b"\n", 2.0),
        *d.feed(b"\r", 3.0),
        *d.feed(b"\n", 4.0),
    ]
    out += d.feed(b"data: b\r\n\r\n", 5.0)
    out += d.close(6.0)
    assert out == [
        SseEvent(event="message", data="a", id=None, retry=None, ts=3.0, offset=0),
        SseEvent(event="message", data="b", id=None, retry=None, ts=5.0, offset=11),
    ]


def test_cr_then_cr_is_two_line_ends() -> None:
    d = SseDecoder()
    out = [*d.feed(b"data: a\r", 1.0), *d.feed(b"\r", 2.0)]
    assert [e.data for e in events_only(out)] == ["a"]


def test_other_unicode_line_breaks_are_not_line_ends() -> None:
    body = "data: a\u2028b\x0bc\x0cd\x1ce\u0085f\n\n".encode()
    assert [e.data for e in events_only(sse(body))] == ["a\u2028b\x0bc\x0cd\x1ce\u0085f"]


# -- fields -----------------------------------------------------------------------------------


def test_bom_stripped_once() -> None:
    bom = b"\xef\xbb\xbf"
    body = bom + b"data: a\n\n" + bom + b"data: b\n\n"
    out = sse(body)
    assert out[0] == ev("a", 3)
    # The second BOM is not at the start of the stream: it is part of a field name.
    assert len(events_only(out)) == 1


def test_only_bom_and_partial_bom() -> None:
    assert sse(b"\xef\xbb\xbf") == []
    assert codes(sse(b"\xef\xbb")) == ["sse.truncated"]


def test_comments() -> None:
    body = b": OPENROUTER PROCESSING\n\n:no space\n:  two spaces\ndata: x\n\n"
    out = sse(body)
    assert out == [
        SseComment(text="OPENROUTER PROCESSING", ts=0.0, offset=0),
        SseComment(text="no space", ts=0.0, offset=25),
        SseComment(text=" two spaces", ts=0.0, offset=35),
        ev("x", 49),
    ]


def test_comment_inside_event_does_not_split_it() -> None:
    body = b"data: a\n: keep-alive\ndata: b\n\n"
    assert events_only(sse(body)) == [ev("a\nb", 0)]


def test_field_value_spacing() -> None:
    body = b"data:nospace\n\ndata:  two\n\ndata\n\ndata:\n\ndata: trailing   \n\n"
    assert [e.data for e in events_only(sse(body))] == ["nospace", " two", "", "", "trailing   "]


def test_anthropic_trailing_spaces_kept() -> None:
    body = b'event: message_start\ndata: {"type":"message_start"}          \n\n'
    (event,) = events_only(sse(body))
    assert event.event == "message_start"
    assert event.data == '{"type":"message_start"}          '


def test_event_names_reset_after_dispatch() -> None:
    body = b"event: a\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\n"
    assert [(e.event, e.data) for e in events_only(sse(body))] == [
        ("a", "1"),
        ("message", "2"),
        ("message", "3"),
    ]


def test_id_persists_and_nul_is_ignored() -> None:
    body = (
        b"id: 1\ndata: a\n\ndata: b\n\nid: 2\x00x\ndata: c\n\nid\ndata: d\n\nid: 9\n\ndata: e\n\n"
    )
    assert [(e.data, e.id) for e in events_only(sse(body))] == [
        ("a", "1"),
        ("b", "1"),
        ("c", "1"),
        ("d", ""),
        ("e", "9"),
    ]


def test_retry() -> None:
    body = (
        b"retry: 3000\ndata: a\n\nretry: 12a\ndata: b\n\nretry:\ndata: c\n\nretry: -1\ndata: d\n\n"
    )
    assert [(e.data, e.retry) for e in events_only(sse(body))] == [
        ("a", 3000),
        ("b", None),
        ("c", None),
        ("d", None),
    ]


def test_block_without_data_is_not_dispatched() -> None:
    body = b"event: ping\n\nid: 4\nretry: 10\n\n\n\n\ndata: x\n\n"
    assert events_only(sse(body)) == [ev("x", 33, id="4")]


def test_unknown_fields_ignored_and_counted() -> None:
    d = SseDecoder()
    out = d.feed(b"foo: bar\nData: no\ndata: yes\nx\n\n", 1.0)
    assert [e.data for e in events_only(out)] == ["yes"]
    assert d.unknown_fields == 3


def test_event_offset_is_its_first_field_line() -> None:
    body = b": c\n\n\nevent: e\ndata: d\n\n"
    assert events_only(sse(body)) == [ev("d", 6, event="e")]


def test_events_stamped_with_completing_feed() -> None:
    d = SseDecoder()
    assert d.feed(b"data: a", 1.0) == []
    assert d.feed(b"\n", 2.0) == []
    assert d.feed(b"\ndata: b\n", 3.0) == [
        SseEvent(event="message", data="a", id=None, retry=None, ts=3.0, offset=0)
    ]
    assert d.close(4.0)[1] == SseEvent(
        event="message", data="b", id=None, retry=None, ts=4.0, offset=9, complete=False
    )


# -- truncation and bad bytes -----------------------------------------------------------------


def test_truncated_last_event_reported() -> None:
    out = sse(b"data: a\n\ndata: b\ndata: c", trailing=b"d\n\n")
    assert out[0] == ev("a", 0)
    assert out[2] == ev("b\nc", 9, complete=False)
    assert codes(out) == ["sse.truncated"]
    assert out[1].location == "byte 9"


def test_truncated_without_data() -> None:
    out = sse(b"data: a\n\nevent: x\n")
    assert events_only(out) == [ev("a", 0)]
    assert codes(out) == ["sse.truncated"]
    assert out[1].location == "byte 9"
    assert codes(sse(b"data: a\n\n: partial comm")) == ["sse.truncated"]


def test_invalid_utf8_replaced_and_reported() -> None:
    out = sse(b"data: caf\xe9\n\nevent: \xff\ndata: ok\n\n: \xfe\n")
    assert [e.data for e in events_only(out)] == ["caf\ufffd", "ok"]
    assert events_only(out)[1].event == "\ufffd"
    assert codes(out) == ["sse.invalid_utf8", "sse.invalid_utf8", "sse.invalid_utf8"]


def test_utf8_split_across_feeds() -> None:
    body = "data: héllo 😀\n\n".encode()
    assert [e.data for e in events_only(sse(body))] == ["héllo 😀"]
    assert codes(sse(body)) == []


def test_decode_stream_uses_piece_times() -> None:
    out = decode_stream([(1.0, b"data: a\n"), (2.0, b"\ndata: b\n\n"), (3.0, b"")], "sse")
    assert [(e.data, e.ts) for e in events_only(out)] == [("a", 2.0), ("b", 2.0)]


# -- real streams -----------------------------------------------------------------------------


@cache
def corpus_sse_bodies() -> list[tuple[str, bytes]]:
    bodies = []
    for path in sorted(CASSETTES.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "text/event-stream" not in text:
            continue
        doc = yaml.load(text, Loader=yaml.CSafeLoader)
        for i, interaction in enumerate(doc.get("interactions") or []):
            response = interaction.get("response") or {}
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            body = (response.get("body") or {}).get("string")
            ctype = str((headers.get("content-type") or [""])[0])
            if "event-stream" in ctype and isinstance(body, str) and body:
                bodies.append((f"{Path(path).relative_to(CASSETTES)}#{i}", body.encode()))
    return bodies


def test_corpus_has_sse_bodies() -> None:
    bodies = corpus_sse_bodies()
    assert len(bodies) > 50
    assert any(b"\r\n" in b for _, b in bodies)  # Gemini's CRLF
    assert any(b.startswith(b": OPENROUTER") for _, b in bodies)


def test_corpus_event_counts_match_an_independent_count() -> None:
    for name, body in corpus_sse_bodies():
        out = decode_stream([(1.0, body)], "sse")
        events = events_only(out)
        assert codes(out) == [], name
        assert all(e.complete for e in events), name
        # Independent oracle: the data: lines of the body, split with a regex.
        lines = re.split(rb"\r\n|\r|\n", body)
        data_lines = [
            ln.removeprefix(b"data:").removeprefix(b" ") for ln in lines if ln.startswith(b"data:")
        ]
        assert sum(e.data.count("\n") + 1 for e in events) == len(data_lines), name
        assert "\n".join(e.data for e in events).encode() == b"\n".join(data_lines), name
        comments = [ln for ln in lines if ln.startswith(b":")]
        assert sum(isinstance(e, SseComment) for e in out) == len(comments), name


def test_corpus_openrouter_comments() -> None:
    path = "test_openrouter/test_openrouter_advisor_tool_stream.yaml#0"
    body = dict(corpus_sse_bodies())[path]
    out = sse(body)
    assert out[0] == SseComment(text="OPENROUTER PROCESSING", ts=0.0, offset=0)
    assert events_only(out)[-1].data == "[DONE]"


def test_corpus_three_ways() -> None:
    picked = [
        (name, body)
        for name, body in corpus_sse_bodies()
        if any(k in name for k in ("test_google/", "openrouter", "anthropic_advisor", "groq"))
    ][:8]
    assert len(picked) >= 4
    for _, body in picked:
        out = sse(body, trailing=b"data: more\n\n")
        assert events_only(out)


# -- fuzz -------------------------------------------------------------------------------------

SSE_ALPHABET = st.sampled_from(
    [
        b"data:",
        b"data: ",
        b"event: ",
        b"id: ",
        b"retry: ",
        b":",
        b"\r",
        b"\n",
        b"\r\n",
        b"x",
        b"{}",
        b"\xef\xbb\xbf",
        b"\xff",
        b"\x00",
        b"9",
        b" ",
    ]
)


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=10)))
    return [data[a:b] for a, b in itertools.pairwise([0, *cuts, len(data)])]


@settings(max_examples=400, deadline=None)
@given(
    st.data(), st.one_of(st.binary(max_size=200), st.lists(SSE_ALPHABET, max_size=60).map(b"".join))
)
def test_fuzz_only_events_and_diagnostics(data: st.DataObject, body: bytes) -> None:
    d = SseDecoder()
    out: list[Any] = []
    for chunk in data.draw(chunked(body)):
        out += d.feed(chunk, 1.0)
    out += d.close(2.0)
    assert all(isinstance(e, SseEvent | SseComment | Diagnostic) for e in out)
    whole = SseDecoder()
    expected = [*whole.feed(body, 1.0), *whole.close(2.0)]
    assert [no_ts(e) for e in out] == [no_ts(e) for e in expected]
