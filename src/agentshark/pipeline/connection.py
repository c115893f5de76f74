"""One TCP connection above TCP: TLS (when keys allow), protocol sniffing, HTTP/1 or HTTP/2.

The layers, for each connection::

    TCP events -> [TlsConnection: ciphertext -> plaintext] -> _Plain: sniff -> HttpSession
                                                                        -> Exchange objects
                                                              (or a wire protocol's
                                                               WireSession: agentshark.wire)

A wire protocol can turn its connection into TLS in the middle (PostgreSQL's SSLRequest
answered ``S``): the session says where (``WireSession.tls_switch``), TLS starts at those
offsets (acknowledgments translated to them), and the decrypted bytes go to a second
``_Plain`` that sniffs the protocol again (the StartupMessage); the report counts both.

``_Plain`` holds a direction's first bytes until it knows what they are (a few bytes; 64 KiB
for a capture that starts mid-connection), then replays them into the chosen parser. A capture
gap while sniffing ends what a direction can tell: the bytes after it start inside a message,
so the sniffer hears that direction only as far as the gap (nothing, if the gap came first)
and the other direction decides; the gap itself is replayed into the parser like the bytes.
One exception, for the wire protocols, whose decoders find message boundaries again after a
gap: when the client's direction (known from the TCP handshake) lost its first bytes and
neither its head nor the server's names a protocol, the client bytes after the gap are heard
too (a lost segment ends where the next one begins, most often at a message), and a
resumable wire protocol (``WireProtocol.resumable``) whose sniffer recognizes them takes the
connection (the Kafka or Redis client whose first request was lost); until
:data:`_RESUME_BYTES` of them have come, the decision waits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal

from agentshark.errors import Diagnostic
from agentshark.http.events import HttpEvent
from agentshark.http.exchange import ExchangeAssembler
from agentshark.http.h1 import H1Connection
from agentshark.http.h2 import H2Connection
from agentshark.http.sniff import SNIFF_BYTES, sniff
from agentshark.model import Exchange
from agentshark.net.events import Connection, format_endpoint
from agentshark.pipeline.reports import ConnectionReport
from agentshark.pipeline.websocket import (
    NO_HANDSHAKE,
    StreamTunnels,
    WebSocketSession,
    WsProgress,
)
from agentshark.pipeline.wire import WireSession
from agentshark.tls.events import TlsGap, TlsPlaintext
from agentshark.tls.keylog import KeyLog
from agentshark.tls.session import TlsConnection
from agentshark.wire import WireProtocol, sniff_resumed, sniff_wire

HttpVersion = Literal["http/1.1", "h2"]
_HTTP_ALPN = ("h2", "http/1.1")
_HELD_LIMIT = 65536
_RESUME_BYTES = 512  # client bytes after a gap heard by the wire sniffers

_Held = tuple[str, int, object, float, int]  # ("data"|"gap"|"end", direction, value, ts, acked)
_NO_HEADS = (bytearray(), bytearray())  # never written: the heads before the first byte


class HttpSession:
    """HTTP/1.x or HTTP/2 on one connection (both directions) with its exchange assembler.

    Follows an HTTP/1.1 ``Upgrade: h2c`` into HTTP/2 on the same connection: the upgraded
    request's response then arrives on HTTP/2 stream 1 (RFC 7540 §3.2).
    """

    __slots__ = (
        "_assembler",
        "_h1",
        "_h2",
        "_make_assembler",
        "_outbox",
        "_tunnels",
        "_ws",
        "diagnostics",
        "exchanges",
    )

    def __init__(
        self,
        version: HttpVersion,
        make_assembler: Callable[[str], ExchangeAssembler],
        *,
        expect_preface: bool = True,
        outbox: Callable[[WsProgress], None] | None = None,
        websocket: bool = False,
    ) -> None:
        """``websocket``: the connection is a WebSocket seen from its middle (no handshake)."""
        self._make_assembler = make_assembler
        self._outbox = outbox  # where an open WebSocket session puts its progress
        self._h1: H1Connection | None = None
        self._h2: H2Connection | None = None
        self._tunnels: StreamTunnels | None = None  # WebSocket sessions on HTTP/2 streams
        if version == "h2":
            self._h2 = H2Connection(expect_preface=expect_preface)
            self._assembler = self._h2_assembler()
        else:
            self._h1 = H1Connection()
            self._assembler = make_assembler("http/1.1")
        self._ws: WebSocketSession | None = None
        self.diagnostics: list[Diagnostic] = []
        self.exchanges = 0
        if websocket:
            exchange = self._assembler.headless_session("websocket", NO_HANDSHAKE)
            exchange.diagnostics = [replace(NO_HANDSHAKE, location=f"{exchange.id} websocket")]
            self._ws = WebSocketSession(exchange, outbox=outbox, headless=True)

    @property
    def switched(self) -> str | None:
        if self._h1 is None or self._h2 is not None:
            return None
        return self._h1.switched or ("websocket" if self._ws is not None else None)

    @property
    def switched_bytes(self) -> tuple[int, int]:
        if self._h1 is None or self._h2 is not None:
            return (0, 0)
        if self._ws is not None:
            return (self._ws.bytes[0], self._ws.bytes[1])
        return self._h1.switched_bytes

    @property
    def version(self) -> str:
        return "h2" if self._h2 is not None else "http/1.1"

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[Exchange]:
        """``acked``: what the segment carrying ``data`` acknowledged of the other direction
        (HTTP/1 pairs responses by it after a gap; HTTP/2 tells by it which streams a gap
        can have touched)."""
        h2 = self._h2
        if h2 is not None:
            events = h2.feed(direction, data, ts, acked)
            return self._emit(events) if events else []
        ws = self._ws
        if ws is not None:
            ws.feed(direction, data, ts)
            return []
        assert self._h1 is not None
        events = self._h1.feed(direction, data, ts, acked)
        if not events:
            return []
        done = self._emit(events)
        if self._h1.switched == "h2c":
            done.extend(self._upgrade_to_h2(done, ts))
        elif self._h1.switched == "websocket":
            done = self._to_websocket(done, ts)
        return done

    def gap(self, direction: int, size: int, ts: float) -> list[Exchange]:
        if self._ws is not None:
            self._ws.gap(direction, size, ts)
            return []
        parser = self._h2 if self._h2 is not None else self._h1
        assert parser is not None
        return self._emit(parser.gap(direction, size, ts))

    def end(self, direction: int, ts: float, *, clean: bool) -> list[Exchange]:
        if self._ws is not None:
            done = self._ws.end(direction, ts, clean=clean)
            return self._count([done] if done is not None else [])
        parser = self._h2 if self._h2 is not None else self._h1
        assert parser is not None
        return self._emit(parser.end(direction, ts, clean=clean))

    def close(self) -> list[Exchange]:
        done = self._assembler.close()
        if self._tunnels is not None:
            done = self._tunnels.ended(done)
        if self._ws is not None:
            held = self._ws.close()
            done.extend([held] if held is not None else [])
        self.exchanges += len(done)
        self.diagnostics.extend(self._assembler.diagnostics)
        return done

    def _count(self, done: list[Exchange]) -> list[Exchange]:
        self.exchanges += len(done)
        return done

    def _emit(self, events: list[HttpEvent]) -> list[Exchange]:
        done = self._assembler.handle(events)
        self.exchanges += len(done)
        return done if self._tunnels is None else self._tunnels.ended(done)

    def _h2_assembler(self) -> ExchangeAssembler:
        """The HTTP/2 assembler, handing each stream switched to WebSocket (RFC 8441) to a
        session that reads its DATA as they come."""
        assembler = self._make_assembler("h2")
        self._tunnels = StreamTunnels(self._outbox)  # made for HTTP/2 only: HTTP/1 needs none
        assembler.on_tunnel = self._tunnels.open
        return assembler

    def _upgrade_to_h2(self, done: list[Exchange], ts: float) -> list[Exchange]:
        """The 101 to ``Upgrade: h2c`` was seen: hand the connection to HTTP/2."""
        assert self._h1 is not None
        upgraded = next((ex for ex in done if ex.upgrade == "h2c"), None)
        leftovers = self._h1.take_switched()
        out = self.close()  # the HTTP/1.1 part is over
        self._assembler = self._h2_assembler()
        self._h2 = H2Connection(expect_preface=True, upgraded=True)
        if upgraded is not None and upgraded.request is not None:
            self._assembler.adopt_request(1, upgraded.request)
        for direction, data in enumerate(leftovers):
            if data:
                out.extend(self.feed(direction, data, ts))
        return out

    def _to_websocket(self, done: list[Exchange], ts: float) -> list[Exchange]:
        """The 101 to ``Upgrade: websocket`` was seen: its exchange is held while the
        session's messages are read (RFC 6455 §4.1: the frames start right after it)."""
        assert self._h1 is not None
        upgraded = next((ex for ex in done if ex.upgrade == "websocket"), None)
        if upgraded is None:  # the 101's exchange is still with the assembler: not ours
            return done
        self.exchanges -= 1  # counted when it is given out, with its messages
        self._ws = WebSocketSession(upgraded, outbox=self._outbox)
        for direction, data in enumerate(self._h1.take_switched()):
            if data:
                self._ws.feed(direction, data, ts)
        return [ex for ex in done if ex is not upgraded]


