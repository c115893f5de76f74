"""UDP datagrams -> QUIC connections, by connection ID (RFC 9000 §5.1, §5.2).

A datagram belongs to a connection by the DCID of its first packet: the client's first
Initial names a DCID nobody issued yet and opens a connection; after that, each endpoint's
SCID (and every CID it issues later in NEW_CONNECTION_ID) is the DCID of the packets sent to
it, so a CID says both the connection and the direction, whatever the addresses (a client
that migrates to a new address keeps its connection, §9). Short headers do not carry the
DCID's length: the lengths of the CIDs known are tried. A zero-length CID (some clients use
none) leaves only the address pair, which is looked up then.

A datagram of no known connection that does not start with an Initial cannot be decrypted
(without its handshake no key log entry can be found for it): it goes to
:mod:`agentshark.quic.midway`, which takes it when its path shows itself QUIC (a long
header of a known version, a connection ID repeated) and reports a connection seen mid-way;
else the packet decoder counts it as UDP (random UDP can look like a short header).
"""

from __future__ import annotations

import socket

from agentshark.net.events import Connection
from agentshark.net.segment import UdpDatagram
from agentshark.quic.connection import QuicConnection
from agentshark.quic.events import QuicEvent
from agentshark.quic.midway import MidwayPaths
from agentshark.quic.wire import KNOWN_VERSIONS, VERSION_2
from agentshark.tls.keylog import KeyLog

__all__ = ["MIDWAY", "QuicDemux", "QuicFlow"]

_Path = tuple[bytes, int, bytes, int]


MIDWAY: tuple[None, list[QuicEvent]] = (None, [])


class QuicFlow:
    """One connection found in the datagrams: its QUIC state and its report identity."""

    __slots__ = ("conn", "quic")

    def __init__(self, conn: Connection, quic: QuicConnection) -> None:
        self.conn = conn
        self.quic = quic


class QuicDemux:
    """Finds each datagram's connection and feeds it; ``flows`` lists them in order."""

    def __init__(self, keylog: KeyLog, source_name: str, id_prefix: str) -> None:
        self._keylog = keylog
        self._name = source_name
        self._prefix = id_prefix
        self._by_cid: dict[bytes, tuple[QuicFlow, int]] = {}
        self._by_path: dict[_Path, tuple[QuicFlow, int]] = {}
        self._lengths: list[int] = []
        self.flows: list[QuicFlow] = []
        self.unknown = 0  # long-header datagrams of connections whose start was not captured
        self._numbers = 0  # connection numbers, shared with the connections seen mid-way
        self.midway = MidwayPaths(id_prefix, self._number)

    def feed(self, dg: UdpDatagram) -> tuple[QuicFlow | None, list[QuicEvent]] | None:
        """The datagram's connection and its events, or None when it is not QUIC we read;
        ``MIDWAY`` (no connection, no events) for one of a connection seen mid-way."""
        data = dg.payload
        if len(data) < 7 or (not data[0] & 0x40 and not data[0] & 0x80):
            return None
        path = (dg.src, dg.sport, dg.dst, dg.dport)
        if data[0] & 0x80:
            found = self._long(data, path, dg.ts)
        else:
            found = self._short(data, path)
        if found is None:
            src, dst = (_address(dg.src), dg.sport), (_address(dg.dst), dg.dport)
            if self.midway.datagram(src, dst, data, dg.ts):
                return MIDWAY
            return None
        flow, d = found
        conn = flow.conn
        conn.last_ts = dg.ts
        conn.bytes[d] += len(data)
        conn.packets[d] += 1
        events = flow.quic.datagram(d, data, dg.ts, dg.missing)
        if data[0] & 0x80:
            scid = (
                data[7 + data[5] : 7 + data[5] + data[6 + data[5]]]
                if 6 + data[5] < len(data)
                else b""
            )
            if scid:
                self._add_cid(scid, flow, 1 - d)
        for cid, direction in flow.quic.new_cids:
            self._add_cid(cid, flow, direction)
        flow.quic.new_cids.clear()
        return flow, events

    def _long(self, data: bytes, path: _Path, ts: float) -> tuple[QuicFlow, int] | None:
        version = int.from_bytes(data[1:5], "big")
        if version and version not in KNOWN_VERSIONS:
            return None
        dcid = data[6 : 6 + data[5]]
        found = self._by_cid.get(dcid) if dcid else self._by_path.get(path)
        if found is not None:
            return found
        kind = (data[0] >> 4) & 3
        if version == 0 or kind != (1 if version == VERSION_2 else 0):
            self.unknown += 1
            return None
        return self._open(dcid, version, path, ts)

    def _short(self, data: bytes, path: _Path) -> tuple[QuicFlow, int] | None:
        by_cid = self._by_cid
        for size in self._lengths:
            found = by_cid.get(data[1 : 1 + size])
            if found is not None:
                return found
        return self._by_path.get(path)

    def _open(self, odcid: bytes, version: int, path: _Path, ts: float) -> tuple[QuicFlow, int]:
        src, sport, dst, dport = path
        cid = f"{self._prefix}{self._number()}"
        conn = Connection(
            id=cid,
            client=(_address(src), sport),
            server=(_address(dst), dport),
            serial=0,
            handshake_seen=True,
            first_ts=ts,
            last_ts=ts,
        )
        flow = QuicFlow(conn, QuicConnection(self._keylog, odcid, version, f"{self._name} {cid}"))
        self.flows.append(flow)
        self._add_cid(odcid, flow, 0)
        self._by_path.setdefault(path, (flow, 0))
        self._by_path.setdefault((dst, dport, src, sport), (flow, 1))
        return flow, 0

    def _number(self) -> int:
        self._numbers += 1
        return self._numbers

    def _add_cid(self, cid: bytes, flow: QuicFlow, direction: int) -> None:
        if not cid:
            return
        self._by_cid[cid] = (flow, direction)
        if len(cid) not in self._lengths:
            self._lengths.append(len(cid))


def _address(packed: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET if len(packed) == 4 else socket.AF_INET6, packed)
