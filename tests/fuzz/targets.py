"""Fuzz targets: one harness per decoder and input reader, over the public API.

Each target takes a list of byte strings (its *parts*: one input, or one per direction of a
connection, or a key log and a capture...) and returns what the code under test produced.
The invariant of every target is the project's: any bytes in, only events or Diagnostics
out, never an exception. A harness raises :class:`ViolationError` when an output is of a type the
API does not promise; any other exception escaping a harness is a finding. The only
exceptions a harness absorbs are the documented ones: ``InputError`` from a reader given a
file that is not of its format at all (the pipeline reports it as a source diagnostic), and
``HandshakeError`` from the handshake message parsers (the TLS session turns it into a
diagnostic).

Inputs with two directions are fed interleaved in chunks, with an occasional capture gap,
cut where a generator seeded from the input's CRC says, so a given input always runs the
same way.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import random
import tempfile
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args
from unittest import mock

import orjson

from agentshark import cli  # at import: forked slices run the code the campaign started with
from agentshark.apis.model import Call
from agentshark.apis.registry import recognize
from agentshark.errors import Diagnostic, InputError
from agentshark.framing import make_framing_decoder
from agentshark.framing.events import FramingOutput
from agentshark.http.content import decode_body
from agentshark.http.events import HttpEvent
from agentshark.http.exchange import ExchangeAssembler
from agentshark.http.h1 import H1Connection
from agentshark.http.h2 import H2Connection
from agentshark.http.h2_hpack import BlockDecoder
from agentshark.model import Body, Exchange, Request, Response
from agentshark.net.events import TcpEvent
from agentshark.net.packet import PacketDecoder
from agentshark.net.segment import TcpSegment
from agentshark.net.tcp import TcpReassembler
from agentshark.pipeline import ConnectionReport, Options, SourceReport, run
from agentshark.sources.pcap import read_pcap
from agentshark.sources.pcapng import read_pcapng
from agentshark.sources.records import DecryptionSecrets, Interface, Packet
from agentshark.tls import KeyLog, TlsConnection
from agentshark.tls.events import TlsEvent
from agentshark.tls.handshake import (
    HandshakeError,
    HandshakeReader,
    parse_client_hello,
    parse_encrypted_extensions,
    parse_key_update,
    parse_server_hello,
)
from agentshark.tls.records import RecordReader
from tests.fuzz.quic_targets import t_h3, t_quic

Parts = list[bytes]
HTTP_EVENTS = get_args(HttpEvent)
TLS_EVENTS = get_args(TlsEvent)
TCP_EVENTS = get_args(TcpEvent)
FRAMING_OUT = get_args(FramingOutput)
ITEMS = (Exchange, Call, ConnectionReport, SourceReport)
# Link types the packet decoder reads (and some it does not), chosen by an input's first byte.
LINKTYPES = (1, 113, 276, 0, 108, 101, 12, 14, 228, 229, 147)


class ViolationError(AssertionError):
    """An output the API does not promise (the invariant broke without an exception)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    name: str
    run: Callable[[Parts], list[Any]]
    parts: int  # how many parts an input has
    fixed: frozenset[int] = frozenset()  # parts never mutated (a key log)
    tokens: tuple[bytes, ...] = ()
    doc: str = ""
    heavy: bool = False  # whole files through the pipeline: more CPU per input is normal


def only(items: Iterable[Any], types: tuple[type, ...], where: str) -> list[Any]:
    out = list(items)
    for item in out:
        if not isinstance(item, types):
            raise ViolationError(f"{where} yielded {type(item).__name__}: {item!r:.200}")
    return out


def schedule(parts: Sequence[bytes]) -> random.Random:
    """The generator that cuts ``parts`` into chunks: the same input runs the same way."""
    return random.Random(zlib.crc32(b"\x00".join(parts)))


def interleave(
    client: bytes, server: bytes, rnd: random.Random, *, gaps: bool = True
) -> Iterable[tuple[str, int, bytes | int]]:
    """("data", direction, bytes) and ("gap", direction, size) steps feeding both sides."""
    pos = [0, 0]
    data = (client, server)
    ts = 0
    while pos[0] < len(client) or pos[1] < len(server):
        d = (
            rnd.randrange(2)
            if pos[0] < len(client) and pos[1] < len(server)
            else int(pos[0] >= len(client))
        )
        step = rnd.choice((1, 7, 100, 1500, 1 << 20))
        if gaps and rnd.random() < 0.03:
            size = min(step, len(data[d]) - pos[d])
            pos[d] += size
            yield "gap", d, size
        else:
            yield "data", d, data[d][pos[d] : pos[d] + step]
            pos[d] += step
        ts += 1


# -- input readers --------------------------------------------------------------------------


