"""Packet loss and ACKs captured before their data, end to end on real HTTP/1 captures.

Each case rewrites a capture (``faults.Capture``) and compares the run with the clean one:
every exchange and call is identical, or says ``complete: false`` with a diagnostic naming the
gap; never complete and different.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentshark.apis.model import Call
from agentshark.model import Exchange
from tests.helpers import CAPTURES, ROOT
from tests.pipeline.faults import Capture, analyze, compare, project

AGENT_CHAT = ROOT / "examples" / "agent_chat.pcap"
HTTP1 = CAPTURES / "http1_cleartext" / "capture.pcap"
_GAP_CODES = {
    "http.body_gap",
    "http.response_lost",
    "http.request_lost",
    "http.unpaired_response",
    "http.head_missing",
}


def _clean(cap: Capture, tmp: Path) -> list[Exchange | Call]:
    return analyze(cap.write(list(range(len(cap.records)))), tmp)


def _exchanges(items: list[Exchange | Call]) -> list[Exchange]:
    return [x for x in items if isinstance(x, Exchange)]


def _codes(ex: Exchange) -> set[str]:
    return {d.code for d in ex.diagnostics}


@pytest.mark.parametrize("path", [AGENT_CHAT, HTTP1], ids=["agent_chat", "http1_cleartext"])
def test_an_ack_moved_before_its_data_changes_nothing(path: Path, tmp_path: Path) -> None:
    cap = Capture.read(path)
    clean = _clean(cap, tmp_path / "x.pcap")
    moved = 0
    for i in cap.data_packets():
        pcap = cap.ack_before_data(i)
        if pcap is None:
            continue
        moved += 1
        faulty = analyze(pcap, tmp_path / "x.pcap")
        assert sorted(map(project, faulty), key=repr) == sorted(map(project, clean), key=repr), i
        for ex in _exchanges(faulty):
            assert not _codes(ex) & _GAP_CODES
    assert moved >= len(cap.data_packets()) - 2


@pytest.mark.parametrize("path", [AGENT_CHAT, HTTP1], ids=["agent_chat", "http1_cleartext"])
def test_one_lost_data_packet_never_gives_a_complete_and_different_answer(
    path: Path, tmp_path: Path
) -> None:
    cap = Capture.read(path)
    clean = _clean(cap, tmp_path / "x.pcap")
    clean_keys = {project(x) for x in clean}
    for i in cap.data_packets():
        faulty = analyze(cap.dropping(i), tmp_path / "x.pcap")
        for kind in (Exchange, Call):
            verdict = compare(clean, faulty, kind)
            assert verdict.different == 0, (i, kind)
        for ex in _exchanges(faulty):
            if project(ex) not in clean_keys:  # touched by the gap: it says so and where
                assert not ex.complete
                touched = [d for d in ex.diagnostics if d.code in _GAP_CODES]
                assert touched, (i, [d.code for d in ex.diagnostics])
                assert any("byte" in d.message or "byte" in d.location for d in touched)


def test_a_lost_response_head_costs_its_exchange_only(tmp_path: Path) -> None:
    """The first of four keep-alive exchanges loses its response head (packet 8)."""
    cap = Capture.read(AGENT_CHAT)
    clean = _exchanges(_clean(cap, tmp_path / "x.pcap"))
    faulty = _exchanges(analyze(cap.dropping(7), tmp_path / "x.pcap"))
    first = next(
        ex
        for ex in faulty
        if ex.request is not None
        and ex.request.started == (clean[0].request.started if clean[0].request else None)
    )
    assert first.response is None and not first.complete
    lost = [d for d in first.diagnostics if d.code == "http.response_lost"]
    assert len(lost) == 1
    assert "server byte 0 (238 bytes)" in lost[0].message
    assert [project(x) for x in faulty if x is not first] == [project(x) for x in clean[1:]]


def test_a_lost_request_head_leaves_its_response_unpaired(tmp_path: Path) -> None:
    cap = Capture.read(AGENT_CHAT)
    clean = _exchanges(_clean(cap, tmp_path / "x.pcap"))
    faulty = _exchanges(analyze(cap.dropping(3), tmp_path / "x.pcap"))
    orphans = [ex for ex in faulty if ex.request is None]
    assert len(orphans) == 1
    orphan = orphans[0]
    assert orphan.stream is not None and orphan.stream < 0
    assert not orphan.complete
    assert orphan.response is not None
    assert orphan.response.status == clean[0].response.status if clean[0].response else False
    codes = [d.code for d in orphan.diagnostics]
    assert codes == ["http.request_lost"]
    assert "client byte 0 (511 bytes)" in orphan.diagnostics[0].message
    rest = [project(x) for x in faulty if x is not orphan]
    assert rest == [project(x) for x in clean[1:]]


def test_a_gap_inside_chunk_framing_resyncs_at_the_next_message(tmp_path: Path) -> None:
    cap = Capture.read(HTTP1)
    clean = _exchanges(_clean(cap, tmp_path / "x.pcap"))
    faulty = _exchanges(analyze(cap.dropping(21), tmp_path / "x.pcap"))  # an SSE chunk
    broken = [ex for ex in faulty if project(ex) not in {project(x) for x in clean}]
    assert len(broken) == 1
    ex = broken[0]
    assert ex.response is not None and not ex.response.complete
    assert ex.response.body.gap_bytes == 212
    gap = [d for d in ex.diagnostics if d.code == "http.body_gap"]
    assert len(gap) == 1 and "server byte" in gap[0].message
    assert len(faulty) == len(clean)


def test_a_gap_inside_a_body_of_known_length_keeps_the_framing(tmp_path: Path) -> None:
    cap = Capture.read(HTTP1)
    clean = _exchanges(_clean(cap, tmp_path / "x.pcap"))
    faulty = _exchanges(analyze(cap.dropping(50), tmp_path / "x.pcap"))  # inside /large
    broken = [ex for ex in faulty if project(ex) not in {project(x) for x in clean}]
    assert len(broken) == 1
    ex = broken[0]
    assert ex.request is not None and ex.request.target == "/large"
    assert ex.response is not None and ex.response.body.gap_bytes == 32768
    assert not ex.complete
    full = next(x for x in clean if x.request is not None and x.request.target == "/large")
    assert full.response is not None
    assert ex.response.body.size + 32768 == full.response.body.size
    assert len(faulty) == len(clean)
