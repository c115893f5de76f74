"""Builders of Kafka protocol messages for the tests, written from the protocol guide
(https://kafka.apache.org/protocol.html) and the record batch format
(https://kafka.apache.org/documentation/#recordbatch)."""

from __future__ import annotations

import gzip
import struct
from collections.abc import Sequence

import cramjam
import zstandard


def i8(n: int) -> bytes:
    return struct.pack(">b", n)


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varint(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def string(s: str | None, flex: bool = False) -> bytes:
    if s is None:
        return uvarint(0) if flex else i16(-1)
    raw = s.encode()
    return (uvarint(len(raw) + 1) if flex else i16(len(raw))) + raw


def blob(b: bytes | None, flex: bool = False) -> bytes:
    if b is None:
        return uvarint(0) if flex else i32(-1)
    return (uvarint(len(b) + 1) if flex else i32(len(b))) + b


def array(items: Sequence[bytes], flex: bool = False) -> bytes:
    return (uvarint(len(items) + 1) if flex else i32(len(items))) + b"".join(items)


def tags(flex: bool) -> bytes:
    return b"\x00" if flex else b""


def request(
    key: int, version: int, corr: int, body: bytes, *, flex: bool, client: str = "test-client"
) -> bytes:
    head = i16(key) + i16(version) + i32(corr) + string(client) + tags(flex)
    return i32(len(head) + len(body)) + head + body


def response(corr: int, body: bytes, *, flex: bool) -> bytes:
    head = i32(corr) + tags(flex)
    return i32(len(head) + len(body)) + head + body


Rec = tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]


def record(
    n: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes]],
    ts_delta: int = 0,
) -> bytes:
    body = i8(0) + varint(ts_delta) + varint(n)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(len(headers))
    for name, v in headers:
        body += varint(len(name)) + name.encode() + varint(len(v)) + v
    return varint(len(body)) + body


def compress(codec: int, data: bytes) -> bytes:
    if codec == 1:
        return gzip.compress(data)
    if codec == 2:  # the xerial framing of the Java client, two blocks
        half = len(data) // 2
        blocks = [bytes(cramjam.snappy.compress_raw(p)) for p in (data[:half], data[half:])]
        head = b"\x82SNAPPY\x00" + i32(1) + i32(1)
        return head + b"".join(i32(len(b)) + b for b in blocks)
    if codec == 3:
        return bytes(cramjam.lz4.compress(data))
    if codec == 4:
        return zstandard.ZstdCompressor().compress(data)
    return data


def batch(
    records: Sequence[Rec],
    *,
    base: int = 0,
    codec: int = 0,
    ts: int = 1_700_000_000_000,
    log_append: bool = False,
    control: bool = False,
) -> bytes:
    body = b"".join(record(n, k, v, h, ts_delta=n) for n, (k, v, h) in enumerate(records))
    attrs = codec | (0x08 if log_append else 0) | (0x20 if control else 0)
    after_crc = (
        i16(attrs)
        + i32(len(records) - 1)
        + i64(ts)
        + i64(ts + len(records))
        + i64(-1)
        + i16(-1)
        + i32(-1)
        + i32(len(records))
        + compress(codec, body)
    )
    after_length = i32(0) + i8(2) + struct.pack(">I", 0) + after_crc  # CRC not checked
    return i64(base) + i32(len(after_length)) + after_length