def t_pcap(parts: Parts) -> list[Any]:
    try:
        items = read_pcap(io.BytesIO(parts[0]), "fuzz")
    except InputError:
        return []
    return only(items, (Packet, Interface, Diagnostic), "read_pcap")


def t_pcapng(parts: Parts) -> list[Any]:
    try:
        items = read_pcapng(io.BytesIO(parts[0]), "fuzz")
    except InputError:
        return []
    return only(items, (Packet, Interface, DecryptionSecrets, Diagnostic), "read_pcapng")


class _Files:
    """A private temporary directory for targets that read files (the public pipeline API)."""

    def __init__(self) -> None:
        self.dir: Path | None = None

    def write(self, name: str, data: bytes) -> str:
        if self.dir is None:
            base = "/dev/shm" if os.path.isdir("/dev/shm") else None
            self.dir = Path(tempfile.mkdtemp(prefix="agentshark-fuzz-", dir=base))
        path = self.dir / name
        path.write_bytes(data)
        return str(path)


FILES = _Files()


def _pipeline(paths: list[str], keylogs: list[str]) -> list[Any]:
    items = only(run(paths, Options(calls=True, keylogs=keylogs)), ITEMS, "pipeline.run")
    for item in items:  # every item can be written
        if isinstance(item, Call):
            orjson.dumps(item.to_json())
    return items


def t_document(parts: Parts) -> list[Any]:
    """HAR, VCR and stdio transcripts: read through the pipeline, as the CLI reads them."""
    return _pipeline([FILES.write("document", parts[0])], [])


_PARSERS: list[argparse.ArgumentParser] = []  # the CLI's parser, built once (see t_pipeline)


