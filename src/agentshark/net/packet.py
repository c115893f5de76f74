"""Decode link, IP and TCP headers: ``Packet`` -> ``TcpSegment``, or ``None`` and a count.

Link types (https://www.tcpdump.org/linktypes.html): 1 Ethernet, with stacked 802.1Q / 802.1ad
tags and PPPoE sessions; 113 Linux cooked v1; 276 Linux cooked v2; 0 BSD loopback (host byte
order); 108 OpenBSD loopback (network byte order); 101 / 12 / 14 raw IP; 228 raw IPv4; 229 raw
IPv6. Then IPv4 (RFC 791) or IPv6 (RFC 8200, extension headers walked), then TCP (RFC 9293).
Fragments of either IP version go to ``net.fragments``, and their datagram goes on from here
once it is whole.

Every packet that does not become a segment is counted in ``PacketDecoder.counts`` under
exactly one key (``"udp"``, ``"arp"``, ``"ipv4-fragment-held"``, ``"truncated"``...), so the
packets given to ``decode`` are the segments returned plus ``sum(counts.values())`` plus the UDP
datagrams a ``udp`` consumer took (``datagrams``): nothing is dropped without a trace. A UDP
datagram (RFC 768) goes to the ``udp`` callable when one is given (the QUIC stage); it is counted
under ``"udp"`` when the callable says it is not its own, as it is without one. Problems also
become Diagnostics, at most ``MAX_DIAGNOSTICS`` per code with their packet number, then one
summary per code at ``close()``.

This runs once per packet, so ``decode`` starts with an inlined fast path for the usual case
(Ethernet, IPv4 or IPv6, TCP, not fragmented, all captured): one ``struct.unpack_from`` over
the three headers and one slice. Everything else goes through the general path, which gives
the same results for those packets (the tests check it).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from agentshark.errors import Diagnostic
from agentshark.net.fragments import (
    FRAGMENT_TIMEOUT,
    MAX_FRAGMENT_BYTES,
    MAX_FRAGMENT_DATAGRAMS,
    FragmentReassembler,
)
from agentshark.net.segment import TcpSegment, UdpDatagram
from agentshark.sources.records import Packet

__all__ = ["MAX_DIAGNOSTICS", "PacketDecoder", "UdpDatagram", "network_layer"]

MAX_DIAGNOSTICS = 20  # detailed diagnostics per code; the rest are counted

# Fast path layouts: Ethernet header, then IPv4 without options or the fixed IPv6 header,
# then the first 14 bytes of TCP. Fields not needed are skipped with pad bytes.
#   ethertype | IPv4: version+IHL, total length, flags+fragment offset, protocol, src, dst
#   | TCP: ports, seq, ack, data offset, flags
_ETH_IPV4_TCP = struct.Struct("!12xHBxH2xHxB2x4s4sHHIIBB")
#   ethertype | IPv6: payload length, next header, src, dst | TCP as above
_ETH_IPV6_TCP = struct.Struct("!12xH4xHBx16s16sHHIIBB")

_new = tuple.__new__  # builds a NamedTuple without its Python-level __new__ (60 ns less)

_IPV4 = struct.Struct("!BxHHHxB2x4s4s")  # version+IHL, total length, id, frag, proto, src, dst
_IPV6 = struct.Struct("!IHBx16s16s")  # version+class+flow, payload length, next header, src, dst
_IPV6_FRAGMENT = struct.Struct("!BxHI")  # next header, offset+flags, identification
_TCP = struct.Struct("!HHIIBB")  # ports, seq, ack, data offset, flags
_UDP = struct.Struct("!HHH")  # ports, length

_IPV4_TYPE, _IPV6_TYPE, _ARP_TYPE, _PPPOE_SESSION_TYPE = 0x0800, 0x86DD, 0x0806, 0x8864
_PPP_PROTOCOLS = {0x0021: _IPV4_TYPE, 0x0057: _IPV6_TYPE}
# 802.1Q customer tag, 802.1ad service tag, and the pre-standard QinQ tag 0x9100.
_VLAN_TYPES = frozenset((0x8100, 0x88A8, 0x9100))

# RFC 8200 §4 extension headers with the common "next header, length in 8-octet units not
# counting the first 8" layout: hop-by-hop 0, routing 43, destination options 60, mobility
# 135 (RFC 6275), HIP 139 (RFC 7401), shim6 140 (RFC 5533).
_IPV6_EXTENSIONS = frozenset((0, 43, 60, 135, 139, 140))
_IPV6_FRAGMENT_HEADER, _IPV6_AH, _IPV6_NO_NEXT = 44, 51, 59

_TRANSPORT_NAMES = {
    1: "icmp",
    2: "igmp",
    17: "udp",
    33: "dccp",
    47: "gre",
    50: "esp",
    58: "icmpv6",
    132: "sctp",
}

# BSD loopback address families (libpcap's DLT_NULL notes): AF_INET is 2 everywhere, AF_INET6
# is 24 (NetBSD, OpenBSD), 28 (FreeBSD), 30 (macOS, iOS).
_NULL_FAMILIES = {2: _IPV4_TYPE, 24: _IPV6_TYPE, 28: _IPV6_TYPE, 30: _IPV6_TYPE}


class PacketDecoder:
    """Turn ``Packet`` values into ``TcpSegment`` values; count and report everything else.

    ``source_name`` names the capture in diagnostic locations (``"{source_name} packet 12"``).
    ``diagnostics`` grows as problems are found; ``close()`` adds the fragments that never
    completed and one summary per code whose diagnostics were cut at ``MAX_DIAGNOSTICS``.
    """

    def __init__(
        self,
        source_name: str,
        *,
        max_fragment_datagrams: int = MAX_FRAGMENT_DATAGRAMS,
        max_fragment_bytes: int = MAX_FRAGMENT_BYTES,
        fragment_timeout: float = FRAGMENT_TIMEOUT,
        udp: Callable[[UdpDatagram], bool] | None = None,
    ) -> None:
        """``udp``: takes each UDP datagram, returns False for one that is not its own."""
        self.source_name = source_name
        self.datagrams = 0  # UDP datagrams ``udp`` took
        self._udp = udp
        self.diagnostics: list[Diagnostic] = []
        self.counts: dict[str, int] = {}
        self._seen: dict[str, int] = {}  # diagnostics per code, reported or not
        self._fragments = FragmentReassembler(
            self._count,
            self._report,
            max_datagrams=max_fragment_datagrams,
            max_bytes=max_fragment_bytes,
            timeout=fragment_timeout,
        )

    def decode(self, pkt: Packet) -> TcpSegment | None:
        """The segment ``pkt`` carries, or ``None`` (the packet is then counted)."""
        ts, linktype, data, _orig_len, index, _offset = pkt
        if linktype == 1 and len(data) >= 54:
            # Fast path: Ethernet (no tag), IPv4 without options or IPv6 without extension
            # headers, TCP, not a fragment, captured to the end of the IP datagram.
            (etype, vihl, length, frag, proto, src, dst, sport, dport, seq, ack, doff, flags) = (
                _ETH_IPV4_TCP.unpack_from(data)
            )
            if etype == 0x0800:
                start = 34 + ((doff >> 2) & 0x3C)  # (data offset >> 4) * 4 bytes
                end = 14 + length
                fast = vihl == 0x45 and proto == 6 and not frag & 0x3FFF
            elif etype == 0x86DD and len(data) >= 74:
                (_, length, proto, src, dst, sport, dport, seq, ack, doff, flags) = (
                    _ETH_IPV6_TCP.unpack_from(data)
                )
                start = 54 + ((doff >> 2) & 0x3C)
                end = 54 + length
                fast = proto == 6 and start >= 74
            else:
                fast = False
            if fast and 54 <= start <= end <= len(data):
                payload = data[start:end]
                return _new(
                    TcpSegment, (ts, src, sport, dst, dport, seq, ack, flags, payload, 0, index)
                )
        return self.decode_general(pkt)

    def decode_general(self, pkt: Packet) -> TcpSegment | None:
        """Every case, without the fast path (``decode`` falls back to this)."""
        link = _LINKS.get(pkt.linktype)
        if link is None:
            self._skip(
                f"linktype-unsupported:{pkt.linktype}",
                pkt.number,
                "packet.unsupported_linktype",
                f"link type {pkt.linktype} is not one agentshark decodes: the packet is skipped",
            )
            return None
        found = link(pkt.data)
        if found is None:
            self._short(pkt.number, "the link-layer header", _was_cut(pkt))
            return None
        ethertype, offset = found
        if ethertype == _IPV4_TYPE:
            return self._ipv4(pkt, offset)
        if ethertype == _IPV6_TYPE:
            return self._ipv6(pkt, offset)
        self._count("arp" if ethertype == _ARP_TYPE else "non-ip")
        return None

    def close(self) -> list[Diagnostic]:
        """Report datagrams whose fragments never all arrived, and the diagnostics cut at
        ``MAX_DIAGNOSTICS``. Returns the diagnostics added (they are in ``diagnostics`` too)."""
        before = len(self.diagnostics)
        self._fragments.close()
        for code, count in self._seen.items():
            if count > MAX_DIAGNOSTICS:
                self.diagnostics.append(
                    Diagnostic(
                        code=code,
                        location=self.source_name,
                        message=f"{count} packets had this problem in all; only the first "
                        f"{MAX_DIAGNOSTICS} are listed",
                    )
                )
        self._seen.clear()
        return self.diagnostics[before:]

    # -- IP ------------------------------------------------------------------------------

    def _ipv4(self, pkt: Packet, offset: int) -> TcpSegment | None:
        ts, _, data, orig_len, index, _ = pkt
        if len(data) < offset + 20:
            self._short(index, "the IPv4 header", _was_cut(pkt))
            return None
        vihl, length, ident, frag, proto, src, dst = _IPV4.unpack_from(data, offset)
        header = (vihl & 0x0F) * 4
        if vihl >> 4 != 4 or header < 20:
            self._malformed(
                index, "ipv4", f"the IPv4 header has version {vihl >> 4} and length {header}"
            )
            return None
        if len(data) < offset + header:
            self._short(index, "the IPv4 options", _was_cut(pkt))
            return None
        if length == 0:
            # Total length 0 is what a capture of TCP segmentation offload shows: the
            # datagram is the rest of the frame.
            end = max(orig_len, len(data))
        elif length < header:
            self._malformed(
                index,
                "ipv4",
                f"IPv4 total length {length} is shorter than its {header}-byte header",
            )
            return None
        else:
            end = offset + length  # RFC 791: what follows (Ethernet padding) is not the datagram
        captured, missing = self._extent(pkt, end)
        if frag & 0x3FFF:
            # RFC 791: fragment offset in units of 8 octets, More Fragments flag 0x2000.
            whole = self._fragments.add(
                (4, src, dst, ident, proto),
                index,
                ts,
                offset=(frag & 0x1FFF) * 8,
                size=captured + missing - offset - header,
                data=data[offset + header : captured],
                more=bool(frag & 0x2000),
                protocol=proto,
            )
            if whole is None:
                return None
            buffer, captured, missing, _ = whole
            return self._transport(ts, index, proto, src, dst, buffer, 0, captured, missing)
        return self._transport(ts, index, proto, src, dst, data, offset + header, captured, missing)

    def _ipv6(self, pkt: Packet, offset: int) -> TcpSegment | None:
        _, _, data, orig_len, index, _ = pkt
        if len(data) < offset + 40:
            self._short(index, "the IPv6 header", _was_cut(pkt))
            return None
        first_word, length, next_header, src, dst = _IPV6.unpack_from(data, offset)
        if first_word >> 28 != 6:
            self._malformed(index, "ipv6", f"the IPv6 header has version {first_word >> 28}")
            return None
        # Payload length 0: a jumbogram (RFC 2675) or a segmentation-offload capture; either
        # way the payload is the rest of the frame.
        end = offset + 40 + length if length else max(orig_len, len(data))
        captured, missing = self._extent(pkt, end)
        return self._ipv6_chain(pkt, src, dst, data, offset + 40, next_header, captured, missing)

    def _ipv6_chain(
        self,
        pkt: Packet,
        src: bytes,
        dst: bytes,
        buffer: bytes,
        pos: int,
        next_header: int,
        captured: int,
        missing: int,
    ) -> TcpSegment | None:
        """RFC 8200 §4: walk the extension headers to the upper-layer header."""
        index = pkt.number
        while next_header != 6:
            if next_header in _IPV6_EXTENSIONS or next_header == _IPV6_AH:
                if captured < pos + 2:
                    self._short(index, "an IPv6 extension header", missing > 0)
                    return None
                if next_header == _IPV6_AH:
                    size = (buffer[pos + 1] + 2) * 4  # RFC 4302 §2.2: 32-bit words, minus 2
                else:
                    size = (buffer[pos + 1] + 1) * 8  # RFC 8200 §4.3: 8 octets, minus the first
                next_header = buffer[pos]
                pos += size
            elif next_header == _IPV6_FRAGMENT_HEADER:
                if captured < pos + 8:
                    self._short(index, "the IPv6 fragment header", missing > 0)
                    return None
                inner, offset_flags, ident = _IPV6_FRAGMENT.unpack_from(buffer, pos)
                pos += 8
                if offset_flags & 0xFFF9 == 0:
                    next_header = inner  # an atomic fragment (RFC 6946): not fragmented at all
                    continue
                # RFC 8200 §4.5: the fragmentable part starts after the fragment header.
                whole = self._fragments.add(
                    (6, src, dst, ident, 0),
                    index,
                    pkt.ts,
                    offset=offset_flags & 0xFFF8,
                    size=captured + missing - pos,
                    data=buffer[pos:captured],
                    more=bool(offset_flags & 1),
                    protocol=inner,
                )
                if whole is None:
                    return None
                buffer, captured, missing, next_header = whole
                pos = 0
            elif next_header == _IPV6_NO_NEXT:
                self._count("ipv6-no-next-header")
                return None
            else:
                return self._transport(
                    pkt.ts, index, next_header, src, dst, buffer, pos, captured, missing
                )
            if pos > captured:
                self._short(index, "an IPv6 extension header", missing > 0)
                return None
        return self._tcp(pkt.ts, index, src, dst, buffer, pos, captured, missing)

    def _extent(self, pkt: Packet, end: int) -> tuple[int, int]:
        """Where the captured part of a datagram ending at ``end`` stops, and how many of its
        bytes were on the wire but not captured (the snap length cut them)."""
        data_len = len(pkt.data)
        if end <= data_len:
            return end, 0
        wire = max(pkt.orig_len, data_len)
        if end > wire:
            self._report(
                "packet.bad_length",
                pkt.number,
                f"the IP header claims a datagram up to byte {end} of the frame, but the frame "
                f"was {wire} bytes on the wire: only those are used",
            )
            end = wire
        return data_len, end - data_len

    # -- TCP and other transports --------------------------------------------------------

    def _transport(
        self,
        ts: float,
        index: int,
        proto: int,
        src: bytes,
        dst: bytes,
        buffer: bytes,
        start: int,
        captured: int,
        missing: int,
    ) -> TcpSegment | None:
        if proto == 6:
            return self._tcp(ts, index, src, dst, buffer, start, captured, missing)
        if proto == 17 and self._udp is not None:
            self._datagram(ts, index, src, dst, buffer, start, captured, missing)
            return None
        self._count_transport(proto)
        return None

    def _datagram(
        self,
        ts: float,
        index: int,
        src: bytes,
        dst: bytes,
        buffer: bytes,
        start: int,
        captured: int,
        missing: int,
    ) -> None:
        """RFC 768: an 8-byte header, then the payload up to the UDP length (which counts the
        header; 0 or too small, as segmentation offload leaves it: the rest of the datagram)."""
        assert self._udp is not None
        if captured - start < 8:
            self._short(index, "the UDP header", missing > 0)
            return
        sport, dport, length = _UDP.unpack_from(buffer, start)
        end = start + length if length >= 8 else captured + missing
        lost = max(0, end - captured)
        payload = buffer[start + 8 : min(end, captured)]
        taken = self._udp(_new(UdpDatagram, (ts, src, sport, dst, dport, payload, lost, index)))
        if taken:
            self.datagrams += 1
        else:
            self._count("udp")

    def _count_transport(self, proto: int) -> None:
        self._count(_TRANSPORT_NAMES.get(proto) or f"ip-proto:{proto}")

    def _tcp(
        self,
        ts: float,
        index: int,
        src: bytes,
        dst: bytes,
        buffer: bytes,
        start: int,
        captured: int,
        missing: int,
    ) -> TcpSegment | None:
        """RFC 9293 §3.1: the payload starts at the data offset (32-bit words) and ends with
        the IP datagram."""
        if captured - start < 20:
            self._short(index, "the TCP header", missing > 0)
            return None
        sport, dport, seq, ack, data_offset, flags = _TCP.unpack_from(buffer, start)
        header = (data_offset >> 4) * 4
        if header < 20:
            self._malformed(index, "tcp", f"the TCP data offset is {header} bytes")
            return None
        if captured - start < header:
            self._short(index, "the TCP options", missing > 0)
            return None
        payload = buffer[start + header : captured]
        return _new(
            TcpSegment, (ts, src, sport, dst, dport, seq, ack, flags, payload, missing, index)
        )

    # -- counting and reporting ----------------------------------------------------------

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def _skip(self, key: str, index: int, code: str, message: str) -> None:
        self._count(key)
        self._report(code, index, message)

    def _short(self, index: int, what: str, cut: bool) -> None:
        """A header that does not fit: cut by the snap length, or cut short on the wire."""
        if cut:
            self._skip(
                "truncated",
                index,
                "packet.truncated_header",
                f"the capture cut the packet before the end of {what}: it is skipped (capture "
                "with a larger snap length, e.g. tcpdump -s 0)",
            )
        else:
            self._skip(
                "malformed",
                index,
                "packet.malformed",
                f"the packet ends before the end of {what}: it is skipped",
            )

    def _malformed(self, index: int, layer: str, what: str) -> None:
        self._skip(
            f"{layer}-malformed", index, "packet.malformed", f"{what}: the packet is skipped"
        )

    def _report(self, code: str, index: int, message: str) -> None:
        count = self._seen[code] = self._seen.get(code, 0) + 1
        if count <= MAX_DIAGNOSTICS:
            self.diagnostics.append(
                Diagnostic(
                    code=code, location=f"{self.source_name} packet {index}", message=message
                )
            )


def _was_cut(pkt: Packet) -> bool:
    return pkt.orig_len > len(pkt.data)


# -- link layers: data -> (ethertype, offset of the network header), None if cut short --------


def _ethernet(data: bytes) -> tuple[int, int] | None:
    """IEEE 802.3 with any number of 802.1Q / 802.1ad tags (4 bytes each, TPID then TCI)."""
    if len(data) < 14:
        return None
    return _untag(data, (data[12] << 8) | data[13], 14)


def _untag(data: bytes, ethertype: int, offset: int) -> tuple[int, int] | None:
    """Unwrap VLAN tags, then a PPPoE session header (RFC 2516 §4: 6 bytes, then the PPP
    protocol field of RFC 1661: 0x0021 IPv4, 0x0057 IPv6)."""
    while ethertype in _VLAN_TYPES:
        if len(data) < offset + 4:
            return None
        ethertype = (data[offset + 2] << 8) | data[offset + 3]
        offset += 4
    if ethertype == _PPPOE_SESSION_TYPE:
        if len(data) < offset + 8:
            return None
        protocol = (data[offset + 6] << 8) | data[offset + 7]
        return _PPP_PROTOCOLS.get(protocol, -1), offset + 8
    return ethertype, offset


def _linux_sll(data: bytes) -> tuple[int, int] | None:
    """LINKTYPE_LINUX_SLL: packet type, ARPHRD type, address length, 8 address bytes, protocol."""
    if len(data) < 16:
        return None
    return _untag(data, (data[14] << 8) | data[15], 16)


def _linux_sll2(data: bytes) -> tuple[int, int] | None:
    """LINKTYPE_LINUX_SLL2: protocol first, then reserved, interface index, ARPHRD type,
    packet type, address length and 8 address bytes: 20 bytes."""
    if len(data) < 20:
        return None
    return _untag(data, (data[0] << 8) | data[1], 20)


def _bsd_null(data: bytes) -> tuple[int, int] | None:
    """LINKTYPE_NULL: a 4-byte address family in the byte order of the capturing host, which
    the file does not record: a family above 0xFFFF was written in the other order."""
    if len(data) < 4:
        return None
    family = int.from_bytes(data[:4], "little")
    if family > 0xFFFF:
        family = int.from_bytes(data[:4], "big")
    return _NULL_FAMILIES.get(family, -1), 4


def _openbsd_loop(data: bytes) -> tuple[int, int] | None:
    """LINKTYPE_LOOP: like NULL, but the family is in network byte order."""
    if len(data) < 4:
        return None
    return _NULL_FAMILIES.get(int.from_bytes(data[:4], "big"), -1), 4


def _raw_ip(data: bytes) -> tuple[int, int] | None:
    """LINKTYPE_RAW: the packet starts with the IP header; its version nibble says which."""
    if not data:
        return None
    version = data[0] >> 4
    return (_IPV4_TYPE if version == 4 else _IPV6_TYPE if version == 6 else -1), 0


def _raw_ipv4(data: bytes) -> tuple[int, int] | None:
    return _IPV4_TYPE, 0


def _raw_ipv6(data: bytes) -> tuple[int, int] | None:
    return _IPV6_TYPE, 0


_LINKS: dict[int, Callable[[bytes], tuple[int, int] | None]] = {
    1: _ethernet,  # LINKTYPE_ETHERNET
    113: _linux_sll,  # LINKTYPE_LINUX_SLL
    276: _linux_sll2,  # LINKTYPE_LINUX_SLL2
    0: _bsd_null,  # LINKTYPE_NULL
    108: _openbsd_loop,  # LINKTYPE_LOOP
    101: _raw_ip,  # LINKTYPE_RAW
    12: _raw_ip,  # DLT_RAW on OpenBSD, found in some files
    14: _raw_ip,  # DLT_RAW on BSD/OS, found in some files
    228: _raw_ipv4,  # LINKTYPE_IPV4
    229: _raw_ipv6,  # LINKTYPE_IPV6
}


def network_layer(linktype: int, data: bytes) -> tuple[int, int] | None:
    """The ethertype and offset of the network header of a frame of ``linktype`` (the
    decoder's own link layers): ``None`` for a link type it does not decode or a frame cut
    short; ethertype -1 for a protocol it has no number for."""
    link = _LINKS.get(linktype)
    return None if link is None else link(data)
