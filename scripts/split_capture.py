"""Split a pcap by TCP connection into several pcaps: one run seen from several vantage points.

    python3 scripts/split_capture.py CAPTURE --list
    python3 scripts/split_capture.py CAPTURE --out DIR --part agent=1,2,3 --part worker=4-7

Connections are numbered as agentshark numbers them (``c1``, ``c2``...: in the order of
their first packet); ``--list`` prints them with their ports and packet counts. Each
``--part NAME=CONNECTIONS`` writes ``DIR/NAME.pcap`` with the packets of those connections,
in capture order, byte for byte (the global header and every record as they were); every
connection goes to exactly one part, and packets that are not TCP go to every part.
``DIR/split.json`` records the source (path, SHA-256), each part's connections (ports,
packets) and the command, so the split can be checked and remade. The tests of
``agentshark batch`` (tests/batch) merge such parts back and compare the traces with those of
the whole capture. Reads classic pcap with Ethernet, raw IP or Linux cooked (SLL) links.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
import sys
from pathlib import Path

Flow = tuple[tuple[bytes, int], tuple[bytes, int]]  # the two (address, port) ends, sorted


def _records(data: bytes) -> tuple[bytes, str, int, list[tuple[int, int]]]:
    """The global header, the byte order, the link type and each record's (start, end)."""
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        order = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        order = ">"
    else:
        raise SystemExit("not a classic pcap file (pcapng: convert it with editcap -F pcap)")
    linktype = struct.unpack(order + "I", data[20:24])[0] & 0x0FFFFFFF
    out = []
    offset = 24
    while offset + 16 <= len(data):
        caplen = struct.unpack(order + "I", data[offset + 8 : offset + 12])[0]
        out.append((offset, offset + 16 + caplen))
        offset += 16 + caplen
    return data[:24], order, linktype, out


def _ends(linktype: int, frame: bytes) -> tuple[tuple[bytes, int], tuple[bytes, int]] | None:
    """The (address, port) of a TCP frame's source and destination, else None."""
    if linktype == 1:  # Ethernet, with VLAN tags
        ethertype, at = struct.unpack("!H", frame[12:14])[0], 14
        while ethertype in (0x8100, 0x88A8) and len(frame) >= at + 4:
            ethertype, at = struct.unpack("!H", frame[at + 2 : at + 4])[0], at + 4
    elif linktype == 113:  # Linux cooked capture
        ethertype, at = struct.unpack("!H", frame[14:16])[0], 16
    elif linktype in (101, 228, 229):  # raw IP
        ethertype = 0x0800 if frame[:1] and frame[0] >> 4 == 4 else 0x86DD
        at = 0
    else:
        raise SystemExit(f"link type {linktype} is not read by this script")
    ip = frame[at:]
    if ethertype == 0x0800 and len(ip) >= 20 and ip[9] == 6:
        src, dst, tcp = ip[12:16], ip[16:20], ip[(ip[0] & 0x0F) * 4 :]
    elif ethertype == 0x86DD and len(ip) >= 40 and ip[6] == 6:
        src, dst, tcp = ip[8:24], ip[24:40], ip[40:]
    else:
        return None
    if len(tcp) < 4:
        return None
    sport, dport = struct.unpack("!HH", tcp[:4])
    return (src, sport), (dst, dport)


def _numbers(text: str) -> list[int]:
    out: list[int] = []
    for piece in text.split(","):
        low, _, high = piece.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("capture", type=Path)
    parser.add_argument("--list", action="store_true", help="print the connections and stop")
    parser.add_argument("--out", type=Path, help="the directory of the parts")
    parser.add_argument("--part", action="append", default=[], metavar="NAME=CONNECTIONS")
    args = parser.parse_args(argv)
    data = args.capture.read_bytes()
    header, order, linktype, records = _records(data)
    flows: dict[Flow, int] = {}
    of_record: list[int | None] = []
    counts: dict[int, int] = {}
    ports: dict[int, tuple[int, int]] = {}
    for start, end in records:
        ends = _ends(linktype, data[start + 16 : end])
        if ends is None:
            of_record.append(None)
            continue
        flow: Flow = (min(ends), max(ends))
        if flow not in flows:
            flows[flow] = len(flows) + 1
            ports[flows[flow]] = (ends[0][1], ends[1][1])  # the first packet's direction
        n = flows[flow]
        of_record.append(n)
        counts[n] = counts.get(n, 0) + 1
    if args.list or not args.part:
        for n in sorted(counts):
            print(f"c{n}: port {ports[n][0]} -> {ports[n][1]}, {counts[n]} packets")
        return 0
    if args.out is None:
        parser.error("--out DIR is needed with --part")
    parts: dict[str, list[int]] = {}
    for spec in args.part:
        name, _, numbers = spec.partition("=")
        parts[name] = _numbers(numbers)
    given = sorted(n for ns in parts.values() for n in ns)
    if given != sorted(counts):
        parser.error(f"every connection in exactly one part: c1..c{len(counts)}, got {given}")
    args.out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, numbers in parts.items():
        mine = set(numbers)
        chunks = [header]
        packets = 0
        for (start, end), owner in zip(records, of_record, strict=True):
            if owner is None or owner in mine:
                chunks.append(data[start:end])
                packets += 1
        (args.out / f"{name}.pcap").write_bytes(b"".join(chunks))
        written[name] = {
            "file": f"{name}.pcap",
            "packets": packets,
            "connections": [
                {"connection": f"c{n}", "ports": list(ports[n]), "packets": counts[n]}
                for n in numbers
            ],
        }
    record = {
        "made_by": "scripts/split_capture.py",
        "command": " ".join(["python3", "scripts/split_capture.py", *(argv or sys.argv[1:])]),
        "source": {
            "path": str(args.capture),
            "sha256": hashlib.sha256(data).hexdigest(),
            "packets": len(records),
        },
        "byte_order": "little" if order == "<" else "big",
        "parts": written,
    }
    (args.out / "split.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
