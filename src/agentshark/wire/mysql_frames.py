"""MySQL client/server protocol framing: one direction's bytes -> packets.

https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_packets.html: every
packet is a 3-byte little-endian payload length and a 1-byte sequence id, then the payload.
A payload of 2**24 - 1 bytes or more is sent as packets of exactly 0xFFFFFF bytes followed
by a shorter one (possibly empty), each with the next sequence id: :class:`MyReader` joins
them into one :class:`MyPacket`.

With ``CLIENT_COMPRESS`` each direction is, from the end of authentication on, a stream of
compressed packets
(https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_compression_packet.html):
a 3-byte compressed length, a 1-byte compressed sequence id, a 3-byte length before
compression (0: the payload is not compressed), then a zlib stream. Their payloads, joined,
are the ordinary packets above; :meth:`MyReader.compress` turns that layer on.

A capture gap inside a packet whose length is known costs that packet only: it is given out
damaged (``body`` None) and framing goes on in step. A gap at a packet boundary leaves the
next boundary unknown: the direction is lost, with one Diagnostic, until it can be found
again by sequence id (:meth:`MyReader.rearm`): the client's side resynchronizes on a segment
that is whole command packets from sequence id 0 (a client sends one command and waits), the
server's side on the first bytes after the client's next command when they begin a plausible
response packet with sequence id 1. A payload longer than :data:`MAX_KEPT` is skipped and
given out with ``body`` None and ``too_large`` set.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from agentshark.errors import Diagnostic

MAX_KEPT = 16 << 20  # payload bytes held whole; longer ones are skipped (sequence id kept)
FULL = 0xFFFFFF  # a packet of this length continues in the next one
COMMANDS = frozenset(range(0x20))  # COM_SLEEP .. COM_RESET_CONNECTION


@dataclass(slots=True, kw_only=True)
class MyPacket:
    """One logical packet: the sequence id of its first part, its payload (None: damaged by
    a gap or too large to hold), when its first byte came and where it starts in the
    direction's stream (with compression: in the stream of uncompressed payloads). Not
    frozen, like ``PgMessage``; treat it as immutable."""

    seq: int
    body: bytes | None
    ts: float
    offset: int
    size: int  # payload bytes on the wire (all parts), headers not counted
    too_large: bool = False


class _Framer:
    """Packets out of an uncompressed stream (the wire's, or the compressed layer's)."""

    __slots__ = (
        "_buf",
        "_damaged",
        "_packet_ts",
        "_part_seq",
        "_parts",
        "_parts_size",
        "_skip",
        "_skip_last",
        "_start",
        "_start_ts",
        "offset",
    )

    def __init__(self) -> None:
        self._buf = bytearray()
        self.offset = 0  # stream offset of ``_buf[0]``
        self._start_ts = 0.0
        self._skip = 0  # payload bytes of the current packet still to skip
        self._parts: list[bytes] = []  # parts of a payload continued past 0xFFFFFF bytes
        self._parts_size = 0
        self._part_seq = -1  # sequence id of the first part (-1: none open)
        self._damaged = False  # the open payload lost bytes or is too large
        self._start = 0  # offset of the open payload's first header
        self._packet_ts = 0.0  # when the open payload's first byte came
        self._skip_last = False  # the packet being skipped is the payload's last part

    def feed(self, data: bytes, ts: float) -> list[MyPacket]:
        out: list[MyPacket] = []
        if self._skip:
            cut = min(self._skip, len(data))
            self._skip -= cut
            self.offset += cut
            data = data[cut:]
            if self._skip:
                return out
            self._part_done(self._skip_last, out)
        if not data:
            return out
        if not self._buf:
            self._start_ts = ts
        self._buf += data
        self._frame(out, ts)
        return out

    def _frame(self, out: list[MyPacket], ts: float) -> None:
        buf = self._buf
        pos = 0
        end = len(buf)
        while end - pos >= 4:
            size = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
            seq = buf[pos + 3]
            if self._part_seq < 0:
                self._part_seq = seq
                self._start = self.offset + pos
                self._packet_ts = self._start_ts if pos == 0 else ts
            last = size < FULL
            total = self._parts_size + size
            if total > MAX_KEPT or self._damaged:
                self._damaged = True
                self._parts.clear()
                self._parts_size = total
                have = min(size, end - pos - 4)
                if have < size:
                    self._skip = size - have
                    self._skip_last = last
                    pos = end
                    break
                pos += 4 + size
                self._part_done(last, out)
                continue
            if end - pos - 4 < size:
                break
            self._parts.append(bytes(buf[pos + 4 : pos + 4 + size]))
            self._parts_size = total
            pos += 4 + size
            self._part_done(last, out)
        del buf[:pos]
        self.offset += pos
        if pos or not buf:
            self._start_ts = ts

    def _part_done(self, last: bool, out: list[MyPacket]) -> None:
        if not last:
            return
        damaged = self._damaged
        body = None if damaged else b"".join(self._parts)
        out.append(
            MyPacket(
                seq=self._part_seq,
                body=body,
                ts=self._packet_ts,
                offset=self._start,
                size=self._parts_size,
                too_large=damaged and self._parts_size > MAX_KEPT,
            )
        )
        self._parts.clear()
        self._parts_size = 0
        self._part_seq = -1
        self._damaged = False

    def gap(self, size: int, ts: float) -> tuple[bool, list[MyPacket]]:
        """``size`` bytes lost: (still in step, packets it ended). In step when the gap
        falls inside a packet whose header was seen."""
        out: list[MyPacket] = []
        if self._skip and size <= self._skip:
            self._damaged = True
            self._skip -= size
            self.offset += size
            if not self._skip:
                self._part_done(self._skip_last, out)
            return True, out
        if not self._skip and len(self._buf) >= 4:
            buf = self._buf
            need = (buf[0] | buf[1] << 8 | buf[2] << 16) + 4 - len(buf)
            if 0 < size <= need:
                if self._part_seq < 0:
                    self._part_seq = buf[3]
                    self._start = self.offset
                    self._packet_ts = self._start_ts
                self._damaged = True
                self._parts.clear()
                self._parts_size += need + len(buf) - 4
                self._skip_last = need + len(buf) - 4 < FULL
                self.offset += len(buf) + size
                buf.clear()
                self._skip = need - size
                if not self._skip:
                    self._part_done(self._skip_last, out)
                return True, out
        return False, out

    def reset(self, offset: int) -> None:
        """Start afresh at a packet boundary at ``offset``."""
        self._buf.clear()
        self._skip = 0
        self._parts.clear()
        self._parts_size = 0
        self._part_seq = -1
        self._damaged = False
        self.offset = offset

    @property
    def held(self) -> int:
        return len(self._buf)


class MyReader:
    """Framing of one direction (``client``: which side resynchronizes how)."""

    __slots__ = (
        "_comp",
        "_comp_buf",
        "_comp_skip",
        "_comp_skip_inner",
        "_framer",
        "_rearmed",
        "client",
        "location",
        "lost",
        "offset",
        "paused",
    )

    def __init__(self, *, client: bool, location: str) -> None:
        self.client = client
        self.location = location
        self._framer = _Framer()
        self._comp = False
        self._comp_buf = bytearray()
        self._comp_skip = 0  # bytes of a damaged compressed packet still to skip
        self._comp_skip_inner = 0  # its payload's size once uncompressed
        self._rearmed = False
        self.lost = False  # framing lost: bytes are dropped until a resynchronization
        self.paused = False  # TLS follows: bytes are held for the TLS layer
        self.offset = 0  # bytes of this direction taken in (the wire's stream)

    @property
    def compressed(self) -> bool:
        return self._comp

    def compress(self) -> None:
        """From here on the direction is compressed packets (bytes already held included)."""
        if self._comp:
            return
        self._comp = True
        held = self._framer.held
        if held:
            self._comp_buf += self._framer._buf
            self._framer._buf.clear()

    @property
    def boundary(self) -> int:
        """The stream offset past the last whole packet (uncompressed streams)."""
        return self._framer.offset

    def take_rest(self) -> bytes:
        """The bytes held past the last packet (the connection's TLS starts with them)."""
        rest = bytes(self._framer._buf)
        self._framer._buf.clear()
        self._framer.offset += len(rest)
        return rest

    def pause(self) -> None:
        self.paused = True

    def rearm(self) -> None:
        """The client sent a command: a lost server side may find its answer's first packet
        at the start of its next bytes."""
        if self.lost:
            self._rearmed = True

    def feed(self, data: bytes, ts: float) -> list[MyPacket | Diagnostic]:
        if self.paused:
            if data:
                self._framer._buf += data
            return []
        start = self.offset
        self.offset += len(data)
        if self.lost:
            return self._resync(data, ts, start)
        if self._comp:
            return self._feed_compressed(data, ts, start)
        return list(self._framer.feed(data, ts))

    def gap(self, size: int, ts: float) -> list[MyPacket | Diagnostic]:
        start = self.offset
        self.offset += size
        if self.lost or self.paused:
            return []
        if self._comp:
            return self._gap_compressed(size, ts, start)
        ok, out = self._framer.gap(size, ts)
        if ok:
            return list(out)
        return [*out, self._lose(start, size)]

    def _lose(self, where: int, size: int) -> Diagnostic:
        self.lost = True
        self._rearmed = False
        self._framer.reset(0)
        self._comp_buf.clear()
        self._comp_skip = 0
        side = (
            "a command packet from sequence id 0"
            if self.client
            else "the answer to the next command"
        )
        return Diagnostic(
            code="mysql.gap",
            message=f"{size} bytes of this direction were not captured at a packet boundary: "
            f"where the next packet starts cannot be told, bytes are dropped until {side} "
            "shows one",
            location=f"{self.location} byte {where}",
        )

    # -- resynchronization ------------------------------------------------------------------

    def _resync(self, data: bytes, ts: float, start: int) -> list[MyPacket | Diagnostic]:
        if self._comp:
            found = (
                _compressed_tiles(data, 0)
                if self.client
                else (self._rearmed and _compressed_tiles(data[: 7 + _le24(data)], 1))
            )
        elif self.client:
            found = _command_tiles(data)
        else:
            found = self._rearmed and _answer_head(data)
        self._rearmed = False
        if not found:
            return []
        self.lost = False
        self._framer.reset(start)
        note = Diagnostic(
            code="mysql.resync",
            message="packet boundaries found again after the lost bytes: "
            + (
                "this segment is whole command packets from sequence id 0"
                if self.client
                else "these bytes begin a response packet with sequence id 1, after the "
                "client's next command"
            ),
            location=f"{self.location} byte {start}",
            severity="info",
        )
        if self._comp:
            return [note, *self._feed_compressed(data, ts, start)]
        return [note, *self._framer.feed(data, ts)]

    # -- the compressed layer ---------------------------------------------------------------

    def _feed_compressed(self, data: bytes, ts: float, start: int) -> list[MyPacket | Diagnostic]:
        out: list[MyPacket | Diagnostic] = []
        if self._comp_skip:
            cut = min(self._comp_skip, len(data))
            self._comp_skip -= cut
            data = data[cut:]
            if self._comp_skip:
                return out
            out.extend(self._inner_gap(self._comp_skip_inner, ts, start))
            if self.lost:
                return out
        buf = self._comp_buf
        buf += data
        pos = 0
        end = len(buf)
        while end - pos >= 7:
            size = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
            plain = buf[pos + 4] | buf[pos + 5] << 8 | buf[pos + 6] << 16
            if end - pos - 7 < size:
                break
            payload = bytes(buf[pos + 7 : pos + 7 + size])
            where = self.offset - end + pos
            pos += 7 + size
            if plain:
                try:
                    payload = zlib.decompress(payload)
                except zlib.error as exc:
                    out.extend(self._bad_compressed(where, f"zlib: {exc}", plain, ts))
                    if self.lost:
                        break
                    continue
                if len(payload) != plain:
                    out.extend(
                        self._bad_compressed(
                            where, f"{len(payload)} bytes once inflated, not {plain}", plain, ts
                        )
                    )
                    if self.lost:
                        break
                    continue
            out.extend(self._framer.feed(payload, ts))
        del buf[:pos]
        return out

    def _bad_compressed(
        self, where: int, why: str, plain: int, ts: float
    ) -> list[MyPacket | Diagnostic]:
        note = Diagnostic(
            code="mysql.compression",
            message=f"a compressed packet that does not inflate ({why}): its "
            f"{plain} bytes of packets are lost",
            location=f"{self.location} byte {where}",
        )
        return [note, *self._inner_gap(plain, ts, where)]

    def _inner_gap(self, size: int, ts: float, where: int) -> list[MyPacket | Diagnostic]:
        ok, out = self._framer.gap(size, ts)
        if ok:
            return list(out)
        return [*out, self._lose(where, size)]

    def _gap_compressed(self, size: int, ts: float, start: int) -> list[MyPacket | Diagnostic]:
        """Lost bytes of the compressed stream: inside a compressed packet whose header was
        seen, that packet's payload is lost (its size once uncompressed is known), and
        framing goes on; elsewhere the direction is lost."""
        if self._comp_skip and size <= self._comp_skip:
            self._comp_skip -= size
            if not self._comp_skip:
                return self._inner_gap(self._comp_skip_inner, ts, start)
            return []
        buf = self._comp_buf
        if not self._comp_skip and len(buf) >= 7:
            total = (buf[0] | buf[1] << 8 | buf[2] << 16) + 7
            plain = buf[4] | buf[5] << 8 | buf[6] << 16
            need = total - len(buf)
            if 0 < size <= need:
                buf.clear()
                self._comp_skip = need - size
                self._comp_skip_inner = plain or total - 7
                if not self._comp_skip:
                    return self._inner_gap(self._comp_skip_inner, ts, start)
                return []
        return [self._lose(start, size)]


def _command_tiles(data: bytes) -> bool:
    """``data`` is whole packets, the first with sequence id 0 and a command byte, each next
    one with the next sequence id."""
    pos, seq, end = 0, 0, len(data)
    while end - pos >= 4:
        size = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        if data[pos + 3] != seq & 0xFF:
            return False
        if pos == 0 and (size == 0 or end < 5 or data[4] not in COMMANDS):
            return False
        pos += 4 + size
        seq += 1
    return pos == end and end > 0


def _answer_head(data: bytes) -> bool:
    """``data`` begins a packet with sequence id 1 that can begin an answer: an OK, an ERR,
    an EOF, a LOCAL INFILE request, or a result set's column count."""
    if len(data) < 5 or data[3] != 1:
        return False
    size = data[0] | data[1] << 8 | data[2] << 16
    head = data[4]
    if head == 0x00:
        return 7 <= size < FULL
    if head == 0xFF:
        return 3 <= size < 1024
    if head == 0xFE:
        return 5 <= size < 9
    if head == 0xFB:
        return size < 4096
    if head == 0xFC:
        return size == 3
    return size == 1 and 0 < head < 0xFB


def _le24(data: bytes) -> int:
    return data[0] | data[1] << 8 | data[2] << 16 if len(data) >= 3 else 0


def _compressed_tiles(data: bytes, seq: int) -> bool:
    """``data`` is whole compressed packets, the first with compressed sequence id ``seq``
    (0: a client's command; 1: the first of its answer) and each next one with the next."""
    pos, end = 0, len(data)
    while end - pos >= 7:
        if data[pos + 3] != seq & 0xFF:
            return False
        pos += 7 + _le24(data[pos : pos + 3])
        seq += 1
    return pos == end and end > 0
