"""The capture-gap paths end to end, each reached by one targeted fault on a real capture:
body gaps (``http/exchange.py``), gaps inside a head or chunk framing (``http/h1.py``), gaps
before and during protocol sniffing (``pipeline/connection.py``), inside an HTTP/2 DATA
payload and across a whole frame, and inside a TLS stream. Each asserts the diagnostic codes
and ``gap_bytes`` the lost bytes must produce, and that every exchange and call the gap did not
touch comes out identical to the clean run."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentshark.model import Exchange
from tests.faults.cases import BY_NAME
from tests.faults.harness import Run, Verdict, affected_flags, analyze, clean_run, judge
from tests.faults.inject import Pkt, index_packets, rewrite


@dataclass(slots=True)
class Case:
    clean: Run
    faulted: Run
    verdicts: list[Verdict]
    lost: int  # payload bytes the fault removed

    def exchange(self, pred: Callable[[Exchange], bool]) -> Exchange:
        (ex,) = [it.exchange for it in self.faulted.exchanges if it.exchange and pred(it.exchange)]
        return ex

    def connection_gaps(self) -> list[tuple[int, int]]:
        return [tuple(c.connection.gaps) for c in self.faulted.collected.connections]  # type: ignore[misc]

    def connection_codes(self) -> list[str]:
        return [
            f"{d.code}: {d.message}"
            for c in self.faulted.collected.connections
            for d in c.diagnostics
        ]

    def others(self, ex: Exchange) -> list[Verdict]:
        """Verdicts of the exchanges and calls other than clean ``ex``'s that are not
        identical."""
        mine = (f"at {ex.started}", f"(exchange {ex.id})")
        return [
            v
            for v in self.verdicts
            if v.outcome != "identical" and not any(m in v.what for m in mine)
        ]


def _target(ex: Exchange | None) -> str:
    return ex.request.target if ex is not None and ex.request is not None else ""


def _run(name: str, *, drop: int | None = None, cut: tuple[int, int] | None = None) -> Case:
    inp = BY_NAME[name]
    capture, clean = clean_run(inp.path, inp.keylog)
    data, touches = rewrite(
        capture,
        drop=frozenset({drop} if drop is not None else ()),
        cut=dict([cut]) if cut is not None else None,
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "faulted.pcap"
        path.write_bytes(data)
        faulted = analyze(path, inp.keylog)
    verdicts = judge(clean, faulted, affected_flags(capture, clean, touches))
    return Case(clean, faulted, verdicts, sum(t.end - t.start for t in touches))


def _sse(ex: Exchange) -> bool:
    ctype = [
        v for k, v in (ex.response.headers if ex.response else []) if k.lower() == "content-type"
    ]
    return bool(ctype) and ctype[0].startswith("text/event-stream")


def _pick(name: str, target: str, *, sse: bool = False) -> Exchange:
    """The clean run's exchange for ``target`` (the streamed one with ``sse``, else the first)."""
    inp = BY_NAME[name]
    _, clean = clean_run(inp.path, inp.keylog)
    found = [
        it.exchange
        for it in clean.exchanges
        if it.exchange and _target(it.exchange) == target and (_sse(it.exchange) or not sse)
    ]
    return found[0]


def _segments(name: str, ex: Exchange, *, response: bool = True) -> list[Pkt]:
    """The data segments of ``ex``'s response (or request), in order: those of its direction
    time-stamped from the message's first to its last byte."""
    inp = BY_NAME[name]
    capture, clean = clean_run(inp.path, inp.keylog)
    packets, _ = index_packets(capture)
    assert ex.request is not None and ex.response is not None
    msg = ex.response if response else ex.request
    conn = next(
        c.connection for c in clean.collected.connections if c.connection.id == ex.connection
    )
    src, dst = (conn.server, conn.client) if response else (conn.client, conn.server)
    assert msg.started is not None and msg.ended is not None
    return [
        p
        for p in packets
        if p.data
        and p.tcp is not None
        and p.tcp.flow == (*src, *dst)
        and msg.started <= p.ts <= msg.ended
    ]


def test_h1_body_gap_in_a_content_length_body() -> None:
    large = _pick("http1_cleartext", "/large")
    seg = _segments("http1_cleartext", large)[1]  # the head is the first segment
    case = _run("http1_cleartext", drop=seg.index)
    ex = case.exchange(lambda e: _target(e) == "/large")
    assert ex.response is not None and not ex.response.complete and not ex.complete
    assert ex.response.body.gap_bytes == case.lost == seg.end - seg.start == 32768
    assert [d.code for d in ex.diagnostics] == ["http.body_gap"]
    assert (0, 32768) in case.connection_gaps()
    assert case.others(large) == []


