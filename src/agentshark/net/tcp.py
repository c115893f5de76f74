"""TCP reassembly: :class:`~agentshark.net.segment.TcpSegment` in, :data:`TcpEvent` out.

:class:`TcpReassembler` is a passive observer of both directions of every connection. For each
direction it delivers the payload in sequence order as ``StreamData`` (with the timestamp of the
segment that carried it and the byte ``offset`` in the direction), marks every hole the capture
cannot fill as a ``StreamGap``, and says how the direction ended (``StreamEnded``). It is sans-I/O:
``feed(segment)`` and ``close()`` return events; nothing reads files, clocks or prints.
Each direction keeps its bytes in a :class:`~agentshark.net.streambuf.StreamBuffer` (sequence
offsets, out-of-order pieces, overlap comparison); this module owns the connection table, the
fast path and the opening and closing of connections, and
:mod:`agentshark.net.tcp_direction` turns what one direction's buffer reports into events and
diagnostics.

Policies (what a passive observer cannot know, it decides once and records):

Identity
    A connection is its two endpoints plus a ``serial`` counting reuses of the same 4-tuple within
    the capture (0 for the first use). Ids are ``f"{id_prefix}{n}"``, numbered from 1 in order of
    first appearance. State is keyed by the raw ``(src, sport, dst, dport)`` tuple of each
    direction, so the common case costs one dict lookup.

Roles
    The sender of a SYN without ACK is the client, the sender of a SYN+ACK the server
    (``handshake_seen=True``). A connection first seen mid-stream (``handshake_seen=False``)
    guesses by port: a port below 1024 or in :data:`SERVICE_PORTS` is the server's, else the lower
    port is. ``Connection.swap_roles()`` may be called at any time: directions are looked up from
    ``Connection.client`` whenever an event is emitted, so later events follow the new roles.

Sequence space
    RFC 9293 §3.4: "all arithmetic dealing with sequence numbers must be performed modulo 2^32";
    each direction maps sequence numbers to a 64-bit byte offset from its first byte (the byte
    after the SYN; when the capture lost the SYN+ACK, the byte the client's handshake ACK
    acknowledges; else the first captured one). Comparisons take the
    nearer of the two ways round the circle. "The SYN is considered to occur before the first
    actual data octet of the segment in which it occurs, while the FIN is considered to occur
    after the last actual data octet": each consumes one sequence number and no offset.
    Bytes sent before the first captured segment of a direction cannot be recovered.

Retransmissions and overlaps
    The first captured copy of a byte wins. A later copy is compared with the buffered
    out-of-order data and with the last delivered segments of the direction (references, about
    64 KiB); when the bytes differ, the connection gets a ``tcp.overlap_mismatch`` diagnostic.
    Every diagnostic code is reported at most three times per connection, then counted in one
    summary when the connection closes. A one-byte segment just below the next expected byte is a
    keep-alive probe, whose "one garbage octet" (RFC 9293 §3.8.4) is not compared.

Gaps (never papered over, never given up on a hint alone)
    A hole is given up as a ``StreamGap`` once the capture shows it will not be filled.

    (a) An ACK from the peer beyond the hole (Wireshark's "ACKed unseen segment") proves the
    bytes were sent and received, but not that the capture lost them: captures show ACKs before
    the data they acknowledge (timestamps, interfaces merged, the kernel's capture order). So it
    is a hint: the hole stays open up to the acknowledged point (``hint``) and late data fills it
    as any out-of-order data would. The hole below the hint is given up when the capture holds a
    segment of the same direction (data or not) that starts at or beyond the acknowledged point
    (the sender went on after the missing bytes), or the direction's FIN: whichever was captured
    first, before or after the ACK. A capture that also reorders the missing segment behind its
    sender's later segments loses it; nothing short of waiting for ever could tell.
    (b) The out-of-order bytes buffered for a direction exceed ``max_buffered`` (each piece also
    counts 64 bytes of bookkeeping): ``tcp.buffer_overflow``, then the hole before the lowest
    buffered piece is given up. (c) The direction's FIN was seen and the other direction has
    ended, or a RST, an eviction or ``close()`` ends the connection; the bytes up to the last
    acknowledged point count as the gap. A segment truncated by the capture's snap length
    delivers its captured bytes, then a gap of the ``missing`` bytes. Data arriving for a range
    already given up is a retransmission like any other. ``Connection.gaps`` and the
    ``gap_bytes`` stat count only bytes given up.

Causal order
    A data segment that acknowledges bytes of the other direction not delivered yet was sent
    after them: it waits (``wait``, with what follows it in its direction) until they are
    delivered or given up, so consumers see a request before the response that acknowledges it
    even where the capture shows the response first. Only one direction of a connection waits at
    a time (a capture whose segments acknowledge each other crosswise cannot be put in causal
    order); the waiting data counts against ``max_buffered``, and overflowing it gives the other
    direction's hole up. Every ``StreamData`` says what its segment acknowledged (``acked``).

Order
    Within one segment the acknowledgment is applied first (the bytes it acknowledges were sent
    before the segment), then its data, its FIN, its RST. Without loss or reordering every
    segment takes the fast path (one dict lookup, no buffering); holes, hints and waits put a
    direction on the slow path until they are resolved.

Ends
    FIN: ``StreamEnded(reason="fin")`` once every byte before it is delivered or given up;
    bytes beyond a FIN are dropped (counted). RST: every direction still open flushes and ends
    with ``"rst"``; its payload is not stream data (RFC 9293 §3.5.3 lets a RST carry diagnostic
    text) and any RST for a known connection is believed. When both directions have ended the
    connection is closed (``ConnectionClosed``) and its state dropped: memory grows with open
    connections, not with the capture. The 4-tuples of recently closed connections are kept
    (bounded, for twice the 2-minute Maximum Segment Lifetime of RFC 9293 §3.4.2) so trailing
    ACKs, FINs and retransmissions are absorbed instead of opening bogus connections; a new SYN,
    or data whose sequence number is far from where the old connection stopped, opens a new
    connection with the next serial. A SYN with a new ISN on an open connection replaces it
    (``tcp.tuple_reused``; the old one ends with ``"evicted"``). Segments without payload never open
    a connection, except a SYN.

Limits
    More than ``max_connections`` open connections evicts the least recently active one (its
    events are flushed as by ``close()``, reason ``"evicted"``, diagnostic ``tcp.evicted``).

Capture-wide problems go to :attr:`TcpReassembler.diagnostics`, per-connection ones to
``Connection.diagnostics``; :attr:`TcpReassembler.stats` counts what was absorbed or dropped.
"""

