"""Decryption after a capture gap: real captures with bytes cut out of one direction.

Each case cuts a span of one direction's TCP bytes (a gap inside one record, one covering
several records and a header, one straddling a boundary, gaps in the handshake) and checks
which records come back, the TlsGap sizes, the diagnostics, and that every recovered
plaintext byte equals the clean run's at the same plaintext offset.
"""

from __future__ import annotations

import random
from functools import cache

import pytest

from agentshark.errors import Diagnostic
from agentshark.net.events import StreamData, StreamEnded, StreamGap, TcpEvent
from agentshark.tls import KeyLog, TlsConnection, TlsEvent, TlsGap, TlsPlaintext, resync
from tests.helpers import CAPTURES
from tests.tls.capture import Capture, Decrypted, decrypt, read_capture
from tests.tls.feeding import diagnostics, gaps, plaintext
from tests.tls.holes import assert_faithful, cut, records
from tests.tls.synth import tls12_session, tls13_session

TLS12_GCM = 5 + 8 + 16  # header, explicit nonce, tag
TLS13 = 5 + 1 + 16  # header, inner content type, tag


@cache
def capture(name: str) -> tuple[Capture, KeyLog]:
    cap = read_capture(CAPTURES / name / "capture.pcap")
    keylog = KeyLog()
    assert keylog.add_text((CAPTURES / name / "keylog.txt").read_bytes(), "keylog.txt") == []
    return cap, keylog


def run(name: str, direction: int, start: int, stop: int) -> tuple[Decrypted, Decrypted]:
    """(clean, with bytes [start, stop) of ``direction`` of c1 cut out)."""
    cap, keylog = capture(name)
    events: list[TcpEvent] = cap.events["c1"]
    return decrypt(events, keylog, "c1"), decrypt(cut(events, direction, start, stop), keylog)


def app_records(name: str, direction: int) -> list[tuple[int, int]]:
    """(offset, size) of the direction's records after its first application data record."""
    cap, _ = capture(name)
    recs = records(cap.events["c1"], direction)
    return [(offset, size) for ctype, offset, size in recs if ctype == 23]


def codes(dec: Decrypted) -> list[str]:
    return [d.code for d in dec.diagnostics]


# -- TLS 1.2 AES-256-GCM: sizes are exact ------------------------------------------------


def test_tls12_gap_inside_one_record_costs_that_record() -> None:
    recs = app_records("https_tls12_h1", 1)
    (offset, size), (after, _) = recs[2], recs[3]
    clean, cut_run = run("https_tls12_h1", 1, offset + 20, offset + size - 20)
    assert codes(cut_run) == ["tls.resynced"]
    (diag,) = cut_run.diagnostics
    assert f"{size - 40} bytes of the server's stream were not captured" in diag.message
    assert f"1 record lost ({size} bytes of ciphertext" in diag.message
    assert f"holding {size - TLS12_GCM} bytes of plaintext" in diag.message  # exact
    assert f"resumed at TCP offset {after} with record sequence number 4" in diag.message
    assert [g.size for g in cut_run.gaps] == [size - TLS12_GCM]
    assert assert_faithful(cut_run.events, bytes(clean.plaintext[1]), 1) == size - TLS12_GCM
    assert cut_run.plaintext[0] == clean.plaintext[0]  # the other direction is untouched


def test_tls12_gap_over_several_records_and_a_header() -> None:
    recs = app_records("https_tls12_h1", 1)
    first, third = recs[2], recs[4]
    clean, cut_run = run("https_tls12_h1", 1, first[0] + 10, third[0] + 3)  # cuts a header
    lost = sum(size for _, size in recs[2:5])
    (diag,) = cut_run.diagnostics
    assert diag.code == "tls.resynced" and "3 records lost" in diag.message
    assert f"resumed at TCP offset {recs[5][0]} with record sequence number 6" in diag.message
    assert [g.size for g in cut_run.gaps] == [lost - 3 * TLS12_GCM]
    assert assert_faithful(cut_run.events, bytes(clean.plaintext[1]), 1) == lost - 3 * TLS12_GCM


def test_tls12_gap_straddling_a_record_boundary() -> None:
    recs = app_records("https_tls12_h1", 1)
    (_a, a_size), (b, b_size) = recs[5], recs[6]
    clean, cut_run = run("https_tls12_h1", 1, b - 10, b + 10)
    (diag,) = cut_run.diagnostics
    assert "2 records lost" in diag.message and f"{a_size + b_size} bytes of ciphertext" in (
        diag.message
    )
    assert assert_faithful(cut_run.events, bytes(clean.plaintext[1]), 1) == (
        a_size + b_size - 2 * TLS12_GCM
    )


