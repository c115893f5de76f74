"""QUIC connections of one capture, above UDP: QUIC -> HTTP/3 -> Exchange objects.

The packet decoder hands every UDP datagram to :meth:`QuicSessions.datagram`, which says
whether it was QUIC (:mod:`agentshark.quic.demux` decides); the exchanges it finishes wait in
``ready`` for the packet loop to hand out. A connection whose ALPN is ``h3`` (or, when the
server's EncryptedExtensions were not read, one that offered ``h3``) is read as HTTP/3
(:mod:`agentshark.http.h3`); its exchanges have the transport ``h3``. A WebSocket over an
extended CONNECT (RFC 9220) is read by the WebSocket stage as over HTTP/2; an exchange's
HTTP datagrams are vouched for only while no 1-RTT packet number is missing. Datagrams of a
connection seen mid-way (:mod:`agentshark.quic.midway`) give a report of their own. At the
end of the capture each connection gives a report: protocol ``h3`` or ``quic``, and in
``tls`` the handshake facts with a ``quic`` object (version, packets, what could not be
decrypted and why).
"""

from __future__ import annotations

from collections.abc import Callable

from agentshark.errors import Diagnostic
from agentshark.http.exchange import ExchangeAssembler
from agentshark.http.h3 import H3Connection, error_name
from agentshark.model import Exchange
from agentshark.net.events import format_endpoint
from agentshark.net.segment import UdpDatagram
from agentshark.pipeline.reports import ConnectionReport
from agentshark.pipeline.websocket import StreamTunnels, WsProgress
from agentshark.quic.demux import QuicDemux, QuicFlow
from agentshark.quic.events import QuicClosed
from agentshark.quic.keys import APP, HANDSHAKE, INITIAL
from agentshark.quic.midway import Midway
from agentshark.quic.wire import version_name
from agentshark.tls.keylog import KeyLog

__all__ = ["QuicSessions"]

_SPACES = {INITIAL: "initial", HANDSHAKE: "handshake", APP: "1rtt"}


class _Session:
    __slots__ = ("assembler", "exchanges", "h3", "tunnels", "undecided")

    def __init__(self) -> None:
        self.h3: H3Connection | None = None
        self.assembler: ExchangeAssembler | None = None
        self.exchanges = 0
        self.undecided = True
        self.tunnels = StreamTunnels(None)  # WebSocket sessions on HTTP/3 streams


