"""Resynchronization after a capture gap (:mod:`agentshark.wire.resync`), on real bytes: the
TCP segments of our own captures (PostgreSQL, Redis, AMQP, Kafka) fed to a decoder with
segments (or the middle of one) left out, and every operation compared with the clean run.
Whatever a gap touched must say so (incomplete); what it did not touch must come out
identical; nothing may come out complete and different."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from agentshark.wire.amqp import AmqpSession
from agentshark.wire.events import Operation, WireDecoder
from agentshark.wire.kafka import KafkaSession
from agentshark.wire.pgsql import PgSession
from agentshark.wire.resp import RespSession
from agentshark.wire.resync import MORE, NOT, Rule, find_boundary
from tests.faults.harness import analyze
from tests.faults.inject import MOD, index_packets
from tests.faults.pcapfile import pcap_bytes, read_capture
from tests.helpers import ROOT

OWN = ROOT / "tests" / "data" / "captures"


@dataclass(frozen=True, slots=True)
class Segment:
    direction: int
    offset: int
    data: bytes
    ts: float
    acked: int


def segments(path: Path, port: int) -> list[Segment]:
    """The data segments of the busiest connection to ``port``, first copies only, each with
    what it acknowledged of the other direction (an offset in that direction's stream)."""
    capture = read_capture(path)
    packets, bases = index_packets(capture)
    busy = Counter(p.conn for p in packets if p.data and p.tcp and port == p.tcp.flow[3])
    conn = busy.most_common(1)[0][0]
    out: list[Segment] = []
    seen: set[tuple[int, int]] = set()
    for p in packets:
        if p.tcp is None or p.conn != conn or not p.data:
            continue
        direction = 0 if p.tcp.flow[3] == port else 1
        if (direction, p.start) in seen:
            continue
        seen.add((direction, p.start))
        s, sp, d, dp = p.tcp.flow
        base = bases.get((d, dp, s, sp))
        acked = (p.tcp.ack - base) % MOD if base is not None and p.tcp.flags & 0x10 else -1
        record = p.record.data
        payload = record[p.tcp.payload_offset : p.tcp.payload_offset + (p.end - p.start)]
        out.append(Segment(direction, p.start, bytes(payload), p.ts, acked))
    return out


Cut = tuple[int, int, int]  # (segment index, first byte lost, bytes lost) of that segment


def run(make: Callable[[], WireDecoder], segs: list[Segment], cuts: tuple[Cut, ...] = ()) -> tuple[
    list[Operation], WireDecoder
]:  # fmt: skip
    """Feed ``segs`` with the byte ranges of ``cuts`` left out (a gap is said when the next
    bytes of its direction come, as TCP reassembly says it)."""
    dec = make()
    lost = {i: (lo, n) for i, lo, n in cuts}
    owed = [0, 0]
    ops: list[Operation] = []
    for i, seg in enumerate(segs):
        data = seg.data
        if i in lost:
            lo, n = lost[i]
            head, tail = data[:lo], data[lo + n :]
            if owed[seg.direction] and head:
                ops += dec.gap(seg.direction, owed[seg.direction], seg.ts)
                owed[seg.direction] = 0
            if head:
                ops += dec.feed(seg.direction, head, seg.ts, seg.acked)
            owed[seg.direction] += n
            if not tail:
                continue
            data = tail
        if owed[seg.direction]:
            ops += dec.gap(seg.direction, owed[seg.direction], seg.ts)
            owed[seg.direction] = 0
        ops += dec.feed(seg.direction, data, seg.ts, seg.acked)
    ops += dec.close()
    return ops, dec


def _keyed(ops: list[Operation]) -> dict[tuple[float | None, str | None, int], Operation]:
    """Operations by start, statement and rank among those alike (pipelined twins)."""
    seen: Counter[tuple[float | None, str | None]] = Counter()
    out = {}
    for op in sorted(ops, key=lambda o: o.index):
        k = (op.started, op.statement)
        out[(*k, seen[k])] = op
        seen[k] += 1
    return out


def compare(
    clean: list[Operation], faulted: list[Operation], after: float, *, exact: bool
) -> list[str]:
    """Problems: an operation complete but different from its clean twin (or with none), or
    one that started after ``after`` and is not identical to it (``exact``), or neither
    identical nor incomplete with a Diagnostic that says why (not ``exact``: where the
    evidence cannot prove the pairing). The index is a count: left out."""
    twins = _keyed(clean)
    problems = []
    for key, op in _keyed(faulted).items():
        twin = twins.get(key)
        same = twin is not None and replace(twin, index=0) == replace(op, index=0)
        whole = op.response_complete and op.request_complete
        if whole and not same:
            problems.append(f"complete but different: {op.statement}")
        elif (op.started or 0.0) > after and not same and (exact or not op.diagnostics):
            problems.append(f"not identical after the gap: {op.statement}")
    return problems


def codes(dec: WireDecoder, ops: list[Operation]) -> set[str]:
    return {d.code for d in dec.diagnostics} | {d.code for o in ops for d in o.diagnostics}


CASES: dict[str, tuple[int, Callable[[], WireDecoder], str]] = {
    "pg_psycopg": (54329, lambda: PgSession("pg"), "pg"),
    "redis_py": (63799, lambda: RespSession("redis"), "resp"),
    "amqp_pika": (56729, lambda: AmqpSession("amqp"), "amqp"),
    "kafka_confluent": (39092, lambda: KafkaSession("kafka"), "kafka"),
}


# where the evidence proves the pairing after a lost segment (see the modules' docstrings):
# Kafka by correlation id, PostgreSQL at the next ReadyForQuery sync point, AMQP replies by
# channel and method. Lost AMQP client frames leave a confirm channel's publish count
# unknown, lost Redis commands the count of replies owed: what follows is incomplete.
EXACT = {
    ("pg_psycopg", 0), ("pg_psycopg", 1), ("kafka_confluent", 0), ("kafka_confluent", 1),
    ("amqp_pika", 1), ("redis_py", 1),
}  # fmt: skip


def _pick(segs: list[Segment], direction: int, *, whole: bool) -> int:
    """A segment of ``direction`` in the middle of the connection (a large one when a cut
    inside it is wanted)."""
    mine = [i for i, s in enumerate(segs) if s.direction == direction]
    middle = mine[len(mine) // 2 :]
    if whole:
        return middle[0]
    return max(middle, key=lambda i: len(segs[i].data))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("direction", [0, 1])
def test_a_segment_lost_at_a_boundary_is_resynced(name: str, direction: int) -> None:
    port, make, prefix = CASES[name]
    segs = segments(OWN / name / "capture.pcap", port)
    clean, clean_dec = run(make, segs)
    assert clean and not codes(clean_dec, clean) & {f"{prefix}.gap", f"{prefix}.resync"}
    i = _pick(segs, direction, whole=True)
    ops, dec = run(make, segs, ((i, 0, len(segs[i].data)),))
    found = codes(dec, ops)
    assert {f"{prefix}.gap", f"{prefix}.resync"} <= found, found
    resync = next(d for d in dec.diagnostics if d.code == f"{prefix}.resync")
    assert "bytes were skipped" in resync.message
    # the operations that begin after the next exchange of the connection are the clean ones
    later = [s.ts for s in segs[i + 1 :] if s.direction == 0]
    after = later[1] if len(later) > 1 else segs[-1].ts
    exact = (name, direction) in EXACT
    assert compare(clean, ops, after - 1e-9, exact=exact) == []
    assert sum((o.started or 0.0) >= after for o in ops) >= 1
    if not exact:  # said so, with the reason
        pairing = {f"{prefix}.gap_pairing", "amqp.gap_confirm", "amqp.gap_unsure"}
        assert pairing & found, found


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("direction", [0, 1])
def test_a_cut_inside_a_segment_is_marked_and_read_past(name: str, direction: int) -> None:
    port, make, prefix = CASES[name]
    segs = segments(OWN / name / "capture.pcap", port)
    clean, _ = run(make, segs)
    i = _pick(segs, direction, whole=False)
    size = len(segs[i].data)
    ops, dec = run(make, segs, ((i, size // 3, max(1, size // 3)),))
    marked = any(not (o.request_complete and o.response_complete) for o in ops if o not in clean)
    assert marked or f"{prefix}.gap" in codes(dec, ops)
    later = [s.ts for s in segs[i + 1 :] if s.direction == 0]
    after = later[1] if len(later) > 1 else segs[-1].ts
    assert compare(clean, ops, after - 1e-9, exact=(name, direction) in EXACT) == []


def test_a_boundary_needs_a_chain_of_messages() -> None:
    """Where one well-formed message could start but the next is not well-formed, the scan
    goes on; a chain that ends where the bytes end proves the boundary."""
    rule = Rule(starts=re.compile(b"(?=M)"), measure=_toy, chain=3)
    assert find_boundary(b"xxM3_yyM2M2", rule) == (7, 2)  # M3_ is followed by "yy": no
    assert find_boundary(b"M2M2M2M2", rule) == (0, 3)
    assert find_boundary(b"zzM9", rule) == (2, 0)  # undecided: more bytes may prove it
    assert find_boundary(b"zzzz", rule) == (4, 0)  # no candidate


def _toy(buf: bytes | bytearray, pos: int) -> int:
    """``M`` and a digit n: a message of n bytes."""
    if len(buf) - pos < 2:
        return MORE
    if buf[pos] != ord("M") or not chr(buf[pos + 1]).isdigit():
        return NOT
    n = int(chr(buf[pos + 1]))
    return MORE if len(buf) - pos < n else (n if n >= 2 else NOT)


def test_tls_after_a_lost_ssl_answer_is_told_by_the_client_hello() -> None:
    """The server's one-byte ``S`` not captured: the client's ClientHello right after its
    SSLRequest says TLS began, and where."""
    dec = PgSession("pg")
    dec.feed(0, (8).to_bytes(4) + (80877103).to_bytes(4), 1.0)
    hello = b"\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00"
    dec.feed(0, hello, 1.2)
    ops = dec.gap(1, 1, 1.3)
    assert [(o.kind, o.result, o.response_complete) for o in ops] == [("ssl_request", "S", False)]
    assert [d.code for d in ops[0].diagnostics] == ["pg.answer_lost"]
    switch = dec.take_tls()
    assert switch is not None and switch.offsets == (8, 1) and switch.rest[0] == hello


def test_a_lost_ssl_answer_in_a_capture_still_gives_the_tls_session(tmp_path: Path) -> None:
    """pg_tls with the server's ``S`` segment left out (TCP tells that gap when the client's
    ClientHello acknowledges past it, before its bytes): the TLS is still decrypted and
    every operation inside it read."""
    capture = read_capture(OWN / "pg_tls" / "capture.pcap")
    packets, _ = index_packets(capture)
    answer = next(
        p.index
        for p in packets
        if p.tcp is not None
        and p.end - p.start == 1
        and p.record.data[p.tcp.payload_offset : p.tcp.payload_offset + 1] == b"S"
    )
    faulted = tmp_path / "lost_answer.pcap"
    faulted.write_bytes(
        pcap_bytes(capture, [r for i, r in enumerate(capture.records) if i != answer])
    )
    keys = OWN / "pg_tls" / "keys.log"
    clean, lost = analyze(OWN / "pg_tls" / "capture.pcap", keys), analyze(faulted, keys)
    assert len(lost.exchanges) == len(clean.exchanges)
    ssl = [it for it in lost.exchanges if '"SSLRequest"' in it.content]
    assert ssl and not ssl[0].complete
    assert "pg.answer_lost" in ssl[0].content + " ".join(ssl[0].diagnostics)
    same = sum(a.content == b.content for a, b in zip(clean.exchanges, lost.exchanges, strict=True))
    assert same >= len(clean.exchanges) - 2  # the SSLRequest (and its connection's first op)
