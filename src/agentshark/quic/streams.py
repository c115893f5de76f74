"""Bytes of a CRYPTO or STREAM flow reassembled by offset (RFC 9000 §2.2, §19.6, §19.8).

UDP loses, reorders and duplicates; QUIC retransmits lost data in new packets, at the same
offsets. :class:`Reassembly` hands out each byte once, in order: data at the next offset goes
straight through (the common case costs one comparison), data past it is held until the bytes
before it come, data already handed out is dropped as the duplicate it is. Every piece keeps
the time stamp of the packet that carried it, held or not (as TCP's pieces do in
:mod:`agentshark.net.streambuf`): a datagram the capture shows out of order changes no time.
A hole that never fills is not filled: :meth:`Reassembly.holes` names it and gives the held
bytes after it.
"""

from __future__ import annotations

__all__ = ["Piece", "Reassembly"]

Piece = tuple[bytes, float]  # bytes handed out, and the time stamp of the packet that held them


class Reassembly:
    """One flow's bytes in order; ``delivered`` is the offset handed out up to."""

    __slots__ = ("_held", "delivered", "held_bytes")

    def __init__(self) -> None:
        self.delivered = 0
        self._held: dict[int, Piece] = {}
        self.held_bytes = 0

    def add(self, offset: int, data: bytes, ts: float = 0.0) -> list[Piece]:
        """The pieces now in order from ``delivered`` on, each with its own time (empty:
        none yet)."""
        end = offset + len(data)
        if offset == self.delivered and not self._held:
            self.delivered = end
            return [(data, ts)] if data else []
        if end <= self.delivered:
            return []  # a retransmission of bytes already handed out
        if offset > self.delivered:
            old = self._held.get(offset)
            if old is None or len(old[0]) < len(data):
                self.held_bytes += len(data) - (len(old[0]) if old is not None else 0)
                self._held[offset] = (data, ts)
            return []
        out = [(data[self.delivered - offset :], ts)]
        self.delivered = end
        while self._held:
            nxt = min(self._held)
            if nxt > self.delivered:
                break
            piece, when = self._held.pop(nxt)
            self.held_bytes -= len(piece)
            if nxt + len(piece) > self.delivered:
                out.append((piece[self.delivered - nxt :], when))
                self.delivered = nxt + len(piece)
        return out

    def holes(self) -> list[tuple[int, int, bytes, float]]:
        """``(offset, size, bytes after it, their time)`` for each hole before held bytes, in
        order; the held bytes are handed out with them (``delivered`` moves past the last)."""
        out: list[tuple[int, int, bytes, float]] = []
        while self._held:
            nxt = min(self._held)
            piece, when = self._held.pop(nxt)
            self.held_bytes -= len(piece)
            if nxt + len(piece) <= self.delivered:
                continue
            if nxt > self.delivered:
                out.append((self.delivered, nxt - self.delivered, piece, when))
            else:
                out.append((self.delivered, 0, piece[self.delivered - nxt :], when))
            self.delivered = nxt + len(piece)
        return out
