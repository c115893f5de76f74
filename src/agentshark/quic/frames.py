"""QUIC frames (RFC 9000 §19, §12.4; RFC 9221 §4 DATAGRAM), read out of a decrypted payload.

A payload is a sequence of frames, each starting with its type as a variable-length integer.
The frames a reader needs are returned as values; the others (flow control, path probes,
tokens...) are read past by their encodings and counted by name in ``skipped``. A frame type
QUIC does not define has no length to skip by (§12.4: it is a connection error for a peer), so
it ends the payload's reading with a :class:`~agentshark.quic.wire.WireError` naming it, after
the frames before it were returned.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshark.quic.wire import WireError, read_varint

__all__ = [
    "Ack",
    "ConnectionClose",
    "Crypto",
    "Datagram",
    "Frame",
    "NewConnectionId",
    "ResetStream",
    "RetireConnectionId",
    "StopSending",
    "Stream",
    "parse_frames",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Crypto:
    offset: int
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Stream:
    stream_id: int
    offset: int
    data: bytes
    fin: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetStream:
    stream_id: int
    error_code: int
    final_size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class StopSending:
    stream_id: int
    error_code: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Ack:
    largest: int
    ranges: int  # ACK ranges after the first


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionClose:
    error_code: int
    frame_type: int | None  # None: the application's close (0x1d)
    reason: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class NewConnectionId:
    sequence: int
    retire_prior_to: int
    cid: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class RetireConnectionId:
    sequence: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Datagram:
    data: bytes


Frame = (
    Crypto
    | Stream
    | ResetStream
    | StopSending
    | Ack
    | ConnectionClose
    | NewConnectionId
    | RetireConnectionId
    | Datagram
)

# Frames read past, by type: how many variable-length integers follow, then how many raw
# bytes (-1: a length-prefixed byte string). RFC 9000 §19.7, §19.9-§19.14, §19.17-§19.18, §19.20.
_SKIPPED: dict[int, tuple[str, int, int]] = {
    0x07: ("NEW_TOKEN", 0, -1),
    0x10: ("MAX_DATA", 1, 0),
    0x11: ("MAX_STREAM_DATA", 2, 0),
    0x12: ("MAX_STREAMS", 1, 0),
    0x13: ("MAX_STREAMS", 1, 0),
    0x14: ("DATA_BLOCKED", 1, 0),
    0x15: ("STREAM_DATA_BLOCKED", 2, 0),
    0x16: ("STREAMS_BLOCKED", 1, 0),
    0x17: ("STREAMS_BLOCKED", 1, 0),
    0x1A: ("PATH_CHALLENGE", 0, 8),
    0x1B: ("PATH_RESPONSE", 0, 8),
    0x1E: ("HANDSHAKE_DONE", 0, 0),
    0x01: ("PING", 0, 0),
}


def parse_frames(payload: bytes, skipped: dict[str, int]) -> list[Frame]:
    """The frames of one decrypted payload; frames read past are counted in ``skipped``.

    Raises WireError at the first frame that does not parse (the frames before it are in
    the exception's ``args[1]``)."""
    out: list[Frame] = []
    pos = 0
    end = len(payload)
    try:
        while pos < end:
            kind = payload[pos]
            if kind == 0x00:  # PADDING runs: skip them whole
                stripped = len(payload) - len(payload[pos:].lstrip(b"\x00"))
                pos = stripped if stripped > pos else end
                skipped["PADDING"] = skipped.get("PADDING", 0) + 1
                continue
            if kind & 0xC0:
                kind, pos = read_varint(payload, pos)
            else:
                pos += 1
            pos = _frame(kind, payload, pos, out, skipped)
    except WireError as exc:
        raise WireError(str(exc), out) from None
    return out


def _bytes(payload: bytes, pos: int, size: int, what: str) -> tuple[bytes, int]:
    end = pos + size
    if end > len(payload):
        raise WireError(f"a {what} frame runs past the end of its packet")
    return payload[pos:end], end


def _frame(kind: int, payload: bytes, pos: int, out: list[Frame], skipped: dict[str, int]) -> int:
    """Read one frame of type ``kind`` whose body starts at ``pos``; returns its end."""
    if 0x08 <= kind <= 0x0F:  # STREAM (§19.8): OFF 0x04, LEN 0x02, FIN 0x01
        if pos < len(payload) and payload[pos] < 0x40:  # a one-byte stream id: most of them
            sid = payload[pos]
            pos += 1
        else:
            sid, pos = read_varint(payload, pos)
        offset = 0
        if kind & 0x04:
            offset, pos = read_varint(payload, pos)
        if kind & 0x02:
            size, pos = read_varint(payload, pos)
        else:
            size = len(payload) - pos
        data, pos = _bytes(payload, pos, size, "STREAM")
        out.append(Stream(stream_id=sid, offset=offset, data=data, fin=bool(kind & 1)))
        return pos
    if kind in (0x02, 0x03):  # ACK (§19.3)
        largest, pos = read_varint(payload, pos)
        _, pos = read_varint(payload, pos)  # ack delay
        count, pos = read_varint(payload, pos)
        _, pos = read_varint(payload, pos)  # first range
        for _ in range(2 * count + (3 if kind == 0x03 else 0)):
            _, pos = read_varint(payload, pos)
        out.append(Ack(largest=largest, ranges=count))
        return pos
    if kind == 0x06:  # CRYPTO (§19.6)
        offset, pos = read_varint(payload, pos)
        size, pos = read_varint(payload, pos)
        data, pos = _bytes(payload, pos, size, "CRYPTO")
        out.append(Crypto(offset=offset, data=data))
        return pos
    if kind == 0x04:  # RESET_STREAM (§19.4)
        sid, pos = read_varint(payload, pos)
        code, pos = read_varint(payload, pos)
        final, pos = read_varint(payload, pos)
        out.append(ResetStream(stream_id=sid, error_code=code, final_size=final))
        return pos
    if kind == 0x05:  # STOP_SENDING (§19.5)
        sid, pos = read_varint(payload, pos)
        code, pos = read_varint(payload, pos)
        out.append(StopSending(stream_id=sid, error_code=code))
        return pos
    if kind in (0x1C, 0x1D):  # CONNECTION_CLOSE (§19.19)
        code, pos = read_varint(payload, pos)
        frame_type = None
        if kind == 0x1C:
            frame_type, pos = read_varint(payload, pos)
        size, pos = read_varint(payload, pos)
        reason, pos = _bytes(payload, pos, size, "CONNECTION_CLOSE")
        out.append(ConnectionClose(error_code=code, frame_type=frame_type, reason=reason))
        return pos
    if kind == 0x18:  # NEW_CONNECTION_ID (§19.15)
        seq, pos = read_varint(payload, pos)
        prior, pos = read_varint(payload, pos)
        size = payload[pos] if pos < len(payload) else 0
        cid, pos = _bytes(payload, pos + 1, size, "NEW_CONNECTION_ID")
        _, pos = _bytes(payload, pos, 16, "NEW_CONNECTION_ID")  # stateless reset token
        out.append(NewConnectionId(sequence=seq, retire_prior_to=prior, cid=cid))
        return pos
    if kind == 0x19:  # RETIRE_CONNECTION_ID (§19.16)
        seq, pos = read_varint(payload, pos)
        out.append(RetireConnectionId(sequence=seq))
        return pos
    if kind in (0x30, 0x31):  # DATAGRAM (RFC 9221 §4)
        size = len(payload) - pos
        if kind == 0x31:
            size, pos = read_varint(payload, pos)
        data, pos = _bytes(payload, pos, size, "DATAGRAM")
        out.append(Datagram(data=data))
        return pos
    known = _SKIPPED.get(kind)
    if known is None:
        raise WireError(
            f"frame type 0x{kind:x} is not one QUIC defines: the rest of the packet is unreadable"
        )
    name, ints, raw = known
    for _ in range(ints):
        _, pos = read_varint(payload, pos)
    if raw == -1:
        size, pos = read_varint(payload, pos)
        _, pos = _bytes(payload, pos, size, name)
    elif raw:
        _, pos = _bytes(payload, pos, raw, name)
    skipped[name] = skipped.get(name, 0) + 1
    return pos
