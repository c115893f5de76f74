"""Exchanges -> a HAR 1.2 file (http://www.softwareishard.com/blog/har-12-spec/), as
``agentshark proxy -w FILE.har`` records them, readable by every HAR tool and read back by
:mod:`agentshark.sources.har` into the same exchanges.

Each entry holds the standard fields (``startedDateTime``, ``timings`` to the millisecond,
``content.text`` decoded as the spec wants it: the response's content codings undone, base64
when the bytes are not UTF-8) and the ``_agentshark`` extension with the precise times and the
response's chunks as they arrived (:mod:`agentshark.sources.har_ext` documents it), and the
WebSocket messages of an upgraded exchange as ``_webSocketMessages`` (as Chrome writes them).

Redaction (the one :class:`~agentshark.output.redact.Redactor` of every writer): header
values, the URL and the text of bodies and text messages go through it before they are
written, so the file holds no credential unless the redactor is :data:`NO_REDACTION`
(``--no-redact``). A body is redacted whole (a secret split across two chunks is found; in
an SSE stream, one split across the deltas of several events too), and
its chunk sizes are those of the redacted text: each chunk redacted alone when that gives the
same text (the common case: no secret, or none cut by a chunk boundary), else the original
boundaries kept where the redacted text still reaches them. Binary bodies (not UTF-8) are
redacted as Latin-1 text, so ASCII credentials in them are found too.

:class:`HarFile` keeps the file a valid HAR document after every entry: the entries are
followed by the document's closing brackets, and each new entry is written over them, with
the brackets again after it (a process killed between two entries leaves a whole file; one
killed while writing an entry, the entries before it and a cut one).
"""

from __future__ import annotations

import base64
import codecs
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import parse_qsl, urlsplit

import orjson

from agentshark import __version__
from agentshark.framing.websocket import BINARY, WsMessage
from agentshark.http.content import decode_body
from agentshark.model import Body, Exchange, Headers, Request, Response, header
from agentshark.output.redact import Redactor
from agentshark.output.redact_stream import redact_split
from agentshark.sources.har_ext import EXTENSION

__all__ = ["HarFile", "har_entry"]

Pieces = list[tuple[float, bytes]]
_CLOSING = b"\n]}}\n"


def har_entry(exchange: Exchange, redact: Redactor) -> dict[str, Any]:
    """The HAR entry of ``exchange``, redacted by ``redact``."""
    req, resp = exchange.request, exchange.response
    assert req is not None  # the proxy and flow files always have the request
    started = req.started or 0.0
    ext: dict[str, Any] = {"version": 1, "request": _times(req)}
    entry: dict[str, Any] = {
        "startedDateTime": _iso(started),
        "time": -1,
        "request": _request(req, redact),
        "response": _no_response(req),
        "cache": {},
        "timings": {"send": _ms(started, req.ended), "wait": -1, "receive": -1},
    }
    if resp is not None:
        entry["response"], ext["response"] = _response(resp, req, redact)
        entry["timings"]["wait"] = _ms(req.ended or started, resp.started)
        entry["timings"]["receive"] = _ms(resp.started, resp.ended)
        end = resp.ended if resp.ended is not None else resp.started
        entry["time"] = _ms(started, end)
    if exchange.connection is not None:
        entry["connection"] = exchange.connection
    if exchange.messages is not None:
        entry["_webSocketMessages"] = [_ws(r.message, redact) for r in exchange.messages]
        ext["session_complete"] = exchange.session_complete
    if exchange.diagnostics:
        ext["diagnostics"] = [redact.json(d.to_json()) for d in exchange.diagnostics]
    entry[EXTENSION] = ext
    return entry


