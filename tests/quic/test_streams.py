"""Reassembly by offset: in order, duplicates, reordering, holes named and not filled."""

from __future__ import annotations

from agentshark.quic.streams import Reassembly


def test_in_order_passes_through() -> None:
    r = Reassembly()
    assert r.add(0, b"abc") == b"abc"
    assert r.add(3, b"def") == b"def"
    assert r.delivered == 6


def test_duplicates_and_overlaps_are_handed_out_once() -> None:
    r = Reassembly()
    assert r.add(0, b"abcd") == b"abcd"
    assert r.add(0, b"abcd") == b""
    assert r.add(2, b"cdef") == b"ef"
    assert r.delivered == 6


def test_reordered_bytes_wait_for_the_ones_before() -> None:
    r = Reassembly()
    assert r.add(4, b"efgh") == b""
    assert r.add(8, b"ij") == b""
    assert r.held_bytes == 6
    assert r.add(0, b"abcd") == b"abcdefghij"
    assert r.held_bytes == 0
    assert r.holes() == []


def test_a_retransmission_spanning_held_pieces() -> None:
    r = Reassembly()
    r.add(6, b"gh")
    assert r.add(0, b"abcdefg") == b"abcdefgh"


def test_holes_are_named_never_filled() -> None:
    r = Reassembly()
    r.add(0, b"ab")
    r.add(5, b"fg")
    r.add(10, b"k")
    assert r.holes() == [(2, 3, b"fg"), (7, 3, b"k")]
    assert r.delivered == 11
