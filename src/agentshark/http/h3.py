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

Not read yet: push streams (their bytes are counted and named), Extended CONNECT (RFC 9220),
PRIORITY_UPDATE (skipped as an unknown type is).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentshark.errors import Diagnostic
from agentshark.http.events import (
    BodyData,
    BodyGap,
    ConnectionGoAway,
    HttpEvent,
    InformationalResponse,
    MessageEnded,
    ParseError,
    RequestHeaders,
    ResponseHeaders,
    StreamReset,
)
from agentshark.http.h3_qpack import Decoded, QpackSide
from agentshark.model import Headers
from agentshark.quic.events import QuicEvent, QuicStreamData, QuicStreamGap, QuicStreamReset
from agentshark.quic.wire import WireError, read_varint

__all__ = ["H3Connection", "error_name"]

DATA, HEADERS, CANCEL_PUSH, SETTINGS, PUSH_PROMISE, GOAWAY, MAX_PUSH_ID = 0, 1, 3, 4, 5, 7, 13
CONTROL, PUSH, ENCODER, DECODER = 0, 1, 2, 3
_QPACK_MAX_TABLE_CAPACITY, _QPACK_BLOCKED_STREAMS = 0x01, 0x07
_CONTROL_ONLY = frozenset({CANCEL_PUSH, SETTINGS, GOAWAY, MAX_PUSH_ID})
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

    def __init__(self) -> None:
        self._halves: dict[tuple[int, int], _Half] = {}
        self._qpack = (QpackSide(), QpackSide())  # by sender
        self.settings: list[dict[int, int] | None] = [None, None]
        self.diagnostics: list[Diagnostic] = []
        self.skipped: dict[str, int] = {}

    def feed(self, ev: QuicEvent, location: str = "") -> list[HttpEvent]:
        out: list[HttpEvent] = []
        if type(ev) is QuicStreamData:
            self._data(ev.direction, ev.stream_id, ev.data, ev.fin, ev.ts, out)
        elif type(ev) is QuicStreamGap:
            self._gap(ev, out)
        elif type(ev) is QuicStreamReset:
            self._reset(ev, out)
        return out

    def close(self, ts: float) -> list[HttpEvent]:
        """The connection is over: undecodable heads named, open messages ended incomplete."""
        out: list[HttpEvent] = []
        for sender, side in enumerate(self._qpack):
            self._decoded(sender, side.close(), ts, out)
        for (d, sid), h in self._halves.items():
            if sid & 2 or h.ended or not (h.seen or h.head):
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
        h.buf += data
        h.fin = h.fin or fin
        if sid & 2:
            self._uni(h, d, sid, ts, out)
        elif sid & 1:
            if data:
                self._skip_count("server-initiated bidirectional stream bytes", len(data))
            h.buf.clear()
        else:
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
            out.append(
                ParseError(
                    response=d == 1,
                    message=f"the header block of stream {sid} does not decode: {why}",
                    offset=-1,
                    ts=ts,
                    stream=sid,
                )
            )
            if not h.head:
                self._lost_head(h, d, sid, ts, out)
            else:
                h.lossy = True
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
        if not h.fin or h.blocked or h.ended or sid & 3:
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
        else:
            name = {PUSH: "push stream bytes", DECODER: "QPACK decoder stream bytes"}.get(
                h.kind, "unknown stream type bytes"
            )
            self._skip_count(name, len(buf))
            buf.clear()

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
            if kind not in (SETTINGS, GOAWAY):
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
