"""Capture files for the fault suite: pcap and pcapng in, pcap out, TCP headers read.

Written with ``struct`` alone, on purpose: the instrument must not share agentshark's readers
(``agentshark.sources``) or packet decoder (``agentshark.net``), or a bug there would hide in
both the clean and the faulted run. Only what the suite needs: libpcap files
(draft-ietf-opsawg-pcap, microsecond or nanosecond, either byte order), pcapng Section Header,
Interface Description, Enhanced and Simple Packet Blocks (draft-ietf-opsawg-pcapng; other
blocks are skipped), and Ethernet / Linux cooked / null / raw IPv4 and IPv6 carrying TCP or UDP.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from pathlib import Path

Flow = tuple[str, int, str, int]  # (source address, source port, destination, dest port)

_PCAP_MICRO, _PCAP_NANO = 0xA1B2C3D4, 0xA1B23C4D
_PCAPNG_SHB, _PCAPNG_IDB, _PCAPNG_EPB, _PCAPNG_SPB = 0x0A0D0D0A, 1, 6, 3
_BYTE_ORDER_MAGIC = 0x1A2B3C4D


@dataclass(slots=True, kw_only=True)
class Record:
    """One captured packet: time stamp in the file's units, the bytes, the length on the wire."""

    sec: int
    frac: int  # microseconds, or nanoseconds when the capture's ``nanos`` is set
    data: bytes
    orig_len: int


@dataclass(slots=True, kw_only=True)
class Capture:
    linktype: int
    nanos: bool
    snaplen: int
    records: list[Record]


def read_capture(path: str | Path) -> Capture:
    """A pcap or pcapng file (one link type; pcapng time stamps become nanoseconds)."""
    raw = Path(path).read_bytes()
    if int.from_bytes(raw[:4], "little") == _PCAPNG_SHB:
        return _read_pcapng(raw)
    return parse_pcap(raw)


def parse_pcap(raw: bytes) -> Capture:
    """A libpcap file's bytes (a record cut short raises ValueError)."""
    magic = int.from_bytes(raw[:4], "little")
    order = "<" if magic in (_PCAP_MICRO, _PCAP_NANO) else ">"
    magic = struct.unpack_from(order + "I", raw)[0]
    if magic not in (_PCAP_MICRO, _PCAP_NANO):
        raise ValueError(f"not a pcap file (magic {raw[:4].hex()})")
    _, _, _, _, snaplen, linktype = struct.unpack_from(order + "HHiIII", raw, 4)
    records: list[Record] = []
    head = struct.Struct(order + "IIII")
    pos = 24
    while pos + 16 <= len(raw):
        sec, frac, incl, orig = head.unpack_from(raw, pos)
        pos += 16
        if pos + incl > len(raw):
            raise ValueError(f"pcap record at {pos - 16} cut short")
        records.append(Record(sec=sec, frac=frac, data=raw[pos : pos + incl], orig_len=orig))
        pos += incl
    return Capture(
        linktype=linktype & 0xFFFF, nanos=magic == _PCAP_NANO, snaplen=snaplen, records=records
    )


