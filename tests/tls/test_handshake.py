"""Handshake messages: reassembly across records, and the hello fields a reader needs."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshark.tls.handshake import (
    HELLO_RETRY_RANDOM,
    MAX_MESSAGE,
    HandshakeError,
    HandshakeReader,
    parse_client_hello,
    parse_encrypted_extensions,
    parse_key_update,
    parse_server_hello,
)
from tests.tls import rfc8448
from tests.tls.synth import client_hello, encrypted_extensions, message, server_hello


def test_rfc8448_client_hello() -> None:
    ch = parse_client_hello(rfc8448.CLIENT_HELLO[4:])
    assert ch.random == rfc8448.CLIENT_RANDOM
    assert ch.server_name == "server"
    assert ch.cipher_suites == (0x1301, 0x1303, 0x1302)
    assert ch.versions == (0x0304,)
    assert ch.alpn == ()
    assert not ch.early_data and not ch.psk and not ch.ech


def test_rfc8448_server_hello_and_encrypted_extensions() -> None:
    sh = parse_server_hello(rfc8448.SERVER_HELLO[4:])
    assert (sh.cipher_suite, sh.version, sh.retry, sh.psk) == (0x1301, 0x0304, False, False)
    ee = parse_encrypted_extensions(rfc8448.ENCRYPTED_EXTENSIONS[4:])
    assert (ee.alpn, ee.early_data) == (None, False)


def test_synthetic_hellos() -> None:
    ch = parse_client_hello(
        client_hello(
            b"r" * 32, session_id=b"s" * 32, alpn=("h2", "http/1.1"), early_data=True, psk=True
        )[4:]
    )
    assert (ch.server_name, ch.alpn, ch.session_id) == (
        "api.example.test",
        ("h2", "http/1.1"),
        b"s" * 32,
    )
    assert ch.early_data and ch.psk
    legacy = parse_client_hello(client_hello(b"r" * 32, versions=None, sni=None, alpn=())[4:])
    assert (legacy.versions, legacy.server_name) == ((0x0303,), None)
    sh12 = parse_server_hello(server_hello(b"s" * 32, 0xC02F, version=0x0303, alpn="http/1.1")[4:])
    assert (sh12.version, sh12.alpn) == (0x0303, "http/1.1")
    hrr = parse_server_hello(server_hello(HELLO_RETRY_RANDOM, 0x1302)[4:])
    assert hrr.retry and hrr.version == 0x0304
    ee = parse_encrypted_extensions(encrypted_extensions("h2", early_data=True)[4:])
    assert (ee.alpn, ee.early_data) == ("h2", True)
    # A TLS 1.2 ServerHello may end without an extensions block (RFC 5246 §7.4.1.3).
    bare = b"\x03\x03" + b"s" * 32 + b"\x00" + b"\xc0\x2f" + b"\x00"
    assert parse_server_hello(bare).alpn is None


def test_messages_span_records_and_records_hold_many() -> None:
    messages = (
        rfc8448.ENCRYPTED_EXTENSIONS
        + message(11, bytes(5000))
        + message(4, bytes(100))
        + rfc8448.SERVER_FINISHED
        + message(24, b"\x01")
    )
    for size in (1, 7, 100, 4096, len(messages)):
        reader = HandshakeReader()
        got = []
        for i in range(0, len(messages), size):
            got += reader.feed(messages[i : i + size])
        assert [t for t, _ in got] == [8, 11, 4, 20, 24]
        assert got[0][1] == rfc8448.ENCRYPTED_EXTENSIONS[4:]
        assert got[1][1] == b""  # skipped, not held
        assert got[4][1] == b"\x01"
        assert not reader.partial


def test_key_update() -> None:
    assert parse_key_update(b"\x01") is True
    assert parse_key_update(b"\x00") is False
    with pytest.raises(HandshakeError):
        parse_key_update(b"\x02")


def test_oversized_hello_is_an_error() -> None:
    with pytest.raises(HandshakeError):
        HandshakeReader().feed(b"\x01" + (MAX_MESSAGE + 1).to_bytes(3, "big"))


@pytest.mark.parametrize("cut", [0, 1, 10, 40, 50, 100, 191])
def test_truncated_client_hello_is_an_error(cut: int) -> None:
    with pytest.raises(HandshakeError):
        parse_client_hello(rfc8448.CLIENT_HELLO[4 : 4 + cut])


@given(st.binary(max_size=300))
def test_parsers_fuzz(data: bytes) -> None:
    for parse in (
        parse_client_hello,
        parse_server_hello,
        parse_encrypted_extensions,
        parse_key_update,
        HandshakeReader().feed,
    ):
        with contextlib.suppress(HandshakeError):
            parse(data)
