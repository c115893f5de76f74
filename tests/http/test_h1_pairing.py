"""HTTP/1 pairing after capture gaps: by TCP acknowledgment evidence, or unpaired.

``Wire`` plays both sides of one connection: it numbers the bytes of each direction, gives
each segment the ``acked`` a real stack would (what the sender had received of the other
direction), and turns lost segments into gaps at their offsets.
"""

from __future__ import annotations

import itertools

from agentshark.http.events import (
    BodyGap,
    GapAffected,
    HttpEvent,
    MessageEnded,
    ParseError,
    ResponseHeaders,
)
from agentshark.http.exchange import ExchangeAssembler
from agentshark.http.h1 import H1Connection
from agentshark.model import Exchange


def request(path: str, body: bytes = b"") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: h\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


def response(status: int, body: bytes) -> tuple[bytes, bytes]:
    head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    return head, body


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


class Wire:
    def __init__(self) -> None:
        self.h1 = H1Connection()
        self.sent = [0, 0]  # bytes each side sent
        self.seen = [0, 0]  # bytes of the other side each had received when it last sent
        self.events: list[HttpEvent] = []
        self.ts = itertools.count(1)

    def send(self, d: int, data: bytes, *, acked: int | None = None) -> None:
        """``d`` sends ``data`` having received everything the other side sent (or
        ``acked`` bytes of it)."""
        ack = self.sent[1 - d] if acked is None else acked
        self.events += self.h1.feed(d, data, float(next(self.ts)), ack)
        self.sent[d] += len(data)

    def lose(self, d: int, data: bytes) -> None:
        self.events += self.h1.gap(d, len(data), float(next(self.ts)))
        self.sent[d] += len(data)

    def close(self) -> list[HttpEvent]:
        self.events += self.h1.end(0, 99.0, clean=True)
        self.events += self.h1.end(1, 99.0, clean=True)
        return self.events

    def exchanges(self) -> list[Exchange]:
        counter = itertools.count(1)
        asm = ExchangeAssembler(
            source=0,
            connection="c1",
            transport="http/1.1",
            scheme="http",
            server="h:80",
            next_id=lambda: f"e{next(counter)}",
            location="t c1",
        )
        return [*asm.handle(self.close()), *asm.close()]


def responses(events: list[HttpEvent]) -> list[tuple[int, int]]:
    return [(e.stream, e.status) for e in events if isinstance(e, ResponseHeaders)]


def notes(events: list[HttpEvent]) -> list[tuple[int, str]]:
    return [(e.stream, e.code) for e in events if isinstance(e, GapAffected)]


def test_sequential_keep_alive_with_a_lost_response_head() -> None:
    w = Wire()
    w.send(0, request("/a", b"one"))
    head, body = response(200, b'{"a": 1}')
    w.lose(1, head)
    w.send(1, body)  # cannot be framed: skipped
    w.send(0, request("/b", b"two"))
    w.send(1, b"".join(response(404, b"nope")))
    events = w.close()
    assert responses(events) == [(1, 404)]  # not stream 0: evidence, not order
    assert notes(events) == [(0, "http.response_lost")]
    lost = next(e for e in events if isinstance(e, GapAffected))
    assert lost.final
    assert f"server byte 0 ({len(head)} bytes)" in lost.message
    exchanges = {ex.stream: ex for ex in w.exchanges()}
    assert exchanges[0].response is None and not exchanges[0].complete
    assert [d.code for d in exchanges[0].diagnostics] == ["http.response_lost"]
    assert exchanges[1].complete and exchanges[1].response is not None
    assert exchanges[1].response.status == 404


def test_after_a_paired_response_order_is_trusted_again() -> None:
    w = Wire()
    w.send(0, request("/a"))
    w.lose(1, response(200, b"x")[0])
    w.send(1, b"x")
    w.send(0, request("/b"))
    w.send(1, b"".join(response(201, b"y")))
    w.send(0, request("/c"))
    w.send(1, b"".join(response(202, b"z")))
    assert responses(w.close()) == [(1, 201), (2, 202)]


