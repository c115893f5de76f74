"""read_pcap: both byte orders and resolutions, truncation, corrupt lengths, pipes, the shared
captures against tcpdump's own counts, and fuzzing."""

from __future__ import annotations

import io
import json
import os
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic, InputError
from agentshark.sources.pcap import MAGICS, read_pcap
from agentshark.sources.records import Interface, Packet
from tests.helpers import CAPTURES, CORPUS

MICRO, NANO = 0xA1B2C3D4, 0xA1B23C4D


def pcap_file(
    records: list[tuple[int, int, bytes, int]],
    *,
    order: str = "<",
    magic: int = MICRO,
    snaplen: int = 262144,
    linktype: int = 1,
) -> bytes:
    """A pcap file from (seconds, fraction, captured bytes, original length) records."""
    out = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)
    for seconds, fraction, data, orig_len in records:
        out += struct.pack(order + "IIII", seconds, fraction, len(data), orig_len) + data
    return out


def read(data: bytes, name: str = "t.pcap") -> list[Packet | Interface | Diagnostic]:
    return list(read_pcap(io.BytesIO(data), name))


RECORDS = [
    (1_700_000_000, 123456, b"\x00" * 60, 60),
    (1_700_000_001, 999999, b"abc", 3),
    (1_700_000_002, 0, b"", 0),
]


@pytest.mark.parametrize("order", ["<", ">"])
def test_microsecond_file(order: str) -> None:
    interface, *packets = read(pcap_file(RECORDS, order=order))
    assert interface == Interface(index=0, linktype=1, snaplen=262144, ts_resolution=1e-6)
    assert packets == [
        Packet(1_700_000_000 + 123456 / 1e6, 1, b"\x00" * 60, 60, 1, 24),
        Packet(1_700_000_001 + 999999 / 1e6, 1, b"abc", 3, 2, 24 + 16 + 60),
        Packet(1_700_000_002.0, 1, b"", 0, 3, 24 + 16 + 60 + 16 + 3),
    ]


@pytest.mark.parametrize("order", ["<", ">"])
def test_nanosecond_file(order: str) -> None:
    records = [(1_700_000_000, 123456789, b"xy", 2)]
    interface, packet = read(pcap_file(records, order=order, magic=NANO))
    assert isinstance(interface, Interface)
    assert interface.ts_resolution == 1e-9
    assert isinstance(packet, Packet)
    assert packet.ts == 1_700_000_000 + 123456789 / 1e9
    assert abs(packet.ts - 1_700_000_000.123456789) < 1e-6


def test_magic_bytes_as_written() -> None:
    assert pcap_file([], order="<")[:4] == bytes.fromhex("d4c3b2a1")
    assert pcap_file([], order=">")[:4] == bytes.fromhex("a1b2c3d4")
    assert pcap_file([], magic=NANO)[:4] in MAGICS


def test_fcs_bits_are_masked_from_the_link_type() -> None:
    # draft-ietf-opsawg-pcap §4: FCS length in the top 4 bits, F bit 0x04000000.
    linkinfo = (2 << 28) | 0x04000000 | 1
    interface, packet = read(pcap_file(RECORDS[:1], linktype=linkinfo))
    assert isinstance(interface, Interface) and isinstance(packet, Packet)
    assert interface.linktype == packet.linktype == 1


def test_other_link_types_pass_through() -> None:
    _, packet = read(pcap_file(RECORDS[:1], linktype=276))
    assert isinstance(packet, Packet) and packet.linktype == 276


def test_snaplen_cut_records_keep_their_original_length() -> None:
    _, packet = read(pcap_file([(1, 0, b"a" * 96, 1514)], snaplen=96))
    assert isinstance(packet, Packet)
    assert (len(packet.data), packet.orig_len) == (96, 1514)