from __future__ import annotations

import heapq
import socket

from agentshark.errors import Diagnostic
from agentshark.net.events import (
    Connection,
    ConnectionClosed,
    ConnectionOpened,
    EndReason,
    StreamData,
    TcpEvent,
)
from agentshark.net.segment import ACK, FIN, RST, SYN, TcpSegment
from agentshark.net.streambuf import (
    PIECE_COST,
    RECENT_LIMIT,
    SEQ_HALF,
    SEQ_MASK,
)
from agentshark.net.tcp_direction import (
    NOTE_BUDGET,
    DirectionRules,
    Flow,
    Half,
    Key,
    direction_of,
    refresh_holds,
)

__all__ = ["SERVICE_PORTS", "STAT_KEYS", "TcpReassembler"]

SERVICE_PORTS = frozenset(
    {80, 443, 1234, 3000, 4317, 4318, 5000, 7860, 8000, 8001, 8008, 8080, 8081, 8443, 8888, 9000}
    | {11434, 50051}
)
"""Ports taken as the server side of a connection seen without its handshake (besides < 1024)."""

STAT_KEYS = (
    "connections",  # connections opened
    "retransmitted_bytes",  # payload bytes captured more than once
    "overlap_mismatches",  # later copies that differed from the first
    "gap_bytes",  # bytes given up as StreamGap
    "beyond_fin_bytes",  # payload after a direction's FIN, dropped
    "keepalives",  # keep-alive probes carrying a garbage octet
    "buffer_overflows",  # times a direction's out-of-order buffer exceeded max_buffered
    "evictions",  # connections evicted by max_connections
    "tuple_reuses",  # open connections replaced by a SYN with a new ISN
    "ignored_unknown",  # segments on unknown tuples that cannot open a connection
    "ignored_after_close",  # segments absorbed by a recently closed tuple
)

