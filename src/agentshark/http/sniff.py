"""What protocol does a byte stream speak? Decided from its first bytes, never from ports.

``sniff(client_head, server_head, final)`` looks at the first bytes of each direction of a
connection and answers one of :data:`Protocol`, or None while it needs more bytes.

``websocket`` is a WebSocket seen from its middle (the HTTP handshake is not in the
capture): a direction's first bytes are frames (RFC 6455 §5.2) with the masking of one side
(:func:`~agentshark.framing.websocket.looks_like_frames`): masked frames are the client's,
so masked frames from the side taken as the server swap the roles (when allowed). HTTP,
TLS and HTTP/2 are tried first; their first bytes are never plausible frame headers.
"""

from __future__ import annotations

import re
from typing import Literal

from agentshark.framing.websocket import looks_like_frames
from agentshark.http.h1_syntax import looks_like_request, looks_like_response

Protocol = Literal["http/1.1", "h2c", "tls", "websocket", "unknown"]

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SNIFF_BYTES = len(H2_PREFACE)
MIDSTREAM_SNIFF_BYTES = 64 * 1024
# A TLS record header: content type 20-23, legacy version 3.0-3.4 (RFC 8446 §5.1).
_TLS_RECORD = re.compile(rb"[\x14-\x17]\x03[\x00-\x04]")
_START_LINE = re.compile(
    rb"(?:^|\n)(?:(?:GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH) /\S* HTTP/1\.[01]\r?\n|"
    rb"HTTP/1\.[01] \d{3}[ \r\n])"
)


def is_tls(head: bytes) -> bool:
    return _TLS_RECORD.match(head) is not None


def _websocket(client: bytes, server: bytes, *, swap_allowed: bool) -> bool | None:
    """Whether the heads are WebSocket frames (the value: whether the roles are the other
    way round), or None. One direction must read as its side's frames from its first byte
    (the other may start inside a frame: the reader finds its first header), and neither
    as the other side's."""
    as_is = looks_like_frames(client, client=True) or looks_like_frames(server, client=False)
    swapped = looks_like_frames(server, client=True) or looks_like_frames(client, client=False)
    if as_is and not swapped:
        return False
    if swapped and not as_is and swap_allowed:
        return True
    return None


def sniff(
    client: bytes, server: bytes, *, final: bool, swap_allowed: bool
) -> tuple[Protocol | None, bool]:
    """Classify a connection from the first bytes of each direction.

    Returns ``(protocol, swap)``: ``swap`` is True when the bytes show that the direction
    taken as the client's is really the server's (only when ``swap_allowed``: the TCP
    handshake was not captured). ``protocol`` is None while more bytes could change the
    answer; with ``final`` (both directions ended or enough bytes buffered) it is decided.
    """
    if client:
        if H2_PREFACE.startswith(client[:SNIFF_BYTES]):
            if len(client) >= SNIFF_BYTES:
                return "h2c", False
            if not final:
                return None, False
        if is_tls(client):
            return "tls", False
        if looks_like_request(client[:64]):
            return "http/1.1", False
        if swap_allowed and looks_like_response(client[:8]):
            return "http/1.1", True
    if server:
        if is_tls(server):
            return "tls", False
        if looks_like_response(server[:8]) and len(server) >= 8:
            return "http/1.1", False
        if swap_allowed and looks_like_request(server[:64]) and not client:
            return "http/1.1", True
        if swap_allowed and len(server) >= SNIFF_BYTES and server.startswith(H2_PREFACE):
            return "h2c", True
    ws = _websocket(client, server, swap_allowed=swap_allowed)
    if ws is not None:
        return "websocket", ws
    if not client and not final and len(server) < MIDSTREAM_SNIFF_BYTES:
        return None, False  # the server spoke first (an h2 SETTINGS frame...): hear the client
    if not swap_allowed:
        enough = len(client) >= SNIFF_BYTES or len(server) >= SNIFF_BYTES
        return ("unknown", False) if (final or enough) else (None, False)
    # The handshake is not in the capture, so it may start inside a message: look for an
    # HTTP/1.x start line further in before calling the stream unknown.
    if _START_LINE.search(client) or _START_LINE.search(server):
        return "http/1.1", False
    if final or len(client) + len(server) >= MIDSTREAM_SNIFF_BYTES:
        return "unknown", False
    return None, False
