"""Test helper: cut bytes out of one direction of a connection's TCP events, and check what
TLS recovers after the cut against the clean run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agentshark.net.events import StreamData, StreamGap, TcpEvent
from agentshark.tls import TlsEvent, TlsGap, TlsPlaintext


def records(events: Sequence[TcpEvent], direction: int) -> list[tuple[int, int, int]]:
    """(content type, TCP offset, size with header) of each record of a clean direction."""
    stream = b"".join(
        ev.data for ev in events if isinstance(ev, StreamData) and ev.direction == direction
    )
    out, pos = [], 0
    while pos + 5 <= len(stream):
        size = 5 + int.from_bytes(stream[pos + 3 : pos + 5], "big")
        out.append((stream[pos], pos, size))
        pos += size
    return out


def cut(events: Sequence[TcpEvent], direction: int, start: int, stop: int) -> list[TcpEvent]:
    """The events with bytes [start, stop) of ``direction`` replaced by one StreamGap."""
    out: list[TcpEvent] = []
    gap_done = False
    for ev in events:
        if not isinstance(ev, StreamData) or ev.direction != direction:
            out.append(ev)
            continue
        a, b = ev.offset, ev.offset + len(ev.data)
        if b <= start or a >= stop:
            out.append(ev)
            continue
        if a < start:
            out.append(replace(ev, data=ev.data[: start - a]))
        if not gap_done:
            out.append(
                StreamGap(
                    connection=ev.connection,
                    direction=direction,
                    size=stop - start,
                    ts=ev.ts,
                    offset=start,
                )
            )
            gap_done = True
        if b > stop:
            out.append(replace(ev, data=ev.data[stop - a :], offset=stop))
    return out


def pieces(events: Sequence[TlsEvent], direction: int) -> list[tuple[int, bytes]]:
    """The plaintext of ``direction`` as (plaintext offset, bytes), offsets moved by TlsGaps."""
    out: list[tuple[int, bytes]] = []
    offset = 0
    for ev in events:
        if isinstance(ev, TlsGap) and ev.direction == direction:
            offset += ev.size
        elif isinstance(ev, TlsPlaintext) and ev.direction == direction:
            out.append((offset, ev.data))
            offset += len(ev.data)
    return out


def assert_faithful(events: Sequence[TlsEvent], clean: bytes, direction: int) -> int:
    """Every recovered byte equals the clean run's at its offset; returns the bytes lost."""
    got = 0
    for offset, data in pieces(events, direction):
        assert clean[offset : offset + len(data)] == data, f"plaintext differs at {offset}"
        got += len(data)
    lost = sum(ev.size for ev in events if isinstance(ev, TlsGap) and ev.direction == direction)
    assert got + lost == len(clean), "the TlsGap sizes do not account for the bytes missing"
    return lost