def _iso(ts: float) -> str:
    when = datetime.fromtimestamp(ts, UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _ms(start: float | None, end: float | None) -> float:
    if start is None or end is None:
        return -1
    return round(max(end - start, 0.0) * 1000, 3)


def _times(message: Request | Response) -> dict[str, Any]:
    return {"started": message.started, "ended": message.ended, "complete": message.complete}


def _headers(headers: Headers, redact: Redactor) -> list[dict[str, str]]:
    return [{"name": k, "value": redact.header(k, v)} for k, v in headers]


def _request(req: Request, redact: Redactor) -> dict[str, Any]:
    url = redact.url(req.url)
    out: dict[str, Any] = {
        "method": req.method,
        "url": url,
        "httpVersion": req.version,
        "headers": _headers(req.headers, redact),
        "queryString": [{"name": k, "value": v} for k, v in parse_qsl(urlsplit(url).query)],
        "cookies": [],
        "headersSize": -1,
        "bodySize": -1,
    }
    if req.body.size:
        data, _ = _redacted(req.body.pieces, redact)
        out["postData"] = {"mimeType": header(req.headers, "content-type") or "", **_text(data)}
    return out


def _no_response(req: Request) -> dict[str, Any]:
    """The response of an entry that has none (HAR wants one: status 0)."""
    return {
        "status": 0,
        "statusText": "",
        "httpVersion": req.version,
        "headers": [],
        "cookies": [],
        "content": {"size": 0, "mimeType": ""},
        "redirectURL": "",
        "headersSize": -1,
        "bodySize": -1,
    }


def _response(
    resp: Response, req: Request, redact: Redactor
) -> tuple[dict[str, Any], dict[str, Any]]:
    pieces, decoded = _content(resp.body, header(resp.headers, "content-encoding"))
    data, sizes = _redacted(pieces, redact)
    content: dict[str, Any] = {
        "size": len(data),
        "mimeType": header(resp.headers, "content-type") or "",
    }
    if resp.body.size:
        content.update(_text(data))
    out = {
        "status": resp.status,
        "statusText": resp.reason,
        "httpVersion": resp.version or req.version,
        "headers": _headers(resp.headers, redact),
        "cookies": [],
        "content": content,
        "redirectURL": redact.url(header(resp.headers, "location") or ""),
        "headersSize": -1,
        "bodySize": -1,
    }
    ext = _times(resp)
    ext["content_decoded"] = decoded
    ext["chunks"] = sizes
    return out, ext


def _content(body: Body, coding: str | None) -> tuple[Pieces, bool]:
    """The body's pieces with their content codings undone, and whether they are (False:
    they did not decode, or not to the end: the bytes as received)."""
    if not coding or body.content_decoded:
        return body.pieces, True
    decoded = decode_body(body, coding)
    if not decoded.decoded or decoded.diagnostics:  # not at all, or not whole: as received
        return body.pieces, False
    return decoded.pieces, True


def _text(data: bytes) -> dict[str, str]:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"text": base64.b64encode(data).decode(), "encoding": "base64"}


def _redacted(pieces: Pieces, redact: Redactor) -> tuple[bytes, list[list[float | int]]]:
    """The body of ``pieces`` redacted, and its chunks ([arrival time, size]) in it."""
    data = b"".join(p for _, p in pieces)
    sizes: list[list[float | int]] = [[ts, len(p)] for ts, p in pieces]
    try:
        text = data.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError:
        text, encoding = data.decode("latin-1"), "latin-1"
    whole = redact.text(_split_secrets(text) if redact.enabled else text)
    if whole == text:
        return data, sizes
    out = whole.encode(encoding, "replace")
    decoder = codecs.getincrementaldecoder(encoding)()
    texts = [decoder.decode(p, final=i == len(pieces) - 1) for i, (_, p) in enumerate(pieces)]
    alone = [redact.text(t).encode(encoding, "replace") for t in texts]
    if b"".join(alone) == out:
        return out, [[ts, len(a)] for (ts, _), a in zip(pieces, alone, strict=True)]
    kept: list[list[float | int]] = []
    left = len(out)
    for i, (ts, size) in enumerate(sizes):
        n = left if i == len(sizes) - 1 else min(int(size), left)
        kept.append([ts, n])
        left -= n
    return out, kept


_LINES = re.compile(r"(\r\n|\r|\n)")  # SSE line ends (CRLF, CR, LF; not str.splitlines)


def _split_secrets(text: str) -> str:
    """An SSE body with the secrets a stream split across events' deltas redacted
    (:func:`~agentshark.output.redact_stream.redact_split`, one event per ``data:`` line)."""
    if not (text.startswith("data:") or "\ndata:" in text):
        return text
    tokens = _LINES.split(text)
    at = [i for i in range(0, len(tokens), 2) if tokens[i].startswith("data:")]
    values = [tokens[i][5:].removeprefix(" ") for i in at]
    events = redact_split([{"data": v} for v in values])
    for i, value, event in zip(at, values, events, strict=True):
        if event["data"] != value:
            tokens[i] = "data: " + event["data"]
    return "".join(tokens)


def _ws(message: WsMessage, redact: Redactor) -> dict[str, Any]:
    payload = message.payload or b""
    if message.opcode == BINARY:
        data = base64.b64encode(payload).decode()
    else:
        data = redact.text(payload.decode("utf-8", "replace"))
    return {
        "type": "send" if message.direction == 0 else "receive",
        "time": message.first_ts,
        "opcode": message.opcode,
        "data": data,
    }


class HarFile:
    """A HAR file written entry by entry, a whole document after each (see the module
    docstring). ``path`` is created or truncated."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.entries = 0
        self._out: BinaryIO = self.path.open("wb")
        head = {
            "log": {"version": "1.2", "creator": {"name": "agentshark", "version": __version__}}
        }
        text = orjson.dumps(head)
        self._out.write(text[: -len(b"}}")] + b',"entries":[')
        self._end = self._out.tell()
        self._out.write(_CLOSING)
        self._out.flush()

    def add(self, entry: dict[str, Any]) -> None:
        self._out.seek(self._end)
        self._out.write((b",\n" if self.entries else b"\n") + orjson.dumps(entry))
        self._end = self._out.tell()
        self._out.write(_CLOSING)
        self._out.truncate()
        self._out.flush()
        self.entries += 1

    def close(self) -> None:
        if not self._out.closed:
            self._out.close()
