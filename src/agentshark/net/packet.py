"""Decode link, IP and TCP headers: ``Packet`` -> ``TcpSegment``, or ``None`` and a count.

Link types (https://www.tcpdump.org/linktypes.html): 1 Ethernet, with stacked 802.1Q / 802.1ad
tags and PPPoE sessions; 113 Linux cooked v1; 276 Linux cooked v2; 0 BSD loopback (host byte
order); 108 OpenBSD loopback (network byte order); 101 / 12 / 14 raw IP; 228 raw IPv4; 229 raw
IPv6. Then IPv4 (RFC 791, fragments reassembled) or IPv6 (RFC 8200, extension headers walked,
fragments reassembled), then TCP (RFC 9293).

Every packet that does not become a segment is counted in ``PacketDecoder.counts`` under
exactly one key (``"udp"``, ``"arp"``, ``"ipv4-fragment-held"``, ``"truncated"``...), so the
packets given to ``decode`` are the segments returned plus ``sum(counts.values())``: nothing is
dropped without a trace. Problems also become Diagnostics, at most ``MAX_DIAGNOSTICS`` per code
with their packet number, then one summary per code at ``close()``.

This runs once per packet, so ``decode`` starts with an inlined fast path for the usual case
(Ethernet, IPv4 or IPv6, TCP, not fragmented, all captured): one ``struct.unpack_from`` over
the three headers and one slice. Everything else goes through the general path, which gives
the same results for those packets (the tests check it).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from ipaddress import ip_address

from agentshark.errors import Diagnostic
from agentshark.net.segment import TcpSegment
from agentshark.sources.records import Packet

__all__ = ["MAX_DIAGNOSTICS", "PacketDecoder"]

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

FRAGMENT_TIMEOUT = 60.0  # seconds; Linux gives up after 30 (ipfrag_time), RFC 8200 after 60
MAX_FRAGMENT_DATAGRAMS = 4096
MAX_FRAGMENT_BYTES = 32 << 20
_MAX_DATAGRAM = 65535


@dataclass(slots=True)
class _Datagram:
    """Fragments of one IP datagram, in arrival order: (offset, length on the wire, bytes
    captured). ``total`` is known once the last fragment (no More Fragments flag) is in."""

    key: tuple[int, bytes, bytes, int, int]  # version, src, dst, identification, protocol
    first_packet: int
    first_ts: float
    next_header: int = -1  # IPv6: from the fragment at offset 0; IPv4: the header's protocol
    total: int = -1
    held: int = 0
    pieces: list[tuple[int, int, bytes]] = field(default_factory=list)

    def describe(self) -> str:
        version, src, dst, ident, _ = self.key
        return f"IPv{version} datagram {ip_address(src)} -> {ip_address(dst)} id 0x{ident:x}"


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
    ) -> None:
        self.source_name = source_name
        self.diagnostics: list[Diagnostic] = []
        self.counts: dict[str, int] = {}
        self._seen: dict[str, int] = {}  # diagnostics per code, reported or not
        self._pending: dict[tuple[int, bytes, bytes, int, int], _Datagram] = {}
        self._held_bytes = 0
        self._max_datagrams = max_fragment_datagrams
        self._max_bytes = max_fragment_bytes
        self._timeout = fragment_timeout

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
                pkt.index,
                "packet.unsupported_linktype",
                f"link type {pkt.linktype} is not one agentshark decodes: the packet is skipped",
            )
            return None
        found = link(pkt.data)
        if found is None:
            self._short(pkt.index, "the link-layer header", _was_cut(pkt))
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
        for datagram in list(self._pending.values()):
            self._give_up(datagram, "the capture ended before")
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
            whole = self._fragment(
                (4, src, dst, ident, proto),
                pkt,
                (frag & 0x1FFF) * 8,
                captured + missing - offset - header,
                data[offset + header : captured],
                bool(frag & 0x2000),
                proto,
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
        index = pkt.index
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
                whole = self._fragment(
                    (6, src, dst, ident, 0),
                    pkt,
                    offset_flags & 0xFFF8,
                    captured + missing - pos,
                    buffer[pos:captured],
                    bool(offset_flags & 1),
                    inner,
                )
                if whole is None:
                    return None
                buffer, captured, missing, next_header = whole
                pos = 0
            elif next_header == _IPV6_NO_NEXT:
                self._count("ipv6-no-next-header")
                return None
            else:
                self._count_transport(next_header)
                return None
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
                pkt.index,
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
        self._count_transport(proto)
        return None

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

    # -- fragments -----------------------------------------------------------------------

    def _fragment(
        self,
        key: tuple[int, bytes, bytes, int, int],
        pkt: Packet,
        offset: int,
        size: int,
        data: bytes,
        more: bool,
        next_header: int,
    ) -> tuple[bytes, int, int, int] | None:
        """Hold one fragment; when it completes its datagram, return the datagram's payload,
        how much of it was captured, how many of its bytes were not, and its upper-layer
        protocol."""
        version, index = key[0], pkt.index
        held = f"ipv{version}-fragment-held"
        self._expire(pkt.ts)
        if offset + size > _MAX_DATAGRAM or (version == 6 and more and size % 8):
            # RFC 8200 §4.5: a non-final fragment whose length is not a multiple of 8 is
            # discarded; in both versions a datagram cannot pass 65535 bytes.
            self._skip(
                f"ipv{version}-fragment-bad",
                index,
                "packet.bad_fragment",
                f"IPv{version} fragment at offset {offset} with {size} bytes cannot be part of "
                "a datagram: it is skipped",
            )
            return None
        datagram = self._pending.get(key)
        if datagram is None:
            datagram = self._pending[key] = _Datagram(key, index, pkt.ts)
        if offset == 0 or version == 4:  # IPv4 repeats the protocol in every fragment
            datagram.next_header = next_header
        if not more:
            if datagram.total not in (-1, offset + size):
                self._report(
                    "packet.bad_fragment",
                    index,
                    f"{datagram.describe()} gets a second last fragment, ending at "
                    f"{offset + size} instead of {datagram.total}: the first is kept",
                )
            else:
                datagram.total = offset + size
        for start, length, piece in datagram.pieces:
            if start < offset + size and offset < start + length:
                if (start, length, piece) == (offset, size, data):
                    self._count(held)  # the same fragment again (a duplicate in the capture)
                    return None
                if version == 6:
                    # RFC 8200 §4.5: "If any of the fragments being reassembled overlap with
                    # any other fragments [...] reassembly of that packet must be abandoned".
                    self._drop(
                        datagram,
                        index,
                        "packet.fragment_overlap",
                        "an overlapping fragment arrived, and RFC 8200 §4.5 has the receiver "
                        "discard the datagram",
                    )
                    self._count("ipv6-fragment-bad")
                    return None
                self._report(
                    "packet.fragment_overlap",
                    index,
                    f"{datagram.describe()}: the fragment at offset {offset} overlaps bytes "
                    "already received; the bytes received first are kept (receivers differ "
                    "on this, RFC 791 does not say)",
                )
                break
        datagram.pieces.append((offset, size, data))
        datagram.held += len(data)
        self._held_bytes += len(data)
        whole = self._assemble(datagram)
        if whole is not None:
            del self._pending[key]
            self._held_bytes -= datagram.held
            return whole
        self._count(held)
        self._enforce_caps()
        return None

    def _assemble(self, datagram: _Datagram) -> tuple[bytes, int, int, int] | None:
        if datagram.total < 0:
            return None
        covered = 0
        for start, length, _ in sorted(datagram.pieces):
            if start > covered:
                return None
            covered = max(covered, start + length)
        if covered < datagram.total or datagram.next_header < 0:
            return None
        total = datagram.total
        buffer = bytearray(total)
        for start, _, piece in reversed(datagram.pieces):  # the first received wins
            if start < total:
                piece = piece[: total - start]  # a fragment may claim more than the last says
                buffer[start : start + len(piece)] = piece
        captured = 0  # the captured prefix: fragments cut by the snap length leave holes
        for start, _, piece in sorted(datagram.pieces):
            if start > captured:
                break
            captured = max(captured, start + len(piece))
        captured = min(captured, total)
        return bytes(buffer), captured, total - captured, datagram.next_header

    def _expire(self, now: float) -> None:
        while self._pending:
            oldest = next(iter(self._pending.values()))
            if now - oldest.first_ts <= self._timeout:
                return
            self._give_up(oldest, f"no fragment completed it within {self._timeout:g} s of")

    def _enforce_caps(self) -> None:
        while len(self._pending) > self._max_datagrams or self._held_bytes > self._max_bytes:
            self._drop(
                next(iter(self._pending.values())),
                -1,
                "packet.fragments_evicted",
                f"more than {self._max_datagrams} datagrams or {self._max_bytes} bytes of "
                "fragments were waiting, so the oldest was given up",
            )

    def _give_up(self, datagram: _Datagram, why: str) -> None:
        self._drop(datagram, -1, "packet.fragments_incomplete", f"{why} its first fragment")

    def _drop(self, datagram: _Datagram, index: int, code: str, why: str) -> None:
        """Forget a datagram that will not complete; ``index`` -1 reports it at its first
        fragment."""
        del self._pending[datagram.key]
        self._held_bytes -= datagram.held
        total = f"{datagram.total}" if datagram.total >= 0 else "an unknown number of"
        self._report(
            code,
            datagram.first_packet if index < 0 else index,
            f"{datagram.describe()}: {len(datagram.pieces)} fragments ({datagram.held} of "
            f"{total} bytes) first seen in packet {datagram.first_packet} never made a whole "
            f"datagram ({why}): its payload is lost",
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
