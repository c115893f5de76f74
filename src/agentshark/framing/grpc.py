"""gRPC message framing: a request or response body -> its length-prefixed messages.

gRPC over HTTP/2 (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md) and
gRPC-Web (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-WEB.md) frame each message as
``flags(1) length(4, big-endian) message(length)``. Flag bit 0 says the message is
compressed with the body's ``grpc-encoding`` (``gzip``, ``deflate``, ``zstd``; ``identity``
is none); in gRPC-Web, flag bit 7 marks the trailers frame, whose message is HTTP/1-style
header lines (``grpc-status: 0``). The decoder is sans-I/O: ``feed``/``close`` return
:class:`GrpcMessage` events and Diagnostics, never an exception; a message cut by the end of
the body is reported incomplete, its payload as far as it came (not decompressed).

A message keeps at most ``max_message`` bytes of its (decompressed) payload; ``size`` still
counts all of it. The ``grpc-web-text`` variant (base64 of the whole body) is decoded by the
caller before framing (:func:`decode_grpc_web_text`).
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from collections.abc import Callable
from dataclasses import fields

import zstandard

from agentshark.errors import Diagnostic
from agentshark.framing.events import GrpcMessage, at

__all__ = ["GrpcDecoder", "GrpcMessage", "binary_metadata", "decode_grpc_web_text"]

_MAX_MESSAGE = 4 << 20  # gRPC's own default receive limit
_PREFIX = struct.Struct(">BI")  # flags, length


class GrpcDecoder:
    __slots__ = ("_buf", "_encoding", "_location", "_max", "_noted", "_offset", "_ts")

    def __init__(
        self, *, location: str = "", encoding: str | None = None, max_message: int = _MAX_MESSAGE
    ) -> None:
        self._location = location
        self._encoding = (encoding or "identity").strip().lower()
        self._max = max_message
        self._buf = bytearray()
        self._offset = 0  # body offset of _buf[0]
        self._ts = 0.0
        self._noted: set[str] = set()

    def feed(self, data: bytes, ts: float) -> list[GrpcMessage | Diagnostic]:
        out: list[GrpcMessage | Diagnostic] = []
        self._ts = ts
        buf = self._buf
        if buf:
            buf += data
            view: bytes | bytearray = buf
        else:
            view = data  # the common case: a piece starts at a message; nothing is copied
        end = len(view)
        pos = 0
        while end - pos >= 5:
            flags, length = _PREFIX.unpack_from(view, pos)
            if end - pos - 5 < length:
                break
            payload = bytes(view[pos + 5 : pos + 5 + length])
            if flags == 0 and length <= self._max:  # uncompressed, nothing to say
                out.append(_new_message(payload, length, ts, self._offset + pos))
            else:
                out.extend(self._message(flags, payload, self._offset + pos, ts))
            pos += 5 + length
        if view is buf:
            del buf[:pos]
        else:
            buf += data[pos:]
        self._offset += pos
        return out

    def close(self, ts: float) -> list[GrpcMessage | Diagnostic]:
        if not self._buf:
            return []
        where = at(self._location, self._offset)
        payload = bytes(self._buf[5:])
        self._buf.clear()
        diag = Diagnostic(
            code="grpc.truncated",
            message="the body ends inside a message; it is reported incomplete",
            location=where,
        )
        cut = GrpcMessage(
            payload=payload[: self._max],
            size=len(payload),
            wire_size=len(payload),
            compressed=False,
            ts=ts,
            offset=self._offset,
            complete=False,
            truncated=len(payload) > self._max,
        )
        return [diag, cut]

    def _message(
        self, flags: int, payload: bytes, offset: int, ts: float
    ) -> list[GrpcMessage | Diagnostic]:
        out: list[GrpcMessage | Diagnostic] = []
        if flags & 0x80:  # gRPC-Web trailers
            lines = payload.decode("latin-1").split("\r\n")
            trailers = [
                (k.strip().lower(), v.strip())
                for k, _, v in (x.partition(":") for x in lines)
                if k.strip()
            ]
            return [
                GrpcMessage(
                    payload=payload,
                    size=len(payload),
                    wire_size=len(payload),
                    compressed=False,
                    ts=ts,
                    offset=offset,
                    trailers=trailers,
                )
            ]
        if flags & 0x7E:
            out.append(
                Diagnostic(
                    code="grpc.reserved_flags",
                    message=f"a message sets reserved flag bits {flags:#04x}; it is read as sent",
                    location=at(self._location, offset),
                )
            )
        compressed = bool(flags & 1)
        data: bytes | None = payload
        if compressed:
            data, why = self._inflate(payload)
            if data is None:
                out.append(
                    Diagnostic(
                        code="grpc.undecodable",
                        message=f"a compressed message cannot be decompressed: {why}",
                        location=at(self._location, offset),
                    )
                )
        size = len(data) if data is not None else len(payload)
        truncated = data is not None and len(data) > self._max
        if truncated and data is not None:
            data = data[: self._max]
        out.append(
            GrpcMessage(
                payload=data,
                size=size,
                wire_size=len(payload),
                compressed=compressed,
                ts=ts,
                offset=offset,
                truncated=truncated,
            )
        )
        return out

    def _inflate(self, payload: bytes) -> tuple[bytes | None, str]:
        encoding = self._encoding
        limit = self._max + 1
        try:
            if encoding == "gzip":
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                return d.decompress(payload, limit), ""
            if encoding == "deflate":
                d = zlib.decompressobj()
                return d.decompress(payload, limit), ""
            if encoding == "zstd":
                reader = zstandard.ZstdDecompressor().decompressobj()
                return reader.decompress(payload)[:limit], ""
        except (zlib.error, zstandard.ZstdError) as exc:
            return None, f"it is not valid {encoding} ({exc})"
        if encoding == "identity":
            return None, "the compressed flag is set but grpc-encoding is identity (or absent)"
        return None, f"the encoding {encoding!r} is not one agentshark decodes"


def _message_setters() -> tuple[Callable[[GrpcMessage, object], None], ...]:
    names = tuple(f.name for f in fields(GrpcMessage))
    want = ("payload", "size", "wire_size", "compressed", "ts", "offset", "complete")
    assert names[:7] == want, names
    return tuple(getattr(GrpcMessage, name).__set__ for name in names)


(
    _set_payload,
    _set_size,
    _set_wire_size,
    _set_compressed,
    _set_ts,
    _set_offset,
    _set_complete,
    _set_truncated,
    _set_trailers,
) = _message_setters()
_object_new = object.__new__


def _new_message(payload: bytes, size: int, ts: float, offset: int) -> GrpcMessage:
    """``GrpcMessage(...)`` of an uncompressed whole message at half the cost (a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__``; the slot
    descriptors are faster, and the type stays frozen), as :mod:`agentshark.framing.sse`
    builds its events."""
    msg: GrpcMessage = _object_new(GrpcMessage)
    _set_payload(msg, payload)
    _set_size(msg, size)
    _set_wire_size(msg, size)
    _set_compressed(msg, False)
    _set_ts(msg, ts)
    _set_offset(msg, offset)
    _set_complete(msg, True)
    _set_truncated(msg, False)
    _set_trailers(msg, None)
    return msg


def decode_grpc_web_text(body: bytes) -> tuple[bytes, str | None]:
    """A ``grpc-web-text`` body (base64, possibly in several padded chunks) as bytes, and
    what went wrong, if anything."""
    out = bytearray()
    text = body.replace(b"\r", b"").replace(b"\n", b"")
    pos = 0
    while pos < len(text):
        end = text.find(b"=", pos)
        end = len(text) if end < 0 else end
        while end < len(text) and text[end : end + 1] == b"=":
            end += 1
        try:
            out += base64.b64decode(text[pos:end], validate=True)
        except (binascii.Error, ValueError) as exc:
            return bytes(out), f"not base64 at byte {pos} ({exc})"
        pos = end
    return bytes(out), None


def binary_metadata(value: str) -> bytes | None:
    """The bytes of a binary metadata value (a ``-bin`` key, such as
    ``grpc-status-details-bin``), or None when it is not base64.

    Binary metadata is sent base64-encoded, padding optional
    (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md); a peer that allowed
    it may instead send the raw bytes after a NUL byte ("true binary" metadata,
    https://github.com/grpc/proposal/blob/master/G1-true-binary-metadata.md; gRPC C-core does
    on loopback when both peers set HTTP/2 setting 0xFE03). The HTTP/2 reader gives header
    values as text, decoded as UTF-8 when the bytes were valid UTF-8 and as Latin-1 otherwise,
    so the bytes are recovered exactly: Latin-1 when that re-encoding is not valid UTF-8 (it
    came that way), else UTF-8.
    """
    if value.startswith("\x00"):
        return _header_bytes(value[1:])
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4))
    except ValueError:
        return None


def _header_bytes(text: str) -> bytes:
    try:
        raw = text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    return text.encode("utf-8")
