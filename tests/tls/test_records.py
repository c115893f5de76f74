"""The record layer: framing fed three ways, record protection on RFC 8448 and sealed records."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshark.tls.handshake import HandshakeReader
from agentshark.tls.keyschedule import SUITES, tls12_key_block
from agentshark.tls.records import (
    MAX_CIPHERTEXT,
    DecryptError,
    RecordReader,
    Tls12Protection,
    Tls13Protection,
)
from tests.helpers import feed_three_ways
from tests.tls import rfc8448
from tests.tls.synth import Sealer12, Sealer13, record

AES128 = SUITES[0x1301]


class RecordAdapter:
    """RecordReader behind the feed(data, ts) / close(ts) shape of tests.helpers."""

    def __init__(self) -> None:
        self.reader = RecordReader()

    def feed(self, data: bytes, ts: float) -> list[object]:
        return list(self.reader.feed(data))

    def close(self, ts: float) -> list[object]:
        return [("error", self.reader.error)] if self.reader.error else []


def test_records_three_ways() -> None:
    data = rfc8448.CLIENT_HELLO_RECORD + rfc8448.SERVER_HELLO_RECORD
    data += rfc8448.SERVER_HANDSHAKE_RECORD + record(23, b"") + rfc8448.NEW_SESSION_TICKET_RECORD
    out = feed_three_ways(RecordAdapter, data, trailing=b"\x17\x03\x03\x00\x10abc")
    assert out == [
        rfc8448.CLIENT_HELLO_RECORD,
        rfc8448.SERVER_HELLO_RECORD,
        rfc8448.SERVER_HANDSHAKE_RECORD,
        record(23, b""),
        rfc8448.NEW_SESSION_TICKET_RECORD,
    ]


@pytest.mark.parametrize(
    ("head", "why"),
    [
        (b"GET / HTTP/1.1\r\n", "content type 71"),
        (b"\x16\x02\x00\x00\x10", "protocol version major 2"),
        (b"\x17\x03\x03\x48\x01", "above the limit"),
    ],
)
def test_garbage_stops_the_reader(head: bytes, why: str) -> None:
    reader = RecordReader()
    assert reader.feed(rfc8448.SERVER_HELLO_RECORD + head) == [rfc8448.SERVER_HELLO_RECORD]
    assert reader.error is not None and why in reader.error
    assert reader.feed(rfc8448.SERVER_HELLO_RECORD) == []


def test_largest_record_is_accepted() -> None:
    big = record(23, bytes(MAX_CIPHERTEXT))
    assert RecordReader().feed(big) == [big]


@given(st.binary(max_size=3000), st.randoms())
def test_reader_fuzz_any_bytes_any_chunks(data: bytes, rnd: random.Random) -> None:
    whole = RecordReader()
    expected = whole.feed(data)
    chunked = RecordReader()
    got: list[bytes] = []
    pos = 0
    while pos < len(data):
        step = rnd.randint(1, 40)
        got += chunked.feed(data[pos : pos + step])
        pos += step
    assert got == expected
    assert (chunked.error is None) == (whole.error is None)
    assert b"".join(got) == data[: sum(map(len, got))]


def test_rfc8448_server_handshake_record_decrypts() -> None:
    # RFC 8448 §3: {server} send handshake record, under the server handshake keys, seq 0.
    protection = Tls13Protection(AES128, rfc8448.SERVER_HS_SECRET)
    ctype, content = protection.open(rfc8448.SERVER_HANDSHAKE_RECORD)
    assert ctype == 22
    assert content.startswith(rfc8448.ENCRYPTED_EXTENSIONS)
    assert content.endswith(rfc8448.SERVER_FINISHED)
    assert len(content) == 40 + 445 + 136 + 36  # EE, Certificate, CertificateVerify, Finished
    assert [t for t, _ in HandshakeReader().feed(content)] == [8, 11, 15, 20]


def test_rfc8448_application_records_decrypt_in_sequence() -> None:
    server = Tls13Protection(AES128, rfc8448.SERVER_AP_SECRET)
    assert server.open(rfc8448.NEW_SESSION_TICKET_RECORD)[0] == 22  # seq 0
    assert server.open(rfc8448.SERVER_APPLICATION_RECORD) == (23, rfc8448.APPLICATION_DATA)
    assert server.open(rfc8448.SERVER_ALERT_RECORD) == (21, b"\x01\x00")  # seq 2
    client = Tls13Protection(AES128, rfc8448.CLIENT_AP_SECRET)
    assert client.open(rfc8448.CLIENT_APPLICATION_RECORD) == (23, rfc8448.APPLICATION_DATA)


def test_failed_open_does_not_advance_the_sequence() -> None:
    client = Tls13Protection(AES128, rfc8448.CLIENT_AP_SECRET)
    with pytest.raises(DecryptError):
        client.open(rfc8448.CLIENT_ALERT_RECORD)  # sealed at seq 1
    assert client.seq == 0
    assert client.open(rfc8448.CLIENT_APPLICATION_RECORD)[0] == 23
    assert client.open(rfc8448.CLIENT_ALERT_RECORD) == (21, b"\x01\x00")


@pytest.mark.parametrize("suite", [0x1301, 0x1302, 0x1303])
def test_tls13_padding_is_removed(suite: int) -> None:
    secret = bytes(SUITES[suite].hash_length)
    sealer, protection = Sealer13(suite, secret), Tls13Protection(SUITES[suite], secret)
    for padding in (0, 1, 200):
        assert protection.open(sealer.seal(23, b"data\x00", padding)) == (23, b"data\x00")
    with pytest.raises(DecryptError, match="only padding"):
        protection.open(sealer.seal(0, b"", 10))  # no content type at all
    with pytest.raises(DecryptError):
        protection.open(b"\x17\x03\x03\x00\x03abc")  # shorter than a tag


@pytest.mark.parametrize("code", [0xC02F, 0xC030, 0xCCA8, 0xCCA9, 0x009D])
def test_tls12_records_decrypt(code: int) -> None:
    suite = SUITES[code]
    keys = tls12_key_block(bytes(48), b"c" * 32, b"s" * 32, suite)
    sealer = Sealer12(code, keys.client_key, keys.client_iv)
    protection = Tls12Protection(suite, keys.client_key, keys.client_iv)
    for ctype, content in [
        (22, b"\x14\x00\x00\x0c" + bytes(12)),
        (23, b"GET /"),
        (23, b""),
        (21, b"\x01\x00"),
    ]:
        assert protection.open(sealer.seal(ctype, content)) == (ctype, content)
    wrong = Tls12Protection(suite, keys.server_key, keys.server_iv)
    with pytest.raises(DecryptError):
        wrong.open(sealer.seal(23, b"x"))
    with pytest.raises(DecryptError, match="too short"):
        protection.open(record(23, b"abc"))


def test_protections_do_not_show_keys() -> None:
    protection = Tls13Protection(AES128, rfc8448.SERVER_AP_SECRET)
    assert rfc8448.SERVER_AP_SECRET.hex() not in repr(protection)
    assert repr(protection) == "Tls13Protection(TLS_AES_128_GCM_SHA256, seq=0)"
