"""A HAR entry's ``_webSocketMessages`` (Chrome DevTools, pcap2har) -> the WebSocket
messages of its exchange.

Each item is ``{type: "send" | "receive", time: <epoch seconds>, opcode: 1 | 2 | ...,
data: str}``: ``send`` is the client's (direction 0); a text message's ``data`` is its text,
a binary message's is base64 (as DevTools writes it). Sizes are those of the payload the
item holds. An item that is not of that shape is skipped with a diagnostic naming its path;
a binary item whose data is not base64 keeps no payload, with a diagnostic.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from agentshark.errors import Diagnostic
from agentshark.framing.websocket import BINARY, OPCODE_NAMES, TEXT, WsMessage
from agentshark.model import WsRecord

__all__ = ["websocket_messages"]

_DIRECTIONS = {"send": 0, "receive": 1}


def websocket_messages(items: object, path: str, diags: list[Diagnostic]) -> list[WsRecord]:
    if not isinstance(items, list):
        diags.append(_bad(path, f"is a {type(items).__name__}, not a list"))
        return []
    out: list[WsRecord] = []
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        message = _message(item, where, len(out), diags) if isinstance(item, dict) else None
        if not isinstance(item, dict):
            diags.append(_bad(where, "is not an object"))
        if message is not None:
            out.append(WsRecord(message=message))
    return out


def _message(item: dict[str, Any], where: str, n: int, diags: list[Diagnostic]) -> WsMessage | None:
    kind, data, ts = item.get("type"), item.get("data"), item.get("time")
    direction = _DIRECTIONS.get(kind) if isinstance(kind, str) else None
    opcode = item.get("opcode")
    if not isinstance(opcode, int) or isinstance(opcode, bool) or opcode not in OPCODE_NAMES:
        opcode = None
    if direction is None or opcode is None or not isinstance(data, str):
        diags.append(_bad(where, "has no send/receive type, known opcode and string data"))
        return None
    if not isinstance(ts, int | float) or isinstance(ts, bool):
        diags.append(_bad(where, "has no numeric time"))
        return None
    payload: bytes | None = data.encode()
    if opcode == BINARY:
        try:
            payload = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            payload = None
            diags.append(_bad(where, "is a binary message whose data is not base64"))
    size = len(payload) if payload is not None else len(data)
    return WsMessage(
        direction=direction,
        opcode=opcode if opcode != 0 else TEXT,
        payload=payload,
        size=size,
        wire_size=size,
        frames=1,
        first_ts=float(ts),
        last_ts=float(ts),
        offset=n,  # its place in the list (a HAR keeps no byte offsets)
    )


def _bad(where: str, what: str) -> Diagnostic:
    return Diagnostic(
        code="har.malformed_websocket_message",
        message=f"{where} {what}; it is skipped",
        location=where,
    )
