"""Content codings: a :class:`~agentshark.model.Body` as sent -> the bytes it stands for.

``Content-Encoding`` lists the codings in the order they were applied
(`RFC 9110 §8.4 <https://www.rfc-editor.org/rfc/rfc9110#section-8.4>`_); they are undone in
reverse order. The decoders are incremental and sans-I/O, in the style of httpx
``_decoders.py``: ``decode(chunk) -> bytes`` and ``flush() -> bytes``, so a decoded body keeps
the arrival time of every piece (stream events are timestamped from it).

Every decoder enforces an output limit (:data:`DEFAULT_DECODE_LIMIT`, 256 MiB per body): the
zlib codings decompress with ``max_length`` so a bomb never allocates much past it, brotli uses
``output_buffer_limit`` and zstd is fed input slices small enough that even its best possible
ratio stays inside the budget.

Decoders raise :class:`ContentDecodingError` (and its subclasses); :func:`decode_body` maps
them to Diagnostics and never raises:

- ``content.decode_error``: the bytes are not in the declared coding; the raw bytes are kept.
- ``content.unsupported_encoding``: a coding we cannot undo (``compress``, ``aes128gcm``...).
- ``content.truncated``: the coded stream stops before its end (a capture cut short); what
  decoded is kept.
- ``content.trailing_data``: bytes after the end of the coded stream; they are dropped from
  the decoded view (the raw body still has them).
- ``content.limit_exceeded``: the decoded body is larger than the limit; the raw bytes are kept.
- ``content.already_decoded`` (info): the source may have decoded the body already (a VCR
  cassette) and the bytes are not encoded; they are used as they are.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import brotli
import zstandard

from agentshark.errors import Diagnostic
from agentshark.model import Body

DEFAULT_DECODE_LIMIT = 256 << 20

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD_SKIPPABLE_TAIL = b"\x2a\x4d\x18"  # a skippable frame is 0x50..0x5F followed by these
# The most output one input byte can produce: a zstd RLE block is 4 bytes for 128 KiB.
_ZSTD_MAX_RATIO = 1 << 16
_BROTLI_BOUNDED = hasattr(brotli.Decompressor, "can_accept_more_data")
_BROTLI_SLICE = 256  # input slice when the brotli binding cannot bound its output
_STEP = 1 << 20  # most output produced by one zlib / brotli call


class ContentDecodingError(Exception):
    """The bytes do not decode as ``coding``. Raised by the decoders for their direct users;
    :func:`decode_body` turns it into a Diagnostic."""

    def __init__(self, coding: str, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.coding = coding
        self.message = message
        self.offset = offset  # encoded byte offset where decoding failed, if known


class DecodeLimitError(ContentDecodingError):
    """The decoded output would pass the decoder's limit."""


class TruncatedContentError(ContentDecodingError):
    """The coded stream stopped before its end; ``data`` is the output of the final flush."""

    def __init__(self, coding: str, message: str, data: bytes = b"") -> None:
        super().__init__(coding, message)
        self.data = data


class ContentDecoder(Protocol):
    """An incremental decoder: ``decode`` what arrived, ``flush`` at the end of the body."""

    coding: str

    def decode(self, chunk: bytes) -> bytes: ...

    def flush(self) -> bytes: ...

    @property
    def trailing_bytes(self) -> int:
        """Bytes seen after the end of the coded stream (ignored)."""
        ...


def parse_content_encoding(value: str | None) -> list[str]:
    """The codings of a ``Content-Encoding`` value, lowercased, in order of application.

    ``identity`` is dropped and ``x-gzip`` / ``x-compress`` are the aliases of ``gzip`` /
    ``compress`` (RFC 9110 §8.4.1.1, §8.4.1.3). Several header lines are joined with ``,``.
    """
    if not value:
        return []
    out: list[str] = []
    for raw in value.split(","):
        coding = raw.strip().lower()
        if coding and coding != "identity":
            out.append(_ALIASES.get(coding, coding))
    return out


_ALIASES = {"x-gzip": "gzip", "x-compress": "compress"}