class QuicSessions:
    """Every QUIC connection of one capture; ``ready`` holds finished exchanges."""

    def __init__(
        self,
        keylog: KeyLog,
        source: int,
        name: str,
        id_prefix: str,
        next_id: Callable[[], str],
        *,
        progress: bool = False,
    ) -> None:
        """``progress``: open WebSocket sessions put their progress in ``ready`` too
        (:class:`~agentshark.pipeline.websocket.WsProgress`, for the call stage)."""
        self._demux = QuicDemux(keylog, name, id_prefix)
        self._source = source
        self._next_id = next_id
        self._sessions: dict[str, _Session] = {}
        self.ready: list[Exchange | WsProgress] = []
        self._outbox = self.ready.append if progress else None
        self.last_ts = 0.0

    def datagram(self, dg: UdpDatagram) -> bool:
        """Take a datagram if it is QUIC (the packet decoder's ``udp`` callable)."""
        found = self._demux.feed(dg)
        if found is None:
            return False
        self.last_ts = dg.ts
        flow, events = found
        if flow is None or not events:
            return True
        s = self._sessions.get(flow.conn.id)
        if s is None:
            s = self._sessions[flow.conn.id] = _Session()
        for ev in events:
            if type(ev) is QuicClosed:
                continue
            if s.undecided:
                self._decide(flow, s)
            if s.h3 is not None and s.assembler is not None:
                http = s.h3.feed(ev)
                if http:
                    done = _datagrams(flow, s.tunnels.ended(s.assembler.handle(http)))
                    s.exchanges += len(done)
                    self.ready.extend(done)
        return True

    def _decide(self, flow: QuicFlow, s: _Session) -> None:
        s.undecided = False
        info = flow.quic.info
        alpn = info.alpn
        offered = any(a.startswith("h3") for a in info.alpn_offered)
        # a connection opened mid-way by trial has no handshake to say: read as HTTP/3, the
        # one application protocol read over QUIC (its report says the ALPN is unknown)
        if alpn == "h3" or (alpn is None and (offered or flow.quic.midway)):
            s.h3 = H3Connection(midway=flow.quic.app_midway)
            s.assembler = ExchangeAssembler(
                source=self._source,
                connection=flow.conn.id,
                transport="h3",
                scheme="https",
                server=format_endpoint(flow.conn.server),
                next_id=self._next_id,
                location=flow.quic.location,
                tls=info,
            )
            s.tunnels = StreamTunnels(self._outbox)
            s.assembler.on_tunnel = s.tunnels.open

    def close(self) -> list[Exchange | WsProgress | ConnectionReport]:
        """The capture ended: what ``ready`` still holds, then every connection's last
        exchanges (each after the progress of its session) and its report."""
        out: list[Exchange | WsProgress | ConnectionReport] = [*self.ready]
        self.ready.clear()
        ts = self.last_ts
        for flow in self._demux.flows:
            s = self._sessions.get(flow.conn.id) or _Session()
            events = flow.quic.close(ts)
            if s.undecided and events:
                self._decide(flow, s)
            diagnostics: list[Diagnostic] = []
            if s.h3 is not None and s.assembler is not None:
                http = [e for ev in events for e in s.h3.feed(ev)]
                http.extend(s.h3.close(ts))
                done = s.tunnels.ended([*s.assembler.handle(http), *s.assembler.close()])
                done = _datagrams(flow, done)
                s.exchanges += len(done)
                out.extend(self.ready)  # the progress of its sessions, read just now
                self.ready.clear()
                out.extend(done)
                diagnostics.extend(s.h3.diagnostics)
                diagnostics.extend(s.assembler.diagnostics)
            out.append(self._report(flow, s, diagnostics))
        out.extend(self._midway_report(m) for m in self._demux.midway.found)
        return out

    def _midway_report(self, m: Midway) -> ConnectionReport:
        """A connection seen mid-way: what its datagrams show, and why no more."""
        c = m.conn
        return ConnectionReport(
            connection=c,
            source=self._source,
            protocol="quic",
            exchanges=0,
            diagnostics=[m.diagnostic()],
            tls={
                "quic": {
                    "midway": True,
                    "versions_seen": sorted(version_name(v) for v in m.versions),
                    "packets": {"client": c.packets[0], "server": c.packets[1]},
                }
            },
        )

    @property
    def connections(self) -> int:
        return len(self._demux.flows) + len(self._demux.midway.found)

    @property
    def reclaimed(self) -> int:
        """UDP datagrams the packet decoder counted that a QUIC connection read after all."""
        return self._demux.reclaimed

    @property
    def stats(self) -> dict[str, int]:
        """Counters for the source report (none for a capture without QUIC)."""
        out = {"quic_connections": len(self._demux.flows)} if self._demux.flows else {}
        if self._demux.midway.found:
            out["quic_midway_connections"] = len(self._demux.midway.found)
        if self._demux.unknown:
            out["quic_unknown_connection_datagrams"] = self._demux.unknown
        return out

    def _report(self, flow: QuicFlow, s: _Session, extra: list[Diagnostic]) -> ConnectionReport:
        q = flow.quic
        diagnostics = [*q.diagnostics, *extra]
        closed = q.closed
        if closed is not None:
            app = closed.frame_type is None
            name = error_name(closed.error_code) if app else f"0x{closed.error_code:x}"
            ok = closed.error_code in ((0x100, 0) if app else (0,))
            diagnostics.append(
                Diagnostic(
                    code="quic.closed",
                    severity="info" if ok else "warning",
                    location=q.location,
                    message=f"the {'client' if closed.direction == 0 else 'server'} closed the "
                    f"connection "
                    f"({'application' if app else 'transport'} error {name}"
                    f"{': ' + closed.reason if closed.reason else ''})",
                )
            )
        tls = q.info.to_json()
        tls["quic"] = {
            "version": version_name(q.version),
            "packets": {"client": q.packets[0], "server": q.packets[1]},
            "decrypted": {"client": q.opened[0], "server": q.opened[1]},
            "not_decrypted": {
                f"{_SPACES[space]}_{'client' if d == 0 else 'server'}": n
                for (space, d), n in sorted(q.unopened.items())
            },
            "retries": q.retries,
            "truncated_datagrams": q.truncated,
            "duplicate_packets": q.duplicates,
            "datagram_frames": q.datagrams,
            "version_negotiation": None
            if q.negotiation is None
            else {
                "first_version": version_name(q.negotiation[0]),
                "offered": [version_name(v) for v in q.negotiation[1]],
            },
        }
        return ConnectionReport(
            connection=flow.conn,
            source=self._source,
            protocol="h3" if s.h3 is not None else "quic",
            exchanges=s.exchanges,
            diagnostics=diagnostics,
            tls=tls,
        )


def _datagrams(flow: QuicFlow, done: list[Exchange]) -> list[Exchange]:
    """HTTP datagrams are never retransmitted (RFC 9221 §5): one whose packet the capture
    lost is gone without a trace. An exchange with datagrams, on a connection with 1-RTT
    packet numbers missing since it began, cannot vouch for its list: its session is said
    incomplete, with the count."""
    for ex in done:
        started = ex.started
        if not ex.datagrams or started is None:
            continue
        missing = flow.quic.holes_since(started)
        if missing:
            ex.session_complete = False
            ex.diagnostics.append(
                Diagnostic(
                    code="h3.datagrams_unsure",
                    severity="warning",
                    location=f"{ex.id} datagrams",
                    message=f"{missing} QUIC packets of the connection are missing from the "
                    "capture since this exchange began: HTTP datagrams they held are lost "
                    "without a trace (DATAGRAM frames are never sent again)",
                )
            )
    return done