def t_pipeline(parts: Parts) -> list[Any]:
    """The whole CLI on a mutated capture: every command, text and JSON, into a file."""
    if not _PARSERS:  # building the parser is half the CPU of the CLI on a small capture
        _PARSERS.append(cli.build_parser())  # (argparse formats every help text); reuse it
    capture, keys = FILES.write("capture", parts[1]), FILES.write("keys", parts[0])
    out = str(Path(capture).with_name("out"))
    rnd = schedule(parts)
    command = rnd.choice(
        (
            ["exchanges", "--format", "json", "--events"],
            ["exchanges"],
            ["calls", "--format", "json"],
            ["calls"],
            ["analyze", "--format", "json"],
            ["analyze"],
        )
    )
    with (
        mock.patch.object(cli, "build_parser", lambda: _PARSERS[0]),
        contextlib.redirect_stderr(io.StringIO()),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        code = cli.main([*command, capture, "--keylog", keys, "--no-progress", "-o", out])
    return [code]


# -- packets and TCP ------------------------------------------------------------------------


def t_packet(parts: Parts) -> list[Any]:
    """Frames (first byte: link type; the rest: the frame) through one decoder, so IP
    fragments of several frames meet."""
    decoder = PacketDecoder("fuzz")
    out: list[Any] = []
    for number, frame in enumerate(parts, 1):
        if not frame:
            continue
        linktype = LINKTYPES[frame[0] % len(LINKTYPES)]
        extra = frame[0] >> 4
        seg = decoder.decode(
            Packet(float(number), linktype, frame[1:], len(frame) - 1 + extra, number, 0)
        )
        if seg is not None and not isinstance(seg, TcpSegment):
            raise ViolationError(f"decode returned {type(seg).__name__}")
        out.append(seg)
    out += only(decoder.close(), (Diagnostic,), "PacketDecoder.close")
    return out


ISN = (1000, 0xFFFFFF00)  # client, server: the server's wraps soon
ADDRESSES = (b"\x7f\x00\x00\x01", b"\x7f\x00\x00\x02")


def segments(blob: bytes) -> list[TcpSegment]:
    """TCP segments from records: flags (1 byte: FIN SYN RST PSH ACK URG), where (1 byte:
    bit 0 direction, bits 1-2 connection), seq and ack relative to the ISNs (4 bytes each,
    big-endian), payload length (2 bytes), payload."""
    out: list[TcpSegment] = []
    pos = 0
    while pos + 12 <= len(blob):
        flags, where = blob[pos], blob[pos + 1]
        seq = int.from_bytes(blob[pos + 2 : pos + 6], "big")
        ack = int.from_bytes(blob[pos + 6 : pos + 10], "big")
        size = int.from_bytes(blob[pos + 10 : pos + 12], "big")
        payload = blob[pos + 12 : pos + 12 + size]
        pos += 12 + size
        d, conn = where & 1, (where >> 1) & 3
        sport, dport = (40000 + conn, 80) if d == 0 else (80, 40000 + conn)
        out.append(
            TcpSegment(
                ts=float(len(out)),
                src=ADDRESSES[d],
                sport=sport,
                dst=ADDRESSES[1 - d],
                dport=dport,
                seq=(ISN[d] + seq) & 0xFFFFFFFF,
                ack=(ISN[1 - d] + ack) & 0xFFFFFFFF,
                flags=flags & 0x3F,
                payload=payload,
                missing=size - len(payload) if where & 0x80 else 0,
                packet=len(out) + 1,
            )
        )
    return out


def t_tcp(parts: Parts) -> list[Any]:
    blob = parts[0]
    limit = (8 << 20, 150, 0)[blob[0] % 3] if blob else 8 << 20
    r = TcpReassembler(max_buffered=limit, max_connections=3)
    out: list[Any] = []
    for seg in segments(blob[1:]):
        out += r.feed(seg)
    out += r.close()
    if r.open_connections:
        raise ViolationError(f"{r.open_connections} connections open after close()")
    return only(out, TCP_EVENTS, "TcpReassembler")


# -- TLS ------------------------------------------------------------------------------------


def t_tls_records(parts: Parts) -> list[Any]:
    data = parts[0]
    cut = zlib.crc32(data) % (len(data) + 1)
    reader = RecordReader()
    out = [*reader.feed(data[:cut]), *reader.feed(data[cut:])]
    return only(out, (bytes,), "RecordReader.feed")


def t_tls_handshake(parts: Parts) -> list[Any]:
    parsers: dict[int, Callable[[bytes], object]] = {
        1: parse_client_hello,
        2: parse_server_hello,
        8: parse_encrypted_extensions,
        24: parse_key_update,
    }
    out: list[Any] = []
    reader = HandshakeReader()
    with contextlib.suppress(HandshakeError):
        messages = reader.feed(parts[0])
        for msg_type, body in messages:
            parse = parsers.get(msg_type)
            if parse is not None:
                with contextlib.suppress(HandshakeError):
                    out.append(parse(body))
    for parse in parsers.values():  # the raw bytes as each message body
        with contextlib.suppress(HandshakeError):
            out.append(parse(parts[0][4:]))
    return out


def _tls(keylog: KeyLog, client: bytes, server: bytes) -> list[Any]:
    tls = TlsConnection(keylog, location="fuzz")
    out: list[Any] = []
    ts = 0.0
    for kind, d, value in interleave(client, server, schedule([client, server])):
        ts += 1.0
        if kind == "gap":
            assert isinstance(value, int)
            out += tls.gap(d, value, ts)
        else:
            assert isinstance(value, bytes)
            out += tls.feed(d, value, ts)
    out += tls.end(0, ts)
    out += tls.end(1, ts)
    return only(out, TLS_EVENTS, "TlsConnection")


def t_tls_no_keys(parts: Parts) -> list[Any]:
    return _tls(KeyLog(), parts[0], parts[1])


def t_tls_keys(parts: Parts) -> list[Any]:
    keylog = KeyLog()
    keylog.add_text(parts[0], "fuzz")
    return _tls(keylog, parts[1], parts[2])


# -- HTTP -----------------------------------------------------------------------------------


def _http(
    conn: H1Connection | H2Connection, transport: str, client: bytes, server: bytes
) -> list[Any]:
    assembler = ExchangeAssembler(
        source=0,
        connection="c1",
        transport=transport,
        scheme="http",
        server="127.0.0.1:80",
        next_id=iter(f"e{i}" for i in range(1, 1 << 30)).__next__,
        location="fuzz",
    )
    rnd = schedule([client, server])
    events: list[Any] = []
    out: list[Any] = []
    ts = 0.0
    for _, d, value in interleave(client, server, rnd):
        ts += 1.0
        got = conn.gap(d, value, ts) if isinstance(value, int) else conn.feed(d, value, ts)
        events += got
        out += assembler.handle(got)
    for d in (0, 1):
        got = conn.end(d, ts + 1, clean=rnd.random() < 0.7)
        events += got
        out += assembler.handle(got)
    out += assembler.close()
    only(events, HTTP_EVENTS, type(conn).__name__)
    only(assembler.diagnostics, (Diagnostic,), "ExchangeAssembler.diagnostics")
    return only(out, (Exchange,), "ExchangeAssembler")


def t_h1(parts: Parts) -> list[Any]:
    return _http(H1Connection(), "http/1.1", parts[0], parts[1])


def t_h2(parts: Parts) -> list[Any]:
    preface = bool(zlib.crc32(parts[0][:64]) & 1) or parts[0].startswith(b"PRI ")
    return _http(H2Connection(expect_preface=preface), "h2", parts[0], parts[1])


def t_hpack(parts: Parts) -> list[Any]:
    """Header blocks through one decoder, so the dynamic table carries from block to block."""
    decoder = BlockDecoder(history_known=bool(parts[0][:1]) and parts[0][0] & 1 == 0)
    out: list[Any] = []
    for block in parts:
        decoded = decoder.decode(block)
        if not (decoded.complete or decoded.error):
            raise ViolationError("a block neither complete nor in error")
        out.append(decoded)
    return out


# -- bodies ---------------------------------------------------------------------------------


def _framing(name: str) -> Callable[[Parts], list[Any]]:
    def target(parts: Parts) -> list[Any]:
        data = parts[0]
        decoder = make_framing_decoder(name, location="fuzz")
        rnd = schedule(parts)
        out: list[Any] = []
        pos = 0
        while pos < len(data):
            step = rnd.choice((1, 3, 64, 1 << 20))
            out += decoder.feed(data[pos : pos + step], float(pos))
            pos += step
        out += decoder.close(float(pos))
        return only(out, FRAMING_OUT, f"{name} decoder")

    return target


def t_websocket(parts: Parts) -> list[Any]:
    """Both directions of a WebSocket session (part 0 client, part 1 server) through the
    frame reader, in random pieces with gaps; part 2's first byte picks permessage-deflate
    (none, with, without context takeover) and a mid-connection start."""
    from agentshark.framing.websocket import Deflate, WsDirection, WsMessage

    flags = parts[2][:1] or b"\x00"
    mode = flags[0] % 3
    deflate = None if mode == 0 else Deflate(client_no_context_takeover=mode == 2)
    readers = [
        WsDirection(d, deflate=deflate, max_payload=4096, mid_stream=bool(flags[0] & 4))
        for d in (0, 1)
    ]
    out: list[Any] = []
    for _kind, d, value in interleave(parts[0], parts[1], schedule(parts)):
        reader = readers[d]
        if isinstance(value, bytes):
            out += reader.feed(value, 0.0)
        else:
            out += reader.gap(value, 0.0)
    for reader in readers:
        out += reader.close(1.0)
    return only(out, (WsMessage, Diagnostic), "websocket reader")


def t_pgsql(parts: Parts) -> list[Any]:
    """Both directions of a PostgreSQL connection (part 0 client, part 1 server) through
    the wire decoder, in random pieces with gaps and ends; each operation then through the
    families read from operations (pgvector's SQL recognizer): a call, or none."""
    from agentshark.apis.model import Call
    from agentshark.apis.registry import OPERATION_FAMILIES
    from agentshark.wire.pgsql import PgSession

    ops = _wire(PgSession("fuzz"), parts)
    for op in ops:
        for family in OPERATION_FAMILIES:
            if family.match(op) > 0:
                call = Call(id="fuzz", exchange_id="fuzz", api=family.api)
                family.parse(op, call)
                orjson.dumps(call.extras)  # what the report writes of it
    return ops


def t_mysql(parts: Parts) -> list[Any]:
    """Both directions of a MySQL connection (part 0 client, part 1 server) through the
    wire decoder: handshake, text and binary result sets, compressed packets."""
    from agentshark.wire.mysql import MySession

    return _wire(MySession("fuzz"), parts)


def t_resp(parts: Parts) -> list[Any]:
    """Both directions of a Redis connection (RESP2/RESP3) through the wire decoder."""
    from agentshark.wire.resp import RespSession

    return _wire(RespSession("fuzz"), parts)


def t_amqp(parts: Parts) -> list[Any]:
    """Both directions of an AMQP 0-9-1 connection through the wire decoder."""
    from agentshark.wire.amqp import AmqpSession

    return _wire(AmqpSession("fuzz"), parts)


def t_kafka(parts: Parts) -> list[Any]:
    """Both directions of a Kafka connection (requests, responses, record batches in every
    codec) through the wire decoder."""
    from agentshark.wire.kafka import KafkaSession

    return _wire(KafkaSession("fuzz"), parts)


def _wire(session: Any, parts: Parts) -> list[Any]:
    from agentshark.wire.events import Operation

    rnd = schedule(parts)
    out: list[Any] = []
    ts = 0.0
    for _kind, d, value in interleave(parts[0], parts[1], rnd):
        ts += 1.0
        if isinstance(value, bytes):
            out += session.feed(d, value, ts)
        else:
            out += session.gap(d, value, ts)
    for d in (0, 1):
        out += session.end(d, ts + 1, clean=rnd.random() < 0.7)
    out += session.close()
    name = type(session).__name__
    only(session.diagnostics, (Diagnostic,), f"{name}.diagnostics")
    for op in out:
        if isinstance(op, Operation):
            only(op.diagnostics, (Diagnostic,), "Operation.diagnostics")
    return only(out, (Operation,), name)


def t_protobuf(parts: Parts) -> list[Any]:
    """One message's bytes read without a schema: fields, or a fault as the last item."""
    from agentshark.framing.protobuf import decode_raw

    fields = decode_raw(parts[0])
    for f in fields:
        if not isinstance(f, dict) or not ("field" in f or "error" in f):
            raise ViolationError(f"protobuf reader yielded {f!r:.200}")
    return fields


def t_grpc_reflection(parts: Parts) -> list[Any]:
    """A ServerReflectionResponse: its file descriptors, added to an empty schema pool (bad
    ones are sentences, never an exception)."""
    from agentshark.framing.proto_schema import ProtoSchemas
    from agentshark.output.grpc_reflection import reflected_files

    files = reflected_files(parts[0])
    problems = ProtoSchemas([], []).add_files(files)
    if not all(isinstance(f, bytes) for f in files) or not all(
        isinstance(p, str) for p in problems
    ):
        raise ViolationError(f"reflection reader yielded {files!r:.100} {problems!r:.100}")
    return [*files, *problems]


def t_content(parts: Parts) -> list[Any]:
    """A body (part 1) under the Content-Encoding named by part 0, in random pieces."""
    coding = parts[0].decode("latin-1")
    data = parts[1]
    rnd = schedule(parts)
    cuts = sorted(rnd.randint(0, len(data)) for _ in range(rnd.randint(0, 4)))
    pieces = [
        (1.0, data[a:b]) for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True) if b > a
    ]
    decoded = rnd.choice((False, None, True))
    body = Body(pieces=pieces, content_decoded=decoded)
    result = decode_body(body, coding, limit=rnd.choice((64, 4096, 1 << 20)), location="fuzz")
    if result.size != sum(len(p) for _, p in result.pieces):
        raise ViolationError(
            f"size {result.size} is not the pieces' {sum(len(p) for _, p in result.pieces)}"
        )
    return only(result.diagnostics, (Diagnostic,), "decode_body")


