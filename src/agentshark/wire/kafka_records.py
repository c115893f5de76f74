"""Kafka record batches (https://kafka.apache.org/documentation/#recordbatch): a partition's
RECORDS bytes -> :class:`Record` values.

A batch (magic 2) is ``baseOffset:int64 batchLength:int32 partitionLeaderEpoch:int32
magic:int8 crc:uint32 attributes:int16 lastOffsetDelta:int32 baseTimestamp:int64
maxTimestamp:int64 producerId:int64 producerEpoch:int16 baseSequence:int32 records:[Record]``;
the records after ``recordsCount`` are compressed as attributes bits 0-2 say (0 none, 1 gzip,
2 snappy, 3 lz4 frame, 4 zstd), bit 3 says the timestamps are the broker's
(LogAppendTime: every record's is ``maxTimestamp``), bit 5 marks a control batch (a
transaction marker, no application record). A record is ``length:varint attributes:int8
timestampDelta:varlong offsetDelta:varint key:varint-bytes value:varint-bytes
headers:[varint-string varint-bytes]``, its offset ``baseOffset + offsetDelta``.

The CRC-32C is not checked (a capture's TCP checksums cover the bytes already). A Fetch
response may end in a partial batch (the broker cuts at its byte limit and the client skips
it): counted in ``partial_bytes``, not an error. Legacy message sets (magic 0 and 1) are
counted, not decoded (``legacy_batches``). Decompression is bounded (:data:`MAX_INFLATED`
per batch) with the libraries made for each codec: zlib, cramjam (snappy, lz4), zstandard.
Value and key bytes are kept while the caller's budget lasts; past it a record keeps its
sizes only (``cut``).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

import cramjam
import zstandard

from agentshark.wire.kafka_codec import Cursor, KafkaDecodeError

MAX_INFLATED = 64 << 20  # bytes one compressed batch may inflate to
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
_HEAD = struct.Struct(">qiibIhiqqqhii")  # the 61 bytes of a batch before its records
_XERIAL = b"\x82SNAPPY\x00"


@dataclass(slots=True)
class Record:
    """One application record (not frozen: one is made per record; treat it as immutable)."""

    offset: int  # baseOffset + offsetDelta (a producer's batch has baseOffset 0)
    delta: int
    timestamp: int  # epoch milliseconds
    key: bytes | None
    value: bytes | None
    value_size: int  # -1: a null value (a tombstone)
    headers: list[tuple[str, bytes | None]]
    codec: str
    cut: bool = False  # its key/value bytes were not kept (the budget was spent)


@dataclass(slots=True, kw_only=True)
class Batches:
    """What one RECORDS field held."""

    records: list[Record] = field(default_factory=list)
    batches: int = 0
    control_batches: int = 0
    legacy_batches: int = 0
    partial_bytes: int = 0  # a trailing partial batch (normal at the end of a Fetch)
    errors: list[str] = field(default_factory=list)
    first_offset: int | None = None  # the first batch's baseOffset
    producer_id: int | None = None


class Budget:
    """Key and value bytes an operation may still keep."""

    __slots__ = ("left",)

    def __init__(self, size: int) -> None:
        self.left = size


def read_batches(data: bytes, budget: Budget) -> Batches:
    """Every batch of ``data``; a damaged batch ends the field with an error message."""
    out = Batches()
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < 17:
            out.partial_bytes = end - pos
            break
        base, length, _epoch, magic = struct.unpack_from(">qiib", data, pos)
        if length < 0 or (magic == 2 and length < 49):
            out.errors.append(f"a batch length of {length} at byte {pos}")
            break
        if pos + 12 + length > end:
            out.partial_bytes = end - pos
            break
        if out.first_offset is None:
            out.first_offset = base
        if magic != 2:
            out.legacy_batches += 1
        else:
            try:
                _batch(data, pos, pos + 12 + length, out, budget)
            except (KafkaDecodeError, ValueError) as exc:
                out.errors.append(f"the batch at byte {pos}: {exc}")
                break
        pos += 12 + length
    return out


def _batch(data: bytes, pos: int, stop: int, out: Batches, budget: Budget) -> None:
    (base, _len, _epoch, _magic, _crc, attrs, _last, first_ts, max_ts, pid, _pe, _seq,
     count) = _HEAD.unpack_from(data, pos)  # fmt: skip
    out.batches += 1
    out.producer_id = pid if pid >= 0 else out.producer_id
    if attrs & 0x20:
        out.control_batches += 1
        return
    codec = attrs & 0x07
    if codec >= len(CODECS):
        raise KafkaDecodeError(f"compression {codec} is none of Kafka's")
    body = data[pos + 61 : stop]
    if codec:
        body = inflate(CODECS[codec], body)
    fixed = max_ts if attrs & 0x08 else None  # LogAppendTime: the broker's, for every record
    name = CODECS[codec]
    records = out.records
    at, end = 0, len(body)
    for _ in range(count):
        at = _record(body, at, end, base, first_ts, fixed, name, budget, records)
    if at != end:
        raise KafkaDecodeError(f"{end - at} bytes after its {count} records")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos``: (its value, the position after it). One- and two-byte
    varints (every length below 8 KiB) take the fast path."""
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    n = b & 0x7F
    b = data[pos + 1]
    if b < 0x80:
        n |= b << 7
        return (n >> 1) ^ -(n & 1), pos + 2
    cur = Cursor(data, pos=pos)
    return cur.varint(), cur.pos


