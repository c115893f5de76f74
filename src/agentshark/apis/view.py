"""What API families look at: an exchange's bodies decoded once, lazily.

Every family's ``match`` and ``parse`` read the same :class:`ExchangeView`, so a body is
content-decoded, JSON-parsed and split into stream events at most once per exchange, and
only when some family asks.
"""

from __future__ import annotations

from functools import cached_property
from urllib.parse import SplitResult, urlsplit

import orjson

from agentshark.apis.model import Json
from agentshark.errors import Diagnostic
from agentshark.framing import decode_stream, detect_framing
from agentshark.framing.events import FramingOutput, at
from agentshark.http.content import DEFAULT_DECODE_LIMIT, DecodedBody, decode_body
from agentshark.model import Body, Exchange, Headers, header


class ExchangeView:
    def __init__(self, exchange: Exchange, *, max_body: int = DEFAULT_DECODE_LIMIT) -> None:
        self.exchange = exchange
        self._max_body = max_body
        self.diagnostics: list[Diagnostic] = []

    # -- request --------------------------------------------------------------------------

    @cached_property
    def method(self) -> str:
        return self.exchange.request.method if self.exchange.request else ""

    @cached_property
    def _url(self) -> SplitResult | None:
        """The request URL split once for ``path``, ``query`` and ``host``. A URL that does
        not split (an authority such as ``[`` from a Host header: RFC 3986 §3.2.2 brackets
        an IPv6 literal) is a diagnostic, and the request target as sent stands in for it."""
        req = self.exchange.request
        if req is None:
            return None
        try:
            return urlsplit(req.url)
        except ValueError as exc:
            self.diagnostics.append(
                Diagnostic(
                    code="call.bad_url",
                    severity="warning",
                    location=self.exchange.id,
                    message=f"the request URL {req.url[:200]!r} does not parse ({exc}): "
                    "the API is recognized from the request target alone",
                )
            )
        try:
            return urlsplit(req.target if req.target.startswith("/") else "/")
        except ValueError:  # pragma: no cover - a path without an authority always splits
            return None

    @cached_property
    def path(self) -> str:
        """The URL path (no query)."""
        url = self._url
        return url.path if url is not None else ""

    @cached_property
    def query(self) -> str:
        url = self._url
        return url.query if url is not None else ""

    @cached_property
    def host(self) -> str:
        url = self._url
        return (url.hostname or "") if url is not None else ""

    @cached_property
    def request_body(self) -> bytes:
        req = self.exchange.request
        return self._decoded(req.body, req.headers, "request") if req is not None else b""

    @cached_property
    def request_json(self) -> Json | None:
        """The request body as JSON, or None when it is absent or not JSON."""
        return _json(self.request_body, f"{self.exchange.id} request body", self.diagnostics)

    @cached_property
    def anthropic_version(self) -> str | None:
        """The request's ``anthropic-version`` header: most families ask, of every exchange."""
        req = self.exchange.request
        return header(req.headers, "anthropic-version") if req is not None else None

    # -- response -------------------------------------------------------------------------

    @cached_property
    def status(self) -> int | None:
        resp = self.exchange.response
        return resp.status or None if resp is not None else None  # 0: no status (stdio)

    @cached_property
    def response_content_type(self) -> str:
        resp = self.exchange.response
        return (header(resp.headers, "content-type") or "").lower() if resp else ""

    @cached_property
    def response_pieces(self) -> list[tuple[float, bytes]]:
        resp = self.exchange.response
        if resp is None:
            return []
        decoded = shared_decode(
            resp.body,
            header(resp.headers, "content-encoding"),
            limit=self._max_body,
            location=f"{self.exchange.id} response body",
        )
        self.diagnostics.extend(decoded.diagnostics)
        return decoded.pieces

    @cached_property
    def response_body(self) -> bytes:
        return b"".join(p for _, p in self.response_pieces)

    @cached_property
    def response_json(self) -> Json | None:
        """The response body as one JSON document, or None (absent, a stream, not JSON)."""
        # Every family asks, also of streams: look at the first byte before joining the
        # pieces of what is most likely an event stream.
        if _first_byte(self.response_pieces) not in (b"{", b"["):
            return None
        return _json(self.response_body, f"{self.exchange.id} response body", self.diagnostics)

    def response_head(self, n: int) -> bytes:
        """The first ``n`` bytes of the decoded response body, without joining the rest."""
        return _head(self.response_pieces, n)

    @cached_property
    def framing(self) -> str | None:
        """ "sse", "ndjson", "json-array", "aws-eventstream" or None (a plain body)."""
        head = _head(self.response_pieces, 4096)  # not response_body: a stream is not joined
        if not head:
            return None
        hint = "stream" in self.path.lower() or "alt=sse" in self.query
        return detect_framing(self.response_content_type or None, head, streaming_hint=hint)

    @cached_property
    def events(self) -> list[FramingOutput]:
        """The response's stream events (with Diagnostics), empty for a plain body."""
        if self.framing is None:
            return []
        return decode_stream(
            self.response_pieces, self.framing, location=f"{self.exchange.id} response body"
        )

    def _decoded(self, body: Body, headers: Headers, what: str) -> bytes:
        decoded = shared_decode(
            body,
            header(headers, "content-encoding"),
            limit=self._max_body,
            location=f"{self.exchange.id} {what} body",
        )
        self.diagnostics.extend(decoded.diagnostics)
        return b"".join(p for _, p in decoded.pieces)


