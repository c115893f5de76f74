"""Opening a QUIC connection seen mid-way by trying the key log's secrets (RFC 9001 §5).

A connection whose first Initial the capture does not hold has no ClientHello, so no client
random names its secrets in the key log; a short header does not even say how long its
destination connection ID is (RFC 9000 §17.3). What a packet does carry is proof: only the
right secret, connection ID length and packet number open its AEAD tag. So the 1-RTT
secrets of every session the key log holds are tried on a short-header packet, the newest
session first, the way ``tls.trial`` finds a TLS session whose hello was not captured:

- each secret with every TLS 1.3 suite of its length and both QUIC versions' labels (v1 and
  v2, RFC 9369), each direction's label (``CLIENT_TRAFFIC_SECRET_0`` opens what the client
  sent: the packet's sender is then the client, no guess from ports);
- every connection ID length from 0 to 20 (§17.2): header protection is removed with the
  sample that length places; the reserved bits must then be zero (§17.3.1), which sets most
  wrong guesses aside before any AEAD is tried;
- the key phases the unmasked bit allows, up to ``MAX_UPDATES`` Key Updates past the logged
  secret (§6: the phase bit says the parity);
- packet numbers the truncated one can stand for below ``MAX_NUMBER`` (the largest number of
  the space is not known: §A.3 needs it).

The same holds for the long-header Handshake packets of a capture that starts after the
client's first Initial (the server's Initial cannot be opened: its keys come from that lost
packet's DCID), with the handshake secrets and the header's own lengths.

Work is bounded: at most ``MAX_SESSIONS`` sessions per label and ``MAX_ATTEMPTS`` AEAD
checks per packet; the keys derived are cached across the packets tried.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshark.quic.keys import APP, HANDSHAKE, SECRET_LABELS
from agentshark.quic.protection import INITIAL_SUITE, PacketKeys, initial_secrets
from agentshark.quic.wire import VERSION_1, VERSION_2
from agentshark.tls.keylog import KeyLog
from agentshark.tls.keyschedule import SUITES, CipherSuite

__all__ = ["MAX_UPDATES", "Opened", "Trial"]

MAX_SESSIONS = 64  # newest key log sessions tried per label
MAX_UPDATES = 3  # Key Updates past the logged secret tried
MAX_NUMBER = 1 << 16  # packet numbers tried stay below this
MAX_ATTEMPTS = 20_000  # AEAD checks per packet
_CID_LENGTHS = range(21)
_VERSIONS = (VERSION_1, VERSION_2)
_BY_LENGTH: dict[int, tuple[CipherSuite, ...]] = {
    32: (SUITES[0x1301], SUITES[0x1303]),
    48: (SUITES[0x1302],),
}


@dataclass(frozen=True, slots=True)
class Opened:
    """What opened a packet of ``space`` (1-RTT or Handshake): the session (client random),
    whose secret (``side`` 0: the client's, so the packet's sender is the client), the keys
    of its phase (``updates`` past the logged secret), the DCID length (-1: a long header
    says it), its packet number, the plaintext."""

    space: int
    client_random: bytes
    side: int
    version: int
    keys: PacketKeys
    updates: int
    cid_len: int
    pn: int
    plain: bytes


class Trial:
    """The key log's secrets, tried on packets of connections seen mid-way."""

    __slots__ = ("_cache", "_keylog", "attempts")

    def __init__(self, keylog: KeyLog) -> None:
        self._keylog = keylog
        self._cache: dict[tuple[bytes, int, int, int, int], list[PacketKeys]] = {}
        self.attempts = 0  # AEAD checks made, in all

    def short(
        self, pkt: bytes, *, sides: tuple[int, ...] = (0, 1), only: bytes | None = None
    ) -> Opened | None:
        """Open a short-header packet (``only``: of that session alone)."""
        budget = [MAX_ATTEMPTS]
        for spread in (1, MAX_NUMBER):  # the truncated number itself first, then the others
            for side in sides:
                for random, secret in self._sessions(SECRET_LABELS[(APP, side)], only):
                    for suite in _BY_LENGTH[len(secret)]:
                        for version in _VERSIONS:
                            found = self._short_with(
                                pkt, random, side, secret, suite, version, budget, spread
                            )
                            if found is not None or budget[0] <= 0:
                                return found
        return None

    def handshake(self, pkt: bytes, pn_offset: int, version: int, side: int) -> Opened | None:
        """Open a long-header Handshake packet sent by ``side`` (its header gives the
        lengths)."""
        budget = [MAX_ATTEMPTS]
        for spread in (1, MAX_NUMBER):
            for random, secret in self._sessions(SECRET_LABELS[(HANDSHAKE, side)], None):
                for suite in _BY_LENGTH[len(secret)]:
                    keys = self._keys(random, side + 2, secret, suite, version)[0]
                    found = self._open(pkt, pn_offset, keys, 0x0F, 0x0C, budget, spread)
                    if found is not None:
                        pn, plain = found
                        return Opened(HANDSHAKE, random, side, version, keys, 0, -1, pn, plain)
                    if budget[0] <= 0:
                        return None
        return None

    def initial_opens(self, pkt: bytes, pn_offset: int, dcid: bytes, version: int) -> bool:
        """Does a client Initial keyed by its own DCID open ``pkt``? True for a client's
        first Initial; a server's Initial is keyed by the client's first DCID, which it does
        not carry (RFC 9001 §5.2)."""
        client, _ = initial_secrets(dcid, version)
        keys = PacketKeys(client, INITIAL_SUITE, version)
        return self._open(pkt, pn_offset, keys, 0x0F, 0x0C, [8], 1) is not None

    def _sessions(self, label: str, only: bytes | None) -> list[tuple[bytes, bytes]]:
        found: list[tuple[bytes, bytes]] = []
        for size in _BY_LENGTH:
            found.extend(self._keylog.candidates(label, size)[:MAX_SESSIONS])
        if only is not None:
            found = [(r, s) for r, s in found if r == only]
        return found

    def _keys(
        self, random: bytes, slot: int, secret: bytes, suite: CipherSuite, version: int
    ) -> list[PacketKeys]:
        """The keys of the logged secret and of the Key Updates after it (cached)."""
        key = (random, slot, suite.code, version, len(secret))
        chain = self._cache.get(key)
        if chain is None:
            chain = [PacketKeys(secret, suite, version)]
            if slot < 2:  # 1-RTT: the phases after it too
                for _ in range(MAX_UPDATES):
                    chain.append(chain[-1].updated())
            self._cache[key] = chain
        return chain

    def _short_with(
        self,
        pkt: bytes,
        random: bytes,
        side: int,
        secret: bytes,
        suite: CipherSuite,
        version: int,
        budget: list[int],
        spread: int,
    ) -> Opened | None:
        chain = self._keys(random, side, secret, suite, version)
        hp = chain[0]  # the header protection key stays across Key Updates (§6)
        for cid_len in _CID_LENGTHS:
            pn_offset = 1 + cid_len
            if len(pkt) < pn_offset + 20:
                break
            mask = hp.mask(pkt[pn_offset + 4 : pn_offset + 20])
            first = pkt[0] ^ (mask[0] & 0x1F)
            if first & 0x18:  # reserved bits set: not this length (or not this key)
                continue
            phase = (first >> 2) & 1
            for updates in range(phase, len(chain), 2):
                found = self._open(pkt, pn_offset, chain[updates], 0x1F, 0x18, budget, spread, mask)
                if found is not None:
                    pn, plain = found
                    return Opened(
                        APP, random, side, version, chain[updates], updates, cid_len, pn, plain
                    )
                if budget[0] <= 0:
                    return None
        return None

    def _open(
        self,
        pkt: bytes,
        pn_offset: int,
        keys: PacketKeys,
        low: int,
        reserved: int,
        budget: list[int],
        spread: int,
        mask: bytes | None = None,
    ) -> tuple[int, bytes] | None:
        """The packet number and plaintext when ``keys`` open the packet; the numbers tried
        are the truncated one and, with ``spread`` above 1, the ones it stands for below
        ``spread`` (the truncated one is skipped then: the first pass tried it)."""
        if len(pkt) < pn_offset + 20:
            return None
        if mask is None:
            mask = keys.mask(pkt[pn_offset + 4 : pn_offset + 20])
        first = pkt[0] ^ (mask[0] & low)
        if first & reserved:
            return None
        size = (first & 3) + 1
        truncated = int.from_bytes(pkt[pn_offset : pn_offset + size], "big") ^ int.from_bytes(
            mask[1 : 1 + size], "big"
        )
        header = bytes((first,)) + pkt[1:pn_offset] + truncated.to_bytes(size, "big")
        payload = pkt[pn_offset + size :]
        step = 1 << (8 * size)
        first_pn = truncated if spread == 1 else truncated + step
        for pn in range(first_pn, max(spread, truncated + 1), step):
            budget[0] -= 1
            self.attempts += 1
            plain = keys.open(pn, header, payload)
            if plain is not None:
                return pn, plain
            if budget[0] <= 0:
                return None
        return None
