"""HTTP events of one connection -> :class:`agentshark.model.Exchange` objects.

The assembler keeps the open messages of one connection by stream number and hands out an
exchange as soon as both its messages have ended, so finished exchanges leave memory while
the connection goes on. ``close`` hands out whatever is left, marked incomplete.

Completeness: a message is complete only when it ended with its framing's end
(``MessageEnded.complete``), lost no body bytes (``BodyGap``) and its exchange was not touched
by a capture gap (``GapAffected``) or built around a missing head; every such cause leaves a
diagnostic on the exchange saying where.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol, assert_never

from agentshark.errors import Diagnostic
from agentshark.http.events import (
    BodyData,
    BodyGap,
    ConnectionGoAway,
    DatagramReceived,
    GapAffected,
    HttpEvent,
    InformationalResponse,
    MessageEnded,
    ParseError,
    ProtocolSwitched,
    PushPromised,
    RequestHeaders,
    ResponseHeaders,
    StreamReset,
    UnknownFrame,
)
from agentshark.model import (
    Body,
    Exchange,
    HttpDatagram,
    Interim,
    Request,
    Response,
    TlsFacts,
    exchange_tls_facts,
    header,
)


class TunnelSink(Protocol):
    """Where the DATA of a stream switched to another protocol go as they come (a WebSocket
    session on an HTTP/2 or HTTP/3 stream: :class:`~agentshark.pipeline.websocket.
    WebSocketSession`); ``direction`` 0 is the client's."""

    def feed(self, direction: int, data: bytes, ts: float) -> None: ...

    def gap(self, direction: int, size: int, ts: float) -> None: ...

    def taint(self, direction: int, diagnostic: Diagnostic, ts: float) -> None: ...


@dataclass(slots=True)
class _Open:
    request: Request | None = None
    response: Response | None = None
    request_done: bool = False
    response_done: bool = False
    upgrade: str | None = None
    gapped: bool = False  # a capture gap or a missing head touched this exchange
    explained: bool = False  # a GapAffected said why a message of it is missing
    interim: list[Interim] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    datagrams: list[HttpDatagram] = field(default_factory=list)
    reserved: str | None = None  # the exchange's id, given when its stream was switched
    sink: TunnelSink | None = None  # where its DATA go after the switch (not kept)