class _Budget:
    """Counts decoded output against the limit; counts encoded input for error offsets."""

    __slots__ = ("coding", "consumed", "limit", "produced", "trailing_bytes")

    def __init__(self, coding: str, limit: int) -> None:
        self.coding = coding
        self.limit = limit
        self.produced = 0
        self.consumed = 0
        self.trailing_bytes = 0

    def room(self) -> int:
        """How many more bytes may be produced, plus one to detect going past the limit."""
        return self.limit - self.produced + 1

    def take(self, out: bytes) -> bytes:
        self.produced += len(out)
        if self.produced > self.limit:
            raise DecodeLimitError(
                self.coding, f"decoded body exceeds the {_size(self.limit)} limit"
            )
        return out

    def error(self, exc: Exception, chunk_len: int) -> ContentDecodingError:
        start = self.consumed
        return ContentDecodingError(
            self.coding,
            f"{exc} (in encoded bytes {start}..{start + chunk_len})",
            offset=start,
        )


class _ZlibDecoder:
    """Shared engine of gzip and deflate: bounded inflate, then what follows the stream."""

    coding = "zlib"

    def __init__(self, limit: int) -> None:
        self._budget = _Budget(self.coding, limit)
        self._z: zlib._Decompress | None = None
        self._started = False
        self._held = b""  # bytes kept until there are enough to choose what comes next
        self._ended = False  # trailing bytes were seen: everything after is trailing too

    @property
    def trailing_bytes(self) -> int:
        return self._budget.trailing_bytes

    def _start(self, data: bytes, final: bool) -> tuple[zlib._Decompress | None, bytes]:
        """Open the next stream at ``data`` or return (None, bytes to hold back)."""
        raise NotImplementedError

    def decode(self, chunk: bytes) -> bytes:
        data = self._held + chunk if self._held else chunk
        self._held = b""
        parts: list[bytes] = []
        while data:
            if self._ended:
                self._budget.trailing_bytes += len(data)
                break
            if self._z is None:
                self._z, data = self._start(data, final=False)
                if self._z is None:
                    self._held = data
                    break
                self._started = True
            try:
                data = self._inflate(self._z, data, parts)
            except zlib.error as exc:
                raise self._budget.error(exc, len(chunk)) from None
            if self._z.eof:
                self._z = None
        self._budget.consumed += len(chunk)
        return b"".join(parts)

    def _inflate(self, z: zlib._Decompress, data: bytes, parts: list[bytes]) -> bytes:
        """Inflate ``data`` without producing past the budget; return bytes after the end.

        Output comes in steps of at most ``_STEP`` bytes, so a bomb stops at the limit
        having held little more than the limit.
        """
        while True:
            step = min(self._budget.room(), _STEP)
            out = z.decompress(data, step)
            parts.append(self._budget.take(out))
            data = z.unconsumed_tail
            if z.eof or (not data and len(out) < step):
                break
        return z.unused_data if z.eof else b""

    def flush(self) -> bytes:
        parts: list[bytes] = []
        try:
            if self._held:
                held, self._held = self._held, b""
                self._z, rest = self._start(held, final=True)
                if self._z is not None:
                    self._started = True
                    self._budget.trailing_bytes += len(self._inflate(self._z, rest, parts))
            z = self._z
            if z is not None and not z.eof:
                self._inflate(z, b"", parts)  # output zlib may still hold
        except zlib.error as exc:
            raise self._budget.error(exc, 0) from None
        out = b"".join(parts)
        if z is not None and not z.eof:
            raise TruncatedContentError(
                self.coding,
                f"the {self.coding} stream stops before its end after "
                f"{self._budget.consumed} encoded bytes",
                out,
            )
        return out


class GzipDecoder(_ZlibDecoder):
    """``gzip`` (RFC 1952), including several concatenated members; zero padding after a
    member is skipped like CPython's ``gzip`` module does, other bytes count as trailing."""

    coding = "gzip"

    def __init__(self, limit: int = DEFAULT_DECODE_LIMIT) -> None:
        super().__init__(limit)

    def _start(self, data: bytes, final: bool) -> tuple[zlib._Decompress | None, bytes]:
        if not self._started:
            return zlib.decompressobj(16 + zlib.MAX_WBITS), data
        data = data.lstrip(b"\0")
        if data.startswith(_GZIP_MAGIC):
            return zlib.decompressobj(16 + zlib.MAX_WBITS), data
        if data == _GZIP_MAGIC[:1] and not final:
            return None, data
        if data == _GZIP_MAGIC[:1]:
            raise TruncatedContentError(
                self.coding, "the body ends one byte into a new gzip member"
            )
        if data:
            self._ended = True
            self._budget.trailing_bytes += len(data)
        return None, b""


