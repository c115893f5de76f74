"""0-RTT early data (RFC 8446 §4.2.10) as a passive reader sees it.

A client that offers early_data sends records under CLIENT_EARLY_TRAFFIC_SECRET right after
its ClientHello, before it knows whether the server takes them. The reader cannot decrypt
them before the ServerHello names the cipher suite (the PSK's), and should not report them
before it knows the server read them: a rejected request is sent again after the handshake,
and reporting both would invent a second request. So records wait here: raw until the
suite is known, then as plaintext until the server's EncryptedExtensions (early_data) or the
client's EndOfEarlyData says they were accepted.
"""

from __future__ import annotations

from agentshark.tls.events import TlsPlaintext
from agentshark.tls.records import Tls13Protection

__all__ = ["MAX_EARLY_BYTES", "MAX_EARLY_SKIPPED", "EarlyData"]

MAX_EARLY_BYTES = 1 << 20  # raw 0-RTT records held until the ServerHello names the suite
MAX_EARLY_SKIPPED = 256  # undecryptable records tolerated while looking for the handshake


class EarlyData:
    """The client's early data of one connection, and what became of it.

    ``accepted`` is None until known. ``skipped`` counts records no key decrypted,
    ``dropped`` records the server did not accept.
    """

    __slots__ = ("accepted", "dropped", "held", "keys", "raw", "raw_bytes", "skipped")

    def __init__(self) -> None:
        self.accepted: bool | None = None
        self.keys: Tls13Protection | None = None  # never shown
        self.raw: list[tuple[bytes, float]] = []
        self.raw_bytes = 0
        self.held: list[tuple[bytes, float]] = []
        self.skipped = 0
        self.dropped = 0

    def __repr__(self) -> str:
        return f"EarlyData(accepted={self.accepted}, held={len(self.held)})"

    def hold_raw(self, record: bytes, ts: float) -> bool:
        """Keep a record until the suite is known; False once too much is held."""
        self.raw_bytes += len(record)
        if self.raw_bytes > MAX_EARLY_BYTES:
            return False
        self.raw.append((record, ts))
        return True

    def take_raw(self) -> list[tuple[bytes, float]]:
        raw, self.raw = self.raw, []
        return raw

    def plaintext(self, content: bytes, ts: float) -> TlsPlaintext | None:
        """Decrypted early application data: an event if accepted, else held or dropped."""
        if self.accepted:
            return TlsPlaintext(direction=0, data=content, ts=ts)
        if self.accepted is None:
            self.held.append((content, ts))
        else:
            self.dropped += 1
        return None

    def release(self) -> list[TlsPlaintext]:
        """The held plaintext as events, in order."""
        events = [TlsPlaintext(direction=0, data=c, ts=ts) for c, ts in self.held]
        self.held.clear()
        return events

    def reject(self) -> None:
        self.accepted = False
        self.dropped += len(self.held) + len(self.raw)
        self.held.clear()
        self.raw.clear()

    def clear(self) -> None:
        self.held.clear()
        self.raw.clear()
        self.keys = None
