"""JSON-RPC 2.0 messages as MCP and A2A carry them: kinds, ids, batches.

Shared by the stdio transcript reader (a source) and the MCP family (an API): no imports
from either."""

from __future__ import annotations

from typing import Any

Json = Any  # a value decoded from JSON


def message_kind(msg: Json) -> str | None:
    """ "request", "notification", "response", "error" or None (not a JSON-RPC 2.0 message)."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return None
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return None
        return "request" if "id" in msg else "notification"
    if "error" in msg:
        return "error"
    if "result" in msg:
        return "response"
    return None


def id_text(value: Json) -> str | None:
    """A JSON-RPC id as a string: numbers as JSON writes them, strings as they are."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # as JSON writes it (orjson reads no NaN or Infinity)
    return None


def id_type(value: Json) -> str:
    return "string" if isinstance(value, str) else "number"


def same_id(a: Json, b: Json) -> bool:
    """Ids are equal when their JSON values are: 1 and "1" differ, true is no id."""
    if id_text(a) is None or id_text(b) is None:
        return False
    return isinstance(a, str) == isinstance(b, str) and a == b


IdKey = tuple[bool, str]  # (is a string, the id as text): 1 and "1" are different ids


def id_key(value: Json) -> IdKey | None:
    """A hashable key with the equality of :func:`same_id` (None for no usable id)."""
    text = id_text(value)
    return None if text is None else (isinstance(value, str), text)


def is_jsonrpc(value: Json) -> bool:
    """One message, or a batch: a non-empty array of messages."""
    if isinstance(value, list):
        return bool(value) and all(message_kind(m) is not None for m in value)
    return message_kind(value) is not None


def messages(body: Json) -> list[Json]:
    """The JSON-RPC messages of a body: one object, or the members of a batch."""
    if isinstance(body, list):
        return [m for m in body if message_kind(m) is not None]
    return [body] if message_kind(body) is not None else []


def summary(msg: Json, event_id: str | None) -> dict[str, Json]:
    """A message kept whole under its kind (for messages that are not a call's own)."""
    out: dict[str, Json] = {"kind": message_kind(msg)}
    for key in ("method", "id", "params", "error", "result"):
        if key in msg:
            out[key] = msg[key]
    if event_id is not None:
        out["event_id"] = event_id
    return out
