"""HTTP/2 after a capture gap, at the decoder: the plaintext of real connections (h2c, gRPC,
and TLS 1.3 h2 decrypted with its key log) fed again with a hole, every exchange compared
with the clean run's: identical, or marked incomplete with a diagnostic naming the gap."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from agentshark.http.events import MessageEnded
from agentshark.http.exchange import ExchangeAssembler
from agentshark.http.h2 import PREFACE, H2Connection
from agentshark.model import Exchange
from agentshark.pipeline import Options, run
from tests.helpers import CAPTURES
from tests.http.test_h2_loss import classify, exchange_key

Transcript = list[tuple[int, bytes, int]]  # direction, bytes, what their segment acked
Hole = tuple[int, int, int]  # direction, stream offset, size

CASES = {
    "h2c_prior_knowledge": (),
    "grpc_h2c": (),
    "https_tls13_h2": ("keylog.txt",),
}


def record(name: str) -> Transcript:
    """The bytes the pipeline feeds to the capture's (one) HTTP/2 connection, in order,
    with the ACK number (as an offset of the other direction) of the segment each came in."""
    fed: Transcript = []
    original = H2Connection.feed

    def spy(self: H2Connection, direction: int, data: bytes, ts: float, acked: int = -1) -> Any:
        fed.append((direction, bytes(data), acked))
        return original(self, direction, data, ts, acked)

    keylogs = [str(CAPTURES / name / k) for k in CASES[name]]
    with mock.patch.object(H2Connection, "feed", spy):
        for _ in run([str(CAPTURES / name / "capture.pcap")], Options(keylogs=keylogs)):
            pass
    return fed


def replay(
    transcript: Transcript, hole: Hole | None = None, *, acks: bool = True
) -> tuple[list[Exchange], list[str]]:
    """Exchanges of ``transcript`` fed to a fresh decoder, without the bytes of ``hole``
    (reported with ``gap``), with the segments' ACK numbers (``acks``) or without; also
    every diagnostic message."""
    ids = count(1)
    asm = ExchangeAssembler(
        source=0,
        connection="c1",
        transport="h2",
        scheme="http",
        server="server:80",
        next_id=lambda: f"x{next(ids)}",
    )
    conn = H2Connection()
    out: list[Exchange] = []
    seen = [0, 0]
    for direction, chunk, acked in transcript:
        start = seen[direction]
        seen[direction] += len(chunk)
        pieces: list[bytes | int] = [chunk]
        if hole is not None and hole[0] == direction:
            lo = max(hole[1] - start, 0)
            hi = min(hole[1] + hole[2] - start, len(chunk))
            if lo < hi:  # one gap for the whole hole, where it starts (as TCP says it)
                size = hole[2] if hole[1] >= start else 0
                pieces = [chunk[:lo], size, chunk[hi:]]
        for piece in pieces:
            if isinstance(piece, int):
                if piece:
                    out += asm.handle(conn.gap(direction, piece, 1.0))
            elif piece:
                out += asm.handle(conn.feed(direction, piece, 1.0, acked if acks else -1))
    for direction in (1, 0):
        out += asm.handle(conn.end(direction, 2.0, clean=True))
    out += asm.close()
    messages = [d.message for d in asm.diagnostics]
    messages += [d.message for ex in out for d in ex.diagnostics]
    return out, messages


def frames(transcript: Transcript, direction: int) -> list[tuple[int, int, int, int]]:
    """(offset, length, type, stream) of each frame ``direction`` sent."""
    raw = b"".join(c for d, c, _ in transcript if d == direction)
    pos = len(PREFACE) if direction == 0 else 0
    found = []
    while pos + 9 <= len(raw):
        hi, lo, ftype, _, sid = struct.unpack_from(">HBBBL", raw, pos)
        length = hi << 8 | lo
        found.append((pos, length, ftype, sid & 0x7FFFFFFF))
        pos += 9 + length
    return found


def needs(name: str) -> pytest.MarkDecorator:
    path: Path = CAPTURES / name / "capture.pcap"
    return pytest.mark.skipif(not path.exists(), reason=f"{path} not available")


@pytest.fixture(scope="module", params=list(CASES))
def capture(request: pytest.FixtureRequest) -> tuple[str, Transcript, list[Exchange]]:
    name: str = request.param
    if not (CAPTURES / name / "capture.pcap").exists():
        pytest.skip(f"{name} not available")
    transcript = record(name)
    clean, _ = replay(transcript)
    assert clean and all(ex.complete for ex in clean)
    return name, transcript, clean


def holes(transcript: Transcript, seed: int) -> list[Hole]:
    """Whole frames, frame headers, parts of frames and random spans, both directions."""
    rnd = random.Random(seed)
    found: list[Hole] = []
    for direction in (0, 1):
        for offset, length, _, _ in frames(transcript, direction):
            found.append((direction, offset, 9 + length))  # a whole frame
            found.append((direction, offset, 9))  # its header
            if length > 2:
                found.append((direction, offset + 9 + rnd.randrange(length - 1), 1))
                found.append((direction, offset + rnd.randrange(9), rnd.randrange(2, 40)))
        total = sum(len(c) for d, c, _ in transcript if d == direction)
        found += [(direction, rnd.randrange(total), rnd.randrange(1, 3000)) for _ in range(20)]
    return found


def test_every_hole_leaves_exchanges_identical_or_incomplete(
    capture: tuple[str, Transcript, list[Exchange]],
) -> None:
    name, transcript, clean = capture
    totals = {"identical": 0, "incomplete": 0, "different": 0}
    for hole in holes(transcript, seed=10):
        got, _ = replay(transcript, hole)
        counts = classify(clean, got)
        assert not counts["different"], f"{name}: the hole {hole} changed a complete exchange"
        for k, v in counts.items():
            totals[k] += v
    assert totals["identical"] > totals["different"] == 0


def by_stream(exchanges: list[Exchange]) -> dict[int | None, Exchange]:
    return {ex.stream: ex for ex in exchanges}


def check_only(
    clean: list[Exchange], got: list[Exchange], marked: Callable[[int], bool]
) -> dict[int | None, Exchange]:
    """The exchanges of the streams ``marked`` says are incomplete; every other one is
    identical to the clean run."""
    faulty = by_stream(got)
    for ex in clean:
        assert ex.stream is not None
        if marked(ex.stream):
            assert not faulty[ex.stream].complete, f"stream {ex.stream} should be marked"
        else:
            assert exchange_key(faulty[ex.stream]) == exchange_key(ex), f"stream {ex.stream}"
    return faulty


@needs("h2c_prior_knowledge")
def test_part_of_a_data_frame_costs_its_stream_only() -> None:
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    data = [f for f in frames(transcript, 1) if f[2] == 0 and f[1] > 1000]
    offset, length, _, sid = data[1]
    # a hole from inside its payload past its end and over the next frame's header: the
    # next frame of the same stream is found by resync, the stream is marked
    got, messages = replay(transcript, (1, offset + 100, length))
    faulty = check_only(clean, got, lambda s: s == sid)
    response = faulty[sid].response
    assert response is not None and response.body.gap_bytes == length - 91
    gap = f"a capture gap of {length} bytes at server byte {offset + 100}"
    assert any(m.startswith(gap) for m in messages)


@needs("h2c_prior_knowledge")
def test_a_lost_frame_header_resyncs_on_the_next_frame() -> None:
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    data = [f for f in frames(transcript, 1) if f[2] == 0 and f[1] > 1000]
    offset, _, _, sid = data[1]
    got, messages = replay(transcript, (1, offset, 9))
    faulty = check_only(clean, got, lambda s: s == sid)
    response = faulty[sid].response
    assert response is not None and not response.complete
    # the frames of the stream after the lost one are still collected
    clean_response = by_stream(clean)[sid].response
    assert clean_response is not None
    assert 0 < response.body.size < clean_response.body.size
    gap = f"a capture gap of 9 bytes at server byte {offset}"
    assert any(d.message.startswith(gap) for d in faulty[sid].diagnostics)
    assert any(m.startswith(gap) and "may be lost" in m for m in messages)


@needs("h2c_prior_knowledge")
def test_a_lost_header_block_marks_the_blocks_that_used_its_entries() -> None:
    """The first request's HEADERS added the client's dynamic table entries (authority,
    user-agent...): the later requests that index them are marked, the responses are
    untouched, and nothing complete differs."""
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    offset, length, _, sid = next(f for f in frames(transcript, 0) if f[2] == 1)
    got, messages = replay(transcript, (0, offset, 9 + length))
    faulty = by_stream(got)
    for ex in clean:
        found = faulty[ex.stream]
        assert found.response is not None and ex.response is not None
        assert found.response == ex.response or ex.stream == sid
        assert not found.complete
    assert any("refer to dynamic table entries" in m for m in messages)
    request = faulty[sid].request
    assert request is None or request.method == "?"


@needs("h2c_prior_knowledge")
def test_a_cut_header_block_keeps_its_frame_boundary() -> None:
    """A hole inside a response HEADERS frame: the frame's length is known, so the frames
    after it are read in place; its stream is marked, and the server's table is
    forgotten."""
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    heads = [f for f in frames(transcript, 1) if f[2] == 1]
    offset, length, _, sid = heads[2]
    got, messages = replay(transcript, (1, offset + 12, length - 6))
    faulty = by_stream(got)
    assert not faulty[sid].complete
    assert any(m.startswith("a capture gap of") and "cut a HEADERS frame" in m for m in messages)
    assert not any("skipped" in m for m in messages)
    for ex in clean:
        if ex.stream is not None and ex.stream < sid:
            assert exchange_key(faulty[ex.stream]) == exchange_key(ex)


# -- what a gap costs, decided by evidence (h2_gaps.settle) ----------------------------------


def server_frame(transcript: Transcript, sid: int, nth: int, ftype: int = 0) -> tuple[int, int]:
    """(offset, size with its header) of the ``nth`` frame of ``ftype`` the server sent on
    ``sid``."""
    found = [(o, 9 + n) for o, n, t, s in frames(transcript, 1) if t == ftype and s == sid]
    return found[nth]


def client_frame(transcript: Transcript, sid: int, ftype: int, nth: int = 0) -> tuple[int, int]:
    found = [(o, 9 + n) for o, n, t, s in frames(transcript, 0) if t == ftype and s == sid]
    return found[nth]


@needs("h2c_prior_knowledge")
def test_a_gap_wholly_inside_a_data_payload_costs_that_frame_only() -> None:
    """The frame header was seen, so its stream and length are known: a BodyGap on that
    stream, parsing goes on at the next frame boundary (no resync, no skipped bytes), HPACK
    is untouched, and every other stream is identical, with ACK numbers or without."""
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    offset, size = server_frame(transcript, 5, 3)  # a DATA frame in the middle of the SSE reply
    hole = (1, offset + 9 + 20, size - 9 - 40)
    for acks in (True, False):
        got, messages = replay(transcript, hole, acks=acks)
        faulty = check_only(clean, got, lambda s: s == 5)
        response = faulty[5].response
        assert response is not None and response.body.gap_bytes == size - 49
        assert not any("skipped" in m or "lost frames" in m for m in messages)


@needs("h2c_prior_knowledge")
def test_a_lost_data_frame_of_the_only_open_stream_costs_that_stream() -> None:
    """A whole DATA frame of stream 5 lost at a frame boundary. The segment after the gap
    acknowledged the client only up to stream 7's request: 7, 9 and 11 were requested after
    the lost bytes were sent, so they have no frame in them; 5 was the only open stream, its
    next DATA frame shows its END_STREAM was not lost, push is off: no header block was
    lost, and 7, 9, 11 decode as in the clean run. Without ACK numbers nothing bounds what
    the server had been asked, so the server's older HPACK entries are given up (those
    streams are marked, never different)."""
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    offset, size = server_frame(transcript, 5, 4)
    got, messages = replay(transcript, (1, offset, size))
    faulty = check_only(clean, got, lambda s: s == 5)
    gap = f"a capture gap of {size} bytes"
    assert any(d.message.startswith(gap) for d in faulty[5].diagnostics)
    assert not any("dynamic table" in m for m in messages)
    blind, _ = replay(transcript, (1, offset, size), acks=False)
    assert classify(clean, blind)["different"] == 0
    assert not by_stream(blind)[7].complete


@needs("h2c_prior_knowledge")
def test_a_lost_frame_while_two_streams_were_open_costs_both_and_the_hpack_tail() -> None:
    """Streams 7 and 9 were requested in one segment; a whole DATA frame of 7 is lost. The
    server had received both requests when it sent the lost bytes, so they may hold frames
    of 9 as well, its response head among them: 7 and 9 are marked, and since a header
    block may be lost the server's older HPACK entries are unknown, so stream 11's response
    (which indexes them) is marked too. Streams 1, 3 and 5 had ended: identical. The
    one-stream cost is not knowable here; the sound outcome is this."""
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    offset, size = server_frame(transcript, 7, 0)
    got, _ = replay(transcript, (1, offset, size))
    faulty = check_only(clean, got, lambda s: s in (7, 9, 11))
    assert any("may be lost" in d.message for d in faulty[9].diagnostics)
    assert any("dynamic table entries" in d.message for d in faulty[11].diagnostics)


@needs("h2c_prior_knowledge")
def test_a_lost_client_frame_with_no_header_block_leaves_hpack_whole() -> None:
    """The client's WINDOW_UPDATE after stream 5's request head (13 bytes) lost: stream 5's
    request (its body still open) is marked; its next DATA frame and the next new stream
    (7, the next id) prove no header block was lost, so the later requests, which index
    the client's older entries, are identical."""
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    offset, size = client_frame(transcript, 5, 8)
    got, _ = replay(transcript, (0, offset, size))
    faulty = check_only(clean, got, lambda s: s == 5)
    request = faulty[5].request
    assert request is not None and not request.complete


