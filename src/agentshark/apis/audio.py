"""Audio sent in base64 pieces (the Realtime and Live session families): one blob part.

Each piece is padded on its own, so the pieces are decoded one by one and their bytes joined
(and encoded again); a piece that is not base64 is kept out of the bytes and counted in
``provider_details.bad_pieces``. The duration is given for 16-bit mono samples at ``rate``.
"""

from __future__ import annotations

import base64

from agentshark.apis.model import BlobPart, Json

__all__ = ["audio_blob"]


def audio_blob(
    pieces: list[str],
    *,
    mime: str | None,
    source: str,
    rate: int | None,
    details: dict[str, Json] | None = None,
) -> BlobPart:
    chunks, bad = [], 0
    for piece in pieces:
        try:
            chunks.append(base64.b64decode(piece, validate=True))
        except ValueError:
            bad += 1
    data = b"".join(chunks)
    out: dict[str, Json] = {"source": source, "bytes": len(data)}
    if bad:
        out["bad_pieces"] = bad
    out.update(details or {})
    if rate:
        out["duration_s"] = round(len(data) / 2 / rate, 3)
    content = base64.b64encode(data).decode()
    return BlobPart(mime_type=mime, modality="audio", content=content, provider_details=out)
