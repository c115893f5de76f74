"""The normalized types every stage after ``http`` works with.

An :class:`Exchange` is one HTTP request with its response, whatever carried it (HTTP/1.1 or
HTTP/2 on a captured connection, a HAR entry, a VCR interaction), or one operation of another
TCP protocol (a SQL statement, a Redis command: ``Exchange.operation``, see
:mod:`agentshark.wire`). Bodies keep the bytes as
they arrived, piece by piece with arrival times, after transfer framing (chunked, DATA frames)
is removed and before content coding (gzip, br...) is undone; ``http.content`` decodes them on
demand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentshark.errors import Diagnostic

if TYPE_CHECKING:
    from agentshark.framing.websocket import WsMessage
    from agentshark.wire.events import Operation

Headers = list[tuple[str, str]]
SourceFormat = Literal["pcap", "pcapng", "har", "vcr"]


def header(headers: Headers, name: str) -> str | None:
    """The first value of header ``name`` (case-insensitive), or None."""
    lname = name.lower()
    for k, v in headers:
        if k.lower() == lname:
            return v
    return None


def header_values(headers: Headers, name: str) -> list[str]:
    lname = name.lower()
    return [v for k, v in headers if k.lower() == lname]


_EXCHANGE_TLS_FACTS = (
    "version",
    "cipher_suite",
    "sni",
    "alpn",
    "client_random",
    "resumed",
    "unknown",  # the facts above that a lost hello took (absent when none)
)


class TlsFacts(Protocol):
    """What an exchange records of the TLS session that carried it (never key material)."""

    def to_json(self) -> dict[str, object]: ...


def exchange_tls_facts(tls: TlsFacts | None) -> dict[str, object] | None:
    """The session facts an exchange carries (``Exchange.tls``), read when the exchange is
    made; the running counters (records, key updates) and the handshake's own details stay on
    the connection's report."""
    if tls is None:
        return None
    facts = tls.to_json()
    return {k: facts[k] for k in _EXCHANGE_TLS_FACTS if k in facts}


@dataclass(slots=True, kw_only=True)
class Body:
    """A message body as it crossed the wire, minus transfer framing.

    ``pieces`` are (arrival time, bytes) in order. ``gap_bytes`` counts bytes lost to capture
    gaps inside the body. ``content_decoded`` says whether the source already undid the
    ``Content-Encoding``: False for bytes off the wire (decode as declared, a mismatch is a
    diagnostic), True when the source did (a HAR file's ``content.text``), None when it is
    unknown (VCR cassettes that keep the header over a decoded body: decode only bytes that
    really are encoded). ``transfer_bytes`` is the size on the wire including chunk framing,
    when known.
    """

    pieces: list[tuple[float, bytes]] = field(default_factory=list)
    size: int = 0
    gap_bytes: int = 0
    transfer_bytes: int | None = None
    content_decoded: bool | None = False

    def __post_init__(self) -> None:
        if self.pieces and not self.size:  # built with pieces: count them
            self.size = sum(len(p) for _, p in self.pieces)

    def append(self, ts: float, data: bytes) -> None:
        if data:
            self.pieces.append((ts, data))
            self.size += len(data)

    def data(self) -> bytes:
        if len(self.pieces) == 1:
            return self.pieces[0][1]
        return b"".join(p for _, p in self.pieces)


@dataclass(slots=True, kw_only=True)
class Interim:
    """A 1xx informational response (100 Continue, 103 Early Hints...)."""

    status: int
    reason: str
    headers: Headers
    ts: float | None


@dataclass(slots=True, kw_only=True)
class Request:
    method: str
    target: str  # as sent: origin-form path?query, absolute-form, authority-form or '*'
    url: str  # absolute URL: scheme and authority from Host / :authority / the source
    version: str  # "HTTP/1.1", "HTTP/2"...
    headers: Headers
    body: Body
    started: float | None  # first byte of the request head
    ended: float | None  # last byte of the request body
    trailers: Headers = field(default_factory=list)
    complete: bool = False


