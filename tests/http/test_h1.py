"""The HTTP/1.x parser, fed whole, byte by byte and with trailing bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.http.events import (
    BodyData,
    BodyGap,
    HttpEvent,
    InformationalResponse,
    MessageEnded,
    ParseError,
    ProtocolSwitched,
    RequestHeaders,
    ResponseHeaders,
)
from agentshark.http.h1 import H1Connection
from tests.http.transcripts import Transcript, feed, merged


def run(transcript: Transcript, *, step: int = 0, ends: bool = True) -> list[HttpEvent]:
    return feed(H1Connection(), transcript, step=step, ends=ends)


def three_ways(transcript: Transcript) -> list[HttpEvent]:
    whole = merged(run(transcript))
    assert merged(run(transcript, step=1)) == whole
    assert merged(run(transcript, step=7)) == whole
    return whole


def kinds(events: list[HttpEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


REQ = b"POST /v1/chat/completions HTTP/1.1\r\nHost: api.example\r\nContent-Length: 5\r\n\r\nhello"
RESP = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


def test_content_length_exchange() -> None:
    events = three_ways([(0, REQ), (1, RESP)])
    assert kinds(events) == [
        "RequestHeaders",
        "BodyData",
        "MessageEnded",
        "ResponseHeaders",
        "BodyData",
        "MessageEnded",
    ]
    req = events[0]
    assert isinstance(req, RequestHeaders)
    assert (req.method, req.target, req.version) == ("POST", "/v1/chat/completions", "HTTP/1.1")
    assert req.headers[0] == ("Host", "api.example")
    assert isinstance(events[1], BodyData) and events[1].data == b"hello"
    end = events[5]
    assert isinstance(end, MessageEnded) and end.complete and end.response


def test_keep_alive_and_pipelining() -> None:
    get = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
    head = b"HEAD /b HTTP/1.1\r\nHost: h\r\n\r\n"
    r1 = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
    r2 = b"HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n"  # HEAD: no body despite the length
    events = three_ways([(0, get + head + get), (1, r1 + r2 + r1)])
    resp = [e for e in events if isinstance(e, ResponseHeaders)]
    assert [r.stream for r in resp] == [0, 1, 2]
    ends = [e for e in events if isinstance(e, MessageEnded) and e.response]
    assert all(e.complete for e in ends) and len(ends) == 3


def test_chunked_with_extensions_and_trailers() -> None:
    body = b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: abc\r\n\r\n"
    resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body
    events = three_ways([(0, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"), (1, resp)])
    data = b"".join(e.data for e in events if isinstance(e, BodyData) and e.response)
    assert data == b"hello world"
    end = next(e for e in events if isinstance(e, MessageEnded) and e.response)
    assert end.complete
    assert end.trailers == [("X-Checksum", "abc")]
    assert end.transfer_bytes == len(body)


def test_close_delimited_body_ends_at_fin_only() -> None:
    t = [(0, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"), (1, b"HTTP/1.1 200 OK\r\n\r\nstream...")]
    events = three_ways(t)
    end = next(e for e in events if isinstance(e, MessageEnded) and e.response)
    assert end.complete
    conn = H1Connection()
    for d, data in t:
        conn.feed(d, data, 1.0)
    (cut,) = [e for e in conn.end(1, 2.0, clean=False) if isinstance(e, MessageEnded)]
    assert not cut.complete


def test_no_body_statuses_and_interim() -> None:
    req = b"POST /up HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi"
    resp = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
    events = three_ways([(0, req), (1, resp)])
    interim = [e for e in events if isinstance(e, InformationalResponse)]
    assert len(interim) == 1 and interim[0].status == 100 and interim[0].stream == 0
    final = [e for e in events if isinstance(e, ResponseHeaders)]
    assert final[0].status == 204
    assert next(e for e in events if isinstance(e, MessageEnded) and e.response).complete


def test_upgrade_switches_protocol() -> None:
    req = (
        b"GET /v1/realtime HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    )
    resp = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello"
    conn = H1Connection()
    events = conn.feed(0, req, 1.0) + conn.feed(1, resp, 1.0) + conn.feed(0, b"\x81\x85abcd", 1.0)
    assert any(isinstance(e, ProtocolSwitched) and e.protocol == "websocket" for e in events)
    assert conn.switched == "websocket"
    assert conn.switched_bytes == (6, 7)
    assert not any(isinstance(e, ParseError) for e in events)


def test_gap_inside_body_of_known_length() -> None:
    conn = H1Connection()
    conn.feed(0, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 1.0)
    events = conn.feed(1, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 1.0)
    events += conn.gap(1, 4, 1.5)
    events += conn.feed(1, b"xyz", 2.0)
    assert any(isinstance(e, BodyGap) and e.size == 4 for e in events)
    end = next(e for e in events if isinstance(e, MessageEnded) and e.response)
    assert end.complete  # framing completed; the assembler marks the body as holed


def test_midstream_start_resyncs() -> None:
    events = three_ways(
        [
            (0, b"tail of an earlier body\r\nGET /x HTTP/1.1\r\nHost: h\r\n\r\n"),
            (1, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        ]
    )
    assert isinstance(events[0], ParseError)
    assert any(isinstance(e, RequestHeaders) and e.target == "/x" for e in events)


def test_response_before_any_request_is_orphan() -> None:
    conn = H1Connection()
    events = conn.feed(1, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1.0)
    (resp,) = [e for e in events if isinstance(e, ResponseHeaders)]
    assert resp.stream < 0


def test_header_case_order_and_obs_fold() -> None:
    req = b"GET / HTTP/1.1\r\nX-B: 1\r\nhost: h\r\nX-Long: a\r\n  b\r\n\r\n"
    events = three_ways([(0, req)])
    (rh,) = [e for e in events if isinstance(e, RequestHeaders)]
    assert rh.headers == [("X-B", "1"), ("host", "h"), ("X-Long", "a b")]


def test_trailing_bytes_do_not_change_earlier_events() -> None:
    base = [(0, REQ), (1, RESP)]
    first = merged(run(base, ends=False))
    more = merged(
        run([(0, REQ + b"GET /next HTTP/1.1\r\n"), (1, RESP + b"HTTP/1.1 2")], ends=False)
    )
    assert more[: len(first)] == first


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.binary(max_size=200)), max_size=12))
def test_fuzz_any_bytes_only_events(transcript: Transcript) -> None:
    for ev in run(transcript):
        assert isinstance(ev, HttpEvent.__args__)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([REQ, RESP, b"\r\n", b"0\r\n", b"HTTP/1.1 ", b"GET "]), max_size=10),
    st.integers(1, 9),
)
def test_fuzz_http_like_pieces(pieces: list[bytes], step: int) -> None:
    t = [(i % 2, p) for i, p in enumerate(pieces)]
    assert merged(run(t, step=step)) == merged(run(t))
