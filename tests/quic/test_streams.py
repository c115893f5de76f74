"""Reassembly by offset: in order, duplicates, reordering, holes named and not filled; each
piece keeps the time of the packet that carried it."""

from __future__ import annotations

from agentshark.quic.streams import Piece, Reassembly


def _joined(pieces: list[Piece]) -> bytes:
    return b"".join(p for p, _ in pieces)


def test_in_order_passes_through() -> None:
    r = Reassembly()
    assert r.add(0, b"abc", 1.0) == [(b"abc", 1.0)]
    assert r.add(3, b"def", 2.0) == [(b"def", 2.0)]
    assert r.delivered == 6


def test_duplicates_and_overlaps_are_handed_out_once() -> None:
    r = Reassembly()
    assert _joined(r.add(0, b"abcd")) == b"abcd"
    assert r.add(0, b"abcd") == []
    assert r.add(2, b"cdef", 3.0) == [(b"ef", 3.0)]
    assert r.delivered == 6


def test_reordered_bytes_wait_for_the_ones_before_and_keep_their_times() -> None:
    r = Reassembly()
    assert r.add(4, b"efgh", 2.0) == []
    assert r.add(8, b"ij", 3.0) == []
    assert r.held_bytes == 6
    assert r.add(0, b"abcd", 1.0) == [(b"abcd", 1.0), (b"efgh", 2.0), (b"ij", 3.0)]
    assert r.held_bytes == 0
    assert r.holes() == []


def test_a_retransmission_spanning_held_pieces() -> None:
    r = Reassembly()
    r.add(6, b"gh", 1.0)
    assert r.add(0, b"abcdefg", 2.0) == [(b"abcdefg", 2.0), (b"h", 1.0)]


def test_holes_are_named_never_filled() -> None:
    r = Reassembly()
    r.add(0, b"ab", 1.0)
    r.add(5, b"fg", 2.0)
    r.add(10, b"k", 3.0)
    assert r.holes() == [(2, 3, b"fg", 2.0), (7, 3, b"k", 3.0)]
    assert r.delivered == 11
