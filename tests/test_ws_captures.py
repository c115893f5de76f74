"""The openai SDK's Realtime client over WebSocket (scripts/make_ws_captures.py): every
message of the session against what the client itself sent and what the SDK parsed."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentshark.apis.model import Call
from agentshark.model import Exchange
from agentshark.pipeline import Options, run
from tests.faults.pcapfile import pcap_bytes, read_capture
from tests.helpers import ROOT

FOLDER = ROOT / "tests" / "data" / "captures"
CASES = ("ws_sdk_realtime_plain", "ws_sdk_realtime_deflate", "ws_sdk_realtime_nocontext")
ALL = (*CASES, "ws_sdk_realtime_tls13")


def truth(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FOLDER / name / "truth.json").read_text())
    return data


def exchanges(path: Path, keylog: Path | None = None) -> list[Exchange]:
    opts = Options(keylogs=[str(keylog)] if keylog else ())
    return [it for it in run([str(path)], opts) if isinstance(it, Exchange)]


def session(name: str, *, keys: bool = True) -> Exchange:
    folder = FOLDER / name
    keylog = folder / "keys.log"
    (ex,) = exchanges(folder / "capture.pcap", keylog if keys and keylog.exists() else None)
    return ex


def events(ex: Exchange, direction: int) -> list[tuple[dict[str, Any], Any]]:
    assert ex.messages is not None
    out = []
    for r in ex.messages:
        m = r.message
        if m.direction == direction and m.opcode == 1:
            assert m.payload is not None
            out.append((json.loads(m.payload), m))
    return out


@pytest.mark.parametrize("name", ALL)
def test_every_event_as_the_client_saw_it(name: str) -> None:
    t = truth(name)
    ex = session(name)
    assert ex.upgrade == "websocket" and ex.complete and not ex.diagnostics
    assert ex.messages is not None and all(not r.diagnostics for r in ex.messages)
    sent = events(ex, 0)
    assert [(e["type"], e["event_id"]) for e, _ in sent] == [
        (s["type"], s["event_id"]) for s in t["sent"]
    ]
    received = events(ex, 1)
    assert [(e["type"], e["event_id"]) for e, _ in received] == [
        (r["type"], r["event_id"]) for r in t["received"]
    ]
    for (event, message), want in zip(received, t["received"], strict=True):
        assert message.last_ts <= want["t"] + 0.001  # on the wire before the SDK's recv()
        for key in ("arguments", "transcript", "call_id", "name"):
            if key in want:
                assert event[key] == want[key]
        if isinstance(want.get("delta"), str):
            assert event["delta"] == want["delta"]
        elif "delta" in want:  # audio: the SDK's base64, decoded
            assert len(event["delta"]) == want["delta"]["base64_bytes"]
            assert len(base64.b64decode(event["delta"])) == want["delta"]["pcm_bytes"]
        if want["type"] == "response.done":
            got = event["response"]
            assert (got["id"], got["status"]) == (
                want["response"]["id"],
                want["response"]["status"],
            )
            usage = {k: got["usage"][k] for k in ("input_tokens", "output_tokens")}
            assert usage == want["response"]["usage"]
    compressed = {m.compressed for _, m in sent + received}
    assert compressed == ({False} if t["compression"] == "none" else {True})
    closes = [r.message for r in ex.messages if r.message.kind == "close"]
    assert [m.close_code for m in closes] == [1000, 1000]


def test_the_key_is_in_the_handshake_and_never_in_the_report() -> None:
    from agentshark.output.report import RenderOptions, exchange_json

    t = truth("ws_sdk_realtime_tls13")
    ex = session("ws_sdk_realtime_tls13")
    assert ex.request is not None
    assert ("Authorization", f"Bearer {t['fake_credentials']['authorization_bearer']}") in [
        tuple(h) for h in ex.request.headers
    ]
    text = json.dumps(exchange_json(ex, RenderOptions(events=True)))
    assert t["fake_credentials"]["authorization_bearer"] not in text
    assert '"text": "{\\"type\\": \\"session.update\\"' in text


def test_without_keys_the_session_stays_encrypted() -> None:
    assert exchanges(FOLDER / "ws_sdk_realtime_tls13" / "capture.pcap") == []


def _drop_server_packet(name: str, tmp_path: Path, nth: int) -> Path:
    """The capture with the ``nth`` data packet from the server after the handshake dropped."""
    capture = read_capture(FOLDER / name / "capture.pcap")
    port = truth(name)["port"]
    seen = 0
    keep = []
    for r in capture.records:
        ip = r.data[14:] if capture.linktype == 1 else r.data[4:]
        ihl = (ip[0] & 15) * 4
        sport = int.from_bytes(ip[ihl : ihl + 2], "big")
        offset = (ip[ihl + 12] >> 4) * 4
        payload = ip[ihl + offset :]
        if sport == port and payload and not payload.startswith(b"HTTP/1.1"):
            seen += 1
            if seen == nth:
                continue
        keep.append(r)
    out = tmp_path / f"{name}.pcap"
    out.write_bytes(pcap_bytes(capture, keep))
    return out


def test_a_lost_segment_with_context_takeover_loses_the_rest_of_that_direction(
    tmp_path: Path,
) -> None:
    (ex,) = exchanges(_drop_server_packet("ws_sdk_realtime_deflate", tmp_path, 5))
    assert not ex.complete and ex.messages is not None
    server = [r for r in ex.messages if r.message.direction == 1 and r.message.opcode == 1]
    codes = [d.code for r in ex.messages for d in r.diagnostics]
    assert "ws.gap" in codes and "ws.undecodable" in codes
    lost = [r for r in server if r.message.payload is None]
    assert lost and all(not r.message.complete or r.message.payload is None for r in lost)
    # what decoded is what was sent: every payload is a whole JSON event
    for r in ex.messages:
        if r.message.payload is not None and r.message.opcode == 1 and r.message.complete:
            json.loads(r.message.payload)
    client = [r for r in ex.messages if r.message.direction == 0 and r.message.opcode == 1]
    assert all(r.message.payload is not None for r in client)  # the other direction is whole


def test_a_lost_segment_without_context_takeover_costs_its_messages(tmp_path: Path) -> None:
    name = "ws_sdk_realtime_nocontext"
    (ex,) = exchanges(_drop_server_packet(name, tmp_path, 5))
    assert not ex.complete and ex.messages is not None
    server = [r.message for r in ex.messages if r.message.direction == 1 and r.message.opcode == 1]
    whole = [json.loads(m.payload) for m in server if m.payload is not None and m.complete]
    ids = [e["event_id"] for e in whole]
    want = [r["event_id"] for r in truth(name)["received"]]
    assert set(ids) < set(want) and len(ids) >= len(want) - 3
    assert ids == [i for i in want if i in ids]  # in order, none invented


def test_websocket_over_http2_extended_connect() -> None:
    """RFC 8441: hypercorn and a hand-driven h2 client; the stream's DATA are the frames."""
    t = truth("ws_h2_realtime")
    ex = session("ws_h2_realtime")
    assert ex.transport == "h2" and ex.upgrade == "websocket"
    assert ex.request is not None and ex.request.method == "CONNECT"
    assert ex.messages is not None and all(not r.diagnostics for r in ex.messages)
    assert [(e["type"], e["event_id"]) for e, _ in events(ex, 0)] == [
        (s["type"], s["event_id"]) for s in t["sent"]
    ]
    assert [(e["type"], e["event_id"]) for e, _ in events(ex, 1)] == [
        (r["type"], r["event_id"]) for r in t["received"]
    ]
    closes = [r.message for r in ex.messages if r.message.kind == "close"]
    assert [(m.direction, m.close_code) for m in closes] == [(0, 1000), (1, 1000)]
    # hypercorn closes the connection without ending its side of the stream: not whole
    assert not ex.complete and [d.code for d in ex.diagnostics] == ["ws.session_open"]


