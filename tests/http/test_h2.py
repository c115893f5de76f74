"""The passive HTTP/2 decoder: hand-built conversations fed whole, byte by byte and with
trailing bytes; the h2c loopback captures against their truth.json; the fuzz invariant."""

from __future__ import annotations

import gzip
import json
import random
import struct
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hpack import Decoder, Encoder, HPACKError
from hpack.hpack import encode_integer
from hpack.huffman import HuffmanEncoder
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    PriorityFrame,
    PushPromiseFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.framing import decode_stream
from agentshark.framing.events import SseEvent
from agentshark.http.content import decode_body
from agentshark.http.events import (
    BodyData,
    BodyGap,
    ConnectionGoAway,
    HttpEvent,
    InformationalResponse,
    MessageEnded,
    ParseError,
    ProtocolSwitched,
    PushPromised,
    RequestHeaders,
    ResponseHeaders,
    StreamReset,
    UnknownFrame,
)
from agentshark.http.exchange import ExchangeAssembler
from agentshark.http.h2 import PREFACE, H2Connection, error_name
from agentshark.http.h2_hpack import BlockDecoder
from agentshark.model import Exchange, Headers, header
from agentshark.net.events import (
    ConnectionClosed,
    StreamData,
    StreamEnded,
    StreamGap,
    format_endpoint,
)
from agentshark.net.packet import PacketDecoder
from agentshark.net.tcp import TcpReassembler
from agentshark.sources.pcap import read_pcap
from agentshark.sources.pcapng import read_pcapng
from agentshark.sources.records import Packet
from tests.helpers import CAPTURES, CORPUS
from tests.http.transcripts import Transcript, feed, merged

E = TypeVar("E")

# -- building conversations -----------------------------------------------------------------


def ser(frame: Frame) -> bytes:
    return bytes(frame.serialize())


def headers(
    sid: int,
    block: bytes,
    *flags: str,
    pad: int = 0,
    priority: bool = False,
    end_headers: bool = True,
) -> bytes:
    f = HeadersFrame(sid, data=block, flags=[*flags, *(["END_HEADERS"] if end_headers else [])])
    if pad:
        f.flags.add("PADDED")
        f.pad_length = pad
    if priority:
        f.flags.add("PRIORITY")
        f.depends_on, f.stream_weight, f.exclusive = 0, 200, True
    return ser(f)


def data(sid: int, payload: bytes, *flags: str, pad: int = 0) -> bytes:
    f = DataFrame(sid, data=payload, flags=flags)
    if pad:
        f.flags.add("PADDED")
        f.pad_length = pad
    return ser(f)


def continuation(sid: int, block: bytes, *flags: str) -> bytes:
    return ser(ContinuationFrame(sid, data=block, flags=flags))


def settings_frame(values: dict[int, int] | None = None, *, ack: bool = False) -> bytes:
    return ser(SettingsFrame(0, settings=values or {}, flags=["ACK"] if ack else []))


def raw_frame(ftype: int, flags: int, sid: int, payload: bytes) -> bytes:
    n = len(payload)
    return struct.pack(">HBBBL", n >> 8, n & 0xFF, ftype, flags, sid) + payload


GET = [
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "api.example"),
    (":path", "/v1/models"),
    ("accept", "application/json"),
    ("user-agent", "agent/1.0"),
]
POST = [
    (":method", "POST"),
    (":scheme", "https"),
    (":authority", "api.example"),
    (":path", "/v1/chat/completions"),
    ("content-type", "application/json"),
    ("authorization", "Bearer test-not-a-secret"),
]
OK = [(":status", "200"), ("content-type", "application/json"), ("server", "unit")]
SSE = [(":status", "200"), ("content-type", "text/event-stream")]


class Peer:
    """One side's HPACK encoder: header blocks for the frames above."""

    def __init__(self) -> None:
        self.encoder = Encoder()

    def block(self, fields: Headers) -> bytes:
        return bytes(self.encoder.encode(fields))


def conversation() -> Transcript:
    """GET, then POST with a body in two DATA frames, answered with bodies."""
    c, s = Peer(), Peer()
    return [
        (0, PREFACE + settings_frame({1: 4096, 4: 65535})),
        (1, settings_frame({3: 100, 5: 16384}) + settings_frame(ack=True)),
        (0, settings_frame(ack=True) + headers(1, c.block(GET), "END_STREAM")),
        (1, headers(1, s.block(OK)) + data(1, b'{"data":[]}', "END_STREAM")),
        (0, headers(3, c.block(POST)) + data(3, b'{"model":') + data(3, b'"m"}', "END_STREAM")),
        (0, ser(WindowUpdateFrame(0, window_increment=1000)) + ser(PingFrame(0, b"12345678"))),
        (1, headers(3, s.block(OK)) + data(3, b'{"id":1}') + data(3, b"", "END_STREAM")),
    ]


# -- feeding --------------------------------------------------------------------------------


def run(
    transcript: Transcript,
    *,
    step: int = 0,
    ends: bool = True,
    expect_preface: bool = True,
    upgraded: bool = False,
) -> list[HttpEvent]:
    conn = H2Connection(expect_preface=expect_preface, upgraded=upgraded)
    return feed(conn, transcript, step=step, ends=ends)


def three_ways(transcript: Transcript, **options: bool) -> list[HttpEvent]:
    whole = merged(run(transcript, **options))
    assert merged(run(transcript, step=1, **options)) == whole
    assert merged(run(transcript, step=7, **options)) == whole
    first = merged(run(transcript, ends=False, **options))
    trailing = [*transcript, (0, b"\x00\x00\x05\x01"), (1, b"\x00\x00\x10\x00\x00")]
    assert merged(run(trailing, ends=False, **options))[: len(first)] == first
    return whole


