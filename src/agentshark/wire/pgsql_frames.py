"""PostgreSQL wire protocol v3 framing: one direction's bytes -> messages.

https://www.postgresql.org/docs/current/protocol-overview.html#PROTOCOL-MESSAGE-CONCEPTS:
every message is a type byte and an Int32 length that counts itself but not the type byte,
except the client's first message (StartupMessage, SSLRequest, GSSENCRequest,
CancelRequest), which has no type byte, and the server's one-byte answer to an SSLRequest or
GSSENCRequest (``S``/``N``/``G``), which is not framed at all
(https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-SSL).

A capture gap inside a message whose length is known costs that message only: the reader
skips the rest of it and gives it out damaged (``body`` None), then reads on in step. After
a gap at a message boundary (or past the message it started in) the reader hunts for the
next boundary (:mod:`agentshark.wire.resync`): a type byte of the direction's alphabet with a
length that fits the type (:data:`CLIENT_TYPES`, :data:`SERVER_TYPES`), the body's shape
where the type fixes one, and the messages after it well-formed too. A message longer than
:data:`MAX_KEPT` is not held either: it is skipped and given out with ``body`` None and
``too_large`` set.

A one-byte answer that can turn the connection into TLS or GSSAPI encryption pauses framing
(:attr:`PgReader.paused`): the client's reader after its SSLRequest/GSSENCRequest (nothing it
sends before the answer is cleartext PostgreSQL it can know to be), the server's after an
``S``/``G`` answer. Bytes that come while paused are held as they are, for the TLS layer to
take (:meth:`PgReader.take_rest`) or for framing to resume on an ``N`` (:meth:`PgReader.resume`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentshark.errors import Diagnostic
from agentshark.wire.resync import MORE, NOT, Buffer, Recovery, Rule

MAX_KEPT = 16 << 20  # message bytes held whole; longer ones are skipped (type and size kept)
MAX_MESSAGE = 1 << 30  # no message is longer (the server's PQ_LARGE_MESSAGE_LIMIT)
MAX_STARTUP = 10000  # the server's own limit on a startup packet (MAX_STARTUP_PACKET_LENGTH)
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
UNTYPED = ""  # the type of a startup-phase message (no type byte)
ANSWER = "!"  # the type of the server's one-byte answer to SSLRequest/GSSENCRequest


# The message types of each direction after the startup phase, with the body length a type
# fixes (None: any) and whether its body ends with a NUL (the last field a string).
# https://www.postgresql.org/docs/current/protocol-message-formats.html
CLIENT_TYPES: dict[str, tuple[int | None, bool]] = {
    "Q": (None, True), "P": (None, False), "B": (None, False), "E": (None, False),
    "D": (None, True), "S": (0, False), "C": (None, True), "H": (0, False), "F": (None, False),
    "X": (0, False), "d": (None, False), "c": (0, False), "f": (None, True), "p": (None, False),
}  # fmt: skip
SERVER_TYPES: dict[str, tuple[int | None, bool]] = {
    "R": (None, False), "S": (None, True), "K": (None, False), "Z": (1, False),
    "T": (None, False), "n": (0, False), "t": (None, False), "1": (0, False), "2": (0, False),
    "3": (0, False), "D": (None, False), "C": (None, True), "I": (0, False), "s": (0, False),
    "E": (None, True), "N": (None, True), "A": (None, True), "G": (None, False),
    "H": (None, False), "W": (None, False), "d": (None, False), "c": (0, False),
    "V": (None, False), "v": (None, False),
}  # fmt: skip
MAX_RESYNC = 1 << 24  # a message after a gap is believed up to this length
_STATUS = frozenset(b"ITE")  # ReadyForQuery's transaction status


def _rule(types: dict[str, tuple[int | None, bool]]) -> Rule:
    letters = re.escape("".join(sorted(types)).encode())
    starts = re.compile(b"(?=[" + letters + b"]\\x00)")
    table = {ord(k): v for k, v in types.items()}

    def measure(buf: Buffer, pos: int) -> int:
        if len(buf) - pos < 5:
            return MORE
        shape = table.get(buf[pos])
        length = int.from_bytes(buf[pos + 1 : pos + 5])
        if shape is None or not 4 <= length <= MAX_RESYNC:
            return NOT
        fixed, nul = shape
        if fixed is not None and length != 4 + fixed:
            return NOT
        end = pos + 1 + length
        if len(buf) < end:
            return MORE
        if nul and (length == 4 or buf[end - 1] != 0):
            return NOT
        if buf[pos] == 0x5A and buf[pos + 5] not in _STATUS:  # ReadyForQuery
            return NOT
        return length + 1

    return Rule(starts=starts, measure=measure, chain=3)


CLIENT_RULE = _rule(CLIENT_TYPES)
SERVER_RULE = _rule(SERVER_TYPES)


@dataclass(slots=True, kw_only=True)
class PgMessage:
    """One message: its type letter, its body (after the length), when its first byte came
    and where it starts in the direction's byte stream. ``body`` None: damaged by a gap or
    too large to hold.

    Not frozen, like ``net.events.StreamData``: one is made per message (a DataRow per
    row), and a frozen dataclass's ``__init__`` costs twice as much. Treat it as immutable."""

    type: str
    body: bytes | None
    ts: float
    offset: int
    size: int  # the whole message on the wire, type byte and length included
    too_large: bool = False


