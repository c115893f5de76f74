"""Cipher suites and key derivation: logged secrets -> AEAD keys and IVs.

A key log gives the secrets an endpoint derived; what is left for a passive reader is the
last step of each key schedule, done here with HMAC (the standard library's, which the
``cryptography`` HKDF classes would only wrap):

TLS 1.3 (RFC 8446 §7.1, §7.3, https://www.rfc-editor.org/rfc/rfc8446#section-7.3)
    ``[sender]_write_key = HKDF-Expand-Label(Secret, "key", "", key_length)``
    ``[sender]_write_iv  = HKDF-Expand-Label(Secret, "iv", "", iv_length)``
    and after a KeyUpdate (§7.2)
    ``application_traffic_secret_N+1 = HKDF-Expand-Label(application_traffic_secret_N,
    "traffic upd", "", Hash.length)``.

TLS 1.2 (RFC 5246 §5 and §6.3, https://www.rfc-editor.org/rfc/rfc5246#section-6.3)
    ``key_block = PRF(master_secret, "key expansion", server_random + client_random)``,
    cut into client and server MAC keys (none for AEAD suites), write keys and write IVs.
    The PRF is P_SHA256, or P_SHA384 for the ``_SHA384`` suites (RFC 5288 §3).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Literal

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

__all__ = [
    "SUITES",
    "CipherSuite",
    "Tls12KeyBlock",
    "hkdf_expand_label",
    "new_aead",
    "next_traffic_secret",
    "prf",
    "suite_name",
    "tls12_key_block",
    "traffic_key_iv",
]

Aead = Literal["AES-128-GCM", "AES-256-GCM", "CHACHA20-POLY1305"]
HashName = Literal["sha256", "sha384"]


@dataclass(frozen=True, slots=True)
class CipherSuite:
    """An AEAD cipher suite we can decrypt.

    ``fixed_iv_length`` is the IV derived from the secrets: 12 bytes in TLS 1.3 and for
    ChaCha20-Poly1305 in TLS 1.2 (RFC 7905 §2), the 4-byte salt of AES-GCM in TLS 1.2, whose
    other 8 nonce bytes travel in each record (RFC 5288 §3).
    """

    code: int
    name: str
    tls13: bool
    aead: Aead
    key_length: int
    fixed_iv_length: int
    hash: HashName

    @property
    def hash_length(self) -> int:
        return 48 if self.hash == "sha384" else 32


def _suite(code: int, name: str) -> CipherSuite:
    tls13 = "_WITH_" not in name  # TLS 1.3 suites name no key exchange (RFC 8446 §B.4)
    if "CHACHA20" in name:
        aead: Aead = "CHACHA20-POLY1305"
        key_length, iv_length = 32, 12
    else:
        aead = "AES-256-GCM" if "AES_256" in name else "AES-128-GCM"
        key_length = 32 if aead == "AES-256-GCM" else 16
        iv_length = 12 if tls13 else 4
    hash_name: HashName = "sha384" if name.endswith("SHA384") else "sha256"
    return CipherSuite(code, name, tls13, aead, key_length, iv_length, hash_name)


# The suites we decrypt, by IANA code point (https://www.iana.org/assignments/tls-parameters).
SUITES: dict[int, CipherSuite] = {
    s.code: s
    for s in (
        _suite(0x1301, "TLS_AES_128_GCM_SHA256"),
        _suite(0x1302, "TLS_AES_256_GCM_SHA384"),
        _suite(0x1303, "TLS_CHACHA20_POLY1305_SHA256"),
        _suite(0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256"),
        _suite(0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384"),
        _suite(0x009E, "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"),
        _suite(0x009F, "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384"),
        _suite(0x00A8, "TLS_PSK_WITH_AES_128_GCM_SHA256"),
        _suite(0x00A9, "TLS_PSK_WITH_AES_256_GCM_SHA384"),
        _suite(0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
        _suite(0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
        _suite(0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
        _suite(0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
        _suite(0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
        _suite(0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
        _suite(0xCCAA, "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
    )
}

# Names of suites we recognize but do not decrypt, for diagnostics.
_OTHER_SUITES = {
    0x0004: "TLS_RSA_WITH_RC4_128_MD5",
    0x0005: "TLS_RSA_WITH_RC4_128_SHA",
    0x000A: "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    0x002F: "TLS_RSA_WITH_AES_128_CBC_SHA",
    0x0033: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA",
    0x0035: "TLS_RSA_WITH_AES_256_CBC_SHA",
    0x0039: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA",
    0x003C: "TLS_RSA_WITH_AES_128_CBC_SHA256",
    0x003D: "TLS_RSA_WITH_AES_256_CBC_SHA256",
    0x0067: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
    0x006B: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256",
    0x1304: "TLS_AES_128_CCM_SHA256",
    0x1305: "TLS_AES_128_CCM_8_SHA256",
    0xC009: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    0xC00A: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    0xC013: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    0xC014: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    0xC023: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    0xC024: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
    0xC027: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    0xC028: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
    0xC0AC: "TLS_ECDHE_ECDSA_WITH_AES_128_CCM",
    0xC0AD: "TLS_ECDHE_ECDSA_WITH_AES_256_CCM",
}


def suite_name(code: int) -> str:
    """The IANA name of a cipher suite, or its code point in hex (``0x1a2b``)."""
    known = SUITES.get(code)
    if known is not None:
        return known.name
    return _OTHER_SUITES.get(code, f"0x{code:04x}")


def new_aead(suite: CipherSuite, key: bytes) -> AESGCM | ChaCha20Poly1305:
    """The ``cryptography`` AEAD object for ``suite`` with ``key`` (made once per key)."""
    if suite.aead == "CHACHA20-POLY1305":
        return ChaCha20Poly1305(key)
    return AESGCM(key)


# -- TLS 1.3 --------------------------------------------------------------------------------


def hkdf_expand_label(
    secret: bytes, label: bytes, context: bytes, length: int, hash_name: HashName
) -> bytes:
    """HKDF-Expand-Label (RFC 8446 §7.1) over HKDF-Expand (RFC 5869 §2.3).

    ``HkdfLabel = uint16 length || opaque label<7..255> = "tls13 " + Label ||
    opaque context<0..255>``; HKDF-Expand is ``T(i) = HMAC(PRK, T(i-1) | info | i)``.
    """
    full_label = b"tls13 " + label
    info = (
        length.to_bytes(2, "big")
        + bytes((len(full_label),))
        + full_label
        + bytes((len(context),))
        + context
    )
    out = b""
    block = b""
    counter = 1
    while len(out) < length:
        block = hmac.digest(secret, block + info + bytes((counter,)), hash_name)
        out += block
        counter += 1
    return out[:length]


def traffic_key_iv(secret: bytes, suite: CipherSuite) -> tuple[bytes, bytes]:
    """The write key and IV of a TLS 1.3 traffic secret (RFC 8446 §7.3)."""
    key = hkdf_expand_label(secret, b"key", b"", suite.key_length, suite.hash)
    iv = hkdf_expand_label(secret, b"iv", b"", 12, suite.hash)
    return key, iv


def next_traffic_secret(secret: bytes, suite: CipherSuite) -> bytes:
    """The application traffic secret after a KeyUpdate (RFC 8446 §7.2)."""
    return hkdf_expand_label(secret, b"traffic upd", b"", suite.hash_length, suite.hash)


# -- TLS 1.2 --------------------------------------------------------------------------------


def prf(secret: bytes, label: bytes, seed: bytes, length: int, hash_name: HashName) -> bytes:
    """The TLS 1.2 PRF (RFC 5246 §5): ``P_hash(secret, label + seed)`` cut to ``length``.

    ``A(0) = seed, A(i) = HMAC(secret, A(i-1))``;
    ``P_hash = HMAC(secret, A(1) + seed) + HMAC(secret, A(2) + seed) + ...``
    """
    seed = label + seed
    out = b""
    a = seed
    while len(out) < length:
        a = hmac.digest(secret, a, hash_name)
        out += hmac.digest(secret, a + seed, hash_name)
    return out[:length]


@dataclass(frozen=True, slots=True)
class Tls12KeyBlock:
    """The write keys and IVs of both sides of a TLS 1.2 AEAD session (RFC 5246 §6.3)."""

    client_key: bytes
    server_key: bytes
    client_iv: bytes
    server_iv: bytes

    def __repr__(self) -> str:
        return "Tls12KeyBlock(...)"  # key material never shows


def tls12_key_block(
    master_secret: bytes, client_random: bytes, server_random: bytes, suite: CipherSuite
) -> Tls12KeyBlock:
    """Cut the key block of ``suite``: AEAD suites have no MAC keys (RFC 5288 §3)."""
    k, i = suite.key_length, suite.fixed_iv_length
    block = prf(
        master_secret, b"key expansion", server_random + client_random, 2 * (k + i), suite.hash
    )
    return Tls12KeyBlock(
        client_key=block[:k],
        server_key=block[k : 2 * k],
        client_iv=block[2 * k : 2 * k + i],
        server_iv=block[2 * k + i :],
    )
