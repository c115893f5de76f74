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
