"""Captures that are still being written: bytes as they arrive -> ``Interface``, ``Packet``,
``DecryptionSecrets``, ``Diagnostic``.

``tcpdump -w`` and ``dumpcap`` append whole records, but a reader that looks at the file
between two ``write`` calls can find the last record half written. The readers of
:mod:`agentshark.sources.pcap` and :mod:`agentshark.sources.pcapng` pull from a stream and
take a short read for the end of the file; these decoders are pushed bytes instead
(sans-I/O, ``feed(data) -> list``, ``close() -> list``): a record or block that is not whole
yet is held, not reported, and only :meth:`close` says it was cut off. For the same bytes
they yield the same items as the stream readers, diagnostics included (their messages and
the block semantics are those readers' own code), however the bytes are split.

A pcap record has no marker to resynchronize on, nor has a pcapng block: a record length
past the snap length, or a block whose two total lengths differ, ends the decoding as it
ends the stream readers (``pcap.bad_record``, ``pcapng.bad_block``); later bytes are counted
in :attr:`ignored`, never parsed.
"""

from __future__ import annotations

import io
import struct

from agentshark.errors import Diagnostic
from agentshark.sources.pcap import FileHeader, bad_record, check_magic, cut_header, truncated
from agentshark.sources.pcapng import (
    _BYTE_ORDER,
    _DSB,
    _HANDLED,
    _IDB,
    _SHB,
    _SPB,
    _STRUCTS,
    MAX_BLOCK,
    _Reader,
    read_pcapng,
)
from agentshark.sources.records import DecryptionSecrets, Interface, Packet

__all__ = ["CaptureFeed", "PcapFeed", "PcapngFeed"]

CaptureItem = Packet | Interface | DecryptionSecrets | Diagnostic

_RECORD = {"<": struct.Struct("<IIII"), ">": struct.Struct(">IIII")}
_HEAD = {"<": struct.Struct("<II"), ">": struct.Struct(">II")}  # block type, total length


