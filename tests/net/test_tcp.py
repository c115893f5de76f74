"""TCP reassembly: segments in, ordered stream events per connection direction out."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.net.events import (
    Connection,
    ConnectionClosed,
    ConnectionOpened,
    StreamData,
    StreamEnded,
    StreamGap,
    TcpEvent,
)
from agentshark.net.segment import ACK, FIN, PSH, RST, SYN, TcpSegment
from agentshark.net.tcp import TcpReassembler

MASK = 0xFFFF_FFFF
C_IP = bytes([10, 0, 0, 1])
S_IP = bytes([10, 0, 0, 2])
C_PORT = 40000
S_PORT = 443


def seg(
    frm: str,
    seq: int,
    ack: int = 0,
    flags: int = ACK,
    payload: bytes = b"",
    *,
    missing: int = 0,
    ts: float = 1.0,
    cport: int = C_PORT,
    sport: int = S_PORT,
    packet: int = 0,
) -> TcpSegment:
    """A segment from the client ("c") or the server ("s")."""
    if frm == "c":
        src, sp, dst, dp = C_IP, cport, S_IP, sport
    else:
        src, sp, dst, dp = S_IP, sport, C_IP, cport
    return TcpSegment(ts, src, sp, dst, dp, seq & MASK, ack & MASK, flags, payload, missing, packet)


def run(r: TcpReassembler, segs: Iterable[TcpSegment]) -> list[TcpEvent]:
    out: list[TcpEvent] = []
    for s in segs:
        out.extend(r.feed(s))
    return out


def summary(events: Iterable[TcpEvent]) -> list[tuple[Any, ...]]:
    """Events without the Connection object, easy to compare."""
    rows: list[tuple[Any, ...]] = []
    for e in events:
        if isinstance(e, ConnectionOpened):
            rows.append(("open", e.connection.id))
        elif isinstance(e, StreamData):
            rows.append(("data", e.direction, e.data, e.offset))
        elif isinstance(e, StreamGap):
            rows.append(("gap", e.direction, e.size, e.offset))
        elif isinstance(e, StreamEnded):
            rows.append(("end", e.direction, e.reason))
        else:
            rows.append(("closed", e.connection.id))
    return rows


def stream(events: Iterable[TcpEvent], direction: int) -> bytes:
    return b"".join(
        e.data for e in events if isinstance(e, StreamData) and e.direction == direction
    )


def handshake(cisn: int = 1000, sisn: int = 5000) -> list[TcpSegment]:
    return [
        seg("c", cisn, 0, SYN, ts=0.1),
        seg("s", sisn, cisn + 1, SYN | ACK, ts=0.2),
        seg("c", cisn + 1, sisn + 1, ACK, ts=0.3),
    ]


def ts_of(event: TcpEvent) -> float:
    assert not isinstance(event, ConnectionOpened)
    return event.ts


def codes(conn: Connection) -> list[str]:
    return [d.code for d in conn.diagnostics]


# -- a whole connection -----------------------------------------------------------------------


def test_handshake_data_and_fin_both_ways_close_and_drop_the_connection() -> None:
    r = TcpReassembler()
    c, s = 1001, 5001
    events = run(
        r,
        [
            *handshake(),
            seg("c", c, s, ACK | PSH, b"GET / HTTP/1.1\r\n\r\n", ts=1.0),
            seg("s", s, c + 18, ACK, ts=1.1),
            seg("s", s, c + 18, ACK | PSH, b"HTTP/1.1 200 OK\r\n", ts=1.2),
            seg("s", s + 17, c + 18, ACK | PSH, b"\r\nhi", ts=1.3),
            seg("c", c + 18, s + 21, ACK | FIN, ts=1.4),
            seg("s", s + 21, c + 19, ACK | FIN, ts=1.5),
        ],
    )
    assert summary(events) == [
        ("open", "c1"),
        ("data", 0, b"GET / HTTP/1.1\r\n\r\n", 0),
        ("data", 1, b"HTTP/1.1 200 OK\r\n", 0),
        ("data", 1, b"\r\nhi", 17),
        ("end", 0, "fin"),
        ("end", 1, "fin"),
        ("closed", "c1"),
    ]
    conn = events[0].connection
    assert conn.client == ("10.0.0.1", C_PORT)
    assert conn.server == ("10.0.0.2", S_PORT)
    assert (conn.serial, conn.handshake_seen) == (0, True)
    assert conn.bytes == [18, 21]
    assert conn.packets == [4, 5]
    assert conn.gaps == [0, 0]
    assert conn.end == ["fin", "fin"]
    assert (conn.first_ts, conn.last_ts) == (0.1, 1.5)
    assert conn.diagnostics == []
    assert [e.ts for e in events if isinstance(e, StreamData)] == [1.0, 1.2, 1.3]
    assert isinstance(events[-1], ConnectionClosed) and events[-1].ts == 1.5
    assert r.open_connections == 0
    # The final ACK of the close is absorbed, not a new connection.
    assert r.feed(seg("c", c + 19, s + 22, ACK, ts=1.6)) == []
    assert r.stats["ignored_after_close"] == 1
    assert r.close() == []


def test_rst_ends_both_directions_then_closes() -> None:
    r = TcpReassembler()
    events = run(
        r,
        [*handshake(), seg("c", 1001, 5001, ACK, b"abc"), seg("s", 5001, 1004, RST | ACK, b"why")],
    )
    assert summary(events)[1:] == [
        ("data", 0, b"abc", 0),
        ("end", 1, "rst"),
        ("end", 0, "rst"),
        ("closed", "c1"),
    ]
    assert events[-1].connection.end == ["rst", "rst"]
    assert r.open_connections == 0


def test_sequence_numbers_wrap_around() -> None:
    r = TcpReassembler()
    isn = 2**32 - 10
    events = run(
        r,
        [
            seg("c", isn, 0, SYN),
            seg("s", 7, isn + 1, SYN | ACK),
            seg("c", isn + 1, 8, ACK, b"0123456"),  # 2**32 - 9 .. 2**32 - 3
            seg("c", isn + 15, 8, ACK, b"EFGH"),  # wrapped, out of order
            seg("c", isn + 8, 8, ACK, b"789ABCD"),  # crosses 2**32
            seg("s", 8, isn + 19, ACK, b"ok"),
            seg("c", isn + 19, 10, ACK | FIN),
        ],
    )
    assert [(e.data, e.offset) for e in events if isinstance(e, StreamData)] == [
        (b"0123456", 0),
        (b"789ABCD", 7),
        (b"EFGH", 14),
        (b"ok", 0),
    ]
    assert ("end", 0, "fin") in summary(events)
    assert not any(isinstance(e, StreamGap) for e in events)


# -- roles -------------------------------------------------------------------------------------


def test_mid_stream_start_guesses_roles_by_port() -> None:
    r = TcpReassembler()
    events = r.feed(seg("s", 9000, 77, ACK, b"response bytes"))
    conn = events[0].connection
    assert (conn.client, conn.server) == (("10.0.0.1", C_PORT), ("10.0.0.2", S_PORT))
    assert conn.handshake_seen is False
    assert summary(events) == [("open", "c1"), ("data", 1, b"response bytes", 0)]

    cases = [(51000, 11434, 11434), (11434, 51000, 11434), (50001, 18080, 18080), (80, 8080, 80)]
    for a, b, server in cases:
        r = TcpReassembler()
        opened = r.feed(TcpSegment(0.0, C_IP, a, S_IP, b, 1, 0, ACK, b"x", 0, 0))[0]
        assert isinstance(opened, ConnectionOpened)
        assert opened.connection.server[1] == server, (a, b)


def test_swap_roles_changes_the_direction_of_later_events() -> None:
    r = TcpReassembler()
    # A mid-stream capture where the heuristic guesses wrong: both ports ephemeral, the real
    # client has the lower one.
    first = run(
        r,
        [
            seg("c", 100, 900, ACK, b"request", cport=30000, sport=40000),
            seg("s", 900, 107, ACK, b"response", cport=30000, sport=40000),
        ],
    )
    conn = first[0].connection
    assert conn.client == ("10.0.0.2", 40000)
    assert summary(first)[1:] == [("data", 1, b"request", 0), ("data", 0, b"response", 0)]
    assert conn.bytes == [8, 7]
    conn.swap_roles()
    assert conn.bytes == [7, 8]
    later = run(
        r,
        [
            seg("c", 107, 908, ACK, b"more", cport=30000, sport=40000),
            seg("s", 908, 111, ACK | FIN, b"!", cport=30000, sport=40000),
            seg("c", 111, 910, ACK | FIN, cport=30000, sport=40000),
        ],
    )
    assert summary(later) == [
        ("data", 0, b"more", 7),
        ("data", 1, b"!", 8),
        ("end", 1, "fin"),
        ("end", 0, "fin"),
        ("closed", "c1"),
    ]
    assert conn.bytes == [11, 9]
    assert conn.end == ["fin", "fin"]


def test_ipv6_addresses_are_strings() -> None:
    a = bytes(15) + b"\x01"
    b = bytes.fromhex("20010db8000000000000000000000002")
    events = TcpReassembler().feed(TcpSegment(0.0, a, 50000, b, 443, 1, 0, SYN, b"", 0, 0))
    conn = events[0].connection
    assert (conn.client, conn.server) == (("::1", 50000), ("2001:db8::2", 443))
    assert conn.label(0) == "c1 [::1]:50000 -> [2001:db8::2]:443"


# -- reuse and what comes after a close --------------------------------------------------------


def _full_connection(cisn: int, sisn: int, ts: float) -> list[TcpSegment]:
    c, s = cisn + 1, sisn + 1
    return [
        seg("c", cisn, 0, SYN, ts=ts),
        seg("s", sisn, c, SYN | ACK, ts=ts),
        seg("c", c, s, ACK, b"hello", ts=ts),
        seg("s", s, c + 5, ACK | FIN, b"bye", ts=ts),
        seg("c", c + 5, s + 4, ACK | FIN, ts=ts),
        seg("s", s + 4, c + 6, ACK, ts=ts),  # after the close: absorbed
    ]


def test_port_reuse_opens_a_new_connection_with_the_next_serial() -> None:
    r = TcpReassembler()
    events = run(r, [*_full_connection(1000, 5000, 1.0), *_full_connection(77777, 99, 5.0)])
    opened = [e.connection for e in events if isinstance(e, ConnectionOpened)]
    assert [(c.id, c.serial) for c in opened] == [("c1", 0), ("c2", 1)]
    assert [stream(events, d) for d in (0, 1)] == [b"hellohello", b"byebye"]
    assert sum(isinstance(e, ConnectionClosed) for e in events) == 2
    assert r.stats["ignored_after_close"] == 2


def test_recently_closed_tuple_absorbs_stragglers() -> None:
    r = TcpReassembler()
    run(r, _full_connection(1000, 5000, 1.0))
    stragglers = [
        seg("s", 5001, 1006, ACK | FIN, b"bye", ts=2.0),  # retransmitted FIN with data
        seg("c", 1001, 5005, ACK, b"hello", ts=2.0),  # retransmitted request
        seg("c", 1006, 5005, RST, ts=2.0),
        seg("c", 1006, 5005, ACK, ts=2.0),
    ]
    assert run(r, stragglers) == []
    assert r.stats["ignored_after_close"] == 1 + len(stragglers)
    # Data far from where the old connection stopped is a new connection seen mid-stream.
    events = r.feed(seg("c", 3_000_000_000, 1, ACK, b"new", ts=3.0))
    assert isinstance(events[0], ConnectionOpened)
    assert (events[0].connection.serial, events[0].connection.handshake_seen) == (1, False)


def test_pure_ack_or_fin_on_an_unknown_tuple_opens_nothing() -> None:
    r = TcpReassembler()
    assert r.feed(seg("c", 1, 2, ACK)) == []
    assert r.feed(seg("c", 1, 2, ACK | FIN)) == []
    assert r.feed(seg("c", 1, 2, RST, b"x")) == []
    assert r.open_connections == 0
    assert r.stats["ignored_unknown"] == 3


def test_syn_with_a_new_isn_replaces_an_open_connection() -> None:
    r = TcpReassembler()
    events = run(r, [*handshake(), seg("c", 1001, 5001, ACK, b"abc"), seg("c", 424242, 0, SYN)])
    assert summary(events)[1:] == [
        ("data", 0, b"abc", 0),
        ("end", 0, "evicted"),
        ("end", 1, "evicted"),
        ("closed", "c1"),
        ("open", "c2"),
    ]
    assert codes(events[0].connection) == ["tcp.tuple_reused"]
    assert events[-1].connection.serial == 1
    assert r.stats["tuple_reuses"] == 1
    # A retransmitted SYN is not a reuse.
    assert r.feed(seg("c", 424242, 0, SYN)) == []


# -- ordering, retransmissions, overlaps -------------------------------------------------------


def test_out_of_order_segments_are_delivered_in_order_with_their_own_ts() -> None:
    r = TcpReassembler()
    events = run(
        r,
        [
            *handshake(),
            seg("c", 1011, 5001, ACK, b"KLMNOPQRST", ts=1.0),
            seg("c", 1021, 5001, ACK, b"UVWXYZ", ts=1.1),
            seg("c", 1001, 5001, ACK, b"ABCDEFGHIJ", ts=1.2),
        ],
    )
    assert [(e.data, e.offset, e.ts) for e in events if isinstance(e, StreamData)] == [
        (b"ABCDEFGHIJ", 0, 1.2),
        (b"KLMNOPQRST", 10, 1.0),
        (b"UVWXYZ", 20, 1.1),
    ]


def test_retransmissions_are_delivered_once() -> None:
    r = TcpReassembler()
    data = seg("c", 1001, 5001, ACK, b"0123456789")
    events = run(r, [*handshake(), data, data, seg("c", 1006, 5001, ACK, b"56789abc")])
    assert summary(events)[1:] == [("data", 0, b"0123456789", 0), ("data", 0, b"abc", 10)]
    assert r.stats["retransmitted_bytes"] == 15
    assert events[0].connection.diagnostics == []


def test_differing_copy_of_delivered_bytes_is_diagnosed_and_the_first_kept() -> None:
    r = TcpReassembler()
    events = run(
        r,
        [
            *handshake(),
            seg("c", 1001, 5001, ACK, b"0123456789"),
            seg("c", 1005, 5001, ACK, b"45XX89abcd", packet=7),
        ],
    )
    assert stream(events, 0) == b"0123456789abcd"
    conn = events[0].connection
    assert codes(conn) == ["tcp.overlap_mismatch"]
    assert "packet 7" in conn.diagnostics[0].location
    assert r.stats["overlap_mismatches"] == 1


def test_differing_copy_of_buffered_bytes_is_diagnosed_and_the_first_kept() -> None:
    r = TcpReassembler()
    events = run(
        r,
        [
            *handshake(),
            seg("c", 1006, 5001, ACK, b"56789"),  # buffered, out of order
            seg("c", 1004, 5001, ACK, b"34ZZ7"),  # overlaps it and differs
            seg("c", 1001, 5001, ACK, b"012"),
        ],
    )
    assert stream(events, 0) == b"0123456789"
    assert codes(events[0].connection) == ["tcp.overlap_mismatch"]


def test_mismatch_diagnostics_are_capped_then_counted() -> None:
    r = TcpReassembler()
    segs = [*handshake(), seg("c", 1001, 5001, ACK, b"aaaaaaaaaa")]
    segs += [seg("c", 1001, 5001, ACK, bytes([65 + i]) * 10) for i in range(6)]
    segs += [seg("c", 1011, 5001, ACK | FIN), seg("s", 5001, 1012, ACK | FIN)]
    events = run(r, segs)
    conn = events[0].connection
    assert codes(conn) == ["tcp.overlap_mismatch"] * 4
    assert "3 more" in conn.diagnostics[-1].message
    assert r.stats["overlap_mismatches"] == 6


def test_keepalive_garbage_octet_is_not_a_mismatch() -> None:
    r = TcpReassembler()
    events = run(
        r, [*handshake(), seg("c", 1001, 5001, ACK, b"abc"), seg("c", 1003, 5001, ACK, b"\0")]
    )
    assert stream(events, 0) == b"abc"
    assert events[0].connection.diagnostics == []
    assert r.stats["keepalives"] == 1


# -- gaps --------------------------------------------------------------------------------------


def test_an_ack_past_a_hole_is_a_hint_until_the_sender_goes_on() -> None:
    r = TcpReassembler()
    before = run(
        r,
        [
            *handshake(),
            seg("c", 1001, 5001, ACK, b"0123456789"),
            seg("c", 1021, 5001, ACK, b"KLMNO"),  # 1011..1020 not captured (yet)
        ],
    )
    assert stream(before, 0) == b"0123456789"
    assert r.feed(seg("s", 5001, 1026, ACK, ts=3.0)) == []  # acknowledged: a hint only
    # The client's next segment starts past what the server acknowledged: the hole is lost.
    events = r.feed(seg("c", 1026, 5001, ACK, b"pq", ts=4.0))
    assert summary(events) == [
        ("gap", 0, 10, 10),
        ("data", 0, b"KLMNO", 20),
        ("data", 0, b"pq", 25),
    ]
    assert ts_of(events[0]) == 4.0
    conn = events[0].connection
    assert conn.gaps == [10, 0]
    assert codes(conn) == ["tcp.gap"]
    assert "went on past them" in conn.diagnostics[0].message
    assert r.stats["gap_bytes"] == 10
    # The missing bytes arriving now are a retransmission of given-up bytes, dropped.
    assert r.feed(seg("c", 1011, 5001, ACK, b"ABCDEFGHIJ")) == []


def test_late_data_fills_a_hole_the_peer_acknowledged() -> None:
    r = TcpReassembler()
    run(r, [*handshake(), seg("c", 1001, 5001, ACK, b"0123456789")])
    assert r.feed(seg("s", 5001, 1021, ACK, ts=2.0)) == []  # a 0-byte ACK before its data
    events = r.feed(seg("c", 1011, 5001, ACK, b"ABCDEFGHIJ", ts=2.1))
    assert summary(events) == [("data", 0, b"ABCDEFGHIJ", 10)]
    events += run(r, [seg("c", 1021, 5001, ACK, b"next"), seg("s", 5001, 1025, ACK, b"ok")])
    assert stream(events, 0) == b"ABCDEFGHIJnext"
    conn = events[0].connection
    assert conn.gaps == [0, 0] and conn.diagnostics == []
    assert r.stats["gap_bytes"] == 0


def test_a_bare_segment_past_the_hint_gives_the_hole_up() -> None:
    r = TcpReassembler()
    run(r, [*handshake(), seg("c", 1001, 5001, ACK, b"GET")])
    assert r.feed(seg("s", 5001, 1014, ACK)) == []  # 10 unseen bytes acknowledged
    assert r.feed(seg("c", 1010, 5001, ACK)) == []  # a bare segment inside the hole: no proof
    events = r.feed(seg("c", 1014, 5001, ACK, ts=5.0))  # the sender is past them
    assert summary(events) == [("gap", 0, 10, 3)]
    assert codes(events[0].connection) == ["tcp.gap"]


def test_a_hole_the_peer_acknowledged_counts_to_the_ack_at_the_end() -> None:
    r = TcpReassembler()
    run(r, [*handshake(), seg("c", 1001, 5001, ACK, b"GET")])
    r.feed(seg("s", 5001, 1014, ACK))
    events = r.close()
    assert summary(events) == [
        ("gap", 0, 10, 3),
        ("end", 0, "capture_end"),
        ("end", 1, "capture_end"),
        ("closed", "c1"),
    ]
    assert events[0].connection.gaps == [10, 0]


def test_data_that_acknowledges_unseen_bytes_waits_for_them() -> None:
    """A response captured before the request it acknowledges comes out after it."""
    r = TcpReassembler()
    run(r, [*handshake(), seg("c", 1001, 5001, ACK, b"GET /a\r\n\r\n")])
    # The server's answer to a second request arrives before that request.
    early = r.feed(seg("s", 5001, 1011 + 10, ACK, b"HTTP/1.1 200", ts=2.0))
    assert early == []
    more = r.feed(seg("s", 5013, 1021, ACK, b" OK\r\n", ts=2.1))
    assert more == []
    events = r.feed(seg("c", 1011, 5001, ACK, b"GET /b\r\n\r\n", ts=1.9))
    assert summary(events) == [
        ("data", 0, b"GET /b\r\n\r\n", 10),
        ("data", 1, b"HTTP/1.1 200", 0),
        ("data", 1, b" OK\r\n", 12),
    ]
    assert [e.acked for e in events if isinstance(e, StreamData)] == [0, 20, 20]
    assert [e.ts for e in events if isinstance(e, StreamData)] == [1.9, 2.0, 2.1]
    conn = events[0].connection
    assert conn.diagnostics == [] and conn.gaps == [0, 0]
    # Back on the fast path.
    assert summary(r.feed(seg("s", 5018, 1021, ACK, b"!"))) == [("data", 1, b"!", 17)]


def test_waiting_data_is_delivered_once_the_hole_is_given_up() -> None:
    r = TcpReassembler()
    run(r, [*handshake(), seg("c", 1001, 5001, ACK, b"abc")])
    assert r.feed(seg("s", 5001, 1010, ACK, b"resp")) == []  # 6 client bytes never captured
    events = r.feed(seg("c", 1010, 5005, ACK))  # the client went on: they are lost
    assert summary(events) == [("gap", 0, 6, 3), ("data", 1, b"resp", 0)]
    assert [e.acked for e in events if isinstance(e, StreamData)] == [9]


def test_waiting_data_beyond_the_buffer_cap_gives_the_peer_hole_up() -> None:
    r = TcpReassembler(max_buffered=300)
    run(r, [*handshake(), seg("c", 1001, 5001, ACK, b"abc")])
    events = run(
        r,
        [
            seg("s", 5001, 1010, ACK, b"x" * 100),
            seg("s", 5101, 1010, ACK, b"y" * 100),  # 2 x (100 + 64) > 300
        ],
    )
    assert summary(events) == [
        ("gap", 0, 6, 3),
        ("data", 1, b"x" * 100, 0),
        ("data", 1, b"y" * 100, 100),
    ]
    assert codes(events[0].connection) == ["tcp.gap"]
    assert r.stats["buffer_overflows"] == 1


def test_stream_data_says_what_its_segment_acknowledged() -> None:
    r = TcpReassembler()
    events = run(
        r,
        [
            *handshake(),
            seg("c", 1001, 5001, ACK, b"hello"),
            seg("s", 5001, 1006, ACK, b"hi"),  # acknowledges all 5 client bytes
            seg("s", 5003, 1003, ACK, b"!"),  # an older ACK: 2 bytes
            seg("s", 5004, 0, PSH, b"?"),  # no ACK flag
        ],
    )
    data = [(e.direction, e.offset, e.acked) for e in events if isinstance(e, StreamData)]
    assert data == [(0, 0, 0), (1, 0, 5), (1, 2, 2), (1, 3, -1)]
    mid = TcpReassembler()  # the peer direction has not started: no usable ACK
    first = mid.feed(seg("c", 77, 999, ACK, b"x"))
    assert [e.acked for e in first if isinstance(e, StreamData)] == [-1]


def test_partial_ack_gives_up_only_what_the_peer_acknowledged() -> None:
    r = TcpReassembler()
    run(r, [*handshake(), seg("c", 1021, 5001, ACK, b"KLMNO")])
    assert summary(r.feed(seg("s", 5001, 1006, ACK))) == [("gap", 0, 5, 0)]
    assert summary(r.feed(seg("c", 1006, 5001, ACK, b"fghijklmnopqrst"))) == [
        ("data", 0, b"fghijklmnopqrst", 5),
        ("data", 0, b"KLMNO", 20),
    ]


def test_buffer_cap_turns_the_hole_into_a_gap() -> None:
    r = TcpReassembler(max_buffered=300)
    events = run(
        r,
        [
            *handshake(),
            seg("c", 1101, 5001, ACK, b"a" * 100),  # hole of 100 bytes before it
            seg("c", 1201, 5001, ACK, b"b" * 100),  # 2 x (100 + 64) > 300
        ],
    )
    assert summary(events)[1:] == [
        ("gap", 0, 100, 0),
        ("data", 0, b"a" * 100, 100),
        ("data", 0, b"b" * 100, 200),
    ]
    assert codes(events[0].connection) == ["tcp.buffer_overflow"]
    assert r.stats["buffer_overflows"] == 1


def test_snaplen_truncated_segment_delivers_what_was_captured_then_a_gap() -> None:
    r = TcpReassembler()
    events = run(
        r,
        [
            *handshake(),
            seg("c", 1001, 5001, ACK, b"head", missing=96),
            seg("c", 1101, 5001, ACK, b"next"),
        ],
    )
    assert summary(events)[1:] == [
        ("data", 0, b"head", 0),
        ("gap", 0, 96, 4),
        ("data", 0, b"next", 100),
    ]
    conn = events[0].connection
    assert (conn.bytes[0], conn.gaps[0]) == (8, 96)
    assert codes(conn) == ["tcp.snaplen"]


def test_fin_after_a_hole_waits_until_the_peer_acknowledges() -> None:
    r = TcpReassembler()
    events = run(
        r,
        [*handshake(), seg("c", 1001, 5001, ACK, b"abc"), seg("c", 1010, 5001, ACK | FIN, b"xyz")],
    )
    assert not any(isinstance(e, StreamEnded) for e in events)
    # A retransmission may still fill it ...
    events = r.feed(seg("c", 1004, 5001, ACK, b"defghi"))
    assert summary(events) == [
        ("data", 0, b"defghi", 3),
        ("data", 0, b"xyz", 9),
        ("end", 0, "fin"),
    ]
    # ... and data after the FIN is dropped.
    assert r.feed(seg("c", 1013, 5001, ACK, b"late")) == []
    assert r.stats["beyond_fin_bytes"] == 4


def test_fin_ack_beyond_a_hole_ends_the_direction() -> None:
    r = TcpReassembler()
    run(r, [*handshake(), seg("c", 1005, 5001, ACK | FIN, b"xyz")])
    events = r.feed(seg("s", 5001, 1009, ACK | FIN))
    assert summary(events) == [
        ("gap", 0, 4, 0),
        ("data", 0, b"xyz", 4),
        ("end", 0, "fin"),
        ("end", 1, "fin"),
        ("closed", "c1"),
    ]
    assert codes(events[0].connection) == ["tcp.gap"]


# -- end of capture and limits -----------------------------------------------------------------


def test_close_flushes_holes_buffered_data_and_ends_everything() -> None:
    r = TcpReassembler()
    run(
        r,
        [
            *handshake(),
            seg("c", 1001, 5001, ACK, b"ab", ts=1.0),
            seg("c", 1005, 5001, ACK, b"ef", ts=1.5),
            seg("s", 5001, 1003, ACK, b"resp", ts=2.0),
        ],
    )
    events = r.close()
    assert summary(events) == [
        ("gap", 0, 2, 2),
        ("data", 0, b"ef", 4),
        ("end", 0, "capture_end"),
        ("end", 1, "capture_end"),
        ("closed", "c1"),
    ]
    assert {ts_of(e) for e in events if not isinstance(e, StreamData)} == {2.0}
    assert [e.ts for e in events if isinstance(e, StreamData)] == [1.5]
    assert r.open_connections == 0
    assert codes(events[0].connection) == ["tcp.gap"]
    assert "the capture ended" in events[0].connection.diagnostics[0].message


def test_close_takes_the_explicit_ts() -> None:
    r = TcpReassembler()
    run(r, [seg("c", 1, 0, ACK, b"x", ts=1.0)])
    events = r.close(7.5)
    assert [ts_of(e) for e in events] == [7.5, 7.5, 7.5]


def test_max_connections_evicts_the_least_recently_active() -> None:
    r = TcpReassembler(max_connections=2, source_name="cap.pcap")
    events = run(
        r,
        [
            seg("c", 10, 0, ACK, b"one", cport=1001, ts=1.0),
            seg("c", 10, 0, ACK, b"two", cport=1002, ts=2.0),
            seg("c", 13, 0, ACK, b"ONE", cport=1001, ts=3.0),  # c1 active again
            seg("c", 10, 0, ACK, b"three", cport=1003, ts=4.0),  # evicts c2
        ],
    )
    assert summary(events)[-6:] == [
        ("data", 0, b"ONE", 3),
        ("end", 0, "evicted"),
        ("end", 1, "evicted"),
        ("closed", "c2"),
        ("open", "c3"),
        ("data", 0, b"three", 0),
    ]
    evicted = next(e.connection for e in events if isinstance(e, ConnectionClosed))
    assert codes(evicted) == ["tcp.evicted"]
    assert [d.code for d in r.diagnostics] == ["tcp.evicted"]
    assert r.diagnostics[0].location == "cap.pcap"
    assert r.stats["evictions"] == 1
    assert r.open_connections == 2
    # Later segments of the evicted connection are absorbed, not reopened.
    assert r.feed(seg("c", 13, 0, ACK, b"TWO", cport=1002, ts=5.0)) == []


def test_events_are_ids_in_order_of_appearance() -> None:
    r = TcpReassembler(id_prefix="f0.")
    events = run(r, [seg("c", 1, 0, ACK, b"a", cport=p) for p in (5000, 5001, 5000, 5002)])
    assert [e.connection.id for e in events if isinstance(e, ConnectionOpened)] == [
        "f0.1",
        "f0.2",
        "f0.3",
    ]


# -- properties --------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    data=st.binary(max_size=2000),
    isn=st.integers(0, MASK),
    rnd=st.randoms(use_true_random=False),
)
def test_any_segmentation_order_and_duplication_reassembles_exactly(
    data: bytes, isn: int, rnd: random.Random
) -> None:
    n = len(data)
    cuts = sorted(rnd.sample(range(1, n), min(n - 1, rnd.randint(0, 25)))) if n > 1 else []
    bounds = [0, *cuts, n]
    pieces = [(a, b) for a, b in itertools.pairwise(bounds) if b > a]
    for _ in range(rnd.randint(0, 12) if n else 0):  # duplicates and overlapping re-cuts
        a = rnd.randrange(n)
        pieces.append((a, rnd.randint(a + 1, n)))
    rnd.shuffle(pieces)
    segs = [seg("c", isn, 0, SYN, ts=0.0)]
    segs += [
        seg("c", isn + 1 + a, 0, PSH, data[a:b], ts=i + 1.0) for i, (a, b) in enumerate(pieces)
    ]
    segs.append(seg("c", isn + 1 + n, 0, FIN, ts=len(pieces) + 1.0))
    r = TcpReassembler()
    events = run(r, segs)
    assert stream(events, 0) == data
    assert not any(isinstance(e, StreamGap) for e in events)
    offsets = [e.offset for e in events if isinstance(e, StreamData)]
    sizes = [len(e.data) for e in events if isinstance(e, StreamData)]
    assert offsets == [sum(sizes[:i]) for i in range(len(sizes))]
    assert summary(events)[-1] == ("end", 0, "fin")
    conn = events[0].connection
    assert conn.diagnostics == []
    assert conn.bytes == [n, 0]
    assert summary(r.close()) == [("end", 1, "capture_end"), ("closed", "c1")]


_ENDPOINTS = [
    (C_IP, C_PORT, S_IP, S_PORT),
    (S_IP, S_PORT, C_IP, C_PORT),
    (C_IP, C_PORT + 1, S_IP, S_PORT),
    (S_IP, S_PORT, C_IP, C_PORT + 1),
    (bytes(15) + b"\x01", 5000, bytes(15) + b"\x02", 80),
    (bytes(15) + b"\x02", 80, bytes(15) + b"\x01", 5000),
    (C_IP, 7, C_IP, 7),  # a socket connected to itself
]
_NUMBERS = st.one_of(st.integers(0, 300), st.integers(MASK - 300, MASK), st.integers(0, MASK))


def _segment(
    ends: tuple[bytes, int, bytes, int],
    seq: int,
    ack: int,
    flags: int,
    payload: bytes,
    missing: int,
    ts: float,
) -> TcpSegment:
    src, sport, dst, dport = ends
    return TcpSegment(ts, src, sport, dst, dport, seq, ack, flags, payload, missing, 0)


_SEGMENTS = st.builds(
    _segment,
    st.sampled_from(_ENDPOINTS),
    _NUMBERS,
    _NUMBERS,
    st.integers(0, 0x3F),
    st.binary(max_size=40),
    st.one_of(st.just(0), st.integers(0, 60)),
    st.floats(0, 1000, allow_nan=False),
)


@settings(max_examples=300, deadline=None)
@given(
    segs=st.lists(_SEGMENTS, max_size=60),
    max_buffered=st.sampled_from([0, 150, 8 << 20]),
    max_connections=st.sampled_from([1, 2, 100]),
)
def test_fuzz_arbitrary_segments_only_make_well_formed_events(
    segs: list[TcpSegment], max_buffered: int, max_connections: int
) -> None:
    r = TcpReassembler(max_buffered=max_buffered, max_connections=max_connections)
    events = [*run(r, segs), *r.close()]
    assert r.open_connections == 0
    per_conn: dict[str, list[TcpEvent]] = {}
    for e in events:
        assert isinstance(
            e, ConnectionOpened | StreamData | StreamGap | StreamEnded | ConnectionClosed
        )
        per_conn.setdefault(e.connection.id, []).append(e)
    for evs in per_conn.values():
        assert isinstance(evs[0], ConnectionOpened)
        assert isinstance(evs[-1], ConnectionClosed)
        assert sum(isinstance(e, ConnectionOpened | ConnectionClosed) for e in evs) == 2
        conn = evs[0].connection
        offset, data, gaps, ended = [0, 0], [0, 0], [0, 0], [False, False]
        for e in evs[1:-1]:
            assert isinstance(e, StreamData | StreamGap | StreamEnded)
            assert not ended[e.direction]
            if isinstance(e, StreamEnded):
                ended[e.direction] = True
                continue
            assert e.offset == offset[e.direction]
            size = len(e.data) if isinstance(e, StreamData) else e.size
            assert size > 0
            offset[e.direction] += size
            if isinstance(e, StreamData):
                data[e.direction] += size
            else:
                gaps[e.direction] += size
        assert ended == [True, True]
        assert (conn.bytes, conn.gaps) == (data, gaps)
        assert None not in conn.end


def _conversation(rnd: random.Random, streams: tuple[bytes, bytes]) -> list[TcpSegment]:
    """Segments of a plausible connection: handshake, interleaved data whose ACKs only
    acknowledge bytes already sent, then FINs (not always)."""
    isn = [rnd.randrange(MASK + 1), rnd.randrange(MASK + 1)]
    segs = [seg("c", isn[0], 0, SYN), seg("s", isn[1], isn[0] + 1, SYN | ACK)]
    sent = [0, 0]
    while sent[0] < len(streams[0]) or sent[1] < len(streams[1]):
        d = rnd.randrange(2)
        size = min(rnd.randint(0, 300), len(streams[d]) - sent[d])
        acked = rnd.randint(0, sent[1 - d])  # the peer's bytes this side may have received
        piece = streams[d][sent[d] : sent[d] + size]
        segs.append(seg("cs"[d], isn[d] + 1 + sent[d], isn[1 - d] + 1 + acked, ACK, piece))
        sent[d] += size
    segs += [
        seg("cs"[d], isn[d] + 1 + sent[d], isn[1 - d] + 1 + sent[1 - d], ACK | FIN)
        for d in rnd.sample((0, 1), rnd.randint(0, 2))
    ]
    return segs


@settings(max_examples=200, deadline=None)
@given(
    streams=st.tuples(st.binary(max_size=1500), st.binary(max_size=1500)),
    rnd=st.randoms(use_true_random=False),
    loss=st.sampled_from([0.0, 0.1, 0.3]),
)
def test_lossy_capture_never_delivers_wrong_bytes(
    streams: tuple[bytes, bytes], rnd: random.Random, loss: float
) -> None:
    segs = _conversation(rnd, streams)
    handshake_, rest = segs[:2], segs[2:]
    perturbed = False
    captured: list[TcpSegment] = []
    later: list[tuple[int, TcpSegment]] = []  # retransmissions, due after some more segments
    for i, s in enumerate(rest):
        captured += [r for due, r in later if due == i]
        roll = rnd.random()
        if roll < loss / 2:  # not captured
            perturbed = True
        elif roll < loss and s.payload:  # truncated by the snap length
            keep = rnd.randrange(len(s.payload))
            captured.append(s._replace(payload=s.payload[:keep], missing=len(s.payload) - keep))
            perturbed = True
        else:
            captured.append(s)
        if rnd.random() < 0.1:  # retransmitted later (a copy of a lost one fills its hole)
            later.append((i + rnd.randint(1, 5), s))
    captured += [r for due, r in later if due >= len(rest)]
    if loss and rnd.random() < 0.5:  # a little reordering
        for i in range(len(captured) - 1):
            if rnd.random() < 0.2:
                captured[i], captured[i + 1] = captured[i + 1], captured[i]
                perturbed = True
    r = TcpReassembler()
    events = [*run(r, [*handshake_, *captured]), *r.close()]
    for e in events:
        if isinstance(e, StreamData):
            assert e.data == streams[e.direction][e.offset : e.offset + len(e.data)]
    conn = events[0].connection
    for d in (0, 1):
        got = stream(events, d)
        if not perturbed:
            assert got == streams[d]
            assert conn.gaps[d] == 0
        assert conn.bytes[d] == len(got)
        assert conn.bytes[d] + conn.gaps[d] <= len(streams[d])
    assert not any(d.code == "tcp.overlap_mismatch" for d in conn.diagnostics)


def _displace_acks(rnd: random.Random, segs: list[TcpSegment], moves: int) -> list[TcpSegment]:
    """Move some segments before up to 3 segments of the other direction that precede them
    (an ACK captured before the data it acknowledges); no byte is lost, and the segments of
    each direction keep their order."""
    segs = list(segs)
    for _ in range(moves):
        i = rnd.randrange(2, len(segs)) if len(segs) > 2 else 0
        if i < 2:
            break
        j = i
        while j > 2 and i - j < 3 and segs[j - 1].src != segs[i].src:
            j -= 1
        j = rnd.randint(j, i)
        segs.insert(j, segs.pop(i))
    return segs


@settings(max_examples=200, deadline=None)
@given(
    streams=st.tuples(st.binary(max_size=1500), st.binary(max_size=1500)),
    rnd=st.randoms(use_true_random=False),
    moves=st.integers(0, 6),
)
def test_acks_captured_before_their_data_lose_nothing_and_keep_causal_order(
    streams: tuple[bytes, bytes], rnd: random.Random, moves: int
) -> None:
    segs = _displace_acks(rnd, _conversation(rnd, streams), moves)
    r = TcpReassembler()
    events = [*run(r, segs), *r.close()]
    assert stream(events, 0) == streams[0]
    assert stream(events, 1) == streams[1]
    assert not any(isinstance(e, StreamGap) for e in events)
    delivered = [0, 0]
    for e in events:
        if isinstance(e, StreamData):
            assert e.acked <= delivered[1 - e.direction]  # the peer's bytes came first
            delivered[e.direction] = e.offset + len(e.data)
    assert "tcp.gap" not in codes(events[0].connection)


def test_a_lost_syn_ack_is_learned_from_the_handshake_ack() -> None:
    """The client's bare ACK right after its SYN acknowledges the server's SYN: the server's
    first byte is known, so its first segment lost later is a gap at offset 0, and what the
    client's requests acknowledge is known from the start."""
    r = TcpReassembler()
    events = run(
        r,
        [
            seg("c", 1000, 0, SYN, ts=0.1),  # the SYN+ACK (5000) is not in the capture
            seg("c", 1001, 5001, ACK, ts=0.3),
            seg("c", 1001, 5001, ACK | PSH, b"GET /a", ts=0.4),
            # the server's first response (5001..5011) is lost too
            seg("c", 1007, 5011, ACK | PSH, b"GET /b", ts=0.6),
            seg("s", 5011, 1013, ACK | PSH, b"second", ts=0.7),
            seg("s", 5017, 1013, ACK | FIN, ts=0.8),
        ],
    )
    data = [e for e in events if isinstance(e, StreamData)]
    assert [(e.direction, e.offset, e.acked) for e in data] == [(0, 0, 0), (0, 6, 10), (1, 10, 12)]
    assert ("gap", 1, 10, 0) in summary(events)


def test_only_the_bare_ack_after_the_syn_tells_the_servers_start() -> None:
    """A client data segment's ACK may cover server bytes the capture lost: not a start."""
    r = TcpReassembler()
    events = run(
        r,
        [
            seg("c", 1000, 0, SYN, ts=0.1),
            seg("c", 1001, 5011, ACK | PSH, b"HELO", ts=0.4),  # the server spoke first
            seg("s", 5011, 1005, ACK | PSH, b"ok", ts=0.5),
        ],
    )
    data = [e for e in events if isinstance(e, StreamData)]
    assert [(e.direction, e.offset, e.acked) for e in data] == [(0, 0, -1), (1, 0, 4)]
