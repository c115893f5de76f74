"""A passive HTTP/2 decoder for both directions of one connection (RFC 9113).

Input: the in-order bytes of each direction (``feed``), capture gaps (``gap``) and ends
(``end``), as :class:`agentshark.http.h1.H1Connection` takes them. Output: the
version-neutral events of :mod:`agentshark.http.events`, keyed by HTTP/2 stream id.

It observes; it never answers and enforces no flow control or stream limits (a passive
observer is not an endpoint). This module cuts frames from the byte stream (the hot path)
and dispatches them; hyperframe parses the control frames,
:mod:`~agentshark.http.h2_blocks` assembles header blocks and
:mod:`~agentshark.http.h2_hpack` decodes them with one HPACK state per direction,
:mod:`~agentshark.http.h2_streams` turns blocks and END_STREAM into messages,
:mod:`~agentshark.http.h2_direction` holds each direction's state and pairs SETTINGS with
their ACKs, and :mod:`~agentshark.http.h2_gaps` decides what a capture gap costs and finds
the frames again.

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
* A capture gap (``gap``) costs the streams it may have touched, never the connection: a
  :class:`BodyGap` inside a DATA payload, the one frame it cut, or (past a frame boundary)
  a resync and the messages the evidence cannot clear (the TCP ACK number of the segment
  after the gap, ``feed``'s ``acked``, bounds which requests the server had), with HPACK
  entries older than the gap kept until frames show no header block was lost; the rules
  are in :mod:`~agentshark.http.h2_gaps`. Every message is either what a clean capture
  gives or marked incomplete, and a DATA frame is only ever attributed by its own frame
  header. Without a gap, none of this costs anything per frame.

Garbage in gives ParseErrors, never an exception.
"""

from __future__ import annotations

from collections import deque

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
    ConnectionGoAway,
    HttpEvent,
    StreamReset,
    UnknownFrame,
)
from agentshark.http.h2_blocks import block_add, block_done, block_interrupted_by, block_start
from agentshark.http.h2_direction import FRAMES, Direction, Mode, SentSettings
from agentshark.http.h2_frames import (
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    FRAME_HEADER,
    HEADERS,
    PADDED,
    PING,
    PREFACE,
    PRIORITY,
    PRIORITY_FLAG,
    PUSH_PROMISE,
    WINDOW_UPDATE,
    error_name,
    type_name,
)
from agentshark.http.h2_gaps import gap_label, lose_sync, on_gap, report_skipped, resync, settle
from agentshark.http.h2_streams import ENDED, Streams

