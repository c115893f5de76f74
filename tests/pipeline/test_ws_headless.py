"""A WebSocket seen from its middle: real captures (``tests/data/captures/ws_*``) with the
TCP and HTTP handshakes cut off. The frames say it is a WebSocket and which side is the
client (its frames are masked); what can be decoded is what was sent, and a compressed
message that refers to bytes before the cut is undecodable, never garbled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentshark.apis.model import Call
from agentshark.http.sniff import sniff
from agentshark.model import Exchange
from agentshark.pipeline import ConnectionReport, Options, run
from tests.faults.pcapfile import Record, parse_tcp, pcap_bytes, read_capture
from tests.helpers import ROOT

FOLDER = ROOT / "tests" / "data" / "captures"


def _cut(name: str, tmp_path: Path, *, skip: int = 0, server_first: bool = False) -> Path:
    """The capture from the first data segment after the ``101`` on (``skip`` data segments
    more; with ``server_first``, from the first server segment then)."""
    capture = read_capture(FOLDER / name / "capture.pcap")
    port = json.loads((FOLDER / name / "truth.json").read_text())["port"]
    keep: list[Record] = []
    started = False
    seen = 0
    for r in capture.records:
        tcp = parse_tcp(capture.linktype, r.data)
        assert tcp is not None
        payload = r.data[tcp.payload_offset : tcp.payload_offset + tcp.payload_len]
        from_server = tcp.flow[1] == port
        if not started:
            if from_server and payload.startswith(b"HTTP/1.1 101"):
                started = True
            continue
        if payload and seen < skip:
            seen += 1
            continue
        if server_first and not keep and not (payload and from_server):
            continue
        keep.append(r)
    out = tmp_path / f"{name}-cut.pcap"
    out.write_bytes(pcap_bytes(capture, keep))
    return out


def _session(path: Path) -> tuple[Exchange, list[Call], ConnectionReport]:
    items = list(run([str(path)], Options(calls=True)))
    (ex,) = [i for i in items if isinstance(i, Exchange)]
    (conn,) = [i for i in items if isinstance(i, ConnectionReport)]
    return ex, [i for i in items if isinstance(i, Call)], conn


def _whole(name: str) -> Exchange:
    (ex,) = [
        i for i in run([str(FOLDER / name / "capture.pcap")], Options()) if isinstance(i, Exchange)
    ]
    return ex


def _payloads(ex: Exchange) -> list[tuple[int, bytes | None]]:
    return [(r.message.direction, r.message.payload) for r in ex.messages or ()]


@pytest.mark.parametrize("server_first", [False, True])
def test_a_plain_session_cut_after_its_handshake_is_read_from_its_frames(
    tmp_path: Path, server_first: bool
) -> None:
    name = "ws_sdk_realtime_plain"
    ex, calls, conn = _session(_cut(name, tmp_path, server_first=server_first))
    assert ex.request is None and ex.response is None and ex.upgrade == "websocket"
    assert ex.diagnostics[0].code == "ws.no_handshake"
    assert conn.protocol == "http/1.1+websocket"
    whole = _payloads(_whole(name))
    got = _payloads(ex)
    assert got and all(p is not None for _, p in got)
    # the same messages, in the same directions (the masked side is the client even when
    # the server's segment came first), from where the capture starts
    assert got == whole[len(whole) - len(got) :]
    assert {d for d, _ in got} == {0, 1}
    # the session's events are all there (session.created included): the same calls
    (
        whole_calls := [
            c
            for c in run([str(FOLDER / name / "capture.pcap")], Options(calls=True))
            if isinstance(c, Call)
        ]
    )
    assert [(c.id, c.output_messages, c.usage, c.complete) for c in calls] == [
        (c.id, c.output_messages, c.usage, c.complete) for c in whole_calls
    ]


def test_a_session_cut_after_its_start_still_gives_its_responses_as_calls(
    tmp_path: Path,
) -> None:
    ex, calls, _ = _session(_cut("ws_sdk_realtime_plain", tmp_path, skip=2))
    assert ex.request is None and ex.messages
    first_server = next(r for r in ex.messages if r.message.direction == 1)
    assert b"session.created" not in (first_server.message.payload or b"")
    assert calls and all(c.api == "openai.realtime" for c in calls)
    assert not calls[0].complete
    assert "call.evidence_incomplete" in [d.code for d in calls[0].diagnostics]
    assert all(c.complete for c in calls[1:])


def test_context_takeover_cut_makes_messages_undecodable_never_garbled(tmp_path: Path) -> None:
    name = "ws_sdk_realtime_deflate"
    ex, _, _ = _session(_cut(name, tmp_path, skip=4))
    whole = dict(enumerate(_payloads(_whole(name))))
    got = _payloads(ex)
    codes = [d.code for r in ex.messages or () for d in r.diagnostics]
    assert "ws.undecodable" in codes
    undecodable = [
        d for r in ex.messages or () for d in r.diagnostics if d.code == "ws.undecodable"
    ]
    assert "mid-connection" in undecodable[0].message
    sent = [p for _, p in whole.values() if p is not None]
    decoded = [p for _, p in got if p is not None]
    assert all(p in sent for p in decoded), "what decodes is what was sent"
    assert any(p is None for _, p in got)


def test_without_context_takeover_every_message_decodes(tmp_path: Path) -> None:
    name = "ws_sdk_realtime_nocontext"
    ex, _, _ = _session(_cut(name, tmp_path, skip=4))
    whole = _payloads(_whole(name))
    got = _payloads(ex)
    assert got == whole[len(whole) - len(got) :] and all(p is not None for _, p in got)
    assert not [d for r in ex.messages or () for d in r.diagnostics if d.code == "ws.undecodable"]


def test_http_tls_and_h2_heads_are_never_frames() -> None:
    for head in (
        b"GET / HTTP/1.1\r\n",
        b"HTTP/1.1 200 OK\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        b"\x00\x00\x12\x04\x00\x00\x00\x00\x00",
    ):
        assert sniff(head, b"", final=True, swap_allowed=True)[0] != "websocket", head
        assert sniff(b"", head, final=True, swap_allowed=True)[0] != "websocket", head
    masked = b"\x81\x82abcd" + bytes(x ^ k for x, k in zip(b"{}", b"ab", strict=True))
    assert sniff(masked, b"\x81\x02{}", final=False, swap_allowed=True) == ("websocket", False)
    assert sniff(b"\x81\x02{}", masked, final=False, swap_allowed=True) == ("websocket", True)
    assert sniff(b"\x81\x02{}", masked, final=False, swap_allowed=False)[0] != "websocket"
