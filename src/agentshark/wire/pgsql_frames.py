"""PostgreSQL wire protocol v3 framing: one direction's bytes -> messages.

https://www.postgresql.org/docs/current/protocol-overview.html#PROTOCOL-MESSAGE-CONCEPTS:
every message is a type byte and an Int32 length that counts itself but not the type byte,
except the client's first message (StartupMessage, SSLRequest, GSSENCRequest,
CancelRequest), which has no type byte, and the server's one-byte answer to an SSLRequest or
GSSENCRequest (``S``/``N``/``G``), which is not framed at all
(https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-SSL).

A capture gap inside a message whose length is known costs that message only: the reader
skips the rest of it and gives it out damaged (``body`` None), then reads on in step. A gap
at a message boundary (or past the message it started in) leaves no way to find the next
boundary: the direction is lost from there, with one Diagnostic. A message longer than
:data:`MAX_KEPT` is not held either: it is skipped and given out with ``body`` None and
``too_large`` set.

A one-byte answer that can turn the connection into TLS or GSSAPI encryption pauses framing
(:attr:`PgReader.paused`): the client's reader after its SSLRequest/GSSENCRequest (nothing it
sends before the answer is cleartext PostgreSQL it can know to be), the server's after an
``S``/``G`` answer. Bytes that come while paused are held as they are, for the TLS layer to
take (:meth:`PgReader.take_rest`) or for framing to resume on an ``N`` (:meth:`PgReader.resume`).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshark.errors import Diagnostic

MAX_KEPT = 16 << 20  # message bytes held whole; longer ones are skipped (type and size kept)
MAX_MESSAGE = 1 << 30  # no message is longer (the server's PQ_LARGE_MESSAGE_LIMIT)
MAX_STARTUP = 10000  # the server's own limit on a startup packet (MAX_STARTUP_PACKET_LENGTH)
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
UNTYPED = ""  # the type of a startup-phase message (no type byte)
ANSWER = "!"  # the type of the server's one-byte answer to SSLRequest/GSSENCRequest


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
        "_pending",
        "_skip",
        "_start_ts",
        "answers",
        "location",
        "lost",
        "offset",
        "paused",
        "startup",
    )

    def __init__(self, *, client: bool, location: str) -> None:
        self._buf = bytearray()
        self._skip = 0  # bytes of the current message still to skip
        self._pending: PgMessage | None = None  # the damaged message being skipped
        self._start_ts = 0.0
        self.startup = client  # the next message is untyped
        self.answers = 0  # one-byte answers the server owes (SSLRequest / GSSENCRequest)
        self.lost = False  # framing lost: nothing more is read
        self.paused = False  # waiting on an answer that may end cleartext: bytes are held
        self.location = location
        self.offset = 0  # stream offset of ``_buf[0]``

    def feed(self, data: bytes, ts: float) -> list[PgMessage | Diagnostic]:
        if self.lost:
            return []
        out: list[PgMessage | Diagnostic] = []
        if self._skip:
            cut = min(self._skip, len(data))
            self._skip -= cut
            self.offset += cut
            data = data[cut:]
            if self._skip:
                return out
            if self._pending is not None:
                out.append(self._pending)
                self._pending = None
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
                    self._skip = max(0, size - (end - pos))
                    if self._skip:
                        self._pending = message
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
        if self._skip:  # inside a message already being skipped
            if size <= self._skip:
                self._skip -= size
                self.offset += size
                out: list[PgMessage | Diagnostic] = []
                if not self._skip and self._pending is not None:
                    out.append(self._pending)
                    self._pending = None
                return out
        elif self._buf and not self.startup and not self.answers and len(self._buf) >= 5:
            total = int.from_bytes(self._buf[1:5]) + 1
            need = total - len(self._buf)
            if 0 < size <= need:
                damaged = PgMessage(
                    type=chr(self._buf[0]),
                    body=None,
                    ts=self._start_ts,
                    offset=self.offset,
                    size=total,
                )
                self.offset += len(self._buf) + size
                self._buf.clear()
                self._skip = need - size
                if self._skip:
                    self._pending = damaged
                    return []
                return [damaged]
        self.lost = True
        self._buf.clear()
        return [
            Diagnostic(
                code="pg.gap",
                message=f"{size} bytes of this direction were not captured at a message "
                "boundary: where the next message starts cannot be told, nothing more of "
                "this direction is read",
                location=f"{self.location} byte {self.offset}",
            )
        ]