def _read_pcapng(raw: bytes) -> Capture:
    order = "<"
    resolutions: list[int] = []  # time stamp units per second, per interface of the section
    linktypes: list[int] = []
    snaplen = 0
    records: list[Record] = []
    pos = 0
    while pos + 12 <= len(raw):
        btype = struct.unpack_from(order + "I", raw, pos)[0]
        if btype == _PCAPNG_SHB:
            bom = struct.unpack_from("<I", raw, pos + 8)[0]
            order = "<" if bom == _BYTE_ORDER_MAGIC else ">"
            resolutions = []
        blen = struct.unpack_from(order + "I", raw, pos + 4)[0]
        body = raw[pos + 8 : pos + blen - 4]
        if btype == _PCAPNG_IDB:
            linktype, _, snap = struct.unpack_from(order + "HHI", body)
            linktypes.append(linktype)
            snaplen = max(snaplen, snap)
            resolutions.append(_tsresol(body[8:], order))
        elif btype == _PCAPNG_EPB:
            iface, hi, lo, incl, orig = struct.unpack_from(order + "IIIII", body)
            units = (hi << 32 | lo) * 1_000_000_000 // resolutions[iface]
            sec, ns = divmod(units, 1_000_000_000)
            records.append(Record(sec=sec, frac=ns, data=body[20 : 20 + incl], orig_len=orig))
        elif btype == _PCAPNG_SPB:
            orig = struct.unpack_from(order + "I", body)[0]
            incl = min(orig, snaplen or orig, len(body) - 4)
            records.append(Record(sec=0, frac=0, data=body[4 : 4 + incl], orig_len=orig))
        pos += blen
    if len(set(linktypes)) != 1:
        raise ValueError(f"pcapng with link types {sorted(set(linktypes))}: one is supported")
    return Capture(linktype=linktypes[0], nanos=True, snaplen=snaplen, records=records)


def _tsresol(options: bytes, order: str) -> int:
    """Units per second from an Interface Description Block's ``if_tsresol`` (default 10^6)."""
    pos = 0
    while pos + 4 <= len(options):
        code, length = struct.unpack_from(order + "HH", options, pos)
        if code == 0:
            break
        if code == 9 and length >= 1:
            value = options[pos + 4]
            return int(2 ** (value & 0x7F) if value & 0x80 else 10**value)
        pos += 4 + (length + 3) // 4 * 4
    return 1_000_000


def pcap_bytes(capture: Capture, records: list[Record] | None = None) -> bytes:
    """The capture (or these records in its place) as a little-endian libpcap file."""
    magic = _PCAP_NANO if capture.nanos else _PCAP_MICRO
    out = [struct.pack("<IHHiIII", magic, 2, 4, 0, 0, capture.snaplen or 262144, capture.linktype)]
    head = struct.Struct("<IIII")
    for r in capture.records if records is None else records:
        out.append(head.pack(r.sec, r.frac, len(r.data), r.orig_len))
        out.append(r.data)
    return b"".join(out)


def timestamp(capture: Capture, record: Record) -> float:
    """Seconds, computed as a reader does (whole seconds plus the fraction)."""
    return record.sec + record.frac / (1e9 if capture.nanos else 1e6)


# -- packets ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Tcp:
    """What the suite needs of one TCP segment."""

    flow: Flow
    seq: int
    ack: int  # 0 when the ACK flag is clear
    flags: int
    ip_offset: int  # where the IP header starts in the record's bytes
    ip_version: int
    tcp_offset: int  # where the TCP header starts
    payload_offset: int
    payload_len: int  # on the wire, from the IP lengths (may exceed what was captured)

    @property
    def syn(self) -> bool:
        return bool(self.flags & 0x02)

    @property
    def fin(self) -> bool:
        return bool(self.flags & 0x01)

    @property
    def rst(self) -> bool:
        return bool(self.flags & 0x04)

    @property
    def has_ack(self) -> bool:
        return bool(self.flags & 0x10)


def ip_offset(linktype: int, data: bytes) -> int | None:
    """Where the IP header starts in a frame of ``linktype``, or None if not IP."""
    if linktype == 1:  # Ethernet, with 802.1Q tags skipped
        pos, ethertype = 12, int.from_bytes(data[12:14], "big")
        while ethertype in (0x8100, 0x88A8):
            pos += 4
            ethertype = int.from_bytes(data[pos : pos + 2], "big")
        return pos + 2 if ethertype in (0x0800, 0x86DD) else None
    if linktype in (0, 108):  # BSD loopback: a 4-byte address family
        return 4
    if linktype in (101, 12, 228, 229):  # raw IP
        return 0
    if linktype == 113:  # Linux cooked v1
        return 16 if int.from_bytes(data[14:16], "big") in (0x0800, 0x86DD) else None
    if linktype == 276:  # Linux cooked v2
        return 20 if int.from_bytes(data[0:2], "big") in (0x0800, 0x86DD) else None
    return None


