"""mitmproxy flows -> :class:`agentshark.model.Exchange` objects: the flow files ``mitmdump -w``
writes (``.mitm``), and the live flows of ``agentshark proxy`` (:mod:`agentshark.proxy`).

A flow file is a sequence of tnetstrings (https://tnetstrings.info/), one per flow, read with
mitmproxy's own :class:`mitmproxy.io.FlowReader` (the optional ``proxy`` extra; without it a
flow file is an :class:`~agentshark.errors.InputError` naming the extra). Only HTTP flows
carry exchanges; a TCP, UDP or DNS flow is reported as a diagnostic, never dropped silently.

What a flow holds, and what the exchange makes of it:

- Bodies are ``raw_content``: after transfer framing, before content coding, as a capture's
  are (``content_decoded=False``). A flow file keeps one body whole, so it is one piece at
  the response head's time (as a HAR file's ``content.text``); the live proxy records each
  chunk with its arrival time instead (``chunks``). A body mitmdump streamed through without
  keeping it (``stream_large_bodies``) is None: the message is incomplete, with a diagnostic.
- The request is the one sent upstream (after a reverse proxy rewrote its host); its URL is
  the upstream's.
- A flow that ended in an error (``flow.error``: the upstream refused, the client went away)
  keeps what was seen, marked incomplete, with the error as a diagnostic.
- A WebSocket flow's messages are the session's, both directions (mitmproxy joins the
  frames of a message); each is one message of its own place in the list, as a HAR file's
  ``_webSocketMessages`` (:mod:`agentshark.sources.har_ws`).
- Client connections are named ``m1``, ``m2``... (``p1``... for the proxy) in the order
  their first flow comes; every flow of one connection has its name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, BinaryIO

from agentshark.errors import Diagnostic, InputError
from agentshark.framing.websocket import WsMessage
from agentshark.model import Body, Exchange, Headers, Request, Response, WsRecord
from agentshark.sources.har import http_transport, http_version

if TYPE_CHECKING:
    from mitmproxy import http

__all__ = ["EXTRA_HINT", "ConnectionNames", "flow_exchange", "is_flow_file", "read_flows"]

EXTRA_HINT = "pip install 'agentshark[proxy]'"
# A tnetstring dict's length, then its first key (a byte string ``,`` or text ``;``).
_FLOW_HEAD = re.compile(rb"\d{1,12}:\d{1,4}:[A-Za-z_]{1,40}[,;]")

Chunks = list[tuple[float, bytes]]


def is_flow_file(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts a mitmproxy flow file."""
    return _FLOW_HEAD.match(head) is not None