class PgReader:
    """Framing of one direction (``client``: its first message is untyped)."""

    __slots__ = (
        "_buf",
        "_rec",
        "_start_ts",
        "answers",
        "last",
        "location",
        "lost",
        "offset",
        "paused",
        "resynced_at",
        "startup",
    )

    def __init__(self, *, client: bool, location: str) -> None:
        self._buf = bytearray()
        self._rec: Recovery[PgMessage] = Recovery(
            CLIENT_RULE if client else SERVER_RULE, prefix="pg", location=location
        )
        self._start_ts = 0.0
        self.startup = client  # the next message is untyped
        self.answers = 0  # one-byte answers the server owes (SSLRequest / GSSENCRequest)
        self.lost = False  # framing lost: nothing more is read
        self.paused = False  # waiting on an answer that may end cleartext: bytes are held
        self.location = location
        self.offset = 0  # stream offset of ``_buf[0]``
        self.last = ""  # the type of the last message given out
        self.resynced_at = -1  # where reading resumed after the last hunt

    @property
    def hunting(self) -> bool:
        """After a gap, no message boundary is proven yet."""
        return self._rec.hunting

    @property
    def at_rest(self) -> bool:
        """Framing is in step and holds no part of a message."""
        return not self._buf and not self._rec.busy and not self.lost

    def held(self) -> bytes:
        """The bytes held past the last message (while paused: what came after the request)."""
        return bytes(self._buf)

    def feed(self, data: bytes, ts: float) -> list[PgMessage | Diagnostic]:
        if self.lost:
            return []
        out: list[PgMessage | Diagnostic] = []
        rec = self._rec
        if rec.skip:
            released, rest = rec.skip_data(data, ts)
            self.offset += len(data) - len(rest)
            out.extend(released)
            data = rest
        if rec.hunting and data:
            diagnostics, at, chunks = rec.feed(data, ts)
            out.extend(diagnostics)
            if not chunks:
                return out
            self.offset = self.resynced_at = at
            self.startup = self.paused = False
            self.answers = 0
            for chunk, chunk_ts in chunks:
                out.extend(self.feed(chunk, chunk_ts))
            return out
        if not data:
            return out
        if not self._buf:
            self._start_ts = ts
        self._buf += data
        if not self.paused:
            self._frame(out, ts)
        return out

    def resume(self, ts: float) -> list[PgMessage | Diagnostic]:
        """Framing goes on after a pause (the server answered ``N``: still cleartext)."""
        self.paused = False
        out: list[PgMessage | Diagnostic] = []
        if self._buf and not self.lost:
            self._frame(out, ts)
        return out

    def take_rest(self) -> bytes:
        """The bytes held past the last message (the connection's TLS starts with them)."""
        rest = bytes(self._buf)
        self.offset += len(rest)
        self._buf.clear()
        return rest

    def _frame(self, out: list[PgMessage | Diagnostic], ts: float) -> None:
        buf = self._buf
        pos = 0
        end = len(buf)
        start_ts = self._start_ts
        while pos < end and not self.lost:
            if self.answers:
                answer = bytes(buf[pos : pos + 1])
                out.append(self._message(ANSWER, answer, start_ts, pos, 1))
                self.answers -= 1
                pos += 1
                if answer in (b"S", b"G"):  # TLS or GSSAPI encryption from the next byte
                    self.paused = True
                    break
            elif self.startup:
                if end - pos < 8:
                    break
                size = int.from_bytes(buf[pos : pos + 4])
                if not 8 <= size <= MAX_STARTUP:
                    out.append(self._lose(pos, f"a startup message of {size} bytes"))
                    break
                if end - pos < size:
                    break
                body = bytes(buf[pos + 4 : pos + size])
                out.append(self._message(UNTYPED, body, start_ts, pos, size))
                code = int.from_bytes(body[:4])
                self.startup = code in (SSL_REQUEST, GSSENC_REQUEST)
                pos += size
                if self.startup:  # what follows depends on the server's answer
                    self.paused = True
                    break
            else:
                if end - pos < 5:
                    break
                size = int.from_bytes(buf[pos + 1 : pos + 5]) + 1
                kind = chr(buf[pos])
                if not 5 <= size <= MAX_MESSAGE:
                    out.append(self._lose(pos, f"a {kind!r} message of length {size - 1}"))
                    break
                if size > MAX_KEPT:
                    message = PgMessage(
                        type=kind,
                        body=None,
                        ts=start_ts,
                        offset=self.offset + pos,
                        size=size,
                        too_large=True,
                    )
                    rest = size - (end - pos)
                    if rest > 0:
                        self._rec.skip_rest(rest, message, ts)
                        pos = end
                        break
                    out.append(message)
                    pos += size
                    start_ts = ts
                    continue
                if end - pos < size:
                    break
                out.append(
                    self._message(kind, bytes(buf[pos + 5 : pos + size]), start_ts, pos, size)
                )
                self.last = kind
                pos += size
            start_ts = ts  # a later message in this chunk started in it
        del buf[:pos]
        self.offset += pos
        self._start_ts = start_ts if buf else ts

    def _message(self, kind: str, body: bytes, ts: float, pos: int, size: int) -> PgMessage:
        return PgMessage(type=kind, body=body, ts=ts, offset=self.offset + pos, size=size)

    def _lose(self, pos: int, what: str) -> Diagnostic:
        self.lost = True
        return Diagnostic(
            code="pg.framing",
            message=f"{what} at byte {self.offset + pos}: this is not PostgreSQL framing, "
            "nothing more of this direction is read",
            location=f"{self.location} byte {self.offset + pos}",
        )

    def gap(self, size: int, ts: float) -> list[PgMessage | Diagnostic]:
        """``size`` bytes were never captured."""
        if self.lost:
            return []
        rec = self._rec
        out: list[PgMessage | Diagnostic] = []
        if rec.hunting:
            out.append(rec.hunt(0, size, "before a message boundary was found again"))
            return out
        if rec.skip:  # inside a message already being skipped
            released, past = rec.skip_gap(size, ts)
            self.offset += size - past
            out.extend(released)
            if not past:
                return out
            size = past
        elif self._buf and not self.startup and not self.answers and len(self._buf) >= 5:
            total = int.from_bytes(self._buf[1:5]) + 1
            need = total - len(self._buf)
            if 0 < size <= need and 5 <= total <= MAX_MESSAGE:
                damaged = PgMessage(
                    type=chr(self._buf[0]),
                    body=None,
                    ts=self._start_ts,
                    offset=self.offset,
                    size=total,
                )
                self.offset += len(self._buf) + size
                self._buf.clear()
                out.extend(rec.skip_rest(need - size, damaged, ts))
                return out
        held = len(self._buf)
        self._buf.clear()
        self.paused = False
        where = "at a message boundary" if not held else f"inside a message ({held} bytes held)"
        out.append(rec.hunt(self.offset + held, size, where))
        return out

    def close(self) -> list[Diagnostic]:
        """The direction is over: a hunt that found nothing says so."""
        return self._rec.close()
