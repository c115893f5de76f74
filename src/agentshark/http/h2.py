"""A passive HTTP/2 decoder for both directions of one connection (RFC 9113).

Input: the in-order bytes of each direction (``feed``), capture gaps (``gap``) and ends
(``end``), as :class:`agentshark.http.h1.H1Connection` takes them. Output: the
version-neutral events of :mod:`agentshark.http.events`, keyed by HTTP/2 stream id.

It observes; it never answers and enforces no flow control or stream limits (a passive
observer is not an endpoint). This module cuts frames from the byte stream; hyperframe
parses the control frames, :mod:`~agentshark.http.h2_hpack` decodes header blocks with one
HPACK state per direction, and :mod:`~agentshark.http.h2_streams` turns blocks and
END_STREAM into messages.

* DATA payloads are handed out as they arrive, padding removed (§6.1): a frame that sits in
  one ``feed`` becomes one :class:`BodyData` with that feed's time; a frame spread over
  several feeds becomes one per feed, each with its own time.
* A header block is HEADERS or PUSH_PROMISE plus CONTINUATION frames up to END_HEADERS
  (§4.3, §6.10), decoded when whole. PUSH_PROMISE blocks are the server's, so they go
  through the server's HPACK state.
* A block that does not fully decode (a capture started mid-connection has no HPACK state)
  still yields its head event, with the fields that did decode: ``method`` and ``target``
  are ``"?"``, and ``status`` is 0, when their pseudo-header is missing; a
  :class:`ParseError` on the stream says what was lost. The body is kept.
* SETTINGS_HEADER_TABLE_SIZE and SETTINGS_MAX_FRAME_SIZE bind the *other* side's encoder
  and frames, from when that side acknowledges them (§6.5.3).
* RST_STREAM, GOAWAY, PUSH_PROMISE and frames of unknown type (§5.5) become events of their
  own; PRIORITY, PING and WINDOW_UPDATE are skipped.
* Bytes that are not frames (``expect_preface`` False: the capture started mid-connection;
  garbage; a frame larger than SETTINGS_MAX_FRAME_SIZE allows): the direction
  resynchronizes on the first run of plausible frame headers
  (:func:`~agentshark.http.h2_frames.chain_verdict`), with a :class:`ParseError` for the
  bytes skipped.

A capture gap (``gap``, its size exact, as TCP sequence numbers give it) costs the streams
it may have touched, never the connection:

* inside a DATA payload (its frame header seen): a :class:`BodyGap` on that stream only;
* inside another frame whose 9-byte header was seen: that frame is lost, and the rest of it
  is skipped where it comes, so the frames after it are read in place. A cut HEADERS,
  PUSH_PROMISE or CONTINUATION loses its header block (its message is reported with the
  fields that never came missing, marked incomplete) and the direction's HPACK table is
  forgotten; a cut RST_STREAM marks both messages of its stream; a cut SETTINGS keeps its
  place in the SETTINGS/ACK pairing; PING, WINDOW_UPDATE, PRIORITY, GOAWAY cost nothing
  but a diagnostic;
* past a frame boundary (or inside a frame header): which frames were lost is unknown.
  Every message of the direction that has not ended (or, on an open stream, not begun:
  the lost frame may be its head or a 1xx) is marked lossy, with a diagnostic on its stream
  naming the gap (direction, byte offset, size); the open header block is cut; HPACK
  forgets its table; the direction resyncs on the next frame boundary with the stricter
  rules of :func:`~agentshark.http.h2_frames.chain_verdict` (DATA, HEADERS and
  CONTINUATION only on streams that can still carry them). The marked messages go on:
  their frames after the resync are still added, and they end incomplete.

After HPACK forgets its table, a block that indexes an entry the capture no longer knows
(it may have been added, or moved, by a lost block) decodes without that field and leaves
its message incomplete; blocks that use only the static table, literals and entries added
since the gap decode as they would have (see :mod:`~agentshark.http.h2_hpack`). So every
message is either what a clean capture gives or marked incomplete, and a DATA frame is
only ever attributed by its own frame header.

Garbage in gives ParseErrors, never an exception.
"""

from __future__ import annotations

from collections import deque
from enum import Enum, auto

from hyperframe.exceptions import HyperframeError
from hyperframe.frame import (
    ContinuationFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PushPromiseFrame,
    RstStreamFrame,
    SettingsFrame,
)