_CLOSED_TTL = 240.0  # 2 * MSL, RFC 9293 §3.4.2
_MAX_CLOSED = 65_536  # recently closed 4-tuples remembered
_STRAGGLER_BEHIND = 1 << 30  # a segment this far before where a closed direction stopped ...
_STRAGGLER_AHEAD = 1 << 16  # ... or this far after it belongs to the closed connection

_FLUSH_REASONS: dict[EndReason, str] = {
    "capture_end": "the capture ended before they came",
    "evicted": "the connection was ended early",
    "fin": "both directions ended without them",
    "rst": "the connection was reset before they came",
}


class TcpReassembler(DirectionRules):
    """Reassemble the TCP connections of one capture, segment by segment (see the module doc)."""

    def __init__(
        self,
        *,
        source_name: str = "",
        max_buffered: int = 8 << 20,
        max_connections: int = 100_000,
        id_prefix: str = "c",
    ) -> None:
        self.source_name = source_name
        self.max_buffered = max_buffered
        self.max_connections = max(1, max_connections)
        self.id_prefix = id_prefix
        self.id_suffix = ""  # after the number (a shared run's workers mark their ids)
        self.diagnostics: list[Diagnostic] = []
        self.stats: dict[str, int] = dict.fromkeys(STAT_KEYS, 0)
        self._halves: dict[Key, Half] = {}
        self._flows: dict[int, Flow] = {}  # open connections in order of appearance
        self._lru: list[tuple[float, int, Flow]] = []  # lazy heap of (last_ts, no, flow)
        self._closed: dict[Key, tuple[float, int, int]] = {}  # key -> (ts, serial, nxt)
        self._count = 0

    @property
    def open_connections(self) -> int:
        """How many connections are open (their state is held) right now."""
        return len(self._flows)

    # -- input ---------------------------------------------------------------------------------

    def feed(self, seg: TcpSegment) -> list[TcpEvent]:
        """Take one segment; return the events it makes happen (often none)."""
        ts, src, sport, dst, dport, seq, ack, flags, payload, missing, packet = seg
        h = self._halves.get((src, sport, dst, dport))
        if h is None or flags & 0x07 or missing:  # unknown tuple, SYN/FIN/RST or truncated
            return self._feed_slow(seg, h)
        # Fast path: data or a bare ACK on a known connection.
        conn = h.conn
        conn.last_ts = ts
        ep = h.ep
        d = 0 if conn.client is ep else 1 if conn.server is ep else direction_of(h)
        conn.packets[d] += 1
        acked = -1
        if flags & ACK:
            p = h.peer
            nxt = p.nxt
            if ack == nxt:
                acked = p.off
            elif nxt < 0:
                acked = _handshake_ack(h, seq, ack, payload)
            elif nxt >= 0:
                if (ack - nxt) & SEQ_MASK < SEQ_HALF and not p.ended:
                    return self._ack_then_data(h, seq, ack, payload, ts, packet)
                acked = p.off - ((nxt - ack) & SEQ_MASK)  # behind what was delivered
                if acked < 0:
                    acked = -1
        if h.nxt < 0:
            h.start(seq)
        if not payload:
            return [] if h.fast else self._bare(h, seq, ts, packet)
        if seq != h.nxt or not h.fast:
            out: list[TcpEvent] = []
            self._data(h, h.offset(seq), payload, 0, ts, packet, out, acked)
            return out
        n = len(payload)
        off = h.off
        h.off = off + n
        h.nxt = (seq + n) & SEQ_MASK
        conn.bytes[d] += n
        h.recent.append((off, payload))
        h.recent_cost += n + PIECE_COST
        if h.recent_cost > RECENT_LIMIT:
            h.trim_recent()
        return [
            StreamData(connection=conn, direction=d, data=payload, ts=ts, offset=off, acked=acked)
        ]

    def _ack_then_data(
        self, h: Half, seq: int, ack: int, payload: bytes, ts: float, packet: int
    ) -> list[TcpEvent]:
        """A segment whose ACK goes beyond what the capture delivered of the other direction.

        The acknowledged bytes were sent before this segment: they are a hint for the peer's
        hole, and this segment's data waits for them (causal order, see the module doc).
        """
        out: list[TcpEvent] = []
        p = h.peer
        target = p.acked_end(ack)
        self._hint(p, target, ts, packet, out)
        if h.nxt < 0:
            h.start(seq)
        if h.flow.dead:
            return out
        if not payload:
            if h.hold:
                self._moved_on(h, h.offset(seq), ts, packet, out)
            return out
        if target > p.off and h.wait < 0 and p.wait < 0 and not p.ended and not h.ended:
            h.wait = target
            refresh_holds(h)
        self._data(h, h.offset(seq), payload, 0, ts, packet, out, target)
        return out

    def _bare(self, h: Half, seq: int, ts: float, packet: int) -> list[TcpEvent]:
        """A segment without payload on a direction off the fast path: evidence for a hint."""
        out: list[TcpEvent] = []
        if h.hold and not h.ended:
            self._moved_on(h, h.offset(seq), ts, packet, out)
        return out

    def close(self, ts: float | None = None) -> list[TcpEvent]:
        """End of capture: flush every open connection; ``ts`` defaults to its last activity."""
        out: list[TcpEvent] = []
        for flow in list(self._flows.values()):
            if not flow.dead:
                self._finish(flow, "capture_end", flow.conn.last_ts if ts is None else ts, out)
        self._lru.clear()
        self._closed.clear()
        return out

    def _feed_slow(self, seg: TcpSegment, h: Half | None) -> list[TcpEvent]:
        ts, _, _, _, _, seq, ack, flags, payload, missing, packet = seg
        seq &= SEQ_MASK
        missing = max(0, missing)
        out: list[TcpEvent] = []
        if h is None:
            h = self._open(seg, out, None)
            if h is None:
                return out
        elif flags & SYN and _is_new_syn(h, seq):
            old = h.flow
            self.stats["tuple_reuses"] += 1
            self._note(
                old,
                "tcp.tuple_reused",
                f"a SYN with a new initial sequence number {seq} reuses this connection's "
                "addresses and ports; the connection is taken as ended and a new one starts",
                self._where(h, packet),
            )
            self._finish(old, "evicted", ts, out)
            h = self._open(seg, out, old.conn.serial + 1)
            if h is None:  # pragma: no cover - a SYN always opens
                return out
        conn = h.conn
        conn.last_ts = ts
        conn.packets[direction_of(h)] += 1
        if missing:
            self._note(
                h.flow,
                "tcp.snaplen",
                f"the capture kept only {len(payload)} of the {len(payload) + missing} payload "
                "bytes of a segment (snap length); the rest is reported as a gap",
                self._where(h, packet),
            )
        if flags & SYN:
            if h.nxt < 0:
                h.isn = seq
                h.start(seq + 1)
            seq = (seq + 1) & SEQ_MASK  # data in a SYN (TCP Fast Open) follows it
        elif h.nxt < 0:
            h.start(seq)
        acked = -1
        if flags & ACK:  # first: what it acknowledges was sent before this segment
            p = h.peer
            if p.nxt < 0 and not flags & SYN:
                acked = _handshake_ack(h, seq, ack, payload)
            elif p.nxt >= 0:
                if not p.ended and (ack - p.nxt) & SEQ_MASK < SEQ_HALF:
                    acked = p.acked_end(ack & SEQ_MASK)
                    self._hint(p, acked, ts, packet, out)
                else:
                    acked = max(-1, p.offset(ack))
        if not flags & RST and not h.flow.dead:
            start = h.offset(seq)
            if payload or missing:
                self._data(h, start, payload, missing, ts, packet, out, acked)
            elif h.hold and not h.ended:
                self._moved_on(h, start, ts, packet, out)
            if flags & FIN and not h.flow.dead:
                self._fin(h, start + len(payload) + missing, ts, packet, out)
        if flags & RST and not h.flow.dead:
            self._reset(h, ts, out)
        return out

    # -- connections ---------------------------------------------------------------------------

    def _open(self, seg: TcpSegment, out: list[TcpEvent], serial: int | None) -> Half | None:
        """Open a connection for a segment on an unknown tuple, if it can open one."""
        ts, src, sport, dst, dport, seq, _, flags, payload, missing, _ = seg
        key = (src, sport, dst, dport)
        syn = flags & SYN
        if serial is None:
            closed = self._closed.get(key)
            if closed is not None and flags & (SYN | ACK | RST) != SYN:
                closed_ts, _, closed_nxt = closed
                if ts - closed_ts <= _CLOSED_TTL and (
                    not (payload or missing or syn)
                    or closed_nxt < 0
                    or -_STRAGGLER_BEHIND
                    <= ((seq - closed_nxt + SEQ_HALF) & SEQ_MASK) - SEQ_HALF
                    <= _STRAGGLER_AHEAD
                ):
                    self.stats["ignored_after_close"] += 1
                    return None
            if flags & RST or not (syn or payload or missing):
                self.stats["ignored_unknown"] += 1
                return None
            serial = 0 if closed is None else closed[1] + 1
        if syn:
            sender_is_client = not flags & ACK
        else:
            sender_is_client = _sender_is_client(sport, dport)
        return self._new_flow(key, sender_is_client, bool(syn), serial, ts, out)

    def _new_flow(
        self,
        key: Key,
        sender_is_client: bool,
        handshake_seen: bool,
        serial: int,
        ts: float,
        out: list[TcpEvent],
    ) -> Half:
        if len(self._flows) >= self.max_connections:
            self._evict(ts, out)
        self._count += 1
        no = self._count
        src, sport, dst, dport = key
        a = (_address(src), sport)
        b = (_address(dst), dport)
        conn = Connection(
            id=f"{self.id_prefix}{no}{self.id_suffix}",
            client=a if sender_is_client else b,
            server=b if sender_is_client else a,
            serial=serial,
            handshake_seen=handshake_seen,
            first_ts=ts,
            last_ts=ts,
        )
        flow = Flow(conn, no)
        sender = Half(flow, a, key)
        receiver = Half(flow, b, (dst, dport, src, sport))
        sender.peer = receiver
        receiver.peer = sender
        flow.halves = (sender, receiver)
        self._halves[receiver.key] = receiver
        self._halves[key] = sender  # a self-connected tuple keeps only the sender
        self._flows[no] = flow
        self.stats["connections"] += 1
        lru = self._lru
        heapq.heappush(lru, (ts, no, flow))
        if len(lru) > 2 * len(self._flows) + 64:  # drop closed flows from the heap
            lru[:] = [(f.conn.last_ts, n, f) for n, f in self._flows.items()]
            heapq.heapify(lru)
        out.append(ConnectionOpened(connection=conn))
        return sender

    def _evict(self, ts: float, out: list[TcpEvent]) -> None:
        """Evict the least recently active connection (lazy heap on ``Connection.last_ts``)."""
        lru = self._lru
        victim: Flow | None = None
        while lru:
            stamp, no, flow = lru[0]
            if flow.dead:
                heapq.heappop(lru)
            elif flow.conn.last_ts > stamp:
                heapq.heapreplace(lru, (flow.conn.last_ts, no, flow))
            else:
                heapq.heappop(lru)
                victim = flow
                break
        if victim is None:  # pragma: no cover - the heap always holds every open flow
            victim = next(iter(self._flows.values()))
        if not self.stats["evictions"]:
            self.diagnostics.append(
                Diagnostic(
                    code="tcp.evicted",
                    message=f"more than {self.max_connections} connections were open at once; "
                    "the least recently active ones were ended early (raise max_connections "
                    "to keep them)",
                    location=self.source_name,
                )
            )
        self.stats["evictions"] += 1
        conn = victim.conn
        self._note(
            victim,
            "tcp.evicted",
            f"ended early: more than {self.max_connections} connections were open",
            self._prefix() + conn.id,
        )
        self._finish(victim, "evicted", ts, out)

    def _finish(self, flow: Flow, reason: EndReason, ts: float, out: list[TcpEvent]) -> None:
        """Flush both directions, end those still open with ``reason``, close the connection."""
        halves = sorted(flow.halves, key=direction_of)
        why = _FLUSH_REASONS[reason]
        for h in halves:
            if not h.ended:
                self._flush(h, ts, out, why)
        for h in halves:
            if not flow.dead and not h.ended:
                self._end(h, reason, ts, out)

    def _drop(self, flow: Flow, ts: float, out: list[TcpEvent]) -> None:
        """Both directions ended: emit ConnectionClosed and forget the connection."""
        flow.dead = True
        conn = flow.conn
        del self._flows[flow.no]
        closed = self._closed
        for h in flow.halves:
            if self._halves.get(h.key) is h:
                del self._halves[h.key]
            closed.pop(h.key, None)
            closed[h.key] = (ts, conn.serial, h.nxt)
            h.release()
        while len(closed) > _MAX_CLOSED:
            del closed[next(iter(closed))]
        for code, count in flow.notes.items():
            if count > NOTE_BUDGET:
                conn.diagnostics.append(
                    Diagnostic(
                        code=code,
                        message=f"{count - NOTE_BUDGET} more {code} problems on this connection",
                        location=self._prefix() + conn.id,
                        severity="info",
                    )
                )
        out.append(ConnectionClosed(connection=conn, ts=ts))


