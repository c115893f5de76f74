"""Read an SSLKEYLOGFILE (RFC 9850) from disk into a :class:`~agentshark.tls.keylog.KeyLog`.

Only the reading happens here (``sources`` is the one stage that touches files); parsing is
``KeyLog.add_text``, which also takes the key logs embedded in pcapng captures.
"""

from __future__ import annotations

from pathlib import Path

from agentshark.errors import Diagnostic
from agentshark.tls.keylog import KeyLog

__all__ = ["MAX_KEYLOG", "empty_keylog", "is_capture", "load_keylog", "not_a_keylog"]

MAX_KEYLOG = 256 << 20  # a key log line is ~180 bytes: this is over a million sessions

_CAPTURE_MAGICS = (
    b"\xd4\xc3\xb2\xa1",
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",
    b"\xa1\xb2\x3c\x4d",
)


def load_keylog(path: str, keylog: KeyLog) -> list[Diagnostic]:
    """Add the secrets of the key log at ``path``; problems come back as diagnostics.

    A file that cannot be read, or that is not a key log, is an error diagnostic
    (``keylog.unreadable``, ``keylog.not_a_keylog``); a key log without a single secret is a
    warning (``keylog.empty``); malformed lines are ``keylog.malformed_line``.
    """
    try:
        with Path(path).open("rb") as f:
            data = f.read(MAX_KEYLOG + 1)
    except OSError as exc:
        return [
            Diagnostic(
                code="keylog.unreadable",
                severity="error",
                location=path,
                message=f"cannot read the key log {path}: {exc.strerror or exc}",
            )
        ]
    if len(data) > MAX_KEYLOG or is_capture(data):
        return [not_a_keylog(path, "larger than 256 MiB" if len(data) > MAX_KEYLOG else "")]
    diagnostics = keylog.add_text(data, path)
    if not keylog.lines_from(path):
        diagnostics.append(empty_keylog(path))
    return diagnostics


def is_capture(head: bytes) -> bool:
    """Whether ``head`` starts like a pcap or pcapng file (given for a key log by mistake)."""
    return head[:4] in _CAPTURE_MAGICS or head[:4] == b"\x0a\x0d\x0d\x0a"


def not_a_keylog(path: str, what: str = "") -> Diagnostic:
    return Diagnostic(
        code="keylog.not_a_keylog",
        severity="error",
        location=path,
        message=f"{path} is {what or 'a packet capture'}, not a key log: pass the file that "
        "SSLKEYLOGFILE named when the client ran",
    )


def empty_keylog(path: str) -> Diagnostic:
    return Diagnostic(
        code="keylog.empty",
        location=path,
        message=f"{path} holds no TLS secrets (expected lines like "
        "'CLIENT_RANDOM <64 hex> <96 hex>' written through SSLKEYLOGFILE)",
    )
