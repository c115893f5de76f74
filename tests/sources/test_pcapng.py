"""read_pcapng: byte orders, sections, timestamp resolutions, every block type, broken block
lengths, the corpus against an independent block walker, and fuzzing."""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic, InputError
from agentshark.sources.pcapng import MAX_DIAGNOSTICS, SHB_MAGIC, read_pcapng
from agentshark.sources.records import DecryptionSecrets, Interface, Packet
from tests.helpers import CORPUS
from tests.sources.test_pcap import Trickle

Item = Packet | Interface | DecryptionSecrets | Diagnostic

# -- builders -----------------------------------------------------------------------------


def block(btype: int, body: bytes, order: str = "<") -> bytes:
    body += bytes(-len(body) % 4)
    total = 12 + len(body)
    return struct.pack(order + "II", btype, total) + body + struct.pack(order + "I", total)


def option(code: int, value: bytes, order: str = "<") -> bytes:
    return struct.pack(order + "HH", code, len(value)) + value + bytes(-len(value) % 4)


def end_of_options(order: str = "<") -> bytes:
    return struct.pack(order + "HH", 0, 0)


def shb(order: str = "<", major: int = 1, options: bytes = b"") -> bytes:
    body = struct.pack(order + "IHHq", 0x1A2B3C4D, major, 0, -1) + options
    return block(0x0A0D0D0A, body, order)


def idb(
    linktype: int = 1,
    snaplen: int = 0,
    order: str = "<",
    *,
    tsresol: int | None = None,
    tsoffset: int | None = None,
    name: str | None = None,
) -> bytes:
    opts = b""
    if name is not None:
        opts += option(2, name.encode(), order)
    if tsresol is not None:
        opts += option(9, bytes([tsresol]), order)
    if tsoffset is not None:
        opts += option(14, struct.pack(order + "q", tsoffset), order)
    if opts:
        opts += end_of_options(order)
    return block(1, struct.pack(order + "HHI", linktype, 0, snaplen) + opts, order)


def epb(
    data: bytes,
    ticks: int = 0,
    interface: int = 0,
    order: str = "<",
    orig_len: int | None = None,
    options: bytes = b"",
) -> bytes:
    fixed = struct.pack(
        order + "IIIII",
        interface,
        ticks >> 32,
        ticks & 0xFFFFFFFF,
        len(data),
        len(data) if orig_len is None else orig_len,
    )
    return block(6, fixed + data + bytes(-len(data) % 4) + options, order)


def spb(data: bytes, orig_len: int, order: str = "<") -> bytes:
    return block(3, struct.pack(order + "I", orig_len) + data, order)


def dsb(secrets_type: int, data: bytes, order: str = "<") -> bytes:
    return block(10, struct.pack(order + "II", secrets_type, len(data)) + data, order)


def packet_block(data: bytes, ticks: int, interface: int = 0, order: str = "<") -> bytes:
    fixed = struct.pack(
        order + "HHIIII", interface, 0, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data)
    )
    return block(2, fixed + data, order)


def read(data: bytes, name: str = "t.pcapng") -> list[Item]:
    return list(read_pcapng(io.BytesIO(data), name))


def packets(items: list[Item]) -> list[Packet]:
    return [i for i in items if isinstance(i, Packet)]


def diagnostics(items: list[Item]) -> list[Diagnostic]:
    return [i for i in items if isinstance(i, Diagnostic)]


US = 1_700_000_000_123456  # microseconds since 1970

# -- the basics ---------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["<", ">"])
def test_both_byte_orders(order: str) -> None:
    head = shb(order) + idb(1, 262144, order, name="lo")
    first = epb(b"hello", US, order=order)
    data = head + first + epb(b"x" * 7, US + 1, order=order, orig_len=1500)
    assert read(data) == [
        Interface(index=0, linktype=1, snaplen=262144, ts_resolution=1e-6, name="lo"),
        Packet(US / 10**6, 1, b"hello", 5, 1, len(head)),
        Packet((US + 1) / 10**6, 1, b"x" * 7, 1500, 2, len(head) + len(first)),
    ]


def test_byte_order_magic_as_written() -> None:
    assert shb("<")[8:12] == bytes.fromhex("4d3c2b1a")
    assert shb(">")[8:12] == bytes.fromhex("1a2b3c4d")
    assert shb(">")[:4] == shb("<")[:4] == SHB_MAGIC


def test_decimal_resolution_keeps_nanoseconds() -> None:
    ticks = 1_700_000_000_123456789
    interface, packet = read(shb() + idb(tsresol=9) + epb(b"", ticks))
    assert isinstance(interface, Interface) and interface.ts_resolution == 1e-9
    assert isinstance(packet, Packet)
    # Correctly rounded: the nearest float to the exact value.
    assert packet.ts == float(Fraction(ticks, 10**9))


