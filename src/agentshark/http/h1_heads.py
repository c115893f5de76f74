"""The message heads of :class:`~agentshark.http.h1.H1Connection` (a mixin): a request or
status line and its header fields, what they say of the body's framing (RFC 9112 §6.3,
https://www.rfc-editor.org/rfc/rfc9112#section-6.3), the interim responses, the switch of
protocols (101, a 2xx to CONNECT), and the trailer section of a chunked body.

:class:`Conn` is the self type of these methods: what they may use of the connection.
"""

from __future__ import annotations

from typing import Protocol

from agentshark.http.events import (
    GapAffected,
    HttpEvent,
    InformationalResponse,
    ParseError,
    ProtocolSwitched,
    RequestHeaders,
    ResponseHeaders,
)
from agentshark.http.h1_pairing import Pairing, Pending
from agentshark.http.h1_state import Direction, State, bad_head, bad_length
from agentshark.http.h1_syntax import (
    HEAD_END,
    REQUEST_LINE,
    STATUS_LINE,
    content_length,
    header_value,
    last_transfer_coding,
    parse_headers,
)
from agentshark.model import Headers

__all__ = ["MAX_HEAD", "Conn", "HeadSteps"]

MAX_HEAD = 256 * 1024  # a head larger than this is not HTTP we can trust


class Conn(Protocol):
    _dirs: tuple[Direction, Direction]
    _pairing: Pairing
    _request: Pending | None
    _next_request: int
    switched: str | None

    def _start_chunked(self, d: Direction) -> None: ...

    def _chunk_error(self, d: Direction, ts: float, out: list[HttpEvent], why: str) -> bool: ...

    def _end_message(
        self,
        d: Direction,
        ts: float,
        out: list[HttpEvent],
        *,
        complete: bool,
        trailers: Headers | None = None,
    ) -> None: ...


class HeadSteps:
    """The head and trailer steps of H1Connection."""

    __slots__ = ()
    # set here, declared for the type checker (the attributes are H1Connection's)
    _request: Pending | None
    _next_request: int
    switched: str | None

    def _on_request_head(
        self: Conn, d: Direction, head: bytes, started: float, ts: float, out: list[HttpEvent]
    ) -> bool:
        m = REQUEST_LINE.match(head)
        if m is None:
            out.append(bad_head(d, head, ts))
            return False
        headers = parse_headers(head[m.end() :])
        method = m.group(1).decode("ascii")
        stream = self._next_request
        self._next_request += 1
        d.stream = stream
        request = Pending(stream, method, started, d.offset, d.offset + len(head), d.buf_acked)
        self._request = request
        self._pairing.request(request)
        out.append(
            RequestHeaders(
                stream=stream,
                method=method,
                target=m.group(2).decode("latin-1"),
                version=m.group(3).decode("ascii"),
                headers=headers,
                ts=started,
            )
        )
        te = last_transfer_coding(headers)
        if te is not None:
            if te == "chunked":
                self._start_chunked(d)
            else:  # a request body framed by a coding we cannot delimit: lost sync
                out.append(
                    ParseError(
                        response=False,
                        message=f"request Transfer-Encoding {te!r} does not end in chunked",
                        offset=d.offset,
                        ts=ts,
                    )
                )
                self._end_message(d, ts, out, complete=False)
                return False
            return True
        length = content_length(headers)
        if length is None or length == 0:
            if length is None and header_value(headers, "content-length") is not None:
                out.append(bad_length(d, headers, ts))
            self._end_message(d, ts, out, complete=True)
        else:
            d.state = State.LENGTH
            d.remaining = length
        return True

    def _on_response_head(
        self: Conn, d: Direction, head: bytes, started: float, ts: float, out: list[HttpEvent]
    ) -> bool:
        m = STATUS_LINE.match(head)
        if m is None:
            out.append(bad_head(d, head, ts))
            return False
        headers = parse_headers(head[m.end() :])
        status = int(m.group(2))
        reason = (m.group(3) or b"").decode("latin-1")
        version = m.group(1).decode("ascii")
        if 100 <= status < 200 and status != 101:
            stream = self._pairing.interim_stream()
            out.append(
                InformationalResponse(
                    stream=stream, status=status, reason=reason, headers=headers, ts=started
                )
            )
            return True
        notes: list[GapAffected] = []
        stream, method = self._pairing.answer(started, d.offset, d.buf_acked, ts, notes)
        out.extend(notes)
        d.stream = stream
        out.append(
            ResponseHeaders(
                stream=stream,
                status=status,
                reason=reason,
                version=version,
                headers=headers,
                ts=started,
            )
        )
        if status == 101 or (method == "CONNECT" and 200 <= status < 300):
            protocol = (
                "tunnel" if status != 101 else (header_value(headers, "upgrade") or "").lower()
            )
            out.append(ProtocolSwitched(stream=stream, protocol=protocol or "unknown", ts=ts))
            self._end_message(d, ts, out, complete=True)
            self.switched = protocol or "unknown"
            for side in self._dirs:
                side.switched_bytes += len(side.buf)
                side.offset += len(side.buf)
                side.leftover, side.buf = side.buf, b""
                side.state = State.SWITCHED
            return True
        if method == "HEAD" or status in (204, 304):
            self._end_message(d, ts, out, complete=True)
            return True
        te = last_transfer_coding(headers)
        if te == "chunked":
            self._start_chunked(d)
            return True
        if te is not None:
            d.state = State.UNTIL_CLOSE
            return True
        length = content_length(headers)
        if length is None:
            if header_value(headers, "content-length") is not None:
                out.append(bad_length(d, headers, ts))
            d.state = State.UNTIL_CLOSE
        elif length == 0:
            self._end_message(d, ts, out, complete=True)
        else:
            d.state = State.LENGTH
            d.remaining = length
        return True

    def _parse_trailers(self: Conn, d: Direction, ts: float, out: list[HttpEvent]) -> bool:
        buf = d.buf
        if buf[:2] == b"\r\n" or buf[:1] == b"\n":
            n = 2 if buf[:1] == b"\r" else 1
            d.buf = buf[n:]
            d.offset += n
            d.chunked_bytes += n
            self._end_message(d, ts, out, complete=True)
            return True
        m = HEAD_END.search(buf)
        if m is None:
            if len(buf) > MAX_HEAD:
                return self._chunk_error(d, ts, out, "trailer section too long")
            return False
        block = buf[: m.end()]
        d.buf = buf[m.end() :]
        d.offset += len(block)
        d.chunked_bytes += len(block)
        self._end_message(d, ts, out, complete=True, trailers=parse_headers(block))
        return True
