"""The loopback captures in ../shared/captures against the client's own records (truth.json)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import pytest

from agentshark.framing import decode_stream
from agentshark.framing.events import SseEvent
from agentshark.http.content import decode_body
from agentshark.model import Exchange, header
from agentshark.pipeline import ConnectionReport, Options, SourceReport
from tests.helpers import CAPTURES, Collected


def analyze(name: str) -> tuple[list[Exchange], list[ConnectionReport], SourceReport]:
    got = Collected([str(CAPTURES / name / "capture.pcap")])
    exchanges = sorted(got.exchanges, key=lambda e: e.started or 0.0)
    (source,) = got.sources
    return exchanges, got.connections, source


def truth(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CAPTURES / name / "truth.json").read_text())
    return data


def decoded(ex: Exchange) -> bytes:
    assert ex.response is not None
    body = decode_body(ex.response.body, header(ex.response.headers, "content-encoding"))
    assert not body.diagnostics
    return b"".join(p for _, p in body.pieces)


def sse_data_events(ex: Exchange) -> list[SseEvent]:
    assert ex.response is not None
    return [e for e in decode_stream(ex.response.body.pieces, "sse") if isinstance(e, SseEvent)]


def test_http1_cleartext_matches_truth() -> None:
    exchanges, conns, source = analyze("http1_cleartext")
    t = truth("http1_cleartext")
    assert len(exchanges) == t["request_count"] == len(t["requests"])
    assert source.format == "pcap" and not [d for d in source.diagnostics if d.severity == "error"]
    by_path: dict[str, list[Exchange]] = {}
    for ex in exchanges:
        assert ex.request is not None
        by_path.setdefault(ex.request.target, []).append(ex)
    for want in t["requests"]:
        ex = by_path[want["path"]].pop(0)
        assert ex.request is not None and ex.response is not None
        assert ex.request.method == want["method"]
        assert ex.response.status == want["status"]
        assert ex.response.version == want["http_version"]
        assert header(ex.response.headers, "content-type") == want["content_type"]
        assert header(ex.response.headers, "content-encoding") == want["content_encoding"]
        assert ex.complete
        if want["decoded_body_bytes"] is not None:
            assert len(decoded(ex)) == want["decoded_body_bytes"]
        if "sse_data_events" in want:
            events = sse_data_events(ex)
            data = [e for e in events if e.data != "[DONE]"]
            assert len(events) == want["sse_data_events"]  # the client counted [DONE] too
            assert (events[-1].data == "[DONE]") == want["done_marker"]
            text = "".join(
                c["delta"].get("content") or "" for e in data for c in json.loads(e.data)["choices"]
            )
            assert text == want["assembled_text"]
    assert all(c.protocol == "http/1.1" for c in conns)


def _truth_requests(t: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    """(method, path, status) per request, from the client's request/response events."""
    pending: list[list[Any]] = []
    for ev in t["http_exchanges"]:
        path = urlsplit(ev["url"]).path
        if ev["event"] == "request":
            pending.append([ev["method"], path, None])
        else:
            for p in pending:
                if p[2] is None and (p[0], p[1]) == (ev["method"], path):
                    p[2] = ev["status"]
                    break
    return sorted((m, p, s) for m, p, s in pending)


@pytest.mark.parametrize("name", ["mcp_http_plain", "a2a_jsonrpc_v03"])
def test_agent_protocol_captures_match_truth(name: str) -> None:
    exchanges, _, _ = analyze(name)
    t = truth(name)
    assert len(exchanges) == t["http_request_count"]
    got = sorted(
        (ex.request.method, urlsplit(ex.request.url).path, ex.response.status)
        for ex in exchanges
        if ex.request is not None and ex.response is not None
    )
    assert got == _truth_requests(t)


def test_mcp_sse_replies_and_early_close() -> None:
    exchanges, _, _ = analyze("mcp_http_plain")
    sse = [
        ex
        for ex in exchanges
        if ex.response is not None
        and (header(ex.response.headers, "content-type") or "").startswith("text/event-stream")
    ]
    data_events = sum(len(sse_data_events(ex)) for ex in sse)
    # tshark counts 15 data lines in the responses it could complete; we keep every response,
    # including those the client closed before the final chunk.
    assert data_events >= 15
    incomplete = [ex for ex in exchanges if not ex.complete]
    for ex in incomplete:  # usable bodies, but their HTTP message did not end
        assert ex.response is not None and not ex.response.complete