def test_binary_resolution() -> None:
    # §4.2 if_tsresol: most significant bit set -> negative power of 2 (0x8A: 1/1024 s).
    ticks = 1_700_000_000 * 1024 + 512
    interface, packet = read(shb() + idb(tsresol=0x8A) + epb(b"", ticks))
    assert isinstance(interface, Interface) and interface.ts_resolution == 1 / 1024
    assert isinstance(packet, Packet) and packet.ts == 1_700_000_000.5


def test_tsoffset_is_added() -> None:
    _, packet = read(shb() + idb(tsoffset=1_000_000_000) + epb(b"", 700_000_000_250000))
    assert isinstance(packet, Packet) and packet.ts == 1_700_000_000.25


def test_negative_tsoffset() -> None:
    _, packet = read(shb() + idb(tsresol=3, tsoffset=-10) + epb(b"", 20_500))
    assert isinstance(packet, Packet) and packet.ts == 10.5


def test_epb_options_and_padding_are_not_data() -> None:
    comment = option(1, b"a comment") + end_of_options()
    _, packet = read(shb() + idb() + epb(b"abcde", options=comment))
    assert isinstance(packet, Packet) and packet.data == b"abcde"


def test_interfaces_with_different_link_types() -> None:
    data = shb() + idb(1) + idb(113) + epb(b"a", interface=1) + epb(b"b", interface=0)
    assert [(p.linktype, p.data) for p in packets(read(data))] == [(113, b"a"), (1, b"b")]


# -- sections ---------------------------------------------------------------------------


def test_sections_with_different_byte_orders() -> None:
    data = (
        shb("<")
        + idb(1, order="<")
        + epb(b"le", US, order="<")
        + shb(">")
        + idb(101, order=">", tsresol=9)
        + epb(b"be", US * 1000, order=">")
    )
    items = read(data)
    assert [i for i in items if isinstance(i, Interface)] == [
        Interface(index=0, linktype=1, snaplen=0, ts_resolution=1e-6),
        Interface(index=0, linktype=101, snaplen=0, ts_resolution=1e-9),
    ]
    assert [(p.linktype, p.data, p.number, p.ts) for p in packets(items)] == [
        (1, b"le", 1, US / 1e6),
        (101, b"be", 2, US / 1e6),
    ]


def test_a_new_section_forgets_interfaces() -> None:
    data = (
        shb()
        + idb()
        + idb()
        + epb(b"1", interface=1)
        + shb()
        + idb()
        + epb(b"2", interface=1)  # interface 1 belonged to the previous section
        + epb(b"3", interface=0)
    )
    items = read(data)
    assert [(p.data, p.number) for p in packets(items)] == [(b"1", 1), (b"3", 3)]
    [problem] = diagnostics(items)
    assert problem.code == "pcapng.unknown_interface"
    assert "packet 2 names interface 1" in problem.message


def test_unsupported_version_section_is_skipped() -> None:
    data = (
        shb()
        + idb()
        + epb(b"1")
        + shb(major=2)
        + idb()
        + epb(b"skipped")
        + shb()
        + idb()
        + epb(b"3")
    )
    items = read(data)
    assert [p.data for p in packets(items)] == [b"1", b"3"]
    assert [d.code for d in diagnostics(items)] == ["pcapng.unsupported_version"]


def test_short_section_header_skips_its_section() -> None:
    short = block(0x0A0D0D0A, struct.pack("<IHH", 0x1A2B3C4D, 1, 0))  # no section length
    items = read(shb() + idb() + epb(b"1") + short + idb() + epb(b"2") + shb() + idb() + epb(b"3"))
    assert [p.data for p in packets(items)] == [b"1", b"3"]
    assert [d.code for d in diagnostics(items)] == ["pcapng.malformed_block"]


# -- other block types ------------------------------------------------------------------


def test_simple_packet_block() -> None:
    # §4.4: interface 0; captured length min(original length, snaplen); no timestamp.
    data = shb() + idb(snaplen=8) + spb(b"A" * 8, 20) + epb(b"e", US) + spb(b"B" * 4, 4)
    assert [(p.ts, p.data, p.orig_len, p.number) for p in packets(read(data))] == [
        (0.0, b"A" * 8, 20, 1),
        (US / 1e6, b"e", 1, 2),
        (US / 1e6, b"B" * 4, 4, 3),
    ]


