"""QUIC stream reassembly on real captures, against tshark's (``scripts/quic_tshark_oracle.py``)."""

from __future__ import annotations

import hashlib
import json

import pytest

from ..helpers import ROOT
from .capture import FILES, read_quic, stream_bytes

ORACLE = json.loads((ROOT / "tests" / "data" / "quic" / "tshark_streams.json").read_text())


@pytest.mark.parametrize("name", sorted(FILES))
def test_streams_agree_with_tshark(name: str) -> None:
    pcap, keys = FILES[name]
    if not pcap.exists():
        pytest.skip(f"{pcap} is not here")
    demux, events = read_quic(pcap, keys)
    first = demux.flows[0]
    streams, gaps = stream_bytes(events, first.conn.id)
    assert gaps == 0
    expected = ORACLE[name]
    if not expected:  # tshark 4.0 reads no QUIC version 2 (the negotiation case starts in
        # it): the client's truth is the oracle
        assert name in ("h3_v2_chacha_keyupdate", "h3_version_negotiation")
        assert len(streams) >= (9 if name == "h3_v2_chacha_keyupdate" else 7)
        return
    ours = {}
    for sid in {sid for _, sid in streams}:
        sides = [streams.get((0, sid), b""), streams.get((1, sid), b"")]
        ours[str(sid)] = [
            len(sides[0]),
            len(sides[1]),
            *(hashlib.sha256(s).hexdigest() for s in sides),
        ]
    assert ours == expected
    assert first.quic.unopened == {}
    assert first.quic.info.decrypted


@pytest.mark.parametrize("name", ["h3_openai", "http3-connection7"])
def test_without_keys_only_the_initials_open(name: str) -> None:
    pcap, keys = FILES[name]
    if not pcap.exists():
        pytest.skip(f"{pcap} is not here")
    demux, events = read_quic(pcap, keys, keylog=False)
    assert events == []
    q = demux.flows[0].quic
    assert q.info.alpn_offered == ["h3"]
    assert q.info.client_random is not None
    assert not q.info.decrypted
    assert q.opened[0] >= 1  # the client's Initial opens with keys anyone can derive
    (diag,) = [d for d in q.diagnostics if d.code == "quic.no_keys"]
    assert "ALPN offered: h3" in diag.message
    assert q.info.client_random[:16] in diag.message
