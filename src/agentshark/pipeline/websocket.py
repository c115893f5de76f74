"""A WebSocket session after its HTTP/1.1 handshake (RFC 6455 §4): the handshake exchange
held until the session ends, then given out with every message of both directions.

The ``101`` response's ``Sec-WebSocket-Extensions`` says whether ``permessage-deflate`` was
agreed (RFC 7692 §5). Each direction's bytes go to its own
:class:`~agentshark.framing.websocket.WsDirection`. A Diagnostic the frame reader gives
belongs to the message that follows it in that direction (it came right before it); the
ones no message follows go to the exchange.

The exchange is complete when its handshake was, every message is, no byte of the session
was lost (a gap can hold whole messages) and both directions ended with a FIN (a capture
that stops while the session is open has not seen all of it).

Given an ``outbox`` (a callable), the session hands it, after each step that read messages,
a :class:`WsProgress` with the records read since the last one (the call stage reads a
Realtime or Live session's calls from them while it is still open); every record of the
exchange given out at the end came in a progress before it, in the order read (the
exchange's list is sorted by first frame time).

Memory is bounded: a message keeps at most ``max_payload`` bytes, and the session at most
``MAX_KEPT`` bytes of payload in all; past that, messages keep their sizes, times and kinds
but not their payloads, and one diagnostic says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from agentshark.errors import Diagnostic
from agentshark.framing.websocket import Deflate, WsDirection, WsMessage, parse_deflate
from agentshark.model import Exchange, WsLoss, WsRecord, header, ws_record

__all__ = [
    "MAX_KEPT",
    "MAX_MESSAGE",
    "NO_HANDSHAKE",
    "StreamTunnels",
    "WebSocketSession",
    "WsProgress",
    "stream_websocket",
]

MAX_MESSAGE = 1 << 20  # payload bytes kept per message
MAX_KEPT = 64 << 20  # payload bytes kept per session


@dataclass(frozen=True, slots=True, kw_only=True)
class WsProgress:
    """Not an item: messages of an open session (``exchange`` is its handshake), read
    since its last progress, with a :class:`~agentshark.model.WsLoss` where bytes were
    lost; the call stage consumes it. ``restart`` (no records): frames of the stream were
    found lost when no message came after them (HTTP/2 or HTTP/3 said so at its end), so
    where they were is unknown and every message of the session is now ``ws.suspect``: the
    calls are to be read again from the exchange's messages when it comes."""

    exchange: Exchange
    records: list[WsRecord | WsLoss]
    restart: bool = False  # the records given so far cannot be vouched for: see below


