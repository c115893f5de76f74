"""HTTP/2 under packet loss, end to end: a real capture with one TCP data packet dropped
(a minimal pcap rewriter), run through the whole pipeline, compared with the clean run.

The invariant: every exchange of the clean run is, in the faulty run, identical (same
messages, fields, bodies and completeness) or marked ``complete: false`` (or absent), and
the faulty run has no complete exchange the clean run lacks.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshark.model import Exchange, Request, Response
from agentshark.pipeline import Options, run
from tests.helpers import CAPTURES

PCAP_HEADER = 24
RECORD = struct.Struct("<IIII")  # ts_sec, ts_frac, captured length, original length


def pcap_records(raw: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(start, end, packet bytes) of each record of a little-endian pcap file."""
    pos = PCAP_HEADER
    while pos + RECORD.size <= len(raw):
        caplen = RECORD.unpack_from(raw, pos)[2]
        start = pos + RECORD.size
        yield pos, start + caplen, raw[start : start + caplen]
        pos = start + caplen


def tcp_payload_length(frame: bytes) -> int:
    """Bytes of TCP payload in an Ethernet + IPv4 frame (0 for anything else)."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
        return 0
    ihl = (frame[14] & 0x0F) * 4
    total: int = struct.unpack_from(">H", frame, 16)[0]
    offset = (frame[14 + ihl + 12] >> 4) * 4
    return max(total - ihl - offset, 0)


def data_packets(raw: bytes) -> list[int]:
    """Indexes of the records that carry TCP payload."""
    return [i for i, (_, _, p) in enumerate(pcap_records(raw)) if tcp_payload_length(p)]


def drop_records(raw: bytes, drop: set[int]) -> bytes:
    """The pcap ``raw`` without the records whose indexes are in ``drop``."""
    parts = [raw[:PCAP_HEADER]]
    parts += [raw[s:e] for i, (s, e, _) in enumerate(pcap_records(raw)) if i not in drop]
    return b"".join(parts)


def exchanges(path: Path, keylogs: tuple[str, ...] = ()) -> list[Exchange]:
    return [
        item for item in run([str(path)], Options(keylogs=keylogs)) if isinstance(item, Exchange)
    ]


def message_key(msg: Request | Response | None) -> object:
    if msg is None:
        return None
    body = (msg.body.data(), msg.body.gap_bytes)
    if isinstance(msg, Request):
        return (msg.method, msg.url, msg.headers, body, msg.trailers, msg.complete)
    interim = [(i.status, i.headers) for i in msg.interim]
    return (msg.status, msg.headers, body, msg.trailers, interim, msg.complete)


def exchange_key(ex: Exchange) -> object:
    """What must not change: both messages as decoded (times and diagnostics aside)."""
    return (message_key(ex.request), message_key(ex.response))


def classify(clean: list[Exchange], faulty: list[Exchange]) -> dict[str, int]:
    """Counts of clean exchanges that stay identical, are marked incomplete (or absent),
    or come out complete with different values; complete exchanges of the faulty run that
    match none of the clean run count as different too."""
    counts = {"identical": 0, "incomplete": 0, "different": 0}
    by_stream = {(ex.connection, ex.stream): ex for ex in faulty}
    for ex in clean:
        found = by_stream.pop((ex.connection, ex.stream), None)
        if found is not None and exchange_key(found) == exchange_key(ex):
            counts["identical"] += 1
        elif found is None or not found.complete:
            counts["incomplete"] += 1
        else:
            counts["different"] += 1
    counts["different"] += sum(1 for ex in by_stream.values() if ex.complete)
    return counts


def drop_each(name: str, tmp_path: Path) -> Iterator[tuple[int, dict[str, int]]]:
    """Drops each data packet of capture ``name`` in turn: (record index, counts)."""
    path = CAPTURES / name / "capture.pcap"
    raw = path.read_bytes()
    clean = exchanges(path)
    assert clean and all(ex.complete for ex in clean)
    for index in data_packets(raw):
        faulty_path = tmp_path / f"{name}-{index}.pcap"
        faulty_path.write_bytes(drop_records(raw, {index}))
        yield index, classify(clean, exchanges(faulty_path))


def needs(name: str) -> pytest.MarkDecorator:
    path: Path = CAPTURES / name / "capture.pcap"
    return pytest.mark.skipif(not path.exists(), reason=f"{path} not available")


@needs("h2c_prior_knowledge")
@needs("grpc_h2c")
@pytest.mark.parametrize("name", ["h2c_prior_knowledge", "grpc_h2c"])
def test_one_dropped_packet_never_gives_a_complete_wrong_exchange(
    name: str, tmp_path: Path
) -> None:
    totals = {"identical": 0, "incomplete": 0, "different": 0}
    wrong = []
    for index, counts in drop_each(name, tmp_path):
        for k, v in counts.items():
            totals[k] += v
        if counts["different"]:
            wrong.append(index)
    assert not wrong, f"dropping these records gave complete but different exchanges: {wrong}"
    assert totals["identical"] > 0
