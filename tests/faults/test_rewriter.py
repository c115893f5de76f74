"""The instrument itself: the rewriter reads and writes captures faithfully, every fault is
seeded and does what it says, and the harness sees no difference where there is none."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from tests.faults.cases import ALL_INPUTS, BY_NAME, KEEPALIVE, UDP_ONLY
from tests.faults.harness import analyze, clean_run, judge, run_case
from tests.faults.inject import FAULTS, MOD, index_packets, inject
from tests.faults.pcapfile import (
    Capture,
    checksum,
    parse_pcap,
    parse_tcp,
    parse_udp,
    pcap_bytes,
    read_capture,
)
from tests.helpers import CAPTURES

TLS13 = BY_NAME["https_tls13_h2"]


@pytest.mark.parametrize("inp", ALL_INPUTS, ids=lambda i: i.name)
def test_pcap_round_trip_is_byte_exact(inp: object) -> None:
    path = inp.path  # type: ignore[attr-defined]
    assert pcap_bytes(read_capture(path)) == path.read_bytes()


def test_pcapng_reads_as_its_pcap_twin() -> None:
    """The shared TLS captures ship a pcapng copy with the keys embedded: same packets, same
    time stamps (the pcapng reader turns them into nanoseconds)."""
    for name in ("https_tls13_h2", "https_tls12_h1", "llm_sdk_openai"):
        pcap = read_capture(CAPTURES / name / "capture.pcap")
        ng = read_capture(CAPTURES / name / "capture.dsb.pcapng")
        assert ng.nanos and not pcap.nanos and ng.linktype == pcap.linktype
        assert [r.data for r in ng.records] == [r.data for r in pcap.records]
        assert [(r.sec, r.frac) for r in ng.records] == [
            (r.sec, r.frac * 1000) for r in pcap.records
        ]


def test_rewritten_capture_analyzes_as_the_original(tmp_path: object) -> None:
    """No fault, no difference: the harness's comparison finds every item identical."""
    from pathlib import Path

    out = Path(str(tmp_path)) / "same.pcap"
    for inp in (TLS13, BY_NAME["mcp_streamable_sessions"], BY_NAME["agent_chat"]):
        capture, clean = clean_run(inp.path, inp.keylog)
        out.write_bytes(pcap_bytes(capture))
        again = analyze(out, inp.keylog)
        verdicts = judge(clean, again, [False] * len(clean.exchanges))
        assert verdicts and {v.outcome for v in verdicts} == {"identical"}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_faults_are_seeded(fault: str) -> None:
    capture, _ = clean_run(TLS13.path, TLS13.keylog)
    first, touches = inject(capture, FAULTS[fault], 3)
    again, touches_again = inject(capture, FAULTS[fault], 3)
    assert first == again and touches == touches_again and touches
    assert first != pcap_bytes(capture)


def _payloads(capture: Capture) -> Counter[tuple[object, int, bytes]]:
    """Every TCP payload of the file (flow, sequence number, bytes)."""
    out: Counter[tuple[object, int, bytes]] = Counter()
    for r in capture.records:
        tcp = parse_tcp(capture.linktype, r.data)
        if tcp is not None and tcp.payload_len:
            out[(tcp.flow, tcp.seq, r.data[tcp.payload_offset :])] += 1
    return out


def _faulted(name: str, fault: str, seed: int = 1) -> tuple[Capture, Capture]:
    capture, _ = clean_run(BY_NAME[name].path, BY_NAME[name].keylog)
    data, _ = inject(capture, FAULTS[fault], seed)
    return capture, parse_pcap(data)


@pytest.mark.parametrize("fault", ["ack_first_pure", "ack_first_twin", "reorder", "dup_near"])
def test_lossless_faults_keep_every_payload(fault: str) -> None:
    clean, faulted = _faulted("http1_cleartext", fault)
    before, after = _payloads(clean), _payloads(faulted)
    assert before - after == Counter()  # nothing lost
    if fault == "dup_near":
        assert len(faulted.records) > len(clean.records)
    else:
        assert after == before


