"""HTTP/3 captures through the whole pipeline: exchanges and calls against the client's
own records (``truth.json`` of ``scripts/make_quic_captures.py``) and the corpus captures."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentshark.apis.model import TextPart
from agentshark.model import Exchange
from agentshark.pipeline import Options
from agentshark.quic.wire import parse_long_header

from ..faults.pcapfile import parse_udp, pcap_bytes, read_capture
from ..helpers import Collected
from ..quic.capture import CAPTURES, FILES, OWN


def _run(name: str, *, keys: bool = True, calls: bool = False) -> Collected:
    pcap, keylog = FILES[name]
    if not pcap.exists():
        pytest.skip(f"{pcap} is not here")
    keylogs = [str(keylog)] if keys and keylog is not None else []
    return Collected([str(pcap)], Options(keylogs=keylogs, calls=calls))


def _started(ex: Exchange) -> float:
    assert ex.request is not None and ex.request.started is not None
    return ex.request.started


def _truth(name: str) -> dict[str, Any]:
    return json.loads((CAPTURES / name / "truth.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", OWN)
def test_exchanges_match_the_clients_records(name: str) -> None:
    got = _run(name)
    truth = _truth(name)
    assert len(got.exchanges) == len(truth["requests"])
    for ex, want in zip(sorted(got.exchanges, key=_started), truth["requests"], strict=True):
        assert ex.transport == "h3"
        assert ex.request is not None
        assert ex.complete, ex.diagnostics
        assert ex.request.method == want["method"]
        assert ex.request.url.endswith(want["path"])
        assert ex.response is not None
        assert ex.response.status == want["status"]
        body = b"".join(piece for _, piece in ex.response.body.pieces)
        assert len(body) == want["response_bytes"]
        assert hashlib.sha256(body).hexdigest() == want["response_sha256"]
        sent = b"".join(piece for _, piece in ex.request.body.pieces)
        assert hashlib.sha256(sent).hexdigest() == want["request_sha256"]
        if "sse_data_events" in want:  # streamed: the DATA frames keep their own times
            times = [ts for ts, _ in ex.response.body.pieces]
            assert len(times) >= want["sse_data_events"] // 2
            assert times[0] < times[-1]
            # a datagram that came before the one it follows keeps its time (as a TCP
            # segment does): only the lossy relay's swaps put the times out of order
            assert times == sorted(times) or "relay" in truth
    (conn,) = got.connections
    assert conn.protocol == "h3"
    assert conn.exchanges == len(truth["requests"])
    assert conn.tls is not None and conn.tls["alpn"] == truth["connection"]["alpn"]
    assert (
        conn.tls["quic"]["version"]
        == {"0x00000001": "1", "0x6b3343cf": "2"}[truth["connection"]["version"]]
    )
    assert conn.tls["cipher_suite"] == "TLS_" + truth["connection"]["cipher_suite"]
    assert conn.tls["quic"]["not_decrypted"] == {}
    assert got.sources[-1].not_analyzed.get("udp", 0) == 0


def test_streamed_call_has_time_to_first_token() -> None:
    got = _run("h3_openai", calls=True)
    truth = _truth("h3_openai")
    streamed = [c for c in got.calls if c.stream]
    (call,) = streamed
    assert call.api == "openai.chat"
    assert call.complete
    want = truth["requests"][2]
    parts = [p for m in call.output_messages for p in m.parts]
    text = "".join(p.content for p in parts if isinstance(p, TextPart))
    assert text == want["text"]
    assert call.timing.first_token is not None
    started, ended = call.timing.started, call.timing.ended
    assert started is not None and ended is not None
    assert started < call.timing.first_token < ended
    chats = [c for c in got.calls if c.api == "openai.chat" and not c.stream]
    assert len(chats) == 1 and chats[0].complete  # the JSON chat completion


def test_key_update_retry_and_version_2_are_reported() -> None:
    got = _run("h3_v2_chacha_keyupdate")
    (conn,) = got.connections
    assert conn.tls is not None
    assert conn.tls["quic"]["retries"] == 1
    assert conn.tls["key_updates"] >= 1
    assert conn.tls["cipher_suite"] == "TLS_CHACHA20_POLY1305_SHA256"


def test_without_the_key_log_one_diagnostic_names_the_connection() -> None:
    got = _run("h3_openai", keys=False)
    assert got.exchanges == []
    (conn,) = got.connections
    assert conn.protocol == "quic"
    codes = [d.code for d in conn.diagnostics]
    assert codes.count("quic.no_keys") == 1
    (diag,) = [d for d in conn.diagnostics if d.code == "quic.no_keys"]
    assert "no key log was given" in diag.message and "ALPN offered: h3" in diag.message
    assert diag.location.endswith(conn.connection.id)


def test_corpus_chrome_google() -> None:
    got = _run("http3-connection7")
    assert len(got.exchanges) == 49
    reset = [ex for ex in got.exchanges if not ex.complete]
    assert len(reset) == 2
    assert all(any(d.code == "h2.stream_reset" for d in ex.diagnostics) for ex in reset)
    assert {ex.transport for ex in got.exchanges} == {"h3"}
    assert all(
        ex.request is not None and ex.request.url.startswith("https://www.google.com/")
        for ex in got.exchanges
    )
    (conn,) = [c for c in got.connections if c.protocol == "h3"]
    assert conn.tls is not None and conn.tls["sni"] == "www.google.com"
    assert conn.tls["early_data"] is True


def test_corpus_chrome_cloudflare() -> None:
    got = _run("chrome-cloudflare-quic")
    h3 = [ex for ex in got.exchanges if ex.transport == "h3"]
    (ex,) = h3
    assert ex.complete and ex.response is not None and ex.response.status == 200
    assert ex.request is not None and ex.request.url == "https://cloudflare-quic.com/"


def _features() -> tuple[Collected, dict[str, Any]]:
    return _run("h3_push_ws_datagram", calls=True), _truth("h3_push_ws_datagram")


def test_a_server_push_is_an_exchange_tied_to_its_promise() -> None:
    """PUSH_PROMISE on the request stream, the response on a push stream (RFC 9114 §4.6):
    the pushed exchange has the promised request and the pushed response, and says which
    request stream promised it; aioquic's client records what it was pushed."""
    got, truth = _features()
    (want,) = truth["connection"]["pushes"]
    pushed = [ex for ex in got.exchanges if any(d.code == "h3.pushed" for d in ex.diagnostics)]
    (ex,) = pushed
    assert ex.complete and ex.request is not None and ex.response is not None
    assert ex.request.method == "GET" and ex.request.url.endswith(want["path"])
    assert ex.response.status == want["status"]
    body = b"".join(piece for _, piece in ex.response.body.pieces)
    assert len(body) == want["response_bytes"]
    assert hashlib.sha256(body).hexdigest() == want["response_sha256"]
    (diag,) = [d for d in ex.diagnostics if d.code == "h3.pushed"]
    assert f"promised on stream {want['stream']}" in diag.message
    assert ex.stream is not None and int(ex.stream) & 3 == 3  # a server push stream
    (models,) = [c for c in got.calls if c.operation == "models.list"]
    assert models.complete
    (conn,) = got.connections
    assert not [d for d in conn.diagnostics if d.code.startswith("h3.push")]