def test_tls12_gap_inside_a_full_size_record_of_a_large_body() -> None:
    recs = app_records("https_tls12_h1", 1)
    offset, _size = next(r for r in recs if r[1] > 16000)
    clean, cut_run = run("https_tls12_h1", 1, offset + 100, offset + 16000)
    assert [g.size for g in cut_run.gaps] == [16384]
    assert assert_faithful(cut_run.events, bytes(clean.plaintext[1]), 1) == 16384
    assert codes(cut_run) == ["tls.resynced"]


def test_tls12_client_change_cipher_spec_and_finished_lost() -> None:
    # The key block is derived all the same; the first record found is the client's first
    # application data (sequence number 1, after the lost Finished): no plaintext is lost.
    cap, _ = capture("https_tls12_h1")
    ccs = next(offset for ctype, offset, _ in records(cap.events["c1"], 0) if ctype == 20)
    first_data = app_records("https_tls12_h1", 0)[0][0]
    clean, cut_run = run("https_tls12_h1", 0, ccs, first_data)
    (diag,) = cut_run.diagnostics
    assert diag.code == "tls.resynced" and "after a lost ChangeCipherSpec" in diag.message
    assert "holding 0 bytes of plaintext" in diag.message and "sequence number 1" in diag.message
    assert cut_run.gaps == [] and cut_run.plaintext == clean.plaintext


def test_tls12_server_hello_lost() -> None:
    _clean, cut_run = run("https_tls12_h1", 1, 0, 1293)
    assert codes(cut_run) == ["tls.gap", "tls.unexpected_record"]
    assert "the ServerHello was not read, and this TLS 1.2 session's keys are derived from " in (
        cut_run.diagnostics[0].message
    )
    assert cut_run.plaintext == [bytearray(), bytearray()]  # nothing decrypts, nothing raises


def test_tls12_client_hello_lost() -> None:
    clean, cut_run = run("https_tls12_h1", 0, 0, 177)
    assert codes(cut_run) == ["tls.keys_by_trial", "tls.resynced"]  # see test_trial
    assert cut_run.plaintext == clean.plaintext


def test_tls12_stream_ending_during_the_search() -> None:
    recs = app_records("https_tls12_h1", 0)
    offset, size = recs[-1]
    _clean, cut_run = run("https_tls12_h1", 0, offset + 10, offset + size)  # the last record
    assert codes(cut_run) == ["tls.gap_unresolved"]
    assert "the stream ended right after" in cut_run.diagnostics[0].message
    assert [g.size for g in cut_run.gaps] == [size - TLS12_GCM]  # a bound, here exact


# -- TLS 1.3 AES-256-GCM ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["https_tls13_h2", "llm_sdk_openai", "llm_sdk_anthropic"])
def test_tls13_gap_inside_one_record(name: str) -> None:
    recs = app_records(name, 1)
    index = len(recs) // 2
    (offset, size), (after, _) = recs[index], recs[index + 1]
    clean, cut_run = run(name, 1, offset + 8, offset + size - 8)
    (diag,) = cut_run.diagnostics
    assert diag.code == "tls.resynced" and "1 record lost" in diag.message
    assert f"holding at most {size - TLS13} bytes of plaintext" in diag.message  # padding
    assert f"resumed at TCP offset {after}" in diag.message
    assert assert_faithful(cut_run.events, bytes(clean.plaintext[1]), 1) == size - TLS13


def test_tls13_gap_over_several_records_and_a_header() -> None:
    recs = app_records("https_tls13_h2", 1)
    start, stop = recs[10][0] + 30, recs[13][0] + 2
    clean, cut_run = run("https_tls13_h2", 1, start, stop)
    lost = sum(size for _, size in recs[10:14])
    assert "4 records lost" in cut_run.diagnostics[0].message
    assert assert_faithful(cut_run.events, bytes(clean.plaintext[1]), 1) == lost - 4 * TLS13


def test_tls13_client_finished_lost() -> None:
    # The compatibility ChangeCipherSpec and the Finished go: the client's records are
    # found under its application traffic keys from sequence number 0, nothing is lost.
    recs = app_records("llm_sdk_openai", 0)
    clean, cut_run = run("llm_sdk_openai", 0, recs[0][0] - 6, recs[1][0])
    (diag,) = cut_run.diagnostics
    assert diag.code == "tls.resynced" and "after a lost Finished" in diag.message
    assert "sequence number 0" in diag.message and "holding 0 bytes" in diag.message
    assert cut_run.gaps == [] and cut_run.plaintext == clean.plaintext


