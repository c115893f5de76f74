"""Builders of AMQP 0-9-1 frames for the tests, written from the specification's wire format
and method definitions (https://www.rabbitmq.com/resources/specs/amqp0-9-1.pdf §4.2 and
its class reference; field-table types from RabbitMQ's errata,
https://www.rabbitmq.com/amqp-0-9-1-errata#section_3), independently of the decoder's
tables: each method's arguments are packed here by hand."""

from __future__ import annotations

import struct

HEADER = b"AMQP\x00\x00\x09\x01"


def frame(kind: int, channel: int, payload: bytes) -> bytes:
    return struct.pack(">BHI", kind, channel, len(payload)) + payload + b"\xce"


def shortstr(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw)]) + raw


def longstr(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


def value(v: object) -> bytes:
    """A field value: bool t, int I (l when large), float d, str S, bytes x, dict F, list A,
    None V."""
    if isinstance(v, bool):
        return b"t" + bytes([v])
    if isinstance(v, int):
        return b"I" + struct.pack(">i", v) if -(2**31) <= v < 2**31 else b"l" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"d" + struct.pack(">d", v)
    if isinstance(v, str):
        return b"S" + longstr(v.encode())
    if isinstance(v, bytes):
        return b"x" + longstr(v)
    if isinstance(v, dict):
        return b"F" + table(v)
    if isinstance(v, list):
        return b"A" + longstr(b"".join(value(i) for i in v))
    assert v is None
    return b"V"


def table(fields: dict[str, object]) -> bytes:
    return longstr(b"".join(shortstr(k) + value(v) for k, v in fields.items()))


def method(channel: int, cls: int, mid: int, args: bytes = b"") -> bytes:
    return frame(1, channel, struct.pack(">HH", cls, mid) + args)


def bits(*flags: bool) -> bytes:
    return bytes([sum(1 << n for n, f in enumerate(flags) if f)])


def u16(n: int) -> bytes:
    return struct.pack(">H", n)


def u32(n: int) -> bytes:
    return struct.pack(">I", n)


def u64(n: int) -> bytes:
    return struct.pack(">Q", n)


# -- connection ---------------------------------------------------------------------------


def start(mechanisms: str = "PLAIN AMQPLAIN") -> bytes:
    props = table({"product": "RabbitMQ", "version": "3.10.8", "capabilities":
                   {"publisher_confirms": True}})  # fmt: skip
    return method(0, 10, 10, b"\x00\x09" + props + longstr(mechanisms.encode()) + longstr(b"en_US"))


def start_ok(user: str, password: str) -> bytes:
    response = b"\0" + user.encode() + b"\0" + password.encode()
    return method(0, 10, 11, table({"product": "pika"}) + shortstr("PLAIN") + longstr(response)
                  + shortstr("en_US"))  # fmt: skip


def tune(channel_max: int = 2047, frame_max: int = 131072, heartbeat: int = 60) -> bytes:
    return method(0, 10, 30, u16(channel_max) + u32(frame_max) + u16(heartbeat))


def tune_ok(channel_max: int = 2047, frame_max: int = 131072, heartbeat: int = 60) -> bytes:
    return method(0, 10, 31, u16(channel_max) + u32(frame_max) + u16(heartbeat))


def open_(vhost: str = "/") -> bytes:
    return method(0, 10, 40, shortstr(vhost) + shortstr("") + bits(False))


def open_ok() -> bytes:
    return method(0, 10, 41, shortstr(""))


def close(channel: int, code: int, text: str, cls: int = 0, mid: int = 0) -> bytes:
    return method(channel, 10 if channel == 0 else 20, 50 if channel == 0 else 40,
                  u16(code) + shortstr(text) + u16(cls) + u16(mid))  # fmt: skip


def close_ok(channel: int) -> bytes:
    return method(channel, 10 if channel == 0 else 20, 51 if channel == 0 else 41)


def channel_open(channel: int) -> bytes:
    return method(channel, 20, 10, shortstr(""))


def channel_open_ok(channel: int) -> bytes:
    return method(channel, 20, 11, longstr(b""))


def heartbeat() -> bytes:
    return frame(8, 0, b"")


# -- exchange, queue ----------------------------------------------------------------------


def exchange_declare(channel: int, name: str, kind: str, **arguments: object) -> bytes:
    args = u16(0) + shortstr(name) + shortstr(kind) + bits(False, True, False, False, False)
    return method(channel, 40, 10, args + table(arguments))


def exchange_declare_ok(channel: int) -> bytes:
    return method(channel, 40, 11)


def queue_declare(channel: int, name: str, arguments: dict[str, object] | None = None,
                  *, passive: bool = False) -> bytes:  # fmt: skip
    args = u16(0) + shortstr(name) + bits(passive, True, False, False, False)
    return method(channel, 50, 10, args + table(arguments or {}))


def queue_declare_ok(channel: int, name: str, messages: int = 0, consumers: int = 0) -> bytes:
    return method(channel, 50, 11, shortstr(name) + u32(messages) + u32(consumers))


def queue_bind(channel: int, queue: str, exchange: str, key: str) -> bytes:
    args = u16(0) + shortstr(queue) + shortstr(exchange) + shortstr(key) + bits(False)
    return method(channel, 50, 20, args + table({}))


def queue_bind_ok(channel: int) -> bytes:
    return method(channel, 50, 21)


# -- basic, confirm -----------------------------------------------------------------------


def qos(channel: int, prefetch: int) -> bytes:
    return method(channel, 60, 10, u32(0) + u16(prefetch) + bits(False))


def qos_ok(channel: int) -> bytes:
    return method(channel, 60, 11)


def consume(channel: int, queue: str, tag: str = "", *, no_wait: bool = False) -> bytes:
    args = u16(0) + shortstr(queue) + shortstr(tag) + bits(False, False, False, no_wait)
    return method(channel, 60, 20, args + table({}))


def consume_ok(channel: int, tag: str) -> bytes:
    return method(channel, 60, 21, shortstr(tag))


def cancel(channel: int, tag: str) -> bytes:
    return method(channel, 60, 30, shortstr(tag) + bits(False))


def cancel_ok(channel: int, tag: str) -> bytes:
    return method(channel, 60, 31, shortstr(tag))


PROPS = ("content_type", "content_encoding", "headers", "delivery_mode", "priority",
         "correlation_id", "reply_to", "expiration", "message_id", "timestamp", "type",
         "user_id", "app_id", "cluster_id")  # fmt: skip


def content(channel: int, body: bytes, **props: object) -> bytes:
    """A content header (basic class) with the properties given, then the body frames."""
    flags = 0
    packed = b""
    for n, name in enumerate(PROPS):
        if name not in props:
            continue
        flags |= 1 << (15 - n)
        v = props[name]
        if name == "headers":
            assert isinstance(v, dict)
            packed += table(v)
        elif name in ("delivery_mode", "priority"):
            assert isinstance(v, int)
            packed += bytes([v])
        elif name == "timestamp":
            assert isinstance(v, int)
            packed += u64(v)
        else:
            assert isinstance(v, str)
            packed += shortstr(v)
    out = frame(2, channel, u16(60) + u16(0) + u64(len(body)) + u16(flags) + packed)
    step = 131072 - 8  # RabbitMQ's default frame-max, less the frame's overhead
    for i in range(0, len(body), step):
        out += frame(3, channel, body[i : i + step])
    return out


def publish(channel: int, exchange: str, key: str, body: bytes, **props: object) -> bytes:
    args = u16(0) + shortstr(exchange) + shortstr(key) + bits(False, False)
    return method(channel, 60, 40, args) + content(channel, body, **props)


def deliver(channel: int, tag: str, delivery: int, exchange: str, key: str, body: bytes,
            *, redelivered: bool = False, **props: object) -> bytes:  # fmt: skip
    args = shortstr(tag) + u64(delivery) + bits(redelivered) + shortstr(exchange) + shortstr(key)
    return method(channel, 60, 60, args) + content(channel, body, **props)


def get(channel: int, queue: str) -> bytes:
    return method(channel, 60, 70, u16(0) + shortstr(queue) + bits(False))


def get_ok(channel: int, delivery: int, exchange: str, key: str, left: int, body: bytes,
           **props: object) -> bytes:  # fmt: skip
    args = u64(delivery) + bits(False) + shortstr(exchange) + shortstr(key) + u32(left)
    return method(channel, 60, 71, args) + content(channel, body, **props)


def get_empty(channel: int) -> bytes:
    return method(channel, 60, 72, shortstr(""))


def ack(channel: int, tag: int, *, multiple: bool = False) -> bytes:
    return method(channel, 60, 80, u64(tag) + bits(multiple))


def nack(channel: int, tag: int, *, multiple: bool = False, requeue: bool = True) -> bytes:
    return method(channel, 60, 120, u64(tag) + bits(multiple, requeue))


def reject(channel: int, tag: int, *, requeue: bool) -> bytes:
    return method(channel, 60, 90, u64(tag) + bits(requeue))


def basic_return(channel: int, code: int, text: str, exchange: str, key: str,
                 body: bytes) -> bytes:  # fmt: skip
    args = u16(code) + shortstr(text) + shortstr(exchange) + shortstr(key)
    return method(channel, 60, 50, args) + content(channel, body)


def confirm_select(channel: int) -> bytes:
    return method(channel, 85, 10, bits(False))


def confirm_select_ok(channel: int) -> bytes:
    return method(channel, 85, 11)
