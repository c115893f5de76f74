"""The decoding state of one direction of an HTTP/2 connection, and the SETTINGS it pairs.

Input: what the frame loop of :class:`~agentshark.http.h2.H2Connection`, the header block
assembly (:mod:`~agentshark.http.h2_blocks`) and the gap handling
(:mod:`~agentshark.http.h2_gaps`) write into it. Output: the same state, read back by them;
:class:`~agentshark.http.events.ParseError` values located at the direction's offset.

:class:`Direction` is plain slotted attributes, no properties and no sub-objects: the DATA
path reads several of them per frame. It knows where the direction is (:class:`Mode`, the
stream offset), the bytes it holds until a unit is whole (a frame header, a control frame,
the preface, a resync candidate), the DATA payload and the header block it is inside, its
HPACK state and the limits the peer set.

SETTINGS (RFC 9113 §6.5.3, https://www.rfc-editor.org/rfc/rfc9113#section-6.5.3): the
settings one side sends bind the *other* side (SETTINGS_HEADER_TABLE_SIZE its HPACK encoder,
SETTINGS_MAX_FRAME_SIZE the frames it sends) from when that other side acknowledges them,
and ACKs answer SETTINGS frames in the order they were sent. Each side keeps what it sent
and is not yet acknowledged; an ACK takes the oldest. An ACK for SETTINGS sent before the
capture started finds nothing and changes nothing.
"""

from __future__ import annotations

from collections import deque
from enum import Enum, auto

from agentshark.http.events import HttpEvent, ParseError
from agentshark.http.h2_frames import (
    ACK,
    DEFAULT_MAX_FRAME,
    MAX_FRAME_LIMIT,
    SETTINGS_ENABLE_PUSH,
    SETTINGS_HEADER_TABLE_SIZE,
    SETTINGS_MAX_FRAME_SIZE,
)
from agentshark.http.h2_hpack import BlockDecoder, Decoded
from agentshark.http.h2_streams import Streams

__all__ = ["FRAMES", "Direction", "LostFrames", "Mode", "NewStreamProof", "SentSettings"]

# SETTINGS a side sent and the other side has not acknowledged yet, oldest first
SentSettings = deque[dict[int, int]]


class Mode(Enum):
    PREFACE = auto()  # the client's connection preface is expected
    MAYBE_PREFACE = auto()  # mid-connection capture: a preface is possible, not expected
    FRAMES = auto()  # in sync: at a frame boundary or inside a known frame
    RESYNC = auto()  # lost: looking for a plausible frame header


FRAMES = Mode.FRAMES  # (a module global: the frame loop compares with it per frame)


class LostFrames:
    """A capture gap past a frame boundary, its cost not decided yet (h2_gaps.settle)."""

    __slots__ = ("acked", "offset", "peer", "peer_parsed", "size", "why")

    def __init__(self, why: str, offset: int, size: int, peer: Direction) -> None:
        self.why = why  # names the gap
        self.offset = offset  # where the lost frames start
        self.size = size  # bytes of them in the gap (exact, or a bound); a resync adds more
        self.peer = peer  # the other direction
        self.peer_parsed = peer.offset  # how far it was parsed then
        self.acked = -2  # what the first segment after the gap acknowledged (-2: not yet)


class NewStreamProof:
    """After a client gap that may have held a header block (h2_gaps.settle): the doubted
    HPACK entries are confirmed when the open requests have shown a frame each
    (:meth:`streams_proved`) and the next new stream is ``max_client`` + 2 with a request
    head (:meth:`new_head`): no new stream's HEADERS was in the gap."""

    __slots__ = ("d", "max_client", "new_done", "streams_done")

    def __init__(self, d: Direction, max_client: int, *, streams_done: bool) -> None:
        self.d = d
        self.max_client = max_client
        self.streams_done = streams_done
        self.new_done = False

    def streams_proved(self) -> None:
        self.streams_done = True
        self._settle()

    def decode_new_head(self, sid: int, block: bytes) -> Decoded:
        """The first header block on a stream above ``max_client``: tried on a copy of the
        decoder (on probation, so a pseudo-header it shows was sent in it: a request head,
        not trailers), then decoded with what that proved."""
        d = self.d
        d.new_stream_proof = None
        tried = d.hpack.copy().decode(block)
        if sid == self.max_client + 2 and any(name[:1] == ":" for name, _ in tried.headers):
            self.new_done = True
            self._settle()
        else:  # a trailer section, or another id: a lost HEADERS may have opened one
            d.hpack.drop_doubted()
        return d.hpack.decode(block)

    def _settle(self) -> None:
        if self.streams_done and self.new_done:
            self.d.new_stream_proof = None
            self.d.hpack.confirm()