# -- API families ---------------------------------------------------------------------------


def exchange_of(parts: Parts) -> Exchange | None:
    """An HTTP exchange from (meta JSON, request body, response body); None when the meta
    part was mutated into something that does not describe an exchange (not a finding)."""
    meta = _meta(parts[0])
    if meta is None:
        return None
    method, url, target, status, req_headers, resp_headers, transport = meta
    rnd = schedule(parts)
    body = parts[2]
    cuts = sorted({rnd.randint(0, len(body)) for _ in range(rnd.randint(0, 6))})
    pieces = [
        (10.0 + i / 10, body[a:b])
        for i, (a, b) in enumerate(zip([0, *cuts], [*cuts, len(body)], strict=True))
        if b > a
    ]
    complete = rnd.random() < 0.8
    request = Request(
        method=method,
        target=target,
        url=url,
        version="HTTP/1.1" if transport != "h2" else "HTTP/2",
        headers=list(req_headers),
        body=Body(pieces=[(1.0, parts[1])] if parts[1] else []),
        started=1.0,
        ended=1.0,
        complete=True,
    )
    response = Response(
        status=status,
        reason="",
        version=request.version,
        headers=list(resp_headers),
        body=Body(pieces=pieces),
        started=10.0,
        ended=20.0,
        complete=complete,
    )
    return Exchange(
        id="e1", source=0, connection="c1", transport=transport, request=request, response=response
    )


