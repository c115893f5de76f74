"""TCP protocols other than HTTP: bytes of both directions -> :class:`Operation` values.

The seam: :data:`PROTOCOLS` is the literal registry of the protocols recognized (adding one is
adding a line). Each entry says how its connections are recognized from their first bytes
(``sniff``: the client's and the server's heads, and the server's port as a hint, which may
make a doubtful head count but never overrules bytes that say otherwise) and makes the
sans-I/O decoder (:class:`~agentshark.wire.events.WireDecoder`) of one connection.
``agentshark.pipeline.connection`` asks :func:`sniff_wire` before it asks HTTP's sniffer,
and gives the connection to the chosen decoder; ``agentshark.pipeline.wire`` turns each
operation into an exchange of transport ``<name>``.

Recognized: PostgreSQL v3 (:mod:`agentshark.wire.pgsql`), MySQL/MariaDB
(:mod:`agentshark.wire.mysql`: the server speaks first, so its greeting is what is sniffed),
Redis RESP2/RESP3 (:mod:`agentshark.wire.resp`), AMQP 0-9-1 (:mod:`agentshark.wire.amqp`), Kafka
(:mod:`agentshark.wire.kafka`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentshark.wire.amqp import AmqpSession, sniff_amqp
from agentshark.wire.events import Operation, WireDecoder
from agentshark.wire.kafka import KafkaSession, looks_like_kafka
from agentshark.wire.mysql import MySession, sniff_mysql
from agentshark.wire.pgsql import PgSession, looks_like_startup
from agentshark.wire.resp import RespSession, looks_like_resp

__all__ = [
    "PROTOCOLS", "Operation", "WireDecoder", "WireProtocol", "sniff_resumed", "sniff_wire",
]  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class WireProtocol:
    """One protocol of the registry.

    ``sniff(client, server, port)`` answers True (the connection speaks it), False (it does
    not) or None (more bytes could tell). ``port``: the server's port, a hint only.
    """

    name: str  # the exchanges' transport and the connection's protocol ("postgresql")
    scheme: str  # of the URL the operations are reported under ("postgresql://host:port")
    sniff: Callable[[bytes, bytes, int], bool | None]
    decoder: Callable[[str], WireDecoder]  # location -> the connection's decoder
    # every client message has the shape ``sniff`` looks for (a Redis command, a Kafka
    # request header), so it also recognizes client bytes that follow a gap; not for the
    # protocols sniffed by what only opens a connection (a StartupMessage, a greeting)
    resumable: bool = False


def _sniff_pg(client: bytes, server: bytes, port: int) -> bool | None:
    if len(client) < 8:
        return None if client and not server else False
    return looks_like_startup(client)


_INLINE = (b"PING", b"AUTH ", b"HELLO", b"INFO", b"SELECT ")


def _sniff_redis(client: bytes, server: bytes, port: int) -> bool | None:
    """A RESP array of bulk strings; an inline command (``PING``...) only on the
    well-known port 6379, where the port makes a plain line count."""
    if looks_like_resp(client):
        return True
    line = client.split(b"\r\n", 1)[0] if b"\r\n" in client else b""
    return port == 6379 and line.upper().startswith(_INLINE) and b" HTTP/" not in line


def _sniff_kafka(client: bytes, server: bytes, port: int) -> bool | None:
    """The client's first request header (:func:`~agentshark.wire.kafka.looks_like_kafka`);
    a short head waits for more bytes until the server has spoken."""
    found = looks_like_kafka(client, port)
    return None if found is None and not server else bool(found)


PROTOCOLS: tuple[WireProtocol, ...] = (
    WireProtocol(name="postgresql", scheme="postgresql", sniff=_sniff_pg, decoder=PgSession),
    WireProtocol(name="mysql", scheme="mysql", sniff=sniff_mysql, decoder=MySession),
    WireProtocol(
        name="redis", scheme="redis", sniff=_sniff_redis, decoder=RespSession, resumable=True
    ),
    WireProtocol(name="amqp", scheme="amqp", sniff=sniff_amqp, decoder=AmqpSession),
    WireProtocol(
        name="kafka", scheme="kafka", sniff=_sniff_kafka, decoder=KafkaSession, resumable=True
    ),
)
NAMES = frozenset(p.name for p in PROTOCOLS)


def sniff_wire(client: bytes, server: bytes, port: int) -> WireProtocol | None:
    """The registry's protocol these first bytes speak, or None (none of them, so far)."""
    for proto in PROTOCOLS:
        if proto.sniff(client, server, port):
            return proto
    return None


def sniff_resumed(client: bytes, server: bytes, port: int) -> WireProtocol | None:
    """The resumable protocol that client bytes following a gap speak, or None."""
    for proto in PROTOCOLS:
        if proto.resumable and proto.sniff(client, server, port):
            return proto
    return None


def by_name(name: str) -> WireProtocol | None:
    return next((p for p in PROTOCOLS if p.name == name), None)
