"""Corpus captures with TLS keys embedded (pcapng Decryption Secrets Blocks), decrypted by the
pipeline and compared with the HAR files pcap2har derived from the same captures."""

from __future__ import annotations

import json
from typing import Any

from agentshark.http.content import decode_body
from agentshark.model import Exchange, header
from agentshark.pipeline import ConnectionReport, SourceReport
from tests.helpers import CORPUS, Collected

P2H = CORPUS / "mikekap__pcap2har" / "tests"


def analyze(path: str) -> tuple[list[Exchange], list[ConnectionReport], SourceReport]:
    got = Collected([path])
    (source,) = got.sources
    return got.exchanges, got.connections, source


def decoded_size(ex: Exchange) -> int:
    assert ex.response is not None
    body = decode_body(ex.response.body, header(ex.response.headers, "content-encoding"))
    assert not body.diagnostics
    return body.size


def har_entries(name: str) -> list[dict[str, Any]]:
    doc = json.loads((P2H / "goldens" / name).read_text())
    entries: list[dict[str, Any]] = doc["log"]["entries"]
    return entries


def test_http2_dump_matches_pcap2har() -> None:
    exchanges, conns, source = analyze(str(P2H / "resources" / "http2-dump.pcap"))
    assert source.secrets_blocks >= 1
    (conn,) = conns
    assert conn.protocol == "h2" and conn.tls is not None and conn.tls["decrypted"]
    got = sorted(
        (ex.request.method, ex.request.url, ex.response.status, decoded_size(ex))
        for ex in exchanges
        if ex.request is not None and ex.response is not None
    )
    want = sorted(
        (
            e["request"]["method"],
            e["request"]["url"],
            e["response"]["status"],
            e["response"]["content"]["size"],
        )
        for e in har_entries("test_http2.py-test_http2_parse")
    )
    assert got == want
    assert all(ex.complete for ex in exchanges)


def test_firefox_tls13_dsb_decrypts_every_request() -> None:
    exchanges, conns, _ = analyze(str(P2H / "resources" / "firefox-tls13-facebook-dsb.pcapng"))
    (conn,) = conns
    assert conn.tls is not None and conn.tls["version"] == "TLS 1.3" and conn.tls["decrypted"]
    exchanges.sort(key=lambda e: e.started or 0.0)
    got = [(ex.request.method, ex.request.url) for ex in exchanges if ex.request is not None]
    want = [
        (e["request"]["method"], e["request"]["url"])
        for e in har_entries("test_http2.py-test_firefox_tls13")
    ]
    assert got == want
    # pcap2har lists no response for any of them; we find the five the capture holds. The
    # last request's response is not in the capture.
    assert [ex.response.status if ex.response else None for ex in exchanges] == [
        200,
        200,
        200,
        200,
        200,
        None,
    ]


def test_ja4_http2_with_cookies_decrypts() -> None:
    path = CORPUS / "FoxIO-LLC__ja4" / "pcap" / "http2-with-cookies.pcapng"
    exchanges, conns, source = analyze(str(path))
    (conn,) = conns
    assert conn.protocol == "h2" and conn.tls is not None and conn.tls["decrypted"]
    assert (conn.tls["sni"], conn.tls["alpn"], conn.tls["version"]) == (
        "youtube.com",
        "h2",
        "TLS 1.3",
    )
    assert len(exchanges) == 15 and all(ex.complete for ex in exchanges)
    assert all(ex.request and ex.request.url.startswith("https://") for ex in exchanges)
    assert not [d for d in source.diagnostics if d.severity != "info"]
