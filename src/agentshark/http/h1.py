"""A passive HTTP/1.x parser for both directions of one connection.

Input: the in-order bytes of each direction (``feed``), capture gaps (``gap``) and ends
(``end``). Output: the version-neutral events of :mod:`agentshark.http.events`.

It observes; it never answers. Message framing follows RFC 9112 §6.3
(https://www.rfc-editor.org/rfc/rfc9112#section-6.3):

1. responses to HEAD, 1xx, 204 and 304 have no body;
2. a 2xx answer to CONNECT, and 101 Switching Protocols, end HTTP on the connection;
3. ``Transfer-Encoding`` whose final coding is ``chunked`` frames a chunked body; any other
   transfer coding on a response makes it close-delimited;
4. ``Content-Length`` gives the length;
5. otherwise a request has no body and a response runs until the connection closes.

Responses are paired with requests in order (pipelining included): the response takes the
stream number of the oldest unanswered request. A response that arrives before that
request started answers a request the capture missed; it gets a negative stream number.
After a capture gap that may hide whole messages, :mod:`agentshark.http.h1_pairing` decides
from TCP acknowledgment numbers (``feed``'s ``acked``: the offset in the other direction's
stream that the segment carrying the bytes acknowledged) instead, or leaves the response
unpaired; either way the exchanges the gap touched get a :class:`GapAffected`.

Gaps (``gap``): inside a body of known length the framing is kept (a :class:`BodyGap`, the
message ends where its length says); in a close-delimited body likewise; anywhere else (a head,
chunk framing, between messages) the message in progress ends incomplete, the gap may hide
whole messages (the pairing is told), and the parser looks for the next message start. Bytes
that are not HTTP (a capture that starts mid-message, the bytes after such a gap) produce a
:class:`ParseError`; the parser then looks for the next message start.

What a request or status line and its fields say (the framing above, interim responses, the
switch of protocols, trailers) is in :mod:`agentshark.http.h1_heads`; the per-direction state
and the syntax are in ``h1_state`` and ``h1_syntax``.
"""

from __future__ import annotations

from agentshark.http.events import (
    BodyData,
    BodyGap,
    GapAffected,
    HttpEvent,
    MessageEnded,
    ParseError,
)
from agentshark.http.h1_heads import MAX_HEAD, HeadSteps
from agentshark.http.h1_pairing import Pairing, Pending
from agentshark.http.h1_state import (
    DIRECT_STATES,
    Direction,
    State,
    resync,
    skipped,
    starts_message,
)
from agentshark.http.h1_syntax import (
    HEAD_END,
    chunk_size,
    is_request_prefix,
    looks_like_response,
)
from agentshark.model import Headers

MAX_CHUNK_LINE = 4096


# Module-level aliases: the per-segment loop reads these instead of State attributes.
_LENGTH = State.LENGTH
_CHUNK_DATA = State.CHUNK_DATA
_CHUNK_SIZE = State.CHUNK_SIZE
_CHUNK_CRLF = State.CHUNK_CRLF
_UNTIL_CLOSE = State.UNTIL_CLOSE


