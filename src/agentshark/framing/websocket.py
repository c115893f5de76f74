"""WebSocket frames read passively, one direction at a time (RFC 6455 §5, RFC 7692).

A :class:`WsDirection` takes one direction's bytes after the handshake (``feed``/``gap``/
``close``) and returns :class:`WsMessage` events and Diagnostics, never an exception. The
rules it reads by:

* A frame is ``FIN RSV1 RSV2 RSV3 opcode(4) | MASK len(7) [len16 | len64] [mask(4)]
  payload`` (§5.2). A 64-bit length has its top bit clear; a length that did not need the
  long form is allowed but noted (§5.2 "the minimal number of bytes MUST be used").
* Client-to-server frames are masked, server-to-client frames are not (§5.3); a frame that
  breaks this is still read, with a diagnostic: the bit says whether a key follows.
* A message is a text (1) or binary (2) frame and its continuation (0) frames up to the one
  with FIN; control frames (close 8, ping 9, pong 10) are single frames of at most 125 bytes
  and may come between the fragments of a message (§5.4, §5.5). Reserved opcodes, a
  continuation with no message, or a new message inside one are protocol errors: noted, and
  the frame is still framed by its length, so the stream stays in step.
* A close frame's payload is a 2-byte status code and a UTF-8 reason (§5.5.1, §7.4).
* Text messages are UTF-8 (§8.1): invalid bytes are noted, the bytes kept.
* ``permessage-deflate`` (RFC 7692 §7): RSV1 on a message's first frame says it is
  compressed; its payload plus ``00 00 ff ff`` is raw DEFLATE, decoded with the LZ77 window
  kept from the previous message unless the sender's ``*_no_context_takeover`` was agreed.
  With context takeover, a message whose back-references reach before the first message this
  reader saw (a capture that starts mid-connection, or after a gap) cannot be decoded: it is
  reported undecodable, never guessed. That is exact, not a heuristic: after a gap or a
  failure the decompressor starts with an empty window, so a reference into lost bytes is a
  zlib error, and a message that refers only to what this reader decoded comes out as sent.

A message keeps at most ``max_payload`` bytes of its (decompressed) payload; ``size`` and
``wire_size`` still count all of it, and ``truncated`` says so. After a gap the reader looks
for the next frame header that chains: a plausible header whose frame ends where another
plausible header, or the data, ends; the message cut by the gap is reported incomplete.
"""

from __future__ import annotations

import operator
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from agentshark.errors import Diagnostic
from agentshark.framing.events import at

__all__ = [
    "BINARY",
    "CLOSE",
    "CONTINUATION",
    "PING",
    "PONG",
    "TEXT",
    "Deflate",
    "WsDirection",
    "WsMessage",
    "WsOutput",
    "looks_like_frames",
    "parse_deflate",
]

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0, 1, 2, 8, 9, 10
OPCODE_NAMES = {0: "continuation", 1: "text", 2: "binary", 8: "close", 9: "ping", 10: "pong"}
_DATA = (TEXT, BINARY)
_CONTROL = (CLOSE, PING, PONG)
_TAIL = b"\x00\x00\xff\xff"  # RFC 7692 §7.2.2: the tail the sender removed
_RESYNC_SCAN = 1 << 16  # how far past a gap a frame header is looked for
_U16 = struct.Struct("!H")
_U64 = struct.Struct("!Q")


@dataclass(frozen=True, slots=True, kw_only=True)
class Deflate:
    """The permessage-deflate parameters agreed in the handshake (RFC 7692 §7.1), as the
    server's ``Sec-WebSocket-Extensions`` response says them."""

    server_no_context_takeover: bool = False
    client_no_context_takeover: bool = False
    server_max_window_bits: int = 15
    client_max_window_bits: int = 15

    def takeover(self, direction: int) -> bool:
        """Whether the sender of ``direction`` (0 client, 1 server) keeps its LZ77 window."""
        return not (
            self.client_no_context_takeover if direction == 0 else self.server_no_context_takeover
        )


