"""Acknowledgments translated into the peer's plaintext offsets (TlsPlaintext.acked)."""

from __future__ import annotations

from agentshark.net.events import StreamData, StreamEnded, StreamGap, TcpEvent
from agentshark.tls import TlsConnection, TlsEvent, TlsGap, TlsPlaintext
from agentshark.tls.direction import MAX_MARKS, Direction
from tests.tls.holes import cut, records
from tests.tls.test_resync import capture


def feed(events: list[TcpEvent], cap: int = 1 << 62) -> list[tuple[TlsPlaintext, int, int]]:
    """Feeds c1 of llm_sdk_openai; each server segment acknowledges all the client bytes so
    far, or ``cap`` if less. Returns (server plaintext event, client TCP offset it acked,
    client plaintext so far, TlsGap sizes included)."""
    _, keylog = capture("llm_sdk_openai")
    tls = TlsConnection(keylog)
    client_tcp = client_plain = 0
    seen: list[tuple[TlsPlaintext, int, int]] = []
    for ev in events:
        out: list[TlsEvent] = []
        if isinstance(ev, StreamData):
            if ev.direction == 0:
                client_tcp = ev.offset + len(ev.data)
                out = tls.feed(0, ev.data, ev.ts, 0)
            else:
                acked = min(client_tcp, cap)
                out = tls.feed(1, ev.data, ev.ts, acked)
                seen += [(e, acked, client_plain) for e in out if isinstance(e, TlsPlaintext)]
        elif isinstance(ev, StreamGap):
            out = tls.gap(ev.direction, ev.size, ev.ts)
            if ev.direction == 0:
                client_tcp = ev.offset + ev.size
        elif isinstance(ev, StreamEnded):
            out = tls.end(ev.direction, ev.ts)
        for e in out:
            if isinstance(e, TlsPlaintext | TlsGap) and e.direction == 0:
                client_plain += e.size if isinstance(e, TlsGap) else len(e.data)
    return seen


def test_everything_sent_acknowledged_is_all_the_plaintext_so_far() -> None:
    cap, _ = capture("llm_sdk_openai")
    seen = feed(cap.events["c1"])
    assert seen and all(ev.acked == plain for ev, _, plain in seen)
    assert seen[-1][0].acked > 3000  # the requests of the whole session


def test_an_acknowledgment_inside_a_record_counts_the_records_below_it() -> None:
    cap, _ = capture("llm_sdk_openai")
    events = cap.events["c1"]
    client = [r for r in records(events, 0) if r[0] == 23]
    clean = feed(events)
    last_end = client[-1][1] + client[-1][2]
    partial = feed(events, last_end - 1)  # one byte short of the client's last record
    assert feed(events, last_end)[-1][0].acked == clean[-1][0].acked
    assert partial[-1][0].acked == clean[-1][0].acked - (client[-1][2] - 22)


def test_an_acknowledgment_of_bytes_not_seen_is_unknown() -> None:
    cap, keylog = capture("llm_sdk_openai")
    tls = TlsConnection(keylog)
    out: list[TlsEvent] = []
    client_tcp = 0
    for ev in cap.events["c1"]:
        if isinstance(ev, StreamData):
            if ev.direction == 0:
                client_tcp = ev.offset + len(ev.data)
            out += tls.feed(ev.direction, ev.data, ev.ts, client_tcp + 1 if ev.direction else 0)
    server = [e for e in out if isinstance(e, TlsPlaintext) and e.direction == 1]
    assert server and all(e.acked == -1 for e in server)


def test_acknowledgments_into_lost_bytes_are_unknown_then_resume() -> None:
    cap, _ = capture("llm_sdk_openai")
    client = [r for r in records(cap.events["c1"], 0) if r[0] == 23]
    _, offset, size = client[4]
    events = cut(cap.events["c1"], 0, offset + 5, offset + size - 5)
    seen = feed(events)
    # Before the gap and after the record found, the translation is exact; while the
    # search is on (the next record has not arrived), the acknowledged bytes are unknown.
    assert [ev.acked for ev, acked, _ in seen if offset < acked <= offset + size] == [-1] * 13
    known = [(ev.acked, plain) for ev, acked, plain in seen if not offset < acked <= offset + size]
    assert known and all(got == want for got, want in known)
    assert max(got for got, _ in known) > offset  # past the gap, TlsGap included


def test_marks_are_bounded_and_dropped_ones_are_unknown() -> None:
    d = Direction(0)
    for i in range(1, 3 * MAX_MARKS):
        d.marks.append((i * 100, (i - 1) * 10, i * 10))  # as session does, record by record
        d.rec_end = i * 100
    assert len(d.marks) == MAX_MARKS
    assert d.translate(150) == -1  # its record's mark was dropped unread
    newest = (3 * MAX_MARKS - 1) * 100
    assert d.translate(newest - 50) == (3 * MAX_MARKS - 2) * 10
    assert d.translate(newest) == (3 * MAX_MARKS - 1) * 10
    assert len(d.marks) == 0  # trimmed by the acknowledgment
    assert d.translate(newest + 1) == -1  # past what was seen
