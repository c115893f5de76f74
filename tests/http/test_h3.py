"""HTTP/3 over QUIC stream events: frames, QPACK with its encoder stream, three-way feeding."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pylsqpack

from agentshark.errors import Diagnostic
from agentshark.http.events import (
    BodyData,
    BodyGap,
    ConnectionGoAway,
    DatagramReceived,
    MessageEnded,
    ParseError,
    PushPromised,
    RequestHeaders,
    ResponseHeaders,
    StreamReset,
)
from agentshark.http.h3 import H3Connection
from agentshark.quic.events import (
    QuicDatagram,
    QuicEvent,
    QuicStreamData,
    QuicStreamGap,
    QuicStreamReset,
)
from agentshark.quic.wire import read_varint

from ..quic.capture import FILES, read_quic


def varint(n: int) -> bytes:
    if n < 0x40:
        return bytes((n,))
    if n < 0x4000:
        return (n | 0x4000).to_bytes(2, "big")
    return (n | 0x80000000).to_bytes(4, "big")


def frame(kind: int, payload: bytes) -> bytes:
    return varint(kind) + varint(len(payload)) + payload


def settings(capacity: int, blocked: int) -> bytes:
    return frame(4, varint(1) + varint(capacity) + varint(7) + varint(blocked))


def data(d: int, sid: int, payload: bytes, fin: bool = False, ts: float = 1.0) -> QuicStreamData:
    return QuicStreamData(stream_id=sid, direction=d, data=payload, offset=0, fin=fin, ts=ts)


def feed(h3: H3Connection, events: Sequence[QuicEvent]) -> list[Any]:
    out: list[Any] = []
    for ev in events:
        out.extend(h3.feed(ev))
    out.extend(h3.close(9.0))
    return out


REQUEST = [
    (b":method", b"POST"),
    (b":scheme", b"https"),
    (b":authority", b"api.example"),
    (b":path", b"/v1/chat/completions"),
    (b"x-trace", b"abc"),
]
RESPONSE = [(b":status", b"200"), (b"content-type", b"text/event-stream")]


def static_block(headers: list[tuple[bytes, bytes]]) -> bytes:
    _, block = pylsqpack.Encoder().encode(0, headers)
    return block


def test_request_and_streamed_response_with_trailers() -> None:
    events = [
        data(0, 0, frame(1, static_block(REQUEST)) + frame(0, b'{"a":1}'), fin=True),
        data(1, 0, frame(1, static_block(RESPONSE)) + frame(0, b"data: 1\n\n"), ts=2.0),
        data(1, 0, frame(0x21, b"grease") + frame(0, b"data: 2\n\n"), ts=3.0),
        data(1, 0, frame(1, static_block([(b"grpc-status", b"0")])), fin=True, ts=4.0),
    ]
    out = feed(H3Connection(), events)
    kinds = [type(e).__name__ for e in out]
    assert kinds == [
        "RequestHeaders",
        "BodyData",
        "MessageEnded",
        "ResponseHeaders",
        "BodyData",
        "BodyData",
        "MessageEnded",
    ]
    req = out[0]
    assert (
        isinstance(req, RequestHeaders)
        and req.method == "POST"
        and req.target == "/v1/chat/completions"
    )
    assert req.version == "HTTP/3" and ("x-trace", "abc") in req.headers
    assert [e.ts for e in out if isinstance(e, BodyData) and e.response] == [2.0, 3.0]
    end = out[-1]
    assert isinstance(end, MessageEnded) and end.complete and end.trailers == [("grpc-status", "0")]


def test_dynamic_table_waits_for_settings_and_encoder_stream() -> None:
    encoder = pylsqpack.Encoder()
    table = encoder.apply_settings(4096, 16)
    encoder.encode(0, REQUEST)  # (ls-qpack indexes the fields the second time it sees them)
    instructions, block = encoder.encode(4, REQUEST)
    assert block[:1] != b"\x00"  # the block refers to dynamic entries
    h3 = H3Connection()
    out = h3.feed(data(0, 4, frame(1, block), fin=True))  # before anything else: it waits
    assert out == []
    out = h3.feed(data(0, 2, varint(2) + table + instructions))  # the client's encoder stream
    assert out == []  # the capacity is the server's to announce
    out = h3.feed(data(1, 3, varint(0) + settings(4096, 16)))  # the server's control stream
    assert [type(e) for e in out] == [RequestHeaders, MessageEnded]
    assert isinstance(out[0], RequestHeaders) and out[0].headers[3] == (
        ":path",
        "/v1/chat/completions",
    )
    assert h3.settings[1] == {1: 4096, 7: 16}


def test_a_block_never_unblocked_is_named_at_close() -> None:
    encoder = pylsqpack.Encoder()
    encoder.apply_settings(4096, 16)
    encoder.encode(0, REQUEST)
    _, block = encoder.encode(4, REQUEST)  # its encoder instructions are never delivered
    h3 = H3Connection()
    out = feed(
        h3, [data(1, 3, varint(0) + settings(4096, 16)), data(0, 4, frame(1, block), fin=True)]
    )
    errors = [e for e in out if isinstance(e, ParseError)]
    assert len(errors) == 1 and "encoder stream never inserted" in errors[0].message
    # the head it could not decode first, then its error (so that it is the exchange's)
    assert isinstance(out[-3], RequestHeaders) and out[-3].method == "?"
    assert out[-2] is errors[0] and errors[0].stream == 4
    assert isinstance(out[-1], MessageEnded) and not out[-1].complete


def test_a_midway_connection_names_a_dynamic_block_at_once() -> None:
    """Read from its middle, the connection's SETTINGS and encoder stream were sent before
    the capture: a block that uses the dynamic table fails when it comes, so its body and
    its response stay one exchange; a static-only block decodes."""
    encoder = pylsqpack.Encoder()
    encoder.apply_settings(4096, 16)
    encoder.encode(0, REQUEST)
    _, dynamic = encoder.encode(4, REQUEST)
    _, static = pylsqpack.Encoder().encode(8, REQUEST)
    h3 = H3Connection(midway=True)
    out = feed(h3, [data(0, 4, frame(1, dynamic) + frame(0, b"{}"), fin=True)])
    assert [type(e) for e in out] == [RequestHeaders, ParseError, BodyData, MessageEnded]
    assert isinstance(out[1], ParseError) and "before the capture started" in out[1].message
    out = feed(h3, [data(0, 8, frame(1, static), fin=True)])
    assert isinstance(out[0], RequestHeaders) and out[0].method == "POST"


def test_a_gap_inside_data_is_a_body_gap() -> None:
    body = frame(0, b"x" * 100)
    events: list[QuicEvent] = [
        data(1, 0, frame(1, static_block(RESPONSE)) + body[:20]),
        QuicStreamGap(stream_id=0, direction=1, offset=40, size=50, ts=2.0),
        data(1, 0, body[70:], fin=True),
    ]
    out = feed(H3Connection(), events)
    gaps = [e for e in out if isinstance(e, BodyGap)]
    assert len(gaps) == 1 and gaps[0].size == 50
    assert isinstance(out[-1], MessageEnded) and not out[-1].complete


def test_reset_and_goaway() -> None:
    events: list[QuicEvent] = [
        data(0, 0, frame(1, static_block(REQUEST))),
        QuicStreamReset(stream_id=0, direction=1, error_code=0x10C, final_size=0, ts=2.0),
        data(1, 3, varint(0) + settings(0, 0) + frame(7, varint(4))),
        data(1, 7, varint(0x54) + b"webtransport bytes"),  # an unknown stream type: read past
    ]
    out = feed(H3Connection(), events)
    resets = [e for e in out if isinstance(e, StreamReset)]
    assert (
        len(resets) == 1 and resets[0].error_name == "H3_REQUEST_CANCELLED" and resets[0].response
    )
    goaway = [e for e in out if isinstance(e, ConnectionGoAway)]
    assert len(goaway) == 1 and goaway[0].last_stream == 4


def _normalized(events: list[Any]) -> list[Any]:
    """Consecutive body bytes of one message joined, times dropped."""
    out: list[Any] = []
    for ev in events:
        if (
            isinstance(ev, BodyData)
            and out
            and isinstance(out[-1], BodyData)
            and (out[-1].stream, out[-1].response) == (ev.stream, ev.response)
        ):
            out[-1] = BodyData(
                stream=ev.stream, response=ev.response, data=out[-1].data + ev.data, ts=0.0
            )
        elif isinstance(ev, BodyData):
            out.append(BodyData(stream=ev.stream, response=ev.response, data=ev.data, ts=0.0))
        else:
            out.append(replace(ev, ts=0.0))
    return out


def test_three_ways_on_a_real_connection() -> None:
    pcap, keys = FILES["h3_openai"]
    _, events = read_quic(pcap, keys)
    stream_events = [ev for _, ev in events]
    whole = _normalized(feed(H3Connection(), stream_events))
    assert sum(isinstance(e, ResponseHeaders) for e in whole) == 3
    bytewise: list[QuicEvent] = []
    for ev in stream_events:
        if isinstance(ev, QuicStreamData) and len(ev.data) > 1:
            for i in range(len(ev.data)):
                last = i == len(ev.data) - 1
                bytewise.append(
                    replace(ev, data=ev.data[i : i + 1], offset=ev.offset + i, fin=ev.fin and last)
                )
        else:
            bytewise.append(ev)
    assert _normalized(feed(H3Connection(), bytewise)) == whole
    # trailing bytes on a unidirectional stream of a type nobody reads change nothing
    extra = [*stream_events, data(0, 14, varint(0x21) + b"\x00" * 50)]
    assert _normalized(feed(H3Connection(), extra)) == whole


def test_varint_helper_round_trips() -> None:
    for n in (0, 63, 64, 16383, 16384, 1 << 29):
        assert read_varint(varint(n), 0) == (n, len(varint(n)))


PUSHED = [(b":method", b"GET"), (b":scheme", b"https"), (b":path", b"/v1/models/m")]


def _push_events(*, stream_first: bool) -> list[QuicEvent]:
    request = [
        data(0, 2, varint(0) + frame(13, varint(4))),  # the client's control: MAX_PUSH_ID 4
        data(0, 0, frame(1, static_block(REQUEST)), fin=True),
    ]
    promise = data(
        1, 0, frame(1, static_block(RESPONSE)) + frame(5, varint(3) + static_block(PUSHED))
    )
    push = data(
        1, 15, varint(1) + varint(3) + frame(1, static_block(RESPONSE)) + frame(0, b"{}"), fin=True
    )
    end = data(1, 0, frame(0, b"ok"), fin=True, ts=3.0)
    return [*request, *((push, promise) if stream_first else (promise, push)), end]


def test_a_push_stream_is_tied_to_its_promise_in_either_order() -> None:
    """RFC 9114 §4.6: PUSH_PROMISE (push id 3) on request stream 0 and the push stream of
    push id 3 (QUIC stream 15) make one pushed exchange, whichever is read first."""
    for stream_first in (False, True):
        h3 = H3Connection()
        out = feed(h3, _push_events(stream_first=stream_first))
        (promised,) = [e for e in out if isinstance(e, PushPromised)]
        assert promised.stream == 0 and promised.promised_stream == 15
        assert (":path", "/v1/models/m") in promised.headers
        pushed = [e for e in out if getattr(e, "stream", None) == 15]
        assert [type(e) for e in pushed] == [ResponseHeaders, BodyData, MessageEnded]
        assert out.index(promised) < out.index(pushed[0])
        end = pushed[-1]
        assert isinstance(end, MessageEnded) and end.complete
        assert h3.max_push_id == 4 and h3.diagnostics == []


def test_a_promise_never_pushed_and_a_cancelled_one_are_said() -> None:
    events = [
        data(0, 2, varint(0) + frame(13, varint(4)) + frame(3, varint(1))),  # CANCEL_PUSH 1
        data(0, 0, frame(1, static_block(REQUEST)), fin=True),
        data(
            1,
            0,
            frame(1, static_block(RESPONSE))
            + frame(5, varint(0) + static_block(PUSHED))
            + frame(5, varint(1) + static_block(PUSHED))
            + frame(5, varint(9) + static_block(PUSHED)),
            fin=True,
        ),
    ]
    h3 = H3Connection()
    feed(h3, events)
    said: dict[str, list[Diagnostic]] = {}
    for d in h3.diagnostics:
        said.setdefault(d.code, []).append(d)
    assert [d.severity for d in said["h3.push_not_seen"]] == ["warning", "info", "warning"]
    assert "cancelled it (CANCEL_PUSH)" in said["h3.push_not_seen"][1].message
    (limit,) = said["h3.push_id"]
    assert "push 9" in limit.message and "limit (4 seen" in limit.message


def test_a_push_stream_without_its_promise_is_a_response_without_request() -> None:
    push = data(1, 15, varint(1) + varint(3) + frame(1, static_block(RESPONSE)), fin=True)
    h3 = H3Connection()
    out = feed(h3, [push])
    assert [type(e) for e in out] == [ResponseHeaders, MessageEnded]
    end = out[-1]
    assert isinstance(end, MessageEnded) and not end.complete
    assert [d.code for d in h3.diagnostics] == ["h3.push_unpromised"]


def test_http_datagrams_name_their_request_stream() -> None:
    """RFC 9297 §2.1: the quarter stream id first; a DATAGRAM too short for it is said."""
    h3 = H3Connection()
    out = h3.feed(QuicDatagram(direction=1, data=varint(2) + b"abc", ts=5.0))
    assert out == [DatagramReceived(stream=8, response=True, size=3, ts=5.0)]
    assert h3.feed(QuicDatagram(direction=0, data=b"", ts=6.0)) == []
    assert [d.code for d in h3.diagnostics] == ["h3.datagram"]