def kinds(events: list[HttpEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


def of(kind: type[E], events: list[HttpEvent]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def body(events: list[HttpEvent], stream: int, response: bool) -> bytes:
    return b"".join(
        e.data
        for e in events
        if isinstance(e, BodyData) and (e.stream, e.response) == (stream, response)
    )


# -- frames and messages --------------------------------------------------------------------


def test_get_and_post_with_bodies() -> None:
    events = three_ways(conversation())
    assert kinds(events) == [
        "RequestHeaders",
        "MessageEnded",
        "ResponseHeaders",
        "BodyData",
        "MessageEnded",
        "RequestHeaders",
        "BodyData",
        "MessageEnded",
        "ResponseHeaders",
        "BodyData",
        "MessageEnded",
    ]
    get, post = of(RequestHeaders, events)
    assert (get.stream, get.method, get.target, get.version) == (1, "GET", "/v1/models", "HTTP/2")
    assert get.headers == GET  # every field, pseudo-headers included, in order
    assert (post.stream, post.method, post.target) == (3, "POST", "/v1/chat/completions")
    resp = of(ResponseHeaders, events)[0]
    assert (resp.status, resp.reason, resp.version, resp.headers) == (200, "", "HTTP/2", OK)
    assert body(events, 3, False) == b'{"model":"m"}'
    assert body(events, 3, True) == b'{"id":1}'
    assert all(e.complete and not e.trailers for e in of(MessageEnded, events))


def test_each_data_frame_keeps_its_feed_time() -> None:
    c, s = Peer(), Peer()
    conn = H2Connection()
    conn.feed(0, PREFACE + headers(1, c.block(GET), "END_STREAM"), 1.0)
    out = conn.feed(1, headers(1, s.block(SSE)) + data(1, b"data: 1\n\n"), 2.0)
    out += conn.feed(1, data(1, b"data: 2\n\n") + data(1, b"data: 3\n\n"), 3.0)
    frame = data(1, b"data: 4\n\n", "END_STREAM")
    out += conn.feed(1, frame[:12], 4.0) + conn.feed(1, frame[12:], 5.0)
    pieces = [(e.ts, e.data) for e in of(BodyData, out)]
    assert pieces == [
        (2.0, b"data: 1\n\n"),
        (3.0, b"data: 2\n\n"),
        (3.0, b"data: 3\n\n"),
        (4.0, b"dat"),  # a frame spread over two feeds: each part with its own time
        (5.0, b"a: 4\n\n"),
    ]
    (end,) = [e for e in out if isinstance(e, MessageEnded) and e.response]
    assert end.ts == 5.0 and end.complete
    assert of(ResponseHeaders, out)[0].ts == 2.0


def test_concurrent_streams_interleave() -> None:
    c, s = Peer(), Peer()
    gzip_get = [*GET[:3], (":path", "/compressed/gzip")]
    br_get = [*GET[:3], (":path", "/compressed/br")]
    transcript = [
        (0, PREFACE + settings_frame()),
        # two HEADERS in one feed, the way httpx sends concurrent requests
        (
            0,
            headers(1, c.block(gzip_get), "END_STREAM") + headers(3, c.block(br_get), "END_STREAM"),
        ),
        (
            1,
            settings_frame()
            + headers(3, s.block(OK))
            + headers(1, s.block(OK))
            + data(1, b"one-a")
            + data(3, b"three-a")
            + data(1, b"one-b", "END_STREAM")
            + data(3, b"three-b", "END_STREAM"),
        ),
    ]
    events = three_ways(transcript)
    assert [e.target for e in of(RequestHeaders, events)] == ["/compressed/gzip", "/compressed/br"]
    assert [e.stream for e in of(ResponseHeaders, events)] == [3, 1]
    assert body(events, 1, True) == b"one-aone-b"
    assert body(events, 3, True) == b"three-athree-b"
    ends = [e.stream for e in of(MessageEnded, events) if e.response]
    assert ends == [1, 3]


def test_continuation_frames_carry_one_header_block() -> None:
    c, s = Peer(), Peer()
    big = [*GET, *((f"x-extra-{i}", "v" * 40) for i in range(20))]
    block = c.block(big)
    parts = [block[:50], block[50:120], block[120:]]
    transcript = [
        (0, PREFACE),
        (
            0,
            headers(1, parts[0], "END_STREAM", end_headers=False)
            + continuation(1, parts[1])
            + continuation(1, parts[2], "END_HEADERS"),
        ),
        (1, headers(1, s.block(OK), "END_STREAM")),
    ]
    events = three_ways(transcript)
    assert kinds(events) == ["RequestHeaders", "MessageEnded", "ResponseHeaders", "MessageEnded"]
    assert of(RequestHeaders, events)[0].headers == big
    assert not of(ParseError, events)


def test_interrupted_header_block_is_reported() -> None:
    c = Peer()
    block = c.block(GET)
    transcript = [
        (0, PREFACE + headers(1, block[:10], "END_STREAM", end_headers=False)),
        (0, data(1, b"x")),  # not the CONTINUATION the block needs (RFC 9113 §6.10)
        (0, continuation(5, b"\x82", "END_HEADERS")),
    ]
    events = three_ways(transcript)
    errors = [e.message for e in of(ParseError, events)]
    assert any("interrupted by a DATA frame" in m for m in errors)
    assert any("CONTINUATION on stream 5 without a header block" in m for m in errors)


def test_padding_and_priority_are_removed() -> None:
    c, s = Peer(), Peer()
    transcript = [
        (0, PREFACE + headers(1, c.block(POST), pad=7, priority=True)),
        (0, data(1, b"padded body", "END_STREAM", pad=20)),
        (0, ser(PriorityFrame(1, depends_on=0, stream_weight=10))),
        (1, headers(1, s.block(OK), pad=1) + data(1, b"", "END_STREAM", pad=3)),
    ]
    events = three_ways(transcript)
    assert of(RequestHeaders, events)[0].headers == POST
    assert body(events, 1, False) == b"padded body"
    assert body(events, 1, True) == b""
    assert not of(ParseError, events)
    assert all(e.complete for e in of(MessageEnded, events))


def test_bad_padding_is_an_error_not_a_crash() -> None:
    c = Peer()
    bad = raw_frame(0, 0x08, 1, b"\x10abc")  # 16 bytes of padding in a 4-byte frame
    transcript = [(0, PREFACE + headers(1, c.block(POST)) + bad + data(1, b"ok", "END_STREAM"))]
    events = three_ways(transcript)
    assert any("padding" in e.message for e in of(ParseError, events))
    assert body(events, 1, False) == b"ok"


def test_trailers_end_the_message() -> None:
    c, s = Peer(), Peer()
    grpc_req = [*POST[:4], ("content-type", "application/grpc"), ("te", "trailers")]
    transcript = [
        (0, PREFACE + headers(1, c.block(grpc_req)) + data(1, b"\x00\x00\x00\x00\x00")),
        (0, headers(1, c.block([("x-client-trailer", "1")]), "END_STREAM")),
        (1, headers(1, s.block(OK)) + data(1, b"\x00\x00\x00\x00\x02hi")),
        (1, headers(1, s.block([("grpc-status", "0"), ("grpc-message", "")]), "END_STREAM")),
    ]
    events = three_ways(transcript)
    req_end, resp_end = of(MessageEnded, events)
    assert req_end.trailers == [("x-client-trailer", "1")] and req_end.complete
    assert resp_end.trailers == [("grpc-status", "0"), ("grpc-message", "")]
    assert resp_end.complete
    assert len(of(ResponseHeaders, events)) == 1


def test_informational_responses() -> None:
    c, s = Peer(), Peer()
    upload = [*POST, ("expect", "100-continue")]
    transcript = [
        (0, PREFACE + headers(1, c.block(upload))),
        (1, headers(1, s.block([(":status", "100")]))),
        (0, data(1, b"payload", "END_STREAM")),
        (1, headers(1, s.block([(":status", "103"), ("link", "</a>; rel=preload")]))),
        (1, headers(1, s.block(OK), "END_STREAM")),
    ]
    events = three_ways(transcript)
    interim = of(InformationalResponse, events)
    assert [(e.stream, e.status, e.reason) for e in interim] == [(1, 100, ""), (1, 103, "")]
    assert of(ResponseHeaders, events)[0].status == 200


def test_rst_stream_ends_the_exchange_and_later_frames_are_ignored() -> None:
    c, s = Peer(), Peer()
    transcript = [
        (0, PREFACE + headers(1, c.block(GET), "END_STREAM")),
        (1, headers(1, s.block(SSE)) + data(1, b"data: 1\n\n")),
        (0, ser(RstStreamFrame(1, error_code=8))),
        (1, data(1, b"data: 2\n\n")),  # in flight when the reset was sent: ignored (§5.1)
        (0, headers(3, c.block(GET), "END_STREAM")),
        (1, ser(RstStreamFrame(3, error_code=0xABC))),
    ]
    events = three_ways(transcript)
    resets = of(StreamReset, events)
    assert [(r.stream, r.response, r.error_code, r.error_name) for r in resets] == [
        (1, False, 8, "CANCEL"),
        (3, True, 0xABC, "0xabc"),
    ]
    assert body(events, 1, True) == b"data: 1\n\n"
    assert not of(ParseError, events)
    assert not [e for e in of(MessageEnded, events) if e.response]  # reset, not ended
    assert error_name(0) == "NO_ERROR" and error_name(13) == "HTTP_1_1_REQUIRED"


def test_goaway() -> None:
    goaway = ser(GoAwayFrame(0, last_stream_id=7, error_code=11, additional_data=b"calm down"))
    events = three_ways([(0, PREFACE), (1, settings_frame() + goaway)])
    (g,) = of(ConnectionGoAway, events)
    assert (g.response, g.last_stream, g.error_code, g.error_name, g.debug_data) == (
        True,
        7,
        11,
        "ENHANCE_YOUR_CALM",
        b"calm down",
    )


def test_push_promise_uses_the_servers_decoder() -> None:
    c, s = Peer(), Peer()
    pushed = [(":method", "GET"), (":scheme", "https"), (":authority", "api.example")]
    pushed.append((":path", "/style.css"))
    promise = PushPromiseFrame(1, promised_stream_id=2, data=s.block(pushed), flags=["END_HEADERS"])
    transcript = [
        (0, PREFACE + headers(1, c.block(GET), "END_STREAM")),
        (1, ser(promise)),
        # the server's encoder indexed the promise's fields: these blocks depend on that
        (1, headers(1, s.block(OK)) + data(1, b"<html>", "END_STREAM")),
        (1, headers(2, s.block([(":status", "200"), ("content-type", "text/css")]))),
        (1, data(2, b"body{}", "END_STREAM")),
    ]
    events = three_ways(transcript)
    (p,) = of(PushPromised, events)
    assert (p.stream, p.promised_stream, p.headers) == (1, 2, pushed)
    assert [e.stream for e in of(ResponseHeaders, events)] == [1, 2]
    assert body(events, 2, True) == b"body{}"
    assert not of(ParseError, events)
    exchanges = assemble(events)
    css = next(e for e in exchanges if e.request is not None and e.request.target == "/style.css")
    assert css.response is not None and css.response.body.data() == b"body{}"


def test_unknown_frame_type_is_kept_raw() -> None:
    c = Peer()
    origin = raw_frame(0x0C, 0x00, 0, b"\x00\x13https://api.example")  # ORIGIN (RFC 8336)
    odd = raw_frame(0xFA, 0x5A, 1, b"opaque")
    transcript = [
        (0, PREFACE + origin + headers(1, c.block(GET)) + odd + data(1, b"", "END_STREAM"))
    ]
    events = three_ways(transcript)
    u1, u2 = of(UnknownFrame, events)
    assert (u1.frame_type, u1.stream, u1.payload) == (0x0C, 0, b"\x00\x13https://api.example")
    assert (u2.frame_type, u2.stream, u2.flags, u2.payload) == (0xFA, 1, 0x5A, b"opaque")
    assert of(MessageEnded, events)[0].complete


def test_header_table_size_setting_and_size_update() -> None:
    c, s = Peer(), Peer()
    transcript = [
        (0, PREFACE + settings_frame({1: 256})),  # the client's decoder holds 256 bytes
        (1, settings_frame() + settings_frame(ack=True)),  # ... from here on
        (0, settings_frame(ack=True) + headers(1, c.block(GET), "END_STREAM")),
    ]
    s.encoder.header_table_size = 256  # the next block starts with a size update
    long_ok = [*OK, ("x-long", "y" * 300)]
    transcript.append((1, headers(1, s.block(long_ok), "END_STREAM")))
    transcript.append((0, headers(3, c.block(GET), "END_STREAM")))
    transcript.append((1, headers(3, s.block(long_ok), "END_STREAM")))
    events = three_ways(transcript)
    assert [e.headers for e in of(ResponseHeaders, events)] == [long_ok, long_ok]
    assert not of(ParseError, events)

    # A server that ignores the limit breaks an HPACK rule; its fields still decode.
    rude = Peer()
    bad = [*transcript[:3], (1, headers(1, rude.block(long_ok), "END_STREAM"))]
    events = three_ways(bad)
    assert of(ResponseHeaders, events)[0].headers == long_ok
    (err,) = of(ParseError, events)
    assert err.stream == 1 and "breaks an HPACK rule" in err.message
    assert "SETTINGS_HEADER_TABLE_SIZE" in err.message


def test_max_frame_size_setting() -> None:
    c, s = Peer(), Peer()
    big = data(1, b"z" * 20000, "END_STREAM")  # larger than the default 16384
    head = [(0, PREFACE + headers(1, c.block(GET), "END_STREAM"))]
    # the client never allowed it: these bytes cannot be a frame header
    events = three_ways([*head, (1, headers(1, s.block(OK)) + big)])
    err = of(ParseError, events)[0]
    assert "exceeds the 16384 bytes SETTINGS_MAX_FRAME_SIZE allows" in err.message
    assert not of(MessageEnded, events)[-1].complete
    # allowed by the client's SETTINGS, acknowledged by the server
    allowed = [
        (0, PREFACE + settings_frame({5: 65536}) + headers(1, Peer().block(GET), "END_STREAM")),
        (1, settings_frame() + settings_frame(ack=True)),
        (1, headers(1, Peer().block(OK)) + big),
    ]
    events = three_ways(allowed)
    assert not of(ParseError, events)
    assert body(events, 1, True) == b"z" * 20000


def test_trailers_whose_head_came_before_the_capture() -> None:
    c, s = Peer(), Peer()
    stream_call = [*POST[:4], ("content-type", "application/grpc")]
    transcript = [
        (0, PREFACE + headers(1, c.block(stream_call)) + data(1, b"\0\0\0\0\0", "END_STREAM")),
        (1, headers(1, s.block(OK)) + data(1, b"\0\0\0\0\x01a")),
    ]
    later = [
        (1, data(1, b"\0\0\0\0\x01b")),
        (1, headers(1, s.block([("grpc-status", "0")]), "END_STREAM")),
    ]
    run(transcript)  # the blocks the capture below misses
    events = three_ways(later, expect_preface=False)
    assert body(events, 1, True) == b"\0\0\0\0\x01b"
    (end,) = of(MessageEnded, events)
    assert end.response and not end.complete and end.trailers == [("grpc-status", "0")]
    assert not of(ResponseHeaders, events)


def test_extended_connect_switches_the_stream() -> None:
    c, s = Peer(), Peer()
    ws = [
        (":method", "CONNECT"),
        (":protocol", "websocket"),
        (":scheme", "https"),
        (":authority", "api.example"),
        (":path", "/v1/realtime"),
    ]
    tunnel = [(":method", "CONNECT"), (":authority", "db.internal:5432")]
    transcript = [
        (0, PREFACE + headers(1, c.block(ws)) + headers(3, c.block(tunnel))),
        (1, headers(1, s.block([(":status", "200")])) + data(1, b"\x81\x02hi")),
        (1, headers(3, s.block([(":status", "200")]))),
    ]
    events = three_ways(transcript)
    assert [e.target for e in of(RequestHeaders, events)] == ["/v1/realtime", "db.internal:5432"]
    assert [(e.stream, e.protocol) for e in of(ProtocolSwitched, events)] == [
        (1, "websocket"),
        (3, "tunnel"),
    ]
    assert body(events, 1, True) == b"\x81\x02hi"


def test_upgraded_connection_answers_stream_one() -> None:
    s = Peer()
    transcript = [
        (0, PREFACE + settings_frame()),
        (1, settings_frame() + headers(1, s.block(OK)) + data(1, b"{}", "END_STREAM")),
    ]
    events = three_ways(transcript, upgraded=True)
    assert kinds(events) == ["ResponseHeaders", "BodyData", "MessageEnded"]
    assert of(ResponseHeaders, events)[0].stream == 1


def test_not_a_preface_resyncs() -> None:
    c = Peer()
    transcript = [(0, b"GET / HTTP/1.1\r\n\r\n" + headers(1, c.block(GET), "END_STREAM"))]
    transcript.append((0, headers(3, c.block(GET), "END_STREAM")))
    transcript.append((0, headers(5, c.block(GET), "END_STREAM")))
    events = three_ways(transcript)
    first, skipped = of(ParseError, events)[:2]
    assert "did not start with the HTTP/2 preface" in first.message
    assert skipped.message == "skipped 18 bytes that are not HTTP/2 frames"
    assert [e.stream for e in of(RequestHeaders, events)] == [1, 3, 5]


# -- captures that start mid-connection, gaps, ends -------------------------------------------


def long_conversation() -> tuple[Transcript, Transcript]:
    """Four requests on one connection; returns (the first two, the last two)."""
    c, s = Peer(), Peer()
    first: Transcript = [(0, PREFACE + settings_frame()), (1, settings_frame())]
    later: Transcript = []
    for i, sid in enumerate((1, 3, 5, 7)):
        part = first if i < 2 else later
        fields = POST if i < 3 else [*POST[:3], (":path", "/v1/embeddings"), *POST[4:]]
        part.append((0, headers(sid, c.block(fields)) + data(sid, b"q%d" % i, "END_STREAM")))
        resp = [*OK, ("x-request-id", f"req-{i}"), (f"x-new-{i}", "1")]
        part.append((1, headers(sid, s.block(resp)) + data(sid, b"a%d" % i, "END_STREAM")))
    return first, later


def test_midstream_start_keeps_what_decodes_and_every_body() -> None:
    _, later = long_conversation()
    events = three_ways(later, expect_preface=False)
    first, second = of(RequestHeaders, events)
    # :method POST and :scheme https are in the static table; the repeated fields were
    # indexed by blocks the capture did not see; a new :path is a literal.
    assert (first.stream, first.method, first.target) == (5, "POST", "?")
    assert first.headers == [(":method", "POST"), (":scheme", "https")]
    assert (second.stream, second.method, second.target) == (7, "POST", "/v1/embeddings")
    responses = of(ResponseHeaders, events)
    assert [r.status for r in responses] == [200, 200]
    # x-request-id's name was indexed before the capture (its value is lost with it), but
    # a field whose name is new is a literal and decodes
    assert responses[0].headers == [(":status", "200"), ("x-new-2", "1")]
    errors = [e for e in of(ParseError, events) if e.stream is not None]
    assert errors and all(
        e.message.startswith(f"header block of stream {e.stream} could not be decoded: ")
        for e in errors
    )
    assert [body(events, sid, resp) for sid in (5, 7) for resp in (False, True)] == [
        b"q2",
        b"a2",
        b"q3",
        b"a3",
    ]
    # a message whose head lost fields never ends complete (its values differ from the
    # clean run's); one whose fields all decoded does
    lossy = {(e.stream, e.response) for e in errors}
    ended = {(e.stream, e.response): e.complete for e in of(MessageEnded, events)}
    assert lossy and ended == {key: key not in lossy for key in ended}


def test_midstream_start_inside_a_frame_resyncs() -> None:
    _, later = long_conversation()
    cut = [(d, chunk[5:] if i < 2 else chunk) for i, (d, chunk) in enumerate(later)]
    events = three_ways(cut, expect_preface=False)
    skips = [e for e in of(ParseError, events) if e.message.startswith("skipped")]
    assert skips and all(e.offset == 0 for e in skips)
    # stream 5 lost its head in both directions; its bodies are still reported
    assert body(events, 5, True) == b"a2"
    assert [r.stream for r in of(RequestHeaders, events)] == [7]
    assert any(
        "DATA on stream 5 before any request headers" in e.message for e in of(ParseError, events)
    )


def test_gap_inside_a_data_payload_is_a_body_gap() -> None:
    c, s = Peer(), Peer()
    conn = H2Connection()
    conn.feed(0, PREFACE + headers(1, c.block(GET), "END_STREAM"), 1.0)
    frame = data(1, b"0123456789", "END_STREAM", pad=4)
    events = conn.feed(1, headers(1, s.block(OK)) + frame[:13], 1.0)  # header, pad length, 3
    events += conn.gap(1, 4, 1.5)
    events += conn.feed(1, frame[17:], 2.0)
    assert body(events, 1, True) == b"012789"
    (gap,) = of(BodyGap, events)
    assert (gap.stream, gap.response, gap.size) == (1, True, 4)
    assert of(MessageEnded, events)[-1].complete  # framing ended; the assembler sees the hole
    # a gap that covers the rest of the payload and the padding ends the message too
    conn.feed(0, headers(3, c.block(GET), "END_STREAM"), 3.0)
    frame = data(3, b"0123456789", "END_STREAM", pad=4)
    events = conn.feed(1, headers(3, s.block(OK)) + frame[:12], 3.0)
    events += conn.gap(1, len(frame) - 12, 3.5)
    assert [e.stream for e in of(MessageEnded, events)] == [3]


def test_gap_in_a_frame_header_ends_open_messages_and_resyncs() -> None:
    c, s = Peer(), Peer()
    conn = H2Connection()
    out = conn.feed(0, PREFACE + headers(1, c.block(GET), "END_STREAM"), 1.0)
    out += conn.feed(0, headers(3, c.block(POST)) + data(3, b"partial"), 1.0)
    out += conn.feed(1, headers(1, s.block(SSE)) + data(1, b"data: 1\n\n"), 1.0)
    out += conn.gap(1, 30, 2.0)  # frame headers lost: stream 1's end may be in there
    next_frames = headers(3, s.block(OK)) + data(3, b"ok", "END_STREAM")
    out += conn.feed(1, b"tail" + next_frames + next_frames, 3.0)
    out += conn.end(1, 4.0, clean=True)
    out += conn.end(0, 4.0, clean=False)
    gap_error = next(e for e in of(ParseError, out) if "capture gap of 30 bytes" in e.message)
    assert gap_error.response and gap_error.offset > 0
    ended = [(e.stream, e.response, e.complete) for e in of(MessageEnded, out)]
    assert (1, True, False) in ended  # the SSE response ends incomplete at the gap
    assert (3, False, False) in ended  # the POST never ended: end() closes it
    assert any(
        e.message == "skipped 4 bytes that are not HTTP/2 frames" for e in of(ParseError, out)
    )


def test_end_closes_open_messages_and_reports_partial_frames() -> None:
    c, s = Peer(), Peer()
    conn = H2Connection()
    conn.feed(0, PREFACE + headers(1, c.block(GET), "END_STREAM"), 1.0)
    conn.feed(1, headers(1, s.block(SSE)) + data(1, b"data: 1\n\n")[:12], 1.0)
    out = conn.end(1, 2.0, clean=True)
    (end,) = of(MessageEnded, out)
    assert (end.stream, end.response, end.complete) == (1, True, False)
    assert body(out, 1, True) == b""
    conn = H2Connection()
    conn.feed(0, PREFACE + headers(1, Peer().block(GET))[:20], 1.0)
    (err,) = of(ParseError, conn.end(0, 2.0, clean=False))
    assert err.message == "the connection ended inside a frame (20 of 53 bytes captured)"
    conn = H2Connection()
    conn.feed(0, PREFACE + headers(1, Peer().block(GET), end_headers=False), 1.0)
    (err,) = of(ParseError, conn.end(0, 2.0, clean=False))
    assert (err.stream, err.message) == (
        1,
        "the connection ended inside the header block of stream 1",
    )


# -- the HPACK fallback ---------------------------------------------------------------------


def test_block_decoder_keeps_static_and_literal_fields() -> None:
    enc = Encoder()
    enc.encode(GET)  # indexes GET's fields: the observer never sees this block
    block = bytes(enc.encode([*GET, ("x-new", "fresh"), ("accept", "text/html")]))
    decoder = BlockDecoder(history_known=False)
    decoded = decoder.decode(block)
    assert not decoded.complete and decoded.error is not None
    assert decoded.headers == [
        (":method", "GET"),  # static table
        (":scheme", "https"),  # static table
        ("x-new", "fresh"),  # literal
        ("accept", "text/html"),  # static name, literal value
    ]
    assert "refer to dynamic table entries the capture did not show" in decoded.error
    # x-new was indexed by that block: the next block that uses it decodes it
    again = decoder.decode(bytes(enc.encode([(":method", "GET"), ("x-new", "fresh")])))
    assert again.complete and again.headers == [(":method", "GET"), ("x-new", "fresh")]


def test_block_decoder_on_a_broken_block_forgets_the_table() -> None:
    enc = Encoder()
    decoder = BlockDecoder()
    decoder.decode(bytes(enc.encode([("x-a", "1")])))
    broken = bytes(enc.encode([("x-b", "2"), ("x-c", "3")]))[:-2]
    decoded = decoder.decode(broken)
    assert (
        not decoded.complete
        and decoded.error is not None
        and "ends inside a field" in decoded.error
    )
    # x-a's entry may sit at another index now: it is unknown, never a wrong value
    after = decoder.decode(bytes(enc.encode([("x-a", "1")])))
    assert after.headers == [] and not after.complete


def test_non_utf8_values_decode_as_latin1() -> None:
    enc = Encoder()
    block = bytes(enc.encode([(b"x-bytes", b"caf\xe9")]))
    decoded = BlockDecoder().decode(block)
    assert decoded.headers == [("x-bytes", "café")] and decoded.error is None


field_names = st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12)
field_values = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30)
header_lists = st.lists(st.tuples(field_names, field_values), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(header_lists, min_size=1, max_size=8), st.integers(0, 7), st.booleans())
def test_block_decoder_never_invents_a_field(
    blocks: list[Headers], skip: int, huffman: bool
) -> None:
    """Blocks of one encoder, decoded from block ``skip`` on, as in a capture that started
    late. Every field that comes out is a field that went in, in order; with no block
    skipped, all of them do."""
    enc = Encoder()
    encoded = [bytes(enc.encode(b, huffman=huffman)) for b in blocks]
    decoder = BlockDecoder(history_known=skip == 0)
    for fields, block in list(zip(blocks, encoded, strict=True))[skip:]:
        decoded = decoder.decode(block)
        it = iter(fields)
        assert all(any(f == g for g in it) for f in decoded.headers)  # a subsequence
        if skip == 0:
            assert decoded.headers == fields and decoded.complete


def integer(value: int, prefix_bits: int, flags: int) -> bytes:
    """An RFC 7541 §5.1 integer with ``flags`` in the bits above its prefix."""
    encoded = encode_integer(value, prefix_bits)
    encoded[0] |= flags
    return bytes(encoded)


def string(raw: bytes, huffman: bool) -> bytes:
    if huffman:
        coded = bytes(HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH).encode(raw))
        return integer(len(coded), 7, 0x80) + coded
    return integer(len(raw), 7, 0) + raw


