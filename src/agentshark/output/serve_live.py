"""``agentshark serve --live``: a capture being written, shown as it grows.

A :class:`LiveSource` is the :class:`~agentshark.output.serve.ViewSource` of a growing file
(a pcap from ``tcpdump -w``, a pcapng, an MCP stdio transcript, a HAR file or cassette a
gateway rewrites: ``agentshark serve --live run.har`` follows ``agentshark proxy -w run.har``
from another process, through the follower's own seam, each HAR read again whole when it
changed; the proxy needs no web server of its own, and the page shows what any recording
gateway writes): a :class:`~agentshark.pipeline.follow.Follower` reads it in a worker
thread, and every exchange, call and connection it finishes is rendered as the report
renders it (:func:`~agentshark.output.report.exchange_json` with events,
:func:`~agentshark.output.report.call_json`, through the one redactor). When something
changed, at most once a second, the report so far (with the follower's current traces and
incidents) is projected for the viewer again and ``version`` goes up; the viewer, seeing
``live: true``, polls the index and redraws. Nothing is analyzed twice: the follower's items
are the pipeline's own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from agentshark.output.report import RenderOptions, call_json, connection_json, exchange_json
from agentshark.output.viewer_data import project
from agentshark.output.viewer_run import RawBodies
from agentshark.pipeline.follow import (
    CallFinished,
    ConnectionFinished,
    ExchangeFinished,
    Follower,
    Update,
)

__all__ = ["LiveSource"]

Json = Any
_PROJECT_EVERY = 1.0  # seconds between two projections at most
_POLL = 0.05


class LiveSource:
    """A growing input followed in a thread (``close`` stops it)."""

    def __init__(
        self, files: Sequence[str], keylogs: Sequence[str], *, max_body: int, redact: bool
    ) -> None:
        self._render = RenderOptions(redact=redact, events=True, max_body=max_body)
        self._follower = Follower(list(files), keylogs=list(keylogs), max_body=max_body)
        self._raw = RawBodies(self._render.redactor, max_body=max_body)
        self._exchanges: list[Json] = []
        self._calls: list[Json] = []
        self._connections: list[Json] = []
        self._lock = threading.Lock()
        self._version = 0
        self._index: dict[str, Json] = {}
        self._traces: list[dict[str, Json]] = []
        self._stop = threading.Event()
        self._project()
        self._thread = threading.Thread(target=self._follow, name="agentshark-live", daemon=True)
        self._thread.start()

    # -- ViewSource ---------------------------------------------------------------------------

    def index(self) -> dict[str, Json]:
        with self._lock:
            return self._index

    def trace(self, i: int) -> dict[str, Json] | None:
        with self._lock:
            return self._traces[i] if 0 <= i < len(self._traces) else None

    def summary(self) -> dict[str, Json] | None:
        with self._lock:
            s: dict[str, Json] = self._index.get("summary", {})
            return {k: v for k, v in s.items() if isinstance(v, int | None)}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    # -- the worker ---------------------------------------------------------------------------

    def _follow(self) -> None:
        last = time.monotonic()
        dirty = False
        while not self._stop.is_set():
            updates = self._follower.poll()
            dirty = self._apply(updates) or dirty
            now = time.monotonic()
            if dirty and now - last >= _PROJECT_EVERY:
                self._project()
                dirty, last = False, now
            if not updates:
                self._stop.wait(_POLL)
        self._apply(self._follower.close())
        self._project(live=False)

    def _apply(self, updates: list[Update]) -> bool:
        changed = False
        for update in updates:
            if isinstance(update, ExchangeFinished):
                self._exchanges.append(exchange_json(update.exchange, self._render))
                self._raw.keep(update.exchange)
            elif isinstance(update, CallFinished):
                self._calls.append(call_json(update.call, self._render))
            elif isinstance(update, ConnectionFinished):
                self._connections.append(self._render.redactor.json(connection_json(update.report)))
            else:
                changed = True  # traces, incidents: the follower's analysis has them
                continue
            changed = True
        return changed

    def _project(self, *, live: bool = True) -> None:
        analysis = self._follower.live.analysis
        redact = self._render.redactor
        report = {
            "exchanges": list(self._exchanges),
            "calls": list(self._calls),
            "traces": [redact.json(t.to_json()) for t in analysis.traces],
            "incidents": [redact.json(i.to_json()) for i in analysis.incidents],
            "connections": list(self._connections),
            "sources": [],
            "not_parsed": [],
        }
        data = project(report, self._raw.bodies)
        with self._lock:
            self._version += 1
            self._index = {**data.index, "version": self._version, "live": live}
            self._traces = data.traces
