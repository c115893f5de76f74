"""pydantic-ai WebSocket message logs -> one :class:`~agentshark.model.Exchange` holding the
session's messages, as a capture of the same WebSocket would give them.

The shape pydantic-ai's realtime tests record (``tests/realtime/cassettes/*``)::

    version: 1
    interactions:
    - {kind: message, direction: sent | received, data: {type: session.update, ...}}
    - {kind: close, code: 1000, reason: "", ok: true}

``sent`` is the client's (direction 0), ``received`` the server's (1). Each message's
``data`` is the event as a mapping: it is written back as JSON text (not byte-exact: one
``info`` diagnostic says so, and the sizes are those of the re-serialized text). A log keeps
no times (every time is 0.0), no handshake (the exchange has no request or response, so it
is never "complete" itself; the calls in it say what they are) and no side for the close,
which goes to the exchange's ``extras``. Interactions of other shapes in the log (HTTP
request/response pairs of a WebRTC call's SDP exchange) are read as a vcrpy cassette's would
be. A malformed item is a diagnostic with its path; the rest is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from agentshark.errors import Diagnostic
from agentshark.framing.websocket import TEXT, WsMessage
from agentshark.model import Exchange, WsRecord
from agentshark.sources.vcr import read_vcr

__all__ = ["is_message_log", "read_message_log"]

_DIRECTIONS = {"sent": 0, "received": 1}
_NO_TIME = 0.0


def is_message_log(items: list[Any]) -> bool:
    return any(isinstance(x, dict) and "kind" in x and "direction" in x for x in items)


def read_message_log(
    doc: dict[str, Any], name: str, source: int, next_id: Callable[[], str]
) -> Iterator[Exchange | Diagnostic]:
    items = doc.get("interactions")
    assert isinstance(items, list)
    records: list[WsRecord] = []
    close: dict[str, Any] | None = None
    http = [x for x in items if isinstance(x, dict) and "request" in x and "response" in x]
    for i, item in enumerate(items):
        where = f"{name} interactions[{i}]"
        if isinstance(item, dict) and "request" in item and "response" in item:
            continue
        if not isinstance(item, dict):
            yield _malformed(where, f"is a {type(item).__name__}, not a mapping")
            continue
        kind = item.get("kind")
        if kind == "close":
            close = {k: item.get(k) for k in ("code", "reason", "ok")}
            continue
        direction = _DIRECTIONS.get(item.get("direction"))  # type: ignore[arg-type]
        if kind != "message" or direction is None:
            what = f"kind {kind!r}, direction {item.get('direction')!r}"
            yield _malformed(where, f"has {what}: not a sent or received message")
            continue
        try:
            payload = orjson.dumps(item.get("data"))
        except TypeError as exc:
            yield _malformed(where + ".data", f"cannot be written as JSON ({exc})")
            continue
        records.append(WsRecord(message=_message(direction, payload, len(records))))
    if http:
        yield from read_vcr({"interactions": http}, name, source, next_id)
    if not records:
        return
    diagnostics = [
        Diagnostic(
            code="wslog.reserialized",
            message=f"{name} keeps each message as a mapping: its JSON text is written again, "
            "so sizes are those of the re-serialized text, not the wire's",
            location=name,
            severity="info",
        )
    ]
    extras: dict[str, object] = {"format": "pydantic-ai websocket message log"}
    if close is not None:
        extras["close"] = close
    yield Exchange(
        id=next_id(),
        source=source,
        connection=None,
        transport="ws",
        request=None,
        response=None,
        upgrade="websocket",
        diagnostics=diagnostics,
        extras=extras,
        messages=records,
    )


def _message(direction: int, payload: bytes, n: int) -> WsMessage:
    return WsMessage(
        direction=direction,
        opcode=TEXT,
        payload=payload,
        size=len(payload),
        wire_size=len(payload),
        frames=1,
        first_ts=_NO_TIME,
        last_ts=_NO_TIME,
        offset=n,  # the message's place in the log (no byte offsets)
    )


def _malformed(where: str, what: str) -> Diagnostic:
    return Diagnostic(
        code="wslog.malformed_message", message=f"{where} {what}; it is skipped", location=where
    )