def parse_deflate(header: str | None) -> Deflate | None:
    """The ``permessage-deflate`` offer a ``Sec-WebSocket-Extensions`` response header
    accepted, or None when it names no such extension. Unknown parameters are ignored (a
    server that accepts them answered them itself)."""
    if not header:
        return None
    for extension in header.split(","):
        name, *params = (p.strip() for p in extension.split(";"))
        if name.lower() != "permessage-deflate":
            continue
        values: dict[str, object] = {}
        for param in params:
            key, _, value = param.partition("=")
            key = key.strip().lower()
            if key in ("server_no_context_takeover", "client_no_context_takeover"):
                values[key] = True
            elif key in ("server_max_window_bits", "client_max_window_bits"):
                bits = value.strip().strip('"')
                if bits.isdigit() and 8 <= int(bits) <= 15:
                    values[key] = int(bits)
        return Deflate(**values)  # type: ignore[arg-type]
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class WsMessage:
    """One message (a data message of one or more frames, or a control frame).

    ``payload`` is unmasked and, for a compressed message, inflated (None when it could not
    be: see the Diagnostic before it). ``first_ts``/``last_ts`` are the arrival times of its
    first and last frame; ``offset`` the direction's byte offset of its first frame.
    ``complete`` is False for a message cut by a gap or by the end of the capture.
    """

    direction: int
    opcode: int
    payload: bytes | None
    size: int  # payload bytes as decoded (inflated); the wire's when not decoded
    wire_size: int  # payload bytes on the wire, all frames
    frames: int
    first_ts: float
    last_ts: float
    offset: int
    compressed: bool = False
    complete: bool = True
    truncated: bool = False  # payload keeps only the first max_payload bytes
    close_code: int | None = None
    close_reason: str | None = None

    @property
    def kind(self) -> str:
        return OPCODE_NAMES.get(self.opcode) or f"opcode {self.opcode}"

    def text(self) -> str | None:
        """A text or close message's payload as text (invalid UTF-8 replaced), else None."""
        if self.payload is None or self.opcode not in (TEXT, CLOSE):
            return None
        body = self.payload[2:] if self.opcode == CLOSE else self.payload
        return body.decode("utf-8", "replace")

    def __reduce__(self) -> tuple[Callable[..., WsMessage], tuple[Any, ...]]:
        """Pickled as its field values, in order (a worker of :mod:`agentshark.pipeline.jobs`
        sends every message of its sessions): a frozen dataclass's own ``__getstate__`` and
        ``__setstate__`` walk ``fields()`` for each object, about 15 us a message both ways,
        the most of a WebSocket session's cost in a shared run."""
        return _unpickled, _field_values(self)


WsOutput = WsMessage | Diagnostic


def _message_setters() -> tuple[Callable[[WsMessage, object], None], ...]:
    names = tuple(f.name for f in fields(WsMessage))
    assert names == (
        *("direction", "opcode", "payload", "size", "wire_size", "frames", "first_ts"),
        *("last_ts", "offset", "compressed", "complete", "truncated", "close_code"),
        "close_reason",
    ), names
    return tuple(getattr(WsMessage, name).__set__ for name in names)


_SETTERS = _message_setters()
_field_values = operator.attrgetter(*(f.name for f in fields(WsMessage)))  # a tuple, in order
(
    _set_direction,
    _set_opcode,
    _set_payload,
    _set_size,
    _set_wire_size,
    _set_frames,
    _set_first_ts,
    _set_last_ts,
    _set_offset,
    _set_compressed,
    _set_complete,
    _set_truncated,
    _set_close_code,
    _set_close_reason,
) = _SETTERS
_object_new = object.__new__


def _unpickled(
    direction: int,
    opcode: int,
    payload: bytes | None,
    size: int,
    wire_size: int,
    frames: int,
    first_ts: float,
    last_ts: float,
    offset: int,
    compressed: bool,
    complete: bool,
    truncated: bool,
    close_code: int | None,
    close_reason: str | None,
) -> WsMessage:
    """A pickled message back from its field values (:meth:`WsMessage.__reduce__`), by the
    slot descriptors as :func:`_whole_message` sets them."""
    m: WsMessage = _object_new(WsMessage)
    _set_direction(m, direction)
    _set_opcode(m, opcode)
    _set_payload(m, payload)
    _set_size(m, size)
    _set_wire_size(m, wire_size)
    _set_frames(m, frames)
    _set_first_ts(m, first_ts)
    _set_last_ts(m, last_ts)
    _set_offset(m, offset)
    _set_compressed(m, compressed)
    _set_complete(m, complete)
    _set_truncated(m, truncated)
    _set_close_code(m, close_code)
    _set_close_reason(m, close_reason)
    return m


