"""A connection of a non-HTTP protocol (:mod:`agentshark.wire`): its operations as exchanges.

Each :class:`~agentshark.wire.events.Operation` becomes an :class:`Exchange` of transport
``<protocol>`` with the operation in ``Exchange.operation``, so every writer and the trace
see it as they see HTTP: the request's ``method`` is the operation's command (``SELECT``, or
its kind upper-cased when the statement has no verb), its ``url`` is
``<scheme>://<server>/<database>``, its ``target`` the statement, and its body the statement
and the parameter values, one per line (a binary value by the value its type gives it: what
the trace matches a tool call's arguments against). The response has no status (0) and an
empty body; its ``reason`` is the operation's result (a command tag), or the error's code
and message.

A protocol that turns its connection into TLS in the middle (PostgreSQL's SSLRequest:
:class:`~agentshark.wire.events.StartsTls`) leaves the switch in :attr:`WireSession.tls_switch`
for the connection layer, which decrypts the rest and reads it with a second session; that
one numbers its operations after this one's (``first_index``), so ``stream`` stays each
operation's place on the connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import orjson

from agentshark.errors import Diagnostic
from agentshark.model import Body, Exchange, Request, Response, TlsFacts, exchange_tls_facts
from agentshark.wire import WireProtocol
from agentshark.wire.events import Operation, StartsTls, TlsSwitch


class WireSession:
    """Both directions of one connection of a ``wire`` protocol (the interface of
    :class:`~agentshark.pipeline.connection.HttpSession` that the connection layer uses)."""

    __slots__ = (
        "_connection",
        "_database",
        "_decoder",
        "_first",
        "_next_id",
        "_proto",
        "_server",
        "_source",
        "_starttls",
        "_tls",
        "diagnostics",
        "exchanges",
        "starts_tls",
        "tls_switch",
    )

    def __init__(
        self,
        proto: WireProtocol,
        *,
        source: int,
        connection: str,
        server: str,
        next_id: Callable[[], str],
        location: str,
        tls: TlsFacts | None,
        first_index: int = 0,
    ) -> None:
        self._proto = proto
        self._decoder = proto.decoder(location)
        self._starttls = self._decoder if isinstance(self._decoder, StartsTls) else None
        self.starts_tls = self._starttls is not None  # its protocol can switch to TLS
        self._first = first_index
        self._source = source
        self._connection = connection
        self._server = server
        self._next_id = next_id
        self._tls = tls
        self._database = ""
        self.diagnostics: list[Diagnostic] = []
        self.exchanges = 0
        self.tls_switch: TlsSwitch | None = None  # the connection is TLS from here on

    switched = None
    switched_bytes = (0, 0)

    @property
    def version(self) -> str:
        return self._proto.name

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[Exchange]:
        ops = self._decoder.feed(direction, data, ts, acked)
        if not ops:
            return []
        if self._starttls is not None:
            self.tls_switch = self._starttls.take_tls() or self.tls_switch
        return self._exchanges(ops)

    def gap(self, direction: int, size: int, ts: float) -> list[Exchange]:
        ops = self._decoder.gap(direction, size, ts)
        if ops and self._starttls is not None:  # a lost answer told by what followed it
            self.tls_switch = self._starttls.take_tls() or self.tls_switch
        return self._exchanges(ops)

    def end(self, direction: int, ts: float, *, clean: bool) -> list[Exchange]:
        return self._exchanges(self._decoder.end(direction, ts, clean=clean))

    def close(self) -> list[Exchange]:
        out = self._exchanges(self._decoder.close())
        self.diagnostics.extend(self._decoder.diagnostics)
        return out

    def _exchanges(self, ops: list[Operation]) -> list[Exchange]:
        self.exchanges += len(ops)
        return [self._exchange(op) for op in ops]

    def _exchange(self, op: Operation) -> Exchange:
        if self._first:
            op = replace(op, index=op.index + self._first)
        if op.kind == "startup":
            params = op.details.get("parameters")
            if isinstance(params, dict):
                self._database = str(params.get("database") or params.get("user") or "")
        url = f"{self._proto.scheme}://{self._server}/{self._database}"
        version = self._proto.name
        request = Request(
            method=op.command or op.kind.upper(),
            target=op.statement or "",
            url=url,
            version=version,
            headers=[],
            body=_request_body(op),
            started=op.started,
            ended=op.request_ended,
            complete=op.request_complete,
        )
        response = None
        if op.response_started is not None or op.ended is not None:
            response = Response(
                status=0,
                reason=_reason(op),
                version=version,
                headers=[],
                body=Body(),
                started=op.response_started,
                ended=op.ended,
                complete=op.response_complete,
            )
        return Exchange(
            id=self._next_id(),
            source=self._source,
            connection=self._connection,
            transport=self._proto.name,
            request=request,
            response=response,
            tls=exchange_tls_facts(self._tls),
            stream=op.index,
            diagnostics=list(op.diagnostics),
            operation=op,
        )


def _request_body(op: Operation) -> Body:
    """The statement, then each parameter value on a line (JSON for a non-string)."""
    lines = [op.statement] if op.statement else []
    lines.extend(_text(v) for v in op.parameters)
    body = Body()
    if lines:
        body.append(op.started or 0.0, "\n".join(lines).encode())
    return body


def _text(value: object) -> str:
    """A parameter as a line: a string as sent, a typed binary value as its value, the rest
    as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "value" in value:
        return _text(value["value"])
    return orjson.dumps(value).decode()


def _reason(op: Operation) -> str:
    if op.error is not None:
        code, message = str(op.error.get("code") or ""), str(op.error.get("message") or "")
        if message.startswith(code):  # Redis: the code is the message's first word
            return f"ERROR {message}".strip()
        return f"ERROR {code} {message}".strip()
    return op.result or ""
