"""Finding a direction's records again after a capture gap.

A gap in the TCP stream loses the record framing: the bytes after it start somewhere inside a
record, and the sequence number of the next record is unknown. :class:`Resync` finds the next
record boundary and proves it with the AEAD tag:

1. Candidates are plausible record headers (RFC 8446 §5.1, RFC 5246 §6.2.1): content type 23
   for TLS 1.3, whose protected records all say application_data (RFC 8446 §5.2), or 21-23
   for TLS 1.2, whose alerts, handshake messages and application data are protected after its
   ChangeCipherSpec; legacy_record_version 0x0303; a length from the suite's smallest
   protected record up to 2^14 + 256 (RFC 8446 §5.2; TLS 1.2's AEAD suites add 24 bytes at
   most, far below RFC 5246's 2048). When the buffer already holds the next header, it must
   be plausible too (the chain).
2. The proof is a tag that verifies. The records lost fill the lost bytes exactly, each at
   least the smallest protected record, so the jump of the sequence number is at most
   ``lost // smallest``: the numbers from the last verified + 1 up are tried, at most
   ``MAX_TRIES`` per candidate. TLS 1.2 AES-GCM records carry an explicit nonce that
   implementations set to the sequence number (RFC 5288 §3 allows it; OpenSSL, BoringSSL,
   Go and NSS do): that number is tried first. Keys that a lost record may have switched to
   are tried too, from sequence number 0: the application traffic keys when a TLS 1.3
   Finished was lost (RFC 8446 §7.3), the next generations when KeyUpdates were (§4.6.3, up
   to ``MAX_KEY_UPDATES``), the key block when a TLS 1.2 ChangeCipherSpec was (RFC 5246
   §7.1), and the candidates of ``tls.trial`` when a hello was lost.
3. The first record whose tag verifies fixes both the boundary and the sequence number;
   framing resumes after it. A tag forged by chance has probability 2^-128 per try.

Cost is bounded: bytes before a candidate are dropped, so the buffer holds one candidate
record and what came after it; the search gives up after ``MAX_SCAN`` bytes searched or
``MAX_WORK`` tag checks. The no-loss path never comes here.

A search may start before its keys are known (``waiting``): a client whose ClientHello was
lost waits for ``tls.trial`` to find its session in the key log; its bytes are held, up to
``MAX_HELD``, and searched once ``arm`` gives the keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from agentshark.tls.direction import Protection
from agentshark.tls.records import DecryptError

__all__ = [
    "MAX_HELD",
    "MAX_KEY_UPDATES",
    "MAX_SCAN",
    "MAX_TRIES",
    "MAX_WORK",
    "Keys",
    "Resumed",
    "Resync",
    "lost_plaintext",
    "smallest_record",
]

MAX_TRIES = 1024  # sequence numbers tried per candidate record and set of keys
MAX_WORK = 16384  # tag checks per gap
MAX_SCAN = 1 << 22  # bytes searched after a gap for a record that decrypts
MAX_HELD = 1 << 18  # bytes held while a search waits for its keys
MAX_KEY_UPDATES = 4  # TLS 1.3 key generations a gap may have swallowed, tried in turn
MAX_PROTECTED = (1 << 14) + 256  # TLSCiphertext.length limit (RFC 8446 §5.2)
_TAG = 16
_HEADER13 = re.compile(rb"\x17\x03\x03")
_HEADER12 = re.compile(rb"[\x15-\x17]\x03\x03")


def smallest_record(tls13: bool, chacha: bool) -> int:
    """The size of a protected record with no content: its per-record overhead.

    Header 5 + tag 16, plus the inner content type in TLS 1.3 (RFC 8446 §5.2), plus the
    8-byte explicit nonce of TLS 1.2 AES-GCM (RFC 5288 §3).
    """
    if tls13:
        return 5 + 1 + _TAG
    return 5 + _TAG + (0 if chacha else 8)


@dataclass(slots=True, kw_only=True)
class Keys:
    """Keys a record after the gap may be protected with.

    ``expected`` is the sequence number the next record would have had without the gap (0
    for keys a lost record switched to); ``change`` names that lost record ("" for the
    direction's own keys: "Finished", "KeyUpdate" (``updates`` of them), "ChangeCipherSpec",
    "ClientHello", "ServerHello"). ``trial`` says what a record verifying under these keys
    proves, for keys tried because a hello was lost: "client random" (``random``, the
    session's), or "cipher suite" (the protection's).
    """

    protection: Protection
    expected: int
    stage: int
    change: str = ""
    updates: int = 0
    trial: str = ""
    random: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class Resumed:
    """The first record after a gap that decrypted, and what was lost before it.

    ``lost`` counts the ciphertext bytes between the end of the last record read before the
    gap and this record (the partial record, the gaps, the bytes searched past), of which
    ``searched`` came after the gap. ``rest`` is what followed the record in the buffer.
    """

    keys: Keys
    seq: int
    ctype: int
    content: bytes
    record: int  # the record's size, header included
    lost: int
    searched: int
    rest: bytes


class Resync:
    """Looks for the first record after a gap whose tag verifies (sans-I/O).

    ``feed`` takes the bytes after the gap and returns a :class:`Resumed` once a record
    verifies; ``gap`` adds a further gap. ``error`` says why the search gave up.
    """

    __slots__ = (
        "_buf",
        "_header",
        "_held",
        "_held_bytes",
        "_keys",
        "_smallest",
        "error",
        "gap_bytes",
        "lost",
        "searched",
        "work",
    )

    def __init__(
        self, keys: list[Keys], *, tls13: bool, smallest: int, lost: int, gap: int
    ) -> None:
        self._buf = bytearray()
        self._held: list[tuple[bytes, float, int]] = []
        self._held_bytes = 0
        self._keys = keys
        self._header = _HEADER13 if tls13 else _HEADER12
        self._smallest = smallest
        self.lost = lost
        self.gap_bytes = gap
        self.searched = 0
        self.work = 0
        self.error: str | None = None

    def __repr__(self) -> str:
        return f"Resync(lost={self.lost}, searched={self.searched}, work={self.work})"

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def waiting(self) -> bool:
        """True while the keys are not known: bytes are held, not searched."""
        return not self._keys

    @property
    def keys(self) -> list[Keys]:
        return self._keys

    def hold(self, data: bytes, ts: float, acked: int) -> None:
        """Keep bytes that came while ``waiting``, with their time and acknowledgment."""
        self._held.append((data, ts, acked))
        self._held_bytes += len(data)
        if self._held_bytes > MAX_HELD:
            self.error = f"more than {MAX_HELD} bytes came before the keys were found"

    def take_held(self) -> list[tuple[bytes, float, int]]:
        """The bytes held while waiting, to be fed again once armed."""
        held, self._held = self._held, []
        return held

    def arm(self, keys: list[Keys], *, tls13: bool, smallest: int) -> None:
        """Search with ``keys`` from now on (the next ``feed``, which may bring no bytes)."""
        self._keys = keys
        self._header = _HEADER13 if tls13 else _HEADER12
        self._smallest = smallest

    def gap(self, size: int) -> None:
        """Another ``size`` bytes were never captured: what is held is cut off too."""
        self.lost += len(self._buf) + size
        self.searched += len(self._buf)
        self.gap_bytes += size
        self._buf.clear()

    def feed(self, data: bytes) -> Resumed | None:
        buf = self._buf
        buf += data
        search = self._header.search
        while self.error is None:
            m = search(buf)
            if m is None:
                self._drop(max(0, len(buf) - 2))  # keep what may start a header
                return None
            if m.start():
                self._drop(m.start())
            if len(buf) < 5:
                return None
            end = 5 + (buf[3] << 8 | buf[4])
            if not self._smallest <= end <= MAX_PROTECTED + 5 or not self._chained(end):
                self._drop(1)
                continue
            if len(buf) < end:
                return None
            found = self._verify(bytes(buf[:end]))
            if found is not None:
                return found
            self._drop(1)
        return None

    def _chained(self, end: int) -> bool:
        """True unless the buffer holds the next header and it is not plausible."""
        buf = self._buf
        if len(buf) < end + 5:
            return True
        size = buf[end + 3] << 8 | buf[end + 4]
        return (
            self._header.match(buf, end) is not None
            and self._smallest <= size + 5 <= MAX_PROTECTED + 5
        )

    def _drop(self, n: int) -> None:
        del self._buf[:n]
        self.lost += n
        self.searched += n
        if self.searched > MAX_SCAN:
            self.error = f"no record in the {self.searched} bytes after the gap decrypted"

    def _verify(self, record: bytes) -> Resumed | None:
        most = min(self.lost // self._smallest + 2, MAX_TRIES)  # the records that fit, a margin
        for keys in self._keys:
            protection = keys.protection
            saved = protection.seq
            for seq in _numbers(keys, record, most):
                self.work += 1
                protection.seq = seq
                try:
                    ctype, content = protection.open(record)
                except DecryptError:
                    if self.work >= MAX_WORK:
                        self.error = f"{self.work} tag checks after the gap found no record"
                        break
                    continue
                buf = self._buf
                rest = bytes(buf[len(record) :])
                buf.clear()
                return Resumed(
                    keys=keys,
                    seq=seq,
                    ctype=ctype,
                    content=content,
                    record=len(record),
                    lost=self.lost,
                    searched=self.searched,
                    rest=rest,
                )
            protection.seq = saved
            if self.error is not None:
                break
        return None


def _numbers(keys: Keys, record: bytes, most: int) -> Iterator[int]:
    """The sequence numbers to try for ``record``, the likeliest first."""
    first = keys.expected + (0 if keys.change else 1)  # the record the gap cut was lost
    suite = keys.protection.suite
    hint = -1
    if not suite.tls13 and suite.aead != "CHACHA20-POLY1305" and len(record) >= 13:
        hint = int.from_bytes(record[5:13], "big")  # the explicit nonce
        if hint >= first:
            yield hint
    for seq in range(first, first + most):
        if seq != hint:
            yield seq


def lost_plaintext(found: Resumed, smallest: int) -> tuple[int, int, bool]:
    """(records lost, plaintext bytes lost, exact?) before the record ``found``.

    With the direction's own keys the jump of the sequence number counts the records lost,
    and each carried ``smallest`` bytes of overhead: the rest of the lost bytes were their
    content (exact in TLS 1.2; in TLS 1.3 an upper bound, as records may be padded, RFC 8446
    §5.4, and may hold post-handshake messages). TLS 1.3 handshake keys protect handshake
    messages only (RFC 8446 §7.3): no application data is lost under them. After a lost key
    change the records under the old keys are not counted: the size is a bound, and nothing
    is lost when the record found follows the handshake's end directly (TLS 1.3: the
    application keys' first record; TLS 1.2: the one after the Finished, which is the first
    record after ChangeCipherSpec, RFC 5246 §7.4.9).
    """
    keys, lost, seq = found.keys, found.lost, found.seq
    tls13 = keys.protection.suite.tls13
    if not keys.change:
        records = seq - keys.expected
        if tls13 and keys.stage == 1:
            return records, 0, True
        size, exact = lost - records * smallest, not tls13
    elif keys.change == "KeyUpdate":
        records = seq + keys.updates  # the KeyUpdates' records, then the new keys' records
        size, exact = lost - records * smallest, False
    else:
        records = seq + 1
        first_data = 0 if tls13 else 1  # the new keys' first record that may carry data
        if seq <= first_data:
            return records, 0, True
        size, exact = lost - seq * smallest, False
    if size < 0:  # the gap's size and the records disagree: say nothing more precise
        size, exact = 0, False
    return records, size, exact