def test_websocket_capture_message_by_message() -> None:
    exchanges, conns, _ = analyze("ws_realtime_plain")
    t = truth("ws_realtime_plain")
    (ex,) = exchanges
    assert ex.request is not None and ex.response is not None
    assert ex.response.status == t["handshake"]["status"] == 101
    assert ex.upgrade == "websocket" and ex.complete and not ex.diagnostics
    assert ex.request.url == t["uri"].replace("ws://", "http://")
    (conn,) = conns
    assert conn.protocol == "http/1.1+websocket"
    assert ex.messages is not None
    messages = [r.message for r in ex.messages]
    assert all(m.complete and not r.diagnostics for m, r in zip(messages, ex.messages, strict=True))
    for direction, key in ((0, "client_sent"), (1, "client_received")):
        data = [m for m in messages if m.direction == direction and m.opcode == 1]
        assert len(data) == t["counts"]["sent" if direction == 0 else "received"]
        for m, want in zip(data, t[key], strict=True):
            assert m.payload is not None
            event = json.loads(m.payload)
            assert (event["type"], event["event_id"], m.size) == (
                want["type"],
                want["event_id"],
                want["bytes"],
            )
            # the client's clock, taken around its send or receive call, and the wire's
            assert abs((m.first_ts if direction == 0 else m.last_ts) - want["t"]) < 0.01
            if want.get("fragments", 1) > 1:  # websockets ends a fragmented message with an
                assert m.frames == want["fragments"] + 1  # empty final frame (tshark agrees)
    pings = [m for m in messages if m.kind in ("ping", "pong")]
    assert [(m.kind, m.payload) for m in pings] == [
        ("ping", t["ping_payload"].encode()),
        ("pong", t["ping_payload"].encode()),
    ]
    closes = [m for m in messages if m.kind == "close"]
    assert [(m.close_code, m.close_reason) for m in closes] == [
        (t["close"]["code"], t["close"]["reason"])
    ] * 2
    sent = sum(m.wire_size for m in messages if m.direction == 0)
    assert conn.switched_bytes[0] > sent  # frame headers and masking keys besides


@pytest.mark.parametrize(
    "name", ["https_tls13_h2", "https_tls12_h1", "llm_sdk_openai", "llm_sdk_anthropic"]
)
def test_tls_without_keys_reported_as_encrypted_connections(name: str) -> None:
    """Read without their key log (capture.pcap, no --keylog): each connection is reported
    as TLS with its handshake facts, byte counts and one diagnostic saying what to do."""
    exchanges, conns, source = analyze(name)
    t = truth(name)
    assert exchanges == []
    assert conns and all(c.protocol == "tls" for c in conns)
    for c in conns:
        assert c.tls is not None and c.tls["decrypted"] is False
        assert [d.code for d in c.diagnostics] == ["tls.no_keys"]
        if "requests" in t:  # the httpx captures record the TLS facts per request
            want = t["requests"][0]
            assert c.tls["version"] == want["tls_version"].replace("TLSv", "TLS ")
            assert want["alpn"] in c.tls["alpn_offered"]
    # Byte counts: every TCP payload byte is accounted to one direction of one connection.
    payload = sum(c.connection.bytes[0] + c.connection.bytes[1] for c in conns)
    assert payload == _tcp_payload_bytes(CAPTURES / name / "capture.pcap")
    assert all(c.connection.gaps == [0, 0] for c in conns)
    assert source.exchanges == 0


