"""A protobuf message's proto3 JSON straight from its wire bytes, for the plain messages that
gRPC streams are made of; anything else is left to the ``protobuf`` library.

``ProtoSchemas.to_json`` parses with ``protobuf`` and writes with
:mod:`agentshark.framing.proto_json`; this module gives the same dict without building the
message, by one pass over the fields (https://protobuf.dev/programming-guides/encoding/):
a tag varint, then the value by its wire type (varint, 64-bit, length-delimited, 32-bit).
The field's plan (its JSON name, how its value is read and written) is made once per field.

It reads only what it can read exactly as ``protobuf`` then ``json_format`` would, and gives
up (``None``: the caller goes the library's way) on everything else:

- a field number that does not grow (``protobuf`` merges a repeated singular field and
  ListFields orders by number; a repeated field may repeat itself in a row), a second member
  of one oneof, a wire type that is not the field's (repeated numbers may come packed);
- field number 0, groups and invalid wire types, a varint over 10 bytes, a value that runs
  past its message, a string that is not UTF-8 (the library's errors are the report's);
- floats, maps, NaN or infinite doubles, enums whose values have JSON names of their own
  (:func:`~agentshark.framing.proto_json.names_enum_values`), unknown values of closed
  enums, and the well-known types but timestamps and durations (written from their bytes
  by ``ToJsonString`` once per distinct value).

An implicit-presence scalar (proto3 without ``optional``) at its default value is left out,
as ``ListFields`` leaves it out; unknown fields are skipped, as ``json_format`` skips them.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Callable
from typing import Any

from agentshark.framing.proto_json import names_enum_values

__all__ = ["WireJson"]

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_D = struct.Struct("<d")
_Q, _q, _I, _i = struct.Struct("<Q"), struct.Struct("<q"), struct.Struct("<I"), struct.Struct("<i")


class _GiveUpError(Exception):
    """Not a message this module reads exactly: the library's way."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position); a varint of over 10 bytes, or one past the end, gives up."""
    b = data[pos]  # IndexError past the end: the caller gives up
    if b < 0x80:
        return b, pos + 1
    value, shift = b & 0x7F, 7
    while True:
        pos += 1
        b = data[pos]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if shift == 63 and b > 1:
                raise _GiveUpError
            return value, pos + 1
        shift += 7
        if shift > 63:
            raise _GiveUpError


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _int64(v: int) -> str:
    return str(v - (1 << 64) if v & (1 << 63) else v)


_VARINT_READ: dict[int, Callable[[int], Any]] = {
    5: _int32,  # int32
    3: _int64,  # int64: a string in JSON
    13: lambda v: v & 0xFFFFFFFF,  # uint32
    4: lambda v: str(v),  # uint64
    17: lambda v: ((v & 0xFFFFFFFF) >> 1) ^ -(v & 1),  # sint32: its low 32 bits, zigzag
    18: lambda v: str((v >> 1) ^ -(v & 1)),  # sint64
    8: lambda v: v != 0,  # bool
}
_FIXED_READ: dict[int, tuple[int, Callable[[bytes, int], Any]]] = {
    7: (_I32, lambda d, p: _I.unpack_from(d, p)[0]),  # fixed32
    15: (_I32, lambda d, p: _i.unpack_from(d, p)[0]),  # sfixed32
    6: (_I64, lambda d, p: str(_Q.unpack_from(d, p)[0])),  # fixed64
    16: (_I64, lambda d, p: str(_q.unpack_from(d, p)[0])),  # sfixed64
    1: (_I64, lambda d, p: _double(_D.unpack_from(d, p)[0])),  # double
}
_STRING, _BYTES, _MESSAGE, _ENUM = 9, 12, 11, 14
_TIMES = frozenset({"google.protobuf.Timestamp", "google.protobuf.Duration"})


def _double(v: float) -> float:
    if math.isfinite(v) and (v != 0.0 or math.copysign(1.0, v) > 0):
        return v
    raise _GiveUpError  # NaN, infinities: strings in JSON; -0.0: present or not, by its bits


class _Field:
    __slots__ = ("default", "name", "oneof", "packed", "read", "repeated", "sub", "wire")

    def __init__(self) -> None:
        self.name = ""
        self.wire = -1  # the wire type its values come in
        self.read: Callable[..., Any] | None = None
        self.sub: _Plan | None = None
        self.repeated = False
        self.packed = False  # a repeated number: its values may come packed in one run
        self.default: object = None  # implicit presence: the value that is not written
        self.oneof: int = -1


# how a step reads its value: the length-delimited ones first
_HOW_STRING, _HOW_MESSAGE, _HOW_BYTES, _HOW_VARINT = 0, 1, 2, 3
_Step = tuple[int, str, int, Any, Any, bool, object, int]  # number, name, how, read, sub...


