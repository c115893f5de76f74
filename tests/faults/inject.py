"""Seeded faults applied to a capture, with a record of exactly which packets were touched.

Every fault takes the capture's packets and a ``random.Random`` and returns the new record
list (``Faulted``) plus one ``Touch`` per packet it lost, cut, moved, copied or split: the
connection direction (``flow``) and the TCP byte range in that direction, as offsets from the
direction's first byte (the byte after the SYN) of the clean capture. The harness maps those
ranges onto exchanges to tell affected ones from the rest.

Lossless faults (every byte still in the file; the report must come out identical):

- ``ack_first_pure``: a pure ACK moved to just before the data segment holding the last byte
  it acknowledges (so it acknowledges bytes not seen yet); it takes that segment's time stamp.
- ``ack_first_twin``: the same with an ACK-only copy of a data segment (its headers, no
  payload, lengths and checksums fixed); the segment itself stays where it was.
- ``reorder``: two consecutive data segments of one direction swapped in the file, each
  keeping its own time stamp; only pairs with nothing of their connection between them but
  pure ACKs that acknowledge neither, so no ACK ends up before its data.
- ``dup_near``: a packet written twice in a row. ``dup_late``: a data segment's copy written
  40 packets later (with the time stamp of the packet it follows, as a late retransmission).
- ``fragment``: an IPv4 data packet split into 2 or 3 fragments written in reverse order.

Lossy faults: ``drop_data_N`` / ``drop_any_N`` drop N% of the data segments / of all TCP
packets, ``snaplen`` cuts 5% of the data segments short (captured length below the original
length, as a small ``-s`` does), ``truncate_file`` cuts the file inside one packet record.

UDP datagrams (QUIC) take the same faults where they mean something: ``drop_*`` lose
datagrams (``drop_data_N``: those with a payload), ``snaplen`` cuts datagrams short,
``dup_near`` / ``dup_late`` copy them, ``reorder`` swaps two consecutive datagrams of one
direction with nothing of their endpoints between them (never a flow's first: it opens the
connection), ``fragment`` splits IPv4 ones; the ``ack_first`` faults are TCP's alone. A
datagram's ``Touch`` names its ordinal in its direction and its time stamp, not bytes: the
suite does not decrypt QUIC (see ``harness.datagram_flags``).

Counts are ``max(1, round(rate * candidates))`` so a small capture is never left untouched.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tests.faults.pcapfile import (
    Capture,
    Flow,
    Record,
    Tcp,
    Udp,
    checksum,
    parse_tcp,
    parse_udp,
    pcap_bytes,
    timestamp,
)

MOD = 1 << 32
Conn = tuple[tuple[str, int], tuple[str, int]]  # the two endpoints, sorted


@dataclass(frozen=True, slots=True, kw_only=True)
class Pkt:
    """A record of the clean capture with its TCP header and payload range, if TCP; its UDP
    header and its place among its direction's datagrams (``start``), if UDP."""

    index: int
    record: Record
    ts: float
    tcp: Tcp | None
    start: int = 0  # offset of the first payload byte in its direction (UDP: the ordinal)
    end: int = 0  # offset after the last one (== start without payload; UDP: ordinal + 1)
    udp: Udp | None = None

    @property
    def data(self) -> bool:
        return self.tcp is not None and self.end > self.start

    @property
    def datagram(self) -> bool:
        """A UDP datagram with a payload."""
        return self.udp is not None and self.udp.payload_len > 0

    @property
    def any(self) -> bool:
        """A TCP segment or a UDP datagram: what a fault may touch."""
        return self.tcp is not None or self.udp is not None

    @property
    def lossable(self) -> bool:
        """A data segment or a datagram with a payload."""
        return self.data or self.datagram

    @property
    def plain_data(self) -> bool:
        """A data segment without SYN, FIN or RST."""
        return self.data and self.tcp is not None and not self.tcp.flags & 0x07

    @property
    def conn(self) -> Conn | None:
        if self.tcp is None:
            return None
        s, sp, d, dp = self.tcp.flow
        return conn_of((s, sp, d, dp))


def conn_of(flow: Flow) -> Conn:
    a, b = (flow[0], flow[1]), (flow[2], flow[3])
    return (a, b) if a <= b else (b, a)


def reverse(flow: Flow) -> Flow:
    return (flow[2], flow[3], flow[0], flow[1])


