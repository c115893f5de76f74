"""Capture gaps and lost sync in an HTTP/2 direction: what they cost, and finding the frames
again (RFC 9113 §4.1).

Input: a capture gap in one direction (its size exact, as TCP sequence numbers give it, or
an upper bound after TLS), the ACK number of the segment after it,
bytes that are not frames, and the :class:`~agentshark.http.h2_direction.Direction` state
they hit. Output: :class:`~agentshark.http.events.BodyGap` and
:class:`~agentshark.http.events.ParseError` events, messages marked lossy in
:class:`~agentshark.http.h2_streams.Streams`, and the direction back in
:data:`~agentshark.http.h2_direction.FRAMES` mode at a frame boundary.

A capture gap costs the streams it may have touched, never the connection:

* inside a DATA payload (its frame header seen): a :class:`BodyGap` on that stream only;
* inside another frame whose 9-byte header was seen: that frame is lost, and the rest of it
  is skipped where it comes, so the frames after it are read in place. A cut HEADERS,
  PUSH_PROMISE or CONTINUATION loses its header block (its message is reported with the
  fields that never came missing, marked incomplete) and the direction's HPACK table is
  forgotten; a cut RST_STREAM marks both messages of its stream; a cut SETTINGS keeps its
  place in the SETTINGS/ACK pairing; PING, WINDOW_UPDATE, PRIORITY, GOAWAY cost nothing
  but a diagnostic;
* past a frame boundary (or inside a frame header): which frames were lost is unknown, but
  the evidence bounds it. The open header block is cut, the direction resyncs on the next
  frame boundary with the stricter rules of :func:`~agentshark.http.h2_frames.chain_verdict`
  (DATA, HEADERS and CONTINUATION only on streams that can still carry them), and what the
  lost frames (the gap, plus the bytes the resync skips: the rest of a frame the gap began)
  can have touched is decided by :func:`settle` when the frames are found again:

  - *server bytes*: the first segment after the gap carries a TCP ACK number (``feed``'s
    ``acked``), which bounds what the server had received from the client when it sent the
    lost bytes (it sent them before that segment). A response whose request's header block
    starts at or past that client offset cannot have a frame in them, nor can one that had
    ended (END_STREAM, §8.1) before the gap, nor (when the lost bytes are fewer than the 10
    a response head takes) one whose head has not come yet; every other response is marked
    lossy, with a diagnostic on its stream naming the gap (direction, byte offset, size). A
    request that arrives later but starts below the bound is marked when it comes. Without
    an ACK number the bound is what the client had sent before the gap in capture order;
  - *client bytes*: every request that has not ended is marked lossy (streams opened after
    the gap are untouched: their HEADERS come after it), and so is every response not ended
    when the lost bytes can hold a RST_STREAM (13 bytes, §6.4): the client may have reset
    its stream, and the server's frames after the reset are not counted (as a capture
    without the loss would not); a later response on a stream above
    the highest the client had opened, whose request is never seen, is
    ``http.request_lost``.

  The marked messages go on: their frames after the resync are still added, and they end
  incomplete.

HPACK after lost frames (RFC 7541 §2.3.3, §4.4): the dynamic table is then "the entries
added since the gap (known, newest first) and an unknown tail". An index into the known
entries is sound (the encoder's table starts with the same ones; an entry either side
evicted is never referenced wrongly, the two tables being prefixes of one list), static
indexes and literals always are; an index into the tail leaves that field out and that
block's message incomplete, with a diagnostic, and decoding goes on. The tail is kept when
the lost frames can be shown to hold no header block that added an entry, and kept on
probation (:meth:`~agentshark.http.h2_hpack.BlockDecoder.doubt`) until that is shown:

- fewer than 11 bytes cannot hold an entry (a HEADERS frame with a 2-byte literal);
- server bytes: when every response the lost frames can have touched (above) had its head
  already, push is off (the client's SETTINGS_ENABLE_PUSH 0 acknowledged, no SETTINGS lost
  since), every client byte below the ACK bound was seen, and no client reset crossed a
  response in flight, only trailers (HEADERS with END_STREAM) can have been lost: each such
  stream's next DATA or HEADERS frame proves its END_STREAM was not
  (:meth:`~agentshark.http.h2_streams.Streams.prove`), and the tail is confirmed when all
  have. A response with no head yet, or no evidence: the tail is dropped;
- client bytes: when every client stream is known (the capture saw the start, and each new
  id was the last + 2), the tail is confirmed once each open request has shown a frame and
  the next new stream is the next id and carries a request head (no lost HEADERS opened
  one); another id drops it.

A cut header block (a gap inside it, an interrupting frame, a block over the size limit) is
a lost header block: the table is forgotten (no tail). The rules assume peers that follow
RFC 9113's stream states (no frame after END_STREAM, trailers only with END_STREAM, no
PUSH_PROMISE once push is off) and gap sizes that are exact or an upper bound (TLS gives a
bound). So every message is either what a clean capture gives or marked incomplete, and a
DATA frame is only ever attributed by its own frame header.

Bytes that are not frames (a capture that started mid-connection, garbage, a frame larger
than SETTINGS_MAX_FRAME_SIZE allows, what follows a gap past a frame boundary) are skipped
up to the first point :func:`~agentshark.http.h2_frames.chain_verdict` accepts, with one
ParseError for the bytes skipped.
"""

