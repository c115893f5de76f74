"""What an idle connection costs: captures of connections that open (SYN, SYN-ACK, ACK, maybe
a request) and never close, run through the pipeline; the memory held while they are all
open is measured with tracemalloc (bytes, never time)."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from agentshark.net.tcp import TcpReassembler
from agentshark.pipeline import Options, run

SERVER = bytes([10, 0, 0, 1])
REQUEST = b"GET /v1/models HTTP/1.1\r\nHost: api.example\r\n\r\n"
ETHERNET = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"


def _packet(
    src: bytes, dst: bytes, ports: tuple[int, int], seq: int, ack: int, flags: int, data: bytes
) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", *ports, seq, ack, 5 << 4, flags, 65535, 0, 0)
    size = 20 + len(tcp) + len(data)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, size, 0, 0x4000, 64, 6, 0, src, dst)
    return ETHERNET + ip + tcp + data


def half_open_pcap(connections: int, *, request: bytes = REQUEST, port: int = 80) -> bytes:
    """A pcap of ``connections`` TCP connections to ``port`` that open, send ``request``
    (if any) and never close."""
    records = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i in range(connections):
        client = bytes([10, 1 + (i >> 16), (i >> 8) & 0xFF, i & 0xFF])
        up, down = (10000 + i % 50000, port), (port, 10000 + i % 50000)
        packets = [
            _packet(client, SERVER, up, 1000, 0, 0x02, b""),  # SYN
            _packet(SERVER, client, down, 5000, 1001, 0x12, b""),  # SYN-ACK
            _packet(client, SERVER, up, 1001, 5001, 0x10, b""),  # ACK
        ]
        if request:
            packets.append(_packet(client, SERVER, up, 1001, 5001, 0x18, request))
        for n, p in enumerate(packets):
            usec = (i % 1000) * 1000 + n
            records.append(struct.pack("<IIII", 1_700_000_000 + i // 1000, usec, len(p), len(p)))
            records.append(p)
    return b"".join(records)


def held_while_open(path: Path) -> int:
    """Bytes traced when the capture's last packet was read (every connection still open)."""
    seen: list[int] = []
    close = TcpReassembler.close

    def spy(self: TcpReassembler, *args: Any) -> Any:
        seen.append(tracemalloc.get_traced_memory()[0])
        return close(self, *args)

    with mock.patch.object(TcpReassembler, "close", spy):
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in run([str(path)], Options()):
                pass
        finally:
            tracemalloc.stop()
    return seen[0] - before


def per_connection(tmp_path: Path, request: bytes) -> float:
    """The cost of one more idle connection: the difference of two runs, so what every run
    holds (buffers, caches) cancels out."""
    sizes = []
    for n in (500, 1500):
        path = tmp_path / f"idle-{n}.pcap"
        path.write_bytes(half_open_pcap(n, request=request))
        held_while_open(path)  # warm the module-level caches first
        sizes.append(held_while_open(path))
    return (sizes[1] - sizes[0]) / 1000


@pytest.mark.parametrize(
    ("request_bytes", "bound"),
    [(b"", 3000), (REQUEST, 6000)],
    ids=["handshake-only", "http-request"],
)
def test_an_idle_connection_stays_small(tmp_path: Path, request_bytes: bytes, bound: int) -> None:
    # Before the slimming, the two cost about 4700 and 7700 bytes (empty deques of the TCP
    # and HTTP/1 state, closures made per connection).
    cost = per_connection(tmp_path, request_bytes)
    assert 0 < cost < bound, f"{cost:.0f} bytes per idle connection"
