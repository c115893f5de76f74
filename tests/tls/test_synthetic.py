"""Sessions the shared captures lack, built and sealed in tests/tls/synth.py: TLS 1.2 (GCM,
ChaCha20, resumption), TLS 1.3 with every suite, KeyUpdate, HelloRetryRequest and 0-RTT."""

from __future__ import annotations

import pytest

from agentshark.errors import Diagnostic
from agentshark.tls import KeyLog, TlsAlert, TlsPlaintext
from tests.tls.feeding import diagnostics, plaintext, run, run_three_ways
from tests.tls.synth import REQUEST, RESPONSE, tls12_session, tls13_session


def keylog(text: bytes) -> KeyLog:
    k = KeyLog()
    assert k.add_text(text, "keys.log") == []
    return k


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (0x1301, "TLS_AES_128_GCM_SHA256"),
        (0x1302, "TLS_AES_256_GCM_SHA384"),
        (0x1303, "TLS_CHACHA20_POLY1305_SHA256"),
    ],
)
def test_tls13_suites(code: int, name: str) -> None:
    session = tls13_session(code, padding=3)
    events = run_three_ways(session.keylog, session.flights)
    assert plaintext(events) == session.plaintext
    assert diagnostics(events) == []
    tls, _ = run(keylog(session.keylog), session.flights)
    info = tls.info
    assert (info.version, info.cipher_suite, info.alpn, info.alpn_offered) == (
        "TLS 1.3",
        name,
        "h2",
        ["h2", "http/1.1"],
    )
    assert (info.sni, info.resumed, info.early_data, info.hello_retry) == (
        "api.example.test",
        False,
        False,
        False,
    )
    assert info.client_random == session.client_random.hex()


def test_tls13_server_data_before_client_finished_and_tickets() -> None:
    session = tls13_session()
    _, events = run(keylog(session.keylog), session.flights)
    first = next(e for e in events if isinstance(e, TlsPlaintext))
    assert (first.direction, first.data, first.ts) == (1, RESPONSE[:20], 3.0)  # 0.5-RTT data
    assert [e for e in events if isinstance(e, TlsAlert)] == [
        TlsAlert(direction=0, level=1, description=0, ts=8.0, encrypted=True),
        TlsAlert(direction=1, level=1, description=0, ts=9.0, encrypted=True),
    ]


def test_tls13_key_update() -> None:
    session = tls13_session(0x1303, key_update=True)
    events = run_three_ways(session.keylog, session.flights)
    assert plaintext(events) == session.plaintext
    assert plaintext(events)[0].endswith(b"after the client's key update")
    tls, _ = run(keylog(session.keylog), session.flights)
    assert tls.info.key_updates == 2


def test_tls13_hello_retry_request() -> None:
    session = tls13_session(hello_retry=True)
    events = run_three_ways(session.keylog, session.flights)
    assert plaintext(events) == session.plaintext and diagnostics(events) == []
    tls, _ = run(keylog(session.keylog), session.flights)
    assert tls.info.hello_retry and tls.info.version == "TLS 1.3"


def test_tls13_early_data_accepted() -> None:
    session = tls13_session(early="accepted")
    events = run_three_ways(session.keylog, session.flights)
    assert plaintext(events) == session.plaintext == (REQUEST, RESPONSE)
    assert diagnostics(events) == []
    tls, events = run(keylog(session.keylog), session.flights)
    assert tls.info.early_data and tls.info.resumed
    # The early request keeps the time of its records, though reported once accepted.
    client = [e for e in events if isinstance(e, TlsPlaintext) and e.direction == 0]
    assert [e.ts for e in client] == [2.0, 2.0]


def test_tls13_early_data_rejected() -> None:
    session = tls13_session(early="rejected")
    events = run_three_ways(session.keylog, session.flights)
    assert plaintext(events) == session.plaintext == (REQUEST, RESPONSE)  # the retried request
    (diag,) = diagnostics(events)
    assert (diag.code, diag.severity) == ("tls.early_data_rejected", "info")
    assert "2 records" in diag.message
    tls, _ = run(keylog(session.keylog), session.flights)
    assert not tls.info.early_data and tls.info.decrypted


