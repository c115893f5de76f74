"""RESP2/RESP3 values (https://redis.io/docs/latest/develop/reference/protocol-spec/): one
direction's bytes -> values, incrementally.

Types: ``+`` simple string, ``-`` error, ``:`` integer, ``$`` bulk string (``$-1``: null),
``*`` array (``*-1``: null); RESP3 adds ``_`` null, ``#`` boolean, ``,`` double, ``(`` big
number, ``!`` bulk error, ``=`` verbatim string, ``%`` map, ``~`` set, ``>`` push and ``|``
attributes (kept apart, before the value they describe). A client may also send an inline
command: a line of space-separated words.

Values come out as :class:`RespValue` (kind letter and Python value: bytes for strings,
int, float, bool, None, a list of RespValue, a list of pairs for a map). A value that is not
complete yet is parsed again when more bytes came; a bulk string's announced length says how
many bytes to wait for, so a large value is not re-parsed chunk by chunk.

RESP has no length before a value, so a capture gap leaves no way to step over the rest of
one: after any gap the reader hunts (:mod:`agentshark.wire.resync`) for the next value that
parses whole: for the client a command (an array of bulk strings), for the server any value,
two in a row or one that ends where the bytes received end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentshark.errors import Diagnostic
from agentshark.wire.resync import MORE, NOT, Buffer, Recovery, Rule

MAX_LINE = 64 * 1024  # a type line (or inline command) longer than this is not RESP
MAX_ITEMS = 1 << 20  # elements of one aggregate
MAX_BULK = 512 << 20  # Redis' proto-max-bulk-len default


class RespError(ValueError):
    """Bytes that are not RESP: the direction cannot be read further."""


class _Incomplete(Exception):  # noqa: N818 - a control-flow signal, not an error
    def __init__(self, need: int) -> None:
        self.need = need  # the buffer must hold at least this many bytes to go on


@dataclass(frozen=True, slots=True, kw_only=True)
class RespValue:
    kind: str  # the type byte ('*', '$', '+'...; 'inline' for an inline command)
    value: Any
    offset: int  # where it starts in the direction's stream
    size: int  # bytes on the wire
    attributes: Any = None  # a RESP3 attribute map sent before it
    ts: float = 0.0  # of the bytes that finished it


AGGREGATES = frozenset("*%~>|")
_DOLLAR = ord("$")


def _line(buf: bytes | bytearray, pos: int) -> tuple[bytes, int]:
    end = buf.find(b"\r\n", pos)
    if end < 0:
        if len(buf) - pos > MAX_LINE:
            raise RespError(f"no CRLF in the {MAX_LINE} bytes after byte {pos}")
        raise _Incomplete(len(buf) + 1)
    return bytes(buf[pos:end]), end + 2


def _int(text: bytes | bytearray, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise RespError(f"{what} {bytes(text[:20])!r} is not an integer") from None


def _bulk(buf: bytes | bytearray, pos: int) -> tuple[bytes | None, int]:
    """The bulk string whose ``$`` is at ``pos``: (value, end). The hot path of every
    command and of most replies, so written out (no line copied)."""
    eol = buf.find(b"\r\n", pos + 1)
    if eol < 0:
        if len(buf) - pos - 1 > MAX_LINE:
            raise RespError(f"no CRLF in the {MAX_LINE} bytes after byte {pos + 1}")
        raise _Incomplete(len(buf) + 1)
    size = _int(buf[pos + 1 : eol], "a bulk length")
    after = eol + 2
    if size == -1:
        return None, after
    if not 0 <= size <= MAX_BULK:
        raise RespError(f"a bulk length of {size}")
    end = after + size
    if len(buf) < end + 2:
        raise _Incomplete(end + 2)
    if buf[end : end + 2] != b"\r\n":
        raise RespError(f"a bulk string of {size} bytes not followed by CRLF")
    return bytes(buf[after:end]), end + 2


def parse_value(buf: bytes | bytearray, pos: int) -> tuple[str, Any, int]:
    """One value at ``pos``: (kind, value, end); raises _Incomplete or RespError."""
    if pos >= len(buf):
        raise _Incomplete(pos + 1)
    if buf[pos] == _DOLLAR:
        value, end = _bulk(buf, pos)
        return "$", value, end
    kind = chr(buf[pos])
    line, after = _line(buf, pos + 1)
    if kind in "$=!":
        size = _int(line, "a bulk length")
        if size == -1:
            return kind, None, after
        if not 0 <= size <= MAX_BULK:
            raise RespError(f"a bulk length of {size}")
        end = after + size
        if len(buf) < end + 2:
            raise _Incomplete(end + 2)
        if buf[end : end + 2] != b"\r\n":
            raise RespError(f"a bulk string of {size} bytes not followed by CRLF")
        return kind, bytes(buf[after:end]), end + 2
    if kind in AGGREGATES:
        count = _int(line, "an aggregate length")
        if count == -1:
            return kind, None, after
        if not 0 <= count <= MAX_ITEMS:
            raise RespError(f"an aggregate of {count} elements")
        items: list[tuple[str, Any]] = []
        for _ in range(count * 2 if kind in "%|" else count):
            if after < len(buf) and buf[after] == _DOLLAR:  # the common element, inline
                bulk, after = _bulk(buf, after)
                items.append(("$", bulk))
                continue
            item_kind, item, after = parse_value(buf, after)
            items.append((item_kind, item))
        if kind in "%|":
            return kind, list(zip(items[::2], items[1::2], strict=True)), after
        return kind, items, after
    if kind in "+-(":
        return kind, line, after
    if kind == ":":
        return kind, _int(line, "an integer"), after
    if kind == "_":
        return kind, None, after
    if kind == "#":
        return kind, line == b"t", after
    if kind == ",":
        try:
            return kind, float(line), after
        except ValueError:
            raise RespError(f"a double {line[:20]!r}") from None
    raise RespError(f"a value of type {kind!r}")


def _command_size(buf: Buffer, pos: int) -> int:
    """A whole command (an array of bulk strings) at ``pos``: its size (resync's measure)."""
    try:
        kind, value, end = parse_value(buf, pos)
    except _Incomplete:
        return MORE
    except RespError:
        return NOT
    if kind != "*" or not value or any(k != "$" or v is None for k, v in value):
        return NOT
    return end - pos


def _value_size(buf: Buffer, pos: int) -> int:
    try:
        return parse_value(buf, pos)[2] - pos
    except _Incomplete:
        return MORE
    except RespError:
        return NOT


COMMAND_RESYNC = Rule(
    starts=re.compile(b"(?=\\*[1-9][0-9]{0,6}\\r\\n\\$[0-9])"), measure=_command_size, chain=2
)
REPLY_RESYNC = Rule(
    starts=re.compile(b"(?=[-+:$*_#,(!=%~>|][-0-9a-zA-Z?][^\\r\\n]{0,64}\\r\\n)"),
    measure=_value_size,
    chain=2,
)


class RespReader:
    """One direction: ``feed`` returns the values completed; ``inline`` allows inline
    commands (the client's direction)."""

    __slots__ = (
        "_buf", "_need", "_pending_attributes", "_rec", "held", "inline", "lost", "offset",
        "resynced",
    )  # fmt: skip

    def __init__(self, *, inline: bool, location: str = "") -> None:
        self._buf = bytearray()
        self._need = 0
        self._pending_attributes: Any = None
        self._rec: Recovery[RespValue] = Recovery(
            COMMAND_RESYNC if inline else REPLY_RESYNC, prefix="resp", location=location
        )
        self.inline = inline
        self.lost = False
        self.offset = 0  # stream offset of _buf[0]
        self.resynced: list[tuple[Diagnostic, int]] = []  # (its Diagnostic, where reading resumed)
        # the values of the last feed include bytes held from earlier chunks while hunting
        # (which came with earlier segments' TCP acknowledgments)
        self.held = False

    @property
    def hunting(self) -> bool:
        return self._rec.hunting

    @property
    def at_rest(self) -> bool:
        """In step, holding no part of a value."""
        return not self._buf and not self._rec.hunting and not self.lost

    def gap(self, size: int) -> Diagnostic | None:
        """``size`` bytes were never captured: the hunt for the next value begins (the
        bytes held of an unfinished value are given up with them)."""
        if self.lost:
            return None
        rec = self._rec
        if rec.hunting:
            return rec.hunt(0, size, "before a value boundary was found again")
        held = len(self._buf)
        self._buf.clear()
        self._need = 0
        self._pending_attributes = None
        where = "at a value boundary" if not held else f"inside a value ({held} bytes held)"
        return rec.hunt(self.offset + held, size, where)

    def close(self) -> list[Diagnostic]:
        return self._rec.close()

    def feed(self, data: bytes, ts: float = 0.0) -> list[RespValue]:
        if self.lost:
            return []
        rec = self._rec
        if rec.hunting:
            diagnostics, at, chunks = rec.feed(data, ts)
            out: list[RespValue] = []
            if chunks:
                self.resynced.append((diagnostics[0], at))
                self.held = len(chunks) > 1
                self.offset = at
                for chunk, chunk_ts in chunks:
                    out.extend(self.feed(chunk, chunk_ts))
            return out
        self._buf += data
        if len(self._buf) < self._need:
            return []
        out = []
        buf = self._buf
        pos = 0
        try:
            while pos < len(buf):
                start = pos
                if self.inline and buf[pos] not in b"*$+-:_#,(!=%~>|":
                    line, pos = _line(buf, pos)
                    if line.strip():
                        words = [w for w in line.split() if w]
                        out.append(self._value("inline", words, start, pos, ts))
                    continue
                kind, value, pos = parse_value(buf, pos)
                if kind == "|":
                    self._pending_attributes = value
                    continue
                out.append(self._value(kind, value, start, pos, ts))
            self._need = 0
        except _Incomplete as more:
            self._need = more.need - pos
        finally:
            del buf[:pos]
            self.offset += pos
        return out

    def _value(self, kind: str, value: Any, start: int, end: int, ts: float) -> RespValue:
        attrs, self._pending_attributes = self._pending_attributes, None
        return RespValue(
            kind=kind,
            value=value,
            offset=self.offset + start,
            size=end - start,
            attributes=attrs,
            ts=ts,
        )

    def lose(self) -> None:
        self.lost = True
        self._buf.clear()