tokens = st.binary(min_size=1, max_size=10).map(lambda b: bytes(97 + x % 26 for x in b))
representations = st.one_of(
    st.integers(1, 70).map(lambda i: integer(i, 7, 0x80)),  # indexed, static or dynamic
    st.tuples(
        st.sampled_from([(6, 0x40), (4, 0x00), (4, 0x10)]),  # incremental, without, never
        st.integers(0, 70),
        tokens,
        tokens,
        st.booleans(),
    ).map(
        lambda r: (
            integer(r[1], r[0][0], r[0][1])
            + (string(r[2], r[4]) if r[1] == 0 else b"")
            + string(r[3], r[4])
        )
    ),
)
hpack_blocks = st.tuples(
    st.one_of(st.just(b""), st.integers(0, 4096).map(lambda n: integer(n, 5, 0x20))),
    st.lists(representations, max_size=8),
).map(lambda t: t[0] + b"".join(t[1]))


@settings(max_examples=300, deadline=None)
@given(st.lists(hpack_blocks, min_size=1, max_size=6))
def test_block_decoder_agrees_with_hpack(encoded: list[bytes]) -> None:
    """Blocks of every representation, decoded by hpack's ``Decoder`` (the oracle) and by
    ours: the same fields, as long as hpack can decode them at all."""
    oracle = Decoder()
    ours = BlockDecoder()
    for block in encoded:
        try:
            expected = [(str(n), str(v)) for n, v in oracle.decode(block)]
        except HPACKError:
            ours.decode(block)  # must not raise; the states part ways here
            return
        decoded = ours.decode(block)
        assert (decoded.headers, decoded.error, decoded.complete) == (expected, None, True)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.binary(max_size=64))
