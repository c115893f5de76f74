"""What one direction's framing does about a capture gap, shared by the wire decoders:
bytes of a direction after a gap -> the bytes from the next proven message boundary on.

Two cases (the readers of :mod:`~agentshark.wire.pgsql_frames`,
:mod:`~agentshark.wire.kafka_frames`, :mod:`~agentshark.wire.amqp_frames` and
:mod:`~agentshark.wire.resp_values` use both through :class:`Recovery`):

- a gap inside a message whose size is known costs that message only: the rest of it is
  skipped (:meth:`Recovery.skip_rest`) and the damaged message given out when its end has
  passed;
- a gap at a message boundary (or past the end of the message it began in) leaves no length
  to follow: the direction *hunts* (:meth:`Recovery.hunt`). The bytes after the gap are held
  and scanned for a plausible header (a protocol's :class:`Rule`: a regular expression that
  finds candidates, a measure that says how long a well-formed message at a candidate is).
  A candidate is accepted only with proof: :attr:`Rule.chain` well-formed messages one after
  the other, or fewer that end exactly where the bytes received so far end (where a segment
  ended). The bytes before it are skipped, and one Diagnostic says how many; the framing
  then reads on from the boundary as if nothing happened, chunk by chunk with each chunk's
  own time stamp.

Scanning uses ``re.finditer`` over the held bytes (no per-byte Python loop); a candidate
whose measure needs more bytes than have come stops the scan until more come.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from agentshark.errors import Diagnostic

M = TypeVar("M")
Buffer = bytes | bytearray
# (bytes, candidate position) -> the length of the well-formed message that starts there;
# 0: more bytes are needed to tell; -1: no message of the protocol starts there.
Measure = Callable[[Buffer, int], int]
MORE = 0
NOT = -1
MAX_HELD = 1 << 24  # bytes held while hunting; past this the oldest are skipped


@dataclass(frozen=True, slots=True)
class Rule:
    """How a protocol's messages are found again: ``starts`` matches (zero-width, at each
    candidate position) where a header may start, ``measure`` judges one."""

    starts: re.Pattern[bytes]
    measure: Measure
    chain: int = 3  # messages in a row that prove a boundary


def find_boundary(buf: Buffer, rule: Rule) -> tuple[int, int]:
    """The first proven boundary in ``buf``: ``(position, messages that proved it)``; or
    ``(position, 0)``: the candidate there needs more bytes to be judged (nothing before it
    can be a boundary); or ``(len(buf), 0)``: no candidate at all (a header may yet begin in
    the last few bytes: :meth:`Recovery.feed` keeps them)."""
    end = len(buf)
    measure, chain = rule.measure, rule.chain
    for match in rule.starts.finditer(buf):
        pos = match.start()
        at, count = pos, 0
        while True:
            size = measure(buf, at)
            if size == MORE:  # this message (or the chain's next) needs more bytes
                return pos, 0
            if size < 0:
                break
            at += size
            count += 1
            if count >= chain or at == end:
                return pos, count
            if at > end:  # measured past what came (a protocol that judges by its head)
                return pos, 0
    return end, 0


class Recovery(Generic[M]):
    """The gap state of one direction: a damaged message to skip the rest of, or a hunt.

    ``prefix`` names the Diagnostics (``pg`` gives ``pg.gap``, ``pg.resync``...);
    ``location`` the direction; ``release`` is called on a skipped message when it is given
    out (with the time stamp of the bytes that ended it)."""

    __slots__ = (
        "_buf",
        "_marks",
        "_release",
        "gap_at",
        "hunting",
        "location",
        "lost",
        "offset",
        "pending",
        "prefix",
        "rule",
        "skip",
        "skipped",
    )

    def __init__(
        self,
        rule: Rule,
        *,
        prefix: str,
        location: str,
        release: Callable[[M, float], None] | None = None,
    ) -> None:
        self.rule = rule
        self.prefix = prefix
        self.location = location
        self._release = release
        self.skip = 0  # bytes of a damaged message still to skip
        self.pending: M | None = None  # that message, given out once skipped
        self.hunting = False
        self.gap_at = 0  # where the lost bytes of the hunt began
        self.lost = 0  # bytes not captured since the hunt began
        self.skipped = 0  # bytes captured but skipped since the hunt began
        self.offset = 0  # stream offset of the first byte held while hunting
        self._buf = bytearray()  # bytes held while hunting
        self._marks: list[tuple[int, float]] = []  # (index in _buf, time stamp) per chunk

    @property
    def busy(self) -> bool:
        return bool(self.skip or self.hunting)

    # -- a damaged message --------------------------------------------------------------------

    def skip_rest(self, count: int, message: M, ts: float) -> list[M]:
        """A gap inside ``message``: ``count`` of its bytes are still to come (and be
        skipped); it is given out when they have (now, when none are)."""
        if count <= 0:
            return [self._released(message, ts)]
        self.skip = count
        self.pending = message
        return []

    def _released(self, message: M, ts: float) -> M:
        if self._release is not None:
            self._release(message, ts)
        return message

    def skip_data(self, data: bytes, ts: float) -> tuple[list[M], bytes]:
        """Bytes that came while skipping: the message if its end passed, and the bytes
        past its end."""
        cut = min(self.skip, len(data))
        self.skip -= cut
        out: list[M] = []
        if not self.skip and self.pending is not None:
            message, self.pending = self.pending, None
            out.append(self._released(message, ts))
        return out, data[cut:]

    def skip_gap(self, size: int, ts: float) -> tuple[list[M], int]:
        """A gap while skipping: the lost bytes count against the message's rest. Returns
        the message if its end passed, and how many lost bytes lie past its end."""
        cut = min(size, self.skip)
        self.skip -= cut
        out: list[M] = []
        if not self.skip and self.pending is not None:
            message, self.pending = self.pending, None
            out.append(self._released(message, ts))
        return out, size - cut

    # -- a hunt -------------------------------------------------------------------------------

    def hunt(self, at: int, size: int, what: str) -> Diagnostic:
        """``size`` bytes lost from stream offset ``at`` where no length says where the next
        message starts (while hunting already, ``at`` is where the held bytes end)."""
        if self.hunting:  # another gap before a boundary was found: what is held is cut off
            at = self.offset + len(self._buf)
            self.skipped += len(self._buf)
            self.lost += size
            self._buf.clear()
            self._marks.clear()
        else:
            self.hunting = True
            self.gap_at = at
            self.lost = size
            self.skipped = 0
        self.offset = at + size
        return Diagnostic(
            code=f"{self.prefix}.gap",
            message=f"{size} bytes of this direction were not captured {what}: the next "
            "message boundary is searched for in the bytes after it",
            location=f"{self.location} byte {at}",
        )

    def feed(
        self, data: bytes, ts: float
    ) -> tuple[list[Diagnostic], int, list[tuple[bytes, float]]]:
        """Bytes that came while hunting: ``(diagnostics, stream offset of the boundary,
        chunks from it on)`` once a boundary is proven (the chunks are then the caller's to
        frame, each with its time stamp), else ``([], 0, [])``: the bytes are held."""
        buf = self._buf
        self._marks.append((len(buf), ts))
        buf += data
        pos, proof = find_boundary(buf, self.rule)
        if proof:
            return self._found(pos, proof)
        # nothing before ``pos`` can begin a message (with no candidate, a header may yet
        # begin in the last few bytes)
        self._drop(max(0, len(buf) - 8) if pos == len(buf) else pos)
        if len(buf) > MAX_HELD:
            self._drop(len(buf) - MAX_HELD)
        return [], 0, []

    def _drop(self, count: int) -> None:
        """The first ``count`` held bytes cannot begin a message: skipped."""
        if not count:
            return
        del self._buf[:count]
        self.offset += count
        self.skipped += count
        marks = [(i - count, ts) for i, ts in self._marks]
        keep = [m for m in marks if m[0] > 0]
        first = [m for m in marks if m[0] <= 0]
        self._marks = ([(0, first[-1][1])] if first else []) + keep

    def _found(
        self, pos: int, proof: int
    ) -> tuple[list[Diagnostic], int, list[tuple[bytes, float]]]:
        self._drop(pos)
        at, buf = self.offset, self._buf
        bounds = [i for i, _ in self._marks[1:]] + [len(buf)]
        chunks = [
            (bytes(buf[i:j]), ts) for (i, ts), j in zip(self._marks, bounds, strict=True) if j > i
        ]
        self._buf = bytearray()
        self._marks = []
        self.hunting = False
        diagnostic = Diagnostic(
            code=f"{self.prefix}.resync",
            message=f"after the {self.lost} bytes lost at byte {self.gap_at}, {self.skipped} "
            f"bytes were skipped to the next message boundary (byte {at}, proven by {proof} "
            f"well-formed message{'s' if proof > 1 else ''} in a row): reading goes on from "
            "there",
            location=f"{self.location} byte {at}",
            severity="info",
        )
        return [diagnostic], at, chunks

    def close(self) -> list[Diagnostic]:
        """The end of the direction: bytes still held never proved a boundary."""
        if not self.hunting:
            return []
        held = len(self._buf)
        self._buf.clear()
        self._marks.clear()
        self.hunting = False
        return [
            Diagnostic(
                code=f"{self.prefix}.no_resync",
                message=f"after the {self.lost} bytes lost at byte {self.gap_at}, no message "
                f"boundary was proven in the {self.skipped + held} bytes that came after: "
                "they are not read",
                location=f"{self.location} byte {self.offset}",
            )
        ]
