"""The AWS event stream framing: ``application/vnd.amazon.eventstream`` body bytes ->
:class:`EventStreamMessage` (Bedrock ConverseStream, InvokeModelWithResponseStream...).

Each message, big-endian (as botocore ``eventstream.py`` reads it)::

    total length u32 | headers length u32 | prelude CRC32 (of the 8 bytes before it)
    headers | payload | message CRC32 (of every byte before it)

A header is name length u8, name, value type u8, value: 0 true, 1 false (no value), 2 i8,
3 i16, 4 i32, 5 i64, 6 bytes (u16 length), 7 UTF-8 string (u16 length), 8 timestamp (i64
milliseconds), 9 UUID (16 bytes). The CRC is CRC-32/IEEE, ``zlib.crc32``.

The decoder keeps evidence: a CRC mismatch is an ``eventstream.crc_mismatch`` Diagnostic and
the message is still emitted; malformed headers give ``eventstream.bad_headers`` and the
headers read so far. A length that no message can have (under 16 bytes, over 16 MiB, headers
longer than the message) leaves no way to find the next message: ``eventstream.bad_length``,
and the rest of the body is skipped. A body ending inside a message gives
``eventstream.truncated``.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Callable

from agentshark.errors import Diagnostic
from agentshark.framing.events import EventStreamMessage, FramingOutput, at

PRELUDE_LENGTH = 12
MIN_MESSAGE_LENGTH = 16  # prelude + message CRC
MAX_MESSAGE_LENGTH = 16 << 20

_PRELUDE = struct.Struct(">III")
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")


class _BadHeadersError(Exception):
    """Headers run past their block or use an unknown type (internal)."""


_Reader = Callable[[bytes, int, list[str]], tuple[object, int]]


def _fixed(fmt: str) -> _Reader:
    s = struct.Struct(fmt)

    def read(block: bytes, pos: int, _problems: list[str]) -> tuple[object, int]:
        if pos + s.size > len(block):
            raise _BadHeadersError("a header value runs past the header block")
        return s.unpack_from(block, pos)[0], pos + s.size

    return read


def _bytes(block: bytes, pos: int, _problems: list[str]) -> tuple[object, int]:
    if pos + 2 > len(block):
        raise _BadHeadersError("a header value length runs past the header block")
    (n,) = _U16.unpack_from(block, pos)
    end = pos + 2 + n
    if end > len(block):
        raise _BadHeadersError("a header value runs past the header block")
    return block[pos + 2 : end], end


def _string(block: bytes, pos: int, problems: list[str]) -> tuple[object, int]:
    raw, end = _bytes(block, pos, problems)
    assert isinstance(raw, bytes)
    try:
        return raw.decode(), end
    except UnicodeDecodeError:
        problems.append(f"a string header value is not UTF-8 (at header byte {pos})")
        return raw.decode(errors="replace"), end


def _uuid(block: bytes, pos: int, _problems: list[str]) -> tuple[object, int]:
    if pos + 16 > len(block):
        raise _BadHeadersError("a UUID header value runs past the header block")
    return uuid.UUID(bytes=block[pos : pos + 16]), pos + 16


def _true(_block: bytes, pos: int, _problems: list[str]) -> tuple[object, int]:
    return True, pos


def _false(_block: bytes, pos: int, _problems: list[str]) -> tuple[object, int]:
    return False, pos


_VALUE_READERS: dict[int, _Reader] = {
    0: _true,
    1: _false,
    2: _fixed(">b"),
    3: _fixed(">h"),
    4: _fixed(">i"),
    5: _fixed(">q"),
    6: _bytes,
    7: _string,
    8: _fixed(">q"),  # milliseconds since the epoch
    9: _uuid,
}


def parse_headers(block: bytes) -> tuple[dict[str, object], list[str]]:
    """The headers of one message, and what was wrong with the block (empty when nothing).

    A malformed block stops the parse: the headers before the problem are returned.
    """
    headers: dict[str, object] = {}
    problems: list[str] = []
    pos = 0
    try:
        while pos < len(block):
            name_end = pos + 1 + block[pos]
            if name_end + 1 > len(block):
                raise _BadHeadersError("a header name runs past the header block")
            name = block[pos + 1 : name_end].decode(errors="replace")
            kind = block[name_end]
            reader = _VALUE_READERS.get(kind)
            if reader is None:
                raise _BadHeadersError(f"header {name!r} has unknown value type {kind}")
            headers[name], pos = reader(block, name_end + 1, problems)
    except _BadHeadersError as exc:
        problems.append(f"{exc} (at header byte {pos})")
    return headers, problems


class EventStreamDecoder:
    """Incremental AWS event stream decoder; see the module docstring."""

    def __init__(self, *, location: str = "") -> None:
        self._location = location
        self._buf = bytearray()
        self._base = 0  # body offset of self._buf[0]
        self._stopped = False

    def feed(self, data: bytes, ts: float) -> list[FramingOutput]:
        out: list[FramingOutput] = []
        if self._stopped:
            return out
        buf = self._buf
        buf += data
        pos = 0
        while len(buf) - pos >= PRELUDE_LENGTH:
            total, headers_len, prelude_crc = _PRELUDE.unpack_from(buf, pos)
            if not MIN_MESSAGE_LENGTH <= total <= MAX_MESSAGE_LENGTH or (
                headers_len > total - MIN_MESSAGE_LENGTH
            ):
                out.append(self._bad_length(total, headers_len, pos))
                self._stopped = True
                buf.clear()
                return out
            if len(buf) - pos < total:
                break
            message = bytes(buf[pos : pos + total])
            self._message(message, headers_len, prelude_crc, self._base + pos, ts, out)
            pos += total
        if pos:
            del buf[:pos]
            self._base += pos
        return out

    def close(self, ts: float) -> list[FramingOutput]:
        out: list[FramingOutput] = []
        if self._buf and not self._stopped:
            out.append(
                Diagnostic(
                    code="eventstream.truncated",
                    message=f"the body ends {len(self._buf)} bytes into a message",
                    location=at(self._location, self._base),
                )
            )
        self._buf.clear()
        self._stopped = True
        return out

    def _message(
        self,
        message: bytes,
        headers_len: int,
        prelude_crc: int,
        offset: int,
        ts: float,
        out: list[FramingOutput],
    ) -> None:
        if zlib.crc32(message[:8]) != prelude_crc:
            out.append(self._crc_mismatch("prelude", prelude_crc, zlib.crc32(message[:8]), offset))
        (message_crc,) = _U32.unpack_from(message, len(message) - 4)
        actual = zlib.crc32(message[:-4])
        if actual != message_crc:
            out.append(self._crc_mismatch("message", message_crc, actual, offset))
        headers_end = PRELUDE_LENGTH + headers_len
        headers, problems = parse_headers(message[PRELUDE_LENGTH:headers_end])
        out.extend(
            Diagnostic(
                code="eventstream.bad_headers",
                message=f"malformed message headers: {problem}",
                location=at(self._location, offset),
            )
            for problem in problems
        )
        payload = message[headers_end:-4]
        out.append(EventStreamMessage(headers=headers, payload=payload, ts=ts, offset=offset))

    def _crc_mismatch(self, what: str, expected: int, actual: int, offset: int) -> Diagnostic:
        return Diagnostic(
            code="eventstream.crc_mismatch",
            message=f"{what} CRC is {expected:#010x} but the bytes give {actual:#010x}; "
            "the message is kept as it is",
            location=at(self._location, offset),
        )

    def _bad_length(self, total: int, headers_len: int, pos: int) -> Diagnostic:
        return Diagnostic(
            code="eventstream.bad_length",
            message=f"a message claims {total} bytes with {headers_len} bytes of headers, "
            f"which no message can have ({MIN_MESSAGE_LENGTH}..{MAX_MESSAGE_LENGTH}); "
            "the rest of the body is not decoded",
            location=at(self._location, self._base + pos),
        )
