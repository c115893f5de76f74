"""The HTTP/2 frame layer's vocabulary (RFC 9113 §4, §6, §7), and how to tell a frame
header from other bytes when a decoder has lost its place.

hyperframe parses frames; this module holds what a passive decoder needs besides: the type
and flag numbers it dispatches on in its hot loop, the names of error codes, and the
plausibility rules a resynchronization uses (:func:`chain_verdict`).

How much evidence a resync point takes: a DATA payload can hold anything, even HTTP/2
frames, so one plausible 9-byte header is weak evidence. A point is accepted when
:data:`RESYNC_CHAIN` (3) plausible headers follow each other exactly (each frame ends where
the next header starts), or when the bytes end (``final``) exactly after a plausible chain.
Each header passes every rule of :func:`plausible_length`: with the length limit (one 2^-10
byte pair in random bytes), a known type, defined flags and the stream rules, a random
9-byte window passes about once in 10^8, three chained about never; text bodies (JSON,
SSE) never do, as their first byte makes a length above 16384. What can fool it is a body
that itself carries well-formed frames on live stream ids; the stream rules (no DATA or
HEADERS on a closed stream or after the sender's END_STREAM) narrow that further.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

__all__ = [
    "DEFAULT_MAX_FRAME",
    "FRAME_HEADER",
    "PREFACE",
    "chain_verdict",
    "error_name",
    "type_name",
]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # the client's connection preface (§3.4)
DEFAULT_MAX_FRAME = 16384  # SETTINGS_MAX_FRAME_SIZE initial value (§6.5.2)
MAX_FRAME_LIMIT = (1 << 24) - 1  # the largest SETTINGS_MAX_FRAME_SIZE (§6.5.2)

# Frame types (§6) and flags.
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY = range(8)
WINDOW_UPDATE, CONTINUATION = 8, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
SETTINGS_HEADER_TABLE_SIZE, SETTINGS_ENABLE_PUSH, SETTINGS_MAX_FRAME_SIZE = 0x1, 0x2, 0x5

# length (24 bits, as 16 + 8), type, flags, reserved bit + stream id (§4.1)
FRAME_HEADER = struct.Struct(">HBBBL")

_TYPE_NAMES = (
    "DATA",
    "HEADERS",
    "PRIORITY",
    "RST_STREAM",
    "SETTINGS",
    "PUSH_PROMISE",
    "PING",
    "GOAWAY",
    "WINDOW_UPDATE",
    "CONTINUATION",
)
_DEFINED_FLAGS = (0x09, 0x2D, 0, 0, 0x01, 0x0C, 0x01, 0, 0, 0x04)
_FIXED_LENGTH = {PRIORITY: 5, RST_STREAM: 4, PING: 8, WINDOW_UPDATE: 4}

_ERROR_NAMES = (  # §7
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
)

RESYNC_CHAIN = 3  # plausible frame headers in a row that make a resync point
RESYNC_WINDOW = 1 << 20  # how far a resync waits to see them
RESYNC_NEW_STREAMS = 2048  # how far above the highest stream seen a resync accepts ids


def error_name(code: int) -> str:
    """The §7 name of an error code, or its hex form (``0x1234``) when it has none."""
    return _ERROR_NAMES[code] if 0 <= code < len(_ERROR_NAMES) else f"0x{code:x}"


def type_name(ftype: int) -> str:
    return _TYPE_NAMES[ftype] if ftype < len(_TYPE_NAMES) else f"type 0x{ftype:02x}"


def chain_verdict(
    buf: bytes,
    i: int,
    *,
    server: bool,
    max_frame: int | None,
    max_stream: int,
    final: bool,
    may_carry: Callable[[int], bool] | None = None,
) -> int:
    """Is ``buf[i]`` the first byte of a frame? 0: yes, -1: no, n > 0: the n bytes from
    ``i`` are needed to tell.

    Yes takes :data:`RESYNC_CHAIN` plausible frame headers in a row, each right after the
    frame before; or, when no more bytes will come (``final``), plausible frames that end
    exactly at the last byte; or a chain that reaches beyond :data:`RESYNC_WINDOW` before
    its last header. The answer depends on the bytes alone, never on how they were cut
    into segments. ``server``, ``max_frame``, ``max_stream`` and ``may_carry``: see
    :func:`plausible_length`.
    """
    j = i
    n = len(buf)
    for _ in range(RESYNC_CHAIN):
        if n - j < 9:
            if final:  # the frames must end exactly where the bytes do
                return 0 if j == n else -1
            return 0 if j + 9 - i > RESYNC_WINDOW else j + 9 - i
        length = plausible_length(
            buf, j, server=server, max_frame=max_frame, max_stream=max_stream, may_carry=may_carry
        )
        if length < 0:
            return -1
        j += 9 + length
    return 0


def plausible_length(
    buf: bytes,
    i: int,
    *,
    server: bool,
    max_frame: int | None,
    max_stream: int,
    may_carry: Callable[[int], bool] | None = None,
) -> int:
    """The payload length of the frame header at ``buf[i:]`` if it could be one the client
    (or the ``server``) sends, else -1.

    The rules of §6 (known type, defined flags only, zero reserved bit, stream 0 or not,
    fixed lengths, stream parity), what senders do in practice (no empty DATA frame but to
    end a stream, no empty header block), and what this connection showed: lengths up to
    ``max_frame`` (the receiver's SETTINGS_MAX_FRAME_SIZE; the default when unknown),
    stream ids not far above ``max_stream`` (the highest opened so far; 0: none seen), and
    DATA, HEADERS and CONTINUATION only on streams where ``may_carry(stream id)`` (the
    sender has not ended its message there, the stream is not closed).
    """
    hi, lo, ftype, flags, sid = FRAME_HEADER.unpack_from(buf, i)
    length = hi << 8 | lo
    if ftype > CONTINUATION or sid & 0x80000000 or flags & ~_DEFINED_FLAGS[ftype]:
        return -1
    if length > (max_frame or DEFAULT_MAX_FRAME):
        return -1
    if max_stream and sid > max_stream + RESYNC_NEW_STREAMS:
        return -1
    fixed = _FIXED_LENGTH.get(ftype)
    if fixed is not None and length != fixed:
        return -1
    if ftype in (SETTINGS, PING, GOAWAY):
        ok = sid == 0 and (
            (ftype == SETTINGS and length % 6 == 0 and not (flags & ACK and length))
            or ftype == PING
            or (ftype == GOAWAY and length >= 8)
        )
    elif ftype == WINDOW_UPDATE:
        ok = True
    elif sid == 0:
        ok = False
    elif ftype == PUSH_PROMISE:
        ok = server and sid & 1 == 1 and length >= 4 + (1 if flags & PADDED else 0)
    elif ftype == DATA and not length and not flags & END_STREAM:
        ok = False  # legal, but an empty DATA frame is only ever sent to end a stream
    elif ftype in (HEADERS, CONTINUATION) and not length:
        ok = False  # no request, response or trailer section is empty
    elif ftype in (HEADERS, DATA, CONTINUATION):
        # clients send these on the streams they open (odd ids)
        ok = (server or sid & 1 == 1) and (may_carry is None or may_carry(sid))
    else:
        ok = True
    return length if ok else -1