def test_block_decoder_takes_any_bytes(first: bytes, second: bytes) -> None:
    decoder = BlockDecoder()
    for block in (first, second):
        decoded = decoder.decode(block)
        assert decoded.complete or decoded.error


# -- real traffic ---------------------------------------------------------------------------


def capture_events(path: Path) -> Iterator[tuple[str, int | None, Any]]:
    """(connection id, direction, TCP event) of a pcap or pcapng file, in order."""
    decoder = PacketDecoder(source_name=str(path))
    tcp = TcpReassembler(source_name=str(path))
    with path.open("rb") as f:
        pcapng = f.read(4) == b"\x0a\x0d\x0d\x0a"
        f.seek(0)
        for item in read_pcapng(f, str(path)) if pcapng else read_pcap(f, str(path)):
            if isinstance(item, Packet):
                seg = decoder.decode(item)
                if seg is not None:
                    for ev in tcp.feed(seg):
                        yield ev.connection.id, getattr(ev, "direction", None), ev
    for ev in tcp.close():
        yield ev.connection.id, getattr(ev, "direction", None), ev


def h2_capture(path: Path) -> tuple[list[Exchange], list[HttpEvent]]:
    """The cleartext HTTP/2 connections of a capture (those whose client starts with the
    preface), decoded and assembled."""
    ids = count(1)
    tcp_events = list(capture_events(path))
    first: dict[str, bytes] = {}
    for cid, direction, ev in tcp_events:
        if isinstance(ev, StreamData) and direction == 0:
            first.setdefault(cid, ev.data)
    conns: dict[str, tuple[H2Connection, ExchangeAssembler] | None] = {}
    exchanges: list[Exchange] = []
    events: list[HttpEvent] = []
    for cid, direction, ev in tcp_events:
        if cid not in conns:
            if not first.get(cid, b"").startswith(PREFACE):
                conns[cid] = None
                continue
            assembler = ExchangeAssembler(
                source=0,
                connection=cid,
                transport="h2",
                scheme="http",
                server=format_endpoint(ev.connection.server),
                next_id=lambda: f"x{next(ids)}",
            )
            conns[cid] = (H2Connection(), assembler)
        found = conns.get(cid)
        if found is None:
            continue
        conn, assembler = found
        if isinstance(ev, ConnectionClosed):
            exchanges.extend(assembler.close())
            continue
        if direction is None:  # ConnectionOpened
            continue
        if isinstance(ev, StreamData):
            new = conn.feed(direction, ev.data, ev.ts)
        elif isinstance(ev, StreamGap):
            new = conn.gap(direction, ev.size, ev.ts)
        elif isinstance(ev, StreamEnded):
            new = conn.end(direction, ev.ts, clean=ev.reason == "fin")
        else:
            continue
        events.extend(new)
        exchanges.extend(assembler.handle(new))
    return exchanges, events