@dataclass(frozen=True, slots=True, kw_only=True)
class Touch:
    kind: str  # the fault's name
    flow: Flow
    start: int
    end: int
    lost: bool  # bytes of this range are missing from the faulted capture
    # a UDP datagram: ``start`` is its ordinal in its direction, ``end`` the next; ``ts`` the
    # clean capture's time stamp of it (the harness maps datagrams onto exchanges by time)
    datagram: bool = False
    ts: float = 0.0


@dataclass(slots=True, kw_only=True)
class Faulted:
    records: list[Record]
    touches: list[Touch] = field(default_factory=list)
    cut_at: int | None = None  # the file is cut to this many bytes


def index_packets(capture: Capture) -> tuple[list[Pkt], dict[Flow, int]]:
    """The capture's packets with payload offsets, and each direction's base sequence number
    (the SYN's plus one, else the first seen)."""
    bases: dict[Flow, int] = {}
    parsed = [parse_tcp(capture.linktype, r.data) for r in capture.records]
    for tcp in parsed:
        if tcp is not None and tcp.syn:
            bases.setdefault(tcp.flow, (tcp.seq + 1) % MOD)
    for tcp in parsed:
        if tcp is not None:
            bases.setdefault(tcp.flow, tcp.seq)
    packets = []
    ordinals: dict[Flow, int] = {}
    for i, (record, tcp) in enumerate(zip(capture.records, parsed, strict=True)):
        ts = timestamp(capture, record)
        if tcp is None:
            udp = parse_udp(capture.linktype, record.data)
            n = 0
            if udp is not None:
                n = ordinals[udp.flow] = ordinals.get(udp.flow, -1) + 1
            packets.append(
                Pkt(index=i, record=record, ts=ts, tcp=None, udp=udp, start=n, end=n + 1)
            )
            continue
        start = (tcp.seq + (1 if tcp.syn else 0) - bases[tcp.flow]) % MOD
        packets.append(
            Pkt(index=i, record=record, ts=ts, tcp=tcp, start=start, end=start + tcp.payload_len)
        )
    return packets, bases


def _touch(kind: str, p: Pkt, *, lost: bool) -> Touch:
    if p.udp is not None:
        return Touch(
            kind=kind, flow=p.udp.flow, start=p.start, end=p.end, lost=lost, datagram=True, ts=p.ts
        )
    assert p.tcp is not None
    start, end = p.start, p.end
    if start == end and p.tcp.fin and lost:  # a lost FIN: the last byte before it is touched
        start = max(0, start - 1)
    return Touch(kind=kind, flow=p.tcp.flow, start=start, end=end, lost=lost)


def _count(rate: float, n: int) -> int:
    return min(n, max(1, round(rate * n))) if n else 0


# -- lossy ------------------------------------------------------------------------------------


def drop(rate: float, *, data_only: bool) -> FaultFn:
    def apply(packets: list[Pkt], rng: random.Random) -> Faulted:
        pool = [p for p in packets if (p.lossable if data_only else p.any)]
        gone = {p.index for p in rng.sample(pool, _count(rate, len(pool)))}
        return Faulted(
            records=[p.record for p in packets if p.index not in gone],
            touches=[_touch("drop", p, lost=True) for p in packets if p.index in gone],
        )

    return apply


def snaplen(rate: float) -> FaultFn:
    def apply(packets: list[Pkt], rng: random.Random) -> Faulted:
        pool = [p for p in packets if _payload(p) >= 2 and _whole(p)]
        cut = {p.index: p for p in rng.sample(pool, _count(rate, len(pool)))}
        records, touches = [], []
        for p in packets:
            if p.index not in cut:
                records.append(p.record)
                continue
            if p.udp is not None:  # a datagram cut short: what it carried is lost from ``keep``
                keep = rng.randint(1, p.udp.payload_len - 1)
                records.append(replace(p.record, data=p.record.data[: p.udp.payload_offset + keep]))
                touches.append(_touch("snaplen", p, lost=True))
                continue
            assert p.tcp is not None
            keep = rng.randint(1, p.end - p.start - 1)
            data = p.record.data[: p.tcp.payload_offset + keep]
            records.append(replace(p.record, data=data))
            touches.append(
                Touch(kind="snaplen", flow=p.tcp.flow, start=p.start + keep, end=p.end, lost=True)
            )
        return Faulted(records=records, touches=touches)

    return apply


def _whole(p: Pkt) -> bool:
    head = p.tcp or p.udp
    assert head is not None
    return len(p.record.data) >= head.payload_offset + head.payload_len


