"""QPACK (RFC 9204) for a passive reader: one endpoint's header blocks -> header lists.

The decoding is ``pylsqpack``'s (a binding of ls-qpack). What is left to a reader that is
neither endpoint is when it can decode:

- The Required Insert Count of a block is encoded modulo twice the table's entries, which
  depend on the capacity the *receiver* announced in SETTINGS (RFC 9204 §4.5.1.1, §3.2.3). The
  decoder of a sender's blocks is therefore made when its peer's SETTINGS arrive; before
  that, blocks that use no dynamic entry (an encoded count of 0) decode against the static
  table, and the others wait, as do the sender's encoder-stream bytes.
- A block that refers to entries its encoder stream has not inserted yet is blocked
  (§2.1.2); the decoder hands it back when the encoder stream catches up.

Blocks that never decode (the encoder stream was lost, the capture starts mid-connection,
the peer's SETTINGS never came) are named at :meth:`QpackSide.close`.
"""

from __future__ import annotations

import pylsqpack

from agentshark.model import Headers

__all__ = ["Decoded", "QpackSide"]

Decoded = tuple[int, Headers | None, str | None]  # stream, headers (None: failed), why
_BLOCKED_MARGIN = 128  # blocked streams allowed past the announced limit (tolerant reading)


_BEFORE_CAPTURE = (
    "its header block refers to dynamic table entries the encoder stream inserted before the "
    "capture started (the connection is read from its middle)"
)


def _headers(raw: list[tuple[bytes, bytes]]) -> Headers:
    return [(_text(n), _text(v)) for n, v in raw]


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


class QpackSide:
    """The header blocks one endpoint sent, decoded with its encoder-stream instructions."""

    __slots__ = ("_decoder", "_encoder_bytes", "_midway", "_static", "_waiting", "blocked")

    def __init__(self, *, midway: bool = False) -> None:
        """``midway``: the connection is read from its middle (the peer's SETTINGS and the
        encoder stream were sent before the capture): a block that uses the dynamic table
        fails at once, named, instead of waiting for what never comes."""
        self._midway = midway
        self._decoder: pylsqpack.Decoder | None = None
        self._static: pylsqpack.Decoder | None = None
        self._encoder_bytes = bytearray()
        self._waiting: dict[int, bytes] = {}  # blocks held for the peer's SETTINGS
        self.blocked: set[int] = set()  # blocks the decoder holds for encoder instructions

    def settings(self, capacity: int, blocked: int) -> list[Decoded]:
        """The peer announced its table capacity: decode what waited for it."""
        if self._decoder is not None:
            return []
        self._decoder = pylsqpack.Decoder(capacity, blocked + _BLOCKED_MARGIN)
        out: list[Decoded] = []
        if self._encoder_bytes:
            held, self._encoder_bytes = bytes(self._encoder_bytes), bytearray()
            out.extend(self.encoder(held))
        waiting, self._waiting = self._waiting, {}
        for sid, block in waiting.items():
            found = self.block(sid, block)
            if found is not None:
                out.append(found)
        return out

    def encoder(self, data: bytes) -> list[Decoded]:
        """Encoder-stream bytes: the blocks they unblock, decoded."""
        decoder = self._decoder
        if decoder is None:
            self._encoder_bytes += data
            return []
        try:
            ready = decoder.feed_encoder(data)
        except pylsqpack.EncoderStreamError:
            why = "the encoder stream does not decode (RFC 9204 §4.3)"
            out: list[Decoded] = [(sid, None, why) for sid in sorted(self.blocked)]
            self.blocked.clear()
            self._decoder = pylsqpack.Decoder(0, 0)  # later dynamic references fail, named
            return out
        out = []
        for sid in ready:
            self.blocked.discard(sid)
            try:
                _, raw = decoder.resume_header(sid)
            except pylsqpack.DecompressionFailed:
                out.append((sid, None, "the header block does not decode (RFC 9204 §4.5)"))
                continue
            out.append((sid, _headers(raw), None))
        return out

    def block(self, sid: int, data: bytes) -> Decoded | None:
        """A header block of stream ``sid``: decoded now, or None when it has to wait."""
        decoder = self._decoder
        if decoder is None:
            if data[:1] != b"\x00" and self._midway:
                return (sid, None, _BEFORE_CAPTURE)
            if data[:1] != b"\x00":
                self._waiting[sid] = data
                return None
            if self._static is None:
                self._static = pylsqpack.Decoder(0, 0)
            decoder = self._static
        try:
            _, raw = decoder.feed_header(sid, data)
        except pylsqpack.StreamBlocked:
            self.blocked.add(sid)
            return None
        except (pylsqpack.DecompressionFailed, ValueError):  # ValueError: a block still held
            return (sid, None, "the header block does not decode (RFC 9204 §4.5)")
        return (sid, _headers(raw), None)

    def close(self) -> list[Decoded]:
        """The blocks that never decoded, with why."""
        out: list[Decoded] = [
            (
                sid,
                None,
                "its header block refers to dynamic table entries whose capacity the "
                "peer's SETTINGS would give, and no SETTINGS were captured",
            )
            for sid in self._waiting
        ]
        out.extend(
            (
                sid,
                None,
                "its header block refers to dynamic table entries the captured encoder "
                "stream never inserted (lost, or sent before the capture started)",
            )
            for sid in sorted(self.blocked)
        )
        if self._decoder is not None:
            for sid in self.blocked:
                self._decoder.cancel_stream(sid)  # the block it holds is given up
        self._waiting.clear()
        self.blocked.clear()
        return out
