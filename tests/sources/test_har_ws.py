"""WebSocket messages two ways: pcap2har's own decoding of its test captures (its golden HAR
files' ``_webSocketMessages``) against ours of the same pcaps, and the HAR files read back."""

from __future__ import annotations

import base64
import json

import pytest

from agentshark.errors import Diagnostic
from agentshark.framing.websocket import BINARY
from agentshark.model import Exchange
from agentshark.pipeline import run
from agentshark.sources.har_ws import websocket_messages
from tests.helpers import CORPUS

P2H = CORPUS / "mikekap__pcap2har" / "tests"
PAIRS = (
    ("websocket.pcap", "test_websocket.py-test_websocket_parse"),
    ("ipv4-websocket-segmented.pcap", "test_websocket.py-test_websocket_segmented"),
)


def _as_har(ex: Exchange) -> list[dict[str, object]]:
    assert ex.messages is not None
    out = []
    for r in ex.messages:
        m = r.message
        assert m.payload is not None
        data = base64.b64encode(m.payload).decode() if m.opcode == BINARY else m.payload.decode()
        kind = "send" if m.direction == 0 else "receive"
        out.append(
            {"data": data, "opcode": m.opcode, "time": m.last_ts, "type": kind}
        )  # as pcap2har: when it ended
    return out


@pytest.mark.parametrize(("pcap", "golden"), PAIRS)
def test_our_frames_are_pcap2hars(pcap: str, golden: str) -> None:
    har = json.loads((P2H / "goldens" / golden).read_text())
    (entry,) = [e for e in har["log"]["entries"] if "_webSocketMessages" in e]
    want = entry["_webSocketMessages"]
    found = [it for it in run([str(P2H / "resources" / pcap)]) if isinstance(it, Exchange)]
    (ex,) = [it for it in found if it.request is not None]
    for other in (it for it in found if it.request is None):  # seen from its middle
        # (the segmented capture holds the close of an earlier session: 1001 both ways)
        assert other.messages is not None
        assert [(r.message.kind, r.message.close_code) for r in other.messages] == [
            ("close", 1001),
            ("close", 1001),
        ]
    got = _as_har(ex)
    assert [{**m, "time": round(float(m["time"]), 5)} for m in got] == [  # type: ignore[arg-type]
        {**m, "time": round(m["time"], 5)} for m in want
    ]
    # the HAR read back: the same messages
    (back,) = [
        it
        for it in run([str(P2H / "goldens" / golden)])
        if isinstance(it, Exchange) and it.messages is not None
    ]
    assert _as_har(back) == want
    assert back.complete and "_webSocketMessages" not in back.extras


def test_malformed_items_are_skipped_with_their_path() -> None:
    diags: list[Diagnostic] = []
    records = websocket_messages(
        [
            {"type": "send", "opcode": 1, "time": 1.0, "data": "hi"},
            {"type": "sideways", "opcode": 1, "time": 1.0, "data": "x"},
            {"type": "receive", "opcode": 2, "time": 2.0, "data": "%%%"},
            "nonsense",
        ],
        "log.entries[0]._webSocketMessages",
        diags,
    )
    assert [r.message.payload for r in records] == [b"hi", None]
    assert [d.location for d in diags] == [
        "log.entries[0]._webSocketMessages[1]",
        "log.entries[0]._webSocketMessages[2]",
        "log.entries[0]._webSocketMessages[3]",
    ]
    assert websocket_messages({}, "p", diags) == [] and diags[-1].location == "p"


def test_a_type_or_opcode_of_another_json_type_is_malformed() -> None:
    """Fuzz finding: a list as ``type`` (unhashable) raised TypeError."""
    diags: list[Diagnostic] = []
    items = [
        {"type": ["send"], "opcode": 1, "time": 1.0, "data": "a"},
        {"type": "send", "opcode": [1], "time": 1.0, "data": "b"},
        {"type": "send", "opcode": True, "time": 1.0, "data": "c"},
        {"type": "send", "opcode": 1.0, "time": 1.0, "data": "d"},
    ]
    assert websocket_messages(items, "p", diags) == []
    assert [d.location for d in diags] == ["p[0]", "p[1]", "p[2]", "p[3]"]