def test_a_lost_request_head_leaves_its_response_unpaired() -> None:
    w = Wire()
    w.lose(0, request("/a")[:30])
    w.send(0, request("/a")[30:])
    w.send(1, b"".join(response(200, b"first")))
    w.send(0, request("/b"))
    w.send(1, b"".join(response(201, b"second")))
    events = w.close()
    assert responses(events) == [(-1, 200), (0, 201)]
    (note,) = [e for e in events if isinstance(e, GapAffected)]
    assert (note.stream, note.code) == (-1, "http.request_lost")
    assert "client byte 0 (30 bytes)" in note.message
    by_stream = {ex.stream: ex for ex in w.exchanges()}
    assert not by_stream[-1].complete and by_stream[-1].request is None
    assert [d.code for d in by_stream[-1].diagnostics] == ["http.request_lost"]
    assert by_stream[0].complete


def test_pipelined_requests_with_a_lost_response_head_stay_unpaired() -> None:
    w = Wire()
    for path in ("/a", "/b", "/c"):  # sent back to back: the client received nothing yet
        w.send(0, request(path), acked=0)
    w.lose(1, response(200, b"A")[0])
    w.send(1, b"A")
    w.send(1, b"".join(response(200, b"B")))
    w.send(1, b"".join(response(200, b"C")))
    events = w.close()
    assert [s for s, _ in responses(events)] == [-1, -2]
    assert {code for _, code in notes(events)} == {"http.unpaired_response", "http.response_lost"}
    unpaired = [e for e in events if isinstance(e, GapAffected) and e.stream < 0]
    assert all("no capture gap can hold" in e.message for e in unpaired)
    assert not any(ex.complete for ex in w.exchanges())


def test_a_client_seen_pipelining_is_never_paired_by_evidence() -> None:
    w = Wire()
    w.send(0, request("/a"), acked=0)
    w.send(0, request("/b"), acked=0)
    w.send(1, b"".join(response(200, b"A")))  # in order: fine, and proof of pipelining
    w.send(1, b"".join(response(200, b"B")))
    w.send(0, request("/c"))
    w.lose(1, response(200, b"C")[0])
    w.send(1, b"C")
    w.send(0, request("/d"))
    w.send(1, b"".join(response(200, b"D")))
    events = w.close()
    assert responses(events)[:2] == [(0, 200), (1, 200)]
    assert responses(events)[2][0] < 0
    unpaired = [e for e in events if isinstance(e, GapAffected) and e.stream < 0]
    assert [e.code for e in unpaired] == ["http.unpaired_response"]
    assert "pipelines" in unpaired[0].message


def test_without_acknowledgment_numbers_a_response_after_a_gap_is_unpaired() -> None:
    w = Wire()
    w.send(0, request("/a"), acked=-1)
    w.lose(1, response(200, b"x")[0])
    w.send(1, b"x", acked=-1)
    w.send(0, request("/b"), acked=-1)
    w.send(1, b"".join(response(200, b"y")), acked=-1)
    events = w.close()
    assert responses(events) == [(-1, 200)]
    unpaired = [e for e in events if isinstance(e, GapAffected) and e.stream < 0]
    assert "no TCP acknowledgment number" in unpaired[0].message


def test_a_gap_inside_a_chunk_size_line() -> None:
    w = Wire()
    w.send(0, request("/stream"))
    w.send(1, CHUNKED_HEAD + b"5\r\nhello\r\n")
    w.send(1, b"1")
    w.lose(1, b"0\r\n0123456789abcdef\r\n")  # the size line 10 and its chunk
    w.send(1, b"3\r\nabc\r\n0\r\n\r\n")
    w.send(0, request("/next"))
    w.send(1, b"".join(response(200, b"ok")))
    events = w.close()
    gap = next(e for e in events if isinstance(e, BodyGap))
    assert (gap.stream, gap.size, gap.offset) == (0, 21, len(CHUNKED_HEAD) + 10 + 1)
    end = next(e for e in events if isinstance(e, MessageEnded) and e.response)
    assert not end.complete
    assert responses(events) == [(0, 200), (1, 200)]
    assert notes(events) == []
    by_stream = {ex.stream: ex for ex in w.exchanges()}
    first = by_stream[0]
    assert not first.complete
    assert [d.code for d in first.diagnostics] == ["http.body_gap"]
    assert f"server byte {gap.offset}" in first.diagnostics[0].message
    assert by_stream[1].complete