from agentshark.http.events import (
    BodyData,
    BodyGap,
    ConnectionGoAway,
    HttpEvent,
    ParseError,
    StreamReset,
    UnknownFrame,
)
from agentshark.http.h2_frames import (
    ACK,
    CONTINUATION,
    DATA,
    DEFAULT_MAX_FRAME,
    END_HEADERS,
    END_STREAM,
    FRAME_HEADER,
    HEADERS,
    MAX_FRAME_LIMIT,
    PADDED,
    PING,
    PREFACE,
    PRIORITY,
    PRIORITY_FLAG,
    PUSH_PROMISE,
    RST_STREAM,
    SETTINGS,
    SETTINGS_HEADER_TABLE_SIZE,
    SETTINGS_MAX_FRAME_SIZE,
    WINDOW_UPDATE,
    chain_verdict,
    error_name,
    type_name,
)
from agentshark.http.h2_hpack import BlockDecoder, Decoded
from agentshark.http.h2_streams import ENDED, Streams

__all__ = ["PREFACE", "H2Connection", "error_name"]

MAX_HEADER_BLOCK = 1 << 20  # bytes of one header block kept (HEADERS + CONTINUATIONs)


class Mode(Enum):
    PREFACE = auto()  # the client's connection preface is expected
    MAYBE_PREFACE = auto()  # mid-connection capture: a preface is possible, not expected
    FRAMES = auto()  # in sync: at a frame boundary or inside a known frame
    RESYNC = auto()  # lost: looking for a plausible frame header


_FRAMES = Mode.FRAMES


class _Direction:
    """Decoding state of one direction. Plain attributes: DATA frames read them."""

    __slots__ = (
        "base",
        "block",
        "block_end",
        "block_lost",
        "block_offset",
        "block_promised",
        "block_size",
        "block_stream",
        "block_ts",
        "data_emit",
        "data_end",
        "data_left",
        "data_stream",
        "held",
        "held_len",
        "held_ts",
        "hpack",
        "max_frame",
        "mode",
        "need",
        "offset",
        "pad_left",
        "response",
        "settings",
        "side",
        "skip_offset",
        "skipped",
    )

    def __init__(self, side: int, mode: Mode, *, history_known: bool) -> None:
        self.side = side  # 0: the client's direction
        self.response = side == 1
        self.mode = mode
        self.offset = 0  # stream offset of the first byte not consumed (held bytes included)
        self.base = 0  # while a buffer is parsed: the stream offset of its first byte
        self.held: list[bytes] = []  # bytes of an unfinished frame, preface or resync run
        self.held_len = 0
        self.held_ts = 0.0  # arrival time of the first held byte
        self.need = 0  # held bytes wanted before parsing again
        self.data_left = 0  # DATA payload bytes still to come
        self.pad_left = 0  # DATA padding bytes still to come
        self.data_stream = 0
        self.data_emit = False  # the payload belongs to a message we report
        self.data_end = False  # END_STREAM ends that message after the payload
        self.block: list[bytes] = []  # header block fragments
        self.block_stream = 0  # 0: no header block open
        self.block_size = 0
        self.block_end = False  # END_STREAM on the HEADERS frame
        self.block_lost = False  # a capture gap cut the block: its fragments are dropped
        self.block_promised = 0  # the promised stream of a PUSH_PROMISE block
        self.block_ts = 0.0
        self.block_offset = 0
        self.hpack = BlockDecoder(history_known=history_known)
        # the receiver's SETTINGS_MAX_FRAME_SIZE, None when unknown
        self.max_frame: int | None = DEFAULT_MAX_FRAME if history_known else None
        self.settings: deque[dict[int, int]] = deque(maxlen=16)  # sent, not yet acknowledged
        self.skipped = 0  # bytes skipped by a resync, not yet reported
        self.skip_offset = 0


