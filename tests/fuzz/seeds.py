"""The fuzz campaign's seeds: small inputs cut from the shared corpus, the shared captures
and tests/data, one folder per target under tests/data/fuzz_seeds/.

A seed of one part is stored as its bytes (``*.bin``); a seed of several parts as a JSON
list of base64 strings (``*.parts``). ``build`` makes them (``python
scripts/fuzz_campaign.py seeds``); they are committed so the campaign and the regression
test (tests/fuzz/test_seeds.py) start from the same inputs without ../shared. Seeds are cut
to a few KB: mutations of a small input reach more paths per second.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import brotli
import orjson
import zstandard

from agentshark.apis.model import Call
from agentshark.framing import detect_framing
from agentshark.model import Exchange, header
from agentshark.net.events import StreamData
from agentshark.net.packet import PacketDecoder
from agentshark.net.tcp import TcpReassembler
from agentshark.pipeline import Options, run
from agentshark.sources.pcap import read_pcap
from agentshark.sources.pcapng import read_pcapng
from agentshark.sources.records import DecryptionSecrets, Packet
from agentshark.tls import KeyLog, TlsConnection
from agentshark.tls.events import TlsPlaintext
from tests.fuzz.targets import LINKTYPES, api_target
from tests.helpers import CAPTURES, CORPUS, ROOT

SEEDS = ROOT / "tests" / "data" / "fuzz_seeds"
OWN = ROOT / "tests" / "data" / "captures"
CUT = 2000  # bytes per part of most seeds
PER_TARGET = 10  # seeds kept per target
MAX_TARGET_BYTES = 24_000  # no seed is added past this many bytes of a target's seeds
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
Seed = list[bytes]


def load(target: str) -> list[Seed]:
    """The committed seeds of ``target``, in file name order."""
    out: list[Seed] = []
    for path in sorted((SEEDS / target).glob("*")):
        if path.suffix == ".bin":
            out.append([path.read_bytes()])
        elif path.suffix == ".parts":
            out.append([base64.b64decode(p) for p in json.loads(path.read_text())])
    return out


def save(target: str, seeds: list[Seed]) -> int:
    """Write ``seeds`` (deduplicated, at most PER_TARGET) for ``target``; the bytes written."""
    folder = SEEDS / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*"):
        old.unlink()
    seen: set[str] = set()
    total = 0
    for seed in seeds:
        key = hashlib.sha256(b"\x00".join(seed)).hexdigest()[:16]
        if key in seen or len(seen) >= PER_TARGET or (seen and total > MAX_TARGET_BYTES):
            continue
        seen.add(key)
        if len(seed) == 1:
            data = seed[0]
            (folder / f"{len(seen):02d}-{key}.bin").write_bytes(data)
        else:
            data = json.dumps([base64.b64encode(p).decode() for p in seed]).encode()
            (folder / f"{len(seen):02d}-{key}.parts").write_bytes(data)
        total += len(data)
    return total


# -- captures -------------------------------------------------------------------------------

TLS_CAPTURES = [
    (
        CAPTURES / "llm_sdk_anthropic" / "capture.pcap",
        CAPTURES / "llm_sdk_anthropic" / "keylog.txt",
    ),
    (CAPTURES / "https_tls13_h2" / "capture.pcap", CAPTURES / "https_tls13_h2" / "keylog.txt"),
    (CAPTURES / "https_tls12_h1" / "capture.pcap", CAPTURES / "https_tls12_h1" / "keylog.txt"),
    (OWN / "tls13_hrr" / "capture.pcap", OWN / "tls13_hrr" / "keys.log"),
    (OWN / "tls13_keyupdate" / "capture.pcap", OWN / "tls13_keyupdate" / "keys.log"),
    (OWN / "tls12_chacha20_h1" / "capture.pcap", OWN / "tls12_chacha20_h1" / "keys.log"),
    (OWN / "tls12_resumption" / "capture.pcap", OWN / "tls12_resumption" / "keys.log"),
]
CLEAR_CAPTURES = [
    CAPTURES / "http1_cleartext" / "capture.pcap",
    CAPTURES / "h2c_prior_knowledge" / "capture.pcap",
    CAPTURES / "grpc_h2c" / "capture.pcap",
    CAPTURES / "mcp_http_plain" / "capture.pcap",
    CAPTURES / "a2a_jsonrpc_v03" / "capture.pcap",
    CAPTURES / "ws_realtime_plain" / "capture.pcap",
    OWN / "h2c_upgrade" / "capture.pcap",
    OWN / "mcp_legacy_sse" / "capture.pcap",
]


def packets(path: Path) -> Iterator[Packet | DecryptionSecrets]:
    data = path.read_bytes()
    reader = read_pcapng if data[:4] == b"\x0a\x0d\x0d\x0a" else read_pcap
    for item in reader(io.BytesIO(data), path.name):
        if isinstance(item, Packet | DecryptionSecrets):
            yield item


def streams(path: Path) -> dict[str, list[tuple[int, bytes]]]:
    """Connection id -> its (direction, bytes) in capture order (gaps left out)."""
    decoder, tcp = PacketDecoder("seed"), TcpReassembler()
    out: dict[str, list[tuple[int, bytes]]] = {}
    for pkt in packets(path):
        seg = decoder.decode(pkt) if isinstance(pkt, Packet) else None
        for ev in tcp.feed(seg) if seg is not None else []:
            if isinstance(ev, StreamData):
                out.setdefault(ev.connection.id, []).append((ev.direction, ev.data))
    return out


def joined(steps: list[tuple[int, bytes]]) -> tuple[bytes, bytes]:
    return (
        b"".join(data for d, data in steps if d == 0),
        b"".join(data for d, data in steps if d == 1),
    )


def plaintext(steps: list[tuple[int, bytes]], keys: Path) -> tuple[bytes, bytes]:
    """Both directions of one TLS connection decrypted, fed in capture order."""
    keylog = KeyLog()
    keylog.add_text(keys.read_bytes(), keys.name)
    tls = TlsConnection(keylog)
    out = [bytearray(), bytearray()]
    for d, data in steps:
        for ev in tls.feed(d, data, 1.0):
            if isinstance(ev, TlsPlaintext):
                out[ev.direction] += ev.data
    return bytes(out[0]), bytes(out[1])


def tcp_records(path: Path, limit: int = CUT) -> bytes:
    """A capture's first segments as tests.fuzz.targets.segments records (one connection)."""
    decoder = PacketDecoder("seed")
    isn: dict[int, int] = {}
    client: tuple[bytes, int] | None = None
    out = bytearray([0])
    for pkt in packets(path):
        seg = decoder.decode(pkt) if isinstance(pkt, Packet) else None
        if seg is None:
            continue
        if client is None:
            client = (seg.src, seg.sport)
        d = 0 if (seg.src, seg.sport) == client else 1
        isn.setdefault(d, seg.seq)
        seq = (seg.seq - isn[d]) & 0xFFFFFFFF
        ack = (seg.ack - isn[1 - d]) & 0xFFFFFFFF if 1 - d in isn else 0
        payload = seg.payload[:400]
        out += bytes([seg.flags & 0x3F, d]) + seq.to_bytes(4, "big") + ack.to_bytes(4, "big")
        out += len(payload).to_bytes(2, "big") + payload
        if len(out) > limit:
            break
    return bytes(out)