def _payload(p: Pkt) -> int:
    """The payload's length on the wire: a TCP segment's, a UDP datagram's, or 0."""
    return p.udp.payload_len if p.udp is not None else p.end - p.start if p.data else 0


def truncate_file(packets: list[Pkt], rng: random.Random) -> Faulted:
    """Cut the file inside one record (its header or its bytes), past the first packet."""
    k = rng.randrange(1, len(packets))
    offset = 24 + sum(16 + len(p.record.data) for p in packets[:k])
    cut = offset + rng.randint(1, 16 + len(packets[k].record.data) - 1)
    return Faulted(
        records=[p.record for p in packets],
        touches=[_touch("truncate_file", p, lost=True) for p in packets[k:] if p.any],
        cut_at=cut,
    )


# -- lossless ---------------------------------------------------------------------------------


def ack_first(*, twin: bool, rate: float = 0.1) -> FaultFn:
    def apply(packets: list[Pkt], rng: random.Random) -> Faulted:
        pool = _ack_candidates(packets, twin=twin)
        chosen = rng.sample(pool, _count(rate, len(pool)))
        before: dict[int, list[Record]] = {}
        moved: set[int] = set()
        touches = []
        for ack_i, data_i in chosen:
            ack, target = packets[ack_i], packets[data_i]
            rec = _ack_only(ack) if twin else ack.record
            rec = replace(rec, sec=target.record.sec, frac=target.record.frac)
            before.setdefault(data_i, []).append(rec)
            if not twin:
                moved.add(ack_i)
            touches.append(_touch("ack_first", target, lost=False))
        records: list[Record] = []
        for p in packets:
            records.extend(before.get(p.index, ()))
            if p.index not in moved:
                records.append(p.record)
        return Faulted(records=records, touches=touches)

    return apply


def _ack_candidates(packets: list[Pkt], *, twin: bool) -> list[tuple[int, int]]:
    """(ACK packet, the data packet holding the last byte it acknowledges) pairs with no data
    of the ACK's own direction between them; pure ACKs only when they acknowledge new bytes
    (a duplicate ACK moved is no ACK-before-data)."""
    bases = _bases(packets)
    last_data: dict[Flow, list[Pkt]] = {}  # data packets so far, per direction
    acked: dict[Flow, int] = {}  # highest acknowledgment seen so far, per ACK sender
    out = []
    for p in packets:
        tcp = p.tcp
        if tcp is None:
            continue
        peer = reverse(tcp.flow)
        kind_ok = (p.data and not tcp.flags & 0x07) if twin else not p.data
        if tcp.has_ack and not tcp.flags & 0x07 and kind_ok and peer in bases:
            a = (tcp.ack - bases[peer]) % MOD
            if twin or a > acked.get(tcp.flow, -1):  # a pure ACK: one that acknowledges news
                target = _holder(last_data.get(peer, []), a)
                if target is not None and not _own_data_between(packets, target.index, p):
                    out.append((p.index, target.index))
        if tcp.has_ack and peer in bases:
            acked[tcp.flow] = max(acked.get(tcp.flow, -1), (tcp.ack - bases[peer]) % MOD)
        if p.data:
            last_data.setdefault(tcp.flow, []).append(p)
    return out


def _bases(packets: list[Pkt]) -> dict[Flow, int]:
    bases: dict[Flow, int] = {}
    for p in packets:
        if p.tcp is not None:
            bases.setdefault(p.tcp.flow, (p.tcp.seq + (1 if p.tcp.syn else 0) - p.start) % MOD)
    return bases


def _holder(data: list[Pkt], a: int) -> Pkt | None:
    for p in reversed(data[-64:]):
        if p.start < a <= p.end:
            return p
    return None


def _own_data_between(packets: list[Pkt], lo: int, ack: Pkt) -> bool:
    assert ack.tcp is not None
    flow = ack.tcp.flow
    return any(
        q.tcp is not None and q.tcp.flow == flow and (q.data or q.tcp.flags & 0x07)
        for q in packets[lo + 1 : ack.index]
    )