def _tcp_payload_bytes(path: Any) -> int:
    """Independent count: the distinct TCP payload bytes of an Ethernet/IPv4-or-6 pcap.

    Per direction (source address and port to destination address and port), each segment
    covers the sequence range [seq, seq + payload length) taken relative to the first
    sequence number seen in that direction (modulo 2**32, RFC 9293 section 3.4); the ranges
    are merged, so a retransmitted or overlapping range counts once.
    """
    import struct

    data = path.read_bytes()
    ranges: dict[tuple[bytes, bytes], list[tuple[int, int]]] = {}
    first: dict[tuple[bytes, bytes], int] = {}
    pos = 24
    while pos + 16 <= len(data):
        incl = struct.unpack_from("<I", data, pos + 8)[0]
        pkt = data[pos + 16 : pos + 16 + incl]
        pos += 16 + incl
        ethertype = struct.unpack_from("!H", pkt, 12)[0]
        ip = pkt[14:]
        if ethertype == 0x0800:
            ihl = (ip[0] & 15) * 4
            tot = struct.unpack_from("!H", ip, 2)[0]
            if ip[9] != 6:
                continue
            src, dst, tcp = ip[12:16], ip[16:20], ip[ihl:tot]
        elif ethertype == 0x86DD:
            if ip[6] != 6:
                continue
            src, dst = ip[8:24], ip[24:40]
            tcp = ip[40 : 40 + struct.unpack_from("!H", ip, 4)[0]]
        else:
            continue
        key = (src + tcp[0:2], dst + tcp[2:4])
        seq = struct.unpack_from("!I", tcp, 4)[0]
        length = len(tcp) - (tcp[12] >> 4) * 4
        start = (seq - first.setdefault(key, seq)) % 2**32
        if length:
            ranges.setdefault(key, []).append((start, start + length))
    total = 0
    for spans in ranges.values():
        end = -1
        for lo, hi in sorted(spans):
            total += max(0, hi - max(lo, end))
            end = max(end, hi)
    return total


# -- the TLS captures, decrypted with their key logs -------------------------------------

# Two ways each TLS capture carries its keys: the NSS key log next to it (--keylog), and a
# pcapng copy with the key log embedded as a Decryption Secrets Block (no option needed).
TLS_FORMS = {"keylog": ("capture.pcap", "keylog.txt"), "dsb": ("capture.dsb.pcapng", None)}


def analyze_tls(name: str, form: str) -> Collected:
    pcap, keys = TLS_FORMS[form]
    keylogs = [str(CAPTURES / name / keys)] if keys else []
    got = Collected([str(CAPTURES / name / pcap)], Options(keylogs=keylogs, calls=True))
    got.exchanges.sort(key=lambda e: e.started or 0.0)
    return got


def _decrypted(got: Collected, name: str) -> None:
    """Every connection decrypted, every byte accounted, no diagnostic anywhere."""
    assert got.connections and all(
        c.tls is not None and c.tls["decrypted"] for c in got.connections
    )
    assert all(c.diagnostics == [] and c.connection.gaps == [0, 0] for c in got.connections)
    assert all(not s.diagnostics for s in got.sources if s.format != "keylog")
    payload = sum(c.connection.bytes[0] + c.connection.bytes[1] for c in got.connections)
    assert payload == _tcp_payload_bytes(CAPTURES / name / "capture.pcap")
    assert all(ex.complete and not ex.diagnostics for ex in got.exchanges)


@pytest.mark.parametrize("form", sorted(TLS_FORMS))
@pytest.mark.parametrize("name", ["https_tls13_h2", "https_tls12_h1"])
def test_https_captures_decrypt_to_the_truth(name: str, form: str) -> None:
    """Each request httpx recorded, field by field, as the decrypted capture shows it."""
    got = analyze_tls(name, form)
    _decrypted(got, name)
    t = truth(name)
    assert len(got.exchanges) == t["request_count"] == len(t["requests"])
    by_path: dict[str, list[Exchange]] = {}
    for ex in got.exchanges:
        assert ex.request is not None
        by_path.setdefault(ex.request.target, []).append(ex)
    for want in t["requests"]:
        ex = by_path[want["path"]].pop(0)
        assert ex.request is not None and ex.response is not None and ex.tls is not None
        assert ex.request.method == want["method"]
        assert ex.response.status == want["status"]
        assert ex.response.version == want["http_version"]
        assert ex.stream == want["h2_stream_id"] or want["h2_stream_id"] is None
        assert ex.tls["version"] == want["tls_version"].replace("TLSv", "TLS ")
        assert ex.tls["alpn"] == want["alpn"]
        assert header(ex.response.headers, "content-type") == want["content_type"]
        assert header(ex.response.headers, "content-encoding") == want["content_encoding"]
        if want["wire_content_length"] is not None:
            assert ex.response.body.size == int(want["wire_content_length"])
            assert header(ex.response.headers, "content-length") == want["wire_content_length"]
        if want["decoded_body_bytes"] is not None:
            body = decoded(ex)
            assert len(body) == want["decoded_body_bytes"]
            if want.get("model_ids"):
                assert [m["id"] for m in json.loads(body)["data"]] == want["model_ids"]
        if "sse_data_events" in want:
            events = sse_data_events(ex)
            assert len(events) == want["sse_data_events"]
            assert (events[-1].data == "[DONE]") == want["done_marker"]
            text = "".join(
                c["delta"].get("content") or ""
                for e in events
                if e.data != "[DONE]"
                for c in json.loads(e.data)["choices"]
            )
            assert text == want["assembled_text"]
    assert not any(by_path.values())


