"""The parsing state of one direction of an HTTP/1.x connection, and what it says about
bytes that are not HTTP: the states of :class:`~agentshark.http.h1.H1Connection`'s loop, a
direction's :class:`Direction`, the :class:`~agentshark.http.events.ParseError` texts, and the
search for the next message start after a gap or bad bytes (:func:`resync`)."""

from __future__ import annotations

from enum import Enum, auto

from agentshark.http.events import HttpEvent, ParseError
from agentshark.http.h1_syntax import REQUEST_START, STATUS_START
from agentshark.model import Headers

__all__ = [
    "DIRECT_STATES",
    "RESYNC_WINDOW",
    "Direction",
    "State",
    "bad_head",
    "bad_length",
    "resync",
    "skipped",
    "starts_message",
]

RESYNC_WINDOW = 1 << 20  # bytes kept while looking for the next message start


class State(Enum):
    HEAD = auto()  # waiting for a start line and headers
    LENGTH = auto()  # body of known length
    CHUNK_SIZE = auto()  # chunked: expecting a chunk-size line
    CHUNK_DATA = auto()  # chunked: inside chunk data
    CHUNK_CRLF = auto()  # chunked: the CRLF after chunk data
    TRAILERS = auto()  # chunked: trailer section after the last chunk
    UNTIL_CLOSE = auto()  # close-delimited response body
    SWITCHED = auto()  # the connection speaks another protocol now
    RESYNC = auto()  # lost: looking for the next message start


DIRECT_STATES = frozenset(
    {State.LENGTH, State.CHUNK_DATA, State.CHUNK_SIZE, State.CHUNK_CRLF, State.UNTIL_CLOSE}
)


class Direction:
    """Parsing state of one direction. Plain attributes: this runs per segment."""

    __slots__ = (
        "acked",
        "after_gap",
        "buf",
        "buf_acked",
        "buf_ts",
        "chunked_bytes",
        "leftover",
        "offset",
        "remaining",
        "response",
        "state",
        "stream",
        "switched_bytes",
    )

    def __init__(self, response: bool) -> None:
        self.response = response
        self.state = State.HEAD
        self.buf = b""
        self.buf_ts = 0.0  # arrival time of the first byte in buf
        self.acked = -1  # what the segment being parsed acknowledged of the other direction
        self.buf_acked = -1  # ... and the one that carried the first byte in buf
        self.after_gap = False  # resynchronizing after a capture gap (not a parse error)
        self.remaining = 0
        self.stream = 0  # stream number of the message being parsed
        self.offset = 0  # stream offset of the first byte not yet consumed
        self.chunked_bytes = 0  # wire bytes of the current chunked body
        self.switched_bytes = 0
        self.leftover = b""  # bytes after a protocol switch, kept for the next parser


def resync(d: Direction, ts: float, out: list[HttpEvent]) -> bool:
    pattern = STATUS_START if d.response else REQUEST_START
    m = pattern.search(d.buf)
    if m is None:
        if len(d.buf) > RESYNC_WINDOW:
            drop = len(d.buf) - 64  # keep a tail: a start line may straddle the boundary
            out.append(skipped(d, drop, ts))
            d.buf = d.buf[drop:]
            d.offset += drop
        return False
    skip = m.start(1)
    if skip:
        out.append(skipped(d, skip, ts))
        d.buf = d.buf[skip:]
        d.offset += skip
    d.state = State.HEAD
    d.after_gap = False
    d.buf_ts = ts
    d.buf_acked = d.acked
    return True


def starts_message(d: Direction, data: bytes) -> bool:
    """Does a segment start with a message? After a gap, the next message is looked for
    at segment starts too (senders start each message in a segment of its own), so it is
    found even right behind the last byte of a body the gap made unframeable."""
    pattern = STATUS_START if d.response else REQUEST_START
    return pattern.match(data) is not None


def skipped(d: Direction, n: int, ts: float) -> ParseError:
    what = "response" if d.response else "request"
    return ParseError(
        response=d.response,
        message=f"skipped {n} bytes that are not part of a recognizable HTTP {what}",
        offset=d.offset,
        ts=ts,
    )


def bad_head(d: Direction, head: bytes, ts: float) -> ParseError:
    first = head.split(b"\n", 1)[0][:80]
    return ParseError(
        response=d.response,
        message=f"not an HTTP/1.x {'status' if d.response else 'request'} line: {first!r}",
        offset=d.offset,
        ts=ts,
    )


def bad_length(d: Direction, headers: Headers, ts: float) -> ParseError:
    values = [v for k, v in headers if k.lower() == "content-length"]
    return ParseError(
        response=d.response,
        message=f"invalid Content-Length {values!r}",
        offset=d.offset,
        ts=ts,
    )
