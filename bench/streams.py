"""Where a recorded response body is cut into the writes a real server makes.

The replay server sends an entry with ``chunk_ends`` one piece per write (an HTTP/1.1 chunk, an
HTTP/2 DATA frame, over TLS its own record), ``--sse-delay-ms`` apart, so that each piece is its
own TCP segment as in a real token stream:

* ``sse``: one event per write, each ending with its blank line
  (``genlib.split_sse_events``; WHATWG event-stream rules, CRLF included);
* ``json-array`` (Gemini ``:streamGenerateContent`` without ``alt=sse``): one array element per
  write, each with the separator before it (``[`` or ``,`` and the whitespace around it); the
  closing ``]`` is the last write;
* ``eventstream`` (AWS ``application/vnd.amazon.eventstream``): one frame per write, byte-exact.
  A frame's first 4 bytes are its total length, big-endian (prelude: total length, headers
  length, prelude CRC; then headers, payload and the message CRC: 16 bytes at least); a body
  whose frames do not tile it exactly is not replayable as frames.

A gzip stream (``Content-Encoding: gzip``; the corpus holds Gemini JSON-array streams so) is
decompressed, cut, and compressed again with a sync flush after each piece, as a streaming gzip
server does: the wire bytes are new, the decoded body is the recorded one byte for byte.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass

import genlib

_WHITESPACE = " \t\r\n"
_CONTENT_TYPES = {
    "json": "application/json",
    "json-array": "application/json; charset=UTF-8",
    "sse": "text/event-stream",
    "eventstream": "application/vnd.amazon.eventstream",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Cut:
    """A body ready to send: ``body`` (the wire bytes), ``ends`` (where each write ends; the
    last is ``len(body)``), whether it is gzip, and the content type to send when the
    recording had none."""

    body: bytes
    ends: list[int]
    gzipped: bool
    content_type: str


def json_array_pieces(text: str) -> list[str] | None:
    """``text`` (one JSON array) cut after each element: the first piece is ``[`` and the first
    element, each next one the separator and its element, the last one the closing bracket
    (with what follows it). None when ``text`` is not a JSON array."""
    decoder = json.JSONDecoder()
    i = len(text) - len(text.lstrip(_WHITESPACE))
    if text[i : i + 1] != "[":
        return None
    i += 1
    pieces: list[str] = []
    start = 0
    while True:
        while i < len(text) and text[i] in _WHITESPACE:
            i += 1
        if text[i : i + 1] == "]":
            if text[i + 1 :].strip(_WHITESPACE):
                return None
            pieces.append(text[start:])
            return pieces
        if pieces:
            if text[i : i + 1] != ",":
                return None
            i += 1
            while i < len(text) and text[i] in _WHITESPACE:
                i += 1
        try:
            _, i = decoder.raw_decode(text, i)
        except ValueError:
            return None
        pieces.append(text[start:i])
        start = i


def eventstream_ends(body: bytes) -> list[int] | None:
    """The end offset of each AWS event-stream frame of ``body``, from the 4-byte big-endian
    total length of each prelude; None when the frames do not tile ``body`` exactly."""
    ends: list[int] = []
    pos = 0
    while pos < len(body):
        if len(body) - pos < 16:
            return None
        total = int.from_bytes(body[pos : pos + 4], "big")
        if total < 16 or pos + total > len(body):
            return None
        pos += total
        ends.append(pos)
    return ends


def _ends(pieces: list[bytes]) -> list[int]:
    ends: list[int] = []
    pos = 0
    for piece in pieces:
        pos += len(piece)
        ends.append(pos)
    return ends


def regzip(pieces: list[bytes]) -> list[bytes]:
    """``pieces`` gzip-compressed as one stream with a sync flush after each (the gzip header
    goes with the first piece, the trailer with the last)."""
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)
    out = [comp.compress(p) + comp.flush(zlib.Z_SYNC_FLUSH) for p in pieces]
    out[-1] += comp.flush()
    return out


def cut(body: bytes, framing: str, content_type: str) -> Cut | str:
    """``body`` (a recorded response body) cut for ``framing`` (``json``: one write), or the
    reason it cannot be replayed so."""
    gzipped = body[:2] == b"\x1f\x8b"
    ctype = _CONTENT_TYPES[framing]
    if framing == "eventstream":
        ends = eventstream_ends(body)
        if ends is None:
            return "event-stream frames do not tile the body"
        if "eventstream" not in content_type:
            return f"event stream served as {content_type or 'no content type'}"
        return Cut(body=body, ends=ends, gzipped=False, content_type=ctype)
    if framing == "sse" and "text/event-stream" not in content_type.lower() and content_type:
        return f"SSE stream served as {content_type}"
    plain = body
    if gzipped:
        try:
            plain = gzip.decompress(body)
        except (OSError, EOFError, zlib.error):
            return "broken gzip"
    try:
        text = plain.decode("utf-8")
    except UnicodeDecodeError:
        return "body is not UTF-8"
    if framing == "json":
        return Cut(body=body, ends=[len(body)], gzipped=gzipped, content_type=ctype)
    if framing == "sse":
        pieces = genlib.split_sse_events(plain)
    else:
        found = json_array_pieces(text)
        if found is None:
            return "not one JSON array"
        pieces = [p.encode("utf-8") for p in found]
    if not pieces:
        return "empty stream"
    if gzipped:
        pieces = regzip(pieces)
    return Cut(body=b"".join(pieces), ends=_ends(pieces), gzipped=gzipped, content_type=ctype)
