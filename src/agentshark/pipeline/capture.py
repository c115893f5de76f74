"""Live capture: tcpdump's packets analyzed as they come, and written as a pcapng.

The seam for ``agentshark capture`` and for library users (``agentshark.live``)::

    capture = LiveCapture("lo", ports=[8000], keylogs=["keys.log"], write="out.pcapng")
    for update in capture.updates(stop_event):   # blocks; ends when stop_event is set
        ...                                      # the Update values of pipeline.follow
    print(capture.summary())

:class:`LiveCapture` starts tcpdump (:mod:`agentshark.pipeline.tcpdump`) at construction
(a :class:`~agentshark.pipeline.tcpdump.CaptureError` says why it cannot), reads the pcap
it writes to a pipe (:class:`~agentshark.sources.feeds.PcapFeed`), and turns it into a
pcapng (:mod:`agentshark.sources.pcapng_write`) that is both the file written (``write``)
and the input of the live pipeline (:class:`~agentshark.pipeline.live.LiveRun` and
:class:`~agentshark.pipeline.follow.LiveTraces`, the state of ``analyze --follow``): so the
items, ids and traces are those ``agentshark analyze`` gives for the file written.

Key logs are followed as they are written (:class:`~agentshark.sources.tail.TailFile`: one
that does not exist yet is waited for) and TLS connections wait for their secrets in a
:class:`~agentshark.pipeline.keygate.KeyGate`, which writes the secrets used into the file
as Decryption Secrets Blocks before the packets that need them.

It ends when ``stop`` is set, when no packet came for ``idle`` seconds, after ``count``
calls, or when tcpdump exits; tcpdump is then stopped, the rest of its pipe read, every
held connection released, and the last updates (those of
:meth:`~agentshark.pipeline.follow.Follower.close`) given.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from agentshark.errors import Diagnostic
from agentshark.http.content import DEFAULT_DECODE_LIMIT
from agentshark.pipeline import Item, Options
from agentshark.pipeline.follow import (
    CallFinished,
    DiagnosticFound,
    ExchangeFinished,
    LiveTraces,
    Update,
)
from agentshark.pipeline.keygate import KEY_WAIT, KeyGate
from agentshark.pipeline.live import LiveRun
from agentshark.pipeline.tcpdump import CaptureError, TcpdumpChild, capture_filter
from agentshark.sources.feeds import CaptureItem, PcapFeed
from agentshark.sources.pcapng_write import epb, idb, shb
from agentshark.sources.records import Interface, Packet
from agentshark.sources.tail import TailFile

__all__ = ["CaptureError", "LiveCapture"]

POLL_INTERVAL = 0.05  # seconds waited for packets before looking at the key logs again


class LiveCapture:
    """Capture on ``interface`` (tcpdump's ``-i``): updates as calls finish.

    ``ports`` and ``bpf`` choose the packets (TCP on those ports, and the BPF expression);
    ``keylogs`` are followed as they grow; ``write`` is the pcapng written (its secrets
    embedded); ``name`` names the input in the report (``write``, else ``"IFACE (live)"``).
    ``calls`` and ``traces`` as for :class:`~agentshark.pipeline.follow.Follower`."""

    def __init__(
        self,
        interface: str = "lo",
        *,
        ports: Sequence[int] = (),
        bpf: str | None = None,
        keylogs: Sequence[str] = (),
        write: str | None = None,
        name: str | None = None,
        max_body: int = DEFAULT_DECODE_LIMIT,
        calls: bool = True,
        traces: bool = True,
        rebuilds_per_second: float = 4.0,
        key_wait: float = KEY_WAIT,
        tcpdump: str = "tcpdump",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interface = interface
        self.name = name or write or f"{interface} (live)"
        self.expression = capture_filter(ports, bpf)
        self.write = write
        self._clock = clock
        options = Options(max_body=max_body, calls=calls or traces, early_calls=True)
        self.run = LiveRun(
            [self.name], options
        )  # early calls: a Realtime call at its response.done
        self.live = LiveTraces(traces=traces, rebuilds_per_second=rebuilds_per_second)
        self.gate = KeyGate(wait=key_wait) if keylogs else None
        self._keys = [TailFile(p) for p in keylogs]
        self._feed = PcapFeed(self.name)
        self.counts = {"packets": 0, "bytes": 0, "exchanges": 0, "calls": 0, "traces": 0}
        self._said: set[int] = set()
        self._pending: list[Update] = self._translate(self.run.start())
        self._head = shb()  # written with the first interface
        self._units = 1_000_000  # timestamp units per second of the interface
        self._closed = False
        self.exit_status: int | None = None  # tcpdump's, once it exited
        self.child = TcpdumpChild(interface, self.expression, tcpdump=tcpdump)
        try:
            self._out: BinaryIO | None = Path(write).open("wb") if write else None  # noqa: SIM115
        except OSError:
            self.child.close()
            raise
        self.started = clock()
        self.last_packet = self.started  # when a packet last came

    def poll(self, timeout: float = 0.0) -> list[Update]:
        """What tcpdump wrote (waiting up to ``timeout`` seconds for it) and the key logs
        gained, as updates."""
        out, self._pending = self._pending, []
        chunks = self.child.read(timeout)
        out.extend(self._read_keys())
        blocks: list[bytes] = []
        now = self._clock()
        for data in chunks:
            self._records(self._feed.feed(data), blocks, out, now)
        if self.gate is not None:
            blocks.extend(self.gate.due(now))
        out.extend(self._push(blocks))
        out.extend(self._said_now())
        out.extend(self._traced(self.live.tick(now)))
        return out

    def updates(
        self,
        stop: threading.Event | None = None,
        *,
        idle: float | None = None,
        count: int | None = None,
        interval: float = POLL_INTERVAL,
    ) -> Iterator[Update]:
        """Updates until ``stop`` is set, no packet came for ``idle`` seconds, ``count``
        calls finished, or tcpdump exited; then those of :meth:`close`. If the iteration
        is left otherwise (an exception, Ctrl-C), :meth:`close` gives the rest."""
        stop = stop or threading.Event()
        try:
            while not self.child.eof:
                if self._should_stop(stop, idle, count):
                    self.child.stop()
                    if self.child.overdue():
                        break
                yield from self.poll(interval)
        finally:
            self.child.stop()
        yield from self.close()

    def _should_stop(self, stop: threading.Event, idle: float | None, count: int | None) -> bool:
        if stop.is_set() or (count is not None and self.counts["calls"] >= count):
            return True
        return idle is not None and self._clock() - self.last_packet >= idle

    def close(self) -> list[Update]:
        """Stop tcpdump, read the rest of its pipe and of the key logs, release every held
        connection, end the input; the last updates (the final traces)."""
        if self._closed:
            return []
        self.child.stop()
        out = self.poll()
        while not self.child.eof and not self.child.overdue():
            out.extend(self.poll(POLL_INTERVAL))
        self.exit_status = self.child.close()
        if self.child.by_itself:
            out.append(DiagnosticFound(path=self.name, diagnostic=self._exited()))
        self._closed = True
        out.extend(self._read_keys(final=True))
        blocks: list[bytes] = []
        self._records(self._feed.close(), blocks, out, self._clock())
        if self.gate is not None:
            blocks.extend(self.gate.flush())
        out.extend(self._push(blocks))
        for tail in self._keys:
            tail.close()
        if self._out is not None:
            self._out.close()
        out.extend(self._translate(self.run.close()))
        out.extend(self._said_now())
        out.extend(self._traced(self.live.finish()))
        dropped = self.child.dropped()
        if dropped:
            out.append(DiagnosticFound(path=self.name, diagnostic=_dropped(self.name, dropped)))
        return out

    def summary(self) -> str:
        """What was done, in one line."""
        c = self.counts
        seconds = self._clock() - self.started
        written = f"; wrote {self.write}" if self.write else ""
        if self.write and self.gate is not None:
            written += f" with {self.gate.secrets_written} TLS secrets embedded"
        dropped = self.child.dropped()
        lost = f", {dropped} dropped by the kernel" if dropped else ""
        return (
            f"captured on {self.interface} for {seconds:.1f}s: {c['packets']} packets{lost}, "
            f"{c['exchanges']} exchanges, {c['calls']} calls, {c['traces']} traces{written}"
        )

    # -- inside -------------------------------------------------------------------------

    def _exited(self) -> Diagnostic:
        return _exited_diagnostic(self.name, self.exit_status, self.child.stderr)

    def _records(
        self, items: Sequence[CaptureItem], blocks: list[bytes], out: list[Update], now: float
    ) -> None:
        """tcpdump's pcap records -> the pcapng blocks to write (through the gate)."""
        gate = self.gate
        units = self._units
        for item in items:
            if type(item) is Packet:
                self.counts["packets"] += 1
                self.last_packet = now
                block = epb(0, round(item.ts * units), item.data, item.orig_len)
                if gate is None:
                    blocks.append(block)
                else:
                    blocks.extend(gate.packet(item, block, now))
            elif isinstance(item, Interface):
                nano = item.ts_resolution < 1e-6
                self._units = units = 1_000_000_000 if nano else 1_000_000
                blocks.append(
                    self._head + idb(item.linktype, item.snaplen, self.interface, nano=nano)
                )
                self._head = b""
            elif isinstance(item, Diagnostic):
                out.append(DiagnosticFound(path=self.name, diagnostic=item))

    def _push(self, blocks: list[bytes]) -> list[Update]:
        if not blocks:
            return []
        data = b"".join(blocks)
        self.counts["bytes"] += len(data)
        if self._out is not None:
            self._out.write(data)
            self._out.flush()
        return self._translate(self.run.push(0, data))

    def _read_keys(self, *, final: bool = False) -> list[Update]:
        gate = self.gate
        if gate is None:
            return []
        out: list[Update] = []
        for tail in self._keys:
            found: list[Diagnostic] = []
            while data := tail.read():
                found.extend(gate.add_keys(tail.path, data))
            if final:
                found.extend(gate.end_keys(tail.path))
                if tail.ended is not None:
                    found.append(tail.ended)
                elif not tail.opened:
                    found.append(_never(tail.path))
            out.extend(DiagnosticFound(path=tail.path, diagnostic=d) for d in found)
        return out

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
        out: list[Update] = []
        for report in self.run.reports:
            for d in report.diagnostics:
                if id(d) not in self._said:
                    self._said.add(id(d))
                    out.append(DiagnosticFound(path=report.path, diagnostic=d))
        return out


def _exited_diagnostic(name: str, status: int | None, said: str) -> Diagnostic:
    last = said.strip().splitlines()[-1] if said.strip() else "it said nothing"
    return Diagnostic(
        code="capture.ended",
        severity="error",
        location=name,
        message=f"tcpdump exited by itself (status {status}): {last}; the capture ends there",
    )


def _never(path: str) -> Diagnostic:
    return Diagnostic(
        code="keylog.unreadable",
        severity="warning",
        location=path,
        message=f"the key log {path} never appeared while capturing: TLS stays encrypted "
        "(was SSLKEYLOGFILE set to this path for the client?)",
    )


def _dropped(name: str, dropped: int) -> Diagnostic:
    return Diagnostic(
        code="capture.dropped",
        severity="warning",
        location=name,
        message=f"the kernel dropped {dropped} packets (tcpdump's count): connections that "
        "lost them have gaps; capture fewer packets (--port, --filter) or a larger buffer",
    )