def _record(data: bytes, pos: int, end: int, base: int, first_ts: int, fixed: int | None,
            codec: str, budget: Budget, out: list[Record]) -> int:  # fmt: skip
    """One record at ``pos`` appended to ``out``; the position after it."""
    try:
        length, pos = _varint(data, pos)
        stop = pos + length
        if length < 0 or stop > end:
            raise KafkaDecodeError(f"a record of {length} bytes at byte {pos}")
        ts_delta, pos = _varint(data, pos + 1)  # after the attributes byte (unused)
        delta, pos = _varint(data, pos)
        size, pos = _varint(data, pos)
        key = None
        if size >= 0:
            key, pos = data[pos : pos + size], pos + size
        value_size, pos = _varint(data, pos)
        value = None
        if value_size >= 0:
            value, pos = data[pos : pos + value_size], pos + value_size
        count, pos = _varint(data, pos)
        headers = []
        for _ in range(count):
            size, pos = _varint(data, pos)
            name = data[pos : pos + max(size, 0)].decode("utf-8", "replace")
            size, pos = _varint(data, pos + max(size, 0))
            hvalue = None
            if size >= 0:
                hvalue, pos = data[pos : pos + size], pos + size
            headers.append((name, hvalue))
    except IndexError:
        raise KafkaDecodeError(f"a record cut at byte {pos}") from None
    if pos != stop:
        raise KafkaDecodeError(f"a record's fields end at byte {pos}, not {stop}")
    kept = (len(key) if key else 0) + max(value_size, 0)
    cut = kept > budget.left
    if cut:
        key = value = None
    else:
        budget.left -= kept
    ts = fixed if fixed is not None else first_ts + ts_delta
    out.append(Record(base + delta, delta, ts, key, value, value_size, headers, codec, cut))
    return stop


def inflate(codec: str, data: bytes) -> bytes:
    """One batch's records, decompressed (at most :data:`MAX_INFLATED` bytes)."""
    try:
        if codec == "gzip":
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out = d.decompress(data, MAX_INFLATED + 1)
        elif codec == "zstd":
            with zstandard.ZstdDecompressor().stream_reader(data) as reader:
                out = reader.read(MAX_INFLATED + 1)
        elif codec == "lz4":
            out = _lz4(data)
        else:
            out = _snappy(data)
    except (zlib.error, zstandard.ZstdError, cramjam.DecompressionError) as exc:
        raise KafkaDecodeError(f"its {codec} data does not decompress ({exc})") from None
    if len(out) > MAX_INFLATED:
        raise KafkaDecodeError(f"its {codec} data inflates past {MAX_INFLATED} bytes")
    return out


def _lz4(data: bytes) -> bytes:
    """An LZ4 frame. LZ4 inflates a block at most 255-fold, so a small frame is decompressed
    at once; a larger one into a buffer that grows (only when it was too small) up to the
    bound."""
    if len(data) * 255 <= MAX_INFLATED:
        return bytes(cramjam.lz4.decompress(data))
    size = min(MAX_INFLATED, 16 * len(data))
    while True:
        buf = bytearray(size)
        try:
            n = cramjam.lz4.decompress_into(data, buf)
        except cramjam.DecompressionError as exc:
            if size >= MAX_INFLATED or "whole buffer" not in str(exc):
                raise
            size = min(MAX_INFLATED, size * 4)
            continue
        return bytes(buf[:n])


def _snappy(data: bytes) -> bytes:
    """Raw snappy, or the xerial framing the Java client writes: a 16-byte header
    (magic, version, compatible version), then blocks of ``size:int32 raw-snappy``."""
    if not data.startswith(_XERIAL):
        return _snappy_raw(data)
    parts: list[bytes] = []
    pos, total = 16, 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise KafkaDecodeError("a xerial snappy block size cut")
        size = int.from_bytes(data[pos : pos + 4])
        block = data[pos + 4 : pos + 4 + size]
        if len(block) != size:
            raise KafkaDecodeError("a xerial snappy block cut")
        parts.append(_snappy_raw(block))
        total += len(parts[-1])
        if total > MAX_INFLATED:
            raise KafkaDecodeError(f"its snappy data inflates past {MAX_INFLATED} bytes")
        pos += 4 + size
    return b"".join(parts)


def _snappy_raw(data: bytes) -> bytes:
    size = cramjam.snappy.decompress_raw_len(data)
    if size > MAX_INFLATED:
        raise KafkaDecodeError(f"its snappy data inflates past {MAX_INFLATED} bytes")
    return bytes(cramjam.snappy.decompress_raw(data))