class H2Connection:
    """Both directions of one HTTP/2 connection. Direction 0 is the client's.

    ``expect_preface``: the capture has the connection's start (prior knowledge, ALPN h2,
    the h2c upgrade's 101). False: it started mid-connection: both directions resync, and
    HPACK starts without history. ``upgraded``: the connection came from an HTTP/1.1
    ``Upgrade: h2c`` request, which is stream 1 (RFC 7540 §3.2): the server's frames on
    stream 1 answer it, and the client sends no request on it.
    """

    def __init__(self, *, expect_preface: bool = True, upgraded: bool = False) -> None:
        known = expect_preface or upgraded
        self._dirs = (
            _Direction(0, Mode.PREFACE if known else Mode.MAYBE_PREFACE, history_known=known),
            _Direction(1, _FRAMES if known else Mode.RESYNC, history_known=known),
        )
        self._streams = Streams()
        if upgraded:
            # The upgrade request's HTTP2-Settings (not seen here) may have raised the
            # server's limits with no SETTINGS frame to show it.
            self._dirs[1].max_frame = None
            self._dirs[1].hpack.set_table_size_limit(None)
            upgrade = self._streams.get(1)
            assert upgrade is not None
            upgrade.state[0] = ENDED
            upgrade.method = "?"
            self._streams.max_stream = 1

    # -- public API ---------------------------------------------------------------------

    def feed(self, direction: int, data: bytes, ts: float) -> list[HttpEvent]:
        d = self._dirs[direction]
        out: list[HttpEvent] = []
        if not d.held:
            d.held_ts = ts
            self._run(d, data, ts, out, 0)
            return out
        # Complete the held unit (a frame header, a whole control frame, the preface, a
        # resync candidate) with just the bytes it needs: the rest of ``data`` is parsed
        # where it is, not copied.
        pos = 0
        n = len(data)
        while d.held:
            missing = d.need - d.held_len
            if n - pos < missing:
                if pos < n:
                    d.held.append(data[pos:] if pos else data)
                    d.held_len += n - pos
                return out
            d.held.append(data[pos : pos + missing])
            unit = b"".join(d.held)
            d.held = []
            d.held_len = 0
            pos += missing
            self._run(d, unit, ts, out, 0)
        if pos < n:
            self._run(d, data, ts, out, pos)
        return out

    def gap(self, direction: int, size: int, ts: float) -> list[HttpEvent]:
        """``size`` bytes of ``direction`` were never captured (see the module docstring
        for what they cost)."""
        d = self._dirs[direction]
        out: list[HttpEvent] = []
        gap = (
            f"a capture gap of {size} bytes at {'server' if d.response else 'client'} "
            f"byte {d.offset + d.held_len}"
        )
        if d.mode is Mode.RESYNC or d.mode is Mode.MAYBE_PREFACE:
            self._flush_resync(d, ts, out)
        if d.mode is _FRAMES:
            if not d.held:
                size = self._gap_in_data(d, size, ts, out)
            elif d.held_len >= 9:
                size = self._gap_in_frame(d, size, ts, out, gap)
            if not size:
                return out
        if d.mode is _FRAMES or d.mode is Mode.PREFACE:
            where = "frames" if d.mode is _FRAMES else "the connection preface"
            self._lose_sync(d, ts, out, f"{gap} lost {where}")
        else:
            self._report_skipped(d, ts, out)
            self._drop_held(d)
            if d.mode is Mode.RESYNC:  # still lost: whatever the gap held is unknown too
                self._streams.taint_open(d.side, d.offset, ts, out, gap)
                d.hpack.forget()
        d.offset += size
        return out

    def end(self, direction: int, ts: float, *, clean: bool) -> list[HttpEvent]:
        """No more bytes in ``direction``: every message it left open ends incomplete.
        (``clean`` does not matter: HTTP/2 ends messages by END_STREAM, never by closing.)"""
        d = self._dirs[direction]
        out: list[HttpEvent] = []
        if d.mode is Mode.RESYNC or d.mode is Mode.MAYBE_PREFACE:
            self._flush_resync(d, ts, out)
        if d.mode is Mode.PREFACE and d.held_len:
            out.append(self._error(d, ts, "the connection ended inside the connection preface"))
        elif d.mode is _FRAMES:
            if d.held_len:
                message = (
                    f"the connection ended inside a frame ({d.held_len} of {d.need} bytes captured)"
                )
                out.append(self._error(d, ts, message))
            if d.block_stream:
                message = f"the connection ended inside the header block of stream {d.block_stream}"
                out.append(self._error(d, ts, message, stream=d.block_stream))
        self._streams.end_open(d.side, ts, out)
        self._drop_held(d)
        self._reset_frame_state(d)
        d.mode = Mode.RESYNC
        return out

    # -- the byte loop --------------------------------------------------------------------

    def _run(self, d: _Direction, buf: bytes, ts: float, out: list[HttpEvent], pos: int) -> None:
        """Parse ``buf[pos:]``, whose first byte is at ``d.offset``; hold what cannot be
        parsed yet."""
        start = d.base = d.offset - pos
        n = len(buf)
        while pos < n:
            mode = d.mode
            if mode is _FRAMES:
                pos = self._frames(d, buf, pos, ts, out)
            elif mode is Mode.RESYNC:
                pos = self._resync(d, buf, pos, ts, out, final=False)
            else:
                pos = self._preface(d, buf, pos, ts, out)
            d.offset = start + pos
        d.offset = start + n - d.held_len

    def _hold(self, d: _Direction, buf: bytes, pos: int, need: int, ts: float) -> int:
        """Keep ``buf[pos:]`` until ``need`` bytes are there; returns the end of ``buf``."""
        if pos:
            d.held_ts = ts  # the held bytes start in the newest feed
        d.held = [buf[pos:] if pos else buf]
        d.held_len = len(buf) - pos
        d.need = need
        return len(buf)

    def _frames(self, d: _Direction, buf: bytes, pos: int, ts: float, out: list[HttpEvent]) -> int:
        """Frames from ``buf[pos:]``; returns where parsing stopped (the end, or a mode
        change). The hot path: DATA payloads are sliced out, nothing else is copied."""
        n = len(buf)
        response = d.response
        while pos < n:
            left = d.data_left
            if left:
                take = left if left <= n - pos else n - pos
                if d.data_emit:
                    chunk = buf if take == n else buf[pos : pos + take]
                    out.append(BodyData(stream=d.data_stream, response=response, data=chunk, ts=ts))
                pos += take
                d.data_left = left - take
                if not d.data_left and not d.pad_left and d.data_end:
                    self._data_end(d, ts, out)
                continue
            if d.pad_left:
                take = min(d.pad_left, n - pos)
                pos += take
                d.pad_left -= take
                if not d.pad_left and d.data_end:
                    self._data_end(d, ts, out)
                continue
            if n - pos < 9:
                return self._hold(d, buf, pos, 9, ts)
            hi, lo, ftype, flags, sid = FRAME_HEADER.unpack_from(buf, pos)
            length = hi << 8 | lo
            sid &= 0x7FFFFFFF
            d.offset = d.base + pos
            if d.max_frame is not None and length > d.max_frame:
                message = (
                    f"a {length}-byte frame exceeds the {d.max_frame} bytes "
                    "SETTINGS_MAX_FRAME_SIZE allows: these bytes are not a frame header"
                )
                self._lose_sync(d, ts, out, message)
                return pos
            end = pos + 9 + length
            if ftype == DATA:
                if end <= n and not flags & PADDED and not d.block_stream:
                    # The hot path of a streamed body: a whole unpadded DATA frame in
                    # ``buf``. Does what _data_frame and the payload branch above do for
                    # it, in one step: the same events, the same state left behind.
                    d.data_stream = sid
                    emit = d.data_emit = self._streams.data_start(d.side, sid, d.offset, ts, out)
                    d.data_end = False
                    if emit:
                        if length:
                            data = buf[pos + 9 : end]
                            out.append(BodyData(stream=sid, response=response, data=data, ts=ts))
                        if flags & END_STREAM:
                            self._streams.end_message(d.side, sid, ts, out, complete=True)
                    pos = end
                    continue
                pos = self._data_frame(d, buf, pos, length, flags, sid, ts, out)
                continue
            if end > n:
                return self._hold(d, buf, pos, 9 + length, ts)
            self._control(d, ftype, flags, sid, buf, pos, end, ts, out)
            pos = end
            if d.mode is not _FRAMES:
                return pos
        return pos

    def _hold_ts(self, d: _Direction, pos: int, ts: float) -> float:
        return d.held_ts if pos == 0 else ts

    # -- DATA -----------------------------------------------------------------------------

    def _data_frame(
        self,
        d: _Direction,
        buf: bytes,
        pos: int,
        length: int,
        flags: int,
        sid: int,
        ts: float,
        out: list[HttpEvent],
    ) -> int:
        """A DATA frame header at ``pos``: set up its payload; returns where it starts (or
        the end of ``buf`` when the pad length byte is still to come)."""
        start = pos + 9
        pad = 0
        if flags & PADDED:
            if length and len(buf) - pos < 10:
                return self._hold(d, buf, pos, 10, ts)
            if length:
                pad = buf[start]
                start += 1
            if length == 0 or pad > length - 1:  # §6.1: padding longer than the frame
                message = (
                    f"DATA frame on stream {sid}: {pad} bytes of padding in a {length}-byte "
                    "frame; frame ignored"
                )
                out.append(self._error(d, ts, message, stream=sid))
                d.data_emit = d.data_end = False
                d.data_left = 0
                d.pad_left = max(length - 1, 0)
                return start
            length -= pad + 1
        if d.block_stream:
            self._block_interrupted(d, DATA, sid, ts, out)
        d.data_stream = sid
        emit = self._streams.data_start(d.side, sid, d.offset, ts, out)
        d.data_emit = emit
        d.data_end = emit and bool(flags & END_STREAM)
        d.data_left = length
        d.pad_left = pad
        if not length and not pad and d.data_end:
            self._data_end(d, ts, out)
        return start

    def _data_end(self, d: _Direction, ts: float, out: list[HttpEvent]) -> None:
        d.data_end = False
        self._streams.end_message(d.side, d.data_stream, ts, out, complete=True)

    def _gap_in_data(self, d: _Direction, size: int, ts: float, out: list[HttpEvent]) -> int:
        """The part of a gap inside the current DATA payload becomes a BodyGap, the part in
        its padding is skipped; returns the size of the rest of the gap."""
        if d.data_left:
            take = min(size, d.data_left)
            if d.data_emit:
                out.append(BodyGap(stream=d.data_stream, response=d.response, size=take, ts=ts))
            d.data_left -= take
            d.offset += take
            size -= take
            if d.data_left:
                return 0
        elif not d.pad_left:
            return size  # at a frame boundary
        take = min(size, d.pad_left)
        d.pad_left -= take
        d.offset += take
        size -= take
        if not d.pad_left and d.data_end:
            self._data_end(d, ts, out)
        return size

    def _gap_in_frame(
        self, d: _Direction, size: int, ts: float, out: list[HttpEvent], gap: str
    ) -> int:
        """A gap after the held header of a frame: the frame is lost (its stream, or the
        connection-level state it carried, says so) and the rest of it that comes after
        the gap is skipped; returns the size of the part of the gap past the frame."""
        hi, lo, ftype, flags, sid = FRAME_HEADER.unpack_from(b"".join(d.held)[:9])
        rest: int = 9 + (hi << 8 | lo) - d.held_len  # bytes of the frame not yet seen
        self._drop_held(d)
        self._frame_cut(d, ftype, flags, sid & 0x7FFFFFFF, ts, out, gap)
        take = min(size, rest)
        d.offset += take
        d.data_left = 0
        d.data_emit = d.data_end = False
        d.pad_left = rest - take  # skipped as padding is
        return size - take

    def _frame_cut(
        self,
        d: _Direction,
        ftype: int,
        flags: int,
        sid: int,
        ts: float,
        out: list[HttpEvent],
        gap: str,
    ) -> None:
        """What a frame whose payload a gap cut costs, by type."""
        side = d.side
        what = f"{gap} cut a {type_name(ftype)} frame" + (f" of stream {sid}" if sid else "")
        if d.block_stream and (ftype != CONTINUATION or sid != d.block_stream):
            self._block_interrupted(d, ftype, sid, ts, out)
        if ftype in (HEADERS, PUSH_PROMISE, CONTINUATION):
            d.hpack.forget()  # the entries the block added are unknown
            if ftype == CONTINUATION and not d.block_stream:
                out.append(self._error(d, ts, what, stream=sid or None))
                return
            if ftype != CONTINUATION:
                # a lost PUSH_PROMISE's promised stream is unknown: -1, nothing to report
                self._block_start(d, sid, b"", flags, -1 if ftype == PUSH_PROMISE else 0, ts)
            d.block_lost = True
            out.append(self._error(d, ts, what + "; its header block is lost", stream=sid))
            if flags & END_HEADERS:
                self._block_done(d, ts, out)
            return
        if ftype == DATA:  # the pad length was lost: payload and padding are unknown
            self._streams.taint(side, sid)
            out.append(self._error(d, ts, what, stream=sid or None))
            if flags & END_STREAM:
                self._streams.end_message(side, sid, ts, out, complete=False)
            return
        if ftype == RST_STREAM:  # the stream may have been reset
            self._streams.taint(0, sid)
            self._streams.taint(1, sid)
        elif ftype == SETTINGS:  # keep the order in which SETTINGS and their ACKs pair
            if flags & ACK:
                self._apply_settings(d)
            else:
                d.settings.append({})
        out.append(self._error(d, ts, what, stream=sid or None))

    # -- other frames ---------------------------------------------------------------------

    def _control(
        self,
        d: _Direction,
        ftype: int,
        flags: int,
        sid: int,
        buf: bytes,
        pos: int,
        end: int,
        ts: float,
        out: list[HttpEvent],
    ) -> None:
        """A whole frame other than DATA at ``buf[pos:end]``."""
        if d.block_stream and (ftype != CONTINUATION or sid != d.block_stream):
            self._block_interrupted(d, ftype, sid, ts, out)
        if ftype == HEADERS and sid and not flags & PADDED:
            # The hot path: one HEADERS frame per message. Unpadded with a valid stream
            # id, its fragment is the payload after the optional 5-byte priority fields,
            # exactly what hyperframe would give, without building a Frame object. Padded
            # frames, stream 0 and a payload too short for its priority fields (errors
            # whose wording hyperframe owns) take the general path below.
            start = pos + 14 if flags & PRIORITY_FLAG else pos + 9
            if start <= end:
                self._block_start(d, sid, buf[start:end], flags, 0, self._hold_ts(d, pos, ts))
                if flags & END_HEADERS:
                    self._block_done(d, ts, out)
                return
        if ftype in (WINDOW_UPDATE, PING, PRIORITY):
            return  # flow control, liveness and priority: nothing an observer reports
        if ftype > CONTINUATION:
            payload = buf[pos + 9 : end]
            out.append(
                UnknownFrame(
                    response=d.response,
                    frame_type=ftype,
                    stream=sid,
                    flags=flags,
                    payload=payload,
                    ts=ts,
                )
            )
            return
        view = memoryview(buf)
        try:
            frame, _ = Frame.parse_frame_header(view[pos : pos + 9])
            frame.parse_body(view[pos + 9 : end])
        except HyperframeError as exc:
            message = f"malformed {type_name(ftype)} frame on stream {sid} ({exc}); ignored"
            out.append(self._error(d, ts, message, stream=sid or None))
            if ftype in (HEADERS, PUSH_PROMISE, CONTINUATION):
                d.hpack.forget()  # a header block fragment was lost
                d.block = []
                d.block_stream = 0
            return
        if isinstance(frame, HeadersFrame):
            self._block_start(d, sid, frame.data, flags, 0, self._hold_ts(d, pos, ts))
        elif isinstance(frame, PushPromiseFrame):
            promised = frame.promised_stream_id & 0x7FFFFFFF
            self._block_start(d, sid, frame.data, flags, promised, self._hold_ts(d, pos, ts))
        elif isinstance(frame, ContinuationFrame):
            if not d.block_stream:
                message = (
                    f"CONTINUATION on stream {sid} without a header block to continue; ignored"
                )
                out.append(self._error(d, ts, message, stream=sid))
                return
            self._block_add(d, frame.data, ts, out)
        elif isinstance(frame, RstStreamFrame):
            code = frame.error_code
            out.append(
                StreamReset(
                    stream=sid,
                    response=d.response,
                    error_code=code,
                    error_name=error_name(code),
                    ts=ts,
                )
            )
            self._streams.close(sid, reset=True)
        elif isinstance(frame, SettingsFrame):
            self._on_settings(d, frame, flags)
        elif isinstance(frame, GoAwayFrame):
            code = frame.error_code
            out.append(
                ConnectionGoAway(
                    response=d.response,
                    last_stream=frame.last_stream_id & 0x7FFFFFFF,
                    error_code=code,
                    error_name=error_name(code),
                    debug_data=frame.additional_data,
                    ts=ts,
                )
            )
        if (
            flags & END_HEADERS
            and d.block_stream
            and ftype in (HEADERS, PUSH_PROMISE, CONTINUATION)
        ):
            self._block_done(d, ts, out)

    def _on_settings(self, d: _Direction, frame: SettingsFrame, flags: int) -> None:
        """Settings one side sends bind the other side once that side acknowledges them."""
        if not flags & ACK:
            d.settings.append(dict(frame.settings))
            return
        self._apply_settings(d)

    def _apply_settings(self, d: _Direction) -> None:
        """``d`` acknowledged the oldest SETTINGS the other side sent."""
        other = self._dirs[1 - d.side]
        if not other.settings:
            return  # the acknowledged SETTINGS were sent before the capture started
        settings = other.settings.popleft()
        table_size = settings.get(SETTINGS_HEADER_TABLE_SIZE)
        if table_size is not None:
            d.hpack.set_table_size_limit(table_size)  # the limit on d's encoder
        frame_size = settings.get(SETTINGS_MAX_FRAME_SIZE)
        if frame_size is not None and d.max_frame is not None:
            d.max_frame = min(max(frame_size, DEFAULT_MAX_FRAME), MAX_FRAME_LIMIT)

    # -- header blocks --------------------------------------------------------------------

    def _block_start(
        self,
        d: _Direction,
        sid: int,
        fragment: bytes,
        flags: int,
        promised: int,
        started: float,
    ) -> None:
        streams = self._streams
        streams.max_stream = max(streams.max_stream, sid, promised)
        d.block = [fragment]
        d.block_size = len(fragment)
        d.block_stream = sid
        d.block_end = bool(flags & END_STREAM) and not promised
        d.block_promised = promised
        d.block_lost = False
        d.block_ts = started
        d.block_offset = d.offset

    def _block_add(self, d: _Direction, fragment: bytes, ts: float, out: list[HttpEvent]) -> None:
        if d.block_lost:
            return
        if d.block_size + len(fragment) > MAX_HEADER_BLOCK:
            if d.block_size <= MAX_HEADER_BLOCK:
                message = (
                    f"the header block of stream {d.block_stream} exceeds {MAX_HEADER_BLOCK} "
                    "bytes; the rest is not decoded"
                )
                out.append(self._error(d, ts, message, stream=d.block_stream))
            d.block_size = MAX_HEADER_BLOCK + 1
            return
        d.block.append(fragment)
        d.block_size += len(fragment)

    def _block_interrupted(
        self, d: _Direction, ftype: int, sid: int, ts: float, out: list[HttpEvent]
    ) -> None:
        """A frame other than the block's CONTINUATION (§6.10): decode what came."""
        message = (
            f"the header block of stream {d.block_stream} was interrupted by a "
            f"{type_name(ftype)} frame on stream {sid}; decoding what arrived"
        )
        out.append(self._error(d, ts, message, stream=d.block_stream))
        self._block_done(d, ts, out, cut=True)
        d.hpack.forget()  # the block's end (and the entries it added) never came

    def _block_done(
        self, d: _Direction, ts: float, out: list[HttpEvent], *, cut: bool = False
    ) -> None:
        """The block ended (END_HEADERS), or was ``cut`` short (its fields are not all
        there, whatever the part that came decodes to)."""
        sid = d.block_stream
        if d.block_lost:
            d.block = []
            d.block_stream = 0
            d.block_lost = False
            if d.block_promised >= 0:  # (a lost PUSH_PROMISE names no stream we know)
                self._streams.on_lost_block(
                    d.side, sid, d.block_end, d.block_ts, d.block_offset, ts, out
                )
            return
        block = d.block[0] if len(d.block) == 1 else b"".join(d.block)
        d.block = []
        d.block_stream = 0
        decoded = d.hpack.decode(block)
        if d.block_size > MAX_HEADER_BLOCK:
            d.hpack.forget()  # the entries the cut part added are unknown
            cut = True
        if cut:
            decoded = Decoded(decoded.headers, decoded.error or "the block was cut", False)
        if d.block_promised:
            self._streams.on_push(
                d.side, sid, d.block_promised, decoded, d.block_ts, d.block_offset, ts, out
            )
        else:
            self._streams.on_head(
                d.side, sid, decoded, d.block_end, d.block_ts, d.block_offset, ts, out
            )

    # -- losing and finding sync ----------------------------------------------------------

    def _lose_sync(self, d: _Direction, ts: float, out: list[HttpEvent], why: str) -> None:
        """The frame layer of ``d`` is lost (``why``): any frame may be gone. The header
        block it was in is cut, every message of the direction that had not ended is
        lossy, HPACK forgets its table, and the direction resyncs. Messages go on: the
        frames found after the resync still add to them."""
        out.append(self._error(d, ts, why + "; resynchronizing on the next frame"))
        if d.block_stream:
            if not d.block_lost:
                message = f"{why}: the header block of stream {d.block_stream} is cut"
                out.append(self._error(d, ts, message, stream=d.block_stream))
            self._block_done(d, ts, out, cut=True)
        if d.data_left or d.pad_left:
            self._streams.taint(d.side, d.data_stream)
        self._drop_held(d)
        self._reset_frame_state(d)
        self._streams.taint_open(d.side, d.offset, ts, out, why)
        d.hpack.forget()
        d.mode = Mode.RESYNC

    def _preface(self, d: _Direction, buf: bytes, pos: int, ts: float, out: list[HttpEvent]) -> int:
        got = buf[pos : pos + len(PREFACE)]
        if not PREFACE.startswith(got):
            if d.mode is Mode.PREFACE:
                out.append(self._error(d, ts, "the client did not start with the HTTP/2 preface"))
            d.mode = Mode.RESYNC
            return pos
        if len(got) < len(PREFACE):
            return self._hold(d, buf, pos, len(PREFACE), ts)
        d.mode = _FRAMES
        return pos + len(PREFACE)

    def _resync(
        self,
        d: _Direction,
        buf: bytes,
        pos: int,
        ts: float,
        out: list[HttpEvent],
        *,
        final: bool,
    ) -> int:
        """Skip to the first frame boundary :func:`chain_verdict` accepts; ``final``: no
        more bytes will come."""
        n = len(buf)
        i = pos
        found = -1
        wait = 0
        server = d.response
        max_frame = d.max_frame
        max_stream = self._streams.max_stream
        side = d.side
        may_carry = self._streams.may_carry

        def carried(sid: int) -> bool:
            return may_carry(side, sid)

        # A frame no longer than 65535 bytes starts with a zero byte: jump between them.
        zero_first = (max_frame or DEFAULT_MAX_FRAME) <= 0xFFFF
        while n - i >= 9:
            if zero_first and buf[i]:
                i = buf.find(b"\0", i, n - 8)
                if i < 0:
                    i = n - 8
                    break
            verdict = chain_verdict(
                buf,
                i,
                server=server,
                max_frame=max_frame,
                max_stream=max_stream,
                final=final,
                may_carry=carried,
            )
            if verdict == 0:
                found = i
                break
            if verdict > 0:
                wait = verdict
                break
            i += 1
        if final and found < 0:
            i = n
        if i > pos:
            if not d.skipped:
                d.skip_offset = d.base + pos
            d.skipped += i - pos
        if found >= 0:
            self._report_skipped(d, ts, out)
            d.mode = _FRAMES
            return found
        if final:
            self._report_skipped(d, ts, out)
            return n
        # keep the candidate, or the last 8 bytes (a frame header may start there)
        return self._hold(d, buf, i, wait or 9, ts) if i < n else n

    def _flush_resync(self, d: _Direction, ts: float, out: list[HttpEvent]) -> None:
        """No more bytes will join the held ones: decide on them as they are."""
        if d.mode is Mode.MAYBE_PREFACE:
            d.mode = Mode.RESYNC
        while d.mode is Mode.RESYNC and d.held:
            buf = b"".join(d.held)
            d.held = []
            d.held_len = 0
            d.base = d.offset
            pos = self._resync(d, buf, 0, ts, out, final=True)
            d.offset = d.base + pos
            if pos < len(buf):
                self._run(d, buf, ts, out, pos)
        if d.mode is Mode.RESYNC:
            self._report_skipped(d, ts, out)

    def _report_skipped(self, d: _Direction, ts: float, out: list[HttpEvent]) -> None:
        if d.skipped:
            out.append(
                ParseError(
                    response=d.response,
                    message=f"skipped {d.skipped} bytes that are not HTTP/2 frames",
                    offset=d.skip_offset,
                    ts=ts,
                )
            )
            d.skipped = 0

    def _drop_held(self, d: _Direction) -> None:
        d.offset += d.held_len
        d.held = []
        d.held_len = 0

    def _reset_frame_state(self, d: _Direction) -> None:
        d.data_left = d.pad_left = 0
        d.data_emit = d.data_end = False
        d.block = []
        d.block_stream = 0
        d.block_lost = False

    def _error(
        self, d: _Direction, ts: float, message: str, *, stream: int | None = None
    ) -> ParseError:
        return ParseError(
            response=d.response, message=message, offset=d.offset, ts=ts, stream=stream
        )
