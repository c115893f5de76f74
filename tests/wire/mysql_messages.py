"""MySQL packets built from the protocol's formats, for the decoder's tests
(https://dev.mysql.com/doc/dev/mysql-server/latest/PAGE_PROTOCOL.html)."""

from __future__ import annotations

import struct
import zlib

from agentshark.wire.mysql_parse import (
    CLIENT_COMPRESS,
    CLIENT_CONNECT_WITH_DB,
    CLIENT_DEPRECATE_EOF,
    CLIENT_MULTI_STATEMENTS,
    CLIENT_PLUGIN_AUTH,
    CLIENT_PLUGIN_AUTH_LENENC,
    CLIENT_PROTOCOL_41,
    CLIENT_SECURE_CONNECTION,
    CLIENT_SSL,
)

BASE_CAPS = (
    1  # CLIENT_LONG_PASSWORD (CLIENT_MYSQL): no MariaDB extended capabilities
    | CLIENT_PROTOCOL_41
    | CLIENT_SECURE_CONNECTION
    | CLIENT_PLUGIN_AUTH
    | CLIENT_PLUGIN_AUTH_LENENC
    | CLIENT_CONNECT_WITH_DB
    | CLIENT_MULTI_STATEMENTS
)
SCRAMBLE = b"scramble-20-bytes!!!"


def packet(seq: int, payload: bytes) -> bytes:
    """One packet, or the 0xFFFFFF-byte parts of a longer payload."""
    out = b""
    while True:
        part, payload = payload[:0xFFFFFF], payload[0xFFFFFF:]
        out += len(part).to_bytes(3, "little") + bytes([seq & 0xFF]) + part
        seq += 1
        if len(part) < 0xFFFFFF:
            return out


def lenenc(n: int) -> bytes:
    if n < 0xFB:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def lstr(data: bytes | str) -> bytes:
    raw = data.encode() if isinstance(data, str) else data
    return lenenc(len(raw)) + raw


def greeting(caps: int = BASE_CAPS | CLIENT_DEPRECATE_EOF | CLIENT_SSL | CLIENT_COMPRESS) -> bytes:
    body = (
        b"\x0a8.0.36\0"
        + struct.pack("<I", 42)
        + SCRAMBLE[:8]
        + b"\0"
        + struct.pack("<HBHH", caps & 0xFFFF, 45, 2, caps >> 16 & 0xFFFF)
        + bytes([21])
        + bytes(10)
        + SCRAMBLE[8:]
        + b"\0mysql_native_password\0"
    )
    return packet(0, body)


def login(caps: int, user: str, secret: bytes, database: str = "notes", seq: int = 1) -> bytes:
    body = struct.pack("<IIB", caps, 1 << 24, 45) + bytes(23) + user.encode() + b"\0"
    body += lstr(secret) + database.encode() + b"\0" + b"mysql_native_password\0"
    return packet(seq, body)


def ssl_request(caps: int) -> bytes:
    return packet(1, struct.pack("<IIB", caps | CLIENT_SSL, 1 << 24, 45) + bytes(23))


def ok(seq: int, affected: int = 0, insert_id: int = 0, status: int = 2, head: int = 0) -> bytes:
    body = bytes([head]) + lenenc(affected) + lenenc(insert_id) + struct.pack("<HH", status, 0)
    return packet(seq, body)


def eof(seq: int, status: int = 2) -> bytes:
    return packet(seq, b"\xfe" + struct.pack("<HH", 0, status))


def err(seq: int, number: int, state: str, message: str) -> bytes:
    return packet(
        seq, b"\xff" + struct.pack("<H", number) + b"#" + state.encode() + message.encode()
    )


def command(code: int, payload: bytes = b"") -> bytes:
    return packet(0, bytes([code]) + payload)


def query(sql: str) -> bytes:
    return command(0x03, sql.encode())


def column(name: str, kind: int = 0xFD, flags: int = 0) -> bytes:
    fixed = struct.pack("<HIBHB", 45, 255, kind, flags, 0) + b"\0\0"
    return (
        lstr("def")
        + lstr("notes")
        + lstr("t")
        + lstr("t")
        + lstr(name)
        + lstr(name)
        + (lenenc(len(fixed)) + fixed)
    )


def text_row(*values: str | None) -> bytes:
    return b"".join(b"\xfb" if v is None else lstr(v) for v in values)


def result_set(
    seq: int, columns: list[str], rows: list[tuple[str | None, ...]], *, eofs: bool, status: int = 2
) -> bytes:
    """A text result set from ``seq``: the column count, definitions, (EOF), rows, end."""
    out = packet(seq, lenenc(len(columns)))
    seq += 1
    for name in columns:
        out += packet(seq, column(name))
        seq += 1
    if eofs:
        out += eof(seq)
        seq += 1
    for row in rows:
        out += packet(seq, text_row(*row))
        seq += 1
    return out + (eof(seq, status) if eofs else ok(seq, status=status, head=0xFE))


def prepare_ok(stmt_id: int, params: int, columns: list[tuple[str, int]], *, eofs: bool) -> bytes:
    out = packet(1, b"\x00" + struct.pack("<IHHBH", stmt_id, len(columns), params, 0, 0))
    seq = 2
    for n in range(params):
        out += packet(seq, column(f"?{n}"))
        seq += 1
    if params and eofs:
        out += eof(seq)
        seq += 1
    for name, kind in columns:
        out += packet(seq, column(name, kind))
        seq += 1
    if columns and eofs:
        out += eof(seq)
    return out


def execute(stmt_id: int, params: list[tuple[int, bytes | None]], *, bind: bool = True) -> bytes:
    """COM_STMT_EXECUTE with (type, raw value) parameters; None is NULL."""
    body = struct.pack("<IBI", stmt_id, 0, 1)
    if params:
        bitmap = bytearray((len(params) + 7) // 8)
        for n, (_kind, value) in enumerate(params):
            if value is None:
                bitmap[n >> 3] |= 1 << (n & 7)
        body += bytes(bitmap) + (b"\x01" if bind else b"\x00")
        if bind:
            body += b"".join(bytes([kind, 0]) for kind, _ in params)
        body += b"".join(v for _, v in params if v is not None)
    return command(0x17, body)


def binary_result(seq: int, columns: list[tuple[str, int]], rows: list[bytes]) -> bytes:
    """A binary result set (deprecate-EOF form): rows given as their value bytes, no NULLs."""
    out = packet(seq, lenenc(len(columns)))
    seq += 1
    for name, kind in columns:
        out += packet(seq, column(name, kind))
        seq += 1
    bitmap = bytes((len(columns) + 9) // 8)
    for row in rows:
        out += packet(seq, b"\x00" + bitmap + row)
        seq += 1
    return out + ok(seq, head=0xFE)


def compressed(data: bytes, seq: int, *, deflate: bool = True) -> bytes:
    """``data`` (packets) as one compressed packet."""
    if deflate:
        payload = zlib.compress(data)
        return (
            len(payload).to_bytes(3, "little")
            + bytes([seq])
            + len(data).to_bytes(3, "little")
            + payload
        )
    return len(data).to_bytes(3, "little") + bytes([seq]) + b"\0\0\0" + data
