"""An AMQP 0-9-1 message (a method's arguments, the content header's properties, the body)
-> :class:`~agentshark.wire.events.QueueMessage`, with Celery task messages recognized.

The basic class's properties (https://www.rabbitmq.com/resources/specs/amqp0-9-1.pdf §1.8,
"basic") map to the shared shape: ``message_id``, ``correlation_id``, ``reply_to``,
``headers`` (the application headers: ``traceparent``, RabbitMQ's ``x-death`` on a dead
letter...), ``timestamp``; the others (``content_type``, ``content_encoding``,
``delivery_mode``, ``priority``, ``expiration``, ``type``, ``user_id``, ``app_id``,
``cluster_id``) go to ``details`` under their names, with the method's own facts
(``exchange`` of a delivery, ``consumer_tag``, ``message_count``, ``mandatory``...).

Celery (https://docs.celeryq.dev/en/stable/internals/protocol.html): a task message of
protocol 2 carries ``task`` and ``id`` in its headers, with ``argsrepr``/``kwargsrepr``/
``root_id``/``parent_id``/``lang``; its body is ``[args, kwargs, embed]``. Protocol 1 has
them in a JSON body (``task``, ``id``, ``args``, ``kwargs``). Either is summarized in
``details["celery"]``, with only the fields sent.
"""

from __future__ import annotations

from typing import Any

import orjson

from agentshark.wire.events import Json, QueueMessage

MAX_PAYLOAD = 1 << 20  # body bytes parsed into ``payload``; a larger body keeps its size only
_DETAILS = (
    "content_type",
    "content_encoding",
    "delivery_mode",
    "priority",
    "expiration",
    "type",
    "user_id",
    "app_id",
    "cluster_id",
)
_METHOD_DETAILS = ("exchange", "consumer_tag", "message_count", "mandatory", "immediate")
_CELERY_V2 = (
    "task", "id", "root_id", "parent_id", "group", "group_index", "retries", "eta", "expires",
    "timelimit", "argsrepr", "kwargsrepr", "origin", "lang", "shadow", "ignore_result",
)  # fmt: skip
_CELERY_V1 = ("task", "id", "args", "kwargs", "retries", "eta", "expires", "taskset", "chord")


def payload(body: bytes) -> tuple[Json, bool]:
    """The body as JSON when it parses, else text when UTF-8, else None; and whether it was
    read (False past :data:`MAX_PAYLOAD`)."""
    if len(body) > MAX_PAYLOAD:
        return None, False
    try:
        return orjson.loads(body), True
    except orjson.JSONDecodeError:
        pass
    try:
        return body.decode("utf-8"), True
    except UnicodeDecodeError:
        return None, True


def message(
    action: str,
    *,
    channel: int,
    args: dict[str, Json],
    props: dict[str, Json] | None,
    body: bytes | None,
    destination: str | None,
) -> QueueMessage:
    """The message a publish, deliver, get-ok or return carries (``props``/``body`` None
    when its content was not seen whole)."""
    props = props or {}
    headers = props.get("headers")
    headers = headers if isinstance(headers, dict) else {}
    details: dict[str, Json] = {k: props[k] for k in _DETAILS if k in props}
    details.update((k, args[k]) for k in _METHOD_DETAILS if k in args)
    value: Json = None
    if body is not None:
        value, read = payload(body)
        if not read:
            details["payload_not_read"] = True
        celery = celery_task(headers, value)
        if celery is not None:
            details["celery"] = celery
    timestamp = props.get("timestamp")
    redelivered = args.get("redelivered")
    return QueueMessage(
        system="amqp",
        action=action,
        destination=destination,
        routing_key=_str(args.get("routing_key")),
        message_id=_str(props.get("message_id")),
        correlation_id=_str(props.get("correlation_id")),
        reply_to=_str(props.get("reply_to")),
        channel=channel,
        delivery_tag=_int(args.get("delivery_tag")),
        redelivered=redelivered if isinstance(redelivered, bool) else None,
        headers=headers,
        payload=value,
        size=len(body) if body is not None else None,
        timestamp=float(timestamp) if isinstance(timestamp, int) else None,
        details=details,
    )


def settlement(action: str, *, channel: int, args: dict[str, Json]) -> QueueMessage:
    """A client's basic.ack/nack/reject of a delivery, named by channel and delivery tag."""
    requeue = args.get("requeue")
    return QueueMessage(
        system="amqp",
        action=action,
        channel=channel,
        delivery_tag=_int(args.get("delivery_tag")),
        multiple=args.get("multiple") is True,
        requeue=requeue if isinstance(requeue, bool) else None,
    )


def celery_task(headers: dict[str, Json], body: Json) -> dict[str, Json] | None:
    """A Celery task message's facts (protocol 2 from its headers, 1 from its body), or
    None when the message is not one."""
    if isinstance(headers.get("task"), str) and isinstance(headers.get("id"), str):
        if not any(k in headers for k in ("argsrepr", "kwargsrepr", "root_id", "lang")):
            return None
        out: dict[str, Json] = {"protocol": 2}
        out.update((k, headers[k]) for k in _CELERY_V2 if k in headers)
        if isinstance(body, list) and len(body) == 3:
            out["args"], out["kwargs"] = body[0], body[1]
        return out
    if (
        isinstance(body, dict)
        and isinstance(body.get("task"), str)
        and isinstance(body.get("id"), str)
        and "args" in body
    ):
        return {"protocol": 1, **{k: body[k] for k in _CELERY_V1 if k in body}}
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
