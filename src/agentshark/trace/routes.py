"""What a plain HTTP tool execution is: its method, its route template and its status; and
what a wire protocol's operation that ran a tool is (:func:`wire_execution`).

A REST tool's path carries the ids of what it acts on (``/users/8812/orders/3f2a…``); the
route template is the path with those segments replaced by what they are, so that calls of
one operation group together (``/users/{id}/orders/{uuid}``). A segment is an id when it is,
percent-decoded and whole:

- a UUID (RFC 9562 §4 text form, any version): ``{uuid}``;
- digits only: ``{id}``;
- hexadecimal of 16 characters or more with at least one digit (digests, object ids:
  MD5, SHA-1, SHA-256, MongoDB ObjectId is 24): ``{hash}``;
- 20 characters or more of letters, digits, ``-`` and ``_`` mixing letters and digits
  (ULIDs, base64url tokens, vendor ids such as ``cus_9s6XKzkNRiz8i3``) when it has at least
  as many digits and upper-case letters as a word would not: ``{token}``.

Anything else (words, dates such as ``2024-05-01``, versions such as ``v1``) stays as sent.
The template is an inference, named as one (``route`` in the span, never the server's own
route, which the wire does not carry).
"""

from __future__ import annotations

import contextlib
import re
from urllib.parse import unquote, urlsplit

import orjson

from agentshark.apis.model import Json
from agentshark.wire.events import Operation

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]{16,}")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{20,}")


def segment_kind(segment: str) -> str | None:
    """``uuid``, ``id``, ``hash`` or ``token`` for a segment that is an id, else None."""
    if _UUID.fullmatch(segment):
        return "uuid"
    if _DIGITS.fullmatch(segment):
        return "id"
    if _HEX.fullmatch(segment) and any(c.isdigit() for c in segment):
        return "hash"
    if _TOKEN.fullmatch(segment):
        digits = sum(c.isdigit() for c in segment)
        upper = sum(c.isupper() for c in segment)
        if digits >= 2 and digits + upper >= len(segment) // 5:
            return "token"
    return None


def route_template(path: str) -> str:
    """``path`` with its id segments named by kind (see the module docstring)."""
    out = []
    for raw in path.split("/"):
        kind = segment_kind(unquote(raw)) if raw else None
        out.append("{" + kind + "}" if kind is not None else raw)
    return "/".join(out)


def http_execution(method: str, url: str, status: int | None, body: bytes) -> dict[str, Json]:
    """What a tool span says of a plain HTTP request that ran it: method, path, route
    template, status (absent when no response was seen) and the request's JSON body when
    the kept bytes are one whole JSON text."""
    try:
        path = urlsplit(url).path or "/"
    except ValueError:
        path = url.partition("?")[0]
    out: dict[str, Json] = {"method": method, "path": path, "route": route_template(path)}
    if status:
        out["status"] = status
    if body[:1] in (b"{", b"["):
        # cut at the kept bytes, or not JSON: absent here, the exchange has it whole
        with contextlib.suppress(orjson.JSONDecodeError):
            out["request_json"] = orjson.loads(body)
    return out


def wire_execution(op: Operation, url: str) -> dict[str, Json]:
    """What a tool span says of a wire operation that ran it (a SQL statement, a Redis
    command, an AMQP or Kafka publish): the protocol, the server, the command and statement
    as sent with their parameters, the protocol's own result (a CommandComplete tag, a
    reply's kind), the rows counted, the error, the role (``queue.publish``...), whether both
    sides were seen whole, and the message ids of a queue operation; absent fields were not
    on the wire."""
    out: dict[str, Json] = {"protocol": op.protocol, "server": url, "kind": op.kind}
    given: tuple[tuple[str, Json], ...] = (
        ("command", op.command),
        ("statement", op.statement),
        ("parameters", list(op.parameters) if op.parameters else None),
        ("result", op.result),
        ("rows", op.rows),
        ("error", op.error),
        ("role", op.role),
    )
    out.update((key, value) for key, value in given if value is not None)
    out["complete"] = op.request_complete and op.response_complete
    messages: list[Json] = [
        {
            k: v
            for k, v in (
                ("action", m.action),
                ("destination", m.destination),
                ("routing_key", m.routing_key),
                ("partition", m.partition),
                ("offset", m.offset),
                ("message_id", m.message_id),
                ("correlation_id", m.correlation_id),
                ("size", m.size),
            )
            if v is not None
        }
        for m in op.messages
    ]
    if messages:
        out["messages"] = messages
    return out
