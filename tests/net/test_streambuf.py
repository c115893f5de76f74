"""StreamBuffer on its own: sequence offsets, first-copy-wins buffering, delivery, the FIN.

Reassembly as a whole (events, gaps, diagnostics) is tested through ``TcpReassembler`` in
``test_tcp.py``.
"""

from __future__ import annotations

from agentshark.net.streambuf import PIECE_COST, StreamBuffer


def started(seq: int = 1000) -> StreamBuffer:
    buf = StreamBuffer()
    buf.start(seq)
    return buf


def test_offsets_wrap_round_the_sequence_space() -> None:
    buf = started(0xFFFF_FFF0)
    assert buf.offset(0xFFFF_FFF0) == 0
    assert buf.offset(0x10) == 0x20  # past 2**32
    assert buf.offset(0xFFFF_FFE0) == -0x10  # just before the start


def test_first_copy_wins_and_overlaps_are_reported() -> None:
    buf = started()
    assert buf.insert(10, 10, b"a" * 10, 1.0) == []
    assert buf.insert(20, 5, None, 1.0) == []  # bytes known to be missing
    overlaps = buf.insert(5, 20, b"b" * 5 + b"a" * 4 + b"x" + b"c" * 10, 2.0)
    assert overlaps == [(10, 20, True), (20, 25, False)]  # missing bytes are not compared
    assert buf.starts == [5, 10, 20]
    assert buf.pend[5] == (b"b" * 5, 5, 2.0, -1)
    assert not buf.fast


def test_pop_ready_delivers_from_off_and_remembers() -> None:
    buf = started()
    buf.insert(4, 4, b"efgh", 2.0, 17)
    assert buf.pop_ready() == []
    buf.insert(0, 4, b"abcd", 3.0)
    assert buf.pop_ready() == [(b"abcd", 4, 3.0, -1), (b"efgh", 4, 2.0, 17)]
    assert (buf.off, buf.nxt, buf.fast, buf.pend_cost) == (8, 1008, True, 0)
    assert buf.recent_cost == 8 + 2 * PIECE_COST
    assert buf.delivered_mismatch(2, b"cdXf") == (4, 6)
    assert buf.delivered_mismatch(2, b"cdef") is None


def test_fin_cuts_what_lies_beyond_it() -> None:
    buf = started()
    buf.insert(10, 10, b"0123456789", 1.0, 3)
    buf.insert(30, 5, b"zzzzz", 1.0)
    assert buf.mark_fin(15) == 10  # 5 bytes of the first piece, all of the second
    assert buf.pend == {10: (b"01234", 5, 1.0, 3)}
    assert buf.known_end() == 15
    assert buf.acked_end(1000 + 99) == 15  # an ACK never reaches past the FIN
    assert buf.hole_end(15) == 10


def test_a_split_piece_keeps_the_acked_value_of_its_segment() -> None:
    buf = started()
    buf.insert(4, 2, b"ef", 1.0, 5)
    buf.insert(0, 10, b"abcdXXghij", 2.0, 9)  # first copy of 4..6 wins
    assert [buf.pend[s] for s in buf.starts] == [
        (b"abcd", 4, 2.0, 9),
        (b"ef", 2, 1.0, 5),
        (b"ghij", 4, 2.0, 9),
    ]


def test_known_end_reaches_what_the_peer_acknowledged() -> None:
    buf = started()
    buf.insert(10, 5, b"abcde", 1.0)
    buf.hint = 40
    assert buf.known_end() == 40
    buf.hint = 12
    assert buf.known_end() == 15