class ConnectionNames:
    """Short, stable names for mitmproxy's client connection ids: ``prefix`` + a number in
    the order they are first asked for."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._names: dict[str, str] = {}

    def __call__(self, connection_id: str) -> str:
        name = self._names.get(connection_id)
        if name is None:
            name = self._names[connection_id] = f"{self._prefix}{len(self._names) + 1}"
        return name


def flow_exchange(
    flow: http.HTTPFlow,
    *,
    exchange_id: str,
    source: int,
    connection: str | None,
    chunks: Chunks | None = None,
    where: str = "",
) -> Exchange:
    """The exchange of ``flow``. ``chunks``: the response body as it arrived (the live
    proxy's record); None takes the flow's own ``raw_content`` as one piece. ``where``
    names the flow in diagnostics."""
    where = where or f"flow {flow.id}"
    diags: list[Diagnostic] = []
    request = _request(flow.request, where, diags)
    response = None
    if flow.response is not None:
        response = _response(flow.response, chunks, where, diags)
    if flow.error is not None:
        diags.append(
            Diagnostic(
                code="mitm.flow_error",
                location=where,
                message=f"{where} ended in an error: {flow.error.msg}",
            )
        )
        if response is not None:
            response.complete = False
    elif response is None:
        diags.append(
            Diagnostic(
                code="mitm.no_response",
                location=where,
                message=f"{where} has no response (still pending when the flow was saved)",
            )
        )
    exchange = Exchange(
        id=exchange_id,
        source=source,
        connection=connection,
        transport=http_transport(flow.request.http_version),
        request=request,
        response=response,
        upgrade="websocket" if flow.websocket is not None else None,
        diagnostics=diags,
    )
    if flow.websocket is not None:
        exchange.messages = _messages(flow)
        exchange.session_complete = flow.websocket.timestamp_end is not None
    return exchange


def _headers(fields: tuple[tuple[bytes, bytes], ...]) -> Headers:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in fields]


def _request(req: http.Request, where: str, diags: list[Diagnostic]) -> Request:
    raw = req.raw_content
    body = Body(content_decoded=False)
    started = req.timestamp_start
    if raw is not None:
        body.append(started, raw)
    else:
        diags.append(_not_kept(where, "request"))
    return Request(
        method=req.method,
        target=req.path,
        url=req.url,
        version=http_version(req.http_version),
        headers=_headers(req.headers.fields),
        body=body,
        started=started,
        ended=req.timestamp_end,
        trailers=_headers(req.trailers.fields) if req.trailers else [],
        complete=raw is not None and req.timestamp_end is not None,
    )


def _response(
    resp: http.Response, chunks: Chunks | None, where: str, diags: list[Diagnostic]
) -> Response:
    body = Body(content_decoded=False)
    started = resp.timestamp_start
    complete = resp.timestamp_end is not None
    if chunks is not None:
        for ts, data in chunks:
            body.append(ts, data)
    elif resp.raw_content is not None:
        body.append(started, resp.raw_content)
    else:
        complete = False
        diags.append(_not_kept(where, "response"))
    return Response(
        status=resp.status_code,
        reason=resp.reason,
        version=http_version(resp.http_version),
        headers=_headers(resp.headers.fields),
        body=body,
        started=started,
        ended=resp.timestamp_end,
        trailers=_headers(resp.trailers.fields) if resp.trailers else [],
        complete=complete,
    )


def _not_kept(where: str, which: str) -> Diagnostic:
    return Diagnostic(
        code="mitm.body_not_kept",
        location=f"{where}.{which}",
        message=f"{where}: the {which} body was streamed through without being kept "
        "(mitmproxy's stream_large_bodies): it is marked incomplete",
    )


def _messages(flow: http.HTTPFlow) -> list[WsRecord]:
    assert flow.websocket is not None
    out: list[WsRecord] = []
    for n, m in enumerate(flow.websocket.messages):
        size = len(m.content)
        message = WsMessage(
            direction=0 if m.from_client else 1,
            opcode=int(m.type),
            payload=m.content,
            size=size,
            wire_size=size,
            frames=1,
            first_ts=m.timestamp,
            last_ts=m.timestamp,
            offset=n,
        )
        out.append(WsRecord(message=message))
    return out


# --- flow files ----------------------------------------------------------------------------


def read_flows(
    stream: BinaryIO, name: str, source: int, next_id: Callable[[], str]
) -> Iterator[Exchange | Diagnostic]:
    """Yield an exchange per HTTP flow of the flow file ``stream`` (``name`` in messages);
    a flow of another kind, or the file cut short, is a diagnostic."""
    try:
        from mitmproxy import exceptions, io
        from mitmproxy.http import HTTPFlow
    except ImportError:
        raise InputError(
            f"{name} is a mitmproxy flow file: reading it needs mitmproxy ({EXTRA_HINT})"
        ) from None
    names = ConnectionNames("m")
    reader = io.FlowReader(stream)
    index = 0
    try:
        for flow in reader.stream():
            where = f"{name} flow {index}"
            index += 1
            if not isinstance(flow, HTTPFlow):
                yield Diagnostic(
                    code="mitm.not_http",
                    severity="info",
                    location=where,
                    message=f"{where} is a {flow.type} flow, not HTTP: it carries no exchange",
                )
                continue
            yield flow_exchange(
                flow,
                exchange_id=next_id(),
                source=source,
                connection=names(flow.client_conn.id),
                where=where,
            )
    except exceptions.FlowReadException as exc:
        yield Diagnostic(
            code="mitm.bad_flow",
            location=f"{name} flow {index}",
            message=f"{name}: flow {index} does not read as a mitmproxy flow ({exc}): the "
            "file ends there",
        )
