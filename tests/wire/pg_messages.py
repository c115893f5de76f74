"""Builders of PostgreSQL v3 messages for the tests, written from the protocol's message
formats (https://www.postgresql.org/docs/current/protocol-message-formats.html), and a
driver that feeds a conversation to a decoder whole, byte by byte, or in uneven chunks."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentshark.wire.events import Operation, WireDecoder


def msg(kind: bytes, body: bytes) -> bytes:
    return kind + (len(body) + 4).to_bytes(4, "big") + body


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def i16(n: int) -> bytes:
    return n.to_bytes(2, "big", signed=True)


def i32(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def startup(**params: str) -> bytes:
    body = i32(196608) + b"".join(cstr(k) + cstr(v) for k, v in params.items()) + b"\0"
    return i32(len(body) + 4) + body


def ssl_request() -> bytes:
    return i32(8) + i32(80877103)


def cancel_request(pid: int, key: int) -> bytes:
    return i32(16) + i32(80877102) + i32(pid) + i32(key)


def query(sql: str) -> bytes:
    return msg(b"Q", cstr(sql))


def parse(sql: str, name: str = "", oids: Sequence[int] = ()) -> bytes:
    return msg(b"P", cstr(name) + cstr(sql) + i16(len(oids)) + b"".join(i32(o) for o in oids))


def bind(params: Sequence[bytes | None], formats: Sequence[int] = (), stmt: str = "") -> bytes:
    body = cstr("") + cstr(stmt) + i16(len(formats)) + b"".join(i16(f) for f in formats)
    body += i16(len(params))
    for p in params:
        body += i32(-1) if p is None else i32(len(p)) + p
    return msg(b"B", body + i16(0))


def describe_portal() -> bytes:
    return msg(b"D", b"P" + cstr(""))


def execute(max_rows: int = 0) -> bytes:
    return msg(b"E", cstr("") + i32(max_rows))


def sync() -> bytes:
    return msg(b"S", b"")


def password(secret: str) -> bytes:
    return msg(b"p", cstr(secret))


def auth(code: int, extra: bytes = b"") -> bytes:
    return msg(b"R", i32(code) + extra)


def parameter_status(name: str, value: str) -> bytes:
    return msg(b"S", cstr(name) + cstr(value))


def ready(status: bytes = b"I") -> bytes:
    return msg(b"Z", status)


def row_description(*names: str) -> bytes:
    cols = b"".join(cstr(n) + i32(0) + i16(0) + i32(25) + i16(-1) + i32(-1) + i16(0) for n in names)
    return msg(b"T", i16(len(names)) + cols)


def data_row(*values: bytes | None) -> bytes:
    body = i16(len(values))
    for v in values:
        body += i32(-1) if v is None else i32(len(v)) + v
    return msg(b"D", body)


def command_complete(tag: str) -> bytes:
    return msg(b"C", cstr(tag))


def error(code: str, message: str, severity: str = "ERROR") -> bytes:
    fields = b"S" + cstr(severity) + b"V" + cstr(severity) + b"C" + cstr(code)
    return msg(b"E", fields + b"M" + cstr(message) + b"\0")


def parse_complete() -> bytes:
    return msg(b"1", b"")


def bind_complete() -> bytes:
    return msg(b"2", b"")


def no_data() -> bytes:
    return msg(b"n", b"")


Step = tuple[int, bytes]  # (direction, bytes)


def feed(
    make: Callable[[], WireDecoder], steps: Sequence[Step], *, chunk: int | None = None
) -> tuple[list[Operation], WireDecoder]:
    """Each step's bytes in order (whole, or ``chunk`` bytes at a time), then close."""
    decoder = make()
    out: list[Operation] = []
    ts = 1.0
    for direction, data in steps:
        size = chunk or len(data) or 1
        for i in range(0, len(data), size):
            ts += 0.001
            out.extend(decoder.feed(direction, data[i : i + size], ts))
    out.extend(decoder.end(0, ts, clean=True))
    out.extend(decoder.end(1, ts, clean=True))
    out.extend(decoder.close())
    return out, decoder


def facts(ops: Sequence[Operation]) -> list[tuple[object, ...]]:
    """What must not depend on how the bytes were cut (times aside)."""
    return [
        (
            o.kind,
            o.command,
            o.statement,
            tuple(map(repr, o.parameters)),
            o.result,
            o.rows,
            tuple(o.columns),
            repr(o.error),
            o.request_complete,
            o.response_complete,
            repr(o.values),
            repr(sorted(o.details.items())),
        )
        for o in ops
    ]