class WebSocketSession:
    """Both directions of one WebSocket connection, from the bytes after the ``101``."""

    __slots__ = (
        "_dirs",
        "_ended",
        "_exchange",
        "_gaps",
        "_kept",
        "_last",
        "_outbox",
        "_pending",
        "_records",
        "_suspect",
        "_unsent",
        "_unsettled",
        "bytes",
        "done",
    )

    def __init__(
        self,
        exchange: Exchange,
        *,
        max_payload: int = MAX_MESSAGE,
        outbox: Callable[[WsProgress], None] | None = None,
        headless: bool = False,
    ) -> None:
        """``headless``: the handshake is not in the capture (see :func:`headless`)."""
        self._exchange = exchange
        self._outbox = outbox
        self._unsent: list[WsRecord | WsLoss] = []  # read, not yet put in the outbox
        response = exchange.response
        extensions = header(response.headers, "sec-websocket-extensions") if response else None
        deflate = Deflate() if headless else parse_deflate(extensions)
        self._dirs = tuple(
            WsDirection(
                d,
                deflate=deflate,
                max_payload=max_payload,
                location=f"{exchange.id} {'client' if d == 0 else 'server'} websocket",
                mid_stream=headless,
                find_start=headless,
            )
            for d in (0, 1)
        )
        self._pending: tuple[list[Diagnostic], list[Diagnostic]] = ([], [])
        self._records: list[WsRecord] = []
        self._ended: list[bool | None] = [None, None]  # None: open; True: FIN; False: not
        self._kept = 0
        self._gaps = 0  # bytes lost: whole messages may have gone with them
        self._suspect: Diagnostic | None = None  # said on every message since a taint
        self._unsettled = [False, False]  # a taint of the direction no message followed
        self._last: float = response.ended if response and response.ended else 0.0
        self.bytes = [0, 0]  # per direction, after the handshake
        self.done = False  # the exchange was given out

    def feed(self, direction: int, data: bytes, ts: float) -> None:
        self.bytes[direction] += len(data)
        self._last = ts
        self._take(direction, self._dirs[direction].feed(data, ts))
        if self._unsent:
            self._progress()

    def gap(self, direction: int, size: int, ts: float) -> None:
        self.bytes[direction] += size
        self._gaps += size
        self._take(direction, self._dirs[direction].gap(size, ts))
        if self._outbox is not None:
            self._progress()

    def taint(self, direction: int, diagnostic: Diagnostic, ts: float) -> None:
        """The stream carrying the session (HTTP/2 or HTTP/3) may have lost frames of
        ``direction`` at an unknown place before now (``diagnostic`` names the loss): how
        many bytes went and where the next frame starts are unknown, so every message read
        from here on, either direction, is marked ``ws.suspect`` (its neighbours may be
        missing), and the loss goes to the call stage where it happened."""
        if self._suspect is None:
            self._suspect = Diagnostic(
                code="ws.suspect",
                message="the stream carrying this WebSocket lost frames at an unknown place "
                f"before this message ({diagnostic.location}): any message may be missing "
                "around it",
                location=f"{self._exchange.id} websocket",
            )
        self._gaps += 1
        self._last = ts
        self._unsettled[direction] = True
        if self._outbox is not None:
            self._unsent.append(WsLoss(direction=direction, diagnostic=self._suspect))
            self._progress()

    @property
    def tainted(self) -> bool:
        return self._suspect is not None

    @property
    def unsettled(self) -> bool:
        """A taint came after the last message of its direction (see :func:`stream_websocket`)."""
        return self._unsettled[0] or self._unsettled[1]

    def restart(self) -> None:
        """Tell the call stage that the calls read so far are to be read again."""
        if self._outbox is not None:
            self._outbox(WsProgress(exchange=self._exchange, records=[], restart=True))

    def adopt(self, exchange: Exchange) -> None:
        """The finished exchange of the handshake this session was opened with (the same
        id; its messages' ends and diagnostics as the stream ended): the one given out."""
        self._exchange = exchange

    def _progress(self) -> None:
        """The records read since the last progress, to the outbox (when any)."""
        if self._outbox is not None and self._unsent:
            self._outbox(WsProgress(exchange=self._exchange, records=self._unsent))
            self._unsent = []

    def end(self, direction: int, ts: float, *, clean: bool) -> Exchange | None:
        """The direction ended (``clean``: with a FIN); the exchange once both have."""
        if self._ended[direction] is not None or self.done:
            return None
        self._ended[direction] = clean
        self._take(direction, self._dirs[direction].close(ts))
        self._progress()
        return self._finish() if None not in self._ended else None

    def close(self) -> Exchange | None:
        """The connection is over: the exchange with what was seen (a direction still open
        did not end cleanly); None when it was given out already."""
        if self.done:
            return None
        for d in (0, 1):
            if self._ended[d] is None:
                self._ended[d] = False
                self._take(d, self._dirs[d].close(self._last))
        return self._finish()

    def _take(self, direction: int, events: list[WsMessage | Diagnostic]) -> None:
        """The frame reader's output, as records (a message with the diagnostics before it);
        per message of a session of many small ones, so kept short."""
        pending = self._pending[direction]
        append = self._records.append
        unsent = self._unsent if self._outbox is not None else None  # for the call stage
        for ev in events:
            if type(ev) is not WsMessage:
                diag: Diagnostic = ev  # type: ignore[assignment]  # narrowed: a Diagnostic
                pending.append(diag)
                if unsent is not None and diag.code == "ws.gap":
                    unsent.append(WsLoss(direction=direction, diagnostic=diag))
                continue
            payload = ev.payload
            if payload is not None:
                if self._kept + len(payload) > MAX_KEPT:
                    if self._kept <= MAX_KEPT:
                        pending.append(self._over_budget(ev))
                        self._kept = MAX_KEPT + 1
                    ev = replace(ev, payload=None, truncated=True)
                else:
                    self._kept += len(payload)
            if pending:
                record = ws_record(ev, list(pending))
                pending.clear()
            else:
                record = ws_record(ev, [])
            if self._suspect is not None:
                record.diagnostics.append(self._suspect)
                self._unsettled[ev.direction] = False
            append(record)
            if unsent is not None:
                unsent.append(record)

    def _over_budget(self, ev: WsMessage) -> Diagnostic:
        return Diagnostic(
            code="ws.kept_limit",
            message=f"the session's messages hold more than {MAX_KEPT >> 20} MiB of payload: "
            "from here on only their sizes, times and kinds are kept",
            location=f"{self._exchange.id} websocket byte {ev.offset}",
        )

    def _finish(self) -> Exchange:
        self._progress()
        self.done = True
        ex = self._exchange
        clean = all(e is True for e in self._ended) and not self._gaps
        diags = [*ex.diagnostics, *self._pending[0], *self._pending[1]]
        if not all(e is True for e in self._ended):
            diags.append(
                Diagnostic(
                    code="ws.session_open",
                    message="the WebSocket session does not end in the capture (no FIN in "
                    "both directions): it is reported incomplete",
                    location=f"{ex.id} websocket",
                )
            )
        self._pending[0].clear()
        self._pending[1].clear()
        records = sorted(self._records, key=lambda r: (r.message.first_ts, r.message.direction))
        return replace(ex, messages=records, diagnostics=diags, session_complete=clean)