def truth(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((CAPTURES / name / "truth.json").read_text())
    return result


def assemble(events: list[HttpEvent]) -> list[Exchange]:
    ids = count(1)
    asm = ExchangeAssembler(
        source=0,
        connection="c1",
        transport="h2",
        scheme="https",
        server="api.example:443",
        next_id=lambda: f"x{next(ids)}",
    )
    return asm.handle(events) + asm.close()


def needs(name: str) -> pytest.MarkDecorator:
    path: Path = CAPTURES / name / "capture.pcap"
    return pytest.mark.skipif(not path.exists(), reason=f"{path} not available")


@needs("h2c_prior_knowledge")
def test_h2c_prior_knowledge_matches_truth() -> None:
    exchanges, events = h2_capture(CAPTURES / "h2c_prior_knowledge" / "capture.pcap")
    t = truth("h2c_prior_knowledge")
    assert not of(ParseError, events)
    assert len(exchanges) == t["request_count"] == 6
    by_stream = {e.stream: e for e in of(RequestHeaders, events)}
    for want in t["requests"]:
        head = by_stream[want["h2_stream_id"]]
        assert head.target == want["path"]
        (ex,) = [
            e
            for e in exchanges
            if e.request is not None
            and (e.request.target, e.request.started) == (head.target, head.ts)
        ]
        assert ex.complete and ex.transport == "h2"
        assert ex.request is not None and ex.response is not None
        assert ex.request.method == want["method"]
        assert ex.request.url == t["base_url"] + want["path"]
        assert ex.request.version == ex.response.version == "HTTP/2"
        assert ex.response.status == want["status"]
        encoding = header(ex.response.headers, "content-encoding")
        assert encoding == want["content_encoding"]
        assert header(ex.response.headers, "content-type") == want["content_type"]
        decoded = decode_body(ex.response.body, encoding)
        assert not decoded.diagnostics
        if want["decoded_body_bytes"] is not None:
            assert decoded.size == want["decoded_body_bytes"]
        if want["wire_content_length"] is not None:
            assert ex.response.body.size == int(want["wire_content_length"])
        if "sse_data_events" in want:
            sse = [
                e for e in decode_stream(ex.response.body.pieces, "sse") if isinstance(e, SseEvent)
            ]
            assert len(sse) == want["sse_data_events"]
            assert (sse[-1].data == "[DONE]") is want["done_marker"]
            assert len(ex.response.body.pieces) > 1  # one piece per DATA frame, each timed
            times = [ts for ts, _ in ex.response.body.pieces]
            assert times == sorted(times) and times[0] < times[-1]


@needs("grpc_h2c")
def test_grpc_h2c_matches_truth() -> None:
    exchanges, events = h2_capture(CAPTURES / "grpc_h2c" / "capture.pcap")
    t = truth("grpc_h2c")
    assert not of(ParseError, events)
    calls = t["calls"]
    exchanges.sort(key=lambda e: e.started or 0.0)
    assert len(exchanges) == len(calls) == 4
    for ex, call in zip(exchanges, calls, strict=True):
        assert ex.request is not None and ex.response is not None
        assert ex.request.headers[0] == (":path", call["method"])  # grpcio: :path first
        assert (ex.request.method, ex.request.target) == ("POST", call["method"])
        assert ex.response.status == 200 and ex.complete
        assert (header(ex.request.headers, "grpc-encoding") or None) == call.get("compression")
        status = header(ex.response.trailers, "grpc-status") or header(
            ex.response.headers, "grpc-status"
        )
        assert status == {"OK": "0", "NOT_FOUND": "5"}[call["code"]]
        for name, value in call.get("trailing_metadata", []):
            assert (name, value) in ex.response.trailers
        for name, value in call.get("initial_metadata", []):
            assert (name, value) in ex.response.headers
    _, compressed, not_found, stream = exchanges
    # trailers-only: one HEADERS frame with END_STREAM carries the status and no body
    assert not_found.response is not None and not_found.response.trailers == []
    assert header(not_found.response.headers, "grpc-message") == calls[2]["details"]
    assert not_found.response.body.size == 0
    assert compressed.request is not None and compressed.request.body.data()[0] == 1
    assert gzip.decompress(compressed.request.body.data()[5:]).count(b"compressed") == 40
    assert stream.response is not None
    messages = grpc_messages(stream.response.body.data())
    assert len(messages) == calls[3]["n_responses"] == 7
    assert b"HTTP/2" in messages[3]


def grpc_messages(raw: bytes) -> list[bytes]:
    """Split a gRPC body into its length-prefixed messages (flag, 4-byte length, bytes)."""
    out = []
    pos = 0
    while pos < len(raw):
        (length,) = struct.unpack_from(">L", raw, pos + 1)
        out.append(raw[pos + 5 : pos + 5 + length])
        pos += 5 + length
    assert pos == len(raw)
    return out


GRPC_GO = CORPUS / "PacktPublishing__gRPC-Go-for-Professionals" / "chapter1"


@pytest.mark.parametrize(
    ("name", "path", "requests", "responses"),
    [
        ("Unary", "/greet.GreetService/Greet", 1, 1),
        ("Server Streaming", "/greet.GreetService/GreetManyTimes", 1, 10),
        ("Client Streaming", "/greet.GreetService/LongGreet", 3, 1),
        ("Bidi Streaming", "/greet.GreetService/GreetEveryone", 3, 3),
    ],
)
def test_grpc_go_captures(name: str, path: str, requests: int, responses: int) -> None:
    """grpc-go 1.50 (another HPACK encoder, another frame writer): every call decodes,
    and its bodies split exactly into gRPC messages."""
    capture = GRPC_GO / f"{name}.pcapng"
    if not capture.exists():
        pytest.skip(f"{capture} not available")
    exchanges, events = h2_capture(capture)
    assert not of(ParseError, events)
    (ex,) = exchanges
    assert ex.complete and ex.request is not None and ex.response is not None
    assert (ex.request.method, ex.request.target) == ("POST", path)
    assert header(ex.request.headers, "user-agent") == "grpc-go/1.50.1"
    assert ex.response.trailers == [("grpc-status", "0"), ("grpc-message", "")]
    assert len(grpc_messages(ex.request.body.data())) == requests
    assert len(grpc_messages(ex.response.body.data())) == responses


def capture_transcript(name: str) -> Transcript:
    return [
        (d, ev.data)
        for _, d, ev in capture_events(CAPTURES / name / "capture.pcap")
        if isinstance(ev, StreamData) and d is not None
    ]


@needs("h2c_prior_knowledge")
def test_capture_three_ways_and_from_any_point() -> None:
    """The real capture: fed three ways; then cut at random points of each direction and
    decoded as a mid-connection capture, every field and body byte that comes out is one
    the full decode has."""
    transcript = capture_transcript("h2c_prior_knowledge")
    full = three_ways(transcript)
    fields = {(type(e).__name__, e.stream): e.headers for e in of(RequestHeaders, full)}
    fields |= {(type(e).__name__, e.stream): e.headers for e in of(ResponseHeaders, full)}
    total = [sum(len(c) for d, c in transcript if d == side) for side in (0, 1)]
    rnd = random.Random(7)
    for _ in range(40):
        cut = [rnd.randrange(total[0]), rnd.randrange(total[1])]
        seen = [0, 0]
        part: Transcript = []
        for d, chunk in transcript:
            start = seen[d]
            seen[d] += len(chunk)
            if seen[d] > cut[d]:
                part.append((d, chunk[max(0, cut[d] - start) :]))
        events = run(part, expect_preface=False)
        for e in events:
            if isinstance(e, RequestHeaders | ResponseHeaders):
                truth_fields = fields[(type(e).__name__, e.stream)]
                assert all(f in truth_fields for f in e.headers)
        for stream, response in {(e.stream, e.response) for e in of(BodyData, events)}:
            assert body(full, stream, response).endswith(body(events, stream, response))


# -- the fuzz invariant ---------------------------------------------------------------------

EVENT_TYPES = HttpEvent.__args__


def check_only_events(events: list[HttpEvent]) -> None:
    for ev in events:
        assert isinstance(ev, EVENT_TYPES)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.binary(max_size=200)), max_size=12),
    st.booleans(),
    st.booleans(),
    st.integers(0, 9),
)
def test_fuzz_any_bytes_only_events(
    transcript: Transcript, expect_preface: bool, upgraded: bool, step: int
) -> None:
    check_only_events(run(transcript, step=step, expect_preface=expect_preface, upgraded=upgraded))