def _ack_only(p: Pkt) -> Record:
    """A copy of a data segment without its payload: IP lengths and checksums rewritten."""
    tcp = p.tcp
    assert tcp is not None
    head = bytearray(p.record.data[: tcp.payload_offset])
    ip, t = tcp.ip_offset, tcp.tcp_offset
    if tcp.ip_version == 4:
        struct.pack_into(">H", head, ip + 2, tcp.payload_offset - ip)
        struct.pack_into(">H", head, ip + 10, 0)
        struct.pack_into(">H", head, ip + 10, checksum(bytes(head[ip:t])))
        pseudo = bytes(head[ip + 12 : ip + 20]) + struct.pack(">BBH", 0, 6, len(head) - t)
    else:
        struct.pack_into(">H", head, ip + 4, tcp.payload_offset - t)
        pseudo = bytes(head[ip + 8 : ip + 40]) + struct.pack(">IxxxB", len(head) - t, 6)
    struct.pack_into(">H", head, t + 16, 0)
    struct.pack_into(">H", head, t + 16, checksum(pseudo + bytes(head[t:])))
    return replace(p.record, data=bytes(head), orig_len=len(head))


def reorder(rate: float = 0.05) -> FaultFn:
    def apply(packets: list[Pkt], rng: random.Random) -> Faulted:
        pool = _swappable(packets)
        rng.shuffle(pool)
        used: set[int] = set()
        pairs: list[tuple[int, int]] = []
        for i, j in pool:
            if len(pairs) >= _count(rate, len(pool)):
                break
            if i not in used and j not in used:
                used |= {i, j}
                pairs.append((i, j))
        order = list(range(len(packets)))
        for i, j in pairs:
            order[i], order[j] = j, i
        return Faulted(
            records=[packets[k].record for k in order],
            touches=[_touch("reorder", packets[k], lost=False) for pair in pairs for k in pair],
        )

    return apply


def _swappable(packets: list[Pkt]) -> list[tuple[int, int]]:
    """Consecutive data segments (i, j) of one direction with nothing of their connection in
    between but pure ACKs of the other direction that acknowledge neither segment; and
    consecutive datagrams of one direction with nothing of their two endpoints in between,
    but never the first datagram of a flow (a QUIC connection is found by its first Initial:
    what comes before it is not taken, as an endpoint would not take it either)."""
    out = _swappable_datagrams(packets)
    bases = _bases(packets)
    for p in packets:
        if not p.plain_data:
            continue
        assert p.tcp is not None
        for q in packets[p.index + 1 :]:
            if q.conn != p.conn:
                continue
            assert q.tcp is not None
            if q.tcp.flow == p.tcp.flow:
                if q.plain_data:
                    out.append((p.index, q.index))
                break
            if q.data or q.tcp.flags & 0x07:
                break
            if q.tcp.has_ack and (q.tcp.ack - bases[p.tcp.flow]) % MOD > p.start:
                break
    return out


def _swappable_datagrams(packets: list[Pkt]) -> list[tuple[int, int]]:
    out = []
    last: dict[Conn, Pkt] = {}  # the latest datagram between two endpoints
    for p in packets:
        if p.udp is None:
            continue
        conn = conn_of(p.udp.flow)
        q = last.get(conn)
        last[conn] = p
        if q is None or q.udp is None or q.udp.flow != p.udp.flow or q.start == 0:
            continue
        if q.datagram and p.datagram:
            out.append((q.index, p.index))
    return out


def dup_near(rate: float = 0.05) -> FaultFn:
    def apply(packets: list[Pkt], rng: random.Random) -> Faulted:
        pool = [p for p in packets if p.any]
        chosen = {p.index for p in rng.sample(pool, _count(rate, len(pool)))}
        records = []
        for p in packets:
            records.append(p.record)
            if p.index in chosen:
                records.append(p.record)
        touches = [_touch("dup_near", p, lost=False) for p in packets if p.index in chosen]
        return Faulted(records=records, touches=touches)

    return apply


def dup_late(rate: float = 0.05, distance: int = 40) -> FaultFn:
    def apply(packets: list[Pkt], rng: random.Random) -> Faulted:
        pool = [p for p in packets if p.lossable]
        chosen = rng.sample(pool, _count(rate, len(pool)))
        after: dict[int, list[Record]] = {}
        for p in chosen:
            k = min(p.index + distance, len(packets) - 1)
            later = packets[k].record
            after.setdefault(k, []).append(replace(p.record, sec=later.sec, frac=later.frac))
        records = []
        for p in packets:
            records.append(p.record)
            records.extend(after.get(p.index, ()))
        return Faulted(records=records, touches=[_touch("dup_late", p, lost=False) for p in chosen])

    return apply