class PcapFeed:
    """A growing libpcap file (draft-ietf-opsawg-pcap): the File Header, then records.

    ``feed`` raises ``InputError`` (as :func:`~agentshark.sources.pcap.read_pcap` does) when
    the first 4 bytes are not a pcap magic number."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ignored = 0  # bytes after a record that ended the decoding
        self._held = b""  # bytes of a record (or of the file header) not whole yet
        self._offset = 0  # file offset of the first held byte
        self._header: FileHeader | None = None
        self._index = 0
        self._stopped = False

    def feed(self, data: bytes) -> list[CaptureItem]:
        if self._stopped:
            self.ignored += len(data)
            return []
        buf = self._held + data if self._held else data
        out: list[CaptureItem] = []
        pos = 0
        header = self._header
        if header is None:
            if len(buf) >= 4:
                check_magic(buf, self.name)
            if len(buf) < 24:
                self._held = buf
                return out
            header = self._header = FileHeader.parse(buf[:24])
            out.append(header.interface)
            pos = 24
        pos = self._records(buf, pos, header, out)
        self._held = buf[pos:]
        self._offset += pos
        return out

    def _records(self, buf: bytes, pos: int, header: FileHeader, out: list[CaptureItem]) -> int:
        """Append the whole records of ``buf`` from ``pos``; the offset after the last."""
        unpack_from = _RECORD[header.order].unpack_from
        size, units, limit = header.record_size, header.units, header.limit
        linktype = header.interface.linktype
        new = tuple.__new__
        end = len(buf)
        while end - pos >= size:
            seconds, fraction, incl_len, orig_len = unpack_from(buf, pos)
            if incl_len > limit:
                out.append(
                    bad_record(self.name, self._offset + pos, self._index + 1, incl_len, limit)
                )
                self._stopped = True
                self.ignored += end - pos
                return end
            stop = pos + size + incl_len
            if stop > end:
                break
            self._index += 1
            data = buf[pos + size : stop]
            out.append(
                new(
                    Packet,
                    (
                        seconds + fraction / units,
                        linktype,
                        data,
                        orig_len,
                        self._index,
                        self._offset + pos,
                    ),
                )
            )
            pos = stop
        return pos

    def close(self) -> list[CaptureItem]:
        """The end of the file: a held record was cut off."""
        held, self._held = self._held, b""
        if self._stopped:
            return []
        if self._header is None:
            if len(held) >= 4:
                check_magic(held, self.name)
            return list(cut_header(self.name, len(held)))
        if not held:
            return []
        size = self._header.record_size
        number = self._index + 1
        if len(held) < size:
            what = (
                f"record {number} starts with a {size}-byte header but the file ends after "
                f"{len(held)} bytes of it"
            )
        else:
            incl_len = _RECORD[self._header.order].unpack_from(held)[2]
            got = len(held) - size
            what = f"record {number} claims {incl_len} bytes but the file ends after {got}"
        return [truncated(self.name, self._offset, what)]


class PcapngFeed:
    """A growing pcapng file (draft-ietf-opsawg-pcapng §3.1): whole blocks are decoded by
    the stream reader's own block methods, in the byte order of their section.

    ``feed`` raises ``InputError`` (as :func:`~agentshark.sources.pcapng.read_pcapng` does)
    when the file does not start with a Section Header Block."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ignored = 0
        self._reader = _Reader(io.BytesIO(), name)  # its block methods; its stream is unused
        self._held = b""
        self._offset = 0
        self._checked = False
        self._order = "<"  # of the current section
        self._usable = True
        self._stopped = False

    def feed(self, data: bytes) -> list[CaptureItem]:
        if self._stopped:
            self.ignored += len(data)
            return []
        buf = self._held + data if self._held else data
        if not self._checked:
            if len(buf) < 12:
                self._held = buf
                return []
            read_pcapng(io.BytesIO(buf[:12]), self.name)  # raises InputError if not pcapng
            self._checked = True
        out: list[CaptureItem] = []
        pos = 0
        end = len(buf)
        while end - pos >= 12:
            length = self._length(buf, pos, out)
            if length is None:
                self.ignored += end - pos
                pos = end
                break
            if end - pos < length:
                break
            self._block(buf, pos, length, out)
            if self._stopped:
                self.ignored += end - pos - length
                pos = end
                break
            pos += length
        self._held = buf[pos:]
        self._offset += pos
        return out

    def _length(self, buf: bytes, pos: int, out: list[CaptureItem]) -> int | None:
        """The total length of the block at ``pos`` (a new section sets the byte order),
        or None after the diagnostic that ends the decoding (§3.1, §4.1)."""
        r = self._reader
        offset = self._offset + pos
        if buf[pos : pos + 4] == b"\x0a\x0d\x0d\x0a":
            magic = buf[pos + 8 : pos + 12]
            order = _BYTE_ORDER.get(magic)
            if order is None:
                self._stop(
                    out,
                    r._stop(
                        offset,
                        "a Section Header Block has byte-order magic "
                        f"{magic.hex()}, neither 1a2b3c4d nor 4d3c2b1a",
                    ),
                )
                return None
            r.structs = _STRUCTS[order]
            self._order = order
        btype, length = _HEAD[self._order].unpack_from(buf, pos)
        if length < 12 or length & 3 or length > MAX_BLOCK:
            self._stop(
                out,
                r._stop(
                    offset,
                    f"block type 0x{btype:08x} has total length {length}, not a multiple "
                    "of 4 between 12 and 256 MiB (§3.1)",
                ),
            )
            return None
        return int(length)

    def _block(self, buf: bytes, pos: int, length: int, out: list[CaptureItem]) -> None:
        r = self._reader
        offset = self._offset + pos
        btype = r.structs.u32.unpack_from(buf, pos)[0]
        (trailer,) = r.structs.u32.unpack_from(buf, pos + length - 4)
        if trailer != length:
            self._stop(
                out,
                r._stop(
                    offset,
                    f"block type 0x{btype:08x} starts with total length {length} but ends "
                    f"with {trailer} (§3.1: both must be equal)",
                ),
            )
            return
        body = buf[pos + 8 : pos + length - 4]
        if btype == _SHB:
            out.extend(r._section(offset, body, length))
            self._usable = r.section_usable
        elif self._usable and btype in _HANDLED:
            if btype == _IDB:
                out.extend(r._interface(offset, body, length))
            elif btype == _SPB:
                out.extend(r._simple_packet(offset, body, length))
            elif btype == _DSB:
                out.extend(r._secrets(offset, body, length))
            else:
                out.extend(r._packet(offset, body, length, btype))
        # Other blocks (Name Resolution, Interface Statistics, custom, unknown) are skipped
        # by their length, as the stream reader skips them (§3.1).

    def _stop(self, out: list[CaptureItem], diagnostic: Diagnostic) -> None:
        out.append(diagnostic)
        self._stopped = True

    def close(self) -> list[CaptureItem]:
        """The end of the file: a held block was cut off; then the per-code summaries."""
        held, self._held = self._held, b""
        out: list[CaptureItem] = []
        if not self._stopped and held:
            out.extend(self._cut(held))
        out.extend(self._reader._summaries())
        return out

    def _cut(self, held: bytes) -> list[CaptureItem]:
        """What the stream reader says of a file that ends inside the block ``held``."""
        r = self._reader
        offset = self._offset
        if held[:4] == b"\x0a\x0d\x0d\x0a" and len(held) < 12:
            return [r._truncated(offset, "a Section Header Block is cut off")]
        if len(held) < 8:
            if offset == 0:
                return [r._truncated(offset, "a Section Header Block is cut off")]
            return [
                r._truncated(
                    offset, f"a block header of 8 bytes, but the file ends after {len(held)}"
                )
            ]
        out: list[CaptureItem] = []
        length = self._length(held, 0, out)
        if length is None:
            return out
        btype = r.structs.u32.unpack_from(held)[0]
        return [
            r._truncated(
                offset,
                f"block type 0x{btype:08x} claims {length} bytes, but the file ends after "
                f"{len(held)}",
            )
        ]


CaptureFeed = PcapFeed | PcapngFeed