def frames(path: Path, count: int = 4) -> Iterator[Seed]:
    """Groups of ``count`` consecutive frames, each prefixed by its link type's index."""
    group: Seed = []
    for pkt in packets(path):
        if not isinstance(pkt, Packet) or pkt.linktype not in LINKTYPES:
            continue
        group.append(bytes([LINKTYPES.index(pkt.linktype)]) + pkt.data[:1600])
        if len(group) == count:
            yield group
            group = []
    if group:
        yield [*group, *([b""] * (count - len(group)))]


def header_blocks(stream: bytes) -> list[bytes]:
    """The HPACK header blocks of one direction of an HTTP/2 stream (RFC 9113 §4.1, §6.2)."""
    if stream.startswith(H2_PREFACE):
        stream = stream[len(H2_PREFACE) :]
    blocks: list[bytes] = []
    pos = 0
    while pos + 9 <= len(stream):
        length = int.from_bytes(stream[pos : pos + 3], "big")
        ftype, flags = stream[pos + 3], stream[pos + 4]
        payload = stream[pos + 9 : pos + 9 + length]
        pos += 9 + length
        if ftype == 1:
            pad = payload[0] if flags & 0x8 and payload else 0
            start = (1 if flags & 0x8 else 0) + (5 if flags & 0x20 else 0)
            blocks.append(payload[start : len(payload) - pad])
        elif ftype == 9 and blocks:
            blocks[-1] += payload
    return blocks


# -- documents and exchanges ----------------------------------------------------------------