class DeflateDecoder(_ZlibDecoder):
    """``deflate``: zlib-wrapped (RFC 1950) as the RFC says, or raw deflate (RFC 1951) as some
    servers send it; chosen from the zlib header check of the first two bytes."""

    coding = "deflate"

    def __init__(self, limit: int = DEFAULT_DECODE_LIMIT) -> None:
        super().__init__(limit)

    def _start(self, data: bytes, final: bool) -> tuple[zlib._Decompress | None, bytes]:
        if self._started:  # one stream only: what follows it is trailing
            self._ended = True
            self._budget.trailing_bytes += len(data)
            return None, b""
        if len(data) < 2 and not final:
            return None, data
        wbits = zlib.MAX_WBITS if is_zlib_header(data) else -zlib.MAX_WBITS
        return zlib.decompressobj(wbits), data


def is_zlib_header(data: bytes) -> bool:
    """RFC 1950 §2.2: CM 8 (deflate), CINFO <= 7 and (CMF*256 + FLG) a multiple of 31."""
    if len(data) < 2:
        return False
    cmf, flg = data[0], data[1]
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf << 8 | flg) % 31 == 0


class BrotliDecoder:
    """``br`` (RFC 7932) with the ``brotli`` package; output bounded by
    ``output_buffer_limit`` (brotli >= 1.2), else by feeding small input slices."""

    coding = "br"

    def __init__(self, limit: int = DEFAULT_DECODE_LIMIT) -> None:
        self._budget = _Budget(self.coding, limit)
        self._d = brotli.Decompressor()
        self._started = False

    @property
    def trailing_bytes(self) -> int:
        return self._budget.trailing_bytes

    def decode(self, chunk: bytes) -> bytes:
        if not chunk:
            return b""
        if self._d.is_finished():
            self._budget.trailing_bytes += len(chunk)
            return b""
        self._started = True
        parts: list[bytes] = []
        try:
            if _BROTLI_BOUNDED:
                self._process_bounded(chunk, parts)
            else:
                parts.extend(
                    self._budget.take(self._d.process(chunk[i : i + _BROTLI_SLICE]))
                    for i in range(0, len(chunk), _BROTLI_SLICE)
                )
        except brotli.error as exc:
            raise self._budget.error(exc, len(chunk)) from None
        self._budget.consumed += len(chunk)
        return b"".join(parts)

    def _process_bounded(self, chunk: bytes, parts: list[bytes]) -> None:
        d = self._d
        budget = self._budget
        parts.append(budget.take(d.process(chunk, output_buffer_limit=min(budget.room(), _STEP))))
        while not d.can_accept_more_data():
            parts.append(budget.take(d.process(b"", output_buffer_limit=min(budget.room(), _STEP))))

    def flush(self) -> bytes:
        if self._started and not self._d.is_finished():
            raise TruncatedContentError(
                self.coding,
                f"the br stream stops before its end after {self._budget.consumed} encoded bytes",
            )
        return b""


