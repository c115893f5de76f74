"""What the QUIC stage hands up, per connection: stream bytes in order, resets and closes.

``direction`` is the sender: 0 the client, 1 the server (RFC 9000 §2.1: the stream id's low
bit says who opened the stream, not who sends on it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "QuicClosed",
    "QuicDatagram",
    "QuicEvent",
    "QuicStreamData",
    "QuicStreamGap",
    "QuicStreamReset",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class QuicStreamData:
    """In-order bytes of a stream from ``offset`` on; ``fin``: they end the stream."""

    stream_id: int
    direction: int
    data: bytes
    offset: int
    fin: bool
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class QuicStreamGap:
    """``size`` bytes of a stream from ``offset`` on were never captured (the packets that
    carried them, and every retransmission, are missing)."""

    stream_id: int
    direction: int
    offset: int
    size: int
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class QuicStreamReset:
    """RESET_STREAM (RFC 9000 §19.4): the sender abandoned the stream at ``final_size``."""

    stream_id: int
    direction: int
    error_code: int
    final_size: int
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class QuicClosed:
    """CONNECTION_CLOSE (RFC 9000 §19.19): ``frame_type`` None for the application's."""

    direction: int
    error_code: int
    frame_type: int | None
    reason: str
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class QuicDatagram:
    """A DATAGRAM frame's payload (RFC 9221 §4: types 0x30, 0x31; unreliable, never
    retransmitted, so one the capture lost is gone without a trace)."""

    direction: int
    data: bytes
    ts: float


QuicEvent = QuicStreamData | QuicStreamGap | QuicStreamReset | QuicClosed | QuicDatagram
