"""The HTTP/3 client of ``make_capture.py --h3``: aioquic's ``H3Connection`` over its asyncio
QUIC protocol, one request at a time on a connection (as the h2 run's httpx does).

Runs in the HTTP/3 generator venv (``bench/.venv-gen-h3``, ``genlib.GEN_H3_REQUIREMENTS``).
The request heads are the ones httpx puts on the wire over HTTP/2 (``httpcore``'s h2 order:
``:method``, ``:authority``, ``:scheme``, ``:path``, then httpx's headers without ``host``,
``connection`` and ``transfer-encoding``), so that the h2 and h3 captures carry the same
fields; the response body comes back as its DATA frames carried it (no content decoding).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, QuicEvent

# Connection-specific fields (RFC 9114 §4.2) that httpx sets for HTTP/1.1 and drops over h2.
_HOP_BY_HOP = frozenset({b"host", b"connection", b"transfer-encoding", b"keep-alive"})


def request_fields(
    method: str, authority: str, target: str, headers: list[tuple[bytes, bytes]]
) -> list[tuple[bytes, bytes]]:
    """The HTTP/3 field section of a request: the pseudo-headers in httpcore's h2 order, then
    ``headers`` (httpx's, as its ``build_request`` makes them) lower-cased, hop-by-hop ones
    left out."""
    pseudo = [
        (b":method", method.encode()),
        (b":authority", authority.encode()),
        (b":scheme", b"https"),
        (b":path", target.encode()),
    ]
    return pseudo + [(k.lower(), v) for k, v in headers if k.lower() not in _HOP_BY_HOP]


class H3Client(QuicConnectionProtocol):
    """One QUIC connection speaking HTTP/3; :meth:`request` sends one request and returns its
    status and body once the server ended the stream."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self._open: dict[int, tuple[asyncio.Future[None], list[H3Event]]] = {}

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ConnectionTerminated):
            for done, _ in self._open.values():
                if not done.done():
                    done.set_exception(ConnectionError(f"QUIC connection closed: {event}"))
            return
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived | DataReceived) and ev.stream_id in self._open:
                done, events = self._open[ev.stream_id]
                events.append(ev)
                if ev.stream_ended and not done.done():
                    done.set_result(None)

    async def request(
        self, fields: list[tuple[bytes, bytes]], body: bytes, timeout: float = 60.0
    ) -> tuple[int, bytes]:
        """(status, body bytes) of the response to ``fields`` (:func:`request_fields`) and
        ``body``."""
        sid = self._quic.get_next_available_stream_id()
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        events: list[H3Event] = []
        self._open[sid] = (done, events)
        try:
            self.h3.send_headers(sid, fields, end_stream=not body)
            if body:
                self.h3.send_data(sid, body, end_stream=True)
            self.transmit()
            await asyncio.wait_for(done, timeout)
        finally:
            del self._open[sid]
        head = next(ev for ev in events if isinstance(ev, HeadersReceived))
        raw = b"".join(ev.data for ev in events if isinstance(ev, DataReceived))
        return int(dict(head.headers)[b":status"]), raw

    def client_port(self) -> int:
        assert self._transport is not None
        return int(self._transport.get_extra_info("sockname")[1])

    def tls_facts(self) -> tuple[str, str, str, str]:
        """(TLS version, cipher suite in TLS's spelling, ALPN, QUIC version) of the
        connection."""
        schedule = self._quic.tls.key_schedule
        suite = f"TLS_{schedule.cipher_suite.name}" if schedule is not None else ""
        alpn = self._quic.tls.alpn_negotiated or ""
        return "TLSv1.3", suite, alpn, f"0x{self._quic._version:08x}"


@asynccontextmanager
async def open_connection(port: int, cafile: Path, keylog: TextIO) -> AsyncIterator[H3Client]:
    """A verified HTTP/3 connection to 127.0.0.1:``port`` (the certificate in ``cafile``),
    its TLS secrets appended to ``keylog`` (NSS key log, as ``SSLKEYLOGFILE``); closed (and
    waited for) on leaving."""
    config = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        secrets_log_file=keylog,
        verify_mode=ssl.CERT_REQUIRED,
    )
    config.load_verify_locations(cafile=str(cafile))
    async with connect("127.0.0.1", port, configuration=config, create_protocol=H3Client) as c:
        assert isinstance(c, H3Client)
        yield c