def test_drop_removes_exactly_the_touched_packets() -> None:
    capture, _ = clean_run(KEEPALIVE.path, None)
    for fault, rate in (("drop_data_5", 0.05), ("drop_any_1", 0.01)):
        data, touches = inject(capture, FAULTS[fault], 2)
        faulted = parse_pcap(data)
        gone = len(capture.records) - len(faulted.records)
        assert gone == len(touches) > 0
        pool = sum(1 for p in index_packets(capture)[0] if p.tcp and (p.data or "any" in fault))
        assert gone == round(rate * pool)
        lost = _payloads(capture) - _payloads(faulted)
        assert sum(len(k[2]) * n for k, n in lost.items()) == sum(t.end - t.start for t in touches)


def test_ack_first_puts_an_ack_before_its_data() -> None:
    """In the faulted file some ACK acknowledges bytes of the peer not seen yet; the
    synthesized ACK-only twins carry valid IPv4 and TCP checksums."""
    for fault in ("ack_first_pure", "ack_first_twin"):
        clean, faulted = _faulted("agent_chat", fault)
        assert _acks_ahead(faulted) > _acks_ahead(clean)
    clean, faulted = _faulted("agent_chat", "ack_first_twin")
    twins = [r for r in faulted.records if r not in clean.records]
    assert twins
    for r in twins:
        tcp = parse_tcp(faulted.linktype, r.data)
        assert tcp is not None and tcp.payload_len == 0
        assert checksum(r.data[tcp.ip_offset : tcp.tcp_offset]) == 0
        pseudo = r.data[tcp.ip_offset + 12 : tcp.ip_offset + 20]
        pseudo += bytes([0, 6]) + (len(r.data) - tcp.tcp_offset).to_bytes(2, "big")
        assert checksum(pseudo + r.data[tcp.tcp_offset :]) == 0


def _acks_ahead(capture: Capture) -> int:
    """ACKs that acknowledge more of the peer than the file has shown so far."""
    seen: dict[object, int] = {}
    ahead = 0
    for r in capture.records:
        tcp = parse_tcp(capture.linktype, r.data)
        if tcp is None:
            continue
        peer = (tcp.flow[2], tcp.flow[3], tcp.flow[0], tcp.flow[1])
        if tcp.has_ack and peer in seen and (tcp.ack - seen[peer]) % MOD < MOD // 2:
            ahead += tcp.ack != seen[peer]
        end = (tcp.seq + tcp.payload_len + tcp.syn + tcp.fin) % MOD
        if tcp.flow not in seen or (end - seen[tcp.flow]) % MOD < MOD // 2:
            seen[tcp.flow] = end
    return ahead


def test_reorder_swaps_segments_of_one_direction() -> None:
    clean, faulted = _faulted("https_tls13_h2", "reorder")
    order = [(parse_tcp(clean.linktype, r.data), r) for r in faulted.records]
    backwards = sum(
        1
        for (a, _), (b, _) in itertools.pairwise(order)
        if a and b and a.flow == b.flow and b.payload_len and (a.seq - b.seq) % MOD < MOD // 2
        if a.seq != b.seq
    )
    assert backwards >= 1


def test_snaplen_and_truncation_cut_records() -> None:
    capture, _ = clean_run(BY_NAME["agent_chat"].path, None)
    data, touches = inject(capture, FAULTS["snaplen"], 1)
    cut = [r for r in parse_pcap(data).records if len(r.data) < r.orig_len]
    assert len(cut) == len(touches) >= 1
    data, touches = inject(capture, FAULTS["truncate_file"], 1)
    assert len(data) < len(pcap_bytes(capture))
    with pytest.raises(ValueError, match="cut short"):
        parse_pcap(data)


