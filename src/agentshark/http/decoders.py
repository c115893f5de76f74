"""Incremental decoders for the content codings ``gzip``, ``deflate``, ``br`` and ``zstd``.

The decoders are sans-I/O, in the style of httpx ``_decoders.py``: ``decode(chunk) -> bytes``
and ``flush() -> bytes``, so a decoded body keeps the arrival time of every piece (stream
events are timestamped from it). :func:`make_decoder` builds the decoder for a list of codings
(:class:`MultiDecoder` when there are several); :mod:`agentshark.http.content` applies them to
a body.

Every decoder enforces an output limit (:data:`DEFAULT_DECODE_LIMIT`, 256 MiB per body): the
zlib codings decompress with ``max_length`` so a bomb never allocates much past it, brotli uses
``output_buffer_limit`` and zstd is fed input slices small enough that even its best possible
ratio stays inside the budget. They raise :class:`ContentDecodingError` (and its subclasses
:class:`DecodeLimitError` and :class:`TruncatedContentError`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Protocol

import brotli
import zstandard

DEFAULT_DECODE_LIMIT = 256 << 20

GZIP_MAGIC = b"\x1f\x8b"
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
                self.coding, f"decoded body exceeds the {size_text(self.limit)} limit"
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
        if data.startswith(GZIP_MAGIC):
            return zlib.decompressobj(16 + zlib.MAX_WBITS), data
        if data == GZIP_MAGIC[:1] and not final:
            return None, data
        if data == GZIP_MAGIC[:1]:
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
                    if self._frames and not is_zstd_frame_start(data):
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


def is_zstd_frame_start(data: bytes) -> bool:
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
    :func:`~agentshark.http.content.parse_content_encoding`); KeyError names an unsupported
    coding."""
    for c in codings:
        if c not in _DECODERS:
            raise KeyError(c)
    if len(codings) == 1:
        return _DECODERS[codings[0]](limit)
    return MultiDecoder(codings, limit)


def size_text(n: int) -> str:
    """``n`` bytes as the limit messages say it: in GiB, MiB or KiB when it is a whole number."""
    if n and n % (1 << 30) == 0:
        return f"{n >> 30} GiB"
    if n and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n and n % (1 << 10) == 0:
        return f"{n >> 10} KiB"
    return f"{n} bytes"
