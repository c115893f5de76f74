"""A parsed protobuf message as proto3 JSON, the dict ``json_format.MessageToDict`` returns,
at a fraction of its cost on the messages gRPC streams are made of.

The proto3 JSON mapping (https://protobuf.dev/programming-guides/json/): fields present (as
``ListFields`` gives them, in field-number order) under their ``json_name``; strings and bools
as they are; 32-bit integers and finite doubles as numbers; 64-bit integers as decimal
strings; bytes as standard base64; enums by value name; nested messages as objects; repeated
fields as lists. ``json_format`` decides each field's conversion anew for every value; here it
is decided once per field descriptor (a plan per message type, kept for the pool's life).

Everything else is left to ``json_format`` itself, so the result is always its result: a
message that holds a field this module does not convert (floats, maps, extensions,
well-known and wrapper types are converted by ``MessageToDict`` for their own value, or by
their ``ToJsonString`` as ``json_format`` does for timestamps, durations and masks; enum
values with JSON names of their own (:func:`names_enum_values`), NaN or infinite doubles
and unknown values of closed enums make the whole message go through ``MessageToDict``).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any

__all__ = ["ProtoJson", "names_enum_values"]

_Convert = Callable[[Any], Any]


class _FallbackError(Exception):
    """A value this module does not convert: the whole message goes to ``json_format``."""


def _int64(value: int) -> str:
    return str(value)


def _bytes(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _double(value: float) -> float:
    if math.isfinite(value):
        return value
    raise _FallbackError


# what an enum value's options may hold without changing how json_format writes it
_PLAIN_VALUE_OPTIONS = frozenset({"deprecated", "debug_redact"})


def names_enum_values(enum_type: Any) -> bool:
    """Whether ``json_format`` writes each value of ``enum_type`` by its declared name: not
    ``google.protobuf.NullValue`` (JSON null), nor an enum with a value whose options hold
    more than ``deprecated`` and ``debug_redact``: the ``pb.enumvalue.json`` extension gives
    a value a JSON name of its own, and an extension unknown here might (kept as unknown
    fields, which the comparison of the serialized options sees)."""
    if enum_type.full_name == "google.protobuf.NullValue":
        return False
    for value in enum_type.values:
        if not value.has_options:
            continue
        options = value.GetOptions()
        plain = type(options)()
        for fd, v in options.ListFields():
            if fd.is_extension or fd.name not in _PLAIN_VALUE_OPTIONS:
                return False
            setattr(plain, fd.name, v)
        if plain.SerializeToString() != options.SerializeToString():
            return False
    return True


# json_format writes these well-known types with their own ToJsonString (RFC 3339 times,
# durations such as "1.5s", field masks as comma-joined camelCase paths)
_AS_STRING = frozenset(
    {"google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask"}
)


_STRINGS: dict[tuple[str, int, int], str] = {}  # (type, seconds, nanos) -> its JSON string


def _as_string(value: Any) -> str:
    desc = value.DESCRIPTOR
    if desc.full_name == "google.protobuf.FieldMask":
        mask: str = value.ToJsonString()
        return mask
    key = (desc.full_name, value.seconds, value.nanos)  # a stream repeats its timestamps
    text = _STRINGS.get(key)
    if text is None:
        if len(_STRINGS) >= 4096:
            _STRINGS.clear()
        text = _STRINGS[key] = value.ToJsonString()
    return text


class ProtoJson:
    """``MessageToDict(message, descriptor_pool=pool)`` for messages of one pool."""

    def __init__(self, pool: Any) -> None:
        from google.protobuf import descriptor, json_format

        self._pool = pool
        self._json_format = json_format
        self._fd = descriptor.FieldDescriptor
        self._plans: dict[Any, dict[Any, tuple[str, _Convert | None, bool]]] = {}

    def to_dict(self, message: Any) -> dict[str, Any]:
        if not message.DESCRIPTOR.file.name.startswith("google/protobuf/"):
            try:
                js: dict[str, Any] = self._message(message)
                return js
            except (_FallbackError, ValueError):  # ValueError: a timestamp out of range...
                pass  # json_format says it its own way
        result: dict[str, Any] = self._json_format.MessageToDict(
            message, descriptor_pool=self._pool
        )
        return result

    def _message(self, message: Any) -> Any:
        desc = message.DESCRIPTOR
        plan = self._plans.get(desc)
        if plan is None:
            plan = self._plans[desc] = {}
        js: dict[str, Any] = {}
        for field, value in message.ListFields():
            step = plan.get(field)
            if step is None:
                step = plan[field] = self._step(field)
            name, convert, repeated = step
            if convert is None:  # strings, 32-bit integers, bools: as they are
                js[name] = list(value) if repeated else value
            else:
                js[name] = [convert(v) for v in value] if repeated else convert(value)
        return js

    def _step(self, field: Any) -> tuple[str, _Convert | None, bool]:
        """How one field's values are written: (name, conversion or None for the value
        itself, repeated)."""
        fd = self._fd
        repeated = (
            bool(field.is_repeated)
            if hasattr(field, "is_repeated")
            else (field.label == fd.LABEL_REPEATED)
        )
        if field.is_extension:
            return field.json_name, self._whole, repeated
        cpp = field.cpp_type
        convert: _Convert | None = self._whole
        if cpp == fd.CPPTYPE_MESSAGE:
            mtype = field.message_type
            if mtype.has_options and mtype.GetOptions().map_entry:
                convert = self._whole
            elif mtype.full_name in _AS_STRING:
                convert = _as_string
            elif mtype.file.name.startswith("google/protobuf/"):
                convert = self._well_known  # Any, Struct, wrappers... as json_format writes them
            else:
                convert = self._message
        elif cpp == fd.CPPTYPE_ENUM:
            convert = self._enum(field.enum_type)
        elif cpp == fd.CPPTYPE_STRING:
            convert = _bytes if field.type == fd.TYPE_BYTES else None
        elif cpp in (fd.CPPTYPE_INT64, fd.CPPTYPE_UINT64):
            convert = _int64
        elif cpp in (fd.CPPTYPE_INT32, fd.CPPTYPE_UINT32, fd.CPPTYPE_BOOL):
            convert = None
        elif cpp == fd.CPPTYPE_DOUBLE:
            convert = _double
        return field.json_name, convert, repeated

    def _well_known(self, value: Any) -> Any:
        return self._json_format.MessageToDict(value, descriptor_pool=self._pool)

    @staticmethod
    def _whole(value: Any) -> Any:
        raise _FallbackError

    def _enum(self, enum_type: Any) -> _Convert:
        if not names_enum_values(enum_type):  # JSON null, or JSON names an option sets
            return self._whole
        names = {v.number: v.name for v in enum_type.values}
        closed = bool(getattr(enum_type, "is_closed", False))

        def convert(value: int) -> Any:
            name = names.get(value)
            if name is not None:
                return name
            if closed:
                raise _FallbackError  # json_format's error
            return value

        return convert