def test_tls13_server_certificate_to_finished_lost() -> None:
    # EncryptedExtensions (the ALPN) is read; Certificate, CertificateVerify and Finished
    # are lost; the server's application records decrypt under its application keys.
    recs = app_records("https_tls13_h2", 1)
    clean, cut_run = run("https_tls13_h2", 1, recs[1][0] + 1, recs[4][0])
    assert codes(cut_run) == ["tls.resynced"]
    assert "after a lost Finished" in cut_run.diagnostics[0].message
    assert cut_run.tls.info.alpn == "h2"
    assert cut_run.gaps == [] and cut_run.plaintext == clean.plaintext


def test_tls13_lost_post_handshake_message_is_counted_as_a_bound() -> None:
    # TLS 1.3 hides content types: a lost NewSessionTicket (the server's second one, before
    # its response) is reported as up to its size of lost plaintext, said to be a bound.
    recs = app_records("llm_sdk_openai", 1)
    (offset, size), (after, _) = recs[5], recs[6]
    clean, cut_run = run("llm_sdk_openai", 1, offset + 3, offset + 60)
    assert "holding at most" in cut_run.diagnostics[0].message
    assert [g.size for g in cut_run.gaps] == [size - TLS13]
    assert bytes(cut_run.plaintext[1]) == bytes(clean.plaintext[1])  # nothing really lost
    assert after == recs[6][0]


def test_tls13_two_gaps_in_one_direction_two_diagnostics() -> None:
    cap, keylog = capture("llm_sdk_openai")
    recs = app_records("llm_sdk_openai", 1)
    events = cut(cap.events["c1"], 1, recs[8][0] + 5, recs[9][0])
    events = cut(events, 1, recs[20][0] + 5, recs[21][0])
    clean, cut_run = decrypt(cap.events["c1"], keylog), decrypt(events, keylog)
    assert codes(cut_run) == ["tls.resynced", "tls.resynced"]
    expected = recs[8][1] + recs[20][1] - 2 * TLS13
    assert assert_faithful(cut_run.events, bytes(clean.plaintext[1]), 1) == expected


# -- synthetic sessions: key changes in the gap, other suites, limits -------------------------


def feed_with_gap(
    keylog_text: bytes, flights: list[tuple[int, bytes]], lost: set[int]
) -> tuple[TlsConnection, list[TlsEvent]]:
    keylog = KeyLog()
    assert keylog.add_text(keylog_text, "keys.log") == []
    tls = TlsConnection(keylog, location="t")
    events: list[TlsEvent] = []
    for i, (direction, data) in enumerate(flights):
        if i in lost:
            events += tls.gap(direction, len(data), float(i))
        else:
            events += tls.feed(direction, data, float(i))
    return tls, events + tls.end(0, 99.0) + tls.end(1, 99.0)


def test_tls13_key_update_lost_in_the_gap() -> None:
    s = tls13_session(key_update=True)
    update = next(
        i for i, (d, data) in enumerate(s.flights) if d == 0 and len(data) == 5 + 5 + 1 + 16
    )
    tls, events = feed_with_gap(s.keylog, s.flights, {update})
    (diag,) = diagnostics(events)
    assert diag.code == "tls.resynced" and "after a lost KeyUpdate" in diag.message
    assert plaintext(events)[0] == s.plaintext[0]  # the KeyUpdate carried no data
    assert tls.info.key_updates == 2  # the lost one and the server's
    assert plaintext(events)[1] == s.plaintext[1]


def test_tls13_handshake_message_cut_across_records() -> None:
    # The server's Certificate spans three records: losing the middle one leaves the third
    # starting inside the message. Handshake parsing is given up for that record, and the
    # Finished that follows the cut is caught by the application keys.
    s = tls13_session()
    flight = s.flights[1][1]
    lost_from = flight.index(b"\x17\x03\x03")
    lost_from = flight.index(b"\x17\x03\x03", lost_from + 1)  # the second protected record
    lost_to = flight.index(b"\x17\x03\x03", lost_from + 1)
    flights = [
        *s.flights[:1],
        (1, flight[:lost_from]),
        (1, flight[lost_from:lost_to]),
        (1, flight[lost_to:]),
        *s.flights[2:],
    ]
    tls, events = feed_with_gap(s.keylog, flights, {2})
    assert [d.code for d in diagnostics(events)] == ["tls.resynced", "tls.finished_unseen"]
    assert "holding 0 bytes of plaintext" in diagnostics(events)[0].message  # handshake keys
    assert tls.info.alpn == "h2"  # EncryptedExtensions came before the cut
    assert plaintext(events) == s.plaintext
    assert not any(isinstance(e, TlsGap) for e in events)


