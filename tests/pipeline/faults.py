"""A tiny pcap rewriter for gap tests: drop chosen packets, move an ACK before its data.

Classic pcap only (the shared HTTP/1 captures are), records cut with ``struct`` and read back
with the project's own reader and packet decoder to tell data packets from the rest. The
general seeded fault suite lives in ``tests/faults``; this one is exhaustive and small.

Run as a script for the figures of the report: ``python -m tests.pipeline.faults PCAP...``
prints, for every data packet dropped on its own, how the exchanges and calls compare with the
clean run (identical / incomplete / complete but different).
"""

from __future__ import annotations

import io
import struct
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentshark.apis.model import Call
from agentshark.model import Exchange, Request, Response
from agentshark.net.packet import PacketDecoder
from agentshark.net.segment import ACK
from agentshark.pipeline import Options, run
from agentshark.sources.pcap import read_pcap
from agentshark.sources.records import Packet

_RECORD = struct.Struct("<IIII")


@dataclass(frozen=True, slots=True)
class Capture:
    """A pcap cut into its records; ``segments[i]`` is (direction key, seq, ack, flags,
    payload length) of record ``i`` when it is a TCP segment, else None."""

    header: bytes
    records: list[bytes]
    segments: list[tuple[tuple[bytes, int, bytes, int], int, int, int, int] | None]

    @classmethod
    def read(cls, path: Path) -> Capture:
        raw = path.read_bytes()
        assert raw[:4] == b"\xd4\xc3\xb2\xa1", "little-endian microsecond pcap only"
        records: list[bytes] = []
        pos = 24
        while pos + 16 <= len(raw):
            incl = _RECORD.unpack_from(raw, pos)[2]
            records.append(raw[pos : pos + 16 + incl])
            pos += 16 + incl
        decoder = PacketDecoder(source_name=path.name)
        segments: list[Any] = []
        for item in read_pcap(io.BytesIO(raw), path.name):
            if isinstance(item, Packet):
                seg = decoder.decode(item)
                segments.append(
                    None
                    if seg is None
                    else (
                        (seg.src, seg.sport, seg.dst, seg.dport),
                        seg.seq,
                        seg.ack,
                        seg.flags,
                        len(seg.payload),
                    )
                )
        assert len(segments) == len(records)
        return cls(raw[:24], records, segments)

    def data_packets(self) -> list[int]:
        return [i for i, s in enumerate(self.segments) if s is not None and s[4] > 0]

    def write(self, order: list[int]) -> bytes:
        return self.header + b"".join(self.records[i] for i in order)

    def dropping(self, *drop: int) -> bytes:
        gone = set(drop)
        return self.write([i for i in range(len(self.records)) if i not in gone])

    def ack_before_data(self, i: int) -> bytes | None:
        """Move the first later segment of the other direction that acknowledges data packet
        ``i`` to just before it (None when no segment acknowledges it)."""
        seg = self.segments[i]
        assert seg is not None
        (src, sport, dst, dport), seq, _, _, size = seg
        end = (seq + size) & 0xFFFF_FFFF
        for j in range(i + 1, len(self.records)):
            other = self.segments[j]
            if other is None or other[0] != (dst, dport, src, sport) or not other[3] & ACK:
                continue
            if (other[2] - end) & 0xFFFF_FFFF < 0x8000_0000:
                order = list(range(len(self.records)))
                order.insert(i, order.pop(j))
                return self.write(order)
        return None


def analyze(pcap: bytes, tmp: Path) -> list[Exchange | Call]:
    tmp.write_bytes(pcap)
    return [
        item for item in run([str(tmp)], Options(calls=True)) if isinstance(item, Exchange | Call)
    ]


def _body(msg: Request | Response | None) -> bytes | None:
    return None if msg is None else b"".join(data for _, data in msg.body.pieces)


def project(item: Exchange | Call) -> tuple[Any, ...]:
    """What must not change when a gap did not touch the item (ids and times aside)."""
    if isinstance(item, Call):
        doc = item.to_json()
        for key in ("id", "exchange_id", "timing", "diagnostics"):
            doc.pop(key, None)
        return ("call", repr(sorted(doc.items(), key=lambda kv: kv[0])))
    req, resp = item.request, item.response
    return (
        "exchange",
        None if req is None else (req.method, req.target, tuple(req.headers)),
        _body(req),
        None if req is None else req.complete,
        None if resp is None else (resp.status, resp.reason, tuple(resp.headers)),
        _body(resp),
        None if resp is None else resp.complete,
        item.upgrade,
    )


def complete(item: Exchange | Call) -> bool:
    return item.complete


@dataclass(slots=True)
class Verdict:
    identical: int = 0
    incomplete: int = 0
    different: int = 0  # complete, but not as in the clean run
    missing: int = 0  # clean items with no counterpart at all

    def add(self, other: Verdict) -> None:
        self.identical += other.identical
        self.incomplete += other.incomplete
        self.different += other.different
        self.missing += other.missing


def compare(clean: list[Exchange | Call], faulty: list[Exchange | Call], kind: type) -> Verdict:
    """Each faulty item of ``kind`` is identical to a clean one, incomplete, or complete and
    different (the failure the gap handling must never produce)."""
    left = Counter(project(x) for x in clean if isinstance(x, kind))
    verdict = Verdict()
    for item in faulty:
        if not isinstance(item, kind):
            continue
        key = project(item)
        if left[key] > 0:
            left[key] -= 1
            verdict.identical += 1
        elif complete(item):
            verdict.different += 1
        else:
            verdict.incomplete += 1
    verdict.missing = max(0, sum(left.values()) - verdict.incomplete - verdict.different)
    return verdict


def single_drops(path: Path, tmp: Path) -> dict[str, Verdict]:
    """Drop every data packet once; the verdicts summed over all runs."""
    cap = Capture.read(path)
    clean = analyze(cap.write(list(range(len(cap.records)))), tmp)
    totals = {"exchange": Verdict(), "call": Verdict(), "runs_with_different": Verdict()}
    for i in cap.data_packets():
        faulty = analyze(cap.dropping(i), tmp)
        ex = compare(clean, faulty, Exchange)
        ca = compare(clean, faulty, Call)
        totals["exchange"].add(ex)
        totals["call"].add(ca)
        if ex.different or ca.different:
            totals["runs_with_different"].different += 1
    return totals


def ack_moves(path: Path, tmp: Path) -> dict[str, Verdict]:
    """Move, for every data packet, the ACK of it before it; the verdicts summed."""
    cap = Capture.read(path)
    clean = analyze(cap.write(list(range(len(cap.records)))), tmp)
    totals = {"exchange": Verdict(), "call": Verdict()}
    for i in cap.data_packets():
        moved = cap.ack_before_data(i)
        if moved is not None:
            faulty = analyze(moved, tmp)
            totals["exchange"].add(compare(clean, faulty, Exchange))
            totals["call"].add(compare(clean, faulty, Call))
    return totals


if __name__ == "__main__":  # pragma: no cover - the report's figures
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for arg in sys.argv[1:]:
            cap = Capture.read(Path(arg))
            result = single_drops(Path(arg), Path(d) / "t.pcap")
            print(arg, f"{len(cap.data_packets())} data packets", result)
            print("  ack before data:", ack_moves(Path(arg), Path(d) / "t.pcap"))
