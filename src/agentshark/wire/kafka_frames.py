"""Kafka framing (https://kafka.apache.org/protocol.html#protocol_common): one direction's
bytes -> :class:`KafkaFrame` values.

Every request and response is ``Size:int32`` then ``Size`` bytes. A frame longer than
:data:`MAX_KEPT` is not held: its first :data:`HEAD` bytes are (enough for the header's
api key, version and correlation id), the rest is skipped, and it is given out with ``body``
None and ``too_large`` set. A capture gap inside a frame whose size is known costs that frame
only: it is given out ``damaged`` with the head bytes that came before the gap, and reading
goes on in step at the next frame. A gap at a frame boundary, or past the frame it started
in, leaves no way to find the next frame: the direction is lost from there, with one
Diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshark.errors import Diagnostic

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


class FrameReader:
    """Framing of one direction."""

    __slots__ = ("_buf", "_pending", "_skip", "_start_ts", "location", "lost", "offset")

    def __init__(self, location: str) -> None:
        self._buf = bytearray()
        self._skip = 0  # bytes of the current frame still to skip
        self._pending: KafkaFrame | None = None  # the frame being skipped
        self._start_ts = 0.0
        self.location = location
        self.lost = False
        self.offset = 0  # stream offset of ``_buf[0]``

    def feed(self, data: bytes, ts: float) -> list[KafkaFrame | Diagnostic]:
        out: list[KafkaFrame | Diagnostic] = []
        if self.lost:
            return out
        if self._skip:
            cut = min(self._skip, len(data))
            self._skip -= cut
            self.offset += cut
            data = data[cut:]
            if self._skip:
                return out
            if self._pending is not None:
                self._pending.ended = ts
                out.append(self._pending)
                self._pending = None
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
                self._skip = max(0, size - have)
                if self._skip:
                    self._pending = frame
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
        if self._skip and size <= self._skip:  # inside a frame already being skipped
            self._skip -= size
            self.offset += size
            if self._pending is not None:
                self._pending.damaged = True
            if not self._skip and self._pending is not None:
                frame, self._pending = self._pending, None
                return [frame]
            return []
        if not self._skip and len(self._buf) >= 4:
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
                self._skip = need - size
                if self._skip:
                    self._pending = frame
                    return []
                return [frame]
        self.lost = True
        self._buf.clear()
        return [
            Diagnostic(
                code="kafka.gap",
                message=f"{size} bytes of this direction were not captured at a frame "
                "boundary: where the next frame starts cannot be told, nothing more of this "
                "direction is read",
                location=f"{self.location} byte {self.offset}",
            )
        ]