def test_a_gap_inside_a_response_head() -> None:
    w = Wire()
    w.send(0, request("/a"))
    head, body = response(200, b"body")
    w.send(1, head[:10])
    w.lose(1, head[10:])
    w.send(1, body)
    w.send(0, request("/b"))
    w.send(1, b"".join(response(201, b"again")))
    events = w.close()
    cut = next(e for e in events if isinstance(e, ParseError))
    assert "cut a message head short" in cut.message and cut.offset == 0
    assert responses(events) == [(1, 201)]
    assert notes(events) == [(0, "http.response_lost")]
    assert f"server byte 0 ({len(head)} bytes)" in next(
        e.message for e in events if isinstance(e, GapAffected)
    )


def test_a_gap_inside_a_body_of_known_length_keeps_the_framing() -> None:
    w = Wire()
    w.send(0, request("/a"))
    head, body = response(200, b"0123456789")
    w.send(1, head + body[:3])
    w.lose(1, body[3:7])
    w.send(1, body[7:])
    w.send(0, request("/b"))
    w.send(1, b"".join(response(201, b"fine")))
    events = w.close()
    gap = next(e for e in events if isinstance(e, BodyGap))
    assert (gap.size, gap.offset) == (4, len(head) + 3)
    assert responses(events) == [(0, 200), (1, 201)]  # in order: no message was lost
    assert notes(events) == []
    by_stream = {ex.stream: ex for ex in w.exchanges()}
    assert not by_stream[0].complete
    assert by_stream[0].response is not None and by_stream[0].response.body.gap_bytes == 4
    assert by_stream[1].complete


def test_a_response_lost_at_the_end_of_the_capture_says_so() -> None:
    w = Wire()
    w.send(0, request("/a"))
    w.lose(1, b"".join(response(200, b"gone")))
    events = w.close()
    assert notes(events) == [(0, "http.response_lost")]
    (ex,) = w.exchanges()
    assert not ex.complete
    assert [d.code for d in ex.diagnostics] == ["http.response_lost"]


def test_a_request_whose_acknowledgment_the_capture_cannot_tell_pairs_if_oldest() -> None:
    """The last chunk of a response is lost (a TLS record the capture missed): the next
    request acknowledges bytes whose plaintext offset is unknown (-1), yet it is the only
    request waiting, so the response the server sent after receiving it answers it."""
    w = Wire()
    w.send(0, request("/a"))
    w.send(1, CHUNKED_HEAD + b"3\r\nabc\r\n")
    w.lose(1, b"0\r\n\r\n")
    w.send(0, request("/b", b"two"), acked=-1)
    w.send(1, b"".join(response(201, b"second")))
    events = w.close()
    assert responses(events) == [(0, 200), (1, 201)]
    by_stream = {ex.stream: ex for ex in w.exchanges()}
    assert not by_stream[0].complete
    assert by_stream[1].complete and by_stream[1].response is not None


def test_an_unknown_acknowledgment_behind_another_waiting_request_stays_unpaired() -> None:
    w = Wire()
    w.send(0, request("/a"))
    w.lose(1, b"".join(response(200, b"first")))
    w.send(0, request("/b"), acked=-1)
    w.send(1, b"".join(response(201, b"second")))
    events = w.close()
    assert responses(events) == [(-1, 201)]
    assert (-1, "http.unpaired_response") in notes(events)
