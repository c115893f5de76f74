"""Kafka framing (https://kafka.apache.org/protocol.html#protocol_common): one direction's
bytes -> :class:`KafkaFrame` values.

Every request and response is ``Size:int32`` then ``Size`` bytes. A frame longer than
:data:`MAX_KEPT` is not held: its first :data:`HEAD` bytes are (enough for the header's
api key, version and correlation id), the rest is skipped, and it is given out with ``body``
None and ``too_large`` set. A capture gap inside a frame whose size is known costs that frame
only: it is given out ``damaged`` with the head bytes that came before the gap, and reading
goes on in step at the next frame. After a gap at a frame boundary, or past the frame it
started in, the reader hunts for the next frame (:mod:`agentshark.wire.resync`) with the
rule its session gives: a request header whose API key and version exist and whose
correlation id continues the client's sequence; a response whose correlation id names a
request in flight.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from agentshark.errors import Diagnostic
from agentshark.wire.resync import MORE, NOT, Buffer, Recovery, Rule

MAX_KEPT = 64 << 20  # frame bytes held whole (a Fetch response is 50 MiB at most by default)
MAX_FRAME = 1 << 30  # no broker accepts a larger one (socket.request.max.bytes is 100 MiB)
HEAD = 64  # bytes of a skipped frame kept for its header


@dataclass(slots=True, kw_only=True)
class KafkaFrame:
    """One frame: its body (after the size), or None when too large or damaged, with the
    body's first bytes then in ``head``. Not frozen (one per message); treat as immutable."""

    body: bytes | None
    head: bytes
    started: float
    ended: float
    offset: int  # of its size field in the direction's byte stream
    size: int  # of the body
    too_large: bool = False
    damaged: bool = False


def rule(judge: Callable[[Buffer, int, int], bool], *, chain: int) -> Rule:
    """The resync rule of a direction: a size of :data:`MAX_KEPT` at most (its first byte
    0, which the scan looks for) whose frame ``judge(bytes, body offset, size)`` finds
    plausible, with the whole frame there."""

    def measure(buf: Buffer, pos: int) -> int:
        if len(buf) - pos < 12:
            return MORE
        size = int.from_bytes(buf[pos : pos + 4], signed=True)
        if not 8 <= size <= MAX_KEPT or not judge(buf, pos + 4, size):
            return NOT
        if len(buf) - pos - 4 < size:
            return MORE
        return size + 4

    return Rule(starts=_STARTS, measure=measure, chain=chain)


_STARTS = re.compile(b"(?=\\x00)")


class FrameReader:
    """Framing of one direction; ``resync`` finds frames again after a gap."""

    __slots__ = ("_buf", "_rec", "_start_ts", "location", "lost", "offset")

    def __init__(self, location: str, resync: Rule) -> None:
        self._buf = bytearray()
        self._rec: Recovery[KafkaFrame] = Recovery(
            resync, prefix="kafka", location=location, release=_ended
        )
        self._start_ts = 0.0
        self.location = location
        self.lost = False
        self.offset = 0  # stream offset of ``_buf[0]``

    def feed(self, data: bytes, ts: float) -> list[KafkaFrame | Diagnostic]:
        out: list[KafkaFrame | Diagnostic] = []
        if self.lost:
            return out
        rec = self._rec
        if rec.skip:
            released, rest = rec.skip_data(data, ts)
            self.offset += len(data) - len(rest)
            out.extend(released)
            data = rest
        if rec.hunting and data:
            diagnostics, at, chunks = rec.feed(data, ts)
            out.extend(diagnostics)
            if chunks:
                self.offset = at
                for chunk, chunk_ts in chunks:
                    out.extend(self.feed(chunk, chunk_ts))
            return out
        if not data:
            return out
        if not self._buf:
            self._start_ts = ts
        self._buf += data
        self._frames(out, ts)
        return out

    def _frames(self, out: list[KafkaFrame | Diagnostic], ts: float) -> None:
        buf, pos, end, start_ts = self._buf, 0, len(self._buf), self._start_ts
        while end - pos >= 4:
            size = int.from_bytes(buf[pos : pos + 4], signed=True)
            if not 0 <= size <= MAX_FRAME:
                out.append(self._lose(pos, f"a frame size of {size}"))
                buf.clear()
                return
            if size > MAX_KEPT:
                head = bytes(buf[pos + 4 : pos + 4 + min(HEAD, size)])
                frame = KafkaFrame(
                    body=None,
                    head=head,
                    started=start_ts,
                    ended=ts,
                    offset=self.offset + pos,
                    size=size,
                    too_large=True,
                )
                have = end - pos - 4
                if have < min(HEAD, size):
                    break  # wait for the head
                if size > have:
                    self._rec.skip_rest(size - have, frame, ts)
                    self.offset += end
                    buf.clear()
                    return
                out.append(frame)
            elif end - pos - 4 < size:
                break
            else:
                body = bytes(buf[pos + 4 : pos + 4 + size])
                out.append(
                    KafkaFrame(
                        body=body,
                        head=body[:HEAD],
                        started=start_ts,
                        ended=ts,
                        offset=self.offset + pos,
                        size=size,
                    )
                )
            pos += 4 + size
            start_ts = ts  # a later frame of this chunk started in it
        del buf[:pos]
        self.offset += pos
        self._start_ts = start_ts if buf else ts

    def _lose(self, pos: int, what: str) -> Diagnostic:
        self.lost = True
        return Diagnostic(
            code="kafka.framing",
            message=f"{what} at byte {self.offset + pos}: this is not Kafka framing, nothing "
            "more of this direction is read",
            location=f"{self.location} byte {self.offset + pos}",
        )

    def gap(self, size: int, ts: float) -> list[KafkaFrame | Diagnostic]:
        """``size`` bytes were never captured."""
        if self.lost:
            return []
        rec = self._rec
        out: list[KafkaFrame | Diagnostic] = []
        if rec.hunting:
            out.append(rec.hunt(0, size, "before a frame boundary was found again"))
            return out
        if rec.skip:  # inside a frame already being skipped
            if rec.pending is not None:
                rec.pending.damaged = True
            released, past = rec.skip_gap(size, ts)
            self.offset += size - past
            out.extend(released)
            if not past:
                return out
            size = past
        elif len(self._buf) >= 4:
            total = int.from_bytes(self._buf[:4], signed=True)
            need = total + 4 - len(self._buf)
            if 0 <= total <= MAX_FRAME and 0 < size <= need:
                frame = KafkaFrame(
                    body=None,
                    head=bytes(self._buf[4 : 4 + HEAD]),
                    started=self._start_ts,
                    ended=ts,
                    offset=self.offset,
                    size=total,
                    damaged=True,
                )
                self.offset += len(self._buf) + size
                self._buf.clear()
                out.extend(self._rec.skip_rest(need - size, frame, ts))
                return out
        held = len(self._buf)
        self._buf.clear()
        where = "at a frame boundary" if not held else f"inside a frame ({held} bytes held)"
        out.append(rec.hunt(self.offset + held, size, where))
        return out

    def close(self) -> list[Diagnostic]:
        return self._rec.close()


def _ended(frame: KafkaFrame, ts: float) -> None:
    frame.ended = ts