@pytest.mark.parametrize("suite", [0xC02F, 0xCCA8])  # AES-128-GCM, ChaCha20-Poly1305
def test_tls12_suites_resync(suite: int) -> None:
    s = tls12_session(suite)
    requests = next(i for i, (d, data) in enumerate(s.flights) if d == 0 and data[0] == 23)
    two = s.flights[requests][1]
    first = 5 + int.from_bytes(two[3:5], "big")
    flights = [
        *s.flights[:requests],
        (0, two[:first]),
        (0, two[first:]),
        *s.flights[requests + 1 :],
    ]
    _tls, events = feed_with_gap(s.keylog, flights, {requests})
    (diag,) = diagnostics(events)
    assert diag.code == "tls.resynced" and "1 record lost" in diag.message
    assert [g.size for g in gaps(events)] == [30]  # REQUEST[:30], exactly
    assert plaintext(events) == (s.plaintext[0][30:], s.plaintext[1])


def gap_then(data: bytes, monkeypatch: pytest.MonkeyPatch, **limits: int) -> list[TlsEvent]:
    for name, value in limits.items():
        monkeypatch.setattr(resync, name, value)
    s = tls12_session()
    events: list[TlsEvent] = []
    keylog = KeyLog()
    keylog.add_text(s.keylog, "keys.log")
    tls = TlsConnection(keylog, location="t")
    for direction, flight in s.flights[:4]:
        events += tls.feed(direction, flight, 1.0)
    events += tls.feed(1, s.flights[5][1], 2.0)  # the response: plaintext in direction 1
    events += tls.gap(1, 1000, 3.0)
    for i in range(0, len(data), 4096):
        events += tls.feed(1, data[i : i + 4096], 4.0)
    return events


def test_search_gives_up_after_the_byte_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    noise = random.Random(5).randbytes(300_000)
    events = gap_then(noise, monkeypatch, MAX_SCAN=200_000)
    failed = [d for d in diagnostics(events) if d.code == "tls.resync_failed"]
    assert len(failed) == 1 and "bytes after the gap decrypted" in failed[0].message
    assert "the rest of the server's stream is not decrypted" in failed[0].message
    assert [e.direction for e in gaps(events)] == [1]
    assert plaintext(events)[1] == tls12_session().plaintext[1]  # the one before the gap
    tls_stopped = [d for d in diagnostics(events) if d.code != "tls.resync_failed"]
    assert tls_stopped == []


def test_search_gives_up_after_the_tag_check_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # Chained plausible headers that are not records: every one costs tag checks.
    fake = b"".join(b"\x17\x03\x03\x00\x40" + random.Random(i).randbytes(64) for i in range(300))
    events = gap_then(fake, monkeypatch, MAX_WORK=2000)
    failed = [d for d in diagnostics(events) if d.code == "tls.resync_failed"]
    assert len(failed) == 1 and "tag checks after the gap found no record" in failed[0].message


def test_search_survives_byte_by_byte_feeding() -> None:
    recs = app_records("llm_sdk_openai", 1)
    cap, keylog = capture("llm_sdk_openai")
    index = len(recs) // 2  # in the response (the first records are handshake messages)
    offset, size = recs[index]
    events = cut(cap.events["c1"], 1, offset + 3, offset + size - 3)
    tls = TlsConnection(keylog)
    out: list[TlsEvent] = []
    for ev in events:
        if isinstance(ev, StreamData):
            for i in range(len(ev.data)):
                out += tls.feed(ev.direction, ev.data[i : i + 1], ev.ts)
        elif isinstance(ev, StreamGap):
            out += tls.gap(ev.direction, ev.size, ev.ts)
        elif isinstance(ev, StreamEnded):
            out += tls.end(ev.direction, ev.ts)
    clean = decrypt(cap.events["c1"], keylog)
    assert [d.code for d in out if isinstance(d, Diagnostic)] == ["tls.resynced"]
    assert assert_faithful(out, bytes(clean.plaintext[1]), 1) == recs[index][1] - TLS13
    assert all(isinstance(e, TlsPlaintext | TlsGap | Diagnostic) for e in out)
