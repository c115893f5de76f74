"""Real captures: the loopback captures with key logs (tests/data/captures), the corpus pcapng
files with embedded keys, and the shared TLS captures, read without keys, with their
``keylog.txt``, and as ``capture.dsb.pcapng`` (the key log embedded in the file)."""

from __future__ import annotations

import json
import random
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from agentshark.net.events import StreamData
from agentshark.tls import KeyLog, TlsConnection, TlsEvent
from tests.helpers import CAPTURES, CORPUS, ROOT, own_tls_captures
from tests.tls.capture import Capture, Decrypted, decrypt, read_capture
from tests.tls.feeding import normalize

LOOPBACK = ROOT / "tests" / "data" / "captures"
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
OPENSSL_NAMES = {
    "ECDHE-RSA-AES256-GCM-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
}


@cache
def capture(path: Path) -> Capture:
    return read_capture(path)


def keylog_for(cap: Capture, keys: Path | None = None) -> KeyLog:
    keylog = KeyLog()
    if keys is not None:
        assert keys.exists(), f"{keys} is missing"
        assert keylog.add_text(keys.read_bytes(), keys.name) == []
    for i, text in enumerate(cap.secrets, 1):
        assert keylog.add_text(text, f"secrets block {i}") == []
    return keylog


def decrypt_all(cap: Capture, keylog: KeyLog) -> dict[str, Decrypted]:
    return {cid: decrypt(events, keylog, cid) for cid, events in cap.events.items()}


