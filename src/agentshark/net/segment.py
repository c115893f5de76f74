"""The TCP segment and the UDP datagram: what ``net.packet`` produces for ``net.tcp`` and
``quic``."""

from __future__ import annotations

from typing import NamedTuple

# TCP flag bits (RFC 9293 §3.1).
FIN = 0x01
SYN = 0x02
RST = 0x04
PSH = 0x08
ACK = 0x10
URG = 0x20


class TcpSegment(NamedTuple):
    """One TCP segment, addresses as packed bytes (4 or 16) to keep the hot path cheap.

    ``payload`` may be shorter than the segment's real payload when the capture truncated
    the packet; ``missing`` then counts the bytes that were on the wire but not captured.
    """

    ts: float
    src: bytes
    sport: int
    dst: bytes
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int
    packet: int  # packet number within its source, for diagnostics


class UdpDatagram(NamedTuple):
    """One UDP datagram (RFC 768), addresses as packed bytes (4 or 16), as ``TcpSegment``.

    ``missing`` counts the payload bytes that were on the wire but not captured."""

    ts: float
    src: bytes
    sport: int
    dst: bytes
    dport: int
    payload: bytes
    missing: int
    packet: int
