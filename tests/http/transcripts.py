"""Feeding HTTP parsers a conversation, whole or in slices, for both HTTP versions' tests."""

from __future__ import annotations

from typing import Protocol

from agentshark.http.events import BodyData, HttpEvent

Transcript = list[tuple[int, bytes]]  # (direction, bytes) in the order they were sent


class Parser(Protocol):
    def feed(self, direction: int, data: bytes, ts: float) -> list[HttpEvent]: ...

    def end(self, direction: int, ts: float, *, clean: bool) -> list[HttpEvent]: ...


def feed(
    parser: Parser, transcript: Transcript, *, step: int = 0, ends: bool = True
) -> list[HttpEvent]:
    """Feed each (direction, bytes) whole (step 0) or in slices of ``step`` bytes."""
    out: list[HttpEvent] = []
    for direction, data in transcript:
        if step:
            for i in range(0, len(data), step):
                out.extend(parser.feed(direction, data[i : i + step], 1.0))
        else:
            out.extend(parser.feed(direction, data, 1.0))
    if ends:
        out.extend(parser.end(0, 2.0, clean=True))
        out.extend(parser.end(1, 2.0, clean=True))
    return out


def merged(events: list[HttpEvent]) -> list[HttpEvent]:
    """Events with consecutive BodyData of one message merged: segmentation-independent."""
    result: list[HttpEvent] = []
    for ev in events:
        if isinstance(ev, BodyData) and result:
            last = result[-1]
            if isinstance(last, BodyData) and (last.stream, last.response) == (
                ev.stream,
                ev.response,
            ):
                result[-1] = BodyData(
                    stream=ev.stream, response=ev.response, data=last.data + ev.data, ts=ev.ts
                )
                continue
        result.append(ev)
    return result
