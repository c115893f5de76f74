"""AMQP 0-9-1 frames and the values they carry: bytes of one direction -> :class:`Frame`,
a method frame's payload -> (:class:`Method`, arguments), a content header's payload ->
(body size, properties).

The formats are those of the AMQP 0-9-1 specification (https://www.rabbitmq.com/resources/
specs/amqp0-9-1.pdf, §4.2 "Wire-level format") with RabbitMQ's errata for field tables
(https://www.rabbitmq.com/amqp-0-9-1-errata#section_3): a frame is ``type (octet), channel
(short), size (long), payload, frame-end 0xCE``; types 1 (method), 2 (content header),
3 (body), 8 (heartbeat; the spec's ``4`` is accepted too). Integers are big-endian; a
short string has an octet length, a long string a long length; consecutive bit arguments
share octets, lowest bit first. Field table types are RabbitMQ's: ``t`` boolean, ``b``/``B``
signed/unsigned 8-bit, ``s``/``u`` signed/unsigned 16-bit, ``I``/``i`` signed/unsigned
32-bit, ``l`` signed 64-bit, ``f``/``d`` float/double, ``D`` decimal, ``S`` long string,
``A`` array, ``T`` timestamp, ``F`` nested table, ``V`` void, ``x`` byte array.

Hand-written: no maintained Python library decodes AMQP 0-9-1 passively (pika and py-amqp
are client endpoints).
"""

from __future__ import annotations

import base64
import re
import struct
from dataclasses import dataclass
from typing import Any

from agentshark.errors import Diagnostic
from agentshark.wire.events import Json
from agentshark.wire.resync import MORE, NOT, Buffer, Recovery, Rule

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_METHOD, FRAME_HEADER, FRAME_BODY, FRAME_HEARTBEAT = 1, 2, 3, 8
FRAME_END = 0xCE
MAX_FRAME = 1 << 24  # a frame larger than this (RabbitMQ's default frame-max is 128 KiB) is noise
MAX_DEPTH = 32  # nesting of tables and arrays


class AmqpError(ValueError):
    """Bytes that are not what the format says (short, or a type that does not exist)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One frame of a direction: its type, channel, payload, and its offset in the direction."""

    type: int
    channel: int
    payload: bytes
    offset: int
    damaged: bool = False  # bytes of it were not captured: ``payload`` is empty
    ts: float = 0.0  # of the bytes that finished it


MAX_RESYNC = 1 << 20  # a frame after a gap is believed up to this size (frame-max is 128 KiB)


def _measure(buf: Buffer, pos: int) -> int:
    """A well-formed frame at ``pos`` (see :mod:`agentshark.wire.resync`): a type that
    exists, a size that fits, the frame-end octet where the size puts it, and a payload that
    fits its type (a method of the table, a basic content header, an empty heartbeat)."""
    if len(buf) - pos < 7:
        return MORE
    ftype, channel, size = _FRAME_HEAD.unpack_from(buf, pos)
    if size > MAX_RESYNC:
        return NOT
    end = pos + 7 + size
    if len(buf) <= end:
        return MORE
    if buf[end] != FRAME_END:
        return NOT
    if ftype == FRAME_METHOD:
        if size < 4 or _KEY.unpack_from(buf, pos + 7) not in METHODS:
            return NOT
    elif ftype == FRAME_HEADER:
        if size < 14 or buf[pos + 7 : pos + 11] != b"\x00\x3c\x00\x00":  # basic, weight 0
            return NOT
    elif ftype == FRAME_HEARTBEAT and (channel or size):
        return NOT
    return int(size) + 8


RESYNC = Rule(
    starts=re.compile(b"(?=[\\x01\\x02\\x03\\x08][\\x00-\\x07])"), measure=_measure, chain=2
)