NO_HANDSHAKE = Diagnostic(
    code="ws.no_handshake",
    message="a WebSocket seen from its middle: the HTTP handshake is not in the capture (its "
    "URL, headers and extensions are unknown); a message with RSV1 set is read as "
    "permessage-deflate with context takeover, undecodable when it refers to bytes sent "
    "before the capture started",
    location="websocket",
)


def stream_websocket(exchange: Exchange, session: WebSocketSession) -> Exchange:
    """The end of a WebSocket bootstrapped on an HTTP/2 or HTTP/3 stream (RFC 8441 §4,
    RFC 9220: an extended CONNECT with ``:protocol: websocket`` answered 2xx), whose DATA in
    each direction ``session`` read as they came (the assembler's ``on_tunnel``): the
    finished ``exchange`` (the handshake's id) with the session's messages, complete when
    both streams ended whole (END_STREAM, no byte lost). Bytes lost inside a DATA frame
    were a gap of the session where they were; frames lost at an unknown place were a
    taint (:meth:`WebSocketSession.taint`): the messages read after one are ``ws.suspect``.
    A taint that no message of its direction followed (HTTP/3 names a stream's hole that
    was never filled only when the stream ends) cannot be placed: the lost bytes came after
    the direction's last message, but were sent at an unknown time, so any message of the
    session may have been answered by them: every one is made ``ws.suspect``. After a taint
    the call stage reads the session's calls again from its messages in time order
    (:meth:`WebSocketSession.restart`): HTTP/2 holds the bytes after lost frames until it
    finds the frames again, so the order they were read in is not the order they came."""
    req, resp = exchange.request, exchange.response
    assert req is not None and resp is not None  # a switch needs both heads
    session.adopt(exchange)
    last = resp.ended or req.ended or 0.0
    session.end(0, req.ended or last, clean=req.complete)
    done = session.end(1, last, clean=resp.complete)
    assert done is not None and done.messages is not None  # both directions ended just now
    if not session.tainted:
        return done
    session.restart()
    if not session.unsettled:
        return done
    suspect = Diagnostic(
        code="ws.suspect",
        message="the stream carrying this WebSocket lost frames at an unknown place: any "
        "message may be missing around this one",
        location=f"{exchange.id} websocket",
    )
    records = [
        r
        if any(d.code == "ws.suspect" for d in r.diagnostics)
        else replace(r, diagnostics=[*r.diagnostics, suspect])
        for r in done.messages
    ]
    return replace(done, messages=records, session_complete=False)


class StreamTunnels:
    """The WebSocket sessions open on one HTTP/2 or HTTP/3 connection's streams, by exchange
    id: :meth:`open` is an assembler's ``on_tunnel``; :meth:`ended` gives each finished
    exchange of a tunnel its session's messages (:func:`stream_websocket`)."""

    __slots__ = ("_outbox", "_sessions")

    def __init__(self, outbox: Callable[[WsProgress], None] | None) -> None:
        self._outbox = outbox
        self._sessions: dict[str, WebSocketSession] = {}

    def open(self, handshake: Exchange) -> WebSocketSession:
        session = WebSocketSession(handshake, outbox=self._outbox)
        self._sessions[handshake.id] = session
        return session

    def ended(self, done: list[Exchange]) -> list[Exchange]:
        if not self._sessions or not done:
            return done
        pop = self._sessions.pop
        out = []
        for ex in done:
            session = pop(ex.id, None)
            out.append(ex if session is None else stream_websocket(ex, session))
        return out