def _h2_server_records(name: str) -> tuple[Any, list[int]]:
    """The capture and the indexes of its records that carry server bytes."""
    capture = read_capture(FOLDER / name / "capture.pcap")
    port = truth(name)["port"]
    server = []
    for i, r in enumerate(capture.records):
        ip = r.data[14:] if capture.linktype == 1 else r.data[4:]
        ihl = (ip[0] & 15) * 4
        if int.from_bytes(ip[ihl : ihl + 2], "big") == port and ip[ihl + (ip[ihl + 12] >> 4) * 4 :]:
            server.append(i)
    return capture, server


def _server_texts(ex: Exchange) -> list[tuple[str, list[str]]]:
    """The server's text messages read whole: (event id, diagnostic codes)."""
    assert ex.messages is not None
    return [
        (json.loads(r.message.payload)["event_id"], [d.code for d in r.diagnostics])
        for r in ex.messages
        if r.message.direction == 1
        and r.message.opcode == 1
        and r.message.complete
        and r.message.payload is not None
    ]


def _realtime_calls(path: Path) -> list[Call]:
    return [it for it in run([str(path)], Options(calls=True)) if isinstance(it, Call)]


def test_http2_frames_lost_at_an_unknown_place_make_the_later_messages_suspect(
    tmp_path: Path,
) -> None:
    """A whole DATA frame of the server lost (the segment after session.updated): the
    stream resyncs at the next frame, and as the session was read while the stream went on,
    the messages read before the loss stay clean; those after it are ``ws.suspect``."""
    name = "ws_h2_realtime"
    capture, server = _h2_server_records(name)
    lost = server[5]  # SETTINGS, SETTINGS ACK, HEADERS, session.created, session.updated
    path = tmp_path / "lost.pcap"
    path.write_bytes(pcap_bytes(capture, [r for i, r in enumerate(capture.records) if i != lost]))
    (ex,) = exchanges(path)
    texts = _server_texts(ex)
    want = [r["event_id"] for r in truth(name)["received"]]
    ids = [i for i, _ in texts]
    assert ids == [i for i in want if i in ids] and len(ids) < len(want)  # none invented
    assert texts[:2] == [("event_0001", []), ("event_0002", [])]  # before the loss: clean
    assert all("ws.suspect" in codes for _, codes in texts[2:]) and texts[2:]
    assert not ex.complete
    (call,) = _realtime_calls(path)
    assert not call.complete


