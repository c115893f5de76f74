"""The streams of one HTTP/2 connection: decoded header blocks, DATA and END_STREAM in,
message events out (RFC 9113 §5.1, §8.1).

Each stream carries two messages, the request (side 0, sent by the client) and the response
(side 1), each NONE (nothing seen), OPEN (head seen) or ENDED. The first header block of a
message is its head, a later one its trailer section; a response head with a 1xx status is
informational and leaves the response NONE.

After a capture gap, a message may wait in ``PROVING`` (OPEN for everything else): its
next DATA or HEADERS frame proves that the gap held no END_STREAM of it, which the gap's
HPACK decision waits for (:meth:`Streams.await_proof`, :mod:`~agentshark.http.h2_gaps`).

A message is "lossy" when the capture cannot vouch for it: its head was missed (the capture
started mid-connection) or lost, its header block did not fully decode (HPACK entries the
capture never showed, a block cut short), or a capture gap may have held one of its frames
(:meth:`Streams.taint_open`). A lossy message is still reported, with every field and body
byte that did decode, but its end is never complete: no exchange is complete with values a
clean capture would not give.
"""

from __future__ import annotations

from collections.abc import Callable

from agentshark.http.events import (
    GapAffected,
    HttpEvent,
    InformationalResponse,
    MessageEnded,
    ParseError,
    ProtocolSwitched,
    PushPromised,
    RequestHeaders,
    ResponseHeaders,
)
from agentshark.http.h2_hpack import Decoded
from agentshark.model import Headers

__all__ = ["ENDED", "NONE", "OPEN", "Stream", "Streams"]

NONE, OPEN, ENDED = 0, 1, 2  # message states; ints, read once per DATA frame
# OPEN, and awaited: the next DATA or HEADERS frame on it proves that a capture gap held
# no END_STREAM of it (:meth:`Streams.await_proof`). Not OPEN, so that the DATA fast path
# of :meth:`Streams.data_start` misses it and the slow path takes the proof.
PROVING = 3
CLOSED_MEMORY = 1024  # closed stream ids remembered exactly (older ones by a floor)


class Stream:
    __slots__ = ("head_offset", "lossy", "method", "protocol", "state")

    def __init__(self) -> None:
        self.state = [NONE, NONE]  # request, response
        self.head_offset = -1  # client stream offset of the request's header block (-1: none)
        self.lossy = [False, False]  # the message's end is never complete (module docstring)
        self.method = ""
        self.protocol = ""  # :protocol of an extended CONNECT (RFC 8441)