from __future__ import annotations

from agentshark.http.events import BodyGap, HttpEvent, ParseError
from agentshark.http.h2_blocks import block_done, block_interrupted_by, block_start
from agentshark.http.h2_direction import FRAMES, Direction, LostFrames, Mode, NewStreamProof
from agentshark.http.h2_frames import (
    CONTINUATION,
    DATA,
    DEFAULT_MAX_FRAME,
    END_HEADERS,
    END_STREAM,
    FRAME_HEADER,
    HEADERS,
    PUSH_PROMISE,
    RST_STREAM,
    SETTINGS,
    chain_verdict,
    type_name,
)

# The fewest bytes of frames that can hold a response head (a HEADERS frame whose block is
# one indexed field, ``:status``), and that can add a dynamic table entry (a HEADERS frame
# whose block is one literal with incremental indexing, indexed name, empty value: RFC 7541
# §6.2.1). Fewer lost bytes cannot have done either; a size update (one byte) changes no
# index of the entries we hold that the encoder still has.
_SMALLEST_HEAD = 9 + 1
_SMALLEST_INSERT = 9 + 2
_SMALLEST_RESET = 9 + 4  # a RST_STREAM frame (RFC 9113 §6.4)

__all__ = ["gap_label", "lose_sync", "on_gap", "report_skipped", "resync", "settle"]


def gap_label(d: Direction, size: int) -> str:
    """How diagnostics name a gap of ``size`` bytes starting after what ``d`` received."""
    side = "server" if d.response else "client"
    return f"a capture gap of {size} bytes at {side} byte {d.offset + d.held_len}"


def on_gap(
    d: Direction, peer: Direction, size: int, ts: float, out: list[HttpEvent], gap: str
) -> None:
    """``size`` bytes of ``d`` were never captured (``gap`` names them); ``d`` holds no
    resync candidate (a resync has decided on the bytes it held). ``peer``: the other
    direction."""
    if d.pending is not None:  # a gap before the last one's frames were found again
        settle(d, ts, out, blind=True)
    if d.mode is FRAMES:
        if not d.held:
            size = _gap_in_data(d, size, ts, out)
        elif d.held_len >= 9:
            size = _gap_in_frame(d, size, ts, out, gap)
        if not size:
            return
    d.whole = False
    if d.mode is FRAMES:  # (with the part of a frame header it held)
        _lose_frames(d, peer, size + d.held_len, ts, out, f"{gap} lost frames")
    elif d.mode is Mode.PREFACE:
        lose_sync(d, ts, out, f"{gap} lost the connection preface")
    else:
        report_skipped(d, ts, out)
        d.drop_held()
        if d.mode is Mode.RESYNC:  # still lost: whatever the gap held is unknown too
            d.streams.taint_open(d.side, d.offset, ts, out, gap)
            if d.side == 0:
                d.streams.taint_resettable(d.offset, ts, out, gap)
            d.hpack.forget()
    d.offset += size


def _lose_frames(
    d: Direction, peer: Direction, size: int, ts: float, out: list[HttpEvent], why: str
) -> None:
    """A gap past a frame boundary: what the frames held is decided by :func:`settle` when
    the next bytes of ``d`` come with their segment's ACK number."""
    out.append(d.error(ts, why + "; resynchronizing on the next frame"))
    d.streams.settings_sure = False  # a SETTINGS frame or an ACK may be lost
    if d.side == 0:
        d.streams.push_off = False  # ... one that turned push on
        if size >= _SMALLEST_RESET:  # ... or a reset of a stream in flight
            d.streams.taint_resettable(d.offset, ts, out, why)
    cut = bool(d.block_stream)
    _cut_frame_state(d, ts, out, why)  # (what came of an open block is decoded first)
    if cut:
        d.hpack.forget()  # the rest of the open header block, and its entries, are lost
    d.pending = LostFrames(why, d.offset, size, peer)
    d.mode = Mode.RESYNC


