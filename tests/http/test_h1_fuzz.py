"""Findings of the fuzz campaign (scripts/fuzz_campaign.py) in the HTTP/1 parser, kept as
regression tests.

An infinite loop would hang the suite: the parse runs under a CPU-time alarm (2 s of CPU
for 15 bytes), which turns a loop into an exception.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import get_args

import pytest

from agentshark.http.events import HttpEvent
from agentshark.http.h1 import H1Connection


class LoopingError(Exception):
    pass


@contextmanager
def cpu_limit(seconds: float) -> Iterator[None]:
    def stop(signum: int, frame: object) -> None:
        raise LoopingError(f"still parsing after {seconds} s of CPU time")

    old = signal.signal(signal.SIGVTALRM, stop)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, old)


@pytest.mark.parametrize("data", [b"GET s HTTP/1.1\n", b"GET s HTTP/1.1\r\n\r\n"])
def test_a_request_line_the_head_parser_refuses_does_not_loop(data: bytes) -> None:
    conn = H1Connection()
    with cpu_limit(2.0):
        events = [*conn.feed(0, data, 1.0), *conn.end(0, 2.0, clean=True)]
    assert all(isinstance(e, get_args(HttpEvent)) for e in events)


@pytest.mark.parametrize("value", [b"\xb3", b"2\xb2"])
def test_a_content_length_of_non_ascii_digits_is_not_an_exception(value: bytes) -> None:
    conn = H1Connection()
    data = b"HTTP/1.1 200 OK\r\ncontent-length: " + value + b"\r\n\r\n"
    with cpu_limit(2.0):
        events = [*conn.feed(1, data, 1.0), *conn.end(1, 2.0, clean=True)]
    assert all(isinstance(e, get_args(HttpEvent)) for e in events)