class H1Connection(HeadSteps):
    """Both directions of one HTTP/1.x connection. Direction 0 is the client's."""

    def __init__(self) -> None:
        self._dirs = (Direction(False), Direction(True))
        self._pairing = Pairing()
        self._request: Pending | None = None  # the request being parsed
        self._next_request = 0
        self._response_method = "GET"  # method of the request the current response answers
        self.switched: str | None = None

    # -- public API ---------------------------------------------------------------------

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[HttpEvent]:
        """The next bytes of ``direction``; ``acked``: the offset in the other direction's
        stream that the TCP segment carrying them acknowledged (-1: unknown)."""
        d = self._dirs[direction]
        out: list[HttpEvent] = []
        if d.state is State.SWITCHED:
            d.switched_bytes += len(data)
            d.offset += len(data)
            return out
        d.acked = acked
        if d.buf:
            if d.state is State.RESYNC and d.after_gap and starts_message(d, data):
                out.append(skipped(d, len(d.buf), ts))  # lost: a segment starts anew
                d.offset += len(d.buf)
                d.buf = b""
                d.state = State.HEAD
                d.after_gap = False
                d.buf_ts = ts
                d.buf_acked = acked
            else:
                data = d.buf + data
                d.buf = b""
        else:
            d.buf_ts = ts
            d.buf_acked = acked
        self._run(d, data, ts, out)
        return out

    def gap(self, direction: int, size: int, ts: float) -> list[HttpEvent]:
        """``size`` bytes of ``direction`` were never captured (see the module doc)."""
        d = self._dirs[direction]
        out: list[HttpEvent] = []
        if d.state is State.SWITCHED:
            d.offset += size
            return out
        if d.state is State.LENGTH and not d.buf and size <= d.remaining:
            out.append(self._body_gap(d, size, ts))
            d.remaining -= size
            d.offset += size
            if d.remaining == 0:
                self._end_message(d, ts, out, complete=False)
            return out
        if d.state is State.UNTIL_CLOSE:
            out.append(self._body_gap(d, size, ts))
            d.offset += size
            return out
        # Inside a head or chunk framing, or between messages: whole messages may be lost.
        if d.state not in (State.HEAD, State.RESYNC):
            out.append(self._body_gap(d, size, ts))
            self._end_message(d, ts, out, complete=False)
        elif d.state is State.HEAD and d.buf:
            out.append(
                ParseError(
                    response=d.response,
                    message=f"a capture gap of {size} bytes at byte {d.offset + len(d.buf)} "
                    f"cut a message head short ({len(d.buf)} bytes kept, dropped)",
                    offset=d.offset,
                    ts=ts,
                )
            )
        lost = len(d.buf) + size
        if d.response:
            self._pairing.response_gap(d.offset, lost)
        else:
            self._pairing.client_gap(d.offset, lost)
        d.offset += lost
        d.buf = b""
        d.state = State.RESYNC
        d.after_gap = True
        return out

    def _body_gap(self, d: Direction, size: int, ts: float) -> BodyGap:
        return BodyGap(
            stream=d.stream, response=d.response, size=size, ts=ts, offset=d.offset + len(d.buf)
        )

    def end(self, direction: int, ts: float, *, clean: bool) -> list[HttpEvent]:
        """No more bytes in ``direction``. ``clean`` is True for a FIN (not a reset or the
        end of the capture): only then does a close-delimited body end complete."""
        d = self._dirs[direction]
        out: list[HttpEvent] = []
        if d.state is State.UNTIL_CLOSE:
            self._end_message(d, ts, out, complete=clean)
        elif d.state in (
            State.LENGTH,
            State.CHUNK_SIZE,
            State.CHUNK_DATA,
            State.CHUNK_CRLF,
            State.TRAILERS,
        ):
            self._end_message(d, ts, out, complete=False)
        elif d.state is State.HEAD and d.buf.strip():
            out.append(
                ParseError(
                    response=d.response,
                    message=f"the connection ended inside a message head ({len(d.buf)} bytes)",
                    offset=d.offset,
                    ts=ts,
                )
            )
        elif d.state is State.RESYNC and d.buf:
            out.append(skipped(d, len(d.buf), ts))
        if d.response:
            notes: list[GapAffected] = []
            self._pairing.server_ended(ts, notes)
            out.extend(notes)
        d.buf = b""
        if d.state is not State.SWITCHED:
            d.state = State.HEAD
        return out

    def take_switched(self) -> tuple[bytes, bytes]:
        """The bytes of each direction that followed the protocol switch in the same
        segments as the HTTP/1.1 messages (the next protocol's first bytes)."""
        client, server = self._dirs
        out = (client.leftover, server.leftover)
        client.leftover = server.leftover = b""
        return out

    @property
    def switched_bytes(self) -> tuple[int, int]:
        return (self._dirs[0].switched_bytes, self._dirs[1].switched_bytes)

    # -- the state machine ----------------------------------------------------------------

    def _run(self, d: Direction, data: bytes, ts: float, out: list[HttpEvent]) -> None:
        """Consume ``data`` (held bytes first); keep an unfinished head or line in d.buf.

        The hot path: body bytes of a known length or inside a chunk are handed out as
        slices (the whole segment when it is all body), chunk-size lines parsed in place.
        """
        pos = 0
        n = len(data)
        stream = d.stream
        response = d.response
        if d.state is _CHUNK_SIZE:
            # A token stream sends one chunk per segment: size line, data, CRLF, exactly.
            nl = data.find(b"\n", 0, 18)
            if nl > 0:
                try:
                    one = int(data[:nl], 16)
                except ValueError:
                    one = 0
                end = nl + 1 + one
                if one > 0 and n == end + 2 and data.endswith(b"\r\n"):
                    out.append(
                        BodyData(stream=stream, response=response, data=data[nl + 1 : end], ts=ts)
                    )
                    d.chunked_bytes += n
                    d.offset += n
                    return
        while pos < n:
            state = d.state
            if state is _LENGTH or state is _CHUNK_DATA:
                take = min(d.remaining, n - pos)
                chunk = data if take == n else data[pos : pos + take]
                pos += take
                d.remaining -= take
                out.append(BodyData(stream=stream, response=response, data=chunk, ts=ts))
                if state is _CHUNK_DATA:
                    d.chunked_bytes += take
                    if d.remaining == 0:
                        d.state = _CHUNK_CRLF
                elif d.remaining == 0:
                    d.offset += pos
                    data, pos, n = data[pos:], 0, n - pos
                    self._end_message(d, ts, out, complete=True)
            elif state is _CHUNK_SIZE:
                nl = data.find(b"\n", pos)
                if nl < 0:
                    if n - pos > MAX_CHUNK_LINE:
                        d.offset += pos
                        data, pos, n = data[pos:], 0, n - pos
                        self._chunk_error(d, ts, out, "chunk-size line too long")
                        continue
                    break
                try:  # int() ignores the CR and surrounding whitespace
                    size: int | None = int(data[pos:nl], 16)
                except ValueError:
                    size = chunk_size(data[pos:nl])
                d.chunked_bytes += nl + 1 - pos
                if size is None or size < 0:
                    line = data[pos : nl + 1]
                    d.offset += pos
                    data, pos, n = data[pos:], 0, n - pos
                    self._chunk_error(d, ts, out, f"bad chunk-size line {line[:40]!r}")
                    continue
                pos = nl + 1
                if size == 0:
                    d.state = State.TRAILERS
                else:
                    d.state = _CHUNK_DATA
                    d.remaining = size
            elif state is _CHUNK_CRLF:
                if data.startswith(b"\r\n", pos):
                    pos += 2
                    d.chunked_bytes += 2
                    d.state = _CHUNK_SIZE
                elif data.startswith(b"\n", pos):
                    pos += 1
                    d.chunked_bytes += 1
                    d.state = _CHUNK_SIZE
                elif n - pos == 1 and data[pos] == 13:
                    break  # a lone CR: its LF is in the next segment
                else:
                    d.offset += pos
                    data, pos, n = data[pos:], 0, n - pos
                    self._chunk_error(d, ts, out, "chunk data not followed by CRLF")
            elif state is _UNTIL_CLOSE:
                chunk = data if pos == 0 else data[pos:]
                out.append(BodyData(stream=stream, response=response, data=chunk, ts=ts))
                pos = n
            else:
                # Rare states work on a buffer of their own: heads, trailers, resync.
                d.offset += pos
                d.buf = data[pos:]
                pos = n
                self._run_buffered(d, ts, out)
                stream = d.stream
                if d.state in DIRECT_STATES and d.buf:
                    data, pos, n = d.buf, 0, len(d.buf)
                    d.buf = b""
                    continue
                return
        d.offset += pos
        if pos < n:
            d.buf = data[pos:]

    def _run_buffered(self, d: Direction, ts: float, out: list[HttpEvent]) -> None:
        """HEAD, TRAILERS, SWITCHED and RESYNC states, on ``d.buf``; returns when the
        state is one the direct loop handles, or when more bytes are needed."""
        while d.buf:
            state = d.state
            if state is State.HEAD:
                if not self._parse_head(d, ts, out):
                    return
            elif state is State.TRAILERS:
                if not self._parse_trailers(d, ts, out):
                    return
            elif state is State.SWITCHED:
                d.switched_bytes += len(d.buf)
                d.offset += len(d.buf)
                d.buf = b""
            elif state is State.RESYNC:
                if not resync(d, ts, out):
                    return
            else:
                return

    def _parse_head(self, d: Direction, ts: float, out: list[HttpEvent]) -> bool:
        buf = d.buf
        # Blank lines before a message are tolerated (RFC 9112 §2.2).
        if buf[:1] == b"\r" or buf[:1] == b"\n":
            stripped = buf.lstrip(b"\r\n")
            d.offset += len(buf) - len(stripped)
            d.buf = buf = stripped
            if not buf:
                return False
        if not (
            looks_like_response(bytes(buf[:8]))
            if d.response
            else is_request_prefix(bytes(buf[:20]))
        ):
            d.state = State.RESYNC
            return True
        m = HEAD_END.search(buf)
        if m is None:
            if len(buf) > MAX_HEAD:
                out.append(
                    ParseError(
                        response=d.response,
                        message=f"no end of message head within {MAX_HEAD} bytes",
                        offset=d.offset,
                        ts=ts,
                    )
                )
                d.state = State.RESYNC
                d.offset += 1
                d.buf = buf[1:]
                return True
            return False
        head = buf[: m.end()]
        d.buf = buf[m.end() :]
        started = d.buf_ts
        consumed = len(head)
        if d.response:
            ok = self._on_response_head(d, head, started, ts, out)
        else:
            ok = self._on_request_head(d, head, started, ts, out)
        d.offset += consumed
        d.buf_ts = ts
        d.buf_acked = d.acked
        if not ok:
            d.state = State.RESYNC
        return True

    def _start_chunked(self, d: Direction) -> None:
        d.state = State.CHUNK_SIZE
        d.chunked_bytes = 0

    def _chunk_error(self, d: Direction, ts: float, out: list[HttpEvent], why: str) -> bool:
        out.append(ParseError(response=d.response, message=why, offset=d.offset, ts=ts))
        self._end_message(d, ts, out, complete=False)
        d.state = State.RESYNC
        return True

    def _end_message(
        self,
        d: Direction,
        ts: float,
        out: list[HttpEvent],
        *,
        complete: bool,
        trailers: Headers | None = None,
    ) -> None:
        chunked = d.state in (State.CHUNK_SIZE, State.CHUNK_DATA, State.CHUNK_CRLF, State.TRAILERS)
        request = self._request
        if not d.response and request is not None:
            if request.end < 0:  # a request without body ends before its head is counted
                request.end = max(d.offset, request.head_end)
            self._request = None
        out.append(
            MessageEnded(
                stream=d.stream,
                response=d.response,
                ts=ts,
                complete=complete,
                trailers=trailers or [],
                transfer_bytes=d.chunked_bytes if chunked else None,
            )
        )
        d.state = State.HEAD
        d.remaining = 0
        d.buf_ts = ts
        d.buf_acked = d.acked