def settle(d: Direction, ts: float, out: list[HttpEvent], *, blind: bool = False) -> None:
    """Decide what the gap pending on ``d`` cost, now that the resync found the frames
    again (the bytes it skipped were lost frames too) or gave up; ``blind``: where the lost
    frames end is unknown. See the module docstring for the rules."""
    lost = d.pending
    assert lost is not None
    d.pending = None
    why, offset, peer, peer_parsed = lost.why, lost.offset, lost.peer, lost.peer_parsed
    acked = max(lost.acked, -1)
    size = 1 << 62 if blind else lost.size + d.skipped
    streams = d.streams
    if d.side == 0:
        streams.taint_open(0, offset, ts, out, why)
        if size >= _SMALLEST_HEAD and streams.client_ids_known:
            streams.requests_lost_above = streams.max_client
            streams.requests_lost_why = why
        _settle_client_hpack(d, size)
        return
    bound = acked if acked >= 0 else peer_parsed
    heads = size >= _SMALLEST_HEAD
    opened, headless = streams.taint_unanswered(bound, offset, ts, out, why, heads=heads)
    if size < _SMALLEST_INSERT:
        return  # no header block in it can have added an entry: HPACK is untouched
    evidence = (
        acked >= 0
        and peer.whole
        and peer.pending is None
        and peer.offset >= acked
        and not peer.block_stream
        and not streams.crossing
    )
    if not evidence or headless or (opened and not streams.push_off):
        d.hpack.forget()  # a header block may be lost: older entries are unknown
    elif opened:
        d.hpack.doubt()  # only their trailers can be, and their next frame says
        streams.await_proof(1, opened, d.hpack.confirm)


def _settle_client_hpack(d: Direction, size: int) -> None:
    """What ``size`` lost bytes of client frames did to its HPACK state: nothing when too
    few to add an entry; else the entries are doubted until the requests open then show a
    frame each and the next new stream is the next id (no lost HEADERS opened one)."""
    if size < _SMALLEST_INSERT:
        return
    streams = d.streams
    if not streams.client_ids_known:
        d.hpack.forget()
        return
    d.hpack.doubt()
    opened = streams.open_messages(0)
    proof = NewStreamProof(d, streams.max_client, streams_done=not opened)
    d.new_stream_proof = proof
    streams.await_proof(0, opened, proof.streams_proved)


def _gap_in_data(d: Direction, size: int, ts: float, out: list[HttpEvent]) -> int:
    """The part of a gap inside the current DATA payload becomes a BodyGap, the part in
    its padding is skipped; returns the size of the rest of the gap."""
    if d.data_left:
        take = min(size, d.data_left)
        if d.data_emit:
            out.append(BodyGap(stream=d.data_stream, response=d.response, size=take, ts=ts))
        d.data_left -= take
        d.offset += take
        size -= take
        if d.data_left:
            return 0
    elif not d.pad_left:
        return size  # at a frame boundary
    take = min(size, d.pad_left)
    d.pad_left -= take
    d.offset += take
    size -= take
    if not d.pad_left and d.data_end:
        d.end_data(ts, out)
    return size


def _gap_in_frame(d: Direction, size: int, ts: float, out: list[HttpEvent], gap: str) -> int:
    """A gap after the held header of a frame: the frame is lost (its stream, or the
    connection-level state it carried, says so) and the rest of it that comes after
    the gap is skipped; returns the size of the part of the gap past the frame."""
    hi, lo, ftype, flags, sid = FRAME_HEADER.unpack_from(b"".join(d.held)[:9])
    rest: int = 9 + (hi << 8 | lo) - d.held_len  # bytes of the frame not yet seen
    d.drop_held()
    _frame_cut(d, ftype, flags, sid & 0x7FFFFFFF, ts, out, gap)
    take = min(size, rest)
    d.offset += take
    d.skip_frame_rest(rest - take)
    return size - take


def _frame_cut(
    d: Direction, ftype: int, flags: int, sid: int, ts: float, out: list[HttpEvent], gap: str
) -> None:
    """What a frame whose payload a gap cut costs, by type."""
    side = d.side
    what = f"{gap} cut a {type_name(ftype)} frame" + (f" of stream {sid}" if sid else "")
    if d.block_stream:
        block_interrupted_by(d, ftype, sid, ts, out)
    if ftype in (HEADERS, PUSH_PROMISE, CONTINUATION):
        _block_frame_cut(d, ftype, flags, sid, ts, out, what)
        return
    if ftype == DATA:  # the pad length was lost: payload and padding are unknown
        d.streams.taint(side, sid)
        out.append(d.error(ts, what, stream=sid or None))
        if flags & END_STREAM:
            d.streams.end_message(side, sid, ts, out, complete=False)
        return
    if ftype == RST_STREAM:  # the stream may have been reset
        d.streams.taint(0, sid)
        d.streams.taint(1, sid)
    elif ftype == SETTINGS:  # keep the order in which SETTINGS and their ACKs pair
        d.on_settings(flags, {})
        d.streams.settings_sure = False  # (what it set is unknown)
        if d.side == 0:
            d.streams.push_off = False
    out.append(d.error(ts, what, stream=sid or None))


