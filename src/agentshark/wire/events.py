"""What a decoder of a non-HTTP TCP protocol gives out: :class:`Operation` values.

An operation is one request with its response on a connection that speaks a protocol other
than HTTP (a SQL statement and its result on PostgreSQL; later a Redis command and its reply,
a Kafka Produce...). It carries the times of both sides, whether each side was seen whole,
what the request asked (``command``, ``statement``, ``parameters``) and what came back
(``result``, ``rows``, ``error``). The pipeline wraps each in an
:class:`~agentshark.model.Exchange` (``Exchange.operation``), so the report, the text views
and the trace's tool matching see it like any exchange.

Values are kept as they were sent: text parameters as strings, binary ones as
``{"format": "binary", "base64": ...}``, SQL NULL as None. Result values (``values``) are
bounded and written only when the report asks for events.

Queue and bus protocols (Kafka, AMQP, Redis used as a queue) also say which messages an
operation carries: :class:`QueueMessage` values in ``Operation.messages``, one per message
published, delivered or settled, in the one shape every protocol fills, so the trace joins a
message's life (publish -> deliver -> ack/nack/reject, a dead letter) across protocols and
connections without knowing them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentshark.errors import Diagnostic

Json = Any


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueMessage:
    """One message of a queue or bus, as one operation publishes, delivers or settles it.

    ``system``: the protocol's family (``kafka``, ``amqp``, ``redis``). ``action``: what the
    operation does with the message: ``publish`` (a Kafka Produce record, an AMQP
    basic.publish, an XADD/LPUSH), ``deliver`` (a Fetch record, a basic.deliver or
    basic.get-ok, an XREADGROUP/BRPOP reply), ``ack``, ``nack``, ``reject`` (an AMQP settlement
    by delivery tag, an XACK by entry id), ``commit`` (a Kafka OffsetCommit: every offset
    below ``offset`` of the partition is consumed). Only what the bytes say is filled: an
    identity the protocol did not carry is None, never made up.

    Identities, as the protocol gives them: ``destination`` (Kafka topic; AMQP exchange on
    publish, queue on deliver when known; Redis key), ``routing_key`` (AMQP),
    ``partition``/``offset`` (Kafka), ``message_id`` (the AMQP ``message_id`` property, a
    Redis stream entry id), ``correlation_id``/``reply_to`` (AMQP properties), ``channel``/
    ``delivery_tag`` (AMQP: a settlement names its delivery by these; ``multiple`` settles
    every tag up to it), ``key`` (a Kafka record key, as text when it is UTF-8). ``headers``:
    the message's headers/application properties as sent (``traceparent`` among them when the
    producer propagated trace context). ``payload``: the body as JSON when it parses, else as
    text when UTF-8, else None (``size`` always counts its bytes); bounded like bodies.
    ``timestamp``: the message's own time when the protocol carries one (epoch seconds).
    """

    system: str
    action: str
    destination: str | None = None
    routing_key: str | None = None
    partition: int | None = None
    offset: int | None = None
    message_id: str | None = None
    correlation_id: str | None = None
    reply_to: str | None = None
    channel: int | None = None
    delivery_tag: int | None = None
    multiple: bool = False
    requeue: bool | None = None  # nack/reject: the broker was asked to requeue it
    redelivered: bool | None = None
    key: Json = None
    headers: dict[str, Json] = field(default_factory=dict)
    payload: Json = None
    size: int | None = None
    timestamp: float | None = None
    details: dict[str, Json] = field(default_factory=dict)  # the protocol's other fields


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    """One request/response unit of a non-HTTP protocol.

    ``kind`` says what the unit is in the protocol's terms (``query``: a PostgreSQL simple
    Query; ``execute``: an extended-query Execute; ``startup``, ``cancel``...). ``command``
    is the statement's verb or the command's name, as sent (``SELECT``, ``LPUSH``).
    ``request_complete``/``response_complete`` are True only when the message(s) were seen
    whole and the response's terminator arrived (a CommandComplete, an ErrorResponse...).
    ``role`` names what the operation does for an agent when the protocol says it
    (``queue.publish``...), else None.
    """

    protocol: str
    kind: str
    index: int  # its place among the connection's operations, from 0
    command: str | None
    statement: str | None
    parameters: list[Json] = field(default_factory=list)
    started: float | None
    request_ended: float | None
    response_started: float | None
    ended: float | None
    request_complete: bool
    response_complete: bool
    result: str | None = None  # the protocol's own summary: a CommandComplete tag...
    rows: int | None = None
    columns: list[str] = field(default_factory=list)
    error: dict[str, Json] | None = None
    role: str | None = None
    values: list[list[Json]] | None = None  # result rows, bounded (only with --events)
    values_cut: bool = False  # more rows (or bytes) came than ``values`` keeps
    details: dict[str, Json] = field(default_factory=dict)
    messages: list[QueueMessage] = field(default_factory=list)  # a queue protocol's messages
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def summary(self) -> str:
        """One line for text views: the statement, or the command."""
        text = self.statement if self.statement is not None else self.command or self.kind
        return " ".join(text.split())


@dataclass(frozen=True, slots=True)
class TlsSwitch:
    """A connection that turns into TLS in its middle (PostgreSQL's SSLRequest answered
    ``S``): the stream offset in each direction (0: client) where TLS begins, and the bytes
    past it that the decoder was already given, for the TLS layer to start with."""

    offsets: tuple[int, int]
    rest: tuple[bytes, bytes]


@runtime_checkable
class StartsTls(Protocol):
    """A decoder whose protocol can hand its connection to TLS (a STARTTLS of its own)."""

    def take_tls(self) -> TlsSwitch | None:
        """Where TLS began, once, after the operation that switched was given out."""
        ...


class WireDecoder(Protocol):
    """A sans-I/O decoder of both directions of one connection (0: client -> server).

    Fed in capture order; ``gap`` says ``size`` bytes of a direction were never captured;
    ``end`` that a direction is over (``clean``: with a FIN); ``close`` that the connection
    is. Each returns the operations finished by what it was given; ``close`` returns every
    operation still open, incomplete. Bad bytes give Diagnostics (``diagnostics`` for the
    connection's, ``Operation.diagnostics`` for one operation's), never an exception.
    """

    diagnostics: list[Diagnostic]

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[Operation]:
        """``acked``: how much of the other direction the segment carrying ``data``
        acknowledged (a stream offset; -1: not known), the evidence some decoders pair by
        after a gap."""
        ...

    def gap(self, direction: int, size: int, ts: float) -> list[Operation]: ...

    def end(self, direction: int, ts: float, *, clean: bool) -> list[Operation]: ...

    def close(self) -> list[Operation]: ...
