"""A WebSocket-heavy benchmark capture: OpenAI Realtime sessions written as packets.

    python bench/make_ws_capture.py --mb 50 [-o bench/out/bench_ws_50mb.pcap]

Synthetic on purpose (the per-byte cost of the WebSocket path, not a client's behaviour; the
real clients' captures are scripts/make_ws_captures.py's): connections on 127.0.0.1, each an
HTTP/1.1 ``Upgrade: websocket`` handshake and then Realtime turns, the client's masked
``response.create`` and the server's ``response.created``, 60 ``response.output_text.delta``
events of about 180 bytes (one frame, one TCP segment each, as a server flushing every delta
sends them), ``response.done`` with usage, then a close. Ethernet, IPv4 and TCP headers are
written here (checksums left zero, as loopback captures show them with offload).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from pathlib import Path

_MAGIC = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)
_ETH = b"\x00" * 12 + b"\x08\x00"
_CLIENT, _SERVER = bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1])
_ACK, _PSH, _SYN, _FIN = 0x10, 0x08, 0x02, 0x01


class Writer:
    def __init__(self, out: object) -> None:
        self.out = out
        self.ts = 1_796_000_000.0
        self.bytes = 0

    def packet(self, sport: int, dport: int, seq: int, ack: int, flags: int, data: bytes) -> None:
        tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0)
        ip = struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            0,
            20 + len(tcp) + len(data),
            0,
            0x4000,
            64,
            6,
            0,
            _CLIENT,
            _SERVER,
        )
        frame = _ETH + ip + tcp + data
        self.ts += 0.0002
        sec = int(self.ts)
        usec = int((self.ts - sec) * 1e6)
        self.out.write(struct.pack("<IIII", sec, usec, len(frame), len(frame)) + frame)  # type: ignore[attr-defined]
        self.bytes += 16 + len(frame)


def ws_frame(payload: bytes, *, masked: bool, opcode: int = 1) -> bytes:
    n = len(payload)
    head = bytes([0x80 | opcode])
    mask_bit = 0x80 if masked else 0
    if n < 126:
        head += bytes([mask_bit | n])
    elif n < 1 << 16:
        head += bytes([mask_bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", n)
    if not masked:
        return head + payload
    key = os.urandom(4)
    body = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return head + key + body


def session(w: Writer, port: int, turns: int) -> None:
    c, s = 1000, 5000  # sequence numbers
    w.packet(port, 8080, c, 0, _SYN, b"")
    w.packet(8080, port, s, c + 1, _SYN | _ACK, b"")
    c += 1
    s += 1
    w.packet(port, 8080, c, s, _ACK, b"")

    def send(client: bool, data: bytes) -> None:
        nonlocal c, s
        if client:
            w.packet(port, 8080, c, s, _ACK | _PSH, data)
            c += len(data)
        else:
            w.packet(8080, port, s, c, _ACK | _PSH, data)
            s += len(data)

    send(
        True,
        (
            b"GET /v1/realtime?model=gpt-realtime HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
            b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Authorization: Bearer sk-example-not-a-real-key\r\n\r\n"
        ),
    )
    send(
        False,
        (
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        ),
    )
    n = 0

    def event(kind: str, **fields: object) -> bytes:
        nonlocal n
        n += 1
        return json.dumps({"type": kind, "event_id": f"event_{n:08d}", **fields}).encode()

    send(False, ws_frame(event("session.created", session={"model": "gpt-realtime"}), masked=False))
    for t in range(turns):
        send(True, ws_frame(json.dumps({"type": "response.create"}).encode(), masked=True))
        rid = f"resp_{port}_{t}"
        send(False, ws_frame(event("response.created", response={"id": rid}), masked=False))
        for k in range(60):
            delta = event(
                "response.output_text.delta",
                response_id=rid,
                item_id=f"item_{t}",
                output_index=0,
                content_index=0,
                delta=f"word{k} ",
            )
            send(False, ws_frame(delta, masked=False))
        usage = {"input_tokens": 400, "output_tokens": 60, "total_tokens": 460}
        done = event("response.done", response={"id": rid, "status": "completed", "usage": usage})
        send(False, ws_frame(done, masked=False))
    send(True, ws_frame(b"\x03\xe8", masked=True, opcode=8))
    send(False, ws_frame(b"\x03\xe8", masked=False, opcode=8))
    w.packet(port, 8080, c, s, _ACK | _FIN, b"")
    w.packet(8080, port, s, c + 1, _ACK | _FIN, b"")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="capture size in MB (50)")
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args()
    out = args.output or Path(__file__).parent / "out" / f"bench_ws_{int(args.mb)}mb.pcap"
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as f:
        f.write(_MAGIC)
        w = Writer(f)
        port = 20000
        while w.bytes < args.mb * 1e6:
            session(w, port, turns=20)
            port += 1
    print(f"{out}: {out.stat().st_size:,} bytes, {port - 20000} sessions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
