"""TlsConnection on the RFC 8448 trace: decryption, feeding three ways, failures, secrecy."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.tls import KeyLog, TlsAlert, TlsConnection, TlsPlaintext
from tests.tls import rfc8448
from tests.tls.feeding import diagnostics, gaps, normalize, plaintext, run, run_three_ways
from tests.tls.synth import record, tls12_session, tls13_session

TRACE = rfc8448.TRACE


def keylog(text: bytes = rfc8448.KEYLOG) -> KeyLog:
    k = KeyLog()
    k.add_text(text, "keys.log")
    return k


def test_rfc8448_trace_decrypts() -> None:
    tls, events = run(keylog(), TRACE)
    assert events == [
        TlsPlaintext(direction=0, data=rfc8448.APPLICATION_DATA, ts=5.0),
        TlsPlaintext(direction=1, data=rfc8448.APPLICATION_DATA, ts=6.0),
        TlsAlert(direction=0, level=1, description=0, ts=7.0, encrypted=True),
        TlsAlert(direction=1, level=1, description=0, ts=8.0, encrypted=True),
    ]
    assert events[2].name == "close_notify"  # type: ignore[union-attr]
    info = tls.info
    assert (info.version, info.cipher_suite, info.sni) == (
        "TLS 1.3",
        "TLS_AES_128_GCM_SHA256",
        "server",
    )
    assert info.client_random == rfc8448.CLIENT_RANDOM.hex()
    assert (info.decrypted, info.resumed, info.alpn, info.alpn_offered) == (True, False, None, [])
    assert info.records == [4, 5]


def test_rfc8448_trace_three_ways() -> None:
    events = run_three_ways(rfc8448.KEYLOG, TRACE)
    assert plaintext(events) == (rfc8448.APPLICATION_DATA, rfc8448.APPLICATION_DATA)


def test_plaintext_is_stamped_with_the_feed_that_completed_the_record() -> None:
    tls = TlsConnection(keylog())
    for direction, data in TRACE[:4]:
        tls.feed(direction, data, 1.0)
    app = rfc8448.CLIENT_APPLICATION_RECORD
    assert tls.feed(0, app[:30], 2.0) == []
    assert tls.feed(0, app[30:], 3.0) == [
        TlsPlaintext(direction=0, data=rfc8448.APPLICATION_DATA, ts=3.0)
    ]


def test_no_keys_one_diagnostic_naming_the_client_random() -> None:
    for log, source in (
        (KeyLog(), "no key log was given"),
        (keylog(b"# empty\n"), "keys.log has no secret"),
    ):
        tls, events = run(log, TRACE)
        (diag,) = events
        assert isinstance(diag, Diagnostic)
        assert diag.code == "tls.no_keys"
        assert rfc8448.CLIENT_RANDOM.hex()[:16] in diag.message and source in diag.message
        assert "SSLKEYLOGFILE" in diag.message and "--keylog" in diag.message
        assert not tls.info.decrypted and tls.info.records == [4, 5]


def test_missing_application_secret() -> None:
    text = b"".join(
        line + b"\n" for line in rfc8448.KEYLOG.splitlines() if b"CLIENT_TRAFFIC" not in line
    )
    _, events = run(keylog(text), TRACE)
    assert [(d.code, d.location) for d in diagnostics(events)] == [
        ("tls.missing_secret", "test c1 client record 2")
    ]
    assert "CLIENT_TRAFFIC_SECRET_0" in diagnostics(events)[0].message
    assert plaintext(events) == (b"", rfc8448.APPLICATION_DATA)  # the server side still decrypts


def test_wrong_keys_one_diagnostic_per_direction() -> None:
    wrong = rfc8448.KEYLOG.replace(rfc8448.SERVER_HS_SECRET.hex().encode(), b"00" * 32)
    wrong = wrong.replace(rfc8448.CLIENT_AP_SECRET.hex().encode(), b"11" * 32)
    tls, events = run(keylog(wrong), TRACE)
    diags = diagnostics(events)
    assert [(d.code, d.location) for d in diags] == [
        ("tls.decrypt_failed", "test c1 server record 2"),
        ("tls.decrypt_failed", "test c1 client record 3"),
    ]
    assert not any(isinstance(e, TlsPlaintext) for e in events)
    assert tls.info.records == [4, 5]  # records are still counted


def test_secret_of_the_wrong_length_for_the_suite() -> None:
    text = rfc8448.KEYLOG.replace(rfc8448.SERVER_HS_SECRET.hex().encode(), b"ab" * 48)
    _, events = run(keylog(text), TRACE)
    (diag,) = diagnostics(events)
    assert diag.code == "tls.wrong_secret" and "48 bytes" in diag.message


def test_gap_resumes_at_the_next_record_that_decrypts() -> None:
    # A 100-byte gap after the handshake: the client's 72-byte application record (sequence
    # number 0) is taken for lost bytes, as the gap says a record was lost before it; its
    # close_notify (number 1) decrypts and decryption goes on from there.
    tls = TlsConnection(keylog(), location="c1")
    events = []
    for direction, data in TRACE[:4]:
        events += tls.feed(direction, data, 1.0)
    events += tls.gap(0, 100, 2.0)
    for direction, data in TRACE[4:]:
        events += tls.feed(direction, data, 3.0)
    (diag,) = diagnostics(events)
    assert (diag.code, diag.location) == ("tls.resynced", "c1 client record 3")
    assert "100 bytes" in diag.message and "1 record lost (172 bytes of ciphertext" in diag.message
    assert "at most 150 bytes of plaintext" in diag.message  # TLS 1.3: a bound
    assert "record sequence number 1" in diag.message
    assert [(g.direction, g.size) for g in gaps(events)] == [(0, 172 - 22)]
    assert plaintext(events) == (b"", rfc8448.APPLICATION_DATA)
    assert [e.direction for e in events if isinstance(e, TlsAlert)] == [0, 1]


def test_gap_in_the_handshake_stops_the_direction() -> None:
    other = b"CLIENT_HANDSHAKE_TRAFFIC_SECRET " + b"ab" * 32 + b" " + b"cd" * 32 + b"\n"
    tls = TlsConnection(keylog(other), location="c1")  # no secret of this session
    events = tls.feed(0, TRACE[0][1], 1.0)
    events += tls.gap(1, 100, 2.0)  # the ServerHello is lost: the suite is unknown
    (diag,) = diagnostics(events)
    assert diag.code == "tls.gap" and "100 bytes" in diag.message
    assert "the ServerHello was not read" in diag.message
    assert tls.gap(1, 5, 4.0) == [] and tls.feed(1, TRACE[1][1], 5.0) == []


def test_gap_before_the_server_hello_finds_the_suite_by_trial() -> None:
    tls = TlsConnection(keylog(), location="c1")
    events = tls.feed(0, TRACE[0][1], 1.0)
    events += tls.gap(1, 100, 2.0)  # the ServerHello is lost: the suite is unknown
    assert events == []  # the search starts: the offered suites under the logged secrets
    events += tls.feed(1, TRACE[1][1], 3.0)  # the server's flight: its records are found
    codes = [(d.code, d.location) for d in diagnostics(events)]
    assert codes == [("tls.suite_by_trial", "c1"), ("tls.resynced", "c1 server record 1")]
    assert tls.info.cipher_suite == "TLS_AES_128_GCM_SHA256" and tls.info.version == "TLS 1.3"
    for direction, data in TRACE[2:]:
        events += tls.feed(direction, data, 4.0)
    assert plaintext(events) == (rfc8448.APPLICATION_DATA, rfc8448.APPLICATION_DATA)


def test_garbage_stops_one_direction() -> None:
    _, events = run(keylog(), [*TRACE[:2], (0, b"GET / HTTP/1.1\r\n\r\n"), *TRACE[2:]])
    (diag,) = diagnostics(events)
    assert (diag.code, diag.location) == ("tls.bad_record", "test c1 client record 1")
    assert "content type 71" in diag.message
    assert plaintext(events) == (b"", rfc8448.APPLICATION_DATA)


def test_stream_ending_inside_a_record() -> None:
    _, events = run(keylog(), [*TRACE[:5], (1, rfc8448.SERVER_APPLICATION_RECORD[:20])])
    (diag,) = diagnostics(events)
    assert diag.code == "tls.truncated_record" and diag.severity == "info"


def test_capture_starting_after_the_handshake() -> None:
    tls, events = run(keylog(), TRACE[4:])
    (diag,) = diagnostics(events)
    assert diag.code == "tls.no_handshake"
    assert tls.info.records == [2, 2] and tls.info.client_random is None
    assert not any(isinstance(e, (TlsPlaintext, TlsAlert)) for e in events)


def test_server_speaking_first_is_reported() -> None:
    _, events = run(keylog(), [(1, rfc8448.CLIENT_HELLO_RECORD), (0, rfc8448.SERVER_HELLO_RECORD)])
    assert [d.code for d in diagnostics(events)] == ["tls.unexpected_message"]


def test_plaintext_alert_during_the_handshake() -> None:
    _, events = run(keylog(), [TRACE[0], (1, record(21, b"\x02\x28"))])
    assert events == [TlsAlert(direction=1, level=2, description=40, ts=2.0, encrypted=False)]
    assert events[0].name == "handshake_failure"  # type: ignore[union-attr]


def test_unsupported_cipher_suite() -> None:
    session = tls12_session(0xC02F)
    sh = session.flights[1][1]
    cbc = sh.replace(b"\xc0\x2f\x00", b"\xc0\x27\x00", 1)  # the ServerHello's suite -> CBC
    tls, events = run(keylog(session.keylog), [session.flights[0], (1, cbc), *session.flights[2:]])
    (diag,) = diagnostics(events)
    assert (
        diag.code == "tls.unsupported" and "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256" in diag.message
    )
    assert tls.info.cipher_suite == "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"
    assert plaintext(events) == (b"", b"") and sum(tls.info.records) > 10


def test_key_material_never_shows() -> None:
    sessions = [tls13_session(0x1303, key_update=True), tls12_session(0xCCA8)]
    texts = [rfc8448.KEYLOG, *(s.keylog for s in sessions)]
    runs = [
        run(keylog(rfc8448.KEYLOG), TRACE),
        *(run(keylog(s.keylog), s.flights) for s in sessions),
        run(keylog(rfc8448.KEYLOG.replace(b"b3ed", b"0000")), TRACE),  # wrong keys
        run(keylog(b"CLIENT_RANDOM " + b"ab" * 32 + b" " + b"cd" * 47 + b"\n"), TRACE),
    ]
    secrets = {
        line.split()[2].decode().lower()
        for text in texts
        for line in text.splitlines()
        if not line.startswith(b"#")
    }
    secrets.add("cd" * 47)
    for tls, events in runs:
        shown = [repr(tls), str(tls), repr(tls.info), str(tls.info), str(tls.info.to_json())]
        shown += [repr(tls._dirs[0]), repr(tls._dirs[1])]
        shown += [repr(e) for e in events] + [str(e) for e in events]
        shown += [repr(keylog(t)) for t in texts]
        shown += [
            d.message for t in texts for d in KeyLog().add_text(t.replace(b" ", b"  x", 1), "k")
        ]
        text = "\n".join(shown).lower()
        for secret in secrets:
            assert secret[:16] not in text


def test_info_to_json() -> None:
    tls, _ = run(keylog(), TRACE)
    assert tls.info.to_json() == {
        "version": "TLS 1.3",
        "cipher_suite": "TLS_AES_128_GCM_SHA256",
        "sni": "server",
        "alpn_offered": [],
        "alpn": None,
        "client_random": rfc8448.CLIENT_RANDOM.hex(),
        "decrypted": True,
        "resumed": False,
        "early_data": False,
        "hello_retry": False,
        "key_updates": 0,
        "records": [4, 5],
    }


@settings(max_examples=300)
@given(st.lists(st.tuples(st.integers(0, 1), st.binary(max_size=200)), max_size=12), st.randoms())
def test_fuzz_random_bytes(flights: list[tuple[int, bytes]], rnd: random.Random) -> None:
    _, events = run(keylog(), flights, chunk=rnd)
    assert all(isinstance(e, (TlsPlaintext, TlsAlert, Diagnostic)) for e in events)


@settings(max_examples=300)
@given(
    st.integers(0, len(TRACE) - 1),
    st.integers(0, 2000),
    st.binary(min_size=1, max_size=3),
    st.randoms(),
)
def test_fuzz_damaged_trace(index: int, offset: int, junk: bytes, rnd: random.Random) -> None:
    """The real trace with bytes overwritten somewhere: never an exception."""
    flights = list(TRACE)
    direction, data = flights[index]
    offset %= len(data)
    flights[index] = (direction, data[:offset] + junk + data[offset + len(junk) :])
    _, events = run(keylog(), flights, chunk=rnd)
    assert all(isinstance(e, (TlsPlaintext, TlsAlert, Diagnostic)) for e in events)
    _ = normalize(events)


@settings(max_examples=100)
@given(
    st.sampled_from(["tls13", "tls13-early", "tls13-hrr", "tls12", "tls12-resumed"]),
    st.integers(0, 1 << 32),
)
def test_fuzz_synthetic_sessions_random_chunks(kind: str, seed: int) -> None:
    session = {
        "tls13": lambda: tls13_session(0x1302, key_update=True),
        "tls13-early": lambda: tls13_session(early="accepted"),
        "tls13-hrr": lambda: tls13_session(hello_retry=True),
        "tls12": lambda: tls12_session(0xCCA9),
        "tls12-resumed": lambda: tls12_session(resumed=True),
    }[kind]()
    _, events = run(keylog(session.keylog), session.flights, chunk=random.Random(seed))
    assert plaintext(events) == session.plaintext
    assert diagnostics(events) == []
