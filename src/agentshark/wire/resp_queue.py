"""Redis used as a queue or a bus: a command and its reply -> the
:class:`~agentshark.wire.events.QueueMessage` values they publish, deliver or settle.

What each command says (https://redis.io/docs/latest/commands/):

- Streams: ``XADD key ... field value ...`` publishes one entry; its ``message_id`` is the
  entry id the reply gives (the id sent when the reply is not seen and the id was explicit,
  never ``*``). ``XREADGROUP``/``XREAD`` replies (``[[key, [[id, fields]...]]...]``, a map in
  RESP3) and ``XRANGE``/``XREVRANGE`` replies deliver each entry; ``XREADGROUP`` with an id
  other than ``>`` re-reads the consumer's pending entries (``redelivered``). ``XCLAIM`` and
  ``XAUTOCLAIM`` deliver the entries they claim again (``redelivered``; ``JUSTID`` replies
  carry ids only). ``XACK key group id...`` acks each id. An entry's fields are its payload
  (``{field: value}``, each value as text); ``traceparent``/``tracestate`` fields are also
  its ``headers``, as a producer propagating trace context writes them.
- Lists: ``LPUSH``/``RPUSH`` (and ``X`` forms) publish each value, at the end
  ``details["end"]`` names (``left``/``right``); ``BRPOP``/``BLPOP``/``LPOP``/``RPOP``/
  ``LMPOP``/``BLMPOP`` replies deliver each value popped, from the end their name or
  argument says; ``LMOVE``/``BLMOVE``/``RPOPLPUSH``/``BRPOPLPUSH`` deliver the value from the
  source and publish it on the destination (``details["moved_to"]`` on the delivery).
- Pub/sub: ``PUBLISH``/``SPUBLISH channel message`` publish; a ``message``/``smessage``/
  ``pmessage`` push delivers (``details["pattern"]`` for a pattern subscription).

Payloads: JSON when the value parses, else text when UTF-8, else None (``size`` counts the
bytes either way); a message of more than :data:`MAX_PAYLOAD` bytes keeps no payload (its
trace headers aside), ``details["payload_cut"]`` and ``["payload_sha256"]`` instead.

Task queues on Redis are recognized by their payloads: a Celery task message (kombu's JSON
envelope with ``headers.task`` and ``headers.id``,
https://docs.celeryq.dev/en/stable/internals/protocol.html) gives ``details["celery"]`` (task,
id, argsrepr, kwargsrepr, root and parent ids, and the decoded body when it is base64 JSON),
its headers as the message's ``headers`` and ``properties.correlation_id`` as its
``correlation_id``; an RQ queue list (``rq:queue:<name>``) carries job ids
(``details["rq"]``: queue and job id), and RQ's job hash (``HSET rq:job:<id> ...``) is
:func:`rq_job` for the operation's details.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

import orjson

from agentshark.wire.events import Json, QueueMessage
from agentshark.wire.resp_values import RespValue

SYSTEM = "redis"
MAX_PAYLOAD = 1 << 20  # bytes of a message kept as its payload (as resp.MAX_VALUE_BYTES)
_TRACE_FIELDS = ("traceparent", "tracestate")
_RQ_QUEUE = "rq:queue:"
_RQ_JOB = "rq:job:"
_RQ_FIELDS = ("description", "origin", "status", "created_at", "enqueued_at", "func_name")
_CELERY_FIELDS = ("task", "id", "argsrepr", "kwargsrepr", "root_id", "parent_id", "group",
                  "retries", "eta")  # fmt: skip


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def payload_of(data: bytes, details: dict[str, Json] | None = None) -> Json:
    """A value as JSON when it parses (an object or array), else text when UTF-8, else
    None. A value of more than :data:`MAX_PAYLOAD` bytes is not kept: None, and
    ``details`` says ``payload_cut`` with the value's SHA-256 (what joins it)."""
    if len(data) > MAX_PAYLOAD:
        if details is not None:
            details["payload_cut"] = True
            details["payload_sha256"] = hashlib.sha256(data).hexdigest()
        return None
    head = data[:1]
    if head in (b"{", b"["):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return _text(data)


