"""Every packet capture in ../shared/corpus and ../shared/captures through the whole pipeline,
and every corpus capture's counts against tshark's (tests/data/tshark_counts.json)."""

from __future__ import annotations

import json

import pytest

from agentshark.model import Exchange
from agentshark.pipeline import ConnectionReport, SourceReport
from tests.helpers import CAPTURES, CORPUS, ROOT, Collected

PCAPS = sorted(
    json.loads(line)["file"]
    for line in (CORPUS / "manifest.jsonl").read_text().splitlines()
    if json.loads(line)["format"] == "pcap"
)

TSHARK = json.loads((ROOT / "tests" / "data" / "tshark_counts.json").read_text())

# Where agentshark and tshark count differently, and why: (capture, count) -> ours.
DIFFERENT = {
    # tshark also decodes a third exchange carried in an L2TP tunnel over UDP (a TCP stream
    # of its own to tshark); we count those packets as UDP, reported in not_analyzed.
    ("kbandla__dpkt/examples/data/nb6-http.pcap", "tcp_streams"): 2,
    ("kbandla__dpkt/examples/data/nb6-http.pcap", "requests"): 2,
    ("kbandla__dpkt/examples/data/nb6-http.pcap", "responses"): 2,
    # tcp.stream 6 is a lone FIN/ACK of a connection that began before the capture: no
    # payload, nothing to report as a connection.
    ("FoxIO-LLC__ja4/pcap/tls3.pcapng", "tcp_streams"): 25,
    # The TLS session inside the CONNECT tunnel: the connection is reported as
    # http/1.1+tunnel with the tunnel's byte counts (switched_bytes); its TLS is not read.
    ("FoxIO-LLC__ja4/pcap/https-connect.pcap", "tls_handshakes"): 0,
    # tshark 4.0 decodes none of the HTTP/2 responses of this capture; the five responses
    # it holds are checked in tests/test_corpus_tls.py.
    ("mikekap__pcap2har/tests/resources/firefox-tls13-facebook-dsb.pcapng", "responses"): 5,
}


def analyze(path: str) -> tuple[list[Exchange], list[ConnectionReport], SourceReport]:
    got = Collected([path])
    (source,) = got.sources
    return got.exchanges, got.connections, source


@pytest.mark.parametrize("name", PCAPS)
def test_corpus_capture_runs_through_the_pipeline(name: str) -> None:
    exchanges, conns, source = analyze(str(CORPUS / name))
    assert source.format in ("pcap", "pcapng")
    assert not [d for d in source.diagnostics if d.severity == "error"]
    assert source.connections == len(conns)
    assert source.exchanges == len(exchanges) == sum(c.exchanges for c in conns)
    ids = [e.id for e in exchanges]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", PCAPS)
def test_corpus_capture_counts_match_tshark(name: str) -> None:
    """What tshark decodes in each corpus capture (tests/data/tshark_counts.json, made by
    scripts/tshark_counts.py, which says how each count is taken) against agentshark's
    report of the same capture: TCP connections; HTTP requests and responses, HTTP/1.x
    and HTTP/2 together (tshark pairs nothing, so both count one side of an unanswered
    exchange), TLS decrypted with the key log the file embeds; and the TLS connections
    whose handshake is in the capture. The differences, with their reasons, are listed
    in DIFFERENT; an entry that no longer differs fails too."""
    tshark = TSHARK["captures"][name]
    exchanges, conns, _ = analyze(str(CORPUS / name))
    want = {
        "tcp_streams": tshark["tcp_streams"],
        "requests": tshark["http_requests"] + tshark["http2_requests"],
        "responses": tshark["http_responses"] + tshark["http2_responses"],
        "tls_handshakes": tshark["tls_handshake_streams"],
    }
    # QUIC connections and their HTTP/3 exchanges are compared with tshark in tests/quic
    tcp = [c for c in conns if c.protocol not in ("h3", "quic")]
    exchanges = [e for e in exchanges if e.transport != "h3"]
    got = {
        "tcp_streams": len(tcp),
        "requests": sum(1 for e in exchanges if e.request is not None),
        "responses": sum(1 for e in exchanges if e.response is not None),
        "tls_handshakes": sum(1 for c in tcp if c.tls and c.tls.get("client_random")),
    }
    for count, value in want.items():
        expected = DIFFERENT.get((name, count), value)
        assert got[count] == expected, f"{count}: tshark {value}, agentshark {got[count]}"
        if (name, count) in DIFFERENT:
            assert expected != value, f"{name} {count} no longer differs from tshark"


def test_the_counts_are_tsharks_of_every_corpus_capture() -> None:
    assert TSHARK["tshark"].startswith("TShark (Wireshark) ")
    assert sorted(TSHARK["captures"]) == PCAPS


@pytest.mark.parametrize("name", sorted(p.name for p in CAPTURES.iterdir() if p.is_dir()))
def test_shared_capture_runs_through_the_pipeline(name: str) -> None:
    pcap = CAPTURES / name / "capture.pcap"
    if not pcap.exists():
        pytest.skip(f"{name} has no packet capture (stdio transcript)")
    _, conns, source = analyze(str(pcap))
    assert source.diagnostics == []
    assert all(c.connection.gaps == [0, 0] for c in conns)
    assert all(not c.diagnostics or c.protocol in ("tls", "h2c") for c in conns)
