"""A messaging span of the report (:mod:`agentshark.trace.queue_spans`) as an OTLP span, in
OpenTelemetry's messaging conventions
(https://opentelemetry.io/docs/specs/semconv/messaging/messaging-spans/).

Name ``{messaging.operation.name} {messaging.destination.name}`` (``publish agent:tasks``);
kind PRODUCER for a send, CONSUMER for a receive, CLIENT for a settlement. Attributes:
``messaging.system`` (``kafka``, ``rabbitmq`` for AMQP 0-9-1, ``redis``, which the
conventions do not list), ``messaging.operation.type`` (``send``/``receive``/``settle``),
``messaging.operation.name`` (``publish``, ``deliver``, ``ack``...),
``messaging.destination.name``, ``messaging.message.id``,
``messaging.message.conversation_id`` (AMQP correlation id), ``messaging.message.body.size``,
``messaging.destination.partition.id`` and ``messaging.kafka.offset``,
``messaging.kafka.message.key``, ``messaging.rabbitmq.destination.routing_key``,
``messaging.rabbitmq.message.delivery_tag``, ``messaging.consumer.group.name``; agentshark's
own: the life, the evidence of the join, the delay since the life's previous event, the
life's outcome (on its last span), the exchange. A consumer's span links the publish span
(the producer's context), the link saying what joined them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentshark.trace.model import Span

Json = Any
SYSTEMS = {"amqp": "rabbitmq"}
KINDS = {"send": "producer", "receive": "consumer", "settle": "client"}
# report attribute -> OTel attribute
ATTRIBUTES = {
    "operation_type": "messaging.operation.type",
    "operation": "messaging.operation.name",
    "destination": "messaging.destination.name",
    "message_id": "messaging.message.id",
    "correlation_id": "messaging.message.conversation_id",
    "size": "messaging.message.body.size",
    "offset": "messaging.kafka.offset",
    "routing_key": "messaging.rabbitmq.destination.routing_key",
    "delivery_tag": "messaging.rabbitmq.message.delivery_tag",
    "group": "messaging.consumer.group.name",
    "life": "agentshark.message.life",
    "evidence": "agentshark.message.evidence",
    "delay": "agentshark.message.delay",
    "outcome": "agentshark.message.outcome",
    "redelivered": "agentshark.message.redelivered",
    "exchange_id": "agentshark.exchange.id",
}


def messaging_attributes(span: Span) -> dict[str, Json]:
    a = span.attributes
    system = str(a.get("system"))
    out: dict[str, Json] = {"messaging.system": SYSTEMS.get(system, system)}
    for key, name in ATTRIBUTES.items():
        value = a.get(key)
        if value is not None:
            out[name] = value
    if a.get("partition") is not None:
        out["messaging.destination.partition.id"] = str(a["partition"])
    if a.get("key") is not None and system == "kafka":
        out["messaging.kafka.message.key"] = str(a["key"])
    return out


def messaging_span(
    span: Span, make: Callable[..., Any], link: Callable[[dict[str, Json]], Any | None]
) -> Any:
    """``make``: the projection's span maker; ``link``: a report link -> an OTLP link."""
    kind = KINDS.get(str(span.attributes.get("operation_type")), "internal")
    links = tuple(x for x in (link(k) for k in span.links) if x is not None)
    complete = span.attributes.get("complete") is not False
    error = None if complete else "the operation did not end in the capture"
    return make(kind=kind, attributes=messaging_attributes(span), links=links, error=error)