__all__ = ["PREFACE", "H2Connection", "error_name"]


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
        self._streams = streams = Streams()
        sent: tuple[SentSettings, SentSettings] = (deque(maxlen=16), deque(maxlen=16))
        self._dirs = (
            Direction(
                0,
                Mode.PREFACE if known else Mode.MAYBE_PREFACE,
                history_known=known,
                streams=streams,
                settings=sent[0],
                peer_settings=sent[1],
            ),
            Direction(
                1,
                FRAMES if known else Mode.RESYNC,
                history_known=known,
                streams=streams,
                settings=sent[1],
                peer_settings=sent[0],
            ),
        )
        streams.settings_sure = streams.client_ids_known = known
        # ACK numbers count the connection's bytes; an upgraded one's HTTP/2 bytes start
        # after its HTTP/1.1 part, at offsets this decoder does not know
        self._acks = not upgraded
        if upgraded:
            # The upgrade request's HTTP2-Settings (not seen here) may have raised the
            # server's limits with no SETTINGS frame to show it.
            self._dirs[1].max_frame = None
            self._dirs[1].hpack.set_table_size_limit(None)
            upgrade = streams.get(1)
            assert upgrade is not None
            upgrade.state[0] = ENDED
            upgrade.method = "?"
            streams.max_stream = streams.max_client = 1

    # -- public API ---------------------------------------------------------------------

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[HttpEvent]:
        """The next bytes of ``direction``; ``acked``: what the TCP segment that carried
        them acknowledged of the other direction (its offsets; -1: unknown). Only the
        first segment after a gap is asked (:func:`~agentshark.http.h2_gaps.settle`)."""
        d = self._dirs[direction]
        out: list[HttpEvent] = []
        lost = d.pending
        if lost is not None and lost.acked == -2:
            lost.acked = acked if self._acks else -1
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
                    d.held_times.append(ts)
                    d.held_len += n - pos
                return out
            d.held.append(data[pos : pos + missing])
            d.held_times.append(ts)
            pos += missing
            if d.mode is Mode.RESYNC:
                self._resync_held(d, out, final=False)
                continue
            unit = b"".join(d.held)
            d.held = []
            d.held_times = []
            d.held_len = 0
            self._run(d, unit, ts, out, 0)
        if pos < n:
            self._run(d, data, ts, out, pos)
        return out

    def gap(self, direction: int, size: int, ts: float) -> list[HttpEvent]:
        """``size`` bytes of ``direction`` were never captured (see
        :mod:`~agentshark.http.h2_gaps` for what they cost)."""
        d = self._dirs[direction]
        out: list[HttpEvent] = []
        gap = gap_label(d, size)
        self._flush_resync(d, ts, out)
        on_gap(d, self._dirs[1 - direction], size, ts, out, gap)
        return out

    def end(self, direction: int, ts: float, *, clean: bool) -> list[HttpEvent]:
        """No more bytes in ``direction``: every message it left open ends incomplete.
        (``clean`` does not matter: HTTP/2 ends messages by END_STREAM, never by closing.)"""
        d = self._dirs[direction]
        out: list[HttpEvent] = []
        self._flush_resync(d, ts, out)
        if d.mode is Mode.PREFACE and d.held_len:
            out.append(d.error(ts, "the connection ended inside the connection preface"))
        elif d.mode is FRAMES:
            if d.held_len:
                message = (
                    f"the connection ended inside a frame ({d.held_len} of {d.need} bytes captured)"
                )
                out.append(d.error(ts, message))
            if d.block_stream:
                message = f"the connection ended inside the header block of stream {d.block_stream}"
                out.append(d.error(ts, message, stream=d.block_stream))
        self._streams.end_open(d.side, ts, out)
        d.drop_held()
        d.reset_frame_state()
        d.mode = Mode.RESYNC
        return out

    # -- the byte loop --------------------------------------------------------------------

    def _run(self, d: Direction, buf: bytes, ts: float, out: list[HttpEvent], pos: int) -> None:
        """Parse ``buf[pos:]``, whose first byte is at ``d.offset``; hold what cannot be
        parsed yet."""
        start = d.base = d.offset - pos
        n = len(buf)
        while pos < n:
            mode = d.mode
            if mode is FRAMES:
                pos = self._frames(d, buf, pos, ts, out)
            elif mode is Mode.RESYNC:
                pos = resync(d, buf, pos, ts, out, final=False)
            else:
                pos = self._preface(d, buf, pos, ts, out)
            d.offset = start + pos
        d.offset = start + n - d.held_len

    def _frames(self, d: Direction, buf: bytes, pos: int, ts: float, out: list[HttpEvent]) -> int:
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
                    d.end_data(ts, out)
                continue
            if d.pad_left:
                take = min(d.pad_left, n - pos)
                pos += take
                d.pad_left -= take
                if not d.pad_left and d.data_end:
                    d.end_data(ts, out)
                continue
            if n - pos < 9:
                return d.hold(buf, pos, 9, ts)
            hi, lo, ftype, flags, sid = FRAME_HEADER.unpack_from(buf, pos)
            length = hi << 8 | lo
            sid &= 0x7FFFFFFF
            d.offset = d.base + pos
            if d.max_frame is not None and length > d.max_frame:
                message = (
                    f"a {length}-byte frame exceeds the {d.max_frame} bytes "
                    "SETTINGS_MAX_FRAME_SIZE allows: these bytes are not a frame header"
                )
                lose_sync(d, ts, out, message)
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
                return d.hold(buf, pos, 9 + length, ts)
            self._control(d, ftype, flags, sid, buf, pos, end, ts, out)
            pos = end
            if d.mode is not FRAMES:
                return pos
        return pos

    def _hold_ts(self, d: Direction, pos: int, ts: float) -> float:
        return d.held_ts if pos == 0 else ts

    def _preface(self, d: Direction, buf: bytes, pos: int, ts: float, out: list[HttpEvent]) -> int:
        got = buf[pos : pos + len(PREFACE)]
        if not PREFACE.startswith(got):
            if d.mode is Mode.PREFACE:
                out.append(d.error(ts, "the client did not start with the HTTP/2 preface"))
            d.mode = Mode.RESYNC
            return pos
        if len(got) < len(PREFACE):
            return d.hold(buf, pos, len(PREFACE), ts)
        d.mode = FRAMES
        return pos + len(PREFACE)

    def _flush_resync(self, d: Direction, ts: float, out: list[HttpEvent]) -> None:
        """If ``d`` is looking for frames, no more bytes will join the held ones: decide on
        them as they are."""
        if d.mode is Mode.MAYBE_PREFACE:
            d.mode = Mode.RESYNC
        elif d.mode is not Mode.RESYNC:
            return
        while d.mode is Mode.RESYNC and d.held:
            self._resync_held(d, out, final=True)
        if d.mode is Mode.RESYNC:
            if d.pending is not None:
                settle(d, ts, out, blind=True)
            report_skipped(d, ts, out)

    def _resync_held(self, d: Direction, out: list[HttpEvent], *, final: bool) -> None:
        """Look for frames in the pieces a resync held (``final``: no more will come).
        Where they start, the pieces are fed again, each with its own time, so that the
        frames found get the times a capture without the loss gives them."""
        pieces = list(zip(d.held, d.held_times, strict=True))
        unit = b"".join(d.held)
        d.held = []
        d.held_times = []
        d.held_len = 0
        d.base = start = d.offset
        found = resync(d, unit, 0, pieces[-1][1], out, final=final)
        if d.mode is FRAMES:
            d.offset = start + found
            at = 0
            for piece, ts in pieces:
                end = at + len(piece)
                if end > found:
                    out.extend(self.feed(d.side, piece[max(found - at, 0) :], ts))
                at = end
        elif d.held:  # still a candidate: it keeps the times of its pieces
            first = len(unit) - d.held_len
            d.offset = start + first
            d.held, d.held_times = [], []
            at = 0
            for piece, ts in pieces:
                end = at + len(piece)
                if end > first:
                    d.held.append(piece[max(first - at, 0) :])
                    d.held_times.append(ts)
                at = end
            d.held_ts = d.held_times[0]
        else:
            d.offset = start + len(unit)

    # -- DATA -----------------------------------------------------------------------------

    def _data_frame(
        self,
        d: Direction,
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
                return d.hold(buf, pos, 10, ts)
            if length:
                pad = buf[start]
                start += 1
            if length == 0 or pad > length - 1:  # §6.1: padding longer than the frame
                message = (
                    f"DATA frame on stream {sid}: {pad} bytes of padding in a {length}-byte "
                    "frame; frame ignored"
                )
                out.append(d.error(ts, message, stream=sid))
                d.skip_frame_rest(max(length - 1, 0))
                return start
            length -= pad + 1
        if d.block_stream:
            block_interrupted_by(d, DATA, sid, ts, out)
        d.data_stream = sid
        emit = self._streams.data_start(d.side, sid, d.offset, ts, out)
        d.data_emit = emit
        d.data_end = emit and bool(flags & END_STREAM)
        d.data_left = length
        d.pad_left = pad
        if not length and not pad and d.data_end:
            d.end_data(ts, out)
        return start

    # -- other frames ---------------------------------------------------------------------

    def _control(
        self,
        d: Direction,
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
        if d.block_stream:
            block_interrupted_by(d, ftype, sid, ts, out)
        if ftype == HEADERS and sid and not flags & PADDED:
            # The hot path: one HEADERS frame per message. Unpadded with a valid stream
            # id, its fragment is the payload after the optional 5-byte priority fields,
            # exactly what hyperframe would give, without building a Frame object. Padded
            # frames, stream 0 and a payload too short for its priority fields (errors
            # whose wording hyperframe owns) take the general path below.
            start = pos + 14 if flags & PRIORITY_FLAG else pos + 9
            if start <= end:
                block_start(d, sid, buf[start:end], flags, 0, self._hold_ts(d, pos, ts))
                if flags & END_HEADERS:
                    block_done(d, ts, out)
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
            out.append(d.error(ts, message, stream=sid or None))
            if ftype in (HEADERS, PUSH_PROMISE, CONTINUATION):
                d.hpack.forget()  # a header block fragment was lost
                d.clear_block()
            return
        self._parsed(d, frame, ftype, flags, sid, self._hold_ts(d, pos, ts), ts, out)

    def _parsed(
        self,
        d: Direction,
        frame: Frame,
        ftype: int,
        flags: int,
        sid: int,
        started: float,
        ts: float,
        out: list[HttpEvent],
    ) -> None:
        """A control frame hyperframe parsed (it arrived from ``started`` to ``ts``)."""
        if isinstance(frame, HeadersFrame):
            block_start(d, sid, frame.data, flags, 0, started)
        elif isinstance(frame, PushPromiseFrame):
            promised = frame.promised_stream_id & 0x7FFFFFFF
            block_start(d, sid, frame.data, flags, promised, started)
        elif isinstance(frame, ContinuationFrame):
            if not d.block_stream:
                message = (
                    f"CONTINUATION on stream {sid} without a header block to continue; ignored"
                )
                out.append(d.error(ts, message, stream=sid))
                return
            block_add(d, frame.data, ts, out)
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
            self._streams.reset(d.side, sid)
        elif isinstance(frame, SettingsFrame):
            d.on_settings(flags, dict(frame.settings))
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
            block_done(d, ts, out)
