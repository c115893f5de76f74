"""QUIC packet protection, read passively (RFC 9001 §5, §6; RFC 9369 §3.3).

Initial packets are protected with keys anyone can derive (§5.2)::

    initial_secret = HKDF-Extract(initial_salt, client's first DCID)
    client_initial_secret = HKDF-Expand-Label(initial_secret, "client in", "", 32)
    server_initial_secret = HKDF-Expand-Label(initial_secret, "server in", "", 32)

with SHA-256 and AES-128-GCM. Handshake and 1-RTT packets use the TLS 1.3 traffic secrets a
key log holds (``CLIENT_HANDSHAKE_TRAFFIC_SECRET``... ``SERVER_TRAFFIC_SECRET_0``) and the
suite the ServerHello chose. From any secret (§5.1)::

    key = HKDF-Expand-Label(secret, "quic key", "", key_length)
    iv  = HKDF-Expand-Label(secret, "quic iv", "", 12)
    hp  = HKDF-Expand-Label(secret, "quic hp", "", key_length)

(version 2 says ``quicv2 key``, ``quicv2 iv``, ``quicv2 hp``, ``quicv2 ku``, RFC 9369 §3.3.2).
The nonce is the IV XORed with the packet number, the AAD the header up to the end of the
packet number (§5.3). Header protection (§5.4) masks the low bits of the first byte (4 for
long headers, 5 for short ones) and the packet number with 5 bytes made from a 16-byte sample
taken 4 bytes after the packet number starts: AES-ECB of the sample, or ChaCha20 with the
sample as counter and nonce. A Key Update (§6) moves the 1-RTT secret on with ``quic ku``;
the header protection key stays.
"""

from __future__ import annotations

import hmac

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from agentshark.quic.wire import DRAFT_29, VERSION_2
from agentshark.tls.keyschedule import SUITES, CipherSuite, hkdf_expand_label, new_aead

__all__ = [
    "INITIAL_SUITE",
    "PacketKeys",
    "decode_packet_number",
    "initial_secrets",
    "next_secret",
    "packet_keys",
    "retry_tag_valid",
]

INITIAL_SUITE = SUITES[0x1301]  # TLS_AES_128_GCM_SHA256 (RFC 9001 §5.2)

_SALTS = {
    VERSION_2: bytes.fromhex("0dede3def700a6db819381be6e269dcbf9bd2ed9"),  # RFC 9369 §3.3.1
    DRAFT_29: bytes.fromhex("afbfec289993d24c9e9786f19c6111e04390a899"),
}
_SALT_V1 = bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")  # RFC 9001 §5.2

# The Retry integrity key and nonce (RFC 9001 §5.8, RFC 9369 §3.3.3).
_RETRY_V1 = (
    bytes.fromhex("be0c690b9f66575a1d766b54e368c84e"),
    bytes.fromhex("461599d35d632bf2239825bb"),
)
_RETRY_V2 = (
    bytes.fromhex("8fb4b01b56ac48e260fbcbcead7ccc92"),
    bytes.fromhex("d86969bc2d7c6d9990efb04a"),
)


def _labels(version: int) -> tuple[bytes, bytes, bytes, bytes]:
    if version == VERSION_2:
        return b"quicv2 key", b"quicv2 iv", b"quicv2 hp", b"quicv2 ku"
    return b"quic key", b"quic iv", b"quic hp", b"quic ku"


def initial_secrets(dcid: bytes, version: int) -> tuple[bytes, bytes]:
    """The client and server Initial secrets of a connection whose client chose ``dcid``."""
    initial = hmac.digest(_SALTS.get(version, _SALT_V1), dcid, "sha256")  # HKDF-Extract
    return (
        hkdf_expand_label(initial, b"client in", b"", 32, "sha256"),
        hkdf_expand_label(initial, b"server in", b"", 32, "sha256"),
    )