def test_h1_gap_between_chunks_of_an_sse_stream() -> None:
    stream = _pick("http1_cleartext", "/v1/chat/completions", sse=True)
    sse = _segments("http1_cleartext", stream)[3]  # a chunk of the streamed reply
    case = _run("http1_cleartext", drop=sse.index)
    ex = case.exchange(lambda e: e.response is not None and e.response.body.gap_bytes > 0)
    assert ex.response is not None and not ex.response.complete
    assert ex.response.body.gap_bytes == case.lost == sse.end - sse.start
    assert "http.body_gap" in [d.code for d in ex.diagnostics]
    assert case.others(stream) == []


def test_h1_gap_inside_a_chunk_header() -> None:
    """A segment cut after the first byte of its chunk-size line: the chunk framing is lost,
    the message ends incomplete with the lost bytes counted."""
    seg = _segments("agent_chat", _pick("agent_chat", "/v1/chat/completions", sse=True))[2]
    case = _run("agent_chat", cut=(seg.index, 1))
    ex = case.exchange(lambda e: e.response is not None and e.response.body.gap_bytes > 0)
    assert ex.response is not None and not ex.response.complete and not ex.complete
    assert ex.response.body.gap_bytes == case.lost == seg.end - seg.start - 1
    assert "http.body_gap" in [d.code for d in ex.diagnostics]
    assert any(c.startswith("tcp.snaplen") for c in case.connection_codes())
    assert not [v for v in case.verdicts if v.violation]


def test_h1_gap_inside_a_response_head() -> None:
    """The head of the second response cut after 40 bytes: a parse error at the connection,
    that exchange says it is incomplete, and every other exchange parses as if nothing
    happened (the next response is not paired with the request whose answer was lost)."""
    chat = _pick("http1_cleartext", "/v1/chat/completions")
    head = _segments("http1_cleartext", chat)[0]
    case = _run("http1_cleartext", cut=(head.index, 40))
    assert case.lost == head.end - head.start - 40 == 90
    assert (0, 90) in case.connection_gaps()
    assert any(
        c.startswith("http.parse_error: a capture gap of 90 bytes") and "cut a message head" in c
        for c in case.connection_codes()
    )
    assert not [v for v in case.verdicts if v.violation], case.verdicts
    assert case.others(chat) == []


def _first_request(name: str, target: str) -> Pkt:
    return _segments(name, _pick(name, target), response=False)[0]


def test_gap_during_sniffing() -> None:
    """The first segment of a connection cut to 2 bytes: those are held while the protocol is
    sniffed, then the gap comes. The answer is still reported, unpaired: its request was
    lost (``http.request_lost``, the code of the acknowledgment-based pairing)."""
    seg = _first_request("http1_cleartext", "/compressed/br")
    case = _run("http1_cleartext", cut=(seg.index, 2))
    assert (seg.end - seg.start - 2, 0) in case.connection_gaps()
    ex = case.exchange(lambda e: e.request is None)
    assert ex.response is not None and ex.response.status == 200 and not ex.complete
    assert "http.request_lost" in [d.code for d in ex.diagnostics]  # lost in a client gap
    assert any("cut a message head short" in c for c in case.connection_codes())
    assert not [v for v in case.verdicts if v.violation]


def test_gap_before_sniffing() -> None:
    """The whole first segment of a connection lost: nothing of the client to sniff, but the
    server's answer is HTTP/1.1 and is kept, unpaired, its request lost."""
    seg = _first_request("http1_cleartext", "/compressed/br")
    case = _run("http1_cleartext", drop=seg.index)
    assert (seg.end - seg.start, 0) in case.connection_gaps()
    kept = [it.exchange for it in case.faulted.exchanges if it.exchange and not it.exchange.request]
    assert len(kept) == 1, "the response to the lost request is not reported"
    ex = kept[0]
    assert ex.response is not None and ex.response.status == 200 and not ex.complete
    assert "http.request_lost" in [d.code for d in ex.diagnostics]
    assert not [v for v in case.verdicts if v.violation]


def _first_client_segment(name: str, method: str) -> tuple[Exchange, Pkt]:
    """The first clean exchange of ``method`` that opens a connection of 3 exchanges or more,
    and the client's first data segment of that connection."""
    inp = BY_NAME[name]
    capture, clean = clean_run(inp.path, inp.keylog)
    per_conn: dict[str | None, int] = {}
    for it in clean.exchanges:
        if it.exchange:
            per_conn[it.exchange.connection] = per_conn.get(it.exchange.connection, 0) + 1
    ex = next(
        it.exchange
        for it in clean.exchanges
        if it.exchange
        and it.exchange.request is not None
        and it.exchange.request.method == method
        and per_conn[it.exchange.connection] >= 3
    )
    conn = next(
        c.connection for c in clean.collected.connections if c.connection.id == ex.connection
    )
    packets, _ = index_packets(capture)
    first = next(
        p
        for p in packets
        if p.data and p.tcp is not None and p.tcp.flow == (*conn.client, *conn.server)
    )
    return ex, first