def test_kuznetzov_modified_format() -> None:
    # 0xA1B2CD34: 8 more bytes per record header (ifindex, protocol, pkt_type, pad).
    out = struct.pack("<IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, 1)
    out += struct.pack("<IIII", 5, 6, 3, 3) + bytes(8) + b"abc"
    _, packet = read(out)
    assert packet == Packet(5.000006, 1, b"abc", 3, 1, 24)


def test_empty_capture_yields_only_the_interface() -> None:
    assert read(pcap_file([])) == [
        Interface(index=0, linktype=1, snaplen=262144, ts_resolution=1e-6)
    ]


# -- broken files -----------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"\x0a\x0d\x0d\x0a" + bytes(40), b"GET / HTTP/1.1\r\n"])
def test_not_pcap_raises_at_call(data: bytes) -> None:
    with pytest.raises(InputError, match="is not a pcap file"):
        read_pcap(io.BytesIO(data), "x.bin")


def test_pcapng_is_named_in_the_error() -> None:
    with pytest.raises(InputError, match=r"x\.pcap is not a pcap file \(it is a pcapng file\)"):
        read_pcap(io.BytesIO(b"\x0a\x0d\x0d\x0a" + bytes(40)), "x.pcap")


def test_header_cut_off() -> None:
    [diagnostic] = read(pcap_file([])[:10])
    assert isinstance(diagnostic, Diagnostic)
    assert diagnostic.code == "pcap.truncated_file"


def test_cut_in_record_data() -> None:
    whole = pcap_file(RECORDS)
    cut = whole[: 24 + 16 + 60 + 16 + 1]  # the second record has 1 of its 3 bytes
    *items, diagnostic = read(cut, "cut.pcap")
    assert [type(i) for i in items] == [Interface, Packet]
    assert isinstance(diagnostic, Diagnostic)
    assert diagnostic.code == "pcap.truncated_file"
    assert diagnostic.location == "cut.pcap at offset 100"
    assert "record 2 claims 3 bytes but the file ends after 1" in diagnostic.message


def test_cut_in_record_header() -> None:
    cut = pcap_file(RECORDS)[: 24 + 16 + 60 + 7]
    *items, diagnostic = read(cut)
    assert len(items) == 2
    assert isinstance(diagnostic, Diagnostic)
    assert diagnostic.code == "pcap.truncated_file"
    assert diagnostic.location == "t.pcap at offset 100"
    assert "16-byte header" in diagnostic.message


def test_absurd_record_length_stops_reading() -> None:
    data = pcap_file(RECORDS[:1], snaplen=65535) + struct.pack("<IIII", 1, 0, 10_000_000, 60)
    *items, diagnostic = read(data + bytes(100))
    assert len(items) == 2
    assert isinstance(diagnostic, Diagnostic)
    assert (diagnostic.code, diagnostic.severity) == ("pcap.bad_record", "error")
    assert diagnostic.location == "t.pcap at offset 100"


def test_loopback_tso_records_above_snaplen_are_accepted() -> None:
    # tcpdump on lo writes 64 KiB frames even when the file says snaplen 65535.
    big = (1, 0, bytes(65550), 65550)
    _, packet = read(pcap_file([big], snaplen=65535))
    assert isinstance(packet, Packet) and len(packet.data) == 65550


# -- streams without seek ---------------------------------------------------------------


class Trickle(io.RawIOBase):
    """A non-seekable stream returning at most ``step`` bytes a read, like a raw pipe."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data, self._pos, self._step = data, 0, step

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = min(self._step, len(self._data) - self._pos if n < 0 else n)
        chunk = self._data[self._pos : self._pos + n]
        self._pos += len(chunk)
        return chunk

    def seek(self, *args: object) -> int:
        raise io.UnsupportedOperation("seek")

    def tell(self) -> int:
        raise io.UnsupportedOperation("tell")


@pytest.mark.parametrize("step", [1, 3, 7, 1000])
def test_short_reads(step: int) -> None:
    data = pcap_file(RECORDS)
    assert list(read_pcap(Trickle(data, step), "t.pcap")) == read(data)  # type: ignore[arg-type]


def test_real_pipe() -> None:
    data = pcap_file(RECORDS * 500)
    r, w = os.pipe()

    def write() -> None:
        with os.fdopen(w, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    with os.fdopen(r, "rb") as f:
        items = list(read_pcap(f, "-"))
    writer.join()
    assert items == read(data)
    assert len(items) == 1 + 1500


# -- the shared captures ----------------------------------------------------------------


@pytest.mark.parametrize(
    "pcap", sorted(CAPTURES.glob("*/capture.pcap")), ids=lambda p: p.parent.name
)
def test_loopback_captures_match_tcpdump(pcap: Path) -> None:
    """tcpdump's own counters (run.json) are the oracle for the number of records."""
    run = json.loads((pcap.parent / "run.json").read_text())
    with pcap.open("rb") as f:
        interface, *packets = read_pcap(f, pcap.name)
    assert isinstance(interface, Interface) and interface.linktype == 1
    assert all(isinstance(p, Packet) for p in packets)
    assert len(packets) == run["tcpdump"]["packets captured"]
    last = packets[-1]
    assert isinstance(last, Packet)
    assert last.offset + 16 + len(last.data) == run["pcap_bytes"] == pcap.stat().st_size
    assert [p.number for p in packets if isinstance(p, Packet)] == list(range(1, len(packets) + 1))


def corpus_pcaps() -> Iterator[Path]:
    for root, _dirs, files in sorted(os.walk(CORPUS)):
        for name in sorted(files):
            path = Path(root) / name
            with path.open("rb") as f:
                if f.read(4) in MAGICS:
                    yield path


def independent_count(path: Path) -> tuple[int, int]:
    """Records and timestamp-second sum, walked with seek and int.from_bytes (no struct)."""
    count = seconds = 0
    with path.open("rb") as f:
        order: Literal["little", "big"] = "big"
        if f.read(4) in (bytes.fromhex("d4c3b2a1"), bytes.fromhex("4d3cb2a1")):
            order = "little"
        f.seek(24)
        while head := f.read(16):
            seconds += int.from_bytes(head[0:4], order)
            f.seek(int.from_bytes(head[8:12], order), os.SEEK_CUR)
            count += 1
    return count, seconds


CORPUS_PCAPS = list(corpus_pcaps())


def test_the_corpus_has_pcap_files() -> None:
    assert len(CORPUS_PCAPS) >= 10


@pytest.mark.parametrize("path", CORPUS_PCAPS, ids=lambda p: p.name)
def test_corpus_pcap_files_read_to_the_end(path: Path) -> None:
    with path.open("rb") as f:
        items = list(read_pcap(f, path.name))
    packets = [i for i in items if isinstance(i, Packet)]
    assert [i for i in items if isinstance(i, Diagnostic)] == []
    count, seconds = independent_count(path)
    assert len(packets) == count
    assert sum(int(p.ts) for p in packets) == seconds


# -- fuzz -------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["<", ">"]), st.sampled_from([MICRO, NANO]), st.binary(max_size=400))
def test_fuzz_any_bytes_after_a_valid_header(order: str, magic: int, tail: bytes) -> None:
    data = pcap_file([], order=order, magic=magic, snaplen=64) + tail
    items = read(data)
    assert isinstance(items[0], Interface)
    assert all(isinstance(i, Packet | Diagnostic) for i in items[1:])
    # A problem ends the file: at most one Diagnostic, and it comes last.
    problems = [n for n, item in enumerate(items) if isinstance(item, Diagnostic)]
    assert problems in ([], [len(items) - 1])
