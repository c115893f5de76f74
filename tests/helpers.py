"""Shared test helpers: feeding decoders three ways, and where the shared data lives."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from agentshark.model import Body, Exchange, Request, Response

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"
CAPTURES = SHARED / "captures"


class IncrementalDecoder(Protocol):
    def feed(self, data: bytes, ts: float) -> Sequence[Any]: ...

    def close(self, ts: float) -> Sequence[Any]: ...


def feed_whole(make: Callable[[], IncrementalDecoder], data: bytes) -> list[Any]:
    d = make()
    return [*d.feed(data, 1.0), *d.close(2.0)]


def feed_bytewise(make: Callable[[], IncrementalDecoder], data: bytes) -> list[Any]:
    d = make()
    out: list[Any] = []
    for i in range(len(data)):
        out.extend(d.feed(data[i : i + 1], 1.0))
    out.extend(d.close(2.0))
    return out


def feed_three_ways(
    make: Callable[[], IncrementalDecoder],
    data: bytes,
    *,
    trailing: bytes = b"",
    normalize: Callable[[Any], Any] = lambda e: e,
) -> list[Any]:
    """Feed ``data`` whole, one byte at a time, and followed by ``trailing`` bytes.

    Whole and byte-by-byte must give the same events (timestamps aside: pass a
    ``normalize`` that drops them if the decoder stamps events). With trailing bytes, the
    events of ``data`` must come first, unchanged. Returns the events of the whole feed.
    """
    whole = [normalize(e) for e in feed_whole(make, data)]
    bytewise = [normalize(e) for e in feed_bytewise(make, data)]
    assert whole == bytewise, "byte-by-byte feeding changed the events"
    if trailing:
        d = make()
        with_trailing = [normalize(e) for e in d.feed(data, 1.0)]
        with_trailing += [normalize(e) for e in d.feed(trailing, 1.0)]
        with_trailing += [normalize(e) for e in d.close(2.0)]
        complete = [e for e in whole if not _is_end_artifact(e)]
        assert with_trailing[: len(complete)] == complete, "trailing bytes changed earlier events"
    return whole


def _is_end_artifact(event: Any) -> bool:
    """Events produced only because the input stopped (a truncation diagnostic, a partial
    event): they may legitimately change when more bytes follow."""
    from agentshark.errors import Diagnostic

    return isinstance(event, Diagnostic) or getattr(event, "complete", True) is False


class Collected:
    """Everything one pipeline run yielded, sorted by kind."""

    def __init__(self, paths: list[str], options: Any = None) -> None:
        from agentshark.apis.model import Call
        from agentshark.model import Exchange
        from agentshark.pipeline import ConnectionReport, SourceReport, run

        self.exchanges: list[Exchange] = []
        self.calls: list[Call] = []
        self.connections: list[ConnectionReport] = []
        self.sources: list[SourceReport] = []
        for item in run(paths, options):
            if isinstance(item, Exchange):
                self.exchanges.append(item)
            elif isinstance(item, Call):
                self.calls.append(item)
            elif isinstance(item, ConnectionReport):
                self.connections.append(item)
            else:
                self.sources.append(item)


def http_exchange(
    *,
    method: str,
    url: str,
    target: str,
    request_body: bytes,
    request_headers: list[tuple[str, str]],
    response_pieces: list[tuple[float, bytes]] | None,
    status: int = 200,
    response_headers: list[tuple[str, str]] | None = None,
    response_complete: bool = True,
    response_started: float | None = None,
    response_ended: float | None = None,
) -> Exchange:
    """An HTTP/1.1 exchange built by hand for API-family tests: the request at t=0.5, the
    response's pieces as given (empty ones dropped), no response when ``response_pieces``
    is None."""
    response = None
    if response_pieces is not None:
        pieces = response_pieces
        response = Response(
            status=status,
            reason="",
            version="HTTP/1.1",
            headers=response_headers or [],
            body=Body(pieces=[p for p in pieces if p[1]]),
            started=response_started
            if response_started is not None
            else (pieces[0][0] if pieces else 1.0),
            ended=response_ended
            if response_ended is not None
            else (pieces[-1][0] if pieces else 1.0),
            complete=response_complete,
        )
    return Exchange(
        id="x1",
        source=0,
        connection=None,
        transport="http/1.1",
        request=Request(
            method=method,
            target=target,
            url=url,
            version="HTTP/1.1",
            headers=request_headers,
            body=Body(pieces=[(0.5, request_body)] if request_body else []),
            started=0.5,
            ended=0.5,
            complete=True,
        ),
        response=response,
    )


def own_tls_captures() -> list[str]:
    """The folders of tests/data/captures made by scripts/make_tls_captures.py (TLS and
    HTTP/2 cases with a key log; the agent protocol captures have their own tests)."""
    own = ROOT / "tests" / "data" / "captures"
    return sorted(
        p.name
        for p in own.iterdir()
        if (p / "keys.log").exists()
        and json.loads((p / "truth.json").read_text())["made_by"] == "scripts/make_tls_captures.py"
    )
