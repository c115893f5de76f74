"""Which worker takes a packet (``net.shard``): both directions of a connection on one worker,
every link type the decoder reads, and anything unusual decoded by every worker."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshark.net.packet import PacketDecoder
from agentshark.net.shard import EVERYONE, flow_owner, packet_owner
from tests.net.test_packet import (
    DST4,
    DST6,
    SRC4,
    SRC6,
    eth,
    extension,
    fragment6,
    ipv4,
    ipv6,
    pkt,
    sll,
    sll2,
    tcp,
)


def _v4(sport: int, dport: int, *, src: bytes = SRC4, dst: bytes = DST4) -> bytes:
    return ipv4(tcp(b"data", sport=sport, dport=dport), src=src, dst=dst)


def _v6(sport: int, dport: int, *, src: bytes = SRC6, dst: bytes = DST6) -> bytes:
    return ipv6(tcp(b"data", sport=sport, dport=dport), src=src, dst=dst)


@given(
    st.integers(1, 65535),
    st.integers(1, 65535),
    st.binary(min_size=4, max_size=4),
    st.binary(min_size=4, max_size=4),
    st.integers(2, 5),
)
def test_both_directions_of_a_connection_go_to_one_worker(
    sport: int, dport: int, a: bytes, b: bytes, jobs: int
) -> None:
    there = packet_owner(1, eth(_v4(sport, dport, src=a, dst=b)), jobs)
    back = packet_owner(1, eth(_v4(dport, sport, src=b, dst=a)), jobs)
    assert there == back
    assert 0 <= there < jobs
    assert there == flow_owner(a, sport, b, dport, jobs)


@given(st.integers(1, 65535), st.integers(1, 65535))
def test_ipv6_both_directions(sport: int, dport: int) -> None:
    there = packet_owner(1, eth(_v6(sport, dport), 0x86DD), 2)
    back = packet_owner(1, eth(_v6(dport, sport, src=DST6, dst=SRC6), 0x86DD), 2)
    assert there == back == flow_owner(SRC6, sport, DST6, dport, 2)


def test_connections_spread_over_workers() -> None:
    """Linux gives a client's ports one parity: the hash must not follow it."""
    owners = [packet_owner(1, eth(_v4(port, 18080)), 2) for port in range(40000, 40400, 2)]
    assert 60 < owners.count(0) < 140


@pytest.mark.parametrize(
    ("linktype", "frame"),
    [
        (1, eth(_v4(40000, 443), tags=(0x8100,))),  # 802.1Q
        (1, eth(_v4(40000, 443), tags=(0x88A8, 0x8100))),  # QinQ
        (1, eth(_v6(40000, 443), 0x86DD, tags=(0x8100,))),
        (113, sll(_v4(40000, 443))),  # Linux cooked v1
        (113, sll(_v6(40000, 443), 0x86DD)),
        (276, sll2(_v4(40000, 443))),  # Linux cooked v2
        (276, sll2(_v6(40000, 443), 0x86DD)),
        (0, struct.pack("<I", 2) + _v4(40000, 443)),  # BSD loopback
        (108, struct.pack(">I", 30) + _v6(40000, 443)),
        (101, _v4(40000, 443)),  # raw IP
        (229, _v6(40000, 443)),
    ],
)
def test_link_types_match_the_decoded_segment(linktype: int, frame: bytes) -> None:
    """The worker chosen from the raw bytes is the one the decoded segment's connection
    hashes to, and the decoder takes such a packet without counting anything."""
    decoder = PacketDecoder("t.pcap")
    seg = decoder.decode(pkt(frame, linktype))
    assert seg is not None
    assert decoder.counts == {}
    for jobs in (2, 3, 7):
        assert packet_owner(linktype, frame, jobs) == flow_owner(
            seg.src, seg.sport, seg.dst, seg.dport, jobs
        )


@pytest.mark.parametrize(
    "frame",
    [
        eth(ipv4(tcp(b"x" * 40), frag=0x2000)),  # first fragment (More Fragments)
        eth(ipv4(b"tail", frag=0x0005)),  # a later fragment: no TCP header in it
        eth(ipv6(extension(6) + tcp(b"p"), next_header=0), 0x86DD),  # hop-by-hop first
        eth(ipv6(fragment6(6, 0, True) + tcp(b"p"), next_header=44), 0x86DD),
        eth(ipv4(tcp(b"p"), total=0)),  # segmentation offload: length 0
        eth(ipv4(tcp(b"p" * 100)))[:60],  # cut by the snap length
        eth(ipv4(tcp(b"p")[:12] + b"\x20" + tcp(b"p")[13:])),  # TCP data offset 8: malformed
    ],
)
def test_unusual_packets_go_to_every_worker(frame: bytes) -> None:
    assert packet_owner(1, frame, 2) == EVERYONE


@pytest.mark.parametrize(
    ("linktype", "frame"),
    [
        (1, eth(ipv4(b"\x00\x35\x00\x35\x00\x0c\x00\x00dns!", proto=17))),  # UDP
        (1, eth(ipv6(b"\x01\xbb\x01\xbb\x00\x0c\x00\x00quic", next_header=17), 0x86DD)),
        (1, eth(b"\x00" * 28, 0x0806)),  # ARP
        (1, eth(ipv4(b"\x08\x00" + bytes(6), proto=1))),  # ICMP
        (1, b"\x00" * 8),  # shorter than an Ethernet header
        (147, _v4(40000, 443)),  # a link type the decoder does not read
    ],
)
def test_what_cannot_be_tcp_goes_to_the_first_worker(linktype: int, frame: bytes) -> None:
    """UDP (so QUIC, whose connections may change 4-tuple) and what the decoder only counts."""
    assert packet_owner(linktype, frame, 3) == 0