@dataclass(slots=True, kw_only=True)
class Response:
    status: int  # 0: the transport has no status (stdio); reported as null
    reason: str
    version: str
    headers: Headers
    body: Body
    started: float | None  # first byte of the final response head
    ended: float | None
    trailers: Headers = field(default_factory=list)
    interim: list[Interim] = field(default_factory=list)
    complete: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class WsRecord:
    """One WebSocket message of an exchange's session, with the Diagnostics about it."""

    message: WsMessage
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __reduce__(self) -> tuple[Callable[..., WsRecord], tuple[Any, ...]]:
        """Pickled as its two fields, as :class:`~agentshark.framing.websocket.WsMessage`
        is (not by the frozen dataclass's ``fields()`` walk: a session holds thousands)."""
        return ws_record, (self.message, self.diagnostics)


_set_record_message = getattr(WsRecord, "message").__set__  # noqa: B009 - a slot descriptor
_set_record_diagnostics = getattr(WsRecord, "diagnostics").__set__  # noqa: B009


def ws_record(message: WsMessage, diagnostics: list[Diagnostic]) -> WsRecord:
    """``WsRecord(message=..., diagnostics=...)`` at half the cost (slot descriptors, not a
    dataclass ``__init__`` with its default factory)."""
    record: WsRecord = object.__new__(WsRecord)
    _set_record_message(record, message)
    _set_record_diagnostics(record, diagnostics)
    return record


@dataclass(frozen=True, slots=True, kw_only=True)
class WsLoss:
    """Not a message: bytes of ``direction`` were lost at this point of a session as it was
    read (the frame reader's ``ws.gap``). The message after them, if any, comes later with
    the same diagnostic; the call readers count the loss here, where it happened."""

    direction: int
    diagnostic: Diagnostic


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpDatagram:
    """An HTTP datagram of an exchange's request stream (RFC 9297 §2: a QUIC DATAGRAM frame
    whose quarter stream id names the stream): who sent it, its payload's size, its time.
    The payload itself is not kept (what it carries is the extension's: a UDP proxy's
    packets, WebTransport's)."""

    direction: int  # 0 client, 1 server
    size: int
    ts: float


@dataclass(slots=True, kw_only=True)
class Exchange:
    """One request and its response (None when the capture holds no response).

    ``request`` is None only when a response was captured without its request (a capture
    that starts mid-connection). ``complete`` is True only when both messages were seen
    whole, with their framing's end and no gap.
    """

    id: str
    source: int  # index into the report's sources
    connection: str | None
    transport: str  # "http/1.1", "h2", ...
    request: Request | None
    response: Response | None
    tls: dict[str, object] | None = None
    stream: int | None = None  # HTTP/2 stream id; HTTP/1: the request's place on the connection
    upgrade: str | None = None  # protocol switched to by a 101 response ("websocket", "h2c")
    diagnostics: list[Diagnostic] = field(default_factory=list)
    extras: dict[str, object] = field(default_factory=dict)  # source-specific data kept raw
    messages: list[WsRecord] | None = None  # a WebSocket session's messages, both directions
    session_complete: bool = True  # False: the session after the handshake was not all seen
    operation: Operation | None = None  # a non-HTTP TCP protocol's unit (a SQL statement...)
    datagrams: list[HttpDatagram] = field(default_factory=list)  # HTTP/3 (RFC 9297)

    @property
    def complete(self) -> bool:
        return (
            self.request is not None
            and self.request.complete
            and self.response is not None
            and self.response.complete
            and self.session_complete
            and (self.messages is None or all(r.message.complete for r in self.messages))
        )

    @property
    def started(self) -> float | None:
        if self.request is not None and self.request.started is not None:
            return self.request.started
        return self.response.started if self.response is not None else None
