"""The NSS key log: ``LABEL CLIENT_RANDOM SECRET`` lines -> secrets by client random.

The format is RFC 9850 (SSLKEYLOGFILE, https://www.rfc-editor.org/rfc/rfc9850): UTF-8 text,
lines ended by LF, CRLF or CR; blank lines and lines starting with ``#`` are skipped; each
other line is a label, the 32-byte ClientHello random in hex and a secret in hex, separated
by spaces. Lines with labels we do not know are kept out silently (the format grows new
labels); malformed lines are diagnostics that never repeat the line: a key log is secret
material, and so are its fragments.

Text can come from a file (``sources.keylog``) or from pcapng Decryption Secrets Blocks,
which arrive in the middle of a capture: ``add_text`` may be called at any time, and a TLS
connection looks its secrets up when it needs them.
"""

from __future__ import annotations

import re

from agentshark.errors import Diagnostic

__all__ = ["LABELS", "TLS12_LABEL", "TLS13_LABELS", "KeyLog"]

TLS12_LABEL = "CLIENT_RANDOM"  # the 48-byte master secret (RFC 9850 §3.1)
TLS13_LABELS = frozenset(
    {
        "CLIENT_EARLY_TRAFFIC_SECRET",
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        "CLIENT_TRAFFIC_SECRET_0",
        "SERVER_TRAFFIC_SECRET_0",
        "EARLY_EXPORTER_SECRET",
        "EXPORTER_SECRET",
    }
)
LABELS = TLS13_LABELS | {TLS12_LABEL}

_HEX = re.compile(rb"[0-9a-fA-F]*")
_LABEL = re.compile(rb"[A-Z][A-Z0-9_]*")
MAX_DIAGNOSTICS = 20  # per add_text call; the rest are counted in one more


class KeyLog:
    """Secrets by ClientHello random, from any number of key log texts.

    Never shows key material: ``repr`` gives counts only, and diagnostics name line
    numbers, never contents. ``sources`` lists the texts added, for messages that tell the
    user where secrets were looked for.
    """

    __slots__ = ("_lines", "_secrets")

    def __init__(self) -> None:
        self._secrets: dict[bytes, dict[str, bytes]] = {}
        self._lines: dict[str, int] = {}  # lines with a secret we use, by source

    def __len__(self) -> int:
        """The number of TLS sessions (client randoms) with at least one secret."""
        return len(self._secrets)

    def __contains__(self, client_random: object) -> bool:
        return client_random in self._secrets

    def __repr__(self) -> str:
        count = sum(len(s) for s in self._secrets.values())
        return f"KeyLog({len(self._secrets)} sessions, {count} secrets, {len(self._lines)} sources)"

    __str__ = __repr__

    @property
    def sources(self) -> list[str]:
        """The names of the texts added, in order."""
        return list(self._lines)

    def lines_from(self, source: str) -> int:
        """How many lines of ``source`` gave a secret this package uses."""
        return self._lines.get(source, 0)

    def secrets(self, client_random: bytes) -> dict[str, bytes]:
        """The secrets logged for ``client_random``, by label (empty if none)."""
        return dict(self._secrets.get(client_random, ()))

    def candidates(self, label: str, size: int) -> list[tuple[bytes, bytes]]:
        """``(client random, secret)`` of every session with a ``label`` secret of ``size``
        bytes, the newest session first: what a connection whose ClientHello was not
        captured may be (``tls.trial`` proves which by a record's tag)."""
        out = []
        for client_random, found in reversed(self._secrets.items()):
            secret = found.get(label)
            if secret is not None and len(secret) == size:
                out.append((client_random, secret))
        return out

    def add_text(self, text: bytes, source: str, first_line: int = 1) -> list[Diagnostic]:
        """Add the lines of a key log; return a ``keylog.malformed_line`` per bad line.

        ``source`` names the text in diagnostics (``"{source} line N"``) and in messages
        about sessions without secrets. Several texts may share a name. ``first_line`` is
        the number of the text's first line (for a key log read as it grows).
        """
        taken = self._lines.setdefault(source, 0)
        if text.startswith(b"\xef\xbb\xbf"):
            text = text[3:]  # RFC 9850 says no BOM; tolerate one
        out: list[Diagnostic] = []
        bad = 0
        for number, line in enumerate(text.splitlines(), first_line):  # at LF, CR, CRLF
            line = line.strip(b" \t")
            if not line or line.startswith(b"#"):
                continue
            problem = self._add_line(line)
            if problem is None:
                taken += 1
                continue
            if not problem:
                continue  # a well-formed line with a label we do not use
            bad += 1
            if bad <= MAX_DIAGNOSTICS:
                out.append(
                    Diagnostic(
                        code="keylog.malformed_line",
                        location=f"{source} line {number}",
                        message=f"{problem}; the line is skipped",
                    )
                )
        self._lines[source] = taken
        if bad > MAX_DIAGNOSTICS:
            out.append(
                Diagnostic(
                    code="keylog.malformed_line",
                    location=source,
                    message=f"{bad - MAX_DIAGNOSTICS} more malformed lines skipped",
                )
            )
        return out

    def _add_line(self, line: bytes) -> str | None:
        """Store one line's secret and return None, or say what is wrong without quoting
        the line ("" for a line whose label we do not use: RSA, ECH_*, a future label)."""
        fields = line.split()
        if len(fields) != 3:
            return (
                f"expected 3 fields (LABEL CLIENT_RANDOM SECRET) separated by spaces, "
                f"found {len(fields)}"
            )
        raw_label, random_hex, secret_hex = fields
        if _LABEL.fullmatch(raw_label) is None:
            return "the first field is not a label of upper-case letters, digits and _"
        label = raw_label.decode("ascii")
        if label not in LABELS:
            return ""
        if len(random_hex) != 64 or _HEX.fullmatch(random_hex) is None:
            return f"{label}: the client random must be 64 hex digits (32 bytes)"
        if _HEX.fullmatch(secret_hex) is None or len(secret_hex) % 2:
            return f"{label}: the secret is not an even number of hex digits"
        secret = bytes.fromhex(secret_hex.decode("ascii"))
        if label == TLS12_LABEL and len(secret) != 48:
            return f"{label}: the master secret is {len(secret)} bytes, not 48"
        if label != TLS12_LABEL and len(secret) not in (32, 48):
            return f"{label}: the secret is {len(secret)} bytes, not 32 or 48"
        client_random = bytes.fromhex(random_hex.decode("ascii"))
        self._secrets.setdefault(client_random, {})[label] = secret
        return None