class Streams:
    """The open streams of a connection, and which ids are closed."""

    def __init__(self) -> None:
        self._open: dict[int, Stream] = {}
        self._closed: dict[int, bool] = {}  # recently closed ids (True: by a reset), oldest first
        self._closed_floor = [0, 0]  # by parity: ids up to this that are not open are closed
        self.max_stream = 0  # the highest id opened by HEADERS or PUSH_PROMISE
        # Evidence about capture gaps (see h2_gaps): the streams whose next DATA or HEADERS
        # frame from each side settles a gap, and what to call when all of them have.
        self.proving: tuple[set[int], set[int]] = (set(), set())
        self.on_proved: list[Callable[[], None] | None] = [None, None]
        # A request whose header block starts below this client offset may have been
        # answered in server bytes a gap lost (``answered_why`` names the gap).
        self.answered_below = -1
        self.answered_why = ""
        self.answered_at = 0  # (the server offset of that gap)
        # The server has received SETTINGS_ENABLE_PUSH 0 (it acknowledged them, and no
        # SETTINGS it may have received since can have turned push on): no PUSH_PROMISE.
        self.push_off = False
        self.settings_sure = True  # no SETTINGS or ACK was lost: ACKs pair as sent
        # The client reset a stream whose response had not ended: frames the server sent
        # on it before the reset arrived, header blocks among them, are in flight.
        self.crossing = False
        # The highest client stream id opened, and whether every client stream is known:
        # the capture saw the connection start and each new id was the last one + 2.
        self.max_client = -1
        self.client_ids_known = True
        # A client gap past a frame boundary came when the client had opened streams up
        # to this id: a later response on a stream above it whose request was never seen
        # answers a request the gap may have held (``requests_lost_why`` names it).
        self.requests_lost_above = 1 << 31
        self.requests_lost_why = ""

    def get(self, sid: int) -> Stream | None:
        """Stream ``sid``, created when new; None when it is closed (or is stream 0)."""
        s = self._open.get(sid)
        if s is None:
            if sid in self._closed or sid <= self._closed_floor[sid & 1]:
                return None
            s = self._open[sid] = Stream()
        return s

    def may_carry(self, side: int, sid: int) -> bool:
        """Could ``side`` send DATA, HEADERS or CONTINUATION on ``sid`` now? No when the
        stream is closed, or ``side`` ended its message on it (a resync rule, §5.1)."""
        s = self._open.get(sid)
        if s is not None:
            return s.state[side] != ENDED
        return sid not in self._closed and sid > self._closed_floor[sid & 1]

    def reset(self, side: int, sid: int) -> None:
        """``side`` sent RST_STREAM on ``sid``."""
        s = self._open.get(sid)
        if side == 0 and s is not None and s.state[1] != ENDED:
            self.crossing = True
        self.close(sid, reset=True)

    def close(self, sid: int, *, reset: bool = False) -> None:
        """Closed by both END_STREAMs or by a reset: later frames on it are ignored (§5.1),
        silently after a reset (frames in flight cross it)."""
        self._open.pop(sid, None)
        closed = self._closed
        closed[sid] = reset
        if len(closed) > CLOSED_MEMORY:
            oldest = next(iter(closed))
            del closed[oldest]
            parity = oldest & 1
            self._closed_floor[parity] = max(self._closed_floor[parity], oldest)

    # -- header blocks --------------------------------------------------------------------

    def on_head(
        self,
        side: int,
        sid: int,
        decoded: Decoded,
        end_stream: bool,
        started: float,
        offset: int,
        ts: float,
        out: list[HttpEvent],
    ) -> None:
        """A header block from ``side`` on stream ``sid`` (HEADERS + CONTINUATIONs, first
        byte at ``offset``, arriving from ``started``)."""
        s = self.get(sid)
        if s is None:
            if not self._closed.get(sid, True):
                message = f"HEADERS on stream {sid} after it closed; ignored"
                out.append(_error(side, offset, ts, message, sid))
            return
        state = s.state[side]
        headers = decoded.headers
        if state == ENDED:
            message = f"HEADERS on stream {sid} after its END_STREAM; ignored"
            out.append(_error(side, offset, ts, message, sid))
            return
        if state in (OPEN, PROVING):
            s.state[side] = OPEN  # (a PROVING one was proved before its block was decoded)
            self._trailers(side, sid, decoded, end_stream, offset, ts, out)
            return
        if (
            (decoded.complete or end_stream)
            # (a head's first field is a pseudo-header: decided without scanning them all)
            and not (headers and headers[0][0][:1] == ":")
            and not any(name[:1] == ":" for name, _ in headers)
        ):
            # No pseudo-header: the trailers of a message whose head came before the capture
            # (a head that did not fully decode and ends the stream has no body to keep).
            message = (
                f"a header block without pseudo-headers on stream {sid}: the trailers of a "
                "message whose head the capture missed"
            )
            out.append(_error(side, offset, ts, message, sid))
            s.lossy[side] = True
            s.state[side] = OPEN
            self._trailers(side, sid, decoded, end_stream, offset, ts, out)
            return
        if side == 0:
            s.head_offset = offset
            method = _pseudo(headers, ":method") or "?"
            target = _pseudo(headers, ":path")
            if target is None:  # CONNECT names an authority, not a path (§8.5)
                target = (_pseudo(headers, ":authority") if method == "CONNECT" else None) or "?"
            s.method = method
            s.protocol = _pseudo(headers, ":protocol") or ""
            out.append(
                RequestHeaders(
                    stream=sid,
                    method=method,
                    target=target,
                    version="HTTP/2",
                    headers=headers,
                    ts=started,
                )
            )
            if offset < self.answered_below:
                self._answered_in_gap(sid, s, ts, out)
        else:
            if s.state[0] == NONE and sid & 1 and sid > self.requests_lost_above:
                out.append(
                    GapAffected(
                        stream=sid,
                        response=False,
                        code="http.request_lost",
                        message=f"{self.requests_lost_why}: the request this response "
                        "answers was never seen; it was in the lost bytes, or not captured",
                        ts=started,
                    )
                )
            status = _status(_pseudo(headers, ":status"))
            if 100 <= status < 200:
                out.append(
                    InformationalResponse(
                        stream=sid, status=status, reason="", headers=headers, ts=started
                    )
                )
                if decoded.error:
                    out.append(_block_error(side, sid, decoded, offset, ts))
                    s.lossy[1] |= not decoded.complete  # its fields are the response's too
                if end_stream:  # §8.1: an informational response cannot end a stream
                    message = f"a {status} response ends stream {sid}"
                    out.append(_error(side, offset, ts, message, sid))
                    s.state[1] = ENDED
                    self._close_if_done(sid, s)
                return
            out.append(
                ResponseHeaders(
                    stream=sid,
                    status=status,
                    reason="",
                    version="HTTP/2",
                    headers=headers,
                    ts=started,
                )
            )
            if s.method == "CONNECT" and 200 <= status < 300:  # §8.5, RFC 8441 §4
                out.append(ProtocolSwitched(stream=sid, protocol=s.protocol or "tunnel", ts=ts))
        s.state[side] = OPEN
        if decoded.error:
            out.append(_block_error(side, sid, decoded, offset, ts))
            s.lossy[side] |= not decoded.complete
        if end_stream:
            self.end_message(side, sid, ts, out, complete=True)

    def _trailers(
        self,
        side: int,
        sid: int,
        decoded: Decoded,
        end_stream: bool,
        offset: int,
        ts: float,
        out: list[HttpEvent],
    ) -> None:
        if decoded.error:
            out.append(_block_error(side, sid, decoded, offset, ts))
            if not decoded.complete:
                s = self._open.get(sid)
                if s is not None:
                    s.lossy[side] = True
        if not end_stream:  # §8.1: a trailer section ends the stream
            names = ", ".join(name for name, _ in decoded.headers)
            message = (
                f"a second header block on stream {sid} without END_STREAM (§8.1); "
                f"ignored (fields: {names})"
            )
            out.append(_error(side, offset, ts, message, sid))
            return
        self.end_message(side, sid, ts, out, complete=True, trailers=decoded.headers)

    def on_push(
        self,
        side: int,
        sid: int,
        promised: int,
        decoded: Decoded,
        started: float,
        offset: int,
        ts: float,
        out: list[HttpEvent],
    ) -> None:
        """A PUSH_PROMISE header block: the request the server answers on ``promised``."""
        if side == 0:
            out.append(
                _error(side, offset, ts, f"PUSH_PROMISE from the client on stream {sid}", sid)
            )
        out.append(
            PushPromised(stream=sid, promised_stream=promised, headers=decoded.headers, ts=started)
        )
        if decoded.error:
            out.append(_block_error(side, promised, decoded, offset, ts))
        s = self.get(promised)
        if s is not None:
            s.state[0] = ENDED
            s.method = _pseudo(decoded.headers, ":method") or "?"
            # the pushed request is reported as promised: an incomplete promise taints the
            # exchange through its response
            s.lossy[1] |= not decoded.complete

    # -- bodies and ends ------------------------------------------------------------------

    def data_start(self, side: int, sid: int, offset: int, ts: float, out: list[HttpEvent]) -> bool:
        """A DATA frame from ``side`` on ``sid``: should its payload be reported?"""
        s = self._open.get(sid)
        if s is not None and s.state[side] == OPEN:
            return True  # the usual case, decided without the checks below
        s = self.get(sid) if sid else None
        if s is None:
            if not sid:
                out.append(_error(side, offset, ts, "DATA on stream 0 (§6.1); ignored", None))
            elif not self._closed.get(sid, True):
                message = f"DATA on stream {sid} after it closed; ignored"
                out.append(_error(side, offset, ts, message, sid))
            return False
        state = s.state[side]
        if state == OPEN:
            return True
        if state == PROVING:
            self.prove(side, sid)
            return True
        if state == ENDED:
            out.append(
                _error(side, offset, ts, f"DATA on stream {sid} after its END_STREAM; ignored", sid)
            )
            return False
        what = "response" if side else "request"
        message = (
            f"DATA on stream {sid} before any {what} headers: the capture missed them; "
            "the body is kept"
        )
        out.append(_error(side, offset, ts, message, sid))
        s.state[side] = OPEN
        s.lossy[side] = True
        return True

    def end_message(
        self,
        side: int,
        sid: int,
        ts: float,
        out: list[HttpEvent],
        *,
        complete: bool,
        trailers: Headers | None = None,
    ) -> None:
        s = self._open.get(sid)
        if s is None:
            return
        out.append(
            MessageEnded(
                stream=sid,
                response=side == 1,
                ts=ts,
                complete=complete and not s.lossy[side],
                trailers=trailers or [],
            )
        )
        s.state[side] = ENDED
        self._close_if_done(sid, s)

    def taint_open(self, side: int, offset: int, ts: float, out: list[HttpEvent], why: str) -> None:
        """Frames ``side`` sent may have been lost (``why``): every message of ``side``
        that has not ended, or not begun on an open stream (a lost frame may be its head or
        a 1xx), becomes lossy, with a ParseError on its stream."""
        for sid, s in self._open.items():
            if s.state[side] != ENDED:
                s.lossy[side] = True
                what = "response" if side else "request"
                message = f"{why}: frames of this stream may be lost; its {what} is incomplete"
                out.append(_error(side, offset, ts, message, sid))

    def taint_resettable(self, offset: int, ts: float, out: list[HttpEvent], why: str) -> None:
        """Client frames were lost (``why``) that can hold a RST_STREAM (RFC 9113 §6.4):
        every response not ended on an open stream may have been reset by it, and the
        server's frames after it are then not the stream's to count (§5.4.2): it becomes
        lossy, with a ParseError on its stream."""
        message = f"{why}: the client may have reset this stream in them; its response is "
        message += "incomplete"
        for sid, s in self._open.items():
            if s.state[1] != ENDED and not s.lossy[1]:
                s.lossy[1] = True
                out.append(_error(1, offset, ts, message, sid))

    def taint_unanswered(
        self, bound: int, offset: int, ts: float, out: list[HttpEvent], why: str, *, heads: bool
    ) -> tuple[set[int], bool]:
        """Server frames were lost (``why``) that the server wrote before it had received
        ``bound`` client bytes: every response not ended whose request's header block
        starts below ``bound`` (or is unknown) becomes lossy, with a ParseError on its
        stream; one whose request came at or past ``bound`` cannot have frames in the lost
        bytes and stays whole, and so does one with no response head yet when the lost
        bytes are too few to hold one (``heads`` False). A later request below ``bound``
        is tainted when it comes (:meth:`on_head`). Returns the tainted streams whose
        response head was seen (only their END_STREAM, in trailers, can have been a header
        block) and whether any tainted response had no head yet (its head, or a 1xx, may
        have been lost)."""
        if heads:
            self.answered_below = max(self.answered_below, bound)
            self.answered_why = why
            self.answered_at = offset
        opened: set[int] = set()
        headless = False
        for sid, s in self._open.items():
            state = s.state[1]
            if (
                state == ENDED
                or (sid & 1 and 0 <= bound <= s.head_offset)
                or (state == NONE and not heads)
            ):
                continue
            s.lossy[1] = True
            message = f"{why}: frames of this stream may be lost; its response is incomplete"
            out.append(_error(1, offset, ts, message, sid))
            if state == NONE:
                headless = True
            else:
                opened.add(sid)
        return opened, headless

    def open_messages(self, side: int) -> set[int]:
        """The streams whose message from ``side`` has begun and not ended."""
        return {sid for sid, s in self._open.items() if s.state[side] in (OPEN, PROVING)}

    def await_proof(self, side: int, sids: set[int], on_proved: Callable[[], None]) -> None:
        """Call ``on_proved`` once each of ``sids`` has shown a DATA or HEADERS frame from
        ``side`` (the streams' messages are open); the streams awaited before are not any
        more (their gap was settled otherwise)."""
        self.proving[side].clear()
        self.proving[side].update(sids)
        self.on_proved[side] = on_proved
        for sid in sids:
            self._open[sid].state[side] = PROVING

    def prove(self, side: int, sid: int) -> None:
        """A DATA or HEADERS frame from ``side`` on ``sid`` (about to be handled)."""
        s = self._open.get(sid)
        if s is not None and s.state[side] == PROVING:
            s.state[side] = OPEN
        waiting = self.proving[side]
        if sid in waiting:
            waiting.discard(sid)
            done = self.on_proved[side]
            if not waiting and done is not None:
                self.on_proved[side] = None
                done()

    def _answered_in_gap(self, sid: int, s: Stream, ts: float, out: list[HttpEvent]) -> None:
        s.lossy[1] = True
        message = (
            f"{self.answered_why}: the server may have received this request before it sent the "
            "lost bytes, so frames of its response may be lost; its response is incomplete"
        )
        out.append(_error(1, self.answered_at, ts, message, sid))

    def taint(self, side: int, sid: int) -> None:
        """The message of ``side`` on ``sid`` lost a frame (a gap cut it)."""
        s = self.get(sid) if sid else None
        if s is not None:
            s.lossy[side] = True

    def on_lost_block(
        self,
        side: int,
        sid: int,
        end_stream: bool,
        started: float,
        offset: int,
        ts: float,
        out: list[HttpEvent],
    ) -> None:
        """A header block from ``side`` on ``sid`` that a capture gap cut: its message is
        lossy; a head never seen is reported with no fields (``?`` / status 0), so the
        body that follows has a message to belong to."""
        s = self.get(sid)
        if s is None:
            return
        s.lossy[side] = True
        state = s.state[side]
        if state == NONE:
            s.state[side] = OPEN
            if side == 0:
                s.method = "?"
                out.append(
                    RequestHeaders(
                        stream=sid, method="?", target="?", version="HTTP/2", headers=[], ts=started
                    )
                )
            else:
                out.append(
                    ResponseHeaders(
                        stream=sid, status=0, reason="", version="HTTP/2", headers=[], ts=started
                    )
                )
        if end_stream and state != ENDED:
            self.end_message(side, sid, ts, out, complete=False)

    def end_open(self, side: int, ts: float, out: list[HttpEvent]) -> None:
        """Every message ``side`` left open ends here, incomplete."""
        for sid, s in list(self._open.items()):
            if s.state[side] in (OPEN, PROVING):
                self.end_message(side, sid, ts, out, complete=False)

    def _close_if_done(self, sid: int, s: Stream) -> None:
        if s.state[0] == ENDED and s.state[1] == ENDED:
            self.close(sid)


def _error(side: int, offset: int, ts: float, message: str, stream: int | None) -> ParseError:
    return ParseError(response=side == 1, message=message, offset=offset, ts=ts, stream=stream)


def _block_error(side: int, sid: int, decoded: Decoded, offset: int, ts: float) -> ParseError:
    what = "could not be decoded" if not decoded.complete else "breaks an HPACK rule"
    message = f"header block of stream {sid} {what}: {decoded.error}"
    return _error(side, offset, ts, message, sid)


def _pseudo(headers: Headers, name: str) -> str | None:
    for key, value in headers:
        if key == name:
            return value
    return None


def _status(value: str | None) -> int:
    """``:status`` as a number; 0 when missing or not three digits."""
    if value is None or len(value) != 3 or not (value.isascii() and value.isdigit()):
        return 0
    return int(value)
