"""Findings of the fuzz campaign on the HTTP/3 target, kept as regression tests."""

from __future__ import annotations

import base64

from tests.fuzz.quic_targets import t_h3


def test_a_stream_read_on_after_its_block_was_given_up() -> None:
    # a header block blocked on the encoder stream until the end, then another HEADERS on
    # the same stream: ls-qpack still held the first (ValueError) before it was cancelled
    parts = [base64.b64decode(_FINDING)]
    assert isinstance(t_h3(parts), list)


_FINDING = (
    "AQMAAAwABAkBUAAHEAgBIQEBBwAAAQIBCwAAAQMABgAADwAECQFQAAcQCAEhAQ0BCAAGAAAEAj/hHwAKAAABAwEH"
    "AAADP+EfAAABACwBAz/hHwAAAQAsASoAANHXUIsInVwLgXDcafeca1GIY7hYpPIWhH9fUIwZj9rTEWIOtNthWA8B"
    "AAEAgAEqAADR11CLCJ1cC4Fw3Gn3nGtRiGO4WKTyFoR/X1CMGY/a0xFiDrTbYVgPIlNheSBoZWxsbyJ9XX0BCwAA"
    "AYQBBCJTYXkgaGVsbG8ifV19AQsAAAGEAQQBAAEAgAEIAADZ7lSCCFsAQHN7Im9iamVjdCI6ICJsaXN0IiwgImRh"
    "dGEiOiBbeyJpZCI6ICJncHQtNG8tbWluaSIsICJvYmplY3QiOiAibW9kZWwiLCAiY3JlYXRlZCI6IDE3MDAwMDAw"
    "MDAsICJvd25lZF9ieSI6ICJzeXN0ZW0ifV12ZXIgUVVJQzogb25lIHRva2VuIGF0IGEgdGltZS4ifSwgImZpboAB"
    "KwOB1NcQUY5juFgk40sEPTXQVJj1IxHuX0WRulHYWxRHVZJUJWqOlYa3UvoAQFB7Im1vZWVsIjogImdwdC00by1t"
    "aW5pIiwgIm1lc3NhZ2VzIjogW3sicm9sZSI6ICJ1c2X//ywgImNvbnRlbnQiOiAiU2F5IGhlbGxvIn1dfQELAAAB"
    "hAEEaXNoX3JlYXNvb250ZW50IjogIlNheSBoZWxsbyJ9XX0BCwAAAYQBBAEBVQEJICJjaGF0LmNvbXBsZXRpb24i"
    "LCAiY3JlYXRlZCI6IDE3MDAwMDAwMDAsICJtb2RlbCI6ICJncHQtNG8tbWluaSIsICJjaG9pY3NzYWdlIjogeyJy"
    "b2xlIjogImFzc2lzdGFudCIsICJjb250ZW50IjogIkhlbGxvIGZyb20gSFRUUC8zIG92ZXIgUVVJQzogb25lIHRv"
    "a2VuIGF0IGEgdGltZS4ifSwgImZpbmlzaF9yZWFzbw=="
)