class ZstdDecoder:
    """``zstd`` (RFC 8878), one or more frames (skippable frames included). ``decompressobj``
    has no output bound, so input is fed in slices whose worst-case output fits the budget."""

    coding = "zstd"

    def __init__(self, limit: int = DEFAULT_DECODE_LIMIT) -> None:
        self._budget = _Budget(self.coding, limit)
        self._dctx = zstandard.ZstdDecompressor()
        self._z: zstandard.ZstdDecompressionObj | None = None
        self._in_frame = False  # bytes of the current frame were fed and it did not end yet
        self._held = b""
        self._frames = 0

    @property
    def trailing_bytes(self) -> int:
        return self._budget.trailing_bytes

    def decode(self, chunk: bytes) -> bytes:
        data = self._held + chunk if self._held else chunk
        self._held = b""
        parts: list[bytes] = []
        try:
            while data:
                if self._z is None:
                    if self._frames and not _is_zstd_frame_start(data):
                        if len(data) < 4 and _could_be_zstd_frame_start(data):
                            self._held = data
                        else:
                            self._budget.trailing_bytes += len(data)
                        break
                    self._z = self._dctx.decompressobj()
                    self._frames += 1
                data = self._feed_frame(self._z, data, parts)
        except zstandard.ZstdError as exc:
            raise self._budget.error(exc, len(chunk)) from None
        self._budget.consumed += len(chunk)
        return b"".join(parts)

    def _feed_frame(
        self, z: zstandard.ZstdDecompressionObj, data: bytes, parts: list[bytes]
    ) -> bytes:
        """Feed ``data`` to the frame in bounded slices; return the bytes after its end."""
        pos = 0
        while pos < len(data):
            step = max(16, (self._budget.room() - 1) // _ZSTD_MAX_RATIO)
            self._in_frame = True
            parts.append(self._budget.take(z.decompress(data[pos : pos + step])))
            pos += step
            if z.eof:
                self._z = None
                self._in_frame = False
                return z.unused_data + data[pos:]
        return b""

    def flush(self) -> bytes:
        if self._held or self._in_frame:
            raise TruncatedContentError(
                self.coding,
                f"the zstd stream stops in a frame after {self._budget.consumed} encoded bytes",
            )
        return b""


def _is_zstd_frame_start(data: bytes) -> bool:
    if data.startswith(_ZSTD_MAGIC):
        return True
    return len(data) >= 4 and 0x50 <= data[0] <= 0x5F and data[1:4] == _ZSTD_SKIPPABLE_TAIL


def _could_be_zstd_frame_start(data: bytes) -> bool:
    return _ZSTD_MAGIC.startswith(data) or (
        0x50 <= data[0] <= 0x5F and _ZSTD_SKIPPABLE_TAIL.startswith(data[1:])
    )


class MultiDecoder:
    """Several codings: ``codings`` in order of application, undone last to first."""

    def __init__(self, codings: list[str], limit: int = DEFAULT_DECODE_LIMIT) -> None:
        self.coding = ", ".join(codings)
        self._stages = [_DECODERS[c](limit) for c in reversed(codings)]

    @property
    def trailing_bytes(self) -> int:
        return sum(s.trailing_bytes for s in self._stages)

    def decode(self, chunk: bytes) -> bytes:
        for stage in self._stages:
            if not chunk:
                break
            chunk = stage.decode(chunk)
        return chunk

    def flush(self) -> bytes:
        out = b""
        truncated: TruncatedContentError | None = None
        for stage in self._stages:
            if out:
                out = stage.decode(out)
            try:
                out += stage.flush()
            except TruncatedContentError as exc:
                out += exc.data
                truncated = truncated or exc
        if truncated is not None:
            raise TruncatedContentError(truncated.coding, truncated.message, out)
        return out


_DECODERS: dict[str, Callable[[int], ContentDecoder]] = {
    "gzip": GzipDecoder,
    "deflate": DeflateDecoder,
    "br": BrotliDecoder,
    "zstd": ZstdDecoder,
}

SUPPORTED_CODINGS = frozenset(_DECODERS)


def make_decoder(codings: list[str], limit: int = DEFAULT_DECODE_LIMIT) -> ContentDecoder:
    """The decoder undoing ``codings`` (in order of application, as parsed by
    :func:`parse_content_encoding`); KeyError names an unsupported coding."""
    for c in codings:
        if c not in _DECODERS:
            raise KeyError(c)
    if len(codings) == 1:
        return _DECODERS[codings[0]](limit)
    return MultiDecoder(codings, limit)


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodedBody:
    """A body with its content codings undone, piece by piece.

    Each piece keeps the arrival time of the encoded piece that produced it. ``decoded`` is
    True when ``pieces`` are the content (codings undone, or none to undo, or already undone
    by the source); False when the encoded bytes were kept because they could not be decoded.
    When nothing was decoded, ``pieces`` is the body's own list (no copy): do not mutate it.
    """

    pieces: list[tuple[float, bytes]]
    size: int
    codings: list[str]
    decoded: bool
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def data(self) -> bytes:
        if len(self.pieces) == 1:
            return self.pieces[0][1]
        return b"".join(p for _, p in self.pieces)


def decode_body(
    body: Body,
    content_encoding: str | None,
    *,
    limit: int = DEFAULT_DECODE_LIMIT,
    location: str = "",
) -> DecodedBody:
    """Undo ``content_encoding`` on ``body``, following ``body.content_decoded``.

    True: the source decoded it, used as is. False: bytes off the wire, decoded as declared.
    None (unknown, VCR cassettes): decoded only if the bytes really are encoded (gzip and zstd
    magic, zlib header; br and raw deflate are tried), else used as is with an info Diagnostic.
    Never raises: problems become Diagnostics, see the module docstring.
    """
    codings = parse_content_encoding(content_encoding) if content_encoding else []
    size = body.size  # kept up to date by Body.append and the assembler
    unchanged = DecodedBody(pieces=body.pieces, size=size, codings=codings, decoded=True)
    if not codings or body.content_decoded is True or not size:
        return unchanged
    unsupported = [c for c in codings if c not in _DECODERS]
    if unsupported:
        diag = Diagnostic(
            code="content.unsupported_encoding",
            message=f"Content-Encoding {unsupported[0]!r} is not supported; "
            "the body is kept encoded",
            location=location,
        )
        return _raw(unchanged, diag)
    if body.content_decoded is None:
        return _decode_if_encoded(unchanged, limit, location)
    return _decode(unchanged, limit, location)


def _decode(raw: DecodedBody, limit: int, location: str) -> DecodedBody:
    """Decode ``raw.pieces`` as declared; on failure keep them, with a Diagnostic."""
    decoder = make_decoder(raw.codings, limit)
    pieces: list[tuple[float, bytes]] = []
    size = 0
    diags: list[Diagnostic] = []
    ts = raw.pieces[-1][0] if raw.pieces else 0.0
    try:
        for ts, data in raw.pieces:
            out = decoder.decode(data)
            if out:
                pieces.append((ts, out))
                size += len(out)
        try:
            out = decoder.flush()
        except TruncatedContentError as exc:
            out = exc.data
            diags.append(_truncated(exc, size + len(out), location))
        if out:
            pieces.append((ts, out))
            size += len(out)
    except DecodeLimitError:
        diag = Diagnostic(
            code="content.limit_exceeded",
            message=f"decoded body exceeds {_size(limit)} limit; raise it with --max-body",
            location=location,
        )
        return _raw(raw, diag)
    except ContentDecodingError as exc:
        diag = Diagnostic(
            code="content.decode_error",
            message=f"body does not decode as {exc.coding}: {exc.message}; kept encoded",
            location=location,
        )
        return _raw(raw, diag)
    if decoder.trailing_bytes:
        diags.append(
            Diagnostic(
                code="content.trailing_data",
                message=f"{decoder.trailing_bytes} bytes after the end of the "
                f"{decoder.coding} stream were ignored",
                location=location,
            )
        )
    return DecodedBody(
        pieces=pieces, size=size, codings=raw.codings, decoded=True, diagnostics=diags
    )


def _decode_if_encoded(raw: DecodedBody, limit: int, location: str) -> DecodedBody:
    """``content_decoded`` unknown: decode only bytes that are really encoded."""
    outer = raw.codings[-1]
    head = _head(raw.pieces, 4)
    sure = (
        (outer == "gzip" and head.startswith(_GZIP_MAGIC))
        or (outer == "zstd" and _is_zstd_frame_start(head))
        or (outer == "deflate" and is_zlib_header(head))
    )
    if sure:
        return _decode(raw, limit, location)
    if outer in ("br", "deflate"):  # no magic number: try, and keep the bytes if it fails
        attempt = _decode(raw, limit, location)
        if attempt.decoded and not attempt.diagnostics:
            return attempt
        if any(d.code == "content.limit_exceeded" for d in attempt.diagnostics):
            return attempt
    diag = Diagnostic(
        code="content.already_decoded",
        message=f"Content-Encoding says {', '.join(raw.codings)} but the body is not "
        f"{outer}-encoded (the source kept the header over a decoded body); used as is",
        location=location,
        severity="info",
    )
    return DecodedBody(
        pieces=raw.pieces, size=raw.size, codings=raw.codings, decoded=True, diagnostics=[diag]
    )


def decode_bytes(
    data: bytes,
    content_encoding: str | None,
    *,
    content_decoded: bool | None = False,
    limit: int = DEFAULT_DECODE_LIMIT,
    location: str = "",
) -> tuple[bytes, list[Diagnostic]]:
    """:func:`decode_body` for a body held as one ``bytes`` value."""
    body = Body(content_decoded=content_decoded)
    body.append(0.0, data)
    result = decode_body(body, content_encoding, limit=limit, location=location)
    return result.data(), result.diagnostics


def _raw(raw: DecodedBody, diag: Diagnostic) -> DecodedBody:
    """The encoded pieces, kept because they could not be decoded."""
    return DecodedBody(
        pieces=raw.pieces, size=raw.size, codings=raw.codings, decoded=False, diagnostics=[diag]
    )


def _truncated(exc: TruncatedContentError, decoded: int, location: str) -> Diagnostic:
    return Diagnostic(
        code="content.truncated",
        message=f"{exc.message} (capture cut short?); kept the {decoded} bytes that decoded",
        location=location,
    )


def _head(pieces: list[tuple[float, bytes]], n: int) -> bytes:
    head = b""
    for _, data in pieces:
        head += data[: n - len(head)]
        if len(head) >= n:
            break
    return head


def _size(n: int) -> str:
    if n and n % (1 << 30) == 0:
        return f"{n >> 30} GiB"
    if n and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n and n % (1 << 10) == 0:
        return f"{n >> 10} KiB"
    return f"{n} bytes"
