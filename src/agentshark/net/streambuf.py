"""One direction of a TCP connection as a byte stream: sequence numbers in, ordered pieces out.

:class:`StreamBuffer` is the bookkeeping of one direction, without events or diagnostics:
``net.tcp`` gives it payload at sequence numbers, takes back the pieces that continue the
stream in order (``pop_ready``), and decides from what it reports (overlaps, where holes end,
how much is buffered) which holes to give up and what to tell the user.

Sequence space
    RFC 9293 §3.4 (https://www.rfc-editor.org/rfc/rfc9293#section-3.4): "all arithmetic dealing
    with sequence numbers must be performed modulo 2^32". ``offset`` maps a sequence number to a
    64-bit byte offset from the direction's first byte, the nearer of the two ways round the
    circle from ``nxt``; ``nxt == (base + off) % 2**32`` always holds once the direction started.

Pieces
    Out-of-order data waits in ``pend`` (keyed by offset, ``starts`` sorted) as pieces that never
    overlap: the first captured copy of a byte wins, and ``insert`` returns every range that was
    already buffered with whether the copies differ. A piece whose data is ``None`` stands for
    bytes known to be missing (cut by the snap length). Delivered pieces are remembered by
    reference in ``recent`` (about 64 KiB) so that a later copy can still be compared.
    ``pend_cost`` and ``recent_cost`` count bytes plus ``PIECE_COST`` of bookkeeping per piece.

Holds
    ``hint`` is the end of what the peer acknowledged beyond ``off`` (bytes the peer received
    that the capture did not show yet), ``wait`` the offset in the peer's stream this direction
    waits for before delivering (-1: none). ``net.tcp`` decides both; ``hold`` tells the buffer
    that one of them (or the peer's ``wait`` on this direction) is in force, so ``fast`` stays
    False and every segment takes the slow path.
"""

from __future__ import annotations

from bisect import bisect_right

__all__ = ["PIECE_COST", "RECENT_LIMIT", "SEQ_HALF", "SEQ_MASK", "Piece", "StreamBuffer"]

SEQ_MASK = 0xFFFF_FFFF  # sequence numbers are modulo 2**32
SEQ_HALF = 0x8000_0000  # ... and compared the nearer way round
PIECE_COST = 64  # bookkeeping charged per buffered or remembered piece
RECENT_LIMIT = 64 << 10  # delivered bytes kept (by reference) per direction for comparisons
_RECENT_KEEP = 32 << 10  # ... trimmed down to this, so trimming is rare

Piece = tuple[bytes | None, int, float, int]
"""A buffered piece: its data, or None for bytes known to be missing; its size; its ts; the
offset in the other direction that the segment carrying it acknowledged (-1: none)."""


