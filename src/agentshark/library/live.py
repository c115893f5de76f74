""":func:`live`: what inputs being written hold, as it becomes final, as typed updates.

The updates come from a :class:`LiveSource`. Two are here: the files being written
(:class:`~agentshark.pipeline.follow.Follower`: a capture ``tcpdump -U -w`` writes, a HAR
file a gateway rewrites, an MCP stdio transcript, and the key logs beside them), and
:class:`ExchangeFeed`, which a producer in the same process (a recording gateway, a live
capture) pushes finished exchanges into. Anything else with the same two methods plugs in.

**The source protocol.** A live source has ``poll()``, which never blocks and returns the
updates found since the last poll, and ``close()``, which ends the inputs and returns the
rest, the final traces among them; after ``close()`` nothing more comes. The updates are
those of :mod:`agentshark.pipeline.follow` (``ExchangeFinished``, ``CallFinished``,
``ConnectionFinished``, ``DiagnosticFound``, ``SourceFinished``, and the trace changes of
:mod:`agentshark.trace.changes`), each final when made except that traces are rebuilt as
calls come. Both sources here build them with the follower's own
:class:`~agentshark.pipeline.follow.LiveTraces`, so traces and incidents are those
``agentshark analyze`` gives once the input is whole.

:func:`live` turns each update into a :class:`LiveUpdate`: its JSON (exactly the line
``agentshark analyze --follow --format json`` prints for it, redacted unless
``redact=False``) and, for calls, traces and incidents, the typed view of the report's
object (:mod:`agentshark.library.views`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, Protocol

from agentshark.http.content import DEFAULT_DECODE_LIMIT
from agentshark.library.views import Call, Incident, Trace
from agentshark.model import Exchange
from agentshark.output.live import update_json
from agentshark.output.report import RenderOptions
from agentshark.pipeline import PAUSE, Item, Options, Pause, SourceReport, _with_calls
from agentshark.pipeline.follow import POLL_INTERVAL, Follower, LiveTraces, Update
from agentshark.pipeline.live import until_pause

Json = Any
StrPath = str | PathLike[str]

__all__ = ["ExchangeFeed", "LiveSource", "LiveUpdate", "live"]


class LiveSource(Protocol):
    """What :func:`live` reads (see the module docstring)."""

    def poll(self) -> list[Update]: ...

    def close(self) -> list[Update]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveUpdate:
    """One update: ``kind`` is ``exchange``, ``call``, ``connection``, ``diagnostic``,
    ``trace``, ``trace_absorbed``, ``incident``, ``incident_withdrawn`` or ``source``;
    ``data`` its JSON (with ``"update": kind``); ``call``, ``trace``, ``incident`` the
    typed view for those kinds (``incident`` also for a withdrawn one), else None."""

    kind: str
    data: dict[str, Json] = field(repr=False)
    call: Call | None = None
    trace: Trace | None = None
    incident: Incident | None = None

    @classmethod
    def of(cls, update: Update, render: RenderOptions) -> LiveUpdate:
        data = update_json(update, render)
        kind = str(data["update"])
        return cls(
            kind=kind,
            data=data,
            call=Call.from_json(data["call"]) if kind == "call" else None,
            trace=Trace.from_json(data["trace"]) if kind == "trace" else None,
            incident=Incident.from_json(data["incident"]) if "incident" in data else None,
        )


def live(
    source: StrPath | Sequence[StrPath] | LiveSource,
    *,
    keylogs: Sequence[StrPath] = (),
    redact: bool = True,
    stop: threading.Event | None = None,
    idle: float | None = None,
    interval: float = POLL_INTERVAL,
    max_body: int = DEFAULT_DECODE_LIMIT,
) -> Iterator[LiveUpdate]:
    """Updates from ``source`` (files to follow, or a :class:`LiveSource`) until ``stop``
    is set or, with ``idle``, once nothing came for ``idle`` seconds; then those of its
    ``close()``. Leaving the loop early (``break``, an exception) closes the source too.
    ``keylogs`` (followed as they grow) and ``max_body`` are for files only."""
    if isinstance(source, str | PathLike | Sequence):
        files = [str(source)] if isinstance(source, str | PathLike) else [str(p) for p in source]
        source = Follower(files, keylogs=[str(k) for k in keylogs], max_body=max_body)
    elif keylogs:
        raise ValueError("keylogs go with files; a live source decrypts what it reads itself")
    render = RenderOptions(redact=redact, max_body=max_body)
    stop = stop or threading.Event()
    last = time.monotonic()
    closed = False
    try:
        while not stop.is_set():
            updates = source.poll()
            for update in updates:
                yield LiveUpdate.of(update, render)
            now = time.monotonic()
            if updates:
                last = now
            elif idle is not None and now - last >= idle:
                break
            stop.wait(interval)
        closed = True
        for update in source.close():
            yield LiveUpdate.of(update, render)
    finally:
        if not closed:
            source.close()


class ExchangeFeed:
    """A :class:`LiveSource` fed finished exchanges by a producer in this process.

    The producer (a gateway's addon, a capture loop) calls :meth:`push` with each
    :class:`~agentshark.model.Exchange` once both its messages ended (ids unique within
    the feed, ``source`` 0), from any thread, and :meth:`finish` when its input ended, with
    the :class:`~agentshark.pipeline.SourceReport` describing it if it has one. Calls are
    recognized in the pushed exchanges by the pipeline's own stage (MCP calls that need a
    later exchange of their session come with it, or at the end), traces built as by the
    follower."""

    def __init__(self, *, max_body: int = DEFAULT_DECODE_LIMIT) -> None:
        self._lock = threading.Lock()
        self._inbox: deque[Item] = deque()
        self._ended = False
        self._closed = False
        self.live = LiveTraces()
        self._chain: Iterator[Item | Pause] = _with_calls(
            self._items(), Options(max_body=max_body, calls=True)
        )

    def push(self, exchange: Exchange) -> None:
        with self._lock:
            if self._ended:
                raise ValueError("the feed was finished: no exchange comes after finish()")
            self._inbox.append(exchange)

    def finish(self, report: SourceReport | None = None) -> None:
        with self._lock:
            if report is not None:
                self._inbox.append(report)
            self._ended = True

    def _items(self) -> Iterator[Item | Pause]:
        while True:
            with self._lock:
                item = self._inbox.popleft() if self._inbox else None
            if item is not None:
                yield item
            elif self._closed:
                return
            else:
                yield PAUSE

    def poll(self) -> list[Update]:
        if self._closed:
            return []
        out = self.live.items(until_pause(self._chain))
        out.extend(self.live.tick(time.monotonic()))
        return out

    def close(self) -> list[Update]:
        if self._closed:
            return []
        self.finish()
        out = self.live.items(until_pause(self._chain))
        self._closed = True
        out.extend(self.live.items(list(_rest(self._chain))))
        out.extend(self.live.finish())
        return out


def _rest(chain: Iterator[Item | Pause]) -> Iterator[Item]:
    for item in chain:
        if not isinstance(item, Pause):
            yield item
