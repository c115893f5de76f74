"""The exchange assembler: events of one connection -> exchanges."""

from __future__ import annotations

import itertools

from agentshark.http.events import (
    BodyData,
    BodyGap,
    GapAffected,
    MessageEnded,
    RequestHeaders,
    ResponseHeaders,
    StreamReset,
)
from agentshark.http.exchange import ExchangeAssembler


def assembler() -> ExchangeAssembler:
    ids = itertools.count(1)
    return ExchangeAssembler(
        source=0,
        connection="c1",
        transport="h2",
        scheme="https",
        server="10.0.0.1:443",
        next_id=lambda: f"e{next(ids)}",
        location="t c1",
    )


def test_exchange_is_handed_out_when_both_messages_end() -> None:
    a = assembler()
    head = [
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "api.example"),
        (":path", "/v1/messages"),
    ]
    assert (
        a.handle(
            [
                RequestHeaders(
                    stream=1,
                    method="POST",
                    target="/v1/messages",
                    version="HTTP/2",
                    headers=head,
                    ts=1.0,
                ),
                BodyData(stream=1, response=False, data=b"{}", ts=1.0),
                MessageEnded(stream=1, response=False, ts=1.0, complete=True, trailers=[]),
                ResponseHeaders(
                    stream=1, status=200, reason="", version="HTTP/2", headers=[], ts=2.0
                ),
                BodyData(stream=1, response=True, data=b"ok", ts=2.5),
            ]
        )
        == []
    )
    (ex,) = a.handle([MessageEnded(stream=1, response=True, ts=3.0, complete=True, trailers=[])])
    assert ex.request is not None and ex.response is not None
    assert ex.request.url == "https://api.example/v1/messages"
    assert ex.response.body.pieces == [(2.5, b"ok")]
    assert ex.complete and ex.stream == 1


def test_body_without_its_head_is_kept() -> None:
    a = assembler()
    (ex,) = a.handle(
        [
            BodyData(stream=7, response=True, data=b"data: {}\n\n", ts=1.0),
            MessageEnded(stream=7, response=True, ts=2.0, complete=False, trailers=[]),
        ]
    )
    assert ex.response is not None and ex.response.status == 0
    assert ex.response.body.data() == b"data: {}\n\n"
    assert not ex.complete
    assert "http.head_missing" in [d.code for d in ex.diagnostics]


def test_reset_ends_the_exchange_incomplete() -> None:
    a = assembler()
    a.handle(
        [
            RequestHeaders(
                stream=3, method="GET", target="/s", version="HTTP/2", headers=[], ts=1.0
            ),
            MessageEnded(stream=3, response=False, ts=1.0, complete=True, trailers=[]),
            ResponseHeaders(stream=3, status=200, reason="", version="HTTP/2", headers=[], ts=1.1),
        ]
    )
    (ex,) = a.handle(
        [StreamReset(stream=3, response=False, error_code=8, error_name="CANCEL", ts=2.0)]
    )
    assert ex.response is not None and not ex.response.complete and ex.response.ended == 2.0
    assert [d.code for d in ex.diagnostics] == ["h2.stream_reset"]


def test_a_headless_message_is_never_complete_even_when_its_framing_ended() -> None:
    a = assembler()
    (ex,) = a.handle(
        [
            BodyData(stream=3, response=True, data=b"{}", ts=1.0),
            MessageEnded(stream=3, response=True, ts=2.0, complete=True, trailers=[]),
        ]
    )
    assert ex.response is not None and not ex.response.complete


def test_a_body_gap_of_a_headless_message_is_kept_and_located() -> None:
    a = assembler()
    (ex,) = a.handle(
        [
            BodyGap(stream=5, response=True, size=40, ts=1.0, offset=700),
            MessageEnded(stream=5, response=True, ts=2.0, complete=True, trailers=[]),
        ]
    )
    assert ex.response is not None and ex.response.body.gap_bytes == 40
    assert not ex.complete
    gap = next(d for d in ex.diagnostics if d.code == "http.body_gap")
    assert "at server byte 700" in gap.message and gap.location == "t c1 server byte 700"


def test_a_gap_note_after_the_message_ended_still_makes_it_incomplete() -> None:
    a = assembler()
    a.handle(
        [
            RequestHeaders(
                stream=0, method="GET", target="/", version="HTTP/1.1", headers=[], ts=1
            ),
            MessageEnded(stream=0, response=False, ts=1.0, complete=True, trailers=[]),
        ]
    )
    (ex,) = a.handle(
        [
            GapAffected(
                stream=0,
                response=True,
                code="http.response_lost",
                message="its response was lost in the capture gap at server byte 0 (9 bytes)",
                ts=2.0,
                final=True,
            )
        ]
    )
    assert ex.request is not None and not ex.request.complete
    assert ex.response is None and not ex.complete
    assert [d.code for d in ex.diagnostics] == ["http.response_lost"]
