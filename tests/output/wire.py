"""Small pcaps for the view tests: one TCP connection on loopback carrying given bytes.

Written here, not taken from the shared captures, because each shows one fault a user met
(a head too long, a JSON body nested too deep, a body over --max-body, a lost segment).
"""

from __future__ import annotations

import gzip
import json
import struct

CLIENT = (127, 0, 0, 1)
SERVER = (127, 0, 0, 2)


def _frame(src: tuple[int, ...], dst: tuple[int, ...], ports: tuple[int, int], seq: int,
           ack: int, flags: int, payload: bytes) -> bytes:  # fmt: skip
    tcp = struct.pack("!HHIIBBHHH", *ports, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, bytes(src), bytes(dst)
    )
    return b"\x00" * 12 + b"\x08\x00" + ip + tcp


def tcp_pcap(client: bytes, server: bytes, *, mss: int = 60000, drop: int | None = None) -> bytes:
    """A pcap of one connection: handshake, the client's bytes, the server's, FINs; the
    packet numbered ``drop`` (from 0) left out, as a capture that lost it."""
    cports, sports = (40000, 8000), (8000, 40000)
    cseq, sseq = 1001, 5001
    frames = [
        _frame(CLIENT, SERVER, cports, 1000, 0, 0x02, b""),
        _frame(SERVER, CLIENT, sports, 5000, cseq, 0x12, b""),
    ]
    for i in range(0, len(client), mss):
        chunk = client[i : i + mss]
        frames.append(_frame(CLIENT, SERVER, cports, cseq, sseq, 0x18, chunk))
        cseq += len(chunk)
    for i in range(0, len(server), mss):
        chunk = server[i : i + mss]
        frames.append(_frame(SERVER, CLIENT, sports, sseq, cseq, 0x18, chunk))
        sseq += len(chunk)
    frames.append(_frame(CLIENT, SERVER, cports, cseq, sseq, 0x11, b""))
    frames.append(_frame(SERVER, CLIENT, sports, sseq, cseq + 1, 0x11, b""))
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    for n, f in enumerate(frames):
        if n != drop:
            out += struct.pack("<IIII", 1_700_000_000 + n, 0, len(f), len(f)) + f
    return bytes(out)


def request(path: str, body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return (
        f"POST {path} HTTP/1.1\r\nHost: api.example\r\nContent-Type: application/json\r\n"
        f"{head}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def response(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{head}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


CHAT_REQUEST = json.dumps(
    {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
).encode()


def chat_completion(text: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
    ).encode()


def head_too_long() -> bytes:
    """A request whose head never ends within the parser's limit, then its answer."""
    big = request("/v1/chat/completions", CHAT_REQUEST, "X-Big: " + "a" * 300_000)
    return tcp_pcap(big, response(b"{}"))


def nested_too_deep(path: str = "/v1/chat/completions", *headers: str) -> bytes:
    deep = b"[" * 2000 + b"]" * 2000
    return tcp_pcap(request(path, CHAT_REQUEST, *headers), response(deep))


def gzipped_answer() -> bytes:
    """A chat completion of ~20 KB, gzip-coded (4 KB on the wire)."""
    body = gzip.compress(chat_completion("x" * 20_000), mtime=0)
    return tcp_pcap(
        request("/v1/chat/completions", CHAT_REQUEST),
        response(body, "Content-Encoding: gzip"),
    )


def lost_segment() -> bytes:
    """A chat completion whose response lost its second segment (packet 5)."""
    answer = response(chat_completion("x" * 5000))
    return tcp_pcap(request("/v1/chat/completions", CHAT_REQUEST), answer, mss=1000, drop=5)
