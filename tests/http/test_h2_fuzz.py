"""Findings of the review that followed the fuzz campaign (scripts/fuzz_campaign.py) in the
HTTP/2 parser, kept as regression tests."""

from __future__ import annotations

from typing import get_args

from hpack import Encoder
from hyperframe.frame import HeadersFrame, SettingsFrame

from agentshark.http.events import HttpEvent
from agentshark.http.h2 import H2Connection

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def test_a_status_of_non_ascii_digits_is_not_an_exception() -> None:
    request = HeadersFrame(1, flags=["END_HEADERS", "END_STREAM"])
    request.data = Encoder().encode(
        [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "h")]
    )
    response = HeadersFrame(1, flags=["END_HEADERS", "END_STREAM"])
    response.data = Encoder().encode([(":status", "²⁰⁰")])
    conn = H2Connection()
    events = [
        *conn.feed(0, PREFACE + SettingsFrame(0).serialize() + request.serialize(), 1.0),
        *conn.feed(1, SettingsFrame(0).serialize() + response.serialize(), 2.0),
    ]
    assert all(isinstance(e, get_args(HttpEvent)) for e in events)
