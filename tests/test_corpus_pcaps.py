"""Every packet capture in ../shared/corpus and ../shared/captures through the whole pipeline."""

from __future__ import annotations

import json

import pytest

from agentshark.model import Exchange
from agentshark.pipeline import ConnectionReport, SourceReport
from tests.helpers import CAPTURES, CORPUS, Collected

PCAPS = sorted(
    json.loads(line)["file"]
    for line in (CORPUS / "manifest.jsonl").read_text().splitlines()
    if json.loads(line)["format"] == "pcap"
)

# Cleartext HTTP/1.x captures: (requests, responses) as counted by tshark 4.0.17
# (`tshark -Y http.request` / `-Y http.response`), which pairs nothing and so counts a
# request whose response is missing, and the reverse, once each.
HTTP1_COUNTS = {
    "FoxIO-LLC__ja4/pcap/http-empty-useragent.pcap": (1, 1),
    "FoxIO-LLC__ja4/pcap/http1-with-cookies.pcapng": (1, 1),
    "FoxIO-LLC__ja4/pcap/http1.pcapng": (56, 56),
    "FoxIO-LLC__ja4/pcap/https-connect.pcap": (1, 1),
    "kbandla__dpkt/examples/data/http.pcap": (2, 2),
    # tshark also decodes a third exchange carried in an L2TP tunnel over UDP; we count
    # those packets as UDP (not analyzed) and report them in the source's not_analyzed.
    "kbandla__dpkt/examples/data/nb6-http.pcap": (2, 2),
    "mikekap__pcap2har/tests/resources/http-chunked-gzip.pcap": (1, 1),
    "mikekap__pcap2har/tests/resources/ipv4-websocket-segmented.pcap": (1, 1),
    "mikekap__pcap2har/tests/resources/websocket.pcap": (1, 1),
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
    if name in HTTP1_COUNTS:
        requests = sum(1 for e in exchanges if e.request is not None)
        responses = sum(1 for e in exchanges if e.response is not None)
        assert (requests, responses) == HTTP1_COUNTS[name]


@pytest.mark.parametrize("name", sorted(p.name for p in CAPTURES.iterdir() if p.is_dir()))
def test_shared_capture_runs_through_the_pipeline(name: str) -> None:
    pcap = CAPTURES / name / "capture.pcap"
    if not pcap.exists():
        pytest.skip(f"{name} has no packet capture (stdio transcript)")
    _, conns, source = analyze(str(pcap))
    assert source.diagnostics == []
    assert all(c.connection.gaps == [0, 0] for c in conns)
    assert all(not c.diagnostics or c.protocol in ("tls", "h2c") for c in conns)
