"""The push decoders of growing captures yield what the stream readers yield, however the
bytes are split: in a record header, in a record body, one byte at a time, cut off."""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshark.errors import Diagnostic, InputError
from agentshark.sources.feeds import PcapFeed, PcapngFeed
from agentshark.sources.pcap import read_pcap
from agentshark.sources.pcapng import read_pcapng
from agentshark.sources.records import Packet
from tests.helpers import CAPTURES, CORPUS

CAPTURE_FILES = sorted(
    p
    for root in (CAPTURES, CORPUS)
    for p in root.rglob("*")
    if p.suffix in (".pcap", ".pcapng") and p.is_file()
)


def _stream_items(data: bytes) -> list[object]:
    reader = read_pcapng if data[:4] == b"\x0a\x0d\x0d\x0a" else read_pcap
    try:
        return list(reader(io.BytesIO(data), "f"))
    except InputError as exc:
        return ["InputError", str(exc)]


def _fed(data: bytes, cuts: Iterator[int]) -> list[object]:
    feed = (PcapngFeed if data[:4] == b"\x0a\x0d\x0d\x0a" else PcapFeed)("f")
    out: list[object] = []
    try:
        pos = 0
        for cut in cuts:
            out.extend(feed.feed(data[pos:cut]))
            pos = cut
        out.extend(feed.feed(data[pos:]))
        out.extend(feed.close())
    except InputError as exc:
        return ["InputError", str(exc)]
    return out


@pytest.mark.parametrize("path", CAPTURE_FILES, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_random_pieces_and_cut_offs_give_the_stream_readers_items(path: Path) -> None:
    data = path.read_bytes()
    rng = random.Random(path.name)
    for end in {len(data), len(data) - 1, len(data) - 5, len(data) // 2, 30, 25, 13, 11, 7}:
        cut = data[:end]
        cuts = sorted(rng.sample(range(1, len(cut)), min(len(cut) - 1, 40)))
        assert _fed(cut, iter(cuts)) == _stream_items(cut), f"{path} cut at {end}"


def _pcap_records() -> tuple[bytes, list[int]]:
    """A real capture and the file offsets where its records start."""
    data = (CAPTURES / "http1_cleartext" / "capture.pcap").read_bytes()
    starts = [p.offset for p in read_pcap(io.BytesIO(data), "f") if isinstance(p, Packet)]
    return data, starts


def test_a_record_split_in_its_header_and_in_its_body_is_held_until_whole() -> None:
    data, starts = _pcap_records()
    third = starts[2]
    feed = PcapFeed("f")
    first = feed.feed(data[: third + 7])  # two records and 7 bytes of the third's header
    assert [p.number for p in first if isinstance(p, Packet)] == [1, 2]
    assert feed.feed(data[third + 7 : third + 16 + 10]) == []  # header whole, 10 body bytes
    rest = feed.feed(data[third + 26 : starts[3]])
    assert [(p.number, p.offset) for p in rest if isinstance(p, Packet)] == [(3, third)]
    assert feed.close() == []


def test_byte_at_a_time_gives_the_same_packets() -> None:
    data, _ = _pcap_records()
    data = data[:4000]
    assert _fed(data, iter(range(1, len(data)))) == _stream_items(data)


def test_a_record_still_half_written_at_close_is_a_truncated_file_diagnostic() -> None:
    data, starts = _pcap_records()
    feed = PcapFeed("f")
    items = feed.feed(data[: starts[4] + 20])
    assert sum(isinstance(i, Packet) for i in items) == 4
    (diag,) = feed.close()
    assert isinstance(diag, Diagnostic)
    assert diag.code == "pcap.truncated_file"
    assert diag.location == f"f at offset {starts[4]}"


def test_a_record_past_the_snap_length_stops_the_feed_and_counts_what_follows() -> None:
    data, starts = _pcap_records()
    broken = bytearray(data[: starts[1] + 16])
    broken[starts[1] + 8 : starts[1] + 12] = (1 << 30).to_bytes(4, "little")
    feed = PcapFeed("f")
    items = feed.feed(bytes(broken))
    assert isinstance(items[-1], Diagnostic)
    assert items[-1].code == "pcap.bad_record"
    assert feed.feed(b"x" * 100) == []
    assert feed.ignored == 116
    assert feed.close() == []


def test_not_a_capture_raises_input_error_as_the_readers_do() -> None:
    with pytest.raises(InputError, match="not a pcap file"):
        PcapFeed("f").feed(b"GET / HTTP/1.1\r\n")
    with pytest.raises(InputError, match="not a pcapng file"):
        PcapngFeed("f").feed(b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x00\x00\x00\x00")