class Direction:
    """Decoding state of one direction. Plain attributes: DATA frames read them."""

    __slots__ = (
        "base",
        "block",
        "block_end",
        "block_lost",
        "block_offset",
        "block_promised",
        "block_size",
        "block_stream",
        "block_ts",
        "data_emit",
        "data_end",
        "data_left",
        "data_stream",
        "held",
        "held_len",
        "held_times",
        "held_ts",
        "hpack",
        "max_frame",
        "mode",
        "need",
        "new_stream_proof",
        "offset",
        "pad_left",
        "peer_settings",
        "pending",
        "response",
        "settings",
        "side",
        "skip_offset",
        "skipped",
        "streams",
        "whole",
    )

    def __init__(
        self,
        side: int,
        mode: Mode,
        *,
        history_known: bool,
        streams: Streams,
        settings: SentSettings,
        peer_settings: SentSettings,
    ) -> None:
        self.side = side  # 0: the client's direction
        self.response = side == 1
        self.mode = mode
        self.streams = streams  # the connection's streams, shared by both directions
        self.offset = 0  # stream offset of the first byte not consumed (held bytes included)
        self.base = 0  # while a buffer is parsed: the stream offset of its first byte
        self.held: list[bytes] = []  # bytes of an unfinished frame, preface or resync run
        self.held_len = 0
        self.held_ts = 0.0  # arrival time of the first held byte
        self.held_times: list[float] = []  # the arrival time of each held piece (one per piece)
        self.need = 0  # held bytes wanted before parsing again
        self.data_left = 0  # DATA payload bytes still to come
        self.pad_left = 0  # DATA padding bytes still to come
        self.data_stream = 0
        self.data_emit = False  # the payload belongs to a message we report
        self.data_end = False  # END_STREAM ends that message after the payload
        self.block: list[bytes] = []  # header block fragments
        self.block_stream = 0  # 0: no header block open
        self.block_size = 0
        self.block_end = False  # END_STREAM on the HEADERS frame
        self.block_lost = False  # a capture gap cut the block: its fragments are dropped
        self.block_promised = 0  # the promised stream of a PUSH_PROMISE block
        self.block_ts = 0.0
        self.block_offset = 0
        self.hpack = BlockDecoder(history_known=history_known)
        # the receiver's SETTINGS_MAX_FRAME_SIZE, None when unknown
        self.max_frame: int | None = DEFAULT_MAX_FRAME if history_known else None
        self.settings = settings  # sent by this side, not yet acknowledged
        self.peer_settings = peer_settings  # sent by the other side, for this side's ACKs
        self.skipped = 0  # bytes skipped by a resync, not yet reported
        self.skip_offset = 0
        # Every byte this direction sent is known (no gap, no lost sync, not mid-connection).
        self.whole = history_known
        # A gap past a frame boundary waiting for the next segment's ACK number and the
        # resync's end (h2_gaps). None: none.
        self.pending: LostFrames | None = None
        self.new_stream_proof: NewStreamProof | None = None  # (client side, h2_gaps)

    # -- SETTINGS -------------------------------------------------------------------------

    def on_settings(self, flags: int, settings: dict[int, int]) -> None:
        """A SETTINGS frame this side sent (``settings``: {} when a gap cut them): an ACK
        puts the oldest SETTINGS of the other side in effect here; the others wait for
        theirs."""
        streams = self.streams
        if not flags & ACK:
            self.settings.append(settings)
            if self.side == 0 and settings.get(SETTINGS_ENABLE_PUSH, 0) != 0:
                streams.push_off = False  # the server may act on it from receipt
            return
        if not self.peer_settings:
            return  # the acknowledged SETTINGS were sent before the capture started
        acked = self.peer_settings.popleft()
        if self.side == 1 and acked.get(SETTINGS_ENABLE_PUSH) == 0 and streams.settings_sure:
            streams.push_off = True  # (§6.5.2: no PUSH_PROMISE once it has them)
        table_size = acked.get(SETTINGS_HEADER_TABLE_SIZE)
        if table_size is not None:
            self.hpack.set_table_size_limit(table_size)  # the limit on this side's encoder
        frame_size = acked.get(SETTINGS_MAX_FRAME_SIZE)
        if frame_size is not None and self.max_frame is not None:
            self.max_frame = min(max(frame_size, DEFAULT_MAX_FRAME), MAX_FRAME_LIMIT)

    # -- held bytes and frame state -------------------------------------------------------

    def hold(self, buf: bytes, pos: int, need: int, ts: float) -> int:
        """Keep ``buf[pos:]`` until ``need`` bytes are there; returns the end of ``buf``."""
        if pos:
            self.held_ts = ts  # the held bytes start in the newest feed
        self.held = [buf[pos:] if pos else buf]
        self.held_times = [ts]
        self.held_len = len(buf) - pos
        self.need = need
        return len(buf)

    def drop_held(self) -> None:
        """Give up the held bytes (they count as consumed)."""
        self.offset += self.held_len
        self.held = []
        self.held_times = []
        self.held_len = 0

    def clear_block(self) -> None:
        """No header block is open any more."""
        self.block = []
        self.block_stream = 0
        self.block_lost = False

    def skip_frame_rest(self, size: int) -> None:
        """The next ``size`` bytes end the current frame and are skipped, as padding is:
        no payload is reported from them, and they end no message."""
        self.data_left = 0
        self.data_emit = self.data_end = False
        self.pad_left = size

    def reset_frame_state(self) -> None:
        """Inside no frame: no DATA payload or padding to come, no header block open."""
        self.data_left = self.pad_left = 0
        self.data_emit = self.data_end = False
        self.clear_block()

    def end_data(self, ts: float, out: list[HttpEvent]) -> None:
        """The payload and padding of a DATA frame with END_STREAM are all there."""
        self.data_end = False
        self.streams.end_message(self.side, self.data_stream, ts, out, complete=True)

    def error(self, ts: float, message: str, *, stream: int | None = None) -> ParseError:
        """A ParseError at the direction's current offset."""
        return ParseError(
            response=self.response, message=message, offset=self.offset, ts=ts, stream=stream
        )
