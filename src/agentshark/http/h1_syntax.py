"""HTTP/1.x syntax: start lines, header fields, framing headers (RFC 9112, RFC 9110).

Pure functions over bytes and header lists, used by the passive parser in ``h1`` and by
protocol sniffing; no state.
"""

from __future__ import annotations

import re

from agentshark.model import Headers

REQUEST_LINE = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) (HTTP/\d\.\d)\r?\n")
STATUS_LINE = re.compile(rb"(HTTP/\d\.\d) (\d{3})(?: ([^\r\n]*))?\r?\n")
# The targets ``is_request_prefix`` accepts (origin, asterisk or absolute form; any for
# CONNECT): a start line found here must be one the head parser takes, or resync loops.
REQUEST_START = re.compile(
    rb"(?:^|\n)((?:(?:GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH|TRACE|PRI) [/*h]\S*|CONNECT \S+)"
    rb" HTTP/1\.[01]\r?\n)"
)
STATUS_START = re.compile(rb"(?:^|\n)(HTTP/1\.[01] \d{3}[ \r\n])")
HEAD_END = re.compile(rb"\r?\n\r?\n")
CHUNK_SIZE_RE = re.compile(rb"[0-9A-Fa-f]+")


def looks_like_request(head: bytes) -> bool:
    """True when ``head`` starts like an HTTP/1.x request line (as far as it goes)."""
    if b"\n" in head:
        return REQUEST_LINE.match(head) is not None
    return is_request_prefix(head)


def looks_like_response(head: bytes) -> bool:
    """True when ``head`` starts like an HTTP/1.x status line (as far as it goes)."""
    return head.startswith(b"HTTP/1.") or b"HTTP/1."[: len(head)] == head


def is_request_prefix(head: bytes) -> bool:
    """Could ``head`` be the beginning of a request line? (method token, space, target)"""
    sp = head.find(b" ")
    token = head if sp < 0 else head[:sp]
    if sp == 0 or len(token) > 16:
        return False
    if token and not (token.isalpha() and token.isupper()):
        return False
    return (
        sp < 0
        or len(head) == sp + 1
        or head[sp + 1 : sp + 2] in (b"/", b"*", b"h")
        or (token == b"CONNECT")
    )


def chunk_size(line: bytes) -> int | None:
    """The size on a chunk-size line (CR and chunk extensions ignored), None if invalid."""
    try:
        size = int(line, 16)
    except ValueError:
        m = CHUNK_SIZE_RE.match(line.lstrip())
        if m is None:
            return None
        size = int(m.group(0), 16)
    return size if size >= 0 else None


def parse_headers(block: bytes) -> Headers:
    """Header fields in their original case and order; obs-fold lines are joined."""
    headers: Headers = []
    for raw in block.split(b"\n"):
        line = raw.rstrip(b"\r")
        if not line:
            continue
        if line[:1] in (b" ", b"\t") and headers:  # obs-fold (RFC 9112 §5.2)
            prev_name, prev_value = headers[-1]
            headers[-1] = (prev_name, prev_value + " " + line.strip().decode("latin-1"))
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        headers.append((name.strip().decode("latin-1"), value.strip().decode("latin-1")))
    return headers


def header_value(headers: Headers, name: str) -> str | None:
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def content_length(headers: Headers) -> int | None:
    """The Content-Length, or None when absent or invalid (RFC 9110 §8.6: a list of
    identical values is accepted)."""
    values = {v.strip() for k, v in headers if k.lower() == "content-length" for v in v.split(",")}
    if len(values) != 1:
        return None
    value = values.pop()
    # 1*DIGIT, ASCII only: str.isdigit() also takes "²", which int() refuses.
    return int(value) if value.isascii() and value.isdigit() else None


def last_transfer_coding(headers: Headers) -> str | None:
    codings = [
        c.strip().lower()
        for k, v in headers
        if k.lower() == "transfer-encoding"
        for c in v.split(",")
        if c.strip()
    ]
    return codings[-1] if codings else None