def corpus_files(
    content_type: str | None = None, fmt: str | None = None, limit: int = 12
) -> list[Path]:
    """Small corpus files, by a response content type or a manifest format detail."""
    out = []
    for line in (CORPUS / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["bytes"] > 12000:
            continue
        if content_type is not None and content_type not in entry.get("content_types", {}):
            continue
        if fmt is not None and not entry["format_detail"].startswith(fmt):
            continue
        out.append(CORPUS / entry["file"])
    step = max(1, len(out) // limit)
    return out[::step][:limit]


def exchange_seed(ex: Exchange) -> Seed | None:
    """(meta JSON, request body, response body) of an exchange, as the api target reads it."""
    if ex.request is None or ex.response is None:
        return None
    req = b"".join(p for _, p in ex.request.body.pieces)[:CUT]
    resp = b"".join(p for _, p in ex.response.body.pieces)[: 2 * CUT]
    meta = {
        "method": ex.request.method,
        "url": ex.request.url,
        "target": ex.request.target,
        "status": ex.response.status,
        "transport": ex.transport,
        "request_headers": [[k, v] for k, v in ex.request.headers if k.lower() != "authorization"],
        "response_headers": [list(h) for h in ex.response.headers],
    }
    return [orjson.dumps(meta), req, resp]


def exchanges_and_calls(paths: list[Path]) -> list[tuple[Exchange, Any]]:
    """Every exchange of ``paths`` with the call it carries (None if it carries none)."""
    out: list[tuple[Exchange, Any]] = []
    for path in paths:
        keys = sorted(path.parent.glob("keylog.txt"))
        for item in run([str(path)], Options(calls=True, keylogs=[str(k) for k in keys])):
            if isinstance(item, Exchange):
                out.append((item, None))
            elif isinstance(item, Call) and out and out[-1][0].id == item.exchange_id:
                out[-1] = (out[-1][0], item)
    return out


def encoded(text: bytes) -> Iterator[Seed]:
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    yield [b"gzip", gz.compress(text) + gz.flush()]
    yield [b"deflate", zlib.compress(text)]
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    yield [b"deflate", raw.compress(text) + raw.flush()]
    yield [b"br", brotli.compress(text)]
    yield [b"zstd", zstandard.ZstdCompressor().compress(text)]
    yield [b"gzip, br", brotli.compress(gz_bytes(text))]
    yield [b"identity", text]


def gz_bytes(text: bytes) -> bytes:
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    return gz.compress(text) + gz.flush()


# -- building -------------------------------------------------------------------------------


def build() -> dict[str, int]:
    """Cut every target's seeds and write them; target -> bytes written."""
    seeds: dict[str, list[Seed]] = {}

    def add(target: str, seed: Seed) -> None:
        seeds.setdefault(target, []).append(seed)

    _captures(add)
    _documents(add)
    _bodies(add)
    _dialects(add)
    _sessions(add)
    _wire(add)
    _kafka(add)
    _grpc_calls(add)
    _graphql(add)
    _retrieval(add)
    _quic(add)
    return {t: save(t, s) for t, s in sorted(seeds.items())}


def _quic(add: Any) -> None:
    """QUIC datagrams (with their key log) and HTTP/3 stream bytes of the project's own
    HTTP/3 captures (scripts/make_quic_captures.py)."""
    from agentshark.quic.events import QuicStreamData
    from tests.fuzz.quic_targets import datagram_records, stream_records
    from tests.quic.capture import FILES, read_quic

    for name in ("h3_openai", "h3_v2_chacha_keyupdate"):
        pcap, keys = FILES[name]
        assert keys is not None
        datagrams: list[tuple[int, bytes]] = []
        for item in packets(pcap):
            if isinstance(item, Packet) and len(datagrams) < 6:
                datagrams.append((0 if len(datagrams) % 2 == 0 else 1, item.data[42:]))
        add("quic", [keys.read_bytes(), datagram_records(datagrams)])
        _, events = read_quic(pcap, keys)
        data = [ev for _, ev in events if isinstance(ev, QuicStreamData)]
        add("h3", [stream_records(data)[:6000]])
        add("h3", [stream_records(data[len(data) // 2 :])[:6000]])


def _wire(add: Any) -> None:
    """PostgreSQL, MySQL, Redis and AMQP connections of the project's own captures
    (scripts/make_pg_captures.py, make_pgvector_captures.py, make_mysql_captures.py,
    make_redis_captures.py, make_amqp_captures.py). The pgvector connections are cut longer:
    their searches come after the adapter's type lookups."""
    own = (
        ("pg_psycopg", "pgsql"),
        ("pg_agent", "pgsql"),
        ("pgvector_psycopg", "pgsql"),
        ("mysql_pymysql", "mysql"),
        ("mysql_connector", "mysql"),
        ("mysql_compressed", "mysql"),
        ("redis_py", "resp"),
        ("amqp_pika", "amqp"),
    )
    for name, target in own:
        cut = 2 * CUT if name == "pgvector_psycopg" else CUT
        for steps in streams(OWN / name / "capture.pcap").values():
            client, server = joined(steps)
            if client or server:
                add(target, [client[:cut], server[:cut]])


def _kafka(add: Any) -> None:
    """Kafka connections of the Tansu capture (scripts/make_kafka_captures.py), cut at frame
    boundaries to a few requests (Produce, Fetch and OffsetCommit before the others) with
    their responses, paired still (the correlation ids are kept); those with records first."""
    cut: list[tuple[int, Seed]] = []
    for steps in streams(OWN / "kafka_confluent" / "capture.pcap").values():
        client, server = joined(steps)
        answers = {f[:4]: f for f in _frames(server, 0)}
        requests = [f for f in _frames(client, 0) if int.from_bytes(f[:2]) in (0, 1, 2, 3, 8, 9)]
        requests.sort(key=lambda f: int.from_bytes(f[:2]) not in (0, 1, 8))
        picked = [(r, answers.get(r[4:8], b"")) for r in requests]
        kept = [(r, a) for r, a in picked if len(r) + len(a) <= 2 * CUT][:3]
        records = sum(int.from_bytes(r[:2]) in (0, 1) for r, _ in kept)
        if kept:
            client_part = b"".join(_sized(r) for r, _ in kept)
            cut.append((records, [client_part, b"".join(_sized(a) for _, a in kept)]))
    for _, seed in sorted(cut, key=lambda c: -c[0]):
        add("kafka", seed)


def _frames(data: bytes, pos: int) -> list[bytes]:
    out = []
    while pos + 4 <= len(data):
        size = int.from_bytes(data[pos : pos + 4])
        out.append(data[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return out


def _sized(frame: bytes) -> bytes:
    return len(frame).to_bytes(4) + frame if frame else b""


def _grpc_calls(add: Any) -> None:
    """gRPC exchanges of the families read with bundled descriptors (A2A's gRPC binding,
    xAI chat from the loopback capture and from corpus cassettes)."""
    paths = [
        OWN / "xai_chat_grpc" / "capture.pcap",
        *corpus_files(fmt="xAI gRPC", limit=3),
        OWN / "a2a_v1_grpc" / "capture.pcap",
    ]
    for ex, call in exchanges_and_calls(paths):
        seed = exchange_seed(ex) if call is not None else None
        if seed is not None:
            add(api_target(call.api, grpc=call.extras.get("binding") == "grpc"), seed)


def _graphql(add: Any) -> None:
    """The GraphQL exchanges of the Strawberry capture (its other calls are seeds elsewhere)."""
    for ex, call in exchanges_and_calls([OWN / "graphql_strawberry" / "capture.pcap"]):
        seed = exchange_seed(ex) if call is not None and call.api == "graphql" else None
        if seed is not None:
            add("api_graphql", seed)


# Retrieval services without a capture: (method, path, request, response), shaped as their API
# references show them (tests/apis/retrieval/test_readers.py reads the same shapes).
RETRIEVAL_SHAPES: tuple[tuple[str, str, Any, Any], ...] = (
    (
        "POST",
        "/v2/vectordb/entities/search",
        {"collectionName": "b", "data": [[0.1, 0.2]], "limit": 2, "filter": "x > 1"},
        {"code": 0, "data": [{"id": 1, "distance": 0.2, "title": "A"}], "topks": [1]},
    ),
    (
        "POST",
        "/v1/graphql",
        {
            "query": '{ Get { Article(nearText: {concepts: ["tea"]}, limit: 2) '
            "{ title _additional { id distance } } } }"
        },
        {
            "data": {
                "Get": {"Article": [{"title": "T", "_additional": {"id": "u1", "distance": 0.1}}]}
            }
        },
    ),
    (
        "POST",
        "/search",
        {"q": "tea", "num": 3},
        {
            "searchParameters": {"q": "tea"},
            "organic": [{"title": "T", "link": "https://t", "position": 1}],
        },
    ),
    (
        "POST",
        "/search",
        {"query": "tea", "numResults": 1},
        {"requestId": "r", "results": [{"id": "https://t", "url": "https://t", "score": 0.3}]},
    ),
    (
        "GET",
        "/res/v1/web/search?q=tea&count=2",
        None,
        {
            "type": "search",
            "query": {"original": "tea"},
            "web": {"results": [{"url": "https://t"}]},
        },
    ),
    (
        "POST",
        "/v1/memories/",
        {"messages": [{"role": "user", "content": "hi"}], "user_id": "u"},
        [{"id": "m1", "event": "ADD", "data": {"memory": "Says hi"}}],
    ),
    (
        "POST",
        "/v2/memories/search/",
        {"query": "hi", "filters": {"user_id": "u"}},
        {"results": [{"id": "m1", "memory": "Says hi", "hash": "h", "score": 0.5}]},
    ),
    (
        "POST",
        "/api/v2/graph/search",
        {"query": "tea", "user_id": "u", "scope": "edges"},
        {"edges": [{"uuid": "e1", "fact": "u likes tea"}]},
    ),
    (
        "GET",
        "/v1/agents/a1/archival-memory?search=tea",
        None,
        [{"id": "p1", "text": "likes tea", "agent_id": "a1", "embedding_config": {}}],
    ),
    (
        "POST",
        "/v1/rerank",
        {"query": "q", "documents": ["a", {"text": "b"}], "top_k": 1},
        {
            "object": "list",
            "data": [{"index": 1, "relevance_score": 0.5}],
            "usage": {"total_tokens": 3},
        },
    ),
)


_RETRIEVAL_APIS = {  # the fuzz target of each shape's path
    "/v2/vectordb/entities/search": "api_retrieval",
    "/v1/graphql": "api_retrieval",
    "/v1/rerank": "api_retrieval",
    "/search": "api_search_memory",
    "/res/v1/web/search": "api_search_memory",
    "/v1/memories/": "api_search_memory",
    "/v2/memories/search/": "api_search_memory",
    "/api/v2/graph/search": "api_search_memory",
    "/v1/agents/a1/archival-memory": "api_search_memory",
}


def _retrieval(add: Any) -> None:
    """The retrieval calls of the project's captures (scripts/make_retrieval_captures.py), and
    the services that have none in :data:`RETRIEVAL_SHAPES`."""
    names = ("retrieval_chroma", "retrieval_stub_clients", "retrieval_agent_chroma")
    taken: set[str] = set()
    for ex, call in exchanges_and_calls([OWN / n / "capture.pcap" for n in names]):
        seed = exchange_seed(ex) if call is not None and "retrieval" in call.extras else None
        if seed is not None and call.api not in taken:
            taken.add(call.api)  # one per service: the shapes below need room too
            add("api_retrieval" if call.api == "cohere.rerank" else api_target(call.api), seed)
    for method, path, request, response in RETRIEVAL_SHAPES:
        api = _RETRIEVAL_APIS[path.split("?")[0]]
        meta = {
            "method": method,
            "url": f"http://127.0.0.1:8000{path}",
            "target": path,
            "status": 200,
            "transport": "http/1.1",
            "request_headers": [["content-type", "application/json"]],
            "response_headers": [["content-type", "application/json"]],
        }
        body = orjson.dumps(request) if request is not None else b""
        add(api, [orjson.dumps(meta), body, orjson.dumps(response)])


def _sessions(add: Any) -> None:
    """WebSocket sessions (the bytes after the 101 of each direction, from the captures'
    messages framed again, plain and deflated) and gRPC bodies with their protobuf
    messages, and the reflection capture's responses."""
    import zlib

    from agentshark.output.report import RenderOptions, exchange_json

    def frame(payload: bytes, masked: bool, rsv1: bool = False) -> bytes:
        head = bytes([0xC1 if rsv1 else 0x81])
        n = len(payload)
        bit = 0x80 if masked else 0
        head += bytes([bit | n]) if n < 126 else bytes([bit | 126]) + n.to_bytes(2, "big")
        if not masked:
            return head + payload
        key = b"\x01\x02\x03\x04"
        return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))

    for name in ("ws_sdk_realtime_plain", "ws_sdk_realtime_nocontext"):
        for ex, _ in exchanges_and_calls([OWN / name / "capture.pcap"]):
            if ex.messages is None:
                continue
            for mode in (0, 1):
                sides = [bytearray(), bytearray()]
                inflaters = [zlib.compressobj(wbits=-15), zlib.compressobj(wbits=-15)]
                for r in ex.messages[:12]:
                    m = r.message
                    if m.payload is None or m.opcode != 1:
                        continue
                    data = m.payload
                    if mode:
                        c = inflaters[m.direction]
                        data = (c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH))[:-4]
                    sides[m.direction] += frame(data, m.direction == 0, bool(mode))
                add("websocket", [bytes(sides[0])[:CUT], bytes(sides[1])[:CUT], bytes([mode])])
    for ex, _ in exchanges_and_calls([CAPTURES / "grpc_h2c" / "capture.pcap"]):
        report = exchange_json(ex, RenderOptions(events=True))
        for side in (ex.request, ex.response):
            if side is not None and side.body.pieces:
                add("grpc", [b"".join(p for _, p in side.body.pieces)[:CUT]])
        for side_json in (report["request"], report.get("response") or {}):
            for ev in side_json.get("events", []):
                if ev.get("type") == "grpc" and ev.get("base64"):
                    add("protobuf", [base64.b64decode(ev["base64"])])
    _reflection(add)


def _reflection(add: Any) -> None:
    """The ServerReflectionResponse messages of the grpcio reflection capture."""
    from agentshark.framing import decode_stream
    from agentshark.framing.events import GrpcMessage
    from agentshark.output.grpc_reflection import is_reflection

    for ex, _ in exchanges_and_calls([OWN / "grpc_sdk_reflection" / "capture.pcap"]):
        if is_reflection(ex) and ex.response is not None:
            for ev in decode_stream(ex.response.body.pieces, "grpc"):
                if isinstance(ev, GrpcMessage) and ev.payload:
                    add("grpc_reflection", [ev.payload[:CUT]])


def _captures(add: Any) -> None:
    pcaps = [p for p in corpus_files(fmt="pcap", limit=40) if p.stat().st_size <= 12000]
    for path in pcaps:
        data = path.read_bytes()
        add("pcapng" if data[:4] == b"\x0a\x0d\x0d\x0a" else "pcap", [data])
    for path in [*CLEAR_CAPTURES, *(c for c, _ in TLS_CAPTURES)]:
        data = path.read_bytes()
        add("pcap", [data[:CUT]])
        add("tcp", [tcp_records(path)])
        for group in list(frames(path))[:2]:
            add("packet", group)
    for path in corpus_files(fmt="pcap", limit=40):
        for group in list(frames(path))[:1]:
            add("packet", group)
    dsb = CAPTURES / "llm_sdk_anthropic" / "capture.dsb.pcapng"
    add("pcapng", [dsb.read_bytes()[:CUT]])
    for path in CLEAR_CAPTURES:
        for steps in list(streams(path).values())[:3]:
            client, server = joined(steps)
            kind = "h2" if client.startswith(H2_PREFACE) else "h1"
            add(kind, [client[:CUT], server[:CUT]])
            if kind == "h2":
                add("hpack", [*header_blocks(client), b"", b"", b""][:3])
                add("hpack", [*header_blocks(server), b"", b"", b""][:3])
    for capture, keys in TLS_CAPTURES:
        for steps in list(streams(capture).values())[:2]:
            client, server = joined(steps)
            add("tls_no_keys", [client[:CUT], server[:CUT]])
            add("tls_records", [server[: CUT // 2]])
            add("tls_handshake", [client[5 : 5 + int.from_bytes(client[3:5], "big")]])
            add("tls_keys", [keys.read_bytes(), client[: 2 * CUT], server[: 2 * CUT]])
            clear = plaintext(steps, keys)
            kind = "h2" if clear[0].startswith(H2_PREFACE) else "h1"
            add(kind, [clear[0][:CUT], clear[1][:CUT]])
            if kind == "h2":
                add("hpack", [*header_blocks(clear[0]), b"", b"", b""][:3])
    small: list[tuple[Path, Path | None]] = [
        (
            CAPTURES / "llm_sdk_anthropic" / "capture.pcap",
            CAPTURES / "llm_sdk_anthropic" / "keylog.txt",
        ),
        (OWN / "tls13_hrr" / "capture.pcap", OWN / "tls13_hrr" / "keys.log"),
        (CAPTURES / "grpc_h2c" / "capture.pcap", None),
        (CAPTURES / "a2a_jsonrpc_v03" / "capture.pcap", None),
        (OWN / "h2_rst_stream" / "capture.pcap", OWN / "h2_rst_stream" / "keys.log"),
        (CORPUS / "kbandla__dpkt" / "examples" / "data" / "http.pcap", None),
    ]
    for path, keylog in small:
        add("pipeline", [keylog.read_bytes() if keylog else b"", path.read_bytes()])


def _documents(add: Any) -> None:
    docs = ROOT / "tests" / "data" / "documents"
    add("har", [(docs / "chat_and_ws.har").read_bytes()])
    for path in corpus_files(fmt="HAR", limit=4):
        add("har", [path.read_bytes()])
    add("vcr", [(docs / "cassette.json").read_bytes()])
    add("vcr", [(docs / "openai_gzip.yaml").read_bytes()])
    for path in corpus_files(fmt="vcrpy", limit=12):
        add("vcr", [path.read_bytes()])
    stdio = CAPTURES / "mcp_stdio_time"
    for name in ("transcript.jsonl", "c2s.jsonl", "s2c.jsonl"):
        add("stdio", [(stdio / name).read_bytes()[:CUT]])
    for path in corpus_files(fmt="MCP stdio", limit=3):
        add("stdio", [path.read_bytes()[:CUT]])
    for path in corpus_files(fmt="xAI gRPC", limit=2):
        add("xai_cassette", [path.read_bytes()])


def _bodies(add: Any) -> None:
    paths = [
        *corpus_files("text/event-stream", limit=10),
        *corpus_files("application/x-ndjson", limit=6),
        *corpus_files("application/vnd.amazon.eventstream", limit=6),
        *corpus_files("application/json", limit=10),
        *corpus_files(fmt="vcrpy+parsed_body", limit=10),
    ]
    paths += [
        CAPTURES / "llm_sdk_anthropic" / "capture.pcap",
        CAPTURES / "llm_sdk_openai" / "capture.pcap",
        CAPTURES / "mcp_http_plain" / "capture.pcap",
        CAPTURES / "a2a_jsonrpc_v03" / "capture.pcap",
        CAPTURES / "mcp_stdio_time" / "transcript.jsonl",
        CAPTURES / "http1_cleartext" / "capture.pcap",
        OWN / "a2a_v1_rest" / "capture.pcap",
        *sorted((ROOT / "tests" / "data" / "apis").glob("*/*.yaml"))[:20],
    ]
    pairs = exchanges_and_calls(paths)
    for ex, call in pairs:
        if call is not None:
            seed = exchange_seed(ex)
            if seed is not None:
                add("api_retrieval" if call.api == "cohere.rerank" else api_target(call.api), seed)
    framing_target = {
        "sse": "sse",
        "ndjson": "ndjson",
        "json-array": "json_array",
        "aws-eventstream": "eventstream",
    }
    for ex, _ in pairs:
        if ex.response is None:
            continue
        pieces = ex.response.body.pieces
        body = b"".join(p for _, p in pieces)
        ctype = header(ex.response.headers, "content-type")
        coding = header(ex.response.headers, "content-encoding")
        if coding and ex.response.body.content_decoded is False:
            add("content", [coding.encode("latin-1"), body[: 2 * CUT]])
        framing = detect_framing(ctype, body[:4096])
        if framing in framing_target:
            add(framing_target[framing], [body[: 2 * CUT]])
    for seed in anthropic_endpoints():
        add("api_anthropic_endpoints", seed)
    for seed in bedrock_seeds():
        add("api_bedrock", seed)
    text = b'{"id":"x","choices":[{"delta":{"content":"hello"}}]}\n' * 20
    for seed in encoded(text):
        add("content", seed)
    add("json_array", [b'[{"candidates":[{"content":{"parts":[{"text":"a"}]}}]},\r\n{"x":1}]'])
    add("ndjson", [b'{"message":{"content":"a"},"done":false}\n{"done":true}\n'])


# Bedrock exchanges of the corpus, one per shape: Converse, ConverseStream with a tool call,
# Nova and Titan invoke streams, Llama and Cohere invoke bodies, a 400
BEDROCK_SEEDS = (
    "pydantic__pydantic-ai/tests/models/cassettes/test_bedrock/test_bedrock_model_stream.yaml",
    "open-telemetry__opentelemetry-python-contrib/instrumentation/opentelemetry-instrumentation-"
    "botocore/tests/cassettes/test_converse_stream_with_content_tool_call.yaml",
    "open-telemetry__opentelemetry-python-contrib/instrumentation/opentelemetry-instrumentation-"
    "botocore/tests/cassettes/test_invoke_model_with_content[meta.llama].yaml",
    "open-telemetry__opentelemetry-python-contrib/instrumentation/opentelemetry-instrumentation-"
    "botocore/tests/cassettes/test_invoke_model_with_content[cohere.command-r].yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-bedrock/tests/traces/"
    "cassettes/test_nova/test_nova_invoke_stream.yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-bedrock/tests/traces/"
    "cassettes/test_titan/test_titan_invoke_stream.yaml",
    "pydantic__pydantic-ai/tests/models/cassettes/test_bedrock/test_bedrock_error.yaml",
)


def bedrock_seeds() -> Iterator[Seed]:
    """api_bedrock seeds: exchanges of :data:`BEDROCK_SEEDS` whose call is a Bedrock one."""
    for ex, call in exchanges_and_calls([CORPUS / f for f in BEDROCK_SEEDS]):
        if call is not None and call.api.startswith("bedrock."):
            seed = exchange_seed(ex)
            if seed is not None:
                yield seed


# Corpus files of the native dialects (Ollama's NDJSON, Cohere's v1 and v2 chat), whole and
# streamed, so the api_ollama and api_cohere targets start from real bodies.
DIALECT_FILES = (
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-ollama/tests/cassettes/"
    "test_chat/test_ollama_streaming_chat_legacy.yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-ollama/tests/cassettes/"
    "test_chat/test_ollama_chat_tool_calls_legacy.yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-ollama/tests/cassettes/"
    "test_generation/test_ollama_streaming_generation_legacy.yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-ollama/tests/cassettes/"
    "test_embeddings/test_ollama_embeddings_legacy.yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-cohere/tests/cassettes/"
    "test_chat/test_cohere_v2_chat_legacy_with_tool_calls_and_streaming.yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-cohere/tests/cassettes/"
    "test_chat/test_cohere_v2_chat_legacy_with_tool_calls_and_history.yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-cohere/tests/cassettes/"
    "test_chat/test_cohere_chat_legacy_with_streaming.yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-cohere/tests/cassettes/"
    "test_chat/test_cohere_chat_legacy.yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-cohere/tests/cassettes/"
    "test_rerank/test_cohere_v2_rerank_legacy.yaml",
)


def _dialects(add: Any) -> None:
    for ex, call in exchanges_and_calls([CORPUS / f for f in DIALECT_FILES]):
        seed = exchange_seed(ex) if call is not None else None
        if seed is not None:
            add("api_retrieval" if call.api == "cohere.rerank" else api_target(call.api), seed)
    for path in sorted((ROOT / "tests" / "data" / "apis" / "ollama").glob("*.request.json")):
        name = path.name.removesuffix(".request.json")
        ndjson = path.with_name(f"{name}.response.ndjson")
        body = ndjson if ndjson.exists() else path.with_name(f"{name}.response.json")
        stream = ndjson.exists()
        meta = {
            "method": "POST",
            "url": "http://127.0.0.1:11434/api/" + ("generate" if "generate" in name else "chat"),
            "target": "/api/" + ("generate" if "generate" in name else "chat"),
            "status": 200,
            "transport": "http/1.1",
            "request_headers": [["content-type", "application/json"]],
            "response_headers": [
                ["content-type", "application/x-ndjson" if stream else "application/json"]
            ],
        }
        add("api_ollama", [orjson.dumps(meta), path.read_bytes(), body.read_bytes()[: 2 * CUT]])


def anthropic_endpoints() -> Iterator[Seed]:
    """Exchanges of the Anthropic endpoints besides Messages (no capture holds them), shaped
    as https://docs.anthropic.com/en/api describes them."""
    headers = [["content-type", "application/json"], ["anthropic-version", "2023-06-01"]]
    cases = [
        (
            "POST",
            "/v1/messages/count_tokens",
            b'{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}',
            b'{"input_tokens":9}',
        ),
        (
            "GET",
            "/v1/models",
            b"",
            b'{"data":[{"type":"model","id":"claude-x","display_name":"X","created_at":"2025-01-01T00:00:00Z"}],"has_more":false,"first_id":"claude-x","last_id":"claude-x"}',
        ),
        (
            "POST",
            "/v1/messages/batches",
            b'{"requests":[{"custom_id":"a","params":{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}}]}',
            b'{"id":"msgbatch_1","type":"message_batch","processing_status":"in_progress","request_counts":{"processing":1,"succeeded":0,"errored":0,"canceled":0,"expired":0}}',
        ),
        (
            "GET",
            "/v1/files",
            b"",
            b'{"data":[{"type":"file","id":"file_1","filename":"a.txt","mime_type":"text/plain",'
            b'"size_bytes":3,"created_at":"2025-01-01T00:00:00Z"}],"has_more":false}',
        ),
        (
            "POST",
            "/v1/complete",
            b'{"model":"claude-2","prompt":"\\n\\nHuman: hi\\n\\nAssistant:",'
            b'"max_tokens_to_sample":5}',
            b'{"type":"completion","id":"compl_1","completion":" Hello",'
            b'"stop_reason":"stop_sequence","model":"claude-2"}',
        ),
    ]
    for method, path, request, response in cases:
        meta = {
            "method": method,
            "url": "https://api.anthropic.com" + path,
            "target": path,
            "status": 200,
            "transport": "http/1.1",
            "request_headers": headers,
            "response_headers": [["content-type", "application/json"]],
        }
        yield [orjson.dumps(meta), request, response]