def truth_connections(truth: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(version, IANA cipher suite, ALPN) per TLS connection, as the client saw them."""
    if "connections" in truth:
        conns = truth["connections"]
        return [
            (c["tls_version"], OPENSSL_NAMES.get(c["cipher"], c["cipher"]), c["alpn"])
            for c in conns
        ]
    trace = truth["curl_trace"]
    (alpn,) = set(trace["alpn_accepted"])
    return [(c["version"], c["cipher"], alpn) for c in trace["tls_connections"]]


LOOPBACK_TLS = own_tls_captures() if LOOPBACK.exists() else []


@pytest.mark.parametrize("name", LOOPBACK_TLS)
def test_loopback_capture_decrypts(name: str) -> None:
    folder = LOOPBACK / name
    truth = json.loads((folder / "truth.json").read_text())
    cap = capture(folder / "capture.pcap")
    results = decrypt_all(cap, keylog_for(cap, folder / "keys.log"))
    seen = []
    for cid, result in results.items():
        info = result.tls.info
        assert result.diagnostics == [], cid
        assert info.decrypted, cid
        seen.append(
            (f"TLSv{info.version[4:]}" if info.version else None, info.cipher_suite, info.alpn)
        )
        client, server = (bytes(p) for p in result.plaintext)
        if info.alpn == "h2":
            assert client.startswith(H2_PREFACE)
        else:
            assert client.split(b" ", 1)[0] in (b"GET", b"POST")
            assert server.startswith(b"HTTP/1.1 200 ")
    assert seen == truth_connections(truth)
    if all(r["http_version"] == "HTTP/1.1" for r in truth["requests"]):
        client_text = b"".join(bytes(r.plaintext[0]) for r in results.values())
        lines = re.findall(rb"(?:GET|POST) \S+ HTTP/1\.1\r\n", client_text)
        assert lines == [
            f"{r['method']} {r['path']} HTTP/1.1\r\n".encode() for r in truth["requests"]
        ]


def test_loopback_special_cases() -> None:
    if not LOOPBACK_TLS:
        pytest.skip("tests/data/captures is not there")

    def infos(name: str) -> list[Any]:
        cap = capture(LOOPBACK / name / "capture.pcap")
        return [
            r.tls.info
            for r in decrypt_all(cap, keylog_for(cap, LOOPBACK / name / "keys.log")).values()
        ]

    (keyupdate,) = infos("tls13_keyupdate")
    assert keyupdate.key_updates == 3  # two by the client, one by the server
    (hrr,) = infos("tls13_hrr")
    assert hrr.hello_retry and hrr.version == "TLS 1.3"
    assert [i.resumed for i in infos("tls12_resumption")] == [False, True]
    (chacha,) = infos("tls13_chacha20_h1")
    assert chacha.cipher_suite == "TLS_CHACHA20_POLY1305_SHA256"


@pytest.mark.parametrize(("name", "cid"), [("tls13_keyupdate", "c1"), ("tls12_resumption", "c2")])
def test_loopback_capture_fed_byte_by_byte_and_in_chunks(name: str, cid: str) -> None:
    if name not in LOOPBACK_TLS:
        pytest.skip(f"tests/data/captures/{name} is not there")
    cap = capture(LOOPBACK / name / "capture.pcap")
    events = cap.events[cid]
    whole = decrypt(events, keylog_for(cap, LOOPBACK / name / "keys.log"))
    for chunking in (1, random.Random(7)):
        tls = TlsConnection(keylog_for(cap, LOOPBACK / name / "keys.log"))
        got: list[TlsEvent] = []
        for ev in events:
            if isinstance(ev, StreamData):
                pos = 0
                while pos < len(ev.data):
                    step = chunking if isinstance(chunking, int) else chunking.randint(1, 2000)
                    got += tls.feed(ev.direction, ev.data[pos : pos + step], ev.ts)
                    pos += step
        assert normalize(got) == normalize(whole.events)


@pytest.mark.parametrize("name", LOOPBACK_TLS)
def test_loopback_capture_without_keys(name: str) -> None:
    cap = capture(LOOPBACK / name / "capture.pcap")
    for cid, result in decrypt_all(cap, KeyLog()).items():
        assert [d.code for d in result.diagnostics] == ["tls.no_keys"], cid
        assert result.plaintext == [b"", b""] and not result.tls.info.decrypted


CORPUS_WITH_KEYS = [
    "FoxIO-LLC__ja4/pcap/http2-with-cookies.pcapng",
    "mikekap__pcap2har/tests/resources/http2-dump.pcap",  # pcapng despite its name
    "mikekap__pcap2har/tests/resources/firefox-tls13-facebook-dsb.pcapng",
    # QUIC plus one TLS-over-TCP connection; QUIC (UDP) is not read by this stage
    "FoxIO-LLC__ja4/pcap/chrome-cloudflare-quic-with-secrets.pcapng",
]


@pytest.mark.parametrize("name", CORPUS_WITH_KEYS)
def test_corpus_pcapng_with_decryption_secrets_block(name: str) -> None:
    cap = capture(CORPUS / name)
    assert cap.secrets, "the file should carry a TLS key log block"
    results = decrypt_all(cap, keylog_for(cap))
    assert len(results) == 1  # every other flow in these files is UDP (QUIC, DNS)
    (result,) = results.values()
    info = result.tls.info
    assert result.diagnostics == []
    assert (info.version, info.alpn, info.decrypted) == ("TLS 1.3", "h2", True)
    assert info.alpn_offered == ["h2", "http/1.1"]
    assert bytes(result.plaintext[0]).startswith(H2_PREFACE)
    assert len(result.plaintext[1]) > 1000


def test_corpus_tls_without_keys() -> None:
    """Captures with TLS and no keys: every decision is a diagnostic with its reason."""
    cap = capture(CORPUS / "FoxIO-LLC__ja4/pcap/tls-handshake.pcapng")
    reasons = set()
    for result in decrypt_all(cap, KeyLog()).values():
        codes = [d.code for d in result.diagnostics if d.code != "tls.truncated_record"]
        if result.tls.info.version is not None:
            assert codes in (["tls.no_keys"], []), codes  # [] when nothing was encrypted
        reasons.update(codes)
        assert result.plaintext == [b"", b""]
    assert "tls.no_keys" in reasons
    cap = capture(CORPUS / "FoxIO-LLC__ja4/pcap/https3-301-get.pcap")
    (result,) = [r for r in decrypt_all(cap, KeyLog()).values() if r.tls.info.version]
    assert [d.code for d in result.diagnostics] == ["tls.unsupported"]
    assert "TLS 1.0" in result.diagnostics[0].message


SHARED_TLS = ["https_tls13_h2", "https_tls12_h1", "llm_sdk_openai", "llm_sdk_anthropic"]


@pytest.mark.parametrize("name", SHARED_TLS)
def test_shared_capture_without_keys(name: str) -> None:
    truth = json.loads((CAPTURES / name / "truth.json").read_text())
    cap = capture(CAPTURES / name / "capture.pcap")
    results = decrypt_all(cap, KeyLog())
    for result in results.values():
        (diag,) = result.diagnostics
        assert diag.code == "tls.no_keys" and result.tls.info.client_random
        assert result.tls.info.client_random[:16] in diag.message
        assert result.plaintext == [b"", b""] and sum(result.tls.info.records) > 5
    versions = {r.tls.info.version for r in results.values()}
    expected = {r["tls_version"] for r in truth.get("requests", [])} or {"TLSv1.3"}
    assert {f"TLSv{v[4:]}" for v in versions if v} == expected


SHARED_FORMS = {"keylog": ("capture.pcap", "keylog.txt"), "dsb": ("capture.dsb.pcapng", None)}


@pytest.mark.parametrize("form", sorted(SHARED_FORMS))
@pytest.mark.parametrize("name", SHARED_TLS)
def test_shared_capture_with_keys(name: str, form: str) -> None:
    """Every connection decrypts, from its first record to its last, under the version and
    ALPN the client recorded; the plaintext starts as HTTP/2 or HTTP/1.1 does."""
    pcap, keys = SHARED_FORMS[form]
    truth = json.loads((CAPTURES / name / "truth.json").read_text())
    cap = capture(CAPTURES / name / pcap)
    assert bool(cap.secrets) == (keys is None)  # the DSB copy carries the key log itself
    results = decrypt_all(cap, keylog_for(cap, CAPTURES / name / keys if keys else None))
    want = {(r["tls_version"], r["alpn"]) for r in truth.get("requests", [])} or {
        ("TLSv1.3", "http/1.1")  # the SDK captures: httpx over TLS 1.3, no HTTP/2
    }
    seen = set()
    for result in results.values():
        info = result.tls.info
        assert result.diagnostics == [] and info.decrypted
        assert info.version is not None and info.alpn is not None
        seen.add((f"TLSv{info.version[4:]}", info.alpn))
        client, server = (bytes(p) for p in result.plaintext)
        if info.alpn == "h2":
            assert client.startswith(H2_PREFACE)
        else:
            assert client.split(b" ", 1)[0] in (b"GET", b"POST")
            assert server.startswith(b"HTTP/1.1 200 ")
    assert seen == want
    if truth.get("http2") is False:
        assert all(r.tls.info.alpn == "http/1.1" for r in results.values())
