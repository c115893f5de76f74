"""The gateway's HAR writer, read back by the HAR reader: precise times, chunks, content
codings, WebSocket messages, redaction, and a file that is whole after every entry."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from agentshark.framing.websocket import TEXT, WsMessage
from agentshark.model import Body, Exchange, Request, Response, WsRecord
from agentshark.output.har_write import HarFile, har_entry
from agentshark.output.redact import NO_REDACTION, redactor
from agentshark.sources.har import read_har

T0 = 1764615600.123456
KEY = "sk-proj-Zq8xW2vN5mK7pR4tY6uB3cE9gH1jL0aS"
SSE = [b'data: {"a": 1}\n\n', b'data: {"b": "' + KEY.encode() + b'"}\n\n', b"data: [DONE]\n\n"]


def _exchange(pieces: list[tuple[float, bytes]], headers: list[tuple[str, str]]) -> Exchange:
    request = Request(
        method="POST",
        target="/v1/chat/completions",
        url="https://api.example/v1/chat/completions?key=" + KEY,
        version="HTTP/1.1",
        headers=[("authorization", f"Bearer {KEY}"), ("content-type", "application/json")],
        body=Body(pieces=[(T0, b'{"stream": true}')]),
        started=T0,
        ended=T0 + 0.0001234,
        complete=True,
    )
    response = Response(
        status=200,
        reason="OK",
        version="HTTP/1.1",
        headers=[("content-type", "text/event-stream"), *headers],
        body=Body(pieces=pieces),
        started=T0 + 0.2500001,
        ended=T0 + 0.9000001,
        complete=True,
    )
    return Exchange(
        id="e1", source=0, connection="p1", transport="http/1.1", request=request, response=response
    )


def _read(entry: dict[str, Any]) -> Exchange:
    doc = json.loads(json.dumps({"log": {"version": "1.2", "entries": [entry]}}))
    (exchange,) = read_har(doc, "rec.har", 0, lambda: "e1")
    assert isinstance(exchange, Exchange)
    return exchange


def test_times_and_chunks_come_back_as_recorded() -> None:
    pieces = [(T0 + 0.25 + i / 100, p) for i, p in enumerate(SSE)]
    back = _read(har_entry(_exchange(pieces, []), NO_REDACTION))
    assert back.request is not None and back.response is not None
    assert (back.request.started, back.request.ended) == (T0, T0 + 0.0001234)
    assert back.request.body.pieces == [(T0, b'{"stream": true}')]
    assert (back.response.started, back.response.ended) == (T0 + 0.2500001, T0 + 0.9000001)
    assert back.response.body.pieces == pieces
    assert back.complete and back.connection == "p1" and not back.diagnostics
    assert back.extras == {}


def test_a_content_coded_stream_is_written_decoded_with_the_decoded_chunk_sizes() -> None:
    squeeze = zlib.compressobj(wbits=31)  # gzip, flushed per event as a server streams it
    wire = [squeeze.compress(p) + squeeze.flush(zlib.Z_SYNC_FLUSH) for p in SSE]
    wire[-1] += squeeze.flush()
    pieces = [(T0 + 0.3 + i, w) for i, w in enumerate(wire)]
    entry = har_entry(_exchange(pieces, [("content-encoding", "gzip")]), NO_REDACTION)
    assert entry["response"]["content"]["text"] == b"".join(SSE).decode()
    back = _read(entry)
    assert back.response is not None and back.response.body.content_decoded is True
    assert back.response.body.pieces == [(ts, p) for (ts, _), p in zip(pieces, SSE, strict=True)]


def test_a_body_that_does_not_decode_is_kept_as_received() -> None:
    garbage = gzip.compress(b"x" * 100)[:20]
    entry = har_entry(_exchange([(T0, garbage)], [("content-encoding", "gzip")]), NO_REDACTION)
    assert entry["_agentshark"]["response"]["content_decoded"] is False
    back = _read(entry)
    assert back.response is not None and back.response.body.content_decoded is False
    assert back.response.body.data() == garbage


def test_redaction_keeps_the_chunks_adding_up() -> None:
    for split in (False, True):
        events = SSE if not split else [SSE[0] + SSE[1][:20], SSE[1][20:], SSE[2]]
        pieces = [(T0 + i, p) for i, p in enumerate(events)]
        entry = har_entry(_exchange(pieces, []), redactor(True))
        text = json.dumps(entry)
        assert KEY not in text and KEY[8:24] not in text
        chunks = entry["_agentshark"]["response"]["chunks"]
        body = entry["response"]["content"]["text"].encode()
        assert sum(n for _, n in chunks) == len(body)
        assert [t for t, _ in chunks] == [t for t, _ in pieces]
        back = _read(entry)
        assert back.response is not None and len(back.response.body.pieces) == 3


def test_websocket_messages_are_kept_with_their_times() -> None:
    exchange = _exchange([], [])
    assert exchange.response is not None
    exchange.response.status, exchange.upgrade = 101, "websocket"
    exchange.response.headers = [("upgrade", "websocket")]
    texts = [b'{"type": "session.update"}', KEY.encode()]
    exchange.messages = [
        WsRecord(
            message=WsMessage(
                direction=i,
                opcode=TEXT,
                payload=t,
                size=len(t),
                wire_size=len(t),
                frames=1,
                first_ts=T0 + i,
                last_ts=T0 + i,
                offset=i,
            )
        )
        for i, t in enumerate(texts)
    ]
    exchange.session_complete = False
    entry = har_entry(exchange, redactor(True))
    assert KEY not in json.dumps(entry)
    back = _read(entry)
    assert back.messages is not None and [r.message.first_ts for r in back.messages] == [T0, T0 + 1]
    assert back.messages[0].message.payload == texts[0]
    assert back.session_complete is False and not back.complete


def test_a_bad_extension_is_said_and_the_standard_fields_used() -> None:
    entry = har_entry(_exchange([(T0, SSE[0])], []), NO_REDACTION)
    entry["_agentshark"]["response"]["chunks"] = [[T0, 3]]
    entry["_agentshark"]["request"]["started"] = "soon"
    back = _read(entry)
    codes = [d.code for d in back.diagnostics]
    assert codes == ["har.bad_extension"]
    assert "response.chunks" in back.diagnostics[0].message
    assert back.response is not None and back.response.body.data() == SSE[0]


def test_the_file_is_a_whole_har_after_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "rec.har"
    har = HarFile(path)
    assert json.loads(path.read_text())["log"]["entries"] == []
    for n in range(1, 4):
        har.add(har_entry(_exchange([(T0, SSE[0])], []), NO_REDACTION))
        doc = json.loads(path.read_text())
        assert len(doc["log"]["entries"]) == n
        assert doc["log"]["creator"]["name"] == "agentshark"
    har.close()
    assert len(json.loads(path.read_text())["log"]["entries"]) == 3