def _block_frame_cut(
    d: Direction, ftype: int, flags: int, sid: int, ts: float, out: list[HttpEvent], what: str
) -> None:
    """A cut frame of a header block: the block is lost (``what`` says where)."""
    d.hpack.forget()  # the entries the block added are unknown
    if ftype == CONTINUATION and not d.block_stream:
        out.append(d.error(ts, what, stream=sid or None))
        return
    if ftype != CONTINUATION:
        # a lost PUSH_PROMISE's promised stream is unknown: -1, nothing to report
        block_start(d, sid, b"", flags, -1 if ftype == PUSH_PROMISE else 0, ts)
    d.block_lost = True
    out.append(d.error(ts, what + "; its header block is lost", stream=sid))
    if flags & END_HEADERS:
        block_done(d, ts, out)


def lose_sync(d: Direction, ts: float, out: list[HttpEvent], why: str) -> None:
    """The frame layer of ``d`` is lost (``why``): any frame may be gone. The header
    block it was in is cut, every message of the direction that had not ended is
    lossy, HPACK forgets its table, and the direction resyncs. Messages go on: the
    frames found after the resync still add to them."""
    out.append(d.error(ts, why + "; resynchronizing on the next frame"))
    _cut_frame_state(d, ts, out, why)
    d.whole = False
    d.streams.taint_open(d.side, d.offset, ts, out, why)
    if d.side == 0:
        d.streams.taint_resettable(d.offset, ts, out, why)
    d.hpack.forget()
    d.mode = Mode.RESYNC


def _cut_frame_state(d: Direction, ts: float, out: list[HttpEvent], why: str) -> None:
    """The frame ``d`` was in, and the header block, are cut (``why``)."""
    if d.block_stream:
        if not d.block_lost:
            message = f"{why}: the header block of stream {d.block_stream} is cut"
            out.append(d.error(ts, message, stream=d.block_stream))
        block_done(d, ts, out, cut=True)
    if d.data_left or d.pad_left:
        d.streams.taint(d.side, d.data_stream)
    d.drop_held()
    d.reset_frame_state()


def resync(
    d: Direction, buf: bytes, pos: int, ts: float, out: list[HttpEvent], *, final: bool
) -> int:
    """Skip ``buf[pos:]`` to the first frame boundary :func:`chain_verdict` accepts;
    ``final``: no more bytes will come. Returns where the frames start (``d`` is back in
    FRAMES mode), or the end of what it consumed (held: a candidate, or the last 8 bytes)."""
    i, found, wait = _scan(d, buf, pos, final=final)
    n = len(buf)
    if final and found < 0:
        i = n
    if i > pos:
        if not d.skipped:
            d.skip_offset = d.base + pos
        d.skipped += i - pos
    if found >= 0:
        if d.pending is not None:
            settle(d, ts, out)
        report_skipped(d, ts, out)
        d.mode = FRAMES
        return found
    if final:
        if d.pending is not None:  # where the lost frames end is not known
            settle(d, ts, out, blind=True)
        report_skipped(d, ts, out)
        return n
    # keep the candidate, or the last 8 bytes (a frame header may start there)
    if i >= n:
        return n
    return d.hold(buf, i, wait or 9, ts)


def _scan(d: Direction, buf: bytes, pos: int, *, final: bool) -> tuple[int, int, int]:
    """Where the search in ``buf[pos:]`` stopped, the frame boundary it found there (-1:
    none), and how many bytes from there it needs to tell (0: no candidate)."""
    n = len(buf)
    i = pos
    server = d.response
    max_frame = d.max_frame
    max_stream = d.streams.max_stream
    side = d.side
    may_carry = d.streams.may_carry

    def carried(sid: int) -> bool:
        return may_carry(side, sid)

    # A frame no longer than 65535 bytes starts with a zero byte: jump between them.
    zero_first = (max_frame or DEFAULT_MAX_FRAME) <= 0xFFFF
    while n - i >= 9:
        if zero_first and buf[i]:
            i = buf.find(b"\0", i, n - 8)
            if i < 0:
                return n - 8, -1, 0
        verdict = chain_verdict(
            buf,
            i,
            server=server,
            max_frame=max_frame,
            max_stream=max_stream,
            final=final,
            may_carry=carried,
        )
        if verdict == 0:
            return i, i, 0
        if verdict > 0:
            return i, -1, verdict
        i += 1
    return i, -1, 0


def report_skipped(d: Direction, ts: float, out: list[HttpEvent]) -> None:
    """One ParseError for the bytes a resync skipped since the last one."""
    if d.skipped:
        out.append(
            ParseError(
                response=d.response,
                message=f"skipped {d.skipped} bytes that are not HTTP/2 frames",
                offset=d.skip_offset,
                ts=ts,
            )
        )
        d.skipped = 0