def test_a_websocket_over_http3_gives_its_messages_and_realtime_calls() -> None:
    """RFC 9220: an extended CONNECT with ``:protocol: websocket`` answered 200; the
    stream's DATA are the WebSocket frames, read by the WebSocket stage as over HTTP/2."""
    got, truth = _features()
    session = truth["connection"]["websocket"]
    (ex,) = [ex for ex in got.exchanges if ex.messages is not None]
    assert ex.request is not None and ex.request.method == "CONNECT"
    assert ex.request.url.endswith(session["path"])
    assert ex.upgrade == "websocket" and ex.complete
    texts = [r.message for r in ex.messages or [] if r.message.opcode == 1]
    sent = [json.loads(m.payload or b"")["type"] for m in texts if m.direction == 0]
    received = [json.loads(m.payload or b"")["type"] for m in texts if m.direction == 1]
    assert sent == [e["type"] for e in session["sent"]]
    assert received == [e["type"] for e in session["received"]]
    calls = [c for c in got.calls if c.api == "openai.realtime"]
    assert len(calls) == 2 and all(c.complete for c in calls)
    first = [p for m in calls[0].output_messages for p in m.parts]
    assert [p.type for p in first] == ["tool_call"]


def test_version_negotiation_is_named_in_the_connection_report() -> None:
    """The client starts in QUIC version 2, the server offers version 1 in a Version
    Negotiation packet, the client starts again in version 1 (aioquic's own records)."""
    got = _run("h3_version_negotiation")
    truth = _truth("h3_version_negotiation")
    (conn,) = got.connections
    assert conn.tls is not None
    assert conn.tls["quic"]["version_negotiation"] == {
        "first_version": {"0x6b3343cf": "2"}[truth["connection"]["first_version"]],
        "offered": ["1"],
    }
    assert conn.tls["quic"]["version"] == "1"
    assert [d.code for d in conn.diagnostics].count("quic.version_negotiation") == 1