class ExchangeAssembler:
    """Builds the exchanges of one connection from its HTTP events.

    ``on_tunnel``, when set, is told of every stream an extended CONNECT switched to
    WebSocket (RFC 8441 §4, RFC 9220: ``ProtocolSwitched`` on a stream): it is given the
    handshake exchange, which takes its id then, as an HTTP/1.1 ``101`` exchange does when
    it ends; the sink it returns gets the stream's DATA, gaps and taints from then on, in
    order (the bodies count their bytes but keep none), and the exchange comes out with
    that id when its stream ends."""

    def __init__(
        self,
        *,
        source: int,
        connection: str | None,
        transport: str,
        scheme: str,
        server: str,
        next_id: Callable[[], str],
        location: str = "",
        tls: TlsFacts | None = None,
    ) -> None:
        self._source = source
        self._connection = connection
        self._transport = transport
        self._scheme = scheme
        self._server = server  # "host:port" of the server, for URLs without a Host header
        self._next_id = next_id
        self._location = location
        self._tls = tls
        self._open: dict[int, _Open] = {}
        self._stray_datagrams = 0  # HTTP datagrams of no open exchange (the first is said)
        self.diagnostics: list[Diagnostic] = []  # problems not tied to one exchange
        self._bad_request: Diagnostic | None = None  # the last request the parser gave up on
        self.on_tunnel: Callable[[Exchange], TunnelSink] | None = None

    def handle(self, events: Iterable[HttpEvent]) -> list[Exchange]:
        done: list[Exchange] = []
        for ev in events:
            if isinstance(ev, BodyData):  # the hot path: one per body segment
                o = self._open.get(ev.stream)
                msg = None if o is None else (o.response if ev.response else o.request)
                if msg is None:  # body of a message whose head the capture missed
                    msg = self._headless(ev.stream, ev.response, ev.ts)
                body = msg.body
                body.size += len(ev.data)
                if o is not None and o.sink is not None:  # a tunnel's: read, not kept
                    o.sink.feed(1 if ev.response else 0, ev.data, ev.ts)
                else:
                    body.pieces.append((ev.ts, ev.data))
            elif isinstance(ev, RequestHeaders):
                self._on_request(ev)
            elif isinstance(ev, ResponseHeaders):
                self._on_response(ev)
            elif isinstance(ev, MessageEnded):
                self._on_end(ev, done)
            elif isinstance(ev, BodyGap):
                self._on_body_gap(ev)
            elif isinstance(ev, GapAffected):
                done.extend(self._on_gap_affected(ev))
            elif isinstance(ev, InformationalResponse):
                o = self._open.setdefault(ev.stream, _Open())
                o.interim.append(
                    Interim(status=ev.status, reason=ev.reason, headers=ev.headers, ts=ev.ts)
                )
            elif isinstance(ev, ProtocolSwitched):
                o = self._open.get(ev.stream)
                if o is not None:
                    o.upgrade = ev.protocol
                    if ev.protocol == "websocket" and self.on_tunnel is not None:
                        self._tunnel(ev.stream, o, self.on_tunnel)
            elif isinstance(ev, ParseError):
                diag = Diagnostic(
                    code="http.parse_error",
                    message=ev.message,
                    location=f"{self._location} "
                    f"{'server' if ev.response else 'client'} byte {ev.offset}",
                )
                o = None if ev.stream is None else self._open.get(ev.stream)
                (o.diagnostics if o is not None else self.diagnostics).append(diag)
                if o is not None and o.sink is not None:  # its frames may be lost: say where
                    o.sink.taint(1 if ev.response else 0, diag, ev.ts)
                if o is None and not ev.response and self._bad_request is None:
                    self._bad_request = diag  # its response then says why it has no request
            elif isinstance(ev, StreamReset):
                done.extend(self._on_reset(ev))
            elif isinstance(ev, ConnectionGoAway):
                self.diagnostics.append(
                    Diagnostic(
                        code="h2.goaway",
                        severity="info" if ev.error_code == 0 else "warning",
                        message=f"the {'server' if ev.response else 'client'} sent GOAWAY "
                        f"({ev.error_name}); last stream processed: {ev.last_stream}",
                        location=self._location,
                    )
                )
            elif isinstance(ev, PushPromised):
                self._on_push(ev)
            elif isinstance(ev, DatagramReceived):
                self._on_datagram(ev)
            elif isinstance(ev, UnknownFrame):
                self.diagnostics.append(
                    Diagnostic(
                        code="h2.unknown_frame",
                        severity="info",
                        message=f"frame type 0x{ev.frame_type:02x} ({len(ev.payload)} bytes) "
                        f"on stream {ev.stream} is not an HTTP/2 frame type; ignored",
                        location=self._location,
                    )
                )
            else:
                assert_never(ev)
        return done

    def headless_session(self, upgrade: str, diagnostic: Diagnostic) -> Exchange:
        """An exchange for a session whose handshake the capture does not hold (a WebSocket
        seen from its middle): no request, no response, ``diagnostic`` saying so."""
        return Exchange(
            id=self._next_id(),
            source=self._source,
            connection=self._connection,
            transport=self._transport,
            request=None,
            response=None,
            upgrade=upgrade,
            diagnostics=[diagnostic],
            tls=self._tls_facts(),
        )

    def _tunnel(self, stream: int, o: _Open, on_tunnel: Callable[[Exchange], TunnelSink]) -> None:
        """The handshake given to ``on_tunnel`` holds the two heads, complete when both
        were read whole (their messages go on as the stream does)."""
        if o.request is None or o.response is None:  # a head lost: nothing to switch by
            return
        whole = not o.gapped and all(d.code != "http.parse_error" for d in o.diagnostics)
        o.reserved = self._next_id()
        o.sink = on_tunnel(
            Exchange(
                id=o.reserved,
                source=self._source,
                connection=self._connection,
                transport=self._transport,
                request=replace(o.request, complete=whole),
                response=replace(o.response, complete=whole),
                upgrade=o.upgrade,
                diagnostics=o.diagnostics,
                tls=self._tls_facts(),
                stream=stream,
                datagrams=o.datagrams,
            )
        )

    def adopt_request(self, stream: int, request: Request) -> None:
        """``stream`` answers a request seen before this assembler existed (the HTTP/1.1
        request of an ``Upgrade: h2c`` is answered on HTTP/2 stream 1)."""
        o = self._open.setdefault(stream, _Open())
        o.request = request
        o.request_done = True

    def close(self) -> list[Exchange]:
        """The connection is over: every exchange still open is handed out as it is."""
        done: list[Exchange] = []
        for stream in sorted(self._open, key=lambda s: (s < 0, abs(s))):
            done.extend(self._finish(stream, force=True))
        return done

    # -- events ---------------------------------------------------------------------------

    def _on_request(self, ev: RequestHeaders) -> None:
        o = self._open.setdefault(ev.stream, _Open())
        o.request = Request(
            method=ev.method,
            target=ev.target,
            url=self._url(ev.target, ev.headers),
            version=ev.version,
            headers=ev.headers,
            body=Body(),
            started=ev.ts,
            ended=None,
        )

    def _on_response(self, ev: ResponseHeaders) -> None:
        o = self._open.setdefault(ev.stream, _Open())
        o.response = Response(
            status=ev.status,
            reason=ev.reason,
            version=ev.version,
            headers=ev.headers,
            body=Body(),
            started=ev.ts,
            ended=None,
            interim=o.interim,
        )

    def _on_body_gap(self, ev: BodyGap) -> None:
        o = self._open.get(ev.stream)
        msg = None if o is None else (o.response if ev.response else o.request)
        if msg is None:  # a gap in the body of a message whose head the capture missed
            msg = self._headless(ev.stream, ev.response, ev.ts)
            o = self._open[ev.stream]
        assert o is not None
        msg.body.gap_bytes += ev.size
        msg.complete = False
        o.gapped = True
        if o.sink is not None:
            o.sink.gap(1 if ev.response else 0, ev.size, ev.ts)
        what = "response" if ev.response else "request"
        side = "server" if ev.response else "client"
        at = f" at {side} byte {ev.offset}" if ev.offset >= 0 else ""
        o.diagnostics.append(
            Diagnostic(
                code="http.body_gap",
                message=f"{ev.size} bytes of the {what} body{at} were not captured",
                location=self._location
                if ev.offset < 0
                else f"{self._location} {side} byte {ev.offset}",
            )
        )

    def _on_gap_affected(self, ev: GapAffected) -> list[Exchange]:
        o = self._open.setdefault(ev.stream, _Open())
        o.gapped = o.explained = True
        for msg in (o.request, o.response):
            if msg is not None:
                msg.complete = False
        o.diagnostics.append(
            Diagnostic(
                code=ev.code,
                message=ev.message,
                location=f"{self._location} stream {ev.stream}",
            )
        )
        if not ev.final:
            return []
        return self._finish(ev.stream, force=True)

    def _headless(self, stream: int, response: bool, ts: float) -> Request | Response:
        """A placeholder for a message whose head was not captured, so its body is kept:
        unknown method and target ("?") or status 0, marked by a diagnostic."""
        o = self._open.setdefault(stream, _Open())
        o.gapped = True
        what = "response" if response else "request"
        o.diagnostics.append(
            Diagnostic(
                code="http.head_missing",
                message=f"the {what} head of this message is not in the capture; its body is "
                "kept, its method/status are unknown",
                location=f"{self._location} stream {stream}",
            )
        )
        if response:
            o.response = Response(
                status=0, reason="", version="?", headers=[], body=Body(), started=ts, ended=None
            )
            return o.response
        o.request = Request(
            method="?",
            target="?",
            url="?",
            version="?",
            headers=[],
            body=Body(),
            started=ts,
            ended=None,
        )
        return o.request

    def _on_reset(self, ev: StreamReset) -> list[Exchange]:
        o = self._open.get(ev.stream)
        if o is None:
            return []
        for msg in (o.request, o.response):
            if msg is not None and msg.ended is None:
                msg.ended = ev.ts
                msg.complete = False
        o.diagnostics.append(
            Diagnostic(
                code="h2.stream_reset",
                severity="info" if ev.error_name in ("NO_ERROR", "CANCEL") else "warning",
                message=f"the {'server' if ev.response else 'client'} reset the stream "
                f"({ev.error_name})",
                location=f"{self._location} stream {ev.stream}",
            )
        )
        return self._finish(ev.stream, force=True)

    def _on_datagram(self, ev: DatagramReceived) -> None:
        o = self._open.get(ev.stream)
        if o is not None:
            o.datagrams.append(
                HttpDatagram(direction=1 if ev.response else 0, size=ev.size, ts=ev.ts)
            )
            return
        self._stray_datagrams += 1
        if self._stray_datagrams == 1:
            self.diagnostics.append(
                Diagnostic(
                    code="h3.datagram_stream",
                    message=f"an HTTP datagram of the {'server' if ev.response else 'client'} "
                    f"names stream {ev.stream}, which has no open exchange (its request is "
                    "not in the capture, or it ended): counted in the connection's "
                    "datagram_frames only",
                    location=self._location,
                )
            )

    def _on_push(self, ev: PushPromised) -> None:
        o = self._open.setdefault(ev.promised_stream, _Open())
        method = header(ev.headers, ":method") or "GET"
        target = header(ev.headers, ":path") or "/"
        o.request = Request(
            method=method,
            target=target,
            url=self._url(target, ev.headers),
            version=ev.version,
            headers=ev.headers,
            body=Body(),
            started=ev.ts,
            ended=ev.ts,
            complete=True,
        )
        o.request_done = True
        o.diagnostics.append(
            Diagnostic(
                code="h2.pushed" if ev.version == "HTTP/2" else "h3.pushed",
                severity="info",
                message=f"pushed by the server, promised on stream {ev.stream}",
                location=f"{self._location} stream {ev.promised_stream}",
            )
        )

    def _on_end(self, ev: MessageEnded, done: list[Exchange]) -> None:
        o = self._open.get(ev.stream)
        if o is None:
            return
        msg = o.response if ev.response else o.request
        if msg is None:
            return
        msg.ended = ev.ts
        msg.complete = ev.complete and msg.body.gap_bytes == 0 and not o.gapped
        msg.trailers = ev.trailers
        if ev.transfer_bytes is not None:
            msg.body.transfer_bytes = ev.transfer_bytes
        if ev.response:
            o.response_done = True
        else:
            o.request_done = True
        if (o.request_done and o.response_done) or (ev.response and o.request is None):
            done.extend(self._finish(ev.stream, force=False))

    def _finish(self, stream: int, *, force: bool) -> list[Exchange]:
        o = self._open.pop(stream, None)
        if o is None:
            return []
        if o.request is None and o.response is None:
            return []
        ex = Exchange(
            id=o.reserved or self._next_id(),
            source=self._source,
            connection=self._connection,
            transport=self._transport,
            request=o.request,
            response=o.response,
            upgrade=o.upgrade,
            diagnostics=o.diagnostics,
            tls=self._tls_facts(),
            stream=stream,
            datagrams=o.datagrams,
        )
        if o.explained:  # the diagnostics already say why a message is missing
            pass
        elif o.request is None:
            ex.diagnostics.append(
                Diagnostic(
                    code="http.response_without_request",
                    message="a response whose request is not in the capture "
                    f"({self._why_no_request()})",
                    location=self._location,
                )
            )
        elif o.response is None:
            ex.diagnostics.append(
                Diagnostic(
                    code="http.no_response",
                    message="no response was captured for this request",
                    location=self._location,
                    severity="info" if not force else "warning",
                )
            )
        return [ex]

    def _why_no_request(self) -> str:
        """Why a response has no request: the request the parser gave up on (a head too
        long...), else a capture that began after the request was sent."""
        bad, self._bad_request = self._bad_request, None
        if bad is None:
            return "the capture started after the request was sent"
        return f"its request could not be parsed: {bad.message}, at {bad.location}"

    def _tls_facts(self) -> dict[str, object] | None:
        return exchange_tls_facts(self._tls)

    def _url(self, target: str, headers: list[tuple[str, str]]) -> str:
        if "://" in target:
            return target
        if target == "*" or not target.startswith("/"):  # asterisk- or authority-form
            return target
        host = header(headers, ":authority") or header(headers, "host") or self._server
        scheme = header(headers, ":scheme") or self._scheme
        return f"{scheme}://{host}{target}"
