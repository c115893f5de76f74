"""A capture that lost a hello: the keys are found by trial decryption (``tls.trial``).

Real captures with their key logs, with exactly the TCP segment holding the ClientHello or
the ServerHello left out: the plaintext of every connection equals the clean run's (TLS 1.3
both cases, TLS 1.2 the lost ClientHello), or nothing decrypts and a diagnostic says why
(TLS 1.2 lost ServerHello, a key log of other sessions, damaged secrets, the bound).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentshark.tls import KeyLog, TlsPlaintext
from agentshark.tls.trial import MAX_CANDIDATES
from tests.helpers import CAPTURES, ROOT
from tests.tls.capture import Decrypted, decrypt, read_capture
from tests.tls.holes import cut, records
from tests.tls.pcapcut import hello_packets, without

OWN = ROOT / "tests" / "data" / "captures"
TLS13 = [
    OWN / "tls13_chacha20_h1",
    OWN / "tls13_keyupdate",
    OWN / "tls13_hrr",
    OWN / "h2_rst_stream",
    OWN / "mcp_streamable_tls",
    CAPTURES / "https_tls13_h2",
    CAPTURES / "llm_sdk_openai",
]
TLS12 = [
    OWN / "tls12_aes256gcm_h1",
    OWN / "tls12_chacha20_h1",
    OWN / "tls12_resumption",
    CAPTURES / "https_tls12_h1",
]
CLIENT_HELLO, SERVER_HELLO = 1, 2


def keys_of(folder: Path) -> bytes:
    name = "keys.log" if (folder / "keys.log").exists() else "keylog.txt"
    return (folder / name).read_bytes()


def keylog(*texts: bytes) -> KeyLog:
    k = KeyLog()
    for text in texts:
        assert k.add_text(text, "keys.log") == []
    return k


def run(pcap: Path, k: KeyLog) -> dict[str, Decrypted]:
    return {c: decrypt(events, k, c) for c, events in read_capture(pcap).events.items()}


def dropped(folder: Path, kind: int, tmp: Path, nth: int = 0) -> Path:
    pcap = folder / "capture.pcap"
    return without(pcap, hello_packets(pcap, kind)[nth], tmp / "cut.pcap")


def codes(dec: Decrypted) -> list[str]:
    return [d.code for d in dec.diagnostics]


def _name(folder: Path) -> str:
    return folder.name


@pytest.mark.parametrize("folder", TLS13 + TLS12, ids=_name)
def test_lost_client_hello_decrypts_as_the_clean_run(folder: Path, tmp_path: Path) -> None:
    k = keylog(keys_of(folder))
    clean = run(folder / "capture.pcap", k)
    got = run(dropped(folder, CLIENT_HELLO, tmp_path), k)
    assert got.keys() == clean.keys()
    trial = [c for c, dec in got.items() if "tls.keys_by_trial" in codes(dec)]
    assert len(trial) == 1  # the connection that lost its ClientHello
    for c, dec in got.items():
        assert dec.plaintext == clean[c].plaintext, c
        assert all(dec.plaintext), c
    dec = got[trial[0]]
    assert dec.tls.info.client_random == clean[trial[0]].tls.info.client_random
    assert dec.tls.info.cipher_suite == clean[trial[0]].tls.info.cipher_suite
    (note,) = [d for d in dec.diagnostics if d.code == "tls.keys_by_trial"]
    assert note.location == trial[0]  # the connection, not a record
    assert "ClientHello of this connection was not captured" in note.message
    assert dec.tls.info.sni is None and dec.tls.info.alpn_offered == []  # lost: not invented


@pytest.mark.parametrize("folder", TLS13, ids=_name)
def test_lost_server_hello_tls13_finds_the_suite(folder: Path, tmp_path: Path) -> None:
    k = keylog(keys_of(folder))
    clean = run(folder / "capture.pcap", k)
    got = run(dropped(folder, SERVER_HELLO, tmp_path), k)
    (c,) = [c for c, dec in got.items() if "tls.suite_by_trial" in codes(dec)]
    for name, dec in got.items():
        assert dec.plaintext == clean[name].plaintext, name
    assert got[c].tls.info.cipher_suite == clean[c].tls.info.cipher_suite
    assert got[c].tls.info.version == "TLS 1.3"


@pytest.mark.parametrize("folder", TLS12, ids=_name)
def test_lost_server_hello_tls12_says_it_cannot_recover(folder: Path, tmp_path: Path) -> None:
    k = keylog(keys_of(folder))
    got = run(dropped(folder, SERVER_HELLO, tmp_path), k)
    (c,) = [c for c, dec in got.items() if "tls.gap" in codes(dec)]
    assert got[c].plaintext == [bytearray(), bytearray()]
    (gap,) = [d for d in got[c].diagnostics if d.code == "tls.gap"]
    assert "this TLS 1.2 session's keys are derived from the server random" in gap.message
    assert "cannot be recovered" in gap.message


def test_a_key_log_of_other_sessions_gives_no_plaintext(tmp_path: Path) -> None:
    folder = OWN / "tls13_chacha20_h1"
    others = [keys_of(f) for f in TLS13 + TLS12 if f != folder]
    cut_pcap = dropped(folder, CLIENT_HELLO, tmp_path)
    (dec,) = run(cut_pcap, keylog(*others)).values()  # no secret of the suite's hash length
    assert dec.plaintext == [bytearray(), bytearray()]
    assert codes(dec) == ["tls.no_handshake", "tls.gap"]
    fakes = _fakes(50, b"SERVER_HANDSHAKE_TRAFFIC_SECRET")
    (dec,) = run(cut_pcap, keylog(*others, fakes)).values()
    assert dec.plaintext == [bytearray(), bytearray()]
    assert codes(dec) == ["tls.trial_failed", "tls.gap"]
    assert "decrypts under none of the" in dec.diagnostics[0].message
    assert not dec.tls.info.decrypted and dec.tls.info.client_random is None


@pytest.mark.parametrize("folder", [OWN / "tls13_chacha20_h1", OWN / "tls12_aes256gcm_h1"])
def test_damaged_secrets_give_no_plaintext(folder: Path, tmp_path: Path) -> None:
    lines = []
    for line in keys_of(folder).splitlines():
        if len(line.split()) != 3:
            continue
        label, random, secret = line.split()
        flipped = b"%x" % (int(secret[-1:], 16) ^ 1)  # one bit of each secret
        lines.append(b" ".join((label, random, secret[:-1] + flipped)))
    (dec,) = run(dropped(folder, CLIENT_HELLO, tmp_path), keylog(b"\n".join(lines))).values()
    assert dec.plaintext == [bytearray(), bytearray()]
    assert "tls.trial_failed" in codes(dec)


def _fakes(count: int, label: bytes) -> bytes:
    return b"".join(
        b"%s %s %s\n" % (label, os.urandom(32).hex().encode(), os.urandom(32).hex().encode())
        for _ in range(count)
    )


def test_the_bound_on_candidates(tmp_path: Path) -> None:
    folder = OWN / "tls13_chacha20_h1"
    cut_pcap = dropped(folder, CLIENT_HELLO, tmp_path)
    fakes = _fakes(MAX_CANDIDATES, b"SERVER_HANDSHAKE_TRAFFIC_SECRET")
    # the session is the oldest of the key log: beyond the bound, not tried
    (dec,) = run(cut_pcap, keylog(keys_of(folder), fakes)).values()
    assert codes(dec) == ["tls.trial_bound", "tls.trial_failed", "tls.gap"]
    assert f"only the newest {MAX_CANDIDATES} were tried" in dec.diagnostics[0].message
    assert dec.plaintext == [bytearray(), bytearray()]
    # the newest: found, and the bound is still said
    (dec,) = run(cut_pcap, keylog(fakes, keys_of(folder))).values()
    assert codes(dec)[:2] == ["tls.trial_bound", "tls.keys_by_trial"]
    (clean,) = run(folder / "capture.pcap", keylog(keys_of(folder))).values()
    assert dec.plaintext == clean.plaintext


def test_lost_server_stream_the_client_finds_the_suite() -> None:
    # The whole server stream is lost: the client's first protected record (its Finished)
    # comes with the suite unknown and is tried under each offered suite.
    folder = OWN / "tls13_chacha20_h1"
    k = keylog(keys_of(folder))
    events = read_capture(folder / "capture.pcap").events["c1"]
    clean = decrypt(events, k)
    size = sum(r[2] for r in records(events, 1))
    dec = decrypt(cut(events, 1, 0, size), k, "c1")
    assert "tls.suite_by_trial" in codes(dec)
    assert dec.plaintext[0] == clean.plaintext[0] and dec.plaintext[1] == b""


def test_two_lost_key_updates() -> None:
    # The client's stream of tls13_keyupdate: KeyUpdate, a data record, KeyUpdate, all lost;
    # the next record decrypts under the second generation of its traffic secret.
    folder = OWN / "tls13_keyupdate"
    k = keylog(keys_of(folder))
    events = read_capture(folder / "capture.pcap").events["c1"]
    clean = decrypt(events, k)
    recs = records(events, 0)
    updates = [offset for ctype, offset, size in recs if size == 27 and offset > 300]
    assert len(updates) == 2, recs
    start, stop = updates[0], updates[1] + 27
    dec = decrypt(cut(events, 0, start, stop), k, "c1")
    (note,) = [d for d in dec.diagnostics if d.code == "tls.resynced"]
    assert "after a lost KeyUpdate" in note.message
    assert dec.tls.info.key_updates == clean.tls.info.key_updates == 3
    (data_record,) = [size for _, offset, size in recs if start < offset < updates[1]]
    lost = data_record - 22  # its content (the KeyUpdates carry no application data)
    (gap,) = dec.gaps
    assert gap.size >= lost  # a bound in TLS 1.3
    at = dec.events.index(gap)
    before = b"".join(
        e.data for e in dec.events[:at] if isinstance(e, TlsPlaintext) and e.direction == 0
    )
    after = b"".join(
        e.data for e in dec.events[at:] if isinstance(e, TlsPlaintext) and e.direction == 0
    )
    want = bytes(clean.plaintext[0])
    assert want.startswith(before) and want[len(before) + lost :] == after and after
    assert dec.plaintext[1] == clean.plaintext[1]


@pytest.mark.parametrize("nth", [0, 1])
def test_lost_client_hello_tls12_resumption_is_told_by_the_server(nth: int, tmp_path: Path) -> None:
    # RFC 5246 §7.3: a full handshake has a ServerHelloDone, an abbreviated one does not
    folder = OWN / "tls12_resumption"
    k = keylog(keys_of(folder))
    clean = run(folder / "capture.pcap", k)
    got = run(dropped(folder, CLIENT_HELLO, tmp_path, nth), k)
    (c,) = [c for c, dec in got.items() if "tls.keys_by_trial" in codes(dec)]
    assert got[c].tls.info.resumed is clean[c].tls.info.resumed is (nth == 1)
    assert got[c].tls.info.to_json()["unknown"] == ["alpn_offered", "sni"]
    assert "unknown" not in clean[c].tls.info.to_json()
    assert got[c].plaintext == clean[c].plaintext