def test_http_datagrams_are_messages_of_their_request_stream() -> None:
    """RFC 9297: DATAGRAM frames whose quarter stream id names the extended CONNECT's stream
    (``:protocol: connect-udp``) come with that exchange, each with its sender, payload size
    (after the quarter stream id) and time; aioquic's client records the same."""
    got, truth = _features()
    want = truth["connection"]["datagram_session"]
    (ex,) = [ex for ex in got.exchanges if ex.datagrams]
    assert ex.request is not None and ex.request.url.endswith(want["path"])
    assert ex.stream == want["stream"] and ex.upgrade == "connect-udp"
    seen = [("server" if g.direction else "client", g.size) for g in ex.datagrams]
    assert seen == [(d["direction"], d["size"]) for d in want["datagrams"]]
    times = [g.ts for g in ex.datagrams]
    assert times == sorted(times)
    assert ex.request.started is not None and ex.request.started <= times[0]
    (conn,) = got.connections
    assert conn.tls is not None and conn.tls["quic"]["datagram_frames"] == len(seen)


def test_a_connection_seen_midway_is_named_not_left_as_udp() -> None:
    """``h3_midway`` is ``h3_openai`` without its long-header datagrams: the short headers'
    repeated destination connection ID tells QUIC; without a key log nothing can be
    decrypted, and the diagnostic says so and what to do."""
    folder = CAPTURES / "h3_midway"
    got = Collected([str(folder / "capture.pcap")], Options())
    truth = _truth("h3_midway")
    assert got.exchanges == []
    (conn,) = got.connections
    assert conn.protocol == "quic"
    assert conn.connection.server[1] == truth["server_port"]
    untaken = got.sources[-1].not_analyzed.get("udp", 0)
    assert 0 < untaken < 5
    assert sum(conn.connection.packets) + untaken == truth["datagrams"]
    assert conn.tls is not None and conn.tls["quic"]["midway"] is True
    (diag,) = conn.diagnostics
    assert diag.code == "quic.midway"
    assert f"the {untaken} before that are counted as UDP" in diag.message
    assert "Start the capture before the client connects" in diag.message


def _bodies(ex: Exchange) -> tuple[str | None, str | None]:
    return tuple(  # type: ignore[return-value]
        None if m is None else hashlib.sha256(m.body.data()).hexdigest()
        for m in (ex.request, ex.response)
    )


