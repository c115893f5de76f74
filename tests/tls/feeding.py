"""Feeding a TlsConnection the flights of a session: whole, byte by byte, in random chunks."""

from __future__ import annotations

import random
from collections.abc import Sequence

from agentshark.errors import Diagnostic
from agentshark.tls import KeyLog, TlsAlert, TlsConnection, TlsEvent, TlsPlaintext
from agentshark.tls.events import TlsGap

Flight = tuple[int, bytes]
Normal = tuple[str, int, object]


def run(
    keylog: KeyLog,
    flights: Sequence[Flight],
    *,
    chunk: int | random.Random | None = None,
    trailing: Flight | None = None,
    end: bool = True,
) -> tuple[TlsConnection, list[TlsEvent]]:
    """Feed each flight (flight ``i`` at ``ts = i + 1``), cut in chunks if asked, then end."""
    tls = TlsConnection(keylog, location="test c1")
    events: list[TlsEvent] = []
    for i, (direction, data) in enumerate([*flights, *([trailing] if trailing else [])]):
        pos = 0
        while pos < len(data):
            if chunk is None:
                step = len(data)
            elif isinstance(chunk, int):
                step = chunk
            else:
                step = chunk.randint(1, 300)
            events += tls.feed(direction, data[pos : pos + step], float(i + 1))
            pos += step
    if end:
        for direction in (0, 1):
            events += tls.end(direction, 99.0)
    return tls, events


def normalize(events: Sequence[TlsEvent]) -> list[Normal]:
    """Events without time stamps, runs of plaintext of one direction joined together."""
    out: list[Normal] = []
    for ev in events:
        if isinstance(ev, TlsPlaintext):
            if out and out[-1][0] == "data" and out[-1][1] == ev.direction:
                previous = out[-1][2]
                assert isinstance(previous, bytes)
                out[-1] = ("data", ev.direction, previous + ev.data)
            else:
                out.append(("data", ev.direction, ev.data))
        elif isinstance(ev, TlsAlert):
            out.append(("alert", ev.direction, (ev.level, ev.description, ev.encrypted)))
        elif isinstance(ev, TlsGap):
            out.append(("gap", ev.direction, ev.size))
        else:
            out.append(("diagnostic", 0, (ev.code, ev.severity)))
    return out


def plaintext(events: Sequence[TlsEvent]) -> tuple[bytes, bytes]:
    data = [b"", b""]
    for ev in events:
        if isinstance(ev, TlsPlaintext):
            data[ev.direction] += ev.data
    return data[0], data[1]


def diagnostics(events: Sequence[TlsEvent]) -> list[Diagnostic]:
    return [ev for ev in events if isinstance(ev, Diagnostic)]


def gaps(events: Sequence[TlsEvent]) -> list[TlsGap]:
    return [ev for ev in events if isinstance(ev, TlsGap)]


def run_three_ways(keylog_text: bytes, flights: Sequence[Flight], seed: int = 0) -> list[TlsEvent]:
    """Whole flights, byte by byte, random chunks, and with trailing garbage: the same events.

    Returns the events of the whole feed.
    """

    def fresh() -> KeyLog:
        keylog = KeyLog()
        assert keylog.add_text(keylog_text, "keys.log") == []
        return keylog

    _, whole = run(fresh(), flights)
    _, bytewise = run(fresh(), flights, chunk=1)
    _, chunked = run(fresh(), flights, chunk=random.Random(seed))
    assert normalize(bytewise) == normalize(whole), "byte-by-byte feeding changed the events"
    assert normalize(chunked) == normalize(whole), "random chunks changed the events"
    _, trailing = run(fresh(), flights, trailing=(1, b"HTTP/1.1 400 Bad Request\r\n\r\n"))
    complete = [e for e in normalize(whole) if e[0] != "diagnostic"]
    got = [e for e in normalize(trailing) if e[0] != "diagnostic"]
    assert got == complete, "trailing bytes changed earlier events"
    assert ("diagnostic", 0, ("tls.bad_record", "warning")) in normalize(trailing)
    return whole