def test_simple_packet_without_snaplen_uses_original_length() -> None:
    _, packet = read(shb() + idb() + spb(b"abcdef", 6))  # padded to 8 in the block
    assert isinstance(packet, Packet) and packet.data == b"abcdef"


def test_simple_packet_before_any_interface() -> None:
    items = read(shb() + spb(b"x", 1))
    assert packets(items) == []
    assert [d.code for d in diagnostics(items)] == ["pcapng.unknown_interface"]


def test_obsolete_packet_block() -> None:
    _, packet = read(shb() + idb() + packet_block(b"old", US))
    assert isinstance(packet, Packet)
    assert (packet.ts, packet.data, packet.number) == (US / 1e6, b"old", 1)


def test_decryption_secrets_block() -> None:
    keylog = b"CLIENT_RANDOM " + b"ab" * 32 + b" " + b"cd" * 48 + b"\n"
    head = shb() + idb()
    items = read(head + dsb(0x544C534B, keylog) + epb(b"tls"))
    assert items[1] == DecryptionSecrets(secrets_type=0x544C534B, data=keylog, offset=len(head))
    assert isinstance(items[2], Packet)


@pytest.mark.parametrize(
    "btype",
    [4, 5, 0x00000BAD, 0x40000BAD, 0x80000001, 0x12345678],
    ids=["name resolution", "interface statistics", "custom", "custom no-copy", "local", "unknown"],
)
def test_other_blocks_are_skipped(btype: int) -> None:
    data = shb() + idb() + epb(b"1") + block(btype, b"whatever bytes") + epb(b"2")
    items = read(data)
    assert [p.data for p in packets(items)] == [b"1", b"2"]
    assert diagnostics(items) == []


# -- broken files -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"",
        bytes.fromhex("d4c3b2a1") + bytes(20),  # a pcap file
        SHB_MAGIC + struct.pack("<I", 28) + b"\x00\x00\x00\x00",  # bad byte-order magic
        b"\x0a\x0d\x0a\x0d" + bytes(24),
    ],
)
def test_not_pcapng_raises_at_call(data: bytes) -> None:
    with pytest.raises(InputError, match="is not a pcapng file"):
        read_pcapng(io.BytesIO(data), "x.bin")


def test_pcap_is_named_in_the_error() -> None:
    with pytest.raises(InputError, match=r"is not a pcapng file \(it is a pcap file\)"):
        read_pcapng(io.BytesIO(bytes.fromhex("d4c3b2a1") + bytes(20)), "x.pcapng")


def test_first_block_cut_off() -> None:
    [problem] = read(SHB_MAGIC + b"\x1c\x00")
    assert isinstance(problem, Diagnostic) and problem.code == "pcapng.truncated_file"


def bad_length(length: int) -> bytes:
    return struct.pack("<II", 6, length) + bytes(64)


@pytest.mark.parametrize(
    ("tail", "what"),
    [
        (bad_length(13), "total length 13"),
        (bad_length(8), "total length 8"),
        (bad_length(0), "total length 0"),
        (bad_length(1 << 30), f"total length {1 << 30}"),
        (epb(b"abcd")[:-4] + struct.pack("<I", 40), "ends with 40"),
    ],
)
def test_bad_block_length_stops_reading(tail: bytes, what: str) -> None:
    head = shb() + idb() + epb(b"ok")
    items = read(head + tail + epb(b"never"))
    assert [p.data for p in packets(items)] == [b"ok"]
    [problem] = diagnostics(items)
    assert (problem.code, problem.severity) == ("pcapng.bad_block", "error")
    assert problem.location == f"t.pcapng at offset {len(head)}"
    assert what in problem.message


@pytest.mark.parametrize("cut", [1, 4, 7, 8, 20, 35])
def test_file_cut_off_mid_block(cut: int) -> None:
    head = shb() + idb() + epb(b"ok")
    items = read(head + epb(b"x" * 20)[:cut])
    assert [p.data for p in packets(items)] == [b"ok"]
    [problem] = diagnostics(items)
    assert problem.code == "pcapng.truncated_file"
    assert problem.location == f"t.pcapng at offset {len(head)}"


def test_captured_length_past_the_block_skips_it() -> None:
    bad = bytearray(epb(b"abcd"))
    struct.pack_into("<I", bad, 20, 99)  # captured length 99 in a 36-byte block
    items = read(shb() + idb() + bytes(bad) + epb(b"next"))
    assert [(p.data, p.number) for p in packets(items)] == [(b"next", 2)]
    assert [d.code for d in diagnostics(items)] == ["pcapng.malformed_block"]


