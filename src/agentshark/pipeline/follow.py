"""Follow captures and transcripts while they are written: what they hold, as it is final.

The seam for live views (``agentshark analyze --follow``, the web UI)::

    follower = Follower(["agent.pcap"], keylogs=["keys.log"])
    for update in follower.updates(stop_event):      # blocks; ends when stop_event is set
        send(update_json(update, RenderOptions()))   # agentshark.output.live

or, from a loop of one's own, :meth:`Follower.poll` (never blocks) every few tens of
milliseconds and :meth:`Follower.close` at the end. Updates are facts, each final when
made, except that traces are rebuilt as calls come (:mod:`agentshark.trace.changes`):

- :class:`ExchangeFinished`, :class:`CallFinished`: as the pipeline yields them (an HTTP
  exchange once both its messages ended; a call right after its exchange, except that a
  WebSocket session's calls (OpenAI Realtime, Gemini Live) come each once it is final,
  while the session is open: ``Options.early_calls``, :mod:`agentshark.apis.websocket`).
- :class:`ConnectionFinished`: a TCP connection closed (its report).
- :class:`DiagnosticFound`: a problem of an input as it is found (``follow.truncated``,
  ``follow.replaced``, a cut-off record at the end...).
- :class:`~agentshark.trace.changes.TraceChanged`, ``TraceAbsorbed``, ``IncidentFound``,
  ``IncidentWithdrawn``: the traces after each rebuild.
- :class:`SourceFinished`: an input ended (its report), at :meth:`Follower.close` or
  when it was truncated or replaced.

Traces are rebuilt from every call kept (``Analysis.finish``: its cost grows with the calls,
about 0.2 s for 250 calls and 1.2 s for 1,000 on the shared machine, ``bench/follow.py
rebuild``), only when calls or exchanges came, at most ``rebuilds_per_second`` times a
second, and never more often than keeps rebuilding under ``share`` (a quarter) of the time:
after a rebuild that took ``t`` seconds, the next waits ``max(1 / rebuilds_per_second,
t / share)``. Calls that finish together cost one rebuild. After :meth:`Follower.close`
the traces and incidents are those ``agentshark analyze`` gives for the finished files (for
one file, the same ids).

The state is :class:`~agentshark.pipeline.live.LiveRun` (sans-I/O) and :class:`LiveTraces`
(items in, updates out, with the time passed in); :class:`Follower` adds the files
(:class:`~agentshark.sources.tail.TailFile`) and the clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from agentshark.apis.model import Call
from agentshark.errors import Diagnostic
from agentshark.http.content import DEFAULT_DECODE_LIMIT
from agentshark.model import Exchange
from agentshark.pipeline import ConnectionReport, Item, Options, SourceReport
from agentshark.pipeline.live import LiveRun
from agentshark.sources.tail import TailFile
from agentshark.trace.changes import TraceChanges, TraceUpdate
from agentshark.trace.collect import Analysis

__all__ = [
    "CallFinished",
    "ConnectionFinished",
    "DiagnosticFound",
    "ExchangeFinished",
    "Follower",
    "LiveTraces",
    "SourceFinished",
    "Update",
]

POLL_INTERVAL = 0.05  # seconds between two looks at the files when they did not grow
BUSY_INTERVAL = 0.002  # seconds after a look that found the files grown
MAX_READ = 8 << 20  # bytes read from one file per poll, so that one poll stays short


@dataclass(frozen=True, slots=True, kw_only=True)
class ExchangeFinished:
    exchange: Exchange


@dataclass(frozen=True, slots=True, kw_only=True)
class CallFinished:
    call: Call


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionFinished:
    report: ConnectionReport


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceFinished:
    report: SourceReport


@dataclass(frozen=True, slots=True, kw_only=True)
class DiagnosticFound:
    path: str  # the input it concerns
    diagnostic: Diagnostic


Update = (
    ExchangeFinished
    | CallFinished
    | ConnectionFinished
    | SourceFinished
    | DiagnosticFound
    | TraceUpdate
)


class LiveTraces:
    """Pipeline items -> updates; the traces rebuilt when due (sans-I/O: ``now`` is given)."""

    def __init__(
        self, *, traces: bool = True, rebuilds_per_second: float = 4.0, share: float = 0.25
    ) -> None:
        self.analysis = Analysis()
        self.changes = TraceChanges()
        self.rebuilds = 0
        self.rebuild_seconds = 0.0  # time spent rebuilding, all rebuilds
        self._traces = traces
        self._gap = 1.0 / rebuilds_per_second
        self._share = share  # of the time rebuilds may take, when one rebuild is slow
        self._dirty = False
        self._next = float("-inf")  # when the next rebuild may start

    def items(self, items: Sequence[Item]) -> list[Update]:
        out: list[Update] = []
        for item in self.analysis.watch(iter(items)) if self._traces else items:
            if isinstance(item, Call):
                out.append(CallFinished(call=item))
                self._dirty = True
            elif isinstance(item, Exchange):
                out.append(ExchangeFinished(exchange=item))
                self._dirty = True  # an unclaimed request can be a tool's execution
            elif isinstance(item, ConnectionReport):
                out.append(ConnectionFinished(report=item))
            else:
                out.append(SourceFinished(report=item))
        return out

    def tick(self, now: float) -> list[Update]:
        """The trace changes, if calls came and the last rebuild is old enough."""
        if not (self._traces and self._dirty and now >= self._next):
            return []
        updates, took = self._rebuild()
        self._next = now + max(self._gap, took / self._share)
        return updates

    def finish(self) -> list[Update]:
        """The last rebuild: the traces of the whole input."""
        return self._rebuild()[0] if self._traces else []

    def _rebuild(self) -> tuple[list[Update], float]:
        """The changes, and how long the rebuild took (wall time)."""
        self._dirty = False
        started = time.perf_counter()
        self.analysis.finish()
        took = time.perf_counter() - started
        self.rebuilds += 1
        self.rebuild_seconds += took
        return list(self.changes.diff(self.analysis.traces, self.analysis.incidents)), took


class Follower:
    """Follow ``paths`` (captures, transcripts, HAR files, cassettes) as they grow.

    ``keylogs`` are followed too (a client appends a line per TLS session it opens); a
    secret logged after the follower read its session's packets comes too late for it.
    ``calls`` recognizes API calls (as ``agentshark calls``); ``traces`` also builds traces
    (as ``agentshark analyze``). ``clock`` is for tests."""

    def __init__(
        self,
        paths: Sequence[str],
        *,
        keylogs: Sequence[str] = (),
        max_body: int = DEFAULT_DECODE_LIMIT,
        calls: bool = True,
        traces: bool = True,
        rebuilds_per_second: float = 4.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.paths = list(paths)
        options = Options(max_body=max_body, calls=calls or traces, early_calls=True)
        self.run = LiveRun(self.paths, options)
        self._keys = [(self.run.follow_keylog(p), TailFile(p)) for p in keylogs]
        self.live = LiveTraces(traces=traces, rebuilds_per_second=rebuilds_per_second)
        self._tails = [TailFile(p) for p in self.paths]
        self._clock = clock
        self.started = clock()
        self.last_growth = self.started  # when a file last grew
        self.counts = {"bytes": 0, "exchanges": 0, "calls": 0, "traces": 0}
        self._said: set[int] = set()  # ids of the source diagnostics already reported
        self._pending = self._translate(self.run.start())
        self._closed = False

    def poll(self) -> list[Update]:
        """What the files gained since the last poll, as updates; never waits."""
        out, self._pending = self._pending, []
        # The captures are read first, the key logs then, and the captures' bytes pushed
        # last: a secret logged before its session's packets were read is known to them.
        read = [
            self._read(tail) if tail.ended is None and not self.run.document(i) else []
            for i, tail in enumerate(self._tails)
        ]
        for handle, tail in self._keys:
            for data in self._read(tail):
                self.run.push_keys(handle, data)
        for index, (tail, chunks) in enumerate(zip(self._tails, read, strict=True)):
            if chunks:
                self.counts["bytes"] += sum(map(len, chunks))
                self.last_growth = self._clock()
            for data in chunks:
                out.extend(self._translate(self.run.push(index, data)))
            if self.run.document(index):
                out.extend(self._reread(index, tail))
            if tail.ended is not None and not self.run.ended(index):
                out.extend(self._translate(self.run.end(index, tail.ended)))
        out.extend(self._said_now())
        out.extend(self._traced(self.live.tick(self._clock())))
        return out

    def _reread(self, index: int, tail: TailFile) -> list[Update]:
        """A document (HAR, cassette) read whole when it changed: its writers rewrite it."""
        data = tail.whole()
        if data is None:
            return []
        self.counts["bytes"] += len(data)
        self.last_growth = self._clock()
        return self._translate(self.run.replace(index, data))

    @staticmethod
    def _read(tail: TailFile) -> list[bytes]:
        chunks: list[bytes] = []
        got = 0
        while got < MAX_READ and (data := tail.read()):
            chunks.append(data)
            got += len(data)
        return chunks

    def close(self) -> list[Update]:
        """Read what is left, end every input, and the final traces."""
        if self._closed:
            return []
        out = self.poll()
        while any(t.pending() for t in self._tails) or any(t.pending() for _, t in self._keys):
            out.extend(self.poll())
        self._closed = True
        for index, tail in enumerate(self._tails):
            if not tail.opened and tail.ended is None:
                tail.ended = _unreadable(tail.path)
                out.extend(self._translate(self.run.end(index, tail.ended)))
            tail.close()
        for handle, tail in self._keys:
            if tail.ended is not None or not tail.opened:
                why = tail.ended.message if tail.ended else "it never appeared while followed"
                self.run.keylog_unreadable(handle, why)
            tail.close()
        out.extend(self._translate(self.run.close()))
        out.extend(self._said_now())
        out.extend(self._traced(self.live.finish()))
        return out

    def updates(
        self,
        stop: threading.Event | None = None,
        *,
        idle: float | None = None,
        interval: float = POLL_INTERVAL,
    ) -> Iterator[Update]:
        """Updates until ``stop`` is set, or until no file grew for ``idle`` seconds; then
        those of :meth:`close`. Waits ``interval`` seconds after a poll that read nothing,
        :data:`BUSY_INTERVAL` after one that read bytes. When
        the iteration is left otherwise (an exception, Ctrl-C), :meth:`close` gives the
        rest."""
        stop = stop or threading.Event()
        while not stop.is_set():
            read = self.counts["bytes"]
            yield from self.poll()
            if idle is not None and self._clock() - self.last_growth >= idle:
                break
            # a file that just grew is likely to grow again soon (the rest of a response)
            stop.wait(BUSY_INTERVAL if self.counts["bytes"] > read else interval)
        yield from self.close()

    def summary(self) -> str:
        """What was done so far, in one line."""
        c = self.counts
        seconds = self._clock() - self.started
        names = ", ".join(self.paths)
        return (
            f"followed {names} for {seconds:.1f}s: {c['bytes']} bytes read, "
            f"{c['exchanges']} exchanges, {c['calls']} calls, {c['traces']} traces"
        )

    def _translate(self, items: Sequence[Item]) -> list[Update]:
        out = self.live.items(items)
        for u in out:
            if isinstance(u, ExchangeFinished):
                self.counts["exchanges"] += 1
            elif isinstance(u, CallFinished):
                self.counts["calls"] += 1
        return out

    def _traced(self, updates: list[Update]) -> list[Update]:
        self.counts["traces"] = len(self.live.analysis.traces)
        return updates

    def _said_now(self) -> list[Update]:
        """The source diagnostics found since the last look."""
        out: list[Update] = []
        for report in self.run.reports:
            for d in report.diagnostics:
                if id(d) not in self._said:
                    self._said.add(id(d))
                    out.append(DiagnosticFound(path=report.path, diagnostic=d))
        return out


def _unreadable(path: str) -> Diagnostic:
    return Diagnostic(
        code="source.unreadable",
        severity="error",
        location=path,
        message=f"cannot read {path}: it never appeared while it was followed",
    )
