"""HTTP/3 (RFC 9114) over the ordered stream bytes of one QUIC connection -> HttpEvents.

Streams (§6): client-initiated bidirectional streams carry one request (client -> server)
and its response; unidirectional streams start with a type: 0x00 control (SETTINGS first,
then GOAWAY, MAX_PUSH_ID, CANCEL_PUSH), 0x01 push, 0x02 QPACK encoder, 0x03 QPACK decoder;
other types (reserved ``0x1f * N + 0x21``, extensions) are read past (§6.2.3, §9).
Frames (§7.1) are ``type (i) | length (i) | payload``: HEADERS (0x01) decode with QPACK
(:mod:`agentshark.http.h3_qpack`), DATA (0x00) payloads are handed up as they arrive (each
with the time of the packet that carried it: time to first token over HTTP/3), frame types
this module does not use are skipped by their length (§9). A HEADERS frame after the head is
the trailers (§4.1). The events are the ones HTTP/1.1 and HTTP/2 produce, with the stream id
as the message number and version ``HTTP/3``.

Server push (§4.6): a PUSH_PROMISE on a request stream and the push stream of its push id
(held until both are read, in whichever order they come) become one pushed exchange whose
stream is the push stream's id; MAX_PUSH_ID and CANCEL_PUSH are followed. A 2xx answer to a
CONNECT is a ``ProtocolSwitched`` with its ``:protocol`` (RFC 9220: ``websocket``). HTTP
datagrams (RFC 9297) become ``DatagramReceived`` events of their request stream.
PRIORITY_UPDATE is skipped as an unknown type is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentshark.errors import Diagnostic
from agentshark.http.events import (
    BodyData,
    BodyGap,
    ConnectionGoAway,
    DatagramReceived,
    HttpEvent,
    InformationalResponse,
    MessageEnded,
    ParseError,
    ProtocolSwitched,
    PushPromised,
    RequestHeaders,
    ResponseHeaders,
    StreamReset,
)
from agentshark.http.h3_qpack import Decoded, QpackSide
from agentshark.model import Headers
from agentshark.quic.events import (
    QuicDatagram,
    QuicEvent,
    QuicStreamData,
    QuicStreamGap,
    QuicStreamReset,
)
from agentshark.quic.wire import WireError, read_varint

__all__ = ["H3Connection", "error_name"]

DATA, HEADERS, CANCEL_PUSH, SETTINGS, PUSH_PROMISE, GOAWAY, MAX_PUSH_ID = 0, 1, 3, 4, 5, 7, 13
CONTROL, PUSH, ENCODER, DECODER = 0, 1, 2, 3
_QPACK_MAX_TABLE_CAPACITY, _QPACK_BLOCKED_STREAMS = 0x01, 0x07
_CONTROL_ONLY = frozenset({CANCEL_PUSH, SETTINGS, GOAWAY, MAX_PUSH_ID})
_PROMISE_KEY = 1 << 62  # QPACK's key for a PUSH_PROMISE's block: push id + this
_WHO = ("client", "server")

_ERRORS = {  # RFC 9114 §8.1, RFC 9204 §6
    0x100: "H3_NO_ERROR",
    0x101: "H3_GENERAL_PROTOCOL_ERROR",
    0x102: "H3_INTERNAL_ERROR",
    0x103: "H3_STREAM_CREATION_ERROR",
    0x104: "H3_CLOSED_CRITICAL_STREAM",
    0x105: "H3_FRAME_UNEXPECTED",
    0x106: "H3_FRAME_ERROR",
    0x107: "H3_EXCESSIVE_LOAD",
    0x108: "H3_ID_ERROR",
    0x109: "H3_SETTINGS_ERROR",
    0x10A: "H3_MISSING_SETTINGS",
    0x10B: "H3_REQUEST_REJECTED",
    0x10C: "H3_REQUEST_CANCELLED",
    0x10D: "H3_REQUEST_INCOMPLETE",
    0x10E: "H3_MESSAGE_ERROR",
    0x10F: "H3_CONNECT_ERROR",
    0x110: "H3_VERSION_FALLBACK",
    0x200: "QPACK_DECOMPRESSION_FAILED",
    0x201: "QPACK_ENCODER_STREAM_ERROR",
    0x202: "QPACK_DECODER_STREAM_ERROR",
}


def error_name(code: int) -> str:
    """The name of an HTTP/3 or QPACK error code, or its value in hex."""
    return _ERRORS.get(code, f"0x{code:x}")


@dataclass(slots=True)
class _Half:
    """One direction of a stream: frames being read."""

    buf: bytearray = field(default_factory=bytearray)
    data_left: int = 0  # payload bytes of the current DATA frame still to come
    skip_left: int = 0  # payload bytes of a skipped frame still to come
    kind: int = -1  # unidirectional streams: the stream type (-1: not read yet)
    push_id: int = -1  # push streams: the push id after the type (-1: not read yet)
    method: str = ""  # request streams: the request's method and :protocol (RFC 9220)
    protocol: str = ""
    head: bool = False
    seen: bool = False  # any frame read
    lossy: bool = False
    broken: bool = False  # a gap took the framing: the rest is not read
    blocked: bool = False  # a header block waits for QPACK
    fin: bool = False
    ended: bool = False
    trailers: Headers = field(default_factory=list)


class H3Connection:
    """The HTTP/3 layer of one connection: ``feed`` QUIC events, ``close`` at the end."""

    def __init__(self, *, midway: bool = False) -> None:
        """``midway``: the connection is read from its middle (see ``QpackSide``)."""
        self._halves: dict[tuple[int, int], _Half] = {}
        self._qpack = (QpackSide(midway=midway), QpackSide(midway=midway))  # by sender
        self.settings: list[dict[int, int] | None] = [None, None]
        self.diagnostics: list[Diagnostic] = []
        self.skipped: dict[str, int] = {}
        # server push (§4.6): promises by push id (request stream, headers, time), the push
        # streams by push id, the pushes emitted, the client's MAX_PUSH_ID, CANCEL_PUSHes
        self._promises: dict[int, tuple[int, Headers, float, bool]] = {}
        self._waiting: dict[int, tuple[int, float]] = {}  # promises QPACK holds back
        self._pushes: dict[int, int] = {}
        self._pushed: set[int] = set()
        self.max_push_id: int | None = None
        self.cancelled: dict[int, int] = {}  # push id -> the direction that cancelled it

    def feed(self, ev: QuicEvent, location: str = "") -> list[HttpEvent]:
        out: list[HttpEvent] = []
        if type(ev) is QuicStreamData:
            self._data(ev.direction, ev.stream_id, ev.data, ev.fin, ev.ts, out)
        elif type(ev) is QuicStreamGap:
            self._gap(ev, out)
        elif type(ev) is QuicStreamReset:
            self._reset(ev, out)
        elif type(ev) is QuicDatagram:
            self._datagram(ev, out)
        return out

    def _datagram(self, ev: QuicDatagram, out: list[HttpEvent]) -> None:
        """RFC 9297 §2.1: ``quarter stream id (i) | payload``; the stream is a client-initiated
        bidirectional one, its id four times the quarter."""
        try:
            quarter, start = read_varint(ev.data, 0)
        except WireError:
            self.diagnostics.append(
                Diagnostic(
                    code="h3.datagram",
                    message=f"a DATAGRAM frame of the {_WHO[ev.direction]} is too short for "
                    f"its quarter stream id (RFC 9297 §2.1: H3_DATAGRAM_ERROR)",
                )
            )
            return
        out.append(
            DatagramReceived(
                stream=quarter * 4,
                response=ev.direction == 1,
                size=len(ev.data) - start,
                ts=ev.ts,
            )
        )

    def close(self, ts: float) -> list[HttpEvent]:
        """The connection is over: undecodable heads named, open messages ended incomplete."""
        out: list[HttpEvent] = []
        for sender, side in enumerate(self._qpack):
            self._decoded(sender, side.close(), ts, out)
        self._close_pushes(ts, out)
        for (d, sid), h in self._halves.items():
            if h.kind == PUSH and h.push_id >= 0 and not h.ended and (h.seen or h.head):
                pass  # a push stream's response: ended below as a response
            elif sid & 2 or h.ended or not (h.seen or h.head):
                continue
            h.ended = True
            out.append(
                MessageEnded(
                    stream=sid, response=d == 1, ts=ts, complete=False, trailers=h.trailers
                )
            )
        return out

    # -- streams --------------------------------------------------------------------------

    def _half(self, d: int, sid: int) -> _Half:
        h = self._halves.get((d, sid))
        if h is None:
            h = self._halves[(d, sid)] = _Half()
        return h

    def _data(
        self, d: int, sid: int, data: bytes, fin: bool, ts: float, out: list[HttpEvent]
    ) -> None:
        h = self._half(d, sid)
        if h.ended or h.broken:
            h.fin = h.fin or fin
            self._end(h, d, sid, ts, out)
            return
        h.fin = h.fin or fin
        if sid & 2:
            h.buf += data
            self._uni(h, d, sid, ts, out)
        elif sid & 1:
            if data:
                self._skip_count("server-initiated bidirectional stream bytes", len(data))
        elif data and not h.buf and not h.blocked and h.data_left >= len(data):
            h.data_left -= len(data)  # inside a DATA frame: its bytes as they are, not copied
            out.append(BodyData(stream=sid, response=d == 1, data=data, ts=ts))
            self._end(h, d, sid, ts, out)
        else:
            h.buf += data
            self._request(h, d, sid, ts, out)
            self._end(h, d, sid, ts, out)

    def _gap(self, ev: QuicStreamGap, out: list[HttpEvent]) -> None:
        d, sid = ev.direction, ev.stream_id
        h = self._half(d, sid)
        h.lossy = True
        if sid & 2:
            h.broken = True  # a control or QPACK stream's instructions are lost
            self.diagnostics.append(
                Diagnostic(
                    code="h3.stream_gap",
                    message=f"{ev.size} bytes of the {_WHO[d]}'s unidirectional stream {sid} were "
                    f"not captured: the rest of it is not read",
                    severity="warning",
                )
            )
            return
        if not h.buf and h.data_left >= ev.size and not h.blocked:
            h.data_left -= ev.size
            out.append(
                BodyGap(stream=sid, response=d == 1, size=ev.size, ts=ev.ts, offset=ev.offset)
            )
            return
        h.broken = True
        h.buf.clear()
        out.append(
            ParseError(
                response=d == 1,
                message=f"{ev.size} bytes of stream {sid} were not captured outside a DATA frame: "
                f"the rest of its frames cannot be found",
                offset=ev.offset,
                ts=ev.ts,
                stream=sid,
            )
        )
        if not h.head:
            self._lost_head(h, d, sid, ev.ts, out)

    def _reset(self, ev: QuicStreamReset, out: list[HttpEvent]) -> None:
        h = self._half(ev.direction, ev.stream_id)
        if ev.stream_id & 3 or h.ended:
            return
        h.ended = True
        out.append(
            StreamReset(
                stream=ev.stream_id,
                response=ev.direction == 1,
                error_code=ev.error_code,
                error_name=error_name(ev.error_code),
                ts=ev.ts,
            )
        )

    # -- request streams ------------------------------------------------------------------

    def _request(self, h: _Half, d: int, sid: int, ts: float, out: list[HttpEvent]) -> None:
        buf = h.buf
        while buf and not h.blocked:
            if h.data_left:
                take = min(h.data_left, len(buf))
                h.data_left -= take
                out.append(BodyData(stream=sid, response=d == 1, data=bytes(buf[:take]), ts=ts))
                del buf[:take]
                continue
            if h.skip_left:
                take = min(h.skip_left, len(buf))
                h.skip_left -= take
                del buf[:take]
                continue
            frame = _frame_head(buf)
            if frame is None:
                return
            kind, length, start = frame
            h.seen = True
            if kind == DATA:
                del buf[:start]
                h.data_left = length
            elif kind == PUSH_PROMISE and d == 1 and not sid & 3:
                if len(buf) < start + length:
                    return
                payload = bytes(buf[start : start + length])
                del buf[: start + length]
                self._promise(sid, payload, ts, out)
            elif kind == HEADERS:
                if len(buf) < start + length:
                    return
                block = bytes(buf[start : start + length])
                del buf[: start + length]
                found = self._qpack[d].block(sid, block)
                if found is None:
                    h.blocked = True
                else:
                    self._apply(h, d, sid, found, ts, out)
            else:
                del buf[:start]
                h.skip_left = length
                if kind in _CONTROL_ONLY:
                    out.append(
                        ParseError(
                            response=d == 1,
                            message=f"frame type 0x{kind:x} is not allowed on a request stream "
                            f"(RFC 9114 §7.2); skipped",
                            offset=-1,
                            ts=ts,
                            stream=sid,
                        )
                    )
                else:
                    self._skip_count(
                        "PUSH_PROMISE" if kind == PUSH_PROMISE else f"frame 0x{kind:x}", 1
                    )

    def _apply(
        self, h: _Half, d: int, sid: int, found: Decoded, ts: float, out: list[HttpEvent]
    ) -> None:
        _, headers, why = found
        if headers is None:
            if not h.head:  # first the message it opens, so that the error is its own
                self._lost_head(h, d, sid, ts, out)
            else:
                h.lossy = True
            out.append(
                ParseError(
                    response=d == 1,
                    message=f"the header block of stream {sid} does not decode: {why}",
                    offset=-1,
                    ts=ts,
                    stream=sid,
                )
            )
            return
        if h.head:
            h.trailers = headers
            return
        if d == 0:
            method = _pseudo(headers, ":method") or "?"
            target = (
                _pseudo(headers, ":path")
                or (_pseudo(headers, ":authority") if method == "CONNECT" else None)
                or "?"
            )
            out.append(
                RequestHeaders(
                    stream=sid,
                    method=method,
                    target=target,
                    version="HTTP/3",
                    headers=headers,
                    ts=ts,
                )
            )
            h.head = True
            h.method, h.protocol = method, _pseudo(headers, ":protocol") or ""
            return
        status = _status(_pseudo(headers, ":status"))
        if 100 <= status < 200:
            out.append(
                InformationalResponse(stream=sid, status=status, reason="", headers=headers, ts=ts)
            )
            return
        out.append(
            ResponseHeaders(
                stream=sid, status=status, reason="", version="HTTP/3", headers=headers, ts=ts
            )
        )
        h.head = True
        request = self._halves.get((0, sid))
        if request is not None and request.method == "CONNECT" and 200 <= status < 300:
            # RFC 9114 §4.4, RFC 9220 §3: the stream's DATA are now the protocol's bytes
            # (``:protocol`` of an extended CONNECT, RFC 8441 §4), a tunnel's without one
            out.append(ProtocolSwitched(stream=sid, protocol=request.protocol or "tunnel", ts=ts))

    def _lost_head(self, h: _Half, d: int, sid: int, ts: float, out: list[HttpEvent]) -> None:
        h.head = h.lossy = True
        if d == 0:
            out.append(
                RequestHeaders(
                    stream=sid, method="?", target="?", version="HTTP/3", headers=[], ts=ts
                )
            )
        else:
            out.append(
                ResponseHeaders(
                    stream=sid, status=0, reason="", version="HTTP/3", headers=[], ts=ts
                )
            )

    def _end(self, h: _Half, d: int, sid: int, ts: float, out: list[HttpEvent]) -> None:
        if not h.fin or h.blocked or h.ended or (sid & 3 and h.kind != PUSH):
            return
        h.ended = True
        if not (h.seen or h.head):
            return  # a stream that ended without a frame: nothing to report
        cut = bool(h.buf) or h.data_left > 0 or h.skip_left > 0
        if cut and not h.broken:
            out.append(
                ParseError(
                    response=d == 1,
                    message=f"stream {sid} ends inside a frame (RFC 9114 §7.1: H3_FRAME_ERROR)",
                    offset=-1,
                    ts=ts,
                    stream=sid,
                )
            )
        out.append(
            MessageEnded(
                stream=sid,
                response=d == 1,
                ts=ts,
                complete=not (cut or h.lossy or h.broken),
                trailers=h.trailers,
            )
        )

    def _decoded(
        self, sender: int, results: list[Decoded], ts: float, out: list[HttpEvent]
    ) -> None:
        """Header blocks QPACK finished (unblocked, or given up at the end)."""
        for found in results:
            sid = found[0]
            if sid >= _PROMISE_KEY:
                self._promised(found, ts, out)
                continue
            h = self._half(sender, sid)
            h.blocked = False
            self._apply(h, sender, sid, found, ts, out)
            self._request(h, sender, sid, ts, out)
            self._end(h, sender, sid, ts, out)

    # -- unidirectional streams -----------------------------------------------------------

    def _uni(self, h: _Half, d: int, sid: int, ts: float, out: list[HttpEvent]) -> None:
        buf = h.buf
        if h.kind < 0:
            try:
                h.kind, start = read_varint(buf, 0)
            except WireError:
                return
            del buf[:start]
        if h.kind == ENCODER:
            data, h.buf = bytes(buf), bytearray()
            self._decoded(d, self._qpack[d].encoder(data), ts, out)
        elif h.kind == CONTROL:
            self._control(h, d, ts, out)
        elif h.kind == PUSH and d == 1:
            self._push_stream(h, sid, ts, out)
        else:
            name = {PUSH: "client push stream bytes", DECODER: "QPACK decoder stream bytes"}.get(
                h.kind, "unknown stream type bytes"
            )
            self._skip_count(name, len(buf))
            buf.clear()

    # -- server push (RFC 9114 §4.6) ------------------------------------------------------

    def _promise(self, sid: int, payload: bytes, ts: float, out: list[HttpEvent]) -> None:
        """PUSH_PROMISE (§7.2.5): ``push id (i) | encoded field section``, the request the
        server will answer on the push stream of that id."""
        try:
            push_id, start = read_varint(payload, 0)
        except WireError:
            out.append(_error(1, sid, ts, "a PUSH_PROMISE frame is too short for its push id"))
            return
        if self.max_push_id is None or push_id > self.max_push_id:
            limit = "no MAX_PUSH_ID" if self.max_push_id is None else str(self.max_push_id)
            self.diagnostics.append(
                Diagnostic(
                    code="h3.push_id",
                    message=f"push {push_id} promised on stream {sid} is past the client's "
                    f"limit ({limit} seen; RFC 9114 §4.6: H3_ID_ERROR)",
                )
            )
        if push_id in self._promises or push_id in self._waiting:
            return  # the same promise again on another request stream (§4.6)
        # the block is decoded under a key no stream id can take (ids stay below 2**62), so
        # a block QPACK holds back comes out as this promise's, not as the stream's headers
        self._waiting[push_id] = (sid, ts)
        found = self._qpack[1].block(_PROMISE_KEY + push_id, payload[start:])
        if found is not None:
            self._promised(found, ts, out)

    def _promised(self, found: Decoded, ts: float, out: list[HttpEvent]) -> None:
        """A PUSH_PROMISE's field section decoded (or given up)."""
        push_id = found[0] - _PROMISE_KEY
        sid, promised = self._waiting.pop(push_id)
        headers = found[1]
        if headers is None:
            self.diagnostics.append(
                Diagnostic(
                    code="h3.push_promise",
                    message=f"the PUSH_PROMISE of push {push_id} on stream {sid} does not "
                    f"decode ({found[2]}): its pushed request is reported without headers",
                )
            )
        self._promises[push_id] = (sid, headers or [], promised, headers is not None)
        self._emit_push(push_id, ts, out)

    def _push_stream(self, h: _Half, sid: int, ts: float, out: list[HttpEvent]) -> None:
        """A push stream (§4.6): its push id, then a response's frames, held until its
        promise is read (the streams are independent: the push may come first)."""
        if h.push_id < 0:
            try:
                h.push_id, start = read_varint(h.buf, 0)
            except WireError:
                return
            del h.buf[:start]
            self._pushes[h.push_id] = sid
            self._emit_push(h.push_id, ts, out)
        if h.push_id in self._pushed:
            self._request(h, 1, sid, ts, out)
            self._end(h, 1, sid, ts, out)

    def _emit_push(self, push_id: int, ts: float, out: list[HttpEvent]) -> None:
        """Promise and push stream both read: the pushed exchange opens (the push stream's
        id is its stream), and the held response frames follow."""
        if push_id in self._pushed or push_id not in self._promises or push_id not in self._pushes:
            return
        self._pushed.add(push_id)
        request_sid, headers, promised, whole = self._promises[push_id]
        sid = self._pushes[push_id]
        out.append(
            PushPromised(
                stream=request_sid,
                promised_stream=sid,
                headers=headers,
                ts=promised,
                version="HTTP/3",
            )
        )
        h = self._half(1, sid)
        h.lossy = h.lossy or not whole
        self._request(h, 1, sid, ts, out)
        self._end(h, 1, sid, ts, out)

    def _close_pushes(self, ts: float, out: list[HttpEvent]) -> None:
        """The end: promises never pushed and pushes never promised are said, and a push
        stream without its promise is read as a response without its request."""
        for push_id, (request_sid, *_) in self._promises.items():
            if push_id in self._pushes:
                continue
            who = self.cancelled.get(push_id)
            why = (
                f"the {_WHO[who]} cancelled it (CANCEL_PUSH)"
                if who is not None
                else "its push stream is not in the capture"
            )
            self.diagnostics.append(
                Diagnostic(
                    code="h3.push_not_seen",
                    severity="info" if who is not None else "warning",
                    message=f"push {push_id} promised on stream {request_sid} was not pushed: "
                    f"{why}",
                )
            )
        for push_id, sid in self._pushes.items():
            if push_id in self._pushed:
                continue
            self._pushed.add(push_id)
            self.diagnostics.append(
                Diagnostic(
                    code="h3.push_unpromised",
                    severity="warning",
                    message=f"push stream {sid} (push {push_id}) has no PUSH_PROMISE in the "
                    f"capture: its response is reported without the request it answers",
                )
            )
            h = self._half(1, sid)
            self._request(h, 1, sid, ts, out)
            h.lossy = True

    def _control(self, h: _Half, d: int, ts: float, out: list[HttpEvent]) -> None:
        buf = h.buf
        while buf:
            if h.skip_left:
                take = min(h.skip_left, len(buf))
                h.skip_left -= take
                del buf[:take]
                continue
            frame = _frame_head(buf)
            if frame is None:
                return
            kind, length, start = frame
            if kind not in (SETTINGS, GOAWAY, MAX_PUSH_ID, CANCEL_PUSH):
                del buf[:start]
                h.skip_left = length
                self._skip_count(f"control frame 0x{kind:x}", 1)
                continue
            if len(buf) < start + length:
                return
            payload = bytes(buf[start : start + length])
            del buf[: start + length]
            try:
                if kind == SETTINGS:
                    self._settings(d, payload, ts, out)
                elif kind == MAX_PUSH_ID:  # §7.2.7: the client's, never lowered
                    value, _ = read_varint(payload, 0)
                    self.max_push_id = max(value, self.max_push_id or 0)
                elif kind == CANCEL_PUSH:  # §7.2.3: either side gives a push up
                    value, _ = read_varint(payload, 0)
                    self.cancelled.setdefault(value, d)
                else:
                    last, _ = read_varint(payload, 0)
                    out.append(
                        ConnectionGoAway(
                            response=d == 1,
                            last_stream=last,
                            error_code=0,
                            error_name="H3_NO_ERROR",
                            debug_data=b"",
                            ts=ts,
                        )
                    )
            except WireError as exc:
                self.diagnostics.append(
                    Diagnostic(
                        code="h3.bad_frame",
                        message=f"the {_WHO[d]}'s control frame 0x{kind:x} does not parse: {exc}",
                    )
                )

    def _settings(self, d: int, payload: bytes, ts: float, out: list[HttpEvent]) -> None:
        """RFC 9114 §7.2.4: identifier/value pairs; d's settings govern what its peer sends."""
        found: dict[int, int] = {}
        pos = 0
        while pos < len(payload):
            key, pos = read_varint(payload, pos)
            value, pos = read_varint(payload, pos)
            found[key] = value
        if self.settings[d] is not None:
            return
        self.settings[d] = found
        capacity = found.get(_QPACK_MAX_TABLE_CAPACITY, 0)
        blocked = found.get(_QPACK_BLOCKED_STREAMS, 0)
        self._decoded(1 - d, self._qpack[1 - d].settings(capacity, blocked), ts, out)

    def _skip_count(self, name: str, n: int) -> None:
        self.skipped[name] = self.skipped.get(name, 0) + n


def _error(d: int, sid: int, ts: float, message: str) -> ParseError:
    return ParseError(response=d == 1, message=message, offset=-1, ts=ts, stream=sid)


def _frame_head(buf: bytearray) -> tuple[int, int, int] | None:
    """``(type, length, payload start)`` of the frame at the start of ``buf``, or None."""
    try:
        kind, pos = read_varint(buf, 0)
        length, pos = read_varint(buf, pos)
    except WireError:
        return None
    return kind, length, pos


def _pseudo(headers: Headers, name: str) -> str | None:
    for key, value in headers:
        if key == name:
            return value
    return None


def _status(value: str | None) -> int:
    if value is None or len(value) != 3 or not (value.isascii() and value.isdigit()):
        return 0
    return int(value)