def test_fragments_carry_the_whole_packet() -> None:
    capture, _ = clean_run(BY_NAME["http1_cleartext"].path, None)
    data, touches = inject(capture, FAULTS["fragment"], 5)
    faulted = parse_pcap(data)
    frags = [r for r in faulted.records if parse_tcp(faulted.linktype, r.data) is None]
    assert len(frags) >= 2 * len(touches)
    for r in frags:
        assert checksum(r.data[14:34]) == 0  # Ethernet, then an IPv4 header without options


def test_every_fault_reaches_every_input_but_three() -> None:
    """A fault that finds no candidate in a capture touches nothing there. Three captures
    send every message in one segment, answered before the next (the MCP ones, and
    mysql-connector's request/answer turns): no two data segments of one direction follow
    each other without an ACK of the first in between, so ``reorder`` has nothing to swap
    that would not also put an ACK before its data. The QUIC captures have no TCP ACK to
    move."""
    empty = []
    for inp in ALL_INPUTS:
        capture, _ = clean_run(inp.path, inp.keylog)
        packets, _ = index_packets(capture)
        for name, fault in FAULTS.items():
            if not fault.apply(packets, random.Random(0)).touches:
                empty.append((inp.name, name))
    quic = [(name, f) for name in sorted(UDP_ONLY) for f in ("ack_first_pure", "ack_first_twin")]
    assert sorted(empty) == sorted(
        [
            ("mcp_http_plain", "reorder"),
            ("mcp_streamable_sessions", "reorder"),
            ("mysql_connector", "reorder"),
            *quic,
        ]
    )


H3 = BY_NAME["h3_lossy"]


def test_datagram_faults_do_what_they_say() -> None:
    """On a QUIC capture: a cut datagram keeps fewer bytes than its UDP length says, a copy is
    the same bytes, a swap is of two datagrams of one direction (never a flow's first), a
    fragment's IPv4 header sums to zero; each touch names its datagram's ordinal and time."""
    capture = read_capture(H3.path)
    packets, _ = index_packets(capture)
    assert all(p.udp is not None for p in packets)
    firsts = {p.index for p in packets if p.start == 0}
    for name in ("snaplen", "dup_near", "dup_late", "reorder", "fragment", "drop_any_5"):
        data, touches = inject(capture, FAULTS[name], 1)
        out = parse_pcap(data).records
        assert touches and all(t.datagram and t.end == t.start + 1 for t in touches)
        by_ordinal = {(p.udp.flow, p.start): p for p in packets if p.udp is not None}
        for t in touches:
            assert by_ordinal[(t.flow, t.start)].ts == t.ts
        if name == "snaplen":
            cut = [r for r in out if len(r.data) < r.orig_len]
            assert len(cut) == len(touches)
            for r in cut:
                udp = parse_udp(capture.linktype, r.data)
                assert udp is not None and len(r.data) < udp.payload_offset + udp.payload_len
        elif name == "dup_near":
            assert len(out) == len(packets) + len(touches)
            copies = Counter(r.data for r in out)
            assert sum(n - 1 for n in copies.values()) >= len(touches)
        elif name == "reorder":
            moved = [
                i
                for i, (r, p) in enumerate(zip(out, packets, strict=True))
                if r.data != p.record.data
            ]
            assert moved and not firsts & set(moved)
            flows = {parse_udp(capture.linktype, out[i].data).flow for i in moved}  # type: ignore[union-attr]
            assert len(flows) <= len(moved) // 2
        elif name == "fragment":
            frags = [r for r in out if parse_udp(capture.linktype, r.data) is None]
            assert len(frags) >= 2 * len(touches)
        elif name == "drop_any_5":
            assert len(out) == len(packets) - len(touches)


def test_run_case_classifies_a_lossless_fault_as_identical() -> None:
    result = run_case(TLS13.name, TLS13.path, TLS13.keylog, "dup_near", 1)
    assert result.verdicts and all(v.outcome == "identical" for v in result.verdicts)