Meta = tuple[str, str, str, int, list[tuple[str, str]], list[tuple[str, str]], str]


@functools.lru_cache(maxsize=512)
def _meta(data: bytes) -> Meta | None:
    """The exchange described by a meta part (cached: most inputs mutate another part; each
    exchange gets its own copy of the header lists)."""
    try:
        meta = orjson.loads(data)
        method, url, target = str(meta["method"]), str(meta["url"]), str(meta["target"])
        status = int(meta["status"])
        req_headers = [(str(k), str(v)) for k, v in meta["request_headers"]]
        resp_headers = [(str(k), str(v)) for k, v in meta["response_headers"]]
        transport = str(meta["transport"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, OverflowError):
        return None
    if not 0 <= status <= 999:  # what the sources can give (HTTP status codes are 3 digits)
        return None
    return method, url, target, status, req_headers, resp_headers, transport


def t_api(parts: Parts) -> list[Any]:
    ex = exchange_of(parts)
    if ex is None:
        return []
    call = recognize(ex, "k1", max_body=1 << 20)
    if call is None:
        return []
    if not isinstance(call, Call):
        raise ViolationError(f"recognize returned {type(call).__name__}")
    orjson.dumps(call.to_json())
    only(call.diagnostics, (Diagnostic,), "Call.diagnostics")
    return [call]


# -- the list -------------------------------------------------------------------------------

H1_TOKENS = (
    b"\r\n",
    b"\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/1.0 ",
    b"GET / HTTP/1.1\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\n",
    b"Content-Length: ",
    b"Content-Length: 5\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"0\r\n\r\n",
    b"ffffffff\r\n",
    b";ext=1",
    b"Connection: close\r\n",
    b"Connection: Upgrade\r\nUpgrade: h2c\r\n",
    b"Upgrade: websocket\r\n",
    b"Expect: 100-continue\r\n",
    b"HEAD ",
    b"CONNECT ",
    b"Trailer: x\r\n",
    b" ",
    b":",
)
SSE_TOKENS = (
    b"data: ",
    b"data:",
    b"event: ",
    b"id: ",
    b"retry: ",
    b": c",
    b"\n",
    b"\n\n",
    b"\r\n",
    b"\r",
    b"[DONE]",
    b"\xef\xbb\xbf",
    b"{",
    b"}",
)
JSON_TOKENS = (
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b'"',
    b"\\u",
    b"\\ud800",
    b"\n",
    b"null",
    b"1e999",
    b"-0",
    b"\xff",
    b"\xc3",
)
H2_TOKENS = (
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"\x00\x00\x00\x04\x00\x00\x00\x00\x00",  # SETTINGS
    b"\x00\x00\x00\x04\x01\x00\x00\x00\x00",  # SETTINGS ACK
    b"\x00\x00\x08\x07\x00\x00\x00\x00\x00",  # GOAWAY head
    b"\x00\x00\x04\x03\x00\x00\x00\x00\x01",  # RST_STREAM on 1
    b"\x00\x00\x00\x01\x05\x00\x00\x00\x01",  # HEADERS END_STREAM|END_HEADERS on 1
    b"\x00\x00\x00\x09\x04\x00\x00\x00\x01",  # CONTINUATION END_HEADERS on 1
    b"\x00\x00\x00\x00\x01\x00\x00\x00\x03",  # DATA END_STREAM on 3
    b"\x00\x00\x04\x05\x04\x00\x00\x00\x01",  # PUSH_PROMISE head
    b"\x82",
    b"\x3f\xe1\x1f",  # dynamic table size update
    b"\x7f\xff\xff\xff\x0f",
)
EVENTSTREAM_TOKENS = (  # AWS event stream header names and values, Bedrock event names
    b"\x0d:message-type\x07\x00\x05event",
    b"\x0d:message-type\x07\x00\x09exception",
    b"\x0b:event-type\x07\x00\x11contentBlockDelta",
    b"\x0f:exception-type\x07\x00\x13throttlingException",
    b'"contentBlockIndex":0',
    b'"toolUse":{"input":"',
    b'"bytes":"',
    b"\x00\x00\x00",
)
TLS_TOKENS = (
    b"\x16\x03\x01",
    b"\x16\x03\x03",
    b"\x17\x03\x03",
    b"\x15\x03\x03\x00\x02\x02\x28",
    b"\x14\x03\x03\x00\x01\x01",
    b"\x17\x03\x03\x40\x11",
    b"\x01\x00\x00",
    b"\x02\x00\x00",
    b"\x00\x2b\x00\x02\x03\x04",  # supported_versions
    b"\x00\x10",  # ALPN
)

# API family targets: seeds are exchanges whose call had one of these APIs.
API_TARGETS = {
    "api_openai_chat": "openai.chat",
    "api_openai_responses": "openai.responses, openai.conversations",
    "api_openai_endpoints": "openai.embeddings, openai.completions, openai.models",
    "api_anthropic_messages": "anthropic.messages",
    "api_anthropic_endpoints": "anthropic.count_tokens, models, message_batches, files, "
    "completions",
    "api_mcp": "mcp (HTTP and stdio)",
    "api_a2a": "a2a (agent card, JSON-RPC, REST)",
    "api_bedrock": "bedrock.converse, bedrock.invoke (JSON bodies and AWS event streams)",
    "api_gemini": "gemini.generate_content (whole, alt=sse, JSON array), count_tokens, "
    "embed_content, models, cached_contents, files",
    "api_ollama": "ollama.chat, ollama.generate, ollama.embed, ollama.models",
    "api_cohere": "cohere.chat (v1, v2), embed, rerank, generate, tokenize",
    "api_grpc": "gRPC-bound families read with the bundled descriptors: a2a (gRPC binding, "
    "1.0 and 0.3), xai.chat",
    "api_graphql": "graphql (POST JSON, GET, application/graphql, batches, persisted queries)",
    "api_retrieval": "vector stores (chroma, qdrant, pinecone, milvus, elasticsearch, "
    "opensearch, weaviate) and rerankers (cohere, jina, voyage)",
    "api_search_memory": "web search (tavily, brave, serper, exa) and memory services (mem0, "
    "zep, letta)",
}
# the first dotted part of the retrieval services' api names (agentshark.apis.retrieval)
VECTOR_SERVICES = frozenset(
    {"chroma", "qdrant", "pinecone", "milvus", "elasticsearch", "opensearch", "weaviate"}
    | {"rerank", "jina", "voyage"}
)
SEARCH_MEMORY_SERVICES = frozenset({"tavily", "brave", "serper", "exa", "mem0", "zep", "letta"})
GRPC_TOKENS = (  # length prefixes, and xai_api / lf.a2a.v1 field keys
    b"\x00\x00\x00\x00",
    b"\x01\x00\x00\x00\x05",
    b"\x0a",
    b"\x12",
    b"\x1a",
    b"\xff\xff\xff\xff\x0f",
)


def api_target(api: str, *, grpc: bool = False) -> str:
    """The target whose seeds are exchanges of API ``api`` (a Call's ``api``); ``grpc``: the
    call came over gRPC (its messages read with a bundled schema)."""
    if grpc or api == "xai.chat":
        return "api_grpc"
    if api in ("openai.chat", "anthropic.messages", "mcp", "a2a", "graphql"):
        return "api_" + api.replace(".", "_")
    if api in ("openai.responses", "openai.conversations"):
        return "api_openai_responses"
    if api.startswith("bedrock."):
        return "api_bedrock"
    if api.startswith("gemini."):
        return "api_gemini"
    if api.partition(".")[0] in VECTOR_SERVICES:
        return "api_retrieval"
    if api.partition(".")[0] in SEARCH_MEMORY_SERVICES:
        return "api_search_memory"
    if api.startswith(("ollama.", "cohere.")):
        return "api_" + api.partition(".")[0]
    return "api_anthropic_endpoints" if api.startswith("anthropic.") else "api_openai_endpoints"


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(name="quic", run=t_quic, parts=2, fixed=frozenset({0}), doc="quic.demux.QuicDemux"),
        Target(name="h3", run=t_h3, parts=1, doc="http.h3.H3Connection + ExchangeAssembler"),
        Target(name="pcap", run=t_pcap, parts=1, doc="sources.pcap.read_pcap"),
        Target(name="pcapng", run=t_pcapng, parts=1, doc="sources.pcapng.read_pcapng"),
        Target(
            name="har",
            run=t_document,
            parts=1,
            tokens=JSON_TOKENS,
            doc="HAR files through the pipeline",
            heavy=True,
        ),
        Target(
            name="vcr",
            run=t_document,
            parts=1,
            tokens=(*JSON_TOKENS, b"\n- ", b": ", b"!!binary ", b"|-\n  ", b"&a ", b"*a"),
            doc="vcrpy cassettes (YAML, JSON) through the pipeline",
            heavy=True,
        ),
        Target(
            name="xai_cassette",
            run=t_document,
            parts=1,
            tokens=(
                b"\n- ",
                b": ",
                b"!!binary ",
                b"request_sample:",
                b"response_stream:",
                b"chunks_raw:",
                b"collections_method:",
            ),
            doc="pydantic-ai xAI gRPC cassettes through the pipeline",
            heavy=True,
        ),
        Target(
            name="stdio",
            run=t_document,
            parts=1,
            tokens=(
                *JSON_TOKENS,
                b'"jsonrpc":"2.0"',
                b'"id":1',
                b'"method":"tools/call"',
                b'"dir":"s2c"',
                b"STDIN: ",
                b"STDOUT: ",
            ),
            doc="MCP stdio transcripts through the pipeline",
            heavy=True,
        ),
        Target(
            name="packet",
            run=t_packet,
            parts=4,
            doc="net.packet.PacketDecoder (Ethernet, SLL, IP, fragments)",
        ),
        Target(name="tcp", run=t_tcp, parts=1, doc="net.tcp.TcpReassembler on segment records"),
        Target(
            name="tls_records",
            run=t_tls_records,
            parts=1,
            tokens=TLS_TOKENS,
            doc="tls.records.RecordReader",
        ),
        Target(
            name="tls_handshake",
            run=t_tls_handshake,
            parts=1,
            tokens=TLS_TOKENS,
            doc="tls.handshake parsers",
        ),
        Target(
            name="tls_no_keys",
            run=t_tls_no_keys,
            parts=2,
            tokens=TLS_TOKENS,
            doc="tls.TlsConnection without keys",
        ),
        Target(
            name="tls_keys",
            run=t_tls_keys,
            parts=3,
            fixed=frozenset({0}),
            tokens=TLS_TOKENS,
            doc="tls.TlsConnection with the capture's key log",
        ),
        Target(name="h1", run=t_h1, parts=2, tokens=H1_TOKENS, doc="http.h1 + http.exchange"),
        Target(
            name="pgsql",
            run=t_pgsql,
            parts=2,
            tokens=(b"\x00\x00\x00\x08\x04\xd2\x16\x2f", b"Z\x00\x00\x00\x05I", b"\x00"),
            doc="wire.pgsql.PgSession (PostgreSQL v3, both directions)",
        ),
        Target(
            name="mysql",
            run=t_mysql,
            parts=2,
            tokens=(
                b"\x01\x00\x00\x00\x03",  # a COM_QUERY's header
                b"\x07\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00",  # an OK
                b"\x05\x00\x00\x02\xfe\x00\x00\x02\x00",  # an EOF
                b"\xff\x7a\x04#42S02",
                b"\xfb",
                b"\xff\xff\xff",
                b"\x0a8.0.36\x00",
            ),
            doc="wire.mysql.MySession (MySQL/MariaDB, both directions)",
        ),
        Target(
            name="resp",
            run=t_resp,
            parts=2,
            tokens=(b"*1\r\n", b"$-1\r\n", b"+OK\r\n", b">3\r\n", b"%1\r\n", b"|1\r\n"),
            doc="wire.resp.RespSession (Redis RESP2/RESP3, both directions)",
        ),
        Target(
            name="amqp",
            run=t_amqp,
            parts=2,
            tokens=(
                b"AMQP\x00\x00\x09\x01",
                b"\xce",
                b"\x01\x00\x01",
                b"\x00\x3c\x00\x28",
                b"\x02\x00\x01",
                b"\x03\x00\x01",
                b"F\x00\x00\x00",
                b"A\x00\x00\x00",
            ),
            doc="wire.amqp.AmqpSession (AMQP 0-9-1, both directions)",
        ),
        Target(
            name="kafka",
            run=t_kafka,
            parts=2,
            tokens=(
                b"\xff\xff\xff\xff",
                b"\x00\x02",
                b"\x82SNAPPY\x00",
                b"\x1f\x8b\x08",
                b"\x28\xb5\x2f\xfd",
                b"\x04\x22\x4d\x18",
                b"\x00\x00\x00\x00",
            ),
            doc="wire.kafka.KafkaSession (Kafka requests/responses, record batches)",
        ),
        Target(
            name="h2",
            run=t_h2,
            parts=2,
            tokens=H2_TOKENS,
            doc="http.h2 frames and HPACK + http.exchange",
        ),
        Target(
            name="hpack", run=t_hpack, parts=3, tokens=H2_TOKENS, doc="http.h2_hpack.BlockDecoder"
        ),
        Target(name="sse", run=_framing("sse"), parts=1, tokens=SSE_TOKENS, doc="framing.sse"),
        Target(name="grpc", run=_framing("grpc"), parts=1, doc="framing.grpc (length-prefixed)"),
        Target(name="protobuf", run=t_protobuf, parts=1, doc="framing.protobuf.decode_raw"),
        Target(
            name="grpc_reflection",
            run=t_grpc_reflection,
            parts=1,
            doc="output.grpc_reflection + proto_schema.add_files",
        ),
        Target(
            name="websocket",
            run=t_websocket,
            parts=3,
            tokens=(b"\x81", b"\x82", b"\x88", b"\xc1", b"\x89", b"\x00\x00\xff\xff"),
            doc="framing.websocket.WsDirection (both directions, deflate, gaps)",
        ),
        Target(
            name="ndjson", run=_framing("ndjson"), parts=1, tokens=JSON_TOKENS, doc="framing.ndjson"
        ),
        Target(
            name="json_array",
            run=_framing("json-array"),
            parts=1,
            tokens=JSON_TOKENS,
            doc="framing.jsonarray",
        ),
        Target(
            name="eventstream", run=_framing("aws-eventstream"), parts=1, doc="framing.eventstream"
        ),
        Target(
            name="content",
            run=t_content,
            parts=2,
            fixed=frozenset({0}),
            doc="http.content.decode_body",
        ),
        *(
            Target(
                name=name,
                run=t_api,
                parts=3,
                tokens=(
                    *JSON_TOKENS,
                    *(
                        EVENTSTREAM_TOKENS
                        if "bedrock" in name
                        else GRPC_TOKENS
                        if "grpc" in name
                        else SSE_TOKENS
                    ),
                ),
                doc=f"apis: {apis}",
            )
            for name, apis in API_TARGETS.items()
        ),
        Target(
            name="pipeline",
            run=t_pipeline,
            parts=2,
            fixed=frozenset({0}),
            tokens=TLS_TOKENS,
            doc="the whole CLI on a mutated capture",
            heavy=True,
        ),
    )
}