class FrameReader:
    """Cuts one direction's bytes into frames. The client's direction starts with the
    protocol header (``header``: the 8 bytes seen, or None); the server's may too, when it
    refuses the client's version (§4.2.2). A wrong frame-end octet or a size past
    :data:`MAX_FRAME` ends the direction (``error``): no marker tells where the next frame is.
    A capture gap inside a frame whose header came gives that frame out ``damaged``; after
    a gap at a frame boundary (or past the frame it began in) the reader hunts for the next
    frame (:mod:`agentshark.wire.resync`, :data:`RESYNC`)."""

    __slots__ = ("_buf", "_rec", "error", "header", "lost", "offset", "resynced", "want_header")

    def __init__(self, *, want_header: bool, location: str = "") -> None:
        self._buf = bytearray()
        self._rec: Recovery[Frame] = Recovery(RESYNC, prefix="amqp", location=location)
        self.offset = 0  # direction offset of _buf[0]
        self.want_header = want_header
        self.header: bytes | None = None
        self.lost = False  # nothing more of the direction is read
        self.error: str | None = None  # why, when bytes were no frame
        self.resynced: list[tuple[Diagnostic, int]] = []  # (its Diagnostic, bytes skipped)

    @property
    def left(self) -> int:
        """Bytes of a frame (or of the header) not finished yet."""
        return len(self._buf)

    @property
    def hunting(self) -> bool:
        return self._rec.hunting

    def feed(self, data: bytes, ts: float = 0.0) -> list[Frame]:
        """The frames finished by ``data``; after bytes that are no frame, those before
        them, and ``error`` says what was wrong (nothing more is read)."""
        if self.lost:
            return []
        rec = self._rec
        out: list[Frame] = []
        if rec.skip:
            released, rest = rec.skip_data(data, ts)
            self.offset += len(data) - len(rest)
            out.extend(released)
            data = rest
        if rec.hunting and data:
            diagnostics, at, chunks = rec.feed(data, ts)
            if chunks:
                self.resynced.append((diagnostics[0], rec.skipped))
                self.offset = at
                for chunk, chunk_ts in chunks:
                    out.extend(self.feed(chunk, chunk_ts))
            return out
        if not data and not self._buf:
            return out
        return out + self._frames(data, ts)

    def _frames(self, data: bytes, ts: float) -> list[Frame]:
        buf = self._buf
        buf += data
        out: list[Frame] = []
        pos = 0
        try:
            start = self._header(buf)
            if start is None:
                return out
            pos = start
            size_all = len(buf)
            while size_all - pos >= 7:
                ftype, channel, size = _FRAME_HEAD.unpack_from(buf, pos)
                if size > MAX_FRAME:
                    raise AmqpError(f"a frame of {size} bytes (type {ftype}): not a frame")
                end = pos + 7 + size
                if end >= size_all:
                    break
                if buf[end] != FRAME_END:
                    raise AmqpError(f"frame-end octet {buf[end]:#x}, not 0xce (type {ftype})")
                payload = bytes(buf[pos + 7 : end])
                out.append(Frame(type=ftype, channel=channel, payload=payload,
                                 offset=self.offset + pos, ts=ts))  # fmt: skip
                pos = end + 1
        except AmqpError as exc:
            self.error = str(exc)
            self.lost = True
        del buf[:pos]
        self.offset += pos
        return out

    def gap(self, size: int) -> list[Frame | Diagnostic]:
        """``size`` bytes were never captured: a frame whose header came is given out
        damaged (its rest skipped), else the hunt for the next frame begins."""
        if self.lost:
            return []
        rec = self._rec
        out: list[Frame | Diagnostic] = []
        if rec.hunting:
            out.append(rec.hunt(0, size, "before a frame boundary was found again"))
            return out
        if rec.skip:
            released, past = rec.skip_gap(size, 0.0)
            self.offset += size - past
            out.extend(released)
            if not past:
                return out
            size = past
        elif len(self._buf) >= 7 and not self.want_header:
            ftype, channel, length = _FRAME_HEAD.unpack_from(self._buf, 0)
            need = 8 + length - len(self._buf)
            if length <= MAX_FRAME and 0 < size <= need:
                frame = Frame(type=ftype, channel=channel, payload=b"", offset=self.offset,
                              damaged=True)  # fmt: skip
                self.offset += len(self._buf) + size
                self._buf.clear()
                out.extend(rec.skip_rest(need - size, frame, 0.0))
                return out
        held = len(self._buf)
        self._buf.clear()
        self.want_header = False
        where = "at a frame boundary" if not held else f"inside a frame ({held} bytes held)"
        out.append(rec.hunt(self.offset + held, size, where))
        return out

    def close(self) -> list[Diagnostic]:
        return self._rec.close()

    def _header(self, buf: bytearray) -> int | None:
        """Where the frames start: past the protocol header, when this direction has one
        (None: more bytes are needed to tell)."""
        if not (self.want_header or (self.offset == 0 and buf[:4] == b"AMQP"[: len(buf)])):
            return 0
        if len(buf) < 8:
            return None
        self.want_header = False
        if buf[:4] != b"AMQP":
            raise AmqpError(f"not the AMQP protocol header: {bytes(buf[:8])!r}")
        self.header = bytes(buf[:8])
        return 8


_FRAME_HEAD = struct.Struct(">BHI")
_KEY = struct.Struct(">HH")


