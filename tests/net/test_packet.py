"""PacketDecoder: hand-built packets for every link type and IP feature, fragments, truncation,
counting, bounded diagnostics, the fast path against the general path, and fuzzing."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.net.packet import MAX_DIAGNOSTICS, PacketDecoder
from agentshark.net.segment import ACK, PSH, SYN, TcpSegment
from agentshark.sources.pcap import MAGICS, read_pcap
from agentshark.sources.pcapng import SHB_MAGIC, read_pcapng
from agentshark.sources.records import Packet
from tests.helpers import CAPTURES, CORPUS

SRC4, DST4 = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
SRC6, DST6 = bytes(15) + b"\x01", bytes.fromhex("20010db8") + bytes(11) + b"\x02"

# -- builders ---------------------------------------------------------------------------


def tcp(
    payload: bytes = b"",
    *,
    sport: int = 40000,
    dport: int = 443,
    seq: int = 1000,
    ack: int = 2000,
    flags: int = ACK | PSH,
    options: bytes = b"",
) -> bytes:
    assert len(options) % 4 == 0
    offset = (20 + len(options)) // 4
    return (
        struct.pack("!HHIIBBHHH", sport, dport, seq, ack, offset << 4, flags, 65535, 0, 0)
        + options
        + payload
    )


def ipv4(
    payload: bytes,
    *,
    proto: int = 6,
    src: bytes = SRC4,
    dst: bytes = DST4,
    ident: int = 7,
    frag: int = 0x4000,  # Don't Fragment
    options: bytes = b"",
    total: int | None = None,
) -> bytes:
    ihl = (20 + len(options)) // 4
    length = 20 + len(options) + len(payload) if total is None else total
    header = struct.pack(
        "!BBHHHBBH4s4s", 0x40 | ihl, 0, length, ident, frag, 64, proto, 0, src, dst
    )
    return header + options + payload


def ipv6(
    payload: bytes,
    *,
    next_header: int = 6,
    src: bytes = SRC6,
    dst: bytes = DST6,
    length: int | None = None,
) -> bytes:
    plen = len(payload) if length is None else length
    return struct.pack("!IHBB16s16s", 0x60000000, plen, next_header, 64, src, dst) + payload


def extension(next_header: int, body_units: int = 0) -> bytes:
    """A hop-by-hop / routing / destination-options style header, (1 + body_units) * 8 bytes."""
    return bytes([next_header, body_units]) + bytes(6 + 8 * body_units)


def fragment6(next_header: int, offset: int, more: bool, ident: int = 0x1234) -> bytes:
    return struct.pack("!BBHI", next_header, 0, offset | int(more), ident)


def eth(l3: bytes, ethertype: int = 0x0800, tags: tuple[int, ...] = ()) -> bytes:
    head = bytes(6) + b"\x02" + bytes(5)
    for i, tpid in enumerate(tags):
        head += struct.pack("!HH", tpid, 100 + i)
    return head + struct.pack("!H", ethertype) + l3


def pkt(
    data: bytes, linktype: int = 1, *, index: int = 1, ts: float = 1.5, orig_len: int | None = None
) -> Packet:
    return Packet(ts, linktype, data, len(data) if orig_len is None else orig_len, index, 0)


def decode(
    data: bytes, linktype: int = 1, *, orig_len: int | None = None
) -> tuple[TcpSegment | None, PacketDecoder]:
    decoder = PacketDecoder("test.pcap")
    return decoder.decode(pkt(data, linktype, orig_len=orig_len)), decoder


def one(data: bytes, linktype: int = 1) -> TcpSegment:
    segment, decoder = decode(data, linktype)
    assert segment is not None, decoder.counts
    assert decoder.counts == {}
    assert decoder.diagnostics == []
    return segment


# -- Ethernet, IPv4, TCP ------------------------------------------------------------------


def test_ethernet_ipv4_tcp_fields() -> None:
    seg = one(eth(ipv4(tcp(b"hello", sport=1, dport=2, seq=3, ack=4, flags=SYN | ACK))))
    assert seg == TcpSegment(1.5, SRC4, 1, DST4, 2, 3, 4, SYN | ACK, b"hello", 0, 1)


def test_tcp_options_are_skipped() -> None:
    options = b"\x01\x01\x08\x0a" + bytes(8)
    assert one(eth(ipv4(tcp(b"body", options=options)))).payload == b"body"


def test_ipv4_options_are_skipped() -> None:
    seg = one(eth(ipv4(tcp(b"xyz"), options=b"\x01\x01\x01\x00")))
    assert (seg.payload, seg.src, seg.dport) == (b"xyz", SRC4, 443)


def test_ethernet_padding_is_not_payload() -> None:
    # RFC 791: the datagram ends at its total length; a 60-byte minimum frame pads after it.
    frame = eth(ipv4(tcp(b"a"))) + b"\x00" * 5 + b"\xde\xad\xbe\xef"  # padding and an FCS
    assert one(frame).payload == b"a"


def test_bare_ack_has_empty_payload() -> None:
    seg = one(eth(ipv4(tcp(flags=ACK))) + bytes(6))
    assert (seg.payload, seg.flags, seg.missing) == (b"", ACK, 0)


@pytest.mark.parametrize(
    "tags",
    [(0x8100,), (0x88A8, 0x8100), (0x9100, 0x8100), (0x88A8, 0x8100, 0x8100)],
    ids=["802.1Q", "802.1ad QinQ", "0x9100 QinQ", "three tags"],
)
def test_vlan_tags(tags: tuple[int, ...]) -> None:
    assert one(eth(ipv4(tcp(b"vlan")), tags=tags)).payload == b"vlan"


def test_vlan_tagged_ipv6() -> None:
    assert one(eth(ipv6(tcp(b"v6")), 0x86DD, tags=(0x8100,))).payload == b"v6"


def test_pppoe_session() -> None:
    pppoe = struct.pack("!BBHH", 0x11, 0, 0x1A3B, 0) + b"\x00\x21"
    assert one(eth(pppoe + ipv4(tcp(b"dsl")), 0x8864)).payload == b"dsl"
    lcp = struct.pack("!BBHH", 0x11, 0, 0x1A3B, 0) + b"\xc0\x21" + bytes(10)
    assert decode(eth(lcp, 0x8864))[1].counts == {"non-ip": 1}


def test_ethernet_ipv6_tcp() -> None:
    seg = one(eth(ipv6(tcp(b"six", sport=5, dport=6)), 0x86DD))
    assert (seg.src, seg.dst, seg.sport, seg.dport, seg.payload) == (SRC6, DST6, 5, 6, b"six")


# -- other link types ---------------------------------------------------------------------


def sll(l3: bytes, protocol: int = 0x0800) -> bytes:
    return struct.pack("!HHH8sH", 0, 772, 6, bytes(8), protocol) + l3


def sll2(l3: bytes, protocol: int = 0x0800) -> bytes:
    return struct.pack("!HHIHBB8s", protocol, 0, 1, 772, 0, 6, bytes(8)) + l3


@pytest.mark.parametrize(
    ("linktype", "frame"),
    [
        (113, sll(ipv4(tcp(b"p")))),
        (113, sll(ipv6(tcp(b"p")), 0x86DD)),
        (276, sll2(ipv4(tcp(b"p")))),
        (276, sll2(ipv6(tcp(b"p")), 0x86DD)),
        (0, struct.pack("<I", 2) + ipv4(tcp(b"p"))),  # little-endian capturing host
        (0, struct.pack(">I", 2) + ipv4(tcp(b"p"))),  # big-endian capturing host
        (0, struct.pack("<I", 24) + ipv6(tcp(b"p"))),  # NetBSD / OpenBSD AF_INET6
        (0, struct.pack("<I", 28) + ipv6(tcp(b"p"))),  # FreeBSD
        (0, struct.pack("<I", 30) + ipv6(tcp(b"p"))),  # macOS
        (0, struct.pack(">I", 30) + ipv6(tcp(b"p"))),
        (108, struct.pack(">I", 2) + ipv4(tcp(b"p"))),
        (108, struct.pack(">I", 24) + ipv6(tcp(b"p"))),
        (101, ipv4(tcp(b"p"))),
        (101, ipv6(tcp(b"p"))),
        (12, ipv4(tcp(b"p"))),
        (14, ipv6(tcp(b"p"))),
        (228, ipv4(tcp(b"p"))),
        (229, ipv6(tcp(b"p"))),
    ],
)
def test_link_types(linktype: int, frame: bytes) -> None:
    seg = one(frame, linktype)
    assert (seg.payload, seg.sport, seg.dport) == (b"p", 40000, 443)


def test_sll_with_vlan_tag() -> None:
    frame = sll(struct.pack("!HH", 5, 0x0800) + ipv4(tcp(b"q")), 0x8100)
    assert one(frame, 113).payload == b"q"


def test_loopback_unknown_family_is_non_ip() -> None:
    assert decode(struct.pack("<I", 7) + bytes(40), 0)[1].counts == {"non-ip": 1}


def test_unsupported_linktype_is_counted_and_reported() -> None:
    segment, decoder = decode(bytes(60), 147)
    assert segment is None
    assert decoder.counts == {"linktype-unsupported:147": 1}
    [diagnostic] = decoder.diagnostics
    assert diagnostic.code == "packet.unsupported_linktype"
    assert diagnostic.location == "test.pcap packet 1"


# -- non-TCP packets are counted ----------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "key"),
    [
        (eth(ipv4(bytes(8) + b"dns", proto=17)), "udp"),
        (eth(ipv4(bytes(8), proto=1)), "icmp"),
        (eth(ipv4(bytes(8), proto=99)), "ip-proto:99"),
        (eth(ipv6(bytes(8), next_header=58), 0x86DD), "icmpv6"),
        (eth(ipv6(bytes(8), next_header=17), 0x86DD), "udp"),
        (eth(ipv6(extension(17) + bytes(8), next_header=0), 0x86DD), "udp"),
        (eth(ipv6(b"", next_header=59), 0x86DD), "ipv6-no-next-header"),
        (eth(bytes(28), 0x0806), "arp"),
        (eth(bytes(40), 0x88CC), "non-ip"),  # LLDP
        (eth(bytes(40), 0x0026), "non-ip"),  # an 802.3 length field (LLC)
    ],
)
def test_non_tcp_is_counted(frame: bytes, key: str) -> None:
    segment, decoder = decode(frame)
    assert segment is None
    assert decoder.counts == {key: 1}
    assert decoder.diagnostics == []


# -- IPv6 extension headers ---------------------------------------------------------------


def test_ipv6_extension_chain() -> None:
    # hop-by-hop (8) -> routing (24) -> destination options (16) -> TCP
    chain = extension(43) + extension(60, 2) + extension(6, 1)
    seg = one(eth(ipv6(chain + tcp(b"deep"), next_header=0), 0x86DD))
    assert seg.payload == b"deep"


def test_ipv6_authentication_header_length_unit() -> None:
    # RFC 4302: AH length is in 32-bit words minus 2; 24 bytes here (96-bit ICV).
    ah = bytes([6, 4]) + bytes(22)
    assert one(eth(ipv6(ah + tcp(b"ah"), next_header=51), 0x86DD)).payload == b"ah"


def test_ipv6_mobility_header_is_walked() -> None:
    assert one(eth(ipv6(extension(6) + tcp(b"m"), next_header=135), 0x86DD)).payload == b"m"


def test_ipv6_atomic_fragment() -> None:
    body = fragment6(6, 0, False) + tcp(b"atomic")
    assert one(eth(ipv6(body, next_header=44), 0x86DD)).payload == b"atomic"


def test_ipv6_extension_past_the_datagram_is_malformed() -> None:
    frame = eth(ipv6(bytes([6, 200]) + bytes(6), next_header=60), 0x86DD)
    segment, decoder = decode(frame)
    assert segment is None
    assert decoder.counts == {"malformed": 1}


# -- IPv4 fragments -----------------------------------------------------------------------


def ipv4_fragments(datagram_payload: bytes, sizes: list[int], ident: int = 0x55) -> list[bytes]:
    """Cut a transport payload into IPv4 fragments of the given sizes (multiples of 8)."""
    frames, offset = [], 0
    for i, size in enumerate(sizes):
        piece = datagram_payload[offset : offset + size]
        more = i < len(sizes) - 1
        frag = (0x2000 if more else 0) | (offset // 8)
        frames.append(eth(ipv4(piece, ident=ident, frag=frag)))
        offset += size
    assert offset == len(datagram_payload)
    return frames


def run(
    frames: list[bytes], decoder: PacketDecoder | None = None
) -> tuple[list[TcpSegment], PacketDecoder]:
    decoder = decoder or PacketDecoder("test.pcap")
    segments = []
    for i, frame in enumerate(frames, 1):
        segment = decoder.decode(pkt(frame, index=i, ts=float(i)))
        if segment is not None:
            segments.append(segment)
    return segments, decoder


BIG = tcp(bytes(range(256)) * 4, seq=77)  # 20 + 1024 bytes


def test_ipv4_fragments_in_order() -> None:
    segments, decoder = run(ipv4_fragments(BIG, [512, 512, 20]))
    [seg] = segments
    assert (seg.payload, seg.seq, seg.missing) == (bytes(range(256)) * 4, 77, 0)
    assert (seg.ts, seg.packet) == (3.0, 3)  # the time and number of the last fragment
    assert decoder.counts == {"ipv4-fragment-held": 2}
    assert decoder.close() == []


def test_ipv4_fragments_out_of_order() -> None:
    a, b, c = ipv4_fragments(BIG, [512, 512, 20])
    segments, decoder = run([c, a, b])
    [seg] = segments
    assert seg.payload == bytes(range(256)) * 4
    assert seg.packet == 3
    assert decoder.counts == {"ipv4-fragment-held": 2}


def test_ipv4_duplicate_fragment_is_ignored() -> None:
    a, b, c = ipv4_fragments(BIG, [512, 512, 20])
    segments, decoder = run([a, a, b, c])
    assert [s.payload for s in segments] == [bytes(range(256)) * 4]
    assert decoder.counts == {"ipv4-fragment-held": 3}
    assert decoder.diagnostics == []


def test_ipv4_overlapping_fragments_first_bytes_win() -> None:
    a, b, c = ipv4_fragments(BIG, [512, 512, 20])
    # A fragment covering bytes 504..519 with different content, after the first one.
    liar = eth(ipv4(b"\xff" * 16, ident=0x55, frag=0x2000 | (504 // 8)))
    segments, decoder = run([a, liar, b, c])
    [seg] = segments
    # Bytes 504..511 came first from a, bytes 512..519 from the liar (b came after it).
    expected = bytearray(BIG)
    expected[512:520] = b"\xff" * 8
    assert seg.payload == bytes(expected[20:])
    assert [d.code for d in decoder.diagnostics] == [
        "packet.fragment_overlap",
        "packet.fragment_overlap",
    ]
    assert decoder.counts == {"ipv4-fragment-held": 3}


def test_ipv4_overlap_fills_a_gap() -> None:
    # Fragments [0, 16) and [8, 24) overlap yet together cover the datagram.
    payload = tcp(b"0123456789abcdef" * 2)  # 20 + 32 = 52 bytes
    first = eth(ipv4(payload[:16], frag=0x2000))
    second = eth(ipv4(payload[8:], frag=1))
    segments, decoder = run([first, second])
    assert [s.payload for s in segments] == [b"0123456789abcdef" * 2]
    assert [d.code for d in decoder.diagnostics] == ["packet.fragment_overlap"]


def test_ipv4_last_fragment_shorter_than_an_earlier_one() -> None:
    # The first fragment claims bytes 0..63, the last says the datagram ends at 48.
    payload = tcp(b"q" * 44)  # 64 bytes
    first = eth(ipv4(payload, frag=0x2000))
    last = eth(ipv4(payload[40:48], frag=5))
    segments, decoder = run([first, last])
    assert [s.payload for s in segments] == [b"q" * 28]
    assert decoder.diagnostics[0].code == "packet.fragment_overlap"


def test_close_twice_adds_nothing() -> None:
    decoder = PacketDecoder("cap.pcap")
    frame = eth(ipv4(tcp(b"zz")))
    for i in range(1, 26):
        decoder.decode(pkt(frame[:30], index=i, orig_len=len(frame)))
    assert len(decoder.close()) == 1
    assert decoder.close() == []


def test_ipv4_incomplete_fragments_reported_at_close() -> None:
    a, _b, c = ipv4_fragments(BIG, [512, 512, 20])
    segments, decoder = run([a, c])
    assert segments == []
    assert decoder.counts == {"ipv4-fragment-held": 2}
    [diagnostic] = decoder.close()
    assert diagnostic.code == "packet.fragments_incomplete"
    assert diagnostic.location == "test.pcap packet 1"
    assert "10.0.0.1 -> 10.0.0.2 id 0x55" in diagnostic.message
    assert "2 fragments (532 of 1044 bytes)" in diagnostic.message
    assert decoder.diagnostics == [diagnostic]


def test_ipv4_fragment_of_udp_is_counted_on_completion() -> None:
    udp = bytes(8) + b"u" * 40
    frames = [eth(ipv4(udp[:24], proto=17, frag=0x2000)), eth(ipv4(udp[24:], proto=17, frag=3))]
    segments, decoder = run(frames)
    assert segments == []
    assert decoder.counts == {"ipv4-fragment-held": 1, "udp": 1}


def test_interleaved_datagrams_are_kept_apart() -> None:
    one_ = ipv4_fragments(BIG, [512, 532], ident=1)
    two = ipv4_fragments(tcp(b"z" * 100, seq=5), [64, 56], ident=2)
    segments, _ = run([one_[0], two[0], two[1], one_[1]])
    assert [(s.seq, len(s.payload)) for s in segments] == [(5, 100), (77, 1024)]


def test_fragment_cap_evicts_the_oldest() -> None:
    decoder = PacketDecoder("test.pcap", max_fragment_datagrams=2)
    firsts = [ipv4_fragments(BIG, [512, 532], ident=i)[0] for i in range(3)]
    run(firsts, decoder)
    assert [d.code for d in decoder.diagnostics] == ["packet.fragments_evicted"]
    assert decoder.diagnostics[0].location == "test.pcap packet 1"
    assert len(decoder.close()) == 2  # the two still held


def test_fragment_byte_cap() -> None:
    decoder = PacketDecoder("test.pcap", max_fragment_bytes=1000)
    firsts = [ipv4_fragments(BIG, [512, 532], ident=i)[0] for i in range(2)]
    run(firsts, decoder)
    assert [d.code for d in decoder.diagnostics] == ["packet.fragments_evicted"]


def test_fragment_timeout() -> None:
    decoder = PacketDecoder("test.pcap", fragment_timeout=10.0)
    a, b = ipv4_fragments(BIG, [512, 532])
    decoder.decode(pkt(a, ts=100.0, index=1))
    other = ipv4_fragments(BIG, [512, 532], ident=9)[0]
    decoder.decode(pkt(other, ts=111.0, index=2))  # the first datagram expires here
    assert decoder.decode(pkt(b, ts=111.5, index=3)) is None  # it starts a new datagram
    assert [d.code for d in decoder.diagnostics] == ["packet.fragments_incomplete"]


def test_fragment_past_65535_is_bad() -> None:
    frame = eth(ipv4(bytes(16), frag=0x1FFF))  # offset 65528 + 16 bytes
    segment, decoder = decode(frame)
    assert segment is None
    assert decoder.counts == {"ipv4-fragment-bad": 1}
    assert decoder.diagnostics[0].code == "packet.bad_fragment"


def test_truncated_fragment_gives_a_segment_with_missing_bytes() -> None:
    a, b = ipv4_fragments(BIG, [512, 532])
    cut = a[:-100]  # the snap length cut 100 bytes of the first fragment
    decoder = PacketDecoder("test.pcap")
    assert decoder.decode(pkt(cut, index=1, orig_len=len(a))) is None
    seg = decoder.decode(pkt(b, index=2))
    assert seg is not None
    assert seg.payload == (bytes(range(256)) * 4)[: 512 - 100 - 20]
    assert seg.missing == 1044 - 412


# -- IPv6 fragments -----------------------------------------------------------------------


def ipv6_fragments(payload: bytes, sizes: list[int], next_header: int = 6) -> list[bytes]:
    frames, offset = [], 0
    for i, size in enumerate(sizes):
        more = i < len(sizes) - 1
        body = fragment6(next_header, offset, more) + payload[offset : offset + size]
        frames.append(eth(ipv6(extension(44) + body, next_header=0), 0x86DD))
        offset += size
    assert offset == len(payload)
    return frames


def test_ipv6_fragments_reassembled() -> None:
    a, b, c = ipv6_fragments(BIG, [512, 512, 20])
    segments, decoder = run([b, c, a])
    [seg] = segments
    assert (seg.payload, seg.src, seg.packet) == (bytes(range(256)) * 4, SRC6, 3)
    assert decoder.counts == {"ipv6-fragment-held": 2}


def test_ipv6_fragments_with_headers_after_the_fragment_header() -> None:
    # The destination options header is part of the fragmentable part (RFC 8200 §4.5).
    payload = extension(6) + BIG
    segments, _ = run(ipv6_fragments(payload, [520, 532], next_header=60))
    assert [s.payload for s in segments] == [bytes(range(256)) * 4]


def test_ipv6_overlapping_fragments_are_discarded() -> None:
    a, b, c = ipv6_fragments(BIG, [512, 512, 20])
    liar = eth(ipv6(fragment6(6, 504, True) + bytes(16), next_header=44), 0x86DD)
    segments, decoder = run([a, liar, b, c])
    assert segments == []  # RFC 8200 §4.5: the receiver discards the whole datagram
    assert decoder.diagnostics[0].code == "packet.fragment_overlap"
    assert decoder.counts == {"ipv6-fragment-held": 3, "ipv6-fragment-bad": 1}


def test_ipv6_non_final_fragment_not_multiple_of_8_is_bad() -> None:
    frame = eth(ipv6(fragment6(6, 0, True) + bytes(13), next_header=44), 0x86DD)
    assert decode(frame)[1].counts == {"ipv6-fragment-bad": 1}


# -- truncation, malformed headers --------------------------------------------------------


def test_snaplen_cut_payload_sets_missing() -> None:
    frame = eth(ipv4(tcp(b"x" * 1000)))
    segment, decoder = decode(frame[:200], orig_len=len(frame))
    assert segment is not None
    assert segment.payload == b"x" * (200 - 54)
    assert segment.missing == 1000 - (200 - 54)
    assert decoder.diagnostics == []


def test_snaplen_cut_ipv6_payload_sets_missing() -> None:
    frame = eth(ipv6(tcp(b"y" * 500)), 0x86DD)
    segment, _ = decode(frame[:100], orig_len=len(frame))
    assert segment is not None
    assert (segment.payload, segment.missing) == (b"y" * 26, 474)


@pytest.mark.parametrize("cut", [10, 20, 40, 53, 60])
def test_snaplen_cut_before_end_of_tcp_header(cut: int) -> None:
    frame = eth(ipv4(tcp(b"data", options=bytes(12))))
    segment, decoder = decode(frame[:cut], orig_len=len(frame))
    assert segment is None
    assert decoder.counts == {"truncated": 1}
    [diagnostic] = decoder.diagnostics
    assert diagnostic.code == "packet.truncated_header"
    assert diagnostic.location == "test.pcap packet 1"


def test_short_on_the_wire_is_malformed_not_truncated() -> None:
    frame = eth(ipv4(tcp())[:30], 0x0800)
    segment, decoder = decode(frame)
    assert segment is None
    assert decoder.counts == {"malformed": 1}
    # The IP header claims 40 bytes where the frame has 30, then TCP does not fit in them.
    assert [d.code for d in decoder.diagnostics] == ["packet.bad_length", "packet.malformed"]


@pytest.mark.parametrize(
    ("l3", "key"),
    [
        (ipv4(tcp(), total=10), "ipv4-malformed"),  # total length below the header
        (b"\x44" + ipv4(tcp())[1:], "ipv4-malformed"),  # IHL 4
        (b"\x55" + ipv4(tcp())[1:], "ipv4-malformed"),  # version 5
    ],
)
def test_malformed_ipv4(l3: bytes, key: str) -> None:
    segment, decoder = decode(eth(l3))
    assert segment is None
    assert decoder.counts == {key: 1}


def test_bad_tcp_data_offset() -> None:
    raw = bytearray(tcp(b"abc"))
    raw[12] = 0x30  # 12-byte header
    segment, decoder = decode(eth(ipv4(bytes(raw))))
    assert segment is None
    assert decoder.counts == {"tcp-malformed": 1}


def test_ip_length_beyond_the_frame() -> None:
    frame = eth(ipv4(tcp(b"abc"), total=500))
    segment, decoder = decode(frame)
    assert segment is not None
    assert (segment.payload, segment.missing) == (b"abc", 0)
    assert [d.code for d in decoder.diagnostics] == ["packet.bad_length"]


def test_segmentation_offload_zero_total_length() -> None:
    # Captured on the sending host before TSO: IPv4 total length 0, the frame holds it all.
    frame = eth(ipv4(tcp(b"t" * 3000), total=0))
    assert one(frame).payload == b"t" * 3000
    frame6 = eth(ipv6(tcp(b"t" * 3000), length=0), 0x86DD)
    assert one(frame6).payload == b"t" * 3000


def test_empty_and_tiny_frames() -> None:
    for linktype in (1, 113, 276, 0, 108, 101, 228, 229):
        segment, decoder = decode(b"", linktype)
        assert segment is None
        assert sum(decoder.counts.values()) == 1


# -- diagnostics are bounded; everything is counted ---------------------------------------


def test_diagnostics_are_bounded_with_a_summary_at_close() -> None:
    decoder = PacketDecoder("cap.pcap")
    frame = eth(ipv4(tcp(b"zz")))
    for i in range(1, 26):
        decoder.decode(pkt(frame[:30], index=i, orig_len=len(frame)))
    assert len(decoder.diagnostics) == MAX_DIAGNOSTICS
    assert decoder.diagnostics[-1].location == f"cap.pcap packet {MAX_DIAGNOSTICS}"
    [summary] = decoder.close()
    assert summary.code == "packet.truncated_header"
    assert summary.message.startswith("25 packets")
    assert decoder.counts == {"truncated": 25}


def test_every_packet_is_a_segment_or_counted() -> None:
    frames = [
        eth(ipv4(tcp(b"1"))),
        eth(ipv4(bytes(8), proto=17)),
        eth(bytes(28), 0x0806),
        eth(ipv4(tcp(b"1")))[:30],
        *ipv4_fragments(BIG, [512, 532]),
        eth(ipv6(tcp(b"2")), 0x86DD),
    ]
    segments, decoder = run(frames)
    assert len(segments) + sum(decoder.counts.values()) == len(frames)


# -- fast path and general path agree -----------------------------------------------------


@st.composite
def plausible_frames(draw: st.DrawFn) -> tuple[bytes, int]:
    payload = draw(st.binary(max_size=64))
    options = bytes(4 * draw(st.integers(0, 10)))
    segment = tcp(
        payload,
        options=options,
        seq=draw(st.integers(0, 2**32 - 1)),
        flags=draw(st.integers(0, 255)),
    )
    if draw(st.booleans()):
        l3 = ipv4(
            segment,
            frag=draw(st.sampled_from([0, 0x4000, 0x2000, 1])),
            options=draw(st.sampled_from([b"", bytes(4)])),
        )
        frame = eth(l3)
    else:
        frame = eth(ipv6(segment, next_header=draw(st.sampled_from([6, 17]))), 0x86DD)
    frame += draw(st.binary(max_size=8))  # padding
    cut = draw(st.integers(0, len(frame)))
    return frame[: len(frame) - cut] if draw(st.booleans()) else frame, len(frame)


@settings(max_examples=300, deadline=None)
@given(plausible_frames())
def test_fast_path_matches_general_path(case: tuple[bytes, int]) -> None:
    frame, wire = case
    packet = pkt(frame, orig_len=wire)
    fast, general = PacketDecoder("a"), PacketDecoder("a")
    assert fast.decode(packet) == general.decode_general(packet)
    assert fast.counts == general.counts
    assert fast.diagnostics == general.diagnostics


# -- fuzz: any bytes, any link type -------------------------------------------------------

LINKTYPES = [1, 113, 276, 0, 108, 101, 12, 14, 228, 229, 147]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(LINKTYPES), st.binary(max_size=120), st.integers(0, 200))
def test_fuzz_any_bytes(linktype: int, data: bytes, extra: int) -> None:
    decoder = PacketDecoder("fuzz")
    result = decoder.decode(pkt(data, linktype, orig_len=len(data) + extra))
    assert result is None or isinstance(result, TcpSegment)
    assert (result is not None) + sum(decoder.counts.values()) == 1
    assert all(isinstance(d, Diagnostic) for d in decoder.close())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1023), st.integers(0, 255)), max_size=6), st.integers(0, 80)
)
def test_fuzz_mutated_packets(mutations: list[tuple[int, int]], cut: int) -> None:
    """Valid frames with a few bytes changed and the end cut: headers that lie."""
    decoder = PacketDecoder("fuzz")
    frames = [
        eth(ipv4(tcp(b"m" * 30), options=bytes(4)), tags=(0x8100,)),
        eth(ipv6(extension(44) + fragment6(6, 0, True) + bytes(32), next_header=0), 0x86DD),
        *ipv4_fragments(BIG, [512, 532]),
    ]
    for i, frame in enumerate(frames, 1):
        raw = bytearray(frame)
        for position, value in mutations:
            raw[position % len(raw)] = value
        data = bytes(raw[: max(0, len(raw) - cut)])
        result = decoder.decode(pkt(data, index=i, orig_len=len(frame)))
        assert result is None or isinstance(result, TcpSegment)
    decoder.close()


# -- real captures ------------------------------------------------------------------------


def capture_files() -> Iterator[Path]:
    """Every pcap or pcapng file of the shared data, found by its magic number."""
    yield from sorted(CAPTURES.glob("*/capture.pcap"))
    for root, _dirs, files in sorted(os.walk(CORPUS)):
        for name in sorted(files):
            path = Path(root) / name
            with path.open("rb") as f:
                if f.read(4) in MAGICS | {SHB_MAGIC}:
                    yield path


def read_any(path: Path) -> list[object]:
    with path.open("rb") as f:
        magic = f.read(4)
    with path.open("rb") as f:
        reader = read_pcapng if magic == SHB_MAGIC else read_pcap
        return list(reader(f, path.name))


CAPTURE_FILES = list(capture_files())


def test_the_shared_data_has_captures() -> None:
    assert len(CAPTURE_FILES) >= 20


@pytest.mark.parametrize("path", CAPTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_decode_every_packet_of_the_shared_captures(path: Path) -> None:
    decoder, general = PacketDecoder(path.name), PacketDecoder(path.name)
    packets = [item for item in read_any(path) if isinstance(item, Packet)]
    segments = [decoder.decode(p) for p in packets]
    assert segments == [general.decode_general(p) for p in packets]
    found = [s for s in segments if s is not None]
    assert len(found) + sum(decoder.counts.values()) == len(packets)
    decoder.close()
    assert decoder.diagnostics == []


LOOPBACK_RUNS = sorted(p.parent / "run.json" for p in CAPTURES.glob("*/capture.pcap"))


@pytest.mark.parametrize("run_json", LOOPBACK_RUNS, ids=lambda p: p.parent.name)
def test_loopback_captures_are_all_tcp(run_json: Path) -> None:
    """tcpdump's own count (run.json) is the oracle: every packet of these port-filtered
    loopback captures is a TCP segment between 127.0.0.1 and itself, on the recorded port."""
    run_info = json.loads(run_json.read_text())
    pcap = run_json.parent / "capture.pcap"
    decoder = PacketDecoder(pcap.name)
    segments = [decoder.decode(p) for p in read_any(pcap) if isinstance(p, Packet)]
    assert len(segments) == run_info["tcpdump"]["packets captured"]
    assert decoder.counts == {}
    loopback = bytes([127, 0, 0, 1])
    for seg in segments:
        assert seg is not None
        assert seg.src == seg.dst == loopback
        assert run_info["port"] in (seg.sport, seg.dport)
        assert seg.missing == 0