class PacketKeys:
    """The AEAD and header-protection keys of one secret (never shows them)."""

    __slots__ = ("_aead", "_chacha_hp", "_ecb", "hp_key", "iv", "secret", "suite", "version")

    def __init__(
        self, secret: bytes, suite: CipherSuite, version: int, hp_key: bytes | None = None
    ) -> None:
        key_label, iv_label, hp_label, _ = _labels(version)
        self.secret = secret
        self.suite = suite
        self.version = version
        key = hkdf_expand_label(secret, key_label, b"", suite.key_length, suite.hash)
        self.iv = int.from_bytes(hkdf_expand_label(secret, iv_label, b"", 12, suite.hash), "big")
        self._aead: AESGCM | ChaCha20Poly1305 = new_aead(suite, key)
        if hp_key is None:
            hp_key = hkdf_expand_label(secret, hp_label, b"", suite.key_length, suite.hash)
        self.hp_key = hp_key
        self._chacha_hp = suite.aead == "CHACHA20-POLY1305"
        self._ecb = (
            None if self._chacha_hp else Cipher(algorithms.AES(hp_key), modes.ECB()).encryptor()  # noqa: S305  # RFC 9001 §5.4.3
        )

    def __repr__(self) -> str:
        return f"PacketKeys({self.suite.name}, ...)"

    def mask(self, sample: bytes) -> bytes:
        """The 5-byte header protection mask of a 16-byte sample (RFC 9001 §5.4.3, §5.4.4)."""
        if self._ecb is not None:
            return self._ecb.update(sample)[:5]
        chacha = Cipher(algorithms.ChaCha20(self.hp_key, sample), mode=None).encryptor()
        return chacha.update(b"\x00" * 5)

    def open(self, pn: int, header: bytes, payload: bytes) -> bytes | None:
        """The plaintext of a packet, or None when its tag does not verify (§5.3)."""
        nonce = (self.iv ^ pn).to_bytes(12, "big")
        try:
            return self._aead.decrypt(nonce, payload, header)
        except InvalidTag:
            return None

    def updated(self) -> PacketKeys:
        """The keys of the next key phase (RFC 9001 §6.1): a new secret, the same HP key."""
        return PacketKeys(
            next_secret(self.secret, self.suite, self.version),
            self.suite,
            self.version,
            self.hp_key,
        )


def packet_keys(secret: bytes, suite: CipherSuite, version: int) -> PacketKeys:
    return PacketKeys(secret, suite, version)


def next_secret(secret: bytes, suite: CipherSuite, version: int) -> bytes:
    """RFC 9001 §6.1: ``secret_<n+1> = HKDF-Expand-Label(secret_<n>, "quic ku", "",
    Hash.length)``."""
    return hkdf_expand_label(secret, _labels(version)[3], b"", suite.hash_length, suite.hash)


def decode_packet_number(largest: int, truncated: int, nbits: int) -> int:
    """RFC 9000 §A.3: the full packet number closest to the one after ``largest``
    (-1: none received yet in the space)."""
    expected = largest + 1
    win = 1 << nbits
    hwin = win >> 1
    candidate = (expected & ~(win - 1)) | truncated
    if candidate <= expected - hwin and candidate < (1 << 62) - win:
        return candidate + win
    if candidate > expected + hwin and candidate >= win:
        return candidate - win
    return candidate


def retry_tag_valid(packet: bytes, odcid: bytes, version: int) -> bool:
    """RFC 9001 §5.8: the Retry's last 16 bytes are the AES-128-GCM tag of the pseudo-packet
    (the original DCID, length-prefixed, then the Retry without its tag)."""
    key, nonce = _RETRY_V2 if version == VERSION_2 else _RETRY_V1
    pseudo = bytes((len(odcid),)) + odcid + packet[:-16]
    try:
        AESGCM(key).decrypt(nonce, packet[-16:], pseudo)
    except InvalidTag:
        return False
    return True
