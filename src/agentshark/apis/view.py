"""What API families look at: an exchange's bodies decoded once, lazily.

Every family's ``match`` and ``parse`` read the same :class:`ExchangeView`, so a body is
content-decoded, JSON-parsed and split into stream events at most once per exchange, and
only when some family asks.
"""

from __future__ import annotations

from functools import cached_property
from urllib.parse import urlsplit

import orjson

from agentshark.apis.model import Json
from agentshark.errors import Diagnostic
from agentshark.framing import decode_stream, detect_framing
from agentshark.framing.events import FramingOutput
from agentshark.http.content import DEFAULT_DECODE_LIMIT, decode_body
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
    def path(self) -> str:
        """The URL path (no query)."""
        req = self.exchange.request
        return urlsplit(req.url).path if req is not None else ""

    @cached_property
    def query(self) -> str:
        req = self.exchange.request
        return urlsplit(req.url).query if req is not None else ""

    @cached_property
    def host(self) -> str:
        req = self.exchange.request
        return (urlsplit(req.url).hostname or "") if req is not None else ""

    @cached_property
    def request_body(self) -> bytes:
        req = self.exchange.request
        return self._decoded(req.body, req.headers, "request") if req is not None else b""

    @cached_property
    def request_json(self) -> Json | None:
        """The request body as JSON, or None when it is absent or not JSON."""
        return _json(self.request_body)

    # -- response -------------------------------------------------------------------------

    @cached_property
    def status(self) -> int | None:
        return self.exchange.response.status if self.exchange.response else None

    @cached_property
    def response_content_type(self) -> str:
        resp = self.exchange.response
        return (header(resp.headers, "content-type") or "").lower() if resp else ""

    @cached_property
    def response_pieces(self) -> list[tuple[float, bytes]]:
        resp = self.exchange.response
        if resp is None:
            return []
        decoded = decode_body(
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
        return _json(self.response_body)

    @cached_property
    def framing(self) -> str | None:
        """ "sse", "ndjson", "json-array", "aws-eventstream" or None (a plain body)."""
        body = self.response_body
        if not body:
            return None
        hint = "stream" in self.path.lower() or "alt=sse" in self.query
        return detect_framing(self.response_content_type or None, body[:4096], streaming_hint=hint)

    @cached_property
    def events(self) -> list[FramingOutput]:
        """The response's stream events (with Diagnostics), empty for a plain body."""
        if self.framing is None:
            return []
        return decode_stream(
            self.response_pieces, self.framing, location=f"{self.exchange.id} response body"
        )

    def _decoded(self, body: Body, headers: Headers, what: str) -> bytes:
        decoded = decode_body(
            body,
            header(headers, "content-encoding"),
            limit=self._max_body,
            location=f"{self.exchange.id} {what} body",
        )
        self.diagnostics.extend(decoded.diagnostics)
        return b"".join(p for _, p in decoded.pieces)


def _json(data: bytes) -> Json | None:
    stripped = data.strip()
    if not stripped or stripped[:1] not in (b"{", b"["):
        return None
    try:
        return orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
