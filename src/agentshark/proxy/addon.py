"""The mitmproxy addon of the gateway: each flow, once it ends, as an
:class:`~agentshark.model.Exchange` (:func:`agentshark.sources.mitm.flow_exchange`).

Hooks (https://docs.mitmproxy.org/stable/api/events.html):

- ``tls_clienthello`` (a client speaking TLS to the proxy: forward mode, or ``https://`` to
  it in reverse mode): the upstream's TLS is made first, so that the client is given the
  protocol the upstream chose (``h2`` when it speaks HTTP/2) rather than the first of the
  client's list (httpx lists ``http/1.1`` before ``h2``): the client speaks to the proxy
  what it would speak to the upstream (in reverse mode, the first route's).
- ``requestheaders``: HTTP/2 with prior knowledge over cleartext (h2c, the connection
  preface ``PRI * HTTP/2.0``), which mitmproxy does not speak, is refused by its
  ``DisableH2C`` addon (the connection closed, a warning on standard error) and recorded as
  no exchange, since it is none: HTTP/2 to the proxy goes over TLS (forward mode, or an
  ``https://`` base URL in reverse mode, trusting ``agentshark ca``).
- ``request``: in reverse mode, the request is sent where its route says
  (:mod:`agentshark.proxy.routes`); one that no route takes is answered 502 here, with a
  JSON error saying which prefixes there are, and recorded.
- ``responseheaders``: every response body is streamed (``flow.response.stream``) through a
  function that notes each chunk's arrival time and returns the chunk unchanged, so nothing
  is held back and the body is recorded piece by piece as a capture records it.
- ``response`` (plain HTTP), ``websocket_end`` (an upgraded exchange, its messages from
  mitmproxy's ``websocket_message`` record) and ``error``: the exchange is handed to ``sink``.
- ``done``: flows still open when the proxy stops are handed over as they are (incomplete),
  with a ``proxy.stopped`` diagnostic: nothing seen is dropped.

The hooks run on mitmproxy's event loop: ``sink`` must be quick and thread-safe (a queue's
``put``); the analysis runs elsewhere (:mod:`agentshark.cli_proxy`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import orjson
from mitmproxy import http, tls

from agentshark.errors import Diagnostic
from agentshark.model import Exchange
from agentshark.proxy.routes import Route, choose
from agentshark.sources.mitm import Chunks, ConnectionNames, flow_exchange

__all__ = ["Recorder"]

_log = logging.getLogger(__name__)


class Recorder:
    """Turns flows into exchanges for ``sink``. ``routes``: the reverse proxy's (empty in
    forward mode, where a request goes where the client said)."""

    def __init__(self, sink: Callable[[Exchange], None], routes: Sequence[Route] = ()) -> None:
        self._sink = sink
        self._routes = list(routes)
        self._chunks: dict[str, Chunks] = {}
        self._open: dict[str, http.HTTPFlow] = {}
        self._names = ConnectionNames("p")
        self.flows = 0

    def tls_clienthello(self, data: tls.ClientHelloData) -> None:
        data.establish_server_tls_first = True

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        req = flow.request
        if req.method == "PRI" and req.path == "*" and req.http_version == "HTTP/2.0":
            _log.warning(
                "a client spoke HTTP/2 without TLS (h2c prior knowledge), which the proxy "
                "does not: it was disconnected; use HTTP/1.1 with an http:// base URL, or "
                "HTTP/2 over TLS (forward mode, or https:// to the proxy trusting `agentshark ca`)"
            )
            return  # refused by DisableH2C (see the module docstring)
        self._open[flow.id] = flow

    def request(self, flow: http.HTTPFlow) -> None:
        if not self._routes:
            return
        route = choose(self._routes, flow.request.path)
        if route is None:
            prefixes = ", ".join(r.prefix for r in self._routes)
            message = (
                f"agentshark proxy: no route for {flow.request.path.split('?')[0]} "
                f"(routes: {prefixes})"
            )
            flow.response = http.Response.make(
                502,
                orjson.dumps({"error": {"type": "agentshark_proxy", "message": message}}),
                {"content-type": "application/json"},
            )
            return
        flow.request.path = route.target(flow.request.path)
        flow.request.scheme = route.scheme
        flow.request.host = route.host
        flow.request.port = route.port
        flow.request.host_header = route.origin.split("://", 1)[1]

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        assert flow.response is not None
        chunks: Chunks = []
        self._chunks[flow.id] = chunks

        def record(data: bytes) -> bytes:
            if data:
                chunks.append((time.time(), data))
            return data

        flow.response.stream = record

    def response(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None and flow.response.status_code == 101:
            return  # the session follows: handed over at websocket_end
        self._finish(flow)

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        self._finish(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        if flow.websocket is None or flow.response is None:
            self._finish(flow)

    def done(self) -> None:
        for flow in list(self._open.values()):
            self._finish(
                flow,
                Diagnostic(
                    code="proxy.stopped",
                    location=f"flow {flow.id}",
                    message="the proxy stopped before this exchange ended: what was seen "
                    "of it is kept, marked incomplete",
                ),
            )

    def _finish(self, flow: http.HTTPFlow, stopped: Diagnostic | None = None) -> None:
        if self._open.pop(flow.id, None) is None:
            return  # already handed over
        chunks = self._chunks.pop(flow.id, None)
        if chunks is None and flow.response is not None and flow.response.raw_content is None:
            chunks = []
        self.flows += 1
        exchange = flow_exchange(
            flow,
            exchange_id="",
            source=0,
            connection=self._names(flow.client_conn.id),
            chunks=chunks,
            where=f"flow {self.flows}",
        )
        if stopped is not None:
            exchange.diagnostics.append(stopped)
            if exchange.response is not None:
                exchange.response.complete = False
            exchange.session_complete = exchange.messages is None
        self._sink(exchange)