def test_bytes_lost_inside_an_http2_data_frame_are_a_gap_where_they_were(
    tmp_path: Path,
) -> None:
    """The server's DATA frame holding the response cut by a snap length: HTTP/2 knows how
    many bytes of the stream were lost and where, so the session has a gap there (the cut
    messages lost, no message suspect) rather than a stream that cannot be vouched for."""
    name = "ws_h2_realtime"
    capture, server = _h2_server_records(name)
    big = max(server, key=lambda i: len(capture.records[i].data))
    records = list(capture.records)
    r = records[big]
    records[big] = replace(r, data=r.data[: len(r.data) - 1200])  # orig_len stays
    path = tmp_path / "cut.pcap"
    path.write_bytes(pcap_bytes(capture, records))
    (ex,) = exchanges(path)
    assert ex.messages is not None
    codes = [d.code for r in ex.messages for d in r.diagnostics]
    assert "ws.gap" in codes and "ws.suspect" not in codes
    texts = _server_texts(ex)
    want = [r["event_id"] for r in truth(name)["received"]]
    ids = [i for i, _ in texts]
    assert ids[:3] == want[:3] and ids == [i for i in want if i in ids] and len(ids) < len(want)
    closes = [r.message for r in ex.messages if r.message.kind == "close"]
    assert [(m.direction, m.close_code) for m in closes] == [(0, 1000), (1, 1000)]
    (call,) = _realtime_calls(path)
    assert not call.complete
