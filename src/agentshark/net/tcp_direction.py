"""One direction of a TCP connection: what its buffer reports, as events and diagnostics.

:class:`DirectionRules` is the part of :class:`~agentshark.net.tcp.TcpReassembler` that works
on one direction (a :class:`Half`) at a time: out-of-sequence data buffered and drained, holes
given up as ``StreamGap`` on evidence (hints from the peer's ACKs, the sender moving on, a FIN,
a RST, the buffer limit), causal-order waits, the direction's end, and per-connection
diagnostics. The policies are in :mod:`agentshark.net.tcp`'s docstring ("Gaps", "Causal
order", "Ends"); the connection table, the fast path and the opening of connections stay there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from agentshark.errors import Diagnostic
from agentshark.net.events import (
    Connection,
    EndReason,
    StreamData,
    StreamEnded,
    StreamGap,
    TcpEvent,
)
from agentshark.net.streambuf import StreamBuffer

__all__ = ["NOTE_BUDGET", "DirectionRules", "Flow", "Half", "Key", "direction_of", "refresh_holds"]

NOTE_BUDGET = 3  # diagnostics of one code per connection; the rest are counted

Key = tuple[bytes, int, bytes, int]


class Flow:
    """Internal state of one connection: its public Connection and both directions."""

    __slots__ = ("conn", "dead", "halves", "no", "notes")

    def __init__(self, conn: Connection, no: int) -> None:
        self.conn = conn
        self.no = no
        self.dead = False
        self.halves: tuple[Half, Half]  # set by the opener
        self.notes: dict[str, int] = {}


class Half(StreamBuffer):
    """One direction of a connection, named by its sender's endpoint: its stream buffer and
    its place in the connection."""

    __slots__ = ("conn", "ended", "ep", "flow", "isn", "key", "peer")

    def __init__(self, flow: Flow, ep: tuple[str, int], key: Key) -> None:
        super().__init__()
        self.flow = flow
        self.conn = flow.conn
        self.ep = ep  # the very tuple object stored in Connection.client or .server
        self.key = key
        self.peer = self
        self.isn: int | None = None
        self.ended = False


class DirectionRules(ABC):
    """Per-direction delivery, holes and ends; the reassembler that inherits it supplies the
    counters, the limits and how a connection whose directions both ended is dropped."""

    stats: dict[str, int]
    max_buffered: int
    source_name: str

    @abstractmethod
    def _drop(self, flow: Flow, ts: float, out: list[TcpEvent]) -> None:
        """Forget a connection whose directions have both ended (the connection table's)."""

    def _data(
        self,
        h: Half,
        start: int,
        payload: bytes,
        missing: int,
        ts: float,
        packet: int,
        out: list[TcpEvent],
        acked: int = -1,
    ) -> None:
        """Take ``payload`` at offset ``start`` (then ``missing`` uncaptured bytes), carried by a
        segment that acknowledged the peer's stream up to ``acked``."""
        if h.hold and h.hint > h.off and start >= h.hint:
            self._moved_on(h, start, ts, packet, out)
        end = start + len(payload)
        stop = end + missing
        fin = h.fin
        if fin is not None and stop > fin:
            self.stats["beyond_fin_bytes"] += stop - max(start, fin)
            if start >= fin:
                return
            if end > fin:
                payload = payload[: fin - start]
                end = fin
            stop = fin
        off = h.off
        if start < off:
            if start == off - 1 and len(payload) == 1 and not missing and h.fin is None:
                self.stats["keepalives"] += 1
                return
            self.stats["retransmitted_bytes"] += min(stop, off) - start
            if payload:
                mismatch = h.delivered_mismatch(start, payload[: off - start])
                if mismatch is not None:
                    self._mismatch(h, *mismatch, packet)
            if stop <= off:
                return
            if end > off:
                payload = payload[off - start :]
            else:
                payload = b""
                end = off
            start = off
        if payload:
            self._insert(h, start, len(payload), payload, ts, packet, acked)
        if stop > end:
            self._insert(h, end, stop - end, None, ts, packet, acked)
        self._drain(h, ts, out)
        if h.pend_cost > self.max_buffered and not h.ended:
            self._overflow(h, ts, packet, out)

    def _overflow(self, h: Half, ts: float, packet: int, out: list[TcpEvent]) -> None:
        """More than ``max_buffered`` bytes wait in ``h``: give up what they wait for."""
        if h.wait >= 0:
            self.stats["buffer_overflows"] += 1
            self._unblock(
                h,
                ts,
                out,
                f"the other direction's data that acknowledged them waited beyond the buffer "
                f"limit ({self.max_buffered} bytes)",
            )
        if h.pend_cost > self.max_buffered and not h.ended and h.starts:
            self.stats["buffer_overflows"] += 1
            self._note(
                h.flow,
                "tcp.buffer_overflow",
                f"more than {self.max_buffered} bytes arrived after a hole at offset {h.off} "
                "that was never filled; the hole is reported as a gap",
                self._where(h, packet),
            )
            while h.pend_cost > self.max_buffered and h.starts and not h.ended:
                self._skip_to(h, h.starts[0], ts, out, None)

    def _insert(
        self,
        h: Half,
        start: int,
        size: int,
        data: bytes | None,
        ts: float,
        packet: int,
        acked: int,
    ) -> None:
        """Buffer bytes of ``h``; count those captured twice, note copies that differ."""
        for lo, hi, differs in h.insert(start, size, data, ts, acked):
            self.stats["retransmitted_bytes"] += hi - lo
            if differs:
                self._mismatch(h, lo, hi, packet)

    def _mismatch(self, h: Half, lo: int, hi: int, packet: int) -> None:
        self.stats["overlap_mismatches"] += 1
        self._note(
            h.flow,
            "tcp.overlap_mismatch",
            f"bytes {lo}..{hi} of this direction were captured twice with different contents; "
            "the first copy is kept",
            self._where(h, packet),
        )

    def _drain(self, h: Half, ts: float, out: list[TcpEvent]) -> None:
        """Deliver the buffered pieces that now continue the stream; end at the FIN. A
        direction that waits for its peer delivers nothing."""
        if h.wait >= 0:
            return
        off = h.off
        ready = h.pop_ready()
        if ready:
            conn = h.conn
            d = direction_of(h)
            for data, size, pts, acked in ready:
                if data is None:
                    self._gap(h, d, off, size, pts, out)
                else:
                    out.append(
                        StreamData(
                            connection=conn, direction=d, data=data, ts=pts, offset=off, acked=acked
                        )
                    )
                    conn.bytes[d] += size
                off += size
        if h.hold:
            self._advanced(h, ts, out)
        if h.fin is not None and h.off >= h.fin:
            self._end(h, "fin", ts, out)

    def _advanced(self, h: Half, ts: float, out: list[TcpEvent]) -> None:
        """``h`` delivered up to ``h.off``: its hint may be met, its peer's wait over."""
        if h.hint and h.off >= h.hint:
            h.hint = 0
        p = h.peer
        if p.wait >= 0 and h.off >= p.wait:
            p.wait = -1
            refresh_holds(h)
            self._drain(p, ts, out)
        else:
            refresh_holds(h)

    def _hint(self, p: Half, target: int, ts: float, packet: int, out: list[TcpEvent]) -> None:
        """The peer of ``p`` acknowledged ``p``'s bytes up to ``target``: a hint that the
        capture misses (or has not shown yet) what lies before it. Given up at once when the
        capture already holds evidence that the sender went on past it."""
        if target <= p.off or p.ended:
            return
        if target > p.hint:
            p.hint = target
            refresh_holds(p)
        if p.fin is not None:
            self._settle(p, ts, out, "the peer acknowledged them and the sender's FIN came", packet)
        elif p.starts and p.starts[-1] >= target:
            self._settle(
                p, ts, out, "the peer acknowledged them and the sender's later data came", packet
            )

    def _moved_on(self, h: Half, start: int, ts: float, packet: int, out: list[TcpEvent]) -> None:
        """A segment of ``h`` starts at ``start``: past the hint, the hole before it is lost."""
        if h.hint > h.off and start >= h.hint:
            self._settle(
                h, ts, out, "the peer acknowledged them and the sender went on past them", packet
            )

    def _settle(self, h: Half, ts: float, out: list[TcpEvent], why: str, packet: int) -> None:
        """Give up the holes of ``h`` below its hint."""
        self._skip_to(h, h.hint, ts, out, f"{why}, so the capture missed them", packet)

    def _unblock(self, h: Half, ts: float, out: list[TcpEvent], why: str) -> None:
        """``h`` waits for its peer: give the peer's holes up to what ``h`` waits for, then
        deliver ``h``."""
        if h.wait < 0:
            return
        p = h.peer
        if not p.ended and p.nxt >= 0:
            self._skip_to(p, h.wait, ts, out, why)
        if h.wait >= 0 and not h.ended:
            h.wait = -1
            refresh_holds(h)
            self._drain(h, ts, out)

    def _gap(self, h: Half, d: int, offset: int, size: int, ts: float, out: list[TcpEvent]) -> None:
        conn = h.conn
        out.append(StreamGap(connection=conn, direction=d, size=size, ts=ts, offset=offset))
        conn.gaps[d] += size
        self.stats["gap_bytes"] += size

    def _skip_to(
        self,
        h: Half,
        target: int,
        ts: float,
        out: list[TcpEvent],
        why: str | None,
        packet: int | None = None,
    ) -> None:
        """Give up every hole before ``target``, delivering the buffered pieces between;
        ``why`` the holes were given up goes into a ``tcp.gap`` diagnostic."""
        if h.wait >= 0:  # giving up holes is a delivery: stop waiting for the peer
            h.wait = -1
            refresh_holds(h)
            self._drain(h, ts, out)
        first = h.off
        given_up = 0
        while h.off < target and not h.ended:
            before = h.off
            stop = h.hole_end(target)
            if stop > before:
                self._gap(h, direction_of(h), before, stop - before, ts, out)
                given_up += stop - before
                h.off = stop
            self._drain(h, ts, out)
            if h.off == before:  # pragma: no cover - buffered pieces never start before off
                break
        if given_up and why:
            where = self._where(h, packet) if packet is not None else self._where(h)
            self._note(
                h.flow,
                "tcp.gap",
                f"{given_up} bytes from offset {first} on were never captured: {why}",
                where,
            )

    def _flush(self, h: Half, ts: float, out: list[TcpEvent], why: str) -> None:
        """Deliver everything buffered, up to the FIN if one was seen (what ``h`` waits for in
        the peer first)."""
        self._unblock(h, ts, out, why)
        if h.nxt >= 0 and not h.ended:
            self._skip_to(h, h.known_end(), ts, out, why)

    def _fin(self, h: Half, at: int, ts: float, packet: int, out: list[TcpEvent]) -> None:
        if h.ended:
            return
        if h.fin is not None:
            if at != h.fin:
                self._note(
                    h.flow,
                    "tcp.fin_moved",
                    f"a second FIN at offset {at} differs from the first at {h.fin}; "
                    "the first is kept",
                    self._where(h, packet),
                )
            return
        self.stats["beyond_fin_bytes"] += h.mark_fin(at)
        if h.off >= at:
            self._drain(h, ts, out)
        elif h.peer.ended:
            self._flush(h, ts, out, "both directions ended without them")

    def _end(self, h: Half, reason: EndReason, ts: float, out: list[TcpEvent]) -> None:
        if h.ended:
            return
        h.ended = True
        h.end(at_fin=reason == "fin")
        refresh_holds(h)
        conn = h.conn
        d = direction_of(h)
        conn.end[d] = reason
        out.append(StreamEnded(connection=conn, direction=d, reason=reason, ts=ts))
        p = h.peer
        if p.ended:
            self._drop(h.flow, ts, out)
            return
        if p.wait >= 0:  # the peer waited for bytes of this direction that will not come
            p.wait = -1
            refresh_holds(p)
            self._drain(p, ts, out)
        if p.fin is not None and not p.ended:  # its FIN waits for holes nobody will fill now
            self._flush(p, ts, out, "both directions ended without them")

    def _reset(self, h: Half, ts: float, out: list[TcpEvent]) -> None:
        flow = h.flow
        for x in (h, h.peer):
            if not x.ended:
                self._flush(x, ts, out, "the connection was reset before they came")
        for x in (h, h.peer):
            if not flow.dead and not x.ended:
                self._end(x, "rst", ts, out)

    # -- diagnostics ---------------------------------------------------------------------------

    def _prefix(self) -> str:
        return f"{self.source_name}: " if self.source_name else ""

    def _where(self, h: Half, packet: int | None = None) -> str:
        where = f"{self._prefix()}{h.conn.label(direction_of(h))}"
        return where if packet is None else f"{where}, packet {packet}"

    def _note(self, flow: Flow, code: str, message: str, location: str) -> None:
        count = flow.notes.get(code, 0) + 1
        flow.notes[code] = count
        if count <= NOTE_BUDGET:
            flow.conn.diagnostics.append(Diagnostic(code=code, message=message, location=location))


def refresh_holds(h: Half) -> None:
    """Recompute ``hold`` and ``fast`` of both directions after a hint or a wait changed."""
    for x in (h, h.peer):
        x.hold = x.hint > x.off or x.wait >= 0 or x.peer.wait >= 0
        x.fast = not x.starts and x.fin is None and not x.hold and not x.ended and x.nxt >= 0


def direction_of(h: Half) -> int:
    """0 when ``h`` carries client -> server bytes under the connection's current roles."""
    conn = h.conn
    if conn.client is h.ep:
        return 0
    if conn.server is h.ep:
        return 1
    return 0 if conn.client == h.ep else 1  # the consumer rebuilt the tuples