def messages(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    """The messages of one command (``args``: its arguments after the name) and its reply
    (None when not seen; an error reply delivers nothing)."""
    if reply is not None and reply.kind in "-!":
        reply = None
    handler = _HANDLERS.get(name)
    if handler is None or not args:
        return []
    try:
        return handler(name, args, reply)
    except (IndexError, ValueError, TypeError):
        return []  # a reply of another shape than the command's: not a queue message


# -- lists ----------------------------------------------------------------------------------


def _list_message(action: str, key: str | None, value: bytes, end: str) -> QueueMessage:
    details: dict[str, Json] = {"end": end}
    payload = payload_of(value, details)
    headers: dict[str, Json] = {}
    correlation = None
    if key is not None and key.startswith(_RQ_QUEUE):
        details["rq"] = {"queue": key[len(_RQ_QUEUE) :], "job_id": _text(value)}
    celery = celery_task(payload)
    if celery is not None:
        details["celery"] = celery
        headers = dict(payload["headers"])
        props = payload.get("properties")
        if isinstance(props, dict) and isinstance(props.get("correlation_id"), str):
            correlation = props["correlation_id"]
    return QueueMessage(
        system=SYSTEM,
        action=action,
        destination=key,
        correlation_id=correlation,
        headers=headers,
        payload=payload,
        size=len(value),
        details=details,
    )


def _push(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    key = _text(args[0])
    end = "left" if name.startswith("L") else "right"
    return [_list_message("publish", key, v, end) for v in args[1:]]


def _bulk(value: tuple[str, Any]) -> bytes:
    kind, data = value
    if kind not in "$+=" or not isinstance(data, bytes):
        raise TypeError("not a string")
    return data


def _pop(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    """BRPOP/BLPOP (``[key, value]``), LPOP/RPOP (a value, or an array with a count)."""
    if reply is None or reply.value is None:
        return []
    end = "left" if name.lstrip("B").startswith("L") else "right"
    if name in ("BRPOP", "BLPOP"):
        key, value = _bulk(reply.value[0]), _bulk(reply.value[1])
        return [_list_message("deliver", _text(key), value, end)]
    key_text = _text(args[0])
    if reply.kind == "*":
        return [_list_message("deliver", key_text, _bulk(v), end) for v in reply.value]
    return [_list_message("deliver", key_text, _bulk((reply.kind, reply.value)), end)]


def _mpop(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    """LMPOP numkeys key... LEFT|RIGHT [COUNT n]; BLMPOP timeout numkeys ...: ``[key,
    [value...]]``."""
    if reply is None or reply.value is None:
        return []
    at = 1 if name == "BLMPOP" else 0
    count = int(args[at])
    end = args[at + 1 + count].decode("latin-1").lower()
    key = _text(_bulk(reply.value[0]))
    return [_list_message("deliver", key, _bulk(v), end) for v in reply.value[1][1]]


def _move(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    """LMOVE/BLMOVE src dst from to; (B)RPOPLPUSH src dst: the value leaves one list for the
    other."""
    if reply is None or reply.value is None:
        return []
    value = _bulk((reply.kind, reply.value))
    source, target = _text(args[0]), _text(args[1])
    if name in ("LMOVE", "BLMOVE"):
        start, to = args[2].decode("latin-1").lower(), args[3].decode("latin-1").lower()
    else:
        start, to = "right", "left"
    out = _list_message("deliver", source, value, start)
    out.details["moved_to"] = target
    return [out, _list_message("publish", target, value, to)]


# -- streams --------------------------------------------------------------------------------


def _fields(
    items: list[tuple[str, Any]], details: dict[str, Json]
) -> tuple[dict[str, Json] | None, dict[str, Json], int]:
    """A stream entry's field list -> (payload, trace headers, bytes); an entry of more than
    :data:`MAX_PAYLOAD` bytes keeps its trace headers, and ``details`` its digest."""
    raw = [_bulk(v) for v in items]
    pairs = list(zip(raw[::2], raw[1::2], strict=False))
    size = sum(len(f) + len(v) for f, v in pairs)
    payload: dict[str, Json] = {}
    for field, value in pairs:
        name = field.decode("utf-8", "replace")
        if size > MAX_PAYLOAD and name not in _TRACE_FIELDS:
            continue
        text = _text(value)
        payload[name] = text if text is not None else {"base64": base64.b64encode(value).decode()}
    headers = {k: payload[k] for k in _TRACE_FIELDS if isinstance(payload.get(k), str)}
    if size > MAX_PAYLOAD:
        details["payload_cut"] = True
        details["payload_sha256"] = hashlib.sha256(b"".join(raw)).hexdigest()
        return None, headers, size
    return payload, headers, size


def _entry(action: str, key: str | None, entry: tuple[str, Any], **kw: Any) -> QueueMessage:
    """One ``[id, [field, value...]]`` of a reply (fields null: an entry deleted since)."""
    kind, items = entry
    if kind == "$":  # JUSTID: the id only
        return QueueMessage(
            system=SYSTEM, action=action, destination=key, message_id=_text(items), **kw
        )
    entry_id = _text(_bulk(items[0]))
    fields = items[1][1]
    if fields is None:
        details = dict(kw.pop("details", {}), deleted=True)
        return QueueMessage(
            system=SYSTEM, action=action, destination=key, message_id=entry_id,
            details=details, **kw,
        )  # fmt: skip
    details = dict(kw.pop("details", {}))
    payload, headers, size = _fields(fields, details)
    return QueueMessage(
        system=SYSTEM, action=action, destination=key, message_id=entry_id, headers=headers,
        payload=payload, size=size, details=details, **kw,
    )  # fmt: skip


def _xadd(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    """XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT n]] *|id field value..."""
    pos = 1
    while pos < len(args):
        word = args[pos].upper()
        if word == b"NOMKSTREAM":
            pos += 1
        elif word in (b"MAXLEN", b"MINID"):
            pos += 2 if args[pos + 1] not in (b"=", b"~") else 3
        elif word == b"LIMIT":
            pos += 2
        else:
            break
    sent = args[pos]
    details: dict[str, Json] = {}
    payload, headers, size = _fields([("$", v) for v in args[pos + 1 :]], details)
    entry_id = None
    if reply is not None and reply.kind == "$" and isinstance(reply.value, bytes):
        entry_id = _text(reply.value)
    elif sent != b"*":
        entry_id = _text(sent)
    message = QueueMessage(
        system=SYSTEM, action="publish", destination=_text(args[0]), message_id=entry_id,
        headers=headers, payload=payload, size=size, details=details,
    )  # fmt: skip
    return [message]


def _read_streams(args: list[bytes]) -> tuple[dict[str, Json], dict[str, bytes]]:
    """XREAD[GROUP]'s options and its ``STREAMS key... id...`` (key -> id asked)."""
    details: dict[str, Json] = {}
    upper = [a.upper() for a in args]
    if upper[0] == b"GROUP":
        details["group"], details["consumer"] = _text(args[1]), _text(args[2])
    at = upper.index(b"STREAMS")
    rest = args[at + 1 :]
    half = len(rest) // 2
    asked = {k.decode("utf-8", "replace"): i for k, i in zip(rest[:half], rest[half:], strict=True)}
    return details, asked


def _xread(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    if reply is None or reply.value is None:
        return []
    details, asked = _read_streams(args)
    pairs = reply.value if reply.kind == "%" else [tuple(v[1]) for v in reply.value]
    out: list[QueueMessage] = []
    for key_value, (_, entries) in pairs:
        key = _text(_bulk(key_value))
        pending = name == "XREADGROUP" and asked.get(key or "", b">") != b">"
        redelivered = True if pending else None
        out.extend(
            _entry("deliver", key, e, details=dict(details), redelivered=redelivered)
            for e in entries or []
        )
    return out


def _xrange(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    if reply is None or reply.value is None:
        return []
    key = _text(args[0])
    return [_entry("deliver", key, e, details={"read": name}) for e in reply.value]


def _xclaim(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    """XCLAIM key group consumer min-idle id... -> entries; XAUTOCLAIM key group consumer
    min-idle start -> [cursor, entries, deleted ids]."""
    if reply is None or reply.value is None:
        return []
    key = _text(args[0])
    details = {"group": _text(args[1]), "consumer": _text(args[2]), "claim": name}
    entries = reply.value if name == "XCLAIM" else reply.value[1][1]
    return [
        _entry("deliver", key, e, details=dict(details), redelivered=True) for e in entries or []
    ]


def _xack(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    key, group = _text(args[0]), _text(args[1])
    return [
        QueueMessage(
            system=SYSTEM,
            action="ack",
            destination=key,
            message_id=_text(i),
            details={"group": group},
        )
        for i in args[2:]
    ]


# -- pub/sub --------------------------------------------------------------------------------


def _publish(name: str, args: list[bytes], reply: RespValue | None) -> list[QueueMessage]:
    value = args[1]
    details: dict[str, Json] = {"pubsub": True}
    if reply is not None and reply.kind == ":":
        details["receivers"] = reply.value
    return [
        QueueMessage(
            system=SYSTEM, action="publish", destination=_text(args[0]),
            payload=payload_of(value, details), size=len(value), details=details,
        )
    ]  # fmt: skip


def push_messages(items: list[tuple[str, Any]]) -> list[QueueMessage]:
    """A pub/sub push (``[message, channel, payload]``, ``[pmessage, pattern, channel,
    payload]``) -> the message it delivers."""
    try:
        raw = [_bulk(v) for v in items]
    except TypeError:
        return []
    kind = raw[0].lower() if raw else b""
    if kind not in (b"message", b"smessage", b"pmessage") or len(raw) < 3:
        return []
    details: dict[str, Json] = {"pubsub": True}
    if kind == b"pmessage" and len(raw) >= 4:
        details["pattern"] = _text(raw[1])
    channel, value = raw[-2], raw[-1]
    return [
        QueueMessage(
            system=SYSTEM, action="deliver", destination=_text(channel),
            payload=payload_of(value, details), size=len(value), details=details,
        )
    ]  # fmt: skip


# -- task queues ----------------------------------------------------------------------------


def celery_task(payload: Json) -> dict[str, Json] | None:
    """A Celery task message (protocol 2: ``headers.task`` and ``headers.id``), else None."""
    if not isinstance(payload, dict):
        return None
    headers = payload.get("headers")
    if not isinstance(headers, dict):
        return None
    if not isinstance(headers.get("task"), str) or not isinstance(headers.get("id"), str):
        return None
    out: dict[str, Json] = {k: headers[k] for k in _CELERY_FIELDS if k in headers}
    body = payload.get("body")
    props = payload.get("properties")
    encoding = props.get("body_encoding") if isinstance(props, dict) else None
    if isinstance(body, str) and encoding == "base64":
        try:
            decoded = base64.b64decode(body, validate=True)
            out["body"] = orjson.loads(decoded)
        except (binascii.Error, ValueError):
            pass  # not base64 JSON (pickle...): the envelope still says what the task is
    return out


def rq_job(name: str, args: list[bytes]) -> dict[str, Json] | None:
    """What ``HSET``/``HMSET rq:job:<id> field value...`` says of an RQ job (its text fields;
    ``data``, the pickled call, is left out), else None."""
    if name not in ("HSET", "HMSET") or not args or not args[0].startswith(_RQ_JOB.encode()):
        return None
    job = args[0][len(_RQ_JOB) :].decode("utf-8", "replace")
    out: dict[str, Json] = {"job_id": job}
    pairs = args[1:]
    for field, value in zip(pairs[::2], pairs[1::2], strict=False):
        key = field.decode("utf-8", "replace")
        if key in _RQ_FIELDS and (text := _text(value)) is not None:
            out[key] = text
    return out


_HANDLERS = {
    **dict.fromkeys(("LPUSH", "RPUSH", "LPUSHX", "RPUSHX"), _push),
    **dict.fromkeys(("BRPOP", "BLPOP", "LPOP", "RPOP"), _pop),
    **dict.fromkeys(("LMPOP", "BLMPOP"), _mpop),
    **dict.fromkeys(("LMOVE", "BLMOVE", "RPOPLPUSH", "BRPOPLPUSH"), _move),
    "XADD": _xadd,
    "XREADGROUP": _xread,
    "XREAD": _xread,
    "XRANGE": _xrange,
    "XREVRANGE": _xrange,
    "XCLAIM": _xclaim,
    "XAUTOCLAIM": _xclaim,
    "XACK": _xack,
    "PUBLISH": _publish,
    "SPUBLISH": _publish,
}
QUEUE_COMMANDS = frozenset(_HANDLERS)