def _wire_opening_lost(name: str, method: str) -> None:
    """The client's first segment of a wire-protocol connection lost: the protocol is
    recognized from the client's bytes after the gap (``WireProtocol.resumable``), and every
    exchange of the connection but the lost one comes out identical."""
    ex, seg = _first_client_segment(name, method)
    case = _run(name, drop=seg.index)
    assert (seg.end - seg.start, 0) in case.connection_gaps()
    same = [
        it.exchange
        for it in case.faulted.exchanges
        if it.exchange and it.exchange.connection == ex.connection
    ]
    clean_conn = [
        it.exchange
        for it in case.clean.exchanges
        if it.exchange and it.exchange.connection == ex.connection
    ]
    assert len(same) == len(clean_conn) - 1 >= 2, "the connection was not recognized"
    assert case.others(ex) == []
    assert not [v for v in case.verdicts if v.violation]


def test_kafka_connection_whose_first_request_was_lost() -> None:
    _wire_opening_lost("kafka_confluent", "ApiVersions")


def test_redis_connection_whose_first_command_was_lost() -> None:
    _wire_opening_lost("redis_py", "HELLO")


def test_h2_gap_inside_a_data_payload() -> None:
    large = _pick("h2c_prior_knowledge", "/large")
    seg = _segments("h2c_prior_knowledge", large)[1]  # HEADERS first, then DATA frames
    case = _run("h2c_prior_knowledge", cut=(seg.index, 100))
    ex = case.exchange(lambda e: _target(e) == "/large")
    assert ex.response is not None and not ex.complete
    assert ex.response.body.gap_bytes == case.lost == seg.end - seg.start - 100
    assert [d.code for d in ex.diagnostics] == ["http.body_gap"]
    assert case.others(large) == []


def test_h2_lost_frame_costs_only_its_stream() -> None:
    """A whole DATA frame of the streamed chat reply (stream 5) lost, at a frame boundary:
    what the lost bytes held is not known, but the evidence bounds it. The segment after
    the gap acknowledged only the client bytes before stream 7's request, so streams 7, 9
    and 11 (requested later) cannot have frames in it; stream 5 was the only open one, and
    its next DATA frame shows that its END_STREAM (trailers, a header block) was not lost,
    with push off (the client's SETTINGS_ENABLE_PUSH 0, acknowledged): no header block was
    lost, the server's HPACK table is whole, and 7, 9, 11 are identical to the clean run."""
    stream = _pick("h2c_prior_knowledge", "/v1/chat/completions", sse=True)
    segs = _segments("h2c_prior_knowledge", stream)
    case = _run("h2c_prior_knowledge", drop=segs[len(segs) // 2].index)
    assert any(c.startswith("http.parse_error") for c in case.connection_codes())
    assert not case.exchange(lambda e: e.stream == stream.stream).complete
    assert case.others(stream) == []


def test_h2_lost_frame_while_another_stream_was_open_costs_both() -> None:
    """The DATA segment of stream 7 (/compressed/gzip) lost: streams 7 and 9 were requested
    in one client segment, which the server had acknowledged when it sent the lost bytes,
    so they may hold stream 9's response head too: both are marked, and since a header
    block may be lost, so is stream 11's response, which indexes the server's older HPACK
    entries. The one-stream cost is not knowable here; nothing complete differs, and the
    streams that had ended (1, 3, 5) are identical."""
    gzip = _pick("h2c_prior_knowledge", "/compressed/gzip")
    segs = _segments("h2c_prior_knowledge", gzip)
    case = _run("h2c_prior_knowledge", drop=segs[1].index)  # HEADERS first, then the DATA
    assert not [v for v in case.verdicts if v.violation]
    marked = {
        it.exchange.stream
        for it in case.faulted.exchanges
        if it.exchange is not None and not it.exchange.complete
    }
    assert marked == {7, 9, 11}


def _tls_case(name: str, *, sse: bool) -> tuple[Case, Pkt, Exchange]:
    stream = _pick(name, "/v1/chat/completions", sse=sse)
    segs = _segments(name, stream)
    seg = segs[len(segs) // 2]
    return _run(name, drop=seg.index), seg, stream


def test_tls12_gap_costs_one_record() -> None:
    """One segment (one record) of a streamed reply lost over TLS 1.2: that exchange is
    incomplete, decryption resumes at the next record, every other exchange is identical."""
    case, seg, stream = _tls_case("https_tls12_h1", sse=True)
    assert (0, seg.end - seg.start) in case.connection_gaps()
    assert not case.exchange(lambda e: e.started == stream.started).complete
    assert case.others(stream) == []


def test_tls13_gap_costs_one_record() -> None:
    """The same over TLS 1.3 (ChaCha20-Poly1305): the plain chat reply's record lost, the
    streamed reply after it on the same connection identical."""
    case, seg, stream = _tls_case("tls13_chacha20_h1", sse=False)
    assert (0, seg.end - seg.start) in case.connection_gaps()
    assert not case.exchange(lambda e: e.started == stream.started).complete
    assert case.others(stream) == []
