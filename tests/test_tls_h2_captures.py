"""TLS and HTTP/2 captures, decrypted with their key logs, against the client's own records.

The project's loopback captures (tests/data/captures, made by scripts/make_tls_captures.py)
cover the TLS and HTTP/2 cases the shared captures lack; the shared h2c captures come from
../shared/captures. The shared TLS captures, decrypted with their key logs, are compared
with their truth in tests/test_captures.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agentshark.framing import decode_stream
from agentshark.framing.events import SseEvent
from agentshark.http.content import decode_body
from agentshark.model import Exchange, header
from agentshark.pipeline import ConnectionReport, Options, SourceReport
from tests.helpers import CAPTURES, ROOT, Collected, own_tls_captures

OWN = ROOT / "tests" / "data" / "captures"
TLS_NAMES = own_tls_captures()
TLS_VERSION = {"TLSv1.2": "TLS 1.2", "TLSv1.3": "TLS 1.3"}


def analyze(
    pcap: Path, keylog: Path | None = None
) -> tuple[list[Exchange], list[ConnectionReport], list[SourceReport]]:
    opts = Options(keylogs=[str(keylog)] if keylog else [])
    got = Collected([str(pcap)], opts)
    exchanges = sorted(got.exchanges, key=lambda e: e.started or 0.0)
    return exchanges, got.connections, got.sources


def _suite(name: str) -> str:
    """A cipher suite name without the spelling differences of IANA and OpenSSL."""
    flat = "".join(c for c in name.upper() if c.isalnum())
    return flat.removeprefix("TLS").replace("WITH", "")


def body(ex: Exchange) -> bytes:
    assert ex.response is not None
    decoded = decode_body(ex.response.body, header(ex.response.headers, "content-encoding"))
    return b"".join(p for _, p in decoded.pieces)


def check_requests(exchanges: list[Exchange], requests: list[dict[str, Any]]) -> None:
    got = [ex for ex in exchanges if ex.response is None or ex.response.status != 101]
    assert len(got) == len(requests)
    for ex, want in zip(got, requests, strict=True):
        assert ex.request is not None and ex.response is not None
        assert (ex.request.method, ex.request.target) == (want["method"], want["path"])
        assert ex.response.status == want["status"]
        version = "HTTP/2" if ex.transport == "h2" else ex.response.version
        assert version == want["http_version"]
        if want.get("h2_stream_id") is not None:
            assert ex.stream == want["h2_stream_id"]
        assert ex.request.body.size == want.get("request_body_bytes", ex.request.body.size)
        data = body(ex)
        if "response_sha256" in want and ex.complete:
            assert hashlib.sha256(data).hexdigest() == want["response_sha256"]
        if "sse_data_events" in want:
            events = [
                e for e in decode_stream(ex.response.body.pieces, "sse") if isinstance(e, SseEvent)
            ]
            assert len(events) == want["sse_data_events"]


@pytest.mark.parametrize("name", TLS_NAMES)
def test_own_tls_capture_decrypts_to_the_truth(name: str) -> None:
    folder = OWN / name
    truth = json.loads((folder / "truth.json").read_text())
    exchanges, conns, sources = analyze(folder / "capture.pcap", folder / "keys.log")
    assert all(not d for s in sources for d in s.diagnostics)
    for conn in conns:
        assert conn.tls is not None and conn.tls["decrypted"] is True
        assert not [d for d in conn.diagnostics if d.severity != "info"]
    for i, want in enumerate(truth.get("connections", [])):
        port = want.get("client_port")
        (conn,) = [
            c for c in conns if (port is None and c is conns[i]) or c.connection.client[1] == port
        ]
        assert conn.tls is not None
        assert conn.tls["version"] == TLS_VERSION[want["tls_version"]]
        assert conn.tls["alpn"] == want["alpn"]
        assert _suite(str(conn.tls["cipher_suite"])).startswith(_suite(want["cipher"]))
        if "session_reused" in want:
            assert conn.tls["resumed"] == want["session_reused"]
    if "key_updates" in truth:
        updates = len(truth["key_updates"]["in_order"])
        assert sum(int(c.tls["key_updates"]) for c in conns if c.tls) == updates
    if "hello_retry_request" in truth:
        assert all(c.tls and c.tls["hello_retry"] for c in conns)
    if name == "h2_rst_stream":
        (cut,) = [ex for ex in exchanges if not ex.complete]
        assert [d.code for d in cut.diagnostics] == ["h2.stream_reset"]
        assert "CANCEL" in cut.diagnostics[0].message
        requests = truth["requests"]
        assert len(exchanges) == len(requests)
        return
    check_requests(exchanges, truth["requests"])


@pytest.mark.parametrize("name", TLS_NAMES)
def test_own_tls_capture_without_keys_stays_encrypted(name: str) -> None:
    exchanges, conns, _ = analyze(OWN / name / "capture.pcap")
    assert exchanges == []
    for conn in conns:
        assert conn.protocol == "tls"
        codes = [d.code for d in conn.diagnostics]
        assert codes.count("tls.no_keys") == 1
        (diag,) = [d for d in conn.diagnostics if d.code == "tls.no_keys"]
        assert "--keylog" in diag.message


def test_h2c_upgrade_follows_the_connection_into_http2() -> None:
    folder = OWN / "h2c_upgrade"
    truth = json.loads((folder / "truth.json").read_text())
    exchanges, conns, _ = analyze(folder / "capture.pcap")
    (conn,) = conns
    assert conn.protocol == "h2c"
    upgrade = [ex for ex in exchanges if ex.upgrade == "h2c"]
    assert len(upgrade) == 1 and upgrade[0].response is not None
    assert upgrade[0].response.status == 101
    rest = [ex for ex in exchanges if ex.upgrade is None]
    assert [(ex.stream, ex.transport) for ex in rest] == [(1, "h2"), (3, "h2"), (5, "h2")]
    # curl resets stream 1 (STREAM_CLOSED) before the server's final DATA frame: the
    # exchange is reported as reset, with the body bytes that did arrive.
    first = rest[0]
    assert [d.code for d in first.diagnostics] == ["h2.stream_reset"]
    check_requests(rest[1:], truth["requests"][1:])


def test_h2c_prior_knowledge_matches_truth() -> None:
    truth = json.loads((CAPTURES / "h2c_prior_knowledge" / "truth.json").read_text())
    exchanges, conns, _ = analyze(CAPTURES / "h2c_prior_knowledge" / "capture.pcap")
    assert [c.protocol for c in conns] == ["h2c"]
    by_stream = {ex.stream: ex for ex in exchanges}
    for want in truth["requests"]:
        ex = by_stream[want["h2_stream_id"]]
        assert ex.request is not None and ex.response is not None and ex.complete
        assert (ex.request.method, ex.request.target) == (want["method"], want["path"])
        assert ex.response.status == want["status"]
        assert header(ex.response.headers, "content-encoding") == want["content_encoding"]
        if want["decoded_body_bytes"] is not None:
            assert len(body(ex)) == want["decoded_body_bytes"]
        if want.get("sse_data_events"):
            events = [
                e for e in decode_stream(ex.response.body.pieces, "sse") if isinstance(e, SseEvent)
            ]
            assert len(events) == want["sse_data_events"]


def test_grpc_h2c_calls_and_trailers() -> None:
    truth = json.loads((CAPTURES / "grpc_h2c" / "truth.json").read_text())
    exchanges, _, _ = analyze(CAPTURES / "grpc_h2c" / "capture.pcap")
    assert len(exchanges) == len(truth["calls"])
    for ex, call in zip(exchanges, truth["calls"], strict=True):
        assert ex.request is not None and ex.response is not None
        assert ex.request.target == call["method"]
        status = header(ex.response.trailers, "grpc-status") or header(
            ex.response.headers, "grpc-status"
        )
        assert status == ("0" if call["code"] == "OK" else "5")
