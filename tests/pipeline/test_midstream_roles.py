"""A connection captured without its handshake whose client has the lower port: the port
guess takes the client for the server, the first bytes (a request head) say otherwise, and
every later segment follows the roles the bytes showed (a request body sent in the segment
after its head is the request's, not a response's)."""

from __future__ import annotations

import struct
from pathlib import Path

from agentshark.model import Exchange
from agentshark.pipeline import ConnectionReport, Options, run

CLIENT, SERVER = bytes([127, 0, 0, 1]), bytes([127, 0, 0, 2])
ETHERNET = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"
BODY = b'{"query_embeddings": [[0.5, 0.5]], "n_results": 2}'
HEAD = (
    b"POST /api/v2/collections/c1/query HTTP/1.1\r\nHost: 127.0.0.1:54351\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(BODY)
)
ANSWER = b'{"ids": [["d1", "d2"]]}'
RESPONSE = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
    len(ANSWER),
    ANSWER,
)


def _packet(up: bool, seq: int, ack: int, data: bytes) -> bytes:
    ports = (38784, 54351) if up else (54351, 38784)
    src, dst = (CLIENT, SERVER) if up else (SERVER, CLIENT)
    tcp = struct.pack(">HHIIBBHHH", *ports, seq, ack, 5 << 4, 0x18, 65535, 0, 0)
    size = 20 + len(tcp) + len(data)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, size, 0, 0x4000, 64, 6, 0, src, dst)
    return ETHERNET + ip + tcp + data


def midstream_pcap(*, split: bool) -> bytes:
    """The request head and body in two segments (``split``) or one, then the response."""
    c, s = 1000, 9000
    segments = [(True, c, s, HEAD), (True, c + len(HEAD), s, BODY)]
    if not split:
        segments = [(True, c, s, HEAD + BODY)]
    segments.append((False, s, c + len(HEAD) + len(BODY), RESPONSE))
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for n, (up, seq, ack, data) in enumerate(segments):
        p = _packet(up, seq, ack, data)
        out += [struct.pack("<IIII", 1_700_000_000, n * 1000, len(p), len(p)), p]
    return b"".join(out)


def test_a_request_body_after_its_head_follows_the_roles_the_head_showed(
    tmp_path: Path,
) -> None:
    for split in (True, False):
        path = tmp_path / f"midstream-{split}.pcap"
        path.write_bytes(midstream_pcap(split=split))
        items = list(run([str(path)], Options()))
        (exchange,) = [i for i in items if type(i) is Exchange]
        assert exchange.complete and exchange.diagnostics == []
        assert exchange.request is not None and exchange.response is not None
        assert b"".join(p for _, p in exchange.request.body.pieces) == BODY
        assert b"".join(p for _, p in exchange.response.body.pieces) == ANSWER
        assert exchange.response.status == 200
        (report,) = [i for i in items if isinstance(i, ConnectionReport)]
        assert report.connection.client[1] == 38784 and report.connection.server[1] == 54351
        assert not report.connection.handshake_seen
        assert report.diagnostics == [] and report.connection.diagnostics == []
