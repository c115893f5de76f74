"""HTTP/2 header blocks: the fragments of HEADERS, PUSH_PROMISE and CONTINUATION frames in,
decoded blocks handed to the connection's streams out (RFC 9113 §4.3, §6.2, §6.6, §6.10).

Input: the fragments the frame loop of :class:`~agentshark.http.h2.H2Connection` cuts
from each frame, with the frame's flags, stream, promised stream and arrival time; state in
the :class:`~agentshark.http.h2_direction.Direction` they came on. Output: each whole block
decoded by the direction's HPACK state (:mod:`~agentshark.http.h2_hpack`) and passed to
:class:`~agentshark.http.h2_streams.Streams` (``on_head``, ``on_push``, ``on_lost_block``),
which emit the message events; :class:`~agentshark.http.events.ParseError` values for what
breaks the rules below.

* A header block is a HEADERS or PUSH_PROMISE frame and the CONTINUATION frames that follow
  it up to END_HEADERS (§4.3, https://www.rfc-editor.org/rfc/rfc9113#section-4.3); it is
  decoded when whole, with the HPACK state of the direction it came on (PUSH_PROMISE blocks
  are the server's).
* Any other frame before END_HEADERS interrupts it (§6.10): what arrived is decoded, the
  message is marked incomplete (the block is cut) and HPACK forgets its table (the block's
  end, and the entries it added, never came).
* A block longer than :data:`MAX_HEADER_BLOCK` bytes is decoded up to there, cut, and HPACK
  forgets its table (the entries the rest added are unknown).
* A block a capture gap cut (``block_lost``) keeps no fragments; its message is reported
  without the fields that never came (:meth:`~agentshark.http.h2_streams.Streams.on_lost_block`).
"""

from __future__ import annotations

from agentshark.http.events import HttpEvent
from agentshark.http.h2_direction import Direction
from agentshark.http.h2_frames import CONTINUATION, END_STREAM, type_name
from agentshark.http.h2_hpack import Decoded

__all__ = [
    "MAX_HEADER_BLOCK",
    "block_add",
    "block_done",
    "block_interrupted_by",
    "block_start",
]

MAX_HEADER_BLOCK = 1 << 20  # bytes of one header block kept (HEADERS + CONTINUATIONs)


def block_start(
    d: Direction, sid: int, fragment: bytes, flags: int, promised: int, started: float
) -> None:
    """A HEADERS (``promised`` 0) or PUSH_PROMISE frame opens a block on ``sid`` with
    ``fragment``; ``promised`` -1: a PUSH_PROMISE whose promised stream is unknown."""
    streams = d.streams
    streams.max_stream = max(streams.max_stream, sid, promised)
    if not d.response and sid > streams.max_client:
        if sid != streams.max_client + 2:  # a skipped id (or a stream the capture missed)
            streams.client_ids_known = False
        streams.max_client = sid
    d.block = [fragment]
    d.block_size = len(fragment)
    d.block_stream = sid
    d.block_end = bool(flags & END_STREAM) and not promised
    d.block_promised = promised
    d.block_lost = False
    d.block_ts = started
    d.block_offset = d.offset


def block_add(d: Direction, fragment: bytes, ts: float, out: list[HttpEvent]) -> None:
    """A CONTINUATION of the open block."""
    if d.block_lost:
        return
    if d.block_size + len(fragment) > MAX_HEADER_BLOCK:
        if d.block_size <= MAX_HEADER_BLOCK:
            message = (
                f"the header block of stream {d.block_stream} exceeds {MAX_HEADER_BLOCK} "
                "bytes; the rest is not decoded"
            )
            out.append(d.error(ts, message, stream=d.block_stream))
        d.block_size = MAX_HEADER_BLOCK + 1
        return
    d.block.append(fragment)
    d.block_size += len(fragment)


def block_interrupted_by(
    d: Direction, ftype: int, sid: int, ts: float, out: list[HttpEvent]
) -> None:
    """A frame of ``ftype`` on ``sid`` while ``d`` has a block open: unless it is that
    block's CONTINUATION, it interrupts the block (§6.10): decode what came."""
    if ftype == CONTINUATION and sid == d.block_stream:
        return
    message = (
        f"the header block of stream {d.block_stream} was interrupted by a "
        f"{type_name(ftype)} frame on stream {sid}; decoding what arrived"
    )
    out.append(d.error(ts, message, stream=d.block_stream))
    block_done(d, ts, out, cut=True)
    d.hpack.forget()  # the block's end (and the entries it added) never came


def block_done(d: Direction, ts: float, out: list[HttpEvent], *, cut: bool = False) -> None:
    """The block ended (END_HEADERS), or was ``cut`` short (its fields are not all there,
    whatever the part that came decodes to)."""
    sid = d.block_stream
    if d.block_lost:
        d.clear_block()
        if d.block_promised >= 0:  # (a lost PUSH_PROMISE names no stream we know)
            d.streams.on_lost_block(d.side, sid, d.block_end, d.block_ts, d.block_offset, ts, out)
        return
    block = d.block[0] if len(d.block) == 1 else b"".join(d.block)
    d.block = []  # what clear_block does, inline: once per message
    d.block_stream = 0
    if d.streams.proving[d.side] and not d.block_promised:
        d.streams.prove(d.side, sid)  # a HEADERS frame on it: see h2_gaps.settle
    proof = d.new_stream_proof
    if proof is not None and sid > proof.max_client:  # (after a client gap: h2_gaps)
        decoded = proof.decode_new_head(sid, block)
    else:
        decoded = d.hpack.decode(block)
    if d.block_size > MAX_HEADER_BLOCK:
        d.hpack.forget()  # the entries the cut part added are unknown
        cut = True
    if cut:
        decoded = Decoded(decoded.headers, decoded.error or "the block was cut", False)
    if d.block_promised:
        d.streams.on_push(
            d.side, sid, d.block_promised, decoded, d.block_ts, d.block_offset, ts, out
        )
    else:
        d.streams.on_head(d.side, sid, decoded, d.block_end, d.block_ts, d.block_offset, ts, out)
