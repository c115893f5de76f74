"""HPACK state after a loss, judged by the independent reader of :mod:`tests.faults.hpack_deps`.

An exchange whose own bytes no fault touched but whose header blocks reference dynamic table
entries that a lost block inserted (or that it moved) is *affected only through state*. Where
agentshark cannot resolve such a reference, the exchange must say ``complete: false`` with a
diagnostic that names the missing dynamic table entries, and every other field of the block
(static indexes, literals: what an observer without the table still reads) must be there.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.faults.cases import BY_NAME
from tests.faults.harness import (
    clean_run,
    lost_times,
    match,
    message_hits,
    reset_flags,
    run_case,
    state_flags,
)
from tests.faults.hpack_deps import Block, header_blocks, representations, state_dependent
from tests.faults.inject import FAULTS, Pkt, Touch, index_packets
from tests.faults.pcapfile import Capture, Flow

H2_INPUTS = ("h2c_prior_knowledge", "grpc_h2c", "https_tls13_h2", "h2c_upgrade")
LOSSY = sorted(f for f in FAULTS if not FAULTS[f].lossless and f != "truncate_file")
SEEDS = (1, 2)
UNKNOWN_ENTRIES = "refer to dynamic table entries the capture did not show"


def _check(name: str, fault: str, seed: int) -> tuple[int, int]:
    """Asserts the rule above for one case; returns (state-only exchanges, of them marked)."""
    inp = BY_NAME[name]
    capture, clean = clean_run(inp.path, inp.keylog)
    result = run_case(inp.name, inp.path, inp.keylog, fault, seed)
    assert result.faulted is not None
    hits, orphans = message_hits(capture, clean, result.touches)
    state = state_flags(clean, hits, orphans)
    reset = reset_flags(clean, lost_times(capture, result.touches))  # (another cause)
    pairs, _, _ = match(clean.exchanges, result.faulted.exchanges)
    blocks = [b for c, s in clean.h2_bytes.values() for b in header_blocks(c, s)]
    seen = marked = 0
    for i, it in enumerate(clean.exchanges):
        if not state[i] or any(hits[i]) or reset[i] or i not in pairs:
            continue
        seen += 1
        got = result.faulted.exchanges[pairs[i]]
        if got.content == it.content:
            continue
        marked += 1
        assert not got.complete, f"{it.exchange_id}: complete and different"
        assert any(UNKNOWN_ENTRIES in d for d in got.diagnostics), got.diagnostics
        ex, clean_ex = got.exchange, it.exchange
        assert ex is not None and clean_ex is not None
        for b in blocks:
            if b.stream != clean_ex.stream:
                continue
            msg = ex.request if b.side == 0 else ex.response
            fields = [*msg.headers, *msg.trailers] if msg else []
            kept = Counter((k.lower(), v) for k, v in fields)
            for (k, v), source in zip(b.fields, b.sources, strict=True):
                if not source and not k.startswith(":"):
                    assert kept[(k, v)], f"{it.exchange_id} side {b.side}: {k} lost"
                    kept[(k, v)] -= 1
    return seen, marked


def test_state_only_exchanges_are_marked_and_keep_their_other_fields() -> None:
    seen = marked = 0
    for name in H2_INPUTS:
        for fault in LOSSY:
            for seed in SEEDS:
                s, m = _check(name, fault, seed)
                seen, marked = seen + s, marked + m
    assert marked, "no case of an unknowable reference: the test would prove nothing"
    assert seen > marked, "no state-only exchange was recovered: the test would prove less"


def _block(*reps: bytes) -> bytes:
    return b"".join(reps)


# RFC 7541 C.3: three requests on one connection, the second and third reusing entries
C3 = (
    bytes.fromhex("828684410f7777772e6578616d706c652e636f6d"),
    bytes.fromhex("828684be58086e6f2d6361636865"),
    bytes.fromhex("828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565"),
)


def _frames(blocks: tuple[bytes, ...]) -> bytes:
    out = [b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"]
    for n, block in enumerate(blocks):
        sid = 1 + 2 * n
        out.append(len(block).to_bytes(3, "big") + b"\x01\x05" + sid.to_bytes(4, "big") + block)
    return b"".join(out)


def test_reader_follows_rfc7541_c3() -> None:
    blocks = header_blocks(_frames(C3), b"")
    assert [b.stream for b in blocks] == [1, 3, 5]
    assert blocks[2].fields[-1] == ("custom-key", "custom-value")
    assert blocks[1].fields[3] == (":authority", "www.example.com")
    assert [b.inserted for b in blocks] == [1, 1, 1]
    # block 2 names block 1's entry (index 62: the newest); block 3 block 1's again (63)
    assert [(r.index, r.owner) for r in blocks[1].refs] == [(62, 0)]
    assert [(r.index, r.owner) for r in blocks[2].refs] == [(63, 0)]
    assert [len(representations(b)) for b in C3] == [4, 5, 5]


@pytest.mark.parametrize(
    ("lost", "expected"),
    [
        ({0}, {1, 2}),  # the entry's own block lost
        ({1}, {2}),  # a block between the entry's and the reference: its index is unknown
        ({2}, set()),  # nothing after it
    ],
)
def test_state_dependent(lost: set[int], expected: set[int]) -> None:
    blocks: list[Block] = header_blocks(_frames(C3), b"")
    assert state_dependent(blocks, lost) == expected


def test_lost_bytes_of_no_message_count_as_a_lost_block() -> None:
    blocks = header_blocks(_frames(C3), b"")
    for n, b in enumerate(blocks):
        b.ts = float(n)
    assert state_dependent(blocks, set(), {0: [1.5]}) == {2}
    assert state_dependent(blocks, set(), {1: [1.5]}) == set()


def test_upgraded_h2_setup_is_the_settings_after_the_101() -> None:
    """On an h2c upgrade the server's HTTP/2 SETTINGS follow the 101: losing them touches
    every HTTP/2 exchange of the connection (their set-up), not the HTTP/1 one."""
    inp = BY_NAME["h2c_upgrade"]
    capture, clean = clean_run(inp.path, inp.keylog)
    h1 = next(it for it in clean.exchanges if it.exchange and it.exchange.transport != "h2")
    assert h1.exchange is not None and h1.exchange.response is not None
    server = clean.h2_client[next(iter(clean.h2_client))]
    server = (*server[2:], *server[:2])
    _, server_h2 = clean.h2_bytes[next(iter(clean.h2_bytes))]
    settings = int.from_bytes(server_h2[:3], "big") + 9  # the server's first frame
    assert server_h2[3] == 0x4  # SETTINGS
    # the 101's last byte: where the server's HTTP/2 bytes start on the wire
    total = sum(p.end - p.start for p in _server_packets(capture, server))
    start = total - len(server_h2)
    touch = Touch(kind="drop", flow=server, start=start, end=start + settings, lost=True)
    hits, orphans = message_hits(capture, clean, [touch])
    for it, (_, _, pre) in zip(clean.exchanges, hits, strict=True):
        assert it.exchange is not None
        assert pre == (it.exchange.transport == "h2"), it.exchange.id
    assert orphans == [(server, orphans[0][1])]  # in no message: it may have held a block


def _server_packets(capture: Capture, flow: Flow) -> list[Pkt]:
    packets, _ = index_packets(capture)
    seen: dict[int, Pkt] = {}
    for p in packets:
        if p.data and p.tcp is not None and p.tcp.flow == flow:
            seen.setdefault(p.start, p)
    return list(seen.values())