def _request_json(ex: Exchange) -> dict[str, Any]:
    assert ex.request is not None
    body: dict[str, Any] = json.loads(b"".join(p for _, p in ex.request.body.pieces))
    return body


def _text(call: dict[str, Any]) -> str:
    return "".join(
        p["content"] for m in call["output_messages"] for p in m["parts"] if p["type"] == "text"
    )


def _tool_calls(call: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for m in call["output_messages"] for p in m["parts"] if p["type"] == "tool_call"]


def _stream_types(ex: Exchange) -> list[str]:
    """The event type of each SSE event (the ``event:`` field, else the data's "type")."""
    return [e.event or json.loads(e.data)["type"] for e in sse_data_events(ex)]


@pytest.mark.parametrize("form", sorted(TLS_FORMS))
@pytest.mark.parametrize("name", ["llm_sdk_openai", "llm_sdk_anthropic"])
def test_sdk_captures_decrypt_to_what_the_sdk_saw(name: str, form: str) -> None:
    """The official SDK's own records (its httpx request and response hooks, and the
    values its methods returned) against the decrypted capture and the calls parsed from
    it: method, URL, headers, body keys and stream flag of each request; status, version
    and content type of each response; id, text, usage, finish reason, tool calls and
    stream events of each call."""
    got = analyze_tls(name, form)
    _decrypted(got, name)
    t = truth(name)
    requests = [e for e in t["http_exchanges"] if e["event"] == "request"]
    responses = [e for e in t["http_exchanges"] if e["event"] == "response"]
    assert len(got.exchanges) == len(requests) == len(responses) == t["http_request_count"]
    for ex, req, resp in zip(got.exchanges, requests, responses, strict=True):
        assert ex.request is not None and ex.response is not None
        assert (ex.request.method, ex.request.url) == (req["method"], req["url"])
        for key, value in req["headers"].items():
            seen = header(ex.request.headers, key)
            assert seen is not None if value == "<present>" else seen == value, key
        body = _request_json(ex)
        assert sorted(body) == sorted(req["body_keys"])
        assert body.get("stream") == req["stream_flag"]
        assert resp["url"] == ex.request.url
        assert ex.response.status == resp["status"]
        assert ex.response.version == resp["http_version"]
        assert header(ex.response.headers, "content-type") == resp["content_type"]
    calls = [c.to_json() for c in got.calls]
    assert [c["exchange_id"] for c in calls] == [ex.id for ex in got.exchanges]
    for call, ex, want in zip(calls, got.exchanges, t["calls"], strict=True):
        assert call["api"] == want["api"].removesuffix(".completions")
        assert call["stream"] == want["stream"]
        assert call["complete"] and call["diagnostics"] == []
        if "id" in want:
            assert call["response_id"] == want["id"]
        if "text" in want:
            assert _text(call) == want["text"]
        finish = want.get("finish_reason") or want.get("stop_reason")
        if finish is not None:
            assert call["finish_reasons"] == [finish]
        if "usage" in want:
            usage = want["usage"]
            assert call["usage"]["input_tokens"] == usage.get(
                "prompt_tokens", usage.get("input_tokens")
            )
            assert call["usage"]["output_tokens"] == usage.get(
                "completion_tokens", usage.get("output_tokens")
            )
        for got_tool, want_tool in zip(
            _tool_calls(call), want.get("tool_calls", want.get("tool_uses", [])), strict=True
        ):
            assert (got_tool["id"], got_tool["name"]) == (want_tool["id"], want_tool["name"])
            if "input" in want_tool:
                assert got_tool["arguments"] == want_tool["input"]
            else:
                assert got_tool["arguments_raw"] == want_tool["arguments"]
        if "event_types" in want:
            # The anthropic SDK's stream skips "ping" events; the wire has them.
            types = [t for t in _stream_types(ex) if t != "ping"]
            assert types == want["event_types"] and len(types) == want["events"]
        if "chunks" in want:  # the SDK stops at [DONE] and does not count it
            assert len([e for e in sse_data_events(ex) if e.data != "[DONE]"]) == want["chunks"]