@pytest.mark.parametrize(("early", "severity"), [("accepted", "warning"), ("rejected", "info")])
def test_tls13_early_data_without_its_secret(early: str, severity: str) -> None:
    session = tls13_session(early=early, early_logged=False)
    events = run_three_ways(session.keylog, session.flights)
    (diag,) = diagnostics(events)
    assert (diag.code, diag.severity) == ("tls.early_data_skipped", severity)
    assert "CLIENT_EARLY_TRAFFIC_SECRET" in diag.message
    assert plaintext(events)[1] == RESPONSE
    assert plaintext(events)[0] == (b"" if early == "accepted" else REQUEST)


def test_tls13_early_data_never_confirmed() -> None:
    session = tls13_session(early="accepted")
    # Only the ClientHello and the early records: the server never answers.
    _, events = run(keylog(session.keylog), session.flights[:2])
    assert plaintext(events) == (b"", b"")  # no ServerHello: the suite is unknown
    _, server = session.flights[2]
    server_hello = server[: 5 + int.from_bytes(server[3:5], "big")]
    _, events = run(keylog(session.keylog), [*session.flights[:2], (1, server_hello)])
    assert plaintext(events)[0] == REQUEST
    assert [d.code for d in diagnostics(events)] == ["tls.early_data_unconfirmed"]


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
        (0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
        (0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
        (0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
        (0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
        (0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
        (0xCCAA, "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
        (0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256"),
        (0x009F, "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384"),
    ],
)
def test_tls12_suites(code: int, name: str) -> None:
    session = tls12_session(code)
    events = run_three_ways(session.keylog, session.flights)
    assert plaintext(events) == session.plaintext and diagnostics(events) == []
    assert events[-1] == TlsAlert(direction=0, level=1, description=0, ts=7.0, encrypted=True)
    tls, _ = run(keylog(session.keylog), session.flights)
    info = tls.info
    assert (info.version, info.cipher_suite, info.alpn, info.resumed) == (
        "TLS 1.2",
        name,
        "http/1.1",
        False,
    )


@pytest.mark.parametrize("code", [0xC02F, 0xCCA8])
def test_tls12_resumption(code: int) -> None:
    session = tls12_session(code, resumed=True)
    events = run_three_ways(session.keylog, session.flights)
    assert plaintext(events) == session.plaintext and diagnostics(events) == []
    tls, _ = run(keylog(session.keylog), session.flights)
    assert tls.info.resumed is True


def test_tls12_no_keys() -> None:
    session = tls12_session()
    tls, events = run(KeyLog(), session.flights)
    (diag,) = events
    assert isinstance(diag, Diagnostic) and diag.code == "tls.no_keys"
    assert diag.location == "test c1 client record 3"  # the client's ChangeCipherSpec
    assert tls.info.records == [7, 8] and not tls.info.decrypted


def test_secrets_arriving_mid_capture_apply_to_what_follows() -> None:
    """A pcapng Decryption Secrets Block between the handshake and the keys' first use."""
    session = tls12_session()
    k = KeyLog()
    from agentshark.tls import TlsConnection

    tls = TlsConnection(k)
    events = []
    for i, (direction, data) in enumerate(session.flights):
        if i == 2:
            k.add_text(session.keylog, "capture.pcapng secrets block 2")
        events += tls.feed(direction, data, float(i))
    assert plaintext(events) == session.plaintext and diagnostics(events) == []


def test_tls12_wrong_master_secret() -> None:
    session = tls12_session()
    wrong = session.keylog[:-10] + b"000000000\n"
    _, events = run(keylog(wrong), session.flights)
    assert [(d.code, d.location) for d in diagnostics(events)] == [
        ("tls.decrypt_failed", "test c1 client record 4"),
        ("tls.decrypt_failed", "test c1 server record 7"),
    ]
    assert plaintext(events) == (b"", b"")
