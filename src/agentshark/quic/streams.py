"""Bytes of a CRYPTO or STREAM flow reassembled by offset (RFC 9000 §2.2, §19.6, §19.8).

UDP loses, reorders and duplicates; QUIC retransmits lost data in new packets, at the same
offsets. :class:`Reassembly` hands out each byte once, in order: data at the next offset goes
straight through (the common case costs one comparison), data past it is held until the bytes
before it come, data already handed out is dropped as the duplicate it is. A hole that never
fills is not filled: :meth:`Reassembly.holes` names it and gives the held bytes after it.
"""

from __future__ import annotations

__all__ = ["Reassembly"]


class Reassembly:
    """One flow's bytes in order; ``delivered`` is the offset handed out up to."""

    __slots__ = ("_held", "delivered", "held_bytes")

    def __init__(self) -> None:
        self.delivered = 0
        self._held: dict[int, bytes] = {}
        self.held_bytes = 0

    def add(self, offset: int, data: bytes) -> bytes:
        """The bytes that are now in order from ``delivered`` on (empty: none yet)."""
        end = offset + len(data)
        if offset == self.delivered and not self._held:
            self.delivered = end
            return data
        if end <= self.delivered:
            return b""  # a retransmission of bytes already handed out
        if offset > self.delivered:
            old = self._held.get(offset)
            if old is None or len(old) < len(data):
                self.held_bytes += len(data) - (len(old) if old is not None else 0)
                self._held[offset] = data
            return b""
        out = [data[self.delivered - offset :]]
        self.delivered = end
        while self._held:
            nxt = min(self._held)
            if nxt > self.delivered:
                break
            piece = self._held.pop(nxt)
            self.held_bytes -= len(piece)
            if nxt + len(piece) > self.delivered:
                out.append(piece[self.delivered - nxt :])
                self.delivered = nxt + len(piece)
        return b"".join(out)

    def holes(self) -> list[tuple[int, int, bytes]]:
        """``(offset, size, bytes after it)`` for each hole before held bytes, in order; the
        held bytes are handed out with them (``delivered`` moves past the last)."""
        out: list[tuple[int, int, bytes]] = []
        while self._held:
            nxt = min(self._held)
            piece = self._held.pop(nxt)
            self.held_bytes -= len(piece)
            if nxt + len(piece) <= self.delivered:
                continue
            if nxt > self.delivered:
                out.append((self.delivered, nxt - self.delivered, piece))
            else:
                out.append((self.delivered, 0, piece[self.delivered - nxt :]))
            self.delivered = nxt + len(piece)
        return out
