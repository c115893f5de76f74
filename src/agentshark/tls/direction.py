"""The state of one direction of a TLS connection: its mode, framing and current keys.

It also keeps what turns an acknowledgment of this direction's TCP bytes into plaintext
offsets (``TlsPlaintext.acked``): a mark per recent application data record, (TCP end
offset, plaintext offset before it, plaintext offset after it), trimmed as the peer's
acknowledgments pass them and capped at ``MAX_MARKS`` (the deque drops the oldest), so
memory stays bounded on a one-way bulk transfer. A mark's "before" equals the previous
mark's "after", so marks dropped unread show as a break in that chain.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING

from agentshark.tls.early import EarlyData
from agentshark.tls.handshake import HandshakeReader
from agentshark.tls.records import DecryptError, RecordReader, Tls12Protection, Tls13Protection

if TYPE_CHECKING:
    from agentshark.tls.resync import Keys, Resync

__all__ = ["MAX_MARKS", "UNKNOWN", "WHO", "Direction", "Mode", "Protection"]

WHO = ("client", "server")
Protection = Tls12Protection | Tls13Protection
MAX_MARKS = 256  # record ends kept for translating acknowledgments
UNKNOWN = -1  # a plaintext offset that cannot be told (bytes lost, not decrypted)


class Mode(Enum):
    """What a direction does with its records (see ``session._RECORD_HANDLERS``)."""

    PLAIN = "plain"  # records in the clear: the handshake before keys
    EARLY = "early"  # TLS 1.3 client after a ClientHello with early_data: trial decryption
    DECRYPT = "decrypt"  # records are decrypted with the direction's protection
    TRIAL = "trial"  # a hello was lost: the next protected record is tried under ``trial``
    OPAQUE = "opaque"  # protected and not decryptable: records are counted only
    LOST = "lost"  # framing lost (a gap, bytes that are not TLS) or the stream ended


def _no_keys(record: bytes) -> tuple[int, bytes]:
    raise DecryptError("no keys")


class Direction:
    """One direction: records, handshake messages, keys. Holds keys: never shows them.

    ``stage`` follows TLS 1.3's key generations: 0 before keys, 1 handshake traffic keys,
    2 application traffic keys (TLS 1.2 uses 1 once its ChangeCipherSpec is seen).
    ``open`` is ``protection.open``, bound once per key change for the hot path.

    ``rec_end`` is the TCP end offset of the last record read (TCP offsets count the bytes
    of the direction, fed and lost, as ``net.events.StreamData.offset`` does),
    ``plain`` the plaintext reported (and lost, at ``TlsGap`` sizes); ``marks`` holds the
    marks of recent records, ``floor`` the last one trimmed; a plaintext offset of
    ``UNKNOWN`` marks where bytes were lost. ``resync`` is set while the direction looks for
    its records again after a gap. ``trial`` holds the candidate keys of ``Mode.TRIAL``.
    """

    __slots__ = (
        "early",
        "floor",
        "handshakes",
        "index",
        "marks",
        "mode",
        "open",
        "plain",
        "protection",
        "reader",
        "rec_end",
        "resumed",
        "resync",
        "stage",
        "trial",
        "untracked",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.mode = Mode.PLAIN
        self.reader = RecordReader()
        self.handshakes = HandshakeReader()
        self.protection: Protection | None = None
        self.open: Callable[[bytes], tuple[int, bytes]] = _no_keys
        self.stage = 0
        self.early = EarlyData()  # used by the client's direction only
        self.plain = 0
        self.rec_end = 0
        self.marks: deque[tuple[int, int, int]] = deque(maxlen=MAX_MARKS)
        self.floor = (0, 0, 0)
        self.resync: Resync | None = None
        self.trial: list[Keys] = []
        self.resumed = 0  # gaps after which decryption resumed
        self.untracked = False  # plaintext not marked (0-RTT data): acks are not translated

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
        self.lose(self.rec_end + 1)
        self.mode = Mode.LOST
        self.reader.stop()
        self.early.clear()
        self.resync = None
        self.trial = []

    def lose(self, tcp_from: int) -> None:
        """Acknowledgments from TCP offset ``tcp_from`` on cannot be translated (yet)."""
        self.marks.append((tcp_from, self.plain, UNKNOWN))

    def resume(self, tcp_from: int, plain: int) -> None:
        """From TCP offset ``tcp_from`` on, records bring the plaintext past ``plain``."""
        self.plain = plain
        self.marks.append((tcp_from, UNKNOWN, plain))

    def translate(self, acked: int) -> int:
        """The plaintext of the records that end at or below TCP offset ``acked``.

        ``UNKNOWN`` for an offset past the bytes fed so far, one inside bytes lost, or one
        below the marks kept (an acknowledgment older than those already trimmed).
        """
        marks = self.marks
        if marks:
            last = marks[-1]
            if acked == last[0]:  # the usual case: all the records read are acknowledged
                marks.clear()
                self.floor = last
                return last[2]
        elif acked == self.floor[0]:  # ... and acknowledged again
            return self.floor[2]
        return self._translate(acked)

    def _translate(self, acked: int) -> int:
        if acked > self.rec_end + self.reader.buffered or self.untracked:
            return UNKNOWN  # (during a resync, past rec_end is lost anyway)
        marks = self.marks
        floor = self.floor
        if not marks or marks[0][0] > acked:  # between the floor and the first mark
            if marks and marks[0][1] != floor[2]:
                return UNKNOWN  # marks were dropped in between
            return floor[2] if floor[0] <= acked else UNKNOWN
        while marks and marks[0][0] <= acked:
            floor = marks.popleft()
        self.floor = floor
        return floor[2]

    def untrack(self) -> None:
        """Plaintext will come that marks do not follow (0-RTT): translate nothing."""
        self.untracked = True
        self.marks = deque(maxlen=0)  # appends are dropped: translate takes the slow path