def fragment(rate: float = 0.05) -> FaultFn:
    def apply(packets: list[Pkt], rng: random.Random) -> Faulted:
        pool = [
            p
            for p in packets
            if (head := p.tcp or p.udp) is not None and head.ip_version == 4 and _whole(p)
            if _payload(p) >= 16
        ]
        chosen = {p.index for p in rng.sample(pool, _count(rate, len(pool)))}
        records = []
        for p in packets:
            records.extend(_fragments(p, rng) if p.index in chosen else [p.record])
        touches = [_touch("fragment", p, lost=False) for p in packets if p.index in chosen]
        return Faulted(records=records, touches=touches)

    return apply


def _fragments(p: Pkt, rng: random.Random) -> list[Record]:
    """The packet as 2 or 3 IPv4 fragments (RFC 791 §3.2), last one first."""
    data = p.record.data
    if p.udp is not None:
        ip, t = p.udp.ip_offset, p.udp.udp_offset
    else:
        assert p.tcp is not None
        ip, t = p.tcp.ip_offset, p.tcp.tcp_offset
    total = int.from_bytes(data[ip + 2 : ip + 4], "big")
    payload = data[t : ip + total]
    places = range(8, len(payload), 8)
    bounds = [0, *sorted(rng.sample(places, min(rng.randint(1, 2), len(places)))), len(payload)]
    out = []
    for k in range(len(bounds) - 1):
        piece = payload[bounds[k] : bounds[k + 1]]
        head = bytearray(data[:t])
        more = 0x2000 if k < len(bounds) - 2 else 0
        struct.pack_into(">H", head, ip + 2, t - ip + len(piece))
        struct.pack_into(">H", head, ip + 6, more | bounds[k] // 8)
        struct.pack_into(">H", head, ip + 10, 0)
        struct.pack_into(">H", head, ip + 10, checksum(bytes(head[ip:t])))
        frame = bytes(head) + piece
        out.append(replace(p.record, data=frame, orig_len=len(frame)))
    return out[::-1]


# -- the catalogue ----------------------------------------------------------------------------

FaultFn = Callable[[list[Pkt], random.Random], Faulted]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    name: str
    lossless: bool  # every byte is still in the file: the report must come out identical
    apply: FaultFn


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(name="drop_data_1", lossless=False, apply=drop(0.01, data_only=True)),
        Fault(name="drop_data_5", lossless=False, apply=drop(0.05, data_only=True)),
        Fault(name="drop_any_1", lossless=False, apply=drop(0.01, data_only=False)),
        Fault(name="drop_any_5", lossless=False, apply=drop(0.05, data_only=False)),
        Fault(name="snaplen", lossless=False, apply=snaplen(0.05)),
        Fault(name="truncate_file", lossless=False, apply=truncate_file),
        Fault(name="ack_first_pure", lossless=True, apply=ack_first(twin=False)),
        Fault(name="ack_first_twin", lossless=True, apply=ack_first(twin=True)),
        Fault(name="reorder", lossless=True, apply=reorder()),
        Fault(name="dup_near", lossless=True, apply=dup_near()),
        Fault(name="dup_late", lossless=True, apply=dup_late()),
        Fault(name="fragment", lossless=True, apply=fragment()),
    )
}


def inject(capture: Capture, fault: Fault, seed: int) -> tuple[bytes, list[Touch]]:
    """The faulted capture file and what the fault touched (same seed, same file)."""
    packets, _ = index_packets(capture)
    rng = random.Random(f"{fault.name}:{seed}")
    faulted = fault.apply(packets, rng)
    data = pcap_bytes(capture, faulted.records)
    if faulted.cut_at is not None:
        data = data[: faulted.cut_at]
    return data, faulted.touches


def rewrite(
    capture: Capture, *, drop: frozenset[int] = frozenset(), cut: dict[int, int] | None = None
) -> tuple[bytes, list[Touch]]:
    """A targeted fault: drop these packets (indices of the clean capture), cut these to keep
    only the first N payload bytes (as a snap length does). For the gap-path tests."""
    packets, _ = index_packets(capture)
    cut = cut or {}
    records, touches = [], []
    for p in packets:
        if p.index in drop:
            touches.append(_touch("drop", p, lost=True))
        elif p.index in cut:
            assert p.tcp is not None
            keep = cut[p.index]
            records.append(replace(p.record, data=p.record.data[: p.tcp.payload_offset + keep]))
            touches.append(
                Touch(kind="snaplen", flow=p.tcp.flow, start=p.start + keep, end=p.end, lost=True)
            )
        else:
            records.append(p.record)
    return pcap_bytes(capture, records), touches
