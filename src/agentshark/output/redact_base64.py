"""Text carried in base64: documents and files a client sent inline.

A long string made only of standard base64 (RFC 4648 §4), bare or as the payload of a
``data:…;base64,`` URI, is usually an image, but can be a text file (an Anthropic ``document``
block of ``text/plain``, a Gemini ``inlineData``, an OpenAI ``file_data``) and a text file can
hold a key (a ``.env`` shared with the model). So the first bytes are decoded: when they are
not UTF-8 text (an image, a PDF, an archive) the string is data and stays as it is, at the
cost of one small decode. Otherwise the whole text is decoded, redacted by the caller's
rules, and encoded again when something changed, so the report still holds a readable
document whose secrets are marks. A cut tail (not a whole 4-character group) is kept as sent;
a string with padding inside is not one base64 text and stays as is.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

_BASE64 = re.compile(rb"[A-Za-z0-9+/]*={0,2}")
_PROBE = 4096  # base64 characters decoded first (3 KiB of payload)
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # not in text files


def _is_text(head: bytes) -> bool:
    """``head`` (a prefix of the payload) reads as text: no control characters other than tab
    and line ends (images, PDFs and archives have them at once), and at most one byte in 50
    that is not UTF-8 (a Latin-1 file, a character cut at the end)."""
    if _CONTROL.search(head) is not None:
        return False
    return head.decode("utf-8", "replace").count("\ufffd") * 50 <= len(head)


def redact_base64(text: str, start: int, redact: Callable[[str], str]) -> str:
    """``text`` whose ``text[start:]`` is standard base64, with the secrets of the text it
    encodes redacted by ``redact`` (re-encoded), or ``text`` itself when it encodes data or
    nothing changed."""
    payload = text[start:]
    probe = payload[:_PROBE].encode("ascii")
    try:
        head = base64.b64decode(probe[: len(probe) // 4 * 4], validate=True)
    except (binascii.Error, ValueError):
        return text
    if not head or not _is_text(head):
        return text
    whole = len(payload) // 4 * 4  # a cut tail (1-3 characters) is kept as sent
    try:
        raw = base64.b64decode(payload[:whole], validate=True)
    except (binascii.Error, ValueError):  # padding inside: not one base64 text
        return text
    decoded = raw.decode("utf-8", "surrogateescape")  # a bad byte further in survives as is
    redacted = redact(decoded)
    if redacted == decoded:
        return text
    encoded = base64.b64encode(redacted.encode("utf-8", "surrogateescape")).decode("ascii")
    return text[:start] + encoded + payload[whole:]