@needs("h2c_prior_knowledge")
def test_a_lost_empty_data_frame_is_too_small_for_a_header_block() -> None:
    """9 bytes (stream 3's empty DATA with END_STREAM) cannot hold an HPACK entry: only
    stream 3's request is cost."""
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    offset, size = client_frame(transcript, 3, 0, nth=1)
    assert size == 9
    check_only(clean, replay(transcript, (0, offset, size))[0], lambda s: s == 3)


@needs("h2c_prior_knowledge")
def test_a_lost_request_head_makes_its_response_request_lost() -> None:
    """Stream 7's request HEADERS lost: its response is still reported, without a request,
    as ``http.request_lost`` naming the gap; the next new stream is 9, not 7, so a lost
    HEADERS may have added client entries: the later requests that index older ones are
    marked, and streams 1, 3, 5 are identical."""
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    offset, size = client_frame(transcript, 7, 1)
    got, _ = replay(transcript, (0, offset, size))
    faulty = check_only(clean, got, lambda s: s >= 7)
    lost = faulty[7]
    assert lost.request is None and lost.response is not None
    assert lost.response.status == 200
    codes = [(d.code, d.message) for d in lost.diagnostics]
    assert any(
        c == "http.request_lost" and m.startswith(f"a capture gap of {size} bytes at client")
        for c, m in codes
    )


