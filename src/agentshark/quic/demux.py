"""UDP datagrams -> QUIC connections, by connection ID (RFC 9000 §5.1, §5.2).

A datagram belongs to a connection by the DCID of its first packet: the client's first
Initial names a DCID nobody issued yet and opens a connection; after that, each endpoint's
SCID (and every CID it issues later in NEW_CONNECTION_ID) is the DCID of the packets sent to
it, so a CID says both the connection and the direction, whatever the addresses (a client
that migrates to a new address keeps its connection, §9). Short headers do not carry the
DCID's length: the lengths of the CIDs known are tried. A zero-length CID (some clients use
none) leaves only the address pair, which is looked up then.

A datagram of no known connection that does not start with an Initial has no ClientHello to
find its secrets by: the key log's sessions are tried on it (:mod:`agentshark.quic.trial`, on
the first ``TRIAL_DATAGRAMS`` datagrams of each path and direction, when a key log is
given); the one whose secret opens it makes a connection seen mid-way but read (its sender
is the client when the client's secret opened it). Otherwise it goes to
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
from agentshark.quic.midway import MAX_PATHS, MidwayPaths
from agentshark.quic.trial import Opened, Trial
from agentshark.quic.wire import KNOWN_VERSIONS, VERSION_2, WireError, parse_long_header
from agentshark.tls.keylog import KeyLog

__all__ = ["MIDWAY", "TRIAL_DATAGRAMS", "QuicDemux", "QuicFlow"]

_Path = tuple[bytes, int, bytes, int]
TRIAL_DATAGRAMS = 8  # datagrams per path and direction the key log's sessions are tried on


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
        self._trial = Trial(keylog)
        # datagrams first left to be counted as UDP, read after all by a connection opened
        # by trial (the packet decoder's count is that much too high)
        self.reclaimed = 0
        self._tried: dict[_Path, int] = {}  # datagrams of a path the sessions were tried on

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
        events: list[QuicEvent] = []
        if found is None:
            src, dst = (_address(dg.src), dg.sport), (_address(dg.dst), dg.dport)
            if not self.midway.datagram(src, dst, data, dg.ts, hold=bool(len(self._keylog))):
                return None
            found = self._try_open(data, path, dg.ts, events) if len(self._keylog) else None
            if found is None:
                return MIDWAY
        flow, d = found
        self._datagram(flow, d, data, dg.ts, dg.missing, events)
        return flow, events

    def _datagram(
        self, flow: QuicFlow, d: int, data: bytes, ts: float, missing: int, out: list[QuicEvent]
    ) -> None:
        conn = flow.conn
        conn.last_ts = ts
        conn.bytes[d] += len(data)
        conn.packets[d] += 1
        out.extend(flow.quic.datagram(d, data, ts, missing))
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
        if len(self._keylog) and not self._client_initial(data, version, dcid):
            self.unknown += 1  # a server's Initial: the capture starts after the client's
            return None
        return self._open(dcid, version, path, ts)

    def _client_initial(self, data: bytes, version: int, dcid: bytes) -> bool:
        """Is the datagram's first packet a client's first Initial (it opens with keys from
        its own DCID)? Asked only with a key log, which can read a connection whose first
        Initial is missing (without one the answer changes nothing that can be read)."""
        try:
            hdr = parse_long_header(data, 0)
        except WireError:
            return True
        return self._trial.initial_opens(data[: hdr.end], hdr.pn_offset, dcid, version)

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

    def _try_open(
        self, data: bytes, path: _Path, ts: float, out: list[QuicEvent]
    ) -> tuple[QuicFlow, int] | None:
        """A datagram of a path shown QUIC mid-way, opened by a key log session (see the
        module docstring): its new connection, and the datagram's direction in it; the
        events of the path's datagrams held before it go to ``out``."""
        tried = self._tried.get(path, 0)
        if tried >= TRIAL_DATAGRAMS:
            return None
        if len(self._tried) >= MAX_PATHS and path not in self._tried:
            return None
        self._tried[path] = tried + 1
        opened: Opened | None = None
        dcid = b""
        pos = 0
        while pos < len(data) and data[pos] & 0x80:  # long headers: find a Handshake packet
            try:
                hdr = parse_long_header(data, pos)
            except WireError:
                return None
            if hdr.kind == "handshake":
                dcid = hdr.dcid
                for side in (0, 1):
                    pkt = data[pos : hdr.end]
                    opened = self._trial.handshake(pkt, hdr.pn_offset - pos, hdr.version, side)
                    if opened is not None:
                        break
                break
            if hdr.kind is None or hdr.kind == "retry":
                return None
            pos = hdr.end
        if not data[0] & 0x80:  # a short header: the whole datagram is one packet
            opened = self._trial.short(data)
            if opened is not None:
                dcid = data[1 : 1 + opened.cid_len]
        if opened is None:
            return None
        return self._open_midway(opened, dcid, path, ts, out)

    def _open_midway(
        self, opened: Opened, dcid: bytes, path: _Path, ts: float, out: list[QuicEvent]
    ) -> tuple[QuicFlow, int]:
        src, sport, dst, dport = path
        if opened.side == 1:  # the server's secret opened it: the sender is the server
            src, sport, dst, dport = dst, dport, src, sport
        ends = ((_address(src), sport), (_address(dst), dport))
        held, counted, cid = self.midway.forget(*ends)  # its datagrams before this one
        cid = cid or f"{self._prefix}{self._number()}"
        conn = Connection(
            id=cid,
            client=ends[0],
            server=ends[1],
            serial=0,
            handshake_seen=False,
            first_ts=ts,
            last_ts=ts,
        )
        location = f"{self._name} {cid}"
        quic = QuicConnection.opened_midway(
            self._keylog, opened, self._trial, opened.side, location, untaken=counted - len(held)
        )
        flow = QuicFlow(conn, quic)
        self.flows.append(flow)
        self._add_cid(dcid, flow, opened.side)
        client_path = (src, sport, dst, dport)
        self._by_path.setdefault(client_path, (flow, 0))
        self._by_path.setdefault((dst, dport, src, sport), (flow, 1))
        for sender, data, when, taken in held[:-1]:  # the last one held is this datagram
            self._datagram(flow, 0 if sender == ends[0] else 1, data, when, 0, out)
            self.reclaimed += not taken
        return flow, opened.side

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