def _whole_message(
    direction: int, opcode: int, payload: bytes, ts: float, offset: int
) -> WsMessage:
    """``WsMessage(...)`` of a whole one-frame message, uncompressed, at a third of the
    cost: a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``
    (about 5 us for these 14, the most of a small message's cost); the slot descriptors are
    faster, and the type stays frozen (as :mod:`agentshark.framing.sse` does)."""
    m: WsMessage = _object_new(WsMessage)
    size = len(payload)
    _set_direction(m, direction)
    _set_opcode(m, opcode)
    _set_payload(m, payload)
    _set_size(m, size)
    _set_wire_size(m, size)
    _set_frames(m, 1)
    _set_first_ts(m, ts)
    _set_last_ts(m, ts)
    _set_offset(m, offset)
    _set_compressed(m, False)
    _set_complete(m, True)
    _set_truncated(m, False)
    _set_close_code(m, None)
    _set_close_reason(m, None)
    return m


@dataclass(slots=True)
class _Frame:
    fin: bool
    rsv: int
    opcode: int
    masked: bool
    length: int
    header: int  # header bytes, the masking key included


class _Message:
    """A message being read: its payload kept up to the limit (inflated on the fly when
    compressed, so that nothing but the kept part is ever held)."""

    __slots__ = (
        "chunks",
        "complete",
        "compressed",
        "failed",
        "first_ts",
        "frames",
        "inflater",
        "kept",
        "offset",
        "opcode",
        "size",
        "truncated",
        "wire_size",
    )

    def __init__(self, opcode: int, offset: int, ts: float, inflater: Any) -> None:
        self.opcode = opcode
        self.offset = offset
        self.first_ts = ts
        self.inflater = inflater
        self.compressed = inflater is not None
        self.chunks: list[bytes] = []
        self.kept = self.size = self.wire_size = self.frames = 0
        self.truncated = self.failed = False
        self.complete = True

    def add(self, data: bytes, limit: int) -> None:
        """A frame's payload (or part of it), unmasked."""
        self.wire_size += len(data)
        self._keep(self._inflate(data) if self.compressed else data, limit)

    def end(self, limit: int) -> None:
        """The last frame came: a compressed message's stream ends with the tail its
        sender removed (RFC 7692 §7.2.2)."""
        if self.compressed:
            self._keep(self._inflate(_TAIL), limit)

    def _inflate(self, data: bytes) -> bytes:
        if self.inflater is None:
            return b""
        try:
            out: bytes = self.inflater.decompress(data)
        except zlib.error:
            self.failed = True
            self.inflater = None
            return b""
        return out

    def _keep(self, data: bytes, limit: int) -> None:
        self.size += len(data)
        room = limit - self.kept
        if room < len(data):
            data = data[: max(room, 0)]
            self.truncated = True
        if data:
            self.chunks.append(data)
            self.kept += len(data)

    def payload(self) -> bytes | None:
        return None if self.failed else b"".join(self.chunks)


def _header(buf: bytearray, pos: int) -> _Frame | None:
    """The frame header at ``pos``, or None while its bytes are not all there."""
    have = len(buf) - pos
    if have < 2:
        return None
    b0, b1 = buf[pos], buf[pos + 1]
    masked = bool(b1 & 0x80)
    length = b1 & 0x7F
    size = 2
    if length == 126:
        if have < 4:
            return None
        (length,) = _U16.unpack_from(buf, pos + 2)
        size = 4
    elif length == 127:
        if have < 10:
            return None
        (length,) = _U64.unpack_from(buf, pos + 2)
        size = 10
    if masked:
        size += 4
    if have < size:
        return None
    fin, rsv, opcode = bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0x0F
    return _Frame(fin=fin, rsv=rsv, opcode=opcode, masked=masked, length=length, header=size)


