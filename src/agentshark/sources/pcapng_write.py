"""pcapng blocks written: a Section Header, Interface Descriptions, Enhanced Packets and
Decryption Secrets Blocks (draft-ietf-opsawg-pcapng, https://www.ietf.org/archive/id/draft-ietf-opsawg-pcapng-03.html).

What :mod:`agentshark.pipeline.capture` writes for ``agentshark capture -w FILE``: the
packets tcpdump handed over and, before the packets that need them, the TLS secrets of
their sessions as Decryption Secrets Blocks (§4.7, secrets type ``0x544c534b``, "TLSK": key
log lines), so that Wireshark and agentshark decrypt the file without the key log.

Every block is little-endian, its body padded to 32 bits, its total length written at both
ends (§3.1). Timestamps are in microseconds (the default ``if_tsresol`` of 6, as tcpdump
writes pcap) or nanoseconds, the 64-bit count split high word first (§4.3). The section length is -1
("not specified", §4.1): the file is written as packets come.
"""

from __future__ import annotations

import struct

from agentshark import __version__

__all__ = ["TLS_KEY_LOG", "dsb", "epb", "idb", "shb"]

TLS_KEY_LOG = 0x544C534B  # §4.7: NSS key log lines (RFC 9850)
_SHB, _IDB, _EPB, _DSB = 0x0A0D0D0A, 0x1, 0x6, 0xA
_BOM = 0x1A2B3C4D
_HEAD = struct.Struct("<II")  # block type, total length
_EPB_FIELDS = struct.Struct("<IIIII")  # interface, timestamp high, low, captured, original
_END = b"\0\0\0\0"  # opt_endofopt


def _pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + _pad(value)


def _block(kind: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return _HEAD.pack(kind, total) + body + struct.pack("<I", total)


def shb() -> bytes:
    """The Section Header Block (§4.1), its ``shb_userappl`` (code 4) naming agentshark."""
    body = struct.pack("<IHHq", _BOM, 1, 0, -1)
    body += _option(4, f"agentshark {__version__} capture".encode()) + _END
    return _block(_SHB, body)


def idb(linktype: int, snaplen: int, name: str | None = None, *, nano: bool = False) -> bytes:
    """An Interface Description Block (§4.2), with ``if_name`` (code 2) when given and
    ``if_tsresol`` (code 9) 9 when ``nano`` (timestamps in nanoseconds)."""
    body = struct.pack("<HHI", linktype, 0, snaplen)
    options = _option(2, name.encode()) if name else b""
    if nano:
        options += _option(9, b"\x09")
    return _block(_IDB, body + (options + _END if options else b""))


def epb(interface: int, ticks: int, data: bytes, orig_len: int) -> bytes:
    """An Enhanced Packet Block (§4.3): ``ticks`` (of the interface's resolution) since the
    epoch, the captured bytes."""
    fields = _EPB_FIELDS.pack(interface, ticks >> 32, ticks & 0xFFFFFFFF, len(data), orig_len)
    return _block(_EPB, fields + _pad(data))


def dsb(keylog_lines: bytes) -> bytes:
    """A Decryption Secrets Block (§4.7) holding key log lines (each ended by LF)."""
    body = struct.pack("<II", TLS_KEY_LOG, len(keylog_lines)) + _pad(keylog_lines)
    return _block(_DSB, body)
