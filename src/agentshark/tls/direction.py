"""The state of one direction of a TLS connection: its mode, framing and current keys."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from agentshark.tls.early import EarlyData
from agentshark.tls.handshake import HandshakeReader
from agentshark.tls.records import DecryptError, RecordReader, Tls12Protection, Tls13Protection

__all__ = ["WHO", "Direction", "Mode", "Protection"]

WHO = ("client", "server")
Protection = Tls12Protection | Tls13Protection


class Mode(Enum):
    """What a direction does with its records (see ``session._RECORD_HANDLERS``)."""

    PLAIN = "plain"  # records in the clear: the handshake before keys
    EARLY = "early"  # TLS 1.3 client after a ClientHello with early_data: trial decryption
    DECRYPT = "decrypt"  # records are decrypted with the direction's protection
    OPAQUE = "opaque"  # protected and not decryptable: records are counted only
    LOST = "lost"  # framing lost (a gap, bytes that are not TLS) or the stream ended


def _no_keys(record: bytes) -> tuple[int, bytes]:
    raise DecryptError("no keys")


class Direction:
    """One direction: records, handshake messages, keys. Holds keys: never shows them.

    ``stage`` follows TLS 1.3's key generations: 0 before keys, 1 handshake traffic keys,
    2 application traffic keys (TLS 1.2 uses 1 once its ChangeCipherSpec is seen).
    ``open`` is ``protection.open``, bound once per key change for the hot path.
    """

    __slots__ = ("early", "handshakes", "index", "mode", "open", "protection", "reader", "stage")

    def __init__(self, index: int) -> None:
        self.index = index
        self.mode = Mode.PLAIN
        self.reader = RecordReader()
        self.handshakes = HandshakeReader()
        self.protection: Protection | None = None
        self.open: Callable[[bytes], tuple[int, bytes]] = _no_keys
        self.stage = 0
        self.early = EarlyData()  # used by the client's direction only

    def __repr__(self) -> str:
        return f"<{WHO[self.index]} direction {self.mode.value}>"

    @property
    def who(self) -> str:
        return WHO[self.index]

    def use(self, protection: Protection | None, stage: int) -> None:
        """Decrypt with ``protection`` from the next record on, or count records only."""
        self.protection = protection
        self.stage = stage
        if protection is None:
            self.mode = Mode.OPAQUE
            self.open = _no_keys
        else:
            self.mode = Mode.DECRYPT
            self.open = protection.open

    def stop(self) -> None:
        """Read nothing more of this direction."""
        self.mode = Mode.LOST
        self.reader.stop()
        self.early.clear()
