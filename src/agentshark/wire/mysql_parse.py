"""Payloads of MySQL client/server protocol packets -> values
(https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_data_types.html and the
pages of each packet it links).

Each parser takes a payload and returns what it holds, or raises :class:`BadPacketError` (a
payload shorter than its fields say, a string without its NUL); the session turns that into
a Diagnostic. Values are kept as sent: a text-protocol value as a string (the bytes as base64
when they are not UTF-8), NULL as None; a binary-protocol value by its column or parameter
type (:func:`binary_value`), with its raw bytes when its type is not a string type.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from agentshark.wire.pgsql_parse import value_json

Json = Any

# Capability flags (include/mysql_com.h, CLIENT_*), the ones the decoder reads.
CLIENT_CONNECT_WITH_DB = 1 << 3
CLIENT_COMPRESS = 1 << 5
CLIENT_PROTOCOL_41 = 1 << 9
CLIENT_SSL = 1 << 11
CLIENT_SECURE_CONNECTION = 1 << 15
CLIENT_MULTI_STATEMENTS = 1 << 16
CLIENT_PLUGIN_AUTH = 1 << 19
CLIENT_CONNECT_ATTRS = 1 << 20
CLIENT_PLUGIN_AUTH_LENENC = 1 << 21
CLIENT_SESSION_TRACK = 1 << 23
CLIENT_DEPRECATE_EOF = 1 << 24
CLIENT_OPTIONAL_RESULTSET_METADATA = 1 << 25
CLIENT_ZSTD_COMPRESSION = 1 << 26
CLIENT_QUERY_ATTRIBUTES = 1 << 27
MARIADB_CLIENT_EXTENDED_METADATA = 1 << 35  # MariaDB's extended capabilities, from bit 32
SERVER_MORE_RESULTS_EXISTS = 0x0008
SERVER_SESSION_STATE_CHANGED = 0x4000
UNSIGNED_FLAG = 0x20  # of a column definition's flags

CAPABILITY_NAMES = {
    0: "LONG_PASSWORD",
    1: "FOUND_ROWS",
    2: "LONG_FLAG",
    3: "CONNECT_WITH_DB",
    4: "NO_SCHEMA",
    5: "COMPRESS",
    6: "ODBC",
    7: "LOCAL_FILES",
    8: "IGNORE_SPACE",
    9: "PROTOCOL_41",
    10: "INTERACTIVE",
    11: "SSL",
    12: "IGNORE_SIGPIPE",
    13: "TRANSACTIONS",
    14: "RESERVED",
    15: "SECURE_CONNECTION",
    16: "MULTI_STATEMENTS",
    17: "MULTI_RESULTS",
    18: "PS_MULTI_RESULTS",
    19: "PLUGIN_AUTH",
    20: "CONNECT_ATTRS",
    21: "PLUGIN_AUTH_LENENC_CLIENT_DATA",
    22: "CAN_HANDLE_EXPIRED_PASSWORDS",
    23: "SESSION_TRACK",
    24: "DEPRECATE_EOF",
    25: "OPTIONAL_RESULTSET_METADATA",
    26: "ZSTD_COMPRESSION",
    27: "QUERY_ATTRIBUTES",
    28: "MULTI_FACTOR_AUTHENTICATION",
    29: "CAPABILITY_EXTENSION",
    30: "SSL_VERIFY_SERVER_CERT",
    31: "REMEMBER_OPTIONS",
    32: "MARIADB_PROGRESS",
    33: "MARIADB_COM_MULTI",
    34: "MARIADB_STMT_BULK_OPERATIONS",
    35: "MARIADB_EXTENDED_METADATA",
    36: "MARIADB_CACHE_METADATA",
}

COMMAND_NAMES = {
    0x00: "SLEEP",
    0x01: "QUIT",
    0x02: "INIT_DB",
    0x03: "QUERY",
    0x04: "FIELD_LIST",
    0x05: "CREATE_DB",
    0x06: "DROP_DB",
    0x07: "REFRESH",
    0x08: "SHUTDOWN",
    0x09: "STATISTICS",
    0x0A: "PROCESS_INFO",
    0x0B: "CONNECT",
    0x0C: "PROCESS_KILL",
    0x0D: "DEBUG",
    0x0E: "PING",
    0x0F: "TIME",
    0x10: "DELAYED_INSERT",
    0x11: "CHANGE_USER",
    0x12: "BINLOG_DUMP",
    0x13: "TABLE_DUMP",
    0x14: "CONNECT_OUT",
    0x15: "REGISTER_SLAVE",
    0x16: "STMT_PREPARE",
    0x17: "STMT_EXECUTE",
    0x18: "STMT_SEND_LONG_DATA",
    0x19: "STMT_CLOSE",
    0x1A: "STMT_RESET",
    0x1B: "SET_OPTION",
    0x1C: "STMT_FETCH",
    0x1D: "DAEMON",
    0x1E: "BINLOG_DUMP_GTID",
    0x1F: "RESET_CONNECTION",
}

# Column and parameter types (include/field_types.h, enum_field_types), by their names.
TYPE_NAMES = {
    0x00: "DECIMAL",
    0x01: "TINY",
    0x02: "SHORT",
    0x03: "LONG",
    0x04: "FLOAT",
    0x05: "DOUBLE",
    0x06: "NULL",
    0x07: "TIMESTAMP",
    0x08: "LONGLONG",
    0x09: "INT24",
    0x0A: "DATE",
    0x0B: "TIME",
    0x0C: "DATETIME",
    0x0D: "YEAR",
    0x0E: "NEWDATE",
    0x0F: "VARCHAR",
    0x10: "BIT",
    0x11: "TIMESTAMP2",
    0x12: "DATETIME2",
    0x13: "TIME2",
    0xF5: "JSON",
    0xF6: "NEWDECIMAL",
    0xF7: "ENUM",
    0xF8: "SET",
    0xF9: "TINY_BLOB",
    0xFA: "MEDIUM_BLOB",
    0xFB: "LONG_BLOB",
    0xFC: "BLOB",
    0xFD: "VAR_STRING",
    0xFE: "STRING",
    0xFF: "GEOMETRY",
}
# binary protocol: integers and floats by their fixed sizes (signed struct formats)
_FIXED = {0x01: "<b", 0x02: "<h", 0x0D: "<h", 0x03: "<i", 0x09: "<i", 0x08: "<q"}
_FLOATS = {0x04: "<f", 0x05: "<d"}
_TEXT_TYPES = frozenset((0x0F, 0xF7, 0xF8, 0xFD, 0xFE, 0xF5, 0x00, 0xF6))
_BLOB_TYPES = frozenset((0x10, 0xF9, 0xFA, 0xFB, 0xFC, 0xFF))
_TEMPORAL = frozenset((0x07, 0x0A, 0x0C, 0x0B, 0x0E, 0x11, 0x12, 0x13))


class BadPacketError(ValueError):
    """A payload that does not hold what its place in the conversation says."""


class Reader:
    """Reads a payload front to back (little-endian integers, length-encoded values)."""

    __slots__ = ("body", "pos")

    def __init__(self, body: bytes, pos: int = 0) -> None:
        self.body = body
        self.pos = pos

    @property
    def left(self) -> int:
        return len(self.body) - self.pos

    def number(self, size: int) -> int:
        end = self.pos + size
        if end > len(self.body):
            raise BadPacketError(f"the payload ends at byte {len(self.body)}, inside a field")
        value = int.from_bytes(self.body[self.pos : end], "little")
        self.pos = end
        return value

    def lenenc(self) -> int | None:
        """A length-encoded integer; None for 0xFB (NULL in a text row)."""
        first = self.number(1)
        if first < 0xFB:
            return first
        if first == 0xFB:
            return None
        if first == 0xFC:
            return self.number(2)
        if first == 0xFD:
            return self.number(3)
        if first == 0xFE:
            return self.number(8)
        raise BadPacketError(f"0xff at byte {self.pos - 1} starts no length-encoded integer")

    def take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.body):
            raise BadPacketError(
                f"a value of {size} bytes at byte {self.pos} passes the payload's end"
            )
        data = self.body[self.pos : end]
        self.pos = end
        return data

    def lenenc_bytes(self) -> bytes | None:
        size = self.lenenc()
        return None if size is None else self.take(size)

    def lenenc_text(self) -> str:
        return (self.lenenc_bytes() or b"").decode("utf-8", "replace")

    def cstring(self) -> str:
        end = self.body.find(b"\0", self.pos)
        if end < 0:
            raise BadPacketError(f"a string at byte {self.pos} has no NUL terminator")
        text = self.body[self.pos : end].decode("utf-8", "replace")
        self.pos = end + 1
        return text

    def rest(self) -> bytes:
        data = self.body[self.pos :]
        self.pos = len(self.body)
        return data


def capability_names(flags: int) -> list[str]:
    return [name for bit, name in CAPABILITY_NAMES.items() if flags >> bit & 1]


def greeting(body: bytes) -> dict[str, Json]:
    """Handshake v10
    (https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_handshake_v10.html):
    what it says of the server, and its capabilities (MariaDB's extended ones above bit 32).
    The scramble (auth-plugin-data) is read past, never kept."""
    cur = Reader(body)
    protocol = cur.number(1)
    if protocol != 10:
        raise BadPacketError(f"handshake protocol version {protocol}, not 10")
    out: dict[str, Json] = {"server_version": cur.cstring(), "connection_id": cur.number(4)}
    cur.take(9)  # auth-plugin-data part 1, filler
    caps = cur.number(2)
    if cur.left:
        out["charset"] = cur.number(1)
        out["status_flags"] = cur.number(2)
        caps |= cur.number(2) << 16
        data_len = cur.number(1)
        cur.take(6)
        extended = cur.number(4)  # MariaDB: its capabilities when CLIENT_MYSQL (bit 0) is clear
        if not caps & 1:
            caps |= extended << 32
        if caps & CLIENT_SECURE_CONNECTION:
            cur.take(max(13, data_len - 8))
        if caps & CLIENT_PLUGIN_AUTH and cur.left:
            end = body.find(b"\0", cur.pos)
            out["auth_plugin"] = body[cur.pos : end if end >= 0 else len(body)].decode(
                "utf-8", "replace"
            )
    out["capabilities"] = caps
    return out


def handshake_response(body: bytes) -> dict[str, Json]:
    """HandshakeResponse41 or an SSLRequest (its first 32 bytes): capabilities, user,
    database, plugin, connection attributes. The auth response is read past, never kept."""
    cur = Reader(body)
    caps = cur.number(4)
    out: dict[str, Json] = {"max_packet": cur.number(4), "charset": cur.number(1)}
    filler = cur.take(23)
    if not caps & 1:  # MariaDB's extended capabilities in the filler's last 4 bytes
        caps |= int.from_bytes(filler[19:23], "little") << 32
    out["capabilities"] = caps
    if not cur.left:
        return out  # an SSLRequest
    out["user"] = cur.cstring()
    if caps & CLIENT_PLUGIN_AUTH_LENENC:
        auth = cur.lenenc_bytes() or b""
    elif caps & CLIENT_SECURE_CONNECTION:
        auth = cur.take(cur.number(1))
    else:
        auth = cur.cstring().encode()
    out["auth_response_bytes"] = len(auth)
    if caps & CLIENT_CONNECT_WITH_DB and cur.left:
        out["database"] = cur.cstring()
    if caps & CLIENT_PLUGIN_AUTH and cur.left:
        out["auth_plugin"] = cur.cstring()
    if caps & CLIENT_CONNECT_ATTRS and cur.left:
        attrs = Reader(cur.lenenc_bytes() or b"")
        pairs: dict[str, str] = {}
        while attrs.left:
            name = attrs.lenenc_text()
            pairs[name] = attrs.lenenc_text()
        out["attributes"] = pairs
    return out


def ok_packet(body: bytes, caps: int) -> dict[str, Json]:
    """OK (0x00) or an OK-shaped end of rows (0xFE): affected rows, last insert id, status,
    warnings, info."""
    cur = Reader(body, 1)
    out: dict[str, Json] = {"affected_rows": cur.lenenc(), "last_insert_id": cur.lenenc()}
    if caps & CLIENT_PROTOCOL_41 or not caps:
        out["status_flags"] = cur.number(2)
        out["warnings"] = cur.number(2)
    if cur.left:
        if caps & CLIENT_SESSION_TRACK:
            info = cur.lenenc_text()
            if out.get("status_flags", 0) & SERVER_SESSION_STATE_CHANGED and cur.left:
                out["session_state_bytes"] = len(cur.lenenc_bytes() or b"")
        else:  # servers write it length-encoded all the same (net_store_data)
            rest = cur.rest()
            probe = Reader(rest)
            text = probe.lenenc_bytes() if rest[0] < 0xFB else None
            info = (text if text is not None and not probe.left else rest).decode(
                "utf-8", "replace"
            )
        if info:
            out["info"] = info
    return out


def eof_packet(body: bytes) -> dict[str, Json]:
    """EOF (0xFE, 5 bytes): warnings, status."""
    cur = Reader(body, 1)
    return {"warnings": cur.number(2), "status_flags": cur.number(2)}


def error_packet(body: bytes) -> dict[str, Json]:
    """ERR (0xFF): ``code`` is the SQLSTATE (as PostgreSQL's errors name theirs), ``number``
    the server's error number; an error sent before the handshake has no SQLSTATE."""
    cur = Reader(body, 1)
    number = cur.number(2)
    out: dict[str, Json] = {"code": None, "number": number}
    if body[3:4] == b"#" and len(body) >= 9:
        cur.take(1)
        out["code"] = cur.take(5).decode("latin-1")
    out["message"] = cur.rest().decode("utf-8", "replace")
    return out


def column_definition(body: bytes, extended: bool) -> tuple[str, int, int]:
    """ColumnDefinition41: the column's name, type and flags (``extended``: MariaDB's
    extended metadata string before the fixed fields)."""
    cur = Reader(body)
    for _ in range(4):  # catalog, schema, table, org_table
        cur.take(cur.lenenc() or 0)
    name = cur.lenenc_text()
    cur.take(cur.lenenc() or 0)  # org_name
    if extended:
        cur.take(cur.lenenc() or 0)
    fixed = cur.lenenc() or 0
    if fixed < 10:
        raise BadPacketError(f"a column definition's fixed fields are {fixed} bytes, not 12")
    cur.take(6)  # character set, column length
    kind = cur.number(1)
    flags = cur.number(2)
    return name, kind, flags


def text_row(body: bytes) -> list[Json]:
    """A text-protocol row: length-encoded strings, 0xFB for NULL."""
    cur = Reader(body)
    out: list[Json] = []
    while cur.left:
        out.append(value_json(cur.lenenc_bytes(), 0))
    return out


def binary_row(body: bytes, types: list[tuple[int, bool]]) -> list[Json]:
    """A binary-protocol row (0x00, a NULL bitmap with 2 bits of offset, the values): each
    value by its column's type and signedness."""
    cur = Reader(body, 1)
    bitmap = cur.take((len(types) + 9) // 8)
    out: list[Json] = []
    for n, (kind, unsigned) in enumerate(types):
        bit = n + 2
        if bitmap[bit >> 3] >> (bit & 7) & 1:
            out.append(None)
        else:
            out.append(binary_value(cur, kind, unsigned))
    return out


def binary_value(cur: Reader, kind: int, unsigned: bool) -> Json:
    """One binary-protocol value
    (https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_binary_resultset.html):
    a string type's value as its text (base64 when not UTF-8); any other as
    ``{"format": "binary", "type", "base64", "value"}`` with the value its type reads to (an
    integer, a float, an ISO date or time)."""
    if kind in _TEXT_TYPES:
        return value_json(cur.lenenc_bytes(), 0)
    if kind == 0x06:
        return None
    start = cur.pos
    value: Json
    if kind in _FIXED:
        fmt = _FIXED[kind]
        raw = cur.take(struct.calcsize(fmt))
        value = int.from_bytes(raw, "little", signed=not unsigned)
    elif kind in _FLOATS:
        fmt = _FLOATS[kind]
        raw = cur.take(struct.calcsize(fmt))
        value = float(struct.unpack(fmt, raw)[0])
    elif kind in _TEMPORAL:
        size = cur.number(1)
        value = _temporal(kind, cur.take(size))
    elif kind in _BLOB_TYPES:
        raw = cur.lenenc_bytes() or b""
        return {"format": "binary", "type": TYPE_NAMES[kind], "base64": _b64(raw)}
    else:
        raise BadPacketError(f"a value of type {kind:#04x}, which the binary protocol lacks")
    raw = cur.body[start : cur.pos]
    return {"format": "binary", "type": TYPE_NAMES[kind], "base64": _b64(raw), "value": value}


def _temporal(kind: int, raw: bytes) -> Json:
    size = len(raw)
    if kind in (0x0B, 0x13):  # TIME: negative, days, hours, minutes, seconds, micros
        if size == 0:
            return "00:00:00"
        if size not in (8, 12):
            raise BadPacketError(f"a TIME value of {size} bytes")
        neg, days, h, m, s = struct.unpack_from("<BIBBB", raw)
        micro = int.from_bytes(raw[8:12], "little") if size == 12 else 0
        text = f"{'-' if neg else ''}{days * 24 + h:02d}:{m:02d}:{s:02d}"
        return text + (f".{micro:06d}" if micro else "")
    if size not in (0, 4, 7, 11):
        raise BadPacketError(f"a date/time value of {size} bytes")
    y, mo, d = struct.unpack_from("<HBB", raw) if size else (0, 0, 0)
    if kind in (0x0A, 0x0E):
        return f"{y:04d}-{mo:02d}-{d:02d}"
    h, mi, s = struct.unpack_from("<BBB", raw, 4) if size >= 7 else (0, 0, 0)
    micro = int.from_bytes(raw[7:11], "little") if size == 11 else 0
    text = f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"
    return text + (f".{micro:06d}" if micro else "")


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
