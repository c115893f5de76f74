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
_BREAKS = {ord("\n"): None, ord("\r"): None, ord("\t"): None}  # printable as text


class _WireError(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def decode_raw(data: bytes, *, depth: int = 0) -> list[dict[str, Any]]:
    """The fields of one message (see the module docstring)."""
    out: list[dict[str, Any]] = []
    end = len(data)
    pos = 0
    try:
        while pos < end:
            key = data[pos]
            if key < 0x80:  # one-byte keys and lengths are the common case: no call
                pos += 1
            else:
                key, pos = _varint(data, pos)
            number, wire = key >> 3, key & 7
            if number == 0 or wire not in _WIRE:
                raise _WireError(f"field {number} with wire type {wire} is not a field", pos)
            if wire == 0:
                value, pos = _varint(data, pos)
                out.append({"field": number, "wire": "varint", "value": value})
            elif wire == 2:
                if pos < end and data[pos] < 0x80:
                    size = data[pos]
                    pos += 1
                else:
                    size, pos = _varint(data, pos)
                _need(data, pos, size)
                field: dict[str, Any] = {"field": number, "wire": "len"}
                field.update(_guess(data[pos : pos + size], depth))
                out.append(field)
                pos += size
            elif wire == 1:
                _need(data, pos, 8)
                value, double = _Q.unpack_from(data, pos)[0], _D.unpack_from(data, pos)[0]
                out.append({"field": number, "wire": "i64", "value": value, "double": double})
                pos += 8
            elif wire == 5:
                _need(data, pos, 4)
                value, single = _I.unpack_from(data, pos)[0], _F.unpack_from(data, pos)[0]
                out.append({"field": number, "wire": "i32", "value": value, "float": single})
                pos += 4
            else:  # groups: reported, their contents not followed
                out.append({"field": number, "wire": _WIRE[wire]})
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
    text = _text(data)
    if text is None and data and depth < MAX_DEPTH:
        nested = decode_raw(data, depth=depth + 1)
        if "error" not in nested[-1]:  # a fault is always the last item
            return {"as": "message", "value": nested}
    if text is not None:
        return {"as": "string", "value": text}
    return {"as": "bytes", "value": base64.b64encode(data).decode()}


def _text(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8 made of printable characters (tabs and line
    breaks too), else None."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return None
    if text.isprintable():
        return text
    return text if text.translate(_BREAKS).isprintable() else None


def _varint(view: bytes | memoryview, pos: int) -> tuple[int, int]:
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


def _need(view: bytes | memoryview, pos: int, size: int) -> None:
    if pos + size > len(view):
        raise _WireError(f"a field of {size} bytes runs past the end of the message", pos)
