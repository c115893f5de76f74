"""The events of body framings, and the interface every framing decoder has.

Events carry ``ts``, the arrival time of the piece that completed them, and ``offset``, the
byte offset in the (content-decoded) body where they start, so every normalized value built
from them can say where it came from. A Diagnostic about an event comes right before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias

import orjson

from agentshark.errors import Diagnostic


@dataclass(frozen=True, slots=True, kw_only=True)
class SseEvent:
    """One dispatched server-sent event.

    ``event`` is ``"message"`` when the block had no ``event`` field (WHATWG). ``id`` is the
    last event ID buffer at dispatch, as EventSource exposes it in ``lastEventId`` (it persists
    from an earlier event when this one has no ``id`` field; None when no ``id`` was ever
    seen). ``retry`` is the ``retry`` field given in this block, if any. ``complete`` is False
    for an event cut by the end of the body (the spec discards it; we keep the evidence).
    """

    event: str
    data: str
    id: str | None
    retry: int | None
    ts: float
    offset: int
    complete: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class SseComment:
    """A comment line (``: text``); ``text`` is what follows the colon, one leading space
    removed (``: OPENROUTER PROCESSING`` -> ``OPENROUTER PROCESSING``)."""

    text: str
    ts: float
    offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class JsonDocument:
    """One JSON text of a stream (an NDJSON line, an element of a streamed JSON array), kept
    raw: parsing is lazy. ``complete`` is False when the body ended inside it."""

    raw: bytes
    ts: float
    offset: int
    complete: bool = True

    def value(self) -> object:
        """The parsed document; raises ``orjson.JSONDecodeError`` when it is not JSON."""
        return orjson.loads(self.raw)


@dataclass(frozen=True, slots=True, kw_only=True)
class EventStreamMessage:
    """One message of the AWS event stream framing (``application/vnd.amazon.eventstream``).

    Header values are typed: bool, int (byte, short, int, long; timestamps in milliseconds
    since the epoch), bytes, str, or :class:`uuid.UUID`.
    """

    headers: dict[str, object]
    payload: bytes
    ts: float
    offset: int

    @property
    def message_type(self) -> str | None:
        """``:message-type``: ``event``, ``exception`` or ``error``."""
        return self._str(":message-type")

    @property
    def event_type(self) -> str | None:
        """``:event-type`` (``contentBlockDelta``, ``chunk``...), or ``:exception-type`` for
        an exception message."""
        return self._str(":event-type") or self._str(":exception-type")

    def _str(self, name: str) -> str | None:
        value = self.headers.get(name)
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class GrpcMessage:
    """One length-prefixed message. ``payload`` is decompressed (None when it could not be:
    see the Diagnostic before it); ``trailers`` is set for a gRPC-Web trailers frame."""

    payload: bytes | None
    size: int  # decompressed size (the wire's when not decompressed)
    wire_size: int
    compressed: bool
    ts: float
    offset: int
    complete: bool = True
    truncated: bool = False
    trailers: list[tuple[str, str]] | None = None


FramingEvent: TypeAlias = SseEvent | SseComment | JsonDocument | EventStreamMessage | GrpcMessage
FramingOutput: TypeAlias = FramingEvent | Diagnostic


class FramingDecoder(Protocol):
    """A sans-I/O framing decoder: bytes in, events and Diagnostics out, never an exception.

    ``feed`` returns what the bytes so far complete, stamped with ``ts``; ``close`` says the
    body ended and returns what was pending (partial events, truncation Diagnostics).
    """

    def feed(self, data: bytes, ts: float) -> Sequence[FramingOutput]: ...

    def close(self, ts: float) -> Sequence[FramingOutput]: ...


def at(location: str, offset: int) -> str:
    """A Diagnostic location: the caller's ``location`` (exchange, direction) plus a body
    byte offset."""
    return f"{location} byte {offset}" if location else f"byte {offset}"