@pytest.mark.parametrize("held", [b"PRI * HTTP/2.0\r\n", b"PRI * HT"])
def test_a_held_maybe_preface_flushed_at_the_end_is_no_exception(held: bytes) -> None:
    """Fuzz finding (ValueError in ``_resync_held``): bytes held while deciding whether a
    mid-connection capture starts with a preface, then the direction's end. Every held piece
    has its arrival time, whatever the mode that held it."""
    conn = H2Connection(expect_preface=False)
    out = conn.feed(0, held, 1.0) + conn.feed(0, b"\x00\x00", 1.5)
    out += conn.end(0, 2.0, clean=False)
    assert all(not isinstance(e, MessageEnded) or not e.complete for e in out)


@needs("h2c_prior_knowledge")
def test_lost_client_bytes_that_can_hold_a_reset_mark_the_responses_in_flight() -> None:
    """13 lost client bytes (stream 5's WINDOW_UPDATE) could have been a RST_STREAM
    (RFC 9113 §6.4) of any stream whose response had not ended: a capture without the loss
    would then not count the server's frames after it. Stream 5's response, in flight, is
    marked with a diagnostic saying so, its frames still added; the streams that had ended
    are identical. 9 lost bytes (stream 3's empty DATA) cannot hold a reset: no response is
    marked."""
    transcript = record("h2c_prior_knowledge")
    clean, _ = replay(transcript)
    offset, size = client_frame(transcript, 5, 8)
    assert size == 13
    got, _ = replay(transcript, (0, offset, size))
    faulty = check_only(clean, got, lambda s: s == 5)
    response = faulty[5].response
    kept = by_stream(clean)[5].response
    assert response is not None and kept is not None and not response.complete
    assert response.body.data() == kept.body.data()
    assert any("may have reset this stream" in d.message for d in faulty[5].diagnostics)
    offset, size = client_frame(transcript, 3, 0, nth=1)
    _, messages = replay(transcript, (0, offset, size))
    assert not any("may have reset" in m for m in messages)