# The report and the API view of an exchange decode the same bodies one right after the
# other (the exchange is written, then recognized): the last few results are kept, keyed by
# the Body object, and reused while that body and the arguments are unchanged.
_RECENT_DECODES = 4
# id(body) -> (body, what the result depends on, result); holding the body keeps its id unique
_recent: dict[int, tuple[Body, tuple[object, ...], DecodedBody]] = {}


def shared_decode(
    body: Body, content_encoding: str | None, *, limit: int, location: str
) -> DecodedBody:
    """``decode_body(body, content_encoding, limit=limit, location=location)``, computed
    once for the report and the API view. The result is shared: do not mutate it."""
    # size and piece count change when a body grows: a grown body is decoded again
    args = (body.size, len(body.pieces), body.content_decoded, content_encoding, limit, location)
    hit = _recent.get(id(body))
    if hit is not None and hit[0] is body and hit[1] == args:
        return hit[2]
    decoded = decode_body(body, content_encoding, limit=limit, location=location)
    if len(_recent) >= _RECENT_DECODES:
        _recent.clear()
    _recent[id(body)] = (body, args, decoded)
    return decoded


def _head(pieces: list[tuple[float, bytes]], n: int) -> bytes:
    """The first ``n`` bytes of a body, joining only as many pieces as that takes."""
    if pieces and len(pieces[0][1]) >= n:
        return pieces[0][1][:n]
    out = bytearray()
    for _, piece in pieces:
        out += piece[: n - len(out)]
        if len(out) >= n:
            break
    return bytes(out)


def json_failure(data: bytes) -> str:
    """Why ``data`` is not one JSON text, in words for a diagnostic: the parser's message and
    position, and for JSON nested deeper than the parser takes (orjson stops at 1024 levels)
    that it is JSON, too deep, rather than "not JSON". Only called once parsing failed."""
    try:
        orjson.loads(data.strip())
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit"):
            return f"JSON nested deeper than the 1024 levels the parser takes ({exc})"
        return f"not JSON ({exc})"
    return "JSON, but not of the expected shape"  # it parses


def _first_byte(pieces: list[tuple[float, bytes]]) -> bytes:
    """The body's first byte after ASCII whitespace (what ``bytes.strip`` drops), or b""."""
    for _, piece in pieces:
        first = piece[:1]
        if first and first not in _ASCII_SPACE:
            return first  # the usual case: no copy of the piece
        rest = piece.lstrip()
        if rest:
            return rest[:1]
    return b""


_ASCII_SPACE = b" \t\n\r\x0b\x0c"


def _json(data: bytes, location: str, diagnostics: list[Diagnostic]) -> Json | None:
    """``data`` parsed as one JSON text (RFC 8259), or None when it is not one.

    JSON exchanged between systems must be UTF-8 (RFC 8259 section 8.1,
    https://www.rfc-editor.org/rfc/rfc8259#section-8.1). One byte that is not must not cost
    the whole body: the bytes are decoded with each invalid sequence replaced by U+FFFD
    (as the SSE decoder does for event data), parsed again, and a ``body.invalid_utf8``
    Diagnostic says where the first invalid byte was. Only a body that fails to parse pays
    for this.
    """
    stripped = data.strip()
    if not stripped or stripped[:1] not in (b"{", b"["):
        return None
    try:
        return orjson.loads(stripped)
    except orjson.JSONDecodeError:
        pass
    try:
        stripped.decode()
    except UnicodeDecodeError as exc:
        return _json_replacing(stripped, exc, len(data) - len(data.lstrip()), location, diagnostics)
    return None


def _json_replacing(
    stripped: bytes,
    exc: UnicodeDecodeError,
    lead: int,
    location: str,
    diagnostics: list[Diagnostic],
) -> Json | None:
    """``stripped`` (not UTF-8 at ``exc.start``) parsed with its invalid bytes replaced."""
    text = stripped.decode(errors="replace")
    try:
        value: Json = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None  # not JSON either: the bytes are kept, the families say "not JSON"
    replaced = text.count("\ufffd") - stripped.count("\ufffd".encode())
    diagnostics.append(
        Diagnostic(
            code="body.invalid_utf8",
            message=f"the JSON body is not UTF-8 at byte {lead + exc.start} "
            f"({stripped[exc.start : exc.end]!r}); {replaced} invalid "
            f"sequence{'s' if replaced != 1 else ''} replaced with U+FFFD, "
            "the rest parsed as sent",
            location=at(location, lead + exc.start),
        )
    )
    return value