def text(data: bytes) -> Json:
    """A long string or byte array as JSON: text when UTF-8, else ``{"base64": ...}``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


class Cursor:
    """Reads the spec's data types from a payload, raising :class:`AmqpError` when short."""

    __slots__ = ("bits", "data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos
        self.bits: tuple[int, int] | None = None  # (octet, next bit) while packing bits

    def _short_of(self, n: int) -> AmqpError:
        left = len(self.data) - self.pos
        return AmqpError(f"{n} bytes wanted at payload byte {self.pos}, {left} left")

    def take(self, n: int) -> bytes:
        pos = self.pos
        end = pos + n
        if end > len(self.data):
            raise self._short_of(n)
        self.pos = end
        self.bits = None
        return self.data[pos:end]

    def unpack(self, fmt: struct.Struct) -> Any:
        pos = self.pos
        end = pos + fmt.size
        if end > len(self.data):
            raise self._short_of(fmt.size)
        self.pos = end
        self.bits = None
        return fmt.unpack_from(self.data, pos)[0]

    def octet(self) -> int:
        return int(self.unpack(_U8))

    def short(self) -> int:
        return int(self.unpack(_U16))

    def long(self) -> int:
        return int(self.unpack(_U32))

    def longlong(self) -> int:
        return int(self.unpack(_U64))

    def shortstr(self) -> str:
        data, pos = self.data, self.pos
        if pos >= len(data):
            raise self._short_of(1)
        end = pos + 1 + data[pos]
        if end > len(data):
            raise self._short_of(end - pos)
        self.pos = end
        self.bits = None
        return data[pos + 1 : end].decode("utf-8", "backslashreplace")

    def longstr(self) -> bytes:
        return self.take(self.long())

    def bit(self) -> bool:
        if self.bits is None or self.bits[1] == 8:
            octet = self.octet()
            self.bits = (octet, 0)
        octet, n = self.bits
        self.bits = (octet, n + 1)
        return bool(octet >> n & 1)

    def table(self, depth: int = 0) -> dict[str, Json]:
        """A field table (§4.2.5.5): long size, then (short string name, type, value)."""
        inner = Cursor(self.take(self.long()))
        out: dict[str, Json] = {}
        while inner.pos < len(inner.data):
            name = inner.shortstr()
            out[name] = inner.field(depth + 1)
        return out

    def field(self, depth: int) -> Json:
        if depth > MAX_DEPTH:
            raise AmqpError(f"field tables nested deeper than {MAX_DEPTH}")
        kind = chr(self.octet())
        fixed = _FIXED.get(kind)
        if fixed is not None:
            value = self.unpack(fixed)
            return bool(value) if kind == "t" else value
        if kind == "S":
            return text(self.longstr())
        if kind == "x":
            return {"base64": base64.b64encode(self.longstr()).decode()}
        if kind == "F":
            return self.table(depth)
        if kind == "A":
            inner = Cursor(self.take(self.long()))
            items = []
            while inner.pos < len(inner.data):
                items.append(inner.field(depth + 1))
            return items
        if kind == "D":
            scale = self.octet()
            value = int(self.unpack(_I32))
            return {"decimal": f"{value}e-{scale}" if scale else str(value)}
        if kind == "V":
            return None
        raise AmqpError(f"field type {kind!r} does not exist")


_U8, _U16, _U32, _U64, _I32 = (struct.Struct(f) for f in (">B", ">H", ">I", ">Q", ">i"))
_FIXED: dict[str, struct.Struct] = {
    kind: struct.Struct(fmt)
    for kind, fmt in (
        ("t", ">B"), ("b", ">b"), ("B", ">B"), ("s", ">h"), ("u", ">H"), ("I", ">i"),
        ("i", ">I"), ("l", ">q"), ("f", ">f"), ("d", ">d"), ("T", ">Q"),
    )
}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Method:
    """One method of the spec's class/method table: its name, its arguments (name, type:
    ``o`` octet, ``s`` short, ``l`` long, ``L`` long long, ``n`` short string, ``S`` long
    string, ``b`` bit, ``t`` table, ``T`` timestamp), the replies a synchronous method
    waits for, and whether content follows it."""

    name: str
    args: tuple[tuple[str, str], ...]
    replies: tuple[str, ...] = ()
    content: bool = False


def _m(name: str, args: str = "", replies: str = "", *, content: bool = False) -> Method:
    pairs = tuple((a.split(":")[0], a.split(":")[1]) for a in args.split())
    return Method(name=name, args=pairs, replies=tuple(replies.split()), content=content)


_CLOSE = "reply_code:s reply_text:n class_id:s method_id:s"
METHODS: dict[tuple[int, int], Method] = {
    (10, 10): _m("connection.start", "version_major:o version_minor:o server_properties:t "
                 "mechanisms:S locales:S", "connection.start-ok"),
    (10, 11): _m("connection.start-ok", "client_properties:t mechanism:n response:S locale:n"),
    (10, 20): _m("connection.secure", "challenge:S", "connection.secure-ok"),
    (10, 21): _m("connection.secure-ok", "response:S"),
    (10, 30): _m("connection.tune", "channel_max:s frame_max:l heartbeat:s", "connection.tune-ok"),
    (10, 31): _m("connection.tune-ok", "channel_max:s frame_max:l heartbeat:s"),
    (10, 40): _m("connection.open", "virtual_host:n capabilities:n insist:b", "connection.open-ok"),
    (10, 41): _m("connection.open-ok", "known_hosts:n"),
    (10, 50): _m("connection.close", _CLOSE, "connection.close-ok"),
    (10, 51): _m("connection.close-ok"),
    (10, 60): _m("connection.blocked", "reason:n"),
    (10, 61): _m("connection.unblocked"),
    (10, 70): _m("connection.update-secret", "new_secret:S reason:n",
                 "connection.update-secret-ok"),
    (10, 71): _m("connection.update-secret-ok"),
    (20, 10): _m("channel.open", "reserved_1:n", "channel.open-ok"),
    (20, 11): _m("channel.open-ok", "reserved_1:S"),
    (20, 20): _m("channel.flow", "active:b", "channel.flow-ok"),
    (20, 21): _m("channel.flow-ok", "active:b"),
    (20, 40): _m("channel.close", _CLOSE, "channel.close-ok"),
    (20, 41): _m("channel.close-ok"),
    (40, 10): _m("exchange.declare", "reserved_1:s exchange:n type:n passive:b durable:b "
                 "auto_delete:b internal:b no_wait:b arguments:t", "exchange.declare-ok"),
    (40, 11): _m("exchange.declare-ok"),
    (40, 20): _m("exchange.delete", "reserved_1:s exchange:n if_unused:b no_wait:b",
                 "exchange.delete-ok"),
    (40, 21): _m("exchange.delete-ok"),
    (40, 30): _m("exchange.bind", "reserved_1:s destination:n source:n routing_key:n "
                 "no_wait:b arguments:t", "exchange.bind-ok"),
    (40, 31): _m("exchange.bind-ok"),
    (40, 40): _m("exchange.unbind", "reserved_1:s destination:n source:n routing_key:n "
                 "no_wait:b arguments:t", "exchange.unbind-ok"),
    (40, 51): _m("exchange.unbind-ok"),
    (50, 10): _m("queue.declare", "reserved_1:s queue:n passive:b durable:b exclusive:b "
                 "auto_delete:b no_wait:b arguments:t", "queue.declare-ok"),
    (50, 11): _m("queue.declare-ok", "queue:n message_count:l consumer_count:l"),
    (50, 20): _m("queue.bind", "reserved_1:s queue:n exchange:n routing_key:n no_wait:b "
                 "arguments:t", "queue.bind-ok"),
    (50, 21): _m("queue.bind-ok"),
    (50, 30): _m("queue.purge", "reserved_1:s queue:n no_wait:b", "queue.purge-ok"),
    (50, 31): _m("queue.purge-ok", "message_count:l"),
    (50, 40): _m("queue.delete", "reserved_1:s queue:n if_unused:b if_empty:b no_wait:b",
                 "queue.delete-ok"),
    (50, 41): _m("queue.delete-ok", "message_count:l"),
    (50, 50): _m("queue.unbind", "reserved_1:s queue:n exchange:n routing_key:n arguments:t",
                 "queue.unbind-ok"),
    (50, 51): _m("queue.unbind-ok"),
    (60, 10): _m("basic.qos", "prefetch_size:l prefetch_count:s global:b", "basic.qos-ok"),
    (60, 11): _m("basic.qos-ok"),
    (60, 20): _m("basic.consume", "reserved_1:s queue:n consumer_tag:n no_local:b no_ack:b "
                 "exclusive:b no_wait:b arguments:t", "basic.consume-ok"),
    (60, 21): _m("basic.consume-ok", "consumer_tag:n"),
    (60, 30): _m("basic.cancel", "consumer_tag:n no_wait:b", "basic.cancel-ok"),
    (60, 31): _m("basic.cancel-ok", "consumer_tag:n"),
    (60, 40): _m("basic.publish", "reserved_1:s exchange:n routing_key:n mandatory:b "
                 "immediate:b", content=True),
    (60, 50): _m("basic.return", "reply_code:s reply_text:n exchange:n routing_key:n",
                 content=True),
    (60, 60): _m("basic.deliver", "consumer_tag:n delivery_tag:L redelivered:b exchange:n "
                 "routing_key:n", content=True),
    (60, 70): _m("basic.get", "reserved_1:s queue:n no_ack:b", "basic.get-ok basic.get-empty"),
    (60, 71): _m("basic.get-ok", "delivery_tag:L redelivered:b exchange:n routing_key:n "
                 "message_count:l", content=True),
    (60, 72): _m("basic.get-empty", "reserved_1:n"),
    (60, 80): _m("basic.ack", "delivery_tag:L multiple:b"),
    (60, 90): _m("basic.reject", "delivery_tag:L requeue:b"),
    (60, 100): _m("basic.recover-async", "requeue:b"),
    (60, 110): _m("basic.recover", "requeue:b", "basic.recover-ok"),
    (60, 111): _m("basic.recover-ok"),
    (60, 120): _m("basic.nack", "delivery_tag:L multiple:b requeue:b"),
    (85, 10): _m("confirm.select", "no_wait:b", "confirm.select-ok"),
    (85, 11): _m("confirm.select-ok"),
    (90, 10): _m("tx.select", "", "tx.select-ok"),
    (90, 11): _m("tx.select-ok"),
    (90, 20): _m("tx.commit", "", "tx.commit-ok"),
    (90, 21): _m("tx.commit-ok"),
    (90, 30): _m("tx.rollback", "", "tx.rollback-ok"),
    (90, 31): _m("tx.rollback-ok"),
}  # fmt: skip
BY_NAME = {m.name: key for key, m in METHODS.items()}
SECRET_ARGUMENTS = frozenset(("response", "new_secret"))  # start-ok, secure-ok, update-secret


def method_frame(payload: bytes) -> tuple[Method, dict[str, Json]]:
    """A method frame's payload (§4.2.4): class id, method id, arguments. An unknown
    class/method raises :class:`AmqpError`; secret arguments are read past, never kept
    (their names are in the result with the value None)."""
    cur = Cursor(payload)
    key = (cur.short(), cur.short())
    method = METHODS.get(key)
    if method is None:
        raise AmqpError(f"no method {key[0]}.{key[1]} in AMQP 0-9-1")
    args: dict[str, Json] = {}
    for name, kind in method.args:
        if kind == "b":
            args[name] = cur.bit()
        elif kind == "n":
            args[name] = cur.shortstr()
        elif kind == "S":
            raw = cur.longstr()
            args[name] = None if name in SECRET_ARGUMENTS else text(raw)
        elif kind == "t":
            args[name] = cur.table()
        else:
            args[name] = cur.unpack(_ARG_FIXED[kind])
    return method, args


_ARG_FIXED: dict[str, struct.Struct] = {"o": _U8, "s": _U16, "l": _U32, "L": _U64, "T": _U64}

# basic's content properties, by flag bit from bit 15 down (§4.2.6.1, the basic class)
PROPERTIES: tuple[tuple[str, str], ...] = (
    ("content_type", "n"),
    ("content_encoding", "n"),
    ("headers", "t"),
    ("delivery_mode", "o"),
    ("priority", "o"),
    ("correlation_id", "n"),
    ("reply_to", "n"),
    ("expiration", "n"),
    ("message_id", "n"),
    ("timestamp", "T"),
    ("type", "n"),
    ("user_id", "n"),
    ("app_id", "n"),
    ("cluster_id", "n"),
)


def content_header(payload: bytes) -> tuple[int, int, dict[str, Json]]:
    """A content header's payload (§4.2.6): class id, weight, body size, property flags
    (a flag word's bit 0 says another flag word follows), then the properties present."""
    cur = Cursor(payload)
    class_id = cur.short()
    cur.short()  # weight: unused, zero
    body_size = cur.longlong()
    words = [cur.short()]
    while words[-1] & 1:
        words.append(cur.short())
    flags = words[0]
    if flags & 0b10 or any(w & ~1 for w in words[1:]):
        raise AmqpError("property flags past cluster-id: not the basic class's properties")
    props: dict[str, Json] = {}
    for bit, (name, kind) in zip(range(15, 1, -1), PROPERTIES, strict=True):
        if not flags >> bit & 1:
            continue
        if kind == "n":
            props[name] = cur.shortstr()
        elif kind == "t":
            props[name] = cur.table()
        else:
            props[name] = cur.unpack(_ARG_FIXED[kind])
    return class_id, body_size, props
