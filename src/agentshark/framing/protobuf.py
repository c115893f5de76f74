"""Protocol Buffers without a schema: the wire format as field numbers, wire types and values,
as ``protoc --decode_raw`` prints them (https://protobuf.dev/programming-guides/encoding/).

:func:`decode_raw` turns one message's bytes into a list of fields, each
``{"field": n, "wire": "varint" | "i64" | "len" | "i32", "value": ...}``. A ``len`` field is
ambiguous on the wire (a string, bytes, a nested message, a packed array): it is read as a
nested message when its bytes parse as one to the end, else as UTF-8 text when they decode
and are printable, else as bytes (base64); ``"as"`` says which guess was taken
(``"message"``, ``"string"``, ``"bytes"``), so nothing reads as schema knowledge. Varints are
unsigned as sent (an ``int32`` of -1 is 18446744073709551615; ``sint`` zigzag and signs need
the schema). ``i64``/``i32`` values are given as unsigned integers, with their IEEE double /
float reading beside them. Groups (wire types 3 and 4, deprecated) are reported, their
contents kept as bytes.

Nothing raises: bytes that are not a message give the fields read before the fault and a
final ``{"error": ..., "offset": n}`` item. Nesting is followed to :data:`MAX_DEPTH` levels.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

__all__ = ["MAX_DEPTH", "decode_raw", "wire_fields"]

MAX_DEPTH = 16
_WIRE = {0: "varint", 1: "i64", 2: "len", 5: "i32", 3: "group-start", 4: "group-end"}
_D = struct.Struct("<d")
_F = struct.Struct("<f")
_Q = struct.Struct("<Q")
_I = struct.Struct("<I")


class _WireError(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def decode_raw(data: bytes, *, depth: int = 0) -> list[dict[str, Any]]:
    """The fields of one message (see the module docstring)."""
    out: list[dict[str, Any]] = []
    view = memoryview(data)
    pos = 0
    try:
        while pos < len(view):
            key, pos = _varint(view, pos)
            number, wire = key >> 3, key & 7
            if number == 0 or wire not in _WIRE:
                raise _WireError(f"field {number} with wire type {wire} is not a field", pos)
            field: dict[str, Any] = {"field": number, "wire": _WIRE[wire]}
            if wire == 0:
                field["value"], pos = _varint(view, pos)
            elif wire == 1:
                _need(view, pos, 8)
                field["value"] = _Q.unpack_from(view, pos)[0]
                field["double"] = _D.unpack_from(view, pos)[0]
                pos += 8
            elif wire == 5:
                _need(view, pos, 4)
                field["value"] = _I.unpack_from(view, pos)[0]
                field["float"] = _F.unpack_from(view, pos)[0]
                pos += 4
            elif wire == 2:
                size, pos = _varint(view, pos)
                _need(view, pos, size)
                field.update(_guess(bytes(view[pos : pos + size]), depth))
                pos += size
            out.append(field)
    except _WireError as fault:
        out.append({"error": str(fault), "offset": fault.offset})
    return out


def wire_fields(data: bytes) -> list[tuple[int, int | bytes]] | None:
    """The fields of one message as ``(number, value)``: a varint as its integer, a ``len``
    field as its bytes (no guess), ``i64``/``i32`` as their raw bytes; None when ``data`` is
    not a message (a fault anywhere, or a group). For readers that know the schema by heart
    (gRPC reflection, ``google.rpc.Status``)."""
    out: list[tuple[int, int | bytes]] = []
    view = memoryview(data)
    pos = 0
    try:
        while pos < len(view):
            key, pos = _varint(view, pos)
            number, wire = key >> 3, key & 7
            if number == 0:
                return None
            if wire == 0:
                value, pos = _varint(view, pos)
                out.append((number, value))
                continue
            if wire == 2:
                size, pos = _varint(view, pos)
            elif wire in (1, 5):
                size = 8 if wire == 1 else 4
            else:
                return None
            _need(view, pos, size)
            out.append((number, bytes(view[pos : pos + size])))
            pos += size
    except _WireError:
        return None
    return out


def is_message(data: bytes) -> bool:
    """Whether ``data`` parses as one message to its end (no fault)."""
    return not any("error" in f for f in decode_raw(data, depth=MAX_DEPTH))


def _guess(data: bytes, depth: int) -> dict[str, Any]:
    if data and depth < MAX_DEPTH and not _printable(data):
        nested = decode_raw(data, depth=depth + 1)
        if not any("error" in f for f in nested):
            return {"as": "message", "value": nested}
    if _printable(data):
        return {"as": "string", "value": data.decode()}
    if data and depth < MAX_DEPTH:
        nested = decode_raw(data, depth=depth + 1)
        if not any("error" in f for f in nested):
            return {"as": "message", "value": nested}
    return {"as": "bytes", "value": base64.b64encode(data).decode()}


def _printable(data: bytes) -> bool:
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return False
    return text.isprintable() or all(c.isprintable() or c in "\n\r\t" for c in text)


def _varint(view: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    start = pos
    while True:
        if pos >= len(view):
            raise _WireError("the data ends inside a varint", start)
        byte = view[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise _WireError("a varint longer than 10 bytes", start)


def _need(view: memoryview, pos: int, size: int) -> None:
    if pos + size > len(view):
        raise _WireError(f"a field of {size} bytes runs past the end of the message", pos)
