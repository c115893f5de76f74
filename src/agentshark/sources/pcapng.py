"""Read a pcapng capture file: a binary stream -> ``Interface``, ``Packet``,
``DecryptionSecrets``, ``Diagnostic``.

The format is draft-ietf-opsawg-pcapng (https://datatracker.ietf.org/doc/draft-ietf-opsawg-pcapng/);
section numbers below are that draft's. A file is a sequence of blocks (§3.1)::

    block type u32 | block total length u32 | body, padded to 32 bits | block total length u32

in the byte order of the Section Header Block that opens each section (§4.1). A file may hold
several sections, each with its own byte order and its own interfaces (§3.3).

What is read: Section Header Blocks (type 0x0A0D0D0A), Interface Description Blocks (1, with
``if_name``, ``if_tsresol`` and ``if_tsoffset``), Enhanced Packet Blocks (6), Simple Packet
Blocks (3), the obsolete Packet Block (2, Appendix A) and Decryption Secrets Blocks (10).
Every other block (Name Resolution, Interface Statistics, custom, unknown) is skipped by its
length. Like ``sources.pcap``, the reader only calls ``stream.read(n)``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO

from agentshark.errors import Diagnostic, InputError
from agentshark.sources.pcap import MAGICS, _read_exact
from agentshark.sources.records import DecryptionSecrets, Interface, Packet

__all__ = ["SHB_MAGIC", "read_pcapng"]

SHB_MAGIC = b"\x0a\x0d\x0d\x0a"  # a palindrome: the same in both byte orders (§4.1)
MAX_BLOCK = 256 << 20  # larger than any real block: such a length is corruption
MAX_DIAGNOSTICS = 20  # per code; later ones are summed up at the end

# Byte-Order Magic 0x1A2B3C4D as it appears in the file (§4.1).
_BYTE_ORDER = {b"\x1a\x2b\x3c\x4d": ">", b"\x4d\x3c\x2b\x1a": "<"}

_SHB, _IDB, _PB, _SPB, _EPB, _DSB = 0x0A0D0D0A, 0x1, 0x2, 0x3, 0x6, 0xA
_HANDLED = frozenset((_IDB, _SPB, _DSB, _EPB, _PB))
_OPT_ENDOFOPT, _IF_NAME, _IF_TSRESOL, _IF_TSOFFSET = 0, 2, 9, 14


class _Structs:
    """The precompiled layouts of one byte order."""

    __slots__ = ("dsb", "epb", "idb", "option", "pb", "shb", "spb", "tail", "tsoffset", "u32")

    def __init__(self, order: str) -> None:
        # A block's trailing total length, then the next block's type and total length (§3.1).
        self.tail = struct.Struct(order + "III")
        self.u32 = struct.Struct(order + "I")
        self.shb = struct.Struct(order + "HHq")  # major, minor, section length (§4.1)
        self.idb = struct.Struct(order + "HxxI")  # link type, reserved, snaplen (§4.2)
        self.epb = struct.Struct(order + "IIIII")  # if id, ts high, ts low, caplen, len (§4.3)
        self.spb = struct.Struct(order + "I")  # original packet length (§4.4)
        self.dsb = struct.Struct(order + "II")  # secrets type, secrets length (§4.7)
        self.pb = struct.Struct(order + "HHIIII")  # if id, drops, ts high, ts low, caplen, len
        self.option = struct.Struct(order + "HH")  # option code, option length (§3.5)
        self.tsoffset = struct.Struct(order + "q")


_STRUCTS = {"<": _Structs("<"), ">": _Structs(">")}


def read_pcapng(
    stream: BinaryIO, name: str
) -> Iterator[Packet | Interface | DecryptionSecrets | Diagnostic]:
    """Yield each section's ``Interface`` values, ``Packet`` values and ``DecryptionSecrets``.

    ``stream`` must be positioned at the start of the file. The first block's type and
    byte-order magic are checked before this returns: a file that is not pcapng raises
    ``InputError`` here. Problems inside the file are ``Diagnostic`` values:
    ``pcapng.truncated_file`` and ``pcapng.bad_block`` end the iteration (a block whose
    length cannot be trusted leaves nothing to resynchronize on); ``pcapng.malformed_block``,
    ``pcapng.unknown_interface`` and ``pcapng.unsupported_version`` skip what they concern.

    ``Packet.number`` counts packet blocks (enhanced, simple and obsolete) from 1 across the
    whole file, sections included; ``Packet.offset`` is the file offset of the block.
    """
    head = _read_exact(stream, 12)
    if head[:4] != SHB_MAGIC or (len(head) == 12 and head[8:] not in _BYTE_ORDER):
        hint = " (it is a pcap file)" if head[:4] in MAGICS else ""
        raise InputError(
            f"{name} is not a pcapng file{hint}: it starts with {head[:12].hex() or 'nothing'}, "
            "not a Section Header Block (0a0d0d0a, then byte-order magic 1a2b3c4d in either "
            "order)"
        )
    return _Reader(stream, name).blocks(head)


class _Reader:
    """The state of one file: current section's byte order and interfaces, counters."""

    def __init__(self, stream: BinaryIO, name: str) -> None:
        self.stream = stream
        self.name = name
        self.structs = _STRUCTS["<"]
        # Per interface of the current section: (link type, timestamp units per second,
        # if_tsoffset in units, snaplen).
        self.interfaces: list[tuple[int, int, int, int]] = []
        self.section_usable = True
        self.last_ts = 0.0
        self.index = 0
        self.seen: dict[str, int] = {}

    def blocks(self, first: bytes) -> Iterator[Packet | Interface | DecryptionSecrets | Diagnostic]:
        """Walk the blocks; ``first`` holds the first 12 bytes of the file, already read.

        The hot loop makes two reads a block: its body, then 12 bytes that hold its trailing
        length and the next block's type and length, unpacked at once.
        """
        read = self.stream.read
        new = tuple.__new__  # Packet(...) costs 60 ns more through NamedTuple's __new__
        interfaces = self.interfaces  # cleared in place by each new section
        structs = self.structs
        index = 0
        last_ts = 0.0
        usable = True
        offset = 0
        btype, length = _SHB, 0
        raw_length, order_magic = first[4:8], first[8:12]
        while True:
            if btype == _SHB:
                # §4.1: the Section Header Block's type reads the same in both byte orders;
                # the byte-order magic after its length says how to read everything else.
                if len(raw_length) < 4 or len(order_magic) < 4:
                    yield self._truncated(offset, "a Section Header Block is cut off")
                    break
                order = _BYTE_ORDER.get(order_magic)
                if order is None:
                    yield self._stop(
                        offset,
                        "a Section Header Block has byte-order magic "
                        f"{order_magic.hex()}, neither 1a2b3c4d nor 4d3c2b1a",
                    )
                    break
                structs = self.structs = _STRUCTS[order]
                (length,) = structs.u32.unpack(raw_length)
            if length < 12 or length & 3 or length > MAX_BLOCK:
                yield self._stop(
                    offset,
                    f"block type 0x{btype:08x} has total length {length}, not a multiple "
                    "of 4 between 12 and 256 MiB (§3.1)",
                )
                break
            size = length - 12  # the body: no 8-byte header, no trailing length
            if btype == _SHB:
                body = order_magic + _read_exact(self.stream, size - 4)
            else:
                body = read(size)
                if len(body) < size and body:
                    body += _read_exact(self.stream, size - len(body))
            tail = read(12)
            if len(tail) < 12 and tail:
                tail += _read_exact(self.stream, 12 - len(tail))
            if len(body) < size or len(tail) < 4:
                got = 8 + len(body) + len(tail)
                yield self._truncated(
                    offset,
                    f"block type 0x{btype:08x} claims {length} bytes, but the file ends "
                    f"after {got}",
                )
                break
            if len(tail) == 12:
                trailer, next_type, next_length = structs.tail.unpack(tail)
            else:  # the end of the file, or a next block header cut off
                (trailer,), next_type, next_length = structs.u32.unpack_from(tail), -1, 0
            if trailer != length:
                yield self._stop(
                    offset,
                    f"block type 0x{btype:08x} starts with total length {length} but ends "
                    f"with {trailer} (§3.1: both must be equal)",
                )
                break
            if btype == _EPB and usable and length >= 32:
                # §4.3, the hot path, inlined: one unpack, one slice, one tuple.
                interface_id, high, low, caplen, orig_len = structs.epb.unpack_from(body)
                index += 1
                if caplen <= length - 32 and interface_id < len(interfaces):
                    linktype, units, ts_offset, _ = interfaces[interface_id]
                    # int / int is correctly rounded in CPython, even past 2**53 ticks
                    # (nanoseconds since 1970 are), so no precision is lost here.
                    last_ts = (((high << 32) | low) + ts_offset) / units
                    data = body[20 : 20 + caplen]
                    yield new(Packet, (last_ts, linktype, data, orig_len, index, offset))
                else:
                    self.index = index
                    yield from self._bad_packet(offset, length, caplen, interface_id)
            elif btype == _SHB:
                yield from self._section(offset, body, length)
                usable = self.section_usable
            elif usable and btype in _HANDLED:
                self.index, self.last_ts = index, last_ts
                if btype == _IDB:
                    yield from self._interface(offset, body, length)
                elif btype == _SPB:
                    yield from self._simple_packet(offset, body, length)
                elif btype == _DSB:
                    yield from self._secrets(offset, body, length)
                else:
                    yield from self._packet(offset, body, length, btype)
                index, last_ts = self.index, self.last_ts
            # Anything else (Name Resolution §4.5, Interface Statistics §4.6, custom §4.8,
            # types this reader does not know) is skipped: §3.1 lets a reader skip a block
            # by its length.
            offset += length
            if next_type == -1:
                if len(tail) > 4:
                    yield self._truncated(
                        offset,
                        f"a block header of 8 bytes, but the file ends after {len(tail) - 4}",
                    )
                break
            btype, length = next_type, next_length
            if btype == _SHB:
                raw_length, order_magic = tail[8:12], _read_exact(self.stream, 4)
        yield from self._summaries()

    # -- blocks other than EPB: each yields what it holds -------------------------------

    def _section(self, offset: int, body: bytes, length: int) -> Iterator[Interface | Diagnostic]:
        """§4.1: a new section forgets the interfaces of the previous one."""
        self.interfaces.clear()
        if length < 28:
            self.section_usable = False
            yield from self._malformed(
                offset,
                "a Section Header Block shorter than its 28 bytes of fixed fields",
                "its section is skipped",
            )
            return
        major, minor, _section_length = self.structs.shb.unpack_from(body, 4)
        # §4.1: a reader that does not know the major version cannot read the section.
        self.section_usable = major == 1
        if not self.section_usable:
            yield self._diagnostic(
                "pcapng.unsupported_version",
                offset,
                f"section version {major}.{minor}: only version 1 is defined, so the blocks up "
                "to the next section are skipped",
            )

    def _interface(self, offset: int, body: bytes, length: int) -> Iterator[Interface | Diagnostic]:
        """§4.2: link type, snaplen and options; the timestamp unit comes from if_tsresol."""
        if length < 20:
            yield from self._malformed(
                offset, "an Interface Description Block shorter than its 20 bytes of fixed fields"
            )
            # Keep interface numbering aligned with the writer's: later blocks count on it.
            # Link type -1 is no link type: the packet decoder counts and reports its packets.
            self.interfaces.append((-1, 1_000_000, 0, 0))
            return
        linktype, snaplen = self.structs.idb.unpack_from(body)
        units, ts_offset, if_name = 1_000_000, 0, None  # default resolution 10^-6 (§4.2)
        options, problems = self._options(offset, body, 8, length - 12)
        yield from problems
        for code, value in options:
            if code == _IF_TSRESOL and len(value) >= 1:
                # §4.2 if_tsresol: "If the Most Significant Bit is equal to zero, the remaining
                # bits indicates the resolution of the timestamp as a negative power of 10 [...]
                # If the Most Significant Bit is equal to one, [...] a negative power of 2."
                units = 2 ** (value[0] & 0x7F) if value[0] & 0x80 else 10 ** value[0]
            elif code == _IF_TSOFFSET and len(value) >= 8:
                # §4.2 if_tsoffset: seconds to add to every timestamp, signed 64 bits.
                ts_offset = self.structs.tsoffset.unpack_from(value)[0]
            elif code == _IF_NAME:
                if_name = value.decode("utf-8", "replace")
        self.interfaces.append((linktype, units, ts_offset * units, snaplen))
        yield Interface(
            index=len(self.interfaces) - 1,
            linktype=linktype,
            snaplen=snaplen,
            ts_resolution=1 / units,
            name=if_name,
        )

    def _simple_packet(
        self, offset: int, body: bytes, length: int
    ) -> Iterator[Packet | Diagnostic]:
        """§4.4: interface 0, no timestamp; captured length = min(original length, snaplen)."""
        if length < 16:
            yield from self._malformed(
                offset, "a Simple Packet Block shorter than its 16 bytes of fixed fields"
            )
            return
        (orig_len,) = self.structs.spb.unpack_from(body)
        self.index += 1
        if not self.interfaces:
            yield from self._unknown_interface(offset, 0)
            return
        linktype, _, _, snaplen = self.interfaces[0]
        caplen = min(orig_len, length - 16)
        if snaplen:
            caplen = min(caplen, snaplen)
        # No timestamp in the block: the previous packet's time is the best estimate.
        yield Packet(self.last_ts, linktype, body[4 : 4 + caplen], orig_len, self.index, offset)

    def _packet(
        self, offset: int, body: bytes, length: int, btype: int
    ) -> Iterator[Packet | Diagnostic]:
        """§4.3 EPB outside the hot path, and the obsolete Packet Block (Appendix A): an EPB
        with a 16-bit interface id and a 16-bit drops count."""
        kind = "an Enhanced Packet Block" if btype == _EPB else "a Packet Block"
        if length < 32:
            yield from self._malformed(offset, f"{kind} shorter than its 32 bytes of fixed fields")
            return
        if btype == _EPB:
            interface_id, high, low, caplen, orig_len = self.structs.epb.unpack_from(body)
        else:
            interface_id, _drops, high, low, caplen, orig_len = self.structs.pb.unpack_from(body)
        self.index += 1
        if caplen > length - 32 or interface_id >= len(self.interfaces):
            yield from self._bad_packet(offset, length, caplen, interface_id)
            return
        linktype, units, ts_offset, _ = self.interfaces[interface_id]
        self.last_ts = (((high << 32) | low) + ts_offset) / units
        data = body[20 : 20 + caplen]
        yield Packet(self.last_ts, linktype, data, orig_len, self.index, offset)

    def _bad_packet(
        self, offset: int, length: int, caplen: int, interface_id: int
    ) -> Iterator[Diagnostic]:
        if caplen > length - 32:
            yield from self._malformed(
                offset,
                f"packet {self.index} claims {caplen} captured bytes in a {length}-byte block",
            )
        else:
            yield from self._unknown_interface(offset, interface_id)

    def _secrets(
        self, offset: int, body: bytes, length: int
    ) -> Iterator[DecryptionSecrets | Diagnostic]:
        """§4.7: key material (a TLS key log for type 0x544c534b) for the packets after it."""
        if length < 20:
            yield from self._malformed(
                offset, "a Decryption Secrets Block shorter than its 20 bytes of fixed fields"
            )
            return
        secrets_type, secrets_len = self.structs.dsb.unpack_from(body)
        if secrets_len > length - 20:
            yield from self._malformed(
                offset,
                f"a Decryption Secrets Block claims {secrets_len} bytes of secrets in a "
                f"{length}-byte block",
            )
            return
        yield DecryptionSecrets(
            secrets_type=secrets_type, data=body[8 : 8 + secrets_len], offset=offset
        )

    # -- helpers -----------------------------------------------------------------------

    def _options(
        self, offset: int, body: bytes, start: int, end: int
    ) -> tuple[list[tuple[int, bytes]], list[Diagnostic]]:
        """§3.5: code u16, length u16, value padded to 32 bits; opt_endofopt ends the list."""
        option = self.structs.option
        options: list[tuple[int, bytes]] = []
        pos = start
        while pos + 4 <= end:
            code, size = option.unpack_from(body, pos)
            if code == _OPT_ENDOFOPT:
                break
            if pos + 4 + size > end:
                what = f"option {code} claims {size} bytes past the end of its block"
                return options, [*self._malformed(offset, what, "the options after it are ignored")]
            options.append((code, body[pos + 4 : pos + 4 + size]))
            pos += 4 + ((size + 3) & ~3)
        return options, []

    def _unknown_interface(self, offset: int, interface_id: int) -> Iterator[Diagnostic]:
        yield from self._bounded(
            "pcapng.unknown_interface",
            offset,
            f"packet {self.index} names interface {interface_id}, but the section describes "
            f"{len(self.interfaces)}: the packet is skipped (§4.3: an Interface Description "
            "Block must come before the packets that use it)",
        )

    def _malformed(
        self, offset: int, what: str, consequence: str = "the block is skipped"
    ) -> Iterator[Diagnostic]:
        yield from self._bounded("pcapng.malformed_block", offset, f"{what}: {consequence}")

    def _bounded(self, code: str, offset: int, message: str) -> Iterator[Diagnostic]:
        """At most MAX_DIAGNOSTICS per code, each with its offset; the rest are counted."""
        count = self.seen[code] = self.seen.get(code, 0) + 1
        if count <= MAX_DIAGNOSTICS:
            yield self._diagnostic(code, offset, message)

    def _summaries(self) -> Iterator[Diagnostic]:
        for code, count in self.seen.items():
            if count > MAX_DIAGNOSTICS:
                yield Diagnostic(
                    code=code,
                    location=self.name,
                    message=f"{count} blocks had this problem in all; only the first "
                    f"{MAX_DIAGNOSTICS} are listed",
                )

    def _diagnostic(self, code: str, offset: int, message: str) -> Diagnostic:
        return Diagnostic(code=code, location=f"{self.name} at offset {offset}", message=message)

    def _stop(self, offset: int, what: str) -> Diagnostic:
        return Diagnostic(
            code="pcapng.bad_block",
            location=f"{self.name} at offset {offset}",
            message=f"{what}: the file is corrupt from here on and blocks have no marker to "
            "resynchronize on, so reading stops (the packets before it are intact)",
            severity="error",
        )

    def _truncated(self, offset: int, what: str) -> Diagnostic:
        return Diagnostic(
            code="pcapng.truncated_file",
            location=f"{self.name} at offset {offset}",
            message=f"{what}: the capture was cut off, the packets before it are intact (was "
            "the capture stopped with kill -9, or the file copied while it was being written?)",
        )
