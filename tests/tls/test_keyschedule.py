"""Key derivation against published vectors: RFC 8448 (TLS 1.3) and the TLS 1.2 PRF vectors."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from agentshark.tls.handshake import HELLO_RETRY_RANDOM
from agentshark.tls.keyschedule import (
    SUITES,
    hkdf_expand_label,
    next_traffic_secret,
    prf,
    suite_name,
    tls12_key_block,
    traffic_key_iv,
)
from tests.tls import rfc8448

AES128 = SUITES[0x1301]


@pytest.mark.parametrize("name", sorted(rfc8448.TRAFFIC_KEYS))
def test_traffic_keys_match_rfc8448(name: str) -> None:
    secret, key, iv = rfc8448.TRAFFIC_KEYS[name]
    assert traffic_key_iv(secret, AES128) == (key, iv)


def test_hkdf_expand_label_with_a_context_matches_rfc8448() -> None:
    # RFC 8448 §3: Derive-Secret(early_secret, "derived", "") =
    # HKDF-Expand-Label(early_secret, "derived", SHA-256(""), 32)
    derived = hkdf_expand_label(
        rfc8448.EARLY_SECRET, b"derived", hashlib.sha256(b"").digest(), 32, "sha256"
    )
    assert derived == rfc8448.DERIVED_FOR_HANDSHAKE


def test_hkdf_expand_label_longer_than_one_hash_block() -> None:
    # HKDF-Expand (RFC 5869 §2.3) chains T(1), T(2)...: check it against HMAC by hand.
    secret = bytes(range(32))
    label = (40).to_bytes(2, "big") + bytes((6 + 3,)) + b"tls13 abc" + b"\x00"
    t1 = hmac.digest(secret, label + b"\x01", "sha256")
    t2 = hmac.digest(secret, t1 + label + b"\x02", "sha256")
    assert hkdf_expand_label(secret, b"abc", b"", 40, "sha256") == (t1 + t2)[:40]


def test_key_update_secret_is_traffic_upd_label() -> None:
    secret = rfc8448.CLIENT_AP_SECRET
    assert next_traffic_secret(secret, AES128) == hkdf_expand_label(
        secret, b"traffic upd", b"", 32, "sha256"
    )
    assert len(next_traffic_secret(bytes(48), SUITES[0x1302])) == 48


def test_tls12_prf_sha256_vector() -> None:
    # The P_SHA256 test vector posted to the IETF TLS list and used by most TLS stacks.
    out = prf(
        bytes.fromhex("9bbe436ba940f017b17652849a71db35"),
        b"test label",
        bytes.fromhex("a0ba9f936cda311827a6f796ffd5198c"),
        100,
        "sha256",
    )
    assert out == bytes.fromhex(
        "e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a"
        "6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab"
        "4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff701"
        "87347b66"
    )


def test_tls12_prf_sha384_vector() -> None:
    out = prf(
        bytes.fromhex("b80b733d6ceefcdc71566ea48e5567df"),
        b"test label",
        bytes.fromhex("cd665cf6a8447dd6ff8b27555edb7465"),
        148,
        "sha384",
    )
    assert out == bytes.fromhex(
        "7b0c18e9ced410ed1804f2cfa34a336a1c14dffb4900bb5fd7942107e81c83cde9ca0faa60be9fe34f82b1233c"
        "9146a0e534cb400fed2700884f9dc236f80edd8bfa961144c9e8d792eca722a7b32fc3d416d473ebc2c5fd4abf"
        "dad05d9184259b5bf8cd4d90fa0d31e2dec479e4f1a26066f2eea9a69236a3e52655c9e9aee691c8f3a26854"
        "308d5eaa3be85e0990703d73e56f"
    )


@pytest.mark.parametrize("code", [0xC02F, 0xC030, 0xCCA8])
def test_tls12_key_block_layout(code: int) -> None:
    # RFC 5246 §6.3: client key, server key, client IV, server IV (no MAC keys for AEAD).
    suite = SUITES[code]
    master, crand, srand = bytes(range(48)), b"c" * 32, b"s" * 32
    k, i = suite.key_length, suite.fixed_iv_length
    block = prf(master, b"key expansion", srand + crand, 2 * (k + i), suite.hash)
    keys = tls12_key_block(master, crand, srand, suite)
    assert keys.client_key + keys.server_key + keys.client_iv + keys.server_iv == block
    assert (len(keys.client_key), len(keys.client_iv)) == (k, i)
    assert repr(keys) == "Tls12KeyBlock(...)"


def test_hello_retry_request_random() -> None:
    # RFC 8446 §4.1.3 prints it
    assert (
        bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
        == HELLO_RETRY_RANDOM
    )


def test_suite_table() -> None:
    assert {s.name for s in SUITES.values() if s.tls13} == {
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
    }
    assert SUITES[0xC030].hash == "sha384" and SUITES[0xC030].key_length == 32
    assert SUITES[0xCCA9].fixed_iv_length == 12 and SUITES[0xC02B].fixed_iv_length == 4
    assert suite_name(0xC027) == "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"
    assert suite_name(0xABCD) == "0xabcd"