def frame_pieces() -> list[bytes]:
    c, s = Peer(), Peer()
    return [
        PREFACE,
        settings_frame({1: 0, 5: 20000}),
        settings_frame(ack=True),
        headers(1, c.block(GET), "END_STREAM"),
        headers(3, c.block(POST), end_headers=False, pad=3),
        continuation(3, c.block([("x", "y")]), "END_HEADERS"),
        headers(1, s.block(OK), priority=True),
        data(1, b"abc", "END_STREAM", pad=2),
        data(3, b"xyz"),
        ser(RstStreamFrame(3, error_code=8)),
        ser(GoAwayFrame(0, last_stream_id=1)),
        ser(PushPromiseFrame(1, promised_stream_id=2, data=s.block(GET), flags=["END_HEADERS"])),
        raw_frame(0x0B, 0, 1, b"?"),
        raw_frame(1, 0x04, 5, b"\xff\xff\xff\xff"),
        b"\x00\x00",
    ]


PIECES = frame_pieces()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 1),
            st.sampled_from(PIECES),
            st.integers(-1, 40),
            st.integers(0, 255),
        ),
        max_size=14,
    ),
    st.booleans(),
    st.integers(1, 9),
    st.lists(st.tuples(st.integers(0, 13), st.integers(0, 1), st.integers(1, 60)), max_size=2),
)
def test_fuzz_frame_like_pieces(
    pieces: list[tuple[int, bytes, int, int]],
    expect_preface: bool,
    step: int,
    gaps: list[tuple[int, int, int]],
) -> None:
    """Real frames, some with one byte changed, some cut by gaps: events only, and the
    same events whatever the segmentation."""
    transcript: Transcript = []
    for direction, piece, where, value in pieces:
        changed = bytearray(piece)
        if 0 <= where < len(changed):
            changed[where] = value
        transcript.append((direction, bytes(changed)))
    check_only_events(run(transcript, expect_preface=expect_preface))
    assert merged(run(transcript, step=step, expect_preface=expect_preface)) == merged(
        run(transcript, expect_preface=expect_preface)
    )
    conn = H2Connection(expect_preface=expect_preface)
    out: list[HttpEvent] = []
    at_gap = {index: (direction, size) for index, direction, size in gaps}
    for i, (direction, chunk) in enumerate(transcript):
        if i in at_gap:
            out.extend(conn.gap(at_gap[i][0], at_gap[i][1], 1.0))
        out.extend(conn.feed(direction, chunk, 1.0))
    out.extend(conn.end(0, 2.0, clean=True) + conn.end(1, 2.0, clean=False))
    check_only_events(out)
