"""Content codings: a :class:`~agentshark.model.Body` as sent -> the bytes it stands for.

``Content-Encoding`` lists the codings in the order they were applied
(`RFC 9110 §8.4 <https://www.rfc-editor.org/rfc/rfc9110#section-8.4>`_); they are undone in
reverse order by the incremental decoders of :mod:`agentshark.http.decoders`, piece by piece,
so a decoded body keeps the arrival time of every piece (stream events are timestamped from
it). Every decoder enforces an output limit (:data:`DEFAULT_DECODE_LIMIT`, 256 MiB per body).

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

from dataclasses import dataclass, field

from agentshark.errors import Diagnostic
from agentshark.http.decoders import (
    DEFAULT_DECODE_LIMIT,
    GZIP_MAGIC,
    SUPPORTED_CODINGS,
    ContentDecoder,
    ContentDecodingError,
    DecodeLimitError,
    TruncatedContentError,
    is_zlib_header,
    is_zstd_frame_start,
    make_decoder,
    size_text,
)
from agentshark.model import Body

__all__ = [
    "DEFAULT_DECODE_LIMIT",
    "ContentDecoder",
    "ContentDecodingError",
    "DecodedBody",
    "TruncatedContentError",
    "decode_body",
    "decode_bytes",
    "make_decoder",
    "parse_content_encoding",
]


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
    unsupported = [c for c in codings if c not in SUPPORTED_CODINGS]
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
            message=f"decoded body exceeds {size_text(limit)} limit; raise it with --max-body",
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
        (outer == "gzip" and head.startswith(GZIP_MAGIC))
        or (outer == "zstd" and is_zstd_frame_start(head))
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
