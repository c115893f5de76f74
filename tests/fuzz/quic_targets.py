"""Fuzz harnesses of the QUIC and HTTP/3 stages (registered in ``tests.fuzz.targets``).

``quic``: part 0 a key log (never mutated), part 1 datagrams as records ``direction (1) |
length (2, big-endian) | datagram``, fed to :class:`~agentshark.quic.demux.QuicDemux` from the
client's and the server's address by direction. ``h3``: stream bytes as records ``direction
(1) | stream id (1) | fin (1) | length (2) | bytes`` through
:class:`~agentshark.http.h3.H3Connection` and an exchange assembler. The invariant: only QUIC
events, HTTP events, exchanges and Diagnostics come out, never an exception.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, get_args

from agentshark.errors import Diagnostic
from agentshark.http.events import HttpEvent
from agentshark.http.exchange import ExchangeAssembler
from agentshark.http.h3 import H3Connection
from agentshark.model import Exchange
from agentshark.net.segment import UdpDatagram
from agentshark.quic.demux import QuicDemux
from agentshark.quic.events import QuicEvent, QuicStreamData
from agentshark.tls.keylog import KeyLog

__all__ = ["datagram_records", "stream_records", "t_h3", "t_quic"]

QUIC_EVENTS: tuple[type, ...] = get_args(QuicEvent)
HTTP_EVENTS: tuple[type, ...] = get_args(HttpEvent)
_CLIENT, _SERVER = (b"\x7f\x00\x00\x01", 50000), (b"\x7f\x00\x00\x02", 443)


def _records(blob: bytes, head: struct.Struct) -> Iterator[tuple[tuple[int, ...], bytes]]:
    pos = 0
    while pos + head.size <= len(blob):
        fields = head.unpack_from(blob, pos)
        pos += head.size
        size = fields[-1]
        yield fields[:-1], blob[pos : pos + size]
        pos += size


_DATAGRAM = struct.Struct("!BH")
_STREAM = struct.Struct("!BBBH")


def datagram_records(datagrams: list[tuple[int, bytes]]) -> bytes:
    return b"".join(_DATAGRAM.pack(d, len(data)) + data for d, data in datagrams)


def stream_records(events: list[QuicStreamData]) -> bytes:
    return b"".join(
        _STREAM.pack(ev.direction, ev.stream_id & 0xFF, ev.fin, len(ev.data)) + ev.data
        for ev in events
    )


def _only(items: list[Any], types: tuple[type, ...], where: str) -> list[Any]:
    from tests.fuzz.targets import only

    return only(items, types, where)


def t_quic(parts: list[bytes]) -> list[Any]:
    keylog = KeyLog()
    keylog.add_text(parts[0], "fuzz keys")
    demux = QuicDemux(keylog, "fuzz", "q")
    out: list[Any] = []
    for n, ((d,), data) in enumerate(_records(parts[1], _DATAGRAM)):
        src, dst = (_CLIENT, _SERVER) if d & 1 == 0 else (_SERVER, _CLIENT)
        dg = UdpDatagram(float(n), src[0], src[1], dst[0], dst[1], data, 0, n)
        found = demux.feed(dg)
        if found is not None:
            out.extend(found[1])
    for flow in demux.flows:
        out.extend(flow.quic.close(0.0))
        _only(flow.quic.diagnostics, (Diagnostic,), "QuicConnection.diagnostics")
        flow.quic.info.to_json()
    _only([m.diagnostic() for m in demux.midway.found], (Diagnostic,), "MidwayPaths")
    return _only(out, QUIC_EVENTS, "QuicDemux")


def t_h3(parts: list[bytes]) -> list[Any]:
    h3 = H3Connection()
    assembler = ExchangeAssembler(
        source=0,
        connection="q1",
        transport="h3",
        scheme="https",
        server="127.0.0.1:443",
        next_id=iter(f"e{i}" for i in range(1, 1 << 30)).__next__,
        location="fuzz",
    )
    events: list[Any] = []
    out: list[Any] = []
    for n, ((d, sid, fin), data) in enumerate(_records(parts[0], _STREAM)):
        ev = QuicStreamData(
            stream_id=sid, direction=d & 1, data=data, offset=0, fin=bool(fin), ts=float(n)
        )
        got = h3.feed(ev)
        events += got
        out += assembler.handle(got)
    got = h3.close(1e6)
    events += got
    out += assembler.handle(got)
    out += assembler.close()
    _only(events, HTTP_EVENTS, "H3Connection")
    _only(h3.diagnostics, (Diagnostic,), "H3Connection.diagnostics")
    return _only(out, (Exchange,), "ExchangeAssembler")
