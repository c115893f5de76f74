"""The HTTP event vocabulary, shared by every HTTP version.

HTTP/1.1 numbers the messages of a connection (``stream`` 0, 1, 2... in request order, a
response taking the number of the request it answers); HTTP/2 uses its stream ids. Above
``http/`` nothing needs to know which version produced an event.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshark.model import Headers


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestHeaders:
    stream: int
    method: str
    target: str
    version: str
    headers: Headers
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class InformationalResponse:
    """A 1xx response head other than 101 Switching Protocols."""

    stream: int
    status: int
    reason: str
    headers: Headers
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseHeaders:
    stream: int
    status: int
    reason: str
    version: str
    headers: Headers
    ts: float


@dataclass(slots=True, kw_only=True)
class BodyData:
    """Body bytes of the request (``response`` False) or response, framing removed.

    Not frozen, unlike the other events: one is built per body segment, and a frozen
    dataclass's ``__init__`` costs twice as much. Treat it as immutable all the same.
    """

    stream: int
    response: bool
    data: bytes
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class BodyGap:
    """``size`` bytes of a body were never captured, from byte ``offset`` of the direction's
    stream on (-1: not known)."""

    stream: int
    response: bool
    size: int
    ts: float
    offset: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageEnded:
    """The end of a request or response. ``complete`` False: it ended without its framing's
    end (connection closed early, reset, gap), so the body may be cut short."""

    stream: int
    response: bool
    ts: float
    complete: bool
    trailers: Headers
    transfer_bytes: int | None = None  # body bytes on the wire including chunk framing


@dataclass(frozen=True, slots=True, kw_only=True)
class GapAffected:
    """A capture gap decided the fate of message ``stream`` (HTTP/1 pairing): its exchange
    cannot be complete. ``code`` says how (``http.response_lost``: the response was in the
    gap; ``http.request_lost``: the response answers a request in the gap;
    ``http.unpaired_response``: the evidence cannot tell which request it answers), ``message``
    names the gap (direction, offset, size). ``final``: no more events come for the exchange."""

    stream: int
    response: bool
    code: str
    message: str
    ts: float
    final: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtocolSwitched:
    """A 101 response (or an accepted CONNECT): the bytes after it are another protocol."""

    stream: int
    protocol: str  # lowercased Upgrade token, or "tunnel" for CONNECT
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ParseError:
    """The bytes stopped being HTTP (HTTP/1: the parser skips to the next message start), or
    a part of one message could not be decoded (HTTP/2: ``stream`` names the stream)."""

    response: bool
    message: str
    offset: int  # byte offset in the direction's stream
    ts: float
    stream: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamReset:
    """HTTP/2 RST_STREAM: the stream's exchange ends incomplete (RFC 9113 §6.4)."""

    stream: int
    response: bool  # True when the server sent it
    error_code: int
    error_name: str  # "CANCEL", "PROTOCOL_ERROR"... or "0x1234" for unknown codes
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionGoAway:
    """HTTP/2 GOAWAY (RFC 9113 §6.8): streams above ``last_stream`` were not processed."""

    response: bool
    last_stream: int
    error_code: int
    error_name: str
    debug_data: bytes
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class PushPromised:
    """PUSH_PROMISE: the server will push ``promised_stream`` as the answer to the request in
    ``headers``; the pushed response arrives as ResponseHeaders on that stream. Over HTTP/3
    (RFC 9114 §4.6) ``promised_stream`` is the push stream's QUIC stream id, the push id
    being what ties them on the wire."""

    stream: int
    promised_stream: int
    headers: Headers
    ts: float
    version: str = "HTTP/2"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownFrame:
    """A frame of a type HTTP/2 does not define, kept raw (RFC 9113 §5.5 says: ignore it)."""

    response: bool
    frame_type: int
    stream: int
    flags: int
    payload: bytes
    ts: float


@dataclass(frozen=True, slots=True, kw_only=True)
class DatagramReceived:
    """An HTTP datagram (RFC 9297 §2.1) of request stream ``stream``: ``size`` payload
    bytes after the quarter stream id, sent by the server when ``response``."""

    stream: int
    response: bool
    size: int
    ts: float


HttpEvent = (
    RequestHeaders
    | InformationalResponse
    | ResponseHeaders
    | BodyData
    | BodyGap
    | MessageEnded
    | GapAffected
    | ProtocolSwitched
    | ParseError
    | StreamReset
    | ConnectionGoAway
    | PushPromised
    | UnknownFrame
    | DatagramReceived
)