class StreamBuffer:
    """The byte stream of one direction: what was delivered, and what waits beyond a hole.

    ``nxt`` is the sequence number of the next byte to deliver (-1 until the direction starts)
    and ``off`` its offset. ``fin`` is the offset of the FIN once seen. ``fast`` says the next
    in-order segment can be delivered without looking at anything else: nothing is buffered,
    no FIN was seen and nothing is held (``net.tcp`` delivers such segments inline, updating
    ``off``, ``nxt`` and ``recent`` itself).
    """

    __slots__ = (
        "base",
        "fast",
        "fin",
        "hint",
        "hold",
        "nxt",
        "off",
        "pend",
        "pend_cost",
        "recent",
        "recent_cost",
        "starts",
        "wait",
    )

    def __init__(self) -> None:
        self.nxt = -1
        self.base = 0
        self.off = 0
        self.fin: int | None = None
        self.fast = False
        self.hint = 0  # acknowledged by the peer up to here (a hole when > off)
        self.wait = -1  # delivery waits until the peer's stream reaches this offset
        self.hold = False  # a hint, a wait, or the peer's wait on this direction is in force
        self.starts: list[int] = []  # sorted offsets of the buffered pieces
        self.pend: dict[int, Piece] = {}  # buffered out-of-order pieces, never overlapping
        self.pend_cost = 0
        # last delivered (offset, data), oldest first: a list, as an empty deque costs 600
        # bytes per direction, and trimming (rare: see _RECENT_KEEP) cuts it in one step
        self.recent: list[tuple[int, bytes]] = []
        self.recent_cost = 0

    def start(self, seq: int) -> None:
        """The direction's first byte has sequence number ``seq``."""
        self.base = self.nxt = seq & SEQ_MASK
        self.fast = True

    def offset(self, seq: int) -> int:
        """The offset of sequence number ``seq``, the nearer way round from ``nxt``."""
        return self.off + ((seq - self.nxt + SEQ_HALF) & SEQ_MASK) - SEQ_HALF

    # -- buffering -----------------------------------------------------------------------------

    def insert(
        self, start: int, size: int, data: bytes | None, ts: float, acked: int = -1
    ) -> list[tuple[int, int, bool]]:
        """Buffer ``size`` bytes at ``start`` around the pieces already buffered (first wins);
        ``acked`` is what the segment carrying them acknowledged of the peer's stream.

        Returns the ranges ``(lo, hi, differs)`` that were buffered already: ``differs`` when
        both copies were captured and their bytes are not the same.
        """
        starts = self.starts
        pend = self.pend
        end = start + size
        pos = start
        overlaps: list[tuple[int, int, bool]] = []
        i = bisect_right(starts, start)
        if i:
            s = starts[i - 1]
            old, old_size, _, _ = pend[s]
            if s + old_size > pos:
                _overlap(old, s, data, start, pos, min(s + old_size, end), overlaps)
                pos = s + old_size
        while pos < end:
            if i < len(starts) and starts[i] < end:
                s = starts[i]
                if s > pos:
                    self._place(i, pos, s, data, start, ts, acked)
                    i += 1
                old, old_size, _, _ = pend[s]
                _overlap(old, s, data, start, s, min(s + old_size, end), overlaps)
                pos = s + old_size
                i += 1
            else:
                self._place(i, pos, end, data, start, ts, acked)
                break
        return overlaps

    def _place(
        self, i: int, lo: int, hi: int, data: bytes | None, start: int, ts: float, acked: int
    ) -> None:
        if data is not None:
            if lo != start or hi - lo != len(data):
                data = data[lo - start : hi - start]
            self.pend_cost += hi - lo + PIECE_COST
        else:
            self.pend_cost += PIECE_COST
        self.starts.insert(i, lo)
        self.pend[lo] = (data, hi - lo, ts, acked)
        self.fast = False

    def delivered_mismatch(self, start: int, data: bytes) -> tuple[int, int] | None:
        """The first range where ``data`` at ``start`` differs from the delivered bytes still
        remembered, if any."""
        end = start + len(data)
        view = memoryview(data)
        for o, buf in reversed(self.recent):
            e = o + len(buf)
            if e <= start:
                break
            if o >= end:
                continue
            lo = max(o, start)
            hi = min(e, end)
            if memoryview(buf)[lo - o : hi - o] != view[lo - start : hi - start]:
                return lo, hi
        return None

    def mark_fin(self, at: int) -> int:
        """The FIN is at offset ``at`` (or ``off``, if that is later): drop what is buffered
        beyond it. Returns how many bytes were dropped."""
        self.fin = at = max(at, self.off)
        self.fast = False
        starts = self.starts
        pend = self.pend
        dropped = 0
        while starts and starts[-1] + pend[starts[-1]][1] > at:
            s = starts[-1]
            data, size, pts, acked = pend[s]
            cut = s + size - max(s, at)
            dropped += cut
            self.pend_cost -= cut if data is not None else 0
            if s >= at:
                self.pend_cost -= PIECE_COST
                del pend[s]
                starts.pop()
            else:
                pend[s] = (None if data is None else data[: at - s], at - s, pts, acked)
        return dropped

    # -- delivery ------------------------------------------------------------------------------

    def pop_ready(self) -> list[Piece]:
        """Take the buffered pieces that continue the stream at ``off``, in order, and move
        ``off`` past them (the first starts at the old ``off``, each next one where the one
        before ends). ``nxt`` and ``fast`` follow ``off``."""
        starts = self.starts
        off = self.off
        ready: list[Piece] = []
        if starts and starts[0] == off:
            pend = self.pend
            recent = self.recent
            k = 0
            n = len(starts)
            while k < n and starts[k] == off:
                piece = pend.pop(off)
                ready.append(piece)
                data, size, _, _ = piece
                if data is None:
                    self.pend_cost -= PIECE_COST
                else:
                    self.pend_cost -= size + PIECE_COST
                    recent.append((off, data))
                    self.recent_cost += size + PIECE_COST
                off += size
                k += 1
            del starts[:k]
            self.off = off
            if self.recent_cost > RECENT_LIMIT:
                self.trim_recent()
        self.nxt = (self.base + off) & SEQ_MASK
        self.fast = not starts and self.fin is None and not self.hold
        return ready

    def trim_recent(self) -> None:
        """Forget the oldest delivered pieces, down to about half of ``RECENT_LIMIT``."""
        recent = self.recent
        cost = self.recent_cost
        drop = 0
        last = len(recent) - 1
        while cost > _RECENT_KEEP and drop < last:
            cost -= len(recent[drop][1]) + PIECE_COST
            drop += 1
        del recent[:drop]
        self.recent_cost = cost

    # -- where holes end -----------------------------------------------------------------------

    def hole_end(self, target: int) -> int:
        """Where the hole at ``off`` ends: the first buffered piece, or ``target`` if sooner."""
        starts = self.starts
        return starts[0] if starts and starts[0] < target else target

    def acked_end(self, ack: int) -> int:
        """The offset the peer's acknowledgment ``ack`` reaches, never past the FIN."""
        target = self.off + ((ack - self.nxt) & SEQ_MASK)
        if self.fin is not None and target > self.fin:
            target = self.fin
        return target

    def known_end(self) -> int:
        """The end of what is known of the stream: the last buffered byte, the FIN, or what
        the peer acknowledged."""
        target = max(self.off, self.hint)
        if self.starts:
            last = self.starts[-1]
            target = max(target, last + self.pend[last][1])
        if self.fin is not None:
            target = max(target, self.fin)
        return target

    # -- ending -------------------------------------------------------------------------------

    def end(self, at_fin: bool) -> None:
        """The direction ended: forget what is buffered. ``at_fin``: the stream stops just past
        its FIN, which takes one sequence number (RFC 9293 §3.4)."""
        self.fast = False
        if at_fin and self.fin is not None:
            self.off = self.fin + 1
            self.nxt = (self.base + self.off) & SEQ_MASK
        self.starts.clear()
        self.pend.clear()
        self.pend_cost = 0
        self.hint = 0
        self.wait = -1
        self.hold = False

    def release(self) -> None:
        """Forget everything, the delivered pieces too (the connection is gone)."""
        self.starts.clear()
        self.pend.clear()
        self.recent.clear()


def _overlap(
    old: bytes | None,
    old_start: int,
    new: bytes | None,
    new_start: int,
    lo: int,
    hi: int,
    overlaps: list[tuple[int, int, bool]],
) -> None:
    """Record that bytes ``lo..hi`` were captured twice, and whether the copies differ."""
    if hi <= lo:
        return
    differs = False
    if old is not None and new is not None:
        a = memoryview(old)[lo - old_start : hi - old_start]
        b = memoryview(new)[lo - new_start : hi - new_start]
        differs = a != b
    overlaps.append((lo, hi, differs))