def test_option_past_the_block_is_reported() -> None:
    body = struct.pack("<HHI", 1, 0, 0) + struct.pack("<HH", 2, 200) + b"lo\x00\x00"
    items = read(shb() + block(1, body) + epb(b"p"))
    assert [d.code for d in diagnostics(items)] == ["pcapng.malformed_block"]
    assert isinstance(items[1], Interface) and items[1].name is None
    assert [p.data for p in packets(items)] == [b"p"]


def test_diagnostics_are_bounded() -> None:
    data = shb() + idb() + epb(b"x", interface=5) * 25
    problems = diagnostics(read(data))
    assert len(problems) == MAX_DIAGNOSTICS + 1
    assert problems[-1].code == "pcapng.unknown_interface"
    assert problems[-1].message.startswith("25 blocks")


# -- streams without seek ---------------------------------------------------------------


@pytest.mark.parametrize("step", [1, 5, 13, 4096])
def test_short_reads(step: int) -> None:
    data = shb() + idb() + epb(b"a" * 30) + dsb(1, b"k") + spb(b"s", 1) + shb(">") + idb(order=">")
    data += epb(b"b", order=">")
    whole = read(data)
    assert list(read_pcapng(Trickle(data, step), "t.pcapng")) == whole  # type: ignore[arg-type]
    assert len(packets(whole)) == 3


# -- the corpus -------------------------------------------------------------------------


def corpus_pcapngs() -> Iterator[Path]:
    for root, _dirs, files in sorted(os.walk(CORPUS)):
        for name in sorted(files):
            path = Path(root) / name
            with path.open("rb") as f:
                if f.read(4) == SHB_MAGIC:
                    yield path


def independent_walk(path: Path) -> dict[int, int]:
    """Block counts by type, walked with seek and int.from_bytes (no struct, no reader)."""
    counts: dict[int, int] = {}
    order: Literal["little", "big"] = "little"
    with path.open("rb") as f:
        while head := f.read(12):
            if head[:4] == SHB_MAGIC:
                order = "little" if head[8:12] == bytes.fromhex("4d3c2b1a") else "big"
            btype = int.from_bytes(head[:4], order)
            counts[btype] = counts.get(btype, 0) + 1
            f.seek(int.from_bytes(head[4:8], order) - 12, os.SEEK_CUR)
    return counts


CORPUS_PCAPNGS = list(corpus_pcapngs())


def test_the_corpus_has_pcapng_files() -> None:
    assert len(CORPUS_PCAPNGS) >= 8


@pytest.mark.parametrize("path", CORPUS_PCAPNGS, ids=lambda p: p.name)
def test_corpus_pcapng_files_read_to_the_end(path: Path) -> None:
    with path.open("rb") as f:
        items = list(read_pcapng(f, path.name))
    assert diagnostics(items) == []
    blocks = independent_walk(path)
    assert len(packets(items)) == blocks.get(6, 0) + blocks.get(3, 0) + blocks.get(2, 0)
    assert sum(isinstance(i, Interface) for i in items) == blocks.get(1, 0)
    assert sum(isinstance(i, DecryptionSecrets) for i in items) == blocks.get(10, 0)
    assert [p.number for p in packets(items)] == list(range(1, len(packets(items)) + 1))


def test_corpus_secrets_are_tls_key_logs() -> None:
    found = 0
    for path in CORPUS_PCAPNGS:
        with path.open("rb") as f:
            for item in read_pcapng(f, path.name):
                if isinstance(item, DecryptionSecrets):
                    assert item.secrets_type == 0x544C534B  # "TLSK"
                    assert b"_SECRET " in item.data or b"CLIENT_RANDOM " in item.data
                    found += 1
    assert found >= 2


# -- fuzz -------------------------------------------------------------------------------

ALLOWED = (Packet, Interface, DecryptionSecrets, Diagnostic)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["<", ">"]), st.binary(max_size=300))
def test_fuzz_any_bytes_after_a_valid_start(order: str, tail: bytes) -> None:
    items = read(shb(order) + idb(order=order) + tail)
    assert all(isinstance(i, ALLOWED) for i in items)


BLOCK_TYPES = st.sampled_from([0x0A0D0D0A, 1, 2, 3, 4, 5, 6, 10, 0xBAD, 99])


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["<", ">"]),
    st.lists(st.tuples(BLOCK_TYPES, st.binary(max_size=48)), max_size=8),
)
def test_fuzz_well_framed_blocks_with_any_bodies(
    order: str, blocks: list[tuple[int, bytes]]
) -> None:
    """Framing intact, contents random: every block's fields may lie."""
    data = shb(order) + b"".join(block(btype, body, order) for btype, body in blocks)
    items = read(data)
    assert all(isinstance(i, ALLOWED) for i in items)