def _unmask(data: bytes, key: bytes, start: int) -> bytes:
    """``data`` XOR the 4-byte ``key`` taken from its byte ``start % 4`` on (RFC 6455
    §5.3), at C speed: one big-integer XOR."""
    n = len(data)
    if not n or not key:
        return data
    turn = start % 4
    stream = ((key[turn:] + key[:turn]) * (n // 4 + 1))[:n]
    mixed = int.from_bytes(data, "little") ^ int.from_bytes(stream, "little")
    return mixed.to_bytes(n, "little")


def _plausible(frame: _Frame, client: bool, deflate: bool) -> bool:
    """Could a header found by scanning after a gap be one? The mask bit the direction
    requires, no reserved bit (RSV1 only with deflate), a known opcode, a control frame
    short and final, a data frame shorter than a terabyte."""
    if frame.masked != client or frame.rsv & (3 if deflate else 7):
        return False
    if frame.opcode in _CONTROL:
        return frame.fin and frame.length <= 125
    return frame.opcode in _DATA and frame.length < 1 << 40


def looks_like_frames(head: bytes, *, client: bool) -> bool:
    """Do the first bytes of a direction whose handshake is not in the capture read as
    WebSocket frames from ``client`` (masked) or the server (unmasked)? Every header from
    byte 0 must be plausible (the direction's mask bit, no reserved bit but RSV1, a known
    opcode, a control frame short and final), the first a data or control frame (a
    continuation needs a message before it), each frame ending where the next header starts;
    it takes two whole frames, or one that ends exactly where ``head`` does, and a whole
    uncompressed text frame must be UTF-8. HTTP, TLS and HTTP/2 never pass: their first
    bytes set reserved opcodes or bits."""
    pos = whole = 0
    while whole < 2:
        frame = _header(bytearray(head[pos : pos + 14]), 0)
        if frame is None:
            break
        if not _plausible(frame, client, True) or (pos == 0 and frame.opcode == CONTINUATION):
            return False
        end = pos + frame.header + frame.length
        if end > len(head):
            break
        if frame.opcode == TEXT and not frame.rsv and frame.fin:
            key = head[pos + frame.header - 4 : pos + frame.header] if frame.masked else b""
            try:
                _unmask(head[pos + frame.header : end], key, 0).decode("utf-8")
            except UnicodeDecodeError:
                return False
        whole += 1
        pos = end
    return whole >= 2 or (whole == 1 and pos == len(head))


class WsDirection:
    """One direction of a WebSocket connection: bytes in, messages out (sans-I/O).

    ``direction`` is 0 for client -> server (frames masked), 1 for server -> client.
    ``deflate`` is what the handshake agreed, None for no compression; ``mid_stream`` says
    the reader did not see the connection from its first message (the LZ77 window may hold
    bytes it lacks); ``find_start`` that its bytes may start inside a frame (no handshake
    seen): reading starts at the first header that chains, as after a gap. ``location``
    prefixes Diagnostic locations.
    """

    __slots__ = (
        "_buf",
        "_control",
        "_deflate",
        "_direction",
        "_done",
        "_frame",
        "_frame_ts",
        "_inflater",
        "_key",
        "_location",
        "_lost_context",
        "_max",
        "_message",
        "_noted",
        "_offset",
        "_resync",
    )

    def __init__(
        self,
        direction: int,
        *,
        deflate: Deflate | None = None,
        max_payload: int = 1 << 20,
        location: str = "",
        mid_stream: bool = False,
        find_start: bool = False,
    ) -> None:
        self._direction = direction
        self._deflate = deflate
        self._max = max_payload
        self._location = location
        self._buf = bytearray()
        self._offset = 0  # the direction's offset of _buf[0]
        self._frame: _Frame | None = None  # the frame whose payload is being read
        self._key = b""
        self._done = 0  # payload bytes of _frame read so far
        self._frame_ts = 0.0
        self._control = bytearray()  # a control frame's payload so far
        self._message: _Message | None = None
        self._inflater: Any = None  # zlib's decompressor, kept across messages (takeover)
        self._lost_context = mid_stream
        self._resync = find_start
        self._noted: set[str] = set()

    # -- input ------------------------------------------------------------------------------

    def feed(self, data: bytes, ts: float) -> list[WsOutput]:
        out: list[WsOutput] = []
        if self._buf or self._frame is not None or self._message is not None or self._resync:
            self._buf += data
            self._run(ts, out, final=False)
            return out
        pos = self._whole_frames(data, ts, out)  # the common case: whole one-frame messages
        if pos < len(data):
            self._buf += data[pos:]
            self._run(ts, out, final=False)
        return out

    def _whole_frames(self, data: bytes, ts: float, out: list[WsOutput]) -> int:
        """Read the single-frame text and binary messages at the start of ``data`` (FIN set,
        no reserved bit, no compression, the direction's masking, a 7- or 16-bit length, all
        of it here) without the general state machine; return where the rest starts. Anything
        else (control frames, fragments, compression, a frame cut by the segment) is left to
        :meth:`_run`, which reads them by the same rules."""
        end = len(data)
        pos = 0
        masked = self._direction == 0
        mask_bit = 0x80 if masked else 0
        direction, offset, limit = self._direction, self._offset, self._max
        while end - pos >= 2:
            b0, b1 = data[pos], data[pos + 1]
            if b0 not in (0x81, 0x82) or b1 & 0x80 != mask_bit:
                break
            length = b1 & 0x7F
            head = 2
            if length == 126:
                if end - pos < 4:
                    break
                length = (data[pos + 2] << 8) | data[pos + 3]
                head = 4
            elif length == 127:
                break
            key = b""
            if masked:
                key = data[pos + head : pos + head + 4]
                head += 4
            stop = pos + head + length
            if stop > end or length > limit:
                break
            payload = data[pos + head : stop]
            if masked:
                payload = _unmask(payload, key, 0)
            opcode = b0 & 0x0F
            if opcode == TEXT:
                try:
                    payload.decode("utf-8")
                except UnicodeDecodeError:
                    break  # the general path says so, with a diagnostic
            out.append(_whole_message(direction, opcode, payload, ts, offset + pos))
            pos = stop
        self._offset += pos
        return pos

    def gap(self, size: int, ts: float) -> list[WsOutput]:
        """``size`` bytes of this direction were lost: the message they cut ends
        incomplete, and reading resumes at the next header that chains."""
        out: list[WsOutput] = []
        self._run(ts, out, final=True)
        where = self._offset + len(self._buf)
        message = f"{size} bytes were lost here; the message they cut is incomplete"
        self._note(out, "ws.gap", message, where, every=True)
        self._cut(ts, out)
        self._buf.clear()
        self._offset = where + size
        self._resync = True
        self._lost_context = True
        self._inflater = None  # a window missing the lost bytes would decode them wrongly
        return out

    def close(self, ts: float) -> list[WsOutput]:
        """The direction ended: a frame or message not finished is reported incomplete."""
        out: list[WsOutput] = []
        self._run(ts, out, final=True)
        if self._frame is not None or self._message is not None or self._buf:
            message = "the capture ends inside a frame; its message is reported incomplete"
            self._note(out, "ws.truncated", message, self._offset)
            self._cut(ts, out)
        self._buf.clear()
        return out

    # -- frames -----------------------------------------------------------------------------

    def _run(self, ts: float, out: list[WsOutput], *, final: bool) -> None:
        buf = self._buf
        pos = 0
        while True:
            if self._resync:
                pos, found = self._find_header(pos, out, final=final)
                if not found:
                    break
            frame = self._frame
            if frame is None:
                frame = _header(buf, pos)
                if frame is None:
                    break
                self._start(frame, pos, ts, out)
                pos += frame.header
                if frame.length:
                    continue
            take = min(len(buf) - pos, frame.length - self._done)
            if take <= 0 and frame.length:
                break
            chunk = _unmask(bytes(buf[pos : pos + take]), self._key, self._done)
            pos += take
            self._done += take
            self._payload(frame, chunk)
            if self._done == frame.length:
                self._end(frame, ts, self._offset + pos, out)
        del buf[:pos]
        self._offset += pos

    def _start(self, frame: _Frame, pos: int, ts: float, out: list[WsOutput]) -> None:
        where = self._offset + pos
        self._check(frame, where, out)
        self._frame = frame
        self._key = (
            bytes(self._buf[pos + frame.header - 4 : pos + frame.header]) if frame.masked else b""
        )
        self._done = 0
        self._frame_ts = ts
        op = frame.opcode
        if op in _DATA:
            if self._message is not None:
                what = "a new message starts before the last one's final frame"
                self._note(out, "ws.interleaved", f"{what}; the last one is incomplete", where)
                self._cut(ts, out, keep_frame=True)
            self._message = _Message(op, where, ts, self._inflater_for(frame, where, out))
        elif op == CONTINUATION and self._message is None:
            what = "a continuation frame with no message before it"
            self._note(out, "ws.orphan_continuation", f"{what}; its payload is skipped", where)
        elif op in _CONTROL:
            self._control = bytearray()
        if self._message is not None and op in (CONTINUATION, *_DATA):
            self._message.frames += 1

    def _payload(self, frame: _Frame, chunk: bytes) -> None:
        op = frame.opcode
        if op in _CONTROL:
            if len(self._control) < 1 << 16:
                self._control += chunk[: (1 << 16) - len(self._control)]
        elif (op in _DATA or op == CONTINUATION) and self._message is not None:
            self._message.add(chunk, self._max)

    def _end(self, frame: _Frame, ts: float, end: int, out: list[WsOutput]) -> None:
        self._frame = None
        op = frame.opcode
        if op in _CONTROL:
            self._control_done(frame, ts, end - frame.header - frame.length, out)
        elif frame.fin and self._message is not None and op in (CONTINUATION, *_DATA):
            message, self._message = self._message, None
            self._finish(message, ts, out)

    def _check(self, frame: _Frame, where: int, out: list[WsOutput]) -> None:
        client = self._direction == 0
        if frame.masked != client:
            what = "an unmasked client" if client else "a masked server"
            self._note(out, "ws.mask", f"{what} frame (RFC 6455 §5.3); it is read as sent", where)
        if frame.rsv & ~(4 if self._deflate is not None else 0) & 7:
            what = f"a frame sets reserved bits {frame.rsv:03b}"
            self._note(out, "ws.reserved_bits", f"{what} that no extension agreed", where)
        if frame.opcode not in OPCODE_NAMES:
            what = f"a frame uses the reserved opcode {frame.opcode}"
            self._note(out, "ws.reserved_opcode", f"{what}; it is skipped", where)
        elif frame.opcode in _CONTROL and (not frame.fin or frame.length > 125):
            what = "a control frame is fragmented or longer than 125 bytes"
            self._note(out, "ws.bad_control", f"{what} (RFC 6455 §5.5)", where)

    def _control_done(self, frame: _Frame, ts: float, where: int, out: list[WsOutput]) -> None:
        payload = bytes(self._control)
        code: int | None = None
        reason: str | None = None
        if frame.opcode == CLOSE and len(payload) >= 2:
            (code,) = _U16.unpack_from(payload)
            reason = payload[2:].decode("utf-8", "replace")
        elif frame.opcode == CLOSE and payload:
            what = "a close frame with a 1-byte payload"
            self._note(out, "ws.bad_close", f"{what} (RFC 6455 §5.5.1)", where)
        out.append(
            WsMessage(
                direction=self._direction,
                opcode=frame.opcode,
                payload=payload,
                size=frame.length,
                wire_size=frame.length,
                frames=1,
                first_ts=self._frame_ts,
                last_ts=ts,
                offset=where,
                truncated=len(payload) < frame.length,
                close_code=code,
                close_reason=reason,
            )
        )

    # -- messages ---------------------------------------------------------------------------

    def _inflater_for(self, frame: _Frame, where: int, out: list[WsOutput]) -> Any:
        """The decompressor of a message whose first frame is ``frame``, or None when it is
        not compressed (RSV1 clear)."""
        if not frame.rsv & 4:
            return None
        deflate = self._deflate
        if deflate is None:
            what = "a message has RSV1 set but no permessage-deflate was agreed (or seen)"
            self._note(out, "ws.deflate_unnegotiated", f"{what}; it is inflated on trial", where)
            deflate = Deflate()
        if self._inflater is None or not deflate.takeover(self._direction):
            self._inflater = zlib.decompressobj(-15)
            if not deflate.takeover(self._direction):
                self._lost_context = False
        return self._inflater

    def _finish(self, m: _Message, ts: float, out: list[WsOutput]) -> None:
        if m.complete:
            m.end(self._max)
        if m.compressed and (m.failed or not m.complete):
            self._inflater = None  # its window is incomplete from here on
        if m.failed:
            why = (
                "its back-references reach bytes this capture does not have (it starts "
                "mid-connection or after a gap, with context takeover)"
                if self._lost_context
                else "it is not valid DEFLATE"
            )
            message = f"a compressed message cannot be decoded: {why}"
            self._note(out, "ws.undecodable", message, m.offset, every=not self._lost_context)
        if m.compressed and not m.complete and self._deflate is not None:
            self._lost_context = self._deflate.takeover(self._direction)
        payload = m.payload()
        if payload is not None and m.opcode == TEXT and m.complete and not m.truncated:
            try:
                payload.decode("utf-8")
            except UnicodeDecodeError as exc:
                what = f"a text message is not UTF-8 at byte {exc.start} (RFC 6455 §8.1)"
                self._note(out, "ws.invalid_utf8", f"{what}; its bytes are kept", m.offset)
        out.append(
            WsMessage(
                direction=self._direction,
                opcode=m.opcode,
                payload=payload,
                size=m.size if payload is not None else m.wire_size,
                wire_size=m.wire_size,
                frames=m.frames,
                first_ts=m.first_ts,
                last_ts=ts,
                offset=m.offset,
                compressed=m.compressed,
                complete=m.complete,
                truncated=m.truncated,
            )
        )

    def _cut(self, ts: float, out: list[WsOutput], *, keep_frame: bool = False) -> None:
        """The message being read ends here, incomplete (its frame too, unless a new
        message's frame is what cut it)."""
        if not keep_frame:
            self._frame = None
        message, self._message = self._message, None
        if message is not None:
            message.complete = False
            self._finish(message, ts, out)

    # -- gaps -------------------------------------------------------------------------------

    def _find_header(self, pos: int, out: list[WsOutput], *, final: bool) -> tuple[int, bool]:
        """After a gap: (where reading goes on, whether a header was found there). The
        header must chain: its frame ends at another plausible header or where the data
        ends. Bytes before it are skipped; a candidate that cannot be checked yet waits for
        more data."""
        buf = self._buf
        client = self._direction == 0
        deflate = self._deflate is not None
        limit = min(len(buf), pos + _RESYNC_SCAN)
        for cand in range(pos, limit):
            frame = _header(buf, cand)
            if frame is None:
                if final:
                    continue
                return self._skipped(pos, cand, out), False
            if not _plausible(frame, client, deflate):
                continue
            end = cand + frame.header + frame.length
            if end < len(buf):
                following = _header(buf, end)
                if following is None and not final:
                    return self._skipped(pos, cand, out), False
                if following is None or not _plausible(following, client, deflate):
                    continue
            self._resync = False
            return self._skipped(pos, cand, out), True
        if limit - pos >= _RESYNC_SCAN or final:
            return self._skipped(pos, limit, out), False
        return pos, False

    def _skipped(self, pos: int, to: int, out: list[WsOutput]) -> int:
        """Bytes ``pos``..``to`` of the buffer are not frames: say so; go on at ``to``."""
        if to > pos:
            message = (
                f"{to - pos} bytes after a gap (or before the first frame of a session seen "
                "from its middle) are not a frame header; they are skipped"
            )
            self._note(out, "ws.resync", message, self._offset + pos, every=True)
        return to

    def _note(
        self, out: list[WsOutput], code: str, message: str, offset: int, *, every: bool = False
    ) -> None:
        if not every:
            if code in self._noted:
                return
            self._noted.add(code)
        out.append(Diagnostic(code=code, message=message, location=at(self._location, offset)))