def test_a_midway_connection_is_opened_by_trying_the_key_log() -> None:
    """With the key log, ``h3_midway``'s short headers open with the session's 1-RTT
    secrets (found by trial: the DCID length, the key phase, the packet numbers): every
    request of ``h3_openai`` is read, roles from whose secret opened which packet. The
    requests after the first use QPACK's dynamic table, which the capture started after:
    their heads are said undecodable at once, each body with its response."""
    folder = CAPTURES / "h3_midway"
    got = Collected([str(folder / "capture.pcap")], Options(keylogs=[str(folder / "keys.log")]))
    truth = _truth("h3_midway")
    want = _truth("h3_openai")["requests"]
    (conn,) = got.connections
    assert conn.protocol == "h3" and conn.connection.server[1] == truth["server_port"]
    assert sum(conn.connection.packets) == truth["datagrams"]
    assert got.sources[-1].not_analyzed.get("udp", 0) == 0
    assert (
        conn.tls is not None and conn.tls["decrypted"] and conn.tls["quic"]["not_decrypted"] == {}
    )
    assert conn.tls["unknown"] == ["alpn", "early_data", "resumed", "sni"]
    assert "quic.midway_opened" in [d.code for d in conn.diagnostics]
    assert [_bodies(ex) for ex in got.exchanges] == [
        (r["request_sha256"], r["response_sha256"]) for r in want
    ]
    first, *rest = got.exchanges
    assert first.complete and first.request is not None and first.request.target == "/v1/models"
    for ex in rest:
        assert not ex.complete and ex.response is not None and ex.response.status == 200
        (diag,) = ex.diagnostics
        assert "before the capture started" in diag.message


def test_a_capture_from_the_servers_initial_reads_every_request(tmp_path: Path) -> None:
    """``h3_openai`` without its first datagram (the client's Initial): the server's Initial
    cannot be opened (its keys come from the lost packet's DCID), but its Handshake packet,
    coalesced after it, opens with the key log's handshake secrets by trial; from there the
    connection reads as a whole one: every request as in ``h3_openai``, the ALPN from
    EncryptedExtensions, the SNI unknown."""
    capture = read_capture(CAPTURES / "h3_openai" / "capture.pcap")
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(pcap_bytes(capture, capture.records[1:]))
    keylogs = [str(CAPTURES / "h3_openai" / "keys.log")]
    got = Collected([str(cut)], Options(keylogs=keylogs))
    whole = Collected([str(CAPTURES / "h3_openai" / "capture.pcap")], Options(keylogs=keylogs))

    def view(ex: Exchange) -> tuple[object, ...]:
        assert ex.request is not None and ex.response is not None
        return (ex.request.method, ex.request.url, ex.response.status, _bodies(ex), ex.complete)

    assert [view(ex) for ex in got.exchanges] == [view(ex) for ex in whole.exchanges]
    assert len(got.exchanges) == len(_truth("h3_openai")["requests"])
    (conn,) = got.connections
    assert (
        conn.tls is not None
        and conn.tls["alpn"] == "h3"
        and conn.tls["unknown"]
        == [
            "resumed",
            "sni",
        ]
    )
    assert conn.tls["quic"]["not_decrypted"] == {"initial_client": 1, "initial_server": 1}
    assert conn.connection.client == whole.connections[0].connection.client


def test_a_connection_without_its_initials_is_told_by_a_handshake_packet(
    tmp_path: Path,
) -> None:
    """``h3_openai`` from its client's Handshake packet on: the capture's third datagram
    (the client's Initial ACK coalesced with its Handshake packet) keeps only the Handshake
    packet, the datagrams before it are cut. The long header (version 1, in the clear)
    names the path as QUIC at once: no datagram is left as UDP."""
    capture = read_capture(CAPTURES / "h3_openai" / "capture.pcap")
    third = capture.records[2]
    udp = parse_udp(capture.linktype, third.data)
    assert udp is not None
    payload = third.data[udp.payload_offset :]
    initial = parse_long_header(payload, 0)
    assert initial.kind == "initial" and parse_long_header(payload, initial.end).kind == "handshake"
    handshake = third.data[: udp.payload_offset] + payload[initial.end :]
    cut = tmp_path / "cut.pcap"
    records = [replace(third, data=handshake, orig_len=len(handshake)), *capture.records[3:]]
    cut.write_bytes(pcap_bytes(capture, records))
    got = Collected([str(cut)], Options())
    (conn,) = got.connections
    assert conn.protocol == "quic" and got.exchanges == []
    assert got.sources[-1].not_analyzed.get("udp", 0) == 0
    assert sum(conn.connection.packets) == len(records)
    assert conn.tls is not None and conn.tls["quic"]["versions_seen"] == ["1"]
    (diag,) = conn.diagnostics
    assert diag.code == "quic.midway" and "a long header of QUIC version 1" in diag.message
