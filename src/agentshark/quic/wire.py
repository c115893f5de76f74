"""QUIC integers and packet headers (RFC 9000 §16, §17; RFC 9369 §3 for version 2).

Variable-length integers (§16): the two high bits of the first byte give the length, 1, 2, 4
or 8 bytes. Long headers (§17.2) carry version, DCID and SCID (up to 20 bytes each); Initial
packets a token and every long header but Retry a Length that ends the packet, so several
packets can share a datagram (§12.2). Short headers (§17.3) carry only the DCID, whose length
the reader must know from the handshake. The packet number and the low bits of the first byte
are under header protection here (:mod:`agentshark.quic.protection` removes it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "VERSION_1",
    "VERSION_2",
    "LongHeader",
    "PacketType",
    "WireError",
    "parse_long_header",
    "read_varint",
    "version_name",
]

VERSION_1 = 0x00000001
VERSION_2 = 0x6B3343CF  # RFC 9369 §3.1
DRAFT_29 = 0xFF00001D
PacketType = Literal["initial", "0rtt", "handshake", "retry"]

# RFC 9000 §17.2 Table 5, RFC 9369 §3.2: the long packet types by version.
_TYPES_V1: tuple[PacketType, ...] = ("initial", "0rtt", "handshake", "retry")
_TYPES_V2: tuple[PacketType, ...] = ("retry", "initial", "0rtt", "handshake")
KNOWN_VERSIONS = frozenset({VERSION_1, VERSION_2, DRAFT_29})


class WireError(ValueError):
    """Bytes that are not a QUIC header or frame; the message says what is wrong."""


def version_name(version: int) -> str:
    if version == VERSION_1:
        return "1"
    if version == VERSION_2:
        return "2"
    if version >> 8 == 0xFF0000:
        return f"draft-{version & 0xFF}"
    return f"0x{version:08x}"


def read_varint(data: bytes | bytearray, pos: int) -> tuple[int, int]:
    """RFC 9000 §16: the integer at ``pos`` and the position after it."""
    if pos >= len(data):
        raise WireError("an integer runs past the end")
    first = data[pos]
    size = 1 << (first >> 6)
    end = pos + size
    if end > len(data):
        raise WireError("an integer runs past the end")
    if size == 1:
        return first, end
    return int.from_bytes(data[pos:end], "big") & ((1 << (8 * size - 2)) - 1), end


@dataclass(frozen=True, slots=True, kw_only=True)
class LongHeader:
    """A long header up to its protected part.

    ``pn_offset`` is where the packet number starts (Initial, 0-RTT, Handshake) and ``end``
    where the packet ends in its datagram; for Retry, ``token`` is the retry token and
    ``end`` the datagram's end (its integrity tag is the last 16 bytes). A Version
    Negotiation packet (version 0) has ``kind`` None and ``versions`` listed."""

    first: int
    version: int
    kind: PacketType | None
    dcid: bytes
    scid: bytes
    token: bytes
    pn_offset: int
    end: int
    versions: tuple[int, ...] = ()


def parse_long_header(data: bytes, start: int) -> LongHeader:
    """The long header of the packet at ``start`` (``data[start] & 0x80`` is set)."""
    if len(data) - start < 7:
        raise WireError("a long header is cut short")
    first = data[start]
    version = int.from_bytes(data[start + 1 : start + 5], "big")
    pos = start + 5
    dcid_len = data[pos]
    dcid = data[pos + 1 : pos + 1 + dcid_len]
    pos += 1 + dcid_len
    if pos >= len(data) or len(dcid) != dcid_len:
        raise WireError("a long header's DCID is cut short")
    scid_len = data[pos]
    scid = data[pos + 1 : pos + 1 + scid_len]
    pos += 1 + scid_len
    if len(scid) != scid_len or pos > len(data):
        raise WireError("a long header's SCID is cut short")
    if version == 0:  # RFC 9000 §17.2.1: the rest is a list of versions
        count = (len(data) - pos) // 4
        listed = tuple(
            int.from_bytes(data[pos + 4 * i : pos + 4 * i + 4], "big") for i in range(count)
        )
        return LongHeader(
            first=first,
            version=0,
            kind=None,
            dcid=dcid,
            scid=scid,
            token=b"",
            pn_offset=len(data),
            end=len(data),
            versions=listed,
        )
    if dcid_len > 20 or scid_len > 20:
        raise WireError(f"a version {version_name(version)} header has a CID over 20 bytes")
    kinds = _TYPES_V2 if version == VERSION_2 else _TYPES_V1
    kind = kinds[(first >> 4) & 3]
    token = b""
    if kind == "retry":
        if len(data) - pos < 16:
            raise WireError("a Retry packet has no room for its integrity tag")
        return LongHeader(
            first=first,
            version=version,
            kind=kind,
            dcid=dcid,
            scid=scid,
            token=data[pos : len(data) - 16],
            pn_offset=len(data),
            end=len(data),
        )
    if kind == "initial":
        token_len, pos = read_varint(data, pos)
        token = data[pos : pos + token_len]
        pos += token_len
    length, pos = read_varint(data, pos)
    end = pos + length
    if end > len(data):
        raise WireError(
            f"a {kind} packet claims {length} bytes, its datagram has {len(data) - pos}"
        )
    return LongHeader(
        first=first,
        version=version,
        kind=kind,
        dcid=dcid,
        scid=scid,
        token=token,
        pn_offset=pos,
        end=end,
    )