class _Plan:
    __slots__ = ("by_tag", "fields", "full_name", "has_oneof")

    def __init__(self, full_name: str) -> None:
        self.full_name = full_name
        self.fields: dict[int, _Field] = {}
        # tag (number << 3 | the field's wire type) -> (number, name, how, read, sub plan,
        # repeated, default, oneof); how is a _HOW_* or the byte count of a fixed-size value
        self.by_tag: dict[int, _Step] = {}
        self.has_oneof = False


class WireJson:
    """Plans per message type of one pool; :meth:`read` gives the JSON dict or None."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._plans: dict[str, _Plan | None] = {}
        self._times: dict[tuple[str, bytes], str] = {}

    def read(self, type_name: str, payload: bytes) -> dict[str, Any] | None:
        """The JSON dict of a ``type_name`` message, or None (the library's way)."""
        if type_name not in self._plans:
            self._plan(self._pool.FindMessageTypeByName(type_name))
        plan = self._plans[type_name]
        if plan is None:
            return None
        try:
            return self._message(plan, payload, 0, len(payload))
        except (_GiveUpError, IndexError, UnicodeDecodeError, struct.error):
            return None

    def _message(self, plan: _Plan, data: bytes, pos: int, end: int) -> dict[str, Any]:
        js: dict[str, Any] = {}
        by_tag = plan.by_tag
        last = 0
        oneofs: set[int] | None = set() if plan.has_oneof else None
        while pos < end:
            tag = data[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = _varint(data, pos)
            step = by_tag.get(tag)
            if step is None:  # unknown, or not in the field's wire type
                pos, last = self._other(plan, data, pos, end, tag, last, js)
                continue
            number, name, how, read, sub, repeated, default, oneof = step
            again = False
            if number <= last:  # numbers grow; a repeated field may repeat itself in a row
                if number < last or not repeated:
                    raise _GiveUpError
                again = True
            if oneof >= 0:  # a member of a real oneof (the plan keeps a set then)
                assert oneofs is not None
                if oneof in oneofs and not again:
                    raise _GiveUpError
                oneofs.add(oneof)
            last = number
            if how <= _HOW_BYTES:  # length-delimited
                n = data[pos]
                if n < 0x80:
                    pos += 1
                else:
                    n, pos = _varint(data, pos)
                stop = pos + n
                if stop > end:
                    raise _GiveUpError
                if how == _HOW_STRING:
                    value: Any = data[pos:stop].decode("utf-8")
                elif how == _HOW_MESSAGE:
                    value = self._message(sub, data, pos, stop)
                else:
                    value = read(data, pos, stop)
                pos = stop
            elif how == _HOW_VARINT:
                b = data[pos]
                if b < 0x80:
                    value, pos = read(b), pos + 1
                else:
                    raw, pos = _varint(data, pos)
                    value = read(raw)
            else:
                stop = pos + how  # 8 or 4 bytes
                if stop > end:
                    raise _GiveUpError
                value = read(data, pos)
                pos = stop
            if repeated:
                if again:
                    js[name].append(value)
                else:
                    js[name] = [value]
            elif default is None or value != default:
                js[name] = value
        if pos != end:
            raise _GiveUpError
        return js

    def _other(
        self, plan: _Plan, data: bytes, pos: int, end: int, tag: int, last: int, js: dict[str, Any]
    ) -> tuple[int, int]:
        """A field whose tag has no step: a packed run of a repeated number, or an unknown
        field (skipped); (next position, last field number)."""
        number, wire = tag >> 3, tag & 7
        if number == 0 or tag >> 32:  # field numbers are 1 to 2**29 - 1: the library refuses
            raise _GiveUpError
        field = plan.fields.get(number)
        if field is None:
            return self._skip(data, pos, end, number, wire), last
        again = number == last
        if number < last or not (field.packed and wire == _LEN):
            raise _GiveUpError
        return self._packed(field, data, pos, end, js, again), number

    @staticmethod
    def _packed(
        field: _Field, data: bytes, pos: int, end: int, js: dict[str, Any], again: bool
    ) -> int:
        """A packed run of a repeated number field: its values added to the field's list."""
        n, pos = _varint(data, pos)
        stop = pos + n
        if stop > end:
            raise _GiveUpError
        values: list[Any] = js[field.name] if again else []
        read = field.read
        assert read is not None
        if field.wire == _VARINT:
            while pos < stop:
                raw, pos = _varint(data, pos)
                values.append(read(raw))
            if pos != stop:
                raise _GiveUpError
        else:
            size = 8 if field.wire == _I64 else 4
            if (stop - pos) % size:
                raise _GiveUpError
            values.extend(read(data, p) for p in range(pos, stop, size))
        if values or again:
            js[field.name] = values
        return stop

    @staticmethod
    def _skip(data: bytes, pos: int, end: int, number: int, wire: int) -> int:
        """Past an unknown field's value."""
        if number == 0:
            raise _GiveUpError
        if wire == _VARINT:
            return _varint(data, pos)[1]
        if wire == _LEN:
            n, pos = _varint(data, pos)
            stop = pos + n
        elif wire in (_I64, _I32):
            stop = pos + (8 if wire == _I64 else 4)
        else:
            raise _GiveUpError  # groups, invalid wire types
        if stop > end:
            raise _GiveUpError
        return stop

    def _plan(self, desc: Any) -> _Plan | None:
        """The plan of a message type (made before its fields' plans, so recursion works);
        None for the well-known types. A field of a kind left to the library is planned with
        no wire type, so that its presence gives up."""
        name = desc.full_name
        if name in self._plans:
            return self._plans[name]
        if desc.file.name.startswith("google/protobuf/"):
            self._plans[name] = None
            return None
        plan = self._plans[name] = _Plan(name)
        for fd in desc.fields:
            field = self._field(fd)
            plan.fields[fd.number] = field
            if field.wire >= 0:
                plan.by_tag[fd.number << 3 | field.wire] = _step(fd.number, field)
            plan.has_oneof = plan.has_oneof or field.oneof >= 0
        return plan

    def _field(self, fd: Any) -> _Field:
        field = _Field()
        field.name = fd.json_name
        field.repeated = bool(fd.is_repeated)
        oneof = fd.containing_oneof
        if oneof is not None and len(oneof.fields) > 1:  # a real oneof, not proto3 optional
            field.oneof = oneof.index
        kind = fd.type
        implicit = not fd.has_presence and not field.repeated
        if kind in _VARINT_READ:
            field.wire, field.read = _VARINT, _VARINT_READ[kind]
            field.packed = field.repeated
            if implicit:
                field.default = field.read(0)
        elif kind in _FIXED_READ:
            field.wire, read = _FIXED_READ[kind]
            field.read = read
            field.packed = field.repeated
            if implicit:
                field.default = read(bytes(8), 0)
        elif kind == _STRING:
            field.wire = _LEN
            field.default = "" if implicit else None
        elif kind == _BYTES:
            field.wire, field.read = _LEN, _b64
            field.default = "" if implicit else None
        elif kind == _ENUM:
            enum = fd.enum_type
            if not names_enum_values(enum):
                return field
            field.wire, field.read = _VARINT, _enum_reader(enum)
            field.packed = field.repeated
            if implicit:
                field.default = field.read(0)
        elif kind == _MESSAGE:
            mtype = fd.message_type
            if mtype.has_options and mtype.GetOptions().map_entry:
                return field
            if mtype.full_name in _TIMES:
                field.wire, field.read = _LEN, self._time_reader(mtype)
            else:
                sub = self._plan(mtype)
                if sub is not None:
                    field.wire, field.sub = _LEN, sub
        return field  # floats and groups keep no wire type

    def _time_reader(self, mtype: Any) -> Callable[[bytes, int, int], str]:
        from google.protobuf import message_factory

        cls = message_factory.GetMessageClass(mtype)
        times = self._times
        full_name = mtype.full_name

        def read(data: bytes, pos: int, stop: int) -> str:
            raw = data[pos:stop]
            key = (full_name, raw)
            text = times.get(key)
            if text is None:
                try:
                    text = cls.FromString(raw).ToJsonString()
                except Exception as exc:  # DecodeError, ValueError: the library's way
                    raise _GiveUpError from exc
                if len(times) >= 4096:
                    times.clear()
                times[key] = text
            return text

        return read


def _step(number: int, field: _Field) -> _Step:
    if field.wire == _LEN:
        how = _HOW_MESSAGE if field.sub else _HOW_STRING if field.read is None else _HOW_BYTES
    elif field.wire == _VARINT:
        how = _HOW_VARINT
    else:
        how = 8 if field.wire == _I64 else 4
    return (
        number,
        field.name,
        how,
        field.read,
        field.sub,
        field.repeated,
        field.default,
        field.oneof,
    )


def _b64(data: bytes, pos: int, stop: int) -> str:
    return base64.b64encode(data[pos:stop]).decode("ascii")


def _enum_reader(enum: Any) -> Callable[[int], Any]:
    names = {v.number: v.name for v in enum.values}
    closed = bool(getattr(enum, "is_closed", False))

    def read(raw: int) -> Any:
        value = _int32(raw)
        name = names.get(value)
        if name is not None:
            return name
        if closed:
            raise _GiveUpError
        return value

    return read
