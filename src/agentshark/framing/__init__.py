"""Body framing: a content-decoded body (pieces with arrival times) -> stream events.

Input: the pieces of :class:`agentshark.http.content.DecodedBody`. Output: the events of
:mod:`agentshark.framing.events` (:class:`SseEvent`, :class:`SseComment`,
:class:`JsonDocument`, :class:`EventStreamMessage`) and Diagnostics, each event stamped with
the arrival time of the piece that completed it and its byte offset in the body.

Framings, each a sans-I/O decoder (``feed(data, ts)`` / ``close(ts)``):

=================== ============================================ ===========================
name                content types                                decoder
=================== ============================================ ===========================
``sse``             ``text/event-stream``                        :class:`SseDecoder`
``ndjson``          ``application/x-ndjson``, ``application/``   :class:`NdjsonDecoder`
                    ``ndjson``, ``jsonl``, ``x-jsonlines``,
                    ``json-seq`` (RFC 7464, one record a line)
``json-array``      ``application/json`` + a streaming hint      :class:`JsonArrayDecoder`
``aws-eventstream`` ``application/vnd.amazon.eventstream``       :class:`EventStreamDecoder`
``grpc``            ``application/grpc[+proto|+json]``,          :class:`GrpcDecoder`
                    ``application/grpc-web[+proto|+json]``
=================== ============================================ ===========================
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from typing import Literal

import orjson

from agentshark.framing.events import (
    EventStreamMessage,
    FramingDecoder,
    FramingEvent,
    FramingOutput,
    JsonDocument,
    SseComment,
    SseEvent,
)
from agentshark.framing.eventstream import EventStreamDecoder
from agentshark.framing.grpc import GrpcDecoder
from agentshark.framing.jsonarray import JsonArrayDecoder
from agentshark.framing.ndjson import NdjsonDecoder
from agentshark.framing.sse import SseDecoder

__all__ = [
    "EventStreamDecoder",
    "EventStreamMessage",
    "FramingDecoder",
    "FramingEvent",
    "FramingName",
    "FramingOutput",
    "JsonArrayDecoder",
    "JsonDocument",
    "NdjsonDecoder",
    "SseComment",
    "SseDecoder",
    "SseEvent",
    "decode_stream",
    "detect_framing",
    "make_framing_decoder",
    "media_type",
]

FramingName = Literal["sse", "ndjson", "json-array", "aws-eventstream", "grpc"]

_BY_MEDIA_TYPE: dict[str, FramingName] = {
    "text/event-stream": "sse",
    "application/x-ndjson": "ndjson",
    "application/ndjson": "ndjson",
    "application/jsonl": "ndjson",
    "application/x-jsonl": "ndjson",
    "application/jsonlines": "ndjson",
    "application/x-jsonlines": "ndjson",
    "application/json-seq": "ndjson",
    "application/vnd.amazon.eventstream": "aws-eventstream",
    "application/grpc": "grpc",
    "application/grpc+proto": "grpc",
    "application/grpc+json": "grpc",
    "application/grpc-web": "grpc",
    "application/grpc-web+proto": "grpc",
    "application/grpc-web+json": "grpc",
}

_DECODERS: dict[str, Callable[..., FramingDecoder]] = {
    "sse": SseDecoder,
    "ndjson": NdjsonDecoder,
    "json-array": JsonArrayDecoder,
    "aws-eventstream": EventStreamDecoder,
    "grpc": GrpcDecoder,
}

_SSE_STARTS = (b"data:", b"event:", b"id:", b"retry:", b":")
_BOM = b"\xef\xbb\xbf"


def media_type(content_type: str | None) -> str | None:
    """``Content-Type`` without its parameters, lowercased (``text/event-stream``)."""
    if not content_type:
        return None
    return content_type.split(";", 1)[0].strip().lower() or None


def detect_framing(
    content_type: str | None, head: bytes, *, streaming_hint: bool = False
) -> FramingName | None:
    """The framing of a body, from its ``Content-Type`` and ``head`` (its first bytes after
    content decoding). None: not a stream (one document, or something unknown). Pass a few
    KiB (the first piece is fine): telling NDJSON from one JSON document needs the whole
    first line and the start of the next; the other framings show in their first 12 bytes.

    A stream content type is believed, except when the body is plainly one JSON document
    (an error object sent with ``text/event-stream`` or the event stream type). Without one
    (absent, ``application/json``, ``text/plain``, ``application/octet-stream``...) the
    bytes decide: SSE field lines, a valid AWS event stream prelude, several NDJSON lines.

    A body that is a JSON array is a ``json-array`` stream only with ``streaming_hint``: a
    plain JSON API may answer with an array too, and only the request tells them apart. Pass
    True when the request asked for a stream (Gemini ``:streamGenerateContent`` without
    ``alt=sse``, a request body with ``"stream": true``); the array's elements are then the
    stream's chunks.
    """
    declared = _BY_MEDIA_TYPE.get(media_type(content_type) or "")
    start = head.removeprefix(_BOM).lstrip()
    if declared == "sse" or declared == "aws-eventstream":
        if start[:1] in (b"{", b"["):
            return _sniff(start, head, streaming_hint)
        return declared
    if declared is not None:
        return declared
    return _sniff(start, head, streaming_hint)


def _sniff(start: bytes, head: bytes, streaming_hint: bool) -> FramingName | None:
    if start.startswith(_SSE_STARTS):
        return "sse"
    if _is_eventstream_prelude(head):
        return "aws-eventstream"
    if start.startswith(b"["):
        return "json-array" if streaming_hint else None
    if start.startswith(b"{") and _several_json_lines(start):
        return "ndjson"
    return None


def _is_eventstream_prelude(head: bytes) -> bool:
    if len(head) < 12:
        return False
    total = int.from_bytes(head[0:4], "big")
    headers = int.from_bytes(head[4:8], "big")
    crc = int.from_bytes(head[8:12], "big")
    return 16 <= total <= 16 << 20 and headers <= total - 16 and zlib.crc32(head[:8]) == crc


def _several_json_lines(start: bytes) -> bool:
    """The first line is a whole JSON text and another one follows (a pretty-printed
    document's first line is not JSON on its own)."""
    first, newline, rest = start.partition(b"\n")
    if not newline or not rest.lstrip():
        return False
    try:
        orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return True


def make_framing_decoder(
    name: str, *, location: str = "", encoding: str | None = None
) -> FramingDecoder:
    """A fresh decoder for framing ``name`` (one of :data:`FramingName`); ``location`` prefixes
    the locations of its Diagnostics; ``encoding`` is gRPC's ``grpc-encoding`` of the body's
    message (the other framings take none). ValueError for an unknown name."""
    factory = _DECODERS.get(name)
    if factory is None:
        raise ValueError(f"unknown framing {name!r}; known: {', '.join(_DECODERS)}")
    if name == "grpc":
        return factory(location=location, encoding=encoding)
    return factory(location=location)


def decode_stream(
    pieces: Iterable[tuple[float, bytes]],
    framing: str,
    *,
    location: str = "",
    encoding: str | None = None,
) -> list[FramingOutput]:
    """Feed every piece with its arrival time, then close with the last one."""
    decoder = make_framing_decoder(framing, location=location, encoding=encoding)
    out: list[FramingOutput] = []
    ts = 0.0
    for ts, data in pieces:
        out.extend(decoder.feed(data, ts))
    out.extend(decoder.close(ts))
    return out
