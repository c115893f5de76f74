"""Whole pipeline over a TLS capture with one TCP data packet left out: the exchange the
packet belonged to says complete: false, and every other exchange, those after it on the
same connection included, is identical to the clean run (decryption resumed after the gap).

The cases drop a packet in the middle of a streamed response, where nothing but the TLS
record layer stands between the gap and the next exchanges. (Lost request or response heads
need HTTP/1 pairing by acknowledgment; lost HTTP/2 HEADERS need HPACK resync: other parts of
the seeded fault suite in tests/faults.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentshark.model import Exchange
from agentshark.output.report import RenderOptions, exchange_json
from agentshark.pipeline import Options, run
from tests.helpers import CAPTURES
from tests.tls.pcapcut import data_packets, without


def exchanges(pcap: Path, keylog: Path) -> list[Exchange]:
    items = run([str(pcap)], Options(keylogs=[str(keylog)]))
    return [item for item in items if type(item) is Exchange]


def signature(ex: Exchange) -> str:
    """The exchange as reported, less its id and TLS record counts (which a drop changes)."""
    j = exchange_json(ex, RenderOptions())
    kept = ("connection", "stream", "request", "response", "complete", "upgrade")
    return json.dumps({k: j[k] for k in kept}, sort_keys=True, default=str)


@pytest.mark.parametrize("name", ["https_tls12_h1", "llm_sdk_openai", "llm_sdk_anthropic"])
def test_a_packet_lost_in_a_streamed_response_costs_that_exchange(
    name: str, tmp_path: Path
) -> None:
    pcap, keylog = CAPTURES / name / "capture.pcap", CAPTURES / name / "keylog.txt"
    clean = exchanges(pcap, keylog)
    assert all(ex.complete for ex in clean)
    touched = next(
        i
        for i, ex in enumerate(clean)
        if ex.response is not None and "event-stream" in str(ex.response.headers)
    )
    assert touched < len(clean) - 1, "the case needs exchanges after the touched one"
    response = clean[touched].response
    assert response is not None and response.started is not None
    assert response.ended is not None
    inside = data_packets(pcap, response.started, response.ended)
    assert len(inside) >= 3
    got = exchanges(without(pcap, inside[len(inside) // 2], tmp_path / "cut.pcap"), keylog)
    assert len(got) == len(clean)
    for i, (ex, want) in enumerate(zip(got, clean, strict=True)):
        if i == touched:
            assert not ex.complete and ex.response is not None and not ex.response.complete
        else:
            assert signature(ex) == signature(want), f"exchange {i} changed"
