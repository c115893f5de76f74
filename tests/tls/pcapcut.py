"""Test helper: a classic pcap file with one TCP data packet left out (a minimal fault; the
seeded fault suite lives in tests/faults)."""

from __future__ import annotations

import struct
from pathlib import Path


def packets(pcap: bytes) -> list[tuple[int, int, int, float]]:
    """(start, end, TCP payload size, time) of each record of an Ethernet/IPv4 pcap
    (microsecond time stamps)."""
    order = "<" if pcap[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, pos = [], 24
    while pos + 16 <= len(pcap):
        sec, usec, incl = struct.unpack_from(order + "III", pcap, pos)
        frame = pcap[pos + 16 : pos + 16 + incl]
        payload = 0
        if len(frame) >= 34 and frame[12:14] == b"\x08\x00" and frame[23] == 6:
            ihl = (frame[14] & 15) * 4
            total = int.from_bytes(frame[16:18], "big")
            tcp = 14 + ihl
            payload = total - ihl - (frame[tcp + 12] >> 4) * 4
        out.append((pos, pos + 16 + incl, payload, sec + usec / 1e6))
        pos += 16 + incl
    return out


def data_packets(path: Path, start: float = 0.0, stop: float = float("inf")) -> list[int]:
    """Record indexes of the packets that carry TCP payload, sent in (start, stop)."""
    return [
        i
        for i, (_, _, size, ts) in enumerate(packets(path.read_bytes()))
        if size > 0 and start < ts < stop
    ]


def hello_packets(path: Path, kind: int) -> list[int]:
    """Record indexes of the packets whose TCP payload starts with a TLS handshake record
    holding a message of type ``kind`` (1 ClientHello, 2 ServerHello)."""
    pcap = path.read_bytes()
    out = []
    for i, (start, end, size, _) in enumerate(packets(pcap)):
        frame = pcap[start + 16 : end]
        if size < 6:
            continue
        tcp = 14 + (frame[14] & 15) * 4
        head = frame[tcp + (frame[tcp + 12] >> 4) * 4 :][:6]
        if head[0] == 22 and head[1] == 3 and head[5] == kind:
            out.append(i)
    return out


def without(path: Path, index: int, out: Path) -> Path:
    """A copy of the pcap at ``path`` without record ``index``."""
    pcap = path.read_bytes()
    start, end, _, _ = packets(pcap)[index]
    out.write_bytes(pcap[:start] + pcap[end:])
    return out