class _Plain:
    """Cleartext bytes of a connection (on the wire, or decrypted): sniff, then parse."""

    __slots__ = (
        "_alpn",
        "_blind",
        "_ended",
        "_events",
        "_heads",
        "_make_assembler",
        "_make_wire",
        "_on_swap",
        "_outbox",
        "_port",
        "_resume",
        "_swap",
        "_tls_allowed",
        "protocol",
        "session",
        "swapped",
    )

    def __init__(
        self,
        make_assembler: Callable[[str], ExchangeAssembler],
        *,
        swap_allowed: bool,
        tls_allowed: bool,
        alpn: str | None = None,
        outbox: Callable[[WsProgress], None] | None = None,
        make_wire: Callable[[WireProtocol], WireSession] | None = None,
        port: int = 0,
        on_swap: Callable[[], None] | None = None,
    ) -> None:
        self._make_assembler = make_assembler
        self._on_swap = on_swap
        self._outbox = outbox
        self._make_wire = make_wire
        self._port = port
        self._swap = swap_allowed
        self._tls_allowed = tls_allowed
        self._alpn = alpn
        self._events: list[_Held] = []
        self._heads = _NO_HEADS  # made at the first byte: most idle connections send none
        self._ended = [False, False]
        self._blind = [False, False]  # a gap cut the direction's head: no more bytes to it
        self._resume: bytearray | None = None  # the client's bytes after its latest gap
        self.protocol: str | None = None
        self.session: HttpSession | WireSession | None = None
        self.swapped = False

    def data(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[Exchange]:
        session = self.session
        if session is not None:
            return session.feed(direction, data, ts, acked)
        if self.protocol is not None:
            return []
        self._events.append(("data", direction, data, ts, acked))
        if self._heads is _NO_HEADS:
            self._heads = (bytearray(), bytearray())
        head = self._heads[direction]
        if len(head) < _HELD_LIMIT and not self._blind[direction]:
            head += data[: _HELD_LIMIT - len(head)]
        resume = self._resume
        if direction == 0 and resume is not None and len(resume) < _RESUME_BYTES:
            resume += data[: _RESUME_BYTES - len(resume)]
        return self._decide(final=False)

    def gap(self, direction: int, size: int, ts: float) -> list[Exchange]:
        if self.session is not None:
            return self.session.gap(direction, size, ts)
        if self.protocol is not None:
            return []
        self._events.append(("gap", direction, size, ts, -1))
        self._blind[direction] = True
        if direction == 0 and self._make_wire is not None and not self._swap:
            self._resume = bytearray()
        return self._decide(final=all(self._blind) or all(self._ended))

    def end(self, direction: int, ts: float, *, clean: bool) -> list[Exchange]:
        self._ended[direction] = True
        if self.session is not None:
            return self.session.end(direction, ts, clean=clean)
        if self.protocol is not None:
            return []
        self._events.append(("end", direction, clean, ts, -1))
        return self._decide(final=all(self._blind) or all(self._ended))

    def finish(self) -> list[Exchange]:
        """The connection is over: decide with what there is, flush the session."""
        out = self._decide(final=True) if self.protocol is None else []
        if self.session is not None:
            out.extend(self.session.close())
        return out

    def held(self) -> list[_Held]:
        """The events held back while sniffing (for a layer that takes over: TLS)."""
        events, self._events = self._events, []
        return events

    def _decide(self, *, final: bool) -> list[Exchange]:
        client, server = self._heads
        wire = None
        if self._make_wire is not None and self._alpn not in _HTTP_ALPN and (client or server):
            wire = sniff_wire(bytes(client), bytes(server), self._port)
        if wire is not None:
            protocol: str | None = wire.name
            swap = False
        elif self._alpn in _HTTP_ALPN:
            protocol = self._alpn
            swap = False
        elif (
            not final
            and len(client) < SNIFF_BYTES
            and not server
            and not self._ended[0]
            and not self._blind[0]
        ):
            return []
        else:
            protocol, swap = sniff(
                bytes(client), bytes(server), final=final, swap_allowed=self._swap
            )
            if protocol == "tls" and not self._tls_allowed:
                protocol = "unknown"
            if protocol in (None, "unknown") and self._resume is not None:
                wire = self._resumed(server)
                if wire is not None:
                    protocol = wire.name
                elif self._waits():
                    return []  # more client bytes after the gap may tell
        if protocol is None:
            return []
        self.protocol = protocol
        self.swapped = swap
        self._heads = _NO_HEADS
        if wire is not None and self._make_wire is not None:
            self.session = self._make_wire(wire)
            return replay(self, self.held())
        if protocol not in ("http/1.1", "h2c", "h2", "websocket"):
            return []
        events = self.held()
        if swap:
            events = [(kind, 1 - d, value, ts, acked) for kind, d, value, ts, acked in events]
            if self._on_swap is not None:
                # the bytes that come later follow the roles the bytes showed, not the port
                # guess (a request body in a segment after its head went to the response)
                self._on_swap()
        version: HttpVersion = "h2" if protocol in ("h2c", "h2") else "http/1.1"
        self.session = HttpSession(
            version,
            self._make_assembler,
            outbox=self._outbox,
            websocket=protocol == "websocket",
        )
        return replay(self, events)

    def _resumed(self, server: bytearray) -> WireProtocol | None:
        """The wire protocol the client's bytes after its gap speak, if one recognizes
        them (the gap stays in the events replayed, so the decoder hunts from it)."""
        resume = self._resume
        return sniff_resumed(bytes(resume), bytes(server), self._port) if resume else None

    def _waits(self) -> bool:
        """Whether to hear more client bytes after the gap: fewer than
        :data:`_RESUME_BYTES` came, the client's direction goes on, and what is held is
        below :data:`_HELD_LIMIT`."""
        resume = self._resume
        if resume is None or len(resume) >= _RESUME_BYTES or self._ended[0]:
            return False
        held = 0
        for _kind, _d, value, _ts, _acked in self._events:
            held += len(value) if isinstance(value, bytes) else 0
        return held < _HELD_LIMIT


def replay(target: _Plain | ConnectionAnalyzer, events: list[_Held]) -> list[Exchange]:
    out: list[Exchange] = []
    for kind, d, value, ts, acked in events:
        if kind == "data":
            assert isinstance(value, bytes)
            out.extend(target.data(d, value, ts, acked))
        elif kind == "gap":
            assert isinstance(value, int)
            out.extend(target.gap(d, value, ts))
        else:
            out.extend(target.end(d, ts, clean=bool(value)))
    return out


class ConnectionAnalyzer:
    """Everything above TCP for one connection; see the module docstring."""

    __slots__ = (
        "_base",
        "_conn",
        "_inner",
        "_keylog",
        "_location",
        "_next_id",
        "_outbox",
        "_outer",
        "_source",
        "_tls",
        "_watch",
    )

    def __init__(
        self,
        conn: Connection,
        source: int,
        next_id: Callable[[], str],
        name: str,
        keylog: KeyLog,
        outbox: Callable[[WsProgress], None] | None = None,
    ) -> None:
        """``outbox``: where WebSocket sessions put their progress (:class:`WsProgress`),
        for a caller that reads their calls while they are open."""
        self._conn = conn
        self._outbox = outbox
        self._source = source
        self._next_id = next_id
        self._keylog = keylog
        self._location = f"{name} {conn.id}"
        self._outer = _Plain(
            self._http_assembler,
            swap_allowed=not conn.handshake_seen,
            tls_allowed=True,
            outbox=outbox,
            make_wire=self._wire_session,
            port=conn.server[1],
            on_swap=conn.swap_roles,
        )
        self._tls: TlsConnection | None = None
        self._inner: _Plain | None = None
        self._watch = False  # the outer session's protocol can switch to TLS (STARTTLS)
        self._base: tuple[int, int] | None = None  # where that TLS began, in TCP offsets

    # (bound methods, not closures made per connection: an idle connection stays small)
    def _http_assembler(self, transport: str) -> ExchangeAssembler:
        return self._make_assembler("http", transport)

    def _https_assembler(self, transport: str) -> ExchangeAssembler:
        return self._make_assembler("https", transport)

    def _make_assembler(self, scheme: str, transport: str) -> ExchangeAssembler:
        return ExchangeAssembler(
            source=self._source,
            connection=self._conn.id,
            transport=transport,
            scheme=scheme,
            server=format_endpoint(self._conn.server),
            next_id=self._next_id,
            location=self._location,
            tls=self._tls.info if self._tls is not None else None,
        )

    def _wire_session(self, proto: WireProtocol) -> WireSession:
        outer = self._outer.session if self._tls is not None else None
        session = WireSession(
            proto,
            source=self._source,
            connection=self._conn.id,
            server=format_endpoint(self._conn.server),
            next_id=self._next_id,
            location=self._location,
            tls=self._tls.info if self._tls is not None else None,
            first_index=outer.exchanges if isinstance(outer, WireSession) else 0,
        )
        if self._tls is None:
            self._watch = session.starts_tls
        return session

    # -- TCP events -----------------------------------------------------------------------

    def data(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[Exchange]:
        """TCP bytes of ``direction``; ``acked`` as ``StreamData.acked``."""
        tls = self._tls
        if tls is None:
            out = self._outer.data(direction, data, ts, acked)
            if self._outer.protocol == "tls" and self._tls is None:
                out.extend(self._start_tls())
            elif self._watch:
                out.extend(self._starttls(ts))
            return out
        if self._base is not None and acked >= 0:
            acked = max(0, acked - self._base[1 - direction])
        return self._plaintext(tls.feed(direction, data, ts, acked))

    def gap(self, direction: int, size: int, ts: float) -> list[Exchange]:
        if self._tls is None:
            out = self._outer.gap(direction, size, ts)
            if self._outer.protocol == "tls" and self._tls is None:
                out.extend(self._start_tls())
            elif self._watch:  # a lost STARTTLS answer, told by what followed it
                out.extend(self._starttls(ts))
            return out
        return self._plaintext(self._tls.gap(direction, size, ts))

    def end(self, direction: int, ts: float, *, clean: bool) -> list[Exchange]:
        if self._tls is None:
            out = self._outer.end(direction, ts, clean=clean)
            if self._outer.protocol == "tls" and self._tls is None:
                out.extend(self._start_tls())
            return out
        out = self._plaintext(self._tls.end(direction, ts))
        if self._inner is not None:
            out.extend(self._inner.end(direction, ts, clean=clean))
        return out

    def close(self) -> list[Exchange | ConnectionReport]:
        out: list[Exchange | ConnectionReport] = []
        if self._tls is None or self._base is not None:
            out.extend(self._outer.finish())
            if self._outer.protocol == "tls" and self._tls is None:
                out.extend(self._start_tls())
        if self._inner is not None:
            out.extend(self._inner.finish())
        out.append(self._report())
        return out

    # -- TLS ------------------------------------------------------------------------------

    def _start_tls(self) -> list[Exchange]:
        if self._outer.swapped:
            self._conn.swap_roles()
        self._tls = TlsConnection(self._keylog, location=self._location)
        return replay(self, self._outer.held())

    def _starttls(self, ts: float) -> list[Exchange]:
        """The outer wire session's protocol switched to TLS: decrypt from there on."""
        session = self._outer.session
        switch = session.tls_switch if isinstance(session, WireSession) else None
        if switch is None:
            return []
        self._watch = False
        self._base = switch.offsets
        tls = self._tls = TlsConnection(self._keylog, location=self._location)
        out: list[Exchange] = []
        for direction, rest in enumerate(switch.rest):
            if rest:
                out.extend(self._plaintext(tls.feed(direction, rest, ts)))
        return out

    def _plaintext(self, events: Sequence[object]) -> list[Exchange]:
        """TLS events -> the inner cleartext layer: plaintext (with its acknowledgment,
        in plaintext offsets), gaps of lost plaintext, diagnostics."""
        out: list[Exchange] = []
        for ev in events:
            if type(ev) is TlsPlaintext:
                inner = self._inner or self._start_inner()
                out.extend(inner.data(ev.direction, ev.data, ev.ts, ev.acked))
            elif isinstance(ev, TlsGap):
                lost = self._inner
                if lost is None and self._tls is not None and self._tls.info.alpn:
                    lost = self._start_inner()  # the protocol is known: the gap is its
                if lost is not None:
                    out.extend(lost.gap(ev.direction, ev.size, ev.ts))
            elif isinstance(ev, Diagnostic):
                self._conn.diagnostics.append(ev)
        return out

    def _start_inner(self) -> _Plain:
        assert self._tls is not None
        inner = self._inner = _Plain(
            self._https_assembler,
            swap_allowed=False,
            tls_allowed=False,
            alpn=self._tls.info.alpn,
            outbox=self._outbox,
            make_wire=self._wire_session,
            port=self._conn.server[1],
        )
        return inner

    # -- the report -----------------------------------------------------------------------

    def _report(self) -> ConnectionReport:
        plain = self._inner if self._tls is not None else self._outer
        session = plain.session if plain is not None else None
        diagnostics = list(self._conn.diagnostics)
        protocol = plain.protocol if plain is not None and plain.protocol else "unknown"
        if self._tls is not None and (plain is None or plain.protocol is None):
            protocol = "tls"
        switched = (0, 0)
        exchanges = 0
        outer = self._outer.session if self._base is not None else None
        if outer is not None:  # the cleartext part before a STARTTLS: its SSLRequest...
            diagnostics.extend(outer.diagnostics)
            exchanges = outer.exchanges
            protocol = outer.version  # (until the TLS part says more)
        if session is not None:
            diagnostics.extend(session.diagnostics)
            exchanges += session.exchanges
            switched = session.switched_bytes
            protocol = (
                session.version
                if self._tls is not None or isinstance(session, WireSession)
                else ("h2c" if session.version == "h2" else "http/1.1")
            )
            if session.switched:
                protocol = f"{protocol}+{session.switched}"
        return ConnectionReport(
            connection=self._conn,
            source=self._source,
            protocol=protocol,
            exchanges=exchanges,
            diagnostics=diagnostics,
            switched_bytes=switched,
            tls=self._tls.info.to_json() if self._tls is not None else None,
        )
