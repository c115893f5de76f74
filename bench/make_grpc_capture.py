"""A gRPC-heavy benchmark capture, and its plain HTTP/2 twin of the same shape.

    python bench/make_grpc_capture.py --mb 50     # bench/out/bench_grpc_50mb.pcap
                                                  # and bench/out/bench_h2c_50mb.pcap
                                                  # (+ .truth.json: connections, calls)

Synthetic on purpose (the per-byte cost of the gRPC path against the HTTP/2 path it rides
on; real grpcio captures are scripts/make_grpc_captures.py's): h2c connections on 127.0.0.1
(prior knowledge: preface, SETTINGS both ways), 200 calls each, one stream at a time. A call
is a request (HEADERS, one DATA with END_STREAM) and a response (HEADERS, 60 DATA frames of
about 180 bytes each in its own TCP segment, as a server flushing every message sends them,
then the end), and a connection-level WINDOW_UPDATE from the client.

- gRPC: ``POST /bench.v1.Forecast/Stream``, ``content-type: application/grpc``, ``te:
  trailers``, ``grpc-timeout``; the request and each response DATA frame one length-prefixed
  protobuf message (day, summary text, a fixed64, a bool); trailers ``grpc-status: 0``.
- h2: ``POST /v1/forecast`` with a JSON request body of the same size and a
  ``text/event-stream`` response, each DATA frame one SSE event of the same size as the gRPC
  message it stands for; the stream ends with an empty DATA frame with END_STREAM.

Headers are HPACK literals without indexing (no Huffman), the same encoding for both, so
header work is the same. Ethernet, IPv4 and TCP headers are written here (checksums left
zero, as loopback captures show them with offload).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

from make_ws_capture import _ACK, _FIN, _MAGIC, _PSH, _SYN, Writer

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _SETTINGS, _WINDOW_UPDATE = 0, 1, 4, 8
_END_STREAM, _END_HEADERS, _ACK_FLAG = 0x1, 0x4, 0x1
CALLS_PER_CONNECTION = 200
MESSAGES_PER_CALL = 60


def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return (
        struct.pack("!I", len(payload))[1:]
        + bytes([kind, flags])
        + struct.pack("!I", stream)
        + payload
    )


def _int(value: int, prefix: int, first: int = 0) -> bytes:
    """An HPACK integer (RFC 7541 §5.1) with an N-bit prefix."""
    limit = (1 << prefix) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hpack(headers: list[tuple[str, str]]) -> bytes:
    """Literal header fields without indexing, new names, no Huffman (RFC 7541 §6.2.2)."""
    out = bytearray()
    for name, value in headers:
        n, v = name.encode(), value.encode()
        out += b"\x00" + _int(len(n), 7) + n + _int(len(v), 7) + v
    return bytes(out)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def chunk_message(day: int, text: str) -> bytes:
    """ForecastChunk{day=1 varint, summary=2 string, seed=3 fixed64, last=4 bool}."""
    data = text.encode()
    return (
        b"\x08"
        + _varint(day)
        + b"\x12"
        + _varint(len(data))
        + data
        + b"\x19"
        + struct.pack("<Q", (1 << 63) + day)
        + b"\x20"
        + _varint(day == 59)
    )


def grpc_frame(message: bytes) -> bytes:
    return b"\x00" + struct.pack("!I", len(message)) + message


def sse_event(size: int, day: int) -> bytes:
    """An SSE event of exactly ``size`` bytes."""
    head = json.dumps({"day": day, "summary": ""}).encode()
    pad = size - len(b"data: \n\n") - len(head)
    body = json.dumps({"day": day, "summary": "x" * max(pad, 0)}).encode()
    return b"data: " + body + b"\n\n"


def call_frames(grpc: bool, stream: int, call: int) -> tuple[list[bytes], list[bytes]]:
    """(client frames, server frames, one segment each) of one call."""
    texts = [f"day {k} of call {call}: " + "sunny and mild " * 9 for k in range(MESSAGES_PER_CALL)]
    messages = [grpc_frame(chunk_message(k, t)) for k, t in enumerate(texts)]
    request = grpc_frame(b"\x0a\x06Lisbon\x10\x07" + b"\x1a\x64" + b"r" * 100)
    common = [(":method", "POST"), (":scheme", "http"), (":authority", "127.0.0.1:8080")]
    if grpc:
        req_headers = [
            *common,
            (":path", "/bench.v1.Forecast/Stream"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", "5S"),
            ("user-agent", "grpc-python/1.85.1"),
        ]
        body, datas = request, messages
        resp_headers = [(":status", "200"), ("content-type", "application/grpc")]
        end = frame(_HEADERS, _END_STREAM | _END_HEADERS, stream, hpack([("grpc-status", "0")]))
    else:
        req_headers = [
            *common,
            (":path", "/v1/forecast"),
            ("content-type", "application/json"),
            ("accept", "text/event-stream"),
            ("x-timeout", "5S"),
            ("user-agent", "python-httpx/0.28.1"),
        ]
        body = b'{"city":"Lisbon","days":7,"pad":"' + b"r" * (len(request) - 35) + b'"}'
        datas = [sse_event(len(m), k) for k, m in enumerate(messages)]
        resp_headers = [(":status", "200"), ("content-type", "text/event-stream")]
        end = frame(_DATA, _END_STREAM, stream, b"")
    client = [
        frame(_HEADERS, _END_HEADERS, stream, hpack(req_headers))
        + frame(_DATA, _END_STREAM, stream, body)
    ]
    server = [frame(_HEADERS, _END_HEADERS, stream, hpack(resp_headers))]
    server += [frame(_DATA, 0, stream, d) for d in datas]
    server.append(end)
    total = sum(len(d) for d in datas)
    client.append(frame(_WINDOW_UPDATE, 0, 0, struct.pack("!I", total)))
    return client, server


def connection(w: Writer, port: int, grpc: bool, first_call: int) -> None:
    c, s = 1000, 5000

    def send(client: bool, data: bytes) -> None:
        nonlocal c, s
        if client:
            w.packet(port, 8080, c, s, _ACK | _PSH, data)
            c += len(data)
        else:
            w.packet(8080, port, s, c, _ACK | _PSH, data)
            s += len(data)

    w.packet(port, 8080, c, 0, _SYN, b"")
    w.packet(8080, port, s, c + 1, _SYN | _ACK, b"")
    c, s = c + 1, s + 1
    w.packet(port, 8080, c, s, _ACK, b"")
    send(True, _PREFACE + frame(_SETTINGS, 0, 0, b""))
    send(False, frame(_SETTINGS, 0, 0, b"") + frame(_SETTINGS, _ACK_FLAG, 0, b""))
    send(True, frame(_SETTINGS, _ACK_FLAG, 0, b""))
    for n in range(CALLS_PER_CONNECTION):
        client, server = call_frames(grpc, 1 + 2 * n, first_call + n)
        send(True, client[0])
        for data in server:
            send(False, data)
        send(True, client[1])
    w.packet(port, 8080, c, s, _ACK | _FIN, b"")
    w.packet(8080, port, s, c + 1, _ACK | _FIN, b"")


def write(out: Path, mb: float, grpc: bool) -> tuple[int, int]:
    """Write one capture; (connections, calls)."""
    with out.open("wb") as f:
        f.write(_MAGIC)
        w = Writer(f)
        port = 20000
        while w.bytes < mb * 1e6:
            connection(w, port, grpc, (port - 20000) * CALLS_PER_CONNECTION)
            port += 1
    return port - 20000, (port - 20000) * CALLS_PER_CONNECTION


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="each capture's size in MB (50)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, grpc in (("grpc", True), ("h2c", False)):
        path = args.out / f"bench_{name}_{int(args.mb)}mb.pcap"
        connections, calls = write(path, args.mb, grpc)
        size = path.stat().st_size
        truth = {"connections": connections, "calls": calls, "bytes": size}
        path.with_suffix(".truth.json").write_text(json.dumps(truth) + "\n")
        print(f"{path}: {size:,} bytes, {connections} connections, {calls} calls", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