def parse_tcp(linktype: int, data: bytes) -> Tcp | None:
    """The TCP segment in a frame, or None (not TCP, an IP fragment, cut before the header)."""
    ip = ip_offset(linktype, data)
    if ip is None or len(data) < ip + 20:
        return None
    version = data[ip] >> 4
    if version == 4:
        ihl = (data[ip] & 0x0F) * 4
        total = int.from_bytes(data[ip + 2 : ip + 4], "big")
        if data[ip + 9] != 6 or int.from_bytes(data[ip + 6 : ip + 8], "big") & 0x3FFF:
            return None  # not TCP, or a fragment (MF set or an offset)
        src = str(ipaddress.IPv4Address(data[ip + 12 : ip + 16]))
        dst = str(ipaddress.IPv4Address(data[ip + 16 : ip + 20]))
        tcp, end = ip + ihl, ip + total
    elif version == 6:
        if data[ip + 6] != 6 or len(data) < ip + 40:
            return None  # extension headers are not followed: the captures have none
        src = str(ipaddress.IPv6Address(data[ip + 8 : ip + 24]))
        dst = str(ipaddress.IPv6Address(data[ip + 24 : ip + 40]))
        tcp, end = ip + 40, ip + 40 + int.from_bytes(data[ip + 4 : ip + 6], "big")
    else:
        return None
    if len(data) < tcp + 20:
        return None
    sport, dport, seq, ack, off_flags = struct.unpack_from(">HHIIH", data, tcp)
    payload = tcp + (off_flags >> 12) * 4
    flags = off_flags & 0x1FF
    return Tcp(
        flow=(src, sport, dst, dport),
        seq=seq,
        ack=ack if flags & 0x10 else 0,
        flags=flags,
        ip_offset=ip,
        ip_version=version,
        tcp_offset=tcp,
        payload_offset=payload,
        payload_len=max(0, end - payload),
    )


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``."""
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass(frozen=True, slots=True, kw_only=True)
class Udp:
    """What the suite needs of one UDP datagram (RFC 768)."""

    flow: Flow
    ip_offset: int
    ip_version: int
    udp_offset: int
    payload_offset: int
    payload_len: int  # on the wire, from the UDP length (may exceed what was captured)


def parse_udp(linktype: int, data: bytes) -> Udp | None:
    """The UDP datagram in a frame, or None (not UDP, an IP fragment, cut before the header)."""
    ip = ip_offset(linktype, data)
    if ip is None or len(data) < ip + 20:
        return None
    version = data[ip] >> 4
    if version == 4:
        if data[ip + 9] != 17 or int.from_bytes(data[ip + 6 : ip + 8], "big") & 0x3FFF:
            return None
        src = str(ipaddress.IPv4Address(data[ip + 12 : ip + 16]))
        dst = str(ipaddress.IPv4Address(data[ip + 16 : ip + 20]))
        udp = ip + (data[ip] & 0x0F) * 4
    elif version == 6:
        if data[ip + 6] != 17 or len(data) < ip + 40:
            return None
        src = str(ipaddress.IPv6Address(data[ip + 8 : ip + 24]))
        dst = str(ipaddress.IPv6Address(data[ip + 24 : ip + 40]))
        udp = ip + 40
    else:
        return None
    if len(data) < udp + 8:
        return None
    sport, dport, length = struct.unpack_from(">HHH", data, udp)
    return Udp(
        flow=(src, sport, dst, dport),
        ip_offset=ip,
        ip_version=version,
        udp_offset=udp,
        payload_offset=udp + 8,
        payload_len=max(0, length - 8),
    )
