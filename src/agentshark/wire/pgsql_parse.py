"""Bodies of PostgreSQL v3 messages -> values
(https://www.postgresql.org/docs/current/protocol-message-formats.html).

Each parser takes a message body and returns what it holds, or raises :class:`BadMessageError`
(a body shorter than its fields say, a string without its NUL); the session turns that into a
Diagnostic on the operation. Parameter and column values are kept raw: a text-format value as
a string (the bytes as sent when they are not UTF-8: base64), a binary-format one as
``{"format": "binary", "base64": ...}``, NULL as None.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

Json = Any


class BadMessageError(ValueError):
    """A message body that does not hold what its type says."""


class Cursor:
    """Reads a message body front to back."""

    __slots__ = ("body", "pos")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.pos = 0

    def cstring(self) -> str:
        end = self.body.find(b"\0", self.pos)
        if end < 0:
            raise BadMessageError(f"a string at byte {self.pos} has no NUL terminator")
        text = self.body[self.pos : end].decode("utf-8", "replace")
        self.pos = end + 1
        return text

    def number(self, size: int, *, signed: bool = True) -> int:
        end = self.pos + size
        if end > len(self.body):
            raise BadMessageError(f"the body ends at byte {len(self.body)}, inside a field")
        value = int.from_bytes(self.body[self.pos : end], signed=signed)
        self.pos = end
        return value

    def take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.body):
            raise BadMessageError(
                f"a value of {size} bytes at byte {self.pos} passes the body's end"
            )
        data = self.body[self.pos : end]
        self.pos = end
        return data

    def byte(self) -> str:
        return chr(self.take(1)[0])


def value_json(data: bytes | None, fmt: int) -> Json:
    """A parameter or column value as sent: format 0 is text, 1 binary."""
    if data is None:
        return None
    if fmt == 0:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return {"format": "text", "base64": base64.b64encode(data).decode()}
    return {"format": "binary", "base64": base64.b64encode(data).decode()}


def formats_for(codes: list[int], count: int) -> list[int]:
    """The format of each of ``count`` values: none given is all text, one is for all."""
    if not codes:
        return [0] * count
    if len(codes) == 1:
        return codes * count
    if len(codes) != count:
        raise BadMessageError(f"{len(codes)} format codes for {count} values")
    return codes


def startup_parameters(cur: Cursor) -> dict[str, str]:
    """StartupMessage: name/value pairs up to an empty name."""
    out: dict[str, str] = {}
    while cur.pos < len(cur.body):
        name = cur.cstring()
        if not name:
            break
        out[name] = cur.cstring()
    return out


def parse_message(body: bytes) -> tuple[str, str, list[int]]:
    """Parse: statement name, query, parameter type OIDs."""
    cur = Cursor(body)
    name, query = cur.cstring(), cur.cstring()
    oids = [cur.number(4, signed=False) for _ in range(cur.number(2))]
    return name, query, oids


def bind_message(body: bytes) -> tuple[str, str, list[Json]]:
    """Bind: portal, statement name, parameter values (raw, by their format; see
    :func:`typed_values` for the binary values of well-known types)."""
    cur = Cursor(body)
    portal, statement = cur.cstring(), cur.cstring()
    codes = [cur.number(2) for _ in range(cur.number(2))]
    count = cur.number(2)
    raw: list[bytes | None] = []
    for _ in range(count):
        size = cur.number(4)
        raw.append(None if size == -1 else cur.take(size))
    formats = formats_for(codes, count)
    return portal, statement, [value_json(v, f) for v, f in zip(raw, formats, strict=True)]


# Binary formats of a few built-in types (src/backend/utils/adt: int2send, int4send,
# int8send, boolsend, float8send, textsend...), by type OID (pg_type.dat).
_INTS = {21: 2, 23: 4, 20: 8, 26: 4}  # int2, int4, int8, oid
_TEXTS = frozenset((25, 1043, 1042, 19))  # text, varchar, bpchar, name


def typed_values(values: list[Json], oids: list[int]) -> list[Json]:
    """The parameters with a ``value`` added to each binary one whose type the Parse named
    and whose bytes that type's binary format reads (an integer, a boolean, a float8, text);
    the raw base64 stays."""
    out: list[Json] = []
    for n, value in enumerate(values):
        oid = oids[n] if n < len(oids) else 0
        if isinstance(value, dict) and value.get("format") == "binary" and oid:
            raw = base64.b64decode(value["base64"])
            typed = _binary_value(raw, oid)
            if typed is not None:
                value = {**value, "type_oid": oid, "value": typed}
        out.append(value)
    return out


def _binary_value(raw: bytes, oid: int) -> Json:
    if oid in _INTS and len(raw) == _INTS[oid]:
        return int.from_bytes(raw, signed=oid != 26)
    if oid == 16 and len(raw) == 1:
        return raw != b"\0"
    if oid == 701 and len(raw) == 8:
        return float(struct.unpack(">d", raw)[0])
    if oid in _TEXTS:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def row_description(body: bytes) -> tuple[list[str], list[int]]:
    """RowDescription: column names and their formats."""
    cur = Cursor(body)
    names: list[str] = []
    formats: list[int] = []
    for _ in range(cur.number(2)):
        names.append(cur.cstring())
        cur.take(16)  # table OID, column number, type OID, type size, type modifier
        formats.append(cur.number(2))
    return names, formats


def data_row(body: bytes, formats: list[int]) -> list[Json]:
    """DataRow: the column values, by the formats the RowDescription gave (text if none)."""
    cur = Cursor(body)
    out: list[Json] = []
    for n in range(cur.number(2)):
        size = cur.number(4)
        fmt = formats[n] if n < len(formats) else 0
        out.append(value_json(None if size == -1 else cur.take(size), fmt))
    return out


# ErrorResponse / NoticeResponse field codes
# (https://www.postgresql.org/docs/current/protocol-error-fields.html), by report name.
ERROR_FIELDS = {
    "S": "severity_local",
    "V": "severity",
    "C": "code",
    "M": "message",
    "D": "detail",
    "H": "hint",
    "P": "position",
    "p": "internal_position",
    "q": "internal_query",
    "W": "where",
    "s": "schema",
    "t": "table",
    "c": "column",
    "d": "data_type",
    "n": "constraint",
    "F": "file",
    "L": "line",
    "R": "routine",
}


def error_fields(body: bytes) -> dict[str, Json]:
    """ErrorResponse/NoticeResponse: the fields by name (``code`` is the SQLSTATE); an
    unknown field code is kept under ``field_<code>``."""
    cur = Cursor(body)
    out: dict[str, Json] = {}
    while cur.pos < len(body):
        code = cur.byte()
        if code == "\0":
            break
        out[ERROR_FIELDS.get(code, f"field_{code}")] = cur.cstring()
    if "severity" not in out and "severity_local" in out:
        out["severity"] = out["severity_local"]  # servers before 9.6 send only S
    out.pop("severity_local", None)
    return out


def command_verb(sql: str) -> str | None:
    """The statement's first keyword, upper-cased (``SELECT``), after comments."""
    text = sql.lstrip()
    while text.startswith(("--", "/*")):
        if text.startswith("--"):
            cut = text.find("\n")
            text = text[cut + 1 :].lstrip() if cut >= 0 else ""
        else:
            cut = text.find("*/")
            text = text[cut + 2 :].lstrip() if cut >= 0 else ""
    word = text.split(None, 1)[0] if text else ""
    word = word.rstrip(";(")
    return word.upper() if word.replace("_", "").isalpha() else None