def _handshake_ack(h: Half, seq: int, ack: int, payload: bytes) -> int:
    """The peer's start learned from the third segment of a handshake whose SYN+ACK the
    capture lost: a bare ACK right after this direction's SYN (``seq`` = ISN + 1, no data)
    acknowledges the peer's SYN, so the peer's first byte is ``ack`` (RFC 9293 §3.5). Its
    ``acked`` (0), or -1 when the segment is not that ACK (then nothing is learned: a later
    ACK may also cover data of the peer that the capture lost)."""
    p = h.peer
    if payload or h.isn is None or p.isn is not None or seq != (h.isn + 1) & SEQ_MASK:
        return -1
    p.isn = (ack - 1) & SEQ_MASK
    p.start(ack)
    return p.off


def _is_new_syn(h: Half, seq: int) -> bool:
    """Does a SYN on a known direction start a new connection (rather than repeat one)?"""
    if h.isn is not None:
        return seq != h.isn
    if h.nxt >= 0:  # the direction carried segments before any SYN
        return True
    p = h.peer
    return p.nxt >= 0 and p.isn is None  # the other way carried data without a handshake


def _sender_is_client(sport: int, dport: int) -> bool:
    """Port heuristic for a connection seen without its handshake."""
    s_server = sport < 1024 or sport in SERVICE_PORTS
    d_server = dport < 1024 or dport in SERVICE_PORTS
    if s_server != d_server:
        return d_server
    return sport >= dport


def _address(packed: bytes) -> str:
    if len(packed) == 4:
        return socket.inet_ntop(socket.AF_INET, packed)
    if len(packed) == 16:
        return socket.inet_ntop(socket.AF_INET6, packed)
    return packed.hex()
